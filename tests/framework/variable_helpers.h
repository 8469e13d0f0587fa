/* variable_helpers.h: header-only helpers shared by the variable tests (test_var_*.c): the kept
 * error (expect_error, expect_no_error), a tensor's values and shape (expect_vals, expect_shape),
 * collection membership (coll_count, coll_has), and small constructors of tensors and variables
 * from host data (tens, var_from, var_f32, vec_i32, vec_f64). */
#ifndef TFL_VARIABLE_HELPERS_H
#define TFL_VARIABLE_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* Expects the kept error to have `code` and a message containing every fragment, then clears
 * it. Use: expect_error(ctx, TFL_INVALID_ARGUMENT, "fragment", "another"). */
static inline void expect_error_(tfl_ctx *ctx, tfl_status code, int line, const char *const *frags)
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

static inline void expect_no_error_(tfl_ctx *ctx, int line)
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
static inline void expect_vals_(const tfl_tensor *t, tfl_dtype dtype, const double *want, int64_t n,
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

static inline void expect_shape(const tfl_tensor *t, int rank, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_rank(t), rank);
    const int64_t *s = tfl_tensor_shape(t);
    if (rank > 0) assert_non_null(s);
    for (int i = 0; i < rank; i++)
        assert_int_equal(s[i], shape[i]);
}

static inline int64_t coll_count(tfl_ctx *ctx, const char *name)
{
    return tfl_collection_get(ctx, name, NULL, 0);
}

/* True when v is among the members of the collection. */
static inline bool coll_has(tfl_ctx *ctx, const char *name, const tfl_tensor *v)
{
    tfl_tensor *out[64];
    int64_t n = tfl_collection_get(ctx, name, out, 64);
    assert_true(n >= 0 && n <= 64);
    for (int64_t i = 0; i < n; i++)
        if (out[i] == v) return true;
    return false;
}

/* A tensor from host data (the caller's when no frame is open). */
static inline tfl_tensor *tens(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                               const void *data)
{
    tfl_tensor *t = tfl_tensor_new(ctx, dtype, rank, shape, data);
    assert_non_null(t);
    return t;
}

/* A variable made from host data through a temporary tensor (released when no frame owns it). */
static inline tfl_tensor *var_from(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
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

static inline tfl_tensor *var_f32(tfl_ctx *ctx, const float *data, int64_t n, const char *name)
{
    tfl_variable_opts o = {.name = name};
    return var_from(ctx, TFL_DTYPE_FLOAT32, 1, &n, data, &o);
}

static inline tfl_tensor *vec_i32(tfl_ctx *ctx, const int32_t *v, int64_t n)
{
    return tens(ctx, TFL_DTYPE_INT32, 1, &n, v);
}

static inline tfl_tensor *vec_f64(tfl_ctx *ctx, const double *v, int64_t n)
{
    return tens(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
}

#endif /* TFL_VARIABLE_HELPERS_H */
