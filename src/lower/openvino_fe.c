/*
 * "openvino-onnx-fe": the graph OpenVINO's ONNX frontend hands to a device
 * plugin, as far as it changes placement.
 *
 * The frontend translates every ONNX node into OpenVINO opset ops; a node
 * without a translator fails the whole conversion ("OpenVINO does not
 * support the following ONNX operations", profile openvino: fallback
 * "fail"). Sources, openvinotoolkit/openvino, src/frontends/onnx/frontend/
 * src (the newest stored revision of each file; the repository snapshot is
 * too large to bring here, so no one tag could be read whole):
 *
 *  - core/graph.cpp (Graph::Graph): every initializer becomes a
 *    v0::Constant, and a graph input that has an initializer is not made a
 *    Parameter ("Check if a Constant node was already created from an
 *    initializer"): an initializer is a constant even where ONNX lets an
 *    input override it.
 *  - op/constant.cpp: a Constant node is a v0::Constant, data, not an op a
 *    plugin runs: removed (its value becomes an initializer here).
 *  - op/identity.cpp (commit 03a28ede06b7): an Identity of a v0::Constant
 *    returns its input, marked "optimized out" (no op is created); any
 *    other Identity is a v16::Identity, which stays. (Earlier revisions
 *    removed every Identity (2024), or emitted a Slice for EliminateSlice
 *    to remove (2025); this follows the newest.)
 *  - op/dropout.cpp (commit e298f9faf561): in inference mode the output is
 *    the input (removed); when the mask output is used the node becomes
 *    Broadcast(Constant true, ShapeOf(x)), kept here as the one node it
 *    stands for; training mode (opset >= 12 training_mode true, opset < 7
 *    is_test 0) fails the conversion ("Training mode is not supported for
 *    Dropout op"): the node stays for the profile's rule to refuse.
 *  - utils/variadic.hpp: Sum, Max, Min and Mean with a single input return
 *    it, marked optimized out: removed.
 *
 * Every other node is one translation, counted as one node: its opset ops
 * (Gemm's MatMul, Multiply and Add; GlobalAveragePool's ReduceMean) all run
 * on the one device the whole model goes to, so they move nothing.
 * Removed nodes whose output is a graph output stay (the frontend then
 * names the producer's tensor; the count differs by that node). The rules
 * apply in every graph, control-flow bodies included (the If and Loop
 * translators convert their bodies with the same translators), reading
 * only the graph's own initializers.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "lower/lgraph.h"
#include "lower/lower_internal.h"

/* Whether any output of n is a graph output of g. */
static bool ov_feeds_graph_output(lg_graph *g, const lg_node *n)
{
    for (size_t o = 0; o < n->output_count; o++)
        if (n->outputs[o][0] && lg_is_graph_output(g, n->outputs[o]))
            return true;
    return false;
}

/* Dropout in inference mode with its mask unused (dropout.cpp). */
static bool ov_dropout_passes_through(lg_graph *g, const lg_node *n, int64_t opset)
{
    if (n->output_count > 1 && n->outputs[1][0] && lg_use_count(g, n->outputs[1]))
        return false; /* the mask is Broadcast(ShapeOf): ops remain */
    if (opset >= 12) {
        if (n->input_count > 2 && n->inputs[2][0]) {
            const cg_tensor_proto *t = lg_initializer(g, n->inputs[2], false);
            double v = 0;
            if (!t || !lg_tensor_f64(t, 0, &v) || v != 0)
                return false; /* training, or not a constant: the conversion fails */
        }
        return true;
    }
    if (opset >= 7)
        return true;
    int64_t is_test = 0;
    (void)lg_attr_int(n, "is_test", &is_test);
    return is_test != 0;
}

static bool ov_is_variadic(const lg_node *n)
{
    static const char *const ops[] = {"Sum", "Max", "Min", "Mean"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (lg_is_op(n, "", ops[i]))
            return true;
    return false;
}

static size_t ov_present_inputs(const lg_node *n)
{
    size_t k = 0;
    for (size_t i = 0; i < n->input_count; i++)
        k += n->inputs[i][0] != '\0';
    return k;
}

/* The frontend returns input 0 as output 0: readers of the output read the
 * input, and the node is gone. */
static void ov_pass_through(lg_graph *g, size_t ni, const char *by)
{
    lg_node *n = &g->nodes[ni];
    if (n->outputs[0][0] && lg_use_count(g, n->outputs[0]))
        lg_rename_uses(g, n->outputs[0], n->inputs[0]);
    lg_remove(g, ni, by, SIZE_MAX);
}

/* A Constant node's value as an initializer of g under its output's name. */
static cg_status ov_constant(lg_graph *g, size_t ni, cg_error *err)
{
    lg_node *n = &g->nodes[ni];
    if (n->output_count != 1 || !n->outputs[0][0])
        return CG_OK;
    cg_tensor_proto *out = NULL;
    bool ok = false;
    char why[CG_ERROR_MSG_MAX];
    cg_status st = lg_eval_node(g, n, &out, &ok, why, sizeof why, err);
    if (st != CG_OK)
        return st;
    if (!ok) {
        lg_note(g->model, "Constant '%s' is kept: its value could not be read (%s)", n->name,
                why);
        return CG_OK;
    }
    if (!lg_add_init(g, out))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    lg_remove(g, ni, "v0::Constant (op/constant.cpp)", SIZE_MAX);
    return CG_OK;
}

/* lg_walk's visit: what the frontend makes of node ni; user is the
 * model's ONNX opset (an int64_t). */
static cg_status ov_node(lg_graph *g, size_t ni, void *user, cg_error *err)
{
    int64_t opset = *(const int64_t *)user;
    lg_node *n = &g->nodes[ni];
    if (ov_feeds_graph_output(g, n))
        return CG_OK;
    if (lg_is_op(n, "", "Constant"))
        return ov_constant(g, ni, err);
    if (n->output_count < 1)
        return CG_OK;
    if (lg_is_op(n, "", "Identity")) {
        if (n->input_count >= 1 && n->inputs[0][0] && lg_initializer(g, n->inputs[0], false))
            ov_pass_through(g, ni, "optimized out: Identity of a constant (op/identity.cpp)");
    } else if (lg_is_op(n, "", "Dropout")) {
        if (n->input_count >= 1 && n->inputs[0][0] && ov_dropout_passes_through(g, n, opset))
            ov_pass_through(g, ni, "optimized out: Dropout in inference (op/dropout.cpp)");
    } else if (ov_is_variadic(n) && ov_present_inputs(n) == 1 && n->inputs[0][0]) {
        ov_pass_through(g, ni, "optimized out: a single-input variadic op (utils/variadic.hpp)");
    }
    return CG_OK;
}

cg_status cg_lower_openvino_fe(lg_model *m, cg_error *err)
{
    int64_t opset = cg_model_opset(m->source, ""); /* -1 when none */
    cg_status st = lg_walk(m->main, ov_node, &opset, err);
    if (st == CG_OK && m->oom)
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    return st;
}
