/*
 * bench_ops.c: micro-benchmarks of tapeflow on the CPU. Measures the per-op overhead of
 * tfl_add and tfl_matmul on tiny float32 tensors (frames of 1000 ops, the frame pop
 * included), the variable updates (tfl_variable_assign_add on float32 [4]: overhead; on
 * float32 [1<<20]: bandwidth, and the allocations it makes, which must be none) and
 * snapshots (tfl_variable_read on float32 [4]: overhead), a linear layer's product with its
 * bias (tfl_matmul_bias against tfl_matmul then tfl_add, on a transformer's shapes; the two
 * must agree bit for bit), and the square float32 GEMM throughput of tfl_matmul against BLIS
 * called directly with the same thread count.
 * Prints one line per figure:
 *
 *     bench <name> <value> <unit>
 *
 * Timings never fail the program; a failed op (an error kept by the context), a wrong
 * GEMM or assign_add result, or an assign_add that allocates does, with a message on
 * stderr. `--quick` shrinks the work for smoke runs.
 */
#include <tapeflow/tapeflow.h>

#include <blis.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_ops"
#include "bench_util.h"

#define OPS_PER_FRAME 1000
#define OVERHEAD_REPS 5
#define VAR_BIG_N (1 << 20) /* elements of the variable_assign_add_1m variable */
#define VAR_BIG_REPS 5

typedef struct bench_cfg {
    long overhead_iters; /* ops per repetition in the overhead benchmarks */
    long var_big_iters;  /* assign_adds per repetition of variable_assign_add_1m */
    int n_sizes;
    const int *sizes;
} bench_cfg;

static const int full_sizes[] = {256, 512, 1024, 2048};
static const int quick_sizes[] = {256, 512};

/* Deterministic values in [-1, 1). */
static void fill_random(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

typedef enum overhead_op { OP_ADD, OP_MATMUL, OP_ASSIGN_ADD, OP_READ } overhead_op;

/*
 * Best-of-OVERHEAD_REPS nanoseconds per op for `iters` calls of the op on a and b, in
 * frames of OPS_PER_FRAME ops so the frame's release cost is part of the figure.
 * OP_ASSIGN_ADD is tfl_variable_assign_add(a, b) (a a variable, written in place: frames
 * own nothing); OP_READ is tfl_variable_read(a) (b unused; the frames own the snapshots).
 */
static double bench_overhead(tfl_ctx *ctx, overhead_op op, tfl_tensor *a,
                             const tfl_tensor *b, long iters, const char *phase) {
    long frames = iters / OPS_PER_FRAME;
    if (frames < 1) frames = 1;
    double best = INFINITY;
    for (int rep = 0; rep < OVERHEAD_REPS; rep++) {
        double t0 = now_ns();
        for (long f = 0; f < frames; f++) {
            check_status(ctx, tfl_frame_push(ctx), phase);
            switch (op) {
            case OP_ADD:
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_add(ctx, a, b);
                break;
            case OP_MATMUL:
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_matmul(ctx, a, b, 0);
                break;
            case OP_ASSIGN_ADD:
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_variable_assign_add(a, b);
                break;
            case OP_READ:
                for (int i = 0; i < OPS_PER_FRAME; i++) (void)tfl_variable_read(a);
                break;
            }
            check_status(ctx, tfl_frame_pop(ctx), phase);
        }
        double t = (now_ns() - t0) / (double)(frames * OPS_PER_FRAME);
        check(ctx, phase);
        if (t < best) best = t;
    }
    return best;
}

/* How many calls bench_overhead makes for `iters` (the count of its ops, all reps). */
static long overhead_calls(long iters) {
    long frames = iters / OPS_PER_FRAME;
    if (frames < 1) frames = 1;
    return (long)OVERHEAD_REPS * frames * OPS_PER_FRAME;
}

/* Dies unless `got` (a variable copied to the host) equals `want` exactly (small integers). */
static void check_values(tfl_ctx *ctx, const float *got, const float *want, size_t n,
                         const char *phase) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            char why[160];
            snprintf(why, sizeof why, "element %zu is %g, expected %g", i, (double)got[i],
                     (double)want[i]);
            die(ctx, phase, why);
        }
    }
}

/* Allocations the caching allocator of CPU:0 has served so far (fresh or cached). */
static uint64_t cpu_allocs(tfl_ctx *ctx, const char *phase) {
    tfl_alloc_stats s;
    check_status(ctx, tfl_alloc_stats_get(ctx, "CPU:0", &s), phase);
    return s.fresh_allocs + s.cache_hits;
}

/*
 * variable_assign_add_4, variable_read_4: per-call overhead on a float32 [4] variable, as
 * the op overheads (frames of OPS_PER_FRAME calls, best of OVERHEAD_REPS). The value is
 * made once, outside the loop; integer values keep the sums exact, so the variable's
 * final value is checked.
 */
static void bench_variable_small(tfl_ctx *ctx, long iters) {
    const char *phase = "variable_assign_add_4";
    const float init[4] = {1.0f, 2.0f, 3.0f, 4.0f}, step[4] = {1.0f, 0.0f, 2.0f, 1.0f};
    const int64_t s4[1] = {4};
    tfl_tensor *t0 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, init);
    tfl_tensor *v = tfl_variable_new(ctx, t0, NULL);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, step);
    check(ctx, phase);
    if (v == NULL || x == NULL) die(ctx, phase, "setup returned NULL without an error");
    tfl_tensor_release(t0);

    double ns = bench_overhead(ctx, OP_ASSIGN_ADD, v, x, iters, phase);
    float got[4], want[4];
    const double calls = (double)overhead_calls(iters); /* < 2^24: exact in float */
    for (int i = 0; i < 4; i++) want[i] = (float)(init[i] + calls * step[i]);
    check_status(ctx, tfl_tensor_to_host(v, got, sizeof got), phase);
    check_values(ctx, got, want, 4, phase);
    printf("bench variable_assign_add_4 %.1f ns/op\n", ns);
    fflush(stdout);

    phase = "variable_read_4";
    ns = bench_overhead(ctx, OP_READ, v, NULL, iters, phase);
    printf("bench variable_read_4 %.1f ns/op\n", ns);
    fflush(stdout);

    tfl_tensor_release(v);
    tfl_tensor_release(x);
}

/*
 * variable_assign_add_1m: GB/s of tfl_variable_assign_add on a float32 [VAR_BIG_N]
 * variable, counting 3 * 4 * n bytes a call (read v, read x, write v); best of
 * VAR_BIG_REPS repetitions of `iters` calls in one frame, after a warm-up call. Also
 * variable_assign_add_1m_allocs: the allocations of CPU:0 over the timed calls, which must
 * be 0 (no snapshot is alive, so every write is in place). Integer values keep the sums
 * exact, so the final value is checked.
 */
static void bench_variable_big(tfl_ctx *ctx, long iters) {
    const char *phase = "variable_assign_add_1m";
    const size_t n = VAR_BIG_N, bytes = n * sizeof(float);
    float *h0 = malloc(bytes), *hx = malloc(bytes), *hv = malloc(bytes);
    if (!h0 || !hx || !hv) die(ctx, phase, "out of host memory");
    for (size_t i = 0; i < n; i++) {
        h0[i] = (float)(i % 5);
        hx[i] = (float)((int)(i % 7) - 3);
    }
    const int64_t shape[1] = {(int64_t)n};
    tfl_tensor *t0 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, shape, h0);
    tfl_tensor *v = tfl_variable_new(ctx, t0, NULL);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, shape, hx);
    check(ctx, phase);
    if (v == NULL || x == NULL) die(ctx, phase, "setup returned NULL without an error");
    tfl_tensor_release(t0);

    check_status(ctx, tfl_variable_assign_add(v, x), phase); /* warm-up */
    long calls = 1;
    const uint64_t allocs0 = cpu_allocs(ctx, phase);
    double best = INFINITY;
    for (int rep = 0; rep < VAR_BIG_REPS; rep++) {
        double t0ns = now_ns();
        check_status(ctx, tfl_frame_push(ctx), phase);
        for (long i = 0; i < iters; i++) (void)tfl_variable_assign_add(v, x);
        check_status(ctx, tfl_frame_pop(ctx), phase);
        double t = (now_ns() - t0ns) / (double)iters;
        check(ctx, phase);
        calls += iters;
        if (t < best) best = t;
    }
    const uint64_t allocs = cpu_allocs(ctx, phase) - allocs0;

    check_status(ctx, tfl_tensor_to_host(v, hv, bytes), phase);
    for (size_t i = 0; i < n; i++) h0[i] += (float)calls * hx[i]; /* the expected value */
    check_values(ctx, hv, h0, n, phase);

    printf("bench variable_assign_add_1m %.2f GB/s\n", 3.0 * (double)bytes / best);
    printf("bench variable_assign_add_1m_allocs %llu allocs\n", (unsigned long long)allocs);
    fflush(stdout);
    if (allocs != 0) {
        char why[128];
        snprintf(why, sizeof why,
                 "%llu allocations over %ld in-place assign_adds (expected 0)",
                 (unsigned long long)allocs, calls - 1);
        die(ctx, phase, why);
    }

    tfl_tensor_release(v);
    tfl_tensor_release(x);
    free(h0);
    free(hx);
    free(hv);
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

/* x (m x k) w (k x n) + bias, fused and as two ops: GFLOP/s of each, best of reps */
static void bench_linear(tfl_ctx *ctx, int m, int k, int n, bool quick) {
    char phase[64];
    snprintf(phase, sizeof phase, "linear %dx%dx%d", m, k, n);
    tfl_tensor *x = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){m, k}, -1, 1, 21);
    tfl_tensor *w = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){k, n}, -1, 1, 22);
    tfl_tensor *bias = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){n}, -1, 1, 23);
    check(ctx, phase);
    const size_t bytes = (size_t)m * (size_t)n * sizeof(float);
    float *got[2] = {malloc(bytes), malloc(bytes)};
    if (!got[0] || !got[1]) die(ctx, phase, "out of host memory");
    double best[2] = {INFINITY, INFINITY};
    const int reps = quick ? 2 : 30;
    for (int r = 0; r <= reps; r++) /* the two ways in turn; round 0 warms up and keeps C */
        for (int way = 0; way < 2; way++) {
            check_status(ctx, tfl_frame_push(ctx), phase);
            double t0 = now_ns();
            tfl_tensor *y = way == 0 ? tfl_matmul_bias(ctx, x, w, bias, 0)
                                     : tfl_add(ctx, tfl_matmul(ctx, x, w, 0), bias);
            double c0;
            if (y) check_status(ctx, tfl_tensor_get(y, 0, &c0), phase);
            double t = now_ns() - t0;
            check(ctx, phase);
            if (r == 0) check_status(ctx, tfl_tensor_to_host(y, got[way], bytes), phase);
            else if (t < best[way]) best[way] = t;
            check_status(ctx, tfl_frame_pop(ctx), phase);
        }
    if (memcmp(got[0], got[1], bytes) != 0)
        die(ctx, phase, "tfl_matmul_bias differs from tfl_matmul then tfl_add");
    const double flop = 2.0 * m * k * n;
    printf("bench linear_fused_%dx%dx%d %.2f GFLOP/s\n", m, k, n, flop / best[0]);
    printf("bench linear_unfused_%dx%dx%d %.2f GFLOP/s\n", m, k, n, flop / best[1]);
    fflush(stdout);
    free(got[0]);
    free(got[1]);
    tfl_tensor_release(x);
    tfl_tensor_release(w);
    tfl_tensor_release(bias);
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
    bench_cfg cfg = quick ? (bench_cfg){20000, 10, 2, quick_sizes}
                          : (bench_cfg){200000, 100, 4, full_sizes};

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

    /* Variables: caller-owned, updated in place. Before the GEMMs, so that a quick run
     * still ends with sgemm_ratio_512 (what the ctest smoke test looks for). */
    bench_variable_small(ctx, cfg.overhead_iters);
    bench_variable_big(ctx, cfg.var_big_iters);

    /* a transformer's linear layers (2048 tokens, width 128, MLP 512) */
    static const int linear[][3] = {{2048, 128, 128}, {2048, 128, 512}, {2048, 512, 128}};
    for (int i = 0; i < (quick ? 1 : 3); i++)
        bench_linear(ctx, linear[i][0], linear[i][1], linear[i][2], quick);

    for (int i = 0; i < cfg.n_sizes; i++) bench_sgemm(ctx, cfg.sizes[i], nt, quick);

    check(ctx, "teardown");
    tfl_ctx_free(ctx);
    return EXIT_SUCCESS;
}
