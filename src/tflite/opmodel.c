/*
 * A .tflite's operators as the graph placement judges: one cg_node per
 * operator of the main subgraph, as LiteRT's delegates see them (the GPU
 * delegate's GetOpsToReplace and XNNPACK's VisitNode are asked about each
 * TfLiteNode of the primary subgraph's execution plan).
 *
 * Each node has domain CG_TFLITE_OPS_DOMAIN ("tflite"; custom ops
 * CG_TFLITE_CUSTOM_DOMAIN with the custom code as op type), op type the
 * builtin's name ("CONV_2D"), and attributes: `version` (the OperatorCode's
 * version, which the delegates' parsers compare with their maximum) and the
 * decoded builtin options under their schema.fbs field names (enums as
 * their names: padding "SAME", fused_activation_function "RELU6",
 * weights_format "DEFAULT", mode "REFLECT"; bools as 0/1). Values are the
 * tensors, named by their name where it is unique in the subgraph, else
 * "name#index" ("#index" for an unnamed one). Tensors with data are
 * initializers (zero-copy: raw_data points into the .tflite's mapping);
 * every tensor is declared in value_info with its static shape, which is
 * what an interpreter that is not resized allocates.
 *
 * Invariant: the model borrows the cg_tflite_model's bytes and strings
 * (raw_data, names that need no suffix); it must outlive the model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/tflite.h"
#include "core/arena.h"
#include "core/strmap.h"

typedef struct om_ctx {
    cg_model *model;
    const cg_tflite_model *src;
    const cg_tflite_subgraph *g;
    const char **names; /* per tensor of g */
    cg_error *err;
} om_ctx;

static cg_status om_nomem(om_ctx *c)
{
    return cg_error_set(c->err, CG_NOMEM, "%s: out of memory building the operator graph",
                        c->src->path ? c->src->path : "tflite");
}

/* Unique value names for the tensors of the subgraph. */
static cg_status om_names(om_ctx *c)
{
    const cg_tflite_subgraph *g = c->g;
    cg_strmap seen = {0};
    c->names = cg_arena_calloc(c->model->arena, g->tensor_count ? g->tensor_count : 1,
                               sizeof *c->names);
    if (!c->names || !cg_strmap_reserve(&seen, 2 * g->tensor_count + 1)) {
        cg_strmap_free(&seen);
        return om_nomem(c);
    }
    /* first pass: names used once keep their name */
    for (size_t i = 0; i < g->tensor_count; i++) {
        const char *n = g->tensors[i].name;
        if (n && *n && cg_strmap_add(&seen, n, i) != i)
            cg_strmap_set(&seen, n, SIZE_MAX - 1); /* taken twice */
    }
    for (size_t i = 0; i < g->tensor_count; i++) {
        const char *n = g->tensors[i].name;
        if (n && *n && cg_strmap_get(&seen, n) == i) {
            c->names[i] = n;
            continue;
        }
        char buf[64];
        size_t len = (n ? strlen(n) : 0) + sizeof buf;
        char *s = cg_arena_alloc(c->model->arena, len);
        if (!s) {
            cg_strmap_free(&seen);
            return om_nomem(c);
        }
        snprintf(s, len, "%s#%zu", n ? n : "", i);
        c->names[i] = s;
    }
    cg_strmap_free(&seen);
    return CG_OK;
}

/* --- attributes from the builtin options ------------------------------------------ */

typedef struct om_attrs {
    cg_attr a[16];
    size_t n;
} om_attrs;

static void at_int(om_attrs *as, const char *name, int64_t v)
{
    if (as->n == sizeof as->a / sizeof as->a[0])
        return;
    cg_attr *a = &as->a[as->n++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = CG_ATTR_INT;
    a->has_type = true;
    a->i = v;
    a->has_i = true;
}

static void at_float(om_attrs *as, const char *name, float v)
{
    if (as->n == sizeof as->a / sizeof as->a[0])
        return;
    cg_attr *a = &as->a[as->n++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = CG_ATTR_FLOAT;
    a->has_type = true;
    a->f = v;
    a->has_f = true;
}

static void at_str(om_attrs *as, const char *name, const char *v)
{
    if (as->n == sizeof as->a / sizeof as->a[0])
        return;
    cg_attr *a = &as->a[as->n++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = CG_ATTR_STRING;
    a->has_type = true;
    a->s.data = (const uint8_t *)v;
    a->s.len = strlen(v);
}

/* enum ActivationFunctionType / Padding / FullyConnectedOptionsWeightsFormat /
 * MirrorPadMode names (schema.fbs); values outside the enums keep a number. */
static const char *act_name(int8_t v)
{
    static const char *const n[] = {"NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH",
                                    "SIGN_BIT"};
    return v >= 0 && (size_t)v < sizeof n / sizeof n[0] ? n[v] : "INVALID";
}

static const char *padding_name(int8_t v)
{
    return v == CG_TFLITE_PADDING_SAME ? "SAME" : v == CG_TFLITE_PADDING_VALID ? "VALID"
                                                                               : "INVALID";
}

static void at_act(om_attrs *as, int8_t v) { at_str(as, "fused_activation_function", act_name(v)); }

static void options_attrs(const cg_tflite_options *o, om_attrs *as)
{
    if (!o->decoded)
        return;
    switch (o->type) {
    case CG_TFLITE_OPT_Conv2DOptions:
        at_str(as, "padding", padding_name(o->u.conv2d.padding));
        at_act(as, o->u.conv2d.fused_activation_function);
        at_int(as, "stride_w", o->u.conv2d.stride_w);
        at_int(as, "stride_h", o->u.conv2d.stride_h);
        at_int(as, "dilation_w_factor", o->u.conv2d.dilation_w_factor);
        at_int(as, "dilation_h_factor", o->u.conv2d.dilation_h_factor);
        break;
    case CG_TFLITE_OPT_DepthwiseConv2DOptions:
        at_str(as, "padding", padding_name(o->u.depthwise.padding));
        at_act(as, o->u.depthwise.fused_activation_function);
        at_int(as, "stride_w", o->u.depthwise.stride_w);
        at_int(as, "stride_h", o->u.depthwise.stride_h);
        at_int(as, "depth_multiplier", o->u.depthwise.depth_multiplier);
        at_int(as, "dilation_w_factor", o->u.depthwise.dilation_w_factor);
        at_int(as, "dilation_h_factor", o->u.depthwise.dilation_h_factor);
        break;
    case CG_TFLITE_OPT_Pool2DOptions:
        at_str(as, "padding", padding_name(o->u.pool2d.padding));
        at_act(as, o->u.pool2d.fused_activation_function);
        at_int(as, "stride_w", o->u.pool2d.stride_w);
        at_int(as, "stride_h", o->u.pool2d.stride_h);
        at_int(as, "filter_width", o->u.pool2d.filter_width);
        at_int(as, "filter_height", o->u.pool2d.filter_height);
        break;
    case CG_TFLITE_OPT_FullyConnectedOptions:
        at_act(as, o->u.fully_connected.fused_activation_function);
        at_str(as, "weights_format",
               o->u.fully_connected.weights_format == 0   ? "DEFAULT"
               : o->u.fully_connected.weights_format == 1 ? "SHUFFLED4x16INT8"
                                                          : "INVALID");
        at_int(as, "keep_num_dims", o->u.fully_connected.keep_num_dims);
        break;
    case CG_TFLITE_OPT_TransposeConvOptions:
        at_str(as, "padding", padding_name(o->u.transpose_conv.padding));
        at_act(as, o->u.transpose_conv.fused_activation_function);
        at_int(as, "stride_w", o->u.transpose_conv.stride_w);
        at_int(as, "stride_h", o->u.transpose_conv.stride_h);
        break;
    case CG_TFLITE_OPT_AddOptions:
    case CG_TFLITE_OPT_SubOptions:
    case CG_TFLITE_OPT_MulOptions:
    case CG_TFLITE_OPT_DivOptions:
    case CG_TFLITE_OPT_L2NormOptions:
        at_act(as, o->u.activation.fused_activation_function);
        break;
    case CG_TFLITE_OPT_ConcatenationOptions:
        at_int(as, "axis", o->u.concat.axis);
        at_act(as, o->u.concat.fused_activation_function);
        break;
    case CG_TFLITE_OPT_StridedSliceOptions:
        at_int(as, "begin_mask", o->u.strided_slice.begin_mask);
        at_int(as, "end_mask", o->u.strided_slice.end_mask);
        at_int(as, "ellipsis_mask", o->u.strided_slice.ellipsis_mask);
        at_int(as, "new_axis_mask", o->u.strided_slice.new_axis_mask);
        at_int(as, "shrink_axis_mask", o->u.strided_slice.shrink_axis_mask);
        at_int(as, "offset", o->u.strided_slice.offset);
        break;
    case CG_TFLITE_OPT_GatherOptions:
        at_int(as, "axis", o->u.gather.axis);
        at_int(as, "batch_dims", o->u.gather.batch_dims);
        break;
    case CG_TFLITE_OPT_ResizeBilinearOptions:
    case CG_TFLITE_OPT_ResizeNearestNeighborOptions:
        at_int(as, "align_corners", o->u.resize.align_corners);
        at_int(as, "half_pixel_centers", o->u.resize.half_pixel_centers);
        break;
    case CG_TFLITE_OPT_BatchMatMulOptions:
        at_int(as, "adj_x", o->u.batch_matmul.adj_x);
        at_int(as, "adj_y", o->u.batch_matmul.adj_y);
        break;
    case CG_TFLITE_OPT_PackOptions:
        at_int(as, "values_count", o->u.axis_count.count);
        at_int(as, "axis", o->u.axis_count.axis);
        break;
    case CG_TFLITE_OPT_UnpackOptions:
        at_int(as, "num", o->u.axis_count.count);
        at_int(as, "axis", o->u.axis_count.axis);
        break;
    case CG_TFLITE_OPT_SoftmaxOptions: at_float(as, "beta", o->u.f); break;
    case CG_TFLITE_OPT_LeakyReluOptions: at_float(as, "alpha", o->u.f); break;
    case CG_TFLITE_OPT_SpaceToDepthOptions:
    case CG_TFLITE_OPT_DepthToSpaceOptions: at_int(as, "block_size", o->u.i); break;
    case CG_TFLITE_OPT_SplitOptions:
    case CG_TFLITE_OPT_SplitVOptions: at_int(as, "num_splits", o->u.i); break;
    case CG_TFLITE_OPT_OneHotOptions: at_int(as, "axis", o->u.i); break;
    case CG_TFLITE_OPT_MirrorPadOptions:
        at_str(as, "mode", o->u.i == 0 ? "REFLECT" : o->u.i == 1 ? "SYMMETRIC" : "INVALID");
        break;
    case CG_TFLITE_OPT_ReducerOptions: at_int(as, "keep_dims", o->u.b); break;
    case CG_TFLITE_OPT_GeluOptions: at_int(as, "approximate", o->u.b); break;
    default: break;
    }
}

/* --- the graph --------------------------------------------------------------------- */

static cg_status om_type(om_ctx *c, const cg_tflite_tensor *t, cg_type **out)
{
    cg_arena *ar = c->model->arena;
    cg_type *ty = cg_arena_calloc(ar, 1, sizeof *ty);
    if (!ty)
        return om_nomem(c);
    ty->kind = CG_TYPE_TENSOR;
    cg_dtype dt = cg_tflite_type_dtype(t->type);
    ty->elem_type = (int32_t)dt;
    ty->has_elem_type = dt != CG_DTYPE_UNDEFINED;
    /* has_rank false with rank 0: the rank is unknown (schema.fbs) */
    if (t->rank || t->has_rank || !t->has_shape_signature) {
        cg_shape *sh = cg_arena_calloc(ar, 1, sizeof *sh);
        if (!sh)
            return om_nomem(c);
        if (t->rank) {
            sh->dims = cg_arena_calloc(ar, t->rank, sizeof *sh->dims);
            if (!sh->dims)
                return om_nomem(c);
        }
        sh->rank = t->rank;
        for (size_t d = 0; d < t->rank; d++) {
            sh->dims[d].value = t->shape[d];
            sh->dims[d].has_value = t->shape[d] >= 0;
        }
        ty->shape = sh;
    }
    *out = ty;
    return CG_OK;
}

static cg_status om_value_info(om_ctx *c, int32_t tensor, cg_value_info *vi)
{
    vi->name = c->names[tensor];
    return om_type(c, &c->g->tensors[tensor], &vi->type);
}

static cg_status om_initializer(om_ctx *c, size_t i, cg_tensor_proto *tp)
{
    const cg_tflite_tensor *t = &c->g->tensors[i];
    tp->name = c->names[i];
    tp->rank = t->rank;
    if (t->rank) {
        tp->dims = cg_arena_calloc(c->model->arena, t->rank, sizeof *tp->dims);
        if (!tp->dims)
            return om_nomem(c);
        for (size_t d = 0; d < t->rank; d++)
            tp->dims[d] = t->shape[d];
    }
    tp->data_type = (int32_t)cg_tflite_type_dtype(t->type);
    tp->has_data_type = true;
    tp->raw_data = cg_tflite_tensor_data(c->src, t);
    return CG_OK;
}

static const char **om_tensor_list(om_ctx *c, const int32_t *idx, size_t n)
{
    const char **v = cg_arena_calloc(c->model->arena, n ? n : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = idx[i] < 0 ? "" : c->names[idx[i]];
    return v;
}

static cg_status om_node(om_ctx *c, size_t i, cg_node *nd)
{
    const cg_tflite_operator *op = &c->g->operators[i];
    const cg_tflite_opcode *oc = cg_tflite_op_code(c->src, op);
    cg_arena *ar = c->model->arena;
    char buf[32], name[48];
    const char *type = cg_tflite_op_name(oc, buf, sizeof buf);
    nd->op_type = cg_arena_strdup(ar, type);
    nd->domain = oc->builtin == CG_TFLITE_OP_CUSTOM ? CG_TFLITE_CUSTOM_DOMAIN
                                                    : CG_TFLITE_OPS_DOMAIN;
    /* operators have no names in a .tflite: "#i" as the delegates' logs number them */
    snprintf(name, sizeof name, "#%zu", i);
    nd->name = cg_arena_strdup(ar, name);
    nd->inputs = om_tensor_list(c, op->inputs, op->input_count);
    nd->input_count = op->input_count;
    nd->outputs = om_tensor_list(c, op->outputs, op->output_count);
    nd->output_count = op->output_count;
    om_attrs as = {.n = 0};
    at_int(&as, "version", oc->version);
    options_attrs(&op->options, &as);
    nd->attrs = cg_arena_calloc(ar, as.n, sizeof *nd->attrs);
    if (!nd->op_type || !nd->name || !nd->inputs || !nd->outputs || !nd->attrs)
        return om_nomem(c);
    memcpy(nd->attrs, as.a, as.n * sizeof *nd->attrs);
    nd->attr_count = as.n;
    return CG_OK;
}

cg_status cg_tflite_op_model(const cg_tflite_model *m, cg_model **out, cg_error *err)
{
    *out = NULL;
    const char *label = m->path ? m->path : "tflite";
    if (!m->subgraph_count)
        return cg_error_set(err, CG_INVALID, "%s: no subgraph, so no operators to place",
                            label);
    om_ctx c = {NULL, m, &m->subgraphs[0], NULL, err};
    cg_status st;
    cg_model *model = calloc(1, sizeof *model);
    if (!model || !(model->arena = cg_arena_new())) {
        free(model);
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", label);
    }
    c.model = model;
    cg_arena *ar = model->arena;
    const cg_tflite_subgraph *g = c.g;
    if (m->path && !(model->path = strdup(m->path))) {
        st = om_nomem(&c);
        goto fail;
    }
    model->file_size = m->file_size;
    model->producer_name = "tflite";
    model->opsets = cg_arena_calloc(ar, 2, sizeof *model->opsets);
    cg_graph *gr = model->graph = cg_arena_calloc(ar, 1, sizeof *gr);
    if (!model->opsets || !gr) {
        st = om_nomem(&c);
        goto fail;
    }
    model->opsets[0] = (cg_opset_id){CG_TFLITE_OPS_DOMAIN, 1, true, {NULL, 0}};
    model->opsets[1] = (cg_opset_id){CG_TFLITE_CUSTOM_DOMAIN, 1, true, {NULL, 0}};
    model->opset_count = 2;
    gr->name = g->name ? g->name : "main";
    if ((st = om_names(&c)) != CG_OK)
        goto fail;
    size_t consts = 0;
    for (size_t i = 0; i < g->tensor_count; i++)
        consts += cg_tflite_tensor_data(m, &g->tensors[i]).data != NULL;
    gr->initializers = cg_arena_calloc(ar, consts ? consts : 1, sizeof *gr->initializers);
    gr->inputs = cg_arena_calloc(ar, g->input_count ? g->input_count : 1, sizeof *gr->inputs);
    gr->outputs = cg_arena_calloc(ar, g->output_count ? g->output_count : 1,
                                  sizeof *gr->outputs);
    gr->value_infos = cg_arena_calloc(ar, g->tensor_count ? g->tensor_count : 1,
                                      sizeof *gr->value_infos);
    gr->nodes = cg_arena_calloc(ar, g->operator_count ? g->operator_count : 1,
                                sizeof *gr->nodes);
    if (!gr->initializers || !gr->inputs || !gr->outputs || !gr->value_infos || !gr->nodes) {
        st = om_nomem(&c);
        goto fail;
    }
    for (size_t i = 0; i < g->tensor_count; i++) {
        if (cg_tflite_tensor_data(m, &g->tensors[i]).data &&
            (st = om_initializer(&c, i, &gr->initializers[gr->initializer_count++])) != CG_OK)
            goto fail;
        if ((st = om_value_info(&c, (int32_t)i, &gr->value_infos[gr->value_info_count++])) !=
            CG_OK)
            goto fail;
    }
    for (size_t i = 0; i < g->input_count; i++)
        if ((st = om_value_info(&c, g->inputs[i], &gr->inputs[gr->input_count++])) != CG_OK)
            goto fail;
    for (size_t i = 0; i < g->output_count; i++)
        if ((st = om_value_info(&c, g->outputs[i], &gr->outputs[gr->output_count++])) != CG_OK)
            goto fail;
    for (size_t i = 0; i < g->operator_count; i++)
        if ((st = om_node(&c, i, &gr->nodes[gr->node_count++])) != CG_OK)
            goto fail;
    *out = model;
    return CG_OK;
fail:
    cg_model_free(model);
    return st;
}
