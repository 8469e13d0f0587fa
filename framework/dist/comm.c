/*
 * framework/dist/comm.c: the communicator handle, the built-in one-rank transport, tfl_comm_world
 * (which loads libtapeflow_mpi only when mpirun started the process), barrier, the double
 * all-reduce, abort and the statistics.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tapeflow/version.h>

#include "dist_internal.h"

double tfl__comm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool tfl__comm_alive(const tfl_comm *comm, const char *what)
{
    return tfl__obj_check(comm->ctx, &comm->obj, TFL__MAGIC_COMM, what);
}

tfl_status tfl__comm_fail(tfl_comm *comm, const char *what, const char *msg)
{
    return tfl__set_error(comm->ctx, TFL_UNAVAILABLE, "%s: %s rank %d of %d: %s", what,
                          comm->t.name ? comm->t.name : "?", comm->t.rank, comm->t.size,
                          msg && msg[0] ? msg : "the transport failed without a message");
}

tfl_status tfl__comm_broadcast_bytes(tfl_comm *comm, const char *who, void *buf, int64_t bytes,
                                     int root)
{
    char msg[512] = "";
    if (comm->t.broadcast(comm->t.impl, buf, bytes, root, msg, sizeof msg) != 0)
        return tfl__comm_fail(comm, who, msg);
    return TFL_OK;
}

void *tfl__comm_buffer(tfl_comm *comm, size_t bytes)
{
    if (bytes <= comm->buf_bytes) return comm->buf;
    void *b = tfl__host_alloc(comm->ctx, bytes, 64);
    if (!b) {
        tfl__set_error(comm->ctx, TFL_RESOURCE_EXHAUSTED,
                       "all-reduce: no memory for a fusion "
                       "buffer of %zu bytes",
                       bytes);
        return NULL;
    }
    tfl__host_free(comm->ctx, comm->buf);
    comm->buf = b;
    comm->buf_bytes = bytes;
    return b;
}

/* ---- the one-rank transport -------------------------------------------------------------- */

static int self_allreduce(void *impl, void *buf, int64_t count, tfl_dtype dtype, char *msg,
                          size_t size)
{
    (void)impl, (void)buf, (void)count, (void)dtype, (void)msg, (void)size;
    return 0;
}
static int self_broadcast(void *impl, void *buf, int64_t bytes, int root, char *msg, size_t size)
{
    (void)impl, (void)buf, (void)bytes, (void)root, (void)msg, (void)size;
    return 0;
}
static int self_barrier(void *impl, char *msg, size_t size)
{
    (void)impl, (void)msg, (void)size;
    return 0;
}
static void self_abort(void *impl, int code)
{
    (void)impl;
    exit(code); /* tfl_comm_abort only: a program ending its one-process job */
}
static void self_destroy(void *impl)
{
    (void)impl;
}

static tfl_comm_transport self_transport(void)
{
    return (tfl_comm_transport){.name = "self",
                                .rank = 0,
                                .size = 1,
                                .allreduce_sum = self_allreduce,
                                .broadcast = self_broadcast,
                                .barrier = self_barrier,
                                .abort = self_abort,
                                .destroy = self_destroy};
}

/* ---- handles ------------------------------------------------------------------------------- */

static void comm_release(tfl_comm *c)
{
#if TFL_HAVE_NCCL
    tfl__nccl_close(c); /* before the host transport: NCCL's state first */
#endif
    if (c->t.destroy) c->t.destroy(c->t.impl);
    c->t.destroy = NULL;
    tfl__host_free(c->ctx, c->buf);
    c->buf = NULL;
    c->buf_bytes = 0;
}

static void comm_free_obj(tfl__ctx_obj *o)
{
    tfl_comm *c = (tfl_comm *)(void *)o;
    comm_release(c);
    tfl__obj_retire(c->ctx, o);
}

static bool check_opts(tfl_ctx *ctx, const char *who, const tfl_comm_opts *o)
{
    TFL_CHECK_RET(ctx, !o || o->bucket_bytes >= 0, false, TFL_INVALID_ARGUMENT,
                  "%s: bucket_bytes must be >= 0 (0: %lld), got %lld", who,
                  (long long)TFL_DEFAULT_BUCKET_BYTES, o ? (long long)o->bucket_bytes : 0LL);
    const char *g = o && o->gpu_backend ? o->gpu_backend : "auto";
    TFL_CHECK_RET(ctx, !strcmp(g, "auto") || !strcmp(g, "nccl"), false, TFL_INVALID_ARGUMENT,
                  "%s: unknown gpu_backend '%s' (auto, nccl)", who, g);
    TFL_CHECK_RET(ctx, TFL_HAVE_NCCL || strcmp(g, "nccl"), false, TFL_FAILED_PRECONDITION,
                  "%s: gpu_backend 'nccl', but this tapeflow has no NCCL (TFL_NCCL=OFF, no CUDA "
                  "backend, or no NCCL found)",
                  who);
    return true;
}

tfl_comm *tfl_comm_new(tfl_ctx *ctx, const tfl_comm_transport *t, const tfl_comm_opts *opts)
{
    if (!ctx) return NULL;
    const char *who = "tfl_comm_new";
    bool ok = true;
    if (!t) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: the transport is NULL", who);
        return NULL;
    }
    if (t->error[0]) {
        tfl__set_error(ctx, TFL_UNAVAILABLE, "%s: the %s transport could not start: %s", who,
                       t->name ? t->name : "?", t->error);
        ok = false;
    } else if (!t->allreduce_sum || !t->broadcast || !t->barrier || !t->abort || !t->destroy) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "%s: the transport '%s' lacks a function "
                       "(allreduce_sum, broadcast, barrier, abort and destroy are needed)",
                       who, t->name ? t->name : "?");
        ok = false;
    } else if (t->size < 1 || t->rank < 0 || t->rank >= t->size) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "%s: the transport '%s' has rank %d of size "
                       "%d (want 0 <= rank < size)",
                       who, t->name ? t->name : "?", t->rank, t->size);
        ok = false;
    }
    ok = ok && check_opts(ctx, who, opts);
    tfl_comm *c = ok ? tfl__obj_new(ctx, sizeof *c, TFL__MAGIC_COMM, comm_free_obj) : NULL;
    if (!c) {
        if (t->destroy) t->destroy(t->impl); /* taken over, also on error */
        return NULL;
    }
    c->ctx = ctx;
    c->t = *t;
    if (!c->t.name) c->t.name = "custom";
    c->bucket_bytes = opts && opts->bucket_bytes ? opts->bucket_bytes : TFL_DEFAULT_BUCKET_BYTES;
    c->nccl_always = opts && opts->gpu_backend && !strcmp(opts->gpu_backend, "nccl");
    return c;
}

tfl_comm *tfl_comm_self(tfl_ctx *ctx, const tfl_comm_opts *opts)
{
    tfl_comm_transport t = self_transport();
    return tfl_comm_new(ctx, &t, opts);
}

/* mpirun (ORTE), PRRTE/PMIx and Hydra-style launchers set one of these in every rank. */
static bool launched_by_mpirun(int *size)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
    *size = 0;
    bool any = false;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) any = true;
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");
    if (!s) s = getenv("PMI_SIZE");
    if (s) *size = atoi(s);
    return any;
}

typedef void (*world_fn)(tfl_comm_transport *out, int flags);

/* Loads libtapeflow_mpi from libtapeflow's own folder (build tree or install), else by its
 * name (the loader's search path). RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols
 * through the global scope. */
static world_fn load_mpi(char *why, size_t size)
{
#if TFL_HAVE_MPI
    void *h = NULL;
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&tfl_comm_world, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            char path[4096];
            int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname),
                             info.dli_fname, TFL_MPI_LIBRARY_SONAME);
            if (n > 0 && (size_t)n < sizeof path) h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        }
    }
    if (!h) h = dlopen(TFL_MPI_LIBRARY_SONAME, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, size, "cannot load %s: %s", TFL_MPI_LIBRARY_SONAME, e ? e : "?");
        return NULL;
    }
    /* kept loaded for the life of the process: Open MPI cannot be initialised twice */
    world_fn f = (world_fn)(uintptr_t)dlsym(h, "tfl_mpi_world_transport");
    if (!f) snprintf(why, size, "%s has no tfl_mpi_world_transport", TFL_MPI_LIBRARY_SONAME);
    return f;
#else
    snprintf(why, size, "this tapeflow was built without MPI (TFL_MPI=OFF, or no MPI found)");
    return NULL;
#endif
}

tfl_comm *tfl_comm_world(tfl_ctx *ctx, const tfl_comm_opts *opts)
{
    if (!ctx) return NULL;
    const char *who = "tfl_comm_world";
    if (!check_opts(ctx, who, opts)) return NULL;
    const char *backend = opts && opts->backend ? opts->backend : "auto";
    int size = 0;
    bool launched = launched_by_mpirun(&size);
    bool want_mpi;
    if (!strcmp(backend, "auto"))
        want_mpi = launched;
    else if (!strcmp(backend, "mpi"))
        want_mpi = true;
    else if (!strcmp(backend, "self"))
        want_mpi = false;
    else {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: unknown backend '%s' (auto, mpi, self)", who,
                       backend);
        return NULL;
    }
    if (!want_mpi) return tfl_comm_self(ctx, opts);
    char why[512] = "";
    world_fn f = load_mpi(why, sizeof why);
    if (!f) {
        if (launched && size <= 1 && !strcmp(backend, "auto")) return tfl_comm_self(ctx, opts);
        tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: %s%s, but %s", who,
                       launched ? "started by mpirun" : "MPI was asked for",
                       size > 1 ? " with several ranks" : "", why);
        return NULL;
    }
    tfl_comm_transport t;
    memset(&t, 0, sizeof t);
    f(&t, 0);
    return tfl_comm_new(ctx, &t, opts);
}

void tfl_comm_free(tfl_comm *comm)
{
    if (!comm || !tfl__comm_alive(comm, "tfl_comm_free")) return;
    comm_free_obj(&comm->obj);
}

int tfl_comm_rank(const tfl_comm *comm)
{
    return comm && tfl__comm_alive(comm, "tfl_comm_rank") ? comm->t.rank : -1;
}
int tfl_comm_size(const tfl_comm *comm)
{
    return comm && tfl__comm_alive(comm, "tfl_comm_size") ? comm->t.size : -1;
}
const char *tfl_comm_backend(const tfl_comm *comm)
{
    return comm && tfl__comm_alive(comm, "tfl_comm_backend") ? comm->t.name : "";
}
const char *tfl_comm_gpu_backend(const tfl_comm *comm)
{
    return comm && tfl__comm_alive(comm, "tfl_comm_gpu_backend") && comm->nccl ? "nccl" : "";
}
tfl_ctx *tfl_comm_ctx(const tfl_comm *comm)
{
    return comm ? comm->ctx : NULL;
}

tfl_status tfl_comm_set_bucket_bytes(tfl_comm *comm, int64_t bytes)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    if (!tfl__comm_alive(comm, "tfl_comm_set_bucket_bytes")) return TFL_MISUSE;
    TFL_CHECK(comm->ctx, bytes >= 0, TFL_INVALID_ARGUMENT,
              "tfl_comm_set_bucket_bytes: bucket "
              "bytes must be >= 0 (0: %lld), got %lld",
              (long long)TFL_DEFAULT_BUCKET_BYTES, (long long)bytes);
    comm->bucket_bytes = bytes ? bytes : TFL_DEFAULT_BUCKET_BYTES;
    return TFL_OK;
}

tfl_status tfl_comm_barrier(tfl_comm *comm)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    if (!tfl__comm_alive(comm, "tfl_comm_barrier")) return TFL_MISUSE;
    char msg[512] = "";
    if (comm->t.barrier(comm->t.impl, msg, sizeof msg) != 0)
        return tfl__comm_fail(comm, "tfl_comm_barrier", msg);
    return TFL_OK;
}

tfl_status tfl_comm_allreduce_doubles(tfl_comm *comm, double *values, int n)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    const char *who = "tfl_comm_allreduce_doubles";
    if (!tfl__comm_alive(comm, who)) return TFL_MISUSE;
    TFL_CHECK(comm->ctx, n >= 0 && (values || n == 0), TFL_INVALID_ARGUMENT,
              "%s: n must be >= 0 with values not NULL, got n %d, values %s", who, n,
              values ? "set" : "NULL");
    if (n == 0 || comm->t.size == 1) return TFL_OK;
    char msg[512] = "";
    comm->stats.messages++;
    if (comm->t.allreduce_sum(comm->t.impl, values, n, TFL_DTYPE_FLOAT64, msg, sizeof msg) != 0)
        return tfl__comm_fail(comm, who, msg);
    return TFL_OK;
}

void tfl_comm_abort(tfl_comm *comm, int code)
{
    if (!comm || comm->obj.magic != TFL__MAGIC_COMM) exit(code);
    comm->t.abort(comm->t.impl, code);
    exit(code); /* a transport whose abort returned */
}

tfl_comm_stats tfl_comm_get_stats(const tfl_comm *comm)
{
    return comm && tfl__comm_alive(comm, "tfl_comm_get_stats") ? comm->stats : (tfl_comm_stats){0};
}

void tfl_comm_reset_stats(tfl_comm *comm)
{
    if (comm && tfl__comm_alive(comm, "tfl_comm_reset_stats")) comm->stats = (tfl_comm_stats){0};
}
