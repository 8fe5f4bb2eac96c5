/*
 * Partitioner tests on graphs built in memory, with hand-made targets whose
 * supports() checks an op-type list: chain split by an unsupported op, the
 * diamond a naive grouping would turn into a cycle, a cycle that only
 * exists once an earlier target's partition runs as one unit, the partition
 * rules (min_nodes, max_partitions, stop_ops, no_single_ops), two targets in
 * priority order, control-flow bodies, boundary conversions, the init
 * failure of a no-fallback target, and the time to assign 10,000 nodes.
 * Every assignment is also checked against the invariants of partition.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convgate/assign.h"
#include "convgate/partition.h"
#include "core/arena.h"
#include "report/report.h"
#include "testlib.h"

/* --- model builder --------------------------------------------------------- */

static cg_model *M; /* the model being built */

static cg_model *model_new(void) { return M = test_model_new(17); }

static cg_graph *graph_new(const char *name, size_t cap) { return test_graph_new(M, name, cap); }

static cg_node *node(cg_graph *g, const char *op, const char *name, const char *ins,
                     const char *outs)
{
    return test_node(M, g, op, name, ins, outs);
}

static void io(cg_graph *g, const char *in, const char *out)
{
    if (in)
        g->inputs[g->input_count++].name = in;
    if (out)
        g->outputs[g->output_count++].name = out;
}

/* --- targets that take a list of op types ---------------------------------- */

typedef struct op_list {
    const char *const *ops;
    size_t count;
} op_list;

static bool list_supports(const cg_target *t, const cg_support_query *q, char *reason,
                          size_t len)
{
    const op_list *l = t->impl;
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->ops[i], q->node->op_type) == 0)
            return true;
    snprintf(reason, len, "%s is not in %s's op list", q->node->op_type, t->name);
    return false;
}

static const cg_target_vtable list_vt = {list_supports, NULL, NULL, NULL, NULL};

static cg_target target(const char *name, const op_list *ops)
{
    cg_target t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.version = "test";
    t.kind = CG_TARGET_PROFILED;
    t.vt = &list_vt;
    t.impl = (void *)ops;
    return t;
}

static const char *const relu_only[] = {"Relu"};
static const op_list RELU = {relu_only, 1};

/* --- invariants -------------------------------------------------------------- */

/* Index of the node named `name`. */
static size_t idx(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->node_count; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    fprintf(stderr, "no node '%s'\n", name);
    abort();
}

/* partition.h's invariants, as the library checks them. */
static void check_invariants(const cg_assignment *a)
{
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_assignment_validate(a, NULL, &err) == CG_OK, "%s", err.msg);
}

/* cg_assignment_validate on a after a corruption: CG_INVALID naming it. */
static void expect_invalid(const cg_assignment *a, const char *needle, const char *what)
{
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_assignment_validate(a, NULL, &err) == CG_INVALID && strstr(err.msg, needle),
           "%s: %s", what, err.msg);
}

static cg_assignment *assign(const cg_model *m, const cg_target *const *t, size_t nt)
{
    cg_error err;
    cg_error_clear(&err);
    cg_assignment *a = NULL;
    cg_status st = cg_assign(m, NULL, t, nt, &a, &err);
    EXPECT(st == CG_OK, "cg_assign: %s", err.msg);
    if (a)
        check_invariants(a);
    return a;
}

static const cg_boundary *find_boundary(const cg_assignment *a, const char *tensor, int from,
                                        int to)
{
    for (size_t i = 0; i < a->boundary_count; i++)
        if (strcmp(a->boundaries[i].tensor, tensor) == 0 &&
            a->boundaries[i].from_partition == from && a->boundaries[i].to_partition == to)
            return &a->boundaries[i];
    return NULL;
}

/* --- tests ---------------------------------------------------------------------- */

/* x -> a -> b -> u(Erf) -> c -> d -> y: two Relu runs around an Erf. */
static cg_model *chain_model(void)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("chain", 8);
    io(g, "x", "y");
    node(g, "Relu", "a", "x", "t1");
    node(g, "Relu", "b", "t1", "t2");
    node(g, "Erf", "u", "t2", "t3");
    node(g, "Relu", "c", "t3", "t4");
    node(g, "Relu", "d", "t4", "y");
    return m;
}

/* a -> b(Erf) -> d, a -> c -> d. */
static cg_model *diamond_model(void)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("diamond", 8);
    io(g, "x", "y");
    node(g, "Relu", "a", "x", "ta");
    node(g, "Erf", "b", "ta", "tb");
    node(g, "Relu", "c", "ta", "tc");
    node(g, "Relu", "d", "tb,tc", "y");
    return m;
}

static void test_chain(void)
{
    cg_model *m = chain_model();
    cg_graph *g = m->graph;
    cg_target t = target("relu-npu", &RELU);
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->partition_count == 2, "%zu partitions", a->partition_count);
        EXPECT(a->boundary_count == 2, "%zu crossings", a->boundary_count);
        EXPECT(find_boundary(a, "t2", 0, -1) && find_boundary(a, "t3", -1, 1), "t2 out, t3 in");
        EXPECT(a->owner[idx(g, "u")] == CG_OWNER_CPU, "u on CPU");
        EXPECT(a->unsupported_count == 1 && a->unsupported[0].node == idx(g, "u") &&
                  strstr(a->unsupported[0].reason, "Erf is not in relu-npu's op list"),
              "unsupported: %zu", a->unsupported_count);
        EXPECT(a->partition_count == 2 && a->partitions[0].node_count == 2 &&
                  a->partitions[0].input_count == 1 &&
                  strcmp(a->partitions[0].inputs[0], "x") == 0 &&
                  a->partitions[0].output_count == 1 &&
                  strcmp(a->partitions[0].outputs[0], "t2") == 0,
              "partition 0 I/O");
        EXPECT(a->partition_count == 2 && a->partitions[1].output_count == 1 &&
                  strcmp(a->partitions[1].outputs[0], "y") == 0,
              "partition 1 ends in the graph output");
        EXPECT(a->dropped_count == 0, "dropped %zu", a->dropped_count);
        char verdict[256];
        EXPECT(cg_assign_verdict(a, NULL, verdict, sizeof verdict) == CG_VERDICT_PARTIAL,
              "verdict %s", verdict);
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

/* a -> b(unsupported) -> d, a -> c -> d: {a, c, d} would feed b and depend on it. */
static void test_diamond(void)
{
    cg_model *m = diamond_model();
    cg_graph *g = m->graph;
    cg_target t = target("relu-npu", &RELU);
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->partition_count == 2, "%zu partitions", a->partition_count);
        EXPECT(a->partition_of[idx(g, "a")] == a->partition_of[idx(g, "c")],
              "a and c together");
        EXPECT(a->partition_of[idx(g, "d")] >= 0 &&
                  a->partition_of[idx(g, "d")] != a->partition_of[idx(g, "a")],
              "d in a partition of its own");
        EXPECT(a->boundary_count == 3, "ta->b, tb->d, tc->d: %zu", a->boundary_count);
        EXPECT(find_boundary(a, "tc", 0, 1) != NULL, "partition-to-partition crossing");
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

/* The validator catches each kind of broken invariant, one at a time,
 * on a correct assignment of the chain and of the diamond. */
static void test_validator(void)
{
    cg_model *m = chain_model();
    cg_graph *g = m->graph;
    cg_target t = target("relu-npu", &RELU);
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a && a->partition_count == 2 && a->boundary_count == 2) {
        size_t va = idx(g, "a");
        a->owner[va] = CG_OWNER_CPU;
        expect_invalid(a, "owner -1 but partition 0", "owner disagrees with the partition");
        a->owner[va] = 0;
        size_t *nodes = a->partitions[0].nodes, keep = nodes[0];
        nodes[0] = nodes[1];
        nodes[1] = keep;
        expect_invalid(a, "out of topological order", "partition nodes out of order");
        nodes[1] = nodes[0];
        nodes[0] = keep;
        cg_partition first = a->partitions[0];
        a->partitions[0] = a->partitions[1];
        a->partitions[1] = first;
        expect_invalid(a, "id 1", "partitions renumbered");
        a->partitions[1] = a->partitions[0];
        a->partitions[0] = first;
        a->partitions[0].input_count = 0;
        expect_invalid(a, "reads 'x' but does not list it", "a missing partition input");
        a->partitions[0].input_count = 1;
        a->partitions[1].output_count = 0;
        expect_invalid(a, "'y' leaves partition 1", "a missing partition output");
        a->partitions[1].output_count = 1;
        a->boundary_count = 1;
        expect_invalid(a, "1 boundaries listed, the graph has 2", "a missing boundary");
        a->boundary_count = 2;
        cg_boundary second = a->boundaries[1];
        a->boundaries[1] = a->boundaries[0];
        expect_invalid(a, "listed twice", "a boundary listed twice");
        a->boundaries[1] = second;
        a->boundaries[0].to_partition = 1;
        expect_invalid(a, "not a crossing", "a boundary to a side that does not read it");
        a->boundaries[0].to_partition = -1;
        check_invariants(a); /* every corruption undone */
    } else {
        EXPECT(0, "chain: unexpected assignment");
    }
    cg_assignment_free(a);
    cg_model_free(m);

    /* the diamond with {a, c, d} forced into one partition around b (CPU):
     * the partition both feeds b and depends on it */
    m = diamond_model();
    g = m->graph;
    a = assign(m, ts, 1);
    if (a && a->partition_count == 2 && a->partitions[0].node_count == 2 &&
        a->partitions[1].node_count == 1) {
        size_t *merged = malloc(3 * sizeof *merged), *old = a->partitions[0].nodes;
        merged[0] = idx(g, "a");
        merged[1] = idx(g, "c");
        merged[2] = idx(g, "d");
        a->partitions[0].nodes = merged;
        a->partitions[0].node_count = 3;
        a->partition_of[idx(g, "d")] = 0;
        a->partition_count = 1;
        expect_invalid(a, "cycle", "a partition that feeds and depends on a CPU node");
        a->partition_count = 2;
        a->partition_of[idx(g, "d")] = 1;
        a->partitions[0].nodes = old;
        a->partitions[0].node_count = 2;
        free(merged);
        check_invariants(a);
    } else {
        EXPECT(0, "diamond: unexpected assignment");
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

/* A cycle only the partition graph shows: an earlier target's partition
 * Q = {q0, q1, q2} (q0 -> q1, q0 -> q2) reads y and feeds x; x and y are
 * connected only through z, so no node path runs y -> x, but {z, y, x}
 * would both feed Q (through y) and depend on it (through x). */
static void test_unit_cycle(void)
{
    static const char *const conv_ops[] = {"Conv"};
    static const op_list CONV = {conv_ops, 1};
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("unit-cycle", 8);
    io(g, "in", "out");
    io(g, NULL, "tq1");
    node(g, "Conv", "q0", "in", "tq0");
    node(g, "Relu", "z", "in", "tz");
    node(g, "Relu", "y", "tz", "ty");
    node(g, "Conv", "q1", "tq0,ty", "tq1");
    node(g, "Conv", "q2", "tq0", "tq2");
    node(g, "Relu", "x", "tz,tq2", "out");
    cg_target t1 = target("conv-npu", &CONV), t2 = target("relu-dsp", &RELU);
    const cg_target *ts[] = {&t1, &t2};
    cg_assignment *a = assign(m, ts, 2);
    if (a) {
        EXPECT(a->owner[idx(g, "q1")] == 0 && a->partition_of[idx(g, "q0")] ==
                                                 a->partition_of[idx(g, "q2")],
              "conv-npu takes q0, q1, q2 together");
        EXPECT(a->owner[idx(g, "x")] == 1 &&
                  a->partition_of[idx(g, "x")] != a->partition_of[idx(g, "y")],
              "x must not join y's partition");
        EXPECT(a->partition_count == 3, "%zu partitions", a->partition_count);
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

/* x -> r1 -> r2 -> r3 -> E -> r4 -> E -> r5 -> r6: partitions of 3, 1, 2. */
static cg_model *split_chain(void)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("split", 16);
    io(g, "x", "y");
    node(g, "Relu", "r1", "x", "t1");
    node(g, "Relu", "r2", "t1", "t2");
    node(g, "Relu", "r3", "t2", "t3");
    node(g, "Erf", "e1", "t3", "t4");
    node(g, "Relu", "r4", "t4", "t5");
    node(g, "Erf", "e2", "t5", "t6");
    node(g, "Relu", "r5", "t6", "t7");
    node(g, "Relu", "r6", "t7", "y");
    return m;
}

static void test_min_nodes(void)
{
    cg_model *m = split_chain();
    cg_target t = target("relu-npu", &RELU);
    t.rules.min_nodes = 2;
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->partition_count == 2, "%zu partitions", a->partition_count);
        size_t r4 = idx(m->graph, "r4");
        EXPECT(a->owner[r4] == CG_OWNER_CPU, "r4 dropped");
        EXPECT(a->dropped_count == 1 && a->dropped[0].node == r4 &&
                  strstr(a->dropped[0].reason, "min_nodes") &&
                  strstr(a->dropped[0].reason, "1 node"),
              "dropped: %zu %s", a->dropped_count,
              a->dropped_count ? a->dropped[0].reason : "");
        EXPECT(a->unsupported_count == 2, "only e1, e2 are unsupported: %zu",
              a->unsupported_count);
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_max_partitions(void)
{
    cg_model *m = split_chain();
    cg_target t = target("relu-npu", &RELU);
    t.rules.max_partitions = 1;
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->partition_count == 1 && a->partitions[0].node_count == 3 &&
                  a->partitions[0].nodes[0] == idx(m->graph, "r1"),
              "the 3-node partition is kept");
        EXPECT(a->dropped_count == 3, "r4, r5, r6 dropped: %zu", a->dropped_count);
        for (size_t i = 0; i < a->dropped_count; i++)
            EXPECT(strstr(a->dropped[i].reason, "max_partitions") != NULL, "%s",
                  a->dropped[i].reason);
        EXPECT(a->boundary_count == 1, "%zu", a->boundary_count);
    }
    cg_assignment_free(a);
    cg_model_free(m);

    /* two kept of three: the 1-node one goes */
    m = split_chain();
    t.rules.max_partitions = 2;
    a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->partition_count == 2 && a->owner[idx(m->graph, "r4")] == CG_OWNER_CPU &&
                  a->owner[idx(m->graph, "r6")] == 0,
              "keeps 3 and 2");
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_stop_ops(void)
{
    static const char *const ops[] = {"Relu", "Softmax"};
    static const op_list L = {ops, 2};
    static const char *const stops[] = {"Softmax"};
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("stop", 8);
    io(g, "x", "y");
    io(g, NULL, "side");
    node(g, "Relu", "a", "x", "ta");
    node(g, "Softmax", "s", "ta", "ts");
    node(g, "Relu", "b", "ts", "tb");
    node(g, "Relu", "c", "tb", "y");
    node(g, "Relu", "side", "ta", "side"); /* does not depend on s */
    cg_target t = target("npu", &L);
    t.rules.stop_ops = stops;
    t.rules.stop_op_count = 1;
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->owner[idx(g, "a")] == 0 && a->owner[idx(g, "side")] == 0 &&
                  a->partition_count == 1,
              "a and side on npu");
        EXPECT(a->owner[idx(g, "s")] < 0 && a->owner[idx(g, "b")] < 0 &&
                  a->owner[idx(g, "c")] < 0,
              "s and what follows it on the CPU");
        EXPECT(a->dropped_count == 3 && a->unsupported_count == 0, "dropped %zu unsupported %zu",
              a->dropped_count, a->unsupported_count);
        for (size_t i = 0; i < a->dropped_count; i++)
            EXPECT(strstr(a->dropped[i].reason, "stop_ops") != NULL, "%s", a->dropped[i].reason);
        EXPECT(a->dropped_count == 3 && strstr(a->dropped[1].reason, "Softmax 's'"), "%s",
              a->dropped_count == 3 ? a->dropped[1].reason : "");
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_no_single_ops(void)
{
    static const char *const ops[] = {"Relu", "Reshape"};
    static const op_list L = {ops, 2};
    static const char *const single[] = {"Reshape"};
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("single", 8);
    io(g, "x", "y");
    node(g, "Erf", "e1", "x", "t1");
    node(g, "Reshape", "lonely", "t1", "t2");
    node(g, "Erf", "e2", "t2", "t3");
    node(g, "Reshape", "r", "t3", "t4");
    node(g, "Relu", "relu", "t4", "y");
    cg_target t = target("nnapi", &L);
    t.rules.no_single_ops = single;
    t.rules.no_single_op_count = 1;
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->owner[idx(g, "lonely")] == CG_OWNER_CPU, "the lone Reshape stays on the CPU");
        EXPECT(a->owner[idx(g, "r")] == 0 && a->owner[idx(g, "relu")] == 0,
              "Reshape with company is kept");
        EXPECT(a->dropped_count == 1 && strstr(a->dropped[0].reason, "no_single_ops") &&
                  strstr(a->dropped[0].reason, "Reshape"),
              "%s", a->dropped_count ? a->dropped[0].reason : "(none)");
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_priority(void)
{
    static const char *const conv_ops[] = {"Conv"};
    static const char *const both_ops[] = {"Conv", "Relu"};
    static const op_list CONV = {conv_ops, 1}, BOTH = {both_ops, 2};
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("prio", 8);
    io(g, "x", "y");
    node(g, "Conv", "c1", "x", "t1");
    node(g, "Relu", "r1", "t1", "t2");
    node(g, "Conv", "c2", "t2", "t3");
    node(g, "Erf", "e", "t3", "t4");
    node(g, "Relu", "r2", "t4", "y");
    cg_target gpu = target("gpu", &CONV), cpu2 = target("xnnpack", &BOTH);
    const cg_target *ts[] = {&gpu, &cpu2};
    cg_assignment *a = assign(m, ts, 2);
    if (a) {
        EXPECT(a->owner[idx(g, "c1")] == 0 && a->owner[idx(g, "c2")] == 0, "gpu first");
        EXPECT(a->owner[idx(g, "r1")] == 1 && a->owner[idx(g, "r2")] == 1, "xnnpack next");
        EXPECT(a->owner[idx(g, "e")] == CG_OWNER_CPU, "Erf on the CPU");
        EXPECT(a->partition_count == 4, "c1 | r1 | c2 | r2: %zu", a->partition_count);
        EXPECT(a->unsupported_count == 1 && a->unsupported[0].target == 0 &&
                  strstr(a->unsupported[0].reason, "gpu's op list"),
              "the first target's reason");
        EXPECT(find_boundary(a, "t1", 0, 1) && find_boundary(a, "t2", 1, 2),
              "target-to-target crossings");
        EXPECT(cg_assign_count_owned(a, 0) == 2 && cg_assign_count_owned(a, 1) == 2 &&
                  cg_assign_count_owned(a, CG_OWNER_CPU) == 1,
              "counts");
    }
    cg_assignment_free(a);
    /* the same targets the other way round: xnnpack takes everything it can */
    const cg_target *rev[] = {&cpu2, &gpu};
    a = assign(m, rev, 2);
    if (a) {
        EXPECT(cg_assign_count_owned(a, 0) == 4 && cg_assign_count_owned(a, 1) == 0,
              "xnnpack first");
        EXPECT(a->partition_count == 2, "%zu", a->partition_count);
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_control_flow(void)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("main", 8);
    io(g, "x", "y");
    io(g, "cond", NULL);
    node(g, "Relu", "a", "x", "ta");
    cg_graph *then_g = graph_new("then", 4), *else_g = graph_new("else", 4);
    io(then_g, NULL, "o_then");
    node(then_g, "Relu", "tr", "ta", "tt");   /* reads ta from the main graph */
    node(then_g, "Erf", "te", "tt", "o_then");
    io(else_g, NULL, "o_else");
    node(else_g, "Relu", "er", "ta", "o_else");
    cg_node *iff = node(g, "If", "if", "cond", "ti");
    cg_attr *at = cg_arena_calloc(M->arena, 2, sizeof *at);
    at[0].name = "then_branch";
    at[0].type = CG_ATTR_GRAPH;
    at[0].g = then_g;
    at[1].name = "else_branch";
    at[1].type = CG_ATTR_GRAPH;
    at[1].g = else_g;
    iff->attrs = at;
    iff->attr_count = 2;
    node(g, "Relu", "c", "ti", "y");
    cg_target t = target("relu-npu", &RELU);
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        EXPECT(a->owner[idx(g, "if")] == CG_OWNER_CPU, "If stays on the CPU");
        EXPECT(a->unsupported_count == 1 && strstr(a->unsupported[0].reason, "control flow"),
              "reason");
        /* the body reads ta: a real crossing though the If lists only cond */
        EXPECT(find_boundary(a, "ta", 0, -1) != NULL, "ta leaves partition 0 for the If body");
        EXPECT(a->partition_count == 2, "%zu", a->partition_count);
    }
    cg_assignment_free(a);

    cg_error err;
    cg_error_clear(&err);
    cg_placement *pl = NULL;
    EXPECT(cg_placement_build(m, NULL, ts, 1, &pl, &err) == CG_OK, "%s", err.msg);
    if (pl) {
        EXPECT(pl->body_count == 2, "%zu bodies", pl->body_count);
        if (pl->body_count == 2) {
            EXPECT(strcmp(pl->bodies[0].path, "if/then_branch") == 0, "%s", pl->bodies[0].path);
            EXPECT(cg_assign_count_owned(pl->bodies[0].assignment, 0) == 1 &&
                      cg_assign_count_owned(pl->bodies[0].assignment, CG_OWNER_CPU) == 1,
                  "then: 1 of 2 on relu-npu");
            EXPECT(cg_assign_count_owned(pl->bodies[1].assignment, 0) == 1 &&
                      pl->bodies[1].assignment->partition_count == 1,
                  "else: all on relu-npu");
            check_invariants(pl->bodies[0].assignment);
        }
        /* the report renders the bodies */
        json_t *j = cg_assign_report_json(pl);
        EXPECT(j && json_array_size(json_object_get(j, "bodies")) == 2, "JSON bodies");
        json_decref(j);
    }
    cg_placement_free(pl);
    cg_model_free(m);
}

static void test_fail_policy(void)
{
    cg_model *m = split_chain();
    cg_target t = target("tflm", &RELU);
    t.fallback = CG_FALLBACK_FAIL;
    t.description = "TFLite Micro";
    const cg_target *ts[] = {&t};
    cg_assignment *a = assign(m, ts, 1);
    if (a) {
        char msg[512];
        EXPECT(cg_assign_init_failure(a, NULL, msg, sizeof msg), "init failure expected");
        EXPECT(strstr(msg, "tflm: node 'e1' (Erf) is not supported") &&
                  strstr(msg, "has no fallback: Erf is not in tflm's op list"),
              "%s", msg);
        char verdict[256];
        EXPECT(cg_assign_verdict(a, NULL, verdict, sizeof verdict) == CG_VERDICT_INIT_FAILURE,
              "%s", verdict);
        /* under CPU fallback the same placement is merely partial */
        t.fallback = CG_FALLBACK_CPU;
        EXPECT(!cg_assign_init_failure(a, NULL, msg, sizeof msg), "%s", msg);
    }
    cg_assignment_free(a);
    cg_model_free(m);
}

static void test_bad_graphs(void)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("cyclic", 4);
    node(g, "Relu", "p", "tq", "tp");
    node(g, "Relu", "q", "tp", "tq");
    cg_target t = target("relu-npu", &RELU);
    const cg_target *ts[] = {&t};
    cg_error err;
    cg_error_clear(&err);
    cg_assignment *a = NULL;
    EXPECT(cg_assign(m, NULL, ts, 1, &a, &err) == CG_INVALID && !a && strstr(err.msg, "cycle"),
          "%s", err.msg);
    cg_model_free(m);

    m = model_new();
    g = m->graph = graph_new("ssa", 4);
    node(g, "Relu", "p", "x", "t");
    node(g, "Relu", "q", "x", "t");
    cg_error_clear(&err);
    EXPECT(cg_assign(m, NULL, ts, 1, &a, &err) == CG_INVALID && strstr(err.msg, "'t'") &&
              strstr(err.msg, "'q'"),
          "%s", err.msg);
    cg_model_free(m);

    /* no targets: everything on the CPU, nothing unsupported */
    m = split_chain();
    a = assign(m, NULL, 0);
    if (a)
        EXPECT(a->partition_count == 0 && a->boundary_count == 0 &&
                  cg_assign_count_owned(a, CG_OWNER_CPU) == 8,
              "all CPU");
    cg_assignment_free(a);
    cg_model_free(m);
}

/* Random DAGs, three targets with overlapping op lists and rules: every
 * assignment must keep the invariants, and every partition must be
 * connected through its own edges. */
static void check_connected(const cg_assignment *a)
{
    const cg_graph *g = a->graph;
    for (size_t p = 0; p < a->partition_count; p++) {
        const cg_partition *pp = &a->partitions[p];
        size_t *comp = malloc(pp->node_count * sizeof *comp);
        for (size_t k = 0; k < pp->node_count; k++)
            comp[k] = k;
        /* union by repeated relabelling: tiny partitions */
        bool changed = true;
        while (changed) {
            changed = false;
            for (size_t i = 0; i < pp->node_count; i++)
                for (size_t j = 0; j < pp->node_count; j++) {
                    const cg_node *ni = &g->nodes[pp->nodes[i]], *nj = &g->nodes[pp->nodes[j]];
                    bool edge = false;
                    for (size_t x = 0; x < nj->input_count && !edge; x++)
                        edge = strcmp(nj->inputs[x], ni->outputs[0]) == 0;
                    if (edge && comp[i] != comp[j]) {
                        size_t lo = comp[i] < comp[j] ? comp[i] : comp[j];
                        comp[i] = comp[j] = lo;
                        changed = true;
                    }
                }
        }
        for (size_t k = 0; k < pp->node_count; k++)
            EXPECT(comp[k] == 0, "partition %zu is not connected", p);
        free(comp);
    }
}

static void test_random(void)
{
    static const char *const l1[] = {"A", "B"}, *const l2[] = {"B", "C"}, *const l3[] = {"C", "D"};
    static const op_list L1 = {l1, 2}, L2 = {l2, 2}, L3 = {l3, 2};
    static const char *const stop[] = {"D"};
    static const char *const single[] = {"C"};
    cg_target t1 = target("t1", &L1), t2 = target("t2", &L2), t3 = target("t3", &L3);
    t2.rules.min_nodes = 2;
    t2.rules.no_single_ops = single;
    t2.rules.no_single_op_count = 1;
    t3.rules.max_partitions = 2;
    t3.rules.stop_ops = stop;
    t3.rules.stop_op_count = 1;
    const cg_target *ts[] = {&t1, &t2, &t3};
    unsigned seed = 12345;
    size_t partitions = 0;
    for (int round = 0; round < 300; round++) {
        cg_model *m = model_new();
        size_t n = 5 + (size_t)(round % 40);
        cg_graph *g = m->graph = graph_new("random", n + 1);
        io(g, "x", NULL);
        static const char *const ops[] = {"A", "B", "C", "D", "E"};
        for (size_t i = 0; i < n; i++) {
            char name[16], out[16], ins[64] = "";
            snprintf(name, sizeof name, "n%zu", i);
            snprintf(out, sizeof out, "v%zu", i);
            seed = seed * 1103515245u + 12345u;
            size_t fan = 1 + (seed >> 16) % 3, len = 0;
            for (size_t f = 0; f < fan; f++) {
                seed = seed * 1103515245u + 12345u;
                size_t from = i ? (seed >> 16) % (i + 1) : 0;
                if (from == i)
                    len += (size_t)snprintf(ins + len, sizeof ins - len, "%sx", f ? "," : "");
                else
                    len += (size_t)snprintf(ins + len, sizeof ins - len, "%sv%zu", f ? "," : "",
                                            from);
            }
            seed = seed * 1103515245u + 12345u;
            node(g, ops[(seed >> 16) % 5], name, ins, out);
        }
        g->outputs[g->output_count++].name = g->nodes[n - 1].outputs[0];
        cg_assignment *a = assign(m, ts, 3);
        if (a) {
            check_connected(a);
            partitions += a->partition_count;
            for (size_t p = 0; p < a->partition_count; p++) {
                const cg_partition *pp = &a->partitions[p];
                if (pp->target == 1)
                    EXPECT(pp->node_count >= 2, "t2 min_nodes");
            }
            size_t t3parts = 0;
            for (size_t p = 0; p < a->partition_count; p++)
                t3parts += a->partitions[p].target == 2;
            EXPECT(t3parts <= 2, "t3 max_partitions: %zu", t3parts);
        }
        cg_assignment_free(a);
        cg_model_free(m);
    }
    printf("random graphs: 300 assigned, %zu partitions, invariants hold\n", partitions);
}

/* --- 10,000 nodes ------------------------------------------------------------------ */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Residual blocks (Conv, Relu, Conv, Add with the block input, Relu), with
 * an op the target lacks every `every` nodes and a long skip connection
 * every 50 blocks, like a converted ResNet/transformer stack. */
static cg_model *synthetic(size_t nodes, size_t every)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("synthetic", nodes + 8);
    io(g, "x", NULL);
    char prev[32] = "x", block_in[32] = "x", far[32] = "x";
    char name[32], out[32], ins[96];
    static const char *const block[] = {"Conv", "Relu", "Conv", "Add", "Relu"};
    for (size_t i = 0; i < nodes; i++) {
        size_t slot = i % 5;
        const char *op = block[slot];
        if (every && i % every == every - 1)
            op = "Erf";
        snprintf(name, sizeof name, "n%zu", i);
        snprintf(out, sizeof out, "v%zu", i);
        if (slot == 3)
            snprintf(ins, sizeof ins, "%s,%s", prev, block_in);
        else if (slot == 0 && i % 250 == 0 && i)
            snprintf(ins, sizeof ins, "%s,%s", prev, far);
        else
            snprintf(ins, sizeof ins, "%s", prev);
        node(g, op, name, ins, out);
        if (slot == 4)
            snprintf(block_in, sizeof block_in, "%s", out);
        if (i % 250 == 0)
            snprintf(far, sizeof far, "%s", out);
        snprintf(prev, sizeof prev, "%s", out);
    }
    g->outputs[g->output_count++].name = g->nodes[nodes - 1].outputs[0];
    return m;
}

/* Two chains, cross-linked at every step: supported nodes keep reading the
 * unsupported chain, so nearly every node needs a cycle search. */
static cg_model *ladder(size_t nodes)
{
    cg_model *m = model_new();
    cg_graph *g = m->graph = graph_new("ladder", nodes + 8);
    io(g, "x", NULL);
    char a[32] = "x", b[32] = "x", name[32], out[32], ins[80];
    for (size_t i = 0; i + 1 < nodes; i += 2) {
        snprintf(name, sizeof name, "u%zu", i);
        snprintf(out, sizeof out, "vu%zu", i);
        snprintf(ins, sizeof ins, "%s", b);
        node(g, "Erf", name, ins, out);
        snprintf(b, sizeof b, "%s", out);
        snprintf(name, sizeof name, "s%zu", i);
        snprintf(out, sizeof out, "vs%zu", i);
        snprintf(ins, sizeof ins, "%s,%s", a, b);
        node(g, "Relu", name, ins, out);
        snprintf(a, sizeof a, "%s", out);
    }
    g->outputs[g->output_count++].name = g->nodes[g->node_count - 1].outputs[0];
    return m;
}

static void test_10k(void)
{
    static const char *const ops[] = {"Conv", "Relu", "Add"};
    static const op_list L = {ops, 3};
    cg_target t = target("npu", &L);
    const cg_target *ts[] = {&t};
    cg_error err;
    cg_error_clear(&err);

    struct {
        const char *what;
        cg_model *m;
    } cases[] = {{"residual, 1 unsupported op per 20", synthetic(10000, 20)},
                 {"residual, 1 unsupported op per 997", synthetic(10000, 997)},
                 {"ladder (worst case for the cycle search)", ladder(10000)}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cg_assignment *a = NULL;
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now_ms();
            cg_status st = cg_assign(cases[c].m, NULL, ts, 1, &a, &err);
            double dt = now_ms() - t0;
            EXPECT(st == CG_OK, "%s", err.msg);
            if (dt < best)
                best = dt;
            if (rep < 2)
                cg_assignment_free(a);
        }
        if (a) {
            printf("cg_assign, 10,000 nodes, %s: %.2f ms (best of 3); %zu partitions, "
                   "%zu crossings, %zu nodes on the CPU\n",
                   cases[c].what, best, a->partition_count, a->boundary_count,
                   cg_assign_count_owned(a, CG_OWNER_CPU));
            /* the O(U^2) invariant check is too slow for 10k; spot-check */
            EXPECT(cg_assign_count_owned(a, 0) + cg_assign_count_owned(a, CG_OWNER_CPU) == 10000,
                  "counts");
        }
        /* the time is a figure to read, not a check: a bound on wall time
         * failed under load (1018 and 1468 ms at load 21 under ASan) and
         * proves nothing on a quiet machine */
        cg_assignment_free(a);
        cg_model_free(cases[c].m);
    }
    /* the invariant check on a smaller version of each */
    cg_model *m = synthetic(600, 20);
    cg_assignment_free(assign(m, ts, 1));
    cg_model_free(m);
    m = ladder(300);
    cg_assignment_free(assign(m, ts, 1));
    cg_model_free(m);
}

int main(void)
{
    test_chain();
    test_diamond();
    test_validator();
    test_unit_cycle();
    test_min_nodes();
    test_max_partitions();
    test_stop_ops();
    test_no_single_ops();
    test_priority();
    test_control_flow();
    test_fail_policy();
    test_bad_graphs();
    test_random();
    test_10k();
    return test_done("test_partition");
}
