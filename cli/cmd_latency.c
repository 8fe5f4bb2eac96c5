/* convgate latency: what moving part of a model to a faster path buys end to
 * end once the boundaries between the paths are paid for (src/cost/calc.c),
 * printed as a sum a person can check by hand. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/cost.h"
#include "report/report.h"

static void latency_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate latency --baseline-ms B --accelerated-ms A --speedup S\n"
            "                        --boundaries K --boundary-ms C [--json]\n"
            "\n"
            "The end-to-end latency of a model split between two paths. The whole model\n"
            "takes B ms on the baseline; a part of it that takes A ms there runs S times\n"
            "faster on the accelerated path; the other B - A ms stay as they are; each of\n"
            "the K boundaries between the paths (transfers, layout conversions, syncs)\n"
            "costs C ms. Then\n"
            "    mixed latency = A/S + (B - A) + K*C\n"
            "    speedup       = B / mixed = 1 / ((1 - f) + f/S + beta)\n"
            "with f = A/B (the fraction moved) and beta = K*C/B (boundary cost as a\n"
            "fraction of the baseline): Amdahl's law plus a boundary term. Both forms are\n"
            "computed independently and printed, so they check each other.\n"
            "\n"
            "Assumptions: nothing overlaps (the paths do not run concurrently, transfers\n"
            "are not hidden behind compute), boundaries are crossed one after another, each\n"
            "at the same cost C, and the moved part's speedup S is the same over all of it.\n"
            "Where the paths do overlap the real latency is lower: read the figure as the\n"
            "no-overlap bound.\n"
            "\n"
            "Options:\n"
            "  --baseline-ms B     whole model on the baseline path, ms (> 0)\n"
            "  --accelerated-ms A  the moved part, timed on the baseline, ms (0 <= A <= B)\n"
            "  --speedup S         how many times faster the moved part runs (> 0; < 1 is\n"
            "                      a slowdown)\n"
            "  --boundaries K      number of boundary crossings (integer >= 0)\n"
            "  --boundary-ms C     cost of one crossing, ms (>= 0)\n"
            "  --json              machine-readable result (docs/json.md), numbers at full\n"
            "                      precision\n"
            "  -h, --help          this help\n"
            "\n"
            "Example: convgate latency --baseline-ms 100 --accelerated-ms 80 --speedup 8 \\\n"
            "             --boundaries 2 --boundary-ms 2.5      (10 + 20 + 5 = 35 ms, 2.857x)\n"
            "\n"
            "Exit status: 0 printed, 2 usage error or out-of-range input.\n");
}

/* Parses a decimal integer; prints the error and returns false. */
static bool parse_count(const char *opt, const char *text, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || v < 0 || v > CG_COST_MAX_BOUNDARIES) {
        cli_error("latency", "--%s expects an integer in [0, %lld], got '%s'", opt,
                  (long long)CG_COST_MAX_BOUNDARIES, text);
        return false;
    }
    *out = (int64_t)v;
    return true;
}

int cmd_latency(int argc, char **argv)
{
    static const struct option longopts[] = {{"baseline-ms", required_argument, NULL, 'B'},
                                              {"accelerated-ms", required_argument, NULL, 'A'},
                                              {"speedup", required_argument, NULL, 'S'},
                                              {"boundaries", required_argument, NULL, 'K'},
                                              {"boundary-ms", required_argument, NULL, 'C'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    cg_latency_input in = {0, 0, 0, 0, 0};
    bool have_b = false, have_a = false, have_s = false, have_k = false,
         have_c = false;
    int c;
    bool started = false;
    while ((c = cli_next_option("latency", argc, argv, "h", longopts, &started, NULL, NULL,
                                NULL)) != -1) {
        switch (c) {
        case 'B':
            if (!cli_parse_real("latency", "baseline-ms", optarg, &in.baseline_ms))
                return CG_EXIT_ERROR;
            have_b = true;
            break;
        case 'A':
            if (!cli_parse_real("latency", "accelerated-ms", optarg, &in.accelerated_ms))
                return CG_EXIT_ERROR;
            have_a = true;
            break;
        case 'S':
            if (!cli_parse_real("latency", "speedup", optarg, &in.speedup))
                return CG_EXIT_ERROR;
            have_s = true;
            break;
        case 'K':
            if (!parse_count("boundaries", optarg, &in.boundaries))
                return CG_EXIT_ERROR;
            have_k = true;
            break;
        case 'C':
            if (!cli_parse_real("latency", "boundary-ms", optarg, &in.boundary_ms))
                return CG_EXIT_ERROR;
            have_c = true;
            break;
        case 'j': break;
        case 'h': latency_usage(stdout); return CG_EXIT_OK;
        default: latency_usage(stderr); return CG_EXIT_ERROR;
        }
    }
    if (optind != argc) {
        cli_error("latency", "unexpected argument '%s' (see convgate latency --help)",
                  argv[optind]);
        return CG_EXIT_ERROR;
    }
    /* every term of the sum must be stated: a forgotten boundary cost is
     * exactly the mistake this command exists to prevent */
    const char *missing = !have_b   ? "--baseline-ms B"
                          : !have_a ? "--accelerated-ms A"
                          : !have_s ? "--speedup S"
                          : !have_k ? "--boundaries K"
                          : !have_c ? "--boundary-ms C"
                                    : NULL;
    if (missing) {
        cli_error("latency", "missing %s (see convgate latency --help)", missing);
        return CG_EXIT_ERROR;
    }
    cg_error err;
    cg_error_clear(&err);
    cg_latency_result r;
    if (cg_cost_latency(&in, &r, &err) != CG_OK) {
        cli_error("latency", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    if (cli_json_on())
        return cli_json_emit(CG_EXIT_OK, cg_report_latency_json(&in, &r));
    cg_report_latency_text(stdout, &in, &r);
    return CG_EXIT_OK;
}
