/*
 * test_allocator.c: the caching allocator's host-side bookkeeping (framework/allocator.c):
 * blocks handed out by pointer are found again on put whatever their order, through table
 * growth and many record chunks; get_block/put_block share the same cache; the statistics
 * add up; a pointer the allocator never gave is ignored; trim gives every cached block back.
 * A white-box test on CPU:0's allocator (static library, framework's private headers).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"

#include <string.h>

#define N 300 /* more than one record chunk (63) and the first table (64 buckets) */

static void blocks_by_pointer_come_back_in_any_order(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl__allocator *a = &tfl__cpu(ctx)->alloc;
    tfl_alloc_stats before = a->stats;
    void *p[N];
    size_t got[N], total = 0;
    for (int i = 0; i < N; i++) {
        size_t want = 64 + (size_t)(i % 7) * 100;
        p[i] = tfl__allocator_get(a, want, &got[i]);
        assert_non_null(p[i]);
        assert_true(got[i] >= want && got[i] <= want + want / 4 + 64);
        assert_int_equal((uintptr_t)p[i] % TFL_ALIGN, 0);
        memset(p[i], i & 0xff, got[i]); /* host memory: the CPU may write it */
        total += got[i];
    }
    assert_int_equal(a->n_in_use, N);
    assert_true(a->n_buckets >= N);
    assert_int_equal(a->stats.bytes_in_use - before.bytes_in_use, total);
    /* back in a scrambled order: odd indices first, then even ones from the end */
    for (int i = 1; i < N; i += 2)
        tfl__allocator_put(a, p[i], got[i]);
    for (int i = (N - 1) / 2 * 2; i >= 0; i -= 2)
        tfl__allocator_put(a, p[i], got[i]);
    assert_int_equal(a->n_in_use, 0);
    assert_int_equal(a->stats.bytes_in_use, before.bytes_in_use);
    assert_int_equal(a->stats.bytes_cached - before.bytes_cached, total);
    assert_int_equal(a->stats.frees - before.frees, N);
    /* a pointer it never gave, and NULL, change nothing */
    char outside[64];
    tfl__allocator_put(a, outside, sizeof outside);
    tfl__allocator_put(a, NULL, 0);
    assert_int_equal(a->stats.frees - before.frees, N);
    /* the same sizes again: all from the cache, by pointer or by record */
    uint64_t fresh = a->stats.fresh_allocs;
    for (int i = 0; i < N / 2; i++) {
        p[i] = tfl__allocator_get(a, 64 + (size_t)(i % 7) * 100, &got[i]);
        assert_non_null(p[i]);
    }
    tfl__block *b[N / 2];
    for (int i = N / 2; i < N; i++) {
        b[i - N / 2] = tfl__allocator_get_block(a, 64 + (size_t)(i % 7) * 100);
        assert_non_null(b[i - N / 2]);
    }
    assert_int_equal(a->stats.fresh_allocs, fresh);
    assert_int_equal(a->n_in_use, N / 2); /* blocks by record are not in the table */
    for (int i = 0; i < N / 2; i++)
        tfl__allocator_put(a, p[i], got[i]);
    for (int i = 0; i < N / 2; i++)
        tfl__allocator_put_block(a, b[i]);
    assert_int_equal(a->stats.bytes_in_use, before.bytes_in_use);
    tfl__allocator_trim(a);
    assert_int_equal(a->stats.bytes_cached, 0);
    /* out of range: RESOURCE_EXHAUSTED naming the device */
    size_t g;
    assert_null(tfl__allocator_get(a, SIZE_MAX / 2, &g));
    tfl_error err = tfl_ctx_error(ctx);
    assert_int_equal(err.code, TFL_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(err.message, "on CPU:0"));
    tfl_ctx_free(ctx); /* ASan: every record chunk and the table are freed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocks_by_pointer_come_back_in_any_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
