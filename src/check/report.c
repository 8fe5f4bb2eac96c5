/* Problem recording for the checkers (report.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/report.h"

static char *dup_or_null(const char *s, bool *oom)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy == NULL) {
        *oom = true;
        return NULL;
    }
    memcpy(copy, s, n);
    return copy;
}

bool cg_check_report_add(cg_check_report *r, size_t max_problems, cg_check_severity sev,
                         const char *rule, const char *where, const char *node,
                         const char *op_type, const char *message)
{
    if (sev == CG_CHECK_ERROR)
        r->error_count++;
    else
        r->warning_count++;
    if (r->count >= max_problems) {
        r->dropped++;
        return true;
    }
    if (r->count == r->capacity) {
        size_t cap = r->capacity ? r->capacity * 2 : 16;
        if (cap > max_problems)
            cap = max_problems;
        if (cap > SIZE_MAX / sizeof(cg_check_problem))
            return false;
        cg_check_problem *grown = realloc(r->problems, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        r->problems = grown;
        r->capacity = cap;
    }
    bool oom = false;
    cg_check_problem *p = &r->problems[r->count];
    memset(p, 0, sizeof *p);
    p->severity = sev;
    p->rule = rule;
    p->where = dup_or_null(where, &oom);
    p->node = dup_or_null(node, &oom);
    p->op_type = dup_or_null(op_type, &oom);
    p->message = dup_or_null(message, &oom);
    if (oom) {
        free(p->where);
        free(p->node);
        free(p->op_type);
        free(p->message);
        return false;
    }
    r->count++;
    return true;
}

cg_status cg_check_report_status(const cg_check_report *r, bool oom, cg_error *err)
{
    if (oom)
        return cg_error_set(err, CG_NOMEM, "out of memory while checking the model");
    if (r->error_count == 0)
        return CG_OK;
    for (size_t i = 0; i < r->count; i++) {
        const cg_check_problem *p = &r->problems[i];
        if (p->severity == CG_CHECK_ERROR)
            return cg_error_set(err, CG_INVALID, "%s: %s (and %zu more errors)", p->where,
                                p->message, r->error_count - 1);
    }
    return cg_error_set(err, CG_INVALID, "%zu errors", r->error_count);
}
