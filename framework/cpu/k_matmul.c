/*
 * framework/cpu/k_matmul.c: CPU MatMul. float32/float64/complex64/complex128 call BLIS's
 * typed gemm with the operands' own strides (so transposed and sliced views cost no copy)
 * and a per-call thread count (no global BLIS state is touched); int32/int64, and float
 * products too small to amortise BLIS's set-up, use a plain i-k-j loop (integers wrap). Batch axes broadcast: each output matrix finds its
 * a and b matrices through batch strides that are 0 on broadcast axes.
 */
#include "ops/op.h"
#include "cpu.h"
#include "kernels.h"

#include <blis.h>
#include <complex.h>

/* ---- BLIS contexts -------------------------------------------------------------------------- *
 * Debian's BLIS 0.9 picks kernels by CPU model and falls back to its slow reference kernels on
 * CPUs it does not know (AMD Zen 5 among them), although its AVX2 (zen3) and AVX-512 (skx)
 * kernels run there; on AVX-512 Intel CPUs whose FMA units it cannot count it takes its AVX2
 * (haswell) kernels, and those are treated the same way. The shared libtapeflow links its own
 * hidden copy of BLIS (libblis.a), whose registry BLIS does not export from libblis.so, and
 * passes a context chosen by the CPU's features to every gemm: AVX-512 kernels for float/double
 * with zen3's small-matrix ("sup") path, zen3's kernels for complex (skx has no complex
 * kernels). The context is a copy kept in the ctx's CPU device: no global state, no environment
 * variable, and an application using BLIS itself is not affected. Built against libblis.so (the
 * static libtapeflow), the registry is missing and BLIS's own choice is used. On the Zen CPUs
 * BLIS knows, MatMul uses BLIS's own context, or a copy without the small-matrix path for the
 * products packed_pays() picks, and the convolutions a copy with other small-matrix thresholds
 * (conv_context()). */
#pragma weak bli_gks_lookup_id

/* The contexts of one CPU device: real and cplx replace BLIS's choice for MatMul when
 * `own`; conv, when `has_conv`, is the one tfl__cpu_gemm (the convolutions) passes; packed,
 * when `has_packed`, is MatMul's for the float products packed_pays() picks. */
typedef struct gemm_state {
    cntx_t real;   /* sgemm, dgemm */
    cntx_t cplx;   /* cgemm, zgemm */
    cntx_t conv;   /* the convolutions' sgemm, dgemm */
    cntx_t packed; /* BLIS's own without the small-matrix path */
    bool own, has_conv, has_packed;
} gemm_state;

size_t tfl__cpu_gemm_bytes(void) { return sizeof(gemm_state); }

/* Small-matrix ("sup") thresholds: BLIS takes its sup path when m < mt, n < nt or k < kt. */
static void set_sup_thresh(cntx_t *c, dim_t mt, dim_t nt, dim_t kt)
{
    const dim_t thresh[3] = {[BLIS_MT] = mt, [BLIS_NT] = nt, [BLIS_KT] = kt};
    for (int t = BLIS_MT; t <= BLIS_KT; t++) {
        bli_blksz_set_def(thresh[t], BLIS_FLOAT, &c->l3_sup_thresh[t]);
        bli_blksz_set_def(thresh[t], BLIS_DOUBLE, &c->l3_sup_thresh[t]);
    }
}

/*
 * The convolutions' context on the AMD CPUs BLIS knows (zen, zen2, zen3: AVX2 kernels):
 * BLIS's own with lower sup thresholds. Its defaults (m 512, n 200, k 240) send the
 * convolutions' products of a few hundred pixels by a filter of 128-256 channels (m 500-1000,
 * n 128-256, k 500-2300) and the filter gradient's transposed im2col to the sup kernels,
 * which on a Zen 3 core run them at 53-70 GFLOP/s against 78-87 packed (one thread, CPU
 * time); a k (or n, m) under 256 (128) keeps the sup path, which is as fast or faster there.
 */
static bool conv_context(gemm_state *st)
{
    arch_t arch = bli_arch_query_id();
    if (arch != BLIS_ARCH_ZEN && arch != BLIS_ARCH_ZEN2 && arch != BLIS_ARCH_ZEN3) return false;
    const cntx_t *own = bli_gks_query_cntx();
    if (!own) return false;
    st->conv = *own;
    set_sup_thresh(&st->conv, 128, 128, 256);
    st->packed = *own;
    set_sup_thresh(&st->packed, 1, 1, 1); /* BLIS takes the sup path below a threshold */
    st->has_packed = true;
    return true;
}

/*
 * Whether a float MatMul of (m x k) (k x n) runs faster packed than on BLIS's small-matrix
 * kernels, on the Zen CPUs BLIS knows (where its thresholds, m 512, n 200, k 240, send all of a
 * transformer's products to them). Measured on a Zen 3 core pair, the two paths alternated in
 * one process (speed of packed over sup, one thread / two):
 *   - 2048x512x128 1.35/1.24, 2048x128x512 1.18/1.22, 2048x256x128 1.15/1.16, 512x512x128
 *     1.28/1.23, 256x256x256 1.16/1.05: an n or k of 256 or more over an output of 64K;
 *   - 2048x128x128 0.95/0.95, 512x128x128 0.88/0.87, 256x128x256 1.09/0.93: smaller stays;
 *   - A^T B with k = 2048 (a kernel's gradient): 128x512 1.40/1.39, 512x128 1.35/1.14,
 *     128x256 1.29/1.38, but 128x128 1.28/0.81 and 64x64 0.93/0.75: an output of 32K or more.
 * The choice never depends on the thread count, so neither do the results.
 */
static bool packed_pays(bool ta, int64_t m, int64_t n, int64_t k)
{
    if (m < 128 || n < 128 || k < 128) return false;
    if (ta) return m * n >= 32768;
    return (n >= 256 || k >= 256) && m * n >= 65536;
}

bool tfl__cpu_gemm_init(void *mem)
{
    gemm_state *st = mem;
    st->own = st->has_conv = st->has_packed = false;
    if (!tfl__cpu_has(TFL_CPU_AVX2_FMA)) return false;
    bli_init(); /* once per process (BLIS's own pthread_once) */
    /* BLIS 0.9 takes its AVX2 (haswell) kernels on an AVX-512 Intel CPU whose count of FMA
     * units it cannot tell from the model (5th-generation Xeon, family 6 model 207, among
     * them); its skx kernels ran the transformer's products 1.5-2.3x faster there (one
     * thread, 2048x128x128 to 2048x512x128), and the whole step 1.25x. */
    arch_t arch = bli_arch_query_id();
    bool avx2_only = arch == BLIS_ARCH_HASWELL && tfl__cpu_has(TFL_CPU_AVX512_SKX);
    if (arch != BLIS_ARCH_GENERIC && !avx2_only) { /* BLIS knows this CPU */
        st->has_conv = conv_context(st);
        return st->has_conv;
    }
    if (!bli_gks_lookup_id) return false;
    cntx_t **zen3 = bli_gks_lookup_id(BLIS_ARCH_ZEN3);
    if (!zen3 || !zen3[BLIS_NAT]) return false;
    st->real = st->cplx = *zen3[BLIS_NAT];
    cntx_t **skx = tfl__cpu_has(TFL_CPU_AVX512_SKX) ? bli_gks_lookup_id(BLIS_ARCH_SKX) : NULL;
    if (skx && skx[BLIS_NAT]) {
        cntx_t *z = zen3[BLIS_NAT];
        st->real = *skx[BLIS_NAT];
        memcpy(st->real.l3_sup_thresh, z->l3_sup_thresh, sizeof st->real.l3_sup_thresh);
        memcpy(st->real.l3_sup_handlers, z->l3_sup_handlers, sizeof st->real.l3_sup_handlers);
        memcpy(st->real.l3_sup_blkszs, z->l3_sup_blkszs, sizeof st->real.l3_sup_blkszs);
        memcpy(st->real.l3_sup_kers, z->l3_sup_kers, sizeof st->real.l3_sup_kers);
        memcpy(st->real.l3_sup_kers_prefs, z->l3_sup_kers_prefs,
               sizeof st->real.l3_sup_kers_prefs);
        /* the small-matrix path when m or n < 64 (skx's packed kernels are slow there);
         * never for a small k alone (the sup kernels are slower than packing then) */
        set_sup_thresh(&st->real, 64, 64, 0);
    }
    st->conv = st->real;
    st->own = st->has_conv = true;
    return true;
}

/* A matrix operand as BLIS wants it: strides (elements) of the stored matrix. */
typedef struct {
    int64_t rows, cols, rs, cs;
} mat;

/* BLIS checks strides even on size-1 dims: give a size-1 dim the stride that spans the other. */
static mat stored(const tfl_tensor *t)
{
    mat m = {t->shape[t->rank - 2], t->shape[t->rank - 1], t->strides[t->rank - 2],
             t->strides[t->rank - 1]};
    if (m.rows == 1 && m.cols == 1) m.rs = m.cs = 1;
    else if (m.rows == 1) m.rs = m.cols * m.cs;
    else if (m.cols == 1) m.cs = m.rows * m.rs;
    return m;
}

/* A plain i-k-j loop: integers (U: the unsigned type that wraps) and tiny float matrices. */
#define LOOP_GEMM(name, T, U)                                                               \
    static void name(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,         \
                     mat A, const T *b, mat B, T *c, int64_t ldc)                           \
    {                                                                                       \
        for (int64_t i = 0; i < m; i++) {                                                   \
            T *crow = c + i * ldc;                                                          \
            for (int64_t j = 0; j < n; j++) crow[j] = 0;                                    \
            for (int64_t l = 0; l < k; l++) {                                               \
                U av = (U)a[ta ? l * A.rs + i * A.cs : i * A.rs + l * A.cs];                \
                const T *brow = b + (tb ? l * B.cs : l * B.rs);                             \
                int64_t bs = tb ? B.rs : B.cs;                                              \
                if (bs == 1)                                                                \
                    for (int64_t j = 0; j < n; j++) crow[j] = (T)((U)crow[j] + av * (U)brow[j]); \
                else                                                                        \
                    for (int64_t j = 0; j < n; j++)                                         \
                        crow[j] = (T)((U)crow[j] + av * (U)brow[j * bs]);                   \
            }                                                                               \
        }                                                                                   \
    }
LOOP_GEMM(gemm_i32, int32_t, uint32_t)
LOOP_GEMM(gemm_i64, int64_t, uint64_t)
LOOP_GEMM(gemm_f32, float, float)
LOOP_GEMM(gemm_f64, double, double)
LOOP_GEMM(gemm_c64, float complex, float complex)
LOOP_GEMM(gemm_c128, double complex, double complex)

/* Below this many multiply-adds BLIS's fixed set-up (~4.5 us here) costs more than a plain
 * loop: measured crossover near 25x25x25; a 4x4 float32 product takes ~0.17 us as a loop. */
#define SMALL_GEMM_MACS 16384

/* One product of a batched MatMul: c (m x n, row-major) = op(a) op(b). */
typedef struct gemm_call {
    bool ta, tb, small; /* small: float32 through tfl__cpu_gemm_small */
    bool narrow;        /* float32/float64 through tfl__cpu_gemm_narrow, on `threads` */
    void *scratch;      /* the narrow kernel's pieces of k (NULL: none) */
    const void *bias;   /* FusedMatMul's (n values, contiguous), or NULL */
    int threads;
    int bias_threads;   /* the threads that add the bias after a product not on the narrow kernel */
    int64_t m, n, kk;
    mat A, B;
    cntx_t *real, *cplx;
    const rntm_t *rntm;
} gemm_call;

/* c = op(a) op(b); true when the bias is in c too (the narrow kernel adds it as it stores) */
static bool gemm_product(const gemm_call *g, tfl_dtype dt, char *pa, char *pb, char *pc)
{
    const bool ta = g->ta, tb = g->tb;
    const int64_t m = g->m, n = g->n, kk = g->kk;
    const mat A = g->A, B = g->B;
    cntx_t *real = g->real, *cplx = g->cplx;
    rntm_t local = *g->rntm, *rntm = &local; /* each thread its own (BLIS may write it) */
    trans_t tra = ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
    trans_t trb = tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
    if (g->small) { /* element (i, l) of op(A), (l, j) of op(B): a transpose swaps strides */
        tfl__cpu_gemm_small(m, n, kk, (const float *)pa, ta ? A.cs : A.rs, ta ? A.rs : A.cs,
                            (const float *)pb, tb ? B.cs : B.rs, tb ? B.rs : B.cs, (float *)pc);
        return false;
    }
    if (g->narrow && /* op(B) stored by rows (B.cs == 1 here); false: no AVX-512 after all */
        tfl__cpu_gemm_narrow(dt, g->threads, m, n, kk, pa, ta ? A.cs : A.rs, ta ? A.rs : A.cs, pb,
                             B.rs, pc, n, false, g->bias, g->scratch))
        return true;
    if (m * n * kk <= SMALL_GEMM_MACS && !tfl_dtype_is_integer(dt)) {
        if (dt == TFL_DTYPE_FLOAT32)
            gemm_f32(ta, tb, m, n, kk, (const float *)pa, A, (const float *)pb, B, (float *)pc, n);
        else if (dt == TFL_DTYPE_FLOAT64)
            gemm_f64(ta, tb, m, n, kk, (const double *)pa, A, (const double *)pb, B, (double *)pc, n);
        else if (dt == TFL_DTYPE_COMPLEX64)
            gemm_c64(ta, tb, m, n, kk, (const float complex *)pa, A, (const float complex *)pb,
                     B, (float complex *)pc, n);
        else
            gemm_c128(ta, tb, m, n, kk, (const double complex *)pa, A,
                      (const double complex *)pb, B, (double complex *)pc, n);
        return false;
    }
    switch (dt) {
    case TFL_DTYPE_FLOAT32: {
        float one = 1.0f, zero = 0.0f;
        bli_sgemm_ex(tra, trb, m, n, kk, &one, (float *)pa, A.rs, A.cs, (float *)pb, B.rs,
                     B.cs, &zero, (float *)pc, n, 1, real, rntm);
        break;
    }
    case TFL_DTYPE_FLOAT64: {
        double one = 1.0, zero = 0.0;
        bli_dgemm_ex(tra, trb, m, n, kk, &one, (double *)pa, A.rs, A.cs, (double *)pb, B.rs,
                     B.cs, &zero, (double *)pc, n, 1, real, rntm);
        break;
    }
    case TFL_DTYPE_COMPLEX64: {
        scomplex one = {1.0f, 0.0f}, zero = {0.0f, 0.0f};
        bli_cgemm_ex(tra, trb, m, n, kk, &one, (scomplex *)pa, A.rs, A.cs, (scomplex *)pb,
                     B.rs, B.cs, &zero, (scomplex *)pc, n, 1, cplx, rntm);
        break;
    }
    case TFL_DTYPE_COMPLEX128: {
        dcomplex one = {1.0, 0.0}, zero = {0.0, 0.0};
        bli_zgemm_ex(tra, trb, m, n, kk, &one, (dcomplex *)pa, A.rs, A.cs, (dcomplex *)pb,
                     B.rs, B.cs, &zero, (dcomplex *)pc, n, 1, cplx, rntm);
        break;
    }
    case TFL_DTYPE_INT32:
        gemm_i32(ta, tb, m, n, kk, (const int32_t *)pa, A, (const int32_t *)pb, B,
                 (int32_t *)pc, n);
        break;
    default:
        gemm_i64(ta, tb, m, n, kk, (const int64_t *)pa, A, (const int64_t *)pb, B,
                 (int64_t *)pc, n);
        break;
    }
    return false;
}

/* One product, and FusedMatMul's bias added to its rows: the same roundings as MatMul then Add */
static void gemm_one(const gemm_call *g, tfl_dtype dt, char *pa, char *pb, char *pc)
{
    if (!gemm_product(g, dt, pa, pb, pc) && g->bias)
        tfl__cpu_add_rows(dt, g->bias_threads, g->m, g->n, pc, g->n, g->bias);
}

#define ADD_ROWS_(name, T)                                                                  \
    TFL_WIDE_LOOPS static void name(int64_t i0, int64_t i1, int64_t n, T *c, int64_t ldc,  \
                                    const T *restrict bias)                                 \
    {                                                                                       \
        for (int64_t i = i0; i < i1; i++) {                                                 \
            T *restrict row = c + i * ldc;                                                  \
            for (int64_t j = 0; j < n; j++) row[j] += bias[j];                              \
        }                                                                                   \
    }
ADD_ROWS_(add_rows_f32, float)
ADD_ROWS_(add_rows_f64, double)
#undef ADD_ROWS_

void tfl__cpu_add_rows(tfl_dtype dt, int threads, int64_t m, int64_t n, void *c, int64_t ldc,
                       const void *bias)
{
    const bool f32 = dt == TFL_DTYPE_FLOAT32;
    if (m * n < TFL_CPU_PARALLEL_MIN || threads < 2 || m < threads) {
        /* no parallel region: inside attention's side-by-side products even an inactive one
         * is nested, which costs libgomp a team on every call */
        if (f32)
            add_rows_f32(0, m, n, c, ldc, bias);
        else
            add_rows_f64(0, m, n, c, ldc, bias);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; t++) {
        const int64_t i0 = m * t / threads, i1 = m * (t + 1) / threads;
        if (f32)
            add_rows_f32(i0, i1, n, c, ldc, bias);
        else
            add_rows_f64(i0, i1, n, c, ldc, bias);
    }
}

/* Where product bi of a batched MatMul finds its operands: batch strides of a and b aligned to
 * c's batch axes (0 where broadcast), in elements of es bytes. */
typedef struct batch_map {
    const tfl_tensor *a, *b, *c;
    int batch_rank;
    int64_t sa[TFL_MAX_RANK], sb[TFL_MAX_RANK];
    int64_t es;
} batch_map;

static void batch_item(const gemm_call *g, const batch_map *map, int64_t bi)
{
    const tfl_tensor *c = map->c;
    int64_t oa = 0, ob = 0, rest = bi;
    for (int d = map->batch_rank - 1; d >= 0; d--) {
        int64_t idx = rest % c->shape[d];
        rest /= c->shape[d];
        oa += idx * map->sa[d];
        ob += idx * map->sb[d];
    }
    char *pa = (char *)tfl__data(map->a) + oa * map->es;
    char *pb = (char *)tfl__data(map->b) + ob * map->es;
    char *pc = (char *)tfl__data(c) + bi * g->m * g->n * map->es;
    gemm_one(g, (tfl_dtype)c->dtype, pa, pb, pc);
}

/*
 * op(b) = b^T of float32/float64 as a tensor of its own, each matrix row-major (k x n): BLIS's
 * small-matrix kernels run A B^T with B stored by rows through their dot-product variant, at
 * 0.6-0.7x of A B's speed on the shapes of a transformer (dX = dY W^T, attention's Q K^T);
 * the copy reads b once (k n per matrix, against m n k multiply-adds). NULL: keep b as it is
 * (another dtype, a product small enough for the plain loop, b not packed by rows), or no
 * memory (*failed: the op fails, as a refused allocation must never change the numbers).
 */
static tfl_tensor *transposed_b(const tfl__kcall *k, const tfl_tensor *b, int64_t m, int64_t n,
                                int64_t kk, bool *failed)
{
    tfl_dtype dt = (tfl_dtype)b->dtype;
    if ((dt != TFL_DTYPE_FLOAT32 && dt != TFL_DTYPE_FLOAT64) || m * n * kk <= SMALL_GEMM_MACS ||
        b->strides[b->rank - 1] != 1 || b->strides[b->rank - 2] != kk)
        return NULL;
    int64_t shape[TFL_MAX_RANK];
    memcpy(shape, b->shape, sizeof(int64_t) * (size_t)b->rank);
    shape[b->rank - 2] = kk, shape[b->rank - 1] = n;
    int64_t mats = b->numel / (n * kk), rs = 1;
    for (int d = 0; d < b->rank - 2; d++) /* b's batch axes must be packed too */
        rs *= b->shape[d];
    if (rs != mats || !tfl_tensor_is_contiguous(b)) return NULL;
    tfl_tensor *t = tfl__tensor_alloc(k->ctx, k->dev, dt, b->rank, shape);
    *failed = t == NULL;
    if (!t) return NULL;
    /* src: n x kk rows, dst: kk x n rows. float32 by 8 x 8 AVX transposes: as an element loop
     * in blocks of 16 x 16 (float64's below) the copy added 29 us to a 2048x128x128 dY W^T and
     * 94-106 us to a 2048x512x128 one on 2 threads, now 16 and 45-85 */
    for (int64_t q = 0; q < mats; q++) {
        const size_t off = (size_t)(q * n * kk);
        if (dt == TFL_DTYPE_FLOAT32) {
            tfl__cpu_transpose_f32(n, kk, (const float *)tfl__data(b) + off, kk,
                                   (float *)tfl__data(t) + off, n);
            continue;
        }
        const double *s = (const double *)tfl__data(b) + off;
        double *d = (double *)tfl__data(t) + off;
        for (int64_t i0 = 0; i0 < n; i0 += 16) /* blocks of 16 x 16 keep both in cache lines */
            for (int64_t j0 = 0; j0 < kk; j0 += 16)
                for (int64_t i = i0; i < i0 + 16 && i < n; i++)
                    for (int64_t j = j0; j < j0 + 16 && j < kk; j++) d[j * n + i] = s[i * kk + j];
    }
    return t;
}

/* op(a) op(b) (+ bias: n contiguous values, or NULL) into k->out */
static tfl_status matmul_run(const tfl__kcall *k, const void *bias)
{
    const tfl_tensor *a = k->in[0], *b = k->in[1];
    tfl_tensor *c = k->out;
    unsigned flags = ((const tfl__matmul_attrs *)k->attrs)->flags;
    bool ta = flags & TFL_TRANSPOSE_A, tb = flags & TFL_TRANSPOSE_B;
    int64_t m = c->shape[c->rank - 2], n = c->shape[c->rank - 1];
    int64_t kk = a->shape[a->rank - (ta ? 2 : 1)];
    int batch_rank = c->rank - 2;
    int64_t nbatch = tfl__numel(batch_rank, c->shape);
    size_t es = tfl_dtype_size((tfl_dtype)c->dtype);
    if (kk == 0) {
        memset(tfl__data(c), 0, (size_t)c->numel * es);
        if (bias)
            tfl__cpu_add_rows((tfl_dtype)c->dtype, k->ctx->num_threads, c->numel / n, n,
                              tfl__data(c), n, bias);
        return TFL_OK;
    }
    gemm_state *gs = ((const tfl__cpu_device *)k->dev)->gemm;
    tfl_dtype dt = (tfl_dtype)c->dtype;
    const bool float_real = dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64;
    const bool packed = gs && gs->has_packed && !gs->own && float_real && packed_pays(ta, m, n, kk);
    /* attention's per-head products, each on one thread: gemm_small.c's kernel, 1.25-2.1x
     * BLIS there on a Zen 3 core (64x32x64 1.25, 64x64x32 1.35, and 2.1 as A B^T) */
    const double flops = 2.0 * (double)m * (double)n * (double)kk, big = 2.0 * 64 * 64 * 64;
    const bool small = dt == TFL_DTYPE_FLOAT32 && flops < big && m <= TFL_GEMM_SMALL_MAX_M &&
                       n <= TFL_GEMM_SMALL_MAX && kk <= TFL_GEMM_SMALL_MAX &&
                       tfl__cpu_gemm_small_runs();
    /* products up to 256 wide (or 512 over a depth of 1024 and more: a kernel's gradient),
     * each big enough for the threads, on an AVX-512 CPU: gemm_narrow.c's kernel, which splits
     * C's rows between the threads and packs only B's panels; on a 5th-generation Xeon (2
     * threads) it ran the transformer's 2048x128x128 16% faster than BLIS's skx kernels, its
     * A^T B with k = 2048 9-26% faster, but 2048x512x128 11-19% slower; the step 7% faster.
     * op(B) must be stored by rows: b^T is copied first. */
    const bool narrow_try = float_real && !small && flops >= big && m >= 48 &&
                            (n <= 256 || (kk >= 1024 && n <= 512)) && tfl__cpu_gemm_narrow_runs();
    bool failed = false; /* packing reads b^T as fast as b: no copy */
    const bool copy_bt = tb && (!packed || narrow_try) && !small;
    tfl_tensor *bt = copy_bt ? transposed_b(k, b, m, n, kk, &failed) : NULL;
    if (copy_bt && !bt && !failed && float_real &&
        m * n * kk > SMALL_GEMM_MACS && !tfl_tensor_is_contiguous(b)) {
        /* a b^T not stored whole (a column slice, strided batches): made contiguous first, so
         * that BLIS never runs the storage that adds up differently on 1 and 2 threads */
        tfl_tensor *tmp;
        const tfl_tensor *bc = tfl__cpu_contiguous(k->ctx, b, &tmp);
        if (!bc) return k->ctx->err_code;
        bt = transposed_b(k, bc, m, n, kk, &failed);
        tfl_tensor_release(tmp);
    }
    if (failed) return k->ctx->err_code;
    if (bt) b = bt, tb = false;
    /* b stored by columns (a transposed view) on the small-matrix kernels: copied by rows first,
     * as b^T above; BLIS's kernels for that storage add up differently on 1 and 2 threads */
    if (!tb && !packed && !small && float_real && m * n * kk > SMALL_GEMM_MACS &&
        b->strides[b->rank - 1] != 1 && b->strides[b->rank - 2] == 1 &&
        b->shape[b->rank - 1] > 1 && b->shape[b->rank - 2] > 1) {
        const tfl_tensor *bc = tfl__cpu_contiguous(k->ctx, b, &bt);
        if (!bc) return k->ctx->err_code;
        b = bc;
    }
    batch_map map = {.a = a, .b = b, .c = c, .batch_rank = batch_rank, .es = (int64_t)es};
    for (int d = 0; d < batch_rank; d++) {
        int da = d - (batch_rank - (a->rank - 2)), db = d - (batch_rank - (b->rank - 2));
        map.sa[d] = da >= 0 && a->shape[da] != 1 ? a->strides[da] : 0;
        map.sb[d] = db >= 0 && b->shape[db] != 1 ? b->strides[db] : 0;
    }
    mat A = stored(a), B = stored(b);
    const bool narrow = narrow_try && !tb && b->strides[b->rank - 1] == 1;
    cntx_t *real = gs && gs->own ? &gs->real : packed ? &gs->packed : NULL;
    cntx_t *cplx = gs && gs->own ? &gs->cplx : NULL;
    /* A product big enough runs on the context's threads inside BLIS; a batch of smaller ones
     * (attention's heads) runs its products side by side, each on one thread. Either way each
     * output matrix is one fixed computation, so the result never depends on the threads. */
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    const int threads = k->ctx->num_threads;
    bli_rntm_set_num_threads(flops >= big ? threads : 1, &rntm);
    const bool side_by_side = flops < big && nbatch > 1 && flops * (double)nbatch >= big;
    /* the narrow kernel's pieces of a deep k (one product at a time: batches run in turn) */
    const size_t scratch_bytes = narrow ? tfl__cpu_gemm_narrow_scratch(dt, m, n, kk) : 0;
    size_t scratch_got = 0;
    void *scratch = NULL;
    if (scratch_bytes &&
        !(scratch = tfl__allocator_get(&k->dev->alloc, scratch_bytes, &scratch_got))) {
        tfl_tensor_release(bt);
        return k->ctx->err_code;
    }
    const gemm_call g = {.ta = ta,
                         .tb = tb,
                         .small = small,
                         .narrow = narrow,
                         .scratch = scratch,
                         .bias = bias,
                         .threads = threads,
                         .bias_threads = flops >= big ? threads : 1,
                         .m = m,
                         .n = n,
                         .kk = kk,
                         .A = A,
                         .B = B,
                         .real = real,
                         .cplx = cplx,
                         .rntm = &rntm};
    /* a parallel region only where it runs threads: BLIS's own region inside even an inactive
     * one is nested, which costs libgomp a new team on every call */
    if (side_by_side && threads > 1) {
#pragma omp parallel for num_threads(threads)
        for (int64_t bi = 0; bi < nbatch; bi++) batch_item(&g, &map, bi);
    } else {
        for (int64_t bi = 0; bi < nbatch; bi++) batch_item(&g, &map, bi);
    }
    if (scratch) tfl__allocator_put(&k->dev->alloc, scratch, scratch_got);
    tfl_tensor_release(bt);
    return TFL_OK;
}

/* MatMul (a, b), and FusedMatMul (a, b, bias): op(a) op(b) + bias */
static tfl_status k_matmul(const tfl__kcall *k)
{
    if (k->out->numel == 0) return TFL_OK;
    if (k->n_in < 3) return matmul_run(k, NULL);
    tfl_tensor *tmp = NULL; /* a bias view with a stride, copied */
    const tfl_tensor *bias = tfl__cpu_contiguous(k->ctx, k->in[2], &tmp);
    if (!bias) return k->ctx->err_code;
    const tfl_status st = matmul_run(k, tfl__data(bias));
    tfl_tensor_release(tmp);
    return st;
}

/* ---- the GEMM other kernels share (conv) --------------------------------------------------- */

/* A stride BLIS accepts for a dim of size 1: it must span the other dim. */
static void fix_strides(int64_t rows, int64_t cols, int64_t *rs, int64_t *cs)
{
    if (rows == 1 && cols == 1) *rs = *cs = 1;
    else if (rows == 1) *rs = cols * *cs;
    else if (cols == 1) *cs = rows * *rs;
}

#define LOOP_GEMM_STRIDED(name, T)                                                          \
    static void name(int64_t m, int64_t n, int64_t k, const T *a, int64_t rsa, int64_t csa, \
                     const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc,       \
                     int64_t csc)                                                           \
    {                                                                                       \
        for (int64_t i = 0; i < m; i++)                                                     \
            for (int64_t j = 0; j < n; j++) {                                               \
                T acc = 0;                                                                  \
                for (int64_t l = 0; l < k; l++) acc += a[i * rsa + l * csa] * b[l * rsb + j * csb]; \
                T *cij = c + i * rsc + j * csc;                                             \
                *cij = beta == 0 ? acc : beta * *cij + acc;                                 \
            }                                                                               \
    }
LOOP_GEMM_STRIDED(loop_sgemm, float)
LOOP_GEMM_STRIDED(loop_dgemm, double)

void tfl__cpu_gemm(const tfl__device *dev, tfl_dtype dt, int threads, int64_t m, int64_t n,
                   int64_t k, const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                   int64_t csb, double beta, void *c, int64_t rsc, int64_t csc)
{
    bool f32 = dt == TFL_DTYPE_FLOAT32;
    if (m == 0 || n == 0) return;
    if (m * n * k <= SMALL_GEMM_MACS) {
        if (f32)
            loop_sgemm(m, n, k, a, rsa, csa, b, rsb, csb, (float)beta, c, rsc, csc);
        else
            loop_dgemm(m, n, k, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
        return;
    }
    fix_strides(m, k, &rsa, &csa);
    fix_strides(k, n, &rsb, &csb);
    fix_strides(m, n, &rsc, &csc);
    gemm_state *gs = ((const tfl__cpu_device *)dev)->gemm;
    cntx_t *conv = gs && gs->has_conv ? &gs->conv : NULL;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(threads, &rntm);
    if (f32) {
        float one = 1.0f, fb = (float)beta;
        bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (float *)a, rsa, csa,
                     (float *)b, rsb, csb, &fb, c, rsc, csc, conv, &rntm);
    } else {
        double one = 1.0;
        bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (double *)a, rsa, csa,
                     (double *)b, rsb, csb, &beta, c, rsc, csc, conv, &rntm);
    }
}

const tfl__kernel tfl__cpu_matmul_kernels[TFL_OP_COUNT] = {
    [TFL_OP_MATMUL] = {k_matmul, TFL_MASK_INT | TFL_DT(FLOAT32) | TFL_DT(FLOAT64) | TFL_MASK_COMPLEX,
                       NULL},
    [TFL_OP_FUSED_MATMUL] = {k_matmul, TFL_DT(FLOAT32) | TFL_DT(FLOAT64), NULL},
};
