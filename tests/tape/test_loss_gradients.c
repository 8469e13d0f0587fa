/* test_loss_gradients.c: gradients of the fused losses where the finite-difference checks
 * (test_gradcheck.c) do not go: logits of 1000 that would overflow a naive softmax, values
 * checked against the closed forms (softmax - one_hot, -log_softmax, sigmoid - z), a batch
 * mean on top, and float16 / bfloat16 sources. */
#include "tape_helpers.h"

#include <math.h>

#define F16 TFL_DTYPE_FLOAT16
#define BF16 TFL_DTYPE_BFLOAT16

static tfl_tensor *labels_i64(tfl_ctx *ctx, int64_t n, const int64_t *v)
{
    return tens(ctx, TFL_DTYPE_INT64, 1, &n, v);
}

/* mean over a batch of two rows with logits of +-1000: gradients stay finite and exact */
static void test_large_logits(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double xv[6] = {1000, 1000, 1000, 1000, 0, -1000};
    tfl_tensor *x = tens(ctx, F64, 2, (const int64_t[]){2, 3}, xv);
    tfl_tensor *labels = labels_i64(ctx, 2, (const int64_t[]){0, 2});
    tfl_tensor *hot = tfl_one_hot(ctx, labels, 3, 1, 0, F64);
    const double t = 1.0 / 3, e = exp(-1000.0);
    /* (softmax - one_hot) / 2 */
    const double want_x[6] = {(t - 1) / 2, t / 2, t / 2, 0.5, e / 2, -0.5};

    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, hot), TFL_OK);
    tfl_tensor *sparse =
        tfl_reduce_mean(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, labels), 0, NULL, false);
    tfl_tensor *dense =
        tfl_reduce_mean(ctx, tfl_softmax_cross_entropy(ctx, x, hot, -1), 0, NULL, false);
    tfl_tape_end(tape);
    expect_vals_(sparse, F64, (const double[]){(log(3.0) + 2000) / 2}, 1, 1e-12, __LINE__);
    expect_vals_(dense, F64, (const double[]){(log(3.0) + 2000) / 2}, 1, 1e-12, __LINE__);
    expect_vals_(grad1(tape, sparse, x, 0), F64, want_x, 6, 1e-15, __LINE__);
    expect_vals_(grad1(tape, dense, x, 0), F64, want_x, 6, 1e-15, __LINE__);
    /* -log_softmax / 2 */
    const double l3 = log(3.0);
    expect_vals_(grad1(tape, dense, hot, 0), F64,
                 (const double[]){l3 / 2, l3 / 2, l3 / 2, 0, 500, 1000}, 6, 1e-12, __LINE__);
    tfl_tape_free(tape);

    /* sigmoid: dx = sigmoid(x) - z, dz = -x */
    tfl_tensor *sx = vec_f64(ctx, (const double[]){1000, -1000, 0}, 3);
    tfl_tensor *sz = vec_f64(ctx, (const double[]){1, 1, 0.25}, 3);
    tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, sx);
    tfl_tape_watch(tape, sz);
    tfl_tensor *sl = sum_all(ctx, tfl_sigmoid_cross_entropy(ctx, sx, sz));
    tfl_tape_end(tape);
    expect_vals_(sl, F64, (const double[]){1000 + log(2.0)}, 1, 1e-12, __LINE__);
    expect_vals_(grad1(tape, sl, sx, 0), F64, (const double[]){0, -1, 0.25}, 3, 1e-15, __LINE__);
    expect_vals_(grad1(tape, sl, sz, 0), F64, (const double[]){-1000, 1000, 0}, 3, 1e-15, __LINE__);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* float16 and bfloat16 logits get gradients of their dtype (through float32) */
static void test_half_gradients(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const tfl_dtype halves[2] = {F16, BF16};
    const double tol[2] = {2e-3, 8e-3};
    for (int d = 0; d < 2; d++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_dtype dt = halves[d];
        const int64_t shape[2] = {2, 3};
        tfl_tensor *x =
            tfl_cast(ctx, tens(ctx, F64, 2, shape, (const double[]){1, 2, 3, 0, 0, 0}), dt);
        tfl_tensor *labels = labels_i64(ctx, 2, (const int64_t[]){2, 1});
        tfl_tensor *hot = tfl_one_hot(ctx, labels, 3, 1, 0, dt);
        tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
        tfl_tape_watch(tape, x);
        tfl_tape_watch(tape, hot);
        tfl_tensor *sparse = sum_all(ctx, tfl_sparse_softmax_cross_entropy(ctx, x, labels));
        tfl_tensor *dense = sum_all(ctx, tfl_softmax_cross_entropy(ctx, x, hot, -1));
        tfl_tensor *sig = sum_all(ctx, tfl_sigmoid_cross_entropy(ctx, x, hot));
        tfl_tape_end(tape);
        double s = exp(1.0) + exp(2.0) + exp(3.0), t = 1.0 / 3;
        const double want[6] = {exp(1.0) / s, exp(2.0) / s, exp(3.0) / s - 1, t, t - 1, t};
        expect_vals_(grad1(tape, sparse, x, 0), dt, want, 6, tol[d], __LINE__);
        expect_vals_(grad1(tape, dense, x, 0), dt, want, 6, tol[d], __LINE__);
        double sg[6];
        const double xs[6] = {1, 2, 3, 0, 0, 0}, zs[6] = {0, 0, 1, 0, 1, 0};
        for (int i = 0; i < 6; i++)
            sg[i] = 1 / (1 + exp(-xs[i])) - zs[i];
        expect_vals_(grad1(tape, sig, x, 0), dt, sg, 6, tol[d], __LINE__);
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_large_logits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_gradients, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
