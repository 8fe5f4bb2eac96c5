/*
 * The memory plan before the first run: the main graph's value shapes
 * followed from its declared input shapes, op by op, so that set-up can
 * build the plan (plan.c, cg_mem_plan_build) and touch its arena's pages.
 * Without it the first run records the plan: every intermediate lands on
 * fresh pages of the value heap, and on a virtual machine that backs
 * memory lazily a page touched for the first time costs microseconds
 * (PP-OCRv4 det: 66 MB of values, a first run of 100-220 ms against 70 ms
 * warm runs; transformer_s2048: 250-500 ms against 200).
 *
 * Only sizes come out of this, and the kernels stay the judges of shapes:
 * a value whose size was predicted too small is allocated outside the
 * arena (kernel_api.c counts it as a miss) and the run that saw a miss
 * drops the predicted plan, so the next run records one as before. A
 * model this cannot follow (an input with a symbolic dim, an op without a
 * rule below, a data-dependent shape such as NonZero's) keeps the
 * recording first run. Not with an assignment, the float64 mode or fp16
 * emulation: their values are not the ones followed here.
 *
 * Each value carries its dtype and shape, and for a small integer tensor
 * its contents (the shape arithmetic of exported graphs: Shape, Gather,
 * Concat, Unsqueeze feeding a Reshape or an Expand).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mapfile.h"
#include "core/strmap.h"
#include "ir/walk.h"
#include "run/exec.h"
#include "run/kernel.h"
#include "run/ops/nn_common.h"

/* integer tensors up to this many elements carry their contents */
#define PV_MAX_INTS 64
/* a step with more inputs or outputs than these stops the prediction */
#define PV_MAX_INPUTS 256
#define PV_MAX_OUTPUTS 64
/* a predicted dim (or element count) above this is refused: no real value
 * comes near it */
#define PV_MAX_DIM ((int64_t)1 << 40)
/* ConvTranspose's strides, dilations, kernel and pads: followed up to this */
#define PV_MAX_WINDOW ((int64_t)1 << 20)

typedef struct pv {
    bool known;
    cg_dtype dt;
    int rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    int64_t *ints; /* numel values when an integer (or bool) tensor's contents are known */
} pv;

typedef struct pctx {
    const cg_plan *p;
    const cg_step *st;
    pv *in[PV_MAX_INPUTS]; /* the step's inputs (NULL: omitted) */
    size_t nin;
    pv **out;             /* the step's outputs (NULL: not used) */
    size_t nout;
    int arg;              /* the rule's row's argument */
    cg_kernel_ctx k;      /* for cg_nn_window_init (no run: no scratch) */
    cg_error err;
    size_t scratch;       /* the biggest kernel scratch foreseen (scratch_need) */
} pctx;

/* Kernel scratch a step is known to take: the convolutions' zero-padded
 * input copy (one group's channels: conv_gemm, conv_rows in ops/conv.c)
 * with the GEMM's tap and position tables, and ConvTranspose's column
 * matrix, in float32, plus the small buffers around them. An estimate for
 * set-up to touch in advance (cg_mem_plan_predict), never a bound the
 * kernels rely on: they take what they need either way. */
#define PV_SCRATCH_SLACK ((size_t)256 << 10)

/* a * b, or -1 when either is negative or the product passes PV_MAX_DIM */
static int64_t mul_dim(int64_t a, int64_t b)
{
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > PV_MAX_DIM)
        return -1;
    return r;
}

static void scratch_need(pctx *c, int64_t floats, int64_t table_entries)
{
    if (floats > 0 && floats <= PV_MAX_DIM && table_entries >= 0 &&
        table_entries <= PV_MAX_DIM) {
        size_t b = (size_t)floats * sizeof(float) + (size_t)table_entries * sizeof(int64_t) +
                   PV_SCRATCH_SLACK;
        if (b > c->scratch)
            c->scratch = b;
    }
}

static bool is_int(cg_dtype dt)
{
    return dt == CG_DTYPE_INT64 || dt == CG_DTYPE_INT32 || dt == CG_DTYPE_INT16 ||
           dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8 || dt == CG_DTYPE_UINT16 ||
           dt == CG_DTYPE_UINT32 || dt == CG_DTYPE_BOOL;
}

/* Sets o to dtype dt and shape dims[rank]; false (o unknown) when a dim is
 * negative or too big or the element count overflows. */
static bool set_shape(pv *o, cg_dtype dt, int rank, const int64_t *dims)
{
    o->known = false;
    if (rank < 0 || rank > CG_MAX_RANK || cg_dtype_size(dt) == 0)
        return false;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0 || dims[d] > PV_MAX_DIM)
            return false;
        if (dims[d] && n > PV_MAX_DIM / dims[d])
            return false;
        n *= dims[d];
    }
    o->dt = dt;
    o->rank = rank;
    if (rank)
        memmove(o->dims, dims, (size_t)rank * sizeof *dims);
    o->numel = n;
    o->known = true;
    return true;
}

/* Gives o the contents v[o->numel] (copied; false when out of memory). */
static bool set_ints(pv *o, const int64_t *v)
{
    if (!o->known || o->numel > PV_MAX_INTS || !is_int(o->dt))
        return true; /* contents are an extra: not carried */
    free(o->ints);
    o->ints = malloc(((size_t)o->numel + 1) * sizeof *o->ints);
    if (!o->ints)
        return false;
    if (o->numel)
        memcpy(o->ints, v, (size_t)o->numel * sizeof *v);
    return true;
}

static pv *in_at(pctx *c, size_t i)
{
    return i < c->nin ? c->in[i] : NULL;
}

/* Input i, known (NULL when omitted or unknown). */
static const pv *need(pctx *c, size_t i)
{
    pv *v = in_at(c, i);
    return v && v->known ? v : NULL;
}

/* The contents of input i (NULL when not known). */
static const int64_t *ints_of(pctx *c, size_t i, int64_t *n)
{
    const pv *v = need(c, i);
    *n = 0;
    if (!v || !v->ints)
        return NULL;
    *n = v->numel;
    return v->ints;
}

/* The float contents of input i when it is an initializer (Resize's
 * scales), as doubles in out[cap]; the count, or -1. */
static int64_t floats_of_init(pctx *c, size_t i, double *out, int64_t cap)
{
    const cg_ref *r = i < c->st->node->input_count ? &c->st->in[i] : NULL;
    if (!r || r->slot < 0 || r->up != 0 || c->p->slot_kind[r->slot] != CG_SLOT_INIT)
        return -1;
    const cg_value *v = c->p->init_values[r->slot];
    if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.numel > cap ||
        (v->tensor.dtype != CG_DTYPE_FLOAT && v->tensor.dtype != CG_DTYPE_DOUBLE))
        return -1;
    for (int64_t j = 0; j < v->tensor.numel; j++)
        out[j] = cg_tensor_get_f64(&v->tensor, j);
    return v->tensor.numel;
}

/* Whether string attribute `name` of the step's node reads `value`; an
 * absent one reads `dflt` (cg_attr_string needs a run's scratch). */
static bool str_attr_is(const pctx *c, const char *name, const char *value, const char *dflt)
{
    const cg_attr *a = cg_node_attr(c->st->node, name);
    if (!a || !(a->type == CG_ATTR_STRING || (!a->has_type && a->s.data)))
        return strcmp(dflt, value) == 0;
    size_t len = strlen(value);
    return a->s.len == len && (!len || memcmp(a->s.data, value, len) == 0);
}

/* The output extents of a sliding window (Conv, pools): cg_nn_window_init's
 * arithmetic, with auto_pad read here (the init reads it through the
 * run's scratch, which set-up has not got). False when not followed. */
static bool window_out(pctx *c, int nsp, const int64_t *in, const int64_t *kernel, bool pool,
                       int64_t *out)
{
    if (str_attr_is(c, "auto_pad", "SAME_UPPER", "NOTSET") ||
        str_attr_is(c, "auto_pad", "SAME_LOWER", "NOTSET")) {
        size_t ns;
        const int64_t *s = cg_node_attr_ints(c->st->node, "strides", &ns);
        if (s && ns != (size_t)nsp)
            return false;
        for (int i = 0; i < nsp; i++) {
            int64_t st = s ? s[i] : 1;
            if (st < 1 || st > PV_MAX_WINDOW || in[i] < 0 || kernel[i] < 1)
                return false;
            out[i] = (in[i] + st - 1) / st;
        }
        return true;
    }
    /* VALID ignores pads: with none given, the init's NOTSET arithmetic */
    if (!str_attr_is(c, "auto_pad", "NOTSET", "NOTSET") &&
        (!str_attr_is(c, "auto_pad", "VALID", "NOTSET") || cg_node_attr(c->st->node, "pads")))
        return false;
    cg_nn_window win;
    if (cg_nn_window_init(&c->k, nsp, in, kernel, pool, &win) != CG_OK)
        return false;
    memcpy(out, win.out, (size_t)nsp * sizeof *out);
    return true;
}

static bool norm_axis(int64_t a, int rank, int *out)
{
    int64_t r;
    if (!cg_normalize_axis(a, rank, &r))
        return false;
    *out = (int)r;
    return true;
}

/* --- rules ------------------------------------------------------------------ */

static bool same_as(pv *o, const pv *x, cg_dtype dt)
{
    return set_shape(o, dt, x->rank, x->dims);
}

/* Broadcast of inputs [from, to) (the known ones; omitted ones skipped). */
static bool broadcast_in(pctx *c, size_t from, size_t to, int *rank, int64_t *dims)
{
    bool any = false;
    for (size_t i = from; i < to; i++) {
        const pv *x = need(c, i);
        if (!x)
            return false;
        if (!any) {
            *rank = x->rank;
            memcpy(dims, x->dims, sizeof x->dims);
            any = true;
        } else {
            int64_t b[CG_MAX_RANK];
            int rb;
            if (!cg_broadcast_shapes(*rank, dims, x->rank, x->dims, &rb, b))
                return false;
            *rank = rb;
            memcpy(dims, b, sizeof b);
        }
    }
    return any;
}

/* Integer elementwise arithmetic on known contents, where both exist. */
static bool ints_binary(pctx *c, pv *o, int op)
{
    int64_t na, nb;
    const int64_t *a = ints_of(c, 0, &na), *b = ints_of(c, 1, &nb);
    if (!a || !b || !o->known || o->numel > PV_MAX_INTS || (na != o->numel && na != 1) ||
        (nb != o->numel && nb != 1))
        return true;
    int64_t r[PV_MAX_INTS];
    for (int64_t j = 0; j < o->numel; j++) {
        int64_t x = a[na == 1 ? 0 : j], y = b[nb == 1 ? 0 : j];
        switch (op) {
        case '+': if (__builtin_add_overflow(x, y, &r[j])) return true; break;
        case '-': if (__builtin_sub_overflow(x, y, &r[j])) return true; break;
        case '*': if (__builtin_mul_overflow(x, y, &r[j])) return true; break;
        case '/': if (y <= 0 || x < 0) return true; r[j] = x / y; break;
        case '=': r[j] = x == y; break;
        case '<': r[j] = x < y; break;
        case '>': r[j] = x > y; break;
        case 'M': r[j] = x > y ? x : y; break;
        case 'm': r[j] = x < y ? x : y; break;
        default: return true;
        }
    }
    return set_ints(o, r);
}

/* Broadcasting arithmetic (variadic for Max, Min, Sum, Mean): input 0's
 * dtype; arg: the integer operation followed on contents (0: none). */
static bool rule_arith(pctx *c)
{
    const pv *x = need(c, 0);
    int rank;
    int64_t dims[CG_MAX_RANK];
    if (!x || !broadcast_in(c, 0, c->nin, &rank, dims) || !set_shape(c->out[0], x->dt, rank, dims))
        return true;
    return c->arg && c->nin == 2 ? ints_binary(c, c->out[0], c->arg) : true;
}

/* Comparisons and logic: bool, broadcast. */
static bool rule_compare(pctx *c)
{
    int rank;
    int64_t dims[CG_MAX_RANK];
    if (!broadcast_in(c, 0, c->nin, &rank, dims) ||
        !set_shape(c->out[0], CG_DTYPE_BOOL, rank, dims))
        return true;
    return c->arg && c->nin == 2 ? ints_binary(c, c->out[0], c->arg) : true;
}

/* Conv, ConvInteger: [N, M, out...] with M = W's dim 0; arg: the output
 * dtype (0: the input's). */
static bool rule_conv(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0), *w = need(c, 1);
    if (!x || !w || x->rank < 3 || w->rank != x->rank)
        return true;
    cg_dtype dt = c->arg ? (cg_dtype)c->arg : x->dt;
    int nsp = x->rank - 2;
    int64_t kernel[CG_MAX_RANK];
    size_t nk;
    const int64_t *ks = cg_node_attr_ints(c->st->node, "kernel_shape", &nk);
    for (int i = 0; i < nsp; i++)
        kernel[i] = ks && nk == (size_t)nsp ? ks[i] : w->dims[2 + i];
    int64_t dims[CG_MAX_RANK] = {x->dims[0], w->dims[0]};
    if (!window_out(c, nsp, x->dims + 2, kernel, false, dims + 2))
        return true;
    int64_t group = cg_node_attr_int(c->st->node, "group", 1);
    cg_nn_window win;
    if (x->dt == CG_DTYPE_FLOAT && !c->arg && group >= 1 && x->dims[1] % group == 0 &&
        str_attr_is(c, "auto_pad", "NOTSET", "NOTSET") &&
        cg_nn_window_init(&c->k, nsp, x->dims + 2, kernel, false, &win) == CG_OK) {
        /* depthwise convolutions copy one plane per thread: left out */
        int64_t cgc = x->dims[1] / group, floats = cgc, kn = 1, positions = 1;
        bool padded = false;
        for (int i = 0; i < nsp; i++) {
            padded = padded || win.pad0[i] || win.pad1[i];
            floats = mul_dim(floats, win.in[i] + win.pad0[i] + win.pad1[i]);
            kn = mul_dim(kn, kernel[i]);
            positions = mul_dim(positions, dims[2 + i]);
        }
        int64_t taps = mul_dim(cgc, kn);
        bool rows = group == 1 && nsp == 2 && kn > 1 && taps <= CG_CONV_ROWS_MAX_TAPS;
        if ((padded || rows) && !(cgc == 1 && w->dims[0] / group < 8) && taps >= 0 &&
            positions >= 0)
            scratch_need(c, floats, taps + positions);
    }
    return set_shape(o, dt, x->rank, dims), true;
}

static bool rule_conv_transpose(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0), *w = need(c, 1);
    if (!x || !w || x->rank < 3 || w->rank != x->rank)
        return true;
    const cg_node *n = c->st->node;
    int nsp = x->rank - 2;
    int64_t group = cg_node_attr_int(n, "group", 1);
    size_t ns, nd, np, nop, nos, nk;
    const int64_t *strides = cg_node_attr_ints(n, "strides", &ns);
    const int64_t *dil = cg_node_attr_ints(n, "dilations", &nd);
    const int64_t *pads = cg_node_attr_ints(n, "pads", &np);
    const int64_t *opad = cg_node_attr_ints(n, "output_padding", &nop);
    const int64_t *oshape = cg_node_attr_ints(n, "output_shape", &nos);
    const int64_t *ks = cg_node_attr_ints(n, "kernel_shape", &nk);
    if (!str_attr_is(c, "auto_pad", "NOTSET", "NOTSET"))
        return true; /* SAME/VALID: left to the recording run */
    if (group < 1 || (strides && ns != (size_t)nsp) || (dil && nd != (size_t)nsp) ||
        (pads && np != 2 * (size_t)nsp) || (opad && nop != (size_t)nsp) ||
        (oshape && nos != (size_t)nsp) || (ks && nk != (size_t)nsp))
        return true;
    int64_t dims[CG_MAX_RANK] = {x->dims[0]};
    if (__builtin_mul_overflow(w->dims[1], group, &dims[1]))
        return true;
    for (int i = 0; i < nsp; i++) {
        if (oshape) {
            dims[2 + i] = oshape[i];
            continue;
        }
        int64_t s = strides ? strides[i] : 1, d = dil ? dil[i] : 1;
        int64_t k = ks ? ks[i] : w->dims[2 + i];
        int64_t op = opad ? opad[i] : 0, p0 = pads ? pads[i] : 0, p1 = pads ? pads[i + nsp] : 0;
        /* the window's terms within 2^20 and the input's within 2^40 first:
         * the sum stays below 2^61 */
        if (s < 1 || d < 1 || k < 1 || s > PV_MAX_WINDOW || d > PV_MAX_WINDOW ||
            k > PV_MAX_WINDOW || op < 0 || op > PV_MAX_WINDOW || p0 < 0 || p1 < 0 ||
            p0 > PV_MAX_WINDOW || p1 > PV_MAX_WINDOW || x->dims[2 + i] < 1)
            return true;
        dims[2 + i] = s * (x->dims[2 + i] - 1) + op + (k - 1) * d + 1 - p0 - p1;
    }
    if (x->dt == CG_DTYPE_FLOAT) { /* the column matrix: M/group x kernel x input */
        int64_t floats = w->dims[1];
        for (int i = 0; i < nsp; i++)
            floats = mul_dim(mul_dim(floats, ks ? ks[i] : w->dims[2 + i]), x->dims[2 + i]);
        scratch_need(c, floats, 0);
    }
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_pool(pctx *c)
{
    const pv *x = need(c, 0);
    size_t nk;
    const int64_t *ks = cg_node_attr_ints(c->st->node, "kernel_shape", &nk);
    if (!x || x->rank < 3 || !ks || nk != (size_t)(x->rank - 2))
        return true;
    int64_t dims[CG_MAX_RANK] = {x->dims[0], x->dims[1]};
    if (!window_out(c, x->rank - 2, x->dims + 2, ks, true, dims + 2))
        return true;
    set_shape(c->out[0], x->dt, x->rank, dims);
    if (c->nout > 1 && c->out[1])
        set_shape(c->out[1], CG_DTYPE_INT64, x->rank, dims);
    return true;
}

static bool rule_global_pool(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    if (!x || x->rank < 2)
        return true;
    int64_t dims[CG_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        dims[d] = d < 2 ? x->dims[d] : 1;
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_gemm(pctx *c)
{
    pv *o = c->out[0];
    const pv *a = need(c, 0), *b = need(c, 1);
    if (!a || !b || a->rank != 2 || b->rank != 2)
        return true;
    bool ta = cg_node_attr_int(c->st->node, "transA", 0) != 0;
    bool tb = cg_node_attr_int(c->st->node, "transB", 0) != 0;
    int64_t dims[2] = {a->dims[ta ? 1 : 0], b->dims[tb ? 0 : 1]};
    return set_shape(o, a->dt, 2, dims), true;
}

/* MatMul, MatMulInteger: numpy's matmul shapes; arg: the output dtype (0:
 * input 0's). */
static bool rule_matmul(pctx *c)
{
    pv *o = c->out[0];
    const pv *a = need(c, 0), *b = need(c, 1);
    if (!a || !b || a->rank < 1 || b->rank < 1)
        return true;
    cg_dtype dt = c->arg ? (cg_dtype)c->arg : a->dt;
    int64_t ad[CG_MAX_RANK], bd[CG_MAX_RANK];
    int ar = a->rank, br = b->rank;
    memcpy(ad, a->dims, sizeof ad);
    memcpy(bd, b->dims, sizeof bd);
    bool a1 = ar == 1, b1 = br == 1;
    if (a1) { /* [k] -> [1, k] */
        ad[1] = ad[0];
        ad[0] = 1;
        ar = 2;
    }
    if (b1) { /* [k] -> [k, 1] */
        bd[1] = 1;
        br = 2;
    }
    int64_t batch[CG_MAX_RANK];
    int rb;
    if (!cg_broadcast_shapes(ar - 2, ad, br - 2, bd, &rb, batch) || rb + 2 > CG_MAX_RANK)
        return true;
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < rb; d++)
        dims[r++] = batch[d];
    if (!a1)
        dims[r++] = ad[ar - 2];
    if (!b1)
        dims[r++] = bd[br - 1];
    return set_shape(o, dt, r, dims), true;
}

/* Axes of a reduction or of (Un)Squeeze: the attribute before `input_since`,
 * input 1 from it on. *n = -1 when absent; false when not known. */
static bool axes_of(pctx *c, int64_t input_since, int64_t *axes, int64_t *n)
{
    *n = -1;
    if (c->st->since >= input_since) {
        if (!in_at(c, 1))
            return true;
        const int64_t *v = ints_of(c, 1, n);
        if (!v || *n > CG_MAX_RANK)
            return false;
        memcpy(axes, v, (size_t)*n * sizeof *v);
        return true;
    }
    size_t na;
    const int64_t *v = cg_node_attr_ints(c->st->node, "axes", &na);
    if (!v)
        return true;
    if (na > CG_MAX_RANK)
        return false;
    memcpy(axes, v, na * sizeof *v);
    *n = (int64_t)na;
    return true;
}

/* The Reduce* ops; arg: the opset from which axes is an input. */
static bool rule_reduce(pctx *c)
{
    pv *o = c->out[0];
    int64_t input_since = c->arg;
    const pv *x = need(c, 0);
    int64_t axes[CG_MAX_RANK], na;
    if (!x || !axes_of(c, input_since, axes, &na))
        return true;
    bool keep = cg_node_attr_int(c->st->node, "keepdims", 1) != 0;
    bool noop = cg_node_attr_int(c->st->node, "noop_with_empty_axes", 0) != 0;
    bool red[CG_MAX_RANK] = {false};
    if (na <= 0) {
        if (noop && na == 0)
            return same_as(o, x, x->dt), true;
        for (int d = 0; d < x->rank; d++)
            red[d] = true;
    }
    for (int64_t i = 0; i < na; i++) {
        int a;
        if (!norm_axis(axes[i], x->rank, &a))
            return true;
        red[a] = true;
    }
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (!red[d])
            dims[r++] = x->dims[d];
        else if (keep)
            dims[r++] = 1;
    if (!set_shape(o, x->dt, r, dims))
        return true;
    /* the product or sum of a shape (torch's flatten of a dynamic dim) */
    bool prod = !strcmp(c->st->node->op_type, "ReduceProd");
    if (!x->ints || o->numel != 1 || (!prod && strcmp(c->st->node->op_type, "ReduceSum") != 0))
        return true;
    int64_t acc = prod ? 1 : 0;
    for (int64_t j = 0; j < x->numel; j++)
        if (prod ? __builtin_mul_overflow(acc, x->ints[j], &acc)
                 : __builtin_add_overflow(acc, x->ints[j], &acc))
            return true;
    return set_ints(o, &acc);
}

static bool rule_argreduce(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int a;
    if (!x || !norm_axis(cg_node_attr_int(c->st->node, "axis", 0), x->rank, &a))
        return true;
    bool keep = cg_node_attr_int(c->st->node, "keepdims", 1) != 0;
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a)
            dims[r++] = x->dims[d];
        else if (keep)
            dims[r++] = 1;
    return set_shape(o, CG_DTYPE_INT64, r, dims), true;
}

static bool rule_reshape(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t n;
    const int64_t *s = ints_of(c, 1, &n);
    if (!x || !s || n > CG_MAX_RANK)
        return true;
    bool allowzero = cg_node_attr_int(c->st->node, "allowzero", 0) != 0;
    int64_t dims[CG_MAX_RANK], known = 1;
    int infer = -1;
    for (int64_t d = 0; d < n; d++) {
        dims[d] = s[d];
        if (s[d] == 0 && !allowzero) {
            if (d >= x->rank)
                return true;
            dims[d] = x->dims[d];
        } else if (s[d] == -1) {
            if (infer >= 0)
                return true;
            infer = (int)d;
            continue;
        } else if (s[d] < 0) {
            return true;
        }
        if (dims[d] && known > PV_MAX_DIM / dims[d])
            return true;
        known *= dims[d];
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known)
            return true;
        dims[infer] = x->numel / known;
    }
    if (!set_shape(o, x->dt, (int)n, dims) || o->numel != x->numel) {
        o->known = false;
        return true;
    }
    return x->ints ? set_ints(o, x->ints) : true;
}

static bool rule_flatten(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t a = cg_node_attr_int(c->st->node, "axis", 1);
    if (!x)
        return true;
    if (a < 0)
        a += x->rank;
    if (a < 0 || a > x->rank)
        return true;
    int64_t dims[2] = {1, 1};
    for (int d = 0; d < x->rank; d++) /* a zero dim elsewhere leaves one side unbounded */
        if (__builtin_mul_overflow(dims[d < a ? 0 : 1], x->dims[d], &dims[d < a ? 0 : 1]))
            return true;
    return set_shape(o, x->dt, 2, dims), true;
}

static bool rule_transpose(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    if (!x)
        return true;
    size_t np;
    const int64_t *perm = cg_node_attr_ints(c->st->node, "perm", &np);
    int64_t dims[CG_MAX_RANK];
    if (perm && np != (size_t)x->rank)
        return true;
    for (int d = 0; d < x->rank; d++) {
        int64_t s = perm ? perm[d] : x->rank - 1 - d;
        if (s < 0 || s >= x->rank)
            return true;
        dims[d] = x->dims[s];
    }
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_concat(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int a;
    if (!x || !norm_axis(cg_node_attr_int(c->st->node, "axis", 0), x->rank, &a))
        return true;
    int64_t dims[CG_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[a] = 0;
    bool ints = true;
    for (size_t i = 0; i < c->nin; i++) {
        const pv *y = need(c, i);
        if (!y || y->rank != x->rank || y->dt != x->dt)
            return true;
        dims[a] += y->dims[a];
        if (dims[a] > PV_MAX_DIM)
            return true;
        ints = ints && y->ints;
    }
    if (!set_shape(o, x->dt, x->rank, dims))
        return true;
    if (!ints || x->rank != 1 || o->numel > PV_MAX_INTS)
        return true;
    int64_t v[PV_MAX_INTS];
    int64_t m = 0;
    for (size_t i = 0; i < c->nin; i++)
        for (int64_t j = 0; j < c->in[i]->numel; j++)
            v[m++] = c->in[i]->ints[j];
    return set_ints(o, v);
}

static bool rule_split(pctx *c)
{
    const pv *x = need(c, 0);
    int a;
    if (!x || !norm_axis(cg_node_attr_int(c->st->node, "axis", 0), x->rank, &a) || !c->nout)
        return true;
    int64_t parts[64], n = -1;
    if (c->nout > 64)
        return true;
    if (c->st->since >= 13 && in_at(c, 1)) {
        const int64_t *v = ints_of(c, 1, &n);
        if (!v || n != (int64_t)c->nout)
            return true;
        memcpy(parts, v, c->nout * sizeof *v);
    } else if (c->st->since < 13 && cg_node_attr(c->st->node, "split")) {
        size_t ns;
        const int64_t *v = cg_node_attr_ints(c->st->node, "split", &ns);
        if (!v || ns != c->nout)
            return true;
        memcpy(parts, v, c->nout * sizeof *v);
    } else {
        int64_t len = x->dims[a], each = (len + (int64_t)c->nout - 1) / (int64_t)c->nout;
        if (c->st->since < 18 && len % (int64_t)c->nout)
            return true;
        for (size_t i = 0; i < c->nout; i++) {
            int64_t rest = len - (int64_t)i * each;
            parts[i] = rest < each ? (rest > 0 ? rest : 0) : each;
        }
    }
    for (size_t i = 0; i < c->nout; i++) {
        if (!c->out[i])
            continue;
        int64_t dims[CG_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[a] = parts[i];
        set_shape(c->out[i], x->dt, x->rank, dims);
    }
    return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static bool rule_slice(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    if (!x)
        return true;
    int64_t ns = 0, ne = 0, na = -1, nst = -1;
    const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
    size_t zs, ze, za;
    if (c->st->since >= 10) {
        starts = ints_of(c, 1, &ns);
        ends = ints_of(c, 2, &ne);
        if (in_at(c, 3) && !(axes = ints_of(c, 3, &na)))
            return true;
        if (in_at(c, 4) && !(steps = ints_of(c, 4, &nst)))
            return true;
    } else {
        starts = cg_node_attr_ints(c->st->node, "starts", &zs);
        ends = cg_node_attr_ints(c->st->node, "ends", &ze);
        axes = cg_node_attr_ints(c->st->node, "axes", &za);
        ns = (int64_t)zs;
        ne = (int64_t)ze;
        na = axes ? (int64_t)za : -1;
    }
    if (!starts || !ends || ns != ne || ns > x->rank || (axes && na != ns) ||
        (steps && nst != ns))
        return true;
    int64_t dims[CG_MAX_RANK], first[CG_MAX_RANK] = {0}, step[CG_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    for (int d = 0; d < CG_MAX_RANK; d++)
        step[d] = 1;
    for (int64_t i = 0; i < ns; i++) {
        int a = (int)i;
        if (axes && !norm_axis(axes[i], x->rank, &a))
            return true;
        int64_t len = x->dims[a], s = steps ? steps[i] : 1;
        int64_t b = starts[i], e = ends[i];
        if (s == 0 || s == INT64_MIN)
            return true;
        b = b < 0 ? (b < -len ? 0 : b + len) : b;
        e = e < 0 ? (e < -len ? -1 : e + len) : e;
        int64_t n;
        if (s > 0) {
            b = clamp64(b, 0, len);
            e = clamp64(e, 0, len);
            n = e > b ? 1 + (e - b - 1) / s : 0;
        } else {
            b = clamp64(b, -1, len - 1);
            e = clamp64(e, -1, len - 1);
            n = b > e ? 1 + (b - e - 1) / (-s) : 0;
        }
        dims[a] = n;
        first[a] = b;
        step[a] = s;
    }
    if (!set_shape(o, x->dt, x->rank, dims))
        return true;
    if (!x->ints || x->rank != 1)
        return true;
    int64_t v[PV_MAX_INTS];
    for (int64_t j = 0; j < o->numel; j++)
        v[j] = x->ints[first[0] + j * step[0]];
    return set_ints(o, v);
}

static bool rule_gather(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0), *idx = need(c, 1);
    int a;
    if (!x || !idx || !norm_axis(cg_node_attr_int(c->st->node, "axis", 0), x->rank, &a) ||
        x->rank + idx->rank - 1 > CG_MAX_RANK)
        return true;
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < a; d++)
        dims[r++] = x->dims[d];
    for (int d = 0; d < idx->rank; d++)
        dims[r++] = idx->dims[d];
    for (int d = a + 1; d < x->rank; d++)
        dims[r++] = x->dims[d];
    if (!set_shape(o, x->dt, r, dims))
        return true;
    if (!x->ints || !idx->ints || x->rank != 1)
        return true;
    int64_t v[PV_MAX_INTS];
    for (int64_t j = 0; j < o->numel; j++) {
        int64_t i = idx->ints[j];
        if (i < 0)
            i += x->numel;
        if (i < 0 || i >= x->numel)
            return true;
        v[j] = x->ints[i];
    }
    return set_ints(o, v);
}

static bool rule_unsqueeze(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t axes[CG_MAX_RANK], na;
    if (!x || !axes_of(c, 13, axes, &na) || na < 0 || x->rank + na > CG_MAX_RANK)
        return true;
    int r = x->rank + (int)na;
    bool ins[CG_MAX_RANK] = {false};
    for (int64_t i = 0; i < na; i++) {
        int a;
        if (!norm_axis(axes[i], r, &a) || ins[a])
            return true;
        ins[a] = true;
    }
    int64_t dims[CG_MAX_RANK];
    for (int d = 0, s = 0; d < r; d++)
        dims[d] = ins[d] ? 1 : x->dims[s++];
    if (!set_shape(o, x->dt, r, dims))
        return true;
    return x->ints ? set_ints(o, x->ints) : true;
}

static bool rule_squeeze(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t axes[CG_MAX_RANK], na;
    if (!x || !axes_of(c, 13, axes, &na))
        return true;
    bool drop[CG_MAX_RANK] = {false};
    for (int d = 0; na < 0 && d < x->rank; d++)
        drop[d] = x->dims[d] == 1;
    for (int64_t i = 0; i < na; i++) {
        int a;
        if (!norm_axis(axes[i], x->rank, &a) || x->dims[a] != 1)
            return true;
        drop[a] = true;
    }
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d])
            dims[r++] = x->dims[d];
    if (!set_shape(o, x->dt, r, dims))
        return true;
    return x->ints ? set_ints(o, x->ints) : true;
}

static bool rule_shape(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    if (!x)
        return true;
    int64_t b = cg_node_attr_int(c->st->node, "start", 0);
    int64_t e = cg_node_attr_int(c->st->node, "end", x->rank);
    b = clamp64(b < 0 ? b + x->rank : b, 0, x->rank);
    e = clamp64(e < 0 ? e + x->rank : e, 0, x->rank);
    int64_t n = e > b ? e - b : 0;
    if (!set_shape(o, CG_DTYPE_INT64, 1, &n))
        return true;
    return set_ints(o, x->dims + b);
}

static bool rule_expand(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t n;
    const int64_t *s = ints_of(c, 1, &n);
    int64_t dims[CG_MAX_RANK];
    int r;
    if (!x || !s || n > CG_MAX_RANK || !cg_broadcast_shapes(x->rank, x->dims, (int)n, s, &r, dims))
        return true;
    return set_shape(o, x->dt, r, dims), true;
}

static bool rule_tile(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t n;
    const int64_t *rep = ints_of(c, 1, &n);
    if (!x || !rep || n != x->rank)
        return true;
    int64_t dims[CG_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        if (rep[d] < 0 || __builtin_mul_overflow(x->dims[d], rep[d], &dims[d]))
            return true;
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_pad(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    if (!x || (c->st->since >= 18 && in_at(c, 3)))
        return true; /* axes: left to the recording run */
    int64_t n = 0;
    const int64_t *pads;
    size_t zn;
    if (c->st->since >= 11) {
        pads = ints_of(c, 1, &n);
    } else {
        pads = cg_node_attr_ints(c->st->node, "pads", &zn);
        n = (int64_t)zn;
    }
    if (!pads || n != 2 * x->rank)
        return true;
    int64_t dims[CG_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (pads[d] < -PV_MAX_DIM || pads[d] > PV_MAX_DIM || pads[d + x->rank] < -PV_MAX_DIM ||
            pads[d + x->rank] > PV_MAX_DIM)
            return true;
        dims[d] = x->dims[d] + pads[d] + pads[d + x->rank]; /* each term within 2^40 */
    }
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_resize(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    const cg_node *n = c->st->node;
    if (!x || c->st->since < 11 || cg_node_attr(n, "axes") ||
        !str_attr_is(c, "keep_aspect_ratio_policy", "stretch", "stretch"))
        return true;
    int64_t dims[CG_MAX_RANK], ns;
    double sc[CG_MAX_RANK];
    const int64_t *sizes = in_at(c, 3) ? ints_of(c, 3, &ns) : NULL;
    if (sizes && ns == x->rank) {
        memcpy(dims, sizes, (size_t)ns * sizeof *sizes);
    } else if (!in_at(c, 3) && floats_of_init(c, 2, sc, CG_MAX_RANK) == x->rank) {
        for (int d = 0; d < x->rank; d++) {
            /* the kernel's arithmetic: the float scale, floor(in * s) */
            double od = floor((double)x->dims[d] * (double)(float)sc[d]);
            if (!(od >= 0 && od <= (double)PV_MAX_DIM))
                return true;
            dims[d] = (int64_t)od;
        }
    } else {
        return true;
    }
    return set_shape(o, x->dt, x->rank, dims), true;
}

static bool rule_range(pctx *c)
{
    pv *o = c->out[0];
    int64_t n0, n1, n2;
    const int64_t *a = ints_of(c, 0, &n0), *b = ints_of(c, 1, &n1), *d = ints_of(c, 2, &n2);
    if (!a || !b || !d || n0 != 1 || n1 != 1 || n2 != 1 || d[0] == 0)
        return true;
    int64_t span;
    if (__builtin_sub_overflow(b[0], a[0], &span) || (span == INT64_MIN && d[0] == -1))
        return true;
    int64_t n = span / d[0] + (span % d[0] != 0 && (span < 0) == (d[0] < 0));
    if (n < 0)
        n = 0;
    if (!set_shape(o, c->in[0]->dt, 1, &n) || n > PV_MAX_INTS)
        return true;
    int64_t v[PV_MAX_INTS];
    for (int64_t j = 0; j < n; j++)
        if (__builtin_mul_overflow(j, d[0], &v[j]) || __builtin_add_overflow(v[j], a[0], &v[j]))
            return true;
    return set_ints(o, v);
}

static bool rule_constant_of_shape(pctx *c)
{
    pv *o = c->out[0];
    int64_t n;
    const int64_t *s = ints_of(c, 0, &n);
    if (!s || n > CG_MAX_RANK)
        return true;
    cg_dtype dt = CG_DTYPE_FLOAT;
    const cg_attr *v = cg_node_attr(c->st->node, "value");
    if (v && v->t) {
        if (!v->t->has_data_type || !cg_dtype_valid(v->t->data_type))
            return true;
        dt = (cg_dtype)v->t->data_type;
    }
    return set_shape(o, dt, (int)n, s), true;
}

static bool rule_cast(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 0);
    int64_t to = cg_node_attr_int(c->st->node, "to", 0);
    if (!x || !cg_dtype_valid(to) || !set_shape(o, (cg_dtype)to, x->rank, x->dims))
        return true;
    if (!x->ints || !is_int(o->dt))
        return true;
    int64_t v[PV_MAX_INTS];
    for (int64_t j = 0; j < x->numel; j++)
        v[j] = o->dt == CG_DTYPE_BOOL ? x->ints[j] != 0 : x->ints[j];
    return o->dt == CG_DTYPE_INT64 || o->dt == CG_DTYPE_INT32 || o->dt == CG_DTYPE_BOOL
               ? set_ints(o, v) : true;
}

static bool rule_where(pctx *c)
{
    pv *o = c->out[0];
    const pv *x = need(c, 1);
    int rank;
    int64_t dims[CG_MAX_RANK];
    if (!x || !broadcast_in(c, 0, 3, &rank, dims) || !set_shape(o, x->dt, rank, dims))
        return true;
    int64_t n0, n1, n2;
    const int64_t *k = ints_of(c, 0, &n0), *a = ints_of(c, 1, &n1), *b = ints_of(c, 2, &n2);
    if (!k || !a || !b || o->numel > PV_MAX_INTS)
        return true;
    int64_t v[PV_MAX_INTS];
    for (int64_t j = 0; j < o->numel; j++) {
        if ((n0 != 1 && n0 != o->numel) || (n1 != 1 && n1 != o->numel) ||
            (n2 != 1 && n2 != o->numel))
            return true;
        v[j] = k[n0 == 1 ? 0 : j] ? a[n1 == 1 ? 0 : j] : b[n2 == 1 ? 0 : j];
    }
    return set_ints(o, v);
}

/* LSTM, GRU, RNN: Y, Y_h (and LSTM's Y_c). */
static bool rule_recurrent(pctx *c)
{
    const pv *x = need(c, 0);
    const cg_node *n = c->st->node;
    int64_t hidden = cg_node_attr_int(n, "hidden_size", 0);
    int64_t nd = str_attr_is(c, "direction", "bidirectional", "forward") ? 2 : 1;
    bool batch_first = cg_node_attr_int(n, "layout", 0) != 0;
    if (!x || x->rank != 3 || hidden <= 0)
        return true;
    int64_t seq = x->dims[batch_first ? 1 : 0], batch = x->dims[batch_first ? 0 : 1];
    int64_t y[4] = {seq, nd, batch, hidden}, yb[4] = {batch, seq, nd, hidden};
    int64_t h[3] = {nd, batch, hidden}, hb[3] = {batch, nd, hidden};
    if (c->nout > 0 && c->out[0])
        set_shape(c->out[0], x->dt, 4, batch_first ? yb : y);
    for (size_t i = 1; i < c->nout && i < 3; i++)
        if (c->out[i])
            set_shape(c->out[i], x->dt, 3, batch_first ? hb : h);
    return true;
}

static bool rule_layernorm(pctx *c)
{
    const pv *x = need(c, 0);
    int a;
    if (!x || !norm_axis(cg_node_attr_int(c->st->node, "axis", -1), x->rank, &a))
        return true;
    set_shape(c->out[0], x->dt, x->rank, x->dims);
    int64_t dims[CG_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        dims[d] = d < a ? x->dims[d] : 1;
    int64_t stash = cg_node_attr_int(c->st->node, "stash_type", 1);
    for (size_t i = 1; i < c->nout && i < 3; i++)
        if (c->out[i] && cg_dtype_valid(stash))
            set_shape(c->out[i], (cg_dtype)stash, x->rank, dims);
    return true;
}

static bool rule_topk(pctx *c)
{
    const pv *x = need(c, 0);
    int64_t n;
    const int64_t *k = ints_of(c, 1, &n);
    int a;
    if (!x || !k || n != 1 || !norm_axis(cg_node_attr_int(c->st->node, "axis", -1), x->rank, &a) ||
        k[0] < 0 || k[0] > x->dims[a])
        return true;
    int64_t dims[CG_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[a] = k[0];
    if (c->nout > 0 && c->out[0])
        set_shape(c->out[0], x->dt, x->rank, dims);
    if (c->nout > 1 && c->out[1])
        set_shape(c->out[1], CG_DTYPE_INT64, x->rank, dims);
    return true;
}

/* arg: 1 DepthToSpace, 0 SpaceToDepth. */
static bool rule_depth_space(pctx *c)
{
    pv *o = c->out[0];
    bool to_space = c->arg != 0;
    const pv *x = need(c, 0);
    int64_t b = cg_node_attr_int(c->st->node, "blocksize", 0);
    if (!x || x->rank != 4 || b < 1 || b > 1024)
        return true;
    int64_t dims[4] = {x->dims[0], 0, 0, 0};
    if (to_space) {
        if (x->dims[1] % (b * b))
            return true;
        dims[1] = x->dims[1] / (b * b);
        dims[2] = x->dims[2] * b;
        dims[3] = x->dims[3] * b;
    } else {
        if (x->dims[2] % b || x->dims[3] % b)
            return true;
        dims[1] = x->dims[1] * b * b;
        dims[2] = x->dims[2] / b;
        dims[3] = x->dims[3] / b;
    }
    return set_shape(o, x->dt, 4, dims), true;
}

/* Output 0 with input 0's shape and dtype; arg 1: its contents too. */
static bool rule_same(pctx *c)
{
    const pv *x = need(c, 0);
    if (!x || !same_as(c->out[0], x, x->dt))
        return true;
    return c->arg && x->ints ? set_ints(c->out[0], x->ints) : true;
}

/* Output 0 bool with input 0's shape (Not, IsNaN, IsInf). */
static bool rule_bool_same(pctx *c)
{
    const pv *x = need(c, 0);
    if (x)
        same_as(c->out[0], x, CG_DTYPE_BOOL);
    return true;
}

static bool rule_dropout(pctx *c)
{
    const pv *x = need(c, 0);
    if (!x)
        return true;
    same_as(c->out[0], x, x->dt);
    if (c->nout > 1 && c->out[1])
        same_as(c->out[1], x, CG_DTYPE_BOOL);
    return true;
}

/* Output 0 with the shape of input arg / 16 and the dtype of input arg % 16
 * (GatherElements: the indices' shape; CastLike, DequantizeLinear: the
 * second input's dtype). */
static bool rule_shape_dtype(pctx *c)
{
    const pv *shape = need(c, (size_t)c->arg / 16), *type = need(c, (size_t)c->arg % 16);
    if (shape && type)
        same_as(c->out[0], shape, type->dt);
    return true;
}

static bool rule_size(pctx *c)
{
    const pv *x = need(c, 0);
    if (!x || !set_shape(c->out[0], CG_DTYPE_INT64, 0, NULL))
        return true;
    return set_ints(c->out[0], &x->numel);
}

static bool rule_dynamic_quantize(pctx *c)
{
    const pv *x = need(c, 0);
    if (!x)
        return true;
    same_as(c->out[0], x, CG_DTYPE_UINT8);
    if (c->nout > 1 && c->out[1])
        set_shape(c->out[1], CG_DTYPE_FLOAT, 0, NULL);
    if (c->nout > 2 && c->out[2])
        set_shape(c->out[2], CG_DTYPE_UINT8, 0, NULL);
    return true;
}

static bool rule_quantize(pctx *c)
{
    const pv *x = need(c, 0), *zp = need(c, 2);
    if (x && !cg_node_attr(c->st->node, "output_dtype") && (zp || !in_at(c, 2)))
        same_as(c->out[0], x, zp ? zp->dt : CG_DTYPE_UINT8);
    return true;
}

/* A rule fills the step's outputs it can follow (c->out[0] is never NULL)
 * and returns false only when out of memory; c->arg is its row's arg. */
typedef bool (*rule_fn)(pctx *c);

/* The ops followed, ai.onnx domain. An op without a row leaves its outputs
 * unknown. */
static const struct {
    const char *op;
    rule_fn fn;
    int arg;
} rules[] = {
    {"Abs", rule_same, 0}, {"Acos", rule_same, 0}, {"Acosh", rule_same, 0},
    {"Asin", rule_same, 0}, {"Asinh", rule_same, 0}, {"Atan", rule_same, 0},
    {"Atanh", rule_same, 0}, {"BatchNormalization", rule_same, 0}, {"Ceil", rule_same, 0},
    {"Celu", rule_same, 0}, {"Clip", rule_same, 0}, {"Cos", rule_same, 0},
    {"Cosh", rule_same, 0}, {"CumSum", rule_same, 0}, {"Elu", rule_same, 0},
    {"Erf", rule_same, 0}, {"Exp", rule_same, 0}, {"Floor", rule_same, 0},
    {"Gelu", rule_same, 0}, {"GroupNormalization", rule_same, 0},
    {"HardSigmoid", rule_same, 0}, {"HardSwish", rule_same, 0}, {"Hardmax", rule_same, 0},
    {"Identity", rule_same, 1}, {"InstanceNormalization", rule_same, 0}, {"LRN", rule_same, 0},
    {"LeakyRelu", rule_same, 0}, {"Log", rule_same, 0}, {"LogSoftmax", rule_same, 0},
    {"LpNormalization", rule_same, 0}, {"MeanVarianceNormalization", rule_same, 0},
    {"Mish", rule_same, 0}, {"Neg", rule_same, 0}, {"Reciprocal", rule_same, 0},
    {"Relu", rule_same, 0}, {"ReverseSequence", rule_same, 0}, {"Round", rule_same, 0},
    {"ScatterElements", rule_same, 0}, {"ScatterND", rule_same, 0}, {"Selu", rule_same, 0},
    {"Shrink", rule_same, 0}, {"Sigmoid", rule_same, 0}, {"Sign", rule_same, 0},
    {"Sin", rule_same, 0}, {"Sinh", rule_same, 0}, {"Softmax", rule_same, 0},
    {"Softplus", rule_same, 0}, {"Softsign", rule_same, 0}, {"Sqrt", rule_same, 0},
    {"Tan", rule_same, 0}, {"Tanh", rule_same, 0}, {"ThresholdedRelu", rule_same, 0},
    {"Trilu", rule_same, 0},
    {"Dropout", rule_dropout, 0},
    {"Not", rule_bool_same, 0}, {"IsNaN", rule_bool_same, 0}, {"IsInf", rule_bool_same, 0},
    {"Add", rule_arith, '+'}, {"Sub", rule_arith, '-'}, {"Mul", rule_arith, '*'},
    {"Div", rule_arith, '/'}, {"Max", rule_arith, 'M'}, {"Min", rule_arith, 'm'},
    {"Pow", rule_arith, 0}, {"Mod", rule_arith, 0}, {"Sum", rule_arith, 0},
    {"Mean", rule_arith, 0}, {"PRelu", rule_arith, 0}, {"BitShift", rule_arith, 0},
    {"BitwiseAnd", rule_arith, 0}, {"BitwiseOr", rule_arith, 0},
    {"BitwiseXor", rule_arith, 0},
    {"Equal", rule_compare, '='}, {"Less", rule_compare, '<'},
    {"Greater", rule_compare, '>'}, {"LessOrEqual", rule_compare, 0},
    {"GreaterOrEqual", rule_compare, 0}, {"And", rule_compare, 0}, {"Or", rule_compare, 0},
    {"Xor", rule_compare, 0},
    {"Conv", rule_conv, 0}, {"ConvInteger", rule_conv, CG_DTYPE_INT32},
    {"ConvTranspose", rule_conv_transpose, 0},
    {"MaxPool", rule_pool, 0}, {"AveragePool", rule_pool, 0}, {"LpPool", rule_pool, 0},
    {"GlobalAveragePool", rule_global_pool, 0}, {"GlobalMaxPool", rule_global_pool, 0},
    {"GlobalLpPool", rule_global_pool, 0},
    {"Gemm", rule_gemm, 0}, {"MatMul", rule_matmul, 0},
    {"MatMulInteger", rule_matmul, CG_DTYPE_INT32},
    {"ReduceSum", rule_reduce, 13}, {"ReduceMean", rule_reduce, 18},
    {"ReduceMax", rule_reduce, 18}, {"ReduceMin", rule_reduce, 18},
    {"ReduceProd", rule_reduce, 18}, {"ReduceL1", rule_reduce, 18},
    {"ReduceL2", rule_reduce, 18}, {"ReduceLogSum", rule_reduce, 18},
    {"ReduceLogSumExp", rule_reduce, 18}, {"ReduceSumSquare", rule_reduce, 18},
    {"ArgMax", rule_argreduce, 0}, {"ArgMin", rule_argreduce, 0},
    {"Reshape", rule_reshape, 0}, {"Flatten", rule_flatten, 0},
    {"Transpose", rule_transpose, 0}, {"Concat", rule_concat, 0}, {"Split", rule_split, 0},
    {"Slice", rule_slice, 0}, {"Gather", rule_gather, 0},
    {"GatherElements", rule_shape_dtype, 0x10}, {"Unsqueeze", rule_unsqueeze, 0},
    {"Squeeze", rule_squeeze, 0}, {"Shape", rule_shape, 0}, {"Size", rule_size, 0},
    {"Expand", rule_expand, 0}, {"Tile", rule_tile, 0}, {"Pad", rule_pad, 0},
    {"Resize", rule_resize, 0}, {"Range", rule_range, 0},
    {"ConstantOfShape", rule_constant_of_shape, 0}, {"Cast", rule_cast, 0},
    {"CastLike", rule_shape_dtype, 0x01}, {"Where", rule_where, 0},
    {"LSTM", rule_recurrent, 0}, {"GRU", rule_recurrent, 0}, {"RNN", rule_recurrent, 0},
    {"LayerNormalization", rule_layernorm, 0}, {"TopK", rule_topk, 0},
    {"DepthToSpace", rule_depth_space, 1}, {"SpaceToDepth", rule_depth_space, 0},
    {"DynamicQuantizeLinear", rule_dynamic_quantize, 0},
    {"DequantizeLinear", rule_shape_dtype, 0x01}, {"QuantizeLinear", rule_quantize, 0},
};

/* Fills the step's outputs; false only when out of memory. */
static bool predict_step(pctx *c, pv **out, size_t nout)
{
    const cg_node *n = c->st->node;
    if (!nout || !out[0] || !n->op_type ||
        (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0))
        return true;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(n->op_type, rules[i].op) == 0) {
            c->out = out;
            c->nout = nout;
            c->arg = rules[i].arg;
            return rules[i].fn(c);
        }
    return true;
}

/* --- the plan ------------------------------------------------------------------ */

static void init_value(const cg_value *v, pv *o);

/* Per graph input, the value `given` names it with (NULL: none), found
 * through the plan's name map as cg_runtime_run binds them (200k inputs
 * must not cost 200k^2); NULL when out of memory. */
static const cg_value **fed_inputs(const cg_plan *p, const cg_named_value *given, size_t ngiven)
{
    const cg_value **fed = calloc(p->graph->input_count + 1, sizeof *fed);
    size_t *input_of_slot = cg_plan_input_index(p);
    if (!fed || !input_of_slot) {
        free(fed);
        free(input_of_slot);
        return NULL;
    }
    for (size_t j = 0; j < ngiven; j++) {
        size_t slot = given[j].name ? cg_strmap_get(&p->names, given[j].name) : CG_STRMAP_NONE;
        if (slot != CG_STRMAP_NONE && slot < p->slot_count && input_of_slot[slot])
            fed[input_of_slot[slot] - 1] = given[j].value;
    }
    free(input_of_slot);
    return fed;
}

/* Graph input i's shape: the fed value's (a tensor) when there is one, else
 * the declared one; false when that has a symbolic or missing dim or the
 * input is not a tensor. */
static bool input_shape(const cg_plan *p, size_t i, const cg_value *fed, pv *o)
{
    int32_t slot = p->input_slots[i];
    if (fed) {
        if (fed->kind != CG_VALUE_TENSOR)
            return false;
        init_value(fed, o);
        return o->known;
    }
    if (p->slot_kind[slot] == CG_SLOT_INIT) { /* an input with a default */
        init_value(p->init_values[slot], o);
        return o->known;
    }
    const cg_type *t = p->graph->inputs[i].type;
    if (!t || t->kind != CG_TYPE_TENSOR || !t->shape || !t->has_elem_type ||
        !cg_dtype_valid(t->elem_type) || t->shape->rank > CG_MAX_RANK)
        return false;
    int64_t dims[CG_MAX_RANK];
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (!dim->has_value || dim->value < 0)
            return false;
        dims[d] = dim->value;
    }
    return set_shape(o, (cg_dtype)t->elem_type, (int)t->shape->rank, dims);
}

static void init_value(const cg_value *v, pv *o)
{
    if (!v || v->kind != CG_VALUE_TENSOR ||
        !set_shape(o, v->tensor.dtype, v->tensor.rank, v->tensor.dims))
        return;
    if (!is_int(o->dt) || o->numel > PV_MAX_INTS || (o->numel && !v->tensor.data))
        return;
    int64_t vals[PV_MAX_INTS];
    for (int64_t j = 0; j < o->numel; j++)
        vals[j] = cg_tensor_get_i64(&v->tensor, j);
    (void)set_ints(o, vals); /* out of memory: no contents, no harm */
}

static void free_pvs(pv *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].ints);
    free(v);
}

/* Every main-graph slot's pv for these inputs; NULL when out of memory or
 * an input's shape is not known. */
static pv *follow(const cg_runtime *rt, const cg_value **fed, size_t *scratch)
{
    const cg_plan *p = rt->main;
    const cg_graph *g = p->graph;
    pv *vals = calloc(p->slot_count + 1, sizeof *vals);
    if (!vals)
        return NULL;
    for (size_t s = 0; s < p->slot_count; s++)
        if (p->slot_kind[s] == CG_SLOT_INIT)
            init_value(p->init_values[s], &vals[s]);
    for (size_t i = 0; i < g->input_count; i++)
        if (!input_shape(p, i, fed[i], &vals[p->input_slots[i]])) {
            free_pvs(vals, p->slot_count + 1);
            return NULL;
        }
    pctx c = {.p = p};
    for (size_t si = 0; si < p->step_count; si++) {
        const cg_step *st = &p->steps[si];
        const cg_node *n = st->node;
        if (st->folded)
            continue;
        if (n->input_count > PV_MAX_INPUTS || n->output_count > PV_MAX_OUTPUTS)
            continue; /* its outputs stay unknown */
        c.st = st;
        c.nin = n->input_count;
        for (size_t i = 0; i < n->input_count; i++)
            c.in[i] = st->in[i].slot >= 0 && st->in[i].up == 0 ? &vals[st->in[i].slot] : NULL;
        pv *out[PV_MAX_OUTPUTS];
        for (size_t i = 0; i < n->output_count; i++)
            out[i] = st->out[i] >= 0 ? &vals[st->out[i]] : NULL;
        cg_error_clear(&c.err);
        c.k = (cg_kernel_ctx){n, g, st->since, st->opset, NULL, n->input_count, NULL,
                              n->output_count, NULL, &c.err, CG_KPREC_FP32};
        if (!predict_step(&c, out, n->output_count)) {
            free_pvs(vals, p->slot_count + 1);
            return NULL;
        }
    }
    *scratch = c.scratch;
    return vals;
}

bool cg_predict_shapes(const cg_runtime *rt, const cg_named_value *inputs, size_t count,
                       cg_tensor *shapes)
{
    const cg_plan *p = rt->main;
    const cg_value **fed = fed_inputs(p, inputs, count);
    size_t scratch;
    pv *vals = fed ? follow(rt, fed, &scratch) : NULL;
    free(fed);
    for (size_t s = 0; s < p->slot_count; s++) {
        memset(&shapes[s], 0, sizeof shapes[s]); /* dtype UNDEFINED: not known */
        if (vals && vals[s].known) {
            shapes[s].dtype = vals[s].dt;
            shapes[s].rank = vals[s].rank;
            memcpy(shapes[s].dims, vals[s].dims, sizeof vals[s].dims);
            shapes[s].numel = vals[s].numel;
        }
    }
    free_pvs(vals, p->slot_count + 1);
    return vals != NULL;
}

/* The bytes of each value the memory plan places (bytes[slot]; 0 for the
 * others); false when one of them is not known. */
static bool plan_bytes(const cg_runtime *rt, const cg_value **fed, size_t *bytes,
                       size_t *scratch)
{
    const cg_plan *p = rt->main;
    pv *vals = follow(rt, fed, scratch);
    bool *skip = calloc(p->slot_count + 1, sizeof *skip);
    bool ok = vals && skip;
    /* values a fused step never produces: a convolution's output whose
     * activation (or residual Add) it applies, and the absorbed steps'
     * outputs before the last (fuse.c). The kernels take an epilogue on
     * float32 outputs; where one declines it all the same, the run misses
     * the plan and the next records one. */
    for (size_t si = 0; si < p->step_count && ok; si++) {
        const cg_step *st = &p->steps[si];
        int32_t o0 = st->node->output_count ? st->out[0] : -1;
        if (o0 < 0 || !vals[o0].known || vals[o0].dt != CG_DTYPE_FLOAT)
            continue;
        if ((st->fused_slot >= 0 && o0 != st->fused_slot) ||
            (st->absorbed_final >= 0 && o0 != st->absorbed_final))
            skip[o0] = true;
    }
    for (size_t s = 0; s < p->slot_count && ok; s++) {
        bytes[s] = 0;
        if (p->slot_kind[s] != CG_SLOT_NODE || p->slot_is_output[s] || p->slot_producer[s] < 0 ||
            p->steps[p->slot_producer[s]].folded || skip[s])
            continue;
        if (!vals[s].known || vals[s].dt == CG_DTYPE_STRING)
            ok = false;
        else
            bytes[s] = (size_t)vals[s].numel * cg_dtype_size(vals[s].dt); /* <= 2^40 * 16 */
    }
    free(skip);
    free_pvs(vals, p->slot_count + 1);
    return ok;
}

/* The signature cg_runtime_run builds (cg_mem_key) for these input shapes. */
static bool signature_of(const cg_plan *p, const cg_value **fed, int64_t **out, size_t *len)
{
    size_t n = 0, cap = p->graph->input_count * (CG_MAX_RANK + 2) + 1;
    int64_t *sig = malloc(cap * sizeof *sig);
    if (!sig)
        return false;
    for (size_t i = 0; i < p->graph->input_count; i++) {
        pv v = {0};
        bool known = input_shape(p, i, fed[i], &v);
        free(v.ints);
        if (!known) {
            free(sig);
            return false;
        }
        n += cg_mem_key(sig + n, v.dt, v.rank, v.dims);
    }
    *out = sig;
    *len = n;
    return true;
}

void cg_mem_plan_predict(cg_runtime *rt, const cg_named_value *inputs, size_t count)
{
    if (rt->opt.float64 || rt->opt.node_precision || rt->units)
        return;
    int64_t *sig = NULL;
    size_t sig_len = 0;
    const cg_value **fed = fed_inputs(rt->main, inputs, count);
    cg_mem_plan *m = &rt->mem;
    if (!fed || !signature_of(rt->main, fed, &sig, &sig_len) ||
        cg_mem_plan_for(m, sig, sig_len)) {
        free(fed); /* shapes not known, or planned for already */
        free(sig);
        return;
    }
    size_t scratch = 0;
    if (plan_bytes(rt, fed, rt->record_bytes, &scratch)) {
        if (!rt->heap.base)
            cg_heaps_prefault(rt, false); /* the reservation the arena takes */
        if (cg_mem_plan_build(rt, sig, sig_len, NULL) == CG_OK) {
            /* the pages the first run would have touched, touched now */
            cg_prefault_anon(m->arena, m->arena_bytes);
            m->predicted = true;
            /* and the kernels' biggest scratch, which is fresh memory too
             * (PP-OCRv4 det's padded copies: 17 MB, its first run 1.0-2.6x
             * a warm one as the host backed them or not) */
            cg_scratch_prefault(rt, scratch);
        }
    }
    memset(rt->record_bytes, 0, (rt->main->slot_count + 1) * sizeof *rt->record_bytes);
    free(fed);
    free(sig);
}

bool cg_runtime_memory_planned(const cg_runtime *rt)
{
    return rt && rt->mem.valid;
}

cg_status cg_runtime_prepare(cg_runtime *rt, const cg_named_value *inputs, size_t count,
                             cg_error *err)
{
    if (!rt || (count && !inputs))
        return cg_error_set(err, CG_USAGE, "cg_runtime_prepare: no runtime or no inputs");
    cg_mem_plan_predict(rt, inputs, count);
    return CG_OK;
}
