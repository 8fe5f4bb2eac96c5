/*
 * Constant buffers shared by every runtime in the process that derives
 * them from the same bytes: aligned copies of initializer payloads,
 * weights packed for a kernel, and initializers rounded to fp16 storage
 * (frame.c; keyed by the initializer's proto).
 *
 * Exporters put raw_data at any byte offset, so most weights cannot be used
 * in place and must be copied to aligned memory; convolutions then pack
 * them for their GEMM. Each plan used to do both on its own: a gate builds
 * five to seven runtimes over one model (typing runs, the timed run, the
 * float32 and float64 references, the target path), so it copied and
 * packed resnet50's 98 MB five times and held three copies at once.
 *
 * A shared buffer is a function of (source address, tag, length) alone,
 * where the tag says how it derives from the source (nothing for a copy;
 * the packing's shape, group and kernel for packed weights), and it is
 * never written after it is filled. Each holder (a runtime's plan or
 * kernel state) borrows the model or value that holds the source bytes,
 * so those bytes stay alive and unchanged while any holder exists: sharing
 * cannot change a result.
 *
 * This is the runtime's one process-wide table, guarded by a mutex. An
 * entry is counted (acquire/release) and filled once, by whichever holder
 * needs it first, under the entry's own lock (safe from any thread).
 */
#ifndef CG_RUN_INITSHARE_H
#define CG_RUN_INITSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

typedef struct cg_shared cg_shared;

/* The most tag bytes an entry keeps. */
#define CG_SHARED_TAG_MAX 256

/* The buffer of `bytes` bytes derived from src as `tag` says, shared by
 * every holder; not filled yet when this is its first holder. Its data is
 * aligned to 64 bytes. NULL when memory cannot be had or the tag is over
 * CG_SHARED_TAG_MAX (the caller then makes its own). */
cg_shared *cg_shared_acquire(const void *src, const void *tag, size_t tag_len, size_t bytes);
uint8_t *cg_shared_data(const cg_shared *c);
/* The bytes an entry derives from, and whether it is filled yet. */
const void *cg_shared_src(const cg_shared *c);
bool cg_shared_is_filled(const cg_shared *c);
size_t cg_shared_len(const cg_shared *c);
/* true: the caller fills the buffer now and then calls cg_shared_fill_end
 * (other holders wait); false: it is filled already. */
bool cg_shared_fill_begin(cg_shared *c);
void cg_shared_fill_end(cg_shared *c, bool filled);
/* Drops one hold; the last frees the buffer. NULL is a no-op. */
void cg_shared_release(cg_shared *c);
/* Entries alive, and the holders of the aligned copy of src[0, len) (0
 * when there is none): for tests. */
size_t cg_shared_live(void);
/* Bytes of the live entries that are filled: for tests. */
size_t cg_shared_filled_bytes(void);
size_t cg_init_copy_holders(const void *src, size_t len);

/* Aligned copies: the shared buffer of src[0, len) with no tag, and its
 * fill (a copy, once over all holders and threads). */
cg_shared *cg_init_copy_acquire(const uint8_t *src, size_t len);
void cg_init_copy_fill(cg_shared *c);

/* The payload of an initializer that needs an aligned copy before the
 * runtime can use it: fixed-size elements in raw_data or external data, at
 * an address that is not a multiple of the element size. NULL else. */
const cg_bytes *cg_init_payload_misaligned(const cg_tensor_proto *tp);

/* *out = tp with its misaligned payload raw (cg_init_payload_misaligned)
 * read from data instead: the same tensor over an aligned copy. */
void cg_init_proto_over(const cg_tensor_proto *tp, const cg_bytes *raw, const uint8_t *data,
                        cg_tensor_proto *out);

/* Holds (cg_runtime_hold_weights, convgate/runtime.h) are implemented
 * here: a hold takes the copies of its model's misaligned payloads and
 * keeps, past their last holder, the buffers derived from the model's
 * payloads or those copies. */

#endif
