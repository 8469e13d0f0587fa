/*
 * framework/cpu/k_optim.c: the CPU's fused optimizer updates (opt_kernels.h's table): loops over
 * framework/opt_elems.h's element functions, which the GPU shares. One pass per tensor reads the
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

/* The element functions of every kernel (opt_elems.h), once per dtype. */
#define TFL_OPT_HD static inline __attribute__((always_inline))
#define TFL_OPT_DIV(a, b) ((a) / (b))

#define TFL_OPT_T float
#define TFL_OPT_SFX f32
#define TFL_OPT_SQRT(x) __builtin_sqrtf(x)
#include "opt_elems.h"
#undef TFL_OPT_T
#undef TFL_OPT_SFX
#undef TFL_OPT_SQRT

#define TFL_OPT_T double
#define TFL_OPT_SFX f64
#define TFL_OPT_SQRT(x) __builtin_sqrt(x)
#include "opt_elems.h"
#undef TFL_OPT_T
#undef TFL_OPT_SFX
#undef TFL_OPT_SQRT

/* The loop of kernel N over [lo, hi), inlined once per combination of its switches (the
 * switch below, whose cases past 2^switches - 1 the compiler drops) so that each copy is
 * branch-free and vectorizes. */
#define CASE(N, SFX, F)                                                                            \
    case F:                                                                                        \
        N##_##SFX##_loop(t, lo, hi, h, F);                                                         \
        break;
#define DEFINE_LOOP(N, NF, T, SFX)                                                                 \
    static inline __attribute__((always_inline)) void N##_##SFX##_loop(                            \
        const tfl__opt_tensor *t, int64_t lo, int64_t hi, const tfl__opt_hyper *h,                 \
        const unsigned f)                                                                          \
    {                                                                                              \
        struct tfl__opk_##N##_k_##SFX k;                                                           \
        tfl__opk_##N##_load_##SFX(&k, h, t);                                                       \
        T *restrict p = (T *)t->p, *restrict s0 = (T *)t->s[0], *restrict s1 = (T *)t->s[1],       \
                    *restrict s2 = (T *)t->s[2];                                                   \
        const T *restrict g = (const T *)t->g;                                                     \
        for (int64_t i = lo; i < hi; i++)                                                          \
            tfl__opk_##N##_elem_##SFX(p, g, s0, s1, s2, i, &k, f);                                 \
    }                                                                                              \
    TFL_CLONES static void N##_##SFX(const tfl__opt_tensor *t, int64_t lo, int64_t hi,             \
                                     const tfl__opt_hyper *h)                                      \
    {                                                                                              \
        switch (h->flags & ((1u << (NF)) - 1u)) {                                                  \
            CASE(N, SFX, 0)                                                                        \
            CASE(N, SFX, 1)                                                                        \
            CASE(N, SFX, 2)                                                                        \
            CASE(N, SFX, 3)                                                                        \
            CASE(N, SFX, 4)                                                                        \
            CASE(N, SFX, 5)                                                                        \
            CASE(N, SFX, 6)                                                                        \
            CASE(N, SFX, 7)                                                                        \
        }                                                                                          \
    }
#define DEFINE_LOOPS(N, NF)                                                                        \
    DEFINE_LOOP(N, NF, float, f32)                                                                 \
    DEFINE_LOOP(N, NF, double, f64)
TFL__OPT_KERNELS(DEFINE_LOOPS)

/* ---- the list: one flat range split over the threads -------------------------------------------
 */

#define TABLE_ENTRY(N, NF) [TFL__OPK_##N] = {N##_f32, N##_f64},
static const chunk_fn kernels[TFL__OPK_COUNT][2] = {TFL__OPT_KERNELS(TABLE_ENTRY)};

static chunk_fn pick(int kernel, tfl_dtype dtype)
{
    if (kernel <= TFL__OPK_NONE || kernel >= TFL__OPK_COUNT) return NULL;
    return kernels[kernel][dtype == TFL_DTYPE_FLOAT32 ? 0 : 1];
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
    chunk_fn fn = pick(h->kernel, dtype);
    if (!fn) return tfl__set_error(ctx, TFL_INTERNAL, "no CPU update kernel %d", h->kernel);
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

/*
 * The sum of squares of n elements, the same bits on any number of threads: the elements in
 * SUMSQ_CHUNKS chunks (fewer below SUMSQ_CHUNK_MIN elements a chunk), fixed by n alone, each
 * summed in double on one thread, the chunks' sums added in order.
 */
#define SUMSQ_CHUNKS 64
#define SUMSQ_CHUNK_MIN 2048
#define SUMSQ(name, T)                                                                      \
    TFL_CLONES static double name(const T *g, int64_t n, int threads)                       \
    {                                                                                       \
        double part[SUMSQ_CHUNKS];                                                          \
        int64_t chunks = (n + SUMSQ_CHUNK_MIN - 1) / SUMSQ_CHUNK_MIN;                       \
        if (chunks > SUMSQ_CHUNKS) chunks = SUMSQ_CHUNKS;                                   \
        if (chunks < 1) chunks = 1;                                                         \
        _Pragma("omp parallel for num_threads(threads) if (threads > 1) schedule(static)")  \
        for (int64_t c = 0; c < chunks; c++) {                                              \
            double acc = 0;                                                                 \
            const int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;                   \
            _Pragma("omp simd reduction(+ : acc)")                                          \
            for (int64_t i = lo; i < hi; i++) acc += (double)g[i] * (double)g[i];           \
            part[c] = acc;                                                                  \
        }                                                                                   \
        double s = 0;                                                                       \
        for (int64_t c = 0; c < chunks; c++) s += part[c];                                  \
        return s;                                                                           \
    }
SUMSQ(sumsq_f32, float)
SUMSQ(sumsq_f64, double)

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
