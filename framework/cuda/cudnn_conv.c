/*
 * framework/cuda/cudnn_conv.c: the convolutions through cuDNN's legacy API
 * (cudnnConvolutionForward / BackwardData / BackwardFilter), built when TFL_HAVE_CUDNN.
 * cuda_conv.c calls tfl__cudnn_conv first and runs im2col + cuBLAS when it answers false.
 *
 *  - One cudnnHandle per device, bound to the device's stream, made on the first convolution
 *    (or cudnn_norm.c's first BatchNorm / Softmax: tfl__cudnn_handle) and destroyed with the
 *    device (tfl__cudnn_free). TFL_CUDNN=0 (or off / false) in the environment when the
 *    handle would be made turns cuDNN off for that device.
 *  - Layouts: images NHWC (CUDNN_TENSOR_NHWC). cuDNN's NHWC filter format is KRSC
 *    (Cout, KH, KW, Cin), tapeflow's filters are HWIO (KH, KW, Cin, Cout): both are the
 *    same (KH KW Cin) x Cout matrix, row-major and transposed, so the filter is transposed
 *    into a workspace with cublas<S|D>geam before Forward / BackwardData, and BackwardFilter's
 *    KRSC result is transposed back into the output.
 *  - Padding: cuDNN pads both sides alike; SAME padding with an odd total pads one more
 *    after than before (TensorFlow's rule), which cuDNN cannot express: those shapes, found
 *    by cuDNN's output size differing from the op's, run im2col.
 *  - Arithmetic: under the float32 policy CUDNN_FMA_MATH (no tensor cores), the convolution
 *    computed in the data type; under tf32 (tfl_ctx_set_precision) float32 data may take TF32
 *    tensor cores (CUDNN_TENSOR_OP_MATH asked, each algorithm run with the math type cuDNN
 *    timed it with). FFT algorithms, whose rounding is far from the CPU's, are not taken.
 *  - Algorithms: measured, as TensorFlow's autotuning and PyTorch's cudnn.benchmark do:
 *    cudnnFind*AlgorithmEx times every algorithm on the op's own buffers the first time a
 *    shape runs, and the fastest that may run wins (logged at INFO with its time). In
 *    deterministic mode, or with TFL_CUDNN_AUTOTUNE=0, cuDNN's heuristics rank them instead
 *    (cudnnGet*Algorithm_v7, nothing run), so that two runs pick the same algorithm. Either
 *    way an algorithm may run when it succeeded, is not FFT, is deterministic in
 *    deterministic mode (and never the atomics-based BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0 / _3
 *    there), uses tensor cores only under tf32, and needs at most the workspace limit:
 *    256 MiB, or TFL_CUDNN_WORKSPACE_MB. The choice is cached per shape key (kind, dtype,
 *    deterministic flag, policy, shapes, strides, dilations, padding) in a table of
 *    CACHE_SLOTS per device, replaced round robin; a shape without an algorithm is cached as
 *    "im2col", with its reason logged once (INFO) when the entry is made. A cuDNN call that
 *    fails at run time is logged (WARNING) and its shape moved to im2col.
 *  - Workspaces come from the device's caching allocator and go back after the call is
 *    enqueued (later work on the same stream may reuse them).
 */
#include "cuda_internal.h"
#ifndef TFL_CUDNN_NO_GRAPH /* the host tests of this file leave the graph API out */
#include "cudnn_graph.h"
#else
struct tfl__dnn_plan;
static inline void tfl__dnn_plan_free(tfl_ctx *ctx, struct tfl__dnn_plan *p)
{
    (void)ctx, (void)p;
}
#endif

#include <cudnn.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define CACHE_SLOTS 64
#define WS_CAP ((size_t)256 << 20) /* the default workspace limit (TFL_CUDNN_WORKSPACE_MB) */
#define KEY_LEN 20
#define KEY_ALIGN 4 /* the key's slot of the operands' alignment */
#define ALGO_GRAPH 1000 /* entry.algo of a shape that runs a graph API plan */
#define MAX_ALGOS 16 /* more than any of cuDNN's three algorithm counts */

typedef struct entry {
    bool used;
    int64_t key[KEY_LEN];
    int algo;             /* the cuDNN algorithm, ALGO_GRAPH, or -1: im2col for this shape */
    cudnnMathType_t math; /* the math type it runs with */
    size_t ws;            /* its workspace bytes */
    struct tfl__dnn_plan *plan; /* ALGO_GRAPH: the graph API's plan (cudnn_graph.c) */
} entry;

/* one of cuDNN's answers, whichever kind asked */
typedef struct candidate {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
    size_t memory;
    float ms; /* measured (autotuning), or 0 */
} candidate;

struct tfl__cudnn_state {
    bool off;        /* TFL_CUDNN=0, or no handle: every convolution runs im2col */
    bool autotune;   /* time the algorithms (TFL_CUDNN_AUTOTUNE=0: cuDNN's heuristics) */
    bool graph;      /* try the graph API first (TFL_CUDNN_GRAPH=0: the legacy API only) */
    size_t ws_limit; /* the largest workspace an algorithm may ask for */
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int next; /* the slot a new shape takes */
    entry cache[CACHE_SLOTS];
};

static const char *const kind_name[] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};

static bool env_off(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false"));
}

/* TFL_CUDNN_WORKSPACE_MB, or WS_CAP when unset or not a number of MiB (logged) */
static size_t env_ws_limit(const tfl__kcall *k)
{
    const char *v = getenv("TFL_CUDNN_WORKSPACE_MB");
    if (!v || !*v) return WS_CAP;
    char *end = NULL;
    errno = 0;
    unsigned long long mb = strtoull(v, &end, 10);
    if (*v == '-' || *end || errno || mb > (SIZE_MAX >> 20)) {
        tfl__log(k->ctx, TFL_LOG_WARNING,
                 "%s: TFL_CUDNN_WORKSPACE_MB=%s is not a number of MiB: the convolutions' "
                 "workspace limit stays %zu MiB", k->dev->name, v, WS_CAP >> 20);
        return WS_CAP;
    }
    return (size_t)mb << 20;
}

void tfl__cudnn_free(tfl__cuda_device *cu)
{
    struct tfl__cudnn_state *s = cu->dnn;
    if (!s) return;
    for (int i = 0; i < CACHE_SLOTS; i++) /* the plans before the handle they were made with */
        tfl__dnn_plan_free(cu->base.ctx, s->cache[i].plan);
    if (s->cd) (void)cudnnDestroyConvolutionDescriptor(s->cd);
    if (s->wd) (void)cudnnDestroyFilterDescriptor(s->wd);
    if (s->yd) (void)cudnnDestroyTensorDescriptor(s->yd);
    if (s->xd) (void)cudnnDestroyTensorDescriptor(s->xd);
    if (s->h) (void)cudnnDestroy(s->h);
    tfl__host_free(cu->base.ctx, s);
    cu->dnn = NULL;
}

/* No host memory for the state: the op fails with RESOURCE_EXHAUSTED. It must never run
 * another algorithm instead (tapeflow's kernels round otherwise than cuDNN's): a step that
 * completes after a refused allocation gives the numbers it gives without one, or none. */
static struct tfl__cudnn_state *no_memory(const tfl__kcall *k)
{
    tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED, "cuDNN on %s: out of host memory for its "
                   "state (%zu bytes)", k->dev->name, sizeof(struct tfl__cudnn_state));
    return NULL;
}

/* the device's state, made on first use; NULL with RESOURCE_EXHAUSTED kept when there is no
 * host memory for it (no_memory) */
static struct tfl__cudnn_state *state(const tfl__kcall *k)
{
    tfl__cuda_device *cu = tfl__cuda(k->dev);
    if (cu->dnn) return cu->dnn;
    struct tfl__cudnn_state *s = tfl__host_alloc(k->ctx, sizeof *s, 64);
    if (!s) return no_memory(k);
    memset(s, 0, sizeof *s);
    cu->dnn = s;
    s->autotune = !env_off("TFL_CUDNN_AUTOTUNE");
#ifndef TFL_CUDNN_NO_GRAPH
    s->graph = !env_off("TFL_CUDNN_GRAPH");
#endif
    s->ws_limit = env_ws_limit(k);
    if (env_off("TFL_CUDNN")) {
        s->off = true;
        tfl__log(k->ctx, TFL_LOG_INFO,
                 "%s: cuDNN is off (TFL_CUDNN=%s): convolutions run as im2col + cuBLAS, "
                 "BatchNorm and Softmax on tapeflow's kernels",
                 k->dev->name, getenv("TFL_CUDNN"));
        return s;
    }
    size_t version = cudnnGetVersion();
    cudnnStatus_t r = CUDNN_STATUS_SUCCESS;
    if (version / 10000 != CUDNN_MAJOR) {
        s->off = true;
        tfl__log(k->ctx, TFL_LOG_WARNING,
                 "%s: the cuDNN library is version %zu, tapeflow was built with %d.%d: "
                 "convolutions run as im2col + cuBLAS",
                 k->dev->name, version, CUDNN_MAJOR, CUDNN_MINOR);
        return s;
    }
    r = cudnnCreate(&s->h);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnSetStream(s->h, cu->stream);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnCreateTensorDescriptor(&s->xd);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnCreateTensorDescriptor(&s->yd);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnCreateFilterDescriptor(&s->wd);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnCreateConvolutionDescriptor(&s->cd);
    if (r != CUDNN_STATUS_SUCCESS) {
        tfl__log(k->ctx, TFL_LOG_WARNING,
                 "%s: cuDNN could not be set up (%s): convolutions run as im2col + cuBLAS",
                 k->dev->name, cudnnGetErrorString(r));
        tfl__cudnn_free(cu);
        s = tfl__host_alloc(k->ctx, sizeof *s, 64);
        if (!s) return no_memory(k);
        memset(s, 0, sizeof *s);
        s->off = true;
        cu->dnn = s;
    }
    return s;
}

struct cudnnContext *tfl__cudnn_handle(const tfl__kcall *k, bool *failed)
{
    struct tfl__cudnn_state *s = state(k);
    *failed = !s;
    return s && !s->off ? s->h : NULL;
}

/* the bytes of one element of data type dt (float, double, half, bfloat16) */
static size_t dt_size(cudnnDataType_t dt)
{
    return dt == CUDNN_DATA_DOUBLE ? 8 : dt == CUDNN_DATA_FLOAT ? 4 : 2;
}

/* the type a convolution of dt data accumulates in: float for the 16-bit types */
static cudnnDataType_t compute_type(cudnnDataType_t dt)
{
    return dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16 ? CUDNN_DATA_FLOAT : dt;
}

static void make_key(int64_t key[KEY_LEN], tfl__conv_kind kind, tfl_dtype dt, bool det,
                     cudnnMathType_t math, int64_t align, const tflcu_conv *g)
{
    const int64_t v[KEY_LEN] = {kind,  dt,    det,   math,  align, g->n,  g->h,
                                g->w,  g->c,  g->kh, g->kw, g->f,  g->oh, g->ow,
                                g->sh, g->sw, g->dh, g->dw, g->pt, g->pl};
    memcpy(key, v, sizeof v);
}

/* The math type the policy allows for data type dt: tensor cores for the 16-bit types (what
 * they are for: the mixed precision policies), TF32 tensor cores for float32 data under the
 * tf32 policy, plain FMA otherwise. */
static cudnnMathType_t policy_math(const tfl__kcall *k, cudnnDataType_t dt)
{
    if (dt_size(dt) == 2) return CUDNN_TENSOR_OP_MATH;
    return dt == CUDNN_DATA_FLOAT && tfl_ctx_precision(k->ctx) == TFL_PRECISION_TF32
               ? CUDNN_TENSOR_OP_MATH
               : CUDNN_FMA_MATH;
}

/* the descriptors of shape g; CUDNN_STATUS_SUCCESS or cuDNN's complaint */
static cudnnStatus_t describe(struct tfl__cudnn_state *s, const tflcu_conv *g, cudnnDataType_t dt,
                              cudnnMathType_t math)
{
    cudnnStatus_t r = cudnnSetTensor4dDescriptor(s->xd, CUDNN_TENSOR_NHWC, dt, (int)g->n, (int)g->c,
                                                 (int)g->h, (int)g->w);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnSetTensor4dDescriptor(s->yd, CUDNN_TENSOR_NHWC, dt, (int)g->n, (int)g->f,
                                       (int)g->oh, (int)g->ow);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnSetFilter4dDescriptor(s->wd, dt, CUDNN_TENSOR_NHWC, (int)g->f, (int)g->c,
                                       (int)g->kh, (int)g->kw);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnSetConvolution2dDescriptor(s->cd, (int)g->pt, (int)g->pl, (int)g->sh, (int)g->sw,
                                            (int)g->dh, (int)g->dw, CUDNN_CROSS_CORRELATION,
                                            compute_type(dt));
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnSetConvolutionMathType(s->cd, math);
    return r;
}

static bool fits_int(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* cuDNN's algorithm names, per kind, for the log */
static const char *algo_name(tfl__conv_kind kind, int algo)
{
    static const char *const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                      "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
                                       "WINOGRAD_NONFUSED"};
    static const char *const filt[] = {"ALGO_0", "ALGO_1",   "FFT",        "ALGO_3",
                                       "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
    const char *const *t = kind == TFL__CONV_FWD ? fwd : kind == TFL__CONV_BWD_DATA ? data : filt;
    int n = kind == TFL__CONV_FWD ? 8 : kind == TFL__CONV_BWD_DATA ? 6 : 7;
    return algo >= 0 && algo < n ? t[algo] : "?";
}

static bool is_fft(tfl__conv_kind kind, int algo)
{
    if (kind == TFL__CONV_FWD)
        return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
    if (kind == TFL__CONV_BWD_DATA)
        return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
               algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING;
    return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
           algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING;
}

/* the algorithms that add with atomics, whatever their determinism field says */
static bool uses_atomics(tfl__conv_kind kind, int algo)
{
    return (kind == TFL__CONV_BWD_DATA && algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) ||
           (kind == TFL__CONV_BWD_FILTER && (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 ||
                                             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
}

/* the workspace algorithm `algo` needs for the described shape; false when cuDNN won't say */
static bool workspace_of(struct tfl__cudnn_state *s, tfl__conv_kind kind, int algo, size_t *ws)
{
    cudnnStatus_t r;
    if (kind == TFL__CONV_FWD)
        r = cudnnGetConvolutionForwardWorkspaceSize(s->h, s->xd, s->wd, s->cd, s->yd,
                                                    (cudnnConvolutionFwdAlgo_t)algo, ws);
    else if (kind == TFL__CONV_BWD_DATA)
        r = cudnnGetConvolutionBackwardDataWorkspaceSize(s->h, s->wd, s->yd, s->cd, s->xd,
                                                         (cudnnConvolutionBwdDataAlgo_t)algo, ws);
    else
        r = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            s->h, s->xd, s->yd, s->cd, s->wd, (cudnnConvolutionBwdFilterAlgo_t)algo, ws);
    return r == CUDNN_STATUS_SUCCESS;
}

/* copies n perf records of any kind into c (the three structs share their fields) */
#define TO_CANDIDATES(p, n, c)                                                                     \
    for (int i_ = 0; i_ < (n); i_++)                                                               \
    (c)[i_] = (candidate){(int)(p)[i_].algo,        (p)[i_].status, (p)[i_].determinism,          \
                          (p)[i_].mathType,         (p)[i_].memory, (p)[i_].time}

/* cuDNN's heuristic ranking of the described shape (nothing run): *count candidates */
static cudnnStatus_t rank_heuristic(struct tfl__cudnn_state *s, tfl__conv_kind kind, candidate *c,
                                    int *count)
{
    cudnnStatus_t r;
    *count = 0;
    if (kind == TFL__CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        r = cudnnGetConvolutionForwardAlgorithm_v7(s->h, s->xd, s->wd, s->cd, s->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, p);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    } else if (kind == TFL__CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        r = cudnnGetConvolutionBackwardDataAlgorithm_v7(
            s->h, s->wd, s->yd, s->cd, s->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, count, p);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        r = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            s->h, s->xd, s->yd, s->cd, s->wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, count, p);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    }
    if (r != CUDNN_STATUS_SUCCESS) *count = 0;
    /* the heuristics' memory field is not always the workspace: ask for each */
    for (int i = 0; i < *count; i++)
        if (c[i].status == CUDNN_STATUS_SUCCESS && !workspace_of(s, kind, c[i].algo, &c[i].memory))
            c[i].status = CUDNN_STATUS_NOT_SUPPORTED;
    return r;
}

/* Every algorithm timed on the op's buffers (x/w/dy in, the output written: the real run
 * overwrites it), fastest first: *count candidates. w is the KRSC filter (an input of FWD and
 * BWD_DATA, BWD_FILTER's output). */
static cudnnStatus_t rank_measured(struct tfl__cudnn_state *s, tfl__conv_kind kind, const void *a,
                                   const void *b, void *out, void *krsc, void *work, size_t ws,
                                   candidate *c, int *count)
{
    cudnnStatus_t r;
    *count = 0;
    if (kind == TFL__CONV_FWD) { /* a = x, w = krsc, y = out */
        cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        r = cudnnFindConvolutionForwardAlgorithmEx(s->h, s->xd, a, s->wd, krsc, s->cd, s->yd, out,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, p,
                                                   work, ws);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    } else if (kind == TFL__CONV_BWD_DATA) { /* w = krsc, dy = b, dx = out */
        cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        r = cudnnFindConvolutionBackwardDataAlgorithmEx(s->h, s->wd, krsc, s->yd, b, s->cd, s->xd,
                                                        out, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                        count, p, work, ws);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    } else { /* x = a, dy = b, dw = krsc */
        cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        r = cudnnFindConvolutionBackwardFilterAlgorithmEx(
            s->h, s->xd, a, s->yd, b, s->cd, s->wd, krsc, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            count, p, work, ws);
        TO_CANDIDATES(p, r == CUDNN_STATUS_SUCCESS ? *count : 0, c);
    }
    if (r != CUDNN_STATUS_SUCCESS) *count = 0;
    return r;
}

/* The first of cuDNN's ranked answers that may run (see the file's comment); its index, or -1
 * with *any set when some answer succeeded before these rules. */
static int pick(tfl__conv_kind kind, const candidate *c, int count, bool det, cudnnMathType_t allowed,
                size_t limit, bool *any)
{
    *any = false;
    for (int i = 0; i < count; i++) {
        /* a search answers ALLOC_FAILED (cuDNN 9's INTERNAL_ERROR_HOST_ALLOCATION_FAILED, the
         * same value) for an algorithm above the workspace it was offered */
        if (c[i].status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) *any = true;
        if (c[i].status != CUDNN_STATUS_SUCCESS) continue;
        *any = true;
        if (is_fft(kind, c[i].algo)) continue;
        if (det && (c[i].determinism != CUDNN_DETERMINISTIC || uses_atomics(kind, c[i].algo)))
            continue;
        if (allowed == CUDNN_FMA_MATH &&
            (c[i].math == CUDNN_TENSOR_OP_MATH || c[i].math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
            continue;
        if (c[i].memory > limit) continue;
        return i;
    }
    return -1;
}


/* dst (cols x rows, row-major) = the transpose of src (rows x cols, row-major), on the
 * device's stream: cuBLAS's geam for float and double, a strided copy for the 16-bit types
 * (geam has none) */
static cublasStatus_t transpose(const tfl__kcall *k, cudnnDataType_t dt, const void *src,
                                int64_t rows, int64_t cols, void *dst)
{
    if (dt_size(dt) == 2) {
        tflcu_iter it = {.rank = 2, .n_ops = 2, .numel = rows * cols, .shape = {cols, rows},
                         .strides = {{rows, 1}, {1, cols}}, .ptr = {dst, (void *)src}};
        return tflcu_copy(2, &it, tfl__cuda_stream(k->dev)) == 0 ? CUBLAS_STATUS_SUCCESS
                                                                 : CUBLAS_STATUS_EXECUTION_FAILED;
    }
    cublasHandle_t b = tfl__cuda(k->dev)->blas;
    bool dbl = dt == CUDNN_DATA_DOUBLE;
    /* column-major: src is cols x rows (ld cols), dst rows x cols (ld rows) = src^T */
    if (dbl) {
        const double one = 1.0, zero = 0.0;
        return cublasDgeam(b, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)cols, &one, src, (int)cols,
                           &zero, dst, (int)rows, dst, (int)rows);
    }
    const float one = 1.0f, zero = 0.0f;
    return cublasSgeam(b, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)cols, &one, src, (int)cols,
                       &zero, dst, (int)rows, dst, (int)rows);
}

/* the KRSC filter's bytes, rounded up so that a workspace after it stays aligned */
static size_t krsc_bytes(const tflcu_conv *g, cudnnDataType_t dt)
{
    size_t es = dt_size(dt);
    return ((size_t)(g->kh * g->kw * g->c * g->f) * es + 255) / 256 * 256;
}

/* The block autotuning times in: the KRSC filter and a workspace of the limit, from the
 * caching allocator; NULL with the allocator's error kept when it has none (the op fails:
 * timing with less would pick another algorithm, and a refused allocation must never change
 * the numbers a step gives), and a hint logged. */
static void *timing_block(const tfl__kcall *k, const struct tfl__cudnn_state *s, size_t filt,
                          size_t *got)
{
    void *p = tfl__allocator_get(&k->dev->alloc, filt + s->ws_limit, got);
    if (!p)
        tfl__log(k->ctx, TFL_LOG_WARNING,
                 "%s: no memory for the convolutions' autotuning workspace (%zu MiB): lower "
                 "TFL_CUDNN_WORKSPACE_MB, or set TFL_CUDNN_AUTOTUNE=0", k->dev->name,
                 s->ws_limit >> 20);
    return p;
}

/* Times the algorithms of the described shape (rank_measured) with a workspace of the limit:
 * c and *count; false with the allocator's error kept when there is no memory for it. */
static bool measure(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                    const tflcu_conv *g, cudnnDataType_t dt, const void *a, const void *b,
                    void *out, candidate *c, int *count, cudnnStatus_t *r)
{
    size_t filt = krsc_bytes(g, dt), got = 0, ws = s->ws_limit;
    char *block = timing_block(k, s, filt, &got);
    if (!block) return false;
    int64_t K = g->kh * g->kw * g->c, F = g->f;
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (kind != TFL__CONV_BWD_FILTER)
        bs = transpose(k, dt, kind == TFL__CONV_FWD ? b : a, K, F, block);
    *r = bs == CUBLAS_STATUS_SUCCESS
             ? rank_measured(s, kind, a, b, out, block, ws ? block + filt : NULL, ws, c, count)
             : CUDNN_STATUS_EXECUTION_FAILED;
    tfl__allocator_put(&k->dev->alloc, block, got);
    return true;
}

#ifndef TFL_CUDNN_NO_GRAPH
/* the graph API's operands of kind: x (dx for BWD_DATA), w (the KRSC filter; dw for
 * BWD_FILTER), y (dy for the backprops) */
static void graph_operands(tfl__conv_kind kind, const void *a, const void *b, void *out,
                           void *krsc, const void **x, const void **w, const void **y)
{
    *w = krsc;
    if (kind == TFL__CONV_FWD)
        *x = a, *y = out;
    else if (kind == TFL__CONV_BWD_DATA)
        *x = out, *y = b;
    else
        *x = a, *y = b;
}

/* Tries cuDNN's graph API for a shape not in the cache (cudnn_graph.c): true with e->plan set
 * (logged at INFO; *timed_ms its time when autotuning timed it, else 0), or with *failed set
 * when there was no memory to choose in (the op fails); false when the legacy API's
 * algorithms are to be asked (the reason logged at INFO). */
static bool graph_choose(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                         const tflcu_conv *g, cudnnDataType_t dt, bool det, entry *e,
                         const void *a, const void *b, void *out, tfl_status *failed,
                         float *timed_ms)
{
    bool tune = s->autotune && !det;
    size_t filt = krsc_bytes(g, dt), got = 0, limit = s->ws_limit;
    char *block = NULL;
    if (tune) { /* the op's buffers for the timing, and a KRSC filter and a workspace */
        block = timing_block(k, s, filt, &got);
        if (!block) {
            *failed = k->ctx->err_code != TFL_OK ? k->ctx->err_code : TFL_RESOURCE_EXHAUSTED;
            return true;
        }
        if (kind != TFL__CONV_BWD_FILTER &&
            transpose(k, dt, kind == TFL__CONV_FWD ? b : a, g->kh * g->kw * g->c, g->f, block) !=
                CUBLAS_STATUS_SUCCESS) {
            tfl__allocator_put(&k->dev->alloc, block, got);
            *failed = tfl__set_error(k->ctx, TFL_INTERNAL,
                                     "%s: the filter transpose (cuBLAS geam) failed on %s",
                                     kind_name[kind], k->dev->name);
            return true;
        }
    }
    const void *x = NULL, *w = NULL, *y = NULL;
    if (block) graph_operands(kind, a, b, out, block, &x, &w, &y);
    int tried = 0;
    float ms = 0;
    bool no_memory = false;
    char why[320];
    e->plan = tfl__dnn_plan_choose(k, s->h, kind, g, dt, det, e->math != CUDNN_FMA_MATH, tune,
                                   (int64_t)limit, e->key[KEY_ALIGN], x, w, y,
                                   block && limit ? block + filt : NULL, &tried, &ms, &no_memory,
                                   why, sizeof why);
    if (block) tfl__allocator_put(&k->dev->alloc, block, got);
    char shape[160];
    snprintf(shape, sizeof shape,
             "%s on %s, input (%lld, %lld, %lld, %lld), filter (%lld, %lld, %lld, %lld)",
             kind_name[kind], k->dev->name, (long long)g->n, (long long)g->h, (long long)g->w,
             (long long)g->c, (long long)g->kh, (long long)g->kw, (long long)g->c, (long long)g->f);
    if (no_memory) {
        *failed = TFL_RESOURCE_EXHAUSTED;
        return true;
    }
    if (!e->plan) {
        tfl__log(k->ctx, TFL_LOG_INFO, "%s: not through cuDNN's graph API (%s): its legacy "
                 "algorithms instead", shape, why);
        return false;
    }
    e->algo = ALGO_GRAPH;
    e->ws = (size_t)tfl__dnn_plan_workspace(e->plan);
    *timed_ms = tune ? ms : 0;
    char how[96];
    if (tune)
        snprintf(how, sizeof how, "%.3f ms, the fastest of %d timed", (double)ms, tried);
    else
        snprintf(how, sizeof how, "cuDNN's heuristic choice");
    tfl__log(k->ctx, TFL_LOG_INFO,
             "%s: cuDNN graph API engine %lld, %s (%s, workspace %.1f MiB)", shape,
             (long long)tfl__dnn_plan_engine(e->plan), how,
             e->math == CUDNN_FMA_MATH ? "no tensor cores" : "tensor cores allowed",
             (double)e->ws / 1048576.0);
    return true;
}
#endif

/* Picks the algorithm of a shape not in the cache: e->algo, e->math and e->ws (and e->plan
 * through the graph API), or algo -1 and the reason in why; *failed set when the op must
 * fail (no host memory for a plan). a, b and out are the op's buffers (autotuning runs on
 * them). */
static void choose(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                   const tflcu_conv *g, cudnnDataType_t dt, bool det, entry *e, const void *a,
                   const void *b, void *out, tfl_status *failed, char *why, size_t size)
{
    e->algo = -1;
    e->ws = 0;
    e->math = policy_math(k, dt);
    int64_t pb_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1 - g->h - g->pt;
    int64_t pb_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1 - g->w - g->pl;
    if (!fits_int(g->n * g->h * g->w * g->c) || !fits_int(g->n * g->oh * g->ow * g->f) ||
        !fits_int(g->kh * g->kw * g->c * g->f)) {
        snprintf(why, size,
                 "a tensor has 2^31 or more elements (cuDNN's legacy API counts in int)");
        return;
    }
    /* The graph API first; a plan it timed is raced against the legacy algorithms, timed
     * below: the faster is kept (each API has shapes where its choices are the faster). */
    float graph_ms = 0;
#ifndef TFL_CUDNN_NO_GRAPH
    if (s->graph && graph_choose(k, s, kind, g, dt, det, e, a, b, out, failed, &graph_ms) &&
        (*failed != TFL_OK || graph_ms <= 0))
        return; /* the op fails, or a plan by heuristics: nothing to race */
#endif
    const bool graph = e->plan != NULL;
    cudnnStatus_t r = describe(s, g, dt, e->math);
    if (r != CUDNN_STATUS_SUCCESS) {
        if (graph) return;
        snprintf(why, size, "cuDNN refuses the descriptors: %s", cudnnGetErrorString(r));
        return;
    }
    int on, oc, ohh, oww;
    r = cudnnGetConvolution2dForwardOutputDim(s->cd, s->xd, s->wd, &on, &oc, &ohh, &oww);
    if (r != CUDNN_STATUS_SUCCESS || on != g->n || oc != g->f || ohh != g->oh || oww != g->ow) {
        if (graph) return;
        snprintf(why, size,
                 "cuDNN pads both sides alike, this padding is (%lld, %lld) before and "
                 "(%lld, %lld) after",
                 (long long)g->pt, (long long)g->pl, (long long)pb_h, (long long)pb_w);
        return;
    }
    candidate c[MAX_ALGOS];
    int count = 0;
    size_t limit = s->ws_limit;
    bool timed = s->autotune && !det;
    if (timed && !measure(k, s, kind, g, dt, a, b, out, c, &count, &r)) {
        /* no memory to time in: the op fails */
        *failed = k->ctx->err_code != TFL_OK ? k->ctx->err_code : TFL_RESOURCE_EXHAUSTED;
        return;
    }
    if (!timed) r = rank_heuristic(s, kind, c, &count);
    bool any = false;
    int i = pick(kind, c, count, det, e->math, limit, &any);
    if (graph && (i < 0 || c[i].ms >= graph_ms)) return; /* the graph API's plan stays */
    if (i >= 0) {
        if (graph)
            tfl__log(k->ctx, TFL_LOG_INFO,
                     "%s on %s: the legacy API's algorithm %s (%.3f ms) is faster than the graph "
                     "API's plan (%.3f ms)",
                     kind_name[kind], k->dev->name, algo_name(kind, c[i].algo), (double)c[i].ms,
                     (double)graph_ms);
        tfl__dnn_plan_free(k->ctx, e->plan);
        e->plan = NULL;
        e->algo = c[i].algo;
        e->ws = c[i].memory;
        if (e->math != CUDNN_FMA_MATH) e->math = c[i].math; /* as cuDNN timed or ranked it */
        if (timed)
            tfl__log(k->ctx, TFL_LOG_INFO,
                     "%s on %s, input (%lld, %lld, %lld, %lld), filter (%lld, %lld, %lld, %lld): "
                     "cuDNN algorithm %s (%d), %.3f ms, the fastest that may run of %d timed "
                     "(%s, workspace %.1f MiB)",
                     kind_name[kind], k->dev->name, (long long)g->n, (long long)g->h,
                     (long long)g->w, (long long)g->c, (long long)g->kh, (long long)g->kw,
                     (long long)g->c, (long long)g->f, algo_name(kind, e->algo), e->algo,
                     (double)c[i].ms, count,
                     e->math == CUDNN_FMA_MATH ? "FMA math" : "tensor cores allowed",
                     (double)e->ws / 1048576.0);
        return;
    }
    if (r != CUDNN_STATUS_SUCCESS)
        snprintf(why, size, "cuDNN's algorithm %s failed: %s", timed ? "search" : "query",
                 cudnnGetErrorString(r));
    else if (!any)
        snprintf(why, size, "cuDNN has no algorithm for this shape and dtype (%d answers)", count);
    else
        snprintf(why, size,
                 "no algorithm of cuDNN's %d is %sFFT-free and within %zu MiB of workspace", count,
                 det ? "deterministic, " : "", limit >> 20);
}

static void log_im2col(const tfl__kcall *k, tfl_log_level level, tfl__conv_kind kind,
                       const tflcu_conv *g, const char *why)
{
    tfl__log(k->ctx, level,
             "%s on %s runs im2col + cuBLAS, not cuDNN, for input (%lld, %lld, %lld, %lld), "
             "filter (%lld, %lld, %lld, %lld), strides (%lld, %lld), dilations (%lld, %lld): %s",
             kind_name[kind], k->dev->name, (long long)g->n, (long long)g->h, (long long)g->w,
             (long long)g->c, (long long)g->kh, (long long)g->kw, (long long)g->c, (long long)g->f,
             (long long)g->sh, (long long)g->sw, (long long)g->dh, (long long)g->dw, why);
}

/* Runs entry e's algorithm; false when cuBLAS or cuDNN refused (nothing kept in the ctx, the
 * reason in why), true otherwise (*st: TFL_OK or the allocator's error, kept). */
static bool run(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                const tflcu_conv *g, cudnnDataType_t dt, const entry *e, const void *a,
                const void *b, void *out, tfl_status *st, char *why, size_t size)
{
    bool dbl = dt == CUDNN_DATA_DOUBLE; /* alpha and beta: double, else float (also 16-bit) */
    int64_t K = g->kh * g->kw * g->c, F = g->f;
    size_t filt = krsc_bytes(g, dt), got = 0;
    char *ws = tfl__allocator_get(&k->dev->alloc, filt + e->ws, &got);
    if (!ws) {
        *st = k->ctx->err_code;
        return true;
    }
    void *krsc = ws, *work = e->ws ? ws + filt : NULL;
    const float f1 = 1.0f, f0 = 0.0f;
    const double d1 = 1.0, d0 = 0.0;
    const void *one = dbl ? (const void *)&d1 : (const void *)&f1;
    const void *zero = dbl ? (const void *)&d0 : (const void *)&f0;
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    cudnnStatus_t r = e->plan ? CUDNN_STATUS_SUCCESS : describe(s, g, dt, e->math);
    if (r == CUDNN_STATUS_SUCCESS && kind != TFL__CONV_BWD_FILTER)
        bs = transpose(k, dt, kind == TFL__CONV_FWD ? b : a, K, F, krsc);
#ifndef TFL_CUDNN_NO_GRAPH
    if (e->plan && bs == CUBLAS_STATUS_SUCCESS) {
        const void *x, *w, *y;
        graph_operands(kind, a, b, out, krsc, &x, &w, &y);
        r = tfl__dnn_plan_execute(s->h, e->plan, x, w, y, work);
        if (r == CUDNN_STATUS_SUCCESS && kind == TFL__CONV_BWD_FILTER)
            bs = transpose(k, dt, krsc, F, K, out);
    } else
#endif
    if (r == CUDNN_STATUS_SUCCESS && bs == CUBLAS_STATUS_SUCCESS) {
        if (kind == TFL__CONV_FWD) /* a = x, b = w */
            r = cudnnConvolutionForward(s->h, one, s->xd, a, s->wd, krsc, s->cd,
                                        (cudnnConvolutionFwdAlgo_t)e->algo, work, e->ws, zero,
                                        s->yd, out);
        else if (kind == TFL__CONV_BWD_DATA) /* a = w, b = dy */
            r = cudnnConvolutionBackwardData(s->h, one, s->wd, krsc, s->yd, b, s->cd,
                                             (cudnnConvolutionBwdDataAlgo_t)e->algo, work, e->ws,
                                             zero, s->xd, out);
        else { /* a = x, b = dy: dw in KRSC, then transposed into out (HWIO) */
            r = cudnnConvolutionBackwardFilter(s->h, one, s->xd, a, s->yd, b, s->cd,
                                               (cudnnConvolutionBwdFilterAlgo_t)e->algo, work,
                                               e->ws, zero, s->wd, krsc);
            if (r == CUDNN_STATUS_SUCCESS) bs = transpose(k, dt, krsc, F, K, out);
        }
    }
    tfl__allocator_put(&k->dev->alloc, ws, got);
    if (r != CUDNN_STATUS_SUCCESS && e->plan)
        snprintf(why, size, "cuDNN's graph API plan failed: %s", cudnnGetErrorString(r));
    else if (r != CUDNN_STATUS_SUCCESS)
        snprintf(why, size, "cuDNN failed with algorithm %d: %s", e->algo, cudnnGetErrorString(r));
    else if (bs != CUBLAS_STATUS_SUCCESS)
        snprintf(why, size, "the filter transpose (cuBLAS geam) failed: %s",
                 cublasGetStatusString(bs));
    else {
        *st = TFL_OK;
        return true;
    }
    (void)cudaGetLastError(); /* a launch error of the failed call must not stick */
    return false;
}

bool tfl__cudnn_conv(const tfl__kcall *k, tfl__conv_kind kind, const tflcu_conv *g, const void *a,
                     const void *b, void *out, tfl_status *st)
{
    struct tfl__cudnn_state *s = state(k);
    if (!s) { /* the op fails (no_memory): never im2col instead */
        *st = TFL_RESOURCE_EXHAUSTED;
        return true;
    }
    if (s->off) return false;
    tfl_dtype dtype = (tfl_dtype)k->out->dtype;
    cudnnDataType_t dt;
    if (dtype == TFL_DTYPE_FLOAT32)
        dt = CUDNN_DATA_FLOAT;
    else if (dtype == TFL_DTYPE_FLOAT64)
        dt = CUDNN_DATA_DOUBLE;
    else if (dtype == TFL_DTYPE_FLOAT16)
        dt = CUDNN_DATA_HALF;
    else if (dtype == TFL_DTYPE_BFLOAT16)
        dt = CUDNN_DATA_BFLOAT16;
    else
        return false;
    bool det = tfl_ctx_deterministic(k->ctx);
    uintptr_t bits = (uintptr_t)a | (uintptr_t)b | (uintptr_t)out;
    int64_t align = 16; /* what the operands' addresses promise, up to 16 bytes */
    while (align > 1 && (bits & (uintptr_t)(align - 1))) align >>= 1;
    int64_t key[KEY_LEN];
    make_key(key, kind, dtype, det, policy_math(k, dt), align, g);
    entry *e = NULL;
    for (int i = 0; i < CACHE_SLOTS && !e; i++)
        if (s->cache[i].used && !memcmp(s->cache[i].key, key, sizeof key)) e = &s->cache[i];
    char why[256];
    if (!e) {
        e = &s->cache[s->next];
        s->next = (s->next + 1) % CACHE_SLOTS;
        tfl__dnn_plan_free(k->ctx, e->plan); /* the entry replaced */
        memset(e, 0, sizeof *e);
        memcpy(e->key, key, sizeof key);
        e->used = true;
        tfl_status failed = TFL_OK;
        choose(k, s, kind, g, dt, det, e, a, b, out, &failed, why, sizeof why);
        if (failed != TFL_OK) { /* kept in the ctx; the shape is asked again next time */
            e->used = false;
            *st = failed;
            return true;
        }
        if (e->algo < 0) log_im2col(k, TFL_LOG_INFO, kind, g, why);
    }
    if (e->algo < 0) return false;
    if (run(k, s, kind, g, dt, e, a, b, out, st, why, sizeof why)) return true;
    log_im2col(k, TFL_LOG_WARNING, kind, g, why);
    tfl__dnn_plan_free(k->ctx, e->plan);
    e->plan = NULL;
    e->algo = -1;
    return false;
}
