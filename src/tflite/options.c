/*
 * Operator options: the BuiltinOptions / BuiltinOptions2 unions.
 *
 * Every options table is verified field by field from option_fields.def
 * (generated from schema.fbs), whatever its type, so a file with a broken
 * field in a rare op's options is refused like FlatBuffers' Verifier
 * refuses it. The common ops' options are then decoded into typed structs
 * (include/convgate/tflite.h) with the schema's defaults; adding an op's
 * fields is adding a case below and a struct in the header.
 * Field ids are the declaration order in schema.fbs (google-ai-edge/LiteRT
 * @f67457790c9c:tflite/converter/schema/schema.fbs).
 */
#include <stdio.h>
#include <string.h>

#include "tflite/read.h"

enum { SCALAR, VECTOR, STRING };

typedef struct option_field {
    uint8_t union_no, index, id, kind, width;
} option_field;

static const option_field option_fields[] = {
#define X(u, index, id, kind, width) {u, index, id, kind, width},
#include "tflite/option_fields.def"
#undef X
};

/* Verifies every field the schema gives the options table `index` of union
 * `union_no`. Rows are in (union, index, id) order. */
static bool verify_fields(fb_reader *r, int union_no, int index, const fb_table *t)
{
    for (size_t i = 0; i < sizeof option_fields / sizeof option_fields[0]; i++) {
        const option_field *f = &option_fields[i];
        if (f->union_no != union_no || f->index != index)
            continue;
        size_t pos;
        bool present;
        fb_vec v;
        const char *s;
        char what[48];
        snprintf(what, sizeof what, "field %u", f->id);
        switch (f->kind) {
        case SCALAR:
            if (!fb_field(r, t, f->id, f->width, &pos))
                return false;
            break;
        case VECTOR:
            if (!fb_vector(r, t, f->id, f->width, what, &v, &present))
                return false;
            break;
        default:
            if (!fb_string(r, t, f->id, what, &s))
                return false;
            break;
        }
    }
    return true;
}

/* Typed fields of the common options; ids from schema.fbs. */
static bool decode(fb_reader *r, int type, const fb_table *t, cg_tflite_options *o)
{
    o->decoded = true;
    switch (type) {
    case CG_TFLITE_OPT_Conv2DOptions: {
        cg_tflite_conv2d_options *c = &o->u.conv2d;
        return fb_i8(r, t, 0, 0, &c->padding) && fb_i32(r, t, 1, 0, &c->stride_w) &&
               fb_i32(r, t, 2, 0, &c->stride_h) &&
               fb_i8(r, t, 3, 0, &c->fused_activation_function) &&
               fb_i32(r, t, 4, 1, &c->dilation_w_factor) &&
               fb_i32(r, t, 5, 1, &c->dilation_h_factor) &&
               fb_i8(r, t, 6, 0, &c->quantized_bias_type);
    }
    case CG_TFLITE_OPT_DepthwiseConv2DOptions: {
        cg_tflite_depthwise_options *c = &o->u.depthwise;
        return fb_i8(r, t, 0, 0, &c->padding) && fb_i32(r, t, 1, 0, &c->stride_w) &&
               fb_i32(r, t, 2, 0, &c->stride_h) && fb_i32(r, t, 3, 0, &c->depth_multiplier) &&
               fb_i8(r, t, 4, 0, &c->fused_activation_function) &&
               fb_i32(r, t, 5, 1, &c->dilation_w_factor) &&
               fb_i32(r, t, 6, 1, &c->dilation_h_factor);
    }
    case CG_TFLITE_OPT_Conv3DOptions: {
        cg_tflite_conv3d_options *c = &o->u.conv3d;
        return fb_i8(r, t, 0, 0, &c->padding) && fb_i32(r, t, 1, 0, &c->stride_d) &&
               fb_i32(r, t, 2, 0, &c->stride_w) && fb_i32(r, t, 3, 0, &c->stride_h) &&
               fb_i8(r, t, 4, 0, &c->fused_activation_function) &&
               fb_i32(r, t, 5, 1, &c->dilation_d_factor) &&
               fb_i32(r, t, 6, 1, &c->dilation_w_factor) &&
               fb_i32(r, t, 7, 1, &c->dilation_h_factor);
    }
    case CG_TFLITE_OPT_Pool2DOptions: {
        cg_tflite_pool2d_options *c = &o->u.pool2d;
        return fb_i8(r, t, 0, 0, &c->padding) && fb_i32(r, t, 1, 0, &c->stride_w) &&
               fb_i32(r, t, 2, 0, &c->stride_h) && fb_i32(r, t, 3, 0, &c->filter_width) &&
               fb_i32(r, t, 4, 0, &c->filter_height) &&
               fb_i8(r, t, 5, 0, &c->fused_activation_function);
    }
    case CG_TFLITE_OPT_FullyConnectedOptions: {
        cg_tflite_fc_options *c = &o->u.fully_connected;
        return fb_i8(r, t, 0, 0, &c->fused_activation_function) &&
               fb_i8(r, t, 1, 0, &c->weights_format) &&
               fb_bool(r, t, 2, false, &c->keep_num_dims) &&
               fb_bool(r, t, 3, false, &c->asymmetric_quantize_inputs) &&
               fb_i8(r, t, 4, 0, &c->quantized_bias_type);
    }
    case CG_TFLITE_OPT_TransposeConvOptions: {
        cg_tflite_transpose_conv_options *c = &o->u.transpose_conv;
        return fb_i8(r, t, 0, 0, &c->padding) && fb_i32(r, t, 1, 0, &c->stride_w) &&
               fb_i32(r, t, 2, 0, &c->stride_h) &&
               fb_i8(r, t, 3, 0, &c->fused_activation_function) &&
               fb_i8(r, t, 4, 0, &c->quantized_bias_type);
    }
    case CG_TFLITE_OPT_AddOptions:
    case CG_TFLITE_OPT_SubOptions: /* fused_activation_function, pot_scale_int16 = true */
        return fb_i8(r, t, 0, 0, &o->u.activation.fused_activation_function) &&
               fb_bool(r, t, 1, true, &o->u.activation.pot_scale_int16);
    case CG_TFLITE_OPT_MulOptions:
    case CG_TFLITE_OPT_DivOptions:
    case CG_TFLITE_OPT_L2NormOptions:
    case CG_TFLITE_OPT_RNNOptions: /* fused_activation_function first */
        return fb_i8(r, t, 0, 0, &o->u.activation.fused_activation_function);
    case CG_TFLITE_OPT_ConcatenationOptions:
        return fb_i32(r, t, 0, 0, &o->u.concat.axis) &&
               fb_i8(r, t, 1, 0, &o->u.concat.fused_activation_function);
    case CG_TFLITE_OPT_StridedSliceOptions: {
        cg_tflite_strided_slice_options *c = &o->u.strided_slice;
        return fb_i32(r, t, 0, 0, &c->begin_mask) && fb_i32(r, t, 1, 0, &c->end_mask) &&
               fb_i32(r, t, 2, 0, &c->ellipsis_mask) && fb_i32(r, t, 3, 0, &c->new_axis_mask) &&
               fb_i32(r, t, 4, 0, &c->shrink_axis_mask) && fb_bool(r, t, 5, false, &c->offset);
    }
    case CG_TFLITE_OPT_ReshapeOptions: /* new_shape */
    case CG_TFLITE_OPT_SqueezeOptions: { /* squeeze_dims */
        fb_vec v;
        bool present;
        if (!fb_vector(r, t, 0, 4, "its int vector", &v, &present))
            return false;
        o->u.ints.present = present;
        return fb_read_i32s(r, t, 0, "its int vector", &o->u.ints.values, &o->u.ints.count);
    }
    case CG_TFLITE_OPT_GatherOptions:
        return fb_i32(r, t, 0, 0, &o->u.gather.axis) && fb_i32(r, t, 1, 0, &o->u.gather.batch_dims);
    case CG_TFLITE_OPT_ResizeBilinearOptions: /* ids 0, 1 are the deprecated new_height/width */
        return fb_bool(r, t, 2, false, &o->u.resize.align_corners) &&
               fb_bool(r, t, 3, false, &o->u.resize.half_pixel_centers);
    case CG_TFLITE_OPT_ResizeNearestNeighborOptions:
        return fb_bool(r, t, 0, false, &o->u.resize.align_corners) &&
               fb_bool(r, t, 1, false, &o->u.resize.half_pixel_centers);
    case CG_TFLITE_OPT_BatchMatMulOptions:
        return fb_bool(r, t, 0, false, &o->u.batch_matmul.adj_x) &&
               fb_bool(r, t, 1, false, &o->u.batch_matmul.adj_y) &&
               fb_bool(r, t, 2, false, &o->u.batch_matmul.asymmetric_quantize_inputs);
    case CG_TFLITE_OPT_IfOptions:    /* then, else */
    case CG_TFLITE_OPT_WhileOptions: /* cond, body */
        return fb_i32(r, t, 0, 0, &o->u.subgraphs.first) &&
               fb_i32(r, t, 1, 0, &o->u.subgraphs.second);
    case CG_TFLITE_OPT_CallOnceOptions: /* init_subgraph_index */
        o->u.subgraphs.second = -1;
        return fb_i32(r, t, 0, 0, &o->u.subgraphs.first);
    case CG_TFLITE_OPT_CallOptions: { /* subgraph:uint */
        uint32_t s;
        if (!fb_u32(r, t, 0, 0, &s))
            return false;
        o->u.subgraphs.first = s > INT32_MAX ? INT32_MAX : (int32_t)s;
        o->u.subgraphs.second = -1;
        return true;
    }
    case CG_TFLITE_OPT_PackOptions: /* values_count, axis */
    case CG_TFLITE_OPT_UnpackOptions: /* num, axis */
        return fb_i32(r, t, 0, 0, &o->u.axis_count.count) &&
               fb_i32(r, t, 1, 0, &o->u.axis_count.axis);
    case CG_TFLITE_OPT_LocalResponseNormalizationOptions:
        return fb_i32(r, t, 0, 0, &o->u.lrn.radius) && fb_f32(r, t, 1, 0.0f, &o->u.lrn.bias) &&
               fb_f32(r, t, 2, 0.0f, &o->u.lrn.alpha) && fb_f32(r, t, 3, 0.0f, &o->u.lrn.beta);
    case CG_TFLITE_OPT_FakeQuantOptions:
        return fb_f32(r, t, 0, 0.0f, &o->u.fake_quant.min) &&
               fb_f32(r, t, 1, 0.0f, &o->u.fake_quant.max) &&
               fb_i32(r, t, 2, 0, &o->u.fake_quant.num_bits) &&
               fb_bool(r, t, 3, false, &o->u.fake_quant.narrow_range);
    case CG_TFLITE_OPT_CastOptions:
        return fb_i8(r, t, 0, 0, &o->u.cast.in_data_type) &&
               fb_i8(r, t, 1, 0, &o->u.cast.out_data_type);
    case CG_TFLITE_OPT_SoftmaxOptions:   /* beta */
    case CG_TFLITE_OPT_LeakyReluOptions: /* alpha */
        return fb_f32(r, t, 0, 0.0f, &o->u.f);
    case CG_TFLITE_OPT_SpaceToDepthOptions: /* block_size */
    case CG_TFLITE_OPT_DepthToSpaceOptions:
    case CG_TFLITE_OPT_SplitOptions: /* num_splits */
    case CG_TFLITE_OPT_SplitVOptions:
    case CG_TFLITE_OPT_OneHotOptions: /* axis */
        return fb_i32(r, t, 0, 0, &o->u.i);
    case CG_TFLITE_OPT_MirrorPadOptions: /* mode:byte */
    case CG_TFLITE_OPT_ArgMaxOptions:    /* output_type:TensorType */
    case CG_TFLITE_OPT_ArgMinOptions:
    case CG_TFLITE_OPT_ShapeOptions: {   /* out_type:TensorType */
        int8_t v;
        if (!fb_i8(r, t, 0, 0, &v))
            return false;
        o->u.i = v;
        return true;
    }
    case CG_TFLITE_OPT_UniqueOptions: { /* idx_out_type:TensorType = INT32 */
        int8_t v;
        if (!fb_i8(r, t, 0, CG_TFLITE_TYPE_INT32, &v))
            return false;
        o->u.i = v;
        return true;
    }
    case CG_TFLITE_OPT_ReducerOptions: /* keep_dims */
    case CG_TFLITE_OPT_GeluOptions:    /* approximate */
        return fb_bool(r, t, 0, false, &o->u.b);
    default:
        o->decoded = false; /* no fields, or an op convgate does not decode yet */
        return true;
    }
}

bool cg_tflite_read_options(fb_reader *r, const fb_table *op, cg_tflite_options *o,
                            int *options2_type)
{
    memset(o, 0, sizeof *o);
    *options2_type = 0;
    static const struct {
        unsigned type_id, value_id;
        int count;
        const char *name;
    } unions[2] = {{3, 4, CG_TFLITE_OPT_COUNT, "builtin_options"},
                   {11, 12, CG_TFLITE_OPT2_COUNT, "builtin_options_2"}};
    for (int u = 0; u < 2; u++) {
        uint8_t type;
        if (!fb_u8(r, op, unions[u].type_id, 0, &type))
            return false;
        size_t pos;
        if (!fb_field(r, op, unions[u].value_id, 4, &pos))
            return false;
        if (type == 0)
            continue; /* a value without a type is never read (the Verifier's rule too) */
        if (type >= unions[u].count)
            return fb_fail(r, "%s_type is %u, not a member of union %s (1..%d in the pinned "
                              "schema.fbs): its table cannot be verified",
                           unions[u].name, type, u ? "BuiltinOptions2" : "BuiltinOptions",
                           unions[u].count - 1);
        if (!pos)
            continue; /* type without a value: the options are absent */
        const char *table_name = u ? cg_tflite_options2_name(type) : cg_tflite_options_name(type);
        size_t target;
        fb_table t;
        if (!fb_deref(r, pos, table_name, &target) ||
            !fb_table_at(r, target, op->depth + 1, table_name, &t) ||
            !verify_fields(r, u + 1, type, &t))
            return false;
        if (u == 0) {
            o->type = type;
            if (!decode(r, type, &t, o))
                return false;
        } else {
            *options2_type = type;
        }
    }
    return true;
}
