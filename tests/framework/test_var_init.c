/* test_var_init.c: tests of variable initialization: deferred (uninitialized) variables and
 * the errors reading them gives, tfl_variable_initialize, tfl_variable_new_init with each
 * initializer, tfl_variables_initialize per collection, tfl_report_uninitialized, and a
 * deferred variable whose initial value is another variable. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- uninitialized variables ---------------------------------------------------------------- */

static tfl_tensor *deferred(tfl_ctx *ctx, const char *name, double value)
{
    tfl_initializer init = tfl_init_constant(value);
    tfl_tensor *v =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, &init,
                              &(tfl_variable_opts){.name = name, .flags = TFL_VAR_DEFERRED});
    assert_non_null(v);
    return v;
}

static void test_uninitialized_reads_fail(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = deferred(ctx, "deferred_w", 3);
    assert_true(tfl_tensor_is_variable(v));
    assert_false(tfl_variable_is_initialized(v));
    assert_string_equal(tfl_variable_name(v), "deferred_w");
    expect_shape(v, 2, (const int64_t[]){2, 2});
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT32);
    expect_no_error(ctx);
    uint64_t live = live_tensors(ctx);

    assert_null(tfl_variable_read(v));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value deferred_w");

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *one = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2});
    uint64_t live_f = live_tensors(ctx);
    assert_null(tfl_add(ctx, v, one));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value",
                 "deferred_w");
    assert_null(tfl_matmul(ctx, one, v, 0));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value",
                 "deferred_w");
    assert_int_equal(live_tensors(ctx), live_f);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    float out[4];
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value",
                 "deferred_w");
    double g = 0;
    assert_int_equal(tfl_tensor_get(v, 0, &g), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value",
                 "deferred_w");
    assert_null(tfl_reshape(ctx, v, 1, (const int64_t[]){4}));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value");

    /* The repr says so, without crashing. */
    char buf[256];
    memset(buf, 0, sizeof buf);
    int len = tfl_tensor_format(v, buf, sizeof buf, NULL);
    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(buf));
    assert_has(buf, "<tfl.Variable 'deferred_w:0' shape=(2, 2) dtype=float32");
    assert_has(buf, "uninitialized");
    tfl_ctx_clear_error(ctx);
    char small[8];
    assert_true(tfl_tensor_format(v, small, sizeof small, NULL) >= (int)sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    tfl_ctx_clear_error(ctx);

    /* assign_add / assign_sub need an initialized variable. */
    tfl_tensor *x =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, (const float[]){1, 2, 3, 4});
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "deferred_w");
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "deferred_w");
    assert_false(tfl_variable_is_initialized(v));
    assert_int_equal(live_tensors(ctx), live + 1);

    /* assign initializes it. */
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_true(tfl_variable_is_initialized(v));
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, 4, 6, 8);
    tfl_tensor *s = tfl_variable_read(v);
    expect_vals(s, TFL_DTYPE_FLOAT32, 2, 4, 6, 8);
    tfl_tensor_release(s);

    /* A shape mismatch does not initialize it. */
    tfl_tensor *w = deferred(ctx, "w2", 1);
    tfl_tensor *bad = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_int_equal(tfl_variable_assign(w, bad), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'w2:0'", "(2, 2)", "(2,)");
    assert_false(tfl_variable_is_initialized(w));
    tfl_tensor_release(bad);
    tfl_tensor_release(w);

    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_initialize_single(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = deferred(ctx, "c", 3);
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    assert_true(tfl_variable_is_initialized(v));
    expect_vals(v, TFL_DTYPE_FLOAT32, 3, 3, 3, 3);
    /* Running it again resets the value. */
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2});
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 4, 4, 4);
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 3, 3, 3, 3);
    tfl_tensor_release(x);
    tfl_tensor_release(v);

    /* Deferred from an initial tensor: the variable keeps the tensor alive until then. */
    tfl_tensor *init = vec_f32(ctx, (const float[]){7, 8}, 2);
    v = tfl_variable_new(ctx, init,
                         &(tfl_variable_opts){.name = "from_t", .flags = TFL_VAR_DEFERRED});
    assert_non_null(v);
    assert_false(tfl_variable_is_initialized(v));
    expect_shape(v, 1, (const int64_t[]){2});
    tfl_tensor_release(init);
    assert_null(tfl_variable_read(v));
    expect_error(ctx, TFL_FAILED_PRECONDITION, "Attempting to use uninitialized value from_t");
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    assert_true(tfl_variable_is_initialized(v));
    expect_vals(v, TFL_DTYPE_FLOAT32, 7, 8);
    tfl_tensor_release(v);

    /* Deferred with a dtype conversion. */
    init = vec_i32(ctx, (const int32_t[]){1, 2}, 2);
    v = tfl_variable_new(
        ctx, init, &(tfl_variable_opts){.dtype = TFL_DTYPE_FLOAT64, .flags = TFL_VAR_DEFERRED});
    assert_non_null(v);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT64);
    tfl_tensor_release(init);
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT64, 1, 2);
    tfl_tensor_release(v);

    /* A variable made from a plain value has no initializer to re-run: it keeps its value. */
    v = var_f32(ctx, (const float[]){1, 2}, 2, NULL);
    tfl_tensor *y = vec_f32(ctx, (const float[]){5, 6}, 2);
    assert_int_equal(tfl_variable_assign(v, y), TFL_OK);
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 5, 6);
    tfl_tensor_release(y);

    /* A seeded initializer gives the same values again. */
    tfl_initializer ru = tfl_init_random_uniform(-1, 1, 42);
    tfl_tensor *r =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){8}, &ru, NULL);
    tfl_tensor *r2 =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){8}, &ru, NULL);
    assert_non_null(r);
    assert_non_null(r2);
    float a[8], b[8], c[8];
    assert_int_equal(tfl_tensor_to_host(r, a, sizeof a), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(r2, b, sizeof b), TFL_OK);
    assert_memory_equal(a, b, sizeof a);
    bool varied = false;
    for (int i = 0; i < 8; i++) {
        assert_true(a[i] >= -1 && a[i] <= 1);
        if (a[i] != a[0]) varied = true;
    }
    assert_true(varied);
    tfl_tensor *zero = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){8});
    assert_int_equal(tfl_variable_assign(r, zero), TFL_OK);
    assert_int_equal(tfl_variable_initialize(r), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(r, c, sizeof c), TFL_OK);
    assert_memory_equal(a, c, sizeof a);
    tfl_tensor_release(zero);
    tfl_tensor_release(r);
    tfl_tensor_release(r2);

    /* Not a variable. */
    tfl_tensor *p = vec_f32(ctx, (const float[]){1}, 1);
    assert_int_equal(tfl_variable_initialize(p), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    tfl_tensor_release(p);
    tfl_tensor_release(v);
}

static void test_new_init(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s23[2] = {2, 3};
    tfl_initializer z = tfl_init_zeros();
    tfl_initializer o = tfl_init_ones();
    tfl_initializer c = tfl_init_constant(2.5);

    tfl_tensor *v = tfl_variable_new_init(ctx, TFL_DTYPE_INT32, 2, s23, &z, NULL);
    assert_non_null(v);
    expect_shape(v, 2, s23);
    expect_vals(v, TFL_DTYPE_INT32, 0, 0, 0, 0, 0, 0);
    assert_true(tfl_variable_is_initialized(v));
    assert_string_equal(tfl_variable_name(v), "Variable");
    assert_true(tfl_variable_trainable(v));
    tfl_tensor_release(v);

    /* opts->dtype is ignored; the argument wins. */
    v = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT64, 1, (const int64_t[]){2}, &o,
                              &(tfl_variable_opts){.dtype = TFL_DTYPE_INT32, .name = "o"});
    expect_vals(v, TFL_DTYPE_FLOAT64, 1, 1);
    assert_string_equal(tfl_variable_name(v), "o");
    tfl_tensor_release(v);

    /* TFL_DTYPE_INVALID: float32 */
    v = tfl_variable_new_init(ctx, TFL_DTYPE_INVALID, 0, NULL, &c, NULL);
    assert_non_null(v);
    assert_int_equal(tfl_tensor_rank(v), 0);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2.5);
    tfl_tensor_release(v);

    /* NULL init: glorot_uniform */
    v = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){10, 20}, NULL, NULL);
    assert_non_null(v);
    float buf[200];
    assert_int_equal(tfl_tensor_to_host(v, buf, sizeof buf), TFL_OK);
    double lim = sqrt(6.0 / 30.0), mx = 0;
    for (int i = 0; i < 200; i++) {
        assert_true(fabs(buf[i]) <= lim + 1e-6);
        if (fabs(buf[i]) > mx) mx = fabs(buf[i]);
    }
    assert_true(mx > 0.7 * lim);
    tfl_tensor_release(v);

    /* A random initializer of an integer dtype is refused. */
    tfl_initializer g = tfl_init_glorot_uniform(1);
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_INT32, 2, s23, &g, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "glorot_uniform", "int32");
    /* Bad rank, bad name. */
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 9, s23, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, s23, &z,
                                      &(tfl_variable_opts){.name = "x:0"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(live_tensors(ctx), live);
}

static void test_variables_initialize(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = deferred(ctx, "a", 1);
    tfl_tensor *b = deferred(ctx, "b", 2);
    tfl_tensor *plain = var_f32(ctx, (const float[]){9}, 1, "plain");
    assert_int_equal(tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0), TFL_OK);
    assert_true(tfl_variable_is_initialized(a));
    assert_true(tfl_variable_is_initialized(b));
    expect_vals(a, TFL_DTYPE_FLOAT32, 1, 1, 1, 1);
    expect_vals(b, TFL_DTYPE_FLOAT32, 2, 2, 2, 2);
    expect_vals(plain, TFL_DTYPE_FLOAT32, 9);

    /* ONLY_UNINITIALIZED leaves assigned variables alone. */
    tfl_tensor *x = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, 5);
    assert_int_equal(tfl_variable_assign(a, x), TFL_OK);
    tfl_tensor *c = deferred(ctx, "c", 3);
    assert_int_equal(
        tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, TFL_INIT_ONLY_UNINITIALIZED), TFL_OK);
    expect_vals(a, TFL_DTYPE_FLOAT32, 5, 5, 5, 5);
    expect_vals(c, TFL_DTYPE_FLOAT32, 3, 3, 3, 3);
    assert_true(tfl_variable_is_initialized(c));

    /* Without the flag every variable is initialized again. */
    assert_int_equal(tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0), TFL_OK);
    expect_vals(a, TFL_DTYPE_FLOAT32, 1, 1, 1, 1);

    /* A collection leaves out the others; NULL takes every live variable. */
    tfl_tensor *loc = tfl_variable_new_init(
        ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){1}, &(tfl_initializer){.kind = TFL_INIT_ONES},
        &(tfl_variable_opts){.name = "loc",
                             .flags = TFL_VAR_DEFERRED,
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    assert_non_null(loc);
    tfl_tensor *d = deferred(ctx, "d", 4);
    assert_int_equal(tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0), TFL_OK);
    assert_false(tfl_variable_is_initialized(loc));
    assert_true(tfl_variable_is_initialized(d));
    assert_int_equal(tfl_variables_initialize(ctx, TFL_LOCAL_VARIABLES, 0), TFL_OK);
    assert_true(tfl_variable_is_initialized(loc));
    expect_vals(loc, TFL_DTYPE_FLOAT32, 1);

    tfl_tensor *e = deferred(ctx, "e", 5);
    tfl_tensor *loc2 = tfl_variable_new_init(
        ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){1}, &(tfl_initializer){.kind = TFL_INIT_ONES},
        &(tfl_variable_opts){.name = "loc2",
                             .flags = TFL_VAR_DEFERRED,
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    assert_int_equal(tfl_variables_initialize(ctx, NULL, TFL_INIT_ONLY_UNINITIALIZED), TFL_OK);
    assert_true(tfl_variable_is_initialized(e));
    assert_true(tfl_variable_is_initialized(loc2));
    expect_vals(e, TFL_DTYPE_FLOAT32, 5, 5, 5, 5);

    /* An unknown (empty) collection initializes nothing and succeeds. */
    assert_int_equal(tfl_variables_initialize(ctx, "no_such_collection", 0), TFL_OK);
    expect_no_error(ctx);

    tfl_tensor_release(x);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(c);
    tfl_tensor_release(d);
    tfl_tensor_release(e);
    tfl_tensor_release(loc);
    tfl_tensor_release(loc2);
    tfl_tensor_release(plain);
}

static void test_report_uninitialized(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), 0);
    assert_int_equal(tfl_report_uninitialized(NULL, NULL, NULL, 0), -1);

    tfl_tensor *a = deferred(ctx, "a", 1);
    tfl_tensor *b = deferred(ctx, "b", 1);
    tfl_tensor *i = var_f32(ctx, (const float[]){1}, 1, "init");
    tfl_tensor *c = deferred(ctx, "c", 1);
    assert_int_equal(tfl_name_scope_push(ctx, "scope"), TFL_OK);
    tfl_tensor *d = deferred(ctx, "d", 1);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    const char *names[8];
    for (int k = 0; k < 8; k++)
        names[k] = "sentinel";
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, names, 8), 4);
    assert_string_equal(names[0], "a");
    assert_string_equal(names[1], "b");
    assert_string_equal(names[2], "c");
    assert_string_equal(names[3], "scope/d");
    assert_string_equal(names[4], "sentinel");

    assert_int_equal(tfl_variable_initialize(b), TFL_OK);
    for (int k = 0; k < 8; k++)
        names[k] = "sentinel";
    assert_int_equal(tfl_report_uninitialized(ctx, TFL_GLOBAL_VARIABLES, names, 8), 3);
    assert_string_equal(names[0], "a");
    assert_string_equal(names[1], "c");
    assert_string_equal(names[2], "scope/d");

    /* count > cap: only cap names written, the full count returned. */
    for (int k = 0; k < 8; k++)
        names[k] = "sentinel";
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, names, 1), 3);
    assert_string_equal(names[0], "a");
    assert_string_equal(names[1], "sentinel");
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), 3);

    /* Per collection. */
    tfl_tensor *loc = tfl_variable_new_init(
        ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){1}, NULL,
        &(tfl_variable_opts){.name = "loc",
                             .flags = TFL_VAR_DEFERRED,
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    assert_non_null(loc);
    assert_int_equal(tfl_report_uninitialized(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 3);
    assert_int_equal(tfl_report_uninitialized(ctx, TFL_LOCAL_VARIABLES, names, 8), 1);
    assert_string_equal(names[0], "loc");
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), 4);
    assert_int_equal(tfl_report_uninitialized(ctx, "nothing_here", NULL, 0), 0);

    /* Assigning and releasing take variables off the list. */
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2});
    assert_int_equal(tfl_variable_assign(a, x), TFL_OK);
    tfl_tensor_release(c);
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, names, 8), 2);
    assert_string_equal(names[0], "scope/d");
    assert_string_equal(names[1], "loc");

    assert_int_equal(tfl_variables_initialize(ctx, NULL, TFL_INIT_ONLY_UNINITIALIZED), TFL_OK);
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), 0);
    expect_no_error(ctx);

    tfl_tensor_release(x);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(d);
    tfl_tensor_release(i);
    tfl_tensor_release(loc);
}

static void test_deferred_from_variable(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *src = var_f32(ctx, (const float[]){1, 2}, 2, "src");
    tfl_tensor *d =
        tfl_variable_new(ctx, src, &(tfl_variable_opts){.name = "d", .flags = TFL_VAR_DEFERRED});
    assert_non_null(d);
    assert_false(tfl_variable_is_initialized(d));
    /* It takes the value its initial has when it is initialized. */
    tfl_tensor *x = vec_f32(ctx, (const float[]){5, 6}, 2);
    assert_int_equal(tfl_variable_assign(src, x), TFL_OK);
    assert_int_equal(tfl_variable_initialize(d), TFL_OK);
    expect_vals(d, TFL_DTYPE_FLOAT32, 5, 6);
    assert_ptr_not_equal(tfl_tensor_data_ptr(d), tfl_tensor_data_ptr(src));
    assert_int_equal(tfl_variable_assign_add(d, x), TFL_OK);
    expect_vals(src, TFL_DTYPE_FLOAT32, 5, 6);
    expect_vals(d, TFL_DTYPE_FLOAT32, 10, 12);
    /* The source may go first. */
    tfl_tensor_release(src);
    assert_int_equal(tfl_variable_initialize(d), TFL_OK);
    expect_vals(d, TFL_DTYPE_FLOAT32, 5, 6);
    expect_no_error(ctx);
    tfl_tensor_release(x);
    tfl_tensor_release(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uninitialized_reads_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initialize_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variables_initialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_uninitialized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_from_variable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
