/*
 * The parsed form of a capability profile (docs/profiles.md): what
 * profile_parse.c makes from the JSON file and profile.c evaluates against
 * one node at a time as a profiled cg_target.
 *
 * Invariants of a parsed profile: every field the file may hold has been
 * checked (unknown keys, wrong types, out-of-range numbers and unknown dtype
 * names are rejected with the file and JSON path); the op list is sorted by
 * (domain, op type) with no duplicates (pf_find_op searches it); every
 * string is owned by the profile and freed by pf_profile_free.
 */
#ifndef CG_TARGET_PROFILE_FORM_H
#define CG_TARGET_PROFILE_FORM_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/status.h"
#include "convgate/target.h"
#include "target/registry.h"

static_assert(CG_DTYPE_COUNT <= 32, "dtype sets are 32-bit masks");

#define RANK_SET_MAX 8
#define PF_MAX_PARAMS 4
#define PF_MAX_VALUES 64 /* elements a value rule reads from a constant */

typedef enum pf_value_kind { PV_INT, PV_FLOAT, PV_STRING } pf_value_kind;

typedef struct pf_value {
    pf_value_kind kind;
    int64_t i;
    double f;
    char *s;
} pf_value;

/* A list of scalars; `is_list` says whether the JSON held an array. */
typedef struct pf_values {
    pf_value *v;
    size_t count;
    bool is_list;
} pf_values;

typedef enum pf_cond_kind {
    COND_NONE = 0,
    COND_INPUT_CONST,  /* input i is (not) constant */
    COND_INPUT_DTYPES, /* input i has one of the dtypes */
    COND_INPUT_RANKS,  /* input i has one of the ranks */
    COND_ATTR_IN,      /* attribute (or its default) is one of the values */
    COND_OPSET_MIN,    /* the node's opset is at least `opset` */
    COND_PARAM,        /* a target parameter is within [pmin, pmax] */
    COND_INPUT_VALUE   /* input i is a constant whose every element is one of the values */
} pf_cond_kind;

/* One condition; `next` chains the conditions of a "when" array, which all
 * must hold. */
typedef struct pf_cond {
    pf_cond_kind kind;
    int input;
    bool is_const;
    uint32_t dtypes;
    int ranks[RANK_SET_MAX];
    size_t rank_count;
    int64_t opset;
    char *attr;
    pf_values values;
    int param;              /* COND_PARAM: index into the profile's parameters */
    bool has_pmin, has_pmax;
    int64_t pmin, pmax;
    struct pf_cond *next;   /* owned */
} pf_cond;

/* A target parameter ("android_api"): its default and range; a target
 * "name@value" binds it (cg_profile_bind). */
typedef struct pf_param {
    char *name;
    int64_t dflt, min, max;
    char *note;
} pf_param;

typedef struct pf_io_rule {
    int index;          /* -1: every input / output */
    uint32_t dtypes;    /* 0: no dtype rule */
    int min_rank, max_rank; /* -1: none */
    int rank_in[RANK_SET_MAX];
    size_t rank_in_count;
    int is_const;       /* -1 none, 1 must be constant, 0 must not be */
    int present;        /* -1 none, 1 must be present, 0 must be absent */
    bool not_graph_input;
    bool has_values;    /* a constant whose every element is one of `values` */
    pf_values values;
    pf_cond when;
    char *note;
} pf_io_rule;

typedef struct pf_attr_rule {
    char *name;
    bool has_in;
    pf_values in;
    bool has_min, has_max;
    double min, max;
    bool has_equals;
    bool absent_ok;     /* "absent_or_equals" */
    pf_values equals;
    bool must_be_absent;
    bool all_equal;
    bool required;
    int last_axis_of; /* -1: none; else the axis must name input N's last dim */
    int dims_of;      /* -1: none; else the list must equal input N's dims from dims_skip on */
    int dims_skip;
    bool has_default;
    pf_values dflt;
    pf_cond when;
    char *note;
} pf_attr_rule;

typedef enum pf_broadcast { BC_NUMPY = 0, BC_NONE, BC_TFLITE_GPU } pf_broadcast;

typedef struct pf_op {
    char *domain; /* "" for ai.onnx */
    char *op_type;
    pf_cond requires; /* conditions the op needs at all (target parameters) */
    int64_t since, until; /* 0: open */
    int min_inputs, max_inputs, min_outputs, max_outputs, max_runtime_inputs; /* -1: none */
    uint32_t zero_ok_inputs; /* bit i: input i is exempt from the zero-sized-dims limit */
    pf_io_rule *inputs;
    size_t input_count;
    pf_io_rule *outputs;
    size_t output_count;
    pf_attr_rule *attrs;
    size_t attr_count;
    pf_broadcast broadcast;
    char *note;
} pf_op;

typedef enum pf_dtype_scope { SCOPE_FIRST_INPUT = 0, SCOPE_RUNTIME, SCOPE_ALL } pf_dtype_scope;

typedef struct pf_limits {
    int max_rank;     /* -1: none */
    int64_t max_dim;  /* -1: none */
    bool dynamic_shapes, zero_sized_dims, mixed_input_dtypes, subgraphs;
    uint32_t dtypes;  /* 0: none */
    pf_dtype_scope dtype_scope;
    char *note_max_rank, *note_max_dim, *note_dynamic, *note_zero, *note_dtypes, *note_mixed,
        *note_subgraphs;
} pf_limits;

typedef struct pf_profile {
    cg_target target;
    char *path;
    char *runtime;
    cg_profile_source *sources;
    size_t source_count;
    pf_limits limits;
    pf_op *ops;
    size_t op_count;
    pf_param params[PF_MAX_PARAMS];
    size_t param_count;
    /* storage behind target's const pointers */
    char **no_single, **stop, **not_modelled;
    char *lowering; /* "preprocess", or NULL */
} pf_profile;


/* Reads and checks the profile at path (a regular file only); the target
 * fields it describes are filled, its kind is CG_TARGET_PROFILED, and vt /
 * impl are the caller's to set. */
cg_status pf_profile_read(const char *path, pf_profile **out, cg_error *err);
void pf_profile_free(pf_profile *p);
/* The op's rules, or NULL when the profile does not list it ("" is ai.onnx). */
const pf_op *pf_find_op(const pf_profile *p, const char *domain, const char *op_type);

#endif
