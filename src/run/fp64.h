/*
 * The float64 reference mode (cg_runtime_options.float64): promotion of the
 * model's float values to DOUBLE where they enter the runtime. See fp64.c
 * for the mechanism and docs/float64.md for what it covers.
 */
#ifndef CG_RUN_FP64_H
#define CG_RUN_FP64_H

#include <stdbool.h>

#include "convgate/model.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

/* float32, float16, bfloat16: the types the mode computes in double. */
bool cg_fp64_promotes(cg_dtype dt);
/* DOUBLE for a promoted type, dt otherwise. */
cg_dtype cg_fp64_dtype(cg_dtype dt);
/* True when v holds (or, an empty sequence, is typed as) a promoted type:
 * a float32/16 value leaking into a float64 run. */
bool cg_fp64_leaks(const cg_value *v);

/* t's numel values as doubles into d (room for them): the one conversion
 * promotion makes, at init or into a step's scratch (frame.c). */
void cg_fp64_convert(const cg_tensor *t, double *d);
/* The same from a payload of n elements of dtype dt (float, float16 or
 * bfloat16, little-endian) at any alignment: an initializer's bytes in the
 * model, read where they lie. */
void cg_fp64_convert_bytes(cg_dtype dt, const void *raw, int64_t n, double *d);
/* Converts, in place, every promoted tensor v holds (sequence items and
 * optional payloads included) to DOUBLE. With data_borrowed the old payload
 * of a top-level tensor belongs to someone else (a zero-copy initializer)
 * and is not freed. On failure v is unchanged. */
cg_status cg_fp64_promote_value(cg_value *v, bool data_borrowed, cg_error *err);
/* A promoted deep copy of src. */
cg_status cg_fp64_promoted_copy(const cg_value *src, cg_value **out, cg_error *err);

/* The value a kernel reads for integer attribute `attr` of `node`: an
 * element-type attribute that names a promoted type (Cast.to, EyeLike.dtype,
 * RandomNormal.dtype, ...: the table in fp64.c) reads as DOUBLE. */
int64_t cg_fp64_attr_int(const cg_node *node, const char *attr, int64_t value);

#endif
