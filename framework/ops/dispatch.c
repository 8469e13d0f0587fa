/*
 * framework/ops/dispatch.c: the op definition table (from op_list.h), input checks with
 * TensorFlow-style messages, and tfl__op_run, the one path every op with a kernel takes:
 * place, bring inputs to the device, allocate, run, log.
 */
#include "op.h"

const tfl__op_def tfl__op_defs[TFL_OP_COUNT] = {
#define TFL_X_(id, nm, ar, dt, fl) [TFL_OP_##id] = {.name = nm, .arity = ar, .dtypes = dt, .flags = fl},
    TFL_OP_LIST(TFL_X_)
#undef TFL_X_
};

const char *tfl__op_name(tfl__op_id op)
{
    return (unsigned)op < TFL_OP_COUNT ? tfl__op_defs[op].name : "(unknown op)";
}

bool tfl__check_inputs(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor *const *in)
{
    for (int i = 0; i < n; i++) {
        if (TFL_UNLIKELY(!in[i])) {
            if (ctx->err_code == TFL_OK)
                tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: input %d is NULL",
                               tfl__op_defs[op].name, i);
            return false;
        }
        TFL_CHECK_RET(ctx, in[i]->refs > 0, false, TFL_MISUSE,
                      "%s: input %d is a tensor already released (use after release)",
                      tfl__op_defs[op].name, i);
        TFL_CHECK_RET(ctx, in[i]->ctx == ctx, false, TFL_MISUSE,
                      "%s: input %d belongs to another context", tfl__op_defs[op].name, i);
        if (TFL_UNLIKELY(in[i]->flags & TFL_TENSOR_FLAG_UNINIT) &&
            !tfl__check_readable(ctx, tfl__op_defs[op].name, in[i]))
            return false;
    }
    return true;
}

bool tfl__check_dtype(tfl_ctx *ctx, tfl__op_id op, tfl_dtype dtype)
{
    uint32_t ok = tfl__op_defs[op].dtypes;
    if (TFL_LIKELY(ok >> dtype & 1u)) return true;
    char list[160];
    tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: dtype %s is not supported; expected one of %s",
                   tfl__op_defs[op].name, tfl_dtype_name(dtype), tfl__dtype_list(ok, list, sizeof list));
    return false;
}

bool tfl__check_same_dtype(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *a, const tfl_tensor *b)
{
    TFL_CHECK_RET(ctx, a->dtype == b->dtype, false, TFL_INVALID_ARGUMENT,
                  "%s: dtypes differ: a is %s, b is %s (tapeflow does not promote; use tfl_cast)",
                  tfl__op_defs[op].name, tfl_dtype_name((tfl_dtype)a->dtype),
                  tfl_dtype_name((tfl_dtype)b->dtype));
    return true;
}

/* A device whose arithmetic the mixed policies change: any but the CPU's. */
static bool computes_half(const tfl_tensor *t)
{
    return strcmp(tfl__tensor_device(t)->ops->type_name, "CPU") != 0;
}

bool tfl__autocast_slow(tfl_ctx *ctx, tfl__op_id op, int n, const tfl_tensor **in)
{
    tfl_dtype half = tfl_precision_half_dtype(ctx->precision);
    unsigned flags = tfl__op_defs[op].flags;
    bool any_half = false, on_device = false;
    for (int i = 0; i < n; i++) {
        if (!in[i]) continue; /* an optional input left out */
        any_half |= in[i]->dtype == half;
        on_device |= computes_half(in[i]);
    }
    if (!on_device) return true;
    tfl_dtype from = TFL_DTYPE_FLOAT32, to = half; /* AMP_LOW, and a 16-bit input's partners */
    if (flags & TFL_OPF_AMP_F32) {
        from = half;
        to = TFL_DTYPE_FLOAT32;
    } else if (!(flags & TFL_OPF_AMP_LOW) && !any_half) {
        return true;
    }
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->dtype == from && !(in[i] = tfl_cast(ctx, in[i], to))) return false;
    return true;
}

/* Allocates the output and runs the device's kernel on inputs already in place. *declined
 * (NULL: not allowed) is set when the kernel declined a 16-bit call (TFL__KERNEL_DECLINED). */
static tfl_tensor *run_kernel(tfl_ctx *ctx, tfl__device *dev, tfl__op_id op, int n_in,
                              const tfl_tensor *const *in, tfl_dtype out_dtype, int out_rank,
                              const int64_t *out_shape, const void *attrs, bool *declined)
{
    tfl_tensor *out = tfl__tensor_alloc(ctx, dev, out_dtype, out_rank, out_shape);
    if (!out) return NULL;
    tfl__kcall call = {ctx, dev, op, n_in, in, out, attrs};
    tfl_status st = tfl__kernel_run(&dev->kernels[op], &call);
    if (st != TFL_OK) {
        tfl_tensor_release(out);
        if (st == TFL__KERNEL_DECLINED && declined && ctx->err_code == TFL_OK)
            *declined = true;
        else if (st == TFL__KERNEL_DECLINED)
            tfl__set_error(ctx, TFL_INTERNAL, "%s: the kernel of %s declined a call it must run",
                           tfl__op_defs[op].name, dev->name);
        return NULL;
    }
    tfl__log_placement(ctx, op, dev);
    return tfl__frame_adopt(ctx, out);
}

/*
 * The slow path: some input lives on another device, or float16/bfloat16 runs through the
 * float32 kernel. Temporaries live in a frame of their own; the result is handed on.
 * *declined as run_kernel's (a 16-bit call run as it is, !half, that the kernel declined).
 */
static tfl_tensor *run_converted(tfl_ctx *ctx, tfl__device *dev, tfl__op_id op, tfl_dtype key,
                                 int n_in, const tfl_tensor *const *in, tfl_dtype out_dtype,
                                 int out_rank, const int64_t *out_shape, const void *attrs,
                                 bool half, bool *declined)
{
    enum { MAX_IN = 64 };
    const tfl_tensor *moved[MAX_IN];
    TFL_CHECK_RET(ctx, n_in <= MAX_IN, NULL, TFL_INVALID_ARGUMENT, "%s: more than %d inputs",
                  tfl__op_defs[op].name, MAX_IN);
    if (tfl_frame_push(ctx) != TFL_OK) return NULL;
    ctx->tape_pause++; /* the copies and casts are steps of this one op */
    tfl_tensor *out = NULL;
    bool ok = true;
    for (int i = 0; i < n_in && ok; i++) {
        const tfl_tensor *t = in[i];
        if (tfl__tensor_device(t) != dev) {
            if (ctx->log_placement)
                tfl__log(ctx, TFL_LOG_INFO, "copy input %d of %s from %s to %s", i,
                         tfl__op_defs[op].name, tfl_tensor_device(t), dev->name);
            t = tfl__tensor_copy_to(ctx, t, dev);
        }
        if (t && half && t->dtype == key) t = tfl_cast(ctx, t, TFL_DTYPE_FLOAT32);
        moved[i] = t;
        ok = t != NULL;
    }
    if (ok) {
        tfl_dtype run_dtype = half && out_dtype == key ? TFL_DTYPE_FLOAT32 : out_dtype;
        out = run_kernel(ctx, dev, op, n_in, moved, run_dtype, out_rank, out_shape, attrs,
                         half ? NULL : declined);
        if (out && run_dtype != out_dtype) out = tfl_cast(ctx, out, out_dtype);
    }
    ctx->tape_pause--;
    tfl_keep(out);
    tfl_frame_pop(ctx);
    return out ? tfl__frame_adopt(ctx, out) : NULL;
}

tfl_tensor *tfl__op_run(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key, int n_in,
                        const tfl_tensor *const *in, tfl_dtype out_dtype, int out_rank,
                        const int64_t *out_shape, const void *attrs)
{
    /* the output's shape, checked under the op's name before anything is placed or copied
     * (tfl__tensor_alloc checks again: it is the path every tensor takes) */
    if (!tfl__check_new(ctx, tfl__op_defs[op].name, out_dtype, out_rank, out_shape)) return NULL;
    tfl__device *dev = tfl__place_op(ctx, op, key);
    if (!dev) return NULL;
    bool half = !(dev->kernels[op].dtypes >> key & 1u);
    bool moved = false;
    for (int i = 0; i < n_in; i++) moved |= tfl__tensor_device(in[i]) != dev;
    tfl_tensor *out;
    bool declined = false, *may_decline = (TFL_MASK_HALF >> key & 1u) ? &declined : NULL;
    if (TFL_UNLIKELY(half || moved))
        out = run_converted(ctx, dev, op, key, n_in, in, out_dtype, out_rank, out_shape, attrs,
                            half, may_decline);
    else
        out = run_kernel(ctx, dev, op, n_in, in, out_dtype, out_rank, out_shape, attrs,
                         may_decline);
    if (TFL_UNLIKELY(declined)) /* a 16-bit call the kernel has no path for: through float32 */
        out = run_converted(ctx, dev, op, key, n_in, in, out_dtype, out_rank, out_shape, attrs,
                            true, NULL);
    tfl__record(ctx, op, n_in, in, out, attrs);
    return out;
}

int tfl_op_count(void) { return TFL_OP_COUNT; }

const char *tfl_op_name(int op)
{
    return op >= 0 && op < TFL_OP_COUNT ? tfl__op_defs[op].name : NULL;
}

/* The size of each op's attribute struct (core_api/op_api.h), for the recorded steps, which
 * keep a copy of every call's attributes (trace.c). 0: the op takes none. */
#define TFL_EW_SIZE_U(id) [TFL_OP_##id] = sizeof(tfl__scalar_attrs),
#define TFL_EW_SIZE_UA TFL_EW_SIZE_U
#define TFL_EW_SIZE_B TFL_EW_SIZE_U
#define TFL_EW_SIZE_D(id) TFL_EW_SIZE_U(id) TFL_EW_SIZE_U(id##_GRAD)
#define TFL_EW_SIZE_DA TFL_EW_SIZE_D
#define TFL_EW_SIZE_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) TFL_EW_SIZE_##kind(id)
static const unsigned short attrs_sizes[TFL_OP_COUNT] = {
    TFL_EW_LIST(TFL_EW_SIZE_, unused) /* NULL or the UA/DA lines' scalar */
    [TFL_OP_SUM] = sizeof(tfl__reduce_attrs),
    [TFL_OP_MEAN] = sizeof(tfl__reduce_attrs),
    [TFL_OP_MAX] = sizeof(tfl__reduce_attrs),
    [TFL_OP_MIN] = sizeof(tfl__reduce_attrs),
    [TFL_OP_ARGMAX] = sizeof(tfl__axis_attrs),
    [TFL_OP_ARGMIN] = sizeof(tfl__axis_attrs),
    [TFL_OP_SOFTMAX] = sizeof(tfl__axis_attrs),
    [TFL_OP_LOG_SOFTMAX] = sizeof(tfl__axis_attrs),
    [TFL_OP_CONCAT] = sizeof(tfl__axis_attrs),
    [TFL_OP_GATHER] = sizeof(tfl__axis_attrs),
    [TFL_OP_SOFTMAX_XENT] = sizeof(tfl__axis_attrs),
    [TFL_OP_MATMUL] = sizeof(tfl__matmul_attrs),
    [TFL_OP_FUSED_MATMUL] = sizeof(tfl__matmul_attrs),
    [TFL_OP_TRANSPOSE] = sizeof(tfl__transpose_attrs),
    [TFL_OP_SLICE] = sizeof(tfl__slice_attrs),
    [TFL_OP_ONE_HOT] = sizeof(tfl__one_hot_attrs),
    [TFL_OP_PAD] = sizeof(tfl__pad_attrs),
    [TFL_OP_SEGMENT_SUM] = sizeof(tfl__segment_attrs),
    [TFL_OP_BATCH_NORM] = sizeof(tfl__batch_norm_attrs),
    [TFL_OP_LAYER_NORM] = sizeof(tfl__layer_norm_attrs),
    [TFL_OP_BATCH_NORM_TRAINING] = sizeof(tfl__batch_norm_attrs),
    [TFL_OP_BATCH_NORM_TRAINING_GRAD] = sizeof(tfl__batch_norm_attrs),
    [TFL_OP_BATCH_NORM_PARAM_GRAD] = sizeof(tfl__batch_norm_attrs),
    [TFL_OP_LAYER_NORM_GRAD] = sizeof(tfl__layer_norm_attrs),
    [TFL_OP_ATTENTION_SOFTMAX] = sizeof(tfl__softmax_attrs),
    [TFL_OP_SOFTMAX_GRAD] = sizeof(tfl__softmax_attrs),
    [TFL_OP_LAYER_NORM_PARAM_GRAD] = sizeof(tfl__layer_norm_attrs),
    [TFL_OP_DROPOUT] = sizeof(tfl__dropout_attrs),
    [TFL_OP_CONV2D] = sizeof(tfl__window_attrs),
    [TFL_OP_CONV2D_BACKPROP_INPUT] = sizeof(tfl__window_attrs),
    [TFL_OP_CONV2D_BACKPROP_FILTER] = sizeof(tfl__window_attrs),
    [TFL_OP_MAX_POOL] = sizeof(tfl__window_attrs),
    [TFL_OP_MAX_POOL_GRAD] = sizeof(tfl__window_attrs),
    [TFL_OP_MAX_POOL_GRAD_GRAD] = sizeof(tfl__window_attrs),
    [TFL_OP_AVG_POOL] = sizeof(tfl__window_attrs),
    [TFL_OP_AVG_POOL_GRAD] = sizeof(tfl__window_attrs),
};

size_t tfl__op_attrs_size(tfl__op_id op)
{
    return (unsigned)op < TFL_OP_COUNT ? attrs_sizes[op] : 0;
}
