/* test_conv_paths.c: the CPU conv and pooling kernels' code paths against naive loops in
 * double, on shapes big enough to take them: whole-image tasks and row chunks (1 and 2
 * threads, batches of 1 to 6), output widths that fill, mask and span several register
 * panels (Cout 16, 32, 37, 70, 130), a 1x1 filter (no im2col), strides, dilations, SAME
 * padding, tasks of several images on small outputs (tall enough for the GEMM, a large
 * filter); pooling over 37 and 70 channels (vector blocks and their tails, channel blocks
 * shared by threads) with overlapping windows; the input gradient at stride 1 over 512 taps
 * and up to 64 channels in (a convolution of dy by the flipped filter on every CPU) in tasks
 * and chunks; that a warmed-up conv training step takes no memory from the system; and that
 * a refused copy of a strided operand fails each conv op. */
#include "test_ops_helpers.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct conv_case {
    int64_t n, h, w, c, kh, kw, f;
    tfl_conv2d_opts o;
    double loose; /* float32 tolerance times this, for sums of thousands of products */
} conv_case;

static const conv_case k_conv[] = {
    {5, 12, 12, 8, 3, 3, 16, {{1, 1}, {1, 1}, TFL_PADDING_VALID}, 1},
    {1, 12, 12, 8, 3, 3, 37, {{2, 2}, {1, 1}, TFL_PADDING_SAME}, 1},
    {6, 9, 11, 5, 2, 3, 70, {{1, 1}, {2, 1}, TFL_PADDING_SAME}, 1},
    {4, 10, 10, 16, 1, 1, 24, {{1, 1}, {1, 1}, TFL_PADDING_VALID}, 1},
    {3, 16, 16, 3, 5, 5, 8, {{3, 3}, {1, 1}, TFL_PADDING_SAME}, 1},
    {2, 20, 20, 4, 3, 3, 130, {{1, 2}, {1, 1}, TFL_PADDING_VALID}, 1},
    {4, 14, 14, 1, 3, 3, 32, {{1, 1}, {1, 1}, TFL_PADDING_VALID}, 1}, /* 9 taps: 9-row tiles */
    /* 288 taps on 7x7: tasks of several images, to reach 512 pixels (23: unequal tasks) */
    {23, 7, 7, 32, 3, 3, 40, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},
    /* a filter over 1 MiB (576 x 520 float32): tasks twice as tall */
    {5, 4, 4, 64, 3, 3, 520, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 4},
    /* stride 1 with over 512 taps, where the input gradient is a convolution of dy by the
     * flipped filter (so is the case above): one image (row chunks), SAME padding only after
     * (an even kernel), VALID with a dilation */
    {1, 8, 8, 64, 3, 3, 37, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},
    {2, 7, 7, 60, 2, 5, 12, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},
    {2, 9, 8, 60, 3, 3, 10, {{1, 1}, {2, 1}, TFL_PADDING_VALID}, 1},
    /* an image's im2col over 8 MiB (80 x 80 x 576 float32): chunks of output rows */
    {2, 80, 80, 64, 3, 3, 16, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 4},
};

/* TensorFlow's output size and padding before along one axis */
static void axis(int64_t in, int64_t k, int s, int d, tfl_padding p, int64_t *out, int64_t *pad)
{
    int64_t ke = (k - 1) * d + 1;
    if (p == TFL_PADDING_VALID) {
        *out = (in - ke) / s + 1;
        *pad = 0;
    } else {
        *out = (in + s - 1) / s;
        int64_t t = (*out - 1) * s + ke - in;
        *pad = t > 0 ? t / 2 : 0;
    }
}

static double *random_values(int64_t n, uint64_t seed)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)(seed >> 11) / 9007199254740992.0 * 4 - 2;
    }
    return v;
}

/* y, dx, dw by the definitions in ops.h */
static void naive_conv(const conv_case *k, const double *x, const double *w, const double *dy,
                       int64_t oh, int64_t ow, int64_t pt, int64_t pl, double *y, double *dx,
                       double *dw)
{
    int64_t xn = k->n * k->h * k->w * k->c, wn = k->kh * k->kw * k->c * k->f;
    memset(dx, 0, sizeof(double) * (size_t)xn);
    memset(dw, 0, sizeof(double) * (size_t)wn);
    int sh = k->o.strides[0], sw = k->o.strides[1], dh = k->o.dilations[0], dwl = k->o.dilations[1];
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++)
                for (int64_t f = 0; f < k->f; f++) {
                    int64_t yi = ((n * oh + i) * ow + j) * k->f + f;
                    double s = 0;
                    for (int64_t a = 0; a < k->kh; a++)
                        for (int64_t b = 0; b < k->kw; b++) {
                            int64_t ih = i * sh - pt + a * dh, iw = j * sw - pl + b * dwl;
                            if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                            for (int64_t c = 0; c < k->c; c++) {
                                int64_t xi = ((n * k->h + ih) * k->w + iw) * k->c + c;
                                int64_t wi = ((a * k->kw + b) * k->c + c) * k->f + f;
                                s += x[xi] * w[wi];
                                dx[xi] += dy[yi] * w[wi];
                                dw[wi] += x[xi] * dy[yi];
                            }
                        }
                    y[yi] = s;
                }
}

static void conv_paths(tfl_ctx *ctx)
{
    for (int ci = 0; ci < NELEMS(k_conv); ci++) {
        const conv_case *k = &k_conv[ci];
        int64_t oh, ow, pt, pl;
        axis(k->h, k->kh, k->o.strides[0], k->o.dilations[0], k->o.padding, &oh, &pt);
        axis(k->w, k->kw, k->o.strides[1], k->o.dilations[1], k->o.padding, &ow, &pl);
        int64_t xs[4] = {k->n, k->h, k->w, k->c}, ws[4] = {k->kh, k->kw, k->c, k->f};
        int64_t ys[4] = {k->n, oh, ow, k->f};
        int64_t xn = th_numel(4, xs), wn = th_numel(4, ws), yn = th_numel(4, ys);
        double *x = random_values(xn, 1 + ci), *w = random_values(wn, 100 + ci);
        double *dy = random_values(yn, 200 + ci);
        double *y = malloc(sizeof(double) * (size_t)yn), *dx = malloc(sizeof(double) * (size_t)xn);
        double *dw = malloc(sizeof(double) * (size_t)wn);
        assert_true(y && dx && dw);
        naive_conv(k, x, w, dy, oh, ow, pt, pl, y, dx, dw);
        const tfl_dtype dts[2] = {TH_F32, TH_F64};
        for (int d = 0; d < 2; d++) {
            double tol = dts[d] == TH_F64 ? 1e-12 : 3e-5 * k->loose;
            assert_int_equal(tfl_frame_push(ctx), TFL_OK);
            tfl_tensor *tx = TH_TENSOR_N(ctx, dts[d], 4, xs, x, (size_t)xn);
            tfl_tensor *tw = TH_TENSOR_N(ctx, dts[d], 4, ws, w, (size_t)wn);
            tfl_tensor *tdy = TH_TENSOR_N(ctx, dts[d], 4, ys, dy, (size_t)yn);
            print_message("case %d, %s, %d threads\n", ci, tfl_dtype_name(dts[d]),
                          tfl_ctx_num_threads(ctx));
            TH_EXPECT_N(ctx, tfl_conv2d(ctx, tx, tw, &k->o), dts[d], 4, ys, y, (size_t)yn, tol);
            /* dx sums up to KH KW Cout products (1170 in case 5) of values in [-2, 2]: in
             * another order than BLIS's (a GPU's cuDNN engine) float32 rounds such sums by a
             * few 1e-5, so they get dw's margin (a wrong index costs O(1)) */
            TH_EXPECT_N(ctx, tfl_conv2d_backprop_input(ctx, xs, tw, tdy, &k->o), dts[d], 4, xs, dx,
                        (size_t)xn, tol * 10);
            TH_EXPECT_N(ctx, tfl_conv2d_backprop_filter(ctx, tx, ws, tdy, &k->o), dts[d], 4, ws, dw,
                        (size_t)wn, tol * 10); /* sums of up to N OH OW products */
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        }
        free(x), free(w), free(dy), free(y), free(dx), free(dw);
    }
}

static void test_conv_paths_two_threads(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
    conv_paths(ctx);
    th_end(ctx);
}

static void test_conv_paths_one_thread(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 1), TFL_OK);
    conv_paths(ctx);
    th_end(ctx);
}

/* The same bits on 1, 2, 3 and 5 threads from all three conv ops, over random geometries (batches
 * of 1 to 40 images, tasks and row chunks, 1x1 and strided filters): the filter gradient sums
 * over every pixel, and once grouped its sums by thread (13 of 30 such geometries differed);
 * the first geometries are fixed ones over each way its plan splits a batch. */
static void test_conv_threads_same_bits(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    uint64_t seed = 12345;
#define RND(lo, hi) (seed = seed * 6364136223846793005ull + 1442695040888963407ull, \
                     (int64_t)(lo) + (int64_t)((seed >> 33) % (uint64_t)((hi) - (lo) + 1)))
    static const conv_case fixed[] = {
        {100, 7, 7, 32, 3, 3, 64, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1}, /* 16 blocks, 8 groups */
        {6, 14, 14, 16, 3, 3, 32, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1}, /* blocks of 1, 2 images */
        {3, 10, 10, 8, 3, 3, 24, {{1, 1}, {1, 1}, TFL_PADDING_VALID}, 1}, /* one block */
        {1, 64, 64, 64, 3, 3, 8, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},  /* row chunks */
        {9, 5, 5, 96, 3, 3, 600, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},  /* one block, BLIS */
        /* BLIS's small-matrix path below 64 rows, its packed one above: the rows of a
           block must not depend on the threads */
        {6, 4, 4, 64, 3, 3, 600, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},
        {6, 8, 8, 128, 3, 3, 96, {{2, 2}, {1, 1}, TFL_PADDING_SAME}, 1},
        {3, 80, 80, 64, 3, 3, 64, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1}, /* chunks of rows */
        {2, 30, 30, 600, 3, 3, 32, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1}, /* a chunk's end mid-image */
        /* 7.2 MB of im2col an image: side by side on 2 and 3 threads, in turn on 5 (five
           buffers would pass 32 MiB), the filter's 6 groups too */
        {6, 56, 56, 64, 3, 3, 16, {{1, 1}, {1, 1}, TFL_PADDING_SAME}, 1},
    };
    for (int ci = 0; ci < 40; ci++) {
        conv_case k = ci < NELEMS(fixed) ? fixed[ci] : (conv_case){0};
        if (ci >= NELEMS(fixed)) {
            k.n = RND(1, 40), k.h = RND(3, 16), k.w = RND(3, 16), k.c = RND(1, 48);
            k.kh = RND(1, 3), k.kw = RND(1, 3), k.f = RND(1, 80);
            k.o.strides[0] = (int)RND(1, 2), k.o.strides[1] = (int)RND(1, 2);
            k.o.dilations[0] = k.o.dilations[1] = (int)RND(1, 2);
            k.o.padding = RND(0, 1) ? TFL_PADDING_SAME : TFL_PADDING_VALID;
            if (k.o.strides[0] > 1 || k.o.strides[1] > 1) k.o.dilations[0] = k.o.dilations[1] = 1;
        }
        int64_t oh, ow, pt, pl;
        axis(k.h, k.kh, k.o.strides[0], k.o.dilations[0], k.o.padding, &oh, &pt);
        axis(k.w, k.kw, k.o.strides[1], k.o.dilations[1], k.o.padding, &ow, &pl);
        if (oh < 1 || ow < 1) continue;
        int64_t xs[4] = {k.n, k.h, k.w, k.c}, ws[4] = {k.kh, k.kw, k.c, k.f};
        int64_t ys[4] = {k.n, oh, ow, k.f};
        tfl_dtype dt = ci % 4 == 3 || ci == 6 ? TH_F64 : TH_F32;
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *x = tfl_random_uniform(ctx, dt, 4, xs, -1, 1, 10 + ci);
        tfl_tensor *w = tfl_random_uniform(ctx, dt, 4, ws, -1, 1, 20 + ci);
        tfl_tensor *dy = tfl_random_uniform(ctx, dt, 4, ys, -1, 1, 30 + ci);
        const size_t bytes[3] = {tfl_dtype_size(dt) * (size_t)th_numel(4, ys),
                                 tfl_dtype_size(dt) * (size_t)th_numel(4, xs),
                                 tfl_dtype_size(dt) * (size_t)th_numel(4, ws)};
        for (int op = 0; op < 3; op++) {
            char *got[4];
            static const int threads[4] = {1, 2, 3, 5};
            for (int t = 0; t < 4; t++) {
                assert_int_equal(tfl_ctx_set_num_threads(ctx, threads[t]), TFL_OK);
                tfl_tensor *r = op == 0   ? tfl_conv2d(ctx, x, w, &k.o)
                                : op == 1 ? tfl_conv2d_backprop_input(ctx, xs, w, dy, &k.o)
                                          : tfl_conv2d_backprop_filter(ctx, x, ws, dy, &k.o);
                got[t] = malloc(bytes[op]);
                assert_non_null(got[t]);
                assert_int_equal(tfl_tensor_to_host(r, got[t], bytes[op]), TFL_OK);
            }
            for (int t = 1; t < 4; t++)
                if (memcmp(got[0], got[t], bytes[op]))
                    fail_msg("%s, case %d: N %lld, %lldx%lldx%lld, filter %lldx%lld to %lld, "
                             "stride %dx%d: 1 and %d threads differ",
                             op == 0 ? "conv2d" : op == 1 ? "backprop input" : "backprop filter",
                             ci, (long long)k.n, (long long)k.h, (long long)k.w, (long long)k.c,
                             (long long)k.kh, (long long)k.kw, (long long)k.f, k.o.strides[0],
                             k.o.strides[1], threads[t]);
            for (int t = 0; t < 4; t++) free(got[t]);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
#undef RND
    th_end(ctx);
}

/* ---- pooling ----------------------------------------------------------------------------- */

typedef struct pool_case {
    int64_t n, h, w, c;
    tfl_pool2d_opts o;
} pool_case;

static const pool_case k_pool[] = {
    {1, 9, 10, 70, {{3, 3}, {2, 2}, TFL_PADDING_SAME}},
    {3, 8, 7, 37, {{2, 3}, {1, 2}, TFL_PADDING_VALID}},
    {4, 12, 12, 16, {{2, 2}, {0, 0}, TFL_PADDING_VALID}},
};

/* y, the max-pool gradient (first argmax) or the avg-pool one, by the definitions */
static void naive_pool(const pool_case *k, bool max, const double *x, const double *dy, int64_t oh,
                       int64_t ow, int64_t pt, int64_t pl, double *y, double *dx)
{
    int kh = k->o.ksize[0], kw = k->o.ksize[1];
    int sh = k->o.strides[0] ? k->o.strides[0] : kh, sw = k->o.strides[1] ? k->o.strides[1] : kw;
    memset(dx, 0, sizeof(double) * (size_t)(k->n * k->h * k->w * k->c));
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++)
                for (int64_t c = 0; c < k->c; c++) {
                    double best = -INFINITY, sum = 0;
                    int64_t arg = -1, count = 0;
                    for (int64_t a = 0; a < kh; a++)
                        for (int64_t b = 0; b < kw; b++) {
                            int64_t ih = i * sh - pt + a, iw = j * sw - pl + b;
                            if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                            int64_t xi = ((n * k->h + ih) * k->w + iw) * k->c + c;
                            if (x[xi] > best) best = x[xi], arg = xi;
                            sum += x[xi];
                            count++;
                        }
                    int64_t yi = ((n * oh + i) * ow + j) * k->c + c;
                    y[yi] = max ? best : sum / (double)count;
                    if (max) {
                        dx[arg] += dy[yi];
                        continue;
                    }
                    for (int64_t a = 0; a < kh; a++)
                        for (int64_t b = 0; b < kw; b++) {
                            int64_t ih = i * sh - pt + a, iw = j * sw - pl + b;
                            if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                            dx[((n * k->h + ih) * k->w + iw) * k->c + c] += dy[yi] / (double)count;
                        }
                }
}

static void test_pool_paths(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
    for (int pi = 0; pi < NELEMS(k_pool); pi++) {
        const pool_case *k = &k_pool[pi];
        int kh = k->o.ksize[0], kw = k->o.ksize[1];
        int64_t oh, ow, pt, pl;
        axis(k->h, kh, k->o.strides[0] ? k->o.strides[0] : kh, 1, k->o.padding, &oh, &pt);
        axis(k->w, kw, k->o.strides[1] ? k->o.strides[1] : kw, 1, k->o.padding, &ow, &pl);
        int64_t xs[4] = {k->n, k->h, k->w, k->c}, ys[4] = {k->n, oh, ow, k->c};
        int64_t xn = th_numel(4, xs), yn = th_numel(4, ys);
        double *x = random_values(xn, 300 + pi), *dy = random_values(yn, 400 + pi);
        double *y = malloc(sizeof(double) * (size_t)yn), *dx = malloc(sizeof(double) * (size_t)xn);
        assert_true(y && dx);
        for (int max = 0; max < 2; max++) {
            naive_pool(k, max, x, dy, oh, ow, pt, pl, y, dx);
            const tfl_dtype dts[2] = {TH_F32, TH_F64};
            for (int d = 0; d < 2; d++) {
                double tol = dts[d] == TH_F64 ? 1e-13 : 1e-6;
                assert_int_equal(tfl_frame_push(ctx), TFL_OK);
                tfl_tensor *tx = TH_TENSOR_N(ctx, dts[d], 4, xs, x, (size_t)xn);
                tfl_tensor *tdy = TH_TENSOR_N(ctx, dts[d], 4, ys, dy, (size_t)yn);
                tfl_tape *tape = tfl_tape_begin(ctx, 0);
                assert_int_equal(tfl_tape_watch(tape, tx), TFL_OK);
                tfl_tensor *ty =
                    max ? tfl_max_pool2d(ctx, tx, &k->o) : tfl_avg_pool2d(ctx, tx, &k->o);
                print_message("pool case %d, %s, %s\n", pi, max ? "max" : "avg",
                              tfl_dtype_name(dts[d]));
                TH_EXPECT_N(ctx, ty, dts[d], 4, ys, y, (size_t)yn, tol);
                tfl_tensor *g = NULL;
                assert_int_equal(
                    tfl_tape_vjp(tape, ty, tdy, 1, (const tfl_tensor *const *)&tx, &g, 0), TFL_OK);
                TH_EXPECT_N(ctx, g, dts[d], 4, xs, dx, (size_t)xn, tol);
                tfl_tape_free(tape);
                assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
            }
        }
        free(x), free(dy), free(y), free(dx);
    }
    th_end(ctx);
}

/* MaxPoolGrad of windows that do not overlap, fewer images than threads (channel blocks split
 * by threads, so channels move between the vector loops and the scalar tail): a dy of -0
 * gives dx +0 everywhere (added to dx's zeros, as TensorFlow's scatter does), on 1, 2 and 3
 * threads; the vector loops once stored -0 where the tail made +0. */
static void test_max_pool_grad_signed_zero(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const tfl_pool2d_opts o = {{2, 2}, {2, 2}, TFL_PADDING_VALID};
    const int64_t xs[4] = {2, 34, 34, 67}, ys[4] = {2, 17, 17, 67};
    const int64_t xn = th_numel(4, xs);
    tfl_tensor *x = tfl_random_uniform(ctx, TH_F32, 4, xs, -1, 1, 3);
    tfl_tensor *dy = tfl_neg(ctx, tfl_zeros(ctx, TH_F32, 4, ys));
    float *dx = malloc(sizeof(float) * (size_t)xn);
    assert_non_null(dx);
    for (int t = 1; t <= 3; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
        tfl_tensor *y = tfl_max_pool2d(ctx, x, &o), *g = NULL;
        assert_int_equal(tfl_tape_vjp(tape, y, dy, 1, (const tfl_tensor *const *)&x, &g, 0),
                         TFL_OK);
        assert_int_equal(tfl_tensor_to_host(g, dx, sizeof(float) * (size_t)xn), TFL_OK);
        for (int64_t i = 0; i < xn; i++)
            if (dx[i] != 0 || signbit(dx[i]))
                fail_msg("%d threads: dx[%lld] = %g", t, (long long)i, (double)dx[i]);
        tfl_tape_free(tape);
    }
    free(dx);
    th_end(ctx);
}

/* ---- steady state ---------------------------------------------------------------------- */

/* One conv + relu + max-pool training step's forward and backward (the CNN benchmark's
 * first layer, batch 8), warmed up once: the next steps take no memory from the system
 * (im2col buffers and partial sums come from the device's cache) and leave nothing behind */
static void test_no_fresh_allocations(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
    tfl_tensor *x = tfl_random_normal(ctx, TH_F32, 4, TH_SHAPE(8, 28, 28, 1), 0, 1, 1);
    tfl_tensor *w = tfl_random_normal(ctx, TH_F32, 4, TH_SHAPE(3, 3, 1, 32), 0, 0.1, 2);
    tfl_pool2d_opts po = {{2, 2}, {0, 0}, TFL_PADDING_VALID};
    tfl_alloc_stats s0 = {0}, s1 = {0};
    for (int step = 0; step < 4; step++) {
        if (step == 2) assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
        assert_int_equal(tfl_tape_watch(tape, w), TFL_OK);
        tfl_tensor *p = tfl_max_pool2d(ctx, tfl_relu(ctx, tfl_conv2d(ctx, x, w, NULL)), &po);
        tfl_tensor *loss = tfl_reduce_sum(ctx, p, 0, NULL, false), *g[2];
        const tfl_tensor *src[2] = {x, w};
        assert_int_equal(tfl_tape_gradient(tape, loss, 2, src, g, 0), TFL_OK);
        assert_non_null(g[0]);
        assert_non_null(g[1]);
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s1.live_tensors, s0.live_tensors);
    th_end(ctx);
}

/* A refused copy of a strided operand fails each conv op: NULL with RESOURCE_EXHAUSTED kept,
 * never an output of memory nothing wrote; with the memory back the same call computes. */
static void test_refused_copy_fails(void **state)
{
    (void)state;
    tfl_status st;
    size_t refuse_from = SIZE_MAX;
    tfl_ctx_opts opts = th_refusing_opts(&refuse_from, 1);
    tfl_ctx *ctx = tfl_ctx_new(&opts, &st);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *base = tfl_ones(ctx, TH_F32, 4, TH_SHAPE(1, 300, 300, 4));
    tfl_tensor *view = tfl_transpose(ctx, base, (const int[]){0, 2, 1, 3}); /* strided */
    tfl_tensor *w = tfl_ones(ctx, TH_F32, 4, TH_SHAPE(1, 1, 4, 1));
    tfl_tensor *w_in = tfl_ones(ctx, TH_F32, 4, TH_SHAPE(1, 1, 1, 4));
    tfl_tensor *dy = tfl_ones(ctx, TH_F32, 4, TH_SHAPE(1, 300, 300, 1));
    assert_non_null(view);
    assert_false(tfl_tensor_is_contiguous(view));
    for (int pass = 0; pass < 2; pass++) {
        refuse_from = pass == 0 ? (size_t)300 * 300 * 4 * sizeof(float) : SIZE_MAX;
        for (int op = 0; op < 3; op++) {
            tfl_tensor *r =
                op == 0   ? tfl_conv2d(ctx, view, w, NULL)
                : op == 1 ? tfl_conv2d_backprop_filter(ctx, view, (const int64_t[]){1, 1, 4, 1},
                                                       dy, NULL)
                          : tfl_conv2d_backprop_input(ctx, (const int64_t[]){1, 300, 300, 1},
                                                      w_in, view, NULL);
            if (pass == 0) {
                assert_null(r);
                assert_int_equal(tfl_ctx_error(ctx).code, TFL_RESOURCE_EXHAUSTED);
                tfl_ctx_clear_error(ctx);
                continue;
            }
            assert_non_null(r);
            float v[4];
            assert_int_equal(tfl_tensor_to_host(tfl_slice(ctx, r, (const int64_t[]){0, 0, 0, 0},
                                                          (const int64_t[]){1, 1, 1, 1}),
                                                v, sizeof(float)),
                             TFL_OK);
            /* every sum: 4 channels of ones; the filter gradient: 300 x 300 pixels */
            assert_true(v[0] == (op == 1 ? 90000.0f : 4.0f));
        }
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_conv_paths_two_threads),
        TH_TEST(test_conv_paths_one_thread),
        TH_TEST(test_conv_threads_same_bits),
        TH_TEST(test_pool_paths),
        TH_TEST(test_max_pool_grad_signed_zero),
        TH_TEST(test_no_fresh_allocations),
        cmocka_unit_test(test_refused_copy_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
