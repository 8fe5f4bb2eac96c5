/*
 * The correspondence between a source model's inputs/outputs and a
 * converted model's (convgate/iomap.h): matching by name, signature name or
 * position, the layout permutation from the declared shapes or a --map
 * rule, and the conversion of values between the two.
 */
#include "convgate/iomap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/samples.h"
#include "convgate/tflite.h"

/* --- rules ------------------------------------------------------------------------------ */

void cg_io_rule_free(cg_io_rule *r)
{
    if (!r)
        return;
    free(r->a);
    free(r->b);
    memset(r, 0, sizeof *r);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

cg_status cg_io_rule_parse(const char *text, cg_io_rule *out, cg_error *err)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(text, '=');
    if (!eq)
        return cg_error_set(err, CG_USAGE, "--map '%s': expected SOURCE=CONVERTED[:LAYOUT] "
                            "(LAYOUT nhwc, nchw, none or a permutation like 0,2,3,1)", text);
    /* the layout follows the last ':' when what follows is a layout word or
     * a list of digits with commas (tensor names such as "x:0" keep their ':') */
    const char *colon = strrchr(eq + 1, ':');
    const char *layout = NULL;
    if (colon) {
        const char *l = colon + 1;
        bool perm = strchr(l, ',') != NULL; /* "y:0" is a tensor name, "y:0,1" a layout */
        for (const char *c = l; *c; c++)
            perm = perm && ((*c >= '0' && *c <= '9') || *c == ',');
        if (perm || strcmp(l, "nhwc") == 0 || strcmp(l, "nchw") == 0 || strcmp(l, "none") == 0)
            layout = l;
    }
    size_t bl = layout ? (size_t)(colon - eq - 1) : strlen(eq + 1);
    out->a = dup_n(text, (size_t)(eq - text));
    out->b = dup_n(eq + 1, bl);
    if (!out->a || !out->b) {
        cg_io_rule_free(out);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    if (!layout)
        return CG_OK;
    out->has_layout = true;
    if (strcmp(layout, "nhwc") == 0) {
        out->layout = CG_IO_NHWC;
    } else if (strcmp(layout, "nchw") == 0) {
        out->layout = CG_IO_NCHW;
    } else if (strcmp(layout, "none") == 0) {
        out->layout = CG_IO_SAME;
    } else {
        out->layout = CG_IO_PERM;
        const char *c = layout;
        bool seen[CG_MAX_RANK] = {false};
        while (*c) {
            char *end;
            errno = 0;
            long v = strtol(c, &end, 10);
            if (end == c || errno || v < 0 || v >= CG_MAX_RANK || out->rank == CG_MAX_RANK ||
                seen[v]) {
                cg_io_rule_free(out);
                return cg_error_set(err, CG_USAGE, "--map '%s': '%s' is not a permutation of "
                                    "0..rank-1", text, layout);
            }
            seen[v] = true;
            out->perm[out->rank++] = (int)v;
            c = *end == ',' ? end + 1 : end;
        }
        for (int d = 0; d < out->rank; d++)
            if (!seen[d]) {
                cg_io_rule_free(out);
                return cg_error_set(err, CG_USAGE, "--map '%s': '%s' is not a permutation of "
                                    "0..%d", text, layout, out->rank - 1);
            }
    }
    return CG_OK;
}

/* --- names -------------------------------------------------------------------------------- */

/* Graph input/output i of m answers to name. For inputs, i indexes fed. */
static bool answers_to(const cg_model *m, bool input, size_t i, const cg_value_info *vi,
                       const char *name, const char **by)
{
    if (vi->name && strcmp(vi->name, name) == 0) {
        *by = "name";
        return true;
    }
    const char *sig = cg_tflite_signature_name(m, input, i);
    if (sig && strcmp(sig, name) == 0) {
        *by = "signature name";
        return true;
    }
    return false;
}

/* --- layouts --------------------------------------------------------------------------------- */

/* dims of a value info: -1 where unknown; rank -1 when the shape is unknown. */
static int vi_dims(const cg_value_info *vi, int64_t *dims)
{
    for (int d = 0; d < CG_MAX_RANK; d++)
        dims[d] = -1;
    const cg_type *t = vi->type;
    if (!t || t->kind != CG_TYPE_TENSOR || !t->shape || t->shape->rank > CG_MAX_RANK)
        return -1;
    for (size_t d = 0; d < t->shape->rank; d++)
        dims[d] = t->shape->dims[d].has_value ? t->shape->dims[d].value : -1;
    return (int)t->shape->rank;
}

static void layout_perm(int kind, int rank, int *perm)
{
    for (int d = 0; d < rank; d++)
        perm[d] = d;
    if (rank < 3)
        return;
    if (kind == CG_IO_NHWC) { /* A channels-first -> B channels-last: B = A[0, 2.., 1] */
        for (int d = 1; d < rank - 1; d++)
            perm[d] = d + 1;
        perm[rank - 1] = 1;
    } else if (kind == CG_IO_NCHW) { /* A channels-last -> B channels-first */
        perm[1] = rank - 1;
        for (int d = 2; d < rank; d++)
            perm[d] = d - 1;
    }
}

static bool fits(const int64_t *a, const int64_t *b, int rank, const int *perm)
{
    for (int d = 0; d < rank; d++) {
        int64_t x = a[perm[d]], y = b[d];
        if (x >= 0 && y >= 0 && x != y)
            return false;
    }
    return true;
}

static void dims_text(const int64_t *d, int rank, char *buf, size_t cap)
{
    size_t n = 0;
    if (rank < 0) {
        snprintf(buf, cap, "[?]");
        return;
    }
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank && n < cap; i++) {
        if (d[i] < 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s?", i ? ", " : "");
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)d[i]);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* The pair's permutation: the rule's, else the one the shapes allow. */
static cg_status pair_layout(cg_io_pair *p, const cg_value_info *va, const cg_value_info *vb,
                             bool same_format, const cg_io_rule *rule, const char *what,
                             cg_error *err)
{
    int64_t da[CG_MAX_RANK], db[CG_MAX_RANK];
    int ra = vi_dims(va, da), rb = vi_dims(vb, db);
    char ta[160], tb[160];
    dims_text(da, ra, ta, sizeof ta);
    dims_text(db, rb, tb, sizeof tb);
    p->layout = "same";
    if (rule && rule->has_layout) {
        int r = rule->layout == CG_IO_PERM ? rule->rank : ra >= 0 ? ra : rb;
        if (r < 0)
            r = 0;
        if ((ra >= 0 && ra != r) || (rb >= 0 && rb != r))
            return cg_error_set(err, CG_USAGE, "--map for %s '%s': the layout has rank %d, the "
                                "tensors are %s and %s", what, va->name, r, ta, tb);
        p->rank = r;
        if (rule->layout == CG_IO_PERM)
            memcpy(p->perm, rule->perm, sizeof p->perm);
        else
            layout_perm(rule->layout, r, p->perm);
        for (int d = 0; d < r; d++)
            p->permuted = p->permuted || p->perm[d] != d;
        p->layout = rule->layout == CG_IO_NHWC   ? "NCHW -> NHWC"
                    : rule->layout == CG_IO_NCHW ? "NHWC -> NCHW"
                    : p->permuted                ? "permuted (--map)"
                                                 : "same";
        if (ra == r && rb == r && !fits(da, db, r, p->perm))
            return cg_error_set(err, CG_USAGE, "--map for %s '%s': %s laid out %s is not '%s' "
                                "%s", what, va->name, ta, p->layout, vb->name, tb);
        return CG_OK;
    }
    if (ra < 0 || rb < 0) { /* unknown shapes: as they are */
        p->rank = 0;
        return CG_OK;
    }
    if (ra != rb)
        return cg_error_set(err, CG_USAGE, "%s '%s' %s of the source and '%s' %s of the "
                            "converted model have different ranks", what, va->name, ta,
                            vb->name, tb);
    p->rank = ra;
    int cand[3][CG_MAX_RANK];
    static const char *const names[3] = {"same", "NCHW -> NHWC", "NHWC -> NCHW"};
    bool ok[3];
    int n_ok = 0;
    for (int k = 0; k < 3; k++) {
        layout_perm(k == 0 ? CG_IO_SAME : k == 1 ? CG_IO_NHWC : CG_IO_NCHW, ra, cand[k]);
        ok[k] = (k == 0 || ra >= 3) && fits(da, db, ra, cand[k]);
        /* a permutation equal to identity (rank < 3) is the same candidate */
        n_ok += ok[k];
    }
    if (n_ok == 0)
        return cg_error_set(err, CG_USAGE, "%s '%s' %s and '%s' %s: the shapes match neither as "
                            "they are nor as NCHW <-> NHWC; give --map %s=%s:PERM", what,
                            va->name, ta, vb->name, tb, va->name, vb->name);
    int pick = -1;
    if (n_ok == 1) {
        for (int k = 0; k < 3; k++)
            if (ok[k])
                pick = k;
    } else if (ok[0] && same_format) {
        pick = 0;
    } else {
        /* NCHW->NHWC and back can both fit only a shape whose middle dims
         * are all equal to the channels: the same permutation in effect
         * unless identity fits too */
        bool nchw_eq = ok[1] && ok[2] && !ok[0];
        if (nchw_eq)
            pick = 1;
        else
            return cg_error_set(err, CG_USAGE, "%s '%s' %s and '%s' %s: the shapes fit both as "
                                "they are and as NCHW <-> NHWC; say which with --map %s=%s:none "
                                "(or :nhwc, :nchw)", what, va->name, ta, vb->name, tb, va->name,
                                vb->name);
    }
    memcpy(p->perm, cand[pick], sizeof cand[pick]);
    p->permuted = pick != 0;
    p->layout = names[pick];
    return CG_OK;
}

/* --- matching ----------------------------------------------------------------------------------- */

static const cg_io_rule *rule_for(const cg_io_rule *rules, size_t n, const char *a_name)
{
    for (size_t i = 0; i < n; i++)
        if (rules[i].a && a_name && strcmp(rules[i].a, a_name) == 0)
            return &rules[i];
    return NULL;
}

/* Pairs the list of A (na values) with B's; index maps give the graph
 * index of each (fed inputs) for signature names. */
static cg_status match_list(const cg_model *a, const cg_model *b, bool input,
                            const cg_value_info *const *la, const size_t *ia, size_t na,
                            const cg_value_info *const *lb, const size_t *ib, size_t nb,
                            const cg_io_rule *rules, size_t nrules, cg_io_pair *pairs,
                            cg_error *err)
{
    const char *what = input ? "input" : "output";
    bool *taken = calloc(nb + 1, sizeof *taken), *done = calloc(na + 1, sizeof *done);
    cg_status st = CG_OK;
    if (!taken || !done) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto out;
    }
    bool same_format = (a->tflite != NULL) == (b->tflite != NULL);
    /* rules first, then names, then positions among what is left */
    for (int pass = 0; pass < 2 && st == CG_OK; pass++)
        for (size_t i = 0; i < na && st == CG_OK; i++) {
            if (done[i])
                continue;
            const cg_io_rule *r = rule_for(rules, nrules, la[i]->name);
            const char *want = pass == 0 ? (r && r->b && r->b[0] ? r->b : NULL) : la[i]->name;
            if (!want)
                continue;
            for (size_t j = 0; j < nb; j++) {
                const char *by;
                if (taken[j] || !answers_to(b, input, ib[j], lb[j], want, &by))
                    continue;
                pairs[i].a = ia[i];
                pairs[i].b = ib[j];
                pairs[i].by = pass == 0 ? "--map" : by;
                taken[j] = done[i] = true;
                break;
            }
            if (pass == 0 && !done[i])
                st = cg_error_set(err, CG_USAGE, "--map %s=%s: the converted model has no %s "
                                  "'%s'", la[i]->name, want, what, want);
        }
    size_t left_a = 0, left_b = 0;
    for (size_t i = 0; i < na; i++)
        left_a += !done[i];
    for (size_t j = 0; j < nb; j++)
        left_b += !taken[j];
    if (st == CG_OK && left_a && left_a != left_b) {
        size_t i = 0;
        while (done[i])
            i++;
        st = cg_error_set(err, CG_USAGE, "the source's %s '%s' has no same-named %s in the "
                          "converted model, and %zu %ss of the source against %zu of the "
                          "converted model are left to pair by position; give --map "
                          "SOURCE=CONVERTED", what, la[i]->name, what, left_a, what, left_b);
    }
    for (size_t i = 0, j = 0; st == CG_OK && i < na; i++) {
        if (done[i])
            continue;
        while (taken[j])
            j++;
        pairs[i].a = ia[i];
        pairs[i].b = ib[j];
        pairs[i].by = "position";
        taken[j] = done[i] = true;
    }
    for (size_t i = 0; st == CG_OK && i < na; i++) {
        size_t j = 0;
        while (ib[j] != pairs[i].b)
            j++;
        st = pair_layout(&pairs[i], la[i], lb[j], same_format,
                         rule_for(rules, nrules, la[i]->name), what, err);
    }
out:
    free(taken);
    free(done);
    return st;
}

void cg_io_map_free(cg_io_map *m)
{
    if (!m)
        return;
    free(m->inputs);
    free(m->outputs);
    memset(m, 0, sizeof *m);
}

cg_status cg_io_map_build(const cg_model *a, const cg_model *b, const cg_io_rule *rules,
                          size_t rule_count, cg_io_map *out, cg_error *err)
{
    memset(out, 0, sizeof *out);
    if (!a || !a->graph || !b || !b->graph)
        return cg_error_set(err, CG_USAGE, "cg_io_map_build: two models are needed");
    const cg_graph *ga = a->graph, *gb = b->graph;
    for (size_t r = 0; r < rule_count; r++) {
        bool found = false;
        for (size_t i = 0; i < ga->input_count && !found; i++)
            found = ga->inputs[i].name && strcmp(ga->inputs[i].name, rules[r].a) == 0;
        for (size_t i = 0; i < ga->output_count && !found; i++)
            found = ga->outputs[i].name && strcmp(ga->outputs[i].name, rules[r].a) == 0;
        if (!found)
            return cg_error_set(err, CG_USAGE, "--map %s=%s: the source has no input or output "
                                "'%s'", rules[r].a, rules[r].b, rules[r].a);
    }
    size_t fa = cg_samples_fed_inputs(ga, NULL, 0), fb = cg_samples_fed_inputs(gb, NULL, 0);
    const cg_value_info **la = calloc(fa + ga->output_count + 1, sizeof *la);
    const cg_value_info **lb = calloc(fb + gb->output_count + 1, sizeof *lb);
    size_t *ia = calloc(fa + ga->output_count + 1, sizeof *ia);
    size_t *ib = calloc(fb + gb->output_count + 1, sizeof *ib);
    out->inputs = calloc(fa + 1, sizeof *out->inputs);
    out->outputs = calloc(ga->output_count + 1, sizeof *out->outputs);
    cg_status st = CG_OK;
    if (!la || !lb || !ia || !ib || !out->inputs || !out->outputs) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    cg_samples_fed_inputs(ga, la, fa);
    cg_samples_fed_inputs(gb, lb, fb);
    for (size_t i = 0; i < fa; i++)
        ia[i] = (size_t)(la[i] - ga->inputs);
    for (size_t j = 0; j < fb; j++)
        ib[j] = (size_t)(lb[j] - gb->inputs);
    out->input_count = fa;
    if ((st = match_list(a, b, true, la, ia, fa, lb, ib, fb, rules, rule_count, out->inputs,
                         err)) != CG_OK)
        goto done;
    for (size_t i = 0; i < ga->output_count; i++) {
        la[i] = &ga->outputs[i];
        ia[i] = i;
    }
    for (size_t j = 0; j < gb->output_count; j++) {
        lb[j] = &gb->outputs[j];
        ib[j] = j;
    }
    out->output_count = ga->output_count;
    st = match_list(a, b, false, la, ia, ga->output_count, lb, ib, gb->output_count, rules,
                    rule_count, out->outputs, err);
done:
    free(la);
    free(lb);
    free(ia);
    free(ib);
    if (st != CG_OK)
        cg_io_map_free(out);
    return st;
}

/* --- values -------------------------------------------------------------------------------- */

cg_status cg_io_convert(const cg_io_pair *p, bool to_b, const cg_tensor *src, cg_dtype dtype,
                        cg_tensor *out, cg_error *err)
{
    int perm[CG_MAX_RANK];
    cg_tensor moved;
    cg_status st;
    memset(out, 0, sizeof *out);
    if (p->permuted && src->rank != p->rank)
        return cg_error_set(err, CG_USAGE, "a rank-%d tensor where the layout %s needs rank %d",
                            src->rank, p->layout, p->rank);
    for (int d = 0; d < src->rank; d++)
        perm[d] = d;
    if (p->permuted)
        for (int d = 0; d < p->rank; d++) {
            if (to_b)
                perm[d] = p->perm[d];
            else
                perm[p->perm[d]] = d;
        }
    if ((st = cg_tensor_permute(src, perm, &moved, err)) != CG_OK)
        return st;
    if (dtype == CG_DTYPE_UNDEFINED || dtype == moved.dtype) {
        *out = moved;
        return CG_OK;
    }
    st = cg_tensor_convert(&moved, dtype, out, err);
    cg_tensor_release(&moved);
    return st;
}

static cg_dtype declared(const cg_value_info *vi)
{
    return vi->type && vi->type->kind == CG_TYPE_TENSOR && vi->type->has_elem_type
               ? (cg_dtype)vi->type->elem_type : CG_DTYPE_UNDEFINED;
}

static cg_status map_values(const cg_io_pair *pairs, size_t n, const cg_value_info *src_vis,
                            const cg_value_info *dst_vis, bool to_b, bool by_index,
                            const cg_named_value *in, size_t in_count, cg_named_value **out,
                            size_t *out_count, cg_error *err)
{
    cg_named_value *o = calloc(n + 1, sizeof *o);
    cg_status st = CG_OK;
    if (!o)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t k = 0; k < n && st == CG_OK; k++) {
        size_t si = to_b ? pairs[k].a : pairs[k].b, di = to_b ? pairs[k].b : pairs[k].a;
        const char *sname = src_vis[si].name;
        const cg_value *v = NULL;
        if (by_index && si < in_count)
            v = in[si].value;
        for (size_t i = 0; !v && i < in_count; i++)
            if (in[i].name && sname && strcmp(in[i].name, sname) == 0)
                v = in[i].value;
        o[k].name = dst_vis[di].name;
        if (!v || v->kind != CG_VALUE_TENSOR) {
            st = cg_error_set(err, CG_USAGE, "'%s' is %s", sname ? sname : "?",
                              v ? "not a tensor" : "missing");
            break;
        }
        cg_tensor t;
        if ((st = cg_io_convert(&pairs[k], to_b, &v->tensor, declared(&dst_vis[di]), &t, err)) !=
                CG_OK ||
            (st = cg_value_from_tensor(&t, &o[k].value, err)) != CG_OK) {
            cg_error_prefix(err, "'%s' -> '%s': ", sname ? sname : "?",
                            dst_vis[di].name ? dst_vis[di].name : "?");
            cg_tensor_release(&t);
        }
    }
    if (st != CG_OK) {
        cg_runtime_free_outputs(o, n);
        return st;
    }
    *out = o;
    *out_count = n;
    return CG_OK;
}

cg_status cg_io_map_inputs(const cg_io_map *m, const cg_model *a, const cg_model *b, bool to_b,
                           const cg_named_value *in, size_t in_count, cg_named_value **out,
                           size_t *out_count, cg_error *err)
{
    const cg_graph *src = to_b ? a->graph : b->graph, *dst = to_b ? b->graph : a->graph;
    cg_status st = map_values(m->inputs, m->input_count, src->inputs, dst->inputs, to_b, false,
                              in, in_count, out, out_count, err);
    if (st != CG_OK)
        cg_error_prefix(err, "input ");
    return st;
}

cg_status cg_io_map_outputs(const cg_io_map *m, const cg_model *a, const cg_model *b, bool to_b,
                            const cg_named_value *in, size_t in_count, cg_named_value **out,
                            size_t *out_count, cg_error *err)
{
    const cg_graph *src = to_b ? a->graph : b->graph, *dst = to_b ? b->graph : a->graph;
    cg_status st;
    if (to_b) {
        /* B's outputs in B's order: every one needs its partner */
        cg_io_pair *order = calloc(dst->output_count + 1, sizeof *order);
        if (!order)
            return cg_error_set(err, CG_NOMEM, "out of memory");
        for (size_t j = 0; j < dst->output_count; j++) {
            size_t k = 0;
            while (k < m->output_count && m->outputs[k].b != j)
                k++;
            if (k == m->output_count) {
                free(order);
                return cg_error_set(err, CG_USAGE, "the converted model's output '%s' has no "
                                    "partner among the source's outputs",
                                    dst->outputs[j].name ? dst->outputs[j].name : "?");
            }
            order[j] = m->outputs[k];
        }
        st = map_values(order, dst->output_count, src->outputs, dst->outputs, true, true, in,
                        in_count, out, out_count, err);
        free(order);
    } else {
        st = map_values(m->outputs, m->output_count, src->outputs, dst->outputs, false, true, in,
                        in_count, out, out_count, err);
    }
    if (st != CG_OK)
        cg_error_prefix(err, "output ");
    return st;
}

void cg_io_pair_text(const cg_io_pair *p, const cg_model *a, const cg_model *b, bool input,
                     char *buf, size_t cap)
{
    const cg_value_info *va = input ? &a->graph->inputs[p->a] : &a->graph->outputs[p->a];
    const cg_value_info *vb = input ? &b->graph->inputs[p->b] : &b->graph->outputs[p->b];
    int64_t da[CG_MAX_RANK], db[CG_MAX_RANK];
    char ta[160], tb[160];
    dims_text(da, vi_dims(va, da), ta, sizeof ta);
    dims_text(db, vi_dims(vb, db), tb, sizeof tb);
    snprintf(buf, cap, "%s %s -> %s %s (by %s, %s)", va->name ? va->name : "?", ta,
             vb->name ? vb->name : "?", tb, p->by ? p->by : "?", p->layout ? p->layout : "same");
}
