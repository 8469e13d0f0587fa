/* test_var_names.c: tests of variable names: name scopes (nesting, limits, bad names) and
 * tfl_get_variable (create, reuse modes, shape and dtype mismatches, tensor initializers, a
 * store that never keeps a variable alive, many variables), and two independent contexts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- names and scopes ----------------------------------------------------------------------- */

static void test_name_scopes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_string_equal(tfl_name_scope(ctx), "");

    assert_int_equal(tfl_name_scope_push(ctx, "conv1"), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "conv1");
    tfl_tensor *w = var_f32(ctx, (const float[]){1}, 1, "weights");
    assert_string_equal(tfl_variable_name(w), "conv1/weights");
    tfl_tensor *d = var_f32(ctx, (const float[]){1}, 1, NULL);
    assert_string_equal(tfl_variable_name(d), "conv1/Variable");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");
    /* The name is fixed at creation. */
    assert_string_equal(tfl_variable_name(w), "conv1/weights");

    assert_int_equal(tfl_name_scope_push(ctx, "model"), TFL_OK);
    assert_int_equal(tfl_name_scope_push(ctx, "conv1"), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "model/conv1");
    tfl_tensor *mw = var_f32(ctx, (const float[]){1}, 1, "weights");
    assert_string_equal(tfl_variable_name(mw), "model/conv1/weights");
    tfl_tensor *mi = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){1}, NULL,
                                           &(tfl_variable_opts){.name = "bias"});
    assert_string_equal(tfl_variable_name(mi), "model/conv1/bias");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "model");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");

    /* Shape repr uses the full name. */
    char buf[256];
    tfl_tensor_format(mw, buf, sizeof buf, NULL);
    assert_has(buf, "<tfl.Variable 'model/conv1/weights:0'");

    /* Pop with nothing open. */
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_MISUSE);
    expect_error(ctx, TFL_MISUSE, "");
    assert_int_equal(tfl_name_scope_reuse_variables(ctx), TFL_MISUSE);
    expect_error(ctx, TFL_MISUSE, "");

    /* Bad names. */
    assert_int_equal(tfl_name_scope_push(ctx, ""), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_name_scope_push(ctx, "a:b"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "a:b");
    assert_int_equal(tfl_name_scope_push(ctx, NULL), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "ok", (tfl_reuse)17), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_string_equal(tfl_name_scope(ctx), "");

    /* "a/b" opens two levels at once. */
    assert_int_equal(tfl_name_scope_push(ctx, "a/b"), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "a/b");
    tfl_tensor *ab = var_f32(ctx, (const float[]){1}, 1, "v");
    assert_string_equal(tfl_variable_name(ab), "a/b/v");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    if (strcmp(tfl_name_scope(ctx), "a") == 0) assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");

    /* 64 levels at most. */
    int pushed = 0;
    tfl_status st = TFL_OK;
    for (int k = 0; k < 70; k++) {
        st = tfl_name_scope_push(ctx, "s");
        if (st != TFL_OK) break;
        pushed++;
    }
    assert_int_equal(st, TFL_RESOURCE_EXHAUSTED);
    assert_int_equal(pushed, 64);
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "");
    for (int k = 0; k < pushed; k++)
        assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");

    /* Too long. */
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(tfl_name_scope_push(ctx, longname), TFL_RESOURCE_EXHAUSTED);
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "");
    assert_string_equal(tfl_name_scope(ctx), "");

    tfl_tensor_release(ab);
    tfl_tensor_release(w);
    tfl_tensor_release(d);
    tfl_tensor_release(mw);
    tfl_tensor_release(mi);
}

/* ---- get_variable --------------------------------------------------------------------------- */

static void test_get_variable_create_default(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {20, 30};
    tfl_tensor *w = tfl_get_variable(ctx, "w", 2, shape, TFL_DTYPE_INVALID, NULL, NULL);
    assert_non_null(w);
    assert_true(tfl_tensor_is_variable(w));
    assert_int_equal(tfl_tensor_dtype(w), TFL_DTYPE_FLOAT32);
    expect_shape(w, 2, shape);
    assert_string_equal(tfl_variable_name(w), "w");
    assert_true(tfl_variable_trainable(w));
    assert_true(tfl_variable_is_initialized(w));
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, w));
    assert_true(coll_has(ctx, TFL_TRAINABLE_VARIABLES, w));

    float buf[600];
    assert_int_equal(tfl_tensor_to_host(w, buf, sizeof buf), TFL_OK);
    double lim = sqrt(6.0 / (20 + 30)), mx = -1, mn = 1, sum = 0;
    for (int i = 0; i < 600; i++) {
        if (!(fabs(buf[i]) <= lim + 1e-6)) {
            print_error("element %d = %g outside +-%g\n", i, buf[i], lim);
            fail();
        }
        if (buf[i] > mx) mx = buf[i];
        if (buf[i] < mn) mn = buf[i];
        sum += buf[i];
    }
    assert_true(mx > 0.8 * lim);
    assert_true(mn < -0.8 * lim);
    assert_true(fabs(sum / 600) < 0.1 * lim);

    /* Same name again, no reuse: ALREADY_EXISTS. */
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_get_variable(ctx, "w", 2, shape, TFL_DTYPE_INVALID, NULL, NULL));
    expect_error(ctx, TFL_ALREADY_EXISTS,
                 "Variable w already exists, disallowed. Did you mean to set reuse");
    assert_int_equal(live_tensors(ctx), live);

    /* In a scope. */
    assert_int_equal(tfl_name_scope_push(ctx, "conv1"), TFL_OK);
    tfl_initializer z = tfl_init_zeros();
    tfl_tensor *cw =
        tfl_get_variable(ctx, "weights", 1, (const int64_t[]){3}, TFL_DTYPE_FLOAT64, &z, NULL);
    assert_non_null(cw);
    assert_string_equal(tfl_variable_name(cw), "conv1/weights");
    expect_vals(cw, TFL_DTYPE_FLOAT64, 0, 0, 0);
    assert_null(
        tfl_get_variable(ctx, "weights", 1, (const int64_t[]){3}, TFL_DTYPE_FLOAT64, &z, NULL));
    expect_error(ctx, TFL_ALREADY_EXISTS,
                 "Variable conv1/weights already exists, disallowed. Did you mean to set reuse");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* opts: flags and collections apply; name and dtype are ignored. */
    tfl_tensor *nt = tfl_get_variable(ctx, "counter", 0, NULL, TFL_DTYPE_INT64, &z,
                                      &(tfl_variable_opts){.name = "ignored",
                                                           .dtype = TFL_DTYPE_FLOAT32,
                                                           .flags = TFL_VAR_NOT_TRAINABLE});
    assert_non_null(nt);
    assert_string_equal(tfl_variable_name(nt), "counter");
    assert_int_equal(tfl_tensor_dtype(nt), TFL_DTYPE_INT64);
    assert_false(tfl_variable_trainable(nt));
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, nt));
    assert_false(coll_has(ctx, TFL_TRAINABLE_VARIABLES, nt));

    /* Bad name. */
    assert_null(tfl_get_variable(ctx, "a:b", 1, (const int64_t[]){1}, 0, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_null(tfl_get_variable(ctx, "", 1, (const int64_t[]){1}, 0, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    /* rank -1 without a tensor initializer. */
    assert_null(tfl_get_variable(ctx, "r", -1, NULL, 0, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_null(tfl_get_variable(ctx, "r", -1, NULL, 0, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");

    tfl_tensor_release(nt);
    tfl_tensor_release(cw);
    tfl_tensor_release(w);
}

static void test_get_variable_reuse(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_initializer z = tfl_init_zeros();
    const int64_t s[2] = {2, 3};
    assert_int_equal(tfl_name_scope_push(ctx, "conv1"), TFL_OK);
    tfl_tensor *w = tfl_get_variable(ctx, "weights", 2, s, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(w);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    uint64_t live = live_tensors(ctx);

    /* TFL_REUSE_TRUE returns the same variable (a new reference). */
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "conv1", TFL_REUSE_TRUE), TFL_OK);
    tfl_tensor *w2 = tfl_get_variable(ctx, "weights", 2, s, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(w2, w);
    /* rank -1 skips the shape check, TFL_DTYPE_INVALID the dtype check. */
    tfl_tensor *w3 = tfl_get_variable(ctx, "weights", -1, NULL, TFL_DTYPE_INVALID, NULL, NULL);
    assert_ptr_equal(w3, w);
    assert_int_equal(live_tensors(ctx), live);
    /* Unknown name: NOT_FOUND. */
    assert_null(tfl_get_variable(ctx, "foo", 2, s, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_NOT_FOUND, "Variable conv1/foo does not exist, or was not created with");
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* A new reference per call: after two releases the variable is still alive. */
    tfl_tensor_release(w2);
    tfl_tensor_release(w3);
    expect_vals(w, TFL_DTYPE_FLOAT32, 0, 0, 0, 0, 0, 0);
    assert_int_equal(live_tensors(ctx), live);

    /* An assign through one reference shows through the other: it is the same variable. */
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "conv1", TFL_REUSE_AUTO), TFL_OK);
    tfl_tensor *w4 = tfl_get_variable(ctx, "weights", 2, s, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(w4, w);
    tfl_tensor *ones = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, s);
    assert_int_equal(tfl_variable_assign(w4, ones), TFL_OK);
    expect_vals(w, TFL_DTYPE_FLOAT32, 1, 1, 1, 1, 1, 1);
    tfl_tensor_release(ones);
    tfl_tensor_release(w4);

    /* TFL_REUSE_AUTO creates then reuses. */
    tfl_tensor *b =
        tfl_get_variable(ctx, "bias", 1, (const int64_t[]){3}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(b);
    assert_string_equal(tfl_variable_name(b), "conv1/bias");
    tfl_tensor *b2 =
        tfl_get_variable(ctx, "bias", 1, (const int64_t[]){3}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(b2, b);
    tfl_tensor_release(b2);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* reuse_variables switches an open scope. */
    assert_int_equal(tfl_name_scope_push(ctx, "s"), TFL_OK);
    tfl_tensor *v =
        tfl_get_variable(ctx, "v", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(v);
    assert_null(tfl_get_variable(ctx, "v", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_ALREADY_EXISTS, "Variable s/v already exists, disallowed");
    assert_int_equal(tfl_name_scope_reuse_variables(ctx), TFL_OK);
    tfl_tensor *v2 =
        tfl_get_variable(ctx, "v", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(v2, v);
    tfl_tensor_release(v2);
    assert_null(
        tfl_get_variable(ctx, "nope", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_NOT_FOUND, "Variable s/nope does not exist");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* The outer scope is back to no reuse. */
    assert_int_equal(tfl_name_scope_push(ctx, "s"), TFL_OK);
    assert_null(tfl_get_variable(ctx, "v", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_ALREADY_EXISTS, "Variable s/v already exists");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* The reuse mode is inherited by nested scopes. */
    assert_int_equal(tfl_name_scope_push(ctx, "outer"), TFL_OK);
    assert_int_equal(tfl_name_scope_push(ctx, "inner"), TFL_OK);
    tfl_tensor *iw =
        tfl_get_variable(ctx, "w", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(iw);
    assert_string_equal(tfl_variable_name(iw), "outer/inner/w");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    assert_int_equal(tfl_name_scope_push_reuse(ctx, "outer", TFL_REUSE_TRUE), TFL_OK);
    assert_int_equal(tfl_name_scope_push(ctx, "inner"), TFL_OK);
    tfl_tensor *iw2 =
        tfl_get_variable(ctx, "w", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(iw2, iw);
    tfl_tensor_release(iw2);
    assert_null(tfl_get_variable(ctx, "x", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_NOT_FOUND, "Variable outer/inner/x does not exist");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    /* push_reuse with INHERIT is push. */
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "inner", TFL_REUSE_INHERIT), TFL_OK);
    iw2 = tfl_get_variable(ctx, "w", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_ptr_equal(iw2, iw);
    tfl_tensor_release(iw2);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    /* AUTO inside TRUE: the inner mode wins. */
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "auto", TFL_REUSE_AUTO), TFL_OK);
    tfl_tensor *aw =
        tfl_get_variable(ctx, "w", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(aw);
    assert_string_equal(tfl_variable_name(aw), "outer/auto/w");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");

    expect_no_error(ctx);
    tfl_tensor_release(aw);
    tfl_tensor_release(iw);
    tfl_tensor_release(v);
    tfl_tensor_release(b);
    tfl_tensor_release(w);
}

static void test_get_variable_mismatch(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_initializer z = tfl_init_zeros();
    const int64_t s32[4] = {5, 5, 32, 32};
    const int64_t s16[4] = {5, 5, 32, 16};
    assert_int_equal(tfl_name_scope_push(ctx, "model"), TFL_OK);
    tfl_tensor *w = tfl_get_variable(ctx, "weights", 4, s32, TFL_DTYPE_FLOAT32, &z, NULL);
    assert_non_null(w);
    assert_int_equal(tfl_name_scope_reuse_variables(ctx), TFL_OK);
    uint64_t live = live_tensors(ctx);

    assert_null(tfl_get_variable(ctx, "weights", 4, s16, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Trying to share variable model/weights, but specified shape (5, 5, 32, 16) "
                 "and found shape (5, 5, 32, 32).");
    assert_null(
        tfl_get_variable(ctx, "weights", 2, (const int64_t[]){5, 5}, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Trying to share variable model/weights", "(5, 5)",
                 "(5, 5, 32, 32)");
    assert_null(tfl_get_variable(ctx, "weights", 4, s32, TFL_DTYPE_FLOAT64, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Trying to share variable model/weights", "float64",
                 "float32");
    assert_int_equal(live_tensors(ctx), live);
    expect_shape(w, 4, s32);
    assert_int_equal(tfl_tensor_dtype(w), TFL_DTYPE_FLOAT32);

    /* With AUTO too. */
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "model", TFL_REUSE_AUTO), TFL_OK);
    assert_null(tfl_get_variable(ctx, "weights", 4, s16, TFL_DTYPE_FLOAT32, &z, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Trying to share variable model/weights",
                 "(5, 5, 32, 16)", "(5, 5, 32, 32)");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    tfl_tensor_release(w);
}

static void test_get_variable_tensor_initializer(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *t = tens(ctx, TFL_DTYPE_FLOAT64, 2, s22, (const double[]){1, 2, 3, 4});
    tfl_initializer ti = tfl_init_tensor(t);

    /* rank -1: the tensor's shape; TFL_DTYPE_INVALID: its dtype. */
    tfl_tensor *c = tfl_get_variable(ctx, "c", -1, NULL, TFL_DTYPE_INVALID, &ti, NULL);
    assert_non_null(c);
    expect_shape(c, 2, s22);
    expect_vals(c, TFL_DTYPE_FLOAT64, 1, 2, 3, 4);
    assert_ptr_not_equal(tfl_tensor_data_ptr(c), tfl_tensor_data_ptr(t));

    /* The same shape given explicitly is fine; a dtype converts. */
    tfl_tensor *c2 = tfl_get_variable(ctx, "c2", 2, s22, TFL_DTYPE_FLOAT32, &ti, NULL);
    assert_non_null(c2);
    expect_vals(c2, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);

    /* A different shape: error. */
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_get_variable(ctx, "c3", 1, (const int64_t[]){4}, TFL_DTYPE_INVALID, &ti, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "If initializer is a constant, do not specify shape");
    assert_int_equal(live_tensors(ctx), live);
    /* ... and the name was not taken. */
    tfl_tensor *c3 = tfl_get_variable(ctx, "c3", -1, NULL, TFL_DTYPE_INVALID, &ti, NULL);
    assert_non_null(c3);

    /* Deferred: the initializer tensor is retained by the variable. */
    tfl_tensor *t2 = vec_f32(ctx, (const float[]){5, 6}, 2);
    tfl_initializer ti2 = tfl_init_tensor(t2);
    tfl_tensor *dv = tfl_get_variable(ctx, "dv", -1, NULL, TFL_DTYPE_INVALID, &ti2,
                                      &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    assert_non_null(dv);
    assert_false(tfl_variable_is_initialized(dv));
    tfl_tensor_release(t2);
    assert_int_equal(tfl_variable_initialize(dv), TFL_OK);
    expect_vals(dv, TFL_DTYPE_FLOAT32, 5, 6);

    expect_no_error(ctx);
    tfl_tensor_release(dv);
    tfl_tensor_release(c3);
    tfl_tensor_release(c2);
    tfl_tensor_release(c);
    tfl_tensor_release(t);
}

static void test_get_variable_store_does_not_keep_alive(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_initializer o = tfl_init_ones();
    uint64_t live0 = live_tensors(ctx);
    tfl_tensor *a =
        tfl_get_variable(ctx, "tmp", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &o, NULL);
    assert_non_null(a);
    assert_int_equal(live_tensors(ctx), live0 + 1);
    tfl_tensor_release(a);
    assert_int_equal(live_tensors(ctx), live0);

    /* The name can be created again. */
    tfl_tensor *b =
        tfl_get_variable(ctx, "tmp", 1, (const int64_t[]){3}, TFL_DTYPE_FLOAT64, &o, NULL);
    assert_non_null(b);
    expect_vals(b, TFL_DTYPE_FLOAT64, 1, 1, 1);

    /* In a scope: after the release, reuse TRUE no longer finds it. */
    assert_int_equal(tfl_name_scope_push(ctx, "r"), TFL_OK);
    a = tfl_get_variable(ctx, "tmp", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &o, NULL);
    assert_non_null(a);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    tfl_tensor_release(a);
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "r", TFL_REUSE_TRUE), TFL_OK);
    assert_null(tfl_get_variable(ctx, "tmp", 1, (const int64_t[]){2}, TFL_DTYPE_FLOAT32, &o, NULL));
    expect_error(ctx, TFL_NOT_FOUND, "Variable r/tmp does not exist");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* Two references: releasing one keeps it in the store. */
    assert_int_equal(tfl_name_scope_push_reuse(ctx, "x", TFL_REUSE_AUTO), TFL_OK);
    tfl_tensor *c = tfl_get_variable(ctx, "c", 0, NULL, TFL_DTYPE_FLOAT32, &o, NULL);
    tfl_tensor *c2 = tfl_get_variable(ctx, "c", 0, NULL, TFL_DTYPE_FLOAT32, &o, NULL);
    assert_ptr_equal(c, c2);
    tfl_tensor_release(c);
    tfl_tensor *c3 = tfl_get_variable(ctx, "c", 0, NULL, TFL_DTYPE_FLOAT32, &o, NULL);
    assert_ptr_equal(c3, c2);
    tfl_tensor_release(c2);
    tfl_tensor_release(c3);
    /* Gone: AUTO creates a new one (possibly at the same address), initialized afresh. */
    tfl_tensor *c4 = tfl_get_variable(ctx, "c", 0, NULL, TFL_DTYPE_FLOAT64, &o, NULL);
    assert_non_null(c4);
    expect_vals(c4, TFL_DTYPE_FLOAT64, 1);
    tfl_tensor_release(c4);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);

    /* A free-standing variable of the same name is allowed, before and after. */
    tfl_tensor *fs = var_f32(ctx, (const float[]){7}, 1, "tmp");
    assert_non_null(fs);
    assert_string_equal(tfl_variable_name(fs), "tmp");
    tfl_tensor *fs0 = var_f32(ctx, (const float[]){8}, 1, "fresh");
    tfl_tensor *gv =
        tfl_get_variable(ctx, "fresh", 1, (const int64_t[]){1}, TFL_DTYPE_FLOAT32, &o, NULL);
    assert_non_null(gv); /* the free-standing "fresh" is not in the store */
    assert_ptr_not_equal(gv, fs0);
    assert_string_equal(tfl_variable_name(gv), "fresh");
    expect_vals(fs0, TFL_DTYPE_FLOAT32, 8);
    expect_vals(gv, TFL_DTYPE_FLOAT32, 1);

    expect_no_error(ctx);
    tfl_tensor_release(gv);
    tfl_tensor_release(fs0);
    tfl_tensor_release(fs);
    tfl_tensor_release(b);
    assert_int_equal(live_tensors(ctx), live0);
}

/* ---- many variables, name limits --------------------------------------------------------- */

static void test_many_variables(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    enum { N = 150 };
    tfl_tensor *vs[N];
    tfl_initializer z = tfl_init_zeros();
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        vs[i] =
            tfl_get_variable(ctx, name, 1, (const int64_t[]){1}, TFL_DTYPE_INT32, &z,
                             &(tfl_variable_opts){.flags = (i % 3 == 0) ? TFL_VAR_DEFERRED : 0u});
        assert_non_null(vs[i]);
        assert_string_equal(tfl_variable_name(vs[i]), name);
    }
    tfl_tensor **out = calloc(N, sizeof *out);
    assert_non_null(out);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, N), N);
    for (int i = 0; i < N; i++)
        assert_ptr_equal(out[i], vs[i]);
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), N / 3);

    /* Release every other one; the store and the collections forget exactly those. */
    for (int i = 0; i < N; i += 2)
        tfl_tensor_release(vs[i]);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, out, N), N / 2);
    for (int i = 0; i < N / 2; i++)
        assert_ptr_equal(out[i], vs[2 * i + 1]);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        tfl_tensor *g =
            tfl_get_variable(ctx, name, 1, (const int64_t[]){1}, TFL_DTYPE_INT32, &z, NULL);
        if (i % 2 == 0) {
            assert_non_null(g); /* created again */
            vs[i] = g;
        } else {
            assert_null(g);
            expect_error(ctx, TFL_ALREADY_EXISTS, "already exists");
        }
    }
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), N);
    for (int i = 0; i < N; i++)
        tfl_tensor_release(vs[i]);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
    free(out);
}

static void test_scope_name_limits(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    char n255[256], n256[257];
    memset(n255, 'x', 255);
    n255[255] = '\0';
    memset(n256, 'y', 256);
    n256[256] = '\0';
    assert_int_equal(tfl_name_scope_push(ctx, n256), TFL_RESOURCE_EXHAUSTED);
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "");
    assert_string_equal(tfl_name_scope(ctx), "");
    assert_int_equal(tfl_name_scope_push(ctx, n255), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), n255);
    assert_int_equal(tfl_name_scope_push(ctx, "a"), TFL_RESOURCE_EXHAUSTED);
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "");
    assert_string_equal(tfl_name_scope(ctx), n255);
    /* A variable in a full scope: either its whole name or an error, never a cut name. */
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = "weights"});
    if (v) {
        char want[300];
        snprintf(want, sizeof want, "%s/weights", n255);
        assert_string_equal(tfl_variable_name(v), want);
        tfl_tensor_release(v);
    } else {
        assert_true(tfl_ctx_status(ctx) != TFL_OK);
        tfl_ctx_clear_error(ctx);
    }
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");
    tfl_tensor_release(t);
}

/* ---- two contexts ------------------------------------------------------------------------ */

static void test_two_contexts_are_independent(void **state)
{
    (void)state;
    tfl_ctx *c1 = tfl_ctx_new(NULL, NULL);
    tfl_ctx *c2 = tfl_ctx_new(NULL, NULL);
    assert_non_null(c1);
    assert_non_null(c2);
    tfl_initializer z = tfl_init_zeros();
    tfl_tensor *a = tfl_get_variable(c1, "w", 1, (const int64_t[]){2}, 0, &z, NULL);
    tfl_tensor *b = tfl_get_variable(c2, "w", 1, (const int64_t[]){2}, 0, &z, NULL);
    assert_non_null(a);
    assert_non_null(b); /* the store is per context */
    assert_ptr_not_equal(a, b);
    assert_int_equal(tfl_name_scope_push(c1, "only_c1"), TFL_OK);
    assert_string_equal(tfl_name_scope(c2), "");
    tfl_tensor *u = tfl_variable_new_init(c2, TFL_DTYPE_FLOAT32, 0, NULL, &z,
                                          &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    assert_int_equal(tfl_report_uninitialized(c1, NULL, NULL, 0), 0);
    assert_int_equal(tfl_report_uninitialized(c2, NULL, NULL, 0), 1);
    tfl_tensor *out[4];
    assert_int_equal(tfl_collection_get(c1, TFL_GLOBAL_VARIABLES, out, 4), 1);
    assert_ptr_equal(out[0], a);
    assert_int_equal(tfl_collection_get(c2, TFL_GLOBAL_VARIABLES, out, 4), 2);
    assert_ptr_equal(out[0], b);
    assert_ptr_equal(out[1], u);
    assert_int_equal(tfl_variables_initialize(c1, NULL, 0), TFL_OK);
    assert_false(tfl_variable_is_initialized(u));
    assert_int_equal(tfl_name_scope_pop(c1), TFL_OK);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(u);
    assert_int_equal(tfl_ctx_status(c1), TFL_OK);
    assert_int_equal(tfl_ctx_status(c2), TFL_OK);
    assert_int_equal(live_tensors(c1), 0);
    assert_int_equal(live_tensors(c2), 0);
    tfl_ctx_free(c1);
    tfl_ctx_free(c2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_name_scopes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_create_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_tensor_initializer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_store_does_not_keep_alive, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_many_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_name_limits, setup, teardown),
        cmocka_unit_test(test_two_contexts_are_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
