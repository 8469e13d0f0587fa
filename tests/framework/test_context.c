/* test_context.c: tests of the context (tapeflow/context.h): creation and options, memory
 * hooks, status names, the first-error rule, NULL chaining, logging, independence, frames. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static tfl_tensor *vec_i32(tfl_ctx *ctx, const int32_t *v, int64_t n)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, &n, v);
}

static void assert_lacks(const char *haystack, const char *needle)
{
    assert_non_null(haystack);
    if (strstr(haystack, needle)) {
        print_error("expected \"%s\" not to contain \"%s\"\n", haystack, needle);
        fail();
    }
}

/* counting_alloc, counting_free, alloc_counter: tests/common/tfl_test_util.h */

/* ---- creation and options ------------------------------------------------------------------ */

static void test_ctx_new_defaults(void **state)
{
    (void)state;
    tfl_status st = TFL_INTERNAL;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_OK);
    assert_non_null(e.message);
    assert_string_equal(e.message, "");
    assert_true(tfl_ctx_num_threads(ctx) >= 1);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(live_tensors(ctx), 0);
    tfl_ctx_free(ctx);

    /* The status pointer is optional; all-zero options are the defaults. */
    ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl_ctx_free(ctx);
    ctx = tfl_ctx_new(&(tfl_ctx_opts){0}, &st);
    assert_non_null(ctx);
    assert_int_equal(st, TFL_OK);
    tfl_ctx_free(ctx);

    tfl_ctx_free(NULL); /* a no-op */
}

static void test_ctx_num_threads(void **state)
{
    (void)state;
    tfl_status st = TFL_INTERNAL;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 3}, &st);
    assert_non_null(ctx);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_ctx_num_threads(ctx), 3);

    assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
    assert_int_equal(tfl_ctx_num_threads(ctx), 2);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 1), TFL_OK);
    assert_int_equal(tfl_ctx_num_threads(ctx), 1);

    assert_int_equal(tfl_ctx_set_num_threads(ctx, 0), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_num_threads(ctx), 1);
    assert_int_equal(tfl_ctx_set_num_threads(ctx, -4), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_num_threads(ctx), 1);
    tfl_ctx_free(ctx);
}

static void test_ctx_deterministic(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    assert_false(tfl_ctx_deterministic(ctx)); /* off by default */
    tfl_ctx_set_deterministic(ctx, true);
    assert_true(tfl_ctx_deterministic(ctx));
    tfl_ctx_set_deterministic(ctx, false);
    assert_false(tfl_ctx_deterministic(ctx));
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_set_deterministic(NULL, true); /* a no-op */
    assert_false(tfl_ctx_deterministic(NULL));
    tfl_ctx_free(ctx);
}

/* The precision policy: float32 by default; tf32 and the mixed policies kept; a value outside
 * the enum refused (the policy unchanged); names and parsing round-trip. */
static void test_ctx_precision(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_FLOAT32);
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_TF32), TFL_OK);
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_TF32);
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_BFLOAT16), TFL_OK);
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_BFLOAT16);
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT16), TFL_OK);
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_FLOAT16);
    assert_int_equal(tfl_ctx_set_precision(ctx, (tfl_precision)7), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "7 is not a tfl_precision"));
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_FLOAT16); /* unchanged */
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
    assert_int_equal(tfl_ctx_precision(ctx), TFL_PRECISION_FLOAT32);
    for (int i = 0; i < TFL_PRECISION_COUNT; i++) {
        tfl_precision p = TFL_PRECISION_COUNT;
        assert_int_equal(tfl_precision_parse(tfl_precision_name((tfl_precision)i), &p), TFL_OK);
        assert_int_equal(p, i);
    }
    assert_string_equal(tfl_precision_name(TFL_PRECISION_TF32), "tf32");
    assert_int_equal(tfl_precision_half_dtype(TFL_PRECISION_BFLOAT16), TFL_DTYPE_BFLOAT16);
    assert_int_equal(tfl_precision_half_dtype(TFL_PRECISION_FLOAT16), TFL_DTYPE_FLOAT16);
    assert_int_equal(tfl_precision_half_dtype(TFL_PRECISION_FLOAT32), TFL_DTYPE_INVALID);
    assert_int_equal(tfl_precision_half_dtype(TFL_PRECISION_TF32), TFL_DTYPE_INVALID);
    assert_int_equal(tfl_precision_half_dtype((tfl_precision)9), TFL_DTYPE_INVALID);
    assert_string_equal(tfl_precision_name((tfl_precision)-1), "?");
    tfl_precision p = TFL_PRECISION_TF32;
    assert_int_equal(tfl_precision_parse("fp32", &p), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_precision_parse(NULL, &p), TFL_INVALID_ARGUMENT);
    assert_int_equal(p, TFL_PRECISION_TF32);
    assert_int_equal(tfl_ctx_set_precision(NULL, TFL_PRECISION_TF32), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_precision(NULL), TFL_PRECISION_FLOAT32);
    tfl_ctx_free(ctx);
}

static void test_ctx_one_hook_only_is_invalid(void **state)
{
    (void)state;
    alloc_counter c;
    memset(&c, 0, sizeof c);

    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.alloc_fn = counting_alloc, .alloc_user = &c}, &st);
    assert_null(ctx);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);

    st = TFL_OK;
    ctx = tfl_ctx_new(&(tfl_ctx_opts){.free_fn = counting_free, .alloc_user = &c}, &st);
    assert_null(ctx);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);

    /* Nothing was taken through a half-set hook pair. */
    assert_int_equal(c.allocs, c.frees);
}

static void test_ctx_memory_hooks_are_used_and_balanced(void **state)
{
    (void)state;
    alloc_counter c;
    memset(&c, 0, sizeof c);
    tfl_ctx_opts opts = {.alloc_fn = counting_alloc, .free_fn = counting_free, .alloc_user = &c};
    tfl_status st = TFL_INTERNAL;
    tfl_ctx *ctx = tfl_ctx_new(&opts, &st);
    assert_non_null(ctx);
    assert_int_equal(st, TFL_OK);
    /* "every byte the library takes from the system goes through them": the context too */
    assert_true(c.allocs >= 1);

    uint64_t before = c.allocs;
    int64_t shape[2] = {32, 32};
    tfl_tensor *t = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, shape, 1.5);
    assert_non_null(t);
    assert_true(c.allocs > before); /* the tensor's storage (at least) */
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, 1023, &v), TFL_OK);
    assert_float_equal(v, 1.5, 0.0);
    tfl_tensor *u = tfl_add(ctx, t, t);
    assert_non_null(u);
    assert_int_equal(tfl_tensor_get(u, 5, &v), TFL_OK);
    assert_float_equal(v, 3.0, 0.0);
    tfl_tensor_release(u);
    tfl_tensor_release(t);

    /* Emptying the cache gives blocks back through free_fn. */
    uint64_t frees_before = c.frees;
    tfl_alloc_empty_cache(ctx);
    assert_true(c.frees > frees_before);

    tfl_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
    assert_int_equal(c.bad_requests, 0);
    assert_int_equal(c.misaligned, 0);
}

/* ---- status names ------------------------------------------------------------------------- */

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(tfl_status_name(TFL_OK), "OK");
    assert_string_equal(tfl_status_name(TFL_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    assert_string_equal(tfl_status_name(TFL_NOT_FOUND), "NOT_FOUND");
    assert_string_equal(tfl_status_name(TFL_ALREADY_EXISTS), "ALREADY_EXISTS");
    assert_string_equal(tfl_status_name(TFL_FAILED_PRECONDITION), "FAILED_PRECONDITION");
    assert_string_equal(tfl_status_name(TFL_OUT_OF_RANGE), "OUT_OF_RANGE");
    assert_string_equal(tfl_status_name(TFL_UNIMPLEMENTED), "UNIMPLEMENTED");
    assert_string_equal(tfl_status_name(TFL_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    assert_string_equal(tfl_status_name(TFL_DATA_LOSS), "DATA_LOSS");
    assert_string_equal(tfl_status_name(TFL_UNAVAILABLE), "UNAVAILABLE");
    assert_string_equal(tfl_status_name(TFL_INTERNAL), "INTERNAL");
    assert_string_equal(tfl_status_name(TFL_MISUSE), "MISUSE");
    assert_int_equal(TFL_OK, 0);

    assert_string_equal(tfl_status_name(TFL_STATUS_COUNT), "UNKNOWN");
    assert_string_equal(tfl_status_name((tfl_status)(TFL_STATUS_COUNT + 7)), "UNKNOWN");
    assert_string_equal(tfl_status_name((tfl_status)-1), "UNKNOWN");

    assert_string_equal(tfl_status_string(TFL_OK), "success");
    assert_string_equal(tfl_status_string(TFL_NOT_FOUND), "something named does not exist");
    for (int s = 0; s < TFL_STATUS_COUNT; s++) {
        const char *text = tfl_status_string((tfl_status)s);
        assert_non_null(text);
        assert_true(strlen(text) > 0);
        assert_null(strchr(text, '\n'));
    }
}

/* ---- the first error ---------------------------------------------------------------------- */

static void test_first_error_is_kept(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_i32(ctx, (const int32_t[]){1, 2}, 2);
    tfl_tensor *b = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_non_null(a);
    assert_non_null(b);

    assert_null(tfl_add(ctx, a, b));
    assert_int_equal(tfl_ctx_status(ctx), TFL_INVALID_ARGUMENT);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Add: ", 5) == 0);
    assert_has(e.message, "dtypes differ: a is int32, b is float32");

    /* A second, different error does not replace the first. */
    assert_null(tfl_reshape(ctx, a, 2, (const int64_t[]){4, 2}));
    e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Add: ", 5) == 0);
    assert_has(e.message, "dtypes differ");
    assert_lacks(e.message, "reshape");

    /* A successful op after an error works and leaves the kept error alone. */
    tfl_tensor *c = tfl_add(ctx, b, b);
    assert_non_null(c);
    double v = 0;
    assert_int_equal(tfl_tensor_get(c, 1, &v), TFL_OK);
    assert_float_equal(v, 4.0, 0.0);
    assert_int_equal(tfl_ctx_status(ctx), TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "dtypes differ");

    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_OK);
    assert_string_equal(e.message, "");

    /* After clearing, the next error is kept. */
    assert_null(tfl_reshape(ctx, a, 2, (const int64_t[]){4, 2}));
    e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Reshape: ", 9) == 0);
    assert_has(e.message, "cannot reshape a tensor of 2 elements to shape (4, 2)");
    tfl_ctx_clear_error(ctx);

    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_null_input_and_chaining(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_i32(ctx, (const int32_t[]){1, 2, 3}, 3);
    tfl_tensor *b = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    assert_non_null(a);
    assert_non_null(b);

    /* A NULL input with no error kept is itself an error naming the input. */
    assert_null(tfl_exp(ctx, NULL));
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Exp: ", 5) == 0);
    assert_has(e.message, "input 0 is NULL");
    tfl_ctx_clear_error(ctx);

    assert_null(tfl_add(ctx, b, NULL));
    e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Add: ", 5) == 0);
    assert_has(e.message, "input 1 is NULL");
    tfl_ctx_clear_error(ctx);

    /* A chain is checked once at the end: the first error survives. */
    uint64_t live_before = live_tensors(ctx);
    tfl_tensor *r = tfl_reduce_sum(ctx, tfl_exp(ctx, tfl_add(ctx, a, b)), 0, NULL, false);
    assert_null(r);
    assert_int_equal(live_tensors(ctx), live_before);
    e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_true(strncmp(e.message, "Add: ", 5) == 0);
    assert_has(e.message, "dtypes differ: a is int32, b is float32");
    assert_lacks(e.message, "Exp");
    assert_lacks(e.message, "is NULL");
    tfl_ctx_clear_error(ctx);

    /* A good chain still works. */
    r = tfl_reduce_sum(ctx, tfl_exp(ctx, tfl_sub(ctx, b, b)), 0, NULL, false);
    assert_non_null(r);
    double v = 0;
    assert_int_equal(tfl_tensor_get(r, 0, &v), TFL_OK);
    assert_float_equal(v, 3.0, 1e-6);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);

    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- logging ------------------------------------------------------------------------------ */

static void test_logging_placement_lines(void **state)
{
    (void)state;
    log_capture cap;
    memset(&cap, 0, sizeof cap);
    tfl_ctx_opts opts = {.log_fn = capture_log, .log_user = &cap, .log_level = TFL_LOG_DEBUG};
    tfl_ctx *ctx = tfl_ctx_new(&opts, NULL);
    assert_non_null(ctx);
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_non_null(a);

    /* Placement logging off: no placement line. */
    tfl_tensor *r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(count_lines(&cap, "op Add on"), 0);

    /* On: one INFO line per op. */
    tfl_ctx_set_log_placement(ctx, true);
    r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(count_lines(&cap, op_on(ctx, "Add")), 1);
    int idx = -1;
    for (int i = 0; i < cap.n; i++)
        if (strstr(cap.lines[i], op_on(ctx, "Add"))) idx = i;
    assert_true(idx >= 0);
    assert_int_equal(cap.levels[idx], TFL_LOG_INFO);
    assert_null(strchr(cap.lines[idx], '\n'));
    r = tfl_exp(ctx, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(count_lines(&cap, op_on(ctx, "Exp")), 1);

    /* Placement logging off again: no more placement lines. */
    tfl_ctx_set_log_placement(ctx, false);
    r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(count_lines(&cap, op_on(ctx, "Add")), 1);

    /* Removing the sink stops delivery even with placement logging on. */
    tfl_ctx_set_log_placement(ctx, true);
    tfl_ctx_set_logger(ctx, NULL, NULL, TFL_LOG_DEBUG);
    int total = cap.total;
    r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(cap.total, total);

    /* Setting it again resumes delivery. */
    tfl_ctx_set_logger(ctx, capture_log, &cap, TFL_LOG_INFO);
    r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    assert_int_equal(count_lines(&cap, op_on(ctx, "Add")), 2);

    tfl_tensor_release(a);
    assert_int_equal(live_tensors(ctx), 0);
    tfl_ctx_free(ctx);
}

static void test_logging_placement_from_opts(void **state)
{
    (void)state;
    log_capture cap;
    memset(&cap, 0, sizeof cap);
    /* log_level is left 0 (ERROR): log_placement raises it to INFO. */
    tfl_ctx_opts opts = {.log_fn = capture_log, .log_user = &cap, .log_placement = true};
    tfl_ctx *ctx = tfl_ctx_new(&opts, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    assert_non_null(tfl_mul(ctx, a, a));
    assert_non_null(tfl_add(ctx, a, a));
    assert_int_equal(count_lines(&cap, op_on(ctx, "Mul")), 1);
    assert_int_equal(count_lines(&cap, op_on(ctx, "Add")), 1);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);

    /* With placement logging on but no sink nothing is delivered (and nothing breaks). */
    ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_placement = true}, NULL);
    assert_non_null(ctx);
    int total = cap.total;
    a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    tfl_tensor *r = tfl_add(ctx, a, a);
    assert_non_null(r);
    tfl_tensor_release(r);
    tfl_tensor_release(a);
    assert_int_equal(cap.total, total);
    tfl_ctx_free(ctx);
}

/* ---- independence ------------------------------------------------------------------------- */

static void test_two_contexts_are_independent(void **state)
{
    (void)state;
    log_capture cap1, cap2;
    memset(&cap1, 0, sizeof cap1);
    memset(&cap2, 0, sizeof cap2);
    tfl_ctx *c1 = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = capture_log, .log_user = &cap1,
                                              .log_placement = true, .num_threads = 1},
                              NULL);
    tfl_ctx *c2 = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = capture_log, .log_user = &cap2,
                                              .num_threads = 2},
                              NULL);
    assert_non_null(c1);
    assert_non_null(c2);

    tfl_tensor *a1 = vec_i32(c1, (const int32_t[]){1, 2}, 2);
    tfl_tensor *b1 = vec_f32(c1, (const float[]){1, 2}, 2);
    tfl_tensor *a2 = vec_f32(c2, (const float[]){5, 6}, 2);
    assert_non_null(a1);
    assert_non_null(b1);
    assert_non_null(a2);
    assert_ptr_equal(tfl_tensor_ctx(a1), c1);
    assert_ptr_equal(tfl_tensor_ctx(a2), c2);
    assert_int_equal(live_tensors(c1), 2);
    assert_int_equal(live_tensors(c2), 1);

    /* An error in c1 does not show in c2. */
    assert_null(tfl_add(c1, a1, b1));
    assert_int_equal(tfl_ctx_status(c1), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_status(c2), TFL_OK);
    assert_string_equal(tfl_ctx_error(c2).message, "");

    /* Frames and threads are per context. */
    assert_int_equal(tfl_frame_push(c1), TFL_OK);
    assert_int_equal(tfl_frame_depth(c1), 1);
    assert_int_equal(tfl_frame_depth(c2), 0);
    assert_int_equal(tfl_frame_pop(c2), TFL_MISUSE);
    tfl_ctx_clear_error(c2);
    assert_int_equal(tfl_frame_pop(c1), TFL_OK);
    assert_int_equal(tfl_ctx_set_num_threads(c1, 1), TFL_OK);
    assert_int_equal(tfl_ctx_num_threads(c2), 2);

    /* c2's ops are not logged through c1's sink (nor through c2's: placement is off). */
    int lines1 = cap1.total;
    tfl_tensor *r2 = tfl_add(c2, a2, a2);
    assert_non_null(r2);
    assert_int_equal(cap1.total, lines1);
    assert_int_equal(count_lines(&cap2, "op Add"), 0);

    /* Freeing c1 leaves c2 working. */
    tfl_tensor_release(a1);
    tfl_tensor_release(b1);
    tfl_ctx_free(c1);
    tfl_tensor *s2 = tfl_add(c2, r2, a2);
    assert_non_null(s2);
    double v = 0;
    assert_int_equal(tfl_tensor_get(s2, 1, &v), TFL_OK);
    assert_float_equal(v, 18.0, 0.0);
    assert_int_equal(tfl_ctx_status(c2), TFL_OK);
    tfl_tensor_release(s2);
    tfl_tensor_release(r2);
    tfl_tensor_release(a2);
    assert_int_equal(live_tensors(c2), 0);
    tfl_ctx_free(c2);
}

/* One thread's work on its own context; returns the line of the first failed check, or 0. */
typedef struct worker {
    int id;
    int failed_line;
} worker;

#define WORKER_CHECK(cond)                \
    do {                                  \
        if (!(cond)) {                    \
            w->failed_line = __LINE__;    \
            goto done;                    \
        }                                 \
    } while (0)

static void *worker_main(void *arg)
{
    worker *w = arg;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    if (!ctx) {
        w->failed_line = __LINE__;
        return NULL;
    }
    char want[64], got[64];
    snprintf(want, sizeof want, "[%d, %d, %d]", 2 * w->id, 2 * w->id + 2, 2 * w->id + 4);
    for (int i = 0; i < 300; i++) {
        WORKER_CHECK(tfl_frame_push(ctx) == TFL_OK);
        tfl_tensor *a = tfl_range(ctx, TFL_DTYPE_INT32, w->id, w->id + 3, 1);
        tfl_tensor *b = tfl_add(ctx, a, a);
        WORKER_CHECK(b != NULL);
        WORKER_CHECK(tfl_tensor_format_values(b, got, sizeof got, NULL) == (int)strlen(want));
        WORKER_CHECK(strcmp(got, want) == 0);
        double v = 0;
        tfl_tensor *sum = tfl_reduce_sum(ctx, b, 0, NULL, false);
        WORKER_CHECK(sum != NULL && tfl_tensor_get(sum, 0, &v) == TFL_OK);
        WORKER_CHECK(v == 6.0 * w->id + 6.0);
        if (i % 3 == w->id % 3) {
            /* An error of this thread's own, with this thread's own shape in it. */
            WORKER_CHECK(tfl_reshape(ctx, a, 1, (const int64_t[]){w->id + 4}) == NULL);
            char frag[64];
            snprintf(frag, sizeof frag, "to shape (%d,)", w->id + 4);
            WORKER_CHECK(strstr(tfl_ctx_error(ctx).message, frag) != NULL);
            tfl_ctx_clear_error(ctx);
        }
        WORKER_CHECK(tfl_ctx_status(ctx) == TFL_OK);
        WORKER_CHECK(tfl_frame_pop(ctx) == TFL_OK);
    }
    tfl_alloc_stats st;
    WORKER_CHECK(tfl_alloc_stats_get(ctx, NULL, &st) == TFL_OK && st.live_tensors == 0);
done:
    while (tfl_frame_depth(ctx) > 0) tfl_frame_pop(ctx);
    tfl_ctx_free(ctx);
    return NULL;
}

static void test_contexts_in_parallel_threads(void **state)
{
    (void)state;
    enum { N = 4 };
    pthread_t threads[N];
    worker workers[N];
    for (int i = 0; i < N; i++) {
        workers[i] = (worker){.id = i + 1, .failed_line = 0};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < N; i++) assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < N; i++) {
        if (workers[i].failed_line)
            print_error("worker %d failed at line %d\n", workers[i].id, workers[i].failed_line);
        assert_int_equal(workers[i].failed_line, 0);
    }
}

/* ---- frames ------------------------------------------------------------------------------- */

static void test_frame_releases_at_pop(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 1);
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    tfl_tensor *b = tfl_ones_like(ctx, a);
    tfl_tensor *c = tfl_add(ctx, a, b);
    tfl_tensor *d = tfl_scalar_i32(ctx, 4);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(d);
    assert_int_equal(live_tensors(ctx), f->live0 + 4);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_tensor_outside_frames_is_owned_by_caller(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_non_null(a);
    /* A frame opened later does not own (or release) a. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *b = tfl_neg(ctx, a);
    assert_non_null(b);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), f->live0 + 1);
    double v = 0;
    assert_int_equal(tfl_tensor_get(a, 1, &v), TFL_OK);
    assert_float_equal(v, 2.0, 0.0);
    tfl_tensor_release(a);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_keep_survives_pop(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_null(tfl_keep(NULL));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    int64_t shape[1] = {4};
    tfl_tensor *t = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, shape, 7.0);
    assert_non_null(t);
    assert_ptr_equal(tfl_keep(t), t);
    tfl_tensor *tmp = tfl_add(ctx, t, t);
    assert_non_null(tmp);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    assert_int_equal(live_tensors(ctx), f->live0 + 1);
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, 3, &v), TFL_OK);
    assert_float_equal(v, 7.0, 0.0);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_retain_inside_frame(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *t = tfl_scalar_f64(ctx, 2.5);
    assert_non_null(t);
    assert_ptr_equal(tfl_tensor_retain(t), t);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    /* The frame dropped its reference; ours keeps the tensor. */
    assert_int_equal(live_tensors(ctx), f->live0 + 1);
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, 0, &v), TFL_OK);
    assert_float_equal(v, 2.5, 0.0);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_nested_frames(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *outer = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_non_null(outer);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 2);
    tfl_tensor *x = tfl_mul(ctx, outer, outer);
    tfl_tensor *y = tfl_add(ctx, x, outer);
    tfl_tensor *kept = tfl_keep(tfl_add(ctx, y, outer));
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(kept);
    assert_int_equal(live_tensors(ctx), f->live0 + 4);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 3);
    assert_non_null(tfl_exp(ctx, outer));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), f->live0 + 4);

    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 1);
    assert_int_equal(live_tensors(ctx), f->live0 + 2); /* outer and kept */
    double v = 0;
    assert_int_equal(tfl_tensor_get(outer, 1, &v), TFL_OK);
    assert_float_equal(v, 2.0, 0.0);
    assert_int_equal(tfl_tensor_get(kept, 1, &v), TFL_OK);
    assert_float_equal(v, 8.0, 0.0); /* 2*2 + 2 + 2 */

    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(live_tensors(ctx), f->live0 + 1);
    tfl_tensor_release(kept);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_pop_with_no_frame_is_misuse(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_pop(ctx), TFL_MISUSE);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_MISUSE);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    tfl_ctx_clear_error(ctx);
    /* Frames still work afterwards. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_scalar_f32(ctx, 1.0f));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), f->live0);
}

static void test_ctx_free_with_open_frames(void **state)
{
    (void)state;
    /* Default allocator: the sanitizer build reports any leak here. */
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    assert_non_null(tfl_add(ctx, a, a));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_transpose(ctx, tfl_reshape(ctx, a, 2, (const int64_t[]){3, 1}), NULL));
    assert_non_null(tfl_exp(ctx, a));
    assert_int_equal(tfl_frame_depth(ctx), 2);
    assert_int_equal(live_tensors(ctx), 5);
    tfl_ctx_free(ctx);

    /* Counting hooks: everything taken is given back. */
    alloc_counter c;
    memset(&c, 0, sizeof c);
    ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.alloc_fn = counting_alloc, .free_fn = counting_free, .alloc_user = &c},
        NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);
    assert_non_null(tfl_add(ctx, a, a));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    int64_t shape[2] = {64, 64};
    tfl_tensor *big = tfl_ones(ctx, TFL_DTYPE_FLOAT64, 2, shape);
    assert_non_null(tfl_matmul(ctx, big, big, 0));
    assert_non_null(tfl_slice(ctx, big, (const int64_t[]){1, 1}, (const int64_t[]){2, 2}));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_exp(ctx, a));
    assert_int_equal(tfl_frame_depth(ctx), 3);
    assert_true(c.allocs > 0);
    tfl_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);

    /* Tensors the caller still holds (no frame, tfl_keep, an extra retain) are freed with
     * the context too: nothing is lost for good. */
    memset(&c, 0, sizeof c);
    ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.alloc_fn = counting_alloc, .free_fn = counting_free, .alloc_user = &c},
        NULL);
    assert_non_null(ctx);
    a = vec_f32(ctx, (const float[]){1, 2, 3}, 3);          /* caller-owned, no frame */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_keep(tfl_exp(ctx, a)));               /* kept past the pop */
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_non_null(tfl_tensor_retain(a));                    /* an extra reference */
    assert_int_equal(live_tensors(ctx), 2);
    tfl_ctx_free(ctx);
    assert_true(c.allocs > 0);
    assert_int_equal(c.allocs, c.frees);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctx_new_defaults),
        cmocka_unit_test(test_ctx_num_threads),
        cmocka_unit_test(test_ctx_deterministic),
        cmocka_unit_test(test_ctx_precision),
        cmocka_unit_test(test_ctx_one_hook_only_is_invalid),
        cmocka_unit_test(test_ctx_memory_hooks_are_used_and_balanced),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test_setup_teardown(test_first_error_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_input_and_chaining, setup, teardown),
        cmocka_unit_test(test_logging_placement_lines),
        cmocka_unit_test(test_logging_placement_from_opts),
        cmocka_unit_test(test_two_contexts_are_independent),
        cmocka_unit_test(test_contexts_in_parallel_threads),
        cmocka_unit_test_setup_teardown(test_frame_releases_at_pop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_outside_frames_is_owned_by_caller, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_keep_survives_pop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retain_inside_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pop_with_no_frame_is_misuse, setup, teardown),
        cmocka_unit_test(test_ctx_free_with_open_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
