/* test_batch_norm_training.c: cmocka tests of tfl_batch_norm_training (the fused
 * training-mode BatchNorm: BatchMoments, BatchNormTraining, BatchNormTrainingGrad): values,
 * the batch statistics it gives out and the gradients of x, gamma and beta against a
 * double-precision reference computed here and against the composition it replaces
 * (tfl_moments feeding tfl_batch_norm), many blocks of rows, a mean far from 0, float16,
 * strided inputs, the same bits on 1 and 2 threads, an empty batch, and error codes and
 * messages. The gradients' own gradients are checked by finite differences in
 * tests/tape/test_gradcheck.c. */
#include "test_ops_helpers.h"

#define BNT "BatchNormTraining"

/* per channel of x (rows, c) in double: mean, biased variance, y, and the gradients for the
 * cotangent w: dx = g rstd (w - mean(w) - xhat mean(w xhat)), dgamma = sum(w xhat),
 * dbeta = sum(w) */
typedef struct ref {
    double *mean, *var, *y, *dx, *dgamma, *dbeta;
} ref;

static ref ref_new(int64_t rows, int64_t c)
{
    ref r = {calloc((size_t)c, 8),          calloc((size_t)c, 8), calloc((size_t)(rows * c), 8),
             calloc((size_t)(rows * c), 8), calloc((size_t)c, 8), calloc((size_t)c, 8)};
    assert_true(r.mean && r.var && r.y && r.dx && r.dgamma && r.dbeta);
    return r;
}

static void ref_free(ref *r)
{
    free(r->mean), free(r->var), free(r->y), free(r->dx), free(r->dgamma), free(r->dbeta);
}

static void ref_compute(const double *x, const double *g, const double *b, const double *w,
                        int64_t rows, int64_t c, double eps, ref *r)
{
    for (int64_t j = 0; j < c; j++) {
        double m = 0, v = 0, sw = 0, swx = 0;
        for (int64_t i = 0; i < rows; i++)
            m += x[i * c + j];
        m /= (double)rows;
        for (int64_t i = 0; i < rows; i++)
            v += (x[i * c + j] - m) * (x[i * c + j] - m);
        v /= (double)rows;
        const double rs = 1 / sqrt(v + eps);
        for (int64_t i = 0; i < rows; i++) {
            const double xh = (x[i * c + j] - m) * rs;
            r->y[i * c + j] = xh * g[j] + b[j];
            sw += w[i * c + j];
            swx += w[i * c + j] * xh;
        }
        for (int64_t i = 0; i < rows; i++) {
            const double xh = (x[i * c + j] - m) * rs;
            r->dx[i * c + j] =
                g[j] * rs * (w[i * c + j] - sw / (double)rows - xh * swx / (double)rows);
        }
        r->mean[j] = m, r->var[j] = v, r->dgamma[j] = swx, r->dbeta[j] = sw;
    }
}

/* y, mean, variance and the three gradients of sum(y w) through a tape; out[6] */
static void fused(tfl_ctx *ctx, tfl_tensor *x, tfl_tensor *g, tfl_tensor *b, tfl_tensor *w,
                  double eps, tfl_tensor *out[6])
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    const tfl_tensor *src[3] = {x, g, b};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tfl_tape_watch(tape, src[i]), TFL_OK);
    out[0] = tfl_batch_norm_training(ctx, x, g, b, eps, &out[1], &out[2]);
    assert_non_null(out[0]);
    tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, out[0], w), 0, NULL, false);
    assert_int_equal(tfl_tape_gradient(tape, loss, 3, src, &out[3], 0), TFL_OK);
    tfl_tape_free(tape);
}

/* the same through tfl_moments and tfl_batch_norm */
static void composed(tfl_ctx *ctx, tfl_tensor *x, tfl_tensor *g, tfl_tensor *b, tfl_tensor *w,
                     double eps, tfl_tensor *out[6])
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    const tfl_tensor *src[3] = {x, g, b};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tfl_tape_watch(tape, src[i]), TFL_OK);
    int axes[TFL_MAX_RANK], rank = tfl_tensor_rank(x);
    for (int d = 0; d < rank - 1; d++)
        axes[d] = d;
    assert_int_equal(tfl_moments(ctx, x, rank - 1, axes, false, &out[1], &out[2]), TFL_OK);
    out[0] = tfl_batch_norm(ctx, x, out[1], out[2], b, g, eps);
    tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, out[0], w), 0, NULL, false);
    assert_int_equal(tfl_tape_gradient(tape, loss, 3, src, &out[3], 0), TFL_OK);
    tfl_tape_free(tape);
}

/* t's bytes in a new host buffer (free it), their count in *bytes */
static void *bytes_of(const tfl_tensor *t, size_t *bytes)
{
    *bytes = (size_t)tfl_tensor_numel(t) * tfl_dtype_size(tfl_tensor_dtype(t));
    void *p = malloc(*bytes ? *bytes : 1);
    assert_non_null(p);
    assert_int_equal(tfl_tensor_to_host(t, p, *bytes), TFL_OK);
    return p;
}

static void fill(double *v, int64_t n, uint64_t *seed, double lo, double span)
{
    for (int64_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = lo + span * (double)(*seed >> 40) / 16777216.0;
    }
}

/* Shapes with one block of rows and many (blocks of 16384 elements' worth of rows: 1500 x 24
 * is 3 blocks, the last short), channels 1 to 2500 (tiles of 1024), in float64 and float32: y, the
 * statistics and the gradients against the double reference, and the composition's. */
static void test_vs_reference_and_composition(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* (40, 2500): three tiles of channels, the last short */
    static const int64_t shapes[][2] = {{6, 3},    {1500, 24}, {9, 1},
                                        {70, 300}, {20000, 1}, {40, 2500}};
    static const tfl_dtype dts[] = {TH_F64, TH_F32};
    uint64_t seed = 99;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t rows = shapes[s][0], c = shapes[s][1], n = rows * c;
        double *x = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
        double *g = malloc(sizeof(double) * (size_t)c), *b = malloc(sizeof(double) * (size_t)c);
        assert_true(x && w && g && b);
        fill(x, n, &seed, -2, 7);
        fill(w, n, &seed, -1, 2);
        fill(g, c, &seed, 0.5, 1);
        fill(b, c, &seed, -0.5, 1);
        ref r = ref_new(rows, c);
        ref_compute(x, g, b, w, rows, c, 1e-3, &r);
        const double *want[6] = {r.y, r.mean, r.var, r.dx, r.dgamma, r.dbeta};
        const int64_t counts[6] = {n, c, c, n, c, c};
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            const tfl_dtype dt = dts[d];
            const double tol = dt == TH_F64 ? 1e-12 : 2e-5; /* the sums of 20000 in float32 */
            const int64_t xs[2] = {rows, c};
            tfl_tensor *xt = TH_TENSOR_N(ctx, dt, 2, xs, x, n),
                       *wt = TH_TENSOR_N(ctx, dt, 2, xs, w, n);
            tfl_tensor *gt = TH_TENSOR_N(ctx, dt, 1, &c, g, c),
                       *bt = TH_TENSOR_N(ctx, dt, 1, &c, b, c);
            tfl_tensor *f[6], *k[6];
            fused(ctx, xt, gt, bt, wt, 1e-3, f);
            composed(ctx, xt, gt, bt, wt, 1e-3, k);
            for (int i = 0; i < 6; i++) {
                const int64_t *shape = counts[i] == n ? xs : &c;
                const int rank = counts[i] == n ? 2 : 1;
                /* the sums (dgamma, dbeta) scale with the rows */
                const double t = i >= 4 ? tol * sqrt((double)rows) : tol;
                TH_EXPECT_N(ctx, f[i], dt, rank, shape, want[i], counts[i], t);
                double *kv = malloc(sizeof(double) * (size_t)counts[i]);
                assert_non_null(kv);
                assert_int_equal(tfl_tensor_to_host(tfl_cast(ctx, k[i], TH_F64), kv,
                                                    sizeof(double) * (size_t)counts[i]),
                                 TFL_OK);
                TH_EXPECT_N(ctx, f[i], dt, rank, shape, kv, counts[i], 2 * t);
                free(kv);
            }
        }
        ref_free(&r);
        free(x), free(w), free(g), free(b);
    }
    th_end(ctx);
}

/* A mean 10^4 times the spread, over 64 blocks: the blocks' merge keeps the variance exact
 * where a one-pass sum of squares would lose it to cancellation; float16 through float32;
 * a transposed (strided) x; gamma and beta left out */
static void test_far_mean_half_strided(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t rows = 16384 * 2, c = 32, n = rows * c; /* 64 blocks of 512 rows */
    double *x = malloc(sizeof(double) * (size_t)n);
    assert_non_null(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = 1e4 + sin(0.37 * (double)i) + 0.001 * (double)(i % 7);
    double *ones = malloc(sizeof(double) * (size_t)c), *zeros = calloc((size_t)c, 8);
    double *w = calloc((size_t)n, 8);
    assert_true(ones && zeros && w);
    for (int64_t j = 0; j < c; j++)
        ones[j] = 1;
    ref r = ref_new(rows, c);
    ref_compute(x, ones, zeros, w, rows, c, 1e-5, &r);
    tfl_tensor *xt = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(rows, c), x, n), *mean, *var;
    tfl_tensor *y = tfl_batch_norm_training(ctx, xt, NULL, NULL, 1e-5, &mean, &var);
    TH_EXPECT_N(ctx, var, TH_F64, 1, &c, r.var, c, 1e-12);
    TH_EXPECT_N(ctx, mean, TH_F64, 1, &c, r.mean, c, 1e-13);
    TH_EXPECT_N(ctx, y, TH_F64, 2, TH_SHAPE(rows, c), r.y, n, 1e-9); /* the means: 5e-11 apart */
    ref_free(&r);
    /* float16: the statistics in float32, rounded once; y within float16's rounding */
    double hx[24], hw[24] = {0}, hg[4] = {1, 1, 1, 1}, hb[4] = {0};
    for (int i = 0; i < 24; i++)
        hx[i] = (double)((i * 7) % 11) - 4;
    ref h = ref_new(6, 4);
    ref_compute(hx, hg, hb, hw, 6, 4, 1e-3, &h);
    tfl_tensor *hxt = TH_TENSOR_N(ctx, TH_F16, 2, TH_SHAPE(6, 4), hx, 24);
    tfl_tensor *hy = tfl_batch_norm_training(ctx, hxt, NULL, NULL, 1e-3, NULL, NULL);
    assert_int_equal(tfl_tensor_dtype(hy), TH_F16);
    TH_EXPECT_N(ctx, hy, TH_F16, 2, TH_SHAPE(6, 4), h.y, 24, 4e-3);
    /* a view: the transpose of (4, 6) is (6, 4) with strides */
    tfl_tensor *tt = tfl_transpose(ctx, TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(4, 6), hx, 24), NULL);
    double tx[24];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++)
            tx[i * 4 + j] = hx[j * 6 + i];
    ref_compute(tx, hg, hb, hw, 6, 4, 1e-3, &h);
    TH_EXPECT_N(ctx, tfl_batch_norm_training(ctx, tt, NULL, NULL, 1e-3, NULL, NULL), TH_F64, 2,
                TH_SHAPE(6, 4), h.y, 24, 1e-14);
    ref_free(&h);
    free(x), free(ones), free(zeros), free(w);
    th_end(ctx);
}

/* float16 with a per-channel sum of dy past float16's 65,504: the sums stay float32, so dx
 * is the composition's in float32 (dy 32 everywhere: dx about 0), not inf */
static void test_half_sums_in_float32(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t rows = 4096, c = 2, n = rows * c;
    double *x = malloc(sizeof(double) * (size_t)n);
    assert_non_null(x);
    uint64_t seed = 3;
    fill(x, n, &seed, -2, 4);
    tfl_tensor *dx[2];
    for (int half = 0; half < 2; half++) {
        tfl_tensor *xt = TH_TENSOR_N(ctx, half ? TH_F16 : TH_F32, 2, TH_SHAPE(rows, c), x, n);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, xt), TFL_OK);
        tfl_tensor *y = tfl_batch_norm_training(ctx, xt, NULL, NULL, 1e-3, NULL, NULL);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_cast(ctx, y, TH_F32), 0, NULL, false);
        loss = tfl_mul(ctx, loss, tfl_scalar_f32(ctx, 32));
        const tfl_tensor *src = xt;
        assert_int_equal(tfl_tape_gradient(tape, loss, 1, &src, &dx[half], 0), TFL_OK);
        tfl_tape_free(tape);
        dx[half] = tfl_cast(ctx, dx[half], TH_F64);
    }
    double *d32 = malloc(sizeof(double) * (size_t)n), *d16 = malloc(sizeof(double) * (size_t)n);
    assert_true(d32 && d16);
    assert_int_equal(tfl_tensor_to_host(dx[0], d32, sizeof(double) * (size_t)n), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(dx[1], d16, sizeof(double) * (size_t)n), TFL_OK);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(d16[i]) || fabs(d16[i]) > 0.01 || fabs(d32[i]) > 0.01)
            fail_msg("dx[%lld]: float16 %g, float32 %g (want about 0)", (long long)i, d16[i],
                     d32[i]);
    free(d32), free(d16), free(x);
    th_end(ctx);
}

/* more than TFL_CPU_PARALLEL_MIN elements: y, the statistics and dx the same bits on 1 and
 * 2 threads */
static void test_threads_same_bits(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t rows = 4096, c = 40, n = rows * c;
    double *x = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
    assert_true(x && w);
    uint64_t seed = 7;
    fill(x, n, &seed, -3, 9);
    fill(w, n, &seed, -1, 2);
    double g[40], b[40];
    fill(g, c, &seed, 0.5, 1);
    fill(b, c, &seed, -1, 2);
    tfl_tensor *xt = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(rows, c), x, n);
    tfl_tensor *wt = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(rows, c), w, n);
    tfl_tensor *gt = TH_TENSOR_N(ctx, TH_F32, 1, &c, g, c),
               *bt = TH_TENSOR_N(ctx, TH_F32, 1, &c, b, c);
    void *got[2][6];
    size_t bytes[6];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        tfl_tensor *out[6];
        fused(ctx, xt, gt, bt, wt, 1e-3, out);
        for (int i = 0; i < 6; i++)
            got[t][i] = bytes_of(out[i], &bytes[i]);
    }
    for (int i = 0; i < 6; i++) {
        assert_memory_equal(got[0][i], got[1][i], bytes[i]);
        free(got[0][i]), free(got[1][i]);
    }
    free(x), free(w);
    th_end(ctx);
}

/* a batch of no rows: an empty y, and NaN statistics (tfl_moments' mean of nothing) */
static void test_empty_batch(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 3)), *mean, *var;
    tfl_tensor *y = tfl_batch_norm_training(ctx, x, NULL, NULL, 1e-3, &mean, &var);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_numel(y), 0);
    float m[3], v[3];
    assert_int_equal(tfl_tensor_to_host(mean, m, sizeof m), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(var, v, sizeof v), TFL_OK);
    for (int j = 0; j < 3; j++)
        assert_true(isnan(m[j]) && isnan(v[j]));
    th_end(ctx);
}

static void test_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *c3 = TH_T(ctx, TH_F32, (3), (1, 1, 1)), *c4 = TH_T(ctx, TH_F32, (4), (1, 1, 1, 1));
    tfl_tensor *mean = c3, *var = c3; /* set to NULL on every error */
    TH_EXPECT_INVALID(
        ctx, tfl_batch_norm_training(ctx, x, c4, c3, 1e-3, &mean, &var), BNT,
        "gamma must have shape (3,) (the last dimension of x, whose shape is (2, 3)), "
        "got (4,)");
    assert_null(mean);
    assert_null(var);
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, x, NULL, c4, 1e-3, NULL, NULL), BNT,
                      "beta must have shape (3,)");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, x, c3, c3, 0, NULL, NULL), BNT,
                      "epsilon must be > 0, got 0");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, x, c3, c3, NAN, NULL, NULL), BNT,
                      "epsilon must be > 0");
    tfl_tensor *d3 = TH_T(ctx, TH_F64, (3), (1, 1, 1));
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, x, d3, NULL, 1e-3, NULL, NULL), BNT,
                      "dtypes differ: x is float32, gamma is float64");
    tfl_tensor *xi = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, xi, NULL, NULL, 1e-3, NULL, NULL), BNT,
                      "dtype int32 is not supported; expected one of float16, bfloat16, float32, "
                      "float64");
    TH_EXPECT_INVALID(
        ctx, tfl_batch_norm_training(ctx, TH_T0(ctx, TH_F32, 1), NULL, NULL, 1e-3, NULL, NULL), BNT,
        "x must have rank >= 1 (channels on the last axis), got shape ()");
    mean = var = c3;
    TH_EXPECT_INVALID(ctx, tfl_batch_norm_training(ctx, NULL, NULL, NULL, 1e-3, &mean, &var), BNT,
                      "input 0 is NULL");
    assert_null(mean);
    assert_null(var);
    mean = c3;
    assert_null(tfl_batch_norm_training(NULL, x, NULL, NULL, 1e-3, &mean, NULL));
    assert_null(mean);
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_vs_reference_and_composition),
        TH_TEST(test_far_mean_half_strided),
        TH_TEST(test_half_sums_in_float32),
        TH_TEST(test_threads_same_bits),
        TH_TEST(test_empty_batch),
        TH_TEST(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
