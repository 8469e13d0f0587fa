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
 *  - Arithmetic: CUDNN_FMA_MATH (no TF32 tensor cores), the convolution computed in the
 *    data type; FFT algorithms, whose rounding is far from the CPU's, are not taken.
 *  - Algorithms: cudnnGet*Algorithm_v7 (cuDNN's heuristics, nothing run), the first result
 *    that succeeds, is deterministic when tfl_ctx_deterministic(ctx) (perf determinism, and
 *    never the atomics-based BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0 / _3), and needs at most
 *    WS_CAP bytes of workspace. The choice is cached per shape key (kind, dtype,
 *    deterministic flag, shapes, strides, dilations, padding) in a table of CACHE_SLOTS per
 *    device, replaced round robin; a shape without an algorithm is cached as "im2col", with
 *    its reason logged once (INFO) when the entry is made. A cuDNN call that fails at run
 *    time is logged (WARNING) and its shape moved to im2col.
 *  - Workspaces come from the device's caching allocator and go back after the call is
 *    enqueued (later work on the same stream may reuse them).
 */
#include "cuda_internal.h"

#include <cudnn.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define CACHE_SLOTS 64
#define WS_CAP ((size_t)256 << 20) /* the largest workspace an algorithm may ask for */
#define KEY_LEN 18

typedef struct entry {
    bool used;
    int64_t key[KEY_LEN];
    int algo;  /* the cuDNN algorithm, or -1: im2col for this shape */
    size_t ws; /* its workspace bytes */
} entry;

struct tfl__cudnn_state {
    bool off; /* TFL_CUDNN=0, or no handle: every convolution runs im2col */
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int next; /* the slot a new shape takes */
    entry cache[CACHE_SLOTS];
};

static const char *const kind_name[] = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};

static bool env_off(void)
{
    const char *v = getenv("TFL_CUDNN");
    return v && (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false"));
}

void tfl__cudnn_free(tfl__cuda_device *cu)
{
    struct tfl__cudnn_state *s = cu->dnn;
    if (!s) return;
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
    if (env_off()) {
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

static void make_key(int64_t key[KEY_LEN], tfl__conv_kind kind, tfl_dtype dt, bool det,
                     const tflcu_conv *g)
{
    const int64_t v[KEY_LEN] = {kind, dt,    det,   g->n,  g->h,  g->w,  g->c,  g->kh, g->kw,
                                g->f, g->oh, g->ow, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl};
    memcpy(key, v, sizeof v);
}

/* the descriptors of shape g; CUDNN_STATUS_SUCCESS or cuDNN's complaint */
static cudnnStatus_t describe(struct tfl__cudnn_state *s, const tflcu_conv *g, cudnnDataType_t dt)
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
                                            (int)g->dh, (int)g->dw, CUDNN_CROSS_CORRELATION, dt);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnSetConvolutionMathType(s->cd, CUDNN_FMA_MATH);
    return r;
}

static bool fits_int(int64_t v)
{
    return v >= 0 && v <= INT32_MAX;
}

/* Picks the algorithm of a shape not in the cache: e->algo and e->ws, or algo -1 and the
 * reason in why. */
static void choose(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                   const tflcu_conv *g, cudnnDataType_t dt, bool det, entry *e, char *why,
                   size_t size)
{
    e->algo = -1;
    e->ws = 0;
    int64_t pb_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1 - g->h - g->pt;
    int64_t pb_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1 - g->w - g->pl;
    if (!fits_int(g->n * g->h * g->w * g->c) || !fits_int(g->n * g->oh * g->ow * g->f) ||
        !fits_int(g->kh * g->kw * g->c * g->f)) {
        snprintf(why, size,
                 "a tensor has 2^31 or more elements (cuDNN's legacy API counts in int)");
        return;
    }
    cudnnStatus_t r = describe(s, g, dt);
    if (r != CUDNN_STATUS_SUCCESS) {
        snprintf(why, size, "cuDNN refuses the descriptors: %s", cudnnGetErrorString(r));
        return;
    }
    int on, oc, ohh, oww;
    r = cudnnGetConvolution2dForwardOutputDim(s->cd, s->xd, s->wd, &on, &oc, &ohh, &oww);
    if (r != CUDNN_STATUS_SUCCESS || on != g->n || oc != g->f || ohh != g->oh || oww != g->ow) {
        snprintf(why, size,
                 "cuDNN pads both sides alike, this padding is (%lld, %lld) before and "
                 "(%lld, %lld) after",
                 (long long)g->pt, (long long)g->pl, (long long)pb_h, (long long)pb_w);
        return;
    }
    int count = 0;
    bool any = false; /* an algorithm that succeeds, before the filters below */
    if (kind == TFL__CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        r = cudnnGetConvolutionForwardAlgorithm_v7(s->h, s->xd, s->wd, s->cd, s->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, p);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < count; i++) {
            size_t ws = 0;
            if (p[i].status != CUDNN_STATUS_SUCCESS) continue;
            any = true;
            if (p[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
                p[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING)
                continue;
            if (det && p[i].determinism != CUDNN_DETERMINISTIC) continue;
            if (cudnnGetConvolutionForwardWorkspaceSize(s->h, s->xd, s->wd, s->cd, s->yd, p[i].algo,
                                                        &ws) != CUDNN_STATUS_SUCCESS ||
                ws > WS_CAP)
                continue;
            e->algo = (int)p[i].algo;
            e->ws = ws;
            break;
        }
    } else if (kind == TFL__CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        r = cudnnGetConvolutionBackwardDataAlgorithm_v7(
            s->h, s->wd, s->yd, s->cd, s->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, p);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < count; i++) {
            size_t ws = 0;
            if (p[i].status != CUDNN_STATUS_SUCCESS) continue;
            any = true;
            if (p[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
                p[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING)
                continue;
            if (det && (p[i].determinism != CUDNN_DETERMINISTIC ||
                        p[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0))
                continue;
            if (cudnnGetConvolutionBackwardDataWorkspaceSize(
                    s->h, s->wd, s->yd, s->cd, s->xd, p[i].algo, &ws) != CUDNN_STATUS_SUCCESS ||
                ws > WS_CAP)
                continue;
            e->algo = (int)p[i].algo;
            e->ws = ws;
            break;
        }
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        r = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            s->h, s->xd, s->yd, s->cd, s->wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, p);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < count; i++) {
            size_t ws = 0;
            if (p[i].status != CUDNN_STATUS_SUCCESS) continue;
            any = true;
            if (p[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
                p[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING)
                continue;
            if (det && (p[i].determinism != CUDNN_DETERMINISTIC ||
                        p[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 ||
                        p[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3))
                continue;
            if (cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    s->h, s->xd, s->yd, s->cd, s->wd, p[i].algo, &ws) != CUDNN_STATUS_SUCCESS ||
                ws > WS_CAP)
                continue;
            e->algo = (int)p[i].algo;
            e->ws = ws;
            break;
        }
    }
    if (e->algo >= 0) return;
    if (r != CUDNN_STATUS_SUCCESS)
        snprintf(why, size, "cuDNN's algorithm query failed: %s", cudnnGetErrorString(r));
    else if (!any)
        snprintf(why, size, "cuDNN has no algorithm for this shape and dtype (%d answers)", count);
    else
        snprintf(why, size,
                 "no algorithm of cuDNN's %d is %sFFT-free and within %zu MiB of workspace", count,
                 det ? "deterministic, " : "", WS_CAP >> 20);
    (void)k;
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

/* dst (cols x rows, row-major) = the transpose of src (rows x cols, row-major), on the
 * device's stream */
static cublasStatus_t transpose(const tfl__kcall *k, bool dbl, const void *src, int64_t rows,
                                int64_t cols, void *dst)
{
    cublasHandle_t b = tfl__cuda(k->dev)->blas;
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

/* Runs entry e's algorithm; false when cuBLAS or cuDNN refused (nothing kept in the ctx, the
 * reason in why), true otherwise (*st: TFL_OK or the allocator's error, kept). */
static bool run(const tfl__kcall *k, struct tfl__cudnn_state *s, tfl__conv_kind kind,
                const tflcu_conv *g, cudnnDataType_t dt, const entry *e, const void *a,
                const void *b, void *out, tfl_status *st, char *why, size_t size)
{
    bool dbl = dt == CUDNN_DATA_DOUBLE;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    int64_t K = g->kh * g->kw * g->c, F = g->f;
    size_t filt = ((size_t)(K * F) * es + 255) / 256 * 256; /* the KRSC filter */
    size_t got = 0;
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
    cudnnStatus_t r = describe(s, g, dt);
    if (r == CUDNN_STATUS_SUCCESS && kind != TFL__CONV_BWD_FILTER)
        bs = transpose(k, dbl, kind == TFL__CONV_FWD ? b : a, K, F, krsc);
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
            if (r == CUDNN_STATUS_SUCCESS) bs = transpose(k, dbl, krsc, F, K, out);
        }
    }
    tfl__allocator_put(&k->dev->alloc, ws, got);
    if (r != CUDNN_STATUS_SUCCESS)
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
    else
        return false;
    bool det = tfl_ctx_deterministic(k->ctx);
    int64_t key[KEY_LEN];
    make_key(key, kind, dtype, det, g);
    entry *e = NULL;
    for (int i = 0; i < CACHE_SLOTS && !e; i++)
        if (s->cache[i].used && !memcmp(s->cache[i].key, key, sizeof key)) e = &s->cache[i];
    char why[256];
    if (!e) {
        e = &s->cache[s->next];
        s->next = (s->next + 1) % CACHE_SLOTS;
        memset(e, 0, sizeof *e);
        memcpy(e->key, key, sizeof key);
        e->used = true;
        choose(k, s, kind, g, dt, det, e, why, sizeof why);
        if (e->algo < 0) log_im2col(k, TFL_LOG_INFO, kind, g, why);
    }
    if (e->algo < 0) return false;
    if (run(k, s, kind, g, dt, e, a, b, out, st, why, sizeof why)) return true;
    log_im2col(k, TFL_LOG_WARNING, kind, g, why);
    e->algo = -1;
    return false;
}
