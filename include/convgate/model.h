/*
 * The in-memory form of an ONNX ModelProto.
 *
 * Every message of onnx.proto that convgate reads has a struct here whose
 * fields mirror the proto's. Invariants:
 *  - Everything a cg_model points to lives in the model's arena or in the
 *    memory-mapped file(s) the model holds; nothing is freed on its own.
 *    cg_model_free releases all of it at once.
 *  - Strings are NUL-terminated arena copies; NULL means "field absent",
 *    "" means "present and empty" (onnx.proto is proto2: presence matters
 *    for a lossless round trip). Byte strings that may hold NULs use cg_bytes.
 *  - Tensor payloads (raw_data, packed float/double data) are NOT copied:
 *    they point into the mapping. That is what keeps `inspect` on a 350 MB
 *    model at a few MB of RSS.
 *  - Fields convgate does not know are kept verbatim in `unknown` (tag and
 *    value bytes, in file order) and written back on save.
 */
#ifndef CONVGATE_MODEL_H
#define CONVGATE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/dtype.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_arena cg_arena;

/* A byte string; data == NULL means absent. */
typedef struct cg_bytes {
    const uint8_t *data;
    size_t len;
} cg_bytes;

typedef struct cg_string_pair { /* StringStringEntryProto */
    const char *key;
    const char *value;
    cg_bytes unknown;
} cg_string_pair;

typedef struct cg_opset_id { /* OperatorSetIdProto */
    const char *domain;      /* NULL or "" mean ai.onnx */
    int64_t version;
    bool has_version;
    cg_bytes unknown;
} cg_opset_id;

/* --- types ------------------------------------------------------------ */

typedef struct cg_dim { /* TensorShapeProto.Dimension */
    int64_t value;      /* valid when has_value */
    const char *param;  /* symbolic name, or NULL */
    const char *denotation;
    bool has_value;
    cg_bytes unknown;
} cg_dim;

typedef struct cg_shape { /* TensorShapeProto */
    cg_dim *dims;
    size_t rank;
    cg_bytes unknown;
} cg_shape;

typedef enum cg_type_kind {
    CG_TYPE_NONE = 0, /* no value case set */
    CG_TYPE_TENSOR,
    CG_TYPE_SEQUENCE,
    CG_TYPE_MAP,
    CG_TYPE_OPTIONAL,
    CG_TYPE_SPARSE_TENSOR
} cg_type_kind;

typedef struct cg_type { /* TypeProto */
    cg_type_kind kind;
    /* TENSOR / SPARSE_TENSOR */
    int32_t elem_type; /* raw ONNX value; see cg_dtype */
    bool has_elem_type;
    cg_shape *shape; /* NULL when the shape is unknown (absent) */
    cg_bytes inner_unknown; /* unknown fields of the Tensor/Sequence/... sub-message */
    /* SEQUENCE / OPTIONAL: element type; MAP: value type */
    struct cg_type *elem;
    int32_t map_key_type;
    bool has_map_key_type;
    const char *denotation;
    cg_bytes unknown;
} cg_type;

typedef struct cg_value_info { /* ValueInfoProto */
    const char *name;
    cg_type *type;
    const char *doc_string;
    cg_bytes unknown;
} cg_value_info;

/* --- tensors ----------------------------------------------------------- */

typedef enum cg_data_location { CG_LOC_DEFAULT = 0, CG_LOC_EXTERNAL = 1 } cg_data_location;

/* A repeated numeric field. Fixed-width fields (float, double) point into the
 * mapping when they arrived packed; varint fields are decoded into the arena.
 * `count` elements of elem_size bytes each, little-endian. */
typedef struct cg_numbers {
    const void *data;
    size_t count;
} cg_numbers;

typedef struct cg_tensor_proto { /* TensorProto */
    int64_t *dims;
    size_t rank;
    int32_t data_type;
    bool has_data_type;
    bool has_segment;
    int64_t segment_begin, segment_end;
    bool has_segment_begin, has_segment_end;
    cg_bytes segment_unknown;
    cg_numbers float_data;  /* float */
    cg_numbers int32_data;  /* int32 (decoded) */
    cg_bytes *string_data;
    size_t string_count;
    cg_numbers int64_data;  /* int64 (decoded) */
    const char *name;
    const char *doc_string;
    cg_bytes raw_data;
    cg_string_pair *external_data;
    size_t external_count;
    int32_t data_location;
    bool has_data_location;
    cg_numbers double_data; /* double */
    cg_numbers uint64_data; /* uint64 (decoded) */
    cg_bytes unknown;
    /* Resolved by the loader for EXTERNAL tensors: the payload's bytes in the
     * external file's mapping (checked: contained path, no links, in range,
     * exact size). Not serialized. */
    cg_bytes external_payload;
} cg_tensor_proto;

typedef struct cg_sparse_tensor_proto { /* SparseTensorProto */
    cg_tensor_proto *values;
    cg_tensor_proto *indices;
    int64_t *dims;
    size_t rank;
    cg_bytes unknown;
} cg_sparse_tensor_proto;

/* --- graphs ------------------------------------------------------------ */

typedef struct cg_graph cg_graph;

typedef enum cg_attr_type { /* AttributeProto.AttributeType */
    CG_ATTR_UNDEFINED = 0,
    CG_ATTR_FLOAT = 1,
    CG_ATTR_INT = 2,
    CG_ATTR_STRING = 3,
    CG_ATTR_TENSOR = 4,
    CG_ATTR_GRAPH = 5,
    CG_ATTR_FLOATS = 6,
    CG_ATTR_INTS = 7,
    CG_ATTR_STRINGS = 8,
    CG_ATTR_TENSORS = 9,
    CG_ATTR_GRAPHS = 10,
    CG_ATTR_SPARSE_TENSOR = 11,
    CG_ATTR_SPARSE_TENSORS = 12,
    CG_ATTR_TYPE_PROTO = 13,
    CG_ATTR_TYPE_PROTOS = 14
} cg_attr_type;

typedef struct cg_attr { /* AttributeProto */
    const char *name;
    const char *ref_attr_name;
    const char *doc_string;
    int32_t type;
    bool has_type;
    float f;
    bool has_f;
    int64_t i;
    bool has_i;
    cg_bytes s;
    cg_tensor_proto *t;
    cg_graph *g;
    cg_sparse_tensor_proto *sparse_tensor;
    cg_type *tp;
    float *floats;
    size_t floats_count;
    int64_t *ints;
    size_t ints_count;
    cg_bytes *strings;
    size_t strings_count;
    cg_tensor_proto **tensors;
    size_t tensors_count;
    cg_graph **graphs;
    size_t graphs_count;
    cg_sparse_tensor_proto **sparse_tensors;
    size_t sparse_tensors_count;
    cg_type **type_protos;
    size_t type_protos_count;
    cg_bytes unknown;
} cg_attr;

typedef struct cg_node { /* NodeProto */
    const char **inputs; /* "" marks an omitted optional input */
    size_t input_count;
    const char **outputs;
    size_t output_count;
    const char *name;
    const char *op_type;
    const char *domain;
    cg_attr *attrs;
    size_t attr_count;
    const char *doc_string;
    cg_bytes unknown;
} cg_node;

typedef struct cg_tensor_annotation {
    const char *tensor_name;
    cg_string_pair *quant_params;
    size_t quant_param_count;
    cg_bytes unknown;
} cg_tensor_annotation;

struct cg_graph { /* GraphProto */
    cg_node *nodes;
    size_t node_count;
    const char *name;
    cg_tensor_proto *initializers;
    size_t initializer_count;
    cg_sparse_tensor_proto *sparse_initializers;
    size_t sparse_initializer_count;
    const char *doc_string;
    cg_value_info *inputs;
    size_t input_count;
    cg_value_info *outputs;
    size_t output_count;
    cg_value_info *value_infos;
    size_t value_info_count;
    cg_tensor_annotation *quant_annotations;
    size_t quant_annotation_count;
    cg_bytes unknown;
    /* Not part of the proto: nodes the loader moved to put the graph in
     * topological order (ONNX Runtime accepts out-of-order nodes and sorts
     * them; the loader does the same and the checker warns). 0: as written. */
    size_t reordered_nodes;
};

typedef struct cg_function { /* FunctionProto */
    const char *name;
    const char **inputs;
    size_t input_count;
    const char **outputs;
    size_t output_count;
    const char **attribute_names;
    size_t attribute_name_count;
    cg_attr *attribute_protos;
    size_t attribute_proto_count;
    cg_node *nodes;
    size_t node_count;
    const char *doc_string;
    cg_opset_id *opsets;
    size_t opset_count;
    const char *domain;
    cg_bytes unknown;
} cg_function;

typedef struct cg_training_info { /* TrainingInfoProto */
    cg_graph *initialization;
    cg_graph *algorithm;
    cg_string_pair *init_bindings;
    size_t init_binding_count;
    cg_string_pair *update_bindings;
    size_t update_binding_count;
    cg_bytes unknown;
} cg_training_info;

typedef struct cg_model { /* ModelProto, plus what owns its memory */
    int64_t ir_version;
    bool has_ir_version;
    cg_opset_id *opsets;
    size_t opset_count;
    const char *producer_name;
    const char *producer_version;
    const char *domain;
    int64_t model_version;
    bool has_model_version;
    const char *doc_string;
    cg_graph *graph;
    cg_string_pair *metadata;
    size_t metadata_count;
    cg_training_info *training_infos;
    size_t training_info_count;
    cg_function *functions;
    size_t function_count;
    cg_bytes unknown;

    /* Ownership; not part of the proto. */
    cg_arena *arena;
    struct cg_mapping *mappings; /* the model file and any external files */
    char *path;                  /* the file it was loaded from, or NULL */
    char *base_dir;              /* directory external data resolves against */
    size_t file_size;
    /* Set when the model was lowered from a .tflite file (convgate/tflite.h,
     * cg_tflite_lower): the source and where each node came from. Owned:
     * cg_model_free releases it through tflite_free, which the lowering sets
     * (the load stage does not know the TFLite one). */
    struct cg_tflite_lowering *tflite;
    void (*tflite_free)(struct cg_tflite_lowering *lowering);
} cg_model;

/* A size for one of the model's symbolic dims ("batch" = 4): how type
 * environments, samples and runs fix what the graph leaves open. */
typedef struct cg_dim_binding {
    const char *symbol;
    int64_t value;
} cg_dim_binding;

/* Limits applied while loading. Defaults from cg_load_options_default(). */
typedef struct cg_load_options {
    int max_message_depth;     /* protobuf nesting; 100 like protobuf */
    int max_subgraph_depth;    /* If/Loop/Scan nesting; 32 like ORT */
    size_t max_functions;      /* local functions */
    bool load_external_data;   /* map and check external tensors */
    const char *base_dir;      /* for cg_model_load_bytes with external data */
} cg_load_options;

CG_API void cg_load_options_default(cg_load_options *opt);

/* Memory-maps `path` and builds the model. Initializer payloads stay in the
 * mapping. On failure *out is NULL and err says why. */
CG_API CG_NODISCARD cg_status cg_model_load(const char *path, const cg_load_options *opt,
                                            cg_model **out, cg_error *err);

/* Parses a model held in memory. The bytes are copied once (the model must
 * not depend on the caller's buffer). External data requires opt->base_dir. */
CG_API CG_NODISCARD cg_status cg_model_load_bytes(const void *data, size_t size,
                                                  const cg_load_options *opt, cg_model **out,
                                                  cg_error *err);

CG_API void cg_model_free(cg_model *model);

/* Save options: external data moves every initializer with at least
 * `external_min_bytes` bytes of payload to `external_file` (a bare file name
 * written beside the model). An initializer the source read from external
 * data that does not move is written inline: the saved model never points
 * into the source's weights file. When no initializer reaches
 * external_min_bytes, nothing moves and no weights file is written; a file
 * of that name already beside the model would then no longer belong to it,
 * so the save is refused (CG_USAGE) and writes nothing. */
typedef struct cg_save_options {
    const char *external_file; /* NULL: keep everything inline */
    size_t external_min_bytes;
} cg_save_options;

/* What a save wrote. */
typedef struct cg_save_written {
    uint64_t model_bytes;
    const char *external_file; /* the weights file written beside the model
                                  (the options' name), NULL when none was */
    uint64_t external_bytes;
    size_t external_count;     /* initializers moved there */
} cg_save_written;

CG_API CG_NODISCARD cg_status cg_model_save(const cg_model *model, const char *path,
                                            const cg_save_options *opt, cg_error *err);
/* cg_model_save, filling *written (when not NULL) on success. */
CG_API CG_NODISCARD cg_status cg_model_save_written(const cg_model *model, const char *path,
                                                    const cg_save_options *opt,
                                                    cg_save_written *written, cg_error *err);

/* Serializes to a malloc'd buffer (caller frees). Inline data only. */
CG_API CG_NODISCARD cg_status cg_model_serialize(const cg_model *model, uint8_t **out,
                                                 size_t *out_size, cg_error *err);

/* Loads one TensorProto (.pb file, the ONNX test-data format). The returned
 * tensor and its payload live in *arena_model's arena (free with
 * cg_model_free); the model has no graph. */
CG_API CG_NODISCARD cg_status cg_tensor_proto_load(const char *path, cg_model **holder,
                                                   cg_tensor_proto **out, cg_error *err);

/* Parses one TensorProto held in memory (copied once into the holder). */
CG_API CG_NODISCARD cg_status cg_tensor_proto_load_bytes(const void *data, size_t size,
                                                         cg_model **holder, cg_tensor_proto **out,
                                                         cg_error *err);

/* Element count of a TensorProto's dims with overflow checking. */
CG_API CG_NODISCARD cg_status cg_tensor_proto_numel(const cg_tensor_proto *t, int64_t *out,
                                                    cg_error *err);

/* The opset version the model imports for `domain` ("" = ai.onnx), or -1. */
CG_API int64_t cg_model_opset(const cg_model *model, const char *domain);

/* Arena allocation, for code that builds or rewrites models. */
CG_API void *cg_arena_alloc(cg_arena *arena, size_t size);
CG_API char *cg_arena_strdup(cg_arena *arena, const char *s);

#ifdef __cplusplus
}
#endif
#endif
