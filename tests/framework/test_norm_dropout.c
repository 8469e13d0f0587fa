/* test_norm_dropout.c: cmocka tests of tfl_batch_norm, tfl_moments and tfl_dropout: values
 * against TensorFlow (tests/reference/fixtures/norm_tf.json, from norm_tf.py), NULL offset and
 * scale, float16, strided inputs, big tensors on 1 and 2 threads, error codes and messages;
 * dropout's mask against the layout ops.h documents (Philox blocks recomputed here), seeds,
 * the ctx's streams, the kept fraction and the kept values. Gradients are in
 * tests/tape/test_norm_gradients.c and tests/tape/test_gradcheck.c. */
#include "norm_fixture.h"
#include "test_ops_helpers.h"

/* The block function is a static inline in a private header: nothing extra is exported. */
#include "../../framework/core_api/philox.h"

#define BN "BatchNorm"
#define MOM "Moments"
#define DROP "Dropout"

static tfl_ctx *begin(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    return ctx;
}

static void end(tfl_ctx *ctx)
{
    TH_EXPECT_OK(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- batch_norm ------------------------------------------------------------------------------ */

/* every batch_norm case of the fixture: rank 2 and 4, float32 and float64, with and without
 * offset and scale */
static void test_bn_fixture(void **state)
{
    tfl_ctx *ctx = begin(state);
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(g_root, "batch_norm"))
    {
        tfl_dtype dt = nf_dtype(c);
        int64_t shape[8], ch;
        int rank = nf_shape(c, "shape", shape);
        ch = shape[rank - 1];
        tfl_tensor *x = NF_TENSOR(ctx, c, "x", dt, rank, shape);
        tfl_tensor *p[4];
        const char *keys[4] = {"mean", "variance", "offset", "scale"};
        for (int i = 0; i < 4; i++)
            p[i] = NF_TENSOR(ctx, c, keys[i], dt, 1, &ch);
        tfl_tensor *y = tfl_batch_norm(ctx, x, p[0], p[1], p[2], p[3], jnum(c, "epsilon"));
        NF_EXPECT(ctx, y, jget(c, "y"), nf_tol(dt), c->string);
        assert_int_equal(tfl_tensor_dtype(y), dt);
        assert_int_equal(tfl_tensor_rank(y), rank);
        assert_memory_equal(tfl_tensor_shape(y), shape, sizeof(int64_t) * (size_t)rank);
        n++;
    }
    assert_int_equal(n, 8);
    end(ctx);
}

/* NULL offset is zeros, NULL scale is ones (the same bits); a hand-computed case */
static void test_bn_null_params(void **state)
{
    tfl_ctx *ctx = begin(state);
    for (int d = 0; d < 2; d++) {
        tfl_dtype dt = d ? TH_F64 : TH_F32;
        tfl_tensor *x = TH_T(ctx, dt, (2, 2), (1, 2, 3, 6));
        tfl_tensor *m = TH_T(ctx, dt, (2), (2, 4)), *v = TH_T(ctx, dt, (2), (0.75, 3.5));
        tfl_tensor *o = TH_T(ctx, dt, (2), (0.5, -1)), *s = TH_T(ctx, dt, (2), (2, 3));
        /* (x - m) s / sqrt(v + 0.25) + o, sqrt(0.75 + 0.25) = 1, sqrt(3.5 + 0.25) = sqrt(3.75) */
        const double r = sqrt(3.75);
        TH_EXPECT(ctx, tfl_batch_norm(ctx, x, m, v, o, s, 0.25), dt, (2, 2),
                  (-1.5, -6 / r - 1, 2.5, 6 / r - 1), d ? 1e-15 : 1e-7);
        TH_EXPECT(ctx, tfl_batch_norm(ctx, x, m, v, NULL, NULL, 0.25), dt, (2, 2),
                  (-1, -2 / r, 1, 2 / r), d ? 1e-15 : 1e-7);
        tfl_tensor *zeros = tfl_zeros(ctx, dt, 1, TH_SHAPE(2)),
                   *ones = tfl_ones(ctx, dt, 1, TH_SHAPE(2));
        const tfl_tensor *pairs[][2] = {{NULL, s}, {o, NULL}, {NULL, NULL}};
        for (int k = 0; k < 3; k++) {
            const tfl_tensor *po = pairs[k][0], *ps = pairs[k][1];
            double *got = TH_READ(tfl_batch_norm(ctx, x, m, v, po, ps, 0.25));
            double *want =
                TH_READ(tfl_batch_norm(ctx, x, m, v, po ? po : zeros, ps ? ps : ones, 0.25));
            assert_memory_equal(got, want, 4 * sizeof(double));
            free(got);
            free(want);
        }
    }
    /* the constants made for NULL parameters do not stay behind in the caller's frame */
    tfl_tensor *x = TH_T(ctx, TH_F32, (3), (1, 2, 3));
    uint64_t live = live_tensors(ctx);
    tfl_tensor *y = tfl_batch_norm(ctx, x, x, tfl_ones(ctx, TH_F32, 1, TH_SHAPE(3)), NULL, NULL, 1);
    TH_EXPECT(ctx, y, TH_F32, (3), (0, 0, 0), 0);
    assert_int_equal(live_tensors(ctx), live + 2); /* the ones and y */
    end(ctx);
}

/* float16 and bfloat16 run in float32; a strided (transposed) x; a rank-1 x */
static void test_bn_half_strided_rank1(void **state)
{
    tfl_ctx *ctx = begin(state);
    const tfl_dtype halves[2] = {TH_F16, TH_BF16};
    for (int h = 0; h < 2; h++) {
        tfl_dtype dt = halves[h];
        tfl_tensor *y =
            tfl_batch_norm(ctx, TH_T(ctx, dt, (2, 2), (1, 2, 3, 6)), TH_T(ctx, dt, (2), (2, 4)),
                           TH_T(ctx, dt, (2), (0.75, 3.75)), TH_T(ctx, dt, (2), (0.5, -1)),
                           TH_T(ctx, dt, (2), (2, 2)), 0.25);
        TH_EXPECT(ctx, y, dt, (2, 2), (-1.5, -3, 2.5, 1), h ? 1e-2 : 1e-3);
    }
    /* x^T of a (3, 2): channels are the last axis of the view */
    tfl_tensor *xt = tfl_transpose(ctx, TH_T(ctx, TH_F64, (3, 2), (1, 4, 2, 5, 3, 6)), NULL);
    tfl_tensor *m = TH_T(ctx, TH_F64, (3), (1, 2, 3)), *v = TH_T(ctx, TH_F64, (3), (3, 3, 3));
    TH_EXPECT(ctx, tfl_batch_norm(ctx, xt, m, v, NULL, NULL, 1), TH_F64, (2, 3),
              (0, 0, 0, 1.5, 1.5, 1.5), 1e-15);
    /* rank 1: one row */
    /* x (1, 2, 3), mean 3, variance (1, 2, 3), scale 3, epsilon 1 */
    TH_EXPECT(ctx, tfl_batch_norm(ctx, m, v, m, NULL, v, 1), TH_F64, (3),
              (-3 * sqrt(2.0), -sqrt(3.0), 0), 1e-15);
    end(ctx);
}

/* more than TFL_CPU_PARALLEL_MIN elements: the same bits on 1 and 2 threads, and the formula */
static void test_bn_big_threads(void **state)
{
    tfl_ctx *ctx = begin(state);
    const int64_t rows = 5000, ch = 16, n = rows * ch;
    float *xv = malloc(sizeof(float) * (size_t)n);
    assert_non_null(xv);
    for (int64_t i = 0; i < n; i++)
        xv[i] = (float)((i * 7919 % 1000) * 0.01 - 5);
    float mv[16], vv[16], ov[16], sv[16];
    for (int j = 0; j < 16; j++) {
        mv[j] = 0.25f * (float)j - 2;
        vv[j] = 0.5f + 0.125f * (float)j;
        ov[j] = 1 - 0.0625f * (float)j;
        sv[j] = 0.75f + 0.05f * (float)j;
    }
    tfl_tensor *x = tfl_tensor_new(ctx, TH_F32, 2, (int64_t[]){rows, ch}, xv);
    tfl_tensor *p[4] = {vec_f32(ctx, mv, ch), vec_f32(ctx, vv, ch), vec_f32(ctx, ov, ch),
                        vec_f32(ctx, sv, ch)};
    float *got[2];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        got[t] = host_bytes(tfl_batch_norm(ctx, x, p[0], p[1], p[2], p[3], 1e-3), NULL);
    }
    assert_memory_equal(got[0], got[1], sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int j = (int)(i % ch);
        double want = (xv[i] - mv[j]) * sv[j] / sqrt(vv[j] + 1e-3) + ov[j];
        if (fabs(got[0][i] - want) > 2e-6 * fmax(1, fabs(want)))
            fail_msg("element %lld: %.9g, want %.9g", (long long)i, got[0][i], want);
    }
    free(got[0]);
    free(got[1]);
    free(xv);
    end(ctx);
}

static void test_bn_errors(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *c3 = TH_T(ctx, TH_F32, (3), (1, 1, 1)), *c4 = TH_T(ctx, TH_F32, (4), (1, 1, 1, 1));
    tfl_tensor *c13 = TH_T(ctx, TH_F32, (1, 3), (1, 1, 1));
    /* a parameter whose shape is not (C,): the message names it, (C,), x's shape and its own */
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c4, c3, c3, c3, 1e-3), BN,
                      "mean must have shape (3,) (the last dimension of x, whose shape is (2, 3)), "
                      "got (4,)");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c13, c3, c3, 1e-3), BN,
                      "variance must have shape (3,) (the last dimension of x, whose shape is "
                      "(2, 3)), got (1, 3)");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c3, c4, c3, 1e-3), BN,
                      "offset must have shape (3,)");
    TH_EXPECT_INVALID(
        ctx, tfl_batch_norm(ctx, x, c3, c3, NULL, c4, 1e-3), BN,
        "scale must have shape (3,) (the last dimension of x, whose shape is (2, 3)), "
        "got (4,)");
    /* epsilon */
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c3, c3, c3, 0), BN,
                      "epsilon must be > 0, got 0");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c3, c3, c3, -1e-3), BN,
                      "epsilon must be > 0, got -0.001");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c3, c3, c3, NAN), BN, "epsilon must be > 0");
    /* dtypes */
    tfl_tensor *d3 = TH_T(ctx, TH_F64, (3), (1, 1, 1));
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, d3, c3, NULL, NULL, 1e-3), BN,
                      "dtypes differ: x is float32, mean is float64");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, c3, c3, d3, 1e-3), BN,
                      "dtypes differ: x is float32, scale is float64");
    tfl_tensor *xi = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6)),
               *i3 = TH_T(ctx, TH_I32, (3), (1, 1, 1));
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, xi, i3, i3, NULL, NULL, 1e-3), BN,
                      "dtype int32 is not supported; expected one of float16, bfloat16, float32, "
                      "float64");
    /* rank 0 x */
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, TH_T0(ctx, TH_F32, 1), c3, c3, NULL, NULL, 1e-3), BN,
                      "x must have rank >= 1 (channels on the last axis), got shape ()");
    /* NULL required inputs: the op's message, or the first error kept */
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, NULL, c3, NULL, NULL, 1e-3), BN,
                      "input 1 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_batch_norm(ctx, x, c3, NULL, c3, c3, 1e-3), BN, "input 2 is NULL");
    tfl_ctx_clear_error(ctx);
    tfl_tensor *bad = tfl_reshape(ctx, x, 1, TH_SHAPE(7));
    assert_null(tfl_batch_norm(ctx, bad, c3, c3, NULL, NULL, 1e-3));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Reshape");
    assert_null(tfl_batch_norm(NULL, x, c3, c3, NULL, NULL, 1e-3));
    end(ctx);
}

/* ---- moments -----------------------------------------------------------------------------------
 */

static void test_moments_fixture(void **state)
{
    tfl_ctx *ctx = begin(state);
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(g_root, "moments"))
    {
        tfl_dtype dt = nf_dtype(c);
        int64_t shape[8], mshape[8];
        int rank = nf_shape(c, "shape", shape), mrank = nf_shape(c, "mean_shape", mshape);
        int axes[8], naxes = cJSON_GetArraySize(jget(c, "axes"));
        for (int i = 0; i < naxes; i++)
            axes[i] = (int)cJSON_GetArrayItem(jget(c, "axes"), i)->valuedouble;
        tfl_tensor *x = NF_TENSOR(ctx, c, "x", dt, rank, shape), *m = NULL, *v = NULL;
        OK(ctx, tfl_moments(ctx, x, naxes, axes, jbool(c, "keepdims"), &m, &v));
        NF_EXPECT(ctx, m, jget(c, "mean"), nf_tol(dt), c->string);
        NF_EXPECT(ctx, v, jget(c, "variance"), nf_tol(dt), c->string);
        for (int k = 0; k < 2; k++) {
            const tfl_tensor *t = k ? v : m;
            assert_int_equal(tfl_tensor_dtype(t), dt);
            assert_int_equal(tfl_tensor_rank(t), mrank);
            assert_memory_equal(tfl_tensor_shape(t), mshape, sizeof(int64_t) * (size_t)mrank);
        }
        n++;
    }
    assert_int_equal(n, 8);
    end(ctx);
}

/* negative axes; float16 in float32; only the two results stay in the caller's frame */
static void test_moments_axes_half_frame(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F64, (2, 3), (1, 2, 3, 5, 8, 13)), *m, *v;
    uint64_t live = live_tensors(ctx);
    OK(ctx, tfl_moments(ctx, x, 1, TH_AXES(-1), false, &m, &v));
    assert_int_equal(live_tensors(ctx), live + 2);
    TH_EXPECT(ctx, m, TH_F64, (2), (2, 26.0 / 3), 1e-15);
    TH_EXPECT(ctx, v, TH_F64, (2), (2.0 / 3, 294.0 / 27), 1e-15);
    OK(ctx, tfl_moments(ctx, x, 2, TH_AXES(1, -2), true, &m, &v));
    TH_EXPECT(ctx, m, TH_F64, (1, 1), (32.0 / 6), 1e-15);
    /* float16: 1000 + {0, 1, 2, 3} in float16 are exact; squares of the deviations too */
    tfl_tensor *h = TH_T(ctx, TH_F16, (4), (1000, 1001, 1002, 1003));
    OK(ctx, tfl_moments(ctx, h, 1, TH_AXES(0), false, &m, &v));
    TH_EXPECT0(ctx, m, TH_F16, 1001.5, 0);
    TH_EXPECT0(ctx, v, TH_F16, 1.25, 0);
    end(ctx);
}

static void test_moments_errors(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *m = (tfl_tensor *)1, *v = (tfl_tensor *)1;
    struct {
        int naxes;
        const int *axes;
        const char *msg;
    } bad[] = {
        {1, TH_AXES(2), "Moments: axis 2 is out of range for rank 2"},
        {1, TH_AXES(-3), "Moments: axis -3 is out of range for rank 2"},
        {2, TH_AXES(1, -1), "Moments: axis -1 is given twice"},
        {0, TH_AXES(0), "Moments: axes must name at least one axis (got naxes 0)"},
        {1, NULL, "Moments: axes must name at least one axis (got naxes 1 and axes NULL)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = v = (tfl_tensor *)1;
        assert_int_equal(tfl_moments(ctx, x, bad[i].naxes, bad[i].axes, false, &m, &v),
                         TFL_INVALID_ARGUMENT);
        assert_null(m);
        assert_null(v);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, bad[i].msg);
    }
    tfl_tensor *xi = TH_T(ctx, TH_I64, (2), (1, 2));
    assert_int_equal(tfl_moments(ctx, xi, 1, TH_AXES(0), false, &m, &v), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "Moments: dtype int64 is not supported; expected one of float16");
    assert_int_equal(tfl_moments(ctx, x, 1, TH_AXES(0), false, NULL, &v), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Moments: mean and variance");
    assert_int_equal(tfl_moments(ctx, NULL, 1, TH_AXES(0), false, &m, &v), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Moments: x is NULL");
    /* a NULL x from a failed op: that op's error is returned and kept */
    tfl_tensor *nx = tfl_matmul(ctx, x, x, 0);
    assert_int_equal(tfl_moments(ctx, nx, 1, TH_AXES(0), false, &m, &v), TFL_INVALID_ARGUMENT);
    assert_null(m);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "MatMul");
    assert_int_equal(tfl_moments(NULL, x, 1, TH_AXES(0), false, &m, &v), TFL_INVALID_ARGUMENT);
    end(ctx);
}

/* ---- dropout -----------------------------------------------------------------------------------
 */

#define BIG 1000000

/* x[i] = 1 + (i % 1000) / 1024 (never 0) as float32 */
static tfl_tensor *ramp_f32(tfl_ctx *ctx, int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = 1.0f + (float)(i % 1000) / 1024.0f;
    tfl_tensor *t = tfl_tensor_new(ctx, TH_F32, 1, &n, v);
    free(v);
    return t;
}

/* The mask ops.h documents, recomputed: element i kept when u24(word i%4 of block i/4) >= rate. */
static bool doc_kept(uint64_t key, int64_t i, double rate)
{
    const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
    const uint64_t b = (uint64_t)i / 4;
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0x44524F50u};
    uint32_t r[4];
    tfl__philox4x32_10(ctr, k, r);
    return (double)(r[i % 4] >> 8) / 16777216.0 >= rate;
}

static void test_dropout_rate0_identity(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F64, (2, 3), (1, -2, 3, NAN, 5, -6));
    tfl_tensor *y = tfl_dropout(ctx, x, 0.0, 0);
    TH_EXPECT(ctx, y, TH_F64, (2, 3), (1, -2, 3, NAN, 5, -6), 0);
    assert_ptr_not_equal(y, x);
    /* rate 0 takes no stream: the next unseeded call is the first after set_seed */
    tfl_tensor *big = ramp_f32(ctx, 64);
    assert_int_equal(tfl_ctx_set_seed(ctx, 11), TFL_OK);
    tfl_dropout(ctx, big, 0.0, 0);
    float *a = host_bytes(tfl_dropout(ctx, big, 0.5, 0), NULL);
    assert_int_equal(tfl_ctx_set_seed(ctx, 11), TFL_OK);
    float *b = host_bytes(tfl_dropout(ctx, big, 0.5, 0), NULL);
    assert_memory_equal(a, b, 64 * sizeof(float));
    free(a);
    free(b);
    end(ctx);
}

/* the documented layout, same seed same mask, other seeds differ, float64 = float32 mask */
static void test_dropout_seeds_and_layout(void **state)
{
    tfl_ctx *ctx = begin(state);
    const int64_t n = 4099; /* not a multiple of 4: the last block is partial */
    tfl_tensor *x = ramp_f32(ctx, n), *x64 = tfl_cast(ctx, x, TH_F64);
    const double rate = 0.3;
    float *a = host_bytes(tfl_dropout(ctx, x, rate, 42), NULL);
    float *b = host_bytes(tfl_dropout(ctx, x, rate, 42), NULL);
    float *c = host_bytes(tfl_dropout(ctx, x, rate, 43), NULL);
    double *d = host_bytes(tfl_dropout(ctx, x64, rate, 42), NULL);
    const uint64_t big_seed = 0x0123456789abcdefull;
    float *e = host_bytes(tfl_dropout(ctx, x, rate, big_seed), NULL);
    assert_memory_equal(a, b, sizeof(float) * (size_t)n);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(a[i] != 0, doc_kept(42, i, rate));
        assert_int_equal(e[i] != 0, doc_kept(big_seed, i, rate));
        assert_int_equal(d[i] != 0, a[i] != 0);
        differ += (a[i] != 0) != (c[i] != 0);
    }
    /* two independent masks disagree on 2 p (1 - p) = 42% of the elements */
    assert_true(differ > n / 3 && differ < n / 2);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    end(ctx);
}

/* 1e6 elements: kept fraction within 4 sigma of 1 - rate, kept values exactly x / (1 - rate),
 * dropped ones 0; identical bits on 1 and 2 threads */
static void test_dropout_big(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = ramp_f32(ctx, BIG), *x64 = tfl_cast(ctx, x, TH_F64);
    float *xv = host_bytes(x, NULL);
    const double rates[3] = {0.1, 0.5, 0.875};
    for (int r = 0; r < 3; r++) {
        const double rate = rates[r], keep = 1 - rate;
        float *y[2];
        for (int t = 0; t < 2; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            y[t] = host_bytes(tfl_dropout(ctx, x, rate, 777 + (uint64_t)r), NULL);
        }
        assert_memory_equal(y[0], y[1], sizeof(float) * BIG);
        double *y64 = host_bytes(tfl_dropout(ctx, x64, rate, 777 + (uint64_t)r), NULL);
        int64_t kept = 0;
        for (int64_t i = 0; i < BIG; i++) {
            if (y[0][i] != 0) {
                kept++;
                if (y[0][i] != (float)((double)xv[i] / keep) || y64[i] != (double)xv[i] / keep)
                    fail_msg("rate %g element %lld: %.9g / %.17g, want %.17g / (1 - rate)", rate,
                             (long long)i, y[0][i], y64[i], (double)xv[i]);
            } else {
                assert_true(y64[i] == 0);
            }
        }
        const double mean = BIG * keep, sigma = sqrt(BIG * keep * rate);
        if (fabs((double)kept - mean) > 4 * sigma)
            fail_msg("rate %g: kept %lld of %d, expected %.0f +- %.0f", rate, (long long)kept, BIG,
                     mean, 4 * sigma);
        free(y[0]);
        free(y[1]);
        free(y64);
    }
    /* an unseeded call on 1 and 2 threads after the same set_seed */
    float *u[2];
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        assert_int_equal(tfl_ctx_set_seed(ctx, 5), TFL_OK);
        u[t] = host_bytes(tfl_dropout(ctx, x, 0.5, 0), NULL);
    }
    assert_memory_equal(u[0], u[1], sizeof(float) * BIG);
    free(u[0]);
    free(u[1]);
    free(xv);
    end(ctx);
}

/* seed 0: successive calls differ, repeat after tfl_ctx_set_seed, and take one stream each
 * (shared with the random ops) */
static void test_dropout_ctx_streams(void **state)
{
    tfl_ctx *ctx = begin(state);
    const int64_t n = 512;
    tfl_tensor *x = ramp_f32(ctx, n);
    float *a[3], *b[3];
    assert_int_equal(tfl_ctx_set_seed(ctx, 99), TFL_OK);
    for (int k = 0; k < 2; k++)
        a[k] = host_bytes(tfl_dropout(ctx, x, 0.5, 0), NULL);
    a[2] = host_bytes(tfl_random_uniform(ctx, TH_F32, 1, &n, 0, 1, 0), NULL);
    assert_memory_not_equal(a[0], a[1], sizeof(float) * (size_t)n);
    assert_int_equal(tfl_ctx_set_seed(ctx, 99), TFL_OK);
    for (int k = 0; k < 2; k++)
        b[k] = host_bytes(tfl_dropout(ctx, x, 0.5, 0), NULL);
    b[2] = host_bytes(tfl_random_uniform(ctx, TH_F32, 1, &n, 0, 1, 0), NULL);
    for (int k = 0; k < 3; k++)
        assert_memory_equal(a[k], b[k], sizeof(float) * (size_t)n);
    /* the uniform was the third stream: the same as after two other unseeded calls */
    assert_int_equal(tfl_ctx_set_seed(ctx, 99), TFL_OK);
    tfl_random_normal(ctx, TH_F32, 1, &n, 0, 1, 0);
    tfl_random_normal(ctx, TH_F32, 1, &n, 0, 1, 0);
    float *c = host_bytes(tfl_random_uniform(ctx, TH_F32, 1, &n, 0, 1, 0), NULL);
    assert_memory_equal(a[2], c, sizeof(float) * (size_t)n);
    for (int k = 0; k < 3; k++) {
        free(a[k]);
        free(b[k]);
    }
    free(c);
    end(ctx);
}

/* float16 runs through float32 (same mask); a strided input is masked by the output's index */
static void test_dropout_half_strided(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = ramp_f32(ctx, 24);
    double *y32 = TH_READ(tfl_dropout(ctx, x, 0.5, 3));
    double *y16 = TH_READ(tfl_dropout(ctx, tfl_cast(ctx, x, TH_F16), 0.5, 3));
    for (int i = 0; i < 24; i++) {
        assert_int_equal(y16[i] != 0, y32[i] != 0);
        assert_true(fabs(y16[i] - y32[i]) <= 2e-3 * fabs(y32[i]));
    }
    tfl_tensor *xt = tfl_transpose(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(4, 6)), NULL);
    double *s = TH_READ(tfl_dropout(ctx, xt, 0.5, 3));
    double *c = TH_READ(tfl_dropout(ctx, tfl_identity(ctx, xt), 0.5, 3));
    assert_memory_equal(s, c, 24 * sizeof(double));
    free(y32);
    free(y16);
    free(s);
    free(c);
    end(ctx);
}

static void test_dropout_errors(void **state)
{
    tfl_ctx *ctx = begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (3), (1, 2, 3));
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, -0.1, 1), DROP,
                      "rate must be a scalar tensor or a float in the range [0, 1), got -0.1");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, 1.0, 1), DROP,
                      "rate must be a scalar tensor or a float in the range [0, 1), got 1");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, 2.5, 1), DROP, "in the range [0, 1), got 2.5");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, NAN, 1), DROP, "in the range [0, 1), got nan");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, INFINITY, 1), DROP, "got inf");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, TH_T(ctx, TH_I32, (2), (1, 2)), 0.5, 1), DROP,
                      "dtype int32 is not supported; expected one of float16, bfloat16, float32, "
                      "float64");
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, NULL, 0.5, 1), DROP, "input 0 is NULL");
    /* a refused call takes no stream */
    assert_int_equal(tfl_ctx_set_seed(ctx, 8), TFL_OK);
    TH_EXPECT_INVALID(ctx, tfl_dropout(ctx, x, 1.5, 0), DROP, "got 1.5");
    double *a = TH_READ(tfl_dropout(ctx, ramp_f32(ctx, 16), 0.5, 0));
    assert_int_equal(tfl_ctx_set_seed(ctx, 8), TFL_OK);
    double *b = TH_READ(tfl_dropout(ctx, ramp_f32(ctx, 16), 0.5, 0));
    assert_memory_equal(a, b, 16 * sizeof(double));
    free(a);
    free(b);
    assert_null(tfl_dropout(NULL, x, 0.5, 1));
    end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_bn_fixture),
        T(test_bn_null_params),
        T(test_bn_half_strided_rank1),
        T(test_bn_big_threads),
        T(test_bn_errors),
        T(test_moments_fixture),
        T(test_moments_axes_half_frame),
        T(test_moments_errors),
        T(test_dropout_rate0_identity),
        T(test_dropout_seeds_and_layout),
        T(test_dropout_big),
        T(test_dropout_ctx_streams),
        T(test_dropout_half_strided),
        T(test_dropout_errors),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
