/*
 * framework/base.c: the bottom of the framework's core, which every other file of it (and
 * every module) calls and which calls none of them: keeping the first error, logging through
 * the application's callback, and host memory through the context's hooks. It reads only the
 * context's options and error fields. Declared in core_api/core_api.h.
 */
#include "internal.h"

#include <stdio.h>

/* ---- host memory --------------------------------------------------------------------- */

void *tfl__host_alloc(tfl_ctx *ctx, size_t bytes, size_t align)
{
    return ctx->opts.alloc_fn(ctx->opts.alloc_user, bytes, align);
}

void tfl__host_free(tfl_ctx *ctx, void *ptr)
{
    if (ptr) ctx->opts.free_fn(ctx->opts.alloc_user, ptr);
}

void *tfl__calloc(tfl_ctx *ctx, size_t bytes)
{
    void *p = tfl__host_alloc(ctx, bytes, 16);
    if (!p) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "out of host memory (%zu bytes)", bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

/* Grows an array of host memory through the hooks (no realloc hook: copy). */
void *tfl__grow(tfl_ctx *ctx, void *old, size_t old_bytes, size_t new_bytes)
{
    void *p = tfl__host_alloc(ctx, new_bytes, 16);
    if (!p) return NULL;
    if (old) {
        memcpy(p, old, old_bytes);
        tfl__host_free(ctx, old);
    }
    return p;
}

char *tfl__strdup(tfl_ctx *ctx, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tfl__host_alloc(ctx, n, 16);
    if (!p) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "out of host memory (%zu bytes)", n);
        return NULL;
    }
    memcpy(p, s, n);
    return p;
}

/* ---- errors and logging ---------------------------------------------------------------- */

/* ---- errors and logging ---------------------------------------------------------------- */

tfl_status tfl__set_errorv(tfl_ctx *ctx, tfl_status code, const char *fmt, va_list ap)
{
    if (ctx->err_code != TFL_OK) return code;
    ctx->err_code = code;
    vsnprintf(ctx->err_msg, sizeof ctx->err_msg, fmt, ap);
    if (tfl__log_enabled(ctx, TFL_LOG_ERROR))
        ctx->opts.log_fn(ctx->opts.log_user, TFL_LOG_ERROR, ctx->err_msg);
    return code;
}

tfl_status tfl__set_error(tfl_ctx *ctx, tfl_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tfl__set_errorv(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

void tfl__logv(tfl_ctx *ctx, tfl_log_level level, const char *fmt, va_list ap)
{
    if (!tfl__log_enabled(ctx, level)) return;
    char line[TFL_MSG_SIZE];
    vsnprintf(line, sizeof line, fmt, ap);
    ctx->opts.log_fn(ctx->opts.log_user, level, line);
}

void tfl__log(tfl_ctx *ctx, tfl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tfl__logv(ctx, level, fmt, ap);
    va_end(ap);
}
