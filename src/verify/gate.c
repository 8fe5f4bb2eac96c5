/*
 * The three gates (convgate/gate.h): converts, runs where intended,
 * matches. Each gate fills its part of the report; a failed gate leaves
 * the later ones NOT_RUN. Gate 3 runs the reference runtime and the
 * target path on every sample, merges each output's metrics over the
 * samples, and on a failure bisects the first failing sample.
 *
 * Also the sample sets shared with `convgate bisect`: input files from a
 * directory (three layouts) or seeded random inputs.
 */
#include "convgate/gate.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "convgate/assign.h"
#include "convgate/golden.h"
#include "convgate/targetpath.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"

/* --- samples ------------------------------------------------------------------ */

static char *str_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

static bool is_initializer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return true;
    return false;
}

/* Graph inputs a sample must feed, in graph order. */
static size_t fed_inputs(const cg_graph *g, const cg_value_info **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && !is_initializer(g, g->inputs[i].name) && n < cap)
            out[n++] = &g->inputs[i];
    return n;
}

static void sample_free(cg_sample *s)
{
    for (size_t i = 0; i < s->input_count; i++)
        cg_value_free(s->inputs[i].value);
    for (size_t i = 0; i < s->expected_count; i++)
        cg_value_free(s->expected[i].value);
    free(s->inputs);
    free(s->expected);
    free(s->label);
    memset(s, 0, sizeof *s);
}

void cg_sample_set_free(cg_sample_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        sample_free(&s->samples[i]);
    free(s->samples);
    memset(s, 0, sizeof *s);
}

/* Appends an empty sample with room for n inputs. */
static cg_sample *set_add(cg_sample_set *set, const char *label, size_t n, cg_error *err)
{
    cg_sample *grown = realloc(set->samples, (set->count + 1) * sizeof *grown);
    if (!grown) {
        cg_error_set(err, CG_NOMEM, "out of memory loading samples");
        return NULL;
    }
    set->samples = grown;
    cg_sample *s = &set->samples[set->count];
    memset(s, 0, sizeof *s);
    s->label = str_dup(label);
    s->inputs = calloc(n ? n : 1, sizeof *s->inputs);
    if (!s->label || !s->inputs) {
        free(s->label);
        free(s->inputs);
        cg_error_set(err, CG_NOMEM, "out of memory loading samples");
        return NULL;
    }
    set->count++;
    return s;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Loads DIR/STEM.npy or DIR/STEM.pb into slot; false (nothing set) when
 * neither exists. */
static cg_status load_stem(const char *dir, const char *stem, const cg_value_info *vi,
                           size_t max_bytes, cg_named_value *slot, bool *found, cg_error *err)
{
    static const char *const exts[] = {".npy", ".pb"};
    char path[4096];
    *found = false;
    for (size_t e = 0; e < 2; e++) {
        int n = snprintf(path, sizeof path, "%s/%s%s", dir, stem, exts[e]);
        if (n < 0 || (size_t)n >= sizeof path)
            return cg_error_set(err, CG_USAGE, "input path too long: %s/%s", dir, stem);
        if (!file_exists(path))
            continue;
        cg_status st = cg_io_load_value(path, vi->type, max_bytes, &slot->value, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "input '%s': ", vi->name);
            return st;
        }
        slot->name = vi->name;
        *found = true;
        return CG_OK;
    }
    return CG_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of DIR's entries (malloc'd). */
static cg_status list_dir(const char *dir, char ***names, size_t *count, cg_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0, cap = 0;
    if (!d)
        return cg_error_set(err, CG_IO, "cannot open input directory '%s': %s", dir,
                            strerror(errno));
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **g = realloc(v, nc * sizeof *g);
            if (!g)
                goto nomem;
            v = g;
            cap = nc;
        }
        if (!(v[n] = str_dup(de->d_name)))
            goto nomem;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_str);
    *names = v;
    *count = n;
    return CG_OK;
nomem:
    closedir(d);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return cg_error_set(err, CG_NOMEM, "out of memory listing '%s'", dir);
}

#define GATE_MAX_INPUTS 256

cg_status cg_samples_load_dir(const cg_model *model, const char *dir, size_t max_bytes,
                              cg_sample_set *out, cg_error *err)
{
    const cg_value_info *need[GATE_MAX_INPUTS];
    char **names = NULL;
    size_t name_count = 0, n;
    cg_status st;
    char sub[4096], stem[1024];
    bool found;
    memset(out, 0, sizeof *out);
    if (!model || !model->graph || !dir)
        return cg_error_set(err, CG_USAGE, "cg_samples_load_dir: missing model or directory");
    n = fed_inputs(model->graph, need, GATE_MAX_INPUTS);
    if ((st = list_dir(dir, &names, &name_count, err)) != CG_OK)
        return st;

    /* layout 1: ONNX test data sets */
    for (size_t i = 0; i < name_count; i++) {
        if (strncmp(names[i], "test_data_set_", 14) != 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
        cg_sample *s = set_add(out, names[i], n, err);
        if (!s) {
            st = CG_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < n; k++) {
            snprintf(stem, sizeof stem, "input_%zu", k);
            if ((st = load_stem(sub, stem, need[k], max_bytes, &s->inputs[k], &found, err)) !=
                CG_OK)
                goto fail;
            if (!found) {
                st = cg_error_set(err, CG_USAGE, "%s: no input_%zu.pb for graph input '%s'",
                                  sub, k, need[k]->name);
                goto fail;
            }
            s->input_count++;
        }
    }
    if (out->count)
        goto done;

    /* layout 2: DIR/<set>/<input>.npy or DIR/<set>.npz */
    {
        char **sets = NULL;
        size_t set_count = 0;
        const char *in_names[GATE_MAX_INPUTS];
        cg_value *vals[GATE_MAX_INPUTS];
        bool any = false;
        for (size_t k = 0; k < n; k++)
            in_names[k] = need[k]->name;
        for (size_t i = 0; i < name_count && !any; i++) {
            size_t len = strlen(names[i]);
            struct stat sb;
            snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
            any = (len > 4 && strcmp(names[i] + len - 4, ".npz") == 0) ||
                  (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode));
        }
        if (any && (st = cg_golden_list_sets(dir, &sets, &set_count, err)) != CG_OK)
            goto fail;
        for (size_t i = 0; i < set_count && st == CG_OK; i++) {
            cg_sample *s = set_add(out, sets[i], n, err);
            if (!s) {
                st = CG_NOMEM;
                break;
            }
            st = cg_golden_read_set(dir, sets[i], in_names, n, false, max_bytes, vals, err);
            for (size_t k = 0; st == CG_OK && k < n; k++) {
                s->inputs[k].name = need[k]->name;
                s->inputs[k].value = vals[k];
                s->input_count++;
            }
        }
        cg_golden_names_free(sets, set_count);
        if (st != CG_OK)
            goto fail;
    }
    if (out->count)
        goto done;

    /* layout 3: <input>_<N>.npy|.pb, N taken from the first input's files */
    if (n) {
        size_t len = strlen(need[0]->name);
        for (size_t i = 0; i < name_count; i++) {
            const char *nm = names[i];
            if (strncmp(nm, need[0]->name, len) != 0 || nm[len] != '_')
                continue;
            const char *num = nm + len + 1, *p = num;
            while (*p >= '0' && *p <= '9')
                p++;
            if (p == num || (strcmp(p, ".npy") != 0 && strcmp(p, ".pb") != 0) || p - num > 9)
                continue;
            char label[32];
            snprintf(label, sizeof label, "%.*s", (int)(p - num), num);
            cg_sample *s = set_add(out, nm, n, err);
            if (!s) {
                st = CG_NOMEM;
                goto fail;
            }
            for (size_t k = 0; k < n; k++) {
                snprintf(stem, sizeof stem, "%s_%s", need[k]->name, label);
                if ((st = load_stem(dir, stem, need[k], max_bytes, &s->inputs[k], &found,
                                    err)) != CG_OK)
                    goto fail;
                if (!found) {
                    st = cg_error_set(err, CG_USAGE,
                                      "%s: set %s has %s but no %s.npy or .pb for input '%s'",
                                      dir, label, nm, stem, need[k]->name);
                    goto fail;
                }
                s->input_count++;
            }
        }
        if (out->count)
            goto done;
    }

    /* layout 4: one set, <input>.npy|.pb */
    {
        cg_sample *s = set_add(out, dir, n, err);
        if (!s) {
            st = CG_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < n; k++) {
            if ((st = load_stem(dir, need[k]->name, need[k], max_bytes, &s->inputs[k], &found,
                                err)) != CG_OK)
                goto fail;
            if (!found) {
                st = cg_error_set(err, CG_USAGE,
                                  "%s: no input sets found for graph input '%s' (expected "
                                  "test_data_set_N/input_K.pb, %s_N.npy or %s.npy)",
                                  dir, need[k]->name, need[k]->name, need[k]->name);
                goto fail;
            }
            s->input_count++;
        }
    }
done:
    st = CG_OK;
fail:
    for (size_t i = 0; i < name_count; i++)
        free(names[i]);
    free(names);
    if (st != CG_OK)
        cg_sample_set_free(out);
    return st;
}

/* A random tensor for one declared input. */
static cg_status random_input(const cg_value_info *vi, cg_rng *rng, const cg_dim_binding *dims,
                              size_t dim_count, size_t max_bytes, cg_value **out, cg_error *err)
{
    const cg_type *t = vi->type;
    int64_t shape[CG_MAX_RANK];
    cg_tensor tensor;
    memset(&tensor, 0, sizeof tensor);
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type || !t->shape)
        return cg_error_set(err, CG_USAGE,
                            "input '%s': random samples need a tensor type with a shape; give "
                            "input files instead", vi->name);
    if (t->shape->rank > CG_MAX_RANK)
        return cg_error_set(err, CG_USAGE, "input '%s': rank %zu above %d", vi->name,
                            t->shape->rank, CG_MAX_RANK);
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        shape[d] = 1; /* unbound symbols, as cg_type_env_build does */
        if (dim->has_value) {
            if (dim->value < 0)
                return cg_error_set(err, CG_USAGE, "input '%s': dimension %zu is negative",
                                    vi->name, d);
            shape[d] = dim->value;
        } else if (dim->param) {
            for (size_t k = 0; k < dim_count; k++)
                if (strcmp(dims[k].symbol, dim->param) == 0)
                    shape[d] = dims[k].value;
        }
    }
    cg_status st = cg_tensor_alloc(&tensor, (cg_dtype)t->elem_type, (int)t->shape->rank,
                                      shape, max_bytes, err);
    if (st == CG_OK)
        st = cg_io_random_fill(&tensor, rng, err);
    if (st == CG_OK)
        st = cg_value_from_tensor(&tensor, out, err);
    if (st != CG_OK) {
        cg_tensor_release(&tensor);
        cg_error_prefix(err, "input '%s': ", vi->name);
    }
    return st;
}

cg_status cg_samples_random(const cg_model *model, size_t count, uint64_t seed,
                            const cg_dim_binding *dims, size_t dim_count, size_t max_bytes,
                            cg_sample_set *out, cg_error *err)
{
    const cg_value_info *need[GATE_MAX_INPUTS];
    cg_rng rng;
    cg_status st = CG_OK;
    memset(out, 0, sizeof *out);
    if (!model || !model->graph || count == 0)
        return cg_error_set(err, CG_USAGE, "cg_samples_random: no model or zero samples");
    size_t n = fed_inputs(model->graph, need, GATE_MAX_INPUTS);
    cg_rng_seed(&rng, seed);
    for (size_t i = 0; i < count && st == CG_OK; i++) {
        char label[64];
        snprintf(label, sizeof label, "random #%zu (seed %" PRIu64 ")", i, seed);
        cg_sample *s = set_add(out, label, n, err);
        if (!s) {
            st = CG_NOMEM;
            break;
        }
        for (size_t k = 0; k < n && st == CG_OK; k++) {
            st = random_input(need[k], &rng, dims, dim_count, max_bytes, &s->inputs[k].value,
                              err);
            if (st == CG_OK) {
                s->inputs[k].name = need[k]->name;
                s->input_count++;
            }
        }
    }
    if (st != CG_OK)
        cg_sample_set_free(out);
    return st;
}

/* The value of `name` among a golden set's tensors, loaded (NULL slot when
 * the set lacks it: an error for the caller to name). */
static cg_status golden_value(const cg_golden *g, const cg_golden_tensor *ts, size_t count,
                              const char *name, const char *set, const char *what,
                              size_t max_bytes, cg_named_value *slot, cg_error *err)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(ts[i].name, name) == 0) {
            slot->name = name;
            return cg_golden_load(g, &ts[i], max_bytes, &slot->value, err);
        }
    return cg_error_set(err, CG_INVALID, "golden set '%s' has no %s '%s' of the model", set,
                        what, name);
}

cg_status cg_samples_load_golden(const cg_model *model, const char *model_path, const char *dir,
                                 size_t max_bytes, cg_sample_set *out, cg_error *err)
{
    const cg_value_info *need[GATE_MAX_INPUTS];
    cg_golden *g = NULL;
    cg_status st;
    memset(out, 0, sizeof *out);
    if (!model || !model->graph || !dir || !model_path)
        return cg_error_set(err, CG_USAGE, "cg_samples_load_golden: missing model or directory");
    size_t n = fed_inputs(model->graph, need, GATE_MAX_INPUTS);
    const cg_graph *gr = model->graph;
    if ((st = cg_golden_open(dir, &g, err)) != CG_OK ||
        (st = cg_golden_check_model(g, model_path, err)) != CG_OK)
        goto done;
    if (!g->set_count) {
        st = cg_error_set(err, CG_INVALID, "golden set %s holds no input sets", dir);
        goto done;
    }
    for (size_t i = 0; i < g->set_count && st == CG_OK; i++) {
        const cg_golden_set *gs = &g->sets[i];
        cg_sample *s = set_add(out, gs->name, n, err);
        if (!s) {
            st = CG_NOMEM;
            break;
        }
        s->expected = calloc(gr->output_count ? gr->output_count : 1, sizeof *s->expected);
        if (!s->expected) {
            st = cg_error_set(err, CG_NOMEM, "out of memory loading %s", dir);
            break;
        }
        for (size_t k = 0; k < n && st == CG_OK; k++)
            if ((st = golden_value(g, gs->inputs, gs->input_count, need[k]->name, gs->name,
                                   "input", max_bytes, &s->inputs[k], err)) == CG_OK)
                s->input_count++;
        for (size_t k = 0; k < gr->output_count && st == CG_OK; k++)
            if ((st = golden_value(g, gs->outputs, gs->output_count, gr->outputs[k].name,
                                   gs->name, "output", max_bytes, &s->expected[k], err)) ==
                CG_OK)
                s->expected_count++;
    }
done:
    cg_golden_free(g);
    if (st != CG_OK)
        cg_sample_set_free(out);
    return st;
}

/* --- gates ----------------------------------------------------------------------- */

const char *cg_gate_state_name(cg_gate_state s)
{
    switch (s) {
    case CG_GATE_PASS: return "PASS";
    case CG_GATE_FAIL: return "FAIL";
    case CG_GATE_NOT_RUN: break;
    }
    return "not run";
}

/* Gate 1: the checker. */
static cg_status gate_converts(const cg_model *model, cg_gate_report *r, cg_error *err)
{
    cg_check_report rep;
    cg_error cerr;
    cg_error_clear(&cerr);
    cg_status st = cg_check_model(model, NULL, &rep, &cerr);
    r->check_errors = rep.error_count;
    r->check_warnings = rep.warning_count;
    if (st == CG_NOMEM || st == CG_USAGE) {
        cg_check_report_free(&rep);
        return cg_error_set(err, st, "gate 1: %s", cerr.msg);
    }
    if (rep.error_count) {
        const cg_check_problem *p = NULL;
        for (size_t i = 0; i < rep.count && !p; i++)
            if (rep.problems[i].severity == CG_CHECK_ERROR)
                p = &rep.problems[i];
        r->converts = CG_GATE_FAIL;
        snprintf(r->converts_detail, sizeof r->converts_detail,
                 "%zu error%s; first: [%.60s] %.200s: %.200s", rep.error_count,
                 rep.error_count == 1 ? "" : "s", p ? p->rule : "?", p ? p->where : "?",
                 p ? p->message : cerr.msg);
    } else {
        r->converts = CG_GATE_PASS;
        snprintf(r->converts_detail, sizeof r->converts_detail, "0 errors, %zu warning%s",
                 rep.warning_count, rep.warning_count == 1 ? "" : "s");
    }
    cg_check_report_free(&rep);
    return CG_OK;
}

/* Reference time per node, measured between observer calls. */
typedef struct node_timer {
    const cg_graph *g;
    double *seconds;
    struct timespec last;
} node_timer;

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static cg_status timer_observe(void *user, const cg_node *node, const char *name,
                               const cg_value *value)
{
    node_timer *t = user;
    struct timespec now;
    (void)name;
    (void)value;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (node >= t->g->nodes && node < t->g->nodes + t->g->node_count)
        t->seconds[node - t->g->nodes] += ts_diff(&t->last, &now);
    t->last = now;
    return CG_OK;
}

/* Share of the reference run's time spent in nodes the assignment puts on
 * a target (-1 when the run fails: coverage is then unknown). */
static double time_coverage(const cg_model *model, const cg_assignment *a, const cg_sample *s,
                            size_t max_alloc)
{
    node_timer t = {model->graph, NULL, {0, 0}};
    cg_runtime_options ro;
    cg_runtime *rt = NULL;
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    double cover = -1, total = 0, on = 0;
    t.seconds = calloc(model->graph->node_count ? model->graph->node_count : 1, sizeof(double));
    if (!t.seconds)
        return -1;
    cg_runtime_options_default(&ro);
    ro.max_alloc_bytes = max_alloc;
    ro.observe = timer_observe;
    ro.observe_user = &t;
    if (cg_runtime_init(model, &ro, &rt, NULL) == CG_OK) {
        clock_gettime(CLOCK_MONOTONIC, &t.last);
        if (cg_runtime_run(rt, s->inputs, s->input_count, &outs, &out_count, NULL) == CG_OK) {
            cg_runtime_free_outputs(outs, out_count);
            for (size_t v = 0; v < model->graph->node_count; v++) {
                total += t.seconds[v];
                if (a->owner[v] != CG_OWNER_CPU)
                    on += t.seconds[v];
            }
            cover = total > 0 ? on / total : 0;
        }
    }
    cg_runtime_free(rt);
    free(t.seconds);
    return cover;
}

/* Gate 2: placement. */
static cg_status gate_runs(const cg_model *model, const cg_gate_options *opt, cg_gate_report *r,
                           cg_error *err)
{
    cg_type_env *types = NULL;
    cg_assignment *a = NULL;
    cg_error terr;
    cg_status st;
    char label[128], msg[1024];
    const cg_graph *g = model->graph;
    cg_error_clear(&terr);
    r->runs = CG_GATE_FAIL;
    r->node_count = g->node_count;
    r->time_coverage = -1;
    st = cg_type_env_build(model, opt->dims, opt->dim_count, &types, &terr);
    if (st == CG_NOMEM) {
        cg_error_set(err, st, "gate 2: %s", terr.msg);
        goto done;
    }
    if (st != CG_OK) {
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "the reference runtime cannot run the model: %.400s", terr.msg);
        st = CG_OK;
        goto done;
    }
    if ((st = cg_assign(model, types, opt->targets, opt->target_count, &a, err)) != CG_OK) {
        cg_error_prefix(err, "gate 2: ");
        goto done;
    }
    size_t cpu = cg_assign_count_owned(a, CG_OWNER_CPU);
    r->nodes_on_targets = g->node_count - cpu;
    r->partitions = a->partition_count;
    r->boundaries = a->boundary_count;
    snprintf(r->residency, sizeof r->residency, "%zu/%zu nodes on %s", r->nodes_on_targets,
             g->node_count, r->targets);
    cg_assign_verdict(a, types, r->verdict_text, sizeof r->verdict_text);
    if (opt->samples && opt->samples->count)
        r->time_coverage = time_coverage(model, a, &opt->samples->samples[0],
                                         opt->max_alloc_bytes);
    if (cg_assign_init_failure(a, types, msg, sizeof msg)) {
        snprintf(r->runs_detail, sizeof r->runs_detail, "%.500s", msg);
        goto done;
    }
    if (opt->require_full && cpu) {
        size_t v = 0;
        while (v < g->node_count && a->owner[v] != CG_OWNER_CPU)
            v++;
        const char *why = NULL;
        for (size_t i = 0; i < a->unsupported_count && !why; i++)
            if (a->unsupported[i].node == v)
                why = cg_assign_bare_reason(g, v, a->unsupported[i].reason);
        for (size_t i = 0; i < a->dropped_count && !why; i++)
            if (a->dropped[i].node == v)
                why = cg_assign_bare_reason(g, v, a->dropped[i].reason);
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "--require-full: %zu node%s fall back to the CPU; first: %.40s '%.60s': %.300s", cpu,
                 cpu == 1 ? "" : "s", g->nodes[v].op_type ? g->nodes[v].op_type : "?",
                 cg_assign_node_label(g, v, label, sizeof label), why ? why : "(no reason)");
        goto done;
    }
    if (opt->require_full && a->partition_count > 1) {
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "--require-full: %zu partitions where one was required", a->partition_count);
        goto done;
    }
    r->runs = CG_GATE_PASS;
    snprintf(r->runs_detail, sizeof r->runs_detail, "%.500s", r->verdict_text);
done:
    cg_assignment_free(a);
    cg_type_env_free(types);
    return st;
}

/* Runs the reference runtime on a sample. */
static cg_status run_reference(cg_runtime *rt, const cg_sample *s, cg_named_value **outs,
                               size_t *n, cg_error *err)
{
    cg_status st = cg_runtime_run(rt, s->inputs, s->input_count, outs, n, err);
    if (st != CG_OK)
        cg_error_prefix(err, "reference run on %s: ", s->label);
    return st;
}

#define GATE_MAX_BINDINGS 64

/* Bindings for a sample: opt's, with every symbolic input dim set from the
 * sample's tensors (a fixed-shape target path must be built for them).
 * Returns the count. */
static size_t sample_bindings(const cg_model *model, const cg_gate_options *opt,
                              const cg_sample *s, cg_dim_binding *out)
{
    return cg_sample_dims(model, opt->dims, opt->dim_count, s, out, GATE_MAX_BINDINGS);
}

size_t cg_sample_dims(const cg_model *model, const cg_dim_binding *base, size_t base_count,
                      const cg_sample *s, cg_dim_binding *out, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < base_count && n < cap; k++)
        out[n++] = base[k];
    for (size_t i = 0; i < s->input_count; i++) {
        const cg_value_info *vi = NULL;
        for (size_t k = 0; k < model->graph->input_count && !vi; k++)
            if (model->graph->inputs[k].name == s->inputs[i].name)
                vi = &model->graph->inputs[k];
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
    return n;
}

static bool same_bindings(const cg_dim_binding *a, size_t na, const cg_dim_binding *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].symbol, b[i].symbol) != 0 || a[i].value != b[i].value)
            return false;
    return true;
}

/* Gate 3: outputs on every sample, then bisection of the first failing one. */
static cg_status gate_matches(const cg_model *model, const cg_gate_options *opt,
                              cg_gate_report *r, cg_error *err)
{
    cg_runtime_options ro;
    cg_target_path_options po;
    cg_runtime *rt = NULL;
    cg_target_path *path = NULL;
    cg_status st;
    size_t first_fail = SIZE_MAX;
    const cg_graph *g = model->graph;
    r->matches = CG_GATE_FAIL;
    cg_runtime_options_default(&ro);
    ro.max_alloc_bytes = opt->max_alloc_bytes;
    memset(&po, 0, sizeof po);
    po.targets = opt->targets;
    po.target_count = opt->target_count;
    po.accumulate_fp32 = opt->accumulate_fp32;
    po.max_alloc_bytes = opt->max_alloc_bytes;
    cg_dim_binding binds[GATE_MAX_BINDINGS], next[GATE_MAX_BINDINGS];
    size_t bind_count = sample_bindings(model, opt, &opt->samples->samples[0], binds);
    po.dims = binds;
    po.dim_count = bind_count;
    if ((st = cg_runtime_init(model, &ro, &rt, err)) != CG_OK ||
        (st = cg_target_path_init(model, &po, &path, err)) != CG_OK) {
        cg_error_prefix(err, "gate 3: ");
        goto done;
    }
    r->reduced_precision = cg_target_path_reduced_precision(path);
    if (opt->tol_given)
        r->tol = opt->tol;
    else
        cg_tolerance_default(&r->tol, r->reduced_precision);
    r->output_count = g->output_count;
    r->outputs = calloc(g->output_count ? g->output_count : 1, sizeof *r->outputs);
    if (!r->outputs) {
        st = cg_error_set(err, CG_NOMEM, "gate 3: out of memory");
        goto done;
    }
    for (size_t o = 0; o < g->output_count; o++) {
        cg_metrics_init(&r->outputs[o].metrics);
        if (!(r->outputs[o].name = str_dup(g->outputs[o].name ? g->outputs[o].name : ""))) {
            st = cg_error_set(err, CG_NOMEM, "gate 3: out of memory");
            goto done;
        }
    }
    for (size_t i = 0; i < opt->samples->count; i++) {
        const cg_sample *s = &opt->samples->samples[i];
        cg_named_value *ref = NULL, *got = NULL;
        size_t nref = 0, ngot = 0;
        bool sample_ok = true;
        size_t next_count = sample_bindings(model, opt, s, next);
        if (!same_bindings(binds, bind_count, next, next_count)) {
            /* another input shape: rebuild the path (fixed-shape delegates) */
            cg_target_path_free(path);
            path = NULL;
            memcpy(binds, next, next_count * sizeof *next);
            bind_count = next_count;
            po.dim_count = bind_count;
            if ((st = cg_target_path_init(model, &po, &path, err)) != CG_OK) {
                cg_error_prefix(err, "gate 3: sample %s: ", s->label);
                goto done;
            }
        }
        if (s->expected) {
            ref = s->expected; /* golden outputs, graph-output order */
            nref = s->expected_count;
        } else if ((st = run_reference(rt, s, &ref, &nref, err)) != CG_OK) {
            goto done;
        }
        st = cg_target_path_run(path, s->inputs, s->input_count, &got, &ngot, err);
        if (st != CG_OK) {
            if (!s->expected)
                cg_runtime_free_outputs(ref, nref);
            cg_error_prefix(err, "target path run on %s: ", s->label);
            goto done;
        }
        for (size_t o = 0; o < g->output_count && o < nref && o < ngot && st == CG_OK; o++) {
            const cg_value *a = ref[o].value, *b = got[o].value;
            cg_metrics m;
            if (!a || !b || a->kind != CG_VALUE_TENSOR || b->kind != CG_VALUE_TENSOR ||
                a->tensor.dtype == CG_DTYPE_STRING)
                continue;
            cg_metrics_init(&m);
            st = cg_compare_tensors(&a->tensor, &b->tensor, &r->tol, &m, err);
            if (st == CG_OK) {
                if (r->sample_count == 0)
                    r->outputs[o].metrics = m;
                else
                    cg_metrics_merge(&r->outputs[o].metrics, &m);
                sample_ok = sample_ok && m.pass;
            }
        }
        if (nref != ngot && st == CG_OK)
            st = cg_error_set(err, CG_RUNTIME,
                              "gate 3: %zu reference outputs, %zu from the target path",
                              nref, ngot);
        if (!s->expected)
            cg_runtime_free_outputs(ref, nref);
        cg_runtime_free_outputs(got, ngot);
        if (st != CG_OK)
            goto done;
        r->sample_count++;
        if (!sample_ok) {
            r->failed_samples++;
            if (first_fail == SIZE_MAX)
                first_fail = i;
        }
    }
    if (first_fail == SIZE_MAX) {
        r->matches = CG_GATE_PASS;
        snprintf(r->matches_detail, sizeof r->matches_detail,
                 "%zu output%s match on %zu sample%s", g->output_count,
                 g->output_count == 1 ? "" : "s", r->sample_count,
                 r->sample_count == 1 ? "" : "s");
        goto done;
    }
    {
        size_t bad = 0;
        while (bad < r->output_count && r->outputs[bad].metrics.pass)
            bad++;
        snprintf(r->matches_detail, sizeof r->matches_detail,
                 "output '%s' differs from the reference on %zu of %zu samples (max_abs %.4g)",
                 bad < r->output_count ? r->outputs[bad].name : "?", r->failed_samples,
                 r->sample_count, bad < r->output_count ? r->outputs[bad].metrics.max_abs : 0.0);
    }
    /* bisect the first failing sample; the path is rebuilt by bisect with
     * its own observer, so release ours first (memory) */
    cg_target_path_free(path);
    path = NULL;
    {
        const cg_sample *s = &opt->samples->samples[first_fail];
        cg_bisect_options bo;
        bind_count = sample_bindings(model, opt, s, binds);
        po.dim_count = bind_count;
        cg_error berr;
        memset(&bo, 0, sizeof bo);
        cg_error_clear(&berr);
        bo.reference.model = model;
        bo.candidate.model = model;
        bo.candidate.path = &po;
        bo.tol = r->tol;
        bo.max_alloc_bytes = opt->max_alloc_bytes;
        bo.triage = true;
        r->bisect_sample = first_fail;
        r->bisect_sample_label = str_dup(s->label);
        if (cg_bisect_run(&bo, s->inputs, s->input_count, &r->bisect, &berr) == CG_OK)
            r->bisected = true;
        else
            snprintf(r->bisect_error, sizeof r->bisect_error, "%s", berr.msg);
    }
done:
    cg_target_path_free(path);
    cg_runtime_free(rt);
    return st;
}

void cg_gate_report_free(cg_gate_report *r)
{
    if (!r)
        return;
    free(r->model);
    free(r->targets);
    for (size_t i = 0; i < r->output_count && r->outputs; i++)
        free(r->outputs[i].name);
    free(r->outputs);
    free(r->bisect_sample_label);
    cg_bisect_result_free(&r->bisect);
    memset(r, 0, sizeof *r);
}

cg_status cg_gate_run(const cg_model *model, const char *model_path, const cg_gate_options *opt,
                      cg_gate_report *out, cg_error *err)
{
    cg_status st;
    size_t len = 1;
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_gate_run: NULL report");
    memset(out, 0, sizeof *out);
    out->converts = out->runs = out->matches = CG_GATE_NOT_RUN;
    out->time_coverage = -1;
    if (!model || !model->graph || !opt || !opt->target_count || !opt->targets ||
        !opt->samples || !opt->samples->count)
        return cg_error_set(err, CG_USAGE,
                            "cg_gate_run: a model, at least one target and one sample are needed");
    for (size_t t = 0; t < opt->target_count; t++)
        len += strlen(opt->targets[t]->name) + 1;
    out->model = str_dup(model_path ? model_path : "-");
    out->targets = malloc(len);
    if (!out->model || !out->targets)
        return cg_error_set(err, CG_NOMEM, "gate: out of memory");
    out->targets[0] = '\0';
    for (size_t t = 0; t < opt->target_count; t++) {
        if (t)
            strcat(out->targets, ",");
        strcat(out->targets, opt->targets[t]->name);
    }

    if ((st = gate_converts(model, out, err)) != CG_OK)
        return st;
    if (out->converts != CG_GATE_PASS) {
        snprintf(out->reason, sizeof out->reason, "gate 1 (converts): %.480s",
                 out->converts_detail);
        return CG_OK;
    }
    if ((st = gate_runs(model, opt, out, err)) != CG_OK)
        return st;
    if (out->runs != CG_GATE_PASS) {
        snprintf(out->reason, sizeof out->reason, "gate 2 (runs where intended): %.470s",
                 out->runs_detail);
        return CG_OK;
    }
    if ((st = gate_matches(model, opt, out, err)) != CG_OK)
        return st;
    if (out->matches != CG_GATE_PASS) {
        if (out->bisected && out->bisect.diverged)
            snprintf(out->reason, sizeof out->reason,
                     "gate 3 (matches): %.200s; first divergent tensor '%.80s' from %.30s '%.60s': %s",
                     out->matches_detail, out->bisect.first_divergent.tensor,
                     out->bisect.first_divergent.op_type, out->bisect.first_divergent.node,
                     cg_bisect_triage_name(out->bisect.triage));
        else
            snprintf(out->reason, sizeof out->reason, "gate 3 (matches): %.480s",
                     out->matches_detail);
        return CG_OK;
    }
    out->pass = true;
    snprintf(out->reason, sizeof out->reason,
             "converts, %.200s (%zu partition%s), outputs match the reference on %zu sample%s",
             out->residency, out->partitions, out->partitions == 1 ? "" : "s",
             out->sample_count, out->sample_count == 1 ? "" : "s");
    return CG_OK;
}

/* --- rendering ------------------------------------------------------------------- */

static void type_text(const cg_bisect_type *t, char *buf, size_t len)
{
    size_t n;
    if (!t->known) {
        snprintf(buf, len, "?");
        return;
    }
    n = (size_t)snprintf(buf, len, "%s[", cg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, d ? "," : "", t->dims[d]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

static void metrics_line(FILE *f, const cg_metrics *m)
{
    fprintf(f, "max_abs %.4g, max_rel %.4g, mean_abs %.4g, cosine %.6f, mismatches %" PRIu64
               "/%" PRIu64 ", NaN ref/target %" PRIu64 "/%" PRIu64 ", Inf ref/target %" PRIu64
               "/%" PRIu64,
            m->max_abs, m->max_rel, m->mean_abs, m->cosine, m->mismatches, m->count, m->nan_ref,
            m->nan_got, m->inf_ref, m->inf_got);
    if (m->shape_mismatch)
        fputs(", SHAPE MISMATCH", f);
    if (m->dtype_mismatch)
        fputs(", DTYPE MISMATCH", f);
}

void cg_bisect_report_text(FILE *f, const cg_bisect_result *b, const char *ind)
{
    char buf[256];
    fprintf(f, "%sbisect: %zu tensors watched, %zu compared, %zu beyond tolerance\n", ind,
            b->watched, b->compared, b->divergent);
    if (b->refined)
        fprintf(f, "%s(the first pass diverged at a partition's output: rerun with its %zu inner "
                   "value%s exposed)\n", ind, b->refined_values, b->refined_values == 1 ? "" : "s");
    if (!b->diverged) {
        fprintf(f, "%sno intermediate tensor diverges\n", ind);
        return;
    }
    const cg_bisect_tensor *t = &b->first_divergent;
    type_text(&t->type, buf, sizeof buf);
    fprintf(f, "%sfirst divergent tensor: '%s' %s, from node '%s' (%s, #%zu)%s%s\n", ind,
            t->tensor, buf, t->node, t->op_type, t->node_index, t->placed_on ? " on " : "",
            t->placed_on ? t->placed_on : "");
    for (size_t i = 0; i < b->input_count; i++) {
        if (!b->inputs[i].name[0])
            continue;
        type_text(&b->inputs[i], buf, sizeof buf);
        fprintf(f, "%s  input %zu: '%s' %s\n", ind, i, b->inputs[i].name, buf);
    }
    fprintf(f, "%s  ", ind);
    metrics_line(f, &t->metrics);
    fputc('\n', f);
    if (t->metrics.worst_index >= 0)
        fprintf(f, "%s  worst element [%" PRId64 "]: reference %.6g, target %.6g\n", ind,
                t->metrics.worst_index, t->metrics.worst_ref, t->metrics.worst_got);
    if (b->has_last_matching)
        fprintf(f, "%slast matching tensor: '%s' from node '%s' (%s, #%zu), max_abs %.4g\n", ind,
                b->last_matching.tensor, b->last_matching.node, b->last_matching.op_type,
                b->last_matching.node_index, b->last_matching.metrics.max_abs);
    else
        fprintf(f, "%slast matching tensor: none (the first compared tensor diverges)\n", ind);
    fprintf(f, "%striage: %s%s%s%s\n", ind, cg_bisect_triage_name(b->triage),
            b->triage_note[0] ? " (" : "", b->triage_note, b->triage_note[0] ? ")" : "");
}

static json_t *num(double v)
{
    return v == v ? json_real(v) : json_null();
}

static json_t *type_json(const cg_bisect_type *t)
{
    json_t *o = json_object(), *shape = json_array();
    if (!o || !shape) {
        json_decref(o);
        json_decref(shape);
        return NULL;
    }
    json_object_set_new(o, "name", json_string(t->name ? t->name : ""));
    json_object_set_new(o, "dtype", t->known ? json_string(cg_dtype_name(t->dtype)) : json_null());
    for (int d = 0; t->known && d < t->rank; d++)
        json_array_append_new(shape, json_integer((json_int_t)t->dims[d]));
    json_object_set_new(o, "shape", t->known ? shape : json_null());
    if (!t->known)
        json_decref(shape);
    return o;
}

static void metrics_json(json_t *o, const cg_metrics *m)
{
    json_object_set_new(o, "pass", json_boolean(m->pass));
    json_object_set_new(o, "count", json_integer((json_int_t)m->count));
    json_object_set_new(o, "mismatches", json_integer((json_int_t)m->mismatches));
    json_object_set_new(o, "max_abs", num(m->max_abs));
    json_object_set_new(o, "mean_abs", num(m->mean_abs));
    json_object_set_new(o, "max_rel", num(m->max_rel));
    json_object_set_new(o, "rmse", num(m->rmse));
    json_object_set_new(o, "cosine", num(m->cosine));
    json_object_set_new(o, "nan_ref", json_integer((json_int_t)m->nan_ref));
    json_object_set_new(o, "nan_target", json_integer((json_int_t)m->nan_got));
    json_object_set_new(o, "inf_ref", json_integer((json_int_t)m->inf_ref));
    json_object_set_new(o, "inf_target", json_integer((json_int_t)m->inf_got));
    json_object_set_new(o, "shape_mismatch", json_boolean(m->shape_mismatch));
}

static json_t *tensor_json(const cg_bisect_tensor *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "tensor", json_string(t->tensor));
    json_object_set_new(o, "node", json_string(t->node));
    json_object_set_new(o, "op_type", json_string(t->op_type));
    json_object_set_new(o, "node_index", json_integer((json_int_t)t->node_index));
    json_object_set_new(o, "placed_on", t->placed_on ? json_string(t->placed_on) : json_null());
    json_t *ty = type_json(&t->type);
    if (ty) {
        json_object_set(o, "dtype", json_object_get(ty, "dtype"));
        json_object_set(o, "shape", json_object_get(ty, "shape"));
        json_decref(ty);
    }
    metrics_json(o, &t->metrics);
    return o;
}

json_t *cg_bisect_report_json(const cg_bisect_result *b)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "watched", json_integer((json_int_t)b->watched));
    json_object_set_new(o, "compared", json_integer((json_int_t)b->compared));
    json_object_set_new(o, "divergent", json_integer((json_int_t)b->divergent));
    json_object_set_new(o, "refined_in_partition", json_boolean(b->refined));
    if (b->diverged) {
        json_t *fd = tensor_json(&b->first_divergent), *ins = json_array();
        for (size_t i = 0; ins && i < b->input_count; i++)
            json_array_append_new(ins, type_json(&b->inputs[i]));
        if (fd)
            json_object_set_new(fd, "inputs", ins ? ins : json_null());
        json_object_set_new(o, "first_divergent", fd ? fd : json_null());
    } else {
        json_object_set_new(o, "first_divergent", json_null());
    }
    json_object_set_new(o, "last_matching",
                        b->has_last_matching ? tensor_json(&b->last_matching) : json_null());
    json_object_set_new(o, "triage", b->diverged && b->triage != CG_TRIAGE_NONE
                                         ? json_string(cg_bisect_triage_name(b->triage))
                                         : json_null());
    json_object_set_new(o, "triage_note", json_string(b->triage_note));
    if (b->triage_ran) {
        json_t *tm = json_object();
        if (tm) {
            metrics_json(tm, &b->triage_metrics);
            json_object_set_new(o, "triage_fp32", tm);
        }
    }
    return o;
}

void cg_gate_report_text(FILE *f, const cg_gate_report *r)
{
    fprintf(f, "convgate gate %s --target %s\n\n", r->model, r->targets);
    fprintf(f, "GATE 1 converts: %s  %s\n", cg_gate_state_name(r->converts),
            r->converts_detail);
    fprintf(f, "GATE 2 runs where intended: %s", cg_gate_state_name(r->runs));
    if (r->runs != CG_GATE_NOT_RUN) {
        fprintf(f, "  %s, %zu partition%s, %zu boundar%s", r->residency[0] ? r->residency : "?",
                r->partitions, r->partitions == 1 ? "" : "s", r->boundaries,
                r->boundaries == 1 ? "y" : "ies");
        if (r->time_coverage >= 0)
            fprintf(f, ", %.1f%% of reference time on target", 100.0 * r->time_coverage);
        fprintf(f, "\n       %s", r->runs_detail);
    }
    fputc('\n', f);
    fprintf(f, "GATE 3 matches: %s", cg_gate_state_name(r->matches));
    if (r->matches != CG_GATE_NOT_RUN) {
        fprintf(f, "  %s (atol %g, rtol %g%s%s%s)\n", r->matches_detail, r->tol.atol,
                r->tol.rtol, r->tol.justification ? ": " : "",
                r->tol.justification ? r->tol.justification : "",
                r->reduced_precision ? "; fp16 compute emulated" : "");
        for (size_t o = 0; o < r->output_count; o++) {
            fprintf(f, "       %s %s: ", r->outputs[o].metrics.pass ? "ok  " : "FAIL",
                    r->outputs[o].name);
            metrics_line(f, &r->outputs[o].metrics);
            fputc('\n', f);
        }
        if (r->bisected) {
            fprintf(f, "       on sample %s:\n", r->bisect_sample_label ? r->bisect_sample_label
                                                                     : "?");
            cg_bisect_report_text(f, &r->bisect, "       ");
        } else if (r->bisect_error[0]) {
            fprintf(f, "       bisect could not run: %s\n", r->bisect_error);
        }
    } else {
        fputc('\n', f);
    }
    fprintf(f, "\n========================================\n");
    fprintf(f, "GATE 1 converts            %s\n", cg_gate_state_name(r->converts));
    fprintf(f, "GATE 2 runs where intended %s\n", cg_gate_state_name(r->runs));
    fprintf(f, "GATE 3 matches             %s\n", cg_gate_state_name(r->matches));
    fprintf(f, "VERDICT: %s  %s\n", r->pass ? "PASS" : "FAIL", r->reason);
    fprintf(f, "========================================\n");
}

static json_t *gate_json(cg_gate_state s, const char *detail)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "state", json_string(s == CG_GATE_PASS   ? "pass"
                                                 : s == CG_GATE_FAIL ? "fail"
                                                                     : "not_run"));
    json_object_set_new(o, "detail", json_string(detail));
    return o;
}

json_t *cg_gate_report_json(const cg_gate_report *r)
{
    json_t *root = json_object(), *g1, *g2, *g3, *outs;
    if (!root)
        return NULL;
    json_object_set_new(root, "model", json_string(r->model));
    json_object_set_new(root, "target", json_string(r->targets));
    json_object_set_new(root, "pass", json_boolean(r->pass));
    json_object_set_new(root, "verdict", json_string(r->pass ? "PASS" : "FAIL"));
    json_object_set_new(root, "reason", json_string(r->reason));
    g1 = gate_json(r->converts, r->converts_detail);
    g2 = gate_json(r->runs, r->runs_detail);
    g3 = gate_json(r->matches, r->matches_detail);
    if (!g1 || !g2 || !g3) {
        json_decref(g1);
        json_decref(g2);
        json_decref(g3);
        json_decref(root);
        return NULL;
    }
    json_object_set_new(g1, "errors", json_integer((json_int_t)r->check_errors));
    json_object_set_new(g1, "warnings", json_integer((json_int_t)r->check_warnings));
    json_object_set_new(root, "converts", g1);
    if (r->runs != CG_GATE_NOT_RUN) {
        json_object_set_new(g2, "residency", json_string(r->residency));
        json_object_set_new(g2, "nodes", json_integer((json_int_t)r->node_count));
        json_object_set_new(g2, "nodes_on_target", json_integer((json_int_t)r->nodes_on_targets));
        json_object_set_new(g2, "partitions", json_integer((json_int_t)r->partitions));
        json_object_set_new(g2, "boundaries", json_integer((json_int_t)r->boundaries));
        json_object_set_new(g2, "time_coverage",
                            r->time_coverage >= 0 ? json_real(r->time_coverage) : json_null());
        json_object_set_new(g2, "placement_verdict", json_string(r->verdict_text));
    }
    json_object_set_new(root, "runs_where_intended", g2);
    if (r->matches != CG_GATE_NOT_RUN) {
        json_object_set_new(g3, "samples", json_integer((json_int_t)r->sample_count));
        json_object_set_new(g3, "failed_samples", json_integer((json_int_t)r->failed_samples));
        json_object_set_new(g3, "atol", json_real(r->tol.atol));
        json_object_set_new(g3, "rtol", json_real(r->tol.rtol));
        json_object_set_new(g3, "reduced_precision", json_boolean(r->reduced_precision));
        outs = json_array();
        for (size_t o = 0; outs && o < r->output_count; o++) {
            json_t *m = json_object();
            if (!m)
                continue;
            json_object_set_new(m, "name", json_string(r->outputs[o].name));
            metrics_json(m, &r->outputs[o].metrics);
            json_array_append_new(outs, m);
        }
        json_object_set_new(g3, "outputs", outs ? outs : json_null());
        if (r->bisected) {
            json_t *b = cg_bisect_report_json(&r->bisect);
            if (b)
                json_object_set_new(b, "sample", json_string(r->bisect_sample_label
                                                                 ? r->bisect_sample_label
                                                                 : ""));
            json_object_set_new(g3, "bisect", b ? b : json_null());
        } else if (r->bisect_error[0]) {
            json_object_set_new(g3, "bisect_error", json_string(r->bisect_error));
        }
    }
    json_object_set_new(root, "matches", g3);
    return root;
}
