/*
 * framework/cuda/cuda_device.c: the CUDA backend (tfl__cuda_backend): one GPU:N device per
 * CUDA device, each with one stream on which every kernel, copy and memset runs in issue
 * order, so that the host waits only when values are read back (copy_host) or on sync.
 * Device memory comes from cudaMalloc through the framework's caching allocator (host-side
 * bookkeeping, allocator.c), so a training step's steady state calls no cudaMalloc; a freed
 * block may be reused at once by later work on the same stream, and cudaFree (raw_free, only
 * on trim or teardown) waits for the device itself. Small host-to-device copies are staged
 * through a pinned buffer and run asynchronously.
 *
 * The runtime is linked statically and loads the driver itself: on a machine without a GPU
 * or driver cudaGetDeviceCount fails, device_count answers 0 and tapeflow runs on the CPU.
 */
#include "cuda_internal.h"

#include <stdio.h>

tfl_status tfl__cuda_check(tfl__device *dev, int err, const char *what)
{
    if (TFL_LIKELY(err == 0)) return TFL_OK;
    if (err < 0)
        return tfl__set_error(dev->ctx, TFL_INTERNAL, "%s: no GPU kernel on %s for these dtypes",
                              what, dev->name);
    (void)cudaGetLastError(); /* clear a sticky launch error so later calls report their own */
    return tfl__set_error(dev->ctx, TFL_INTERNAL, "%s failed on %s: %s (%s)", what, dev->name,
                          cudaGetErrorString((cudaError_t)err), cudaGetErrorName((cudaError_t)err));
}

static tfl_status use(tfl__device *dev)
{
    return tfl__cuda_check(dev, cudaSetDevice(tfl__cuda(dev)->ordinal), "cudaSetDevice");
}

static void *cu_raw_alloc(tfl__device *dev, size_t bytes)
{
    void *p = NULL;
    if (use(dev) != TFL_OK) return NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory: the allocator trims, retries, reports */
        return NULL;
    }
    return p; /* cudaMalloc aligns to 256 bytes >= TFL_ALIGN */
}

static void cu_raw_free(tfl__device *dev, void *ptr)
{
    if (use(dev) != TFL_OK) return;
    (void)cudaFree(ptr); /* waits for the work still using it */
}

/* What may not happen while the stream is captured: the host waiting on it. */
static tfl_status refuse_capturing(tfl__device *dev, const char *what)
{
    return tfl__set_error(dev->ctx, TFL_FAILED_PRECONDITION, "%s on %s while its work is "
                          "captured into a CUDA graph (the host would wait on the device)", what,
                          dev->name);
}

static tfl_status cu_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                               int to_host)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    if (bytes == 0) return TFL_OK;
    if (cu->capturing) return refuse_capturing(dev, to_host ? "a read of device memory" : "a copy "
                                               "from host memory");
    TFL_TRY(use(dev));
    TFL_TRY(tfl__cuda_check(
        dev,
        cudaMemcpyAsync(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                        cu->stream),
        "cudaMemcpyAsync"));
    return tfl__cuda_check(dev, cudaStreamSynchronize(cu->stream), "cudaStreamSynchronize");
}

static cudaStream_t stream_of(tfl__device *dev, tfl__stream *s)
{
    return s ? (cudaStream_t)(void *)s : tfl__cuda(dev)->stream;
}

static tfl_status cu_sync(tfl__device *dev)
{
    TFL_TRY(use(dev));
    return tfl__cuda_check(dev, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static tfl_status cu_copy_device(tfl__device *dev, tfl__stream *stream, void *dst, const void *src,
                                 size_t bytes)
{
    if (bytes == 0) return TFL_OK;
    TFL_TRY(use(dev));
    return tfl__cuda_check(
        dev, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(dev, stream)),
        "cudaMemcpyAsync (device to device)");
}

/* Whether p is page-locked host memory (cu_host_alloc's): copied from directly. */
static bool is_pinned(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/* Host -> device copies up to the staging size go through pinned memory and return before
 * the copy is done (the caller's buffer is free at once), unless the source is pinned
 * already (host_alloc's: the caller keeps it unchanged until the copy is done); larger ones
 * and device -> host copies are cudaMemcpyAsync from the caller's memory (pageable memory
 * CUDA stages itself). */
static tfl_status cu_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                     const void *src, size_t bytes, int to_host)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    cudaStream_t s = stream_of(dev, stream);
    if (bytes == 0) return TFL_OK;
    if (cu->capturing) return refuse_capturing(dev, "a copy to or from host memory");
    TFL_TRY(use(dev));
    if (!to_host && cu->staging && bytes <= TFL_CUDA_STAGING_BYTES && !is_pinned(src)) {
        TFL_TRY(
            tfl__cuda_check(dev, cudaEventSynchronize(cu->staging_done), "cudaEventSynchronize"));
        memcpy(cu->staging, src, bytes);
        TFL_TRY(tfl__cuda_check(dev,
                                cudaMemcpyAsync(dst, cu->staging, bytes, cudaMemcpyHostToDevice, s),
                                "cudaMemcpyAsync"));
        return tfl__cuda_check(dev, cudaEventRecord(cu->staging_done, s), "cudaEventRecord");
    }
    return tfl__cuda_check(
        dev,
        cudaMemcpyAsync(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                        s),
        "cudaMemcpyAsync");
}

static tfl_status cu_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                            size_t bytes)
{
    if (bytes == 0) return TFL_OK;
    TFL_TRY(use(dev));
    return tfl__cuda_check(dev, cudaMemsetAsync(dst, value, bytes, stream_of(dev, stream)),
                           "cudaMemsetAsync");
}

static tfl_status cu_stream_new(tfl__device *dev, tfl__stream **out)
{
    cudaStream_t s = NULL;
    *out = NULL;
    TFL_TRY(use(dev));
    TFL_TRY(tfl__cuda_check(dev, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                            "cudaStreamCreate"));
    *out = (tfl__stream *)(void *)s;
    return TFL_OK;
}

static void cu_stream_free(tfl__device *dev, tfl__stream *stream)
{
    if (stream && use(dev) == TFL_OK) (void)cudaStreamDestroy((cudaStream_t)(void *)stream);
}

static tfl_status cu_stream_sync(tfl__device *dev, tfl__stream *stream)
{
    TFL_TRY(use(dev));
    return tfl__cuda_check(dev, cudaStreamSynchronize(stream_of(dev, stream)),
                           "cudaStreamSynchronize");
}

static tfl_status cu_event_new(tfl__device *dev, tfl__event **out)
{
    cudaEvent_t e = NULL;
    *out = NULL;
    TFL_TRY(use(dev));
    TFL_TRY(tfl__cuda_check(dev, cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                            "cudaEventCreate"));
    *out = (tfl__event *)(void *)e;
    return TFL_OK;
}

static void cu_event_free(tfl__device *dev, tfl__event *event)
{
    if (event && use(dev) == TFL_OK) (void)cudaEventDestroy((cudaEvent_t)(void *)event);
}

static tfl_status cu_event_record(tfl__device *dev, tfl__event *event, tfl__stream *stream)
{
    return tfl__cuda_check(dev, cudaEventRecord((cudaEvent_t)(void *)event, stream_of(dev, stream)),
                           "cudaEventRecord");
}

static tfl_status cu_event_wait(tfl__device *dev, tfl__stream *stream, tfl__event *event)
{
    return tfl__cuda_check(
        dev, cudaStreamWaitEvent(stream_of(dev, stream), (cudaEvent_t)(void *)event, 0),
        "cudaStreamWaitEvent");
}

static tfl_status cu_event_sync(tfl__device *dev, tfl__event *event)
{
    return tfl__cuda_check(dev, cudaEventSynchronize((cudaEvent_t)(void *)event),
                           "cudaEventSynchronize");
}

static tfl_status cu_mem_info(tfl__device *dev, size_t *free_bytes, size_t *total_bytes)
{
    TFL_TRY(use(dev));
    return tfl__cuda_check(dev, cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

static void cu_describe(tfl__device *dev, char *buf, size_t size)
{
    const tfl__cuda_device *cu = tfl__cuda(dev);
    /* tfl_device_describe adds the memory (mem_info) */
    snprintf(buf, size, "%s, compute capability %d.%d", cu->gpu_name, cu->cc_major, cu->cc_minor);
}

/* ---- pinned host memory (the dataset's upload buffers) ------------------------------------- */

static void *cu_host_alloc(tfl__device *dev, size_t bytes)
{
    void *p = NULL;
    if (use(dev) != TFL_OK) return NULL;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL; /* page-aligned when it succeeds, >= TFL_ALIGN */
    }
    return p;
}

static void cu_host_free(tfl__device *dev, void *ptr)
{
    if (use(dev) == TFL_OK) (void)cudaFreeHost(ptr); /* waits for copies still reading it */
    (void)cudaGetLastError();
}

/* ---- native handles, for dist/'s NCCL path (the device table's last slots) ------------------ */

static int cu_native_ordinal(const tfl__device *dev)
{
    return tfl__cuda(dev)->ordinal;
}

static tfl_status cu_make_current(tfl__device *dev)
{
    return use(dev);
}

static void *cu_native_stream(tfl__device *dev, tfl__stream *stream)
{
    return (void *)stream_of(dev, stream);
}

static tfl_status cu_graph_capture(tfl__device *dev, tfl_status (*issue)(void *arg), void *arg,
                                   void **graph);
static tfl_status cu_graph_launch(tfl__device *dev, void *graph);
static void cu_graph_free(tfl__device *dev, void *graph);

static const tfl__device_ops cuda_ops = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .priority = 10,
    .flags = 0, /* device memory: the framework reaches it only through these slots */
    .raw_alloc = cu_raw_alloc,
    .raw_free = cu_raw_free,
    .copy_host = cu_copy_host,
    .sync = cu_sync,
    .copy_device = cu_copy_device,
    .copy_host_async = cu_copy_host_async,
    .memset = cu_memset,
    .stream_new = cu_stream_new,
    .stream_free = cu_stream_free,
    .stream_sync = cu_stream_sync,
    .event_new = cu_event_new,
    .event_free = cu_event_free,
    .event_record = cu_event_record,
    .event_wait = cu_event_wait,
    .event_sync = cu_event_sync,
    .mem_info = cu_mem_info,
    .describe = cu_describe,
    .native_ordinal = cu_native_ordinal,
    .make_current = cu_make_current,
    .native_stream = cu_native_stream,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .graph_capture = cu_graph_capture,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
};

/* ---- index-check word ------------------------------------------------------------------------ */

tfl_status tfl__cuda_check_reset(tfl__device *dev)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    /* in a capture, once: the checks of the graph's ops then keep the least bad index */
    if (cu->capturing && cu->captured_checks) return TFL_OK;
    if (cu->capturing) cu->captured_checks = true;
    return tfl__cuda_check(dev, cudaMemsetAsync(cu->check, 0xff, sizeof(int64_t), cu->stream),
                           "cudaMemsetAsync");
}

tfl_status tfl__cuda_check_read(tfl__device *dev, int64_t *first_bad)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    if (cu->capturing) { /* read after each launch of the graph (cu_graph_launch) */
        cu->captured_checks = true;
        *first_bad = -1;
        return TFL_OK;
    }
    return cu_copy_host(dev, first_bad, cu->check, sizeof(int64_t), 1);
}

/* ---- graphs (device table version 3) ------------------------------------------------------ */

typedef struct cu_graph {
    cudaGraphExec_t exec;
    bool checks; /* read the index-check word after each launch */
} cu_graph;

static tfl_status cu_graph_capture(tfl__device *dev, tfl_status (*issue)(void *arg), void *arg,
                                   void **graph)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    *graph = NULL;
    TFL_TRY(use(dev));
    /* relaxed: the caching allocator may cudaMalloc a block the captured work needs */
    TFL_TRY(tfl__cuda_check(dev, cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeRelaxed),
                            "cudaStreamBeginCapture"));
    cu->capturing = true;
    cu->captured_checks = false;
    tfl_status st = issue(arg);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(cu->stream, &g);
    cu->capturing = false;
    if (st == TFL_OK && e != cudaSuccess) st = tfl__cuda_check(dev, e, "cudaStreamEndCapture");
    if (st != TFL_OK) (void)cudaGetLastError(); /* a failed capture leaves nothing behind */
    cu_graph *out = NULL;
    if (st == TFL_OK) {
        out = tfl__host_alloc(dev->ctx, sizeof *out, 64);
        if (!out)
            st = tfl__set_error(dev->ctx, TFL_RESOURCE_EXHAUSTED, "out of host memory for a "
                                "CUDA graph on %s", dev->name);
    }
    if (st == TFL_OK) {
        out->checks = cu->captured_checks;
        st = tfl__cuda_check(dev, cudaGraphInstantiate(&out->exec, g, 0), "cudaGraphInstantiate");
    }
    if (g) (void)cudaGraphDestroy(g);
    if (st != TFL_OK) {
        tfl__host_free(dev->ctx, out);
        return st;
    }
    *graph = out;
    return TFL_OK;
}

static tfl_status cu_graph_launch(tfl__device *dev, void *graph)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    cu_graph *g = graph;
    TFL_TRY(use(dev));
    TFL_TRY(tfl__cuda_check(dev, cudaGraphLaunch(g->exec, cu->stream), "cudaGraphLaunch"));
    if (!g->checks) return TFL_OK;
    int64_t bad = -1; /* the captured ops' index checks, as their plain calls read them */
    TFL_TRY(cu_copy_host(dev, &bad, cu->check, sizeof bad, 1));
    TFL_CHECK(dev->ctx, bad < 0, TFL_INVALID_ARGUMENT, "a step replayed from a CUDA graph on %s "
              "met an index or label out of range (at element %lld of a Gather or a sparse "
              "cross-entropy's labels); run it without step_graphs for the op's own message",
              dev->name, (long long)bad);
    return TFL_OK;
}

static void cu_graph_free(tfl__device *dev, void *graph)
{
    cu_graph *g = graph;
    if (!g) return;
    if (use(dev) == TFL_OK) (void)cudaGraphExecDestroy(g->exec);
    tfl__host_free(dev->ctx, g);
}

/* ---- the backend ----------------------------------------------------------------------------- */

static int cuda_device_count(tfl_ctx *ctx)
{
    (void)ctx;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { /* no driver, no GPU: CPU only */
        (void)cudaGetLastError();
        return 0;
    }
    return n > TFL_MAX_DEVICES - 1 ? TFL_MAX_DEVICES - 1 : n;
}

static void cuda_device_free(tfl__device *dev)
{
    tfl__cuda_device *cu = tfl__cuda(dev);
    tfl_ctx *ctx = dev->ctx;
    if (cudaSetDevice(cu->ordinal) == cudaSuccess) {
        if (cu->stream) (void)cudaStreamSynchronize(cu->stream);
        tfl__cudnn_free(cu);
        if (cu->blas) (void)cublasDestroy(cu->blas);
        if (cu->check) (void)cudaFree(cu->check);
        if (cu->opt_scratch) (void)cudaFree(cu->opt_scratch);
        if (cu->staging_done) (void)cudaEventDestroy(cu->staging_done);
        if (cu->staging) (void)cudaFreeHost(cu->staging);
        if (cu->stream) (void)cudaStreamDestroy(cu->stream);
    }
    (void)cudaGetLastError();
    tfl__host_free(ctx, cu);
}

static const tfl__kernel *const families[] = {tfl__cuda_main_kernels, tfl__cuda_shape_kernels,
                                              tfl__cuda_pool_kernels};

static tfl__device *cuda_device_new(tfl_ctx *ctx, int index)
{
    tfl__cuda_device *cu = tfl__host_alloc(ctx, sizeof *cu, 64);
    if (!cu) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_ctx_new: out of memory for GPU:%d", index);
        return NULL;
    }
    memset(cu, 0, sizeof *cu);
    tfl__device *dev = &cu->base;
    dev->ops = &cuda_ops;
    dev->ctx = ctx;
    dev->index = index;
    snprintf(dev->name, sizeof dev->name, "GPU:%d", index);
    cu->ordinal = index;
    int n_gpus = 0;
    cu->multi = cudaGetDeviceCount(&n_gpus) == cudaSuccess && n_gpus > 1;
    struct cudaDeviceProp prop;
    tfl_status st =
        tfl__cuda_check(dev, cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    if (st == TFL_OK) {
        snprintf(cu->gpu_name, sizeof cu->gpu_name, "%s", prop.name);
        cu->total_mem = prop.totalGlobalMem;
        cu->cc_major = prop.major;
        cu->cc_minor = prop.minor;
        st = use(dev);
    }
    if (st == TFL_OK)
        st = tfl__cuda_check(dev, cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking),
                             "cudaStreamCreate");
    if (st == TFL_OK)
        st = tfl__cuda_check(dev, cudaMalloc((void **)&cu->check, sizeof(int64_t)), "cudaMalloc");
    if (st == TFL_OK)
        st = tfl__cuda_check(dev,
                             cudaEventCreateWithFlags(&cu->staging_done, cudaEventDisableTiming),
                             "cudaEventCreate");
    if (st == TFL_OK) {
        cublasStatus_t bs = cublasCreate(&cu->blas);
        if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(cu->blas, cu->stream);
        if (bs != CUBLAS_STATUS_SUCCESS)
            st = tfl__set_error(ctx, TFL_INTERNAL, "cublasCreate failed on GPU:%d: %s", index,
                                cublasGetStatusString(bs));
    }
    if (st == TFL_OK &&
        cudaHostAlloc(&cu->staging, TFL_CUDA_STAGING_BYTES, cudaHostAllocDefault) != cudaSuccess) {
        cu->staging = NULL; /* no pinned memory: copies go unstaged */
        (void)cudaGetLastError();
    }
    if (st != TFL_OK) {
        cuda_device_free(dev);
        return NULL;
    }
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int op = 0; op < TFL_OP_COUNT; op++)
            if (families[f][op].fn) dev->kernels[op] = families[f][op];
    dev->opt_kernels = &tfl__cuda_opt_kernels; /* variables may live here (placement) */
    return dev;
}

const tfl__backend tfl__cuda_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .device_count = cuda_device_count,
    .device_new = cuda_device_new,
    .device_free = cuda_device_free,
};
