/*
 * The GPU backend as a module loaded on demand (framework/module.c): a program that never
 * asks about GPUs maps no GPU module and no CUDA library; asking (tfl_device_count, a GPU
 * scope, automatic placement) loads the module named by TFL_GPU_MODULE or, in a CUDA build,
 * libtapeflow_cuda.so after the driver was found; a module that is missing or refuses gives
 * CPU:0 and one log line naming what was missing, never a failed start. The test runs in both
 * suite passes: plain (no driver here: the note names libcuda.so.1 in a CUDA build) and with
 * the fake GPU module (TFL_GPU_MODULE set by `make test TFL_TEST_FAKE_GPU=1`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tapeflow/tapeflow.h>

#ifndef TFL_FAKE_GPU_MODULE
#error "TFL_FAKE_GPU_MODULE (the path of libtfl_fake_gpu.so) must be defined"
#endif

/* Whether /proc/self/maps has a mapping whose path contains `needle`. */
static bool mapped(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static const char *const gpu_libraries[] = {"libtapeflow_cuda", "libtfl_fake_gpu", "libcublas",
                                            "libcudnn", "libcuda.so", "libcudart"};

static void expect_no_gpu_library(const char *when)
{
    for (size_t i = 0; i < sizeof gpu_libraries / sizeof gpu_libraries[0]; i++)
        if (mapped(gpu_libraries[i]))
            fail_msg("%s: %s is mapped", when, gpu_libraries[i]);
}

typedef struct log_lines {
    int n;
    char lines[16][512];
    tfl_log_level levels[16];
} log_lines;

static void capture(void *user, tfl_log_level level, const char *message)
{
    log_lines *l = user;
    if (l->n < 16) {
        snprintf(l->lines[l->n], sizeof l->lines[0], "%s", message);
        l->levels[l->n++] = level;
    }
}

static int lines_with(const log_lines *l, const char *needle)
{
    int n = 0;
    for (int i = 0; i < l->n; i++) n += strstr(l->lines[i], needle) != NULL;
    return n;
}

static tfl_ctx *new_ctx(log_lines *l)
{
    memset(l, 0, sizeof *l);
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.log_fn = capture, .log_user = l, .log_level = TFL_LOG_DEBUG}, NULL);
    assert_non_null(ctx);
    return ctx;
}

/* Runs first (cmocka keeps the order): nothing of a GPU is mapped until a context asks. */
static void test_cpu_work_maps_no_gpu_library(void **state)
{
    (void)state;
    expect_no_gpu_library("at start");
    log_lines l;
    tfl_ctx *ctx = new_ctx(&l);
    /* host data, a CPU scope, a variable placed on CPU:0, an op there: nothing asks for GPUs */
    tfl_tensor *a = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){3},
                                   (const float[]){1, 2, 3});
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    tfl_tensor *b = tfl_add(ctx, a, a);
    tfl_variable_opts vo = {.device = "CPU:0"};
    tfl_tensor *v = tfl_variable_new(ctx, b, &vo);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(b), "CPU:0");
    expect_no_gpu_library("after CPU-only work");
    assert_int_equal(lines_with(&l, "GPU"), 0);
    tfl_tensor_release(v);
    tfl_tensor_release(b);
    tfl_tensor_release(a);
    tfl_ctx_free(ctx);
    expect_no_gpu_library("after tfl_ctx_free");
}

/* Asking loads the module of this pass: the fake one gives GPU:0, where ops then run; without
 * one a CUDA build says why in one line and the context has CPU:0 only. */
static void test_asking_loads_the_module(void **state)
{
    (void)state;
    const char *module = getenv("TFL_GPU_MODULE");
    log_lines l;
    tfl_ctx *ctx = new_ctx(&l);
    int n = tfl_device_count(ctx);
    char note[512];
    int len = tfl_device_note(ctx, note, sizeof note);
    if (module && module[0]) {
        assert_int_equal(n, 2);
        assert_string_equal(tfl_device_name(ctx, 1), "GPU:0");
        assert_int_equal(len, 0);
        assert_string_equal(note, "");
        assert_true(mapped("libtfl_fake_gpu"));
        tfl_tensor *a = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2},
                                       (const float[]){1.5f, -2});
        tfl_tensor *c = tfl_mul(ctx, a, a);
        assert_non_null(c);
        assert_string_equal(tfl_tensor_device(c), "GPU:0");
        double v;
        assert_int_equal(tfl_tensor_get(c, 1, &v), TFL_OK);
        assert_true(v == 4.0);
        tfl_tensor_release(c);
        tfl_tensor_release(a);
    } else if (n > 1) { /* a GPU machine: its CUDA module is loaded */
        assert_true(mapped("libtapeflow_cuda"));
    } else {
        assert_string_equal(tfl_device_name(ctx, 0), "CPU:0");
        if (TFL_HAVE_CUDA) { /* the driver is missing here, or its libraries */
            assert_true(len > 0);
            assert_non_null(strstr(note, "no GPU device: "));
            assert_true(strstr(note, "libcuda.so.1") || strstr(note, "libtapeflow_cuda.so"));
            assert_int_equal(lines_with(&l, note), 1); /* logged once, the same line */
            /* asking again says nothing more */
            assert_int_equal(tfl_device_count(ctx), 1);
            assert_int_equal(lines_with(&l, "no GPU device"), 1);
            expect_no_gpu_library("without a driver");
        } else {
            assert_int_equal(len, 0); /* a build without a GPU backend: nothing to say */
            assert_int_equal(l.n, 0);
        }
    }
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

/* A module that cannot be loaded, or is not a module, gives CPU:0 and a WARNING naming it;
 * the context works on. */
static void test_bad_module_gives_cpu_and_a_warning(void **state)
{
    (void)state;
    char *saved = getenv("TFL_GPU_MODULE") ? strdup(getenv("TFL_GPU_MODULE")) : NULL;
    static const struct {
        const char *path, *expect;
    } cases[] = {
        {"/nonexistent/libnothing.so", "cannot load the GPU module named by TFL_GPU_MODULE: "
                                       "/nonexistent/libnothing.so"},
        {"libm.so.6", "the GPU module has no entry tfl_backend_module_v1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(setenv("TFL_GPU_MODULE", cases[i].path, 1), 0);
        log_lines l;
        tfl_ctx *ctx = new_ctx(&l);
        assert_int_equal(tfl_device_count(ctx), 1);
        char note[512];
        assert_true(tfl_device_note(ctx, note, sizeof note) > 0);
        if (!strstr(note, cases[i].expect)) fail_msg("note '%s' lacks '%s'", note, cases[i].expect);
        assert_int_equal(lines_with(&l, cases[i].expect), 1);
        for (int j = 0; j < l.n; j++)
            if (strstr(l.lines[j], cases[i].expect)) assert_int_equal(l.levels[j], TFL_LOG_WARNING);
        /* automatic placement runs on CPU:0 */
        tfl_tensor *a = tfl_scalar_f32(ctx, 3.0f);
        tfl_tensor *b = tfl_add(ctx, a, a);
        assert_non_null(b);
        assert_string_equal(tfl_tensor_device(b), "CPU:0");
        tfl_tensor_release(b);
        tfl_tensor_release(a);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        tfl_ctx_free(ctx);
    }
    /* the fake module, named explicitly, gives GPU:0 in this process too */
    assert_int_equal(setenv("TFL_GPU_MODULE", TFL_FAKE_GPU_MODULE, 1), 0);
    log_lines l;
    tfl_ctx *ctx = new_ctx(&l);
    assert_int_equal(tfl_device_count(ctx), 2);
    char desc[256];
    assert_true(tfl_device_describe(ctx, 1, desc, sizeof desc) > 0);
    assert_non_null(strstr(desc, "GPU:0: fake GPU on host memory"));
    tfl_ctx_free(ctx);
    if (saved)
        setenv("TFL_GPU_MODULE", saved, 1);
    else
        unsetenv("TFL_GPU_MODULE");
    free(saved);
}

/* A GPU scope asks too: with a GPU module the scope's ops run there. */
static void test_gpu_scope_asks(void **state)
{
    (void)state;
    char *saved = getenv("TFL_GPU_MODULE") ? strdup(getenv("TFL_GPU_MODULE")) : NULL;
    assert_int_equal(setenv("TFL_GPU_MODULE", TFL_FAKE_GPU_MODULE, 1), 0);
    log_lines l;
    tfl_ctx *ctx = new_ctx(&l);
    assert_int_equal(tfl_device_scope_push(ctx, "/device:GPU:0"), TFL_OK);
    tfl_tensor *a = tfl_scalar_f32(ctx, 2.0f);
    tfl_tensor *b = tfl_mul(ctx, a, a);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_non_null(b);
    assert_string_equal(tfl_tensor_device(b), "GPU:0");
    tfl_tensor_release(b);
    tfl_tensor_release(a);
    tfl_ctx_free(ctx);
    if (saved)
        setenv("TFL_GPU_MODULE", saved, 1);
    else
        unsetenv("TFL_GPU_MODULE");
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_work_maps_no_gpu_library),
        cmocka_unit_test(test_asking_loads_the_module),
        cmocka_unit_test(test_bad_module_gives_cpu_and_a_warning),
        cmocka_unit_test(test_gpu_scope_asks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
