/*
 * test_version.c: <tapeflow/version.h>, reached through the umbrella header, gives the
 * version and says only what this build contains: without the CUDA backend there is no
 * GPU device to place a tensor on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <tapeflow/tapeflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_version_macros(void **state)
{
    (void)state;
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", TFL_VERSION_MAJOR, TFL_VERSION_MINOR,
             TFL_VERSION_PATCH);
    assert_string_equal(TFL_VERSION_STRING, want);
    assert_true(TFL_VERSION_MAJOR >= 0 && TFL_VERSION_MINOR >= 0 && TFL_VERSION_PATCH >= 0);
}

static void test_features_are_what_is_built(void **state)
{
    (void)state;
    assert_true(TFL_HAVE_CUDA == 0 || TFL_HAVE_CUDA == 1);
    assert_true(TFL_HAVE_CUDNN <= TFL_HAVE_CUDA); /* cuDNN kernels only inside the backend */
#if !TFL_HAVE_CUDA
    /* without the CUDA backend a GPU comes only from a module named by TFL_GPU_MODULE (the
     * fake GPU pass of the suite) */
    const char *module = getenv("TFL_GPU_MODULE");
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl_tensor *t = tfl_scalar_f32(ctx, 1);
    assert_non_null(t);
    if (module && module[0]) {
        assert_int_equal(tfl_device_count(ctx), 2);
    } else {
        assert_null(tfl_tensor_to_device(ctx, t, "GPU:0"));
        assert_int_equal(tfl_ctx_status(ctx), TFL_NOT_FOUND);
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "GPU:0"));
    }
    tfl_tensor_release(t);
    tfl_ctx_free(ctx);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_macros),
        cmocka_unit_test(test_features_are_what_is_built),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
