/* test_global_norm.c: tfl_global_norm (the L2 norm of a list of gradients together, as
 * global-norm clipping computes it): values in float32, float64 and float16, strided views,
 * NULL entries, the first non-finite tensor, and its errors. */
#include "test_fixture.h"

#include <math.h>

static tfl_tensor *vec(tfl_ctx *ctx, tfl_dtype dt, int n, const double *v)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, (int64_t[]){n}, v);
    assert_non_null(t);
    return dt == TFL_DTYPE_FLOAT64 ? t : tfl_cast(ctx, t, dt);
}

static void norm_of_several_tensors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double a[3] = {3, 4, 12}, b[2] = {-84, 0}, c[4] = {1, 2, 2, 4};
    /* big enough for the threaded path: 100000 ones */
    tfl_tensor *ones = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){400, 250});
    /* a strided view: the transpose of (2, 2) [[1, 2], [2, 4]] */
    tfl_tensor *m = tfl_reshape(ctx, vec(ctx, TFL_DTYPE_FLOAT32, 4, c), 2, (int64_t[]){2, 2});
    tfl_tensor *mt = tfl_transpose(ctx, m, (int[]){1, 0});
    assert_false(tfl_tensor_is_contiguous(mt));
    const tfl_tensor *list[6] = {vec(ctx, TFL_DTYPE_FLOAT32, 3, a), NULL,
                                 vec(ctx, TFL_DTYPE_FLOAT64, 2, b),
                                 vec(ctx, TFL_DTYPE_FLOAT16, 4, c), ones, mt};
    double norm = -1;
    int bad = 7;
    assert_int_equal(tfl_global_norm(ctx, 6, list, &norm, &bad), TFL_OK);
    /* 9 + 16 + 144 + 7056 + (1 + 4 + 4 + 16) + 100000 + 25 */
    assert_true(fabs(norm - sqrt(107275.0)) < 1e-9);
    assert_int_equal(bad, -1);
    assert_int_equal(tfl_global_norm(ctx, 1, list, &norm, NULL), TFL_OK);
    assert_true(fabs(norm - 13.0) < 1e-12);
    assert_int_equal(tfl_global_norm(ctx, 0, NULL, &norm, &bad), TFL_OK);
    assert_true(norm == 0.0);
    assert_int_equal(bad, -1);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* The same bits on 1, 2 and 3 threads (global-norm clipping scales every update by it): the
 * sums over a tensor once followed OpenMP's reduction, whose order follows the threads. */
static void same_bits_on_any_threads(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const tfl_dtype dts[2] = {TFL_DTYPE_FLOAT64, TFL_DTYPE_FLOAT32};
    for (int d = 0; d < 2; d++) {
        const tfl_tensor *list[3] = {
            tfl_random_uniform(ctx, dts[d], 1, (int64_t[]){1000003}, -1, 1, 5),
            tfl_random_uniform(ctx, dts[d], 1, (int64_t[]){40000}, -1, 1, 6),
            tfl_random_uniform(ctx, dts[d], 2, (int64_t[]){777, 999}, -1, 1, 7)};
        double norms[3];
        for (int t = 0; t < 3; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            assert_int_equal(tfl_global_norm(ctx, 3, list, &norms[t], NULL), TFL_OK);
        }
        /* about sqrt(1.817e6 / 3) and the same double on every count */
        assert_true(fabs(norms[0] - sqrt((1000003.0 + 40000 + 777 * 999) / 3)) < 2);
        assert_memory_equal(&norms[0], &norms[1], sizeof(double));
        assert_memory_equal(&norms[0], &norms[2], sizeof(double));
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void first_nonfinite_is_named(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double ok[2] = {1, 1}, nan2[2] = {1, NAN}, inf2[2] = {INFINITY, 0};
    const tfl_tensor *list[4] = {vec(ctx, TFL_DTYPE_FLOAT32, 2, ok),
                                 vec(ctx, TFL_DTYPE_FLOAT64, 2, inf2),
                                 vec(ctx, TFL_DTYPE_FLOAT32, 2, nan2),
                                 vec(ctx, TFL_DTYPE_BFLOAT16, 2, nan2)};
    double norm = 0;
    int bad = -1;
    assert_int_equal(tfl_global_norm(ctx, 4, list, &norm, &bad), TFL_OK);
    assert_int_equal(bad, 1);
    assert_false(isfinite(norm));
    assert_int_equal(tfl_global_norm(ctx, 1, &list[3], &norm, &bad), TFL_OK);
    assert_int_equal(bad, 0); /* bfloat16 goes through float32 */
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    double norm;
    tfl_tensor *i32 = tfl_zeros(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){2});
    const tfl_tensor *list[2] = {NULL, i32};
    assert_int_equal(tfl_global_norm(ctx, 2, list, &norm, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                 "tfl_global_norm: tensor 1 has dtype int32; expected a floating dtype");
    assert_int_equal(tfl_global_norm(ctx, 1, list, NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_global_norm: norm is NULL");
    assert_int_equal(tfl_global_norm(ctx, -1, list, &norm, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "a negative count");
    assert_int_equal(tfl_global_norm(ctx, 2, NULL, &norm, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "without an array");
    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    tfl_tensor *o = tfl_zeros(other, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2});
    assert_int_equal(tfl_global_norm(ctx, 1, (const tfl_tensor *const *)&o, &norm, NULL),
                     TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tensor 0 belongs to another context");
    tfl_ctx_free(other);
    tfl_tensor_release(i32);
    assert_int_equal(tfl_global_norm(NULL, 0, NULL, &norm, NULL), TFL_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(norm_of_several_tensors, setup, teardown),
        cmocka_unit_test_setup_teardown(same_bits_on_any_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(first_nonfinite_is_named, setup, teardown),
        cmocka_unit_test_setup_teardown(errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
