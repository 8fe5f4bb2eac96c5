/*
 * Samples: how every command that feeds a model gets its inputs, and where
 * its outputs go as files. One module, so `run`, `compare`, `dump-ref`,
 * `gate`, `bisect`, `profile`, `assign` and `verify` read the same folders,
 * make the same random inputs and name files the same way.
 *
 * File names. A tensor's file stem is its name with every character outside
 * [A-Za-z0-9._-] written '_' ("input:0" and "a/b" become "input_0" and
 * "a_b"), a leading '.' written '_', an empty name "tensor", cut at
 * CG_SAMPLES_MAX_STEM characters. Names are stemmed as a list (a model's
 * inputs, or its outputs, in graph order): a stem equal, ignoring case, to
 * an earlier one gets "_2", "_3", ... until it is not, so two names never
 * share a file and the writer and the reader, stemming the same list, agree.
 *
 * Input folders (cg_sample_source_open_dir), the first layout that fits:
 *   sets      DIR/SET/ folders or DIR/SET.npz files, one sample each (SET
 *             sorted by name). In a folder, an input's file is STEM.npy,
 *             STEM.pb or input_K.pb (K: its position among the inputs to
 *             feed, as in ONNX test data); every .npy/.pb there must be an
 *             input's or an output's (output_K.pb too), anything else is an
 *             error naming it. An .npz holds one member per input, keyed by
 *             the input's name; other members must be outputs.
 *   numbered  DIR/STEM_N.npy or .pb: one sample per N (N from the first
 *             input's files), e.g. image_0.npy, image_1.npy
 *   flat      DIR/STEM.npy or .pb: one sample
 * "Inputs to feed" are the graph inputs without an initializer. Every fed
 * tensor is checked against the declared dtype and fixed dims.
 *
 * Outputs made elsewhere (--outputs-from OUT) are read in the layout of the
 * inputs: OUT/SET/STEM.npy|.pb|output_K.pb or OUT/SET.npz for sets (random
 * samples are sets named random-0, random-1, ...), OUT/STEM_N.npy for
 * numbered, OUT/STEM.npy for flat, stems over the model's outputs. `run -o`
 * writes OUT/STEM.npy (STEM.npz, keys 0..n-1, for a sequence).
 *
 * Random inputs: one policy (CG_RANDOM_POLICY_TEXT). Values come from
 * splitmix64 seeded per (seed, sample, input), so an input's values do not
 * depend on which other inputs were fed, and sample 0 of seed S is what
 * `run --random --seed S`, `profile`, `assign` and gate 2 feed too. A
 * symbolic dim takes its --dim value, else the size a fed tensor gives it,
 * else 1. An input's dims, named or not, can be given whole with --shape
 * NAME=DxD...: each becomes the binding "NAME[axis]" (cg_samples_shape_key),
 * which wins over 1 and over the dim's symbol (Silero VAD's input [?, ?]
 * has no names for --dim to bind). --range LO,HI sets the interval for every numeric input (bools
 * and strings keep their defaults), --range NAME=LO,HI for one (floats
 * uniform in [LO, HI), integers uniform over the integers in [LO, HI]).
 */
#ifndef CONVGATE_SAMPLES_H
#define CONVGATE_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/status.h"
#include "convgate/tensor.h"
#include "convgate/tensor_io.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_SAMPLES_MAX_STEM 120
/* Room for a stem with its "_N" suffix and a NUL. */
#define CG_SAMPLES_STEM_CAP (CG_SAMPLES_MAX_STEM + 24)

/* --- file names ------------------------------------------------------------ */

/* The stem of name, unique against used[0..used_count) (see above). */
CG_API void cg_samples_stem(const char *name, const char *const *used, size_t used_count, char *out,
                            size_t cap);
/* Stems of a list of names, in order (malloc'd; free with
 * cg_samples_stems_free). */
CG_API CG_NODISCARD cg_status cg_samples_stems(const char *const *names, size_t count,
                                               char ***stems, cg_error *err);
CG_API void cg_samples_stems_free(char **stems, size_t count);

/* --- the random-input policy ------------------------------------------------ */

#define CG_RANDOM_POLICY_TEXT                                                                   \
    "floats uniform in [-1, 1), integers 0 or 1 (valid ids, masks and indices), "                \
    "bool false or true, strings \"s<number>\""

/* Values of one input (input NULL: of every input without its own range). */
typedef struct cg_input_range {
    const char *input;
    double lo, hi;
} cg_input_range;

typedef struct cg_random_inputs {
    uint64_t seed;
    const cg_input_range *ranges; /* borrowed */
    size_t range_count;
} cg_random_inputs;

/* The range in force for an input: its own, else the global one, else NULL
 * (the defaults). p may be NULL. */
CG_API const cg_input_range *cg_random_range(const cg_random_inputs *p, const char *input);
/* The generator of one input of one sample. p NULL: seed 0. */
CG_API void cg_random_seed(const cg_random_inputs *p, size_t sample, size_t input, cg_rng *rng);
/* Fills t from range (NULL: the defaults; a range for every input, input
 * NULL, leaves bool and string tensors to theirs). CG_USAGE when the range holds
 * no value of t's type (integers: no integer in it; out of the type's
 * limits); CG_UNSUPPORTED for types with no random fill (complex, float8,
 * 4-bit) or a range on strings. */
CG_API CG_NODISCARD cg_status cg_random_fill(cg_tensor *t, const cg_input_range *range, cg_rng *rng,
                                             cg_error *err);

/* --- options ------------------------------------------------------------------ */

/* Graph inputs to feed (no initializer), in graph order, at most cap into
 * out (out may be NULL). Returns how many there are. */
CG_API size_t cg_samples_fed_inputs(const cg_graph *g, const cg_value_info **out, size_t cap);
/* The binding key of axis `axis` of input `input` ("input[1]"), for --shape:
 * written into out (cap bytes); false when it does not fit. */
CG_API bool cg_samples_shape_key(const char *input, size_t axis, char *out, size_t cap);
/* The size bound for axis `axis` of input `input`, whose declared dim is
 * `dim` (NULL: unknown): its --shape key, else its symbol's --dim. false
 * when neither is bound (the caller's default then applies). */
CG_API bool cg_samples_dim_bound(const cg_dim_binding *dims, size_t dim_count, const char *input,
                                 size_t axis, const cg_dim *dim, int64_t *out);
/* The inputs to feed with a dim that has neither a size, a name nor a
 * --shape (it takes 1), listed into buf ("input, state"); returns how many. */
CG_API size_t cg_samples_unsized_inputs(const cg_model *model, const cg_dim_binding *dims,
                                        size_t dim_count, char *buf, size_t cap);
/* Refuses (CG_USAGE) a --dim symbol no input declares, a --shape for an
 * input the model does not have, of another rank or contradicting a fixed
 * dim, and a --range for an input the model does not have, naming the
 * model's symbols or inputs. */
CG_API CG_NODISCARD cg_status cg_samples_check_options(const cg_model *model,
                                                       const cg_dim_binding *dims, size_t dim_count,
                                                       const cg_input_range *ranges,
                                                       size_t range_count, cg_error *err);
/* A fed value against the input's declared type: kind, dtype, rank and
 * every fixed dim. `source` names where it came from. */
CG_API CG_NODISCARD cg_status cg_samples_check_input(const cg_value_info *vi, const cg_value *v,
                                                     const char *source, cg_error *err);
/* The declared type as text: "float32[1,3,N]", "sequence", "untyped". */
CG_API void cg_samples_type_text(const cg_type *t, char *buf, size_t cap);

/* --- samples --------------------------------------------------------------------- */

/* The noise floors of one output on one sample (docs/noise-floor.md), as a
 * golden set records them: the largest |fp32 reference - fp64 reference|,
 * the largest |fp16 storage - fp64 reference| (+inf when fp16 storage
 * overflows; NaN: not measured) and the output's scale, the largest |fp64
 * value|. */
typedef struct cg_output_floor {
    bool known;
    double scale, fp32, fp16;
    double fp16_sums;   /* the fp16-sums floor (NaN: not recorded) */
    uint64_t count;     /* elements */
} cg_output_floor;

typedef struct cg_sample {
    char *label;             /* the set's name: "0", "set_a", "random-3" */
    cg_named_value *inputs;  /* names borrowed from the model; values owned */
    size_t input_count;
    /* golden outputs in graph-output order (NULL: compare against a fresh
     * reference run); names borrowed from the model, values owned */
    cg_named_value *expected;
    size_t expected_count;
    /* the noise floors recorded with the expected outputs (a golden set of
     * format 2), one per expected output (NULL: none recorded) */
    cg_output_floor *expected_floors;
    char **sources;          /* where each input came from ("random", a path) */
    /* the sizes the fed tensors give the input dims that have no name, as
     * --shape bindings ("input[1]" = 512; symbols owned): cg_sample_dims
     * passes them on, so a target path is placed at the sample's shape */
    cg_dim_binding *unnamed;
    size_t unnamed_count;
} cg_sample;

typedef struct cg_sample_set {
    cg_sample *samples;
    size_t count;
} cg_sample_set;

CG_API void cg_sample_clear(cg_sample *s);
CG_API void cg_sample_set_free(cg_sample_set *s);

/* Starts an empty sample for model (room for every input). */
CG_API CG_NODISCARD cg_status cg_sample_init(cg_sample *s, const cg_model *model, const char *label,
                                             cg_error *err);
/* Adds input `name` from `source` (v is taken, also on failure): an unknown
 * name (the model's inputs are listed), an input fed twice or a value that
 * does not fit the declared type is CG_USAGE. */
CG_API CG_NODISCARD cg_status cg_sample_feed(cg_sample *s, const cg_model *model, const char *name,
                                             cg_value *v, const char *source, cg_error *err);
/* Feeds what a command-line spec names: "NAME=FILE" (FILE a .pb, .npy or
 * FILE.npz:KEY, the key optional for a one-array .npz) or "@FILE.npz"
 * (every array to the input of its name). Errors as cg_sample_feed. */
CG_API CG_NODISCARD cg_status cg_sample_feed_spec(cg_sample *s, const cg_model *model,
                                                  const char *spec, size_t max_bytes,
                                                  cg_error *err);
/* Fills every input the sample lacks with random values (policy p, sample
 * index `index`); symbolic dims from dims, then from the fed tensors (a fed
 * size that contradicts --dim or another input is CG_USAGE), then 1. */
CG_API CG_NODISCARD cg_status cg_sample_fill_random(cg_sample *s, const cg_model *model,
                                                    const cg_random_inputs *p, size_t index,
                                                    const cg_dim_binding *dims, size_t dim_count,
                                                    size_t max_bytes, cg_error *err);
/* The inputs as `model` declares them: a float tensor fed to an input
 * declared as another float type (an fp16 conversion fed its source's
 * float32 inputs) is converted, rounding once; everything else passes
 * through. out gets n entries (names borrowed); owned[i] says which values
 * were made here. Free with cg_samples_cast_free. */
CG_API CG_NODISCARD cg_status cg_samples_cast_inputs(const cg_model *model,
                                                     const cg_named_value *in, size_t n,
                                                     cg_named_value **out, bool **owned,
                                                     cg_error *err);
CG_API void cg_samples_cast_free(cg_named_value *v, bool *owned, size_t n);
/* CG_USAGE naming the first input the sample lacks, with its type. */
CG_API CG_NODISCARD cg_status cg_sample_check_complete(const cg_sample *s, const cg_model *model,
                                                       cg_error *err);
/* base's bindings, then every symbolic input dim bound from the sample's
 * tensors, and every unnamed one as its --shape key (a fixed-shape target
 * path is built for those). Symbols are borrowed from the model and the
 * sample. Returns the count (at most cap). */
CG_API size_t cg_sample_dims(const cg_model *model, const cg_dim_binding *base, size_t base_count,
                      const cg_sample *s, cg_dim_binding *out, size_t cap);

/* How reports name a loaded set of samples: "3 random sets, seed 0" (dir
 * NULL; random NULL: seed 0), "2 sets from DIR", or with golden "2 golden
 * sets from DIR (outputs compared to the golden outputs)". */
CG_API void cg_sample_set_describe(const cg_sample_set *set, const char *dir, bool golden,
                                   const cg_random_inputs *random, char *buf, size_t cap);
/* "SYM=VAL,SYM=VAL" of the bindings in order, or "(defaults)" when there
 * are none: how assign names a shape setting. */
CG_API void cg_samples_dims_label(const cg_dim_binding *dims, size_t n, char *buf, size_t cap);
/* A shape setting (assign --dims): extra's values on top of dims[0..*count)
 * (a symbol both bind takes extra's value; a new one is appended below
 * cap). The symbols written are the model's own copies, so extra may be
 * freed afterwards. CG_USAGE for a name no input declares as a symbolic dim
 * (a --shape key "input[1]" included), CG_LIMIT past cap. */
CG_API CG_NODISCARD cg_status cg_samples_dims_overlay(const cg_model *model, cg_dim_binding *dims,
                                                      size_t *count, size_t cap,
                                                      const cg_dim_binding *extra,
                                                      size_t extra_count, cg_error *err);

/* --- dynamic dims: the sizes used, and where they come from ------------------------ */

typedef enum cg_dim_source {
    CG_DIM_GIVEN = 0,     /* --dim or --shape */
    CG_DIM_FED,           /* the shape of a fed tensor (--inputs, a golden set) */
    CG_DIM_BATCH_DEFAULT, /* a leading dim named as a batch ("batch", "N"): 1, as a device
                             runs one sample; the name is the model's hint */
    CG_DIM_DEFAULT        /* no hint at all: 1, a guess */
} cg_dim_source;

CG_API const char *cg_dim_source_name(cg_dim_source s); /* "--dim/--shape", "the inputs", ... */

/* One dim of an input to feed that has no fixed size. */
typedef struct cg_dim_use {
    const char *input;   /* borrowed from the model */
    size_t axis;
    const char *symbol;  /* its dim_param (borrowed), NULL when unnamed */
    int64_t value;
    cg_dim_source source;
} cg_dim_use;

/* Every dim of the inputs to feed without a fixed size, in graph order,
 * with the size it takes: `given` bindings (--dim, --shape) first, then
 * the tensors of `fed` (a sample the user gave; NULL: random inputs), then
 * 1 (a batch default, or a guess). A symbol shared by several inputs is
 * listed once. Returns the count; at most cap are written to out. */
CG_API size_t cg_samples_dim_uses(const cg_model *model, const cg_dim_binding *given,
                                  size_t given_count, const cg_sample *fed, cg_dim_use *out,
                                  size_t cap);
/* "batch=1 (batch default), 'audio' axis 1=512 (--dim/--shape)"; "none"
 * when n is 0. */
CG_API void cg_samples_dim_uses_text(const cg_dim_use *u, size_t n, char *buf, size_t cap);
/* CG_USAGE, naming the first dim that would be guessed (CG_DIM_DEFAULT):
 * its input, axis and symbol, and the flags that give it (--dim, --shape,
 * --inputs) or accept the stated default (--accept-default-dims). CG_OK
 * when no dim is guessed. */
CG_API CG_NODISCARD cg_status cg_samples_refuse_guessed_dims(const cg_dim_use *u, size_t n,
                                                             cg_error *err);

/* The defaults among u (a batch default, an accepted guess) appended to
 * dims[*count..cap) as bindings, so the size stated is the size placed:
 * fixed, as a deployment fixes it, not left dynamic. A named dim binds its
 * symbol (borrowed); an unnamed one its --shape key, written into
 * keys[k * key_cap] (key_slots slots; a dim that finds none stays
 * unbound). Returns the number of keys used. */
CG_API size_t cg_samples_bind_defaults(const cg_dim_use *u, size_t n, cg_dim_binding *dims,
                                       size_t *count, size_t cap, char *keys, size_t key_cap,
                                       size_t key_slots);

/* --- sources: samples loaded one at a time ---------------------------------------- */

typedef enum cg_samples_layout {
    CG_SAMPLES_RANDOM = 0,
    CG_SAMPLES_SETS,
    CG_SAMPLES_NUMBERED,
    CG_SAMPLES_FLAT,
    CG_SAMPLES_MEMORY /* samples already in memory (cg_sample_source_open_set) */
} cg_samples_layout;

typedef struct cg_sample_source cg_sample_source;

/* The input folder dir (layouts above). Borrows model. */
CG_API CG_NODISCARD cg_status cg_sample_source_open_dir(const cg_model *model, const char *dir,
                                                        size_t max_bytes, cg_sample_source **out,
                                                        cg_error *err);
/* count samples of random inputs. Borrows model, p (and its ranges) and dims. */
CG_API CG_NODISCARD cg_status cg_sample_source_open_random(const cg_model *model, size_t count,
                                                           const cg_random_inputs *p,
                                                           const cg_dim_binding *dims,
                                                           size_t dim_count, size_t max_bytes,
                                                           cg_sample_source **out, cg_error *err);
/* The samples of set, each copied when loaded (a binding's arrays); their
 * outputs read from elsewhere are DIR/LABEL/, as for sets. Borrows model and
 * set. */
CG_API CG_NODISCARD cg_status cg_sample_source_open_set(const cg_model *model,
                                                        const cg_sample_set *set,
                                                        cg_sample_source **out, cg_error *err);
CG_API void cg_sample_source_free(cg_sample_source *src);
CG_API size_t cg_sample_source_count(const cg_sample_source *src);
CG_API cg_samples_layout cg_sample_source_layout(const cg_sample_source *src);
/* The name of sample i (as cg_sample.label). */
CG_API const char *cg_sample_source_name(const cg_sample_source *src, size_t i);
/* The sample `which` names (its name, else its index); which NULL: the
 * only one. CG_USAGE saying how many there are when that is ambiguous or
 * absent. */
CG_API CG_NODISCARD cg_status cg_sample_source_find(const cg_sample_source *src, const char *which,
                                                    size_t *index, cg_error *err);
/* Loads sample i (every input, checked). Clear it with cg_sample_clear. */
CG_API CG_NODISCARD cg_status cg_sample_source_load(cg_sample_source *src, size_t i, cg_sample *out,
                                                    cg_error *err);
/* The outputs of sample i made elsewhere, read from folder dir in the
 * source's layout: values[k] for the model's output k (all of them; a
 * missing one is CG_USAGE naming the file looked for). On failure every
 * value is freed and set to NULL. */
CG_API CG_NODISCARD cg_status cg_sample_source_read_outputs(const cg_sample_source *src,
                                                            const char *dir, size_t i,
                                                            cg_value **values, cg_error *err);

/* The outputs of set `set` of folder dir (DIR/SET/ or DIR/SET.npz, as for
 * the sets layout), values[k] for the model's output k. */
CG_API CG_NODISCARD cg_status cg_samples_read_set_outputs(const cg_model *model, const char *dir,
                                                          const char *set, size_t max_bytes,
                                                          cg_value **values, cg_error *err);

/* Every sample of a folder, or count random ones, loaded at once. */
CG_API CG_NODISCARD cg_status cg_samples_load_dir(const cg_model *model, const char *dir,
                                                  size_t max_bytes, cg_sample_set *out,
                                                  cg_error *err);
CG_API CG_NODISCARD cg_status cg_samples_random(const cg_model *model, size_t count,
                                                const cg_random_inputs *p,
                                                const cg_dim_binding *dims, size_t dim_count,
                                                size_t max_bytes, cg_sample_set *out,
                                                cg_error *err);

/* --- output files ------------------------------------------------------------------- */

/* Writes a run's outputs (graph-output order, as cg_runtime_run returns
 * them) to folder dir, made with its parents when missing: DIR/STEM.npy,
 * or DIR/STEM.npz with keys 0..n-1 for a sequence; an empty optional
 * writes nothing. Files are created without following a link planted at
 * their path. paths (may be NULL) gets each file's malloc'd path, NULL for
 * none; free with cg_samples_stems_free. */
CG_API CG_NODISCARD cg_status cg_samples_write_outputs(const cg_model *model, const char *dir,
                                                       const cg_named_value *outputs, size_t count,
                                                       char ***paths, cg_error *err);
/* The same with `suffix` appended to every file stem (DIR/STEM_N.npy for
 * the numbered layout); NULL: none. */
CG_API CG_NODISCARD cg_status cg_samples_write_outputs_suffixed(
    const cg_model *model, const char *dir, const char *suffix, const cg_named_value *outputs,
    size_t count, char ***paths, cg_error *err);
/* Writes sample i's outputs (graph-output order) into folder dir in the
 * source's layout, where cg_sample_source_read_outputs reads them back:
 * DIR/SET/STEM.npy for sets and random samples, DIR/STEM_N.npy for
 * numbered folders, DIR/STEM.npy for a flat one. */
CG_API CG_NODISCARD cg_status cg_sample_source_write_outputs(const cg_sample_source *src,
                                                             const char *dir, size_t i,
                                                             const cg_named_value *outputs,
                                                             size_t count, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
