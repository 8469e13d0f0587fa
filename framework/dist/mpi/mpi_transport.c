/*
 * framework/dist/mpi/mpi_transport.c: libtapeflow_mpi, the MPI transport of <tapeflow/comm.h>.
 * It calls MPI only (no tapeflow function), so that libtapeflow can load it with dlopen when
 * mpirun started the process, and a program linking the static libtapeflow does not load a
 * second copy of the library.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/distributed_mpi.h>

/* Ranks that share one node's memory reduce through an MPI-3 shared window instead of
 * MPI_Allreduce: each rank copies its values into its slot, then sums its 1/p of the elements
 * over the slots in rank order into slot 0, and every rank copies the result out (barriers
 * between the phases, chunks of SHM_BYTES). The same order on every rank: the result is
 * bit-identical everywhere. Open MPI's shared-memory transport without single copy
 * (containers) hands a 1 MB all-reduce over in small fragments, each a wake-up of the peer.
 * TFL_MPI_SHM=0 turns it off (then MPI_Allreduce, as across machines). */
#define SHM_BYTES ((MPI_Aint)4 << 20)

typedef struct mpi_impl {
    MPI_Comm comm; /* our duplicate, MPI_ERRORS_RETURN */
    int finalize;  /* MPI_Init was ours: finalize at destroy */
    MPI_Comm node; /* the shared-memory path: every rank on one node */
    MPI_Win win;
    char *slots; /* rank r's slot: slots + r * SHM_BYTES (the window is contiguous) */
    int rank, size;
} mpi_impl;

/* "MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated" into msg; returns rc. */
static int fail(int rc, const char *call, char *msg, size_t size)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    snprintf(msg, size, "%s: %s", call, text);
    return rc ? rc : 1;
}

static MPI_Datatype mpi_type(tfl_dtype dt)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT32:
        return MPI_FLOAT;
    case TFL_DTYPE_FLOAT64:
        return MPI_DOUBLE;
    case TFL_DTYPE_INT32:
        return MPI_INT32_T;
    case TFL_DTYPE_INT64:
        return MPI_INT64_T;
    default:
        return MPI_DATATYPE_NULL;
    }
}

/* dst[i] += src[i] for n elements of dtype */
static void add(void *dst, const void *src, int64_t n, tfl_dtype dt)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT32: {
        float *d = dst;
        const float *x = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += x[i];
        break;
    }
    case TFL_DTYPE_FLOAT64: {
        double *d = dst;
        const double *x = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += x[i];
        break;
    }
    case TFL_DTYPE_INT32: {
        int32_t *d = dst;
        const int32_t *x = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (int32_t)((uint32_t)d[i] + (uint32_t)x[i]);
        break;
    }
    default: {
        int64_t *d = dst;
        const int64_t *x = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (int64_t)((uint64_t)d[i] + (uint64_t)x[i]);
        break;
    }
    }
}

static int shm_barrier(mpi_impl *m, char *msg, size_t size)
{
    MPI_Win_sync(m->win);
    int rc = MPI_Barrier(m->node);
    MPI_Win_sync(m->win);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Barrier", msg, size);
}

static int shm_allreduce(mpi_impl *m, char *buf, int64_t count, tfl_dtype dt, int es, char *msg,
                         size_t size)
{
    int64_t per = SHM_BYTES / es;
    for (int64_t done = 0; done < count; done += per) {
        int64_t k = count - done < per ? count - done : per;
        memcpy(m->slots + (MPI_Aint)m->rank * SHM_BYTES, buf + done * es, (size_t)(k * es));
        if (shm_barrier(m, msg, size)) return 1;
        /* my part [lo, hi) of the chunk, summed over the slots in rank order into slot 0 */
        int64_t lo = k * m->rank / m->size, hi = k * (m->rank + 1) / m->size;
        for (int r = 1; r < m->size && hi > lo; r++)
            add(m->slots + lo * es, m->slots + (MPI_Aint)r * SHM_BYTES + lo * es, hi - lo, dt);
        if (shm_barrier(m, msg, size)) return 1;
        memcpy(buf + done * es, m->slots, (size_t)(k * es));
        /* nobody writes its slot again before everyone has read slot 0 */
        if (shm_barrier(m, msg, size)) return 1;
    }
    return 0;
}

static int mpi_allreduce(void *impl, void *buf, int64_t count, tfl_dtype dtype, char *msg,
                         size_t size)
{
    mpi_impl *m = impl;
    MPI_Datatype t = mpi_type(dtype);
    if (t == MPI_DATATYPE_NULL) {
        snprintf(msg, size, "MPI_Allreduce: dtype %d is not reducible", (int)dtype);
        return 1;
    }
    int es = 0;
    MPI_Type_size(t, &es);
    if (m->slots) return shm_allreduce(m, buf, count, dtype, es, msg, size);
    for (int64_t done = 0; done < count;) { /* MPI counts are int */
        int k = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + done * es, k, t, MPI_SUM, m->comm);
        if (rc != MPI_SUCCESS) return fail(rc, "MPI_Allreduce", msg, size);
        done += k;
    }
    return 0;
}

static int mpi_broadcast(void *impl, void *buf, int64_t bytes, int root, char *msg, size_t size)
{
    mpi_impl *m = impl;
    for (int64_t done = 0; done < bytes;) {
        int k = bytes - done > INT_MAX ? INT_MAX : (int)(bytes - done);
        int rc = MPI_Bcast((char *)buf + done, k, MPI_BYTE, root, m->comm);
        if (rc != MPI_SUCCESS) return fail(rc, "MPI_Bcast", msg, size);
        done += k;
    }
    return 0;
}

static int mpi_barrier(void *impl, char *msg, size_t size)
{
    mpi_impl *m = impl;
    int rc = MPI_Barrier(m->comm);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Barrier", msg, size);
}

static void mpi_abort(void *impl, int code)
{
    mpi_impl *m = impl;
    MPI_Abort(m ? m->comm : MPI_COMM_WORLD, code);
}

static void mpi_destroy(void *impl)
{
    mpi_impl *m = impl;
    if (!m) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        if (m->slots) {
            MPI_Win_unlock_all(m->win);
            MPI_Win_free(&m->win);
        }
        if (m->node != MPI_COMM_NULL) MPI_Comm_free(&m->node);
        if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
        if (m->finalize) MPI_Finalize();
    }
    free(m);
}

/* The shared window when every rank is on this node (a collective of the communicator). */
static int setup_shm(mpi_impl *m)
{
    const char *env = getenv("TFL_MPI_SHM");
    int want = m->size > 1 && !(env && !strcmp(env, "0")), all = 0, node_size = 0;
    int rc = MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &m->node);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(m->node, &node_size);
    int mine = want && node_size == m->size; /* every rank must take the same path */
    if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, m->comm);
    if (rc != MPI_SUCCESS || !all) return rc;
    MPI_Comm_set_errhandler(m->node, MPI_ERRORS_RETURN);
    void *base = NULL;
    rc = MPI_Win_allocate_shared(SHM_BYTES, 1, MPI_INFO_NULL, m->node, &base, &m->win);
    MPI_Aint bytes = 0;
    int disp = 0;
    if (rc == MPI_SUCCESS) rc = MPI_Win_shared_query(m->win, 0, &bytes, &disp, &base);
    if (rc == MPI_SUCCESS) rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, m->win);
    if (rc == MPI_SUCCESS) m->slots = base; /* contiguous by default: rank r at r * SHM_BYTES */
    return rc;
}

static void make(tfl_comm_transport *out, MPI_Comm comm, int finalize)
{
    memset(out, 0, sizeof *out);
    out->name = "mpi";
    mpi_impl *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(out->error, sizeof out->error, "no memory for the MPI transport");
        return;
    }
    m->comm = m->node = MPI_COMM_NULL;
    m->finalize = finalize;
    int rc = MPI_Comm_dup(comm, &m->comm);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(m->comm, &out->rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(m->comm, &out->size);
    if (rc != MPI_SUCCESS) {
        fail(rc, "MPI_Comm_dup", out->error, sizeof out->error);
        mpi_destroy(m);
        return;
    }
    m->rank = out->rank, m->size = out->size;
    if ((rc = setup_shm(m)) != MPI_SUCCESS) {
        fail(rc, "the shared-memory window", out->error, sizeof out->error);
        mpi_destroy(m);
        return;
    }
    out->impl = m;
    out->allreduce_sum = mpi_allreduce;
    out->broadcast = mpi_broadcast;
    out->barrier = mpi_barrier;
    out->abort = mpi_abort;
    out->destroy = mpi_destroy;
}

void tfl_mpi_transport(tfl_comm_transport *out, MPI_Comm comm)
{
    int init = 0, finalized = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&finalized);
    if (!init || finalized) {
        memset(out, 0, sizeof *out);
        out->name = "mpi";
        snprintf(out->error, sizeof out->error,
                 "MPI is %s: tfl_comm_from_mpi needs an "
                 "initialised MPI (or use tfl_comm_world)",
                 finalized ? "finalized" : "not initialised");
        return;
    }
    make(out, comm, 0);
}

/* MPI can be initialised once per process: what tfl_comm_world initialised is finalized at
 * exit, so that world communicators can come and go. */
static void finalize_at_exit(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

void tfl_mpi_world_transport(tfl_comm_transport *out, int flags)
{
    (void)flags;
    int init = 0, finalized = 0, provided = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&finalized);
    if (finalized) {
        memset(out, 0, sizeof *out);
        out->name = "mpi";
        snprintf(out->error, sizeof out->error, "MPI was finalized already");
        return;
    }
    if (!init) {
        /* errors of MPI_Init itself go to MPI_COMM_WORLD's handler (fatal by default) */
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            memset(out, 0, sizeof *out);
            out->name = "mpi";
            fail(rc, "MPI_Init_thread", out->error, sizeof out->error);
            return;
        }
        atexit(finalize_at_exit);
    }
    make(out, MPI_COMM_WORLD, 0);
}
