/*
 * Signal-processing kernels: DFT (opsets 17 and 20), STFT (17), the
 * HannWindow / HammingWindow / BlackmanWindow generators and
 * MelWeightMatrix (17).
 *
 * Complex tensors are real tensors whose last axis has size 2 (real,
 * imaginary); a real input has last axis 1. Transforms are direct O(n^2)
 * sums in double with twiddles indexed by (k * t) mod n, which keeps them
 * accurate for any length (no power-of-two restriction).
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

#define SIG_PI 3.14159265358979323846

/* out[k] = sum_t in[t] * exp(sign * 2 pi i k t / n) for k < nout, with the
 * input zero-padded or truncated to n samples (nin read). Interleaved
 * complex doubles. */
static void sig_dft(const double *in, int64_t nin, int64_t n, int64_t nout, bool inverse,
                    const double *cosv, const double *sinv, double *out)
{
    double sign = inverse ? 1.0 : -1.0;
    int64_t m = nin < n ? nin : n;
    for (int64_t kk = 0; kk < nout; kk++) {
        double re = 0.0, im = 0.0;
        int64_t idx = 0; /* (kk * t) mod n, advanced incrementally */
        for (int64_t t = 0; t < m; t++) {
            double c = cosv[idx], s = sign * sinv[idx];
            double xr = in[2 * t], xi = in[2 * t + 1];
            re += xr * c - xi * s;
            im += xr * s + xi * c;
            idx += kk;
            if (idx >= n)
                idx %= n;
        }
        if (inverse) {
            re /= (double)n;
            im /= (double)n;
        }
        out[2 * kk] = re;
        out[2 * kk + 1] = im;
    }
}

/* Twiddle tables cos/sin(2 pi j / n), j < n. */
static cg_status sig_twiddles(cg_kernel_ctx *k, int64_t n, double **c, double **s)
{
    *c = mc_scratch_f64(k, n);
    *s = mc_scratch_f64(k, n);
    if (!*c || !*s)
        return CG_NOMEM;
    for (int64_t j = 0; j < n; j++) {
        double a = 2.0 * SIG_PI * (double)j / (double)n;
        (*c)[j] = cos(a);
        (*s)[j] = sin(a);
    }
    return CG_OK;
}

/* Reads a scalar (rank 0 or one element) integer input. */
static cg_status sig_scalar_int(cg_kernel_ctx *k, const cg_tensor *t, const char *what, int64_t *out)
{
    if (t->numel != 1 || t->rank > 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must be a scalar", what);
    if (!cg_dtype_is_int(t->dtype))
        return cg_kernel_fail(k, CG_INVALID, "%s must be an integer", what);
    *out = cg_tensor_get_i64(t, 0);
    return CG_OK;
}

cg_status cg_op_dft(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    int r = X->rank;
    if (r < 2 || (X->dims[r - 1] != 1 && X->dims[r - 1] != 2))
        return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 2 and last axis 1 or 2");
    if (!mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input must be a float tensor");
    int64_t axis;
    if (k->since >= 20) {
        axis = -2;
        const cg_tensor *at = cg_kernel_input(k, 2);
        if (at && (st = sig_scalar_int(k, at, "axis", &axis)))
            return st;
    } else {
        axis = cg_attr_int(k, "axis", 1);
    }
    int64_t ax;
    if (!cg_normalize_axis(axis, r, &ax) || ax == r - 1)
        return cg_kernel_fail(k, CG_INVALID, "axis %lld is out of range for rank %d", (long long)axis, r);
    bool inverse = cg_attr_int(k, "inverse", 0) != 0;
    bool onesided = cg_attr_int(k, "onesided", 0) != 0;
    bool complex_in = X->dims[r - 1] == 2;
    if (onesided && inverse)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "onesided inverse DFT is not supported");
    int64_t nin = X->dims[ax], n = nin;
    const cg_tensor *lt = cg_kernel_input(k, 1);
    if (lt && lt->numel > 0) {
        if ((st = sig_scalar_int(k, lt, "dft_length", &n)))
            return st;
        if (n < 1)
            return cg_kernel_fail(k, CG_INVALID, "dft_length %lld must be positive", (long long)n);
    }
    int64_t nout = onesided ? n / 2 + 1 : n;
    int64_t od[CG_MAX_RANK];
    memcpy(od, X->dims, sizeof(int64_t) * (size_t)r);
    od[ax] = nout;
    od[r - 1] = 2;
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, X->dtype, r, od, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < ax; i++)
        outer *= X->dims[i];
    for (int i = (int)ax + 1; i < r - 1; i++)
        inner *= X->dims[i];
    double *x = mc_to_f64(k, X), *y = mc_scratch_f64(k, Y->numel);
    double *line = mc_scratch_f64(k, 2 * (nin ? nin : 1)), *res = mc_scratch_f64(k, 2 * nout);
    double *cv, *sv;
    if (!x || !y || !line || !res || (st = sig_twiddles(k, n, &cv, &sv)))
        return CG_NOMEM;
    int64_t cin = complex_in ? 2 : 1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            for (int64_t t = 0; t < nin; t++) {
                const double *src = x + ((o * nin + t) * inner + q) * cin;
                line[2 * t] = src[0];
                line[2 * t + 1] = complex_in ? src[1] : 0.0;
            }
            sig_dft(line, nin, n, nout, inverse, cv, sv, res);
            for (int64_t kk = 0; kk < nout; kk++) {
                double *dst = y + ((o * nout + kk) * inner + q) * 2;
                dst[0] = res[2 * kk];
                dst[1] = res[2 * kk + 1];
            }
        }
    mc_from_f64(Y, y);
    return CG_OK;
}

cg_status cg_op_stft(cg_kernel_ctx *k)
{
    const cg_tensor *S, *step_t;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &S)) || (st = cg_kernel_require(k, 1, &step_t)))
        return st;
    const cg_tensor *win = cg_kernel_input(k, 2), *flen_t = cg_kernel_input(k, 3);
    if (S->rank != 3 || (S->dims[2] != 1 && S->dims[2] != 2) || !mc_is_float(S->dtype))
        return cg_kernel_fail(k, CG_INVALID, "signal must be a float tensor [batch, length, 1 or 2]");
    int64_t step = 0, flen = -1;
    if ((st = sig_scalar_int(k, step_t, "frame_step", &step)))
        return st;
    if (step < 1)
        return cg_kernel_fail(k, CG_INVALID, "frame_step %lld must be positive", (long long)step);
    if (win && win->numel > 0) {
        if (win->rank != 1 || !mc_is_float(win->dtype))
            return cg_kernel_fail(k, CG_INVALID, "window must be a 1-D float tensor");
        flen = win->dims[0];
    }
    if (flen_t && flen_t->numel > 0) {
        int64_t f = 0;
        if ((st = sig_scalar_int(k, flen_t, "frame_length", &f)))
            return st;
        if (flen >= 0 && f != flen)
            return cg_kernel_fail(k, CG_INVALID, "frame_length %lld differs from the window length %lld",
                                  (long long)f, (long long)flen);
        flen = f;
    }
    if (flen < 1)
        return cg_kernel_fail(k, CG_INVALID, "frame_length is missing or not positive");
    int64_t B = S->dims[0], L = S->dims[1];
    if (flen > L)
        return cg_kernel_fail(k, CG_INVALID, "frame_length %lld exceeds the signal length %lld",
                              (long long)flen, (long long)L);
    bool onesided = cg_attr_int(k, "onesided", 1) != 0;
    bool complex_in = S->dims[2] == 2;
    if (onesided && complex_in)
        return cg_kernel_fail(k, CG_INVALID, "onesided STFT needs a real signal");
    int64_t frames = (L - flen) / step + 1, bins = onesided ? flen / 2 + 1 : flen;
    int64_t od[4] = {B, frames, bins, 2};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, S->dtype, 4, od, &Y)))
        return st;
    if (Y->numel == 0)
        return CG_OK;
    double *x = mc_to_f64(k, S), *w = win && win->numel > 0 ? mc_to_f64(k, win) : NULL;
    double *y = mc_scratch_f64(k, Y->numel), *line = mc_scratch_f64(k, 2 * flen);
    double *cv, *sv;
    if (!x || (win && win->numel > 0 && !w) || !y || !line || (st = sig_twiddles(k, flen, &cv, &sv)))
        return CG_NOMEM;
    int64_t cin = complex_in ? 2 : 1;
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < flen; t++) {
                const double *src = x + (b * L + f * step + t) * cin;
                double wt = w ? w[t] : 1.0;
                line[2 * t] = src[0] * wt;
                line[2 * t + 1] = complex_in ? src[1] * wt : 0.0;
            }
            sig_dft(line, flen, flen, bins, false, cv, sv, y + (b * frames + f) * bins * 2);
        }
    mc_from_f64(Y, y);
    return CG_OK;
}

/* Window generators: y[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
 * with N = size (periodic) or size - 1 (symmetric). A symmetric window of
 * one sample has N = 0: ONNX defines these ops by a function body whose
 * angle is n * (2 pi / N) = 0 * inf, so its one value is NaN (onnx's
 * reference implementation and ONNX Runtime 1.22 give NaN too; numpy's
 * hanning(1) convention of 1 is not ONNX's). */
static cg_status sig_window(cg_kernel_ctx *k, double a0, double a1, double a2)
{
    const cg_tensor *S;
    cg_status st;
    int64_t size;
    if ((st = cg_kernel_require(k, 0, &S)) || (st = sig_scalar_int(k, S, "size", &size)))
        return st;
    if (size < 0)
        return cg_kernel_fail(k, CG_INVALID, "size %lld is negative", (long long)size);
    int64_t dt = cg_attr_int(k, "output_datatype", CG_DTYPE_FLOAT);
    if (!cg_dtype_valid(dt) || dt == CG_DTYPE_STRING || cg_dtype_size((cg_dtype)dt) == 0)
        return cg_kernel_fail(k, CG_INVALID, "output_datatype %lld is not a numeric type", (long long)dt);
    bool periodic = cg_attr_int(k, "periodic", 1) != 0;
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, (cg_dtype)dt, 1, &size, &Y)))
        return st;
    double N = periodic ? (double)size : (double)(size - 1);
    for (int64_t i = 0; i < size; i++) {
        double v;
        if (N <= 0)
            v = NAN; /* a one-sample symmetric window, as the function body gives */
        else
            v = a0 - a1 * cos(2.0 * SIG_PI * (double)i / N) + a2 * cos(4.0 * SIG_PI * (double)i / N);
        cg_tensor_set_f64(Y, i, v);
    }
    return CG_OK;
}

cg_status cg_op_hannwindow(cg_kernel_ctx *k) { return sig_window(k, 0.5, 0.5, 0.0); }
cg_status cg_op_hammingwindow(cg_kernel_ctx *k)
{
    return sig_window(k, 25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0);
}
cg_status cg_op_blackmanwindow(cg_kernel_ctx *k) { return sig_window(k, 0.42, 0.5, 0.08); }

cg_status cg_op_melweightmatrix(cg_kernel_ctx *k)
{
    const cg_tensor *t[5];
    cg_status st;
    for (size_t i = 0; i < 5; i++)
        if ((st = cg_kernel_require(k, i, &t[i])))
            return st;
    int64_t nmel = 0, dftlen = 0, rate = 0;
    if ((st = sig_scalar_int(k, t[0], "num_mel_bins", &nmel)) ||
        (st = sig_scalar_int(k, t[1], "dft_length", &dftlen)) ||
        (st = sig_scalar_int(k, t[2], "sample_rate", &rate)))
        return st;
    if (t[3]->numel != 1 || t[4]->numel != 1 || !mc_is_float(t[3]->dtype) || !mc_is_float(t[4]->dtype))
        return cg_kernel_fail(k, CG_INVALID, "lower/upper_edge_hertz must be float scalars");
    double lo = cg_tensor_get_f64(t[3], 0), hi = cg_tensor_get_f64(t[4], 0);
    if (nmel < 1 || nmel > (INT64_C(1) << 30) || dftlen < 1 || dftlen > (INT64_C(1) << 40) || rate < 1)
        return cg_kernel_fail(k, CG_INVALID, "num_mel_bins, dft_length and sample_rate must be positive");
    if (!(lo >= 0.0) || !(hi >= lo) || !isfinite(hi))
        return cg_kernel_fail(k, CG_INVALID, "edge frequencies [%g, %g] are invalid", lo, hi);
    int64_t dt = cg_attr_int(k, "output_datatype", CG_DTYPE_FLOAT);
    if (!cg_dtype_valid(dt) || dt == CG_DTYPE_STRING || cg_dtype_size((cg_dtype)dt) == 0)
        return cg_kernel_fail(k, CG_INVALID, "output_datatype %lld is not a numeric type", (long long)dt);
    int64_t nbins = dftlen / 2 + 1;
    int64_t od[2] = {nbins, nmel};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, (cg_dtype)dt, 2, od, &Y)))
        return st;
    int64_t *fb = cg_kernel_scratch(k, (size_t)(nmel + 2) * sizeof(int64_t));
    double *y = mc_scratch_f64(k, Y->numel);
    if (!fb || !y)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* The ONNX reference: mel points evenly spaced with step
     * (high - low) / (num_mel_bins + 2), mapped back to Hz and to bins as
     * floor((dft_length + 1) * hz / sample_rate). */
    double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
    double step = (hmel - lmel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lmel) / 2595.0) - 1.0);
        double bin = floor((double)(dftlen + 1) * hz / (double)rate);
        if (!(bin >= 0.0 && bin <= (double)nbins))
            return cg_kernel_fail(k, CG_INVALID, "mel point %lld (%g Hz) falls outside the %lld "
                                  "spectrogram bins", (long long)i, hz, (long long)nbins);
        fb[i] = (int64_t)bin;
    }
    for (int64_t i = 0; i < nmel; i++) {
        int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
        if (l < 0 || c >= nbins || h > nbins || c < l || h < c)
            return cg_kernel_fail(k, CG_INVALID, "mel bin %lld falls outside the %lld spectrogram bins",
                                  (long long)i, (long long)nbins);
        if (c == l)
            y[c * nmel + i] = 1.0;
        else
            for (int64_t j = l; j <= c; j++)
                y[j * nmel + i] = (double)(j - l) / (double)(c - l);
        for (int64_t j = c; j < h; j++)
            y[j * nmel + i] = (double)(h - j) / (double)(h - c);
    }
    for (int64_t i = 0; i < Y->numel; i++)
        cg_tensor_set_f64(Y, i, y[i]);
    return CG_OK;
}
