/*
 * Samples (convgate/samples.h): fed-value checks, samples, and the
 * input-folder layouts read one sample at a time. Every command that feeds
 * a model goes through here, so the rules exist once; the random-input
 * policy is samples_random.c, file names and output files samples_files.c.
 *
 * Invariant of a cg_sample: inputs[0..input_count) name distinct graph
 * inputs (names borrowed from the model), each value owned and checked
 * against the declared type; sources[i] says where inputs[i] came from.
 */
#include "convgate/samples.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/path.h"
#include "core/strmap.h"
#include "ir/walk.h"


#define SAMPLES_PATH_MAX 4096
#define SAMPLES_MAX_SETS 1000000

/* --- options and checks -------------------------------------------------------------- */

/* The graph's initializer names, hashed. Asked once per input, a linear
 * search made feeding a model quadratic (200 000 inputs took over a
 * minute). False when out of memory. */
static bool init_names(const cg_graph *g, cg_strmap *m)
{
    memset(m, 0, sizeof *m);
    if (!cg_strmap_reserve(m, g->initializer_count))
        return false;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name)
            cg_strmap_add(m, g->initializers[i].name, i);
    return true;
}

/* The names a sample feeds already, hashed. */
static bool fed_names(const cg_sample *s, cg_strmap *m)
{
    memset(m, 0, sizeof *m);
    if (!cg_strmap_reserve(m, s->input_count))
        return false;
    for (size_t i = 0; i < s->input_count; i++)
        cg_strmap_add(m, s->inputs[i].name, i);
    return true;
}

size_t cg_samples_fed_inputs(const cg_graph *g, const cg_value_info **out, size_t cap)
{
    size_t n = 0;
    cg_strmap inits;
    bool hashed = g && init_names(g, &inits);
    for (size_t i = 0; g && i < g->input_count; i++)
        if (g->inputs[i].name && !(hashed ? cg_strmap_has(&inits, g->inputs[i].name)
                                          : cg_graph_initializer(g, g->inputs[i].name) != NULL)) {
            if (out && n < cap)
                out[n] = &g->inputs[i];
            n++;
        }
    if (hashed)
        cg_strmap_free(&inits);
    return n;
}

/* Appends s to a ", "-separated list in buf (cut with "..." when full). */
static void list_add(char *buf, size_t cap, size_t *used, const char *s)
{
    if (*used + 4 >= cap)
        return;
    int w = snprintf(buf + *used, cap - *used, "%s%s", *used ? ", " : "", s);
    if (w < 0)
        return;
    if ((size_t)w >= cap - *used) {
        snprintf(buf + cap - 4, 4, "...");
        *used = cap - 1;
    } else {
        *used += (size_t)w;
    }
}

/* The fed inputs' names, for messages. */
static void input_list(const cg_graph *g, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; g && i < g->input_count; i++)
        if (g->inputs[i].name && !cg_graph_initializer(g, g->inputs[i].name))
            list_add(buf, cap, &used, g->inputs[i].name);
    if (!used)
        snprintf(buf, cap, "none");
}

static bool declares_symbol(const cg_graph *g, const char *sym)
{
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        if (!g->inputs[i].name || cg_graph_initializer(g, g->inputs[i].name) || !t || !t->shape)
            continue;
        for (size_t d = 0; d < t->shape->rank; d++)
            if (!t->shape->dims[d].has_value && t->shape->dims[d].param &&
                strcmp(t->shape->dims[d].param, sym) == 0)
                return true;
    }
    return false;
}

bool cg_samples_shape_key(const char *input, size_t axis, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s[%zu]", input ? input : "", axis);
    return n > 0 && (size_t)n < cap;
}

/* Splits a --shape key "NAME[axis]": the name's length and the axis. */
static bool parse_shape_key(const char *key, size_t *name_len, size_t *axis)
{
    size_t n = key ? strlen(key) : 0;
    if (n < 4 || key[n - 1] != ']')
        return false;
    const char *open = strrchr(key, '[');
    if (!open || open == key || open + 1 == key + n - 1)
        return false;
    size_t a = 0;
    for (const char *p = open + 1; p < key + n - 1; p++) {
        if (*p < '0' || *p > '9' || a > 1000000)
            return false;
        a = a * 10 + (size_t)(*p - '0');
    }
    *name_len = (size_t)(open - key);
    *axis = a;
    return true;
}

bool cg_samples_dim_bound(const cg_dim_binding *dims, size_t dim_count, const char *input,
                          size_t axis, const cg_dim *dim, int64_t *out)
{
    char key[CG_SAMPLES_STEM_CAP + 32];
    if (input && cg_samples_shape_key(input, axis, key, sizeof key))
        for (size_t k = 0; k < dim_count; k++)
            if (dims[k].symbol && strcmp(dims[k].symbol, key) == 0) {
                *out = dims[k].value;
                return true;
            }
    if (dim && !dim->has_value && dim->param && *dim->param)
        for (size_t k = 0; k < dim_count; k++)
            if (dims[k].symbol && strcmp(dims[k].symbol, dim->param) == 0) {
                *out = dims[k].value;
                return true;
            }
    return false;
}

size_t cg_samples_unsized_inputs(const cg_model *model, const cg_dim_binding *dims,
                                 size_t dim_count, char *buf, size_t cap)
{
    const cg_graph *g = model->graph;
    size_t count = 0, used = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        if (!g->inputs[i].name || cg_graph_initializer(g, g->inputs[i].name) || !t || !t->shape)
            continue;
        bool unsized = false;
        for (size_t d = 0; d < t->shape->rank && !unsized; d++) {
            const cg_dim *dim = &t->shape->dims[d];
            int64_t v;
            unsized = !dim->has_value && !(dim->param && *dim->param) &&
                      !cg_samples_dim_bound(dims, dim_count, g->inputs[i].name, d, dim, &v);
        }
        if (unsized) {
            count++;
            list_add(buf, cap, &used, g->inputs[i].name);
        }
    }
    return count;
}

const char *cg_dim_source_name(cg_dim_source s)
{
    switch (s) {
    case CG_DIM_GIVEN: return "--dim/--shape";
    case CG_DIM_FED: return "the inputs";
    case CG_DIM_BATCH_DEFAULT: return "batch default";
    case CG_DIM_DEFAULT: break;
    }
    return "default, a guess";
}

/* A leading dim whose name says it is the batch: "batch", "batch_size",
 * "N", "B", "bs" (any case); exporters name it so (torch.onnx's
 * dynamic_axes, tf2onnx's "unk__" excepted: that name says nothing). */
static bool batch_named(size_t axis, const char *param)
{
    if (axis != 0 || !param || !*param)
        return false;
    char low[64];
    size_t n = 0;
    for (; param[n] && n + 1 < sizeof low; n++)
        low[n] = (char)((param[n] >= 'A' && param[n] <= 'Z') ? param[n] - 'A' + 'a' : param[n]);
    low[n] = '\0';
    return strstr(low, "batch") || strcmp(low, "n") == 0 || strcmp(low, "b") == 0 ||
           strcmp(low, "bs") == 0;
}

size_t cg_samples_dim_uses(const cg_model *model, const cg_dim_binding *given,
                           size_t given_count, const cg_sample *fed, cg_dim_use *out, size_t cap)
{
    const cg_graph *g = model->graph;
    size_t count = 0;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_value_info *vi = &g->inputs[i];
        const cg_type *t = vi->type;
        if (!vi->name || cg_graph_initializer(g, vi->name) || !t || !t->shape)
            continue;
        const cg_value *v = NULL;
        for (size_t k = 0; fed && k < fed->input_count && !v; k++)
            if (fed->inputs[k].name && strcmp(fed->inputs[k].name, vi->name) == 0)
                v = fed->inputs[k].value;
        for (size_t d = 0; d < t->shape->rank; d++) {
            const cg_dim *dim = &t->shape->dims[d];
            if (dim->has_value && dim->value >= 0)
                continue;
            const char *sym = dim->param && *dim->param ? dim->param : NULL;
            bool seen = false;
            for (size_t k = 0; sym && k < count && k < cap && !seen; k++)
                seen = out[k].symbol && strcmp(out[k].symbol, sym) == 0;
            if (seen)
                continue;
            cg_dim_use u = {vi->name, d, sym, 1, CG_DIM_DEFAULT};
            if (cg_samples_dim_bound(given, given_count, vi->name, d, dim, &u.value))
                u.source = CG_DIM_GIVEN;
            else if (v && v->kind == CG_VALUE_TENSOR && d < (size_t)v->tensor.rank) {
                u.value = v->tensor.dims[d];
                u.source = CG_DIM_FED;
            } else if (batch_named(d, sym)) {
                u.source = CG_DIM_BATCH_DEFAULT;
            }
            if (count < cap)
                out[count] = u;
            count++;
        }
    }
    return count;
}

void cg_samples_dim_uses_text(const cg_dim_use *u, size_t n, char *buf, size_t cap)
{
    size_t used = 0;
    char item[400];
    if (cap)
        buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (u[k].symbol)
            snprintf(item, sizeof item, "%.120s=%" PRId64 " (%s)", u[k].symbol, u[k].value,
                     cg_dim_source_name(u[k].source));
        else
            snprintf(item, sizeof item, "'%.120s' axis %zu=%" PRId64 " (%s)", u[k].input,
                     u[k].axis, u[k].value, cg_dim_source_name(u[k].source));
        list_add(buf, cap, &used, item);
    }
    if (!n && cap)
        snprintf(buf, cap, "none");
}

cg_status cg_samples_refuse_guessed_dims(const cg_dim_use *u, size_t n, cg_error *err)
{
    size_t k = 0;
    while (k < n && u[k].source != CG_DIM_DEFAULT)
        k++;
    if (k == n)
        return CG_OK;
    size_t more = 0;
    for (size_t j = k + 1; j < n; j++)
        more += u[j].source == CG_DIM_DEFAULT;
    char more_text[64] = "";
    if (more)
        snprintf(more_text, sizeof more_text, " (and %zu more)", more);
    if (u[k].symbol)
        return cg_error_set(err, CG_USAGE, "input '%s' dim %zu ('%s') has no size%s: the model "
                            "gives none and nothing binds it, and shapes decide placement; give "
                            "--dim %s=N, --shape %s=DxD... or --inputs DIR, or accept 1 with "
                            "--accept-default-dims", u[k].input, u[k].axis,
                            u[k].symbol, more_text, u[k].symbol, u[k].input);
    return cg_error_set(err, CG_USAGE, "input '%s' dim %zu (unnamed) has no size%s: the model "
                        "gives none and nothing binds it, and shapes decide placement; give "
                        "--shape %s=DxD... or --inputs DIR, or accept 1 with "
                        "--accept-default-dims", u[k].input, u[k].axis, more_text,
                        u[k].input);
}

size_t cg_samples_bind_defaults(const cg_dim_use *u, size_t n, cg_dim_binding *dims,
                                size_t *count, size_t cap, char *keys, size_t key_cap,
                                size_t key_slots)
{
    size_t used = 0;
    for (size_t k = 0; k < n && *count < cap; k++) {
        if (u[k].source != CG_DIM_BATCH_DEFAULT && u[k].source != CG_DIM_DEFAULT)
            continue;
        const char *sym = u[k].symbol;
        if (!sym) {
            if (used == key_slots ||
                !cg_samples_shape_key(u[k].input, u[k].axis, keys + used * key_cap, key_cap))
                continue;
            sym = keys + used++ * key_cap;
        }
        dims[(*count)++] = (cg_dim_binding){sym, u[k].value};
    }
    return used;
}

/* A --shape binding against the model: its input exists, the shape has the
 * input's rank, fixed dims agree. */
static cg_status check_shape_key(const cg_graph *g, const cg_dim_binding *dims, size_t dim_count,
                                 const cg_dim_binding *b, size_t name_len, size_t axis,
                                 cg_error *err)
{
    const cg_value_info *vi = NULL;
    for (size_t i = 0; i < g->input_count && !vi; i++)
        if (g->inputs[i].name && strlen(g->inputs[i].name) == name_len &&
            strncmp(g->inputs[i].name, b->symbol, name_len) == 0)
            vi = &g->inputs[i];
    if (!vi) {
        char list[1024];
        input_list(g, list, sizeof list);
        return cg_error_set(err, CG_USAGE, "--shape %.*s: the model has no input of that name; "
                            "its inputs are: %s", (int)name_len, b->symbol, list);
    }
    const cg_type *t = vi->type;
    size_t given = 0;
    for (size_t k = 0; k < dim_count; k++) {
        size_t nl, ax;
        if (dims[k].symbol && parse_shape_key(dims[k].symbol, &nl, &ax) && nl == name_len &&
            strncmp(dims[k].symbol, b->symbol, nl) == 0)
            given++;
    }
    if (!t || !t->shape || t->shape->rank != given || axis >= t->shape->rank)
        return cg_error_set(err, CG_USAGE, "--shape %s: %zu dims given, but input '%s' has %s "
                            "%zu", vi->name, given, vi->name, t && t->shape ? "rank" : "no "
                            "declared shape, rank", t && t->shape ? t->shape->rank : 0);
    const cg_dim *d = &t->shape->dims[axis];
    if (d->has_value && d->value != b->value)
        return cg_error_set(err, CG_USAGE, "--shape %s: dim %zu is %" PRId64 " in the model, "
                            "not %" PRId64, vi->name, axis, d->value, b->value);
    return CG_OK;
}

void cg_sample_set_describe(const cg_sample_set *set, const char *dir, bool golden,
                            const cg_random_inputs *random, char *buf, size_t cap)
{
    const char *s = set->count == 1 ? "" : "s";
    if (!dir)
        snprintf(buf, cap, "%zu random set%s, seed %" PRIu64, set->count, s,
                 random ? random->seed : 0);
    else if (golden)
        snprintf(buf, cap, "%zu golden set%s from %s (outputs compared to the golden outputs)",
                 set->count, s, dir);
    else
        snprintf(buf, cap, "%zu set%s from %s", set->count, s, dir);
}

void cg_samples_dims_label(const cg_dim_binding *dims, size_t n, char *buf, size_t cap)
{
    size_t used = 0;
    if (!cap)
        return;
    buf[0] = '\0';
    for (size_t k = 0; k < n && used < cap; k++) {
        int w = snprintf(buf + used, cap - used, "%s%s=%" PRId64, k ? "," : "", dims[k].symbol,
                         dims[k].value);
        used = w < 0 ? cap : used + (size_t)w;
    }
    if (!n)
        snprintf(buf, cap, "(defaults)");
}

/* The model's own copy of symbolic dim `sym` (an input's dim param), or NULL. */
static const char *declared_symbol(const cg_graph *g, const char *sym)
{
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        for (size_t d = 0; t && t->shape && d < t->shape->rank; d++)
            if (t->shape->dims[d].param && strcmp(t->shape->dims[d].param, sym) == 0)
                return t->shape->dims[d].param;
    }
    return NULL;
}

cg_status cg_samples_dims_overlay(const cg_model *model, cg_dim_binding *dims, size_t *count,
                                  size_t cap, const cg_dim_binding *extra, size_t extra_count,
                                  cg_error *err)
{
    cg_status st = cg_samples_check_options(model, extra, extra_count, NULL, 0, err);
    for (size_t k = 0; k < extra_count && st == CG_OK; k++) {
        const char *own = declared_symbol(model->graph, extra[k].symbol);
        if (!own)
            return cg_error_set(err, CG_USAGE, "'%s' is not a symbolic dim of the model's "
                                "inputs: a shape setting binds named dims", extra[k].symbol);
        size_t j = 0;
        while (j < *count && strcmp(dims[j].symbol, own) != 0)
            j++;
        if (j == *count) {
            if (*count == cap)
                return cg_error_set(err, CG_LIMIT, "more than %zu dim bindings", cap);
            (*count)++;
        }
        dims[j].symbol = own;
        dims[j].value = extra[k].value;
    }
    return st;
}

cg_status cg_samples_check_options(const cg_model *model, const cg_dim_binding *dims,
                                   size_t dim_count, const cg_input_range *ranges,
                                   size_t range_count, cg_error *err)
{
    const cg_graph *g = model ? model->graph : NULL;
    char list[1024];
    if (!g)
        return cg_error_set(err, CG_USAGE, "the model has no graph");
    for (size_t k = 0; k < dim_count; k++) {
        size_t name_len, axis;
        if (declares_symbol(g, dims[k].symbol))
            continue;
        if (parse_shape_key(dims[k].symbol, &name_len, &axis)) {
            cg_status st = check_shape_key(g, dims, dim_count, &dims[k], name_len, axis, err);
            if (st != CG_OK)
                return st;
            continue;
        }
        size_t used = 0;
        list[0] = '\0';
        for (size_t i = 0; i < g->input_count; i++) {
            const cg_type *t = g->inputs[i].type;
            if (!g->inputs[i].name || cg_graph_initializer(g, g->inputs[i].name) || !t || !t->shape)
                continue;
            for (size_t d = 0; d < t->shape->rank; d++) {
                const char *sym = t->shape->dims[d].param;
                if (t->shape->dims[d].has_value || !sym || !*sym)
                    continue;
                bool seen = false;
                for (size_t j = 0; j < i && !seen; j++) {
                    const cg_type *u = g->inputs[j].type;
                    for (size_t e = 0; u && u->shape && e < u->shape->rank && !seen; e++)
                        seen = u->shape->dims[e].param &&
                               strcmp(u->shape->dims[e].param, sym) == 0;
                }
                for (size_t e = 0; e < d && !seen; e++)
                    seen = t->shape->dims[e].param && strcmp(t->shape->dims[e].param, sym) == 0;
                if (!seen)
                    list_add(list, sizeof list, &used, sym);
            }
        }
        if (!used)
            return cg_error_set(err, CG_USAGE, "--dim %s: the model's inputs have no symbolic "
                                "dims", dims[k].symbol);
        return cg_error_set(err, CG_USAGE, "--dim %s: no input has a dim of that name; the "
                            "model's symbolic dims are: %s", dims[k].symbol, list);
    }
    for (size_t k = 0; k < range_count; k++) {
        const char *name = ranges[k].input;
        bool found = false;
        for (size_t i = 0; name && i < g->input_count && !found; i++)
            found = g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0 &&
                    !cg_graph_initializer(g, name);
        if (name && !found) {
            input_list(g, list, sizeof list);
            return cg_error_set(err, CG_USAGE, "--range %s: the model has no input of that "
                                "name; its inputs are: %s", name, list);
        }
    }
    return CG_OK;
}

void cg_samples_type_text(const cg_type *t, char *buf, size_t cap)
{
    if (!t || t->kind != CG_TYPE_TENSOR) {
        snprintf(buf, cap, "%s", !t ? "untyped" : t->kind == CG_TYPE_SEQUENCE ? "sequence"
                                                 : t->kind == CG_TYPE_OPTIONAL ? "optional"
                                                                               : "non-tensor");
        return;
    }
    size_t n = (size_t)snprintf(buf, cap, "%s",
                                t->has_elem_type ? cg_dtype_name((cg_dtype)t->elem_type) : "?");
    if (!t->shape || n >= cap)
        return;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (size_t d = 0; d < t->shape->rank && n < cap; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value)
            n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", dim->value);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", d ? "," : "",
                                  dim->param ? dim->param : "?");
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

cg_status cg_samples_check_input(const cg_value_info *vi, const cg_value *v, const char *source,
                                 cg_error *err)
{
    const cg_type *t = vi->type;
    char want[256];
    if (!t)
        return CG_OK;
    cg_samples_type_text(t, want, sizeof want);
    if (t->kind == CG_TYPE_TENSOR) {
        if (v->kind != CG_VALUE_TENSOR)
            return cg_error_set(err, CG_USAGE, "input '%s': %s holds a sequence or optional, "
                                "the model expects %s", vi->name, source, want);
        const cg_tensor *x = &v->tensor;
        if (t->has_elem_type && (int)x->dtype != t->elem_type)
            return cg_error_set(err, CG_USAGE, "input '%s': %s holds %s, the model expects %s "
                                "(dtype mismatch)", vi->name, source, cg_dtype_name(x->dtype),
                                want);
        if (!t->shape)
            return CG_OK;
        bool ok = (size_t)x->rank == t->shape->rank;
        for (size_t d = 0; ok && d < t->shape->rank; d++)
            ok = !t->shape->dims[d].has_value || t->shape->dims[d].value == x->dims[d];
        if (!ok) {
            char got[256];
            size_t n = (size_t)snprintf(got, sizeof got, "[");
            for (int d = 0; d < x->rank && n < sizeof got; d++)
                n += (size_t)snprintf(got + n, sizeof got - n, "%s%" PRId64, d ? "," : "",
                                      x->dims[d]);
            if (n < sizeof got)
                snprintf(got + n, sizeof got - n, "]");
            return cg_error_set(err, CG_USAGE, "input '%s': %s has shape %s, the model expects "
                                "%s (shape mismatch)", vi->name, source, got, want);
        }
    } else if (t->kind == CG_TYPE_SEQUENCE && v->kind != CG_VALUE_SEQUENCE) {
        return cg_error_set(err, CG_USAGE, "input '%s': %s is not a sequence; the model expects "
                            "a sequence (give a SequenceProto .pb)", vi->name, source);
    } else if (t->kind == CG_TYPE_OPTIONAL && v->kind != CG_VALUE_OPTIONAL) {
        return cg_error_set(err, CG_USAGE, "input '%s': %s is not an optional; the model "
                            "expects an optional (give an OptionalProto .pb)", vi->name, source);
    }
    return CG_OK;
}

/* --- samples ----------------------------------------------------------------------------- */

void cg_sample_clear(cg_sample *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->input_count; i++) {
        cg_value_free(s->inputs[i].value);
        free(s->sources ? s->sources[i] : NULL);
    }
    for (size_t i = 0; i < s->expected_count; i++)
        cg_value_free(s->expected[i].value);
    free(s->inputs);
    free(s->sources);
    free(s->expected);
    free(s->expected_floors);
    for (size_t i = 0; i < s->unnamed_count; i++)
        free((char *)s->unnamed[i].symbol);
    free(s->unnamed);
    free(s->label);
    memset(s, 0, sizeof *s);
}

void cg_sample_set_free(cg_sample_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        cg_sample_clear(&s->samples[i]);
    free(s->samples);
    memset(s, 0, sizeof *s);
}

cg_status cg_sample_init(cg_sample *s, const cg_model *model, const char *label, cg_error *err)
{
    size_t n = model && model->graph ? model->graph->input_count : 0;
    memset(s, 0, sizeof *s);
    s->label = strdup(label ? label : "");
    s->inputs = calloc(n ? n : 1, sizeof *s->inputs);
    s->sources = calloc(n ? n : 1, sizeof *s->sources);
    if (!s->label || !s->inputs || !s->sources) {
        cg_sample_clear(s);
        return cg_error_set(err, CG_NOMEM, "out of memory making a sample");
    }
    return CG_OK;
}

static const cg_value_info *find_input(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0)
            return &g->inputs[i];
    return NULL;
}

/* The sizes a fed tensor gives the input's unnamed dims, kept as --shape
 * bindings. */
static cg_status note_unnamed(cg_sample *s, const cg_value_info *vi, const cg_value *v,
                              cg_error *err)
{
    const cg_type *t = vi->type;
    if (!t || !t->shape || v->kind != CG_VALUE_TENSOR || (size_t)v->tensor.rank != t->shape->rank)
        return CG_OK;
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        char key[CG_SAMPLES_STEM_CAP + 32];
        if (dim->has_value || (dim->param && dim->param[0]))
            continue;
        cg_dim_binding *b = realloc(s->unnamed, (s->unnamed_count + 1) * sizeof *b);
        if (!b)
            return cg_error_set(err, CG_NOMEM, "out of memory");
        s->unnamed = b;
        if (!cg_samples_shape_key(vi->name, d, key, sizeof key))
            continue;
        if (!(b[s->unnamed_count].symbol = strdup(key)))
            return cg_error_set(err, CG_NOMEM, "out of memory");
        b[s->unnamed_count++].value = v->tensor.dims[d];
    }
    return CG_OK;
}

static cg_status sample_append(cg_sample *s, const cg_graph *g, const cg_value_info *vi,
                               cg_value *v, const char *source, cg_error *err);

cg_status cg_sample_feed(cg_sample *s, const cg_model *model, const char *name, cg_value *v,
                         const char *source, cg_error *err)
{
    const cg_graph *g = model->graph;
    const cg_value_info *vi = find_input(g, name);
    cg_status st = CG_OK;
    char names[512];
    if (!vi || cg_graph_initializer(g, name)) {
        input_list(g, names, sizeof names);
        st = cg_error_set(err, CG_USAGE, "unknown input '%s' (from %s); the model's inputs "
                          "are: %s", name, source, names);
        goto fail;
    }
    for (size_t i = 0; i < s->input_count; i++)
        if (strcmp(s->inputs[i].name, name) == 0) {
            st = cg_error_set(err, CG_USAGE, "input '%s' is fed twice (%s and %s)", name,
                              s->sources[i], source);
            goto fail;
        }
    if (!v) {
        st = cg_error_set(err, CG_USAGE, "input '%s': no value from %s", name, source);
        goto fail;
    }
    return sample_append(s, g, vi, v, source, err);
fail:
    cg_value_free(v);
    return st;
}

/* Appends v (owned) for graph input vi, which the caller knows is a fed,
 * not yet fed input of g: checked against its declared type. */
static cg_status sample_append(cg_sample *s, const cg_graph *g, const cg_value_info *vi,
                               cg_value *v, const char *source, cg_error *err)
{
    cg_status st;
    if ((st = cg_samples_check_input(vi, v, source, err)) != CG_OK)
        goto fail;
    if (s->input_count >= g->input_count) {
        st = cg_error_set(err, CG_USAGE, "more values than the model has inputs");
        goto fail;
    }
    char *src = strdup(source);
    if (!src || (st = note_unnamed(s, vi, v, err)) != CG_OK) {
        free(src);
        st = st != CG_OK ? st : cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    s->inputs[s->input_count].name = vi->name;
    s->inputs[s->input_count].value = v;
    s->sources[s->input_count++] = src;
    return CG_OK;
fail:
    cg_value_free(v);
    return st;
}

/* "@FILE.npz": every array to the input of its name. */
static cg_status feed_npz(cg_sample *s, const cg_model *model, const char *path,
                          size_t max_bytes, cg_error *err)
{
    cg_npz *npz = NULL;
    cg_status st = cg_npz_open(path, max_bytes, &npz, err);
    for (size_t k = 0; st == CG_OK && k < cg_npz_count(npz); k++) {
        const char *key = cg_npz_key(npz, k);
        char source[SAMPLES_PATH_MAX + 256];
        cg_tensor t;
        cg_value *v = NULL;
        memset(&t, 0, sizeof t);
        snprintf(source, sizeof source, "%s:%s", path, key);
        if ((st = cg_npz_load(npz, key, &t, err)) == CG_OK &&
            (st = cg_value_from_tensor(&t, &v, err)) != CG_OK)
            cg_tensor_release(&t);
        if (st == CG_OK)
            st = cg_sample_feed(s, model, key, v, source, err);
    }
    cg_npz_free(npz);
    return st;
}

cg_status cg_sample_feed_spec(cg_sample *s, const cg_model *model, const char *spec,
                              size_t max_bytes, cg_error *err)
{
    if (spec[0] == '@')
        return feed_npz(s, model, spec + 1, max_bytes, err);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
        return cg_error_set(err, CG_USAGE, "-i expects NAME=FILE or @FILE.npz, got '%s'", spec);
    char *name = strndup(spec, (size_t)(eq - spec));
    if (!name)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    const cg_value_info *vi = find_input(model->graph, name);
    cg_value *v = NULL;
    cg_status st = CG_OK;
    /* an unknown name is reported by cg_sample_feed, listing the inputs */
    if (vi && (st = cg_io_load_value(eq + 1, vi->type, max_bytes, &v, err)) != CG_OK)
        cg_error_prefix(err, "input '%s': ", name);
    if (st == CG_OK)
        st = cg_sample_feed(s, model, name, v, eq + 1, err);
    free(name);
    return st;
}

/* The tensor of a fed input (NULL when not fed or not a tensor). */
static const cg_tensor *fed_tensor(const cg_sample *s, const char *name)
{
    for (size_t i = 0; i < s->input_count; i++)
        if (strcmp(s->inputs[i].name, name) == 0)
            return s->inputs[i].value && s->inputs[i].value->kind == CG_VALUE_TENSOR
                       ? &s->inputs[i].value->tensor
                       : NULL;
    return NULL;
}

/* A symbol's size: --dim's, else a fed tensor's (a contradiction between
 * the two, or between two fed tensors, is an error), else 1. */
static cg_status symbol_size(const cg_sample *s, const cg_model *model,
                             const cg_dim_binding *dims, size_t dim_count, const char *sym,
                             int64_t *out, cg_error *err)
{
    const cg_graph *g = model->graph;
    bool bound = false;
    const char *from = NULL;
    *out = 1;
    for (size_t k = 0; k < dim_count; k++)
        if (strcmp(dims[k].symbol, sym) == 0) {
            *out = dims[k].value;
            bound = true;
            from = "--dim";
        }
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        const cg_tensor *x = g->inputs[i].name ? fed_tensor(s, g->inputs[i].name) : NULL;
        if (!x || !t || !t->shape || (size_t)x->rank != t->shape->rank)
            continue;
        for (size_t d = 0; d < t->shape->rank; d++) {
            const char *p = t->shape->dims[d].param;
            if (t->shape->dims[d].has_value || !p || strcmp(p, sym) != 0)
                continue;
            if (bound && x->dims[d] != *out)
                return cg_error_set(err, CG_USAGE, "input '%s' gives %s = %" PRId64 ", but %s = "
                                    "%" PRId64 " already (from %s)", g->inputs[i].name, sym,
                                    x->dims[d], sym, *out, from);
            *out = x->dims[d];
            bound = true;
            from = g->inputs[i].name;
        }
    }
    return CG_OK;
}

/* A random value for input vi (index k among the fed inputs). */
static cg_status random_value(const cg_sample *s, const cg_model *model,
                              const cg_value_info *vi, size_t k, const cg_random_inputs *p,
                              size_t index, const cg_dim_binding *dims, size_t dim_count,
                              size_t max_bytes, cg_value **out, cg_error *err)
{
    const cg_type *t = vi->type;
    char want[256];
    int64_t shape[CG_MAX_RANK];
    cg_tensor tensor;
    cg_rng rng;
    cg_status st;
    memset(&tensor, 0, sizeof tensor);
    cg_samples_type_text(t, want, sizeof want);
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type)
        return cg_error_set(err, CG_USAGE, "input '%s' (%s): random inputs are tensors only; "
                            "give its values in a file", vi->name, want);
    if (!t->shape)
        return cg_error_set(err, CG_USAGE, "input '%s' (%s) declares no shape; give its values "
                            "in a file", vi->name, want);
    if (t->shape->rank > CG_MAX_RANK)
        return cg_error_set(err, CG_USAGE, "input '%s' has rank %zu, above the maximum %d",
                            vi->name, t->shape->rank, CG_MAX_RANK);
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value) {
            if (dim->value < 0)
                return cg_error_set(err, CG_USAGE, "input '%s' dimension %zu is negative (%"
                                    PRId64 ")", vi->name, d, dim->value);
            shape[d] = dim->value;
        } else if (cg_samples_dim_bound(dims, dim_count, vi->name, d, NULL, &shape[d])) {
            /* --shape NAME=DxD... */
        } else if (dim->param && *dim->param) {
            if ((st = symbol_size(s, model, dims, dim_count, dim->param, &shape[d], err)) !=
                CG_OK)
                return st;
        } else {
            shape[d] = 1;
        }
    }
    cg_random_seed(p, index, k, &rng);
    st = cg_tensor_alloc(&tensor, (cg_dtype)t->elem_type, (int)t->shape->rank, shape, max_bytes,
                         err);
    if (st == CG_OK)
        st = cg_random_fill(&tensor, cg_random_range(p, vi->name), &rng, err);
    if (st == CG_OK)
        st = cg_value_from_tensor(&tensor, out, err);
    if (st != CG_OK) {
        cg_tensor_release(&tensor);
        cg_error_prefix(err, "input '%s': ", vi->name);
    }
    return st;
}

cg_status cg_sample_fill_random(cg_sample *s, const cg_model *model, const cg_random_inputs *p,
                                size_t index, const cg_dim_binding *dims, size_t dim_count,
                                size_t max_bytes, cg_error *err)
{
    const cg_graph *g = model->graph;
    size_t k = 0;
    /* every fed size must agree with --dim and the other fed inputs */
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        int64_t v;
        for (size_t d = 0; t && t->shape && d < t->shape->rank; d++) {
            const char *sym = t->shape->dims[d].param;
            cg_status st;
            if (!t->shape->dims[d].has_value && sym && *sym &&
                (st = symbol_size(s, model, dims, dim_count, sym, &v, err)) != CG_OK)
                return st;
        }
    }
    cg_strmap inits, fed;
    if (!init_names(g, &inits))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    if (!fed_names(s, &fed)) {
        cg_strmap_free(&inits);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    cg_status st = CG_OK;
    for (size_t i = 0; i < g->input_count && st == CG_OK; i++) {
        const cg_value_info *vi = &g->inputs[i];
        cg_value *v = NULL;
        if (!vi->name || cg_strmap_has(&inits, vi->name))
            continue;
        if (cg_strmap_has(&fed, vi->name)) {
            k++;
            continue;
        }
        if ((st = random_value(s, model, vi, k++, p, index, dims, dim_count, max_bytes, &v,
                               err)) == CG_OK)
            st = sample_append(s, g, vi, v, "random", err);
    }
    cg_strmap_free(&inits);
    cg_strmap_free(&fed);
    return st;
}

void cg_samples_cast_free(cg_named_value *v, bool *owned, size_t n)
{
    for (size_t i = 0; v && owned && i < n; i++)
        if (owned[i])
            cg_value_free(v[i].value);
    free(v);
    free(owned);
}

cg_status cg_samples_cast_inputs(const cg_model *model, const cg_named_value *in, size_t n,
                                 cg_named_value **out, bool **owned, cg_error *err)
{
    *out = calloc(n + 1, sizeof **out);
    *owned = calloc(n + 1, sizeof **owned);
    if (!*out || !*owned) {
        cg_samples_cast_free(*out, *owned, 0);
        *out = NULL;
        *owned = NULL;
        return cg_error_set(err, CG_NOMEM, "out of memory casting the inputs");
    }
    for (size_t i = 0; i < n; i++) {
        (*out)[i] = in[i];
        const cg_value_info *vi = in[i].name ? find_input(model->graph, in[i].name) : NULL;
        const cg_value *v = in[i].value;
        if (!vi || !vi->type || vi->type->kind != CG_TYPE_TENSOR || !vi->type->has_elem_type ||
            !v || v->kind != CG_VALUE_TENSOR)
            continue;
        cg_dtype want = (cg_dtype)vi->type->elem_type;
        if (want == v->tensor.dtype || !cg_dtype_is_float(want) ||
            !cg_dtype_is_float(v->tensor.dtype))
            continue;
        cg_tensor t;
        cg_value *c = NULL;
        cg_status st = cg_tensor_convert(&v->tensor, want, &t, err);
        if (st == CG_OK && (st = cg_value_from_tensor(&t, &c, err)) != CG_OK)
            cg_tensor_release(&t);
        if (st != CG_OK) {
            cg_error_prefix(err, "input '%s' cast to %s: ", in[i].name, cg_dtype_name(want));
            cg_samples_cast_free(*out, *owned, n);
            *out = NULL;
            *owned = NULL;
            return st;
        }
        (*out)[i].value = c;
        (*owned)[i] = true;
    }
    return CG_OK;
}

cg_status cg_sample_check_complete(const cg_sample *s, const cg_model *model, cg_error *err)
{
    const cg_graph *g = model->graph;
    cg_strmap inits = {0}, fed = {0};
    cg_status st = CG_OK;
    if (!init_names(g, &inits) || !fed_names(s, &fed))
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < g->input_count && st == CG_OK; i++) {
        const cg_value_info *vi = &g->inputs[i];
        if (!vi->name || cg_strmap_has(&inits, vi->name) || cg_strmap_has(&fed, vi->name))
            continue;
        char want[256];
        cg_samples_type_text(vi->type, want, sizeof want);
        st = cg_error_set(err, CG_USAGE, "no value for input '%s' (%s)", vi->name, want);
    }
    cg_strmap_free(&inits);
    cg_strmap_free(&fed);
    return st;
}

size_t cg_sample_dims(const cg_model *model, const cg_dim_binding *base, size_t base_count,
                      const cg_sample *s, cg_dim_binding *out, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < base_count && n < cap; k++)
        out[n++] = base[k];
    for (size_t i = 0; i < s->input_count; i++) {
        const cg_value_info *vi = find_input(model->graph, s->inputs[i].name);
        const cg_value *v = s->inputs[i].value;
        if (!vi || !vi->type || !vi->type->shape || !v || v->kind != CG_VALUE_TENSOR ||
            (size_t)v->tensor.rank != vi->type->shape->rank)
            continue;
        for (size_t d = 0; d < vi->type->shape->rank; d++) {
            const cg_dim *dim = &vi->type->shape->dims[d];
            size_t k = 0;
            if (dim->has_value || !dim->param || !dim->param[0])
                continue;
            while (k < n && strcmp(out[k].symbol, dim->param) != 0)
                k++;
            if (k == n && n == cap)
                continue;
            out[k].symbol = dim->param;
            out[k].value = v->tensor.dims[d];
            if (k == n)
                n++;
        }
    }
    for (size_t i = 0; i < s->unnamed_count; i++) {
        size_t k = 0;
        while (k < n && strcmp(out[k].symbol, s->unnamed[i].symbol) != 0)
            k++;
        if (k == n && n == cap)
            continue;
        out[k] = s->unnamed[i];
        if (k == n)
            n++;
    }
    return n;
}

/* --- files --------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Loads one value from path (decoded with the declared type). */
static cg_status load_file(const char *path, const cg_type *type, size_t max_bytes,
                           cg_value **out, cg_error *err)
{
    return cg_io_load_value(path, type, max_bytes, out, err);
}

/* Loads folder/STEM.npy, folder/STEM.pb or folder/ALT.pb (alt may be NULL);
 * *found false (nothing loaded) when none exists. */
static cg_status load_stem(const char *folder, const char *stem, const char *alt,
                           const cg_type *type, size_t max_bytes, cg_value **out, char *path,
                           bool *found, cg_error *err)
{
    const char *stems[3] = {stem, stem, alt};
    const char *exts[3] = {".npy", ".pb", ".pb"};
    *found = false;
    for (int i = 0; i < 3; i++) {
        if (!stems[i])
            continue;
        int n = snprintf(path, SAMPLES_PATH_MAX, "%s/%s%s", folder, stems[i], exts[i]);
        if (n < 0 || n >= SAMPLES_PATH_MAX)
            return cg_error_set(err, CG_LIMIT, "path too long: %s/%s", folder, stems[i]);
        if (!cg_path_is_file(path))
            continue;
        *found = true;
        return load_file(path, type, max_bytes, out, err);
    }
    return CG_OK;
}

/* --- sources ------------------------------------------------------------------------------ */

struct cg_sample_source {
    const cg_model *model;
    cg_samples_layout layout;
    char *dir;
    char **names;        /* sample names */
    bool *npz;           /* CG_SAMPLES_SETS: the set is DIR/NAME.npz */
    size_t count;
    size_t max_bytes;
    const cg_value_info **need; /* inputs to feed */
    size_t need_count;
    char **in_stems, **out_stems;
    const char **out_names;
    size_t out_count;
    cg_random_inputs policy;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_sample_set *set; /* CG_SAMPLES_MEMORY (borrowed) */
};

void cg_sample_source_free(cg_sample_source *src)
{
    if (!src)
        return;
    free(src->dir);
    cg_samples_stems_free(src->names, src->count);
    free(src->npz);
    free(src->need);
    cg_samples_stems_free(src->in_stems, src->need_count);
    cg_samples_stems_free(src->out_stems, src->out_count);
    free(src->out_names);
    free(src);
}

size_t cg_sample_source_count(const cg_sample_source *src) { return src->count; }
cg_samples_layout cg_sample_source_layout(const cg_sample_source *src) { return src->layout; }
const char *cg_sample_source_name(const cg_sample_source *src, size_t i)
{
    return i < src->count ? src->names[i] : NULL;
}

/* The parts every source has: inputs to feed, input and output stems. */
static cg_status source_new(const cg_model *model, size_t max_bytes, cg_sample_source **out,
                            cg_error *err)
{
    const cg_graph *g = model && model->graph ? model->graph : NULL;
    cg_status st;
    *out = NULL;
    if (!g)
        return cg_error_set(err, CG_USAGE, "samples: the model has no graph");
    cg_sample_source *src = calloc(1, sizeof *src);
    if (!src)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    src->model = model;
    src->max_bytes = max_bytes;
    src->need_count = cg_samples_fed_inputs(g, NULL, 0);
    src->need = calloc(src->need_count + 1, sizeof *src->need);
    const char **in_names = calloc(src->need_count + 1, sizeof *in_names);
    src->out_count = g->output_count;
    src->out_names = calloc(src->out_count + 1, sizeof *src->out_names);
    if (!src->need || !in_names || !src->out_names) {
        free(in_names);
        cg_sample_source_free(src);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    cg_samples_fed_inputs(g, src->need, src->need_count);
    for (size_t k = 0; k < src->need_count; k++)
        in_names[k] = src->need[k]->name;
    for (size_t k = 0; k < src->out_count; k++)
        src->out_names[k] = g->outputs[k].name ? g->outputs[k].name : "";
    st = cg_samples_stems(in_names, src->need_count, &src->in_stems, err);
    free(in_names);
    if (st == CG_OK)
        st = cg_samples_stems(src->out_names, src->out_count, &src->out_stems, err);
    if (st != CG_OK) {
        cg_sample_source_free(src);
        return st;
    }
    *out = src;
    return CG_OK;
}

static cg_status add_name(cg_sample_source *src, size_t *cap, const char *name, size_t len,
                          bool npz, cg_error *err)
{
    if (src->count == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **names = realloc(src->names, nc * sizeof *names);
        if (names)
            src->names = names;
        bool *flags = names ? realloc(src->npz, nc * sizeof *flags) : NULL;
        if (!names || !flags)
            return cg_error_set(err, CG_NOMEM, "out of memory listing samples");
        src->npz = flags;
        *cap = nc;
    }
    if (!(src->names[src->count] = strndup(name, len)))
        return cg_error_set(err, CG_NOMEM, "out of memory listing samples");
    src->npz[src->count++] = npz;
    return CG_OK;
}

/* N of "STEM_N.npy" / "STEM_N.pb" (false when the file is not of that form). */
static bool numbered(const char *file, const char *stem, unsigned long *n)
{
    size_t len = strlen(stem);
    if (strncmp(file, stem, len) != 0 || file[len] != '_')
        return false;
    const char *num = file + len + 1, *p = num;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == num || p - num > 9 || (strcmp(p, ".npy") != 0 && strcmp(p, ".pb") != 0))
        return false;
    *n = strtoul(num, NULL, 10);
    return true;
}

static int cmp_number(const void *a, const void *b)
{
    unsigned long x = strtoul(*(char *const *)a, NULL, 10), y = strtoul(*(char *const *)b, NULL, 10);
    return (x > y) - (x < y);
}

cg_status cg_sample_source_open_dir(const cg_model *model, const char *dir, size_t max_bytes,
                                    cg_sample_source **out, cg_error *err)
{
    cg_sample_source *src = NULL;
    char **entries = NULL;
    size_t entry_count = 0, cap = 0;
    char path[SAMPLES_PATH_MAX];
    cg_status st;
    *out = NULL;
    if (!dir || !*dir)
        return cg_error_set(err, CG_USAGE, "no input folder given");
    if ((st = source_new(model, max_bytes, &src, err)) != CG_OK)
        return st;
    if (!(src->dir = strdup(dir))) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = cg_path_list(dir, NULL, &entries, &entry_count, err)) != CG_OK)
        goto fail;

    /* sets: sub-folders and .npz files */
    for (size_t i = 0; i < entry_count; i++) {
        int n = snprintf(path, sizeof path, "%s/%s", dir, entries[i]);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        bool npz = ends_with(entries[i], ".npz") && cg_path_is_file(path);
        if (!npz && !cg_path_is_dir(path))
            continue;
        if ((st = add_name(src, &cap, entries[i], strlen(entries[i]) - (npz ? 4 : 0), npz,
                           err)) != CG_OK)
            goto fail;
    }
    if (src->count) {
        src->layout = CG_SAMPLES_SETS;
        /* sorted by set name; a set both a folder and an .npz is ambiguous */
        for (size_t i = 1; i < src->count; i++)
            for (size_t j = i; j > 0 && strcmp(src->names[j - 1], src->names[j]) > 0; j--) {
                char *t = src->names[j];
                bool f = src->npz[j];
                src->names[j] = src->names[j - 1];
                src->npz[j] = src->npz[j - 1];
                src->names[j - 1] = t;
                src->npz[j - 1] = f;
            }
        for (size_t i = 1; i < src->count; i++)
            if (strcmp(src->names[i - 1], src->names[i]) == 0) {
                st = cg_error_set(err, CG_USAGE, "set '%s' in '%s' is both a folder and an "
                                  ".npz", src->names[i], dir);
                goto fail;
            }
        goto done;
    }

    /* numbered: STEM_N files of the first input */
    if (src->need_count) {
        for (size_t i = 0; i < entry_count; i++) {
            unsigned long n;
            char num[16];
            bool dup = false;
            if (!numbered(entries[i], src->in_stems[0], &n))
                continue;
            snprintf(num, sizeof num, "%lu", n);
            for (size_t k = 0; k < src->count && !dup; k++)
                dup = strcmp(src->names[k], num) == 0;
            if (!dup && (st = add_name(src, &cap, num, strlen(num), false, err)) != CG_OK)
                goto fail;
        }
        if (src->count) {
            src->layout = CG_SAMPLES_NUMBERED;
            qsort(src->names, src->count, sizeof *src->names, cmp_number);
            goto done;
        }
    }

    /* flat: one sample, named after the folder */
    {
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/')
            len--;
        size_t start = len;
        while (start > 0 && dir[start - 1] != '/')
            start--;
        src->layout = CG_SAMPLES_FLAT;
        if ((st = add_name(src, &cap, dir + start, len - start ? len - start : len, false,
                           err)) != CG_OK)
            goto fail;
    }
done:
    cg_path_names_free(entries, entry_count);
    *out = src;
    return CG_OK;
fail:
    cg_path_names_free(entries, entry_count);
    cg_sample_source_free(src);
    return st;
}

cg_status cg_sample_source_open_set(const cg_model *model, const cg_sample_set *set,
                                    cg_sample_source **out, cg_error *err)
{
    cg_sample_source *src = NULL;
    size_t cap = 0;
    cg_status st;
    *out = NULL;
    if (!set || !set->count)
        return cg_error_set(err, CG_USAGE, "samples: an empty set");
    if ((st = source_new(model, 0, &src, err)) != CG_OK)
        return st;
    src->layout = CG_SAMPLES_MEMORY;
    src->set = set;
    for (size_t i = 0; i < set->count; i++) {
        const char *name = set->samples[i].label ? set->samples[i].label : "";
        if ((st = add_name(src, &cap, name, strlen(name), false, err)) != CG_OK) {
            cg_sample_source_free(src);
            return st;
        }
    }
    *out = src;
    return CG_OK;
}

cg_status cg_sample_source_open_random(const cg_model *model, size_t count,
                                       const cg_random_inputs *p, const cg_dim_binding *dims,
                                       size_t dim_count, size_t max_bytes,
                                       cg_sample_source **out, cg_error *err)
{
    cg_sample_source *src = NULL;
    size_t cap = 0;
    cg_status st;
    *out = NULL;
    if (count == 0 || count > SAMPLES_MAX_SETS)
        return cg_error_set(err, CG_USAGE, "random samples: give a count from 1 to %d",
                            SAMPLES_MAX_SETS);
    if ((st = source_new(model, max_bytes, &src, err)) != CG_OK)
        return st;
    src->layout = CG_SAMPLES_RANDOM;
    if (p)
        src->policy = *p;
    src->dims = dims;
    src->dim_count = dim_count;
    for (size_t i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "random-%zu", i);
        if ((st = add_name(src, &cap, name, strlen(name), false, err)) != CG_OK) {
            cg_sample_source_free(src);
            return st;
        }
    }
    *out = src;
    return CG_OK;
}

cg_status cg_sample_source_find(const cg_sample_source *src, const char *which, size_t *index,
                                cg_error *err)
{
    char *end;
    if (!which) {
        if (src->count == 1) {
            *index = 0;
            return CG_OK;
        }
        return cg_error_set(err, CG_USAGE, "%s holds %zu samples: pick one with --sample N or "
                            "NAME", src->dir ? src->dir : "the source", src->count);
    }
    for (size_t i = 0; i < src->count; i++)
        if (strcmp(src->names[i], which) == 0) {
            *index = i;
            return CG_OK;
        }
    unsigned long long n = strtoull(which, &end, 10);
    if (*which >= '0' && *which <= '9' && !*end && n < src->count) {
        *index = (size_t)n;
        return CG_OK;
    }
    return cg_error_set(err, CG_USAGE, "%s holds no sample '%s' (%zu samples: names or 0..%zu)",
                        src->dir ? src->dir : "the source", which, src->count,
                        src->count ? src->count - 1 : 0);
}

/* Is file (in a set folder) one of the model's inputs or outputs? */
static bool known_file(const cg_sample_source *src, const char *file)
{
    size_t len = strlen(file);
    if (ends_with(file, ".npy"))
        len -= 4;
    else if (ends_with(file, ".pb"))
        len -= 3;
    else
        return true; /* not a tensor file: not ours to judge */
    for (size_t k = 0; k < src->need_count; k++)
        if (strlen(src->in_stems[k]) == len && strncmp(src->in_stems[k], file, len) == 0)
            return true;
    for (size_t k = 0; k < src->out_count; k++)
        if (strlen(src->out_stems[k]) == len && strncmp(src->out_stems[k], file, len) == 0)
            return true;
    unsigned long n;
    char *end;
    if (ends_with(file, ".pb") && (strncmp(file, "input_", 6) == 0 ||
                                   strncmp(file, "output_", 7) == 0)) {
        bool in = file[0] == 'i';
        n = strtoul(file + (in ? 6 : 7), &end, 10);
        if (end != file + (in ? 6 : 7) && strcmp(end, ".pb") == 0)
            return n < (in ? src->need_count : src->out_count);
    }
    return false;
}

/* Every input of set folder `folder`. */
static cg_status load_set_folder(cg_sample_source *src, const char *folder, cg_sample *s,
                                 cg_error *err)
{
    char path[SAMPLES_PATH_MAX];
    cg_status st;
    for (size_t k = 0; k < src->need_count; k++) {
        const cg_value_info *vi = src->need[k];
        char alt[32];
        cg_value *v = NULL;
        bool found;
        snprintf(alt, sizeof alt, "input_%zu", k);
        if ((st = load_stem(folder, src->in_stems[k], alt, vi->type, src->max_bytes, &v, path,
                            &found, err)) != CG_OK) {
            cg_error_prefix(err, "input '%s': ", vi->name);
            return st;
        }
        if (!found)
            return cg_error_set(err, CG_USAGE, "sample '%s': no file for input '%s' (looked "
                                "for %s/%s.npy, %s.pb, %s.pb)", s->label, vi->name, folder,
                                src->in_stems[k], src->in_stems[k], alt);
        if ((st = cg_sample_feed(s, src->model, vi->name, v, path, err)) != CG_OK)
            return st;
    }
    /* every tensor file there must be an input's or an output's: a typo must
     * not leave a file silently unused */
    char **files = NULL;
    size_t count = 0;
    if ((st = cg_path_list(folder, NULL, &files, &count, err)) != CG_OK)
        return st;
    for (size_t i = 0; i < count && st == CG_OK; i++) {
        int n = snprintf(path, sizeof path, "%s/%s", folder, files[i]);
        if (n > 0 && (size_t)n < sizeof path && cg_path_is_file(path) && !known_file(src, files[i]))
            st = cg_error_set(err, CG_USAGE, "sample '%s': '%s' matches no input or output of "
                              "the model (file names are tensor names with characters outside "
                              "[A-Za-z0-9._-] as '_')", s->label, path);
    }
    cg_path_names_free(files, count);
    return st;
}

/* Every input of set file `path` (.npz keyed by name). */
static cg_status load_set_npz(cg_sample_source *src, const char *path, cg_sample *s,
                              cg_error *err)
{
    cg_npz *npz = NULL;
    cg_status st = cg_npz_open(path, src->max_bytes, &npz, err);
    char source[SAMPLES_PATH_MAX + 256];
    for (size_t k = 0; st == CG_OK && k < src->need_count; k++) {
        cg_tensor t;
        cg_value *v = NULL;
        memset(&t, 0, sizeof t);
        if ((st = cg_npz_load(npz, src->need[k]->name, &t, err)) != CG_OK) {
            cg_error_prefix(err, "sample '%s': ", s->label);
            break;
        }
        if ((st = cg_value_from_tensor(&t, &v, err)) != CG_OK) {
            cg_tensor_release(&t);
            break;
        }
        snprintf(source, sizeof source, "%s:%s", path, src->need[k]->name);
        st = cg_sample_feed(s, src->model, src->need[k]->name, v, source, err);
    }
    for (size_t m = 0; st == CG_OK && m < cg_npz_count(npz); m++) {
        const char *key = cg_npz_key(npz, m);
        bool known = false;
        for (size_t k = 0; k < src->need_count && !known; k++)
            known = strcmp(src->need[k]->name, key) == 0;
        for (size_t k = 0; k < src->out_count && !known; k++)
            known = strcmp(src->out_names[k], key) == 0;
        if (!known)
            st = cg_error_set(err, CG_USAGE, "sample '%s': member '%s' of '%s' matches no "
                              "input or output of the model", s->label, key, path);
    }
    cg_npz_free(npz);
    return st;
}

cg_status cg_sample_source_load(cg_sample_source *src, size_t i, cg_sample *out, cg_error *err)
{
    char path[SAMPLES_PATH_MAX], stem[CG_SAMPLES_STEM_CAP + 16];
    cg_status st;
    if (i >= src->count)
        return cg_error_set(err, CG_USAGE, "sample %zu of %zu", i, src->count);
    if ((st = cg_sample_init(out, src->model, src->names[i], err)) != CG_OK)
        return st;
    switch (src->layout) {
    case CG_SAMPLES_RANDOM:
        st = cg_sample_fill_random(out, src->model, &src->policy, i, src->dims, src->dim_count,
                                   src->max_bytes, err);
        break;
    case CG_SAMPLES_MEMORY:
        for (size_t k = 0; k < src->set->samples[i].input_count && st == CG_OK; k++) {
            const cg_named_value *in = &src->set->samples[i].inputs[k];
            const char *from = src->set->samples[i].sources ? src->set->samples[i].sources[k]
                                                            : NULL;
            cg_value *v = NULL;
            if ((st = cg_value_copy(in->value, &v, err)) == CG_OK)
                st = cg_sample_feed(out, src->model, in->name, v, from ? from : "memory", err);
        }
        break;
    case CG_SAMPLES_SETS:
        if (snprintf(path, sizeof path, "%s/%s%s", src->dir, src->names[i],
                     src->npz[i] ? ".npz" : "") >= (int)sizeof path) {
            st = cg_error_set(err, CG_LIMIT, "path too long: %s/%s", src->dir, src->names[i]);
            break;
        }
        st = src->npz[i] ? load_set_npz(src, path, out, err)
                         : load_set_folder(src, path, out, err);
        break;
    case CG_SAMPLES_NUMBERED:
    case CG_SAMPLES_FLAT:
        for (size_t k = 0; k < src->need_count && st == CG_OK; k++) {
            const cg_value_info *vi = src->need[k];
            cg_value *v = NULL;
            bool found;
            if (src->layout == CG_SAMPLES_NUMBERED)
                snprintf(stem, sizeof stem, "%s_%s", src->in_stems[k], src->names[i]);
            else
                snprintf(stem, sizeof stem, "%s", src->in_stems[k]);
            if ((st = load_stem(src->dir, stem, NULL, vi->type, src->max_bytes, &v, path,
                                &found, err)) != CG_OK) {
                cg_error_prefix(err, "input '%s': ", vi->name);
                break;
            }
            if (!found) {
                st = cg_error_set(err, CG_USAGE,
                                  src->layout == CG_SAMPLES_NUMBERED
                                      ? "%s: sample %s has no %s.npy or .pb for input '%s'"
                                      : "%s: no input sets found for input '%s' (expected "
                                        "SET/NAME.npy or .pb, SET.npz, NAME_N.npy, or NAME.npy, "
                                        "NAME being %s)",
                                  src->dir,
                                  src->layout == CG_SAMPLES_NUMBERED ? src->names[i] : vi->name,
                                  src->layout == CG_SAMPLES_NUMBERED ? stem : src->in_stems[k],
                                  vi->name);
                break;
            }
            st = cg_sample_feed(out, src->model, vi->name, v, path, err);
        }
        break;
    }
    if (st == CG_OK)
        st = cg_sample_check_complete(out, src->model, err);
    if (st != CG_OK)
        cg_sample_clear(out);
    return st;
}

cg_status cg_sample_source_read_outputs(const cg_sample_source *src, const char *dir, size_t i,
                                        cg_value **values, cg_error *err)
{
    const cg_graph *g = src->model->graph;
    char folder[SAMPLES_PATH_MAX], path[SAMPLES_PATH_MAX], stem[CG_SAMPLES_STEM_CAP + 16];
    cg_status st = CG_OK;
    cg_npz *npz = NULL;
    bool in_folder = false;
    for (size_t k = 0; k < src->out_count; k++)
        values[k] = NULL;
    if (i >= src->count)
        return cg_error_set(err, CG_USAGE, "sample %zu of %zu", i, src->count);
    if (src->layout == CG_SAMPLES_SETS || src->layout == CG_SAMPLES_RANDOM ||
        src->layout == CG_SAMPLES_MEMORY) {
        if (snprintf(folder, sizeof folder, "%s/%s", dir, src->names[i]) >= (int)sizeof folder ||
            snprintf(path, sizeof path, "%s/%s.npz", dir, src->names[i]) >= (int)sizeof path)
            return cg_error_set(err, CG_LIMIT, "path too long: %s/%s", dir, src->names[i]);
        if (cg_path_is_dir(folder))
            in_folder = true;
        else if (cg_path_is_file(path))
            st = cg_npz_open(path, src->max_bytes, &npz, err);
        else
            return cg_error_set(err, CG_USAGE, "no outputs for sample '%s': neither %s/ nor %s "
                                "exists", src->names[i], folder, path);
    }
    for (size_t k = 0; k < src->out_count && st == CG_OK; k++) {
        const cg_type *type = g->outputs[k].type;
        bool found = false;
        char alt[32];
        snprintf(alt, sizeof alt, "output_%zu", k);
        if (npz) {
            cg_tensor t;
            memset(&t, 0, sizeof t);
            st = cg_npz_load(npz, src->out_names[k], &t, err);
            if (st == CG_OK && (st = cg_value_from_tensor(&t, &values[k], err)) != CG_OK)
                cg_tensor_release(&t);
            if (st != CG_OK)
                cg_error_prefix(err, "output '%s' of sample '%s': ", src->out_names[k],
                                src->names[i]);
            continue;
        }
        if (in_folder) {
            st = load_stem(folder, src->out_stems[k], alt, type, src->max_bytes, &values[k],
                           path, &found, err);
        } else {
            if (src->layout == CG_SAMPLES_NUMBERED)
                snprintf(stem, sizeof stem, "%s_%s", src->out_stems[k], src->names[i]);
            else
                snprintf(stem, sizeof stem, "%s", src->out_stems[k]);
            snprintf(folder, sizeof folder, "%s", dir);
            st = load_stem(dir, stem, NULL, type, src->max_bytes, &values[k], path, &found,
                           err);
        }
        if (st != CG_OK)
            cg_error_prefix(err, "output '%s': ", src->out_names[k]);
        else if (!found)
            st = cg_error_set(err, CG_USAGE, "sample '%s': no file for output '%s' (looked for "
                              "%s/%s.npy or .pb%s%s%s)", src->names[i], src->out_names[k],
                              folder, in_folder ? src->out_stems[k] : stem,
                              in_folder ? ", " : "", in_folder ? alt : "",
                              in_folder ? ".pb" : "");
    }
    cg_npz_free(npz);
    if (st != CG_OK)
        for (size_t k = 0; k < src->out_count; k++) {
            cg_value_free(values[k]);
            values[k] = NULL;
        }
    return st;
}

cg_status cg_samples_read_set_outputs(const cg_model *model, const char *dir, const char *set,
                                      size_t max_bytes, cg_value **values, cg_error *err)
{
    cg_sample_source *src = NULL;
    size_t cap = 0;
    cg_status st = source_new(model, max_bytes, &src, err);
    if (st != CG_OK)
        return st;
    src->layout = CG_SAMPLES_SETS;
    if (!set || !*set || set[0] == '.' || strchr(set, '/'))
        st = cg_error_set(err, CG_USAGE, "'%s' is not a set name", set ? set : "");
    if (st == CG_OK)
        st = add_name(src, &cap, set, strlen(set), false, err);
    if (st == CG_OK)
        st = cg_sample_source_read_outputs(src, dir, 0, values, err);
    cg_sample_source_free(src);
    return st;
}

cg_status cg_sample_source_write_outputs(const cg_sample_source *src, const char *dir, size_t i,
                                         const cg_named_value *outputs, size_t count,
                                         cg_error *err)
{
    char folder[SAMPLES_PATH_MAX], suffix[SAMPLES_PATH_MAX];
    if (i >= src->count)
        return cg_error_set(err, CG_USAGE, "sample %zu of %zu", i, src->count);
    /* where cg_sample_source_read_outputs looks: DIR/SET/ for every layout
     * but the flat and numbered folders */
    bool sets = src->layout == CG_SAMPLES_SETS || src->layout == CG_SAMPLES_RANDOM ||
                src->layout == CG_SAMPLES_MEMORY;
    if (snprintf(folder, sizeof folder, "%s%s%s", dir, sets ? "/" : "",
                 sets ? src->names[i] : "") >= (int)sizeof folder ||
        snprintf(suffix, sizeof suffix, "_%s", src->names[i]) >= (int)sizeof suffix)
        return cg_error_set(err, CG_LIMIT, "path too long: %s/%s", dir, src->names[i]);
    return cg_samples_write_outputs_suffixed(src->model, folder,
                                             src->layout == CG_SAMPLES_NUMBERED ? suffix : NULL,
                                             outputs, count, NULL, err);
}

/* --- whole sets ---------------------------------------------------------------------------- */

static cg_status load_all(cg_sample_source *src, cg_sample_set *out, cg_error *err)
{
    cg_status st = CG_OK;
    out->samples = calloc(src->count ? src->count : 1, sizeof *out->samples);
    if (!out->samples)
        return cg_error_set(err, CG_NOMEM, "out of memory loading samples");
    for (size_t i = 0; i < src->count && st == CG_OK; i++)
        if ((st = cg_sample_source_load(src, i, &out->samples[i], err)) == CG_OK)
            out->count++;
    if (st != CG_OK)
        cg_sample_set_free(out);
    return st;
}

cg_status cg_samples_load_dir(const cg_model *model, const char *dir, size_t max_bytes,
                              cg_sample_set *out, cg_error *err)
{
    cg_sample_source *src = NULL;
    memset(out, 0, sizeof *out);
    cg_status st = cg_sample_source_open_dir(model, dir, max_bytes, &src, err);
    if (st == CG_OK)
        st = load_all(src, out, err);
    cg_sample_source_free(src);
    return st;
}

cg_status cg_samples_random(const cg_model *model, size_t count, const cg_random_inputs *p,
                            const cg_dim_binding *dims, size_t dim_count, size_t max_bytes,
                            cg_sample_set *out, cg_error *err)
{
    cg_sample_source *src = NULL;
    memset(out, 0, sizeof *out);
    cg_status st =
        cg_sample_source_open_random(model, count, p, dims, dim_count, max_bytes, &src, err);
    if (st == CG_OK)
        st = load_all(src, out, err);
    cg_sample_source_free(src);
    return st;
}
