/* The one place an internal invariant failure stops the process. */
#include <stdio.h>
#include <stdlib.h>

#include "core/assert.h"

_Noreturn void cg_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "convgate: internal error: %s:%d: %s: %s\n", file, line, func, expr);
    fflush(stderr);
    abort();
}
