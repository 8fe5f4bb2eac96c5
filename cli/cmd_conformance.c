/*
 * convgate conformance: run ONNX backend test directories on the reference
 * runtime and hold the results against a manifest of the tests NOT
 * expected to pass (src/verify/conformance.c runs them,
 * src/report/conformance.c renders; the manifest format is in
 * include/convgate/conformance.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "convgate/conformance.h"
#include "report/report.h"
#include "core/text.h"

typedef struct conf_args {
    const char *dir, *filter, *expect, *update;
    bool json, verbose, fork_tests, fp64;
    int timeout_s;
    int threads;  /* --threads */
    cg_simd simd; /* --simd */
} conf_args;

static void conf_usage(FILE *f)
{
    fprintf(f,
        "Usage: convgate conformance DIR [OPTIONS]\n"
        "\n"
        "Runs ONNX backend tests on the reference runtime. DIR is one test directory\n"
        "(model.onnx + test_data_set_N/input_K.pb, output_K.pb) or a directory of them,\n"
        "e.g. /usr/share/libonnx-testdata/data/node. Tests are named SUITE/TEST, SUITE\n"
        "being the name of the directory that holds them.\n"
        "\n"
        "Each output is compared with |got - expected| <= 1e-7 + 1e-3 * |expected|;\n"
        "dtype and shape must match exactly, NaN matches only NaN, strings compare\n"
        "exactly, sequences and optionals element by element. Each test runs in its\n"
        "own process with a timeout: a crash or hang is a FAIL naming the signal.\n"
        "\n"
        "Prints 'PASS name', 'FAIL name: reason' or 'SKIP name: reason' per test and\n"
        "ends with 'N passed, N failed, N skipped'.\n"
        "\n"
        "Options:\n"
        "  --filter SUBSTR        run only tests whose name contains SUBSTR\n"
        "  --json                 the result as JSON (docs/json.md): {passed, failed,\n"
        "                         skipped, tests:[{name, status, reason, ms}],\n"
        "                         deviations}\n"
        "  --expect FILE          compare with the manifest FILE: lines\n"
        "                         'SUITE/TEST<TAB>fail|skip<TAB>reason' list the tests not\n"
        "                         expected to pass ('#' starts a comment). Exit 1 on any\n"
        "                         deviation: an unlisted failure, a listed test that\n"
        "                         passes, a status other than the listed one, or a listed\n"
        "                         test of this suite that no longer exists\n"
        "  --update-expect FILE   write the current failures and skips to FILE, keeping\n"
        "                         the reasons of lines already there (new lines get\n"
        "                         'TODO') and the lines of tests this run did not cover\n"
        "  --timeout SECONDS      per-test wall-clock limit (default 20)\n"
        "  --no-fork              run tests in this process (for debuggers; a crash\n"
        "                         ends the run)\n"
        "  --verbose              also print each test's run time\n"
        "  --quiet                no progress line on stderr (drawn only on a terminal)\n"
        "  --fp64                 run in the float64 reference mode (every float\n"
        "                         computed in double, docs/float64.md); float outputs\n"
        "                         are rounded to the expected type, then judged as above\n"
        "  --threads N            run the reference kernels on N threads (default 1)\n"
        "  --simd LEVEL           vector code: auto (default), portable, avx2, avx512\n"
        "\n"
        "Exit status: 0 all tests passed (or, with --expect, no deviation), 1 a test\n"
        "failed (or deviated), 2 usage or I/O error.\n");
    fputs("\n" CLI_LIMITS_HELP, f);
}

static int parse_args(int argc, char **argv, conf_args *a)
{
    a->fork_tests = true;
    a->timeout_s = 20;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            conf_usage(stdout);
            return -1;
        } else if (!strcmp(arg, "--json")) {
            a->json = true;
        } else if (!strcmp(arg, "--quiet")) {
            /* main() saw it: no progress line */
        } else if (!strcmp(arg, "--verbose") || !strcmp(arg, "-v")) {
            a->verbose = true;
        } else if (!strcmp(arg, "--no-fork")) {
            a->fork_tests = false;
        } else if (!strcmp(arg, "--fp64")) {
            a->fp64 = true;
        } else if (!strcmp(arg, "--threads")) {
            if (!cli_parse_threads("conformance", val, &a->threads))
                return CG_EXIT_ERROR;
            i++;
        } else if (!strcmp(arg, "--simd")) {
            if (!cli_parse_simd("conformance", val, &a->simd))
                return CG_EXIT_ERROR;
            i++;
        } else if (!strcmp(arg, "--filter") || !strcmp(arg, "--expect") ||
                   !strcmp(arg, "--update-expect") || !strcmp(arg, "--timeout")) {
            if (!val) {
                cli_error("conformance", "%s needs a value", arg);
                return CG_EXIT_ERROR;
            }
            i++;
            if (!strcmp(arg, "--filter"))
                a->filter = val;
            else if (!strcmp(arg, "--expect"))
                a->expect = val;
            else if (!strcmp(arg, "--update-expect"))
                a->update = val;
            else {
                char *end;
                long s = strtol(val, &end, 10);
                if (*end || s <= 0 || s > 86400) {
                    cli_error("conformance", "--timeout needs seconds in 1..86400");
                    return CG_EXIT_ERROR;
                }
                a->timeout_s = (int)s;
            }
        } else if (arg[0] == '-' && arg[1]) {
            cli_error("conformance", "unknown option '%s' (see convgate conformance --help)",
                      arg);
            return CG_EXIT_ERROR;
        } else if (a->dir) {
            cli_error("conformance", "more than one directory given");
            return CG_EXIT_ERROR;
        } else {
            a->dir = arg;
        }
    }
    if (!a->dir) {
        cli_error("conformance", "no test directory given");
        conf_usage(stderr);
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* Each test's line as it finishes (the progress line is cleared first). */
static void print_test(void *user, const cg_conf_test *t)
{
    const conf_args *a = user;
    cli_progress_clear();
    cg_report_conf_test_text(stdout, t, a->verbose);
    fflush(stdout);
}

int cmd_conformance(int argc, char **argv)
{
    conf_args a;
    cg_conf_manifest manifest;
    cg_conf_test *tests = NULL;
    size_t count = 0, dev_count = 0;
    char suite[512];
    char **deviations = NULL;
    bool single = false;
    int rc = CG_EXIT_ERROR;
    cg_error err;
    cg_error_clear(&err);
    memset(&a, 0, sizeof a);
    memset(&manifest, 0, sizeof manifest);
    int prc = parse_args(argc, argv, &a);
    if (prc != CG_EXIT_OK)
        return prc < 0 ? CG_EXIT_OK : prc;
    if ((a.expect && !cg_conf_manifest_load(a.expect, false, &manifest, &err)) ||
        !cg_conf_collect(a.dir, a.filter, &tests, &count, suite, sizeof suite, &single, &err)) {
        cli_error("conformance", "%s", err.msg);
        goto done;
    }
    if (!count && a.filter)
        cli_error("conformance", "no test name contains '%s'", a.filter);
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.float64 = a.fp64;
    ro.threads = a.threads;
    ro.simd = a.simd;
    cg_conf_view v = {tests, count, 0, 0, 0, a.expect, NULL, 0};
    cg_conf_options co = {a.fork_tests, a.timeout_s, &ro, cli_progress(),
                          a.json ? NULL : print_test, &a};
    cg_conf_run_all(tests, count, &co, &v.passed, &v.failed, &v.skipped);
    cli_progress_clear();
    if (a.expect) {
        dev_count = cg_conf_deviations(tests, count, &manifest, suite, !a.filter && !single,
                                       &deviations);
        if (!deviations) {
            cli_error("conformance", "out of memory");
            goto done;
        }
    }
    v.deviations = deviations;
    v.deviation_count = dev_count;
    if (a.update && !cg_conf_manifest_update(a.update, tests, count, &err)) {
        cli_error("conformance", "%s", err.msg);
        goto done;
    }
    rc = (a.expect ? dev_count : v.failed) ? CG_EXIT_FAIL : CG_EXIT_OK;
    if (a.json)
        rc = cli_json_emit(rc, cg_report_conf_json(&v));
    else
        cg_report_conf_text(stdout, &v);
done:
    cg_conf_deviations_free(deviations, dev_count);
    cg_conf_tests_free(tests, count);
    cg_conf_manifest_free(&manifest);
    return rc;
}
