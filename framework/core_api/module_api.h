/*
 * framework/core_api/module_api.h: what the framework's core declares for the modules above
 * it (tape/, optim/, layers/), on top of core_api.h: the tensor record, which they read (its
 * shape, dtype, id, references) but never change outside the core's functions; tensors made
 * and copied on a device; the device seen as a handle (memory, streams and events through
 * functions, never its table); variables made by name; the context's settings and the tape
 * module's hooks through functions. The context, storage, variable and device records stay
 * in internal.h, which includes this header. Never installed.
 */
#ifndef TFL_FRAMEWORK_MODULE_API_H
#define TFL_FRAMEWORK_MODULE_API_H

#include "core_api.h"

#include <tapeflow/device.h>
#include <tapeflow/initializer.h>
#include <tapeflow/ops.h>
#include <tapeflow/random.h>

#define TFL_MAX_INPUTS 5       /* the most inputs an op kernel takes (variadic ops differ) */
#define TFL_ALIGN 64           /* alignment of tensor data, bytes */

/* records of the core the modules hold only pointers to (internal.h defines them) */
typedef struct tfl__device tfl__device;
typedef struct tfl__storage tfl__storage;
typedef struct tfl__var tfl__var;
typedef struct tfl__stream tfl__stream;
typedef struct tfl__event tfl__event;

/* ---- the tensor record (tensor.c) -------------------------------------------------------- */

enum {
    TFL_TENSOR_FLAG_VARIABLE = 1u << 0, /* a variable: assign mutates its storage (var != NULL) */
    TFL_TENSOR_FLAG_UNINIT = 1u << 1,   /* a deferred variable not yet initialized: unreadable */
};

struct tfl_tensor {
    tfl_ctx *ctx;          /* owner (kept while the record sits in the pool) */
    int32_t refs;          /* references; 0 frees. 0 also marks a record in the pool: a
                              released tensor is dead, not freed (tfl__tensor_alive) */
    uint8_t dtype;         /* tfl_dtype */
    uint8_t rank;          /* 0..TFL_MAX_RANK */
    uint16_t flags;        /* TFL_TENSOR_FLAG_* */
    int64_t numel;         /* product of shape */
    int64_t offset;        /* elements from storage->data to element 0 */
    tfl__storage *storage; /* shared by views */
    tfl__var *var;         /* variables only (TFL_TENSOR_FLAG_VARIABLE), else NULL */
    uint64_t id;           /* unique in the ctx (tapes track values by id; a tape's saved
                              snapshot of a variable carries the variable's id) */
    int64_t shape[TFL_MAX_RANK];
    int64_t strides[TFL_MAX_RANK]; /* elements; 0 allowed only for size-1 axes */
    tfl_tensor *next_free; /* the ctx's free list of tensor records */
};

/** True for a live tensor; false, with MISUSE recorded, for a released record sitting in its
 * ctx's pool (refs is 0 there: the dead marker). */
static inline bool tfl__tensor_alive(const tfl_tensor *t, const char *what)
{
    return TFL_LIKELY(t->refs > 0) || tfl__tensor_dead(t, what);
}
/** A view of all of src that no frame owns, carrying src's id (a tape's saved copy of a
 * variable's value: later assigns copy-on-write around it). */
tfl_tensor *tfl__tensor_snapshot(tfl_ctx *ctx, const tfl_tensor *src);
/** Whether t is a trainable variable (records nothing). */
bool tfl__tensor_trainable(const tfl_tensor *t);

#endif /* TFL_FRAMEWORK_MODULE_API_H */
