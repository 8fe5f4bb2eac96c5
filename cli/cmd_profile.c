/*
 * convgate profile: where a model's time goes on the reference runtime, and
 * what a placement on the given targets costs: per-node warm times, cold
 * times apart, per partition and per boundary crossing, coverage by node
 * count and by time, and the mixed-latency estimate beside the measured
 * mixed run for executing targets (src/cost/profile.c,
 * docs/cost-model.md). Profiled targets are costed from assumptions, which
 * the report prints as such.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "report/report.h"
#include "core/text.h"

#define PROFILE_DEFAULT_RUNS 10

static void profile_usage(FILE *f)
{
    cg_cost_assumptions d;
    cg_cost_assumptions_default(&d);
    fprintf(f,
            "Usage: convgate profile MODEL [--target T[,T2...]] [--runs N] [--dim S=V]...\n"
            "                        [--speedup CLASS=S]... [--boundary-us U]\n"
            "                        [--bandwidth-gbps G] [--seed N] [--range [NAME=]LO,HI]...\n"
            "                        [--top K]\n"
            "                        [--profiles DIR] [--json]\n"
            "\n"
            "Times the model on the reference runtime (per node, median of N warm runs;\n"
            "init and the first run reported apart as cold) on random inputs. With\n"
            "--target, places it (as `convgate assign`) and reports coverage by node count\n"
            "and by time, each partition and boundary crossing, and the mixed latency\n"
            "estimate = time on target + unchanged CPU remainder + boundary cost.\n"
            "Executing targets (xnnpack) are measured: each partition compiled and run\n"
            "alone, each crossing timed as the copy/NCHW<->NHWC conversion the delegate\n"
            "does, and the real mixed run printed beside the estimate with their ratio.\n"
            "Profiled targets are costed from ASSUMPTIONS (per-op-class speedups, a fixed\n"
            "cost per crossing plus bytes over a bandwidth), printed as such.\n"
            "\n"
            "Options:\n"
            "  --target T[,T2...]    targets in priority order (repeatable)\n"
            "  --runs N              warm runs per median (default %d)\n"
            CLI_HELP_INPUT_OPTIONS
            "  --speedup CLASS=S     assumed speedup of an op class on profiled targets\n"
            "                        (repeatable; CLASS all sets every class). Defaults:",
            PROFILE_DEFAULT_RUNS);
    for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
        cg_text_printf(f, "%s %s=%g", c ? "," : "", cg_op_class_name((cg_op_class)c), d.speedup[c]);
    fprintf(f,
            "\n"
            "  --boundary-us U       assumed fixed cost per crossing (default %g us)\n"
            "  --bandwidth-gbps G    assumed crossing bandwidth (default %g GB/s)\n"
            "  --top K               text: list only the K costliest nodes (default all)\n"
            "  --profiles DIR        capability profiles directory\n"
            "  --json                the report as JSON (docs/json.md)\n"
            "  --quiet               no progress line on stderr\n"
            "  -h, --help            this help\n"
            "\n"
            "Exit status: 0 report printed; 2 usage or input error.\n",
            d.boundary_fixed_us, d.bandwidth_gbps);
    fputs("\n" CLI_LIMITS_HELP, f);
}

static bool parse_size(const char *opt, const char *text, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || v < lo || v > hi) {
        cli_error("profile", "--%s expects an integer in [%zu, %zu], got '%s'", opt, lo, hi,
                  text);
        return false;
    }
    *out = (size_t)v;
    return true;
}

static bool parse_speedup(const char *arg, cg_cost_assumptions *as)
{
    const char *eq = strchr(arg, '=');
    char cls[32];
    double s;
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof cls) {
        cli_error("profile", "--speedup expects CLASS=S, got '%s'", arg);
        return false;
    }
    memcpy(cls, arg, (size_t)(eq - arg));
    cls[eq - arg] = '\0';
    if (!cli_parse_real("profile", "speedup", eq + 1, &s))
        return false;
    if (s <= 0) {
        cli_error("profile", "--speedup %s: the speedup must be > 0", arg);
        return false;
    }
    cg_op_class c;
    if (strcmp(cls, "all") == 0) {
        for (int k = 0; k < CG_OP_CLASS_COUNT; k++)
            as->speedup[k] = s;
        return true;
    }
    if (!cg_op_class_from_name(cls, &c)) {
        cli_error("profile", "--speedup %s: unknown op class '%s' (classes: conv, matmul, "
                  "pool, norm, elementwise, reduce, data, other, all)", arg, cls);
        return false;
    }
    as->speedup[c] = s;
    return true;
}

int cmd_profile(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              {"runs", required_argument, NULL, 'r'},
                                              {"speedup", required_argument, NULL, 'S'},
                                              {"boundary-us", required_argument, NULL, 'B'},
                                              {"bandwidth-gbps", required_argument, NULL, 'W'},
                                              {"top", required_argument, NULL, 'k'},
                                              CLI_OPTS_END};
    size_t runs = PROFILE_DEFAULT_RUNS, top = 0, feed_count = 0;
    int rc = CG_EXIT_ERROR, c;
    cli_inputs in;
    cli_targets tg;
    cg_cost_assumptions assume;
    cg_model *model = NULL;
    cg_type_env *types = NULL;
    cg_lowered *lowered = NULL;
    cg_assignment *a = NULL;
    cg_named_value *feeds = NULL;
    cg_reference_profile ref;
    cg_target_profile tp;
    cg_cost_estimate est;
    char verdict[2 * 1024 + 8] = "";
    cg_error err;
    cg_error_clear(&err);
    memset(&ref, 0, sizeof ref);
    memset(&tp, 0, sizeof tp);
    memset(&est, 0, sizeof est);
    memset(&tg, 0, sizeof tg);
    cli_inputs_init(&in);
    cg_cost_assumptions_default(&assume);

    bool started = false;
    while ((c = cli_next_option("profile", argc, argv, "h", longopts, &started,
                                &in, &tg, NULL)) != -1) {
        int r = 1;
        switch (c) {
        case 'r': r = parse_size("runs", optarg, 1, CG_PROFILE_MAX_RUNS, &runs) ? 1 : -1; break;
        case 'S': r = parse_speedup(optarg, &assume) ? 1 : -1; break;
        case 'B':
            r = cli_parse_real("profile", "boundary-us", optarg, &assume.boundary_fixed_us) ? 1
                                                                                          : -1;
            break;
        case 'W':
            r = cli_parse_real("profile", "bandwidth-gbps", optarg, &assume.bandwidth_gbps) ? 1
                                                                                            : -1;
            break;
        case 'k': r = parse_size("top", optarg, 1, SIZE_MAX, &top) ? 1 : -1; break;
        case 'h': profile_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
        if (r < 0)
            goto done;
    }
    const char *path = cli_model_arg("profile", argc, argv, profile_usage);
    if (!path)
        goto done;
    if (cg_cost_assumptions_check(&assume, &err) != CG_OK) {
        cli_error("profile", "%s", err.msg);
        goto done;
    }
    if (!(model = cli_model_for("profile", path, &in, &tg)))
        goto done;
    /* the graph the targets partition (a profile's "preprocess") is what runs */
    if (tg.count &&
        cg_lower_for_targets(model, tg.list, tg.count, in.dims, in.dim_count, &lowered, &err) !=
            CG_OK) {
        cli_error("profile", "%s: %s", path, err.msg);
        goto done;
    }
    const cg_model *placed = lowered ? lowered->model : model;
    /* the type environment gives the input shapes (and the placement its types) */
    cg_progress progress = cli_progress();
    if (cg_type_env_build_with(placed, in.dims, in.dim_count, &in.random, &types, &err) !=
            CG_OK ||
        cg_profile_feeds_make(placed, types, &in.random, &feeds, &feed_count, &err) != CG_OK ||
        (!tg.count && cg_profile_reference(placed, feeds, feed_count, runs, true, &progress,
                                           &ref, &err) != CG_OK)) {
        cli_error("profile", "%s: %s", path, err.msg);
        goto done;
    }
    cg_profile_view r = {path, placed, &assume, &ref, NULL, NULL, &est, false, verdict, top,
                         NULL, 0};
    if (tg.count) {
        char base[1024], timed[1024];
        if (cg_assign(placed, types, tg.list, tg.count, &a, &err) != CG_OK ||
            cg_profile_target(placed, types, a, feeds, feed_count, runs, &progress, &ref, &tp,
                              &err) != CG_OK ||
            cg_profile_estimate(a, &ref, &tp, &assume, &est, &r.any_profiled, &err) != CG_OK) {
            cli_error("profile", "%s: %s", path, err.msg);
            goto done;
        }
        r.a = a;
        r.tp = &tp;
        cg_assign_verdict(a, types, base, sizeof base);
        cg_cost_verdict_text(&est, a, timed, sizeof timed);
        snprintf(verdict, sizeof verdict, "%s; %s", base, timed);
    }
    const char *notes[17];
    r.note_count = cg_type_env_note_count(types);
    r.note_count = r.note_count > 16 ? 16 : r.note_count;
    for (size_t i = 0; i < r.note_count; i++)
        notes[i] = cg_type_env_note(types, i);
    char lowered_note[768];
    if (lowered && strcmp(lowered->lowering, "none") != 0) {
        char removed[512];
        snprintf(lowered_note, sizeof lowered_note, "timed on the graph the targets partition "
                 "(preprocess '%s'): %zu nodes of the file -> %zu; removed by %s: %zu (%s)",
                 lowered->lowering, model->graph->node_count, placed->graph->node_count,
                 lowered->remover, cg_lowered_removed_count(lowered, ""),
                 cg_lowered_removed_summary(lowered, "", 6, removed, sizeof removed));
        notes[r.note_count++] = lowered_note;
    }
    r.notes = notes;
    rc = CG_EXIT_OK;
    cli_progress_clear();
    if (cli_json_on())
        rc = cli_json_emit(rc, cg_report_profile_json(&r));
    else
        cg_report_profile_text(stdout, &r);
    fflush(stdout);
done:
    cg_target_profile_clear(&tp);
    cg_reference_profile_clear(&ref);
    cg_profile_feeds_free(feeds, feed_count);
    cg_assignment_free(a);
    cg_type_env_free(types);
    cg_lowered_free(lowered);
    cli_targets_free(&tg);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
