/*
 * framework/context.c: the context: creation with options (the default host memory hooks),
 * teardown, the kept error and the settings read back through the API. The primitives under
 * everything (keeping an error, logging, host memory through the hooks) are base.c's; frames
 * are tensor.c's.
 */
#include "internal.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the default host memory hooks ----------------------------------------------------- */

static void *default_alloc(void *user, size_t bytes, size_t align)
{
    (void)user;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (bytes > SIZE_MAX - align) return NULL; /* rounding up must not wrap */
    bytes = (bytes + align - 1) / align * align; /* aligned_alloc wants a multiple */
    return aligned_alloc(align, bytes ? bytes : align);
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

/* ---- creation ------------------------------------------------------------------------ */

static int default_threads(void)
{
    int n = omp_get_max_threads(); /* honours OMP_NUM_THREADS, else the cores */
    return n > 0 ? n : 1;
}

/* Checks every field of o; on a bad one writes "tfl_ctx_new: opts.<field> is <value>;
 * expected ..." into msg and returns INVALID_ARGUMENT. */
static tfl_status check_ctx_opts(const tfl_ctx_opts *o, char *msg, size_t size)
{
#define BAD(...) return snprintf(msg, size, "tfl_ctx_new: " __VA_ARGS__), TFL_INVALID_ARGUMENT
    if (o->num_threads < 0)
        BAD("opts.num_threads is %d; expected >= 0 (0: OMP_NUM_THREADS or all cores)",
            o->num_threads);
    if ((unsigned)o->log_level >= TFL_LOG_LEVEL_COUNT)
        BAD("opts.log_level is %d; expected TFL_LOG_ERROR (0) .. TFL_LOG_DEBUG (%d)",
            (int)o->log_level, TFL_LOG_LEVEL_COUNT - 1);
    if (!o->alloc_fn != !o->free_fn)
        BAD("opts.%s is set but opts.%s is NULL; give both memory hooks or neither",
            o->alloc_fn ? "alloc_fn" : "free_fn", o->alloc_fn ? "free_fn" : "alloc_fn");
#undef BAD
    if (size) msg[0] = '\0';
    return TFL_OK;
}

tfl_status tfl_ctx_opts_check(const tfl_ctx_opts *opts, char *msg, size_t size)
{
    char local[TFL_MSG_SIZE];
    if (!msg || size == 0) {
        msg = local;
        size = sizeof local;
    }
    if (!opts) {
        msg[0] = '\0';
        return TFL_OK;
    }
    return check_ctx_opts(opts, msg, size);
}

tfl_ctx *tfl_ctx_new(const tfl_ctx_opts *opts, tfl_status *status)
{
    tfl_ctx_opts o = opts ? *opts : (tfl_ctx_opts){0};
    if (status) *status = TFL_OK;
    char msg[TFL_MSG_SIZE];
    if (check_ctx_opts(&o, msg, sizeof msg) != TFL_OK) {
        /* no context keeps it: the application's logger hears it, tfl_ctx_opts_check says it */
        if (o.log_fn) o.log_fn(o.log_user, TFL_LOG_ERROR, msg);
        if (status) *status = TFL_INVALID_ARGUMENT;
        return NULL;
    }
    if (!o.alloc_fn) {
        o.alloc_fn = default_alloc;
        o.free_fn = default_free;
    }
    tfl_ctx *ctx = o.alloc_fn(o.alloc_user, sizeof *ctx, 64);
    if (!ctx) {
        if (status) *status = TFL_RESOURCE_EXHAUSTED;
        return NULL;
    }
    memset(ctx, 0, sizeof *ctx);
    if (o.log_placement && o.log_level < TFL_LOG_INFO) o.log_level = TFL_LOG_INFO;
    ctx->opts = o;
    ctx->num_threads = o.num_threads > 0 ? o.num_threads : default_threads();
    ctx->soft_placement = !o.strict_placement;
    ctx->log_placement = o.log_placement;
    ctx->rng_seed = o.seed ? o.seed : TFL_DEFAULT_SEED;
    tfl_status st = tfl__devices_init(ctx);
    if (st != TFL_OK) {
        tfl_ctx_free(ctx);
        if (status) *status = st;
        return NULL;
    }
    return ctx;
}

void tfl_ctx_free(tfl_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->tapes_free) ctx->tapes_free(ctx); /* tapes release what they saved */
    while (ctx->objects) ctx->objects->free(ctx->objects); /* optimizers, datasets, ... */
    tfl__objs_free(ctx);    /* the dead handle records kept for reuse */
    while (ctx->n_frames > 0) tfl_frame_pop(ctx);
    tfl__host_free(ctx, ctx->frame_items);
    tfl__host_free(ctx, ctx->frame_marks);
    if (ctx->live_tensors > 0)
        tfl__log(ctx, TFL_LOG_WARNING, "ctx_free: %llu tensor(s) still alive are freed with the "
                 "context", (unsigned long long)ctx->live_tensors);
    tfl__vars_free(ctx);    /* variable records, the registry, the collections */
    tfl__pools_free(ctx);   /* every record, and the data of tensors still alive */
    tfl__devices_free(ctx); /* gives cached device memory back */
    tfl_free_fn free_fn = ctx->opts.free_fn;
    void *user = ctx->opts.alloc_user;
    free_fn(user, ctx);
}

tfl_status tfl_ctx_status(const tfl_ctx *ctx) { return ctx ? ctx->err_code : TFL_INVALID_ARGUMENT; }

tfl_error tfl_ctx_error(const tfl_ctx *ctx)
{
    if (!ctx) return (tfl_error){TFL_INVALID_ARGUMENT, "context is NULL"};
    return (tfl_error){ctx->err_code, ctx->err_msg};
}

void tfl_ctx_clear_error(tfl_ctx *ctx)
{
    if (!ctx) return;
    ctx->err_code = TFL_OK;
    ctx->err_msg[0] = '\0';
}

int tfl_ctx_num_threads(const tfl_ctx *ctx) { return ctx ? ctx->num_threads : 1; }

tfl_status tfl_ctx_set_num_threads(tfl_ctx *ctx, int num_threads)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, num_threads >= 1, TFL_INVALID_ARGUMENT,
              "num_threads must be at least 1, got %d", num_threads);
    ctx->num_threads = num_threads;
    return TFL_OK;
}

void tfl_ctx_set_logger(tfl_ctx *ctx, tfl_log_fn fn, void *user, tfl_log_level level)
{
    if (!ctx) return;
    TFL_CHECK_RET(ctx, (unsigned)level < TFL_LOG_LEVEL_COUNT, , TFL_INVALID_ARGUMENT,
                  "ctx_set_logger: level is %d; expected TFL_LOG_ERROR (0) .. TFL_LOG_DEBUG (%d)",
                  (int)level, TFL_LOG_LEVEL_COUNT - 1);
    ctx->opts.log_fn = fn;
    ctx->opts.log_user = user;
    ctx->opts.log_level = level;
}

void tfl_ctx_set_log_placement(tfl_ctx *ctx, bool on)
{
    if (ctx) ctx->log_placement = on;
}

void tfl_ctx_set_soft_placement(tfl_ctx *ctx, bool on)
{
    if (ctx) ctx->soft_placement = on;
}

void tfl_ctx_set_deterministic(tfl_ctx *ctx, bool on)
{
    if (ctx) ctx->deterministic = on;
}

bool tfl_ctx_deterministic(const tfl_ctx *ctx)
{
    return ctx && ctx->deterministic;
}

static const char *const precision_names[TFL_PRECISION_COUNT] = {"float32", "tf32", "bfloat16",
                                                                  "float16"};

tfl_status tfl_ctx_set_precision(tfl_ctx *ctx, tfl_precision precision)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, (unsigned)precision < TFL_PRECISION_COUNT, TFL_INVALID_ARGUMENT,
              "tfl_ctx_set_precision: %d is not a tfl_precision (float32, tf32, bfloat16, "
              "float16)", (int)precision);
    ctx->precision = precision;
    return TFL_OK;
}

tfl_precision tfl_ctx_precision(const tfl_ctx *ctx)
{
    return ctx ? ctx->precision : TFL_PRECISION_FLOAT32;
}

tfl_dtype tfl_precision_half_dtype(tfl_precision precision)
{
    return precision == TFL_PRECISION_BFLOAT16  ? TFL_DTYPE_BFLOAT16
           : precision == TFL_PRECISION_FLOAT16 ? TFL_DTYPE_FLOAT16
                                                : TFL_DTYPE_INVALID;
}

const char *tfl_precision_name(tfl_precision precision)
{
    return (unsigned)precision < TFL_PRECISION_COUNT ? precision_names[precision] : "?";
}

tfl_status tfl_precision_parse(const char *name, tfl_precision *out)
{
    if (!name || !out) return TFL_INVALID_ARGUMENT;
    for (int i = 0; i < TFL_PRECISION_COUNT; i++)
        if (!strcmp(name, precision_names[i])) {
            *out = (tfl_precision)i;
            return TFL_OK;
        }
    return TFL_INVALID_ARGUMENT;
}

/* ---- allocator counters ------------------------------------------------------------------- */

tfl_status tfl_alloc_stats_get(tfl_ctx *ctx, const char *device, tfl_alloc_stats *out)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, out, TFL_INVALID_ARGUMENT, "alloc_stats_get: out is NULL");
    tfl__device *dev = device ? tfl__find_device(ctx, device) : tfl__cpu(ctx);
    TFL_CHECK(ctx, dev, TFL_NOT_FOUND, "alloc_stats: no device '%s'", device);
    *out = dev->alloc.stats;
    out->live_tensors = ctx->live_tensors;
    return TFL_OK;
}

void tfl_alloc_empty_cache(tfl_ctx *ctx)
{
    if (!ctx) return;
    for (int i = 0; i < ctx->n_devices; i++) tfl__allocator_trim(&ctx->devices[i]->alloc);
}
