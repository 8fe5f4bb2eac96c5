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
            "  --json              machine-readable result, numbers at full precision\n"
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

static int latency_json(const cg_latency_input *in, const cg_latency_result *r)
{
    int rc = CG_EXIT_ERROR;
    char *text = NULL, *shortest = NULL;
    json_t *root = json_object(), *am = json_object();
    if (!root || !am)
        goto done;
    json_object_set_new(root, "baseline_ms", json_real(in->baseline_ms));
    json_object_set_new(root, "accelerated_ms", json_real(in->accelerated_ms));
    json_object_set_new(root, "speedup_factor", json_real(in->speedup));
    json_object_set_new(root, "boundaries", json_integer((json_int_t)in->boundaries));
    json_object_set_new(root, "boundary_ms", json_real(in->boundary_ms));
    json_object_set_new(root, "accelerated_time_ms", json_real(r->accelerated_time_ms));
    json_object_set_new(root, "remainder_ms", json_real(r->remainder_ms));
    json_object_set_new(root, "boundary_cost_ms", json_real(r->boundary_cost_ms));
    json_object_set_new(root, "mixed_ms", json_real(r->mixed_ms));
    json_object_set_new(root, "end_to_end_speedup", json_real(r->end_to_end_speedup));
    json_object_set_new(am, "f", json_real(r->amdahl_f));
    json_object_set_new(am, "S", json_real(r->amdahl_s));
    json_object_set_new(am, "beta", json_real(r->amdahl_beta));
    json_object_set_new(am, "speedup", json_real(r->amdahl_speedup));
    json_object_set_new(root, "amdahl", am);
    am = NULL; /* owned by root now */
    /* 17 digits always read back exactly; cg_cost_json_shortest then drops
     * the digits that are only noise (0.050000000000000003 -> 0.05) */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    shortest = text ? cg_cost_json_shortest(text) : NULL;
    if (shortest && puts(shortest) >= 0)
        rc = CG_EXIT_OK;
done:
    if (rc != CG_EXIT_OK)
        cli_error("latency", "could not write the JSON result");
    free(shortest);
    free(text);
    json_decref(am);
    json_decref(root);
    return rc;
}

/* A speedup with 3 decimals, as people compare them; exponent form for the
 * absurd ones that extreme inputs produce, so a line stays a line. */
static const char *speedup_text(double v, char *buf, size_t size)
{
    snprintf(buf, size, v < 1e6 ? "%.3f" : "%.3e", v);
    return buf;
}

static void latency_text(const cg_latency_input *in, const cg_latency_result *r)
{
    char sp[2][32];
    char expr[3][96], val[4][40];
    snprintf(expr[0], sizeof expr[0], "%.6g ms / %.6g", in->accelerated_ms, in->speedup);
    snprintf(expr[1], sizeof expr[1], "%.6g - %.6g", in->baseline_ms, in->accelerated_ms);
    snprintf(expr[2], sizeof expr[2], "%lld x %.6g ms", (long long)in->boundaries,
             in->boundary_ms);
    snprintf(val[0], sizeof val[0], "%.6g", r->accelerated_time_ms);
    snprintf(val[1], sizeof val[1], "%.6g", r->remainder_ms);
    snprintf(val[2], sizeof val[2], "%.6g", r->boundary_cost_ms);
    snprintf(val[3], sizeof val[3], "%.6g", r->mixed_ms);
    int ew = 0, vw = 0;
    for (int i = 0; i < 3; i++)
        if ((int)strlen(expr[i]) > ew)
            ew = (int)strlen(expr[i]);
    for (int i = 0; i < 4; i++)
        if ((int)strlen(val[i]) > vw)
            vw = (int)strlen(val[i]);
    static const char *const label[3] = {"accelerated", "remainder", "boundaries"};
    for (int i = 0; i < 3; i++)
        printf("%-12s %-*s = %*s ms\n", label[i], ew, expr[i], vw, val[i]);
    /* the sum's value sits in the same column as the terms above it */
    printf("%-*s%*s ms   (speedup %sx; the accelerated part alone: %.6gx)\n", 12 + 1 + ew + 3,
           "mixed latency", vw, val[3], speedup_text(r->end_to_end_speedup, sp[0], sizeof sp[0]),
           in->speedup);
    double diff = fabs(r->amdahl_speedup - r->end_to_end_speedup) / r->end_to_end_speedup;
    printf("Amdahl: f=%.6g S=%.6g beta=%.6g -> 1/((1-f)+f/S+beta) = %s   (B/mixed = %s; "
           "relative difference %.2g)\n",
           r->amdahl_f, r->amdahl_s, r->amdahl_beta,
           speedup_text(r->amdahl_speedup, sp[1], sizeof sp[1]), sp[0], diff);
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
    bool json = false, have_b = false, have_a = false, have_s = false, have_k = false,
         have_c = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
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
        case 'j': json = true; break;
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
    if (json)
        return latency_json(&in, &r);
    latency_text(&in, &r);
    return CG_EXIT_OK;
}
