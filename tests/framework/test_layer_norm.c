/* test_layer_norm.c: cmocka tests of tfl_layer_norm (the fused LayerNorm op): values against a
 * double-precision reference computed here (float64, float32, float16 through float32), a
 * hand-worked row, gamma and beta left out, a constant row (variance 0: y = beta), strided
 * inputs, big tensors on 1 and 2 threads (the same bits), and error codes and messages.
 * gamma's and beta's gradients (LayerNormParamGrad) against double sums over 1-700 rows.
 * Gradients (LayerNormGrad and its own gradient) are checked by finite differences in
 * tests/tape/test_gradcheck.c, and the LayerNormalization layer against PyTorch in
 * tests/layers/test_norm_pool_layers.c. */
#include "test_ops_helpers.h"

#define LN "LayerNorm"

/* y of rows x n in double: (x - mean) / sqrt(var + eps) * gamma + beta (gamma, beta NULL: 1, 0) */
static void ref_layer_norm(const double *x, const double *gamma, const double *beta, int64_t rows,
                           int64_t n, double eps, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * n;
        double m = 0, v = 0;
        for (int64_t j = 0; j < n; j++) m += xr[j];
        m /= (double)n;
        for (int64_t j = 0; j < n; j++) v += (xr[j] - m) * (xr[j] - m);
        v /= (double)n;
        for (int64_t j = 0; j < n; j++)
            y[r * n + j] = (xr[j] - m) / sqrt(v + eps) * (gamma ? gamma[j] : 1) + (beta ? beta[j] : 0);
    }
}

/* one row worked by hand: x = (1, 2, 3, 6), mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5 */
static void test_layer_norm_hand(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F64, (1, 4), (1, 2, 3, 6));
    const double s = 1 / sqrt(3.5 + 0.5);
    TH_EXPECT(ctx, tfl_layer_norm(ctx, x, NULL, NULL, 0.5), TH_F64, (1, 4),
              (-2 * s, -s, 0, 3 * s), 1e-15);
    tfl_tensor *g = TH_T(ctx, TH_F64, (4), (2, 1, 1, -1)), *b = TH_T(ctx, TH_F64, (4), (0, 0, 5, 1));
    TH_EXPECT(ctx, tfl_layer_norm(ctx, x, g, b, 0.5), TH_F64, (1, 4),
              (-4 * s, -s, 5, 1 - 3 * s), 1e-15);
    /* a constant row has variance 0: the normalised row is 0, so y = beta */
    tfl_tensor *c = TH_T(ctx, TH_F32, (2, 2), (7, 7, -3, -3)), *g2 = TH_T(ctx, TH_F32, (2), (3, 3)),
               *b2 = TH_T(ctx, TH_F32, (2), (0.5, -1));
    TH_EXPECT(ctx, tfl_layer_norm(ctx, c, g2, b2, 1e-5), TH_F32, (2, 2), (0.5, -1, 0.5, -1), 0);
    th_end(ctx);
}

/* random rows of several widths (a vector tail that is not a multiple of 8 included) in each
 * floating dtype, with and without gamma and beta, against the double reference */
static void test_layer_norm_vs_reference(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const int64_t widths[] = {1, 5, 8, 37, 128};
    static const tfl_dtype dts[] = {TH_F64, TH_F32, TH_F16};
    static double x[6 * 128], g[128], b[128], y[6 * 128];
    uint64_t seed = 12345;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        const int64_t n = widths[w], rows = 6, shape[3] = {2, 3, n};
        for (int64_t i = 0; i < rows * n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (double)(seed >> 40) / 16777216.0 * 8 - 3; /* [-3, 5): a mean away from 0 */
        }
        for (int64_t j = 0; j < n; j++) {
            g[j] = 0.5 + 0.01 * (double)j;
            b[j] = 0.1 * (double)(j % 7) - 0.3;
        }
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            const tfl_dtype dt = dts[d];
            const double tol = dt == TH_F64 ? 1e-13 : dt == TH_F32 ? 2e-6 : 4e-3;
            tfl_tensor *xt = TH_TENSOR_N(ctx, dt, 3, shape, x, rows * n);
            tfl_tensor *gt = TH_TENSOR_N(ctx, dt, 1, &n, g, n), *bt = TH_TENSOR_N(ctx, dt, 1, &n, b, n);
            ref_layer_norm(x, g, b, rows, n, 1e-3, y);
            TH_EXPECT_N(ctx, tfl_layer_norm(ctx, xt, gt, bt, 1e-3), dt, 3, shape, y, rows * n, tol);
            ref_layer_norm(x, NULL, NULL, rows, n, 1e-3, y);
            TH_EXPECT_N(ctx, tfl_layer_norm(ctx, xt, NULL, NULL, 1e-3), dt, 3, shape, y, rows * n,
                        tol);
            ref_layer_norm(x, g, NULL, rows, n, 1e-3, y);
            TH_EXPECT_N(ctx, tfl_layer_norm(ctx, xt, gt, NULL, 1e-3), dt, 3, shape, y, rows * n, tol);
        }
    }
    th_end(ctx);
}

/* a transposed (strided) x normalises the rows of the view */
static void test_layer_norm_strided(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F64, (3, 2), (1, 10, 2, 20, 4, 60)); /* view: (1, 2, 4), (10, 20, 60) */
    tfl_tensor *v = tfl_transpose(ctx, x, NULL);
    double xv[6] = {1, 2, 4, 10, 20, 60}, y[6];
    ref_layer_norm(xv, NULL, NULL, 2, 3, 1e-3, y);
    TH_EXPECT_N(ctx, tfl_layer_norm(ctx, v, NULL, NULL, 1e-3), TH_F64, 2, TH_SHAPE(2, 3), y, 6,
                1e-14);
    th_end(ctx);
}

/* more than TFL_CPU_PARALLEL_MIN elements: the same bits on 1 and 2 threads, and the
 * reference; its gradient LayerNormGrad too (through a tape) */
static void test_layer_norm_threads(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t rows = 700, n = 96, shape[2] = {rows, n};
    double *x = malloc(sizeof(double) * (size_t)(rows * n)), *y = malloc(sizeof(double) * (size_t)(rows * n));
    assert_non_null(x);
    assert_non_null(y);
    for (int64_t i = 0; i < rows * n; i++) x[i] = sin(0.01 * (double)i) * 3 + (double)(i % 11);
    tfl_tensor *xt = TH_TENSOR_N(ctx, TH_F32, 2, shape, x, rows * n);
    float *got[2][2];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, xt), TFL_OK);
        tfl_tensor *out = tfl_layer_norm(ctx, xt, NULL, NULL, 1e-5);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, out, out), 0, NULL, false);
        tfl_tensor *dx = NULL;
        const tfl_tensor *src = xt;
        assert_int_equal(tfl_tape_gradient(tape, tfl_mul(ctx, loss, loss), 1, &src, &dx, 0), TFL_OK);
        tfl_tape_free(tape);
        for (int k = 0; k < 2; k++) {
            got[t][k] = malloc(sizeof(float) * (size_t)(rows * n));
            assert_non_null(got[t][k]);
            assert_int_equal(tfl_tensor_to_host(k ? dx : out, got[t][k], sizeof(float) * (size_t)(rows * n)),
                             TFL_OK);
        }
    }
    for (int k = 0; k < 2; k++)
        assert_memory_equal(got[0][k], got[1][k], sizeof(float) * (size_t)(rows * n));
    ref_layer_norm(x, NULL, NULL, rows, n, 1e-5, y);
    for (int64_t i = 0; i < rows * n; i++)
        if (fabs(got[0][0][i] - y[i]) > 2e-6 * fmax(1, fabs(y[i])))
            fail_msg("element %lld: %.9g, want %.9g", (long long)i, got[0][0][i], y[i]);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 2; k++) free(got[t][k]);
    free(x);
    free(y);
    th_end(ctx);
}

/* gamma's and beta's gradients (LayerNormParamGrad: sums over the rows in blocks of 64) for
 * loss = sum(y w): dgamma = sum(w xhat), dbeta = sum(w), against double sums; rows 1, 150
 * (blocks of 64, 64, 22) and 700 x 96; the same bits on 1 and 2 threads */
static void check_param_grads(tfl_ctx *ctx, tfl_dtype dt, int64_t rows, int64_t n, double tol)
{
    const int64_t shape[2] = {rows, n}, len = rows * n;
    double *x = calloc((size_t)len, sizeof(double)), *w = calloc((size_t)len, sizeof(double));
    double *xh = calloc((size_t)len, sizeof(double)), *want = calloc((size_t)(2 * n), sizeof(double));
    assert_true(x && w && xh && want);
    for (int64_t i = 0; i < len; i++) {
        x[i] = sin(0.013 * (double)i) * 3 + (double)(i % 7);
        w[i] = cos(0.029 * (double)i) - 0.25 * (double)(i % 3);
        if (dt == TH_F32) x[i] = (float)x[i], w[i] = (float)w[i];
    }
    ref_layer_norm(x, NULL, NULL, rows, n, 1e-5, xh);
    for (int64_t i = 0; i < len; i++) {
        want[i % n] += w[i] * xh[i];
        want[n + i % n] += w[i];
    }
    tfl_tensor *xt = TH_TENSOR_N(ctx, dt, 2, shape, x, len), *wt = TH_TENSOR_N(ctx, dt, 2, shape, w, len);
    tfl_tensor *ga = tfl_fill(ctx, dt, 1, &n, 1.5), *be = tfl_fill(ctx, dt, 1, &n, -0.5);
    double *got[2];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, ga), TFL_OK);
        assert_int_equal(tfl_tape_watch(tape, be), TFL_OK);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, tfl_layer_norm(ctx, xt, ga, be, 1e-5), wt),
                                          0, NULL, false);
        tfl_tensor *g[2] = {NULL, NULL};
        const tfl_tensor *src[2] = {ga, be};
        assert_int_equal(tfl_tape_gradient(tape, loss, 2, src, g, 0), TFL_OK);
        tfl_tape_free(tape);
        got[t] = malloc(sizeof(double) * (size_t)(2 * n));
        assert_non_null(got[t]);
        for (int k = 0; k < 2; k++)
            assert_int_equal(tfl_tensor_to_host(tfl_cast(ctx, g[k], TH_F64), got[t] + k * n,
                                                sizeof(double) * (size_t)n),
                             TFL_OK);
    }
    assert_memory_equal(got[0], got[1], sizeof(double) * (size_t)(2 * n));
    for (int64_t j = 0; j < 2 * n; j++)
        if (fabs(got[0][j] - want[j]) > tol * fmax(1, fabs(want[j])))
            fail_msg("%s rows %lld sum %lld: %.12g, want %.12g", tfl_dtype_name(dt), (long long)rows,
                     (long long)j, got[0][j], want[j]);
    free(got[0]);
    free(got[1]);
    free(x);
    free(w);
    free(xh);
    free(want);
}

static void test_layer_norm_param_grads(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    check_param_grads(ctx, TH_F64, 1, 4, 1e-12);
    check_param_grads(ctx, TH_F64, 150, 5, 1e-12);
    check_param_grads(ctx, TH_F32, 150, 5, 2e-5);
    check_param_grads(ctx, TH_F32, 700, 96, 2e-5);
    /* no rows: gamma's and beta's gradients are zeros */
    const int64_t n4 = 4, shape[3] = {2, 0, 4};
    tfl_tensor *ga = tfl_fill(ctx, TH_F32, 1, &n4, 1), *be = tfl_fill(ctx, TH_F32, 1, &n4, 0);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 3, shape);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, ga), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, be), TFL_OK);
    tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_layer_norm(ctx, x, ga, be, 1e-5), 0, NULL, false);
    tfl_tensor *g[2] = {NULL, NULL};
    const tfl_tensor *src[2] = {ga, be};
    assert_int_equal(tfl_tape_gradient(tape, loss, 2, src, g, 0), TFL_OK);
    tfl_tape_free(tape);
    TH_EXPECT(ctx, g[0], TH_F32, (4), (0, 0, 0, 0), 0);
    TH_EXPECT(ctx, g[1], TH_F32, (4), (0, 0, 0, 0), 0);
    th_end(ctx);
}

static void test_layer_norm_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *c3 = TH_T(ctx, TH_F32, (3), (1, 1, 1)), *c4 = TH_T(ctx, TH_F32, (4), (1, 1, 1, 1));
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, x, c4, c3, 1e-3), LN,
                      "gamma must have shape (3,) (the last dimension of x, whose shape is (2, 3)), "
                      "got (4,)");
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, x, NULL, c4, 1e-3), LN, "beta must have shape (3,)");
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, x, c3, c3, 0), LN, "epsilon must be > 0, got 0");
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, x, c3, c3, NAN), LN, "epsilon must be > 0");
    tfl_tensor *d3 = TH_T(ctx, TH_F64, (3), (1, 1, 1));
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, x, d3, NULL, 1e-3), LN,
                      "dtypes differ: x is float32, gamma is float64");
    tfl_tensor *xi = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, xi, NULL, NULL, 1e-3), LN,
                      "dtype int32 is not supported; expected one of float16, bfloat16, float32, "
                      "float64");
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, TH_T0(ctx, TH_F32, 1), NULL, NULL, 1e-3), LN,
                      "x must have rank >= 1 (features on the last axis), got shape ()");
    TH_EXPECT_INVALID(ctx, tfl_layer_norm(ctx, NULL, NULL, NULL, 1e-3), LN, "input 0 is NULL");
    assert_null(tfl_layer_norm(NULL, x, NULL, NULL, 1e-3));
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_layer_norm_hand),
        TH_TEST(test_layer_norm_vs_reference),
        TH_TEST(test_layer_norm_strided),
        TH_TEST(test_layer_norm_threads),
        TH_TEST(test_layer_norm_param_grads),
        TH_TEST(test_layer_norm_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
