/*
 * framework/allocator.c: the caching allocator every device uses for tensor data. Sizes
 * are rounded up to one of four classes per power of two (at most 25% waste), freed blocks
 * wait in a per-class free list, and a training step that reuses its shapes takes no memory
 * from the device after the first step. Counters let tests prove it.
 *
 * The bookkeeping lives on the host, so the same code serves devices whose memory the host
 * cannot touch: each block is a host record (pointer, size) taken from chunks of records; a
 * cached block sits in its class's list. Tensor storage keeps its block's record
 * (get_block/put_block: no lookup); a block handed out by pointer (get/put: kernels'
 * scratch) sits in a hash table keyed by its pointer, where put finds it. Nothing here reads
 * or writes device memory.
 */
#include "internal.h"

#include <stdio.h>

#define RECORDS_PER_CHUNK 63 /* a chunk: a link to the next chunk, then the records */

typedef struct record_chunk {
    struct record_chunk *next;
    tfl__block records[RECORDS_PER_CHUNK];
} record_chunk;

static size_t class_size(int c)
{
    if (c == 0) return 64;
    int p = 6 + (c - 1) / 4, k = (c - 1) % 4;
    return ((size_t)1 << p) + ((size_t)(k + 1) << (p - 2));
}

static int class_of(size_t bytes)
{
    if (bytes <= 64) return 0;
    int p = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^p < bytes <= 2^(p+1) */
    size_t quarter = (size_t)1 << (p - 2);
    int k = (int)((bytes - ((size_t)1 << p) + quarter - 1) / quarter) - 1;
    int c = 1 + (p - 6) * 4 + k;
    return c < TFL_ALLOC_CLASSES ? c : -1;
}

/* Blocks are TFL_ALIGN-aligned: the low bits carry nothing; Fibonacci hashing spreads the rest. */
static inline size_t bucket_of(const tfl__allocator *a, const void *ptr)
{
    uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (a->n_buckets - 1);
}

void tfl__allocator_init(tfl__allocator *a, tfl__device *dev)
{
    memset(a, 0, sizeof *a);
    a->device = dev;
}

/* A spare record, or NULL when the host is out of memory. */
static tfl__block *record_new(tfl__allocator *a)
{
    if (!a->spare) {
        record_chunk *c = tfl__host_alloc(a->device->ctx, sizeof *c, 64);
        if (!c) return NULL;
        c->next = a->chunks;
        a->chunks = c;
        for (int i = RECORDS_PER_CHUNK - 1; i >= 0; i--) {
            c->records[i].next = a->spare;
            a->spare = &c->records[i];
        }
    }
    tfl__block *b = a->spare;
    a->spare = b->next;
    return b;
}

static void record_free(tfl__allocator *a, tfl__block *b)
{
    b->ptr = NULL;
    b->next = a->spare;
    a->spare = b;
}

/* Doubles the table (or makes the first one); keeps the old one when the host has no memory:
 * the chains only grow longer. */
static void table_grow(tfl__allocator *a)
{
    size_t n = a->n_buckets ? a->n_buckets * 2 : 64;
    tfl__block **t = tfl__host_alloc(a->device->ctx, n * sizeof *t, 64);
    if (!t) return;
    memset(t, 0, n * sizeof *t);
    tfl__block **old = a->buckets;
    size_t n_old = a->n_buckets;
    a->buckets = t;
    a->n_buckets = n;
    for (size_t i = 0; i < n_old; i++) {
        for (tfl__block *b = old[i], *next; b; b = next) {
            next = b->next;
            size_t h = bucket_of(a, b->ptr);
            b->next = t[h];
            t[h] = b;
        }
    }
    tfl__host_free(a->device->ctx, old);
}

static tfl_status oom(tfl__allocator *a, size_t size)
{
    tfl__device *dev = a->device;
    char mem[96] = "";
    size_t free_b, total_b;
    if (dev->ops->mem_info && dev->ops->mem_info(dev, &free_b, &total_b) == TFL_OK)
        snprintf(mem, sizeof mem, ", %zu free of %zu", free_b, total_b);
    return tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED,
                          "out of memory on %s: cannot allocate %zu bytes (%zu in use, %zu "
                          "cached%s); free tensors you no longer need or use smaller batches",
                          dev->name, size, (size_t)a->stats.bytes_in_use,
                          (size_t)a->stats.bytes_cached, mem);
}

/* ---- pools --------------------------------------------------------------------------------- */

static bool pool_add(tfl_ctx *ctx, tfl__pool *pool, tfl__block *b)
{
    if (pool->n_held == pool->cap_held) {
        size_t cap = pool->cap_held ? pool->cap_held * 2 : 64;
        tfl__block **h = tfl__grow(ctx, pool->held, pool->n_held * sizeof *h, cap * sizeof *h);
        if (!h) {
            pool->failed = true;
            return false;
        }
        pool->held = h;
        pool->cap_held = cap;
    }
    pool->held[pool->n_held++] = b;
    b->pool = pool;
    return true;
}

bool tfl__pool_hold(tfl__allocator *a, tfl__pool *pool, tfl__block *b)
{
    if (b->pool) return b->pool == pool;
    return pool_add(a->device->ctx, pool, b);
}

void tfl__pool_release(tfl__allocator *a, tfl__pool *pool)
{
    for (int c = 0; c < TFL_ALLOC_CLASSES; c++) {
        while (pool->free_lists[c]) {
            tfl__block *b = pool->free_lists[c];
            pool->free_lists[c] = b->next;
            b->pool = NULL;
            b->next = a->free_lists[c];
            a->free_lists[c] = b;
        }
    }
    for (size_t i = 0; i < pool->n_held; i++)
        if (pool->held[i]->pool == pool) pool->held[i]->pool = NULL; /* in use */
    tfl__host_free(a->device->ctx, pool->held);
    if (a->active == pool) a->active = NULL;
    memset(pool, 0, sizeof *pool);
}

/* ---- blocks -------------------------------------------------------------------------------- */

tfl__block *tfl__allocator_get_block(tfl__allocator *a, size_t bytes)
{
    tfl_ctx *ctx = a->device->ctx;
    int c = class_of(bytes);
    TFL_CHECK_RET(ctx, c >= 0, NULL, TFL_RESOURCE_EXHAUSTED,
                  "cannot allocate %zu bytes on %s: too large", bytes, a->device->name);
    size_t size = class_size(c);
    tfl__pool *pool = a->active;
    if (TFL_UNLIKELY(pool) && pool->free_lists[c]) { /* a block the recorded work freed */
        tfl__block *b = pool->free_lists[c];
        pool->free_lists[c] = b->next;
        b->next = NULL;
        a->stats.cache_hits++;
        a->stats.bytes_cached -= size;
        a->stats.bytes_in_use += size;
        return b;
    }
    tfl__block *b = a->free_lists[c];
    if (TFL_LIKELY(b)) {
        a->free_lists[c] = b->next;
        a->stats.cache_hits++;
        a->stats.bytes_cached -= size;
    } else {
        b = record_new(a);
        TFL_CHECK_RET(ctx, b, NULL, TFL_RESOURCE_EXHAUSTED,
                      "out of host memory for the allocator's records of %s", a->device->name);
        void *p = a->device->ops->raw_alloc(a->device, size);
        if (!p) {
            tfl__allocator_trim(a); /* give the cache back and try once more */
            p = a->device->ops->raw_alloc(a->device, size);
        }
        if (!p) {
            record_free(a, b);
            oom(a, size);
            return NULL;
        }
        b->ptr = p;
        b->size = size;
        b->pool = NULL;
        a->stats.fresh_allocs++;
    }
    b->next = NULL;
    if (TFL_UNLIKELY(pool) && !pool_add(ctx, pool, b)) { /* recorded work keeps it */
        b->next = a->free_lists[c];
        a->free_lists[c] = b;
        a->stats.bytes_cached += size;
        TFL_CHECK_RET(ctx, false, NULL, TFL_RESOURCE_EXHAUSTED,
                      "out of host memory for the records of a recorded step on %s",
                      a->device->name);
    }
    a->stats.bytes_in_use += size;
    return b;
}

void tfl__allocator_put_block(tfl__allocator *a, tfl__block *b)
{
    int c = class_of(b->size);
    tfl__block **list = TFL_UNLIKELY(b->pool) ? &b->pool->free_lists[c] : &a->free_lists[c];
    b->next = *list;
    *list = b;
    a->stats.bytes_in_use -= b->size;
    a->stats.bytes_cached += b->size;
    a->stats.frees++;
}

void *tfl__allocator_get(tfl__allocator *a, size_t bytes, size_t *got)
{
    if (a->n_in_use >= a->n_buckets) table_grow(a);
    TFL_CHECK_RET(a->device->ctx, a->n_buckets, NULL, TFL_RESOURCE_EXHAUSTED,
                  "out of host memory for the allocator's table of %s", a->device->name);
    tfl__block *b = tfl__allocator_get_block(a, bytes);
    if (!b) return NULL;
    size_t h = bucket_of(a, b->ptr);
    b->next = a->buckets[h];
    a->buckets[h] = b;
    a->n_in_use++;
    *got = b->size;
    return b->ptr;
}

void tfl__allocator_put(tfl__allocator *a, void *ptr, size_t got)
{
    (void)got; /* the record knows its size */
    if (!ptr || !a->n_buckets) return;
    tfl__block **link = &a->buckets[bucket_of(a, ptr)];
    while (*link && (*link)->ptr != ptr) link = &(*link)->next;
    tfl__block *b = *link;
    if (TFL_UNLIKELY(!b)) return; /* not a block of this allocator's table: nothing to do */
    *link = b->next;
    a->n_in_use--;
    tfl__allocator_put_block(a, b);
}

void tfl__allocator_trim(tfl__allocator *a)
{
    for (int c = 0; c < TFL_ALLOC_CLASSES; c++) {
        while (a->free_lists[c]) {
            tfl__block *b = a->free_lists[c];
            a->free_lists[c] = b->next;
            a->device->ops->raw_free(a->device, b->ptr);
            record_free(a, b);
        }
    }
    a->stats.bytes_cached = 0;
}

/* Blocks still held by get_block's callers at teardown are theirs to put back first (the
 * ctx's pools do, before the devices go). */
void tfl__allocator_destroy(tfl__allocator *a)
{
    tfl__allocator_trim(a);
    tfl_ctx *ctx = a->device->ctx;
    for (size_t i = 0; i < a->n_buckets; i++) {
        for (tfl__block *b = a->buckets[i], *next; b; b = next) {
            next = b->next;
            a->device->ops->raw_free(a->device, b->ptr);
        }
    }
    tfl__host_free(ctx, a->buckets);
    for (record_chunk *c = a->chunks, *next; c; c = next) {
        next = c->next;
        tfl__host_free(ctx, c);
    }
    tfl__allocator_init(a, a->device);
}
