/*
 * Progress of long work (gate over samples, bisection, profiling,
 * conformance): the library says what it is doing through one callback in
 * the options struct of the call; the caller decides whether and how to
 * show it (the CLI draws one line on a terminal's stderr and nothing
 * otherwise, cli/progress.c). A zeroed cg_progress reports nothing.
 *
 * The callback runs on the thread doing the work, one call at a time; it
 * must be quick (it may run once per node) and must not call back into the
 * library on the same objects.
 */
#ifndef CONVGATE_PROGRESS_H
#define CONVGATE_PROGRESS_H

#include <stddef.h>

#include "convgate/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_progress_event {
    const char *stage; /* "gate 3", "bisect", "profile", "conformance" */
    const char *unit;  /* what is counted: "samples", "nodes", "runs", "tests" */
    size_t done;       /* items finished */
    size_t total;      /* items in all; 0 when not known */
    const char *item;  /* the item being worked on (sample, node, test), or NULL */
} cg_progress_event;

typedef void (*cg_progress_fn)(void *user, const cg_progress_event *ev);

typedef struct cg_progress {
    cg_progress_fn fn; /* NULL: no reports */
    void *user;
} cg_progress;

/* Calls p->fn with the event when p and p->fn are set. */
CG_API void cg_progress_report(const cg_progress *p, const char *stage, const char *unit,
                               size_t done, size_t total, const char *item);

#ifdef __cplusplus
}
#endif
#endif
