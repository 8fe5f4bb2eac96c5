/*
 * The ai.onnx.preview.training optimizers: Adagrad, Adam and Momentum
 * (standard and Nesterov).
 *
 * Each takes a learning rate R and an iteration count T (scalars), then
 * `groups` lists of n tensors -- X (parameters), G (gradients) and one or two
 * state tensors -- and returns the updated parameters followed by the
 * updated states, each list in the same order as the inputs:
 *   Adagrad  R, T, X..., G..., H...        -> X_new..., H_new...
 *   Momentum R, T, X..., G..., V...        -> X_new..., V_new...
 *   Adam     R, T, X..., G..., V..., H...  -> X_new..., V_new..., H_new...
 * The element formulas are the ONNX operator spec's (and its reference in
 * onnx/backend/test/case/node/{adagrad,adam,momentum}.py); they are
 * deterministic and computed in double, rounded once to float or double.
 */
#include <math.h>
#include <string.h>

#include "run/kernel.h"
#include "run/ops/kernels.h"

typedef enum optim_kind { OPTIM_ADAGRAD, OPTIM_MOMENTUM, OPTIM_NESTEROV, OPTIM_ADAM } optim_kind;

/* Hyper-parameters of one node, with the spec's defaults filled in. */
typedef struct optim_params {
    optim_kind kind;
    double r;          /* learning rate */
    int64_t t;         /* iterations done so far */
    double norm;       /* norm_coefficient: L2 regularization folded into g */
    double norm_post;  /* Adam: norm_coefficient_post */
    double decay;      /* Adagrad: decay_factor */
    double epsilon;    /* Adagrad, Adam */
    double alpha, beta;
} optim_params;

static bool is_optim_float(cg_dtype dt) { return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_DOUBLE; }

/* Fails unless the attribute is present (Momentum's are all required). */
static cg_status require_attr(cg_kernel_ctx *k, const char *name)
{
    if (!cg_kernel_attr(k, name))
        return cg_kernel_fail(k, CG_INVALID, "required attribute '%s' is missing", name);
    return CG_OK;
}

/* Updates element e of one parameter. x, g, v, h are the inputs (v or h
 * unused by some kinds); writes the new values to out_x, out_v, out_h. */
static void optim_element(const optim_params *p, double x, double g, double v, double h,
                          double *out_x, double *out_v, double *out_h)
{
    double gr = p->norm * x + g; /* gradient of the regularized objective */
    switch (p->kind) {
    case OPTIM_ADAGRAD: {
        double r_adj = p->r / (1.0 + (double)p->t * p->decay);
        double h_new = h + gr * gr;
        *out_h = h_new;
        *out_x = x - r_adj * gr / (sqrt(h_new) + p->epsilon);
        break;
    }
    case OPTIM_MOMENTUM:
    case OPTIM_NESTEROV: {
        /* The gradient's coefficient is 1 on the first iteration. */
        double beta = p->t > 0 ? p->beta : 1.0;
        double v_new = p->alpha * v + beta * gr;
        *out_v = v_new;
        if (p->kind == OPTIM_MOMENTUM)
            *out_x = x - p->r * v_new;
        else
            *out_x = x - p->r * (gr + p->alpha * v_new);
        break;
    }
    case OPTIM_ADAM: {
        double v_new = p->alpha * v + (1.0 - p->alpha) * gr;
        double h_new = p->beta * h + (1.0 - p->beta) * (gr * gr);
        double r_adj = p->r;
        if (p->t > 0) /* bias correction of both moments */
            r_adj = p->r * sqrt(1.0 - pow(p->beta, (double)p->t)) /
                    (1.0 - pow(p->alpha, (double)p->t));
        double x_new = x - r_adj * (v_new / (sqrt(h_new) + p->epsilon));
        *out_v = v_new;
        *out_h = h_new;
        *out_x = (1.0 - p->norm_post) * x_new;
        break;
    }
    }
}

/* The shared driver: checks R, T and the tensor lists, allocates the
 * outputs and applies optim_element to every element. `states` is 1 (H or
 * V) or 2 (Adam's V and H). */
static cg_status optim_run(cg_kernel_ctx *k, optim_params *p, int states)
{
    size_t groups = 2 + (size_t)states; /* X, G, states */
    if (k->input_count < 2 + groups || (k->input_count - 2) % groups != 0)
        return cg_kernel_fail(k, CG_INVALID, "expected R, T and %zu lists of equal length as "
                              "inputs, got %zu inputs", groups, k->input_count);
    size_t n = (k->input_count - 2) / groups;
    size_t out_lists = 1 + (size_t)states;
    if (k->output_count > out_lists * n)
        return cg_kernel_fail(k, CG_INVALID, "%zu outputs for %zu parameter tensors (at most "
                              "%zu)", k->output_count, n, out_lists * n);

    const cg_tensor *r, *t;
    cg_status st = cg_kernel_require(k, 0, &r);
    if (st != CG_OK)
        return st;
    st = cg_kernel_require(k, 1, &t);
    if (st != CG_OK)
        return st;
    if (!is_optim_float(r->dtype) || r->numel != 1 || r->rank > 1)
        return cg_kernel_fail(k, CG_INVALID, "R must be a float or double scalar, got %s of "
                              "%lld elements", cg_dtype_name(r->dtype), (long long)r->numel);
    if (t->dtype != CG_DTYPE_INT64 || t->numel != 1 || t->rank > 1)
        return cg_kernel_fail(k, CG_INVALID, "T must be an int64 scalar, got %s of %lld "
                              "elements", cg_dtype_name(t->dtype), (long long)t->numel);
    p->r = cg_tensor_get_f64(r, 0);
    p->t = cg_tensor_get_i64(t, 0);

    for (size_t i = 0; i < n; i++) {
        const cg_tensor *in[4] = {NULL, NULL, NULL, NULL};
        for (size_t g = 0; g < groups; g++) {
            st = cg_kernel_require(k, 2 + g * n + i, &in[g]);
            if (st != CG_OK)
                return st;
        }
        const cg_tensor *x = in[0];
        if (!is_optim_float(x->dtype))
            return cg_kernel_fail(k, CG_INVALID, "parameter input %zu has type %s (float or "
                                  "double expected)", 2 + i, cg_dtype_name(x->dtype));
        for (size_t g = 1; g < groups; g++) {
            const cg_tensor *o = in[g];
            bool same = o->dtype == x->dtype && o->rank == x->rank;
            for (int d = 0; same && d < x->rank; d++)
                same = o->dims[d] == x->dims[d];
            if (!same)
                return cg_kernel_fail(k, CG_INVALID, "input %zu (type %s, rank %d) must have "
                                      "the type and shape of parameter input %zu (type %s, "
                                      "rank %d)", 2 + g * n + i, cg_dtype_name(o->dtype),
                                      o->rank, 2 + i, cg_dtype_name(x->dtype), x->rank);
        }

        /* Outputs of this parameter: X_new at i, states at (1+s)*n + i. */
        cg_tensor *out[3] = {NULL, NULL, NULL};
        for (size_t l = 0; l < out_lists; l++) {
            size_t oi = l * n + i;
            if (oi >= k->output_count)
                continue;
            st = cg_kernel_output(k, oi, x->dtype, x->rank, x->dims, &out[l]);
            if (st != CG_OK)
                return st;
        }
        for (int64_t e = 0; e < x->numel; e++) {
            double xv = cg_tensor_get_f64(x, e), gv = cg_tensor_get_f64(in[1], e);
            double s0 = cg_tensor_get_f64(in[2], e);
            double s1 = states > 1 ? cg_tensor_get_f64(in[3], e) : 0.0;
            double nx = 0.0, nv = 0.0, nh = 0.0;
            /* Adagrad's one state is H; Momentum's is V; Adam has V then H. */
            if (p->kind == OPTIM_ADAGRAD)
                optim_element(p, xv, gv, 0.0, s0, &nx, &nv, &nh);
            else
                optim_element(p, xv, gv, s0, s1, &nx, &nv, &nh);
            double res[3] = {nx, p->kind == OPTIM_ADAGRAD ? nh : nv, nh};
            for (size_t l = 0; l < out_lists; l++)
                if (out[l])
                    cg_tensor_set_f64(out[l], e, res[l]);
        }
    }
    return CG_OK;
}

cg_status cg_op_adagrad(cg_kernel_ctx *k)
{
    optim_params p;
    memset(&p, 0, sizeof p);
    p.kind = OPTIM_ADAGRAD;
    p.decay = cg_attr_float(k, "decay_factor", 0.0f);
    p.epsilon = cg_attr_float(k, "epsilon", 1e-6f);
    p.norm = cg_attr_float(k, "norm_coefficient", 0.0f);
    return optim_run(k, &p, 1);
}

cg_status cg_op_adam(cg_kernel_ctx *k)
{
    optim_params p;
    memset(&p, 0, sizeof p);
    p.kind = OPTIM_ADAM;
    p.alpha = cg_attr_float(k, "alpha", 0.9f);
    p.beta = cg_attr_float(k, "beta", 0.999f);
    p.epsilon = cg_attr_float(k, "epsilon", 1e-6f);
    p.norm = cg_attr_float(k, "norm_coefficient", 0.0f);
    p.norm_post = cg_attr_float(k, "norm_coefficient_post", 0.0f);
    return optim_run(k, &p, 2);
}

cg_status cg_op_momentum(cg_kernel_ctx *k)
{
    static const char *required[] = {"alpha", "beta", "mode", "norm_coefficient"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        cg_status st = require_attr(k, required[i]);
        if (st != CG_OK)
            return st;
    }
    optim_params p;
    memset(&p, 0, sizeof p);
    const char *mode = cg_attr_string(k, "mode", "");
    if (strcmp(mode, "standard") == 0)
        p.kind = OPTIM_MOMENTUM;
    else if (strcmp(mode, "nesterov") == 0)
        p.kind = OPTIM_NESTEROV;
    else
        return cg_kernel_fail(k, CG_INVALID, "mode '%s' is not 'standard' or 'nesterov'",
                              mode);
    p.alpha = cg_attr_float(k, "alpha", 0.0f);
    p.beta = cg_attr_float(k, "beta", 0.0f);
    p.norm = cg_attr_float(k, "norm_coefficient", 0.0f);
    return optim_run(k, &p, 1);
}
