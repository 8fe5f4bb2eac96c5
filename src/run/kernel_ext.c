/*
 * The kernel API for speed (src/run/kernel.h): threads (a kernel asks its
 * runtime how many threads it may use, splits its work into shares that
 * depend only on that count, and runs them on the runtime's pool,
 * src/core/threadpool.c), the vector level, and per-node state that
 * outlives a run (weights packed or converted once, at the first run).
 */
#include "run/cpu.h"
#include "core/threadpool.h"
#include "run/exec.h"

int cg_kernel_threads(const cg_kernel_ctx *k)
{
    return k->exec ? cg_threadpool_size(k->exec->rt->pool) : 1;
}

void cg_kernel_parallel(cg_kernel_ctx *k, void (*fn)(void *arg, int t, int n), void *arg)
{
    cg_threadpool_run(k->exec ? k->exec->rt->pool : NULL, fn, arg);
}

void cg_kernel_parallel_work(cg_kernel_ctx *k, double work,
                             void (*fn)(void *arg, int t, int n), void *arg)
{
    if (work < CG_PARALLEL_MIN_WORK)
        fn(arg, 0, 1);
    else
        cg_kernel_parallel(k, fn, arg);
}

void cg_kernel_share(int64_t count, int64_t align, int t, int n, int64_t *lo, int64_t *hi)
{
    if (align < 1)
        align = 1;
    int64_t units = (count + align - 1) / align;
    int64_t per = units / n, extra = units % n;
    /* the first `extra` shares take one unit more */
    int64_t start = t * per + (t < extra ? t : extra);
    int64_t len = per + (t < extra ? 1 : 0);
    *lo = start * align < count ? start * align : count;
    *hi = (start + len) * align < count ? (start + len) * align : count;
}

cg_simd cg_kernel_simd(const cg_kernel_ctx *k)
{
    return k->exec ? k->exec->rt->simd : cg_simd_resolve(CG_SIMD_AUTO);
}

/* The step being run. Its state is a cache the runtime owns: written
 * through the plan's const view, freed by cg_plan_free. */
static cg_step *running_step(const cg_kernel_ctx *k)
{
    const cg_exec *f = k->exec;
    if (!f || !f->plan || f->step >= f->plan->step_count || f->plan->steps[f->step].node != k->node)
        return NULL;
    return (cg_step *)&f->plan->steps[f->step];
}

void *cg_kernel_state(const cg_kernel_ctx *k)
{
    cg_step *st = running_step(k);
    return st ? st->state : NULL;
}

bool cg_kernel_set_state(cg_kernel_ctx *k, void *state, void (*free_fn)(void *))
{
    cg_step *st = running_step(k);
    if (!st)
        return false;
    if (st->state && st->state_free)
        st->state_free(st->state);
    st->state = state;
    st->state_free = free_fn;
    return true;
}

bool cg_kernel_input_is_const(const cg_kernel_ctx *k, size_t i)
{
    const cg_exec *f = k->exec;
    cg_step *st = running_step(k);
    if (!st || i >= st->node->input_count || st->in[i].slot < 0)
        return false;
    const cg_plan *p = f->plan;
    for (int32_t up = 0; up < st->in[i].up && p; up++)
        p = p->parent;
    if (!p)
        return false;
    int32_t slot = st->in[i].slot;
    if (p->slot_kind[slot] != CG_SLOT_INIT)
        return false;
    /* a graph input with an initializer is only a default: a feed replaces it */
    for (size_t j = 0; j < p->graph->input_count; j++)
        if (p->input_slots[j] == slot)
            return false;
    return true;
}

/* The INIT slot input i reads, or -1, and *pp the plan that holds it: the
 * kernel's own, or an enclosing graph's for a capture. */
static int32_t input_init_slot(const cg_kernel_ctx *k, size_t i, cg_plan **pp)
{
    const cg_step *st = running_step(k);
    *pp = NULL;
    if (!st || i >= st->node->input_count || st->in[i].slot < 0)
        return -1;
    const cg_exec *f = k->exec;
    for (int32_t up = 0; up < st->in[i].up && f; up++)
        f = f->parent;
    if (!f || f->plan->slot_kind[st->in[i].slot] != CG_SLOT_INIT)
        return -1;
    *pp = (cg_plan *)f->plan;
    return st->in[i].slot;
}

const void *cg_kernel_input_source(const cg_kernel_ctx *k, size_t i)
{
    cg_plan *p;
    int32_t s = input_init_slot(k, i, &p);
    return s >= 0 ? cg_plan_copy_source(p, s) : NULL;
}

void cg_kernel_input_fill(cg_kernel_ctx *k, size_t i)
{
    cg_plan *p;
    int32_t s = input_init_slot(k, i, &p);
    /* an initializer the float64 mode promotes per step reaches the kernel
     * as a promoted copy (frame.c), made from the model's bytes: its own
     * copy is never read */
    if (s >= 0 && !p->init_lazy64[s])
        cg_plan_materialize_slot(p, s);
}

bool cg_kernel_input_stored64(const cg_kernel_ctx *k, size_t i)
{
    const cg_step *st = running_step(k);
    const cg_value *v = i < k->input_count ? k->inputs[i] : NULL;
    return st && i < 32 && (st->stored64 >> i & 1u) && v && v->kind == CG_VALUE_TENSOR &&
           v->tensor.dtype == CG_DTYPE_FLOAT;
}

void cg_kernel_state_covers(cg_kernel_ctx *k, size_t i)
{
    cg_step *st = running_step(k);
    if (st && i < 32)
        st->state_covers |= 1u << i;
}

const cg_epilogue *cg_kernel_epilogue(const cg_kernel_ctx *k)
{
    cg_step *st = running_step(k);
    if (!st || st->fused_slot < 0)
        return NULL;
    const cg_epilogue *e = &k->exec->epi_run; /* bound by the frame for this run */
    return e->add || e->kind != CG_EPI_NONE ? e : NULL;
}

void cg_kernel_epilogue_take(cg_kernel_ctx *k)
{
    if (cg_kernel_epilogue(k))
        k->exec->epi_taken = true;
}
