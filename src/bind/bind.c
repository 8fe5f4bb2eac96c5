/*
 * The entry points of language bindings (convgate/bind.h): each command as
 * the CLI runs it, from a JSON object of options and tensors in memory, to
 * the same --json envelope (src/report renders it, as for the CLI) and the
 * tensors a command produced. This file only turns options into the
 * library's option structs and calls the stages; it computes nothing of
 * its own.
 *
 * Options mirror the CLI's (docs/python.md). An option a command does not
 * take is an error naming the ones it does, so a misspelt keyword argument
 * in Python is not silently ignored.
 */
#include "convgate/bind.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/gate.h"
#include "convgate/golden.h"
#include "convgate/lower.h"
#include "convgate/parity.h"
#include "convgate/profile.h"
#include "convgate/samplerun.h"
#include "convgate/samples.h"
#include "convgate/targetpath.h"
#include "convgate/tflite.h"
#include "report/report.h"

#define BIND_MAX_TARGETS 16
#define BIND_MAX_DIMS 64
#define BIND_MAX_RANGES 64
#define BIND_MAX_RANDOM 100000

typedef struct bind_out {
    char *name;
    cg_value *value; /* a dense TENSOR value */
} bind_out;

struct cg_bind_result {
    char *json;
    int exit_code;
    bind_out *tensors;
    size_t count, cap;
};

/* One call: its options, parsed, and what the envelope collects. */
typedef struct bind_ctx {
    const char *command;
    const cg_model *model;
    const char *path;
    json_t *opts;
    json_t *errors, *warnings;
    cg_bind_result *res;
    cg_target_registry *reg;
    const cg_target *targets[BIND_MAX_TARGETS];
    size_t target_count;
    char label[1024];
    cg_dim_binding dims[BIND_MAX_DIMS];
    size_t dim_count;
    cg_input_range ranges[BIND_MAX_RANGES];
    size_t range_count;
    cg_random_inputs random;
    cg_sample_set given; /* the caller's tensors, as samples */
    cg_accumulate accumulate;
    cg_tolerance_args tol;
} bind_ctx;

/* --- messages and results ------------------------------------------------------ */

static void bind_say(json_t *list, const char *fmt, va_list ap)
{
    char msg[CG_ERROR_MSG_MAX + 256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *o = json_object();
    if (o && cg_json_set(o, "message", cg_json_text(msg)) == 0)
        json_array_append_new(list, o);
    else
        json_decref(o);
}

/* Records an error for the envelope; returns the exit code 2. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int bind_error(bind_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bind_say(c->errors, fmt, ap);
    va_end(ap);
    return 2;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void bind_warn(bind_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bind_say(c->warnings, fmt, ap);
    va_end(ap);
}

/* Keeps a copy of a tensor value under `name` for the caller. */
static int bind_keep(bind_ctx *c, const char *prefix, const char *name, const cg_value *v)
{
    cg_bind_result *r = c->res;
    cg_error err;
    cg_error_clear(&err);
    if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.dtype == CG_DTYPE_STRING) {
        bind_warn(c, "%s%s is not a numeric tensor: not returned", prefix, name);
        return 0;
    }
    if (r->count == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        bind_out *t = realloc(r->tensors, cap * sizeof *t);
        if (!t)
            return bind_error(c, "out of memory");
        r->tensors = t;
        r->cap = cap;
    }
    bind_out *o = &r->tensors[r->count];
    size_t len = strlen(prefix) + strlen(name) + 1;
    if (!(o->name = malloc(len)))
        return bind_error(c, "out of memory");
    snprintf(o->name, len, "%s%s", prefix, name);
    if (cg_value_copy(v, &o->value, &err) != CG_OK) {
        free(o->name);
        return bind_error(c, "%s", err.msg);
    }
    r->count++;
    return 0;
}

/* --- options ----------------------------------------------------------------------- */

/* Refuses keys outside `known` (space-separated). */
static int bind_check_keys(bind_ctx *c, const char *known)
{
    const char *key;
    json_t *v;
    json_object_foreach(c->opts, key, v) {
        size_t n = strlen(key);
        const char *p = known;
        bool ok = false;
        while (*p && !ok) {
            const char *e = strchr(p, ' ');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            ok = len == n && strncmp(p, key, n) == 0;
            p += len + (e != NULL);
        }
        if (!ok)
            return bind_error(c, "unknown option '%s' (it takes: %s)", key,
                              *known ? known : "none");
    }
    return 0;
}

static json_t *opt(bind_ctx *c, const char *key) { return json_object_get(c->opts, key); }

static bool opt_bool(bind_ctx *c, const char *key, bool dflt)
{
    json_t *v = opt(c, key);
    return v && json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* A string option (NULL when absent); *bad on the wrong type. */
static const char *opt_string(bind_ctx *c, const char *key, int *bad)
{
    json_t *v = opt(c, key);
    if (v && !json_is_string(v) && !json_is_null(v))
        *bad = bind_error(c, "option '%s' expects a string", key);
    return json_string_value(v);
}

/* A count option in [lo, hi] (dflt when absent). */
static uint64_t opt_count(bind_ctx *c, const char *key, uint64_t lo, uint64_t hi, uint64_t dflt,
                          int *bad)
{
    json_t *v = opt(c, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) < lo || (uint64_t)json_integer_value(v) > hi) {
        *bad = bind_error(c, "option '%s' expects an integer in [%" PRIu64 ", %" PRIu64 "]",
                          key, lo, hi);
        return dflt;
    }
    return (uint64_t)json_integer_value(v);
}

/* target, profiles, dim, seed, range, accumulate, atol, rtol: the options
 * every command that runs a model shares, as cli/args.c reads them. */
static int bind_common(bind_ctx *c, bool need_target)
{
    int bad = 0;
    cg_error err;
    cg_error_clear(&err);
    const char *profiles = opt_string(c, "profiles", &bad);
    json_t *t = opt(c, "target");
    if (bad)
        return bad;
    if (t && !json_is_null(t)) {
        if (cg_target_registry_load(profiles, &c->reg, &err) != CG_OK)
            return bind_error(c, "%s", err.msg);
        size_t n = json_is_array(t) ? json_array_size(t) : 1;
        for (size_t i = 0; i < n; i++) {
            json_t *item = json_is_array(t) ? json_array_get(t, i) : t;
            if (!json_is_string(item))
                return bind_error(c, "option 'target' expects \"a,b\" or a list of names");
            if (cg_target_registry_resolve(c->reg, json_string_value(item), c->targets,
                                           &c->target_count, BIND_MAX_TARGETS, &err) != CG_OK)
                return bind_error(c, "%s", err.msg);
        }
        size_t used = 0;
        for (size_t i = 0; i < c->target_count && used < sizeof c->label; i++) {
            int w = snprintf(c->label + used, sizeof c->label - used, "%s%s", i ? "," : "",
                             c->targets[i]->name);
            used = w < 0 ? sizeof c->label : used + (size_t)w;
        }
    }
    if (need_target && !c->target_count)
        return bind_error(c, "a target is needed (target=\"xnnpack\"; `convgate targets` "
                          "lists them)");
    json_t *dims = opt(c, "dim");
    if (dims && !json_is_null(dims)) {
        const char *sym;
        json_t *v;
        if (!json_is_object(dims))
            return bind_error(c, "option 'dim' expects {\"SYMBOL\": size}");
        json_object_foreach(dims, sym, v) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > INT32_MAX)
                return bind_error(c, "dim '%s' expects a size in [1, %d]", sym,
                                  INT32_MAX);
            if (c->dim_count == BIND_MAX_DIMS)
                return bind_error(c, "more than %d dims", BIND_MAX_DIMS);
            c->dims[c->dim_count++] = (cg_dim_binding){sym, (int64_t)json_integer_value(v)};
        }
    }
    c->random.seed = opt_count(c, "seed", 0, UINT64_MAX, 0, &bad);
    json_t *ranges = opt(c, "range");
    if (ranges && !json_is_null(ranges)) {
        const char *name;
        json_t *v;
        if (!json_is_object(ranges))
            return bind_error(c, "option 'range' expects {\"*\" or \"NAME\": [lo, hi]}");
        json_object_foreach(ranges, name, v) {
            double lo = json_number_value(json_array_get(v, 0));
            double hi = json_number_value(json_array_get(v, 1));
            if (json_array_size(v) != 2 || !json_is_number(json_array_get(v, 0)) ||
                !json_is_number(json_array_get(v, 1)) || !isfinite(lo) || !isfinite(hi) ||
                lo > hi)
                return bind_error(c, "range '%s' expects [lo, hi], finite, lo <= hi", name);
            if (c->range_count == BIND_MAX_RANGES)
                return bind_error(c, "more than %d ranges", BIND_MAX_RANGES);
            c->ranges[c->range_count++] =
                (cg_input_range){strcmp(name, "*") == 0 ? NULL : name, lo, hi};
        }
    }
    c->random.ranges = c->ranges;
    c->random.range_count = c->range_count;
    const char *acc = opt_string(c, "accumulate", &bad);
    c->accumulate = CG_ACCUMULATE_PROFILE;
    cg_error aerr;
    cg_error_clear(&aerr);
    if (acc && cg_accumulate_parse(acc, &c->accumulate, &aerr) != CG_OK)
        return bind_error(c, "%s", aerr.msg);
    json_t *atol = opt(c, "atol"), *rtol = opt(c, "rtol");
    if ((atol && !json_is_null(atol) && (!json_is_number(atol) || json_number_value(atol) < 0 ||
                                         !isfinite(json_number_value(atol)))) ||
        (rtol && !json_is_null(rtol) && (!json_is_number(rtol) || json_number_value(rtol) < 0 ||
                                         !isfinite(json_number_value(rtol)))))
        return bind_error(c, "atol and rtol expect finite numbers >= 0");
    c->tol.have_atol = atol && json_is_number(atol);
    c->tol.have_rtol = rtol && json_is_number(rtol);
    c->tol.atol = json_number_value(atol);
    c->tol.rtol = json_number_value(rtol);
    if (bad)
        return bad;
    if (cg_samples_check_options(c->model, c->dims, c->dim_count, c->ranges, c->range_count,
                                 &err) != CG_OK)
        return bind_error(c, "%s", err.msg);
    return 0;
}

/* The caller's tensors as samples, grouped by sample label. */
static int bind_samples(bind_ctx *c, const cg_bind_tensor *in, size_t n)
{
    cg_error err;
    cg_error_clear(&err);
    if (!n)
        return 0;
    if (!(c->given.samples = calloc(n, sizeof *c->given.samples)))
        return bind_error(c, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *label = in[i].sample ? in[i].sample : "0";
        size_t s = 0;
        while (s < c->given.count && strcmp(c->given.samples[s].label, label) != 0)
            s++;
        if (s == c->given.count) {
            if (cg_sample_init(&c->given.samples[s], c->model, label, &err) != CG_OK)
                return bind_error(c, "%s", err.msg);
            c->given.count++;
        }
        size_t need;
        int64_t numel;
        cg_value *v = NULL;
        if (!in[i].name || in[i].rank < 0 || in[i].rank > CG_MAX_RANK ||
            (in[i].rank && !in[i].dims) || in[i].dtype == CG_DTYPE_STRING ||
            !cg_shape_numel(in[i].rank, in[i].dims, &numel) ||
            !cg_tensor_byte_size((cg_dtype)in[i].dtype, numel, &need) || need != in[i].bytes ||
            (need && !in[i].data))
            return bind_error(c, "input '%s' of sample %s: not a dense tensor of its dtype and "
                              "shape (%zu bytes given)", in[i].name ? in[i].name : "?", label,
                              in[i].bytes);
        if (cg_value_alloc_tensor((cg_dtype)in[i].dtype, in[i].rank, in[i].dims, &v, &err) !=
            CG_OK)
            return bind_error(c, "input '%s': %s", in[i].name, err.msg);
        if (need)
            memcpy(v->tensor.data, in[i].data, need);
        if (cg_sample_feed(&c->given.samples[s], c->model, in[i].name, v, "array", &err) !=
            CG_OK)
            return bind_error(c, "sample %s: %s", label, err.msg);
    }
    return 0;
}

/* Every sample complete (a missing input is an error naming it). */
static int bind_samples_complete(bind_ctx *c)
{
    cg_error err;
    cg_error_clear(&err);
    for (size_t s = 0; s < c->given.count; s++)
        if (cg_sample_check_complete(&c->given.samples[s], c->model, &err) != CG_OK)
            return bind_error(c, "sample %s: %s", c->given.samples[s].label, err.msg);
    return 0;
}

/* The samples of gate/compare/bisect: the caller's, a folder's or random. */
static int bind_sample_set(bind_ctx *c, size_t default_random, cg_sample_set *out, char *desc,
                           size_t desc_cap, bool *owned)
{
    int bad = 0;
    cg_error err;
    cg_error_clear(&err);
    const char *dir = opt_string(c, "inputs", &bad);
    uint64_t n = opt_count(c, "random", 1, BIND_MAX_RANDOM, 0, &bad);
    if (bad)
        return bad;
    if ((dir != NULL) + (n != 0) + (c->given.count != 0) > 1)
        return bind_error(c, "give arrays, inputs=DIR or random=N, one of them");
    *owned = true;
    if (c->given.count) {
        if ((bad = bind_samples_complete(c)) != 0)
            return bad;
        *out = c->given;
        *owned = false;
        snprintf(desc, desc_cap, "%zu set%s of arrays", out->count, out->count == 1 ? "" : "s");
        return 0;
    }
    if (dir) {
        if (cg_samples_load_dir(c->model, dir, 0, out, &err) != CG_OK)
            return bind_error(c, "%s", err.msg);
        cg_sample_set_describe(out, dir, false, NULL, desc, desc_cap);
        return 0;
    }
    n = n ? n : default_random;
    if (cg_samples_random(c->model, (size_t)n, &c->random, c->dims, c->dim_count, 0, out,
                          &err) != CG_OK)
        return bind_error(c, "%s", err.msg);
    cg_sample_set_describe(out, NULL, false, &c->random, desc, desc_cap);
    return 0;
}

/* --- commands ------------------------------------------------------------------------ */

static int do_inspect(bind_ctx *c, json_t **result)
{
    cg_error err;
    cg_error_clear(&err);
    int bad = bind_check_keys(c, "");
    if (bad)
        return bad;
    cg_inspect_options io = {10};
    /* a .tflite shows the file (as convgate inspect does), not its lowering */
    if (!(*result = c->model->tflite
                        ? cg_report_inspect_tflite_json(c->model->tflite->source, &io, &err)
                        : cg_report_inspect_json(c->model, &io, &err)))
        return bind_error(c, "%s", err.msg[0] ? err.msg : "out of memory");
    return 0;
}

static int do_check(bind_ctx *c, json_t **result)
{
    cg_check_report rep;
    cg_error err;
    cg_error_clear(&err);
    int bad = bind_check_keys(c, "");
    if (bad)
        return bad;
    cg_status st = c->model->tflite ? cg_tflite_check(c->model->tflite->source, NULL, &rep, &err)
                                    : cg_check_model(c->model, NULL, &rep, &err);
    if (st == CG_NOMEM || st == CG_USAGE) {
        cg_check_report_free(&rep);
        return bind_error(c, "%s", err.msg);
    }
    *result = cg_report_check_json(c->path, &rep);
    int rc = rep.error_count ? 1 : 0;
    cg_check_report_free(&rep);
    return *result ? rc : bind_error(c, "out of memory");
}

/* assign's what-if, as convgate assign: assume_supported ("A,B" or a list)
 * puts what-if targets in c->targets (base keeps the real ones), and the
 * report ranks each refused op. */
typedef struct bind_assumed {
    char *ops[CG_WHAT_IF_MAX_ASSUMED];
    size_t count;
    const cg_target *base[BIND_MAX_TARGETS];
    cg_target *wrapped[BIND_MAX_TARGETS];
    size_t wrapped_count;
} bind_assumed;

static int bind_assume_add(bind_ctx *c, bind_assumed *a, const char *arg)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_op_keys_parse(arg, a->ops, &a->count, CG_WHAT_IF_MAX_ASSUMED - 1, &err) != CG_OK)
        return bind_error(c, "assume_supported %s", err.msg);
    return 0;
}

static int bind_assume(bind_ctx *c, bind_assumed *a)
{
    cg_error err;
    cg_error_clear(&err);
    memcpy(a->base, c->targets, c->target_count * sizeof *a->base);
    json_t *v = opt(c, "assume_supported");
    if (!v || json_is_null(v))
        return 0;
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(item))
            return bind_error(c, "option 'assume_supported' expects \"A,B\" or a list of op "
                              "names");
        int rc = bind_assume_add(c, a, json_string_value(item));
        if (rc)
            return rc;
    }
    if (!a->count)
        return 0;
    if (cg_targets_assume_supported(a->base, c->target_count, (const char *const *)a->ops,
                                    a->count, a->wrapped, &err) != CG_OK)
        return bind_error(c, "%s", err.msg);
    a->wrapped_count = c->target_count;
    memcpy(c->targets, a->wrapped, c->target_count * sizeof *c->targets);
    return 0;
}

static void bind_assume_free(bind_ctx *c, bind_assumed *a)
{
    if (a->wrapped_count)
        memcpy(c->targets, a->base, a->wrapped_count * sizeof *c->targets);
    cg_targets_assumed_free(a->wrapped, a->wrapped_count);
    a->wrapped_count = 0;
    for (size_t i = 0; i < a->count; i++)
        free(a->ops[i]);
    a->count = 0;
}

/* The ranking into *result, as convgate assign writes it. */
static int bind_what_if(bind_ctx *c, const bind_assumed *a, const cg_placement *p,
                        const cg_reference_profile *ref, json_t *result)
{
    cg_what_if_gain gains[CG_WHAT_IF_MAX_RANKED];
    size_t skipped = 0;
    size_t n = cg_what_if_rank(p, a->base, c->target_count, (const char *const *)a->ops,
                               a->count, ref, gains, CG_WHAT_IF_MAX_RANKED, &skipped);
    if (skipped)
        bind_warn(c, "%zu refused op type(s) not ranked (over %d, or their placement failed)",
                  skipped, CG_WHAT_IF_MAX_RANKED);
    if (!cg_what_if_json(result, gains, n, (const char *const *)a->ops, a->count))
        return bind_error(c, "out of memory");
    return 0;
}

/* assign on a .tflite: its own operators, as LiteRT's delegates see them
 * (cg_tflite_op_model), typed from the file, as convgate assign does. */
static int do_assign_tflite(bind_ctx *c, const bind_assumed *a, json_t **result)
{
    cg_model *ops = NULL;
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    cg_error err;
    char why[1024];
    int rc = 0;
    cg_error_clear(&err);
    if (c->dim_count) {
        rc = bind_error(c, "a .tflite is placed with the static shapes it stores; dim does not "
                        "apply");
        goto done;
    }
    if (cg_placement_build_tflite(c->model->tflite->source, c->targets, c->target_count, &ops,
                                  &types, &p, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    if (cg_assign_init_failure(p->main, types, why, sizeof why))
        rc = bind_error(c, "%s", why);
    if (!(*result = cg_assign_report_json(p))) {
        rc = bind_error(c, "out of memory");
        goto done;
    }
    cg_json_set(*result, "model", cg_json_text(c->path));
    int wrc = bind_what_if(c, a, p, NULL, *result);
    rc = rc ? rc : wrc;
done:
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_model_free(ops);
    return rc;
}

static int do_assign_model(bind_ctx *c, const bind_assumed *a, json_t **result);

static int do_assign(bind_ctx *c, json_t **result)
{
    bind_assumed a;
    memset(&a, 0, sizeof a);
    int rc = bind_check_keys(c, "target profiles dim seed range no_time accept_default_dims "
                             "assume_supported");
    if (rc || (rc = bind_common(c, true)) != 0)
        return rc;
    if (!(rc = bind_assume(c, &a)))
        rc = c->model->tflite ? do_assign_tflite(c, &a, result) : do_assign_model(c, &a, result);
    bind_assume_free(c, &a);
    return rc;
}

static int do_assign_model(bind_ctx *c, const bind_assumed *a, json_t **result)
{
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    cg_lowered *lowered = NULL;
    cg_cost_estimate est;
    cg_error err;
    char types_error[CG_ERROR_MSG_MAX], why[1024];
    cg_reference_profile ref;
    int rc = 0;
    memset(&ref, 0, sizeof ref);
    cg_error_clear(&err);
    /* as convgate assign: the dynamic dims stated, never guessed unless
     * accepted, and the defaults bound */
    cg_dim_use uses[BIND_MAX_DIMS];
    char keys[8][288];
    size_t nu = cg_samples_dim_uses(c->model, c->dims, c->dim_count, NULL, uses, BIND_MAX_DIMS);
    nu = nu < BIND_MAX_DIMS ? nu : BIND_MAX_DIMS;
    if (!opt_bool(c, "accept_default_dims", false) &&
        cg_samples_refuse_guessed_dims(uses, nu, &err) != CG_OK)
        return bind_error(c, "%s", err.msg);
    size_t given = c->dim_count; /* the defaults' bindings live in this call only */
    cg_samples_bind_defaults(uses, nu, c->dims, &c->dim_count, BIND_MAX_DIMS, keys[0],
                             sizeof keys[0], 8);
    /* as convgate assign: the graph the targets partition is placed; where
     * the model fails on the inputs nothing is placed (residency unknown) */
    if (cg_lower_for_targets(c->model, c->targets, c->target_count, c->dims, c->dim_count,
                             &lowered, &err) != CG_OK) {
        c->dim_count = given;
        return bind_error(c, "%s", err.msg);
    }
    const cg_model *placed = lowered->model;
    if (cg_lowered_types_fed(lowered, c->dims, c->dim_count, &c->random, NULL, 0, &types, &err) !=
        CG_OK) {
        if (err.status == CG_NOMEM) {
            rc = bind_error(c, "%s", err.msg);
            goto done;
        }
        snprintf(types_error, sizeof types_error, "%s", err.msg);
        *result = cg_report_assign_unknown_json("random inputs", "(defaults)", types_error);
        if (*result)
            cg_json_set(*result, "model", cg_json_text(c->path));
        rc = bind_error(c, "residency unknown: the model fails on random inputs: %s", err.msg);
        goto done;
    }
    if (cg_placement_build(placed, types, c->targets, c->target_count, &p, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    p->lowered = lowered;
    if (!opt_bool(c, "no_time", false)) {
        cg_status st = cg_profile_quick_estimate_placed(lowered, types, c->dims, c->dim_count,
                                                        &c->random, NULL, 0, p->main, &est,
                                                        &ref, &err);
        if (st == CG_OK)
            p->time = &est;
        else
            bind_warn(c, "no time-weighted verdict (the verdict counts nodes): %s", err.msg);
    }
    if (cg_assign_init_failure(p->main, types, why, sizeof why))
        rc = bind_error(c, "%s", why);
    if (!(*result = cg_assign_report_json(p))) {
        rc = bind_error(c, "out of memory");
        goto done;
    }
    char setting[512];
    cg_samples_dims_label(c->dims, given, setting, sizeof setting);
    cg_json_set(*result, "model", cg_json_text(c->path));
    cg_json_set(*result, "setting", cg_json_text(setting));
    cg_json_set(*result, "dims", cg_report_dims_json(uses, nu));
    int wrc = bind_what_if(c, a, p, &ref, *result);
    rc = rc ? rc : wrc;
done:
    cg_reference_profile_clear(&ref);
    c->dim_count = given;
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_lowered_free(lowered);
    return rc;
}

/* run's watch list: copies of the values named. */
typedef struct bind_watch {
    bind_ctx *c;
    json_t *names;
} bind_watch;

static cg_status watch_observe(void *user, const cg_node *node, const char *name,
                               const cg_value *value)
{
    bind_watch *w = user;
    (void)node;
    for (size_t i = 0; name && i < json_array_size(w->names); i++) {
        const char *want = json_string_value(json_array_get(w->names, i));
        if (want && strcmp(want, name) == 0)
            return bind_keep(w->c, "watch/", name, value) ? CG_NOMEM : CG_OK;
    }
    return CG_OK;
}

static int do_run(bind_ctx *c, json_t **result)
{
    cg_error err;
    cg_sample_runner *runner = NULL;
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    cg_sample s;
    int bad = 0;
    memset(&s, 0, sizeof s);
    cg_error_clear(&err);
    int rc = bind_check_keys(c, "target profiles dim seed range accumulate random inputs watch");
    if (rc || (rc = bind_common(c, false)) != 0)
        return rc;
    const char *dir = opt_string(c, "inputs", &bad);
    json_t *watch = opt(c, "watch");
    bind_watch w = {c, watch};
    if (bad)
        return bad;
    if (watch && !json_is_array(watch))
        return bind_error(c, "watch expects a list of tensor names");
    if (c->given.count > 1)
        return bind_error(c, "one sample at a time (%zu given)", c->given.count);
    /* the sample: the folder's first, then the caller's arrays, then random
     * values for what is still missing when random=True */
    if (dir) {
        cg_sample_source *src = NULL;
        cg_status st = cg_sample_source_open_dir(c->model, dir, 0, &src, &err);
        if (st == CG_OK)
            st = cg_sample_source_load(src, 0, &s, &err);
        cg_sample_source_free(src);
        if (st != CG_OK)
            return bind_error(c, "%s", err.msg);
        for (size_t k = 0; c->given.count && k < c->given.samples[0].input_count; k++) {
            cg_value *v = c->given.samples[0].inputs[k].value;
            c->given.samples[0].inputs[k].value = NULL; /* cg_sample_feed takes it */
            if (cg_sample_feed(&s, c->model, c->given.samples[0].inputs[k].name, v, "array",
                               &err) != CG_OK) {
                rc = bind_error(c, "%s", err.msg);
                goto done;
            }
        }
    } else if (c->given.count) {
        s = c->given.samples[0];
        memset(&c->given.samples[0], 0, sizeof s);
        c->given.count = 0;
    } else if (cg_sample_init(&s, c->model, "inputs", &err) != CG_OK) {
        return bind_error(c, "%s", err.msg);
    }
    if (opt_bool(c, "random", false) &&
        cg_sample_fill_random(&s, c->model, &c->random, 0, c->dims, c->dim_count, 0, &err) !=
            CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    if (cg_sample_check_complete(&s, c->model, &err) != CG_OK) {
        rc = bind_error(c, "%s: give it as an array, or random=True", err.msg);
        goto done;
    }
    cg_sample_runner_options ro;
    memset(&ro, 0, sizeof ro);
    ro.targets = c->targets;
    ro.target_count = c->target_count;
    ro.dims = c->dims;
    ro.dim_count = c->dim_count;
    ro.random = &c->random;
    ro.accumulate = c->accumulate;
    ro.observe = watch ? watch_observe : NULL;
    ro.observe_user = &w;
    cg_status st = cg_sample_runner_init(c->model, &ro, &s, &runner, &err);
    if (st == CG_OK)
        st = cg_sample_runner_run(runner, &s, &outs, &out_count, &err);
    if (st != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        if (st != CG_USAGE)
            rc = 1;
        goto done;
    }
    for (size_t i = 0; i < out_count && !rc; i++)
        rc = bind_keep(c, "outputs/", outs[i].name ? outs[i].name : "", outs[i].value);
    char residency[1024];
    cg_run_view view = {outs, out_count, NULL, NULL, NULL, 0, false, 0, 0, NULL, 0, 0, 0, 0, 1, false,
                        false};
    cg_run_view_set_path(&view, cg_sample_runner_path(runner), c->label, residency,
                         sizeof residency);
    if (!rc && !(*result = cg_report_run_json(&view)))
        rc = bind_error(c, "out of memory");
done:
    cg_runtime_free_outputs(outs, out_count);
    cg_sample_runner_free(runner);
    cg_sample_clear(&s);
    return rc;
}

static int do_compare(bind_ctx *c, json_t **result)
{
    cg_sample_set set = {0};
    cg_sample_source *src = NULL;
    cg_parity_report rep;
    cg_parity_options po;
    cg_error err;
    char desc[4200];
    bool owned = true;
    memset(&rep, 0, sizeof rep);
    memset(&po, 0, sizeof po);
    cg_error_clear(&err);
    int rc = bind_check_keys(c, "target profiles dim seed range accumulate random inputs atol "
                                "rtol");
    if (rc || (rc = bind_common(c, true)) != 0 ||
        (rc = bind_sample_set(c, 4, &set, desc, sizeof desc, &owned)) != 0)
        goto done;
    if (cg_sample_source_open_set(c->model, &set, &src, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    po.targets = c->targets;
    po.target_count = c->target_count;
    po.dims = c->dims;
    po.dim_count = c->dim_count;
    po.random = &c->random;
    po.accumulate = c->accumulate;
    po.tol = c->tol;
    po.threshold = 0.5;
    if (cg_parity_run(c->model, &po, src, &rep, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    const char *dir = json_string_value(opt(c, "inputs"));
    char samples[4200];
    if (dir)
        snprintf(samples, sizeof samples, "%zu from %s", rep.sample_count, dir);
    else
        snprintf(samples, sizeof samples, "%s", desc);
    cg_parity_view view = {c->path, c->label, c->targets, c->target_count, NULL, samples,
                           !dir && !c->given.count, c->random.seed, CG_TASK_NONE, 0.5, NULL};
    for (size_t k = 0; k < rep.output_count; k++)
        if (rep.outputs[k].fallback_suspect)
            bind_warn(c, "output '%s' is bit-identical to the fp32 reference although the path "
                      "computes in reduced precision: it probably did not run on %s (silent "
                      "fallback?)", rep.outputs[k].name, c->label);
    rc = rep.pass ? 0 : 1;
    if (!(*result = cg_report_parity_json(&rep, &view)))
        rc = bind_error(c, "out of memory");
done:
    cg_parity_report_free(&rep);
    cg_sample_source_free(src);
    if (owned)
        cg_sample_set_free(&set);
    return rc;
}

/* The bisected sample's inputs and the first divergent tensor's values. */
static int bind_keep_bisect(bind_ctx *c, const cg_bisect_result *b, const cg_sample *s)
{
    int rc = 0;
    if (b->first_reference)
        rc = bind_keep(c, "first_divergent/", "reference", b->first_reference);
    if (!rc && b->first_target)
        rc = bind_keep(c, "first_divergent/", "target", b->first_target);
    for (size_t k = 0; s && !rc && k < s->input_count; k++)
        rc = bind_keep(c, "sample/", s->inputs[k].name, s->inputs[k].value);
    return rc;
}

static int do_gate(bind_ctx *c, json_t **result)
{
    cg_sample_set set = {0};
    cg_gate_options go;
    cg_gate_report rep;
    cg_error err;
    char desc[4200];
    bool owned = true;
    int bad = 0;
    memset(&go, 0, sizeof go);
    memset(&rep, 0, sizeof rep);
    cg_error_clear(&err);
    int rc = bind_check_keys(c, "target profiles dim seed range accumulate random inputs golden "
                                "atol rtol require_full min_coverage");
    if (rc || (rc = bind_common(c, true)) != 0)
        goto done;
    const char *golden = opt_string(c, "golden", &bad);
    if ((rc = bad) != 0)
        goto done;
    if (c->tol.have_atol != c->tol.have_rtol) {
        rc = bind_error(c, "give atol and rtol together");
        goto done;
    }
    if (golden) {
        if (c->given.count || opt(c, "inputs") || opt(c, "random")) {
            rc = bind_error(c, "give golden, inputs, random or arrays, one of them");
            goto done;
        }
        if (!c->path || strcmp(c->path, "-") == 0) {
            rc = bind_error(c, "golden needs the model's file (its hash is checked)");
            goto done;
        }
        if (cg_samples_load_golden(c->model, c->path, golden, 0, &set, &err) != CG_OK) {
            rc = bind_error(c, "golden set %s: %s", golden, err.msg);
            goto done;
        }
        cg_sample_set_describe(&set, golden, true, NULL, desc, sizeof desc);
    } else if ((rc = bind_sample_set(c, 3, &set, desc, sizeof desc, &owned)) != 0) {
        goto done;
    }
    go.targets = c->targets;
    go.target_count = c->target_count;
    go.dims = c->dims;
    go.dim_count = c->dim_count;
    go.require_full = opt_bool(c, "require_full", false);
    json_t *bar = opt(c, "min_coverage");
    if (bar && !json_is_null(bar)) {
        if (!json_is_number(bar) || !(json_number_value(bar) >= 0 && json_number_value(bar) <= 1)) {
            rc = bind_error(c, "option 'min_coverage' expects a fraction of the reference time "
                            "in [0, 1]");
            goto done;
        }
        go.have_min_coverage = true;
        go.min_coverage = json_number_value(bar);
    }
    go.accumulate = c->accumulate;
    go.tol = c->tol; /* given, atol/rtol override the noise floor */
    go.random = &c->random;
    go.samples = &set;
    go.samples_desc = desc;
    go.keep_values = true;
    if (cg_gate_run(c->model, c->path ? c->path : "-", &go, &rep, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    rc = rep.pass ? 0 : 1;
    if (!(*result = cg_gate_report_json(&rep))) {
        rc = bind_error(c, "out of memory");
        goto done;
    }
    if (rep.bisected && bind_keep_bisect(c, &rep.bisect, &set.samples[rep.bisect_sample]))
        rc = 2;
done:
    cg_gate_report_free(&rep);
    if (owned)
        cg_sample_set_free(&set);
    return rc;
}

static int do_bisect(bind_ctx *c, json_t **result)
{
    cg_sample_set set = {0};
    cg_bisect_options bo;
    cg_bisect_result res;
    cg_target_path_options po;
    cg_target_path *path = NULL;
    cg_dim_binding bound[BIND_MAX_DIMS];
    cg_error err;
    char desc[4200];
    bool owned = true;
    memset(&bo, 0, sizeof bo);
    memset(&res, 0, sizeof res);
    memset(&po, 0, sizeof po);
    cg_error_clear(&err);
    int rc = bind_check_keys(c, "target profiles dim seed range accumulate inputs atol rtol "
                                "triage");
    if (rc || (rc = bind_common(c, true)) != 0 ||
        (rc = bind_sample_set(c, 1, &set, desc, sizeof desc, &owned)) != 0)
        goto done;
    if (c->tol.have_atol != c->tol.have_rtol) {
        rc = bind_error(c, "give atol and rtol together");
        goto done;
    }
    const cg_sample *s = &set.samples[0];
    po.targets = c->targets;
    po.target_count = c->target_count;
    po.dims = bound;
    po.dim_count = cg_sample_dims(c->model, c->dims, c->dim_count, s, bound, BIND_MAX_DIMS);
    po.accumulate = c->accumulate;
    po.random = &c->random;
    po.feeds = s->inputs;
    po.feed_count = s->input_count;
    bo.reference.model = c->model;
    bo.candidate.model = c->model;
    bo.candidate.path = &po;
    bo.triage = opt_bool(c, "triage", true);
    bo.keep_values = true;
    if (c->tol.have_atol) {
        /* given, atol/rtol override the noise floors, as in convgate bisect */
        bo.by_tolerance = true;
        bo.tol.atol = c->tol.atol;
        bo.tol.rtol = c->tol.rtol;
        bo.tol.justification = "from atol/rtol";
    }
    if (cg_bisect_run(&bo, s->inputs, s->input_count, &res, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    rc = res.diverged ? 1 : 0;
    cg_bisect_view view = {c->path, NULL, s->label, bo.by_tolerance ? &bo.tol : NULL, NULL,
                           c->targets, c->target_count};
    if (!(*result = cg_report_bisect_json(&res, &view))) {
        rc = bind_error(c, "out of memory");
        goto done;
    }
    if (bind_keep_bisect(c, &res, s))
        rc = 2;
done:
    cg_target_path_free(path);
    cg_bisect_result_free(&res);
    if (owned)
        cg_sample_set_free(&set);
    return rc;
}

/* dump-ref: the reference's outputs on the samples frozen as a golden set
 * (cg_golden_dump, the loop the CLI runs). */
static int do_dump_ref(bind_ctx *c, json_t **result)
{
    cg_sample_set set = {0};
    cg_sample_source *src = NULL;
    cg_golden_dump_report rep;
    cg_golden_dump_options o;
    cg_error err;
    char desc[4200];
    bool owned = true;
    int bad = 0;
    memset(&rep, 0, sizeof rep);
    memset(&o, 0, sizeof o);
    cg_error_clear(&err);
    int rc = bind_check_keys(c, "output force floors dim seed range random inputs");
    if (rc || (rc = bind_common(c, false)) != 0)
        goto done;
    const char *golden = opt_string(c, "output", &bad);
    if ((rc = bad) != 0)
        goto done;
    if (!golden) {
        rc = bind_error(c, "output=GOLDEN (the folder to write) is needed");
        goto done;
    }
    if (strcmp(c->path, "-") == 0) {
        rc = bind_error(c, "the model must be a file (its sha256 goes into the manifest)");
        goto done;
    }
    if ((rc = bind_sample_set(c, 1, &set, desc, sizeof desc, &owned)) != 0)
        goto done;
    if (cg_sample_source_open_set(c->model, &set, &src, &err) != CG_OK) {
        rc = bind_error(c, "%s", err.msg);
        goto done;
    }
    o.model_path = c->path;
    o.force = opt_bool(c, "force", false);
    o.floors = opt_bool(c, "floors", true);
    if (cg_golden_dump(c->model, src, golden, &o, &rep, &err) != CG_OK) {
        bind_error(c, "%s", err.msg);
        rc = rep.model_failed ? 1 : 2;
        goto done;
    }
    if (!(*result = cg_report_dump_json(c->path, golden, &rep)))
        rc = bind_error(c, "out of memory");
done:
    cg_golden_dump_report_free(&rep);
    cg_sample_source_free(src);
    if (owned)
        cg_sample_set_free(&set);
    return rc;
}

/* --- the entry points ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(bind_ctx *c, json_t **result);
} bind_commands[] = {
    {"inspect", do_inspect}, {"check", do_check}, {"assign", do_assign}, {"run", do_run},
    {"compare", do_compare}, {"gate", do_gate},   {"bisect", do_bisect},
    {"dump-ref", do_dump_ref},
};

cg_bind_result *cg_bind_call(const char *command, const cg_model *model, const char *path,
                             const char *options, const cg_bind_tensor *inputs,
                             size_t input_count)
{
    bind_ctx c;
    json_t *result = NULL;
    json_error_t jerr;
    int rc = 2;
    memset(&c, 0, sizeof c);
    c.command = command ? command : "?";
    c.model = model;
    c.path = path ? path : "-";
    c.errors = json_array();
    c.warnings = json_array();
    c.res = calloc(1, sizeof *c.res);
    if (!c.errors || !c.warnings || !c.res)
        goto oom;
    size_t k = 0, nk = sizeof bind_commands / sizeof bind_commands[0];
    while (k < nk && strcmp(bind_commands[k].name, c.command) != 0)
        k++;
    if (k == nk) {
        bind_error(&c, "unknown command '%s' (inspect, check, assign, run, compare, gate, "
                   "bisect, dump-ref)", c.command);
    } else if (!model || !model->graph) {
        bind_error(&c, "no model");
    } else if (!(c.opts = options ? json_loads(options, JSON_REJECT_DUPLICATES, &jerr)
                                  : json_object()) ||
               !json_is_object(c.opts)) {
        bind_error(&c, "options are not a JSON object: %s",
                   c.opts ? "another JSON value" : jerr.text);
    } else if (!input_count || !(rc = bind_samples(&c, inputs, input_count))) {
        rc = bind_commands[k].fn(&c, &result);
    }
    if (json_array_size(c.errors) && rc == 0)
        rc = 2;
    c.res->exit_code = rc;
    /* the result, when there is one, also with errors (as convgate assign
     * prints its report and fails on a target that would refuse the model) */
    json_t *env = cg_json_envelope(c.command, rc, json_incref(c.errors), json_incref(c.warnings),
                                   result);
    if (!env || !(c.res->json = cg_json_dumps(env))) {
        json_decref(env);
        goto oom;
    }
    json_decref(env);
    goto done;
oom:
    cg_bind_result_free(c.res);
    c.res = NULL;
done:
    json_decref(c.opts);
    json_decref(c.errors);
    json_decref(c.warnings);
    cg_sample_set_free(&c.given);
    cg_target_registry_free(c.reg);
    return c.res;
}

const char *cg_bind_result_json(const cg_bind_result *r) { return r ? r->json : NULL; }

int cg_bind_result_exit_code(const cg_bind_result *r) { return r ? r->exit_code : 2; }

size_t cg_bind_result_tensor_count(const cg_bind_result *r) { return r ? r->count : 0; }

bool cg_bind_result_tensor(const cg_bind_result *r, size_t i, const char **name, int32_t *dtype,
                           int32_t *rank, int64_t *dims, const void **data, size_t *bytes)
{
    if (!r || i >= r->count)
        return false;
    const cg_tensor *t = &r->tensors[i].value->tensor;
    *name = r->tensors[i].name;
    *dtype = (int32_t)t->dtype;
    *rank = t->rank;
    for (int d = 0; d < t->rank; d++)
        dims[d] = t->dims[d];
    *data = t->data;
    *bytes = cg_tensor_bytes(t);
    return true;
}

void cg_bind_result_free(cg_bind_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++) {
        free(r->tensors[i].name);
        cg_value_free(r->tensors[i].value);
    }
    free(r->tensors);
    free(r->json);
    free(r);
}
