/*
 * Renderings of a conformance run (`convgate conformance`): a line per
 * test ('PASS name', 'FAIL name: reason'), the deviations from the
 * manifest and the counts; and the same as JSON.
 */
#include <stdio.h>

#include "report/report.h"
#include "core/text.h"

void cg_report_conf_test_text(FILE *f, const cg_conf_test *t, bool with_time)
{
    static const char *const label[] = {"PASS", "FAIL", "SKIP"};
    if (t->status == CG_CONF_PASS)
        cg_text_printf(f, "PASS %s", t->name);
    else
        cg_text_printf(f, "%s %s: %s", label[t->status], t->name, t->reason);
    if (with_time)
        fprintf(f, "  (%.1f ms)", t->ms);
    fprintf(f, "\n");
}

void cg_report_conf_text(FILE *f, const cg_conf_view *v)
{
    if (v->deviation_count) {
        cg_text_printf(f, "\n%zu deviation%s from %s:\n", v->deviation_count,
                       v->deviation_count == 1 ? "" : "s", v->manifest);
        for (size_t i = 0; i < v->deviation_count; i++)
            cg_text_printf(f, "  %s\n", v->deviations[i] ? v->deviations[i] : "(out of memory)");
        fprintf(f, "\n");
    }
    fprintf(f, "%zu passed, %zu failed, %zu skipped\n", v->passed, v->failed, v->skipped);
}

json_t *cg_report_conf_json(const cg_conf_view *v)
{
    json_t *root = json_object(), *arr = json_array(), *devs = NULL;
    cg_json_set(root, "passed", json_integer((json_int_t)v->passed));
    cg_json_set(root, "failed", json_integer((json_int_t)v->failed));
    cg_json_set(root, "skipped", json_integer((json_int_t)v->skipped));
    for (size_t i = 0; arr && i < v->count; i++) {
        const cg_conf_test *t = &v->tests[i];
        json_t *o = json_object();
        cg_json_set(o, "name", cg_json_text(t->name));
        cg_json_set(o, "status", json_string(cg_conf_status_name(t->status)));
        cg_json_set(o, "reason", cg_json_text(t->reason));
        cg_json_set(o, "ms", cg_json_number(t->ms));
        json_array_append_new(arr, o);
    }
    cg_json_set(root, "tests", arr);
    if (v->manifest) {
        devs = json_array();
        for (size_t i = 0; devs && i < v->deviation_count; i++)
            if (v->deviations[i])
                json_array_append_new(devs, cg_json_text(v->deviations[i]));
    }
    cg_json_set(root, "deviations", devs ? devs : json_null());
    return root;
}
