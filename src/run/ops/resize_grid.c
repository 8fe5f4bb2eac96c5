/*
 * Spatial sampling kernels: GridSample (opsets 16 and 20, any spatial rank),
 * AffineGrid (opset 20) and RoiAlign (opsets 10 and 16).
 *
 * GridSample follows onnxruntime's algorithm, which the ONNX test data was
 * checked against: grid values are denormalized per align_corners; a
 * coordinate outside the sampling range is clamped (border) or reflected
 * (reflection) first; then taps are fetched with the padding rule (zeros
 * outside, clamped for border, reflected for reflection). Interpolation is
 * separable: 1 tap per spatial axis for nearest (round half to even), 2 for
 * linear, 4 for cubic (A = -0.75). Grid axis 0 is the innermost spatial
 * axis (x = width), as in PyTorch.
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

static double gs_cubic_w(double x)
{
    const double A = -0.75;
    x = fabs(x);
    if (x <= 1.0)
        return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0)
        return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

/* Reflects x into [lo, hi] (onnxruntime's GsReflect). */
static double gs_reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return lo;
    if (x < lo) {
        double dx = lo - x;
        double n = floor(dx / range);
        double r = dx - n * range;
        return fmod(n, 2.0) == 0.0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        double n = floor(dx / range);
        double r = dx - n * range;
        return fmod(n, 2.0) == 0.0 ? hi - r : lo + r;
    }
    return x;
}

/* Maps tap index i of an axis of size n to a readable index, or -1 for a
 * zero (zeros padding). */
static int64_t gs_tap_index(int64_t i, int64_t n, int pad, bool align)
{
    if (i >= 0 && i < n)
        return i;
    if (pad == GS_ZEROS)
        return -1;
    if (pad == GS_BORDER)
        return i < 0 ? 0 : n - 1;
    double lo = align ? 0.0 : -0.5, hi = align ? (double)(n - 1) : (double)n - 0.5;
    int64_t r = (int64_t)gs_reflect((double)i, lo, hi);
    return r < 0 ? 0 : (r >= n ? n - 1 : r);
}

cg_status cg_op_gridsample(cg_kernel_ctx *k)
{
    const cg_tensor *X, *G;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)) || (st = cg_kernel_require(k, 1, &G)))
        return st;
    int sr = X->rank - 2; /* spatial rank */
    if (sr < 1 || (k->since < 20 && sr != 2))
        return cg_kernel_fail(k, CG_INVALID, "X has rank %d; expected %s", X->rank,
                              k->since < 20 ? "4" : ">= 3");
    if (G->rank != X->rank || G->dims[0] != X->dims[0] || G->dims[G->rank - 1] != sr)
        return cg_kernel_fail(k, CG_INVALID, "grid must have shape [N, ..., %d] with N = %lld",
                              sr, (long long)X->dims[0]);
    if (!mc_is_float(G->dtype))
        return cg_kernel_fail(k, CG_INVALID, "grid must be a float tensor");
    if (X->dtype == CG_DTYPE_STRING || X->dtype == CG_DTYPE_BOOL)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "type %s is not supported",
                              cg_dtype_name(X->dtype));
    const char *ms = cg_attr_string(k, "mode", k->since >= 20 ? "linear" : "bilinear");
    int mode;
    if (strcmp(ms, "nearest") == 0)
        mode = GS_NEAREST;
    else if (strcmp(ms, "bilinear") == 0 || strcmp(ms, "linear") == 0)
        mode = GS_LINEAR;
    else if (strcmp(ms, "bicubic") == 0 || strcmp(ms, "cubic") == 0)
        mode = GS_CUBIC;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", ms);
    const char *ps = cg_attr_string(k, "padding_mode", "zeros");
    int pad;
    if (strcmp(ps, "zeros") == 0)
        pad = GS_ZEROS;
    else if (strcmp(ps, "border") == 0)
        pad = GS_BORDER;
    else if (strcmp(ps, "reflection") == 0)
        pad = GS_REFLECTION;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown padding_mode '%s'", ps);
    bool align = cg_attr_int(k, "align_corners", 0) != 0;

    int64_t N = X->dims[0], C = X->dims[1];
    int64_t odims[CG_MAX_RANK];
    odims[0] = N;
    odims[1] = C;
    for (int i = 0; i < sr; i++)
        odims[2 + i] = G->dims[1 + i];
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, X->dtype, X->rank, odims, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    int64_t in_sp = 1, out_sp = 1;
    for (int i = 0; i < sr; i++) {
        in_sp *= X->dims[2 + i];
        out_sp *= odims[2 + i];
    }
    for (int i = 0; i < sr; i++)
        if (X->dims[2 + i] == 0)
            return cg_kernel_fail(k, CG_INVALID, "cannot sample an empty spatial axis");
    double *x = mc_to_f64(k, X), *g = mc_to_f64(k, G), *y = mc_scratch_f64(k, Y->numel);
    if (!x || !g || !y)
        return CG_NOMEM;
    int ntap = mode == GS_NEAREST ? 1 : (mode == GS_LINEAR ? 2 : 4);
    /* taps per spatial axis (axis a = spatial axis index, outer to inner) */
    int64_t tidx[CG_MAX_RANK][4];
    double tw[CG_MAX_RANK][4];
    int64_t istr[CG_MAX_RANK];
    istr[sr - 1] = 1;
    for (int a = sr - 2; a >= 0; a--)
        istr[a] = istr[a + 1] * X->dims[3 + a];
    for (int64_t n = 0; n < N; n++) {
        for (int64_t o = 0; o < out_sp; o++) {
            const double *gp = g + (n * out_sp + o) * sr;
            for (int a = 0; a < sr; a++) {
                int64_t size = X->dims[2 + a];
                double gv = gp[sr - 1 - a]; /* grid's last component is the outermost axis */
                double c = align ? (gv + 1.0) / 2.0 * (double)(size - 1)
                                 : ((gv + 1.0) * (double)size - 1.0) / 2.0;
                double lo = align ? 0.0 : -0.5, hi = align ? (double)(size - 1) : (double)size - 0.5;
                if (c < lo || c > hi) {
                    if (pad == GS_BORDER)
                        c = c < 0 ? 0 : (c > (double)(size - 1) ? (double)(size - 1) : c);
                    else if (pad == GS_REFLECTION)
                        c = gs_reflect(c, lo, hi);
                }
                /* Far-away samples give the same taps as ones just past the
                 * edge; clamping keeps the int64 casts defined. */
                if (c > (double)size + 8.0)
                    c = (double)size + 8.0;
                else if (c < -8.0 - (double)size)
                    c = -8.0 - (double)size;
                if (!isfinite(c)) {
                    for (int t = 0; t < ntap; t++) {
                        tidx[a][t] = -1;
                        tw[a][t] = 0;
                    }
                    continue;
                }
                if (mode == GS_NEAREST) {
                    tidx[a][0] = gs_tap_index((int64_t)nearbyint(c), size, pad, align);
                    tw[a][0] = 1.0;
                } else if (mode == GS_LINEAR) {
                    double f = floor(c);
                    tidx[a][0] = gs_tap_index((int64_t)f, size, pad, align);
                    tidx[a][1] = gs_tap_index((int64_t)f + 1, size, pad, align);
                    tw[a][0] = f + 1.0 - c;
                    tw[a][1] = c - f;
                } else {
                    double f = floor(c), t = c - f;
                    for (int i = 0; i < 4; i++) {
                        tidx[a][i] = gs_tap_index((int64_t)f - 1 + i, size, pad, align);
                        tw[a][i] = gs_cubic_w(t + 1.0 - i);
                    }
                }
            }
            /* Sum over the ntap^sr tap combinations for every channel. */
            int cnt[CG_MAX_RANK] = {0};
            for (;;) {
                double w = 1.0;
                int64_t off = 0;
                bool zero = false;
                for (int a = 0; a < sr; a++) {
                    if (tidx[a][cnt[a]] < 0) {
                        zero = true;
                        break;
                    }
                    w *= tw[a][cnt[a]];
                    off += tidx[a][cnt[a]] * istr[a];
                }
                if (!zero && w != 0.0)
                    for (int64_t ch = 0; ch < C; ch++)
                        y[(n * C + ch) * out_sp + o] += w * x[(n * C + ch) * in_sp + off];
                int a = sr - 1;
                while (a >= 0 && ++cnt[a] == ntap)
                    cnt[a--] = 0;
                if (a < 0)
                    break;
            }
        }
    }
    mc_from_f64(Y, y);
    return CG_OK;
}

cg_status cg_op_affinegrid(cg_kernel_ctx *k)
{
    const cg_tensor *theta, *size;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &theta)) || (st = cg_kernel_require(k, 1, &size)))
        return st;
    if (size->rank != 1 || (size->numel != 4 && size->numel != 5) || !cg_dtype_is_int(size->dtype))
        return cg_kernel_fail(k, CG_INVALID, "size must be an int64 tensor of 4 or 5 values");
    int sr = (int)size->numel - 2;
    if (!mc_is_float(theta->dtype) || theta->rank != 3 || theta->dims[1] != sr ||
        theta->dims[2] != sr + 1)
        return cg_kernel_fail(k, CG_INVALID, "theta must be a float tensor of shape [N, %d, %d]",
                              sr, sr + 1);
    int64_t sz[5];
    for (int i = 0; i < sr + 2; i++) {
        sz[i] = cg_tensor_get_i64(size, i);
        if (sz[i] < 0)
            return cg_kernel_fail(k, CG_INVALID, "size[%d] = %lld is negative", i, (long long)sz[i]);
    }
    if (sz[0] != theta->dims[0])
        return cg_kernel_fail(k, CG_INVALID, "size N %lld differs from theta's %lld",
                              (long long)sz[0], (long long)theta->dims[0]);
    bool align = cg_attr_int(k, "align_corners", 0) != 0;
    int64_t od[5];
    od[0] = sz[0];
    for (int i = 0; i < sr; i++)
        od[1 + i] = sz[2 + i];
    od[1 + sr] = sr;
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, theta->dtype, sr + 2, od, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    double *th = mc_to_f64(k, theta), *y = mc_scratch_f64(k, Y->numel);
    if (!th || !y)
        return CG_NOMEM;
    int64_t pts = Y->numel / sz[0] / sr;
    for (int64_t n = 0; n < sz[0]; n++) {
        const double *t = th + n * sr * (sr + 1);
        for (int64_t p = 0; p < pts; p++) {
            /* base coordinates: component 0 is x (innermost axis) */
            double base[4];
            int64_t rem = p;
            for (int a = sr - 1; a >= 0; a--) {
                int64_t len = sz[2 + a], i = rem % len;
                rem /= len;
                double v;
                if (align)
                    v = len > 1 ? -1.0 + 2.0 * (double)i / (double)(len - 1) : -1.0;
                else
                    v = (2.0 * (double)i + 1.0) / (double)len - 1.0;
                base[sr - 1 - a] = v;
            }
            base[sr] = 1.0;
            for (int r = 0; r < sr; r++) {
                double acc = 0;
                for (int c = 0; c <= sr; c++)
                    acc += t[r * (sr + 1) + c] * base[c];
                y[(n * pts + p) * sr + r] = acc;
            }
        }
    }
    mc_from_f64(Y, y);
    return CG_OK;
}

/* Bilinear sample at (yy, xx) as RoiAlign defines it; returns false when
 * the point lies beyond one pixel outside the map. */
static bool roi_taps(double yy, double xx, int64_t H, int64_t W, int64_t *pos, double *w)
{
    if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)
        return false;
    if (yy <= 0)
        yy = 0;
    if (xx <= 0)
        xx = 0;
    int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
    if (yl >= H - 1) {
        yh = yl = H - 1;
        yy = (double)yl;
    } else
        yh = yl + 1;
    if (xl >= W - 1) {
        xh = xl = W - 1;
        xx = (double)xl;
    } else
        xh = xl + 1;
    double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
    pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
    w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
    return true;
}

cg_status cg_op_roialign(cg_kernel_ctx *k)
{
    const cg_tensor *X, *rois, *bi;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)) || (st = cg_kernel_require(k, 1, &rois)) ||
        (st = cg_kernel_require(k, 2, &bi)))
        return st;
    if (X->rank != 4 || !mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_INVALID, "X must be a float tensor of rank 4");
    if (rois->rank != 2 || rois->dims[1] != 4 || !mc_is_float(rois->dtype))
        return cg_kernel_fail(k, CG_INVALID, "rois must be a float tensor of shape [R, 4]");
    if (bi->rank != 1 || bi->dims[0] != rois->dims[0] || !cg_dtype_is_int(bi->dtype))
        return cg_kernel_fail(k, CG_INVALID, "batch_indices must be an integer tensor of shape [%lld]",
                              (long long)rois->dims[0]);
    const char *ms = cg_attr_string(k, "mode", "avg");
    bool is_max = strcmp(ms, "max") == 0;
    if (!is_max && strcmp(ms, "avg") != 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", ms);
    const char *ctm = k->since >= 16 ? cg_attr_string(k, "coordinate_transformation_mode", "half_pixel")
                                     : "output_half_pixel";
    bool half = strcmp(ctm, "half_pixel") == 0;
    if (!half && strcmp(ctm, "output_half_pixel") != 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown coordinate_transformation_mode '%s'", ctm);
    int64_t oh = cg_attr_int(k, "output_height", 1), ow = cg_attr_int(k, "output_width", 1);
    int64_t sampling = cg_attr_int(k, "sampling_ratio", 0);
    double scale = cg_attr_float(k, "spatial_scale", 1.0f);
    if (oh <= 0 || ow <= 0 || sampling < 0)
        return cg_kernel_fail(k, CG_INVALID, "output_height/width must be positive and "
                                             "sampling_ratio non-negative");
    int64_t R = rois->dims[0], N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
    int64_t od[4] = {R, C, oh, ow};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, X->dtype, 4, od, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    if (H == 0 || W == 0)
        return cg_kernel_fail(k, CG_INVALID, "X has an empty spatial axis");
    double *x = mc_to_f64(k, X), *rb = mc_to_f64(k, rois), *y = mc_scratch_f64(k, Y->numel);
    if (!x || !rb || !y)
        return CG_NOMEM;
    double off = half ? 0.5 : 0.0;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = cg_tensor_get_i64(bi, r);
        if (b < 0 || b >= N)
            return cg_kernel_fail(k, CG_INVALID, "batch_indices[%lld] = %lld is outside [0, %lld)",
                                  (long long)r, (long long)b, (long long)N);
        const double *box = rb + r * 4;
        double sw = box[0] * scale - off, sh = box[1] * scale - off;
        double rw = box[2] * scale - off - sw, rh = box[3] * scale - off - sh;
        if (!half) {
            rw = rw > 1.0 ? rw : 1.0;
            rh = rh > 1.0 ? rh : 1.0;
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double gh_d = sampling > 0 ? (double)sampling : ceil(rh / (double)oh);
        double gw_d = sampling > 0 ? (double)sampling : ceil(rw / (double)ow);
        if (!(gh_d >= 0 && gh_d < 1e6 && gw_d >= 0 && gw_d < 1e6))
            return cg_kernel_fail(k, CG_INVALID, "roi %lld gives an unusable sampling grid",
                                  (long long)r);
        int64_t gh = (int64_t)gh_d, gw = (int64_t)gw_d;
        if (gh * gw > (INT64_C(1) << 24))
            return cg_kernel_fail(k, CG_LIMIT, "roi %lld needs a %lldx%lld sampling grid per bin",
                                  (long long)r, (long long)gh, (long long)gw);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++)
                for (int64_t c = 0; c < C; c++) {
                    const double *plane = x + ((b * C + c) * H) * W;
                    double acc = 0.0;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            int64_t pos[4];
                            double w[4];
                            double v;
                            if (!roi_taps(yy, xx, H, W, pos, w)) {
                                v = 0.0;
                                if (is_max) {
                                    if (first || v > acc)
                                        acc = v;
                                    first = false;
                                }
                                continue;
                            }
                            if (is_max) {
                                v = w[0] * plane[pos[0]];
                                for (int q = 1; q < 4; q++)
                                    if (w[q] * plane[pos[q]] > v)
                                        v = w[q] * plane[pos[q]];
                                if (first || v > acc)
                                    acc = v;
                                first = false;
                            } else {
                                acc += w[0] * plane[pos[0]] + w[1] * plane[pos[1]] +
                                       w[2] * plane[pos[2]] + w[3] * plane[pos[3]];
                            }
                        }
                    }
                    y[((r * C + c) * oh + ph) * ow + pw] = is_max ? acc : acc / count;
                }
    }
    mc_from_f64(Y, y);
    return CG_OK;
}
