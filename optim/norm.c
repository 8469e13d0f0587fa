/*
 * optim/norm.c: tfl_global_norm, the L2 norm of a list of gradients together, through the
 * device's sum-of-squares kernel (the one norm clipping uses): one vectorized pass over
 * each gradient, no temporary the size of a parameter for contiguous float32/float64.
 */
#include "optim_internal.h"

#include <math.h>

tfl_status tfl_global_norm(tfl_ctx *ctx, int n, const tfl_tensor *const *tensors, double *norm,
                           int *first_nonfinite)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, n >= 0 && (tensors || n == 0), TFL_INVALID_ARGUMENT,
              "tfl_global_norm: %d tensors given %s", n, n < 0 ? "(a negative count)"
                                                             : "without an array");
    TFL_CHECK(ctx, norm, TFL_INVALID_ARGUMENT, "tfl_global_norm: norm is NULL");
    for (int i = 0; i < n; i++) {
        const tfl_tensor *t = tensors[i];
        if (!t) continue; /* an unconnected variable's gradient */
        if (!tfl__tensor_alive(t, "tfl_global_norm")) return TFL_MISUSE;
        TFL_CHECK(ctx, t->ctx == ctx, TFL_MISUSE,
                  "tfl_global_norm: tensor %d belongs to another context", i);
        TFL_CHECK(ctx, tfl_dtype_is_floating((tfl_dtype)t->dtype), TFL_INVALID_ARGUMENT,
                  "tfl_global_norm: tensor %d has dtype %s; expected a floating dtype", i,
                  tfl_dtype_name((tfl_dtype)t->dtype));
        if (!tfl__check_readable(ctx, "tfl_global_norm", t)) return tfl_ctx_status(ctx);
    }
    TFL_TRY(tfl_frame_push(ctx)); /* owns the contiguous float copies of other gradients */
    double total = 0;
    int bad = -1;
    tfl_status st = TFL_OK;
    for (int i = 0; i < n && st == TFL_OK; i++) {
        const tfl_tensor *t = tensors[i];
        if (!t || t->numel == 0) continue;
        tfl__device *dev = tfl__device_of(t);
        const tfl__opt_kernels *k = tfl__dev_opt_kernels(dev);
        tfl_dtype dt = (tfl_dtype)t->dtype;
        if (!k || !(k->dtypes & (1u << dt)) || !tfl_tensor_is_contiguous(t)) {
            /* half precision, a strided view, or a device without the kernel: float32 (or
             * float64) contiguous on the CPU */
            tfl_dtype to = dt == TFL_DTYPE_FLOAT64 ? dt : TFL_DTYPE_FLOAT32;
            tfl_tensor *c = tfl_cast(ctx, t, to);
            if (c && (tfl__device_of(c) != tfl__cpu(ctx) || !tfl_tensor_is_contiguous(c)))
                c = tfl__tensor_copy_to(ctx, c, tfl__cpu(ctx)); /* frame-owned */
            if (!c) {
                st = tfl_ctx_status(ctx);
                break;
            }
            t = c;
            dev = tfl__cpu(ctx);
            k = tfl__dev_opt_kernels(dev);
        }
        tfl__opt_tensor ot = {.g = tfl__tensor_data(t), .n = t->numel, .gscale = 1};
        double s = 0;
        st = k->sumsq(ctx, dev, (tfl_dtype)t->dtype, 1, &ot, &s);
        if (st == TFL_OK && bad < 0 && !isfinite(s)) bad = i;
        total += s;
    }
    tfl_frame_pop(ctx);
    if (st != TFL_OK) return st;
    *norm = sqrt(total);
    if (first_nonfinite) *first_nonfinite = bad;
    return TFL_OK;
}
