/*
 * optim/optim_internal.h: the optimizer record and its per-variable state. The fused update
 * kernels are the device backends' (framework/opt_kernels.h: each device carries its table).
 */
#ifndef TFL_OPTIM_INTERNAL_H
#define TFL_OPTIM_INTERNAL_H

#include "internal.h"    /* framework's (tfl_framework_private) */
#include "opt_kernels.h" /* the fused update kernels' interface (framework's) */

#include <tapeflow/optim.h>
#include <tapeflow/tape.h>

/** The optimizer kernels of a device (its backend's table); NULL when it has none. */
static inline const tfl__opt_kernels *tfl__opt_kernels_for(const tfl__device *dev)
{
    return dev->opt_kernels;
}

/* ---- the optimizer --------------------------------------------------------------------------- */

/** What the optimizer keeps per variable it has updated. */
typedef struct tfl__opt_entry {
    uint64_t var_id;                         /* the variable's tensor id (never reused) */
    tfl_tensor *slots[TFL_OPT_MAX_SLOTS];    /* owned */
    tfl_tensor *step;                        /* PYTORCH: the variable's own step count (torch's
                                                state['step']), int64 scalar on CPU:0; owned */
    uint64_t stamp;                          /* the apply that last listed it (duplicates) */
} tfl__opt_entry;

struct tfl_optimizer {
    tfl__ctx_obj obj;            /* first: freed with the ctx if the caller has not */
    tfl_ctx *ctx;
    tfl_optimizer_opts opts;     /* resolved; opts.name points at `name` */
    char *name;
    tfl_tensor *iterations;      /* owned: int64 scalar on CPU:0 */
    const char *slot_names[TFL_OPT_MAX_SLOTS];
    double slot_init[TFL_OPT_MAX_SLOTS];

    tfl__opt_entry *entries;     /* creation order */
    size_t n_entries, cap_entries;
    uint32_t *map;               /* open addressing on var_id: entry index + 1, 0 = empty */
    size_t map_cap;              /* power of two */
    uint64_t applies;            /* calls that got past validation (duplicate stamps) */

    /* scratch of apply, grown to the largest n seen, never shrunk */
    tfl__opt_tensor *list;
    int32_t *which;              /* entry index per variable, -1: skipped */
    tfl_tensor **grads;          /* contiguous gradients (copies for strided ones) */
    double *norms;
    int cap_list;
    tfl_tensor **minimize;       /* minimize's variables and gradients, 2 × cap_minimize */
    int cap_minimize;
};

/** Whether opt is a live optimizer; MISUSE (kept in its ctx) naming `what` for a freed one. */
bool tfl__opt_alive(const tfl_optimizer *opt, const char *what);
/** An int64 scalar counter variable on CPU:0, zero, owned by opt; NULL (error kept). */
tfl_tensor *tfl__opt_counter(tfl_optimizer *opt, const char *name);
/** Whether a schedule is valid (what tfl_optimizer_new checks, schedule.c). */
bool tfl__schedule_valid(const tfl_schedule *s);
/** The entry of the variable with this id, or NULL. */
tfl__opt_entry *tfl__opt_find(const tfl_optimizer *opt, uint64_t var_id);
/** Appends an entry (no slots yet) and indexes it; NULL (error kept) when out of memory. */
tfl__opt_entry *tfl__opt_add(tfl_optimizer *opt, uint64_t var_id);
/** Drops the entries from index `keep` on (and their slots): undoes a failed first apply. */
void tfl__opt_truncate(tfl_optimizer *opt, size_t keep);

#endif /* TFL_OPTIM_INTERNAL_H */
