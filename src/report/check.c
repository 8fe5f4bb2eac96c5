/*
 * Renderings of a check report (`convgate check`): one line per problem
 * with its rule and location, then the count; and the same as JSON.
 */
#include <stdio.h>

#include "report/report.h"
#include "core/text.h"

static const char *severity_name(cg_check_severity sev)
{
    return sev == CG_CHECK_ERROR ? "error" : "warning";
}

void cg_report_check_text(FILE *f, const char *path, const cg_check_report *r)
{
    for (size_t i = 0; i < r->count; i++) {
        const cg_check_problem *p = &r->problems[i];
        cg_text_printf(f, "%s: %s [%s] %s: %s\n", path, severity_name(p->severity), p->rule,
                       p->where, p->message);
    }
    if (r->dropped)
        cg_text_printf(f, "%s: ... %zu more problems not shown\n", path, r->dropped);
    if (r->error_count == 0)
        cg_text_printf(f, "%s: ok (%zu warnings)\n", path, r->warning_count);
    else
        cg_text_printf(f, "%s: FAILED: %zu errors, %zu warnings\n", path, r->error_count,
                       r->warning_count);
}

json_t *cg_report_check_json(const char *path, const cg_check_report *r)
{
    json_t *o = json_object(), *problems = json_array();
    cg_json_set(o, "model", cg_json_text(path));
    cg_json_set(o, "ok", json_boolean(r->error_count == 0));
    cg_json_set(o, "error_count", json_integer((json_int_t)r->error_count));
    cg_json_set(o, "warning_count", json_integer((json_int_t)r->warning_count));
    cg_json_set(o, "dropped", json_integer((json_int_t)r->dropped));
    for (size_t i = 0; problems && i < r->count; i++) {
        const cg_check_problem *p = &r->problems[i];
        json_t *j = json_object();
        cg_json_set(j, "severity", json_string(severity_name(p->severity)));
        cg_json_set(j, "rule", cg_json_text(p->rule));
        cg_json_set(j, "where", cg_json_text(p->where));
        cg_json_set(j, "node", cg_json_text(p->node));
        cg_json_set(j, "op_type", cg_json_text(p->op_type));
        cg_json_set(j, "message", cg_json_text(p->message));
        json_array_append_new(problems, j);
    }
    cg_json_set(o, "problems", problems);
    return o;
}
