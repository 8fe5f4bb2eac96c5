/*
 * Cleanup rewrites (rewrites.def): Identity/Dropout elimination, shape
 * folding, constant folding, bias-Add and BatchNormalization folding, common
 * subexpression elimination and dead-node elimination. They apply
 * wherever they match, whatever the target; each keeps the name of every
 * value it keeps, so later reports still find them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "core/arena.h"
#include "ir/walk.h"
#include "rewrite/rewrite_internal.h"
#include "target/registry.h"

static bool present(const char *s) { return s && s[0]; }

/* --- identity-elimination ----------------------------------------------------------- */

/* A Dropout that is the identity: inference (no training_mode input, or a
 * constant false one) and its mask output unread. */
static bool dropout_is_identity(rw_graph *g, size_t i)
{
    const cg_node *n = &g->nodes[i].n;
    if (n->output_count > 1 && present(n->outputs[1])) {
        size_t tmp[1];
        if (rw_is_graph_output(g, n->outputs[1]) || rw_consumers(g, n->outputs[1], tmp, 1))
            return false;
    }
    if (g->opset < 12)
        return rw_attr_int(g, i, "is_test", 1) != 0 || g->opset >= 7;
    if (n->input_count > 2 && present(n->inputs[2])) {
        double v;
        return rw_constant_scalar(g, n->inputs[2], &v) && v == 0;
    }
    return true;
}

cg_status rw_identity_elimination(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->node_count; i++) {
        rw_node *nd = &g->nodes[i];
        bool id = rw_is(nd, "Identity"), drop = rw_is(nd, "Dropout");
        if ((!id && !drop) || nd->n.input_count < 1 || nd->n.output_count < 1)
            continue;
        const char *in = nd->n.inputs[0], *out = nd->n.outputs[0];
        if (!present(in) || !present(out) || (drop && !dropout_is_identity(g, i)))
            continue;
        /* an output fed straight from an input or initializer needs the node */
        if (rw_is_graph_output(g, out) && rw_producer(g, in) == RW_NONE)
            continue;
        if (rw_is_graph_output(g, out) && rw_is_graph_output(g, in))
            continue;
        if (rw_captured(g, out) || rw_captured(g, in))
            continue;
        rw_kill(g, i);
        if (!rw_replace(g, out, in)) {
            g->nodes[i].dead = false; /* cannot rewire: keep it */
            continue;
        }
        c->sites++;
    }
    if (c->sites)
        rw_detail(c, "%zu Identity/Dropout node%s removed", c->sites, c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- shape-folding -------------------------------------------------------------------- */

/* Fixes every dim of the graph inputs named by a --dim binding. */
static size_t fix_input_dims(rw_ctx *c)
{
    rw_graph *g = c->g;
    size_t fixed = 0;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_type *t = g->inputs[i].type;
        if (!t || t->kind != CG_TYPE_TENSOR || !t->shape)
            continue;
        bool any = false;
        for (size_t d = 0; d < t->shape->rank; d++)
            for (size_t k = 0; k < c->dim_count && !any; k++)
                any = !t->shape->dims[d].has_value && t->shape->dims[d].param &&
                      strcmp(t->shape->dims[d].param, c->dims[k].symbol) == 0;
        if (!any)
            continue;
        cg_type *nt = cg_arena_alloc(g->arena, sizeof *nt);
        cg_shape *ns = cg_arena_alloc(g->arena, sizeof *ns);
        cg_dim *dims = cg_arena_alloc(g->arena, (t->shape->rank + 1) * sizeof *dims);
        if (!nt || !ns || !dims) {
            g->oom = true;
            return fixed;
        }
        *nt = *t;
        *ns = *t->shape;
        for (size_t d = 0; d < t->shape->rank; d++) {
            dims[d] = t->shape->dims[d];
            for (size_t k = 0; k < c->dim_count; k++)
                if (!dims[d].has_value && dims[d].param &&
                    strcmp(dims[d].param, c->dims[k].symbol) == 0) {
                    dims[d].param = NULL;
                    dims[d].value = c->dims[k].value;
                    dims[d].has_value = true;
                    fixed++;
                }
        }
        ns->dims = dims;
        nt->shape = ns;
        g->inputs[i].type = nt;
        g->edits++;
    }
    return fixed;
}

cg_status rw_shape_folding(rw_ctx *c)
{
    rw_graph *g = c->g;
    size_t fixed = c->dim_count ? fix_input_dims(c) : 0;
    for (size_t i = 0; i < g->src_node_count; i++) {
        rw_node *nd = &g->nodes[i];
        bool shape = rw_is(nd, "Shape"), size = rw_is(nd, "Size");
        if ((!shape && !size) || nd->n.input_count != 1 || nd->n.output_count != 1)
            continue;
        const char *in = nd->n.inputs[0], *out = nd->n.outputs[0];
        const cg_value_type *t = rw_static(c, in);
        if (!t || rw_captured(g, out))
            continue;
        int64_t v[CG_MAX_RANK], n = 0, numel = 1;
        if (shape) {
            int64_t r = t->rank, start = 0;
            int64_t len = cg_shape_slice(r, rw_attr_int(g, i, "start", 0),
                                         rw_attr_int(g, i, "end", r), &start);
            for (int64_t d = start; d < start + len; d++)
                v[n++] = t->dims[d];
        } else {
            for (int d = 0; d < t->rank; d++)
                numel *= t->dims[d];
            v[0] = numel;
        }
        cg_tensor ten;
        int64_t dims[1] = {n};
        if (cg_tensor_alloc(&ten, CG_DTYPE_INT64, shape ? 1 : 0, dims, 0, c->err) != CG_OK)
            return c->err->status;
        memcpy(ten.data, v, (size_t)(shape ? n : 1) * sizeof *v);
        rw_kill(g, i);
        const char *name = rw_add_tensor_named(g, out, &ten); /* the value keeps its name */
        cg_tensor_release(&ten);
        if (!name)
            break;
        c->sites++;
    }
    if (c->sites || fixed)
        rw_detail(c, "%zu Shape/Size node%s folded%s", c->sites, c->sites == 1 ? "" : "s",
                  fixed ? "; the input dims --dim binds fixed in the model" : "");
    if (fixed && !c->sites)
        c->sites = 1; /* fixing the input dims is the change */
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- constant-folding ----------------------------------------------------------------- */

#define FOLD_MAX_BYTES ((size_t)64 << 20)   /* one folded output */
#define FOLD_BLOAT_BYTES ((size_t)1 << 20)  /* above this, no output may outgrow its inputs 4x */

static bool foldable_op(const cg_node *n)
{
    static const char *const never[] = {
        "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Multinomial",
        "Bernoulli", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear", "If", "Loop",
        "Scan"};
    if (!cg_domain_is_default(n->domain) || !n->op_type)
        return false;
    for (size_t k = 0; k < sizeof never / sizeof *never; k++)
        if (strcmp(n->op_type, never[k]) == 0)
            return false;
    for (size_t a = 0; a < n->attr_count; a++)
        if (n->attrs[a].g || n->attrs[a].graphs_count)
            return false;
    return true;
}

/* Runs node i of g on its constant inputs with the reference kernels.
 * outs[k] gets output k (NULL for an omitted one); the caller frees them. */
static cg_status eval_node(rw_graph *g, size_t i, cg_value **outs, cg_error *err)
{
    const cg_node *n = &g->nodes[i].n;
    cg_tensor_proto *inits = calloc(n->input_count + 1, sizeof *inits);
    cg_value_info *vis = calloc(n->output_count + 1, sizeof *vis);
    cg_named_value *got = NULL;
    size_t ngot = 0, ninit = 0, nvis = 0;
    cg_runtime *rt = NULL;
    cg_status st = CG_OK;
    if (!inits || !vis) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n->input_count; k++) {
        if (!present(n->inputs[k]))
            continue;
        bool dup = false;
        for (size_t j = 0; j < ninit && !dup; j++)
            dup = strcmp(inits[j].name, n->inputs[k]) == 0;
        if (dup)
            continue;
        inits[ninit] = *rw_constant(g, n->inputs[k]);
        inits[ninit++].name = n->inputs[k];
    }
    for (size_t k = 0; k < n->output_count; k++)
        if (present(n->outputs[k]))
            vis[nvis++].name = n->outputs[k];
    cg_graph one;
    memset(&one, 0, sizeof one);
    one.name = "fold";
    one.nodes = (cg_node *)n;
    one.node_count = 1;
    one.initializers = inits;
    one.initializer_count = ninit;
    one.outputs = vis;
    one.output_count = nvis;
    cg_model m = *g->src;
    m.graph = &one;
    m.function_count = 0;
    m.training_info_count = 0;
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if ((st = cg_runtime_init(&m, &ro, &rt, err)) != CG_OK ||
        (st = cg_runtime_run(rt, NULL, 0, &got, &ngot, err)) != CG_OK)
        goto done;
    for (size_t k = 0, j = 0; k < n->output_count; k++) {
        outs[k] = NULL;
        if (present(n->outputs[k]) && j < ngot) {
            outs[k] = got[j].value;
            got[j++].value = NULL;
        }
    }
done:
    cg_runtime_free_outputs(got, ngot);
    cg_runtime_free(rt);
    free(inits);
    free(vis);
    return st;
}

static bool all_inputs_constant(rw_graph *g, const cg_node *n, size_t *in_bytes)
{
    *in_bytes = 0;
    for (size_t k = 0; k < n->input_count; k++) {
        if (!present(n->inputs[k]))
            continue;
        const cg_tensor_proto *tp = rw_constant(g, n->inputs[k]);
        if (!tp)
            return false;
        *in_bytes += cg_tensor_proto_bytes(tp);
    }
    return true;
}

/* Folds node i when it can; true when it did. */
static bool fold_one(rw_ctx *c, size_t i)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[i].n;
    size_t in_bytes;
    if (!foldable_op(n) || n->output_count == 0 || !all_inputs_constant(g, n, &in_bytes))
        return false;
    if (n->input_count == 0 && !rw_is(&g->nodes[i], "Constant"))
        return false;
    for (size_t k = 0; k < n->output_count; k++)
        if (present(n->outputs[k]) && (rw_captured(g, n->outputs[k]) ||
                                       rw_is_graph_input(g, n->outputs[k])))
            return false;
    cg_value *outs[16] = {0};
    if (n->output_count > 16)
        return false;
    cg_error e;
    cg_error_clear(&e);
    if (eval_node(g, i, outs, &e) != CG_OK) {
        if (e.status == CG_NOMEM)
            g->oom = true;
        return false;
    }
    bool ok = true;
    size_t out_bytes = 0;
    for (size_t k = 0; k < n->output_count && ok; k++) {
        if (!present(n->outputs[k]))
            continue;
        ok = outs[k] && outs[k]->kind == CG_VALUE_TENSOR &&
             outs[k]->tensor.dtype != CG_DTYPE_STRING;
        if (ok)
            out_bytes += cg_tensor_bytes(&outs[k]->tensor);
    }
    ok = ok && out_bytes <= FOLD_MAX_BYTES &&
         (out_bytes <= FOLD_BLOAT_BYTES || out_bytes <= 4 * in_bytes);
    if (ok) {
        /* the folded values keep their names: nothing downstream changes */
        rw_kill(g, i);
        for (size_t k = 0; k < n->output_count && ok; k++) {
            if (!present(n->outputs[k]))
                continue;
            ok = rw_add_tensor_named(g, n->outputs[k], &outs[k]->tensor) != NULL;
        }
    }
    for (size_t k = 0; k < n->output_count; k++)
        cg_value_free(outs[k]);
    return ok;
}

cg_status rw_constant_folding(rw_ctx *c)
{
    rw_graph *g = c->g;
    /* repeated passes: a folded node makes its readers foldable */
    for (bool again = true; again && !g->oom;) {
        again = false;
        for (size_t i = 0; i < g->node_count && !g->oom; i++)
            if (!g->nodes[i].dead && fold_one(c, i)) {
                c->sites++;
                again = true;
            }
    }
    if (c->sites)
        rw_detail(c, "%zu node%s folded into initializers", c->sites, c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- bn-folding ----------------------------------------------------------------------- */

/* The float32 constant of name as a tensor with numel elements, or NULL. */
static cg_value *const_f32(rw_graph *g, const char *name, int64_t numel)
{
    cg_value *v = NULL;
    if (!present(name) || rw_constant_value(g, name, &v, NULL) != CG_OK || !v)
        return NULL;
    if (v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT ||
        (numel >= 0 && v->tensor.numel != numel)) {
        cg_value_free(v);
        return NULL;
    }
    return v;
}

/* --- conv-bias-folding ------------------------------------------------------------------ */

/* The channel count of Conv or ConvTranspose node p's output from its
 * weights (a float32 constant, returned in *w), or 0. */
static int64_t conv_channels(rw_graph *g, size_t p, cg_value **w)
{
    const cg_node *pn = &g->nodes[p].n;
    bool conv = rw_is(&g->nodes[p], "Conv"), convt = rw_is(&g->nodes[p], "ConvTranspose");
    int64_t group = rw_attr_int(g, p, "group", 1);
    *w = NULL;
    if ((!conv && !convt) || pn->input_count < 2 || pn->output_count != 1 || group < 1 ||
        !(*w = const_f32(g, pn->inputs[1], -1)) || (*w)->tensor.rank < 3)
        return 0;
    int64_t ch = conv ? (*w)->tensor.dims[0] : (*w)->tensor.dims[1];
    return convt && ch > INT64_MAX / group ? 0 : convt ? ch * group : ch;
}

/* An Add of a per-channel constant after a Conv or ConvTranspose (the
 * pattern of exporters that keep the bias apart, Paddle's among them)
 * folded into the Conv's bias, so that the BatchNormalization after it
 * folds too. */
static bool fold_bias_add(rw_ctx *c, size_t a)
{
    rw_graph *g = c->g;
    const cg_node *an = &g->nodes[a].n;
    if (an->input_count != 2 || an->output_count != 1 || rw_captured(g, an->outputs[0]))
        return false;
    for (int side = 0; side < 2; side++) {
        const char *y = an->inputs[side], *k = an->inputs[1 - side];
        size_t p = rw_producer(g, y), cons[2];
        const cg_value_type *yt = rw_type(c, y);
        if (p == RW_NONE || !yt || yt->rank < 3 || rw_is_graph_output(g, y) ||
            rw_consumers(g, y, cons, 2) != 1 || rw_input_uses(g, y) != 1)
            continue;
        cg_value *w = NULL, *kv = NULL, *bias = NULL;
        int64_t ch = conv_channels(g, p, &w);
        const cg_node *pn = &g->nodes[p].n;
        bool ok = ch > 0 && (kv = const_f32(g, k, -1)) != NULL && kv->tensor.rank <= yt->rank;
        /* the constant broadcasts along the channel axis only: numel 1, or
         * ch with every other dim 1 and the channel dim at axis 1 of y */
        if (ok && kv->tensor.numel != 1) {
            int r = kv->tensor.rank, cax = 1 - (yt->rank - r);
            ok = kv->tensor.numel == ch && cax >= 0 && cax < r && kv->tensor.dims[cax] == ch;
        }
        if (ok && pn->input_count > 2 && present(pn->inputs[2]))
            ok = (bias = const_f32(g, pn->inputs[2], ch)) != NULL;
        cg_tensor nb;
        int64_t nb_dims[1] = {ch};
        ok = ok && cg_tensor_alloc(&nb, CG_DTYPE_FLOAT, 1, nb_dims, 0, NULL) == CG_OK;
        bool done = false;
        if (ok) {
            float *bd = nb.data;
            const float *kd = kv->tensor.data, *b0 = bias ? bias->tensor.data : NULL;
            for (int64_t e = 0; e < ch; e++)
                bd[e] = (b0 ? b0[e] : 0.0f) + kd[kv->tensor.numel == 1 ? 0 : e];
            const char *bname = rw_add_tensor(g, an->outputs[0], &nb);
            cg_tensor_release(&nb);
            const char *ins[3] = {pn->inputs[0], pn->inputs[1], bname}, *out = an->outputs[0];
            size_t q = bname ? rw_add_node(g, pn->op_type, pn->name, ins, 3, NULL, 1) : RW_NONE;
            if (q != RW_NONE && rw_copy_attrs(g, q, pn)) {
                rw_kill(g, p);
                rw_kill(g, a);
                done = rw_replace(g, out, rw_out(g, q, 0));
            }
        }
        cg_value_free(w);
        cg_value_free(kv);
        cg_value_free(bias);
        if (done || g->oom)
            return done;
    }
    return false;
}

cg_status rw_conv_bias_folding(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "Add") && fold_bias_add(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu per-channel Add%s folded into the bias of the Conv before %s", c->sites,
                  c->sites == 1 ? "" : "s", c->sites == 1 ? "it" : "them");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* Folds BatchNormalization node b into its producer p (Conv, ConvTranspose
 * or Gemm); false when the site does not fit. */
static bool fold_bn(rw_ctx *c, size_t b)
{
    rw_graph *g = c->g;
    const cg_node *bn = &g->nodes[b].n;
    size_t tmp[1];
    if (bn->input_count != 5 || bn->output_count < 1 || rw_used_outputs(g, b) != 1 ||
        rw_attr_int(g, b, "training_mode", 0) != 0 || !present(bn->outputs[0]) ||
        (!rw_is_graph_output(g, bn->outputs[0]) && !rw_consumers(g, bn->outputs[0], tmp, 1)))
        return false;
    size_t p = rw_producer(g, bn->inputs[0]), cons[2];
    if (p == RW_NONE || rw_consumers(g, bn->inputs[0], cons, 2) != 1 ||
        rw_is_graph_output(g, bn->inputs[0]))
        return false;
    const cg_node *pn = &g->nodes[p].n;
    bool conv = rw_is(&g->nodes[p], "Conv"), convt = rw_is(&g->nodes[p], "ConvTranspose"),
         gemm = rw_is(&g->nodes[p], "Gemm");
    if ((!conv && !convt && !gemm) || pn->input_count < 2 || pn->output_count != 1)
        return false;
    cg_value *w = const_f32(g, pn->inputs[1], -1), *bias = NULL, *par[4] = {0};
    bool ok = w && w->tensor.rank >= 2;
    int64_t ch = 0;
    int64_t trans_b = gemm ? rw_attr_int(g, p, "transB", 0) : 0;
    int64_t group = conv || convt ? rw_attr_int(g, p, "group", 1) : 1;
    if (ok) {
        if (conv)
            ch = w->tensor.dims[0];
        else if (convt)
            ch = w->tensor.dims[1] * group;
        else
            ch = w->tensor.rank == 2 ? w->tensor.dims[trans_b ? 0 : 1] : 0;
        ok = ch > 0 && group >= 1 && (!gemm || w->tensor.rank == 2);
    }
    for (int k = 0; k < 4 && ok; k++)
        ok = (par[k] = const_f32(g, bn->inputs[k + 1], ch)) != NULL;
    /* Gemm: alpha A B + beta C, then BN: alpha A (B f) + f (beta C - mean) + shift */
    double beta = gemm ? rw_attr_float(g, p, "beta", 1.0f) : 1.0;
    if (ok && pn->input_count > 2 && present(pn->inputs[2])) {
        bias = const_f32(g, pn->inputs[2], -1);
        ok = bias && (bias->tensor.numel == ch || (gemm && bias->tensor.numel == 1));
    }
    if (!ok) {
        cg_value_free(w);
        cg_value_free(bias);
        for (int k = 0; k < 4; k++)
            cg_value_free(par[k]);
        return false;
    }
    double eps = rw_attr_float(g, b, "epsilon", 1e-5f);
    const float *scale = par[0]->tensor.data, *shift = par[1]->tensor.data,
                *mean = par[2]->tensor.data, *var = par[3]->tensor.data;
    double *f = malloc((size_t)ch * sizeof *f);
    cg_tensor nb;
    int64_t nb_dims[1] = {ch};
    bool built = f && cg_tensor_alloc(&nb, CG_DTYPE_FLOAT, 1, nb_dims, 0, NULL) == CG_OK;
    if (built) {
        float *wd = w->tensor.data, *bd = nb.data;
        for (int64_t k = 0; k < ch; k++)
            f[k] = (double)scale[k] / sqrt((double)var[k] + eps);
        int64_t numel = w->tensor.numel;
        if (conv) {
            int64_t per = numel / ch;
            for (int64_t e = 0; e < numel; e++)
                wd[e] = (float)(wd[e] * f[e / per]);
        } else if (convt) {
            /* W: [Cin, Cout/group, k...]; output channel gi * Cout_g + o */
            int64_t cin = w->tensor.dims[0], cout_g = w->tensor.dims[1];
            int64_t per = numel / (cin * cout_g), cin_g = cin / group;
            for (int64_t e = 0; e < numel; e++) {
                int64_t ci = e / (cout_g * per), o = (e / per) % cout_g;
                wd[e] = (float)(wd[e] * f[(ci / cin_g) * cout_g + o]);
            }
        } else {
            int64_t rows = w->tensor.dims[0], cols = w->tensor.dims[1];
            for (int64_t r = 0; r < rows; r++)
                for (int64_t q = 0; q < cols; q++)
                    wd[r * cols + q] = (float)(wd[r * cols + q] * f[trans_b ? r : q]);
        }
        for (int64_t k = 0; k < ch; k++) {
            double b0 = 0;
            if (bias) {
                const float *bv = bias->tensor.data;
                b0 = beta * (double)bv[bias->tensor.numel == 1 ? 0 : k];
            }
            bd[k] = (float)((b0 - mean[k]) * f[k] + shift[k]);
        }
    }
    bool done = false;
    if (built) {
        const char *wn = rw_add_tensor(g, pn->inputs[1], &w->tensor);
        const char *bname = rw_add_tensor(g, bn->outputs[0], &nb);
        cg_tensor_release(&nb);
        const char *x = pn->inputs[0], *bout = bn->outputs[0], *pout = pn->outputs[0];
        if (wn && bname) {
            const char *ins[3] = {x, wn, bname};
            size_t q = rw_add_node(g, pn->op_type, pn->name, ins, 3, NULL, 1);
            if (q != RW_NONE && rw_copy_attrs(g, q, pn)) {
                if (gemm && !rw_set_attr_float(g, q, "beta", 1.0f))
                    q = RW_NONE;
                if (q != RW_NONE) {
                    rw_kill(g, p);
                    rw_kill(g, b);
                    (void)pout;
                    done = rw_replace(g, bout, rw_out(g, q, 0));
                }
            }
        }
    }
    free(f);
    cg_value_free(w);
    cg_value_free(bias);
    for (int k = 0; k < 4; k++)
        cg_value_free(par[k]);
    return done;
}

cg_status rw_bn_folding(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "BatchNormalization") && fold_bn(c, i))
            c->sites++;
    if (c->sites)
        rw_detail(c, "%zu BatchNormalization node%s folded into the weights before them",
                  c->sites, c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- cse -------------------------------------------------------------------------------- */

static bool bytes_eq(cg_bytes a, cg_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

static bool tensor_attr_eq(const cg_tensor_proto *a, const cg_tensor_proto *b)
{
    cg_value *va = NULL, *vb = NULL;
    bool eq = false;
    if (cg_value_from_tensor_proto(a, &va, NULL) == CG_OK &&
        cg_value_from_tensor_proto(b, &vb, NULL) == CG_OK && va->kind == CG_VALUE_TENSOR &&
        vb->kind == CG_VALUE_TENSOR && va->tensor.dtype == vb->tensor.dtype &&
        va->tensor.dtype != CG_DTYPE_STRING && va->tensor.rank == vb->tensor.rank &&
        memcmp(va->tensor.dims, vb->tensor.dims, (size_t)va->tensor.rank * sizeof(int64_t)) == 0)
        eq = memcmp(va->tensor.data, vb->tensor.data, cg_tensor_bytes(&va->tensor)) == 0;
    cg_value_free(va);
    cg_value_free(vb);
    return eq;
}

static bool attr_eq(const cg_attr *a, const cg_attr *b)
{
    if (!a->name || !b->name || strcmp(a->name, b->name) != 0 || a->type != b->type)
        return false;
    if (a->g || b->g || a->graphs_count || b->graphs_count || a->sparse_tensor ||
        b->sparse_tensor || a->tensors_count || b->tensors_count || a->tp || b->tp)
        return false;
    if (a->has_i != b->has_i || a->i != b->i || a->has_f != b->has_f ||
        memcmp(&a->f, &b->f, sizeof a->f) != 0 || !bytes_eq(a->s, b->s))
        return false;
    if (a->ints_count != b->ints_count || a->floats_count != b->floats_count ||
        a->strings_count != b->strings_count)
        return false;
    if (a->ints_count && memcmp(a->ints, b->ints, a->ints_count * sizeof *a->ints) != 0)
        return false;
    if (a->floats_count && memcmp(a->floats, b->floats, a->floats_count * sizeof *a->floats) != 0)
        return false;
    for (size_t k = 0; k < a->strings_count; k++)
        if (!bytes_eq(a->strings[k], b->strings[k]))
            return false;
    if ((a->t != NULL) != (b->t != NULL))
        return false;
    return !a->t || tensor_attr_eq(a->t, b->t);
}

static bool same_node(const cg_node *a, const cg_node *b)
{
    if (!a->op_type || !b->op_type || strcmp(a->op_type, b->op_type) != 0 ||
        cg_domain_is_default(a->domain) != cg_domain_is_default(b->domain) ||
        (!cg_domain_is_default(a->domain) && strcmp(a->domain, b->domain) != 0) ||
        a->input_count != b->input_count || a->output_count != b->output_count ||
        a->attr_count != b->attr_count)
        return false;
    for (size_t k = 0; k < a->input_count; k++)
        if (strcmp(a->inputs[k] ? a->inputs[k] : "", b->inputs[k] ? b->inputs[k] : "") != 0)
            return false;
    for (size_t k = 0; k < a->output_count; k++)
        if (present(a->outputs[k]) != present(b->outputs[k]))
            return false;
    for (size_t k = 0; k < a->attr_count; k++) {
        const cg_attr *mate = NULL;
        for (size_t j = 0; j < b->attr_count && !mate; j++)
            if (a->attrs[k].name && b->attrs[j].name &&
                strcmp(a->attrs[k].name, b->attrs[j].name) == 0)
                mate = &b->attrs[j];
        if (!mate || !attr_eq(&a->attrs[k], mate))
            return false;
    }
    return true;
}

cg_status rw_cse(rw_ctx *c)
{
    rw_graph *g = c->g;
    for (bool again = true; again && !g->oom;) {
        again = false;
        for (size_t j = 0; j < g->node_count && !g->oom; j++) {
            rw_node *b = &g->nodes[j];
            if (b->dead || !foldable_op(&b->n) || b->n.output_count == 0)
                continue;
            for (size_t i = 0; i < j; i++) {
                rw_node *a = &g->nodes[i];
                if (a->dead || !same_node(&a->n, &b->n))
                    continue;
                bool ok = true;
                for (size_t k = 0; k < b->n.output_count && ok; k++)
                    ok = !present(b->n.outputs[k]) ||
                         (!rw_is_graph_output(g, b->n.outputs[k]) &&
                          !rw_captured(g, b->n.outputs[k]));
                if (!ok)
                    continue;
                rw_kill(g, j);
                for (size_t k = 0; k < b->n.output_count; k++)
                    if (present(b->n.outputs[k]) && !rw_replace(g, b->n.outputs[k], a->n.outputs[k]))
                        ok = false;
                if (ok) {
                    c->sites++;
                    again = true;
                } else {
                    b->dead = false;
                }
                break;
            }
        }
    }
    if (c->sites)
        rw_detail(c, "%zu duplicate node%s merged", c->sites, c->sites == 1 ? "" : "s");
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- dead-node-elimination -------------------------------------------------------------- */

cg_status rw_dead_nodes(rw_ctx *c)
{
    rw_graph *g = c->g;
    size_t inits = 0;
    for (size_t i = 0; i < g->init_count; i++)
        inits += !g->init_dead[i];
    c->sites = rw_prune(g, true);
    size_t after = 0;
    for (size_t i = 0; i < g->init_count; i++)
        after += !g->init_dead[i];
    if (c->sites || after < inits)
        rw_detail(c, "%zu unread node%s and %zu unread initializer%s removed", c->sites,
                  c->sites == 1 ? "" : "s", inits - after, inits - after == 1 ? "" : "s");
    if (!c->sites && after < inits)
        c->sites = 1;
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}
