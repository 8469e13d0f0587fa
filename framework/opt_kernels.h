/*
 * framework/opt_kernels.h: the interface of the fused optimizer update kernels that each
 * device backend provides (framework/cpu/k_optim.c for the CPU; a CUDA backend fills the
 * same table and updates a whole list of tensors in one launch). A backend points its
 * devices' tfl__device.opt_kernels at its table; optim/apply.c computes the scalars on the
 * host and calls the table of the variables' device, so a new backend needs no change in
 * optim/. What each update does, element by element, is framework/opt_elems.h's, which every
 * backend compiles. The framework's private interface (tfl_framework_private).
 *
 * Clipping by norm (clip_norm, global_clip_norm) without host synchronisation: a device whose
 * table has sumsq_device and clip_scales_device keeps the sums of squares in a small device
 * buffer (from its caching allocator), turns them into the gradient scales there with
 * tfl__opt_clip_scales's formula, and the apply kernels read each tensor's scale through
 * tfl__opt_tensor.gscale_at. optim/apply.c takes that path when every gradient of the apply
 * is on one such device; otherwise (the CPU, mixed devices) sumsq gives the sums to the host.
 *
 * The step counters stay on the host (int64 scalars on CPU:0 that optim/ owns): the schedule,
 * Adam's bias corrections and every other step-dependent scalar are computed there in double
 * and passed to the kernels by value, which needs no synchronisation since no device value is
 * read (framework/cuda/README.md says what a device counter would take).
 */
#ifndef TFL_OPT_KERNELS_H
#define TFL_OPT_KERNELS_H

#include "core_api/module_api.h" /* tfl__device as a handle */

#include <math.h>

#include "opt_elems.h" /* the kernels, tfl__opt_tensor and tfl__opt_hyper */

struct tfl__opt_clip;

/** A device's optimizer kernels. */
typedef struct tfl__opt_kernels {
    /* Updates the n tensors in place (any kernel; t[i].p, .g, .s of `dtype`). */
    tfl_status (*apply)(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                        const tfl__opt_tensor *t, const tfl__opt_hyper *h);
    /* out[i] = Σ g² of t[i] (g times gscale not applied), in double. */
    tfl_status (*sumsq)(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                        const tfl__opt_tensor *t, double *out);
    uint32_t dtypes; /* 1u << dtype it updates */
    /* ---- optional: clipping without host synchronisation (both or neither) ---- */
    /* sums[i] = Σ g² of t[i] in double, like sumsq, but `sums` is in the device's memory and
     * the call only enqueues the work (no copy to the host, no wait). */
    tfl_status (*sumsq_device)(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                               const tfl__opt_tensor *t, double *sums);
    /* In the device's memory, replaces sums[0..n) by the gradient scales of tfl__opt_clip_scales
     * (the same operations in double, IEEE sqrt and division), enqueued without waiting. */
    tfl_status (*clip_scales_device)(tfl_ctx *ctx, tfl__device *dev, int n, double *sums,
                                     const struct tfl__opt_clip *clip);
} tfl__opt_kernels;

/** How clipping by norm turns sums of squares into gradient scales. */
typedef struct tfl__opt_clip {
    double c;          /* clip_norm, or global_clip_norm (> 0) */
    bool per_variable; /* clip_norm: each tensor by its own norm; else by the global norm */
    bool tf;           /* TENSORFLOW: c / max(norm, c); PYTORCH: c / (norm + 1e-6) */
} tfl__opt_clip;

/**
 * The reference formula (the host's, and every device's): total = Σ sums[i] in index order
 * from 0; norm_i = √(per_variable ? sums[i] : total); s = tf ? c / (norm_i > c ? norm_i : c)
 * : c / (norm_i + 1e-6); scale[i] = s < 1 ? s : 1. A NaN norm gives 1 (the comparison is
 * false: the update then carries the NaN gradient as it is), an infinite one 0. scale may be
 * sums (in place).
 */
static inline void tfl__opt_clip_scales(const tfl__opt_clip *k, int n, const double *sums,
                                        double *scale)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += sums[i];
    for (int i = 0; i < n; i++) {
        double norm = sqrt(k->per_variable ? sums[i] : total);
        double s = k->tf ? k->c / (norm > k->c ? norm : k->c) : k->c / (norm + 1e-6);
        scale[i] = s < 1.0 ? s : 1.0;
    }
}

#endif /* TFL_OPT_KERNELS_H */
