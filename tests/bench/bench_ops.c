/*
 * bench_ops.c: micro-benchmarks of tapeflow on the CPU. Measures the per-op overhead of
 * tfl_add and tfl_matmul on tiny float32 tensors (frames of 1000 ops, the frame pop
 * included) and the square float32 GEMM throughput of tfl_matmul against BLIS called
 * directly with the same thread count. Prints one line per figure:
 *
 *     bench <name> <value> <unit>
 *
 * Timings never fail the program; a failed op (an error kept by the context) or a wrong
 * GEMM result does, with a message on stderr. `--quick` shrinks the work for smoke runs.
 */
#include <tapeflow/tapeflow.h>

#include <blis.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPS_PER_FRAME 1000
#define OVERHEAD_REPS 5

typedef struct bench_cfg {
    long overhead_iters; /* ops per repetition in the overhead benchmarks */
    int n_sizes;
    const int *sizes;
} bench_cfg;

static const int full_sizes[] = {256, 512, 1024, 2048};
static const int quick_sizes[] = {256, 512};

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(tfl_ctx *ctx, const char *phase, const char *why) {
    fprintf(stderr, "bench_ops: %s: %s\n", phase, why);
    tfl_ctx_free(ctx);
    exit(EXIT_FAILURE);
}

/* Exits with the kept error when an op of `phase` failed. */
static void check(tfl_ctx *ctx, const char *phase) {
    if (tfl_ctx_status(ctx) != TFL_OK) {
        tfl_error err = tfl_ctx_error(ctx);
        char why[512];
        snprintf(why, sizeof why, "%s: %s", tfl_status_name(err.code), err.message);
        die(ctx, phase, why);
    }
}

static void check_status(tfl_ctx *ctx, tfl_status st, const char *phase) {
    if (st != TFL_OK) {
        check(ctx, phase); /* prefer the context's message when it kept one */
        die(ctx, phase, tfl_status_name(st));
    }
}

/* Deterministic values in [-1, 1). */
static void fill_random(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

typedef enum overhead_op { OP_ADD, OP_MATMUL } overhead_op;

/*
 * Best-of-OVERHEAD_REPS nanoseconds per op for `iters` calls of the op on a and b, in
 * frames of OPS_PER_FRAME ops so the frame's release cost is part of the figure.
 */
static double bench_overhead(tfl_ctx *ctx, overhead_op op, const tfl_tensor *a,
                             const tfl_tensor *b, long iters, const char *phase) {
    long frames = iters / OPS_PER_FRAME;
    if (frames < 1) frames = 1;
    double best = INFINITY;
    for (int rep = 0; rep < OVERHEAD_REPS; rep++) {
        double t0 = now_ns();
        for (long f = 0; f < frames; f++) {
            check_status(ctx, tfl_frame_push(ctx), phase);
            if (op == OP_ADD) {
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_add(ctx, a, b);
            } else {
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_matmul(ctx, a, b, 0);
            }
            check_status(ctx, tfl_frame_pop(ctx), phase);
        }
        double t = (now_ns() - t0) / (double)(frames * OPS_PER_FRAME);
        check(ctx, phase);
        if (t < best) best = t;
    }
    return best;
}

static int gemm_reps(int n, bool quick) {
    if (quick) return 2;
    if (n <= 256) return 20;
    if (n <= 512) return 10;
    if (n <= 1024) return 5;
    return 3;
}

/* One tapeflow GEMM in its own frame; copies C out when `out` is not NULL. */
static double tapeflow_gemm_once(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b,
                                 float *out, size_t bytes, const char *phase) {
    double t0 = now_ns();
    check_status(ctx, tfl_frame_push(ctx), phase);
    tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
    if (c == NULL) {
        check(ctx, phase);
        die(ctx, phase, "tfl_matmul returned NULL without an error");
    }
    double c0; /* touch the result, so a lazy kernel would be timed too */
    check_status(ctx, tfl_tensor_get(c, 0, &c0), phase);
    double t = now_ns() - t0;
    if (out != NULL) check_status(ctx, tfl_tensor_to_host(c, out, bytes), phase);
    check_status(ctx, tfl_frame_pop(ctx), phase);
    return t;
}

static double blis_gemm_once(int n, const float *a, const float *b, float *c, rntm_t *rntm) {
    float one = 1.0f, zero = 0.0f;
    double t0 = now_ns();
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, n, n, n, &one, (float *)a, n, 1,
                 (float *)b, n, 1, &zero, c, n, 1, NULL, rntm);
    return now_ns() - t0;
}

/* Largest |x - y| relative to the largest |y|. */
static double rel_diff(const float *x, const float *y, size_t n) {
    double dmax = 0.0, ymax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= dmax)) dmax = d; /* catches NaN too */
        if (fabs((double)y[i]) > ymax) ymax = fabs((double)y[i]);
    }
    return ymax > 0.0 ? dmax / ymax : dmax;
}

static void bench_sgemm(tfl_ctx *ctx, int n, int nt, bool quick) {
    char phase[64];
    snprintf(phase, sizeof phase, "sgemm %d", n);
    size_t count = (size_t)n * (size_t)n;
    size_t bytes = count * sizeof(float);
    float *ha = malloc(bytes), *hb = malloc(bytes), *hc_tfl = malloc(bytes),
          *hc_blis = malloc(bytes);
    if (!ha || !hb || !hc_tfl || !hc_blis) die(ctx, phase, "out of host memory");
    fill_random(ha, count, 1u + (uint32_t)n);
    fill_random(hb, count, 2u + (uint32_t)n);

    const int64_t shape[2] = {n, n};
    tfl_tensor *a = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, ha);
    tfl_tensor *b = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, hb);
    check(ctx, phase);

    const int reps = gemm_reps(n, quick);
    const double flop = 2.0 * (double)n * (double)n * (double)n;

    /* tapeflow: warm-up (result kept for the check), then best of reps. */
    tapeflow_gemm_once(ctx, a, b, hc_tfl, bytes, phase);
    double best_tfl = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t = tapeflow_gemm_once(ctx, a, b, NULL, 0, phase);
        if (t < best_tfl) best_tfl = t;
    }
    check(ctx, phase);

    /* BLIS directly, with the same number of threads. */
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(nt, &rntm);
    blis_gemm_once(n, ha, hb, hc_blis, &rntm);
    double best_blis = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t = blis_gemm_once(n, ha, hb, hc_blis, &rntm);
        if (t < best_blis) best_blis = t;
    }

    double diff = rel_diff(hc_tfl, hc_blis, count);
    if (!(diff <= 1e-3)) {
        char why[128];
        snprintf(why, sizeof why, "tfl_matmul differs from BLIS (relative error %g)", diff);
        die(ctx, phase, why);
    }

    double gf_tfl = flop / best_tfl; /* flop per ns = GFLOP/s */
    double gf_blis = flop / best_blis;
    printf("bench sgemm_tapeflow_%d %.2f GFLOP/s\n", n, gf_tfl);
    printf("bench sgemm_blis_%d %.2f GFLOP/s\n", n, gf_blis);
    printf("bench sgemm_ratio_%d %.3f ratio\n", n, gf_tfl / gf_blis);
    fflush(stdout);

    tfl_tensor_release(a);
    tfl_tensor_release(b);
    free(ha);
    free(hb);
    free(hc_tfl);
    free(hc_blis);
}

static void usage(FILE *f) {
    fprintf(f, "usage: bench_ops [--quick]\n"
               "  --quick  fewer iterations and sizes 256 and 512 only (smoke run)\n"
               "Threads: OMP_NUM_THREADS (or all cores).\n");
}

int main(int argc, char **argv) {
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_SUCCESS;
        } else {
            fprintf(stderr, "bench_ops: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    bench_cfg cfg = quick ? (bench_cfg){20000, 2, quick_sizes}
                          : (bench_cfg){200000, 4, full_sizes};

    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (ctx == NULL) {
        fprintf(stderr, "bench_ops: tfl_ctx_new: %s\n", tfl_status_name(st));
        return EXIT_FAILURE;
    }
    const int nt = tfl_ctx_num_threads(ctx);
    printf("bench threads %d count\n", nt);
    fflush(stdout);

    /* Per-op overhead: caller-owned inputs, outputs owned by the frames. */
    const float v4[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const int64_t s4[1] = {4};
    tfl_tensor *x4 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, v4);
    tfl_tensor *y4 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, v4);
    check(ctx, "add setup");
    double add_ns = bench_overhead(ctx, OP_ADD, x4, y4, cfg.overhead_iters, "add overhead");
    printf("bench add_f32_4_overhead %.1f ns/op\n", add_ns);
    fflush(stdout);
    tfl_tensor_release(x4);
    tfl_tensor_release(y4);

    float v44[16];
    fill_random(v44, 16, 7u);
    const int64_t s44[2] = {4, 4};
    tfl_tensor *m1 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, s44, v44);
    tfl_tensor *m2 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, s44, v44);
    check(ctx, "matmul setup");
    double mm_ns =
        bench_overhead(ctx, OP_MATMUL, m1, m2, cfg.overhead_iters, "matmul overhead");
    printf("bench matmul_f32_4_overhead %.1f ns/op\n", mm_ns);
    fflush(stdout);
    tfl_tensor_release(m1);
    tfl_tensor_release(m2);

    for (int i = 0; i < cfg.n_sizes; i++) bench_sgemm(ctx, cfg.sizes[i], nt, quick);

    check(ctx, "teardown");
    tfl_ctx_free(ctx);
    return EXIT_SUCCESS;
}
