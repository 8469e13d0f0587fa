/*
 * test_kernel_decline.c: a kernel may decline a float16/bfloat16 call it has no 16-bit path
 * for at that shape (TFL__KERNEL_DECLINED, nothing kept in the ctx: what the CUDA
 * convolutions answer where cuDNN does not take a shape); the dispatcher then runs the op's
 * float32 kernel between two conversions, so the result is the one a device without the
 * 16-bit kernel gives. A kernel that declines anything else is a bug the dispatcher reports
 * (INTERNAL), never a silent result. The device is host_gpu.h's GPU:0 (the CPU backend's
 * kernels on memory the framework reaches only through the device table), its MatMul
 * replaced by one that lists float16 and bfloat16 and declines them, counting.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"
#include "opt_kernels.h"

#include "host_gpu.h"

#include <tapeflow/tapeflow.h>

#include <math.h>
#include <string.h>

static const tfl__device_ops gpu_ops = {HOST_GPU_OPS_BASE};
static const tfl__device_ops *host_gpu_ops(void)
{
    return &gpu_ops;
}
static const tfl__opt_kernels *host_gpu_opt_kernels(const tfl__opt_kernels *cpu)
{
    return cpu;
}

static tfl__kernel cpu_matmul; /* the CPU's, which the replacement calls */
static int declines, calls;
static bool decline_all; /* decline float32 too: the misbehaving kernel */

static tfl_status declining_matmul(const tfl__kcall *k)
{
    calls++;
    if (decline_all || k->out->dtype == TFL_DTYPE_FLOAT16 || k->out->dtype == TFL_DTYPE_BFLOAT16) {
        declines++;
        return TFL__KERNEL_DECLINED;
    }
    return cpu_matmul.fn(k);
}

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    assert_non_null(ctx);
    assert_int_equal(ctx->n_devices, 2);
    tfl__device *gpu = ctx->devices[1];
    assert_string_equal(gpu->name, "GPU:0");
    cpu_matmul = gpu->kernels[TFL_OP_MATMUL];
    gpu->kernels[TFL_OP_MATMUL] =
        (tfl__kernel){declining_matmul, cpu_matmul.dtypes | TFL_MASK_HALF, NULL};
    declines = calls = 0;
    decline_all = false;
    return ctx;
}

static tfl_tensor *values(tfl_ctx *ctx, tfl_dtype dt, int64_t rows, int64_t cols, double k)
{
    double v[12];
    for (int i = 0; i < rows * cols; i++)
        v[i] = k * sin(1.0 + i);
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 2, (int64_t[]){rows, cols}, v);
    return tfl_cast(ctx, t, dt);
}

static void declined_calls_run_through_float32(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    const tfl_dtype halves[2] = {TFL_DTYPE_BFLOAT16, TFL_DTYPE_FLOAT16};
    for (int d = 0; d < 2; d++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
        tfl_tensor *a = values(ctx, halves[d], 3, 4, 1.7), *b = values(ctx, halves[d], 4, 2, -0.9);
        tfl_tensor *want = tfl_matmul(ctx, a, b, 0); /* the CPU: float32 between conversions */
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
        assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
        tfl_tensor *ga = tfl_tensor_to_device(ctx, a, "GPU:0");
        tfl_tensor *gb = tfl_tensor_to_device(ctx, b, "GPU:0");
        int before = declines;
        tfl_tensor *got = tfl_matmul(ctx, ga, gb, 0);
        assert_non_null(got);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        assert_string_equal(tfl_tensor_device(got), "GPU:0");
        assert_int_equal(tfl_tensor_dtype(got), halves[d]);
        assert_int_equal(declines, before + 1); /* declined once, then run in float32 */
        for (int64_t i = 0; i < 6; i++) {
            double x = NAN, y = NAN;
            assert_int_equal(tfl_tensor_get(got, i, &x), TFL_OK);
            assert_int_equal(tfl_tensor_get(want, i, &y), TFL_OK);
            assert_true(x == y);
        }
        /* an operand on CPU:0: copied over, declined, then run in float32 */
        tfl_tensor *mixed = tfl_matmul(ctx, a, gb, 0);
        assert_non_null(mixed);
        assert_int_equal(declines, before + 2);
        for (int64_t i = 0; i < 6; i++) {
            double x = NAN, y = NAN;
            assert_int_equal(tfl_tensor_get(mixed, i, &x), TFL_OK);
            assert_int_equal(tfl_tensor_get(want, i, &y), TFL_OK);
            assert_true(x == y);
        }
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    assert_int_equal(calls, 8); /* each: the declined 16-bit call and the float32 one */
    tfl_ctx_free(ctx);
}

static void declining_float32_is_an_error(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    decline_all = true;
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = values(ctx, TFL_DTYPE_FLOAT32, 2, 2, 1),
               *b = values(ctx, TFL_DTYPE_BFLOAT16, 2, 2, 1);
    assert_null(tfl_matmul(ctx, a, a, 0));
    assert_int_equal(tfl_ctx_status(ctx), TFL_INTERNAL);
    assert_string_equal(tfl_ctx_error(ctx).message,
                        "MatMul: the kernel of GPU:0 declined a call it must run");
    tfl_ctx_clear_error(ctx);
    /* a 16-bit call declined, and its float32 retry declined too: the same error */
    assert_null(tfl_matmul(ctx, b, b, 0));
    assert_int_equal(tfl_ctx_status(ctx), TFL_INTERNAL);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(declined_calls_run_through_float32),
        cmocka_unit_test(declining_float32_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
