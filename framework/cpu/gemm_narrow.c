/*
 * framework/cpu/gemm_narrow.c: a GEMM for the narrow products of convolutions, C (m x n) =
 * A (m x k) B (k x n) with n small (Cout, or KH KW Cin) and m or k tall (pixels). BLIS packs
 * the tall operand before it multiplies, which with n = 32..64 costs about as much as the
 * multiplication itself (an im2col element is used for only 2 n flops); this kernel never
 * packs A (only a 24 KB block of B at a time): it keeps an MR x NV-vector tile of C in
 * registers, broadcasts A's elements and loads B's rows as vectors ("rv" tiling, as oneDNN's
 * direct convolutions do for NHWC). MatMul runs its products up to 256 wide here too.
 * AVX-512 only (the functions carry a target attribute and run after a CPU check); on other
 * CPUs tfl__cpu_gemm_narrow returns false and the caller uses BLIS.
 */
#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) /* 32 vector registers: x86-64 only */
#define HAVE_NARROW 1
#include <immintrin.h>
#include <omp.h>

#define AVX512 __attribute__((target("avx512f,fma")))

/* one element type: vector, width, and the intrinsics the kernels use */
#define S_VEC __m512
#define S_MASK __mmask16
#define S_VL 16
#define S_ZERO() _mm512_setzero_ps()
#define S_LOAD(p) _mm512_loadu_ps(p)
#define S_MLOAD(mk, p) _mm512_maskz_loadu_ps(mk, p)
#define S_BCAST(x) _mm512_set1_ps(x)
#define S_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define S_ADD(a, b) _mm512_add_ps(a, b)
#define S_MSTORE(p, mk, v) _mm512_mask_storeu_ps(p, mk, v)

#define D_VEC __m512d
#define D_MASK __mmask8
#define D_VL 8
#define D_ZERO() _mm512_setzero_pd()
#define D_LOAD(p) _mm512_loadu_pd(p)
#define D_MLOAD(mk, p) _mm512_maskz_loadu_pd(mk, p)
#define D_BCAST(x) _mm512_set1_pd(x)
#define D_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define D_ADD(a, b) _mm512_add_pd(a, b)
#define D_MSTORE(p, mk, v) _mm512_mask_storeu_pd(p, mk, v)

#define UNROLL _Pragma("GCC unroll 32")

/*
 * The micro-kernel: rows [0, MR) of C by NV vectors (the last one masked by mk) over the
 * whole k: r = sum_l A[i, l] B[l, :]; then C = r, or C + r when accumulate, and that plus
 * bias[:] when a bias is given (each a rounded float add, as MatMul then Add). Loops have
 * constant trip counts and are unrolled, so r lives in registers (MR NV <= 24 of 32); the
 * loop over k is unrolled 4 times (one thread, best of 6: 4-5% faster on 2048x128x128,
 * 2048x128x512, and A^T B over 2048).
 */
#define UKR(P, T, MR, NV)                                                                   \
    AVX512 static void ukr_##P##_##MR##x##NV(int64_t k, const T *a, int64_t rsa, int64_t csa, \
                                               const T *b, int64_t ldb, T *c, int64_t ldc,  \
                                               P##_MASK mk, bool accumulate, const T *bias) \
    {                                                                                       \
        P##_VEC r[MR][NV];                                                                  \
        UNROLL for (int i = 0; i < MR; i++)                                                 \
            UNROLL for (int v = 0; v < NV; v++) r[i][v] = P##_ZERO();                       \
        _Pragma("GCC unroll 4") for (int64_t l = 0; l < k; l++) {                           \
            const T *bl = b + l * ldb, *al = a + l * csa;                                   \
            P##_VEC bv[NV];                                                                 \
            UNROLL for (int v = 0; v < NV - 1; v++) bv[v] = P##_LOAD(bl + v * P##_VL);      \
            bv[NV - 1] = P##_MLOAD(mk, bl + (NV - 1) * P##_VL);                             \
            UNROLL for (int i = 0; i < MR; i++) {                                           \
                P##_VEC av = P##_BCAST(al[i * rsa]);                                        \
                UNROLL for (int v = 0; v < NV; v++) r[i][v] = P##_FMA(av, bv[v], r[i][v]);  \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int i = 0; i < MR; i++) {                                               \
            T *ci = c + i * ldc;                                                            \
            UNROLL for (int v = 0; v < NV; v++) {                                           \
                P##_MASK m = v == NV - 1 ? mk : (P##_MASK)-1;                               \
                P##_VEC x = r[i][v];                                                        \
                if (accumulate) x = P##_ADD(x, P##_MLOAD(m, ci + v * P##_VL));              \
                if (bias) x = P##_ADD(x, P##_MLOAD(m, bias + v * P##_VL));                  \
                P##_MSTORE(ci + v * P##_VL, m, x);                                          \
            }                                                                               \
        }                                                                                   \
    }

/* tiles of up to 24 accumulators (MR rows by NV vectors), and smaller ones for the last rows */
#define UKRS(P, T)                                                                          \
    UKR(P, T, 6, 4) UKR(P, T, 3, 4) UKR(P, T, 1, 4)                                         \
    UKR(P, T, 8, 3) UKR(P, T, 4, 3) UKR(P, T, 2, 3) UKR(P, T, 1, 3)                         \
    UKR(P, T, 12, 2) UKR(P, T, 9, 2) UKR(P, T, 3, 2) UKR(P, T, 1, 2)                        \
    UKR(P, T, 12, 1) UKR(P, T, 6, 1) UKR(P, T, 3, 1) UKR(P, T, 1, 1)
UKRS(S, float)
UKRS(D, double)

/* rows [i, ie) with tiles of MR rows while they fit, then of H2, then H3, then one */
#define TILE_ARGS kb, a + i * rsa, rsa, csa, bj, ldp, cj + i * ldc, ldc, mk, acc, bj_bias
#define ROWS(P, NV, MR, H2, H3)                                                             \
    do {                                                                                    \
        for (; i + MR <= ie; i += MR) ukr_##P##_##MR##x##NV(TILE_ARGS);                     \
        for (; i + H2 <= ie; i += H2) ukr_##P##_##H2##x##NV(TILE_ARGS);                     \
        for (; i + H3 <= ie; i += H3) ukr_##P##_##H3##x##NV(TILE_ARGS);                     \
        for (; i < ie; i++) ukr_##P##_1x##NV(TILE_ARGS);                                    \
    } while (0)

/*
 * Rows [i0, i1) and columns [j0, n) (j0 a multiple of 4 vectors) of C, in blocks of rows
 * whose part of C stays in L2 (MC_BYTES) while every block of k passes over it; in a row
 * block, blocks of k whose rows of a B panel (up to 4 vectors wide) fit in L1 (KB_BYTES),
 * and in each the panels, each copied into bp, and in each
 * panel the row tiles, so a B block is read from L1 by every tile; C is accumulated from the
 * second block of k on. Without the row blocks, a deep and tall product swept all of its C
 * through L3 once per block of k: on two threads 3136x256x2304 and 6272x64x576 ran 1.24-1.28x
 * faster with them (the convolutions' tasks, a few hundred rows each, were not affected).
 * Each element of C is the same sum in the same order whatever the blocks of rows, so the
 * results never depend on them.
 */
#define KB_BYTES (24 << 10)
#define MC_BYTES (256 << 10)
#define DRIVER(P, T)                                                                        \
    AVX512 static void narrow_##P(int64_t i0, int64_t i1, int64_t j0, int64_t n, int64_t k,  \
                                  const T *a0, int64_t rsa, int64_t csa, const T *b0,       \
                                  int64_t ldb, T *c, int64_t ldc, bool accumulate,          \
                                  const T *bias)                                            \
    {                                                                                       \
        const int64_t kstep = KB_BYTES / (int64_t)(4 * P##_VL * sizeof(T)), ldp = 4 * P##_VL; \
        T bp[KB_BYTES / sizeof(T)] __attribute__((aligned(64))); /* kstep x ldp */          \
        int64_t mc = MC_BYTES / ((n - j0) * (int64_t)sizeof(T)) / 24 * 24; /* 24 | i0 */    \
        if (k <= kstep || mc > i1 - i0) mc = i1 - i0;                                       \
        else if (mc < 24) mc = 24;                                                          \
        for (int64_t m0 = i0; m0 < i1; m0 += mc) {                                          \
            const int64_t ie = i1 - m0 < mc ? i1 : m0 + mc;                                 \
            for (int64_t l = 0; l == 0 || l < k; l += kstep) {                              \
                int64_t kb = k - l < kstep ? k - l : kstep;                                 \
                const T *a = a0 + l * csa, *b = b0 + l * ldb;                               \
                bool acc = accumulate || l > 0;                                             \
                for (int64_t j = j0; j < n; j += 4 * P##_VL) {                              \
                    int64_t w = n - j < 4 * P##_VL ? n - j : 4 * P##_VL;                    \
                    int nv = (int)((w + P##_VL - 1) / P##_VL);                              \
                    P##_MASK mk = (P##_MASK)((1u << (w - (nv - 1) * P##_VL)) - 1u);         \
                    /* the panel's rows copied side by side: B's rows, ldb apart, map to a  \
                     * few of L1's sets (n = 128: 32 of 64, n = 512: 8) and evicted each    \
                     * other there; 1.2-1.34x on 2048x128x128 .. 2048x512x128 and conv     \
                     * shapes, 2 threads */                                                 \
                    for (int64_t q = 0; q < kb; q++)                                        \
                        memcpy(bp + q * 4 * P##_VL, b + q * ldb + j, sizeof(T) * (size_t)w); \
                    const T *bj = bp;                                                       \
                    /* the bias with the last block of k */                                 \
                    const T *bj_bias = bias && l + kb == k ? bias + j : NULL;               \
                    T *cj = c + j;                                                          \
                    int64_t i = m0;                                                         \
                    switch (nv) {                                                           \
                    case 4: ROWS(P, 4, 6, 3, 3); break;                                     \
                    case 3: ROWS(P, 3, 8, 4, 2); break;                                     \
                    case 2: ROWS(P, 2, 12, 9, 3); break; /* 9: 3x3 taps of one channel */  \
                    default: ROWS(P, 1, 12, 6, 3); break;                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }
DRIVER(S, float)
DRIVER(D, double)

#endif

bool tfl__cpu_gemm_narrow_runs(void)
{
#ifdef HAVE_NARROW
    return tfl__cpu_has(TFL_CPU_AVX512F);
#else
    return false;
#endif
}

/*
 * A short C over a deep k (a weight gradient, x^T dy: 128 x 128 over 2048 tokens) is summed in
 * pieces of about KPIECE of k (at most PIECES_MAX pieces, longer ones past that): piece 0
 * into C, the others into scratch, then added to C in order. The pieces come from the shapes
 * alone, so the result never depends on the threads;
 * threads that share the pieces evenly each take whole pieces (C 128 x 128 on 2 threads: each
 * thread all of C over half of k, against rows split 72 and 56 with every panel of B copied by
 * both), else the pieces run in turn on every thread.
 */
#define KPIECE 1024
#define PIECES_MAX 8 /* scratch: at most 7 C's (512 x 512 over 65536 tokens: 7 MB, not 64) */
#define PIECE_MAX_ROWS 512

static int64_t pieces_of(int64_t m, int64_t k)
{
    const int64_t p = m <= PIECE_MAX_ROWS && k >= 2 * KPIECE ? k / KPIECE : 1;
    return p < PIECES_MAX ? p : PIECES_MAX;
}

size_t tfl__cpu_gemm_narrow_scratch(tfl_dtype dt, int64_t m, int64_t n, int64_t k)
{
    const int64_t p = pieces_of(m, k);
    return p > 1 ? (size_t)(p - 1) * (size_t)m * (size_t)n * tfl_dtype_size(dt) : 0;
}

#ifdef HAVE_NARROW
/* C rows [i0, i1) over columns [j0, j1) = A B over l in [l0, l1) of the product (or C + it),
 * plus the bias (NULL: none; its element j for column j) */
static void narrow_part(bool f32, int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t l0,
                        int64_t l1, const void *a, int64_t rsa, int64_t csa, const void *b,
                        int64_t ldb, void *c, int64_t ldc, bool accumulate, const void *bias)
{
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    const char *al = (const char *)a + (size_t)(l0 * csa) * es;
    const char *bl = (const char *)b + (size_t)(l0 * ldb) * es;
    if (f32)
        narrow_S(i0, i1, j0, j1, l1 - l0, (const float *)al, rsa, csa, (const float *)bl, ldb,
                 c, ldc, accumulate, bias);
    else
        narrow_D(i0, i1, j0, j1, l1 - l0, (const double *)al, rsa, csa, (const double *)bl, ldb,
                 c, ldc, accumulate, bias);
}

/* C (or C + it) = A B over l in [l0, l1) (plus the bias) on `threads` threads: ranges of 24
 * rows, or of panels for a short C of several panels they share evenly */
static void narrow_threads(bool f32, int threads, int64_t m, int64_t n, int64_t l0, int64_t l1,
                           const void *a, int64_t rsa, int64_t csa, const void *b, int64_t ldb,
                           void *c, int64_t ldc, bool accumulate, const void *bias)
{
    /* Threads take contiguous ranges of 24 rows (every tile height divides 24), or, for a
     * short C of several panels (4 vectors wide) that the threads share evenly, ranges of
     * panels over every row: 128 x 512 over 2048 ran 1.2x faster so on 2 threads. Every
     * element of C is the same sum either way. */
    const int64_t tiles = (m + 23) / 24, pw = 4 * (f32 ? S_VL : D_VL);
    const int64_t panels = (n + pw - 1) / pw;
    const bool by_panels = threads > 1 && panels % threads == 0 && tiles < 4 * threads;
    if (!by_panels && tiles < threads) threads = (int)tiles; /* a range of 24 rows each */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int t = 0; t < threads; t++) {
        int64_t i0 = 0, i1 = m, j0 = 0, j1 = n;
        if (by_panels) {
            j0 = panels * t / threads * pw;
            j1 = panels * (t + 1) / threads * pw;
            if (j1 > n) j1 = n;
        } else {
            i0 = tiles * t / threads * 24;
            i1 = tiles * (t + 1) / threads * 24;
            if (i1 > m) i1 = m;
        }
        narrow_part(f32, i0, i1, j0, j1, l0, l1, a, rsa, csa, b, ldb, c, ldc, accumulate, bias);
    }
}
#endif

bool tfl__cpu_gemm_narrow(tfl_dtype dt, int threads, int64_t m, int64_t n, int64_t k,
                          const void *a, int64_t rsa, int64_t csa, const void *b, int64_t ldb,
                          void *c, int64_t ldc, bool accumulate, const void *bias, void *scratch)
{
#ifdef HAVE_NARROW
    if (!tfl__cpu_has(TFL_CPU_AVX512F)) return false;
    if (m == 0 || n == 0) return true;
    if (threads < 1) threads = 1;
    const bool f32 = dt == TFL_DTYPE_FLOAT32;
    const int64_t p = scratch ? pieces_of(m, k) : 1;
    if (p == 1) {
        narrow_threads(f32, threads, m, n, 0, k, a, rsa, csa, b, ldb, c, ldc, accumulate, bias);
        return true;
    }
    const size_t es = tfl_dtype_size(dt);
    /* piece q's C: C itself for q = 0, else (q - 1)'th m x n block of scratch */
#define PIECE_C(q) ((q) == 0 ? c : (char *)scratch + (size_t)((q) - 1) * (size_t)(m * n) * es)
#define PIECE_LD(q) ((q) == 0 ? ldc : n)
    if (threads > 1 && p % threads == 0) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t q = 0; q < p; q++)
            narrow_part(f32, 0, m, 0, n, k * q / p, k * (q + 1) / p, a, rsa, csa, b, ldb,
                        PIECE_C(q), PIECE_LD(q), q == 0 && accumulate, NULL);
    } else {
        for (int64_t q = 0; q < p; q++)
            narrow_threads(f32, threads, m, n, k * q / p, k * (q + 1) / p, a, rsa, csa, b, ldb,
                           PIECE_C(q), PIECE_LD(q), q == 0 && accumulate, NULL);
    }
    /* C += the other pieces, in order, then the bias */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (int64_t i = 0; i < m; i++)
        for (int64_t q = 1; q < p; q++) {
            const char *src = (const char *)PIECE_C(q) + (size_t)(i * n) * es;
            if (f32) {
                float *dst = (float *)c + i * ldc;
                const float *s = (const float *)src;
                for (int64_t j = 0; j < n; j++) dst[j] += s[j];
            } else {
                double *dst = (double *)c + i * ldc;
                const double *s = (const double *)src;
                for (int64_t j = 0; j < n; j++) dst[j] += s[j];
            }
        }
    if (bias) tfl__cpu_add_rows(dt, threads, m, n, c, ldc, bias);
#undef PIECE_C
#undef PIECE_LD
    return true;
#else
    (void)dt, (void)threads, (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b;
    (void)ldb, (void)c, (void)ldc, (void)accumulate, (void)bias, (void)scratch;
    return false;
#endif
}
