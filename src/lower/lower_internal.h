/*
 * What the lowerings (src/lower) share beyond include/convgate/lower.h: the
 * signature of a lowering (the table of them is src/target/lowerings.def)
 * and an op histogram.
 */
#ifndef CG_LOWER_INTERNAL_H
#define CG_LOWER_INTERNAL_H

#include <stdbool.h>

#include "core/strmap.h"
#include "lower/lgraph.h"

/* Rewrites m's graph (loaded by lg_load) into the graph the runtime
 * partitions. Removals go through lg_remove; notes through lg_note. */
typedef cg_status (*cg_lowering_fn)(lg_model *m, cg_error *err);

#define CG_LOWERING(name, fn, description, remover) cg_status fn(lg_model *m, cg_error *err);
#include "target/lowerings.def"
#undef CG_LOWERING

/* True when ONNX Runtime 1.22's CPU execution provider registers a kernel
 * for (domain, op) at since_version `since` (src/lower/ort_cpu_kernels.inc). */
bool cg_ort_cpu_has_kernel(const char *domain, const char *op, int since);

/* Counts by key ("domain:Op", "Op" for the default domain, or any text),
 * for the lowering's summaries and inventories. A zeroed lower_hist is
 * empty; oom is set when an add could not grow it. */
typedef struct lower_hist_entry {
    char key[160];
    size_t n;
} lower_hist_entry;
typedef struct lower_hist {
    lower_hist_entry *v;
    size_t n, cap;
    bool oom;
} lower_hist;
void lower_hist_add(lower_hist *h, const char *domain, const char *key);
/* Most first, then by key. */
void lower_hist_sort(lower_hist *h);
/* "Identity x47, Conv x20": at most max entries, then ", ...". */
void lower_hist_text(const lower_hist *h, size_t max, char *buf, size_t len);
void lower_hist_free(lower_hist *h);

/* A node of the default ONNX domain of type op. */
bool lower_is_onnx_op(const cg_node *n, const char *op);

/* The values a mapping lowering removed, each read as the value it passed
 * through (an Identity's output as its input), resolved transitively. A
 * zeroed lower_alias is empty. */
typedef struct lower_alias {
    cg_strmap map; /* removed value -> index into to */
    const char **to;
    size_t count;
} lower_alias;
/* The value name reads as (name itself when it was not removed). */
const char *lower_alias_resolve(const lower_alias *a, const char *name);
/* from reads as to; false when out of memory. */
bool lower_alias_add(lower_alias *a, const char *from, const char *to);
void lower_alias_free(lower_alias *a);

/* The attributes of a node a mapping lowering makes (passed to lg_add or
 * lg_replace, which copy them): names and strings are borrowed, ints lists
 * copied here. An attribute past the capacity, or a list longer than
 * CG_MAX_RANK, is dropped. A zeroed lower_attrs is empty. */
#define LOWER_ATTRS_MAX 12
typedef struct lower_attrs {
    cg_attr a[LOWER_ATTRS_MAX];
    int64_t ints[LOWER_ATTRS_MAX][CG_MAX_RANK];
    size_t n;
} lower_attrs;
void lower_attrs_str(lower_attrs *as, const char *name, const char *v);
void lower_attrs_int(lower_attrs *as, const char *name, int64_t v);
void lower_attrs_float(lower_attrs *as, const char *name, float v);
void lower_attrs_ints(lower_attrs *as, const char *name, const int64_t *v, size_t count);

/* How many nodes of g read name (a graph output counts 2: it cannot be
 * fused away); *only: the last of them. */
size_t lower_consumers(const cg_graph *g, const char *name, size_t *only);
/* A one-element numeric constant of g: an initializer or a Constant node's
 * value (value / value_float). */
bool lower_graph_scalar(const cg_graph *g, const char *name, double *out);

/* PyTorch's exported GELU: the nodes torch.onnx writes for nn.GELU (its
 * symbolic for aten::gelu, opsets 9-19; opset 20 writes a Gelu node):
 *   approximate="none": Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .)
 *                       -> Mul(., 0.5)
 *   approximate="tanh": Mul(x, x) -> Mul(x, .) -> Mul(0.044715, .) ->
 *                       Add(x, .) -> Mul(sqrt(2/pi), .) -> Tanh ->
 *                       Add(1, .) -> Mul(x, .) -> Mul(0.5, .)
 * Each inner value is read by the next node only; the constant of an Add
 * or Mul may be either operand. The formula spelled out by hand in another
 * order (x * 0.5 * (1 + erf(x / sqrt 2)), older BERT code) is not matched:
 * torch.export keeps that as its element ops. */
typedef struct lower_gelu {
    size_t nodes[9]; /* source node indices in the order above; nodes[0] the first */
    size_t count;    /* 5 ("none") or 9 ("tanh") */
    size_t core;     /* index into nodes of its Erf / Tanh */
    const char *x;   /* the input */
    const char *y;   /* the output (the last Mul's) */
    bool tanh;       /* the tanh approximation */
} lower_gelu;
/* True when node `first` of g opens a GELU pattern, filling *out. */
bool lower_match_gelu(const cg_graph *g, size_t first, lower_gelu *out);

#endif
