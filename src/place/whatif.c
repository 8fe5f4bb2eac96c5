/*
 * What-if placement: a target that answers as another does, except that it
 * takes every node of the op types the user assumes supported. assign's
 * --assume-supported places the model on such targets, and ranks each op a
 * target refuses by what supporting it would gain.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"

typedef struct whatif_impl {
    const cg_target *base;
    char **ops;
    size_t op_count;
    cg_target_vtable vt;
} whatif_impl;

/* "Op" matches a node of that op type in any domain; "domain:Op" only in
 * that domain ("tflite:MEAN"; "" and "ai.onnx" are the default domain). */
bool cg_op_key_matches(const char *key, const cg_node *node)
{
    const char *colon = strrchr(key, ':');
    if (!colon)
        return strcmp(key, node->op_type) == 0;
    if (strcmp(colon + 1, node->op_type) != 0)
        return false;
    size_t dl = (size_t)(colon - key);
    const char *dom = node->domain ? node->domain : "";
    if (strcmp(dom, "ai.onnx") == 0)
        dom = "";
    if (dl == 7 && strncmp(key, "ai.onnx", 7) == 0)
        dl = 0;
    return strlen(dom) == dl && strncmp(dom, key, dl) == 0;
}

static bool whatif_supports(const cg_target *t, const cg_support_query *q, char *reason,
                            size_t reason_len)
{
    const whatif_impl *w = t->impl;
    for (size_t i = 0; i < w->op_count; i++)
        if (cg_op_key_matches(w->ops[i], q->node))
            return true;
    return w->base->vt->supports(w->base, q, reason, reason_len);
}

static void whatif_destroy(cg_target *t)
{
    if (!t)
        return;
    whatif_impl *w = t->impl;
    for (size_t i = 0; w && i < w->op_count; i++)
        free(w->ops[i]);
    if (w)
        free(w->ops);
    free(w);
    free(t);
}

cg_status cg_target_assume_supported(const cg_target *base, const char *const *ops,
                                     size_t op_count, cg_target **out, cg_error *err)
{
    *out = NULL;
    if (!base || !base->vt || !base->vt->supports)
        return cg_error_set(err, CG_INVALID, "what-if: a target with a supports() is needed");
    for (size_t i = 0; i < op_count; i++)
        if (!ops[i] || !ops[i][0] || ops[i][strlen(ops[i]) - 1] == ':')
            return cg_error_set(err, CG_USAGE, "--assume-supported: an empty op name");
    cg_target *t = calloc(1, sizeof *t);
    whatif_impl *w = calloc(1, sizeof *w);
    char **copy = op_count ? calloc(op_count, sizeof *copy) : NULL;
    if (!t || !w || (op_count && !copy)) {
        free(t);
        free(w);
        free(copy);
        return cg_error_set(err, CG_NOMEM, "what-if: out of memory");
    }
    w->base = base;
    w->ops = copy;
    for (; w->op_count < op_count; w->op_count++)
        if (!(copy[w->op_count] = strdup(ops[w->op_count]))) {
            t->impl = w;
            whatif_destroy(t);
            return cg_error_set(err, CG_NOMEM, "what-if: out of memory");
        }
    /* it decides placement only: a what-if target never executes */
    w->vt = (cg_target_vtable){.supports = whatif_supports, .destroy = whatif_destroy};
    *t = *base;
    if (t->kind == CG_TARGET_EXECUTING)
        t->kind = CG_TARGET_PROFILED;
    t->vt = &w->vt;
    t->impl = w;
    *out = t;
    return CG_OK;
}

void cg_target_assumed_free(cg_target *t)
{
    whatif_destroy(t);
}

cg_status cg_targets_assume_supported(const cg_target *const *base, size_t n,
                                      const char *const *ops, size_t op_count, cg_target **out,
                                      cg_error *err)
{
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    for (size_t i = 0; i < n; i++)
        if (cg_target_assume_supported(base[i], ops, op_count, &out[i], err) != CG_OK) {
            cg_targets_assumed_free(out, i);
            return err->status;
        }
    return CG_OK;
}

void cg_targets_assumed_free(cg_target **t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        cg_target_assumed_free(t[i]);
        t[i] = NULL;
    }
}

cg_status cg_op_keys_parse(const char *arg, char **keys, size_t *count, size_t cap,
                           cg_error *err)
{
    const char *p = arg;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || p[len - 1] == ':')
            return cg_error_set(err, CG_USAGE, "'%s': an empty op name", arg);
        if (*count == cap)
            return cg_error_set(err, CG_USAGE, "more than %zu ops", cap);
        if (!(keys[*count] = strndup(p, len)))
            return cg_error_set(err, CG_NOMEM, "out of memory");
        (*count)++;
        if (!end)
            return CG_OK;
        p = end + 1;
    }
}
