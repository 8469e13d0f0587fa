/*
 * optim/optim_internal.h: the optimizer record and its per-variable state. The fused update
 * kernels are the device backends' (framework/opt_kernels.h: each device carries its table).
 */
#ifndef TFL_OPTIM_INTERNAL_H
#define TFL_OPTIM_INTERNAL_H

#include "core_api/optim_api.h" /* the framework's declared API for optim/, with the fused
                                    update kernels' interface (tfl_framework_private) */

#include <tapeflow/optim.h>
#include <tapeflow/tape.h>

/* ---- the kinds (kinds.c) ------------------------------------------------------------------- */

/** One numeric or boolean field of tfl_optimizer_opts and what tfl_optimizer_new accepts. */
typedef struct tfl__opt_option {
    const char *name;     /* the field's name, as messages give it */
    size_t offset;        /* offsetof(tfl_optimizer_opts, field) */
    bool is_bool;         /* a bool field (only the "has no option" check) */
    uint32_t bit;         /* its bit in tfl__opt_kind.options (kinds.c); 0: every kind reads it */
    double hi;            /* a double must be finite, >= 0 and <= hi (< hi when hi_open) */
    bool hi_open;
    const char *expected; /* the range, for the message */
} tfl__opt_option;

/** The option table, in the order tfl_optimizer_new checks them (ends with a NULL name). */
extern const tfl__opt_option tfl__opt_options[];

/** What optim/ knows of one optimizer kind: one row of tfl__opt_kinds. */
typedef struct tfl__opt_kind {
    const char *name;      /* "Adam": the default optimizer name */
    int kernel;            /* the update kernel (framework/opt_elems.h's TFL__OPK_*) */
    tfl_formula formula;   /* what TFL_FORMULA_DEFAULT means for it */
    bool decoupled;        /* weight decay decoupled under PYTORCH too (AdamW) */
    uint32_t options;      /* the tfl__opt_option bits it reads */
    uint32_t torch_only;   /* ... of which only under PYTORCH */
    /* its defaults into o (learning_rate and its own options), tf: the TENSORFLOW ones */
    void (*defaults)(tfl_optimizer_opts *o, bool tf);
    /* its slot names at the kernel's fixed positions (NULL: unused) and their initial values
     * (zero-filled arrays of TFL_OPT_MAX_SLOTS) */
    void (*slots)(const tfl_optimizer_opts *o, const char **names, double *init);
    /* the kernel's switches and APPLY constants; h->lr, decay, l2 and clip are set */
    void (*hyper)(const tfl_optimizer_opts *o, tfl__opt_hyper *h);
    /* NULL, or the TENSOR constants k of a tensor at 0-based step `step` (t = step + 1);
     * memo: TFL_OPT_MEMO doubles the kind keeps between calls (zero at first) */
    void (*tensor)(const tfl_optimizer_opts *o, const tfl__opt_hyper *h, int64_t step,
                   double *memo, double *k);
} tfl__opt_kind;

#define TFL_OPT_MEMO 4

/** The kinds, indexed by tfl_optimizer_kind (row 0 is empty). */
extern const tfl__opt_kind tfl__opt_kinds[TFL_OPTIMIZER_KIND_COUNT];

/** The kind's row, or NULL for an unknown kind. */
static inline const tfl__opt_kind *tfl__opt_kind_of(int kind)
{
    return kind > 0 && kind < TFL_OPTIMIZER_KIND_COUNT ? &tfl__opt_kinds[kind] : NULL;
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
    tfl_tensor *loss_scale;      /* owned, with loss scaling: float32 scalar on CPU:0 */
    tfl_tensor *scale_steps;     /* owned, with loss scaling: finite steps since the last change */
    tfl_tensor *skipped;         /* owned, with loss scaling: applies skipped */
    const char *slot_names[TFL_OPT_MAX_SLOTS];
    double slot_init[TFL_OPT_MAX_SLOTS];

    tfl__opt_entry *entries;     /* creation order */
    size_t n_entries, cap_entries;
    uint32_t *map;               /* open addressing on var_id: entry index + 1, 0 = empty */
    size_t map_cap;              /* power of two */
    uint64_t applies;            /* calls that got past validation (duplicate stamps) */
    double memo[TFL_OPT_MEMO];   /* the kind's own (tfl__opt_kind.tensor) */

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
