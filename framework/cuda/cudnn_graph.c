/*
 * framework/cuda/cudnn_graph.c: a convolution through cuDNN's graph (backend) API, which
 * cudnn_conv.c tries before the legacy calls. The legacy API reaches the few algorithms of
 * cuDNN 7's enums; the graph API reaches every engine cuDNN 9 has for a shape, each with its
 * knobs (tiles, split-K), which is where PyTorch's cuDNN convolutions come from.
 *
 *  - One operation graph per shape: x, w (KRSC, as cudnn_conv.c lays it out) and y as NHWC
 *    tensors (dimensions in N, C, H, W order with NHWC strides), a convolution descriptor with
 *    TensorFlow's padding before and after (the graph API takes both, so SAME padding with an
 *    odd total runs here too), and one forward, backward-data or backward-filter operation.
 *  - Engine configurations from cuDNN's heuristics (mode A, then the fallback list). One may
 *    run when its engine's numerical notes allow it: no FFT; no tensor cores, down-converted
 *    inputs or reduced-precision reductions under the float32 policy (cudnn_conv.c passes
 *    whether tensor cores are allowed); nothing non-deterministic in deterministic mode; no
 *    runtime compilation (NVRTC, and seconds per shape); its execution plan finalizes; its
 *    workspace is within the limit.
 *  - Autotuning: up to TUNE_PLANS admissible plans are timed on the op's own buffers (one
 *    warm-up run, then the mean of TUNE_RUNS, with CUDA events on the device's stream) and the
 *    fastest is kept. Without autotuning (deterministic mode, TFL_CUDNN_AUTOTUNE=0) the first
 *    admissible plan in heuristic order is kept.
 *  - The kept plan and every descriptor it was built from live in a tfl__dnn_plan, freed with
 *    the cache entry that holds it.
 */
#include "cudnn_graph.h"

#include <stdio.h>
#include <string.h>

#define MAX_CFGS 24   /* engine configurations read from one heuristics query */
#define TUNE_PLANS 12 /* admissible plans timed at most */
#define TUNE_RUNS 3
#define UID_X 'x'
#define UID_W 'w'
#define UID_Y 'y'

struct tfl__dnn_plan {
    cudnnBackendDescriptor_t x, w, y, conv, op, graph, cfg, plan;
    int64_t ws;     /* the plan's workspace bytes */
    int64_t engine; /* cuDNN's global engine index, for the log */
};

typedef cudnnBackendDescriptor_t desc;

static void destroy(desc *d)
{
    if (*d) (void)cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

void tfl__dnn_plan_free(tfl_ctx *ctx, struct tfl__dnn_plan *p)
{
    if (!p) return;
    destroy(&p->plan);
    destroy(&p->cfg);
    destroy(&p->graph);
    destroy(&p->op);
    destroy(&p->conv);
    destroy(&p->y);
    destroy(&p->w);
    destroy(&p->x);
    tfl__host_free(ctx, p);
}

int64_t tfl__dnn_plan_workspace(const struct tfl__dnn_plan *p)
{
    return p->ws;
}

int64_t tfl__dnn_plan_engine(const struct tfl__dnn_plan *p)
{
    return p->engine;
}

/* a finalized NHWC tensor of dimensions (n, c, h, w) */
static cudnnStatus_t tensor(desc *d, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c,
                            int64_t h, int64_t w, int64_t align)
{
    const int64_t dims[4] = {n, c, h, w}, strides[4] = {h * w * c, 1, w * c, c};
    cudnnStatus_t r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                     &align);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(*d);
    return r;
}

/* the convolution descriptor of shape g: padding before and after, strides, dilations */
static cudnnStatus_t convolution(desc *d, const tflcu_conv *g, cudnnDataType_t dt)
{
    /* the 16-bit types accumulate in float */
    const cudnnDataType_t comp =
        dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16 ? CUDNN_DATA_FLOAT : dt;
    int64_t pb_h = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1 - g->h - g->pt;
    int64_t pb_w = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1 - g->w - g->pl;
    const int64_t dims = 2, pre[2] = {g->pt, g->pl};
    const int64_t post[2] = {pb_h > 0 ? pb_h : 0, pb_w > 0 ? pb_w : 0};
    const int64_t strides[2] = {g->sh, g->sw}, dil[2] = {g->dh, g->dw};
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnStatus_t r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, d);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1,
                                     &dims);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                     &comp);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                     CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2,
                                     pre);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
                                     post);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(*d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
                                     strides);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(*d);
    return r;
}

/* the operation of kind over p's tensors and convolution, and its one-node graph */
static cudnnStatus_t operation(struct tfl__dnn_plan *p, tfl__conv_kind kind, cudnnDataType_t dt,
                               cudnnHandle_t h)
{
    static const cudnnBackendDescriptorType_t types[3] = {
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    /* x, w, y, conv, alpha, beta per kind */
    static const cudnnBackendAttributeName_t attrs[3][6] = {
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
    };
    const cudnnBackendAttributeName_t *at = attrs[kind];
    const double d1 = 1.0, d0 = 0.0;
    const float f1 = 1.0f, f0 = 0.0f;
    bool dbl = dt == CUDNN_DATA_DOUBLE;
    cudnnBackendAttributeType_t st = dbl ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
    const void *one = dbl ? (const void *)&d1 : (const void *)&f1;
    const void *zero = dbl ? (const void *)&d0 : (const void *)&f0;
    cudnnStatus_t r = cudnnBackendCreateDescriptor(types[kind], &p->op);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->op, at[0], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->x);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->op, at[1], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->w);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->op, at[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->y);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->op, at[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->conv);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendSetAttribute(p->op, at[4], st, 1, one);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendSetAttribute(p->op, at[5], st, 1, zero);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(p->op);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &p->graph);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
                                     1, &h);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(p->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->op);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(p->graph);
    return r;
}

/* Whether engine configuration cfg may run (see the file's comment). */
static bool admissible(desc cfg, bool det, bool tensor_cores)
{
    desc engine = NULL;
    int64_t n = 0;
    bool ok = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) ==
                  CUDNN_STATUS_SUCCESS;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t nn = 0, nb = 0;
    ok = ok && cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                        CUDNN_TYPE_NUMERICAL_NOTE,
                                        CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn,
                                        notes) == CUDNN_STATUS_SUCCESS;
    /* behaviour notes unreadable (an older cuDNN): none */
    if (ok && cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                       CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                       &nb, behaviour) != CUDNN_STATUS_SUCCESS)
        nb = 0;
    for (int64_t i = 0; ok && i < nn && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++) {
        cudnnBackendNumericalNote_t t = notes[i];
        if (t == CUDNN_NUMERICAL_NOTE_FFT) ok = false;
        if (det && t == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) ok = false;
        if (!tensor_cores &&
            (t == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || t == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
             t == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
            ok = false;
    }
    for (int64_t i = 0; ok && i < nb && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
        if (behaviour[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) ok = false;
    destroy(&engine);
    return ok;
}

/* the global index of cfg's engine, or -1 */
static int64_t engine_index(desc cfg)
{
    desc engine = NULL;
    int64_t n = 0, index = -1;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) ==
            CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &engine) == CUDNN_STATUS_SUCCESS)
        (void)cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                       &n, &index);
    destroy(&engine);
    return index;
}

/* a finalized execution plan of cfg and its workspace; NULL when cuDNN refuses it */
static desc make_plan(cudnnHandle_t h, desc cfg, int64_t *ws)
{
    desc plan = NULL;
    int64_t n = 0;
    cudnnStatus_t r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                     &h);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(plan);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, ws);
    if (r != CUDNN_STATUS_SUCCESS) destroy(&plan);
    return plan;
}

cudnnStatus_t tfl__dnn_plan_execute(cudnnHandle_t h, const struct tfl__dnn_plan *p, const void *x,
                                    const void *w, const void *y, void *work)
{
    desc vp = NULL;
    const int64_t uids[3] = {UID_X, UID_W, UID_Y};
    void *ptrs[3] = {(void *)(uintptr_t)x, (void *)(uintptr_t)w, (void *)(uintptr_t)y};
    cudnnStatus_t r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
                                     uids);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                     3, ptrs);
    if (r == CUDNN_STATUS_SUCCESS)
        r = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                     &work);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(vp);
    if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendExecute(h, p->plan, vp);
    destroy(&vp);
    return r;
}

/* the mean milliseconds of TUNE_RUNS executions of plan (after one warm-up), or -1 */
static float time_plan(const tfl__kcall *k, cudnnHandle_t h, struct tfl__dnn_plan *p,
                       const void *x, const void *w, const void *y, void *work)
{
    cudaStream_t stream = tfl__cuda(k->dev)->stream;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms = -1;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) goto out;
    if (tfl__dnn_plan_execute(h, p, x, w, y, work) != CUDNN_STATUS_SUCCESS) goto out;
    if (cudaEventRecord(e0, stream) != cudaSuccess) goto out;
    for (int i = 0; i < TUNE_RUNS; i++)
        if (tfl__dnn_plan_execute(h, p, x, w, y, work) != CUDNN_STATUS_SUCCESS) goto out;
    if (cudaEventRecord(e1, stream) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
        cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
        ms = -1;
        goto out;
    }
    ms /= TUNE_RUNS;
out:
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
    (void)cudaGetLastError(); /* a failed run's launch error must not stick */
    return ms;
}

struct tfl__dnn_plan *tfl__dnn_plan_choose(const tfl__kcall *k, cudnnHandle_t h,
                                           tfl__conv_kind kind, const tflcu_conv *g,
                                           cudnnDataType_t dt, bool det, bool tensor_cores,
                                           bool tune, int64_t ws_limit, int64_t align,
                                           const void *x, const void *w, const void *y,
                                           void *work, int *tried, float *best_ms,
                                           bool *no_memory, char *why, size_t size)
{
    *tried = 0;
    *best_ms = 0;
    struct tfl__dnn_plan *p = tfl__host_alloc(k->ctx, sizeof *p, 16);
    *no_memory = !p;
    if (!p) {
        tfl__set_error(k->ctx, TFL_RESOURCE_EXHAUSTED,
                       "cuDNN on %s: out of host memory for a convolution plan (%zu bytes)",
                       k->dev->name, sizeof *p);
        return NULL;
    }
    memset(p, 0, sizeof *p);
    cudnnStatus_t r = tensor(&p->x, UID_X, dt, g->n, g->c, g->h, g->w, align);
    if (r == CUDNN_STATUS_SUCCESS) r = tensor(&p->w, UID_W, dt, g->f, g->c, g->kh, g->kw, align);
    if (r == CUDNN_STATUS_SUCCESS) r = tensor(&p->y, UID_Y, dt, g->n, g->f, g->oh, g->ow, align);
    if (r == CUDNN_STATUS_SUCCESS) r = convolution(&p->conv, g, dt);
    if (r == CUDNN_STATUS_SUCCESS) r = operation(p, kind, dt, h);
    if (r != CUDNN_STATUS_SUCCESS) {
        snprintf(why, size, "cuDNN's graph API refuses the convolution: %s",
                 cudnnGetErrorString(r));
        tfl__dnn_plan_free(k->ctx, p);
        return NULL;
    }
    static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    float best = -1;
    int answers = 0;
    for (int m = 0; m < 2 && !p->plan; m++) {
        desc heur = NULL, cfgs[MAX_CFGS] = {0};
        int64_t count = 0;
        r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
        if (r == CUDNN_STATUS_SUCCESS)
            r = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->graph);
        if (r == CUDNN_STATUS_SUCCESS)
            r = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                         &modes[m]);
        if (r == CUDNN_STATUS_SUCCESS) r = cudnnBackendFinalize(heur);
        for (int i = 0; r == CUDNN_STATUS_SUCCESS && i < MAX_CFGS; i++)
            r = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]);
        if (r == CUDNN_STATUS_SUCCESS)
            r = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, MAX_CFGS, &count, cfgs);
        if (r != CUDNN_STATUS_SUCCESS) count = 0;
        if (count > MAX_CFGS) count = MAX_CFGS;
        answers += (int)count;
        for (int64_t i = 0; i < count; i++) {
            if (!admissible(cfgs[i], det, tensor_cores)) continue;
            int64_t ws = 0;
            desc plan = make_plan(h, cfgs[i], &ws);
            if (!plan) continue;
            if (ws > ws_limit) {
                destroy(&plan);
                continue;
            }
            float ms = 0;
            if (tune) {
                struct tfl__dnn_plan trial = *p;
                trial.plan = plan;
                ms = time_plan(k, h, &trial, x, w, y, work);
                ++*tried;
                if (ms < 0) { /* it failed to run: not a candidate */
                    destroy(&plan);
                    continue;
                }
            }
            if (!p->plan || ms < best) { /* keep it (and its configuration) */
                destroy(&p->plan);
                destroy(&p->cfg);
                p->plan = plan;
                p->cfg = cfgs[i];
                cfgs[i] = NULL;
                p->ws = ws;
                best = ms;
            } else {
                destroy(&plan);
            }
            if (!tune || *tried >= TUNE_PLANS) break;
        }
        for (int i = 0; i < MAX_CFGS; i++)
            destroy(&cfgs[i]);
        destroy(&heur);
    }
    if (!p->plan) {
        snprintf(why, size,
                 "none of the %d engine configurations of cuDNN's heuristics is admissible "
                 "(FFT, %s%sruntime compilation, or a workspace above %lld MiB) and runs",
                 answers, tensor_cores ? "" : "tensor cores, ", det ? "non-deterministic, " : "",
                 (long long)(ws_limit >> 20));
        tfl__dnn_plan_free(k->ctx, p);
        return NULL;
    }
    p->engine = engine_index(p->cfg);
    *best_ms = best > 0 ? best : 0;
    return p;
}
