/*
 * Golden corpus: reference inputs and outputs of one model, frozen on disk so
 * a target (or a device run) can be checked against them later.
 *
 * Layout of a golden directory GOLDEN:
 *   GOLDEN/manifest.json              format_version, convgate_version, created,
 *                                     model {file, sha256, bytes}, opset_import,
 *                                     sets [{name, inputs [...], outputs [...]}],
 *                                     each tensor {name, file, dtype, shape, sha256},
 *                                     each output also (format 2) its noise floors
 *                                     on that set, noise {scale, fp32_floor,
 *                                     fp16_floor, elements} (docs/noise-floor.md):
 *                                     what verify judges a target's error by
 *   GOLDEN/<set>/inputs/<stem>.npy
 *   GOLDEN/<set>/outputs/<stem>.npy
 * Set names and file stems follow convgate/samples.h (only [A-Za-z0-9._-],
 * never a leading dot, unique), so nothing is written outside GOLDEN. The
 * manifest is written last, so an interrupted dump has none and is refused.
 *
 * Trust: a golden set is data from disk. cg_golden_open checks the format
 * version, every path (relative, safe characters only), every dtype/shape and
 * every file's sha256 before anything runs; cg_golden_load hashes the bytes
 * it actually parses again, so a file swapped after the check is still caught.
 * A missing file, an altered file or a golden set made for another model is
 * an error naming the file (or both model hashes), never a silent pass.
 */
#ifndef CONVGATE_GOLDEN_H
#define CONVGATE_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/dtype.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: outputs carry their noise floors; 1 (still read): they do not */
#define CG_GOLDEN_FORMAT_VERSION 2
#define CG_SHA256_HEX 65 /* 64 lowercase hex digits and a NUL */

/* --- hashing (OpenSSL libcrypto) --------------------------------------------- */

/* sha256 of a buffer, as lowercase hex. */
CG_API CG_NODISCARD cg_status cg_sha256_hex(const void *data, size_t size, char hex[CG_SHA256_HEX],
                                            cg_error *err);
/* sha256 of a file read in chunks (never loaded whole); *bytes gets its size
 * (bytes may be NULL). */
CG_API CG_NODISCARD cg_status cg_sha256_file(const char *path, char hex[CG_SHA256_HEX],
                                             uint64_t *bytes, cg_error *err);

/* --- the manifest ----------------------------------------------------------------- */

typedef struct cg_golden_tensor {
    char *name;  /* the model's input or output name */
    char *file;  /* relative to the golden directory: "<set>/outputs/<stem>.npy" */
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
    char sha256[CG_SHA256_HEX];
    cg_output_floor floor;  /* outputs of format 2: the floors recorded (known) */
} cg_golden_tensor;

typedef struct cg_golden_set {
    char *name;
    cg_golden_tensor *inputs;
    size_t input_count;
    cg_golden_tensor *outputs;
    size_t output_count;
} cg_golden_set;

typedef struct cg_golden {
    char *dir;
    int64_t format_version;
    char *convgate_version;
    char *created;    /* UTC, ISO 8601 */
    char *model_file; /* the model's file name when the set was made */
    char model_sha256[CG_SHA256_HEX];
    uint64_t model_bytes;
    cg_golden_set *sets;
    size_t set_count;
} cg_golden;

/* Reads GOLDEN/manifest.json, validates it and checks every listed file's
 * sha256. Errors: CG_IO (no manifest, missing file), CG_PARSE / CG_INVALID
 * (malformed manifest), CG_UNSUPPORTED (other format_version), CG_SECURITY
 * (a file whose hash differs, an unsafe path). */
CG_API CG_NODISCARD cg_status cg_golden_open(const char *dir, cg_golden **out, cg_error *err);
CG_API void cg_golden_free(cg_golden *g);
/* CG_SECURITY naming both hashes when model_path is not the model the golden
 * set was made for. */
CG_API CG_NODISCARD cg_status cg_golden_check_model(const cg_golden *g, const char *model_path,
                                                    cg_error *err);
/* Loads one tensor of the set, re-hashing the bytes it parses and checking
 * dtype and shape against the manifest. Release with cg_value_free. */
CG_API CG_NODISCARD cg_status cg_golden_load(const cg_golden *g, const cg_golden_tensor *t,
                                             size_t max_bytes, cg_value **out, cg_error *err);

/* --- writing ----------------------------------------------------------------------- */

typedef struct cg_golden_writer cg_golden_writer;

/* Prepares GOLDEN (created if missing; a non-empty one is refused with
 * CG_USAGE unless force) and hashes the model file. */
CG_API CG_NODISCARD cg_status cg_golden_writer_init(const char *dir, const char *model_path,
                                                    const cg_model *model, bool force,
                                                    cg_golden_writer **out, cg_error *err);
/* Writes one set's input and output tensors (tensor values only) and, with
 * floors non-NULL, each output's noise floors (one per output). The set
 * name is made safe and unique; the name used is returned in *used_name
 * (owned by the writer; may be NULL). */
CG_API CG_NODISCARD cg_status cg_golden_writer_add(cg_golden_writer *w, const char *set_name,
                                                   const cg_named_value *inputs, size_t input_count,
                                                   const cg_named_value *outputs,
                                                   size_t output_count,
                                                   const cg_output_floor *floors,
                                                   const char **used_name, cg_error *err);
/* dump-ref's step: runs sample s and writes its inputs and outputs as a
 * set named after it. With `noise` (cg_noise_init on the model whose
 * outputs are frozen, fp16 on) the sample runs on the float64, fp32 and
 * fp16-storage references: the outputs written are the fp32 reference's,
 * with each output's floors on this set (format 2); without it (NULL) on
 * rt, the reference runtime of that model, and no floors are recorded.
 * *used_name as for cg_golden_writer_add (may be NULL); *output_count (may
 * be NULL) gets the outputs written; *ran (may be NULL) whether the run
 * itself succeeded (a failure after it is the writer's). A run failure
 * keeps the runtime's status, prefixed with the set's name. */
struct cg_runtime;
struct cg_noise;
CG_API CG_NODISCARD cg_status cg_golden_writer_run(cg_golden_writer *w, struct cg_runtime *rt,
                                                   struct cg_noise *noise, const cg_sample *s,
                                                   const char **used_name,
                                                   size_t *output_count, bool *ran,
                                                   cg_error *err);
/* The manifest's `created` (UTC, ISO 8601) instead of the time of
 * cg_golden_writer_finish, so that a set written twice from the same
 * inputs is byte-identical (convgate convert's artifacts). */
CG_API void cg_golden_writer_set_created(cg_golden_writer *w, const char *created);
/* Writes manifest.json (via a temporary file and a rename). */
CG_API CG_NODISCARD cg_status cg_golden_writer_finish(cg_golden_writer *w, cg_error *err);
CG_API void cg_golden_writer_free(cg_golden_writer *w);

/* --- freezing a model's reference outputs (dump-ref, convert) ------------------------- */

/* What cg_golden_dump does besides running the sets. */
typedef struct cg_golden_dump_options {
    const char *model_path;     /* the model file hashed into the manifest */
    const cg_model *run_model;  /* the model run for the outputs; NULL: the model frozen */
    bool force;                 /* write into a non-empty folder */
    bool floors;                /* each output's noise floors on each set (format 2) */
    bool floors_optional;       /* with floors: none (and no error) for a model the float64
                                 * reference cannot run (CG_UNSUPPORTED) */
    size_t max_alloc_bytes;     /* per runtime; 0: the default */
    const char *created;        /* the manifest's `created`; NULL: now */
    /* after each set is written (may be NULL): its name, inputs and outputs */
    void (*on_set)(void *user, const char *name, size_t inputs, size_t outputs);
    void *user;
} cg_golden_dump_options;

typedef struct cg_golden_dump_set {
    char *name;
    size_t inputs, outputs;
} cg_golden_dump_set;

typedef struct cg_golden_dump_report {
    cg_golden_dump_set *sets; /* the sets written, in order */
    size_t set_count;
    bool model_failed; /* the model could not be run (set-up or a set), not the writer or
                        * an input: the check's failure (exit 1), not a usage error */
} cg_golden_dump_report;

/* Runs every sample of src on the reference of opt->run_model (the float64,
 * fp32 and fp16-storage references with opt->floors) and writes its inputs
 * and outputs as a golden set in dir, for `model` at opt->model_path, then
 * the manifest. Fills *out also on failure (the sets written so far);
 * release it with cg_golden_dump_report_free. */
CG_API CG_NODISCARD cg_status cg_golden_dump(const cg_model *model, cg_sample_source *src,
                                             const char *dir,
                                             const cg_golden_dump_options *opt,
                                             cg_golden_dump_report *out, cg_error *err);
CG_API void cg_golden_dump_report_free(cg_golden_dump_report *r);

/* --- golden sets as samples ----------------------------------------------------------- */

/* Set `set` of g as a sample of model: its inputs (checked against the
 * declared types) and its expected outputs in graph-output order. The set
 * must cover every input to feed and every output of the model and hold
 * nothing else (CG_INVALID naming the tensor): one rule for `verify` and
 * `gate --golden`, so a set missing an output is never a pass. The floors
 * recorded with the outputs come as out->expected_floors (NULL when the
 * set has none: format 1). */
CG_API CG_NODISCARD cg_status cg_golden_sample(const cg_golden *g, size_t set,
                                               const cg_model *model, size_t max_bytes,
                                               cg_sample *out, cg_error *err);
/* Every set of the golden folder dir, checked against the model file's
 * hash and every file's hash first. A stale or tampered golden set is an
 * error, never a pass. */
CG_API CG_NODISCARD cg_status cg_samples_load_golden(const cg_model *model, const char *model_path,
                                                     const char *dir, size_t max_bytes,
                                                     cg_sample_set *out, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
