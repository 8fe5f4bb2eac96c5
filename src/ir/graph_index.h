/*
 * The graph index: the dependency structure of one graph, built once for
 * the stages that need more than a walk (the partitioner, bisection, the
 * assignment validator).
 *
 * Every value gets a dense id: graph inputs first, then initializers (dense
 * and sparse), then node outputs in node order, then the names the graph
 * reads from enclosing scopes (its own nodes' inputs, and what its
 * subgraphs read, at any depth, that they do not define). A node reads
 * what its inputs name plus what its subgraphs take from outside: for a
 * control-flow node that is a real dependency.
 *
 * Invariants once built:
 *  - a name has one id; a value has at most one producing node (two
 *    producers fail the build: the model is not SSA);
 *  - no node reads its own output, and order[] is a topological order of
 *    the nodes (file order when it already is one, as ONNX requires; a
 *    cycle fails the build naming a node on it), pos[] its inverse;
 *  - every CSR list (in_val, out_val, pred, succ, cons) holds each entry
 *    once; pred/succ/cons are in ascending node order.
 */
#ifndef CG_IR_GRAPH_INDEX_H
#define CG_IR_GRAPH_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "core/strmap.h"

#define CG_IX_NONE SIZE_MAX

enum {
    CG_IX_INIT = 1,   /* an initializer (dense or sparse) */
    CG_IX_INPUT = 2,  /* a graph input (an initializer too: an input with a default) */
    CG_IX_OUTPUT = 4, /* a graph output */
    CG_IX_OUTER = 8   /* read here, defined in an enclosing scope */
};

typedef struct cg_graph_index {
    const cg_graph *graph;
    /* the index of the graph holding the node whose attribute this graph
     * is, or NULL: where CG_IX_OUTER names resolve (cg_graph_index_resolve) */
    const struct cg_graph_index *outer;
    size_t node_count;
    size_t value_count;
    const char **value_name;   /* per value: borrowed from the model */
    size_t *producer;          /* per value: node index, or CG_IX_NONE */
    size_t *initializer;       /* per value: index in graph->initializers, or CG_IX_NONE */
    uint8_t *value_flags;      /* per value: CG_IX_* */
    size_t *in_off, *in_val;   /* per node: distinct values read */
    size_t *out_off, *out_val; /* per node: values produced (named outputs) */
    size_t *pred_off, *pred;   /* per node: distinct producer nodes */
    size_t *succ_off, *succ;   /* per node: distinct consumer nodes */
    size_t *cons_off, *cons;   /* per value: distinct consumer nodes */
    size_t *order, *pos;       /* topological order and each node's place in it */
    cg_strmap ids;             /* name -> value id */
} cg_graph_index;

/* Builds the index of g. outer: the index of the enclosing graph when g is
 * a subgraph, else NULL (it must outlive ix). On failure ix is zeroed and
 * err names the graph and the node or value at fault. */
cg_status cg_graph_index_build(const cg_graph *g, const cg_graph_index *outer,
                               cg_graph_index *ix, cg_error *err);
void cg_graph_index_free(cg_graph_index *ix);

/* The id of the value named `name` in this graph, or CG_IX_NONE. */
size_t cg_graph_index_value(const cg_graph_index *ix, const char *name);

/* The dense initializer named `name` in this graph, or NULL. */
const cg_tensor_proto *cg_graph_index_initializer(const cg_graph_index *ix, const char *name);

/* Outer-scope lookup: the innermost index (ix itself or an enclosing one)
 * that defines `name` (as input, initializer or node output), *id its id
 * there and *up how many scopes outward (0: ix). NULL when no scope in the
 * chain defines it. */
const cg_graph_index *cg_graph_index_resolve(const cg_graph_index *ix, const char *name,
                                             size_t *id, int *up);

#endif
