/*
 * framework/ops/matmul.c: the MatMul entry point: rank and inner-dimension checks,
 * broadcasting of the batch axes, and the output shape (..., m, n).
 */
#include "op.h"

tfl_tensor *tfl_matmul(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b, unsigned flags)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {a, b};
    const tfl__op_id op = TFL_OP_MATMUL;
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 2, in)) return NULL;
    a = in[0];
    b = in[1];
    if (!tfl__check_same_dtype(ctx, op, a, b) || !tfl__check_dtype(ctx, op, (tfl_dtype)a->dtype))
        return NULL;
    char sa[128], sb[128];
    TFL_CHECK_RET(ctx, a->rank >= 2 && b->rank >= 2, NULL, TFL_INVALID_ARGUMENT,
                  "MatMul: expected rank >= 2 for both inputs, got a %s and b %s",
                  tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                  tfl__shape_str(b->rank, b->shape, sb, sizeof sb));
    TFL_CHECK_RET(ctx, (flags & ~(TFL_TRANSPOSE_A | TFL_TRANSPOSE_B)) == 0, NULL,
                  TFL_INVALID_ARGUMENT, "MatMul: unknown flags 0x%x", flags);
    bool ta = flags & TFL_TRANSPOSE_A, tb = flags & TFL_TRANSPOSE_B;
    int64_t m = a->shape[a->rank - (ta ? 1 : 2)], ka = a->shape[a->rank - (ta ? 2 : 1)];
    int64_t kb = b->shape[b->rank - (tb ? 1 : 2)], n = b->shape[b->rank - (tb ? 2 : 1)];
    TFL_CHECK_RET(ctx, ka == kb, NULL, TFL_INVALID_ARGUMENT,
                  "MatMul: inner dimensions differ: a is %s, b is %s%s%s",
                  tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                  tfl__shape_str(b->rank, b->shape, sb, sizeof sb), ta ? " (transpose_a)" : "",
                  tb ? " (transpose_b)" : "");
    int rank;
    int64_t shape[TFL_MAX_RANK];
    if (!tfl__broadcast_shapes(a->rank - 2, a->shape, b->rank - 2, b->shape, &rank, shape)) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "MatMul: incompatible shapes: batch dimensions of %s vs %s do not broadcast",
                       tfl__shape_str(a->rank, a->shape, sa, sizeof sa),
                       tfl__shape_str(b->rank, b->shape, sb, sizeof sb));
        return NULL;
    }
    shape[rank++] = m;
    shape[rank++] = n;
    tfl__matmul_attrs attrs = {flags};
    return tfl__op_run(ctx, op, (tfl_dtype)a->dtype, 2, in, (tfl_dtype)a->dtype, rank, shape, &attrs);
}
