/*
 * framework/cpu/cpu.h: the CPU backend's private interface: the device, the strided
 * N-d iterator that drives every elementwise and reduction kernel, inner-loop types, and
 * small conversion helpers shared by kernels.
 *
 * The iterator follows NumPy's ufunc design: operands are broadcast to one iteration
 * shape, dimensions are coalesced where every operand is contiguous across them, and a
 * typed inner loop runs over the last dimension with byte strides.
 */
#ifndef TFL_CPU_H
#define TFL_CPU_H

#include "internal.h"

#include <math.h>

#define TFL_ITER_MAX_OPS (TFL_MAX_INPUTS + 1)

/* Marks a loop function that gains from vectors wider than the baseline x86-64 build's SSE2:
 * GCC compiles an AVX-512 and an AVX2 copy beside the baseline one and picks one when the
 * library loads (ifunc). Off under the sanitizers and other compilers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define TFL_WIDE_LOOPS __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TFL_WIDE_LOOPS
#endif
#define TFL_CPU_PARALLEL_MIN 32768 /* elements below which a kernel runs on one thread */

#define TFL_SUM_LANES 8

/* result = the sum of expr(j) over j in [0, n), in double: TFL_SUM_LANES interleaved partial
 * sums (they vectorize), combined pairwise. expr is a function-like macro of the index. */
#define TFL_LANE_SUM(result, n, expr)                                                             \
    do {                                                                                         \
        double acc_[TFL_SUM_LANES] = {0};                                                        \
        int64_t j_ = 0;                                                                          \
        for (; j_ + TFL_SUM_LANES <= (n); j_ += TFL_SUM_LANES) {                                 \
            _Pragma("omp simd") /* lanes side by side: else gcc builds them element by element */ \
            for (int l_ = 0; l_ < TFL_SUM_LANES; l_++) {                                         \
                const int64_t jj_ = j_ + l_;                                                     \
                acc_[l_] += (double)(expr(jj_));                                                 \
            }                                                                                    \
        }                                                                                        \
        for (int l_ = 0; j_ < (n); j_++, l_++) acc_[l_] += (double)(expr(j_));                   \
        for (int w_ = TFL_SUM_LANES / 2; w_ >= 1; w_ /= 2)                                       \
            for (int l_ = 0; l_ < w_; l_++) acc_[l_] += acc_[l_ + w_];                           \
        (result) = acc_[0];                                                                      \
    } while (0)

/* result (type T) = the max of expr(j) over j in [0, n), n >= 1, as the running
 * `m = v > m ? v : m` from m = expr(0) finds it: NaNs after the first element are skipped, a
 * NaN first gives NaN. 16 lanes start at expr(0) and run side by side, then are combined in
 * order: the same value (of two equal zeros possibly the other sign, which x - max does not
 * see); the running form is one dependent max per element (4 cycles each). */
#define TFL_MAX_LANES 16
#define TFL_LANE_MAX(result, T, n, expr)                                                          \
    do {                                                                                         \
        T lane_[TFL_MAX_LANES];                                                                  \
        const T first_ = (expr(0));                                                              \
        for (int l_ = 0; l_ < TFL_MAX_LANES; l_++) lane_[l_] = first_;                           \
        int64_t j_ = 0;                                                                          \
        for (; j_ + TFL_MAX_LANES <= (n); j_ += TFL_MAX_LANES) {                                 \
            _Pragma("omp simd")                                                                  \
            for (int l_ = 0; l_ < TFL_MAX_LANES; l_++) {                                         \
                const T v_ = (expr(j_ + l_));                                                    \
                lane_[l_] = v_ > lane_[l_] ? v_ : lane_[l_];                                     \
            }                                                                                    \
        }                                                                                        \
        for (int l_ = 0; j_ < (n); j_++, l_++) {                                                 \
            const T v_ = (expr(j_));                                                             \
            lane_[l_] = v_ > lane_[l_] ? v_ : lane_[l_];                                         \
        }                                                                                        \
        T m_ = lane_[0];                                                                         \
        for (int l_ = 1; l_ < TFL_MAX_LANES; l_++) m_ = lane_[l_] > m_ ? lane_[l_] : m_;         \
        (result) = m_;                                                                           \
    } while (0)

/**
 * An inner loop: n elements; p[0] is the output, p[1..] the inputs; s[i] is operand i's
 * byte stride (0 for a broadcast operand). aux is the op's attrs (or NULL).
 */
typedef void (*tfl__loop_fn)(int64_t n, char **p, const int64_t *s, const void *aux);

typedef struct tfl__iter {
    int nops;                                        /* output + inputs */
    int rank;                                        /* after coalescing; >= 1 */
    int64_t numel;                                   /* elements of the iteration shape */
    int64_t shape[TFL_MAX_RANK];
    int64_t strides[TFL_ITER_MAX_OPS][TFL_MAX_RANK]; /* bytes */
    char *base[TFL_ITER_MAX_OPS];
} tfl__iter;

/**
 * Sets up an iteration over `shape` (rank dims) for n operands. Operand i has its own rank,
 * shape and strides (elements) and is broadcast to `shape` (size-1 and missing leading
 * dims get stride 0); ops[0] is usually the output.
 */
void tfl__iter_init(tfl__iter *it, int rank, const int64_t *shape, int n,
                    const tfl_tensor *const *ops);
/** Runs fn over the whole iteration, on up to `threads` threads when `parallel` allows. */
void tfl__iter_run(const tfl__iter *it, tfl__loop_fn fn, const void *aux, int threads,
                   bool parallel);

/** Instruction sets the hand-written kernels and BLIS's contexts need. */
typedef enum tfl__cpu_isa {
    TFL_CPU_AVX2_FMA,   /* AVX2 and FMA: gemm_small's tiles, BLIS's haswell kernels */
    TFL_CPU_AVX512F,    /* AVX-512 F: gemm_narrow, gemm_small's wide tiles */
    TFL_CPU_AVX512_SKX, /* AVX-512 F, DQ, BW and VL: BLIS's skx kernels */
} tfl__cpu_isa;

/** Whether this CPU runs isa (false off x86-64 GCC). */
static inline bool tfl__cpu_has(tfl__cpu_isa isa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    switch (isa) {
    case TFL_CPU_AVX2_FMA: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case TFL_CPU_AVX512F: return __builtin_cpu_supports("avx512f");
    case TFL_CPU_AVX512_SKX:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    }
#endif
    (void)isa;
    return false;
}

/** The CPU device: the common record, then what the CPU kernels keep per device. */
typedef struct tfl__cpu_device {
    tfl__device base;
    void *gemm;          /* BLIS contexts picked for this CPU (k_matmul.c); NULL: BLIS's own */
} tfl__cpu_device;

/** Bytes of the per-device GEMM state, and its set-up (k_matmul.c). */
size_t tfl__cpu_gemm_bytes(void);
/** Fills state; false when BLIS's own choice is to be used. */
bool tfl__cpu_gemm_init(void *state);

/**
 * C = A B + beta C for float32 or float64 (dt) matrices with any element strides: A (m, k)
 * at a with row stride rsa and column stride csa, B (k, n), C (m, n); beta 0 ignores C's
 * old values. BLIS's gemm with dev's contexts (k_matmul.c) on `threads` threads, or a plain
 * loop for products too small to pay BLIS's set-up. k may be 0 (C = beta C).
 */
void tfl__cpu_gemm(const tfl__device *dev, tfl_dtype dt, int threads, int64_t m, int64_t n,
                   int64_t k, const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                   int64_t csb, double beta, void *c, int64_t rsc, int64_t csc);

/**
 * C (m x n, row stride ldc) = A B, or C + A B when accumulate, float32 or float64 (dt), for
 * the narrow products of convolutions (gemm_narrow.c): A (m x k) has element (i, l) at
 * a[i rsa + l csa], B (k x n) is row-major with row stride ldb. No packing, so it beats
 * BLIS when n is small (up to a few hundred) and m or k is tall. threads > 1 share the rows,
 * the panels of a short C, or the pieces of k; the result never depends on them.
 * bias: NULL, or n values added to every row of the result (MatMul then Add's roundings).
 * scratch: NULL, or tfl__cpu_gemm_narrow_scratch(dt, m, n, k) bytes (when that is not 0), so
 * a short, deep product (a weight gradient) is summed in pieces of k (see gemm_narrow.c).
 * Returns false, doing nothing, on a CPU without AVX-512 (use tfl__cpu_gemm then).
 */
bool tfl__cpu_gemm_narrow(tfl_dtype dt, int threads, int64_t m, int64_t n, int64_t k,
                          const void *a, int64_t rsa, int64_t csa, const void *b, int64_t ldb,
                          void *c, int64_t ldc, bool accumulate, const void *bias,
                          void *scratch);
/** Every row of C (m x n, row stride ldc; float32 or float64) += bias (n, contiguous), on
 * `threads` threads for a C big enough (k_matmul.c). */
void tfl__cpu_add_rows(tfl_dtype dt, int threads, int64_t m, int64_t n, void *c, int64_t ldc,
                       const void *bias);
/** Bytes of scratch tfl__cpu_gemm_narrow sums pieces of k in (0: it does not). */
size_t tfl__cpu_gemm_narrow_scratch(tfl_dtype dt, int64_t m, int64_t n, int64_t k);
/** Whether tfl__cpu_gemm_narrow runs on this CPU (AVX-512 and a compiler that builds it). */
bool tfl__cpu_gemm_narrow_runs(void);

/** d[j ldd + i] = s[i lds + j] for i < rows, j < cols (float32; by 8 x 8 AVX transposes on a
 * CPU with AVX2, gemm_small.c). */
void tfl__cpu_transpose_f32(int64_t rows, int64_t cols, const float *s, int64_t lds, float *d,
                            int64_t ldd);

/*
 * float32 C (m x n, row-major, contiguous) = A B for the small products BLIS runs slowly
 * (attention's per head; gemm_small.c): A's element (i, l) at a[i rsa + l csa], B's (l, j) at
 * b[l rsb + j csb], any strides (a transposed operand is a pair of strides). Returns false,
 * doing nothing, past TFL_GEMM_SMALL_MAX_M rows or TFL_GEMM_SMALL_MAX columns or depth, or on
 * a CPU without AVX2 and FMA.
 */
#define TFL_GEMM_SMALL_MAX_M 256
#define TFL_GEMM_SMALL_MAX 64
bool tfl__cpu_gemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa,
                         int64_t csa, const float *b, int64_t rsb, int64_t csb, float *c);
/** Whether tfl__cpu_gemm_small runs on this CPU (x86-64 with AVX2 and FMA). */
bool tfl__cpu_gemm_small_runs(void);

/** The CPU backend (cpu_device.c): one device, CPU:0, in host memory. */
extern const tfl__backend tfl__cpu_backend;
/** The CPU's fused optimizer kernels (k_optim.c; opt_kernels.h). */
extern const struct tfl__opt_kernels tfl__cpu_opt_kernels;

/** The inner loop copying elements of one size (1, 2, 4, 8 or 16 bytes). */
tfl__loop_fn tfl__copy_loop(size_t elem_size);
/** Copies src's elements (any view) into dst (contiguous, same shape and dtype). */
void tfl__cpu_copy(tfl_tensor *dst, const tfl_tensor *src);
/** Copies src's elements (any view) row-major into a host buffer. */
void tfl__cpu_copy_to_buffer(void *dst, const tfl_tensor *src);

/**
 * t itself when contiguous, else a contiguous copy on the kernel's device in *tmp (release
 * it after use). NULL (error kept) when out of memory.
 */
const tfl_tensor *tfl__cpu_contiguous(tfl_ctx *ctx, const tfl_tensor *t, tfl_tensor **tmp);

#endif /* TFL_CPU_H */
