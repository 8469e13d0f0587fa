/*
 * framework/opt_elems.h: the fused optimizer updates, one element at a time, written once for
 * every device. The first part (compiled once, C or C++) lists the update kernels with their
 * constants and generates the structs the devices share: tfl__opt_tensor (one tensor of an
 * apply) and tfl__opt_hyper (the scalars of an apply), which the CPU (framework/cpu/k_optim.c)
 * and CUDA (framework/cuda/k_optim.cu, via cuda_optim.c, no copy) read as they are. The second
 * part is a template, included once per dtype with
 *   TFL_OPT_T         the element type (float, double),
 *   TFL_OPT_SFX       its suffix in names (f32, f64),
 *   TFL_OPT_SQRT(x)   a correctly rounded square root of a TFL_OPT_T,
 *   TFL_OPT_DIV(a, b) a correctly rounded division,
 *   TFL_OPT_HD        the functions' qualifiers (host: static inline, always inlined; CUDA:
 *                     __device__ __forceinline__);
 * it defines for each kernel NAME a struct tfl__opk_NAME_k_SFX of its constants in TFL_OPT_T,
 * tfl__opk_NAME_load_SFX (fills it from the hyper and the tensor) and tfl__opk_NAME_elem_SFX
 * (updates element i in place). The device files only loop and launch.
 *
 * Arithmetic: the same operations in the same order on every device, in the variable's dtype;
 * the CPU build (-std=c11) and k_optim.cu (--fmad=false) contract no multiply-add into an FMA,
 * and square roots and divisions are IEEE, so the devices agree bit for bit given the same
 * gradient scale (tests/backend/test_backend_optim.c).
 *
 * A new update kernel NAME: add X(NAME, switches) to TFL__OPT_KERNELS, its constant lists
 * TFL__OPK_NAME_APPLY / TFL__OPK_NAME_TENSOR, and its element function in the template part.
 * optim/kinds.c computes the constants on the host (in double) and picks the kernel per
 * optimizer.
 */
#ifndef TFL_OPT_ELEMS_H
#define TFL_OPT_ELEMS_H

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#define TFL_OPT_MAX_SLOTS 3
#define TFL_OPT_TENSOR_CONSTS 3 /* per-tensor constants: the most any kernel has */

/*
 * The update kernels: X(NAME, switches), `switches` the number of boolean switches of the
 * kernel (tfl__opt_hyper.flags bits 0 .. switches-1; the CPU builds one loop per combination).
 * Every kernel starts from
 *   g' = clamp(g·gscale, −clip, clip) + l2·p,   p_d = p − decay·p
 * and then (s0, s1, s2: the tensor's slots in order; lr, and every constant, in the dtype):
 *   sgd      [momentum]  b ← mu·b + cg·g'; p ← p_d + (sb·b + sg·g');  off: p ← p_d − lr·g'
 *   adam     [amsgrad]   m ← m + c1·(g' − m); v ← v + c2·(g'² − v); on: v̂ ← max(v̂, v), v = v̂;
 *                        p ← p_d − a·m / (b·√v + eps)
 *   rmsprop  [momentum, eps_inside, centered]  v ← rho·v + c2·g'²; centered: a ← rho·a + c2·g',
 *                        d = v − a², else d = v; r = k1·g' / √(d + eps) (eps_inside) or
 *                        k1·g' / (√d + eps); momentum: b ← mu·b + r, p ← p_d − k2·b; else
 *                        p ← p_d − k2·r
 *   adagrad  [eps_inside] s ← s + g'²; p ← p_d − lr·g' / √(s + eps) (eps_inside) or
 *                        lr·g' / (√s + eps)
 *   nadam    []          m ← m + c1·(g' − m); v ← v + c2·(g'² − v);
 *                        p ← p_d − (cg·g' + cm·m) / (b·√v + eps)
 *   adamax   []          m ← m + c1·(g' − m); u ← max(b2·u, |g'| + ei); p ← p_d − a·m / (u + eo)
 */
#define TFL__OPT_KERNELS(X)                                                                        \
    X(sgd, 1)                                                                                      \
    X(adam, 1)                                                                                     \
    X(rmsprop, 3)                                                                                  \
    X(adagrad, 1)                                                                                  \
    X(nadam, 0)                                                                                    \
    X(adamax, 0)

/* Each kernel's constants: APPLY, the same for every tensor of an apply (tfl__opt_hyper.c.NAME),
 * and TENSOR, per tensor (tfl__opt_tensor.k[TFL__OPK_NAME_field]: what depends on the
 * tensor's own step). C(NAME, field); APPLY must not be empty. */
#define TFL__OPK_sgd_APPLY(C, n) C(n, sb) C(n, sg)
#define TFL__OPK_sgd_TENSOR(C, n) C(n, mu) C(n, cg)
#define TFL__OPK_adam_APPLY(C, n) C(n, c1) C(n, c2) C(n, eps)
#define TFL__OPK_adam_TENSOR(C, n) C(n, a) C(n, b)
#define TFL__OPK_rmsprop_APPLY(C, n) C(n, rho) C(n, c2) C(n, eps) C(n, k1) C(n, k2) C(n, mu)
#define TFL__OPK_rmsprop_TENSOR(C, n)
#define TFL__OPK_adagrad_APPLY(C, n) C(n, eps)
#define TFL__OPK_adagrad_TENSOR(C, n)
#define TFL__OPK_nadam_APPLY(C, n) C(n, c1) C(n, c2) C(n, eps)
#define TFL__OPK_nadam_TENSOR(C, n) C(n, cg) C(n, cm) C(n, b)
#define TFL__OPK_adamax_APPLY(C, n) C(n, c1) C(n, b2) C(n, ei) C(n, eo)
#define TFL__OPK_adamax_TENSOR(C, n) C(n, a)

/* ---- generated: kernel ids, per-tensor constant indices, the shared structs --------------- */

#define TFL__OPK_ID(n, nf) TFL__OPK_##n,
enum { TFL__OPK_NONE = 0, TFL__OPT_KERNELS(TFL__OPK_ID) TFL__OPK_COUNT };
#undef TFL__OPK_ID

#define TFL__OPK_TIDX(n, f) TFL__OPK_##n##_##f,
#define TFL__OPK_TENUM(n, nf)                                                                      \
    enum { TFL__OPK_##n##_TENSOR(TFL__OPK_TIDX, n) TFL__OPK_##n##__tensor_consts };
TFL__OPT_KERNELS(TFL__OPK_TENUM)
#undef TFL__OPK_TENUM
#undef TFL__OPK_TIDX

#define TFL__OPK_DFIELD(n, f) double f;
#define TFL__OPK_APPLY_MEMBER(n, nf) struct { TFL__OPK_##n##_APPLY(TFL__OPK_DFIELD, n) } n;

/** One tensor of an apply, as every device's kernel sees it: contiguous data pointers. */
typedef struct tfl__opt_tensor {
    void *p;                    /* the variable */
    const void *g;              /* its gradient */
    void *s[TFL_OPT_MAX_SLOTS]; /* its slots, in the optimizer's slot order */
    int64_t n;                  /* elements */
    double gscale;              /* the gradient is multiplied by this (norm clipping); 1: off */
    const double *gscale_at;    /* non-NULL: the scale is *gscale_at instead, a double in the
                                   device's memory (clip_scales_device's result), read by the
                                   kernel; gscale is then unused */
    double k[TFL_OPT_TENSOR_CONSTS]; /* the kernel's TENSOR constants, k[TFL__OPK_NAME_field] */
} tfl__opt_tensor;

/**
 * The scalars of one apply, computed on the host in double from the options, the schedule and
 * the step (optim/kinds.c); the kernels only do elementwise arithmetic with them.
 */
typedef struct tfl__opt_hyper {
    int kernel;     /* TFL__OPK_* */
    unsigned flags; /* the kernel's switches */
    double lr, decay, l2, clip;
    union {
        TFL__OPT_KERNELS(TFL__OPK_APPLY_MEMBER)
    } c; /* the kernel's APPLY constants */
} tfl__opt_hyper;

#undef TFL__OPK_APPLY_MEMBER
#undef TFL__OPK_DFIELD

#define TFL__OPK_CHECK(n, nf)                                                                      \
    typedef char tfl__opk_##n##_fits                                                               \
        [(TFL__OPK_##n##__tensor_consts <= TFL_OPT_TENSOR_CONSTS && (nf) <= 3) ? 1 : -1];
/* at most TFL_OPT_TENSOR_CONSTS per-tensor constants and 3 switches per kernel */
TFL__OPT_KERNELS(TFL__OPK_CHECK)
#undef TFL__OPK_CHECK

/* names of the template part: tfl__opk_<kernel>_<what>_<sfx> */
#define TFL__OPK_CAT_(a, b, c) a##b##_##c
#define TFL__OPK_CAT(a, b, c) TFL__OPK_CAT_(a, b, c)
#define TFL__OPK_FN(what) TFL__OPK_CAT(tfl__opk_, what, TFL_OPT_SFX)

#endif /* TFL_OPT_ELEMS_H */

/* ================================ the template (one dtype) ================================= */
#ifdef TFL_OPT_T

#ifdef __cplusplus
#define TFL__OPK_RESTRICT __restrict__
#else
#define TFL__OPK_RESTRICT restrict
#endif

/* the constants of each kernel in the dtype: the common four, then APPLY, then TENSOR */
#define TFL__OPK_TFIELD(n, f) TFL_OPT_T f;
#define TFL__OPK_KSTRUCT(n, nf)                                                                    \
    struct TFL__OPK_FN(n##_k) {                                                                    \
        TFL_OPT_T gs, clip, l2, decay, lr;                                                         \
        TFL__OPK_##n##_APPLY(TFL__OPK_TFIELD, n) TFL__OPK_##n##_TENSOR(TFL__OPK_TFIELD, n)         \
    };
TFL__OPT_KERNELS(TFL__OPK_KSTRUCT)
#undef TFL__OPK_KSTRUCT
#undef TFL__OPK_TFIELD

#define TFL__OPK_LOAD_A(n, f) k->f = (TFL_OPT_T)h->c.n.f;
#define TFL__OPK_LOAD_T(n, f) k->f = (TFL_OPT_T)t->k[TFL__OPK_##n##_##f];
#define TFL__OPK_LOAD(n, nf)                                                                       \
    TFL_OPT_HD void TFL__OPK_FN(n##_load)(struct TFL__OPK_FN(n##_k) * k, const tfl__opt_hyper *h,  \
                                          const tfl__opt_tensor *t)                                \
    {                                                                                              \
        k->gs = (TFL_OPT_T)(t->gscale_at ? *t->gscale_at : t->gscale);                             \
        k->clip = (TFL_OPT_T)h->clip;                                                              \
        k->l2 = (TFL_OPT_T)h->l2;                                                                  \
        k->decay = (TFL_OPT_T)h->decay;                                                            \
        k->lr = (TFL_OPT_T)h->lr;                                                                  \
        TFL__OPK_##n##_APPLY(TFL__OPK_LOAD_A, n) TFL__OPK_##n##_TENSOR(TFL__OPK_LOAD_T, n)         \
    }
TFL__OPT_KERNELS(TFL__OPK_LOAD)
#undef TFL__OPK_LOAD
#undef TFL__OPK_LOAD_A
#undef TFL__OPK_LOAD_T

/* Each kernel's update of one element: g is g', pd is p_d; returns the new p. s0..s2 are the
 * slots (unused ones may be NULL and are not read), f the switches. */
#define TFL__OPK_ARGS(n)                                                                           \
    TFL_OPT_T pd, TFL_OPT_T g, TFL_OPT_T *TFL__OPK_RESTRICT s0, TFL_OPT_T *TFL__OPK_RESTRICT s1,   \
        TFL_OPT_T *TFL__OPK_RESTRICT s2, int64_t i, const struct TFL__OPK_FN(n##_k) *k,            \
        const unsigned f

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(sgd)(TFL__OPK_ARGS(sgd))
{
    (void)s1, (void)s2;
    if (!(f & 1u)) return pd - k->lr * g;
    TFL_OPT_T b = k->mu * s0[i] + k->cg * g;
    s0[i] = b;
    return pd + (k->sb * b + k->sg * g);
}

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(adam)(TFL__OPK_ARGS(adam))
{
    const TFL_OPT_T mo = s0[i], vo = s1[i];
    TFL_OPT_T m = mo + k->c1 * (g - mo);
    TFL_OPT_T v = vo + k->c2 * (g * g - vo);
    s0[i] = m;
    s1[i] = v;
    if (f & 1u) { /* amsgrad */
        const TFL_OPT_T ho = s2[i];
        v = ho > v ? ho : v;
        s2[i] = v;
    }
    return pd - TFL_OPT_DIV(k->a * m, k->b * TFL_OPT_SQRT(v) + k->eps);
}

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(rmsprop)(TFL__OPK_ARGS(rmsprop))
{
    TFL_OPT_T v = k->rho * s0[i] + k->c2 * (g * g);
    s0[i] = v;
    TFL_OPT_T d = v;
    if (f & 4u) { /* centered */
        TFL_OPT_T a = k->rho * s1[i] + k->c2 * g;
        s1[i] = a;
        d = v - a * a;
    }
    TFL_OPT_T r = (f & 2u) ? TFL_OPT_DIV(k->k1 * g, TFL_OPT_SQRT(d + k->eps)) /* eps_inside */
                           : TFL_OPT_DIV(k->k1 * g, TFL_OPT_SQRT(d) + k->eps);
    if (f & 1u) { /* momentum */
        r = k->mu * s2[i] + r;
        s2[i] = r;
    }
    return pd - k->k2 * r;
}

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(adagrad)(TFL__OPK_ARGS(adagrad))
{
    (void)s1, (void)s2;
    TFL_OPT_T s = s0[i] + g * g;
    s0[i] = s;
    return pd - TFL_OPT_DIV(k->lr * g, (f & 1u) ? TFL_OPT_SQRT(s + k->eps) /* eps_inside */
                                                : TFL_OPT_SQRT(s) + k->eps);
}

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(nadam)(TFL__OPK_ARGS(nadam))
{
    (void)s2, (void)f;
    const TFL_OPT_T mo = s0[i], vo = s1[i];
    TFL_OPT_T m = mo + k->c1 * (g - mo);
    TFL_OPT_T v = vo + k->c2 * (g * g - vo);
    s0[i] = m;
    s1[i] = v;
    return pd - TFL_OPT_DIV(k->cg * g + k->cm * m, k->b * TFL_OPT_SQRT(v) + k->eps);
}

TFL_OPT_HD TFL_OPT_T TFL__OPK_FN(adamax)(TFL__OPK_ARGS(adamax))
{
    (void)s2, (void)f;
    const TFL_OPT_T mo = s0[i], uo = k->b2 * s1[i], ga = (g < 0 ? -g : g) + k->ei;
    TFL_OPT_T m = mo + k->c1 * (g - mo);
    TFL_OPT_T u = uo > ga ? uo : ga;
    s0[i] = m;
    s1[i] = u;
    return pd - TFL_OPT_DIV(k->a * m, u + k->eo);
}

/* element i of a tensor: g', p_d, then the kernel */
#define TFL__OPK_ELEM(n, nf)                                                                       \
    TFL_OPT_HD void TFL__OPK_FN(n##_elem)(                                                         \
        TFL_OPT_T *TFL__OPK_RESTRICT p, const TFL_OPT_T *TFL__OPK_RESTRICT gr,                     \
        TFL_OPT_T *TFL__OPK_RESTRICT s0, TFL_OPT_T *TFL__OPK_RESTRICT s1,                          \
        TFL_OPT_T *TFL__OPK_RESTRICT s2, int64_t i, const struct TFL__OPK_FN(n##_k) *k,            \
        const unsigned f)                                                                          \
    {                                                                                              \
        TFL_OPT_T g = gr[i] * k->gs;                                                               \
        g = g > k->clip ? k->clip : g < -k->clip ? -k->clip : g;                                   \
        const TFL_OPT_T pi = p[i];                                                                 \
        g += k->l2 * pi;                                                                           \
        p[i] = TFL__OPK_FN(n)(pi - k->decay * pi, g, s0, s1, s2, i, k, f);                         \
    }
TFL__OPT_KERNELS(TFL__OPK_ELEM)
#undef TFL__OPK_ELEM
#undef TFL__OPK_ARGS
#undef TFL__OPK_RESTRICT

#endif /* TFL_OPT_T */
