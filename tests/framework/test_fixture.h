/* test_fixture.h: header-only helpers shared by the framework unit tests (per-test context
 * fixture with leak and frame checks, live tensor count, substring and vector helpers). */
#ifndef TFL_TEST_FIXTURE_H
#define TFL_TEST_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

typedef struct fixture {
    tfl_ctx *ctx;
    uint64_t live0; /* live_tensors right after creation */
    const void *user; /* a test's own data (a table-driven test's case) */
} fixture;

static inline uint64_t live_tensors(tfl_ctx *ctx)
{
    tfl_alloc_stats s;
    memset(&s, 0, sizeof s);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s), TFL_OK);
    return s.live_tensors;
}

/* Creates the context with `opts` (NULL: the defaults) and records the live tensors. */
static inline int setup_opts(void **state, const tfl_ctx_opts *opts)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    tfl_status st = TFL_INTERNAL;
    f->ctx = tfl_ctx_new(opts, &st);
    if (!f->ctx || st != TFL_OK) {
        free(f);
        return -1;
    }
    f->live0 = live_tensors(f->ctx);
    *state = f;
    return 0;
}

static inline int setup(void **state)
{
    return setup_opts(state, NULL);
}

/* Frees the context, then checks that the test left no frame open, no error set and no tensor
 * alive. */
static inline int teardown(void **state)
{
    fixture *f = *state;
    tfl_alloc_stats s;
    memset(&s, 0, sizeof s);
    tfl_status st = tfl_alloc_stats_get(f->ctx, NULL, &s);
    int depth = tfl_frame_depth(f->ctx);
    tfl_status err = tfl_ctx_status(f->ctx);
    uint64_t base = f->live0;
    tfl_ctx_free(f->ctx);
    free(f);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(depth, 0);
    assert_int_equal(err, TFL_OK);
    assert_int_equal(s.live_tensors, base);
    return 0;
}

static inline void assert_has(const char *haystack, const char *needle)
{
    assert_non_null(haystack);
    if (!strstr(haystack, needle)) {
        print_error("expected \"%s\" to contain \"%s\"\n", haystack, needle);
        fail();
    }
}

/* A log sink (tfl_ctx_opts.log_fn = capture_log, log_user = &capture) that keeps the lines
 * it receives, with their levels. */
#define LOG_MAX_LINES 256
typedef struct log_capture {
    int n;     /* lines kept */
    int total; /* lines received */
    tfl_log_level levels[LOG_MAX_LINES];
    char lines[LOG_MAX_LINES][192];
} log_capture;

static inline void capture_log(void *user, tfl_log_level level, const char *message)
{
    log_capture *c = user;
    c->total++;
    if (c->n < LOG_MAX_LINES) {
        c->levels[c->n] = level;
        snprintf(c->lines[c->n], sizeof c->lines[0], "%s", message ? message : "(null)");
        c->n++;
    }
}

/* How many kept lines contain `fragment` and have `level` (< 0: any level). */
static inline int count_lines_at(const log_capture *c, const char *fragment, int level)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        if (strstr(c->lines[i], fragment) && (level < 0 || (int)c->levels[i] == level)) n++;
    return n;
}

static inline int count_lines(const log_capture *c, const char *fragment)
{
    return count_lines_at(c, fragment, -1);
}

/* Where automatic placement puts ops and variables: GPU:0 when the context has one (a GPU
 * machine, or the suite's fake GPU module), else CPU:0. Tests compare with it instead of
 * assuming CPU:0. */
static inline const char *auto_device(tfl_ctx *ctx)
{
    for (int i = 0; i < tfl_device_count(ctx); i++)
        if (strcmp(tfl_device_name(ctx, i), "GPU:0") == 0) return "GPU:0";
    return "CPU:0";
}

/* The placement log's line for op `name` on the automatic device: "op Add on GPU:0". Four
 * buffers in turn, so a few may be used in one expression. */
static inline const char *op_on(tfl_ctx *ctx, const char *name)
{
    static char bufs[4][96];
    static int next;
    char *b = bufs[next++ & 3];
    snprintf(b, sizeof bufs[0], "op %s on %s", name, auto_device(ctx));
    return b;
}

/* Checks the kept error's code and a fragment of its message (NULL: any), then clears it. */
static inline void expect_kept_error(tfl_ctx *ctx, tfl_status code, const char *fragment)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code)
        print_error("expected %s, got %s: %s\n", tfl_status_name(code), tfl_status_name(e.code),
                    e.message);
    assert_int_equal(e.code, code);
    if (fragment) assert_has(e.message, fragment);
    tfl_ctx_clear_error(ctx);
}

/* t's raw bytes, malloc'ed (numel * dtype size); *bytes gets the size when not NULL. */
static inline void *host_bytes(const tfl_tensor *t, size_t *bytes)
{
    size_t n = (size_t)tfl_tensor_numel(t) * tfl_dtype_size(tfl_tensor_dtype(t));
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    assert_int_equal(tfl_tensor_to_host(t, p, n), TFL_OK);
    if (bytes) *bytes = n;
    return p;
}

static inline tfl_tensor *vec_f32(tfl_ctx *ctx, const float *v, int64_t n)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, v);
}

#include "tfl_test_util.h" /* tests/common: expect_f32, counting_alloc */

#endif /* TFL_TEST_FIXTURE_H */
