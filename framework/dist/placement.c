/*
 * framework/dist/placement.c: one rank per GPU. tfl_comm_local_rank finds a rank's index among the
 * ranks of its host (the host-name hashes gathered through the transport, as the NCCL set-up
 * does); tfl_rank_device is the rule that maps (requested device, local rank, local size,
 * GPUs) to the device a rank drives; tfl_comm_device puts them together for a program.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tapeflow/device.h>

#include "dist_internal.h"
#include "nccl_plan.h"

tfl_status tfl_comm_local_rank(tfl_comm *comm, int *local_rank, int *local_size)
{
    if (!comm) return TFL_INVALID_ARGUMENT;
    if (!tfl__comm_alive(comm, "tfl_comm_local_rank")) return TFL_MISUSE;
    if (!comm->local_known) {
        int size = comm->t.size, rank = comm->t.rank, lr = 0, ls = 1;
        if (size > 1) {
            /* every rank fills its slot with its host's hash; the sum is the gather */
            int64_t *all = tfl__calloc(comm->ctx, (size_t)size * sizeof(int64_t));
            if (!all) return TFL_RESOURCE_EXHAUSTED;
            char host[256] = "", msg[256] = "";
            (void)gethostname(host, sizeof host - 1);
            all[rank] = tfl__nccl_host_hash(host);
            comm->stats.messages++;
            if (comm->t.allreduce_sum(comm->t.impl, all, size, TFL_DTYPE_INT64, msg, sizeof msg)) {
                tfl__host_free(comm->ctx, all);
                return tfl__comm_fail(comm, "tfl_comm_local_rank", msg);
            }
            ls = 0;
            for (int r = 0; r < size; r++)
                if (all[r] == all[rank]) {
                    ls++;
                    lr += r < rank;
                }
            tfl__host_free(comm->ctx, all);
        }
        comm->local_rank = lr, comm->local_size = ls, comm->local_known = true;
    }
    if (local_rank) *local_rank = comm->local_rank;
    if (local_size) *local_size = comm->local_size;
    return TFL_OK;
}

/* "CPU:1", "gpu", "/device:GPU:0", "/GPU:2" -> type 'C' or 'G' and index (-1: none given);
 * false for anything else. */
/* s as a device type's letter ('C', 'G') and index (-1: none), by the framework's parser */
static bool parse(const char *s, char *type, int *index)
{
    char t[8];
    if (tfl_device_parse(s, t, sizeof t, index) != TFL_OK) return false;
    *type = t[0];
    return true;
}

tfl_status tfl_rank_device(tfl_ctx *ctx, const char *requested, int local_rank, int local_size,
                           int gpus, char *device, size_t size)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, device && size > 0, TFL_INVALID_ARGUMENT,
              "tfl_rank_device: no room for the device's name (device %s, size %zu)",
              device ? "given" : "NULL", size);
    device[0] = '\0';
    TFL_CHECK(ctx, local_size >= 1 && local_rank >= 0 && local_rank < local_size && gpus >= 0,
              TFL_INVALID_ARGUMENT,
              "tfl_rank_device: local rank %d of %d ranks on the host, %d GPUs: expected 0 <= "
              "local rank < local size and GPUs >= 0",
              local_rank, local_size, gpus);
    bool any = !requested || !requested[0] || !strcmp(requested, "auto");
    char type = 'G';
    int index = -1;
    TFL_CHECK(ctx, any || parse(requested, &type, &index), TFL_INVALID_ARGUMENT,
              "tfl_rank_device: '%.64s' is not a device (expected auto, CPU, CPU:N, GPU or GPU:N)",
              requested);
    char out[32];
    if (type == 'C') {
        snprintf(out, sizeof out, "CPU:%d", index < 0 ? 0 : index);
    } else if (index >= 0) {
        TFL_CHECK(ctx, local_size == 1, TFL_FAILED_PRECONDITION,
                  "GPU:%d names one GPU for the %d ranks on this host (this is "
                  "local rank %d): they would all drive it, and NCCL needs one GPU per rank; "
                  "write GPU or auto, and rank r takes GPU:(its local rank mod the host's GPUs)",
                  index, local_size, local_rank);
        snprintf(out, sizeof out, "GPU:%d", index);
    } else if (gpus == 0) {
        snprintf(out, sizeof out, any ? "CPU:0" : "GPU:0");
    } else {
        TFL_CHECK(ctx, local_size <= gpus, TFL_FAILED_PRECONDITION,
                  "%d ranks run on this host, which has %d GPU%s; one rank drives one GPU: start "
                  "at most %d rank%s per host, or train on CPU:0",
                  local_size, gpus, gpus == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
        snprintf(out, sizeof out, "GPU:%d", local_rank % gpus);
    }
    TFL_CHECK(ctx, strlen(out) < size, TFL_INVALID_ARGUMENT,
              "tfl_rank_device: '%s' does not fit in %zu bytes", out, size);
    memcpy(device, out, strlen(out) + 1);
    return TFL_OK;
}

tfl_status tfl_comm_device(tfl_comm *comm, const char *requested, char *device, size_t size)
{
    int lr = 0, ls = 1;
    tfl_status st = tfl_comm_local_rank(comm, &lr, &ls);
    if (st != TFL_OK) return st;
    int gpus = 0, n = tfl_device_count(comm->ctx);
    for (int i = 0; i < n; i++) {
        const char *name = tfl_device_name(comm->ctx, i);
        gpus += name && !strncmp(name, "GPU:", 4);
    }
    return tfl_rank_device(comm->ctx, requested, lr, ls, gpus, device, size);
}
