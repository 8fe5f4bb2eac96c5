/*
 * Assorted ai.onnx kernels: NonMaxSuppression, Det, and the random
 * generators (RandomNormal, RandomUniform, their *Like forms, Bernoulli,
 * Multinomial).
 *
 * The random kernels draw from a splitmix64 stream. Kernels are pure
 * functions, so there is no global generator: the stream is seeded from the
 * node's `seed` attribute, or, when absent, from a hash of the node name and
 * op type. A model therefore runs and gives the same numbers every time;
 * the values never match the ONNX test data, which records NumPy's draws.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

/* ---- NonMaxSuppression -------------------------------------------------- */

typedef struct nms_cand {
    double score;
    int64_t index;
} nms_cand;

/* Highest score first; equal scores keep the lower box index first. */
static int nms_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

/* Corner form [ymin, xmin, ymax, xmax] of box i. */
static void nms_corners(const double *bx, bool center, double *out)
{
    if (center) {
        double xc = bx[0], yc = bx[1], w = bx[2], h = bx[3];
        out[0] = yc - h / 2.0, out[1] = xc - w / 2.0;
        out[2] = yc + h / 2.0, out[3] = xc + w / 2.0;
    } else {
        out[0] = fmin(bx[0], bx[2]), out[1] = fmin(bx[1], bx[3]);
        out[2] = fmax(bx[0], bx[2]), out[3] = fmax(bx[1], bx[3]);
    }
}

/* fmax / fmin with their NaN rule (a NaN operand loses), inlined. */
static inline double nms_max(double a, double b) { return (b != b || a > b) ? a : b; }
static inline double nms_min(double a, double b) { return (b != b || a < b) ? a : b; }

static bool nms_suppress(const double *a, const double *b, double thr)
{
    double ia = (a[2] - a[0]) * (a[3] - a[1]), ib = (b[2] - b[0]) * (b[3] - b[1]);
    if (ia <= 0 || ib <= 0)
        return false;
    double ymin = nms_max(a[0], b[0]), xmin = nms_max(a[1], b[1]);
    double ymax = nms_min(a[2], b[2]), xmax = nms_min(a[3], b[3]);
    double inter = nms_max(ymax - ymin, 0.0) * nms_max(xmax - xmin, 0.0);
    if (inter <= 0)
        return false;
    return inter / (ia + ib - inter) > thr;
}

/* A box that can suppress or be suppressed: finite corners, positive area.
 * nms_suppress is false whenever either box is not (a NaN anywhere makes
 * the IoU NaN). */
static bool nms_active(const double *c)
{
    return isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2]) && isfinite(c[3]) &&
           (c[2] - c[0]) * (c[3] - c[1]) > 0;
}

typedef struct nms_xkey {
    double x0;
    int64_t pos; /* position in the score order */
} nms_xkey;

static int nms_xcmp(const void *pa, const void *pb)
{
    const nms_xkey *a = pa, *b = pb;
    if (a->x0 != b->x0)
        return a->x0 < b->x0 ? -1 : 1;
    return a->pos < b->pos ? -1 : (a->pos > b->pos);
}

/* Greedy NMS over cand[0..nc) (score order): a candidate is kept unless a
 * kept, earlier candidate overlaps it above thr. Only boxes overlapping in
 * x can suppress, so kept boxes are looked up in an xmin-sorted index over
 * the window (xmin - widest box, xmax) rather than all compared: the same
 * decisions as comparing with every kept box, in O(n log n + overlaps)
 * instead of O(n * kept). Returns the kept count (at most max_out), their
 * box indices in sel. */
static int64_t nms_select(const nms_cand *cand, int64_t nc, const double *corners, double thr,
                          int64_t max_out, nms_xkey *xs, uint8_t *kept, int64_t *sel)
{
    int64_t nx = 0, nsel = 0;
    double wmax = 0.0;
    for (int64_t i = 0; i < nc; i++) {
        const double *c = corners + cand[i].index * 4;
        kept[i] = 0;
        if (!nms_active(c))
            continue;
        xs[nx].x0 = c[1];
        xs[nx].pos = i;
        nx++;
        if (c[3] - c[1] > wmax)
            wmax = c[3] - c[1];
    }
    qsort(xs, (size_t)nx, sizeof *xs, nms_xcmp);
    /* a margin so rounding never shrinks the window */
    wmax = wmax * (1.0 + 1e-9) + 1e-300;
    for (int64_t i = 0; i < nc && nsel < max_out; i++) {
        const double *c = corners + cand[i].index * 4;
        bool keep = true;
        if (nms_active(c) && isfinite(wmax)) {
            double lo_x = c[1] - wmax;
            int64_t lo = 0, hi = nx;
            while (lo < hi) { /* first key with x0 > lo_x */
                int64_t mid = lo + (hi - lo) / 2;
                if (xs[mid].x0 > lo_x)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            for (int64_t j = lo; j < nx && xs[j].x0 < c[3] && keep; j++)
                if (kept[xs[j].pos] &&
                    nms_suppress(c, corners + cand[xs[j].pos].index * 4, thr))
                    keep = false;
        } else if (nms_active(c)) {
            for (int64_t j = 0; j < nsel && keep; j++)
                if (nms_suppress(c, corners + sel[j] * 4, thr))
                    keep = false;
        }
        if (keep) {
            kept[i] = 1;
            sel[nsel++] = cand[i].index;
        }
    }
    return nsel;
}

cg_status cg_op_nonmaxsuppression(cg_kernel_ctx *k)
{
    const cg_tensor *boxes, *scores;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &boxes)) || (st = cg_kernel_require(k, 1, &scores)))
        return st;
    const cg_tensor *mo = cg_kernel_input(k, 2), *iou = cg_kernel_input(k, 3),
                    *sth = cg_kernel_input(k, 4);
    if (boxes->rank != 3 || boxes->dims[2] != 4 || !mc_is_float(boxes->dtype))
        return cg_kernel_fail(k, CG_INVALID, "boxes must be a float tensor [batch, boxes, 4]");
    if (scores->rank != 3 || scores->dims[0] != boxes->dims[0] ||
        scores->dims[2] != boxes->dims[1] || !mc_is_float(scores->dtype))
        return cg_kernel_fail(k, CG_INVALID, "scores must be a float tensor [%lld, classes, %lld]",
                              (long long)boxes->dims[0], (long long)boxes->dims[1]);
    int64_t max_out = 0;
    double iou_thr = 0.0, score_thr = -INFINITY;
    bool have_sth = false;
    if (mo && mo->numel > 0) {
        if (mo->numel != 1 || !cg_dtype_is_int(mo->dtype))
            return cg_kernel_fail(k, CG_INVALID, "max_output_boxes_per_class must be one integer");
        max_out = cg_tensor_get_i64(mo, 0);
    }
    if (iou && iou->numel > 0) {
        if (iou->numel != 1 || !mc_is_float(iou->dtype))
            return cg_kernel_fail(k, CG_INVALID, "iou_threshold must be one float");
        iou_thr = cg_tensor_get_f64(iou, 0);
        if (!(iou_thr >= 0.0 && iou_thr <= 1.0))
            return cg_kernel_fail(k, CG_INVALID, "iou_threshold %g is outside [0, 1]", iou_thr);
    }
    if (sth && sth->numel > 0) {
        if (sth->numel != 1 || !mc_is_float(sth->dtype))
            return cg_kernel_fail(k, CG_INVALID, "score_threshold must be one float");
        score_thr = cg_tensor_get_f64(sth, 0);
        have_sth = true;
    }
    int64_t center = cg_attr_int(k, "center_point_box", 0);
    if (center != 0 && center != 1)
        return cg_kernel_fail(k, CG_INVALID, "center_point_box %lld must be 0 or 1",
                              (long long)center);
    int64_t B = boxes->dims[0], NB = boxes->dims[1], NC = scores->dims[1];
    if (max_out < 0)
        max_out = 0;
    if (max_out > NB)
        max_out = NB;
    double *bx = mc_to_f64(k, boxes), *sc = mc_to_f64(k, scores);
    double *corners = mc_scratch_f64(k, NB * 4);
    nms_cand *cand = cg_kernel_scratch(k, (size_t)(NB ? NB : 1) * sizeof(nms_cand));
    int64_t *sel = cg_kernel_scratch(k, (size_t)(NB ? NB : 1) * sizeof(int64_t));
    nms_xkey *xkeys = cg_kernel_scratch(k, (size_t)(NB ? NB : 1) * sizeof(nms_xkey));
    uint8_t *kept = cg_kernel_scratch(k, (size_t)(NB ? NB : 1));
    int64_t total_max;
    if (!bx || !sc || !corners || !cand || !sel || !xkeys || !kept)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if (B > 0 && NC > INT64_MAX / B / (max_out ? max_out : 1))
        return cg_kernel_fail(k, CG_LIMIT, "too many selections");
    total_max = B * NC * max_out;
    int64_t *res = cg_kernel_scratch(k, (size_t)(total_max ? total_max : 1) * 3 * sizeof(int64_t));
    if (!res)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    int64_t nres = 0;
    for (int64_t b = 0; b < B && max_out > 0; b++) {
        for (int64_t i = 0; i < NB; i++)
            nms_corners(bx + (b * NB + i) * 4, center == 1, corners + i * 4);
        for (int64_t c = 0; c < NC; c++) {
            const double *s = sc + (b * NC + c) * NB;
            int64_t nc = 0;
            for (int64_t i = 0; i < NB; i++)
                if (!have_sth || s[i] > score_thr)
                    cand[nc++] = (nms_cand){s[i], i};
            qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
            int64_t nsel = nms_select(cand, nc, corners, iou_thr, max_out, xkeys, kept, sel);
            for (int64_t j = 0; j < nsel; j++) {
                res[nres * 3] = b, res[nres * 3 + 1] = c, res[nres * 3 + 2] = sel[j];
                nres++;
            }
        }
    }
    int64_t od[2] = {nres, 3};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 2, od, &Y)))
        return st;
    if (nres)
        memcpy(Y->data, res, (size_t)nres * 3 * sizeof(int64_t));
    return CG_OK;
}

/* ---- Det ------------------------------------------------------------------ */

cg_status cg_op_det(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    if (X->rank < 2 || X->dims[X->rank - 1] != X->dims[X->rank - 2])
        return cg_kernel_fail(k, CG_INVALID, "input must have shape [*, M, M]");
    if (!mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "type %s is not supported",
                              cg_dtype_name(X->dtype));
    int64_t M = X->dims[X->rank - 1];
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, X->dtype, X->rank - 2, X->dims, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    double *x = mc_to_f64(k, X), *y = mc_scratch_f64(k, Y->numel);
    if (!x || !y)
        return CG_NOMEM;
    for (int64_t b = 0; b < Y->numel; b++) {
        double *a = x + b * M * M; /* factored in place (scratch copy) */
        double det = 1.0;
        for (int64_t c = 0; c < M; c++) {
            int64_t piv = c;
            for (int64_t r = c + 1; r < M; r++)
                if (fabs(a[r * M + c]) > fabs(a[piv * M + c]))
                    piv = r;
            if (a[piv * M + c] == 0.0) {
                det = 0.0;
                break;
            }
            if (piv != c) {
                for (int64_t j = 0; j < M; j++) {
                    double t = a[c * M + j];
                    a[c * M + j] = a[piv * M + j];
                    a[piv * M + j] = t;
                }
                det = -det;
            }
            double d = a[c * M + c];
            det *= d;
            for (int64_t r = c + 1; r < M; r++) {
                double f = a[r * M + c] / d;
                if (f == 0.0)
                    continue;
                for (int64_t j = c; j < M; j++)
                    a[r * M + j] -= f * a[c * M + j];
            }
        }
        y[b] = det;
    }
    mc_from_f64(Y, y);
    return CG_OK;
}

/* ---- random generators ---------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

/* Uniform in [0, 1). */
static double rng_uniform(rng *r) { return cg_unit_interval(cg_splitmix64(&r->s)); }

static double rng_normal(rng *r)
{
    /* Box-Muller; u1 in (0, 1] keeps log finite. */
    double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static rng rng_seed(const cg_kernel_ctx *k)
{
    rng r;
    const cg_attr *a = cg_kernel_attr(k, "seed");
    if (a) {
        double s = cg_attr_float(k, "seed", 0.0f);
        /* a float outside int64's range does not convert (undefined): clamp */
        int64_t bits = !isfinite(s) ? 0
                       : s >= 9.2233720368547758e18 ? INT64_MAX
                       : s <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)s;
        r.s = (uint64_t)bits * UINT64_C(0x2545F4914F6CDD1D) + UINT64_C(0x1234567);
        return r;
    }
    /* FNV-1a over the node name and op type: stable per node. */
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    const char *parts[2] = {k->node->name ? k->node->name : "", k->node->op_type};
    for (int p = 0; p < 2; p++)
        for (const char *c = parts[p]; c && *c; c++) {
            h ^= (uint8_t)*c;
            h *= UINT64_C(0x100000001b3);
        }
    r.s = h;
    return r;
}

/* Resolves the output dtype attribute (ONNX value) with a default. */
static cg_status rnd_dtype(cg_kernel_ctx *k, cg_dtype dflt, cg_dtype *out)
{
    int64_t dt = cg_attr_int(k, "dtype", (int64_t)dflt);
    if (!cg_dtype_valid(dt))
        return cg_kernel_fail(k, CG_INVALID, "dtype %lld is not a known type", (long long)dt);
    *out = (cg_dtype)dt;
    return CG_OK;
}

static cg_status rnd_fill(cg_kernel_ctx *k, int rank, const int64_t *dims, cg_dtype dflt,
                          bool normal)
{
    cg_dtype dt = CG_DTYPE_UNDEFINED;
    cg_status st;
    if ((st = rnd_dtype(k, dflt, &dt)))
        return st;
    if (!mc_is_float(dt))
        return cg_kernel_fail(k, CG_INVALID, "dtype %s is not a float type", cg_dtype_name(dt));
    double p1 = normal ? cg_attr_float(k, "mean", 0.0f) : cg_attr_float(k, "low", 0.0f);
    double p2 = normal ? cg_attr_float(k, "scale", 1.0f) : cg_attr_float(k, "high", 1.0f);
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, dt, rank, dims, &Y)))
        return st;
    rng r = rng_seed(k);
    for (int64_t i = 0; i < Y->numel; i++) {
        double v = normal ? p1 + p2 * rng_normal(&r) : p1 + (p2 - p1) * rng_uniform(&r);
        cg_tensor_set_f64(Y, i, v);
    }
    return CG_OK;
}

static cg_status rnd_shape_attr(cg_kernel_ctx *k, int *rank, int64_t *dims)
{
    size_t n = 0;
    const int64_t *shape = cg_attr_ints(k, "shape", &n);
    if (!cg_kernel_attr(k, "shape"))
        return cg_kernel_fail(k, CG_INVALID, "missing shape attribute");
    if (n > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "shape of rank %zu exceeds %d", n, CG_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        if (shape[i] < 0)
            return cg_kernel_fail(k, CG_INVALID, "shape[%zu] = %lld is negative", i,
                                  (long long)shape[i]);
        dims[i] = shape[i];
    }
    *rank = (int)n;
    return CG_OK;
}

cg_status cg_op_randomnormal(cg_kernel_ctx *k)
{
    int rank;
    int64_t dims[CG_MAX_RANK];
    cg_status st;
    if ((st = rnd_shape_attr(k, &rank, dims)))
        return st;
    return rnd_fill(k, rank, dims, CG_DTYPE_FLOAT, true);
}

cg_status cg_op_randomuniform(cg_kernel_ctx *k)
{
    int rank;
    int64_t dims[CG_MAX_RANK];
    cg_status st;
    if ((st = rnd_shape_attr(k, &rank, dims)))
        return st;
    return rnd_fill(k, rank, dims, CG_DTYPE_FLOAT, false);
}

cg_status cg_op_randomnormallike(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    return rnd_fill(k, X->rank, X->dims, X->dtype, true);
}

cg_status cg_op_randomuniformlike(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    return rnd_fill(k, X->rank, X->dims, X->dtype, false);
}

cg_status cg_op_bernoulli(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    cg_dtype dt = CG_DTYPE_UNDEFINED;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    if (!mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input must be a float tensor of probabilities");
    if ((st = rnd_dtype(k, X->dtype, &dt)))
        return st;
    if (dt == CG_DTYPE_STRING || cg_dtype_size(dt) == 0)
        return cg_kernel_fail(k, CG_INVALID, "dtype %s is not numeric", cg_dtype_name(dt));
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, dt, X->rank, X->dims, &Y)))
        return st;
    rng r = rng_seed(k);
    for (int64_t i = 0; i < X->numel; i++) {
        double p = cg_tensor_get_f64(X, i);
        if (!(p >= 0.0 && p <= 1.0))
            return cg_kernel_fail(k, CG_INVALID, "probability %g at %lld is outside [0, 1]", p,
                                  (long long)i);
        cg_tensor_set_i64(Y, i, rng_uniform(&r) < p ? 1 : 0);
    }
    return CG_OK;
}

cg_status cg_op_multinomial(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    cg_dtype dt = CG_DTYPE_UNDEFINED;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    if (X->rank != 2 || !mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input must be a float tensor [batch, classes]");
    if ((st = rnd_dtype(k, CG_DTYPE_INT32, &dt)))
        return st;
    if (dt != CG_DTYPE_INT32 && dt != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "dtype must be int32 or int64");
    int64_t ss = cg_attr_int(k, "sample_size", 1);
    if (ss < 0)
        return cg_kernel_fail(k, CG_INVALID, "sample_size %lld is negative", (long long)ss);
    int64_t B = X->dims[0], NC = X->dims[1];
    int64_t od[2] = {B, ss};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, dt, 2, od, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    if (NC == 0)
        return cg_kernel_fail(k, CG_INVALID, "no classes to sample from");
    double *x = mc_to_f64(k, X), *cdf = mc_scratch_f64(k, NC);
    if (!x || !cdf)
        return CG_NOMEM;
    rng r = rng_seed(k);
    for (int64_t b = 0; b < B; b++) {
        /* Inputs are unnormalized log-probabilities: softmax into a CDF. */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < NC; c++)
            mx = fmax(mx, x[b * NC + c]);
        for (int64_t c = 0; c < NC; c++) {
            sum += isfinite(mx) ? exp(x[b * NC + c] - mx) : 0.0;
            cdf[c] = sum;
        }
        for (int64_t s = 0; s < ss; s++) {
            double u = rng_uniform(&r) * sum;
            int64_t c = 0;
            while (c < NC - 1 && cdf[c] <= u)
                c++;
            cg_tensor_set_i64(Y, b * ss + s, c);
        }
    }
    return CG_OK;
}
