/*
 * bench_conv.c: benchmarks of the convolution and max-pooling kernels on the CPU, on the
 * layers of the small CNN a Fashion-MNIST config trains (batch 128, float32, NHWC):
 *   l1: conv 3x3, 1 -> 32 channels, VALID, on 28x28 (out 26x26), then max-pool 2x2 (13x13);
 *   l2: conv 3x3, 32 -> 64 channels, VALID, on 13x13 (out 11x11), then max-pool 2x2 (5x5);
 * or, with --model big_cnn, on those of bench_train's big_cnn (batch 256, 3x3, SAME, each
 * followed by a max-pool 2x2 here): b1 1 -> 64 and b2 64 -> 64 on 28x28, b3 64 -> 128 and
 * b4 128 -> 128 on 14x14, b5 128 -> 256 and b6 256 -> 256 on 7x7.
 * Its PyTorch twin is torch_conv.py (same figure names, prefixed torch_).
 *
 * Figures, each the best of 7 blocks (--quick: 3) of calls taking about 30 ms (--quick:
 * 5 ms) after a warm-up, each call in a frame of its own (the pop included):
 *  - conv_<l1|l2>_fwd, conv_<l1|l2>_bwd_input, conv_<l1|l2>_bwd_filter, GFLOP/s:
 *    tfl_conv2d, tfl_conv2d_backprop_input and tfl_conv2d_backprop_filter, counted as
 *    2·N·OH·OW·KH·KW·Cin·Cout flops each;
 *  - maxpool_<l1|l2>_fwd, GB/s: tfl_max_pool2d on the conv's output, input + output bytes;
 *  - maxpool_<l1|l2>_bwd, GB/s: MaxPoolGrad alone, run by tfl_tape_vjp of a persistent
 *    tape that recorded the pooling once (a vjp adds a few microseconds), x + dy + dx bytes.
 * Before timing, the three conv ops are checked against each other with the adjoint
 * identities <dy, conv(x, w)> = <backprop_input(dy), x> = <backprop_filter(dy), w> (in
 * double, relative 1e-4), one output of the conv against a sum on the host, and the pooling
 * gradient for sum(dx) = sum(dy); after timing, that the timed calls left no tensor or byte
 * behind.
 *
 * Prints one line per figure, and nothing else on stdout (notes go to stderr, each line
 * starting "bench_conv note: "; errors start "bench_conv: "):
 *
 *     bench <name> <value> <unit>
 *
 * Timings never fail the program; a failed call or a failed check does, with a message on
 * stderr. `--quick` runs fewer and shorter blocks (run_side_by_side.sh passes it on, the
 * smoke test uses it); `--threads N` sets the kernels' threads (default 2).
 */
#include <tapeflow/tapeflow.h>

#define BENCH_NAME "bench_conv"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layer {
    const char *name;
    int64_t h, w, cin, cout, k, pad; /* pad: 0 VALID, else SAME with (k - 1) / 2 */
} layer;

static const layer k_layers[] = {{"l1", 28, 28, 1, 32, 3, 0}, {"l2", 13, 13, 32, 64, 3, 0}};
static const layer k_big_layers[] = {
    {"b1", 28, 28, 1, 64, 3, 1},    {"b2", 28, 28, 64, 64, 3, 1},   {"b3", 14, 14, 64, 128, 3, 1},
    {"b4", 14, 14, 128, 128, 3, 1}, {"b5", 7, 7, 128, 256, 3, 1},   {"b6", 7, 7, 256, 256, 3, 1}};

static int64_t g_batch = 128; /* 256 for big_cnn */
static tfl_conv2d_opts g_conv; /* the layers' padding */

typedef struct bench_cfg {
    int reps;        /* blocks; the best counts */
    double block_ns; /* what a block aims to take */
} bench_cfg;

/* What one timed call runs. */
typedef enum which { FWD, BWD_INPUT, BWD_FILTER, POOL_FWD, POOL_BWD } which;

typedef struct operands {
    tfl_tensor *x, *w, *dy, *y, *dp; /* conv input, filter, conv output gradient, conv output,
                                        pooled gradient */
    tfl_tape *pool_tape;             /* persistent: recorded max_pool2d(y) */
    tfl_tensor *pooled;              /* its output */
} operands;

static const tfl_pool2d_opts k_pool = {{2, 2}, {0, 0}, TFL_PADDING_VALID};

/* One call of `what`, in a frame. */
static void run_once(tfl_ctx *ctx, const operands *o, which what)
{
    check_status(ctx, tfl_frame_push(ctx), "frame");
    const tfl_tensor *r = NULL;
    tfl_tensor *g = NULL;
    switch (what) {
    case FWD:
        r = tfl_conv2d(ctx, o->x, o->w, &g_conv);
        break;
    case BWD_INPUT:
        r = tfl_conv2d_backprop_input(ctx, tfl_tensor_shape(o->x), o->w, o->dy, &g_conv);
        break;
    case BWD_FILTER:
        r = tfl_conv2d_backprop_filter(ctx, o->x, tfl_tensor_shape(o->w), o->dy, &g_conv);
        break;
    case POOL_FWD:
        r = tfl_max_pool2d(ctx, o->y, &k_pool);
        break;
    case POOL_BWD:
        check_status(ctx,
                     tfl_tape_vjp(o->pool_tape, o->pooled, o->dp, 1,
                                  (const tfl_tensor *const *)&o->y, &g, 0),
                     "vjp");
        r = g;
        break;
    }
    check_ptr(ctx, r, "timed call", "the op");
    check_status(ctx, tfl_frame_pop(ctx), "frame");
}

/* Seconds per call: the best of cfg->reps blocks, sized from a first call. */
static double best_seconds(tfl_ctx *ctx, const operands *o, which what, const bench_cfg *cfg)
{
    double t0 = now_ns();
    run_once(ctx, o, what); /* warm-up, and the size of a block */
    double one = now_ns() - t0;
    int iters = (int)(cfg->block_ns / (one > 1 ? one : 1));
    if (iters < 1) iters = 1;
    for (int i = 0; i < iters / 4 + 1; i++)
        run_once(ctx, o, what);
    double best = 1e300;
    for (int r = 0; r < cfg->reps; r++) {
        double b0 = now_ns();
        for (int i = 0; i < iters; i++)
            run_once(ctx, o, what);
        double t = (now_ns() - b0) / iters;
        if (t < best) best = t;
    }
    return best * 1e-9;
}

/* <a, b> in double over two float32 tensors of one shape */
static double dot(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b)
{
    int64_t n = tfl_tensor_numel(a);
    float *pa = malloc(sizeof(float) * (size_t)n), *pb = malloc(sizeof(float) * (size_t)n);
    if (!pa || !pb) die(ctx, "check", "out of host memory");
    check_status(ctx, tfl_tensor_to_host(a, pa, sizeof(float) * (size_t)n), "to_host");
    check_status(ctx, tfl_tensor_to_host(b, pb, sizeof(float) * (size_t)n), "to_host");
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)pa[i] * pb[i];
    free(pa);
    free(pb);
    return s;
}

static double sum_all(tfl_ctx *ctx, const tfl_tensor *t)
{
    return dot(ctx, t, tfl_ones_like(ctx, t));
}

static void expect_close(tfl_ctx *ctx, const char *what, double got, double want)
{
    if (!(fabs(got - want) <= 1e-4 * (fabs(want) + 1))) {
        char why[256];
        snprintf(why, sizeof why, "%s: %.9g, expected %.9g", what, got, want);
        die(ctx, "check", why);
    }
}

/* The adjoint identities, one conv output against the host, and the pooling gradient. */
static void verify(tfl_ctx *ctx, const layer *l, const operands *o)
{
    check_status(ctx, tfl_frame_push(ctx), "frame");
    tfl_tensor *dx = tfl_conv2d_backprop_input(ctx, tfl_tensor_shape(o->x), o->w, o->dy, &g_conv);
    tfl_tensor *dw = tfl_conv2d_backprop_filter(ctx, o->x, tfl_tensor_shape(o->w), o->dy, &g_conv);
    check(ctx, "check");
    double ref = dot(ctx, o->dy, o->y);
    expect_close(ctx, "<dx, x> against <dy, conv(x, w)>", dot(ctx, dx, o->x), ref);
    expect_close(ctx, "<dw, w> against <dy, conv(x, w)>", dot(ctx, dw, o->w), ref);
    /* output (n 5, oh 5, ow 3, co 1) by hand: its window is inside the image */
    int64_t oh = l->h - l->k + 1 + 2 * l->pad, ow = l->w - l->k + 1 + 2 * l->pad, n = 5, i0 = 5,
            j0 = 3, co = 1;
    size_t nx = (size_t)tfl_tensor_numel(o->x), nw = (size_t)tfl_tensor_numel(o->w);
    size_t ny = (size_t)tfl_tensor_numel(o->y);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4);
    if (!x || !w || !y) die(ctx, "check", "out of host memory");
    check_status(ctx, tfl_tensor_to_host(o->x, x, nx * 4), "to_host");
    check_status(ctx, tfl_tensor_to_host(o->w, w, nw * 4), "to_host");
    check_status(ctx, tfl_tensor_to_host(o->y, y, ny * 4), "to_host");
    double s = 0;
    for (int64_t i = 0; i < l->k; i++)
        for (int64_t j = 0; j < l->k; j++) {
            int64_t ih = i0 - l->pad + i, iw = j0 - l->pad + j;
            for (int64_t c = 0; c < l->cin; c++)
                s += (double)x[((n * l->h + ih) * l->w + iw) * l->cin + c] *
                     w[((i * l->k + j) * l->cin + c) * l->cout + co];
        }
    expect_close(ctx, "a conv output", y[((n * oh + i0) * ow + j0) * l->cout + co], s);
    free(x);
    free(w);
    free(y);
    tfl_tensor *g = NULL;
    check_status(
        ctx,
        tfl_tape_vjp(o->pool_tape, o->pooled, o->dp, 1, (const tfl_tensor *const *)&o->y, &g, 0),
        "vjp");
    expect_close(ctx, "sum of the pooling gradient", sum_all(ctx, g), sum_all(ctx, o->dp));
    check_status(ctx, tfl_frame_pop(ctx), "frame");
}

static void bench_layer(tfl_ctx *ctx, const layer *l, const bench_cfg *cfg)
{
    operands o;
    int64_t oh = l->h - l->k + 1 + 2 * l->pad, ow = l->w - l->k + 1 + 2 * l->pad;
    const int64_t batch = g_batch;
    g_conv.padding = l->pad ? TFL_PADDING_SAME : TFL_PADDING_VALID;
    o.x = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){batch, l->h, l->w, l->cin}, 0, 1,
                            11);
    o.w = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){l->k, l->k, l->cin, l->cout}, 0,
                            0.1, 12);
    o.dy =
        tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){batch, oh, ow, l->cout}, 0, 1, 13);
    o.y = tfl_conv2d(ctx, o.x, o.w, &g_conv);
    o.dp = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 4, (int64_t[]){batch, oh / 2, ow / 2, l->cout},
                             0, 1, 14);
    check(ctx, "setup");
    o.pool_tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    check_ptr(ctx, o.pool_tape, "setup", "tfl_tape_begin");
    check_status(ctx, tfl_tape_watch(o.pool_tape, o.y), "setup");
    o.pooled = tfl_max_pool2d(ctx, o.y, &k_pool);
    check_status(ctx, tfl_tape_end(o.pool_tape), "setup");
    check_ptr(ctx, o.pooled, "setup", "tfl_max_pool2d");
    verify(ctx, l, &o);

    tfl_alloc_stats s0 = cpu_stats(ctx, "stats");
    double flops = 2.0 * batch * oh * ow * l->k * l->k * l->cin * l->cout;
    static const char *const conv_names[] = {"fwd", "bwd_input", "bwd_filter"};
    for (int k = FWD; k <= BWD_FILTER; k++)
        printf("bench conv_%s_%s %.2f GFLOP/s\n", l->name, conv_names[k],
               flops / best_seconds(ctx, &o, (which)k, cfg) * 1e-9);
    double ny = (double)tfl_tensor_numel(o.y), np = (double)tfl_tensor_numel(o.pooled);
    printf("bench maxpool_%s_fwd %.2f GB/s\n", l->name,
           4 * (ny + np) / best_seconds(ctx, &o, POOL_FWD, cfg) * 1e-9);
    printf("bench maxpool_%s_bwd %.2f GB/s\n", l->name,
           4 * (2 * ny + np) / best_seconds(ctx, &o, POOL_BWD, cfg) * 1e-9);
    fflush(stdout);
    tfl_alloc_stats s1 = cpu_stats(ctx, "stats");
    check_nothing_left(ctx, &s0, &s1, 1, "blocks of timed calls", "timing");
    tfl_tape_free(o.pool_tape);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_conv [--quick] [--threads N] [--model cnn|big_cnn]\n"
               "  --quick       fewer, shorter blocks\n"
               "  --model M     the layers of cnn (default: l1, l2) or big_cnn (b1..b6)\n"
               "  --threads N   threads for kernels (default 2)\n");
}

int main(int argc, char **argv)
{
    bench_cfg cfg = {7, 30e6};
    int threads = 2;
    const layer *layers = k_layers;
    size_t nlayers = sizeof k_layers / sizeof k_layers[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            cfg = (bench_cfg){3, 5e6};
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1) {
                fprintf(stderr, "bench_conv: --threads wants a positive count\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            const char *m = argv[++i];
            if (strcmp(m, "big_cnn") == 0) {
                layers = k_big_layers;
                nlayers = sizeof k_big_layers / sizeof k_big_layers[0];
                g_batch = 256;
            } else if (strcmp(m, "cnn") != 0) {
                fprintf(stderr, "bench_conv: --model is cnn or big_cnn, not '%s'\n", m);
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_conv: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = threads}, &st);
    if (!ctx) {
        fprintf(stderr, "bench_conv: tfl_ctx_new: %s\n", tfl_status_name(st));
        return 1;
    }
    fprintf(stderr, "bench_conv note: %d threads, batch %d, float32 NHWC\n",
            tfl_ctx_num_threads(ctx), (int)g_batch);
    printf("bench conv_threads %d count\n", tfl_ctx_num_threads(ctx));
    for (size_t i = 0; i < nlayers; i++) {
        check_status(ctx, tfl_frame_push(ctx), "frame");
        bench_layer(ctx, &layers[i], &cfg);
        check_status(ctx, tfl_frame_pop(ctx), "frame");
    }
    tfl_ctx_free(ctx);
    return 0;
}
