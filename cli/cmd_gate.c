/*
 * convgate gate: the three gates in order (converts, runs where intended,
 * matches), stopping at the first that fails, then a verdict block and
 * optionally a JSON report for CI (src/verify/gate.c does the work,
 * src/report/gate.c renders it).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/against.h"
#include "convgate/gate.h"
#include "convgate/golden.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "core/path.h"
#include "report/json.h"
#include "report/report.h"
#include "core/text.h"

#define GATE_MAX_RANDOM 10000

static void gate_usage(FILE *f)
{
    fputs("Usage: convgate gate MODEL --target T[,T2...] [--golden DIR | --inputs DIR |\n"
          "                     --random N] [--seed S] [--range [NAME=]LO,HI]...\n"
          "                     [--require-full | --min-coverage F] [--dim SYM=VAL]...\n"
          "                     [--accept-default-dims] [--atol X --rtol Y]\n"
          "                     [--accumulate fp16|fp32] [--profiles DIR] [--json FILE|-]\n"
          "                     [--html FILE] [--model-explorer DIR] [--quiet]\n"
          "                     [--threads N] [--schedule auto|overlap|phased] [--timings]\n"
          "                     [--source SOURCE [--map RULE]...] [--runner R]\n"
          "\n"
          "Runs the three gates in order and stops at the first that fails:\n"
          "  1 converts              the checker passes (convgate check)\n"
          "  2 runs where intended   placement on the targets (convgate assign): residency,\n"
          "                          partitions, boundaries, share of reference time on the\n"
          "                          targets; passes when the targets take the majority of\n"
          "                          the reference time and the mixed latency estimate\n"
          "                          (targets + CPU remainder + boundary copies) beats the\n"
          "                          CPU alone; fails when a target without CPU fallback\n"
          "                          refuses a node, and under --require-full when anything\n"
          "                          falls back to the CPU (or forms a second partition).\n"
          "                          The model is placed at the shapes of, and typed by a\n"
          "                          reference run on, the first sample; where the model\n"
          "                          fails on it the residency is unknown and gate 2 fails\n"
          "  --accept-default-dims  input dims the model gives no size for (a sequence\n"
          "                    length, an unnamed dim) take 1; without it the gate refuses\n"
          "                    to guess and names the dim (a leading dim named as a batch\n"
          "                    takes 1 anyway). The sizes used are stated under DIMS\n"
          "  --min-coverage F  gate 2's bar: the targets take at least F (in [0, 1]) of the\n"
          "                    reference time instead of the majority; 0: no bar at all\n"
          "                    (neither coverage nor latency judged: to reach gate 3)\n"
          "  3 matches               the target path's outputs against the reference runtime\n"
          "                          on every sample; on a failure, bisection names the first\n"
          "                          divergent tensor and triages it (convgate bisect)\n"
          "\n"
          "Samples:\n"
          "  --inputs DIR     an input folder (see below)\n"
          "  --golden DIR     a golden set (convgate dump-ref): its hashes are checked, it\n"
          "                   must cover every output, and the target path is compared to\n"
          "                   its stored outputs\n"
          "  --random N       N samples of random inputs (default: 3); gate 2's reference\n"
          "                   run feeds the same values as sample 0\n"
          CLI_HELP_INPUT_OPTIONS
          "\n"
          "Judgement (gate 3), as compare's: each output against the model's noise floor\n"
          "of the target's precision, measured on the same samples against the float64\n"
          "reference (docs/noise-floor.md): matches (fp32 noise), matches at fp16\n"
          "precision, precision breakdown or wrong result, with the ratio to the floor.\n"
          "  --atol X --rtol Y   a fixed tolerance instead (|target - ref| <= atol +\n"
          "                      rtol*|ref|), for every output; it overrides the floor\n"
          "  --tol FILE          per-output tolerances (compare --help); outputs it does\n"
          "                      not name keep the noise-floor verdict\n"
          "  --nan-equal         NaN in both counts as equal (with a tolerance)\n"
          "  --task classify|segment|detect[:BOXES,SCORES[,LABELS]]\n"
          "                      task metrics beside the verdict; detect matches the\n"
          "                      boxes by IoU and class (compare --help), and the\n"
          "                      detection outputs are judged as sets\n"
          "  --threshold T       --task segment's mask threshold (default 0.5)\n"
          "  --accumulate fp16|fp32  how fp16 targets accumulate reductions and dot\n"
          "                      products (default: as the profile says; litert-gpu: fp32,\n"
          "                      measured; fp16 stands for a GPU computing in f16)\n"
          "  --threads N         threads of the reference kernels and of an executing\n"
          "                      target's runtime (xnnpack), each, the caller's included.\n"
          "                      Default: 1 each while gate 3's references and the target\n"
          "                      path run side by side; once the target path is done, the\n"
          "                      references take every CPU (the results are the same)\n"
          "  --schedule auto|overlap|phased  how gate 3 runs its samples. overlap: the\n"
          "                      target path beside the references (quicker on two cores;\n"
          "                      every runtime and its copy of the weights alive together).\n"
          "                      phased: the float32 reference on every sample, then the\n"
          "                      target path, then the float64 reference, one runtime\n"
          "                      alive at a time (peak memory about one reference\n"
          "                      run's). auto (default): phased from 32 MiB of weights.\n"
          "                      The report is the same either way\n"
          "\n"
          "Converted models and the real LiteRT:\n"
          "  --source SOURCE     MODEL is a conversion of SOURCE (ONNX or .tflite): gate 3\n"
          "                      compares MODEL on the target path with SOURCE on the\n"
          "                      reference runtime, inputs and outputs paired as `compare\n"
          "                      --against` pairs them (--map RULE as there)\n"
          CLI_HELP_RUNNER
          "                      (gate 3's target side; gate 2 stays convgate's prediction,\n"
          "                      and the measured residency is printed beside it)\n"
          "  --json FILE|-       also write the JSON report (docs/json.md) to FILE, checked\n"
          "                      writable (its folders made) before anything runs (- :\n"
          "                      stdout, text then goes to stderr)\n"
          CLI_HELP_VIEWS
          "  --timings            where the time went, per phase (wall and CPU seconds),\n"
          "                       on stderr\n"
          "  --quiet              no progress line on stderr (it is drawn only on a\n"
          "                       terminal; NO_COLOR turns its colour off)\n"
          "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
          "\n"
          "Exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

/* --source: each sample's expected outputs are SOURCE's on the reference
 * runtime, brought into MODEL's layout (gate 3 compares against them). */
static bool source_outputs(cli_against *ag, cg_model *model, cg_sample_set *samples,
                           cg_against **side, char *producer, size_t cap)
{
    cg_against_options o;
    cg_error err;
    cg_error_clear(&err);
    if (!cli_against_load("gate", ag, model, false))
        return false;
    memset(&o, 0, sizeof o);
    o.model = model;
    o.other = ag->other;
    o.map = &ag->map;
    o.other_path = ag->other_path;
    cg_against_describe(&o, producer, cap);
    cg_status st = cg_against_init(&o, side, &err);
    if (st == CG_OK)
        st = cg_against_expect(*side, samples, &err);
    if (st != CG_OK)
        cli_error("gate", "--source %s: %s", ag->other_path, err.msg);
    return st == CG_OK;
}

/* --runner: every sample in the real LiteRT, the outputs written for gate
 * 3 into a private folder (*dir). */
static bool litert_outputs(cli_against *ag, const char *model_path, cg_model *model,
                           cg_sample_set *samples, cg_against **side, char **dir,
                           char *measured, size_t cap)
{
    cg_against_options o;
    cg_sample_source *src = NULL;
    cg_error err;
    cg_error_clear(&err);
    memset(&o, 0, sizeof o);
    o.model = o.other = model;
    o.runner = &ag->runner;
    o.other_path = model_path;
    cg_against_describe(&o, measured, cap);
    cg_status st = cg_against_init(&o, side, &err);
    if (st == CG_OK && (st = cg_path_make_temp_dir("convgate-gate", dir, &err)) == CG_OK &&
        (st = cg_sample_source_open_set(model, samples, &src, &err)) == CG_OK)
        st = cg_against_write(*side, src, *dir, &err);
    cg_sample_source_free(src);
    if (st != CG_OK)
        cli_error("gate", "--runner %s: %s", cg_runner_kind_name(ag->runner.kind), err.msg);
    return st == CG_OK;
}

int cmd_gate(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              CLI_OPTS_TOLERANCE,
                                              CLI_OPTS_TOLERANCE_FILE,
                                              {"task", required_argument, NULL, 'k'},
                                              {"threshold", required_argument, NULL, 't'},
                                              {"golden", required_argument, NULL, 'g'},
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"random", required_argument, NULL, 'r'},
                                              {"require-full", no_argument, NULL, 'F'},
                                              {"min-coverage", required_argument, NULL, 'C'},
                                              {"accept-default-dims", no_argument, NULL, 'A'},
                                              CLI_OPTS_ACCUMULATE,
                                              {"json", required_argument, NULL, 'j'},
                                              CLI_OPTS_VIEWS,
                                              {"quiet", no_argument, NULL, 0},
                                              {"source", required_argument, NULL,
                                               CLI_OPT_AGAINST},
                                              {"map", required_argument, NULL, CLI_OPT_MAP},
                                              CLI_OPTS_RUNNER,
                                              {"threads", required_argument, NULL, 'T'},
                                              {"timings", no_argument, NULL, 'W'},
                                              {"schedule", required_argument, NULL, 'S'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    const char *golden = NULL, *inputs = NULL;
    uint64_t random_n = 0;
    bool json_stdout = false, have_threshold = false, timings = false;
    cg_tolerance_args tol = {0};
    cli_inputs in;
    cli_targets tg;
    cli_views views = {0};
    cg_gate_options opt;
    cg_gate_report rep;
    cg_sample_set samples = {0};
    cg_model *model = NULL;
    cli_against ag;
    cg_against *src_side = NULL, *litert = NULL;
    char desc[4200], producer[1024] = "", measured[1024] = "", *outdir = NULL;
    int rc = CG_EXIT_ERROR, c;
    cg_error err;
    cg_error_clear(&err);
    memset(&opt, 0, sizeof opt);
    opt.threshold = 0.5;
    opt.threads_after = cli_threads_after_default();
    memset(&rep, 0, sizeof rep);
    memset(&tg, 0, sizeof tg);
    cli_inputs_init(&in);
    cli_against_init(&ag);

    bool started = false;
    while ((c = cli_next_option("gate", argc, argv, "h", longopts, &started,
                                &in, &tg, &tol)) != -1) {
        switch (c) {
        case 'g': golden = optarg; break;
        case 'i': inputs = optarg; break;
        case 'r':
            if (!cli_parse_count(optarg, GATE_MAX_RANDOM, &random_n) || random_n == 0) {
                cli_error("gate", "--random expects a count in [1, %d], got '%s'",
                          GATE_MAX_RANDOM, optarg);
                goto done;
            }
            break;
        case 'F': opt.require_full = true; break;
        case 'W': timings = true; break;
        case 'S':
            if (strcmp(optarg, "auto") == 0)
                opt.schedule = CG_GATE_SCHEDULE_AUTO;
            else if (strcmp(optarg, "overlap") == 0)
                opt.schedule = CG_GATE_SCHEDULE_OVERLAP;
            else if (strcmp(optarg, "phased") == 0)
                opt.schedule = CG_GATE_SCHEDULE_PHASED;
            else {
                cli_error("gate", "--schedule expects auto, overlap or phased, got '%s'", optarg);
                goto done;
            }
            break;
        case 'A': opt.accept_default_dims = true; break;
        case 'C':
            if (!cli_parse_real("gate", "min-coverage", optarg, &opt.min_coverage) ||
                !(opt.min_coverage >= 0 && opt.min_coverage <= 1)) {
                cli_error("gate", "--min-coverage expects a fraction of the reference time in "
                          "[0, 1], got '%s'", optarg);
                goto done;
            }
            opt.have_min_coverage = true;
            break;
        case 'k':
            if (!cli_parse_task("gate", optarg, &opt.task, &opt.detect))
                goto done;
            break;
        case 't':
            if (!cli_parse_real("gate", "threshold", optarg, &opt.threshold))
                goto done;
            have_threshold = true;
            break;
        case 'T':
            if (!cli_parse_threads("gate", optarg, &opt.threads))
                goto done;
            opt.threads_after = 0; /* N each, throughout */
            break;
        case 'j':
            /* checked now: an unwritable report path must not cost a whole gate */
            if (!cli_json_to("gate", optarg))
                goto done;
            json_stdout = strcmp(optarg, "-") == 0;
            break;
        case CLI_OPT_HTML:
        case CLI_OPT_MODEL_EXPLORER:
            if (cli_views_option("gate", &views, c, optarg) < 0)
                goto done;
            break;
        case CLI_OPT_AGAINST:
        case CLI_OPT_MAP:
        case CLI_OPT_RUNNER:
        case CLI_OPT_PRECISION:
            if (cli_against_option("gate", &ag, c == CLI_OPT_AGAINST ? "source"
                                                : c == CLI_OPT_MAP   ? "map"
                                                : c == CLI_OPT_RUNNER ? "runner" : "precision",
                                   optarg) < 0)
                goto done;
            break;
        case 'h': gate_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
    }
    const char *model_path = cli_model_arg("gate", argc, argv, gate_usage);
    if (!model_path)
        goto done;
    if (!cli_targets_required("gate", &tg))
        goto done;
    if (!cli_against_check("gate", &ag, "source"))
        goto done;
    if (golden && ag.other_path) {
        cli_error("gate", "--golden brings the reference outputs; --source makes them: give "
                  "one");
        goto done;
    }
    if (tol.file && (tol.have_atol || tol.have_rtol)) {
        cli_error("gate", "give --atol/--rtol or --tol FILE, not both");
        goto done;
    }
    if (opt.require_full && opt.have_min_coverage) {
        cli_error("gate", "--require-full already asks for everything on the target: give it "
                  "or --min-coverage, not both");
        goto done;
    }
    if (have_threshold && opt.task != CG_TASK_SEGMENT) {
        cli_error("gate", "--threshold applies to --task segment");
        goto done;
    }
    opt.tol = tol;
    if (!(model = cli_model_for("gate", model_path, &in, &tg)))
        goto done;

    if (!cli_samples_load("gate", model, model_path, golden, inputs, random_n, 3, &in, &samples,
                          desc, sizeof desc))
        goto done;
    if (ag.other_path && !source_outputs(&ag, model, &samples, &src_side, producer,
                                         sizeof producer))
        goto done;
    if (ag.runner.kind && !litert_outputs(&ag, model_path, model, &samples, &litert, &outdir,
                                          measured, sizeof measured))
        goto done;
    opt.outputs_from = outdir;
    opt.outputs_reduced = cg_runner_reduced(&ag.runner);
    opt.accumulate = tg.accumulate;
    opt.targets = tg.list;
    opt.target_count = tg.count;
    opt.dims = in.dims;
    opt.dim_count = in.dim_count;
    opt.random = &in.random;
    opt.samples = &samples;
    opt.samples_desc = desc;
    opt.progress = cli_progress();
    cg_status gst = cg_gate_run(model, model_path, &opt, &rep, &err);
    cli_progress_clear();
    if (gst != CG_OK) {
        cli_error("gate", "%s", err.msg);
        goto done;
    }
    FILE *text = json_stdout ? stderr : stdout;
    cg_gate_report_text(text, &rep);
    if (timings)
        cg_gate_timings_text(stderr, &rep.timings);
    cg_against_view sv = {model, ag.other, ag.other_path, ag.have_map ? &ag.map : NULL, false,
                          producer, NULL};
    cg_gate_sides sides = {model_path, src_side ? &sv : NULL,
                           litert ? cg_against_runner_report(litert) : NULL, measured};
    cg_report_gate_sides_text(text, &rep, &sides);
    rc = rep.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
    if (cli_json_on() || cli_views_wanted(&views)) {
        json_t *root = cg_gate_report_json(&rep);
        cg_report_gate_sides_json(root, &rep, &sides);
        if (cli_views_wanted(&views)) {
            /* the file's nodes; the placement and the times index the
             * graph the targets partition, mapped back by the view (a
             * .tflite: its operators, drawn as placed) */
            cg_graph_view gv = {rep.tflite_ops ? rep.tflite_ops : model, rep.assignment,
                                rep.node_ms, rep.bisected ? &rep.bisect : NULL, NULL, 0,
                                tg.list, tg.count, rep.tflite_ops ? NULL : rep.lowered,
                                &rep.judged};
            char title[4300];
            snprintf(title, sizeof title, "convgate gate %s --target %s", model_path, tg.label);
            rc = cli_views_write("gate", &views, rc, root, title, &gv);
        }
        if (cli_json_on())
            rc = cli_json_emit(rc, root);
        else
            json_decref(root);
    }
done:
    cli_views_finish("gate", &views, rc);
    cg_gate_report_free(&rep);
    cg_sample_set_free(&samples);
    cg_against_free(src_side);
    cg_against_free(litert);
    if (outdir)
        cg_path_remove_tree(outdir);
    free(outdir);
    cli_against_free(&ag);
    cli_targets_free(&tg);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
