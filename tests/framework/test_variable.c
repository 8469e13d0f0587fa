/* test_variable.c: tests of variables (tapeflow/variable.h): creation from a tensor and from
 * an initializer, dtype conversion, assign / assign_add / assign_sub (values, conversions,
 * errors), in-place storage and copy-on-write snapshots, deferred initialization, name
 * scopes and get_variable, collections, placement and placement logging, the repr, and
 * ownership (variables outlive frames, collections never keep them alive). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Expects the kept error to have `code` and a message containing every fragment, then clears
 * it. Use: expect_error(ctx, TFL_INVALID_ARGUMENT, "fragment", "another"). */
static void expect_error_(tfl_ctx *ctx, tfl_status code, int line, const char *const *frags)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code) {
        print_error("line %d: expected %s, got %s: %s\n", line, tfl_status_name(code),
                    tfl_status_name(e.code), e.message ? e.message : "(null)");
        fail();
    }
    assert_non_null(e.message);
    assert_true(strlen(e.message) > 0);
    for (int i = 0; frags[i]; i++) {
        if (!strstr(e.message, frags[i])) {
            print_error("line %d: expected message \"%s\" to contain \"%s\"\n", line, e.message,
                        frags[i]);
            fail();
        }
    }
    tfl_ctx_clear_error(ctx);
}
#define expect_error(ctx, code, ...)                                                               \
    expect_error_((ctx), (code), __LINE__, (const char *const[]){__VA_ARGS__, NULL})

static void expect_no_error_(tfl_ctx *ctx, int line)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != TFL_OK) {
        print_error("line %d: unexpected error %s: %s\n", line, tfl_status_name(e.code),
                    e.message ? e.message : "(null)");
        fail();
    }
}
#define expect_no_error(ctx) expect_no_error_((ctx), __LINE__)

/* Checks dtype, element count and every element (read with tfl_tensor_get, complex: the real
 * part) against want, within eps. */
static void expect_vals_(const tfl_tensor *t, tfl_dtype dtype, const double *want, int64_t n,
                         double eps, int line)
{
    if (!t) {
        print_error("line %d: tensor is NULL\n", line);
        fail();
    }
    if (tfl_tensor_dtype(t) != dtype) {
        print_error("line %d: dtype %s, want %s\n", line, tfl_dtype_name(tfl_tensor_dtype(t)),
                    tfl_dtype_name(dtype));
        fail();
    }
    assert_int_equal(tfl_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = -12345.0;
        tfl_status st = tfl_tensor_get(t, i, &got);
        if (st != TFL_OK) {
            print_error("line %d: tfl_tensor_get(%lld) failed: %s\n", line, (long long)i,
                        tfl_status_name(st));
            fail();
        }
        if (!(fabs(got - want[i]) <= eps)) {
            print_error("line %d: element %lld: got %.17g, want %.17g\n", line, (long long)i, got,
                        want[i]);
            fail();
        }
    }
}
#define NARGS_D(...) ((int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))
#define expect_vals(t, dtype, ...)                                                                 \
    expect_vals_((t), (dtype), (const double[]){__VA_ARGS__}, NARGS_D(__VA_ARGS__), 1e-6, __LINE__)

static void expect_shape(const tfl_tensor *t, int rank, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_rank(t), rank);
    const int64_t *s = tfl_tensor_shape(t);
    if (rank > 0) assert_non_null(s);
    for (int i = 0; i < rank; i++)
        assert_int_equal(s[i], shape[i]);
}

static int64_t coll_count(tfl_ctx *ctx, const char *name)
{
    return tfl_collection_get(ctx, name, NULL, 0);
}

/* True when v is among the members of the collection. */
static bool coll_has(tfl_ctx *ctx, const char *name, const tfl_tensor *v)
{
    tfl_tensor *out[64];
    int64_t n = tfl_collection_get(ctx, name, out, 64);
    assert_true(n >= 0 && n <= 64);
    for (int64_t i = 0; i < n; i++)
        if (out[i] == v) return true;
    return false;
}

/* A tensor from host data (the caller's when no frame is open). */
static tfl_tensor *tens(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                        const void *data)
{
    tfl_tensor *t = tfl_tensor_new(ctx, dtype, rank, shape, data);
    assert_non_null(t);
    return t;
}

/* A variable made from host data through a temporary tensor (released when no frame owns it). */
static tfl_tensor *var_from(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                            const void *data, const tfl_variable_opts *opts)
{
    tfl_tensor *t = tens(ctx, dtype, rank, shape, data);
    tfl_tensor *v = tfl_variable_new(ctx, t, opts);
    if (!v) {
        tfl_error e = tfl_ctx_error(ctx);
        print_error("tfl_variable_new failed: %s: %s\n", tfl_status_name(e.code), e.message);
    }
    assert_non_null(v);
    if (tfl_frame_depth(ctx) == 0) tfl_tensor_release(t);
    return v;
}

static tfl_tensor *var_f32(tfl_ctx *ctx, const float *data, int64_t n, const char *name)
{
    tfl_variable_opts o = {.name = name};
    return var_from(ctx, TFL_DTYPE_FLOAT32, 1, &n, data, &o);
}

static tfl_tensor *vec_i32(tfl_ctx *ctx, const int32_t *v, int64_t n)
{
    return tens(ctx, TFL_DTYPE_INT32, 1, &n, v);
}

static tfl_tensor *vec_f64(tfl_ctx *ctx, const double *v, int64_t n)
{
    return tens(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
}

static bool has_device(const tfl_ctx *ctx, const char *name)
{
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        const char *d = tfl_device_name(ctx, i);
        if (d && strcmp(d, name) == 0) return true;
    }
    return false;
}

#define LOG_MAX_LINES 256
typedef struct log_capture {
    int n;
    int total;
    char lines[LOG_MAX_LINES][192];
} log_capture;

static void capture_log(void *user, tfl_log_level level, const char *message)
{
    (void)level;
    log_capture *c = user;
    c->total++;
    if (c->n < LOG_MAX_LINES) {
        snprintf(c->lines[c->n], sizeof c->lines[0], "%s", message ? message : "(null)");
        c->n++;
    }
}

static int count_lines(const log_capture *c, const char *fragment)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        if (strstr(c->lines[i], fragment)) n++;
    return n;
}

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
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
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

    /* A NULL variable is an error, not a crash. */
    assert_true(tfl_variable_assign(NULL, x) != TFL_OK);
    tfl_ctx_clear_error(ctx);
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

/* ---- storage: in place and copy-on-write ---------------------------------------------------- */

static void test_assign_in_place(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2, 3}, 3, NULL);
    tfl_tensor *x = vec_f32(ctx, (const float[]){1, 1, 1}, 3);
    const void *p = tfl_tensor_data_ptr(v);
    assert_non_null(p);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 1, 1);

    /* A converted value is written in place too. */
    tfl_tensor *iv = vec_i32(ctx, (const int32_t[]){4, 5, 6}, 3);
    assert_int_equal(tfl_variable_assign(v, iv), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_add(v, iv), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);

    /* An op reading the variable leaves no snapshot behind: a training-step-like frame
     * updates the variable in place. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *y = tfl_mul(ctx, v, x);
    tfl_tensor *m = tfl_matmul(ctx, tfl_reshape(ctx, x, 2, (const int64_t[]){1, 3}),
                               tfl_reshape(ctx, x, 2, (const int64_t[]){3, 1}), 0);
    assert_non_null(m);
    tfl_tensor *red = tfl_reduce_sum(ctx, v, 0, NULL, false);
    assert_int_equal(tfl_variable_assign_sub(v, y), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(y, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(red, TFL_DTYPE_FLOAT32, 30);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    /* Failed assigns leave the storage alone. */
    tfl_tensor *bad = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_int_equal(tfl_variable_assign(v, bad), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    tfl_tensor_release(bad);
    tfl_tensor_release(iv);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_assign_add_no_allocation(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    int64_t n = 256;
    tfl_tensor *z = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    tfl_tensor *v = tfl_variable_new(ctx, z, NULL);
    tfl_tensor_release(z);
    tfl_tensor *d = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    assert_non_null(v);
    assert_non_null(d);
    const void *p = tfl_tensor_data_ptr(v);

    /* Warm-up. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_variable_assign_add(v, d), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    tfl_alloc_stats s0, s1, smid;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    memset(&smid, 0, sizeof smid);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(tfl_variable_assign_add(v, d), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &smid), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);

    /* Inside the frame, after 100 calls: nothing new. */
    assert_int_equal(smid.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(smid.cache_hits, s0.cache_hits);
    assert_int_equal(smid.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(smid.live_tensors, s0.live_tensors);
    /* And after the pop. */
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.cache_hits, s0.cache_hits);
    assert_int_equal(s1.frees, s0.frees);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s1.live_tensors, s0.live_tensors);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    float out[256];
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    for (int i = 0; i < 256; i++)
        assert_true(out[i] == 101.0f);

    /* The same for assign_sub and assign, with no frame. */
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(tfl_variable_assign_sub(v, d), TFL_OK);
        assert_int_equal(tfl_variable_assign(v, d), TFL_OK);
    }
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.cache_hits, s0.cache_hits);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    for (int i = 0; i < 256; i++)
        assert_true(out[i] == 1.0f);
    tfl_tensor_release(d);
    tfl_tensor_release(v);
}

static void test_copy_on_write_read_snapshot(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2, 3}, 3, NULL);
    tfl_tensor *x = vec_f32(ctx, (const float[]){4, 5, 6}, 3);
    const void *p0 = tfl_tensor_data_ptr(v);

    tfl_tensor *s = tfl_variable_read(v);
    assert_non_null(s);
    assert_ptr_equal(tfl_tensor_data_ptr(s), p0); /* no copy at read time */
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);
    expect_shape(s, 1, (const int64_t[]){3});

    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);
    const void *p1 = tfl_tensor_data_ptr(v);
    assert_ptr_not_equal(p1, p0);
    assert_ptr_equal(tfl_tensor_data_ptr(s), p0);

    /* The snapshot no longer shares the variable's memory: the next assign is in place. */
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);

    tfl_tensor_release(s);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);

    /* A snapshot taken before assign_add / assign_sub. */
    s = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 4, 5, 6);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);
    tfl_tensor *s2 = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(s2, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(s, TFL_DTYPE_FLOAT32, 4, 5, 6);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);
    tfl_tensor_release(s);
    tfl_tensor_release(s2);
    const void *p2 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p2);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0);

    /* A frame-owned snapshot: the pop ends the sharing. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    s = tfl_variable_read(v);
    assert_non_null(s);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 0, 0, 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    const void *p3 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p3);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);

    /* A failed assign with a snapshot alive changes nothing. */
    s = tfl_variable_read(v);
    tfl_tensor *bad = vec_f32(ctx, (const float[]){1}, 1);
    assert_int_equal(tfl_variable_assign(v, bad), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_ptr_equal(tfl_tensor_data_ptr(v), tfl_tensor_data_ptr(s));
    tfl_tensor_release(bad);
    tfl_tensor_release(s);

    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_copy_on_write_views(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);
    tfl_tensor *x = tens(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){10, 20, 30, 40});
    const void *p0 = tfl_tensor_data_ptr(v);

    /* reshape */
    tfl_tensor *r = tfl_reshape(ctx, v, 1, (const int64_t[]){4});
    assert_non_null(r);
    assert_ptr_equal(tfl_tensor_data_ptr(r), p0); /* a view of the variable's memory */
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(r, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    const void *p1 = tfl_tensor_data_ptr(v);
    assert_ptr_not_equal(p1, p0);
    tfl_tensor_release(r);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 20, 40, 60, 80);

    /* transpose */
    tfl_tensor *t = tfl_transpose(ctx, v, NULL);
    assert_non_null(t);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(t, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    tfl_tensor_release(t);
    const void *p2 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p2);

    /* slice */
    tfl_tensor *sl = tfl_slice(ctx, v, (const int64_t[]){1, 0}, (const int64_t[]){1, 2});
    assert_non_null(sl);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(sl, TFL_DTYPE_FLOAT32, 0, 0);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    tfl_tensor_release(sl);
    const void *p3 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p3);

    /* A view of a snapshot keeps the snapshot's value too. */
    tfl_tensor *s = tfl_variable_read(v);
    tfl_tensor *rs = tfl_reshape(ctx, s, 1, (const int64_t[]){4});
    tfl_tensor_release(s);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(rs, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    expect_vals(v, TFL_DTYPE_FLOAT32, 20, 40, 60, 80);
    tfl_tensor_release(rs);

    expect_no_error(ctx);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

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

/* ---- collections ---------------------------------------------------------------------------- */

static void test_collections_membership(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);

    tfl_tensor *a = var_f32(ctx, (const float[]){1}, 1, "a");
    tfl_tensor *b = var_f32(ctx, (const float[]){1}, 1, "b");
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    tfl_tensor *nt = tfl_variable_new(
        ctx, t, &(tfl_variable_opts){.name = "nt", .flags = TFL_VAR_NOT_TRAINABLE});
    tfl_tensor *loc = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "loc",
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    tfl_tensor *locnt = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "locnt",
                             .flags = TFL_VAR_NOT_TRAINABLE,
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    tfl_tensor *two = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "two",
                             .collections = (const char *const[]){TFL_GLOBAL_VARIABLES, "mine"},
                             .n_collections = 2});
    assert_non_null(nt);
    assert_non_null(loc);
    assert_non_null(locnt);
    assert_non_null(two);

    tfl_tensor *out[16];
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 16), 4);
    assert_ptr_equal(out[0], a); /* in creation order */
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], nt);
    assert_ptr_equal(out[3], two);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, out, 16), 4);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], loc);
    assert_ptr_equal(out[3], two);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_LOCAL_VARIABLES, out, 16), 2);
    assert_ptr_equal(out[0], loc);
    assert_ptr_equal(out[1], locnt);
    assert_int_equal(tfl_collection_get(ctx, "mine", out, 16), 1);
    assert_ptr_equal(out[0], two);

    /* count / cap */
    tfl_tensor *sentinel = (tfl_tensor *)&out;
    for (int i = 0; i < 16; i++)
        out[i] = sentinel;
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 2), 4);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], sentinel);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 4);
    assert_int_equal(tfl_collection_get(ctx, "unknown", out, 16), 0);
    assert_int_equal(tfl_collection_get(ctx, NULL, out, 16), -1);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_collection_get(NULL, TFL_GLOBAL_VARIABLES, out, 16), -1);

    /* Releasing a variable removes it from every collection. */
    tfl_tensor_release(two);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 3);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 3);
    assert_int_equal(coll_count(ctx, "mine"), 0);
    tfl_tensor_release(loc);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 1);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 2);
    tfl_tensor_release(a);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 16), 2);
    assert_ptr_equal(out[0], b);
    assert_ptr_equal(out[1], nt);

    expect_no_error(ctx);
    tfl_tensor_release(b);
    tfl_tensor_release(nt);
    tfl_tensor_release(locnt);
    tfl_tensor_release(t);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);
}

static void test_collection_add(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    uint64_t live0 = live_tensors(ctx);
    tfl_tensor *a = var_f32(ctx, (const float[]){1}, 1, "a");
    tfl_tensor *b = var_f32(ctx, (const float[]){2}, 1, "b");
    assert_int_equal(tfl_collection_add(ctx, "losses", a), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "losses", b), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "losses", a), TFL_OK); /* twice: listed twice */
    tfl_tensor *out[8];
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, "losses", out, 8), 3);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], a);
    /* Adding to a built-in collection. */
    assert_int_equal(tfl_collection_add(ctx, TFL_LOCAL_VARIABLES, b), TFL_OK);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 1);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 2);

    /* Errors. */
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    assert_int_equal(tfl_collection_add(ctx, "losses", t), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_collection_add(ctx, "losses", NULL), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_collection_add(ctx, "", a), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_collection_add(ctx, NULL, a), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(coll_count(ctx, "losses"), 3);

    /* A variable of another context. */
    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    tfl_tensor *ov = var_f32(other, (const float[]){1}, 1, "o");
    assert_int_equal(tfl_collection_add(ctx, "losses", ov), TFL_MISUSE);
    tfl_ctx_clear_error(ctx);
    tfl_ctx_clear_error(other);
    assert_int_equal(coll_count(ctx, "losses"), 3);
    tfl_tensor_release(ov);
    tfl_ctx_free(other);

    /* The collection does not keep its variables alive. */
    tfl_tensor_release(a);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, "losses", out, 8), 1);
    assert_ptr_equal(out[0], b);
    tfl_tensor_release(b);
    assert_int_equal(coll_count(ctx, "losses"), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), live0);
}

/* ---- placement ------------------------------------------------------------------------------ */

static void test_placement_soft(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "CPU:0"});
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor_release(v);
    v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "/device:CPU:0"});
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor_release(v);

    /* Not a device name. */
    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "banana"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "banana");

    if (has_device(ctx, "GPU:0")) {
        tfl_tensor_release(t);
        skip();
    }
    /* Soft placement: a GPU:0 scope without a GPU puts the variable on the CPU. */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    v = tfl_variable_new(ctx, t, NULL);
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor *w =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2}, NULL, NULL);
    assert_non_null(w);
    assert_string_equal(tfl_tensor_device(w), "CPU:0");
    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_string_equal(tfl_tensor_device(g), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    /* opts.device names a missing GPU: soft placement too. */
    tfl_tensor *o = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "GPU:0"});
    assert_non_null(o);
    assert_string_equal(tfl_tensor_device(o), "CPU:0");
    assert_int_equal(tfl_variable_assign_add(o, t), TFL_OK);
    expect_vals(o, TFL_DTYPE_FLOAT32, 2, 4);
    expect_no_error(ctx);

    tfl_tensor_release(o);
    tfl_tensor_release(g);
    tfl_tensor_release(w);
    tfl_tensor_release(v);
    tfl_tensor_release(t);
}

static void test_placement_strict(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.strict_placement = true}, NULL);
    assert_non_null(ctx);
    if (has_device(ctx, "GPU:0")) {
        tfl_ctx_free(ctx);
        skip();
    }
    uint64_t live0 = live_tensors(ctx);
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    assert_null(tfl_variable_new(ctx, t, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification", "GPU:0");
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2}, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification");
    assert_null(tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification");
    assert_int_equal(live_tensors(ctx), live0 + 1);
    /* opts.device wins over the scope. */
    tfl_tensor *c = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "CPU:0"});
    assert_non_null(c);
    assert_string_equal(tfl_tensor_device(c), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);

    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "GPU:0"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification", "GPU:0");
    /* get_variable did not register the failed name. */
    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_string_equal(tfl_tensor_device(g), "CPU:0");
    expect_no_error(ctx);

    tfl_tensor_release(g);
    tfl_tensor_release(c);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), live0);
    tfl_ctx_free(ctx);
}

static void test_placement_logging(void **state)
{
    (void)state;
    log_capture *cap = calloc(1, sizeof *cap);
    assert_non_null(cap);
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.log_placement = true, .log_fn = capture_log, .log_user = cap}, NULL);
    assert_non_null(ctx);
    tfl_tensor *t =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, (const float[]){1, 2, 3, 4});
    int n0 = count_lines(cap, "op VarHandleOp on CPU:0");
    assert_int_equal(n0, 0);
    tfl_tensor *v = tfl_variable_new(ctx, t, NULL);
    assert_non_null(v);
    assert_int_equal(count_lines(cap, "op VarHandleOp on CPU:0"), 1);

    int a0 = count_lines(cap, "op AssignVariableOp on CPU:0");
    assert_int_equal(tfl_variable_assign(v, t), TFL_OK);
    assert_true(count_lines(cap, "op AssignVariableOp on CPU:0") > a0);

    int r0 = count_lines(cap, "op ReadVariableOp on CPU:0");
    tfl_tensor *s = tfl_variable_read(v);
    assert_non_null(s);
    assert_true(count_lines(cap, "op ReadVariableOp on CPU:0") > r0);

    tfl_tensor *m = tfl_matmul(ctx, v, t, 0);
    assert_non_null(m);
    assert_int_equal(count_lines(cap, "op MatMul on CPU:0"), 1);

    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_int_equal(count_lines(cap, "op VarHandleOp on CPU:0"), 2);

    tfl_tensor_release(g);
    tfl_tensor_release(m);
    tfl_tensor_release(s);
    tfl_tensor_release(v);
    tfl_tensor_release(t);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    free(cap);
}

/* ---- repr ----------------------------------------------------------------------------------- */

static void test_format(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2},
                             (const float[]){1, 2, 3, 4}, &(tfl_variable_opts){.name = "Mark"});
    char buf[256];
    const char *want =
        "<tfl.Variable 'Mark:0' shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>";
    int len = tfl_tensor_format(v, buf, sizeof buf, NULL);
    assert_string_equal(buf, want);
    assert_int_equal(len, (int)strlen(want));

    /* After an assign the repr shows the new value; a snapshot prints as a tensor. */
    tfl_tensor *s = tfl_variable_read(v);
    tfl_tensor *x =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, (const float[]){5, 6, 7, 8});
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    tfl_tensor_format(v, buf, sizeof buf, NULL);
    assert_string_equal(
        buf, "<tfl.Variable 'Mark:0' shape=(2, 2) dtype=float32 device=CPU:0 [[5, 6], [7, 8]]>");
    tfl_tensor_format(s, buf, sizeof buf, NULL);
    assert_string_equal(buf,
                        "<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>");

    /* Default name, int32, rank 1. */
    tfl_tensor *d =
        var_from(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){3}, (const int32_t[]){1, -2, 3}, NULL);
    tfl_tensor_format(d, buf, sizeof buf, NULL);
    assert_string_equal(buf, "<tfl.Variable 'Variable:0' shape=(3,) dtype=int32 device=CPU:0 "
                             "[1, -2, 3]>");

    /* Cut output is NUL-terminated and the full length is returned. */
    char small[10];
    assert_int_equal(tfl_tensor_format(v, small, sizeof small, NULL), (int)strlen(want));
    assert_string_equal(small, "<tfl.Vari");

    tfl_tensor_release(d);
    tfl_tensor_release(x);
    tfl_tensor_release(s);
    tfl_tensor_release(v);
}

/* ---- more dtypes, aliasing, strided values ------------------------------------------------- */

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

static void test_assign_aliasing_and_strided_values(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);

    /* A value that is a snapshot of the variable itself. */
    tfl_tensor *s = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_add(v, s), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, 4, 6, 8);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    tfl_tensor_release(s);

    /* A non-contiguous value: the transpose of the variable itself. */
    tfl_tensor *tr = tfl_transpose(ctx, v, NULL);
    assert_non_null(tr);
    assert_int_equal(tfl_variable_assign(v, tr), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, 6, 4, 8);
    expect_vals(tr, TFL_DTYPE_FLOAT32, 2, 6, 4, 8); /* the old value, transposed */
    tfl_tensor_release(tr);

    /* A transposed plain tensor. */
    tfl_tensor *x = tens(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){10, 20, 30, 40});
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, xt), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 30, 20, 40);
    assert_int_equal(tfl_variable_assign_sub(v, xt), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0, 0);
    /* A strided slice converted from int32. */
    tfl_tensor *big = tens(ctx, TFL_DTYPE_INT32, 2, (const int64_t[]){3, 3},
                           (const int32_t[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    tfl_tensor *sl = tfl_slice(ctx, big, (const int64_t[]){1, 1}, (const int64_t[]){2, 2});
    assert_int_equal(tfl_variable_assign_add(v, sl), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 5, 6, 8, 9);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    /* A variable made from a non-contiguous view is a plain contiguous copy. */
    tfl_tensor *w = tfl_variable_new(ctx, xt, NULL);
    assert_non_null(w);
    assert_true(tfl_tensor_is_contiguous(w));
    expect_vals(w, TFL_DTYPE_FLOAT32, 10, 30, 20, 40);
    /* ... and assigning it does not write through into x. */
    assert_int_equal(tfl_variable_assign_add(w, w), TFL_OK);
    expect_vals(x, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    expect_vals(w, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);

    /* retain / release: the variable lives until its last reference. */
    assert_ptr_equal(tfl_tensor_retain(w), w);
    tfl_tensor_release(w);
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, w));
    expect_vals(w, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);
    tfl_tensor_release(w);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 1);

    expect_no_error(ctx);
    tfl_tensor_release(sl);
    tfl_tensor_release(big);
    tfl_tensor_release(xt);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
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

/* ---- two contexts, allocation failures ------------------------------------------------------ */

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

typedef struct budget {
    long left; /* allocations still allowed; < 0: unlimited */
    long failed;
} budget;

static void *budget_alloc(void *user, size_t bytes, size_t alignment)
{
    budget *b = user;
    if (b->left == 0) {
        b->failed++;
        return NULL;
    }
    if (b->left > 0) b->left--;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return aligned_alloc(alignment, rounded ? rounded : alignment);
}

static void budget_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

/* Runs the variable life cycle with the k-th allocation failing (and every later one): every
 * call either works or fails cleanly, a failed assign changes nothing, nothing leaks. */
static void test_allocation_failures(void **state)
{
    (void)state;
    bool completed = false;
    for (long k = 0; k < 400 && !completed; k++) {
        budget b = {.left = -1, .failed = 0};
        tfl_ctx *ctx = tfl_ctx_new(
            &(tfl_ctx_opts){.alloc_fn = budget_alloc, .free_fn = budget_free, .alloc_user = &b},
            NULL);
        assert_non_null(ctx);
        int64_t n = 4;
        tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, (const float[]){1, 1, 1, 1});
        tfl_tensor *init =
            tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, (const float[]){1, 2, 3, 4});
        assert_non_null(x);
        assert_non_null(init);
        tfl_alloc_empty_cache(ctx);
        b.left = k;

        tfl_tensor *v = tfl_variable_new(ctx, init, &(tfl_variable_opts){.name = "v"});
        tfl_tensor *s = NULL, *g = NULL, *d = NULL;
        if (!v) {
            assert_true(tfl_ctx_status(ctx) != TFL_OK);
            tfl_ctx_clear_error(ctx);
        } else {
            s = tfl_variable_read(v);
            if (!s) {
                assert_true(tfl_ctx_status(ctx) != TFL_OK);
                tfl_ctx_clear_error(ctx);
            }
            const void *p = tfl_tensor_data_ptr(v);
            tfl_status st = tfl_variable_assign_add(v, x);
            if (st != TFL_OK) {
                /* unchanged, snapshot too */
                assert_int_equal(tfl_ctx_status(ctx), st);
                tfl_ctx_clear_error(ctx);
                assert_ptr_equal(tfl_tensor_data_ptr(v), p);
                float o[4];
                assert_int_equal(tfl_tensor_to_host(v, o, sizeof o), TFL_OK);
                assert_true(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == 4);
            } else {
                float o[4];
                assert_int_equal(tfl_tensor_to_host(v, o, sizeof o), TFL_OK);
                assert_true(o[0] == 2 && o[1] == 3 && o[2] == 4 && o[3] == 5);
            }
            if (s) {
                float o[4];
                assert_int_equal(tfl_tensor_to_host(s, o, sizeof o), TFL_OK);
                assert_true(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == 4);
            }
            if (tfl_collection_add(ctx, "custom", v) != TFL_OK) tfl_ctx_clear_error(ctx);
        }
        if (tfl_name_scope_push(ctx, "scope") == TFL_OK) {
            tfl_initializer z = tfl_init_zeros();
            g = tfl_get_variable(ctx, "g", 1, &n, 0, &z, NULL);
            if (!g) tfl_ctx_clear_error(ctx);
            d = tfl_variable_new(ctx, init,
                                 &(tfl_variable_opts){.name = "d", .flags = TFL_VAR_DEFERRED});
            if (!d) tfl_ctx_clear_error(ctx);
            if (tfl_variables_initialize(ctx, NULL, 0) != TFL_OK) tfl_ctx_clear_error(ctx);
            assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
        } else {
            tfl_ctx_clear_error(ctx);
        }
        completed = b.failed == 0;
        b.left = -1;
        tfl_tensor_release(s);
        tfl_tensor_release(v);
        tfl_tensor_release(g);
        tfl_tensor_release(d);
        tfl_tensor_release(x);
        tfl_tensor_release(init);
        assert_int_equal(live_tensors(ctx), 0);
        assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
        assert_int_equal(tfl_collection_get(ctx, "custom", NULL, 0), 0);
        tfl_ctx_clear_error(ctx);
        tfl_ctx_free(ctx);
    }
    assert_true(completed);
}

/* ---- context teardown ----------------------------------------------------------------------- */

static void test_ctx_free_with_live_variables(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = "alive"});
    tfl_tensor *d = tfl_variable_new(ctx, t, &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    tfl_tensor *g = tfl_get_variable(ctx, "g", 2, (const int64_t[]){3, 3}, 0, NULL, NULL);
    tfl_tensor *g2 = tfl_get_variable(ctx, "g2", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(v);
    assert_non_null(d);
    assert_non_null(g);
    assert_non_null(g2);
    tfl_tensor_release(g2); /* released: out of the store */
    assert_int_equal(tfl_collection_add(ctx, "custom", v), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "custom", g), TFL_OK);
    tfl_tensor *snap = tfl_variable_read(v); /* caller-owned snapshot */
    assert_non_null(snap);
    assert_int_equal(tfl_variable_assign_add(v, t), TFL_OK); /* copy-on-write */
    assert_int_equal(tfl_name_scope_push(ctx, "open"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *in_frame = tfl_variable_new(ctx, t, NULL);
    assert_non_null(in_frame);
    assert_non_null(tfl_variable_read(in_frame));
    assert_non_null(tfl_reshape(ctx, v, 2, (const int64_t[]){1, 2}));
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    /* Everything is freed with the context; the sanitizer build checks for leaks. */
    tfl_ctx_free(ctx);
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
        cmocka_unit_test_setup_teardown(test_assign_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_add_no_allocation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_on_write_read_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_on_write_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uninitialized_reads_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initialize_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variables_initialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_uninitialized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_scopes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_create_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_tensor_initializer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_variable_store_does_not_keep_alive, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_collections_membership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collection_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placement_soft, setup, teardown),
        cmocka_unit_test(test_placement_strict),
        cmocka_unit_test(test_placement_logging),
        cmocka_unit_test_setup_teardown(test_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_half_int64_complex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_aliasing_and_strided_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_from_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_name_limits, setup, teardown),
        cmocka_unit_test(test_two_contexts_are_independent),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_ctx_free_with_live_variables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
