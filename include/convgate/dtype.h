/*
 * Element types. The numeric values are ONNX's TensorProto.DataType, so a
 * value read from a file maps directly once cg_dtype_valid() accepts it.
 */
#ifndef CONVGATE_DTYPE_H
#define CONVGATE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cg_dtype {
#define X(name, value, str, size, npy) CG_DTYPE_##name = value,
#include "convgate/dtype.def"
#undef X
    CG_DTYPE_COUNT
} cg_dtype;

/* True for a value that names a known element type (UNDEFINED excluded). */
CG_API bool cg_dtype_valid(int64_t value);
CG_API const char *cg_dtype_name(cg_dtype dt);
/* Bytes per element; 0 for STRING, 4-bit types and UNDEFINED. */
CG_API size_t cg_dtype_size(cg_dtype dt);
/* NumPy array-interface descr ("<f4"), or NULL where NumPy has none. */
CG_API const char *cg_dtype_npy_descr(cg_dtype dt);
/* Parses a name as printed by cg_dtype_name; CG_DTYPE_UNDEFINED if unknown. */
CG_API cg_dtype cg_dtype_from_name(const char *name);
CG_API bool cg_dtype_is_float(cg_dtype dt); /* float16/32/64, bfloat16 */
CG_API bool cg_dtype_is_int(cg_dtype dt);   /* signed or unsigned integers */
CG_API bool cg_dtype_is_signed(cg_dtype dt);

/* IEEE half and bfloat16 conversions (round to nearest even). */
CG_API float cg_fp16_to_f32(uint16_t h);
CG_API uint16_t cg_f32_to_fp16(float f);
CG_API float cg_bf16_to_f32(uint16_t b);
CG_API uint16_t cg_f32_to_bf16(float f);
/* From double in one rounding (no double rounding through float), and the
 * nearest fp16 / bf16 value as a double (overflow to +-inf, NaN kept). */
CG_API uint16_t cg_f64_to_fp16(double x);
CG_API uint16_t cg_f64_to_bf16(double x);
CG_API double cg_fp16_round(double x);
/* x rounded to fp16's 11-bit significand with an unbounded exponent (no
 * overflow to inf, no subnormals): fp16 arithmetic's rounding without its
 * range, for the noise floor of a device that sums in fp16 (docs/gate3.md). */
CG_API double cg_fp16_round_significand(double x);
CG_API double cg_bf16_round(double x);

#ifdef __cplusplus
}
#endif
#endif
