/*
 * Shared constant buffers (src/run/initshare.h): runtimes over one model
 * share the aligned copy of a misaligned weight and its packing for the
 * convolution GEMM, a hold keeps both across runtimes built one after
 * another, results are bit-identical to unshared ones, and nothing is left
 * once the last holder is gone, from one thread or several; a mapped
 * model's pages of a copied payload are handed back, a heap model's not;
 * the XNNPACK delegate reads a misaligned weight from the model's bytes
 * and makes no shared copy of it.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convgate/partition.h"
#include "convgate/target.h"
#include "delegate/xnnpack/xnnpack.h"
#include "run/exec.h"
#include "run/initshare.h"
#include "testlib.h"

#define CI 16
#define CO 32
#define HW 20
#define WN (CO * CI * 3 * 3)

/* W's bytes at an odd offset, as exporters leave raw_data */
static uint8_t w_odd[1 + WN * sizeof(float)];
/* ... and an aligned twin with other values (a model of its own) */
static float w_other[WN];

static cg_model *conv_model(const void *raw)
{
    cg_model *m = test_model_graph(13, 4, "x", "y");
    int64_t wd[4] = {CO, CI, 3, 3};
    test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd, raw, WN * sizeof(float));
    test_node(m, m->graph, "Conv", "conv", "x,w", "y");
    int64_t xd[4] = {1, CI, HW, HW};
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd); /* for typing */
    return m;
}

static cg_value *input(void)
{
    int64_t d[4] = {1, CI, HW, HW};
    double v[CI * HW * HW];
    for (int i = 0; i < CI * HW * HW; i++)
        v[i] = (double)((i * 37) % 23) / 7.0 - 1.5;
    return test_value(CG_DTYPE_FLOAT, 4, d, v);
}

/* One runtime's output on the fixed input, copied out (NULL on failure). */
static float *run_once(const cg_model *m, cg_runtime **keep)
{
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_value *x = input();
    cg_named_value feed = {"x", x};
    cg_named_value *outs = NULL;
    size_t n = 0;
    float *y = NULL;
    if (cg_runtime_init(m, &o, &rt, &err) == CG_OK &&
        cg_runtime_run(rt, &feed, 1, &outs, &n, &err) == CG_OK && n == 1 &&
        outs[0].value->tensor.numel == CO * (HW - 2) * (HW - 2)) {
        y = malloc(sizeof(float) * CO * (HW - 2) * (HW - 2));
        if (y)
            memcpy(y, outs[0].value->tensor.data, sizeof(float) * CO * (HW - 2) * (HW - 2));
    }
    cg_runtime_free_outputs(outs, n);
    cg_value_free(x);
    if (keep)
        *keep = rt;
    else
        cg_runtime_free(rt);
    return y;
}

static bool same(const float *a, const float *b)
{
    return a && b && memcmp(a, b, sizeof(float) * CO * (HW - 2) * (HW - 2)) == 0;
}

typedef struct worker {
    const cg_model *m;
    const float *want;
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 20; i++) {
        float *y = run_once(w->m, NULL);
        if (!same(y, w->want))
            w->bad++;
        free(y);
    }
    return NULL;
}

/* The Rss (kB) of the /proc/self/smaps entry that holds p, -1 if none. */
static long smaps_rss_kb(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    bool in = false;
    long rss = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
            break;
    }
    fclose(f);
    return rss;
}

/* A model loaded from a file maps it: once a runtime copies a misaligned
 * payload to aligned memory, the payload's whole pages of the mapping are
 * handed back (cg_mapping_drop_pages), and a runtime made after the copy
 * is gone reads the bytes again from the file, the same bits. A model
 * parsed from memory holds its bytes on the heap, where that advice would
 * zero them: there nothing is handed back. */
static void test_mapped_pages(const cg_model *odd, const float *want)
{
    char path[] = "/tmp/cg-initshare-XXXXXX";
    int fd = mkstemp(path);
    EXPECT(fd >= 0, "a temporary file");
    if (fd < 0)
        return;
    close(fd);
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_model_save(odd, path, NULL, &err) == CG_OK, "save: %s", err.msg);
    cg_model *m = NULL;
    EXPECT(cg_model_load(path, NULL, &m, &err) == CG_OK, "load: %s", err.msg);
    const cg_tensor_proto *tp = m ? &m->graph->initializers[0] : NULL;
    const uint8_t *raw = tp ? tp->raw_data.data : NULL;
    EXPECT(raw && tp->raw_data.len == WN * sizeof(float), "W is raw_data in the file");
    if (raw && (uintptr_t)raw % sizeof(float) == 0) {
        test_skip("the writer placed W aligned: nothing is copied");
        raw = NULL;
    }
    if (raw) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)raw + (uintptr_t)page - 1) / (uintptr_t)page,
                  hi = ((uintptr_t)raw + WN * sizeof(float)) / (uintptr_t)page;
        long whole_kb = (long)(hi - lo) * page / 1024;
        unsigned sum = 0;
        for (size_t i = 0; i < WN * sizeof(float); i++)
            sum += raw[i]; /* every page resident */
        EXPECT(sum > 0, "W's bytes read");
        long before = smaps_rss_kb(raw);
        float *y = run_once(m, NULL);
        long after = smaps_rss_kb(raw);
        EXPECT(whole_kb > 0 && before >= 0 && after >= 0 && before - after >= whole_kb,
               "W's %ld kB of whole pages handed back: mapping Rss %ld -> %ld kB", whole_kb,
               before, after);
        EXPECT(same(y, want), "the first runtime's result");
        free(y);
        EXPECT(cg_shared_live() == 0, "its copy gone with it");
        y = run_once(m, NULL);
        EXPECT(same(y, want), "a new copy read from the file again: the same bits");
        free(y);
    }
    cg_model_free(m);
    unlink(path);
    /* the same bytes parsed from memory: heap, nothing handed back */
    uint8_t *bytes = NULL;
    size_t size = 0;
    cg_model *heap = NULL;
    cg_error_clear(&err);
    EXPECT(cg_model_serialize(odd, &bytes, &size, &err) == CG_OK, "serialize: %s", err.msg);
    EXPECT(bytes && cg_model_load_bytes(bytes, size, NULL, &heap, &err) == CG_OK,
           "load from memory: %s", err.msg);
    free(bytes);
    for (int i = 0; heap && i < 2; i++) {
        float *y = run_once(heap, NULL);
        EXPECT(same(y, want), "from memory, runtime %d: the same bits", i + 1);
        free(y);
    }
    cg_model_free(heap);
}

/* The xnnpack target of a freshly loaded registry (*reg, freed by the
 * caller); NULL, having said why, when it is not built or the registry
 * does not load (then *reg is NULL). */
static const cg_target *xnnpack_target(cg_target_registry **reg)
{
    cg_error err;
    cg_error_clear(&err);
    *reg = NULL;
    if (cg_target_registry_load(NULL, reg, &err) != CG_OK) {
        EXPECT(false, "loading targets: %s", err.msg);
        return NULL;
    }
    const cg_target *xnn = cg_target_registry_find(*reg, "xnnpack", &err);
    if (!xnn)
        test_skip("xnnpack target not built (%s)", err.msg);
    return xnn;
}

/* Model: a 1x1 Conv of x by the first CO*CI floats at `raw` (misaligned):
 * the XNNPACK lowering hands such a filter over as it lies, so it needs an
 * aligned copy of the bytes. */
static cg_model *conv1x1_model(const void *raw)
{
    cg_model *m = test_model_graph(13, 4, "x", "y");
    int64_t wd[4] = {CO, CI, 1, 1};
    test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd, raw, CO * CI * sizeof(float));
    test_node(m, m->graph, "Conv", "conv", "x,w", "y");
    int64_t xd[4] = {1, CI, HW, HW};
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
    return m;
}

/* One run of rt on the fixed input: its first output copied out (*n
 * elements), NULL on failure. */
static float *run_rt(cg_runtime *rt, int64_t *n)
{
    cg_error err;
    cg_error_clear(&err);
    cg_value *x = input();
    cg_named_value feed = {"x", x};
    cg_named_value *outs = NULL;
    size_t k = 0;
    float *y = NULL;
    *n = 0;
    if (cg_runtime_run(rt, &feed, 1, &outs, &k, &err) == CG_OK && k == 1) {
        *n = outs[0].value->tensor.numel;
        y = malloc(sizeof(float) * (size_t)*n + 1);
        if (y)
            memcpy(y, outs[0].value->tensor.data, sizeof(float) * (size_t)*n);
    } else {
        EXPECT(false, "run: %s", err.msg);
    }
    cg_runtime_free_outputs(outs, k);
    cg_value_free(x);
    return y;
}

/* The XNNPACK delegate reads a misaligned weight from the model's bytes:
 * its support check reads the shape only, a 3x3 filter is reordered for
 * XNNPACK straight from the bytes, a 1x1 one is copied to a transient
 * aligned buffer freed once XNNPACK has packed it, and the delegated
 * runtime's plan makes no aligned copy of a weight only the partition
 * reads. So no shared aligned copy is ever filled (a gate used to keep
 * resnet50's 71 MB of them beside XNNPACK's packing), and the results
 * match the reference. */
static void test_xnnpack_reads_model_bytes(const cg_model *odd, const float *want)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    const cg_target *xnn = xnnpack_target(&reg);
    cg_model *one = conv1x1_model(w_odd + 1);
    for (int k = 0; xnn && k < 2; k++) {
        const cg_model *m = k ? one : odd;
        const char *what = k ? "1x1 (copied)" : "3x3 (reordered)";
        cg_type_env *env = NULL;
        cg_assignment *a = NULL;
        cg_runtime *ref = NULL, *del = NULL;
        float *got = NULL, *ref_y = NULL;
        EXPECT(cg_shared_filled_bytes() == 0, "%s: no copy before: %zu bytes", what,
               cg_shared_filled_bytes());
        if (cg_type_env_build(m, NULL, 0, &env, &err) != CG_OK ||
            cg_assign(m, env, &xnn, 1, &a, &err) != CG_OK) {
            EXPECT(false, "%s: typing and assigning: %s", what, err.msg);
            goto next;
        }
        EXPECT(a->partition_count == 1 && a->partitions[0].node_count == 1,
               "%s: the Conv is placed on xnnpack: %zu partitions", what, a->partition_count);
        EXPECT(cg_shared_filled_bytes() == 0, "%s: the support check copies nothing: %zu bytes",
               what, cg_shared_filled_bytes());
        cg_runtime_options o;
        cg_runtime_options_default(&o);
        o.threads = 1;
        o.assignment = a;
        o.types = env;
        if (cg_runtime_init(m, &o, &del, &err) != CG_OK) {
            EXPECT(false, "%s: the xnnpack runtime: %s", what, err.msg);
            goto next;
        }
        EXPECT(cg_shared_filled_bytes() == 0, "%s: the xnnpack runtime fills no shared copy: "
               "%zu bytes", what, cg_shared_filled_bytes());
        const cg_xnnpack_report *rep = NULL;
        cg_runtime_partition_info info;
        if (cg_runtime_partition_count(del) == 1 &&
            cg_runtime_partition_info_get(del, 0, &info, &err) == CG_OK)
            rep = info.state;
        size_t wbytes = (size_t)CO * CI * (k ? 1 : 9) * sizeof(float);
        EXPECT(rep && rep->transient_bytes_freed >= wbytes, "%s: the filter's transient "
               "buffer freed: %zu bytes, want at least %zu", what,
               rep ? rep->transient_bytes_freed : 0, wbytes);
        int64_t n = 0, rn = 0;
        got = run_rt(del, &n);
        EXPECT(cg_shared_filled_bytes() == 0, "%s: nor does its run: %zu bytes", what,
               cg_shared_filled_bytes());
        const float *expect = want;
        int64_t en = (int64_t)CO * (HW - 2) * (HW - 2);
        if (k) {
            cg_runtime_options_default(&o);
            o.threads = 1;
            if (cg_runtime_init(m, &o, &ref, &err) == CG_OK)
                ref_y = run_rt(ref, &rn);
            expect = ref_y;
            en = (int64_t)CO * HW * HW;
            EXPECT(ref_y && rn == en, "%s: the reference runs: %s", what, err.msg);
        }
        double worst = 0;
        for (int64_t i = 0; got && expect && n == en && i < n; i++)
            worst = fmax(worst, fabs((double)got[i] - (double)expect[i]));
        /* dot products of at most 144 terms of values under 1.5: float noise only */
        EXPECT(got && expect && n == en && worst < 1e-4, "%s: XNNPACK's result from the "
               "model's bytes: %lld values, max |d| %g", what, (long long)n, worst);
    next:
        free(got);
        free(ref_y);
        cg_runtime_free(del);
        cg_runtime_free(ref);
        cg_assignment_free(a);
        cg_type_env_free(env);
    }
    cg_model_free(one);
    cg_target_registry_free(reg);
    EXPECT(cg_shared_live() == 0, "nothing left after the xnnpack runtimes: %zu",
           cg_shared_live());
}

/* The XNNPACK delegate frees the filters it repacked (a 3x3 Conv's OHWI
 * transpose, a Gemm's alpha-scaled weights) once XNNPACK has packed them
 * at the runtime's creation: the report counts their bytes, and the runs
 * after it still match the reference. Blocks of 64 KiB or more are
 * unmapped when freed, so a read of one after the creation would fault
 * here rather than read stale bytes. */
enum { TC = 64, TK = TC * 8 * 8, TN = 16 };

static void test_xnnpack_frees_transients(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    const cg_target *xnn = xnnpack_target(&reg);
    cg_model *m = NULL;
    cg_type_env *env = NULL;
    cg_assignment *a = NULL;
    cg_runtime *ref = NULL, *del = NULL;
    cg_value *x = NULL;
    if (!xnn)
        goto done;
    static float w[TC * TC * 9], g[TK * TN];
    for (int i = 0; i < TC * TC * 9; i++)
        w[i] = (float)((i * 31) % 29) / 128.0f - 0.1f;
    for (int i = 0; i < TK * TN; i++)
        g[i] = (float)((i * 17) % 23) / 256.0f - 0.04f;
    m = test_model_graph(13, 4, "x", "y");
    int64_t wd[4] = {TC, TC, 3, 3}, gd[2] = {TK, TN}, xd[4] = {1, TC, 10, 10};
    test_graph_init_f32(m, m->graph, "w", 4, wd, w);
    test_graph_init_f32(m, m->graph, "g", 2, gd, g);
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
    test_node(m, m->graph, "Conv", "conv", "x,w", "c");
    test_node(m, m->graph, "Flatten", "flat", "c", "f");
    cg_node *gemm = test_node(m, m->graph, "Gemm", "gemm", "f,g", "y");
    test_node_add_attr(gemm, attr_float("alpha", 0.5f));
    if (cg_type_env_build(m, NULL, 0, &env, &err) != CG_OK ||
        cg_assign(m, env, &xnn, 1, &a, &err) != CG_OK) {
        EXPECT(false, "typing and assigning: %s", err.msg);
        goto done;
    }
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    if (cg_runtime_init(m, &o, &ref, &err) != CG_OK) {
        EXPECT(false, "the reference runtime: %s", err.msg);
        goto done;
    }
    o.assignment = a;
    o.types = env;
    if (cg_runtime_init(m, &o, &del, &err) != CG_OK) {
        EXPECT(false, "the xnnpack runtime: %s", err.msg);
        goto done;
    }
    size_t freed = 0;
    for (size_t p = 0; p < cg_runtime_partition_count(del); p++) {
        cg_runtime_partition_info info;
        if (cg_runtime_partition_info_get(del, p, &info, &err) == CG_OK && info.state)
            freed += ((const cg_xnnpack_report *)info.state)->transient_bytes_freed;
    }
    size_t want = (size_t)(TC * TC * 9 + TK * TN) * sizeof(float);
    EXPECT(freed >= want, "repacked weights freed after XNNPACK packed them: %zu bytes, want at "
           "least %zu", freed, want);
    double xv[TC * 100];
    for (int i = 0; i < TC * 100; i++)
        xv[i] = (double)((i * 13) % 37) / 18.0 - 1.0;
    x = test_value(CG_DTYPE_FLOAT, 4, xd, xv);
    cg_named_value feed = {"x", x};
    for (int r = 0; r < 3; r++) {
        cg_named_value *ro = NULL, *xo = NULL;
        size_t rn = 0, xn = 0;
        bool ok = cg_runtime_run(ref, &feed, 1, &ro, &rn, &err) == CG_OK &&
                  cg_runtime_run(del, &feed, 1, &xo, &xn, &err) == CG_OK && rn == 1 && xn == 1 &&
                  ro[0].value->tensor.numel == TN && xo[0].value->tensor.numel == TN;
        double worst = 0, scale = 1;
        for (int i = 0; ok && i < TN; i++) {
            double rv = ((const float *)ro[0].value->tensor.data)[i];
            double xv2 = ((const float *)xo[0].value->tensor.data)[i];
            worst = fmax(worst, fabs(rv - xv2));
            scale = fmax(scale, fabs(rv));
        }
        EXPECT(ok && worst <= 1e-4 * scale, "run %d after the filters were freed: max |d| %g "
               "(%s)", r, worst, err.msg);
        cg_runtime_free_outputs(ro, rn);
        cg_runtime_free_outputs(xo, xn);
    }
done:
    cg_value_free(x);
    cg_runtime_free(del);
    cg_runtime_free(ref);
    cg_assignment_free(a);
    cg_type_env_free(env);
    cg_model_free(m);
    cg_target_registry_free(reg);
}

/* Model: W (raw bytes at `raw`) -> Identity -> Conv, and with w_out W is a
 * graph output as well. */
static cg_model *identity_conv_model(const void *raw, bool w_out)
{
    cg_model *m = test_model_graph(13, 4, "x", w_out ? "y,w" : "y");
    int64_t wd[4] = {CO, CI, 3, 3};
    test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd, raw, WN * sizeof(float));
    test_node(m, m->graph, "Identity", "wid", "w", "w2");
    test_node(m, m->graph, "Conv", "conv", "x,w2", "y");
    int64_t xd[4] = {1, CI, HW, HW};
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
    return m;
}

/* Model: an If whose then branch hands out the outer W itself (a capture,
 * not a step's input: the branch's output is read from W's data) and whose
 * else branch negates it (a step that folds at init, reading W promoted
 * from the model's bytes). */
static cg_model *captured_w_model(const void *raw)
{
    cg_model *m = test_model_graph(13, 4, "c", "r");
    int64_t wd[4] = {CO, CI, 3, 3};
    test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd, raw, WN * sizeof(float));
    cg_node *n = test_node(m, m->graph, "If", "pick", "c", "r");
    cg_graph *then_g = test_graph_new(m, "then", 2), *else_g = test_graph_new(m, "else", 2);
    test_graph_output(then_g, "w", NULL);
    test_node(m, else_g, "Neg", "", "w", "nw");
    test_graph_output(else_g, "nw", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    return m;
}

/* If(c) over a Conv of x by the main graph's W in each branch (the else
 * branch negates its result), as Silero VAD's branches read their weights
 * from the main graph. */
static cg_model *branch_conv_model(const void *raw)
{
    cg_model *m = test_model_graph(13, 4, "x", "y");
    test_graph_input(m->graph, "c", NULL);
    int64_t wd[4] = {CO, CI, 3, 3};
    test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd, raw, WN * sizeof(float));
    cg_node *n = test_node(m, m->graph, "If", "pick", "c", "y");
    cg_graph *then_g = test_graph_new(m, "then", 2), *else_g = test_graph_new(m, "else", 2);
    test_node(m, then_g, "Conv", "conv_t", "x,w", "yt");
    test_graph_output(then_g, "yt", NULL);
    test_node(m, else_g, "Conv", "conv_e", "x,w", "ye");
    test_node(m, else_g, "Neg", "", "ye", "nye");
    test_graph_output(else_g, "nye", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    return m;
}

/* A branch's Conv of a captured W (misaligned, read through its aligned
 * copy) is packed when the runtime is built, not at its first run: each
 * branch's convolution has its packing before any run, and both branches
 * give the unbranched model's bits (negated in the else branch). */
static void test_captured_w_packed_at_init(const float *want)
{
    cg_model *m = branch_conv_model(w_odd + 1);
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_value *x = input(), *c = NULL;
    bool ok = cg_runtime_init(m, &o, &rt, &err) == CG_OK &&
              cg_value_alloc_tensor(CG_DTYPE_BOOL, 0, NULL, &c, &err) == CG_OK;
    EXPECT(ok, "branch conv model: %s", err.msg);
    const cg_step *pick = ok ? &rt->main->steps[0] : NULL;
    EXPECT(!ok || pick->sub_count == 2, "the If has two branches");
    for (size_t b = 0; ok && b < pick->sub_count; b++) {
        const cg_plan *sp = pick->subs[b].plan;
        EXPECT(sp->step_count >= 1 && sp->steps[0].state != NULL,
               "branch %zu: the Conv of the captured W is packed at init", b);
    }
    size_t count = (size_t)CO * (HW - 2) * (HW - 2);
    for (int r = 0; ok && r < 4; r++) {
        int then = r % 2 == 0;
        *(uint8_t *)c->tensor.data = (uint8_t)then;
        cg_named_value feed[2] = {{"x", x}, {"c", c}};
        cg_named_value *outs = NULL;
        size_t n = 0;
        bool run = cg_runtime_run(rt, feed, 2, &outs, &n, &err) == CG_OK && n == 1 &&
                   (size_t)outs[0].value->tensor.numel == count;
        const float *y = run ? outs[0].value->tensor.data : NULL;
        for (size_t i = 0; run && i < count; i++)
            run = y[i] == (then ? want[i] : -want[i]);
        EXPECT(run, "run %d (%s branch): the unbranched bits (%s)", r, then ? "then" : "else",
               err.msg);
        cg_runtime_free_outputs(outs, n);
    }
    cg_value_free(x);
    cg_value_free(c);
    cg_runtime_free(rt);
    cg_model_free(m);
}

/* Output 0 of two float64 runs of one runtime (the second planned),
 * copied out as doubles (NULL on failure); *filled: the shared bytes
 * filled, and *holders: the holders of w_odd's copy, while it lives. */
static double *run_fp64(const cg_model *m, size_t *filled, size_t *holders)
{
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.float64 = true;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_value *x = input();
    cg_named_value feed = {"x", x};
    double *y = NULL;
    size_t count = (size_t)CO * (HW - 2) * (HW - 2);
    bool ok = cg_runtime_init(m, &o, &rt, &err) == CG_OK;
    for (int r = 0; ok && r < 2; r++) {
        cg_named_value *outs = NULL;
        size_t n = 0;
        ok = cg_runtime_run(rt, &feed, 1, &outs, &n, &err) == CG_OK && n >= 1 &&
             outs[0].value->tensor.dtype == CG_DTYPE_DOUBLE &&
             (size_t)outs[0].value->tensor.numel == count;
        if (ok && r == 1 && (y = malloc(count * sizeof *y)) != NULL)
            memcpy(y, outs[0].value->tensor.data, count * sizeof *y);
        cg_runtime_free_outputs(outs, n);
    }
    EXPECT(ok, "float64 runs: %s", err.msg);
    *filled = cg_shared_filled_bytes(); /* while the runtime holds its buffers */
    *holders = cg_init_copy_holders(w_odd + 1, WN * sizeof(float));
    cg_value_free(x);
    cg_runtime_free(rt);
    return y;
}

/* The float64 mode promotes a big float weight per step, from the model's
 * bytes where they lie: a misaligned W (and an Identity's view of it) gets
 * no aligned float copy, and the results are those of an aligned W, bit
 * for bit. A W that is also a graph output is handed out from its copy. */
static void test_fp64_reads_model_bytes(const float *w)
{
    static float w_al[WN];
    memcpy(w_al, w, sizeof w_al);
    cg_model *odd = identity_conv_model(w_odd + 1, false);
    cg_model *al = identity_conv_model(w_al, false);
    cg_model *out = identity_conv_model(w_odd + 1, true);
    size_t before = cg_shared_filled_bytes(), f_al = 0, f_odd = 0, f_out = 0, held = 0;
    double *want = run_fp64(al, &f_al, &held);
    double *got = run_fp64(odd, &f_odd, &held);
    size_t count = (size_t)CO * (HW - 2) * (HW - 2);
    EXPECT(want && got && memcmp(want, got, count * sizeof *got) == 0,
           "float64: a misaligned W gives the aligned W's bits");
    EXPECT(f_odd == before && f_al == before,
           "float64: no aligned copy filled (%zu bytes before, %zu and %zu during the runs)",
           before, f_al, f_odd);
    EXPECT(held == 1, "the copy's entry is held, unfilled (%zu holders)", held);
    double *got2 = run_fp64(out, &f_out, &held);
    EXPECT(got2 && want && memcmp(want, got2, count * sizeof *got2) == 0,
           "float64, W also an output: the same bits");
    /* a branch that returns W itself reads it whole: its copy is made */
    cg_model *cap = captured_w_model(w_odd + 1);
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.float64 = true;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_value *c = NULL;
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    EXPECT(cg_runtime_init(cap, &o, &rt, &err) == CG_OK &&
               cg_value_alloc_tensor(CG_DTYPE_BOOL, 0, NULL, &c, &err) == CG_OK,
           "captured W: %s", err.msg);
    if (rt && c) {
        cg_named_value feed = {"c", c};
        for (int then = 1; then >= 0; then--) {
            *(uint8_t *)c->tensor.data = (uint8_t)then;
            bool ok = cg_runtime_run(rt, &feed, 1, &outs, &nouts, &err) == CG_OK &&
                      nouts == 1 && outs[0].value->tensor.dtype == CG_DTYPE_DOUBLE &&
                      outs[0].value->tensor.numel == WN;
            for (int i = 0; ok && i < WN; i++)
                ok = ((const double *)outs[0].value->tensor.data)[i] ==
                     (then ? (double)w[i] : -(double)w[i]);
            EXPECT(ok, "float64, a branch %s the captured W: its values (%s)",
                   then ? "returning" : "negating", err.msg);
            cg_runtime_free_outputs(outs, nouts);
            outs = NULL;
            nouts = 0;
        }
    }
    cg_value_free(c);
    cg_runtime_free(rt);
    cg_model_free(cap);
    EXPECT(f_out == before + WN * sizeof(float),
           "float64, W also an output: its copy is made (%zu bytes, %zu before)", f_out, before);
    free(want);
    free(got);
    free(got2);
    cg_model_free(odd);
    cg_model_free(al);
    cg_model_free(out);
    EXPECT(cg_shared_live() == 0, "float64: nothing left: %zu", cg_shared_live());
}

int main(void)
{
    float w[WN];
    for (int i = 0; i < WN; i++) {
        w[i] = (float)((i * 13) % 17) / 16.0f - 0.5f;
        w_other[i] = -w[i] * 0.5f + 0.25f;
    }
    memcpy(w_odd + 1, w, sizeof w);
    static float w_aligned[WN];
    memcpy(w_aligned, w, sizeof w);
    cg_model *odd = conv_model(w_odd + 1), *aligned = conv_model(w_aligned),
             *other = conv_model(w_other);
    EXPECT(cg_shared_live() == 0, "nothing shared before any runtime");

    /* the reference: W used in place, nothing to copy */
    float *want = run_once(aligned, NULL);
    EXPECT(want != NULL, "the aligned model runs");

    /* two live runtimes: one copy and one packing between them */
    cg_runtime *a = NULL, *b = NULL;
    float *ya = run_once(odd, &a);
    size_t after_a = cg_shared_live();
    float *yb = run_once(odd, &b);
    EXPECT(after_a == 2, "the copy of W and its packing: %zu entries", after_a);
    EXPECT(cg_shared_live() == after_a, "a second runtime shares them: %zu entries",
           cg_shared_live());
    EXPECT(same(ya, want) && same(yb, want), "shared or not, the same bits");
    cg_runtime_free(a);
    EXPECT(cg_shared_live() == after_a, "still held by the second runtime");
    cg_runtime_free(b);
    EXPECT(cg_shared_live() == 0, "the last runtime gone, nothing left: %zu",
           cg_shared_live());
    free(ya);
    free(yb);

    /* a model with other weights at another address shares nothing */
    float *yo = run_once(other, &a);
    EXPECT(yo && !same(yo, want), "other weights, other results");
    free(yo);
    cg_runtime_free(a);

    /* a hold keeps the copy, and the packing made from it, across
     * runtimes built one after another */
    cg_weights_hold *h = cg_runtime_hold_weights(odd);
    EXPECT(h != NULL && cg_shared_live() == 1, "the hold takes W's copy: %zu",
           cg_shared_live());
    ya = run_once(odd, NULL);
    EXPECT(cg_shared_live() == 2, "the packing outlives its runtime under the hold: %zu",
           cg_shared_live());
    yb = run_once(odd, NULL);
    EXPECT(cg_shared_live() == 2, "and is found again, not made twice: %zu",
           cg_shared_live());
    EXPECT(same(ya, want) && same(yb, want), "held or not, the same bits");
    free(ya);
    free(yb);
    /* a hold on an aligned model keeps the packing made from its bytes */
    cg_weights_hold *h2 = cg_runtime_hold_weights(aligned);
    EXPECT(h2 != NULL, "an aligned model is held too (its packings)");
    free(run_once(aligned, NULL));
    EXPECT(cg_shared_live() == 3, "its packing kept: %zu", cg_shared_live());
    cg_runtime_hold_free(h);
    EXPECT(cg_shared_live() == 1, "the first hold's buffers freed with it: %zu",
           cg_shared_live());
    cg_runtime_hold_free(h2);
    EXPECT(cg_shared_live() == 0, "no hold, nothing left: %zu", cg_shared_live());

    /* threads building runtimes over one model at once */
    pthread_t t[4];
    worker wk[4];
    for (int i = 0; i < 4; i++) {
        wk[i] = (worker){odd, want, 0};
        EXPECT(pthread_create(&t[i], NULL, work, &wk[i]) == 0, "thread %d starts", i);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        EXPECT(wk[i].bad == 0, "thread %d: %d runs differed", i, wk[i].bad);
    }
    EXPECT(cg_shared_live() == 0, "after the threads, nothing left: %zu", cg_shared_live());

    test_fp64_reads_model_bytes(w);
    test_captured_w_packed_at_init(want);
    test_mapped_pages(odd, want);
    test_xnnpack_reads_model_bytes(odd, want);
    test_xnnpack_frees_transients();

    free(want);
    cg_model_free(odd);
    cg_model_free(aligned);
    cg_model_free(other);
    return test_done("test_initshare");
}
