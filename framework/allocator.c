/*
 * framework/allocator.c: the caching allocator every device uses for tensor data. Sizes
 * are rounded up to one of four classes per power of two (at most 25% waste), freed blocks
 * wait in a per-class free list, and a training step that reuses its shapes takes no memory
 * from the system after the first step. Counters let tests prove it.
 * The free lists thread through the blocks themselves, so this version serves devices whose
 * memory the host can write (the CPU); a GPU backend keeps its list beside the blocks.
 */
#include "internal.h"

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

void tfl__allocator_init(tfl__allocator *a, tfl__device *dev)
{
    memset(a, 0, sizeof *a);
    a->device = dev;
}

void *tfl__allocator_get(tfl__allocator *a, size_t bytes, size_t *got)
{
    tfl_ctx *ctx = a->device->ctx;
    int c = class_of(bytes);
    TFL_CHECK_RET(ctx, c >= 0, NULL, TFL_RESOURCE_EXHAUSTED,
                  "cannot allocate %zu bytes on %s: too large", bytes, a->device->name);
    size_t size = class_size(c);
    void *p = a->free_lists[c];
    if (p) {
        a->free_lists[c] = ((tfl__block *)p)->next;
        a->stats.cache_hits++;
        a->stats.bytes_cached -= size;
    } else {
        p = a->device->ops->raw_alloc(a->device, size);
        if (!p) {
            tfl__allocator_trim(a); /* give the cache back and try once more */
            p = a->device->ops->raw_alloc(a->device, size);
        }
        TFL_CHECK_RET(ctx, p, NULL, TFL_RESOURCE_EXHAUSTED,
                      "out of memory on %s: cannot allocate %zu bytes (%zu in use)",
                      a->device->name, size, a->stats.bytes_in_use);
        a->stats.fresh_allocs++;
    }
    a->stats.bytes_in_use += size;
    *got = size;
    return p;
}

void tfl__allocator_put(tfl__allocator *a, void *ptr, size_t got)
{
    int c = class_of(got);
    ((tfl__block *)ptr)->next = a->free_lists[c];
    a->free_lists[c] = ptr;
    a->stats.bytes_in_use -= got;
    a->stats.bytes_cached += got;
    a->stats.frees++;
}

void tfl__allocator_trim(tfl__allocator *a)
{
    for (int c = 0; c < TFL_ALLOC_CLASSES; c++) {
        while (a->free_lists[c]) {
            void *p = a->free_lists[c];
            a->free_lists[c] = ((tfl__block *)p)->next;
            a->device->ops->raw_free(a->device, p);
        }
    }
    a->stats.bytes_cached = 0;
}
