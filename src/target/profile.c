/*
 * Capability profiles: declarative descriptions of what a runtime we cannot
 * run here accepts (docs/profiles.md), parsed from JSON, validated field by
 * field, and evaluated one node at a time as a profiled cg_target.
 *
 * Invariants of a parsed profile: every field the file may hold has been
 * checked (unknown keys, wrong types, out-of-range numbers and unknown dtype
 * names are rejected with the file and JSON path); the op list is sorted by
 * (domain, op type) with no duplicates; every string is owned by the profile
 * and freed by its destroy. Evaluation never fails: a rule that cannot be
 * checked (unknown type of a value it needs) refuses the node and says why.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convgate/runtime.h"
#include "convgate/schema.h"
#include "ir/walk.h"
#include "core/file.h"
#include "target/registry.h"

static_assert(CG_DTYPE_COUNT <= 32, "dtype sets are 32-bit masks");

#define PATH_MAX_LEN 256
#define RANK_SET_MAX 8
#define PF_MAX_PARAMS 4
#define PF_MAX_VALUES 64 /* elements a value rule reads from a constant */

/* --- the parsed form --------------------------------------------------------- */

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

/* --- freeing ------------------------------------------------------------------- */

static void values_free(pf_values *v)
{
    for (size_t i = 0; i < v->count; i++)
        free(v->v[i].s);
    free(v->v);
    v->v = NULL;
    v->count = 0;
}

static void cond_free(pf_cond *c)
{
    free(c->attr);
    values_free(&c->values);
    for (pf_cond *n = c->next, *next; n; n = next) {
        next = n->next;
        free(n->attr);
        values_free(&n->values);
        free(n);
    }
    c->next = NULL;
}

static void op_free(pf_op *op)
{
    free(op->domain);
    free(op->op_type);
    free(op->note);
    cond_free(&op->requires);
    for (size_t i = 0; i < op->input_count; i++) {
        cond_free(&op->inputs[i].when);
        values_free(&op->inputs[i].values);
        free(op->inputs[i].note);
    }
    for (size_t i = 0; i < op->output_count; i++) {
        cond_free(&op->outputs[i].when);
        free(op->outputs[i].note);
    }
    for (size_t i = 0; i < op->attr_count; i++) {
        pf_attr_rule *a = &op->attrs[i];
        free(a->name);
        free(a->note);
        values_free(&a->in);
        values_free(&a->equals);
        values_free(&a->dflt);
        cond_free(&a->when);
    }
    free(op->inputs);
    free(op->outputs);
    free(op->attrs);
}

static void strings_free(char **s, size_t n)
{
    if (!s)
        return;
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

static void profile_free(pf_profile *p)
{
    if (!p)
        return;
    free((char *)p->target.name);
    free((char *)p->target.version);
    free((char *)p->target.description);
    free((char *)p->target.source);
    free((char *)p->target.device_class[0]);
    free((char *)p->target.device_class[1]);
    strings_free(p->no_single, p->target.rules.no_single_op_count);
    strings_free(p->stop, p->target.rules.stop_op_count);
    strings_free(p->not_modelled, p->target.not_modelled_count);
    free(p->lowering);
    for (size_t i = 0; i < p->param_count; i++) {
        free(p->params[i].name);
        free(p->params[i].note);
    }
    for (size_t i = 0; i < p->source_count; i++) {
        free((char *)p->sources[i].repo);
        free((char *)p->sources[i].path);
        free((char *)p->sources[i].revision);
        free((char *)p->sources[i].note);
    }
    free(p->sources);
    for (size_t i = 0; i < p->op_count; i++)
        op_free(&p->ops[i]);
    free(p->ops);
    pf_limits *l = &p->limits;
    free(l->note_max_rank);
    free(l->note_max_dim);
    free(l->note_dynamic);
    free(l->note_zero);
    free(l->note_dtypes);
    free(l->note_mixed);
    free(l->note_subgraphs);
    free(p->path);
    free(p->runtime);
    free(p);
}

/* --- parsing helpers ------------------------------------------------------------ */

/* Parser state: the file name for messages and the error record. */
typedef struct pf_parser {
    const char *file;
    cg_error *err;
    const pf_profile *profile; /* its parameters name COND_PARAM conditions */
} pf_parser;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static cg_status perr(pf_parser *ps, const char *path, const char *fmt, ...)
{
    char msg[CG_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cg_error_set(ps->err, CG_INVALID, "profile %s: %s: %s", ps->file, path, msg);
}

/* Paths longer than the buffer end in "..." (only messages use them). */
static void path_fit(char *out, int n)
{
    if (n < 0 || n >= PATH_MAX_LEN)
        memcpy(out + PATH_MAX_LEN - 4, "...", 4);
}

static void child(char *out, const char *path, const char *key)
{
    path_fit(out, snprintf(out, PATH_MAX_LEN, "%s.%s", path, key));
}

static void child_index(char *out, const char *path, size_t i)
{
    path_fit(out, snprintf(out, PATH_MAX_LEN, "%s[%zu]", path, i));
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Fails on any key of obj not in the NULL-terminated `allowed` list. */
static cg_status check_keys(pf_parser *ps, const json_t *obj, const char *path,
                            const char *const *allowed)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            char list[512];
            size_t n = 0;
            list[0] = '\0';
            for (size_t k = 0; allowed[k] && n < sizeof list; k++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "", allowed[k]);
            return perr(ps, path, "unknown key '%s' (allowed: %s)", key, list);
        }
    }
    return CG_OK;
}

static cg_status expect_object(pf_parser *ps, const json_t *j, const char *path)
{
    if (!json_is_object(j))
        return perr(ps, path, "expected an object, got %s", json_kind(j));
    return CG_OK;
}

/* Copies a required (or optional when !required) string field into *out. */
static cg_status get_string(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                            bool required, char **out)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    json_t *j = json_object_get(obj, key);
    *out = NULL;
    if (!j) {
        if (required)
            return perr(ps, p, "missing (required)");
        return CG_OK;
    }
    if (!json_is_string(j))
        return perr(ps, p, "expected a string, got %s", json_kind(j));
    if (json_string_length(j) == 0)
        return perr(ps, p, "must not be empty");
    if (strlen(json_string_value(j)) != json_string_length(j))
        return perr(ps, p, "contains a NUL character");
    *out = strdup(json_string_value(j));
    if (!*out)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    return CG_OK;
}

/* Integer field in [lo, hi]; *out untouched when absent. */
static cg_status get_int(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                         int64_t lo, int64_t hi, int64_t *out)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    json_t *j = json_object_get(obj, key);
    if (!j)
        return CG_OK;
    if (!json_is_integer(j))
        return perr(ps, p, "expected an integer, got %s", json_kind(j));
    json_int_t v = json_integer_value(j);
    if (v < lo || v > hi)
        return perr(ps, p, "%" PRId64 " out of range [%" PRId64 ", %" PRId64 "]", (int64_t)v, lo,
                    hi);
    *out = (int64_t)v;
    return CG_OK;
}

static cg_status get_int32(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                           int lo, int hi, int *out)
{
    int64_t v = *out;
    cg_status st = get_int(ps, obj, path, key, lo, hi, &v);
    if (st == CG_OK)
        *out = (int)v;
    return st;
}

static cg_status get_bool(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                          bool *out)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    json_t *j = json_object_get(obj, key);
    if (!j)
        return CG_OK;
    if (!json_is_boolean(j))
        return perr(ps, p, "expected a boolean, got %s", json_kind(j));
    *out = json_is_true(j);
    return CG_OK;
}

/* Array of non-empty strings (absent: empty). */
static cg_status get_strings(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                             bool required, char ***out, size_t *count)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    *out = NULL;
    *count = 0;
    json_t *j = json_object_get(obj, key);
    if (!j) {
        if (required)
            return perr(ps, p, "missing (required)");
        return CG_OK;
    }
    if (!json_is_array(j))
        return perr(ps, p, "expected an array of strings, got %s", json_kind(j));
    size_t n = json_array_size(j);
    if (n == 0)
        return CG_OK;
    char **s = calloc(n, sizeof *s);
    if (!s)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(j, i);
        char ep[PATH_MAX_LEN];
        child_index(ep, p, i);
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            strlen(json_string_value(e)) != json_string_length(e)) {
            strings_free(s, i);
            return perr(ps, ep, "expected a non-empty string, got %s", json_kind(e));
        }
        s[i] = strdup(json_string_value(e));
        if (!s[i]) {
            strings_free(s, i);
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
        }
    }
    *out = s;
    *count = n;
    return CG_OK;
}

/* A dtype set from an array of dtype names ("float32", ...) at `path`. */
static cg_status parse_dtypes(pf_parser *ps, const json_t *j, const char *path, uint32_t *out)
{
    if (!json_is_array(j) || json_array_size(j) == 0)
        return perr(ps, path, "expected a non-empty array of dtype names, got %s", json_kind(j));
    uint32_t mask = 0;
    for (size_t i = 0; i < json_array_size(j); i++) {
        json_t *e = json_array_get(j, i);
        char ep[PATH_MAX_LEN];
        child_index(ep, path, i);
        if (!json_is_string(e))
            return perr(ps, ep, "expected a dtype name, got %s", json_kind(e));
        cg_dtype dt = cg_dtype_from_name(json_string_value(e));
        if (dt == CG_DTYPE_UNDEFINED)
            return perr(ps, ep, "unknown dtype '%s' (use names such as float32, float16, "
                        "int8, uint8, int32, int64, bool)", json_string_value(e));
        mask |= 1u << dt;
    }
    *out = mask;
    return CG_OK;
}

static cg_status get_dtypes(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                            uint32_t *out)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    json_t *j = json_object_get(obj, key);
    return j ? parse_dtypes(ps, j, p, out) : CG_OK;
}

/* One scalar attribute value: integer, real or string. */
static cg_status parse_scalar(pf_parser *ps, const json_t *j, const char *path, pf_value *out)
{
    memset(out, 0, sizeof *out);
    if (json_is_integer(j)) {
        out->kind = PV_INT;
        out->i = (int64_t)json_integer_value(j);
        out->f = (double)out->i;
    } else if (json_is_real(j)) {
        out->kind = PV_FLOAT;
        out->f = json_real_value(j);
    } else if (json_is_string(j)) {
        out->kind = PV_STRING;
        out->s = strdup(json_string_value(j));
        if (!out->s)
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    } else {
        return perr(ps, path, "expected a number or a string, got %s", json_kind(j));
    }
    return CG_OK;
}

/* A scalar or an array of scalars. `need_list` requires an array. */
static cg_status parse_values(pf_parser *ps, const json_t *j, const char *path, bool need_list,
                              pf_values *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(j)) {
        if (need_list)
            return perr(ps, path, "expected a non-empty array, got %s", json_kind(j));
        out->v = calloc(1, sizeof *out->v);
        if (!out->v)
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
        out->count = 1;
        return parse_scalar(ps, j, path, &out->v[0]);
    }
    size_t n = json_array_size(j);
    if (n == 0)
        return perr(ps, path, "expected a non-empty array");
    out->is_list = true;
    out->v = calloc(n, sizeof *out->v);
    if (!out->v)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    for (size_t i = 0; i < n; i++) {
        char ep[PATH_MAX_LEN];
        child_index(ep, path, i);
        out->count = i + 1;
        cg_status st = parse_scalar(ps, json_array_get(j, i), ep, &out->v[i]);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

/* Number (integer or real) field. */
static cg_status get_number(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                            bool *has, double *out)
{
    char p[PATH_MAX_LEN];
    child(p, path, key);
    json_t *j = json_object_get(obj, key);
    if (!j)
        return CG_OK;
    if (!json_is_number(j))
        return perr(ps, p, "expected a number, got %s", json_kind(j));
    *has = true;
    *out = json_number_value(j);
    return CG_OK;
}

/* An array of 1..RANK_SET_MAX ranks. */
static cg_status parse_ranks(pf_parser *ps, const json_t *j, const char *path, int *out,
                             size_t *count)
{
    if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > RANK_SET_MAX)
        return perr(ps, path, "expected an array of 1 to %d ranks", RANK_SET_MAX);
    for (size_t i = 0; i < json_array_size(j); i++) {
        json_t *e = json_array_get(j, i);
        char ep[PATH_MAX_LEN];
        child_index(ep, path, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            json_integer_value(e) > CG_MAX_RANK)
            return perr(ps, ep, "expected a rank in [0, %d]", CG_MAX_RANK);
        out[i] = (int)json_integer_value(e);
    }
    *count = json_array_size(j);
    return CG_OK;
}

/* "when": {"input": i, "const": bool} | {"input": i, "dtypes": [...]} |
 * {"input": i, "ranks": [...]} | {"attribute": name, "in": [...]} |
 * {"opset_at_least": n} */
/* One condition object (see parse_cond). */
static cg_status parse_cond_one(pf_parser *ps, const json_t *j, const char *p, pf_cond *out)
{
    static const char *const keys[] = {"input", "const", "dtypes", "ranks", "value_in",
                                       "attribute", "in", "opset_at_least", "parameter", "min",
                                       "max", NULL};
    memset(out, 0, sizeof *out);
    cg_status st = expect_object(ps, j, p);
    if (st == CG_OK)
        st = check_keys(ps, j, p, keys);
    if (st != CG_OK)
        return st;
    size_t forms = (json_object_get(j, "input") != NULL) +
                   (json_object_get(j, "attribute") != NULL) +
                   (json_object_get(j, "opset_at_least") != NULL) +
                   (json_object_get(j, "parameter") != NULL);
    if (forms != 1)
        return perr(ps, p, "needs exactly one of 'input' (with 'const', 'dtypes', 'ranks' or "
                    "'value_in'), 'attribute' (with 'in'), 'opset_at_least' or 'parameter' "
                    "(with 'min' and/or 'max')");
    if (json_object_get(j, "opset_at_least")) {
        if (json_object_size(j) != 1)
            return perr(ps, p, "'opset_at_least' stands alone");
        out->kind = COND_OPSET_MIN;
        out->opset = 1;
        return get_int(ps, j, p, "opset_at_least", 1, 1000, &out->opset);
    }
    if (json_object_get(j, "parameter")) {
        char *name = NULL;
        if ((st = get_string(ps, j, p, "parameter", true, &name)) != CG_OK)
            return st;
        out->kind = COND_PARAM;
        out->param = -1;
        for (size_t i = 0; ps->profile && i < ps->profile->param_count; i++)
            if (strcmp(ps->profile->params[i].name, name) == 0)
                out->param = (int)i;
        if (out->param < 0) {
            st = perr(ps, p, "parameter '%s' is not declared in $.parameters", name);
            free(name);
            return st;
        }
        free(name);
        out->has_pmin = json_object_get(j, "min") != NULL;
        out->has_pmax = json_object_get(j, "max") != NULL;
        if (!out->has_pmin && !out->has_pmax)
            return perr(ps, p, "a parameter condition needs 'min' and/or 'max'");
        if ((st = get_int(ps, j, p, "min", INT64_MIN / 2, INT64_MAX / 2, &out->pmin)) != CG_OK ||
            (st = get_int(ps, j, p, "max", INT64_MIN / 2, INT64_MAX / 2, &out->pmax)) != CG_OK)
            return st;
        if (out->has_pmin && out->has_pmax && out->pmin > out->pmax)
            return perr(ps, p, "min %" PRId64 " > max %" PRId64, out->pmin, out->pmax);
        return CG_OK;
    }
    if (json_object_get(j, "attribute")) {
        if (json_object_size(j) != 2 || !json_object_get(j, "in"))
            return perr(ps, p, "an attribute condition takes exactly 'attribute' and 'in'");
        st = get_string(ps, j, p, "attribute", true, &out->attr);
        if (st != CG_OK)
            return st;
        char ip[PATH_MAX_LEN];
        child(ip, p, "in");
        out->kind = COND_ATTR_IN;
        return parse_values(ps, json_object_get(j, "in"), ip, true, &out->values);
    }
    int64_t input = -1;
    st = get_int(ps, j, p, "input", 0, 1 << 20, &input);
    if (st != CG_OK)
        return st;
    out->input = (int)input;
    size_t preds = (json_object_get(j, "const") != NULL) + (json_object_get(j, "dtypes") != NULL) +
                   (json_object_get(j, "ranks") != NULL) +
                   (json_object_get(j, "value_in") != NULL);
    if (preds != 1 || json_object_get(j, "in") || json_object_get(j, "min") ||
        json_object_get(j, "max"))
        return perr(ps, p, "an input condition takes exactly one of 'const', 'dtypes', 'ranks' "
                    "and 'value_in'");
    if (json_object_get(j, "const")) {
        out->kind = COND_INPUT_CONST;
        return get_bool(ps, j, p, "const", &out->is_const);
    }
    if (json_object_get(j, "value_in")) {
        char vp[PATH_MAX_LEN];
        child(vp, p, "value_in");
        out->kind = COND_INPUT_VALUE;
        return parse_values(ps, json_object_get(j, "value_in"), vp, true, &out->values);
    }
    if (json_object_get(j, "ranks")) {
        char rp[PATH_MAX_LEN];
        child(rp, p, "ranks");
        out->kind = COND_INPUT_RANKS;
        return parse_ranks(ps, json_object_get(j, "ranks"), rp, out->ranks, &out->rank_count);
    }
    out->kind = COND_INPUT_DTYPES;
    return get_dtypes(ps, j, p, "dtypes", &out->dtypes);
}

/* A condition (object) or an array of them, which all must hold. */
static cg_status parse_cond_json(pf_parser *ps, const json_t *j, const char *p, pf_cond *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(j))
        return parse_cond_one(ps, j, p, out);
    size_t n = json_array_size(j);
    if (n == 0)
        return perr(ps, p, "an empty condition list");
    pf_cond *tail = out;
    for (size_t i = 0; i < n; i++) {
        char ep[PATH_MAX_LEN];
        child_index(ep, p, i);
        pf_cond *c = i == 0 ? out : calloc(1, sizeof *c);
        if (!c) {
            cond_free(out);
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
        }
        if (i) {
            tail->next = c;
            tail = c;
        }
        cg_status st = parse_cond_one(ps, json_array_get(j, i), ep, c);
        if (st != CG_OK) {
            cond_free(out);
            return st;
        }
    }
    return CG_OK;
}

/* "when": a condition object, or an array of them that all must hold:
 * {"input": i, "const": bool} | {"input": i, "dtypes": [...]} |
 * {"input": i, "ranks": [...]} | {"input": i, "value_in": [...]} |
 * {"attribute": name, "in": [...]} | {"opset_at_least": n} |
 * {"parameter": name, "min": a, "max": b}. */
static cg_status parse_cond(pf_parser *ps, const json_t *obj, const char *path, pf_cond *out)
{
    char p[PATH_MAX_LEN];
    child(p, path, "when");
    json_t *j = json_object_get(obj, "when");
    memset(out, 0, sizeof *out);
    if (!j)
        return CG_OK;
    return parse_cond_json(ps, j, p, out);
}

/* One entry of an op's "inputs" or "outputs" array. */
static cg_status parse_io_rule(pf_parser *ps, const json_t *j, const char *path, bool is_input,
                               pf_io_rule *r)
{
    static const char *const in_keys[] = {"index", "dtypes", "min_rank", "max_rank", "ranks",
                                          "const", "present", "not_graph_input", "values",
                                          "when", "note", "source", NULL};
    static const char *const out_keys[] = {"index", "dtypes", "min_rank", "max_rank", "ranks",
                                           "note", "source", NULL};
    memset(r, 0, sizeof *r);
    r->min_rank = r->max_rank = -1;
    r->is_const = r->present = -1;
    cg_status st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, is_input ? in_keys : out_keys);
    if (st != CG_OK)
        return st;
    char p[PATH_MAX_LEN];
    child(p, path, "index");
    json_t *idx = json_object_get(j, "index");
    if (!idx)
        return perr(ps, p, "missing (an index >= 0, or \"all\")");
    if (json_is_string(idx) && strcmp(json_string_value(idx), "all") == 0) {
        r->index = -1;
    } else if (json_is_integer(idx) && json_integer_value(idx) >= 0 &&
               json_integer_value(idx) <= (1 << 20)) {
        r->index = (int)json_integer_value(idx);
    } else {
        return perr(ps, p, "expected an index in [0, 1048576] or \"all\", got %s",
                    json_kind(idx));
    }
    if ((st = get_dtypes(ps, j, path, "dtypes", &r->dtypes)) != CG_OK ||
        (st = get_int32(ps, j, path, "min_rank", 0, CG_MAX_RANK, &r->min_rank)) != CG_OK ||
        (st = get_int32(ps, j, path, "max_rank", 0, CG_MAX_RANK, &r->max_rank)) != CG_OK)
        return st;
    if (r->min_rank >= 0 && r->max_rank >= 0 && r->min_rank > r->max_rank)
        return perr(ps, path, "min_rank %d > max_rank %d", r->min_rank, r->max_rank);
    json_t *ranks = json_object_get(j, "ranks");
    if (ranks) {
        child(p, path, "ranks");
        if ((st = parse_ranks(ps, ranks, p, r->rank_in, &r->rank_in_count)) != CG_OK)
            return st;
    }
    if (is_input) {
        bool b;
        if (json_object_get(j, "const")) {
            if ((st = get_bool(ps, j, path, "const", &b)) != CG_OK)
                return st;
            r->is_const = b;
        }
        if (json_object_get(j, "present")) {
            if ((st = get_bool(ps, j, path, "present", &b)) != CG_OK)
                return st;
            r->present = b;
        }
        if ((st = get_bool(ps, j, path, "not_graph_input", &r->not_graph_input)) != CG_OK ||
            (st = parse_cond(ps, j, path, &r->when)) != CG_OK)
            return st;
        json_t *vals = json_object_get(j, "values");
        if (vals) {
            child(p, path, "values");
            r->has_values = true;
            if ((st = parse_values(ps, vals, p, true, &r->values)) != CG_OK)
                return st;
        }
    }
    char *source = NULL;
    if ((st = get_string(ps, j, path, "note", false, &r->note)) != CG_OK ||
        (st = get_string(ps, j, path, "source", false, &source)) != CG_OK)
        return st;
    free(source); /* documentation only: validated, not needed to evaluate */
    if (!r->dtypes && r->min_rank < 0 && r->max_rank < 0 && !r->rank_in_count &&
        r->is_const < 0 && r->present < 0 && !r->not_graph_input && !r->has_values)
        return perr(ps, path, "states no rule");
    return CG_OK;
}

static cg_status parse_attr_rule(pf_parser *ps, const json_t *j, const char *path,
                                 pf_attr_rule *r)
{
    static const char *const keys[] = {"name", "in", "min", "max", "equals", "absent_or_equals",
                                       "absent", "all_equal", "required", "last_axis_of_input",
                                       "equals_dims_of", "default", "when", "note", "source",
                                       NULL};
    memset(r, 0, sizeof *r);
    r->last_axis_of = -1;
    r->dims_of = -1;
    cg_status st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    if (st == CG_OK)
        st = get_string(ps, j, path, "name", true, &r->name);
    if (st != CG_OK)
        return st;
    char p[PATH_MAX_LEN];
    json_t *v;
    if ((v = json_object_get(j, "in"))) {
        child(p, path, "in");
        r->has_in = true;
        if ((st = parse_values(ps, v, p, true, &r->in)) != CG_OK)
            return st;
    }
    json_t *eq = json_object_get(j, "equals"), *aeq = json_object_get(j, "absent_or_equals");
    if (eq && aeq)
        return perr(ps, path, "give 'equals' or 'absent_or_equals', not both");
    if (eq || aeq) {
        child(p, path, eq ? "equals" : "absent_or_equals");
        r->has_equals = true;
        r->absent_ok = aeq != NULL;
        if ((st = parse_values(ps, eq ? eq : aeq, p, false, &r->equals)) != CG_OK)
            return st;
    }
    if ((v = json_object_get(j, "default"))) {
        child(p, path, "default");
        r->has_default = true;
        if ((st = parse_values(ps, v, p, false, &r->dflt)) != CG_OK)
            return st;
    }
    if ((st = get_number(ps, j, path, "min", &r->has_min, &r->min)) != CG_OK ||
        (st = get_number(ps, j, path, "max", &r->has_max, &r->max)) != CG_OK ||
        (st = get_bool(ps, j, path, "absent", &r->must_be_absent)) != CG_OK ||
        (st = get_bool(ps, j, path, "all_equal", &r->all_equal)) != CG_OK ||
        (st = get_bool(ps, j, path, "required", &r->required)) != CG_OK ||
        (st = get_int32(ps, j, path, "last_axis_of_input", 0, 1 << 20, &r->last_axis_of)) !=
            CG_OK ||
        (st = parse_cond(ps, j, path, &r->when)) != CG_OK ||
        (st = get_string(ps, j, path, "note", false, &r->note)) != CG_OK)
        return st;
    json_t *dof = json_object_get(j, "equals_dims_of");
    if (dof) {
        /* {"input": N, "from": K}: the list equals input N's dims K.. */
        static const char *const dkeys[] = {"input", "from", NULL};
        child(p, path, "equals_dims_of");
        int64_t in = -1, from = 0;
        if ((st = expect_object(ps, dof, p)) != CG_OK || (st = check_keys(ps, dof, p, dkeys)) != CG_OK ||
            (st = get_int(ps, dof, p, "input", 0, 1 << 20, &in)) != CG_OK ||
            (st = get_int(ps, dof, p, "from", 0, CG_MAX_RANK, &from)) != CG_OK)
            return st;
        if (in < 0)
            return perr(ps, p, "missing 'input'");
        r->dims_of = (int)in;
        r->dims_skip = (int)from;
    }
    char *source = NULL;
    if ((st = get_string(ps, j, path, "source", false, &source)) != CG_OK)
        return st;
    free(source);
    if (r->has_min && r->has_max && r->min > r->max)
        return perr(ps, path, "min %g > max %g", r->min, r->max);
    if (r->must_be_absent && (r->has_in || r->has_equals || r->has_min || r->has_max ||
                              r->all_equal || r->required || r->last_axis_of >= 0))
        return perr(ps, path, "'absent' cannot be combined with a value rule");
    if (!r->has_in && !r->has_equals && !r->has_min && !r->has_max && !r->must_be_absent &&
        !r->all_equal && !r->required && r->last_axis_of < 0 && r->dims_of < 0)
        return perr(ps, path, "states no rule");
    return CG_OK;
}

/* Splits an op key "Op" or "domain:Op". */
static cg_status split_op_key(pf_parser *ps, const char *key, const char *path, pf_op *op)
{
    const char *colon = strrchr(key, ':');
    const char *type = colon ? colon + 1 : key;
    size_t dlen = colon ? (size_t)(colon - key) : 0;
    if (!*type || (colon && dlen == 0))
        return perr(ps, path, "op key '%s' must be 'OpType' or 'domain:OpType'", key);
    for (const char *c = type; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return perr(ps, path, "op type '%s' has a character other than letters, digits, '_'",
                        type);
    op->op_type = strdup(type);
    op->domain = malloc(dlen + 1);
    if (!op->op_type || !op->domain)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    memcpy(op->domain, key, dlen);
    op->domain[dlen] = '\0';
    if (strcmp(op->domain, "ai.onnx") == 0)
        op->domain[0] = '\0';
    return CG_OK;
}

static cg_status parse_op(pf_parser *ps, const char *key, const json_t *j, const char *path,
                          pf_op *op)
{
    static const char *const keys[] = {"since", "until", "min_inputs", "max_inputs",
                                       "min_outputs", "max_outputs", "max_runtime_inputs",
                                       "zero_sized_inputs_ok", "inputs", "outputs", "attributes",
                                       "broadcast", "requires", "note", "source", NULL};
    memset(op, 0, sizeof *op);
    op->min_inputs = op->max_inputs = op->min_outputs = op->max_outputs = -1;
    op->max_runtime_inputs = -1;
    cg_status st = split_op_key(ps, key, path, op);
    if (st == CG_OK)
        st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    if (st != CG_OK)
        return st;
    if ((st = get_int(ps, j, path, "since", 1, 1000, &op->since)) != CG_OK ||
        (st = get_int(ps, j, path, "until", 1, 1000, &op->until)) != CG_OK ||
        (st = get_int32(ps, j, path, "min_inputs", 0, 1 << 20, &op->min_inputs)) != CG_OK ||
        (st = get_int32(ps, j, path, "max_inputs", 0, 1 << 20, &op->max_inputs)) != CG_OK ||
        (st = get_int32(ps, j, path, "min_outputs", 0, 1 << 20, &op->min_outputs)) != CG_OK ||
        (st = get_int32(ps, j, path, "max_outputs", 0, 1 << 20, &op->max_outputs)) != CG_OK ||
        (st = get_int32(ps, j, path, "max_runtime_inputs", 0, 1 << 20,
                        &op->max_runtime_inputs)) != CG_OK ||
        (st = get_string(ps, j, path, "note", false, &op->note)) != CG_OK)
        return st;
    if (op->since && op->until && op->since > op->until)
        return perr(ps, path, "since %" PRId64 " > until %" PRId64, op->since, op->until);
    if (op->min_inputs >= 0 && op->max_inputs >= 0 && op->min_inputs > op->max_inputs)
        return perr(ps, path, "min_inputs %d > max_inputs %d", op->min_inputs, op->max_inputs);
    char *source = NULL;
    if ((st = get_string(ps, j, path, "source", false, &source)) != CG_OK)
        return st;
    free(source);

    if (op->min_outputs >= 0 && op->max_outputs >= 0 && op->min_outputs > op->max_outputs)
        return perr(ps, path, "min_outputs %d > max_outputs %d", op->min_outputs,
                    op->max_outputs);
    char p[PATH_MAX_LEN];
    json_t *req = json_object_get(j, "requires");
    if (req) {
        child(p, path, "requires");
        if ((st = parse_cond_json(ps, req, p, &op->requires)) != CG_OK)
            return st;
    }
    json_t *zok = json_object_get(j, "zero_sized_inputs_ok");
    if (zok) {
        child(p, path, "zero_sized_inputs_ok");
        if (!json_is_array(zok))
            return perr(ps, p, "expected an array of input indices, got %s", json_kind(zok));
        for (size_t i = 0; i < json_array_size(zok); i++) {
            json_t *e = json_array_get(zok, i);
            char ep[PATH_MAX_LEN];
            child_index(ep, p, i);
            if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 31)
                return perr(ps, ep, "expected an input index in [0, 31]");
            op->zero_ok_inputs |= 1u << json_integer_value(e);
        }
    }
    json_t *bc = json_object_get(j, "broadcast");
    if (bc) {
        child(p, path, "broadcast");
        const char *s = json_is_string(bc) ? json_string_value(bc) : "";
        if (!strcmp(s, "numpy"))
            op->broadcast = BC_NUMPY;
        else if (!strcmp(s, "none"))
            op->broadcast = BC_NONE;
        else if (!strcmp(s, "tflite_gpu"))
            op->broadcast = BC_TFLITE_GPU;
        else
            return perr(ps, p, "expected \"numpy\", \"none\" or \"tflite_gpu\"");
    }

    static const char *const lists[3] = {"inputs", "outputs", "attributes"};
    for (int l = 0; l < 3; l++) {
        json_t *arr = json_object_get(j, lists[l]);
        if (!arr)
            continue;
        child(p, path, lists[l]);
        if (!json_is_array(arr))
            return perr(ps, p, "expected an array, got %s", json_kind(arr));
        size_t n = json_array_size(arr);
        if (n == 0)
            continue;
        void *mem = calloc(n, l == 2 ? sizeof(pf_attr_rule) : sizeof(pf_io_rule));
        if (!mem)
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
        if (l == 0)
            op->inputs = mem;
        else if (l == 1)
            op->outputs = mem;
        else
            op->attrs = mem;
        for (size_t i = 0; i < n; i++) {
            char ep[PATH_MAX_LEN];
            child_index(ep, p, i);
            if (l == 0) {
                op->input_count = i + 1;
                st = parse_io_rule(ps, json_array_get(arr, i), ep, true, &op->inputs[i]);
            } else if (l == 1) {
                op->output_count = i + 1;
                st = parse_io_rule(ps, json_array_get(arr, i), ep, false, &op->outputs[i]);
            } else {
                op->attr_count = i + 1;
                st = parse_attr_rule(ps, json_array_get(arr, i), ep, &op->attrs[i]);
            }
            if (st != CG_OK)
                return st;
        }
    }
    return CG_OK;
}

/* A limit given as a bare value or as {"value": v, "note": ..., "source": ...}:
 * returns the value node and copies the note. */
static cg_status limit_value(pf_parser *ps, const json_t *limits, const char *path,
                             const char *key, json_t **val, char **note, char *vpath)
{
    static const char *const keys[] = {"value", "note", "source", NULL};
    child(vpath, path, key);
    *val = json_object_get(limits, key);
    if (!*val || !json_is_object(*val))
        return CG_OK;
    json_t *obj = *val;
    cg_status st = check_keys(ps, obj, vpath, keys);
    char *source = NULL;
    if (st == CG_OK)
        st = get_string(ps, obj, vpath, "note", false, note);
    if (st == CG_OK)
        st = get_string(ps, obj, vpath, "source", false, &source);
    free(source);
    if (st != CG_OK)
        return st;
    *val = json_object_get(obj, "value");
    char parent[PATH_MAX_LEN];
    memcpy(parent, vpath, PATH_MAX_LEN);
    child(vpath, parent, "value");
    if (!*val)
        return perr(ps, vpath, "missing (required)");
    return CG_OK;
}

static cg_status parse_limits(pf_parser *ps, const json_t *root, pf_limits *l)
{
    static const char *const keys[] = {"max_rank", "max_dim", "dynamic_shapes",
                                       "zero_sized_dims", "dtypes", "dtypes_scope",
                                       "mixed_input_dtypes", "subgraphs", "note", "source", NULL};
    const char *path = "$.limits";
    l->max_rank = -1;
    l->max_dim = -1;
    l->dynamic_shapes = l->zero_sized_dims = l->mixed_input_dtypes = l->subgraphs = true;
    json_t *j = json_object_get(root, "limits");
    if (!j)
        return CG_OK;
    cg_status st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    if (st != CG_OK)
        return st;
    json_t *v;
    char vp[PATH_MAX_LEN];

    if ((st = limit_value(ps, j, path, "max_rank", &v, &l->note_max_rank, vp)) != CG_OK)
        return st;
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > CG_MAX_RANK)
            return perr(ps, vp, "expected a rank in [0, %d]", CG_MAX_RANK);
        l->max_rank = (int)json_integer_value(v);
    }
    if ((st = limit_value(ps, j, path, "max_dim", &v, &l->note_max_dim, vp)) != CG_OK)
        return st;
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return perr(ps, vp, "expected an integer >= 1");
        l->max_dim = (int64_t)json_integer_value(v);
    }
    struct {
        const char *key;
        bool *dst;
        char **note;
    } flags[] = {{"dynamic_shapes", &l->dynamic_shapes, &l->note_dynamic},
                 {"zero_sized_dims", &l->zero_sized_dims, &l->note_zero},
                 {"mixed_input_dtypes", &l->mixed_input_dtypes, &l->note_mixed},
                 {"subgraphs", &l->subgraphs, &l->note_subgraphs}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if ((st = limit_value(ps, j, path, flags[i].key, &v, flags[i].note, vp)) != CG_OK)
            return st;
        if (!v)
            continue;
        if (!json_is_boolean(v))
            return perr(ps, vp, "expected a boolean, got %s", json_kind(v));
        *flags[i].dst = json_is_true(v);
    }
    if ((st = limit_value(ps, j, path, "dtypes", &v, &l->note_dtypes, vp)) != CG_OK)
        return st;
    if (v) {
        if ((st = parse_dtypes(ps, v, vp, &l->dtypes)) != CG_OK)
            return st;
    }
    json_t *scope = json_object_get(j, "dtypes_scope");
    if (scope) {
        child(vp, path, "dtypes_scope");
        const char *s = json_is_string(scope) ? json_string_value(scope) : "";
        if (!strcmp(s, "first_input"))
            l->dtype_scope = SCOPE_FIRST_INPUT;
        else if (!strcmp(s, "runtime_tensors"))
            l->dtype_scope = SCOPE_RUNTIME;
        else if (!strcmp(s, "all_tensors"))
            l->dtype_scope = SCOPE_ALL;
        else
            return perr(ps, vp, "expected \"first_input\", \"runtime_tensors\" or "
                        "\"all_tensors\"");
        if (!l->dtypes)
            return perr(ps, vp, "given without 'dtypes'");
    } else if (l->dtypes) {
        child(vp, path, "dtypes_scope");
        return perr(ps, vp, "missing (required with 'dtypes')");
    }
    char *note = NULL, *source = NULL;
    st = get_string(ps, j, path, "note", false, &note);
    if (st == CG_OK)
        st = get_string(ps, j, path, "source", false, &source);
    free(note);
    free(source);
    return st;
}

static cg_status parse_partition(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const keys[] = {"min_nodes", "max_partitions", "no_single_ops",
                                       "stop_ops", "note", "source", NULL};
    const char *path = "$.partition";
    cg_partition_rules *r = &p->target.rules;
    json_t *j = json_object_get(root, "partition");
    if (!j)
        return perr(ps, path, "missing (required; {} when the runtime has no partition rules)");
    cg_status st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    if (st == CG_OK)
        st = get_int32(ps, j, path, "min_nodes", 0, 1 << 20, &r->min_nodes);
    if (st == CG_OK)
        st = get_int32(ps, j, path, "max_partitions", 0, 1 << 20, &r->max_partitions);
    if (st == CG_OK)
        st = get_strings(ps, j, path, "no_single_ops", false, &p->no_single,
                         &r->no_single_op_count);
    if (st == CG_OK)
        st = get_strings(ps, j, path, "stop_ops", false, &p->stop, &r->stop_op_count);
    r->no_single_ops = (const char *const *)p->no_single;
    r->stop_ops = (const char *const *)p->stop;
    char *note = NULL, *source = NULL;
    if (st == CG_OK)
        st = get_string(ps, j, path, "note", false, &note);
    if (st == CG_OK)
        st = get_string(ps, j, path, "source", false, &source);
    free(note);
    free(source);
    return st;
}

static cg_status parse_sources(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const keys[] = {"repo", "path", "revision", "note", NULL};
    const char *path = "$.sources";
    json_t *j = json_object_get(root, "sources");
    if (!j)
        return perr(ps, path, "missing (required: where the rules come from)");
    if (!json_is_array(j) || json_array_size(j) == 0)
        return perr(ps, path, "expected a non-empty array of {repo, path, revision}");
    size_t n = json_array_size(j);
    p->sources = calloc(n, sizeof *p->sources);
    if (!p->sources)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    for (size_t i = 0; i < n; i++) {
        char ep[PATH_MAX_LEN];
        child_index(ep, path, i);
        json_t *e = json_array_get(j, i);
        cg_profile_source *s = &p->sources[i];
        p->source_count = i + 1;
        char *repo = NULL, *spath = NULL, *rev = NULL, *note = NULL;
        cg_status st = expect_object(ps, e, ep);
        if (st == CG_OK)
            st = check_keys(ps, e, ep, keys);
        if (st == CG_OK)
            st = get_string(ps, e, ep, "repo", true, &repo);
        if (st == CG_OK)
            st = get_string(ps, e, ep, "path", true, &spath);
        if (st == CG_OK)
            st = get_string(ps, e, ep, "revision", true, &rev);
        if (st == CG_OK)
            st = get_string(ps, e, ep, "note", false, &note);
        s->repo = repo;
        s->path = spath;
        s->revision = rev;
        s->note = note;
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

static int op_cmp(const void *a, const void *b)
{
    const pf_op *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->op_type, y->op_type);
}

static cg_status parse_ops(pf_parser *ps, const json_t *root, pf_profile *p)
{
    const char *path = "$.ops";
    json_t *j = json_object_get(root, "ops");
    if (!j)
        return perr(ps, path, "missing (required: the supported-op list)");
    cg_status st = expect_object(ps, j, path);
    if (st != CG_OK)
        return st;
    size_t n = json_object_size(j);
    if (n == 0)
        return CG_OK;
    p->ops = calloc(n, sizeof *p->ops);
    if (!p->ops)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    const char *key;
    json_t *val;
    json_object_foreach(j, key, val) {
        char ep[PATH_MAX_LEN];
        child(ep, path, key);
        p->op_count++;
        if ((st = parse_op(ps, key, val, ep, &p->ops[p->op_count - 1])) != CG_OK)
            return st;
    }
    qsort(p->ops, p->op_count, sizeof *p->ops, op_cmp);
    for (size_t i = 1; i < p->op_count; i++)
        if (op_cmp(&p->ops[i - 1], &p->ops[i]) == 0)
            return perr(ps, path, "op %s%s%s is listed twice (\"X\" and \"ai.onnx:X\" are the "
                        "same op)", p->ops[i].domain, *p->ops[i].domain ? ":" : "",
                        p->ops[i].op_type);
    return CG_OK;
}

/* "device_classes" (optional, fp16 compute only): the two kinds of device
 * the runtime computes differently on, each judged by default: one that
 * sums in fp16 and one that sums in fp32, named, with where the sources
 * say so ([{"name", "accumulate", "source", "note"}, ...]). */
static cg_status parse_device_classes(pf_parser *ps, const json_t *prec, pf_profile *p)
{
    static const char *const keys[] = {"name", "accumulate", "source", "note", NULL};
    const char *path = "$.precision.device_classes";
    const json_t *j = json_object_get(prec, "device_classes");
    if (!j)
        return CG_OK;
    if (!json_is_array(j) || json_array_size(j) != 2)
        return perr(ps, path, "must list two classes: one with \"accumulate\": \"fp16\", "
                    "one with \"fp32\"");
    if (p->target.precision != CG_PRECISION_FP16)
        return perr(ps, path, "device classes of accumulation need fp16 compute");
    cg_status st = CG_OK;
    for (size_t i = 0; i < 2 && st == CG_OK; i++) {
        char ep[PATH_MAX_LEN];
        snprintf(ep, sizeof ep, "%s[%zu]", path, i);
        const json_t *c = json_array_get(j, i);
        char *name = NULL, *acc = NULL, *source = NULL, *note = NULL;
        st = expect_object(ps, c, ep);
        if (st == CG_OK)
            st = check_keys(ps, c, ep, keys);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "name", true, &name);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "accumulate", true, &acc);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "source", true, &source);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "note", false, &note);
        int k = acc && !strcmp(acc, "fp16") ? 0 : acc && !strcmp(acc, "fp32") ? 1 : -1;
        if (st == CG_OK && k < 0)
            st = perr(ps, ep, "accumulate '%s' is not \"fp16\" or \"fp32\"", acc);
        else if (st == CG_OK && p->target.device_class[k])
            st = perr(ps, ep, "a second class with \"accumulate\": \"%s\"", acc);
        if (st == CG_OK && !name[0])
            st = perr(ps, ep, "an empty name");
        if (st == CG_OK) {
            p->target.device_class[k] = name;
            name = NULL;
        }
        free(name);
        free(acc);
        free(source);
        free(note);
    }
    return st;
}

static cg_status parse_precision(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const keys[] = {"compute", "accumulate", "note", "source",
                                       "device_classes", NULL};
    const char *path = "$.precision";
    json_t *j = json_object_get(root, "precision");
    if (!j)
        return perr(ps, path, "missing (required: {\"compute\", \"accumulate\"})");
    cg_status st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    char *compute = NULL, *acc = NULL, *note = NULL, *source = NULL;
    if (st == CG_OK)
        st = get_string(ps, j, path, "compute", true, &compute);
    if (st == CG_OK)
        st = get_string(ps, j, path, "accumulate", true, &acc);
    if (st == CG_OK)
        st = get_string(ps, j, path, "note", false, &note);
    if (st == CG_OK)
        st = get_string(ps, j, path, "source", false, &source);
    if (st == CG_OK) {
        if (!strcmp(compute, "fp32")) {
            p->target.precision = CG_PRECISION_FP32;
        } else if (!strcmp(compute, "fp16")) {
            p->target.precision = CG_PRECISION_FP16;
        } else {
            st = perr(ps, "$.precision.compute", "'%s' is not \"fp32\" or \"fp16\"", compute);
        }
    }
    if (st == CG_OK) {
        if (!strcmp(acc, "fp32"))
            p->target.accumulate_fp32 = true;
        else if (strcmp(acc, "fp16") != 0)
            st = perr(ps, "$.precision.accumulate", "'%s' is not \"fp16\" or \"fp32\"", acc);
        else if (p->target.precision == CG_PRECISION_FP32)
            st = perr(ps, "$.precision.accumulate", "fp16 accumulation with fp32 compute");
    }
    if (st == CG_OK)
        st = parse_device_classes(ps, j, p);
    free(compute);
    free(acc);
    free(note);
    free(source);
    return st;
}

/* "layout" (optional, "nchw" by default) and "crossing" (optional): what the
 * target says about itself that placement and cost read (target.h). */
static cg_status parse_layout_crossing(pf_parser *ps, const json_t *root, pf_profile *p)
{
    char *layout = NULL;
    cg_status st = get_string(ps, root, "$", "layout", false, &layout);
    if (st == CG_OK && layout) {
        if (!strcmp(layout, "nchw"))
            p->target.layout = CG_LAYOUT_NCHW;
        else if (!strcmp(layout, "nhwc"))
            p->target.layout = CG_LAYOUT_NHWC;
        else
            st = perr(ps, "$.layout", "'%s' is not \"nchw\" or \"nhwc\"", layout);
    }
    free(layout);
    json_t *j = json_object_get(root, "crossing");
    if (st != CG_OK || !j)
        return st;
    static const char *const keys[] = {"fixed_us", "bandwidth_gbps", "note", "source", NULL};
    const char *path = "$.crossing";
    bool has_fixed = false, has_bw = false;
    st = expect_object(ps, j, path);
    if (st == CG_OK)
        st = check_keys(ps, j, path, keys);
    if (st == CG_OK)
        st = get_number(ps, j, path, "fixed_us", &has_fixed, &p->target.crossing_fixed_us);
    if (st == CG_OK)
        st = get_number(ps, j, path, "bandwidth_gbps", &has_bw, &p->target.crossing_gbps);
    if (st == CG_OK && (!has_fixed || !has_bw))
        st = perr(ps, path, "needs both \"fixed_us\" and \"bandwidth_gbps\"");
    if (st == CG_OK && !(p->target.crossing_fixed_us >= 0 && p->target.crossing_fixed_us < 1e9))
        st = perr(ps, "$.crossing.fixed_us", "%g is not a cost in [0, 1e9) us",
                  p->target.crossing_fixed_us);
    if (st == CG_OK && !(p->target.crossing_gbps > 0 && p->target.crossing_gbps < 1e9))
        st = perr(ps, "$.crossing.bandwidth_gbps", "%g is not a bandwidth in (0, 1e9) GB/s",
                  p->target.crossing_gbps);
    p->target.crossing_stated = st == CG_OK;
    return st;
}

/* Short stable names: lower-case letters, digits and '-'. */
static bool name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

static const cg_target_vtable profile_vtable;

/* "parameters": {"name": {"default": d, "min": a, "max": b, "note": ..., "source": ...}} */
static cg_status parse_parameters(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const keys[] = {"default", "min", "max", "note", "source", NULL};
    json_t *params = json_object_get(root, "parameters");
    if (!params)
        return CG_OK;
    cg_status st = expect_object(ps, params, "$.parameters");
    if (st != CG_OK)
        return st;
    if (json_object_size(params) > PF_MAX_PARAMS)
        return perr(ps, "$.parameters", "%zu parameters, at most %d", json_object_size(params),
                    PF_MAX_PARAMS);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        char path[PATH_MAX_LEN];
        child(path, "$.parameters", key);
        bool ok = *key != '\0';
        for (const char *c = key; *c; c++)
            ok = ok && ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
        if (!ok)
            return perr(ps, path, "parameter names are lower-case letters, digits and '_'");
        if ((st = expect_object(ps, v, path)) != CG_OK || (st = check_keys(ps, v, path, keys)) != CG_OK)
            return st;
        pf_param *pp = &p->params[p->param_count];
        if (!json_object_get(v, "default") || !json_object_get(v, "min") ||
            !json_object_get(v, "max"))
            return perr(ps, path, "needs 'default', 'min' and 'max'");
        if ((st = get_int(ps, v, path, "min", INT64_MIN / 2, INT64_MAX / 2, &pp->min)) != CG_OK ||
            (st = get_int(ps, v, path, "max", INT64_MIN / 2, INT64_MAX / 2, &pp->max)) != CG_OK ||
            (st = get_int(ps, v, path, "default", INT64_MIN / 2, INT64_MAX / 2, &pp->dflt)) !=
                CG_OK)
            return st;
        if (pp->min > pp->max || pp->dflt < pp->min || pp->dflt > pp->max)
            return perr(ps, path, "needs min <= default <= max");
        char *source = NULL;
        if ((st = get_string(ps, v, path, "note", false, &pp->note)) != CG_OK ||
            (st = get_string(ps, v, path, "source", false, &source)) != CG_OK)
            return st;
        free(source);
        if (!(pp->name = strdup(key)))
            return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
        p->param_count++;
    }
    return CG_OK;
}

/* A name src/target/lowerings.def lists, or "none". */
static bool lowering_known(const char *name)
{
    static const char *const names[] = {"none",
#define CG_LOWERING(name, fn, description, remover) name,
#include "target/lowerings.def"
#undef CG_LOWERING
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static cg_status parse_root(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const keys[] = {"format_version", "name", "runtime", "version",
                                       "description", "sources", "fallback", "precision",
                                       "layout", "crossing", "partition", "limits",
                                       "not_modelled", "ops", "preprocess", "parameters", NULL};
    cg_status st = expect_object(ps, root, "$");
    if (st == CG_OK)
        st = check_keys(ps, root, "$", keys);
    if (st != CG_OK)
        return st;
    json_t *fv = json_object_get(root, "format_version");
    if (!fv)
        return perr(ps, "$.format_version", "missing (required: 1)");
    if (!json_is_integer(fv) || json_integer_value(fv) != 1)
        return perr(ps, "$.format_version", "this convgate reads format_version 1 only");
    char *name = NULL, *version = NULL, *desc = NULL, *fallback = NULL;
    st = get_string(ps, root, "$", "name", true, &name);
    p->target.name = name;
    if (st == CG_OK && !name_ok(name))
        st = perr(ps, "$.name", "'%s' must be lower-case letters, digits and '-'", name);
    if (st == CG_OK)
        st = get_string(ps, root, "$", "runtime", true, &p->runtime);
    if (st == CG_OK)
        st = get_string(ps, root, "$", "version", true, &version);
    p->target.version = version;
    if (st == CG_OK)
        st = get_string(ps, root, "$", "description", false, &desc);
    p->target.description = desc;
    if (st == CG_OK)
        st = get_string(ps, root, "$", "fallback", true, &fallback);
    if (st == CG_OK) {
        if (!strcmp(fallback, "cpu"))
            p->target.fallback = CG_FALLBACK_CPU;
        else if (!strcmp(fallback, "fail"))
            p->target.fallback = CG_FALLBACK_FAIL;
        else
            st = perr(ps, "$.fallback", "'%s' is not \"cpu\" or \"fail\"", fallback);
    }
    free(fallback);
    if (st == CG_OK)
        st = get_string(ps, root, "$", "preprocess", false, &p->lowering);
    if (st == CG_OK && p->lowering && !lowering_known(p->lowering))
        st = perr(ps, "$.preprocess", "'%s' is not a known preprocess (`convgate lower --help`)",
                  p->lowering);
    p->target.lowering = p->lowering;
    if (st == CG_OK)
        st = parse_sources(ps, root, p);
    if (st == CG_OK)
        st = parse_precision(ps, root, p);
    if (st == CG_OK)
        st = parse_layout_crossing(ps, root, p);
    if (st == CG_OK)
        st = parse_partition(ps, root, p);
    if (st == CG_OK)
        st = parse_limits(ps, root, &p->limits);
    if (st == CG_OK)
        st = parse_parameters(ps, root, p);
    ps->profile = p;
    if (st == CG_OK)
        st = get_strings(ps, root, "$", "not_modelled", true, &p->not_modelled,
                         &p->target.not_modelled_count);
    p->target.not_modelled = (const char *const *)p->not_modelled;
    if (st == CG_OK)
        st = parse_ops(ps, root, p);
    return st;
}

cg_status cg_profile_load(const char *path, cg_target **out, cg_error *err)
{
    *out = NULL;
    json_error_t jerr;
    pf_parser ps = {path, err, NULL};
    pf_profile *p = NULL;
    cg_status st;
    /* opened as a regular file only: a FIFO named as a profile must not block */
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
    close(fd);
    if (!root) {
        /* jansson reports unreadable files and syntax errors alike; line 0 = I/O */
        return cg_error_set(err, jerr.line <= 0 ? CG_IO : CG_PARSE, "profile %s:%d:%d: %s", path,
                            jerr.line, jerr.column, jerr.text);
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        st = cg_error_set(err, CG_NOMEM, "out of memory reading %s", path);
        goto fail;
    }
    p->target.kind = CG_TARGET_PROFILED;
    p->target.vt = &profile_vtable;
    p->target.impl = p;
    p->path = strdup(path);
    if (!p->path) {
        st = cg_error_set(err, CG_NOMEM, "out of memory reading %s", path);
        goto fail;
    }
    if ((st = parse_root(&ps, root, p)) != CG_OK)
        goto fail;
    /* "<file> (<repo>@<revision>:<path>[, +N more])": where the rules come from */
    const cg_profile_source *s0 = &p->sources[0];
    size_t need = strlen(path) + strlen(s0->repo) + strlen(s0->revision) + strlen(s0->path) + 64;
    char *src = malloc(need);
    if (!src) {
        st = cg_error_set(err, CG_NOMEM, "out of memory reading %s", path);
        goto fail;
    }
    int n = snprintf(src, need, "%s (%s@%s:%s", path, s0->repo, s0->revision, s0->path);
    if (p->source_count > 1)
        snprintf(src + n, need - (size_t)n, ", +%zu more)", p->source_count - 1);
    else
        snprintf(src + n, need - (size_t)n, ")");
    p->target.source = src;
    json_decref(root);
    *out = &p->target;
    return CG_OK;
fail:
    profile_free(p);
    json_decref(root);
    return st;
}

/* --- evaluation --------------------------------------------------------------------- */

/* Appends printf output to a bounded reason buffer (truncates quietly). */
typedef struct reason_buf {
    char *s;
    size_t cap, len;
} reason_buf;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void rb_add(reason_buf *rb, const char *fmt, ...)
{
    if (!rb->s || rb->cap == 0 || rb->len >= rb->cap - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(rb->s + rb->len, rb->cap - rb->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        rb->len += (size_t)n < rb->cap - rb->len ? (size_t)n : rb->cap - rb->len - 1;
}

static void rb_dtypes(reason_buf *rb, uint32_t mask)
{
    bool first = true;
    rb_add(rb, "{");
    for (int d = 0; d < CG_DTYPE_COUNT; d++)
        if (mask & (1u << d)) {
            rb_add(rb, "%s%s", first ? "" : ", ", cg_dtype_name((cg_dtype)d));
            first = false;
        }
    rb_add(rb, "}");
}

static void rb_value(reason_buf *rb, const pf_value *v)
{
    if (v->kind == PV_STRING)
        rb_add(rb, "%s", v->s);
    else if (v->kind == PV_INT)
        rb_add(rb, "%" PRId64, v->i);
    else
        rb_add(rb, "%g", v->f);
}

static void rb_values(reason_buf *rb, const pf_values *vs, const char *open, const char *close)
{
    rb_add(rb, "%s", open);
    for (size_t i = 0; i < vs->count; i++) {
        rb_add(rb, "%s", i ? ", " : "");
        rb_value(rb, &vs->v[i]);
    }
    rb_add(rb, "%s", close);
}

static void rb_dims(reason_buf *rb, const cg_value_type *t)
{
    rb_add(rb, "[");
    for (int d = 0; d < t->rank; d++)
        rb_add(rb, "%s%" PRId64, d ? "," : "", t->dims[d]);
    rb_add(rb, "]");
}

/* What one evaluation needs. */
typedef struct pf_eval {
    const pf_profile *p;
    const pf_op *op;
    const cg_support_query *q;
    const cg_schema *schema;
    reason_buf rb;
    const int64_t *params; /* the target's parameter values, p->param_count of them */
} pf_eval;

/* "Conv 'conv3'" (or "Conv (output 'y')" for an unnamed node). */
static void rb_node(pf_eval *ev)
{
    const cg_node *n = ev->q->node;
    const char *dom = cg_domain_is_default(n->domain) ? NULL : n->domain;
    rb_add(&ev->rb, "%s%s%s ", dom ? dom : "", dom ? ":" : "", n->op_type ? n->op_type : "?");
    if (n->name && *n->name)
        rb_add(&ev->rb, "'%s': ", n->name);
    else if (n->output_count && n->outputs[0] && *n->outputs[0])
        rb_add(&ev->rb, "(output '%s'): ", n->outputs[0]);
    else
        rb_add(&ev->rb, "(unnamed): ");
}

static void rb_note(pf_eval *ev, const char *note)
{
    if (note)
        rb_add(&ev->rb, " (note: %s)", note);
}

static bool present(const char *name) { return name && *name; }

/* "input 1 (indices)": the formal name from the op's schema when known. */
static void rb_io(pf_eval *ev, bool is_input, size_t i)
{
    rb_add(&ev->rb, "%s %zu", is_input ? "input" : "output", i);
    const cg_schema *s = ev->schema;
    if (!s)
        return;
    const cg_schema_formal *f = is_input ? s->inputs : s->outputs;
    size_t fc = is_input ? s->input_count : s->output_count;
    if (fc == 0)
        return;
    const cg_schema_formal *use = NULL;
    if (i < fc)
        use = &f[i];
    else if (f[fc - 1].option == CG_FORMAL_VARIADIC)
        use = &f[fc - 1];
    if (use && use->name)
        rb_add(&ev->rb, " (%s)", use->name);
}

/* An attribute value as read from the node or a default. */
typedef enum av_kind { AV_ABSENT, AV_INT, AV_FLOAT, AV_STRING, AV_INTS, AV_FLOATS, AV_OTHER,
                       AV_RULE } av_kind;

typedef struct attr_view {
    av_kind kind;
    int64_t i;
    double f;
    const char *s;
    size_t slen;
    const int64_t *ints;
    const float *floats;
    size_t n;
    const pf_values *rule_default; /* AV_RULE: the profile's "default" */
    bool from_default;
} attr_view;

static attr_view view_attr(const cg_attr *a)
{
    attr_view v = {0};
    switch (a->type) {
    case CG_ATTR_INT: v.kind = AV_INT; v.i = a->i; v.f = (double)a->i; break;
    case CG_ATTR_FLOAT: v.kind = AV_FLOAT; v.f = a->f; break;
    case CG_ATTR_STRING:
        v.kind = AV_STRING;
        v.s = (const char *)a->s.data;
        v.slen = a->s.data ? a->s.len : 0;
        break;
    case CG_ATTR_INTS: v.kind = AV_INTS; v.ints = a->ints; v.n = a->ints_count; break;
    case CG_ATTR_FLOATS: v.kind = AV_FLOATS; v.floats = a->floats; v.n = a->floats_count; break;
    default: v.kind = AV_OTHER; break;
    }
    return v;
}

/* The attribute's value, else the rule's default, else the schema's. */
static attr_view effective_attr(const pf_eval *ev, const char *name, const pf_values *rule_dflt)
{
    const cg_attr *a = cg_node_attr(ev->q->node, name);
    if (a)
        return view_attr(a);
    attr_view v = {0};
    v.from_default = true;
    if (rule_dflt) {
        v.kind = AV_RULE;
        v.rule_default = rule_dflt;
        return v;
    }
    const cg_schema_attr *sa = ev->schema ? cg_schema_find_attr(ev->schema, name) : NULL;
    if (!sa || !sa->has_default)
        return v; /* AV_ABSENT */
    switch (sa->type) {
    case CG_ATTR_INT: v.kind = AV_INT; v.i = sa->default_i; v.f = (double)sa->default_i; break;
    case CG_ATTR_FLOAT: v.kind = AV_FLOAT; v.f = sa->default_f; break;
    case CG_ATTR_STRING:
        v.kind = AV_STRING;
        v.s = sa->default_s ? sa->default_s : "";
        v.slen = strlen(v.s);
        break;
    case CG_ATTR_INTS: v.kind = AV_INTS; v.ints = sa->default_ints; v.n = sa->default_ints_count; break;
    case CG_ATTR_FLOATS:
        v.kind = AV_FLOATS;
        v.floats = sa->default_floats;
        v.n = sa->default_floats_count;
        break;
    default: v.kind = AV_OTHER; break;
    }
    return v;
}

static size_t av_count(const attr_view *v)
{
    switch (v->kind) {
    case AV_INT:
    case AV_FLOAT:
    case AV_STRING: return 1;
    case AV_INTS:
    case AV_FLOATS: return v->n;
    case AV_RULE: return v->rule_default->count;
    default: return 0;
    }
}

static bool av_is_list(const attr_view *v)
{
    return v->kind == AV_INTS || v->kind == AV_FLOATS ||
           (v->kind == AV_RULE && v->rule_default->is_list);
}

/* Element i as a pf_value (strings borrowed; the length is exact). */
static pf_value av_elem(const attr_view *v, size_t i, size_t *slen)
{
    pf_value e = {0};
    *slen = 0;
    switch (v->kind) {
    case AV_INT: e.kind = PV_INT; e.i = v->i; e.f = v->f; break;
    case AV_FLOAT: e.kind = PV_FLOAT; e.f = v->f; break;
    case AV_STRING: e.kind = PV_STRING; e.s = (char *)v->s; *slen = v->slen; break;
    case AV_INTS: e.kind = PV_INT; e.i = v->ints[i]; e.f = (double)v->ints[i]; break;
    case AV_FLOATS: e.kind = PV_FLOAT; e.f = v->floats[i]; break;
    case AV_RULE:
        e = v->rule_default->v[i];
        *slen = e.kind == PV_STRING ? strlen(e.s) : 0;
        break;
    default: break;
    }
    return e;
}

/* Scalar equality; numbers compare by value (NaN equals nothing). */
static bool pv_equal(const pf_value *a, size_t alen, const pf_value *b)
{
    if ((a->kind == PV_STRING) != (b->kind == PV_STRING))
        return false;
    if (a->kind == PV_STRING)
        return strlen(b->s) == alen && (alen == 0 || memcmp(a->s, b->s, alen) == 0);
    if (a->kind == PV_INT && b->kind == PV_INT)
        return a->i == b->i;
    return a->f == b->f;
}

static void rb_av(reason_buf *rb, const attr_view *v)
{
    size_t n = av_count(v);
    bool list = av_is_list(v);
    if (list)
        rb_add(rb, "[");
    for (size_t i = 0; i < n && i < 16; i++) {
        size_t slen;
        pf_value e = av_elem(v, i, &slen);
        if (e.kind == PV_STRING)
            rb_add(rb, "%s'%.*s'", i ? "," : "", (int)slen, e.s ? e.s : "");
        else if (e.kind == PV_INT)
            rb_add(rb, "%s%" PRId64, i ? "," : "", e.i);
        else
            rb_add(rb, "%s%g", i ? "," : "", e.f);
    }
    if (n > 16)
        rb_add(rb, ",...");
    if (list)
        rb_add(rb, "]");
}

static const cg_value_type *input_type(const pf_eval *ev, size_t i)
{
    const cg_node *n = ev->q->node;
    if (i >= n->input_count || !present(n->inputs[i]) || !ev->q->types)
        return NULL;
    return cg_type_env_get(ev->q->types, n->inputs[i]);
}

/* The elements of a constant value of the node's graph (an initializer, or
 * a Constant node's value) as doubles; false when name has no value the
 * graph holds as data (computed at run time, or too large to read here). */
static bool const_values(const pf_eval *ev, const char *name, double *out, size_t cap,
                         size_t *n)
{
    const cg_graph *g = ev->q->graph;
    const cg_tensor_proto *tp = NULL;
    for (size_t i = 0; g && i < g->initializer_count && !tp; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            tp = &g->initializers[i];
    float f;
    int64_t iv;
    const float *fv = NULL;
    const int64_t *ivs = NULL;
    size_t count = 0;
    for (size_t k = 0; g && !tp && !fv && !ivs && k < g->node_count; k++) {
        const cg_node *c = &g->nodes[k];
        if (!c->op_type || strcmp(c->op_type, "Constant") != 0 || c->output_count != 1 ||
            !c->outputs[0] || strcmp(c->outputs[0], name) != 0 || c->attr_count != 1)
            continue;
        const cg_attr *a = &c->attrs[0];
        const char *an = a->name ? a->name : "";
        if (!strcmp(an, "value"))
            tp = a->t;
        else if (!strcmp(an, "value_float"))
            f = a->f, fv = &f, count = 1;
        else if (!strcmp(an, "value_floats"))
            fv = a->floats, count = a->floats_count;
        else if (!strcmp(an, "value_int"))
            iv = a->i, ivs = &iv, count = 1;
        else if (!strcmp(an, "value_ints"))
            ivs = a->ints, count = a->ints_count;
    }
    if (fv || ivs) {
        if (count > cap)
            return false;
        for (size_t i = 0; i < count; i++)
            out[i] = fv ? (double)fv[i] : (double)ivs[i];
        *n = count;
        return true;
    }
    if (!tp)
        return false;
    cg_value *v = NULL;
    if (cg_value_from_tensor_proto(tp, &v, NULL) != CG_OK || !v)
        return false;
    bool ok = v->kind == CG_VALUE_TENSOR && v->tensor.dtype != CG_DTYPE_STRING &&
              v->tensor.numel >= 0 && (size_t)v->tensor.numel <= cap;
    for (int64_t i = 0; ok && i < v->tensor.numel; i++)
        out[i] = cg_tensor_get_f64(&v->tensor, i);
    if (ok)
        *n = (size_t)v->tensor.numel;
    cg_value_free(v);
    return ok;
}

/* Every element of the constant name is one of vs (numbers). */
static bool values_all_in(const pf_eval *ev, const char *name, const pf_values *vs)
{
    double vals[PF_MAX_VALUES];
    size_t n = 0;
    if (!const_values(ev, name, vals, PF_MAX_VALUES, &n) || n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool hit = false;
        for (size_t k = 0; k < vs->count && !hit; k++) {
            const pf_value *e = &vs->v[k];
            double want = e->kind == PV_INT ? (double)e->i : e->kind == PV_FLOAT ? e->f : NAN;
            hit = vals[i] == want; /* NaN never equals */
        }
        if (!hit)
            return false;
    }
    return true;
}

static bool cond_holds_one(const pf_eval *ev, const pf_cond *c);

static bool cond_holds(const pf_eval *ev, const pf_cond *c)
{
    for (; c; c = c->next)
        if (!cond_holds_one(ev, c))
            return false;
    return true;
}

static bool cond_holds_one(const pf_eval *ev, const pf_cond *c)
{
    switch (c->kind) {
    case COND_NONE: return true;
    case COND_PARAM: {
        int64_t v = ev->params ? ev->params[c->param] : ev->p->params[c->param].dflt;
        return (!c->has_pmin || v >= c->pmin) && (!c->has_pmax || v <= c->pmax);
    }
    case COND_INPUT_VALUE: {
        const cg_node *n = ev->q->node;
        if ((size_t)c->input >= n->input_count || !present(n->inputs[c->input]))
            return false;
        return values_all_in(ev, n->inputs[c->input], &c->values);
    }
    case COND_INPUT_CONST: {
        const cg_value_type *t = input_type(ev, (size_t)c->input);
        bool is_const = t && t->is_const;
        return is_const == c->is_const;
    }
    case COND_INPUT_DTYPES: {
        const cg_value_type *t = input_type(ev, (size_t)c->input);
        return t && t->known && (c->dtypes & (1u << t->dtype));
    }
    case COND_INPUT_RANKS: {
        const cg_value_type *t = input_type(ev, (size_t)c->input);
        for (size_t k = 0; t && t->known && k < c->rank_count; k++)
            if (c->ranks[k] == t->rank)
                return true;
        return false;
    }
    case COND_OPSET_MIN: return ev->q->opset >= c->opset;
    case COND_ATTR_IN: {
        attr_view v = effective_attr(ev, c->attr, NULL);
        size_t n = av_count(&v);
        if (n == 0)
            return false;
        for (size_t i = 0; i < n; i++) {
            size_t slen;
            pf_value e = av_elem(&v, i, &slen);
            bool hit = false;
            for (size_t k = 0; k < c->values.count && !hit; k++)
                hit = pv_equal(&e, slen, &c->values.v[k]);
            if (!hit)
                return false;
        }
        return true;
    }
    }
    return true;
}

/* The text of one condition ("input 1 is constant"). */
static void rb_cond_one(pf_eval *ev, const pf_cond *c)
{
    switch (c->kind) {
    case COND_NONE: return;
    case COND_INPUT_CONST:
        rb_add(&ev->rb, "input %d is %sconstant", c->input, c->is_const ? "" : "not ");
        return;
    case COND_INPUT_DTYPES:
        rb_add(&ev->rb, "input %d has dtype in ", c->input);
        rb_dtypes(&ev->rb, c->dtypes);
        return;
    case COND_INPUT_RANKS:
        rb_add(&ev->rb, "input %d has rank in {", c->input);
        for (size_t k = 0; k < c->rank_count; k++)
            rb_add(&ev->rb, "%s%d", k ? ", " : "", c->ranks[k]);
        rb_add(&ev->rb, "}");
        return;
    case COND_INPUT_VALUE:
        rb_add(&ev->rb, "input %d is a constant with values in ", c->input);
        rb_values(&ev->rb, &c->values, "{", "}");
        return;
    case COND_OPSET_MIN:
        rb_add(&ev->rb, "opset >= %" PRId64, c->opset);
        return;
    case COND_ATTR_IN:
        rb_add(&ev->rb, "%s in ", c->attr);
        rb_values(&ev->rb, &c->values, "{", "}");
        return;
    case COND_PARAM: {
        const char *name = ev->p->params[c->param].name;
        if (c->has_pmin && c->has_pmax)
            rb_add(&ev->rb, "%s in [%" PRId64 ", %" PRId64 "]", name, c->pmin, c->pmax);
        else if (c->has_pmin)
            rb_add(&ev->rb, "%s >= %" PRId64, name, c->pmin);
        else
            rb_add(&ev->rb, "%s <= %" PRId64, name, c->pmax);
        return;
    }
    }
}

/* " (rule applies when A and B)" for a rule's condition chain. */
static void rb_cond(pf_eval *ev, const pf_cond *c)
{
    if (!c || c->kind == COND_NONE)
        return;
    rb_add(&ev->rb, " (rule applies when ");
    for (const pf_cond *k = c; k; k = k->next) {
        if (k != c)
            rb_add(&ev->rb, " and ");
        rb_cond_one(ev, k);
    }
    rb_add(&ev->rb, ")");
}

/* Refuses because a rule needs the type of a value that is unknown. */
static bool fail_unknown(pf_eval *ev, bool is_input, size_t i, const char *name,
                         const char *what)
{
    rb_node(ev);
    rb_io(ev, is_input, i);
    rb_add(&ev->rb, " '%s' has no known type, so %s cannot be checked (no value_info for it)",
           name, what);
    return false;
}

/* --- global limits ------------------------------------------------------------------ */

static bool check_tensor_limits(pf_eval *ev, bool is_input, size_t i, const char *name)
{
    const pf_limits *l = &ev->p->limits;
    const char *pname = ev->p->target.name;
    bool needs_type = l->max_rank >= 0 || l->max_dim >= 0 || !l->dynamic_shapes ||
                      !l->zero_sized_dims;
    if (!needs_type)
        return true;
    const cg_value_type *t = ev->q->types ? cg_type_env_get(ev->q->types, name) : NULL;
    if (!t || !t->known)
        return fail_unknown(ev, is_input, i, name, "the profile's shape limits");
    if (!l->dynamic_shapes) {
        uint32_t dyn = cg_type_env_dynamic_dims(ev->q->types, name);
        for (int d = 0; d < t->rank; d++)
            if (dyn & (1u << d)) {
                rb_node(ev);
                rb_add(&ev->rb, "dynamic shape: dim %d of %s '%s' is unknown and %s requires "
                       "static shapes", d, is_input ? "input" : "output", name, pname);
                rb_note(ev, l->note_dynamic);
                return false;
            }
    }
    if (l->max_rank >= 0 && t->rank > l->max_rank) {
        rb_node(ev);
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, " '%s' has rank %d, %s allows <= %d", name, t->rank, pname, l->max_rank);
        rb_note(ev, l->note_max_rank);
        return false;
    }
    for (int d = 0; d < t->rank; d++) {
        if (!l->zero_sized_dims && t->dims[d] == 0 &&
            !(is_input && i < 32 && (ev->op->zero_ok_inputs & (1u << i)))) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " '%s' has a zero-sized dim %d ", name, d);
            rb_dims(&ev->rb, t);
            rb_add(&ev->rb, " and %s does not allow zero-sized dims", pname);
            rb_note(ev, l->note_zero);
            return false;
        }
        if (l->max_dim >= 0 && t->dims[d] > l->max_dim) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " '%s' dim %d is %" PRId64 ", %s allows <= %" PRId64, name, d,
                   t->dims[d], pname, l->max_dim);
            rb_note(ev, l->note_max_dim);
            return false;
        }
    }
    return true;
}

/* True when the op's own input rules give dtypes for input i (they override
 * the profile-wide dtype rule, as op builders override the default check). */
static bool op_sets_input_dtypes(const pf_op *op, size_t i)
{
    for (size_t r = 0; r < op->input_count; r++)
        if (op->inputs[r].dtypes && (op->inputs[r].index < 0 || (size_t)op->inputs[r].index == i))
            return true;
    return false;
}

static bool op_sets_output_dtypes(const pf_op *op, size_t i)
{
    for (size_t r = 0; r < op->output_count; r++)
        if (op->outputs[r].dtypes &&
            (op->outputs[r].index < 0 || (size_t)op->outputs[r].index == i))
            return true;
    return false;
}

static bool check_global_dtype(pf_eval *ev, bool is_input, size_t i, const char *name)
{
    const pf_limits *l = &ev->p->limits;
    if (!l->dtypes)
        return true;
    if (is_input ? op_sets_input_dtypes(ev->op, i) : op_sets_output_dtypes(ev->op, i))
        return true;
    if (l->dtype_scope == SCOPE_FIRST_INPUT && (!is_input || i != 0))
        return true;
    const cg_value_type *t = ev->q->types ? cg_type_env_get(ev->q->types, name) : NULL;
    if (l->dtype_scope == SCOPE_RUNTIME && is_input && t && t->is_const)
        return true;
    if (!t || !t->known)
        return fail_unknown(ev, is_input, i, name, "the profile's dtype rule");
    if (l->dtypes & (1u << t->dtype))
        return true;
    rb_node(ev);
    rb_add(&ev->rb, "dtype %s of ", cg_dtype_name(t->dtype));
    rb_io(ev, is_input, i);
    rb_add(&ev->rb, " not in ");
    rb_dtypes(&ev->rb, l->dtypes);
    rb_add(&ev->rb, " (%s's dtypes for %s)", ev->p->target.name,
           l->dtype_scope == SCOPE_FIRST_INPUT ? "input 0"
           : l->dtype_scope == SCOPE_RUNTIME   ? "non-constant tensors"
                                               : "every tensor");
    rb_note(ev, l->note_dtypes);
    return false;
}

static bool check_limits(pf_eval *ev)
{
    const cg_node *n = ev->q->node;
    const pf_limits *l = &ev->p->limits;
    if (!l->subgraphs && ev->q->model && ev->q->graph != ev->q->model->graph) {
        rb_node(ev);
        rb_add(&ev->rb, "node is inside a control-flow subgraph and %s never takes subgraph "
               "nodes", ev->p->target.name);
        rb_note(ev, l->note_subgraphs);
        return false;
    }
    for (size_t i = 0; i < n->input_count; i++)
        if (present(n->inputs[i]) && (!check_tensor_limits(ev, true, i, n->inputs[i]) ||
                                      !check_global_dtype(ev, true, i, n->inputs[i])))
            return false;
    for (size_t i = 0; i < n->output_count; i++)
        if (present(n->outputs[i]) && (!check_tensor_limits(ev, false, i, n->outputs[i]) ||
                                       !check_global_dtype(ev, false, i, n->outputs[i])))
            return false;
    if (!l->mixed_input_dtypes) {
        const cg_value_type *first = NULL;
        size_t first_i = 0;
        for (size_t i = 0; i < n->input_count; i++) {
            if (!present(n->inputs[i]))
                continue;
            const cg_value_type *t = input_type(ev, i);
            if (!t || !t->known)
                return fail_unknown(ev, true, i, n->inputs[i], "the no-mixed-dtypes rule");
            if (!first) {
                first = t;
                first_i = i;
            } else if (t->dtype != first->dtype) {
                rb_node(ev);
                rb_add(&ev->rb, "inputs mix dtypes: input %zu is %s, input %zu is %s, and %s "
                       "requires one dtype", first_i, cg_dtype_name(first->dtype), i,
                       cg_dtype_name(t->dtype), ev->p->target.name);
                rb_note(ev, l->note_mixed);
                return false;
            }
        }
    }
    return true;
}

/* --- per-op rules --------------------------------------------------------------------- */

static bool check_io_rule(pf_eval *ev, const pf_io_rule *r, bool is_input, size_t i)
{
    const cg_node *n = ev->q->node;
    const char *name = is_input ? (i < n->input_count ? n->inputs[i] : NULL)
                                : (i < n->output_count ? n->outputs[i] : NULL);
    if (!cond_holds(ev, &r->when))
        return true;
    if (r->present >= 0 && present(name) != (r->present == 1)) {
        rb_node(ev);
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, r->present ? " must be present" : " must be absent ('%s' given)",
               name ? name : "");
        goto fail;
    }
    if (!present(name))
        return true; /* absent optional: nothing else applies */
    const cg_value_type *t = ev->q->types ? cg_type_env_get(ev->q->types, name) : NULL;
    if (r->is_const >= 0 || r->not_graph_input) {
        bool is_const = t && t->is_const;
        if (r->is_const == 1 && !is_const) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " must be a constant initializer ('%s' is computed at run time)",
                   name);
            goto fail;
        }
        if (r->is_const == 0 && is_const) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " must not be a constant ('%s' is)", name);
            goto fail;
        }
        if (r->not_graph_input && t && t->is_graph_input) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " must not be a graph input ('%s' is)", name);
            goto fail;
        }
    }
    if (r->has_values && !values_all_in(ev, name, &r->values)) {
        rb_node(ev);
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, " must be a constant with every value in ");
        rb_values(&ev->rb, &r->values, "{", "}");
        double vals[8];
        size_t nv = 0;
        if (const_values(ev, name, vals, 8, &nv) && nv) {
            rb_add(&ev->rb, " ('%s' is", name);
            for (size_t k = 0; k < nv; k++)
                rb_add(&ev->rb, "%s%g", k ? ", " : " ", vals[k]);
            rb_add(&ev->rb, ")");
        } else {
            rb_add(&ev->rb, " ('%s' is not a constant the graph holds)", name);
        }
        goto fail;
    }
    if (!r->dtypes && r->min_rank < 0 && r->max_rank < 0 && !r->rank_in_count)
        return true;
    if (!t || !t->known)
        return fail_unknown(ev, is_input, i, name, "its dtype/rank rule");
    if (r->dtypes && !(r->dtypes & (1u << t->dtype))) {
        rb_node(ev);
        rb_add(&ev->rb, "dtype %s of ", cg_dtype_name(t->dtype));
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, " not in ");
        rb_dtypes(&ev->rb, r->dtypes);
        goto fail;
    }
    if (r->min_rank >= 0 && t->rank < r->min_rank) {
        rb_node(ev);
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, " has rank %d, profile allows >= %d", t->rank, r->min_rank);
        goto fail;
    }
    if (r->max_rank >= 0 && t->rank > r->max_rank) {
        rb_node(ev);
        rb_io(ev, is_input, i);
        rb_add(&ev->rb, " has rank %d, profile allows <= %d", t->rank, r->max_rank);
        goto fail;
    }
    if (r->rank_in_count) {
        bool hit = false;
        for (size_t k = 0; k < r->rank_in_count; k++)
            hit = hit || r->rank_in[k] == t->rank;
        if (!hit) {
            rb_node(ev);
            rb_io(ev, is_input, i);
            rb_add(&ev->rb, " has rank %d, profile allows {", t->rank);
            for (size_t k = 0; k < r->rank_in_count; k++)
                rb_add(&ev->rb, "%s%d", k ? ", " : "", r->rank_in[k]);
            rb_add(&ev->rb, "}");
            goto fail;
        }
    }
    return true;
fail:
    rb_cond(ev, &r->when);
    rb_note(ev, r->note);
    return false;
}

static bool check_io_rules(pf_eval *ev, bool is_input)
{
    const pf_op *op = ev->op;
    const pf_io_rule *rules = is_input ? op->inputs : op->outputs;
    size_t count = is_input ? op->input_count : op->output_count;
    size_t have = is_input ? ev->q->node->input_count : ev->q->node->output_count;
    for (size_t r = 0; r < count; r++) {
        if (rules[r].index >= 0) {
            if (!check_io_rule(ev, &rules[r], is_input, (size_t)rules[r].index))
                return false;
            continue;
        }
        for (size_t i = 0; i < have; i++)
            if (!check_io_rule(ev, &rules[r], is_input, i))
                return false;
    }
    return true;
}

static bool check_attr_rule(pf_eval *ev, const pf_attr_rule *r)
{
    if (!cond_holds(ev, &r->when))
        return true;
    const cg_attr *given = cg_node_attr(ev->q->node, r->name);
    attr_view v = effective_attr(ev, r->name, r->has_default ? &r->dflt : NULL);
    if (r->must_be_absent) {
        if (!given)
            return true;
        rb_node(ev);
        rb_add(&ev->rb, "attribute %s must be absent (given ", r->name);
        rb_av(&ev->rb, &v);
        rb_add(&ev->rb, ")");
        goto fail;
    }
    if (r->required && !given) {
        rb_node(ev);
        rb_add(&ev->rb, "attribute %s must be present", r->name);
        goto fail;
    }
    if (r->has_equals && r->absent_ok && !given)
        return true;
    if (v.kind == AV_ABSENT)
        return true; /* absent without a known default: the op's own behaviour applies */
    if (v.kind == AV_OTHER) {
        rb_node(ev);
        rb_add(&ev->rb, "attribute %s is not a number, string or list of them, so its rule "
               "cannot be checked", r->name);
        goto fail;
    }
    size_t n = av_count(&v);
    if (r->has_equals) {
        bool ok = true;
        if (r->equals.is_list) {
            ok = n == r->equals.count;
            for (size_t k = 0; ok && k < n; k++) {
                size_t slen;
                pf_value e = av_elem(&v, k, &slen);
                ok = pv_equal(&e, slen, &r->equals.v[k]);
            }
        } else {
            for (size_t k = 0; ok && k < n; k++) {
                size_t slen;
                pf_value e = av_elem(&v, k, &slen);
                ok = pv_equal(&e, slen, &r->equals.v[0]);
            }
        }
        if (!ok) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s=", r->name);
            rb_av(&ev->rb, &v);
            rb_add(&ev->rb, "%s must %sequal ", v.from_default ? " (default)" : "",
                   r->absent_ok ? "be absent or " : "");
            if (r->equals.is_list)
                rb_values(&ev->rb, &r->equals, "[", "]");
            else
                rb_value(&ev->rb, &r->equals.v[0]);
            goto fail;
        }
    }
    for (size_t k = 0; k < n; k++) {
        size_t slen;
        pf_value e = av_elem(&v, k, &slen);
        if (r->has_in) {
            bool hit = false;
            for (size_t m = 0; m < r->in.count && !hit; m++)
                hit = pv_equal(&e, slen, &r->in.v[m]);
            if (!hit) {
                rb_node(ev);
                rb_add(&ev->rb, "attribute %s=", r->name);
                rb_av(&ev->rb, &v);
                rb_add(&ev->rb, "%s not in ", v.from_default ? " (default)" : "");
                rb_values(&ev->rb, &r->in, "{", "}");
                goto fail;
            }
        }
        if ((r->has_min || r->has_max) && e.kind == PV_STRING) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s is a string, the profile gives it a numeric range",
                   r->name);
            goto fail;
        }
        /* written so that NaN fails both bounds */
        if (r->has_min && !(e.f >= r->min)) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s=", r->name);
            rb_av(&ev->rb, &v);
            rb_add(&ev->rb, " below the minimum %g", r->min);
            goto fail;
        }
        if (r->has_max && !(e.f <= r->max)) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s=", r->name);
            rb_av(&ev->rb, &v);
            rb_add(&ev->rb, " above the maximum %g", r->max);
            goto fail;
        }
    }
    if (r->last_axis_of >= 0) {
        const cg_value_type *t = input_type(ev, (size_t)r->last_axis_of);
        if (!t || !t->known) {
            const cg_node *nd = ev->q->node;
            size_t ix = (size_t)r->last_axis_of;
            return fail_unknown(ev, true, ix, ix < nd->input_count ? nd->inputs[ix] : "",
                                "its last-axis rule");
        }
        size_t slen;
        pf_value e = n == 1 ? av_elem(&v, 0, &slen) : (pf_value){0};
        if (n != 1 || e.kind != PV_INT || !(e.i == -1 || e.i == t->rank - 1)) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s=", r->name);
            rb_av(&ev->rb, &v);
            rb_add(&ev->rb, "%s must name the last axis of input %d (rank %d: -1 or %d)",
                   v.from_default ? " (default)" : "", r->last_axis_of, t->rank, t->rank - 1);
            goto fail;
        }
    }
    if (r->dims_of >= 0 && v.kind != AV_ABSENT && !v.from_default) {
        const cg_value_type *t = input_type(ev, (size_t)r->dims_of);
        if (!t || !t->known) {
            const cg_node *nd = ev->q->node;
            size_t ix = (size_t)r->dims_of;
            return fail_unknown(ev, true, ix, ix < nd->input_count ? nd->inputs[ix] : "",
                                "its dims rule");
        }
        bool ok = t->rank >= r->dims_skip && n == (size_t)(t->rank - r->dims_skip);
        for (size_t k = 0; ok && k < n; k++) {
            size_t slen;
            pf_value e = av_elem(&v, k, &slen);
            ok = e.kind == PV_INT && e.i == t->dims[r->dims_skip + (int)k];
        }
        if (!ok) {
            rb_node(ev);
            rb_add(&ev->rb, "attribute %s=", r->name);
            rb_av(&ev->rb, &v);
            rb_add(&ev->rb, " does not match dims %d.. of input %d ", r->dims_skip, r->dims_of);
            rb_dims(&ev->rb, t);
            goto fail;
        }
    }
    if (r->all_equal && n > 1) {
        size_t l0;
        pf_value e0 = av_elem(&v, 0, &l0);
        for (size_t k = 1; k < n; k++) {
            size_t slen;
            pf_value e = av_elem(&v, k, &slen);
            if (!pv_equal(&e, slen, &e0) || (e.kind == PV_STRING) != (e0.kind == PV_STRING)) {
                rb_node(ev);
                rb_add(&ev->rb, "attribute %s=", r->name);
                rb_av(&ev->rb, &v);
                rb_add(&ev->rb, " must have all elements equal");
                goto fail;
            }
        }
    }
    return true;
fail:
    rb_cond(ev, &r->when);
    rb_note(ev, r->note);
    return false;
}

static bool shapes_equal(const cg_value_type *a, const cg_value_type *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

/* TFLite GPU's CheckAddMulBroadcastCompatibility, applied to the ONNX shapes:
 * inputs of different ranks (both > 1) are accepted only as 4-D vs 3-D with
 * batch 1, 4-D [1,x,y,z] vs 2-D [1,1], or 4-D [b,x,y,c] vs 2-D [b,c]. */
static bool tflite_gpu_broadcast_ok(const cg_value_type *a, const cg_value_type *b)
{
    if (a->rank <= 1 || b->rank <= 1 || a->rank == b->rank)
        return true;
    const cg_value_type *hi = a->rank > b->rank ? a : b, *lo = a->rank > b->rank ? b : a;
    if (hi->rank != 4)
        return false;
    if (lo->rank == 3)
        return hi->dims[0] == 1;
    if (lo->rank == 2) {
        if (hi->dims[0] == 1 && lo->dims[0] == 1 && lo->dims[1] == 1)
            return true;
        return lo->dims[0] == hi->dims[0] && lo->dims[1] == hi->dims[3];
    }
    return false;
}

static bool check_broadcast(pf_eval *ev)
{
    if (ev->op->broadcast == BC_NUMPY)
        return true;
    const cg_node *n = ev->q->node;
    const cg_value_type *first = NULL;
    size_t first_i = 0;
    for (size_t i = 0; i < n->input_count; i++) {
        if (!present(n->inputs[i]))
            continue;
        const cg_value_type *t = input_type(ev, i);
        if (!t || !t->known)
            return fail_unknown(ev, true, i, n->inputs[i], "its broadcast rule");
        if (!first) {
            first = t;
            first_i = i;
            continue;
        }
        bool ok = ev->op->broadcast == BC_NONE ? shapes_equal(first, t)
                                               : tflite_gpu_broadcast_ok(first, t);
        if (!ok) {
            rb_node(ev);
            rb_add(&ev->rb, "input %zu shape ", first_i);
            rb_dims(&ev->rb, first);
            rb_add(&ev->rb, " and input %zu shape ", i);
            rb_dims(&ev->rb, t);
            if (ev->op->broadcast == BC_NONE)
                rb_add(&ev->rb, " differ and %s does not broadcast", ev->p->target.name);
            else
                rb_add(&ev->rb, " are not a broadcast %s accepts (different ranks > 1 only as "
                       "4-D vs 3-D with batch 1, 4-D [1,x,y,z] vs [1,1], 4-D [b,x,y,c] vs "
                       "[b,c])", ev->p->target.name);
            rb_note(ev, ev->op->note);
            return false;
        }
    }
    return true;
}

static const pf_op *find_op(const pf_profile *p, const char *domain, const char *op_type)
{
    pf_op key;
    key.domain = (char *)(cg_domain_is_default(domain) ? "" : domain);
    key.op_type = (char *)op_type;
    return bsearch(&key, p->ops, p->op_count, sizeof *p->ops, op_cmp);
}

static const pf_profile *profile_of(const cg_target *t);
static const int64_t *params_of(const cg_target *t);


/* A count of the node's inputs or outputs against the op's [min, max]
 * (-1: no bound); false with the reason written. */
static bool count_ok(pf_eval *ev, size_t got, int min, int max, const char *what)
{
    bool low = min >= 0 && got < (size_t)min, high = max >= 0 && got > (size_t)max;
    if (!low && !high)
        return true;
    rb_node(ev);
    rb_add(&ev->rb, "%zu %s, profile %s %d", got, what, low ? "requires >=" : "allows <=",
           low ? min : max);
    rb_note(ev, ev->op->note);
    return false;
}

static bool profile_supports(const cg_target *t, const cg_support_query *q, char *reason,
                             size_t reason_len)
{
    const pf_profile *p = profile_of(t);
    pf_eval ev = {p, NULL, q, NULL, {reason, reason_len, 0}, params_of(t)};
    if (reason && reason_len)
        reason[0] = '\0';
    const cg_node *n = q->node;
    const char *domain = cg_domain_is_default(n->domain) ? "" : n->domain;
    if (!n->op_type) {
        rb_add(&ev.rb, "node without an op type");
        return false;
    }
    ev.op = find_op(p, domain, n->op_type);
    if (!ev.op) {
        rb_node(&ev);
        rb_add(&ev.rb, "op %s%s%s not in %s's supported-op list", domain, *domain ? ":" : "",
               n->op_type, t->name);
        return false;
    }
    const pf_op *op = ev.op;
    ev.schema = cg_schema_find(domain, n->op_type, q->opset);
    if ((op->since && q->opset < op->since) || (op->until && q->opset > op->until)) {
        rb_node(&ev);
        rb_add(&ev.rb, "opset %" PRId64 " outside %s's range for %s: ", q->opset, t->name,
               n->op_type);
        if (op->since && op->until)
            rb_add(&ev.rb, "[%" PRId64 ", %" PRId64 "]", op->since, op->until);
        else if (op->since)
            rb_add(&ev.rb, ">= %" PRId64, op->since);
        else
            rb_add(&ev.rb, "<= %" PRId64, op->until);
        rb_note(&ev, op->note);
        return false;
    }
    if (!cond_holds(&ev, &op->requires)) {
        rb_node(&ev);
        rb_add(&ev.rb, "%s needs ", n->op_type);
        for (const pf_cond *c = &op->requires; c; c = c->next) {
            if (c != &op->requires)
                rb_add(&ev.rb, " and ");
            rb_cond_one(&ev, c);
        }
        rb_add(&ev.rb, " on %s (this target:", t->name);
        for (size_t k = 0; k < p->param_count; k++)
            rb_add(&ev.rb, " %s=%" PRId64, p->params[k].name,
                   ev.params ? ev.params[k] : p->params[k].dflt);
        rb_add(&ev.rb, ")");
        rb_note(&ev, op->note);
        return false;
    }
    size_t inputs = 0, runtime_inputs = 0, outputs = 0;
    for (size_t i = 0; i < n->input_count; i++)
        if (present(n->inputs[i])) {
            inputs++;
            const cg_value_type *vt = input_type(&ev, i);
            if (!vt || !vt->is_const)
                runtime_inputs++;
        }
    for (size_t i = 0; i < n->output_count; i++)
        outputs += present(n->outputs[i]);
    if (!count_ok(&ev, inputs, op->min_inputs, op->max_inputs, "inputs") ||
        !count_ok(&ev, runtime_inputs, -1, op->max_runtime_inputs, "non-constant inputs") ||
        !count_ok(&ev, outputs, op->min_outputs, op->max_outputs, "outputs used"))
        return false;
    if (!check_limits(&ev) || !check_io_rules(&ev, true) || !check_io_rules(&ev, false))
        return false;
    for (size_t a = 0; a < op->attr_count; a++)
        if (!check_attr_rule(&ev, &op->attrs[a]))
            return false;
    return check_broadcast(&ev);
}

static void profile_destroy(cg_target *t)
{
    if (t)
        profile_free(t->impl);
}

static const cg_target_vtable profile_vtable = {
    profile_supports, NULL, NULL, NULL, profile_destroy,
};

/* --- parameters: a profile bound to values ("nnapi@27") ------------------------------- */

/* The profile's target with its own name and parameter values; the rules
 * stay the profile's (borrowed: the registry frees bound targets first). */
typedef struct pf_bound {
    cg_target target;
    const pf_profile *p;
    int64_t values[PF_MAX_PARAMS];
    bool set[PF_MAX_PARAMS]; /* given in the name; else the default */
} pf_bound;

static void bound_destroy(cg_target *t)
{
    if (!t)
        return;
    pf_bound *b = t->impl;
    free((char *)b->target.name);
    free(b);
}

static const cg_target_vtable bound_vtable = {
    profile_supports, NULL, NULL, NULL, bound_destroy,
};

static const pf_profile *profile_of(const cg_target *t)
{
    if (t && t->vt == &profile_vtable)
        return t->impl;
    if (t && t->vt == &bound_vtable)
        return ((const pf_bound *)t->impl)->p;
    return NULL;
}

/* The parameter values of t: a bound target's, else NULL (the defaults). */
static const int64_t *params_of(const cg_target *t)
{
    static const int64_t none[PF_MAX_PARAMS];
    if (t && t->vt == &bound_vtable)
        return ((const pf_bound *)t->impl)->values;
    const pf_profile *p = profile_of(t);
    if (!p || !p->param_count)
        return none;
    return NULL;
}

cg_status cg_profile_bind(const cg_target *base, const char *spec, cg_target **out,
                          cg_error *err)
{
    *out = NULL;
    const pf_profile *p = profile_of(base);
    if (!p || base->vt != &profile_vtable)
        return cg_error_set(err, CG_USAGE, "target '%s' takes no parameters ('%s@%s')",
                            base ? base->name : "?", base ? base->name : "?", spec);
    if (!p->param_count)
        return cg_error_set(err, CG_USAGE, "profile '%s' declares no parameters, so '%s@%s' "
                            "means nothing", base->name, base->name, spec);
    pf_bound *b = calloc(1, sizeof *b);
    if (!b)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    b->p = p;
    for (size_t k = 0; k < p->param_count; k++)
        b->values[k] = p->params[k].dflt;
    /* "29" for a single-parameter profile, else "name=value[,name=value]" */
    const char *item = spec;
    cg_status st = CG_OK;
    while (st == CG_OK && *item) {
        const char *end = strchr(item, ',');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        const char *eq = memchr(item, '=', len);
        size_t k = 0;
        const char *num = item;
        if (eq) {
            size_t nlen = (size_t)(eq - item);
            while (k < p->param_count && !(strlen(p->params[k].name) == nlen &&
                                           memcmp(p->params[k].name, item, nlen) == 0))
                k++;
            num = eq + 1;
        } else if (p->param_count != 1) {
            k = p->param_count; /* ambiguous */
        }
        char buf[32], *stop;
        size_t vlen = (size_t)(item + len - num);
        if (k == p->param_count) {
            char names[256] = "";
            for (size_t i = 0; i < p->param_count; i++) {
                strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, p->params[i].name, sizeof names - strlen(names) - 1);
            }
            st = cg_error_set(err, CG_USAGE, "'%s@%s': '%.*s' %s (%s has: %s; write "
                              "%s@NAME=VALUE)", base->name, spec, (int)len, item,
                              eq ? "names no parameter" : "is ambiguous", base->name, names,
                              base->name);
            break;
        }
        if (vlen == 0 || vlen >= sizeof buf) {
            st = cg_error_set(err, CG_USAGE, "'%s@%s': %s needs an integer value", base->name,
                              spec, p->params[k].name);
            break;
        }
        memcpy(buf, num, vlen);
        buf[vlen] = '\0';
        errno = 0;
        long long v = strtoll(buf, &stop, 10);
        if (errno || *stop || v < p->params[k].min || v > p->params[k].max) {
            st = cg_error_set(err, CG_USAGE, "'%s@%s': %s must be an integer in [%" PRId64
                              ", %" PRId64 "], got '%s'", base->name, spec, p->params[k].name,
                              p->params[k].min, p->params[k].max, buf);
            break;
        }
        b->values[k] = v;
        b->set[k] = true;
        item = end ? end + 1 : item + len;
    }
    size_t nlen = strlen(base->name) + strlen(spec) + 2;
    char *name = st == CG_OK ? malloc(nlen) : NULL;
    if (st == CG_OK && !name)
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    if (st != CG_OK) {
        free(b);
        return st;
    }
    snprintf(name, nlen, "%s@%s", base->name, spec);
    b->target = *base;
    b->target.name = name;
    b->target.vt = &bound_vtable;
    b->target.impl = b;
    *out = &b->target;
    return CG_OK;
}

size_t cg_profile_param_count(const cg_target *t)
{
    const pf_profile *p = profile_of(t);
    return p ? p->param_count : 0;
}

bool cg_profile_param(const cg_target *t, size_t i, cg_profile_param_info *out)
{
    const pf_profile *p = profile_of(t);
    if (!p || i >= p->param_count)
        return false;
    const int64_t *v = params_of(t);
    out->name = p->params[i].name;
    out->value = v ? v[i] : p->params[i].dflt;
    out->dflt = p->params[i].dflt;
    out->min = p->params[i].min;
    out->max = p->params[i].max;
    out->note = p->params[i].note;
    out->is_default = !(t->vt == &bound_vtable && ((const pf_bound *)t->impl)->set[i]);
    return true;
}

const char *cg_profile_params_text(const cg_target *t, char *buf, size_t len)
{
    const pf_profile *p = profile_of(t);
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; p && i < p->param_count && used + 1 < len; i++) {
        cg_profile_param_info in;
        if (!cg_profile_param(t, i, &in))
            break;
        int w = snprintf(buf + used, len - used, "%s%s=%" PRId64 " (%s)", i ? ", " : "",
                         in.name, in.value, in.is_default ? "the profile's default" : "chosen");
        if (w < 0)
            break;
        used += (size_t)w < len - used ? (size_t)w : len - used - 1;
    }
    return buf;
}

/* --- accessors (src/target/registry.h) ------------------------------------------------ */

bool cg_profile_is(const cg_target *t) { return profile_of(t) != NULL; }

size_t cg_profile_source_count(const cg_target *t)
{
    const pf_profile *p = profile_of(t);
    return p ? p->source_count : 0;
}

const cg_profile_source *cg_profile_source_at(const cg_target *t, size_t i)
{
    const pf_profile *p = profile_of(t);
    if (!p || i >= p->source_count)
        return NULL;
    return &p->sources[i];
}

const char *cg_profile_path(const cg_target *t)
{
    const pf_profile *p = profile_of(t);
    return p ? p->path : NULL;
}

const char *cg_profile_runtime(const cg_target *t)
{
    const pf_profile *p = profile_of(t);
    return p ? p->runtime : NULL;
}

size_t cg_profile_op_count(const cg_target *t)
{
    const pf_profile *p = profile_of(t);
    return p ? p->op_count : 0;
}
