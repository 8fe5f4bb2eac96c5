/*
 * Compatibility rewrites (rewrites.def): each replaces a construct GPU and
 * NPU delegates refuse with ops they take, at the sites the target
 * refuses (rw_needed), keeping the replaced value's name. Shapes come from
 * the type environment and must be static where a rewrite bakes them
 * into constants.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "rewrite/rewrite_internal.h"

static bool present(const char *s) { return s && s[0]; }

/* --- small builders ------------------------------------------------------------------- */

/* Reshape(x, dims) to `out` (NULL: a fresh name); its output. */
static const char *add_reshape(rw_graph *g, const char *x, int rank, const int64_t *dims,
                               const char *out, const char *hint)
{
    int64_t shape_dims[1] = {rank};
    const char *shape = rw_add_i64(g, "shape", 1, shape_dims, dims);
    const char *ins[2] = {x, shape}, *outs[1] = {out};
    if (!shape)
        return NULL;
    size_t n = rw_add_node(g, "Reshape", hint ? hint : "Reshape", ins, 2, outs, 1);
    return rw_out(g, n, 0);
}

static const char *add_transpose(rw_graph *g, const char *x, int rank, const int64_t *perm,
                                 const char *hint)
{
    size_t n = rw_add_node(g, "Transpose", hint ? hint : "Transpose", &x, 1, NULL, 1);
    if (n == RW_NONE || !rw_set_attr_ints(g, n, "perm", perm, (size_t)rank))
        return NULL;
    return rw_out(g, n, 0);
}

/* Slice(x, starts, ends, axes, steps) with constant inputs (opset >= 10). */
static const char *add_slice(rw_graph *g, const char *x, size_t n, const int64_t *starts,
                             const int64_t *ends, const int64_t *axes, const int64_t *steps,
                             const char *hint)
{
    int64_t d[1] = {(int64_t)n};
    const char *ins[5] = {x, rw_add_i64(g, "starts", 1, d, starts), rw_add_i64(g, "ends", 1, d, ends),
                          rw_add_i64(g, "axes", 1, d, axes),
                          steps ? rw_add_i64(g, "steps", 1, d, steps) : NULL};
    if (!ins[1] || !ins[2] || !ins[3] || (steps && !ins[4]))
        return NULL;
    size_t k = rw_add_node(g, "Slice", hint ? hint : "Slice", ins, steps ? 5 : 4, NULL, 1);
    return rw_out(g, k, 0);
}

static const char *add_binary(rw_graph *g, const char *op, const char *a, const char *b,
                              const char *out, const char *hint)
{
    const char *ins[2] = {a, b}, *outs[1] = {out};
    size_t n = rw_add_node(g, op, hint ? hint : op, ins, 2, outs, 1);
    return rw_out(g, n, 0);
}

static const char *add_unary(rw_graph *g, const char *op, const char *a, const char *out,
                             const char *hint)
{
    const char *outs[1] = {out};
    size_t n = rw_add_node(g, op, hint ? hint : op, &a, 1, outs, 1);
    return rw_out(g, n, 0);
}

/* The float dtype of value name (float32 when unknown or not a float). */
static cg_dtype float_dtype(const rw_ctx *c, const char *name)
{
    const cg_value_type *t = rw_type(c, name);
    if (t && (t->dtype == CG_DTYPE_FLOAT16 || t->dtype == CG_DTYPE_DOUBLE ||
              t->dtype == CG_DTYPE_BFLOAT16))
        return t->dtype;
    return CG_DTYPE_FLOAT;
}

static bool is_float(const cg_value_type *t)
{
    return t && (t->dtype == CG_DTYPE_FLOAT || t->dtype == CG_DTYPE_FLOAT16 ||
                 t->dtype == CG_DTYPE_DOUBLE || t->dtype == CG_DTYPE_BFLOAT16);
}

/* The single live node reading name, or RW_NONE (several, none, a graph output). */
static size_t only_reader(rw_graph *g, const char *name)
{
    size_t cons[2];
    if (rw_is_graph_output(g, name) || rw_consumers(g, name, cons, 2) != 1)
        return RW_NONE;
    return cons[0];
}

static int64_t product(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int k = from; k < to; k++)
        p *= d[k];
    return p;
}

/* --- gathernd-to-gather ------------------------------------------------------------------ */

/* Indices as a strided box: out = data[s0:e0:st0, s1:e1:st1, ...]. */
static bool strided_box(const int64_t *lin_idx, const int64_t *shape, int q, int m,
                        int64_t *starts, int64_t *steps)
{
    if (q - 1 != m)
        return false;
    /* starts: the tuple at position 0; steps: one step along each axis */
    int64_t stride[CG_MAX_RANK];
    stride[q - 2] = 1;
    for (int k = q - 3; k >= 0; k--)
        stride[k] = stride[k + 1] * shape[k + 1];
    for (int k = 0; k < m; k++) {
        starts[k] = lin_idx[k];
        steps[k] = shape[k] > 1 ? lin_idx[stride[k] * m + k] - starts[k] : 1;
        if (steps[k] < 1)
            return false;
    }
    int64_t count = product(shape, 0, q - 1), pos[CG_MAX_RANK] = {0};
    for (int64_t t = 0; t < count; t++) {
        for (int k = 0; k < m; k++)
            if (lin_idx[t * m + k] != starts[k] + steps[k] * pos[k])
                return false;
        for (int k = m - 1; k >= 0; k--) {
            if (++pos[k] < shape[k])
                break;
            pos[k] = 0;
        }
    }
    return true;
}

static bool gathernd_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    if (n->input_count != 2 || n->output_count != 1 || rw_attr_int(g, i, "batch_dims", 0) != 0)
        return false;
    const cg_value_type *dt = rw_static(c, n->inputs[0]);
    cg_value *iv = NULL;
    if (!dt || rw_constant_value(g, n->inputs[1], &iv, NULL) != CG_OK || !iv)
        return false;
    const cg_tensor *it = &iv->tensor;
    bool ok = it->rank >= 1 && it->rank <= CG_MAX_RANK - 1 &&
              (it->dtype == CG_DTYPE_INT64 || it->dtype == CG_DTYPE_INT32);
    int m = ok ? (int)it->dims[it->rank - 1] : 0, r = dt->rank, q = it->rank;
    ok = ok && m >= 1 && m <= r;
    int64_t k_count = ok ? it->numel / m : 0, *idx = ok ? malloc((size_t)(it->numel + 1) * 8) : NULL;
    int32_t *lin = ok ? malloc((size_t)(k_count + 1) * 4) : NULL;
    int64_t outer = ok ? product(dt->dims, 0, m) : 0, inner = ok ? product(dt->dims, m, r) : 0;
    ok = ok && idx && lin && outer <= INT32_MAX;
    for (int64_t t = 0; ok && t < k_count; t++) {
        int64_t l = 0;
        for (int k = 0; k < m && ok; k++) {
            int64_t v = cg_tensor_get_i64(it, t * m + k);
            if (v < 0)
                v += dt->dims[k];
            ok = v >= 0 && v < dt->dims[k];
            idx[t * m + k] = v;
            l = l * dt->dims[k] + v;
        }
        lin[t] = (int32_t)l;
    }
    const char *out = n->outputs[0], *res = NULL;
    int64_t starts[CG_MAX_RANK], steps[CG_MAX_RANK];
    bool box = ok && strided_box(idx, it->dims, q, m, starts, steps);
    if (ok && box && g->opset >= 10) {
        int64_t ends[CG_MAX_RANK], axes[CG_MAX_RANK];
        for (int k = 0; k < m; k++) {
            ends[k] = starts[k] + steps[k] * (it->dims[k] - 1) + 1;
            axes[k] = k;
        }
        rw_kill(g, i);
        res = add_slice(g, n->inputs[0], (size_t)m, starts, ends, axes, steps, n->name);
        ok = res && rw_replace(g, out, res);
    } else if (ok) {
        int64_t flat[2] = {outer, inner}, out_dims[CG_MAX_RANK], kd[1] = {k_count};
        int rank_out = 0;
        for (int k = 0; k < q - 1; k++)
            out_dims[rank_out++] = it->dims[k];
        for (int k = m; k < r && rank_out < CG_MAX_RANK; k++)
            out_dims[rank_out++] = dt->dims[k];
        cg_tensor ti;
        ok = rank_out < CG_MAX_RANK && cg_tensor_alloc(&ti, CG_DTYPE_INT32, 1, kd, 0, NULL) == CG_OK;
        if (ok) {
            memcpy(ti.data, lin, (size_t)k_count * 4);
            const char *ind = rw_add_tensor(g, "gather_indices", &ti);
            cg_tensor_release(&ti);
            rw_kill(g, i);
            const char *f = add_reshape(g, n->inputs[0], 2, flat, NULL, n->name);
            const char *ins[2] = {f, ind};
            size_t gn = f && ind ? rw_add_node(g, "Gather", n->name, ins, 2, NULL, 1) : RW_NONE;
            ok = gn != RW_NONE && rw_set_attr_int(g, gn, "axis", 0);
            res = ok ? add_reshape(g, rw_out(g, gn, 0), rank_out, out_dims, NULL, n->name) : NULL;
            ok = ok && res && rw_replace(g, out, res);
        }
    }
    free(idx);
    free(lin);
    cg_value_free(iv);
    return ok;
}

cg_status rw_gathernd(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "GatherND") && rw_needed(c, i) && gathernd_site(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu GatherND node%s with constant indices replaced", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- rank-reduction ------------------------------------------------------------------------ */

/* The reshape-transpose chain's middle shape reduced: unit axes dropped
 * (except `keep`), axes that stay adjacent and in order through perm
 * merged. groups[k]: the merged dims in middle order; gperm: the
 * transposition of the groups; *keep_group: the group holding `keep`
 * (-1: dropped, or no keep). Returns the reduced rank. */
static int reduce_chain(const int64_t *mid, int m, const int64_t *perm, int keep, int64_t *groups,
                        int64_t *gperm, int *keep_group)
{
    int live[CG_MAX_RANK], nl = 0, newidx[CG_MAX_RANK];
    for (int a = 0; a < m; a++) {
        newidx[a] = -1;
        if (mid[a] != 1 || a == keep) {
            newidx[a] = nl;
            live[nl++] = a;
        }
    }
    int p2[CG_MAX_RANK], np = 0;
    for (int j = 0; j < m; j++)
        if (newidx[perm[j]] >= 0)
            p2[np++] = newidx[perm[j]];
    /* group id of each live axis: a new group starts unless the axis
     * follows its predecessor in p2 */
    int start_of[CG_MAX_RANK], gid[CG_MAX_RANK], ng = 0;
    for (int a = 0; a < nl; a++)
        start_of[a] = 1;
    for (int j = 1; j < np; j++)
        if (p2[j] == p2[j - 1] + 1 && live[p2[j]] != keep && live[p2[j - 1]] != keep)
            start_of[p2[j]] = 0;
    for (int a = 0; a < nl; a++) {
        if (start_of[a] || a == 0)
            groups[ng++] = 1;
        gid[a] = ng - 1;
        groups[ng - 1] *= mid[live[a]];
    }
    int gp = 0;
    for (int j = 0; j < np; j++)
        if (j == 0 || gid[p2[j]] != gid[p2[j - 1]])
            gperm[gp++] = gid[p2[j]];
    *keep_group = keep >= 0 && newidx[keep] >= 0 ? gid[newidx[keep]] : -1;
    return ng;
}

static bool identity_perm(const int64_t *p, int n)
{
    for (int k = 0; k < n; k++)
        if (p[k] != k)
            return false;
    return true;
}

/* DepthToSpace / SpaceToDepth written as Reshape-Transpose-Reshape. */
static const char *space_depth(rw_graph *g, const char *x, const int64_t *in, const int64_t *mid,
                               const int64_t *perm, const int64_t *out, const char *hint)
{
    static const int64_t crd[6] = {0, 1, 4, 2, 5, 3}, dcr[6] = {0, 3, 4, 1, 5, 2},
                         s2d[6] = {0, 3, 5, 1, 2, 4};
    const char *op = NULL, *mode = NULL;
    int64_t b = 0;
    if (memcmp(perm, crd, sizeof crd) == 0 && mid[2] == mid[3]) {
        b = mid[2];
        if (in[0] == mid[0] && in[1] == mid[1] * b * b && in[2] == mid[4] && in[3] == mid[5] &&
            out[0] == mid[0] && out[1] == mid[1] && out[2] == mid[4] * b && out[3] == mid[5] * b)
            op = "DepthToSpace", mode = "CRD";
    } else if (memcmp(perm, dcr, sizeof dcr) == 0 && mid[1] == mid[2]) {
        b = mid[1];
        if (in[0] == mid[0] && in[1] == mid[3] * b * b && in[2] == mid[4] && in[3] == mid[5] &&
            out[0] == mid[0] && out[1] == mid[3] && out[2] == mid[4] * b && out[3] == mid[5] * b)
            op = "DepthToSpace", mode = "DCR";
    } else if (memcmp(perm, s2d, sizeof s2d) == 0 && mid[3] == mid[5]) {
        b = mid[3];
        if (in[0] == mid[0] && in[1] == mid[1] && in[2] == mid[2] * b && in[3] == mid[4] * b &&
            out[0] == mid[0] && out[1] == mid[1] * b * b && out[2] == mid[2] && out[3] == mid[4])
            op = "SpaceToDepth";
    }
    if (!op || b < 2 || (mode && strcmp(mode, "CRD") == 0 && g->opset < 11))
        return NULL;
    size_t n = rw_add_node(g, op, hint, &x, 1, NULL, 1);
    if (n == RW_NONE || !rw_set_attr_int(g, n, "blocksize", b) ||
        (mode && g->opset >= 11 && !rw_set_attr_string(g, n, "mode", mode)))
        return NULL;
    return rw_out(g, n, 0);
}

static bool const_ints(rw_graph *g, const char *name, int64_t *v, int cap, int *n)
{
    cg_value *cv = NULL;
    bool ok = rw_constant_value(g, name, &cv, NULL) == CG_OK && cv && cv->tensor.rank == 1 &&
              cv->tensor.numel <= cap && (cv->tensor.dtype == CG_DTYPE_INT64 ||
                                         cv->tensor.dtype == CG_DTYPE_INT32);
    if (ok) {
        *n = (int)cv->tensor.numel;
        for (int k = 0; k < *n; k++)
            v[k] = cg_tensor_get_i64(&cv->tensor, k);
    }
    cg_value_free(cv);
    return ok;
}

/* One Reshape (r1) -> Transpose chain whose middle has rank > 4. */
static bool rank_site(rw_ctx *c, size_t t)
{
    rw_graph *g = c->g;
    const cg_node *tn = &g->nodes[t].n;
    if (tn->input_count != 1 || tn->output_count != 1)
        return false;
    size_t r1 = rw_producer(g, tn->inputs[0]);
    const cg_value_type *mt = rw_static(c, tn->inputs[0]), *ot = rw_static(c, tn->outputs[0]);
    if (r1 == RW_NONE || !rw_is(&g->nodes[r1], "Reshape") || !mt || !ot || mt->rank <= 4 ||
        only_reader(g, tn->inputs[0]) != t || rw_is_graph_output(g, tn->outputs[0]))
        return false;
    const char *x = g->nodes[r1].n.inputs[0];
    const cg_value_type *xt = rw_static(c, x);
    int m = mt->rank;
    int64_t perm[CG_MAX_RANK];
    size_t pc;
    const int64_t *pa = rw_attr_ints(g, t, "perm", &pc);
    if (!xt)
        return false;
    if (pa && pc == (size_t)m)
        memcpy(perm, pa, (size_t)m * sizeof *perm);
    else if (!pa)
        for (int k = 0; k < m; k++)
            perm[k] = m - 1 - k;
    else
        return false;
    /* the readers of the transposed value: one Reshape, or Gathers on axis 0 */
    size_t cons[64];
    size_t nc = rw_consumers(g, tn->outputs[0], cons, 64);
    if (nc == 0 || nc > 64)
        return false;
    bool reshape_case = nc == 1 && rw_is(&g->nodes[cons[0]], "Reshape");
    int64_t gidx[64];
    for (size_t k = 0; k < nc && !reshape_case; k++) {
        const cg_node *gn = &g->nodes[cons[k]].n;
        double v;
        const cg_value_type *gt = gn->output_count ? rw_static(c, gn->outputs[0]) : NULL;
        const cg_value_type *it = gn->input_count == 2 ? rw_static(c, gn->inputs[1]) : NULL;
        if (!rw_is(&g->nodes[cons[k]], "Gather") || rw_attr_int(g, cons[k], "axis", 0) != 0 ||
            !it || it->rank != 0 || strcmp(gn->inputs[0], tn->outputs[0]) != 0 || !gt ||
            !rw_constant_scalar(g, gn->inputs[1], &v))
            return false;
        gidx[k] = (int64_t)v < 0 ? (int64_t)v + ot->dims[0] : (int64_t)v;
    }
    size_t site[66] = {t, r1};
    memcpy(site + 2, cons, nc * sizeof *cons);
    if (!rw_needed_any(c, site, nc + 2))
        return false;
    int64_t groups[CG_MAX_RANK], gperm[CG_MAX_RANK];
    int keep_group;
    int keep = reshape_case ? -1 : (int)perm[0];
    int ng = reduce_chain(mt->dims, m, perm, keep, groups, gperm, &keep_group);
    const char *hint = g->nodes[r1].n.name;
    if (reshape_case) {
        size_t r2 = cons[0];
        const cg_value_type *yt = rw_static(c, g->nodes[r2].n.outputs[0]);
        if (!yt || yt->rank > 4 || xt->rank > 4)
            return false;
        const char *y = g->nodes[r2].n.outputs[0], *res = NULL;
        if (ng <= 4) {
            rw_kill(g, r1);
            rw_kill(g, t);
            rw_kill(g, r2);
            const char *a = add_reshape(g, x, ng, groups, NULL, hint);
            const char *b = a && !identity_perm(gperm, ng) ? add_transpose(g, a, ng, gperm, hint)
                                                            : a;
            res = b ? add_reshape(g, b, yt->rank, yt->dims, NULL, hint) : NULL;
        } else if (m == 6 && xt->rank == 4 && yt->rank == 4) {
            rw_kill(g, r1);
            rw_kill(g, t);
            rw_kill(g, r2);
            res = space_depth(g, x, xt->dims, mt->dims, perm, yt->dims, hint);
            if (!res) {
                g->nodes[r1].dead = g->nodes[t].dead = g->nodes[r2].dead = false;
                return false;
            }
        } else {
            return false;
        }
        return res && rw_replace(g, y, res);
    }
    /* Gathers on axis 0: the gathered axis stays its own group at the front */
    if (ng > 4 || (keep_group >= 0 && gperm[0] != keep_group) || g->opset < 10)
        return false;
    rw_kill(g, r1);
    rw_kill(g, t);
    const char *a = add_reshape(g, x, ng, groups, NULL, hint);
    const char *b = a && !identity_perm(gperm, ng) ? add_transpose(g, a, ng, gperm, hint) : a;
    bool ok = b != NULL;
    for (size_t k = 0; k < nc && ok; k++) {
        const cg_node *gn = &g->nodes[cons[k]].n;
        const cg_value_type *gt = rw_static(c, gn->outputs[0]);
        const char *y = gn->outputs[0], *src = b;
        if (keep_group >= 0) {
            /* a one-row Slice (delegates take Slice where a scalar-index Gather is refused) */
            int64_t s0 = gidx[k], e0 = gidx[k] + 1, a0 = 0;
            src = add_slice(g, b, 1, &s0, &e0, &a0, NULL, gn->name);
            ok = src != NULL;
        } else if (gidx[k] != 0) {
            ok = false;
        }
        rw_kill(g, cons[k]);
        const char *res = ok ? add_reshape(g, src, gt->rank, gt->dims, NULL, gn->name) : NULL;
        ok = res && rw_replace(g, y, res);
    }
    return ok;
}

cg_status rw_rank_reduction(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "Transpose") && rank_site(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu rank>4 Reshape-Transpose chain%s rewritten at rank <= 4", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- convtranspose-to-conv --------------------------------------------------------------- */

static bool ints2(rw_graph *g, size_t n, const char *name, int64_t dflt, int64_t *out, size_t want)
{
    size_t cnt;
    const int64_t *v = rw_attr_ints(g, n, name, &cnt);
    for (size_t k = 0; k < want; k++)
        out[k] = dflt;
    if (!v)
        return true;
    if (cnt != want)
        return false;
    memcpy(out, v, want * sizeof *v);
    return true;
}

#define CONVT_MAX_ZEROS ((size_t)64 << 20)

static bool convt_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    char buf[32];
    const char *ap = rw_attr_string(g, i, "auto_pad", "NOTSET", buf, sizeof buf);
    if (n->input_count < 2 || n->output_count != 1 || rw_attr(g, i, "output_shape") ||
        (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) || g->opset < 11)
        return false;
    const cg_value_type *xt = rw_static(c, n->inputs[0]);
    cg_value *wv = NULL;
    if (!xt || xt->rank != 4 || xt->dtype != CG_DTYPE_FLOAT ||
        rw_constant_value(g, n->inputs[1], &wv, NULL) != CG_OK || !wv)
        return false;
    const cg_tensor *w = &wv->tensor;
    int64_t group = rw_attr_int(g, i, "group", 1), s[2], d[2], pads[4], opad[2], ks[2];
    bool ok = w->dtype == CG_DTYPE_FLOAT && w->rank == 4 && group >= 1 &&
              ints2(g, i, "strides", 1, s, 2) && ints2(g, i, "dilations", 1, d, 2) &&
              ints2(g, i, "pads", 0, pads, 4) && ints2(g, i, "output_padding", 0, opad, 2) &&
              ints2(g, i, "kernel_shape", 0, ks, 2);
    int64_t cin = xt->dims[1], kh = ok ? w->dims[2] : 0, kw = ok ? w->dims[3] : 0;
    ok = ok && w->dims[0] == cin && cin % group == 0 && s[0] == s[1] && s[0] >= 1 &&
         d[0] >= 1 && d[1] >= 1 && (ks[0] == 0 || (ks[0] == kh && ks[1] == kw)) &&
         (strcmp(ap, "VALID") != 0 || (pads[0] | pads[1] | pads[2] | pads[3]) == 0);
    const char *b = n->input_count > 2 && present(n->inputs[2]) ? n->inputs[2] : NULL;
    if (!ok || (b && !rw_constant(g, b))) {
        cg_value_free(wv);
        return false;
    }
    int64_t st = s[0], cout_g = w->dims[1], cin_g = cin / group, cout = cout_g * group;
    int64_t N = xt->dims[0], H = xt->dims[2], W = xt->dims[3];
    /* pads of the equivalent convolution over the zero-inserted input */
    int64_t pb[2] = {d[0] * (kh - 1) - pads[0], d[1] * (kw - 1) - pads[1]};
    int64_t pe[2] = {d[0] * (kh - 1) - pads[2] + opad[0] - (st - 1),
                     d[1] * (kw - 1) - pads[3] + opad[1] - (st - 1)};
    /* the flipped, transposed weights: [Cout, Cin/group, kh, kw] */
    cg_tensor wc;
    int64_t wdims[4] = {cout, cin_g, kh, kw};
    if (cg_tensor_alloc(&wc, CG_DTYPE_FLOAT, 4, wdims, 0, NULL) != CG_OK) {
        cg_value_free(wv);
        g->oom = true;
        return false;
    }
    const float *src = w->data;
    float *dst = wc.data;
    for (int64_t gi = 0; gi < group; gi++)
        for (int64_t o = 0; o < cout_g; o++)
            for (int64_t ci = 0; ci < cin_g; ci++)
                for (int64_t y = 0; y < kh; y++)
                    for (int64_t xx = 0; xx < kw; xx++)
                        dst[(((gi * cout_g + o) * cin_g + ci) * kh + y) * kw + xx] =
                            src[(((gi * cin_g + ci) * cout_g + o) * kh + (kh - 1 - y)) * kw +
                                (kw - 1 - xx)];
    const char *wname = rw_add_tensor(g, n->inputs[1], &wc);
    cg_tensor_release(&wc);
    cg_value_free(wv);
    const char *out = n->outputs[0], *u = n->inputs[0], *hint = n->name;
    cg_tensor z;
    int64_t zd[4] = {N, cin * (st * st - 1), H, W};
    memset(&z, 0, sizeof z);
    if (st > 1 && cg_tensor_alloc(&z, CG_DTYPE_FLOAT, 4, zd, CONVT_MAX_ZEROS, NULL) != CG_OK)
        return false; /* a zero block this large is no rewrite to ship */
    rw_kill(g, i);
    if (st > 1) {
        const char *zn = rw_add_tensor(g, "zeros", &z);
        cg_tensor_release(&z);
        const char *ins[2] = {u, zn};
        size_t cat = zn ? rw_add_node(g, "Concat", hint, ins, 2, NULL, 1) : RW_NONE;
        if (cat == RW_NONE || !rw_set_attr_int(g, cat, "axis", 1))
            return false;
        const char *cv = rw_out(g, cat, 0);
        size_t d2s = rw_add_node(g, "DepthToSpace", hint, &cv, 1, NULL, 1);
        if (d2s == RW_NONE || !rw_set_attr_int(g, d2s, "blocksize", st) ||
            !rw_set_attr_string(g, d2s, "mode", "DCR"))
            return false;
        u = rw_out(g, d2s, 0);
    }
    if (pb[0] < 0 || pb[1] < 0 || pe[0] < 0 || pe[1] < 0) {
        int64_t sz[2] = {H * st, W * st};
        int64_t starts[2], ends[2], axes[2] = {2, 3};
        for (int k = 0; k < 2; k++) {
            starts[k] = pb[k] < 0 ? -pb[k] : 0;
            ends[k] = sz[k] - (pe[k] < 0 ? -pe[k] : 0);
            pb[k] = pb[k] < 0 ? 0 : pb[k];
            pe[k] = pe[k] < 0 ? 0 : pe[k];
        }
        u = add_slice(g, u, 2, starts, ends, axes, NULL, hint);
    }
    const char *ins[3] = {u, wname, b};
    size_t conv = u && wname ? rw_add_node(g, "Conv", hint, ins, b ? 3 : 2, NULL, 1) : RW_NONE;
    int64_t cpads[4] = {pb[0], pb[1], pe[0], pe[1]}, one[2] = {1, 1}, kk[2] = {kh, kw};
    if (conv == RW_NONE || !rw_set_attr_ints(g, conv, "pads", cpads, 4) ||
        !rw_set_attr_ints(g, conv, "strides", one, 2) ||
        !rw_set_attr_ints(g, conv, "dilations", d, 2) ||
        !rw_set_attr_ints(g, conv, "kernel_shape", kk, 2) ||
        !rw_set_attr_int(g, conv, "group", group))
        return false;
    return rw_replace(g, out, rw_out(g, conv, 0));
}

cg_status rw_convtranspose(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "ConvTranspose") && rw_needed(c, i) && convt_site(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu ConvTranspose node%s rewritten as zero insertion + Conv", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- where-to-arithmetic -------------------------------------------------------------------- */

/* cond is a comparison of x against a constant *t: +1 for x > t (Greater,
 * GreaterOrEqual), -1 for x < t (Less, LessOrEqual), 0 otherwise. *x gets
 * the compared value, *node the comparison (RW_NONE: cond has no producer). */
static int threshold_test(rw_graph *g, const char *cond, const char **x, double *t, size_t *node)
{
    size_t p = rw_producer(g, cond);
    *node = p;
    if (p == RW_NONE || g->nodes[p].n.input_count != 2)
        return 0;
    const rw_node *n = &g->nodes[p];
    bool gt = rw_is(n, "Greater") || rw_is(n, "GreaterOrEqual"),
         lt = rw_is(n, "Less") || rw_is(n, "LessOrEqual");
    if ((!gt && !lt) || !rw_constant_scalar(g, n->n.inputs[1], t))
        return 0;
    *x = n->n.inputs[0];
    return gt ? 1 : -1;
}

/* The same against 0. */
static int sign_test(rw_graph *g, const char *cond, const char **x, size_t *node)
{
    double z;
    int s = threshold_test(g, cond, x, &z, node);
    return s && z == 0 ? s : 0;
}

/* `v` is Mul(x, s) or Mul(s, x): *s gets the other factor. */
static bool mul_of(rw_graph *g, const char *v, const char *x, const char **s)
{
    size_t p = rw_producer(g, v);
    if (p == RW_NONE || !rw_is(&g->nodes[p], "Mul") || g->nodes[p].n.input_count != 2)
        return false;
    const char *const *in = g->nodes[p].n.inputs;
    if (strcmp(in[0], x) == 0 && strcmp(in[1], x) != 0)
        *s = in[1];
    else if (strcmp(in[1], x) == 0 && strcmp(in[0], x) != 0)
        *s = in[0];
    else
        return false;
    return true;
}

/* `v` is Mul(alpha, Sub(Exp(x), 1)) (either order of the Mul): ELU's branch. */
static bool elu_branch(rw_graph *g, const char *v, const char *x, const char **alpha)
{
    size_t p = rw_producer(g, v);
    if (p == RW_NONE || !rw_is(&g->nodes[p], "Mul") || g->nodes[p].n.input_count != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        size_t s = rw_producer(g, g->nodes[p].n.inputs[k]);
        double one;
        if (s == RW_NONE || !rw_is(&g->nodes[s], "Sub") ||
            !rw_constant_scalar(g, g->nodes[s].n.inputs[1], &one) || one != 1)
            continue;
        size_t e = rw_producer(g, g->nodes[s].n.inputs[0]);
        if (e != RW_NONE && rw_is(&g->nodes[e], "Exp") &&
            strcmp(g->nodes[e].n.inputs[0], x) == 0) {
            *alpha = g->nodes[p].n.inputs[1 - k];
            return true;
        }
    }
    return false;
}

/* Clip(x, 0, 6): RELU6, the one Clip NNAPI and the TFLite delegates all
 * take (min and max inputs from opset 11, attributes before). */
static const char *add_relu6(rw_graph *g, const char *x, cg_dtype dt, const char *hint)
{
    size_t clip;
    if (g->opset >= 11) {
        const char *ins[3] = {x, rw_add_scalar(g, "zero", dt, 0.0), rw_add_scalar(g, "six", dt, 6.0)};
        if (!ins[1] || !ins[2])
            return NULL;
        clip = rw_add_node(g, "Clip", hint, ins, 3, NULL, 1);
    } else {
        clip = rw_add_node(g, "Clip", hint, &x, 1, NULL, 1);
        if (clip != RW_NONE &&
            (!rw_set_attr_float(g, clip, "min", 0.0f) || !rw_set_attr_float(g, clip, "max", 6.0f)))
            return NULL;
    }
    return rw_out(g, clip, 0);
}

/* HardSwish built from two Wheres: 0 below -3, x above 3, and between them
 * mid = x (x + 3) / 6 (Mul, and Mul or Div by constants, in any order).
 * The comparisons go and Clip(x + 3, 0, 6) (NNAPI's RELU6) feeds the
 * product instead: mid is then HardSwish everywhere, the same ops between
 * -3 and 3, 0 below, x 6 / 6 above (x, or one ulp off it). */
typedef struct hswish_match {
    size_t outer, inner, cmp[2];
    const char *x, *s, *mid;
    size_t s_node, s_slot; /* the product's read of s = Add(x, 3) */
} hswish_match;

/* One Where of the pair: its condition compares x with 3 or -3 and the
 * branch it picks beyond the threshold is x (above 3) or 0 (below -3):
 * *side +1 or -1, *rest the other branch. */
static bool hswish_where(rw_graph *g, size_t w, const char **x, int *side, const char **rest,
                         size_t *cmp)
{
    const cg_node *n = &g->nodes[w].n;
    if (!rw_is(&g->nodes[w], "Where") || n->input_count != 3 || n->output_count != 1)
        return false;
    const char *cx = NULL;
    double t, z;
    int dir = threshold_test(g, n->inputs[0], &cx, &t, cmp);
    if (!dir || (t != 3 && t != -3) || (*x && strcmp(*x, cx) != 0))
        return false;
    /* the condition holds beyond the threshold when it points away from 0 */
    bool beyond_true = (t > 0) == (dir > 0);
    const char *beyond = n->inputs[beyond_true ? 1 : 2];
    *rest = n->inputs[beyond_true ? 2 : 1];
    if (t > 0 && strcmp(beyond, cx) == 0)
        *side = 1;
    else if (t < 0 && rw_constant_scalar(g, beyond, &z) && z == 0)
        *side = -1;
    else
        return false;
    *x = cx;
    return true;
}

/* v read once, by the product, and not a graph output. */
static bool read_once(rw_graph *g, const char *v)
{
    return !rw_is_graph_output(g, v) && rw_input_uses(g, v) == 1 && only_reader(g, v) != RW_NONE;
}

/* v is Add(x, 3) (either order). */
static bool add_three(rw_graph *g, const char *v, const char *x)
{
    size_t a = rw_producer(g, v);
    if (a == RW_NONE || !rw_is(&g->nodes[a], "Add") || g->nodes[a].n.input_count != 2)
        return false;
    const char *const *in = g->nodes[a].n.inputs;
    double three;
    for (size_t j = 0; j < 2; j++)
        if (strcmp(in[j], x) == 0 && rw_constant_scalar(g, in[1 - j], &three) && three == 3)
            return true;
    return false;
}

/* v as x * s * k, s = Add(x, 3): Mul of factors, Div by constants; every
 * intermediate read once. Counts x and s, multiplies k, records where s is
 * read. */
static bool hswish_product(rw_graph *g, const char *v, hswish_match *m, int *nx, int *ns,
                           double *k, int depth)
{
    size_t p = rw_producer(g, v);
    if (depth > 6 || p == RW_NONE || g->nodes[p].n.input_count != 2 || !read_once(g, v))
        return false;
    const char *const *in = g->nodes[p].n.inputs;
    bool div = rw_is(&g->nodes[p], "Div");
    if (!div && !rw_is(&g->nodes[p], "Mul"))
        return false;
    for (size_t slot = 0; slot < 2; slot++) {
        double cst;
        if (rw_constant_scalar(g, in[slot], &cst)) {
            if (div && slot == 1 && cst == 0)
                return false;
            *k = div && slot == 1 ? *k / cst : *k * cst;
        } else if (div && slot == 1) {
            return false;
        } else if (strcmp(in[slot], m->x) == 0) {
            (*nx)++;
        } else if ((m->s && strcmp(in[slot], m->s) == 0) || (!m->s && add_three(g, in[slot], m->x))) {
            m->s = in[slot];
            (*ns)++;
            m->s_node = p;
            m->s_slot = slot;
        } else if (!hswish_product(g, in[slot], m, nx, ns, k, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* Where `outer` and the Where it reads make a HardSwish (without edits). */
static bool hswish_match_at(rw_ctx *c, size_t outer, hswish_match *m)
{
    rw_graph *g = c->g;
    const char *rest = NULL;
    int side[2];
    memset(m, 0, sizeof *m);
    m->outer = outer;
    if (!hswish_where(g, outer, &m->x, &side[0], &rest, &m->cmp[0]))
        return false;
    m->inner = rw_producer(g, rest);
    if (m->inner == RW_NONE || !read_once(g, rest) ||
        !hswish_where(g, m->inner, &m->x, &side[1], &m->mid, &m->cmp[1]) || side[0] == side[1])
        return false;
    const char *out = g->nodes[outer].n.outputs[0];
    const cg_value_type *tx = rw_type(c, m->x), *ty = rw_type(c, out);
    if (!is_float(tx) || !ty || ty->rank != tx->rank || rw_captured(g, out))
        return false;
    int nx = 0, ns = 0;
    double k = 1;
    return hswish_product(g, m->mid, m, &nx, &ns, &k, 0) && nx == 1 && ns == 1 &&
           read_once(g, m->s) && fabs(k * 6 - 1) < 1e-6;
}

/* 1: rewritten; 0: not a HardSwish; -1: one the targets do not need rewritten. */
static int hswish_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    hswish_match m;
    if (!hswish_match_at(c, i, &m))
        return 0;
    size_t site[4] = {m.outer, m.inner, m.cmp[0], m.cmp[1]};
    if (!rw_needed_any(c, site, 4))
        return -1;
    const char *hint = g->nodes[i].n.name, *out = g->nodes[i].n.outputs[0];
    const char *clip = add_relu6(g, m.s, float_dtype(c, m.x), hint);
    if (!clip)
        return 0;
    rw_set_input(g, m.s_node, m.s_slot, clip);
    rw_kill(g, m.outer);
    rw_kill(g, m.inner);
    return rw_replace(g, out, m.mid) ? 1 : 0;
}

/* Where i is the inner one of a HardSwish pair (its outer one handles it). */
static bool hswish_inner(rw_ctx *c, size_t i)
{
    size_t r = only_reader(c->g, c->g->nodes[i].n.outputs[0]);
    hswish_match m;
    return r != RW_NONE && hswish_match_at(c, r, &m) && m.inner == i;
}

static bool where_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    if (n->input_count != 3 || n->output_count != 1)
        return false;
    const cg_value_type *ot = rw_type(c, n->outputs[0]);
    if (!is_float(ot))
        return false;
    const char *cond = n->inputs[0], *a = n->inputs[1], *b = n->inputs[2], *x = NULL;
    const char *out = n->outputs[0], *hint = n->name, *s = NULL, *res = NULL;
    size_t cmp;
    int sign = sign_test(g, cond, &x, &cmp);
    size_t site[2] = {i, cmp};
    if (!rw_needed_any(c, site, cmp == RW_NONE ? 1 : 2))
        return false;
    cg_dtype dt = float_dtype(c, out);
    const char *pos = sign > 0 ? a : b, *neg = sign > 0 ? b : a;
    if (sign && strcmp(pos, x) == 0 && (mul_of(g, neg, x, &s) || elu_branch(g, neg, x, &s))) {
        bool elu = !mul_of(g, neg, x, &s) && elu_branch(g, neg, x, &s);
        /* x > 0: Relu(x) + 0; otherwise 0 + the negative branch on Min(x, 0) */
        const char *zero = rw_add_scalar(g, "zero", dt, 0.0);
        rw_kill(g, i);
        const char *r = add_unary(g, "Relu", x, NULL, hint);
        const char *mn = add_binary(g, "Min", x, zero, NULL, hint);
        const char *nb;
        if (elu) {
            const char *one = rw_add_scalar(g, "one", dt, 1.0);
            const char *e = add_unary(g, "Exp", mn, NULL, hint);
            const char *sb = add_binary(g, "Sub", e, one, NULL, hint);
            nb = add_binary(g, "Mul", s, sb, NULL, hint);
        } else {
            nb = add_binary(g, "Mul", mn, s, NULL, hint);
        }
        res = add_binary(g, "Add", r, nb, NULL, hint);
    } else {
        if (rw_type(c, a) && rw_type(c, b) && !is_float(rw_type(c, a)))
            return false;
        /* a m + b (1 - m): exact for finite a and b; a constant condition
         * becomes constant masks, a runtime one a Cast */
        cg_value *cv = NULL;
        if (rw_constant_value(g, cond, &cv, NULL) != CG_OK)
            return false;
        const char *m = NULL, *inv = NULL;
        if (cv) {
            cg_tensor tm, ti;
            bool ok = cv->kind == CG_VALUE_TENSOR && cv->tensor.dtype == CG_DTYPE_BOOL &&
                      cg_tensor_alloc(&tm, dt, cv->tensor.rank, cv->tensor.dims, 0, NULL) == CG_OK;
            if (ok && cg_tensor_alloc(&ti, dt, cv->tensor.rank, cv->tensor.dims, 0, NULL) != CG_OK) {
                cg_tensor_release(&tm);
                ok = false;
            }
            if (ok) {
                for (int64_t e = 0; e < tm.numel; e++) {
                    double v = ((const uint8_t *)cv->tensor.data)[e] ? 1.0 : 0.0;
                    cg_tensor_set_f64(&tm, e, v);
                    cg_tensor_set_f64(&ti, e, 1.0 - v);
                }
                m = rw_add_tensor(g, "mask", &tm);
                inv = rw_add_tensor(g, "mask_inv", &ti);
                cg_tensor_release(&tm);
                cg_tensor_release(&ti);
            }
            cg_value_free(cv);
            if (!m || !inv)
                return false;
            rw_kill(g, i);
        } else {
            rw_kill(g, i);
            size_t cast = rw_add_node(g, "Cast", hint, &cond, 1, NULL, 1);
            if (cast == RW_NONE || !rw_set_attr_int(g, cast, "to", (int64_t)dt))
                return false;
            m = rw_out(g, cast, 0);
            const char *one = rw_add_scalar(g, "one", dt, 1.0);
            inv = add_binary(g, "Sub", one, m, NULL, hint);
        }
        const char *pa = add_binary(g, "Mul", a, m, NULL, hint);
        const char *pb = add_binary(g, "Mul", b, inv, NULL, hint);
        res = add_binary(g, "Add", pa, pb, NULL, hint);
    }
    return res && rw_replace(g, out, res);
}

cg_status rw_where(rw_ctx *c)
{
    rw_graph *g = c->g;
    if (g->opset < 9)
        return CG_OK;
    size_t hswish = 0;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++) {
        if (!rw_is(&g->nodes[i], "Where"))
            continue;
        int h = hswish_site(c, i);
        if (h > 0)
            hswish++;
        else if (h == 0 && !hswish_inner(c, i) && where_site(c, i))
            c->sites++;
    }
    if (c->sites && hswish)
        rw_detail(c, "%zu Where node%s rewritten as arithmetic; %zu Where-built HardSwish as "
                  "x Clip(x + 3, 0, 6) / 6", c->sites, c->sites == 1 ? "" : "s", hswish);
    else if (hswish)
        rw_detail(c, "%zu Where-built HardSwish as x Clip(x + 3, 0, 6) / 6", hswish);
    else if (c->sites)
        rw_detail(c, "%zu Where node%s rewritten as arithmetic", c->sites, c->sites == 1 ? "" : "s");
    c->sites += hswish;
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- hard-activations ---------------------------------------------------------------------- */

/* HardSigmoid(x) = max(0, min(1, a x + b)) as Clip(6a x + 6b, 0, 6) / 6:
 * RELU6 where a Clip to [0, 1] is refused (NNAPI maps only [0, 6] and
 * [-1, 1]); the Mul is left out when 6a is 1 (PyTorch's a = 1/6), the Add
 * when 6b is 0. */
static const char *add_hard_sigmoid(rw_graph *g, const char *x, double a, double b, cg_dtype dt,
                                    const char *hint)
{
    float a6 = (float)(6.0 * a), b6 = (float)(6.0 * b);
    const char *v = x;
    if (a6 != 1.0f)
        v = add_binary(g, "Mul", v, rw_add_scalar(g, "hsig_scale", dt, a6), NULL, hint);
    if (b6 != 0.0f)
        v = add_binary(g, "Add", v, rw_add_scalar(g, "hsig_shift", dt, b6), NULL, hint);
    v = v ? add_relu6(g, v, dt, hint) : NULL;
    return v ? add_binary(g, "Div", v, rw_add_scalar(g, "six", dt, 6.0), NULL, hint) : NULL;
}

cg_status rw_hard_activations(rw_ctx *c)
{
    rw_graph *g = c->g;
    size_t hsig = 0, hswish = 0;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++) {
        bool sig = rw_is(&g->nodes[i], "HardSigmoid"), sw = rw_is(&g->nodes[i], "HardSwish");
        const cg_node *n = &g->nodes[i].n;
        if ((!sig && !sw) || n->input_count != 1 || n->output_count != 1 ||
            !is_float(rw_type(c, n->inputs[0])) || rw_captured(g, n->outputs[0]) ||
            !rw_needed(c, i))
            continue;
        const char *x = n->inputs[0], *out = n->outputs[0], *hint = n->name;
        cg_dtype dt = float_dtype(c, x);
        /* HardSwish is x HardSigmoid(x) with a = 1/6, b = 1/2 */
        double a = sig ? rw_attr_float(g, i, "alpha", 0.2f) : 1.0 / 6.0,
               b = sig ? rw_attr_float(g, i, "beta", 0.5f) : 0.5;
        rw_kill(g, i);
        const char *v = add_hard_sigmoid(g, x, a, b, dt, hint);
        if (sw && v)
            v = add_binary(g, "Mul", x, v, NULL, hint);
        if (!v || !rw_replace(g, out, v))
            break;
        *(sig ? &hsig : &hswish) += 1;
    }
    c->sites = hsig + hswish;
    if (hsig && hswish)
        rw_detail(c, "%zu HardSigmoid and %zu HardSwish as Clip(6a x + 6b, 0, 6) / 6 arithmetic",
                  hsig, hswish);
    else if (c->sites)
        rw_detail(c, "%zu %s as Clip(6a x + 6b, 0, 6) / 6 arithmetic", c->sites,
                  hsig ? "HardSigmoid" : "HardSwish");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- global-pool-to-reduce ------------------------------------------------------------------ */

cg_status rw_global_pool(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++) {
        bool avg = rw_is(&g->nodes[i], "GlobalAveragePool"),
             max = rw_is(&g->nodes[i], "GlobalMaxPool");
        const cg_node *n = &g->nodes[i].n;
        const cg_value_type *t = n->input_count == 1 ? rw_type(c, n->inputs[0]) : NULL;
        if ((!avg && !max) || n->output_count != 1 || !is_float(t) || t->rank < 3 ||
            rw_captured(g, n->outputs[0]) || !rw_needed(c, i))
            continue;
        int64_t axes[CG_MAX_RANK];
        for (int k = 2; k < t->rank; k++)
            axes[k - 2] = k;
        const char *x = n->inputs[0], *out = n->outputs[0], *hint = n->name;
        rw_kill(g, i);
        const char *v = rw_add_reduce(g, avg ? "ReduceMean" : "ReduceMax", x, axes, t->rank - 2,
                                      1, hint);
        if (!v || !rw_replace(g, out, v))
            break;
        c->sites++;
    }
    if (c->sites)
        rw_detail(c, "%zu global pool%s as ReduceMean/ReduceMax over the spatial axes", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- flatten-to-reshape --------------------------------------------------------------------- */

cg_status rw_flatten(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++) {
        const cg_node *n = &g->nodes[i].n;
        const cg_value_type *t = n->input_count == 1 ? rw_static(c, n->inputs[0]) : NULL;
        if (!rw_is(&g->nodes[i], "Flatten") || !t || n->output_count != 1 ||
            rw_captured(g, n->outputs[0]))
            continue;
        int64_t axis = rw_attr_int(g, i, "axis", 1);
        if (axis < 0)
            axis += t->rank;
        if (axis < 0 || axis > t->rank)
            continue;
        int64_t dims[2] = {1, 1};
        bool fits = true;
        for (int k = 0; k < t->rank && fits; k++) {
            int64_t *p = &dims[k < axis ? 0 : 1];
            fits = t->dims[k] >= 0 && (t->dims[k] == 0 || *p <= INT64_MAX / t->dims[k]);
            *p *= fits ? t->dims[k] : 1;
        }
        if (!fits || !rw_needed(c, i))
            continue;
        const char *x = n->inputs[0], *out = n->outputs[0], *hint = n->name;
        rw_kill(g, i);
        const char *v = add_reshape(g, x, 2, dims, NULL, hint);
        if (!v || !rw_replace(g, out, v))
            break;
        c->sites++;
    }
    if (c->sites)
        rw_detail(c, "%zu Flatten node%s as Reshape to a constant shape", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- expand-to-broadcast -------------------------------------------------------------------- */

static bool broadcasting_op(const rw_node *n)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum",
                                      "Mean", "And", "Or", "Xor", "Equal", "Greater", "Less",
                                      "GreaterOrEqual", "LessOrEqual", "Where", "Mod"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (rw_is(n, ops[k]))
            return true;
    return false;
}

/* The numpy broadcast of the static types of node n's inputs, with `from`
 * read as `to`; equals its output's shape? */
static bool broadcast_keeps_shape(rw_ctx *c, size_t node, const char *from, const char *to)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[node].n;
    const cg_value_type *ot = n->output_count ? rw_static(c, n->outputs[0]) : NULL;
    if (!ot)
        return false;
    int64_t dims[CG_MAX_RANK];
    int rank = 0;
    for (size_t k = 0; k < n->input_count; k++) {
        const char *in = strcmp(n->inputs[k], from) == 0 ? to : n->inputs[k];
        const cg_value_type *t = rw_static(c, in);
        if (!t)
            return false;
        int nr = t->rank > rank ? t->rank : rank;
        int64_t nd[CG_MAX_RANK];
        for (int d = 0; d < nr; d++) {
            int64_t a = d - (nr - rank) >= 0 ? dims[d - (nr - rank)] : 1;
            int64_t b = d - (nr - t->rank) >= 0 ? t->dims[d - (nr - t->rank)] : 1;
            if (a != b && a != 1 && b != 1)
                return false;
            nd[d] = a == 1 ? b : a;
        }
        rank = nr;
        memcpy(dims, nd, (size_t)nr * sizeof *nd);
    }
    return rank == ot->rank && memcmp(dims, ot->dims, (size_t)rank * sizeof *dims) == 0;
}

static bool expand_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    if (n->input_count != 2 || n->output_count != 1 || !rw_constant(g, n->inputs[1]))
        return false;
    const char *x = n->inputs[0], *out = n->outputs[0];
    const cg_value_type *xt = rw_static(c, x), *ot = rw_static(c, out);
    if (!xt || !ot || rw_captured(g, out))
        return false;
    size_t cons[64];
    size_t nc = rw_consumers(g, out, cons, 64);
    bool implicit = nc > 0 && nc <= 64 && !rw_is_graph_output(g, out);
    for (size_t k = 0; k < nc && implicit; k++)
        implicit = broadcasting_op(&g->nodes[cons[k]]) && broadcast_keeps_shape(c, cons[k], out, x);
    if (implicit) {
        rw_kill(g, i);
        return rw_replace(g, out, x);
    }
    if (rw_constant(g, x))
        return false; /* constant folding bakes it (within its size limit) */
    cg_tensor ones;
    if (xt->dtype == CG_DTYPE_BOOL || xt->dtype == CG_DTYPE_STRING ||
        cg_tensor_alloc(&ones, xt->dtype, ot->rank, ot->dims, (size_t)64 << 20, NULL) != CG_OK)
        return false;
    for (int64_t e = 0; e < ones.numel; e++)
        cg_tensor_set_f64(&ones, e, 1.0);
    const char *on = rw_add_tensor(g, "ones", &ones);
    cg_tensor_release(&ones);
    rw_kill(g, i);
    const char *res = on ? add_binary(g, "Mul", x, on, NULL, n->name) : NULL;
    return res && rw_replace(g, out, res);
}

cg_status rw_expand(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "Expand") && rw_needed(c, i) && expand_site(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu Expand node%s replaced by broadcasting", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- reflect-pad-to-concat --------------------------------------------------------------------- */

#define PAD_MAX_SLICES 64

static bool pad_site(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    char buf[32];
    const char *mode = rw_attr_string(g, i, "mode", "constant", buf, sizeof buf);
    if (strcmp(mode, "reflect") != 0 || n->output_count != 1 || g->opset < 11 ||
        n->input_count < 2 || (n->input_count > 3 && present(n->inputs[3])))
        return false;
    const cg_value_type *xt = rw_static(c, n->inputs[0]);
    int64_t pads[2 * CG_MAX_RANK];
    int np;
    if (!xt || !const_ints(g, n->inputs[1], pads, 2 * CG_MAX_RANK, &np) || np != 2 * xt->rank)
        return false;
    int r = xt->rank, slices = 0;
    for (int a = 0; a < r; a++) {
        int64_t b = pads[a], e = pads[a + r];
        if (b < 0 || e < 0 || b > xt->dims[a] - 1 || e > xt->dims[a] - 1)
            return false;
        slices += (int)(b + e);
    }
    if (slices == 0 || slices > PAD_MAX_SLICES)
        return false;
    const char *out = n->outputs[0], *cur = n->inputs[0], *hint = n->name;
    rw_kill(g, i);
    for (int a = 0; a < r && cur; a++) {
        int64_t b = pads[a], e = pads[a + r], dim = xt->dims[a], ax = a;
        if (!b && !e)
            continue;
        const char *parts[2 * PAD_MAX_SLICES + 1];
        int np2 = 0;
        for (int64_t j = b; j >= 1; j--) {
            int64_t s0 = j, e0 = j + 1;
            parts[np2++] = add_slice(g, cur, 1, &s0, &e0, &ax, NULL, hint);
        }
        parts[np2++] = cur;
        for (int64_t j = 1; j <= e; j++) {
            int64_t s0 = dim - 1 - j, e0 = dim - j;
            parts[np2++] = add_slice(g, cur, 1, &s0, &e0, &ax, NULL, hint);
        }
        for (int k = 0; k < np2; k++)
            if (!parts[k])
                return false;
        size_t cat = rw_add_node(g, "Concat", hint, parts, (size_t)np2, NULL, 1);
        if (cat == RW_NONE || !rw_set_attr_int(g, cat, "axis", a))
            return false;
        cur = rw_out(g, cat, 0);
    }
    return cur && rw_replace(g, out, cur);
}

cg_status rw_reflect_pad(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "Pad") && rw_needed(c, i) && pad_site(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu reflect Pad node%s rewritten as Slice + Concat", c->sites,
                  c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- gelu-tanh / gelu-sigmoid (opt-in) ---------------------------------------------------- */

/* Erf node i reads x / sqrt(2) (Div by ~1.41421 or Mul by ~0.70711): *x. */
static bool gelu_erf(rw_graph *g, size_t i, const char **x)
{
    const cg_node *n = &g->nodes[i].n;
    size_t p = n->input_count == 1 ? rw_producer(g, n->inputs[0]) : RW_NONE;
    if (p == RW_NONE || g->nodes[p].n.input_count != 2)
        return false;
    const char *const *in = g->nodes[p].n.inputs;
    double v;
    if (rw_is(&g->nodes[p], "Div") && rw_constant_scalar(g, in[1], &v) &&
        fabs(v - sqrt(2.0)) < 1e-5) {
        *x = in[0];
        return true;
    }
    for (int k = 0; k < 2 && rw_is(&g->nodes[p], "Mul"); k++)
        if (rw_constant_scalar(g, in[k], &v) && fabs(v - sqrt(0.5)) < 1e-5) {
            *x = in[1 - k];
            return true;
        }
    return false;
}

static cg_status gelu(rw_ctx *c, bool tanh_form)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++) {
        const char *x;
        if (!rw_is(&g->nodes[i], "Erf") || !gelu_erf(g, i, &x) || !rw_needed(c, i))
            continue;
        const cg_node *n = &g->nodes[i].n;
        const char *out = n->outputs[0], *hint = n->name, *res;
        cg_dtype dt = float_dtype(c, out);
        rw_kill(g, i);
        if (tanh_form) {
            /* erf(x / sqrt 2) ~ tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
            const char *x2 = add_binary(g, "Mul", x, x, NULL, hint);
            const char *x3 = add_binary(g, "Mul", x2, x, NULL, hint);
            const char *k1 = rw_add_scalar(g, "gelu_c", dt, 0.044715);
            const char *k2 = rw_add_scalar(g, "gelu_sqrt_2_over_pi", dt, 0.7978845608028654);
            const char *t1 = add_binary(g, "Mul", x3, k1, NULL, hint);
            const char *t2 = add_binary(g, "Add", x, t1, NULL, hint);
            const char *t3 = add_binary(g, "Mul", t2, k2, NULL, hint);
            res = add_unary(g, "Tanh", t3, NULL, hint);
        } else {
            /* erf(x / sqrt 2) ~ 2 sigmoid(1.702 x) - 1 */
            const char *k = rw_add_scalar(g, "gelu_1_702", dt, 1.702);
            const char *two = rw_add_scalar(g, "two", dt, 2.0), *one = rw_add_scalar(g, "one", dt, 1.0);
            const char *t1 = add_binary(g, "Mul", x, k, NULL, hint);
            const char *t2 = add_unary(g, "Sigmoid", t1, NULL, hint);
            const char *t3 = add_binary(g, "Mul", t2, two, NULL, hint);
            res = add_binary(g, "Sub", t3, one, NULL, hint);
        }
        if (res && rw_replace(g, out, res))
            c->sites++;
    }
    if (c->sites)
        rw_detail(c, "%zu Erf node%s of a GELU approximated by the %s form", c->sites,
                  c->sites == 1 ? "" : "s", tanh_form ? "tanh" : "sigmoid");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

cg_status rw_gelu_tanh(rw_ctx *c) { return gelu(c, true); }
cg_status rw_gelu_sigmoid(rw_ctx *c) { return gelu(c, false); }
