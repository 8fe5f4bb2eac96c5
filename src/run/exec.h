/*
 * Executor internals shared by plan.c (building), exec.c (the runtime),
 * frame.c (running steps), schedule.c (with an assignment), kernel_api.c
 * (the kernel API) and ops/seq.c (control flow kernels).
 *
 * A cg_plan describes one graph (the main graph or a subgraph): every value
 * it defines gets a slot (graph inputs, initializers, node outputs); a node
 * input is a reference (up, slot) where `up` counts scopes outward, so a
 * subgraph reads an outer value straight from the enclosing frame. Steps are
 * in model order (ONNX requires topological order; plan.c checks it).
 * Liveness: after step s runs, the slots in steps[s].release are dropped;
 * uses inside a subgraph count as uses by the node that owns the subgraph.
 *
 * A cg_exec is one activation of a plan: the slot values plus the chain to
 * the enclosing activation. Frames live on the C stack of the caller.
 */
#ifndef CG_RUN_EXEC_H
#define CG_RUN_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "convgate/runtime.h"
#include "convgate/target.h"
#include "core/strmap.h"
#include "run/kernel.h"
#include "run/registry.h"

#define CG_MAX_SUBGRAPH_DEPTH 32
#define CG_DEFAULT_MAX_ALLOC ((size_t)4 << 30)

typedef struct cg_ref {
    int32_t up;   /* scopes outward: 0 = this graph */
    int32_t slot; /* -1: omitted optional input */
} cg_ref;

typedef enum cg_slot_kind {
    CG_SLOT_INPUT = 0,  /* graph input (bound by the caller / control-flow op) */
    CG_SLOT_INIT,       /* initializer, held by the plan */
    CG_SLOT_NODE        /* produced by a step */
} cg_slot_kind;

struct cg_plan;

typedef struct cg_subplan {
    const cg_graph *graph;
    struct cg_plan *plan;
} cg_subplan;

typedef struct cg_step {
    const cg_node *node;
    size_t index;        /* node index in its graph (for messages) */
    cg_kernel_fn fn;
    int64_t since, opset;
    cg_ref *in;          /* node->input_count */
    int32_t *out;        /* node->output_count; -1 for "" */
    cg_subplan *subs;    /* graph attributes of the node */
    size_t sub_count;
    int32_t *release;    /* local slots whose last use is this step */
    size_t release_count;
    void *state;         /* the kernel's cache (cg_kernel_set_state) */
    void (*state_free)(void *);
    uint32_t state_covers; /* inputs (bit i) the state stands for (cg_kernel_state_covers) */
    /* float64 mode: inputs (bit i) whose big float32 initializer the
     * kernel reads as stored, widening it itself (fold.c mark_stored64):
     * frame.c does not promote them into a double copy first */
    uint32_t stored64;
    bool folded;         /* computed at init (fold.c): its outputs are INIT slots */
    /* fusion (fuse.c): epi.kind != NONE on a producer whose output 0 may
     * land, activated, in fused_slot; absorbed_final >= 0 on a step fused
     * into an earlier one, skipped while that slot holds a value */
    cg_epilogue epi;
    int32_t fused_slot;
    int32_t absorbed_final;
    int32_t residual_slot;  /* the fused Add's other input (local), or -1 */
} cg_step;

/* Float initializers of at least this many elements stay float in the
 * float64 mode and are promoted by each step that reads them (frame.c): a
 * gate's float64 reference of resnet50 held 196 MB of double weights. */
#define CG_LAZY64_MIN_NUMEL 4096

typedef struct cg_plan {
    const cg_graph *graph;
    struct cg_plan *parent;
    int depth; /* 0 for the main graph */
    size_t slot_count;
    const char **slot_names;
    uint8_t *slot_kind;      /* cg_slot_kind */
    int32_t *slot_producer;  /* step index for NODE slots, else -1 */
    int32_t *slot_last_use;  /* last step reading it, -1 if none */
    bool *slot_is_output;    /* a graph output: never released */
    struct cg_budget *budget; /* what init_reserved is reserved against */
    uint64_t init_reserved;  /* bytes of converted initializers (the budget's) */
    cg_value **init_values;  /* INIT slots: the converted initializer */
    bool *init_borrowed;     /* its data points into the model mapping */
    /* INIT slots made from the graph's initializers: their proto, which
     * names the initializer to the process-wide shared buffers (sparse and
     * folded ones: NULL) */
    const cg_tensor_proto **init_proto;
    /* float64 mode: an INIT slot left in its stored float type and promoted
     * into scratch by each step that reads it (frame.c), rather than held
     * as double for the runtime's life (twice the weights' bytes) */
    bool *init_lazy64;      /* (CG_LAZY64_MIN_NUMEL elements or more) */
    int32_t *input_slots;    /* graph->inputs order */
    cg_ref *output_refs;     /* graph->outputs order */
    cg_step *steps;
    size_t step_count;
    size_t max_inputs, max_outputs;
    cg_strmap names;         /* name -> local slot */
    /* free names: outer values read by this graph or its subgraphs */
    const char **captures;
    size_t capture_count, capture_cap;
} cg_plan;

/* Memory plan of the main graph for one set of input shapes. */
typedef struct cg_mem_plan {
    bool valid;
    int64_t *signature;      /* per graph input: dtype, rank, dims... */
    size_t signature_len;
    size_t *slot_offset;     /* SIZE_MAX: not placed */
    size_t *slot_bytes;
    uint8_t *arena;
    size_t arena_bytes;
    size_t arena_map_bytes;  /* > 0: the arena is a value heap's reservation of
                                this many bytes (cg_unmap_anon), else malloc'd */
    struct cg_budget *budget; /* arena_bytes is reserved against it (when set) */
    /* built at set-up from predicted sizes (predict.c), not yet confirmed
     * by a run: a run with a miss drops it */
    bool predicted;
    size_t misses; /* values of a planned run that found no place in the arena */
} cg_mem_plan;

/* A partition of the assignment compiled for an executing target. */
typedef struct cg_rt_partition {
    int id;
    const cg_target *target;
    void *state;             /* from target->vt->compile */
    cg_partition_desc desc;  /* node/name arrays borrowed from the assignment */
    int32_t *in_slots;       /* main-graph slot of each desc input */
    int32_t *out_slots;      /* ... of each desc output */
    const cg_node **out_nodes; /* node producing each output (for the observer) */
    const cg_value **ins;    /* run scratch: gathered inputs */
    cg_value **outs;         /* run scratch: produced outputs */
    uint64_t runs;
    double seconds;
    uint64_t nan_checks, nan_restored; /* see cg_runtime_partition_info */
} cg_rt_partition;

/* One step of the main graph's schedule with an assignment: a reference
 * step or a whole partition, and the slots dead after it. */
typedef struct cg_rt_unit {
    int32_t step;            /* main-plan step, or -1 */
    int32_t part;            /* index into cg_runtime.parts, or -1 */
    int32_t first_node;      /* smallest node index (schedule tie-break) */
    int32_t *release;
    size_t release_count;
} cg_rt_unit;

/* buffers.c: kernel scratch as a stack of chunks kept across runs, and a
 * pool of value buffers (plain malloc blocks) for reuse. */
typedef struct cg_scratch_chunk {
    uint8_t *base;
    size_t cap;
} cg_scratch_chunk;

typedef struct cg_scratch_stack {
    cg_scratch_chunk *chunks;
    size_t count, cap;
    size_t cur, used; /* the top: chunk index and bytes used in it */
} cg_scratch_stack;

typedef struct cg_scratch_mark {
    size_t chunk, used;
} cg_scratch_mark;

/* buffers.c: the value heap of a run that records a memory plan: address
 * space that becomes the plan's arena (see there). Offsets from base. */
typedef struct cg_heap_span {
    size_t off, len;
} cg_heap_span;

typedef struct cg_value_heap {
    uint8_t *base;            /* a cg_reserve_anon reservation; NULL: none */
    size_t reserved;          /* its bytes */
    size_t committed;         /* bytes from base that are readable and writable */
    size_t top;               /* every byte from here on is free */
    cg_heap_span *free_spans; /* free gaps below top, by offset, never adjacent */
    size_t free_count, free_cap;
    cg_heap_span *live;       /* blocks handed out and not freed yet */
    size_t live_count, live_cap;
    uint64_t misses;          /* recording-run outputs that went elsewhere (tests) */
    uint64_t held;            /* committed bytes reserved in the budget (the kept heap) */
} cg_value_heap;

typedef struct cg_buffer_pool {
    struct {
        void *ptr;
        size_t cap;
    } *items;
    size_t count, cap, bytes;
} cg_buffer_pool;

struct cg_runtime {
    const cg_model *model;
    cg_runtime_options opt;
    cg_registry_index registry;
    cg_plan *main;
    cg_mem_plan mem;
    /* recording during a run that builds the next memory plan */
    size_t *record_bytes;    /* per main slot; 0 = not recorded */
    /* with an assignment: the schedule of the main graph (NULL otherwise) */
    cg_rt_partition *parts;
    size_t part_count;
    cg_rt_unit *units;
    size_t unit_count;
    int32_t *slot_first, *slot_last; /* per main slot: unit positions, for the memory plan */
    /* with opt.node_precision: per main slot, the fp16-rounded copy of an
     * initializer that emulated nodes read (NULL otherwise) */
    cg_value **prec_init;
    /* ... and the process-wide buffer a rounded initializer's data is, when
     * it is shared (every runtime rounding that initializer reads one copy:
     * run/initshare.h); NULL otherwise */
    struct cg_shared **prec_shared;
    struct cg_budget *budget; /* opt.budget or the process budget */
    char *warnings;           /* of the last run (cg_runtime_warnings) */
    size_t warnings_len;
    struct cg_threadpool *pool; /* opt.threads > 1: the kernels' workers */
    cg_simd simd;               /* resolved opt.simd */
    cg_scratch_stack scratch;   /* kernel scratch, kept across runs (buffers.c) */
    bool materialized;          /* the first run made the initializer copies */
    cg_buffer_pool buffers;     /* freed value buffers for reuse (buffers.c) */
    cg_value_heap heap;         /* the recording run's values (buffers.c) */
    cg_value_heap kept;         /* subgraph values, kept across runs (buffers.c) */
};

enum {
    CG_OWN_NONE = 0,  /* borrowed pointer (caller, initializer, outer) */
    CG_OWN_FULL,      /* frame owns struct and data */
    CG_OWN_STRUCT,    /* frame owns the struct; data lives in the arena */
    CG_OWN_POOLED,    /* as FULL; the data goes back to the runtime's pool */
    CG_OWN_HEAP       /* frame owns the struct; the data goes back to the value heap */
};

enum {
    CG_OUT_ARENA = 1,     /* data placed in the memory plan's arena */
    CG_OUT_PLANNABLE = 2, /* allocated by cg_kernel_output: may be planned */
    CG_OUT_POOLED = 4,    /* data from the runtime's buffer pool */
    CG_OUT_HEAP = 8,      /* data from the runtime's value heap */
    CG_OUT_KEPT = 16      /* data from the kept heap (reserved with it) */
};

/* The CG_OWN_* a frame takes for an output with CG_OUT_* flags. */
static inline uint8_t cg_exec_out_own(uint8_t flags)
{
    return (flags & CG_OUT_ARENA)    ? CG_OWN_STRUCT
           : (flags & (CG_OUT_HEAP | CG_OUT_KEPT)) ? CG_OWN_HEAP
           : (flags & CG_OUT_POOLED) ? CG_OWN_POOLED
                                     : CG_OWN_FULL;
}

struct cg_exec {
    cg_runtime *rt;
    const cg_plan *plan;
    struct cg_exec *parent;
    cg_value **vals;
    uint8_t *own;
    const cg_value **ins;   /* the running step's inputs */
    cg_value **outs;        /* the running step's outputs */
    uint8_t *out_flags;     /* CG_OUT_* per output of the running step */
    uint64_t *reserved;     /* per slot: bytes reserved in the budget for its value */
    uint64_t pending;       /* bytes the running kernel allocated, not yet reserved */
    uint64_t *out_reserved; /* the running step's outputs: bytes reserved for each */
    size_t step;            /* step being run */
    bool is_main;
    bool use_arena;         /* main graph with a matching memory plan */
    bool recording;         /* main graph building a memory plan */
    bool shadow;            /* reference steps run only to read a partition's NaN lanes:
                               no observer, timing, arena or memory-plan recording */
    bool folding;           /* constant folding at init (fold.c): outputs are plain
                               blocks the plan may keep, even in a subgraph */
    bool epi_taken;         /* the running step's kernel took its epilogue */
    cg_epilogue epi_run;    /* the running step's epilogue, residual bound */
    cg_error *err;
};

/* plan.c */
cg_status cg_plan_build(cg_runtime *rt, const cg_graph *g, cg_plan *parent, int depth,
                        cg_plan **out, cg_error *err);
void cg_plan_free(cg_plan *p);
/* The local slot of `name` in p, or -1. */
static inline int32_t cg_plan_slot(const cg_plan *p, const char *name)
{
    size_t s = cg_strmap_get(&p->names, name);
    return s == CG_STRMAP_NONE ? -1 : (int32_t)s;
}
/* Makes the initializer copies plan_initializers left for the first run,
 * in p and its subgraphs (split over pool's threads); then every INIT
 * value's data is readable. cg_plan_materialize_slot makes one. */
struct cg_threadpool;
void cg_plan_materialize(cg_plan *p, struct cg_threadpool *pool);
/* Bytes of the copies cg_plan_materialize would make, in p and its subgraphs. */
size_t cg_plan_pending_bytes(const cg_plan *p);
void cg_plan_materialize_slot(cg_plan *p, int32_t slot);
/* The source bytes of slot's aligned copy while that copy is not filled
 * (the misaligned payload in the model), else NULL. */
const void *cg_plan_copy_source(const cg_plan *p, int32_t slot);
/* Leaves slot's copy out of cg_plan_materialize: only
 * cg_plan_materialize_slot fills it then (a reader that needs the bytes). */
void cg_plan_defer_slot(cg_plan *p, int32_t slot);
/* Slot `to` reads the bytes of slot from's copy as well (a view of it:
 * fold.c's Identity of an initializer): its own entry, so that
 * cg_plan_copy_source and cg_plan_materialize_slot answer for it. False
 * when from has no unfilled copy or memory is short (then fill it). */
bool cg_plan_share_copy(cg_plan *p, int32_t from, int32_t to);
void cg_mem_plan_clear(cg_mem_plan *m);
/* One graph input's part of a memory plan's signature (dtype, rank, dims)
 * written at sig; returns the count written (at most CG_MAX_RANK + 2). */
static inline size_t cg_mem_key(int64_t *sig, cg_dtype dt, int rank, const int64_t *dims)
{
    size_t n = 0;
    sig[n++] = dt;
    sig[n++] = rank;
    for (int d = 0; d < rank; d++)
        sig[n++] = dims[d];
    return n;
}
/* Whether m is a plan for the inputs of this signature. */
static inline bool cg_mem_plan_for(const cg_mem_plan *m, const int64_t *sig, size_t len)
{
    return m->valid && m->signature_len == len && memcmp(m->signature, sig, len * sizeof *sig) == 0;
}
/* Per slot of p, 1 + the index of the graph input it holds (the first such
 * input), else 0; slot_count + 1 entries, malloc'd; NULL when out of
 * memory. Binds names to inputs in O(1) each. */
size_t *cg_plan_input_index(const cg_plan *p);
/* Places the recorded sizes (rt->record_bytes) in one arena. */
cg_status cg_mem_plan_build(cg_runtime *rt, const int64_t *signature, size_t signature_len,
                            cg_error *err);

/* predict.c */
/* Each main-graph value's dtype and shape (shapes[slot], slot_count
 * entries; data NULL, dtype UNDEFINED where not known) for these inputs
 * (the declared shapes of those not given), followed op by op; false when
 * an input's shape is not known or memory is short. */
bool cg_predict_shapes(const cg_runtime *rt, const cg_named_value *inputs, size_t count,
                       cg_tensor *shapes);
/* The memory plan for these inputs' shapes (the declared ones of those not
 * given), from the predicted sizes, with its arena's pages touched now;
 * nothing when a size cannot be predicted (the first run records the
 * plan) or the plan is already for these shapes. */
void cg_mem_plan_predict(cg_runtime *rt, const cg_named_value *inputs, size_t count);

/* value.c */
/* Converts a TensorProto; with allow_borrow, aligned little-endian raw_data
 * of a fixed-size type is used in place (read-only) and *borrowed is set. */
cg_status cg_value_from_proto_ex(const cg_tensor_proto *tp, bool allow_borrow, cg_value **out,
                                 bool *borrowed, cg_error *err);
/* Densifies a SparseTensorProto (indices [NNZ] linear or [NNZ, rank]). */
cg_status cg_value_from_sparse_proto(const cg_sparse_tensor_proto *sp, size_t max_bytes,
                                     cg_value **out, cg_error *err);
/* exec.c */
const char *cg_exec_value_kind_name(cg_value_kind k);

/* frame.c */
/* "node 'name' (Op)" or "node #index (Op)" in buf. */
const char *cg_exec_step_label(const cg_node *n, size_t index, char *buf, size_t cap);
/* Index of k's node in its graph (for messages). */
size_t cg_exec_node_index(const cg_kernel_ctx *k);
/* "[d0,d1,...]" in buf, cut at cap. */
void cg_exec_format_shape(int rank, const int64_t *dims, char *buf, size_t cap);
/* Frees a value according to who owns what (CG_OWN_*). */
void cg_exec_drop_value(cg_runtime *rt, cg_value *v, uint8_t own);
/* The budget a frame's values are reserved against (NULL without a runtime). */
struct cg_budget *cg_exec_budget(const cg_exec *f);
cg_status cg_frame_init(cg_exec *f, cg_runtime *rt, const cg_plan *plan, cg_exec *parent,
                        cg_error *err);
void cg_frame_free(cg_exec *f);
/* Runs the frame's steps (the main graph's schedule when there is one). */
cg_status cg_frame_run(cg_exec *f);
/* Runs step si alone, keeping what it releases (constant folding). */
cg_status cg_frame_step(cg_exec *f, size_t si);
/* Calls a prepare function (ops/prepare.def) for step si with its
 * initializer inputs bound, the others NULL. */
cg_status cg_frame_prepare_step(cg_exec *f, size_t si, cg_kernel_fn fn);
/* fold.c: runs the steps whose inputs are all constant, once (see there). */
cg_status cg_fold_constants(cg_runtime *rt, cg_error *err);
/* fuse.c: fuses activations into the convolutions before them (see there). */
void cg_fuse_activations(cg_runtime *rt);
/* Moves (when the frame owns them) or copies the graph outputs into outs. */
cg_status cg_frame_take_outputs(cg_exec *f, cg_value **outs, size_t count, cg_error *err);
/* Scratch for the running step, released after its kernel; NULL above the
 * allocation limit or when out of memory. */
void *cg_frame_scratch(cg_exec *f, size_t bytes);

/* buffers.c */
cg_scratch_mark cg_scratch_mark_get(const cg_runtime *rt);
void cg_scratch_reset(cg_runtime *rt, cg_scratch_mark m);
void *cg_scratch_alloc(cg_runtime *rt, size_t bytes);
/* A chunk of at least `bytes` made now (unless one is there) and its pages
 * touched, so that a run's scratch of that size is not fresh memory; best
 * effort (no memory: nothing done). */
void cg_scratch_prefault(cg_runtime *rt, size_t bytes);
/* A malloc block of at least `bytes` (not zeroed), from the pool if one fits. */
void *cg_buffer_get(cg_runtime *rt, size_t bytes);
/* Gives ptr (at least `bytes` long) to the pool, or frees it. */
void cg_buffer_put(cg_runtime *rt, void *ptr, size_t bytes);
/* Whether `bytes` more fit the runtime's budget, after freeing the pool's
 * idle buffers when they would not. */
bool cg_buffers_make_room(cg_runtime *rt, uint64_t bytes);
void cg_buffers_free(cg_runtime *rt);
/* The value heap (buffers.c): bytes for an output of a recording run, NULL
 * when the heap has no room (the caller allocates elsewhere). */
void *cg_heap_alloc(cg_runtime *rt, size_t bytes);
/* Commits the first huge page of the value heap (and of the kept heap,
 * when kept) and faults it in: at set-up, so that the first run does not
 * pay for zeroing it. A small model's recording run otherwise spent most of
 * its time there (Silero VAD v5: two 2 MiB pages zeroed, 0.6 ms of a 1.2 ms
 * first run against 0.09 ms warm runs). Those pages would be resident after
 * the first run anyway. Failures are left for the first run to meet. */
void cg_heaps_prefault(cg_runtime *rt, bool kept);
/* The kept heap: bytes for a subgraph's value, NULL when it has no room.
 * Its pages stay for the next run (reserved in the budget while they do). */
void *cg_heap_alloc_kept(cg_runtime *rt, size_t bytes);
/* Gives back a block either heap handed out. */
void cg_heap_free(cg_runtime *rt, void *ptr);
/* The heap's reservation, emptied, as an arena of `bytes` (committed): the
 * pages the recording run touched are the ones the arena's run will touch.
 * NULL when there is none, it is too small, or a block is still out; on
 * success *map_bytes is what cg_unmap_anon needs. */
uint8_t *cg_heap_adopt(cg_runtime *rt, size_t bytes, size_t *map_bytes);
/* Unmaps the heap's reservation (nothing may be out). */
void cg_heap_release(cg_runtime *rt);
/* Rounded copies of the float32 initializers emulated nodes read. */
cg_status cg_prec_init_build(cg_runtime *rt, cg_error *err);
void cg_prec_init_free(cg_runtime *rt);
/* Runs subgraph g (an attribute graph of k's node) with `inputs` bound to
 * its graph inputs (borrowed). On success outs[0..out_count) are new values
 * owned by the caller. Fails if the graph's input or output count differs. */
cg_status cg_exec_subgraph(cg_kernel_ctx *k, const cg_graph *g, const cg_value *const *inputs,
                           size_t input_count, cg_value **outs, size_t out_count);

/* schedule.c */
/* Compiles the executing partitions of rt->opt.assignment and orders the
 * main graph's units; cg_schedule_free undoes it. */
cg_status cg_schedule_build(cg_runtime *rt, cg_error *err);
void cg_schedule_free(cg_runtime *rt);

/* kernel_api.c */
/* Size checks shared by cg_kernel_output and control flow kernels: fails
 * with CG_LIMIT (naming node, op, shape, bytes) above the runtime's limit. */
cg_status cg_exec_check_alloc(cg_kernel_ctx *k, cg_dtype dtype, int rank, const int64_t *dims,
                              size_t *bytes);
/* Hands a finished value to output i (takes ownership of v, even on error). */
cg_status cg_kernel_set_output(cg_kernel_ctx *k, size_t i, cg_value *v);

/* How many runtimes (cg_runtime_init) are alive in this process, every
 * thread's: the tests count what a schedule keeps alive. */
size_t cg_runtimes_alive(void);

#endif
