/* State shared by the ONNX reader, the external-data resolver and model.c. */
#ifndef CG_LOAD_INTERNAL_H
#define CG_LOAD_INTERNAL_H

#include <stdint.h>

#include "convgate/model.h"

/* Rank cap for shapes and tensors read from a file (ONNX caps at 1024). */
#define CG_MAX_LOAD_RANK 1024

typedef struct rd_ctx {
    cg_arena *arena;
    cg_error *err;
    const char *label;    /* file name for messages */
    const uint8_t *base;  /* start of the bytes being parsed, for offsets */
    cg_load_options opt;
    int depth;            /* current protobuf nesting */
    int graph_depth;      /* current subgraph nesting */
    /* every TensorProto read, for the external-data pass */
    cg_tensor_proto **tensors;
    size_t tensor_count, tensor_cap;
} rd_ctx;

cg_status cg_read_model(rd_ctx *c, const uint8_t *data, size_t len, cg_model *out);
cg_status cg_read_tensor(rd_ctx *c, const uint8_t *data, size_t len, cg_tensor_proto *out);
/* Remembers a tensor for the external-data pass. */
cg_status cg_register_tensor(rd_ctx *c, cg_tensor_proto *t);
/* Resolves and checks every EXTERNAL tensor registered in c against
 * model->base_dir, mapping each distinct file once. */
cg_status cg_resolve_external(rd_ctx *c, cg_model *model);

/* Sorts every graph of m whose nodes are acyclic but out of topological
 * order (stably) and records how many nodes moved in the graph's
 * reordered_nodes; cyclic graphs are left as they are (src/load/topo.c). */
cg_status cg_sort_topological(cg_model *m, cg_error *err);

#endif
