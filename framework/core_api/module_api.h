/*
 * framework/core_api/module_api.h: what the framework's core declares for the modules above
 * it (tape/, optim/, layers/, configs/), on top of core_api.h: the tensor record, which they
 * read (its shape, dtype, id, references) but never change outside the core's functions;
 * tensors made and copied on a device; the device seen as a handle (memory, streams and events
 * through functions, never its table); variables made by name; the context's settings and the
 * tape module's hooks through functions. The context, storage, variable and device records
 * stay in internal.h, which includes this header. Never installed.
 */
#ifndef TFL_FRAMEWORK_MODULE_API_H
#define TFL_FRAMEWORK_MODULE_API_H

#include "core_api.h"

#include <tapeflow/device.h>
#include <tapeflow/initializer.h>
#include <tapeflow/ops.h>
#include <tapeflow/random.h>

#include "philox.h" /* the Philox block function (self-contained) */

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

#define TFL_SCOPE_BYTES 256    /* the longest scope prefix, bytes with the NUL */

/* ---- tensors made and copied on a device (tensor.c) ------------------------------------- */

/** Validates dtype, rank and shape for a new tensor (tfl__checked_numel, then its bytes with
 * tfl__checked_bytes); `what` starts the message. *numel, when not NULL, gets the count. */
bool tfl__check_new(tfl_ctx *ctx, const char *what, tfl_dtype dtype, int rank,
                    const int64_t *shape);
/** A new contiguous tensor on dev with uninitialised data, not registered with any frame.
 * The shape goes through tfl__check_new first ("tensor allocation: ..."), so no caller can
 * make a byte count wrap; ops check it sooner, under their own name (tfl__op_run). */
tfl_tensor *tfl__tensor_alloc(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int rank,
                              const int64_t *shape);
/** tfl__tensor_alloc, registered with the innermost frame. */
tfl_tensor *tfl__tensor_empty(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int rank,
                              const int64_t *shape);
/** Copies t to a new contiguous tensor on dev, frame-owned, through the device table: the
 * copy slots, and the source device's Identity kernel for a strided view (a host gather of
 * the view's span when it has none). NULL with the error kept. */
tfl_tensor *tfl__tensor_copy_to(tfl_ctx *ctx, const tfl_tensor *t, tfl__device *dev);
/** The address of t's element 0 in its device's memory (internal.h's tfl__data): read or
 * write through it only on a host-memory device (tfl__dev_host_memory), else through the
 * tfl__dev_* copies. */
void *tfl__tensor_data(const tfl_tensor *t);
/** The device t's data lives on (internal.h's tfl__tensor_device). */
tfl__device *tfl__device_of(const tfl_tensor *t);
/** The references to t's storage: t's and its views' (1: t is the only tensor on it). */
int32_t tfl__tensor_storage_refs(const tfl_tensor *t);

/* ---- recorded steps (trace.c) ----------------------------------------------------------- */

/*
 * A span of work on one device (not the CPU: its kernels run as they are called), recorded
 * once as it runs and replayed on new input values: the calls made again, or on a device with
 * graphs (CUDA) one graph launched. See trace.c for what makes a replay exact and what is
 * refused. The caller keys a trace on the host values the span depends on (the inputs' shapes
 * and dtypes, any scalar it turns into a constant) and replays only under the same key.
 */
typedef struct tfl__trace tfl__trace;
/** Starts recording the work issued on dev. The n inputs (on dev) are the values that change
 * from one replay to the next: each is copied into a buffer of the trace, given in
 * in_copies[i] (frame-owned), which the span must read instead. NULL with the error kept. */
tfl__trace *tfl__trace_begin(tfl_ctx *ctx, tfl__device *dev, int n_in,
                             const tfl_tensor *const *in, tfl_tensor **in_copies);
/** Ends the recording; out: the tensors (on dev, or NULL) each replay gives back. NULL, with
 * why[0..size) saying why (no error kept) and the trace freed, when the span cannot be
 * replayed. */
tfl__trace *tfl__trace_end(tfl__trace *tr, int n_out, tfl_tensor *const *out, char *why,
                           size_t size);
/** Replays on new inputs (the recorded dtypes and shapes): in_copies and out as begin gave
 * and end took (frame-owned: release them, and every view of them, before the next replay).
 * *stale, with nothing done, when the replay may not write what it writes: a variable the
 * span uses no longer has the memory it had or shares it (a snapshot), an output or a block of
 * the recording is still held by someone (free the trace and record again). */
tfl_status tfl__trace_replay(tfl__trace *tr, int n_in, const tfl_tensor *const *in,
                             tfl_tensor **in_copies, tfl_tensor **out, bool *stale);
void tfl__trace_free(tfl__trace *tr);
/** The calls recorded; whether the device runs them as one graph (after the first replay). */
size_t tfl__trace_calls(const tfl__trace *tr);
bool tfl__trace_has_graph(const tfl__trace *tr);

/* ---- variables (variable.c) ------------------------------------------------------------- */

/** A variable named exactly `name` (no name scope is prepended; duplicates allowed), made like
 * tfl_variable_new_init: the optimizer's slots and step counter. */
tfl_tensor *tfl__variable_new_named(tfl_ctx *ctx, const char *name, tfl_dtype dtype, int rank,
                                    const int64_t *shape, const tfl_initializer *init,
                                    const tfl_variable_opts *opts);

/* ---- devices (device.c, core_api.c), as handles ----------------------------------------- */

/** True when dev's memory is host memory (internal.h's tfl__dev_is_host): the CPU. */
bool tfl__dev_host_memory(const tfl__device *dev);
/** True when dev copies to and from the host asynchronously on a stream (its table has
 * copy_host_async); false for the CPU and a device whose async copy is the synchronous one. */
bool tfl__dev_copies_async(const tfl__device *dev);
/* The device slots with their NULL meanings applied (device.c). Errors are kept in dev->ctx
 * (a failing backend slot that kept none gets INTERNAL "<slot> failed on <device>"). */
tfl_status tfl__dev_sync(tfl__device *dev);
/** bytes between host and dev (to_host 1: dev -> host); synchronous. */
tfl_status tfl__dev_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                              int to_host);
tfl_status tfl__dev_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                    const void *src, size_t bytes, int to_host);
tfl_status tfl__dev_copy_device(tfl__device *dev, tfl__stream *stream, void *dst,
                                const void *src, size_t bytes);
tfl_status tfl__dev_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                           size_t bytes);
/** *out is a new stream, or NULL (the device's own stream) when the device has no streams. */
tfl_status tfl__dev_stream_new(tfl__device *dev, tfl__stream **out);
void tfl__dev_stream_free(tfl__device *dev, tfl__stream *stream);
tfl_status tfl__dev_stream_sync(tfl__device *dev, tfl__stream *stream);
/** *out is a new event, or NULL when the device has no events (then record and wait do
 * nothing and event_sync is tfl__dev_sync). */
tfl_status tfl__dev_event_new(tfl__device *dev, tfl__event **out);
void tfl__dev_event_free(tfl__device *dev, tfl__event *event);
tfl_status tfl__dev_event_record(tfl__device *dev, tfl__event *event, tfl__stream *stream);
tfl_status tfl__dev_event_wait(tfl__device *dev, tfl__stream *stream, tfl__event *event);
tfl_status tfl__dev_event_sync(tfl__device *dev, tfl__event *event);
/** Host memory for uploads to dev, TFL_ALIGN-aligned: pinned when dev has host_alloc and it
 * succeeds (*pinned true), else ordinary host memory (pinned memory is a scarce resource: its
 * exhaustion only costs speed); NULL with RESOURCE_EXHAUSTED kept when neither can be had.
 * Free it with tfl__dev_host_free, giving back the same `pinned`. */
void *tfl__dev_host_alloc(tfl__device *dev, size_t bytes, bool *pinned);
void tfl__dev_host_free(tfl__device *dev, void *ptr, bool pinned);
/** The device of the innermost scope when it exists, else CPU:0 (tensor creation). */
tfl__device *tfl__current_device(tfl_ctx *ctx);
/** The device for something new named by `what` ("VarHandleOp"): `device` when given, else
 * the innermost scope's, else CPU:0; soft placement falls back to CPU:0, strict placement
 * keeps "Could not satisfy device specification" and returns NULL. */
tfl__device *tfl__resolve_device(tfl_ctx *ctx, const char *what, const char *device);
/** Logs "op <name> on <device>" when placement logging is on. */
void tfl__log_op(tfl_ctx *ctx, const char *name, const tfl__device *dev);
tfl__device *tfl__find_device(tfl_ctx *ctx, const char *name);
tfl__device *tfl__cpu(tfl_ctx *ctx);

/* ---- the context's settings and handles (core_api.c) ------------------------------------ */

/** Whether placement logging is on (tfl_ctx_set_log_placement). */
bool tfl__ctx_log_placement(const tfl_ctx *ctx);
/** The number of device scopes open (tfl_device_scope_push). */
int tfl__ctx_device_scopes(const tfl_ctx *ctx);
/** The context's seed (tfl_ctx_opts.seed, or its default), for what is seeded by 0. */
uint64_t tfl__ctx_seed(const tfl_ctx *ctx);
/** The newest handle record linked to ctx (tfl__obj_new with a free function); the others
 * follow through ->next. NULL when none. */
tfl__ctx_obj *tfl__ctx_objects(const tfl_ctx *ctx);
/** Unlinks a module's handle record from its context (a free function's first step when it
 * frees what the handle owns before tfl__obj_retire). */
void tfl__obj_unlink(tfl_ctx *ctx, tfl__ctx_obj *o);
/** The full name of variable v ("dense/kernel", without ":0"); NULL when v is not a variable.
 * Records nothing. */
const char *tfl__var_name(const tfl_tensor *v);
/** The optimizer whose state variable v is (its slots, its counters), or NULL. */
const void *tfl__var_owner(const tfl_tensor *v);
void tfl__var_set_owner(tfl_tensor *v, const void *owner);

/** The device's name, "CPU:0", "GPU:1". */
const char *tfl__dev_name(const tfl__device *dev);
/** True when a message of `level` reaches the application's logger (internal.h's
 * tfl__log_enabled). */
bool tfl__log_wanted(const tfl_ctx *ctx, tfl_log_level level);

#endif /* TFL_FRAMEWORK_MODULE_API_H */
