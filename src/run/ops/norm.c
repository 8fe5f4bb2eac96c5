/*
 * Normalizations and friends: BatchNormalization (inference and training
 * forms), InstanceNormalization, LayerNormalization, GroupNormalization, LRN
 * and Dropout.
 *
 * Statistics are accumulated in double whatever the element type; float32
 * tensors are read and written in place (BatchNorm's inference form is one
 * fused multiply-add per element), other float types are widened to double
 * in scratch and rounded once on store. The exception is float32
 * LayerNormalization, which follows ONNX Runtime's float arithmetic
 * (ln_rows_f32_ort).
 */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"

/* A small float parameter vector (scale, bias, mean, var) as doubles; it must
 * hold exactly `want` values. */
static cg_status param_vec(cg_kernel_ctx *k, size_t i, const char *what, int64_t want,
                           const double **out)
{
    const cg_tensor *t;
    cg_status st;
    if ((st = cg_kernel_require(k, i, &t)) != CG_OK)
        return st;
    if (!cg_nn_is_real(t->dtype))
        return cg_kernel_fail(k, CG_INVALID, "%s is %s (needs a float type)", what,
                              cg_dtype_name(t->dtype));
    if (t->numel != want)
        return cg_kernel_fail(k, CG_INVALID, "%s has %lld values, expected %lld", what,
                              (long long)t->numel, (long long)want);
    if (!(*out = cg_nn_as_f64(k, t)))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    return CG_OK;
}

/* Input 0 as a float tensor with at least min_rank dims. */
static cg_status real_input(cg_kernel_ctx *k, int min_rank, const cg_tensor **x)
{
    cg_status st;
    if ((st = cg_kernel_require(k, 0, x)) != CG_OK)
        return st;
    if (!cg_nn_is_real((*x)->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input is %s (needs a float type)",
                              cg_dtype_name((*x)->dtype));
    if ((*x)->rank < min_rank)
        return cg_kernel_fail(k, CG_INVALID, "input has rank %d (needs at least %d)", (*x)->rank,
                              min_rank);
    return CG_OK;
}

/* y = x * a[c] + b[c] over planes of `inner` elements, channel = plane % c. */
static cg_status affine_channels(cg_kernel_ctx *k, const cg_tensor *x, cg_tensor *y,
                                 int64_t c, int64_t inner, const double *a, const double *b,
                                 bool per_element)
{
    int64_t planes = (c != 0 && inner != 0) ? x->numel / inner : 0;
    if (x->dtype == CG_DTYPE_FLOAT) {
        const float *xf = x->data;
        float *yf = y->data;
        for (int64_t p = 0; p < planes; p++) {
            int64_t ch = p % c;
            const float *xp = xf + p * inner;
            float *yp = yf + p * inner;
            if (per_element) {
                for (int64_t i = 0; i < inner; i++)
                    yp[i] = (float)((double)xp[i] * a[ch * inner + i] + b[ch * inner + i]);
                continue;
            }
            float av = (float)a[ch], bv = (float)b[ch];
            for (int64_t i = 0; i < inner; i++)
                yp[i] = xp[i] * av + bv;
        }
        return CG_OK;
    }
    const double *xd = cg_nn_as_f64(k, x);
    double *yd = cg_nn_scratch(k, x->numel, sizeof(double));
    if (!xd || !yd)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t p = 0; p < planes; p++) {
        int64_t ch = p % c;
        for (int64_t i = 0; i < inner; i++) {
            int64_t pi = per_element ? ch * inner + i : ch;
            yd[p * inner + i] = xd[p * inner + i] * a[pi] + b[pi];
        }
    }
    cg_nn_store_f64(y, yd);
    return CG_OK;
}

/* Writes a double vector into output i (shape (n,)) with the given dtype. */
static cg_status vec_output(cg_kernel_ctx *k, size_t i, cg_dtype dt, int64_t n, const double *v)
{
    cg_tensor *t;
    cg_status st;
    if (!cg_nn_want_output(k, i))
        return CG_OK;
    if ((st = cg_kernel_output(k, i, dt, 1, &n, &t)) != CG_OK)
        return st;
    cg_nn_store_f64(t, v);
    return CG_OK;
}

cg_status cg_op_batchnormalization(cg_kernel_ctx *k)
{
    const cg_tensor *x, *mean_t;
    const double *scale, *bias, *mean, *var;
    cg_tensor *y;
    cg_status st;
    if ((st = real_input(k, 2, &x)) != CG_OK)
        return st;
    double eps = cg_attr_float(k, "epsilon", 1e-5f);
    double momentum = cg_attr_float(k, "momentum", 0.9f);
    int64_t c = x->dims[1], inner = x->numel && c ? x->numel / x->dims[0] / c : 0;
    /* opset < 9 with spatial=0 keeps one statistic per (channel, position) */
    bool per_element = k->since < 9 && cg_attr_int(k, "spatial", 1) == 0;
    int64_t pn = per_element ? c * inner : c;
    bool training = k->since >= 14 ? cg_attr_int(k, "training_mode", 0) != 0
                                   : (k->since < 7 ? cg_attr_int(k, "is_test", 0) == 0 &&
                                                         cg_nn_want_output(k, 1)
                                                   : cg_nn_want_output(k, 1));
    if (!(eps >= 0) || !isfinite(eps))
        return cg_kernel_fail(k, CG_INVALID, "epsilon is %g", eps);
    if ((st = param_vec(k, 1, "scale", pn, &scale)) != CG_OK ||
        (st = param_vec(k, 2, "B", pn, &bias)) != CG_OK ||
        (st = param_vec(k, 3, "input_mean", pn, &mean)) != CG_OK ||
        (st = param_vec(k, 4, "input_var", pn, &var)) != CG_OK)
        return st;
    mean_t = cg_kernel_input(k, 3);
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &y)) != CG_OK)
        return st;
    double *a = cg_nn_scratch(k, pn, sizeof(double)), *b = cg_nn_scratch(k, pn, sizeof(double));
    if (!a || !b)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if (training) {
        if (per_element)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "training mode with spatial=0");
        const double *xd = cg_nn_as_f64(k, x);
        double *bm = cg_nn_scratch(k, c, sizeof(double)), *bv = cg_nn_scratch(k, c, sizeof(double));
        double *rm = cg_nn_scratch(k, c, sizeof(double)), *rv = cg_nn_scratch(k, c, sizeof(double));
        if (!xd || !bm || !bv || !rm || !rv)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        int64_t cnt = x->dims[0] * inner;
        for (int64_t ch = 0; ch < c; ch++) {
            double s = 0, s2 = 0;
            for (int64_t n = 0; n < x->dims[0]; n++)
                for (int64_t i = 0; i < inner; i++)
                    s += xd[(n * c + ch) * inner + i];
            double mu = cnt ? s / (double)cnt : 0;
            for (int64_t n = 0; n < x->dims[0]; n++)
                for (int64_t i = 0; i < inner; i++) {
                    double d = xd[(n * c + ch) * inner + i] - mu;
                    s2 += d * d;
                }
            bm[ch] = mu;
            bv[ch] = cnt ? s2 / (double)cnt : 0;
            rm[ch] = mean[ch] * momentum + mu * (1 - momentum);
            rv[ch] = var[ch] * momentum + bv[ch] * (1 - momentum);
            a[ch] = scale[ch] / sqrt(bv[ch] + eps);
            b[ch] = bias[ch] - bm[ch] * a[ch];
        }
        if ((st = affine_channels(k, x, y, c, inner, a, b, false)) != CG_OK)
            return st;
        cg_dtype mdt = mean_t->dtype;
        if ((st = vec_output(k, 1, mdt, c, rm)) != CG_OK || (st = vec_output(k, 2, mdt, c, rv)) != CG_OK)
            return st;
        if (k->since < 14) { /* saved_mean, saved_var (opset 9-13 training outputs) */
            double *inv = cg_nn_scratch(k, c, sizeof(double));
            if (!inv)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            for (int64_t ch = 0; ch < c; ch++)
                inv[ch] = 1.0 / sqrt(bv[ch] + eps);
            if ((st = vec_output(k, 3, mdt, c, bm)) != CG_OK ||
                (st = vec_output(k, 4, mdt, c, inv)) != CG_OK)
                return st;
        }
        return CG_OK;
    }
    if (y->numel == 0)
        return CG_OK;
    for (int64_t i = 0; i < pn; i++) {
        a[i] = scale[i] / sqrt(var[i] + eps);
        b[i] = bias[i] - mean[i] * a[i];
    }
    return affine_channels(k, x, y, c, inner, a, b, per_element);
}

/* Mean and population variance of n doubles or floats. */
static void moments_f32(const float *x, int64_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    double mu = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] - mu;
        s2 += d * d;
    }
    *mean = mu;
    *var = n ? s2 / (double)n : 0;
}

static void moments_f64(const double *x, int64_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    double mu = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] - mu;
        s2 += d * d;
    }
    *mean = mu;
    *var = n ? s2 / (double)n : 0;
}

/* Normalizes `rows` rows of `len` elements: y = (x - mean) * inv * sc[i % sc_len]
 * + bi[...], where each row r uses scale row (r % sc_rows) of sc_len values
 * (sc_len divides len; element i of the row uses sc[i / (len / sc_len)]).
 * Writes the row mean / 1/std when mean_out / inv_out are given. */
typedef struct norm_rows {
    int64_t rows, len;
    const double *sc, *bi; /* may be NULL (1 / 0) */
    int64_t sc_rows;       /* scale rows cycle with this period */
    int64_t sc_len;        /* values per scale row */
    double eps;
    double *mean_out, *inv_out;
} norm_rows;

static cg_status normalize_rows(cg_kernel_ctx *k, const cg_tensor *x, cg_tensor *y,
                                const norm_rows *nr)
{
    int64_t rep = nr->sc_len ? nr->len / nr->sc_len : 1;
    const double *xd = NULL;
    double *yd = NULL;
    if (x->dtype != CG_DTYPE_FLOAT) {
        xd = cg_nn_as_f64(k, x);
        yd = cg_nn_scratch(k, x->numel, sizeof(double));
        if (!xd || !yd)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    }
    for (int64_t r = 0; r < nr->rows; r++) {
        double mu, var;
        if (xd)
            moments_f64(xd + r * nr->len, nr->len, &mu, &var);
        else
            moments_f32((const float *)x->data + r * nr->len, nr->len, &mu, &var);
        double inv = 1.0 / sqrt(var + nr->eps);
        if (nr->mean_out)
            nr->mean_out[r] = mu;
        if (nr->inv_out)
            nr->inv_out[r] = inv;
        int64_t srow = nr->sc_rows ? (r % nr->sc_rows) * nr->sc_len : 0;
        for (int64_t i = 0; i < nr->len; i++) {
            int64_t si = srow + (rep ? i / rep : 0);
            double s = nr->sc ? nr->sc[si] : 1.0, b = nr->bi ? nr->bi[si] : 0.0;
            int64_t at = r * nr->len + i;
            if (xd)
                yd[at] = (xd[at] - mu) * inv * s + b;
            else
                ((float *)y->data)[at] =
                    (float)(((double)((const float *)x->data)[at] - mu) * inv * s + b);
        }
    }
    if (yd)
        cg_nn_store_f64(y, yd);
    return CG_OK;
}

/* InstanceNormalization and GroupNormalization: x's channels in `groups`
 * groups, each group of each batch item normalized as one row; scale and
 * bias (inputs 1 and 2) hold pn values, sc_len of them per group. */
static cg_status normalize_groups(cg_kernel_ctx *k, const cg_tensor *x, int64_t groups,
                                  int64_t pn, int64_t sc_len, const char *bias_name)
{
    const double *sc, *bi;
    cg_tensor *y;
    cg_status st;
    if ((st = param_vec(k, 1, "scale", pn, &sc)) != CG_OK ||
        (st = param_vec(k, 2, bias_name, pn, &bi)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    norm_rows nr = {0};
    nr.rows = x->dims[0] * groups;
    nr.len = x->numel / nr.rows;
    nr.sc = sc;
    nr.bi = bi;
    nr.sc_rows = groups;
    nr.sc_len = sc_len;
    nr.eps = cg_attr_float(k, "epsilon", 1e-5f);
    return normalize_rows(k, x, y, &nr);
}

cg_status cg_op_instancenormalization(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_status st = real_input(k, 3, &x);
    if (st != CG_OK)
        return st;
    return normalize_groups(k, x, x->dims[1], x->dims[1], 1, "B");
}

/* Scale/bias of LayerNormalization expanded to the normalized shape
 * (dims[axis:]); they may broadcast within it. */
static cg_status ln_param(cg_kernel_ctx *k, size_t i, const cg_tensor *x, int axis, int64_t len,
                          const double **out)
{
    const cg_tensor *t = cg_kernel_input(k, i);
    int64_t str[CG_MAX_RANK];
    *out = NULL;
    if (!t)
        return CG_OK;
    if (!cg_nn_is_real(t->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input %zu is %s", i, cg_dtype_name(t->dtype));
    int nr = x->rank - axis, r = t->rank;
    /* leading size-1 dims beyond the normalized rank are harmless */
    int lead = 0;
    while (r - lead > nr && t->dims[lead] == 1)
        lead++;
    if (r - lead > nr)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input %zu (rank %d) broadcasts beyond the normalized axes",
                              i, r);
    for (int d = lead; d < r; d++) {
        int64_t want = x->dims[x->rank - (r - d)];
        if (t->dims[d] != 1 && t->dims[d] != want)
            return cg_kernel_fail(k, CG_INVALID, "input %zu dim %d is %lld, normalized shape has %lld",
                                  i, d, (long long)t->dims[d], (long long)want);
    }
    const double *src = cg_nn_as_f64(k, t);
    double *dst = cg_nn_scratch(k, len, sizeof(double));
    if (!src || !dst)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if (t->numel == len) {
        memcpy(dst, src, (size_t)len * sizeof(double));
    } else {
        cg_broadcast_strides(r - lead, t->dims + lead, nr, x->dims + axis, str);
        for (int64_t e = 0; e < len; e++) {
            int64_t rem = e, off = 0;
            for (int d = nr - 1; d >= 0; d--) {
                int64_t id = rem % x->dims[axis + d];
                rem /= x->dims[axis + d];
                off += id * str[d];
            }
            dst[e] = src[off];
        }
    }
    *out = dst;
    return CG_OK;
}

/* LayerNormalization of float32 rows as ONNX Runtime 1.22's CPU kernel
 * computes it (core/providers/cpu/nn/layer_norm_impl.cc, ComputeJob): the
 * sums of x and x*x in float, in order, in one pass; var = E[x^2] - mean^2;
 * y = (x - mean) / sqrt(var + eps) * scale + bias, one float rounding per
 * operation. E[x^2] - mean^2 loses the variance of rows far from zero (the
 * double path does not), but a quantizer downstream turns any difference
 * into a step, so float32 rounds as the runtime models are deployed on; the
 * float64 mode keeps the double path. sc/bi hold float values (exact). */
static void ln_rows_f32_ort(const float *x, float *y, const norm_rows *nr)
{
    float n = (float)nr->len;
    for (int64_t r = 0; r < nr->rows; r++) {
        const float *xr = x + r * nr->len;
        float *yr = y + r * nr->len;
        float mean = 0.0f, mean_square = 0.0f;
        for (int64_t i = 0; i < nr->len; i++) {
            float sq = xr[i] * xr[i];
            mean += xr[i];
            mean_square += sq;
        }
        mean = mean / n;
        float msq = mean * mean;
        float var = mean_square / n;
        var = var - msq;
        float sd = sqrtf(var + (float)nr->eps);
        for (int64_t i = 0; i < nr->len; i++) {
            float v = (xr[i] - mean) / sd;
            v = v * (float)nr->sc[i];
            yr[i] = nr->bi ? v + (float)nr->bi[i] : v;
        }
        if (nr->mean_out)
            nr->mean_out[r] = mean;
        if (nr->inv_out)
            nr->inv_out[r] = 1.0f / sd;
    }
}

cg_status cg_op_layernormalization(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    const double *sc, *bi;
    cg_tensor *y, *mt = NULL, *it = NULL;
    cg_status st;
    int64_t axis, sdims[CG_MAX_RANK];
    if ((st = real_input(k, 1, &x)) != CG_OK)
        return st;
    if (!cg_normalize_axis(cg_attr_int(k, "axis", -1), x->rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)cg_attr_int(k, "axis", -1), x->rank);
    int64_t stash = cg_attr_int(k, "stash_type", 1);
    cg_dtype sdt = cg_dtype_valid(stash) ? (cg_dtype)stash : CG_DTYPE_UNDEFINED;
    if (!cg_nn_is_real(sdt))
        return cg_kernel_fail(k, CG_INVALID, "stash_type %lld is not a float type", (long long)stash);
    int64_t outer = cg_nn_prod((int)axis, x->dims), len = cg_nn_prod(x->rank - (int)axis, x->dims + axis);
    if ((st = ln_param(k, 1, x, (int)axis, len, &sc)) != CG_OK)
        return st;
    if (!sc)
        return cg_kernel_fail(k, CG_INVALID, "Scale is required");
    if ((st = ln_param(k, 2, x, (int)axis, len, &bi)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &y)) != CG_OK)
        return st;
    for (int d = 0; d < x->rank; d++)
        sdims[d] = d < axis ? x->dims[d] : 1;
    if (cg_nn_want_output(k, 1) && (st = cg_kernel_output(k, 1, sdt, x->rank, sdims, &mt)) != CG_OK)
        return st;
    if (cg_nn_want_output(k, 2) && (st = cg_kernel_output(k, 2, sdt, x->rank, sdims, &it)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    norm_rows nr = {0};
    nr.rows = outer;
    nr.len = len;
    nr.sc = sc;
    nr.bi = bi;
    nr.sc_rows = 1;
    nr.sc_len = len;
    nr.eps = cg_attr_float(k, "epsilon", 1e-5f);
    nr.mean_out = mt ? cg_nn_scratch(k, outer, sizeof(double)) : NULL;
    nr.inv_out = it ? cg_nn_scratch(k, outer, sizeof(double)) : NULL;
    if ((mt && !nr.mean_out) || (it && !nr.inv_out))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if (x->dtype == CG_DTYPE_FLOAT)
        ln_rows_f32_ort(x->data, y->data, &nr);
    else if ((st = normalize_rows(k, x, y, &nr)) != CG_OK)
        return st;
    if (mt)
        cg_nn_store_f64(mt, nr.mean_out);
    if (it)
        cg_nn_store_f64(it, nr.inv_out);
    return CG_OK;
}

cg_status cg_op_groupnormalization(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_status st = real_input(k, 2, &x);
    if (st != CG_OK)
        return st;
    int64_t groups = cg_attr_int(k, "num_groups", 0), c = x->dims[1];
    if (groups < 1 || c % groups != 0)
        return cg_kernel_fail(k, CG_INVALID, "num_groups %lld does not divide %lld channels",
                              (long long)groups, (long long)c);
    /* opset 18: one scale/bias per group; opset 21: one per channel */
    bool per_channel = k->since >= 21;
    return normalize_groups(k, x, groups, per_channel ? c : groups,
                            per_channel ? c / groups : 1, "bias");
}

cg_status cg_op_lrn(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *y;
    cg_status st;
    if ((st = real_input(k, 2, &x)) != CG_OK)
        return st;
    int64_t size = cg_attr_int(k, "size", 0);
    if (size < 1 || size > CG_NN_MAX_EXTENT)
        return cg_kernel_fail(k, CG_INVALID, "size is %lld (must be positive)", (long long)size);
    double alpha = cg_attr_float(k, "alpha", 1e-4f), beta = cg_attr_float(k, "beta", 0.75f);
    double bias = cg_attr_float(k, "bias", 1.0f);
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    int64_t c = x->dims[1], inner = x->numel / x->dims[0] / c;
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    const double *xd = cg_nn_as_f64(k, x);
    double *yd = cg_nn_scratch(k, x->numel, sizeof(double));
    if (!xd || !yd)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t n = 0; n < x->dims[0]; n++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t c0 = ch - lo < 0 ? 0 : ch - lo, c1 = ch + hi >= c ? c - 1 : ch + hi;
            for (int64_t i = 0; i < inner; i++) {
                double s = 0;
                for (int64_t q = c0; q <= c1; q++) {
                    double v = xd[(n * c + q) * inner + i];
                    s += v * v;
                }
                int64_t at = (n * c + ch) * inner + i;
                yd[at] = xd[at] / pow(bias + alpha / (double)size * s, beta);
            }
        }
    cg_nn_store_f64(y, yd);
    return CG_OK;
}

/* ---- Dropout --------------------------------------------------------------------- */

cg_status cg_op_dropout(cg_kernel_ctx *k)
{
    const cg_tensor *x, *rt, *tt;
    cg_tensor *y, *mask = NULL;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK)
        return st;
    size_t esz = cg_dtype_size(x->dtype);
    if (esz == 0)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "Dropout of %s", cg_dtype_name(x->dtype));
    double ratio = 0.5;
    bool training = false;
    if (k->since >= 12) {
        rt = cg_kernel_input(k, 1);
        tt = cg_kernel_input(k, 2);
        if (rt) {
            if (rt->numel != 1 || !cg_nn_is_real(rt->dtype))
                return cg_kernel_fail(k, CG_INVALID, "ratio must be one float value");
            ratio = cg_tensor_get_f64(rt, 0);
        }
        if (tt) {
            if (tt->numel != 1)
                return cg_kernel_fail(k, CG_INVALID, "training_mode must be one value");
            training = cg_tensor_get_i64(tt, 0) != 0;
        }
    } else {
        ratio = cg_attr_float(k, "ratio", 0.5f);
        training = k->since < 7 && cg_attr_int(k, "is_test", 0) == 0;
    }
    if (!(ratio >= 0.0 && ratio < 1.0) && training)
        return cg_kernel_fail(k, CG_INVALID, "ratio %g must be in [0, 1)", ratio);
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &y)) != CG_OK)
        return st;
    cg_dtype mdt = k->since >= 10 ? CG_DTYPE_BOOL : x->dtype;
    if (cg_nn_want_output(k, 1) &&
        (st = cg_kernel_output(k, 1, mdt, x->rank, x->dims, &mask)) != CG_OK)
        return st;
    if (!training || ratio == 0.0) {
        if (x->numel)
            memcpy(y->data, x->data, (size_t)x->numel * esz);
        for (int64_t i = 0; mask && i < mask->numel; i++)
            cg_tensor_set_i64(mask, i, 1);
        return CG_OK;
    }
    if (!cg_nn_is_real(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "training-mode Dropout of %s", cg_dtype_name(x->dtype));
    /* Random: reproducible from 'seed', but no other runtime's stream. */
    uint64_t state = (uint64_t)cg_attr_int(k, "seed", 0);
    double keep = 1.0 - ratio;
    for (int64_t i = 0; i < x->numel; i++) {
        bool kept = cg_unit_interval(cg_splitmix64(&state)) < keep;
        cg_tensor_set_f64(y, i, kept ? cg_tensor_get_f64(x, i) / keep : 0.0);
        if (mask)
            cg_tensor_set_i64(mask, i, kept);
    }
    return CG_OK;
}
