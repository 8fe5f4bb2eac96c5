/*
 * The one pseudo-random generator: splitmix64, a 64-bit counter passed
 * through a mixing function. Small, fast and the same on every platform,
 * which is what convgate needs from it (reproducible random inputs, the
 * random operators' streams, Dropout's training masks, the latency
 * simulation), not cryptographic strength. cg_rng (convgate/tensor_io.h)
 * is its public face.
 */
#ifndef CG_CORE_RNG_H
#define CG_CORE_RNG_H

#include <stdint.h>

/* The next value of the stream whose state is *state (advanced). */
static inline uint64_t cg_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The top 53 bits of x as a double, uniform in [0, 1). */
static inline double cg_unit_interval(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

#endif
