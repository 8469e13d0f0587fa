/* test_device.c: tests of devices and placement (tapeflow/device.h): the device list, device
 * scopes, soft and strict placement, placement logging and copies between devices. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static int setup_strict(void **state)
{
    return setup_opts(state, &(tfl_ctx_opts){.strict_placement = true});
}

/* True when the context has a device of that name. */
static bool has_device(const tfl_ctx *ctx, const char *name)
{
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        const char *d = tfl_device_name(ctx, i);
        if (d && strcmp(d, name) == 0) return true;
    }
    return false;
}

static const float k_a23[6] = {1, 2, 3, 4, 5, 6};      /* [[1, 2, 3], [4, 5, 6]] */
static const float k_b32[6] = {1, 2, 3, 4, 5, 6};      /* [[1, 2], [3, 4], [5, 6]] */
static const float k_ab[4] = {22, 28, 49, 64};         /* a @ b */

static tfl_tensor *mat(tfl_ctx *ctx, int64_t rows, int64_t cols, const float *v)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){rows, cols}, v);
}

/* ---- the device list ---------------------------------------------------------------------- */

static void test_device_list(void **state)
{
    fixture *f = *state;
    int n = tfl_device_count(f->ctx);
    assert_true(n >= 1);
    assert_non_null(tfl_device_name(f->ctx, 0));
    assert_string_equal(tfl_device_name(f->ctx, 0), "CPU:0");
    for (int i = 1; i < n; i++) {
        const char *name = tfl_device_name(f->ctx, i);
        assert_non_null(name);
        assert_true(strncmp(name, "GPU:", 4) == 0);
    }
    assert_null(tfl_device_name(f->ctx, n));
    assert_null(tfl_device_name(f->ctx, n + 5));
    assert_null(tfl_device_name(f->ctx, -1));
    char buf[256];
    int w = tfl_device_describe(f->ctx, 0, buf, sizeof buf);
    assert_int_equal(w, (int)strlen(buf));
    assert_true(strncmp(buf, "CPU:0: host memory, ", 20) == 0);
    assert_non_null(strstr(buf, " thread"));
    char small[6];
    assert_int_equal(tfl_device_describe(f->ctx, 0, small, sizeof small), w); /* cut, like snprintf */
    assert_string_equal(small, "CPU:0");
    for (int i = 1; i < n; i++) {
        assert_true(tfl_device_describe(f->ctx, i, buf, sizeof buf) > 0);
        assert_true(strncmp(buf, "GPU:", 4) == 0);
    }
    assert_int_equal(tfl_device_describe(f->ctx, n, buf, sizeof buf), -1);
    assert_string_equal(buf, "");
    assert_int_equal(tfl_device_describe(NULL, 0, buf, sizeof buf), -1);
}

/* ---- device scopes ------------------------------------------------------------------------ */

static void test_scope_cpu_spellings(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    static const char *const names[] = {"CPU:0", "/device:CPU:0", "cpu:0", "/CPU:0",
                                        "/device:cpu:0"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        assert_int_equal(tfl_device_scope_push(ctx, names[i]), TFL_OK);
        tfl_tensor *t = tfl_scalar_f32(ctx, 1.0f);
        assert_non_null(t);
        assert_string_equal(tfl_tensor_device(t), "CPU:0");
        tfl_tensor *u = tfl_add(ctx, t, t);
        assert_non_null(u);
        assert_string_equal(tfl_tensor_device(u), "CPU:0");
        tfl_tensor_release(u);
        tfl_tensor_release(t);
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    }

    /* Scopes nest. */
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    assert_int_equal(tfl_device_scope_push(ctx, "/device:CPU:0"), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_MISUSE);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

static void test_scope_rejects_bad_names(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_device_scope_push(ctx, "banana"), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_device_scope_push(ctx, ""), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:zero"), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_device_scope_push(ctx, NULL), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    /* A rejected push opened no scope. */
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_MISUSE);
    tfl_ctx_clear_error(ctx);

    /* A device that does not exist is still a device name. */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:5"), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
}

/* tfl_device_parse: every spelling the library accepts, the type from the backends, the
 * index or -1, and each refusal with its code (type and index untouched) */
static void test_device_parse(void **state)
{
    (void)state;
    static const struct {
        const char *name, *type;
        int index;
    } ok[] = {
        {"CPU:0", "CPU", 0},
        {"cpu", "CPU", -1},
        {"GPU", "GPU", -1},
        {"gpu:7", "GPU", 7},
        {"/device:GPU:1", "GPU", 1},
        {"/GPU:0", "GPU", 0},
        {"/job:localhost/replica:0/task:0/device:CPU:0", "CPU", 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char type[8] = "";
        int index = 99;
        assert_int_equal(tfl_device_parse(ok[i].name, type, sizeof type, &index), TFL_OK);
        assert_string_equal(type, ok[i].type);
        assert_int_equal(index, ok[i].index);
    }
    static const char *const bad[] = {"", "TPU:0", "GPU:", "GPU:1x", "GPU:-1", "GPU0", "auto",
                                      "CPU:0:0", "/device:", "CPUS"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char type[8] = "kept";
        int index = 42;
        assert_int_equal(tfl_device_parse(bad[i], type, sizeof type, &index),
                         TFL_INVALID_ARGUMENT);
        assert_string_equal(type, "kept");
        assert_int_equal(index, 42);
    }
    char type[8];
    int index = 42;
    assert_int_equal(tfl_device_parse("GPU:8", type, sizeof type, &index), TFL_OUT_OF_RANGE);
    assert_int_equal(tfl_device_parse("GPU:99999999999999999999", type, sizeof type, &index),
                     TFL_OUT_OF_RANGE);
    assert_int_equal(index, 42);
    assert_int_equal(tfl_device_parse("GPU:0", type, 3, &index), TFL_INVALID_ARGUMENT); /* room */
    assert_int_equal(tfl_device_parse(NULL, type, sizeof type, &index), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_device_parse("GPU", NULL, 8, &index), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_device_parse("GPU", type, sizeof type, NULL), TFL_INVALID_ARGUMENT);
}

static void test_scope_pop_with_none_open(void **state)
{
    fixture *f = *state;
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_MISUSE);
    assert_int_equal(tfl_device_scope_push(f->ctx, "CPU:0"), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_MISUSE);
    tfl_ctx_clear_error(f->ctx);
}

/* ---- placement ---------------------------------------------------------------------------- */

static void test_soft_placement_falls_back_to_cpu(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    if (has_device(ctx, "GPU:0")) skip();
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = mat(ctx, 2, 3, k_a23);
    tfl_tensor *b = mat(ctx, 3, 2, k_b32);
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
    assert_non_null(c);
    assert_string_equal(tfl_tensor_device(c), "CPU:0");
    assert_int_equal(tfl_tensor_dim(c, 0), 2);
    assert_int_equal(tfl_tensor_dim(c, 1), 2);
    expect_f32(c, k_ab, 4, 1e-5);
    /* New tensors under the scope land on the CPU as well. */
    tfl_tensor *z = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2});
    assert_non_null(z);
    assert_string_equal(tfl_tensor_device(z), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void expect_strict_failure(tfl_ctx *ctx)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = mat(ctx, 2, 3, k_a23);
    tfl_tensor *b = mat(ctx, 3, 2, k_b32);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_matmul(ctx, a, b, 0));
    assert_int_equal(live_tensors(ctx), live);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "MatMul: ", 8) == 0);
    assert_has(e.message, "Could not satisfy device specification 'GPU:0'");
    assert_has(e.message, "available devices: CPU:0");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);

    /* Outside the scope, or under CPU:0, the same op runs. */
    expect_f32(tfl_matmul(ctx, a, b, 0), k_ab, 4, 1e-5);
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    expect_f32(tfl_matmul(ctx, a, b, 0), k_ab, 4, 1e-5);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_strict_placement_from_opts(void **state)
{
    fixture *f = *state;
    if (has_device(f->ctx, "GPU:0")) skip();
    expect_strict_failure(f->ctx);
}

static void test_strict_placement_by_setter(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    if (has_device(ctx, "GPU:0")) skip();
    tfl_ctx_set_soft_placement(ctx, false);
    expect_strict_failure(ctx);

    /* Turning soft placement back on makes the scoped op run on the CPU again. */
    tfl_ctx_set_soft_placement(ctx, true);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = mat(ctx, 2, 3, k_a23);
    tfl_tensor *b = mat(ctx, 3, 2, k_b32);
    assert_int_equal(tfl_device_scope_push(ctx, "/device:GPU:0"), TFL_OK);
    tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
    expect_f32(c, k_ab, 4, 1e-5);
    assert_string_equal(tfl_tensor_device(c), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_placement_logging(void **state)
{
    (void)state;
    log_capture cap;
    memset(&cap, 0, sizeof cap);
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.log_fn = capture_log, .log_user = &cap, .log_placement = true}, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = mat(ctx, 2, 3, k_a23);
    tfl_tensor *b = mat(ctx, 3, 2, k_b32);
    expect_f32(tfl_matmul(ctx, a, b, 0), k_ab, 4, 1e-5);
    assert_int_equal(count_lines_at(&cap, op_on(ctx, "MatMul"), TFL_LOG_INFO), 1);

    /* Under a soft-placed GPU scope the line names where the op ran. */
    if (!has_device(ctx, "GPU:0")) {
        assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
        expect_f32(tfl_matmul(ctx, a, b, 0), k_ab, 4, 1e-5);
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
        assert_int_equal(count_lines_at(&cap, "op MatMul on CPU:0", TFL_LOG_INFO), 2);
        assert_int_equal(count_lines_at(&cap, "op MatMul on GPU", TFL_LOG_INFO), 0);
    }

    /* Off: no more lines. */
    tfl_ctx_set_log_placement(ctx, false);
    int before = count_lines_at(&cap, "op MatMul", TFL_LOG_INFO);
    expect_f32(tfl_matmul(ctx, a, b, 0), k_ab, 4, 1e-5);
    assert_int_equal(count_lines_at(&cap, "op MatMul", TFL_LOG_INFO), before);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

/* ---- copies between devices --------------------------------------------------------------- */

static void test_to_device(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = mat(ctx, 2, 3, k_a23);
    assert_non_null(a);
    tfl_tensor *c = tfl_tensor_to_device(ctx, a, "CPU:0");
    assert_non_null(c);
    assert_string_equal(tfl_tensor_device(c), "CPU:0");
    assert_int_equal(tfl_tensor_dtype(c), TFL_DTYPE_FLOAT32);
    assert_int_equal(tfl_tensor_rank(c), 2);
    assert_int_equal(tfl_tensor_dim(c, 0), 2);
    assert_int_equal(tfl_tensor_dim(c, 1), 3);
    expect_f32(c, k_a23, 6, 1e-5);

    /* A non-contiguous view copies its logical values. */
    tfl_tensor *t = tfl_transpose(ctx, a, NULL);
    tfl_tensor *tc = tfl_tensor_to_device(ctx, t, "CPU:0");
    assert_non_null(tc);
    assert_int_equal(tfl_tensor_dim(tc, 0), 3);
    expect_f32(tc, (const float[]){1, 4, 2, 5, 3, 6}, 6, 1e-5);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);

    if (!has_device(ctx, "GPU:7")) {
        uint64_t live = live_tensors(ctx);
        assert_null(tfl_tensor_to_device(ctx, a, "GPU:7"));
        assert_int_equal(tfl_ctx_status(ctx), TFL_NOT_FOUND);
        assert_int_equal(live_tensors(ctx), live);
        tfl_ctx_clear_error(ctx);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_device_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_cpu_spellings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_rejects_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_pop_with_none_open, setup, teardown),
        cmocka_unit_test(test_device_parse),
        cmocka_unit_test_setup_teardown(test_soft_placement_falls_back_to_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_placement_from_opts, setup_strict, teardown),
        cmocka_unit_test_setup_teardown(test_strict_placement_by_setter, setup, teardown),
        cmocka_unit_test(test_placement_logging),
        cmocka_unit_test_setup_teardown(test_to_device, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
