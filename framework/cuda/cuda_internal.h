/*
 * framework/cuda/cuda_internal.h: the CUDA device record and what the backend's host files
 * share. A GPU:N device is a tfl__device (first) plus its CUDA stream (every kernel of the
 * device runs on it, in issue order), its cuBLAS handle, a pinned staging buffer for small
 * host-to-device copies, and a device word for index checks.
 */
#ifndef TFL_CUDA_INTERNAL_H
#define TFL_CUDA_INTERNAL_H

#include "internal.h"
#include "ops/op.h"

#include "cu_launch.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#define TFL_CUDA_STAGING_BYTES ((size_t)4 << 20) /* pinned buffer for host -> device copies */

typedef struct tfl__cuda_device {
    tfl__device base;
    int ordinal;              /* the CUDA device number */
    int multi;                /* more than one GPU: set the current device before launches */
    cudaStream_t stream;      /* the device's own stream (NULL tfl__stream) */
    cublasHandle_t blas;      /* bound to stream */
    bool blas_tf32;           /* blas is in CUBLAS_TF32_TENSOR_OP_MATH (tfl__cuda_blas_policy) */
    void *staging;            /* pinned host memory, TFL_CUDA_STAGING_BYTES, or NULL */
    cudaEvent_t staging_done; /* recorded after the last copy out of staging */
    int64_t *check;           /* device word for index checks (tflcu_gather ...) */
    double *opt_scratch;      /* the gradient norms' partial sums (cuda_optim.c), or NULL */
    size_t total_mem;
    int cc_major, cc_minor;
    char gpu_name[256];
    struct tfl__cudnn_state *dnn; /* cudnn_conv.c: the cuDNN handle (bound to stream) and the
                                     algorithm cache, made on the first cuDNN op; or NULL */
    unsigned dnn_norm; /* cudnn_norm.c: refusals logged, and the (op, dtype, layout)
                          combinations whose cuDNN call failed at run time (off since) */
    bool capturing;       /* the stream's work is being captured into a graph (cu_graph_*): the
                             host must not wait, index checks are read after each launch */
    bool captured_checks; /* the capture holds index checks (tflcu_gather, xent labels) */
} tfl__cuda_device;

static inline tfl__cuda_device *tfl__cuda(const tfl__device *dev)
{
    return (tfl__cuda_device *)(uintptr_t)dev;
}

/** Records INTERNAL "<what> failed on GPU:0: <CUDA's message>" unless err is cudaSuccess. */
tfl_status tfl__cuda_check(tfl__device *dev, int err, const char *what);

/**
 * Makes the device current on this thread when there are several GPUs (kernels launch on the
 * current device); with one GPU it stays current. A failure is recorded in the ctx and
 * returned ("cudaSetDevice failed on GPU:1: ...").
 */
static inline tfl_status tfl__cuda_use(tfl__device *dev)
{
    const tfl__cuda_device *cu = tfl__cuda(dev);
    return cu->multi ? tfl__cuda_check(dev, cudaSetDevice(cu->ordinal), "cudaSetDevice") : TFL_OK;
}

/**
 * The device's stream, for a launch, after tfl__cuda_use. Its failure is in the ctx; the
 * stream is still returned, so the launch that follows fails too and its caller returns an
 * error status, while the ctx keeps the first, telling message.
 */
static inline void *tfl__cuda_stream(tfl__device *dev)
{
    (void)tfl__cuda_use(dev);
    return (void *)tfl__cuda(dev)->stream;
}

/**
 * Puts the device's cuBLAS handle in the math mode of the ctx's precision policy before a
 * float32 product: TF32 tensor cores under TFL_PRECISION_TF32, cuBLAS's default (float32
 * FMA, no TF32) otherwise. The handle is told only when the mode changes; a refusal keeps
 * the mode it had (the default math is always valid).
 */
static inline void tfl__cuda_blas_policy(const tfl__kcall *k)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    bool tf32 = tfl_ctx_precision(k->ctx) == TFL_PRECISION_TF32;
    if (cu->blas_tf32 == tf32) return;
    if (cublasSetMathMode(cu->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) ==
        CUBLAS_STATUS_SUCCESS)
        cu->blas_tf32 = tf32;
}

/** The kernel tables of the op families (cuda_ops.c, cuda_ops_shape.c). */
extern const tfl__kernel tfl__cuda_main_kernels[TFL_OP_COUNT];
extern const tfl__kernel tfl__cuda_shape_kernels[TFL_OP_COUNT];
/** MaxPool, AvgPool and their gradients (cuda_pool.c, k_pool.cu). */
extern const tfl__kernel tfl__cuda_pool_kernels[TFL_OP_COUNT];
/** The fused optimizer updates (cuda_optim.c, k_optim.cu). */
extern const struct tfl__opt_kernels tfl__cuda_opt_kernels;

/* helpers of the kernel files (cuda_ops.c) */
/** An iterator over out's shape with operands out and in[0..n-1] broadcast to it. */
void tfl__cuda_iter(tflcu_iter *it, const tfl_tensor *out, int n, const tfl_tensor *const *in);
/** t itself when contiguous, else a contiguous copy on dev in *tmp (release it after). NULL
 * with the error kept on failure. */
const tfl_tensor *tfl__cuda_contiguous(const tfl__kcall *k, const tfl_tensor *t, tfl_tensor **tmp);
/** Presets the check word to "none" (-1); tfl__cuda_check_read reads it back (synchronises)
 * and gives the first bad position, or -1. */
tfl_status tfl__cuda_check_reset(tfl__device *dev);
tfl_status tfl__cuda_check_read(tfl__device *dev, int64_t *first_bad);

/* ---- convolutions: cuda_conv.c (im2col + cuBLAS, always there) and cudnn_conv.c (cuDNN,
 * built when TFL_HAVE_CUDNN) ---- */
typedef enum tfl__conv_kind {
    TFL__CONV_FWD,        /* y = conv(x, w):       a = x, b = w  */
    TFL__CONV_BWD_DATA,   /* dx = backprop input:  a = w, b = dy */
    TFL__CONV_BWD_FILTER, /* dw = backprop filter: a = x, b = dy */
} tfl__conv_kind;
tfl_status tfl__cuda_conv2d(const tfl__kcall *k);
tfl_status tfl__cuda_conv2d_backprop_input(const tfl__kcall *k);
tfl_status tfl__cuda_conv2d_backprop_filter(const tfl__kcall *k);
/* (the host test of cuda_conv.c, framework/cuda/tests/, builds it without cuDNN) */
#if TFL_HAVE_CUDNN && !defined(TFL_CUDA_CONV_EMULATED)
/** Runs one convolution through cuDNN (a, b contiguous device operands, out the output):
 * true when cuDNN took it (*st: TFL_OK, or the error kept); false when cuDNN is off (TFL_CUDNN=0
 * in the environment) or has no algorithm for this shape: the caller runs im2col. */
bool tfl__cudnn_conv(const tfl__kcall *k, tfl__conv_kind kind, const tflcu_conv *g, const void *a,
                     const void *b, void *out, tfl_status *st);
/** Destroys the device's cuDNN handle and algorithm cache (device teardown). */
void tfl__cudnn_free(tfl__cuda_device *cu);
/** The device's cuDNN handle (a cudnnHandle_t, bound to the device's stream), made on first
 * use; NULL when cuDNN is off (TFL_CUDNN=0, version mismatch, set-up failure: logged), or,
 * with *failed true and RESOURCE_EXHAUSTED kept, when there was no host memory for its state:
 * then the op fails (a refused allocation never silently changes the kernel that runs). */
struct cudnnContext *tfl__cudnn_handle(const tfl__kcall *k, bool *failed);
/** BatchNorm through cuDNN (cudnn_norm.c; in: x, mean, variance, offset, scale, contiguous on
 * the device): true when cuDNN took it (*st TFL_OK); false when cuDNN is off or refuses the
 * shape (logged): the caller runs tapeflow's kernel; true with *st RESOURCE_EXHAUSTED when there
 * was no host memory for cuDNN's state (the op fails). */
bool tfl__cudnn_batch_norm(const tfl__kcall *k, const tfl_tensor *const in[5], tfl_status *st);
/** Softmax / LogSoftmax (k->op) of contiguous x read as (outer, n, inner) through cuDNN
 * (cudnn_norm.c): true when cuDNN took it (*st TFL_OK); false when cuDNN is off, the shape is
 * one where tapeflow's kernel stays (inner > 1, float64), or cuDNN refuses it: the caller runs
 * its own; true with *st RESOURCE_EXHAUSTED when there was no host memory for cuDNN's state. */
bool tfl__cudnn_softmax(const tfl__kcall *k, const tfl_tensor *x, int64_t outer, int64_t n,
                        int64_t inner, tfl_status *st);
#else
static inline bool tfl__cudnn_conv(const tfl__kcall *k, tfl__conv_kind kind, const tflcu_conv *g,
                                   const void *a, const void *b, void *out, tfl_status *st)
{
    (void)k, (void)kind, (void)g, (void)a, (void)b, (void)out, (void)st;
    return false;
}
static inline void tfl__cudnn_free(tfl__cuda_device *cu)
{
    (void)cu;
}
static inline bool tfl__cudnn_batch_norm(const tfl__kcall *k, const tfl_tensor *const in[5],
                                         tfl_status *st)
{
    (void)k, (void)in, (void)st;
    return false;
}
static inline bool tfl__cudnn_softmax(const tfl__kcall *k, const tfl_tensor *x, int64_t outer,
                                      int64_t n, int64_t inner, tfl_status *st)
{
    (void)k, (void)x, (void)outer, (void)n, (void)inner, (void)st;
    return false;
}
#endif

#endif /* TFL_CUDA_INTERNAL_H */
