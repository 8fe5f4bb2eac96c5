/*
 * Runtime tests on models built in memory: plain graphs, the memory plan
 * (second run with the same shapes reuses one arena; other shapes fall back),
 * liveness (release points, outer-scope uses inside subgraphs), If/Loop/Scan,
 * sequences and optionals, initializer defaults, input checks, and the error
 * paths (unknown op, undefined input, allocation limit, subgraph depth,
 * body signature mismatch, bad positions) with the node named in the message;
 * and bulk memory (an initializer's aligned copy, a big value buffer, the
 * arena) asked of the kernel in huge pages, the heaps' first huge page
 * faulted in at set-up.
 */
#define _DEFAULT_SOURCE /* mincore */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "convgate/budget.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "core/arena.h"
#include "core/mapfile.h"
#include "run/exec.h"
#include "run/initshare.h"
#include "testlib.h"

/* --- model builder: testlib's, on the model being built -------------------- */

#define CAP 64

static cg_model *M;

static cg_model *model_new(int64_t opset) { return M = test_model_new(opset); }

static cg_graph *graph_new(const char *name) { return test_graph_new(M, name, CAP); }

static cg_model *model_graph(int64_t opset, const char *ins, const char *outs)
{
    return M = test_model_graph(opset, CAP, ins, outs);
}

static cg_node *node(cg_graph *g, const char *op, const char *name, const char *ins,
                     const char *outs)
{
    return test_node(M, g, op, name, ins, outs);
}

static cg_type *ttype(cg_dtype dt, int rank, const int64_t *dims)
{
    return test_type(M, dt, rank, dims);
}

static cg_value *tensor_f32(int rank, const int64_t *dims, const float *vals)
{
    cg_value *v = NULL;
    if (cg_value_alloc_tensor(CG_DTYPE_FLOAT, rank, dims, &v, NULL) != CG_OK)
        return NULL;
    memcpy(v->tensor.data, vals, (size_t)v->tensor.numel * sizeof(float));
    return v;
}

static cg_value *scalar(cg_dtype dt, int64_t x)
{
    cg_value *v = NULL;
    if (cg_value_alloc_tensor(dt, 0, NULL, &v, NULL) != CG_OK)
        return NULL;
    cg_tensor_set_i64(&v->tensor, 0, x);
    return v;
}

static bool same_f32(const cg_value *v, int rank, const int64_t *dims, const float *want)
{
    if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT ||
        v->tensor.rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (v->tensor.dims[i] != dims[i])
            return false;
    const float *d = v->tensor.data;
    for (int64_t i = 0; i < v->tensor.numel; i++)
        if (!(fabsf(d[i] - want[i]) <= 1e-6f))
            return false;
    return true;
}

/* Runs with one named input; returns the status, outputs in *outs. */
static cg_status run1(cg_runtime *rt, const char *name, cg_value *in, cg_named_value **outs,
                      size_t *n, cg_error *err)
{
    cg_named_value iv = {name, in};
    cg_error_clear(err);
    return cg_runtime_run(rt, in ? &iv : NULL, in ? 1 : 0, outs, n, err);
}

/* --- tests ----------------------------------------------------------------- */

static void test_registry(void)
{
    cg_registry_index idx;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_registry_index_init(&idx, &err);
    EXPECT(st == CG_OK, "duplicate kernel rows: %s", err.msg);
    EXPECT(cg_registry_find(&idx, "", "Loop") != NULL, "Loop not registered");
    EXPECT(cg_registry_find(&idx, "ai.onnx", "If") != NULL, "ai.onnx alias");
    EXPECT(cg_registry_find(&idx, "", "NoSuchOp") == NULL, "phantom op");
    cg_registry_index_free(&idx);
}

/* x -> a=Add(x,x) -> b=Add(a,a) -> c=Add(b,b) -> y=Add(c,x): a chain whose
 * intermediates can share memory. */
static cg_model *chain_model(void)
{
    cg_model *m = model_new(13);
    cg_graph *g = graph_new("main");
    int64_t sym[1] = {-1};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, sym));
    node(g, "Add", "a", "x,x", "a");
    node(g, "Add", "b", "a,a", "b");
    node(g, "Add", "c", "b,b", "c");
    node(g, "Add", "y", "c,x", "y");
    test_graph_output(g, "y", ttype(CG_DTYPE_FLOAT, 1, sym));
    m->graph = g;
    return m;
}

static void test_chain_and_memory_plan(void)
{
    cg_model *m = chain_model();

    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    /* Liveness: a dies at step 1, b at 2, c at 3; y is an output. */
    const cg_plan *p = rt->main;
    EXPECT(p->steps[1].release_count == 1 &&
              strcmp(p->slot_names[p->steps[1].release[0]], "a") == 0, "a not released at 1");
    EXPECT(p->steps[3].release_count == 1 &&
              strcmp(p->slot_names[p->steps[3].release[0]], "c") == 0, "c not released at 3");
    EXPECT(p->steps[0].release_count == 0, "nothing dies at step 0");

    int64_t d4[1] = {4}, d2[1] = {2};
    float x4[4] = {1, 2, 3, -1}, want4[4] = {9, 18, 27, -9};
    for (int run = 0; run < 3; run++) {
        cg_value *x = tensor_f32(1, d4, x4);
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = run1(rt, "x", x, &outs, &n, &err);
        EXPECT(st == CG_OK && n == 1, "run %d: %s", run, err.msg);
        if (st == CG_OK)
            EXPECT(same_f32(outs[0].value, 1, d4, want4), "run %d: wrong result", run);
        if (run == 0)
            EXPECT(rt->mem.valid && rt->mem.arena_bytes > 0, "no memory plan after run 0");
        if (run == 0)
            /* a, b, c are 16 bytes each (64 aligned); a and c may share. */
            EXPECT(rt->mem.arena_bytes <= 2 * 64, "arena %zu bytes: no sharing",
                  rt->mem.arena_bytes);
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
    }
    /* A different shape falls back to per-value allocation and re-plans. */
    float x2[2] = {0.5f, 1}, want2[2] = {4.5f, 9};
    cg_value *x = tensor_f32(1, d2, x2);
    cg_named_value *outs = NULL;
    size_t n = 0;
    st = run1(rt, "x", x, &outs, &n, &err);
    EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d2, want2), "other shape: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    cg_value_free(x);

    /* Input checks. */
    cg_value *bad = scalar(CG_DTYPE_INT64, 3);
    st = run1(rt, "x", bad, &outs, &n, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "'x'"), "dtype mismatch: %s", err.msg);
    cg_value_free(bad);
    st = run1(rt, NULL, NULL, &outs, &n, &err);
    EXPECT(st == CG_USAGE && strstr(err.msg, "'x'"), "missing input: %s", err.msg);
    cg_runtime_free(rt);

    /* Allocation limit: a 4-element float output is 16 bytes. */
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.max_alloc_bytes = 8;
    cg_error_clear(&err);
    st = cg_runtime_init(m, &opt, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        x = tensor_f32(1, d4, x4);
        st = run1(rt, "x", x, &outs, &n, &err);
        EXPECT(st == CG_LIMIT && strstr(err.msg, "node 'a' (Add)") && strstr(err.msg, "[4]") &&
                  strstr(err.msg, "bytes"), "limit: %s", err.msg);
        cg_value_free(x);
        cg_runtime_free(rt);
    }
out:
    cg_model_free(m);
}

/* Buffers the runtime keeps across runs (kernel scratch chunks, the pool of
 * value buffers) count against the budget for as long as they are kept; the
 * pool gives its idle buffers back before a run is refused; a refused run
 * leaves the runtime usable; freeing the runtime gives every byte back. */
/* A random DAG of 300 Adds over 1-D values of four widths (so the
 * planner's size order and gaps matter), each node reading two random
 * earlier values: lifetimes of every length across ten time buckets of
 * the planner's index. Every two planned values alive at a common step
 * must have disjoint arena ranges, and the planned run (run 1) must give
 * the bytes the unplanned one (run 0) gave. */
static void test_memory_plan_random_dag(void)
{
    enum { NODES = 300 };
    static const int64_t widths[4] = {4, 16, 40, 100};
    cg_model *m = model_new(13);
    cg_graph *g = test_graph_new(M, "main", NODES + 1);
    const int64_t one[1] = {1};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, one));
    cg_rng rng;
    cg_rng_seed(&rng, 7);
    int width_of[NODES];
    char ins[64], name[16];
    /* each width class starts from its constant c0..c3 (x, of shape [1],
     * broadcasts against any of them) */
    static const char *const cname[4] = {"c0", "c1", "c2", "c3"};
    for (int w = 0; w < 4; w++) {
        float vals[100];
        for (int64_t i = 0; i < widths[w]; i++)
            vals[i] = (float)(w + 1) * 0.25f + (float)i * 0.001f;
        test_graph_init_f32(M, g, cname[w], 1, &widths[w], vals);
    }
    for (int i = 0; i < NODES; i++) {
        int w = (int)(cg_rng_next(&rng) % 4);
        /* an earlier value of the same width, or the width's constant
         * plus x; the first nodes of a width start from its constant */
        int a = -1, b = -1;
        for (int tries = 0; tries < 8 && (a < 0 || b < 0); tries++) {
            int j = i ? (int)(cg_rng_next(&rng) % (uint64_t)i) : -1;
            if (j >= 0 && width_of[j] == w) {
                if (a < 0)
                    a = j;
                else
                    b = j;
            }
        }
        char an[16], bn[16];
        if (a >= 0)
            snprintf(an, sizeof an, "v%d", a);
        else
            snprintf(an, sizeof an, "c%d", w);
        if (b >= 0)
            snprintf(bn, sizeof bn, "v%d", b);
        else
            snprintf(bn, sizeof bn, "x");
        snprintf(ins, sizeof ins, "%s,%s", an, bn);
        snprintf(name, sizeof name, "v%d", i);
        node(g, "Add", name, ins, name);
        width_of[i] = w;
    }
    /* the output: the last value (the others die where their readers end) */
    const int64_t wl[1] = {widths[width_of[NODES - 1]]};
    test_graph_output(g, g->nodes[NODES - 1].outputs[0], ttype(CG_DTYPE_FLOAT, 1, wl));
    m->graph = g;

    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    float x1[1] = {0.5f}, *first = NULL;
    int64_t first_n = 0;
    for (int run = 0; run < 2; run++) {
        cg_value *x = tensor_f32(1, one, x1);
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = run1(rt, "x", x, &outs, &n, &err);
        EXPECT(st == CG_OK && n == 1, "run %d: %s", run, err.msg);
        if (st == CG_OK && n == 1) {
            const cg_tensor *t = &outs[0].value->tensor;
            if (run == 0) {
                first_n = t->numel;
                first = malloc((size_t)t->numel * sizeof *first);
                if (first)
                    memcpy(first, t->data, (size_t)t->numel * sizeof *first);
            } else {
                EXPECT(first && t->numel == first_n &&
                           memcmp(first, t->data, (size_t)first_n * sizeof *first) == 0,
                       "the planned run differs from the unplanned one");
            }
        }
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
    }
    free(first);
    EXPECT(rt->mem.valid, "no memory plan after run 0");
    const cg_plan *p = rt->main;
    size_t planned = 0, pairs = 0;
    for (size_t s = 0; s < p->slot_count; s++) {
        if (rt->mem.slot_offset[s] == SIZE_MAX)
            continue;
        planned++;
        int32_t f1 = rt->slot_first ? rt->slot_first[s] : p->slot_producer[s];
        int32_t l1 = rt->slot_last ? rt->slot_last[s] : p->slot_last_use[s];
        for (size_t u = s + 1; u < p->slot_count; u++) {
            if (rt->mem.slot_offset[u] == SIZE_MAX)
                continue;
            int32_t f2 = rt->slot_first ? rt->slot_first[u] : p->slot_producer[u];
            int32_t l2 = rt->slot_last ? rt->slot_last[u] : p->slot_last_use[u];
            if (f1 > l2 || f2 > l1)
                continue;
            pairs++;
            size_t o1 = rt->mem.slot_offset[s], o2 = rt->mem.slot_offset[u];
            bool apart = o1 + rt->mem.slot_bytes[s] <= o2 || o2 + rt->mem.slot_bytes[u] <= o1;
            EXPECT(apart, "values %s and %s are alive together and share arena bytes",
                   p->slot_names[s], p->slot_names[u]);
        }
    }
    EXPECT(planned > NODES / 2 && pairs > 0, "%zu values planned, %zu live pairs", planned,
           pairs);
out:
    cg_runtime_free(rt);
    cg_model_free(m);
}

/* Where the observer saw the data of values a, b and c (chain_model). */
typedef struct where_log {
    const void *at[3];
} where_log;

static cg_status observe_where(void *user, const cg_node *node, const char *name,
                               const cg_value *v)
{
    (void)node;
    where_log *w = user;
    if (name[0] >= 'a' && name[0] <= 'c' && !name[1])
        w->at[name[0] - 'a'] = v->tensor.data;
    return CG_OK;
}

/* Whether a, b and c of the last run lay in the memory plan's arena. */
static bool in_arena(const cg_runtime *rt, const where_log *w)
{
    const uint8_t *lo = rt->mem.arena, *hi = lo + rt->mem.arena_bytes;
    for (int i = 0; i < 3; i++)
        if (!lo || !w->at[i] || (const uint8_t *)w->at[i] < lo ||
            (const uint8_t *)w->at[i] >= hi)
            return false;
    return true;
}

/* The first run (and a run with new input shapes) places its intermediates
 * in the value heap, whose pages become the arena of the plan built from
 * it: the run that records the plan already runs in the memory the planned
 * runs use (no separate blocks faulted in, then a fresh arena). */
static void test_first_run_in_arena(void)
{
    cg_model *m = chain_model();
    where_log w;
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.observe = observe_where;
    opt.observe_user = &w;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, &opt, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    enum { N = 1 << 16 }; /* 256 KiB values */
    static float xs[N], want[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 5) - 2.0f;
        want[i] = 9.0f * xs[i];
    }
    int64_t sizes[3] = {N, N, N / 4};
    const uint8_t *arena0 = NULL;
    for (int r = 0; r < 3; r++) {
        int64_t d[1] = {sizes[r]};
        cg_value *x = tensor_f32(1, d, xs);
        cg_named_value *outs = NULL;
        size_t n = 0;
        memset(&w, 0, sizeof w);
        bool recording = r != 1;
        uint64_t misses = rt->heap.misses;
        st = run1(rt, "x", x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d, want), "run %d: %s", r, err.msg);
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
        /* the plan is built after the run: a recording run's values lie
         * in its arena all the same */
        EXPECT(rt->mem.valid && in_arena(rt, &w), "run %d: a %p, b %p, c %p outside the "
               "arena [%p, +%zu)", r, w.at[0], w.at[1], w.at[2], (void *)rt->mem.arena,
               rt->mem.arena_bytes);
        EXPECT(rt->heap.misses == misses, "run %d: %llu outputs missed the heap", r,
               (unsigned long long)(rt->heap.misses - misses));
        if (recording)
            EXPECT(rt->mem.arena_map_bytes > 0 && !rt->heap.base,
                   "run %d: the plan did not take the heap's reservation", r);
        if (r == 0)
            arena0 = rt->mem.arena;
        if (r == 1)
            EXPECT(rt->mem.arena == arena0, "a run with the same shapes re-planned");
    }
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* The heap itself: best fit in freed gaps, merged gaps, a heap that empties
 * starts over, and no adoption while a block is out. */
static void test_value_heap(void)
{
    cg_model *m = chain_model();
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    uint8_t *a = cg_heap_alloc(rt, 100), *b = cg_heap_alloc(rt, 1000), *c = cg_heap_alloc(rt, 10),
            *d = cg_heap_alloc(rt, 64);
    EXPECT(a && b == a + 128 && c == b + 1024 && d == c + 64, "bump: %p %p %p %p", (void *)a,
           (void *)b, (void *)c, (void *)d);
    if (!a || !b || !c || !d)
        goto out_rt;
    memset(a, 1, 100);
    memset(b, 2, 1000);
    cg_heap_free(rt, b);
    cg_heap_free(rt, a); /* merges with b's gap: [0, 1152) */
    EXPECT(rt->heap.free_count == 1 && rt->heap.free_spans[0].len == 1152, "%zu gaps, first %zu",
           rt->heap.free_count, rt->heap.free_count ? rt->heap.free_spans[0].len : 0);
    uint8_t *e = cg_heap_alloc(rt, 1100);
    EXPECT(e == a, "best fit: %p, want %p", (void *)e, (void *)a);
    size_t map_bytes = 0;
    EXPECT(!cg_heap_adopt(rt, 4096, &map_bytes), "adopted with blocks out");
    cg_heap_free(rt, d);
    cg_heap_free(rt, e);
    cg_heap_free(rt, c);
    EXPECT(rt->heap.top == 0 && rt->heap.free_count == 0 && rt->heap.live_count == 0,
           "emptied: top %zu, %zu gaps", rt->heap.top, rt->heap.free_count);
    uint8_t *arena = cg_heap_adopt(rt, 4096, &map_bytes);
    EXPECT(arena == a && map_bytes >= 4096 && !rt->heap.base, "adopt: %p", (void *)arena);
    if (arena) {
        memset(arena, 3, 4096); /* committed */
        cg_unmap_anon(arena, map_bytes);
    }
out_rt:
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* The chain of chain_model in the then-branch of an If on input "c": its
 * values live in a subgraph's frame, which has no memory plan (the pool's
 * values). */
static cg_model *if_chain_model(void)
{
    cg_model *m = model_new(13);
    cg_graph *g = graph_new("main");
    int64_t sym[1] = {-1};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, sym));
    test_graph_input(g, "c", ttype(CG_DTYPE_BOOL, 0, NULL));
    cg_node *n = node(g, "If", "branch", "c", "y");
    cg_graph *then_g = graph_new("then"), *else_g = graph_new("else");
    node(then_g, "Add", "a", "x,x", "a");
    node(then_g, "Add", "b", "a,a", "b");
    node(then_g, "Add", "c", "b,b", "c");
    node(then_g, "Add", "y", "c,x", "y_then");
    test_graph_output(then_g, "y_then", NULL);
    node(else_g, "Identity", "", "x", "y_else");
    test_graph_output(else_g, "y_else", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    test_graph_output(g, "y", ttype(CG_DTYPE_FLOAT, 1, sym));
    m->graph = g;
    return m;
}

/* Runs if_chain_model's then-branch on x. */
static cg_status run_then(cg_runtime *rt, cg_value *x, cg_named_value **outs, size_t *n,
                          cg_error *err)
{
    cg_value *c = scalar(CG_DTYPE_BOOL, 1);
    cg_named_value ins[2] = {{"x", x}, {"c", c}};
    cg_error_clear(err);
    cg_status st = cg_runtime_run(rt, ins, 2, outs, n, err);
    cg_value_free(c);
    return st;
}

/* A subgraph's values (If branch) go to the kept heap: its pages are
 * committed by the first run and the next runs use them again, with no new
 * commit and nothing from the pool. */
static void test_subgraph_values_kept(void)
{
    cg_model *m = if_chain_model();
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    enum { N = 1 << 16 };
    static float xs[N], want[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 3) - 1.0f;
        want[i] = 9.0f * xs[i];
    }
    const uint8_t *base = NULL;
    size_t committed = 0;
    for (int r = 0; r < 3; r++) {
        int64_t d[1] = {N};
        cg_value *x = tensor_f32(1, d, xs);
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = run_then(rt, x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d, want), "run %d: %s", r, err.msg);
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
        /* a, b, c: 256 KiB each, two alive at once */
        EXPECT(rt->kept.base && rt->kept.committed >= 2 * N * sizeof(float) &&
                   rt->kept.live_count == 0 && rt->buffers.count == 0,
               "run %d: kept %p, %zu committed, %zu out, %zu pooled", r,
               (void *)rt->kept.base, rt->kept.committed, rt->kept.live_count,
               rt->buffers.count);
        if (r == 0) {
            base = rt->kept.base;
            committed = rt->kept.committed;
        } else {
            EXPECT(rt->kept.base == base && rt->kept.committed == committed,
                   "run %d: the kept heap moved or grew (%zu bytes, %zu after run 0)", r,
                   rt->kept.committed, committed);
        }
    }
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* Whether the first page at p is resident. */
static bool page_resident(const void *p)
{
    unsigned char v = 0;
    long page = sysconf(_SC_PAGESIZE);
    if (!p || page <= 0)
        return false;
    uintptr_t a = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page;
    return mincore((void *)a, (size_t)page, &v) == 0 && (v & 1);
}

/* Set-up commits the first huge page of the value heap (and of the kept
 * heap where the model has subgraphs) and faults it in, so that a small
 * model's first run does not pay for zeroing it; a model without
 * subgraphs reserves no kept heap. The runs after it give the same values,
 * and the recording run's values land on those pages. */
static void test_heaps_prefaulted(void)
{
    cg_model *plain = chain_model(), *branchy = if_chain_model();
    cg_runtime *rp = NULL, *rb = NULL;
    cg_error err;
    cg_error_clear(&err);
    bool ok = cg_runtime_init(plain, NULL, &rp, &err) == CG_OK &&
              cg_runtime_init(branchy, NULL, &rb, &err) == CG_OK;
    EXPECT(ok, "init: %s", err.msg);
    if (!ok)
        goto out;
    EXPECT(rp->heap.base && rp->heap.committed >= CG_HUGE_MIN && !rp->kept.base,
           "plain: heap %p (%zu committed), kept %p", (void *)rp->heap.base, rp->heap.committed,
           (void *)rp->kept.base);
    EXPECT(rb->heap.base && rb->kept.base && rb->kept.committed >= CG_HUGE_MIN,
           "branches: heap %p, kept %p (%zu committed)", (void *)rb->heap.base,
           (void *)rb->kept.base, rb->kept.committed);
#ifdef MADV_POPULATE_WRITE
    /* the advice exists on this system's kernel headers; a kernel that
     * refuses it (before 5.14) leaves the pages to the first run */
    long page = sysconf(_SC_PAGESIZE);
    void *probe = page > 0 ? mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                           : MAP_FAILED;
    bool populates = probe != MAP_FAILED && madvise(probe, (size_t)page, MADV_POPULATE_WRITE) == 0;
    if (probe != MAP_FAILED)
        munmap(probe, (size_t)page);
    if (populates) {
        EXPECT(page_resident(rp->heap.base + CG_HUGE_MIN - 64),
               "plain: the heap's first huge page is not resident after set-up");
        EXPECT(page_resident(rb->kept.base + CG_HUGE_MIN - 64),
               "branches: the kept heap's first huge page is not resident after set-up");
    }
#endif
    const uint8_t *heap0 = rp->heap.base;
    enum { N = 64 };
    static float xs[N], want[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 7) - 3.0f;
        want[i] = 9.0f * xs[i];
    }
    int64_t d[1] = {N};
    for (int r = 0; r < 2; r++) {
        cg_value *x = tensor_f32(1, d, xs);
        cg_named_value *outs = NULL;
        size_t n = 0;
        cg_status st = run1(rp, "x", x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d, want), "plain run %d: %s", r,
               err.msg);
        cg_runtime_free_outputs(outs, n);
        st = run_then(rb, x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d, want), "branch run %d: %s", r,
               err.msg);
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
    }
    EXPECT(rp->mem.valid && rp->mem.arena == heap0,
           "the plan's arena is the prefaulted heap (%p, heap was %p)", (void *)rp->mem.arena,
           (void *)heap0);
out:
    cg_runtime_free(rp);
    cg_runtime_free(rb);
    cg_model_free(plain);
    cg_model_free(branchy);
}

static void test_kept_buffers_budget(void)
{
    cg_model *m = if_chain_model();
    cg_budget *b = cg_budget_new(0, 0);
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.budget = b;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = b ? cg_runtime_init(m, &opt, &rt, &err) : CG_NOMEM;
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    enum { N = 4096 };
    static float xs[4 * N], want[4 * N];
    for (int i = 0; i < 4 * N; i++) {
        xs[i] = (float)(i % 7) - 3.0f;
        want[i] = 9.0f * xs[i];
    }
    /* n elements: the branch's values are kept between runs (the kept heap;
     * the pool when it cannot have them) */
    int64_t sizes[4] = {N / 2, N, N / 2, N};
    for (int r = 0; r < 4; r++) {
        int64_t d[1] = {sizes[r]};
        cg_value *x = tensor_f32(1, d, xs);
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = run_then(rt, x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d, want), "run %d: %s", r, err.msg);
        cg_runtime_free_outputs(outs, n);
        cg_value_free(x);
    }
    uint64_t held = cg_budget_in_use(b);
    size_t pooled = rt->buffers.bytes + rt->kept.held;
    EXPECT(rt->kept.held > 0 && rt->kept.live_count == 0 && held >= pooled,
           "between runs: %llu bytes reserved, %zu pooled or kept", (unsigned long long)held,
           pooled);
    /* [2N] fits only once the idle pool and kept pages are freed: two live
     * values of 8N bytes (and nothing kept) under the limit */
    uint64_t base = held - pooled, two = 2 * 2 * N * sizeof(float);
    EXPECT(pooled + two > two + 4096, "the pool (%zu bytes) is too small to matter", pooled);
    cg_budget_set(b, base + two + 4096, 0);
    int64_t d2[1] = {2 * N};
    cg_value *x = tensor_f32(1, d2, xs);
    cg_named_value *outs = NULL;
    size_t n = 0;
    st = run_then(rt, x, &outs, &n, &err);
    EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d2, want), "pool trimmed: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    cg_value_free(x);
    /* [4N] does not fit at all: refused, naming the node; the next run
     * with room left gives the right result */
    cg_budget_set(b, cg_budget_in_use(b) + 4 * N, 0);
    int64_t d4[1] = {4 * N};
    x = tensor_f32(1, d4, xs);
    st = run_then(rt, x, &outs, &n, &err);
    EXPECT(st == CG_LIMIT && strstr(err.msg, "(Add)") && strstr(err.msg, "budget"),
           "over the budget: %s", err.msg);
    cg_budget_set(b, 0, 0);
    for (int r = 0; r < 2; r++) {
        st = run_then(rt, x, &outs, &n, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d4, want), "after the refusal: %s",
               err.msg);
        cg_runtime_free_outputs(outs, n);
    }
    cg_value_free(x);
    cg_runtime_free(rt);
    EXPECT(cg_budget_in_use(b) == 0, "%llu bytes still reserved after cg_runtime_free",
           (unsigned long long)cg_budget_in_use(b));
out:
    cg_budget_free(b);
    cg_model_free(m);
}

static void test_fixed_dims_and_initializer_default(void)
{
    cg_model *m = model_new(13);
    cg_graph *g = graph_new("main");
    int64_t d3[1] = {3};
    float w[3] = {10, 20, 30};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, d3));
    test_graph_input(g, "w", ttype(CG_DTYPE_FLOAT, 1, d3));
    test_graph_init_f32(M, g, "w", 1, d3, w);
    node(g, "Add", "", "x,w", "y");
    test_graph_output(g, "y", NULL);
    test_graph_output(g, "w", NULL); /* an initializer as an output: copied, never freed */
    m->graph = g;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    float x[3] = {1, 2, 3}, want[3] = {11, 22, 33}, one[3] = {1, 1, 1}, want2[3] = {2, 3, 4};
    cg_value *xv = tensor_f32(1, d3, x);
    cg_named_value *outs = NULL;
    size_t n = 0;
    st = run1(rt, "x", xv, &outs, &n, &err);
    EXPECT(st == CG_OK && n == 2 && same_f32(outs[0].value, 1, d3, want) &&
              same_f32(outs[1].value, 1, d3, w), "initializer default: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    /* Feeding the initializer-backed input overrides it. */
    cg_value *wv = tensor_f32(1, d3, one);
    cg_named_value ins[2] = {{"x", xv}, {"w", wv}};
    cg_error_clear(&err);
    st = cg_runtime_run(rt, ins, 2, &outs, &n, &err);
    EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d3, want2), "override: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    cg_value_free(wv);
    /* Fixed dim mismatch. */
    int64_t d2[1] = {2};
    cg_value *x2 = tensor_f32(1, d2, x);
    st = run1(rt, "x", x2, &outs, &n, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "dimension 0 must be 3"), "dims: %s", err.msg);
    cg_value_free(x2);
    /* Unknown input name. */
    cg_named_value bogus = {"nope", xv};
    cg_error_clear(&err);
    st = cg_runtime_run(rt, &bogus, 1, &outs, &n, &err);
    EXPECT(st == CG_USAGE && strstr(err.msg, "nope"), "unknown input: %s", err.msg);
    cg_value_free(xv);
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

static void expect_init_error(cg_model *m, cg_status want, const char *needle, const char *what)
{
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == want && strstr(err.msg, needle), "%s: got %s '%s'", what, cg_status_name(st),
          err.msg);
    EXPECT(rt == NULL, "%s: runtime returned on failure", what);
    cg_runtime_free(rt);
}

static void test_init_errors(void)
{
    cg_model *m = model_graph(13, "x", "y");
    cg_graph *g = m->graph;
    node(g, "FrobnicateOp", "frob", "x", "y");
    expect_init_error(m, CG_UNSUPPORTED, "node 'frob' (FrobnicateOp)", "unknown op");
    cg_model_free(m);

    m = model_graph(13, "x", "y");
    g = m->graph;
    node(g, "Add", "", "x,ghost", "y");
    expect_init_error(m, CG_INVALID, "node #0 (Add): input 1 'ghost'", "undefined input");
    cg_model_free(m);

    /* Use before definition: nodes out of order. */
    m = model_graph(13, "x", "y");
    g = m->graph;
    node(g, "Add", "late", "x,t", "y");
    node(g, "Add", "early", "x,x", "t");
    expect_init_error(m, CG_INVALID, "'t'", "topological order");
    cg_model_free(m);

    /* SSA violation. */
    m = model_graph(13, "x", "y");
    g = m->graph;
    node(g, "Add", "one", "x,x", "y");
    node(g, "Add", "two", "x,x", "y");
    expect_init_error(m, CG_INVALID, "already defined", "SSA");
    cg_model_free(m);

    /* Graph output nobody produces. */
    m = model_graph(13, "x", "nowhere");
    g = m->graph;
    expect_init_error(m, CG_INVALID, "'nowhere'", "dangling output");
    cg_model_free(m);

    /* Subgraph nesting deeper than 32: If inside If inside ... */
    m = model_graph(13, "c", "");
    g = m->graph;
    cg_graph *cur = g;
    for (int d = 0; d < 34; d++) {
        cg_graph *then_g = graph_new("then"), *else_g = graph_new("else");
        cg_node *n = node(cur, "If", "nest", "c", "r");
        test_node_add_attr(n, attr_graph("then_branch", then_g));
        test_node_add_attr(n, attr_graph("else_branch", else_g));
        test_graph_output(cur, "r", NULL);
        node(else_g, "Identity", "", "c", "r");
        test_graph_output(else_g, "r", NULL);
        cur = then_g;
    }
    node(cur, "Identity", "", "c", "r");
    test_graph_output(cur, "r", NULL);
    expect_init_error(m, CG_LIMIT, "deeper than 32", "subgraph depth");
    cg_model_free(m);
}

/* t = Add(x, x) is read only inside the then-branch: liveness must keep it
 * until the If has run. */
static void test_if_outer_scope(void)
{
    cg_model *m = model_graph(13, "x,c", "r");
    cg_graph *g = m->graph;
    node(g, "Add", "t", "x,x", "t");
    cg_node *n = node(g, "If", "branch", "c", "r");
    cg_graph *then_g = graph_new("then"), *else_g = graph_new("else");
    node(then_g, "Add", "", "t,x", "r_then");
    test_graph_output(then_g, "r_then", NULL);
    node(else_g, "Identity", "", "x", "r_else");
    test_graph_output(else_g, "r_else", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    const cg_plan *p = rt->main;
    int32_t t_slot = cg_plan_slot(p, "t");
    EXPECT(p->slot_last_use[t_slot] == 1, "t's last use is %d, want 1 (the If)",
          p->slot_last_use[t_slot]);
    int64_t d2[1] = {2};
    float x[2] = {1, 2}, want_then[2] = {3, 6};
    for (int c = 1; c >= 0; c--) {
        cg_value *xv = tensor_f32(1, d2, x), *cv = scalar(CG_DTYPE_BOOL, c);
        cg_named_value ins[2] = {{"x", xv}, {"c", cv}};
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins, 2, &outs, &nout, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d2, c ? want_then : x), "If c=%d: %s", c,
              err.msg);
        cg_runtime_free_outputs(outs, nout);
        cg_value_free(xv);
        cg_value_free(cv);
    }
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* A subgraph node whose inputs are all constants of outer scopes (an
 * initializer of the main graph, two levels up from a nested If's branch)
 * folds at init as a local one does (Silero VAD's nested branches slice its
 * LSTM weights from Constants one level up): the step is marked folded and
 * the runs give the same results. An outer graph input that has an
 * initializer is only a default, and a node reading it does not fold. */
static bool step_folded(const cg_plan *p, const char *out)
{
    for (size_t i = 0; i < p->step_count; i++)
        for (size_t o = 0; o < p->steps[i].node->output_count; o++)
            if (strcmp(p->steps[i].node->outputs[o], out) == 0)
                return p->steps[i].folded;
    return false;
}

static const cg_plan *sub_plan(const cg_plan *p, const char *node_name, size_t k)
{
    for (size_t i = 0; i < p->step_count; i++)
        if (p->steps[i].node->name && strcmp(p->steps[i].node->name, node_name) == 0 &&
            k < p->steps[i].sub_count)
            return p->steps[i].subs[k].plan;
    return NULL;
}

static void test_if_folds_outer_constants(void)
{
    cg_model *m = model_new(13);
    cg_graph *g = graph_new("main");
    int64_t d2[1] = {2};
    float w[2] = {1.5f, -2.0f}, dflt[2] = {100, 200};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, d2));
    test_graph_input(g, "c", ttype(CG_DTYPE_BOOL, 0, NULL));
    test_graph_input(g, "d", ttype(CG_DTYPE_FLOAT, 1, d2));
    test_graph_init_f32(M, g, "w", 1, d2, w);
    test_graph_init_f32(M, g, "d", 1, d2, dflt); /* a default a feed replaces */
    cg_node *outer = node(g, "If", "outer", "c", "r");
    test_graph_output(g, "r", NULL);
    /* then: w2 = w + w here, an inner If whose branch folds w3 = w2 * w
     * (w2 one level up, w two), then r = x * w3 + d */
    cg_graph *then_g = graph_new("then"), *else_g = graph_new("else");
    node(then_g, "Add", "", "w,w", "w2");
    cg_node *inner = node(then_g, "If", "inner", "c", "w3");
    cg_graph *in_then = graph_new("in_then"), *in_else = graph_new("in_else");
    node(in_then, "Mul", "", "w2,w", "w3_then");
    test_graph_output(in_then, "w3_then", NULL);
    node(in_else, "Identity", "", "w2", "w3_else");
    test_graph_output(in_else, "w3_else", NULL);
    test_node_add_attr(inner, attr_graph("then_branch", in_then));
    test_node_add_attr(inner, attr_graph("else_branch", in_else));
    node(then_g, "Mul", "", "x,w3", "xw");
    node(then_g, "Add", "", "xw,d", "r_then");
    test_graph_output(then_g, "r_then", NULL);
    node(else_g, "Add", "", "d,w", "r_else");
    test_graph_output(else_g, "r_else", NULL);
    test_node_add_attr(outer, attr_graph("then_branch", then_g));
    test_node_add_attr(outer, attr_graph("else_branch", else_g));
    m->graph = g;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    const cg_plan *tp = sub_plan(rt->main, "outer", 0), *ep = sub_plan(rt->main, "outer", 1);
    const cg_plan *itp = tp ? sub_plan(tp, "inner", 0) : NULL;
    EXPECT(tp && ep && itp, "the branches' plans were not found");
    if (tp && ep && itp) {
        EXPECT(step_folded(tp, "w2"), "w + w (outer initializer, one level up) not folded");
        EXPECT(step_folded(itp, "w3_then"), "w2 * w (one and two levels up) not folded");
        EXPECT(!step_folded(tp, "xw") && !step_folded(tp, "r_then"),
               "a node reading a graph input was folded");
        EXPECT(!step_folded(ep, "r_else"), "a node reading a defaulted input (d) was folded");
    }
    float x[2] = {2, 3}, fed[2] = {-1, 7};
    float want_then[2], want_else[2], want_fed_then[2], want_fed_else[2];
    for (int i = 0; i < 2; i++) {
        float w3 = (w[i] + w[i]) * w[i];
        want_then[i] = x[i] * w3 + dflt[i];
        want_fed_then[i] = x[i] * w3 + fed[i];
        want_else[i] = dflt[i] + w[i];
        want_fed_else[i] = fed[i] + w[i];
    }
    for (int r = 0; r < 4; r++) {
        int c = r % 2 == 0;
        bool feed_d = r >= 2;
        cg_value *xv = tensor_f32(1, d2, x), *cv = scalar(CG_DTYPE_BOOL, c);
        cg_value *dv = tensor_f32(1, d2, fed);
        cg_named_value ins[3] = {{"x", xv}, {"c", cv}, {"d", dv}};
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins, feed_d ? 3 : 2, &outs, &nout, &err);
        const float *want = c ? (feed_d ? want_fed_then : want_then)
                              : (feed_d ? want_fed_else : want_else);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d2, want), "run %d (c=%d, d %s): %s", r,
               c, feed_d ? "fed" : "default", err.msg);
        if (st == CG_OK)
            cg_runtime_free_outputs(outs, nout);
        cg_value_free(xv);
        cg_value_free(cv);
        cg_value_free(dv);
    }
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* Loop M=5: v += x each iteration, scan output collects v; the body also
 * reads outer x. With a bad body signature the run fails naming the Loop. */
static void test_loop(void)
{
    cg_model *m = model_graph(13, "x,v0,M", "v_final,v_scan");
    cg_graph *g = m->graph;
    cg_node *n = node(g, "Loop", "loop", "M,,v0", "v_final,v_scan");
    cg_graph *body = graph_new("body");
    test_graph_input(body, "i", ttype(CG_DTYPE_INT64, 0, NULL));
    test_graph_input(body, "cond_in", ttype(CG_DTYPE_BOOL, 0, NULL));
    test_graph_input(body, "v_in", NULL);
    node(body, "Identity", "", "cond_in", "cond_out");
    node(body, "Add", "acc", "v_in,x", "v_out");
    node(body, "Identity", "", "v_out", "scan_out");
    test_graph_output(body, "cond_out", NULL);
    test_graph_output(body, "v_out", NULL);
    test_graph_output(body, "scan_out", ttype(CG_DTYPE_FLOAT, -1, NULL));
    test_node_add_attr(n, attr_graph("body", body));
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    int64_t d2[1] = {2}, d52[2] = {5, 2}, d02[1] = {0};
    float x[2] = {1, 10}, v0[2] = {0, 1}, want[2] = {5, 51};
    float scan[10] = {1, 11, 2, 21, 3, 31, 4, 41, 5, 51};
    for (int trip = 5; trip >= 0; trip -= 5) {
        cg_value *xv = tensor_f32(1, d2, x), *vv = tensor_f32(1, d2, v0);
        cg_value *mv = scalar(CG_DTYPE_INT64, trip);
        cg_named_value ins[3] = {{"x", xv}, {"v0", vv}, {"M", mv}};
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins, 3, &outs, &nout, &err);
        EXPECT(st == CG_OK, "loop trip %d: %s", trip, err.msg);
        if (st == CG_OK && trip == 5) {
            EXPECT(same_f32(outs[0].value, 1, d2, want), "loop final value");
            EXPECT(same_f32(outs[1].value, 2, d52, scan), "loop scan output");
        }
        if (st == CG_OK && trip == 0) {
            EXPECT(same_f32(outs[0].value, 1, d2, v0), "zero-trip final value");
            EXPECT(same_f32(outs[1].value, 1, d02, scan), "zero-trip scan output is [0]");
        }
        cg_runtime_free_outputs(outs, nout);
        cg_value_free(xv);
        cg_value_free(vv);
        cg_value_free(mv);
    }
    cg_runtime_free(rt);

    /* What the loop gathers counts against the allocation limit. */
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.max_alloc_bytes = 32; /* 4 iterations of float[2] */
    cg_error_clear(&err);
    st = cg_runtime_init(m, &opt, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        cg_value *xv = tensor_f32(1, d2, x), *vv = tensor_f32(1, d2, v0);
        cg_value *mv = scalar(CG_DTYPE_INT64, 1000);
        cg_named_value ins[3] = {{"x", xv}, {"v0", vv}, {"M", mv}};
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins, 3, &outs, &nout, &err);
        EXPECT(st == CG_LIMIT && strstr(err.msg, "node 'loop' (Loop)") &&
                  strstr(err.msg, "after 5 iterations"), "loop limit: %s", err.msg);
        cg_value_free(xv);
        cg_value_free(vv);
        cg_value_free(mv);
        cg_runtime_free(rt);
    }

    /* Body with one input too few: a signature mismatch, reported on run. */
    body->input_count = 2;
    body->inputs[1].name = "v_in";
    body->nodes[0].inputs[0] = "i";
    cg_error_clear(&err);
    st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        cg_value *xv = tensor_f32(1, d2, x), *vv = tensor_f32(1, d2, v0);
        cg_value *mv = scalar(CG_DTYPE_INT64, 2);
        cg_named_value ins[3] = {{"x", xv}, {"v0", vv}, {"M", mv}};
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins, 3, &outs, &nout, &err);
        EXPECT(st == CG_INVALID && strstr(err.msg, "node 'loop' (Loop)") &&
                  strstr(err.msg, "inputs"), "signature mismatch: %s", err.msg);
        cg_value_free(xv);
        cg_value_free(vv);
        cg_value_free(mv);
        cg_runtime_free(rt);
    }
out:
    cg_model_free(m);
}

/* Scan (opset 9+) summing rows of a [3,2] input along axis 0, output axis 0,
 * and reversed along axis 1. */
static void test_scan(void)
{
    cg_model *m = model_graph(11, "s0,xs", "s_final,ys");
    cg_graph *g = m->graph;
    cg_node *n = node(g, "Scan", "scan", "s0,xs", "s_final,ys");
    test_node_add_attr(n, attr_int("num_scan_inputs", 1));
    cg_graph *body = graph_new("body");
    test_graph_input(body, "s_in", NULL);
    test_graph_input(body, "x_in", NULL);
    node(body, "Add", "", "s_in,x_in", "s_out");
    node(body, "Identity", "", "s_out", "y_out");
    test_graph_output(body, "s_out", NULL);
    test_graph_output(body, "y_out", NULL);
    test_node_add_attr(n, attr_graph("body", body));
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    int64_t d2[1] = {2}, d32[2] = {3, 2};
    float s0[2] = {0, 0}, xs[6] = {1, 2, 3, 4, 5, 6}, fin[2] = {9, 12};
    float ys[6] = {1, 2, 4, 6, 9, 12};
    cg_value *sv = tensor_f32(1, d2, s0), *xv = tensor_f32(2, d32, xs);
    cg_named_value ins[2] = {{"s0", sv}, {"xs", xv}};
    cg_named_value *outs = NULL;
    size_t nout = 0;
    st = cg_runtime_run(rt, ins, 2, &outs, &nout, &err);
    EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d2, fin) &&
              same_f32(outs[1].value, 2, d32, ys), "scan: %s", err.msg);
    cg_runtime_free_outputs(outs, nout);
    cg_runtime_free(rt);

    /* Scan along axis 1 ([3,2] -> 2 steps of [3]) with reversed input. */
    cg_attr *ax = test_node_attr(n, "scan_input_axes", CG_ATTR_INTS);
    static const int64_t one[1] = {1};
    ax->ints = (int64_t *)one;
    ax->ints_count = 1;
    cg_attr *dir = test_node_attr(n, "scan_input_directions", CG_ATTR_INTS);
    dir->ints = (int64_t *)one;
    dir->ints_count = 1;
    cg_error_clear(&err);
    st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        int64_t d3[1] = {3}, d23[2] = {2, 3};
        float z[3] = {0, 0, 0}, fin3[3] = {3, 7, 11}, ys2[6] = {2, 4, 6, 3, 7, 11};
        cg_value *zv = tensor_f32(1, d3, z);
        cg_named_value ins2[2] = {{"s0", zv}, {"xs", xv}};
        cg_error_clear(&err);
        st = cg_runtime_run(rt, ins2, 2, &outs, &nout, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 1, d3, fin3) &&
                  same_f32(outs[1].value, 2, d23, ys2), "scan axis 1 reversed: %s", err.msg);
        cg_runtime_free_outputs(outs, nout);
        cg_value_free(zv);
        cg_runtime_free(rt);
    }
    cg_value_free(sv);
    cg_value_free(xv);
out:
    cg_model_free(m);
}

/* SplitToSequence -> SequenceInsert/Erase/Length/At -> ConcatFromSequence. */
static void test_sequences(void)
{
    cg_model *m = model_graph(13, "x", "len,y,z");
    cg_graph *g = m->graph;
    static const int64_t split_vals[3] = {1, 2, 1};
    cg_tensor_proto *sp = &g->initializers[g->initializer_count++];
    sp->name = "split";
    sp->data_type = CG_DTYPE_INT64;
    sp->has_data_type = true;
    sp->rank = 1;
    sp->dims = cg_arena_calloc(M->arena, 1, sizeof *sp->dims);
    sp->dims[0] = 3;
    sp->int64_data.data = split_vals;
    sp->int64_data.count = 3;
    cg_tensor_proto *p0 = &g->initializers[g->initializer_count++];
    static const int64_t zero = 0, big = 7;
    p0->name = "p0";
    p0->data_type = CG_DTYPE_INT64;
    p0->has_data_type = true;
    p0->int64_data.data = &zero;
    p0->int64_data.count = 1;
    cg_tensor_proto *p7 = &g->initializers[g->initializer_count++];
    *p7 = *p0;
    p7->name = "p7";
    p7->int64_data.data = &big;
    cg_node *n = node(g, "SplitToSequence", "split", "x,split", "seq");
    test_node_add_attr(n, attr_int("axis", 1));
    node(g, "SequenceErase", "erase", "seq,p0", "seq2");           /* drop [1] chunk */
    node(g, "SequenceLength", "len", "seq2", "len");
    node(g, "SequenceAt", "at", "seq2,p0", "first");
    node(g, "SequenceInsert", "ins", "seq2,first", "seq3");        /* append copy */
    n = node(g, "ConcatFromSequence", "cat", "seq3", "y");
    test_node_add_attr(n, attr_int("axis", 1));
    n = node(g, "ConcatFromSequence", "stack", "seq2", "z");
    test_node_add_attr(n, attr_int("axis", 0));
    test_node_add_attr(n, attr_int("new_axis", 0));
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    /* x = [[0,1,2,3],[4,5,6,7]]: chunks along axis 1 of widths 1,2,1. */
    int64_t d24[2] = {2, 4}, d25[2] = {2, 5};
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float y[10] = {1, 2, 3, 1, 2, 5, 6, 7, 5, 6};
    cg_value *xv = tensor_f32(2, d24, x);
    cg_named_value *outs = NULL;
    size_t nout = 0;
    st = run1(rt, "x", xv, &outs, &nout, &err);
    /* z mixes widths 2 and 1 along axis 1 while concatenating on axis 0. */
    EXPECT(st == CG_INVALID && strstr(err.msg, "node 'stack' (ConcatFromSequence)"),
          "concat mismatch: %s", err.msg);
    cg_runtime_free(rt);

    /* Drop z and check the rest. */
    g->node_count--;
    g->output_count--;
    cg_error_clear(&err);
    st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        st = run1(rt, "x", xv, &outs, &nout, &err);
        EXPECT(st == CG_OK, "sequences: %s", err.msg);
        if (st == CG_OK) {
            const cg_tensor *len = &outs[0].value->tensor;
            EXPECT(len->dtype == CG_DTYPE_INT64 && *(int64_t *)len->data == 2, "length");
            EXPECT(same_f32(outs[1].value, 2, d25, y), "concat result");
        }
        cg_runtime_free_outputs(outs, nout);
        cg_runtime_free(rt);
    }

    /* Out-of-range position: node named in the error. */
    g->nodes[3].inputs[1] = "p7";
    cg_error_clear(&err);
    st = cg_runtime_init(m, NULL, &rt, &err);
    if (st == CG_OK) {
        st = run1(rt, "x", xv, &outs, &nout, &err);
        EXPECT(st == CG_INVALID && strstr(err.msg, "node 'at' (SequenceAt)") &&
                  strstr(err.msg, "position 7"), "bad position: %s", err.msg);
        cg_runtime_free(rt);
    }
    cg_value_free(xv);
out:
    cg_model_free(m);
}

static void test_optional(void)
{
    cg_model *m = model_graph(18, "x", "has,back,has_none");
    cg_graph *g = m->graph;
    node(g, "Optional", "wrap", "x", "o");
    node(g, "OptionalHasElement", "has", "o", "has");
    node(g, "OptionalGetElement", "get", "o", "back");
    node(g, "OptionalHasElement", "none", "", "has_none");
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    int64_t d2[1] = {2};
    float x[2] = {3, 4};
    cg_value *xv = tensor_f32(1, d2, x);
    cg_named_value *outs = NULL;
    size_t nout = 0;
    st = run1(rt, "x", xv, &outs, &nout, &err);
    EXPECT(st == CG_OK, "optional: %s", err.msg);
    if (st == CG_OK) {
        EXPECT(*(uint8_t *)outs[0].value->tensor.data == 1, "has element");
        EXPECT(same_f32(outs[1].value, 1, d2, x), "get element");
        EXPECT(*(uint8_t *)outs[2].value->tensor.data == 0, "omitted input has no element");
    }
    cg_runtime_free_outputs(outs, nout);
    cg_value_free(xv);
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* The observer sees every main-graph value in order and can stop the run. */
typedef struct obs_log {
    char seen[8][16];
    int count;
    int stop_at;
} obs_log;

static cg_status observe(void *user, const cg_node *node, const char *name, const cg_value *v)
{
    obs_log *log = user;
    (void)node;
    (void)v;
    if (log->count < 8)
        snprintf(log->seen[log->count], sizeof log->seen[0], "%s", name);
    log->count++;
    return log->count == log->stop_at ? CG_RUNTIME : CG_OK;
}

static void test_observer(void)
{
    cg_model *m = model_graph(13, "x", "b");
    cg_graph *g = m->graph;
    node(g, "Add", "a", "x,x", "a");
    node(g, "Add", "b", "a,x", "b");
    obs_log log = {{{0}}, 0, 0};
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.observe = observe;
    opt.observe_user = &log;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, &opt, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st != CG_OK)
        goto out;
    int64_t d1[1] = {1};
    float x[1] = {2};
    cg_value *xv = tensor_f32(1, d1, x);
    cg_named_value *outs = NULL;
    size_t nout = 0;
    st = run1(rt, "x", xv, &outs, &nout, &err);
    EXPECT(st == CG_OK && log.count == 2 && strcmp(log.seen[0], "a") == 0 &&
              strcmp(log.seen[1], "b") == 0, "observer order");
    cg_runtime_free_outputs(outs, nout);
    log.count = 0;
    log.stop_at = 1;
    st = run1(rt, "x", xv, &outs, &nout, &err);
    EXPECT(st == CG_RUNTIME && strstr(err.msg, "observer") && outs == NULL, "observer stop: %s",
          err.msg);
    cg_value_free(xv);
    cg_runtime_free(rt);
out:
    cg_model_free(m);
}

/* Graph outputs past cg_runtime_options.returned_outputs (bisect exposes a
 * partition's inner values as outputs) reach the observer and are released
 * at their last use, as inner values are: the run returns the first N
 * only, and their slots are not held to the end. 0, or N past the count,
 * returns every output. */
typedef struct seen_value {
    float a, b;
    int count;
} seen_value;

static cg_status observe_values(void *user, const cg_node *node, const char *name,
                                const cg_value *v)
{
    seen_value *s = user;
    (void)node;
    float x = ((const float *)v->tensor.data)[0];
    if (strcmp(name, "a") == 0)
        s->a = x;
    else if (strcmp(name, "b") == 0)
        s->b = x;
    s->count++;
    return CG_OK;
}

static void test_returned_outputs(void)
{
    cg_model *m = model_graph(13, "x", "b,a");
    cg_graph *g = m->graph;
    node(g, "Add", "a", "x,x", "a");
    node(g, "Add", "b", "a,x", "b");
    int64_t d1[1] = {1};
    float x[1] = {2};
    cg_value *xv = tensor_f32(1, d1, x);
    const size_t kept[3] = {1, 0, 5};
    for (int k = 0; k < 3; k++) {
        seen_value seen = {0, 0, 0};
        cg_runtime_options opt;
        cg_runtime_options_default(&opt);
        opt.observe = observe_values;
        opt.observe_user = &seen;
        opt.returned_outputs = kept[k];
        cg_runtime *rt = NULL;
        cg_error err;
        cg_error_clear(&err);
        if (cg_runtime_init(m, &opt, &rt, &err) != CG_OK) {
            EXPECT(false, "returned_outputs %zu: init: %s", kept[k], err.msg);
            continue;
        }
        int32_t a = cg_plan_slot(rt->main, "a"), b = cg_plan_slot(rt->main, "b");
        bool one = kept[k] == 1;
        EXPECT(a >= 0 && b >= 0 && rt->main->slot_is_output[b] &&
                   rt->main->slot_is_output[a] == !one,
               "returned_outputs %zu: 'a' is %s held to the end of the run", kept[k],
               one ? "still" : "not");
        for (int run = 0; run < 2; run++) {
            cg_named_value *outs = NULL;
            size_t nout = 0;
            seen.count = 0;
            cg_status st = run1(rt, "x", xv, &outs, &nout, &err);
            EXPECT(st == CG_OK && nout == (one ? 1u : 2u) && strcmp(outs[0].name, "b") == 0 &&
                       ((const float *)outs[0].value->tensor.data)[0] == 6.0f &&
                       (one || ((const float *)outs[1].value->tensor.data)[0] == 4.0f),
                   "returned_outputs %zu run %d: %zu outputs (%s)", kept[k], run, nout,
                   err.msg);
            EXPECT(seen.count == 2 && seen.a == 4.0f && seen.b == 6.0f,
                   "returned_outputs %zu run %d: the observer saw %d values (a %g, b %g)",
                   kept[k], run, seen.count, seen.a, seen.b);
            if (st == CG_OK)
                cg_runtime_free_outputs(outs, nout);
        }
        cg_runtime_free(rt);
    }
    cg_value_free(xv);
    cg_model_free(m);
}

static void test_tensor_proto(void)
{
    cg_model *saved = M;
    cg_model *m = model_new(13);
    cg_tensor_proto tp;
    memset(&tp, 0, sizeof tp);
    int64_t dims[2] = {2, 2};
    tp.name = "h";
    tp.dims = dims;
    tp.rank = 2;
    tp.data_type = CG_DTYPE_FLOAT16;
    tp.has_data_type = true;
    int32_t halves[4] = {0x3c00, 0x4000, 0xbc00, 0};
    tp.int32_data.data = halves;
    tp.int32_data.count = 4;
    cg_value *v = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_value_from_tensor_proto(&tp, &v, &err);
    EXPECT(st == CG_OK && v && ((uint16_t *)v->tensor.data)[1] == 0x4000, "fp16 int32_data: %s",
          err.msg);
    cg_value_free(v);

    tp.int32_data.count = 3; /* short */
    cg_error_clear(&err);
    st = cg_value_from_tensor_proto(&tp, &v, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "'h'"), "short int32_data: %s", err.msg);

    uint8_t raw[7] = {0};
    tp.int32_data.count = 0;
    tp.raw_data.data = raw;
    tp.raw_data.len = 7; /* 4 fp16 = 8 bytes */
    cg_error_clear(&err);
    st = cg_value_from_tensor_proto(&tp, &v, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "expected 8"), "raw size: %s", err.msg);

    int64_t huge[2] = {INT64_MAX / 2, 4};
    tp.dims = huge;
    cg_error_clear(&err);
    st = cg_value_from_tensor_proto(&tp, &v, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "overflow"), "numel overflow: %s", err.msg);

    /* A huge claimed shape with no payload fails before any allocation. */
    int64_t vast[2] = {(int64_t)1 << 40, (int64_t)1 << 10};
    tp.dims = vast;
    tp.raw_data.data = NULL;
    tp.raw_data.len = 0;
    cg_error_clear(&err);
    st = cg_value_from_tensor_proto(&tp, &v, &err);
    EXPECT(st == CG_INVALID && strstr(err.msg, "0 values"), "vast shape: %s", err.msg);

    tp.dims = dims;
    tp.raw_data.data = NULL;
    tp.raw_data.len = 0;
    tp.data_type = CG_DTYPE_STRING;
    cg_bytes strs[4] = {{(const uint8_t *)"a", 1}, {(const uint8_t *)"bc", 2},
                        {(const uint8_t *)"", 0}, {(const uint8_t *)"def", 3}};
    tp.string_data = strs;
    tp.string_count = 4;
    cg_error_clear(&err);
    st = cg_value_from_tensor_proto(&tp, &v, &err);
    size_t dlen = 0;
    EXPECT(st == CG_OK && strcmp(cg_tensor_string(&v->tensor, 3, &dlen), "def") == 0 &&
               dlen == 3, "strings: %s", err.msg);
    cg_value_free(v);
    cg_model_free(m);
    M = saved;
}

/* A sparse initializer (coordinate indices) is densified; a bad index fails. */
static void test_sparse_initializer(void)
{
    cg_model *m = model_graph(13, "", "y");
    cg_graph *g = m->graph;
    static int64_t dims[2] = {2, 3}, vdims[1] = {2}, idims[2] = {2, 2};
    static int64_t coords[4] = {0, 1, 1, 2};
    static float vals[2] = {5, 7};
    cg_sparse_tensor_proto *sp = cg_arena_calloc(M->arena, 1, sizeof *sp);
    sp->values = cg_arena_calloc(M->arena, 1, sizeof *sp->values);
    sp->indices = cg_arena_calloc(M->arena, 1, sizeof *sp->indices);
    sp->dims = dims;
    sp->rank = 2;
    sp->values->name = "s";
    sp->values->data_type = CG_DTYPE_FLOAT;
    sp->values->has_data_type = true;
    sp->values->dims = vdims;
    sp->values->rank = 1;
    sp->values->float_data.data = vals;
    sp->values->float_data.count = 2;
    sp->indices->data_type = CG_DTYPE_INT64;
    sp->indices->has_data_type = true;
    sp->indices->dims = idims;
    sp->indices->rank = 2;
    sp->indices->int64_data.data = coords;
    sp->indices->int64_data.count = 4;
    g->sparse_initializers = sp;
    g->sparse_initializer_count = 1;
    node(g, "Add", "", "s,s", "y");
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    if (st == CG_OK) {
        cg_named_value *outs = NULL;
        size_t nout = 0;
        float want[6] = {0, 10, 0, 0, 0, 14};
        st = cg_runtime_run(rt, NULL, 0, &outs, &nout, &err);
        EXPECT(st == CG_OK && same_f32(outs[0].value, 2, dims, want), "sparse: %s", err.msg);
        cg_runtime_free_outputs(outs, nout);
        cg_runtime_free(rt);
    }
    coords[3] = 3; /* column 3 of 3 */
    expect_init_error(m, CG_INVALID, "out of range", "sparse index");
    cg_model_free(m);
}

/* A pooling whose window spans half of one plane does work far beyond its
 * output (here 30001x16 outputs of 30000 taps each, 1.4e10 additions, under
 * the kernels' cap on taps inside the image, 2^34): the
 * kernel looks at the run's time limit inside the plane, on the 2-D path
 * (MaxPool, AveragePool) and the general one (MaxPool's Indices output),
 * and stops with CG_LIMIT soon after the deadline. The limit was checked
 * only between planes before: one plane ran to its end (fuzz_tflite_run's
 * timeout input, tests/fuzz/regressions/tflite). */
static void test_pool_time_limit(void)
{
    static const char *const ops[3] = {"MaxPool", "AveragePool", "MaxPool"};
    int64_t d[4] = {1, 1, 60000, 16}, ks[2] = {30000, 1};
    cg_value *x = NULL;
    EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, d, &x, NULL) == CG_OK, "input");
    if (!x)
        return;
    float *xv = x->tensor.data;
    for (int64_t i = 0; i < x->tensor.numel; i++)
        xv[i] = (float)(i % 97) / 97.0f;
    for (int c = 0; c < 3; c++) {
        bool indices = c == 2;
        cg_model *m = model_graph(13, "x", indices ? "y,i" : "y");
        cg_node *n = node(m->graph, ops[c], "pool", "x", indices ? "y,i" : "y");
        test_node_add_attr(n, attr_ints("kernel_shape", ks, 2));
        cg_budget *b = cg_budget_new(0, 0);
        cg_runtime_options opt;
        cg_runtime_options_default(&opt);
        opt.threads = 1;
        opt.budget = b;
        cg_runtime *rt = NULL;
        cg_error err;
        cg_error_clear(&err);
        cg_named_value feed = {"x", x}, *outs = NULL;
        size_t nout = 0;
        cg_status st = cg_runtime_init(m, &opt, &rt, &err);
        EXPECT(st == CG_OK, "%s init: %s", ops[c], err.msg);
        if (st == CG_OK) {
            cg_budget_set(b, 0, 0.05);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            st = cg_runtime_run(rt, &feed, 1, &outs, &nout, &err);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
            EXPECT(st == CG_LIMIT && strstr(err.msg, "time limit") && strstr(err.msg, "'pool'"),
                   "%s%s stops at the time limit: %s", ops[c], indices ? " with Indices" : "",
                   err.msg);
            /* the whole plane takes seconds in Release (about half a minute on
             * the general path); one output row is 480,000 additions */
            EXPECT(s < 1.0, "%s%s stopped %.2f s after starting, 0.05 s allowed", ops[c],
                   indices ? " with Indices" : "", s);
            if (st == CG_OK)
                cg_runtime_free_outputs(outs, nout);
        }
        cg_runtime_free(rt);
        cg_budget_free(b);
        cg_model_free(m);
    }
    cg_value_free(x);
}

/* The bulk memory a run touches first is asked of the kernel in huge pages
 * (core/mapfile.h: a 4 KiB fault of fresh memory was most of a first run's
 * extra time): the aligned copy of a misaligned initializer, a big output
 * buffer of the first run (no arena yet), and the arena planned from it. */
#define BULK_N ((int64_t)1 << 20) /* 4 MiB of floats */
static void test_bulk_memory_huge_pages(void)
{
    char mode[128] = "";
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp) {
        if (!fgets(mode, sizeof mode, thp))
            mode[0] = '\0';
        fclose(thp);
    }
    if (!mode[0] || strstr(mode, "[never]")) {
        test_skip("bulk memory in huge pages: transparent huge pages are off here");
        return;
    }
    /* b's bytes at an odd offset, as exporters leave raw_data */
    uint8_t *raw = malloc(1 + (size_t)BULK_N * sizeof(float));
    float *ones = malloc((size_t)BULK_N * sizeof(float));
    if (!raw || !ones)
        test_fatal("out of memory");
    for (int64_t i = 0; i < BULK_N; i++)
        ones[i] = 1.0f;
    memcpy(raw + 1, ones, (size_t)BULK_N * sizeof(float));
    /* a = Add(x, b) lives in the arena from run 1 on; y = Add(a, a) is the output */
    cg_model *m = model_new(13);
    cg_graph *g = graph_new("main");
    int64_t d[1] = {BULK_N};
    test_graph_input(g, "x", ttype(CG_DTYPE_FLOAT, 1, d));
    test_graph_init_raw(m, g, "b", CG_DTYPE_FLOAT, 1, d, raw + 1,
                        (size_t)BULK_N * sizeof(float));
    node(g, "Add", "a", "x,b", "a");
    node(g, "Add", "y", "a,a", "y");
    test_graph_output(g, "y", ttype(CG_DTYPE_FLOAT, 1, d));
    m->graph = g;

    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_init(m, NULL, &rt, &err);
    EXPECT(st == CG_OK, "init: %s", err.msg);
    cg_value *x = st == CG_OK ? tensor_f32(1, d, ones) : NULL;
    for (int run = 0; run < 2 && x; run++) {
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = run1(rt, "x", x, &outs, &n, &err);
        EXPECT(st == CG_OK && n == 1, "run %d: %s", run, err.msg);
        if (st != CG_OK)
            break;
        const float *y = outs[0].value->tensor.data;
        EXPECT(y[0] == 4.0f && y[BULK_N - 1] == 4.0f, "run %d: y = %g", run, (double)y[0]);
        if (run == 0) {
            EXPECT(cg_huge_advised(y), "the first run's 4 MiB output buffer is not advised huge");
            cg_shared *copy = cg_init_copy_acquire(raw + 1, (size_t)BULK_N * sizeof(float));
            EXPECT(copy && cg_huge_advised(cg_shared_data(copy)),
                   "the aligned copy of b is not advised huge");
            cg_shared_release(copy);
            EXPECT(rt->mem.valid && rt->mem.arena_bytes >= (size_t)BULK_N * sizeof(float) &&
                       cg_huge_advised(rt->mem.arena),
                   "the arena (%zu bytes) is not advised huge", rt->mem.arena_bytes);
        }
        cg_runtime_free_outputs(outs, n);
    }
    cg_value_free(x);
    cg_runtime_free(rt);
    cg_model_free(m);
    free(ones);
    free(raw);
}
#undef BULK_N

int main(void)
{
    test_registry();
    test_chain_and_memory_plan();
    test_memory_plan_random_dag();
    test_kept_buffers_budget();
    test_first_run_in_arena();
    test_value_heap();
    test_subgraph_values_kept();
    test_heaps_prefaulted();
    test_pool_time_limit();
    test_bulk_memory_huge_pages();
    test_fixed_dims_and_initializer_default();
    test_init_errors();
    test_if_outer_scope();
    test_if_folds_outer_constants();
    test_loop();
    test_scan();
    test_sequences();
    test_optional();
    test_observer();
    test_returned_outputs();
    test_tensor_proto();
    test_sparse_initializer();
    return test_done("test_runtime");
}
