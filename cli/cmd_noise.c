/*
 * convgate noise: a model's noise floors on input sets (fp32 reference and
 * fp16 storage against the float64 reference), and, with --target or
 * --outputs-from, each side's error judged against them: ratio to the
 * floor and verdict (convgate/noise.h, docs/noise-floor.md; rendered by
 * src/report/noise.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/noise.h"
#include "convgate/samples.h"
#include "report/report.h"

#define NOISE_MAX_SETS 10000

static void noise_usage(FILE *f)
{
    fputs("Usage: convgate noise MODEL [--inputs DIR | --random N] [--seed S]\n"
          "                      [--range [NAME=]LO,HI]... [--dim SYM=VAL]...\n"
          "                      [--target T[,T2...]] [--outputs-from DIR [--precision P]]\n"
          "                      [--accumulate fp16|fp32] [--no-fp16] [--profiles DIR]\n"
          "                      [--json]\n"
          "\n"
          "Measures the model's noise floors per output against the float64 reference\n"
          "(every kernel in double): the fp32 noise floor |fp32 reference - fp64| and the\n"
          "fp16 storage floor |fp16 storage - fp64| (fp64 kernels, every stored value\n"
          "rounded to fp16): max |d|, relative to the output's scale (its largest\n"
          "|value|), p50 and p99. Outputs downstream of decisions (comparisons, ArgMax,\n"
          "TopK, quantizers, ...) are marked: they are judged by flips.\n"
          "\n"
          "  --target T[,T2]      run the target path on the same samples and judge it: its\n"
          "                       error as a multiple of its precision's floor, and the\n"
          "                       verdict; an fp16 path is rerun with fp32 accumulation\n"
          "                       and in fp32 to tell precision from a wrong kernel\n"
          "  --accumulate fp16|fp32  judge one device class of the fp16 target: fp16 sums\n"
          "                       (against the fp16-sums floor) or fp32 sums (default:\n"
          "                       both classes of a target that lists two, litert-gpu's\n"
          "                       F16 and F32_F16 devices; else as its profile says)\n"
          "  --outputs-from DIR   judge outputs another runtime produced on the same\n"
          "                       samples, read in the layout of the inputs\n"
          "  --precision P        what those outputs were computed in: fp32 (default) or\n"
          "                       fp16\n"
          "  --no-fp16            skip the fp16 storage floor\n"
          "  --inputs DIR         an input folder (see below)\n"
          "  --random N           N samples of random inputs (default 2)\n"
          CLI_HELP_INPUT_OPTIONS
          "  --json               the report as JSON (docs/json.md)\n"
          "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
          "\n"
          "Exit status: 0 every judged output matches, 1 one does not, 2 usage or input\n"
          "error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct noise_args {
    const char *model_path, *inputs_dir, *outputs_from;
    uint64_t random_n;
    bool fp16;
    cg_precision out_precision;
    cli_inputs in;
    cli_targets targets;
} noise_args;

static int parse_args(int argc, char **argv, noise_args *a)
{
    static const struct option longopts[] = {
        CLI_OPTS_TARGETS, CLI_OPTS_INPUTS,
        {"inputs", required_argument, NULL, 'i'},    {"random", required_argument, NULL, 'r'},
        {"outputs-from", required_argument, NULL, 'o'},
        {"precision", required_argument, NULL, 'P'}, {"no-fp16", no_argument, NULL, 'N'},
        CLI_OPTS_ACCUMULATE, CLI_OPTS_END};
    int c;
    bool started = false, precision_given = false;
    a->fp16 = true;
    while ((c = cli_next_option("noise", argc, argv, "h", longopts, &started, &a->in,
                                &a->targets, NULL)) != -1) {
        switch (c) {
        case 'i': a->inputs_dir = optarg; break;
        case 'o': a->outputs_from = optarg; break;
        case 'N': a->fp16 = false; break;
        case 'P':
            precision_given = true;
            if (strcmp(optarg, "fp16") == 0)
                a->out_precision = CG_PRECISION_FP16;
            else if (strcmp(optarg, "fp32") != 0) {
                cli_error("noise", "--precision expects fp32 or fp16, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            break;
        case 'r':
            if (!cli_parse_count(optarg, NOISE_MAX_SETS, &a->random_n) || a->random_n == 0) {
                cli_error("noise", "--random expects a count in 1..%d, got '%s'",
                          NOISE_MAX_SETS, optarg);
                return CG_EXIT_ERROR;
            }
            break;
        case 'h': noise_usage(stdout); return -1;
        default: return CG_EXIT_ERROR;
        }
    }
    if (!(a->model_path = cli_model_arg("noise", argc, argv, noise_usage)))
        return CG_EXIT_ERROR;
    if (a->inputs_dir && a->random_n) {
        cli_error("noise", "give --inputs or --random, not both");
        return CG_EXIT_ERROR;
    }
    if (precision_given && !a->outputs_from) {
        cli_error("noise", "--precision describes --outputs-from");
        return CG_EXIT_ERROR;
    }
    if (!a->fp16 && a->out_precision == CG_PRECISION_FP16) {
        cli_error("noise", "fp16 outputs are judged against the fp16 storage floor: drop "
                  "--no-fp16");
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* One sample through the floors and every judged side. */
static cg_status add_sample(const noise_args *a, const cg_model *model, cg_noise *noise,
                            cg_sample_source *src, size_t i, cg_noise_target *target,
                            cg_noise_tally *files, cg_error *err)
{
    cg_sample s;
    cg_noise_runs runs;
    size_t nout = model->graph->output_count;
    memset(&runs, 0, sizeof runs);
    cg_noise_decision_values dec;
    memset(&dec, 0, sizeof dec);
    cg_value **got = NULL;
    cg_status st = cg_sample_source_load(src, i, &s, err);
    if (st != CG_OK)
        return st;
    st = cg_noise_add_sample(noise, s.inputs, s.input_count, &runs, &dec, err);
    const cg_named_value *ref = runs.out[CG_RUN_FP64];
    size_t ref_count = runs.count[CG_RUN_FP64];
    if (st == CG_OK && target) {
        cg_dim_binding dims[CLI_MAX_DIMS];
        size_t nd = cg_sample_dims(model, a->in.dims, a->in.dim_count, &s, dims, CLI_MAX_DIMS);
        st = cg_noise_target_add_sample(target, s.inputs, s.input_count, dims, nd, ref,
                                        ref_count, &dec, i, NULL, err);
        if (st == CG_OK && !a->fp16 && cg_noise_target_precision(target) == CG_PRECISION_FP16)
            st = cg_error_set(err, CG_USAGE, "%s computes in fp16: it is judged against the "
                              "fp16 storage floor, drop --no-fp16", a->targets.label);
    }
    if (st == CG_OK && files) {
        cg_named_value *named = calloc(nout + 1, sizeof *named);
        got = calloc(nout + 1, sizeof *got);
        st = named && got ? cg_sample_source_read_outputs(src, a->outputs_from, i, got, err)
                          : cg_error_set(err, CG_NOMEM, "out of memory");
        for (size_t k = 0; st == CG_OK && k < nout; k++) {
            named[k].name = model->graph->outputs[k].name;
            named[k].value = got[k];
        }
        if (st == CG_OK)
            st = cg_noise_tally_add(noise, files, ref, ref_count, named, nout, NULL, NULL, NULL,
                                    i, err);
        free(named);
    }
    for (size_t k = 0; got && k < nout; k++)
        cg_value_free(got[k]);
    free(got);
    if (st != CG_OK)
        cg_error_prefix(err, "sample %s: ", s.label);
    cg_noise_runs_free(&runs);
    cg_noise_decision_values_free(&dec);
    cg_sample_clear(&s);
    return st;
}

int cmd_noise(int argc, char **argv)
{
    noise_args a;
    cg_model *model = NULL;
    cg_sample_source *src = NULL;
    cg_type_env *types = NULL;
    cg_noise *noise = NULL;
    cg_noise_target *target = NULL;
    cg_noise_tally files;
    int rc = CG_EXIT_ERROR;
    cg_error err;
    cg_error_clear(&err);
    memset(&a, 0, sizeof a);
    memset(&files, 0, sizeof files);
    cli_inputs_init(&a.in);
    int prc = parse_args(argc, argv, &a);
    if (prc != CG_EXIT_OK) {
        rc = prc < 0 ? CG_EXIT_OK : prc;
        goto done;
    }
    if (!(model = cli_model_for("noise", a.model_path, &a.in, &a.targets)))
        goto done;
    cg_status st = a.inputs_dir
                       ? cg_sample_source_open_dir(model, a.inputs_dir, 0, &src, &err)
                       : cg_sample_source_open_random(model, a.random_n ? (size_t)a.random_n : 2,
                                                      &a.in.random, a.in.dims, a.in.dim_count, 0,
                                                      &src, &err);
    if (st != CG_OK || cg_sample_source_count(src) == 0) {
        cli_error("noise", "%s", st != CG_OK ? err.msg : "no samples");
        goto done;
    }
    /* the decision analysis wants the values' types (one reference run at
     * the given dims); without them it goes by the declared types */
    if (cg_type_env_build(model, a.in.dims, a.in.dim_count, &types, &err) != CG_OK) {
        cli_warn("noise", "no type environment (%s); decisions are found from the declared "
                 "types", err.msg);
        types = NULL;
        cg_error_clear(&err);
    }
    cg_noise_options no;
    cg_target_path_options base;
    memset(&no, 0, sizeof no);
    memset(&base, 0, sizeof base);
    base.targets = a.targets.list;
    base.target_count = a.targets.count;
    base.random = &a.in.random;
    base.accumulate = a.targets.accumulate;
    /* a target with two device classes is judged as both unless
     * --accumulate picks one, each against the floor of how it sums */
    base.device_classes = a.targets.accumulate == CG_ACCUMULATE_PROFILE;
    no.fp16 = a.fp16;
    no.fp16_sums = a.fp16 && cg_target_path_options_sum16(&base);
    no.types = types;
    if ((st = cg_noise_init(model, &no, &noise, &err)) != CG_OK ||
        (a.targets.count && (st = cg_noise_target_init(noise, &base, &target, &err)) != CG_OK) ||
        (a.outputs_from && (st = cg_noise_tally_init(noise, &files, &err)) != CG_OK)) {
        cli_error("noise", "%s", err.msg);
        goto done;
    }
    for (size_t i = 0; i < cg_sample_source_count(src); i++)
        if ((st = add_sample(&a, model, noise, src, i, target, a.outputs_from ? &files : NULL,
                             &err)) != CG_OK) {
            cli_error("noise", "%s", err.msg);
            goto done;
        }

    cg_noise_side sides[2];
    size_t nsides = 0;
    if (target)
        sides[nsides++] = (cg_noise_side){a.targets.label, cg_noise_target_precision(target),
                                          target, NULL};
    if (a.outputs_from)
        sides[nsides++] = (cg_noise_side){a.outputs_from, a.out_precision, NULL, &files};
    cg_noise_view v = {a.model_path, noise, a.fp16, sides, nsides, cg_sample_source_count(src)};
    bool pass = true;
    if (cli_json_on()) {
        json_t *root = cg_report_noise_json(&v, &pass, &err);
        rc = cli_json_emit(root ? (pass ? CG_EXIT_OK : CG_EXIT_FAIL) : CG_EXIT_ERROR, root);
    } else {
        pass = cg_report_noise_text(stdout, &v, &err);
        rc = pass ? CG_EXIT_OK : CG_EXIT_FAIL;
    }
    if (err.status != CG_OK)
        cli_error("noise", "%s", err.msg);
done:
    cg_noise_target_free(target);
    cg_noise_tally_free(&files);
    cg_noise_free(noise);
    cg_type_env_free(types);
    cg_sample_source_free(src);
    cg_model_free(model);
    cli_targets_free(&a.targets);
    cli_inputs_free(&a.in);
    return rc;
}
