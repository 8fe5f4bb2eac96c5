/*
 * convgate verify: check the reference runtime, a target path, or outputs
 * produced elsewhere (a device run) against a golden set written by
 * `convgate dump-ref`. The golden set is checked first (format version,
 * every file's sha256, the model's sha256): a stale or tampered set is an
 * error (exit 2), never a pass. Then every golden output is compared with
 * cg_compare_tensors against its tolerance.
 *
 * Tolerance file (--tol FILE), JSON:
 *   {"default": {"atol": 1e-5, "rtol": 1e-4},
 *    "outputs": {"logits": {"atol": 2e-3, "rtol": 1e-3, "nan_equal": false,
 *                           "justification": "fp16 head, accepted in review #12"}}}
 * Every field is optional; an output's missing fields come from "default",
 * whose missing fields come from --atol/--rtol or the built-in defaults.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/compare.h"
#include "convgate/golden.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"

#define VERIFY_MAX_TARGETS 8
#define VERIFY_MAX_DIMS 64

static void verify_usage(FILE *f)
{
    fputs("Usage: convgate verify MODEL --golden GOLDEN [--target T[,T2...]]\n"
          "                       [--atol X --rtol Y | --tol FILE] [--outputs-from DIR] [--json]\n"
          "\n"
          "Checks the golden set (format version, every file's sha256, the model's\n"
          "sha256), runs the golden inputs on the reference runtime (or the target path\n"
          "with --target) and compares every output with the golden one:\n"
          "|got - golden| <= atol + rtol * |golden| elementwise, NaN against a number fails.\n"
          "\n"
          "  --golden GOLDEN        a directory written by `convgate dump-ref`\n"
          "  --target T[,T2...]     run the target path instead of the reference\n"
          "                         (`convgate targets` lists them; repeatable)\n"
          "  --profiles DIR         capability profiles directory\n"
          "  --accumulate fp16|fp32 how fp16 targets accumulate reductions (default fp16)\n"
          "  --dim SYMBOL=VALUE     symbolic dimension for the target placement (default:\n"
          "                         taken from each set's inputs)\n"
          "  --outputs-from DIR     compare outputs produced elsewhere instead of running:\n"
          "                         DIR/<set>/<output>.npy (or .pb), or DIR/<set>.npz\n"
          "  --atol X, --rtol Y     tolerance (default 1e-5 and 1e-4; 2.5e-3 and 1e-3 for a\n"
          "                         target path that computes in fp16)\n"
          "  --nan-equal            NaN matches NaN\n"
          "  --tol FILE             per-output tolerances with justifications (JSON:\n"
          "                         {\"default\": {...}, \"outputs\": {NAME: {atol, rtol,\n"
          "                         nan_equal, justification}}})\n"
          "  --json                 {model_sha256, golden, target, pass, sets: [{name, pass,\n"
          "                         outputs: [{name, pass, max_abs, max_rel, cosine, ...}]}]}\n"
          "\n"
          "Exit status: 0 every output within tolerance; 1 some output is not; 2 usage or\n"
          "input error, including a golden set made for another model, a missing or\n"
          "altered golden file, or an unknown format_version.\n",
          f);
}

typedef struct verify_tol {
    char *output; /* NULL: the default entry */
    cg_tolerance tol;
    char *justification;
} verify_tol;

typedef struct verify_tols {
    cg_tolerance base;
    verify_tol *entries;
    size_t count;
} verify_tols;

static void tols_free(verify_tols *t)
{
    for (size_t i = 0; i < t->count; i++) {
        free(t->entries[i].output);
        free(t->entries[i].justification);
    }
    free(t->entries);
    t->entries = NULL;
    t->count = 0;
}

/* Fields of one tolerance object on top of *tol. */
static bool tol_fields(json_t *o, const char *path, const char *what, cg_tolerance *tol,
                       char **justification)
{
    json_t *v;
    const char *keys[] = {"atol", "rtol"};
    double *slots[] = {&tol->atol, &tol->rtol};
    if (!json_is_object(o)) {
        cli_error("verify", "%s: %s is not an object", path, what);
        return false;
    }
    for (int k = 0; k < 2; k++) {
        if (!(v = json_object_get(o, keys[k])))
            continue;
        if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
            !isfinite(json_number_value(v))) {
            cli_error("verify", "%s: %s.%s must be a finite number >= 0", path, what, keys[k]);
            return false;
        }
        *slots[k] = json_number_value(v);
    }
    if ((v = json_object_get(o, "nan_equal"))) {
        if (!json_is_boolean(v)) {
            cli_error("verify", "%s: %s.nan_equal must be true or false", path, what);
            return false;
        }
        tol->nan_equal = json_is_true(v);
    }
    if ((v = json_object_get(o, "justification"))) {
        if (!json_is_string(v)) {
            cli_error("verify", "%s: %s.justification must be a string", path, what);
            return false;
        }
        free(*justification);
        if (!(*justification = strdup(json_string_value(v)))) {
            cli_error("verify", "out of memory");
            return false;
        }
    }
    const char *key;
    json_object_foreach(o, key, v)
        if (strcmp(key, "atol") && strcmp(key, "rtol") && strcmp(key, "nan_equal") &&
            strcmp(key, "justification")) {
            cli_error("verify", "%s: %s has an unknown field '%s'", path, what, key);
            return false;
        }
    return true;
}

/* Reads a --tol file on top of t->base. */
static bool tols_load(const char *path, verify_tols *t)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), *v, *o;
    bool ok = false;
    const char *key;
    char *def_just = NULL;
    if (!root) {
        cli_error("verify", "%s: line %d: %s", path, jerr.line, jerr.text);
        return false;
    }
    if (!json_is_object(root)) {
        cli_error("verify", "%s: not a JSON object", path);
        goto done;
    }
    json_object_foreach(root, key, v)
        if (strcmp(key, "default") && strcmp(key, "outputs")) {
            cli_error("verify", "%s: unknown field '%s' (expected default, outputs)", path, key);
            goto done;
        }
    if ((v = json_object_get(root, "default")) &&
        !tol_fields(v, path, "default", &t->base, &def_just))
        goto done;
    t->base.justification = NULL;
    o = json_object_get(root, "outputs");
    if (o && !json_is_object(o)) {
        cli_error("verify", "%s: outputs is not an object", path);
        goto done;
    }
    size_t n = o ? json_object_size(o) : 0;
    t->entries = calloc(n + 1, sizeof *t->entries);
    if (!t->entries) {
        cli_error("verify", "out of memory");
        goto done;
    }
    /* entry 0 is the default (its justification prints for outputs without one) */
    t->entries[0].tol = t->base;
    t->entries[0].justification = def_just;
    def_just = NULL;
    t->count = 1;
    if (o)
        json_object_foreach(o, key, v) {
            verify_tol *e = &t->entries[t->count++];
            char what[300];
            e->tol = t->base;
            e->justification = t->entries[0].justification
                                   ? strdup(t->entries[0].justification)
                                   : NULL;
            snprintf(what, sizeof what, "outputs.%s", key);
            if (!(e->output = strdup(key)) || !tol_fields(v, path, what, &e->tol,
                                                          &e->justification))
                goto done;
        }
    ok = true;
done:
    free(def_just);
    json_decref(root);
    return ok;
}

/* The tolerance for an output (justification pointer into t). */
static cg_tolerance tol_for(const verify_tols *t, const char *output)
{
    cg_tolerance tol = t->base;
    tol.justification = NULL;
    for (size_t i = 1; i < t->count; i++)
        if (strcmp(t->entries[i].output, output) == 0) {
            tol = t->entries[i].tol;
            tol.justification = t->entries[i].justification;
            return tol;
        }
    if (t->count) {
        tol = t->entries[0].tol;
        tol.justification = t->entries[0].justification;
    }
    return tol;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return false;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= 0) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *metrics_json(const char *name, const cg_metrics *m, const cg_tolerance *tol)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "pass", json_boolean(m->pass));
    json_object_set_new(o, "count", json_integer((json_int_t)m->count));
    json_object_set_new(o, "mismatches", json_integer((json_int_t)m->mismatches));
    json_object_set_new(o, "max_abs", num(m->max_abs));
    json_object_set_new(o, "mean_abs", num(m->mean_abs));
    json_object_set_new(o, "max_rel", num(m->max_rel));
    json_object_set_new(o, "rmse", num(m->rmse));
    json_object_set_new(o, "nmse", num(m->nmse));
    json_object_set_new(o, "cosine", num(m->cosine));
    json_object_set_new(o, "pearson", num(m->pearson));
    json_object_set_new(o, "max_ulp", json_integer((json_int_t)m->max_ulp));
    json_object_set_new(o, "nan_ref", json_integer((json_int_t)m->nan_ref));
    json_object_set_new(o, "nan_target", json_integer((json_int_t)m->nan_got));
    json_object_set_new(o, "inf_ref", json_integer((json_int_t)m->inf_ref));
    json_object_set_new(o, "inf_target", json_integer((json_int_t)m->inf_got));
    json_object_set_new(o, "worst_index", json_integer((json_int_t)m->worst_index));
    json_object_set_new(o, "worst_ref", num(m->worst_ref));
    json_object_set_new(o, "worst_target", num(m->worst_got));
    json_object_set_new(o, "shape_mismatch", json_boolean(m->shape_mismatch));
    json_object_set_new(o, "dtype_mismatch", json_boolean(m->dtype_mismatch));
    json_object_set_new(o, "bit_identical", json_boolean(m->bit_identical));
    json_object_set_new(o, "atol", json_real(tol->atol));
    json_object_set_new(o, "rtol", json_real(tol->rtol));
    json_object_set_new(o, "nan_equal", json_boolean(tol->nan_equal));
    json_object_set_new(o, "justification",
                        tol->justification ? json_string(tol->justification) : json_null());
    return o;
}

static void metrics_text(const char *name, const cg_metrics *m)
{
    printf("  %-20s %s", name, m->pass ? "PASS" : "FAIL");
    if (m->shape_mismatch || m->dtype_mismatch) {
        printf("  (%s mismatch)\n", m->shape_mismatch ? "shape" : "dtype");
        return;
    }
    printf("  max_abs %.3g  max_rel %.3g  cosine %.6f", m->max_abs, m->max_rel, m->cosine);
    if (m->mismatches)
        printf("  %" PRIu64 "/%" PRIu64 " outside tolerance", m->mismatches, m->count);
    if (m->nan_ref || m->nan_got)
        printf("  NaN ref %" PRIu64 " target %" PRIu64, m->nan_ref, m->nan_got);
    if (m->worst_index >= 0 && !m->pass)
        printf("  worst [%" PRId64 "] golden %.6g got %.6g", m->worst_index, m->worst_ref,
               m->worst_got);
    printf("\n");
}

/* Symbolic dims of the model's inputs bound from a set's golden inputs; the
 * --dim ones (first in dims) win. Returns the new count. */
static size_t bind_dims(const cg_graph *g, const cg_golden_set *gs, cg_dim_binding *dims,
                        size_t fixed, size_t cap)
{
    size_t n = fixed;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        const cg_golden_tensor *gt = NULL;
        for (size_t k = 0; k < gs->input_count && !gt; k++)
            if (g->inputs[i].name && strcmp(gs->inputs[k].name, g->inputs[i].name) == 0)
                gt = &gs->inputs[k];
        if (!gt || !t || t->kind != CG_TYPE_TENSOR || !t->shape ||
            t->shape->rank != (size_t)gt->rank)
            continue;
        for (size_t d = 0; d < t->shape->rank; d++) {
            const char *sym = t->shape->dims[d].param;
            bool seen = false;
            if (t->shape->dims[d].has_value || !sym || !*sym)
                continue;
            for (size_t k = 0; k < n && !seen; k++)
                seen = strcmp(dims[k].symbol, sym) == 0;
            if (!seen && n < cap) {
                dims[n].symbol = sym;
                dims[n++].value = gt->dims[d];
            }
        }
    }
    return n;
}

static bool same_dims(const cg_dim_binding *a, size_t na, const cg_dim_binding *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].symbol, b[i].symbol) != 0 || a[i].value != b[i].value)
            return false;
    return true;
}

typedef struct verify_args {
    const char *model_path, *golden_dir, *outputs_from, *tol_file, *profiles;
    const char *target_args[VERIFY_MAX_TARGETS];
    size_t target_arg_count;
    cg_dim_binding dims[VERIFY_MAX_DIMS];
    char *dim_names[VERIFY_MAX_DIMS];
    size_t dim_count;
    double atol, rtol;
    bool atol_given, rtol_given, nan_equal, json, accumulate_fp32;
} verify_args;

static int parse_args(int argc, char **argv, verify_args *a)
{
    static const struct option longopts[] = {{"golden", required_argument, NULL, 'g'},
                                              {"target", required_argument, NULL, 't'},
                                              {"profiles", required_argument, NULL, 'p'},
                                              {"accumulate", required_argument, NULL, 'A'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"outputs-from", required_argument, NULL, 'O'},
                                              {"atol", required_argument, NULL, 'a'},
                                              {"rtol", required_argument, NULL, 'r'},
                                              {"nan-equal", no_argument, NULL, 'n'},
                                              {"tol", required_argument, NULL, 'T'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': a->golden_dir = optarg; break;
        case 'p': a->profiles = optarg; break;
        case 'O': a->outputs_from = optarg; break;
        case 'T': a->tol_file = optarg; break;
        case 'n': a->nan_equal = true; break;
        case 'j': a->json = true; break;
        case 't':
            if (a->target_arg_count == VERIFY_MAX_TARGETS) {
                cli_error("verify", "too many --target options");
                return CG_EXIT_ERROR;
            }
            a->target_args[a->target_arg_count++] = optarg;
            break;
        case 'A':
            if (strcmp(optarg, "fp32") != 0 && strcmp(optarg, "fp16") != 0) {
                cli_error("verify", "--accumulate takes fp16 or fp32");
                return CG_EXIT_ERROR;
            }
            a->accumulate_fp32 = strcmp(optarg, "fp32") == 0;
            break;
        case 'a':
        case 'r':
            if (!parse_double(optarg, c == 'a' ? &a->atol : &a->rtol)) {
                cli_error("verify", "--%s needs a finite number >= 0", c == 'a' ? "atol" : "rtol");
                return CG_EXIT_ERROR;
            }
            *(c == 'a' ? &a->atol_given : &a->rtol_given) = true;
            break;
        case 'd': {
            const char *eq = strchr(optarg, '=');
            char *end;
            errno = 0;
            long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
            if (!eq || eq == optarg || errno || !eq[1] || *end || v < 0) {
                cli_error("verify", "--dim needs SYMBOL=VALUE with VALUE >= 0");
                return CG_EXIT_ERROR;
            }
            if (a->dim_count == VERIFY_MAX_DIMS / 2) {
                cli_error("verify", "too many --dim options");
                return CG_EXIT_ERROR;
            }
            char *sym = malloc((size_t)(eq - optarg) + 1);
            if (!sym) {
                cli_error("verify", "out of memory");
                return CG_EXIT_ERROR;
            }
            memcpy(sym, optarg, (size_t)(eq - optarg));
            sym[eq - optarg] = '\0';
            a->dim_names[a->dim_count] = sym;
            a->dims[a->dim_count].symbol = sym;
            a->dims[a->dim_count++].value = (int64_t)v;
            break;
        }
        case 'h': verify_usage(stdout); return -1;
        default: verify_usage(stderr); return CG_EXIT_ERROR;
        }
    }
    if (optind + 1 != argc) {
        cli_error("verify", optind >= argc ? "no model given" : "one model at a time");
        verify_usage(stderr);
        return CG_EXIT_ERROR;
    }
    a->model_path = argv[optind];
    if (!a->golden_dir) {
        cli_error("verify", "--golden GOLDEN is required");
        return CG_EXIT_ERROR;
    }
    if (a->tol_file && (a->atol_given || a->rtol_given)) {
        cli_error("verify", "give --tol FILE or --atol/--rtol, not both");
        return CG_EXIT_ERROR;
    }
    if (a->outputs_from && a->target_arg_count) {
        cli_error("verify", "--outputs-from compares outputs produced elsewhere; it takes no "
                  "--target");
        return CG_EXIT_ERROR;
    }
    if (strcmp(a->model_path, "-") == 0) {
        cli_error("verify", "the model must be a file (its sha256 is checked)");
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* Resolves the --target lists to registry targets. */
static bool resolve_targets(const verify_args *a, const cg_target_registry *reg,
                            const cg_target **targets, size_t *count, char *label, size_t cap)
{
    cg_error err;
    size_t used = 0;
    label[0] = '\0';
    *count = 0;
    for (size_t i = 0; i < a->target_arg_count; i++) {
        char *list = strdup(a->target_args[i]);
        if (!list) {
            cli_error("verify", "out of memory");
            return false;
        }
        for (char *tok = list, *next; tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            cg_error_clear(&err);
            const cg_target *t = *tok ? cg_target_registry_find(reg, tok, &err) : NULL;
            bool dup = false;
            for (size_t k = 0; t && k < *count; k++)
                dup = dup || targets[k] == t;
            if (!t || dup || *count == VERIFY_MAX_TARGETS) {
                cli_error("verify", "--target %s: %s", a->target_args[i],
                          !*tok ? "empty target name"
                          : !t  ? (err.msg[0] ? err.msg : "unknown target")
                          : dup ? "target given twice"
                                : "too many targets");
                free(list);
                return false;
            }
            targets[(*count)++] = t;
            int w = snprintf(label + used, cap - used, "%s%s", used ? "," : "", t->name);
            if (w > 0 && (size_t)w < cap - used)
                used += (size_t)w;
        }
        free(list);
    }
    return true;
}

int cmd_verify(int argc, char **argv)
{
    verify_args a;
    verify_tols tols;
    cg_error err;
    int rc = CG_EXIT_ERROR;
    cg_golden *g = NULL;
    cg_model *model = NULL;
    cg_runtime *rt = NULL;
    cg_target_path *path = NULL;
    cg_target_registry *reg = NULL;
    const cg_target *targets[VERIFY_MAX_TARGETS];
    size_t target_count = 0;
    char target_label[512];
    cg_dim_binding path_dims[VERIFY_MAX_DIMS], set_dims[VERIFY_MAX_DIMS];
    size_t path_dim_count = 0;
    cg_named_value *ins = NULL, *outs = NULL;
    size_t out_count = 0, in_count = 0;
    cg_value **golden_out = NULL, **foreign = NULL;
    const char **out_names = NULL;
    cg_metrics *merged = NULL;
    cg_tolerance *out_tols = NULL;
    size_t merged_count = 0;
    json_t *root = NULL, *jsets = NULL;
    bool pass = true, all_identical = true, reduced = false;
    size_t failed_outputs = 0, compared = 0;
    memset(&a, 0, sizeof a);
    memset(&tols, 0, sizeof tols);
    cg_error_clear(&err);

    rc = parse_args(argc, argv, &a);
    if (rc != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    rc = CG_EXIT_ERROR;

    /* 1. the golden set itself: manifest, every file, the model's hash */
    if (cg_golden_open(a.golden_dir, &g, &err) != CG_OK ||
        cg_golden_check_model(g, a.model_path, &err) != CG_OK) {
        cli_error("verify", "%s", err.msg);
        goto done;
    }

    /* 2. what produces the outputs */
    snprintf(target_label, sizeof target_label, "reference");
    if (!a.outputs_from) {
        if ((model = cli_load_model("verify", a.model_path, NULL)) == NULL)
            goto done;
        if (!model->graph) {
            cli_error("verify", "'%s' has no graph", a.model_path);
            goto done;
        }
        if (a.target_arg_count) {
            if (cg_target_registry_load(a.profiles, &reg, &err) != CG_OK) {
                cli_error("verify", "%s", err.msg);
                goto done;
            }
            if (!resolve_targets(&a, reg, targets, &target_count, target_label,
                                 sizeof target_label))
                goto done;
        } else {
            cg_runtime_options ro;
            cg_runtime_options_default(&ro);
            if (cg_runtime_init(model, &ro, &rt, &err) != CG_OK) {
                cli_error("verify", "%s", err.msg);
                goto done;
            }
        }
    } else {
        snprintf(target_label, sizeof target_label, "outputs from %s", a.outputs_from);
    }

    /* 3. run (or read) every set and compare */
    size_t max_in = 1, max_out = 1;
    for (size_t s = 0; s < g->set_count; s++) {
        if (g->sets[s].input_count > max_in)
            max_in = g->sets[s].input_count;
        if (g->sets[s].output_count > max_out)
            max_out = g->sets[s].output_count;
    }
    ins = calloc(max_in, sizeof *ins);
    golden_out = calloc(max_out, sizeof *golden_out);
    foreign = calloc(max_out, sizeof *foreign);
    out_names = calloc(max_out, sizeof *out_names);
    merged = calloc(max_out, sizeof *merged);
    out_tols = calloc(max_out, sizeof *out_tols);
    if (!ins || !golden_out || !foreign || !out_names || !merged || !out_tols) {
        cli_error("verify", "out of memory");
        goto done;
    }
    if (a.json) {
        root = json_object();
        jsets = json_array();
    }
    for (size_t s = 0; s < g->set_count; s++) {
        const cg_golden_set *gs = &g->sets[s];
        json_t *jouts = a.json ? json_array() : NULL;
        bool set_pass = true;
        if (path || target_count) {
            memcpy(set_dims, a.dims, a.dim_count * sizeof *a.dims);
            size_t n = bind_dims(model->graph, gs, set_dims, a.dim_count, VERIFY_MAX_DIMS);
            if (!path || !same_dims(set_dims, n, path_dims, path_dim_count)) {
                cg_target_path_options po;
                cg_target_path_free(path);
                path = NULL;
                memcpy(path_dims, set_dims, n * sizeof *set_dims);
                path_dim_count = n;
                memset(&po, 0, sizeof po);
                po.targets = targets;
                po.target_count = target_count;
                po.dims = path_dims;
                po.dim_count = path_dim_count;
                po.accumulate_fp32 = a.accumulate_fp32;
                if (cg_target_path_init(model, &po, &path, &err) != CG_OK) {
                    cli_error("verify", "target path (%s): %s", target_label, err.msg);
                    goto done;
                }
                reduced = reduced || cg_target_path_reduced_precision(path);
            }
        }
        /* tolerances: known once the path's precision is */
        if (s == 0) {
            cg_tolerance_default(&tols.base, reduced);
            if (a.atol_given)
                tols.base.atol = a.atol;
            if (a.rtol_given)
                tols.base.rtol = a.rtol;
            tols.base.nan_equal = a.nan_equal;
            if (a.tol_file && !tols_load(a.tol_file, &tols))
                goto done;
            merged_count = gs->output_count;
        }
        for (size_t k = 0; k < gs->output_count; k++) {
            out_names[k] = gs->outputs[k].name;
            if (cg_golden_load(g, &gs->outputs[k], 0, &golden_out[k], &err) != CG_OK) {
                cli_error("verify", "%s", err.msg);
                goto done;
            }
        }
        if (a.outputs_from) {
            if (cg_golden_read_set(a.outputs_from, gs->name, out_names, gs->output_count, false,
                                   0, foreign, &err) != CG_OK) {
                cli_error("verify", "--outputs-from: %s", err.msg);
                goto done;
            }
        } else {
            in_count = gs->input_count;
            for (size_t k = 0; k < in_count; k++) {
                ins[k].name = gs->inputs[k].name;
                if (cg_golden_load(g, &gs->inputs[k], 0, &ins[k].value, &err) != CG_OK) {
                    cli_error("verify", "%s", err.msg);
                    goto done;
                }
            }
            cg_status st = path ? cg_target_path_run(path, ins, in_count, &outs, &out_count, &err)
                                : cg_runtime_run(rt, ins, in_count, &outs, &out_count, &err);
            if (st != CG_OK) {
                cli_error("verify", "set '%s' on %s: %s", gs->name, target_label, err.msg);
                rc = st == CG_USAGE ? CG_EXIT_ERROR : CG_EXIT_FAIL;
                goto done;
            }
        }
        if (!a.json)
            printf("set '%s'\n", gs->name);
        for (size_t k = 0; k < gs->output_count; k++) {
            const cg_value *got = NULL;
            cg_metrics m;
            cg_tolerance tol = tol_for(&tols, gs->outputs[k].name);
            if (a.outputs_from)
                got = foreign[k];
            for (size_t j = 0; !got && j < out_count; j++)
                if (outs[j].name && strcmp(outs[j].name, gs->outputs[k].name) == 0)
                    got = outs[j].value;
            if (!got) {
                cli_error("verify", "set '%s': %s produced no output '%s' (the golden set has "
                          "it)", gs->name, target_label, gs->outputs[k].name);
                goto done;
            }
            if (got->kind != CG_VALUE_TENSOR) {
                cli_error("verify", "set '%s': output '%s' is not a tensor", gs->name,
                          gs->outputs[k].name);
                goto done;
            }
            if (cg_compare_tensors(&golden_out[k]->tensor, &got->tensor, &tol, &m, &err) !=
                CG_OK) {
                cli_error("verify", "set '%s', output '%s': %s", gs->name, gs->outputs[k].name,
                          err.msg);
                goto done;
            }
            compared++;
            all_identical = all_identical && m.bit_identical;
            if (!m.pass) {
                failed_outputs++;
                set_pass = false;
            }
            /* merged over sets, for outputs every set has in the same slot */
            if (k < merged_count && strcmp(g->sets[0].outputs[k].name, gs->outputs[k].name) == 0) {
                m.worst_sample = (int64_t)s;
                if (s == 0) {
                    merged[k] = m;
                    out_tols[k] = tol;
                } else {
                    cg_metrics_merge(&merged[k], &m);
                }
            }
            if (jouts)
                json_array_append_new(jouts, metrics_json(gs->outputs[k].name, &m, &tol));
            else
                metrics_text(gs->outputs[k].name, &m);
        }
        pass = pass && set_pass;
        if (jsets)
            json_array_append_new(jsets, json_pack("{s:s, s:b, s:o}", "name", gs->name, "pass",
                                                   set_pass, "outputs", jouts));
        for (size_t k = 0; k < gs->output_count; k++) {
            cg_value_free(golden_out[k]);
            cg_value_free(foreign[k]);
            golden_out[k] = foreign[k] = NULL;
        }
        for (size_t k = 0; k < in_count; k++) {
            cg_value_free(ins[k].value);
            ins[k].value = NULL;
        }
        in_count = 0;
        if (outs)
            cg_runtime_free_outputs(outs, out_count);
        outs = NULL;
        out_count = 0;
    }

    /* a reduced-precision path whose every output equals fp32 bit for bit
     * most likely never ran there */
    bool silent_fallback = reduced && compared && all_identical;
    if (a.json) {
        json_t *jmerged = json_array(), *warnings = json_array();
        for (size_t k = 0; k < merged_count; k++)
            json_array_append_new(jmerged, metrics_json(g->sets[0].outputs[k].name, &merged[k],
                                                        &out_tols[k]));
        if (silent_fallback)
            json_array_append_new(warnings, json_string("the target path computes in reduced "
                                                        "precision but every output is "
                                                        "bit-identical to fp32: it probably did "
                                                        "not run there"));
        json_object_set_new(root, "model", json_string(a.model_path));
        json_object_set_new(root, "model_sha256", json_string(g->model_sha256));
        json_object_set_new(root, "golden", json_string(a.golden_dir));
        json_object_set_new(root, "golden_convgate_version", json_string(g->convgate_version));
        json_object_set_new(root, "golden_created", json_string(g->created));
        json_object_set_new(root, "target", json_string(target_label));
        json_object_set_new(root, "reduced_precision", json_boolean(reduced));
        json_object_set_new(root, "pass", json_boolean(pass));
        json_object_set_new(root, "sets", jsets);
        jsets = NULL;
        json_object_set_new(root, "outputs", jmerged);
        json_object_set_new(root, "warnings", warnings);
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                          JSON_REAL_PRECISION(9));
        if (!text || puts(text) < 0) {
            free(text);
            cli_error("verify", "could not write the JSON report");
            goto done;
        }
        free(text);
    } else {
        for (size_t k = 0; k < merged_count; k++)
            if (out_tols[k].justification)
                printf("tolerance for '%s': atol %g rtol %g: %s\n", g->sets[0].outputs[k].name,
                       out_tols[k].atol, out_tols[k].rtol, out_tols[k].justification);
        if (silent_fallback)
            printf("warning: %s computes in reduced precision but every output is "
                   "bit-identical to fp32: it probably did not run there\n", target_label);
        printf("golden %s: %zu set%s, model sha256 %.12s..., made by convgate %s at %s\n",
               a.golden_dir, g->set_count, g->set_count == 1 ? "" : "s", g->model_sha256,
               g->convgate_version, g->created);
        printf("verdict: %s on %s (%zu/%zu outputs within tolerance)\n", pass ? "PASS" : "FAIL",
               target_label, compared - failed_outputs, compared);
    }
    rc = pass ? CG_EXIT_OK : CG_EXIT_FAIL;
done:
    json_decref(jsets);
    json_decref(root);
    if (outs)
        cg_runtime_free_outputs(outs, out_count);
    for (size_t k = 0; ins && k < in_count; k++)
        cg_value_free(ins[k].value);
    if (golden_out && foreign && g) {
        size_t max = 0;
        for (size_t s = 0; s < g->set_count; s++)
            if (g->sets[s].output_count > max)
                max = g->sets[s].output_count;
        for (size_t k = 0; k < max; k++) {
            cg_value_free(golden_out[k]);
            cg_value_free(foreign[k]);
        }
    }
    free(ins);
    free(golden_out);
    free(foreign);
    free(out_names);
    free(merged);
    free(out_tols);
    tols_free(&tols);
    cg_target_path_free(path);
    cg_target_registry_free(reg);
    cg_runtime_free(rt);
    cg_model_free(model);
    cg_golden_free(g);
    for (size_t i = 0; i < a.dim_count; i++)
        free(a.dim_names[i]);
    return rc;
}
