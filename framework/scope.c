/*
 * framework/scope.c: name scopes. The context keeps the prefix ("model/conv1") and, per
 * level, its length before the push and the reuse mode given (TensorFlow 1's variable_scope:
 * the innermost mode that is not INHERIT decides, see tfl_get_variable in variable.c).
 */
#include "internal.h"

tfl_status tfl_name_scope_push_reuse(tfl_ctx *ctx, const char *name, tfl_reuse reuse)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, name && name[0] && !strchr(name, ':'), TFL_INVALID_ARGUMENT,
              "name_scope_push: '%s' is not a valid scope name (it must be non-empty, without ':')",
              name ? name : "(null)");
    TFL_CHECK(ctx, (unsigned)reuse <= TFL_REUSE_AUTO, TFL_INVALID_ARGUMENT,
              "name_scope_push: reuse %d is not a tfl_reuse value", (int)reuse);
    TFL_CHECK(ctx, ctx->n_name_scopes < TFL_MAX_NAME_SCOPES, TFL_RESOURCE_EXHAUSTED,
              "name_scope_push: more than %d nested scopes", TFL_MAX_NAME_SCOPES);
    size_t len = strlen(ctx->scope);
    size_t add = strlen(name) + (len ? 1 : 0);
    TFL_CHECK(ctx, len + add < TFL_SCOPE_BYTES, TFL_RESOURCE_EXHAUSTED,
              "name_scope_push: the scope '%s/%s' is longer than %d bytes", ctx->scope, name,
              TFL_SCOPE_BYTES - 1);
    ctx->scope_len[ctx->n_name_scopes] = (uint16_t)len;
    ctx->scope_reuse[ctx->n_name_scopes] = (uint8_t)reuse;
    ctx->n_name_scopes++;
    if (len) ctx->scope[len++] = '/';
    memcpy(ctx->scope + len, name, strlen(name) + 1);
    return TFL_OK;
}

tfl_status tfl_name_scope_push(tfl_ctx *ctx, const char *name)
{
    return tfl_name_scope_push_reuse(ctx, name, TFL_REUSE_INHERIT);
}

tfl_status tfl_name_scope_pop(tfl_ctx *ctx)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, ctx->n_name_scopes > 0, TFL_MISUSE, "name_scope_pop: no name scope is open");
    ctx->n_name_scopes--;
    ctx->scope[ctx->scope_len[ctx->n_name_scopes]] = '\0';
    return TFL_OK;
}

tfl_status tfl_name_scope_reuse_variables(tfl_ctx *ctx)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, ctx->n_name_scopes > 0, TFL_MISUSE,
              "name_scope_reuse_variables: no name scope is open");
    ctx->scope_reuse[ctx->n_name_scopes - 1] = TFL_REUSE_TRUE;
    return TFL_OK;
}

const char *tfl_name_scope(const tfl_ctx *ctx) { return ctx ? ctx->scope : ""; }
