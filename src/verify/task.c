/*
 * Task metrics (convgate/compare.h): what a classifier or a segmenter
 * cares about besides elementwise error, accumulated over samples.
 */
#include <math.h>
#include <string.h>

#include "convgate/compare.h"

#define TASK_TOPK 5

const char *cg_task_name(cg_task task)
{
    switch (task) {
    case CG_TASK_CLASSIFY: return "classify";
    case CG_TASK_SEGMENT: return "segment";
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

void cg_task_metrics_add(cg_task_metrics *m, const cg_tensor *ref, const cg_tensor *got)
{
    if (m->task == CG_TASK_CLASSIFY) {
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
        }
    } else if (m->task == CG_TASK_SEGMENT) {
        for (int64_t i = 0; i < ref->numel && i < got->numel; i++) {
            bool a = cg_tensor_get_f64(ref, i) > m->threshold;
            bool b = cg_tensor_get_f64(got, i) > m->threshold;
            m->inter += a && b;
            m->uni += a || b;
            m->fg_ref += a;
            m->fg_got += b;
        }
    }
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
