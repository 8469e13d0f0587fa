/*
 * framework/dist/nccl.c: collectives on GPU tensors through NCCL (built when TFL_HAVE_NCCL), the way
 * llm.c sets NCCL up: one rank per GPU; the ranks gather (host hash, GPU, GPU count) through
 * the communicator's host transport (MPI) and refuse two ranks on one GPU before NCCL would;
 * rank 0 makes the ncclUniqueId and broadcasts it through the host transport; then
 * cudaSetDevice and ncclCommInitRank. Opened at the first collective on GPU tensors, bound to
 * their device for the life of the communicator.
 *
 * Every collective runs on the communicator's own stream of that device: an event recorded
 * on the device's stream (where the gradients were computed) is waited for by the NCCL
 * stream, the buckets are issued there (one ncclGroupStart/End each), and the device's
 * stream waits for an event recorded after the last: the host never waits. Streams and events
 * come from the device's functions (core_api/module_api.h); only their CUDA handles come from
 * its native ones (core_api/native_api.h).
 *
 * libnccl is loaded with dlopen at the first use (as libtapeflow_mpi), so that programs that
 * never reduce GPU tensors do not load it, and machines without it still run the library.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <nccl.h>

#include "dist_internal.h"
#include "nccl_plan.h"

_Static_assert((int)ncclInt32 == TFL__NCCL_INT32 && (int)ncclInt64 == TFL__NCCL_INT64 &&
                   (int)ncclFloat16 == TFL__NCCL_FLOAT16 &&
                   (int)ncclBfloat16 == TFL__NCCL_BFLOAT16 &&
                   (int)ncclFloat32 == TFL__NCCL_FLOAT32 && (int)ncclFloat64 == TFL__NCCL_FLOAT64 &&
                   (int)ncclUint8 == TFL__NCCL_UINT8,
               "nccl_plan.h's datatype codes are nccl.h's");
_Static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId");

struct tfl__nccl {
    void *lib;
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t, cudaStream_t);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*premulsum)(ncclRedOp_t *, void *, ncclDataType_t, ncclScalarResidence_t,
                              ncclComm_t);
    ncclResult_t (*redop_destroy)(ncclRedOp_t, ncclComm_t);
    const char *(*error_string)(ncclResult_t);
    const char *(*last_error)(ncclComm_t);
    ncclComm_t comm;
    tfl__device *dev;
    tfl__stream *stream;      /* the communicator's stream on dev */
    tfl__event *ready, *done; /* device stream -> NCCL stream, and back */
};

/* dlopen + dlsym of every function used; "" or why not in why. */
static void *load(tfl__nccl *g, char *why, size_t size)
{
    g->lib = dlopen(TFL_NCCL_LIBRARY_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) g->lib = dlopen(TFL_NCCL_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        const char *e = dlerror();
        snprintf(why, size, "cannot load %s: %s", TFL_NCCL_LIBRARY_SONAME, e ? e : "?");
        return NULL;
    }
#define TFL_SYM(entry, name)                                                                       \
    if (!(*(void **)(void *)&g->entry = dlsym(g->lib, name))) {                                    \
        snprintf(why, size, "%s has no %s (NCCL >= 2.11 is needed)", TFL_NCCL_LIBRARY_SONAME,      \
                 name);                                                                            \
        return NULL;                                                                               \
    }
    TFL_SYM(get_unique_id, "ncclGetUniqueId")
    TFL_SYM(comm_init_rank, "ncclCommInitRank")
    TFL_SYM(comm_destroy, "ncclCommDestroy")
    TFL_SYM(all_reduce, "ncclAllReduce")
    TFL_SYM(broadcast, "ncclBroadcast")
    TFL_SYM(group_start, "ncclGroupStart")
    TFL_SYM(group_end, "ncclGroupEnd")
    TFL_SYM(premulsum, "ncclRedOpCreatePreMulSum")
    TFL_SYM(redop_destroy, "ncclRedOpDestroy")
    TFL_SYM(error_string, "ncclGetErrorString")
    TFL_SYM(last_error, "ncclGetLastError")
#undef TFL_SYM
    return g->lib;
}

/* "<call>: <NCCL's error string> (<its last error>)" into msg. */
static void nccl_msg(const tfl__nccl *g, const char *call, ncclResult_t r, char *msg, size_t size)
{
    const char *last = g->last_error ? g->last_error(g->comm) : NULL;
    snprintf(msg, size, "%s: %s%s%s%s", call, g->error_string ? g->error_string(r) : "error",
             last && last[0] ? " (" : "", last && last[0] ? last : "", last && last[0] ? ")" : "");
}

void tfl__nccl_close(tfl_comm *c)
{
    tfl__nccl *g = c->nccl;
    if (!g) return;
    if (g->comm) {
        (void)tfl__dev_stream_sync(g->dev, g->stream);
        (void)g->comm_destroy(g->comm);
    }
    tfl__dev_event_free(g->dev, g->ready);
    tfl__dev_event_free(g->dev, g->done);
    tfl__dev_stream_free(g->dev, g->stream);
    if (g->lib) dlclose(g->lib);
    tfl__host_free(c->ctx, g);
    c->nccl = NULL;
}

/* The placement gather and check, the id's broadcast and ncclCommInitRank (collectives of
 * the host transport, so every rank reaches the same verdict and none is left waiting). */
static tfl_status open_comm(tfl_comm *c, const char *who, tfl__nccl *g, const char *why)
{
    tfl_ctx *ctx = c->ctx;
    int size = c->t.size, rank = c->t.rank;
    char msg[512] = "";
    int gpus = 0;
    for (int i = 0, n = tfl_device_count(ctx); i < n; i++)
        gpus += tfl__dev_native_ordinal(tfl__find_device(ctx, tfl_device_name(ctx, i))) >= 0;
    int64_t *all = tfl__calloc(ctx, (size_t)size * 4 * sizeof(int64_t));
    if (!all) return TFL_RESOURCE_EXHAUSTED;
    char host[256] = "";
    (void)gethostname(host, sizeof host - 1);
    int64_t *mine = all + 4 * rank;
    mine[0] = tfl__nccl_host_hash(host);
    mine[1] = tfl__dev_native_ordinal(g->dev);
    mine[2] = gpus;
    mine[3] = why[0] ? 0 : 1; /* libnccl loaded */
    c->stats.messages++;
    if (c->t.allreduce_sum(c->t.impl, all, 4 * (int64_t)size, TFL_DTYPE_INT64, msg, sizeof msg)) {
        tfl__host_free(ctx, all);
        return tfl__comm_fail(c, who, msg);
    }
    int64_t *hosts = tfl__calloc(ctx, (size_t)size * 3 * sizeof(int64_t));
    if (!hosts) {
        tfl__host_free(ctx, all);
        return TFL_RESOURCE_EXHAUSTED;
    }
    int bad_lib = -1;
    for (int r = 0; r < size; r++) {
        hosts[r] = all[4 * r], hosts[size + r] = all[4 * r + 1],
        hosts[2 * size + r] = all[4 * r + 2];
        if (!all[4 * r + 3] && bad_lib < 0) bad_lib = r;
    }
    int local_rank, local_size;
    int verdict = bad_lib >= 0
                      ? 0
                      : tfl__nccl_check_placement(size, rank, hosts, hosts + size, hosts + 2 * size,
                                                  &local_rank, &local_size, msg, sizeof msg);
    tfl__host_free(ctx, hosts);
    tfl__host_free(ctx, all);
    if (bad_lib >= 0)
        return tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: NCCL: rank %d of %d: %s", who,
                              bad_lib, size,
                              bad_lib == rank ? why : "could not load libnccl (see that rank)");
    if (verdict)
        return tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: NCCL on %s: %s", who,
                              tfl__dev_name(g->dev), msg);
    TFL_TRY(tfl__dev_make_current(g->dev));
    struct {
        int64_t ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    ncclResult_t r = ncclSuccess;
    if (rank == 0) {
        r = g->get_unique_id(&boot.id);
        boot.ok = r == ncclSuccess;
        if (r != ncclSuccess) nccl_msg(g, "ncclGetUniqueId", r, msg, sizeof msg);
    }
    char bmsg[512] = "";
    c->stats.messages++;
    if (c->t.broadcast(c->t.impl, &boot, (int64_t)sizeof boot, 0, bmsg, sizeof bmsg))
        return tfl__comm_fail(c, who, bmsg);
    if (!boot.ok)
        return tfl__set_error(ctx, TFL_UNAVAILABLE, "%s: NCCL: rank 0 of %d: %s", who, size,
                              rank == 0 ? msg : "ncclGetUniqueId failed (see rank 0)");
    r = g->comm_init_rank(&g->comm, size, boot.id, rank);
    if (r != ncclSuccess) {
        g->comm = NULL;
        nccl_msg(g, "ncclCommInitRank", r, msg, sizeof msg);
        return tfl__comm_fail(c, who, msg);
    }
    TFL_TRY(tfl__dev_stream_new(g->dev, &g->stream));
    TFL_TRY(tfl__dev_event_new(g->dev, &g->ready));
    TFL_TRY(tfl__dev_event_new(g->dev, &g->done));
    TFL_CHECK(ctx, g->stream && g->ready && g->done, TFL_INTERNAL,
              "%s: %s has no streams or events in its device table", who, tfl__dev_name(g->dev));
    return TFL_OK;
}

/* The communicator's NCCL state bound to dev, opened at the first call. */
static tfl__nccl *nccl_for(tfl_comm *c, const char *who, tfl__device *dev)
{
    if (c->nccl) {
        if (c->nccl->dev == dev) return c->nccl;
        tfl__set_error(c->ctx, TFL_FAILED_PRECONDITION,
                       "%s: this communicator's NCCL runs on %s (its first GPU collective), the "
                       "tensors are on %s: one rank drives one GPU",
                       who, tfl__dev_name(c->nccl->dev), tfl__dev_name(dev));
        return NULL;
    }
    tfl__nccl *g = tfl__calloc(c->ctx, sizeof *g);
    if (!g) return NULL;
    g->dev = dev;
    c->nccl = g;
    char why[512] = "";
    if (!load(g, why, sizeof why) && !why[0]) snprintf(why, sizeof why, "cannot load libnccl");
    if (open_comm(c, who, g, why) != TFL_OK) {
        tfl__nccl_close(c);
        return NULL;
    }
    return g;
}

/* The host-immediate scalar f in dtype dt (NCCL takes the scalar in the reduced type). */
static void scalar_of(tfl_dtype dt, double f, void *out)
{
    if (dt == TFL_DTYPE_FLOAT64) {
        memcpy(out, &f, sizeof f);
    } else if (dt == TFL_DTYPE_FLOAT32) {
        float x = (float)f;
        memcpy(out, &x, sizeof x);
    } else {
        uint16_t h =
            dt == TFL_DTYPE_FLOAT16 ? tfl__f32_to_f16((float)f) : tfl__f32_to_bf16((float)f);
        memcpy(out, &h, sizeof h);
    }
}

tfl_status tfl__nccl_run(tfl_comm *c, const char *who, tfl__device *dev, const tfl__comm_item *it,
                         int n, double f, int root)
{
    tfl_ctx *ctx = c->ctx;
    tfl__nccl *g = nccl_for(c, who, dev);
    if (!g) return tfl_ctx_status(ctx);
    int64_t *numel = tfl__calloc(ctx, (size_t)(n ? n : 1) * sizeof *numel);
    tfl_dtype *dts = numel ? tfl__calloc(ctx, (size_t)(n ? n : 1) * sizeof *dts) : NULL;
    if (!dts) {
        tfl__host_free(ctx, numel);
        return TFL_RESOURCE_EXHAUSTED;
    }
    for (int i = 0; i < n; i++) {
        numel[i] = it[i].dst ? it[i].numel : 0;
        /* broadcast moves bytes (numel counts them): one-byte elements, ncclUint8 */
        dts[i] = root >= 0 ? TFL_DTYPE_BOOL : it[i].dtype;
    }
    int n_buckets = 0;
    int64_t n_calls = tfl__nccl_plan(n, numel, dts, c->bucket_bytes, NULL, 0, &n_buckets);
    tfl__nccl_call *calls =
        tfl__calloc(ctx, (size_t)(n_calls ? n_calls : 1) * sizeof(tfl__nccl_call));
    tfl_status st = calls ? TFL_OK : TFL_RESOURCE_EXHAUSTED;
    if (st == TFL_OK)
        (void)tfl__nccl_plan(n, numel, dts, c->bucket_bytes, calls, n_calls, &n_buckets);
    void *nstream = tfl__dev_native_stream(dev, g->stream);
    /* the NCCL stream starts after what the device's stream has issued */
    if (st == TFL_OK) st = tfl__dev_make_current(dev);
    if (st == TFL_OK) st = tfl__dev_event_record(dev, g->ready, NULL);
    if (st == TFL_OK) st = tfl__dev_event_wait(dev, g->stream, g->ready);
    /* a rank of weight 0, or a missing source, adds zeros (even where its data is NaN) */
    bool zero = root < 0 && f == 0.0;
    for (int i = 0; i < n && st == TFL_OK && root < 0; i++)
        if (numel[i] > 0 && (zero || !it[i].src))
            st = tfl__dev_memset(dev, g->stream, it[i].dst, 0,
                                 (size_t)numel[i] * tfl_dtype_size(it[i].dtype));
    /* one premultiplying sum per dtype when f scales (a mean) */
    ncclRedOp_t ops_of[TFL_DTYPE_COUNT];
    bool made[TFL_DTYPE_COUNT] = {false};
    char msg[512] = "";
    for (int i = 0; i < n && st == TFL_OK && root < 0; i++) {
        tfl_dtype dt = it[i].dtype;
        if (numel[i] == 0 || f == 1.0 || zero || made[dt]) continue;
        unsigned char scalar[8];
        scalar_of(dt, f, scalar);
        ncclResult_t r = g->premulsum(&ops_of[dt], scalar, (ncclDataType_t)tfl__nccl_dtype(dt),
                                      ncclScalarHostImmediate, g->comm);
        if (r != ncclSuccess) {
            nccl_msg(g, "ncclRedOpCreatePreMulSum", r, msg, sizeof msg);
            st = tfl__comm_fail(c, who, msg);
        } else {
            made[dt] = true;
        }
    }
    int64_t k = 0;
    for (int b = 0; b < n_buckets && st == TFL_OK; b++) {
        ncclResult_t r = g->group_start();
        const char *call = "ncclGroupStart";
        for (; r == ncclSuccess && k < n_calls && calls[k].bucket == b; k++) {
            const tfl__nccl_call *cl = &calls[k];
            const tfl__comm_item *x = &it[cl->item];
            size_t es = tfl_dtype_size(dts[cl->item]);
            char *dst = (char *)x->dst + (size_t)cl->offset * es;
            const char *src =
                x->src && !zero ? (const char *)x->src + (size_t)cl->offset * es : dst;
            if (root >= 0) {
                call = "ncclBroadcast";
                r = g->broadcast(dst, dst, (size_t)cl->count, ncclUint8, root, g->comm, nstream);
            } else {
                call = "ncclAllReduce";
                ncclRedOp_t op = made[x->dtype] ? ops_of[x->dtype] : ncclSum;
                r = g->all_reduce(src, dst, (size_t)cl->count,
                                  (ncclDataType_t)tfl__nccl_dtype(x->dtype), op, g->comm, nstream);
            }
            c->stats.messages++;
            if (root < 0) c->stats.bytes += cl->count * (int64_t)es; /* as the host path */
        }
        ncclResult_t e = g->group_end();
        if (r == ncclSuccess && e != ncclSuccess) r = e, call = "ncclGroupEnd";
        if (r != ncclSuccess) {
            nccl_msg(g, call, r, msg, sizeof msg);
            st = tfl__comm_fail(c, who, msg);
        }
    }
    for (int d = 0; d < TFL_DTYPE_COUNT; d++)
        if (made[d]) (void)g->redop_destroy(ops_of[d], g->comm);
    /* the device's stream (the optimizer's kernels) goes on after the last bucket */
    if (st == TFL_OK) st = tfl__dev_event_record(dev, g->done, g->stream);
    if (st == TFL_OK) st = tfl__dev_event_wait(dev, NULL, g->done);
    tfl__host_free(ctx, calls);
    tfl__host_free(ctx, dts);
    tfl__host_free(ctx, numel);
    return st;
}
