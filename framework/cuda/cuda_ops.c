/*
 * framework/cuda/cuda_ops.c: the GPU kernels of the elementwise ops, Cast and Identity, the
 * reductions, softmax, the fused losses, BatchNorm, LayerNorm, BatchNormalization in training
 * mode (BatchMoments, BatchNormTraining, BatchNormTrainingGrad), Dropout and MatMul (cuBLAS).
 * Each is a tfl__kernel function like the CPU's (framework/cpu/k_*.c): it reads the call
 * record, describes the operands (shapes, strides, pointers) and enqueues on the device's
 * stream; nothing here waits for the GPU except the index checks of the losses, which read one
 * word back.
 */
#include "cuda_internal.h"

#include <math.h>
#include <stdio.h>

void tfl__cuda_iter(tflcu_iter *it, const tfl_tensor *out, int n, const tfl_tensor *const *in)
{
    memset(it, 0, sizeof *it);
    it->rank = out->rank;
    it->n_ops = 1 + n;
    it->numel = out->numel;
    for (int d = 0; d < out->rank; d++) {
        it->shape[d] = out->shape[d];
        it->strides[0][d] = out->strides[d];
    }
    it->ptr[0] = tfl__data(out);
    for (int i = 0; i < n; i++) {
        const tfl_tensor *t = in[i];
        int lead = out->rank - t->rank;
        for (int d = 0; d < out->rank; d++) {
            int td = d - lead;
            it->strides[i + 1][d] = td >= 0 && t->shape[td] != 1 ? t->strides[td] : 0;
        }
        it->ptr[i + 1] = tfl__data(t);
    }
}

static bool is_contiguous(const tfl_tensor *t)
{
    int64_t expect = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->shape[d];
    }
    return true;
}

const tfl_tensor *tfl__cuda_contiguous(const tfl__kcall *k, const tfl_tensor *t, tfl_tensor **tmp)
{
    *tmp = NULL;
    if (is_contiguous(t)) return t;
    tfl_tensor *c = tfl__tensor_alloc(k->ctx, k->dev, (tfl_dtype)t->dtype, t->rank, t->shape);
    if (!c) return NULL;
    tflcu_iter it;
    tfl__cuda_iter(&it, c, 1, &t);
    if (tfl__cuda_check(
            k->dev,
            tflcu_copy((int)tfl_dtype_size((tfl_dtype)t->dtype), &it, tfl__cuda_stream(k->dev)),
            "strided copy") != TFL_OK) {
        tfl_tensor_release(c);
        return NULL;
    }
    *tmp = c;
    return c;
}

/* ---- elementwise --------------------------------------------------------------------------- */

static tfl_status k_elementwise(const tfl__kcall *k)
{
    tflcu_iter it;
    tfl__cuda_iter(&it, k->out, k->n_in, k->in);
    double alpha = k->attrs ? ((const tfl__scalar_attrs *)k->attrs)->value : 0.0;
    return tfl__cuda_check(
        k->dev, tflcu_elementwise(k->op, k->in[0]->dtype, &it, alpha, tfl__cuda_stream(k->dev)),
        tfl__op_name(k->op));
}

static tfl_status k_cast(const tfl__kcall *k)
{
    tflcu_iter it;
    tfl__cuda_iter(&it, k->out, 1, k->in);
    tfl_dtype dst = (tfl_dtype)k->out->dtype;
    if (dst == TFL_DTYPE_COMPLEX64 || dst == TFL_DTYPE_COMPLEX128) {
        /* real -> complex: zeros, then the real parts (every other float of the output) */
        TFL_TRY(tfl__dev_memset(k->dev, NULL, tfl__data(k->out), 0,
                                (size_t)k->out->numel * tfl_dtype_size(dst)));
        for (int d = 0; d < it.rank; d++)
            it.strides[0][d] *= 2;
        dst = dst == TFL_DTYPE_COMPLEX64 ? TFL_DTYPE_FLOAT32 : TFL_DTYPE_FLOAT64;
        return tfl__cuda_check(
            k->dev, tflcu_cast(k->in[0]->dtype, dst, &it, tfl__cuda_stream(k->dev)), "Cast");
    }
    return tfl__cuda_check(
        k->dev, tflcu_cast(k->in[0]->dtype, k->out->dtype, &it, tfl__cuda_stream(k->dev)), "Cast");
}

/* Identity, BroadcastTo: a strided copy into the new tensor */
static tfl_status k_copy(const tfl__kcall *k)
{
    tflcu_iter it;
    tfl__cuda_iter(&it, k->out, 1, k->in);
    return tfl__cuda_check(
        k->dev,
        tflcu_copy((int)tfl_dtype_size((tfl_dtype)k->out->dtype), &it, tfl__cuda_stream(k->dev)),
        tfl__op_name(k->op));
}

/* ---- reductions ---------------------------------------------------------------------------- */

static tfl_status k_reduce(const tfl__kcall *k)
{
    const tfl__reduce_attrs *a = k->attrs;
    const tfl_tensor *x = k->in[0];
    tflcu_reduce r;
    memset(&r, 0, sizeof r);
    for (int d = 0; d < x->rank; d++) {
        if (a->reduced[d]) {
            r.rshape[r.nr] = x->shape[d];
            r.rstride[r.nr++] = x->strides[d];
        } else {
            r.kshape[r.nk] = x->shape[d];
            r.kstride[r.nk++] = x->strides[d];
        }
    }
    r.n_out = k->out->numel;
    r.count = tfl__numel(r.nr, r.rshape);
    return tfl__cuda_check(k->dev,
                           tflcu_reduce_run(k->op, x->dtype, &r, tfl__data(x), tfl__data(k->out),
                                            tfl__cuda_stream(k->dev)),
                           tfl__op_name(k->op));
}

static void split_axis(const tfl_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = tfl__numel(axis, x->shape);
    *n = x->rank ? x->shape[axis] : 1;
    *inner = x->rank ? tfl__numel(x->rank - axis - 1, x->shape + axis + 1) : 1;
}

static tfl_status k_arg(const tfl__kcall *k)
{
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cuda_contiguous(k, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    int64_t outer, n, inner;
    split_axis(x, ((const tfl__axis_attrs *)k->attrs)->axis, &outer, &n, &inner);
    tfl_status st = tfl__cuda_check(k->dev,
                                    tflcu_arg(k->op, x->dtype, tfl__data(x), tfl__data(k->out),
                                              outer, n, inner, tfl__cuda_stream(k->dev)),
                                    tfl__op_name(k->op));
    tfl_tensor_release(tmp);
    return st;
}

static tfl_status k_softmax(const tfl__kcall *k)
{
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cuda_contiguous(k, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    int64_t outer, n, inner;
    split_axis(x, ((const tfl__axis_attrs *)k->attrs)->axis, &outer, &n, &inner);
    /* the device current before cuDNN's handle is made */
    tfl_status st = tfl__cuda_use(k->dev);
    if (st == TFL_OK && !tfl__cudnn_softmax(k, x, outer, n, inner, &st)) /* the last axis */
        st = tfl__cuda_check(k->dev,
                             tflcu_softmax(x->dtype, k->op == TFL_OP_LOG_SOFTMAX, tfl__data(x),
                                           tfl__data(k->out), outer, n, inner,
                                           tfl__cuda_stream(k->dev)),
                             tfl__op_name(k->op));
    tfl_tensor_release(tmp);
    return st;
}

/* ---- losses -------------------------------------------------------------------------------- */

static tfl_status k_softmax_xent(const tfl__kcall *k)
{
    tfl_tensor *tx = NULL, *tz = NULL;
    const tfl_tensor *x = tfl__cuda_contiguous(k, k->in[0], &tx);
    const tfl_tensor *z = x ? tfl__cuda_contiguous(k, k->in[1], &tz) : NULL;
    tfl_status st = k->ctx->err_code;
    if (z) {
        int64_t outer, n, inner;
        split_axis(x, ((const tfl__axis_attrs *)k->attrs)->axis, &outer, &n, &inner);
        st = tfl__cuda_check(k->dev,
                             tflcu_xent(x->dtype, tfl__data(x), tfl__data(z), tfl__data(k->out),
                                        outer, n, inner, tfl__cuda_stream(k->dev)),
                             "SoftmaxCrossEntropyWithLogits");
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tz);
    return st;
}

static tfl_status bad_label(tfl_ctx *ctx, const tfl_tensor *labels, int64_t index, int64_t classes,
                            tfl__device *dev)
{
    int64_t v = 0;
    if (labels->dtype == TFL_DTYPE_INT32) {
        int32_t v32 = 0;
        TFL_TRY(tfl__dev_copy_host(dev, &v32, (const int32_t *)tfl__data(labels) + index,
                                   sizeof v32, 1));
        v = v32;
    } else {
        TFL_TRY(
            tfl__dev_copy_host(dev, &v, (const int64_t *)tfl__data(labels) + index, sizeof v, 1));
    }
    return tfl__sparse_label_error(ctx, labels, index, v, classes);
}

static tfl_status contiguous_inputs(const tfl__kcall *k, int n, const tfl_tensor **in,
                                    tfl_tensor **tmp);

/* SparseSoftmaxCrossEntropyWithLogits (x, labels) and its gradient (x, labels, dy) */
static tfl_status k_sparse_softmax_xent(const tfl__kcall *k)
{
    const bool grad = k->op == TFL_OP_SPARSE_SOFTMAX_XENT_GRAD;
    tfl_tensor *tmp[3] = {NULL};
    const tfl_tensor *in[3] = {NULL};
    tfl_status st = contiguous_inputs(k, grad ? 3 : 2, in, tmp);
    if (st == TFL_OK) {
        const tfl_tensor *x = in[0], *labels = in[1];
        int64_t classes = x->shape[x->rank - 1], rows = labels->numel, bad = -1;
        st = tfl__cuda_check_reset(k->dev);
        int64_t *check = tfl__cuda(k->dev)->check;
        void *s = tfl__cuda_stream(k->dev);
        if (st == TFL_OK)
            st = tfl__cuda_check(
                k->dev,
                grad ? tflcu_sparse_xent_grad(x->dtype, tfl__data(x), tfl__data(labels),
                                              labels->dtype, tfl__data(in[2]), tfl__data(k->out),
                                              rows, classes, check, s)
                     : tflcu_sparse_xent(x->dtype, tfl__data(x), tfl__data(labels), labels->dtype,
                                         tfl__data(k->out), rows, classes, check, s),
                tfl__op_name(k->op));
        if (st == TFL_OK) st = tfl__cuda_check_read(k->dev, &bad);
        if (st == TFL_OK && bad >= 0) st = bad_label(k->ctx, labels, bad, classes, k->dev);
    }
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

static tfl_status k_dropout(const tfl__kcall *k)
{
    tfl_tensor *tmp;
    const tfl_tensor *x = tfl__cuda_contiguous(k, k->in[0], &tmp);
    if (!x) return k->ctx->err_code;
    const tfl__dropout_attrs *a = k->attrs;
    uint32_t t = (uint32_t)ceil(a->rate * 16777216.0); /* the CPU's keep threshold */
    tfl_status st = tfl__cuda_check(
        k->dev,
        tflcu_dropout(x->dtype, tfl__data(x), tfl__data(k->out), x->numel, (uint32_t)a->key,
                      (uint32_t)(a->key >> 32), t, 1.0 - a->rate, tfl__cuda_stream(k->dev)),
        "Dropout");
    tfl_tensor_release(tmp);
    return st;
}

/* in[i]: the call's first n inputs, contiguous (copies in tmp[i], which the caller releases;
 * all NULL on entry) */
static tfl_status contiguous_inputs(const tfl__kcall *k, int n, const tfl_tensor **in,
                                    tfl_tensor **tmp)
{
    for (int i = 0; i < n; i++) {
        in[i] = tfl__cuda_contiguous(k, k->in[i], &tmp[i]);
        if (!in[i]) return k->ctx->err_code;
    }
    return TFL_OK;
}

static tfl_status k_batch_norm(const tfl__kcall *k)
{
    tfl_tensor *tmp[5] = {NULL};
    const tfl_tensor *in[5];
    tfl_status st = contiguous_inputs(k, 5, in, tmp);
    if (st == TFL_OK) st = tfl__cuda_use(k->dev); /* current before cuDNN's handle is made */
    if (st == TFL_OK && !tfl__cudnn_batch_norm(k, in, &st)) {
        /* tapeflow's kernel: cuDNN off, absent, or refusing the shape (cudnn_norm.c) */
        const tfl_tensor *x = in[0];
        const int64_t c = x->shape[x->rank - 1];
        st = tfl__cuda_check(k->dev,
                             tflcu_batch_norm(x->dtype, tfl__data(x), tfl__data(in[1]),
                                              tfl__data(in[2]), tfl__data(in[3]), tfl__data(in[4]),
                                              tfl__data(k->out), x->numel, c,
                                              ((const tfl__batch_norm_attrs *)k->attrs)->epsilon,
                                              tfl__cuda_stream(k->dev)),
                             "BatchNorm");
    }
    for (int i = 0; i < 5; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* LayerNorm (x, gamma, beta) and LayerNormGrad (dy, x, gamma): one warp per row (k_reduce.cu) */
static tfl_status k_layer_norm(const tfl__kcall *k)
{
    tfl_tensor *tmp[3] = {NULL};
    const tfl_tensor *in[3];
    tfl_status st = contiguous_inputs(k, 3, in, tmp);
    if (st == TFL_OK) {
        const bool grad = k->op == TFL_OP_LAYER_NORM_GRAD;
        const tfl_tensor *x = grad ? in[1] : in[0];
        const int64_t n = x->shape[x->rank - 1], rows = n ? x->numel / n : 0;
        st = tfl__cuda_check(k->dev,
                             tflcu_layer_norm(x->dtype, grad, tfl__data(in[0]), tfl__data(in[1]),
                                              tfl__data(in[2]), tfl__data(k->out), rows, n,
                                              ((const tfl__layer_norm_attrs *)k->attrs)->epsilon,
                                              tfl__cuda_stream(k->dev)),
                             tfl__op_name(k->op));
    }
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* LayerNormParamGrad (dy, x) -> (2, C): the rows' statistics into a float64 scratch, then one
 * thread per feature (k_reduce.cu) */
static tfl_status k_layer_norm_param_grad(const tfl__kcall *k)
{
    tfl_tensor *tmp[2] = {NULL}, *stats = NULL;
    const tfl_tensor *in[2];
    tfl_status st = contiguous_inputs(k, 2, in, tmp);
    if (st == TFL_OK) {
        const tfl_tensor *x = in[1];
        const int64_t n = x->shape[x->rank - 1], rows = n ? x->numel / n : 0;
        int64_t len;
        if (tfl__mul_overflow_i64(rows ? rows : 1, 2, &len))
            st = tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED, "%s: %lld rows overflow int64",
                                tfl__op_name(k->op), (long long)rows);
        else if (!(stats = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_FLOAT64, 1, &len)))
            st = k->ctx->err_code;
        else
            st = tfl__cuda_check(
                k->dev,
                tflcu_ln_param_grad(x->dtype, tfl__data(in[0]), tfl__data(x), tfl__data(k->out),
                                    tfl__data(stats), rows, n,
                                    ((const tfl__layer_norm_attrs *)k->attrs)->epsilon,
                                    tfl__cuda_stream(k->dev)),
                tfl__op_name(k->op));
    }
    tfl_tensor_release(stats);
    for (int i = 0; i < 2; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* AttentionSoftmax (scores) and SoftmaxGrad (y, dy): one warp per row (k_reduce.cu) */
static tfl_status k_softmax_fused(const tfl__kcall *k)
{
    tfl_tensor *tmp[2] = {NULL};
    const tfl_tensor *in[2];
    const bool grad = k->op == TFL_OP_SOFTMAX_GRAD;
    tfl_status st = contiguous_inputs(k, grad ? 2 : 1, in, tmp);
    if (st == TFL_OK) {
        const tfl__softmax_attrs *a = k->attrs;
        const tfl_tensor *x = in[0];
        int64_t outer, n, inner;
        split_axis(x, a->axis, &outer, &n, &inner);
        void *s = tfl__cuda_stream(k->dev);
        int rc = grad ? tflcu_softmax_grad(x->dtype, tfl__data(x), tfl__data(in[1]),
                                           tfl__data(k->out), outer, n, inner, a->scale, s)
                      : tflcu_attention_softmax(x->dtype, tfl__data(x), tfl__data(k->out), outer,
                                                x->shape[x->rank - 2], n, a->causal, a->scale, s);
        st = tfl__cuda_check(k->dev, rc, tfl__op_name(k->op));
    }
    for (int i = 0; i < 2; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* ---- BatchNormalization in training mode (k_reduce.cu; BatchNormTraining is BatchNorm's
 * kernel with the moments) ----------------------------------------------------------------- */

/* a float64 scratch of the partial sums of x (rows, c): tflcu_bn_train_blocks * 2 c doubles;
 * *part NULL when there are none; the error kept */
static tfl_status bn_partials(const tfl__kcall *k, int64_t rows, int64_t c, tfl_tensor **part)
{
    int64_t len;
    *part = NULL;
    const int64_t nb = tflcu_bn_train_blocks(rows, c);
    if (nb == 0) return TFL_OK;
    if (tfl__mul_overflow_i64(nb, 2, &len) || tfl__mul_overflow_i64(len, c, &len))
        return tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED,
                              "%s: %lld blocks of sums of %lld channels overflow int64",
                              tfl__op_name(k->op), (long long)nb, (long long)c);
    *part = tfl__tensor_alloc(k->ctx, k->dev, TFL_DTYPE_FLOAT64, 1, &len);
    return *part ? TFL_OK : k->ctx->err_code;
}

/* BatchMoments (x) -> (2, C): the mean and biased variance per channel */
static tfl_status k_batch_moments(const tfl__kcall *k)
{
    tfl_tensor *tmp = NULL, *part = NULL;
    const tfl_tensor *x = NULL;
    tfl_status st = contiguous_inputs(k, 1, &x, &tmp);
    const int64_t c = st == TFL_OK ? x->shape[x->rank - 1] : 0, rows = c ? x->numel / c : 0;
    if (st == TFL_OK) st = bn_partials(k, rows, c, &part);
    if (st == TFL_OK)
        st = tfl__cuda_check(k->dev,
                             tflcu_batch_moments(x->dtype, tfl__data(x), tfl__data(k->out),
                                                 part ? tfl__data(part) : NULL, rows, c,
                                                 tfl__cuda_stream(k->dev)),
                             "BatchMoments");
    tfl_tensor_release(part);
    tfl_tensor_release(tmp);
    return st;
}

/* BatchNormTraining (x, moments, gamma, beta): BatchNorm's kernel, mean and variance the two
 * rows of the moments */
static tfl_status k_batch_norm_training(const tfl__kcall *k)
{
    tfl_tensor *tmp[4] = {NULL};
    const tfl_tensor *in[4];
    tfl_status st = contiguous_inputs(k, 4, in, tmp);
    if (st == TFL_OK) {
        const tfl_tensor *x = in[0];
        const int64_t c = x->shape[x->rank - 1];
        const char *mo = tfl__data(in[1]);
        st = tfl__cuda_check(
            k->dev,
            tflcu_batch_norm(
                x->dtype, tfl__data(x), mo, mo + (size_t)c * tfl_dtype_size((tfl_dtype)x->dtype),
                tfl__data(in[3]), tfl__data(in[2]), tfl__data(k->out), x->numel, c,
                ((const tfl__batch_norm_attrs *)k->attrs)->epsilon, tfl__cuda_stream(k->dev)),
            "BatchNormTraining");
    }
    for (int i = 0; i < 4; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* BatchNormParamGrad (dy, x, moments) -> (2, C): dgamma and dbeta per channel */
static tfl_status k_batch_norm_param_grad(const tfl__kcall *k)
{
    tfl_tensor *tmp[3] = {NULL}, *part = NULL;
    const tfl_tensor *in[3] = {NULL};
    tfl_status st = contiguous_inputs(k, 3, in, tmp);
    const tfl_tensor *x = in[1];
    const int64_t c = st == TFL_OK ? x->shape[x->rank - 1] : 0, rows = c ? x->numel / c : 0;
    if (st == TFL_OK) st = bn_partials(k, rows, c, &part);
    if (st == TFL_OK)
        st = tfl__cuda_check(
            k->dev,
            tflcu_batch_norm_param_grad(x->dtype, tfl__data(in[0]), tfl__data(x), tfl__data(in[2]),
                                        tfl__data(k->out), part ? tfl__data(part) : NULL, rows, c,
                                        ((const tfl__batch_norm_attrs *)k->attrs)->epsilon,
                                        tfl__cuda_stream(k->dev)),
            "BatchNormParamGrad");
    tfl_tensor_release(part);
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* BatchNormTrainingGrad (dy, x, moments, gamma, sums) -> dx: the coefficients from the sums,
 * then one pass */
static tfl_status k_batch_norm_training_grad(const tfl__kcall *k)
{
    tfl_tensor *tmp[5] = {NULL}, *coef = NULL;
    const tfl_tensor *in[5] = {NULL};
    tfl_status st = contiguous_inputs(k, 5, in, tmp);
    const tfl_tensor *x = in[1];
    const int64_t c = st == TFL_OK ? x->shape[x->rank - 1] : 0, rows = c ? x->numel / c : 0;
    if (st == TFL_OK && rows > 0) {
        const int64_t n3 = 3 * c; /* c <= x's elements */
        coef = tfl__tensor_alloc(k->ctx, k->dev, (tfl_dtype)x->dtype, 1, &n3);
        if (!coef) st = k->ctx->err_code;
    }
    if (st == TFL_OK && rows > 0)
        st = tfl__cuda_check(
            k->dev,
            tflcu_batch_norm_training_grad(
                x->dtype, tfl__data(in[0]), tfl__data(x), tfl__data(in[2]), tfl__data(in[3]),
                tfl__data(in[4]), tfl__data(k->out), tfl__data(coef), rows, c,
                ((const tfl__batch_norm_attrs *)k->attrs)->epsilon, tfl__cuda_stream(k->dev)),
            "BatchNormTrainingGrad");
    tfl_tensor_release(coef);
    for (int i = 0; i < 5; i++)
        tfl_tensor_release(tmp[i]);
    return st;
}

/* ---- MatMul: cuBLAS, batched ----------------------------------------------------------------- */

/*
 * Row-major C (m x n) = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets B
 * first. Inputs are made contiguous; a batched input whose batch axes differ from C's (a
 * broadcast) is expanded to C's batch first (simple and correct; the common cases, equal batch
 * or a rank-2 operand shared by every batch, need no copy: batch stride = its size or 0).
 */
static const tfl_tensor *batch_operand(const tfl__kcall *k, const tfl_tensor *t, int batch_rank,
                                       const int64_t *batch, tfl_tensor **tmp, long long *stride)
{
    *tmp = NULL;
    int64_t rows = t->shape[t->rank - 2], cols = t->shape[t->rank - 1];
    int t_batch = t->rank - 2;
    bool all_one = true, same = t_batch == batch_rank;
    for (int d = 0; d < t_batch; d++) {
        all_one &= t->shape[d] == 1;
        if (same) same = t->shape[d] == batch[d];
    }
    if (all_one || same) {
        *stride = all_one ? 0 : (long long)(rows * cols);
        return tfl__cuda_contiguous(k, t, tmp);
    }
    int64_t shape[TFL_MAX_RANK];
    memcpy(shape, batch, sizeof(int64_t) * (size_t)batch_rank);
    shape[batch_rank] = rows;
    shape[batch_rank + 1] = cols;
    tfl_tensor *c = tfl__tensor_alloc(k->ctx, k->dev, (tfl_dtype)t->dtype, batch_rank + 2, shape);
    if (!c) return NULL;
    tflcu_iter it;
    tfl__cuda_iter(&it, c, 1, &t);
    if (tfl__cuda_check(
            k->dev,
            tflcu_copy((int)tfl_dtype_size((tfl_dtype)t->dtype), &it, tfl__cuda_stream(k->dev)),
            "MatMul (broadcast)") != TFL_OK) {
        tfl_tensor_release(c);
        return NULL;
    }
    *tmp = c;
    *stride = (long long)(rows * cols);
    return c;
}

static tfl_status k_matmul(const tfl__kcall *k)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    tfl_tensor *c = k->out;
    unsigned flags = ((const tfl__matmul_attrs *)k->attrs)->flags;
    bool ta = flags & TFL_TRANSPOSE_A, tb = flags & TFL_TRANSPOSE_B;
    int batch_rank = c->rank - 2;
    int64_t m = c->shape[c->rank - 2], n = c->shape[c->rank - 1];
    const tfl_tensor *a0 = k->in[0], *b0 = k->in[1];
    int64_t kk = a0->shape[a0->rank - (ta ? 2 : 1)];
    int64_t nbatch = tfl__numel(batch_rank, c->shape);
    size_t es = tfl_dtype_size((tfl_dtype)c->dtype);
    if (c->numel == 0) return TFL_OK;
    if (kk == 0) return tfl__dev_memset(k->dev, NULL, tfl__data(c), 0, (size_t)c->numel * es);
    if (m > INT32_MAX || n > INT32_MAX || kk > INT32_MAX || nbatch > INT32_MAX)
        return tfl__set_error(k->ctx, TFL_UNIMPLEMENTED,
                              "%s: dimensions above 2^31-1 are not supported on %s",
                              tfl__op_name(k->op), k->dev->name);
    tfl_tensor *ta_tmp = NULL, *tb_tmp = NULL;
    long long sa = 0, sb = 0;
    const tfl_tensor *a = batch_operand(k, a0, batch_rank, c->shape, &ta_tmp, &sa);
    const tfl_tensor *b = a ? batch_operand(k, b0, batch_rank, c->shape, &tb_tmp, &sb) : NULL;
    tfl_status st = k->ctx->err_code;
    if (b) {
        cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
        int M = (int)n, N = (int)m, K = (int)kk;
        int ldb = (int)(tb ? kk : n), lda = (int)(ta ? m : kk), ldc = (int)n;
        long long sc = (long long)(m * n);
        int batches = (int)nbatch;
        const void *pa = tfl__data(a), *pb = tfl__data(b);
        void *pc = tfl__data(c);
        cublasStatus_t bs = CUBLAS_STATUS_NOT_SUPPORTED;
        switch ((tfl_dtype)c->dtype) {
        case TFL_DTYPE_FLOAT32: {
            const float one = 1.0f, zero = 0.0f;
            tfl__cuda_blas_policy(k);
            bs = cublasSgemmStridedBatched(cu->blas, opb, opa, M, N, K, &one, pb, ldb, sb, pa, lda,
                                           sa, &zero, pc, ldc, sc, batches);
            break;
        }
        case TFL_DTYPE_FLOAT64: {
            const double one = 1.0, zero = 0.0;
            bs = cublasDgemmStridedBatched(cu->blas, opb, opa, M, N, K, &one, pb, ldb, sb, pa, lda,
                                           sa, &zero, pc, ldc, sc, batches);
            break;
        }
        case TFL_DTYPE_COMPLEX64: {
            const cuComplex one = {1.0f, 0.0f}, zero = {0.0f, 0.0f};
            bs = cublasCgemmStridedBatched(cu->blas, opb, opa, M, N, K, &one, pb, ldb, sb, pa, lda,
                                           sa, &zero, pc, ldc, sc, batches);
            break;
        }
        case TFL_DTYPE_COMPLEX128: {
            const cuDoubleComplex one = {1.0, 0.0}, zero = {0.0, 0.0};
            bs = cublasZgemmStridedBatched(cu->blas, opb, opa, M, N, K, &one, pb, ldb, sb, pa, lda,
                                           sa, &zero, pc, ldc, sc, batches);
            break;
        }
        case TFL_DTYPE_FLOAT16:
        case TFL_DTYPE_BFLOAT16: { /* float32 compute, half storage */
            const float one = 1.0f, zero = 0.0f;
            cudaDataType t = c->dtype == TFL_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
            bs = cublasGemmStridedBatchedEx(cu->blas, opb, opa, M, N, K, &one, pb, t, ldb, sb, pa,
                                            t, lda, sa, &zero, pc, t, ldc, sc, batches,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            break;
        }
        default:
            break;
        }
        st = bs == CUBLAS_STATUS_SUCCESS
                 ? TFL_OK
                 : tfl__set_error(k->ctx, TFL_INTERNAL, "%s: cuBLAS failed on %s: %s",
                                  tfl__op_name(k->op), k->dev->name, cublasGetStatusString(bs));
    }
    tfl_tensor_release(ta_tmp);
    tfl_tensor_release(tb_tmp);
    return st;
}

/* FusedMatMul (a, b, bias): cuBLAS's product, then the bias added in place by Add's functor
 * (each element read and written by one thread), so the roundings are MatMul then Add's */
static tfl_status k_fused_matmul(const tfl__kcall *k)
{
    tfl__kcall mm = *k;
    mm.n_in = 2;
    TFL_TRY(k_matmul(&mm));
    if (k->out->numel == 0) return TFL_OK;
    const tfl_tensor *in[2] = {k->out, k->in[2]};
    tflcu_iter it;
    tfl__cuda_iter(&it, k->out, 2, in);
    return tfl__cuda_check(k->dev,
                           tflcu_elementwise(TFL_OP_ADD, k->out->dtype, &it, 0.0,
                                             tfl__cuda_stream(k->dev)),
                           tfl__op_name(k->op));
}

/* ---- the table ------------------------------------------------------------------------------ */

#define M_F (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))
#define M_R (TFL_MASK_INT | M_F)
#define M_CMP (M_R | TFL_DT(BOOL))
/* the lines of TFL_EW_LIST with GPU functors (k_elementwise.cu), by their `gpu` set; the sets
 * with float32 run float16 and bfloat16 too, through the float32 formulas (Half) */
#define GPU_MASK_R (M_R | TFL_MASK_HALF)
#define GPU_MASK_F (M_F | TFL_MASK_HALF)
#define GPU_MASK_RB (M_CMP | TFL_MASK_HALF)
#define GPU_MASK_B TFL_DT(BOOL)
#define GPU_MASK_C TFL_MASK_COMPLEX
#define EW_(id, gpu) [TFL_OP_##id] = {k_elementwise, GPU_MASK_##gpu, NULL},
#define EW_K_U(id, gpu) EW_(id, gpu)
#define EW_K_UA EW_K_U
#define EW_K_B EW_K_U
#define EW_K_D(id, gpu) EW_(id, gpu) EW_(id##_GRAD, gpu)
#define EW_K_DA EW_K_D
#define EW_ON_R TFL_EW_KEEP
#define EW_ON_F TFL_EW_KEEP
#define EW_ON_RB TFL_EW_KEEP
#define EW_ON_B TFL_EW_KEEP
#define EW_ON_C TFL_EW_KEEP
#define EW_ON_NONE TFL_EW_DROP
#define EW_KERNELS_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves)                              \
    EW_ON_##gpu(EW_K_##kind(id, gpu))

const tfl__kernel tfl__cuda_main_kernels[TFL_OP_COUNT] = {
    [TFL_OP_IDENTITY] = {k_copy, TFL_MASK_ALL, NULL},
    [TFL_OP_BROADCAST_TO] = {k_copy, TFL_MASK_ALL, NULL},
    [TFL_OP_CAST] = {k_cast, TFL_MASK_REAL | TFL_DT(BOOL), NULL},
    TFL_EW_LIST(EW_KERNELS_, ~) /* the elementwise ops (op_list.h) */
    [TFL_OP_SUM] = {k_reduce, M_R, NULL},
    [TFL_OP_MEAN] = {k_reduce, M_R, NULL},
    [TFL_OP_MAX] = {k_reduce, M_R, NULL},
    [TFL_OP_MIN] = {k_reduce, M_R, NULL},
    [TFL_OP_ARGMAX] = {k_arg, M_R, NULL},
    [TFL_OP_ARGMIN] = {k_arg, M_R, NULL},
    [TFL_OP_SOFTMAX] = {k_softmax, M_F, NULL},
    [TFL_OP_LOG_SOFTMAX] = {k_softmax, M_F, NULL},
    [TFL_OP_SOFTMAX_XENT] = {k_softmax_xent, M_F, NULL},
    [TFL_OP_SPARSE_SOFTMAX_XENT] = {k_sparse_softmax_xent, M_F, NULL},
    [TFL_OP_SPARSE_SOFTMAX_XENT_GRAD] = {k_sparse_softmax_xent, M_F, NULL},
    [TFL_OP_DROPOUT] = {k_dropout, M_F, NULL},
    [TFL_OP_BATCH_NORM] = {k_batch_norm, M_F, NULL},
    [TFL_OP_LAYER_NORM] = {k_layer_norm, M_F, NULL},
    [TFL_OP_LAYER_NORM_GRAD] = {k_layer_norm, M_F, NULL},
    [TFL_OP_ATTENTION_SOFTMAX] = {k_softmax_fused, M_F, NULL},
    [TFL_OP_SOFTMAX_GRAD] = {k_softmax_fused, M_F, NULL},
    [TFL_OP_LAYER_NORM_PARAM_GRAD] = {k_layer_norm_param_grad, M_F, NULL},
    [TFL_OP_BATCH_MOMENTS] = {k_batch_moments, M_F, NULL},
    [TFL_OP_BATCH_NORM_TRAINING] = {k_batch_norm_training, M_F, NULL},
    [TFL_OP_BATCH_NORM_TRAINING_GRAD] = {k_batch_norm_training_grad, M_F, NULL},
    [TFL_OP_BATCH_NORM_PARAM_GRAD] = {k_batch_norm_param_grad, M_F, NULL},
    [TFL_OP_MATMUL] = {k_matmul, M_F | TFL_MASK_COMPLEX | TFL_MASK_HALF, NULL},
    [TFL_OP_FUSED_MATMUL] = {k_fused_matmul, M_F | TFL_MASK_HALF, NULL},
    /* cuda_conv.c: cuDNN, or im2col + cuBLAS */
    /* float16 and bfloat16 through cuDNN, declined where cuDNN does not take the shape */
    [TFL_OP_CONV2D] = {tfl__cuda_conv2d, M_F | TFL_MASK_HALF, NULL},
    [TFL_OP_CONV2D_BACKPROP_INPUT] = {tfl__cuda_conv2d_backprop_input, M_F | TFL_MASK_HALF, NULL},
    [TFL_OP_CONV2D_BACKPROP_FILTER] = {tfl__cuda_conv2d_backprop_filter, M_F | TFL_MASK_HALF, NULL},
};
