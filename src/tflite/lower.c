/*
 * cg_tflite_lower: a loaded .tflite as a cg_model the reference runtime
 * runs (docs/tflite.md, "Running").
 *
 * The model built here is ordinary IR: ai.onnx opset 21 nodes where ONNX
 * has an operator with TFLite's exact semantics (NHWC operators between
 * Transposes, fused activations as a node of their own, IF/WHILE as
 * If/Loop), and nodes of CG_TFLITE_DOMAIN for what ONNX cannot express
 * exactly (TFLite's integer requantization, src/run/ops/tflite_quant.c).
 * Value names are the TFLite tensor names (made unique), so inputs, outputs
 * and dumps read as in the .tflite. Constants are zero-copy: initializers
 * point into the .tflite's mapping, which the model keeps alive through
 * model->tflite->source. Each node records the TFLite operator it came from
 * (cg_tflite_node_origin), for bisection and reports.
 *
 * This file holds the machinery (names, constants, nodes, graphs, control
 * flow); lower_ops.c holds the table of operators.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "tflite/lower.h"

/* --- status ---------------------------------------------------------------------- */

bool lw_ok(const lw_scope *s) { return s->lw->st == CG_OK; }

cg_status lw_status(const lw_scope *s) { return s->lw->st; }

static cg_status lw_set(lw *l, cg_status st, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static cg_status lw_set(lw *l, cg_status st, const char *fmt, ...)
{
    if (l->st != CG_OK)
        return l->st;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    l->st = st;
    cg_error_set(l->err, st, "%s: %s", l->label, msg);
    return st;
}

cg_status lw_fail(lw_scope *s, cg_status st, const char *fmt, ...)
{
    if (s->lw->st != CG_OK)
        return s->lw->st;
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->op)
        return lw_set(s->lw, st, "subgraph %d '%s' > operator #%d (%s): %s", (int)s->sg_index,
                      s->sg->name ? s->sg->name : "", (int)s->op_index, s->op_name, msg);
    return lw_set(s->lw, st, "subgraph %d '%s': %s", (int)s->sg_index,
                  s->sg->name ? s->sg->name : "", msg);
}

#define LW_NOMEM(s) lw_fail((s), CG_NOMEM, "out of memory")

/* --- names ------------------------------------------------------------------------- */

/* base, or base#2, base#3...: a name no value of the model has yet. Each
 * name in the map holds the next suffix to try for it as a base, so n
 * tensors sharing one name (a file may point every entry of its tensor
 * vector at the same table) cost O(n) probes in all, not O(n^2). */
static const char *unique_name(lw_scope *s, const char *base)
{
    if (!lw_ok(s))
        return NULL;
    lw *l = s->lw;
    size_t len = strlen(base);
    char *buf = malloc(len + 24);
    if (!buf) {
        LW_NOMEM(s);
        return NULL;
    }
    memcpy(buf, base, len + 1);
    size_t next = cg_strmap_get(&l->names, base);
    bool taken = next != CG_STRMAP_NONE;
    if (taken) {
        size_t k = next < 2 ? 2 : next;
        do
            snprintf(buf + len, 24, "#%zu", k++);
        while (cg_strmap_has(&l->names, buf));
        next = k;
    }
    char *name = cg_arena_strndup(l->arena, buf, strlen(buf));
    free(buf);
    if (!name || cg_strmap_add(&l->names, name, 2) == CG_STRMAP_NONE ||
        (taken && !cg_strmap_set(&l->names, base, next))) {
        LW_NOMEM(s);
        return NULL;
    }
    return name;
}

static const char *tensor_base_name(const lw_scope *s, int32_t idx, char *buf, size_t n)
{
    const cg_tflite_tensor *t = &s->sg->tensors[idx];
    if (t->name && t->name[0])
        return t->name;
    if (s->sg_index == 0)
        snprintf(buf, n, "tensor_%d", (int)idx);
    else
        snprintf(buf, n, "sg%d_tensor_%d", (int)s->sg_index, (int)idx);
    return buf;
}

/* --- tensors ---------------------------------------------------------------------- */

const cg_tflite_tensor *lw_in_t(const lw_scope *s, size_t i)
{
    if (!s->op || i >= s->op->input_count)
        return NULL;
    return cg_tflite_tensor_at(s->sg, s->op->inputs[i]);
}

const cg_tflite_tensor *lw_out_t(const lw_scope *s, size_t i)
{
    if (!s->op || i >= s->op->output_count)
        return NULL;
    return cg_tflite_tensor_at(s->sg, s->op->outputs[i]);
}

cg_dtype lw_dtype(const cg_tflite_tensor *t) { return cg_tflite_type_dtype(t->type); }

bool lw_quantized(const cg_tflite_tensor *t)
{
    if (!t || !t->quant || t->quant->scale_count == 0 || t->quant->details_type != 0)
        return false;
    return t->type == CG_TFLITE_TYPE_INT8 || t->type == CG_TFLITE_TYPE_UINT8 ||
           t->type == CG_TFLITE_TYPE_INT16;
}

const char *lw_tensor_label(const lw_scope *s, const cg_tflite_tensor *t, char *buf, size_t n)
{
    snprintf(buf, n, "tensor %td '%s'", t - s->sg->tensors, t->name ? t->name : "");
    return buf;
}

bool lw_static_shape(lw_scope *s, const cg_tflite_tensor *t, const char *what, int rank)
{
    char tl[300];
    if (!lw_ok(s))
        return false;
    if (!t) {
        lw_fail(s, CG_INVALID, "its %s is missing", what);
        return false;
    }
    if ((int)t->rank != rank) {
        lw_fail(s, CG_UNSUPPORTED, "its %s (%s) has rank %zu, the lowering needs rank %d "
                "recorded in the file", what, lw_tensor_label(s, t, tl, sizeof tl), t->rank,
                rank);
        return false;
    }
    for (size_t d = 0; d < t->rank; d++)
        if (t->shape[d] < 0) {
            lw_fail(s, CG_INVALID, "its %s (%s) has dim %zu = %d", what,
                    lw_tensor_label(s, t, tl, sizeof tl), d, (int)t->shape[d]);
            return false;
        }
    return true;
}

bool lw_const_bytes(lw_scope *s, const cg_tflite_tensor *t, const char *what, cg_bytes *out)
{
    char tl[300];
    if (!lw_ok(s))
        return false;
    if (t->external_buffer) {
        lw_fail(s, CG_UNSUPPORTED, "its %s (%s) lies in an external file, which convgate does "
                "not open", what, lw_tensor_label(s, t, tl, sizeof tl));
        return false;
    }
    if (t->sparsity) {
        lw_fail(s, CG_UNSUPPORTED, "its %s (%s) is a sparse tensor (not lowered)", what,
                lw_tensor_label(s, t, tl, sizeof tl));
        return false;
    }
    cg_bytes b = cg_tflite_tensor_data(s->lw->tm, t);
    cg_dtype dt = lw_dtype(t);
    size_t es = cg_dtype_size(dt);
    uint64_t numel;
    if (!b.data) {
        lw_fail(s, CG_INVALID, "its %s (%s) has no data", what,
                lw_tensor_label(s, t, tl, sizeof tl));
        return false;
    }
    if (es == 0) {
        lw_fail(s, CG_UNSUPPORTED, "its %s (%s) is a constant of type %s (not lowered)", what,
                lw_tensor_label(s, t, tl, sizeof tl),
                cg_tflite_type_name(t->type) ? cg_tflite_type_name(t->type) : "unknown");
        return false;
    }
    if (!cg_tflite_shape_elements(t->shape, t->rank, &numel) || numel > SIZE_MAX / es ||
        numel * es != b.len) {
        lw_fail(s, CG_INVALID, "its %s (%s) holds %zu bytes, its shape and type need %s", what,
                lw_tensor_label(s, t, tl, sizeof tl), b.len,
                cg_tflite_shape_elements(t->shape, t->rank, &numel) && numel <= SIZE_MAX / es
                    ? "another size" : "more than fits");
        return false;
    }
    *out = b;
    return true;
}

bool lw_const_ints(lw_scope *s, const cg_tflite_tensor *t, const char *what, int64_t **vals,
                   size_t *count)
{
    char tl[300];
    cg_bytes b;
    *vals = NULL;
    *count = 0;
    if (!lw_ok(s))
        return false;
    if (!t) {
        lw_fail(s, CG_INVALID, "its %s is missing", what);
        return false;
    }
    if (!cg_tflite_tensor_data(s->lw->tm, t).data) {
        lw_fail(s, CG_UNSUPPORTED, "its %s (%s) is not a constant: the lowering needs it "
                "constant", what, lw_tensor_label(s, t, tl, sizeof tl));
        return false;
    }
    if (t->type != CG_TFLITE_TYPE_INT32 && t->type != CG_TFLITE_TYPE_INT64) {
        lw_fail(s, CG_INVALID, "its %s (%s) is %s, not int32 or int64", what,
                lw_tensor_label(s, t, tl, sizeof tl),
                cg_tflite_type_name(t->type) ? cg_tflite_type_name(t->type) : "unknown");
        return false;
    }
    if (!lw_const_bytes(s, t, what, &b))
        return false;
    size_t es = t->type == CG_TFLITE_TYPE_INT32 ? 4 : 8, n = b.len / es;
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        LW_NOMEM(s);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (es == 4) {
            int32_t x;
            memcpy(&x, b.data + i * 4, 4);
            v[i] = x;
        } else {
            memcpy(&v[i], b.data + i * 8, 8);
        }
    }
    *vals = v;
    *count = n;
    return true;
}

/* --- types ----------------------------------------------------------------------- */

/* The ValueInfo of a TFLite tensor: element type, and its shape with the
 * dims shape_signature marks -1 as symbolic ("<name>.d<i>"), or no shape
 * when the file records no rank. */
static bool tensor_value_info(lw_scope *s, const cg_tflite_tensor *t, const char *name,
                              cg_value_info *vi)
{
    cg_arena *a = s->lw->arena;
    char tl[300];
    cg_dtype dt = lw_dtype(t);
    if (dt == CG_DTYPE_UNDEFINED || dt == CG_DTYPE_STRING) {
        lw_fail(s, CG_UNSUPPORTED, "%s is of type %s, which the reference runtime does not "
                "run", lw_tensor_label(s, t, tl, sizeof tl),
                cg_tflite_type_name(t->type) ? cg_tflite_type_name(t->type) : "unknown");
        return false;
    }
    memset(vi, 0, sizeof *vi);
    vi->name = name;
    cg_type *ty = cg_arena_calloc(a, 1, sizeof *ty);
    if (!ty) {
        LW_NOMEM(s);
        return false;
    }
    ty->kind = CG_TYPE_TENSOR;
    ty->elem_type = (int32_t)dt;
    ty->has_elem_type = true;
    vi->type = ty;
    if (t->rank == 0 && !t->has_rank && !t->has_shape_signature)
        return true; /* unknown rank */
    cg_shape *sh = cg_arena_calloc(a, 1, sizeof *sh);
    cg_dim *dims = cg_arena_calloc(a, t->rank ? t->rank : 1, sizeof *dims);
    if (!sh || !dims) {
        LW_NOMEM(s);
        return false;
    }
    bool sig = t->has_shape_signature && t->signature_rank == t->rank;
    for (size_t d = 0; d < t->rank; d++) {
        if (sig && t->shape_signature[d] < 0) {
            char p[320];
            snprintf(p, sizeof p, "%s.d%zu", name, d);
            dims[d].param = cg_arena_strndup(a, p, strlen(p));
            if (!dims[d].param) {
                LW_NOMEM(s);
                return false;
            }
        } else {
            dims[d].value = t->shape[d];
            dims[d].has_value = true;
        }
    }
    sh->dims = dims;
    sh->rank = t->rank;
    ty->shape = sh;
    return true;
}

/* --- initializers ---------------------------------------------------------------- */

static cg_tensor_proto *sink_init(lw_scope *s)
{
    lw_sink *k = s->sink;
    if (!lw_ok(s))
        return NULL;
    if (k->init_count == k->init_cap) {
        size_t cap = k->init_cap ? k->init_cap * 2 : 16;
        cg_tensor_proto *n = realloc(k->inits, cap * sizeof *n);
        if (!n) {
            LW_NOMEM(s);
            return NULL;
        }
        k->inits = n;
        k->init_cap = cap;
    }
    cg_tensor_proto *t = &k->inits[k->init_count++];
    memset(t, 0, sizeof *t);
    return t;
}

static bool set_dims(lw_scope *s, cg_tensor_proto *tp, int rank, const int64_t *dims)
{
    tp->rank = (size_t)rank;
    tp->dims = cg_arena_calloc(s->lw->arena, rank ? (size_t)rank : 1, sizeof *tp->dims);
    if (!tp->dims) {
        LW_NOMEM(s);
        return false;
    }
    if (rank)
        memcpy(tp->dims, dims, (size_t)rank * sizeof *dims);
    return true;
}

/* The initializer of constant tensor idx (zero-copy), named like the tensor. */
static const char *const_tensor(lw_scope *s, int32_t idx)
{
    const cg_tflite_tensor *t = &s->sg->tensors[idx];
    cg_bytes b;
    char base[48];
    int64_t dims[CG_MAX_RANK];
    if (t->rank > CG_MAX_RANK) {
        lw_fail(s, CG_UNSUPPORTED, "constant tensor %d has rank %zu (at most %d)", (int)idx,
                t->rank, CG_MAX_RANK);
        return NULL;
    }
    if (!lw_const_bytes(s, t, "constant", &b))
        return NULL;
    const char *name = unique_name(s, tensor_base_name(s, idx, base, sizeof base));
    cg_tensor_proto *tp = sink_init(s);
    if (!tp)
        return NULL;
    for (size_t d = 0; d < t->rank; d++)
        dims[d] = t->shape[d];
    if (!set_dims(s, tp, (int)t->rank, dims))
        return NULL;
    tp->name = name;
    tp->data_type = (int32_t)lw_dtype(t);
    tp->has_data_type = true;
    tp->raw_data.data = b.data ? b.data : (const uint8_t *)"";
    tp->raw_data.len = b.len;
    s->vname[idx] = name;
    return name;
}

const char *lw_init(lw_scope *s, const char *hint, cg_dtype dt, int rank, const int64_t *dims,
                    const void *data)
{
    int64_t numel;
    size_t bytes;
    if (!lw_ok(s))
        return NULL;
    if (!cg_shape_numel(rank, dims, &numel) || !cg_tensor_byte_size(dt, numel, &bytes))
        return lw_fail(s, CG_INVALID, "constant '%s' is too large", hint), NULL;
    const char *name = lw_tmp(s, hint);
    uint8_t *copy = cg_arena_calloc(s->lw->arena, bytes ? bytes : 1, 1);
    cg_tensor_proto *tp = copy ? sink_init(s) : NULL;
    if (!copy) {
        LW_NOMEM(s);
        return NULL;
    }
    if (!tp || !set_dims(s, tp, rank, dims))
        return NULL;
    if (bytes)
        memcpy(copy, data, bytes);
    tp->name = name;
    tp->data_type = (int32_t)dt;
    tp->has_data_type = true;
    tp->raw_data.data = copy;
    tp->raw_data.len = bytes;
    return name;
}

const char *lw_init_i64(lw_scope *s, const char *hint, const int64_t *v, size_t n)
{
    int64_t dim = (int64_t)n;
    return lw_init(s, hint, CG_DTYPE_INT64, 1, &dim, v);
}

const char *lw_init_scalar(lw_scope *s, const char *hint, cg_dtype dt, double v)
{
    cg_tensor t;
    cg_error e;
    if (!lw_ok(s))
        return NULL;
    if (cg_tensor_alloc(&t, dt, 0, NULL, 0, &e) != CG_OK)
        return lw_fail(s, CG_UNSUPPORTED, "a %s constant: %s", cg_dtype_name(dt), e.msg), NULL;
    if (cg_dtype_is_float(dt))
        cg_tensor_set_f64(&t, 0, v);
    else
        cg_tensor_set_i64(&t, 0, (int64_t)v);
    const char *name = lw_init(s, hint, dt, 0, NULL, t.data);
    cg_tensor_release(&t);
    return name;
}

const char *lw_init_permuted(lw_scope *s, const cg_tflite_tensor *t, const char *what,
                             const int *perm, int rank)
{
    cg_bytes b;
    cg_tensor view, out;
    cg_error e;
    char hint[64];
    if (!lw_static_shape(s, t, what, rank) || !lw_const_bytes(s, t, what, &b))
        return NULL;
    memset(&view, 0, sizeof view);
    view.dtype = lw_dtype(t);
    view.rank = rank;
    view.numel = 1;
    for (int d = 0; d < rank; d++) {
        view.dims[d] = t->shape[d];
        view.numel *= t->shape[d];
    }
    view.data = (void *)b.data; /* read only: cg_tensor_permute copies */
    if (cg_tensor_permute(&view, perm, &out, &e) != CG_OK)
        return lw_fail(s, e.status, "its %s: %s", what, e.msg), NULL;
    snprintf(hint, sizeof hint, "%s_permuted", what);
    const char *name = lw_init(s, hint, out.dtype, rank, out.dims, out.data);
    cg_tensor_release(&out);
    return name;
}

/* --- values ------------------------------------------------------------------------ */

const char *lw_in(lw_scope *s, size_t i)
{
    char tl[300];
    if (!lw_ok(s))
        return NULL;
    if (i >= s->op->input_count || s->op->inputs[i] < 0)
        return "";
    int32_t idx = s->op->inputs[i];
    if (s->vname[idx])
        return s->vname[idx];
    const cg_tflite_tensor *t = &s->sg->tensors[idx];
    if (cg_tflite_tensor_data(s->lw->tm, t).data)
        return const_tensor(s, idx);
    lw_fail(s, CG_INVALID, "input %zu (%s) is read before anything writes it (not an input, "
            "a constant or an output of an earlier operator)", i,
            lw_tensor_label(s, t, tl, sizeof tl));
    return NULL;
}

const char *lw_out(lw_scope *s, size_t i)
{
    char tl[300], base[48];
    if (!lw_ok(s))
        return NULL;
    if (i >= s->op->output_count || s->op->outputs[i] < 0) {
        lw_fail(s, CG_INVALID, "output %zu is missing", i);
        return NULL;
    }
    int32_t idx = s->op->outputs[i];
    const cg_tflite_tensor *t = &s->sg->tensors[idx];
    if (s->vname[idx]) {
        lw_fail(s, CG_INVALID, "output %zu (%s) was already written (by an earlier operator, "
                "as an input or a constant)", i, lw_tensor_label(s, t, tl, sizeof tl));
        return NULL;
    }
    return s->vname[idx] = unique_name(s, tensor_base_name(s, idx, base, sizeof base));
}

const char *lw_tmp(lw_scope *s, const char *hint)
{
    char buf[400];
    if (!lw_ok(s))
        return NULL;
    snprintf(buf, sizeof buf, "%s%s#%d/%s", s->prefix, s->op_name ? s->op_name : "graph",
             (int)s->op_index, hint);
    return unique_name(s, buf);
}

/* --- nodes --------------------------------------------------------------------------- */

cg_node *lw_node(lw_scope *s, const char *op_type, const char *domain, size_t nin,
                 size_t nout, const char *part)
{
    lw_sink *k = s->sink;
    cg_arena *a = s->lw->arena;
    if (!lw_ok(s))
        return NULL;
    if (k->node_count == k->node_cap) {
        size_t cap = k->node_cap ? k->node_cap * 2 : 32;
        cg_node *n = realloc(k->nodes, cap * sizeof *n);
        int32_t *sg = n ? realloc(k->node_sg, cap * sizeof *sg) : NULL;
        int32_t *op = sg ? realloc(k->node_op, cap * sizeof *op) : NULL;
        if (n)
            k->nodes = n;
        if (sg)
            k->node_sg = sg;
        if (!n || !sg || !op) {
            LW_NOMEM(s);
            return NULL;
        }
        k->node_op = op;
        k->node_cap = cap;
    }
    cg_node *n = &k->nodes[k->node_count];
    memset(n, 0, sizeof *n);
    char name[400];
    snprintf(name, sizeof name, "%s%s#%d%s%s", s->prefix, s->op_name ? s->op_name : "graph",
             (int)s->op_index, part ? "/" : "", part ? part : "");
    n->name = cg_arena_strndup(a, name, strlen(name));
    n->op_type = op_type;
    n->domain = domain;
    n->inputs = cg_arena_calloc(a, nin ? nin : 1, sizeof *n->inputs);
    n->outputs = cg_arena_calloc(a, nout ? nout : 1, sizeof *n->outputs);
    n->attrs = cg_arena_calloc(a, LW_MAX_ATTRS, sizeof *n->attrs);
    if (!n->name || !n->inputs || !n->outputs || !n->attrs) {
        LW_NOMEM(s);
        return NULL;
    }
    for (size_t i = 0; i < nin; i++)
        n->inputs[i] = "";
    for (size_t i = 0; i < nout; i++)
        n->outputs[i] = "";
    n->input_count = nin;
    n->output_count = nout;
    k->node_sg[k->node_count] = s->origin_sg;
    k->node_op[k->node_count] = s->origin_op;
    k->node_count++;
    return n;
}

cg_node *lw_unary(lw_scope *s, const char *op_type, const char *x, const char *y,
                  const char *part)
{
    cg_node *n = lw_node(s, op_type, NULL, 1, 1, part);
    if (n) {
        n->inputs[0] = x;
        n->outputs[0] = y;
    }
    return n;
}

cg_node *lw_binary(lw_scope *s, const char *op_type, const char *a, const char *b,
                   const char *y, const char *part)
{
    cg_node *n = lw_node(s, op_type, NULL, 2, 1, part);
    if (n) {
        n->inputs[0] = a;
        n->inputs[1] = b;
        n->outputs[0] = y;
    }
    return n;
}

static cg_attr *new_attr(lw_scope *s, cg_node *n, const char *name, cg_attr_type type)
{
    if (!n || !lw_ok(s))
        return NULL;
    if (n->attr_count == LW_MAX_ATTRS) {
        lw_fail(s, CG_LIMIT, "node '%s' has more than %d attributes", n->name, LW_MAX_ATTRS);
        return NULL;
    }
    cg_attr *a = &n->attrs[n->attr_count++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = type;
    a->has_type = true;
    return a;
}

void lw_attr_int(lw_scope *s, cg_node *n, const char *name, int64_t v)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_INT);
    if (a) {
        a->i = v;
        a->has_i = true;
    }
}

void lw_attr_ints(lw_scope *s, cg_node *n, const char *name, const int64_t *v, size_t count)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_INTS);
    if (!a)
        return;
    a->ints = cg_arena_calloc(s->lw->arena, count ? count : 1, sizeof *a->ints);
    if (!a->ints) {
        LW_NOMEM(s);
        return;
    }
    if (count)
        memcpy(a->ints, v, count * sizeof *v);
    a->ints_count = count;
}

void lw_attr_float(lw_scope *s, cg_node *n, const char *name, float v)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_FLOAT);
    if (a) {
        a->f = v;
        a->has_f = true;
    }
}

void lw_attr_floats(lw_scope *s, cg_node *n, const char *name, const float *v, size_t count)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_FLOATS);
    if (!a)
        return;
    a->floats = cg_arena_calloc(s->lw->arena, count ? count : 1, sizeof *a->floats);
    if (!a->floats) {
        LW_NOMEM(s);
        return;
    }
    if (count)
        memcpy(a->floats, v, count * sizeof *v);
    a->floats_count = count;
}

void lw_attr_string(lw_scope *s, cg_node *n, const char *name, const char *v)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_STRING);
    if (a) {
        a->s.data = (const uint8_t *)v;
        a->s.len = strlen(v);
    }
}

void lw_attr_graph(lw_scope *s, cg_node *n, const char *name, cg_graph *g)
{
    cg_attr *a = new_attr(s, n, name, CG_ATTR_GRAPH);
    if (a)
        a->g = g;
}

/* --- graphs ----------------------------------------------------------------------- */

static void sink_free(lw_sink *k)
{
    free(k->nodes);
    free(k->node_sg);
    free(k->node_op);
    free(k->inits);
    memset(k, 0, sizeof *k);
}

static bool scope_init(lw_scope *s, lw *l, lw_sink *sink, int32_t sg_index, const char *prefix)
{
    memset(s, 0, sizeof *s);
    s->lw = l;
    s->sink = sink;
    s->sg_index = sg_index;
    s->sg = &l->tm->subgraphs[sg_index];
    s->prefix = prefix;
    s->op_index = -1;
    s->origin_sg = sg_index;
    s->origin_op = -1;
    s->vname = cg_arena_calloc(l->arena, s->sg->tensor_count ? s->sg->tensor_count : 1,
                               sizeof *s->vname);
    if (!s->vname) {
        lw_set(l, CG_NOMEM, "out of memory");
        return false;
    }
    return true;
}

/* Lowers every operator of the scope's subgraph, in order. `origin_op` >= 0
 * makes every node record that operator of the enclosing subgraph instead
 * (a WHILE's inline condition). */
static cg_status lower_ops(lw_scope *s, int32_t origin_sg, int32_t origin_op)
{
    char buf[32];
    if (s->sg->operator_count > s->lw->ops_budget - s->lw->ops_lowered)
        return lw_set(s->lw, CG_LIMIT, "the subgraphs call each other so often that the "
                      "lowered model would hold more than %zu operators (subgraph %d is lowered "
                      "once per call)", s->lw->ops_budget, (int)s->sg_index);
    s->lw->ops_lowered += s->sg->operator_count;
    for (size_t i = 0; i < s->sg->operator_count && lw_ok(s); i++) {
        s->op = &s->sg->operators[i];
        s->op_index = (int32_t)i;
        s->op_name = cg_tflite_op_name(cg_tflite_op_code(s->lw->tm, s->op), buf, sizeof buf);
        s->origin_sg = origin_op >= 0 ? origin_sg : s->sg_index;
        s->origin_op = origin_op >= 0 ? origin_op : (int32_t)i;
        if (!s->op_name[0])
            s->op_name = "CUSTOM";
        /* buf is reused by the next operator: keep the name in the arena */
        s->op_name = cg_arena_strndup(s->lw->arena, s->op_name, strlen(s->op_name));
        if (!s->op_name)
            return lw_set(s->lw, CG_NOMEM, "out of memory");
        lw_lower_op(s);
    }
    s->op = NULL;
    s->op_name = NULL;
    s->op_index = -1;
    return lw_status(s);
}

/* The value of subgraph output j of scope s, for a graph output: an Identity
 * when the value is not made by a node of this sink (an input, an outer
 * value, a constant) or is already an output (graph outputs are distinct
 * values made inside the graph). */
static const char *scope_output(lw_scope *s, size_t j, const char **taken, size_t ntaken,
                                bool need_local)
{
    char tl[300];
    int32_t idx = s->sg->outputs[j];
    const char *v = s->vname[idx];
    if (!lw_ok(s))
        return NULL;
    if (!v && cg_tflite_tensor_data(s->lw->tm, &s->sg->tensors[idx]).data)
        v = const_tensor(s, idx);
    if (!v) {
        lw_fail(s, CG_INVALID, "output %zu (%s) is never written", j,
                lw_tensor_label(s, &s->sg->tensors[idx], tl, sizeof tl));
        return NULL;
    }
    bool local = false, dup = false;
    for (size_t i = 0; i < s->sink->node_count && !local; i++)
        for (size_t o = 0; o < s->sink->nodes[i].output_count; o++)
            local = local || strcmp(s->sink->nodes[i].outputs[o], v) == 0;
    for (size_t i = 0; i < ntaken; i++)
        dup = dup || strcmp(taken[i], v) == 0;
    if ((local || !need_local) && !dup)
        return v;
    const char *y = lw_tmp(s, "out");
    lw_unary(s, "Identity", v, y, "out");
    return y;
}

/* Copies the sink into a graph in the arena and records each node's origin. */
static cg_graph *sink_finish(lw_scope *s, const char *name)
{
    lw *l = s->lw;
    lw_sink *k = s->sink;
    if (!lw_ok(s))
        return NULL;
    cg_graph *g = cg_arena_calloc(l->arena, 1, sizeof *g);
    cg_node *nodes = cg_arena_calloc(l->arena, k->node_count ? k->node_count : 1, sizeof *nodes);
    cg_tensor_proto *inits =
        cg_arena_calloc(l->arena, k->init_count ? k->init_count : 1, sizeof *inits);
    if (!g || !nodes || !inits) {
        LW_NOMEM(s);
        return NULL;
    }
    if (k->node_count)
        memcpy(nodes, k->nodes, k->node_count * sizeof *nodes);
    if (k->init_count)
        memcpy(inits, k->inits, k->init_count * sizeof *inits);
    g->nodes = nodes;
    g->node_count = k->node_count;
    g->initializers = inits;
    g->initializer_count = k->init_count;
    g->name = cg_arena_strndup(l->arena, name, strlen(name));
    if (!g->name) {
        LW_NOMEM(s);
        return NULL;
    }
    if (l->origin_count + k->node_count > l->origin_cap) {
        size_t cap = l->origin_cap ? l->origin_cap : 64;
        while (cap < l->origin_count + k->node_count)
            cap *= 2;
        cg_tflite_origin *o = realloc(l->origins, cap * sizeof *o);
        if (!o) {
            LW_NOMEM(s);
            return NULL;
        }
        l->origins = o;
        l->origin_cap = cap;
    }
    for (size_t i = 0; i < k->node_count; i++)
        l->origins[l->origin_count++] =
            (cg_tflite_origin){&nodes[i], k->node_sg[i], k->node_op[i]};
    return g;
}

/* Sets g's outputs from subgraph outputs of scope s (Identities as needed). */
static bool graph_outputs(lw_scope *s, cg_value_info **out, size_t *count, bool need_local,
                          const char *first)
{
    size_t n = s->sg->output_count + (first ? 1 : 0);
    cg_value_info *vis = cg_arena_calloc(s->lw->arena, n ? n : 1, sizeof *vis);
    const char **names = calloc(n ? n : 1, sizeof *names);
    bool ok = vis && names;
    if (!ok)
        LW_NOMEM(s);
    size_t k = 0;
    if (ok && first) {
        cg_value_info *vi = &vis[k];
        cg_type *ty = cg_arena_calloc(s->lw->arena, 1, sizeof *ty);
        cg_shape *sh = cg_arena_calloc(s->lw->arena, 1, sizeof *sh);
        if (!ty || !sh) {
            LW_NOMEM(s);
            ok = false;
        } else {
            ty->kind = CG_TYPE_TENSOR;
            ty->elem_type = CG_DTYPE_BOOL;
            ty->has_elem_type = true;
            ty->shape = sh;
            vi->type = ty;
            vi->name = names[k++] = first;
        }
    }
    for (size_t j = 0; ok && j < s->sg->output_count; j++) {
        const char *v = scope_output(s, j, names, k, need_local);
        ok = v && tensor_value_info(s, &s->sg->tensors[s->sg->outputs[j]], v, &vis[k]);
        if (ok)
            names[k++] = v;
    }
    free(names);
    *out = vis;
    *count = k;
    return ok && lw_ok(s);
}

/* --- IF ------------------------------------------------------------------------------ */

/* One branch of an IF: its subgraph lowered into a graph of its own whose
 * inputs are the IF's inputs 1.. as outer-scope values (ONNX If branches
 * take no inputs). */
static cg_graph *if_branch(lw_scope *s, int32_t sg_index, const char *which)
{
    lw *l = s->lw;
    const cg_tflite_subgraph *b = &l->tm->subgraphs[sg_index];
    char prefix[300];
    if (b->input_count != s->op->input_count - 1 || b->output_count != s->op->output_count) {
        lw_fail(s, CG_INVALID, "its %s branch (subgraph %d) has %zu inputs and %zu outputs; "
                "the IF has %zu inputs after the condition and %zu outputs", which,
                (int)sg_index, b->input_count, b->output_count, s->op->input_count - 1,
                s->op->output_count);
        return NULL;
    }
    lw_sink sink = {0};
    lw_scope bs;
    snprintf(prefix, sizeof prefix, "%s%s#%d/%s/", s->prefix, s->op_name, (int)s->op_index,
             which);
    const char *pfx = cg_arena_strndup(l->arena, prefix, strlen(prefix));
    cg_graph *g = NULL;
    if (pfx && scope_init(&bs, l, &sink, sg_index, pfx)) {
        for (size_t i = 0; i < b->input_count && lw_ok(s); i++)
            if (!(bs.vname[b->inputs[i]] = lw_in(s, i + 1)))
                break;
        if (lw_ok(s) && lower_ops(&bs, 0, -1) == CG_OK) {
            cg_value_info *outs;
            size_t nout;
            if (graph_outputs(&bs, &outs, &nout, true, NULL) && (g = sink_finish(&bs, which))) {
                g->outputs = outs;
                g->output_count = nout;
            }
        }
    } else if (!pfx) {
        LW_NOMEM(s);
    }
    sink_free(&sink);
    return lw_ok(s) ? g : NULL;
}

cg_status lw_lower_if(lw_scope *s)
{
    const cg_tflite_options *o = &s->op->options;
    if (o->type != CG_TFLITE_OPT_IfOptions || !o->decoded)
        return lw_fail(s, CG_INVALID, "IF without IfOptions");
    if (s->op->input_count < 1)
        return lw_fail(s, CG_INVALID, "IF without a condition input");
    const cg_tflite_tensor *c = lw_in_t(s, 0);
    if (!c || c->type != CG_TFLITE_TYPE_BOOL)
        return lw_fail(s, CG_INVALID, "the IF condition must be a bool tensor (TFLite's "
                       "if.cc requires it)");
    cg_graph *then_g = if_branch(s, o->u.subgraphs.first, "then");
    cg_graph *else_g = then_g ? if_branch(s, o->u.subgraphs.second, "else") : NULL;
    const char *cond = lw_in(s, 0);
    cg_node *n = else_g ? lw_node(s, "If", NULL, 1, s->op->output_count, NULL) : NULL;
    if (!n)
        return lw_status(s);
    n->inputs[0] = cond;
    for (size_t j = 0; j < s->op->output_count; j++)
        n->outputs[j] = lw_out(s, j);
    lw_attr_graph(s, n, "then_branch", then_g);
    lw_attr_graph(s, n, "else_branch", else_g);
    return lw_status(s);
}

/* --- WHILE --------------------------------------------------------------------------- */

/* The condition subgraph inlined into scope s's sink on the values `vars`;
 * returns the name of its bool output. */
static const char *inline_cond(lw_scope *s, int32_t cond_sg, const char *const *vars,
                               const char *prefix, int32_t origin_sg, int32_t origin_op)
{
    lw *l = s->lw;
    const cg_tflite_subgraph *c = &l->tm->subgraphs[cond_sg];
    lw_scope cs;
    if (!scope_init(&cs, l, s->sink, cond_sg, prefix))
        return NULL;
    for (size_t i = 0; i < c->input_count; i++)
        cs.vname[c->inputs[i]] = vars[i];
    if (lower_ops(&cs, origin_sg, origin_op) != CG_OK)
        return NULL;
    int32_t idx = c->outputs[0];
    const cg_tflite_tensor *t = &c->tensors[idx];
    if (t->type != CG_TFLITE_TYPE_BOOL) {
        lw_fail(s, CG_INVALID, "the WHILE condition (subgraph %d) returns %s, not bool",
                (int)cond_sg, cg_tflite_type_name(t->type) ? cg_tflite_type_name(t->type) : "?");
        return NULL;
    }
    const char *v = cs.vname[idx];
    if (!v && cg_tflite_tensor_data(l->tm, t).data)
        v = const_tensor(&cs, idx);
    if (!v)
        lw_fail(s, CG_INVALID, "the WHILE condition (subgraph %d) never writes its output",
                (int)cond_sg);
    return v;
}

cg_status lw_lower_while(lw_scope *s)
{
    lw *l = s->lw;
    const cg_tflite_options *o = &s->op->options;
    char prefix[300];
    if (o->type != CG_TFLITE_OPT_WhileOptions || !o->decoded)
        return lw_fail(s, CG_INVALID, "WHILE without WhileOptions");
    int32_t cond_sg = o->u.subgraphs.first, body_sg = o->u.subgraphs.second;
    const cg_tflite_subgraph *c = &l->tm->subgraphs[cond_sg], *b = &l->tm->subgraphs[body_sg];
    size_t n = s->op->input_count;
    if (s->op->output_count != n || c->input_count != n || c->output_count != 1 ||
        b->input_count != n || b->output_count != n)
        return lw_fail(s, CG_INVALID, "WHILE with %zu inputs and %zu outputs, a condition "
                       "(subgraph %d) with %zu inputs and %zu outputs and a body (subgraph %d) "
                       "with %zu inputs and %zu outputs: all must carry the same values and "
                       "the condition return one", n, s->op->output_count, (int)cond_sg,
                       c->input_count, c->output_count, (int)body_sg, b->input_count,
                       b->output_count);
    const char **init = calloc(n ? n : 1, sizeof *init);
    if (!init)
        return LW_NOMEM(s);
    for (size_t i = 0; i < n && lw_ok(s); i++)
        init[i] = lw_in(s, i);
    /* the first test, before the loop */
    snprintf(prefix, sizeof prefix, "%s%s#%d/cond0/", s->prefix, s->op_name, (int)s->op_index);
    const char *pfx0 = cg_arena_strndup(l->arena, prefix, strlen(prefix));
    const char *cond0 = pfx0 ? inline_cond(s, cond_sg, init, pfx0, s->sg_index, s->op_index)
                             : (LW_NOMEM(s), NULL);
    /* the body: (iteration, condition, values...) -> (next condition, values...) */
    lw_sink sink = {0};
    lw_scope bs;
    cg_graph *body = NULL;
    snprintf(prefix, sizeof prefix, "%s%s#%d/body/", s->prefix, s->op_name, (int)s->op_index);
    const char *pfx = cg_arena_strndup(l->arena, prefix, strlen(prefix));
    if (cond0 && pfx && scope_init(&bs, l, &sink, body_sg, pfx)) {
        cg_value_info *ins = cg_arena_calloc(l->arena, n + 2, sizeof *ins);
        if (!ins)
            LW_NOMEM(s);
        const char *iter = lw_ok(s) ? lw_tmp(s, "iteration") : NULL;
        const char *cond_in = lw_ok(s) ? lw_tmp(s, "condition") : NULL;
        if (iter && cond_in) {
            ins[0].name = iter;
            ins[1].name = cond_in;
            cg_type *ti = cg_arena_calloc(l->arena, 2, sizeof *ti);
            cg_shape *sh = cg_arena_calloc(l->arena, 1, sizeof *sh);
            if (!ti || !sh) {
                LW_NOMEM(s);
            } else {
                ti[0] = (cg_type){.kind = CG_TYPE_TENSOR, .elem_type = CG_DTYPE_INT64,
                                  .has_elem_type = true, .shape = sh};
                ti[1] = (cg_type){.kind = CG_TYPE_TENSOR, .elem_type = CG_DTYPE_BOOL,
                                  .has_elem_type = true, .shape = sh};
                ins[0].type = &ti[0];
                ins[1].type = &ti[1];
            }
        }
        char base[48];
        for (size_t i = 0; i < n && lw_ok(s); i++) {
            int32_t idx = b->inputs[i];
            const char *v = unique_name(&bs, tensor_base_name(&bs, idx, base, sizeof base));
            if (v && tensor_value_info(&bs, &b->tensors[idx], v, &ins[2 + i]))
                bs.vname[idx] = v;
        }
        if (lw_ok(s) && lower_ops(&bs, 0, -1) == CG_OK) {
            /* the next test, on the body's results */
            const char **next = calloc(n ? n : 1, sizeof *next);
            if (!next)
                LW_NOMEM(s);
            for (size_t i = 0; next && i < n && lw_ok(s); i++) {
                int32_t idx = b->outputs[i];
                next[i] = bs.vname[idx];
                if (!next[i] && cg_tflite_tensor_data(l->tm, &b->tensors[idx]).data)
                    next[i] = const_tensor(&bs, idx);
                if (!next[i])
                    lw_fail(s, CG_INVALID, "the WHILE body (subgraph %d) never writes its "
                            "output %zu", (int)body_sg, i);
            }
            snprintf(prefix, sizeof prefix, "%s%s#%d/cond/", s->prefix, s->op_name,
                     (int)s->op_index);
            const char *pfxc = lw_ok(s) ? cg_arena_strndup(l->arena, prefix, strlen(prefix))
                                        : NULL;
            const char *cond_next =
                pfxc ? inline_cond(&bs, cond_sg, next, pfxc, cond_sg, -1) : NULL;
            free(next);
            if (cond_next) {
                /* a condition that is a body input or outside value gets its Identity */
                bool local = false;
                for (size_t i = 0; i < sink.node_count && !local; i++)
                    for (size_t k = 0; k < sink.nodes[i].output_count; k++)
                        local = local || strcmp(sink.nodes[i].outputs[k], cond_next) == 0;
                bs.op_name = s->op_name;
                bs.op_index = s->op_index;
                bs.prefix = pfx;
                if (!local) {
                    const char *y = lw_tmp(&bs, "condition_out");
                    lw_unary(&bs, "Identity", cond_next, y, "condition_out");
                    cond_next = y;
                }
                cg_value_info *outs;
                size_t nout;
                if (graph_outputs(&bs, &outs, &nout, true, cond_next) &&
                    (body = sink_finish(&bs, "body"))) {
                    body->inputs = ins;
                    body->input_count = n + 2;
                    body->outputs = outs;
                    body->output_count = nout;
                }
            }
        }
    } else if (cond0 && !pfx) {
        LW_NOMEM(s);
    }
    sink_free(&sink);
    cg_node *node = body ? lw_node(s, "Loop", NULL, n + 2, n, NULL) : NULL;
    if (node) {
        node->inputs[0] = "";
        node->inputs[1] = cond0;
        for (size_t i = 0; i < n; i++)
            node->inputs[2 + i] = init[i];
        for (size_t i = 0; i < n; i++)
            node->outputs[i] = lw_out(s, i);
        lw_attr_graph(s, node, "body", body);
    }
    free(init);
    return lw_status(s);
}

/* --- the model ---------------------------------------------------------------------- */

static int origin_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const cg_tflite_origin *)a)->node;
    uintptr_t y = (uintptr_t)((const cg_tflite_origin *)b)->node;
    return x < y ? -1 : x > y;
}

const cg_tflite_origin *cg_tflite_node_origin(const cg_model *model, const cg_node *node)
{
    if (!model || !model->tflite || !node)
        return NULL;
    const cg_tflite_lowering *lo = model->tflite;
    size_t a = 0, b = lo->origin_count;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        uintptr_t x = (uintptr_t)lo->origins[mid].node;
        if (x == (uintptr_t)node)
            return &lo->origins[mid];
        if (x < (uintptr_t)node)
            a = mid + 1;
        else
            b = mid;
    }
    return NULL;
}

void cg_tflite_lowering_free(cg_tflite_lowering *lowering)
{
    if (!lowering)
        return;
    cg_tflite_free(lowering->source);
    free(lowering->origins);
    free(lowering);
}

/* The main graph: inputs, every operator of subgraph 0, outputs. */
static cg_status lower_main(lw *l)
{
    lw_sink sink = {0};
    lw_scope s;
    cg_model *m = l->m;
    if (!scope_init(&s, l, &sink, 0, ""))
        return l->st;
    const cg_tflite_subgraph *sg = s.sg;
    char base[48];
    cg_value_info *ins = cg_arena_calloc(l->arena, sg->input_count ? sg->input_count : 1,
                                         sizeof *ins);
    if (!ins)
        LW_NOMEM(&s);
    for (size_t i = 0; i < sg->input_count && lw_ok(&s); i++) {
        int32_t idx = sg->inputs[i];
        if (s.vname[idx]) {
            lw_fail(&s, CG_INVALID, "tensor %d is input %zu and an earlier input", (int)idx, i);
            break;
        }
        const char *v = unique_name(&s, tensor_base_name(&s, idx, base, sizeof base));
        if (v && tensor_value_info(&s, &sg->tensors[idx], v, &ins[i]))
            s.vname[idx] = v;
    }
    if (lw_ok(&s))
        lower_ops(&s, 0, -1);
    cg_value_info *outs = NULL;
    size_t nout = 0;
    cg_graph *g = NULL;
    if (lw_ok(&s) && graph_outputs(&s, &outs, &nout, false, NULL))
        g = sink_finish(&s, sg->name && sg->name[0] ? sg->name : "main");
    sink_free(&sink);
    if (!g)
        return l->st;
    g->inputs = ins;
    g->input_count = sg->input_count;
    g->outputs = outs;
    g->output_count = nout;
    m->graph = g;
    return CG_OK;
}

cg_status cg_tflite_lower(cg_tflite_model *src, cg_model **out, cg_error *err)
{
    *out = NULL;
    if (!src)
        return cg_error_set(err, CG_USAGE, "cg_tflite_lower: no model");
    lw l;
    memset(&l, 0, sizeof l);
    l.tm = src;
    l.label = src->path ? src->path : "tflite model";
    l.err = err;
    cg_model *m = calloc(1, sizeof *m);
    cg_tflite_lowering *lo = calloc(1, sizeof *lo);
    cg_arena *arena = cg_arena_new();
    if (!m || !lo || !arena) {
        free(m);
        free(lo);
        cg_arena_free(arena);
        cg_tflite_free(src);
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", l.label);
    }
    lo->source = src;
    m->arena = arena;
    m->tflite = lo;
    m->tflite_free = cg_tflite_lowering_free;
    m->file_size = src->file_size;
    l.m = m;
    l.arena = arena;
    if (src->subgraph_count == 0) {
        lw_set(&l, CG_INVALID, "the model has no subgraph");
        goto fail;
    }
    for (size_t i = 0; i < src->subgraph_count; i++)
        l.ops_budget += src->subgraphs[i].operator_count;
    l.ops_budget = l.ops_budget * 16 + 100000; /* every subgraph called a few times over */
    if (src->path && !(m->path = strdup(src->path))) {
        lw_set(&l, CG_NOMEM, "out of memory");
        goto fail;
    }
    m->opsets = cg_arena_calloc(arena, 2, sizeof *m->opsets);
    if (!m->opsets) {
        lw_set(&l, CG_NOMEM, "out of memory");
        goto fail;
    }
    m->opsets[0] = (cg_opset_id){.domain = "", .version = LW_OPSET, .has_version = true};
    m->opsets[1] = (cg_opset_id){.domain = CG_TFLITE_DOMAIN, .version = 1, .has_version = true};
    m->opset_count = 2;
    m->ir_version = 10;
    m->has_ir_version = true;
    m->producer_name = "convgate (lowered from .tflite)";
    m->doc_string = src->description;
    if (lower_main(&l) != CG_OK)
        goto fail;
    if (l.origin_count) /* a model with no operators has none: qsort(NULL) is UB */
        qsort(l.origins, l.origin_count, sizeof *l.origins, origin_cmp);
    lo->origins = l.origins;
    lo->origin_count = l.origin_count;
    cg_strmap_free(&l.names);
    *out = m;
    return CG_OK;
fail:
    cg_strmap_free(&l.names);
    free(l.origins);
    cg_model_free(m);
    return l.st;
}

const char *cg_tflite_signature_name(const cg_model *m, bool input, size_t i)
{
    if (!m || !m->tflite)
        return NULL;
    const cg_tflite_model *tm = m->tflite->source;
    const cg_tflite_subgraph *g = &tm->subgraphs[0];
    if (i >= (input ? g->input_count : g->output_count))
        return NULL;
    int32_t t = input ? g->inputs[i] : g->outputs[i];
    for (size_t s = 0; s < tm->signature_count; s++) {
        const cg_tflite_signature *sig = &tm->signatures[s];
        if (sig->subgraph_index != 0)
            continue;
        const cg_tflite_tensor_map *maps = input ? sig->inputs : sig->outputs;
        size_t n = input ? sig->input_count : sig->output_count;
        for (size_t k = 0; k < n; k++)
            if ((int32_t)maps[k].tensor_index == t && maps[k].name)
                return maps[k].name;
        return NULL; /* the first signature of the main subgraph is LiteRT's default */
    }
    return NULL;
}

cg_status cg_model_load_any(const char *path, const cg_load_options *opt, cg_model **out,
                            cg_error *err)
{
    *out = NULL;
    if (!cg_tflite_detect_path(path))
        return cg_model_load(path, opt, out, err);
    cg_tflite_model *tm = NULL;
    cg_status st = cg_tflite_load(path, NULL, &tm, err);
    return st != CG_OK ? st : cg_tflite_lower(tm, out, err);
}

cg_status cg_model_load_any_bytes(const void *data, size_t size, const char *label,
                                  const cg_load_options *opt, cg_model **out, cg_error *err)
{
    *out = NULL;
    if (!cg_tflite_detect(data, size)) {
        cg_status st = cg_model_load_bytes(data, size, opt, out, err);
        if (st != CG_OK && label)
            cg_error_prefix(err, "%s: ", label);
        return st;
    }
    cg_tflite_model *tm = NULL;
    cg_status st = cg_tflite_load_bytes(data, size, label, NULL, &tm, err);
    return st != CG_OK ? st : cg_tflite_lower(tm, out, err);
}
