/*
 * Control flow (If, Loop, Scan, SequenceMap), sequences and optionals.
 *
 * Control flow kernels run their subgraphs through cg_exec_subgraph, which
 * borrows the values it is given and returns new values the kernel owns.
 * A loop-carried value is therefore either borrowed (the node's input, before
 * the first iteration) or owned (a body output); `owned[]` tracks which, so
 * exactly the owned ones are freed. Sequence items are whole values owned by
 * their sequence; an optional holding a tensor keeps it in value.tensor, one
 * holding a sequence keeps it in value.items.
 */
#include <stdlib.h>
#include <string.h>

#include "run/exec.h"
#include "run/ops/kernels.h"

cg_status cg_op_if(cg_kernel_ctx *k);
cg_status cg_op_loop(cg_kernel_ctx *k);
cg_status cg_op_scan(cg_kernel_ctx *k);
cg_status cg_op_sequence_empty(cg_kernel_ctx *k);
cg_status cg_op_sequence_construct(cg_kernel_ctx *k);
cg_status cg_op_sequence_insert(cg_kernel_ctx *k);
cg_status cg_op_sequence_erase(cg_kernel_ctx *k);
cg_status cg_op_sequence_at(cg_kernel_ctx *k);
cg_status cg_op_sequence_length(cg_kernel_ctx *k);
cg_status cg_op_sequence_map(cg_kernel_ctx *k);
cg_status cg_op_split_to_sequence(cg_kernel_ctx *k);
cg_status cg_op_concat_from_sequence(cg_kernel_ctx *k);
cg_status cg_op_optional(cg_kernel_ctx *k);
cg_status cg_op_optional_has_element(cg_kernel_ctx *k);
cg_status cg_op_optional_get_element(cg_kernel_ctx *k);

/* --- element copies ----------------------------------------------------------- */

/* Copies count elements src[so..] to dst[do..] (same dtype); strings are
 * duplicated so each tensor owns its own. */
static cg_status copy_elems(cg_kernel_ctx *k, cg_tensor *dst, int64_t dst_off,
                            const cg_tensor *src, int64_t src_off, int64_t count)
{
    if (count <= 0)
        return CG_OK;
    if (dst->dtype != CG_DTYPE_STRING) {
        size_t es = cg_dtype_size(dst->dtype);
        memcpy((uint8_t *)dst->data + (size_t)dst_off * es,
               (const uint8_t *)src->data + (size_t)src_off * es, (size_t)count * es);
        return CG_OK;
    }
    for (int64_t i = 0; i < count; i++) {
        size_t len;
        const char *e = cg_tensor_string(src, src_off + i, &len);
        if (cg_tensor_set_string(dst, dst_off + i, e, len) != CG_OK)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory copying strings");
    }
    return CG_OK;
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* A new value holding src[..., idx, ...] along axis (that axis removed). */
static cg_status slice_axis(cg_kernel_ctx *k, const cg_tensor *src, int axis, int64_t idx,
                            cg_value **out)
{
    int64_t dims[CG_MAX_RANK];
    int r = 0;
    for (int d = 0; d < src->rank; d++)
        if (d != axis)
            dims[r++] = src->dims[d];
    cg_status st = cg_value_new_tensor(k, src->dtype, r, dims, out);
    if (st != CG_OK)
        return st;
    int64_t outer = prod(src->dims, 0, axis), len = src->dims[axis];
    int64_t inner = prod(src->dims, axis + 1, src->rank);
    for (int64_t o = 0; o < outer; o++) {
        st = copy_elems(k, &(*out)->tensor, o * inner, src, (o * len + idx) * inner, inner);
        if (st != CG_OK) {
            cg_value_free(*out);
            *out = NULL;
            return st;
        }
    }
    return CG_OK;
}

/* Stacks count same-shape tensors along a new axis into output `oi`;
 * item c goes to position order[c] (for reversed scan outputs). */
static cg_status stack_output(cg_kernel_ctx *k, size_t oi, cg_value *const *items, size_t count,
                              int64_t axis_attr, bool reverse, cg_dtype empty_dtype)
{
    cg_tensor *t;
    if (count == 0) {
        int64_t zero = 0;
        return cg_kernel_output(k, oi, empty_dtype, 1, &zero, &t);
    }
    const cg_tensor *first = &items[0]->tensor;
    for (size_t c = 0; c < count; c++) {
        const cg_tensor *x = &items[c]->tensor;
        if (items[c]->kind != CG_VALUE_TENSOR)
            return cg_kernel_fail(k, CG_INVALID, "scan output %zu is not a tensor", oi);
        bool same = x->dtype == first->dtype && x->rank == first->rank;
        for (int d = 0; same && d < x->rank; d++)
            same = x->dims[d] == first->dims[d];
        if (!same)
            return cg_kernel_fail(k, CG_INVALID, "scan output %zu changes type or shape between "
                                  "iterations (iteration %zu)", oi, c);
    }
    if (first->rank + 1 > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "scan output %zu rank %d too large", oi,
                              first->rank + 1);
    int64_t axis;
    if (!cg_normalize_axis(axis_attr, first->rank + 1, &axis))
        return cg_kernel_fail(k, CG_INVALID, "scan output axis %lld out of range for rank %d",
                              (long long)axis_attr, first->rank + 1);
    int64_t dims[CG_MAX_RANK];
    for (int d = 0, s = 0; d < first->rank + 1; d++)
        dims[d] = d == axis ? (int64_t)count : first->dims[s++];
    cg_status st = cg_kernel_output(k, oi, first->dtype, first->rank + 1, dims, &t);
    if (st != CG_OK)
        return st;
    int64_t outer = prod(first->dims, 0, (int)axis);
    int64_t inner = prod(first->dims, (int)axis, first->rank);
    for (size_t c = 0; c < count; c++) {
        size_t pos = reverse ? count - 1 - c : c;
        for (int64_t o = 0; o < outer; o++) {
            st = copy_elems(k, t, (o * (int64_t)count + (int64_t)pos) * inner, &items[c]->tensor,
                            o * inner, inner);
            if (st != CG_OK)
                return st;
        }
    }
    return CG_OK;
}

/* A scalar of `dtype` in a fresh value. */
static cg_status new_scalar(cg_kernel_ctx *k, cg_dtype dtype, cg_value **out)
{
    return cg_value_new_tensor(k, dtype, 0, NULL, out);
}

/* Reads a one-element tensor as int64 ("name" for messages). */
static cg_status read_scalar(cg_kernel_ctx *k, const cg_tensor *t, const char *what, int64_t *v)
{
    if (t->numel != 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must hold one element, got %lld", what,
                              (long long)t->numel);
    if (cg_dtype_is_float(t->dtype) && t->dtype != CG_DTYPE_FLOAT16 &&
        t->dtype != CG_DTYPE_BFLOAT16) {
        double d = cg_tensor_get_f64(t, 0);
        *v = d != 0.0; /* floats only appear as conditions */
        return CG_OK;
    }
    *v = cg_tensor_get_i64(t, 0);
    return CG_OK;
}

static const cg_graph *graph_attr(cg_kernel_ctx *k, const char *name)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    return a ? a->g : NULL;
}

/* Moves a value to output i: owned values are handed over, borrowed ones copied. */
static cg_status emit(cg_kernel_ctx *k, size_t i, const cg_value *v, bool owned)
{
    cg_value *out = (cg_value *)v;
    if (!owned) {
        cg_status st = cg_value_clone(k, v, &out);
        if (st != CG_OK)
            return st;
    }
    return cg_kernel_set_output(k, i, out);
}

/* --- If ----------------------------------------------------------------------- */

cg_status cg_op_if(cg_kernel_ctx *k)
{
    const cg_tensor *cond;
    cg_status st = cg_kernel_require(k, 0, &cond);
    if (st != CG_OK)
        return st;
    int64_t c = 0;
    if ((st = read_scalar(k, cond, "the condition", &c)) != CG_OK)
        return st;
    const char *branch = c ? "then_branch" : "else_branch";
    const cg_graph *g = graph_attr(k, branch);
    if (!g)
        return cg_kernel_fail(k, CG_INVALID, "attribute '%s' is missing", branch);
    cg_value **outs = calloc(k->output_count + 1, sizeof *outs);
    if (!outs)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    st = cg_exec_subgraph(k, g, NULL, 0, outs, k->output_count);
    for (size_t i = 0; i < k->output_count; i++) {
        if (st == CG_OK)
            st = cg_kernel_set_output(k, i, outs[i]);
        else
            cg_value_free(outs[i]);
    }
    free(outs);
    return st;
}

/* --- Loop ---------------------------------------------------------------------- */

typedef struct value_list {
    cg_value **items;
    size_t count, cap;
} value_list;

/* The runtime's per-allocation limit, also applied to what a loop gathers
 * before stacking so a long loop fails cleanly instead of exhausting memory. */
static size_t alloc_limit(const cg_kernel_ctx *k)
{
    return k->exec ? k->exec->rt->opt.max_alloc_bytes : CG_DEFAULT_MAX_ALLOC;
}

static cg_status check_gathered(cg_kernel_ctx *k, size_t *total, const cg_value *v, int64_t iter)
{
    size_t b = v && v->kind == CG_VALUE_TENSOR ? cg_tensor_bytes(&v->tensor) : 0;
    if (b > alloc_limit(k) - *total)
        return cg_kernel_fail(k, CG_LIMIT, "scan outputs exceed the allocation limit of %zu "
                              "bytes after %lld iterations", alloc_limit(k), (long long)iter);
    *total += b;
    /* held until the loop ends: counted against the memory budget too */
    return cg_kernel_take_budget(k, cg_value_bytes(v));
}

static bool list_push(value_list *l, cg_value *v)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        cg_value **n = realloc(l->items, cap * sizeof *n);
        if (!n)
            return false;
        l->items = n;
        l->cap = cap;
    }
    l->items[l->count++] = v;
    return true;
}

static void list_free(value_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        cg_value_free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* The declared element type of a graph output, for empty scan outputs
 * (promoted in the float64 mode, as the body's values are). */
static cg_dtype declared_dtype(const cg_kernel_ctx *k, const cg_value_info *vi)
{
    if (vi->type && vi->type->kind == CG_TYPE_TENSOR && vi->type->has_elem_type &&
        cg_dtype_valid(vi->type->elem_type))
        return cg_kernel_float_dtype(k, (cg_dtype)vi->type->elem_type);
    return cg_kernel_float_dtype(k, CG_DTYPE_FLOAT);
}

cg_status cg_op_loop(cg_kernel_ctx *k)
{
    const cg_graph *body = graph_attr(k, "body");
    if (!body)
        return cg_kernel_fail(k, CG_INVALID, "attribute 'body' is missing");
    if (k->input_count < 2)
        return cg_kernel_fail(k, CG_INVALID, "Loop needs inputs M and cond (may be empty "
                              "names), got %zu inputs", k->input_count);
    size_t n = k->input_count - 2;
    if (body->input_count != n + 2)
        return cg_kernel_fail(k, CG_INVALID, "body has %zu inputs, expected %zu (iteration, "
                              "condition and %zu loop-carried values)", body->input_count,
                              n + 2, n);
    if (body->output_count < n + 1 || k->output_count != body->output_count - 1)
        return cg_kernel_fail(k, CG_INVALID, "body has %zu outputs; Loop with %zu loop-carried "
                              "values and %zu outputs needs %zu", body->output_count, n,
                              k->output_count, k->output_count + 1);
    size_t nscan = body->output_count - 1 - n;

    int64_t trip = INT64_MAX, cond = 1;
    size_t gathered = 0;
    cg_status st;
    const cg_tensor *m = cg_kernel_input(k, 0), *c = cg_kernel_input(k, 1);
    if (m && (st = read_scalar(k, m, "M (max trip count)", &trip)) != CG_OK)
        return st;
    if (c && (st = read_scalar(k, c, "cond", &cond)) != CG_OK)
        return st;

    const cg_value **cur = calloc(n + 1, sizeof *cur);
    bool *owned = calloc(n + 1, sizeof *owned);
    const cg_value **ins = calloc(n + 2, sizeof *ins);
    cg_value **outs = calloc(body->output_count + 1, sizeof *outs);
    value_list *scans = calloc(nscan + 1, sizeof *scans);
    cg_value *iter_v = NULL, *cond_v = NULL;
    if (!cur || !owned || !ins || !outs || !scans) {
        st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        cur[j] = k->inputs[j + 2];
        if (!cur[j]) {
            st = cg_kernel_fail(k, CG_INVALID, "loop-carried input %zu is missing", j);
            goto done;
        }
    }
    if ((st = new_scalar(k, CG_DTYPE_INT64, &iter_v)) != CG_OK ||
        (st = new_scalar(k, CG_DTYPE_BOOL, &cond_v)) != CG_OK)
        goto done;

    for (int64_t i = 0; i < trip && cond; i++) {
        /* a trip count of 2^62, or none with a condition that stays true */
        if ((st = cg_kernel_check_time(k)) != CG_OK)
            goto done;
        /* The body only borrows these, and its outputs never alias them. */
        *(int64_t *)iter_v->tensor.data = i;
        *(uint8_t *)cond_v->tensor.data = 1;
        ins[0] = iter_v;
        ins[1] = cond_v;
        for (size_t j = 0; j < n; j++)
            ins[j + 2] = cur[j];
        st = cg_exec_subgraph(k, body, ins, n + 2, outs, body->output_count);
        if (st != CG_OK)
            goto done;
        if (outs[0]->kind != CG_VALUE_TENSOR) {
            st = cg_kernel_fail(k, CG_INVALID, "body condition output is not a tensor");
        } else {
            st = read_scalar(k, &outs[0]->tensor, "the body's condition output", &cond);
        }
        cg_value_free(outs[0]);
        outs[0] = NULL;
        for (size_t j = 0; j < n; j++) {
            if (owned[j])
                cg_value_free((cg_value *)cur[j]);
            cur[j] = outs[1 + j];
            owned[j] = true;
            outs[1 + j] = NULL;
        }
        for (size_t s = 0; s < nscan; s++) {
            if (st == CG_OK)
                st = check_gathered(k, &gathered, outs[1 + n + s], i + 1);
            if (st == CG_OK && !list_push(&scans[s], outs[1 + n + s])) {
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory collecting scan outputs");
                cg_value_free(outs[1 + n + s]);
            } else if (st != CG_OK) {
                cg_value_free(outs[1 + n + s]);
            }
            outs[1 + n + s] = NULL;
        }
        if (st != CG_OK)
            goto done;
    }
    for (size_t j = 0; j < n; j++) {
        st = emit(k, j, cur[j], owned[j]);
        owned[j] = false; /* handed over (or copied) */
        if (st != CG_OK)
            goto done;
    }
    for (size_t s = 0; s < nscan; s++) {
        st = stack_output(k, n + s, scans[s].items, scans[s].count, 0, false,
                          declared_dtype(k, &body->outputs[1 + n + s]));
        if (st != CG_OK)
            goto done;
    }
done:
    for (size_t j = 0; cur && j < n; j++)
        if (owned[j])
            cg_value_free((cg_value *)cur[j]);
    for (size_t s = 0; scans && s < nscan; s++)
        list_free(&scans[s]);
    cg_value_free(iter_v);
    cg_value_free(cond_v);
    free(cur);
    free(owned);
    free(ins);
    free(outs);
    free(scans);
    return st;
}

/* --- Scan ---------------------------------------------------------------------- */

/* One scan over `len` steps: states (n, borrowed at first) and scan inputs
 * (m tensors, sliced along in_axes). On success states[] hold the final
 * states (owned[] says which are owned) and scans[] the per-step outputs. */
typedef struct scan_run {
    size_t n, m, kout;
    const cg_value **states;
    bool *owned;
    const cg_tensor **inputs;
    int64_t *in_axes;
    bool *in_reverse;
    value_list *scans;
} scan_run;

static cg_status scan_loop(cg_kernel_ctx *k, const cg_graph *body, scan_run *r, int64_t len)
{
    cg_status st = CG_OK;
    size_t gathered = 0;
    const cg_value **ins = calloc(r->n + r->m + 1, sizeof *ins);
    cg_value **slices = calloc(r->m + 1, sizeof *slices);
    cg_value **outs = calloc(r->n + r->kout + 1, sizeof *outs);
    if (!ins || !slices || !outs) {
        st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t t = 0; t < len; t++) {
        if ((st = cg_kernel_check_time(k)) != CG_OK)
            goto done;
        for (size_t j = 0; j < r->m; j++) {
            int64_t idx = r->in_reverse[j] ? len - 1 - t : t;
            st = slice_axis(k, r->inputs[j], (int)r->in_axes[j], idx, &slices[j]);
            if (st != CG_OK)
                goto done;
        }
        for (size_t j = 0; j < r->n; j++)
            ins[j] = r->states[j];
        for (size_t j = 0; j < r->m; j++)
            ins[r->n + j] = slices[j];
        st = cg_exec_subgraph(k, body, ins, r->n + r->m, outs, r->n + r->kout);
        for (size_t j = 0; j < r->m; j++) {
            cg_value_free(slices[j]);
            slices[j] = NULL;
        }
        if (st != CG_OK)
            goto done;
        for (size_t j = 0; j < r->n; j++) {
            if (r->owned[j])
                cg_value_free((cg_value *)r->states[j]);
            r->states[j] = outs[j];
            r->owned[j] = true;
        }
        for (size_t s = 0; s < r->kout; s++) {
            if (st == CG_OK)
                st = check_gathered(k, &gathered, outs[r->n + s], t + 1);
            if (st == CG_OK && !list_push(&r->scans[s], outs[r->n + s]))
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory collecting scan outputs");
            if (st != CG_OK)
                cg_value_free(outs[r->n + s]);
        }
        if (st != CG_OK)
            goto done;
    }
done:
    if (slices)
        for (size_t j = 0; j < r->m; j++)
            cg_value_free(slices[j]);
    free(ins);
    free(slices);
    free(outs);
    return st;
}

/* Reads an ints attribute of exactly `count` entries, or fills `dflt`. */
static cg_status ints_attr(cg_kernel_ctx *k, const char *name, size_t count, int64_t dflt,
                           int64_t *out)
{
    size_t n;
    const int64_t *v = cg_attr_ints(k, name, &n);
    if (v && n != count)
        return cg_kernel_fail(k, CG_INVALID, "attribute '%s' has %zu entries, expected %zu",
                              name, n, count);
    for (size_t i = 0; i < count; i++)
        out[i] = v ? v[i] : dflt;
    return CG_OK;
}

cg_status cg_op_scan(cg_kernel_ctx *k)
{
    const cg_graph *body = graph_attr(k, "body");
    if (!body)
        return cg_kernel_fail(k, CG_INVALID, "attribute 'body' is missing");
    int64_t m64 = cg_attr_int(k, "num_scan_inputs", -1);
    bool v8 = k->since < 9;
    size_t first = v8 ? 1 : 0; /* opset 8: input 0 is sequence_lens */
    if (m64 < 1 || (uint64_t)m64 > k->input_count - first || k->input_count < first)
        return cg_kernel_fail(k, CG_INVALID, "num_scan_inputs %lld is out of range for %zu "
                              "inputs", (long long)m64, k->input_count);
    size_t m = (size_t)m64, n = k->input_count - first - m;
    if (body->input_count != n + m)
        return cg_kernel_fail(k, CG_INVALID, "body has %zu inputs, expected %zu", body->input_count,
                              n + m);
    if (body->output_count < n || k->output_count != body->output_count)
        return cg_kernel_fail(k, CG_INVALID, "body has %zu outputs, Scan has %zu (and %zu "
                              "state variables)", body->output_count, k->output_count, n);
    size_t kout = body->output_count - n;

    cg_status st = CG_OK;
    scan_run r = {n, m, kout, NULL, NULL, NULL, NULL, NULL, NULL};
    int64_t *out_axes = NULL, *out_dirs = NULL;
    value_list batch_states = {0}, batch_inputs = {0}, *batch_scans = NULL;
    r.states = calloc(n + 1, sizeof *r.states);
    r.owned = calloc(n + 1, sizeof *r.owned);
    r.inputs = calloc(m + 1, sizeof *r.inputs);
    r.in_axes = calloc(m + 1, sizeof *r.in_axes);
    r.in_reverse = calloc(m + 1, sizeof *r.in_reverse);
    r.scans = calloc(kout + 1, sizeof *r.scans);
    out_axes = calloc(kout + 1, sizeof *out_axes);
    out_dirs = calloc(kout + 1, sizeof *out_dirs);
    int64_t *dirs = calloc(m + 1, sizeof *dirs);
    if (!r.states || !r.owned || !r.inputs || !r.in_axes || !r.in_reverse || !r.scans ||
        !out_axes || !out_dirs || !dirs) {
        st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < n; j++) {
        r.states[j] = k->inputs[first + j];
        if (!r.states[j]) {
            st = cg_kernel_fail(k, CG_INVALID, "state input %zu is missing", j);
            goto done;
        }
    }
    for (size_t j = 0; j < m; j++) {
        if ((st = cg_kernel_require(k, first + n + j, &r.inputs[j])) != CG_OK)
            goto done;
    }
    if ((st = ints_attr(k, v8 ? "directions" : "scan_input_directions", m, 0, dirs)) != CG_OK)
        goto done;
    for (size_t j = 0; j < m; j++)
        r.in_reverse[j] = dirs[j] != 0;

    if (!v8) {
        if ((st = ints_attr(k, "scan_input_axes", m, 0, r.in_axes)) != CG_OK ||
            (st = ints_attr(k, "scan_output_axes", kout, 0, out_axes)) != CG_OK ||
            (st = ints_attr(k, "scan_output_directions", kout, 0, out_dirs)) != CG_OK)
            goto done;
        int64_t len = -1;
        for (size_t j = 0; j < m; j++) {
            const cg_tensor *x = r.inputs[j];
            int64_t ax;
            if (!cg_normalize_axis(r.in_axes[j], x->rank, &ax)) {
                st = cg_kernel_fail(k, CG_INVALID, "scan_input_axes[%zu] = %lld out of range "
                                    "for rank %d", j, (long long)r.in_axes[j], x->rank);
                goto done;
            }
            r.in_axes[j] = ax;
            if (len >= 0 && x->dims[ax] != len) {
                st = cg_kernel_fail(k, CG_INVALID, "scan inputs disagree on the sequence "
                                    "length (%lld vs %lld)", (long long)len,
                                    (long long)x->dims[ax]);
                goto done;
            }
            len = x->dims[ax];
        }
        if ((st = scan_loop(k, body, &r, len)) != CG_OK)
            goto done;
        for (size_t j = 0; j < n; j++) {
            st = emit(k, j, r.states[j], r.owned[j]);
            r.owned[j] = false;
            if (st != CG_OK)
                goto done;
        }
        for (size_t s = 0; s < kout; s++) {
            st = stack_output(k, n + s, r.scans[s].items, r.scans[s].count, out_axes[s],
                              out_dirs[s] != 0, declared_dtype(k, &body->outputs[n + s]));
            if (st != CG_OK)
                goto done;
        }
        goto done;
    }

    /* Opset 8: axis 0 is a batch axis, axis 1 the sequence; every batch entry
     * is scanned separately and the results stacked back along axis 0. */
    const cg_tensor *lens = cg_kernel_input(k, 0);
    int64_t batch = -1, max_len = -1;
    for (size_t j = 0; j < n + m; j++) {
        const cg_tensor *x = j < n ? &r.states[j]->tensor : r.inputs[j - n];
        if ((j < n && r.states[j]->kind != CG_VALUE_TENSOR) || x->rank < (j < n ? 1 : 2) ||
            (batch >= 0 && x->dims[0] != batch)) {
            st = cg_kernel_fail(k, CG_INVALID, "Scan-8 input %zu must be a tensor with the "
                                "batch axis first (and a sequence axis for scan inputs)",
                                first + j);
            goto done;
        }
        batch = x->dims[0];
        if (j >= n) {
            if (max_len >= 0 && x->dims[1] != max_len) {
                st = cg_kernel_fail(k, CG_INVALID, "scan inputs disagree on the sequence "
                                    "length");
                goto done;
            }
            max_len = x->dims[1];
        }
    }
    if (lens && lens->numel != batch) {
        st = cg_kernel_fail(k, CG_INVALID, "sequence_lens has %lld entries for batch %lld",
                            (long long)lens->numel, (long long)batch);
        goto done;
    }
    batch_scans = calloc(kout + 1, sizeof *batch_scans);
    if (!batch_scans) {
        st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t b = 0; b < batch && st == CG_OK; b++) {
        int64_t len = lens ? cg_tensor_get_i64(lens, b) : max_len;
        if (len < 0 || len > max_len) {
            st = cg_kernel_fail(k, CG_INVALID, "sequence_lens[%lld] = %lld outside [0, %lld]",
                                (long long)b, (long long)len, (long long)max_len);
            break;
        }
        /* Slice batch entry b of every state and scan input. */
        for (size_t j = 0; j < n + m && st == CG_OK; j++) {
            const cg_tensor *x = j < n ? &k->inputs[first + j]->tensor : r.inputs[j - n];
            cg_value *v = NULL;
            st = slice_axis(k, x, 0, b, &v);
            if (st == CG_OK && !list_push(&batch_inputs, v)) {
                cg_value_free(v);
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
            }
        }
        if (st != CG_OK)
            break;
        const cg_tensor **saved = r.inputs;
        const cg_tensor **per = calloc(m + 1, sizeof *per);
        if (!per) {
            st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
            break;
        }
        for (size_t j = 0; j < n; j++) {
            r.states[j] = batch_inputs.items[j];
            r.owned[j] = false;
        }
        for (size_t j = 0; j < m; j++) {
            per[j] = &batch_inputs.items[n + j]->tensor;
            r.in_axes[j] = 0;
        }
        r.inputs = per;
        st = scan_loop(k, body, &r, len);
        r.inputs = saved;
        free(per);
        /* Keep the final states (owned or a copy of the borrowed slice). */
        for (size_t j = 0; j < n && st == CG_OK; j++) {
            cg_value *fin = (cg_value *)r.states[j];
            if (!r.owned[j] && (st = cg_value_clone(k, r.states[j], &fin)) != CG_OK)
                break;
            r.owned[j] = false;
            if (!list_push(&batch_states, fin)) {
                cg_value_free(fin);
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
            }
        }
        for (size_t j = 0; j < n; j++) {
            if (r.owned[j])
                cg_value_free((cg_value *)r.states[j]);
            r.owned[j] = false;
            r.states[j] = NULL;
        }
        /* Stack this entry's scan outputs into one [len, ...] value. */
        for (size_t s = 0; s < kout && st == CG_OK; s++) {
            value_list *l = &r.scans[s];
            cg_value *stacked = NULL;
            if (l->count == 0) {
                int64_t zero = 0;
                st = cg_value_new_tensor(k, declared_dtype(k, &body->outputs[n + s]), 1, &zero,
                                         &stacked);
            } else {
                const cg_tensor *x0 = &l->items[0]->tensor;
                int64_t dims[CG_MAX_RANK];
                if (x0->rank + 1 > CG_MAX_RANK) {
                    st = cg_kernel_fail(k, CG_UNSUPPORTED, "scan output rank too large");
                    break;
                }
                dims[0] = max_len; /* shorter sequences are zero-padded */
                for (int d = 0; d < x0->rank; d++)
                    dims[d + 1] = x0->dims[d];
                st = cg_value_new_tensor(k, x0->dtype, x0->rank + 1, dims, &stacked);
                for (size_t c = 0; c < l->count && st == CG_OK; c++) {
                    const cg_tensor *x = &l->items[c]->tensor;
                    bool same = x->dtype == x0->dtype && x->numel == x0->numel;
                    if (!same) {
                        st = cg_kernel_fail(k, CG_INVALID, "scan output %zu changes shape", s);
                        break;
                    }
                    st = copy_elems(k, &stacked->tensor, (int64_t)c * x0->numel, x, 0,
                                    x0->numel);
                }
            }
            list_free(l);
            if (st == CG_OK && !list_push(&batch_scans[s], stacked)) {
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
            }
            if (st != CG_OK)
                cg_value_free(stacked);
        }
        list_free(&batch_inputs);
    }
    if (st != CG_OK)
        goto done;
    for (size_t j = 0; j < n && st == CG_OK; j++) {
        value_list one = {0};
        for (int64_t b = 0; b < batch && st == CG_OK; b++)
            if (!list_push(&one, batch_states.items[(size_t)b * n + j]))
                st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        if (st == CG_OK)
            st = stack_output(k, j, one.items, one.count, 0, false,
                              k->inputs[first + j]->tensor.dtype);
        free(one.items); /* items stay owned by batch_states */
    }
    for (size_t s = 0; s < kout && st == CG_OK; s++)
        st = stack_output(k, n + s, batch_scans[s].items, batch_scans[s].count, 0, false,
                          declared_dtype(k, &body->outputs[n + s]));
done:
    if (r.owned)
        for (size_t j = 0; j < n; j++)
            if (r.owned[j])
                cg_value_free((cg_value *)r.states[j]);
    if (r.scans)
        for (size_t s = 0; s < kout; s++)
            list_free(&r.scans[s]);
    if (batch_scans)
        for (size_t s = 0; s < kout; s++)
            list_free(&batch_scans[s]);
    list_free(&batch_states);
    list_free(&batch_inputs);
    free(batch_scans);
    free(r.states);
    free(r.owned);
    free(r.inputs);
    free(r.in_axes);
    free(r.in_reverse);
    free(r.scans);
    free(out_axes);
    free(out_dirs);
    free(dirs);
    return st;
}

/* --- sequences ------------------------------------------------------------------- */

static const cg_value *seq_input(cg_kernel_ctx *k, size_t i, cg_status *st)
{
    const cg_value *v = i < k->input_count ? k->inputs[i] : NULL;
    if (!v || v->kind != CG_VALUE_SEQUENCE) {
        *st = cg_kernel_fail(k, CG_INVALID, "input %zu must be a sequence", i);
        return NULL;
    }
    *st = CG_OK;
    return v;
}

/* A new empty sequence as output i. */
static cg_status seq_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, size_t cap, cg_value **out)
{
    cg_status st = cg_kernel_output_value(k, i, out);
    if (st != CG_OK)
        return st;
    (*out)->kind = CG_VALUE_SEQUENCE;
    (*out)->seq_dtype = dtype;
    (*out)->tensor.dtype = dtype;
    (*out)->has_value = true;
    (*out)->items = calloc(cap ? cap : 1, sizeof *(*out)->items);
    if (!(*out)->items)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    return CG_OK;
}

/* Appends a copy of t to seq (capacity reserved by the caller). */
static cg_status seq_append_copy(cg_kernel_ctx *k, cg_value *seq, const cg_value *t)
{
    cg_value *c = NULL;
    cg_status st = cg_value_clone(k, t, &c);
    if (st != CG_OK)
        return st;
    seq->items[seq->item_count++] = c;
    return CG_OK;
}

/* Reads an optional position input (scalar int32/int64); dflt when absent. */
static cg_status position_input(cg_kernel_ctx *k, size_t i, int64_t dflt, int64_t lo, int64_t hi,
                                int64_t *out)
{
    const cg_tensor *p = cg_kernel_input(k, i);
    if (!p) {
        *out = dflt;
        return CG_OK;
    }
    if (p->numel != 1 || (p->dtype != CG_DTYPE_INT64 && p->dtype != CG_DTYPE_INT32))
        return cg_kernel_fail(k, CG_INVALID, "position must be an int32/int64 scalar");
    int64_t v = cg_tensor_get_i64(p, 0);
    if (v < lo || v > hi)
        return cg_kernel_fail(k, CG_INVALID, "position %lld out of range [%lld, %lld]",
                              (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return CG_OK;
}

cg_status cg_op_sequence_empty(cg_kernel_ctx *k)
{
    int64_t dt = cg_attr_int(k, "dtype", CG_DTYPE_FLOAT);
    if (!cg_dtype_valid(dt))
        return cg_kernel_fail(k, CG_INVALID, "dtype %lld is not a valid element type",
                              (long long)dt);
    cg_value *out;
    return seq_output(k, 0, (cg_dtype)dt, 0, &out);
}

cg_status cg_op_sequence_construct(cg_kernel_ctx *k)
{
    if (k->input_count == 0)
        return cg_kernel_fail(k, CG_INVALID, "SequenceConstruct needs at least one input");
    const cg_tensor *t0;
    cg_status st = cg_kernel_require(k, 0, &t0);
    if (st != CG_OK)
        return st;
    cg_value *out;
    if ((st = seq_output(k, 0, t0->dtype, k->input_count, &out)) != CG_OK)
        return st;
    for (size_t i = 0; i < k->input_count; i++) {
        const cg_tensor *t;
        if ((st = cg_kernel_require(k, i, &t)) != CG_OK)
            return st;
        if (t->dtype != t0->dtype)
            return cg_kernel_fail(k, CG_INVALID, "input %zu is %s, input 0 is %s", i,
                                  cg_dtype_name(t->dtype), cg_dtype_name(t0->dtype));
        if ((st = seq_append_copy(k, out, k->inputs[i])) != CG_OK)
            return st;
    }
    return CG_OK;
}

cg_status cg_op_sequence_insert(cg_kernel_ctx *k)
{
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    const cg_tensor *t;
    if ((st = cg_kernel_require(k, 1, &t)) != CG_OK)
        return st;
    int64_t n = (int64_t)s->item_count, pos = 0;
    if ((st = position_input(k, 2, n, -n, n, &pos)) != CG_OK)
        return st;
    if (pos < 0)
        pos += n;
    if (n > 0 && t->dtype != s->seq_dtype)
        return cg_kernel_fail(k, CG_INVALID, "inserting a %s tensor into a sequence of %s",
                              cg_dtype_name(t->dtype), cg_dtype_name(s->seq_dtype));
    cg_value *out;
    if ((st = seq_output(k, 0, t->dtype, s->item_count + 1, &out)) != CG_OK)
        return st;
    for (int64_t i = 0; i <= n; i++) {
        const cg_value *src = i == pos ? k->inputs[1] : s->items[i < pos ? i : i - 1];
        if ((st = seq_append_copy(k, out, src)) != CG_OK)
            return st;
    }
    return CG_OK;
}

cg_status cg_op_sequence_erase(cg_kernel_ctx *k)
{
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    int64_t n = (int64_t)s->item_count, pos = 0;
    if (n == 0)
        return cg_kernel_fail(k, CG_INVALID, "erasing from an empty sequence");
    if ((st = position_input(k, 1, -1, -n, n - 1, &pos)) != CG_OK)
        return st;
    if (pos < 0)
        pos += n;
    cg_value *out;
    if ((st = seq_output(k, 0, s->seq_dtype, s->item_count, &out)) != CG_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        if (i != pos && (st = seq_append_copy(k, out, s->items[i])) != CG_OK)
            return st;
    return CG_OK;
}

cg_status cg_op_sequence_at(cg_kernel_ctx *k)
{
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    int64_t n = (int64_t)s->item_count, pos = 0;
    if (!cg_kernel_input(k, 1))
        return cg_kernel_fail(k, CG_INVALID, "position input is required");
    if (n == 0)
        return cg_kernel_fail(k, CG_INVALID, "SequenceAt on an empty sequence");
    if ((st = position_input(k, 1, 0, -n, n - 1, &pos)) != CG_OK)
        return st;
    if (pos < 0)
        pos += n;
    cg_value *c;
    if ((st = cg_value_clone(k, s->items[pos], &c)) != CG_OK)
        return st;
    return cg_kernel_set_output(k, 0, c);
}

cg_status cg_op_sequence_length(cg_kernel_ctx *k)
{
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    cg_tensor *t;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 0, NULL, &t)) != CG_OK)
        return st;
    *(int64_t *)t->data = (int64_t)s->item_count;
    return CG_OK;
}

cg_status cg_op_split_to_sequence(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->rank < 1)
        return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 1");
    int64_t axis;
    int64_t axis_attr = cg_attr_int(k, "axis", 0);
    if (!cg_normalize_axis(axis_attr, x->rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)axis_attr, x->rank);
    int64_t dim = x->dims[axis];
    const cg_tensor *split = cg_kernel_input(k, 1);
    int64_t *sizes = NULL;
    int64_t count = 0;
    bool keep = true;
    if (!split) {
        keep = cg_attr_int(k, "keepdims", 1) != 0;
        count = dim;
        sizes = cg_kernel_scratch(k, (size_t)(count ? count : 1) * sizeof *sizes);
        if (!sizes)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        for (int64_t i = 0; i < count; i++)
            sizes[i] = 1;
    } else if (split->dtype != CG_DTYPE_INT64 && split->dtype != CG_DTYPE_INT32) {
        return cg_kernel_fail(k, CG_INVALID, "split must be int32 or int64");
    } else if (split->rank == 0) {
        int64_t chunk = cg_tensor_get_i64(split, 0);
        if (chunk <= 0)
            return cg_kernel_fail(k, CG_INVALID, "split size %lld must be positive",
                                  (long long)chunk);
        count = dim / chunk + (dim % chunk != 0);
        sizes = cg_kernel_scratch(k, (size_t)(count ? count : 1) * sizeof *sizes);
        if (!sizes)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        for (int64_t i = 0; i < count; i++)
            sizes[i] = i == count - 1 && dim % chunk ? dim % chunk : chunk;
    } else if (split->rank == 1) {
        count = split->numel;
        sizes = cg_kernel_scratch(k, (size_t)(count ? count : 1) * sizeof *sizes);
        if (!sizes)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        int64_t total = 0;
        for (int64_t i = 0; i < count; i++) {
            sizes[i] = cg_tensor_get_i64(split, i);
            if (sizes[i] < 0 || sizes[i] > dim - total)
                return cg_kernel_fail(k, CG_INVALID, "split sizes do not sum to dimension %lld",
                                      (long long)dim);
            total += sizes[i];
        }
        if (total != dim)
            return cg_kernel_fail(k, CG_INVALID, "split sizes sum to %lld, dimension is %lld",
                                  (long long)total, (long long)dim);
    } else {
        return cg_kernel_fail(k, CG_INVALID, "split must be a scalar or 1-D");
    }
    cg_value *out;
    if ((st = seq_output(k, 0, x->dtype, (size_t)count, &out)) != CG_OK)
        return st;
    int64_t outer = prod(x->dims, 0, (int)axis), inner = prod(x->dims, (int)axis + 1, x->rank);
    int64_t start = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t dims[CG_MAX_RANK];
        int r = 0;
        for (int d = 0; d < x->rank; d++) {
            if (d != axis)
                dims[r++] = x->dims[d];
            else if (keep)
                dims[r++] = sizes[i];
        }
        cg_value *item;
        if ((st = cg_value_new_tensor(k, x->dtype, r, dims, &item)) != CG_OK)
            return st;
        out->items[out->item_count++] = item;
        for (int64_t o = 0; o < outer; o++) {
            st = copy_elems(k, &item->tensor, o * sizes[i] * inner, x,
                            (o * dim + start) * inner, sizes[i] * inner);
            if (st != CG_OK)
                return st;
        }
        start += sizes[i];
    }
    return CG_OK;
}

cg_status cg_op_concat_from_sequence(cg_kernel_ctx *k)
{
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    if (!cg_kernel_attr(k, "axis"))
        return cg_kernel_fail(k, CG_INVALID, "attribute 'axis' is required");
    int64_t axis_attr = cg_attr_int(k, "axis", 0);
    bool new_axis = cg_attr_int(k, "new_axis", 0) != 0;
    if (s->item_count == 0)
        return cg_kernel_fail(k, CG_INVALID, "ConcatFromSequence of an empty sequence");
    const cg_tensor *t0 = &s->items[0]->tensor;
    int out_rank = t0->rank + (new_axis ? 1 : 0);
    if (out_rank > CG_MAX_RANK || out_rank < 1)
        return cg_kernel_fail(k, CG_INVALID, "items of rank %d cannot be concatenated",
                              t0->rank);
    int64_t axis;
    if (!cg_normalize_axis(axis_attr, out_rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)axis_attr, out_rank);
    /* Every item viewed as [outer, len_i, inner]. */
    int64_t total = 0;
    for (size_t i = 0; i < s->item_count; i++) {
        const cg_tensor *t = &s->items[i]->tensor;
        if (t->dtype != t0->dtype || t->rank != t0->rank)
            return cg_kernel_fail(k, CG_INVALID, "item %zu differs in type or rank", i);
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] != t0->dims[d] && (new_axis || d != axis))
                return cg_kernel_fail(k, CG_INVALID, "item %zu has dimension %d = %lld, item 0 "
                                      "has %lld", i, d, (long long)t->dims[d],
                                      (long long)t0->dims[d]);
        int64_t len = new_axis ? 1 : t->dims[axis];
        if (len > INT64_MAX - total)
            return cg_kernel_fail(k, CG_LIMIT, "concatenated length overflows");
        total += len;
    }
    int64_t dims[CG_MAX_RANK];
    for (int d = 0, j = 0; d < out_rank; d++) {
        if (d == axis) {
            dims[d] = total;
            if (!new_axis)
                j++;
        } else {
            dims[d] = t0->dims[j++];
        }
    }
    cg_tensor *out;
    if ((st = cg_kernel_output(k, 0, t0->dtype, out_rank, dims, &out)) != CG_OK)
        return st;
    int64_t outer = prod(dims, 0, (int)axis), inner = prod(dims, (int)axis + 1, out_rank);
    int64_t at = 0;
    for (size_t i = 0; i < s->item_count; i++) {
        const cg_tensor *t = &s->items[i]->tensor;
        int64_t len = new_axis ? 1 : t->dims[axis];
        for (int64_t o = 0; o < outer; o++) {
            st = copy_elems(k, out, (o * total + at) * inner, t, o * len * inner, len * inner);
            if (st != CG_OK)
                return st;
        }
        at += len;
    }
    return CG_OK;
}

cg_status cg_op_sequence_map(cg_kernel_ctx *k)
{
    const cg_graph *body = graph_attr(k, "body");
    if (!body)
        return cg_kernel_fail(k, CG_INVALID, "attribute 'body' is missing");
    cg_status st;
    const cg_value *s = seq_input(k, 0, &st);
    if (!s)
        return st;
    size_t nin = k->input_count, nout = k->output_count;
    for (size_t i = 1; i < nin; i++) {
        const cg_value *v = k->inputs[i];
        if (!v)
            return cg_kernel_fail(k, CG_INVALID, "input %zu is missing", i);
        if (v->kind == CG_VALUE_SEQUENCE && v->item_count != s->item_count)
            return cg_kernel_fail(k, CG_INVALID, "sequence input %zu has %zu items, input 0 "
                                  "has %zu", i, v->item_count, s->item_count);
    }
    const cg_value **ins = calloc(nin + 1, sizeof *ins);
    cg_value **outs = calloc(nout + 1, sizeof *outs);
    cg_value **seqs = calloc(nout + 1, sizeof *seqs);
    if (!ins || !outs || !seqs) {
        st = cg_kernel_fail(k, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t o = 0; o < nout; o++) {
        if ((st = seq_output(k, o, declared_dtype(k, &body->outputs[o < body->output_count ? o : 0]),
                             s->item_count, &seqs[o])) != CG_OK)
            goto done;
    }
    for (size_t it = 0; it < s->item_count; it++) {
        for (size_t i = 0; i < nin; i++) {
            const cg_value *v = i == 0 ? s : k->inputs[i];
            ins[i] = v->kind == CG_VALUE_SEQUENCE ? v->items[it] : v;
        }
        if ((st = cg_exec_subgraph(k, body, ins, nin, outs, nout)) != CG_OK)
            goto done;
        for (size_t o = 0; o < nout; o++) {
            if (outs[o]->kind == CG_VALUE_TENSOR)
                seqs[o]->seq_dtype = seqs[o]->tensor.dtype = outs[o]->tensor.dtype;
            seqs[o]->items[seqs[o]->item_count++] = outs[o];
            outs[o] = NULL;
        }
    }
done:
    free(ins);
    free(outs);
    free(seqs);
    return st;
}

/* --- optionals --------------------------------------------------------------------- */

cg_status cg_op_optional(cg_kernel_ctx *k)
{
    const cg_value *in = k->input_count > 0 ? k->inputs[0] : NULL;
    cg_value *out;
    cg_status st;
    if (in) {
        if (in->kind == CG_VALUE_OPTIONAL)
            return cg_kernel_fail(k, CG_INVALID, "input is already an optional");
        if ((st = cg_value_clone(k, in, &out)) != CG_OK)
            return st;
        out->optional_is_sequence = in->kind == CG_VALUE_SEQUENCE;
        out->kind = CG_VALUE_OPTIONAL;
        out->has_value = true;
        return cg_kernel_set_output(k, 0, out);
    }
    const cg_attr *ta = cg_kernel_attr(k, "type");
    if (!ta || !ta->tp)
        return cg_kernel_fail(k, CG_INVALID, "an empty Optional needs the 'type' attribute");
    if ((st = cg_kernel_output_value(k, 0, &out)) != CG_OK)
        return st;
    out->kind = CG_VALUE_OPTIONAL;
    out->has_value = false;
    const cg_type *t = ta->tp;
    out->optional_is_sequence = t->kind == CG_TYPE_SEQUENCE;
    if (t->kind == CG_TYPE_SEQUENCE)
        t = t->elem;
    cg_dtype dt = cg_kernel_float_dtype(k, t && t->has_elem_type && cg_dtype_valid(t->elem_type)
                                               ? (cg_dtype)t->elem_type : CG_DTYPE_FLOAT);
    out->tensor.dtype = dt;
    out->seq_dtype = dt;
    return CG_OK;
}

cg_status cg_op_optional_has_element(cg_kernel_ctx *k)
{
    const cg_value *in = k->input_count > 0 ? k->inputs[0] : NULL;
    /* The model's opset decides: the schema table may stop at version 15. */
    if (!in && k->since < 18 && k->opset < 18)
        return cg_kernel_fail(k, CG_INVALID, "input is required before opset 18");
    bool has = in && (in->kind != CG_VALUE_OPTIONAL || in->has_value);
    cg_tensor *t;
    cg_status st = cg_kernel_output(k, 0, CG_DTYPE_BOOL, 0, NULL, &t);
    if (st != CG_OK)
        return st;
    *(uint8_t *)t->data = has;
    return CG_OK;
}

cg_status cg_op_optional_get_element(cg_kernel_ctx *k)
{
    const cg_value *in = k->input_count > 0 ? k->inputs[0] : NULL;
    if (!in)
        return cg_kernel_fail(k, CG_INVALID, "input is required");
    if (in->kind == CG_VALUE_OPTIONAL && !in->has_value)
        return cg_kernel_fail(k, CG_RUNTIME, "the optional input is empty");
    /* A plain tensor or sequence reads as a present optional in every
     * version: loop-carried optionals come back from the body unwrapped. */
    cg_value *out;
    cg_status st = cg_value_clone(k, in, &out);
    if (st != CG_OK)
        return st;
    if (in->kind == CG_VALUE_OPTIONAL) {
        out->kind = in->optional_is_sequence ? CG_VALUE_SEQUENCE : CG_VALUE_TENSOR;
        out->optional_is_sequence = false;
        out->has_value = true;
    }
    return cg_kernel_set_output(k, 0, out);
}
