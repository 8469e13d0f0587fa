/*
 * framework/core_api.c: the functions of core_api/'s headers that stand for what the core's
 * files do with the records directly (liveness, data pointers, copies to the host, the
 * tapes' state in the context, a device's vendor handles), for the sub-modules and modules
 * that see no record.
 */
#include "internal.h"
#include "core_api/native_api.h"
#include "core_api/optim_api.h"

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

void *tfl__tensor_data(const tfl_tensor *t)
{
    return tfl__data(t);
}

tfl__device *tfl__device_of(const tfl_tensor *t)
{
    return tfl__tensor_device(t);
}

int32_t tfl__tensor_storage_refs(const tfl_tensor *t)
{
    return t->storage->refs;
}

bool tfl__dev_host_memory(const tfl__device *dev)
{
    return tfl__dev_is_host(dev);
}

bool tfl__dev_copies_async(const tfl__device *dev)
{
    return dev->ops->copy_host_async != NULL;
}

bool tfl__ctx_log_placement(const tfl_ctx *ctx)
{
    return ctx->log_placement;
}

int tfl__ctx_device_scopes(const tfl_ctx *ctx)
{
    return ctx->n_scopes;
}

uint64_t tfl__ctx_seed(const tfl_ctx *ctx)
{
    return ctx->rng_seed;
}

tfl__ctx_obj *tfl__ctx_objects(const tfl_ctx *ctx)
{
    return ctx->objects;
}

void tfl__obj_unlink(tfl_ctx *ctx, tfl__ctx_obj *o)
{
    tfl__ctx_unlink(ctx, o);
}

const char *tfl__var_name(const tfl_tensor *v)
{
    return v->var ? v->var->name : NULL;
}

const void *tfl__var_owner(const tfl_tensor *v)
{
    return v->var ? v->var->owner : NULL;
}

void tfl__var_set_owner(tfl_tensor *v, const void *owner)
{
    if (v->var) v->var->owner = owner;
}

const char *tfl__dev_name(const tfl__device *dev)
{
    return dev->name;
}

bool tfl__log_wanted(const tfl_ctx *ctx, tfl_log_level level)
{
    return tfl__log_enabled(ctx, level);
}

const tfl__opt_kernels *tfl__dev_opt_kernels(const tfl__device *dev)
{
    return dev->opt_kernels;
}

void *tfl__dev_scratch_get(tfl__device *dev, size_t bytes, size_t *got)
{
    return tfl__allocator_get(&dev->alloc, bytes, got);
}

void tfl__dev_scratch_put(tfl__device *dev, void *ptr, size_t got)
{
    tfl__allocator_put(&dev->alloc, ptr, got);
}

int tfl__dev_native_ordinal(const tfl__device *dev)
{
    return dev->ops->native_ordinal && dev->ops->native_stream ? dev->ops->native_ordinal(dev) : -1;
}

tfl_status tfl__dev_make_current(tfl__device *dev)
{
    return dev->ops->make_current ? dev->ops->make_current(dev) : TFL_OK;
}

void *tfl__dev_native_stream(tfl__device *dev, tfl__stream *stream)
{
    return dev->ops->native_stream ? dev->ops->native_stream(dev, stream) : NULL;
}
