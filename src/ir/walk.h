/* Depth-first visits of every node of a graph and its subgraphs, and the
 * small IR queries every stage asks (attributes by name, initializers by
 * name, the default domain). */
#ifndef CG_IR_WALK_H
#define CG_IR_WALK_H

#include "convgate/model.h"

/* Called for each node; depth 0 is the main graph. Returning false stops. */
typedef bool (*cg_node_visit_fn)(void *user, const cg_graph *graph, const cg_node *node, int depth);

/* Visits nodes in file order, descending into GRAPH/GRAPHS attributes right
 * after the node that owns them. Returns false if the visitor stopped. */
bool cg_graph_walk(const cg_graph *graph, cg_node_visit_fn fn, void *user);

/* True for If, Loop, Scan (ai.onnx). */
bool cg_node_is_control_flow(const cg_node *node);

/* Payload bytes of an initializer: numel x element size for fixed-size
 * types when the element count is valid, else the bytes actually stored. */
uint64_t cg_tensor_proto_bytes(const cg_tensor_proto *t);

/* The TensorProto field that holds a dtype's values when raw_data does not
 * (onnx/onnx.proto, TensorProto: each *_data field lists its element
 * types). The one table the checker and the runtime read. */
typedef enum cg_proto_field {
    CG_PROTO_FIELD_NONE = 0, /* UNDEFINED, or a value that names no dtype */
    CG_PROTO_FIELD_FLOAT,
    CG_PROTO_FIELD_INT32,
    CG_PROTO_FIELD_STRING,
    CG_PROTO_FIELD_INT64,
    CG_PROTO_FIELD_DOUBLE,
    CG_PROTO_FIELD_UINT64,
} cg_proto_field;
cg_proto_field cg_proto_field_of(int32_t data_type);
/* "float_data", "int32_data", ...; NULL for CG_PROTO_FIELD_NONE. */
const char *cg_proto_field_name(cg_proto_field f);
/* How many values t holds in field f (strings for the string field). */
size_t cg_proto_field_count(const cg_tensor_proto *t, cg_proto_field f);
/* How many values of its field nelem (>= 0) elements of data_type take: two
 * per complex element, one per two 4-bit elements (rounded up), else one. */
uint64_t cg_proto_field_values(int32_t data_type, int64_t nelem);

/* True for the spellings of ONNX's default domain: NULL, "" and "ai.onnx". */
bool cg_domain_is_default(const char *domain);

/* The node's attribute named `name` (the first, should the node repeat
 * one: the checker reports that), or NULL. */
const cg_attr *cg_node_attr(const cg_node *n, const char *name);
/* Typed reads with the value to use when the attribute is absent or of
 * another type. An untyped attribute (no `type` field, IR < 2) counts by
 * the field it sets; a FLOAT read of an INT attribute converts it. */
int64_t cg_node_attr_int(const cg_node *n, const char *name, int64_t dflt);
float cg_node_attr_float(const cg_node *n, const char *name, float dflt);
/* The list and its length; NULL and *count = 0 when absent. */
const int64_t *cg_node_attr_ints(const cg_node *n, const char *name, size_t *count);
const float *cg_node_attr_floats(const cg_node *n, const char *name, size_t *count);

/* The dense initializer of g named `name` (first match), or NULL. A linear
 * scan: for many lookups build a cg_graph_index (ir/graph_index.h). */
const cg_tensor_proto *cg_graph_initializer(const cg_graph *g, const char *name);

/* The node's name, else "#index", in buf (for messages). */
const char *cg_graph_node_name(const cg_graph *g, size_t node, char *buf, size_t len);

#endif
