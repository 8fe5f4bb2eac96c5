/*
 * TFLite models (.tflite): a verified, zero-copy view of the FlatBuffer.
 *
 * cg_tflite_load maps the file and checks every byte of structure before
 * anything is read: offsets, vtables, vector lengths, strings, union types,
 * nesting and buffer ranges, under the rules of the FlatBuffers verifier
 * and the schema (docs/tflite.md cites both). It then decodes the model
 * into plain C structs that mirror schema.fbs table by table, so the rest
 * of convgate never touches FlatBuffers again. Invariants of a loaded model:
 *  - Every index is in range: operator opcode_index < opcode_count; tensor
 *    indexes (subgraph inputs/outputs, operator inputs/outputs/
 *    intermediates, signature tensor maps, blockwise quantization) are
 *    < the subgraph's tensor_count, or -1 where the schema allows an omitted
 *    optional tensor (CG_TFLITE_OPTIONAL); tensor and metadata buffer
 *    indexes < buffer_count (buffer 0 is the schema's "no data" sentinel);
 *    subgraph indexes named by IF/WHILE/CALL/CALL_ONCE options and
 *    signatures < subgraph_count, and the subgraphs they name call each
 *    other without a cycle, at most CG_TFLITE_MAX_CALL_DEPTH deep.
 *  - Payloads are not copied: cg_tflite_buffer.data, custom options and
 *    CustomQuantization bytes point into the mapped file, including buffers
 *    stored past the FlatBuffer (Buffer.offset/size of models over 2 GiB).
 *    They may be unaligned for their element type: memcpy before typed use.
 *  - Strings point into the mapping too and are NUL-terminated (the
 *    terminator is verified); absent strings are NULL.
 *  - Numeric vectors (shapes, index lists, quantization parameters) are
 *    decoded into host-order arrays owned by the model.
 *  - Everything is released at once by cg_tflite_free.
 * What the reader does NOT judge (cg_tflite_check does): whether the graph
 * is well-formed (tensors produced before use, buffer sizes against shapes,
 * options matching their op, enum values in range).
 */
#ifndef CONVGATE_TFLITE_H
#define CONVGATE_TFLITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/check.h"
#include "convgate/dtype.h"
#include "convgate/model.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operator input/output index meaning "optional input omitted" (schema.fbs,
 * Operator.inputs: "Optional input are indicated by -1"). */
#define CG_TFLITE_OPTIONAL (-1)
/* How deep IF/WHILE/CALL/CALL_ONCE may nest subgraphs (the ONNX reader's cap). */
#define CG_TFLITE_MAX_CALL_DEPTH 32

/* enum BuiltinOperator: CG_TFLITE_OP_CONV_2D = 3, ... */
typedef enum cg_tflite_builtin {
#define X(name, value) CG_TFLITE_OP_##name = value,
#include "convgate/tflite_builtin.def"
#undef X
    CG_TFLITE_OP_COUNT
} cg_tflite_builtin;

/* enum TensorType: CG_TFLITE_TYPE_FLOAT32 = 0, ... */
typedef enum cg_tflite_type {
#define X(name, value) CG_TFLITE_TYPE_##name = value,
#include "convgate/tflite_type.def"
#undef X
    CG_TFLITE_TYPE_COUNT
} cg_tflite_type;

/* union BuiltinOptions member types: CG_TFLITE_OPT_Conv2DOptions = 1, ... */
typedef enum cg_tflite_options_type {
    CG_TFLITE_OPT_NONE = 0,
#define X(index, name) CG_TFLITE_OPT_##name = index,
#include "convgate/tflite_options.def"
#undef X
    CG_TFLITE_OPT_COUNT
} cg_tflite_options_type;

/* union BuiltinOptions2 member types (StableHLO and newer ops). */
typedef enum cg_tflite_options2_type {
    CG_TFLITE_OPT2_NONE = 0,
#define X(index, name) CG_TFLITE_OPT2_##name = index,
#include "convgate/tflite_options2.def"
#undef X
    CG_TFLITE_OPT2_COUNT
} cg_tflite_options2_type;

/* --- names and element types ------------------------------------------- */

/* "CONV_2D", or NULL for a code the pinned schema does not define. */
CG_API const char *cg_tflite_builtin_name(int32_t code);
/* "Conv2DOptions", or NULL. */
CG_API const char *cg_tflite_options_name(int type);
CG_API const char *cg_tflite_options2_name(int type);
/* convgate's dtype name ("float32", "int8", ... as cg_dtype_name), or the
 * TFLite name in lower case for types convgate has no dtype for
 * ("resource", "variant", "int2", "float8_e4m3fn"...); NULL if undefined. */
CG_API const char *cg_tflite_type_name(int32_t type);
/* The cg_dtype with the same element encoding, CG_DTYPE_UNDEFINED if none. */
CG_API cg_dtype cg_tflite_type_dtype(int32_t type);
/* Bits per element as stored in a buffer (4 for INT4: two per byte), 0 for
 * STRING, RESOURCE and VARIANT (no fixed size) and unknown types. */
CG_API unsigned cg_tflite_type_bits(int32_t type);

/* --- the model ----------------------------------------------------------- */

/* enum Padding, enum ActivationFunctionType (kept as stored: check flags
 * values outside the enums). */
enum { CG_TFLITE_PADDING_SAME = 0, CG_TFLITE_PADDING_VALID = 1 };
enum {
    CG_TFLITE_ACT_NONE = 0,
    CG_TFLITE_ACT_RELU = 1,
    CG_TFLITE_ACT_RELU_N1_TO_1 = 2,
    CG_TFLITE_ACT_RELU6 = 3,
    CG_TFLITE_ACT_TANH = 4,
    CG_TFLITE_ACT_SIGN_BIT = 5
};

/* QuantizationParameters: f = scale * (q - zero_point), per tensor (one
 * scale) or per axis (quantized_dimension, one scale per slice). */
typedef struct cg_tflite_quant {
    const float *min, *max; /* for importing back into TensorFlow */
    size_t min_count, max_count;
    const float *scale;
    size_t scale_count;
    const int64_t *zero_point;
    size_t zero_point_count;
    int32_t quantized_dimension;
    /* details (union QuantizationDetails); when set, the fields above are to
     * be ignored, as the schema says. */
    uint8_t details_type;  /* 0 none, 1 CustomQuantization, 2 Blockwise, 3 MultiAxis */
    cg_bytes custom;       /* CustomQuantization.custom (in the mapping) */
    int32_t block_scales;  /* Blockwise/MultiAxis: tensor index of the scales */
    int32_t block_zero_points; /* tensor index, -1 = zero points are 0 */
    int32_t block_size;
    const int32_t *quantized_dimensions; /* MultiAxisQuantization */
    size_t quantized_dimension_count;
} cg_tflite_quant;

/* DimensionMetadata of a sparse tensor; index vectors widened to int32. */
typedef struct cg_tflite_sparse_dim {
    int8_t format; /* 0 DENSE, 1 SPARSE_CSR */
    int32_t dense_size;
    const int32_t *segments, *indices;
    size_t segment_count, index_count;
} cg_tflite_sparse_dim;

typedef struct cg_tflite_sparsity { /* SparsityParameters */
    const int32_t *traversal_order, *block_map;
    size_t traversal_count, block_map_count;
    cg_tflite_sparse_dim *dims;
    size_t dim_count;
} cg_tflite_sparsity;

typedef struct cg_tflite_variant { /* VariantSubType */
    const int32_t *shape;
    size_t rank;
    int32_t type;
    bool has_rank;
} cg_tflite_variant;

typedef struct cg_tflite_tensor {
    const char *name;               /* NULL when absent */
    int32_t type;                   /* TensorType (cg_tflite_type), as stored */
    const int32_t *shape;           /* static shape; -1 never appears in valid files */
    size_t rank;
    const int32_t *shape_signature; /* -1 = dynamic dim */
    size_t signature_rank;
    bool has_shape_signature;       /* the field is present (possibly empty: a scalar) */
    bool has_rank;                  /* Tensor.has_rank (false + rank 0 = unknown rank) */
    uint32_t buffer;                /* into model->buffers; 0 = no data */
    bool is_variable;
    const cg_tflite_quant *quant;   /* NULL when absent */
    const cg_tflite_sparsity *sparsity; /* NULL when dense */
    const cg_tflite_variant *variants;
    size_t variant_count;
    uint32_t external_buffer;       /* ExternalBuffer id (schema 3d); 0 = none */
} cg_tflite_tensor;

/* Typed builtin options for the common ops; `type` says which member of
 * `u` is filled (defaults of schema.fbs where a field was absent) and
 * `decoded` whether it is. Every options table is verified field by field
 * whatever its type; options without fields (TransposeOptions, ...) and
 * those of the rarer ops only set `type` (decoding one more is a case in
 * src/tflite/options.c and a struct here). */
typedef struct cg_tflite_conv2d_options {
    int8_t padding, fused_activation_function;
    int32_t stride_w, stride_h, dilation_w_factor, dilation_h_factor;
    int8_t quantized_bias_type;
} cg_tflite_conv2d_options;
typedef struct cg_tflite_depthwise_options {
    int8_t padding, fused_activation_function;
    int32_t stride_w, stride_h, depth_multiplier, dilation_w_factor, dilation_h_factor;
} cg_tflite_depthwise_options;
typedef struct cg_tflite_conv3d_options {
    int8_t padding, fused_activation_function;
    int32_t stride_d, stride_w, stride_h, dilation_d_factor, dilation_w_factor,
        dilation_h_factor;
} cg_tflite_conv3d_options;
typedef struct cg_tflite_pool2d_options {
    int8_t padding, fused_activation_function;
    int32_t stride_w, stride_h, filter_width, filter_height;
} cg_tflite_pool2d_options;
typedef struct cg_tflite_fc_options {
    int8_t fused_activation_function, weights_format, quantized_bias_type;
    bool keep_num_dims, asymmetric_quantize_inputs;
} cg_tflite_fc_options;
typedef struct cg_tflite_transpose_conv_options {
    int8_t padding, fused_activation_function, quantized_bias_type;
    int32_t stride_w, stride_h;
} cg_tflite_transpose_conv_options;
typedef struct cg_tflite_activation_options { /* Add/Sub/Mul/Div/L2Norm */
    int8_t fused_activation_function;
    bool pot_scale_int16; /* Add/Sub only (default true) */
} cg_tflite_activation_options;
typedef struct cg_tflite_concat_options {
    int32_t axis;
    int8_t fused_activation_function;
} cg_tflite_concat_options;
typedef struct cg_tflite_strided_slice_options {
    int32_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
    bool offset;
} cg_tflite_strided_slice_options;
typedef struct cg_tflite_ints_options { /* Reshape.new_shape, Squeeze.squeeze_dims */
    const int32_t *values;
    size_t count;
    bool present;
} cg_tflite_ints_options;
typedef struct cg_tflite_gather_options {
    int32_t axis, batch_dims;
} cg_tflite_gather_options;
typedef struct cg_tflite_resize_options { /* ResizeBilinear, ResizeNearestNeighbor */
    bool align_corners, half_pixel_centers;
} cg_tflite_resize_options;
typedef struct cg_tflite_batch_matmul_options {
    bool adj_x, adj_y, asymmetric_quantize_inputs;
} cg_tflite_batch_matmul_options;
/* If (then, else), While (cond, body), CallOnce (init), Call (subgraph) */
typedef struct cg_tflite_subgraphs_options {
    int32_t first, second; /* -1 where the options have one index */
} cg_tflite_subgraphs_options;
typedef struct cg_tflite_axis_count_options { /* Pack (values_count, axis), Unpack (num, axis) */
    int32_t count, axis;
} cg_tflite_axis_count_options;
typedef struct cg_tflite_lrn_options {
    int32_t radius;
    float bias, alpha, beta;
} cg_tflite_lrn_options;
typedef struct cg_tflite_fake_quant_options {
    float min, max;
    int32_t num_bits;
    bool narrow_range;
} cg_tflite_fake_quant_options;
typedef struct cg_tflite_cast_options {
    int8_t in_data_type, out_data_type;
} cg_tflite_cast_options;

typedef struct cg_tflite_options {
    int type; /* cg_tflite_options_type; CG_TFLITE_OPT_NONE when absent */
    union {
        cg_tflite_conv2d_options conv2d;               /* Conv2DOptions */
        cg_tflite_depthwise_options depthwise;         /* DepthwiseConv2DOptions */
        cg_tflite_conv3d_options conv3d;               /* Conv3DOptions */
        cg_tflite_pool2d_options pool2d;               /* Pool2DOptions */
        cg_tflite_fc_options fully_connected;          /* FullyConnectedOptions */
        cg_tflite_transpose_conv_options transpose_conv; /* TransposeConvOptions */
        cg_tflite_activation_options activation;       /* Add/Sub/Mul/Div/L2Norm/RNN/SVDF... */
        cg_tflite_concat_options concat;               /* ConcatenationOptions */
        cg_tflite_strided_slice_options strided_slice; /* StridedSliceOptions */
        cg_tflite_ints_options ints;                   /* Reshape, Squeeze */
        cg_tflite_gather_options gather;               /* GatherOptions */
        cg_tflite_resize_options resize;               /* ResizeBilinear/NearestNeighbor */
        cg_tflite_batch_matmul_options batch_matmul;   /* BatchMatMulOptions */
        cg_tflite_subgraphs_options subgraphs;         /* If/While/CallOnce/Call */
        cg_tflite_axis_count_options axis_count;       /* Pack/Unpack */
        cg_tflite_lrn_options lrn;                     /* LocalResponseNormalizationOptions */
        cg_tflite_fake_quant_options fake_quant;       /* FakeQuantOptions */
        cg_tflite_cast_options cast;                   /* CastOptions */
        float f;        /* Softmax.beta, LeakyRelu.alpha */
        int32_t i;      /* SpaceToDepth/DepthToSpace.block_size, Split/SplitV.num_splits,
                           OneHot.axis, MirrorPad.mode, ArgMax/ArgMin/Shape out type,
                           Unique.idx_out_type */
        bool b;         /* Reducer.keep_dims, Gelu.approximate */
    } u;
    bool decoded;       /* u holds the fields (false: only `type` is known) */
} cg_tflite_options;

typedef struct cg_tflite_operator {
    uint32_t opcode_index;          /* into model->opcodes */
    const int32_t *inputs;          /* tensor indexes, -1 = omitted optional input */
    size_t input_count;
    const int32_t *outputs;
    size_t output_count;
    const int32_t *intermediates;
    size_t intermediate_count;
    const uint8_t *mutating_variable_inputs; /* one flag per input, or NULL */
    size_t mutating_count;
    cg_tflite_options options;      /* builtin_options */
    int options2_type;              /* builtin_options_2 (cg_tflite_options2_type), verified
                                       but not decoded */
    cg_bytes custom_options;        /* inline, or large_custom_options_offset/size */
    bool custom_options_large;      /* stored past the FlatBuffer */
    int8_t custom_options_format;   /* 0 = FLEXBUFFERS */
    int32_t debug_metadata_index;
} cg_tflite_operator;

typedef struct cg_tflite_opcode { /* OperatorCode */
    int32_t builtin;          /* max(builtin_code, deprecated_builtin_code) (schema_utils.cc) */
    int32_t builtin_code;     /* as stored */
    int8_t deprecated_builtin_code;
    const char *custom_code;  /* NULL when absent */
    int32_t version;          /* default 1 */
} cg_tflite_opcode;

typedef struct cg_tflite_subgraph {
    const char *name;
    cg_tflite_tensor *tensors;
    size_t tensor_count;
    const int32_t *inputs;
    size_t input_count;
    const int32_t *outputs;
    size_t output_count;
    cg_tflite_operator *operators; /* in execution order */
    size_t operator_count;
    int32_t debug_metadata_index;
} cg_tflite_subgraph;

typedef struct cg_tflite_buffer {
    cg_bytes data;   /* data.data == NULL: empty */
    uint64_t offset; /* > 1: the data lies at this file offset, past the FlatBuffer */
} cg_tflite_buffer;

typedef struct cg_tflite_metadata {
    const char *name;
    uint32_t buffer;
} cg_tflite_metadata;

typedef struct cg_tflite_tensor_map { /* TensorMap */
    const char *name;
    uint32_t tensor_index; /* into the signature's subgraph */
} cg_tflite_tensor_map;

typedef struct cg_tflite_signature { /* SignatureDef */
    const char *key;
    uint32_t subgraph_index;
    cg_tflite_tensor_map *inputs, *outputs;
    size_t input_count, output_count;
} cg_tflite_signature;

typedef struct cg_tflite_external_buffer { /* ExternalBuffer (schema 3d) */
    uint32_t id, group;
    uint64_t offset, length;
    const char *packing;
} cg_tflite_external_buffer;

typedef struct cg_tflite_model {
    uint32_t version;                 /* schema version, 3 for every current file */
    cg_tflite_opcode *opcodes;
    size_t opcode_count;
    cg_tflite_subgraph *subgraphs;    /* subgraphs[0] is the main graph */
    size_t subgraph_count;
    const char *description;
    cg_tflite_buffer *buffers;
    size_t buffer_count;
    const int32_t *metadata_buffer;   /* deprecated list of buffer indexes */
    size_t metadata_buffer_count;
    cg_tflite_metadata *metadata;
    size_t metadata_count;
    cg_tflite_signature *signatures;
    size_t signature_count;
    const char **external_groups;     /* ExternalBufferGroup.name */
    size_t external_group_count;
    cg_tflite_external_buffer *external_buffers;
    size_t external_buffer_count;

    const char *path;                 /* as given; NULL for bytes */
    const uint8_t *bytes;             /* the whole file */
    size_t file_size;
    size_t flatbuffer_size;           /* bytes the FlatBuffer offsets may address */
    /* owned */
    cg_arena *arena;
    struct cg_mapping *mapping;
    uint8_t *copy;                    /* cg_tflite_load_bytes' copy */
} cg_tflite_model;

typedef struct cg_tflite_load_options {
    size_t max_tables;     /* FlatBuffers' Verifier default: 1,000,000 */
    unsigned max_depth;    /* table nesting, Verifier default: 64 */
} cg_tflite_load_options;

CG_API void cg_tflite_load_options_default(cg_tflite_load_options *opt);

/* True when the bytes carry the "TFL3" file identifier (bytes 4..7). */
CG_API bool cg_tflite_detect(const void *bytes, size_t size);
/* True when the file at path starts like a .tflite (reads 8 bytes). */
CG_API bool cg_tflite_detect_path(const char *path);

/* Maps and verifies a .tflite file. opt may be NULL (defaults). */
CG_API CG_NODISCARD cg_status cg_tflite_load(const char *path, const cg_tflite_load_options *opt,
                                             cg_tflite_model **out, cg_error *err);
/* Copies size bytes (label names them in messages) and verifies them. */
CG_API CG_NODISCARD cg_status cg_tflite_load_bytes(const void *bytes, size_t size,
                                                   const char *label,
                                                   const cg_tflite_load_options *opt,
                                                   cg_tflite_model **out, cg_error *err);
CG_API void cg_tflite_free(cg_tflite_model *model);

/* --- walking ------------------------------------------------------------- */

/* The operator's OperatorCode (opcode_index is verified). */
static inline const cg_tflite_opcode *cg_tflite_op_code(const cg_tflite_model *m,
                                                         const cg_tflite_operator *op)
{
    return &m->opcodes[op->opcode_index];
}
/* The tensor at index i of subgraph g, NULL for -1 (omitted optional). */
static inline const cg_tflite_tensor *cg_tflite_tensor_at(const cg_tflite_subgraph *g,
                                                          int32_t i)
{
    return i < 0 ? NULL : &g->tensors[i];
}
/* A tensor's constant data: the bytes of its buffer, or {NULL, 0}. */
CG_API cg_bytes cg_tflite_tensor_data(const cg_tflite_model *m, const cg_tflite_tensor *t);
/* The op's display name: the builtin name, the custom code for CUSTOM, or
 * "BUILTIN_<n>" for codes the schema does not define (written to buf). */
CG_API const char *cg_tflite_op_name(const cg_tflite_opcode *oc, char *buf, size_t n);
/* Custom ops implemented by TensorFlow (SELECT_TF_OPS): custom_code "Flex...". */
CG_API bool cg_tflite_op_is_flex(const cg_tflite_opcode *oc);
/* The model computes in integers somewhere: an int8/uint8/int16 tensor with
 * affine quantization in some subgraph. */
CG_API bool cg_tflite_quantized(const cg_tflite_model *m);
/* Element count of a static shape; false on overflow or a negative dim. */
CG_API bool cg_tflite_shape_elements(const int32_t *shape, size_t rank, uint64_t *out);

/* --- checking ------------------------------------------------------------ */

/* The structural checker for TFLite (docs/tflite.md lists its rules), with
 * the same report as the ONNX checker: every problem, with where it is.
 * The model must hold the reader's invariants (every model cg_tflite_load
 * returns does; its indexes are not checked again). Returns CG_OK (no
 * errors), CG_INVALID (err holds the first) or CG_NOMEM. */
CG_API CG_NODISCARD cg_status cg_tflite_check(const cg_tflite_model *model,
                                              const cg_check_options *opt, cg_check_report *report,
                                              cg_error *err);

/* --- placement: the operators as the delegates see them ------------------ */

/* Domains of the nodes of cg_tflite_op_model: builtins ("tflite:CONV_2D" in
 * a profile's op list) and custom ops (op type = the custom code). */
#define CG_TFLITE_OPS_DOMAIN "tflite"
#define CG_TFLITE_CUSTOM_DOMAIN "tflite.custom"

/* The operators of the main subgraph as a cg_model for placement
 * (src/tflite/opmodel.c): one node per operator in execution order, named
 * "#i", op type the builtin's name, attributes `version` and the decoded
 * builtin options (schema.fbs field names; enums by name); tensors as
 * values (unique names), constants as initializers pointing into m's
 * bytes, every tensor's static shape in value_info. The model borrows m,
 * which must outlive it; it is for placement, not for running (the ops
 * are TFLite's). docs/tflite.md "Placement" describes it. */
CG_API CG_NODISCARD cg_status cg_tflite_op_model(const cg_tflite_model *m, cg_model **out,
                                                 cg_error *err);

/* --- running: the lowering onto the IR ---------------------------------- */

/* A .tflite runs on the reference runtime as a cg_model (src/tflite/lower.c,
 * docs/tflite.md "Running"): every builtin becomes ONNX nodes with the same
 * semantics (NHWC operators between Transposes, fused activations as their
 * own node, IF/WHILE as If/Loop), and the ops ONNX has no exact equivalent
 * for (TFLite's integer requantization) become nodes of this domain, run by
 * src/run/ops/tflite_quant.c. */
#define CG_TFLITE_DOMAIN "com.convgate.tflite"

/* Where a node of a lowered model came from: the TFLite operator whose
 * semantics it computes, in whole or in part (one operator can lower to
 * several nodes). A node of the main graph always comes from an operator of
 * subgraph 0 (the nodes of a WHILE's first condition count as the WHILE's);
 * a node of an If/Loop body from an operator of the subgraph it lowers. */
typedef struct cg_tflite_origin {
    const cg_node *node;
    int32_t subgraph; /* TFLite subgraph index */
    int32_t op;       /* operator index in that subgraph */
} cg_tflite_origin;

typedef struct cg_tflite_lowering {
    cg_tflite_model *source;   /* owned: the model's constants point into its mapping */
    cg_tflite_origin *origins; /* one per node of every graph, sorted by node address */
    size_t origin_count;
} cg_tflite_lowering;

/* Lowers a loaded .tflite onto a cg_model (ai.onnx opset 21 plus
 * CG_TFLITE_DOMAIN version 1) whose `tflite` member holds the lowering.
 * Takes ownership of src in every case (freed on failure). Fails with
 * CG_UNSUPPORTED naming the subgraph, operator and op for an operator the
 * lowering does not know (or a variant of it: a quantized type, a
 * non-constant operand it needs constant), and with CG_INVALID for
 * malformed operands (wrong counts, constant sizes, bad quantization). */
CG_API CG_NODISCARD cg_status cg_tflite_lower(cg_tflite_model *src, cg_model **out,
                                             cg_error *err);
/* The origin of a node of a lowered model; NULL for an ONNX model or a node
 * that is not in it. */
CG_API const cg_tflite_origin *cg_tflite_node_origin(const cg_model *model,
                                                    const cg_node *node);
CG_API void cg_tflite_lowering_free(cg_tflite_lowering *lowering);
/* The name LiteRT knows graph input/output i of a lowered model by besides
 * its tensor name: its signature name (the main subgraph's first
 * SignatureDef, LiteRT's default signature); NULL for ONNX models and
 * tensors without one. */
CG_API const char *cg_tflite_signature_name(const cg_model *model, bool input, size_t i);

/* A model of either format: a .tflite (recognised by its "TFL3" file
 * identifier, whatever the extension) is loaded and lowered onto the IR
 * (cg_tflite_lower; opt does not apply to it), anything else is read as
 * ONNX with cg_model_load. The bytes variant labels messages with `label`. */
CG_API CG_NODISCARD cg_status cg_model_load_any(const char *path, const cg_load_options *opt,
                                               cg_model **out, cg_error *err);
CG_API CG_NODISCARD cg_status cg_model_load_any_bytes(const void *data, size_t size,
                                                     const char *label,
                                                     const cg_load_options *opt,
                                                     cg_model **out, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
