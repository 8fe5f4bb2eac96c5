/* Status names and the first-error-wins error record. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "convgate/status.h"

static const char *const status_names[] = {
#define CG_STATUS_STR(name, str) str,
    CG_STATUS_LIST(CG_STATUS_STR)
#undef CG_STATUS_STR
};
_Static_assert(sizeof status_names / sizeof status_names[0] == CG_STATUS_COUNT,
               "status name table out of sync");

const char *cg_status_name(cg_status status)
{
    if ((unsigned)status >= CG_STATUS_COUNT)
        return "unknown";
    return status_names[status];
}

void cg_error_clear(cg_error *err)
{
    if (err) {
        err->status = CG_OK;
        err->msg[0] = '\0';
    }
}

cg_status cg_error_set(cg_error *err, cg_status status, const char *fmt, ...)
{
    if (!err || err->status != CG_OK || status == CG_OK)
        return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}

void cg_error_prefix(cg_error *err, const char *fmt, ...)
{
    if (!err || err->status == CG_OK)
        return;
    char prefix[CG_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t plen = (size_t)n < sizeof prefix ? (size_t)n : sizeof prefix - 1;
    size_t mlen = strlen(err->msg);
    if (plen + mlen >= sizeof err->msg)
        mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
}
