/*
 * convgate compare: the reference runtime against a target path (or
 * outputs made elsewhere, another model, the real LiteRT) on the same
 * samples, every output compared per sample and over samples
 * (src/verify/parity.c computes, src/verify/against.c produces the other
 * side's outputs, src/report/parity.c renders).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/against.h"
#include "convgate/model.h"
#include "convgate/parity.h"
#include "convgate/tflite.h"
#include "core/path.h"
#include "report/report.h"

#define CMP_MAX_SETS 100000

static void compare_usage(FILE *f)
{
    fputs(
        "Usage: convgate compare MODEL (--target T[,T2...] | --outputs-from DIR |\n"
        "                        --against CONVERTED | --runner R) [OPTIONS]\n"
        "\n"
        "Runs MODEL on the reference CPU runtime and on the target path (the model\n"
        "placed on T, T2... and run here: executing targets for real, fp16 profiles\n"
        "emulated) on the same inputs, and judges every output over all samples.\n"
        "\n"
        "The verdict (docs/noise-floor.md): the same samples also run on the float64\n"
        "reference, which gives each output's noise floor: |fp32 reference - fp64| and,\n"
        "for an fp16 target, |fp16 storage - fp64|. The target's error against fp64 is\n"
        "judged as a multiple of the floor of its precision: matches (fp32 noise),\n"
        "matches at fp16 precision, precision breakdown (inf/NaN, or an error far above\n"
        "the floor that goes away with fp32 accumulation or in fp32: an fp16 target is\n"
        "rerun both ways) or wrong result (far above the floor in fp32 too). Outputs\n"
        "downstream of a decision (comparison, ArgMax, TopK, quantizer...) are judged\n"
        "by how many decisions flipped and by what margin.\n"
        "\n"
        "Beside the verdict, the absolute figures against the fp32 reference: max/mean\n"
        "abs error, max relative error (numpy's: over elements whose ref is not 0),\n"
        "RMSE, NMSE, cosine, Pearson, max ULP distance, NaN/Inf counts on both sides, a\n"
        "|diff| histogram by decade and the worst element.\n"
        "\n"
        "Inputs (one of):\n"
        "  --inputs DIR         an input folder (see below), one sample per set\n"
        "  --random N           N samples of random inputs (default N = 4)\n"
        CLI_HELP_INPUT_OPTIONS
        "\n"
        "Target outputs:\n"
        "  --outputs-from DIR   do not run the target path: read the target's outputs\n"
        "                       from DIR in the layout of the inputs (DIR/SET/NAME.npy,\n"
        "                       DIR/SET/output_K.pb or DIR/SET.npz per set; random\n"
        "                       samples are sets named random-0, random-1, ...;\n"
        "                       DIR/NAME_N.npy or DIR/NAME.npy for flat input folders,\n"
        "                       as `run -o DIR` writes them). --target is then optional:\n"
        "                       it says what precision the outputs were computed in,\n"
        "                       and for an fp16 target its emulation tells a precision\n"
        "                       breakdown from a wrong result\n"
        "  --accumulate fp16|fp32  accumulation of fp16 targets' reductions (default:\n"
        "                       the target profile's)\n"
        CLI_HELP_RUNNER
        "\n"
        "Source against converted:\n"
        "  --against CONVERTED  compare MODEL (the source, on the reference runtime)\n"
        "                       with CONVERTED (ONNX or .tflite) on the same inputs: on\n"
        "                       the reference runtime, on the target path of --target,\n"
        "                       or in the real LiteRT with --runner. Inputs and outputs\n"
        "                       pair by name (a .tflite's signature names count), else by\n"
        "                       position; the NCHW <-> NHWC layout change is found from\n"
        "                       the shapes (ambiguous shapes need --map), values convert\n"
        "                       between numeric types; outputs are compared in MODEL's\n"
        "                       layout\n"
        "  --map SRC=CONV[:LAYOUT]  pair input/output SRC of MODEL with CONV of\n"
        "                       CONVERTED; LAYOUT nhwc (channels-first to last), nchw,\n"
        "                       none, or a permutation (CONV = transpose(SRC, 0,2,3,1));\n"
        "                       SRC= :LAYOUT keeps the partner and sets the layout\n"
        "\n"
        "  --threads N          threads of the reference kernels and of an executing\n"
        "                       target's runtime (xnnpack), each, the caller's included.\n"
        "                       Default: 1 each while the references and the target path\n"
        "                       run side by side; once the target path is done, the\n"
        "                       references take every CPU (the results are the same)\n"
        "\n"
        "Fixed tolerances (they override the noise-floor verdict for their outputs, and\n"
        "the report says so): an element passes when |target - ref| <= atol +\n"
        "rtol*|ref|; NaN against a number always fails, NaN against NaN only with\n"
        "--nan-equal.\n"
        "  --atol X --rtol Y    for every output (either may be given alone; the other\n"
        "                       keeps ORT OpTester's value, 1e-5 / 1e-4, or 2.5e-3 /\n"
        "                       1e-3 in fp16: shared/reference/reliability.md section 3)\n"
        "  --tol FILE           JSON {\"outputs\": {\"NAME\": {\"atol\": X, \"rtol\": Y,\n"
        "                       \"nan_equal\": B, \"justification\": \"...\"}},\n"
        "                       \"default\": {...}}; each justification is printed; an\n"
        "                       output the model does not have is an error\n"
        "  --nan-equal          NaN in both ref and target counts as equal\n"
        "\n"
        "Tasks:\n"
        "  --task classify      reported beside: per output, class axis = last axis:\n"
        "                       top-1 agreement and top-5 overlap, and where the top-1\n"
        "                       differs, the reference's gap between the two classes\n"
        "  --task segment       reported beside: a map with a class axis (NCHW, C >= 2)\n"
        "                       is a multi-class mask, argmax over C: pixel agreement,\n"
        "                       mean IoU over classes, and where a pixel's class differs\n"
        "                       the reference's gap; any other map: mask = value >\n"
        "                       --threshold T (default 0.5): mask IoU and foreground\n"
        "                       Both, with the floors: the same\n"
        "                       metrics against float64 for the target and for a\n"
        "                       correct run (fp32 reference, fp16 storage), so the\n"
        "                       rows or pixels it changes stand beside those a correct\n"
        "                       target changes; a change whose reference gap is within\n"
        "                       the noise limit of the output is noise\n"
        "  --task detect[:BOXES,SCORES[,LABELS]]\n"
        "                       the detection outputs (found by shape: float [..., N, 4]\n"
        "                       boxes x1,y1,x2,y2, N float scores, N integer labels; or\n"
        "                       named) are sets: boxes are matched by IoU >= 0.5 and\n"
        "                       class, in score order, on every run; matched boxes and\n"
        "                       scores are judged against their floors, and a box one\n"
        "                       side has and the other has not is a flipped decision,\n"
        "                       noise when its score is within the floor of the other\n"
        "                       side's lowest kept score (the cut). This verdict replaces\n"
        "                       the elementwise one of those outputs\n"
        "\n"
        "  --profiles DIR       capability profiles (default: $CONVGATE_PROFILES, else\n"
        "                       the source tree's profiles/)\n"
        "  --json               the report as JSON (docs/json.md)\n"
        CLI_HELP_VIEWS
        "  --quiet              no progress line on stderr\n"
        "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
        "\n"
        "A reduced-precision path whose float output is bit-identical to the fp32\n"
        "reference gets a warning: it probably did not run there (silent fallback).\n"
        "\n"
        "Exit status: 0 every output matches (or is within its tolerance), 1 some\n"
        "output does not, 2 usage or input error (or a run failed).\n",
        f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct cmp_args {
    const char *model_path, *inputs_dir;
    uint64_t random_n;
    bool have_random, have_threshold;
    cg_parity_options opt;
    cli_inputs in;
    cli_targets targets;
    cli_views views;
    cli_against against;
} cmp_args;

static int parse_args(int argc, char **argv, cmp_args *a)
{
    static const struct option longopts[] = {
        CLI_OPTS_TARGETS, CLI_OPTS_INPUTS, CLI_OPTS_TOLERANCE, CLI_OPTS_TOLERANCE_FILE,
        {"inputs", required_argument, NULL, 'i'},       {"random", required_argument, NULL, 'r'},
        {"task", required_argument, NULL, 'k'},         {"threshold", required_argument, NULL, 't'},
        {"outputs-from", required_argument, NULL, 'o'}, CLI_OPTS_ACCUMULATE,
        {"threads", required_argument, NULL, 'T'},      CLI_OPTS_VIEWS,
        {"against", required_argument, NULL, CLI_OPT_AGAINST},
        {"map", required_argument, NULL, CLI_OPT_MAP}, CLI_OPTS_RUNNER, CLI_OPTS_END};
    cg_parity_options *o = &a->opt;
    int c;
    o->threshold = 0.5;
    o->threads_after = cli_threads_after_default();
    bool started = false;
    while ((c = cli_next_option("compare", argc, argv, "h", longopts, &started,
                                &a->in, &a->targets, &o->tol)) != -1) {
        switch (c) {
        case 'i': a->inputs_dir = optarg; break;
        case 'o': o->outputs_from = optarg; break;
        case 'r':
            if (!cli_parse_count(optarg, CMP_MAX_SETS, &a->random_n) || a->random_n == 0) {
                cli_error("compare", "--random expects a count in 1..%d, got '%s'",
                          CMP_MAX_SETS, optarg);
                return CG_EXIT_ERROR;
            }
            a->have_random = true;
            break;
        case 't':
            if (!cli_parse_real("compare", "threshold", optarg, &o->threshold))
                return CG_EXIT_ERROR;
            a->have_threshold = true;
            break;
        case 'k':
            if (!cli_parse_task("compare", optarg, &o->task, &o->detect))
                return CG_EXIT_ERROR;
            break;
        case CLI_OPT_HTML:
        case CLI_OPT_MODEL_EXPLORER:
            if (cli_views_option("compare", &a->views, c, optarg) < 0)
                return CG_EXIT_ERROR;
            break;
        case CLI_OPT_AGAINST:
        case CLI_OPT_MAP:
        case CLI_OPT_RUNNER:
        case CLI_OPT_PRECISION: {
            const char *name = c == CLI_OPT_AGAINST ? "against" : c == CLI_OPT_MAP ? "map"
                               : c == CLI_OPT_RUNNER ? "runner" : "precision";
            if (cli_against_option("compare", &a->against, name, optarg) < 0)
                return CG_EXIT_ERROR;
            break;
        }
        case 'T':
            if (!cli_parse_threads("compare", optarg, &o->threads))
                return CG_EXIT_ERROR;
            o->threads_after = 0; /* N each, throughout */
            break;
        case 'h': compare_usage(stdout); return -1;
        default: return CG_EXIT_ERROR;
        }
    }
    if (!(a->model_path = cli_model_arg("compare", argc, argv, compare_usage)))
        return CG_EXIT_ERROR;
    o->accumulate = a->targets.accumulate;
    bool other = a->against.other_path || a->against.runner.kind != CG_RUNNER_NONE;
    if (!a->targets.arg_count && !o->outputs_from && !other) {
        cli_error("compare", "give --target T (`convgate targets` lists them), "
                  "--outputs-from DIR, --against CONVERTED or --runner R");
        return CG_EXIT_ERROR;
    }
    if (other && o->outputs_from) {
        cli_error("compare", "--outputs-from reads the other side's outputs; --against and "
                  "--runner make them: give one");
        return CG_EXIT_ERROR;
    }
    if (!cli_against_check("compare", &a->against, "against"))
        return CG_EXIT_ERROR;
    if (a->inputs_dir && a->have_random) {
        cli_error("compare", "give --inputs DIR or --random N, not both");
        return CG_EXIT_ERROR;
    }
    if (o->tol.file && (o->tol.have_atol || o->tol.have_rtol)) {
        cli_error("compare", "give --atol/--rtol or --tol FILE, not both");
        return CG_EXIT_ERROR;
    }
    if (a->have_threshold && o->task != CG_TASK_SEGMENT) {
        cli_error("compare", "--threshold applies to --task segment");
        return CG_EXIT_ERROR;
    }
    if (a->in.range_count && a->inputs_dir) {
        cli_error("compare", "--range applies to random inputs, not --inputs");
        return CG_EXIT_ERROR;
    }
    if (!a->inputs_dir && !a->have_random)
        a->random_n = 4;
    return CG_EXIT_OK;
}

int cmd_compare(int argc, char **argv)
{
    cmp_args a;
    cg_model *model = NULL;
    cg_sample_source *src = NULL;
    cg_parity_report rep;
    cg_error err;
    cg_against_options ao;
    cg_against *ag = NULL;
    cg_against_verdict *verdicts = NULL;
    size_t verdict_count = 0;
    char *tmp = NULL, producer[1024] = "";
    int rc;
    memset(&a, 0, sizeof a);
    memset(&ao, 0, sizeof ao);
    memset(&rep, 0, sizeof rep);
    cli_inputs_init(&a.in);
    cg_error_clear(&err);
    if ((rc = parse_args(argc, argv, &a)) != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    rc = CG_EXIT_ERROR;
    if (!(model = cli_model_for("compare", a.model_path, &a.in, &a.targets)))
        goto done;
    cg_status st = a.inputs_dir
                       ? cg_sample_source_open_dir(model, a.inputs_dir, 0, &src, &err)
                       : cg_sample_source_open_random(model, (size_t)a.random_n, &a.in.random,
                                                      a.in.dims, a.in.dim_count, 0, &src, &err);
    a.opt.targets = a.targets.list;
    a.opt.target_count = a.targets.count;
    a.opt.dims = a.in.dims;
    a.opt.dim_count = a.in.dim_count;
    a.opt.random = &a.in.random;
    a.opt.keep_path = cli_views_wanted(&a.views);
    a.opt.progress = cli_progress();
    if (st == CG_OK && (a.against.other_path || a.against.runner.kind)) {
        /* the other side's outputs, made first, then read back like --outputs-from */
        if (!cli_against_load("compare", &a.against, model, true))
            goto done;
        memset(&ao, 0, sizeof ao);
        ao.model = model;
        ao.other = a.against.other ? a.against.other : model;
        ao.map = a.against.have_map ? &a.against.map : NULL;
        ao.model_is_a = true;
        ao.runner = a.against.runner.kind ? &a.against.runner : NULL;
        ao.other_path = a.against.other_path ? a.against.other_path : a.model_path;
        ao.targets = ao.runner ? NULL : a.targets.list;
        ao.target_count = ao.runner ? 0 : a.targets.count;
        ao.random = &a.in.random;
        ao.accumulate = a.targets.accumulate;
        cg_against_describe(&ao, producer, sizeof producer);
        if ((st = cg_path_make_temp_dir("convgate-compare", &tmp, &err)) == CG_OK &&
            (st = cg_against_init(&ao, &ag, &err)) == CG_OK)
            st = cg_against_write(ag, src, tmp, &err);
        a.opt.outputs_from = tmp;
        a.opt.outputs_reduced = cg_runner_reduced(ao.runner);
    }
    if (st == CG_OK)
        st = cg_parity_run(model, &a.opt, src, &rep, &err);
    cli_progress_clear();
    if (st == CG_OK && ag)
        st = cg_against_judge(model, src, tmp, rep.reduced, &verdicts, &verdict_count, &err);
    if (st != CG_OK) {
        cli_error("compare", "%s", err.msg);
        goto done;
    }
    char samples[4200];
    if (a.inputs_dir)
        snprintf(samples, sizeof samples, "%zu from %s", rep.sample_count, a.inputs_dir);
    else
        snprintf(samples, sizeof samples, "%zu random (seed %" PRIu64 ")", rep.sample_count,
                 a.in.random.seed);
    cg_parity_view view = {a.model_path, a.targets.label, a.targets.list, a.targets.count,
                           tmp ? NULL : a.opt.outputs_from, samples, !a.inputs_dir,
                           a.in.random.seed, a.opt.task, a.opt.threshold,
                           tmp ? producer : NULL};
    cg_against_view av = {model, ag ? ao.other : NULL, ao.other_path,
                          a.against.have_map ? &a.against.map : NULL, true, producer,
                          ag ? cg_against_runner_report(ag) : NULL};
    rc = rep.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
    if (cli_views_wanted(&a.views)) {
        json_t *root = cg_report_parity_json(&rep, &view);
        cg_graph_view gv = {model, rep.path ? cg_target_path_assignment(rep.path) : NULL, NULL,
                            NULL, NULL, 0, a.targets.list, a.targets.count, NULL, &rep};
        char title[4300];
        snprintf(title, sizeof title, "convgate compare %s --target %s", a.model_path,
                 a.targets.label);
        rc = root ? cli_views_write("compare", &a.views, rc, root, title, &gv)
                  : (cli_error("compare", "out of memory"), CG_EXIT_ERROR);
        json_decref(root);
    }
    if (!cli_json_on()) {
        if (ag)
            cg_report_against_text(stdout, "against", &av);
        cg_report_parity_text(stdout, &rep, &view);
        cg_report_against_verdicts_text(stdout, verdicts, verdict_count,
                                        ag && ao.other->tflite &&
                                            cg_tflite_quantized(ao.other->tflite->source));
        goto done;
    }
    for (size_t k = 0; k < rep.output_count; k++)
        if (rep.outputs[k].fallback_suspect)
            cli_warn("compare", "output '%s' is bit-identical to the fp32 reference although "
                     "the path computes in reduced precision: it probably did not run on %s "
                     "(silent fallback?)", rep.outputs[k].name, a.targets.label);
    json_t *result = cg_report_parity_json(&rep, &view);
    if (ag && result) {
        json_t *aj = cg_report_against_json(&av);
        json_object_set_new(aj, "noise_verdicts",
                            cg_report_against_verdicts_json(verdicts, verdict_count));
        json_object_set_new(result, "against", aj);
    }
    rc = cli_json_emit(rc, result);
done:
    cli_views_finish("compare", &a.views, rc);
    cg_parity_report_free(&rep);
    cg_sample_source_free(src);
    cg_against_free(ag);
    free(verdicts);
    if (tmp)
        cg_path_remove_tree(tmp);
    free(tmp);
    cli_against_free(&a.against);
    cg_model_free(model);
    cli_targets_free(&a.targets);
    cli_inputs_free(&a.in);
    return rc;
}
