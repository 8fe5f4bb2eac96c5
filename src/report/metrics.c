/*
 * The one rendering of cg_metrics (report/report.h): the text block a
 * person reads under each output, its one-line form, and the JSON object
 * CI reads, used by compare, verify, gate and bisect alike. Non-finite
 * numbers are words in both (report/json.h), since an error of +inf (a NaN
 * or overflow on one side) is a result, not a bug.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report/report.h"
#include "core/text.h"

void cg_report_position(int64_t index, int rank, const int64_t *dims, char *buf, size_t cap)
{
    int64_t numel = 1;
    bool known = rank >= 0 && dims != NULL;
    for (int d = 0; known && d < rank; d++) {
        if (dims[d] <= 0 || numel > INT64_MAX / dims[d])
            known = false;
        else
            numel *= dims[d];
    }
    if (!known || index < 0 || index >= numel || rank > 32) {
        snprintf(buf, cap, "[%" PRId64 "]", index);
        return;
    }
    int64_t pos[32];
    for (int d = rank - 1; d >= 0; d--) {
        pos[d] = index % dims[d];
        index /= dims[d];
    }
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", pos[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Histogram bin label: "<1e-10", "1e-05..1e-04", ">=1". */
static void bin_label(int b, char *buf, size_t cap)
{
    if (b == 0)
        snprintf(buf, cap, "<%.0e", cg_hist_bin_low(1));
    else if (b == CG_HIST_BINS - 1)
        snprintf(buf, cap, ">=%g", cg_hist_bin_low(b));
    else
        snprintf(buf, cap, "%.0e..%.0e", cg_hist_bin_low(b), cg_hist_bin_low(b + 1));
}

void cg_report_metrics_text(FILE *f, const char *indent, const cg_metrics *m, const char *sample,
                            int rank, const int64_t *dims)
{
    if (m->shape_mismatch) {
        cg_text_printf(f, "%sshape mismatch: the target's output has another shape\n", indent);
        return;
    }
    if (m->dtype_mismatch)
        cg_text_printf(f, "%sdtype mismatch: the target's output has another dtype\n", indent);
    cg_text_printf(f, "%smismatches %" PRIu64 "/%" PRIu64 " (%.4g%%)%s\n", indent, m->mismatches,
                   m->count, m->count ? 100.0 * (double)m->mismatches / (double)m->count : 0.0,
                   m->bit_identical ? ", bit-identical" : "");
    cg_text_printf(f, "%smax_abs %.6g  mean_abs %.6g  max_rel %.6g  rmse %.6g  nmse %.6g\n", indent,
                   m->max_abs, m->mean_abs, m->max_rel, m->rmse, m->nmse);
    cg_text_printf(f, "%scosine %.9f  pearson %.9f  max_ulp %" PRIu64 "\n", indent, m->cosine,
                   m->pearson, m->max_ulp);
    cg_text_printf(
        f, "%sNaN ref %" PRIu64 " target %" PRIu64 "  Inf ref %" PRIu64 " target %" PRIu64 "\n",
        indent, m->nan_ref, m->nan_got, m->inf_ref, m->inf_got);
    cg_text_printf(f, "%s|diff| histogram:", indent);
    bool any = false;
    for (int b = 0; b < CG_HIST_BINS; b++) {
        char label[32];
        if (!m->hist[b])
            continue;
        bin_label(b, label, sizeof label);
        cg_text_printf(f, " %s:%" PRIu64, label, m->hist[b]);
        any = true;
    }
    cg_text_printf(f, "%s\n", any ? "" : " (empty)");
    if (m->worst_index >= 0) {
        char pos[256];
        cg_report_position(m->worst_index, rank, dims, pos, sizeof pos);
        cg_text_printf(f, "%sworst: %s%s%sat %s: ref %.9g target %.9g\n", indent,
                       sample ? "sample " : "", sample ? sample : "", sample ? " " : "", pos,
                       m->worst_ref, m->worst_got);
    }
}

int cg_report_metrics_json(json_t *obj, const cg_metrics *m, const char *sample, int rank,
                           const int64_t *dims)
{
    int rc = 0;
#define SET(key, val) rc |= cg_json_set(obj, key, val)
    SET("pass", json_boolean(m->pass));
    SET("count", json_integer((json_int_t)m->count));
    SET("mismatches", json_integer((json_int_t)m->mismatches));
    SET("max_abs", cg_json_number(m->max_abs));
    SET("mean_abs", cg_json_number(m->mean_abs));
    SET("max_rel", cg_json_number(m->max_rel));
    SET("rmse", cg_json_number(m->rmse));
    SET("nmse", cg_json_number(m->nmse));
    SET("cosine", cg_json_number(m->cosine));
    SET("pearson", cg_json_number(m->pearson));
    SET("max_ulp", json_integer((json_int_t)m->max_ulp));
    SET("nan_ref", json_integer((json_int_t)m->nan_ref));
    SET("nan_target", json_integer((json_int_t)m->nan_got));
    SET("inf_ref", json_integer((json_int_t)m->inf_ref));
    SET("inf_target", json_integer((json_int_t)m->inf_got));
    SET("bit_identical", json_boolean(m->bit_identical));
    SET("shape_mismatch", json_boolean(m->shape_mismatch));
    SET("dtype_mismatch", json_boolean(m->dtype_mismatch));
    json_t *hist = json_object(), *edges = json_array(), *counts = json_array();
    for (int b = 0; b < CG_HIST_BINS; b++) {
        rc |= json_array_append_new(edges, cg_json_number(cg_hist_bin_low(b)));
        rc |= json_array_append_new(counts, json_integer((json_int_t)m->hist[b]));
    }
    rc |= cg_json_set(hist, "edges", edges);
    rc |= cg_json_set(hist, "counts", counts);
    SET("hist", hist);
    if (m->worst_index >= 0) {
        char pos[256];
        json_t *w = json_object();
        cg_report_position(m->worst_index, rank, dims, pos, sizeof pos);
        rc |= cg_json_set(w, "index", json_integer((json_int_t)m->worst_index));
        rc |= cg_json_set(w, "position", json_string(pos));
        rc |= cg_json_set(w, "ref", cg_json_number(m->worst_ref));
        rc |= cg_json_set(w, "target", cg_json_number(m->worst_got));
        if (sample)
            rc |= cg_json_set(w, "sample", cg_json_text(sample));
        SET("worst", w);
    } else {
        SET("worst", json_null());
    }
#undef SET
    return rc ? -1 : 0;
}

void cg_report_metrics_line(FILE *f, const cg_metrics *m)
{
    fprintf(f, "max_abs %.4g, max_rel %.4g, mean_abs %.4g, cosine %.6f, mismatches %" PRIu64
               "/%" PRIu64 ", NaN ref/target %" PRIu64 "/%" PRIu64 ", Inf ref/target %" PRIu64
               "/%" PRIu64,
            m->max_abs, m->max_rel, m->mean_abs, m->cosine, m->mismatches, m->count, m->nan_ref,
            m->nan_got, m->inf_ref, m->inf_got);
    if (m->shape_mismatch)
        fputs(", SHAPE MISMATCH", f);
    if (m->dtype_mismatch)
        fputs(", DTYPE MISMATCH", f);
}

json_t *cg_report_tolerance_json(const cg_tolerance *tol, const char *source)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = cg_json_set(o, "atol", cg_json_number(tol->atol));
    rc |= cg_json_set(o, "rtol", cg_json_number(tol->rtol));
    rc |= cg_json_set(o, "nan_equal", json_boolean(tol->nan_equal));
    rc |= cg_json_set(o, "source", cg_json_text(source));
    rc |= cg_json_set(o, "justification", cg_json_text(tol->justification));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cg_report_output_json(const char *name, const cg_metrics *m, const cg_tolerance *tol,
                              const char *tol_source, const char *sample, int rank,
                              const int64_t *dims)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = cg_json_set(o, "name", cg_json_text(name));
    rc |= cg_json_set(o, "tolerance", cg_report_tolerance_json(tol, tol_source));
    rc |= cg_report_metrics_json(o, m, sample, rank, dims);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
