/*
 * Capability profiles, evaluation: a profile read by profile_parse.c
 * (the form of profile_form.h) becomes a profiled cg_target whose supports
 * checks one node at a time against the op's rules and the global limits,
 * and writes the failed rule and the offending value. Evaluation never
 * fails: a rule that cannot be checked (unknown type of a value it needs)
 * refuses the node and says why. Also: a profile bound to parameter values
 * ("nnapi@27") and the accessors of registry.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "convgate/schema.h"
#include "ir/walk.h"
#include "target/profile_form.h"

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

/* Input i (type t) against the node's first present input (first_i, of
 * type first); false with the reason written. */
typedef bool (*pf_input_pair)(pf_eval *ev, size_t first_i, const cg_value_type *first,
                              size_t i, const cg_value_type *t);

/* Every present input after the first against the first, by pair; an
 * input of unknown type refuses the node for `rule`. */
static bool inputs_against_first(pf_eval *ev, const char *rule, pf_input_pair pair)
{
    const cg_node *n = ev->q->node;
    const cg_value_type *first = NULL;
    size_t first_i = 0;
    for (size_t i = 0; i < n->input_count; i++) {
        if (!present(n->inputs[i]))
            continue;
        const cg_value_type *t = input_type(ev, i);
        if (!t || !t->known)
            return fail_unknown(ev, true, i, n->inputs[i], rule);
        if (!first) {
            first = t;
            first_i = i;
        } else if (!pair(ev, first_i, first, i, t)) {
            return false;
        }
    }
    return true;
}

static bool same_dtype(pf_eval *ev, size_t first_i, const cg_value_type *first, size_t i,
                       const cg_value_type *t)
{
    if (t->dtype == first->dtype)
        return true;
    rb_node(ev);
    rb_add(&ev->rb, "inputs mix dtypes: input %zu is %s, input %zu is %s, and %s requires one "
           "dtype", first_i, cg_dtype_name(first->dtype), i, cg_dtype_name(t->dtype),
           ev->p->target.name);
    rb_note(ev, ev->p->limits.note_mixed);
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
    return l->mixed_input_dtypes || inputs_against_first(ev, "the no-mixed-dtypes rule",
                                                         same_dtype);
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

static bool broadcast_ok(pf_eval *ev, size_t first_i, const cg_value_type *first, size_t i,
                         const cg_value_type *t)
{
    bool ok = ev->op->broadcast == BC_NONE
                  ? cg_shape_equal(first->rank, first->dims, t->rank, t->dims)
                  : tflite_gpu_broadcast_ok(first, t);
    if (ok)
        return true;
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

static bool check_broadcast(pf_eval *ev)
{
    return ev->op->broadcast == BC_NUMPY ||
           inputs_against_first(ev, "its broadcast rule", broadcast_ok);
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
    ev.op = pf_find_op(p, domain, n->op_type);
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
        pf_profile_free(t->impl);
}

static const cg_target_vtable profile_vtable = {
    profile_supports, NULL, NULL, NULL, profile_destroy,
};

cg_status cg_profile_load(const char *path, cg_target **out, cg_error *err)
{
    *out = NULL;
    pf_profile *p = NULL;
    cg_status st = pf_profile_read(path, &p, err);
    if (st != CG_OK)
        return st;
    p->target.vt = &profile_vtable;
    p->target.impl = p;
    *out = &p->target;
    return CG_OK;
}

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

