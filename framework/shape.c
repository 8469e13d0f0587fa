/*
 * framework/shape.c: shape arithmetic shared by ops: element counts, row-major strides,
 * NumPy broadcasting and the Python-style shape text used in messages.
 */
#include "internal.h"

#include <stdio.h>

int64_t tfl__numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

char *tfl__shape_str(int rank, const int64_t *shape, char *buf, size_t size)
{
    size_t len = 0;
    int w = snprintf(buf, size, "(");
    len = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < rank && len < size; i++) {
        w = snprintf(buf + len, size - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
    if (len < size) snprintf(buf + len, size - len, rank == 1 ? ",)" : ")");
    return buf;
}

void tfl__contiguous_strides(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

bool tfl__broadcast_shapes(int ra, const int64_t *sa, int rb, const int64_t *sb, int *rout,
                           int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : sa[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : sb[i - (r - rb)];
        if (da != db && da != 1 && db != 1) return false;
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return true;
}

bool tfl__same_shape(int ra, const int64_t *a, int rb, const int64_t *b)
{
    if (ra != rb) return false;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i]) return false;
    return true;
}
