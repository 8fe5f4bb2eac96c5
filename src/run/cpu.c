/* CPU feature detection for the kernels' vector paths (see cpu.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "run/cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define CG_CPU_X86 1
#endif

cg_simd cg_simd_detect(void)
{
#ifdef CG_CPU_X86
    /* __builtin_cpu_supports also checks that the OS saves the vector
     * registers (XCR0); clang 14 has no "f16c" name for it, so F16C comes
     * from CPUID leaf 1 (every AVX2 CPU has it, but say so explicitly). */
    __builtin_cpu_init();
    unsigned a, b, c, d;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    if (!f16c || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return CG_SIMD_PORTABLE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return CG_SIMD_AVX512;
    return CG_SIMD_AVX2;
#else
    return CG_SIMD_PORTABLE;
#endif
}

bool cg_simd_has_vnni(void)
{
#ifdef CG_CPU_X86
    /* asked per convolution: CPUID (a trap under a hypervisor) runs once */
    static atomic_int known = -1;
    int v = atomic_load(&known);
    if (v < 0) {
        __builtin_cpu_init();
        v = cg_simd_detect() == CG_SIMD_AVX512 && __builtin_cpu_supports("avx512vnni");
        atomic_store(&known, v);
    }
    return v != 0;
#else
    return false;
#endif
}

const char *cg_simd_name(cg_simd s)
{
    switch (s) {
    case CG_SIMD_PORTABLE: return "portable";
    case CG_SIMD_AVX2: return "avx2";
    case CG_SIMD_AVX512: return "avx512";
    default: return "auto";
    }
}

bool cg_simd_parse(const char *name, cg_simd *out)
{
    static const cg_simd all[] = {CG_SIMD_AUTO, CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(name, cg_simd_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    return false;
}

cg_simd cg_simd_resolve(cg_simd requested)
{
    cg_simd best = cg_simd_detect();
    cg_simd want = requested;
    if (want == CG_SIMD_AUTO && !cg_simd_parse(getenv("CG_SIMD"), &want))
        want = best;
    if (want == CG_SIMD_AUTO || want > best)
        want = best;
    return want;
}
