/* test_alloc.c: tests of the caching allocator (tapeflow/context.h): counters, reuse of freed
 * blocks, no allocation in the steady state of repeated ops, empty_cache, failing hooks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* The counters of every device's allocator, summed: ops run where placement puts them (GPU:0
 * when there is one, with copies of host inputs there), and the steady state holds for all
 * the memory a step takes, wherever it lives. live_tensors is the context's. */
static tfl_alloc_stats stats(tfl_ctx *ctx)
{
    tfl_alloc_stats s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        tfl_alloc_stats d;
        memset(&d, 0, sizeof d);
        assert_int_equal(tfl_alloc_stats_get(ctx, tfl_device_name(ctx, i), &d), TFL_OK);
        s.bytes_in_use += d.bytes_in_use;
        s.bytes_cached += d.bytes_cached;
        s.fresh_allocs += d.fresh_allocs;
        s.cache_hits += d.cache_hits;
        s.frees += d.frees;
        s.live_tensors = d.live_tensors;
    }
    return s;
}

static void print_stats(const char *label, const tfl_alloc_stats *s)
{
    print_message("%s: in_use=%zu cached=%zu fresh=%llu hits=%llu frees=%llu live=%llu\n", label,
                  s->bytes_in_use, s->bytes_cached, (unsigned long long)s->fresh_allocs,
                  (unsigned long long)s->cache_hits, (unsigned long long)s->frees,
                  (unsigned long long)s->live_tensors);
}

/* The steady-state check: nothing new from the system, nothing left in use or alive. */
static void expect_steady(const tfl_alloc_stats *warm, const tfl_alloc_stats *after,
                          uint64_t min_hits)
{
    if (after->fresh_allocs != warm->fresh_allocs || after->bytes_in_use != warm->bytes_in_use ||
        after->live_tensors != warm->live_tensors) {
        print_stats("after warm-up", warm);
        print_stats("after the loop", after);
    }
    assert_int_equal(after->fresh_allocs, warm->fresh_allocs);
    assert_int_equal(after->bytes_in_use, warm->bytes_in_use);
    assert_int_equal(after->live_tensors, warm->live_tensors);
    assert_true(after->cache_hits >= warm->cache_hits + min_hits);
}

static tfl_tensor *ramp_f32(tfl_ctx *ctx, int64_t n, float start)
{
    float v[256];
    assert_true(n <= 256);
    for (int64_t i = 0; i < n; i++) v[i] = start + (float)i;
    return tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, v);
}

/* counting_alloc, counting_free, alloc_counter: tests/common/tfl_test_util.h */

/* ---- counters ----------------------------------------------------------------------------- */

static void test_stats_per_device(void **state)
{
    fixture *f = *state;
    tfl_alloc_stats a, b;
    memset(&a, 0xFF, sizeof a);
    memset(&b, 0xFF, sizeof b);
    assert_int_equal(tfl_alloc_stats_get(f->ctx, NULL, &a), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(f->ctx, "CPU:0", &b), TFL_OK);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(a.live_tensors, 0);
    assert_int_equal(a.bytes_in_use, 0);

    bool has_gpu3 = false;
    for (int i = 0; i < tfl_device_count(f->ctx); i++)
        if (strcmp(tfl_device_name(f->ctx, i), "GPU:3") == 0) has_gpu3 = true;
    if (!has_gpu3) {
        assert_int_equal(tfl_alloc_stats_get(f->ctx, "GPU:3", &b), TFL_NOT_FOUND);
        tfl_ctx_clear_error(f->ctx);
    }
}

static void test_live_tensors_and_bytes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_alloc_stats s0 = stats(ctx);
    tfl_tensor *a = tfl_zeros(ctx, TFL_DTYPE_FLOAT64, 1, (const int64_t[]){1000}); /* 8000 B */
    tfl_tensor *b = tfl_zeros(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){10});
    tfl_tensor *c = tfl_scalar_bool(ctx, true);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    tfl_alloc_stats s1 = stats(ctx);
    assert_int_equal(s1.live_tensors, s0.live_tensors + 3);
    assert_true(s1.bytes_in_use >= s0.bytes_in_use + 8000 + 40);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(c);
    tfl_alloc_stats s2 = stats(ctx);
    assert_int_equal(s2.live_tensors, s0.live_tensors);
    assert_int_equal(s2.bytes_in_use, s0.bytes_in_use);
    assert_true(s2.frees >= s1.frees + 2);
}

static void test_freed_block_is_reused(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 4000; /* 16000 bytes */
    tfl_alloc_stats s0 = stats(ctx);

    tfl_tensor *t = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    assert_non_null(t);
    tfl_alloc_stats s1 = stats(ctx);
    assert_true(s1.fresh_allocs > s0.fresh_allocs);
    assert_true(s1.bytes_in_use >= s0.bytes_in_use + 16000);
    tfl_tensor_release(t);
    tfl_alloc_stats s2 = stats(ctx);
    assert_int_equal(s2.bytes_in_use, s0.bytes_in_use);
    assert_true(s2.bytes_cached >= s0.bytes_cached + 16000);
    assert_true(s2.frees > s1.frees);

    t = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    assert_non_null(t);
    tfl_alloc_stats s3 = stats(ctx);
    assert_int_equal(s3.fresh_allocs, s1.fresh_allocs);
    assert_true(s3.cache_hits > s2.cache_hits);
    assert_true(s3.bytes_in_use >= s0.bytes_in_use + 16000);
    assert_true(s3.bytes_cached < s2.bytes_cached);
    /* Reused memory holds the new values, not the old ones. */
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, n - 1, &v), TFL_OK);
    assert_float_equal(v, 1.0, 0.0);
    tfl_tensor_release(t);
    assert_int_equal(stats(ctx).bytes_in_use, s0.bytes_in_use);
}

static void test_views_take_no_memory(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){16, 16});
    assert_non_null(x);
    tfl_alloc_stats s0 = stats(ctx);
    assert_non_null(tfl_transpose(ctx, x, NULL));
    assert_non_null(tfl_reshape(ctx, x, 1, (const int64_t[]){256}));
    assert_non_null(tfl_slice(ctx, x, (const int64_t[]){2, 2}, (const int64_t[]){4, -1}));
    tfl_alloc_stats s1 = stats(ctx);
    assert_int_equal(s1.live_tensors, s0.live_tensors + 3);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.cache_hits, s0.cache_hits);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- the steady state --------------------------------------------------------------------- */

static void test_steady_state_add(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = ramp_f32(ctx, 64, 0.0f);
    tfl_tensor *b = ramp_f32(ctx, 64, 100.0f);
    assert_non_null(a);
    assert_non_null(b);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_add(ctx, a, b));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_alloc_stats warm = stats(ctx);

    double v = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *c = tfl_add(ctx, a, b);
        assert_non_null(c);
        if (i % 250 == 0) {
            assert_int_equal(tfl_tensor_get(c, 63, &v), TFL_OK);
            assert_float_equal(v, 63.0 + 163.0, 0.0);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 1000);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_steady_state_many_adds_per_frame(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *a = ramp_f32(ctx, 64, 1.0f);
    assert_non_null(a);

    /* Warm-up: one frame holding 1000 results at once. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int i = 0; i < 1000; i++) assert_non_null(tfl_add(ctx, a, a));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_alloc_stats warm = stats(ctx);

    for (int round = 0; round < 5; round++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *last = NULL;
        for (int i = 0; i < 1000; i++) last = tfl_add(ctx, a, a);
        assert_non_null(last);
        double v = 0;
        assert_int_equal(tfl_tensor_get(last, 10, &v), TFL_OK);
        assert_float_equal(v, 22.0, 0.0);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 5000);
    tfl_tensor_release(a);
}

static void test_steady_state_matmul(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {16, 16};
    tfl_tensor *a = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, shape, 0.5);
    tfl_tensor *b = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, shape, 2.0);
    assert_non_null(a);
    assert_non_null(b);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_matmul(ctx, a, b, 0));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_alloc_stats warm = stats(ctx);

    for (int i = 0; i < 1000; i++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
        assert_non_null(c);
        if (i % 250 == 0) {
            double v = 0;
            assert_int_equal(tfl_tensor_get(c, 255, &v), TFL_OK);
            assert_float_equal(v, 16.0, 1e-5);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 1000);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_steady_state_reduce_sum(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {16, 16};
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, shape);
    assert_non_null(x);
    const int axis0[1] = {0};

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_reduce_sum(ctx, x, 0, NULL, false));
    assert_non_null(tfl_reduce_sum(ctx, x, 1, axis0, true));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_alloc_stats warm = stats(ctx);

    for (int i = 0; i < 1000; i++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *all = tfl_reduce_sum(ctx, x, 0, NULL, false);
        tfl_tensor *cols = tfl_reduce_sum(ctx, x, 1, axis0, true);
        assert_non_null(all);
        assert_non_null(cols);
        if (i % 250 == 0) {
            double v = 0;
            assert_int_equal(tfl_tensor_get(all, 0, &v), TFL_OK);
            assert_float_equal(v, 256.0, 0.0);
            assert_int_equal(tfl_tensor_get(cols, 15, &v), TFL_OK);
            assert_float_equal(v, 16.0, 0.0);
            assert_int_equal(tfl_tensor_rank(cols), 2);
            assert_int_equal(tfl_tensor_dim(cols, 0), 1);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 2000);
    tfl_tensor_release(x);
}

/* A forward pass of a small dense layer: matmul, broadcast bias add, relu, mean. */
static void test_steady_state_chain(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *x = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){8, 16}, 1.0);
    tfl_tensor *w = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){16, 4}, 0.25);
    tfl_tensor *bias = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){4}, -1.0);
    assert_non_null(x);
    assert_non_null(w);
    assert_non_null(bias);

    tfl_alloc_stats warm = stats(ctx);
    for (int i = 0; i < 201; i++) {
        if (i == 1) warm = stats(ctx); /* after the warm-up step */
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *h = tfl_relu(ctx, tfl_add(ctx, tfl_matmul(ctx, x, w, 0), bias));
        tfl_tensor *loss = tfl_reduce_mean(ctx, tfl_mul(ctx, h, h), 0, NULL, false);
        assert_non_null(loss);
        double v = 0;
        assert_int_equal(tfl_tensor_get(loss, 0, &v), TFL_OK);
        assert_float_equal(v, 9.0, 1e-5); /* relu(16 * 0.25 - 1) = 3 */
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 200 * 5);
    tfl_tensor_release(x);
    tfl_tensor_release(w);
    tfl_tensor_release(bias);
}

/* Ops on views (transposed inputs, transpose flags, a reduction over the inner axis, a
 * reshape that copies) must not leak their temporaries either. */
static void test_steady_state_views(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *x = tfl_range(ctx, TFL_DTYPE_FLOAT32, 0, 256, 1);
    tfl_tensor *m = tfl_reshape(ctx, x, 2, (const int64_t[]){16, 16});
    assert_non_null(m);
    const int axis1[1] = {1};

    tfl_alloc_stats warm = stats(ctx);
    for (int i = 0; i < 301; i++) {
        if (i == 1) warm = stats(ctx);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *t = tfl_transpose(ctx, m, NULL);
        tfl_tensor *sum = tfl_add(ctx, t, m);                      /* m^T + m */
        tfl_tensor *p = tfl_matmul(ctx, m, m, TFL_TRANSPOSE_A);     /* m^T m */
        tfl_tensor *r = tfl_reduce_sum(ctx, t, 1, axis1, false);    /* column sums of m */
        tfl_tensor *flat = tfl_reshape(ctx, t, 1, (const int64_t[]){256}); /* a copy */
        assert_non_null(sum);
        assert_non_null(p);
        assert_non_null(r);
        assert_non_null(flat);
        if (i % 100 == 0) {
            double v = 0;
            assert_int_equal(tfl_tensor_get(sum, 1, &v), TFL_OK); /* m[1][0] + m[0][1] */
            assert_float_equal(v, 17.0, 0.0);
            assert_int_equal(tfl_tensor_get(r, 0, &v), TFL_OK); /* sum of m[:, 0] */
            assert_float_equal(v, 1920.0, 0.0);
            assert_int_equal(tfl_tensor_get(flat, 1, &v), TFL_OK);
            assert_float_equal(v, 16.0, 0.0);
            assert_int_equal(tfl_tensor_get(p, 0, &v), TFL_OK); /* sum_k m[k][0]^2 */
            assert_float_equal(v, 317440.0, 1e-2);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_alloc_stats after = stats(ctx);
    expect_steady(&warm, &after, 300 * 4);
    tfl_tensor_release(m);
    tfl_tensor_release(x);
}

/* ---- emptying the cache ------------------------------------------------------------------- */

static void test_empty_cache(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 4096;
    tfl_tensor *keep = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 3.0);
    tfl_tensor *drop = tfl_zeros(ctx, TFL_DTYPE_FLOAT64, 1, &n);
    assert_non_null(keep);
    assert_non_null(drop);
    tfl_tensor_release(drop);
    tfl_alloc_stats s1 = stats(ctx);
    assert_true(s1.bytes_cached >= 4096 * 8);

    tfl_alloc_empty_cache(ctx);
    tfl_alloc_stats s2 = stats(ctx);
    assert_int_equal(s2.bytes_cached, 0);
    assert_int_equal(s2.bytes_in_use, s1.bytes_in_use); /* live tensors keep their memory */
    assert_int_equal(s2.live_tensors, s1.live_tensors);
    double v = 0;
    assert_int_equal(tfl_tensor_get(keep, n - 1, &v), TFL_OK);
    assert_float_equal(v, 3.0, 0.0);

    /* The next allocation of that size comes from the system again. */
    drop = tfl_zeros(ctx, TFL_DTYPE_FLOAT64, 1, &n);
    assert_non_null(drop);
    tfl_alloc_stats s3 = stats(ctx);
    assert_true(s3.fresh_allocs > s2.fresh_allocs);
    assert_int_equal(s3.cache_hits, s2.cache_hits);
    tfl_tensor_release(drop);
    tfl_tensor_release(keep);
    tfl_alloc_empty_cache(ctx);
    tfl_alloc_stats s4 = stats(ctx);
    assert_int_equal(s4.bytes_cached, 0);
    assert_int_equal(s4.bytes_in_use, 0);
}

static void test_failing_hook_gives_resource_exhausted(void **state)
{
    (void)state;
    alloc_counter c;
    memset(&c, 0, sizeof c);
    c.fail_at_least = (size_t)64 << 20;
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.alloc_fn = counting_alloc, .free_fn = counting_free, .alloc_user = &c},
        NULL);
    assert_non_null(ctx);
    tfl_alloc_stats s0 = stats(ctx);

    const int64_t big = (int64_t)1 << 26; /* 256 MiB of float32 */
    assert_null(tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, &big));
    assert_true(c.refused > 0);
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_RESOURCE_EXHAUSTED);
    assert_true(strlen(e.message) > 0);
    tfl_ctx_clear_error(ctx);
    tfl_alloc_stats s1 = stats(ctx);
    assert_int_equal(s1.live_tensors, s0.live_tensors);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);

    /* An op whose output cannot be allocated fails the same way. The hooks serve host memory:
     * the op runs on CPU:0 here (a GPU's memory comes from its driver, never the hooks). */
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){8192, 1});
    tfl_tensor *y = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){1, 8192});
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    assert_null(tfl_add(ctx, x, y)); /* (8192, 8192) float32 = 256 MiB */
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_RESOURCE_EXHAUSTED);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(stats(ctx).live_tensors, s0.live_tensors + 2);

    /* Small tensors still work. */
    tfl_tensor *small = tfl_add(ctx, y, y);
    assert_non_null(small);
    double v = 0;
    assert_int_equal(tfl_tensor_get(small, 8191, &v), TFL_OK);
    assert_float_equal(v, 2.0, 0.0);
    tfl_tensor_release(small);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    assert_int_equal(stats(ctx).live_tensors, s0.live_tensors);
    tfl_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stats_per_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_tensors_and_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_block_is_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_views_take_no_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_many_adds_per_frame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_reduce_sum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_steady_state_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_cache, setup, teardown),
        cmocka_unit_test(test_failing_hook_gives_resource_exhausted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
