/*
 * test_allocator.c: the caching allocator's host-side bookkeeping (framework/allocator.c):
 * blocks handed out by pointer are found again on put whatever their order, through table
 * growth and many record chunks; get_block/put_block share the same cache; the statistics
 * add up; a pointer the allocator never gave is ignored; trim gives every cached block back.
 * Pools (recorded steps, framework/trace.c): blocks handed out while a pool is active join it,
 * freed they wait in the pool and serve it first, never the cache; a block held from outside
 * comes back to the pool; release gives free ones to the cache and lets the others return
 * there when freed.
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

static void pools_hold_their_blocks(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl__allocator *a = &tfl__cpu(ctx)->alloc;
    tfl__pool pool, other;
    memset(&pool, 0, sizeof pool);
    memset(&other, 0, sizeof other);
    tfl__block *outside = tfl__allocator_get_block(a, 1000); /* from before the pool */
    tfl__block *cached = tfl__allocator_get_block(a, 1000);
    tfl__allocator_put_block(a, cached); /* in the cache */
    tfl_alloc_stats s0 = a->stats;
    a->active = &pool;
    tfl__block *x = tfl__allocator_get_block(a, 1000); /* the cache's block, now the pool's */
    assert_ptr_equal(x, cached);
    assert_ptr_equal(x->pool, &pool);
    tfl__block *y = tfl__allocator_get_block(a, 1000); /* fresh, the pool's */
    assert_ptr_equal(y->pool, &pool);
    assert_int_equal(pool.n_held, 2);
    tfl__allocator_put_block(a, x); /* freed: waits in the pool */
    tfl__block *z = tfl__allocator_get_block(a, 1000); /* the pool's free block first */
    assert_ptr_equal(z, x);
    tfl__allocator_put_block(a, z);
    a->active = NULL;
    /* outside the pool's time: a new block comes from the cache or the device, never x */
    tfl__block *w = tfl__allocator_get_block(a, 1000);
    assert_ptr_not_equal(w, x);
    assert_null(w->pool);
    tfl__allocator_put_block(a, w); /* the cache's */
    /* y, in use, freed later: back to the pool, not to the cache */
    tfl__allocator_put_block(a, y);
    tfl__block *v = tfl__allocator_get_block(a, 1000);
    assert_true(v != x && v != y);
    tfl__allocator_put_block(a, v);
    /* a block from outside held: freed, it waits in the pool; another pool cannot hold it */
    assert_true(tfl__pool_hold(a, &pool, outside));
    assert_true(tfl__pool_hold(a, &pool, outside)); /* again: already this pool's */
    assert_false(tfl__pool_hold(a, &other, outside));
    assert_int_equal(pool.n_held, 3);
    tfl__allocator_put_block(a, outside);
    assert_int_equal(a->stats.bytes_in_use, s0.bytes_in_use - outside->size);
    /* release: the pool's free blocks (x, y, outside) join the cache */
    tfl__pool_release(a, &pool);
    assert_int_equal(pool.n_held, 0);
    assert_null(x->pool);
    assert_null(y->pool);
    assert_null(outside->pool);
    uint64_t fresh = a->stats.fresh_allocs;
    tfl__block *r[4];
    for (int i = 0; i < 4; i++) r[i] = tfl__allocator_get_block(a, 1000);
    assert_int_equal(a->stats.fresh_allocs, fresh); /* x, y, outside and w's from the cache */
    for (int i = 0; i < 4; i++) tfl__allocator_put_block(a, r[i]);
    /* released while a block is in use: that block returns to the cache when freed */
    a->active = &pool;
    tfl__block *u = tfl__allocator_get_block(a, 1000);
    a->active = NULL;
    tfl__pool_release(a, &pool);
    assert_null(u->pool);
    tfl__allocator_put_block(a, u);
    assert_int_equal(a->stats.bytes_in_use, s0.bytes_in_use - outside->size);
    tfl__pool_release(a, &other); /* empty: nothing to do */
    tfl_ctx_free(ctx); /* ASan: the pools' records are freed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocks_by_pointer_come_back_in_any_order),
        cmocka_unit_test(pools_hold_their_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
