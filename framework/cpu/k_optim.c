/*
 * framework/cpu/k_optim.c: the CPU's fused optimizer updates (opt_kernels.h's table). One pass per tensor reads the
 * gradient once and writes the variable and its slots in place: no temporaries, no
 * allocation. A list of tensors is one flat range of elements split evenly over the
 * context's threads (OpenMP), so one tensor of 1e7 and a hundred of 1e5 both use every
 * thread. The inner loops are plain C that the compiler vectorizes; on x86-64 each is
 * built for the baseline, AVX2 (x86-64-v3) and AVX-512 (x86-64-v4), picked at load time.
 * Square roots and divisions are IEEE (correctly rounded) at every width, so the results
 * are the same whichever version runs.
 */
#include "cpu.h"
#include "opt_kernels.h"

#include <math.h>
#include <omp.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) &&         \
    !defined(TFL_NO_CLONES)
#define TFL_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TFL_CLONES
#endif

/** Updates elements [lo, hi) of one tensor. */
typedef void (*chunk_fn)(const tfl__opt_tensor *t, int64_t lo, int64_t hi, const tfl__opt_hyper *h);

/* g' = clamp(g·gscale, −clip, clip) + l2·p: the gradient every kind starts from. */
#define GRAD(T, i)                                                                                 \
    T gi = g[i] * gs;                                                                              \
    gi = gi > clip ? clip : gi < -clip ? -clip : gi;                                               \
    gi += l2 * p[i]

#define COMMON(T)                                                                                  \
    T *restrict p = (T *)t->p;                                                                     \
    const T *restrict g = (const T *)t->g;                                                         \
    const T gs = (T)(t->gscale_at ? *t->gscale_at : t->gscale), clip = (T)h->clip,             \
            l2 = (T)h->l2, decay = (T)h->decay

/* ---- SGD ------------------------------------------------------------------------------------ */

#define DEFINE_SGD(NAME, T)                                                                        \
    TFL_CLONES static void NAME(const tfl__opt_tensor *t, int64_t lo, int64_t hi,                  \
                                const tfl__opt_hyper *h)                                           \
    {                                                                                              \
        COMMON(T);                                                                                 \
        if (!h->momentum) {                                                                        \
            const T lr = (T)h->lr;                                                                 \
            for (int64_t i = lo; i < hi; i++) {                                                    \
                GRAD(T, i);                                                                        \
                p[i] = (p[i] - decay * p[i]) - lr * gi;                                            \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        T *restrict b = (T *)t->s[0];                                                              \
        const T mu = (T)(t->first ? h->mu_first : h->mu),                                          \
                cg = (T)(t->first ? h->cg_first : h->cg);                                          \
        const T sb = (T)h->sb, sg = (T)h->sg;                                                      \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            GRAD(T, i);                                                                            \
            T bi = mu * b[i] + cg * gi;                                                            \
            b[i] = bi;                                                                             \
            p[i] = (p[i] - decay * p[i]) + (sb * bi + sg * gi);                                    \
        }                                                                                          \
    }

DEFINE_SGD(sgd_f32, float)
DEFINE_SGD(sgd_f64, double)

/* ---- Adam, AdamW --------------------------------------------------------------------------------
 */

#define DEFINE_ADAM(NAME, T, SQRT)                                                                 \
    TFL_CLONES static void NAME(const tfl__opt_tensor *t, int64_t lo, int64_t hi,                  \
                                const tfl__opt_hyper *h)                                           \
    {                                                                                              \
        COMMON(T);                                                                                 \
        T *restrict m = (T *)t->s[0], *restrict v = (T *)t->s[1], *restrict vh = (T *)t->s[2];     \
        const T c1 = (T)h->c1, c2 = (T)h->c2, a = (T)t->a, b = (T)t->b, eps = (T)h->eps;           \
        if (!h->amsgrad) {                                                                         \
            for (int64_t i = lo; i < hi; i++) {                                                    \
                GRAD(T, i);                                                                        \
                T mi = m[i] + c1 * (gi - m[i]);                                                    \
                T vi = v[i] + c2 * (gi * gi - v[i]);                                               \
                m[i] = mi;                                                                         \
                v[i] = vi;                                                                         \
                p[i] = (p[i] - decay * p[i]) - a * mi / (b * SQRT(vi) + eps);                      \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            GRAD(T, i);                                                                            \
            T mi = m[i] + c1 * (gi - m[i]);                                                        \
            T vi = v[i] + c2 * (gi * gi - v[i]);                                                   \
            T hi_ = vh[i] > vi ? vh[i] : vi;                                                       \
            m[i] = mi;                                                                             \
            v[i] = vi;                                                                             \
            vh[i] = hi_;                                                                           \
            p[i] = (p[i] - decay * p[i]) - a * mi / (b * SQRT(hi_) + eps);                         \
        }                                                                                          \
    }

DEFINE_ADAM(adam_f32, float, __builtin_sqrtf)
DEFINE_ADAM(adam_f64, double, __builtin_sqrt)

/* ---- RMSprop
 * ------------------------------------------------------------------------------------- */

/* The loop, inlined once per combination of its three switches so that each copy is
 * branch-free and vectorizes. */
#define DEFINE_RMSPROP(NAME, T, SQRT)                                                              \
    static inline __attribute__((always_inline)) void NAME##_loop(                                 \
        const tfl__opt_tensor *t, int64_t lo, int64_t hi, const tfl__opt_hyper *h,                 \
        const bool centered, const bool inside, const bool mom)                                    \
    {                                                                                              \
        COMMON(T);                                                                                 \
        T *restrict v = (T *)t->s[0], *restrict mg = (T *)t->s[1], *restrict b = (T *)t->s[2];     \
        const T rho = (T)h->rho, c2 = (T)h->c2, eps = (T)h->eps, k1 = (T)h->k1, k2 = (T)h->k2;     \
        const T mu = (T)h->mu;                                                                     \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            GRAD(T, i);                                                                            \
            T vi = rho * v[i] + c2 * (gi * gi);                                                    \
            v[i] = vi;                                                                             \
            T d = vi;                                                                              \
            if (centered) {                                                                        \
                T ai = rho * mg[i] + c2 * gi;                                                      \
                mg[i] = ai;                                                                        \
                d = vi - ai * ai;                                                                  \
            }                                                                                      \
            T r = inside ? k1 * gi / SQRT(d + eps) : k1 * gi / (SQRT(d) + eps);                    \
            if (mom) {                                                                             \
                r = mu * b[i] + r;                                                                 \
                b[i] = r;                                                                          \
            }                                                                                      \
            p[i] = (p[i] - decay * p[i]) - k2 * r;                                                 \
        }                                                                                          \
    }                                                                                              \
    TFL_CLONES static void NAME(const tfl__opt_tensor *t, int64_t lo, int64_t hi,                  \
                                const tfl__opt_hyper *h)                                           \
    {                                                                                              \
        switch ((h->centered ? 4 : 0) | (h->eps_inside ? 2 : 0) | (h->momentum ? 1 : 0)) {         \
        case 0:                                                                                    \
            NAME##_loop(t, lo, hi, h, false, false, false);                                        \
            break;                                                                                 \
        case 1:                                                                                    \
            NAME##_loop(t, lo, hi, h, false, false, true);                                         \
            break;                                                                                 \
        case 2:                                                                                    \
            NAME##_loop(t, lo, hi, h, false, true, false);                                         \
            break;                                                                                 \
        case 3:                                                                                    \
            NAME##_loop(t, lo, hi, h, false, true, true);                                          \
            break;                                                                                 \
        case 4:                                                                                    \
            NAME##_loop(t, lo, hi, h, true, false, false);                                         \
            break;                                                                                 \
        case 5:                                                                                    \
            NAME##_loop(t, lo, hi, h, true, false, true);                                          \
            break;                                                                                 \
        case 6:                                                                                    \
            NAME##_loop(t, lo, hi, h, true, true, false);                                          \
            break;                                                                                 \
        default:                                                                                   \
            NAME##_loop(t, lo, hi, h, true, true, true);                                           \
            break;                                                                                 \
        }                                                                                          \
    }

DEFINE_RMSPROP(rmsprop_f32, float, __builtin_sqrtf)
DEFINE_RMSPROP(rmsprop_f64, double, __builtin_sqrt)

/* ---- Adagrad
 * ------------------------------------------------------------------------------------- */

#define DEFINE_ADAGRAD(NAME, T, SQRT)                                                              \
    static inline __attribute__((always_inline)) void NAME##_loop(                                 \
        const tfl__opt_tensor *t, int64_t lo, int64_t hi, const tfl__opt_hyper *h,                 \
        const bool inside)                                                                         \
    {                                                                                              \
        COMMON(T);                                                                                 \
        T *restrict s = (T *)t->s[0];                                                              \
        const T lr = (T)h->lr, eps = (T)h->eps;                                                    \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            GRAD(T, i);                                                                            \
            T si = s[i] + gi * gi;                                                                 \
            s[i] = si;                                                                             \
            p[i] = (p[i] - decay * p[i]) - lr * gi / (inside ? SQRT(si + eps) : SQRT(si) + eps);   \
        }                                                                                          \
    }                                                                                              \
    TFL_CLONES static void NAME(const tfl__opt_tensor *t, int64_t lo, int64_t hi,                  \
                                const tfl__opt_hyper *h)                                           \
    {                                                                                              \
        if (h->eps_inside)                                                                         \
            NAME##_loop(t, lo, hi, h, true);                                                       \
        else                                                                                       \
            NAME##_loop(t, lo, hi, h, false);                                                      \
    }

DEFINE_ADAGRAD(adagrad_f32, float, __builtin_sqrtf)
DEFINE_ADAGRAD(adagrad_f64, double, __builtin_sqrt)

/* ---- the list: one flat range split over the threads -------------------------------------------
 */

static chunk_fn pick(int kind, tfl_dtype dtype)
{
    bool f32 = dtype == TFL_DTYPE_FLOAT32;
    switch (kind) {
    case TFL__OPT_SGD:
        return f32 ? sgd_f32 : sgd_f64;
    case TFL__OPT_ADAM:
    case TFL__OPT_ADAMW:
        return f32 ? adam_f32 : adam_f64;
    case TFL__OPT_RMSPROP:
        return f32 ? rmsprop_f32 : rmsprop_f64;
    case TFL__OPT_ADAGRAD:
        return f32 ? adagrad_f32 : adagrad_f64;
    }
    return NULL;
}

/* Calls fn on the part of the flat range [lo, hi) that falls in each tensor. */
static void run_range(int n, const tfl__opt_tensor *t, int64_t lo, int64_t hi,
                      const tfl__opt_hyper *h, chunk_fn fn)
{
    int64_t base = 0;
    for (int i = 0; i < n && base < hi; base += t[i].n, i++) {
        int64_t a = lo > base ? lo - base : 0, b = hi - base < t[i].n ? hi - base : t[i].n;
        if (a < b) fn(&t[i], a, b, h);
    }
}

static tfl_status cpu_apply(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                            const tfl__opt_tensor *t, const tfl__opt_hyper *h)
{
    (void)dev;
    chunk_fn fn = pick(h->kind, dtype);
    if (!fn)
        return tfl__set_error(ctx, TFL_INTERNAL, "no CPU update kernel for optimizer %d", h->kind);
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += t[i].n;
    int threads = total >= TFL_CPU_PARALLEL_MIN ? ctx->num_threads : 1;
    if (threads <= 1) {
        run_range(n, t, 0, total, h, fn);
        return TFL_OK;
    }
#pragma omp parallel num_threads(threads)
    {
        int64_t id = omp_get_thread_num(), nt = omp_get_num_threads();
        /* thread boundaries on multiples of 16 elements of the flat range (whole cache lines
         * within the first tensor; at most one shared line per boundary in the others) */
        int64_t lo = (total * id / nt) & ~(int64_t)15,
                hi = id == nt - 1 ? total : (total * (id + 1) / nt) & ~(int64_t)15;
        run_range(n, t, lo, hi, h, fn);
    }
    return TFL_OK;
}

TFL_CLONES static double sumsq_f32(const float *g, int64_t n, int threads)
{
    double acc = 0;
#pragma omp parallel for simd num_threads(threads) reduction(+ : acc) if (threads > 1)
    for (int64_t i = 0; i < n; i++)
        acc += (double)g[i] * g[i];
    return acc;
}

TFL_CLONES static double sumsq_f64(const double *g, int64_t n, int threads)
{
    double acc = 0;
#pragma omp parallel for simd num_threads(threads) reduction(+ : acc) if (threads > 1)
    for (int64_t i = 0; i < n; i++)
        acc += g[i] * g[i];
    return acc;
}

static tfl_status cpu_sumsq(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                            const tfl__opt_tensor *t, double *out)
{
    (void)dev;
    for (int i = 0; i < n; i++) {
        int threads = t[i].n >= TFL_CPU_PARALLEL_MIN ? ctx->num_threads : 1;
        out[i] = dtype == TFL_DTYPE_FLOAT32 ? sumsq_f32(t[i].g, t[i].n, threads)
                                            : sumsq_f64(t[i].g, t[i].n, threads);
    }
    return TFL_OK;
}

/* No sumsq_device / clip_scales_device: the CPU's memory is the host's, so optim/apply.c
 * computes the clipping scales on the host, which costs no synchronisation here. */
const tfl__opt_kernels tfl__cpu_opt_kernels = {
    .apply = cpu_apply,
    .sumsq = cpu_sumsq,
    .dtypes = TFL_DT(FLOAT32) | TFL_DT(FLOAT64),
};
