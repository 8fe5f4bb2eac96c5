/* Depth-first visits of every node of a graph and its subgraphs. */
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

#endif
