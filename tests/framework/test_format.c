/* test_format.c: tests of tfl_tensor_format and tfl_tensor_format_values (tapeflow/tensor.h):
 * exact reprs per dtype and rank, float style, summarising, options, the snprintf contract. */
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

/* Every test runs inside one frame, popped by the teardown. */
static int setup_frame(void **state)
{
    if (setup(state) != 0) return -1;
    fixture *f = *state;
    if (tfl_frame_push(f->ctx) != TFL_OK) {
        tfl_ctx_free(f->ctx);
        free(f);
        *state = NULL;
        return -1;
    }
    return 0;
}

/* Pops the setup's frame, then runs the shared checks (no frame left open, no error set, no
 * tensor alive). */
static int teardown_frame(void **state)
{
    fixture *f = *state;
    tfl_status pop = tfl_frame_pop(f->ctx);
    int rc = teardown(state);
    assert_int_equal(pop, TFL_OK);
    return rc;
}

/* The full repr of t, which must fit 16 KiB; checks the return value is its length. */
static const char *repr(const tfl_tensor *t, const tfl_format_opts *opts)
{
    static char buf[16384];
    assert_non_null(t);
    memset(buf, 'X', sizeof buf);
    int n = tfl_tensor_format(t, buf, sizeof buf, opts);
    assert_true(n >= 0 && n < (int)sizeof buf);
    assert_int_equal(strlen(buf), n);
    return buf;
}

/* Only the values part. */
static const char *values(const tfl_tensor *t, const tfl_format_opts *opts)
{
    static char buf[16384];
    assert_non_null(t);
    memset(buf, 'X', sizeof buf);
    int n = tfl_tensor_format_values(t, buf, sizeof buf, opts);
    assert_true(n >= 0 && n < (int)sizeof buf);
    assert_int_equal(strlen(buf), n);
    return buf;
}

static tfl_tensor *vec_f64(tfl_ctx *ctx, const double *v, int64_t n)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
}

static const float k_m22[4] = {1, 2, 3, 4};

/* ---- exact reprs -------------------------------------------------------------------------- */

static void test_matrix_float32(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, k_m22);
    assert_string_equal(repr(t, NULL),
                        "<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>");
    assert_string_equal(values(t, NULL), "[[1, 2], [3, 4]]");
    /* All-zero options are the defaults. */
    assert_string_equal(repr(t, &(tfl_format_opts){0}),
                        "<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>");
}

static void test_scalar_int32(void **state)
{
    fixture *f = *state;
    assert_string_equal(repr(tfl_scalar_i32(f->ctx, 5), NULL),
                        "<tfl.Tensor shape=() dtype=int32 device=CPU:0 5>");
    assert_string_equal(values(tfl_scalar_i32(f->ctx, -3), NULL), "-3");
    assert_string_equal(repr(tfl_scalar_i64(f->ctx, INT64_C(1) << 40), NULL),
                        "<tfl.Tensor shape=() dtype=int64 device=CPU:0 1099511627776>");
    assert_string_equal(values(tfl_scalar_f64(f->ctx, 0.25), NULL), "0.25");
    assert_string_equal(values(tfl_scalar_i32(f->ctx, INT32_MIN), NULL), "-2147483648");
    assert_string_equal(values(tfl_scalar_i64(f->ctx, INT64_MIN), NULL), "-9223372036854775808");
    assert_string_equal(values(tfl_scalar_i64(f->ctx, INT64_MAX), NULL), "9223372036854775807");
    assert_string_equal(values(tfl_scalar_f32(f->ctx, 0.1f), NULL), "0.1");
}

static void test_vector_and_rank3(void **state)
{
    fixture *f = *state;
    int64_t n = 3;
    tfl_tensor *v = tfl_tensor_new(f->ctx, TFL_DTYPE_INT32, 1, &n, (const int32_t[]){1, 2, 3});
    assert_string_equal(repr(v, NULL),
                        "<tfl.Tensor shape=(3,) dtype=int32 device=CPU:0 [1, 2, 3]>");

    tfl_tensor *r = tfl_reshape(f->ctx, tfl_range(f->ctx, TFL_DTYPE_INT64, 0, 8, 1), 3,
                                (const int64_t[]){2, 2, 2});
    assert_string_equal(repr(r, NULL), "<tfl.Tensor shape=(2, 2, 2) dtype=int64 device=CPU:0 "
                                       "[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>");

    tfl_tensor *m23 = tfl_reshape(f->ctx, tfl_range(f->ctx, TFL_DTYPE_INT32, 1, 7, 1), 2,
                                  (const int64_t[]){2, 3});
    assert_string_equal(repr(m23, NULL), "<tfl.Tensor shape=(2, 3) dtype=int32 device=CPU:0 "
                                         "[[1, 2, 3], [4, 5, 6]]>");

    tfl_tensor *one = tfl_ones(f->ctx, TFL_DTYPE_FLOAT64, 2, (const int64_t[]){1, 1});
    assert_string_equal(repr(one, NULL),
                        "<tfl.Tensor shape=(1, 1) dtype=float64 device=CPU:0 [[1]]>");
}

static void test_float_style(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = vec_f32(f->ctx, (const float[]){0.5f, 1.25f, 1e10f}, 3);
    assert_string_equal(values(t, NULL), "[0.5, 1.25, 1e+10]");
    t = vec_f64(f->ctx, (const double[]){-0.5, 100, 1e-5, 123456789.0, 1.0 / 3.0}, 5);
    assert_string_equal(values(t, NULL), "[-0.5, 100, 1e-05, 1.23457e+08, 0.333333]");
    assert_string_equal(repr(t, NULL), "<tfl.Tensor shape=(5,) dtype=float64 device=CPU:0 "
                                       "[-0.5, 100, 1e-05, 1.23457e+08, 0.333333]>");
}

static void test_nan_and_inf(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = vec_f32(f->ctx, (const float[]){NAN, INFINITY, -INFINITY, 0}, 4);
    assert_string_equal(values(t, NULL), "[nan, inf, -inf, 0]");
    t = vec_f64(f->ctx, (const double[]){-INFINITY, NAN, -NAN}, 3);
    assert_string_equal(values(t, NULL), "[-inf, nan, nan]"); /* NaN's sign is not shown */
}

static void test_bool(void **state)
{
    fixture *f = *state;
    int64_t n = 2;
    tfl_tensor *t = tfl_tensor_new(f->ctx, TFL_DTYPE_BOOL, 1, &n, (const uint8_t[]){1, 0});
    assert_string_equal(repr(t, NULL),
                        "<tfl.Tensor shape=(2,) dtype=bool device=CPU:0 [True, False]>");
    assert_string_equal(values(tfl_scalar_bool(f->ctx, true), NULL), "True");
    assert_string_equal(values(tfl_scalar_bool(f->ctx, false), NULL), "False");
}

static void test_complex(void **state)
{
    fixture *f = *state;
    int64_t n = 2;
    tfl_tensor *c =
        tfl_tensor_new(f->ctx, TFL_DTYPE_COMPLEX64, 1, &n, (const float[]){5, 4, 6, -5});
    assert_string_equal(values(c, NULL), "[(5+4j), (6-5j)]");
    assert_string_equal(repr(c, NULL),
                        "<tfl.Tensor shape=(2,) dtype=complex64 device=CPU:0 [(5+4j), (6-5j)]>");
    tfl_tensor *d =
        tfl_tensor_new(f->ctx, TFL_DTYPE_COMPLEX128, 1, &n, (const double[]){1.5, 2.5, -1, -2});
    assert_string_equal(values(d, NULL), "[(1.5+2.5j), (-1-2j)]");
}

static void test_half_precision(void **state)
{
    fixture *f = *state;
    int64_t n = 2;
    tfl_tensor *h =
        tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT16, 1, &n, (const uint16_t[]){0x3E00, 0xC000});
    assert_string_equal(repr(h, NULL),
                        "<tfl.Tensor shape=(2,) dtype=float16 device=CPU:0 [1.5, -2]>");
    tfl_tensor *b =
        tfl_tensor_new(f->ctx, TFL_DTYPE_BFLOAT16, 1, &n, (const uint16_t[]){0x3F80, 0x4040});
    assert_string_equal(values(b, NULL), "[1, 3]");
}

static void test_empty(void **state)
{
    fixture *f = *state;
    int64_t n = 0;
    tfl_tensor *t = tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 1, &n, NULL);
    assert_string_equal(repr(t, NULL), "<tfl.Tensor shape=(0,) dtype=float32 device=CPU:0 []>");
    assert_string_equal(values(t, NULL), "[]");
}

static void test_non_contiguous_view(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, k_m22);
    tfl_tensor *tt = tfl_transpose(f->ctx, t, NULL);
    assert_non_null(tt);
    assert_string_equal(repr(tt, NULL),
                        "<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 3], [2, 4]]>");
    tfl_tensor *s = tfl_slice(f->ctx, t, (const int64_t[]){0, 1}, (const int64_t[]){2, 1});
    assert_string_equal(values(s, NULL), "[[2], [4]]");
}

/* ---- summarising and options -------------------------------------------------------------- */

static void test_summarised(void **state)
{
    fixture *f = *state;
    tfl_tensor *big = tfl_range(f->ctx, TFL_DTYPE_INT32, 0, 2000, 1);
    assert_string_equal(values(big, NULL), "[0, 1, 2, ..., 1997, 1998, 1999]");
    assert_string_equal(repr(big, NULL), "<tfl.Tensor shape=(2000,) dtype=int32 device=CPU:0 "
                                         "[0, 1, 2, ..., 1997, 1998, 1999]>");
    tfl_tensor *fbig = tfl_range(f->ctx, TFL_DTYPE_FLOAT32, 0, 2000, 1);
    assert_string_equal(values(fbig, NULL), "[0, 1, 2, ..., 1997, 1998, 1999]");

    /* The threshold is "above this many": 1000 elements are printed in full, 1001 are not. */
    tfl_tensor *k1000 = tfl_range(f->ctx, TFL_DTYPE_INT32, 0, 1000, 1);
    const char *s = values(k1000, NULL);
    assert_null(strstr(s, "..."));
    assert_non_null(strstr(s, ", 500, 501, "));
    assert_true(strncmp(s, "[0, 1, 2, 3, ", 13) == 0);
    tfl_tensor *k1001 = tfl_range(f->ctx, TFL_DTYPE_INT32, 0, 1001, 1);
    assert_string_equal(values(k1001, NULL), "[0, 1, 2, ..., 998, 999, 1000]");
}

static void test_threshold_and_edge_items(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = tfl_range(f->ctx, TFL_DTYPE_INT32, 0, 10, 1);
    assert_string_equal(values(t, NULL), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
    assert_string_equal(values(t, &(tfl_format_opts){.threshold = 5, .edge_items = 2}),
                        "[0, 1, ..., 8, 9]");
    assert_string_equal(values(t, &(tfl_format_opts){.threshold = 5}), "[0, 1, 2, ..., 7, 8, 9]");
    assert_string_equal(values(t, &(tfl_format_opts){.threshold = 10}),
                        "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
}

static void test_precision(void **state)
{
    fixture *f = *state;
    tfl_tensor *t = vec_f64(f->ctx, (const double[]){3.14159265358979, 1.0 / 3.0}, 2);
    assert_string_equal(values(t, NULL), "[3.14159, 0.333333]");
    assert_string_equal(values(t, &(tfl_format_opts){.precision = 3}), "[3.14, 0.333]");
    assert_string_equal(values(t, &(tfl_format_opts){.precision = 10}),
                        "[3.141592654, 0.3333333333]");
    assert_string_equal(repr(t, &(tfl_format_opts){.precision = 2}),
                        "<tfl.Tensor shape=(2,) dtype=float64 device=CPU:0 [3.1, 0.33]>");
    /* Integers do not care. */
    tfl_tensor *i = tfl_scalar_i32(f->ctx, 123456789);
    assert_string_equal(values(i, &(tfl_format_opts){.precision = 2}), "123456789");
}

/* ---- the snprintf contract ---------------------------------------------------------------- */

static void test_snprintf_contract(void **state)
{
    fixture *f = *state;
    const char *full = "<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>";
    const int len = (int)strlen(full);
    tfl_tensor *t = tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, k_m22);
    assert_non_null(t);

    char small[9];
    memset(small, 'X', sizeof small);
    assert_int_equal(tfl_tensor_format(t, small, 8, NULL), len);
    assert_int_equal(small[7], '\0');
    assert_int_equal(small[8], 'X'); /* nothing past size */
    assert_string_equal(small, "<tfl.Te");

    char one[2] = {'X', 'X'};
    assert_int_equal(tfl_tensor_format(t, one, 1, NULL), len);
    assert_int_equal(one[0], '\0');
    assert_int_equal(one[1], 'X');

    assert_int_equal(tfl_tensor_format(t, NULL, 0, NULL), len);

    char exact[128];
    memset(exact, 'X', sizeof exact);
    assert_int_equal(tfl_tensor_format(t, exact, (size_t)len, NULL), len); /* one short */
    assert_int_equal(exact[len - 1], '\0');
    assert_true(strncmp(exact, full, (size_t)len - 1) == 0);
    memset(exact, 'X', sizeof exact);
    assert_int_equal(tfl_tensor_format(t, exact, (size_t)len + 1, NULL), len);
    assert_string_equal(exact, full);

    /* format_values has the same contract. */
    char vals[6];
    memset(vals, 'X', sizeof vals);
    assert_int_equal(tfl_tensor_format_values(t, vals, 5, NULL), (int)strlen("[[1, 2], [3, 4]]"));
    assert_string_equal(vals, "[[1,");
    assert_int_equal(vals[5], 'X');
    assert_int_equal(tfl_tensor_format_values(t, NULL, 0, NULL), 16);

    /* A summarised repr that does not fit still reports its full length. */
    tfl_tensor *big = tfl_range(f->ctx, TFL_DTYPE_INT32, 0, 2000, 1);
    const char *want = "[0, 1, 2, ..., 1997, 1998, 1999]";
    char cut[10];
    assert_int_equal(tfl_tensor_format_values(big, cut, sizeof cut, NULL), (int)strlen(want));
    assert_string_equal(cut, "[0, 1, 2,");
}

static void test_null_tensor(void **state)
{
    (void)state;
    char buf[32] = "untouched";
    assert_int_equal(tfl_tensor_format(NULL, buf, sizeof buf, NULL), -1);
    assert_int_equal(tfl_tensor_format_values(NULL, buf, sizeof buf, NULL), -1);
    assert_int_equal(tfl_tensor_format(NULL, NULL, 0, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matrix_float32, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_scalar_int32, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_vector_and_rank3, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_float_style, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_nan_and_inf, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_bool, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_complex, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_half_precision, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_empty, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_non_contiguous_view, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_summarised, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_threshold_and_edge_items, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_precision, setup_frame, teardown_frame),
        cmocka_unit_test_setup_teardown(test_snprintf_contract, setup_frame, teardown_frame),
        cmocka_unit_test(test_null_tensor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
