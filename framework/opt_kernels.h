/*
 * framework/opt_kernels.h: the interface of the fused optimizer update kernels that each
 * device backend provides (framework/cpu/k_optim.c for the CPU; a CUDA backend fills the
 * same table and updates a whole list of tensors in one launch). A backend points its
 * devices' tfl__device.opt_kernels at its table; optim/apply.c computes the scalars on the
 * host and calls the table of the variables' device, so a new backend needs no change in
 * optim/. The framework's private interface (tfl_framework_private).
 */
#ifndef TFL_OPT_KERNELS_H
#define TFL_OPT_KERNELS_H

#include "internal.h"

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
    void *p;                       /* the variable */
    const void *g;                 /* its gradient */
    void *s[TFL_OPT_MAX_SLOTS];    /* its slots, in the kind's slot order */
    int64_t n;                     /* elements */
    double gscale;                 /* the gradient is multiplied by this (norm clipping); 1: off */
    double a, b;                   /* Adam: the step factor and root scale of this variable's t */
    bool first;                    /* the variable's first update (torch SGD: b <- g) */
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
    int kind;                      /* TFL__OPT_* (the values of tfl_optimizer_kind) */
    double lr, decay, l2, clip;
    bool momentum, amsgrad, centered, eps_inside;
    double mu, cg, mu_first, cg_first, sb, sg; /* SGD */
    double c1, c2, eps;                        /* Adam (c2, eps: RMSprop, Adagrad too) */
    double rho, k1, k2;                        /* RMSprop */
} tfl__opt_hyper;

/** A device's optimizer kernels. */
typedef struct tfl__opt_kernels {
    /* Updates the n tensors in place (any kind; t[i].p, .g, .s of `dtype`). */
    tfl_status (*apply)(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                        const tfl__opt_tensor *t, const tfl__opt_hyper *h);
    /* out[i] = Σ g² of t[i] (g times gscale not applied), in double. */
    tfl_status (*sumsq)(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                        const tfl__opt_tensor *t, double *out);
    uint32_t dtypes; /* 1u << dtype it updates */
} tfl__opt_kernels;

#endif /* TFL_OPT_KERNELS_H */
