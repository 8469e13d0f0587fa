/*
 * framework/core_api.c: the functions of core_api/'s headers that stand for what the core's
 * files do with the records directly (liveness, data pointers, copies to the host, the
 * tapes' state in the context), for the sub-modules and modules that see no record.
 */
#include "internal.h"

bool tfl__tensor_is_live(const tfl_tensor *t)
{
    return t->refs > 0;
}

bool tfl__tensor_check_alive(const tfl_tensor *t, const char *what)
{
    return tfl__tensor_alive(t, what);
}

bool tfl__tensor_on_host(const tfl_tensor *t)
{
    return tfl__dev_is_host(tfl__tensor_device(t));
}

void *tfl__tensor_host_data(const tfl_tensor *t)
{
    return tfl__tensor_on_host(t) ? tfl__data(t) : NULL;
}

tfl_status tfl__tensor_read_bytes(const tfl_tensor *t, int64_t offset, void *dst, size_t n)
{
    return tfl__dev_copy_host(tfl__tensor_device(t), dst, (const char *)tfl__data(t) + offset, n,
                              1);
}

tfl_tensor *tfl__tensor_contiguous(tfl_ctx *ctx, const tfl_tensor *t)
{
    return tfl__tensor_copy_to(ctx, t, tfl__tensor_device(t));
}

tfl_tensor *tfl__tensor_new_host(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape)
{
    return tfl__tensor_alloc(ctx, tfl__cpu(ctx), dtype, rank, shape);
}

bool tfl__tensor_trainable(const tfl_tensor *t)
{
    return t->var && t->var->trainable;
}

void *tfl__tapes_get(const tfl_ctx *ctx)
{
    return ctx->tapes;
}

void tfl__tapes_set(tfl_ctx *ctx, void *state, tfl__record_fn record, void (*free_all)(tfl_ctx *))
{
    ctx->tapes = state;
    ctx->tape_record = record;
    ctx->tapes_free = free_all;
    if (!state) ctx->n_recording = 0;
}

void tfl__recording_add(tfl_ctx *ctx, int delta)
{
    ctx->n_recording += delta;
}
