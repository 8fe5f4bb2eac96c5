/*
 * Capability profiles, reading: the JSON file (a regular file only) parsed
 * into the checked form of profile_form.h, field by field, every error
 * naming the file and the JSON path. profile.c evaluates that form.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "ir/walk.h"
#include "target/profile_form.h"

#define PATH_MAX_LEN 256
/* the largest bundled profile is 48 KB; one of megabytes is no profile */
#define PROFILE_MAX_BYTES (8u << 20)

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

void pf_profile_free(pf_profile *p)
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

/* obj[key] into *j (NULL when absent: an error when required); its JSON
 * path into p. */
static cg_status get_field(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                           bool required, char p[PATH_MAX_LEN], json_t **j)
{
    child(p, path, key);
    *j = json_object_get(obj, key);
    if (!*j && required)
        return perr(ps, p, "missing (required)");
    return CG_OK;
}

/* A copy of the string j (at JSON path p): non-empty, without NUL. */
static cg_status string_copy(pf_parser *ps, const json_t *j, const char *p, char **out)
{
    *out = NULL;
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

/* Copies a required (or optional when !required) string field into *out. */
static cg_status get_string(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                            bool required, char **out)
{
    char p[PATH_MAX_LEN];
    json_t *j;
    *out = NULL;
    cg_status st = get_field(ps, obj, path, key, required, p, &j);
    return st != CG_OK || !j ? st : string_copy(ps, j, p, out);
}

/* A string field that must be one of names (NULL-ended): *index is its
 * position there, -1 when absent (an error when required). */
static cg_status get_choice(pf_parser *ps, const json_t *obj, const char *path, const char *key,
                            bool required, const char *const *names, int *index)
{
    char p[PATH_MAX_LEN];
    json_t *j;
    *index = -1;
    cg_status st = get_field(ps, obj, path, key, required, p, &j);
    if (st != CG_OK || !j)
        return st;
    const char *s = json_is_string(j) ? json_string_value(j) : NULL;
    for (int i = 0; s && names[i]; i++)
        if (strcmp(s, names[i]) == 0) {
            *index = i;
            return CG_OK;
        }
    char list[200] = "";
    for (int i = 0; names[i]; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s\"%s\"",
                 i == 0 ? "" : names[i + 1] ? ", " : " or ", names[i]);
    }
    if (s)
        return perr(ps, p, "'%s' is not %s", s, list);
    return perr(ps, p, "expected %s, got %s", list, json_kind(j));
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
    json_t *j;
    *out = NULL;
    *count = 0;
    cg_status st = get_field(ps, obj, path, key, required, p, &j);
    if (st != CG_OK || !j)
        return st;
    if (!json_is_array(j))
        return perr(ps, p, "expected an array of strings, got %s", json_kind(j));
    size_t n = json_array_size(j);
    if (n == 0)
        return CG_OK;
    char **s = calloc(n, sizeof *s);
    if (!s)
        return cg_error_set(ps->err, CG_NOMEM, "out of memory reading %s", ps->file);
    for (size_t i = 0; i < n; i++) {
        char ep[PATH_MAX_LEN];
        child_index(ep, p, i);
        if ((st = string_copy(ps, json_array_get(j, i), ep, &s[i])) != CG_OK) {
            strings_free(s, i);
            return st;
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
    /* in pf_broadcast's order */
    static const char *const broadcasts[] = {"numpy", "none", "tflite_gpu", NULL};
    int bc;
    if ((st = get_choice(ps, j, path, "broadcast", false, broadcasts, &bc)) != CG_OK)
        return st;
    if (bc >= 0)
        op->broadcast = (pf_broadcast)bc;

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
    /* in pf_dtype_scope's order */
    static const char *const scopes[] = {"first_input", "runtime_tensors", "all_tensors", NULL};
    int scope;
    if ((st = get_choice(ps, j, path, "dtypes_scope", false, scopes, &scope)) != CG_OK)
        return st;
    if (scope >= 0) {
        l->dtype_scope = (pf_dtype_scope)scope;
        child(vp, path, "dtypes_scope");
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

const pf_op *pf_find_op(const pf_profile *p, const char *domain, const char *op_type)
{
    pf_op key;
    key.domain = (char *)(cg_domain_is_default(domain) ? "" : domain);
    key.op_type = (char *)op_type;
    return bsearch(&key, p->ops, p->op_count, sizeof *p->ops, op_cmp);
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
        /* device_class[k]: [0] sums in fp16, [1] in fp32 */
        static const char *const sums[] = {"fp16", "fp32", NULL};
        char *name = NULL, *source = NULL, *note = NULL;
        int k = -1;
        st = expect_object(ps, c, ep);
        if (st == CG_OK)
            st = check_keys(ps, c, ep, keys);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "name", true, &name);
        if (st == CG_OK)
            st = get_choice(ps, c, ep, "accumulate", true, sums, &k);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "source", true, &source);
        if (st == CG_OK)
            st = get_string(ps, c, ep, "note", false, &note);
        if (st == CG_OK && p->target.device_class[k])
            st = perr(ps, ep, "a second class with \"accumulate\": \"%s\"", sums[k]);
        if (st == CG_OK) {
            p->target.device_class[k] = name;
            name = NULL;
        }
        free(name);
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
    static const char *const precisions[] = {"fp32", "fp16", NULL};
    char *note = NULL, *source = NULL;
    int compute = -1, acc = -1;
    if (st == CG_OK)
        st = get_choice(ps, j, path, "compute", true, precisions, &compute);
    if (st == CG_OK)
        st = get_choice(ps, j, path, "accumulate", true, precisions, &acc);
    if (st == CG_OK)
        st = get_string(ps, j, path, "note", false, &note);
    if (st == CG_OK)
        st = get_string(ps, j, path, "source", false, &source);
    if (st == CG_OK) {
        p->target.precision = compute == 0 ? CG_PRECISION_FP32 : CG_PRECISION_FP16;
        p->target.accumulate_fp32 = acc == 0;
        if (acc == 1 && compute == 0)
            st = perr(ps, "$.precision.accumulate", "fp16 accumulation with fp32 compute");
    }
    if (st == CG_OK)
        st = parse_device_classes(ps, j, p);
    free(note);
    free(source);
    return st;
}

/* "layout" (optional, "nchw" by default) and "crossing" (optional): what the
 * target says about itself that placement and cost read (target.h). */
static cg_status parse_layout_crossing(pf_parser *ps, const json_t *root, pf_profile *p)
{
    static const char *const layouts[] = {"nchw", "nhwc", NULL}; /* cg_layout's order */
    int layout;
    cg_status st = get_choice(ps, root, "$", "layout", false, layouts, &layout);
    if (st == CG_OK && layout >= 0)
        p->target.layout = layout ? CG_LAYOUT_NHWC : CG_LAYOUT_NCHW;
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
    char *name = NULL, *version = NULL, *desc = NULL;
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
    static const char *const fallbacks[] = {"cpu", "fail", NULL};
    int fallback = -1;
    if (st == CG_OK)
        st = get_choice(ps, root, "$", "fallback", true, fallbacks, &fallback);
    if (st == CG_OK)
        p->target.fallback = fallback == 0 ? CG_FALLBACK_CPU : CG_FALLBACK_FAIL;
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

cg_status pf_profile_read(const char *path, pf_profile **out, cg_error *err)
{
    *out = NULL;
    json_error_t jerr;
    pf_parser ps = {path, err, NULL};
    pf_profile *p = NULL;
    cg_status st;
    /* a regular file only (a FIFO named as a profile must not block), read
     * whole: jansson's json_loadfd reads one byte per read(2), 171,000
     * system calls for the bundled profiles, which every gate loads */
    char *text = NULL;
    size_t size = 0;
    if ((st = cg_file_read_all(path, PROFILE_MAX_BYTES, &text, &size, err)) != CG_OK)
        return st;
    json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
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
    *out = p;
    return CG_OK;
fail:
    pf_profile_free(p);
    json_decref(root);
    return st;
}
