/*
 * framework/cuda/tests/test_cudnn_emulated.c: the cuDNN path of the GPU convolutions
 * (framework/cuda/cudnn_conv.c with cuda_conv.c, the files themselves) on the host, against
 * the CPU kernels, with cuDNN's legacy calls replaced by the stand-ins below (defined here
 * under cuDNN's names, so they take the place of libcudnn's in this program; nothing of
 * libcudnn runs). The stand-ins follow cuDNN's documented semantics: NHWC tensors, the NHWC
 * filter format as KRSC (Cout, KH, KW, Cin), symmetric padding, cross-correlation, alpha 1 and
 * beta 0, and they refuse (CUDNN_STATUS_BAD_PARAM, counted) descriptors that do not fit
 * together or a workspace smaller than the algorithm asked for. Their algorithm lists put an
 * FFT algorithm first and non-deterministic ones before deterministic ones, so that the
 * choice rules are checked: no FFT, deterministic only in deterministic mode, never
 * BWD_FILTER_ALGO_3 (atomics) there even when it claims to be deterministic.
 * The timing searches (cudnnFind*AlgorithmEx) answer fixed lists, fastest first, with an FFT
 * algorithm, a tensor-core one, a 2 MiB-workspace one and atomics-based ones ahead of plain
 * ones, so that autotuning's rules are checked too: the fastest admissible algorithm taken
 * and logged once per shape, tensor cores only under the tf32 policy (run with the math type
 * timed), the workspace limit (TFL_CUDNN_WORKSPACE_MB), heuristics in deterministic mode.
 * Checked: the results (filter transposes included) for symmetric shapes through cuDNN and
 * for SAME padding with an odd total through the im2col fallback (logged once per shape);
 * the algorithm cache (no second query for a shape; more shapes than slots); deterministic
 * mode; a cuDNN call failing at run time (logged, the shape moved to im2col, the result
 * right); TFL_CUDNN=0; the handle and descriptors freed with the device.
 * BatchNorm and Softmax (framework/cuda/cudnn_norm.c, also compiled in): cudnn_norm_emu.c.
 */
#include "conv_emu.h"
#include "cudnn_emu.h"

#include <cudnn.h>

#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* ---- the stand-ins of cuDNN ------------------------------------------------------------------ */

struct cudnnFilterStruct {
    cudnnTensorFormat_t format;
    cudnnDataType_t dt;
    int k, c, h, w;
};
struct cudnnConvolutionStruct {
    int ph, pw, u, v, dh, dw;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    cudnnMathType_t math;
};

int dnn_creates, dnn_bad;
static int dnn_destroys, dnn_queries, dnn_finds, dnn_runs[3], dnn_fail_forward;
static int dnn_last_algo[3], dnn_last_math[3], dnn_find_math;


size_t cudnnGetVersion(void)
{
    return (size_t)CUDNN_MAJOR * 10000 + (size_t)CUDNN_MINOR * 100;
}
const char *cudnnGetErrorString(cudnnStatus_t status)
{
    return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : "stand-in error";
}
cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    *handle = calloc(1, sizeof **handle);
    dnn_creates++;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    free(handle);
    dnn_destroys++;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    (void)stream;
    handle->stream_set = 1;
    return CUDNN_STATUS_SUCCESS;
}
#define DESC(TYPE, CREATE, DESTROY)                                                                \
    cudnnStatus_t CREATE(TYPE *d)                                                                  \
    {                                                                                              \
        *d = calloc(1, sizeof **d);                                                                \
        dnn_creates++;                                                                             \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }                                                                                              \
    cudnnStatus_t DESTROY(TYPE d)                                                                  \
    {                                                                                              \
        free(d);                                                                                   \
        dnn_destroys++;                                                                            \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
DESC(cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor)
DESC(cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor)
DESC(cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
     cudnnDestroyConvolutionDescriptor)

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t dt, int n, int c, int h, int w)
{
    BAD(n <= 0 || c <= 0 || h <= 0 || w <= 0);
    *d = (struct cudnnTensorStruct){format, dt, n, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    BAD(k <= 0 || c <= 0 || h <= 0 || w <= 0);
    *d = (struct cudnnFilterStruct){format, dt, k, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u,
                                              int v, int dh, int dw, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute)
{
    BAD(ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0);
    *d = (struct cudnnConvolutionStruct){ph, pw, u, v, dh, dw, mode, compute, CUDNN_DEFAULT_MATH};
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math)
{
    d->math = math;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t cd,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int *n, int *c,
                                                    int *h, int *wo)
{
    BAD(x->c != w->c);
    *n = x->n;
    *c = w->k;
    *h = 1 + (x->h + 2 * cd->ph - ((w->h - 1) * cd->dh + 1)) / cd->u;
    *wo = 1 + (x->w + 2 * cd->pw - ((w->w - 1) * cd->dw + 1)) / cd->v;
    return CUDNN_STATUS_SUCCESS;
}

/* the descriptors of one convolution fit together (NHWC, one dtype, cuDNN's output size) */
static cudnnStatus_t fits(const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
                          const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t y)
{
    int n, c, h, wo;
    BAD(x->format != CUDNN_TENSOR_NHWC || y->format != CUDNN_TENSOR_NHWC ||
        w->format != CUDNN_TENSOR_NHWC);
    bool half = x->dt == CUDNN_DATA_BFLOAT16 || x->dt == CUDNN_DATA_HALF;
    BAD(x->dt != y->dt || x->dt != w->dt || cd->compute != (half ? CUDNN_DATA_FLOAT : x->dt));
    BAD(cd->mode != CUDNN_CROSS_CORRELATION);
    /* tensor cores: float (TF32) and the 16-bit types, which run on them only here */
    BAD(cd->math != CUDNN_FMA_MATH && x->dt != CUDNN_DATA_FLOAT && !half);
    BAD(cudnnGetConvolution2dForwardOutputDim(cd, x, w, &n, &c, &h, &wo) != CUDNN_STATUS_SUCCESS);
    BAD(n != y->n || c != y->c || h != y->h || wo != y->w);
    return CUDNN_STATUS_SUCCESS;
}

/* every algorithm asks for 1000 + its number bytes of workspace */
static size_t ws_need(int algo)
{
    return 1000 + (size_t)algo;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t y, const int requested,
    int *returned, cudnnConvolutionFwdAlgoPerf_t *p)
{
    (void)h;
    if (fits(x, w, cd, y) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    BAD(requested < 3);
    dnn_queries++;
    memset(p, 0, sizeof *p * 3);
    p[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_FFT, p[0].determinism = CUDNN_DETERMINISTIC;
    p[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, p[1].status = CUDNN_STATUS_NOT_SUPPORTED;
    p[2].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    p[2].determinism = CUDNN_DETERMINISTIC;
    for (int i = 0; i < 3; i++)
        p[i].memory = ws_need(p[i].algo);
    *returned = 3;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dx, const int requested,
    int *returned, cudnnConvolutionBwdDataAlgoPerf_t *p)
{
    (void)h;
    if (fits(dx, w, cd, dy) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    BAD(requested < 3);
    dnn_queries++;
    memset(p, 0, sizeof *p * 3);
    p[0].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, p[0].determinism = CUDNN_DETERMINISTIC;
    p[1].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, p[1].determinism = CUDNN_NON_DETERMINISTIC;
    p[2].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, p[2].determinism = CUDNN_DETERMINISTIC;
    for (int i = 0; i < 3; i++)
        p[i].memory = ws_need(p[i].algo);
    *returned = 3;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dw, const int requested,
    int *returned, cudnnConvolutionBwdFilterAlgoPerf_t *p)
{
    (void)h;
    if (fits(x, dw, cd, dy) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    BAD(requested < 4);
    dnn_queries++;
    memset(p, 0, sizeof *p * 4);
    p[0].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, p[0].determinism = CUDNN_DETERMINISTIC;
    p[1].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, p[1].determinism = CUDNN_NON_DETERMINISTIC;
    p[2].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, p[2].determinism = CUDNN_DETERMINISTIC;
    p[3].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, p[3].determinism = CUDNN_DETERMINISTIC;
    for (int i = 0; i < 4; i++)
        p[i].memory = ws_need(p[i].algo);
    *returned = 4;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h,
                                                      const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t cd,
                                                      const cudnnTensorDescriptor_t y,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t *size)
{
    (void)h;
    if (fits(x, w, cd, y) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    *size = ws_need(algo);
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *size)
{
    (void)h;
    if (fits(dx, w, cd, dy) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    *size = ws_need(algo);
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *size)
{
    (void)h;
    if (fits(x, dw, cd, dy) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    *size = ws_need(algo);
    return CUDNN_STATUS_SUCCESS;
}

/* The timing searches: each answers a fixed list, fastest first, as cudnnFind*AlgorithmEx
 * does: an FFT algorithm (never taken), one with tensor-core math (taken only under tf32),
 * one needing 2 MiB of workspace (taken when the limit allows), atomics-based ones in the
 * backprops (taken only outside deterministic mode), then plain ones. An algorithm whose
 * workspace is above the one offered is answered CUDNN_STATUS_ALLOC_FAILED, as cuDNN does.
 * The output buffer is scribbled on (the op's real run must overwrite it). */
typedef struct find_row {
    int algo;
    float ms;
    size_t memory;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
} find_row;
#define MiB2 ((size_t)2 << 20)
static const find_row find_fwd[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, 0.10f, 1004, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, 0.20f, 1002, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, 0.25f, MiB2, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 0.30f, 1001, CUDNN_DETERMINISTIC,
     CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 0.50f, 1000, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
};
static const find_row find_data[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, 0.10f, 1002, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, 0.15f, 1000, CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, 0.30f, 1001, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
};
static const find_row find_filter[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, 0.10f, 1002, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, 0.12f, 1003, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, 0.20f, 1000, CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, 0.40f, 1001, CUDNN_DETERMINISTIC, CUDNN_FMA_MATH},
};
#define FIND(NAME, PERF, ROWS, FITS, OUT_BYTES)                                                    \
    {                                                                                              \
        BAD(!h->stream_set);                                                                       \
        if (FITS != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;                           \
        int n_ = (int)(sizeof ROWS / sizeof ROWS[0]);                                              \
        BAD(requested < n_ || (bytes > 0 && !ws));                                                 \
        dnn_finds++;                                                                               \
        dnn_find_math = cd->math;                                                                  \
        if (bytes) memset(ws, 0x5a, bytes);                                                        \
        memset(out, 0x5a, OUT_BYTES);                                                              \
        memset(p, 0, sizeof *p * (size_t)n_);                                                      \
        for (int i = 0; i < n_; i++) {                                                             \
            p[i].algo = (PERF)ROWS[i].algo, p[i].time = ROWS[i].ms, p[i].memory = ROWS[i].memory;  \
            p[i].determinism = ROWS[i].det, p[i].mathType = ROWS[i].math;                          \
            p[i].status = ROWS[i].memory > bytes ? CUDNN_STATUS_ALLOC_FAILED : CUDNN_STATUS_SUCCESS; \
        }                                                                                          \
        *returned = n_;                                                                            \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }
static size_t dt_bytes(cudnnDataType_t dt)
{
    return dt == CUDNN_DATA_DOUBLE ? 8 : dt == CUDNN_DATA_FLOAT ? 4 : 2;
}
static size_t tensor_bytes(const cudnnTensorDescriptor_t t)
{
    return (size_t)t->n * t->c * t->h * t->w * dt_bytes(t->dt);
}
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void *xp,
    const cudnnFilterDescriptor_t w, const void *wp, const cudnnConvolutionDescriptor_t cd,
    const cudnnTensorDescriptor_t y, void *out, const int requested, int *returned,
    cudnnConvolutionFwdAlgoPerf_t *p, void *ws, size_t bytes)
{
    BAD(!xp || !wp);
    FIND(fwd, cudnnConvolutionFwdAlgo_t, find_fwd, fits(x, w, cd, y), tensor_bytes(y))
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const void *wp,
    const cudnnTensorDescriptor_t dy, const void *dyp, const cudnnConvolutionDescriptor_t cd,
    const cudnnTensorDescriptor_t dx, void *out, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *p, void *ws, size_t bytes)
{
    BAD(!wp || !dyp);
    FIND(data, cudnnConvolutionBwdDataAlgo_t, find_data, fits(dx, w, cd, dy), tensor_bytes(dx))
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void *xp,
    const cudnnTensorDescriptor_t dy, const void *dyp, const cudnnConvolutionDescriptor_t cd,
    const cudnnFilterDescriptor_t dw, void *out, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *p, void *ws, size_t bytes)
{
    BAD(!xp || !dyp);
    FIND(filter, cudnnConvolutionBwdFilterAlgo_t, find_filter, fits(x, dw, cd, dy),
         (size_t)dw->k * dw->c * dw->h * dw->w * dt_bytes(x->dt))
}

/* element i of a float, double or bfloat16 array (bfloat16 rounded once from the double) */
double at(cudnnDataType_t dt, const void *p, int64_t i)
{
    return dt == CUDNN_DATA_DOUBLE     ? ((const double *)p)[i]
           : dt == CUDNN_DATA_BFLOAT16 ? emu_from_bf16(((const uint16_t *)p)[i])
                                       : ((const float *)p)[i];
}
void put(cudnnDataType_t dt, void *p, int64_t i, double v)
{
    if (dt == CUDNN_DATA_DOUBLE)
        ((double *)p)[i] = v;
    else if (dt == CUDNN_DATA_BFLOAT16)
        ((uint16_t *)p)[i] = emu_bf16((float)v);
    else
        ((float *)p)[i] = (float)v;
}

/* checks alpha 1, beta 0 (double for double data, float otherwise, the 16-bit types too) and
 * the workspace, and fills the workspace */
static cudnnStatus_t common(cudnnDataType_t dt, const void *alpha, const void *beta, int algo,
                            void *ws, size_t bytes)
{
    cudnnDataType_t st = dt == CUDNN_DATA_DOUBLE ? dt : CUDNN_DATA_FLOAT;
    BAD(at(st, alpha, 0) != 1.0 || at(st, beta, 0) != 0.0);
    BAD(bytes < ws_need(algo) || !ws);
    memset(ws, 0x5a, bytes);
    return CUDNN_STATUS_SUCCESS;
}

/* the convolution loops: visit(n, oh, ow, k, x offset, w offset) over every tap inside x */
#define TAPS(x, w, cd, y, BODY)                                                                    \
    for (int n = 0; n < y->n; n++)                                                                 \
        for (int oh = 0; oh < y->h; oh++)                                                          \
            for (int ow = 0; ow < y->w; ow++)                                                      \
                for (int k = 0; k < y->c; k++)                                                     \
                    for (int r = 0; r < w->h; r++)                                                 \
                        for (int s = 0; s < w->w; s++) {                                           \
                            int ih = oh * cd->u - cd->ph + r * cd->dh;                             \
                            int iw = ow * cd->v - cd->pw + s * cd->dw;                             \
                            if (ih < 0 || ih >= x->h || iw < 0 || iw >= x->w) continue;            \
                            for (int c = 0; c < x->c; c++) {                                       \
                                int64_t xo = (((int64_t)n * x->h + ih) * x->w + iw) * x->c + c;    \
                                int64_t wo = (((int64_t)k * w->h + r) * w->w + s) * w->c + c;      \
                                int64_t yo = (((int64_t)n * y->h + oh) * y->w + ow) * y->c + k;    \
                                BODY;                                                              \
                            }                                                                      \
                        }

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t x, const void *xp,
                                      const cudnnFilterDescriptor_t w, const void *wp,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t bytes,
                                      const void *beta, const cudnnTensorDescriptor_t y, void *yp)
{
    BAD(!h->stream_set);
    if (fits(x, w, cd, y) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    if (common(x->dt, alpha, beta, algo, ws, bytes) != CUDNN_STATUS_SUCCESS)
        return CUDNN_STATUS_BAD_PARAM;
    if (dnn_fail_forward) return CUDNN_STATUS_NOT_SUPPORTED;
    int64_t ny = (int64_t)y->n * y->h * y->w * y->c;
    double *acc = calloc((size_t)ny, sizeof *acc);
    TAPS(x, w, cd, y, acc[yo] += at(x->dt, xp, xo) * at(x->dt, wp, wo));
    for (int64_t i = 0; i < ny; i++)
        put(y->dt, yp, i, acc[i]);
    free(acc);
    dnn_runs[0]++;
    dnn_last_algo[0] = algo;
    dnn_last_math[0] = cd->math;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t w, const void *wp,
                                           const cudnnTensorDescriptor_t y, const void *dyp,
                                           const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                           size_t bytes, const void *beta,
                                           const cudnnTensorDescriptor_t x, void *dxp)
{
    BAD(!h->stream_set);
    if (fits(x, w, cd, y) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    if (common(x->dt, alpha, beta, algo, ws, bytes) != CUDNN_STATUS_SUCCESS)
        return CUDNN_STATUS_BAD_PARAM;
    int64_t nx = (int64_t)x->n * x->h * x->w * x->c;
    double *acc = calloc((size_t)nx, sizeof *acc);
    TAPS(x, w, cd, y, acc[xo] += at(x->dt, dyp, yo) * at(x->dt, wp, wo));
    for (int64_t i = 0; i < nx; i++)
        put(x->dt, dxp, i, acc[i]);
    free(acc);
    dnn_runs[1]++;
    dnn_last_algo[1] = algo;
    dnn_last_math[1] = cd->math;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t x, const void *xp,
                                             const cudnnTensorDescriptor_t y, const void *dyp,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws,
                                             size_t bytes, const void *beta,
                                             const cudnnFilterDescriptor_t w, void *dwp)
{
    BAD(!h->stream_set);
    if (fits(x, w, cd, y) != CUDNN_STATUS_SUCCESS) return CUDNN_STATUS_BAD_PARAM;
    if (common(x->dt, alpha, beta, algo, ws, bytes) != CUDNN_STATUS_SUCCESS)
        return CUDNN_STATUS_BAD_PARAM;
    int64_t nw = (int64_t)w->k * w->h * w->w * w->c;
    double *acc = calloc((size_t)nw, sizeof *acc);
    TAPS(x, w, cd, y, acc[wo] += at(x->dt, xp, xo) * at(x->dt, dyp, yo));
    for (int64_t i = 0; i < nw; i++)
        put(w->dt, dwp, i, acc[i]);
    free(acc);
    dnn_runs[2]++;
    dnn_last_algo[2] = algo;
    dnn_last_math[2] = cd->math;
    return CUDNN_STATUS_SUCCESS;
}

#pragma GCC diagnostic pop

/* ---- the tests ------------------------------------------------------------------------------- */

tfl__cuda_device cu; /* the device record the kernels get (no CUDA behind it) */

tfl_ctx *setup(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    memset(&cu, 0, sizeof cu);
    cu.base.ctx = ctx;
    snprintf(cu.base.name, sizeof cu.base.name, "GPU:0");
    dnn_creates = dnn_destroys = dnn_queries = dnn_finds = dnn_bad = dnn_fail_forward = 0;
    dnn_find_math = -1;
    memset(dnn_last_math, 0xff, sizeof dnn_last_math);
    /* autotuning on (the default), its workspace limit small: the allocator's blocks are
     * host memory here; tests of the heuristic rules turn autotuning off (heuristic()) */
    unsetenv("TFL_CUDNN_AUTOTUNE");
    setenv("TFL_CUDNN_WORKSPACE_MB", "4", 1);
    emu_blas_math_sets = 0;
    memset(dnn_runs, 0, sizeof dnn_runs);
    memset(dnn_last_algo, 0xff, sizeof dnn_last_algo);
    emu_errors = emu_log_info = emu_log_warning = emu_host_allocs = emu_host_frees = 0;
    emu_gets = emu_puts = emu_largest_get = 0;
    emu_log_all[0] = '\0';
    norm_emu_reset();
    return ctx;
}

/* a context whose device ranks convolution algorithms by cuDNN's heuristics
 * (TFL_CUDNN_AUTOTUNE=0), nothing timed */
static tfl_ctx *heuristic(void)
{
    tfl_ctx *ctx = setup();
    setenv("TFL_CUDNN_AUTOTUNE", "0", 1);
    return ctx;
}

/* frees the device's cuDNN state: every handle, descriptor and host block goes back */
void teardown(tfl_ctx *ctx)
{
    tfl__cudnn_free(&cu);
    assert_null(cu.dnn);
    assert_int_equal(dnn_creates, dnn_destroys);
    assert_int_equal(emu_host_allocs, emu_host_frees);
    assert_int_equal(emu_gets, emu_puts);
    assert_int_equal(dnn_bad, 0);
    assert_int_equal(emu_errors, 0);
    tfl_ctx_free(ctx);
}


/* symmetric shapes through cuDNN (the algorithms its rules pick), the odd-total SAME shape
 * through im2col, logged once however often it runs; no second query for a cached shape */
static void test_paths_and_cache(void **state)
{
    (void)state;
    tfl_ctx *ctx = heuristic();
    tfl__device *dev = &cu.base;
    const tfl_dtype f32 = TFL_DTYPE_FLOAT32, f64 = TFL_DTYPE_FLOAT64;
    assert_true(
        emu_check_shape(ctx, dev, f32, SHAPE(2, 7, 6, 3), SHAPE(3, 2, 3, 4), 2, 2, 1, 1, false));
    assert_int_equal(dnn_creates, 5); /* the handle and four descriptors */
    assert_int_equal(dnn_runs[0], 1);
    assert_int_equal(dnn_runs[1], 1);
    assert_int_equal(dnn_runs[2], 1);
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    assert_int_equal(dnn_last_algo[1], CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
    assert_int_equal(dnn_last_algo[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
    assert_int_equal(dnn_queries, 3);
    /* the same shape again: from the cache */
    assert_true(
        emu_check_shape(ctx, dev, f32, SHAPE(2, 7, 6, 3), SHAPE(3, 2, 3, 4), 2, 2, 1, 1, false));
    assert_int_equal(dnn_queries, 3);
    assert_int_equal(dnn_runs[0], 2);
    /* float64, dilations, SAME with even totals, 1x1 */
    assert_true(
        emu_check_shape(ctx, dev, f64, SHAPE(1, 6, 7, 2), SHAPE(3, 3, 2, 3), 1, 1, 2, 2, true));
    assert_true(
        emu_check_shape(ctx, dev, f64, SHAPE(2, 7, 9, 2), SHAPE(2, 3, 2, 3), 1, 2, 2, 1, false));
    assert_true(
        emu_check_shape(ctx, dev, f32, SHAPE(2, 4, 5, 3), SHAPE(1, 1, 3, 5), 1, 1, 1, 1, false));
    assert_int_equal(dnn_runs[0], 5);
    assert_int_equal(emu_log_info, 0);
    /* SAME, stride 2 on an even input: one more padding after than before -> im2col */
    int runs = dnn_runs[0];
    assert_true(
        emu_check_shape(ctx, dev, f32, SHAPE(2, 8, 8, 3), SHAPE(3, 3, 3, 2), 2, 2, 1, 1, true));
    assert_int_equal(dnn_runs[0], runs);
    assert_int_equal(emu_log_info, 3); /* one per op kind */
    assert_non_null(strstr(emu_last_log, "runs im2col + cuBLAS, not cuDNN"));
    assert_non_null(strstr(emu_last_log, "cuDNN pads both sides alike"));
    assert_true(
        emu_check_shape(ctx, dev, f32, SHAPE(2, 8, 8, 3), SHAPE(3, 3, 3, 2), 2, 2, 1, 1, true));
    assert_int_equal(emu_log_info, 3); /* once per shape */
    assert_int_equal(emu_log_warning, 0);
    teardown(ctx);
}

/* bfloat16 through cuDNN: float accumulation, tensor cores, the filter transposed by a
 * 16-bit strided copy; a shape cuDNN pads unevenly has no 16-bit path and is declined (the
 * dispatcher runs it in float32 between conversions), nothing logged as an error */
static void test_bfloat16(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    const tfl_dtype bf = TFL_DTYPE_BFLOAT16;
    assert_true(emu_check_shape(ctx, &cu.base, bf, SHAPE(2, 7, 6, 3), SHAPE(3, 2, 3, 4), 2, 2, 1,
                                1, false));
    assert_true(emu_check_shape(ctx, &cu.base, bf, SHAPE(2, 5, 5, 4), SHAPE(3, 3, 4, 8), 1, 1, 1,
                                1, true));
    assert_int_equal(dnn_find_math, CUDNN_TENSOR_OP_MATH); /* timed with tensor cores allowed */
    int runs = dnn_runs[0];
    /* SAME, stride 2 on an even input: one more padding after than before */
    const int64_t xs[4] = {1, 4, 4, 2}, fs[4] = {3, 3, 2, 2}, ys[4] = {1, 2, 2, 2};
    void *x = emu_values(bf, 32, true), *w = emu_values(bf, 36, true), *y = emu_values(bf, 8, false);
    emu_fake fx, fw, fy;
    emu_fake_init(&fx, bf, xs, x);
    emu_fake_init(&fw, bf, fs, w);
    emu_fake_init(&fy, bf, ys, y);
    tfl__window_attrs a;
    memset(&a, 0, sizeof a);
    a.ksize[0] = a.ksize[1] = 3;
    a.strides[0] = a.strides[1] = 2;
    a.dilations[0] = a.dilations[1] = 1;
    const tfl_tensor *in[2] = {&fx.t, &fw.t};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_CONV2D, 2, in, &fy.t, &a};
    assert_int_equal(tfl__cuda_conv2d(&k), TFL__KERNEL_DECLINED);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(dnn_runs[0], runs);
    free(x), free(w), free(y);
    teardown(ctx);
}

/* deterministic mode: deterministic algorithms only, never BWD_FILTER_ALGO_3 */
static void test_deterministic(void **state)
{
    (void)state;
    tfl_ctx *ctx = heuristic();
    tfl_ctx_set_deterministic(ctx, true);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 5, 5, 2),
                                SHAPE(3, 3, 2, 3), 1, 1, 1, 1, true));
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    assert_int_equal(dnn_last_algo[1], CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
    assert_int_equal(dnn_last_algo[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
    /* the flag is part of the key: the same shape out of deterministic mode is a new entry */
    tfl_ctx_set_deterministic(ctx, false);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 5, 5, 2),
                                SHAPE(3, 3, 2, 3), 1, 1, 1, 1, true));
    assert_int_equal(dnn_last_algo[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
    assert_int_equal(dnn_queries, 6);
    assert_int_equal(dnn_finds, 0);
    teardown(ctx);
}

/* Autotuning (the default): each kind's algorithms timed once per shape on the op's buffers,
 * the fastest that may run taken (no FFT, no tensor cores under float32, within the
 * workspace limit; atomics allowed outside deterministic mode), logged once with its time;
 * results right; deterministic mode ranks by heuristics even with autotuning on. */
static void test_autotune(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_finds, 3);
    assert_int_equal(dnn_queries, 0);
    assert_int_equal(dnn_find_math, CUDNN_FMA_MATH);
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
    assert_int_equal(dnn_last_algo[1], CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
    assert_int_equal(dnn_last_algo[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(dnn_last_math[i], CUDNN_FMA_MATH);
    assert_int_equal(emu_log_info, 3); /* the winner of each kind */
    assert_non_null(strstr(emu_last_log, "Conv2DBackpropFilter on GPU:0, input (2, 6, 5, 3), "
                                         "filter (3, 3, 3, 4): cuDNN algorithm ALGO_3 (3), "
                                         "0.120 ms, the fastest that may run of 4 timed"));
    /* the same shape again: from the cache, nothing timed or logged */
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_finds, 3);
    assert_int_equal(emu_log_info, 3);
    assert_int_equal(dnn_runs[0], 2);
    /* deterministic mode: heuristics, deterministic algorithms */
    tfl_ctx_set_deterministic(ctx, true);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_finds, 3);
    assert_int_equal(dnn_queries, 3);
    assert_int_equal(dnn_last_algo[1], CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
    assert_int_equal(dnn_last_algo[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
    teardown(ctx);
}

/* The tf32 policy: the search may take tensor-core algorithms for float32 data, each run
 * with the math type it was timed with; float64 keeps FMA; cuBLAS's products (im2col here)
 * switch to TF32 math and back with the policy. */
static void test_autotune_tf32(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_TF32), TFL_OK);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_find_math, CUDNN_TENSOR_OP_MATH);
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
    assert_int_equal(dnn_last_math[0], CUDNN_TENSOR_OP_MATH);
    assert_non_null(strstr(emu_log_all, "tensor cores allowed"));
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT64, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_find_math, CUDNN_FMA_MATH);
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
    assert_int_equal(dnn_last_math[0], CUDNN_FMA_MATH);
    /* the policy is part of the key: float32 again is a new entry, timed under FMA */
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
    int finds = dnn_finds;
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_finds, finds + 3);
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
    assert_int_equal(dnn_last_math[0], CUDNN_FMA_MATH);
    /* cuBLAS: a shape cuDNN cannot pad runs im2col + gemm, in the policy's math mode */
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_TF32), TFL_OK);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 8, 8, 3),
                                SHAPE(3, 3, 3, 2), 2, 2, 1, 1, true));
    assert_int_equal(emu_blas_math, CUBLAS_TF32_TENSOR_OP_MATH);
    int sets = emu_blas_math_sets;
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 8, 8, 3),
                                SHAPE(3, 3, 3, 2), 2, 2, 1, 1, true));
    assert_int_equal(emu_blas_math_sets, sets); /* told only when the mode changes */
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 8, 8, 3),
                                SHAPE(3, 3, 3, 2), 2, 2, 1, 1, true));
    assert_int_equal(emu_blas_math, CUBLAS_DEFAULT_MATH);
    cu.blas_tf32 = false;
    teardown(ctx);
}

/* No device memory for autotuning's block (the filter and the workspace limit): the op fails
 * with RESOURCE_EXHAUSTED and a hint (never a choice made with less, which would change the
 * numbers a step gives); the shape is tuned when it runs again. */
static void test_autotune_no_memory(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    const tfl_dtype dt = TFL_DTYPE_FLOAT32;
    const int64_t xs[4] = {1, 4, 4, 2}, fs[4] = {3, 3, 2, 2}, ys[4] = {1, 2, 2, 2};
    void *x = emu_values(dt, 32, true), *w = emu_values(dt, 36, true), *y = emu_values(dt, 8, false);
    emu_fake fx, fw, fy;
    emu_fake_init(&fx, dt, xs, x);
    emu_fake_init(&fw, dt, fs, w);
    emu_fake_init(&fy, dt, ys, y);
    tfl__window_attrs a;
    memset(&a, 0, sizeof a);
    a.ksize[0] = a.ksize[1] = 3;
    a.strides[0] = a.strides[1] = 1;
    a.dilations[0] = a.dilations[1] = 1;
    const tfl_tensor *in[2] = {&fx.t, &fw.t};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_CONV2D, 2, in, &fy.t, &a};
    emu_refuse_device = 1;
    assert_int_equal(tfl__cuda_conv2d(&k), TFL_RESOURCE_EXHAUSTED);
    assert_int_equal(emu_refuse_device, 0);
    assert_int_equal(dnn_runs[0], 0);
    assert_int_equal(dnn_finds, 0);
    assert_int_equal(emu_log_warning, 1);
    assert_non_null(strstr(emu_last_log, "GPU:0: no memory for the convolutions' autotuning "
                                         "workspace (4 MiB): lower TFL_CUDNN_WORKSPACE_MB, or "
                                         "set TFL_CUDNN_AUTOTUNE=0"));
    /* memory again: the shape is tuned and runs */
    assert_int_equal(tfl__cuda_conv2d(&k), TFL_OK);
    assert_int_equal(dnn_finds, 1);
    assert_int_equal(dnn_runs[0], 1);
    free(x);
    free(w);
    free(y);
    teardown(ctx);
}

/* TFL_CUDNN_WORKSPACE_MB bounds the workspace: the 2 MiB algorithm is not offered under 1 MiB;
 * under 0 no algorithm fits (im2col, the reason logged); a value that is not a number of MiB
 * is logged and the default kept */
static void test_workspace_limit(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    setenv("TFL_CUDNN_WORKSPACE_MB", "1", 1);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    assert_true(emu_largest_get <= (int64_t)1 << 21); /* the filter plus at most 1 MiB */
    teardown(ctx);

    ctx = setup();
    setenv("TFL_CUDNN_WORKSPACE_MB", "0", 1);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT64, SHAPE(2, 6, 5, 3),
                                SHAPE(3, 3, 3, 4), 1, 1, 1, 1, true));
    assert_int_equal(dnn_runs[0] + dnn_runs[1] + dnn_runs[2], 0);
    assert_int_equal(emu_log_info, 3);
    assert_non_null(strstr(emu_last_log, "FFT-free and within 0 MiB of workspace"));
    teardown(ctx);

    ctx = setup();
    setenv("TFL_CUDNN_WORKSPACE_MB", "lots", 1);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(1, 4, 4, 2),
                                SHAPE(3, 3, 2, 2), 1, 1, 1, 1, true));
    assert_int_equal(emu_log_warning, 1);
    assert_non_null(strstr(emu_log_all, "TFL_CUDNN_WORKSPACE_MB=lots is not a number of MiB: "
                                        "the convolutions' workspace limit stays 256 MiB"));
    assert_int_equal(dnn_last_algo[0], CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
    setenv("TFL_CUDNN_WORKSPACE_MB", "4", 1);
    teardown(ctx);
}

/* a cuDNN call failing at run time: logged, the result right (im2col), the shape not sent to
 * cuDNN again */
static void test_runtime_failure(void **state)
{
    (void)state;
    tfl_ctx *ctx = heuristic();
    dnn_fail_forward = 1;
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT64, SHAPE(1, 5, 4, 2),
                                SHAPE(3, 3, 2, 2), 1, 1, 1, 1, true));
    assert_int_equal(emu_log_warning, 1);
    assert_non_null(strstr(emu_last_log, "Conv2D on GPU:0 runs im2col + cuBLAS"));
    assert_non_null(strstr(emu_last_log, "cuDNN failed with algorithm"));
    assert_int_equal(dnn_runs[0], 0);
    assert_int_equal(dnn_runs[1], 1); /* the backprops still go to cuDNN */
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT64, SHAPE(1, 5, 4, 2),
                                SHAPE(3, 3, 2, 2), 1, 1, 1, 1, true));
    assert_int_equal(emu_log_warning, 1);
    assert_int_equal(dnn_queries, 3);
    teardown(ctx);
}

/* more shapes than cache slots, random: every result right, the cache replacing entries */
static void test_many_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    int checked = 0;
    for (int it = 0; it < 120; it++) {
        tfl_dtype dt = it % 2 ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        int64_t xs[4] = {emu_rnd(1, 3), emu_rnd(1, 8), emu_rnd(1, 8), emu_rnd(1, 3)};
        int64_t fs[4] = {emu_rnd(1, 3), emu_rnd(1, 3), xs[3], emu_rnd(1, 3)};
        checked +=
            emu_check_shape(ctx, &cu.base, dt, xs, fs, (int)emu_rnd(1, 3), (int)emu_rnd(1, 3),
                            (int)emu_rnd(1, 2), (int)emu_rnd(1, 2), emu_rnd(0, 1) == 1);
    }
    assert_true(checked > 80);
    assert_true(dnn_runs[0] > 20); /* both paths taken */
    assert_true(emu_log_info > 0);
    teardown(ctx);
}

/* TFL_CUDNN=0 when the device's first convolution runs: no cuDNN at all, results right */
static void test_env_off(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    assert_int_equal(setenv("TFL_CUDNN", "0", 1), 0);
    assert_true(emu_check_shape(ctx, &cu.base, TFL_DTYPE_FLOAT32, SHAPE(2, 5, 5, 2),
                                SHAPE(3, 3, 2, 3), 1, 1, 1, 1, true));
    assert_int_equal(unsetenv("TFL_CUDNN"), 0);
    assert_int_equal(dnn_creates, 0);
    assert_int_equal(dnn_runs[0] + dnn_runs[1] + dnn_runs[2], 0);
    assert_int_equal(emu_log_info, 1);
    assert_non_null(strstr(emu_last_log, "cuDNN is off (TFL_CUDNN=0)"));
    teardown(ctx);
}

int main(void)
{
    unsetenv("TFL_CUDNN");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_and_cache), cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bfloat16),
        cmocka_unit_test(test_autotune), cmocka_unit_test(test_autotune_tf32),
        cmocka_unit_test(test_workspace_limit), cmocka_unit_test(test_autotune_no_memory),
        cmocka_unit_test(test_runtime_failure), cmocka_unit_test(test_many_shapes),
        cmocka_unit_test(test_env_off), cmocka_unit_test(test_bn_shapes),
        cmocka_unit_test(test_bn_refused), cmocka_unit_test(test_bn_runtime_failure),
        cmocka_unit_test(test_bn_env_off), cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_runtime_failure), cmocka_unit_test(test_softmax_no_host_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
