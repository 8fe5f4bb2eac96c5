/* Cost model tests (src/cost/profile.c): the mixed-latency estimate on a
 * synthetic timing table over a hand-built assignment (two partitions, a
 * CPU Softmax between them, two ledger crossings), with every figure worked
 * out by hand: assumed speedups per op class, the boundary model, measured
 * partitions mixed with assumed ones, the verdict flags (a dominating CPU
 * fallback op, boundary cost above the accelerated gain), input validation,
 * the op classes and the median. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/profile.h"
#include "testlib.h"

static bool near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1); }

/* The synthetic model: conv0 relu1 | softmax2 (CPU) | conv3 add4 | identity5 (CPU)
 *   P0 = {conv0, relu1}, P1 = {conv3, add4}
 *   crossings: 'r1' P0 -> CPU (4000 B), 's2' CPU -> P1 (4000 B) */
static cg_node nodes[6];
static cg_graph graph;
static cg_target target = {.name = "fake", .kind = CG_TARGET_PROFILED};
static const cg_target *targets[1] = {&target};
static int owner[6] = {0, 0, CG_OWNER_CPU, 0, 0, CG_OWNER_CPU};
static int partition_of[6] = {0, 0, -1, 1, 1, -1};
static size_t p0_nodes[2] = {0, 1}, p1_nodes[2] = {3, 4};
static cg_partition parts[2];
static cg_boundary bounds[2];
static cg_unsupported unsup[1];
static cg_assignment assignment;

static void build(void)
{
    static const char *ops[6] = {"Conv", "Relu", "Softmax", "Conv", "Add", "Identity"};
    static const char *names[6] = {"conv0", "relu1", "softmax2", "conv3", "add4", "identity5"};
    for (int i = 0; i < 6; i++)
        nodes[i] = (cg_node){.op_type = ops[i], .name = names[i]};
    graph = (cg_graph){.nodes = nodes, .node_count = 6, .name = "synthetic"};
    parts[0] = (cg_partition){.id = 0, .target = 0, .nodes = p0_nodes, .node_count = 2};
    parts[1] = (cg_partition){.id = 1, .target = 0, .nodes = p1_nodes, .node_count = 2};
    bounds[0] = (cg_boundary){.tensor = "r1", .from_partition = 0, .to_partition = -1,
                              .known = true, .bytes = 4000};
    bounds[1] = (cg_boundary){.tensor = "s2", .from_partition = -1, .to_partition = 1,
                              .known = true, .bytes = 4000};
    unsup[0] = (cg_unsupported){.node = 2, .target = 0, .reason = "op Softmax not supported"};
    assignment = (cg_assignment){.graph = &graph, .targets = targets, .target_count = 1,
                                 .owner = owner, .partition_of = partition_of,
                                 .partitions = parts, .partition_count = 2,
                                 .boundaries = bounds, .boundary_count = 2,
                                 .unsupported = unsup, .unsupported_count = 1};
}

static void test_assumed(void)
{
    double node_ms[6] = {4, 1, 3, 8, 2, 0.5};
    cg_cost_inputs in = {&assignment, node_ms, 0.5, NULL, NULL, NULL, NULL};
    cg_cost_estimate e;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_OK, "%s", err.msg);
    /* B = 18.5 in nodes + 0.5 overhead; A = 4 + 1 + 8 + 2 */
    EXPECT(near(e.reference_ms, 19) && near(e.inside_ms, 15), "B %g A %g", e.reference_ms,
           e.inside_ms);
    EXPECT(near(e.time_coverage, 15.0 / 19.0), "%g", e.time_coverage);
    EXPECT(e.nodes_on_target == 4 && e.nodes_total == 6, "%zu/%zu", e.nodes_on_target,
           e.nodes_total);
    /* default speedups: conv 4, elementwise 2: 4/4 + 1/2 + 8/4 + 2/2 */
    EXPECT(near(e.accelerated_ms, 4.5), "%g", e.accelerated_ms);
    EXPECT(near(e.remainder_ms, 4), "%g", e.remainder_ms);
    /* 20 us + 4000 B / 10 GB/s = 0.02 + 0.0004 ms, twice */
    EXPECT(near(e.boundary_ms, 0.0408) && e.crossings == 2, "%g ms, %lld", e.boundary_ms,
           (long long)e.crossings);
    EXPECT(near(e.mixed_ms, 4.5 + 4 + 0.0408), "%.17g", e.mixed_ms);
    EXPECT(e.valid_latency && near(e.latency.mixed_ms, e.mixed_ms) &&
               near(e.latency.amdahl_f, 15.0 / 19.0) && near(e.latency.amdahl_s, 15.0 / 4.5),
           "latency %g f %g S %g", e.latency.mixed_ms, e.latency.amdahl_f, e.latency.amdahl_s);
    EXPECT(near(e.latency.amdahl_speedup, 19 / e.mixed_ms), "%g", e.latency.amdahl_speedup);
    EXPECT(e.assumed && !e.measured, "assumed %d measured %d", e.assumed, e.measured);
    EXPECT(e.top_cpu_node == 2 && near(e.top_cpu_ms, 3), "%zu %g", e.top_cpu_node, e.top_cpu_ms);
    EXPECT(near(e.gain_ms, 10.5), "%g", e.gain_ms);
    EXPECT(!e.fallback_dominates && !e.boundary_exceeds_gain, "%d %d", e.fallback_dominates,
           e.boundary_exceeds_gain);

    char text[1024];
    cg_cost_verdict_text(&e, &assignment, text, sizeof text);
    EXPECT(strstr(text, "est. 79% of reference time inside partitions"), "%s", text);
    EXPECT(strstr(text, "one unsupported op ('softmax2', Softmax) takes 16% of time"), "%s",
           text);
    EXPECT(strstr(text, "assumed") && !strstr(text, "WARNING"), "%s", text);
    /* a short buffer is cut, never overrun */
    char tiny[16];
    cg_cost_verdict_text(&e, &assignment, tiny, sizeof tiny);
    EXPECT(strlen(tiny) == 15, "%zu", strlen(tiny));
}

static void test_measured_mix(void)
{
    double node_ms[6] = {4, 1, 3, 8, 2, 0.5};
    double pms[2] = {1.0, NAN}, pbs[2] = {0.3, 0}; /* P0 measured, P1 assumed */
    size_t pks[2] = {2, 0};
    cg_cost_inputs in = {&assignment, node_ms, 0.5, pms, pbs, pks, NULL};
    cg_cost_estimate e;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_OK, "%s", err.msg);
    /* P0 measured 1.0; P1 assumed 8/4 + 2/2 = 3 */
    EXPECT(near(e.accelerated_ms, 4), "%g", e.accelerated_ms);
    /* P0's measured 0.3 ms in 2 crossings; 'r1' leaves P0 (covered), 's2'
     * enters the assumed P1: the model's 0.0204 ms */
    EXPECT(near(e.boundary_ms, 0.3204) && e.crossings == 3, "%g %lld", e.boundary_ms,
           (long long)e.crossings);
    /* remainder: CPU nodes 3.5 + the overhead of the steps left: 2 CPU nodes,
     * measured P0 as 1 step, assumed P1 still 2 steps -> 0.5 * 5/6 */
    EXPECT(near(e.remainder_ms, 3.5 + 0.5 * 5.0 / 6.0), "%g", e.remainder_ms);
    EXPECT(near(e.mixed_ms, 4 + 3.5 + 0.5 * 5.0 / 6.0 + 0.3204), "%g", e.mixed_ms);
    EXPECT(e.measured && e.assumed, "%d %d", e.measured, e.assumed);

    /* everything measured: no assumption used, K from the measurements */
    double all[2] = {1.0, 2.5}, allb[2] = {0.3, 0.2};
    size_t allk[2] = {2, 2};
    cg_cost_inputs in2 = {&assignment, node_ms, 0.5, all, allb, allk, NULL};
    EXPECT(cg_cost_estimate_build(&in2, &e, &err) == CG_OK, "%s", err.msg);
    /* both partitions are one step each: 4 of 6 steps' overhead remains */
    EXPECT(near(e.mixed_ms, 3.5 + 3.5 + 0.5 * 4.0 / 6.0 + 0.5) && e.crossings == 4 &&
               !e.assumed && e.measured,
           "%g %lld %d", e.mixed_ms, (long long)e.crossings, e.assumed);
}

static void test_flags(void)
{
    cg_cost_estimate e;
    cg_error err;
    cg_error_clear(&err);
    /* the Softmax grows to 30 ms: B = 46, 30 >= 10% of B and > 4.5 on target */
    double heavy[6] = {4, 1, 30, 8, 2, 0.5};
    cg_cost_inputs in = {&assignment, heavy, 0.5, NULL, NULL, NULL, NULL};
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_OK, "%s", err.msg);
    EXPECT(e.fallback_dominates && !e.boundary_exceeds_gain, "%d %d", e.fallback_dominates,
           e.boundary_exceeds_gain);
    char text[1024];
    cg_cost_verdict_text(&e, &assignment, text, sizeof text);
    EXPECT(strstr(text, "CPU fallback op dominates") && strstr(text, "65% of time"), "%s", text);

    /* no speedup at all: the gain is 0 and any crossing costs more */
    double node_ms[6] = {4, 1, 3, 8, 2, 0.5};
    cg_cost_assumptions as;
    cg_cost_assumptions_default(&as);
    for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
        as.speedup[c] = 1;
    cg_cost_inputs in2 = {&assignment, node_ms, 0.5, NULL, NULL, NULL, &as};
    EXPECT(cg_cost_estimate_build(&in2, &e, &err) == CG_OK, "%s", err.msg);
    EXPECT(e.boundary_exceeds_gain && near(e.gain_ms, 0) && e.mixed_ms > e.reference_ms,
           "%d %g %g", e.boundary_exceeds_gain, e.gain_ms, e.mixed_ms);
    cg_cost_verdict_text(&e, &assignment, text, sizeof text);
    EXPECT(strstr(text, "boundary cost (0.0408 ms) exceeds the accelerated gain"), "%s", text);

    /* a slower target (speedup 0.5) and a 1 GB/s, 100 us link */
    as.speedup[CG_OP_CLASS_CONV] = 0.5;
    as.boundary_fixed_us = 100;
    as.bandwidth_gbps = 1;
    EXPECT(cg_cost_estimate_build(&in2, &e, &err) == CG_OK, "%s", err.msg);
    /* 4/0.5 + 1 + 8/0.5 + 2 = 27; crossings 2 x (0.1 + 0.004) */
    EXPECT(near(e.accelerated_ms, 27) && near(e.boundary_ms, 0.208), "%g %g", e.accelerated_ms,
           e.boundary_ms);
    EXPECT(near(e.mixed_ms, 27 + 4 + 0.208), "%g", e.mixed_ms);
}

static void test_validation(void)
{
    cg_cost_estimate e;
    cg_error err;
    double bad[6] = {4, 1, -3, 8, 2, 0.5};
    cg_cost_inputs in = {&assignment, bad, 0, NULL, NULL, NULL, NULL};
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_USAGE && strstr(err.msg, "softmax2"),
           "%s", err.msg);
    double nan_t[6] = {4, 1, NAN, 8, 2, 0.5};
    in.node_ms = nan_t;
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_USAGE, "NaN accepted");
    double ok[6] = {4, 1, 3, 8, 2, 0.5};
    in.node_ms = ok;
    in.overhead_ms = INFINITY;
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_USAGE, "inf overhead accepted");
    in.overhead_ms = 0;
    cg_cost_assumptions as;
    cg_cost_assumptions_default(&as);
    as.speedup[CG_OP_CLASS_POOL] = 0;
    in.assume = &as;
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in, &e, &err) == CG_USAGE && strstr(err.msg, "pool"), "%s",
           err.msg);
    cg_cost_assumptions_default(&as);
    as.bandwidth_gbps = 0;
    cg_error_clear(&err);
    EXPECT(cg_cost_assumptions_check(&as, &err) == CG_USAGE, "zero bandwidth accepted");
    double pms[2] = {-1, NAN};
    cg_cost_inputs in2 = {&assignment, ok, 0, pms, NULL, NULL, NULL};
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in2, &e, &err) == CG_USAGE, "negative partition time");

    /* an all-zero table: no latency form, but still a (zero) estimate */
    double zero[6] = {0};
    cg_cost_inputs in3 = {&assignment, zero, 0, NULL, NULL, NULL, NULL};
    cg_error_clear(&err);
    EXPECT(cg_cost_estimate_build(&in3, &e, &err) == CG_OK && !e.valid_latency &&
               e.time_coverage == 0,
           "%s", err.msg);
}

static void test_classes_and_median(void)
{
    EXPECT(cg_op_class_of("Conv") == CG_OP_CLASS_CONV, "conv");
    EXPECT(cg_op_class_of("Gemm") == CG_OP_CLASS_MATMUL, "gemm");
    EXPECT(cg_op_class_of("Softmax") == CG_OP_CLASS_NORM, "softmax");
    EXPECT(cg_op_class_of("NoSuchOp") == CG_OP_CLASS_OTHER, "unknown");
    EXPECT(cg_op_class_of(NULL) == CG_OP_CLASS_OTHER, "null");
    cg_op_class c;
    EXPECT(cg_op_class_from_name("elementwise", &c) && c == CG_OP_CLASS_ELEMENTWISE, "name");
    EXPECT(!cg_op_class_from_name("vector", &c), "bad name");
    EXPECT(strcmp(cg_op_class_name(CG_OP_CLASS_DATA), "data") == 0, "data");
    double odd[3] = {3, 1, 2}, even[4] = {4, 1, 3, 2};
    EXPECT(cg_profile_median(odd, 3) == 2, "%g", odd[1]);
    EXPECT(cg_profile_median(even, 4) == 2.5, "even");
    EXPECT(cg_profile_median(NULL, 0) == 0, "empty");
    cg_cost_assumptions as;
    cg_cost_assumptions_default(&as);
    EXPECT(near(cg_cost_assumed_crossing_ms(&as, 0), 0.02), "fixed only");
    EXPECT(near(cg_cost_assumed_crossing_ms(&as, 10000000), 0.02 + 1.0), "10 MB at 10 GB/s");
}

int main(void)
{
    build();
    test_assumed();
    test_measured_mix();
    test_flags();
    test_validation();
    test_classes_and_median();
    return test_done("test_profile_cost");
}
