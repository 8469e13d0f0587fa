/*
 * framework/handles.c: the records of the modules' handles (tapes, optimizers, models,
 * layers, datasets): made alive with a magic, poisoned when freed and kept in the ctx's pool
 * of dead records until the ctx reuses them (oldest first, once DEAD_KEPT of a kind are
 * dead) or is freed, so that a handle freed
 * twice, or used after its free, is found to be dead and reported as MISUSE instead of
 * touching memory the allocator got back.
 */
#include "internal.h"

static const char *kind_name(uint32_t magic)
{
    switch (magic) {
    case TFL__MAGIC_TAPE:
        return "tape";
    case TFL__MAGIC_OPTIMIZER:
        return "optimizer";
    case TFL__MAGIC_MODEL:
        return "model";
    case TFL__MAGIC_LAYER:
        return "layer";
    case TFL__MAGIC_DATASET:
        return "dataset";
    case TFL__MAGIC_CONFIG:
        return "config";
    case TFL__MAGIC_CKPT:
        return "checkpoint reader";
    case TFL__MAGIC_CKPT_MANAGER:
        return "checkpoint manager";
    case TFL__MAGIC_SUMMARY:
        return "summary writer";
    case TFL__MAGIC_EVREADER:
        return "event reader";
    case TFL__MAGIC_CURVES:
        return "curves";
    case TFL__MAGIC_RUN:
        return "run";
    case TFL__MAGIC_COMM:
        return "communicator";
    default:
        return "handle";
    }
}

/* Dead records of a kind kept before the oldest is reused: a stale handle stays detectably
 * dead across this many later creations of its kind (a tape a step, say), as a tensor's does
 * across its record chunk; the pool stays bounded. */
#define DEAD_KEPT 32

void *tfl__obj_new(tfl_ctx *ctx, size_t size, uint32_t magic, void (*free_fn)(tfl__ctx_obj *))
{
    tfl__ctx_obj *o = NULL, *prev = NULL, *oldest_prev = NULL;
    int dead = 0;
    for (tfl__ctx_obj *d = ctx->dead_objects; d && dead < DEAD_KEPT; prev = d, d = d->next)
        if (d->kind == magic && dead++ == 0) { /* one kind, one record size */
            o = d;
            oldest_prev = prev;
        }
    if (dead < DEAD_KEPT) o = NULL;
    prev = oldest_prev;
    if (o) { /* out of the pool */
        if (prev)
            prev->next = o->next;
        else
            ctx->dead_objects = o->next;
        if (ctx->dead_tail == o) ctx->dead_tail = prev;
        memset(o, 0, size);
    } else if (!(o = tfl__calloc(ctx, size))) {
        return NULL;
    }
    o->magic = o->kind = magic;
    if (free_fn) tfl__ctx_link(ctx, o, free_fn);
    return o;
}

void tfl__obj_retire(tfl_ctx *ctx, tfl__ctx_obj *o)
{
    if (o->free) tfl__ctx_unlink(ctx, o);
    o->magic = TFL__MAGIC_DEAD;
    o->free = NULL;
    o->prev = o->next = NULL;
    if (ctx->dead_tail)
        ctx->dead_tail->next = o;
    else
        ctx->dead_objects = o;
    ctx->dead_tail = o;
}

bool tfl__obj_check(tfl_ctx *ctx, const tfl__ctx_obj *o, uint32_t magic, const char *what)
{
    if (TFL_LIKELY(o->magic == magic)) return true;
    if (o->magic == TFL__MAGIC_DEAD)
        tfl__set_error(ctx, TFL_MISUSE, "%s: %s already freed (double free or use after free)",
                       what, kind_name(magic));
    else if (strcmp(kind_name(o->magic), "handle") != 0)
        tfl__set_error(ctx, TFL_MISUSE, "%s: not a %s handle (it is a %s)", what, kind_name(magic),
                       kind_name(o->magic));
    else
        tfl__set_error(ctx, TFL_MISUSE, "%s: not a %s handle", what, kind_name(magic));
    return false;
}

void tfl__objs_free(tfl_ctx *ctx)
{
    for (tfl__ctx_obj *o = ctx->dead_objects, *next; o; o = next) {
        next = o->next;
        tfl__host_free(ctx, o);
    }
    ctx->dead_objects = ctx->dead_tail = NULL;
}
