/*
 * ONNX backend conformance: test directories (model.onnx plus
 * test_data_set_N/{input,output}_K.pb) run on the reference runtime, each
 * output judged with ONNX's tolerance (rtol 1e-3, atol 1e-7, NaN-aware),
 * and the results held against a manifest of the tests NOT expected to
 * pass (tests/conformance/expected.txt):
 *   suite/test_name<TAB>fail|skip<TAB>reason
 * with '#' comments and blank lines. `convgate conformance` is these calls
 * plus a rendering (src/report/conformance.c).
 *
 * Isolation: cg_conf_run with isolate runs the test in a forked child with
 * a wall-clock timeout, so a crash, hang or runaway allocation in one test
 * is a FAIL naming the signal, never the end of the run.
 */
#ifndef CONVGATE_CONFORMANCE_H
#define CONVGATE_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/progress.h"
#include "convgate/runtime.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_CONF_REASON_MAX 600

typedef enum cg_conf_status { CG_CONF_PASS = 0, CG_CONF_FAIL, CG_CONF_SKIP } cg_conf_status;

/* "pass", "fail", "skip" */
CG_API const char *cg_conf_status_name(cg_conf_status s);

typedef struct cg_conf_test {
    char *dir;  /* test directory */
    char *name; /* suite/test_name */
    cg_conf_status status;
    char reason[CG_CONF_REASON_MAX];
    double ms;
} cg_conf_test;

typedef struct cg_conf_entry { /* one manifest line */
    char *name;
    cg_conf_status status;
    char *reason;
    bool seen; /* matched a test of this run */
} cg_conf_entry;

typedef struct cg_conf_manifest {
    cg_conf_entry *entries;
    size_t count;
    char *header; /* leading comment block, kept by cg_conf_manifest_update */
} cg_conf_manifest;

/* The tests under dir (dir itself when it holds model.onnx: *single_test,
 * which may be NULL) whose "suite/test" name contains filter (NULL: all),
 * sorted; suite gets the suite's name. Free with cg_conf_tests_free. */
CG_API bool cg_conf_collect(const char *dir, const char *filter, cg_conf_test **out, size_t *count,
                            char *suite, size_t suite_cap, bool *single_test, cg_error *err);
CG_API void cg_conf_tests_free(cg_conf_test *tests, size_t count);
/* Runs one test: status, reason and ms filled. opt (NULL: the defaults)
 * gives the runtime's float64, threads and simd (the runner sets the
 * allocation limit). In the float64 reference mode each float output is
 * rounded to the expected type before it is judged. */
CG_API void cg_conf_run(cg_conf_test *t, bool isolate, int timeout_s,
                        const cg_runtime_options *opt);

/* A whole run: every test in order, as cg_conf_run does each. */
typedef struct cg_conf_options {
    bool isolate;
    int timeout_s;
    const cg_runtime_options *runtime; /* as cg_conf_run's opt */
    cg_progress progress; /* "conformance", tests, the test about to run */
    /* after each test (e.g. to print its line), or NULL */
    void (*done)(void *user, const cg_conf_test *t);
    void *done_user;
} cg_conf_options;

/* Runs the tests and counts their statuses (each count may be NULL). */
CG_API void cg_conf_run_all(cg_conf_test *tests, size_t count, const cg_conf_options *opt,
                            size_t *passed, size_t *failed, size_t *skipped);

/* Reads a manifest. missing_ok: a file that does not exist is an empty one. */
CG_API bool cg_conf_manifest_load(const char *path, bool missing_ok, cg_conf_manifest *m,
                                  cg_error *err);
CG_API void cg_conf_manifest_free(cg_conf_manifest *m);
CG_API cg_conf_entry *cg_conf_manifest_find(cg_conf_manifest *m, const char *name);
/* Writes the manifest for --update-expect: every non-passing test of this
 * run, plus the old lines for tests this run did not cover (reasons kept;
 * new lines get "TODO"). */
CG_API bool cg_conf_manifest_update(const char *path, const cg_conf_test *tests, size_t count,
                                    cg_error *err);
/* The deviations of a run from the manifest, one line each (malloc'd):
 * an unlisted failure, a listed test that passes or has another status,
 * and, when the whole suite ran, a listed test of the suite that is gone.
 * Marks the entries seen. Free with cg_conf_deviations_free. */
CG_API size_t cg_conf_deviations(const cg_conf_test *tests, size_t count, cg_conf_manifest *m,
                                 const char *suite, bool whole_suite, char ***out);
CG_API void cg_conf_deviations_free(char **lines, size_t count);

#ifdef __cplusplus
}
#endif
#endif
