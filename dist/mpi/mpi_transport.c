/*
 * dist/mpi/mpi_transport.c: libtapeflow_mpi, the MPI transport of <tapeflow/distributed.h>.
 * It calls MPI only (no tapeflow function), so that libtapeflow can load it with dlopen when
 * mpirun started the process, and a program linking the static libtapeflow does not load a
 * second copy of the library.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/distributed_mpi.h>

typedef struct mpi_impl {
    MPI_Comm comm; /* our duplicate, MPI_ERRORS_RETURN */
    int finalize;  /* MPI_Init was ours: finalize at destroy */
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
        if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
        if (m->finalize) MPI_Finalize();
    }
    free(m);
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
    m->comm = MPI_COMM_NULL;
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
