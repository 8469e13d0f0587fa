/*
 * framework/ops/matmul.c: the MatMul and FusedMatMul entry points: rank and inner-dimension
 * checks, broadcasting of the batch axes, the bias's shape, and the output shape (..., m, n).
 */
#include "op.h"

/* op(a) op(b) (+ bias, FusedMatMul): in[] holds a, b and the bias; n_in 2 or 3 */
static tfl_tensor *matmul_op(tfl_ctx *ctx, tfl__op_id op, int n_in, const tfl_tensor **in,
                             unsigned flags)
{
    const char *name = tfl__op_defs[op].name;
    if (!tfl__check_inputs(ctx, op, n_in, in) || !tfl__autocast(ctx, op, n_in, in)) return NULL;
    const tfl_tensor *a = in[0], *b = in[1];
    if (!tfl__check_same_dtype(ctx, op, a, b) || !tfl__check_dtype(ctx, op, (tfl_dtype)a->dtype))
        return NULL;
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, a->rank >= 2 && b->rank >= 2, NULL, TFL_INVALID_ARGUMENT,
                  "%s: expected rank >= 2 for both inputs, got a %s and b %s", name,
                  tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                  tfl__shape_str(b->rank, b->shape, sb, sizeof sb));
    TFL_CHECK_RET(ctx, (flags & ~(TFL_TRANSPOSE_A | TFL_TRANSPOSE_B)) == 0, NULL,
                  TFL_INVALID_ARGUMENT, "%s: unknown flags 0x%x", name, flags);
    bool ta = flags & TFL_TRANSPOSE_A, tb = flags & TFL_TRANSPOSE_B;
    int64_t m = a->shape[a->rank - (ta ? 1 : 2)], ka = a->shape[a->rank - (ta ? 2 : 1)];
    int64_t kb = b->shape[b->rank - (tb ? 1 : 2)], n = b->shape[b->rank - (tb ? 2 : 1)];
    TFL_CHECK_RET(ctx, ka == kb, NULL, TFL_INVALID_ARGUMENT,
                  "%s: inner dimensions differ: a is %s, b is %s%s%s", name,
                  tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                  tfl__shape_str(b->rank, b->shape, sb, sizeof sb), ta ? " (transpose_a)" : "",
                  tb ? " (transpose_b)" : "");
    if (n_in == 3) {
        const tfl_tensor *bias = in[2];
        TFL_CHECK_RET(ctx, bias->dtype == a->dtype, NULL, TFL_INVALID_ARGUMENT,
                      "%s: dtypes differ: a is %s, the bias %s (tapeflow does not promote; use "
                      "tfl_cast)", name, tfl_dtype_name((tfl_dtype)a->dtype),
                      tfl_dtype_name((tfl_dtype)bias->dtype));
        TFL_CHECK_RET(ctx, bias->rank == 1 && bias->shape[0] == n, NULL, TFL_INVALID_ARGUMENT,
                      "%s: the bias must have shape (%lld,) (the product's last axis), got %s",
                      name, (long long)n, tfl__shape_str(bias->rank, bias->shape, sa, sizeof sa));
    }
    int rank;
    int64_t shape[TFL_MAX_RANK];
    if (!tfl__broadcast_shapes(a->rank - 2, a->shape, b->rank - 2, b->shape, &rank, shape)) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "%s: incompatible shapes: batch dimensions of %s vs %s do not broadcast",
                       name, tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                       tfl__shape_str(b->rank, b->shape, sb, sizeof sb));
        return NULL;
    }
    shape[rank++] = m;
    shape[rank++] = n;
    if (n_in == 3 && (a->dtype == TFL_DTYPE_FLOAT16 || a->dtype == TFL_DTYPE_BFLOAT16)) {
        /* rounded to 16 bits after the product and again after the add, as MatMul then Add
         * round (the CPU's float32 kernel would round once) */
        if (tfl_frame_push(ctx) != TFL_OK) return NULL;
        tfl_tensor *y = tfl_add(ctx, tfl_matmul(ctx, a, b, flags), in[2]);
        tfl_keep(y);
        tfl_frame_pop(ctx);
        return y ? tfl__frame_adopt(ctx, y) : NULL;
    }
    tfl__matmul_attrs attrs = {flags};
    return tfl__op_run(ctx, op, (tfl_dtype)a->dtype, n_in, in, (tfl_dtype)a->dtype, rank, shape,
                       &attrs);
}

tfl_tensor *tfl_matmul(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b, unsigned flags)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {a, b};
    return matmul_op(ctx, TFL_OP_MATMUL, 2, in, flags);
}

tfl_tensor *tfl_matmul_bias(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b,
                            const tfl_tensor *bias, unsigned flags)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[3] = {a, b, bias};
    return matmul_op(ctx, TFL_OP_FUSED_MATMUL, 3, in, flags);
}
