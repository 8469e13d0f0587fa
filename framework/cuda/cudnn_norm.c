/*
 * framework/cuda/cudnn_norm.c: the BatchNorm op through cuDNN's legacy
 * cudnnBatchNormalizationForwardInference, and Softmax / LogSoftmax over the last axis through
 * cudnnSoftmaxForward, built when TFL_HAVE_CUDNN. cuda_ops.c's kernels call
 * tfl__cudnn_batch_norm / tfl__cudnn_softmax first and run their own kernels (k_shape.cu,
 * k_reduce.cu) when they answer false.
 *
 *  - The op: y = (x - mean[c]) scale[c] / sqrt(variance[c] + epsilon) + offset[c] over x's
 *    last axis c, with (C) parameters (framework/ops/norm.c). cuDNN's inference formula,
 *    y = bnScale (x - estimatedMean) / sqrt(epsilon + estimatedVariance) + bnBias, is the same
 *    with the op's own mean and variance as the "estimated" statistics, whether they are the
 *    batch's (the layer in training: moments, then this op) or the moving ones (inference).
 *    The op's gradient is a composition of other ops (framework/ops/grad_*), untouched here.
 *  - Layouts (every operand contiguous): rank 4 x (N, H, W, C) is an NHWC tensor and
 *    CUDNN_BATCHNORM_SPATIAL (one parameter per C, over N, H, W); any other rank is read as
 *    (rows, C), an NCHW (rows, C, 1, 1) tensor and CUDNN_BATCHNORM_PER_ACTIVATION (one
 *    parameter per C H W = C, over rows): both normalize over every axis but the last, as
 *    the op does. The parameters are a (1, C, 1, 1) tensor of x's data type (cuDNN's rule for
 *    float and double data).
 *  - float32 and float64 (float16/bfloat16 reach the kernel as float32). The rounding differs
 *    from the CPU's (which rounds scale / sqrt(variance + epsilon) once, from double; cuDNN's
 *    is undocumented): within the harness's tolerances, not bit for bit. Elementwise, so
 *    deterministic.
 *  - Refused (tapeflow's kernel runs, logged once per device at INFO): TFL_CUDNN=0 (cuDNN
 *    off, see cudnn_conv.c), tensors of 2^31 elements or more (cuDNN counts in int), an
 *    epsilon below CUDNN_BN_MIN_EPSILON, descriptors cuDNN refuses. A call failing at run
 *    time is logged at WARNING and turns cuDNN's BatchNorm off for that data type and layout
 *    (rank 4 NHWC, or not) on the device.
 *  - Softmax and LogSoftmax, float32 only (float64 stays on tapeflow's kernel, which sums in
 *    double as the CPU: cuDNN's float64 LogSoftmax was off by 2e-14 relative on an H100),
 *    only over the last axis (inner size 1, more
 *    than one class): tapeflow's kernel gives each row one thread, which there reads its row
 *    with a stride of the row length between neighbouring threads (uncoalesced) and three
 *    times, and leaves most of the GPU idle when rows are few and long; cuDNN spreads a row
 *    over a warp or block. Over another axis, neighbouring threads read neighbouring
 *    elements and tapeflow's kernel stays (not timed yet: see README.md). The rows are an
 *    NCHW (rows, n, 1, 1) tensor, CUDNN_SOFTMAX_MODE_CHANNEL, CUDNN_SOFTMAX_ACCURATE (the
 *    maximum subtracted first, as the CPU) or CUDNN_SOFTMAX_LOG. The CPU and tapeflow's kernel
 *    sum in double; cuDNN does not document its accumulation: within the harness's
 *    tolerances, not bit for bit. Refusals and failures as BatchNorm's (per data type).
 *  - Descriptors are made and destroyed per call (host-side records, no device work); the
 *    handle is cudnn_conv.c's, one per device, bound to the device's stream. cudnnSoftmax-
 *    Forward and the tensor descriptor calls are not deprecated in cuDNN 9; the BatchNorm
 *    call and its mode type are (README.md counts them).
 */
#include "cuda_internal.h"

#include <cudnn.h>

#include <limits.h>
#include <stdio.h>

/* tfl__cuda_device.dnn_norm's bits: a refusal logged (INFO, once per device and op), and a
 * cuDNN call that failed at run time (tapeflow's kernel from then on) per op, data type and,
 * for BatchNorm, layout (rank 4 NHWC or (rows, C)): a failure of one combination leaves the
 * others on cuDNN */
#define NORM_REFUSAL_LOGGED 1u
#define SOFTMAX_REFUSAL_LOGGED 2u
#define NORM_OFF(dbl, nhwc) (0x10u << (((dbl) ? 2 : 0) + ((nhwc) ? 1 : 0))) /* 0x10 .. 0x80 */
#define SOFTMAX_OFF(dbl) (0x100u << ((dbl) ? 1 : 0))                        /* 0x100, 0x200 */

/* the op's name and x's shape, "(2, 3)", for the log lines */
static const char *op_name(const tfl__kcall *k)
{
    return k->op == TFL_OP_BATCH_NORM    ? "BatchNorm"
           : k->op == TFL_OP_LOG_SOFTMAX ? "LogSoftmax"
                                         : "Softmax";
}
static const char *shape_str(const tfl_tensor *x, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < x->rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)x->shape[d]);
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

static void refused(const tfl__kcall *k, unsigned logged_bit, const tfl_tensor *x, const char *why)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    if (cu->dnn_norm & logged_bit) return;
    cu->dnn_norm |= logged_bit;
    char s[128];
    tfl__log(k->ctx, TFL_LOG_INFO,
             "%s on %s runs tapeflow's kernel, not cuDNN, for x of shape %s: %s "
             "(logged once per device)",
             op_name(k), k->dev->name, shape_str(x, s, sizeof s), why);
}

/* a call failing at run time: logged, off_bit's combination (op, dtype, layout) off for the
 * device; false (the caller runs tapeflow's kernel). While the device's work is captured into
 * a graph (recorded steps): the call fails instead (true, *st the error), so that the capture
 * fails and the recorded calls run as they ran, cuDNN's included, not another kernel. */
static bool failed(const tfl__kcall *k, unsigned off_bit, const tfl_tensor *x, cudnnStatus_t r,
                   tfl_status *st)
{
    char s[128];
    if (tfl__cuda(k->dev)->capturing) {
        *st = tfl__set_error(k->ctx, TFL_FAILED_PRECONDITION, "%s on %s: cuDNN failed while its "
                             "work was captured into a CUDA graph: %s", op_name(k), k->dev->name,
                             cudnnGetErrorString(r));
        return true;
    }
    tfl__cuda(k->dev)->dnn_norm |= off_bit;
    tfl__log(k->ctx, TFL_LOG_WARNING,
             "%s on %s: cuDNN failed for x of shape %s (%s): %s runs tapeflow's kernel on this "
             "device from now on for %s%s",
             op_name(k), k->dev->name, shape_str(x, s, sizeof s), cudnnGetErrorString(r),
             op_name(k), tfl_dtype_name((tfl_dtype)x->dtype),
             k->op != TFL_OP_BATCH_NORM ? ""
             : x->rank == 4             ? " NHWC x"
                                        : " x of rank other than 4");
    (void)cudaGetLastError(); /* a launch error of the failed call must not stick */
    return false;
}

static bool data_type(const tfl_tensor *x, cudnnDataType_t *dt)
{
    if (x->dtype == TFL_DTYPE_FLOAT32)
        *dt = CUDNN_DATA_FLOAT;
    else if (x->dtype == TFL_DTYPE_FLOAT64)
        *dt = CUDNN_DATA_DOUBLE;
    else
        return false;
    return true;
}

static const char too_big[] = "it has 2^31 or more elements (cuDNN's legacy API counts in int)";

/* the descriptors of x (and y) and of the parameters; CUDNN_STATUS_SUCCESS or cuDNN's
 * complaint */
static cudnnStatus_t describe(cudnnTensorDescriptor_t xd, cudnnTensorDescriptor_t pd,
                              const tfl_tensor *x, cudnnDataType_t dt, cudnnBatchNormMode_t *mode)
{
    const int64_t c = x->shape[x->rank - 1];
    cudnnStatus_t r;
    if (x->rank == 4) {
        *mode = CUDNN_BATCHNORM_SPATIAL;
        r = cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, dt, (int)x->shape[0], (int)c,
                                       (int)x->shape[1], (int)x->shape[2]);
    } else {
        *mode = CUDNN_BATCHNORM_PER_ACTIVATION;
        r = cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, dt, (int)(x->numel / c), (int)c, 1,
                                       1);
    }
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnSetTensor4dDescriptor(pd, CUDNN_TENSOR_NCHW, dt, 1, (int)c, 1, 1);
    return r;
}

bool tfl__cudnn_batch_norm(const tfl__kcall *k, const tfl_tensor *const in[5], tfl_status *st)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    const tfl_tensor *x = in[0];
    cudnnDataType_t dt;
    if (x->numel == 0 || !data_type(x, &dt)) return false;
    const unsigned off = NORM_OFF(dt == CUDNN_DATA_DOUBLE, x->rank == 4);
    if (cu->dnn_norm & off) return false;
    bool no_mem;
    cudnnHandle_t h = tfl__cudnn_handle(k, &no_mem);
    if (no_mem) { /* no host memory for cuDNN's state: the op fails, never another kernel */
        *st = TFL_RESOURCE_EXHAUSTED;
        return true;
    }
    if (!h) return false; /* cuDNN off (logged by cudnn_conv.c) */
    const double eps = ((const tfl__batch_norm_attrs *)k->attrs)->epsilon;
    if (x->numel > INT_MAX) {
        refused(k, NORM_REFUSAL_LOGGED, x, too_big);
        return false;
    }
    if (eps < CUDNN_BN_MIN_EPSILON) {
        char why[96];
        snprintf(why, sizeof why, "epsilon %g is below cuDNN's minimum %g", eps,
                 (double)CUDNN_BN_MIN_EPSILON);
        refused(k, NORM_REFUSAL_LOGGED, x, why);
        return false;
    }
    cudnnTensorDescriptor_t xd = NULL, pd = NULL;
    bool handled = false; /* a failure that fails the call (failed()) */
    cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
    cudnnStatus_t r = cudnnCreateTensorDescriptor(&xd);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnCreateTensorDescriptor(&pd);
    if (r == CUDNN_STATUS_SUCCESS) r = describe(xd, pd, x, dt, &mode);
    if (r != CUDNN_STATUS_SUCCESS) {
        char why[160];
        snprintf(why, sizeof why, "cuDNN refuses the descriptors: %s", cudnnGetErrorString(r));
        refused(k, NORM_REFUSAL_LOGGED, x, why);
    } else {
        const float f1 = 1.0f, f0 = 0.0f;
        const double d1 = 1.0, d0 = 0.0;
        const bool dbl = dt == CUDNN_DATA_DOUBLE;
        /* in: x, mean, variance, offset, scale */
        r = cudnnBatchNormalizationForwardInference(
            h, mode, dbl ? (const void *)&d1 : (const void *)&f1,
            dbl ? (const void *)&d0 : (const void *)&f0, xd, tfl__data(x), xd, tfl__data(k->out),
            pd, tfl__data(in[4]), tfl__data(in[3]), tfl__data(in[1]), tfl__data(in[2]), eps);
        if (r == CUDNN_STATUS_SUCCESS)
            *st = TFL_OK;
        else
            handled = failed(k, off, x, r, st);
    }
    if (pd) (void)cudnnDestroyTensorDescriptor(pd);
    if (xd) (void)cudnnDestroyTensorDescriptor(xd);
    return r == CUDNN_STATUS_SUCCESS || handled;
}

bool tfl__cudnn_softmax(const tfl__kcall *k, const tfl_tensor *x, int64_t outer, int64_t n,
                        int64_t inner, tfl_status *st)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    cudnnDataType_t dt;
    /* where it pays: the last axis, more than one class (see the top); float32 only:
     * cuDNN's float64 LogSoftmax was 2e-14 relative off on an H100 (-2.4076059644444285
     * for -2.4076059644443801, the CPU's and tapeflow's kernel's), and float64 is for
     * accuracy */
    if (x->numel == 0 || inner != 1 || n < 2 || !data_type(x, &dt) || dt != CUDNN_DATA_FLOAT)
        return false;
    const unsigned off = SOFTMAX_OFF(dt == CUDNN_DATA_DOUBLE);
    if (cu->dnn_norm & off) return false;
    bool no_mem;
    cudnnHandle_t h = tfl__cudnn_handle(k, &no_mem);
    if (no_mem) { /* no host memory for cuDNN's state: the op fails, never another kernel */
        *st = TFL_RESOURCE_EXHAUSTED;
        return true;
    }
    if (!h) return false;
    if (x->numel > INT_MAX) {
        refused(k, SOFTMAX_REFUSAL_LOGGED, x, too_big);
        return false;
    }
    cudnnTensorDescriptor_t xd = NULL;
    bool handled = false;
    cudnnStatus_t r = cudnnCreateTensorDescriptor(&xd);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, dt, (int)outer, (int)n, 1, 1);
    if (r != CUDNN_STATUS_SUCCESS) {
        char why[160];
        snprintf(why, sizeof why, "cuDNN refuses the descriptor: %s", cudnnGetErrorString(r));
        refused(k, SOFTMAX_REFUSAL_LOGGED, x, why);
    } else {
        const float f1 = 1.0f, f0 = 0.0f;
        const double d1 = 1.0, d0 = 0.0;
        const bool dbl = dt == CUDNN_DATA_DOUBLE;
        r = cudnnSoftmaxForward(
            h, k->op == TFL_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
            CUDNN_SOFTMAX_MODE_CHANNEL, dbl ? (const void *)&d1 : (const void *)&f1, xd,
            tfl__data(x), dbl ? (const void *)&d0 : (const void *)&f0, xd, tfl__data(k->out));
        if (r == CUDNN_STATUS_SUCCESS)
            *st = TFL_OK;
        else
            handled = failed(k, off, x, r, st);
    }
    if (xd) (void)cudnnDestroyTensorDescriptor(xd);
    return r == CUDNN_STATUS_SUCCESS || handled;
}
