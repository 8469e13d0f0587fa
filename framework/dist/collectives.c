/*
 * framework/dist/collectives.c: broadcast and all-reduce of tensor lists through one fusion buffer
 * (Horovod's tensor fusion, PyTorch DDP's buckets): the tensors of one dtype, in list order,
 * are seen as one long vector cut into buckets of bucket_bytes; each bucket is packed (scaled
 * for a mean), reduced in one transport message and unpacked. Every rank walks the same list
 * in the same order, so the messages match.
 */
#include <math.h>
#include <string.h>

#include "dist_internal.h"
#include "nccl_plan.h"

typedef tfl__comm_item item;

static const tfl_dtype reduce_order[] = {TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64, TFL_DTYPE_INT32,
                                         TFL_DTYPE_INT64};

/* buf[0..count) = src[off..off+count) * f (zeros for no source or f == 0). */
static void pack(void *buf, const item *it, int64_t off, int64_t count, double f)
{
    size_t es = tfl_dtype_size(it->dtype);
    if (!it->src || f == 0.0) {
        memset(buf, 0, (size_t)count * es);
        return;
    }
    const char *s = (const char *)it->src + (size_t)off * es;
    if (f == 1.0) {
        memcpy(buf, s, (size_t)count * es);
    } else if (it->dtype == TFL_DTYPE_FLOAT32) {
        float *d = buf;
        const float *x = (const float *)(const void *)s;
        for (int64_t i = 0; i < count; i++)
            d[i] = (float)((double)x[i] * f);
    } else { /* float64: the only other dtype scaled */
        double *d = buf;
        const double *x = (const double *)(const void *)s;
        for (int64_t i = 0; i < count; i++)
            d[i] = x[i] * f;
    }
}

/* Runs the buckets of every dtype over items (all-reduce: sum of the packed values; root >= 0:
 * broadcast from root). f scales floating values while packing. */
static tfl_status run_buckets(tfl_comm *c, const char *who, item *items, int n, double f, int root)
{
    char msg[512] = "";
    for (size_t d = 0; d < sizeof reduce_order / sizeof reduce_order[0]; d++) {
        tfl_dtype dt = reduce_order[d];
        size_t es = tfl_dtype_size(dt);
        int64_t total = 0;
        for (int i = 0; i < n; i++)
            if (items[i].numel > 0 && items[i].dtype == dt &&
                tfl__add_overflow_i64(total, items[i].numel, &total))
                total = INT64_MAX; /* only bounds the buffer */
        if (total == 0) continue;
        int64_t cap = c->bucket_bytes / (int64_t)es;
        if (cap < 1) cap = 1;
        if (cap > total) cap = total;
        char *buf = tfl__comm_buffer(c, (size_t)cap * es);
        if (!buf) return TFL_RESOURCE_EXHAUSTED;
        int i0 = 0; /* the bucket's first item and offset in it */
        int64_t off0 = 0;
        while (i0 < n) {
            /* pack up to cap elements from (i0, off0) */
            int64_t filled = 0;
            int i = i0;
            int64_t off = off0;
            while (i < n && filled < cap) {
                if (items[i].dtype != dt || items[i].numel == 0 || off >= items[i].numel) {
                    i++, off = 0;
                    continue;
                }
                int64_t k = items[i].numel - off;
                if (k > cap - filled) k = cap - filled;
                if (root < 0 || c->t.rank == root)
                    pack(buf + (size_t)filled * es, &items[i], off, k, root < 0 ? f : 1.0);
                filled += k, off += k;
            }
            if (filled == 0) break;
            int rc = root < 0 ? c->t.allreduce_sum(c->t.impl, buf, filled, dt, msg, sizeof msg)
                              : c->t.broadcast(c->t.impl, buf, filled * (int64_t)es, root, msg,
                                               sizeof msg);
            c->stats.messages++;
            c->stats.bytes += filled * (int64_t)es;
            if (rc != 0) return tfl__comm_fail(c, who, msg);
            /* unpack the same run */
            int64_t done = 0;
            while (i0 < n && done < filled) {
                if (items[i0].dtype != dt || items[i0].numel == 0 || off0 >= items[i0].numel) {
                    i0++, off0 = 0;
                    continue;
                }
                int64_t k = items[i0].numel - off0;
                if (k > filled - done) k = filled - done;
                if (items[i0].dst && (root < 0 || c->t.rank != root))
                    memcpy((char *)items[i0].dst + (size_t)off0 * es, buf + (size_t)done * es,
                           (size_t)k * es);
                done += k, off0 += k;
            }
        }
    }
    return TFL_OK;
}

/* The GPU of a collective: host tensors go through the transport, GPU tensors through NCCL
 * (in a build without NCCL: through host memory, run_staged), and one rank drives one GPU:
 * *gpu is NULL until the first GPU tensor, then its device; a tensor on another GPU is
 * INVALID_ARGUMENT. `what` is "tensor", "variable" or "gradient". */
static tfl_status check_device(tfl_comm *c, const char *who, const char *what, int i,
                               const tfl_tensor *t, tfl__device **gpu)
{
    tfl_ctx *ctx = c->ctx;
    tfl__device *d = tfl__device_of(t);
    if (d == tfl__cpu(ctx)) return TFL_OK;
    if (!*gpu) *gpu = d;
    TFL_CHECK(ctx, d == *gpu, TFL_INVALID_ARGUMENT,
              "%s: %s %d is on %s, an earlier one on %s; the tensors of one collective are on "
              "the host or on one GPU (one rank drives one GPU)",
              who, what, i, tfl__dev_name(d), tfl__dev_name(*gpu));
    return TFL_OK;
}

static bool is_gpu(tfl_comm *c, const tfl_tensor *t)
{
    return tfl__device_of(t) != tfl__cpu(c->ctx);
}

/* Whether NCCL can drive the device: a build with NCCL and a device that gives its vendor
 * handles (CUDA's ordinal and streams); any other device's tensors go through host memory
 * (run_staged), as in a build without NCCL. */
static bool nccl_drives(const tfl__device *gpu)
{
    return TFL_HAVE_NCCL && gpu && tfl__dev_native_ordinal(gpu) >= 0;
}

/* Whether the GPU tensors of a collective go through NCCL: with several ranks, or with one
 * when the communicator asked for NCCL always (otherwise one rank has nothing to move). */
static bool use_nccl(tfl_comm *c, const tfl__device *gpu)
{
    return nccl_drives(gpu) && (c->t.size > 1 || c->nccl_always);
}

static tfl_status broadcast_host(tfl_comm *comm, const char *who, item *it, int n, int root);

/* An item's bytes (a broadcast's numel counts bytes already). */
static size_t item_bytes(const item *it)
{
    return it->dtype == TFL_DTYPE_INVALID ? (size_t)it->numel
                                          : (size_t)it->numel * tfl_dtype_size(it->dtype);
}

/* A collective whose GPU items go through host memory (a build without NCCL): each GPU
 * item's device data is copied to a host buffer, the transport runs on the host items, and
 * what was written is copied back to the device. An item's source is device memory when it
 * is its destination too (broadcast, all-reduce in place); tfl_comm_allreduce_gradients
 * gives a host copy of the gradient as the source. */
static tfl_status run_staged(tfl_comm *c, const char *who, tfl__device *gpu, item *items, int n,
                             double f, int root)
{
    tfl_ctx *ctx = c->ctx;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (items[i].gpu && __builtin_add_overflow(total, (item_bytes(&items[i]) + 63) / 64 * 64,
                                                   &total))
            return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: the GPU tensors' bytes "
                                  "overflow a size_t", who);
    char *buf = tfl__host_alloc(ctx, total ? total : 1, 64);
    void **dev_dst = buf ? tfl__calloc(ctx, (size_t)(n ? n : 1) * sizeof *dev_dst) : NULL;
    if (!dev_dst) {
        tfl__host_free(ctx, buf);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: out of host memory for %zu "
                              "bytes of GPU tensors staged through the host", who, total);
    }
    tfl_status st = TFL_OK;
    size_t off = 0;
    for (int i = 0; i < n && st == TFL_OK; i++) {
        if (!items[i].gpu) continue;
        size_t b = item_bytes(&items[i]);
        char *h = buf + off;
        off += (b + 63) / 64 * 64;
        if (items[i].src && items[i].src == items[i].dst) {
            st = tfl__dev_copy_host(gpu, h, items[i].src, b, 1);
            items[i].src = h;
        }
        dev_dst[i] = items[i].dst;
        if (items[i].dst) items[i].dst = h;
        items[i].gpu = false;
    }
    if (st == TFL_OK)
        st = root < 0 ? run_buckets(c, who, items, n, f, root) : broadcast_host(c, who, items, n, root);
    for (int i = 0; i < n && st == TFL_OK; i++)
        if (dev_dst[i] && (root < 0 || c->t.rank != root))
            st = tfl__dev_copy_host(gpu, dev_dst[i], items[i].dst, item_bytes(&items[i]), 0);
    tfl__host_free(ctx, dev_dst);
    tfl__host_free(ctx, buf);
    return st;
}

/* Runs a collective (root < 0: all-reduce scaled by f; else broadcast from root): the host
 * items through the transport, then the GPU items through NCCL; every rank has the same
 * placement, so the messages match. */
static tfl_status run_device(tfl_comm *c, const char *who, tfl__device *gpu, item *items, int n,
                             double f, int root)
{
#if TFL_HAVE_NCCL
    if (use_nccl(c, gpu)) {
        item *part = tfl__calloc(c->ctx, (size_t)(n ? n : 1) * sizeof *part);
        if (!part) return TFL_RESOURCE_EXHAUSTED;
        bool host = false;
        for (int i = 0; i < n; i++)
            if (!items[i].gpu) part[i] = items[i], host = host || items[i].numel > 0;
        tfl_status st = TFL_OK;
        if (host)
            st = root < 0 ? run_buckets(c, who, part, n, f, root)
                          : broadcast_host(c, who, part, n, root);
        for (int i = 0; i < n; i++)
            part[i] = items[i].gpu ? items[i] : (item){0};
        if (st == TFL_OK) st = tfl__nccl_run(c, who, gpu, part, n, f, root);
        tfl__host_free(c->ctx, part);
        return st;
    }
#endif
    if (gpu) return run_staged(c, who, gpu, items, n, f, root);
    return root < 0 ? run_buckets(c, who, items, n, f, root)
                    : broadcast_host(c, who, items, n, root);
}

/* Checks tensors[i] for a collective: alive, of comm's ctx, on the host or *gpu (check_device),
 * contiguous, readable, not repeated; makes a variable's storage its own (it is written in
 * place). */
static tfl_status check_tensor(tfl_comm *c, const char *who, tfl_tensor *const *ts, int i,
                               bool write, tfl__device **gpu)
{
    tfl_ctx *ctx = c->ctx;
    tfl_tensor *t = ts[i];
    if (!tfl__tensor_alive(t, who)) return TFL_MISUSE;
    TFL_CHECK(ctx, t->ctx == ctx, TFL_MISUSE, "%s: tensor %d belongs to another context", who, i);
    TFL_TRY(check_device(c, who, "tensor", i, t, gpu));
    TFL_CHECK(ctx, tfl_tensor_is_contiguous(t), TFL_INVALID_ARGUMENT,
              "%s: tensor %d is not contiguous (a view): give a contiguous copy", who, i);
    if (!tfl__check_readable(ctx, who, t)) return TFL_FAILED_PRECONDITION;
    for (int j = 0; j < i; j++)
        TFL_CHECK(ctx,
                  !ts[j] || tfl_tensor_numel(t) == 0 ||
                      tfl__tensor_data(ts[j]) != tfl__tensor_data(t),
                  TFL_INVALID_ARGUMENT,
                  "%s: tensors %d and %d share their data (a tensor given "
                  "twice)",
                  who, j, i);
    if (write && tfl_tensor_is_variable(t) && tfl__variable_own(t) != TFL_OK)
        return tfl_ctx_status(ctx);
    return TFL_OK;
}

static tfl_status check_list(tfl_comm *c, const char *who, int n, const void *list)
{
    if (!tfl__comm_alive(c, who)) return TFL_MISUSE;
    TFL_CHECK(c->ctx, n >= 0 && (list || n == 0), TFL_INVALID_ARGUMENT,
              "%s: n must be >= 0 "
              "with a list, got n %d and %s",
              who, n, list ? "a list" : "NULL");
    return TFL_OK;
}

static item *items_new(tfl_comm *c, int n)
{
    return tfl__calloc(c->ctx, (size_t)(n ? n : 1) * sizeof(item));
}

tfl_status tfl_comm_broadcast(tfl_comm *comm, int n, tfl_tensor *const *tensors, int root)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    const char *who = "tfl_comm_broadcast";
    TFL_TRY(check_list(comm, who, n, tensors));
    TFL_CHECK(comm->ctx, root >= 0 && root < comm->t.size, TFL_INVALID_ARGUMENT,
              "%s: root %d is not a rank of this communicator (size %d)", who, root, comm->t.size);
    tfl__device *gpu = NULL;
    for (int i = 0; i < n; i++)
        if (tensors[i]) TFL_TRY(check_tensor(comm, who, tensors, i, comm->t.rank != root, &gpu));
    if ((comm->t.size == 1 && !use_nccl(comm, gpu)) || n == 0) return TFL_OK;
    item *it = items_new(comm, n);
    if (!it) return TFL_RESOURCE_EXHAUSTED;
    /* broadcast moves bytes: one stream of every tensor's bytes, in list order, cut into
     * buckets of bucket_bytes */
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) continue;
        size_t bytes =
            (size_t)tfl_tensor_numel(tensors[i]) * tfl_dtype_size(tfl_tensor_dtype(tensors[i]));
        it[i] = (item){tfl__tensor_data(tensors[i]), tfl__tensor_data(tensors[i]), (int64_t)bytes,
                       TFL_DTYPE_INVALID, is_gpu(comm, tensors[i])};
    }
    double t0 = tfl__comm_now();
    tfl_status st = run_device(comm, who, gpu, it, n, 1.0, root);
    comm->stats.seconds += tfl__comm_now() - t0;
    tfl__host_free(comm->ctx, it);
    return st;
}

/* The host part of a broadcast: items' numel are bytes. */
static tfl_status broadcast_host(tfl_comm *comm, const char *who, item *it, int n, int root)
{
    tfl_status st = TFL_OK;
    char msg[512] = "";
    int64_t cap = comm->bucket_bytes;
    char *buf = NULL;
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        if (tfl__add_overflow_i64(total, it[i].numel, &total)) total = INT64_MAX; /* a bound */
    if (cap > total) cap = total;
    if (total > 0 && !(buf = tfl__comm_buffer(comm, (size_t)cap))) st = TFL_RESOURCE_EXHAUSTED;
    int i0 = 0;
    int64_t off0 = 0;
    while (st == TFL_OK && total > 0 && i0 < n) {
        int64_t filled = 0;
        int i = i0;
        int64_t off = off0;
        while (i < n && filled < cap) {
            if (off >= it[i].numel) {
                i++, off = 0;
                continue;
            }
            int64_t k = it[i].numel - off;
            if (k > cap - filled) k = cap - filled;
            if (comm->t.rank == root)
                memcpy(buf + filled, (const char *)it[i].src + off, (size_t)k);
            filled += k, off += k;
        }
        if (filled == 0) break;
        comm->stats.messages++;
        if (comm->t.broadcast(comm->t.impl, buf, filled, root, msg, sizeof msg) != 0) {
            st = tfl__comm_fail(comm, who, msg);
            break;
        }
        int64_t done = 0;
        while (i0 < n && done < filled) {
            if (off0 >= it[i0].numel) {
                i0++, off0 = 0;
                continue;
            }
            int64_t k = it[i0].numel - off0;
            if (k > filled - done) k = filled - done;
            if (comm->t.rank != root) memcpy((char *)it[i0].dst + off0, buf + done, (size_t)k);
            done += k, off0 += k;
        }
    }
    return st;
}

static bool reducible(tfl_dtype dt)
{
    return dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64 || dt == TFL_DTYPE_INT32 ||
           dt == TFL_DTYPE_INT64;
}
static bool floating(tfl_dtype dt)
{
    return dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64;
}
/* On a GPU (NCCL) float16 and bfloat16 are reduced too. */
static bool floating_on(tfl_dtype dt, bool gpu)
{
    return floating(dt) || (gpu && (dt == TFL_DTYPE_FLOAT16 || dt == TFL_DTYPE_BFLOAT16));
}

/* The sum of the weights (weighted mean) through the header message; f = w / W. */
static tfl_status weights(tfl_comm *c, const char *who, double *header, int len, double w,
                          double *f)
{
    char msg[512] = "";
    header[0] = w;
    c->stats.messages++;
    if (c->t.allreduce_sum(c->t.impl, header, len, TFL_DTYPE_FLOAT64, msg, sizeof msg) != 0)
        return tfl__comm_fail(c, who, msg);
    TFL_CHECK(c->ctx, header[0] > 0 && isfinite(header[0]), TFL_INVALID_ARGUMENT,
              "%s: the ranks' weights sum to %g (this rank's: %g); a weighted mean needs a "
              "positive sum",
              who, header[0], w);
    *f = w / header[0];
    return TFL_OK;
}

tfl_status tfl_comm_allreduce(tfl_comm *comm, int n, tfl_tensor *const *tensors, tfl_reduce_op op,
                              double weight)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    const char *who = "tfl_comm_allreduce";
    TFL_TRY(check_list(comm, who, n, tensors));
    tfl_ctx *ctx = comm->ctx;
    TFL_CHECK(ctx, op == TFL_REDUCE_SUM || op == TFL_REDUCE_MEAN || op == TFL_REDUCE_WEIGHTED_MEAN,
              TFL_INVALID_ARGUMENT, "%s: unknown reduce op %d", who, (int)op);
    TFL_CHECK(ctx, op != TFL_REDUCE_WEIGHTED_MEAN || (weight >= 0 && isfinite(weight)),
              TFL_INVALID_ARGUMENT, "%s: the weight must be finite and >= 0, got %g", who, weight);
    tfl__device *dev = NULL;
    char msg[512];
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) continue;
        TFL_TRY(check_tensor(comm, who, tensors, i, true, &dev));
        tfl_dtype dt = tfl_tensor_dtype(tensors[i]);
        bool gpu = is_gpu(comm, tensors[i]) && nccl_drives(dev); /* else staged on the host */
        if (gpu) {
            TFL_CHECK(ctx, !tfl__nccl_check_dtype(who, i, dt, msg, sizeof msg),
                      TFL_INVALID_ARGUMENT, "%s", msg);
        } else {
            TFL_CHECK(ctx, reducible(dt), TFL_INVALID_ARGUMENT,
                      "%s: tensor %d is %s; all-reduce "
                      "takes float32, float64, int32 and int64",
                      who, i, tfl_dtype_name(dt));
        }
        TFL_CHECK(ctx, op == TFL_REDUCE_SUM || floating_on(dt, gpu), TFL_INVALID_ARGUMENT,
                  "%s: tensor %d is %s; a mean needs a floating dtype (use TFL_REDUCE_SUM)", who, i,
                  tfl_dtype_name(dt));
    }
    bool nccl = use_nccl(comm, dev);
    if (comm->t.size == 1 && op != TFL_REDUCE_WEIGHTED_MEAN && !nccl) return TFL_OK;
    double t0 = tfl__comm_now(), f = 1.0;
    if (op == TFL_REDUCE_MEAN) f = 1.0 / comm->t.size;
    if (op == TFL_REDUCE_WEIGHTED_MEAN) {
        double header[1];
        TFL_TRY(weights(comm, who, header, 1, weight, &f));
        if (comm->t.size == 1 && !nccl) return TFL_OK;
    }
    item *it = items_new(comm, n);
    if (!it) return TFL_RESOURCE_EXHAUSTED;
    for (int i = 0; i < n; i++)
        if (tensors[i])
            it[i] = (item){tfl__tensor_data(tensors[i]), tfl__tensor_data(tensors[i]),
                           tfl_tensor_numel(tensors[i]), tfl_tensor_dtype(tensors[i]),
                           is_gpu(comm, tensors[i])};
    tfl_status st = run_device(comm, who, dev, it, n, f, -1);
    tfl__host_free(ctx, it);
    comm->stats.allreduce_calls++;
    comm->stats.seconds += tfl__comm_now() - t0;
    return st;
}

tfl_status tfl_comm_allreduce_gradients(tfl_comm *comm, int n, tfl_tensor *const *vars,
                                        tfl_tensor **grads, double weight)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    const char *who = "tfl_comm_allreduce_gradients";
    TFL_TRY(check_list(comm, who, n, vars));
    tfl_ctx *ctx = comm->ctx;
    TFL_CHECK(ctx, grads || n == 0, TFL_INVALID_ARGUMENT, "%s: grads is NULL", who);
    TFL_CHECK(ctx, weight >= 0 && isfinite(weight), TFL_INVALID_ARGUMENT,
              "%s: the weight must be finite and >= 0, got %g", who, weight);
    char a[64], b[64];
    tfl__device *dev = NULL;
    for (int i = 0; i < n; i++) {
        TFL_CHECK(ctx, vars[i], TFL_INVALID_ARGUMENT, "%s: variable %d is NULL", who, i);
        if (!tfl__tensor_alive(vars[i], who)) return TFL_MISUSE;
        TFL_TRY(check_device(comm, who, "variable", i, vars[i], &dev));
        tfl_dtype dt = tfl_tensor_dtype(vars[i]);
        TFL_CHECK(ctx, floating(dt), TFL_INVALID_ARGUMENT,
                  "%s: variable %d (%s) is %s; "
                  "gradients are float32 or float64",
                  who, i, tfl_tensor_is_variable(vars[i]) ? tfl_variable_name(vars[i]) : "a tensor",
                  tfl_dtype_name(dt));
        tfl_tensor *g = grads[i];
        if (!g) continue;
        if (!tfl__tensor_alive(g, who)) return TFL_MISUSE;
        TFL_CHECK(ctx, g->ctx == ctx, TFL_MISUSE, "%s: gradient %d belongs to another context", who,
                  i);
        TFL_CHECK(ctx,
                  tfl_tensor_dtype(g) == dt &&
                      tfl__same_shape(g->rank, g->shape, vars[i]->rank, vars[i]->shape),
                  TFL_INVALID_ARGUMENT, "%s: gradient %d is %s %s, its variable %s %s", who, i,
                  tfl_dtype_name(tfl_tensor_dtype(g)),
                  tfl__shape_str(g->rank, g->shape, a, sizeof a), tfl_dtype_name(dt),
                  tfl__shape_str(vars[i]->rank, vars[i]->shape, b, sizeof b));
        TFL_TRY(check_device(comm, who, "gradient", i, g, &dev));
        TFL_CHECK(ctx, tfl__device_of(g) == tfl__device_of(vars[i]), TFL_INVALID_ARGUMENT,
                  "%s: gradient %d is on %s, its variable on %s", who, i, tfl_tensor_device(g),
                  tfl_tensor_device(vars[i]));
        TFL_CHECK(ctx, !is_gpu(comm, g) || tfl_tensor_is_contiguous(g), TFL_INVALID_ARGUMENT,
                  "%s: gradient %d on %s is not contiguous (a view): give a contiguous one", who, i,
                  tfl_tensor_device(g));
        if (!tfl__check_readable(ctx, who, g)) return TFL_FAILED_PRECONDITION;
    }
    if (comm->t.size == 1 && !use_nccl(comm, dev)) return TFL_OK;
    double t0 = tfl__comm_now(), f;
    int64_t len = (int64_t)n + 1;
    double *header = tfl__calloc(ctx, (size_t)len * sizeof(double));
    item *it = header ? items_new(comm, n) : NULL;
    tfl_tensor **out = it ? tfl__calloc(ctx, (size_t)(n ? n : 1) * sizeof *out) : NULL;
    tfl_status st = out ? TFL_OK : TFL_RESOURCE_EXHAUSTED;
    for (int i = 0; i < n && st == TFL_OK; i++)
        header[i + 1] = grads[i] ? 1.0 : 0.0;
    if (st == TFL_OK) st = weights(comm, who, header, (int)len, weight, &f);
    tfl__device *cpu = tfl__cpu(ctx);
    for (int i = 0; i < n && st == TFL_OK; i++) {
        if (header[i + 1] == 0) continue; /* NULL on every rank: stays NULL */
        tfl_tensor *v = vars[i], *g = grads[i];
        if (g && (!tfl_tensor_is_contiguous(g) || !tfl__dev_host_memory(tfl__device_of(g)))) {
            /* a dense host copy, through the device table (frame-owned) */
            if (!(g = tfl__tensor_copy_to(ctx, g, cpu))) {
                st = tfl_ctx_status(ctx);
                break;
            }
        }
        out[i] = tfl__tensor_alloc(ctx, tfl__device_of(v), tfl_tensor_dtype(v), v->rank, v->shape);
        if (!out[i]) {
            st = tfl_ctx_status(ctx);
            break;
        }
        it[i] = (item){g ? tfl__tensor_data(g) : NULL, tfl__tensor_data(out[i]),
                       tfl_tensor_numel(v), tfl_tensor_dtype(v), is_gpu(comm, v)};
    }
    if (st == TFL_OK) st = run_device(comm, who, dev, it, n, f, -1);
    for (int i = 0; out && i < n; i++) {
        if (!out[i]) continue;
        if (st == TFL_OK) /* the frame owns out[i]; the old one stays its owner's */
            grads[i] = tfl__frame_adopt(ctx, out[i]);
        else
            tfl_tensor_release(out[i]);
    }
    tfl__host_free(ctx, out);
    tfl__host_free(ctx, it);
    tfl__host_free(ctx, header);
    comm->stats.allreduce_calls++;
    comm->stats.seconds += tfl__comm_now() - t0;
    return st;
}
