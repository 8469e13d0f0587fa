#!/bin/sh
# rank_dir.sh PROGRAM ARGS...: runs PROGRAM in ./rank<R> (R: this process's rank under
# mpirun), so that every rank has files of its own (check_mpi_train.sh).
cd "rank${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}" && exec "$@"
