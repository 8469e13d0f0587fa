/*
 * framework/cuda/tests/test_conv_emulated.c: the im2col + cuBLAS path of the GPU convolutions
 * (framework/cuda/cuda_conv.c, the file itself, built with TFL_CUDA_CONV_EMULATED: no cuDNN)
 * run on the host against the CPU kernels (conv_emu.h says how), so that its arithmetic is
 * checked on machines without a GPU. Built twice (tests/backend/CMakeLists.txt): with the
 * default im2col cap, and with a cap of 64 bytes (every chunk one output pixel), which drives
 * the chunk loops, the backprop filter's accumulation and col2im's row ranges.
 * Not covered: the kernels' launch geometry, the device itself (test_backend_ops GPU:0).
 */
#include "conv_emu.h"

#include <stdio.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static tfl__cuda_device cu; /* the device record the kernels get (no CUDA behind it) */

static tfl_ctx *new_ctx(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    return ctx;
}

/* random shapes: strides and dilations 1..3, VALID and SAME (odd totals included), 1x1 */
static void test_random_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    tfl__device *dev = &cu.base;
    snprintf(cu.base.name, sizeof cu.base.name, "GPU:0");
    int checked = 0;
    emu_errors = 0;
    for (int it = 0; it < 160; it++) {
        tfl_dtype dt = it % 2 ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        int64_t xs[4] = {emu_rnd(1, 3), emu_rnd(1, 8), emu_rnd(1, 8), emu_rnd(1, 4)};
        int64_t fs[4] = {emu_rnd(1, 4), emu_rnd(1, 4), xs[3], emu_rnd(1, 4)};
        int sh = (int)emu_rnd(1, 3), sw = (int)emu_rnd(1, 3), dh = (int)emu_rnd(1, 3),
            dw = (int)emu_rnd(1, 3);
        if (it % 8 == 0) fs[0] = fs[1] = 1, sh = sw = 1; /* the direct path */
        checked += emu_check_shape(ctx, dev, dt, xs, fs, sh, sw, dh, dw, emu_rnd(0, 1) == 1);
    }
    assert_true(checked > 100);
    assert_int_equal(emu_errors, 0);
    assert_int_equal(emu_gets, emu_puts); /* every workspace given back */
    tfl_ctx_free(ctx);
}

/* the shapes of tests/backend/backend_cases.c's convolution cases, and the extremes: one
 * output pixel, a filter as large as the image, the stride larger than the filter */
static void test_named_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    tfl__device *dev = &cu.base;
    snprintf(cu.base.name, sizeof cu.base.name, "GPU:0");
    const tfl_dtype f32 = TFL_DTYPE_FLOAT32, f64 = TFL_DTYPE_FLOAT64;
    emu_errors = 0;
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){1, 5, 5, 2}, (int64_t[]){3, 3, 2, 3}, 1,
                                1, 1, 1, true));
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){2, 7, 6, 3}, (int64_t[]){3, 2, 3, 4}, 2,
                                2, 1, 1, false));
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){2, 8, 8, 3}, (int64_t[]){3, 3, 3, 2}, 2,
                                2, 1, 1, true));
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){1, 6, 7, 2}, (int64_t[]){3, 3, 2, 3}, 1,
                                1, 2, 2, true));
    assert_true(emu_check_shape(ctx, dev, f64, (int64_t[]){2, 7, 9, 2}, (int64_t[]){2, 3, 2, 3}, 1,
                                2, 2, 1, false));
    assert_true(emu_check_shape(ctx, dev, f64, (int64_t[]){1, 3, 4, 4}, (int64_t[]){1, 1, 4, 2}, 1,
                                1, 1, 1, false));
    assert_true(emu_check_shape(ctx, dev, f64, (int64_t[]){2, 4, 5, 3}, (int64_t[]){4, 5, 3, 2}, 1,
                                1, 1, 1, false));
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){1, 9, 9, 1}, (int64_t[]){2, 2, 1, 1}, 4,
                                3, 1, 1, false));
    assert_true(emu_check_shape(ctx, dev, f32, (int64_t[]){3, 1, 1, 5}, (int64_t[]){3, 3, 5, 2}, 1,
                                1, 1, 1, true));
    assert_int_equal(emu_errors, 0);
    assert_int_equal(emu_gets, emu_puts);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_named_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
