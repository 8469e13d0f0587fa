/*
 * framework/cpu/gemm_small.c: float32 products too small for BLIS to run well: attention's
 * per-head products (64x64x32, 64x32x64) ran at 17-33 GFLOP/s through BLIS on a Zen 3 core,
 * where its set-up per call and, for A B^T, its dot-product kernel cost as much as the
 * multiply-adds. Here B is first copied into a row-major block (any strides, so b^T costs
 * nothing more), then 6 x 16 tiles of C are kept in registers over the whole k while A's
 * elements are broadcast and B's rows loaded as vectors. Each element of C is one sum over l
 * in increasing order: the result never depends on threads or on the tile an element is in.
 * AVX2 with FMA (the functions carry a target attribute and run after a CPU check), with
 * AVX-512 tiles where the CPU has it; on other CPUs tfl__cpu_gemm_small_runs() is false and
 * MatMul keeps BLIS.
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

/*
 * The same on AVX-512 (16 lanes): tiles of 6 rows by 64 columns (4 vectors), or of 8 by 32
 * where C is at most 32 wide (A V in attention; 8 rows divide a head's 64, where 12 wasted a
 * tile's third at the bottom); columns past n are masked off at the store. Each element is the
 * same FMA chain over l as in tile(). On a 5th-generation Xeon, in the transformer's step,
 * 64x64x32 ran 18% and 64x32x64 25% faster than the AVX2 tiles.
 */
#define AVX512 __attribute__((target("avx512f,fma")))
#define TILE512(R, V)                                                                       \
    AVX512 static void tile512_##R##x##V(int64_t m, int64_t k, const float *a, int64_t rsa, \
                                         int64_t csa, const float *bp, int64_t ldb, float *c, \
                                         int64_t ldc, int64_t i0, int cols)                 \
    {                                                                                       \
        const float *ar[R];                                                                 \
        UNROLL for (int r = 0; r < R; r++) ar[r] = a + (i0 + r < m ? i0 + r : m - 1) * rsa; \
        __m512 acc[R][V];                                                                   \
        UNROLL for (int r = 0; r < R; r++) UNROLL for (int v = 0; v < V; v++)               \
            acc[r][v] = _mm512_setzero_ps();                                                \
        for (int64_t l = 0; l < k; l++) {                                                   \
            __m512 bv[V];                                                                   \
            UNROLL for (int v = 0; v < V; v++) bv[v] = _mm512_loadu_ps(bp + l * ldb + 16 * v); \
            UNROLL for (int r = 0; r < R; r++) {                                            \
                const __m512 av = _mm512_set1_ps(ar[r][l * csa]);                           \
                UNROLL for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]); \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int r = 0; r < R; r++) {                                                \
            if (i0 + r >= m) break;                                                         \
            float *cr = c + (i0 + r) * ldc;                                                 \
            UNROLL for (int v = 0; v < V; v++) {                                            \
                const int w = cols - 16 * v;                                                \
                if (w <= 0) break;                                                          \
                const __mmask16 mk = w >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << w) - 1u); \
                _mm512_mask_storeu_ps(cr + 16 * v, mk, acc[r][v]);                          \
            }                                                                               \
        }                                                                                   \
    }
TILE512(6, 4)
TILE512(8, 2)

/* rows [j0, j0 + 8) of the row-major block s (row stride ld), columns [l0, l0 + 8), stored
 * transposed: d[(l0 + i) ldd + j0 + r] = s[(j0 + r) ld + l0 + i] */
AVX2 static void transpose8(const float *s, int64_t ld, float *d, int64_t ldd)
{
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(s + i * ld);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(d + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(d + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}

/* B's (k x n) block copied row-major into bp (ldb floats a row, zero past n). B stored by
 * columns (b^T of a row-major matrix: Q K^T, dC V^T in attention) in 8 x 8 transposes, where
 * a gather of each element had cost a quarter of such a product. */
AVX2 static void pack_b(int64_t n, int64_t k, const float *b, int64_t rsb, int64_t csb, float *bp,
                        int64_t ldb)
{
    if (rsb == 1 && csb != 1) { /* element (l, j) at b[j csb + l]: rows of b^T contiguous */
        const int64_t n8 = n / 8 * 8, k8 = k / 8 * 8;
        for (int64_t j = 0; j < n8; j += 8)
            for (int64_t l = 0; l < k8; l += 8)
                transpose8(b + j * csb + l, csb, bp + l * ldb + j, ldb);
        for (int64_t l = 0; l < k; l++)
            for (int64_t j = l < k8 ? n8 : 0; j < n; j++) bp[l * ldb + j] = b[j * csb + l];
    } else {
        for (int64_t l = 0; l < k; l++) {
            float *row = bp + l * ldb;
            const float *src = b + l * rsb;
            int64_t j = 0;
            if (csb == 1)
                for (; j + 8 <= n; j += 8) _mm256_storeu_ps(row + j, _mm256_loadu_ps(src + j));
            for (; j < n; j++) row[j] = src[j * csb];
        }
    }
    for (int64_t l = 0; l < k; l++)
        for (int64_t j = n; j < ldb; j++) bp[l * ldb + j] = 0;
}

AVX2 static void gemm_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rsa,
                            int64_t csa, const float *b, int64_t rsb, int64_t csb, float *c)
{
    const bool wide = tfl__cpu_has(TFL_CPU_AVX512F);
    const int64_t nr = !wide ? NR : n > 32 ? 64 : 32; /* a tile's columns */
    const int64_t ldb = (n + nr - 1) / nr * nr;
    float bp[TFL_GEMM_SMALL_MAX * TFL_GEMM_SMALL_MAX] __attribute__((aligned(64)));
    pack_b(n, k, b, rsb, csb, bp, ldb);
    for (int64_t j0 = 0; j0 < n; j0 += nr) {
        const int cols = n - j0 < nr ? (int)(n - j0) : (int)nr;
        if (wide && nr == 64)
            for (int64_t i0 = 0; i0 < m; i0 += 6)
                tile512_6x4(m, k, a, rsa, csa, bp + j0, ldb, c + j0, n, i0, cols);
        else if (wide)
            for (int64_t i0 = 0; i0 < m; i0 += 8)
                tile512_8x2(m, k, a, rsa, csa, bp + j0, ldb, c + j0, n, i0, cols);
        else
            for (int64_t i0 = 0; i0 < m; i0 += MR)
                tile(m, k, a, rsa, csa, bp + j0, ldb, c + j0, n, i0, cols);
    }
}
#endif

#ifdef HAVE_SMALL
/* d[j ldd + i] = s[i lds + j] over rows x cols: 8 x 8 transposes in blocks of 64 x 64 (a
 * block's rows of s and of d stay in L1), elements one by one at the edges */
AVX2 static void transpose_f32(int64_t rows, int64_t cols, const float *s, int64_t lds, float *d,
                               int64_t ldd)
{
    const int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t i0 = 0; i0 < r8; i0 += 64)
        for (int64_t j0 = 0; j0 < c8; j0 += 64)
            for (int64_t i = i0; i < i0 + 64 && i < r8; i += 8)
                for (int64_t j = j0; j < j0 + 64 && j < c8; j += 8)
                    transpose8(s + i * lds + j, lds, d + j * ldd + i, ldd);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = i < r8 ? c8 : 0; j < cols; j++) d[j * ldd + i] = s[i * lds + j];
}
#endif

void tfl__cpu_transpose_f32(int64_t rows, int64_t cols, const float *s, int64_t lds, float *d,
                            int64_t ldd)
{
#ifdef HAVE_SMALL
    if (tfl__cpu_gemm_small_runs()) {
        transpose_f32(rows, cols, s, lds, d, ldd);
        return;
    }
#endif
    for (int64_t i0 = 0; i0 < rows; i0 += 16) /* blocks of 16 x 16 keep both in cache lines */
        for (int64_t j0 = 0; j0 < cols; j0 += 16)
            for (int64_t i = i0; i < i0 + 16 && i < rows; i++)
                for (int64_t j = j0; j < j0 + 16 && j < cols; j++) d[j * ldd + i] = s[i * lds + j];
}

bool tfl__cpu_gemm_small_runs(void)
{
#ifdef HAVE_SMALL
    return tfl__cpu_has(TFL_CPU_AVX2_FMA);
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
