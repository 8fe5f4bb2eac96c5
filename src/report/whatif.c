/*
 * assign's what-if in text and JSON: the ranking of refused ops
 * (cg_what_if_rank) and the ops the user assumed supported.
 */
#include "core/text.h"
#include "report/report.h"

static double gain_ms(const cg_what_if_gain *g)
{
    return g->timed ? g->mixed_before - g->mixed_after : 0.0;
}

void cg_what_if_assumed_text(FILE *f, const char *const *assumed, size_t n)
{
    if (!n)
        return;
    cg_text_printf(f, "What-if: placed as if every target took");
    for (size_t i = 0; i < n; i++)
        cg_text_printf(f, "%s %s", i ? "," : "", assumed[i]);
    cg_text_printf(f, " (an assumption, not what the runtime does)\n");
}

void cg_what_if_text(FILE *f, const cg_what_if_gain *g, size_t n, size_t skipped,
                     const char *unit)
{
    if (!n && !skipped)
        return;
    cg_text_printf(f, "\nWhat supporting each refused op would gain (each alone; "
                   "--assume-supported OP shows the placement):\n");
    for (size_t i = 0; i < n; i++) {
        cg_text_printf(f, "  %-24s %zu refused: %zu -> %zu %s on CPU, partitions %zu -> %zu",
                       g[i].op, g[i].refused, g[i].cpu_before, g[i].cpu_after, unit,
                       g[i].partitions_before, g[i].partitions_after);
        double ms = gain_ms(&g[i]);
        if (g[i].timed)
            cg_text_printf(f, ", est. %.3f -> %.3f ms (%s %.3f ms)", g[i].mixed_before,
                           g[i].mixed_after, ms >= 0 ? "saves" : "costs", ms >= 0 ? ms : -ms);
        cg_text_printf(f, "\n");
    }
    if (skipped)
        cg_text_printf(f, "  (%zu more op type(s) not ranked: over %d, or their placement "
                       "failed)\n", skipped, CG_WHAT_IF_MAX_RANKED);
}

bool cg_what_if_json(json_t *root, const cg_what_if_gain *g, size_t n,
                     const char *const *assumed, size_t assumed_count)
{
    json_t *arr = json_array(), *as = json_array();
    bool ok = arr && as;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *o = json_object();
        if (!o)
            ok = false;
        else if (cg_json_set(o, "op", cg_json_text(g[i].op)) ||
                 cg_json_set(o, "refused", json_integer((json_int_t)g[i].refused)) ||
                 cg_json_set(o, "cpu_before", json_integer((json_int_t)g[i].cpu_before)) ||
                 cg_json_set(o, "cpu_after", json_integer((json_int_t)g[i].cpu_after)) ||
                 cg_json_set(o, "partitions_before",
                             json_integer((json_int_t)g[i].partitions_before)) ||
                 cg_json_set(o, "partitions_after",
                             json_integer((json_int_t)g[i].partitions_after)) ||
                 cg_json_set(o, "mixed_ms_before",
                             g[i].timed ? cg_json_number(g[i].mixed_before) : json_null()) ||
                 cg_json_set(o, "mixed_ms_after",
                             g[i].timed ? cg_json_number(g[i].mixed_after) : json_null()) ||
                 cg_json_set(o, "saved_ms",
                             g[i].timed ? cg_json_number(gain_ms(&g[i])) : json_null())) {
            json_decref(o);
            ok = false;
        } else {
            ok = json_array_append_new(arr, o) == 0; /* steals o, also on failure */
        }
    }
    for (size_t i = 0; ok && i < assumed_count; i++)
        ok = !json_array_append_new(as, cg_json_text(assumed[i]));
    if (!ok) {
        json_decref(arr);
        json_decref(as);
        return false;
    }
    return !cg_json_set(root, "what_if", arr) && !cg_json_set(root, "assumed_supported", as);
}
