/*
 * The lowering of a .tflite onto the IR (cg_tflite_lower), shared by
 * lower.c (graphs, names, constants, control flow) and lower_ops.c (one
 * function per builtin, in a table).
 *
 * A `lw_scope` is one instance of a TFLite subgraph being lowered into one
 * ONNX graph under construction (`lw_sink`): its `vname` table names the
 * value each TFLite tensor has in that graph. The main subgraph is one
 * scope; an IF branch or a WHILE body is a scope of its own sink; a WHILE's
 * condition is lowered twice, once inline before the Loop and once at the
 * end of the Loop's body. Errors are sticky: the first failure is recorded
 * in `lw.st`/`lw.err` and every helper becomes a no-op returning NULL, so an
 * op function builds its nodes straight through and returns lw_status().
 */
#ifndef CG_TFLITE_LOWER_H
#define CG_TFLITE_LOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/tensor.h"
#include "convgate/tflite.h"
#include "core/strmap.h"

#define LW_OPSET 21          /* ai.onnx opset of a lowered model */
#define LW_MAX_ATTRS 16      /* attributes of one lowered node */

typedef struct lw {
    const cg_tflite_model *tm;
    const char *label;      /* the file, for messages */
    cg_model *m;
    cg_arena *arena;
    cg_status st;           /* sticky: the first failure */
    cg_error *err;
    cg_strmap names; /* the value names in use (a set: values unused) */
    cg_tflite_origin *origins;
    size_t origin_count, origin_cap;
    /* operators lowered over every instance of every subgraph, and the
     * most allowed: a file whose subgraphs call each other from many places
     * would otherwise expand exponentially */
    size_t ops_lowered, ops_budget;
} lw;

typedef struct lw_sink { /* one ONNX graph under construction */
    cg_node *nodes;
    int32_t *node_sg, *node_op; /* origin of each node */
    size_t node_count, node_cap;
    cg_tensor_proto *inits;
    size_t init_count, init_cap;
} lw_sink;

typedef struct lw_scope {
    lw *lw;
    lw_sink *sink;
    const cg_tflite_subgraph *sg;
    int32_t sg_index;
    const char **vname;     /* per tensor of sg: its value name here, NULL until defined */
    const char *prefix;     /* of node names ("" in the main graph) */
    /* the operator being lowered */
    const cg_tflite_operator *op;
    int32_t op_index;
    const char *op_name;
    int32_t origin_sg, origin_op; /* what the nodes emitted now record */
} lw_scope;

/* --- status ------------------------------------------------------------------ */

bool lw_ok(const lw_scope *s);
cg_status lw_status(const lw_scope *s);
/* Records "FILE: subgraph N 'name' > operator #i (OP): message" (the first
 * failure wins) and returns st. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
cg_status lw_fail(lw_scope *s, cg_status st, const char *fmt, ...);

/* --- tensors of the TFLite operator ------------------------------------------ */

/* Input / output i of the operator (NULL when omitted or past the end). */
const cg_tflite_tensor *lw_in_t(const lw_scope *s, size_t i);
const cg_tflite_tensor *lw_out_t(const lw_scope *s, size_t i);
/* The tensor's element type (CG_DTYPE_UNDEFINED for types convgate lacks). */
cg_dtype lw_dtype(const cg_tflite_tensor *t);
/* An int8/uint8/int16 tensor with per-tensor or per-axis affine quantization. */
bool lw_quantized(const cg_tflite_tensor *t);
/* The operator's tensor name for messages: "tensor 3 'x'". */
const char *lw_tensor_label(const lw_scope *s, const cg_tflite_tensor *t, char *buf, size_t n);
/* The static shape of a tensor of known rank; false (recorded) otherwise. */
bool lw_static_shape(lw_scope *s, const cg_tflite_tensor *t, const char *what, int rank);

/* --- values -------------------------------------------------------------------- */

/* The value of operator input i: a value defined earlier in this scope, or
 * a constant (an initializer of the sink, made on first use); "" for an
 * omitted optional input. */
const char *lw_in(lw_scope *s, size_t i);
/* Defines output i of the operator and returns its value name. */
const char *lw_out(lw_scope *s, size_t i);
/* A fresh value name for a step inside the operator. */
const char *lw_tmp(lw_scope *s, const char *hint);
/* A constant tensor's bytes, checked against its shape and type. */
bool lw_const_bytes(lw_scope *s, const cg_tflite_tensor *t, const char *what, cg_bytes *out);
/* A constant integer tensor (int32/int64) read into a malloc'd array; false
 * (recorded) when the tensor is not constant or not an integer tensor. */
bool lw_const_ints(lw_scope *s, const cg_tflite_tensor *t, const char *what, int64_t **vals,
                   size_t *count);
/* New initializers of the sink (the data is copied into the model). */
const char *lw_init(lw_scope *s, const char *hint, cg_dtype dt, int rank, const int64_t *dims,
                    const void *data);
const char *lw_init_i64(lw_scope *s, const char *hint, const int64_t *v, size_t n);
/* A scalar of dtype dt (a float type or an integer type) holding v. */
const char *lw_init_scalar(lw_scope *s, const char *hint, cg_dtype dt, double v);
/* Constant tensor t with its dims permuted (perm[k] = source axis of axis k). */
const char *lw_init_permuted(lw_scope *s, const cg_tflite_tensor *t, const char *what,
                             const int *perm, int rank);

/* --- nodes ---------------------------------------------------------------------- */

/* A node of the sink; the pointer is valid until the next lw_node. `part`
 * names a step of the operator ("to_nchw"); NULL for its main node. */
cg_node *lw_node(lw_scope *s, const char *op_type, const char *domain, size_t nin,
                 size_t nout, const char *part);
/* One-input one-output ONNX node x -> y. */
cg_node *lw_unary(lw_scope *s, const char *op_type, const char *x, const char *y,
                  const char *part);
/* Two-input one-output ONNX node (a, b) -> y. */
cg_node *lw_binary(lw_scope *s, const char *op_type, const char *a, const char *b,
                   const char *y, const char *part);
void lw_attr_int(lw_scope *s, cg_node *n, const char *name, int64_t v);
void lw_attr_ints(lw_scope *s, cg_node *n, const char *name, const int64_t *v, size_t count);
void lw_attr_float(lw_scope *s, cg_node *n, const char *name, float v);
void lw_attr_floats(lw_scope *s, cg_node *n, const char *name, const float *v, size_t count);
void lw_attr_string(lw_scope *s, cg_node *n, const char *name, const char *v);
void lw_attr_graph(lw_scope *s, cg_node *n, const char *name, cg_graph *g);

/* --- control flow (lower.c) ----------------------------------------------------- */

cg_status lw_lower_if(lw_scope *s);
cg_status lw_lower_while(lw_scope *s);

/* --- the operator table (lower_ops.c) ------------------------------------------- */

/* Lowers the scope's current operator; CG_UNSUPPORTED naming it when the
 * table has no row for it. */
cg_status lw_lower_op(lw_scope *s);

#endif
