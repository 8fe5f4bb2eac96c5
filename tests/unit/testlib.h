/*
 * The unit tests' one harness (tests/unit/testlib.c, linked into every
 * tests/unit/test_*.c):
 *  - checks: EXPECT(cond, fmt, ...) records a failure with file, line and
 *    the condition and goes on; test_skip() records a part that could not
 *    run here; test_done() is main's return value: 1 on any failure, else
 *    77 (CTest's "skipped") when a part was skipped, else 0.
 *  - models built in memory: test_model_new() and the test_graph_* and
 *    test_node() builders put everything in the model's arena (free with
 *    cg_model_free); names are "a,b" lists ("" between commas marks an
 *    omitted optional input).
 *  - one-node models: test_case describes one node, its inputs (tensors
 *    the case owns) and attributes; test_case_run builds the model and runs
 *    it through the public runtime API.
 *  - attribute constructors (attr_int, attr_ints, ...): the returned
 *    cg_attr borrows its strings and arrays from the caller.
 */
#ifndef CG_TESTLIB_H
#define CG_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor.h"

/* --- checks ---------------------------------------------------------------- */

extern int test_failures;

#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            test_failures++;                                                               \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

/* Records (and prints) a part of the test that cannot run here. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
void test_skip(const char *fmt, ...);

/* main's return value: prints a summary line, then 1 (failures), 77 (no
 * failure, something skipped) or 0. */
int test_done(const char *name);

/* Exits with status 2 after printing why: for setup that cannot fail in a
 * sane environment (allocation, a fixture file). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
_Noreturn void test_fatal(const char *fmt, ...);

/* --- tensors and values ------------------------------------------------------ */

/* A heap tensor of dt with vals[i] (converted) or zeros when vals is NULL. */
cg_tensor *test_tensor(cg_dtype dt, int rank, const int64_t *dims, const double *vals);
void test_tensor_free(cg_tensor *t);
/* A tensor over caller-owned data (nothing to free). */
cg_tensor test_view(cg_dtype dt, int rank, const int64_t *dims, void *data);
/* A tensor value (caller frees with cg_value_free). */
cg_value *test_value(cg_dtype dt, int rank, const int64_t *dims, const double *vals);

/* --- files ------------------------------------------------------------------------ */

/* The model at path (relative paths from the source tree), or NULL with a
 * failure recorded. Free with cg_model_free. */
cg_model *test_load_model(const char *path);
/* A .npy file as a tensor value, or NULL with a failure recorded. */
cg_value *test_load_npy(const char *path);
/* Whether the zoo model at path is an export bench/zoo.superseded lists (an
 * older tools/export_zoo.py's, which tools/fetch_zoo.sh redoes): a test
 * pinned on the current export skips it, saying so. */
bool test_zoo_superseded(const char *path, const char *file);

/* --- lowered models ------------------------------------------------------------ */

/* The removed-list entry of the source node called node, or NULL. */
const cg_lower_removed *test_removed(const cg_lowered *l, const char *node);

/* --- models built in memory --------------------------------------------------- */

/* A model with an arena and one ai.onnx opset import. */
cg_model *test_model_new(int64_t opset);
/* Adds an opset import (domain, version). */
void test_model_import(cg_model *m, const char *domain, int64_t version);
/* Runs m once through the public runtime API (default options, or a
 * max_alloc_bytes when non-zero); init failures count as run failures. */
cg_status test_model_run(const cg_model *m, size_t max_alloc, const cg_named_value *feeds,
                         size_t nfeed, cg_named_value **outs, size_t *nouts, cg_error *err);
/* The same with options (NULL: the defaults) and `runs` runs of one
 * runtime (0 counts as 1; a second run uses the memory plan and packed
 * weights); the outputs are the last run's. */
cg_status test_model_run_with(const cg_model *m, const cg_runtime_options *opt, int runs,
                              const cg_named_value *feeds, size_t nfeed, cg_named_value **outs,
                              size_t *nouts, cg_error *err);
/* An empty graph with room for `cap` nodes and 16 of each value list. */
cg_graph *test_graph_new(cg_model *m, const char *name, size_t cap);
/* A model (test_model_new) whose main graph "main" (room for `cap` nodes)
 * has the untyped inputs `ins` and outputs `outs` ("a,b" lists); add its
 * nodes with test_node(m, m->graph, ...). */
cg_model *test_model_graph(int64_t opset, size_t cap, const char *ins, const char *outs);
/* Appends a node (domain ""). ins/outs are "a,b" lists. */
cg_node *test_node(cg_model *m, cg_graph *g, const char *op, const char *name,
                   const char *ins, const char *outs);
/* Appends an attribute to n (room for 8 per node): an empty one of `type`
 * to fill in, or a copy of a (from the attr_* constructors below). */
cg_attr *test_node_attr(cg_node *n, const char *name, cg_attr_type type);
void test_node_add_attr(cg_node *n, cg_attr a);
/* A tensor type: rank dims, -1 for a symbolic dim ("N"); rank -1: no shape. */
cg_type *test_type(cg_model *m, cg_dtype dt, int rank, const int64_t *dims);
void test_graph_input(cg_graph *g, const char *name, cg_type *t);
void test_graph_output(cg_graph *g, const char *name, cg_type *t);
/* A float initializer (float_data). */
cg_tensor_proto *test_graph_init_f32(cg_model *m, cg_graph *g, const char *name, int rank,
                                     const int64_t *dims, const float *vals);
/* An initializer over the caller's raw_data bytes as they are (borrowed,
 * so a test can place them at odd offsets, as exporters do). */
cg_tensor_proto *test_graph_init_raw(cg_model *m, cg_graph *g, const char *name, cg_dtype dt,
                                     int rank, const int64_t *dims, const void *raw, size_t len);

/* --- one-node models ---------------------------------------------------------- */

#define TEST_MAX_IO 8
#define TEST_MAX_ATTRS 8

/* Inputs are named in0, in1, ... (NULL in[i]: omitted), outputs out0, ... */
typedef struct test_case {
    const char *op;
    int64_t opset;
    size_t nin, nout;
    cg_tensor *in[TEST_MAX_IO]; /* owned by the case (test_case_free) */
    cg_attr attrs[TEST_MAX_ATTRS];
    size_t nattr;
    const char *domain;      /* NULL: ai.onnx */
    size_t max_alloc;        /* 0: the runtime's default */
} test_case;

/* The name every one-node model gives its node (messages must name it). */
#define TEST_NODE_NAME "node_under_test"

/* Builds the model and runs it; outputs in *outs (free with
 * cg_runtime_free_outputs). Init failures count as run failures. */
cg_status test_case_run(const test_case *c, cg_named_value **outs, size_t *nouts,
                        cg_error *err);
/* The same with runtime options (NULL: the defaults, with c->max_alloc)
 * and `runs` runs of one runtime (as test_model_run_with). */
cg_status test_case_run_with(const test_case *c, const cg_runtime_options *opt, int runs,
                             cg_named_value **outs, size_t *nouts, cg_error *err);
/* Expects a failure whose message names the node and contains needle. */
void test_case_expect_fail(const test_case *c, const char *needle, const char *what);
/* Runs and returns output `i` as doubles (malloc'd), *numel its count;
 * NULL (and a recorded failure) when the run fails. */
double *test_case_values(const test_case *c, size_t i, int64_t *numel, const char *what);
/* Frees the inputs. */
void test_case_free(test_case *c);

/* --- attributes ---------------------------------------------------------------- */

static inline cg_attr test_attr(const char *name, cg_attr_type type)
{
    cg_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = type;
    a.has_type = true;
    return a;
}

static inline cg_attr attr_int(const char *name, int64_t v)
{
    cg_attr a = test_attr(name, CG_ATTR_INT);
    a.i = v;
    a.has_i = true;
    return a;
}

static inline cg_attr attr_float(const char *name, float v)
{
    cg_attr a = test_attr(name, CG_ATTR_FLOAT);
    a.f = v;
    a.has_f = true;
    return a;
}

static inline cg_attr attr_str(const char *name, const char *s)
{
    cg_attr a = test_attr(name, CG_ATTR_STRING);
    a.s.data = (const uint8_t *)s;
    a.s.len = strlen(s);
    return a;
}

static inline cg_attr attr_ints(const char *name, int64_t *v, size_t n)
{
    cg_attr a = test_attr(name, CG_ATTR_INTS);
    a.ints = v;
    a.ints_count = n;
    return a;
}

static inline cg_attr attr_graph(const char *name, cg_graph *g)
{
    cg_attr a = test_attr(name, CG_ATTR_GRAPH);
    a.g = g;
    return a;
}

/* STRINGS over `count` C strings; `store` (caller's) holds the byte views. */
static inline cg_attr attr_strs(const char *name, cg_bytes *store, const char *const *s,
                                size_t count)
{
    cg_attr a = test_attr(name, CG_ATTR_STRINGS);
    for (size_t i = 0; i < count; i++) {
        store[i].data = (const uint8_t *)s[i];
        store[i].len = strlen(s[i]);
    }
    a.strings = store;
    a.strings_count = count;
    return a;
}

#endif
