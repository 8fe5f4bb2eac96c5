/*
 * The mutable graph behind every rewrite (src/rewrite): the main graph of a
 * model as node and initializer lists that rewrites edit, emitted back as a
 * cg_model the writer (src/load/onnx_write.c) serializes.
 *
 * Invariants:
 *  - Strings, node arrays and new tensors live in the graph's arena; the
 *    source model's strings and payloads are borrowed, so a graph must not
 *    outlive its source. rw_materialize gives a model that owns everything
 *    (serialized and read back), independent of both.
 *  - Nodes are never moved: a removed node is marked dead and new nodes are
 *    appended. rw_emit writes the live nodes in a topological order (file
 *    order among the ready ones), so an edit may append a producer after
 *    its consumers.
 *  - Every name the model uses (values and nodes of every graph, subgraphs
 *    included) is in `names`: rw_fresh never hands out a name in use, and
 *    a new node or value gets a fresh name.
 *  - value_info entries are kept for names that still exist and dropped for
 *    the rest when the graph is emitted; a rewrite that changes a kept
 *    value's type must not happen (rewrites preserve every value they keep).
 *  - Subgraphs (If/Loop/Scan bodies) are kept as they are. A value a body
 *    reads from the main graph counts as a use by its control-flow node
 *    (rw_captured): rewrites leave such values in place.
 *  - The index (producers and consumers, ir/graph_index.h over the live
 *    nodes) is rebuilt on demand after an edit, so rewrites may query it
 *    freely between edits.
 */
#ifndef CG_REWRITE_RGRAPH_H
#define CG_REWRITE_RGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/target.h"
#include "convgate/tensor.h"
#include "core/strmap.h"
#include "ir/graph_index.h"

#define RW_NONE SIZE_MAX

typedef struct rw_node {
    cg_node n; /* arrays and strings in the graph's arena (or the source's) */
    bool dead;
} rw_node;

typedef struct rw_graph {
    const cg_model *src;
    cg_arena *arena;
    int64_t opset;                 /* the ai.onnx import */
    size_t src_node_count;         /* nodes [0, src_node_count) are the source's, in order */
    rw_node *nodes;
    size_t node_count, node_cap;
    cg_tensor_proto *inits;        /* shallow copies of the source's, then new ones */
    bool *init_dead;
    size_t init_count, init_cap, src_init_count;
    cg_value_info *inputs;         /* arena copies: rewrites may fix symbolic dims */
    size_t input_count;
    cg_value_info *outputs;
    size_t output_count;
    cg_strmap names;               /* every name in use (keys borrowed or in the arena) */
    uint64_t counter;              /* for fresh names */
    size_t edits;                  /* how many edits so far */
    bool oom;                      /* an edit ran out of memory: the graph is unusable */
    /* dead code the source already had (nodes nothing reads, unread
     * initializers): only dead-node-elimination removes it */
    bool *pre_dead_node, *pre_dead_init;
    /* the index over the live nodes, valid when !stale */
    bool stale;
    cg_graph view;
    cg_node *view_nodes;
    size_t *view_to_node;          /* view node index -> nodes[] index */
    cg_graph_index ix;
    bool ix_built;
} rw_graph;

/* Loads the main graph of src (which must outlive g). */
cg_status rw_load(rw_graph *g, const cg_model *src, cg_error *err);
void rw_free(rw_graph *g);

/* Writes the live graph as a model (fields from the source, nodes in
 * topological order, initializers that are still read or are graph inputs,
 * value_info of names that still exist) and serializes it and reads it
 * back: *out owns everything. CG_INVALID when the edits left a cycle or a
 * value read but never defined (a rewrite's bug, named). */
cg_status rw_materialize(rw_graph *g, cg_model **out, cg_error *err);

/* --- queries (rebuild the index when stale) ------------------------------------------ */

/* The live node producing name, or RW_NONE. */
size_t rw_producer(rw_graph *g, const char *name);
/* Distinct live nodes reading name (control-flow nodes whose bodies read
 * it included), written to nodes[0..cap) in node order; returns the count. */
size_t rw_consumers(rw_graph *g, const char *name, size_t *nodes, size_t cap);
/* Live input slots reading name (explicit inputs only). */
size_t rw_input_uses(rw_graph *g, const char *name);
bool rw_is_graph_output(rw_graph *g, const char *name);
bool rw_is_graph_input(rw_graph *g, const char *name);
/* Read by a control-flow node's body (not through its explicit inputs). */
bool rw_captured(rw_graph *g, const char *name);
/* The constant named name: an initializer that is not also a graph input
 * (that would make it a default the caller may override), or the value of
 * a live Constant node with a `value` tensor. NULL otherwise. */
const cg_tensor_proto *rw_constant(rw_graph *g, const char *name);
/* The constant decoded (cg_value_from_tensor_proto); CG_OK and *out NULL
 * when name is not a constant. */
cg_status rw_constant_value(rw_graph *g, const char *name, cg_value **out, cg_error *err);
/* A scalar (or one-element) numeric constant as double; false otherwise. */
bool rw_constant_scalar(rw_graph *g, const char *name, double *out);
/* True when n is a live ai.onnx node of type op. */
bool rw_is(const rw_node *n, const char *op);
/* The output count of a node that is actually read (or a graph output). */
size_t rw_used_outputs(rw_graph *g, size_t node);

/* --- edits -------------------------------------------------------------------------- */

/* A name no value or node of the model uses: hint, else hint_2, hint_3... */
const char *rw_fresh(rw_graph *g, const char *hint);
/* Appends an ai.onnx node; outputs NULL entries get fresh names from the
 * node's name. Returns its index, RW_NONE when out of memory (g->oom). */
size_t rw_add_node(rw_graph *g, const char *op, const char *name_hint, const char *const *ins,
                   size_t nin, const char **outs, size_t nout);
/* The node's output `i` (convenience for chains). */
const char *rw_out(rw_graph *g, size_t node, size_t i);
/* Sets (or replaces) an attribute of node n; false when out of memory. */
bool rw_set_attr_int(rw_graph *g, size_t n, const char *name, int64_t v);
bool rw_set_attr_float(rw_graph *g, size_t n, const char *name, float v);
bool rw_set_attr_ints(rw_graph *g, size_t n, const char *name, const int64_t *v, size_t count);
bool rw_set_attr_string(rw_graph *g, size_t n, const char *name, const char *s);
/* Copies attributes from another node (e.g. a node being replaced). */
bool rw_copy_attrs(rw_graph *g, size_t n, const cg_node *from);
/* Marks node n dead. */
void rw_kill(rw_graph *g, size_t n);
/* Replaces input slot i of node n. */
void rw_set_input(rw_graph *g, size_t n, size_t slot, const char *name);
/* Makes every reader of old_name read new_name instead. old_name's producer
 * must already be dead (or old_name a graph input left unused). When
 * old_name is a graph output the output keeps its name: new_name's
 * producer is renamed to produce it (when new_name is a node output read
 * only inside this graph), else an Identity is added. False when out of
 * memory, or when a body captures old_name (callers check rw_captured). */
bool rw_replace(rw_graph *g, const char *old_name, const char *new_name);
/* Adds an initializer holding a copy of t (numeric dtypes) under a fresh
 * name from hint; returns its name, NULL when out of memory. */
const char *rw_add_tensor(rw_graph *g, const char *hint, const cg_tensor *t);
/* The same under exactly `name`: a value whose producer was just removed
 * (constant folding keeps the names of the values it computes). */
const char *rw_add_tensor_named(rw_graph *g, const char *name, const cg_tensor *t);
/* Shorthands for small constants. */
const char *rw_add_f32(rw_graph *g, const char *hint, int rank, const int64_t *dims,
                       const float *v);
const char *rw_add_i64(rw_graph *g, const char *hint, int rank, const int64_t *dims,
                       const int64_t *v);
const char *rw_add_scalar(rw_graph *g, const char *hint, cg_dtype dt, double v);
/* Whether Reduce* op takes its axes as an input at the graph's opset
 * (ReduceSum from 13, the others from 18) rather than an attribute. */
bool rw_reduce_axes_as_input(const rw_graph *g, const char *op);
/* A Reduce* node op of x over axes (as input or attribute, as the opset
 * wants) with keepdims; its output, NULL when out of memory. */
const char *rw_add_reduce(rw_graph *g, const char *op, const char *x, const int64_t *axes,
                          int naxes, int64_t keepdims, const char *hint);
/* Removes dead code: nodes none of whose outputs is read or a graph
 * output, repeatedly, then initializers nothing reads (graph inputs kept).
 * all false: only what the edits left unread (rw_materialize does that);
 * true: the source's own dead code too. Returns the nodes removed. */
size_t rw_prune(rw_graph *g, bool all);
/* Live node count. */
size_t rw_live_count(const rw_graph *g);

/* --- attribute reads of a live node (ir/walk.h's, on rw nodes) ------------------------ */

const cg_attr *rw_attr(const rw_graph *g, size_t n, const char *name);
int64_t rw_attr_int(const rw_graph *g, size_t n, const char *name, int64_t dflt);
float rw_attr_float(const rw_graph *g, size_t n, const char *name, float dflt);
/* The string attribute, or dflt; copied into buf (NUL-terminated). */
const char *rw_attr_string(const rw_graph *g, size_t n, const char *name, const char *dflt,
                           char *buf, size_t cap);
const int64_t *rw_attr_ints(const rw_graph *g, size_t n, const char *name, size_t *count);

#endif
