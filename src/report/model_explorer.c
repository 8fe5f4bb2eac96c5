/*
 * Model Explorer overlays (report/report.h): node data files that Google's
 * Model Explorer (github.com/google-ai-edge/model-explorer) colours a graph
 * with, drawn from the per-node view (report/graph.c).
 *
 * The format is Model Explorer's node data JSON: an object from graph id
 * to {results, thresholds?, gradient?}, results mapping a node key to
 * {value, bgColor?, textColor?} (NodeDataProviderGraphData and
 * NodeDataProviderResultData in src/ui/src/components/visualizer/common/
 * types.ts; the same as ModelNodeData / GraphNodeData in
 * src/server/package/src/model_explorer/node_data_builder.py). A key is a
 * node id or one of the node's output tensor names; for ONNX, Model
 * Explorer's adapter (justinchuby/model-explorer-onnx, main.py) uses the
 * graph's name as the graph id and each node's name as its id, so a named
 * node is keyed by its name and an unnamed one by its first output.
 *
 *   convgate_owner.json          the owner of each node (a target or "CPU"),
 *                                each result coloured as in the HTML report;
 *                                a node the lowering removed is "removed by
 *                                WHO" (ONNX Runtime's basic graph
 *                                optimizations, the ONNX-to-TFLite
 *                                converter: the view's "remover"), or
 *                                "<owner> (fused)" when fused into a node
 *                                placed there
 *
 * The view's nodes are the file's (report/graph.c maps a lowering's nodes
 * back through its origin record), so every key names a node of the model
 * the user opens, whatever the runtime renamed or fused.
 *   convgate_reference_ms.json   reference time per node, on a gradient
 *   convgate_max_abs_error.json  the largest |target - reference| at the
 *                                node's outputs, by decade thresholds; a
 *                                non-finite error is the string "inf" or
 *                                "nan" with its own colour (the value of a
 *                                result may be any JSON value; JSON has no
 *                                infinity)
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/path.h"
#include "report/report.h"

/* A result key for node n of the view: its name, else its first output. */
static const char *me_key(json_t *node)
{
    if (json_is_true(json_object_get(node, "named")))
        return json_string_value(json_object_get(node, "name"));
    json_t *outs = json_object_get(node, "outputs");
    for (size_t i = 0; i < json_array_size(outs); i++) {
        const char *t = json_string_value(json_array_get(outs, i));
        if (t && t[0])
            return t;
    }
    return NULL;
}

/* A number of the view (reals, or "nan"/"inf"/"-inf", docs/json.md). */
static double me_number(json_t *v)
{
    double d;
    return cg_json_number_read(v, &d) ? d : NAN;
}

static json_t *me_result(json_t *value, const char *bg)
{
    json_t *r = json_object();
    if (!r || cg_json_set(r, "value", value) != 0 ||
        (bg && cg_json_set(r, "bgColor", json_string(bg)) != 0)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Writes {graph_id: data} to DIR/NAME (not through a link planted there). */
static cg_status me_write(const char *dir, const char *name, const char *graph_id, json_t *data,
                          cg_error *err)
{
    char path[4096];
    json_t *root = json_object();
    char *text = NULL;
    cg_status st;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        json_decref(root);
        return cg_error_set(err, CG_USAGE, "--model-explorer %s: path too long", dir);
    }
    if (!root || cg_json_set(root, graph_id, json_incref(data)) != 0 ||
        !(text = cg_json_dumps(root))) {
        json_decref(root);
        return cg_error_set(err, CG_NOMEM, "Model Explorer data: out of memory");
    }
    if ((st = cg_atomic_write(path, text, strlen(text), err)) != CG_OK)
        cg_error_prefix(err, "--model-explorer: ");
    free(text);
    json_decref(root);
    return st;
}

/* {value, bgColor} stops and thresholds. */
static json_t *me_stop(const char *key, double at, const char *bg)
{
    json_t *o = json_object();
    if (!o || cg_json_set(o, key, json_real(at)) != 0 ||
        cg_json_set(o, "bgColor", json_string(bg)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The three overlays' data, built in one pass over the nodes. */
typedef struct me_data {
    json_t *owner, *ms, *error;   /* {results, ...} each */
    json_t *owner_r, *ms_r, *error_r;
    const char *remover;          /* who removed the removed nodes (the view's "remover") */
} me_data;

static bool me_node(me_data *d, json_t *node, json_t *colours)
{
    const char *key = me_key(node);
    if (!key)
        return true; /* no name, no output: Model Explorer has nothing to key it by */
    const char *owner = json_string_value(json_object_get(node, "owner"));
    if (owner) {
        /* a node the lowering removed: "removed by WHO", or, fused into a
         * runtime node, that node's owner marked "(fused)" */
        const char *runs_on = json_string_value(json_object_get(node, "runs_on"));
        bool removed = strcmp(owner, "removed") == 0;
        const char *shown = removed && runs_on ? runs_on : owner;
        const char *bg = removed && !runs_on ? "#ffffff"
                                             : json_string_value(json_object_get(colours, shown));
        char label[300];
        if (removed && !runs_on)
            snprintf(label, sizeof label, "removed by %s", d->remover ? d->remover : "the runtime");
        else
            snprintf(label, sizeof label, "%s%s", strcmp(shown, "cpu") == 0 ? "CPU" : shown,
                     removed && runs_on ? " (fused)" : "");
        if (!json_object_get(d->owner_r, key) &&
            cg_json_set(d->owner_r, key, me_result(cg_json_text(label), bg)) != 0)
            return false;
    }
    json_t *ms = json_object_get(node, "ms");
    double t = me_number(ms);
    if (ms && !json_is_null(ms) && isfinite(t) && !json_object_get(d->ms_r, key) &&
        cg_json_set(d->ms_r, key, me_result(json_real(t), NULL)) != 0)
        return false;
    json_t *error = json_object_get(node, "error");
    if (json_is_object(error) && !json_object_get(d->error_r, key)) {
        double e = me_number(json_object_get(error, "max_abs"));
        json_t *r = me_result(cg_json_number(e), isfinite(e) ? NULL : "#b71c1c");
        if (cg_json_set(d->error_r, key, r) != 0)
            return false;
    }
    return true;
}

cg_status cg_report_model_explorer_write(const char *dir, const json_t *graph, size_t *written,
                                         cg_error *err)
{
    me_data d;
    cg_status st;
    json_t *nodes = json_object_get(graph, "nodes");
    json_t *colours = json_object_get(graph, "owner_colours");
    const char *graph_id = json_string_value(json_object_get(graph, "graph"));
    memset(&d, 0, sizeof d);
    d.remover = json_string_value(json_object_get(graph, "remover"));
    if (written)
        *written = 0;
    if (!json_is_array(nodes))
        return cg_error_set(err, CG_USAGE, "Model Explorer data: no graph view");
    /* ONNX exporters that leave the graph unnamed: the adapter then has no
     * graph id of its own; torch.onnx names its graph main_graph */
    if (!graph_id || !graph_id[0])
        graph_id = "main_graph";
    if ((st = cg_path_make_dirs(dir, err)) != CG_OK) {
        cg_error_prefix(err, "--model-explorer %s: ", dir);
        return st;
    }
    st = CG_NOMEM;
    d.owner = json_object();
    d.ms = json_object();
    d.error = json_object();
    if (!d.owner || !d.ms || !d.error ||
        cg_json_set(d.owner, "results", d.owner_r = json_object()) ||
        cg_json_set(d.ms, "results", d.ms_r = json_object()) ||
        cg_json_set(d.error, "results", d.error_r = json_object()))
        goto nomem;
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if (!me_node(&d, json_array_get(nodes, i), colours))
            goto nomem;
    /* time: white (fastest) to deep orange (slowest) */
    json_t *gradient = json_array(), *thresholds = json_array();
    if (cg_json_set(d.ms, "gradient", gradient) != 0 ||
        json_array_append_new(gradient, me_stop("stop", 0, "#fff8e1")) != 0 ||
        json_array_append_new(gradient, me_stop("stop", 1, "#e65100")) != 0 ||
        cg_json_set(d.error, "thresholds", thresholds) != 0)
        goto nomem;
    /* errors by decade: green (fp32 noise) to red (wrong) */
    static const struct { double at; const char *bg; } decades[] = {
        {1e-6, "#2e7d32"}, {1e-5, "#66bb6a"}, {1e-4, "#c5e1a5"}, {1e-3, "#fff59d"},
        {1e-2, "#ffb74d"}, {1e-1, "#ff7043"}, {DBL_MAX, "#c62828"}};
    for (size_t i = 0; i < sizeof decades / sizeof decades[0]; i++)
        if (json_array_append_new(thresholds, me_stop("value", decades[i].at, decades[i].bg)) != 0)
            goto nomem;
    st = CG_OK;
    const struct {
        const char *file;
        json_t *data, *results;
        bool want;
    } files[] = {
        {"convgate_owner.json", d.owner, d.owner_r, json_is_true(json_object_get(graph, "placed"))},
        {"convgate_reference_ms.json", d.ms, d.ms_r, true},
        {"convgate_max_abs_error.json", d.error, d.error_r, true},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0] && st == CG_OK; i++) {
        if (!files[i].want || !json_object_size(files[i].results))
            continue;
        if ((st = me_write(dir, files[i].file, graph_id, files[i].data, err)) == CG_OK && written)
            (*written)++;
    }
    goto done;
nomem:
    cg_error_set(err, CG_NOMEM, "Model Explorer data: out of memory");
done:
    json_decref(d.owner);
    json_decref(d.ms);
    json_decref(d.error);
    return st;
}
