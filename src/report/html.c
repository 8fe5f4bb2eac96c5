/*
 * The HTML report (report/report.h, docs/html-report.md): one
 * self-contained file, the stylesheet and script of src/report/html/
 * inline, and one data block holding the command's --json envelope and the
 * per-node view (report/graph.c). The page draws from that data and
 * nothing else: no network, no external script, style or font.
 *
 * Model strings are untrusted. In the data block every '<', '>' and '&'
 * of the JSON text is written as a \u escape (they can only occur inside
 * JSON strings, where the escape means the same character), so no text of
 * the model can close the block or open a tag; the script then puts
 * strings on the page only as text. The page's Content-Security-Policy
 * allows no network at all and only the one inline script, by its SHA-256,
 * so even a string that slipped through could not run.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_assets.h"
#include "report/report.h"

/* Writes s with &, <, >, " and ' as character references. */
static void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Writes JSON text with '<', '>' and '&' as \u escapes. */
static void html_json(FILE *f, const char *json)
{
    for (const char *p = json; *p; p++) {
        if (*p == '<')
            fputs("\\u003c", f);
        else if (*p == '>')
            fputs("\\u003e", f);
        else if (*p == '&')
            fputs("\\u0026", f);
        else
            fputc(*p, f);
    }
}

/* 'sha256-<base64>' of the script for the page's CSP. */
static bool script_hash(const unsigned char *js, size_t len, char *out, size_t cap)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    unsigned char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    if (!EVP_Digest(js, len, md, &md_len, EVP_sha256(), NULL) || md_len != 32)
        return false;
    EVP_EncodeBlock(b64, md, (int)md_len);
    return (size_t)snprintf(out, cap, "'sha256-%s'", (const char *)b64) < cap;
}

cg_status cg_report_html_write(FILE *f, const char *title, const json_t *envelope,
                               const json_t *graph, cg_error *err)
{
    char hash[96];
    json_t *data = json_object();
    char *text = NULL;
    cg_status st = CG_NOMEM;
    /* the script is ours: it must not end its own element early */
    if (strstr((const char *)cg_html_report_js, "</script") ||
        strstr((const char *)cg_html_report_css, "</style"))
        return cg_error_set(err, CG_RUNTIME, "HTML report: the embedded script or style "
                                             "closes its own element");
    if (!data || cg_json_set(data, "title", cg_json_text(title)) != 0 ||
        cg_json_set(data, "report",
                    envelope ? json_incref((json_t *)envelope) : json_null()) != 0 ||
        cg_json_set(data, "graph", graph ? json_incref((json_t *)graph) : json_null()) != 0 ||
        !(text = cg_json_dumps_compact(data)))
        goto fail;
    if (!script_hash(cg_html_report_js, cg_html_report_js_len, hash, sizeof hash)) {
        st = cg_error_set(err, CG_RUNTIME, "HTML report: SHA-256 of the script failed");
        goto done;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
    fprintf(f, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
               "img-src data:; style-src 'unsafe-inline'; script-src %s\">\n", hash);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"convgate " CG_VERSION "\">\n"
          "<link rel=\"icon\" href=\"data:,\">\n<title>", f);
    html_text(f, title);
    fputs("</title>\n<style>\n", f);
    fwrite(cg_html_report_css, 1, cg_html_report_css_len, f);
    fputs("</style>\n</head>\n<body>\n"
          "<noscript><p>This report draws itself with JavaScript; the same data is in "
          "the block below (the command's --json envelope and the per-node view).</p>"
          "</noscript>\n<script type=\"application/json\" id=\"cg-data\">", f);
    html_json(f, text);
    fputs("</script>\n<script>", f);
    fwrite(cg_html_report_js, 1, cg_html_report_js_len, f);
    fputs("</script>\n</body>\n</html>\n", f);
    if (fflush(f) != 0 || ferror(f)) {
        st = cg_error_set(err, CG_IO, "HTML report: write failed");
        goto done;
    }
    st = CG_OK;
    goto done;
fail:
    cg_error_set(err, CG_NOMEM, "HTML report: out of memory");
done:
    free(text);
    json_decref(data);
    return st;
}
