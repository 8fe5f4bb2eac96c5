/* Shape arithmetic and typed element access shared by every kernel. */
#include <math.h>
#include <string.h>

#include "run/kernel.h"

bool cg_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                         int64_t *out)
{
    int r = ra > rb ? ra : rb;
    if (r > CG_MAX_RANK)
        return false;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            out[i] = da;
        else if (da == 1)
            out[i] = db;
        else
            return false;
    }
    *rout = r;
    return true;
}

void cg_broadcast_strides(int rin, const int64_t *in, int rout, const int64_t *out,
                          int64_t *strides)
{
    int64_t s = 1;
    for (int i = rout - 1; i >= 0; i--) {
        int j = i - (rout - rin);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = (in[j] == 1 && out[i] != 1) ? 0 : s;
        /* only an empty input overflows here; its strides address nothing */
        s = in[j] != 0 && s > INT64_MAX / in[j] ? 0 : s * in[j];
    }
}

bool cg_normalize_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return false;
    *out = axis < 0 ? axis + rank : axis;
    return true;
}

