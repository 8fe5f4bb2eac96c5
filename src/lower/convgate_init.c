/*
 * "convgate-init": the graph convgate's own runtime executes, which is the
 * graph an executing target (xnnpack) is asked about.
 *
 * When a runtime is built, src/run/fold.c computes once every node whose
 * inputs are all constant and keeps its outputs as initializers; frames
 * skip those steps on every run. So a Constant node, an Identity of a
 * weight (torchvision's exports hold 47 of them in resnet50) or a Reshape
 * of an initializer never runs: an executing target never sees it and the
 * CPU never runs it per inference. This lowering replays that pass on the
 * editable graph with fold.c's conditions (`foldable` and the size rule in
 * `fold_plan`), in the same order (bodies first, then the node, in
 * topological order; every graph, bodies included, reading only its own
 * initializers), so that placement counts the nodes that really run.
 *
 * A node is folded when it has outputs and no subgraph, is not a random op,
 * every present input is an initializer of its own graph that no graph
 * input overrides (or the output of a node folded before it), the
 * reference kernels evaluate it, and every output is at most 16 MiB or at
 * most twice its inputs' bytes. fold.c's other exceptions do not change
 * the graph a target partitions: nodes an observer must see (a debugging
 * run), fp16-emulated nodes (gate 3's paths, not placement), and nodes
 * inside an executing partition (the xnnpack target refuses a node whose
 * inputs are all constant: constant subgraphs stay on the CPU, where they
 * are folded).
 *
 * One exception keeps a folded node: an executing target compiles its
 * partitions from the model (cg_partition_desc), not from the folded plan,
 * so the only constants it can read are initializers, Constant nodes and
 * Identity nodes of those (the xnnpack target's const_lookup). A folded
 * node of another op whose value a kept node reads (ssdlite's pads, a Cast
 * of constants, read by a Pad) is therefore kept, as the CPU node the
 * target sees: were its value an initializer here, the target would take a
 * reader that it refuses when it runs. It still runs once, at init; the
 * lowering's notes count these nodes.
 *
 * tests/unit/test_lower.c checks, on every example and zoo model, that the
 * nodes this lowering removes are the steps the runtime folds, less the
 * kept ones, each of which a node the runtime does not fold reads.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/fold_policy.h"
#include "lower/lgraph.h"
#include "lower/lower_internal.h"

#define CI_BY "constant folding at init"

static bool ci_has_bodies(const lg_node *n)
{
    for (size_t a = 0; a < n->attr_count; a++)
        if ((n->bodies && n->bodies[a]) || n->attrs[a].type == CG_ATTR_GRAPH ||
            n->attrs[a].type == CG_ATTR_GRAPHS)
            return true;
    return false;
}

/* Bytes of an initializer's data (strings: their lengths). */
static size_t ci_bytes(const cg_tensor_proto *tp)
{
    if (!tp)
        return 0;
    if (tp->string_count) {
        size_t b = 0;
        for (size_t i = 0; i < tp->string_count; i++)
            b += tp->string_data[i].len;
        return b;
    }
    int64_t numel = 0;
    size_t bytes = 0;
    if (!lg_tensor_numel(tp, &numel) || numel < 0 ||
        !cg_tensor_byte_size((cg_dtype)tp->data_type, numel, &bytes))
        return 0;
    return bytes;
}

/* fold.c's `foldable`: judged before evaluating the node. */
static bool ci_foldable(lg_graph *g, const lg_node *n)
{
    if (!n->op_type[0] || !n->output_count || ci_has_bodies(n) ||
        cg_fold_op_is_random(n->op_type))
        return false;
    for (size_t i = 0; i < n->input_count; i++)
        if (n->inputs[i][0] && !lg_constant(g, n->inputs[i], false))
            return false;
    return true;
}

/* lg_walk's visit: folds node ni when fold.c would (an lg_visit_fn). */
static cg_status ci_node(lg_graph *g, size_t ni, void *user, cg_error *err)
{
    (void)user;
    lg_node *n = &g->nodes[ni];
    if (!ci_foldable(g, n))
        return CG_OK;
    size_t in_bytes = 0;
    for (size_t i = 0; i < n->input_count; i++)
        if (n->inputs[i][0])
            in_bytes += ci_bytes(lg_constant(g, n->inputs[i], false));
    cg_tensor_proto **outs = calloc(n->output_count, sizeof *outs);
    if (!outs)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    bool ok = false;
    char why[CG_ERROR_MSG_MAX];
    cg_status st = lg_eval_node(g, n, outs, &ok, why, sizeof why, err);
    /* a node that fails here fails the run where it happens: it stays */
    for (size_t o = 0; st == CG_OK && ok && o < n->output_count; o++) {
        size_t b = ci_bytes(outs[o]);
        ok = cg_fold_size_ok(b, in_bytes);
    }
    for (size_t o = 0; st == CG_OK && ok && o < n->output_count; o++)
        if (outs[o] && !lg_add_init(g, outs[o]))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
    free(outs);
    if (st == CG_OK && ok)
        lg_remove(g, ni, CI_BY, SIZE_MAX);
    return st;
}

/* n is the ai.onnx op `op`, live or removed. */
static bool ci_is(const lg_node *n, const char *op)
{
    return (!n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

/* Whether an executing target reads name as a constant at compile: an
 * initializer of the source graph, or the output of a Constant node or of
 * an Identity of such a value (the xnnpack target's const_lookup). */
static bool ci_readable(lg_graph *g, const char *name, int depth)
{
    for (size_t i = 0; i < g->source->initializer_count; i++)
        if (g->source->initializers[i].name && !strcmp(g->source->initializers[i].name, name))
            return true;
    for (size_t i = 0; i < g->node_count; i++) {
        const lg_node *n = &g->nodes[i];
        if (n->output_count < 1 || strcmp(n->outputs[0], name) != 0)
            continue;
        if (ci_is(n, "Constant"))
            return true;
        return ci_is(n, "Identity") && n->input_count == 1 && n->inputs[0][0] &&
               depth < 16 && ci_readable(g, n->inputs[0], depth + 1);
    }
    return false;
}

/* Brings back the folded nodes whose values a kept node reads and that an
 * executing target cannot read (see the top); returns how many. */
static size_t ci_keep_read(lg_graph *g)
{
    size_t kept = 0;
    bool *keep = calloc(g->node_count + 1, sizeof *keep);
    if (!keep) {
        g->model->oom = true;
        return 0;
    }
    /* judged on the folded graph, before any node comes back */
    for (size_t i = 0; i < g->node_count; i++) {
        const lg_node *n = &g->nodes[i];
        if (!n->dead || !n->removed_by || strcmp(n->removed_by, CI_BY) != 0)
            continue;
        for (size_t o = 0; o < n->output_count && !keep[i]; o++)
            keep[i] = n->outputs[o][0] && !ci_readable(g, n->outputs[o], 0) &&
                      (lg_use_count(g, n->outputs[o]) || lg_is_graph_output(g, n->outputs[o]));
    }
    for (size_t i = 0; i < g->node_count; i++) {
        lg_node *n = &g->nodes[i];
        if (!keep[i])
            continue;
        for (size_t o = 0; o < n->output_count; o++)
            for (size_t k = 0; n->outputs[o][0] && k < g->init_count; k++)
                if (!g->inits[k].dead && !strcmp(g->inits[k].name, n->outputs[o]))
                    g->inits[k].dead = true;
        n->dead = false;
        n->removed_by = NULL;
        kept++;
    }
    free(keep);
    if (kept)
        lg_touch(g);
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t a = 0; !g->nodes[i].dead && g->nodes[i].bodies && a < g->nodes[i].attr_count;
             a++)
            if (g->nodes[i].bodies[a])
                kept += ci_keep_read(g->nodes[i].bodies[a]);
    return kept;
}

cg_status cg_lower_convgate_init(lg_model *m, cg_error *err)
{
    cg_status st = lg_walk(m->main, ci_node, NULL, err);
    size_t kept = st == CG_OK ? ci_keep_read(m->main) : 0;
    if (kept)
        lg_note(m, "%zu node%s the runtime computes once, at init, %s kept: %s value%s read "
                "by a node that runs, and an executing target reads only initializers, Constant "
                "and Identity of them at compile", kept, kept == 1 ? "" : "s",
                kept == 1 ? "is" : "are", kept == 1 ? "its" : "their", kept == 1 ? " is" : "s are");
    if (st == CG_OK && m->oom)
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    return st;
}
