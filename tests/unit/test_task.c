/*
 * Task metrics (src/verify/task.c): classify's top-1 and the reference gap
 * of a flipped top-1; segment's multi-class masks (argmax over the class
 * axis: pixel agreement, mean IoU, the gap at a flipped pixel) and binary
 * masks; detection outputs found by shape or by name, and two sets of
 * detections matched by IoU and class, so near-tied boxes that swap places
 * still match and a missing or extra box is counted.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "convgate/compare.h"
#include "convgate/tensor.h"
#include "testlib.h"

static void test_classify(void)
{
    /* two rows of 4 classes; row 1's top-1 flips (0.50 vs 0.49 in the ref) */
    float r[8] = {0.1f, 0.9f, 0.0f, 0.0f, 0.50f, 0.49f, 0.01f, 0.0f};
    float g[8] = {0.1f, 0.9f, 0.0f, 0.0f, 0.49f, 0.50f, 0.01f, 0.0f};
    int64_t dims[2] = {2, 4};
    cg_tensor tr = test_view(CG_DTYPE_FLOAT, 2, dims, r), tg = test_view(CG_DTYPE_FLOAT, 2, dims, g);
    cg_task_metrics m;
    cg_task_metrics_init(&m, CG_TASK_CLASSIFY, 0.5);
    cg_task_metrics_add(&m, &tr, &tg);
    EXPECT(m.rows == 2 && m.top1_agree == 1 && fabs(cg_task_top1(&m) - 0.5) < 1e-12,
          "top-1 %g", cg_task_top1(&m));
    EXPECT(m.flips == 1 && fabs(m.max_margin - 0.01) < 1e-6, "flip margin %g", m.max_margin);
    cg_task_metrics_free(&m);
}

static void test_segment(void)
{
    /* [1, 3, 2, 2] logits: pixel 3 flips between class 0 and 2 by 0.001 */
    float r[12] = {5, 0, 0, 1.000f, 0, 5, 0, 0, 0, 0, 5, 0.999f};
    float g[12] = {5, 0, 0, 0.999f, 0, 5, 0, 0, 0, 0, 5, 1.000f};
    int64_t dims[4] = {1, 3, 2, 2};
    cg_tensor tr = test_view(CG_DTYPE_FLOAT, 4, dims, r), tg = test_view(CG_DTYPE_FLOAT, 4, dims, g);
    cg_task_metrics m;
    cg_task_metrics_init(&m, CG_TASK_SEGMENT, 0.5);
    cg_task_metrics_add(&m, &tr, &tg);
    EXPECT(m.multiclass && m.classes == 3 && m.pixels == 4 && m.pixels_agree == 3,
          "pixels %llu agree %llu", (unsigned long long)m.pixels,
          (unsigned long long)m.pixels_agree);
    /* class 0: inter 1 union 2; class 1: 1/1; class 2: 1/2 -> mean 2/3 */
    EXPECT(fabs(cg_task_mean_iou(&m) - 2.0 / 3.0) < 1e-12, "mIoU %g", cg_task_mean_iou(&m));
    EXPECT(fabs(cg_task_pixel_agreement(&m) - 0.75) < 1e-12, "agreement");
    EXPECT(m.flips == 1 && fabs(m.max_margin - 0.001) < 1e-6, "margin %g", m.max_margin);
    cg_task_metrics_free(&m);

    /* a single-channel map: mask = value > threshold, margin to the threshold */
    float br[4] = {0.9f, 0.51f, 0.1f, 0.2f}, bg[4] = {0.9f, 0.49f, 0.1f, 0.6f};
    int64_t bd[4] = {1, 1, 2, 2};
    cg_tensor ur = test_view(CG_DTYPE_FLOAT, 4, bd, br), ug = test_view(CG_DTYPE_FLOAT, 4, bd, bg);
    cg_task_metrics_init(&m, CG_TASK_SEGMENT, 0.5);
    cg_task_metrics_add(&m, &ur, &ug);
    EXPECT(!m.multiclass && m.fg_ref == 2 && m.fg_got == 2 && m.inter == 1 && m.uni == 3,
          "binary mask");
    EXPECT(m.flips == 2 && fabs(m.max_margin - 0.3) < 1e-6, "flips %llu margin %g",
          (unsigned long long)m.flips, m.max_margin);
    EXPECT(isnan(cg_task_mean_iou(&m)), "no mIoU for a binary mask");
    cg_task_metrics_free(&m);
}

static void test_detect_find(void)
{
    float boxes[12] = {0}, scores[3] = {0};
    int64_t labels[3] = {0};
    float other[6] = {0};
    int64_t bd[2] = {3, 4}, sd[1] = {3}, od[2] = {2, 3};
    cg_tensor tb = test_view(CG_DTYPE_FLOAT, 2, bd, boxes), ts = test_view(CG_DTYPE_FLOAT, 1, sd, scores);
    cg_tensor tl = test_view(CG_DTYPE_INT64, 1, sd, labels), to = test_view(CG_DTYPE_FLOAT, 2, od, other);
    const cg_tensor *ref[4] = {&ts, &to, &tl, &tb};
    const char *names[4] = {"s", "feat", "cls", "b"};
    cg_detect_outputs d;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_detect_find(names, ref, 4, NULL, &d, &err) == CG_OK, "%s", err.msg);
    EXPECT(d.boxes == 3 && d.scores == 0 && d.labels == 2, "by shape: %d %d %d", d.boxes,
          d.scores, d.labels);
    EXPECT(cg_detect_find(names, ref, 4, "b,s", &d, &err) == CG_OK && d.labels == -1 &&
              d.boxes == 3 && d.scores == 0,
          "by name: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_detect_find(names, ref, 4, "b,nosuch", &d, &err) == CG_USAGE &&
              strstr(err.msg, "no output 'nosuch'"),
          "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_detect_find(names, ref, 4, "feat,s", &d, &err) == CG_USAGE &&
              strstr(err.msg, "'feat'"),
          "not boxes: %s", err.msg);
    /* two float outputs of 3 values, neither named like scores: ambiguous */
    const cg_tensor *amb[3] = {&tb, &ts, &ts};
    const char *an[3] = {"b", "x", "y"};
    cg_error_clear(&err);
    EXPECT(cg_detect_find(an, amb, 3, NULL, &d, &err) == CG_USAGE &&
              strstr(err.msg, "several outputs could be the scores"),
          "%s", err.msg);
    const char *hn[3] = {"b", "x", "det_scores"};
    EXPECT(cg_detect_find(hn, amb, 3, NULL, &d, &err) == CG_OK && d.scores == 2,
          "a name breaks the tie");
}

static void test_detect_match(void)
{
    /* the reference: boxes A (score .9889331), B (.9889319), C (.5); the
     * target has A and B swapped (near tie) and C missing, plus an extra D */
    float rb[12] = {0, 0, 10, 10, 20, 20, 30, 30, 50, 50, 60, 60};
    float rs[3] = {0.9889331f, 0.9889319f, 0.5f};
    int64_t rl[3] = {1, 1, 2};
    float gb[12] = {20, 20, 30, 30.01f, 0, 0, 10, 10, 80, 80, 90, 90};
    float gs[3] = {0.9889325f, 0.9889323f, 0.4f};
    int64_t gl[3] = {1, 1, 2};
    int64_t bd[2] = {3, 4}, sd[1] = {3};
    cg_tensor trb = test_view(CG_DTYPE_FLOAT, 2, bd, rb), trs = test_view(CG_DTYPE_FLOAT, 1, sd, rs);
    cg_tensor trl = test_view(CG_DTYPE_INT64, 1, sd, rl), tgb = test_view(CG_DTYPE_FLOAT, 2, bd, gb);
    cg_tensor tgs = test_view(CG_DTYPE_FLOAT, 1, sd, gs), tgl = test_view(CG_DTYPE_INT64, 1, sd, gl);
    cg_detect_match m;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_detect_match_run(&trb, &trs, &trl, &tgb, &tgs, &tgl, 0.5, &m, &err) == CG_OK, "%s",
          err.msg);
    EXPECT(m.matched == 2 && m.missing_count == 1 && m.extra_count == 1, "matched %zu miss %zu "
          "extra %zu", m.matched, m.missing_count, m.extra_count);
    bool a_to_1 = false, b_to_0 = false;
    for (size_t i = 0; i < m.matched; i++) {
        a_to_1 = a_to_1 || (m.ref_index[i] == 0 && m.got_index[i] == 1);
        b_to_0 = b_to_0 || (m.ref_index[i] == 1 && m.got_index[i] == 0);
    }
    EXPECT(a_to_1 && b_to_0, "the swapped boxes match each other");
    EXPECT(m.missing[0] == 2 && m.extra[0] == 2, "C missing, D extra");
    EXPECT(m.min_iou > 0.99 && m.min_iou < 1.0, "min IoU %g", m.min_iou);
    cg_detect_match_free(&m);
    /* another class is never a match */
    int64_t gl2[3] = {1, 3, 2};
    cg_tensor tgl2 = test_view(CG_DTYPE_INT64, 1, sd, gl2);
    EXPECT(cg_detect_match_run(&trb, &trs, &trl, &tgb, &tgs, &tgl2, 0.5, &m, &err) == CG_OK &&
              m.matched == 1,
          "labels differ: matched %zu", m.matched);
    cg_detect_match_free(&m);
    /* class-agnostic, and disagreeing counts refused */
    EXPECT(cg_detect_match_run(&trb, &trs, NULL, &tgb, &tgs, NULL, 0.5, &m, &err) == CG_OK &&
              m.matched == 2,
          "no labels");
    cg_detect_match_free(&m);
    int64_t sd2[1] = {2};
    cg_tensor short_scores = test_view(CG_DTYPE_FLOAT, 1, sd2, rs);
    EXPECT(cg_detect_match_run(&trb, &short_scores, NULL, &tgb, &tgs, NULL, 0.5, &m, &err) ==
              CG_INVALID,
          "3 boxes, 2 scores");
    cg_detect_match_free(&m);
    /* no boxes on either side */
    int64_t zd[2] = {0, 4}, z1[1] = {0};
    cg_tensor eb = test_view(CG_DTYPE_FLOAT, 2, zd, rb), es = test_view(CG_DTYPE_FLOAT, 1, z1, rs);
    EXPECT(cg_detect_match_run(&eb, &es, NULL, &eb, &es, NULL, 0.5, &m, &err) == CG_OK &&
              m.matched == 0 && m.missing_count == 0 && m.extra_count == 0,
          "empty");
    cg_detect_match_free(&m);
}

int main(void)
{
    test_classify();
    test_segment();
    test_detect_find();
    test_detect_match();
    return test_done("test_task");
}
