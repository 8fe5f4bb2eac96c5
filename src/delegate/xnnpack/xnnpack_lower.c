/*
 * ONNX node -> XNNPACK subgraph nodes: one lowering function per op, in one
 * table, each run twice in the delegate's life. With dry_run set (supports)
 * it performs every check and stops right before its first xnn_define_*
 * call; without it (compile) it performs the same checks and then defines
 * the nodes. Checks only ever refuse through xnng_refuse, which writes the
 * op, node and offending value, so a refusal reads the same from either path.
 *
 * Values: a node input is either static (an initializer, a Constant, or an
 * Identity of one: read at compile and handed to XNNPACK as static data) or
 * dynamic (a partition input or an output of an earlier partition node).
 * A value the type environment calls constant but that is computed by
 * another op at run time cannot be read at compile, so a node reading it is
 * refused; so is a node whose data inputs are all constant (constant
 * subgraphs stay on the CPU). Rank-4 values are NHWC inside XNNPACK: ops
 * that care about element order (Reshape, Softmax, broadcasting a lower-rank
 * operand) check that the NCHW and NHWC orders agree or refuse.
 *
 * The API is the one of the linked XNNPACK (Debian's snapshot, git ae108ef,
 * 2022-02-16): it has no concatenate, split, transpose, slice, tanh or
 * reductions, so those ops have no row here.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mapfile.h"
#include "delegate/xnnpack/xnnpack_internal.h"
#include "ir/walk.h"
#include "run/exec.h"
#include "run/initshare.h"

#define XNNG_MAX_DIMS XNN_MAX_TENSOR_DIMS
#define XNNG_IDENTITY_DEPTH 16
/* XNNPACK's microkernels may read this far past an operand. */
#define XNNG_PAD_BYTES XNN_EXTRA_BYTES

const char *xnng_status_name(enum xnn_status s)
{
    switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    default: return "unknown status";
    }
}

/* --- messages ------------------------------------------------------------ */

static const char *node_name(const xnng_build *b, const cg_node *n, char *buf, size_t cap)
{
    if (n->name && n->name[0])
        snprintf(buf, cap, "'%s'", n->name);
    else
        snprintf(buf, cap, "#%zu", (size_t)(n - b->graph->nodes));
    return buf;
}

/* Records why node n cannot be lowered; returns CG_UNSUPPORTED. In a build
 * the refusal is also the error (predicted residency was wrong). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static cg_status xnng_refuse(xnng_build *b, const cg_node *n, const char *fmt, ...)
{
    /* sized so op, name and message fit the reason without truncation */
    char msg[XNNG_REASON_MAX - 192], nm[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(b->reason, sizeof b->reason, "%s %s: %s", n->op_type, node_name(b, n, nm, sizeof nm),
             msg);
    if (!b->dry_run)
        cg_error_set(b->err, CG_UNSUPPORTED, "xnnpack: %s", b->reason);
    return CG_UNSUPPORTED;
}

static cg_status xnng_fail_define(xnng_build *b, const cg_node *n, const char *what,
                                  enum xnn_status s)
{
    char nm[160];
    return cg_error_set(b->err, CG_RUNTIME, "xnnpack: %s %s: %s failed (%s) after the node "
                        "passed the support checks", n->op_type,
                        node_name(b, n, nm, sizeof nm), what, xnng_status_name(s));
}

/* --- attributes ----------------------------------------------------------- */

/* True when the string attribute equals want (dflt when absent). */
static bool attr_str_is(const cg_node *n, const char *name, const char *dflt, const char *want)
{
    const cg_attr *a = cg_node_attr(n, name);
    if (!a || !a->s.data)
        return strcmp(dflt, want) == 0;
    return a->s.len == strlen(want) && memcmp(a->s.data, want, a->s.len) == 0;
}

static void attr_str_copy(const cg_node *n, const char *name, const char *dflt, char *buf,
                          size_t cap)
{
    const cg_attr *a = cg_node_attr(n, name);
    if (!a || !a->s.data) {
        snprintf(buf, cap, "%s", dflt);
        return;
    }
    size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
}

/* --- the build's owned memory ----------------------------------------------- */

static bool buffers_push(xnng_buffers *bf, void *p)
{
    if (bf->count == bf->cap) {
        size_t cap = bf->cap ? bf->cap * 2 : 16;
        void **items = realloc(bf->items, cap * sizeof *items);
        if (!items)
            return false;
        bf->items = items;
        bf->cap = cap;
    }
    bf->items[bf->count++] = p;
    return true;
}

/* A zeroed float buffer of n elements plus XNNPACK's over-read margin,
 * owned by the build. NULL when out of memory. */
static float *owned_floats(xnng_build *b, size_t n)
{
    if (n > (SIZE_MAX - XNNG_PAD_BYTES) / sizeof(float))
        return NULL;
    float *p = calloc(1, n * sizeof(float) + XNNG_PAD_BYTES);
    if (!p)
        return NULL;
    if (!buffers_push(&b->buffers, p)) {
        free(p);
        return NULL;
    }
    return p;
}

#define XNNG_TRANSIENT_MAP ((size_t)64 << 10)

/* A zeroed buffer of n bytes plus the over-read margin that only a
 * packing node reads (xnng_transient), owned by the build until the
 * runtime is created, aligned for any element type. From
 * XNNG_TRANSIENT_MAP bytes on its pages are committed only when written.
 * NULL when out of memory. */
static void *transient_bytes(xnng_build *b, size_t n)
{
    xnng_transient *t = &b->transient;
    if (n > SIZE_MAX - XNNG_PAD_BYTES)
        return NULL;
    size_t bytes = n + XNNG_PAD_BYTES;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        xnng_block *items = realloc(t->items, cap * sizeof *items);
        if (!items)
            return NULL;
        t->items = items;
        t->cap = cap;
    }
    xnng_block blk = {NULL, bytes >= XNNG_TRANSIENT_MAP ? bytes : 0};
    blk.p = blk.mapped ? cg_map_anon(bytes) : calloc(1, bytes);
    if (!blk.p)
        return NULL;
    t->items[t->count++] = blk;
    t->total += bytes;
    return blk.p;
}

static float *transient_floats(xnng_build *b, size_t n)
{
    return n > SIZE_MAX / sizeof(float) ? NULL : transient_bytes(b, n * sizeof(float));
}

void xnng_transient_free(xnng_transient *t)
{
    for (size_t i = 0; i < t->count; i++) {
        if (t->items[i].mapped)
            cg_unmap_anon(t->items[i].p, t->items[i].mapped);
        else
            free(t->items[i].p);
    }
    free(t->items);
    memset(t, 0, sizeof *t);
}

void xnng_build_clear(xnng_build *b)
{
    xnng_transient_free(&b->transient);
    for (size_t i = 0; i < b->const_count; i++) {
        xnng_const *c = &b->consts[i];
        if (c->alias || !c->value)
            continue;
        if (c->borrowed)
            c->value->tensor.data = NULL;
        cg_value_free(c->value);
    }
    free(b->consts);
    b->consts = NULL;
    b->const_count = b->const_cap = 0;
    for (size_t i = 0; i < b->buffers.count; i++)
        free(b->buffers.items[i]);
    free(b->buffers.items);
    memset(&b->buffers, 0, sizeof b->buffers);
    free(b->values);
    b->values = NULL;
    b->value_count = b->value_cap = 0;
}

void xnng_segment_end(xnng_build *b)
{
    /* XNNPACK holds its own packing of the filters and biases now, and
     * copies in the build's buffers of every other constant (xnng_const):
     * the model's pages of the weights read in place need not stay
     * resident for it (a transient copy is not a file mapping: no-op) */
    for (size_t i = 0; i < b->const_count; i++)
        if (b->consts[i].borrowed && !b->consts[i].alias)
            cg_mapping_drop_pages(b->consts[i].value->tensor.data,
                                  cg_tensor_bytes(&b->consts[i].value->tensor));
    size_t bytes = b->transient.total;
    b->transient_freed += bytes;
    if (bytes > b->transient_peak)
        b->transient_peak = bytes;
    /* the buffers stay: XNNPACK's runtimes point into them */
    xnng_buffers keep = b->buffers;
    memset(&b->buffers, 0, sizeof b->buffers);
    xnng_build_clear(b);
    b->buffers = keep;
}

/* --- constants ---------------------------------------------------------------- */

typedef enum xnng_kind { XNNG_DYNAMIC = 0, XNNG_STATIC, XNNG_UNFOLDABLE } xnng_kind;

static const cg_value_type *type_of(const xnng_build *b, const char *name)
{
    return b->types ? cg_type_env_get(b->types, name) : NULL;
}

static bool is_graph_input(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0)
            return true;
    return false;
}

static const cg_node *find_producer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t k = 0; k < g->nodes[i].output_count; k++)
            if (g->nodes[i].outputs[k] && strcmp(g->nodes[i].outputs[k], name) == 0)
                return &g->nodes[i];
    return NULL;
}

static cg_status consts_add(xnng_build *b, const char *name, cg_value *v, bool borrowed,
                            bool alias)
{
    if (b->const_count == b->const_cap) {
        size_t cap = b->const_cap ? b->const_cap * 2 : 16;
        xnng_const *c = realloc(b->consts, cap * sizeof *c);
        if (!c) {
            if (!alias) {
                if (borrowed)
                    v->tensor.data = NULL;
                cg_value_free(v);
            }
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory reading constants");
        }
        b->consts = c;
        b->const_cap = cap;
    }
    xnng_const *c = &b->consts[b->const_count++];
    c->name = name;
    c->value = v;
    c->borrowed = borrowed;
    c->alias = alias;
    c->src = NULL;
    return CG_OK;
}

/* Misaligned payloads up to this size are copied when first looked up; a
 * support check may read such a small one (a scalar, pads). */
#define XNNG_COPY_AT_LOOKUP ((size_t)4096)

/* Initializer tp as a value: an aligned payload in place; a misaligned one
 * over a transient aligned buffer that *src says is still to be filled
 * from the model's bytes (static_data), unless it is small. The
 * buffer's pages are committed only once it is filled. */
static cg_status initializer_value(xnng_build *b, const cg_tensor_proto *tp, cg_value **v,
                                   bool *borrowed, const uint8_t **src)
{
    *src = NULL;
    const cg_bytes *raw = cg_init_payload_misaligned(tp);
    if (!raw)
        return cg_value_from_proto_ex(tp, true, v, borrowed, b->err);
    uint8_t *copy = transient_bytes(b, raw->len);
    if (!copy)
        return cg_error_set(b->err, CG_NOMEM, "out of memory for an aligned copy of %zu bytes",
                            raw->len);
    cg_tensor_proto aligned;
    cg_init_proto_over(tp, raw, copy, &aligned);
    cg_status st = cg_value_from_proto_ex(&aligned, true, v, borrowed, b->err);
    if (st != CG_OK)
        return st;
    /* a value that copied the (still zero) buffer instead of borrowing it
     * gets the bytes in its own data */
    uint8_t *data = (*v)->tensor.data;
    if (!*borrowed || raw->len <= XNNG_COPY_AT_LOOKUP)
        memcpy(data, raw->data, raw->len);
    else
        *src = raw->data;
    return CG_OK;
}

/* Converts a Constant node's value attribute. */
static cg_status constant_node_value(xnng_build *b, const cg_node *p, cg_value **out,
                                     bool *borrowed, bool *ok)
{
    *ok = false;
    *out = NULL;
    *borrowed = false;
    const cg_attr *a = cg_node_attr(p, "value");
    if (a && a->t) {
        cg_status st = cg_value_from_proto_ex(a->t, true, out, borrowed, b->err);
        if (st == CG_OK)
            *ok = true;
        return st;
    }
    a = cg_node_attr(p, "value_float");
    if (a && (a->type == CG_ATTR_FLOAT || a->has_f)) {
        cg_status st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, 0, NULL, out, b->err);
        if (st != CG_OK)
            return st;
        *(float *)(*out)->tensor.data = a->f;
        *ok = true;
        return CG_OK;
    }
    a = cg_node_attr(p, "value_floats");
    if (a && a->floats_count) {
        int64_t dim = (int64_t)a->floats_count;
        cg_status st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, 1, &dim, out, b->err);
        if (st != CG_OK)
            return st;
        memcpy((*out)->tensor.data, a->floats, a->floats_count * sizeof(float));
        *ok = true;
        return CG_OK;
    }
    return CG_OK; /* integer/string forms: not float data, stays unfoldable */
}

/* Classifies value `name`: static (read at compile, *t set), dynamic, or
 * constant-but-unfoldable (why set). Hard errors only for memory/corrupt
 * data. */
static cg_status const_lookup(xnng_build *b, const char *name, int depth, xnng_kind *kind,
                              const cg_tensor **t, char *why, size_t why_len)
{
    *kind = XNNG_DYNAMIC;
    *t = NULL;
    for (size_t i = 0; i < b->const_count; i++)
        if (strcmp(b->consts[i].name, name) == 0) {
            *kind = XNNG_STATIC;
            *t = &b->consts[i].value->tensor;
            return CG_OK;
        }
    const cg_graph *g = b->graph;
    const cg_value_type *vt = type_of(b, name);
    bool type_const = vt && vt->is_const;
    const cg_tensor_proto *tp = cg_graph_initializer(g, name);
    if (tp && (!is_graph_input(g, name) || type_const)) {
        cg_value *v = NULL;
        const uint8_t *src = NULL;
        bool borrowed = false;
        cg_status st = initializer_value(b, tp, &v, &borrowed, &src);
        if (st != CG_OK) {
            cg_error_prefix(b->err, "xnnpack: initializer '%s': ", name);
            return st;
        }
        if ((st = consts_add(b, name, v, borrowed, false)) != CG_OK)
            return st;
        b->consts[b->const_count - 1].src = src;
        *kind = XNNG_STATIC;
        *t = &v->tensor;
        return CG_OK;
    }
    if (tp || is_graph_input(g, name))
        return CG_OK; /* an input the caller feeds */
    const cg_node *p = find_producer(g, name);
    if (!p)
        return CG_OK;
    bool default_domain = cg_domain_is_default(p->domain);
    if (default_domain && p->op_type && strcmp(p->op_type, "Constant") == 0) {
        cg_value *v = NULL;
        bool borrowed = false, ok = false;
        cg_status st = constant_node_value(b, p, &v, &borrowed, &ok);
        if (st != CG_OK)
            return st;
        if (!ok) {
            *kind = XNNG_UNFOLDABLE;
            snprintf(why, why_len, "'%s' is a Constant without float data", name);
            return CG_OK;
        }
        if ((st = consts_add(b, name, v, borrowed, false)) != CG_OK)
            return st;
        *kind = XNNG_STATIC;
        *t = &v->tensor;
        return CG_OK;
    }
    if (default_domain && p->op_type && strcmp(p->op_type, "Identity") == 0 &&
        p->input_count == 1 && p->inputs[0] && p->inputs[0][0] && depth < XNNG_IDENTITY_DEPTH) {
        cg_status st = const_lookup(b, p->inputs[0], depth + 1, kind, t, why, why_len);
        if (st != CG_OK || *kind != XNNG_STATIC)
            return st;
        /* remember under this name too, sharing the value */
        cg_value *shared = NULL;
        for (size_t i = 0; i < b->const_count; i++)
            if (&b->consts[i].value->tensor == *t)
                shared = b->consts[i].value;
        return consts_add(b, name, shared, false, true);
    }
    if (type_const) {
        *kind = XNNG_UNFOLDABLE;
        snprintf(why, why_len, "'%s' is a constant computed at run time by %s '%s' (only "
                 "initializers, Constant and Identity of them are read at compile)",
                 name, p->op_type ? p->op_type : "?", p->name ? p->name : "");
    }
    return CG_OK;
}

/* --- operands and outputs --------------------------------------------------------- */

typedef struct xnng_operand {
    const char *name;
    bool is_static;
    const cg_tensor *data; /* static only */
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
} xnng_operand;

/* The entry whose value op reads, or NULL. */
static xnng_const *const_of(xnng_build *b, const xnng_operand *op)
{
    for (size_t i = 0; i < b->const_count; i++)
        if (&b->consts[i].value->tensor == op->data && !b->consts[i].alias)
            return &b->consts[i];
    return NULL;
}

/* The data of static operand op, a misaligned initializer's aligned copy
 * filled now if it was not yet. */
static const void *static_data(xnng_build *b, const xnng_operand *op)
{
    xnng_const *c = const_of(b, op);
    if (c && c->src) {
        memcpy(c->value->tensor.data, c->src, cg_tensor_bytes(op->data));
        /* read through the copy from now on: the model's pages of these
         * bytes need not stay resident beside it */
        cg_mapping_drop_pages(c->src, cg_tensor_bytes(op->data));
        c->src = NULL;
    }
    return op->data->data;
}

/* Where static operand op's bytes can be read element by element
 * (load_f32): the model's misaligned bytes while its aligned copy is not
 * filled (a reordering reads them once, with no copy in between). */
static const uint8_t *static_bytes(xnng_build *b, const xnng_operand *op)
{
    xnng_const *c = const_of(b, op);
    return c && c->src ? c->src : (const uint8_t *)op->data->data;
}

/* After a reordering read op's bytes (static_bytes) into a transient
 * buffer: the model's pages of a misaligned source need not stay resident
 * until the runtime exists (a later read finds them in the file again). */
static void static_bytes_done(xnng_build *b, const xnng_operand *op)
{
    xnng_const *c = const_of(b, op);
    if (c && c->src)
        cg_mapping_drop_pages(c->src, cg_tensor_bytes(op->data));
}

static inline float load_f32(const uint8_t *p, int64_t i)
{
    float f;
    memcpy(&f, p + (size_t)i * sizeof f, sizeof f);
    return f;
}

static bool dims_positive(int rank, const int64_t *dims)
{
    for (int i = 0; i < rank; i++)
        if (dims[i] <= 0 || dims[i] > INT32_MAX)
            return false;
    return true;
}

static bool has_input(const cg_node *n, size_t i)
{
    return i < n->input_count && n->inputs[i] && n->inputs[i][0];
}

/* Reads input i of n. Dynamic operands need a known float32 type of rank
 * 1..6 with positive dims; static ones need float32 data when need_float. */
static cg_status operand(xnng_build *b, const cg_node *n, size_t i, bool need_float,
                         xnng_operand *op)
{
    memset(op, 0, sizeof *op);
    if (!has_input(n, i))
        return xnng_refuse(b, n, "input %zu is missing", i);
    op->name = n->inputs[i];
    xnng_kind kind;
    const cg_tensor *t;
    char why[XNNG_REASON_MAX] = "";
    cg_status st = const_lookup(b, op->name, 0, &kind, &t, why, sizeof why);
    if (st != CG_OK)
        return st;
    if (kind == XNNG_UNFOLDABLE)
        return xnng_refuse(b, n, "input %zu %s", i, why);
    char shape[160];
    if (kind == XNNG_STATIC) {
        op->is_static = true;
        op->data = t;
        op->dtype = t->dtype;
        op->rank = t->rank;
        memcpy(op->dims, t->dims, (size_t)t->rank * sizeof *t->dims);
        if (need_float && t->dtype != CG_DTYPE_FLOAT)
            return xnng_refuse(b, n, "constant input '%s' is %s; XNNPACK nodes here take "
                               "float32", op->name, cg_dtype_name(t->dtype));
        return CG_OK;
    }
    const cg_value_type *vt = type_of(b, op->name);
    if (!vt || !vt->known)
        return xnng_refuse(b, n, "type of input '%s' is unknown (no type environment entry)",
                           op->name);
    op->dtype = vt->dtype;
    op->rank = vt->rank;
    memcpy(op->dims, vt->dims, (size_t)vt->rank * sizeof *vt->dims);
    if (vt->dtype != CG_DTYPE_FLOAT)
        return xnng_refuse(b, n, "input '%s' is %s; the delegate runs float32 only", op->name,
                           cg_dtype_name(vt->dtype));
    cg_exec_format_shape(vt->rank, vt->dims, shape, sizeof shape);
    if (vt->rank < 1 || vt->rank > XNNG_MAX_DIMS)
        return xnng_refuse(b, n, "input '%s' has rank %d (shape %s); XNNPACK values take 1 to "
                           "%d dims here", op->name, vt->rank, shape, XNNG_MAX_DIMS);
    if (!dims_positive(vt->rank, vt->dims))
        return xnng_refuse(b, n, "input '%s' has shape %s; empty or oversized dims are not "
                           "delegated", op->name, shape);
    return CG_OK;
}

/* Output i of n: known float32 type of rank 1..6 with positive dims. */
static cg_status output_type(xnng_build *b, const cg_node *n, size_t i, const cg_value_type **out)
{
    *out = NULL;
    if (i >= n->output_count || !n->outputs[i] || !n->outputs[i][0])
        return xnng_refuse(b, n, "output %zu is missing", i);
    const cg_value_type *vt = type_of(b, n->outputs[i]);
    if (!vt || !vt->known)
        return xnng_refuse(b, n, "type of output '%s' is unknown", n->outputs[i]);
    char shape[160];
    cg_exec_format_shape(vt->rank, vt->dims, shape, sizeof shape);
    if (vt->dtype != CG_DTYPE_FLOAT)
        return xnng_refuse(b, n, "output '%s' is %s; the delegate runs float32 only",
                           n->outputs[i], cg_dtype_name(vt->dtype));
    if (vt->rank < 1 || vt->rank > XNNG_MAX_DIMS || !dims_positive(vt->rank, vt->dims))
        return xnng_refuse(b, n, "output '%s' has shape %s; XNNPACK values take 1 to %d "
                           "positive dims here", n->outputs[i], shape, XNNG_MAX_DIMS);
    *out = vt;
    return CG_OK;
}

/* Refuses nodes with more named outputs than the lowering produces. */
static cg_status only_outputs(xnng_build *b, const cg_node *n, size_t used)
{
    for (size_t i = used; i < n->output_count; i++)
        if (n->outputs[i] && n->outputs[i][0])
            return xnng_refuse(b, n, "output %zu '%s' is used; the XNNPACK node has %zu "
                               "output%s", i, n->outputs[i], used, used == 1 ? "" : "s");
    return CG_OK;
}

/* Constant subgraphs stay on the CPU: refuses when every data input is static. */
static cg_status not_all_static(xnng_build *b, const cg_node *n, const xnng_operand *ops,
                                size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!ops[i].is_static)
            return CG_OK;
    return xnng_refuse(b, n, "every input is constant; constant subgraphs are left to the CPU");
}

/* The prologue of the one-data-input lowerings: input 0 as a float
 * operand that is not constant (constant subgraphs stay on the CPU) and,
 * when out is given, the type of the node's only output. */
static cg_status runtime_input(xnng_build *b, const cg_node *n, xnng_operand *x,
                               const cg_value_type **out)
{
    cg_status st = operand(b, n, 0, true, x);
    if (st == CG_OK)
        st = not_all_static(b, n, x, 1);
    if (st == CG_OK && out && (st = output_type(b, n, 0, out)) == CG_OK)
        st = only_outputs(b, n, 1);
    return st;
}

static cg_status expect_shape(xnng_build *b, const cg_node *n, const cg_value_type *out, int rank,
                              const int64_t *dims)
{
    if (cg_shape_equal(out->rank, out->dims, rank, dims))
        return CG_OK;
    char want[160], got[160];
    cg_exec_format_shape(rank, dims, want, sizeof want);
    cg_exec_format_shape(out->rank, out->dims, got, sizeof got);
    return xnng_refuse(b, n, "XNNPACK would produce shape %s but output '%s' has shape %s",
                       want, n->outputs[0], got);
}

/* Rank-4 shapes whose NCHW and NHWC element orders coincide. */
static bool layout_trivial(int rank, const int64_t *d)
{
    return rank != 4 || d[1] == 1 || (d[2] == 1 && d[3] == 1);
}

static cg_status static_scalar(xnng_build *b, const cg_node *n, const xnng_operand *op,
                               const char *what, float *out)
{
    if (!op->is_static)
        return xnng_refuse(b, n, "%s '%s' must be a constant", what, op->name);
    if (op->data->numel != 1 || op->data->dtype != CG_DTYPE_FLOAT)
        return xnng_refuse(b, n, "%s '%s' must be one float32 value", what, op->name);
    *out = ((const float *)static_data(b, op))[0];
    return CG_OK;
}

/* --- defining values ------------------------------------------------------------------ */

static void xnn_dims(int rank, const int64_t *d, size_t *out)
{
    if (rank == 4) {
        out[0] = (size_t)d[0];
        out[1] = (size_t)d[2];
        out[2] = (size_t)d[3];
        out[3] = (size_t)d[1];
        return;
    }
    for (int i = 0; i < rank; i++)
        out[i] = (size_t)d[i];
}

static cg_status values_add(xnng_build *b, const char *name, uint32_t id, int rank,
                            const int64_t *dims)
{
    if (b->value_count == b->value_cap) {
        size_t cap = b->value_cap ? b->value_cap * 2 : 32;
        xnng_value *v = realloc(b->values, cap * sizeof *v);
        if (!v)
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory defining values");
        b->values = v;
        b->value_cap = cap;
    }
    xnng_value *v = &b->values[b->value_count++];
    v->name = name;
    v->id = id;
    v->rank = rank;
    memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    return CG_OK;
}

static const xnng_value *values_find(const xnng_build *b, const char *name)
{
    for (size_t i = b->value_count; i-- > 0;)
        if (b->values[i].name && strcmp(b->values[i].name, name) == 0)
            return &b->values[i];
    return NULL;
}

/* NCHW -> NHWC of one float tensor. */
static void nchw_to_nhwc(const float *src, float *dst, const int64_t *d)
{
    size_t N = (size_t)d[0], C = (size_t)d[1], HW = (size_t)(d[2] * d[3]);
    for (size_t nn = 0; nn < N; nn++)
        for (size_t c = 0; c < C; c++)
            for (size_t p = 0; p < HW; p++)
                dst[(nn * HW + p) * C + c] = src[(nn * C + c) * HW + p];
}

/* Defines static float32 data of ONNX shape (rank, dims) padded with leading
 * 1s to `rank_to`; rank-4 results are repacked to NHWC. With copy, the data
 * is copied into an owned buffer with XNNPACK's over-read margin (operands
 * of elementwise nodes are read by microkernels); without it, data is used
 * in place when no repack is needed (weights packed at runtime creation). */
static cg_status define_static(xnng_build *b, const cg_node *n, int rank, const int64_t *dims,
                               const float *data, int rank_to, bool copy, uint32_t *id)
{
    int64_t full[CG_MAX_RANK];
    int pad = rank_to - rank;
    for (int i = 0; i < rank_to; i++)
        full[i] = i < pad ? 1 : dims[i - pad];
    int64_t numel = 1;
    for (int i = 0; i < rank_to; i++)
        numel *= full[i]; /* bounded by the tensor's own element count */
    const float *use = data;
    if (copy || !layout_trivial(rank_to, full)) {
        float *buf = owned_floats(b, (size_t)numel);
        if (!buf)
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory repacking constants");
        if (layout_trivial(rank_to, full))
            memcpy(buf, data, (size_t)numel * sizeof(float));
        else
            nchw_to_nhwc(data, buf, full);
        use = buf;
    }
    size_t xd[XNNG_MAX_DIMS];
    xnn_dims(rank_to, full, xd);
    enum xnn_status s = xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, (size_t)rank_to,
                                                xd, use, XNN_INVALID_VALUE_ID, 0, id);
    return s == xnn_status_success ? CG_OK : xnng_fail_define(b, n, "xnn_define_tensor_value", s);
}

/* The id of a dynamic operand, or a new static value for a static one. */
static cg_status operand_id(xnng_build *b, const cg_node *n, const xnng_operand *op,
                            int rank_to, uint32_t *id)
{
    if (op->is_static)
        return define_static(b, n, op->rank, op->dims, static_data(b, op), rank_to, true, id);
    const xnng_value *v = values_find(b, op->name);
    if (!v)
        return cg_error_set(b->err, CG_INVALID, "xnnpack: %s '%s': input '%s' is neither a "
                            "partition input nor produced earlier in the partition",
                            n->op_type, n->name ? n->name : "", op->name);
    *id = v->id;
    return CG_OK;
}

/* Defines a value of ONNX shape (rank, dims) for output i of n: an
 * external output when it leaves the partition, internal otherwise. */
static cg_status define_output(xnng_build *b, const cg_node *n, size_t i, uint32_t *id)
{
    const cg_value_type *vt = type_of(b, n->outputs[i]);
    uint32_t ext = XNN_INVALID_VALUE_ID, flags = 0;
    for (size_t k = 0; k < b->ext_out_count; k++)
        if (strcmp(b->ext_out[k], n->outputs[i]) == 0) {
            ext = b->ext_out_first + (uint32_t)k;
            flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
        }
    size_t xd[XNNG_MAX_DIMS];
    xnn_dims(vt->rank, vt->dims, xd);
    enum xnn_status s = xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, (size_t)vt->rank,
                                                xd, NULL, ext, flags, id);
    if (s != xnn_status_success)
        return xnng_fail_define(b, n, "xnn_define_tensor_value", s);
    return values_add(b, n->outputs[i], *id, vt->rank, vt->dims);
}

static cg_status define_internal(xnng_build *b, const cg_node *n, int rank, const int64_t *dims,
                                 uint32_t *id)
{
    size_t xd[XNNG_MAX_DIMS];
    xnn_dims(rank, dims, xd);
    enum xnn_status s = xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, (size_t)rank, xd,
                                                NULL, XNN_INVALID_VALUE_ID, 0, id);
    return s == xnn_status_success ? CG_OK : xnng_fail_define(b, n, "xnn_define_tensor_value", s);
}

/* A static value definition (not counted as an XNNPACK node). */
#define XNNG_DEFINE_VALUE(b, n, call)                                                            \
    do {                                                                                         \
        enum xnn_status xs_ = (call);                                                            \
        if (xs_ != xnn_status_success)                                                           \
            return xnng_fail_define((b), (n), #call, xs_);                                       \
    } while (0)

/* An XNNPACK node definition (counted for the report). */
#define XNNG_DEFINE(b, n, call)                                                                  \
    do {                                                                                         \
        enum xnn_status xs_ = (call);                                                            \
        if (xs_ != xnn_status_success)                                                           \
            return xnng_fail_define((b), (n), #call, xs_);                                       \
        (b)->xnn_nodes++;                                                                        \
    } while (0)

/* --- unary elementwise ------------------------------------------------------------------ */

/* Input 0 dynamic float, output 0 of the same shape, one output. */
static cg_status unary_check(xnng_build *b, const cg_node *n, xnng_operand *x)
{
    cg_status st = operand(b, n, 0, true, x);
    if (st != CG_OK)
        return st;
    if ((st = not_all_static(b, n, x, 1)) != CG_OK)
        return st;
    const cg_value_type *out;
    if ((st = output_type(b, n, 0, &out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK)
        return st;
    return expect_shape(b, n, out, x->rank, x->dims);
}

/* Input and output ids for a unary node. */
static cg_status unary_ids(xnng_build *b, const cg_node *n, const xnng_operand *x, uint32_t *in,
                           uint32_t *out)
{
    cg_status st = operand_id(b, n, x, x->rank, in);
    return st != CG_OK ? st : define_output(b, n, 0, out);
}

static cg_status define_clamp(xnng_build *b, const cg_node *n, const xnng_operand *x, float lo,
                              float hi)
{
    uint32_t in, out;
    cg_status st = unary_ids(b, n, x, &in, &out);
    if (st != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_clamp(b->subgraph, lo, hi, in, out, 0));
    return CG_OK;
}

static cg_status lower_relu(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK || dry_run)
        return st;
    return define_clamp(b, n, &x, 0.0f, INFINITY);
}

static cg_status lower_clip(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK)
        return st;
    float lo = -INFINITY, hi = INFINITY;
    int64_t opset = cg_model_opset(b->model, "");
    if (opset < 0)
        opset = 11;
    if (opset < 11) {
        lo = cg_node_attr_float(n, "min", -FLT_MAX);
        hi = cg_node_attr_float(n, "max", FLT_MAX);
    } else {
        xnng_operand m;
        if (has_input(n, 1)) {
            if ((st = operand(b, n, 1, true, &m)) != CG_OK ||
                (st = static_scalar(b, n, &m, "min", &lo)) != CG_OK)
                return st;
        }
        if (has_input(n, 2)) {
            if ((st = operand(b, n, 2, true, &m)) != CG_OK ||
                (st = static_scalar(b, n, &m, "max", &hi)) != CG_OK)
                return st;
        }
    }
    if (isnan(lo) || isnan(hi) || !(lo < hi))
        return xnng_refuse(b, n, "bounds [%g, %g] are not an interval XNNPACK's clamp accepts",
                           (double)lo, (double)hi);
    if (dry_run)
        return CG_OK;
    return define_clamp(b, n, &x, lo, hi);
}

/* Unary ops that map to one xnn_define_<op>(subgraph, in, out, flags). */
#define XNNG_SIMPLE_UNARY(X)                                                                     \
    X(sigmoid, xnn_define_sigmoid)                                                               \
    X(hardswish, xnn_define_hardswish)                                                           \
    X(abs, xnn_define_abs)                                                                       \
    X(neg, xnn_define_negate)                                                                    \
    X(floor, xnn_define_floor)                                                                   \
    X(ceil, xnn_define_ceiling)                                                                  \
    X(round, xnn_define_bankers_rounding)                                                        \
    X(sqrt, xnn_define_square_root)

#define XNNG_UNARY_FN(name, define)                                                              \
    static cg_status lower_##name(xnng_build *b, const cg_node *n, bool dry_run)                 \
    {                                                                                            \
        xnng_operand x;                                                                          \
        uint32_t in, out;                                                                        \
        cg_status st = unary_check(b, n, &x);                                                    \
        if (st != CG_OK || dry_run)                                                              \
            return st;                                                                           \
        if ((st = unary_ids(b, n, &x, &in, &out)) != CG_OK)                                      \
            return st;                                                                           \
        XNNG_DEFINE(b, n, define(b->subgraph, in, out, 0));                                      \
        return CG_OK;                                                                            \
    }
XNNG_SIMPLE_UNARY(XNNG_UNARY_FN)
#undef XNNG_UNARY_FN

static cg_status lower_leaky_relu(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    uint32_t in, out;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK || dry_run)
        return st;
    if ((st = unary_ids(b, n, &x, &in, &out)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_leaky_relu(b->subgraph, cg_node_attr_float(n, "alpha", 0.01f), in, out,
                                            0));
    return CG_OK;
}

static cg_status lower_elu(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    uint32_t in, out;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK)
        return st;
    float alpha = cg_node_attr_float(n, "alpha", 1.0f);
    if (!(alpha > 0.0f) || isinf(alpha))
        return xnng_refuse(b, n, "alpha %g: XNNPACK's elu takes a positive finite alpha",
                           (double)alpha);
    if (dry_run)
        return CG_OK;
    if ((st = unary_ids(b, n, &x, &in, &out)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_elu(b->subgraph, alpha, in, out, 0));
    return CG_OK;
}

/* HardSigmoid = clamp(alpha * x + beta, 0, 1): multiply2, add2, clamp. */
static cg_status lower_hard_sigmoid(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK || dry_run)
        return st;
    float alpha = cg_node_attr_float(n, "alpha", 0.2f), beta = cg_node_attr_float(n, "beta", 0.5f);
    int64_t ones[CG_MAX_RANK];
    for (int i = 0; i < x.rank; i++)
        ones[i] = 1;
    uint32_t in, a_id, b_id, t1, t2, out;
    if ((st = operand_id(b, n, &x, x.rank, &in)) != CG_OK ||
        (st = define_static(b, n, 1, ones, &alpha, x.rank, true, &a_id)) != CG_OK ||
        (st = define_static(b, n, 1, ones, &beta, x.rank, true, &b_id)) != CG_OK ||
        (st = define_internal(b, n, x.rank, x.dims, &t1)) != CG_OK ||
        (st = define_internal(b, n, x.rank, x.dims, &t2)) != CG_OK ||
        (st = define_output(b, n, 0, &out)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, in, a_id, t1, 0));
    XNNG_DEFINE(b, n, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, t1, b_id, t2, 0));
    XNNG_DEFINE(b, n, xnn_define_clamp(b->subgraph, 0.0f, 1.0f, t2, out, 0));
    return CG_OK;
}

static cg_status lower_prelu(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x, slope;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK || (st = operand(b, n, 1, true, &slope)) != CG_OK)
        return st;
    if (x.rank != 4)
        return xnng_refuse(b, n, "input rank %d: XNNPACK's prelu takes 4-D NHWC input", x.rank);
    if (!slope.is_static)
        return xnng_refuse(b, n, "slope '%s' must be a constant (XNNPACK reads it when the "
                           "operator is created)", slope.name);
    int64_t c = x.dims[1];
    /* per-channel: the slope broadcast to 4-D is [1, C, 1, 1] */
    bool per_channel = slope.data->numel == c && slope.rank <= 3 && slope.rank >= 1 &&
                       slope.dims[0] == c;
    for (int i = 1; per_channel && i < slope.rank; i++)
        per_channel = slope.dims[i] == 1;
    if (slope.rank == 4)
        per_channel = slope.data->numel == c && slope.dims[1] == c;
    if (!per_channel && slope.data->numel != 1) {
        char sh[160];
        cg_exec_format_shape(slope.rank, slope.dims, sh, sizeof sh);
        return xnng_refuse(b, n, "slope shape %s: XNNPACK's prelu takes one slope per channel "
                           "(C=%lld) or a single slope", sh, (long long)c);
    }
    if (dry_run)
        return CG_OK;
    const float *src = static_data(b, &slope);
    float *buf = owned_floats(b, (size_t)c);
    if (!buf)
        return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory repacking PRelu slope");
    for (int64_t i = 0; i < c; i++)
        buf[i] = slope.data->numel == 1 ? src[0] : src[i];
    uint32_t in, sid, out;
    size_t sd = (size_t)c;
    if ((st = operand_id(b, n, &x, 4, &in)) != CG_OK)
        return st;
    XNNG_DEFINE_VALUE(b, n, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 1, &sd, buf,
                                              XNN_INVALID_VALUE_ID, 0, &sid));
    if ((st = define_output(b, n, 0, &out)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_prelu(b->subgraph, in, sid, out, 0));
    return CG_OK;
}

static cg_status lower_softmax(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    cg_status st = unary_check(b, n, &x);
    if (st != CG_OK)
        return st;
    int64_t opset = cg_model_opset(b->model, "");
    if (opset < 0)
        opset = 13;
    int64_t axis = cg_node_attr_int(n, "axis", opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += x.rank;
    if (axis != x.rank - 1)
        return xnng_refuse(b, n, "axis %lld of a rank-%d input: XNNPACK's softmax normalizes "
                           "the last axis only", (long long)cg_node_attr_int(n, "axis", opset >= 13 ? -1 : 1),
                           x.rank);
    if (!layout_trivial(x.rank, x.dims))
        return xnng_refuse(b, n, "rank-4 input is NHWC inside XNNPACK, so its last axis is "
                           "channels, not W");
    if (dry_run)
        return CG_OK;
    uint32_t in, out;
    if ((st = unary_ids(b, n, &x, &in, &out)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_softmax(b->subgraph, in, out, 0));
    return CG_OK;
}

/* Reshape, Flatten, Squeeze, Unsqueeze and non-constant Identity: the
 * output shape comes from the type environment (static); the op's shape
 * or axes input must be constant so it cannot change between runs. */
static cg_status lower_reshape(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    cg_status st = runtime_input(b, n, &x, NULL);
    if (st != CG_OK)
        return st;
    for (size_t i = 1; i < n->input_count; i++) {
        if (!has_input(n, i))
            continue;
        xnng_operand s;
        if ((st = operand(b, n, i, false, &s)) != CG_OK)
            return st;
        if (!s.is_static)
            return xnng_refuse(b, n, "input %zu '%s' is computed at run time; XNNPACK's "
                               "static_reshape needs the shape at compile", i, s.name);
    }
    const cg_value_type *out;
    if ((st = output_type(b, n, 0, &out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK)
        return st;
    int64_t ni = 1, no = 1;
    for (int i = 0; i < x.rank; i++)
        ni *= x.dims[i];
    for (int i = 0; i < out->rank; i++)
        no *= out->dims[i];
    char si[160], so[160];
    cg_exec_format_shape(x.rank, x.dims, si, sizeof si);
    cg_exec_format_shape(out->rank, out->dims, so, sizeof so);
    if (ni != no)
        return xnng_refuse(b, n, "%s -> %s changes the element count", si, so);
    if (!cg_shape_equal(x.rank, x.dims, out->rank, out->dims) &&
        (!layout_trivial(x.rank, x.dims) || !layout_trivial(out->rank, out->dims)))
        return xnng_refuse(b, n, "%s -> %s: a rank-4 side is NHWC inside XNNPACK and its element "
                           "order differs from NCHW (needs a transpose, which this XNNPACK "
                           "lacks)", si, so);
    if (dry_run)
        return CG_OK;
    uint32_t in, oid;
    size_t xd[XNNG_MAX_DIMS];
    xnn_dims(out->rank, out->dims, xd);
    if ((st = operand_id(b, n, &x, x.rank, &in)) != CG_OK ||
        (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_static_reshape(b->subgraph, (size_t)out->rank, xd, in, oid, 0));
    return CG_OK;
}

/* --- binary elementwise ------------------------------------------------------------------ */

typedef enum xnng_binary_kind { XNNG_ADD, XNNG_SUB, XNNG_MUL, XNNG_DIV, XNNG_MAX, XNNG_MIN } xnng_binary_kind;

static cg_status lower_binary(xnng_build *b, const cg_node *n, bool dry_run, xnng_binary_kind kind)
{
    xnng_operand ab[2];
    cg_status st;
    if (n->input_count != 2)
        return xnng_refuse(b, n, "%zu inputs; XNNPACK's binary nodes take exactly 2",
                           n->input_count);
    if ((st = operand(b, n, 0, true, &ab[0])) != CG_OK ||
        (st = operand(b, n, 1, true, &ab[1])) != CG_OK ||
        (st = not_all_static(b, n, ab, 2)) != CG_OK)
        return st;
    if (cg_node_attr_int(n, "broadcast", 0) != 0)
        return xnng_refuse(b, n, "legacy broadcast attribute (opset < 7) is not delegated");
    const cg_value_type *out;
    if ((st = output_type(b, n, 0, &out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK)
        return st;
    int rr;
    int64_t rd[CG_MAX_RANK];
    if (!cg_broadcast_shapes(ab[0].rank, ab[0].dims, ab[1].rank, ab[1].dims, &rr, rd))
        return xnng_refuse(b, n, "input shapes do not broadcast");
    if ((st = expect_shape(b, n, out, rr, rd)) != CG_OK)
        return st;
    for (int i = 0; i < 2; i++) {
        if (ab[i].is_static) {
            if (ab[i].rank > rr || rr > XNNG_MAX_DIMS)
                return xnng_refuse(b, n, "constant operand '%s' of rank %d in a rank-%d result",
                                   ab[i].name, ab[i].rank, rr);
            continue;
        }
        /* a dynamic rank-4 value is NHWC: it broadcasts correctly only
         * against another rank-4 value or a constant we repack */
        if ((ab[i].rank == 4) != (rr == 4))
            return xnng_refuse(b, n, "dynamic operand '%s' of rank %d in a rank-%d result: a "
                               "rank-4 side is NHWC inside XNNPACK, so broadcasting across "
                               "ranks would pair the wrong axes", ab[i].name, ab[i].rank, rr);
    }
    if (dry_run)
        return CG_OK;
    uint32_t ia, ib, oid;
    if ((st = operand_id(b, n, &ab[0], ab[0].is_static || rr == 4 ? rr : ab[0].rank, &ia)) !=
            CG_OK ||
        (st = operand_id(b, n, &ab[1], ab[1].is_static || rr == 4 ? rr : ab[1].rank, &ib)) !=
            CG_OK ||
        (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    switch (kind) {
    case XNNG_ADD:
        XNNG_DEFINE(b, n, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, ia, ib, oid, 0));
        break;
    case XNNG_SUB:
        XNNG_DEFINE(b, n, xnn_define_subtract(b->subgraph, -INFINITY, INFINITY, ia, ib, oid, 0));
        break;
    case XNNG_MUL:
        XNNG_DEFINE(b, n, xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, ia, ib, oid, 0));
        break;
    case XNNG_DIV:
        XNNG_DEFINE(b, n, xnn_define_divide(b->subgraph, -INFINITY, INFINITY, ia, ib, oid, 0));
        break;
    case XNNG_MAX:
        XNNG_DEFINE(b, n, xnn_define_maximum2(b->subgraph, ia, ib, oid, 0));
        break;
    case XNNG_MIN:
        XNNG_DEFINE(b, n, xnn_define_minimum2(b->subgraph, ia, ib, oid, 0));
        break;
    }
    return CG_OK;
}

#define XNNG_BINARY(X) X(add, XNNG_ADD) X(sub, XNNG_SUB) X(mul, XNNG_MUL) X(div, XNNG_DIV) \
    X(max, XNNG_MAX) X(min, XNNG_MIN)
#define XNNG_BINARY_FN(name, kind)                                                               \
    static cg_status lower_##name(xnng_build *b, const cg_node *n, bool dry_run)                 \
    {                                                                                            \
        return lower_binary(b, n, dry_run, kind);                                                \
    }
XNNG_BINARY(XNNG_BINARY_FN)
#undef XNNG_BINARY_FN

/* BatchNormalization (inference) = x * scale' + shift', per channel (dim 1). */
static cg_status lower_batchnorm(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x, p[4];
    cg_status st = runtime_input(b, n, &x, NULL);
    if (st != CG_OK)
        return st;
    static const char *const what[4] = {"scale", "B", "mean", "var"};
    for (size_t i = 0; i < 4; i++) {
        if ((st = operand(b, n, i + 1, true, &p[i])) != CG_OK)
            return st;
        if (!p[i].is_static)
            return xnng_refuse(b, n, "%s '%s' must be a constant (folded into a per-channel "
                               "multiply and add at compile)", what[i], p[i].name);
    }
    if (cg_node_attr_int(n, "training_mode", 0) != 0)
        return xnng_refuse(b, n, "training_mode=1 is not delegated");
    const cg_value_type *out;
    if ((st = output_type(b, n, 0, &out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK ||
        (st = expect_shape(b, n, out, x.rank, x.dims)) != CG_OK)
        return st;
    if (x.rank < 2)
        return xnng_refuse(b, n, "input rank %d: needs a channel dim", x.rank);
    int64_t c = x.dims[1];
    for (size_t i = 0; i < 4; i++)
        if (p[i].data->numel != c)
            return xnng_refuse(b, n, "%s has %lld values for %lld channels", what[i],
                               (long long)p[i].data->numel, (long long)c);
    if (dry_run)
        return CG_OK;
    float eps = cg_node_attr_float(n, "epsilon", 1e-5f);
    float *scale = owned_floats(b, (size_t)c), *shift = owned_floats(b, (size_t)c);
    if (!scale || !shift)
        return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory folding BatchNormalization");
    const float *s = static_data(b, &p[0]), *bb = static_data(b, &p[1]),
                *m = static_data(b, &p[2]), *v = static_data(b, &p[3]);
    for (int64_t i = 0; i < c; i++) {
        /* double keeps the fold at least as accurate as the reference kernel */
        double k = (double)s[i] / sqrt((double)v[i] + (double)eps);
        scale[i] = (float)k;
        shift[i] = (float)((double)bb[i] - (double)m[i] * k);
    }
    int64_t cd[CG_MAX_RANK];
    for (int i = 0; i < x.rank; i++)
        cd[i] = i == 1 ? c : 1;
    uint32_t in, sid, hid, tmp, oid;
    if ((st = operand_id(b, n, &x, x.rank, &in)) != CG_OK ||
        (st = define_static(b, n, x.rank, cd, scale, x.rank, false, &sid)) != CG_OK ||
        (st = define_static(b, n, x.rank, cd, shift, x.rank, false, &hid)) != CG_OK ||
        (st = define_internal(b, n, x.rank, x.dims, &tmp)) != CG_OK ||
        (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_multiply2(b->subgraph, -INFINITY, INFINITY, in, sid, tmp, 0));
    XNNG_DEFINE(b, n, xnn_define_add2(b->subgraph, -INFINITY, INFINITY, tmp, hid, oid, 0));
    return CG_OK;
}

/* --- fully connected ------------------------------------------------------------------------ */

/* Gemm with constant B (and C) on a 2-D A, and MatMul with a constant 2-D B
 * on a rank-2/3 A: XNNPACK's fully_connected. */
static cg_status lower_fc(xnng_build *b, const cg_node *n, bool dry_run, bool gemm)
{
    xnng_operand a, w, c;
    bool has_c = gemm && has_input(n, 2);
    cg_status st;
    if ((st = operand(b, n, 0, true, &a)) != CG_OK || (st = operand(b, n, 1, true, &w)) != CG_OK)
        return st;
    if (has_c && (st = operand(b, n, 2, true, &c)) != CG_OK)
        return st;
    if ((st = not_all_static(b, n, &a, 1)) != CG_OK)
        return st;
    const cg_value_type *out;
    if ((st = output_type(b, n, 0, &out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK)
        return st;
    if (!w.is_static)
        return xnng_refuse(b, n, "B '%s' is computed at run time; XNNPACK's fully_connected "
                           "needs constant weights", w.name);
    if (w.rank != 2)
        return xnng_refuse(b, n, "B has rank %d; fully_connected takes 2-D weights", w.rank);
    bool trans_b = gemm && cg_node_attr_int(n, "transB", 0) != 0;
    float alpha = gemm ? cg_node_attr_float(n, "alpha", 1.0f) : 1.0f;
    float beta = gemm ? cg_node_attr_float(n, "beta", 1.0f) : 1.0f;
    if (gemm && cg_node_attr_int(n, "transA", 0) != 0)
        return xnng_refuse(b, n, "transA=1 is not delegated (fully_connected reads A row-major)");
    if (gemm ? a.rank != 2 : (a.rank != 2 && a.rank != 3))
        return xnng_refuse(b, n, "A has rank %d; delegated for rank %s", a.rank,
                           gemm ? "2" : "2 or 3 (rank 4 is NHWC inside XNNPACK)");
    int64_t k = trans_b ? w.dims[1] : w.dims[0], nout = trans_b ? w.dims[0] : w.dims[1];
    if (a.dims[a.rank - 1] != k)
        return xnng_refuse(b, n, "A's last dim %lld does not match K=%lld of B",
                           (long long)a.dims[a.rank - 1], (long long)k);
    int64_t od[CG_MAX_RANK];
    memcpy(od, a.dims, (size_t)a.rank * sizeof *od);
    od[a.rank - 1] = nout;
    if ((st = expect_shape(b, n, out, a.rank, od)) != CG_OK)
        return st;
    if (has_c) {
        if (!c.is_static)
            return xnng_refuse(b, n, "C '%s' is computed at run time; fully_connected takes a "
                               "constant bias", c.name);
        bool row = c.data->numel == nout && (c.rank == 1 || (c.rank == 2 && c.dims[0] == 1));
        if (!row && c.data->numel != 1) {
            char sh[160];
            cg_exec_format_shape(c.rank, c.dims, sh, sizeof sh);
            return xnng_refuse(b, n, "C shape %s: fully_connected takes a bias of N=%lld values "
                               "(or one value)", sh, (long long)nout);
        }
    }
    if (dry_run)
        return CG_OK;
    /* weights: [N, K] as XNNPACK wants, or [K, N] with TRANSPOSE_WEIGHTS;
     * in place unless alpha scales them */
    const float *wdata;
    if (alpha != 1.0f) {
        float *scaled = transient_floats(b, (size_t)w.data->numel);
        if (!scaled)
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory scaling Gemm weights");
        const uint8_t *wb = static_bytes(b, &w);
        for (int64_t i = 0; i < w.data->numel; i++)
            scaled[i] = alpha * load_f32(wb, i);
        static_bytes_done(b, &w);
        wdata = scaled;
        b->weights_repacked++;
    } else {
        wdata = static_data(b, &w);
        b->weights_in_place++;
    }
    uint32_t in, wid, bid = XNN_INVALID_VALUE_ID, oid;
    size_t wd[2] = {(size_t)w.dims[0], (size_t)w.dims[1]};
    if ((st = operand_id(b, n, &a, a.rank, &in)) != CG_OK)
        return st;
    XNNG_DEFINE_VALUE(b, n, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 2, wd, wdata,
                                              XNN_INVALID_VALUE_ID, 0, &wid));
    if (has_c) {
        const float *cdata = static_data(b, &c);
        if (beta != 1.0f || c.data->numel != nout) {
            float *bias = transient_floats(b, (size_t)nout);
            if (!bias)
                return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory for Gemm bias");
            for (int64_t i = 0; i < nout; i++)
                bias[i] = beta * cdata[c.data->numel == 1 ? 0 : i];
            cdata = bias;
        }
        size_t bd = (size_t)nout;
        XNNG_DEFINE_VALUE(b, n, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 1, &bd, cdata,
                                                  XNN_INVALID_VALUE_ID, 0, &bid));
    }
    if ((st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_fully_connected(b->subgraph, -INFINITY, INFINITY, in, wid, bid,
                                                 oid, trans_b ? 0 : XNN_FLAG_TRANSPOSE_WEIGHTS));
    return CG_OK;
}

static cg_status lower_gemm(xnng_build *b, const cg_node *n, bool dry_run)
{
    return lower_fc(b, n, dry_run, true);
}

static cg_status lower_matmul(xnng_build *b, const cg_node *n, bool dry_run)
{
    return lower_fc(b, n, dry_run, false);
}

/* --- spatial ops ----------------------------------------------------------------------------- */

/* Window geometry of a 2-D conv/pool node. */
typedef struct xnng_window {
    int64_t k[2], s[2], d[2];
    int64_t pad[4]; /* top, left, bottom, right */
    int64_t out[2];
} xnng_window;

/* Reads strides/dilations/pads/auto_pad for input spatial dims in[2] and
 * kernel k[2]; computes XNNPACK's output size (floor). */
static cg_status window_read(xnng_build *b, const cg_node *n, const int64_t *in, const int64_t *k,
                             bool has_dilations, xnng_window *w)
{
    size_t cnt;
    const int64_t *v;
    w->k[0] = k[0];
    w->k[1] = k[1];
    w->s[0] = w->s[1] = w->d[0] = w->d[1] = 1;
    memset(w->pad, 0, sizeof w->pad);
    if ((v = cg_node_attr_ints(n, "strides", &cnt)) != NULL) {
        if (cnt != 2)
            return xnng_refuse(b, n, "strides has %zu values; 2-D only", cnt);
        w->s[0] = v[0];
        w->s[1] = v[1];
    }
    if ((v = cg_node_attr_ints(n, "dilations", &cnt)) != NULL) {
        if (cnt != 2)
            return xnng_refuse(b, n, "dilations has %zu values; 2-D only", cnt);
        if (!has_dilations && (v[0] != 1 || v[1] != 1))
            return xnng_refuse(b, n, "dilations are not supported by this XNNPACK node");
        w->d[0] = v[0];
        w->d[1] = v[1];
    }
    for (int i = 0; i < 2; i++)
        if (w->s[i] < 1 || w->s[i] > INT32_MAX || w->d[i] < 1 || w->d[i] > INT32_MAX ||
            w->k[i] < 1 || w->k[i] > INT32_MAX)
            return xnng_refuse(b, n, "kernel %lldx%lld, strides %lldx%lld, dilations %lldx%lld "
                               "out of range", (long long)w->k[0], (long long)w->k[1],
                               (long long)w->s[0], (long long)w->s[1], (long long)w->d[0],
                               (long long)w->d[1]);
    char ap[32];
    attr_str_copy(n, "auto_pad", "NOTSET", ap, sizeof ap);
    bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
    if (strcmp(ap, "NOTSET") == 0) {
        if ((v = cg_node_attr_ints(n, "pads", &cnt)) != NULL) {
            if (cnt != 4)
                return xnng_refuse(b, n, "pads has %zu values; 2-D only", cnt);
            w->pad[0] = v[0]; /* x1_begin = top */
            w->pad[1] = v[1]; /* x2_begin = left */
            w->pad[2] = v[2];
            w->pad[3] = v[3];
        }
    } else if (same_upper || same_lower) {
        for (int i = 0; i < 2; i++) {
            int64_t o = (in[i] + w->s[i] - 1) / w->s[i];
            int64_t total = (o - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in[i];
            if (total < 0)
                total = 0;
            int64_t small = total / 2, big = total - small;
            w->pad[i] = same_upper ? small : big;
            w->pad[i + 2] = same_upper ? big : small;
        }
    } else if (strcmp(ap, "VALID") != 0) {
        return xnng_refuse(b, n, "auto_pad '%s' is not an ONNX value", ap);
    }
    for (int i = 0; i < 4; i++)
        if (w->pad[i] < 0 || w->pad[i] > INT32_MAX)
            return xnng_refuse(b, n, "pad %lld out of range", (long long)w->pad[i]);
    for (int i = 0; i < 2; i++) {
        int64_t span = (w->k[i] - 1) * w->d[i] + 1, padded = in[i] + w->pad[i] + w->pad[i + 2];
        if (padded < span)
            return xnng_refuse(b, n, "window %lld larger than the padded input %lld",
                               (long long)span, (long long)padded);
        w->out[i] = (padded - span) / w->s[i] + 1;
    }
    return CG_OK;
}

static bool fits_u32(int64_t v) { return v >= 0 && v <= INT32_MAX; }

/* Defines a static [m, kh, kw, cg] filter and its [m] bias (zeros when the
 * node has none), shared by Conv and ConvTranspose. */
static cg_status define_filter_bias(xnng_build *b, const cg_node *n, int64_t m, int64_t kh,
                                    int64_t kw, int64_t cg, const float *wdata,
                                    const float *bdata, uint32_t *wid, uint32_t *bid)
{
    if (!bdata) {
        float *zeros = transient_floats(b, (size_t)m);
        if (!zeros)
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory for a zero bias");
        bdata = zeros;
    }
    size_t wd[4] = {(size_t)m, (size_t)kh, (size_t)kw, (size_t)cg}, bd = (size_t)m;
    XNNG_DEFINE_VALUE(b, n, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 4, wd, wdata,
                                              XNN_INVALID_VALUE_ID, 0, wid));
    XNNG_DEFINE_VALUE(b, n, xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, 1, &bd, bdata,
                                              XNN_INVALID_VALUE_ID, 0, bid));
    return CG_OK;
}

/* Conv and ConvTranspose as XNNPACK takes them: X at run time and 4-D,
 * constant 4-D weights, a constant bias when there is one, one output;
 * xnn_op names XNNPACK's node in the reasons. */
typedef struct xnng_conv {
    xnng_operand x, w, bias;
    bool has_bias;
    const cg_value_type *out;
    int64_t group;
} xnng_conv;

static cg_status conv_begin(xnng_build *b, const cg_node *n, const char *xnn_op, xnng_conv *c)
{
    cg_status st;
    c->has_bias = has_input(n, 2);
    if ((st = operand(b, n, 0, true, &c->x)) != CG_OK ||
        (st = operand(b, n, 1, true, &c->w)) != CG_OK)
        return st;
    if (c->has_bias && (st = operand(b, n, 2, true, &c->bias)) != CG_OK)
        return st;
    if ((st = not_all_static(b, n, &c->x, 1)) != CG_OK)
        return st;
    if ((st = output_type(b, n, 0, &c->out)) != CG_OK || (st = only_outputs(b, n, 1)) != CG_OK)
        return st;
    if (c->x.rank != 4)
        return xnng_refuse(b, n, "input rank %d: XNNPACK's %s is 2-D only", c->x.rank, xnn_op);
    if (!c->w.is_static)
        return xnng_refuse(b, n, "weights '%s' are computed at run time; %s needs constant "
                           "filters", c->w.name, xnn_op);
    if (c->w.rank != 4)
        return xnng_refuse(b, n, "weights have rank %d; expected 4", c->w.rank);
    if (c->has_bias && !c->bias.is_static)
        return xnng_refuse(b, n, "bias '%s' is computed at run time; %s needs a constant bias",
                           c->bias.name, xnn_op);
    c->group = cg_node_attr_int(n, "group", 1);
    return CG_OK;
}

/* A bias of m values, when there is one. */
static cg_status conv_bias_count(xnng_build *b, const cg_node *n, const xnng_conv *c, int64_t m)
{
    if (c->has_bias && c->bias.data->numel != m)
        return xnng_refuse(b, n, "bias has %lld values for %lld output channels",
                           (long long)c->bias.data->numel, (long long)m);
    return CG_OK;
}

/* The ids of X, the repacked filter [m, kh, kw, cg] with the bias, and the
 * output. */
static cg_status conv_ids(xnng_build *b, const cg_node *n, xnng_conv *c, int64_t m, int64_t kh,
                          int64_t kw, int64_t cg, const float *wdata, uint32_t ids[4])
{
    cg_status st;
    const float *bdata = c->has_bias ? static_data(b, &c->bias) : NULL;
    if ((st = operand_id(b, n, &c->x, 4, &ids[0])) != CG_OK ||
        (st = define_filter_bias(b, n, m, kh, kw, cg, wdata, bdata, &ids[1], &ids[2])) != CG_OK)
        return st;
    return define_output(b, n, 0, &ids[3]);
}

static cg_status lower_conv(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_conv cv;
    cg_status st = conv_begin(b, n, "convolution_2d", &cv);
    if (st != CG_OK)
        return st;
    const xnng_operand x = cv.x, w = cv.w;
    int64_t group = cv.group;
    int64_t c = x.dims[1], m = w.dims[0], cg = w.dims[1];
    if (group < 1 || c % group != 0 || c / group != cg || m % group != 0)
        return xnng_refuse(b, n, "group %lld with %lld input channels and weights [%lld,%lld,..] "
                           "is inconsistent", (long long)group, (long long)c, (long long)m,
                           (long long)cg);
    if ((st = conv_bias_count(b, n, &cv, m)) != CG_OK)
        return st;
    size_t cnt;
    const int64_t *ks = cg_node_attr_ints(n, "kernel_shape", &cnt);
    if (ks && (cnt != 2 || ks[0] != w.dims[2] || ks[1] != w.dims[3]))
        return xnng_refuse(b, n, "kernel_shape disagrees with the weights");
    xnng_window win;
    if ((st = window_read(b, n, x.dims + 2, w.dims + 2, true, &win)) != CG_OK)
        return st;
    int64_t od[4] = {x.dims[0], m, win.out[0], win.out[1]};
    if ((st = expect_shape(b, n, cv.out, 4, od)) != CG_OK)
        return st;
    if (!fits_u32(group) || !fits_u32(c) || !fits_u32(m))
        return xnng_refuse(b, n, "channel counts out of range");
    if (dry_run)
        return CG_OK;
    /* OIHW -> OHWI; the orders coincide for 1x1 kernels and one input
     * channel per group (depthwise), where the initializer is used in place */
    const float *wdata;
    int64_t kh = w.dims[2], kw = w.dims[3];
    if (kh * kw != 1 && cg != 1) {
        float *buf = transient_floats(b, (size_t)w.data->numel);
        if (!buf)
            return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory repacking weights");
        const uint8_t *wsrc = static_bytes(b, &w);
        for (int64_t o = 0; o < m; o++)
            for (int64_t i = 0; i < cg; i++)
                for (int64_t y = 0; y < kh; y++)
                    for (int64_t xx = 0; xx < kw; xx++)
                        buf[((o * kh + y) * kw + xx) * cg + i] =
                            load_f32(wsrc, ((o * cg + i) * kh + y) * kw + xx);
        static_bytes_done(b, &w);
        wdata = buf;
        b->weights_repacked++;
    } else {
        wdata = static_data(b, &w);
        b->weights_in_place++;
    }
    uint32_t id[4];
    if ((st = conv_ids(b, n, &cv, m, kh, kw, cg, wdata, id)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_convolution_2d(
                          b->subgraph, (uint32_t)win.pad[0], (uint32_t)win.pad[3],
                          (uint32_t)win.pad[2], (uint32_t)win.pad[1], (uint32_t)kh, (uint32_t)kw,
                          (uint32_t)win.s[0], (uint32_t)win.s[1], (uint32_t)win.d[0],
                          (uint32_t)win.d[1], (uint32_t)group, (size_t)cg, (size_t)(m / group),
                          -INFINITY, INFINITY, id[0], id[1], id[2], id[3], 0));
    return CG_OK;
}

static cg_status lower_conv_transpose(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_conv cv;
    cg_status st = conv_begin(b, n, "deconvolution_2d", &cv);
    if (st != CG_OK)
        return st;
    const xnng_operand x = cv.x, w = cv.w;
    int64_t group = cv.group;
    int64_t c = x.dims[1], mg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
    if (group < 1 || w.dims[0] != c || c % group != 0)
        return xnng_refuse(b, n, "group %lld with %lld input channels and weights [%lld,..] is "
                           "inconsistent", (long long)group, (long long)c, (long long)w.dims[0]);
    int64_t m = mg * group, cg = c / group;
    if ((st = conv_bias_count(b, n, &cv, m)) != CG_OK)
        return st;
    if (cg_node_attr(n, "output_shape"))
        return xnng_refuse(b, n, "output_shape is not delegated (give pads and output_padding)");
    char ap[32];
    attr_str_copy(n, "auto_pad", "NOTSET", ap, sizeof ap);
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
        return xnng_refuse(b, n, "auto_pad '%s' is not delegated for ConvTranspose", ap);
    size_t cnt;
    const int64_t *v;
    int64_t s[2] = {1, 1}, d[2] = {1, 1}, pad[4] = {0, 0, 0, 0}, adj[2] = {0, 0};
    if ((v = cg_node_attr_ints(n, "strides", &cnt)) != NULL) {
        if (cnt != 2)
            return xnng_refuse(b, n, "strides has %zu values; 2-D only", cnt);
        s[0] = v[0];
        s[1] = v[1];
    }
    if ((v = cg_node_attr_ints(n, "dilations", &cnt)) != NULL) {
        if (cnt != 2)
            return xnng_refuse(b, n, "dilations has %zu values; 2-D only", cnt);
        d[0] = v[0];
        d[1] = v[1];
    }
    if (strcmp(ap, "NOTSET") == 0 && (v = cg_node_attr_ints(n, "pads", &cnt)) != NULL) {
        if (cnt != 4)
            return xnng_refuse(b, n, "pads has %zu values; 2-D only", cnt);
        memcpy(pad, v, sizeof pad);
    }
    if ((v = cg_node_attr_ints(n, "output_padding", &cnt)) != NULL) {
        if (cnt != 2)
            return xnng_refuse(b, n, "output_padding has %zu values; 2-D only", cnt);
        adj[0] = v[0];
        adj[1] = v[1];
    }
    int64_t od[4] = {x.dims[0], m, 0, 0};
    for (int i = 0; i < 2; i++) {
        if (s[i] < 1 || d[i] < 1 || !fits_u32(s[i]) || !fits_u32(d[i]) || !fits_u32(pad[i]) ||
            !fits_u32(pad[i + 2]) || adj[i] < 0 || adj[i] >= s[i])
            return xnng_refuse(b, n, "strides/dilations/pads/output_padding out of the range "
                               "deconvolution_2d takes (output_padding must be < stride)");
        od[2 + i] = s[i] * (x.dims[2 + i] - 1) + adj[i] + (( i ? kw : kh) - 1) * d[i] + 1 -
                    pad[i] - pad[i + 2];
    }
    if ((st = expect_shape(b, n, cv.out, 4, od)) != CG_OK)
        return st;
    if (dry_run)
        return CG_OK;
    /* [C, M/g, kh, kw] -> [g * M/g, kh, kw, C/g] */
    const uint8_t *wsrc = static_bytes(b, &w);
    float *wbuf = transient_floats(b, (size_t)w.data->numel);
    if (!wbuf)
        return cg_error_set(b->err, CG_NOMEM, "xnnpack: out of memory repacking weights");
    for (int64_t gi = 0; gi < group; gi++)
        for (int64_t o = 0; o < mg; o++)
            for (int64_t i = 0; i < cg; i++)
                for (int64_t y = 0; y < kh; y++)
                    for (int64_t xx = 0; xx < kw; xx++)
                        wbuf[(((gi * mg + o) * kh + y) * kw + xx) * cg + i] =
                            load_f32(wsrc, (((gi * cg + i) * mg + o) * kh + y) * kw + xx);
    static_bytes_done(b, &w);
    b->weights_repacked++;
    uint32_t id[4];
    if ((st = conv_ids(b, n, &cv, m, kh, kw, cg, wbuf, id)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_deconvolution_2d(
                          b->subgraph, (uint32_t)pad[0], (uint32_t)pad[3], (uint32_t)pad[2],
                          (uint32_t)pad[1], (uint32_t)adj[0], (uint32_t)adj[1], (uint32_t)kh,
                          (uint32_t)kw, (uint32_t)s[0], (uint32_t)s[1], (uint32_t)d[0],
                          (uint32_t)d[1], (uint32_t)group, (size_t)cg, (size_t)mg, -INFINITY,
                          INFINITY, id[0], id[1], id[2], id[3], 0));
    return CG_OK;
}

/* MaxPool / AveragePool / GlobalMaxPool (as a max pool over the whole plane). */
typedef enum xnng_pool_kind { XNNG_POOL_MAX, XNNG_POOL_AVG, XNNG_POOL_GLOBAL_MAX } xnng_pool_kind;

static cg_status lower_pool(xnng_build *b, const cg_node *n, bool dry_run, xnng_pool_kind kind)
{
    xnng_operand x;
    const cg_value_type *out;
    cg_status st = runtime_input(b, n, &x, &out);
    if (st != CG_OK)
        return st;
    if (x.rank != 4)
        return xnng_refuse(b, n, "input rank %d: XNNPACK's pooling nodes are 2-D only", x.rank);
    xnng_window win;
    if (kind == XNNG_POOL_GLOBAL_MAX) {
        memset(&win, 0, sizeof win);
        win.k[0] = x.dims[2];
        win.k[1] = x.dims[3];
        win.s[0] = win.s[1] = win.d[0] = win.d[1] = 1;
        win.out[0] = win.out[1] = 1;
    } else {
        size_t cnt;
        const int64_t *ks = cg_node_attr_ints(n, "kernel_shape", &cnt);
        if (!ks || cnt != 2)
            return xnng_refuse(b, n, "kernel_shape must have 2 values (2-D pooling)");
        if ((st = window_read(b, n, x.dims + 2, ks, kind == XNNG_POOL_MAX, &win)) != CG_OK)
            return st;
    }
    if (win.k[0] * win.k[1] == 1)
        return xnng_refuse(b, n, "1x1 pooling window: XNNPACK's pooling nodes reject it");
    bool padded = win.pad[0] || win.pad[1] || win.pad[2] || win.pad[3];
    if (kind == XNNG_POOL_MAX && padded && (win.d[0] > 1 || win.d[1] > 1))
        return xnng_refuse(b, n, "padding with dilation: XNNPACK's max pooling clamps padded "
                           "taps to the edge, which differs from ONNX when dilated");
    if (kind == XNNG_POOL_AVG && padded && cg_node_attr_int(n, "count_include_pad", 0) != 0)
        return xnng_refuse(b, n, "count_include_pad=1 with padding: XNNPACK's average pooling "
                           "divides by the valid taps only");
    int64_t od[4] = {x.dims[0], x.dims[1], win.out[0], win.out[1]};
    if (kind != XNNG_POOL_GLOBAL_MAX && cg_node_attr_int(n, "ceil_mode", 0) != 0 &&
        !cg_shape_equal(out->rank, out->dims, 4, od))
        return xnng_refuse(b, n, "ceil_mode=1 changes the output size here; XNNPACK's pooling "
                           "rounds down");
    if ((st = expect_shape(b, n, out, 4, od)) != CG_OK)
        return st;
    if (dry_run)
        return CG_OK;
    uint32_t in, oid;
    if ((st = operand_id(b, n, &x, 4, &in)) != CG_OK || (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    if (kind == XNNG_POOL_AVG)
        XNNG_DEFINE(b, n, xnn_define_average_pooling_2d(
                              b->subgraph, (uint32_t)win.pad[0], (uint32_t)win.pad[3],
                              (uint32_t)win.pad[2], (uint32_t)win.pad[1], (uint32_t)win.k[0],
                              (uint32_t)win.k[1], (uint32_t)win.s[0], (uint32_t)win.s[1],
                              -INFINITY, INFINITY, in, oid, 0));
    else
        XNNG_DEFINE(b, n, xnn_define_max_pooling_2d(
                              b->subgraph, (uint32_t)win.pad[0], (uint32_t)win.pad[3],
                              (uint32_t)win.pad[2], (uint32_t)win.pad[1], (uint32_t)win.k[0],
                              (uint32_t)win.k[1], (uint32_t)win.s[0], (uint32_t)win.s[1],
                              (uint32_t)win.d[0], (uint32_t)win.d[1], -INFINITY, INFINITY, in,
                              oid, 0));
    return CG_OK;
}

static cg_status lower_maxpool(xnng_build *b, const cg_node *n, bool dry_run)
{
    return lower_pool(b, n, dry_run, XNNG_POOL_MAX);
}

static cg_status lower_avgpool(xnng_build *b, const cg_node *n, bool dry_run)
{
    return lower_pool(b, n, dry_run, XNNG_POOL_AVG);
}

static cg_status lower_global_maxpool(xnng_build *b, const cg_node *n, bool dry_run)
{
    return lower_pool(b, n, dry_run, XNNG_POOL_GLOBAL_MAX);
}

static cg_status lower_global_avgpool(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    const cg_value_type *out;
    cg_status st = runtime_input(b, n, &x, &out);
    if (st != CG_OK)
        return st;
    if (x.rank != 4)
        return xnng_refuse(b, n, "input rank %d: XNNPACK's global_average_pooling_2d is 2-D "
                           "only", x.rank);
    int64_t od[4] = {x.dims[0], x.dims[1], 1, 1};
    if ((st = expect_shape(b, n, out, 4, od)) != CG_OK || dry_run)
        return st;
    uint32_t in, oid;
    if ((st = operand_id(b, n, &x, 4, &in)) != CG_OK || (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_global_average_pooling_2d(b->subgraph, -INFINITY, INFINITY, in,
                                                           oid, 0));
    return CG_OK;
}

static cg_status lower_pad(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    const cg_value_type *out;
    cg_status st = runtime_input(b, n, &x, &out);
    if (st != CG_OK)
        return st;
    if (!attr_str_is(n, "mode", "constant", "constant"))
        return xnng_refuse(b, n, "only mode 'constant' maps to XNNPACK's static_constant_pad");
    int64_t pads[2 * CG_MAX_RANK];
    float value = 0.0f;
    size_t cnt = 0;
    if (has_input(n, 1) || !cg_node_attr(n, "pads")) {
        xnng_operand p;
        if ((st = operand(b, n, 1, false, &p)) != CG_OK)
            return st;
        if (!p.is_static || p.data->dtype != CG_DTYPE_INT64)
            return xnng_refuse(b, n, "pads '%s' must be a constant int64 tensor", p.name);
        cnt = (size_t)p.data->numel;
        if (cnt != (size_t)(2 * x.rank))
            return xnng_refuse(b, n, "pads has %zu values for rank %d", cnt, x.rank);
        memcpy(pads, static_data(b, &p), cnt * sizeof *pads);
        if (has_input(n, 2)) {
            xnng_operand cv;
            if ((st = operand(b, n, 2, true, &cv)) != CG_OK ||
                (st = static_scalar(b, n, &cv, "constant_value", &value)) != CG_OK)
                return st;
        }
        if (has_input(n, 3))
            return xnng_refuse(b, n, "the axes input is not delegated");
    } else {
        const int64_t *v = cg_node_attr_ints(n, "pads", &cnt);
        if (cnt != (size_t)(2 * x.rank))
            return xnng_refuse(b, n, "pads has %zu values for rank %d", cnt, x.rank);
        memcpy(pads, v, cnt * sizeof *pads);
        value = cg_node_attr_float(n, "value", 0.0f);
    }
    int64_t od[CG_MAX_RANK];
    for (int i = 0; i < x.rank; i++) {
        if (pads[i] < 0 || pads[i + x.rank] < 0 || pads[i] > INT32_MAX ||
            pads[i + x.rank] > INT32_MAX)
            return xnng_refuse(b, n, "pad %lld/%lld on axis %d: static_constant_pad takes "
                               "non-negative pads", (long long)pads[i], (long long)pads[i + x.rank], i);
        od[i] = x.dims[i] + pads[i] + pads[i + x.rank];
    }
    if ((st = expect_shape(b, n, out, x.rank, od)) != CG_OK || dry_run)
        return st;
    size_t pre[XNNG_MAX_DIMS], post[XNNG_MAX_DIMS];
    int64_t pb[CG_MAX_RANK], pe[CG_MAX_RANK];
    for (int i = 0; i < x.rank; i++) {
        pb[i] = pads[i];
        pe[i] = pads[i + x.rank];
    }
    xnn_dims(x.rank, pb, pre); /* rank 4: NHWC order like the data */
    xnn_dims(x.rank, pe, post);
    uint32_t in, oid;
    if ((st = operand_id(b, n, &x, x.rank, &in)) != CG_OK || (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_static_constant_pad(b->subgraph, pre, post, value, in, oid, 0));
    return CG_OK;
}

static cg_status lower_depth_to_space(xnng_build *b, const cg_node *n, bool dry_run)
{
    xnng_operand x;
    const cg_value_type *out;
    cg_status st = runtime_input(b, n, &x, &out);
    if (st != CG_OK)
        return st;
    if (x.rank != 4)
        return xnng_refuse(b, n, "input rank %d; expected 4", x.rank);
    if (!attr_str_is(n, "mode", "DCR", "DCR"))
        return xnng_refuse(b, n, "mode CRD: XNNPACK's depth_to_space is DCR only");
    int64_t bs = cg_node_attr_int(n, "blocksize", 0);
    if (bs < 2 || bs > 65535 || x.dims[1] % (bs * bs) != 0)
        return xnng_refuse(b, n, "blocksize %lld for %lld channels: depth_to_space takes a block "
                           "> 1 dividing the channels", (long long)bs, (long long)x.dims[1]);
    int64_t od[4] = {x.dims[0], x.dims[1] / (bs * bs), x.dims[2] * bs, x.dims[3] * bs};
    if ((st = expect_shape(b, n, out, 4, od)) != CG_OK || dry_run)
        return st;
    uint32_t in, oid;
    if ((st = operand_id(b, n, &x, 4, &in)) != CG_OK || (st = define_output(b, n, 0, &oid)) != CG_OK)
        return st;
    XNNG_DEFINE(b, n, xnn_define_depth_to_space(b->subgraph, in, oid, (uint32_t)bs, 0));
    return CG_OK;
}

/* --- the table ----------------------------------------------------------------------------- */

static const xnng_op xnng_ops[] = {
    {"Abs", lower_abs},
    {"Add", lower_add},
    {"AveragePool", lower_avgpool},
    {"BatchNormalization", lower_batchnorm},
    {"Ceil", lower_ceil},
    {"Clip", lower_clip},
    {"Conv", lower_conv},
    {"ConvTranspose", lower_conv_transpose},
    {"DepthToSpace", lower_depth_to_space},
    {"Div", lower_div},
    {"Elu", lower_elu},
    {"Flatten", lower_reshape},
    {"Floor", lower_floor},
    {"Gemm", lower_gemm},
    {"GlobalAveragePool", lower_global_avgpool},
    {"GlobalMaxPool", lower_global_maxpool},
    {"HardSigmoid", lower_hard_sigmoid},
    {"HardSwish", lower_hardswish},
    {"Identity", lower_reshape},
    {"LeakyRelu", lower_leaky_relu},
    {"MatMul", lower_matmul},
    {"Max", lower_max},
    {"MaxPool", lower_maxpool},
    {"Min", lower_min},
    {"Mul", lower_mul},
    {"Neg", lower_neg},
    {"PRelu", lower_prelu},
    {"Pad", lower_pad},
    {"Relu", lower_relu},
    {"Reshape", lower_reshape},
    {"Round", lower_round},
    {"Sigmoid", lower_sigmoid},
    {"Softmax", lower_softmax},
    {"Sqrt", lower_sqrt},
    {"Squeeze", lower_reshape},
    {"Sub", lower_sub},
    {"Unsqueeze", lower_reshape},
};

const xnng_op *xnng_find_op(const char *domain, const char *op_type)
{
    if (!cg_domain_is_default(domain))
        return NULL;
    if (!op_type)
        return NULL;
    for (size_t i = 0; i < sizeof xnng_ops / sizeof xnng_ops[0]; i++)
        if (strcmp(xnng_ops[i].op_type, op_type) == 0)
            return &xnng_ops[i];
    return NULL;
}

const char *xnng_missing_op_note(const char *op_type)
{
    static const struct {
        const char *op, *note;
    } notes[] = {
        {"Concat", "xnn_define_concatenate2/3/4 arrived after this snapshot (2022-02-28)"},
        {"Split", "xnn_define_even_split2/3/4 arrived after this snapshot (2022-03-04)"},
        {"Transpose", "there is no static transpose node in this snapshot"},
        {"Slice", "there is no static slice node in this snapshot"},
        {"Tanh", "there is no fp32 tanh node in this snapshot"},
        {"ReduceMean", "there is no static mean node in this snapshot"},
        {"Resize", "only a bilinear static resize exists and it is not mapped here"},
    };
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        if (op_type && strcmp(notes[i].op, op_type) == 0)
            return notes[i].note;
    return "no node of this XNNPACK's subgraph API (git ae108ef, 2022-02-16) is mapped to it";
}
