/*
 * framework/ops/shape_ops.c: shape and indexing ops. reshape (of a contiguous tensor),
 * transpose and slice return views that share storage; concat, gather, one_hot, cast and
 * where run kernels through tfl__op_run.
 */
#include "op.h"

/* A view of x's storage; logged like an op so placement logs show every step, and offered
 * to the recording tapes like one. */
static tfl_tensor *make_view(tfl_ctx *ctx, tfl__op_id op, const tfl_tensor *x, int rank,
                             const int64_t *shape, const int64_t *strides, int64_t offset,
                             const void *attrs)
{
    tfl_tensor *t = tfl__tensor_view(ctx, x, rank, shape, strides, offset);
    if (!t) return NULL;
    tfl__log_placement(ctx, op, tfl__tensor_device(x));
    if (!(tfl__op_defs[op].flags & TFL_OPF_NO_GRAD)) tfl__record(ctx, op, 1, &x, t, attrs);
    return t;
}

tfl_tensor *tfl_reshape(tfl_ctx *ctx, const tfl_tensor *x, int rank, const int64_t *shape)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_RESHAPE, 1, &x)) return NULL;
    TFL_CHECK_RET(ctx, rank >= 0 && rank <= TFL_MAX_RANK && (rank == 0 || shape), NULL,
                  TFL_INVALID_ARGUMENT, "Reshape: rank %d is out of range (0..%d) or shape is NULL",
                  rank, TFL_MAX_RANK);
    int64_t out[TFL_MAX_RANK], known = 1, numel = 0;
    int infer = -1;
    char s[TFL_MAX_RANK * 22 + 8];
    for (int i = 0; i < rank; i++) {
        out[i] = shape[i] == -1 ? 1 : shape[i]; /* the known part first */
        if (shape[i] == -1) {
            TFL_CHECK_RET(ctx, infer < 0, NULL, TFL_INVALID_ARGUMENT,
                          "Reshape: only one dimension can be -1 in %s",
                          tfl__shape_str(rank, shape, s, sizeof s));
            infer = i;
        } else {
            TFL_CHECK_RET(ctx, shape[i] >= 0, NULL, TFL_INVALID_ARGUMENT,
                          "Reshape: dimension %d is negative (%lld) in shape %s", i,
                          (long long)shape[i], tfl__shape_str(rank, shape, s, sizeof s));
        }
    }
    /* a product past INT64_MAX is refused before any division */
    TFL_CHECK_RET(ctx, tfl__shape_numel(rank, out, &known), NULL, TFL_INVALID_ARGUMENT,
                  "Reshape: shape %s has more than INT64_MAX elements",
                  tfl__shape_str(rank, shape, s, sizeof s));
    if (infer >= 0 && known > 0 && x->numel % known == 0) out[infer] = x->numel / known;
    else if (infer >= 0 && known == 0 && x->numel == 0) out[infer] = 0;
    bool ok = (infer < 0 || known > 0 || x->numel == 0) && tfl__shape_numel(rank, out, &numel) &&
              numel == x->numel;
    TFL_CHECK_RET(ctx, ok, NULL, TFL_INVALID_ARGUMENT,
                  "Reshape: cannot reshape a tensor of %lld elements to shape %s",
                  (long long)x->numel, tfl__shape_str(rank, shape, s, sizeof s));
    int64_t strides[TFL_MAX_RANK];
    tfl__contiguous_strides(rank, out, strides);
    if (tfl_tensor_is_contiguous(x))
        return make_view(ctx, TFL_OP_RESHAPE, x, rank, out, strides, x->offset, NULL);
    ctx->tape_pause++; /* the copy is a step of this reshape, recorded as one */
    tfl_tensor *c = tfl_identity(ctx, x); /* fresh and contiguous: ours to reshape */
    ctx->tape_pause--;
    if (!c) return NULL;
    c->rank = (uint8_t)rank;
    memcpy(c->shape, out, sizeof(int64_t) * (size_t)rank);
    memcpy(c->strides, strides, sizeof(int64_t) * (size_t)rank);
    tfl__record(ctx, TFL_OP_RESHAPE, 1, &x, c, NULL);
    return c;
}

tfl_tensor *tfl_transpose(tfl_ctx *ctx, const tfl_tensor *x, const int *perm)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_TRANSPOSE, 1, &x)) return NULL;
    tfl__transpose_attrs attrs = {{0}};
    int *p = attrs.perm;
    bool seen[TFL_MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        p[i] = perm ? perm[i] : x->rank - 1 - i;
        TFL_CHECK_RET(ctx, p[i] >= 0 && p[i] < x->rank && !seen[p[i]], NULL, TFL_INVALID_ARGUMENT,
                      "Transpose: perm is not a permutation of 0..%d (entry %d is %d)",
                      x->rank - 1, i, p[i]);
        seen[p[i]] = true;
    }
    int64_t shape[TFL_MAX_RANK], strides[TFL_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        shape[i] = x->shape[p[i]];
        strides[i] = x->strides[p[i]];
    }
    return make_view(ctx, TFL_OP_TRANSPOSE, x, x->rank, shape, strides, x->offset, &attrs);
}

tfl_tensor *tfl_slice(tfl_ctx *ctx, const tfl_tensor *x, const int64_t *begin,
                      const int64_t *size)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_SLICE, 1, &x)) return NULL;
    TFL_CHECK_RET(ctx, x->rank == 0 || (begin && size), NULL, TFL_INVALID_ARGUMENT,
                  "Slice: begin and size must be given for rank %d", x->rank);
    int64_t shape[TFL_MAX_RANK], offset = x->offset;
    tfl__slice_attrs attrs = {{0}};
    for (int i = 0; i < x->rank; i++) {
        int64_t dim = x->shape[i], b = begin[i];
        /* no begin + size: a size near INT64_MAX must not wrap past the bound */
        bool ok = b >= 0 && b <= dim && (size[i] == -1 || (size[i] >= 0 && size[i] <= dim - b));
        TFL_CHECK_RET(ctx, ok, NULL, TFL_INVALID_ARGUMENT,
                      "Slice: out of bounds on axis %d: begin %lld, size %lld for dimension %lld "
                      "(expected 0 <= begin <= %lld and 0 <= size <= dimension - begin, or size "
                      "-1 for the rest)", i, (long long)b, (long long)size[i], (long long)dim,
                      (long long)dim);
        int64_t n = size[i] == -1 ? dim - b : size[i];
        attrs.begin[i] = b;
        shape[i] = n;
        offset += b * x->strides[i];
    }
    return make_view(ctx, TFL_OP_SLICE, x, x->rank, shape, x->strides, offset, &attrs);
}

tfl_tensor *tfl_stop_gradient(tfl_ctx *ctx, const tfl_tensor *x)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_STOP_GRADIENT, 1, &x)) return NULL;
    return make_view(ctx, TFL_OP_STOP_GRADIENT, x, x->rank, x->shape, x->strides, x->offset, NULL);
}

tfl_tensor *tfl_concat(tfl_ctx *ctx, int n, const tfl_tensor *const *xs, int axis)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, n >= 1, NULL, TFL_INVALID_ARGUMENT,
                  "ConcatV2: expected at least one input, got %d", n);
    TFL_CHECK_RET(ctx, xs, NULL, TFL_INVALID_ARGUMENT,
                  "ConcatV2: the array of %d inputs is NULL", n);
    if (!tfl__check_inputs(ctx, TFL_OP_CONCAT, n, xs)) return NULL;
    const tfl_tensor *x0 = xs[0];
    int a = tfl__norm_axis(axis, x0->rank);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "ConcatV2: axis %d is out of range for rank %d", axis, x0->rank);
    int64_t shape[TFL_MAX_RANK];
    memcpy(shape, x0->shape, sizeof(int64_t) * x0->rank);
    shape[a] = 0;
    for (int i = 0; i < n; i++) {
        const tfl_tensor *x = xs[i];
        TFL_CHECK_RET(ctx, x->dtype == x0->dtype, NULL, TFL_INVALID_ARGUMENT,
                      "ConcatV2: dtypes differ: input 0 is %s, input %d is %s",
                      tfl_dtype_name((tfl_dtype)x0->dtype), i, tfl_dtype_name((tfl_dtype)x->dtype));
        TFL_CHECK_RET(ctx, x->rank == x0->rank, NULL, TFL_INVALID_ARGUMENT,
                      "ConcatV2: ranks differ: input 0 has rank %d, input %d has rank %d",
                      x0->rank, i, x->rank);
        for (int d = 0; d < x->rank; d++)
            TFL_CHECK_RET(ctx, d == a || x->shape[d] == x0->shape[d], NULL, TFL_INVALID_ARGUMENT,
                          "ConcatV2: dimension %d differs: input 0 has %lld, input %d has %lld", d,
                          (long long)x0->shape[d], i, (long long)x->shape[d]);
        TFL_CHECK_RET(ctx, !tfl__add_overflow_i64(shape[a], x->shape[a], &shape[a]), NULL,
                      TFL_INVALID_ARGUMENT, "ConcatV2: the sizes along axis %d add up to more "
                      "than INT64_MAX (at input %d, of size %lld)", a, i, (long long)x->shape[a]);
    }
    tfl__axis_attrs attrs = {a};
    return tfl__op_run(ctx, TFL_OP_CONCAT, (tfl_dtype)x0->dtype, n, xs, (tfl_dtype)x0->dtype,
                       x0->rank, shape, &attrs);
}

tfl_tensor *tfl_gather(tfl_ctx *ctx, const tfl_tensor *params, const tfl_tensor *indices,
                       int axis)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {params, indices};
    if (!tfl__check_inputs(ctx, TFL_OP_GATHER, 2, in)) return NULL;
    TFL_CHECK_RET(ctx, tfl_dtype_is_integer((tfl_dtype)indices->dtype), NULL, TFL_INVALID_ARGUMENT,
                  "GatherV2: indices dtype %s is not supported; expected one of int32, int64",
                  tfl_dtype_name((tfl_dtype)indices->dtype));
    int a = tfl__norm_axis(axis, params->rank);
    TFL_CHECK_RET(ctx, a >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "GatherV2: axis %d is out of range for rank %d", axis, params->rank);
    int rank = params->rank - 1 + indices->rank;
    TFL_CHECK_RET(ctx, rank <= TFL_MAX_RANK, NULL, TFL_INVALID_ARGUMENT,
                  "GatherV2: the result would have rank %d (more than %d)", rank, TFL_MAX_RANK);
    int64_t shape[TFL_MAX_RANK];
    int r = 0;
    for (int d = 0; d < a; d++) shape[r++] = params->shape[d];
    for (int d = 0; d < indices->rank; d++) shape[r++] = indices->shape[d];
    for (int d = a + 1; d < params->rank; d++) shape[r++] = params->shape[d];
    tfl__axis_attrs attrs = {a};
    return tfl__op_run(ctx, TFL_OP_GATHER, (tfl_dtype)params->dtype, 2, in,
                       (tfl_dtype)params->dtype, rank, shape, &attrs);
}

tfl_tensor *tfl_one_hot(tfl_ctx *ctx, const tfl_tensor *indices, int64_t depth, double on_value,
                        double off_value, tfl_dtype dtype)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_ONE_HOT, 1, &indices) ||
        !tfl__check_dtype(ctx, TFL_OP_ONE_HOT, (tfl_dtype)indices->dtype))
        return NULL;
    TFL_CHECK_RET(ctx, depth >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "OneHot: depth must be non-negative, got %lld", (long long)depth);
    TFL_CHECK_RET(ctx, tfl_dtype_is_valid(dtype), NULL, TFL_INVALID_ARGUMENT,
                  "OneHot: invalid dtype %d", (int)dtype);
    TFL_CHECK_RET(ctx, indices->rank < TFL_MAX_RANK, NULL, TFL_INVALID_ARGUMENT,
                  "OneHot: the result would have rank %d (more than %d)", indices->rank + 1,
                  TFL_MAX_RANK);
    int64_t shape[TFL_MAX_RANK];
    memcpy(shape, indices->shape, sizeof(int64_t) * indices->rank);
    shape[indices->rank] = depth;
    tfl__one_hot_attrs attrs = {depth, on_value, off_value};
    return tfl__op_run(ctx, TFL_OP_ONE_HOT, (tfl_dtype)indices->dtype, 1, &indices, dtype,
                       indices->rank + 1, shape, &attrs);
}

tfl_tensor *tfl_cast(tfl_ctx *ctx, const tfl_tensor *x, tfl_dtype dtype)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_CAST, 1, &x)) return NULL;
    TFL_CHECK_RET(ctx, tfl_dtype_is_valid(dtype), NULL, TFL_INVALID_ARGUMENT,
                  "Cast: invalid dtype %d", (int)dtype);
    return tfl__op_run(ctx, TFL_OP_CAST, (tfl_dtype)x->dtype, 1, &x, dtype, x->rank, x->shape, NULL);
}

tfl_tensor *tfl_where(tfl_ctx *ctx, const tfl_tensor *cond, const tfl_tensor *x,
                      const tfl_tensor *y)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[3] = {cond, x, y};
    if (!tfl__check_inputs(ctx, TFL_OP_WHERE, 3, in) || !tfl__autocast(ctx, TFL_OP_WHERE, 3, in))
        return NULL;
    x = in[1];
    y = in[2];
    TFL_CHECK_RET(ctx, cond->dtype == TFL_DTYPE_BOOL, NULL, TFL_INVALID_ARGUMENT,
                  "SelectV2: cond must be bool, got %s", tfl_dtype_name((tfl_dtype)cond->dtype));
    if (!tfl__check_same_dtype(ctx, TFL_OP_WHERE, x, y)) return NULL;
    int r1, r2;
    int64_t s1[TFL_MAX_RANK], s2[TFL_MAX_RANK];
    if (!tfl__broadcast_shapes(x->rank, x->shape, y->rank, y->shape, &r1, s1) ||
        !tfl__broadcast_shapes(cond->rank, cond->shape, r1, s1, &r2, s2)) {
        char a[128], b[128], c[128];
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "SelectV2: incompatible shapes: %s vs %s vs %s",
                       tfl__shape_str(cond->rank, cond->shape, a, sizeof a),
                       tfl__shape_str(x->rank, x->shape, b, sizeof b),
                       tfl__shape_str(y->rank, y->shape, c, sizeof c));
        return NULL;
    }
    return tfl__op_run(ctx, TFL_OP_WHERE, (tfl_dtype)x->dtype, 3, in, (tfl_dtype)x->dtype, r2, s2,
                       NULL);
}

tfl_tensor *tfl_broadcast_to(tfl_ctx *ctx, const tfl_tensor *x, int rank, const int64_t *shape)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_BROADCAST_TO, 1, &x)) return NULL;
    TFL_CHECK_RET(ctx, rank >= 0 && rank <= TFL_MAX_RANK && (rank == 0 || shape), NULL,
                  TFL_INVALID_ARGUMENT,
                  "BroadcastTo: rank %d is out of range (0..%d) or shape is NULL", rank,
                  TFL_MAX_RANK);
    int r;
    int64_t out[TFL_MAX_RANK];
    char sx[128], ss[128];
    bool ok = tfl__check_new(ctx, "BroadcastTo", (tfl_dtype)x->dtype, rank, shape);
    if (!ok) return NULL;
    /* x must broadcast to exactly `shape`: the joint shape equals it */
    ok = x->rank <= rank && tfl__broadcast_shapes(x->rank, x->shape, rank, shape, &r, out) &&
         tfl__same_shape(r, out, rank, shape);
    TFL_CHECK_RET(ctx, ok, NULL, TFL_INVALID_ARGUMENT,
                  "BroadcastTo: cannot broadcast a tensor of shape %s to shape %s",
                  tfl__shape_str(x->rank, x->shape, sx, sizeof sx),
                  tfl__shape_str(rank, shape, ss, sizeof ss));
    return tfl__op_run(ctx, TFL_OP_BROADCAST_TO, (tfl_dtype)x->dtype, 1, &x, (tfl_dtype)x->dtype,
                       rank, shape, NULL);
}

tfl_tensor *tfl_pad(tfl_ctx *ctx, const tfl_tensor *x, const int64_t *before,
                    const int64_t *after, double value)
{
    if (!ctx || !tfl__check_inputs(ctx, TFL_OP_PAD, 1, &x)) return NULL;
    TFL_CHECK_RET(ctx, x->rank == 0 || (before && after), NULL, TFL_INVALID_ARGUMENT,
                  "PadV2: before and after must be given for rank %d", x->rank);
    tfl__pad_attrs attrs = {{0}, {0}, value};
    int64_t shape[TFL_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        TFL_CHECK_RET(ctx, before[i] >= 0 && after[i] >= 0, NULL, TFL_INVALID_ARGUMENT,
                      "PadV2: paddings must be non-negative, axis %d has before %lld, after %lld",
                      i, (long long)before[i], (long long)after[i]);
        TFL_CHECK_RET(ctx, before[i] <= INT64_MAX / 4 - x->shape[i] &&
                      after[i] <= INT64_MAX / 4 - x->shape[i] - before[i], NULL,
                      TFL_INVALID_ARGUMENT, "PadV2: axis %d would have too many elements "
                      "(before %lld, after %lld)", i, (long long)before[i], (long long)after[i]);
        attrs.before[i] = before[i];
        attrs.after[i] = after[i];
        shape[i] = x->shape[i] + before[i] + after[i];
    }
    if (!tfl__check_new(ctx, "PadV2", (tfl_dtype)x->dtype, x->rank, shape)) return NULL;
    return tfl__op_run(ctx, TFL_OP_PAD, (tfl_dtype)x->dtype, 1, &x, (tfl_dtype)x->dtype, x->rank,
                       shape, &attrs);
}

tfl_tensor *tfl_unsorted_segment_sum(tfl_ctx *ctx, const tfl_tensor *data,
                                     const tfl_tensor *segment_ids, int64_t num_segments,
                                     int axis)
{
    if (!ctx) return NULL;
    const tfl_tensor *in[2] = {data, segment_ids};
    const tfl__op_id op = TFL_OP_SEGMENT_SUM;
    if (!tfl__check_inputs(ctx, op, 2, in) || !tfl__autocast(ctx, op, 1, &data) ||
        !tfl__check_dtype(ctx, op, (tfl_dtype)data->dtype))
        return NULL;
    in[0] = data;
    TFL_CHECK_RET(ctx, tfl_dtype_is_integer((tfl_dtype)segment_ids->dtype), NULL,
                  TFL_INVALID_ARGUMENT,
                  "UnsortedSegmentSum: segment_ids dtype %s is not supported; expected one of "
                  "int32, int64", tfl_dtype_name((tfl_dtype)segment_ids->dtype));
    TFL_CHECK_RET(ctx, num_segments >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "UnsortedSegmentSum: num_segments must be non-negative, got %lld",
                  (long long)num_segments);
    int rank = data->rank - segment_ids->rank + 1;
    int a = axis < 0 ? axis + rank : axis;
    char sd[128], si[128];
    /* data's shape is out[:a] + segment_ids.shape + out[a+1:] */
    TFL_CHECK_RET(ctx, rank <= TFL_MAX_RANK, NULL, TFL_INVALID_ARGUMENT,
                  "UnsortedSegmentSum: the result would have rank %d (more than %d)", rank,
                  TFL_MAX_RANK);
    bool ok = rank >= 1 && a >= 0 && a < rank &&
              tfl__same_shape(segment_ids->rank, segment_ids->shape, segment_ids->rank,
                              data->shape + a);
    TFL_CHECK_RET(ctx, ok, NULL, TFL_INVALID_ARGUMENT,
                  "UnsortedSegmentSum: data of shape %s does not hold segment_ids of shape %s "
                  "at axis %d", tfl__shape_str(data->rank, data->shape, sd, sizeof sd),
                  tfl__shape_str(segment_ids->rank, segment_ids->shape, si, sizeof si), axis);
    int64_t shape[TFL_MAX_RANK];
    for (int d = 0; d < a; d++) shape[d] = data->shape[d];
    shape[a] = num_segments;
    for (int d = a + 1; d < rank; d++) shape[d] = data->shape[d - 1 + segment_ids->rank];
    if (!tfl__check_new(ctx, "UnsortedSegmentSum", (tfl_dtype)data->dtype, rank, shape))
        return NULL;
    tfl__segment_attrs attrs = {a, num_segments};
    return tfl__op_run(ctx, op, (tfl_dtype)data->dtype, 2, in, (tfl_dtype)data->dtype, rank, shape,
                       &attrs);
}
