/*
 * One sample assembled and run (convgate/samplerun.h), as `convgate run` and
 * the bindings' run do, on tests/data/io/cli_model.onnx (inputs x, y:
 * float32[N,3], i: int64[2], b: bool[3]; Sum = x + y): a folder's sample
 * (a NAME=FILE feed for an input it has is refused: fed twice), NAME=FILE
 * feeds with random values only for what is still missing (the tensors the
 * samples policy draws for sample 0 once the same inputs are fed), a
 * missing input left for cg_sample_check_complete to name, and the runner
 * each option set chooses (reference runtime, target path, LiteRT) with the
 * same outputs on the first two.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convgate/samplerun.h"
#include "testlib.h"

#define MODEL CG_SOURCE_DIR "/tests/data/io/cli_model.onnx"

static char root[64];

static const cg_value *input_of(const cg_sample *s, const char *name)
{
    for (size_t i = 0; i < s->input_count; i++)
        if (strcmp(s->inputs[i].name, name) == 0)
            return s->inputs[i].value;
    return NULL;
}

static void save_npy(const char *path, cg_dtype dt, int rank, const int64_t *dims, double v)
{
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tensor_alloc(&t, dt, rank, dims, 0, &err) == CG_OK, "%s", err.msg);
    for (int64_t i = 0; i < t.numel; i++)
        cg_tensor_set_f64(&t, i, v);
    EXPECT(cg_npy_save(path, &t, &err) == CG_OK, "%s: %s", path, err.msg);
    cg_tensor_release(&t);
}

/* Every element of input or output `name` of s/outs equals v. */
static bool all_equal(const cg_value *v, double want)
{
    if (!v || v->kind != CG_VALUE_TENSOR)
        return false;
    for (int64_t i = 0; i < v->tensor.numel; i++)
        if (cg_tensor_get_f64(&v->tensor, i) != want)
            return false;
    return v->tensor.numel > 0;
}

static const cg_value *output_of(const cg_named_value *outs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (outs[i].name && strcmp(outs[i].name, name) == 0)
            return outs[i].value;
    return NULL;
}

static void test_assemble(const cg_model *m)
{
    char dir[128], path[200], xfeed[220], yfeed[220];
    int64_t xd[2] = {2, 3}, id[1] = {2}, bd[1] = {3};
    cg_error err;
    cg_sample s;
    cg_error_clear(&err);
    /* a folder of one sample (x = y = 2), and y = 5 in a file of its own */
    snprintf(dir, sizeof dir, "%s/in", root);
    mkdir(dir, 0777);
    const char *names[4] = {"x", "y", "i", "b"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, names[k]);
        save_npy(path, k < 2 ? CG_DTYPE_FLOAT : k == 2 ? CG_DTYPE_INT64 : CG_DTYPE_BOOL,
                 k < 2 ? 2 : 1, k < 2 ? xd : k == 2 ? id : bd, k < 2 ? 2 : 1);
    }
    snprintf(xfeed, sizeof xfeed, "x=%s/x.npy", dir);
    snprintf(path, sizeof path, "%s/y5.npy", root);
    save_npy(path, CG_DTYPE_FLOAT, 2, xd, 5);
    snprintf(yfeed, sizeof yfeed, "y=%s", path);

    /* the folder's sample */
    cg_sample_spec spec = {.dir = dir};
    EXPECT(cg_sample_assemble(m, &spec, &s, &err) == CG_OK, "folder: %s", err.msg);
    EXPECT(all_equal(input_of(&s, "x"), 2) && all_equal(input_of(&s, "y"), 2) &&
               cg_sample_check_complete(&s, m, &err) == CG_OK,
           "x and y from the folder: %s", err.msg);

    /* the runner each option set chooses, and the same Sum from the first two */
    cg_sample_runner_options ro;
    memset(&ro, 0, sizeof ro);
    cg_sample_runner *r = NULL;
    cg_named_value *outs = NULL;
    size_t n = 0;
    EXPECT(cg_sample_runner_choose(&ro) == CG_SAMPLE_RUNNER_REFERENCE, "no target: reference");
    EXPECT(cg_sample_runner_init(m, &ro, &s, &r, &err) == CG_OK &&
               cg_sample_runner_kind_of(r) == CG_SAMPLE_RUNNER_REFERENCE &&
               !cg_sample_runner_path(r) && !cg_sample_runner_report(r),
           "reference runner: %s", err.msg);
    EXPECT(r && cg_sample_runner_run(r, &s, &outs, &n, &err) == CG_OK &&
               all_equal(output_of(outs, n, "Sum"), 4),
           "reference: Sum = 2 + 2: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    outs = NULL;
    /* a second run of the same runner (run --repeat) */
    EXPECT(r && cg_sample_runner_run(r, &s, &outs, &n, &err) == CG_OK &&
               all_equal(output_of(outs, n, "Sum"), 4),
           "reference, again: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    outs = NULL;
    cg_sample_runner_free(r);
    r = NULL;

    cg_target_registry *reg = NULL;
    const cg_target *xnn = NULL;
    if (cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK)
        xnn = cg_target_registry_find(reg, "xnnpack", &err);
    EXPECT(xnn != NULL, "xnnpack: %s", err.msg);
    ro.targets = &xnn;
    ro.target_count = xnn ? 1 : 0;
    EXPECT(!xnn || cg_sample_runner_choose(&ro) == CG_SAMPLE_RUNNER_TARGETS, "targets: path");
    if (xnn) {
        EXPECT(cg_sample_runner_init(m, &ro, &s, &r, &err) == CG_OK &&
                   cg_sample_runner_kind_of(r) == CG_SAMPLE_RUNNER_TARGETS &&
                   cg_sample_runner_path(r) && !cg_sample_runner_warnings(r),
               "target path runner: %s", err.msg);
        EXPECT(r && cg_sample_runner_run(r, &s, &outs, &n, &err) == CG_OK &&
                   all_equal(output_of(outs, n, "Sum"), 4),
               "target path: Sum = 2 + 2: %s", err.msg);
        cg_runtime_free_outputs(outs, n);
        outs = NULL;
        cg_sample_runner_free(r);
        r = NULL;
    }
    cg_runner_options litert = {.kind = CG_RUNNER_LITERT_NODE};
    ro.runner = &litert;
    EXPECT(cg_sample_runner_choose(&ro) == CG_SAMPLE_RUNNER_LITERT, "a runner wins");
    cg_target_registry_free(reg);
    cg_sample_clear(&s);

    /* a feed for an input the folder has: refused, not silently replaced */
    const char *one[1] = {yfeed};
    cg_error_clear(&err);
    spec = (cg_sample_spec){.dir = dir, .feeds = one, .feed_count = 1};
    EXPECT(cg_sample_assemble(m, &spec, &s, &err) != CG_OK && strstr(err.msg, "twice") &&
               s.input_count == 0,
           "y fed twice: %s", err.msg);
    cg_error_clear(&err);

    /* feeds, then random values only for what is missing: x and y kept,
     * i and b drawn as the policy draws sample 0 with x and y fed */
    const char *two[2] = {xfeed, yfeed};
    cg_random_inputs rnd = {7, NULL, 0};
    spec = (cg_sample_spec){.feeds = two, .feed_count = 2, .random = true, .rnd = &rnd};
    EXPECT(cg_sample_assemble(m, &spec, &s, &err) == CG_OK, "feeds + random: %s", err.msg);
    EXPECT(all_equal(input_of(&s, "x"), 2) && all_equal(input_of(&s, "y"), 5),
           "x and y from the feeds, not drawn");
    cg_sample fresh;
    EXPECT(cg_sample_init(&fresh, m, "inputs", &err) == CG_OK &&
               cg_sample_feed_spec(&fresh, m, xfeed, 0, &err) == CG_OK &&
               cg_sample_feed_spec(&fresh, m, yfeed, 0, &err) == CG_OK &&
               cg_sample_fill_random(&fresh, m, &rnd, 0, NULL, 0, 0, &err) == CG_OK,
           "fresh: %s", err.msg);
    const cg_value *i = input_of(&s, "i"), *fi = input_of(&fresh, "i");
    EXPECT(i && fi && i->tensor.numel == 2 && fi->tensor.numel == 2 &&
               memcmp(i->tensor.data, fi->tensor.data, cg_tensor_bytes(&i->tensor)) == 0,
           "i drawn as sample 0 of seed 7");
    memset(&ro, 0, sizeof ro);
    EXPECT(cg_sample_runner_init(m, &ro, &s, &r, &err) == CG_OK &&
               cg_sample_runner_run(r, &s, &outs, &n, &err) == CG_OK &&
               all_equal(output_of(outs, n, "Sum"), 7),
           "Sum = 2 + 5: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    cg_sample_runner_free(r);
    cg_sample_clear(&fresh);
    cg_sample_clear(&s);

    /* without random, a missing input is left for the check to name */
    spec = (cg_sample_spec){.feeds = two, .feed_count = 1};
    EXPECT(cg_sample_assemble(m, &spec, &s, &err) == CG_OK, "x only: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_sample_check_complete(&s, m, &err) != CG_OK && strstr(err.msg, "'y'"),
           "y missing: %s", err.msg);
    cg_sample_clear(&s);
    /* a folder that does not exist: an error, and nothing left to free */
    cg_error_clear(&err);
    spec = (cg_sample_spec){.dir = "/nonexistent/cg"};
    EXPECT(cg_sample_assemble(m, &spec, &s, &err) != CG_OK && s.input_count == 0,
           "no folder: %s", err.msg);
}

int main(void)
{
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(root, sizeof root, "/tmp/cg_test_samplerun_XXXXXX");
    if (!mkdtemp(root) || cg_model_load(MODEL, NULL, &m, &err) != CG_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    test_assemble(m);
    cg_model_free(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return test_done("test_samplerun");
}
