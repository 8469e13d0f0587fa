/*
 * framework/dist/nccl_plan.h: the parts of the NCCL path that need no GPU and no NCCL (tested on any
 * machine by tests/dist/test_nccl_plan.c, which compiles nccl_plan.c itself): the dtype
 * mapping, the placement check of ranks on GPUs, and the cutting of a tensor list into NCCL
 * calls grouped in buckets. Public headers only.
 */
#ifndef TFL_DIST_NCCL_PLAN_H
#define TFL_DIST_NCCL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <tapeflow/base.h>

/* ncclDataType_t's values (nccl.h, stable since NCCL 2.0; bfloat16 since 2.10); nccl.c
 * checks them against nccl.h at compile time. */
enum {
    TFL__NCCL_INT8 = 0,
    TFL__NCCL_UINT8 = 1,
    TFL__NCCL_INT32 = 2,
    TFL__NCCL_INT64 = 4,
    TFL__NCCL_FLOAT16 = 6,
    TFL__NCCL_FLOAT32 = 7,
    TFL__NCCL_FLOAT64 = 8,
    TFL__NCCL_BFLOAT16 = 9,
};

/** The NCCL datatype of a tapeflow dtype (int32, int64, float16, bfloat16, float32, float64),
 * or -1 for the others (bool, complex64, complex128, invalid). */
int tfl__nccl_dtype(tfl_dtype dt);

/** 0 when NCCL reduces dt; else 1 with "<who>: tensor <index> is <dtype>; NCCL reduces
 * int32, int64, float16, bfloat16, float32 and float64" in msg. */
int tfl__nccl_check_dtype(const char *who, int index, tfl_dtype dt, char *msg, size_t size);

/** A positive 62-bit hash of a host name (FNV-1a): the key that groups the ranks of a node. */
int64_t tfl__nccl_host_hash(const char *host);

/**
 * The placement check before ncclCommInitRank, from what every rank gathered about every
 * rank r < size: host[r] (its host hash), ordinal[r] (the CUDA device its tensors are on) and
 * gpus[r] (the GPUs it sees). Sets *local_rank and *local_size (this rank's index among the
 * ranks of its host, and their count). Returns 0, or with a message in msg:
 *   1: a host runs more ranks than it has GPUs ("N ranks run on the host of rank R, which
 *      has M GPUs; NCCL needs one GPU per rank");
 *   2: two ranks of a host use one GPU (NCCL's "Duplicate GPU detected"), naming them.
 * Every rank computes the same verdict from the same data, so all fail together.
 */
int tfl__nccl_check_placement(int size, int rank, const int64_t *host, const int64_t *ordinal,
                              const int64_t *gpus, int *local_rank, int *local_size, char *msg,
                              size_t msg_size);

/** One NCCL call of a collective: count ELEMENTS (NCCL counts elements, not bytes) of item
 * `item` from element `offset`, in group `bucket`. */
typedef struct tfl__nccl_call {
    int item;
    int bucket;
    int64_t offset;
    int64_t count;
} tfl__nccl_call;

/**
 * Cuts items (numel[i] elements of dtype[i], in list order; numel 0 skipped) into calls
 * grouped in buckets of at most bucket_bytes (one ncclGroupStart/End each): a tensor goes
 * whole into the current bucket when it fits, else fills it and goes on in the next; every
 * call holds at least one element, so a bucket smaller than an element holds one. Writes up
 * to max_calls calls (calls may be NULL with max_calls 0) and returns how many there are;
 * *n_buckets gets the bucket count. bucket_bytes < 1 counts as 1.
 */
int64_t tfl__nccl_plan(int n, const int64_t *numel, const tfl_dtype *dtype, int64_t bucket_bytes,
                       tfl__nccl_call *calls, int64_t max_calls, int *n_buckets);

#endif /* TFL_DIST_NCCL_PLAN_H */
