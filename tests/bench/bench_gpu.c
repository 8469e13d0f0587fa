/*
 * bench_gpu.c: the GPU figures of tapeflow next to the same work done by CUDA directly, on
 * the same GPU (GPU:0):
 *   sgemm N x N through tfl_matmul against cublasSgemm called directly (TFLOP/s),
 *   elementwise Add of n float32 (3 * 4 n bytes moved) against a device-to-device cudaMemcpy
 *   of the same tensor (2 * 4 n bytes) (GB/s),
 *   small-op dispatch: tfl_add on float32 [4] on the GPU, asynchronous (us/op).
 * tests/bench/torch_gpu.py prints the PyTorch twins (torch.mm, a + b, copy_, small add).
 * Lines: `bench <name> <value> <unit>`. Without a GPU it prints "skipped: no GPU" and exits 0.
 * Usage: bench_gpu [--quick]
 */
#define BENCH_NAME "bench_gpu"
#include "bench_util.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <string.h>

static void gpu_sync(tfl_ctx *ctx)
{
    /* the library's kernels run on GPU:0's stream in the device's primary context, which
     * this program's runtime shares: a device-wide synchronise waits for them */
    if (cudaDeviceSynchronize() != cudaSuccess) die(ctx, "cudaDeviceSynchronize", "failed");
}

static double sgemm_tapeflow(tfl_ctx *ctx, int64_t n, int reps)
{
    const int64_t s[2] = {n, n};
    tfl_frame_push(ctx);
    tfl_tensor *a = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, s, -1, 1, 1);
    tfl_tensor *b = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, s, -1, 1, 2);
    check(ctx, "sgemm inputs");
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        tfl_frame_push(ctx);
        gpu_sync(ctx);
        double t0 = now_ns();
        tfl_matmul(ctx, a, b, 0);
        gpu_sync(ctx);
        double t = now_ns() - t0;
        check(ctx, "tfl_matmul");
        tfl_frame_pop(ctx);
        if (r > 0 && t < best) best = t; /* the first run warms cuBLAS and the allocator */
    }
    tfl_frame_pop(ctx);
    return 2.0 * (double)n * (double)n * (double)n / best / 1e3; /* TFLOP/s */
}

static double sgemm_cublas(tfl_ctx *ctx, int64_t n, int reps)
{
    cublasHandle_t h;
    float *a, *b, *c;
    size_t bytes = sizeof(float) * (size_t)(n * n);
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, bytes) ||
        cudaMalloc((void **)&b, bytes) || cudaMalloc((void **)&c, bytes))
        die(ctx, "cublas setup", "failed");
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    const float one = 1.0f, zero = 0.0f;
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        cudaDeviceSynchronize();
        double t0 = now_ns();
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, b, (int)n, a, (int)n,
                    &zero, c, (int)n);
        cudaDeviceSynchronize();
        double t = now_ns() - t0;
        if (r > 0 && t < best) best = t;
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cublasDestroy(h);
    return 2.0 * (double)n * (double)n * (double)n / best / 1e3;
}

/* Add of n float32 (GB/s over 12 n bytes) and a D2D copy of the same bytes (8 n bytes) */
static void elementwise(tfl_ctx *ctx, int64_t n, int reps, double *add_gbs, double *copy_gbs)
{
    tfl_frame_push(ctx);
    tfl_tensor *x = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, -1, 1, 3);
    tfl_tensor *y = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, -1, 1, 4);
    check(ctx, "elementwise inputs");
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        tfl_frame_push(ctx);
        gpu_sync(ctx);
        double t0 = now_ns();
        tfl_add(ctx, x, y);
        gpu_sync(ctx);
        double t = now_ns() - t0;
        check(ctx, "tfl_add");
        tfl_frame_pop(ctx);
        if (r > 0 && t < best) best = t;
    }
    *add_gbs = 12.0 * (double)n / best;
    tfl_frame_pop(ctx);
    void *a, *b;
    size_t bytes = sizeof(float) * (size_t)n;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes)) die(ctx, "cudaMalloc", "failed");
    best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        cudaDeviceSynchronize();
        double t0 = now_ns();
        cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
        cudaDeviceSynchronize();
        double t = now_ns() - t0;
        if (r > 0 && t < best) best = t;
    }
    cudaFree(a);
    cudaFree(b);
    *copy_gbs = 8.0 * (double)n / best;
}

/* microseconds per tfl_add on float32 [4] on the GPU, issued back to back */
static double dispatch_us(tfl_ctx *ctx, int ops)
{
    const int64_t four = 4;
    tfl_frame_push(ctx);
    tfl_tensor *x = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &four, -1, 1, 5);
    check(ctx, "dispatch input");
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        gpu_sync(ctx);
        double t0 = now_ns();
        tfl_frame_push(ctx);
        for (int i = 0; i < ops; i++) {
            tfl_add(ctx, x, x);
            if (i % 256 == 255) { /* release the outputs as a training loop's frames do */
                tfl_frame_pop(ctx);
                tfl_frame_push(ctx);
            }
        }
        tfl_frame_pop(ctx);
        gpu_sync(ctx);
        double t = (now_ns() - t0) / ops;
        check(ctx, "small add");
        if (t < best) best = t;
    }
    tfl_frame_pop(ctx);
    return best / 1e3;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        fprintf(stderr, BENCH_NAME ": tfl_ctx_new: %s\n", tfl_status_name(st));
        return EXIT_FAILURE;
    }
    bool gpu = false;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        gpu |= !strcmp(tfl_device_name(ctx, i), "GPU:0");
    /* the figures beside CUDA's own calls need a CUDA device (the suite's fake GPU is none) */
    int cuda_devices = 0;
    if (cudaGetDeviceCount(&cuda_devices) != cudaSuccess) cuda_devices = 0;
    if (!gpu || cuda_devices == 0) {
        printf("skipped: no GPU%s\n", gpu ? " (GPU:0 is not a CUDA device)" : "");
        tfl_ctx_free(ctx);
        return 0;
    }
    char line[256];
    tfl_device_describe(ctx, 1, line, sizeof line);
    printf("bench_gpu on GPU:0: %s\n", line);
    check_status(ctx, tfl_device_scope_push(ctx, "GPU:0"), "scope");
    const int64_t n = quick ? 1024 : 4096;
    const int reps = quick ? 3 : 10;
    double tf = sgemm_tapeflow(ctx, n, reps), cb = sgemm_cublas(ctx, n, reps);
    printf("bench gpu_sgemm_%lld_tapeflow %.2f TFLOP/s\n", (long long)n, tf);
    printf("bench gpu_sgemm_%lld_cublas %.2f TFLOP/s\n", (long long)n, cb);
    printf("bench gpu_sgemm_ratio %.3f ratio\n", tf / cb);
    double add, copy;
    elementwise(ctx, quick ? (1 << 22) : (1 << 26), reps, &add, &copy);
    printf("bench gpu_add_f32 %.1f GB/s\n", add);
    printf("bench gpu_copy_d2d %.1f GB/s\n", copy);
    printf("bench gpu_add_copy_ratio %.3f ratio\n", add / copy);
    printf("bench gpu_small_add %.2f us/op\n", dispatch_us(ctx, quick ? 2048 : 20000));
    tfl_device_scope_pop(ctx);
    tfl_ctx_free(ctx);
    return 0;
}
