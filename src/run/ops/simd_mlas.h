/*
 * Constants of ONNX Runtime 1.22's MLAS kernels that the vector tables copy
 * (simd.h): the rational approximations of the logistic function and tanh
 * (mlas/lib/logistic.cpp, tanh.cpp; computed on x86-64 by
 * x86_64/LogisticKernelFma3.S and TanhKernelFma3.S), erf (erf.cpp,
 * ErfKernelFma3.S) and the exp of the
 * softmax sum (compute.cpp's MlasExpConstants, as
 * x86_64/TransKernelAvx512F.S's MlasComputeSumExpF32KernelAvx512F uses
 * them). Every level evaluates them with the same fused multiply-adds in
 * the same order, so portable, AVX2 and AVX-512 give MLAS's bits.
 */
#ifndef CG_RUN_OPS_SIMD_MLAS_H
#define CG_RUN_OPS_SIMD_MLAS_H

/* logistic: x clamped to [-18, 18]; p(x^2) x / q(x^2) + 0.5, then max(0, .) */
#define MLAS_LOGISTIC_LO -18.0f
#define MLAS_LOGISTIC_HI 18.0f
#define MLAS_LOGISTIC_A9 4.37031012579801e-11f
#define MLAS_LOGISTIC_A7 1.15627324459942e-07f
#define MLAS_LOGISTIC_A5 6.08574864600143e-05f
#define MLAS_LOGISTIC_A3 8.51377133304701e-03f
#define MLAS_LOGISTIC_A1 2.48287947061529e-01f
#define MLAS_LOGISTIC_B10 6.10247389755681e-13f
#define MLAS_LOGISTIC_B8 5.76102136993427e-09f
#define MLAS_LOGISTIC_B6 6.29106785017040e-06f
#define MLAS_LOGISTIC_B4 1.70198817374094e-03f
#define MLAS_LOGISTIC_B2 1.16817656904453e-01f
#define MLAS_LOGISTIC_B0 9.93151921023180e-01f

/* tanh: x clamped to [-9, 9]; p(x^2) x / q(x^2) */
#define MLAS_TANH_LO -9.0f
#define MLAS_TANH_HI 9.0f
#define MLAS_TANH_A13 -2.76076847742355e-16f
#define MLAS_TANH_A11 2.00018790482477e-13f
#define MLAS_TANH_A9 -8.60467152213735e-11f
#define MLAS_TANH_A7 5.12229709037114e-08f
#define MLAS_TANH_A5 1.48572235717979e-05f
#define MLAS_TANH_A3 6.37261928875436e-04f
#define MLAS_TANH_A1 4.89352455891786e-03f
#define MLAS_TANH_B6 1.19825839466702e-06f
#define MLAS_TANH_B4 1.18534705686654e-04f
#define MLAS_TANH_B2 2.26843463243900e-03f
#define MLAS_TANH_B0 4.89352518554385e-03f

/* exp of the softmax sum: x clamped below at -103.97; m = round(x / ln 2)
 * by the rounding bias, r = x - m ln2 (two parts), a degree-6 polynomial
 * in r (its last two coefficients both 1), scaled by 2^m */
#define MLAS_EXP_LO -103.9720840454f
#define MLAS_EXP_BIAS 12582912.0f
#define MLAS_EXP_LOG2E 1.44269504088896341f
#define MLAS_EXP_LN2_HI -6.93145752e-1f
#define MLAS_EXP_LN2_LO -1.42860677e-6f
#define MLAS_EXP_P0 0x1.694000p-10f
#define MLAS_EXP_P1 0x1.125edcp-7f
#define MLAS_EXP_P2 0x1.555b5ap-5f
#define MLAS_EXP_P3 0x1.555450p-3f
#define MLAS_EXP_P4 0x1.fffff6p-2f
#define MLAS_EXP_P56 0x1.000000p+0f

/* erf (erf.cpp; x86_64/ErfKernelFma3.S): |x| clamped to 3.925 (a NaN
 * becomes 3.925); |x| <= 0.921875: x + x p(x^2); above: 1 - e^-r(|x|),
 * r(a) = a + a p(a), e^ by its own polynomial and 2^m through the exponent
 * bits; the sign ORed back */
#define MLAS_ERF_UPPER 3.925f
#define MLAS_ERF_SPLIT 0.921875f
#define MLAS_ERF_S0 -5.99104969e-4f
#define MLAS_ERF_S1 4.99339588e-3f
#define MLAS_ERF_S2 -2.67667342e-2f
#define MLAS_ERF_S3 1.12818025e-1f
#define MLAS_ERF_S4 -3.76124859e-1f
#define MLAS_ERF_S5M1 1.28379151e-1f
#define MLAS_ERF_B0 1.72948930e-5f
#define MLAS_ERF_B1 -3.83208680e-4f
#define MLAS_ERF_B2 3.88393435e-3f
#define MLAS_ERF_B3 -2.42545605e-2f
#define MLAS_ERF_B4 1.06777847e-1f
#define MLAS_ERF_B5 6.34846687e-1f
#define MLAS_ERF_B6M1 1.28717512e-1f
#define MLAS_ERF_EXP_LO -88.3762626647949f
#define MLAS_ERF_EXP_LOG2E 1.44269504088896341f
#define MLAS_ERF_EXP_LN2_HI -6.93145752e-1f
#define MLAS_ERF_EXP_LN2_LO -1.42860677e-6f
#define MLAS_ERF_EXP_P0 1.38319808e-3f
#define MLAS_ERF_EXP_P1 8.37550033e-3f
#define MLAS_ERF_EXP_P2 4.16689515e-2f
#define MLAS_ERF_EXP_P3 1.66664466e-1f
#define MLAS_ERF_EXP_P4 4.99999851e-1f
#define MLAS_ERF_EXP_P5 1.00000000e+0f
#define MLAS_ERF_EXP_P6 1.00000000e+0f
#define MLAS_ERF_EXP_C 1.25829120e+7f

/* MlasComputeSumExpF32KernelAvx512F's accumulator: 16 lanes */
#define MLAS_SUMEXP_LANES 16

#endif
