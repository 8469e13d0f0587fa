/*
 * tapeflow/distributed_mpi.h: the MPI transport of <tapeflow/distributed.h>, in its own
 * library (libtapeflow_mpi, CMake target tapeflow::tapeflow_mpi, built when the build found
 * MPI: TFL_HAVE_MPI). An application that runs MPI itself hands its communicator over:
 *
 *     MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
 *     tfl_comm *comm = tfl_comm_from_mpi(ctx, MPI_COMM_WORLD, NULL);
 *     ...
 *     tfl_comm_free(comm);            // frees tapeflow's duplicate, never finalizes
 *     MPI_Finalize();
 *
 * The communicator is a duplicate (MPI_Comm_dup) with MPI_ERRORS_RETURN, so that MPI errors
 * come back as statuses and tapeflow's messages never mix with the application's.
 * Programs that do not call MPI themselves use tfl_comm_world, which loads this library only
 * under mpirun.
 */
#ifndef TAPEFLOW_DISTRIBUTED_MPI_H
#define TAPEFLOW_DISTRIBUTED_MPI_H

#include <mpi.h>

#include <tapeflow/comm.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Fills *out with a transport over a duplicate of comm (MPI must be initialised). On failure
 * out->error holds MPI's message (tfl_comm_new reports it as UNAVAILABLE).
 */
TFL_API void tfl_mpi_transport(tfl_comm_transport *out, MPI_Comm comm);

/**
 * A transport over MPI_COMM_WORLD: initialises MPI (MPI_Init_thread, FUNNELED) unless the
 * process has, and then finalizes it at exit (atexit: MPI can be initialised once per
 * process, so world communicators may come and go). What tfl_comm_world calls (flags: 0).
 */
TFL_API void tfl_mpi_world_transport(tfl_comm_transport *out, int flags);

/** A communicator over a duplicate of the application's comm (NULL with the error kept). */
static inline tfl_comm *tfl_comm_from_mpi(tfl_ctx *ctx, MPI_Comm comm, const tfl_comm_opts *opts)
{
    tfl_comm_transport t;
    tfl_mpi_transport(&t, comm);
    return tfl_comm_new(ctx, &t, opts);
}

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_DISTRIBUTED_MPI_H */
