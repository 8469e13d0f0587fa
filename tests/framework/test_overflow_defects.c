/*
 * test_overflow_defects.c: the defects of issue 13 that wrapped a size or took an option
 * without a word, one test each (each failed, or crashed, before its fix), plus the option
 * structs of the framework checked field by field and device names bounded by the number
 * of devices a context can have.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#define S(...) ((const int64_t[]){__VA_ARGS__})

static int setup(void **state)
{
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    *state = ctx;
    return ctx ? 0 : -1;
}

static int teardown(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_alloc_stats st;
    bool leaked = tfl_alloc_stats_get(ctx, NULL, &st) != TFL_OK || st.live_tensors != 0;
    if (leaked)
        print_error("a test left %llu tensor(s) alive\n", (unsigned long long)st.live_tensors);
    tfl_ctx_free(ctx);
    return leaked ? -1 : 0; /* every test releases what it made */
}

/* The kept error is `code` with `fragment` in its message; then it is cleared. */
static void expect_error(tfl_ctx *ctx, tfl_status code, const char *fragment)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code || !strstr(e.message, fragment))
        fail_msg("expected %s with '%s', got %s '%s'", tfl_status_name(code), fragment,
                 tfl_status_name(e.code), e.message);
    tfl_ctx_clear_error(ctx);
}

static uint64_t live(tfl_ctx *ctx)
{
    tfl_alloc_stats st;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &st), TFL_OK);
    return st.live_tensors;
}

/* Defect 1: begin + size wrapped in Slice's bounds check: a (2, 3) tensor gave a view of
 * shape (INT64_MAX, 1) with OK, and reading it crashed. */
static void test_slice_size_near_int64_max(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *a =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), (const float[]){1, 2, 3, 4, 5, 6});
    uint64_t n = live(ctx);
    assert_null(tfl_slice(ctx, a, S(1, 1), S(INT64_MAX, 1)));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Slice: out of bounds on axis 0: begin 1, size "
                 "9223372036854775807 for dimension 2");
    assert_null(tfl_slice(ctx, a, S(0, 2), S(1, INT64_MAX - 1)));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Slice: out of bounds on axis 1: begin 2");
    assert_null(tfl_slice(ctx, a, S(INT64_MIN, 0), S(-1, 1)));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "begin -9223372036854775808");
    assert_int_equal(live(ctx), n);
    /* the bounds themselves still work: the last row, to the end */
    tfl_tensor *s = tfl_slice(ctx, a, S(1, 1), S(1, -1));
    assert_non_null(s);
    double v;
    assert_int_equal(tfl_tensor_get(s, 1, &v), TFL_OK);
    assert_true(v == 6.0);
    tfl_tensor_release(s);
    tfl_tensor_release(a);
}

/* Defect 2: OneHot's output allocation wrapped its byte count (segfault): the shared
 * internal allocation path now checks element and byte counts for every op. */
static void test_one_hot_huge_depth(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *idx = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, S(2), (const int32_t[]){0, 1});
    tfl_alloc_stats before, after;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &before), TFL_OK);
    assert_null(tfl_one_hot(ctx, idx, INT64_C(1) << 62, 1, 0, TFL_DTYPE_FLOAT32));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "OneHot: shape (2, 4611686018427387904) has more than "
                 "INT64_MAX elements");
    /* one index: the element count fits, the bytes do not */
    tfl_tensor *one = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, S(1), (const int32_t[]){0});
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &before), TFL_OK);
    assert_null(tfl_one_hot(ctx, one, INT64_C(1) << 62, 1, 0, TFL_DTYPE_FLOAT64));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "OneHot: 4611686018427387904 elements of float64 need "
                 "more than 9223372036854775807 bytes (PTRDIFF_MAX)");
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &after), TFL_OK);
    assert_int_equal(after.live_tensors, before.live_tensors);
    assert_int_equal(after.bytes_in_use, before.bytes_in_use);
    assert_int_equal(after.fresh_allocs, before.fresh_allocs);
    tfl_tensor_release(one);
    tfl_tensor_release(idx);
}

/* Defect 3: Reshape's element product wrapped: one element to (INT64_MAX, INT64_MAX) was
 * accepted with numel 1. */
static void test_reshape_product_wraps(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, S(1));
    assert_null(tfl_reshape(ctx, x, 2, S(INT64_MAX, INT64_MAX)));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Reshape: shape (9223372036854775807, "
                 "9223372036854775807) has more than INT64_MAX elements");
    /* 2^64 + 1 wraps to 1 too */
    assert_null(tfl_reshape(ctx, x, 3, S(INT64_C(1) << 32, INT64_C(1) << 32, 1)));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "has more than INT64_MAX elements");
    assert_null(tfl_reshape(ctx, x, 2, S(-1, INT64_MIN)));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Reshape: dimension 1 is negative (-9223372036854775808)");
    tfl_tensor *ok = tfl_reshape(ctx, x, 3, S(1, -1, 1));
    assert_non_null(ok);
    assert_int_equal(tfl_tensor_numel(ok), 1);
    tfl_tensor_release(ok);
    tfl_tensor_release(x);
}

/* Defect 4: Range's count was a double cast to int64: 1e30 elements gave a negative shape. */
static void test_range_count(void **state)
{
    tfl_ctx *ctx = *state;
    assert_null(tfl_range(ctx, TFL_DTYPE_INT64, 0, 1e30, 1));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Range: start (0) and limit (1e+30) must be "
                 "representable in int64");
    assert_null(tfl_range(ctx, TFL_DTYPE_FLOAT32, 0, 1e30, 1));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Range: start 0, limit 1e+30, delta 1 give 1e+30 "
                 "elements (more than 2^62)");
    assert_null(tfl_range(ctx, TFL_DTYPE_INT32, 0, 3e9, 1));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "representable in int32");
    assert_null(tfl_range(ctx, TFL_DTYPE_FLOAT64, 0, INFINITY, 1));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Range: start (0), limit (inf) and delta (1) must be "
                 "finite");
    assert_null(tfl_range(ctx, TFL_DTYPE_FLOAT64, 0, 1, NAN));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "delta (nan) must be finite");
    assert_null(tfl_range(ctx, TFL_DTYPE_FLOAT32, -1e38, 1e38, 1e-30));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "elements (more than 2^62)");
    /* fits in int64 but not in memory as float64: refused by its byte count */
    assert_null(tfl_range(ctx, TFL_DTYPE_FLOAT64, 0, 0x1p61, 1));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "Range: 2305843009213693952 elements of float64 need "
                 "more than");
    assert_int_equal(live(ctx), 0);
    tfl_tensor *r = tfl_range(ctx, TFL_DTYPE_INT64, 9.0e18, 9.0e18 + 4096.0, 2048);
    assert_non_null(r);
    assert_int_equal(tfl_tensor_numel(r), 2);
    tfl_tensor_release(r);
}

/* Defect 7: tfl_ctx_new took num_threads = -3 without a word. */
static int g_logged;
static char g_log[512];
static void logger(void *user, tfl_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    g_logged++;
    snprintf(g_log, sizeof g_log, "%s", msg);
}

static void no_free(void *user, void *ptr)
{
    (void)user;
    (void)ptr;
}

static void test_ctx_opts_checked(void **state)
{
    (void)state;
    tfl_status st = TFL_OK;
    assert_null(tfl_ctx_new(&(tfl_ctx_opts){.num_threads = -3}, &st));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    char msg[256];
    assert_int_equal(tfl_ctx_opts_check(&(tfl_ctx_opts){.num_threads = -3}, msg, sizeof msg),
                     TFL_INVALID_ARGUMENT);
    assert_string_equal(msg, "tfl_ctx_new: opts.num_threads is -3; expected >= 0 (0: "
                             "OMP_NUM_THREADS or all cores)");
    /* the application's logger hears why, since no context exists to keep it */
    g_logged = 0;
    assert_null(tfl_ctx_new(&(tfl_ctx_opts){.num_threads = INT_MIN, .log_fn = logger}, &st));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_int_equal(g_logged, 1);
    assert_non_null(strstr(g_log, "opts.num_threads is -2147483648"));
    /* log_level out of the enum */
    assert_int_equal(
        tfl_ctx_opts_check(&(tfl_ctx_opts){.log_level = (tfl_log_level)7}, msg, sizeof msg),
        TFL_INVALID_ARGUMENT);
    assert_non_null(
        strstr(msg, "opts.log_level is 7; expected TFL_LOG_ERROR (0) .. TFL_LOG_DEBUG (3)"));
    assert_null(tfl_ctx_new(&(tfl_ctx_opts){.log_level = (tfl_log_level)-1}, &st));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    /* one memory hook without the other names both */
    assert_int_equal(tfl_ctx_opts_check(&(tfl_ctx_opts){.free_fn = no_free}, msg, sizeof msg),
                     TFL_INVALID_ARGUMENT);
    assert_string_equal(msg, "tfl_ctx_new: opts.free_fn is set but opts.alloc_fn is NULL; give "
                             "both memory hooks or neither");
    /* valid options pass, and NULL msg / NULL opts are fine */
    assert_int_equal(tfl_ctx_opts_check(NULL, msg, sizeof msg), TFL_OK);
    assert_string_equal(msg, "");
    assert_int_equal(tfl_ctx_opts_check(&(tfl_ctx_opts){.num_threads = 2}, NULL, 0), TFL_OK);
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 2, .log_level = TFL_LOG_DEBUG}, &st);
    assert_non_null(ctx);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_ctx_num_threads(ctx), 2);
    /* the logger's level is checked when it is replaced too */
    tfl_ctx_set_logger(ctx, logger, NULL, (tfl_log_level)9);
    assert_int_equal(tfl_ctx_status(ctx), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "ctx_set_logger: level is 9"));
    tfl_ctx_free(ctx);
}

/* Device indices: one constant bounds them (a context has CPU:0 and at most 8 GPUs). */
static void test_device_index_bounds(void **state)
{
    tfl_ctx *ctx = *state;
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:9"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "device_scope_push: the index of device 'GPU:9' is out "
                 "of range (0..7)");
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:70"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'CPU:70' is out of range (0..7)");
    assert_int_equal(tfl_device_scope_push(ctx, "/device:GPU:100000000000"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "out of range (0..7)");
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:99999999999999999999999999"),
                     TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "out of range (0..7)");
    /* signs and spaces are not indices */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:-1"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'GPU:-1' is not a device name");
    assert_int_equal(tfl_device_scope_push(ctx, "GPU: 1"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "is not a device name");
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:+1"), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "is not a device name");
    /* the largest index is a name (soft placement runs on the CPU) */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:7"), TFL_OK);
    tfl_tensor *t = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, S(2));
    assert_non_null(t);
    assert_string_equal(tfl_tensor_device(t), "CPU:0");
    tfl_tensor_release(t);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    /* an explicit device of a variable goes through the same parser */
    tfl_initializer z = tfl_init_zeros();
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, S(2), &z,
                                      &(tfl_variable_opts){.device = "GPU:64"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "VarHandleOp: the index of device 'GPU:64' is out of "
                 "range (0..7)");
    /* lookups of a name out of range find nothing */
    tfl_alloc_stats st;
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:100000000000", &st), TFL_NOT_FOUND);
    expect_error(ctx, TFL_NOT_FOUND, "no device 'GPU:100000000000'");
}

/* Variable options: unknown flag bits and a negative collection count are errors. */
static void test_variable_opts_checked(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_initializer z = tfl_init_zeros();
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, S(2), &z,
                                      &(tfl_variable_opts){.flags = 0x10}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "VarHandleOp: opts.flags is 0x10; unknown bits 0x10");
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, S(2), &z,
                                      &(tfl_variable_opts){.n_collections = -1}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "VarHandleOp: opts.n_collections is -1; expected >= 0");
    tfl_tensor *one = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, S(2));
    assert_null(tfl_variable_new(ctx, one, &(tfl_variable_opts){.dtype = (tfl_dtype)99}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "VarHandleOp: invalid dtype 99");
    tfl_tensor_release(one);
    assert_int_equal(live(ctx), 0);
}

/* Format options: each field in range (they were taken as defaults, or overflowed). */
static void test_format_opts_checked(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *t = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, S(7));
    char buf[128];
    /* an error leaves the caller's buffer terminated, as snprintf does (empty) */
    memset(buf, 'x', sizeof buf);
    assert_int_equal(tfl_tensor_format(t, buf, sizeof buf, &(tfl_format_opts){.precision = -1}),
                     -1);
    assert_string_equal(buf, "");
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "tensor_format: opts.precision is -1; expected 0 (6) to 40");
    memset(buf, 'x', sizeof buf);
    assert_int_equal(
        tfl_tensor_format_values(t, buf, sizeof buf, &(tfl_format_opts){.edge_items = -5}), -1);
    assert_string_equal(buf, "");
    expect_error(ctx, TFL_INVALID_ARGUMENT, "opts.edge_items is -5");
    memset(buf, 'x', sizeof buf);
    assert_int_equal(tfl_tensor_format(NULL, buf, sizeof buf, NULL), -1);
    assert_string_equal(buf, "");
    /* size 0: nothing is written */
    buf[0] = 'x';
    assert_int_equal(tfl_tensor_format(t, buf, 0, &(tfl_format_opts){.threshold = -1}), -1);
    assert_int_equal(buf[0], 'x');
    expect_error(ctx, TFL_INVALID_ARGUMENT, "opts.threshold is -1");
    assert_int_equal(tfl_tensor_format_values(t, buf, sizeof buf,
                                              &(tfl_format_opts){.threshold = 2, .edge_items = 1}),
                     11);
    assert_string_equal(buf, "[1, ..., 1]");
    tfl_tensor_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slice_size_near_int64_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_hot_huge_depth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshape_product_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_count, setup, teardown),
        cmocka_unit_test(test_ctx_opts_checked),
        cmocka_unit_test_setup_teardown(test_device_index_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variable_opts_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format_opts_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
