/*
 * Which vector instruction set the reference kernels use (cg_simd, in
 * convgate/runtime.h): detected once per runtime from the CPU, or forced by
 * cg_runtime_options.simd or the CG_SIMD environment variable (so a test
 * can run the portable C path on any machine). The only CPU-feature code.
 */
#ifndef CG_RUN_CPU_H
#define CG_RUN_CPU_H

#include "convgate/runtime.h"

/* The best level this CPU and OS support: AVX512 needs AVX-512 F/BW/DQ/VL,
 * AVX2 needs AVX2, FMA and F16C; else PORTABLE. */
cg_simd cg_simd_detect(void);

/* Whether the CPU has AVX-512 VNNI (the 8-bit GEMM of qgemm.h; used only
 * at the AVX512 level). */
bool cg_simd_has_vnni(void);

/* The level to run with: `requested` (AUTO: $CG_SIMD if it names a level,
 * else the detected one), capped at what the CPU supports. */
cg_simd cg_simd_resolve(cg_simd requested);

/* cg_simd_name / cg_simd_parse are public (convgate/runtime.h). */

#endif
