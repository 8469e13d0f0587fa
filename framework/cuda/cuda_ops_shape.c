/*
 * framework/cuda/cuda_ops_shape.c: the GPU kernels of the shape ops that copy (ConcatV2,
 * PadV2, SelectV2), index (GatherV2, OneHot) or scatter (UnsortedSegmentSum). Transpose,
 * Slice, Reshape and StopGradient are views (no kernel on any device). Out-of-range indices
 * give the CPU's messages: the kernels mark the first bad position in a device word that the
 * host reads back (the one synchronisation of these ops).
 */
#include "cuda_internal.h"

static tfl_status copy_into(const tfl__kcall *k, const tfl_tensor *part, const tfl_tensor *x)
{
    tflcu_iter it;
    tfl__cuda_iter(&it, part, 1, &x);
    return tfl__cuda_check(
        k->dev, tflcu_copy((int)tfl_dtype_size((tfl_dtype)x->dtype), &it, tfl__cuda_stream(k->dev)),
        tfl__op_name(k->op));
}

static tfl_status k_concat(const tfl__kcall *k)
{
    int axis = ((const tfl__axis_attrs *)k->attrs)->axis;
    tfl_tensor part = *k->out; /* a view of the output slice each input fills */
    int64_t at = 0;
    for (int i = 0; i < k->n_in; i++) {
        const tfl_tensor *x = k->in[i];
        part.shape[axis] = x->shape[axis];
        part.numel = x->numel;
        part.offset = k->out->offset + at * k->out->strides[axis];
        if (x->numel > 0) TFL_TRY(copy_into(k, &part, x));
        at += x->shape[axis];
    }
    return TFL_OK;
}

static tfl_status k_where(const tfl__kcall *k)
{
    tflcu_iter it;
    tfl__cuda_iter(&it, k->out, 3, k->in);
    return tfl__cuda_check(
        k->dev,
        tflcu_select((int)tfl_dtype_size((tfl_dtype)k->out->dtype), &it, tfl__cuda_stream(k->dev)),
        "SelectV2");
}

/* the bytes of value in dtype dt (the CPU's store_f64) */
static void value_bytes(tfl_dtype dt, double v, unsigned char out[16])
{
    memset(out, 0, 16);
    switch (dt) {
    case TFL_DTYPE_BOOL:
        out[0] = v != 0.0;
        break;
    case TFL_DTYPE_INT32: {
        int32_t x = v != v           ? 0
                    : v <= INT32_MIN ? INT32_MIN
                    : v >= INT32_MAX ? INT32_MAX
                                     : (int32_t)v;
        memcpy(out, &x, sizeof x);
        break;
    }
    case TFL_DTYPE_INT64: {
        int64_t x = v != v                   ? 0
                    : v <= (double)INT64_MIN ? INT64_MIN
                    : v >= (double)INT64_MAX ? INT64_MAX
                                             : (int64_t)v;
        memcpy(out, &x, sizeof x);
        break;
    }
    case TFL_DTYPE_FLOAT16: {
        uint16_t h = tfl__f32_to_f16((float)v);
        memcpy(out, &h, sizeof h);
        break;
    }
    case TFL_DTYPE_BFLOAT16: {
        uint16_t h = tfl__f32_to_bf16((float)v);
        memcpy(out, &h, sizeof h);
        break;
    }
    case TFL_DTYPE_FLOAT32:
    case TFL_DTYPE_COMPLEX64: {
        float f = (float)v;
        memcpy(out, &f, sizeof f);
        break;
    }
    default:
        memcpy(out, &v, sizeof v);
        break;
    }
}

static tfl_status k_pad(const tfl__kcall *k)
{
    const tfl__pad_attrs *a = k->attrs;
    tfl_tensor *out = k->out;
    const tfl_tensor *x = k->in[0];
    tfl_dtype dt = (tfl_dtype)out->dtype;
    int es = (int)tfl_dtype_size(dt);
    unsigned char v[16];
    value_bytes(dt, a->value, v);
    TFL_TRY(tfl__cuda_check(
        k->dev, tflcu_fill(es, tfl__data(out), out->numel, v, tfl__cuda_stream(k->dev)), "PadV2"));
    if (x->numel == 0) return TFL_OK;
    tfl_tensor part = *out; /* the region x fills */
    for (int d = 0; d < out->rank; d++) {
        part.shape[d] = x->shape[d];
        part.offset += a->before[d] * out->strides[d];
    }
    part.numel = x->numel;
    return copy_into(k, &part, x);
}

/* Element i of an int32 or int64 index tensor on the device, for the message of an index
 * check that failed (one word copied back). */
static tfl_status read_index(const tfl__kcall *k, const tfl_tensor *idx, int64_t i, int64_t *v)
{
    size_t is = tfl_dtype_size((tfl_dtype)idx->dtype);
    const char *src = (const char *)tfl__data(idx) + (size_t)i * is;
    if (is != 4) return tfl__dev_copy_host(k->dev, v, src, is, 1);
    int32_t v32 = 0;
    tfl_status st = tfl__dev_copy_host(k->dev, &v32, src, is, 1);
    *v = v32;
    return st;
}

static tfl_status k_gather(const tfl__kcall *k)
{
    int axis = ((const tfl__axis_attrs *)k->attrs)->axis;
    tfl_tensor *tp = NULL, *ti = NULL;
    const tfl_tensor *params = tfl__cuda_contiguous(k, k->in[0], &tp);
    const tfl_tensor *indices = params ? tfl__cuda_contiguous(k, k->in[1], &ti) : NULL;
    tfl_status st = k->ctx->err_code;
    if (indices) {
        int64_t dim = params->shape[axis], nidx = indices->numel, bad = -1;
        int64_t outer = tfl__numel(axis, params->shape);
        int64_t inner = tfl__numel(params->rank - axis - 1, params->shape + axis + 1) *
                        (int64_t)tfl_dtype_size((tfl_dtype)params->dtype);
        st = tfl__cuda_check_reset(k->dev);
        if (st == TFL_OK)
            st = tfl__cuda_check(k->dev,
                                 tflcu_gather(tfl__data(params), tfl__data(indices), indices->dtype,
                                              tfl__data(k->out), outer, dim, nidx, inner,
                                              tfl__cuda(k->dev)->check, tfl__cuda_stream(k->dev)),
                                 "GatherV2");
        if (st == TFL_OK) st = tfl__cuda_check_read(k->dev, &bad);
        if (st == TFL_OK && bad >= 0) {
            int64_t v = 0;
            st = read_index(k, indices, bad, &v);
            if (st == TFL_OK)
                st = tfl__set_error(k->ctx, TFL_INVALID_ARGUMENT,
                                    "GatherV2: indices[%lld] = %lld is not in [0, %lld)",
                                    (long long)bad, (long long)v, (long long)dim);
        }
    }
    tfl_tensor_release(tp);
    tfl_tensor_release(ti);
    return st;
}

static tfl_status k_one_hot(const tfl__kcall *k)
{
    const tfl__one_hot_attrs *a = k->attrs;
    tfl_tensor *ti;
    const tfl_tensor *indices = tfl__cuda_contiguous(k, k->in[0], &ti);
    if (!indices) return k->ctx->err_code;
    tfl_dtype dt = (tfl_dtype)k->out->dtype;
    unsigned char on[16], off[16];
    value_bytes(dt, a->on_value, on);
    value_bytes(dt, a->off_value, off);
    tfl_status st = tfl__cuda_check(
        k->dev,
        tflcu_one_hot(tfl__data(indices), indices->dtype, tfl__data(k->out), indices->numel,
                      a->depth, (int)tfl_dtype_size(dt), on, off, tfl__cuda_stream(k->dev)),
        "OneHot");
    tfl_tensor_release(ti);
    return st;
}

/*
 * UnsortedSegmentSum in deterministic mode (floating dtypes): the ids are read back (one
 * synchronisation, as the index check's), checked, and counting-sorted on the host into each
 * segment's rows in ascending order; the kernel then gathers every output from its rows in
 * that order (no atomics: the CPU's order of additions, so its bits, run after run).
 */
static tfl_status segment_sum_sorted(const tfl__kcall *k, const tfl_tensor *data,
                                     const tfl_tensor *ids, int64_t outer, int64_t nseg,
                                     int64_t inner)
{
    tfl_ctx *ctx = k->ctx;
    const int64_t nidx = ids->numel;
    const size_t is = tfl_dtype_size((tfl_dtype)ids->dtype);
    size_t n_words = (size_t)nidx + (size_t)nseg + 1; /* perm, then offs */
    void *raw = tfl__host_alloc(ctx, (size_t)nidx * is + 1, 64);
    int64_t *sorted = tfl__host_alloc(ctx, n_words * sizeof(int64_t), 64);
    tfl_tensor *dev_sorted = NULL;
    tfl_status st = raw && sorted
                        ? TFL_OK
                        : tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                         "UnsortedSegmentSum: out of host memory for "
                                         "the sorted segment ids (%lld ids, %lld segments)",
                                         (long long)nidx, (long long)nseg);
    if (st == TFL_OK) st = tfl__dev_copy_host(k->dev, raw, tfl__data(ids), (size_t)nidx * is, 1);
    int64_t *perm = sorted, *offs = sorted + nidx;
    if (st == TFL_OK) {
        memset(offs, 0, ((size_t)nseg + 1) * sizeof(int64_t));
        for (int64_t j = 0; j < nidx && st == TFL_OK; j++) {
            int64_t v = is == 4 ? ((const int32_t *)raw)[j] : ((const int64_t *)raw)[j];
            if (v < 0 || v >= nseg)
                st = tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                                    "UnsortedSegmentSum: segment_ids[%lld] = %lld is not in [0, "
                                    "%lld)",
                                    (long long)j, (long long)v, (long long)nseg);
            else
                offs[v + 1]++;
        }
    }
    if (st == TFL_OK) {
        for (int64_t sg = 0; sg < nseg; sg++)
            offs[sg + 1] += offs[sg];
        /* stable placement: offs[v] walks segment v's slots, then is restored */
        for (int64_t j = 0; j < nidx; j++) {
            int64_t v = is == 4 ? ((const int32_t *)raw)[j] : ((const int64_t *)raw)[j];
            perm[offs[v]++] = j;
        }
        for (int64_t sg = nseg; sg > 0; sg--)
            offs[sg] = offs[sg - 1];
        offs[0] = 0;
        const int64_t shape[1] = {(int64_t)n_words};
        dev_sorted = tfl__tensor_alloc(ctx, k->dev, TFL_DTYPE_INT64, 1, shape);
        st = dev_sorted ? tfl__dev_copy_host(k->dev, tfl__data(dev_sorted), sorted,
                                             n_words * sizeof(int64_t), 0)
                        : ctx->err_code;
    }
    if (st == TFL_OK) {
        const int64_t *dp = tfl__data(dev_sorted);
        st = tfl__cuda_check(k->dev,
                             tflcu_segment_sum_sorted(data->dtype, tfl__data(data), dp, dp + nidx,
                                                      tfl__data(k->out), outer, nidx, nseg, inner,
                                                      tfl__cuda_stream(k->dev)),
                             "UnsortedSegmentSum");
    }
    tfl_tensor_release(dev_sorted);
    tfl__host_free(ctx, raw);
    tfl__host_free(ctx, sorted);
    return st;
}

static tfl_status k_segment_sum(const tfl__kcall *k)
{
    const tfl__segment_attrs *a = k->attrs;
    tfl_tensor *td = NULL, *ti = NULL;
    const tfl_tensor *data = tfl__cuda_contiguous(k, k->in[0], &td);
    const tfl_tensor *ids = data ? tfl__cuda_contiguous(k, k->in[1], &ti) : NULL;
    tfl_status st = k->ctx->err_code;
    if (ids) {
        int64_t nidx = ids->numel, nseg = a->num_segments, bad = -1;
        int64_t outer = tfl__numel(a->axis, k->out->shape);
        int64_t inner = tfl__numel(k->out->rank - a->axis - 1, k->out->shape + a->axis + 1);
        tfl_dtype dt = (tfl_dtype)data->dtype;
        if (k->ctx->deterministic && (dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64)) {
            st = segment_sum_sorted(k, data, ids, outer, nseg, inner);
            tfl_tensor_release(td);
            tfl_tensor_release(ti);
            return st;
        }
        st = tfl__dev_memset(k->dev, NULL, tfl__data(k->out), 0,
                             (size_t)k->out->numel * tfl_dtype_size(dt));
        if (st == TFL_OK) st = tfl__cuda_check_reset(k->dev);
        if (st == TFL_OK)
            st = tfl__cuda_check(k->dev,
                                 tflcu_segment_sum(dt, tfl__data(data), tfl__data(ids), ids->dtype,
                                                   tfl__data(k->out), outer, nidx, nseg, inner,
                                                   tfl__cuda(k->dev)->check,
                                                   tfl__cuda_stream(k->dev)),
                                 "UnsortedSegmentSum");
        if (st == TFL_OK) st = tfl__cuda_check_read(k->dev, &bad);
        if (st == TFL_OK && bad >= 0) {
            int64_t v = 0;
            st = read_index(k, ids, bad, &v);
            if (st == TFL_OK)
                st = tfl__set_error(
                    k->ctx, TFL_INVALID_ARGUMENT,
                    "UnsortedSegmentSum: segment_ids[%lld] = %lld is not in [0, %lld)",
                    (long long)bad, (long long)v, (long long)nseg);
        }
    }
    tfl_tensor_release(td);
    tfl_tensor_release(ti);
    return st;
}

const tfl__kernel tfl__cuda_shape_kernels[TFL_OP_COUNT] = {
    [TFL_OP_CONCAT] = {k_concat, TFL_MASK_ALL, NULL},
    [TFL_OP_GATHER] = {k_gather, TFL_MASK_ALL, NULL},
    [TFL_OP_ONE_HOT] = {k_one_hot, TFL_MASK_INT, NULL},
    [TFL_OP_WHERE] = {k_where, TFL_MASK_ALL, NULL},
    [TFL_OP_PAD] = {k_pad, TFL_MASK_ALL, NULL},
    [TFL_OP_SEGMENT_SUM] = {k_segment_sum, TFL_MASK_REAL & ~TFL_MASK_HALF, NULL},
};
