/*
 * The elementwise driver: broadcast iteration, float16/bfloat16 widening and
 * the common kernel skeletons (see elementwise.h for the row contract).
 *
 * cg_ew_run coalesces the output's dimensions first: size-1 dimensions are
 * dropped and neighbours are merged whenever every operand steps through
 * them as one contiguous (or one broadcast) run. Same-shape operands thus
 * become a single row of numel elements, and "[N,C,H,W] + [1,C,1,1]" becomes
 * rows of H*W with a scalar operand: the rows' fast cases.
 */
#include <stdio.h>
#include <string.h>

#include "run/ops/elementwise.h"
#include "run/ops/kernels.h"
#include "run/ops/simd.h"

void cg_ew_set_attrs(cg_ew_params *p, double alpha, double beta, double gamma)
{
    p->alpha_f64 = alpha;
    p->beta_f64 = beta;
    p->gamma_f64 = gamma;
    p->alpha_f32 = (float)alpha;
    p->beta_f32 = (float)beta;
    p->gamma_f32 = (float)gamma;
}

cg_dtype cg_ew_compute_dtype(cg_dtype dt)
{
    return (dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_BFLOAT16) ? CG_DTYPE_FLOAT : dt;
}

/* The coalesced iteration of cg_ew_run, shared by the threads. */
typedef struct ew_iter {
    int nin, rank;
    int64_t dims[CG_MAX_RANK];
    int64_t st[CG_EW_MAX_INPUTS][CG_MAX_RANK];
    size_t esize[CG_EW_MAX_INPUTS], osize;
    const cg_tensor *const *in;
    char *o;
    cg_ew_row_fn fn;
    cg_ew_params *p;
    int64_t outer, inner;
} ew_iter;

/* Rows [it0, it1) of the outer iteration, columns [c0, c1) of each. */
static void ew_iter_range(const ew_iter *w, int64_t it0, int64_t it1, int64_t c0, int64_t c1)
{
    int64_t idx[CG_MAX_RANK] = {0}, off[CG_EW_MAX_INPUTS] = {0};
    const void *ptr[CG_EW_MAX_INPUTS];
    int64_t inner_st[CG_EW_MAX_INPUTS];
    int r = w->rank;
    for (int k = 0; k < w->nin; k++)
        inner_st[k] = w->st[k][r - 1];
    /* the odometer at row it0 */
    int64_t rest = it0;
    for (int d = r - 2; d >= 0; d--) {
        idx[d] = rest % w->dims[d];
        rest /= w->dims[d];
        for (int k = 0; k < w->nin; k++)
            off[k] += idx[d] * w->st[k][d];
    }
    for (int64_t it = it0; it < it1; it++) {
        for (int k = 0; k < w->nin; k++)
            ptr[k] = (const char *)w->in[k]->data +
                     (size_t)(off[k] + c0 * inner_st[k]) * w->esize[k];
        w->fn(w->o + ((size_t)it * (size_t)w->inner + (size_t)c0) * w->osize, ptr, inner_st,
              c1 - c0, w->p);
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++;
            for (int k = 0; k < w->nin; k++)
                off[k] += w->st[k][d];
            if (idx[d] < w->dims[d])
                break;
            for (int k = 0; k < w->nin; k++)
                off[k] -= w->st[k][d] * w->dims[d];
            idx[d] = 0;
        }
    }
}

/* Thread t's share: whole rows when there are enough, else a slice of
 * every row (rows split at multiples of 64 elements). */
static void ew_task(void *arg, int t, int nt)
{
    const ew_iter *w = arg;
    int64_t lo, hi;
    if (w->outer >= nt) {
        cg_kernel_share(w->outer, 1, t, nt, &lo, &hi);
        ew_iter_range(w, lo, hi, 0, w->inner);
    } else {
        cg_kernel_share(w->inner, 64, t, nt, &lo, &hi);
        if (hi > lo)
            ew_iter_range(w, 0, w->outer, lo, hi);
    }
}

void cg_ew_run(int nin, const cg_tensor *const *in, cg_tensor *out, cg_ew_row_fn fn,
               cg_ew_params *p)
{
    int64_t full[CG_EW_MAX_INPUTS][CG_MAX_RANK];
    int64_t dims[CG_MAX_RANK];
    int64_t st[CG_EW_MAX_INPUTS][CG_MAX_RANK];
    size_t esize[CG_EW_MAX_INPUTS];
    int rank = 0;

    if (out->numel == 0)
        return;
    for (int k = 0; k < nin; k++) {
        cg_broadcast_strides(in[k]->rank, in[k]->dims, out->rank, out->dims, full[k]);
        esize[k] = cg_tensor_elem_size(in[k]->dtype);
    }
    /* Coalesce: an outer dim merges into the inner one when every operand's
     * outer stride equals inner stride * inner size (contiguous or both 0). */
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        bool merge = rank > 0;
        for (int k = 0; merge && k < nin; k++)
            merge = st[k][rank - 1] == full[k][d] * out->dims[d];
        if (merge) {
            dims[rank - 1] *= out->dims[d];
            for (int k = 0; k < nin; k++)
                st[k][rank - 1] = full[k][d];
        } else {
            dims[rank] = out->dims[d];
            for (int k = 0; k < nin; k++)
                st[k][rank] = full[k][d];
            rank++;
        }
    }
    if (rank == 0) { /* a single element (rank 0 or all dims 1) */
        dims[0] = 1;
        for (int k = 0; k < nin; k++)
            st[k][0] = 0;
        rank = 1;
    }

    const int64_t inner = dims[rank - 1];
    if (p->k && cg_kernel_threads(p->k) > 1 &&
        (out->dtype == CG_DTYPE_FLOAT || out->dtype == CG_DTYPE_DOUBLE)) {
        ew_iter w;
        w.nin = nin;
        w.rank = rank;
        memcpy(w.dims, dims, sizeof dims);
        memcpy(w.st, st, sizeof st);
        memcpy(w.esize, esize, sizeof esize);
        w.osize = cg_tensor_elem_size(out->dtype);
        w.in = in;
        w.o = (char *)out->data;
        w.fn = fn;
        w.p = p;
        w.inner = inner;
        w.outer = out->numel / inner;
        cg_kernel_parallel_work(p->k, (double)out->numel * 4.0, ew_task, &w);
        return;
    }
    int64_t inner_st[CG_EW_MAX_INPUTS];
    for (int k = 0; k < nin; k++)
        inner_st[k] = st[k][rank - 1];
    const int64_t outer = out->numel / inner;
    const size_t osize = cg_tensor_elem_size(out->dtype);
    int64_t idx[CG_MAX_RANK] = {0};
    int64_t off[CG_EW_MAX_INPUTS] = {0};
    const void *ptr[CG_EW_MAX_INPUTS];
    char *o = (char *)out->data;

    for (int64_t it = 0; it < outer; it++) {
        for (int k = 0; k < nin; k++)
            ptr[k] = (const char *)in[k]->data + (size_t)off[k] * esize[k];
        fn(o + (size_t)it * (size_t)inner * osize, ptr, inner_st, inner, p);
        for (int d = rank - 2; d >= 0; d--) {
            idx[d]++;
            for (int k = 0; k < nin; k++)
                off[k] += st[k][d];
            if (idx[d] < dims[d])
                break;
            for (int k = 0; k < nin; k++)
                off[k] -= st[k][d] * dims[d];
            idx[d] = 0;
        }
    }
}

void cg_ew_shape_str(const cg_tensor *t, char *buf, size_t size)
{
    size_t used = 0;
    int n = snprintf(buf, size, "[");
    if (n < 0 || (size_t)n >= size)
        return;
    used = (size_t)n;
    for (int i = 0; i < t->rank; i++) {
        n = snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
    snprintf(buf + used, size - used, "]");
}

cg_status cg_ew_output(cg_kernel_ctx *k, int nin, const cg_tensor *const *in,
                       cg_dtype dtype, cg_tensor **out)
{
    int rank = in[0]->rank;
    int64_t dims[CG_MAX_RANK];
    if (rank > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "rank %d exceeds %d", rank, CG_MAX_RANK);
    memcpy(dims, in[0]->dims, sizeof(int64_t) * (size_t)rank);
    for (int i = 1; i < nin; i++) {
        int64_t next[CG_MAX_RANK];
        int next_rank;
        if (!cg_broadcast_shapes(rank, dims, in[i]->rank, in[i]->dims, &next_rank, next)) {
            char sa[256], sb[256];
            cg_tensor acc;
            acc.rank = rank;
            memcpy(acc.dims, dims, sizeof(int64_t) * (size_t)rank);
            cg_ew_shape_str(&acc, sa, sizeof sa);
            cg_ew_shape_str(in[i], sb, sizeof sb);
            return cg_kernel_fail(k, CG_INVALID, "cannot broadcast shapes %s and %s (input %d)",
                                  sa, sb, i);
        }
        rank = next_rank;
        memcpy(dims, next, sizeof(int64_t) * (size_t)rank);
    }
    /* cg_ew_run writes every element */
    return cg_kernel_output_uninit(k, 0, dtype, rank, dims, out);
}

cg_status cg_ew_widen(cg_kernel_ctx *k, const cg_tensor **t, cg_tensor *storage)
{
    const cg_tensor *src = *t;
    if (src->dtype != CG_DTYPE_FLOAT16 && src->dtype != CG_DTYPE_BFLOAT16)
        return CG_OK;
    *storage = *src;
    storage->dtype = CG_DTYPE_FLOAT;
    storage->data = NULL;
    if (src->numel > 0) {
        if ((uint64_t)src->numel > SIZE_MAX / sizeof(float))
            return cg_kernel_fail(k, CG_LIMIT, "tensor of %lld elements too large",
                                  (long long)src->numel);
        float *dst = (float *)cg_kernel_scratch(k, (size_t)src->numel * sizeof(float));
        if (!dst)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory widening %s input",
                                  cg_dtype_name(src->dtype));
        const uint16_t *h = (const uint16_t *)src->data;
        if (src->dtype == CG_DTYPE_FLOAT16)
            cg_simd_ops_get(cg_kernel_simd(k))->fp16_to_f32(dst, h, src->numel);
        else
            for (int64_t i = 0; i < src->numel; i++)
                dst[i] = cg_bf16_to_f32(h[i]);
        storage->data = dst;
    }
    *t = storage;
    return CG_OK;
}

cg_status cg_ew_work(cg_kernel_ctx *k, cg_tensor *out, cg_tensor *storage, cg_tensor **work)
{
    *work = out;
    if (out->dtype != CG_DTYPE_FLOAT16 && out->dtype != CG_DTYPE_BFLOAT16)
        return CG_OK;
    *storage = *out;
    storage->dtype = CG_DTYPE_FLOAT;
    storage->data = NULL;
    if (out->numel > 0) {
        /* out's byte size passed the allocation limit, so numel*4 fits */
        storage->data = cg_kernel_scratch(k, (size_t)out->numel * sizeof(float));
        if (!storage->data)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory for a float32 work buffer");
    }
    *work = storage;
    return CG_OK;
}

cg_status cg_ew_finish(cg_kernel_ctx *k, const cg_tensor *work, cg_tensor *out,
                       const cg_ew_params *p)
{
    switch (p->error) {
    case CG_EW_OK: break;
    case CG_EW_ERR_DIV_ZERO: return cg_kernel_fail(k, CG_RUNTIME, "integer division by zero");
    case CG_EW_ERR_OVERFLOW:
        return cg_kernel_fail(k, CG_RUNTIME,
                              "integer overflow: the type's minimum divided by -1");
    case CG_EW_ERR_ZERO_NEG:
        return cg_kernel_fail(k, CG_RUNTIME, "integer 0 raised to a negative power");
    case CG_EW_ERR_NOMEM: return cg_kernel_fail(k, CG_NOMEM, "out of memory copying strings");
    default: return cg_kernel_fail(k, CG_RUNTIME, "elementwise error %d", p->error);
    }
    if (work == out)
        return CG_OK;
    const float *src = (const float *)work->data;
    uint16_t *dst = (uint16_t *)out->data;
    if (out->dtype == CG_DTYPE_FLOAT16)
        cg_simd_ops_get(cg_kernel_simd(k))->f32_to_fp16(dst, src, out->numel);
    else
        for (int64_t i = 0; i < out->numel; i++)
            dst[i] = cg_f32_to_bf16(src[i]);
    return CG_OK;
}

cg_status cg_ew_legacy_broadcast(cg_kernel_ctx *k, const cg_tensor *a, const cg_tensor **b,
                                 cg_tensor *storage)
{
    const cg_tensor *src = *b;
    if (k->since >= 7 || cg_attr_int(k, "broadcast", 0) == 0)
        return CG_OK; /* same shapes required; numpy rules accept them as they are */
    if (src->rank > a->rank)
        return cg_kernel_fail(k, CG_INVALID, "broadcast=1 but B has rank %d > A's rank %d",
                              src->rank, a->rank);
    int64_t axis = cg_attr_int(k, "axis", INT64_MIN);
    if (axis == INT64_MIN)
        axis = a->rank - src->rank;
    else if (axis < 0)
        axis += a->rank;
    if (axis < 0 || axis > a->rank - src->rank)
        return cg_kernel_fail(k, CG_INVALID,
                              "axis %lld does not fit B of rank %d into A of rank %d",
                              (long long)cg_attr_int(k, "axis", 0), src->rank, a->rank);
    *storage = *src;
    storage->rank = a->rank;
    for (int i = 0; i < a->rank; i++) {
        int j = i - (int)axis;
        storage->dims[i] = (j >= 0 && j < src->rank) ? src->dims[j] : 1;
    }
    *b = storage;
    return CG_OK;
}

cg_status cg_ew_apply_fn(cg_kernel_ctx *k, int nin, const cg_tensor *const *in_, bool widen,
                         cg_dtype out_dtype, cg_ew_row_fn fn, cg_ew_params *p)
{
    const cg_tensor *in[CG_EW_MAX_INPUTS];
    cg_tensor wide[CG_EW_MAX_INPUTS], work_storage;
    cg_tensor *out, *work;
    cg_status st;

    for (int i = 0; i < nin; i++)
        in[i] = in_[i];
    st = cg_ew_output(k, nin, in, out_dtype, &out);
    if (st != CG_OK)
        return st;
    work = out;
    if (widen) {
        for (int i = 0; i < nin; i++) {
            st = cg_ew_widen(k, &in[i], &wide[i]);
            if (st != CG_OK)
                return st;
        }
        st = cg_ew_work(k, out, &work_storage, &work);
        if (st != CG_OK)
            return st;
    }
    if (!p->simd)
        p->simd = cg_simd_ops_get(cg_kernel_simd(k));
    p->k = k;
    p->ta = in[0]->dtype;
    p->tb = nin > 1 ? in[1]->dtype : CG_DTYPE_UNDEFINED;
    p->to = work->dtype;
    p->out = out;
    cg_ew_run(nin, in, work, fn, p);
    return cg_ew_finish(k, work, out, p);
}

cg_status cg_ew_apply(cg_kernel_ctx *k, int nin, bool same_type, bool widen,
                      cg_dtype out_dtype, const cg_ew_row_fn *table, cg_ew_params *p)
{
    const cg_tensor *in[CG_EW_MAX_INPUTS];
    cg_tensor legacy;
    cg_status st;

    for (int i = 0; i < nin; i++) {
        st = cg_kernel_require(k, (size_t)i, &in[i]);
        if (st != CG_OK)
            return st;
        if (same_type && in[i]->dtype != in[0]->dtype)
            return cg_kernel_fail(k, CG_INVALID, "input %d has type %s but input 0 has %s", i,
                                  cg_dtype_name(in[i]->dtype), cg_dtype_name(in[0]->dtype));
    }
    if (nin == 2) {
        st = cg_ew_legacy_broadcast(k, in[0], &in[1], &legacy);
        if (st != CG_OK)
            return st;
    }
    cg_dtype key = widen ? cg_ew_compute_dtype(in[0]->dtype) : in[0]->dtype;
    cg_ew_row_fn fn = ((int)key >= 0 && key < CG_DTYPE_COUNT) ? table[key] : NULL;
    if (!fn)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input type %s is not supported",
                              cg_dtype_name(in[0]->dtype));
    return cg_ew_apply_fn(k, nin, in, widen,
                          out_dtype == CG_DTYPE_UNDEFINED ? in[0]->dtype : out_dtype, fn, p);
}

cg_status cg_ew_apply_unary(cg_kernel_ctx *k, cg_dtype out_dtype, const cg_ew_row_fn *table,
                            cg_ew_params *p)
{
    return cg_ew_apply(k, 1, true, true, out_dtype, table, p);
}
