/*
 * --html FILE and --model-explorer DIR: the per-node views of gate, assign,
 * compare and bisect (docs/html-report.md). Both are drawn from the
 * command's --json result and its graph view (report/graph.c), rendered by
 * src/report; this file only checks the paths up front and writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/path.h"
#include "report/report.h"

int cli_views_option(const char *cmd, cli_views *v, int opt, const char *arg)
{
    cg_error err;
    cg_error_clear(&err);
    if (opt == CLI_OPT_HTML) {
        /* opened now: an unwritable report path must not cost the whole run */
        if (cg_path_make_parents(arg, &err) != CG_OK) {
            cli_error(cmd, "--html %s: %s", arg, err.msg);
            return -1;
        }
        /* atomically: a failed write never leaves a truncated page */
        cg_atomic_abort(&v->html_file);
        v->html = NULL;
        if (cg_atomic_begin(&v->html_file, arg, &err) != CG_OK) {
            cli_error(cmd, "--html %s: cannot write the report there: %s", arg, err.msg);
            return -1;
        }
        v->html = arg;
        return 1;
    }
    if (opt == CLI_OPT_MODEL_EXPLORER) {
        if (cg_path_make_dirs(arg, &err) != CG_OK) {
            cli_error(cmd, "--model-explorer %s: %s", arg, err.msg);
            return -1;
        }
        v->me_dir = arg;
        return 1;
    }
    return 0;
}

bool cli_views_wanted(const cli_views *v) { return v->html || v->me_dir; }

int cli_views_write(const char *cmd, cli_views *v, int rc, json_t *result, const char *title,
                    const cg_graph_view *gv)
{
    cg_error err;
    cg_error_clear(&err);
    if (!cli_views_wanted(v))
        return rc;
    json_t *graph = gv && gv->model ? cg_report_graph_json(gv) : NULL;
    if (gv && gv->model && !graph) {
        cli_error(cmd, "out of memory drawing the graph view");
        return CG_EXIT_ERROR;
    }
    if (v->html) {
        json_t *env = cli_json_envelope(rc, result);
        cg_status st = env ? cg_report_html_write(v->html_file.f, title, env, graph, &err)
                           : cg_error_set(&err, CG_NOMEM, "out of memory");
        json_decref(env);
        if (st == CG_OK)
            st = cg_atomic_commit(&v->html_file, &err);
        else
            cg_atomic_abort(&v->html_file);
        if (st != CG_OK) {
            cli_error(cmd, "--html %s: %s", v->html, err.msg);
            rc = CG_EXIT_ERROR;
        }
    }
    if (v->me_dir) {
        size_t written = 0;
        if (!graph) {
            cli_error(cmd, "--model-explorer %s: no graph to annotate", v->me_dir);
            rc = CG_EXIT_ERROR;
        } else if (cg_report_model_explorer_write(v->me_dir, graph, &written, &err) != CG_OK) {
            cli_error(cmd, "%s", err.msg);
            rc = CG_EXIT_ERROR;
        } else if (!written) {
            cli_warn(cmd, "--model-explorer %s: nothing to write (no placement, timing or "
                     "errors)", v->me_dir);
        }
    }
    json_decref(graph);
    return rc;
}

void cli_views_finish(const char *cmd, cli_views *v, int rc)
{
    if (v->html_file.f) {
        /* the command stopped before its report: the page says why, or,
         * after --help, there is no page */
        if (rc != CG_EXIT_OK) {
            cg_error err;
            cg_error_clear(&err);
            json_t *env = cli_json_envelope(rc, NULL);
            if (!env || cg_report_html_write(v->html_file.f, cmd, env, NULL, &err) != CG_OK ||
                cg_atomic_commit(&v->html_file, &err) != CG_OK)
                cli_error(cmd, "--html %s: could not write the error page", v->html);
            json_decref(env);
        }
        cg_atomic_abort(&v->html_file);
    }
    memset(v, 0, sizeof *v);
}
