/*
 * bench_gpu_train.c: training on GPU:0 and its two heaviest parts, beside PyTorch on the same
 * GPU (twin: torch_gpu_train.py, the same names prefixed torch_; tests/bench/run_gpu.sh runs
 * both and prints the ratios):
 *
 *   gpu_train_<mlp|cnn>_samples_per_s  samples/s: tfl_model_fit of the Fashion-MNIST models
 *       of bench_train.c (examples/fashion_mnist_models.h; Adam 1e-3, sparse softmax
 *       cross-entropy from logits, accuracy, batches of 128 shuffled) built under a GPU:0
 *       scope, on in-memory float32 images (28x28, values in [0, 1)) and random labels in
 *       host memory, as torch_gpu_train.py's (the data's values do not change the work);
 *       WARM steps first, then the timed ones (mlp 400, cnn 200; --quick 10).
 *   gpu_train_<mlp|cnn|big_cnn>_graphs_samples_per_s  samples/s: the same fits with recorded
 *       steps (tfl_fit_opts.step_graphs: from the third step on, one CUDA graph launched per
 *       step for the forward and backward passes), float32;
 *   gpu_train_big_cnn[_tf32|_bf16|_fp16]_samples_per_s  samples/s: the same for a VGG-style
 *       CNN (conv 3x3 SAME relu: 64, 64, pool, 128, 128, pool, 256, 256, pool, dense 512
 *       relu, dense 10) in batches of 256 (timed steps 100; --quick 5), under the float32,
 *       tf32, bfloat16 and float16 precision policies (tfl_ctx_set_precision; float16 with
 *       dynamic loss scaling from 2^15, as Keras);
 *   gpu_adam_<1e7|1e8>, gpu_adam_1e8_x64  GB/s: one tfl_optimizer_apply of Adam (PyTorch's
 *       formulas) on n float32 parameters on GPU:0 (one tensor, or 64 tensors of n/64),
 *       counted as 28 n bytes: it reads g, p, m, v (16 n) and writes p, m, v (12 n);
 *   gpu_copy_d2d_<1e7|1e8>  GB/s: cudaMemcpy device to device of 4 n bytes, counted as 8 n
 *       (read and write), the bandwidth the Adam figure is measured against;
 *   gpu_adam_copy_ratio_1e8  ratio: gpu_adam_1e8 / gpu_copy_d2d_1e8 (the aim: >= 0.8);
 *   gpu_conv_<l1|l2|l3>_<fwd|bwd_input|bwd_filter>  GFLOP/s: tfl_conv2d and its two
 *       backprops on the layers of bench_conv.c (batch 128, NHWC, float32: l1 3x3 1->32 on
 *       28x28, l2 3x3 32->64 on 13x13, VALID) and big_cnn's middle layer (l3 3x3 64->128 on
 *       14x14), 2·N·OH·OW·KH·KW·Cin·Cout flops each;
 *   gpu_maxpool_<l1|l2>_fwd  GB/s: tfl_max_pool2d 2x2 on the conv's output (in + out bytes).
 * Each timed figure is the best of several blocks after a warm-up, synchronised with
 * cudaDeviceSynchronize around each block (the library's kernels run in the device's primary
 * context, which this program's runtime shares). --quick runs smaller sizes (Adam 1e6) and
 * fewer steps (the smoke test).
 * Without a GPU it prints "skipped: no GPU" and exits 0. Errors start "bench_gpu_train: ".
 * Usage: bench_gpu_train [--quick]
 */
#define BENCH_NAME "bench_gpu_train"
#include "bench_util.h"
#include "fashion_mnist_models.h" /* examples/: the models the example trains */

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#define BATCH 128
#define WARM 20

static void gpu_sync(tfl_ctx *ctx)
{
    if (cudaDeviceSynchronize() != cudaSuccess) die(ctx, "cudaDeviceSynchronize", "failed");
}

/* ---- training ------------------------------------------------------------------------- */

/* A dataset of n float32 28x28 images in [0, 1) and labels in [0, 10), on the host. */
static tfl_dataset *synthetic(tfl_ctx *ctx, int64_t n, uint64_t seed)
{
    tfl_dataset *ds = NULL;
    tfl_frame_push(ctx);
    tfl_tensor *x =
        tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){n, 28, 28}, 0, 1, seed);
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    if (!labels) die(ctx, "data", "out of memory");
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        labels[i] = (int32_t)((s >> 33) % 10);
    }
    tfl_tensor *y = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, &n, labels);
    free(labels);
    if (x && y) ds = tfl_dataset_from_arrays(ctx, x, y, NULL);
    tfl_frame_pop(ctx);
    check_ptr(ctx, ds, "data", "tfl_dataset_from_arrays");
    return ds;
}

typedef enum model_kind { MLP, CNN, BIG_CNN } model_kind;

/* big_cnn: the VGG-style CNN (torch_gpu_train.py's big_cnn) */
static void add_big_cnn(tfl_model *m)
{
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_RESHAPE, .target_rank = 3,
                                       .target_shape = {28, 28, 1}});
    static const int64_t filters[3] = {64, 128, 256};
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < 2; i++)
            tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = filters[b],
                                               .kernel_size = {3, 3}, .padding = TFL_PADDING_SAME,
                                               .activation = TFL_ACT_RELU});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
    }
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 512,
                                       .activation = TFL_ACT_RELU});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 10});
}

/* In a context of its own (freed with the model, optimizer and data): the data on the host,
 * the model built and trained under a GPU:0 scope, under a precision policy. */
static double train_samples_per_s(model_kind kind, int steps, tfl_precision precision,
                                  bool graphs)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 1}, &st);
    if (!ctx) die(NULL, "tfl_ctx_new", tfl_status_name(st));
    check_status(ctx, tfl_ctx_set_precision(ctx, precision), "precision");
    const int64_t batch = kind == BIG_CNN ? 256 : BATCH;
    tfl_dataset *warm = synthetic(ctx, WARM * batch, 11);
    tfl_dataset *timed = synthetic(ctx, (int64_t)steps * batch, 12);
    check_status(ctx, tfl_device_scope_push(ctx, "GPU:0"), "scope");
    static const char *const names[] = {"mlp", "cnn", "big_cnn"};
    tfl_model *m = tfl_model_new(ctx, names[kind]);
    if (kind == BIG_CNN)
        add_big_cnn(m);
    else
        fashion_mnist_add_layers(m, kind == CNN);
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 1e-3;
    if (precision == TFL_PRECISION_FLOAT16) oo.loss_scale = 32768;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    check_status(
        ctx,
        tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, TFL_METRIC_ACCURACY),
        "compile");
    tfl_fit_opts fo = {.epochs = 1, .batch_size = batch, .shuffle = true, .seed = 1,
                       .step_graphs = graphs};
    check_status(ctx, tfl_model_fit(m, warm, &fo, NULL), "warm-up");
    tfl_tensor *v0 = NULL;
    tfl_model_variables(m, TFL_VARS_TRAINABLE, &v0, 1);
    if (!v0 || strcmp(tfl_tensor_device(v0), "GPU:0"))
        die(ctx, "placement", "the model's variables are not on GPU:0");
    gpu_sync(ctx);
    tfl_epoch_logs lg;
    tfl_history h = {&lg, 1, 0};
    double t0 = now_ns();
    check_status(ctx, tfl_model_fit(m, timed, &fo, &h), "timed fit");
    gpu_sync(ctx);
    double wall = (now_ns() - t0) * 1e-9;
    if (!(lg.loss > 0 && lg.loss < 10)) die(ctx, "timed fit", "the loss is not finite");
    tfl_ctx_free(ctx);
    return (double)lg.samples / wall;
}

/* ---- Adam against a device-to-device copy ---------------------------------------------- */

static double adam_gbs(tfl_ctx *ctx, int64_t n, int parts, int reps)
{
    tfl_tensor *vars[64], *grads[64];
    int64_t each = n / parts;
    tfl_frame_push(ctx);
    for (int i = 0; i < parts; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%d", i);
        vars[i] = tfl_variable_new(
            ctx, tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &each, -1, 1, (uint64_t)(i + 1)),
            &(tfl_variable_opts){.name = name, .device = "GPU:0"});
        grads[i] =
            tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &each, -1e-2, 1e-2, (uint64_t)(i + 100));
    }
    check(ctx, "adam operands");
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_PYTORCH);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    check_ptr(ctx, opt, "adam", "tfl_optimizer_new");
    for (int r = 0; r < 2; r++) /* the first makes the slots */
        check_status(ctx, tfl_optimizer_apply(opt, parts, vars, grads), "adam warm-up");
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        gpu_sync(ctx);
        double t0 = now_ns();
        check_status(ctx, tfl_optimizer_apply(opt, parts, vars, grads), "adam");
        gpu_sync(ctx);
        double t = now_ns() - t0;
        if (t < best) best = t;
    }
    tfl_optimizer_free(opt);
    for (int i = 0; i < parts; i++)
        tfl_tensor_release(vars[i]);
    tfl_frame_pop(ctx);
    return 28.0 * (double)(each * parts) / best;
}

static double copy_gbs(tfl_ctx *ctx, int64_t n, int reps)
{
    void *a, *b;
    size_t bytes = sizeof(float) * (size_t)n;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes)) die(ctx, "cudaMalloc", "failed");
    cudaMemset(a, 0, bytes);
    double best = 1e300;
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
    return 8.0 * (double)n / best;
}

/* ---- conv and pooling layers ------------------------------------------------------------ */

typedef struct layer {
    const char *name;
    int64_t h, w, cin, cout, k;
} layer;

static const layer k_layers[] = {
    {"l1", 28, 28, 1, 32, 3}, {"l2", 13, 13, 32, 64, 3}, {"l3", 14, 14, 64, 128, 3}};
static const tfl_pool2d_opts k_pool = {{2, 2}, {0, 0}, TFL_PADDING_VALID};

typedef enum which { FWD, BWD_INPUT, BWD_FILTER, POOL_FWD } which;

typedef struct operands {
    tfl_tensor *x, *w, *dy, *y;
} operands;

static void run_once(tfl_ctx *ctx, const operands *o, which what)
{
    check_status(ctx, tfl_frame_push(ctx), "frame");
    const tfl_tensor *r = NULL;
    switch (what) {
    case FWD:
        r = tfl_conv2d(ctx, o->x, o->w, NULL);
        break;
    case BWD_INPUT:
        r = tfl_conv2d_backprop_input(ctx, tfl_tensor_shape(o->x), o->w, o->dy, NULL);
        break;
    case BWD_FILTER:
        r = tfl_conv2d_backprop_filter(ctx, o->x, tfl_tensor_shape(o->w), o->dy, NULL);
        break;
    case POOL_FWD:
        r = tfl_max_pool2d(ctx, o->y, &k_pool);
        break;
    }
    check_ptr(ctx, r, "timed call", "the op");
    if (strcmp(tfl_tensor_device(r), "GPU:0")) die(ctx, "placement", "a conv op left GPU:0");
    check_status(ctx, tfl_frame_pop(ctx), "frame");
}

/* Seconds per call: the best of `reps` blocks of `iters` calls, after a warm-up block. */
static double per_call(tfl_ctx *ctx, const operands *o, which what, int iters, int reps)
{
    for (int i = 0; i < iters; i++)
        run_once(ctx, o, what);
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        gpu_sync(ctx);
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            run_once(ctx, o, what);
        gpu_sync(ctx);
        double t = (now_ns() - t0) / iters;
        if (t < best) best = t;
    }
    return best * 1e-9;
}

static void conv_layer(tfl_ctx *ctx, const layer *l, int iters, int reps)
{
    int64_t oh = l->h - l->k + 1, ow = l->w - l->k + 1;
    tfl_frame_push(ctx);
    operands o;
    o.x = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){BATCH, l->h, l->w, l->cin}, 0, 1,
                            11);
    o.w = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){l->k, l->k, l->cin, l->cout}, 0,
                            0.1, 12);
    o.dy =
        tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){BATCH, oh, ow, l->cout}, 0, 1, 13);
    o.y = tfl_conv2d(ctx, o.x, o.w, NULL);
    check_ptr(ctx, o.y, "conv setup", "tfl_conv2d");
    double flops = 2.0 * BATCH * (double)(oh * ow * l->k * l->k * l->cin * l->cout);
    static const char *names[3] = {"fwd", "bwd_input", "bwd_filter"};
    for (int w = FWD; w <= BWD_FILTER; w++)
        printf("bench gpu_conv_%s_%s %.1f GFLOP/s\n", l->name, names[w],
               flops / per_call(ctx, &o, (which)w, iters, reps) / 1e9);
    double bytes = 4.0 * (double)(BATCH * oh * ow * l->cout) * 1.25; /* in + out (a quarter) */
    printf("bench gpu_maxpool_%s_fwd %.1f GB/s\n", l->name,
           bytes / per_call(ctx, &o, POOL_FWD, iters, reps) / 1e9);
    fflush(stdout);
    tfl_frame_pop(ctx);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 1}, &st);
    if (!ctx) {
        fprintf(stderr, BENCH_NAME ": tfl_ctx_new: %s\n", tfl_status_name(st));
        return EXIT_FAILURE;
    }
    int gpu = -1;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        if (!strcmp(tfl_device_name(ctx, i), "GPU:0")) gpu = i;
    /* its timing synchronises through CUDA itself: a CUDA device (the suite's fake GPU is none) */
    int cuda_devices = 0;
    if (cudaGetDeviceCount(&cuda_devices) != cudaSuccess) cuda_devices = 0;
    if (gpu < 0 || cuda_devices == 0) {
        printf("skipped: no GPU%s\n", gpu >= 0 ? " (GPU:0 is not a CUDA device)" : "");
        tfl_ctx_free(ctx);
        return 0;
    }
    char line[256];
    tfl_device_describe(ctx, gpu, line, sizeof line);
    printf("bench_gpu_train on GPU:0: %s\n", line);
    check_status(ctx, tfl_device_scope_push(ctx, "GPU:0"), "scope");
    const int reps = quick ? 3 : 10;

    for (int cnn = 0; cnn < 2; cnn++) {
        int steps = quick ? 10 : cnn ? 200 : 400;
        for (int graphs = 0; graphs < 2; graphs++) {
            printf("bench gpu_train_%s%s_samples_per_s %.0f samples/s\n", cnn ? "cnn" : "mlp",
                   graphs ? "_graphs" : "",
                   train_samples_per_s(cnn ? CNN : MLP, steps, TFL_PRECISION_FLOAT32, graphs));
            fflush(stdout);
        }
    }
    static const tfl_precision policies[4] = {TFL_PRECISION_FLOAT32, TFL_PRECISION_TF32,
                                              TFL_PRECISION_BFLOAT16, TFL_PRECISION_FLOAT16};
    static const char *const suffix[4] = {"", "_tf32", "_bf16", "_fp16"};
    for (int p = 0; p < 4; p++) {
        printf("bench gpu_train_big_cnn%s_samples_per_s %.0f samples/s\n", suffix[p],
               train_samples_per_s(BIG_CNN, quick ? 5 : 100, policies[p], false));
        fflush(stdout);
    }
    printf("bench gpu_train_big_cnn_graphs_samples_per_s %.0f samples/s\n",
           train_samples_per_s(BIG_CNN, quick ? 5 : 100, TFL_PRECISION_FLOAT32, true));
    fflush(stdout);

    if (quick) {
        printf("bench gpu_adam_1e6 %.1f GB/s\n", adam_gbs(ctx, 1000000, 1, reps));
        printf("bench gpu_copy_d2d_1e6 %.1f GB/s\n", copy_gbs(ctx, 1000000, reps));
    } else {
        printf("bench gpu_adam_1e7 %.1f GB/s\n", adam_gbs(ctx, 10000000, 1, reps));
        printf("bench gpu_copy_d2d_1e7 %.1f GB/s\n", copy_gbs(ctx, 10000000, reps));
        double adam = adam_gbs(ctx, 100000000, 1, reps), copy = copy_gbs(ctx, 100000000, reps);
        printf("bench gpu_adam_1e8 %.1f GB/s\n", adam);
        printf("bench gpu_adam_1e8_x64 %.1f GB/s\n", adam_gbs(ctx, 100000000, 64, reps));
        printf("bench gpu_copy_d2d_1e8 %.1f GB/s\n", copy);
        printf("bench gpu_adam_copy_ratio_1e8 %.3f ratio\n", adam / copy);
    }
    fflush(stdout);

    for (size_t i = 0; i < sizeof k_layers / sizeof *k_layers; i++)
        conv_layer(ctx, &k_layers[i], quick ? 3 : 50, reps);
    tfl_device_scope_pop(ctx);
    printf("bench gpu_train_done 1 count\n");
    tfl_ctx_free(ctx);
    return 0;
}
