/*
 * The kernel-side API of src/run/kernel.h: inputs, outputs under the
 * allocation limit (placed in the memory plan's arena when one matches),
 * scratch, attributes, and errors that name the node.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "convgate/budget.h"
#include "run/exec.h"
#include "run/fp64.h"

cg_status cg_kernel_fail(cg_kernel_ctx *k, cg_status status, const char *fmt, ...)
{
    char msg[CG_ERROR_MSG_MAX], lbl[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cg_exec_step_label(k->node, cg_exec_node_index(k), lbl, sizeof lbl);
    return cg_error_set(k->err, status, "%s: %s", lbl, msg);
}

/* --- kernel API: inputs -------------------------------------------------------- */

const cg_tensor *cg_kernel_input(const cg_kernel_ctx *k, size_t i)
{
    if (i >= k->input_count || !k->inputs[i] || k->inputs[i]->kind != CG_VALUE_TENSOR)
        return NULL;
    return &k->inputs[i]->tensor;
}

cg_status cg_kernel_require(cg_kernel_ctx *k, size_t i, const cg_tensor **out)
{
    *out = cg_kernel_input(k, i);
    if (*out)
        return CG_OK;
    if (i < k->input_count && k->inputs[i])
        return cg_kernel_fail(k, CG_INVALID, "input %zu '%s' must be a tensor, got a %s", i,
                              k->node->inputs[i], cg_exec_value_kind_name(k->inputs[i]->kind));
    return cg_kernel_fail(k, CG_INVALID, "required input %zu is missing", i);
}

/* --- kernel API: outputs --------------------------------------------------------- */

cg_status cg_exec_check_alloc(cg_kernel_ctx *k, cg_dtype dtype, int rank, const int64_t *dims,
                              size_t *bytes)
{
    char shape[256];
    if (rank < 0 || rank > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds the runtime maximum "
                              "%d", rank, CG_MAX_RANK);
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) {
            cg_exec_format_shape(rank, dims, shape, sizeof shape);
            return cg_kernel_fail(k, CG_INVALID, "output shape %s has a negative dimension",
                                  shape);
        }
    }
    size_t limit = k->exec ? k->exec->rt->opt.max_alloc_bytes : CG_DEFAULT_MAX_ALLOC;
    int64_t numel;
    if (!cg_shape_numel(rank, dims, &numel)) {
        cg_exec_format_shape(rank, dims, shape, sizeof shape);
        return cg_kernel_fail(k, CG_LIMIT, "output shape %s (%s) has more elements than int64 "
                              "can count", shape, cg_dtype_name(dtype));
    }
    if (dtype == CG_DTYPE_UNDEFINED || (dtype != CG_DTYPE_STRING && cg_dtype_size(dtype) == 0))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output element type %s is not supported",
                              cg_dtype_name(dtype));
    size_t b;
    if (!cg_tensor_byte_size(dtype, numel, &b) || b > limit) {
        cg_exec_format_shape(rank, dims, shape, sizeof shape);
        return cg_kernel_fail(k, CG_LIMIT, "output shape %s (%s) needs %lld x %zu bytes, over "
                              "the allocation limit of %zu bytes", shape, cg_dtype_name(dtype),
                              (long long)numel,
                              cg_tensor_elem_size(dtype),
                              limit);
    }
    *bytes = b;
    return CG_OK;
}

/* Replaces whatever output i held. */
static void clear_output(cg_kernel_ctx *k, size_t i)
{
    uint8_t flags = k->exec ? k->exec->out_flags[i] : 0;
    cg_exec_drop_value(k->exec ? k->exec->rt : NULL, k->outputs[i], cg_exec_out_own(flags));
    k->outputs[i] = NULL;
    if (k->exec)
        k->exec->out_flags[i] = 0;
}

static cg_status kernel_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                               const int64_t *dims, bool zero, cg_tensor **out);

cg_status cg_kernel_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                           const int64_t *dims, cg_tensor **out)
{
    return kernel_output(k, i, dtype, rank, dims, true, out);
}

cg_status cg_kernel_output_uninit(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                                  const int64_t *dims, cg_tensor **out)
{
    return kernel_output(k, i, dtype, rank, dims, dtype == CG_DTYPE_STRING, out);
}

/* Fills data a kernel promised to overwrite: zero, or in sanitizer builds
 * all-ones bytes (NaN floats, -1 integers), so a kernel that leaves an
 * element unwritten fails its tests instead of passing on fresh zero pages. */
static void output_fill(void *data, size_t bytes, bool zero)
{
#ifdef CG_POISON_OUTPUTS
    memset(data, zero ? 0 : 0xff, bytes);
#else
    if (zero)
        memset(data, 0, bytes);
#endif
}

static cg_status kernel_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                               const int64_t *dims, bool zero, cg_tensor **out)
{
    *out = NULL;
    if (i >= k->output_count)
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    size_t bytes;
    cg_status st = cg_exec_check_alloc(k, dtype, rank, dims, &bytes);
    if (st != CG_OK)
        return st;
    clear_output(k, i);
    cg_exec *f = k->exec;
    uint8_t *arena_at = NULL, *heap_at = NULL, *kept_at = NULL;
    int32_t slot = -1;
    if (f && (f->use_arena || f->recording || (f->parent && !f->folding)) &&
        dtype != CG_DTYPE_STRING) {
        const cg_step *st = &f->plan->steps[f->step];
        slot = i == 0 && f->epi_taken ? st->fused_slot : st->out[i];
    }
    if (slot >= 0 && f->use_arena) {
        cg_mem_plan *m = &f->rt->mem;
        if (m->slot_offset[slot] != SIZE_MAX && bytes > 0 && bytes <= m->slot_bytes[slot])
            arena_at = m->arena + m->slot_offset[slot];
        else if (bytes > 0 && !f->plan->slot_is_output[slot])
            m->misses++;
    }
    if (!arena_at && f) {
        cg_budget *b = cg_exec_budget(f);
        if (b && !cg_buffers_make_room(f->rt, f->pending + bytes))
            return cg_kernel_fail(k, CG_LIMIT, "output %zu needs %zu bytes with %llu bytes in "
                                  "use, over the memory budget of %llu bytes (--max-memory)",
                                  i, bytes,
                                  (unsigned long long)(cg_budget_in_use(b) + f->pending),
                                  (unsigned long long)cg_budget_limit(b));
        f->pending += bytes;
    }
    cg_value *v = calloc(1, sizeof *v);
    if (!v)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating output %zu", i);
    /* a recording run's intermediates go to the value heap, whose pages
     * become the arena the plan places them in; a subgraph's to the kept
     * heap (graph outputs are the caller's or the parent's: plain blocks) */
    if (slot >= 0 && !arena_at && bytes > 0 && !f->plan->slot_is_output[slot]) {
        if (f->recording) {
            heap_at = cg_heap_alloc(f->rt, bytes);
            if (!heap_at)
                f->rt->heap.misses++;
        } else if (f->parent) {
            kept_at = cg_heap_alloc_kept(f->rt, bytes);
        }
    }
    if (arena_at || heap_at || kept_at) {
        uint8_t *at = arena_at ? arena_at : heap_at ? heap_at : kept_at;
        output_fill(at, bytes, zero);
        v->tensor.data = at;
    } else if (f && dtype != CG_DTYPE_STRING) {
        v->tensor.data = cg_buffer_get(f->rt, bytes);
        if (!v->tensor.data) {
            free(v);
            return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating %zu bytes for output "
                                  "%zu", bytes, i);
        }
        output_fill(v->tensor.data, bytes, zero);
    } else {
        v->tensor.data = calloc(1, bytes ? bytes : 1);
        if (!v->tensor.data) {
            free(v);
            return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating %zu bytes for output "
                                  "%zu", bytes, i);
        }
    }
    v->kind = CG_VALUE_TENSOR;
    v->has_value = true;
    v->seq_dtype = dtype;
    v->tensor.dtype = dtype;
    v->tensor.rank = rank;
    int64_t numel = 0;
    for (int d = 0; d < rank; d++)
        v->tensor.dims[d] = dims[d];
    (void)cg_shape_numel(rank, dims, &numel); /* checked by cg_exec_check_alloc */
    v->tensor.numel = numel;
    k->outputs[i] = v;
    if (f)
        f->out_flags[i] = (uint8_t)(CG_OUT_PLANNABLE | (arena_at ? CG_OUT_ARENA : 0) |
                                    (heap_at ? CG_OUT_HEAP : 0) | (kept_at ? CG_OUT_KEPT : 0) |
                                    (!arena_at && !heap_at && !kept_at &&
                                             dtype != CG_DTYPE_STRING
                                         ? CG_OUT_POOLED : 0));
    *out = &v->tensor;
    return CG_OK;
}

cg_status cg_kernel_output_value(cg_kernel_ctx *k, size_t i, cg_value **out)
{
    *out = NULL;
    if (i >= k->output_count)
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    cg_value *v = calloc(1, sizeof *v);
    if (!v)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating output %zu", i);
    clear_output(k, i);
    k->outputs[i] = v;
    *out = v;
    return CG_OK;
}

cg_status cg_kernel_set_output(cg_kernel_ctx *k, size_t i, cg_value *v)
{
    if (i >= k->output_count) {
        cg_value_free(v);
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    }
    clear_output(k, i);
    k->outputs[i] = v;
    return CG_OK;
}

/* Counts bytes a kernel is about to allocate or hold against the budget
 * (they are reserved for real once the step's outputs are stored). */
cg_status cg_kernel_take_budget(cg_kernel_ctx *k, uint64_t bytes)
{
    cg_exec *f = k->exec;
    cg_budget *b = cg_exec_budget(f);
    if (!b)
        return CG_OK;
    if (!cg_buffers_make_room(f->rt, f->pending + bytes))
        return cg_kernel_fail(k, CG_LIMIT, "%llu bytes more with %llu bytes in use would go "
                              "over the memory budget of %llu bytes (--max-memory)",
                              (unsigned long long)bytes,
                              (unsigned long long)(cg_budget_in_use(b) + f->pending),
                              (unsigned long long)cg_budget_limit(b));
    f->pending += bytes;
    return CG_OK;
}

bool cg_kernel_time_up(const cg_kernel_ctx *k)
{
    cg_budget *b = cg_exec_budget(k->exec);
    return b && cg_budget_expired(b);
}

cg_status cg_kernel_check_time(cg_kernel_ctx *k)
{
    cg_budget *b = cg_exec_budget(k->exec);
    if (!b || !cg_budget_expired(b))
        return CG_OK;
    return cg_kernel_fail(k, CG_LIMIT, "the time limit of %g s was reached in this node "
                          "(--time-limit)", cg_budget_seconds(b));
}

cg_status cg_value_new_tensor(cg_kernel_ctx *k, cg_dtype dtype, int rank, const int64_t *dims,
                              cg_value **out)
{
    *out = NULL;
    size_t bytes;
    cg_status st = cg_exec_check_alloc(k, dtype, rank, dims, &bytes);
    if (st != CG_OK)
        return st;
    if ((st = cg_kernel_take_budget(k, bytes)) != CG_OK)
        return st;
    st = cg_value_alloc_tensor(dtype, rank, dims, out, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: ", cg_exec_step_label(k->node, cg_exec_node_index(k), lbl, sizeof lbl));
    }
    return st;
}

cg_status cg_value_clone(cg_kernel_ctx *k, const cg_value *src, cg_value **out)
{
    *out = NULL;
    cg_status st = cg_kernel_take_budget(k, cg_value_bytes(src));
    if (st != CG_OK)
        return st;
    st = cg_value_copy(src, out, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: ", cg_exec_step_label(k->node, cg_exec_node_index(k), lbl, sizeof lbl));
    }
    return st;
}

void *cg_kernel_scratch(cg_kernel_ctx *k, size_t bytes)
{
    return cg_frame_scratch(k->exec, bytes);
}

/* --- kernel API: attributes -------------------------------------------------- */

const cg_attr *cg_kernel_attr(const cg_kernel_ctx *k, const char *name)
{
    return cg_node_attr(k->node, name);
}

static int64_t attr_int(const cg_kernel_ctx *k, const char *name, int64_t dflt)
{
    return cg_node_attr_int(k->node, name, dflt);
}

/* In the float64 mode an element-type attribute that names a float type
 * reads as DOUBLE (run/fp64.c has the table). */
int64_t cg_attr_int(const cg_kernel_ctx *k, const char *name, int64_t dflt)
{
    int64_t v = attr_int(k, name, dflt);
    return k->exec && k->exec->rt->opt.float64 ? cg_fp64_attr_int(k->node, name, v) : v;
}

cg_dtype cg_kernel_float_dtype(const cg_kernel_ctx *k, cg_dtype dt)
{
    return k->exec && k->exec->rt->opt.float64 ? cg_fp64_dtype(dt) : dt;
}

float cg_attr_float(const cg_kernel_ctx *k, const char *name, float dflt)
{
    return cg_node_attr_float(k->node, name, dflt);
}

const char *cg_attr_string(const cg_kernel_ctx *k, const char *name, const char *dflt)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a || !(a->type == CG_ATTR_STRING || (!a->has_type && a->s.data)))
        return dflt;
    char *s = cg_kernel_scratch((cg_kernel_ctx *)k, a->s.len + 1);
    if (!s)
        return dflt;
    if (a->s.len)
        memcpy(s, a->s.data, a->s.len);
    s[a->s.len] = '\0';
    return s;
}

const int64_t *cg_attr_ints(const cg_kernel_ctx *k, const char *name, size_t *n)
{
    return cg_node_attr_ints(k->node, name, n);
}

const float *cg_attr_floats(const cg_kernel_ctx *k, const char *name, size_t *n)
{
    return cg_node_attr_floats(k->node, name, n);
}

cg_status cg_attr_tensor(cg_kernel_ctx *k, const char *name, cg_tensor **out)
{
    *out = NULL;
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a || !a->t)
        return cg_kernel_fail(k, CG_INVALID, "tensor attribute '%s' is missing", name);
    cg_value *v = NULL;
    cg_status st = cg_value_from_tensor_proto(a->t, &v, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: attribute '%s': ",
                        cg_exec_step_label(k->node, cg_exec_node_index(k), lbl, sizeof lbl), name);
        return st;
    }
    if (k->exec && k->exec->rt->opt.float64 && cg_fp64_promotes(v->tensor.dtype)) {
        st = cg_fp64_promote_value(v, false, k->err); /* Constant, ConstantOfShape values */
        if (st != CG_OK) {
            cg_value_free(v);
            return st;
        }
    }
    /* Move it into scratch so it is released with the kernel's other scratch. */
    size_t bytes = cg_tensor_bytes(&v->tensor);
    cg_tensor *t = cg_kernel_scratch(k, sizeof *t);
    void *data = t ? cg_kernel_scratch(k, bytes) : NULL;
    if (!t || !data) {
        cg_value_free(v);
        return cg_kernel_fail(k, CG_NOMEM, "out of memory reading attribute '%s'", name);
    }
    *t = v->tensor;
    t->data = data;
    if (v->tensor.dtype == CG_DTYPE_STRING) {
        cg_string *dst = data;
        for (int64_t i = 0; i < v->tensor.numel; i++) {
            size_t len;
            const char *src = cg_tensor_string(&v->tensor, i, &len);
            dst[i].len = len;
            dst[i].data = cg_kernel_scratch(k, len + 1);
            if (!dst[i].data) {
                cg_value_free(v);
                return cg_kernel_fail(k, CG_NOMEM, "out of memory reading attribute '%s'",
                                      name);
            }
            if (len)
                memcpy(dst[i].data, src, len);
            dst[i].data[len] = '\0';
        }
    } else if (bytes) {
        memcpy(data, v->tensor.data, bytes);
    }
    cg_value_free(v);
    *out = t;
    return CG_OK;
}
