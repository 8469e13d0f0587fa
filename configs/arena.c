/*
 * configs/arena.c: the arena that holds every node and string of a config, freed at once: chunks
 * of 16 KiB (or one object's size) from the context's host memory, 16-byte aligned, zeroed. The
 * bottom of configs/ (tests/layering/check_configs_order.sh): it calls nothing of configs/.
 */
#include "configs_internal.h"

#include <stdio.h>

struct tfl__arena_chunk {
    tfl__arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *tfl__arena_alloc(tfl__arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    tfl__arena_chunk *c = a->head;
    if (!c || c->cap - c->used < bytes) {
        size_t cap = bytes > 16384 ? bytes : 16384;
        c = tfl__host_alloc(a->ctx, sizeof *c + cap, 16);
        if (!c) {
            if (!a->failed)
                tfl__set_error(a->ctx, TFL_RESOURCE_EXHAUSTED, "config: out of memory (%zu bytes)",
                               bytes);
            a->failed = true;
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += bytes;
    memset(p, 0, bytes);
    return p;
}

char *tfl__arena_strndup(tfl__arena *a, const char *s, size_t n)
{
    char *p = tfl__arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *tfl__arena_strdup(tfl__arena *a, const char *s)
{
    return tfl__arena_strndup(a, s, strlen(s));
}

char *tfl__arena_printf(tfl__arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n >= 0 ? tfl__arena_alloc(a, (size_t)n + 1) : NULL;
    if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void tfl__arena_free(tfl__arena *a)
{
    for (tfl__arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        tfl__host_free(a->ctx, c);
    }
    a->head = NULL;
}
