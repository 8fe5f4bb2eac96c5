/*
 * Tensor files: NumPy .npy / .npz, ONNX test-data .pb (TensorProto,
 * SequenceProto, OptionalProto), the random generator, value summaries and the
 * tolerance comparison that conformance uses.
 *
 * Everything read here is untrusted: every header field, shape, length and
 * offset is checked against the bytes actually present and against overflow
 * before anything is allocated, and no tensor larger than `max_bytes`
 * (0 = CG_IO_DEFAULT_MAX_BYTES) is ever allocated.
 *
 * Ownership: tensors and values filled here follow convgate/tensor.h (release
 * with cg_tensor_release / cg_value_free).
 */
#ifndef CONVGATE_TENSOR_IO_H
#define CONVGATE_TENSOR_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/dtype.h"
#include "convgate/model.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_IO_DEFAULT_MAX_BYTES ((size_t)4 << 30)

/* --- .npy ------------------------------------------------------------------ */

/* Parses a .npy (format 1.0, 2.0, 3.0) held in memory. `what` names the
 * source in error messages. Supports b1, i1..i8, u1..u8, f2, f4, f8, c8,
 * c16, U (unicode, read as UTF-8 strings) and S (bytes) in either byte
 * order, C or Fortran order. */
CG_API CG_NODISCARD cg_status cg_npy_parse(const void *data, size_t size, const char *what,
                                           size_t max_bytes, cg_tensor *out, cg_error *err);
CG_API CG_NODISCARD cg_status cg_npy_load(const char *path, size_t max_bytes, cg_tensor *out,
                                          cg_error *err);
/* Serializes to a malloc'd buffer: format 1.0 (2.0 if the header needs it),
 * little-endian, C order. STRING tensors become fixed-width '<U' arrays.
 * bfloat16 and float8/4-bit types have no NumPy dtype: CG_UNSUPPORTED. */
CG_API CG_NODISCARD cg_status cg_npy_serialize(const cg_tensor *t, uint8_t **out, size_t *out_size,
                                               cg_error *err);
CG_API CG_NODISCARD cg_status cg_npy_save(const char *path, const cg_tensor *t, cg_error *err);

/* --- .npz (a ZIP of .npy members) -------------------------------------------- */

typedef struct cg_npz cg_npz;

/* Reads the archive's central directory. Members may be stored or deflated;
 * ZIP64, encryption and multi-disk archives are rejected. */
CG_API CG_NODISCARD cg_status cg_npz_open(const char *path, size_t max_bytes, cg_npz **out,
                                          cg_error *err);
CG_API void cg_npz_free(cg_npz *npz);
CG_API size_t cg_npz_count(const cg_npz *npz);
/* Key of member i: its name without the ".npy" suffix (as numpy.load shows it). */
CG_API const char *cg_npz_key(const cg_npz *npz, size_t i);
/* Loads the member with this key (CG_INVALID naming the keys if absent).
 * Deflated data is inflated into a buffer of exactly the declared size and
 * must end exactly there, and its CRC-32 must match. */
CG_API CG_NODISCARD cg_status cg_npz_load(cg_npz *npz, const char *key, cg_tensor *out,
                                          cg_error *err);
/* Writes an archive of `count` members named keys[i] + ".npy". */
CG_API CG_NODISCARD cg_status cg_npz_save(const char *path, size_t count, const char *const *keys,
                                          const cg_tensor *const *tensors, bool compress,
                                          cg_error *err);

/* --- ONNX test-data .pb ------------------------------------------------------- */

/* Decodes a serialized TensorProto / SequenceProto / OptionalProto, chosen by
 * `type` (NULL or a tensor type: TensorProto). The decoder is independent of
 * src/load on purpose: conformance uses it to read the expected outputs,
 * which must not be decoded by the code under test. */
CG_API CG_NODISCARD cg_status cg_io_pb_parse(const void *data, size_t size, const cg_type *type,
                                             const char *what, size_t max_bytes, cg_value **out,
                                             cg_error *err);
CG_API CG_NODISCARD cg_status cg_io_pb_load(const char *path, const cg_type *type, size_t max_bytes,
                                            cg_value **out, cg_error *err);

/* --- any file ------------------------------------------------------------------ */

/* Loads one value from `spec`: FILE.pb, FILE.npy or FILE.npz:KEY (an .npz
 * with a single member needs no key). `type` guides .pb decoding. */
CG_API CG_NODISCARD cg_status cg_io_load_value(const char *spec, const cg_type *type,
                                               size_t max_bytes, cg_value **out, cg_error *err);

/* --- random inputs --------------------------------------------------------------- */

/* splitmix64 state; the same seed gives the same tensors on every platform.
 * The random-input policy built on it is convgate/samples.h. */
typedef struct cg_rng {
    uint64_t state;
} cg_rng;

CG_API void cg_rng_seed(cg_rng *rng, uint64_t seed);
CG_API uint64_t cg_rng_next(cg_rng *rng);

/* --- summaries and comparison -------------------------------------------------------- */

typedef struct cg_tensor_summary {
    double min, max, mean; /* over finite elements; NaN when there are none */
    int64_t nan_count, inf_count;
    int64_t finite_count;
} cg_tensor_summary;

/* Numeric tensors only (strings: all counts zero, statistics NaN). */
CG_API void cg_io_tensor_summary(const cg_tensor *t, cg_tensor_summary *out);

/* Compares got against want: dtype and shape exact; numbers with
 * |got - want| <= atol + rtol * |want| (NaN matches only NaN, infinities
 * only the same infinity); integers and bool exact; strings exact;
 * sequences and optionals element-wise. Returns true on a match; otherwise
 * writes a one-line reason (first mismatch, worst error) to why. */
CG_API bool cg_io_values_match(const cg_value *got, const cg_value *want, double rtol, double atol,
                               char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
