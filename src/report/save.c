/* convgate save --json: the files written (docs/json.md). */
#include "report/json.h"
#include "report/report.h"

json_t *cg_report_save_json(const cg_save_view *v)
{
    json_t *o = json_object(), *ext = v->external_data ? json_object() : json_null();
    int bad = !o || !ext;
    if (ext && v->external_data) {
        bad |= cg_json_set(ext, "file", cg_json_text(v->external_data));
        bad |= cg_json_set(ext, "bytes", json_integer((json_int_t)v->external_bytes));
    }
    if (!o) {
        json_decref(ext);
        return NULL;
    }
    /* each set takes its value's reference, also on failure */
    bad |= cg_json_set(o, "model", cg_json_text(v->model));
    bad |= cg_json_set(o, "output", cg_json_text(v->output));
    bad |= cg_json_set(o, "bytes", json_integer((json_int_t)v->output_bytes));
    bad |= cg_json_set(o, "external_data", ext);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}
