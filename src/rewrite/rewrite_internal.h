/*
 * What the rewrite driver (rewrite.c) hands each rewrite of the catalog
 * (rewrites.def), and the helpers they share.
 *
 * A rewrite function edits c->g in place at every site where its
 * precondition holds and the site is needed (rw_needed), counts the sites
 * it rewrote in c->sites and the needless matches in c->unneeded, and
 * leaves a one-line account in c->detail (rw_detail: the first call wins,
 * so the first site's reason or the summary is what the report shows). It
 * returns CG_OK unless memory ran out; a site that does not fit is
 * skipped, never an error. The driver then materializes, checks and
 * verifies the result, and keeps it or not.
 */
#ifndef CG_REWRITE_INTERNAL_H
#define CG_REWRITE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/rewrite.h"
#include "core/strmap.h"
#include "rewrite/rgraph.h"

/* Calibration: the largest |x| of every float value over the samples. */
typedef struct rw_stats {
    cg_strmap index;   /* name (owned below) -> slot */
    char **names;
    double *max_abs;
    size_t count, cap;
} rw_stats;

/* Largest |x| seen for name; < 0 when not recorded. */
double rw_stats_max(const rw_stats *s, const char *name);

typedef struct rw_ctx {
    rw_graph *g;
    const cg_type_env *types;      /* of the model g was loaded from (may be NULL) */
    const bool *refused;           /* per source node: no target takes it (NULL: none) */
    bool force;                    /* --only: every site, needed or not */
    const cg_dim_binding *dims;    /* --dim */
    size_t dim_count;
    cg_precision precision;        /* the targets' (fp16 if any is) */
    const rw_stats *stats;         /* precision rewrites (NULL otherwise) */
    size_t sites, unneeded;
    char detail[512];
    cg_error *err;
} rw_ctx;

typedef cg_status (*rw_fn)(rw_ctx *c);

/* The rewrites (cleanup.c, compat.c, precision.c). */
#define X(name, kind, numerics, fn, summary, addresses) cg_status fn(rw_ctx *c);
#include "rewrite/rewrites.def"
#undef X

/* True when node i (an index of c->g) is to be rewritten: forced, or a
 * source node the targets refuse. A needless match is counted. */
bool rw_needed(rw_ctx *c, size_t node);
/* Like rw_needed for a site of several nodes: any of them refused. */
bool rw_needed_any(rw_ctx *c, const size_t *nodes, size_t count);

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
void rw_detail(rw_ctx *c, const char *fmt, ...);

/* The known static type of a value: dtype and every dim fixed (no dim
 * follows an unbound symbolic input dim). NULL otherwise. */
const cg_value_type *rw_static(const rw_ctx *c, const char *name);
/* Known type (dims may be dynamic), or NULL. */
const cg_value_type *rw_type(const rw_ctx *c, const char *name);

/* A model placed as assign places it: the graph the targets partition
 * (their preprocess: cg_lower_for_targets_fed), typed by a run on sample 0
 * when the samples are the user's inputs (else on o->random, as assign
 * without --inputs), and assigned. Where the lowering or that run fails,
 * `a` stays NULL and `why` says so (CG_OK); out of memory is returned. */
typedef struct rw_placed {
    struct cg_lowered *lowered;
    cg_type_env *types;            /* of lowered->model */
    cg_assignment *a;              /* places lowered->model */
    char why[256];
} rw_placed;

/* The sample placement is typed by (sample 0 when the samples are the
 * user's), or NULL: random inputs. */
const cg_sample *rw_fed_sample(const cg_rewrite_options *o);
cg_status rw_place(const cg_model *model, const cg_rewrite_options *o, rw_placed *out,
                   cg_error *err);
void rw_placed_free(rw_placed *p);

/* Node label for details: "name" or "#index", in buf. */
const char *rw_label(const rw_graph *g, size_t n, char *buf, size_t cap);

#endif
