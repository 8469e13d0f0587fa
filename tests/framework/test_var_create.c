/* test_var_create.c: tests of creating variables (tapeflow/variable.h): from a tensor, with
 * dtype conversion, from another variable, NULL and failed initial values, default and
 * duplicate names, the trainable flag, variables as op inputs, ownership across frames, and
 * the repr. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- creation ----------------------------------------------------------------------------- */

static void test_new_infers_dtype_and_shape(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;

    /* int32 (2, 3) */
    const int64_t s23[2] = {2, 3};
    const int32_t i32[6] = {1, -2, 3, 4, -5, 6};
    tfl_tensor *t = tens(ctx, TFL_DTYPE_INT32, 2, s23, i32);
    tfl_tensor *v = tfl_variable_new(ctx, t, NULL);
    assert_non_null(v);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_INT32);
    expect_shape(v, 2, s23);
    expect_vals(v, TFL_DTYPE_INT32, 1, -2, 3, 4, -5, 6);
    int32_t out_i32[6] = {0};
    assert_int_equal(tfl_tensor_to_host(v, out_i32, sizeof out_i32), TFL_OK);
    assert_memory_equal(out_i32, i32, sizeof i32);
    assert_true(tfl_tensor_is_variable(v));
    assert_false(tfl_tensor_is_variable(t));
    assert_string_equal(tfl_variable_name(v), "Variable");
    assert_true(tfl_variable_trainable(v));
    assert_true(tfl_variable_is_initialized(v));
    assert_string_equal(tfl_tensor_device(v), auto_device(ctx));
    assert_ptr_equal(tfl_tensor_ctx(v), ctx);
    /* A copy: never the initial tensor's memory. */
    assert_ptr_not_equal(tfl_tensor_data_ptr(v), tfl_tensor_data_ptr(t));
    tfl_tensor_release(t);
    /* Still valid after the initial value is gone. */
    expect_vals(v, TFL_DTYPE_INT32, 1, -2, 3, 4, -5, 6);
    tfl_tensor_release(v);

    /* float32 rank 0 */
    tfl_tensor *sc = tfl_scalar_f32(ctx, 2.5f);
    v = tfl_variable_new(ctx, sc, NULL);
    assert_non_null(v);
    assert_int_equal(tfl_tensor_rank(v), 0);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2.5);
    tfl_tensor_release(sc);
    tfl_tensor_release(v);

    /* float32 (3,) */
    v = var_f32(ctx, (const float[]){1.5f, -2.25f, 3}, 3, NULL);
    expect_shape(v, 1, (const int64_t[]){3});
    expect_vals(v, TFL_DTYPE_FLOAT32, 1.5, -2.25, 3);
    tfl_tensor_release(v);

    /* bool (4,) */
    const uint8_t b[4] = {1, 0, 0, 1};
    v = var_from(ctx, TFL_DTYPE_BOOL, 1, (const int64_t[]){4}, b, NULL);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_BOOL);
    expect_shape(v, 1, (const int64_t[]){4});
    uint8_t out_b[4] = {9, 9, 9, 9};
    assert_int_equal(tfl_tensor_to_host(v, out_b, sizeof out_b), TFL_OK);
    assert_memory_equal(out_b, b, sizeof b);
    tfl_tensor_release(v);

    /* complex128 (2,) */
    const double c[4] = {1, -2, 3.5, 4};
    v = var_from(ctx, TFL_DTYPE_COMPLEX128, 1, (const int64_t[]){2}, c, NULL);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_COMPLEX128);
    expect_shape(v, 1, (const int64_t[]){2});
    double out_c[4] = {0};
    assert_int_equal(tfl_tensor_to_host(v, out_c, sizeof out_c), TFL_OK);
    assert_memory_equal(out_c, c, sizeof c);
    tfl_tensor_release(v);

    /* float64 (2, 2) */
    const double d[4] = {0.1, 0.2, 0.3, 1e300};
    v = var_from(ctx, TFL_DTYPE_FLOAT64, 2, (const int64_t[]){2, 2}, d, NULL);
    double out_d[4] = {0};
    assert_int_equal(tfl_tensor_to_host(v, out_d, sizeof out_d), TFL_OK);
    assert_memory_equal(out_d, d, sizeof d);
    tfl_tensor_release(v);

    /* int64 and an empty shape */
    v = var_from(ctx, TFL_DTYPE_INT64, 1, (const int64_t[]){0}, NULL, NULL);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_INT64);
    assert_int_equal(tfl_tensor_numel(v), 0);
    tfl_tensor_release(v);

    expect_no_error(ctx);
}

static void test_new_dtype_conversion(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *t = vec_i32(ctx, (const int32_t[]){1, -2, 3}, 3);

    /* int32 tensor -> float32 variable */
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.dtype = TFL_DTYPE_FLOAT32});
    assert_non_null(v);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, -2, 3);
    float out[3] = {0};
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    assert_true(out[0] == 1.0f && out[1] == -2.0f && out[2] == 3.0f);
    assert_int_equal(tfl_tensor_dtype(t), TFL_DTYPE_INT32); /* the initial value is untouched */
    tfl_tensor_release(v);

    /* int32 -> float64, int32 -> int64 */
    v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.dtype = TFL_DTYPE_FLOAT64});
    expect_vals(v, TFL_DTYPE_FLOAT64, 1, -2, 3);
    tfl_tensor_release(v);
    v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.dtype = TFL_DTYPE_INT64});
    expect_vals(v, TFL_DTYPE_INT64, 1, -2, 3);
    tfl_tensor_release(v);

    /* a real value converts to complex: imaginary parts are 0 */
    v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.dtype = TFL_DTYPE_COMPLEX128});
    assert_non_null(v);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_COMPLEX128);
    double oc[6] = {9, 9, 9, 9, 9, 9};
    assert_int_equal(tfl_tensor_to_host(v, oc, sizeof oc), TFL_OK);
    assert_true(oc[0] == 1 && oc[1] == 0 && oc[2] == -2 && oc[3] == 0 && oc[4] == 3 && oc[5] == 0);
    tfl_tensor_release(v);

    /* float64 -> int32 truncates toward zero */
    tfl_tensor *fd = vec_f64(ctx, (const double[]){1.9, -1.9, 2.5}, 3);
    v = tfl_variable_new(ctx, fd, &(tfl_variable_opts){.dtype = TFL_DTYPE_INT32});
    expect_vals(v, TFL_DTYPE_INT32, 1, -1, 2);
    tfl_tensor_release(v);
    tfl_tensor_release(fd);

    /* complex -> float32 does not convert */
    tfl_tensor *ct = tens(ctx, TFL_DTYPE_COMPLEX64, 1, (const int64_t[]){1}, (const float[]){1, 2});
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new(ctx, ct, &(tfl_variable_opts){.dtype = TFL_DTYPE_FLOAT32}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "complex64", "float32");
    assert_int_equal(live_tensors(ctx), live);
    tfl_tensor_release(ct);

    /* a dtype out of range */
    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.dtype = TFL_DTYPE_COUNT}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    tfl_tensor_release(t);
}

static void test_new_null_initial(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_null(tfl_variable_new(ctx, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");

    /* A failed op feeding tfl_variable_new: the op's error is the one kept. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_i32(ctx, (const int32_t[]){1, 2}, 2);
    tfl_tensor *b = vec_f32(ctx, (const float[]){1, 2}, 2);
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new(ctx, tfl_add(ctx, a, b), NULL));
    assert_int_equal(live_tensors(ctx), live);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Add: ", 5) == 0);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_is_variable(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_false(tfl_tensor_is_variable(NULL));
    assert_null(tfl_variable_name(NULL));
    assert_false(tfl_variable_trainable(NULL));
    assert_false(tfl_variable_is_initialized(NULL));

    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 3},
                             (const float[]){1, 2, 3, 4, 5, 6}, NULL);
    assert_true(tfl_tensor_is_variable(v));

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *plain = vec_f32(ctx, (const float[]){1}, 1);
    assert_false(tfl_tensor_is_variable(plain));
    assert_null(tfl_variable_name(plain));
    assert_false(tfl_variable_trainable(plain));

    tfl_tensor *snap = tfl_variable_read(v);
    assert_non_null(snap);
    assert_false(tfl_tensor_is_variable(snap));
    assert_null(tfl_variable_name(snap));
    expect_vals(snap, TFL_DTYPE_FLOAT32, 1, 2, 3, 4, 5, 6);

    tfl_tensor *r = tfl_reshape(ctx, v, 1, (const int64_t[]){6});
    assert_non_null(r);
    assert_false(tfl_tensor_is_variable(r));
    tfl_tensor *tr = tfl_transpose(ctx, v, NULL);
    assert_non_null(tr);
    assert_false(tfl_tensor_is_variable(tr));
    expect_vals(tr, TFL_DTYPE_FLOAT32, 1, 4, 2, 5, 3, 6);
    tfl_tensor *sl = tfl_slice(ctx, v, (const int64_t[]){0, 1}, (const int64_t[]){2, 2});
    assert_non_null(sl);
    assert_false(tfl_tensor_is_variable(sl));
    expect_vals(sl, TFL_DTYPE_FLOAT32, 2, 3, 5, 6);
    tfl_tensor *sum = tfl_add(ctx, v, v);
    assert_false(tfl_tensor_is_variable(sum));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    /* Reading a plain tensor is an error. */
    tfl_tensor *p2 = vec_f32(ctx, (const float[]){1}, 1);
    assert_null(tfl_variable_read(p2));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_null(tfl_variable_read(NULL));
    tfl_ctx_clear_error(ctx);
    tfl_tensor_release(p2);

    assert_true(tfl_tensor_is_variable(v));
    tfl_tensor_release(v);
}

static void test_names_default_and_duplicates(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *d = var_f32(ctx, (const float[]){0}, 1, NULL);
    assert_string_equal(tfl_variable_name(d), "Variable");
    tfl_tensor *d2 = var_f32(ctx, (const float[]){0}, 1, NULL);
    assert_string_equal(tfl_variable_name(d2), "Variable"); /* free-standing: no uniquifying */

    tfl_tensor *a = var_f32(ctx, (const float[]){1, 2}, 2, "Mark");
    tfl_tensor *b = var_f32(ctx, (const float[]){3, 4}, 2, "Mark");
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_string_equal(tfl_variable_name(a), "Mark");
    assert_string_equal(tfl_variable_name(b), "Mark");
    expect_no_error(ctx);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *eq = tfl_equal(ctx, a, b);
    assert_non_null(eq);
    expect_vals(eq, TFL_DTYPE_BOOL, 0, 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    expect_vals(a, TFL_DTYPE_FLOAT32, 1, 2);
    expect_vals(b, TFL_DTYPE_FLOAT32, 3, 4);

    /* Bad names. */
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = ""}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = "a:b"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "a:b");
    assert_int_equal(live_tensors(ctx), live);
    /* A name may contain '/'. */
    tfl_tensor *sl = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = "dense/kernel"});
    assert_non_null(sl);
    assert_string_equal(tfl_variable_name(sl), "dense/kernel");
    tfl_tensor_release(sl);
    tfl_tensor_release(t);

    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(d);
    tfl_tensor_release(d2);
}

static void test_trainable_flag(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = var_f32(ctx, (const float[]){1}, 1, "a");
    assert_true(tfl_variable_trainable(a));
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    tfl_tensor *b = tfl_variable_new(
        ctx, t, &(tfl_variable_opts){.name = "step", .flags = TFL_VAR_NOT_TRAINABLE});
    assert_non_null(b);
    assert_false(tfl_variable_trainable(b));
    assert_true(tfl_variable_is_initialized(b));
    assert_string_equal(tfl_variable_name(b), "step");
    tfl_tensor_release(t);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_variable_from_variable(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v1 = var_f32(ctx, (const float[]){1, 2, 3}, 3, "v1");
    tfl_tensor *v2 = tfl_variable_new(ctx, v1, &(tfl_variable_opts){.name = "v2"});
    assert_non_null(v2);
    assert_true(tfl_tensor_is_variable(v2));
    assert_ptr_not_equal(tfl_tensor_data_ptr(v1), tfl_tensor_data_ptr(v2));
    expect_vals(v2, TFL_DTYPE_FLOAT32, 1, 2, 3);

    tfl_tensor *x = vec_f32(ctx, (const float[]){7, 8, 9}, 3);
    assert_int_equal(tfl_variable_assign(v2, x), TFL_OK);
    expect_vals(v2, TFL_DTYPE_FLOAT32, 7, 8, 9);
    expect_vals(v1, TFL_DTYPE_FLOAT32, 1, 2, 3);
    tfl_tensor *y = vec_f32(ctx, (const float[]){4, 5, 6}, 3);
    assert_int_equal(tfl_variable_assign(v1, y), TFL_OK);
    expect_vals(v1, TFL_DTYPE_FLOAT32, 4, 5, 6);
    expect_vals(v2, TFL_DTYPE_FLOAT32, 7, 8, 9);
    assert_int_equal(tfl_variable_assign_add(v1, y), TFL_OK);
    expect_vals(v1, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(v2, TFL_DTYPE_FLOAT32, 7, 8, 9);

    /* The copy lives on after its source is released. */
    tfl_tensor_release(v1);
    expect_vals(v2, TFL_DTYPE_FLOAT32, 7, 8, 9);

    /* From an uninitialized variable: FAILED_PRECONDITION. */
    tfl_tensor *u =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){3},
                              &(tfl_initializer){TFL_INIT_ZEROS, 0, 0, 0, NULL},
                              &(tfl_variable_opts){.name = "u", .flags = TFL_VAR_DEFERRED});
    assert_non_null(u);
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new(ctx, u, NULL));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value u");
    assert_int_equal(live_tensors(ctx), live);

    tfl_tensor_release(u);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    tfl_tensor_release(v2);
}

static void test_variable_outlives_frames(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    uint64_t live0 = live_tensors(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *v = tfl_variable_new(ctx, t, NULL);
    tfl_tensor *w = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2},
                                          &(tfl_initializer){TFL_INIT_ONES, 0, 0, 0, NULL}, NULL);
    tfl_tensor *s = tfl_variable_read(v); /* frame-owned */
    assert_non_null(v);
    assert_non_null(w);
    assert_non_null(s);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    /* t and s were the frame's; v and w are the caller's. */
    assert_int_equal(live_tensors(ctx), live0 + 2);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2);
    expect_vals(w, TFL_DTYPE_FLOAT32, 1, 1);
    tfl_tensor_release(v);
    tfl_tensor_release(w);
    assert_int_equal(live_tensors(ctx), live0);

    /* Read with no frame open: the caller owns the snapshot. */
    v = var_f32(ctx, (const float[]){5}, 1, NULL);
    s = tfl_variable_read(v);
    assert_non_null(s);
    tfl_tensor_release(v);
    expect_vals(s, TFL_DTYPE_FLOAT32, 5); /* the snapshot outlives its variable */
    tfl_tensor_release(s);
    assert_int_equal(live_tensors(ctx), live0);
}

/* ---- variables in ops --------------------------------------------------------------------- */

static void test_ops_accept_variables(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);

    tfl_tensor *one = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, s22);
    tfl_tensor *sum = tfl_add(ctx, v, one);
    expect_vals(sum, TFL_DTYPE_FLOAT32, 2, 3, 4, 5);
    expect_vals(tfl_add(ctx, v, v), TFL_DTYPE_FLOAT32, 2, 4, 6, 8);

    tfl_tensor *mm = tfl_matmul(ctx, v, v, 0);
    expect_shape(mm, 2, s22);
    expect_vals(mm, TFL_DTYPE_FLOAT32, 7, 10, 15, 22);

    tfl_tensor *am = tfl_argmax(ctx, v, 0);
    assert_non_null(am);
    expect_vals(am, TFL_DTYPE_INT64, 1, 1);
    expect_vals(tfl_argmax(ctx, v, 1), TFL_DTYPE_INT64, 1, 1);

    tfl_tensor *r = tfl_reshape(ctx, v, 1, (const int64_t[]){4});
    assert_non_null(r);
    assert_false(tfl_tensor_is_variable(r));
    assert_ptr_not_equal(r, v);
    expect_shape(r, 1, (const int64_t[]){4});
    expect_vals(r, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    expect_shape(v, 2, s22); /* a variable cannot be reshaped */
    assert_true(tfl_tensor_is_variable(v));

    expect_vals(tfl_reduce_sum(ctx, v, 0, NULL, false), TFL_DTYPE_FLOAT32, 10);
    expect_vals(tfl_cast(ctx, v, TFL_DTYPE_INT32), TFL_DTYPE_INT32, 1, 2, 3, 4);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    /* After the ops the variable is as it was. */
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    expect_no_error(ctx);
    tfl_tensor_release(v);
}

/* ---- repr ----------------------------------------------------------------------------------- */

static void test_format(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2},
                             (const float[]){1, 2, 3, 4}, &(tfl_variable_opts){.name = "Mark"});
    char buf[256], want[256], want2[256];
    /* a variable lives where automatic placement puts it, its snapshot beside it */
    const char *dev = auto_device(ctx);
    snprintf(want, sizeof want,
             "<tfl.Variable 'Mark:0' shape=(2, 2) dtype=float32 device=%s [[1, 2], [3, 4]]>", dev);
    int len = tfl_tensor_format(v, buf, sizeof buf, NULL);
    assert_string_equal(buf, want);
    assert_int_equal(len, (int)strlen(want));

    /* After an assign the repr shows the new value; a snapshot prints as a tensor. */
    tfl_tensor *s = tfl_variable_read(v);
    tfl_tensor *x =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, (const float[]){5, 6, 7, 8});
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    tfl_tensor_format(v, buf, sizeof buf, NULL);
    snprintf(want2, sizeof want2,
             "<tfl.Variable 'Mark:0' shape=(2, 2) dtype=float32 device=%s [[5, 6], [7, 8]]>", dev);
    assert_string_equal(buf, want2);
    tfl_tensor_format(s, buf, sizeof buf, NULL);
    snprintf(want2, sizeof want2,
             "<tfl.Tensor shape=(2, 2) dtype=float32 device=%s [[1, 2], [3, 4]]>", dev);
    assert_string_equal(buf, want2);

    /* Default name, int32, rank 1. */
    tfl_tensor *d =
        var_from(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){3}, (const int32_t[]){1, -2, 3}, NULL);
    tfl_tensor_format(d, buf, sizeof buf, NULL);
    snprintf(want2, sizeof want2,
             "<tfl.Variable 'Variable:0' shape=(3,) dtype=int32 device=%s [1, -2, 3]>", dev);
    assert_string_equal(buf, want2);

    /* Cut output is NUL-terminated and the full length is returned. */
    char small[10];
    assert_int_equal(tfl_tensor_format(v, small, sizeof small, NULL), (int)strlen(want));
    assert_string_equal(small, "<tfl.Vari");

    tfl_tensor_release(d);
    tfl_tensor_release(x);
    tfl_tensor_release(s);
    tfl_tensor_release(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_infers_dtype_and_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_dtype_conversion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_null_initial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_is_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_default_and_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trainable_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variable_from_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variable_outlives_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ops_accept_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
