/*
 * convgate run: feed a model inputs from files (or seeded random data), run
 * it on the reference CPU runtime, as targets would or in the real LiteRT,
 * summarize every output and optionally write each one to a folder. The
 * sample and the runner are the library's (convgate/samplerun.h); file
 * names come from the samples module (convgate/samples.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "convgate/samplerun.h"
#include "core/clock.h"
#include "report/report.h"

static void run_usage(FILE *f)
{
    fputs(
        "Usage: convgate run MODEL [OPTIONS]\n"
        "\n"
        "Runs MODEL on the reference CPU runtime and summarizes each output\n"
        "(dtype, shape, min/max/mean over finite values, NaN and Inf counts).\n"
        "\n"
        "Inputs:\n"
        "  -i, --input NAME=FILE  feed graph input NAME from FILE: a TensorProto .pb\n"
        "                       (also SequenceProto/OptionalProto for sequence and\n"
        "                       optional inputs), a .npy, or FILE.npz:KEY (KEY may be\n"
        "                       omitted when the .npz holds one array)\n"
        "  -i @FILE.npz         feed every array of FILE.npz to the input of its name\n"
        "  --inputs DIR         the inputs of one sample of an input folder (see below);\n"
        "                       --sample N picks sample N when DIR holds several\n"
        "  --random             fill every input not fed otherwise with random values\n"
        CLI_HELP_INPUT_OPTIONS
        "\n"
        "Outputs:\n"
        "  -o, --output-dir DIR write each output to DIR (created, with its parents, if\n"
        "                       missing) as NAME.npy, or NAME.npz (keys 0, 1, ...) for a\n"
        "                       sequence; `compare --outputs-from DIR` reads them back\n"
        "  --json               the report as JSON (docs/json.md): result {outputs:\n"
        "                       [{name, dtype, shape, file, min, max, mean, nan, inf}],\n"
        "                       target, time_ms, timing}\n"
        "\n"
        "Precision:\n"
        "  --fp64               the float64 reference mode: every float32, float16 and\n"
        "                       bfloat16 value is promoted to float64 and every kernel\n"
        "                       computes in double; float outputs come out as float64\n"
        "                       (docs/float64.md). Not with --target\n"
        "\n"
        "Target path:\n"
        "  --target T[,T2...]   run the model as these targets would, in priority\n"
        "                       order, the CPU taking the rest (see convgate targets):\n"
        "                       executing targets (xnnpack) run their partitions for\n"
        "                       real; fp16 profiles (litert-gpu) are emulated with\n"
        "                       fp16 storage and accumulation on the reference\n"
        "                       kernels; other profiles change placement only\n"
        "  --accumulate fp16|fp32  accumulation of emulated fp16 targets (default: as the\n"
        "                       target's profile says)\n"
        "  --profiles DIR       capability profiles directory\n"
        "\n"
        "The real LiteRT (a .tflite MODEL):\n"
        CLI_HELP_RUNNER
        "\n"
        "Timing:\n"
        "  --repeat N           after the first run, run N more times on the same\n"
        "                       inputs and report the median, min and max of those\n"
        "                       warm runs; time_ms is then the median, and --json\n"
        "                       adds timing:{load_ms, init_ms, first_ms, memory_plan,\n"
        "                       median_ms, min_ms, max_ms, cpu_median_ms, runs,\n"
        "                       threads} (cpu: the process's CPU time per warm run,\n"
        "                       which on a busy machine is steadier than wall;\n"
        "                       memory_plan: \"set-up\" where set-up followed every\n"
        "                       value's size from the input shapes and placed them,\n"
        "                       else \"first run\", which then records the plan)\n"
        "  --cold               with --repeat: before each warm run, read a buffer of\n"
        "                       twice the last-level cache (64 MiB when the size is\n"
        "                       unknown), outside the timed run, so that the model's\n"
        "                       weights and code start out of the caches: the latency\n"
        "                       of a model called between other work (a VAD every\n"
        "                       32 ms), where a warm run's is a best case. The caches\n"
        "                       private to other cores keep what they hold, so it is\n"
        "                       exact at one thread. --json adds timing.cold: true\n"
        "  --threads N          threads of the reference kernels and of an executing\n"
        "                       target's runtime (xnnpack), the caller's included\n"
        "                       (default 1: single-threaded)\n"
        "  --simd LEVEL         vector code of the kernels: auto (default: $CG_SIMD,\n"
        "                       else the best the CPU has), portable, avx2, avx512\n"
        "\n"
        "Limits:\n"
        "  --max-alloc BYTES    fail any single allocation above BYTES (suffixes\n"
        "                       K, M, G; default 4G); also caps input files\n"
        "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
        "\n"
        "Exit status: 0 success, 1 the model failed while running, 2 usage or input\n"
        "error (unknown or missing input, dtype or shape mismatch, unreadable file).\n",
        f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct run_args {
    const char *model_path, *out_dir, *inputs_dir, *sample;
    char **feeds; /* raw -i arguments */
    size_t feed_count;
    bool random;
    size_t max_alloc;
    uint64_t repeat;
    bool cold; /* --cold: the caches evicted before each warm run */
    bool fp64; /* --fp64: the float64 reference mode */
    int threads;  /* --threads */
    cg_simd simd; /* --simd */
    cli_inputs in;
    cli_targets targets;
    cli_against runner;       /* --runner, --precision */
} run_args;

static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option longopts[] = {
        CLI_OPTS_TARGETS, CLI_OPTS_INPUTS,
        {"input", required_argument, NULL, 'i'},      {"inputs", required_argument, NULL, 'I'},
        {"sample", required_argument, NULL, 'n'},     {"random", no_argument, NULL, 'r'},
        {"output-dir", required_argument, NULL, 'o'}, CLI_OPTS_ACCUMULATE,
        {"repeat", required_argument, NULL, 'R'},     {"max-alloc", required_argument, NULL, 'M'},
        {"fp64", no_argument, NULL, 'F'},             {"threads", required_argument, NULL, 'T'},
        {"simd", required_argument, NULL, 'S'},       {"cold", no_argument, NULL, 'C'},
        CLI_OPTS_RUNNER,
        CLI_OPTS_END};
    int c;
    bool started = false;
    while ((c = cli_next_option("run", argc, argv, "hi:o:", longopts, &started,
                                &a->in, &a->targets, NULL)) != -1) {
        switch (c) {
        case 'i': a->feeds[a->feed_count++] = optarg; break;
        case 'I': a->inputs_dir = optarg; break;
        case 'n': a->sample = optarg; break;
        case 'r': a->random = true; break;
        case 'F': a->fp64 = true; break;
        case 'C': a->cold = true; break;
        case 'T':
            if (!cli_parse_threads("run", optarg, &a->threads))
                return CG_EXIT_ERROR;
            break;
        case 'S':
            if (!cli_parse_simd("run", optarg, &a->simd))
                return CG_EXIT_ERROR;
            break;
        case 'o': a->out_dir = optarg; break;
        case 'R':
            if (!cli_parse_count(optarg, 1000000, &a->repeat)) {
                cli_error("run", "--repeat needs a run count from 0 to 1000000");
                return CG_EXIT_ERROR;
            }
            break;
        case 'M':
            if (!cli_parse_bytes(optarg, &a->max_alloc)) {
                cli_error("run", "--max-alloc needs a positive byte count (suffix K, M or G)");
                return CG_EXIT_ERROR;
            }
            break;
        case CLI_OPT_RUNNER:
        case CLI_OPT_PRECISION:
            if (cli_against_option("run", &a->runner, c == CLI_OPT_RUNNER ? "runner" : "precision",
                                   optarg) < 0)
                return CG_EXIT_ERROR;
            break;
        case 'h': run_usage(stdout); return -1;
        default: return CG_EXIT_ERROR;
        }
    }
    if (!(a->model_path = cli_model_arg("run", argc, argv, run_usage)) ||
        !cli_against_check("run", &a->runner, "runner"))
        return CG_EXIT_ERROR;
    if (a->runner.runner.kind && (a->fp64 || a->targets.arg_count || a->repeat)) {
        cli_error("run", "--runner runs the model in LiteRT: not with --fp64, --target or "
                  "--repeat");
        return CG_EXIT_ERROR;
    }
    if (a->cold && !a->repeat) {
        cli_error("run", "--cold times the warm runs of --repeat N: give --repeat too");
        return CG_EXIT_ERROR;
    }
    if (a->sample && !a->inputs_dir) {
        cli_error("run", "--sample applies to --inputs DIR");
        return CG_EXIT_ERROR;
    }
    if (a->fp64 && a->targets.arg_count) {
        cli_error("run", "--fp64 runs the reference runtime in double; it cannot be combined "
                  "with --target");
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* The sample (cg_sample_assemble: --inputs DIR's, then every -i, then
 * random values), refused when an input is still missing. */
static bool build_sample(run_args *a, const cg_model *model, cg_sample *s)
{
    cg_error err;
    cg_error_clear(&err);
    cg_sample_spec spec = {a->inputs_dir, a->sample, (const char *const *)a->feeds,
                           a->feed_count, a->random, &a->in.random, a->in.dims,
                           a->in.dim_count, a->max_alloc};
    if (cg_sample_assemble(model, &spec, s, &err) != CG_OK) {
        cli_error("run", "%s", err.msg);
        return false;
    }
    if (cg_sample_check_complete(s, model, &err) != CG_OK) {
        cli_error("run", "%s: feed it with -i NAME=FILE or --inputs DIR, or use --random",
                  err.msg);
        return false;
    }
    return true;
}

static double now_ms(void)
{
    return cg_clock_seconds(CLOCK_MONOTONIC) * 1e3;
}

/* The process's CPU time (every thread), in ms. */
static double cpu_ms_now(void)
{
    return cg_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) * 1e3;
}

/* --cold: a buffer of twice the last-level cache, written once (so that its
 * pages are its own, not the shared zero page) and read line by line before
 * each warm run: what the run reads then comes from memory. */
typedef struct cache_evictor {
    unsigned char *buf;
    size_t bytes;
} cache_evictor;

#define EVICT_DEFAULT ((size_t)64 << 20)
#define EVICT_MIN ((size_t)8 << 20)
#define EVICT_MAX ((size_t)512 << 20)
#define EVICT_LINE 64

static bool cache_evictor_init(cache_evictor *e)
{
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0)
        llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    size_t bytes = llc > 0 && (unsigned long)llc <= EVICT_MAX / 2 ? 2 * (size_t)llc : EVICT_DEFAULT;
    e->bytes = bytes < EVICT_MIN ? EVICT_MIN : bytes;
    if (!(e->buf = malloc(e->bytes)))
        return false;
    memset(e->buf, 1, e->bytes);
    return true;
}

static void cache_evict(const cache_evictor *e)
{
    volatile unsigned char sink = 0;
    unsigned acc = 0;
    for (size_t i = 0; i < e->bytes; i += EVICT_LINE)
        acc += e->buf[i];
    sink = (unsigned char)acc;
    (void)sink;
}

int cmd_run(int argc, char **argv)
{
    int rc = CG_EXIT_ERROR;
    run_args a;
    cg_error err;
    cg_model *model = NULL;
    cg_sample_runner *runner = NULL;
    cg_sample s;
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    char **paths = NULL;
    double *warm = NULL;
    cache_evictor evict = {NULL, 0};
    memset(&a, 0, sizeof a);
    memset(&s, 0, sizeof s);
    cli_inputs_init(&a.in);
    cg_error_clear(&err);
    if (!(a.feeds = calloc((size_t)argc + 1, sizeof *a.feeds))) {
        cli_error("run", "out of memory");
        goto done;
    }
    if ((rc = parse_args(argc, argv, &a)) != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    rc = CG_EXIT_ERROR;
    double t_load = now_ms();
    if (!(model = cli_model_for("run", a.model_path, &a.in, &a.targets)))
        goto done;
    double load_ms = now_ms() - t_load;
    if (!build_sample(&a, model, &s))
        goto done;
    double t_init = now_ms();
    cg_sample_runner_options ro;
    memset(&ro, 0, sizeof ro);
    ro.runner = &a.runner.runner;
    ro.model_path = a.model_path;
    ro.targets = a.targets.list;
    ro.target_count = a.targets.count;
    ro.dims = a.in.dims;
    ro.dim_count = a.in.dim_count;
    ro.random = &a.in.random;
    ro.accumulate = a.targets.accumulate;
    ro.float64 = a.fp64;
    ro.threads = a.threads;
    ro.simd = a.simd;
    ro.max_alloc_bytes = a.max_alloc;
    cg_sample_runner_kind kind = cg_sample_runner_choose(&ro);
    /* LiteRT runs its batch at init (its time is the runner block's) */
    if (cg_sample_runner_init(model, &ro, &s, &runner, &err) != CG_OK ||
        (kind == CG_SAMPLE_RUNNER_LITERT &&
         cg_sample_runner_run(runner, &s, &outs, &out_count, &err) != CG_OK)) {
        /* exit 1 where the model (or LiteRT) failed, 2 where the call did */
        cli_error("run", "%s%s", kind == CG_SAMPLE_RUNNER_TARGETS ? "target path: " : "",
                  err.msg);
        if (kind == CG_SAMPLE_RUNNER_LITERT)
            rc = err.status == CG_USAGE ? CG_EXIT_ERROR : CG_EXIT_FAIL;
        else if (kind == CG_SAMPLE_RUNNER_REFERENCE)
            rc = err.status == CG_UNSUPPORTED || err.status == CG_RUNTIME ? CG_EXIT_FAIL
                                                                          : CG_EXIT_ERROR;
        goto done;
    }
    double init_ms = now_ms() - t_init;
    bool planned_at_setup = cg_sample_runner_planned(runner);
    /* the first run builds the memory plan; with --repeat, the warm runs
     * after it are timed apart (wall and process CPU time) and summarized
     * by their median */
    cg_status st = CG_OK;
    double first_ms = 0, ms = 0, cpu_ms = 0;
    for (uint64_t r = 0; r <= a.repeat && st == CG_OK && kind != CG_SAMPLE_RUNNER_LITERT; r++) {
        if (r == 1 && (!(warm = malloc(2 * a.repeat * sizeof *warm)) ||
                       (a.cold && !cache_evictor_init(&evict)))) {
            cli_error("run", "out of memory");
            goto done;
        }
        if (r >= 1 && a.cold)
            cache_evict(&evict);
        cg_runtime_free_outputs(outs, out_count);
        outs = NULL;
        out_count = 0;
        double t0 = now_ms(), c0 = cpu_ms_now();
        st = cg_sample_runner_run(runner, &s, &outs, &out_count, &err);
        if (r == 0) {
            first_ms = ms = now_ms() - t0;
        } else {
            warm[r - 1] = now_ms() - t0;
            warm[a.repeat + r - 1] = cpu_ms_now() - c0;
        }
    }
    if (st != CG_OK) {
        cli_error("run", "%s", err.msg);
        rc = st == CG_USAGE ? CG_EXIT_ERROR : CG_EXIT_FAIL;
        goto done;
    }
    /* outputs whose shape contradicts the declared one (as ONNX Runtime warns) */
    for (const char *w = cg_sample_runner_warnings(runner), *nl; w && *w; w = nl + 1) {
        nl = strchr(w, '\n');
        cli_warn("run", "%.*s", (int)(nl - w), w);
    }
    if (a.repeat) {
        ms = cg_profile_median(warm, a.repeat);
        cpu_ms = cg_profile_median(warm + a.repeat, a.repeat);
    }
    if (a.out_dir && cg_samples_write_outputs(model, a.out_dir, outs, out_count, &paths, &err) !=
                         CG_OK) {
        cli_error("run", "-o %s: %s", a.out_dir, err.msg);
        goto done;
    }
    char residency[1024];
    const cg_runner_report *rr = cg_sample_runner_report(runner);
    if (rr) /* the batch's wall time, LiteRT's start-up included (the runner block says so) */
        first_ms = ms = rr->seconds * 1e3;
    cg_run_view view = {outs, out_count, paths, NULL, NULL, 0, false, first_ms, ms, warm,
                        (size_t)a.repeat, load_ms, init_ms, cpu_ms, a.threads, a.cold,
                        planned_at_setup};
    cg_run_view_set_path(&view, cg_sample_runner_path(runner), a.targets.label, residency,
                         sizeof residency);
    rc = CG_EXIT_OK;
    if (cli_json_on()) {
        json_t *result = cg_report_run_json(&view);
        if (rr && result)
            json_object_set_new(result, "runner", cg_report_runner_json(rr));
        rc = cli_json_emit(rc, result);
    } else {
        cg_report_run_text(stdout, &view);
        cg_report_runner_text(stdout, rr, "");
    }
done:
    free(warm);
    free(evict.buf);
    cg_samples_stems_free(paths, paths ? out_count : 0);
    cg_runtime_free_outputs(outs, out_count);
    cg_sample_runner_free(runner);
    cli_against_free(&a.runner);
    cg_sample_clear(&s);
    cg_model_free(model);
    cli_targets_free(&a.targets);
    cli_inputs_free(&a.in);
    free(a.feeds);
    return rc;
}
