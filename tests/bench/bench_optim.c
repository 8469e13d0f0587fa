/*
 * bench_optim.c: benchmarks of the optimizers' update kernels on the CPU, against the
 * machine's copy bandwidth measured in the same run. Its PyTorch twin is torch_optim.py
 * (same figure names, prefixed torch_).
 *
 *  - copy_gbps: a copy of 1e7 float32 (40 MB) into another buffer, split in contiguous
 *    parts over the threads (OpenMP, one memcpy a thread), 8 bytes an element (read +
 *    write), GB/s: the best block of 5 copies, of 5 blocks before the optimizers and one
 *    in every round of each layout's blocks (the copy takes its turn with Adam and SGD, so
 *    that the figures it is compared with see the same noise); printed after the layouts;
 *  - Adam (TFL_FORMULA_DEFAULT: PyTorch's; lr 1e-3, β1 0.9, β2 0.999, ε 1e-8) and SGD with
 *    momentum 0.9 (lr 1e-3) on two layouts of float32 variables with fixed random gradients
 *    (plain tensors made once): one variable of 1e7 elements (1x1e7) and 100 variables of
 *    1e5 (100x1e5), every variable of a layout updated by one tfl_optimizer_apply. Figures:
 *    the time of one apply (<opt>_<layout>_ms) and its effective bandwidth
 *    (<opt>_<layout>_gbps): Adam moves 28 bytes an element (reads p, g, m, v; writes p, m,
 *    v), SGD with momentum 20 (reads p, g, b; writes p, b). The kernels read every array
 *    they write, so they can beat copy_gbps, whose destination is written without being
 *    read (a cache line is read for ownership before it is written, unless memcpy streams).
 *  - optim_apply_allocs: allocations (fresh or from the cache) an apply makes once its slots
 *    exist, averaged over the timed applies (optim.h promises none).
 * Each time is the best of 7 blocks of 5 applies (--quick: 3 of 3) after a warm-up (the
 * first apply makes the slots), the copy, Adam and SGD taking turns block by block, as
 * bench_tape does; the notes on stderr add the median and fastest single applies.
 *
 * Prints one line per figure, and nothing else on stdout (notes go to stderr, each line
 * starting "bench_optim note: "; errors start "bench_optim: "):
 *
 *     bench <name> <value> <unit>
 *
 * Timings never fail the program; a failed call (its status, or the error kept by the
 * context), a wrong update, a missing slot, a wrong step counter, variables that are not
 * finite after the timed applies, or applies that leave tensors or bytes behind do, with a
 * message on stderr. Every optimizer is checked first on a small variable: after two applies
 * of the same gradient g, Adam has moved p by -2·lr·g/(|g| + ε) and SGD with momentum by
 * -2.9·lr·g (b = g, then 1.9·g).
 * `--quick` runs fewer blocks (run_side_by_side.sh passes it on); `--smoke` runs tiny
 * layouts (1x1e4, 10x1e3) once, for a ctest smoke test (the last figure,
 * optim_apply_allocs, proves it got through); `--threads N` sets the kernels' and the
 * copy's threads (default 2).
 */
#include <tapeflow/tapeflow.h>

#define BENCH_NAME "bench_optim"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define REPS_FULL 7     /* blocks of each figure; the best counts */
#define COPY_N 10000000 /* floats copied by copy_gbps (40 MB) */
#define LR 1e-3
#define MOMENTUM 0.9
#define ADAM_EPS 1e-8
#define CHECK_N 1000    /* elements of the variable the optimizers are checked on */

typedef struct bench_cfg {
    int reps;       /* blocks of each figure */
    int steps;      /* applies per block */
    int warmup;     /* untimed applies of each optimizer before the blocks (>= 1) */
    int copy_reps;  /* blocks of copies before the layouts (then one a round of each) */
    int copy_per_block;
    int n_layouts;
    struct { int count; int64_t size; } layouts[2];
} bench_cfg;

enum { OPT_ADAM, OPT_SGD, N_OPTS };
static const char *const opt_names[N_OPTS] = {"adam", "sgd_momentum"};
static const double opt_bytes[N_OPTS] = {28.0, 20.0}; /* bytes moved an element */



/* Fills v[0..n) with uniform values in [-1, 1) from a 64-bit LCG seeded with `seed`. */
static void fill_uniform(float *v, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1442695040888963407ull;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 2.0 - 1.0);
    }
}

/* "1x1e7" for one variable of 1e7, "100x1e5" for 100 of 1e5 (else "<count>x<size>"). */
static void layout_name(char *out, size_t cap, int count, int64_t size)
{
    int exp = 0;
    int64_t p = 1;
    while (p < size && exp < 18) {
        p *= 10;
        exp++;
    }
    if (p == size)
        snprintf(out, cap, "%dx1e%d", count, exp);
    else
        snprintf(out, cap, "%dx%lld", count, (long long)size);
}

static tfl_optimizer *make_optimizer(tfl_ctx *ctx, int which, const char *phase)
{
    tfl_optimizer_opts o;
    if (which == OPT_ADAM) {
        o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    } else {
        o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
        o.momentum = MOMENTUM;
    }
    if (o.kind == 0) die(ctx, phase, "tfl_optimizer_defaults gave kind 0");
    o.learning_rate = LR;
    if (which == OPT_ADAM && o.epsilon != ADAM_EPS) {
        char why[128];
        snprintf(why, sizeof why, "Adam's default epsilon is %g, expected %g", o.epsilon,
                 ADAM_EPS);
        die(ctx, phase, why);
    }
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    check_ptr(ctx, opt, phase, "tfl_optimizer_new");
    return opt;
}

/* ---- copy bandwidth -------------------------------------------------------------------- */

/* Copies n floats from src to dst, in `threads` contiguous parts, one memcpy a thread. */
static void copy_split(float *dst, const float *src, int64_t n, int threads)
{
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16; /* parts of whole cache lines */
        const int64_t lo = t * per < n ? t * per : n, hi = lo + per < n ? lo + per : n;
        if (hi > lo) memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
    }
#else
    (void)threads;
    memcpy(dst, src, (size_t)n * sizeof(float));
#endif
}

/* The copy figure: its buffers, and the best time of a copy over every block so far. */
typedef struct copy_bench {
    float *src, *dst;
    int threads, per_block, blocks;
    double best; /* ns */
} copy_bench;

static void copy_init(tfl_ctx *ctx, copy_bench *cb, int threads, int per_block)
{
    cb->src = aligned_alloc(64, (size_t)COPY_N * sizeof(float));
    cb->dst = aligned_alloc(64, (size_t)COPY_N * sizeof(float));
    if (!cb->src || !cb->dst) die(ctx, "copy_gbps", "out of host memory");
    cb->threads = threads;
    cb->per_block = per_block;
    cb->blocks = 0;
    cb->best = INFINITY;
    fill_uniform(cb->src, COPY_N, 1);
    memset(cb->dst, 0, (size_t)COPY_N * sizeof(float));
#ifndef _OPENMP
    fprintf(stderr, "bench_optim note: copy_gbps: built without OpenMP, one thread copies\n");
#endif
    copy_split(cb->dst, cb->src, COPY_N, threads); /* warm-up */
}

/* One block of copies; keeps the best time a copy. */
static void copy_block(copy_bench *cb)
{
    const double t0 = now_ns();
    for (int i = 0; i < cb->per_block; i++) copy_split(cb->dst, cb->src, COPY_N, cb->threads);
    const double t = (now_ns() - t0) / cb->per_block;
    if (t < cb->best) cb->best = t;
    cb->blocks++;
}

/* Checks the copy, prints copy_gbps and frees the buffers. */
static void copy_finish(tfl_ctx *ctx, copy_bench *cb)
{
    if (memcmp(cb->dst, cb->src, (size_t)COPY_N * sizeof(float)) != 0)
        die(ctx, "copy_gbps", "the copy differs from its source");
    free(cb->src);
    free(cb->dst);
    fprintf(stderr, "bench_optim note: copy_gbps: %d float32 in %.3f ms on %d threads, best of "
            "%d blocks of %d copies\n", COPY_N, cb->best / 1e6, cb->threads, cb->blocks,
            cb->per_block);
    printf("bench copy_gbps %.2f GB/s\n", 8.0 * COPY_N / cb->best); /* bytes per ns = GB/s */
    fflush(stdout);
}

/* ---- the check ------------------------------------------------------------------------- */

/* Two applies of one gradient to a small variable, against the formula on the host; the
 * step counter and the slots are checked too. */
static void verify(tfl_ctx *ctx, int which)
{
    char phase[64];
    snprintf(phase, sizeof phase, "%s check", opt_names[which]);
    const int64_t n = CHECK_N;
    float p0[CHECK_N], g[CHECK_N], got[CHECK_N];
    fill_uniform(p0, n, 99);
    fill_uniform(g, n, 100);

    tfl_tensor *init = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, p0);
    check_ptr(ctx, init, phase, "tfl_tensor_new");
    tfl_tensor *var = tfl_variable_new(ctx, init, &(tfl_variable_opts){.name = "check/p"});
    check_ptr(ctx, var, phase, "tfl_variable_new");
    tfl_tensor_release(init);
    tfl_tensor *grad = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, g);
    check_ptr(ctx, grad, phase, "tfl_tensor_new");

    tfl_optimizer *opt = make_optimizer(ctx, which, phase);
    for (int k = 0; k < 2; k++) check_status(ctx, tfl_optimizer_apply(opt, 1, &var, &grad), phase);

    double iters = -1.0;
    tfl_tensor *it = tfl_optimizer_iterations(opt);
    check_ptr(ctx, it, phase, "tfl_optimizer_iterations");
    check_status(ctx, tfl_tensor_get(it, 0, &iters), phase);
    if (iters != 2.0) {
        char why[96];
        snprintf(why, sizeof why, "iterations is %g after two applies", iters);
        die(ctx, phase, why);
    }
    static const char *const slots[N_OPTS][2] = {{"m", "v"}, {"momentum", NULL}};
    for (int s = 0; s < 2 && slots[which][s]; s++) {
        if (tfl_optimizer_slot(opt, var, slots[which][s]) == NULL) {
            char why[96];
            snprintf(why, sizeof why, "no slot \"%s\" after two applies", slots[which][s]);
            die(ctx, phase, why);
        }
    }

    check_status(ctx, tfl_tensor_to_host(var, got, sizeof got), phase);
    double worst = 0.0, worst_want = 0.0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double gi = g[i];
        const double want = which == OPT_ADAM
                                ? (double)p0[i] - 2.0 * LR * gi / (fabs(gi) + ADAM_EPS)
                                : (double)p0[i] - (2.0 + MOMENTUM) * LR * gi;
        const double err = fabs((double)got[i] - want);
        if (!(err <= worst)) { /* NaN counts as the worst */
            worst = isnan(err) ? INFINITY : err;
            worst_want = want;
            at = i;
        }
    }
    if (!(worst <= 1e-6)) {
        char why[192];
        snprintf(why, sizeof why, "after two applies element %lld is %.9g, the formula gives "
                 "%.9g (p0 %.9g, g %.9g)", (long long)at, (double)got[at], worst_want,
                 (double)p0[at], (double)g[at]);
        die(ctx, phase, why);
    }
    tfl_optimizer_free(opt);
    tfl_tensor_release(grad);
    tfl_tensor_release(var);
    check(ctx, phase);
}

/* ---- a layout -------------------------------------------------------------------------- */

/* Times Adam and SGD with momentum on `count` variables of `size` elements; prints their
 * figures and adds the allocations of the timed applies to *allocs and their number to
 * *applies. */
static void bench_layout(tfl_ctx *ctx, const bench_cfg *cfg, copy_bench *cb, int count,
                         int64_t size, double *allocs, double *applies)
{
    char lay[32], phase[64];
    layout_name(lay, sizeof lay, count, size);
    snprintf(phase, sizeof phase, "%s setup", lay);

    tfl_tensor **vars = calloc((size_t)count, sizeof *vars);
    tfl_tensor **grads = calloc((size_t)count, sizeof *grads);
    float *host = malloc((size_t)size * sizeof(float));
    if (!vars || !grads || !host) die(ctx, phase, "out of host memory");
    for (int i = 0; i < count; i++) {
        char name[64];
        snprintf(name, sizeof name, "p_%s/%d", lay, i);
        const tfl_initializer init = tfl_init_random_uniform(-1.0, 1.0, 1000u + (uint64_t)i);
        vars[i] = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, &size, &init,
                                        &(tfl_variable_opts){.name = name});
        check_ptr(ctx, vars[i], phase, "tfl_variable_new_init");
        fill_uniform(host, size, 5000u + (uint64_t)i);
        grads[i] = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &size, host);
        check_ptr(ctx, grads[i], phase, "tfl_tensor_new");
    }

    tfl_optimizer *opts[N_OPTS];
    char phases[N_OPTS][64];
    for (int k = 0; k < N_OPTS; k++) {
        snprintf(phases[k], sizeof phases[k], "%s_%s", opt_names[k], lay);
        opts[k] = make_optimizer(ctx, k, phases[k]);
        for (int w = 0; w < cfg->warmup; w++) /* the first apply makes the slots */
            check_status(ctx, tfl_optimizer_apply(opts[k], count, vars, grads), phases[k]);
    }

    const int n = cfg->reps * cfg->steps;
    double *t[N_OPTS], best[N_OPTS];
    uint64_t served = 0;
    for (int k = 0; k < N_OPTS; k++) {
        t[k] = malloc(sizeof(double) * (size_t)n);
        if (!t[k]) die(ctx, phases[k], "out of host memory");
        best[k] = INFINITY;
    }
    for (int r = 0; r < cfg->reps; r++) {
        copy_block(cb); /* the copy takes its turn too */
        for (int k = 0; k < N_OPTS; k++) {
            const tfl_alloc_stats s0 = cpu_stats(ctx, phases[k]);
            const double b0 = now_ns();
            for (int i = 0; i < cfg->steps; i++) {
                const double t0 = now_ns();
                const tfl_status st = tfl_optimizer_apply(opts[k], count, vars, grads);
                t[k][r * cfg->steps + i] = (now_ns() - t0) / 1e6;
                check_status(ctx, st, phases[k]);
            }
            const double block = (now_ns() - b0) / 1e6 / cfg->steps;
            if (block < best[k]) best[k] = block;
            const tfl_alloc_stats s1 = cpu_stats(ctx, phases[k]);
            check_nothing_left(ctx, &s0, &s1, cfg->steps, "applies", phases[k]);
            served += (s1.fresh_allocs - s0.fresh_allocs) + (s1.cache_hits - s0.cache_hits);
        }
    }
    *allocs += (double)served;
    *applies += (double)n * N_OPTS;

    /* Every element of every variable is still finite (the gradients are bounded). */
    snprintf(phase, sizeof phase, "%s check", lay);
    for (int i = 0; i < count; i++) {
        check_status(ctx, tfl_tensor_to_host(vars[i], host, (size_t)size * sizeof(float)), phase);
        for (int64_t e = 0; e < size; e++) {
            if (!isfinite(host[e])) {
                char why[160];
                snprintf(why, sizeof why, "element %lld of %s is %g after the timed applies",
                         (long long)e, tfl_variable_name(vars[i]), (double)host[e]);
                die(ctx, phase, why);
            }
        }
    }

    const double numel = (double)count * (double)size;
    for (int k = 0; k < N_OPTS; k++) {
        double fastest = INFINITY;
        for (int i = 0; i < n; i++) fastest = t[k][i] < fastest ? t[k][i] : fastest;
        fprintf(stderr, "bench_optim note: %s: best block %.3f ms an apply; over %d applies "
                "median %.3f ms, fastest %.3f ms\n", phases[k], best[k], n, median(t[k], n),
                fastest);
        printf("bench %s_%s_ms %.3f ms\n", opt_names[k], lay, best[k]);
        printf("bench %s_%s_gbps %.2f GB/s\n", opt_names[k], lay,
               opt_bytes[k] * numel / (best[k] * 1e6)); /* bytes per ns = GB/s */
        free(t[k]);
        tfl_optimizer_free(opts[k]);
    }
    fflush(stdout);

    for (int i = 0; i < count; i++) {
        tfl_tensor_release(vars[i]);
        tfl_tensor_release(grads[i]);
    }
    free(vars);
    free(grads);
    free(host);
    check(ctx, phase);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_optim [--quick | --smoke] [--threads N]\n"
               "  --quick       fewer blocks\n"
               "  --smoke       tiny layouts (1x1e4, 10x1e3), one apply each (ctest)\n"
               "  --threads N   threads for the kernels and the copy (default 2)\n");
}

int main(int argc, char **argv)
{
    bool quick = false, smoke = false;
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--smoke") == 0) {
            smoke = true;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1) {
                fprintf(stderr, "bench_optim: --threads wants a positive count\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_SUCCESS;
        } else {
            fprintf(stderr, "bench_optim: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const bench_cfg cfg =
        smoke ? (bench_cfg){1, 1, 1, 0, 1, 2, {{1, 10000}, {10, 1000}}}
        : quick ? (bench_cfg){3, 3, 2, 3, 5, 2, {{1, 10000000}, {100, 100000}}}
                : (bench_cfg){REPS_FULL, 5, 3, 5, 5, 2, {{1, 10000000}, {100, 100000}}};

    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = threads}, &st);
    if (ctx == NULL) {
        fprintf(stderr, "bench_optim: tfl_ctx_new: %s\n", tfl_status_name(st));
        return EXIT_FAILURE;
    }
    threads = tfl_ctx_num_threads(ctx);
    printf("bench optim_threads %d count\n", threads);
    fflush(stdout);

    copy_bench cb;
    copy_init(ctx, &cb, threads, cfg.copy_per_block);
    for (int r = 0; r < cfg.copy_reps; r++) copy_block(&cb);
    for (int k = 0; k < N_OPTS; k++) verify(ctx, k);
    double allocs = 0.0, applies = 0.0;
    for (int l = 0; l < cfg.n_layouts; l++)
        bench_layout(ctx, &cfg, &cb, cfg.layouts[l].count, cfg.layouts[l].size, &allocs,
                     &applies);
    copy_finish(ctx, &cb);

    fprintf(stderr, "bench_optim note: optim_apply_allocs: %.0f allocations over %.0f timed "
            "applies\n", allocs, applies);
    printf("bench optim_apply_allocs %.1f count\n", applies > 0 ? allocs / applies : 0.0);
    fflush(stdout);

    check(ctx, "teardown");
    tfl_ctx_free(ctx);
    return EXIT_SUCCESS;
}
