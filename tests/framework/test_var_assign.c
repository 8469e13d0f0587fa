/* test_var_assign.c: tests of tfl_variable_assign / assign_add / assign_sub: values of every
 * dtype, conversions between real dtypes (and into complex), the errors (complex or bool into
 * real, shape mismatch, plain tensors, NULL variable or value), and values that are variables. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- assign --------------------------------------------------------------------------------- */

static void test_assign_int32(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    int64_t n = 3;
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_INT32, 1, &n, (const int32_t[]){1, 2, 3}, NULL);
    tfl_tensor *x = vec_i32(ctx, (const int32_t[]){10, -20, 30}, 3);
    tfl_tensor *y = vec_i32(ctx, (const int32_t[]){1, 1, 1}, 3);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_INT32, 10, -20, 30);
    assert_int_equal(tfl_variable_assign_add(v, y), TFL_OK);
    expect_vals(v, TFL_DTYPE_INT32, 11, -19, 31);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_INT32, 1, 1, 1);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_INT32, -9, 21, -29);
    /* The value tensors are not touched. */
    expect_vals(x, TFL_DTYPE_INT32, 10, -20, 30);
    expect_vals(y, TFL_DTYPE_INT32, 1, 1, 1);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_INT32);
    expect_shape(v, 1, &n);
    expect_no_error(ctx);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    tfl_tensor_release(v);
}

static void test_assign_float32(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);
    tfl_tensor *x = tens(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){0.5f, 1.5f, -2, 8});
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0.5, 1.5, -2, 8);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 3, -4, 16);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0, 0);
    expect_shape(v, 2, s22);

    /* Rank 0 */
    tfl_tensor *s = var_from(ctx, TFL_DTYPE_FLOAT32, 0, NULL, (const float[]){1}, NULL);
    tfl_tensor *two = tfl_scalar_f32(ctx, 2);
    assert_int_equal(tfl_variable_assign_add(s, two), TFL_OK);
    assert_int_equal(tfl_variable_assign_add(s, two), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 5);
    assert_int_equal(tfl_variable_assign(s, two), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 2);
    expect_no_error(ctx);
    tfl_tensor_release(two);
    tfl_tensor_release(s);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_assign_float64(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v =
        var_from(ctx, TFL_DTYPE_FLOAT64, 1, (const int64_t[]){2}, (const double[]){0.1, 0.2}, NULL);
    tfl_tensor *x = vec_f64(ctx, (const double[]){0.25, 1e-10}, 2);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    double out[2];
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    assert_true(out[0] == 0.1 + 0.25);
    assert_true(out[1] == 0.2 + 1e-10); /* float64 precision is kept */
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    assert_true(out[0] == (0.1 + 0.25) - 0.25);
    assert_true(out[1] == (0.2 + 1e-10) - 1e-10);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    assert_true(out[0] == 0.25 && out[1] == 1e-10);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT64);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_assign_converts_real_dtypes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    /* int32 value into a float32 variable */
    tfl_tensor *v = var_f32(ctx, (const float[]){0.5f, 0.5f, 0.5f}, 3, NULL);
    tfl_tensor *iv = vec_i32(ctx, (const int32_t[]){1, -2, 3}, 3);
    assert_int_equal(tfl_variable_assign(v, iv), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, -2, 3);
    assert_int_equal(tfl_variable_assign_add(v, iv), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, -4, 6);
    assert_int_equal(tfl_variable_assign_sub(v, iv), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, -2, 3);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT32);

    /* float64 into int32 truncates toward zero */
    tfl_tensor *w = var_from(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){4},
                             (const int32_t[]){0, 0, 0, 0}, NULL);
    tfl_tensor *dv = vec_f64(ctx, (const double[]){1.9, -1.9, 2.5, -0.5}, 4);
    assert_int_equal(tfl_variable_assign(w, dv), TFL_OK);
    expect_vals(w, TFL_DTYPE_INT32, 1, -1, 2, 0);
    assert_int_equal(tfl_tensor_dtype(w), TFL_DTYPE_INT32);

    /* float64 into float32 */
    tfl_tensor *d3 = vec_f64(ctx, (const double[]){0.25, 1.5, -3}, 3);
    assert_int_equal(tfl_variable_assign(v, d3), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0.25, 1.5, -3);

    /* a real value into a complex variable */
    tfl_tensor *c = var_from(ctx, TFL_DTYPE_COMPLEX64, 1, (const int64_t[]){3},
                             (const float[]){1, 1, 1, 1, 1, 1}, NULL);
    assert_int_equal(tfl_variable_assign(c, iv), TFL_OK);
    float oc[6];
    assert_int_equal(tfl_tensor_to_host(c, oc, sizeof oc), TFL_OK);
    assert_true(oc[0] == 1 && oc[1] == 0 && oc[2] == -2 && oc[3] == 0 && oc[4] == 3 && oc[5] == 0);
    expect_no_error(ctx);

    tfl_tensor_release(c);
    tfl_tensor_release(d3);
    tfl_tensor_release(dv);
    tfl_tensor_release(w);
    tfl_tensor_release(iv);
    tfl_tensor_release(v);
}

static void test_assign_complex_into_real_fails(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2}, 2, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    tfl_tensor *c =
        tens(ctx, TFL_DTYPE_COMPLEX64, 1, (const int64_t[]){2}, (const float[]){5, 1, 6, 1});
    uint64_t live = live_tensors(ctx);
    assert_int_equal(tfl_variable_assign(v, c), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "complex64", "float32");
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);
    assert_int_equal(tfl_variable_assign_add(v, c), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "complex64");
    assert_int_equal(tfl_variable_assign_sub(v, c), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "complex64");
    /* bool is not a real (int, float) dtype: it does not convert either way. */
    tfl_tensor *b = tens(ctx, TFL_DTYPE_BOOL, 1, (const int64_t[]){2}, (const uint8_t[]){1, 1});
    assert_int_equal(tfl_variable_assign(v, b), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "bool", "float32");
    tfl_tensor_release(b);
    live = live_tensors(ctx);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(live_tensors(ctx), live);
    tfl_tensor_release(c);
    tfl_tensor_release(v);
}

static void test_assign_bool(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v =
        var_from(ctx, TFL_DTYPE_BOOL, 1, (const int64_t[]){2}, (const uint8_t[]){1, 0}, NULL);
    tfl_tensor *b = tens(ctx, TFL_DTYPE_BOOL, 1, (const int64_t[]){2}, (const uint8_t[]){0, 1});
    assert_int_equal(tfl_variable_assign(v, b), TFL_OK);
    expect_vals(v, TFL_DTYPE_BOOL, 0, 1);
    assert_int_equal(tfl_variable_assign_add(v, b), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "bool");
    assert_int_equal(tfl_variable_assign_sub(v, b), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "bool");
    expect_vals(v, TFL_DTYPE_BOOL, 0, 1);
    tfl_tensor_release(b);
    tfl_tensor_release(v);
}

static void test_assign_shape_mismatch(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2}, 2, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    tfl_tensor *x3 = vec_f32(ctx, (const float[]){7, 8, 9}, 3);
    uint64_t live = live_tensors(ctx);

    assert_int_equal(tfl_variable_assign(v, x3), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Cannot assign value to variable 'Variable:0'",
                 "Shape mismatch", "(2,)", "(3,)");
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);
    expect_shape(v, 1, (const int64_t[]){2});

    assert_int_equal(tfl_variable_assign_add(v, x3), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'Variable:0'", "(2,)", "(3,)");
    assert_int_equal(tfl_variable_assign_sub(v, x3), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'Variable:0'", "(2,)", "(3,)");
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);

    /* A scalar is not broadcast. */
    tfl_tensor *s = tfl_scalar_f32(ctx, 5);
    assert_int_equal(tfl_variable_assign(v, s), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Shape mismatch", "(2,)", "()");
    assert_int_equal(tfl_variable_assign_add(v, s), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Shape mismatch");
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);

    /* (1, 2) is not (2,) either. */
    tfl_tensor *x12 =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){1, 2}, (const float[]){3, 4});
    assert_int_equal(tfl_variable_assign(v, x12), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Shape mismatch", "(2,)", "(1, 2)");
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);

    /* A named variable is named in the message. */
    tfl_tensor *m = var_from(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2},
                             (const float[]){1, 2, 3, 4}, &(tfl_variable_opts){.name = "Mark"});
    assert_int_equal(tfl_variable_assign(m, x3), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Cannot assign value to variable 'Mark:0'", "(2, 2)",
                 "(3,)");
    expect_vals(m, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    tfl_tensor_release(m);

    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(live_tensors(ctx), live + 2);
    tfl_tensor_release(x12);
    tfl_tensor_release(s);
    tfl_tensor_release(x3);
    tfl_tensor_release(v);
}

static void test_assign_to_plain_tensor(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *x = vec_f32(ctx, (const float[]){3, 4}, 2);
    assert_int_equal(tfl_variable_assign(t, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "not a variable");
    assert_int_equal(tfl_variable_assign_add(t, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "not a variable");
    assert_int_equal(tfl_variable_assign_sub(t, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "not a variable");
    expect_vals(t, TFL_DTYPE_FLOAT32, 1, 2);

    /* Nor to a snapshot of a variable. */
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2}, 2, NULL);
    tfl_tensor *s = tfl_variable_read(v);
    assert_non_null(s);
    assert_int_equal(tfl_variable_assign(s, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "not a variable");
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);

    /* A NULL variable is an error, not a crash: INVALID_ARGUMENT, kept in the value's context. */
    assert_int_equal(tfl_variable_assign(NULL, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "the variable is NULL");
    assert_int_equal(tfl_variable_assign_add(NULL, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "the variable is NULL");
    assert_int_equal(tfl_variable_assign_sub(NULL, x), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "the variable is NULL");
    expect_vals(x, TFL_DTYPE_FLOAT32, 3, 4);

    /* An earlier error (a failed chain) is the one kept. */
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_MISUSE);
    char first[256];
    snprintf(first, sizeof first, "%s", tfl_ctx_error(ctx).message);
    assert_int_equal(tfl_variable_assign(NULL, x), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_variable_assign_add(NULL, x), TFL_INVALID_ARGUMENT);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_MISUSE);
    assert_string_equal(e.message, first);
    tfl_ctx_clear_error(ctx);

    /* No variable and no value: INVALID_ARGUMENT, with no context to keep it in. */
    assert_int_equal(tfl_variable_assign(NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_no_error(ctx);
    tfl_tensor_release(s);
    tfl_tensor_release(v);
    tfl_tensor_release(x);
    tfl_tensor_release(t);
}

static void test_assign_null_value(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2}, 2, NULL);
    assert_int_equal(tfl_variable_assign(v, NULL), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_variable_assign_add(v, NULL), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_variable_assign_sub(v, NULL), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);

    /* The NULL from a failed op: the op's error is returned and kept. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *b = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    tfl_status st = tfl_variable_assign(v, tfl_matmul(ctx, a, b, 0));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "MatMul: ", 8) == 0);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);
    tfl_tensor_release(v);
}

static void test_assign_value_from_other_variable_and_self(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = var_f32(ctx, (const float[]){1, 2}, 2, "a");
    tfl_tensor *b = var_f32(ctx, (const float[]){10, 20}, 2, "b");
    assert_int_equal(tfl_variable_assign(a, b), TFL_OK);
    expect_vals(a, TFL_DTYPE_FLOAT32, 10, 20);
    assert_ptr_not_equal(tfl_tensor_data_ptr(a), tfl_tensor_data_ptr(b));
    assert_int_equal(tfl_variable_assign(b, a), TFL_OK);
    assert_int_equal(tfl_variable_assign_add(a, a), TFL_OK); /* a += a */
    expect_vals(a, TFL_DTYPE_FLOAT32, 20, 40);
    expect_vals(b, TFL_DTYPE_FLOAT32, 10, 20);
    assert_int_equal(tfl_variable_assign_sub(a, a), TFL_OK);
    expect_vals(a, TFL_DTYPE_FLOAT32, 0, 0);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

/* ---- more dtypes ------------------------------------------------------------------------- */

static void test_assign_half_int64_complex(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    int64_t n = 2;
    /* float16: 1, 2 and 0.5, 0.25 */
    tfl_tensor *h =
        var_from(ctx, TFL_DTYPE_FLOAT16, 1, &n, (const uint16_t[]){0x3C00, 0x4000}, NULL);
    tfl_tensor *hx = tens(ctx, TFL_DTYPE_FLOAT16, 1, &n, (const uint16_t[]){0x3800, 0x3400});
    assert_int_equal(tfl_variable_assign_add(h, hx), TFL_OK);
    expect_vals(h, TFL_DTYPE_FLOAT16, 1.5, 2.25);
    tfl_tensor *iv = vec_i32(ctx, (const int32_t[]){3, -4}, 2);
    assert_int_equal(tfl_variable_assign_sub(h, iv), TFL_OK);
    expect_vals(h, TFL_DTYPE_FLOAT16, -1.5, 6.25);
    /* bfloat16 */
    tfl_tensor *bf =
        var_from(ctx, TFL_DTYPE_BFLOAT16, 1, &n, (const uint16_t[]){0x3F80, 0x4000}, NULL);
    assert_int_equal(tfl_variable_assign_add(bf, iv), TFL_OK);
    expect_vals(bf, TFL_DTYPE_BFLOAT16, 4, -2);

    /* int64 keeps 64-bit values exactly */
    const int64_t big = (INT64_C(1) << 53) + 1;
    tfl_tensor *l = var_from(ctx, TFL_DTYPE_INT64, 1, &n, (const int64_t[]){big, -big}, NULL);
    tfl_tensor *lx = tens(ctx, TFL_DTYPE_INT64, 1, &n, (const int64_t[]){2, 2});
    assert_int_equal(tfl_variable_assign_add(l, lx), TFL_OK);
    int64_t lo[2];
    assert_int_equal(tfl_tensor_to_host(l, lo, sizeof lo), TFL_OK);
    assert_true(lo[0] == big + 2 && lo[1] == -big + 2);
    assert_int_equal(tfl_variable_assign_add(l, iv), TFL_OK); /* int32 into int64 */
    assert_int_equal(tfl_tensor_to_host(l, lo, sizeof lo), TFL_OK);
    assert_true(lo[0] == big + 5 && lo[1] == -big - 2);

    /* complex128: real and imaginary parts */
    tfl_tensor *c = var_from(ctx, TFL_DTYPE_COMPLEX128, 1, &n, (const double[]){1, 2, 3, 4}, NULL);
    tfl_tensor *cx = tens(ctx, TFL_DTYPE_COMPLEX128, 1, &n, (const double[]){0.5, -1, 2, 2});
    assert_int_equal(tfl_variable_assign_add(c, cx), TFL_OK);
    double co[4];
    assert_int_equal(tfl_tensor_to_host(c, co, sizeof co), TFL_OK);
    assert_true(co[0] == 1.5 && co[1] == 1 && co[2] == 5 && co[3] == 6);
    assert_int_equal(tfl_variable_assign_sub(c, cx), TFL_OK);
    assert_int_equal(tfl_variable_assign_sub(c, cx), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(c, co, sizeof co), TFL_OK);
    assert_true(co[0] == 0.5 && co[1] == 3 && co[2] == 1 && co[3] == 2);
    /* complex64 value into a complex128 variable */
    tfl_tensor *c64 = tens(ctx, TFL_DTYPE_COMPLEX64, 1, &n, (const float[]){1, -1, 2, -2});
    assert_int_equal(tfl_variable_assign(c, c64), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(c, co, sizeof co), TFL_OK);
    assert_true(co[0] == 1 && co[1] == -1 && co[2] == 2 && co[3] == -2);
    assert_int_equal(tfl_tensor_dtype(c), TFL_DTYPE_COMPLEX128);
    expect_no_error(ctx);

    tfl_tensor_release(c64);
    tfl_tensor_release(cx);
    tfl_tensor_release(c);
    tfl_tensor_release(lx);
    tfl_tensor_release(l);
    tfl_tensor_release(bf);
    tfl_tensor_release(iv);
    tfl_tensor_release(hx);
    tfl_tensor_release(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_assign_int32, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_float32, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_float64, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_converts_real_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_complex_into_real_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_bool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_shape_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_to_plain_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_null_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_value_from_other_variable_and_self, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_assign_half_int64_complex, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
