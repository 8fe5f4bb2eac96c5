/*
 * Status codes and the error record every fallible convgate call fills.
 *
 * A function that can fail on input returns cg_status and, when given a
 * non-NULL cg_error, writes one human-readable message naming the file,
 * node, tensor or field and the offending value. The first error wins:
 * later cg_error_set calls on an already-failed record are ignored, so the
 * root cause is what the user sees.
 */
#ifndef CONVGATE_STATUS_H
#define CONVGATE_STATUS_H

#include <stddef.h>

#include "convgate/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum suffix, short name) */
#define CG_STATUS_LIST(X)                                                      \
    X(OK, "ok")                                                                \
    X(IO, "io")                   /* open/read/map/write failed */            \
    X(PARSE, "parse")             /* malformed protobuf or file format */     \
    X(INVALID, "invalid")         /* well-formed but violates ONNX rules */   \
    X(UNSUPPORTED, "unsupported") /* valid but not handled here */            \
    X(NOMEM, "nomem")             /* allocation failed */                     \
    X(LIMIT, "limit")             /* a configured resource limit was hit */   \
    X(SECURITY, "security")       /* path escape, link, tampering */          \
    X(RUNTIME, "runtime")         /* a kernel failed on actual values */      \
    X(USAGE, "usage")             /* bad arguments from the caller */

typedef enum cg_status {
#define CG_STATUS_ENUM(name, str) CG_##name,
    CG_STATUS_LIST(CG_STATUS_ENUM)
#undef CG_STATUS_ENUM
    CG_STATUS_COUNT
} cg_status;

#define CG_ERROR_MSG_MAX 1024

typedef struct cg_error {
    cg_status status;
    char msg[CG_ERROR_MSG_MAX];
} cg_error;

CG_API const char *cg_status_name(cg_status status);

/* Clears the record. */
CG_API void cg_error_clear(cg_error *err);

/* Records status and a printf-style message unless err is NULL or already
 * holds an error. Returns status so callers can `return cg_error_set(...)`. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
CG_API cg_status cg_error_set(cg_error *err, cg_status status, const char *fmt, ...);

/* Prefixes an existing message with context ("loading 'x.onnx': ..."). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
CG_API void cg_error_prefix(cg_error *err, const char *fmt, ...);

#ifdef __cplusplus
}
#endif
#endif
