/*
 * Task metrics (convgate/compare.h): what a classifier, a segmenter or a
 * detector cares about besides elementwise error, accumulated over
 * samples; and the matching of two sets of detections, whose order means
 * nothing (two near-tied boxes may come out in either order).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/compare.h"

#define TASK_TOPK 5

const char *cg_task_name(cg_task task)
{
    switch (task) {
    case CG_TASK_CLASSIFY: return "classify";
    case CG_TASK_SEGMENT: return "segment";
    case CG_TASK_DETECT: return "detect";
    case CG_TASK_NONE: break;
    }
    return "none";
}

void cg_task_metrics_init(cg_task_metrics *m, cg_task task, double threshold)
{
    memset(m, 0, sizeof *m);
    m->task = task;
    m->threshold = threshold;
    m->applicable = task != CG_TASK_NONE;
}

void cg_task_metrics_free(cg_task_metrics *m)
{
    if (!m)
        return;
    free(m->class_inter);
    free(m->class_union);
    m->class_inter = m->class_union = NULL;
}

/* a ranks above b: NaN above everything (numpy's argmax picks NaN first) */
static bool ranks_above(double a, double b)
{
    if (isnan(a))
        return !isnan(b);
    return !isnan(b) && a > b;
}

/* Indices of the k largest of row[0..c), largest first, first index on ties. */
static void top_k(const cg_tensor *t, int64_t base, int64_t c, int k, int64_t *idx)
{
    for (int j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < c; i++) {
            bool taken = false;
            for (int q = 0; q < j; q++)
                taken = taken || idx[q] == i;
            if (taken)
                continue;
            if (best < 0 || ranks_above(cg_tensor_get_f64(t, base + i),
                                        cg_tensor_get_f64(t, base + best)))
                best = i;
        }
        idx[j] = best;
    }
}

/* A flipped choice: the reference's gap between its choice and the target's. */
static void note_flip(cg_task_metrics *m, double gap)
{
    m->flips++;
    if (!(gap <= m->max_margin)) /* NaN keeps showing */
        m->max_margin = gap;
}

/* Index of the largest of t[base + k*stride], k < c (first on ties, NaN first). */
static int64_t arg_max(const cg_tensor *t, int64_t base, int64_t c, int64_t stride)
{
    int64_t best = 0;
    for (int64_t k = 1; k < c; k++)
        if (ranks_above(cg_tensor_get_f64(t, base + k * stride),
                        cg_tensor_get_f64(t, base + best * stride)))
            best = k;
    return best;
}

static void classify_add(cg_task_metrics *m, const cg_tensor *ref, const cg_tensor *got)
{
    int64_t c = ref->rank >= 1 ? ref->dims[ref->rank - 1] : 0;
    if (c < 2 || !cg_dtype_is_float(ref->dtype) || got->numel != ref->numel) {
        m->applicable = false;
        return;
    }
    int k = c < TASK_TOPK ? (int)c : TASK_TOPK;
    for (int64_t base = 0; base + c <= ref->numel; base += c) {
        int64_t ir[TASK_TOPK], ig[TASK_TOPK];
        top_k(ref, base, c, k, ir);
        top_k(got, base, c, k, ig);
        int common = 0;
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++)
                common += ir[a] == ig[b];
        m->rows++;
        m->top1_agree += ir[0] == ig[0];
        m->top5_overlap += (double)common / k;
        if (ir[0] != ig[0])
            note_flip(m, cg_tensor_get_f64(ref, base + ir[0]) -
                             cg_tensor_get_f64(ref, base + ig[0]));
    }
}

/* A map with a class axis: rank >= 3, dims[1] >= 2 (NCHW). */
static bool has_class_axis(const cg_tensor *t)
{
    return t->rank >= 3 && t->dims[1] >= 2 && cg_dtype_is_float(t->dtype);
}

static void segment_classes_add(cg_task_metrics *m, const cg_tensor *ref, const cg_tensor *got)
{
    int64_t c = ref->dims[1], inner = 1;
    for (int d = 2; d < ref->rank; d++)
        inner *= ref->dims[d];
    if (!m->class_inter) {
        m->classes = c;
        m->class_inter = calloc((size_t)c, sizeof *m->class_inter);
        m->class_union = calloc((size_t)c, sizeof *m->class_union);
    }
    if (!m->class_inter || !m->class_union || m->classes != c || inner <= 0) {
        m->applicable = false;
        return;
    }
    m->multiclass = true;
    for (int64_t outer = 0; outer + c * inner <= ref->numel; outer += c * inner)
        for (int64_t p = 0; p < inner; p++) {
            int64_t a = arg_max(ref, outer + p, c, inner), b = arg_max(got, outer + p, c, inner);
            m->pixels++;
            if (a == b) {
                m->pixels_agree++;
                m->class_inter[a]++;
                m->class_union[a]++;
                continue;
            }
            m->class_union[a]++;
            m->class_union[b]++;
            note_flip(m, cg_tensor_get_f64(ref, outer + p + a * inner) -
                             cg_tensor_get_f64(ref, outer + p + b * inner));
        }
}

void cg_task_metrics_add(cg_task_metrics *m, const cg_tensor *ref, const cg_tensor *got)
{
    if (m->task == CG_TASK_CLASSIFY) {
        classify_add(m, ref, got);
    } else if (m->task == CG_TASK_SEGMENT) {
        if (got->numel != ref->numel) {
            m->applicable = false;
            return;
        }
        if (has_class_axis(ref) && (m->multiclass || m->pixels == 0) && m->uni == 0 &&
            m->fg_ref == 0 && m->fg_got == 0 && m->inter == 0) {
            segment_classes_add(m, ref, got);
            return;
        }
        for (int64_t i = 0; i < ref->numel && i < got->numel; i++) {
            double r = cg_tensor_get_f64(ref, i);
            bool a = r > m->threshold;
            bool b = cg_tensor_get_f64(got, i) > m->threshold;
            m->mask_pixels++;
            m->inter += a && b;
            m->uni += a || b;
            m->fg_ref += a;
            m->fg_got += b;
            if (a != b)
                note_flip(m, fabs(r - m->threshold));
        }
    }
}

uint64_t cg_task_decisions(const cg_task_metrics *m)
{
    if (m->task == CG_TASK_CLASSIFY)
        return m->rows;
    return m->multiclass ? m->pixels : m->mask_pixels;
}

double cg_task_top1(const cg_task_metrics *m)
{
    return m->applicable && m->rows ? (double)m->top1_agree / (double)m->rows : NAN;
}

double cg_task_top5(const cg_task_metrics *m)
{
    return m->applicable && m->rows ? m->top5_overlap / (double)m->rows : NAN;
}

double cg_task_iou(const cg_task_metrics *m)
{
    return m->uni ? (double)m->inter / (double)m->uni : 1.0;
}

double cg_task_pixel_agreement(const cg_task_metrics *m)
{
    return m->multiclass && m->pixels ? (double)m->pixels_agree / (double)m->pixels : NAN;
}

double cg_task_mean_iou(const cg_task_metrics *m)
{
    if (!m->multiclass || !m->class_union)
        return NAN;
    double sum = 0;
    int64_t present = 0;
    for (int64_t c = 0; c < m->classes; c++)
        if (m->class_union[c]) {
            sum += (double)m->class_inter[c] / (double)m->class_union[c];
            present++;
        }
    return present ? sum / (double)present : 1.0;
}

/* --- detection ------------------------------------------------------------------------- */

/* Boxes of a tensor: numel/4 when its last axis is 4 (-1 otherwise). */
static int64_t box_count(const cg_tensor *t)
{
    if (!t || !cg_dtype_is_float(t->dtype) || t->rank < 2 || t->dims[t->rank - 1] != 4)
        return -1;
    return t->numel / 4;
}

static bool name_has(const char *name, const char *word)
{
    char low[256];
    size_t n = 0;
    for (; name && name[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)name[n]);
    low[n] = '\0';
    return strstr(low, word) != NULL;
}

static int find_name(const char *const *names, size_t count, const char *want, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (names[i] && strlen(names[i]) == len && strncmp(names[i], want, len) == 0)
            return (int)i;
    return -1;
}

/* Picks among outputs that fit: the one whose name holds a hint word, when
 * exactly one does; the only one; else ambiguous (-2) or none (-1). */
static int pick(const char *const *names, const bool *fits, size_t count, const char *const *hints)
{
    int only = -1, fitting = 0, hinted = -1, hinted_count = 0;
    for (size_t i = 0; i < count; i++) {
        if (!fits[i])
            continue;
        fitting++;
        only = (int)i;
        bool h = false;
        for (size_t k = 0; hints[k]; k++)
            h = h || name_has(names[i], hints[k]);
        if (h) {
            hinted = (int)i;
            hinted_count++;
        }
    }
    if (fitting == 1)
        return only;
    if (hinted_count == 1)
        return hinted;
    return fitting ? -2 : -1;
}

cg_status cg_detect_find(const char *const *names, const cg_tensor *const *ref, size_t count,
                         const char *spec, cg_detect_outputs *out, cg_error *err)
{
    out->boxes = out->scores = out->labels = -1;
    if (spec && *spec) {
        int *slot[3] = {&out->boxes, &out->scores, &out->labels};
        const char *p = spec;
        for (int k = 0; k < 3 && *p; k++) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            *slot[k] = find_name(names, count, p, len);
            if (*slot[k] < 0)
                return cg_error_set(err, CG_USAGE, "--task detect: the model has no output "
                                    "'%.*s'", (int)len, p);
            p = e ? e + 1 : p + len;
        }
        if (out->scores < 0 || *p)
            return cg_error_set(err, CG_USAGE, "--task detect:BOXES,SCORES[,LABELS] expects two "
                                "or three output names, got '%s'", spec);
    } else {
        bool *fits = calloc(count + 1, sizeof *fits);
        if (!fits)
            return cg_error_set(err, CG_NOMEM, "out of memory");
        static const char *const box_hints[] = {"box", NULL};
        static const char *const score_hints[] = {"score", "conf", "prob", NULL};
        static const char *const label_hints[] = {"label", "class", NULL};
        for (size_t i = 0; i < count; i++)
            fits[i] = box_count(ref[i]) >= 0;
        out->boxes = pick(names, fits, count, box_hints);
        int64_t n = out->boxes >= 0 ? box_count(ref[out->boxes]) : -1;
        for (size_t i = 0; i < count; i++)
            fits[i] = n >= 0 && (int)i != out->boxes && ref[i] && ref[i]->numel == n &&
                      cg_dtype_is_float(ref[i]->dtype);
        out->scores = pick(names, fits, count, score_hints);
        for (size_t i = 0; i < count; i++)
            fits[i] = n >= 0 && (int)i != out->boxes && (int)i != out->scores && ref[i] &&
                      ref[i]->numel == n && cg_dtype_is_int(ref[i]->dtype);
        out->labels = pick(names, fits, count, label_hints);
        free(fits);
        if (out->boxes < 0 || out->scores < 0 || out->labels == -2) {
            const char *what = out->boxes == -1   ? "no float output whose last axis is 4 (boxes)"
                               : out->boxes == -2 ? "several outputs could be the boxes"
                               : out->scores == -1 ? "no float output with one score per box"
                               : out->scores == -2 ? "several outputs could be the scores"
                                                   : "several outputs could be the labels";
            return cg_error_set(err, CG_USAGE, "--task detect: %s; name them with --task "
                                "detect:BOXES,SCORES[,LABELS]", what);
        }
    }
    int64_t n = box_count(ref[out->boxes]);
    if (n < 0)
        return cg_error_set(err, CG_USAGE, "--task detect: output '%s' is not a float tensor "
                            "whose last axis is 4", names[out->boxes]);
    if (!ref[out->scores] || ref[out->scores]->numel != n ||
        !cg_dtype_is_float(ref[out->scores]->dtype))
        return cg_error_set(err, CG_USAGE, "--task detect: output '%s' does not hold one float "
                            "score per box (%lld boxes)", names[out->scores], (long long)n);
    if (out->labels >= 0 && (!ref[out->labels] || ref[out->labels]->numel != n))
        return cg_error_set(err, CG_USAGE, "--task detect: output '%s' does not hold one label "
                            "per box (%lld boxes)", names[out->labels], (long long)n);
    return CG_OK;
}

/* IoU of box a of ta and box b of tb, corners in any order. */
static double box_iou(const cg_tensor *ta, int64_t a, const cg_tensor *tb, int64_t b)
{
    double p[4], q[4];
    for (int k = 0; k < 4; k++) {
        p[k] = cg_tensor_get_f64(ta, 4 * a + k);
        q[k] = cg_tensor_get_f64(tb, 4 * b + k);
    }
    double ax0 = fmin(p[0], p[2]), ax1 = fmax(p[0], p[2]), ay0 = fmin(p[1], p[3]),
           ay1 = fmax(p[1], p[3]);
    double bx0 = fmin(q[0], q[2]), bx1 = fmax(q[0], q[2]), by0 = fmin(q[1], q[3]),
           by1 = fmax(q[1], q[3]);
    double iw = fmin(ax1, bx1) - fmax(ax0, bx0), ih = fmin(ay1, by1) - fmax(ay0, by0);
    double inter = iw > 0 && ih > 0 ? iw * ih : 0;
    double uni = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter;
    if (uni > 0)
        return inter / uni;
    /* two empty boxes: the same box when their corners agree */
    bool same = true;
    for (int k = 0; k < 4; k++)
        same = same && p[k] == q[k];
    return same ? 1.0 : 0.0;
}

typedef struct score_order {
    double score;
    size_t index;
} score_order;

static int cmp_score_desc(const void *x, const void *y)
{
    const score_order *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

void cg_detect_match_free(cg_detect_match *m)
{
    if (!m)
        return;
    free(m->ref_index);
    free(m->got_index);
    free(m->missing);
    free(m->extra);
    memset(m, 0, sizeof *m);
}

static int64_t label_of(const cg_tensor *t, int64_t i)
{
    return t ? (int64_t)cg_tensor_get_f64(t, i) : 0;
}

cg_status cg_detect_match_run(const cg_tensor *ref_boxes, const cg_tensor *ref_scores,
                              const cg_tensor *ref_labels, const cg_tensor *got_boxes,
                              const cg_tensor *got_scores, const cg_tensor *got_labels,
                              double iou_min, cg_detect_match *out, cg_error *err)
{
    memset(out, 0, sizeof *out);
    out->min_iou = 1.0;
    int64_t nr = box_count(ref_boxes), ng = box_count(got_boxes);
    if (nr < 0 || ng < 0)
        return cg_error_set(err, CG_INVALID, "detect: the %s boxes are not a float tensor whose "
                            "last axis is 4", nr < 0 ? "reference's" : "target's");
    if (!ref_scores || ref_scores->numel != nr || !got_scores || got_scores->numel != ng)
        return cg_error_set(err, CG_INVALID, "detect: %lld/%lld boxes but %lld/%lld scores",
                            (long long)nr, (long long)ng,
                            (long long)(ref_scores ? ref_scores->numel : -1),
                            (long long)(got_scores ? got_scores->numel : -1));
    if ((ref_labels && ref_labels->numel != nr) || (got_labels && got_labels->numel != ng))
        return cg_error_set(err, CG_INVALID, "detect: the labels do not hold one class per box");
    out->ref_count = (size_t)nr;
    out->got_count = (size_t)ng;
    size_t cap = (size_t)(nr > ng ? nr : ng) + 1;
    score_order *order = calloc((size_t)nr + 1, sizeof *order);
    bool *taken = calloc((size_t)ng + 1, sizeof *taken);
    out->ref_index = calloc(cap, sizeof *out->ref_index);
    out->got_index = calloc(cap, sizeof *out->got_index);
    out->missing = calloc(cap, sizeof *out->missing);
    out->extra = calloc(cap, sizeof *out->extra);
    if (!order || !taken || !out->ref_index || !out->got_index || !out->missing || !out->extra) {
        free(order);
        free(taken);
        cg_detect_match_free(out);
        return cg_error_set(err, CG_NOMEM, "detect: out of memory matching %lld boxes",
                            (long long)nr);
    }
    for (int64_t i = 0; i < nr; i++)
        order[i] = (score_order){cg_tensor_get_f64(ref_scores, i), (size_t)i};
    qsort(order, (size_t)nr, sizeof *order, cmp_score_desc);
    for (int64_t o = 0; o < nr; o++) {
        size_t r = order[o].index;
        int64_t best = -1;
        double best_iou = -1;
        for (int64_t g = 0; g < ng; g++) {
            if (taken[g] || label_of(ref_labels, (int64_t)r) != label_of(got_labels, g))
                continue;
            double iou = box_iou(ref_boxes, (int64_t)r, got_boxes, g);
            if (iou > best_iou) {
                best_iou = iou;
                best = g;
            }
        }
        if (best >= 0 && best_iou >= iou_min) {
            taken[best] = true;
            out->ref_index[out->matched] = r;
            out->got_index[out->matched++] = (size_t)best;
            out->min_iou = fmin(out->min_iou, best_iou);
        } else {
            out->missing[out->missing_count++] = r;
        }
    }
    for (int64_t g = 0; g < ng; g++)
        if (!taken[g])
            out->extra[out->extra_count++] = (size_t)g;
    free(order);
    free(taken);
    return CG_OK;
}
