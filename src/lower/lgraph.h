/*
 * The editable graph behind every lowering (src/lower): a copy of one ONNX
 * graph that transformations rewrite in place, and that is written back as
 * a cg_graph once they are done.
 *
 * Invariants:
 *  - Every string, attribute array and new tensor lives in the arena of the
 *    model being built (lg_model.arena); source payloads are referenced,
 *    never copied, so the result must not outlive the source model.
 *  - Nodes are never moved or freed: a removed node is marked dead. Node
 *    indices are stable for the whole lowering; new nodes are appended.
 *  - `origins` of a node lists source-graph node indices (of the graph the
 *    lg_graph was loaded from) the node stands for; a node made by a fusion
 *    carries the union of the nodes it replaced. Removed source nodes are
 *    recorded once each, with the transformation that removed them.
 *  - The index (producer and consumers of each name) is rebuilt on demand
 *    after any edit (lg_touch marks it stale), so transformations may query
 *    it freely between edits.
 */
#ifndef CG_LOWER_LGRAPH_H
#define CG_LOWER_LGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/target.h"
#include "core/strmap.h"

typedef struct lg_graph lg_graph;

/* The static type of a value, as a runtime's own type inference knows it. */
typedef struct lg_type {
    bool has_dtype;
    int32_t dtype;
    bool has_shape;       /* rank known */
    int rank;
    int64_t dims[CG_MAX_RANK];
    uint32_t dim_known;   /* bit d: dims[d] is a concrete value */
} lg_type;

typedef struct lg_node {
    const char *name;
    const char *op_type;
    const char *domain;   /* "" for ai.onnx */
    const char *doc_string;
    const char **inputs;  /* "" = omitted optional input */
    size_t input_count;
    const char **outputs;
    size_t output_count;
    cg_attr *attrs;
    size_t attr_count;
    lg_graph **bodies;    /* per attribute: its subgraph (GRAPH attributes), else NULL */
    int64_t since;        /* since_version of its schema at the model's opset; 0 unknown */
    bool dead;
    const char *removed_by;    /* the transformation that removed it */
    const char *removed_into;  /* the node it was fused into, or NULL */
    size_t *origins;
    size_t origin_count;
    /* A lowering into another op set (onnx-to-tflite): the source op type
     * this node translates (CONV_2D from a Conv), so that its origin of that
     * op counts as kept, not removed; NULL when op_type is the source's. */
    const char *translates;
    /* Stands for every one of its origins (a .tflite's operator and the IR
     * nodes it was lowered to): none of them counts as removed. */
    bool keeps_origins;
} lg_node;

typedef struct lg_init {
    const char *name;
    const cg_tensor_proto *tensor; /* source tensor or one built in the arena */
    bool dead;
} lg_init;

/* Producer/consumer index of one graph. */
typedef struct lg_use {
    size_t node;
    size_t input; /* input slot */
} lg_use;

typedef struct lg_index_entry {
    const char *name;
    size_t producer;     /* node index, SIZE_MAX if none in this graph */
    size_t producer_out; /* output slot */
    lg_use *uses;        /* explicit inputs of live nodes of this graph */
    size_t use_count;
    size_t implicit_uses;/* live nodes whose bodies read the name from this scope */
    bool graph_output;
    bool graph_input;
    size_t init;         /* lg_init index, SIZE_MAX if none */
} lg_index_entry;

typedef struct lg_model lg_model;

struct lg_graph {
    lg_model *model;
    lg_graph *parent;          /* enclosing graph, NULL for the main graph */
    const cg_graph *source;
    const char *path;          /* "" main graph; "loop1/body" for a body */
    lg_node *nodes;
    size_t node_count, node_cap;
    lg_init *inits;
    size_t init_count, init_cap;
    const cg_value_info *inputs;  /* the source's, unchanged */
    size_t input_count;
    const char **outputs;         /* graph output names (an Identity's removal may rename) */
    const cg_value_info *output_infos;
    size_t output_count;
    /* the index, valid when !stale */
    bool stale;
    lg_index_entry *entries;
    size_t entry_count, entry_cap;
    cg_strmap entry_index;        /* name -> index into entries */
    /* types by name */
    struct lg_typed *types;
    size_t type_count, type_cap;
    cg_strmap type_index;         /* name -> index into types */
    uint64_t name_counter;        /* for generated names */
    bool modified;                /* edited since loading (or lg_clear_modified) */
};

struct lg_model {
    const cg_model *source;
    cg_arena *arena;
    lg_graph *main;
    cg_lowered *out;              /* where removals and notes are recorded */
    /* Shapes the lowering was asked for (cg_lower's dims). */
    const cg_dim_binding *dims;
    size_t dim_count;
    /* The inputs its shape runs are fed (cg_lower_fed; NULL: random). */
    const cg_named_value *feeds;
    size_t feed_count;
    /* lg_emit writes every value's type (its lg_type) as the graph's
     * inputs, outputs and value_info: a lowering into ops the reference
     * cannot run (onnx-to-tflite) is typed from these declarations. */
    bool declare_types;
    cg_error *err;
    bool oom;
};

/* --- building --------------------------------------------------------------------- */

/* Loads the main graph (and every body, recursively) of src into m, which
 * must have arena, source and out set. Types start from the declared
 * inputs, outputs, value_info and initializers, then `types` (the main
 * graph's type environment, may be NULL) for the rest of the main graph. */
cg_status lg_load(lg_model *m, const cg_type_env *types, cg_error *err);
void lg_free(lg_model *m);

/* Writes the live graph back into a cg_model built in m->arena (nodes in
 * topological order, initializers that are still used). */
cg_status lg_emit(lg_model *m, cg_model *out, cg_error *err);

/* --- queries ---------------------------------------------------------------------- */

/* The index entry of name in g (NULL when the name is not used or defined
 * in g). Rebuilds the index when stale. */
const lg_index_entry *lg_lookup(lg_graph *g, const char *name);
/* Marks g's index stale and g modified (after any edit of g). */
void lg_touch(lg_graph *g);
/* Clears the modified marks of g and its bodies; whether any is set. */
void lg_clear_modified(lg_graph *g);
bool lg_any_modified(const lg_graph *g);

/* Number of explicit uses plus body uses; whether the name is a graph output. */
size_t lg_use_count(lg_graph *g, const char *name);
bool lg_is_graph_output(lg_graph *g, const char *name);
bool lg_is_graph_input(lg_graph *g, const char *name);

/* The node producing name in g, or NULL. */
lg_node *lg_producer(lg_graph *g, const char *name);

/* The initializer called name in g, or, when check_outer, in an enclosing
 * graph whose scope it comes from; NULL if none. Constant means it cannot
 * be overridden by a graph input (ONNX IR >= 4 makes an initializer listed
 * as graph input a default, not a constant). */
const cg_tensor_proto *lg_initializer(lg_graph *g, const char *name, bool check_outer);
const cg_tensor_proto *lg_constant(lg_graph *g, const char *name, bool check_outer);

/* True when the node produces a graph output of g. */
bool lg_produces_graph_output(lg_graph *g, const lg_node *n);
/* Count of live-node input slots of g reading any output of n, plus body uses. */
size_t lg_output_edge_count(lg_graph *g, const lg_node *n);

/* Topological order of the live nodes of g (stable: file order among
 * ready nodes). *order is malloc'd; returns false when out of memory. */
bool lg_topo_order(lg_graph *g, size_t **order, size_t *count);
/* Types the source for a lowering into ops the reference does not run
 * (sets m->declare_types): one reference run at the lowering's dims and
 * feeds; when that run fails, the declared shapes, with a note saying why.
 * *out is the caller's to free. */
cg_status lg_type_source(lg_model *m, cg_type_env **out, cg_error *err);
/* Visits the live nodes of g in lg_topo_order, each node's bodies (walked
 * the same way) before the node, and stops at the first status that is not
 * CG_OK. The order is taken once per graph, before any visit: a node a
 * visit adds is not visited, a node it removes is skipped. */
typedef cg_status (*lg_visit_fn)(lg_graph *g, size_t ni, void *user, cg_error *err);
cg_status lg_walk(lg_graph *g, lg_visit_fn visit, void *user, cg_error *err);

/* The attribute called name, or NULL. */
const cg_attr *lg_attr(const lg_node *n, const char *name);
bool lg_attr_int(const lg_node *n, const char *name, int64_t *out);
bool lg_attr_float(const lg_node *n, const char *name, float *out);
/* true and *out NUL-terminated (arena) when the attribute is a string */
bool lg_attr_string(const lg_node *n, const char *name, const char **out);
/* ints attribute: pointer and count, false when absent or of another type */
bool lg_attr_ints(const lg_node *n, const char *name, const int64_t **v, size_t *count);

bool lg_is_op(const lg_node *n, const char *domain, const char *op);
/* lg_is_op with the schema's since_version one of versions[] (count entries). */
bool lg_is_op_version(const lg_node *n, const char *op, const int *versions, size_t count);

/* --- types ------------------------------------------------------------------------ */

const lg_type *lg_type_get(lg_graph *g, const char *name);
/* Sets (replaces) the type of name; false when out of memory. */
bool lg_type_set(lg_graph *g, const char *name, const lg_type *t);
void lg_type_from_tensor(const cg_tensor_proto *tp, lg_type *t);
/* The declared type of a value_info; false when it declares no tensor type. */
bool lg_type_from_info(const cg_value_info *vi, lg_type *t);

/* --- edits ------------------------------------------------------------------------ */

char *lg_strdup(lg_model *m, const char *s);
/* A name no value of the model uses yet: "<base>_<n>". */
const char *lg_fresh_name(lg_graph *g, const char *base);

/* Appends a node (inputs/outputs/attrs copied into the arena). Returns its
 * index or SIZE_MAX when out of memory. */
size_t lg_add_node(lg_graph *g, const char *op_type, const char *domain, const char *name,
                   const char *const *inputs, size_t input_count, const char *const *outputs,
                   size_t output_count, const cg_attr *attrs, size_t attr_count);
/* Adds a to n's origins (and a's origins when a is a node of the same graph). */
bool lg_add_origins(lg_graph *g, size_t n, size_t from);
/* Adds an initializer (tensor->name is its name); false when out of memory. */
bool lg_add_init(lg_graph *g, const cg_tensor_proto *tensor);
/* Replaces input slot i of node n. */
void lg_set_input(lg_graph *g, size_t n, size_t i, const char *name);
/* Replaces every explicit use of old_name by live nodes of g by new_name, and
 * every free use inside their bodies. */
void lg_rename_uses(lg_graph *g, const char *old_name, const char *new_name);
/* Marks node n dead, removed by `by`; when `into` is a node index (else
 * SIZE_MAX) that node absorbs n's origins. */
void lg_remove(lg_graph *g, size_t n, const char *by, size_t into);
/* Fills the lowering's removed list: every source node no live node of its
 * op type (or translating its op type) stands for (call once, after the
 * last transformation). */
bool lg_record_removals(lg_model *m);
/* Sets or replaces an attribute of node n (copied into the arena). */
bool lg_set_attr(lg_graph *g, size_t n, const cg_attr *a);

/* ORT's graph_utils::RemoveNode for a node CanRemoveNode accepted: its
 * consumers read its single input instead (the producer's output, or the
 * initializer / graph input). */
void lg_bypass(lg_graph *g, size_t n, const char *by);

/* Records a note on the lowering. */
void lg_note(lg_model *m, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --- tensors ---------------------------------------------------------------------- */

/* Element count of an initializer; false when invalid. */
bool lg_tensor_numel(const cg_tensor_proto *tp, int64_t *out);
/* Reads element i of a numeric tensor as double / int64; false when the
 * tensor has no such element or a dtype that is not numeric. */
bool lg_tensor_f64(const cg_tensor_proto *tp, int64_t i, double *out);
bool lg_tensor_i64(const cg_tensor_proto *tp, int64_t i, int64_t *out);
/* A new tensor proto in the arena with raw little-endian data (copied). */
cg_tensor_proto *lg_tensor_new(lg_model *m, const char *name, int32_t dtype, const int64_t *dims,
                               size_t rank, const void *raw, size_t raw_len);

/* A TensorProto in the arena holding a runtime tensor value (raw data, or
 * string_data); NULL when v is not a tensor of at most CG_MAX_RANK dims
 * (m->oom set when out of memory). */
cg_tensor_proto *lg_tensor_from_value(lg_model *m, const cg_value *v, const char *name);
/* Runs node n of g alone on the reference kernels, its present inputs read
 * from the constants lg_constant finds (the caller checks they exist). On
 * success *ok is true and outs[o] is a new initializer for each named
 * output; otherwise why says what failed. Errors: out of memory only. */
cg_status lg_eval_node(lg_graph *g, const lg_node *n, cg_tensor_proto **outs, bool *ok,
                       char *why, size_t why_len, cg_error *err);

#endif
