/*
 * framework/collections.c: the context's registry of live variables and its named
 * collections. Both hold weak references: a variable leaves them when its last reference
 * is released (tfl__var_destroy), so neither keeps anything alive.
 */
#include "internal.h"

/* Appends t to a growable array of tensor pointers. */
static tfl_status push_item(tfl_ctx *ctx, tfl_tensor ***items, size_t *n, size_t *cap,
                            tfl_tensor *t)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        tfl_tensor **p = tfl__grow(ctx, *items, sizeof(tfl_tensor *) * *cap, sizeof(tfl_tensor *) * c);
        TFL_CHECK(ctx, p, TFL_RESOURCE_EXHAUSTED, "collections: out of host memory");
        *items = p;
        *cap = c;
    }
    (*items)[(*n)++] = t;
    return TFL_OK;
}

/* Removes every occurrence of t, keeping the order of the rest. */
static void remove_item(tfl_tensor **items, size_t *n, const tfl_tensor *t)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (items[i] != t) items[k++] = items[i];
    *n = k;
}

tfl_status tfl__vars_register(tfl_ctx *ctx, tfl_tensor *v)
{
    return push_item(ctx, &ctx->vars, &ctx->n_vars, &ctx->cap_vars, v);
}

void tfl__vars_forget(tfl_ctx *ctx, tfl_tensor *v)
{
    remove_item(ctx->vars, &ctx->n_vars, v);
    for (size_t i = 0; i < ctx->n_collections; i++)
        remove_item(ctx->collections[i].items, &ctx->collections[i].n, v);
}

static void var_free(tfl_ctx *ctx, tfl__var *var)
{
    tfl__host_free(ctx, var->name);
    tfl__host_free(ctx, var);
}

tfl_tensor *tfl__var_destroy(tfl_tensor *v)
{
    tfl_ctx *ctx = v->ctx;
    tfl__var *var = v->var;
    tfl__vars_forget(ctx, v);
    v->var = NULL;
    v->flags = 0;
    bool kept = var->has_init && var->init.kind == TFL_INIT_TENSOR;
    tfl_tensor *init = kept ? (tfl_tensor *)var->init.tensor : NULL;
    var_free(ctx, var);
    return init;
}

void tfl__vars_free(tfl_ctx *ctx)
{
    /* the records themselves go with the pools; only host memory is ours to free here */
    for (size_t i = 0; i < ctx->n_vars; i++) {
        var_free(ctx, ctx->vars[i]->var);
        ctx->vars[i]->var = NULL;
    }
    for (size_t i = 0; i < ctx->n_collections; i++) {
        tfl__host_free(ctx, ctx->collections[i].name);
        tfl__host_free(ctx, ctx->collections[i].items);
    }
    tfl__host_free(ctx, ctx->collections);
    tfl__host_free(ctx, ctx->vars);
    ctx->collections = NULL;
    ctx->vars = NULL;
    ctx->n_vars = ctx->cap_vars = ctx->n_collections = ctx->cap_collections = 0;
}

tfl_tensor *tfl__store_find(tfl_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->n_vars; i++)
        if (ctx->vars[i]->var->in_store && strcmp(ctx->vars[i]->var->name, name) == 0)
            return ctx->vars[i];
    return NULL;
}

/* ---- named collections -------------------------------------------------------------------- */

static tfl__collection *find_collection(tfl_ctx *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->n_collections; i++)
        if (strcmp(ctx->collections[i].name, name) == 0) return &ctx->collections[i];
    return NULL;
}

tfl_status tfl_collection_add(tfl_ctx *ctx, const char *collection, tfl_tensor *v)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, collection && collection[0], TFL_INVALID_ARGUMENT,
              "collection_add: the collection name is NULL or empty");
    TFL_CHECK(ctx, v, TFL_INVALID_ARGUMENT, "collection_add: the variable is NULL");
    TFL_CHECK(ctx, v->refs > 0, TFL_MISUSE,
              "collection_add: the variable was already released (use after release)");
    TFL_CHECK(ctx, v->ctx == ctx, TFL_MISUSE,
              "collection_add: the variable belongs to another context");
    TFL_CHECK(ctx, v->var, TFL_INVALID_ARGUMENT,
              "collection_add: the tensor is not a variable (collections hold variables)");
    tfl__collection *c = find_collection(ctx, collection);
    if (!c) {
        if (ctx->n_collections == ctx->cap_collections) {
            size_t cap = ctx->cap_collections ? ctx->cap_collections * 2 : 8;
            tfl__collection *p = tfl__grow(ctx, ctx->collections,
                                           sizeof(tfl__collection) * ctx->cap_collections,
                                           sizeof(tfl__collection) * cap);
            TFL_CHECK(ctx, p, TFL_RESOURCE_EXHAUSTED, "collection_add: out of host memory");
            ctx->collections = p;
            ctx->cap_collections = cap;
        }
        char *name = tfl__strdup(ctx, collection);
        if (!name) return ctx->err_code;
        c = &ctx->collections[ctx->n_collections++];
        *c = (tfl__collection){name, NULL, 0, 0};
    }
    return push_item(ctx, &c->items, &c->n, &c->cap, v);
}

int64_t tfl_collection_get(tfl_ctx *ctx, const char *collection, tfl_tensor **out, int64_t cap)
{
    if (!ctx || !collection) return -1;
    const tfl__collection *c = find_collection(ctx, collection);
    if (!c) return 0;
    for (size_t i = 0; out && (int64_t)i < cap && i < c->n; i++) out[i] = c->items[i];
    return (int64_t)c->n;
}
