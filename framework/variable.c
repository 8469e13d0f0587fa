/*
 * framework/variable.c: variables. A variable is a tensor record with
 * TFL_TENSOR_FLAG_VARIABLE and a tfl__var (name, trainable, initializer); its storage is
 * contiguous, offset 0, never a view. Writes (assign, assign_add, assign_sub, initializers)
 * go through one function, var_write: in place when the storage is the variable's alone,
 * into new storage swapped in (copy-on-write) when a snapshot shares it.
 */
#include "ops/op.h"

#include <stdio.h>

/* ---- checks ------------------------------------------------------------------------------- */

/* A name is non-empty and has no ':' (":0" is appended in reprs). */
static bool check_name(tfl_ctx *ctx, const char *what, const char *name)
{
    TFL_CHECK_RET(ctx, name[0] != '\0' && !strchr(name, ':'), false, TFL_INVALID_ARGUMENT,
                  "%s: '%s' is not a valid variable name (it must be non-empty, without ':')",
                  what, name);
    return true;
}

static bool check_variable(tfl_ctx *ctx, const char *what, const tfl_tensor *v)
{
    TFL_CHECK_RET(ctx, v->var, false, TFL_INVALID_ARGUMENT,
                  "%s: Cannot assign to a tensor that is not a variable (create one with "
                  "tfl_variable_new)", what);
    return true;
}

/* ---- writes --------------------------------------------------------------------------------- */

typedef enum { WRITE_ASSIGN, WRITE_ADD, WRITE_SUB } write_mode;

static const char *const write_op_names[] = {"AssignVariableOp", "AssignAddVariableOp",
                                             "AssignSubVariableOp"};

/* Copies (WRITE_ASSIGN) or adds/subtracts `value` (same dtype, shape and device as v) into
 * `dst`, a contiguous tensor of v's dtype and shape on v's device. Uses the device's
 * kernels directly, writing into dst, so the in-place path allocates nothing. */
/* dst (new, contiguous, on dev) = src (same shape and dtype, any device and view): dev's
 * Identity kernel when it has one for the dtype and src is there, else the device table's
 * copies (tfl__tensor_copy_to, whose copy the innermost frame owns, or copy_device). */
static tfl_status copy_to_dst(tfl_ctx *ctx, tfl__device *dev, tfl_tensor *dst,
                              const tfl_tensor *src)
{
    const tfl__kernel *k = &dev->kernels[TFL_OP_IDENTITY];
    if (tfl__tensor_device(src) == dev && k->fn && (k->dtypes >> src->dtype & 1u)) {
        const tfl_tensor *in[1] = {src};
        tfl__kcall call = {ctx, dev, TFL_OP_IDENTITY, 1, in, dst, NULL};
        return tfl__kernel_run(k, &call);
    }
    tfl_tensor *tmp = NULL;
    if (tfl__tensor_device(src) != dev || !tfl_tensor_is_contiguous(src)) {
        TFL_TRY(tfl_frame_push(ctx));
        src = tmp = tfl__tensor_copy_to(ctx, src, dev);
        if (!src) {
            tfl_frame_pop(ctx);
            return ctx->err_code;
        }
    }
    size_t bytes = (size_t)src->numel * tfl_dtype_size((tfl_dtype)src->dtype);
    tfl_status st = tfl__dev_copy_device(dev, NULL, tfl__data(dst), tfl__data(src), bytes);
    if (tmp) tfl_frame_pop(ctx);
    return st;
}

/* dst = value (ASSIGN), v + value (ADD) or v - value (SUB), in dst's memory on v's device. */
static tfl_status write_into(tfl_ctx *ctx, tfl_tensor *dst, const tfl_tensor *v,
                             const tfl_tensor *value, write_mode mode)
{
    tfl__device *dev = tfl__tensor_device(v);
    if (mode == WRITE_ASSIGN) return copy_to_dst(ctx, dev, dst, value);
    tfl__op_id op = mode == WRITE_ADD ? TFL_OP_ADD : TFL_OP_SUB;
    const tfl__kernel *k = &dev->kernels[op];
    if (k->fn && (k->dtypes >> v->dtype & 1u)) {
        const tfl_tensor *in[2] = {v, value};
        tfl__kcall call = {ctx, dev, op, 2, in, dst, NULL};
        return tfl__kernel_run(k, &call);
    }
    /* no direct kernel (float16/bfloat16 run through float32, or none on dev): compute
     * wherever placement puts it, then copy */
    tfl_tensor *r = mode == WRITE_ADD ? tfl_add(ctx, v, value) : tfl_sub(ctx, v, value);
    if (!r) return ctx->err_code;
    return copy_to_dst(ctx, dev, dst, r);
}

/*
 * The one write path of variables. Checks everything first, so an error leaves v as it
 * was; then converts the value to v's dtype and device (temporaries in a frame of their
 * own), and writes in place, or into new storage when a snapshot shares v's.
 */
static tfl_status var_write(tfl_tensor *v, const tfl_tensor *value, write_mode mode)
{
    const char *what = write_op_names[mode];
    if (!v) { /* keep it in the value's ctx, unless an earlier error (a failed chain) is kept */
        if (value) tfl__set_error(value->ctx, TFL_INVALID_ARGUMENT, "%s: the variable is NULL", what);
        return TFL_INVALID_ARGUMENT;
    }
    if (!tfl__tensor_alive(v, what)) return TFL_MISUSE;
    tfl_ctx *ctx = v->ctx;
    if (!value) {
        if (ctx->err_code == TFL_OK)
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: the value is NULL", what);
        return ctx->err_code;
    }
    if (!check_variable(ctx, what, v)) return ctx->err_code;
    TFL_CHECK(ctx, value->refs > 0, TFL_MISUSE,
              "%s: the value is a tensor already released (use after release)", what);
    TFL_CHECK(ctx, value->ctx == ctx, TFL_MISUSE, "%s: the value belongs to another context", what);
    if (!tfl__check_readable(ctx, what, value)) return ctx->err_code;
    if (mode != WRITE_ASSIGN && !tfl__check_readable(ctx, what, v)) return ctx->err_code;
    if (!tfl__same_shape(value->rank, value->shape, v->rank, v->shape)) {
        char vs[160], as[160];
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                              "Cannot assign value to variable '%s:0': Shape mismatch. The "
                              "variable shape %s, and the assigned value shape %s are "
                              "incompatible.", v->var->name, tfl__shape_str(v->rank, v->shape, vs, sizeof vs),
                              tfl__shape_str(value->rank, value->shape, as, sizeof as));
    }
    tfl_dtype vd = (tfl_dtype)v->dtype, xd = (tfl_dtype)value->dtype;
    TFL_CHECK(ctx, tfl__dtype_converts(xd, vd), TFL_INVALID_ARGUMENT,
              "Cannot assign value to variable '%s:0': a value of dtype %s does not convert to the "
              "variable's dtype %s", v->var->name, tfl_dtype_name(xd), tfl_dtype_name(vd));
    TFL_CHECK(ctx, mode == WRITE_ASSIGN || vd != TFL_DTYPE_BOOL, TFL_INVALID_ARGUMENT,
              "%s: dtype bool is not supported; expected a numeric variable", what);

    tfl__device *dev = tfl__tensor_device(v);
    TFL_TRY(tfl_frame_push(ctx));
    ctx->tape_pause++; /* writes are not differentiable: tapes record none of their steps */
    tfl_status st = TFL_OK;
    const tfl_tensor *x = value;
    if (x->dtype != vd) x = tfl_cast(ctx, x, vd);
    if (x && tfl__tensor_device(x) != dev) {
        if (ctx->log_placement)
            tfl__log(ctx, TFL_LOG_INFO, "copy the value of %s from %s to %s", what,
                     tfl_tensor_device(x), dev->name);
        x = tfl__tensor_copy_to(ctx, x, dev);
    }
    if (!x) {
        st = ctx->err_code;
    } else if (v->storage->refs == 1) {
        st = write_into(ctx, v, v, x, mode); /* in place: no allocation */
    } else {
        /* copy-on-write: a snapshot shares the storage; it keeps the old one */
        tfl_tensor *fresh = tfl__tensor_alloc(ctx, dev, vd, v->rank, v->shape);
        st = fresh ? write_into(ctx, fresh, v, x, mode) : ctx->err_code;
        if (fresh && st == TFL_OK) {
            tfl__storage *old = v->storage;
            v->storage = fresh->storage;
            fresh->storage = old;
        }
        tfl_tensor_release(fresh);
    }
    ctx->tape_pause--;
    tfl_frame_pop(ctx);
    if (st != TFL_OK) return st;
    v->flags &= (uint16_t)~TFL_TENSOR_FLAG_UNINIT;
    tfl__log_op(ctx, what, dev);
    return TFL_OK;
}

tfl_status tfl_variable_assign(tfl_tensor *v, const tfl_tensor *value)
{
    return var_write(v, value, WRITE_ASSIGN);
}

tfl_status tfl_variable_assign_add(tfl_tensor *v, const tfl_tensor *value)
{
    return var_write(v, value, WRITE_ADD);
}

tfl_status tfl_variable_assign_sub(tfl_tensor *v, const tfl_tensor *value)
{
    return var_write(v, value, WRITE_SUB);
}

/* Gives v storage of its own (a copy when a snapshot shares it), so a kernel may then write
 * into v's data in place; the value and every snapshot are unchanged. */
tfl_status tfl__variable_own(tfl_tensor *v)
{
    if (v->storage->refs == 1) return TFL_OK;
    tfl_ctx *ctx = v->ctx;
    tfl_tensor *fresh = tfl__tensor_alloc(ctx, tfl__tensor_device(v), (tfl_dtype)v->dtype,
                                          v->rank, v->shape);
    if (!fresh) return ctx->err_code;
    ctx->tape_pause++;
    tfl_status st = write_into(ctx, fresh, v, v, WRITE_ASSIGN);
    ctx->tape_pause--;
    if (st == TFL_OK) {
        tfl__storage *old = v->storage;
        v->storage = fresh->storage;
        fresh->storage = old;
    }
    tfl_tensor_release(fresh);
    return st;
}

/* ---- creation ------------------------------------------------------------------------------- */

static tfl_status run_init(tfl_tensor *v)
{
    tfl_ctx *ctx = v->ctx;
    const tfl_initializer *init = &v->var->init;
    if (init->kind == TFL_INIT_TENSOR) return var_write(v, init->tensor, WRITE_ASSIGN);
    TFL_TRY(tfl_frame_push(ctx));
    /* the value is made on the variable's device */
    tfl_status st = tfl_device_scope_push(ctx, tfl_tensor_device(v));
    tfl_tensor *value = st == TFL_OK ? tfl_initializer_value(ctx, init, (tfl_dtype)v->dtype,
                                                             v->rank, v->shape) : NULL;
    if (st == TFL_OK) tfl_device_scope_pop(ctx);
    st = value ? var_write(v, value, WRITE_ASSIGN) : ctx->err_code;
    tfl_frame_pop(ctx);
    return st;
}

/* Whether an initializer can run for dtype, checked before anything is created. */
static bool check_init(tfl_ctx *ctx, const tfl_initializer *init, tfl_dtype dtype)
{
    TFL_CHECK_RET(ctx, (unsigned)init->kind < TFL_INIT_KIND_COUNT, false, TFL_INVALID_ARGUMENT,
                  "VarHandleOp: unknown initializer kind %d", (int)init->kind);
    if (init->kind == TFL_INIT_TENSOR) {
        TFL_CHECK_RET(ctx, init->tensor, false, TFL_INVALID_ARGUMENT,
                      "VarHandleOp: the tensor initializer has no tensor");
        TFL_CHECK_RET(ctx, init->tensor->refs > 0, false, TFL_MISUSE,
                      "VarHandleOp: the initial value was already released (use after release)");
        TFL_CHECK_RET(ctx, init->tensor->ctx == ctx, false, TFL_MISUSE,
                      "VarHandleOp: the initial value belongs to another context");
        if (!tfl__check_readable(ctx, "VarHandleOp", init->tensor)) return false;
        TFL_CHECK_RET(ctx, tfl__dtype_converts((tfl_dtype)init->tensor->dtype, dtype), false,
                      TFL_INVALID_ARGUMENT, "VarHandleOp: an initial value of dtype %s does not convert "
                      "to dtype %s", tfl_dtype_name((tfl_dtype)init->tensor->dtype),
                      tfl_dtype_name(dtype));
    } else if (init->kind >= TFL_INIT_RANDOM_UNIFORM) {
        TFL_CHECK_RET(ctx, tfl_dtype_is_floating(dtype), false, TFL_INVALID_ARGUMENT,
                      "%s initializer: dtype %s is not supported; expected a floating dtype "
                      "(float16, bfloat16, float32, float64)", tfl_init_kind_name(init->kind),
                      tfl_dtype_name(dtype));
    }
    return true;
}

/* Creates the variable record, registers it, and initializes it unless deferred. */
static tfl_tensor *var_create(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                              const tfl_initializer *init, const tfl_variable_opts *opts,
                              bool in_store, const char *full_name)
{
    tfl_variable_opts o = opts ? *opts : (tfl_variable_opts){0};
    if (!tfl__check_new(ctx, "VarHandleOp", dtype, rank, shape) || !check_init(ctx, init, dtype))
        return NULL;
    const unsigned known = TFL_VAR_NOT_TRAINABLE | TFL_VAR_DEFERRED;
    TFL_CHECK_RET(ctx, !(o.flags & ~known), NULL, TFL_INVALID_ARGUMENT,
                  "VarHandleOp: opts.flags is 0x%x; unknown bits 0x%x (expected TFL_VAR_* flags)",
                  o.flags, o.flags & ~known);
    TFL_CHECK_RET(ctx, o.n_collections >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "VarHandleOp: opts.n_collections is %d; expected >= 0", o.n_collections);
    for (int i = 0; i < o.n_collections; i++)
        TFL_CHECK_RET(ctx, o.collections && o.collections[i] && o.collections[i][0], NULL,
                      TFL_INVALID_ARGUMENT, "VarHandleOp: collection %d has no name", i);
    tfl__device *dev = tfl__resolve_device(ctx, "VarHandleOp", o.device);
    if (!dev) return NULL;

    tfl__var *var = tfl__calloc(ctx, sizeof *var);
    if (!var) return NULL;
    var->name = tfl__strdup(ctx, full_name);
    tfl_tensor *v = var->name ? tfl__tensor_alloc(ctx, dev, dtype, rank, shape) : NULL;
    if (!v) {
        tfl__host_free(ctx, var->name);
        tfl__host_free(ctx, var);
        return NULL;
    }
    v->var = var; /* from here on, tfl_tensor_release(v) undoes everything */
    v->flags = TFL_TENSOR_FLAG_VARIABLE | TFL_TENSOR_FLAG_UNINIT;
    var->trainable = !(o.flags & TFL_VAR_NOT_TRAINABLE);
    var->in_store = in_store;
    var->init = *init;
    var->has_init = true;
    if (init->kind == TFL_INIT_TENSOR) tfl_tensor_retain((tfl_tensor *)init->tensor);
    tfl__log_op(ctx, "VarHandleOp", dev);

    bool ok = tfl__vars_register(ctx, v) == TFL_OK;
    if (ok && o.n_collections == 0) ok = tfl_collection_add(ctx, TFL_GLOBAL_VARIABLES, v) == TFL_OK;
    for (int i = 0; ok && i < o.n_collections; i++)
        ok = tfl_collection_add(ctx, o.collections[i], v) == TFL_OK;
    if (ok && var->trainable) ok = tfl_collection_add(ctx, TFL_TRAINABLE_VARIABLES, v) == TFL_OK;
    if (ok && !(o.flags & TFL_VAR_DEFERRED)) {
        ok = run_init(v) == TFL_OK;
        if (ok && init->kind == TFL_INIT_TENSOR) { /* nothing to re-run: drop the reference */
            var->has_init = false;
            tfl_tensor_release((tfl_tensor *)init->tensor);
            var->init.tensor = NULL;
        }
    }
    if (!ok) {
        tfl_tensor_release(v);
        return NULL;
    }
    return v;
}

/* "<scope>/<name>" into buf; false (error kept) when too long or the name is bad. */
static bool full_name(tfl_ctx *ctx, const char *what, const char *name, char *buf, size_t size)
{
    if (!check_name(ctx, what, name)) return false;
    int n = snprintf(buf, size, "%s%s%s", ctx->scope, ctx->scope[0] ? "/" : "", name);
    TFL_CHECK_RET(ctx, n >= 0 && (size_t)n < size, false, TFL_INVALID_ARGUMENT,
                  "%s: the name '%s' is too long (%d bytes with its scope)", what, name, n);
    return true;
}

tfl_tensor *tfl_variable_new(tfl_ctx *ctx, const tfl_tensor *initial, const tfl_variable_opts *opts)
{
    if (!ctx) return NULL;
    if (!initial) {
        if (ctx->err_code == TFL_OK)
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "VarHandleOp: the initial value is NULL");
        return NULL;
    }
    char name[TFL_SCOPE_BYTES + 256];
    if (!full_name(ctx, "VarHandleOp", opts && opts->name ? opts->name : "Variable", name, sizeof name))
        return NULL;
    tfl_dtype dtype = opts && opts->dtype ? opts->dtype : (tfl_dtype)initial->dtype;
    tfl_initializer init = tfl_init_tensor(initial);
    return var_create(ctx, dtype, initial->rank, initial->shape, &init, opts, false, name);
}

tfl_tensor *tfl_variable_new_init(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                                  const tfl_initializer *init, const tfl_variable_opts *opts)
{
    if (!ctx) return NULL;
    char name[TFL_SCOPE_BYTES + 256];
    if (!full_name(ctx, "VarHandleOp", opts && opts->name ? opts->name : "Variable", name, sizeof name))
        return NULL;
    tfl_initializer def = tfl_init_glorot_uniform(0);
    return var_create(ctx, dtype ? dtype : TFL_DTYPE_FLOAT32, rank, shape, init ? init : &def,
                      opts, false, name);
}

tfl_tensor *tfl__variable_new_named(tfl_ctx *ctx, const char *name, tfl_dtype dtype, int rank,
                                    const int64_t *shape, const tfl_initializer *init,
                                    const tfl_variable_opts *opts)
{
    if (!check_name(ctx, "VarHandleOp", name)) return NULL;
    TFL_CHECK_RET(ctx, strlen(name) < TFL_SCOPE_BYTES + 256, NULL, TFL_INVALID_ARGUMENT,
                  "VarHandleOp: the name '%.64s...' is too long", name);
    return var_create(ctx, dtype, rank, shape, init, opts, false, name);
}

tfl_tensor *tfl_get_variable(tfl_ctx *ctx, const char *name, int rank, const int64_t *shape,
                             tfl_dtype dtype, const tfl_initializer *init,
                             const tfl_variable_opts *opts)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, name, NULL, TFL_INVALID_ARGUMENT, "get_variable: the name is NULL");
    char full[TFL_SCOPE_BYTES + 256];
    if (!full_name(ctx, "get_variable", name, full, sizeof full)) return NULL;
    const tfl_tensor *tinit = init && init->kind == TFL_INIT_TENSOR ? init->tensor : NULL;
    TFL_CHECK_RET(ctx, rank >= -1 && rank <= TFL_MAX_RANK, NULL, TFL_INVALID_ARGUMENT,
                  "get_variable: rank %d is out of range (-1..%d)", rank, TFL_MAX_RANK);
    char a[160], b[160];
    tfl_reuse reuse = TFL_REUSE_INHERIT;
    for (int i = ctx->n_name_scopes - 1; i >= 0 && reuse == TFL_REUSE_INHERIT; i--)
        reuse = (tfl_reuse)ctx->scope_reuse[i];

    tfl_tensor *found = tfl__store_find(ctx, full);
    if (found) {
        TFL_CHECK_RET(ctx, reuse != TFL_REUSE_INHERIT, NULL, TFL_ALREADY_EXISTS,
                      "Variable %s already exists, disallowed. Did you mean to set "
                      "reuse=TFL_REUSE_TRUE or reuse=TFL_REUSE_AUTO in its scope "
                      "(tfl_name_scope_push_reuse)?", full);
        TFL_CHECK_RET(ctx, rank < 0 || tfl__same_shape(rank, shape, found->rank, found->shape), NULL,
                      TFL_INVALID_ARGUMENT, "Trying to share variable %s, but specified shape "
                      "%s and found shape %s.", full,
                      shape || rank == 0 ? tfl__shape_str(rank, shape, a, sizeof a) : "(null)",
                      tfl__shape_str(found->rank, found->shape, b, sizeof b));
        TFL_CHECK_RET(ctx, !dtype || dtype == found->dtype, NULL, TFL_INVALID_ARGUMENT,
                      "Trying to share variable %s, but specified dtype %s and found dtype %s.",
                      full, tfl_dtype_name(dtype), tfl_dtype_name((tfl_dtype)found->dtype));
        return tfl_tensor_retain(found);
    }
    TFL_CHECK_RET(ctx, reuse != TFL_REUSE_TRUE, NULL, TFL_NOT_FOUND,
                  "Variable %s does not exist, or was not created with tfl_get_variable(). Did "
                  "you mean to set reuse=TFL_REUSE_AUTO in its scope?", full);
    if (tinit) {
        TFL_CHECK_RET(ctx, rank < 0 || tfl__same_shape(rank, shape, tinit->rank, tinit->shape), NULL,
                      TFL_INVALID_ARGUMENT, "If initializer is a constant, do not specify shape. "
                      "(get_variable %s: specified shape %s, the initializer's shape is %s)",
                      full, shape || rank == 0 ? tfl__shape_str(rank, shape, a, sizeof a) : "(null)",
                      tfl__shape_str(tinit->rank, tinit->shape, b, sizeof b));
        rank = tinit->rank;
        shape = tinit->shape;
        if (!dtype) dtype = (tfl_dtype)tinit->dtype;
    }
    TFL_CHECK_RET(ctx, rank >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "get_variable %s: rank -1 (take the shape from the initializer) needs a tensor "
                  "initializer", full);
    tfl_initializer def = tfl_init_glorot_uniform(0);
    return var_create(ctx, dtype ? dtype : TFL_DTYPE_FLOAT32, rank, shape, init ? init : &def,
                      opts, true, full);
}

/* ---- properties and reads --------------------------------------------------------------------- */

/* A released tensor records MISUSE (tfl__tensor_alive) and is no variable. */
bool tfl_tensor_is_variable(const tfl_tensor *t)
{
    return t && tfl__tensor_alive(t, "tfl_tensor_is_variable") && t->var;
}
const char *tfl_variable_name(const tfl_tensor *v)
{
    return v && tfl__tensor_alive(v, "tfl_variable_name") && v->var ? v->var->name : NULL;
}
bool tfl_variable_trainable(const tfl_tensor *v)
{
    return v && tfl__tensor_alive(v, "tfl_variable_trainable") && v->var && v->var->trainable;
}

bool tfl_variable_is_initialized(const tfl_tensor *v)
{
    return v && tfl__tensor_alive(v, "tfl_variable_is_initialized") && v->var &&
           !(v->flags & TFL_TENSOR_FLAG_UNINIT);
}

tfl_tensor *tfl_variable_read(const tfl_tensor *v)
{
    if (!v || !tfl__tensor_alive(v, "ReadVariableOp")) return NULL;
    tfl_ctx *ctx = v->ctx;
    TFL_CHECK_RET(ctx, v->var, NULL, TFL_INVALID_ARGUMENT,
                  "ReadVariableOp: the tensor is not a variable");
    if (!tfl__check_readable(ctx, "ReadVariableOp", v)) return NULL;
    tfl_tensor *t = tfl__tensor_view(ctx, v, v->rank, v->shape, v->strides, v->offset);
    if (!t) return NULL;
    tfl__log_op(ctx, "ReadVariableOp", tfl__tensor_device(v));
    tfl__record(ctx, TFL_OP_IDENTITY, 1, &v, t, NULL); /* the gradient flows to v */
    return t;
}

/* ---- initialization ------------------------------------------------------------------------- */

tfl_status tfl_variable_initialize(tfl_tensor *v)
{
    if (!v) return TFL_INVALID_ARGUMENT;
    if (!tfl__tensor_alive(v, "variable_initialize")) return TFL_MISUSE;
    TFL_CHECK(v->ctx, v->var, TFL_INVALID_ARGUMENT,
              "variable_initialize: the tensor is not a variable");
    return v->var->has_init ? run_init(v) : TFL_OK;
}

/* The variables of a collection (NULL: all live ones), a borrowed array, and its count. */
static tfl_tensor **members(tfl_ctx *ctx, const char *collection, size_t *n)
{
    if (!collection) {
        *n = ctx->n_vars;
        return ctx->vars;
    }
    for (size_t i = 0; i < ctx->n_collections; i++) {
        if (strcmp(ctx->collections[i].name, collection) == 0) {
            *n = ctx->collections[i].n;
            return ctx->collections[i].items;
        }
    }
    *n = 0;
    return NULL;
}

tfl_status tfl_variables_initialize(tfl_ctx *ctx, const char *collection, unsigned flags)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, (flags & ~(unsigned)TFL_INIT_ONLY_UNINITIALIZED) == 0, TFL_INVALID_ARGUMENT,
              "tfl_variables_initialize: flags 0x%x has unknown bits 0x%x (expected "
              "TFL_INIT_ONLY_UNINITIALIZED or 0)",
              flags, flags & ~(unsigned)TFL_INIT_ONLY_UNINITIALIZED);
    size_t n;
    tfl_tensor **vars = members(ctx, collection, &n);
    /* initializing never adds or removes variables, so the array stays valid */
    for (size_t i = 0; i < n; i++) {
        if ((flags & TFL_INIT_ONLY_UNINITIALIZED) && !(vars[i]->flags & TFL_TENSOR_FLAG_UNINIT))
            continue;
        TFL_TRY(tfl_variable_initialize(vars[i]));
    }
    return TFL_OK;
}

int64_t tfl_report_uninitialized(tfl_ctx *ctx, const char *collection, const char **names,
                                 int64_t cap)
{
    if (!ctx) return -1;
    size_t n;
    tfl_tensor **vars = members(ctx, collection, &n);
    int64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(vars[i]->flags & TFL_TENSOR_FLAG_UNINIT)) continue;
        if (names && count < cap) names[count] = vars[i]->var->name;
        count++;
    }
    return count;
}
