/*
 * bench_util.h: what every benchmark program in tests/bench shares: a monotonic clock, the
 * median, and dying with the context's kept error. A program defines BENCH_NAME (its name,
 * which starts every error line: the smoke tests fail on "<BENCH_NAME>: ") before including
 * it. Benchmarks may exit; the library never does.
 */
#ifndef TFL_BENCH_UTIL_H
#define TFL_BENCH_UTIL_H

#ifndef BENCH_NAME
#error "define BENCH_NAME before including bench_util.h"
#endif

#include <tapeflow/tapeflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (sorts them). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline void die(tfl_ctx *ctx, const char *phase, const char *why)
{
    fprintf(stderr, BENCH_NAME ": %s: %s\n", phase, why);
    tfl_ctx_free(ctx);
    exit(EXIT_FAILURE);
}

/* Exits with the kept error when a call of `phase` failed. */
static inline void check(tfl_ctx *ctx, const char *phase)
{
    if (tfl_ctx_status(ctx) != TFL_OK) {
        tfl_error err = tfl_ctx_error(ctx);
        char why[512];
        snprintf(why, sizeof why, "%s: %s", tfl_status_name(err.code), err.message);
        die(ctx, phase, why);
    }
}

static inline void check_status(tfl_ctx *ctx, tfl_status st, const char *phase)
{
    if (st != TFL_OK) {
        check(ctx, phase); /* prefer the context's message when it kept one */
        die(ctx, phase, tfl_status_name(st));
    }
}

/* Exits when p is NULL (with the kept error, if any); `what` names the call. */
static inline void check_ptr(tfl_ctx *ctx, const void *p, const char *phase, const char *what)
{
    if (p == NULL) {
        check(ctx, phase);
        char why[160];
        snprintf(why, sizeof why, "%s returned NULL without an error", what);
        die(ctx, phase, why);
    }
}

/* The CPU allocator's counters (dies on error). */
static inline tfl_alloc_stats cpu_stats(tfl_ctx *ctx, const char *phase)
{
    tfl_alloc_stats s;
    check_status(ctx, tfl_alloc_stats_get(ctx, "CPU:0", &s), phase);
    return s;
}

/* Dies when `count` timed `what` (applies, steps) since s0 left tensors or bytes behind. */
static inline void check_nothing_left(tfl_ctx *ctx, const tfl_alloc_stats *s0,
                                      const tfl_alloc_stats *s1, int count, const char *what,
                                      const char *phase)
{
    if (s1->live_tensors != s0->live_tensors || s1->bytes_in_use != s0->bytes_in_use) {
        char why[192];
        snprintf(why, sizeof why, "%d %s left %lld tensors and %lld bytes behind", count, what,
                 (long long)(s1->live_tensors - s0->live_tensors),
                 (long long)(s1->bytes_in_use - s0->bytes_in_use));
        die(ctx, phase, why);
    }
}

#endif /* TFL_BENCH_UTIL_H */
