/*
 * Resize (opsets 10, 11, 13, 18, 19) and the deprecated Upsample (7, 9).
 *
 * Resizing is separable: for every resized axis we precompute, per output
 * index, the input indices it reads and their weights (a "tap" list: one tap
 * for nearest, two for linear, four for cubic, more with antialias), then
 * apply the axes one at a time on a double buffer. The tap rules follow the
 * ONNX reference implementation: x_original comes from the coordinate
 * transformation mode, its fractional part "ratio" lies in (0, 1], taps are
 * edge-clamped, and exclude_outside zeroes and renormalizes taps that fall
 * outside the input. tf_crop_and_resize marks output positions whose
 * x_original leaves [0, in-1]; those elements take extrapolation_value.
 *
 * Nearest mode is a pure gather and is done on raw element bytes, so every
 * dtype (int64 included) is copied exactly.
 *
 * float32 bilinear (linear mode on a 2-D tensor, or on H and W of a 4-D
 * NCHW/NHWC one, without antialias) follows ONNX Runtime 1.22's CPU kernel
 * operation for operation instead (rs_bilinear_ort): coordinates, clamps and
 * weights in float32, the four-tap sum in its order (where ORT's formula
 * reads the resized length as the output size and the spec as in * scale,
 * only when the two agree). The two agree to an ulp or so; an ulp is all it takes to flip a quantizer downstream
 * (DynamicQuantizeLinear after an upsample), so the reference rounds as the
 * runtime models are deployed on. Double (the float64 mode) keeps the exact
 * formula. float32 bicubic (cubic mode on 2-D or NCHW, no antialias) does the
 * same with ORT's ResizeBiCubic (rs_bicubic_ort): Keys' weights computed in
 * float per position, rows interpolated first, weights divided by their sum
 * before each product.
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

typedef enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;

typedef enum rs_ctm {
    CTM_HALF_PIXEL,
    CTM_HALF_PIXEL_SYMMETRIC,
    CTM_PYTORCH_HALF_PIXEL,
    CTM_ALIGN_CORNERS,
    CTM_ASYMMETRIC,
    CTM_TF_HALF_PIXEL_FOR_NN,
    CTM_TF_CROP_AND_RESIZE
} rs_ctm;

typedef enum rs_nearest { NN_ROUND_PREFER_FLOOR, NN_ROUND_PREFER_CEIL, NN_FLOOR, NN_CEIL, NN_SIMPLE } rs_nearest;

typedef struct rs_cfg {
    rs_mode mode;
    rs_ctm ctm;
    rs_nearest nearest;
    double cubic_a;
    bool exclude_outside;
    bool antialias;
    double extrapolation;
} rs_cfg;

/* Taps of one axis: for output index o, taps [o*n, o*n+n) of idx/weight;
 * outside[o] marks a tf_crop_and_resize position outside the input. */
typedef struct rs_axis {
    int64_t in, out;
    int n;
    int64_t *idx;
    double *w;
    uint8_t *outside;
} rs_axis;

static const char *const rs_ctm_names[] = {"half_pixel",   "half_pixel_symmetric",
                                           "pytorch_half_pixel", "align_corners",
                                           "asymmetric",   "tf_half_pixel_for_nn",
                                           "tf_crop_and_resize"};
static const char *const rs_nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                               "ceil"};

/* x_original for output index x of an axis (in -> out, scale s). */
static double rs_original(const rs_cfg *c, double x, int64_t in, int64_t out, double s,
                          double roi_start, double roi_end)
{
    /* Like the reference, the resized length is in * scale, not the
     * truncated output size (they differ when scales are given). */
    double fin = (double)in, fout = fin * s;
    switch (c->ctm) {
    case CTM_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CTM_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out / fout;
        double center = fin / 2.0;
        double offset = center * (1.0 - adj);
        return offset + (x + 0.5) / s - 0.5;
    }
    case CTM_PYTORCH_HALF_PIXEL: return fout > 1.0 ? (x + 0.5) / s - 0.5 : 0.0;
    case CTM_ALIGN_CORNERS: return fout == 1.0 ? 0.0 : x * (fin - 1.0) / (fout - 1.0);
    case CTM_ASYMMETRIC: return x / s;
    case CTM_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case CTM_TF_CROP_AND_RESIZE:
        if (fout > 1.0)
            return roi_start * (fin - 1.0) + x * (roi_end - roi_start) * (fin - 1.0) / (fout - 1.0);
        return 0.5 * (roi_start + roi_end) * (fin - 1.0);
    }
    return x / s;
}

static int64_t rs_nearest_index(const rs_cfg *c, double xo, bool downsample)
{
    double f = floor(xo);
    switch (c->nearest) {
    case NN_ROUND_PREFER_FLOOR: return (int64_t)(xo - f == 0.5 ? f : floor(xo + 0.5));
    case NN_ROUND_PREFER_CEIL: return (int64_t)(xo - f == 0.5 ? f + 1.0 : floor(xo + 0.5));
    case NN_FLOOR: return (int64_t)f;
    case NN_CEIL: return (int64_t)ceil(xo);
    case NN_SIMPLE: return (int64_t)(downsample ? ceil(xo) : (xo < 0 ? ceil(xo) : f));
    }
    return (int64_t)f;
}

static double rs_cubic(double A, double x)
{
    x = fabs(x);
    if (x <= 1.0)
        return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    if (x < 2.0)
        return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    return 0.0;
}

static int64_t rs_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Fills the taps of one axis. s is the axis scale (out / in when sizes are
 * given). */
static cg_status rs_build_axis(cg_kernel_ctx *k, const rs_cfg *c, rs_axis *ax, double s,
                               double roi_start, double roi_end)
{
    int n;
    double aa = 1.0; /* antialias stretch: the kernel is widened by 1/s when s < 1 */
    if (c->mode == RS_NEAREST)
        n = 1;
    else {
        if (c->antialias && s < 1.0)
            aa = s;
        /* linear: footprint 2 - 2*start, start = floor(-1/aa) + 1; cubic uses -2/aa */
        double reach = c->mode == RS_LINEAR ? 1.0 : 2.0;
        double start = floor(-reach / aa) + 1.0;
        double fp = 2.0 - 2.0 * start;
        if (!(fp >= 1.0) || fp > 4096.0)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "antialias filter for scale %g is too wide", s);
        n = (int)fp;
    }
    ax->n = n;
    int64_t taps;
    if (ax->out > INT64_MAX / n)
        return cg_kernel_fail(k, CG_LIMIT, "too many resize taps");
    taps = ax->out * n;
    ax->idx = cg_kernel_scratch(k, (size_t)(taps ? taps : 1) * sizeof(int64_t));
    ax->w = cg_kernel_scratch(k, (size_t)(taps ? taps : 1) * sizeof(double));
    ax->outside = cg_kernel_scratch(k, (size_t)(ax->out ? ax->out : 1));
    if (!ax->idx || !ax->w || !ax->outside)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory for resize taps");
    bool down = ax->out < ax->in;
    for (int64_t o = 0; o < ax->out; o++) {
        double xo = rs_original(c, (double)o, ax->in, ax->out, s, roi_start, roi_end);
        int64_t *ix = ax->idx + o * n;
        double *w = ax->w + o * n;
        ax->outside[o] = c->ctm == CTM_TF_CROP_AND_RESIZE && !(xo >= 0.0 && xo <= (double)(ax->in - 1));
        /* A roi far outside (or NaN) only matters through `outside`; keep
         * the value castable to int64. */
        if (!(xo >= -1e15 && xo <= 1e15))
            xo = xo > 0 ? 1e15 : -1e15;
        if (c->mode == RS_NEAREST) {
            ix[0] = rs_clamp(rs_nearest_index(c, xo, down), 0, ax->in - 1);
            w[0] = 1.0;
            continue;
        }
        /* base: the index with xo - base in (0, 1], as the reference picks */
        double base = ceil(xo) - 1.0;
        double ratio = xo - base;
        int64_t b = (int64_t)base;
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            int64_t off = (int64_t)i - n / 2 + 1; /* offset from base */
            double dist = (double)off - ratio;   /* tap position minus xo */
            double wt;
            if (c->mode == RS_LINEAR) {
                wt = 1.0 - fabs(dist * aa);
                if (wt < 0)
                    wt = 0;
            } else {
                wt = rs_cubic(c->cubic_a, dist * aa);
            }
            int64_t pos = b + off;
            if (c->exclude_outside && (pos < 0 || pos >= ax->in))
                wt = 0.0;
            ix[i] = rs_clamp(pos, 0, ax->in - 1);
            w[i] = wt;
            sum += wt;
        }
        /* Plain linear/cubic weights already sum to 1; antialias and
         * exclude_outside renormalize as the spec says. */
        if ((aa != 1.0 || c->exclude_outside) && sum != 0.0)
            for (int i = 0; i < n; i++)
                w[i] /= sum;
    }
    return CG_OK;
}

static cg_status rs_parse_enum(cg_kernel_ctx *k, const char *attr, const char *dflt,
                               const char *const *names, int count, int *out)
{
    const char *s = cg_attr_string(k, attr, dflt);
    for (int i = 0; i < count; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return CG_OK;
        }
    return cg_kernel_fail(k, CG_INVALID, "unknown %s '%s'", attr, s);
}

/* x_original in float32 as ONNX Runtime 1.22 computes it
 * (GetOriginalCoordinateFromResizedCoordinate, cpu/tensor/upsamplebase.h):
 * x resized index, s the float scale, lr / lo the resized / original
 * lengths. half_pixel_symmetric and tf_crop_and_resize's single-pixel case
 * go through double there, as they do here. */
static float rs_original_ort(rs_ctm ctm, float x, float s, float lr, float lo, float roi_start,
                             float roi_end)
{
    switch (ctm) {
    case CTM_ASYMMETRIC: return x / s;
    case CTM_PYTORCH_HALF_PIXEL: return lr > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case CTM_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / s;
    case CTM_ALIGN_CORNERS: return lr == 1 ? 0.0f : x * (lo - 1) / (lr - 1);
    case CTM_TF_CROP_AND_RESIZE:
        if (lr > 1) {
            float a = roi_start * (lo - 1);
            float b = x * (roi_end - roi_start) * (lo - 1);
            return a + b / (lr - 1);
        }
        return (float)(0.5 * (double)(roi_start + roi_end) * (double)(lo - 1));
    case CTM_HALF_PIXEL_SYMMETRIC: {
        float output_width = s * lo;
        float adjustment = lr / output_width;
        float center = lo / 2;
        float offset = center * (1 - adjustment);
        return (float)((double)offset + ((double)x + 0.5) / (double)s - 0.5);
    }
    case CTM_HALF_PIXEL: break;
    }
    return ((x + 0.5f) / s) - 0.5f;
}

/* One axis of ORT's SetupUpsampleBilinear: for each output index, the two
 * input indices and their float weights (d1 for i1, d2 for i2 as ORT names
 * them: the weight of i1 is d2), and x_original for extrapolation. */
static void rs_bilinear_axis_ort(const rs_cfg *c, int32_t in, int32_t out, float s,
                                 float roi_start, float roi_end, int32_t *i1, int32_t *i2,
                                 float *d1, float *d2, float *orig)
{
    for (int32_t o = 0; o < out; o++) {
        float v = s == 1 ? (float)o
                         : rs_original_ort(c->ctm, (float)o, s, (float)out, (float)in, roi_start,
                                           roi_end);
        orig[o] = v;
        float hi = (float)(in - 1);
        v = v > hi ? hi : v;   /* std::max(0, std::min(v, hi)) */
        v = 0.0f > v ? 0.0f : v;
        int32_t a = (int32_t)v < in - 1 ? (int32_t)v : in - 1;
        int32_t b = a + 1 < in - 1 ? a + 1 : in - 1;
        i1[o] = a;
        i2[o] = b;
        d1[o] = fabsf(v - (float)a);
        d2[o] = fabsf(v - (float)b);
        if (a == b)
            d1[o] = d2[o] = 0.5f;
    }
}

/* ORT's UpsampleBilinear / NhwcUpsampleBilinear on float32: X is
 * [n][h][w][c] in strides (sn, sh, sw, sc) with h, w resized to oh, ow.
 * Each output is ((d2x*d2y)*X11 + (d1x*d2y)*X21) + (d2x*d1y)*X12 +
 * (d1x*d1y)*X22, one statement per operation so no compiler contracts a
 * product into an FMA ORT does not use. */
static cg_status rs_bilinear_ort(cg_kernel_ctx *k, const rs_cfg *c, const float *x, float *y,
                                 const int64_t *dims4, const int64_t *odims4, int hax, int wax,
                                 float sh, float sw, const double *roi_s, const double *roi_e)
{
    int32_t ih = (int32_t)dims4[hax], iw = (int32_t)dims4[wax];
    int32_t oh = (int32_t)odims4[hax], ow = (int32_t)odims4[wax];
    int32_t *iy1 = cg_kernel_scratch(k, sizeof(int32_t) * (size_t)(2 * (oh + ow)) + 1);
    float *fy = cg_kernel_scratch(k, sizeof(float) * (size_t)(3 * (oh + ow)) + 1);
    if (!iy1 || !fy)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory for resize");
    int32_t *iy2 = iy1 + oh, *ix1 = iy2 + oh, *ix2 = ix1 + ow;
    float *dy1 = fy, *dy2 = dy1 + oh, *yo = dy2 + oh, *dx1 = yo + oh, *dx2 = dx1 + ow,
          *xo = dx2 + ow;
    rs_bilinear_axis_ort(c, ih, oh, sh, (float)roi_s[hax], (float)roi_e[hax], iy1, iy2, dy1, dy2,
                         yo);
    rs_bilinear_axis_ort(c, iw, ow, sw, (float)roi_s[wax], (float)roi_e[wax], ix1, ix2, dx1, dx2,
                         xo);
    /* strides of the 4-D view (row-major over dims4) */
    int64_t is[4], os[4];
    is[3] = os[3] = 1;
    for (int d = 2; d >= 0; d--) {
        is[d] = is[d + 1] * dims4[d + 1];
        os[d] = os[d + 1] * odims4[d + 1];
    }
    bool crop = c->ctm == CTM_TF_CROP_AND_RESIZE;
    float extrap = (float)c->extrapolation;
    int64_t pos[4];
    for (int64_t o = 0, total = os[0] * odims4[0]; o < total; o++) {
        int64_t r = o;
        for (int d = 0; d < 4; d++) {
            pos[d] = r / os[d];
            r %= os[d];
        }
        int32_t py = (int32_t)pos[hax], px = (int32_t)pos[wax];
        if (crop && (yo[py] < 0 || yo[py] > (float)(ih - 1) || xo[px] < 0 ||
                     xo[px] > (float)(iw - 1))) {
            y[o] = extrap;
            continue;
        }
        int64_t base = 0;
        for (int d = 0; d < 4; d++)
            if (d != hax && d != wax)
                base += pos[d] * is[d];
        float x11 = x[base + iy1[py] * is[hax] + ix1[px] * is[wax]];
        float x21 = x[base + iy1[py] * is[hax] + ix2[px] * is[wax]];
        float x12 = x[base + iy2[py] * is[hax] + ix1[px] * is[wax]];
        float x22 = x[base + iy2[py] * is[hax] + ix2[px] * is[wax]];
        float c11 = dx2[px] * dy2[py];
        float c21 = dx1[px] * dy2[py];
        float c12 = dx2[px] * dy1[py];
        float c22 = dx1[px] * dy1[py];
        float t11 = c11 * x11;
        float t21 = c21 * x21;
        float t12 = c12 * x12;
        float t22 = c22 * x22;
        float acc = t11 + t21;
        acc = acc + t12;
        y[o] = acc + t22;
    }
    return CG_OK;
}

/* Keys' weight of a tap at distance d in [1, 2), in GetCubicCoeffs'
 * operation order: ((a*d - 5a)*d + 8a)*d - 4a. */
static inline float rs_cubic_far(float d, float a)
{
    float v = a * d;
    v = v - 5 * a;
    v = v * d;
    v = v + 8 * a;
    v = v * d;
    return v - 4 * a;
}

/* Keys' weight of a tap at distance d in [0, 1], in the same order:
 * ((a+2)*d - (a+3))*d*d + 1. */
static inline float rs_cubic_near(float d, float a)
{
    float v = (a + 2) * d;
    v = v - (a + 3);
    v = v * d;
    v = v * d;
    return v + 1;
}

/* ORT's GetCubicCoeffs: Keys' cubic weights of the four taps around a
 * point at fraction t, in float, one rounding per operation. */
static void rs_cubic_coeffs_ort(float t, float a, float *c)
{
    c[0] = rs_cubic_far(t + 1, a);
    c[1] = rs_cubic_near(t, a);
    c[2] = rs_cubic_near(1 - t, a);
    c[3] = rs_cubic_far(2 - t, a);
}

/* One axis of ORT's ResizeBiCubic: per output index, x_original (kept for
 * extrapolation), floor(x_original) and the four weights, zeroed and summed
 * (in float, in order) for exclude_outside, else with sum 1. */
static void rs_bicubic_axis_ort(const rs_cfg *c, int64_t in, int64_t out, float s,
                                float roi_start, float roi_end, float *orig, int64_t *base,
                                float *w, float *wsum)
{
    float a = (float)c->cubic_a;
    for (int64_t o = 0; o < out; o++) {
        float v = s == 1 ? (float)o
                         : rs_original_ort(c->ctm, (float)o, s, (float)out, (float)in, roi_start,
                                           roi_end);
        orig[o] = v;
        float fl = floorf(v);
        /* far outside (tf_crop_and_resize) the position only extrapolates */
        int64_t b = fl >= -2.0f && fl <= (float)in + 1 ? (int64_t)fl : 0;
        base[o] = b;
        rs_cubic_coeffs_ort(fabsf(v - (float)b), a, w + 4 * o);
        wsum[o] = 1.0f;
        if (c->exclude_outside) {
            float sum = 0.0f;
            for (int64_t i = 0; i < 4; i++) {
                int64_t p = b - 1 + i;
                if (p < 0 || p >= in)
                    w[4 * o + i] = 0.0f;
                sum += w[4 * o + i];
            }
            wsum[o] = sum;
        }
    }
}

/* ORT's ResizeBiCubic on float32 planes x [planes][ih][iw] -> y [planes][oh]
 * [ow]: per output, four row interpolations sum_j (wx[j] / sx) * x (taps
 * edge-clamped), then sum_i (row_i * wy[i]) / sy, each sum from 0 in
 * order, one float rounding per operation. */
static cg_status rs_bicubic_ort(cg_kernel_ctx *k, const rs_cfg *c, const float *x, float *y,
                                int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                                float sh, float sw, const double *roi_s, const double *roi_e)
{
    int64_t *by = cg_kernel_scratch(k, sizeof(int64_t) * (size_t)(oh + ow) + 1);
    float *f = cg_kernel_scratch(k, sizeof(float) * (size_t)(6 * (oh + ow)) + 1);
    if (!by || !f)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory for resize");
    int64_t *bx = by + oh;
    float *yo = f, *wy = yo + oh, *sy = wy + 4 * oh, *xo = sy + oh, *wx = xo + ow, *sx = wx + 4 * ow;
    rs_bicubic_axis_ort(c, ih, oh, sh, (float)roi_s[0], (float)roi_e[0], yo, by, wy, sy);
    rs_bicubic_axis_ort(c, iw, ow, sw, (float)roi_s[1], (float)roi_e[1], xo, bx, wx, sx);
    bool crop = c->ctm == CTM_TF_CROP_AND_RESIZE;
    float extrap = (float)c->extrapolation;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * ih * iw;
        float *yp = y + p * oh * ow;
        for (int64_t oy = 0; oy < oh; oy++) {
            bool out_y = crop && (yo[oy] < 0 || yo[oy] > (float)(ih - 1));
            for (int64_t ox = 0; ox < ow; ox++) {
                if (out_y || (crop && (xo[ox] < 0 || xo[ox] > (float)(iw - 1)))) {
                    yp[oy * ow + ox] = extrap;
                    continue;
                }
                float result = 0.0f;
                for (int64_t i = 0; i < 4; i++) {
                    int64_t r = rs_clamp(by[oy] - 1 + i, 0, ih - 1);
                    float row = 0.0f;
                    for (int64_t j = 0; j < 4; j++) {
                        int64_t q = rs_clamp(bx[ox] - 1 + j, 0, iw - 1);
                        float t = wx[4 * ox + j] / sx[ox];
                        t = t * xp[r * iw + q];
                        row = row + t;
                    }
                    float t = row * wy[4 * oy + i];
                    t = t / sy[oy];
                    result = result + t;
                }
                yp[oy * ow + ox] = result;
            }
        }
    }
    return CG_OK;
}

/* Shared body. scales_t / sizes_t / roi_t may be NULL; scales_attr is the
 * Upsample-7 attribute form. */
static cg_status rs_run(cg_kernel_ctx *k, const cg_tensor *X, const rs_cfg *cfg,
                        const cg_tensor *roi_t, const cg_tensor *scales_t,
                        const float *scales_attr, size_t scales_attr_n, const cg_tensor *sizes_t)
{
    int rank = X->rank;
    cg_status st;
    double scale[CG_MAX_RANK], roi_s[CG_MAX_RANK], roi_e[CG_MAX_RANK];
    int64_t out_dims[CG_MAX_RANK];
    bool resized[CG_MAX_RANK];
    int64_t axes[CG_MAX_RANK];
    int naxes = rank;
    for (int i = 0; i < rank; i++) {
        axes[i] = i;
        scale[i] = 1.0;
        roi_s[i] = 0.0;
        roi_e[i] = 1.0;
        out_dims[i] = X->dims[i];
    }
    if (rank < 1)
        return cg_kernel_fail(k, CG_INVALID, "X must have rank >= 1");

    /* axes (opset 18+) */
    size_t axes_n = 0;
    const int64_t *axes_attr = k->since >= 18 ? cg_attr_ints(k, "axes", &axes_n) : NULL;
    if (axes_attr) {
        if (axes_n > (size_t)rank)
            return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries for rank %d", axes_n, rank);
        bool seen[CG_MAX_RANK] = {false};
        for (size_t i = 0; i < axes_n; i++) {
            int64_t a;
            if (!cg_normalize_axis(axes_attr[i], rank, &a))
                return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                                      (long long)axes_attr[i], rank);
            if (seen[a])
                return cg_kernel_fail(k, CG_INVALID, "axis %lld repeated", (long long)axes_attr[i]);
            seen[a] = true;
            axes[i] = a;
        }
        naxes = (int)axes_n;
    }

    if (roi_t && roi_t->numel > 0 && cfg->ctm == CTM_TF_CROP_AND_RESIZE) {
        if (roi_t->numel != 2 * naxes || !(mc_is_float(roi_t->dtype)))
            return cg_kernel_fail(k, CG_INVALID, "roi must be a float tensor of %d values (got %lld)",
                                  2 * naxes, (long long)roi_t->numel);
        for (int i = 0; i < naxes; i++) {
            roi_s[axes[i]] = cg_tensor_get_f64(roi_t, i);
            roi_e[axes[i]] = cg_tensor_get_f64(roi_t, naxes + i);
        }
    }

    float fscale[CG_MAX_RANK]; /* the scales as ONNX Runtime holds them (float) */
    for (int i = 0; i < rank; i++)
        fscale[i] = 1.0f;
    bool have_scales = (scales_t && scales_t->numel > 0) || scales_attr;
    bool have_sizes = sizes_t && sizes_t->numel > 0;
    if (have_scales == have_sizes)
        return cg_kernel_fail(k, CG_INVALID, "exactly one of scales and sizes must be given");
    if (have_scales) {
        int64_t n = scales_attr ? (int64_t)scales_attr_n : scales_t->numel;
        if (n != naxes)
            return cg_kernel_fail(k, CG_INVALID, "scales has %lld values; expected %d",
                                  (long long)n, naxes);
        if (scales_t && !mc_is_float(scales_t->dtype))
            return cg_kernel_fail(k, CG_INVALID, "scales must be a float tensor");
        for (int i = 0; i < naxes; i++) {
            double s = scales_attr ? (double)scales_attr[i] : cg_tensor_get_f64(scales_t, i);
            /* Scales are float32 in the model; rounding through float keeps
             * floor(in * s) identical to the reference's arithmetic. */
            s = (double)(float)s;
            if (!(s > 0.0) || !isfinite(s))
                return cg_kernel_fail(k, CG_INVALID, "scale %g for axis %lld must be positive",
                                      s, (long long)axes[i]);
            int64_t a = axes[i];
            double od = floor((double)X->dims[a] * s);
            if (!(od >= 0.0) || od > 9.0e15)
                return cg_kernel_fail(k, CG_INVALID, "output size for axis %lld is out of range",
                                      (long long)a);
            scale[a] = s;
            fscale[a] = (float)s;
            out_dims[a] = (int64_t)od;
        }
    } else {
        if (sizes_t->numel != naxes || !cg_dtype_is_int(sizes_t->dtype))
            return cg_kernel_fail(k, CG_INVALID, "sizes must be an integer tensor of %d values",
                                  naxes);
        const char *policy = k->since >= 18 ? cg_attr_string(k, "keep_aspect_ratio_policy", "stretch")
                                            : "stretch";
        int pol = strcmp(policy, "stretch") == 0 ? 0
                  : strcmp(policy, "not_larger") == 0 ? 1
                  : strcmp(policy, "not_smaller") == 0 ? 2 : -1;
        if (pol < 0)
            return cg_kernel_fail(k, CG_INVALID, "unknown keep_aspect_ratio_policy '%s'", policy);
        double common = pol == 1 ? INFINITY : 0.0;
        for (int i = 0; i < naxes; i++) {
            int64_t sz = cg_tensor_get_i64(sizes_t, i);
            int64_t a = axes[i];
            if (sz < 0)
                return cg_kernel_fail(k, CG_INVALID, "sizes[%d] = %lld is negative", i, (long long)sz);
            if (X->dims[a] == 0) {
                if (sz != 0)
                    return cg_kernel_fail(k, CG_INVALID, "cannot resize an empty axis %lld to %lld",
                                          (long long)a, (long long)sz);
                out_dims[a] = 0;
                continue;
            }
            double s = (double)sz / (double)X->dims[a];
            out_dims[a] = sz;
            scale[a] = s;
            fscale[a] = (float)sz / (float)X->dims[a]; /* in float, as ORT divides */
            if (pol == 1 && s < common)
                common = s;
            if (pol == 2 && s > common)
                common = s;
        }
        if (pol != 0 && naxes > 0) {
            for (int i = 0; i < naxes; i++) {
                int64_t a = axes[i];
                /* the reference rounds half up */
                double od = floor(common * (double)X->dims[a] + 0.5);
                if (!(od >= 0.0) || od > 9.0e15)
                    return cg_kernel_fail(k, CG_INVALID, "output size for axis %lld is out of range",
                                          (long long)a);
                scale[a] = common;
                fscale[a] = (float)common; /* rounding keeps the order: ORT's float min/max */
                out_dims[a] = (int64_t)od;
            }
        }
    }
    for (int i = 0; i < rank; i++) {
        resized[i] = false;
        for (int j = 0; j < naxes; j++)
            if (axes[j] == i)
                resized[i] = out_dims[i] != X->dims[i] || scale[i] != 1.0 ||
                             cfg->ctm == CTM_TF_CROP_AND_RESIZE;
        if (resized[i] && X->dims[i] == 0 && out_dims[i] != 0)
            return cg_kernel_fail(k, CG_INVALID, "cannot resize an empty axis %d", i);
    }

    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, X->dtype, rank, out_dims, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;

    rs_axis ax[CG_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        ax[i].in = X->dims[i];
        ax[i].out = out_dims[i];
        if (resized[i] && (st = rs_build_axis(k, cfg, &ax[i], scale[i], roi_s[i], roi_e[i])))
            return st;
    }

    int64_t ostr[CG_MAX_RANK], istr[CG_MAX_RANK];
    ostr[rank - 1] = istr[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--) {
        ostr[i] = ostr[i + 1] * out_dims[i + 1];
        istr[i] = istr[i + 1] * X->dims[i + 1];
    }
    bool crop = cfg->ctm == CTM_TF_CROP_AND_RESIZE;

    if (cfg->mode == RS_NEAREST) {
        size_t es = X->dtype == CG_DTYPE_STRING ? 0 : cg_dtype_size(X->dtype);
        if (es == 0)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "type %s is not supported",
                                  cg_dtype_name(X->dtype));
        int64_t pos[CG_MAX_RANK] = {0};
        const uint8_t *src = X->data;
        uint8_t *dst = Y->data;
        for (int64_t o = 0; o < Y->numel; o++) {
            int64_t off = 0;
            bool outside = false;
            for (int i = 0; i < rank; i++) {
                int64_t p = pos[i];
                if (resized[i]) {
                    outside |= crop && ax[i].outside[p];
                    p = ax[i].idx[p];
                }
                off += p * istr[i];
            }
            if (outside)
                cg_tensor_set_f64(Y, o, cfg->extrapolation);
            else
                memcpy(dst + (size_t)o * es, src + (size_t)off * es, es);
            for (int i = rank - 1; i >= 0; i--) {
                if (++pos[i] < out_dims[i])
                    break;
                pos[i] = 0;
            }
        }
        return CG_OK;
    }

    if (X->dtype == CG_DTYPE_STRING || X->dtype == CG_DTYPE_BOOL)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "%s mode does not support type %s",
                              cfg->mode == RS_LINEAR ? "linear" : "cubic", cg_dtype_name(X->dtype));
    /* Where a mode reads the resized length, ORT takes the output size and
     * the spec in * scale: they agree only when in * scale is whole (sizes
     * given, or an exact scale). Elsewhere the spec is followed. */
    bool ort_lengths = true;
    bool uses_length = cfg->ctm == CTM_ALIGN_CORNERS || cfg->ctm == CTM_TF_CROP_AND_RESIZE ||
                       cfg->ctm == CTM_HALF_PIXEL_SYMMETRIC || cfg->ctm == CTM_PYTORCH_HALF_PIXEL;
    for (int i = 0; uses_length && i < rank; i++)
        if (resized[i] && (double)out_dims[i] != (double)X->dims[i] * scale[i])
            ort_lengths = false;
    /* float32 bicubic: ORT's ResizeBiCubic (see the file comment) on 2-D
     * and NCHW (N, C kept) tensors */
    if (cfg->mode == RS_CUBIC && !cfg->antialias && X->dtype == CG_DTYPE_FLOAT && ort_lengths &&
        (rank == 2 || (rank == 4 && !resized[0] && !resized[1]))) {
        int hax = rank - 2, wax = rank - 1;
        double rs2[2] = {roi_s[hax], roi_s[wax]}, re2[2] = {roi_e[hax], roi_e[wax]};
        int64_t planes = rank == 4 ? X->dims[0] * X->dims[1] : 1;
        return rs_bicubic_ort(k, cfg, X->data, Y->data, planes, X->dims[hax], X->dims[wax],
                              out_dims[hax], out_dims[wax], fscale[hax], fscale[wax], rs2, re2);
    }
    /* float32 bilinear: ONNX Runtime's arithmetic (see the file comment) on
     * the layouts its bilinear kernel takes: 2-D, NCHW (N, C kept), NHWC
     * (N, C kept); int32 extents */
    if (cfg->mode == RS_LINEAR && !cfg->antialias && X->dtype == CG_DTYPE_FLOAT &&
        ort_lengths && (rank == 2 || rank == 4)) {
        int64_t d4[4] = {1, 1, 1, 1}, o4[4] = {1, 1, 1, 1};
        int hax = 2, wax = 3;
        bool ok = true;
        double rs4[4] = {0, 0, 0, 0}, re4[4] = {1, 1, 1, 1};
        if (rank == 2) {
            d4[2] = X->dims[0], d4[3] = X->dims[1], o4[2] = out_dims[0], o4[3] = out_dims[1];
            rs4[2] = roi_s[0], rs4[3] = roi_s[1], re4[2] = roi_e[0], re4[3] = roi_e[1];
        } else {
            for (int d = 0; d < 4; d++) {
                d4[d] = X->dims[d], o4[d] = out_dims[d], rs4[d] = roi_s[d], re4[d] = roi_e[d];
                ok = ok && d4[d] <= INT32_MAX && o4[d] <= INT32_MAX;
            }
            if (resized[0] || (resized[1] && resized[3]))
                ok = false;
            else if (resized[1]) /* NHWC: ORT takes it when the C scale is 1 */
                hax = 1, wax = 2;
        }
        float sh = fscale[rank == 2 ? 0 : hax], sw = fscale[rank == 2 ? 1 : wax];
        ok = ok && d4[hax] <= INT32_MAX && d4[wax] <= INT32_MAX && o4[hax] <= INT32_MAX &&
             o4[wax] <= INT32_MAX && d4[hax] * d4[wax] <= INT32_MAX;
        if (ok)
            return rs_bilinear_ort(k, cfg, X->data, Y->data, d4, o4, hax, wax, sh, sw, rs4, re4);
    }
    /* Separable passes: cur has shape dims (axes < a already resized). */
    double *cur = mc_to_f64(k, X);
    if (!cur)
        return CG_NOMEM;
    int64_t dims[CG_MAX_RANK];
    memcpy(dims, X->dims, sizeof(int64_t) * (size_t)rank);
    for (int a = 0; a < rank; a++) {
        if (!resized[a])
            continue;
        int64_t outer = 1, inner = 1, n_out;
        for (int i = 0; i < a; i++)
            outer *= dims[i];
        for (int i = a + 1; i < rank; i++)
            inner *= dims[i];
        int64_t nd[CG_MAX_RANK];
        memcpy(nd, dims, sizeof nd);
        nd[a] = ax[a].out;
        if ((st = mc_numel(k, rank, nd, &n_out)))
            return st;
        double *next = mc_scratch_f64(k, n_out);
        if (!next)
            return CG_NOMEM;
        int n = ax[a].n;
        for (int64_t p = 0; p < outer; p++) {
            const double *sp = cur + p * dims[a] * inner;
            double *dp = next + p * ax[a].out * inner;
            for (int64_t o = 0; o < ax[a].out; o++) {
                double *drow = dp + o * inner;
                if (crop && ax[a].outside[o]) {
                    for (int64_t q = 0; q < inner; q++)
                        drow[q] = cfg->extrapolation;
                    continue;
                }
                for (int t = 0; t < n; t++) {
                    double wt = ax[a].w[o * n + t];
                    if (wt == 0.0)
                        continue;
                    const double *srow = sp + ax[a].idx[o * n + t] * inner;
                    for (int64_t q = 0; q < inner; q++)
                        drow[q] += wt * srow[q];
                }
            }
        }
        cur = next;
        dims[a] = ax[a].out;
    }
    mc_from_f64(Y, cur);
    return CG_OK;
}

static cg_status rs_read_cfg(cg_kernel_ctx *k, rs_cfg *c, bool legacy)
{
    const char *mode = cg_attr_string(k, "mode", "nearest");
    cg_status st;
    memset(c, 0, sizeof *c);
    if (strcmp(mode, "nearest") == 0)
        c->mode = RS_NEAREST;
    else if (strcmp(mode, "linear") == 0 || (legacy && strcmp(mode, "bilinear") == 0))
        c->mode = RS_LINEAR;
    else if (strcmp(mode, "cubic") == 0 && !legacy)
        c->mode = RS_CUBIC;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", mode);
    if (legacy) {
        /* Upsample and Resize-10: asymmetric coordinates and onnxruntime's
         * "simple" nearest rounding (floor up, ceil down). */
        c->ctm = CTM_ASYMMETRIC;
        c->nearest = NN_SIMPLE;
        c->cubic_a = -0.75;
        return CG_OK;
    }
    int v = 0;
    if ((st = rs_parse_enum(k, "coordinate_transformation_mode", "half_pixel", rs_ctm_names, 7, &v)))
        return st;
    c->ctm = (rs_ctm)v;
    if (c->ctm == CTM_HALF_PIXEL_SYMMETRIC && k->since < 18)
        return cg_kernel_fail(k, CG_INVALID, "half_pixel_symmetric needs opset 18");
    if ((st = rs_parse_enum(k, "nearest_mode", "round_prefer_floor", rs_nearest_names, 4, &v)))
        return st;
    c->nearest = (rs_nearest)v;
    c->cubic_a = cg_attr_float(k, "cubic_coeff_a", -0.75f);
    c->exclude_outside = cg_attr_int(k, "exclude_outside", 0) != 0;
    c->extrapolation = cg_attr_float(k, "extrapolation_value", 0.0f);
    c->antialias = k->since >= 18 && cg_attr_int(k, "antialias", 0) != 0;
    return CG_OK;
}

cg_status cg_op_resize(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    rs_cfg cfg;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    bool legacy = k->since < 11;
    if ((st = rs_read_cfg(k, &cfg, legacy)))
        return st;
    if (legacy) {
        const cg_tensor *scales;
        if ((st = cg_kernel_require(k, 1, &scales)))
            return st;
        return rs_run(k, X, &cfg, NULL, scales, NULL, 0, NULL);
    }
    return rs_run(k, X, &cfg, cg_kernel_input(k, 1), cg_kernel_input(k, 2), NULL, 0,
                  cg_kernel_input(k, 3));
}

cg_status cg_op_upsample(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    rs_cfg cfg;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    if ((st = rs_read_cfg(k, &cfg, true)))
        return st;
    if (k->since < 9) {
        size_t n = 0;
        const float *s = cg_attr_floats(k, "scales", &n);
        if (!s)
            return cg_kernel_fail(k, CG_INVALID, "missing scales attribute");
        return rs_run(k, X, &cfg, NULL, NULL, s, n, NULL);
    }
    const cg_tensor *scales;
    if ((st = cg_kernel_require(k, 1, &scales)))
        return st;
    return rs_run(k, X, &cfg, NULL, scales, NULL, 0, NULL);
}
