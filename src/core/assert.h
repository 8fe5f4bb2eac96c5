/*
 * Internal invariants, checked in debug builds (SQLite's assert/ALWAYS/
 * NEVER, ggml's GGML_ASSERT).
 *
 *   CG_ASSERT(x)  x holds here. A debug build (CG_DEBUG: CMake's Debug
 *                 type, or -DCG_SANITIZE=ON) stops with the file, line and
 *                 expression when it does not; other builds drop the check.
 *   ALWAYS(x)     the condition of a defensive branch the code believes is
 *   NEVER(x)      always (never) true: `if (NEVER(slot < 0)) return ...;`.
 *                 A debug build stops when the belief is wrong; a release
 *                 build keeps the branch, so bad state is still handled and
 *                 reported; a coverage build (CG_COVERAGE) makes them
 *                 constants, so the unreachable branch is not counted as
 *                 untested.
 *
 * Only for invariants of our own data: anything a file's bytes or a
 * caller's arguments can make false is an error status, never an assert.
 */
#ifndef CG_CORE_ASSERT_H
#define CG_CORE_ASSERT_H

/* Prints "convgate: internal error: file:line: func: expr" and aborts. */
_Noreturn void cg_assert_fail(const char *expr, const char *file, int line, const char *func);

#if defined(CG_DEBUG)
#define CG_ASSERT(x) ((x) ? (void)0 : cg_assert_fail(#x, __FILE__, __LINE__, __func__))
#define ALWAYS(x) ((x) ? 1 : (cg_assert_fail(#x, __FILE__, __LINE__, __func__), 0))
#define NEVER(x) ((x) ? (cg_assert_fail(#x, __FILE__, __LINE__, __func__), 1) : 0)
#elif defined(CG_COVERAGE)
#define CG_ASSERT(x) ((void)0)
#define ALWAYS(x) (1)
#define NEVER(x) (0)
#else
#define CG_ASSERT(x) ((void)0)
#define ALWAYS(x) (!!(x))
#define NEVER(x) (!!(x))
#endif

#endif
