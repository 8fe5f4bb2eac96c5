/*
 * Einsum (ai.onnx opset 12): a general Einstein summation.
 *
 * The equation is parsed into labels: a letter's label is its character
 * code; the dimensions covered by "..." get labels 128 + j, aligned from the
 * right across inputs so they broadcast like NumPy. A label repeated within
 * one input walks its diagonal (its strides add up). In implicit mode the
 * output is the ellipsis dimensions followed by the letters that occur once,
 * in character order (NumPy's rule). Evaluation is one loop over the output
 * labels and, inside, the summed labels; floats accumulate in double and
 * integers in wrapping 64-bit arithmetic, so integer results are exact.
 */
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

#define EIN_LABELS (128 + CG_MAX_RANK)
#define EIN_MAX_INPUTS 64

typedef struct ein_term {
    int n;                     /* explicit labels + ellipsis dims */
    int labels[CG_MAX_RANK];   /* after ellipsis expansion */
    int ell_pos;               /* index of "..." among letters, -1 if none */
    int nletters;
    int letters[CG_MAX_RANK + 1];
} ein_term;

/* Parses one term (letters and at most one "...") from [s, e). */
static bool ein_parse_term(const char *s, const char *e, ein_term *t)
{
    t->ell_pos = -1;
    t->nletters = 0;
    while (s < e) {
        if (*s == ' ') {
            s++;
            continue;
        }
        if (*s == '.') {
            if (e - s < 3 || s[1] != '.' || s[2] != '.' || t->ell_pos >= 0)
                return false;
            t->ell_pos = t->nletters;
            s += 3;
            continue;
        }
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
        if (t->nletters > CG_MAX_RANK)
            return false;
        t->letters[t->nletters++] = (unsigned char)*s;
        s++;
    }
    return true;
}

cg_status cg_op_einsum(cg_kernel_ctx *k)
{
    const char *eq = cg_attr_string(k, "equation", NULL);
    if (!eq)
        return cg_kernel_fail(k, CG_INVALID, "missing equation attribute");
    size_t nin = k->input_count;
    if (nin == 0 || nin > EIN_MAX_INPUTS)
        return cg_kernel_fail(k, CG_INVALID, "einsum needs 1 to %d inputs (got %zu)",
                              EIN_MAX_INPUTS, nin);
    const cg_tensor *in[EIN_MAX_INPUTS];
    cg_status st;
    for (size_t i = 0; i < nin; i++) {
        if ((st = cg_kernel_require(k, i, &in[i])))
            return st;
        if (in[i]->dtype != in[0]->dtype)
            return cg_kernel_fail(k, CG_INVALID, "input %zu has type %s; expected %s", i,
                                  cg_dtype_name(in[i]->dtype), cg_dtype_name(in[0]->dtype));
    }
    cg_dtype dt = in[0]->dtype;
    bool is_float = mc_is_float(dt);
    if (!is_float && !cg_dtype_is_int(dt))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "type %s is not supported", cg_dtype_name(dt));

    /* Split "lhs->rhs" and the comma-separated input terms. */
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    ein_term terms[EIN_MAX_INPUTS];
    size_t nterms = 0;
    const char *p = eq;
    for (;;) {
        const char *comma = p;
        while (comma < lhs_end && *comma != ',')
            comma++;
        if (nterms >= nin)
            return cg_kernel_fail(k, CG_INVALID, "equation '%s' has more terms than the %zu inputs",
                                  eq, nin);
        if (!ein_parse_term(p, comma, &terms[nterms]))
            return cg_kernel_fail(k, CG_INVALID, "cannot parse term %zu of equation '%s'", nterms, eq);
        nterms++;
        if (comma >= lhs_end)
            break;
        p = comma + 1;
    }
    if (nterms != nin)
        return cg_kernel_fail(k, CG_INVALID, "equation '%s' has %zu terms for %zu inputs", eq,
                              nterms, nin);

    /* Expand ellipses and size every label. */
    int64_t size[EIN_LABELS];
    int count[EIN_LABELS] = {0};
    for (int i = 0; i < EIN_LABELS; i++)
        size[i] = -1;
    int E = 0;
    for (size_t i = 0; i < nin; i++) {
        int e = in[i]->rank - terms[i].nletters;
        if (e < 0 || (e > 0 && terms[i].ell_pos < 0))
            return cg_kernel_fail(k, CG_INVALID, "term %zu of '%s' has %d labels for rank %d", i,
                                  eq, terms[i].nletters, in[i]->rank);
        if (e > E)
            E = e;
    }
    for (size_t i = 0; i < nin; i++) {
        ein_term *t = &terms[i];
        int e = in[i]->rank - t->nletters, d = 0;
        for (int l = 0; l <= t->nletters; l++) {
            if (l == t->ell_pos)
                for (int j = 0; j < e; j++)
                    t->labels[d++] = 128 + (E - e) + j;
            if (l < t->nletters)
                t->labels[d++] = t->letters[l];
        }
        t->n = d;
        for (int j = 0; j < d; j++) {
            int lb = t->labels[j];
            int64_t dim = in[i]->dims[j];
            count[lb]++;
            if (size[lb] < 0 || (lb >= 128 && size[lb] == 1))
                size[lb] = dim;
            else if (size[lb] != dim && !(lb >= 128 && dim == 1))
                return cg_kernel_fail(k, CG_INVALID,
                                      "label '%c' has size %lld in input %zu but %lld before",
                                      lb < 128 ? (char)lb : '.', (long long)dim, i,
                                      (long long)size[lb]);
        }
    }

    /* Output labels. */
    int out_labels[CG_MAX_RANK], nout = 0;
    bool in_out[EIN_LABELS] = {false};
    if (arrow) {
        ein_term ot;
        if (!ein_parse_term(arrow + 2, arrow + strlen(arrow), &ot))
            return cg_kernel_fail(k, CG_INVALID, "cannot parse the output of equation '%s'", eq);
        for (int l = 0; l <= ot.nletters; l++) {
            if (l == ot.ell_pos)
                for (int j = 0; j < E; j++) {
                    if (nout >= CG_MAX_RANK)
                        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank exceeds %d", CG_MAX_RANK);
                    out_labels[nout++] = 128 + j;
                }
            if (l < ot.nletters) {
                int lb = ot.letters[l];
                if (count[lb] == 0 || in_out[lb])
                    return cg_kernel_fail(k, CG_INVALID,
                                          "output label '%c' of '%s' is missing from the inputs "
                                          "or repeated",
                                          (char)lb, eq);
                if (nout >= CG_MAX_RANK)
                    return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank exceeds %d", CG_MAX_RANK);
                out_labels[nout++] = lb;
                in_out[lb] = true;
            }
        }
        for (int j = 0; j < nout; j++)
            in_out[out_labels[j]] = true;
    } else {
        for (int j = 0; j < E; j++)
            out_labels[nout++] = 128 + j;
        for (int lb = 0; lb < 128; lb++)
            if (count[lb] == 1) {
                if (nout >= CG_MAX_RANK)
                    return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank exceeds %d", CG_MAX_RANK);
                out_labels[nout++] = lb;
            }
        for (int j = 0; j < nout; j++)
            in_out[out_labels[j]] = true;
    }
    int sum_labels[EIN_LABELS], nsum = 0;
    for (int lb = 0; lb < EIN_LABELS; lb++)
        if (count[lb] > 0 && !in_out[lb])
            sum_labels[nsum++] = lb;

    int64_t odims[CG_MAX_RANK];
    for (int j = 0; j < nout; j++)
        odims[j] = size[out_labels[j]] < 0 ? 1 : size[out_labels[j]];
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, dt, nout, odims, &Y)))
        return st;
    int64_t sum_total = 1;
    for (int j = 0; j < nsum; j++) {
        int64_t s = size[sum_labels[j]];
        if (s != 0 && sum_total > INT64_MAX / s)
            return cg_kernel_fail(k, CG_LIMIT, "summed index space overflows");
        sum_total *= s;
    }
    if (Y->numel == 0)
        return CG_OK;
    /* The loop does numel * sum_total steps; refuse what would not finish. */
    if (sum_total > 0 && Y->numel > (INT64_C(1) << 40) / sum_total)
        return cg_kernel_fail(k, CG_LIMIT, "einsum '%s' needs more than 2^40 multiply-adds", eq);

    /* strides[i][label]: element step of input i when label advances by one. */
    static const int64_t zero_row[EIN_LABELS];
    int64_t(*strides)[EIN_LABELS] = cg_kernel_scratch(k, nin * sizeof *strides);
    if (!strides)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (size_t i = 0; i < nin; i++) {
        memcpy(strides[i], zero_row, sizeof zero_row);
        int64_t s = 1;
        for (int j = terms[i].n - 1; j >= 0; j--) {
            int lb = terms[i].labels[j];
            if (!(in[i]->dims[j] == 1 && size[lb] != 1))
                strides[i][lb] += s;
            s *= in[i]->dims[j];
        }
    }
    /* Floats are read once into double arrays so the inner loop indexes
     * memory directly instead of converting per element. */
    const double *fin[EIN_MAX_INPUTS] = {NULL};
    if (is_float)
        for (size_t i = 0; i < nin; i++)
            if (!(fin[i] = mc_to_f64(k, in[i])))
                return CG_NOMEM;
    int64_t opos[CG_MAX_RANK] = {0};
    int64_t spos[EIN_LABELS];
    int64_t base[EIN_MAX_INPUTS], off[EIN_MAX_INPUTS];
    for (size_t i = 0; i < nin; i++)
        base[i] = 0;
    for (int64_t o = 0; o < Y->numel; o++) {
        double facc = 0.0;
        uint64_t iacc = 0;
        for (int j = 0; j < nsum; j++)
            spos[j] = 0;
        for (size_t i = 0; i < nin; i++)
            off[i] = base[i];
        for (int64_t s = 0; s < sum_total; s++) {
            if (is_float) {
                double prod = 1.0;
                for (size_t i = 0; i < nin; i++)
                    prod *= fin[i][off[i]];
                facc += prod;
            } else {
                uint64_t prod = 1;
                for (size_t i = 0; i < nin; i++)
                    prod *= (uint64_t)cg_tensor_get_i64(in[i], off[i]);
                iacc += prod;
            }
            for (int j = nsum - 1; j >= 0; j--) {
                int lb = sum_labels[j];
                for (size_t i = 0; i < nin; i++)
                    off[i] += strides[i][lb];
                if (++spos[j] < size[lb])
                    break;
                for (size_t i = 0; i < nin; i++)
                    off[i] -= strides[i][lb] * size[lb];
                spos[j] = 0;
            }
        }
        if (is_float)
            cg_tensor_set_f64(Y, o, facc);
        else
            cg_tensor_set_i64(Y, o, (int64_t)iacc);
        for (int j = nout - 1; j >= 0; j--) {
            int lb = out_labels[j];
            for (size_t i = 0; i < nin; i++)
                base[i] += strides[i][lb];
            if (++opos[j] < odims[j])
                break;
            for (size_t i = 0; i < nin; i++)
                base[i] -= strides[i][lb] * odims[j];
            opos[j] = 0;
        }
    }
    return CG_OK;
}
