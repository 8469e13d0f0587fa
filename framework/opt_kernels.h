/*
 * framework/opt_kernels.h: the interface of the fused optimizer update kernels that each
 * device backend provides (framework/cpu/k_optim.c for the CPU; a CUDA backend fills the
 * same table and updates a whole list of tensors in one launch). A backend points its
 * devices' tfl__device.opt_kernels at its table; optim/apply.c computes the scalars on the
 * host and calls the table of the variables' device, so a new backend needs no change in
 * optim/. The framework's private interface (tfl_framework_private).
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

#include "internal.h"

#include <math.h>

#define TFL_OPT_MAX_SLOTS 3

/* The optimizer kinds, with the values of tfl_optimizer_kind (optim.h, which sits above the
 * framework; optim/apply.c checks that they agree). */
enum {
    TFL__OPT_SGD = 1,
    TFL__OPT_ADAM,
    TFL__OPT_ADAMW,
    TFL__OPT_RMSPROP,
    TFL__OPT_ADAGRAD,
};

/* ---- the kernels' view of one apply ------------------------------------------------------- */

/** One variable of an apply, as its device kernel sees it: contiguous data pointers. */
typedef struct tfl__opt_tensor {
    void *p;                    /* the variable */
    const void *g;              /* its gradient */
    void *s[TFL_OPT_MAX_SLOTS]; /* its slots, in the kind's slot order */
    int64_t n;                  /* elements */
    double gscale;              /* the gradient is multiplied by this (norm clipping); 1: off */
    const double *gscale_at;    /* non-NULL: the scale is *gscale_at instead, a double in the
                                   device's memory (clip_scales_device's result), read by the
                                   kernel; gscale is then unused */
    double a, b;                /* Adam: the step factor and root scale of this variable's t */
    bool first;                 /* the variable's first update (torch SGD: b <- g) */
} tfl__opt_tensor;

/**
 * The scalars of one apply, computed on the host in double from the options, the schedule
 * and the step; the kernels only do elementwise arithmetic with them (see optim.h for the
 * formulas each set of constants implements).
 *   every kind:  g' = clamp(g·gscale, −clip, clip) + l2·p;  p ← p − decay·p before the update.
 *   SGD:      b ← mu·b + cg·g' (first: mu_first, cg_first); p ← p + sb·b + sg·g'
 *             (no momentum: p ← p − lr·g').
 *   Adam:     m ← m + c1·(g' − m); v ← v + c2·(g'² − v); v̂ = max(v̂, v) (amsgrad);
 *             p ← p − a·m / (b·√v̂ + eps), a and b per tensor (its own t under PYTORCH).
 *   RMSprop:  v ← rho·v + c2·g'²; centered: m ← rho·m + c2·g', d = v − m²; r = k1·g'/√(d + eps)
 *             (eps_inside) or k1·g'/(√d + eps); momentum: b ← mu·b + r, p ← p − k2·b;
 *             else p ← p − k2·r.
 *   Adagrad:  s ← s + g'²; p ← p − lr·g'/√(s + eps) (eps_inside) or lr·g'/(√s + eps).
 */
typedef struct tfl__opt_hyper {
    int kind; /* TFL__OPT_* (the values of tfl_optimizer_kind) */
    double lr, decay, l2, clip;
    bool momentum, amsgrad, centered, eps_inside;
    double mu, cg, mu_first, cg_first, sb, sg; /* SGD */
    double c1, c2, eps;                        /* Adam (c2, eps: RMSprop, Adagrad too) */
    double rho, k1, k2;                        /* RMSprop */
} tfl__opt_hyper;

struct tfl__opt_clip;

/** A device's optimizer kernels. */
typedef struct tfl__opt_kernels {
    /* Updates the n tensors in place (any kind; t[i].p, .g, .s of `dtype`). */
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
