/*
 * How the public API is marked, in every public header.
 *
 *   CG_API        exported from the shared library. The library is built
 *                 with hidden visibility, so a function without it is
 *                 internal however it is declared.
 *   CG_NODISCARD  a returned cg_status the caller must look at
 *                 (warn_unused_result): ignoring a failure is a bug.
 *                 cg_error_set is the exception: it returns its argument
 *                 for `return cg_error_set(...)`.
 *
 * tests/scripts/layering.sh checks that every function a public header
 * declares carries CG_API, and CG_NODISCARD when it returns cg_status.
 */
#ifndef CONVGATE_API_H
#define CONVGATE_API_H

#if defined(__GNUC__) || defined(__clang__)
#define CG_API __attribute__((visibility("default")))
#define CG_NODISCARD __attribute__((warn_unused_result))
#else
#define CG_API
#define CG_NODISCARD
#endif

#endif
