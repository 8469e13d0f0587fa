/* test_activations.c: cmocka tests of tapeflow's activations (relu leaky_relu sigmoid tanh
 * gelu softmax log_softmax): libm references, large inputs, every floating dtype, errors. */
#include "test_ops_helpers.h"

typedef tfl_tensor *(*unop_fn)(tfl_ctx *, const tfl_tensor *);

static const tfl_dtype k_floats[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
/* Tolerances (relative above 1, absolute below) per dtype of k_floats. */
static const double k_tol[] = {2e-3, 8e-3, 1e-6, 1e-13};

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define FLOATS_ONLY "float16, bfloat16, float32, float64"

/* Inputs exactly representable in float16 and bfloat16. */
static const double k_x[] = {-3, -1, -0.5, -0.125, 0, 0.25, 0.5, 1, 2, 3, 6};
#define NX NELEMS(k_x)

static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double ref_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / TH_PI) * (x + 0.044715 * x * x * x)));
}

static tfl_tensor *gelu_exact(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_gelu(ctx, x, false); }
static tfl_tensor *gelu_tanh(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_gelu(ctx, x, true); }
static tfl_tensor *leaky_02(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_leaky_relu(ctx, x, 0.2); }
static tfl_tensor *softmax_last(tfl_ctx *ctx, const tfl_tensor *x) { return tfl_softmax(ctx, x, -1); }
static tfl_tensor *log_softmax_last(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_log_softmax(ctx, x, -1);
}

/* Checks fn against ref on k_x in every floating dtype, as a (NX,) and an (NX, 1) tensor. */
static void check_against_ref_(tfl_ctx *ctx, unop_fn fn, double (*ref)(double), int line)
{
    double want[NX];
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        for (int i = 0; i < NX; i++) {
            /* the reference sees the input as stored in dt */
            double in = dt == TH_F16 ? th_f16_to_f32(th_f32_to_f16((float)k_x[i]))
                        : dt == TH_BF16 ? th_bf16_to_f32(th_f32_to_bf16((float)k_x[i]))
                                        : k_x[i];
            want[i] = ref(in);
        }
        int64_t shape1[1] = {NX};
        int64_t shape2[2] = {NX, 1};
        tfl_tensor *x1 = th_tensor_(ctx, dt, 1, shape1, k_x, NX, false, __FILE__, line);
        tfl_tensor *x2 = th_tensor_(ctx, dt, 2, shape2, k_x, NX, false, __FILE__, line);
        th_expect_(ctx, fn(ctx, x1), dt, 1, shape1, want, NX, false, k_tol[d], __FILE__, line);
        th_expect_(ctx, fn(ctx, x2), dt, 2, shape2, want, NX, false, k_tol[d], __FILE__, line);
    }
}
#define CHECK_REF(ctx, fn, ref) check_against_ref_((ctx), (fn), (ref), __LINE__)

static void test_relu(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, tfl_relu, ref_relu);
    for (int d = 0; d < NELEMS(k_floats); d++)
        TH_EXPECT(ctx, tfl_relu(ctx, TH_T(ctx, k_floats[d], (2, 2), (-1.5, 2.25, 0, -0.0))),
                  k_floats[d], (2, 2), (0, 2.25, 0, 0), 0);
    TH_EXPECT0(ctx, tfl_relu(ctx, TH_T0(ctx, TH_F32, -7)), TH_F32, 0, 0);
    TH_EXPECT(ctx, tfl_relu(ctx, TH_T(ctx, TH_F64, (2), (-INFINITY, INFINITY))), TH_F64, (2),
              (0, INFINITY), 0);
    th_end(ctx);
}

/* ReluGrad: dy where features > 0 (0 and -0 count as not positive), broadcasting, errors */
static void test_relu_grad(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_floats); d++)
        TH_EXPECT(ctx,
                  tfl_relu_grad(ctx, TH_T(ctx, k_floats[d], (2, 3), (1, -2, 3, 4, 5, -6)),
                                TH_T(ctx, k_floats[d], (2, 3), (0.5, 2, 0, -0.0, -1, 7))),
                  k_floats[d], (2, 3), (1, -2, 0, 0, 0, -6), 0);
    TH_EXPECT(ctx, tfl_relu_grad(ctx, TH_T(ctx, TH_F32, (3), (1, 2, 3)),
                                 TH_T(ctx, TH_F32, (2, 3), (1, -1, 1, -1, 1, -1))),
              TH_F32, (2, 3), (1, 0, 3, 0, 2, 0), 0);
    TH_EXPECT_INVALID(ctx, tfl_relu_grad(ctx, TH_T(ctx, TH_I32, (2), (1, 2)),
                                         TH_T(ctx, TH_I32, (2), (1, 2))),
                      "ReluGrad", "dtype int32 is not supported; expected one of " FLOATS_ONLY);
    TH_EXPECT_INVALID(ctx, tfl_relu_grad(ctx, TH_T(ctx, TH_F32, (2), (1, 2)),
                                         TH_T(ctx, TH_F64, (2), (1, 2))),
                      "ReluGrad", "dtypes differ: a is float32, b is float64");
    TH_EXPECT_INVALID(ctx, tfl_relu_grad(ctx, TH_T(ctx, TH_F32, (2), (1, 2)),
                                         TH_T(ctx, TH_F32, (3), (1, 2, 3))),
                      "ReluGrad", "incompatible shapes: (2,) vs (3,)");
    th_end(ctx);
}

static void test_leaky_relu(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* alpha 0.5: exact in every dtype */
    for (int d = 0; d < NELEMS(k_floats); d++)
        TH_EXPECT(ctx, tfl_leaky_relu(ctx, TH_T(ctx, k_floats[d], (5), (-2, -0.5, 0, 0.5, 3)), 0.5),
                  k_floats[d], (5), (-1, -0.25, 0, 0.5, 3), 0);
    /* TensorFlow's 0.2 and PyTorch's 0.01 */
    for (int d = 0; d < NELEMS(k_floats); d++) {
        TH_EXPECT(ctx, tfl_leaky_relu(ctx, TH_T(ctx, k_floats[d], (4), (-2, -0.5, 0.5, 3)), 0.2),
                  k_floats[d], (4), (-0.4, -0.1, 0.5, 3), k_tol[d]);
        TH_EXPECT(ctx, tfl_leaky_relu(ctx, TH_T(ctx, k_floats[d], (3), (-100, -1, 4)), 0.01),
                  k_floats[d], (3), (-1, -0.01, 4), k_tol[d]);
    }
    /* alpha 0 is relu */
    TH_EXPECT(ctx, tfl_leaky_relu(ctx, TH_T(ctx, TH_F64, (3), (-2, 0, 2)), 0.0), TH_F64, (3),
              (0, 0, 2), 0);
    th_end(ctx);
}

static double ref_leaky_02(double x) { return x > 0 ? x : 0.2 * x; }

static void test_leaky_relu_ref(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, leaky_02, ref_leaky_02);
    th_end(ctx);
}

static void test_sigmoid(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, tfl_sigmoid, ref_sigmoid);
    TH_EXPECT(ctx, tfl_sigmoid(ctx, TH_T(ctx, TH_F32, (1), (0))), TH_F32, (1), (0.5), 0);
    /* large inputs: no overflow, no NaN */
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_sigmoid(ctx, TH_T(ctx, dt, (4), (-1000, 1000, -30000, 30000))), dt, (4),
                  (0, 1, 0, 1), k_tol[d]);
        TH_EXPECT(ctx, tfl_sigmoid(ctx, TH_T(ctx, dt, (2), (-INFINITY, INFINITY))), dt, (2), (0, 1),
                  0);
    }
    TH_EXPECT(ctx, tfl_sigmoid(ctx, TH_T(ctx, TH_F64, (2), (-100, 100))), TH_F64, (2),
              (ref_sigmoid(-100), 1), 1e-13);
    /* relative accuracy in the far negative tail of float64 */
    tfl_tensor *s = tfl_sigmoid(ctx, TH_T(ctx, TH_F64, (1), (-700)));
    double v = 0;
    assert_non_null(s);
    assert_int_equal(tfl_tensor_get(s, 0, &v), TFL_OK);
    assert_true(v > 0 && fabs(v - exp(-700.0)) <= 1e-12 * exp(-700.0));
    th_end(ctx);
}

static void test_tanh(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, tfl_tanh, tanh);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_tanh(ctx, TH_T(ctx, dt, (5), (-1000, 1000, 0, -INFINITY, INFINITY))), dt,
                  (5), (-1, 1, 0, -1, 1), 0);
    }
    TH_EXPECT(ctx, tfl_tanh(ctx, TH_T(ctx, TH_F64, (1), (NAN))), TH_F64, (1), (NAN), 0);
    th_end(ctx);
}

static void test_gelu_exact(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, gelu_exact, ref_gelu);
    /* hand values: gelu(0) = 0; gelu(1) = Phi(1) = 0.8413447...; gelu(-1) = -Phi(-1) */
    assert_true(fabs(ref_gelu(1.0) - 0.8413447) < 1e-7);
    TH_EXPECT(ctx, tfl_gelu(ctx, TH_T(ctx, TH_F64, (3), (0, 1, -1)), false), TH_F64, (3),
              (0, ref_gelu(1.0), -0.15865525393145707), 1e-13);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_gelu(ctx, TH_T(ctx, dt, (2), (-1000, 1000)), false), dt, (2), (0, 1000),
                  k_tol[d]);
    }
    th_end(ctx);
}

/* gelu' in double: Phi(x) + x phi(x) */
static double ref_gelu_d(double x)
{
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) * 0.39894228040143267794; /* 1 / sqrt(2 pi) */
}

/* float32 gelu (its erf and exp are tapeflow's own, vectorised: framework/ops/ew_math.h) and
 * its gradient GeluGrad, over 24001 points of [-12, 12] against double references: within
 * 4e-7 of max(1, |y|) (a few float32 ulps), plus 0.5 |x| 3.6e-7 where the left tail's
 * 1 + erf(x / sqrt 2) cancels (erf's absolute error, also libm's order there); NaN stays NaN, +-inf give inf and NaN as the
 * formula does (0.5 x (1 + erf(x / sqrt 2)) at -inf is -inf * 0) */
#define TOL_GELU(x, y) (4e-7 * fmax(1, fabs(y)) + ((x) < 0 ? 1.8e-7 * fabs(x) : 0))
static void test_gelu_f32_dense(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { N = 24001 };
    static double xs[N], want[N], want_d[N];
    static float got[N], got_d[N];
    for (int i = 0; i < N; i++) {
        xs[i] = -12.0 + 24.0 * i / (N - 1);
        const double x = (double)(float)xs[i];
        want[i] = ref_gelu(x);
        want_d[i] = ref_gelu_d(x);
    }
    tfl_tensor *x = th_tensor_(ctx, TH_F32, 1, (int64_t[]){N}, xs, N, false, __FILE__, __LINE__);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *y = tfl_gelu(ctx, x, false), *dx = NULL;
    const tfl_tensor *src = x;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, &src, &dx, 0), TFL_OK);
    tfl_tape_free(tape);
    assert_int_equal(tfl_tensor_to_host(y, got, sizeof got), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(dx, got_d, sizeof got_d), TFL_OK);
    for (int i = 0; i < N; i++) {
        if (fabs(got[i] - want[i]) > TOL_GELU(xs[i], want[i]))
            fail_msg("gelu(%.9g) = %.9g, want %.9g", xs[i], got[i], want[i]);
        if (fabs(got_d[i] - want_d[i]) > TOL_GELU(xs[i], want_d[i]))
            fail_msg("gelu'(%.9g) = %.9g, want %.9g", xs[i], got_d[i], want_d[i]);
    }
    tfl_tensor *s = tfl_gelu(ctx, TH_T(ctx, TH_F32, (3), (NAN, INFINITY, -INFINITY)), false);
    float sv[3];
    assert_int_equal(tfl_tensor_to_host(s, sv, sizeof sv), TFL_OK);
    assert_true(isnan(sv[0]));
    assert_true(isinf(sv[1]) && sv[1] > 0);
    assert_true(isnan(sv[2]));
    th_end(ctx);
}

static void test_gelu_tanh(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    CHECK_REF(ctx, gelu_tanh, ref_gelu_tanh);
    /* gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841191990... */
    assert_true(fabs(ref_gelu_tanh(1.0) - 0.8411920) < 1e-7);
    TH_EXPECT(ctx, tfl_gelu(ctx, TH_T(ctx, TH_F64, (2), (0, 1)), true), TH_F64, (2),
              (0, ref_gelu_tanh(1.0)), 1e-13);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_gelu(ctx, TH_T(ctx, dt, (2), (-1000, 1000)), true), dt, (2), (0, 1000),
                  k_tol[d]);
    }
    /* the two modes differ */
    tfl_tensor *e = tfl_gelu(ctx, TH_T(ctx, TH_F64, (1), (1.5)), false);
    tfl_tensor *t = tfl_gelu(ctx, TH_T(ctx, TH_F64, (1), (1.5)), true);
    double ve = 0, vt = 0;
    assert_int_equal(tfl_tensor_get(e, 0, &ve), TFL_OK);
    assert_int_equal(tfl_tensor_get(t, 0, &vt), TFL_OK);
    assert_true(fabs(ve - ref_gelu(1.5)) < 1e-13);
    assert_true(fabs(vt - ref_gelu_tanh(1.5)) < 1e-13);
    assert_true(ve != vt);
    th_end(ctx);
}

/* ---- softmax ------------------------------------------------------------------------------ */

/* Reference (log_)softmax along `axis` (non-negative) of a row-major array. */
static void ref_softmax(int rank, const int64_t *shape, const double *x, int axis, bool log_form,
                        double *out)
{
    int64_t outer = 1, inner = 1, n = shape[axis];
    for (int i = 0; i < axis; i++) outer *= shape[i];
    for (int i = axis + 1; i < rank; i++) inner *= shape[i];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            const double *px = x + o * n * inner + in;
            double *po = out + o * n * inner + in;
            double m = -INFINITY;
            for (int64_t k = 0; k < n; k++) m = fmax(m, px[k * inner]);
            double s = 0;
            for (int64_t k = 0; k < n; k++) s += exp(px[k * inner] - m);
            for (int64_t k = 0; k < n; k++)
                po[k * inner] = log_form ? px[k * inner] - m - log(s) : exp(px[k * inner] - m) / s;
        }
    }
}

static void check_softmax_(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape,
                           const double *x, int axis, double tol, int line)
{
    int64_t n = th_numel(rank, shape);
    double *want = calloc((size_t)n, sizeof(double));
    double *xin = calloc((size_t)n, sizeof(double));
    assert_true(want && xin);
    for (int64_t i = 0; i < n; i++)
        xin[i] = dt == TH_F16 ? th_f16_to_f32(th_f32_to_f16((float)x[i]))
                 : dt == TH_BF16 ? th_bf16_to_f32(th_f32_to_bf16((float)x[i]))
                 : dt == TH_F32  ? (double)(float)x[i]
                                 : x[i];
    int pos = axis < 0 ? axis + rank : axis;
    tfl_tensor *t = th_tensor_(ctx, dt, rank, shape, x, (size_t)n, false, __FILE__, line);
    for (int lf = 0; lf < 2; lf++) {
        ref_softmax(rank, shape, xin, pos, lf == 1, want);
        tfl_tensor *r = lf ? tfl_log_softmax(ctx, t, axis) : tfl_softmax(ctx, t, axis);
        if (!r) print_error("%s axis %d failed\n", lf ? "log_softmax" : "softmax", axis);
        th_expect_(ctx, r, dt, rank, shape, want, (size_t)n, false, tol, __FILE__, line);
    }
    free(want);
    free(xin);
}
#define CHECK_SOFTMAX(ctx, dt, shp, x, axis, tol) \
    check_softmax_((ctx), (dt), TH_RANK_OF(shp), TH_SHAPE shp, (x), (axis), (tol), __LINE__)

static void test_softmax_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* softmax([0, ln 3]) = [1/4, 3/4]; log_softmax = [-ln 4, ln 3 - ln 4] */
    double l3 = log(3.0), l4 = log(4.0);
    TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, TH_F64, (2), (0, l3)), -1), TH_F64, (2), (0.25, 0.75),
              1e-15);
    TH_EXPECT(ctx, tfl_log_softmax(ctx, TH_T(ctx, TH_F64, (2), (0, l3)), 0), TH_F64, (2),
              (-l4, l3 - l4), 1e-15);
    /* equal inputs: uniform, exact in every dtype */
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, dt, (2, 4), (1, 1, 1, 1, -3, -3, -3, -3)), -1), dt,
                  (2, 4), (0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25), 0);
        TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, dt, (2, 2), (5, 7, 5, 7)), 0), dt, (2, 2),
                  (0.5, 0.5, 0.5, 0.5), 0);
    }
    /* an axis of size 1: ones, and log zeros */
    TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, TH_F32, (2, 1), (3, -8)), 1), TH_F32, (2, 1), (1, 1), 0);
    TH_EXPECT(ctx, tfl_log_softmax(ctx, TH_T(ctx, TH_F32, (2, 1), (3, -8)), -1), TH_F32, (2, 1),
              (0, 0), 0);
    /* -inf entries get probability 0 */
    TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, TH_F32, (3), (-INFINITY, 0, -INFINITY)), 0), TH_F32,
              (3), (0, 1, 0), 0);
    TH_EXPECT(ctx, tfl_log_softmax(ctx, TH_T(ctx, TH_F32, (2), (-INFINITY, 0)), 0), TH_F32, (2),
              (-INFINITY, 0), 0);
    th_end(ctx);
}

static void test_softmax_axes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double x6[] = {1, 2, 3, 1, 1, 1};
    static const double x12[] = {0.5, -1, 2, 0, 3, 1, -2, 0.25, 1.5, 4, -0.5, 2.5};
    static const double tol[] = {2e-3, 8e-3, 1e-6, 1e-14};
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        CHECK_SOFTMAX(ctx, dt, (2, 3), x6, -1, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3), x6, 1, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3), x6, 0, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3), x6, -2, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (6), x6, 0, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (6), x6, -1, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3, 2), x12, 0, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3, 2), x12, 1, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3, 2), x12, -2, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3, 2), x12, 2, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (2, 3, 2), x12, -1, tol[d]);
        CHECK_SOFTMAX(ctx, dt, (1, 12, 1), x12, 1, tol[d]);
    }
    th_end(ctx);
}

/* Rows longer than the CPU's 8 interleaved sums and not a multiple of them (the float32 path
 * over the last axis: a vectorized exp), values spread over 100 (probabilities from 1 down to
 * underflow), -inf entries (a causal mask) and entries 150 below the max (exp under float32's
 * range: probability 0, log-probability finite). */
static void test_softmax_long_rows(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { N = 67 };
    double x[2 * N];
    for (int i = 0; i < N; i++) {
        x[i] = 10 * sin(0.7 * i) - 1.3 * i;
        x[N + i] = i % 5 == 3 ? -INFINITY : i % 7 == 2 ? -150.0 + cos(i) : 4 * cos(0.3 * i);
    }
    static const tfl_dtype dts[] = {TH_F32, TH_F64};
    static const double tol[] = {1e-6, 1e-14};
    for (int d = 0; d < 2; d++) CHECK_SOFTMAX(ctx, dts[d], (2, N), x, -1, tol[d]);
    th_end(ctx);
}

/* The row's max found wherever it is (the lanes of 16 and the tail of the max's pass): a spike
 * of 200 at every position of rows of 1..40, 64 and 67 entries, the rest in [-1, 1]; a max
 * missed would overflow exp (e^199 is past float32) and give inf or NaN. Softmax, LogSoftmax,
 * AttentionSoftmax (all keys, and causal with the spike within the query's keys) and the
 * sparse cross-entropy's gradient. */
static void test_softmax_max_anywhere(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const int ns[] = {1, 2, 15, 16, 17, 31, 33, 40, 64, 67};
    for (int q = 0; q < NELEMS(ns); q++) {
        const int n = ns[q];
        double *x = malloc(sizeof(double) * n * n), *want = malloc(sizeof(double) * n * n);
        double *lwant = malloc(sizeof(double) * n * n), *gwant = malloc(sizeof(double) * n * n);
        int32_t *labels = malloc(sizeof(int32_t) * n);
        assert_true(x && want && lwant && gwant && labels);
        for (int r = 0; r < n; r++) { /* row r: the spike at r */
            double sum = 0;
            for (int j = 0; j < n; j++) x[r * n + j] = j == r ? 200.0 : sin(0.9 * (r * n + j));
            for (int j = 0; j < n; j++) sum += exp(x[r * n + j] - 200.0);
            labels[r] = (int32_t)((r + 1) % n);
            for (int j = 0; j < n; j++) {
                want[r * n + j] = exp(x[r * n + j] - 200.0) / sum;
                lwant[r * n + j] = x[r * n + j] - 200.0 - log(sum);
                gwant[r * n + j] = want[r * n + j] - (j == labels[r]) ;
            }
        }
        tfl_tensor *t = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(n, n), x, n * n);
        TH_EXPECT_N(ctx, tfl_softmax(ctx, t, -1), TH_F32, 2, TH_SHAPE(n, n), want, n * n, 1e-6);
        TH_EXPECT_N(ctx, tfl_log_softmax(ctx, t, -1), TH_F32, 2, TH_SHAPE(n, n), lwant, n * n,
                    1e-5);
        TH_EXPECT_N(ctx, tfl_attention_softmax(ctx, t, 1.0, false), TH_F32, 2, TH_SHAPE(n, n),
                    want, n * n, 1e-6);
        /* causal: query r keeps keys 0..r, the spike (at r) among them: weight 1 at r */
        tfl_tensor *c = tfl_attention_softmax(ctx, t, 1.0, true);
        float *got = malloc(sizeof(float) * n * n);
        assert_non_null(got);
        assert_int_equal(tfl_tensor_to_host(c, got, sizeof(float) * n * n), TFL_OK);
        for (int r = 0; r < n; r++)
            for (int j = 0; j < n; j++)
                if (fabs(got[r * n + j] - (j == r ? 1.0 : 0.0)) > 1e-6)
                    fail_msg("n %d, causal row %d, key %d: %g", n, r, j, got[r * n + j]);
        free(got);
        tfl_tensor *lab = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, TH_SHAPE(n), labels);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, t), TFL_OK);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_sparse_softmax_cross_entropy(ctx, t, lab), 0,
                                          NULL, false);
        assert_int_equal(tfl_tape_end(tape), TFL_OK);
        tfl_tensor *g = NULL;
        assert_int_equal(tfl_tape_gradient(tape, loss, 1, (const tfl_tensor *const[]){t}, &g, 0),
                         TFL_OK);
        TH_EXPECT_N(ctx, g, TH_F32, 2, TH_SHAPE(n, n), gwant, n * n, 1e-6);
        tfl_tape_free(tape);
        free(x), free(want), free(lwant), free(gwant), free(labels);
    }
    th_end(ctx);
}

static void test_softmax_large_inputs_stable(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* softmax([1000, 1001, 1002]) = softmax([0, 1, 2]); no inf/NaN */
    double s = 1 + exp(1.0) + exp(2.0);
    double p0 = 1 / s, p1 = exp(1.0) / s, p2 = exp(2.0) / s;
    static const tfl_dtype dts[] = {TH_F32, TH_F64};
    for (int d = 0; d < 2; d++) {
        tfl_dtype dt = dts[d];
        double tol = dt == TH_F32 ? 1e-6 : 1e-14;
        tfl_tensor *x = TH_T(ctx, dt, (2, 3), (1000, 1001, 1002, -1000, 0, 1000));
        TH_EXPECT(ctx, tfl_softmax(ctx, x, -1), dt, (2, 3), (p0, p1, p2, 0, 0, 1), tol);
        TH_EXPECT(ctx, tfl_log_softmax(ctx, x, -1), dt, (2, 3),
                  (-log(s), 1 - log(s), 2 - log(s), -2000, -1000, 0), tol);
        /* axis 0: columns (1000, -1000), (1001, 0), (1002, 1000) */
        TH_EXPECT(ctx, tfl_softmax(ctx, x, 0), dt, (2, 3),
                  (1, 1, 1 / (1 + exp(-2.0)), 0, 0, exp(-2.0) / (1 + exp(-2.0))), tol);
        TH_EXPECT(ctx, tfl_log_softmax(ctx, x, 0), dt, (2, 3),
                  (0, 0, -log1p(exp(-2.0)), -2000, -1001, -2 - log1p(exp(-2.0))), tol);
        tfl_tensor *neg = TH_T(ctx, dt, (3), (-1000, -1001, -1002));
        TH_EXPECT(ctx, tfl_softmax(ctx, neg, 0), dt, (3), (p2, p1, p0), tol);
    }
    /* float16: 60000 and 65504 are finite, their exponentials are not */
    TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, TH_F16, (2), (65504, 65504)), 0), TH_F16, (2),
              (0.5, 0.5), 0);
    TH_EXPECT(ctx, tfl_softmax(ctx, TH_T(ctx, TH_BF16, (2), (1e30, 1e30)), 0), TH_BF16, (2),
              (0.5, 0.5), 0);
    th_end(ctx);
}

/* Many rows and a strided view (the parallel paths), against the reference. */
static void test_softmax_large_and_views(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { R = 64, C = 1000 };
    double *x = malloc(sizeof(double) * R * C), *xt = malloc(sizeof(double) * R * C);
    assert_true(x && xt);
    for (int i = 0; i < R * C; i++) x[i] = sin(0.37 * i) * 8.0 + (double)(i % 7);
    CHECK_SOFTMAX(ctx, TH_F64, (64, 1000), x, -1, 1e-13);
    CHECK_SOFTMAX(ctx, TH_F64, (64, 1000), x, 0, 1e-13);
    CHECK_SOFTMAX(ctx, TH_F32, (64, 1000), x, 1, 1e-6);
    /* a transposed view: softmax of x^T along its last axis equals the reference on x^T */
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) xt[j * R + i] = x[i * C + j];
    tfl_tensor *t = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(R, C), x, R * C);
    tfl_tensor *tv = tfl_transpose(ctx, t, NULL);
    double *want = malloc(sizeof(double) * R * C);
    assert_non_null(want);
    ref_softmax(2, TH_SHAPE(C, R), xt, 1, false, want);
    TH_EXPECT_N(ctx, tfl_softmax(ctx, tv, -1), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 1e-13);
    ref_softmax(2, TH_SHAPE(C, R), xt, 0, true, want);
    TH_EXPECT_N(ctx, tfl_log_softmax(ctx, tv, 0), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 1e-13);
    for (int i = 0; i < R * C; i++) want[i] = ref_sigmoid(xt[i]);
    TH_EXPECT_N(ctx, tfl_sigmoid(ctx, tv), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 1e-14);
    for (int i = 0; i < R * C; i++) want[i] = ref_gelu(xt[i]);
    TH_EXPECT_N(ctx, tfl_gelu(ctx, tv, false), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 1e-13);
    free(want);
    free(x);
    free(xt);
    th_end(ctx);
}

/* ---- errors --------------------------------------------------------------------------------- */

typedef struct act_case {
    const char *name;
    unop_fn fn;
} act_case;

static const act_case k_acts[] = {
    {"Relu", tfl_relu},          {"LeakyRelu", leaky_02},           {"Sigmoid", tfl_sigmoid},
    {"Tanh", tfl_tanh},          {"Gelu", gelu_exact},              {"Gelu", gelu_tanh},
    {"Softmax", softmax_last},   {"LogSoftmax", log_softmax_last},
};

static void test_activation_dtype_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i32 = TH_T(ctx, TH_I32, (2), (1, 2));
    tfl_tensor *i64 = TH_T(ctx, TH_I64, (2), (1, 2));
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    tfl_tensor *c64 = TH_TC(ctx, TH_C64, (2), (1, 0, 0, 1));
    tfl_tensor *c128 = TH_TC(ctx, TH_C128, (2), (1, 0, 0, 1));
    for (int k = 0; k < NELEMS(k_acts); k++) {
        const act_case *ac = &k_acts[k];
        TH_EXPECT_INVALID(ctx, ac->fn(ctx, i32), ac->name,
                          "dtype int32 is not supported; expected one of " FLOATS_ONLY);
        TH_EXPECT_INVALID(ctx, ac->fn(ctx, i64), ac->name,
                          "dtype int64 is not supported; expected one of " FLOATS_ONLY);
        TH_EXPECT_INVALID(ctx, ac->fn(ctx, b), ac->name,
                          "dtype bool is not supported; expected one of " FLOATS_ONLY);
        TH_EXPECT_INVALID(ctx, ac->fn(ctx, c64), ac->name,
                          "dtype complex64 is not supported; expected one of " FLOATS_ONLY);
        TH_EXPECT_INVALID(ctx, ac->fn(ctx, c128), ac->name,
                          "dtype complex128 is not supported; expected one of " FLOATS_ONLY);
    }
    th_end(ctx);
}

static void test_activation_null_input(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int k = 0; k < NELEMS(k_acts); k++)
        TH_EXPECT_INVALID(ctx, k_acts[k].fn(ctx, NULL), k_acts[k].name, "input 0 is NULL");
    /* with an error already kept: NULL and the first error stays */
    tfl_ctx_clear_error(ctx);
    assert_null(tfl_softmax(ctx, TH_T(ctx, TH_I32, (1), (1)), 0));
    assert_null(tfl_relu(ctx, NULL));
    assert_null(tfl_sigmoid(ctx, NULL));
    th_expect_error_(ctx, NULL, TFL_INVALID_ARGUMENT, "Softmax", "dtype int32 is not supported",
                     __FILE__, __LINE__);
    th_end(ctx);
}

/* ---- attention's softmax ---------------------------------------------------------------- */

/* tfl_attention_softmax against softmax(scale x + mask) in double, rows of x's last axis, row r
 * the query r % q (q the second-to-last axis); the mask excludes key j > query i when causal */
static void check_attention_(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape,
                             double scale, bool causal, double tol, int line)
{
    const int64_t n = th_numel(rank, shape), nk = shape[rank - 1], nq = shape[rank - 2];
    double *x = calloc((size_t)n, sizeof(double)), *want = calloc((size_t)n, sizeof(double));
    assert_true(x && want);
    for (int64_t i = 0; i < n; i++) {
        const double v = 4.0 * sin(0.37 * (double)i) + (double)(i % 5);
        x[i] = dt == TH_F16 ? th_f16_to_f32(th_f32_to_f16((float)v))
               : dt == TH_BF16 ? th_bf16_to_f32(th_f32_to_bf16((float)v))
               : dt == TH_F32  ? (double)(float)v
                               : v;
    }
    for (int64_t r = 0; r < n / nk; r++) {
        const int64_t q = r % nq;
        const double *xr = x + r * nk;
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < nk; j++)
            if (!causal || j <= q) m = fmax(m, scale * xr[j]);
        for (int64_t j = 0; j < nk; j++)
            if (!causal || j <= q) sum += exp(scale * xr[j] - m);
        for (int64_t j = 0; j < nk; j++)
            want[r * nk + j] = !causal || j <= q ? exp(scale * xr[j] - m) / sum : 0;
    }
    tfl_tensor *t = th_tensor_(ctx, dt, rank, shape, x, (size_t)n, false, __FILE__, line);
    tfl_tensor *y = tfl_attention_softmax(ctx, t, scale, causal);
    if (!y) print_error("attention_softmax (line %d) failed\n", line);
    th_expect_(ctx, y, dt, rank, shape, want, (size_t)n, false, tol, __FILE__, line);
    free(x);
    free(want);
}
#define CHECK_ATTENTION(ctx, dt, shp, scale, causal, tol)                                         \
    check_attention_((ctx), (dt), TH_RANK_OF(shp), TH_SHAPE shp, (scale), (causal), (tol), __LINE__)

static void test_attention_softmax(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double tol[] = {2e-3, 8e-3, 2e-6, 1e-14};
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        CHECK_ATTENTION(ctx, dt, (2, 3, 5, 5), 0.125, true, tol[d]);   /* heads of a batch */
        CHECK_ATTENTION(ctx, dt, (3, 70), 0.35, true, tol[d]);         /* more keys: long rows */
        CHECK_ATTENTION(ctx, dt, (2, 6, 4), 1.0, true, tol[d]);        /* more queries */
        CHECK_ATTENTION(ctx, dt, (2, 3, 19), -0.7, false, tol[d]);     /* every key, scale < 0 */
        CHECK_ATTENTION(ctx, dt, (1, 1), 2.0, true, tol[d]);
        CHECK_ATTENTION(ctx, dt, (1, 40, 40), 0.2, true, tol[d]);      /* rows past 8 lanes */
    }
    /* excluded entries are exactly 0; a query's only key has weight exactly 1 */
    TH_EXPECT(ctx, tfl_attention_softmax(ctx, TH_T(ctx, TH_F32, (2, 2), (1, 50, 2, 2)), 1, true),
              TH_F32, (2, 2), (1, 0, 0.5, 0.5), 0);
    /* a transposed view reads as its values */
    tfl_tensor *a = TH_T(ctx, TH_F64, (2, 2), (0, 1, 0, 2));
    TH_EXPECT(ctx, tfl_attention_softmax(ctx, tfl_transpose(ctx, a, (int[]){1, 0}), 1, true),
              TH_F64, (2, 2), (1, 0, 1 / (1 + exp(1.0)), exp(1.0) / (1 + exp(1.0))), 1e-15);
    /* empty shapes give empty results */
    tfl_tensor *e = tfl_attention_softmax(ctx, tfl_zeros(ctx, TH_F32, 3, (int64_t[]){2, 0, 3}), 1,
                                          true);
    assert_non_null(e);
    assert_int_equal(tfl_tensor_numel(e), 0);
    th_end(ctx);
}

static void test_attention_softmax_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 2), (1, 2, 3, 4));
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, TH_T(ctx, TH_F32, (3), (1, 2, 3)), 1, true),
                      "AttentionSoftmax",
                      "scores must have rank 2 or more (..., queries, keys), got rank 1");
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, x, INFINITY, false), "AttentionSoftmax",
                      "scale must be finite, got inf");
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, x, NAN, true), "AttentionSoftmax",
                      "scale must be finite, got nan");
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, x, -1e39, true), "AttentionSoftmax",
                      "scale -1e+39 is past float32's range (scores are float32)");
    assert_non_null(tfl_attention_softmax(ctx, TH_T(ctx, TH_F64, (1, 1), (1)), 1e39, true));
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, TH_T(ctx, TH_I32, (1, 1), (1)), 1, true),
                      "AttentionSoftmax", "dtype int32 is not supported");
    TH_EXPECT_INVALID(ctx, tfl_attention_softmax(ctx, NULL, 1, true), "AttentionSoftmax",
                      "input 0 is NULL");
    th_end(ctx);
}

static void test_softmax_bad_axis(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_softmax(ctx, x, 2), "Softmax", "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_softmax(ctx, x, -3), "Softmax", "axis -3 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_log_softmax(ctx, x, 5), "LogSoftmax",
                      "axis 5 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_log_softmax(ctx, x, -3), "LogSoftmax",
                      "axis -3 is out of range for rank 2");
    tfl_tensor *v = TH_T(ctx, TH_F64, (3), (1, 2, 3));
    TH_EXPECT_INVALID(ctx, tfl_softmax(ctx, v, 1), "Softmax", "axis 1 is out of range for rank 1");
    TH_EXPECT_INVALID(ctx, tfl_softmax(ctx, NULL, 0), "Softmax", "input 0 is NULL");
    th_end(ctx);
}

/* Activations keep the shape, including rank 0 and empty tensors. */
static void test_activation_shapes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int k = 0; k < 6; k++) { /* elementwise ones */
        TH_EXPECT_SHAPE(ctx, k_acts[k].fn(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 4))), TH_F32,
                        (0, 4));
        tfl_tensor *r = k_acts[k].fn(ctx, TH_T0(ctx, TH_F64, 0.5));
        th_expect_(ctx, r, TH_F64, 0, NULL, NULL, 0, false, 0.0, __FILE__, __LINE__);
    }
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_relu),
        TH_TEST(test_relu_grad),
        TH_TEST(test_leaky_relu),
        TH_TEST(test_leaky_relu_ref),
        TH_TEST(test_sigmoid),
        TH_TEST(test_tanh),
        TH_TEST(test_gelu_exact),
        TH_TEST(test_gelu_tanh),
        TH_TEST(test_gelu_f32_dense),
        TH_TEST(test_softmax_hand_values),
        TH_TEST(test_softmax_axes),
        TH_TEST(test_softmax_long_rows),
        TH_TEST(test_softmax_max_anywhere),
        TH_TEST(test_softmax_large_inputs_stable),
        TH_TEST(test_softmax_large_and_views),
        TH_TEST(test_activation_dtype_errors),
        TH_TEST(test_activation_null_input),
        TH_TEST(test_softmax_bad_axis),
        TH_TEST(test_attention_softmax),
        TH_TEST(test_attention_softmax_errors),
        TH_TEST(test_activation_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
