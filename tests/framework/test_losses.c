/* test_losses.c: cmocka tests of the fused losses from logits (softmax cross-entropy with
 * dense and sparse labels, sigmoid cross-entropy): values by hand and from TensorFlow,
 * logits that overflow a naive softmax, axes, float16/bfloat16, error codes and messages.
 *
 * Reference values marked "TF 2.21" were computed with tensorflow-cpu 2.21.0 in float64:
 *   tf.nn.softmax_cross_entropy_with_logits(labels, logits, axis)
 *   tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
 *   tf.nn.sigmoid_cross_entropy_with_logits(labels, logits)
 * on the inputs written next to them (tests/reference/losses_tf.py prints them), and pasted
 * here: the test does not need TensorFlow. */
#include "test_ops_helpers.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define XENT "SoftmaxCrossEntropyWithLogits"
#define SPARSE "SparseSoftmaxCrossEntropyWithLogits"
#define SIGMOID "SigmoidCrossEntropyWithLogits"

static const tfl_dtype k_floats[] = {TH_F32, TH_F64};
static const double k_tol[] = {1e-6, 1e-13};

/* ---- softmax cross-entropy, dense labels ------------------------------------------------- */

static void test_xent_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const double log4 = log(4.0), lse123 = log(exp(1.0) + exp(2.0) + exp(3.0));
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        /* equal logits, uniform labels: log(classes) */
        TH_EXPECT(ctx,
                  tfl_softmax_cross_entropy(ctx, tfl_zeros(ctx, dt, 2, TH_SHAPE(2, 4)),
                                            tfl_fill(ctx, dt, 2, TH_SHAPE(2, 4), 0.25), -1),
                  dt, (2), (log4, log4), k_tol[d]);
        /* all the mass on one class: lse(x) - x_k */
        tfl_tensor *x = TH_T(ctx, dt, (1, 3), (1, 2, 3));
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, TH_T(ctx, dt, (1, 3), (0, 0, 1)), -1), dt,
                  (1), (lse123 - 3), k_tol[d]);
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, TH_T(ctx, dt, (1, 3), (1, 0, 0)), 1), dt,
                  (1), (lse123 - 1), k_tol[d]);
        /* labels are not normalised: twice the labels, twice the loss */
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, TH_T(ctx, dt, (1, 3), (0, 0, 2)), -1), dt,
                  (1), (2 * (lse123 - 3)), k_tol[d]);
        /* a rank-1 input gives a scalar */
        TH_EXPECT0(ctx,
                   tfl_softmax_cross_entropy(ctx, TH_T(ctx, dt, (3), (1, 2, 3)),
                                             TH_T(ctx, dt, (3), (0, 1, 0)), 0),
                   dt, lse123 - 2, k_tol[d]);
    }
    th_end(ctx);
}

static void test_xent_batch_and_large_logits(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        /* three rows; the second and third would overflow e^x in float32 and float64 */
        tfl_tensor *x = TH_T(ctx, dt, (3, 3), (1, 2, 3, 1000, 1001, 1002, -1000, 0, 1000));
        tfl_tensor *z = TH_T(ctx, dt, (3, 3), (0, 0, 1, 0.2, 0.3, 0.5, 1, 0, 0));
        /* TF 2.21 */
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, z, -1), dt, (3),
                  (0.4076059644443804, 1.1076059644443805, 2000.0), k_tol[d]);
    }
    /* a strided (transposed) input gives the same values */
    tfl_tensor *xt = tfl_transpose(ctx, TH_T(ctx, TH_F64, (2, 2), (1000, -5, 1001, 7)), NULL);
    tfl_tensor *zt = TH_T(ctx, TH_F64, (2, 2), (0, 1, 1, 0));
    TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, xt, zt, -1), TH_F64, (2),
              (log1p(exp(-1.0)), 12 + log1p(exp(-12.0))), 1e-13);
    th_end(ctx);
}

static void test_xent_axes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        /* classes on axis 0 of a (3, 2): TF 2.21, axis=0 */
        tfl_tensor *x = TH_T(ctx, dt, (3, 2), (0.5, -1, 2, 0.25, -0.5, 3));
        tfl_tensor *z = TH_T(ctx, dt, (3, 2), (0.1, 0, 0.6, 0.5, 0.3, 0.5));
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, z, 0), dt, (2),
                  (1.1663678998071336, 1.4540362014040995), k_tol[d]);
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, z, -2), dt, (2),
                  (1.1663678998071336, 1.4540362014040995), k_tol[d]);
        /* the middle axis of a (2, 3, 4): logits 0.25 i - 2 (i the flat index), labels 0.25;
           TF 2.21, axis=1 (the same value everywhere: columns differ by a constant) */
        double xv[24], zv[24];
        for (int i = 0; i < 24; i++) {
            xv[i] = 0.25 * i - 2;
            zv[i] = 0.25;
        }
        tfl_tensor *x3 = TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(2, 3, 4), xv, 24);
        tfl_tensor *z3 = TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(2, 3, 4), zv, 24);
        double want[8];
        for (int i = 0; i < 8; i++)
            want[i] = 1.0557044733332854;
        TH_EXPECT_N(ctx, tfl_softmax_cross_entropy(ctx, x3, z3, 1), dt, 2, TH_SHAPE(2, 4), want, 8,
                    k_tol[d]);
    }
    th_end(ctx);
}

/* ---- sparse softmax cross-entropy ---------------------------------------------------------- */

static void test_sparse_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        tfl_tensor *x =
            TH_T(ctx, dt, (3, 4), (1, 2, 3, 4, 1000, 0, -1000, 500, 0.5, 0.5, 0.5, 0.5));
        /* TF 2.21, labels [0, 3, 2]; the last row is log 4 by hand */
        TH_EXPECT(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_I32, (3), (0, 3, 2))),
                  dt, (3), (3.4401896985611953, 500.0, 1.3862943611198906), k_tol[d]);
        TH_EXPECT(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_TI64(ctx, (3), (0, 3, 2))), dt,
                  (3), (3.4401896985611953, 500.0, 1.3862943611198906), k_tol[d]);
        /* rank 3: logits 0.5 i - 1, labels [[0, 2], [1, 1]]; TF 2.21 */
        double xv[12];
        for (int i = 0; i < 12; i++)
            xv[i] = 0.5 * i - 1;
        tfl_tensor *x3 = TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(2, 2, 3), xv, 12);
        TH_EXPECT(ctx,
                  tfl_sparse_softmax_cross_entropy(ctx, x3, TH_TI64(ctx, (2, 2), (0, 2, 1, 1))), dt,
                  (2, 2),
                  (1.6802696706417346, 0.6802696706417346, 1.1802696706417346, 1.1802696706417346),
                  k_tol[d]);
        /* rank 1 logits, rank 0 label */
        TH_EXPECT0(ctx,
                   tfl_sparse_softmax_cross_entropy(ctx, TH_T(ctx, dt, (3), (1, 2, 3)),
                                                    TH_T0(ctx, TH_I32, 2)),
                   dt, log(exp(1.0) + exp(2.0) + exp(3.0)) - 3, k_tol[d]);
    }
    th_end(ctx);
}

/* sparse labels agree with their one-hot dense form */
static void test_sparse_matches_dense_one_hot(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    double xv[20];
    for (int i = 0; i < 20; i++)
        xv[i] = sin(1.7 * i) * 3;
    tfl_tensor *x = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(4, 5), xv, 20);
    tfl_tensor *labels = TH_TI64(ctx, (4), (4, 0, 2, 2));
    double *sparse = TH_READ(tfl_sparse_softmax_cross_entropy(ctx, x, labels));
    tfl_tensor *hot = tfl_one_hot(ctx, labels, 5, 1, 0, TH_F64);
    TH_EXPECT_N(ctx, tfl_softmax_cross_entropy(ctx, x, hot, -1), TH_F64, 1, TH_SHAPE(4), sparse, 4,
                1e-14);
    free(sparse);
    th_end(ctx);
}

static void test_sparse_bad_labels(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 10));
    /* TensorFlow: "Received a label value of 12 which is outside the valid range of [0, 10)." */
    TH_EXPECT_INVALID(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_I32, (2), (1, 12))), SPARSE,
        "Received a label value of 12 which is outside the valid range of "
        "[0, 10) at labels[1]");
    TH_EXPECT_INVALID(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_TI64(ctx, (2), (-1, 3))),
                      SPARSE,
                      "label value of -1 which is outside the valid range of [0, 10) "
                      "at labels[0]");
    tfl_tensor *x3 = tfl_zeros(ctx, TH_F64, 3, TH_SHAPE(2, 3, 4));
    TH_EXPECT_INVALID(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, x3, TH_TI64(ctx, (2, 3), (0, 1, 2, 3, 4, 0))),
        SPARSE,
        "label value of 4 which is outside the valid range of [0, 4) at "
        "labels[1, 1]");
    /* float16 logits take the same check */
    TH_EXPECT_INVALID(ctx,
                      tfl_sparse_softmax_cross_entropy(ctx,
                                                       tfl_zeros(ctx, TH_F16, 2, TH_SHAPE(1, 3)),
                                                       TH_T(ctx, TH_I32, (1), (3))),
                      SPARSE, "label value of 3");
    th_end(ctx);
}

/* ---- sigmoid cross-entropy --------------------------------------------------------------------
 */

static void test_sigmoid_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        tfl_tensor *x = TH_T(ctx, dt, (8), (-3, -1, 0, 0.5, 2, 1000, -1000, 30));
        tfl_tensor *z = TH_T(ctx, dt, (8), (0, 1, 0.3, 1, 0, 1, 0, 0.25));
        /* TF 2.21; x = 0 gives log 2, x = +-1000 with the matching label 0 */
        TH_EXPECT(ctx, tfl_sigmoid_cross_entropy(ctx, x, z), dt, (8),
                  (0.048587351573742055, 1.3132616875182228, 0.6931471805599453, 0.4740769841801067,
                   2.1269280110429727, 0.0, 0.0, 22.500000000000092),
                  k_tol[d]);
        /* x = 1000 with label 0 is 1000, x = -1000 with label 1 is 1000: no overflow */
        TH_EXPECT(ctx,
                  tfl_sigmoid_cross_entropy(ctx, TH_T(ctx, dt, (2), (1000, -1000)),
                                            TH_T(ctx, dt, (2), (0, 1))),
                  dt, (2), (1000, 1000), k_tol[d]);
    }
    /* labels broadcast against logits: a row of labels for every row of logits */
    tfl_tensor *x = TH_T(ctx, TH_F64, (2, 2), (0, 1, -2, 3));
    tfl_tensor *z = TH_T(ctx, TH_F64, (2), (1, 0));
    const double l2 = log(2.0);
    TH_EXPECT(ctx, tfl_sigmoid_cross_entropy(ctx, x, z), TH_F64, (2, 2),
              (l2, 1 + log1p(exp(-1.0)), 2 + log1p(exp(-2.0)), 3 + log1p(exp(-3.0))), 1e-14);
    th_end(ctx);
}

/* ---- float16 / bfloat16 -------------------------------------------------------------------- */

static void test_half_inputs(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const tfl_dtype halves[] = {TH_F16, TH_BF16};
    const double tol[] = {2e-3, 8e-3};
    const double lse123 = log(exp(1.0) + exp(2.0) + exp(3.0));
    const double big = 16 + log1p(exp(-8.0) + exp(-16.0)); /* lse(1024, 1032, 1040) - 1024 */
    for (int d = 0; d < 2; d++) {
        tfl_dtype dt = halves[d];
        /* values exact in both; the second row would overflow e^x in float16 and float32 */
        tfl_tensor *x = TH_T(ctx, dt, (2, 3), (1, 2, 3, 1024, 1032, 1040));
        tfl_tensor *z = TH_T(ctx, dt, (2, 3), (0, 0, 1, 1, 0, 0));
        TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, z, -1), dt, (2), (lse123 - 3, big),
                  tol[d]);
        TH_EXPECT(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_I32, (2), (2, 0))), dt,
                  (2), (lse123 - 3, big), tol[d]);
        TH_EXPECT(ctx,
                  tfl_sigmoid_cross_entropy(ctx, TH_T(ctx, dt, (3), (0, 2, -1000)),
                                            TH_T(ctx, dt, (3), (1, 0, 0))),
                  dt, (3), (0.6931471805599453, 2.1269280110429727, 0), tol[d]);
    }
    /* float16 is exact where TF 2.21 is: the same rounding of the float32 result */
    tfl_tensor *x = TH_T(ctx, TH_F16, (1, 3), (1, 2, 3));
    TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_F16, (1, 3), (0, 0, 1)), -1),
              TH_F16, (1), (0.40771484375), 0);
    th_end(ctx);
}

/* ---- errors ------------------------------------------------------------------------------------
 */

static void test_shape_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 3));
    TH_EXPECT_INVALID(
        ctx, tfl_softmax_cross_entropy(ctx, x, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 4)), -1), XENT,
        "logits and labels must have the same shape, got logits (2, 3) and "
        "labels (2, 4)");
    TH_EXPECT_INVALID(ctx,
                      tfl_softmax_cross_entropy(ctx, x, tfl_zeros(ctx, TH_F32, 1, TH_SHAPE(3)), -1),
                      XENT, "got logits (2, 3) and labels (3,)");
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, x, x, 2), XENT,
                      "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, x, x, -3), XENT,
                      "axis -3 is out of range for rank 2");
    tfl_tensor *s = TH_T0(ctx, TH_F32, 1);
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, s, s, -1), XENT, "rank >= 1");
    TH_EXPECT_INVALID(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_I32, (4), (0, 0, 0, 0))), SPARSE,
        "labels of shape (4,) must have the shape of logits (2, 3) without "
        "its last axis");
    TH_EXPECT_INVALID(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, x, tfl_zeros(ctx, TH_I32, 2, TH_SHAPE(2, 3))),
        SPARSE, "labels of shape (2, 3)");
    TH_EXPECT_INVALID(ctx, tfl_sparse_softmax_cross_entropy(ctx, s, TH_T0(ctx, TH_I32, 0)), SPARSE,
                      "rank >= 1");
    TH_EXPECT_INVALID(ctx,
                      tfl_sigmoid_cross_entropy(ctx, x, tfl_zeros(ctx, TH_F32, 1, TH_SHAPE(4))),
                      SIGMOID, "broadcastable shapes, got logits (2, 3) and labels (4,)");
    th_end(ctx);
}

static void test_dtype_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *f32 = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 3));
    tfl_tensor *f64 = tfl_zeros(ctx, TH_F64, 2, TH_SHAPE(2, 3));
    tfl_tensor *i32 = tfl_zeros(ctx, TH_I32, 2, TH_SHAPE(2, 3));
    const char *floats = "dtype int32 is not supported; expected one of float16, bfloat16, "
                         "float32, float64";
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, f32, f64, -1), XENT,
                      "dtypes differ: logits is float32, labels is float64");
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, i32, i32, -1), XENT, floats);
    TH_EXPECT_INVALID(ctx, tfl_sigmoid_cross_entropy(ctx, f64, f32), SIGMOID,
                      "dtypes differ: logits is float64, labels is float32");
    TH_EXPECT_INVALID(ctx, tfl_sigmoid_cross_entropy(ctx, i32, i32), SIGMOID, floats);
    tfl_tensor *labels = TH_T(ctx, TH_I32, (2), (0, 1));
    TH_EXPECT_INVALID(ctx, tfl_sparse_softmax_cross_entropy(ctx, i32, labels), SPARSE, floats);
    TH_EXPECT_INVALID(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, f32, TH_T(ctx, TH_F32, (2), (0, 1))), SPARSE,
        "labels dtype float32 is not supported; expected one of int32, int64");
    TH_EXPECT_INVALID(ctx,
                      tfl_sparse_softmax_cross_entropy(ctx, f32, TH_T(ctx, TH_BOOL, (2), (0, 1))),
                      SPARSE, "labels dtype bool");
    th_end(ctx);
}

static void test_null_inputs_keep_first_error(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 3));
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, NULL, x, -1), XENT, "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_softmax_cross_entropy(ctx, x, NULL, -1), XENT, "input 1 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, NULL), SPARSE,
                      "input 1 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_sigmoid_cross_entropy(ctx, NULL, x), SIGMOID, "input 0 is NULL");
    /* a chain: the first error is the one kept */
    tfl_ctx_clear_error(ctx);
    tfl_tensor *bad = tfl_sparse_softmax_cross_entropy(ctx, x, TH_T(ctx, TH_I32, (2), (0, 7)));
    assert_null(bad);
    assert_null(tfl_softmax_cross_entropy(ctx, bad, x, -1));
    assert_null(tfl_sigmoid_cross_entropy(ctx, x, bad));
    assert_null(
        tfl_reduce_mean(ctx, tfl_sparse_softmax_cross_entropy(ctx, bad, NULL), 0, NULL, false));
    th_expect_error_(ctx, NULL, TFL_INVALID_ARGUMENT, SPARSE, "label value of 7", __FILE__,
                     __LINE__);
    assert_null(tfl_softmax_cross_entropy(NULL, x, x, -1));
    th_end(ctx);
}

/* empty batches give empty results; an empty class axis gives a zero loss */
static void test_empty(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 4));
    TH_EXPECT_SHAPE(ctx, tfl_softmax_cross_entropy(ctx, x, x, -1), TH_F32, (0));
    TH_EXPECT_SHAPE(
        ctx, tfl_sparse_softmax_cross_entropy(ctx, x, tfl_zeros(ctx, TH_I64, 1, TH_SHAPE(0))),
        TH_F32, (0));
    TH_EXPECT_SHAPE(ctx, tfl_sigmoid_cross_entropy(ctx, x, x), TH_F32, (0, 4));
    tfl_tensor *e = tfl_zeros(ctx, TH_F64, 2, TH_SHAPE(2, 0));
    TH_EXPECT(ctx, tfl_softmax_cross_entropy(ctx, e, e, -1), TH_F64, (2), (0, 0), 0);
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_xent_hand_values),
        TH_TEST(test_xent_batch_and_large_logits),
        TH_TEST(test_xent_axes),
        TH_TEST(test_sparse_values),
        TH_TEST(test_sparse_matches_dense_one_hot),
        TH_TEST(test_sparse_bad_labels),
        TH_TEST(test_sigmoid_values),
        TH_TEST(test_half_inputs),
        TH_TEST(test_shape_errors),
        TH_TEST(test_dtype_errors),
        TH_TEST(test_null_inputs_keep_first_error),
        TH_TEST(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
