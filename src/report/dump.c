/* convgate dump-ref: the sets written, as text and as JSON (docs/json.md). */
#include "report/json.h"
#include "report/report.h"
#include "core/text.h"

json_t *cg_report_dump_json(const char *model_path, const char *golden,
                            const cg_golden_dump_report *r)
{
    json_t *root = json_object(), *sets = json_array();
    int bad = !root || !sets;
    for (size_t i = 0; sets && i < r->set_count; i++) {
        json_t *js = json_object();
        if (!js) {
            bad = 1;
            break;
        }
        bad |= cg_json_set(js, "name", cg_json_text(r->sets[i].name));
        bad |= cg_json_set(js, "inputs", json_integer((json_int_t)r->sets[i].inputs));
        bad |= cg_json_set(js, "outputs", json_integer((json_int_t)r->sets[i].outputs));
        bad |= json_array_append_new(sets, js);
    }
    if (!root) {
        json_decref(sets);
        return NULL;
    }
    bad |= cg_json_set(root, "model", cg_json_text(model_path));
    bad |= cg_json_set(root, "golden", cg_json_text(golden));
    bad |= cg_json_set(root, "sets", sets);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

void cg_report_dump_set_text(FILE *f, const char *name, size_t inputs, size_t outputs)
{
    cg_text_printf(f, "set '%s': %zu input%s, %zu output%s\n", name, inputs,
                   inputs == 1 ? "" : "s", outputs, outputs == 1 ? "" : "s");
}

void cg_report_dump_text(FILE *f, const char *golden, const cg_golden_dump_report *r)
{
    cg_text_printf(f, "wrote %zu set%s to %s/manifest.json\n", r->set_count,
                   r->set_count == 1 ? "" : "s", golden);
}
