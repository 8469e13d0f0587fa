/*
 * test_nccl_gpu.c: the NCCL path on one GPU with one rank (gpu_backend "nccl": NCCL runs
 * even with one rank), with or without mpirun -np 1 (tfl_comm_world): the placement gather,
 * the id's broadcast, ncclCommInitRank, bucketed all-reduce (sum, mean, weighted mean) and
 * broadcast of GPU tensors of several dtypes, the gradient all-reduce with a NULL gradient,
 * and the stream ordering (the values are read back on the device's stream). With one rank
 * every result equals its input. Prints "skipped: ..." and exits 77 (ctest: skipped) in a
 * build without NCCL or on a machine without a GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

static bool have_gpu0(void)
{
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    bool found = false;
    for (int i = 0; ctx && i < tfl_device_count(ctx); i++)
        if (!strcmp(tfl_device_name(ctx, i), "GPU:0")) found = true;
    tfl_ctx_free(ctx);
    return found;
}

static tfl_tensor *on_gpu(tfl_ctx *ctx, tfl_dtype dt, int64_t n, const void *data)
{
    tfl_tensor *h = tfl_tensor_new(ctx, dt, 1, (int64_t[]){n}, data);
    assert_non_null(h);
    tfl_tensor *g = tfl_tensor_to_device(ctx, h, "GPU:0");
    assert_non_null(g);
    assert_string_equal(tfl_tensor_device(g), "GPU:0");
    tfl_tensor_release(h);
    return g;
}

static void expect_bytes(const tfl_tensor *t, const void *want, size_t bytes)
{
    char *got = malloc(bytes);
    assert_non_null(got);
    assert_int_equal(tfl_tensor_to_host(t, got, bytes), TFL_OK);
    assert_memory_equal(got, want, bytes);
    free(got);
}

static void test_nccl_one_rank(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    /* 64-byte buckets: the 100 floats span 7 buckets, so several groups run */
    tfl_comm *c = tfl_comm_world(ctx, &(tfl_comm_opts){.gpu_backend = "nccl", .bucket_bytes = 64});
    assert_non_null(c);
    assert_int_equal(tfl_comm_size(c), 1);
    float f[100];
    for (int i = 0; i < 100; i++)
        f[i] = 0.25f * (float)i - 3.0f;
    double d[7] = {1e-300, -2.5, 3.0, 1e300, 0.0, -0.0, 7.125};
    int32_t k[5] = {-7, 0, 1, 2147483647, -2147483647};
    uint16_t h[4] = {0x3c00, 0xc000, 0x3555, 0x0000}; /* float16 1, -2, 0.333, 0 */
    tfl_tensor *t[4] = {on_gpu(ctx, TFL_DTYPE_FLOAT32, 100, f),
                        on_gpu(ctx, TFL_DTYPE_FLOAT64, 7, d), on_gpu(ctx, TFL_DTYPE_INT32, 5, k),
                        on_gpu(ctx, TFL_DTYPE_FLOAT16, 4, h)};
    assert_int_equal(tfl_comm_allreduce(c, 4, t, TFL_REDUCE_SUM, 0), TFL_OK);
    assert_string_equal(tfl_comm_gpu_backend(c), "nccl");
    tfl_comm_stats s = tfl_comm_get_stats(c);
    assert_int_equal(s.bytes, 400 + 56 + 20 + 8);
    assert_true(s.messages >= 7 + 1 + 1 + 1);
    expect_bytes(t[0], f, sizeof f);
    expect_bytes(t[1], d, sizeof d);
    expect_bytes(t[2], k, sizeof k);
    expect_bytes(t[3], h, sizeof h);
    /* a mean over one rank, a weighted mean with this rank's weight: the same values */
    assert_int_equal(tfl_comm_allreduce(c, 2, t, TFL_REDUCE_MEAN, 0), TFL_OK);
    assert_int_equal(tfl_comm_allreduce(c, 2, t, TFL_REDUCE_WEIGHTED_MEAN, 3.0), TFL_OK);
    expect_bytes(t[0], f, sizeof f);
    expect_bytes(t[1], d, sizeof d);
    assert_int_equal(tfl_comm_broadcast(c, 4, t, 0), TFL_OK);
    expect_bytes(t[0], f, sizeof f);
    expect_bytes(t[3], h, sizeof h);
    /* a complex tensor on the GPU is refused, naming it */
    tfl_comm_reset_stats(c);
    tfl_tensor *z = tfl_tensor_new(ctx, TFL_DTYPE_COMPLEX64, 1, (int64_t[]){2}, NULL);
    tfl_tensor *zg = z ? tfl_tensor_to_device(ctx, z, "GPU:0") : NULL;
    if (zg) { /* (when the backend holds complex tensors) */
        tfl_tensor *two[2] = {t[0], zg};
        assert_int_equal(tfl_comm_allreduce(c, 2, two, TFL_REDUCE_SUM, 0), TFL_INVALID_ARGUMENT);
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "tensor 1 is complex64; NCCL reduces"));
        tfl_ctx_clear_error(ctx);
        tfl_tensor_release(zg);
    }
    tfl_tensor_release(z);
    tfl_ctx_clear_error(ctx);
    /* host tensors next to GPU tensors: the host ones through the transport, the others
     * through NCCL, in one call */
    tfl_tensor *host = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, f);
    tfl_tensor *mixed[3] = {t[0], host, t[1]};
    assert_int_equal(tfl_comm_allreduce(c, 3, mixed, TFL_REDUCE_WEIGHTED_MEAN, 1.0), TFL_OK);
    assert_int_equal(tfl_comm_broadcast(c, 3, mixed, 0), TFL_OK);
    expect_bytes(host, f, 2 * sizeof(float));
    expect_bytes(t[0], f, sizeof f);
    tfl_tensor_release(host);
    /* gradients: one NULL on every rank stays NULL; the other is the same values in a new
     * tensor on the GPU */
    tfl_tensor *vars[2] = {tfl_variable_new(ctx, t[0], NULL), tfl_variable_new(ctx, t[1], NULL)};
    assert_non_null(vars[0]);
    assert_non_null(vars[1]);
    assert_string_equal(tfl_tensor_device(vars[0]), "GPU:0");
    tfl_tensor *grads[2] = {t[0], NULL};
    assert_int_equal(tfl_comm_allreduce_gradients(c, 2, vars, grads, 32.0), TFL_OK);
    assert_non_null(grads[0]);
    assert_true(grads[0] != t[0]);
    assert_null(grads[1]);
    assert_string_equal(tfl_tensor_device(grads[0]), "GPU:0");
    expect_bytes(grads[0], f, sizeof f);
    tfl_tensor_release(vars[0]);
    tfl_tensor_release(vars[1]);
    for (int i = 0; i < 4; i++)
        tfl_tensor_release(t[i]);
    tfl_comm_free(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(void)
{
    if (!TFL_HAVE_NCCL) {
        printf("skipped: this tapeflow has no NCCL (TFL_HAVE_NCCL 0)\n");
        return 77;
    }
    if (!have_gpu0()) {
        printf("skipped: no GPU\n");
        return 77;
    }
    const char *module = getenv("TFL_GPU_MODULE"); /* the suite's fake GPU: no CUDA device */
    if (module && module[0]) {
        printf("skipped: GPU:0 comes from TFL_GPU_MODULE (%s), which NCCL cannot drive\n",
               module);
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nccl_one_rank)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
