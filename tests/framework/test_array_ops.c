/* test_array_ops.c: cmocka tests of tapeflow's erf, sign, conj, broadcast_to, pad,
 * unsorted_segment_sum and stop_gradient ops, and of the op table (tfl_op_count / tfl_op_name):
 * values against independently computed expectations, dtypes, views, errors. */
#include "test_fixture.h"
#include "test_ops_helpers.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define FLOATS_ONLY "float16, bfloat16, float32, float64"
#define NUMERIC_DTYPES \
    "int32, int64, float16, bfloat16, float32, float64, complex64, complex128"

/* A small deterministic generator (values in [-1, 1)). */
static double lcg_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* ---- erf ------------------------------------------------------------------------------------- */

/* Reference values of erf (from the series / tables). */
static const double k_erf_x[] = {0, 0.5, 1, -1, 2, -3, 6, -10, INFINITY, -INFINITY, NAN};
static const double k_erf_y[] = {0,  0.5204998778130465,  0.8427007929497149, -0.8427007929497149,
                                 0.9953222650189527, -0.9999779095030014, 1, -1, 1, -1, NAN};

static void test_erf_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t n = NELEMS(k_erf_x);
    tfl_tensor *x64 = TH_TENSOR_N(ctx, TH_F64, 1, &n, k_erf_x, (size_t)n);
    TH_EXPECT_N(ctx, tfl_erf(ctx, x64), TH_F64, 1, &n, k_erf_y, (size_t)n, 1e-15);
    tfl_tensor *x32 = TH_TENSOR_N(ctx, TH_F32, 1, &n, k_erf_x, (size_t)n);
    TH_EXPECT_N(ctx, tfl_erf(ctx, x32), TH_F32, 1, &n, k_erf_y, (size_t)n, 1e-6);
    /* odd: negative arguments */
    tfl_tensor *xs = TH_T(ctx, TH_F64, (6), (0.25, 1.5, 2.5, -0.25, -1.5, -2.5));
    TH_EXPECT(ctx, tfl_erf(ctx, xs), TH_F64, (6),
              (0.2763263901682369, 0.9661051464753108, 0.999593047982555, -0.2763263901682369,
               -0.9661051464753108, -0.999593047982555), 1e-15);
    /* a scalar and an empty tensor */
    TH_EXPECT0(ctx, tfl_erf(ctx, TH_T0(ctx, TH_F64, 1)), TH_F64, 0.8427007929497149, 1e-15);
    TH_EXPECT_SHAPE(ctx, tfl_erf(ctx, tfl_zeros(ctx, TH_F64, 2, TH_SHAPE(0, 3))), TH_F64, (0, 3));
    /* float16 and bfloat16 run via float32 and round once */
    static const tfl_dtype halves[] = {TH_F16, TH_BF16};
    for (int d = 0; d < NELEMS(halves); d++) {
        tfl_tensor *h = TH_T(ctx, halves[d], (6), (0, 0.5, 1, -1, 2, -3));
        TH_EXPECT(ctx, tfl_erf(ctx, h), halves[d], (6),
                  (0, 0.5204998778130465, 0.8427007929497149, -0.8427007929497149,
                   0.9953222650189527, -0.9999779095030014),
                  1e-2);
    }
    th_end(ctx);
}

static void test_erf_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    TH_EXPECT_INVALID(ctx, tfl_erf(ctx, TH_T(ctx, TH_I32, (2), (0, 1))), "Erf",
                      "dtype int32 is not supported; expected one of " FLOATS_ONLY);
    TH_EXPECT_INVALID(ctx, tfl_erf(ctx, TH_T(ctx, TH_I64, (1), (0))), "Erf", FLOATS_ONLY);
    TH_EXPECT_INVALID(ctx, tfl_erf(ctx, TH_T(ctx, TH_BOOL, (1), (1))), "Erf", FLOATS_ONLY);
    TH_EXPECT_INVALID(ctx, tfl_erf(ctx, TH_TC(ctx, TH_C64, (1), (1, 1))), "Erf", FLOATS_ONLY);
    TH_EXPECT_INVALID(ctx, tfl_erf(ctx, NULL), "Erf", "input 0 is NULL");
    th_end(ctx);
}

/* ---- sign ------------------------------------------------------------------------------------ */

static void test_sign_real(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype ints[] = {TH_I32, TH_I64};
    for (int d = 0; d < NELEMS(ints); d++)
        TH_EXPECT(ctx, tfl_sign(ctx, TH_T(ctx, ints[d], (2, 3), (-3, 0, 2, 7, -1, -2147483648.0))),
                  ints[d], (2, 3), (-1, 0, 1, 1, -1, -1), 0);
    TH_EXPECT_I64(ctx, tfl_sign(ctx, TH_TI64(ctx, (3), (INT64_MIN, INT64_MAX, 0))), (3),
                  (-1, 1, 0));
    static const tfl_dtype floats[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(floats); d++) {
        tfl_dtype dt = floats[d];
        tfl_tensor *x = TH_T(ctx, dt, (7), (-3, 0, 2.5, -0.0, NAN, 1e-3, -INFINITY));
        tfl_tensor *s = tfl_sign(ctx, x);
        TH_EXPECT(ctx, s, dt, (7), (-1, 0, 1, 0, NAN, 1, -1), 0);
        double *v = TH_READ(s);
        assert_true(v[3] == 0.0); /* -0.0 stays a zero (either sign), not NaN */
        free(v);
    }
    TH_EXPECT0(ctx, tfl_sign(ctx, TH_T0(ctx, TH_F64, -1e-300)), TH_F64, -1, 0);
    th_end(ctx);
}

static void test_sign_complex(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_C64, TH_C128};
    for (int d = 0; d < NELEMS(dts); d++) {
        double tol = dts[d] == TH_C64 ? 1e-6 : 1e-15;
        tfl_tensor *z = TH_TC(ctx, dts[d], (5), (3, 4, 0, 0, -2, 0, 0, -5, 1, 1));
        TH_EXPECTC(ctx, tfl_sign(ctx, z), dts[d], (5),
                   (0.6, 0.8, 0, 0, -1, 0, 0, -1, 1 / sqrt(2.0), 1 / sqrt(2.0)), tol);
    }
    th_end(ctx);
}

static void test_sign_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    TH_EXPECT_INVALID(ctx, tfl_sign(ctx, TH_T(ctx, TH_BOOL, (2), (1, 0))), "Sign",
                      "dtype bool is not supported; expected one of " NUMERIC_DTYPES);
    TH_EXPECT_INVALID(ctx, tfl_sign(ctx, NULL), "Sign", "input 0 is NULL");
    th_end(ctx);
}

/* ---- conj ------------------------------------------------------------------------------------ */

static void test_conj(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_C64, TH_C128};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *z = TH_TC(ctx, dts[d], (2, 2), (1, 2, -3, -4, 0, 0, 5.5, -0.25));
        TH_EXPECTC(ctx, tfl_conj(ctx, z), dts[d], (2, 2), (1, -2, -3, 4, 0, 0, 5.5, 0.25), 0);
        /* non-contiguous input: the transpose */
        TH_EXPECTC(ctx, tfl_conj(ctx, tfl_transpose(ctx, z, NULL)), dts[d], (2, 2),
                   (1, -2, 0, 0, -3, 4, 5.5, 0.25), 0);
    }
    TH_EXPECTC0(ctx, tfl_conj(ctx, TH_TC0(ctx, TH_C128, NAN, 1)), TH_C128, NAN, -1, 0);
    /* real input: an equal copy, a different tensor */
    tfl_tensor *x = TH_T(ctx, TH_F32, (3), (1.5, -2, NAN));
    tfl_tensor *c = tfl_conj(ctx, x);
    TH_EXPECT(ctx, c, TH_F32, (3), (1.5, -2, NAN), 0);
    assert_ptr_not_equal(c, x);
    assert_ptr_not_equal(tfl_tensor_data_ptr(c), tfl_tensor_data_ptr(x));
    tfl_tensor *xi = TH_T(ctx, TH_I32, (2), (7, -7));
    tfl_tensor *ci = tfl_conj(ctx, xi);
    TH_EXPECT(ctx, ci, TH_I32, (2), (7, -7), 0);
    assert_ptr_not_equal(tfl_tensor_data_ptr(ci), tfl_tensor_data_ptr(xi));
    TH_EXPECT_INVALID(ctx, tfl_conj(ctx, NULL), "Conj", "input 0 is NULL");
    th_end(ctx);
}

/* ---- broadcast_to ---------------------------------------------------------------------------- */

static void test_broadcast_to_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* (3, 1) -> (2, 3, 4): out[i][j][k] = x[j] */
    double want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) want[(i * 3 + j) * 4 + k] = 10 * (j + 1);
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *x = TH_T(ctx, dts[d], (3, 1), (10, 20, 30));
        TH_EXPECT_N(ctx, tfl_broadcast_to(ctx, x, 3, TH_SHAPE(2, 3, 4)), dts[d], 3,
                    TH_SHAPE(2, 3, 4), want, 24, 0);
    }
    /* scalar -> (2, 2) */
    TH_EXPECT(ctx, tfl_broadcast_to(ctx, TH_T0(ctx, TH_F32, -1.5), 2, TH_SHAPE(2, 2)), TH_F32,
              (2, 2), (-1.5, -1.5, -1.5, -1.5), 0);
    TH_EXPECT0(ctx, tfl_broadcast_to(ctx, TH_T0(ctx, TH_F32, 4), 0, NULL), TH_F32, 4, 0);
    /* same shape: an equal copy in new storage */
    tfl_tensor *x = TH_T(ctx, TH_F64, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *same = tfl_broadcast_to(ctx, x, 2, TH_SHAPE(2, 3));
    TH_EXPECT(ctx, same, TH_F64, (2, 3), (1, 2, 3, 4, 5, 6), 0);
    assert_ptr_not_equal(tfl_tensor_data_ptr(same), tfl_tensor_data_ptr(x));
    assert_true(tfl_tensor_is_contiguous(same));
    /* non-contiguous input: x^T is (3, 2) = [[1,4],[2,5],[3,6]] -> (2, 3, 2) */
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL);
    tfl_tensor *bt = tfl_broadcast_to(ctx, xt, 3, TH_SHAPE(2, 3, 2));
    TH_EXPECT(ctx, bt, TH_F64, (2, 3, 2), (1, 4, 2, 5, 3, 6, 1, 4, 2, 5, 3, 6), 0);
    assert_true(tfl_tensor_is_contiguous(bt));
    /* a (1, 3) row of a transpose stretched down */
    tfl_tensor *col = tfl_slice(ctx, xt, TH_SHAPE(0, 1), TH_SHAPE(3, 1)); /* [[4],[5],[6]] */
    TH_EXPECT(ctx, tfl_broadcast_to(ctx, col, 2, TH_SHAPE(3, 3)), TH_F64, (3, 3),
              (4, 4, 4, 5, 5, 5, 6, 6, 6), 0);
    /* bool and complex */
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    TH_EXPECT(ctx, tfl_broadcast_to(ctx, b, 2, TH_SHAPE(3, 2)), TH_BOOL, (3, 2), (1, 0, 1, 0, 1, 0),
              0);
    tfl_tensor *c = TH_TC(ctx, TH_C128, (2, 1), (1, -2, 3, -4));
    TH_EXPECTC(ctx, tfl_broadcast_to(ctx, c, 2, TH_SHAPE(2, 3)), TH_C128, (2, 3),
               (1, -2, 1, -2, 1, -2, 3, -4, 3, -4, 3, -4), 0);
    TH_EXPECTC(ctx, tfl_broadcast_to(ctx, TH_TC0(ctx, TH_C64, 0.5, 2), 1, TH_SHAPE(2)), TH_C64, (2),
               (0.5, 2, 0.5, 2), 0);
    /* to an empty shape, and a 1 stretched to 0 (as NumPy) */
    tfl_tensor *v3 = TH_T(ctx, TH_F32, (3), (1, 2, 3)), *v21 = TH_T(ctx, TH_F32, (2, 1), (1, 2));
    TH_EXPECT_SHAPE(ctx, tfl_broadcast_to(ctx, v3, 2, TH_SHAPE(0, 3)), TH_F32, (0, 3));
    TH_EXPECT_SHAPE(ctx, tfl_broadcast_to(ctx, v21, 2, TH_SHAPE(2, 0)), TH_F32, (2, 0));
    th_end(ctx);
}

static void test_broadcast_to_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x32 = TH_T(ctx, TH_F32, (3, 2), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 2, TH_SHAPE(2, 3)), "BroadcastTo",
                      "cannot broadcast a tensor of shape (3, 2) to shape (2, 3)");
    /* target rank smaller than x's */
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 1, TH_SHAPE(2)), "BroadcastTo",
                      "cannot broadcast a tensor of shape (3, 2) to shape (2,)");
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, TH_T(ctx, TH_F32, (1, 1), (1)), 1, TH_SHAPE(1)),
                      "BroadcastTo", "(1, 1)");
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 0, NULL), "BroadcastTo", "to shape ()");
    /* a dimension that is not 1 does not stretch, and the target may not shrink */
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 3, TH_SHAPE(2, 3, 1)), "BroadcastTo",
                      "(3, 2)");
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, TH_T(ctx, TH_F32, (2), (1, 2)), 2, TH_SHAPE(3, 1)),
                      "BroadcastTo", "(2,)");
    /* negative dimension, NULL shape, rank out of range, NULL input */
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 2, TH_SHAPE(3, -2)), "BroadcastTo",
                      "dimension 1 is negative");
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 2, NULL), "BroadcastTo", "shape is NULL");
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, -1, TH_SHAPE(3, 2)), "BroadcastTo", NULL);
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, x32, 9, TH_SHAPE(1, 1, 1, 1, 1, 1, 1, 3, 2)),
                      "BroadcastTo", NULL);
    TH_EXPECT_INVALID(ctx, tfl_broadcast_to(ctx, NULL, 1, TH_SHAPE(2)), "BroadcastTo",
                      "input 0 is NULL");
    th_end(ctx);
}

/* ---- pad ------------------------------------------------------------------------------------- */

/* The expected pad of a (r, c) matrix holding x[i][j] = base + i * c + j (row-major). */
static void want_pad2(double *out, int r, int c, const int64_t *before, const int64_t *after,
                      double base, double value)
{
    int64_t R = r + before[0] + after[0], C = c + before[1] + after[1];
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) {
            int64_t si = i - before[0], sj = j - before[1];
            bool in = si >= 0 && si < r && sj >= 0 && sj < c;
            out[i * C + j] = in ? base + (double)(si * c + sj) : value;
        }
}

static void test_pad_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t before[2] = {1, 0}, after[2] = {2, 1};
    double want[20];
    want_pad2(want, 2, 3, before, after, 1, 0.5);
    static const double spelled[20] = {0.5, 0.5, 0.5, 0.5, 1,   2,   3,   0.5, 4,   5,
                                       6,   0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    for (int i = 0; i < 20; i++) assert_true(want[i] == spelled[i]); /* the helper itself */
    static const tfl_dtype fl[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(fl); d++) {
        tfl_tensor *x = TH_T(ctx, fl[d], (2, 3), (1, 2, 3, 4, 5, 6));
        TH_EXPECT_N(ctx, tfl_pad(ctx, x, before, after, 0.5), fl[d], 2, TH_SHAPE(5, 4), want, 20,
                    0);
    }
    /* zero padding: an equal copy */
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *p0 = tfl_pad(ctx, x, TH_SHAPE(0, 0), TH_SHAPE(0, 0), 9);
    TH_EXPECT(ctx, p0, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6), 0);
    assert_ptr_not_equal(tfl_tensor_data_ptr(p0), tfl_tensor_data_ptr(x));
    /* value 0 (the memset path) on every side */
    double w0[25];
    want_pad2(w0, 2, 3, TH_SHAPE(1, 2), TH_SHAPE(2, 0), 1, 0);
    TH_EXPECT_N(ctx, tfl_pad(ctx, x, TH_SHAPE(1, 2), TH_SHAPE(2, 0), 0), TH_F32, 2, TH_SHAPE(5, 5),
                w0, 25, 0);
    /* int32 and bool with value 1 */
    double wi[20];
    want_pad2(wi, 2, 3, before, after, -3, 1);
    tfl_tensor *xi = TH_T(ctx, TH_I32, (2, 3), (-3, -2, -1, 0, 1, 2));
    TH_EXPECT_N(ctx, tfl_pad(ctx, xi, before, after, 1), TH_I32, 2, TH_SHAPE(5, 4), wi, 20, 0);
    tfl_tensor *xb = TH_T(ctx, TH_BOOL, (1, 2), (0, 0));
    TH_EXPECT(ctx, tfl_pad(ctx, xb, TH_SHAPE(1, 1), TH_SHAPE(0, 1), 1), TH_BOOL, (2, 4),
              (1, 1, 1, 1, 1, 0, 0, 1), 0);
    /* complex */
    TH_EXPECTC(ctx, tfl_pad(ctx, TH_TC(ctx, TH_C128, (1), (1, 2)), TH_SHAPE(1), TH_SHAPE(1), -2),
               TH_C128, (3), (-2, 0, 1, 2, -2, 0), 0);
    /* a non-contiguous input: x^T = [[1,4],[2,5],[3,6]] */
    double wt[20];
    want_pad2(wt, 3, 2, TH_SHAPE(0, 1), TH_SHAPE(1, 1), 0, -7);
    static const int tmap[6] = {1, 4, 2, 5, 3, 6}; /* x^T's values in row-major order */
    for (int i = 0, k = 0; i < 16; i++)
        if (wt[i] != -7) wt[i] = tmap[k++];
    TH_EXPECT_N(ctx, tfl_pad(ctx, tfl_transpose(ctx, x, NULL), TH_SHAPE(0, 1), TH_SHAPE(1, 1), -7),
                TH_F32, 2, TH_SHAPE(4, 4), wt, 16, 0);
    /* rank 0: no padding (before and after may be NULL) */
    TH_EXPECT0(ctx, tfl_pad(ctx, TH_T0(ctx, TH_F64, 3.25), NULL, NULL, 1), TH_F64, 3.25, 0);
    /* padding an empty axis: everything is the value */
    tfl_tensor *e = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 2));
    TH_EXPECT(ctx, tfl_pad(ctx, e, TH_SHAPE(1, 0), TH_SHAPE(1, 1), 2), TH_F32, (2, 3),
              (2, 2, 2, 2, 2, 2), 0);
    TH_EXPECT_SHAPE(ctx, tfl_pad(ctx, e, TH_SHAPE(0, 1), TH_SHAPE(0, 1), 2), TH_F32, (0, 4));
    /* rank 3 */
    double w3[2 * 3 * 2] = {0};
    w3[(1 * 3 + 1) * 2 + 0] = 7; /* x (1,1,1) = 7 at (1, 1, 0) of (2, 3, 2) */
    tfl_tensor *x3 = TH_T(ctx, TH_I64, (1, 1, 1), (7));
    TH_EXPECT_N(ctx, tfl_pad(ctx, x3, TH_SHAPE(1, 1, 0), TH_SHAPE(0, 1, 1), 0), TH_I64, 3,
                TH_SHAPE(2, 3, 2), w3, 12, 0);
    th_end(ctx);
}

static void test_pad_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_pad(ctx, x, TH_SHAPE(0, -1), TH_SHAPE(0, 0), 0), "PadV2",
                      "paddings must be non-negative, axis 1 has before -1, after 0");
    TH_EXPECT_INVALID(ctx, tfl_pad(ctx, x, TH_SHAPE(0, 0), TH_SHAPE(-2, 0), 0), "PadV2",
                      "axis 0 has before 0, after -2");
    TH_EXPECT_INVALID(ctx, tfl_pad(ctx, x, NULL, TH_SHAPE(0, 0), 0), "PadV2",
                      "before and after must be given for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_pad(ctx, x, TH_SHAPE(0, 0), NULL, 0), "PadV2",
                      "before and after must be given for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_pad(ctx, NULL, TH_SHAPE(0), TH_SHAPE(0), 0), "PadV2",
                      "input 0 is NULL");
    th_end(ctx);
}

/* ---- unsorted_segment_sum -------------------------------------------------------------------- */

static void test_segment_sum_axis0(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* rows 0 and 2 -> 0, rows 1 and 3 -> 2, row 4 -> 3, segment 1 empty */
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *data = TH_T(ctx, dts[d], (5, 2), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
        tfl_tensor *i32 = TH_T(ctx, TH_I32, (5), (0, 2, 0, 2, 3));
        tfl_tensor *i64 = TH_T(ctx, TH_I64, (5), (0, 2, 0, 2, 3));
        TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, data, i32, 4, 0), dts[d], (4, 2),
                  (6, 8, 0, 0, 10, 12, 9, 10), 0);
        TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, data, i64, 5, -2), dts[d], (5, 2),
                  (6, 8, 0, 0, 10, 12, 9, 10, 0, 0), 0);
    }
    /* complex128 */
    tfl_tensor *c = TH_TC(ctx, TH_C128, (3), (1, 2, 3, -4, 0.5, 0.25));
    tfl_tensor *c_ids = TH_T(ctx, TH_I32, (3), (1, 1, 0));
    TH_EXPECTC(ctx, tfl_unsorted_segment_sum(ctx, c, c_ids, 2, 0), TH_C128, (2), (0.5, 0.25, 4, -2),
               0);
    /* float16 sums in float32 and rounds once: 2048 + 1 + 1 = 2050 (2049 is not a float16) */
    tfl_tensor *h = TH_T(ctx, TH_F16, (3), (2048, 1, 1));
    tfl_tensor *zeros3 = TH_T(ctx, TH_I32, (3), (0, 0, 0));
    TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, h, zeros3, 1, 0), TH_F16, (1), (2050), 0);
    /* scalar ids: a scalar data is one slot */
    tfl_tensor *s0 = TH_T0(ctx, TH_F32, 5), *id0 = TH_T0(ctx, TH_I64, 2);
    TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, s0, id0, 3, 0), TH_F32, (3), (0, 0, 5), 0);
    /* empty ids and zero segments */
    tfl_tensor *e = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 3));
    tfl_tensor *no_ids = tfl_zeros(ctx, TH_I32, 1, TH_SHAPE(0));
    TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, e, no_ids, 2, 0), TH_F32, (2, 3),
              (0, 0, 0, 0, 0, 0), 0);
    TH_EXPECT_SHAPE(ctx, tfl_unsorted_segment_sum(ctx, e, no_ids, 0, 0), TH_F32, (0, 3));
    th_end(ctx);
}

static void test_segment_sum_axis1_2d_ids(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* data (3, 2, 2, 2), ids (2, 2) at axis 1 -> out (3, nseg, 2) */
    enum { O = 3, J0 = 2, J1 = 2, I = 2, NSEG = 4 };
    static const int64_t ids[J0 * J1] = {3, 0, 3, 1}; /* segment 2 stays empty */
    double data[O * J0 * J1 * I], want[O * NSEG * I];
    for (int i = 0; i < O * J0 * J1 * I; i++) data[i] = i + 1;
    for (int i = 0; i < O * NSEG * I; i++) want[i] = 0;
    for (int o = 0; o < O; o++)
        for (int j = 0; j < J0 * J1; j++)
            for (int i = 0; i < I; i++)
                want[(o * NSEG + ids[j]) * I + i] += data[(o * J0 * J1 + j) * I + i];
    static const tfl_dtype dts[] = {TH_I32, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *t = TH_TENSOR_N(ctx, dts[d], 4, TH_SHAPE(O, J0, J1, I), data, O * J0 * J1 * I);
        tfl_tensor *i64 = tfl_tensor_new(ctx, TH_I64, 2, TH_SHAPE(J0, J1), ids);
        tfl_tensor *i32 = TH_T(ctx, TH_I32, (J0, J1), (3, 0, 3, 1));
        TH_EXPECT_N(ctx, tfl_unsorted_segment_sum(ctx, t, i64, NSEG, 1), dts[d], 3,
                    TH_SHAPE(O, NSEG, I), want, O * NSEG * I, 0);
        TH_EXPECT_N(ctx, tfl_unsorted_segment_sum(ctx, t, i32, NSEG, -2), dts[d], 3,
                    TH_SHAPE(O, NSEG, I), want, O * NSEG * I, 0);
    }
    /* non-contiguous data: x^T of x (3, 2) is (2, 3); sum its rows by ids (1, 1) */
    tfl_tensor *x = TH_T(ctx, TH_F64, (3, 2), (1, 2, 3, 4, 5, 6));
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL), *ones = TH_T(ctx, TH_I32, (2), (1, 1));
    TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, xt, ones, 2, 0), TH_F64, (2, 3),
              (0, 0, 0, 1 + 2, 3 + 4, 5 + 6), 0);
    th_end(ctx);
}

static void test_segment_sum_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const char *op = "UnsortedSegmentSum";
    tfl_tensor *data = TH_T(ctx, TH_F32, (4, 2), (1, 2, 3, 4, 5, 6, 7, 8));
    tfl_tensor *fids = TH_T(ctx, TH_F32, (4), (0, 1, 2, 0));
    tfl_tensor *bids = TH_T(ctx, TH_BOOL, (4), (0, 1, 1, 0));
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, fids, 3, 0), op,
                      "segment_ids dtype float32 is not supported; expected one of int32, int64");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, bids, 3, 0), op, "int32, int64");
    /* ids out of range: the first bad position is named */
    tfl_tensor *big = TH_T(ctx, TH_I32, (4), (0, 1, 7, 9)), *neg = TH_TI64(ctx, (4), (0, -1, 1, 0));
    tfl_tensor *edge = TH_TI64(ctx, (4), (0, 1, 1, 3));
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, big, 3, 0), op,
                      "segment_ids[2] = 7 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, neg, 3, 0), op,
                      "segment_ids[1] = -1 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, edge, 3, 0), op,
                      "segment_ids[3] = 3 is not in [0, 3)");
    tfl_tensor *ids = TH_T(ctx, TH_I32, (4), (0, 1, 2, 0));
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids, -1, 0), op,
                      "num_segments must be non-negative, got -1");
    /* shapes that do not match, axes out of range */
    tfl_tensor *ids3 = TH_T(ctx, TH_I32, (3), (0, 1, 2));
    tfl_tensor *ids222 = TH_T(ctx, TH_I32, (2, 2, 2), (0, 0, 0, 0, 0, 0, 0, 0));
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids3, 3, 0), op,
                      "data of shape (4, 2) does not hold segment_ids of shape (3,) at axis 0");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids, 3, 1), op, "at axis 1");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids, 3, 2), op, NULL);
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids, 3, -3), op, NULL);
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, ids222, 3, 0), op, NULL);
    /* data dtype, NULL inputs */
    tfl_tensor *bdata = TH_T(ctx, TH_BOOL, (4), (1, 0, 1, 0));
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, bdata, ids, 3, 0), op,
                      "dtype bool is not supported; expected one of " NUMERIC_DTYPES);
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, NULL, ids, 3, 0), op, "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_unsorted_segment_sum(ctx, data, NULL, 3, 0), op, "input 1 is NULL");
    th_end(ctx);
}

/* ---- output shapes beyond the limits: refused, not overflowed -------------------------------- */

/* True when the op refused: NULL with INVALID_ARGUMENT (or RESOURCE_EXHAUSTED). The result is
 * not released on failure (it is frame-owned; the frame pop frees it). Clears the error. */
static bool refused(tfl_ctx *ctx, const tfl_tensor *t, const char *what)
{
    tfl_status code = tfl_ctx_status(ctx);
    bool ok = !t && (code == TFL_INVALID_ARGUMENT || code == TFL_RESOURCE_EXHAUSTED);
    if (!ok)
        print_error("%s: expected NULL and INVALID_ARGUMENT, got %s and %s (%s)\n", what,
                    t ? "a tensor" : "NULL", tfl_status_name(code), tfl_ctx_error(ctx).message);
    tfl_ctx_clear_error(ctx);
    return ok;
}

/* Integer sums wrap (as TensorFlow's kernels in practice, and as tfl_add does), without C's
 * undefined signed overflow (a sanitizer build traps on it). */
static void test_segment_sum_int_wraps(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *d32 = TH_T(ctx, TH_I32, (3), (2147483647, 1, 5));
    tfl_tensor *d64 = TH_TI64(ctx, (2), (INT64_MAX, 2));
    tfl_tensor *ids = TH_T(ctx, TH_I32, (3), (0, 0, 1)), *ids2 = TH_T(ctx, TH_I32, (2), (0, 0));
    TH_EXPECT(ctx, tfl_unsorted_segment_sum(ctx, d32, ids, 2, 0), TH_I32, (2), (-2147483648.0, 5),
              0);
    TH_EXPECT_I64(ctx, tfl_unsorted_segment_sum(ctx, d64, ids2, 1, 0), (1), (INT64_MIN + 1));
    th_end(ctx);
}

/* Scalar ids on rank-8 data would give a rank-9 result. */
static void test_segment_sum_rank_limit(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *data = tfl_zeros(ctx, TH_F32, 8, TH_SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    tfl_tensor *id = TH_T0(ctx, TH_I32, 0);
    assert_true(
        refused(ctx, tfl_unsorted_segment_sum(ctx, data, id, 2, 0), "segment sum to rank 9"));
    th_end(ctx);
}

/* (2^62, 4): the element count overflows int64. */
static void test_segment_sum_too_many_elements(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *data = TH_T(ctx, TH_F32, (2, 4), (1, 2, 3, 4, 5, 6, 7, 8));
    tfl_tensor *ids = TH_T(ctx, TH_I32, (2), (0, 1));
    assert_true(refused(ctx, tfl_unsorted_segment_sum(ctx, data, ids, INT64_C(1) << 62, 0),
                        "segment sum to (2^62, 4)"));
    th_end(ctx);
}

/* A padded shape whose element count overflows, and a padded dimension past INT64_MAX. */
static void test_pad_too_many_elements(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 4), (1, 2, 3, 4, 5, 6, 7, 8));
    bool ok = refused(ctx, tfl_pad(ctx, x, TH_SHAPE(INT64_C(1) << 61, 0), TH_SHAPE(0, 0), 0),
                      "PadV2 to (2^61 + 2, 4)");
    ok &= refused(ctx, tfl_pad(ctx, x, TH_SHAPE(INT64_MAX, 0), TH_SHAPE(1, 0), 0),
                  "PadV2 with before INT64_MAX");
    assert_true(ok);
    th_end(ctx);
}

/* sum(gather(x, idx) * y) == sum(x * unsorted_segment_sum(y, idx, dim)): gather's adjoint. */
static void test_segment_sum_is_gather_adjoint(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    uint64_t seed = 12345;
    const int64_t xs[3] = {3, 5, 4};
    const int64_t nx = 3 * 5 * 4;
    double xv[60];
    for (int i = 0; i < nx; i++) xv[i] = lcg_next(&seed);
    tfl_tensor *x = TH_TENSOR_N(ctx, TH_F64, 3, xs, xv, nx);
    for (int axis = 0; axis < 3; axis++)
        for (int two_d = 0; two_d < 2; two_d++) {
            int idx_rank = two_d ? 2 : 1;
            int64_t ishape[2] = {two_d ? 2 : 7, 3}, nidx = two_d ? 6 : 7;
            int32_t idx[7];
            for (int i = 0; i < nidx; i++)
                idx[i] = (int32_t)((lcg_next(&seed) + 1) * 0.5 * (double)xs[axis]) % xs[axis];
            tfl_tensor *it = tfl_tensor_new(ctx, TH_I32, idx_rank, ishape, idx);
            tfl_tensor *g = tfl_gather(ctx, x, it, axis);
            assert_non_null(g);
            int64_t ny = tfl_tensor_numel(g);
            double *yv = malloc(sizeof(double) * (size_t)ny);
            assert_non_null(yv);
            for (int64_t i = 0; i < ny; i++) yv[i] = lcg_next(&seed);
            tfl_tensor *y =
                TH_TENSOR_N(ctx, TH_F64, tfl_tensor_rank(g), tfl_tensor_shape(g), yv, (size_t)ny);
            tfl_tensor *s = tfl_unsorted_segment_sum(ctx, y, it, xs[axis], axis);
            TH_EXPECT_N(ctx, s, TH_F64, 3, xs, NULL, 0, 0); /* x's shape */
            double *gv = TH_READ(g), *sv = TH_READ(s);
            double lhs = 0, rhs = 0;
            for (int64_t i = 0; i < ny; i++) lhs += gv[i] * yv[i];
            for (int64_t i = 0; i < nx; i++) rhs += xv[i] * sv[i];
            if (!(fabs(lhs - rhs) <= 1e-12)) {
                print_error("axis %d, ids rank %d: <gather(x), y> = %.17g, <x, segsum(y)> = "
                            "%.17g\n", axis, idx_rank, lhs, rhs);
                fail();
            }
            free(gv);
            free(sv);
            free(yv);
        }
    th_end(ctx);
}

/* ---- stop_gradient --------------------------------------------------------------------------- */

static void test_stop_gradient(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *s = tfl_stop_gradient(ctx, x);
    TH_EXPECT(ctx, s, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6), 0);
    assert_ptr_not_equal(s, x);
    assert_ptr_equal(tfl_tensor_data_ptr(s), tfl_tensor_data_ptr(x)); /* a view */
    /* of a non-contiguous view: still the same element 0, same values */
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL);
    tfl_tensor *st = tfl_stop_gradient(ctx, xt);
    TH_EXPECT(ctx, st, TH_F32, (3, 2), (1, 4, 2, 5, 3, 6), 0);
    assert_ptr_equal(tfl_tensor_data_ptr(st), tfl_tensor_data_ptr(xt));
    /* other dtypes, scalars */
    TH_EXPECTC(ctx, tfl_stop_gradient(ctx, TH_TC(ctx, TH_C64, (1), (1, -1))), TH_C64, (1), (1, -1),
               0);
    TH_EXPECT0(ctx, tfl_stop_gradient(ctx, TH_T0(ctx, TH_BOOL, 1)), TH_BOOL, 1, 0);
    /* a variable */
    tfl_tensor *v = tfl_variable_new(ctx, x, NULL);
    assert_non_null(v);
    tfl_tensor *sv = tfl_stop_gradient(ctx, v);
    TH_EXPECT(ctx, sv, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6), 0);
    TH_EXPECT(ctx, tfl_add(ctx, sv, v), TH_F32, (2, 3), (2, 4, 6, 8, 10, 12), 0);
    th_end(ctx);
    tfl_tensor_release(v);
}

static void test_stop_gradient_null_keeps_first_error(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    assert_null(tfl_stop_gradient(ctx, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "StopGradient: input 0 is NULL");
    /* a failed op upstream: its error is kept, not replaced by StopGradient's */
    tfl_tensor *bad = tfl_erf(ctx, TH_T(ctx, TH_I32, (1), (1)));
    assert_null(bad);
    assert_null(tfl_stop_gradient(ctx, bad));
    assert_null(tfl_broadcast_to(ctx, tfl_stop_gradient(ctx, bad), 1, TH_SHAPE(2)));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Erf: dtype int32 is not supported");
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (1), (1));
    assert_null(tfl_pad(ctx, tfl_sign(ctx, b), TH_SHAPE(1), TH_SHAPE(1), 0));
    assert_null(tfl_conj(ctx, tfl_stop_gradient(ctx, NULL)));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Sign: dtype bool");
    th_end(ctx);
}

/* ---- op table -------------------------------------------------------------------------------- */

static void test_op_names(void **state)
{
    (void)state;
    int n = tfl_op_count();
    assert_true(n > 50);
    static const char *const want[] = {"MatMul", "Erf", "Sign", "Conj", "StopGradient",
                                       "BroadcastTo", "PadV2", "UnsortedSegmentSum", "GatherV2"};
    for (int w = 0; w < NELEMS(want); w++) {
        int found = 0;
        for (int i = 0; i < n; i++) found += tfl_op_name(i) && strcmp(tfl_op_name(i), want[w]) == 0;
        if (found != 1) {
            print_error("op \"%s\" found %d times in the op table\n", want[w], found);
            fail();
        }
    }
    for (int i = 0; i < n; i++) {
        assert_non_null(tfl_op_name(i));
        assert_true(strlen(tfl_op_name(i)) > 0);
    }
    assert_null(tfl_op_name(-1));
    assert_null(tfl_op_name(n));
    assert_null(tfl_op_name(n + 1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_erf_values),
        TH_TEST(test_erf_errors),
        TH_TEST(test_sign_real),
        TH_TEST(test_sign_complex),
        TH_TEST(test_sign_errors),
        TH_TEST(test_conj),
        TH_TEST(test_broadcast_to_values),
        TH_TEST(test_broadcast_to_errors),
        TH_TEST(test_pad_values),
        TH_TEST(test_pad_errors),
        TH_TEST(test_segment_sum_axis0),
        TH_TEST(test_segment_sum_axis1_2d_ids),
        TH_TEST(test_segment_sum_errors),
        TH_TEST(test_segment_sum_is_gather_adjoint),
        TH_TEST(test_stop_gradient),
        TH_TEST(test_stop_gradient_null_keeps_first_error),
        TH_TEST(test_op_names),
        /* last: on the current code these fail or crash (and stop a sanitizer run) */
        TH_TEST(test_segment_sum_int_wraps),
        TH_TEST(test_segment_sum_rank_limit),
        TH_TEST(test_segment_sum_too_many_elements),
        TH_TEST(test_pad_too_many_elements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
