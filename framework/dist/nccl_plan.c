/*
 * framework/dist/nccl_plan.c: the GPU-free parts of the NCCL path (nccl_plan.h).
 */
#include <stdio.h>

#include "nccl_plan.h"

int tfl__nccl_dtype(tfl_dtype dt)
{
    switch (dt) {
    case TFL_DTYPE_INT32:
        return TFL__NCCL_INT32;
    case TFL_DTYPE_INT64:
        return TFL__NCCL_INT64;
    case TFL_DTYPE_FLOAT16:
        return TFL__NCCL_FLOAT16;
    case TFL_DTYPE_BFLOAT16:
        return TFL__NCCL_BFLOAT16;
    case TFL_DTYPE_FLOAT32:
        return TFL__NCCL_FLOAT32;
    case TFL_DTYPE_FLOAT64:
        return TFL__NCCL_FLOAT64;
    default:
        return -1;
    }
}

int tfl__nccl_check_dtype(const char *who, int index, tfl_dtype dt, char *msg, size_t size)
{
    if (tfl__nccl_dtype(dt) >= 0) return 0;
    snprintf(msg, size,
             "%s: tensor %d is %s; NCCL reduces int32, int64, float16, bfloat16, float32 and "
             "float64",
             who, index, tfl_dtype_name(dt));
    return 1;
}

int64_t tfl__nccl_host_hash(const char *host)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)host; p && *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    h &= ((uint64_t)1 << 62) - 1;
    return (int64_t)(h ? h : 1);
}

int tfl__nccl_check_placement(int size, int rank, const int64_t *host, const int64_t *ordinal,
                              const int64_t *gpus, int *local_rank, int *local_size, char *msg,
                              size_t msg_size)
{
    *local_rank = 0;
    *local_size = 0;
    for (int s = 0; s < size; s++)
        if (host[s] == host[rank]) {
            if (s < rank) ++*local_rank;
            ++*local_size;
        }
    /* the first offending host, in rank order, so that every rank names the same */
    for (int r = 0; r < size; r++) {
        int on_host = 0;
        for (int s = 0; s < size; s++)
            on_host += host[s] == host[r];
        if (on_host > gpus[r]) {
            snprintf(msg, msg_size,
                     "%d ranks run on the host of rank %d, which has %lld GPU%s; NCCL needs one "
                     "GPU per rank (start at most %lld rank%s per host, or use CPU tensors and "
                     "MPI)",
                     on_host, r, (long long)gpus[r], gpus[r] == 1 ? "" : "s", (long long)gpus[r],
                     gpus[r] == 1 ? "" : "s");
            return 1;
        }
    }
    for (int r = 0; r < size; r++)
        for (int s = r + 1; s < size; s++)
            if (host[s] == host[r] && ordinal[s] == ordinal[r]) {
                int lr = 0;
                for (int q = 0; q < s; q++)
                    lr += host[q] == host[s];
                snprintf(msg, msg_size,
                         "ranks %d and %d both have their tensors on GPU %lld of one host; NCCL "
                         "needs one GPU per rank (Duplicate GPU): put rank %d's on GPU:%d, its "
                         "index among the ranks of its host",
                         r, s, (long long)ordinal[r], s, lr);
                return 2;
            }
    return 0;
}

int64_t tfl__nccl_plan(int n, const int64_t *numel, const tfl_dtype *dtype, int64_t bucket_bytes,
                       tfl__nccl_call *calls, int64_t max_calls, int *n_buckets)
{
    if (bucket_bytes < 1) bucket_bytes = 1;
    int64_t nc = 0, used = 0;
    int bucket = 0;
    for (int i = 0; i < n; i++) {
        int64_t es = (int64_t)tfl_dtype_size(dtype[i]);
        if (numel[i] <= 0 || es <= 0) continue;
        int64_t off = 0;
        while (off < numel[i]) {
            int64_t room = bucket_bytes - used;
            if (room < es && used > 0) { /* not one more element: the next bucket */
                bucket++;
                used = 0;
                room = bucket_bytes;
            }
            int64_t k = room / es;
            if (k < 1) k = 1;
            if (k > numel[i] - off) k = numel[i] - off;
            if (nc < max_calls && calls) calls[nc] = (tfl__nccl_call){i, bucket, off, k};
            nc++;
            used += k * es;
            off += k;
        }
    }
    *n_buckets = nc ? bucket + 1 : 0;
    return nc;
}
