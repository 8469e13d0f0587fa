/*
 * framework/cpu/gemm_small.c: float32 products too small for BLIS to run well: attention's
 * per-head products (64x64x32, 64x32x64) ran at 17-33 GFLOP/s through BLIS on a Zen 3 core,
 * where its set-up per call and, for A B^T, its dot-product kernel cost as much as the
 * multiply-adds. Here B is first copied into a row-major block (any strides, so b^T costs
 * nothing more), then 6 x 16 tiles of C are kept in registers over the whole k while A's
 * elements are broadcast and B's rows loaded as vectors. Each element of C is one sum over l
 * in increasing order: the result never depends on threads or on the tile an element is in.
 * AVX2 with FMA only (the functions carry a target attribute and run after a CPU check); on
 * other CPUs tfl__cpu_gemm_small_runs() is false and MatMul keeps BLIS.
 */
#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SMALL 1
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define MR 6
#define NR 16 /* two vectors of 8 */
#define UNROLL _Pragma("GCC unroll 8")

/*
 * Rows [i0, i0 + MR) of C (rows past m repeat row m - 1, whose results are not stored) by
 * columns [j0, j0 + NR) of the packed B (bp, ldb floats a row, zero past n); `cols` of them
 * stored (NR, or fewer at the right edge).
 */
AVX2 static void tile(int64_t m, int64_t k, const float *a, int64_t rsa, int64_t csa,
                      const float *bp, int64_t ldb, float *c, int64_t ldc, int64_t i0, int cols)
{
    const float *ar[MR];
    UNROLL for (int r = 0; r < MR; r++) ar[r] = a + (i0 + r < m ? i0 + r : m - 1) * rsa;
    __m256 acc[MR][2];
    UNROLL for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t l = 0; l < k; l++) {
        const __m256 b0 = _mm256_loadu_ps(bp + l * ldb), b1 = _mm256_loadu_ps(bp + l * ldb + 8);
        UNROLL for (int r = 0; r < MR; r++) {
            const __m256 av = _mm256_set1_ps(ar[r][l * csa]);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    UNROLL for (int r = 0; r < MR; r++) {
        if (i0 + r >= m) break;
        float *cr = c + (i0 + r) * ldc;
        if (cols == NR) {
            _mm256_storeu_ps(cr, acc[r][0]);
            _mm256_storeu_ps(cr + 8, acc[r][1]);
        } else {
            float t[NR];
            _mm256_storeu_ps(t, acc[r][0]);
            _mm256_storeu_ps(t + 8, acc[r][1]);
            memcpy(cr, t, sizeof(float) * (size_t)cols);
        }
    }
}

AVX2 static void gemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa,
                            int64_t csa, const float *b, int64_t rsb, int64_t csb, float *c)
{
    const int64_t ldb = (n + NR - 1) / NR * NR;
    float bp[TFL_GEMM_SMALL_MAX * TFL_GEMM_SMALL_MAX] __attribute__((aligned(32)));
    for (int64_t l = 0; l < k; l++) {
        float *row = bp + l * ldb;
        const float *src = b + l * rsb;
        if (csb == 1) memcpy(row, src, sizeof(float) * (size_t)n);
        else
            for (int64_t j = 0; j < n; j++) row[j] = src[j * csb];
        for (int64_t j = n; j < ldb; j++) row[j] = 0;
    }
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
        const int cols = n - j0 < NR ? (int)(n - j0) : NR;
        for (int64_t i0 = 0; i0 < m; i0 += MR)
            tile(m, k, a, rsa, csa, bp + j0, ldb, c + j0, n, i0, cols);
    }
}
#endif

bool tfl__cpu_gemm_small_runs(void)
{
#ifdef HAVE_SMALL
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

bool tfl__cpu_gemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa,
                         int64_t csa, const float *b, int64_t rsb, int64_t csb, float *c)
{
#ifdef HAVE_SMALL
    if (m < 1 || n < 1 || k < 1 || m > TFL_GEMM_SMALL_MAX_M || n > TFL_GEMM_SMALL_MAX ||
        k > TFL_GEMM_SMALL_MAX || !tfl__cpu_gemm_small_runs())
        return false;
    gemm_small(m, n, k, a, rsa, csa, b, rsb, csb, c);
    return true;
#else
    (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b, (void)rsb, (void)csb;
    (void)c;
    return false;
#endif
}
