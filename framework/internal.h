/*
 * framework/internal.h: the framework core's own side: the context, storage, variable and
 * device records, the device table and backends, and the core's functions on them. It
 * includes the core's declared APIs (core_api/): core_api.h, the part the framework's
 * sub-modules (framework/io) are limited to, and module_api.h and op_api.h, what the modules
 * above (tape/, optim/, layers/) are limited to. Never installed.
 */
#ifndef TFL_FRAMEWORK_INTERNAL_H
#define TFL_FRAMEWORK_INTERNAL_H

#include <tapeflow/version.h>
/* the framework's own headers only: the umbrella also names the modules above it */
#include <tapeflow/base.h>
#include <tapeflow/context.h>
#include <tapeflow/device.h>
#include <tapeflow/initializer.h>
#include <tapeflow/ops.h>
#include <tapeflow/random.h>
#include <tapeflow/tensor.h>
#include <tapeflow/variable.h>

#include "core_api/module_api.h" /* and core_api.h */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TFL_MAX_DEVICES 9      /* CPU:0 plus up to 8 GPUs */
#define TFL_MAX_DEVICE_INDEX (TFL_MAX_DEVICES - 2) /* the largest N a name "GPU:N" may have */
#define TFL_MAX_SCOPES 64      /* nesting limit of device scopes */
#define TFL_DEVICE_NOTE_SIZE 384 /* bytes of why no GPU module loaded (module.c) */
#define TFL_DEFAULT_SEED 0x74666c5f73656564ull /* "tfl_seed": the ctx seed when none is given */

#include "core_api/op_api.h" /* the op list and table, attributes, the tapes' hook */

/** One kernel call: inputs already on the kernel's device, output allocated. */
typedef struct tfl__kcall {
    tfl_ctx *ctx;
    tfl__device *dev;
    tfl__op_id op;
    int n_in;
    const tfl_tensor *const *in;
    tfl_tensor *out;
    const void *attrs;   /* the op family's attrs struct (ops/op.h), or NULL */
} tfl__kcall;

typedef tfl_status (*tfl__kernel_fn)(const tfl__kcall *k);

/* A kernel's answer, nothing kept in the ctx, for a float16/bfloat16 call it has no 16-bit
 * path for at this shape (cuDNN refusing a padding, say): the dispatcher then runs the op's
 * float32 kernel between two conversions, as for a dtype the kernel does not list. */
#define TFL__KERNEL_DECLINED ((tfl_status)(TFL_STATUS_COUNT + 1))

/** A device's kernel for one op: NULL fn means none (placement skips the device). */
typedef struct tfl__kernel {
    tfl__kernel_fn fn;
    uint32_t dtypes;     /* key dtypes it runs (1u << tfl_dtype) */
    const void *data;    /* kernel-private table (e.g. inner loops per dtype) */
} tfl__kernel;

/* ---- caching allocator (allocator.c): one per device ------------------------------------ */

#define TFL_ALLOC_CLASSES 160 /* size classes: 4 per power of two from 64 B to 2^44 B */

typedef struct tfl__pool tfl__pool;

/** A block of device memory, as the host knows it (device memory never holds bookkeeping). */
typedef struct tfl__block {
    void *ptr;               /* the device memory (raw_alloc's result) */
    size_t size;             /* its size class's bytes */
    struct tfl__block *next; /* free: the next cached block of the class; in use: the next
                                block of the same hash bucket; spare: the next spare record */
    tfl__pool *pool;         /* the pool holding it (a recorded step reads or writes it: when
                                freed it goes back there, not to the cache), or NULL */
} tfl__block;

/*
 * A pool: blocks held for a recorded step (trace.c), which replays work on their addresses.
 * While a pool is the allocator's active one, every block handed out joins it, and a block
 * of the pool that is freed waits in the pool's own free lists, from which the active pool
 * is served first (the recorded work reuses memory as the plain step did). A held block never
 * returns to the allocator's cache, so nothing outside the recorded work gets its memory,
 * until tfl__pool_release.
 */
struct tfl__pool {
    tfl__block *free_lists[TFL_ALLOC_CLASSES]; /* held blocks now free */
    tfl__block **held;                         /* every block the pool holds */
    size_t n_held, cap_held;
    bool failed;                               /* out of host memory for `held` */
};

typedef struct tfl__allocator {
    tfl__device *device;                     /* where raw memory comes from */
    tfl__block *free_lists[TFL_ALLOC_CLASSES]; /* cached blocks per size class */
    tfl__block **buckets;                    /* blocks in use, hashed by ptr (chained) */
    size_t n_buckets;                        /* a power of two, or 0 before the first block */
    size_t n_in_use;                         /* blocks in the buckets */
    tfl__block *spare;                       /* unused records */
    void *chunks;                            /* every record lives in one of these */
    tfl_alloc_stats stats;                   /* live_tensors unused here (kept in the ctx) */
    tfl__pool *active;                       /* the pool new blocks join (trace.c), or NULL */
} tfl__allocator;

/* ---- devices (device.c, backends.c, cpu/cpu_device.c) ------------------------------------- */

/*
 * A backend's table of functions (version 2). Backends embed tfl__device first and append
 * their own fields (a CUDA device adds its stream and cuBLAS/cuDNN handles). Slots marked
 * optional may be NULL and say what NULL means; the framework calls the optional slots only
 * through the tfl__dev_* helpers below, which implement those meanings, so a backend fills
 * what it has and the rest works.
 *
 * Streams and events are opaque handles a backend defines (struct tfl__stream and struct
 * tfl__event are never defined by the framework). A NULL stream everywhere means the device's
 * own stream: the one its op kernels run on, in issue order. Every kernel and every slot
 * taking a stream is asynchronous with respect to the host unless it says otherwise; the host
 * waits only in copy_host, sync, stream_sync and event_sync.
 */
enum {
    /* Device memory is ordinary host memory: the framework may read and write tensor data
     * of this device directly (the CPU). Without it every access goes through the slots. */
    TFL_DEVICE_HOST_MEMORY = 1u << 0,
};

typedef struct tfl__device_ops {
    int version;           /* TFL_DEVICE_OPS_VERSION */
    const char *type_name; /* "CPU", "GPU": the TYPE of the devices' names "TYPE:N" */
    int priority;          /* placement picks the highest priority with a kernel (GPU > CPU) */
    unsigned flags;        /* TFL_DEVICE_* */

    /* ---- memory (required) ---- */
    void *(*raw_alloc)(tfl__device *dev, size_t bytes);   /* NULL when out of memory; the
                                                             result is TFL_ALIGN-aligned */
    /* ptr from raw_alloc. Work queued on the device may still use it: the caching allocator
     * hands a freed block to the next tensor at once, which is safe while all of a device's
     * work is ordered on its own stream; raw_free itself must wait for or defer past that
     * work (cudaFree does). */
    void (*raw_free)(tfl__device *dev, void *ptr);
    /* Copies `bytes` between host memory and this device's memory; to_host 0: host -> device,
     * 1: device -> host. Synchronous: it returns once the bytes are at dst and src may be
     * reused; it is ordered after the work already issued on the device's own stream. */
    tfl_status (*copy_host)(tfl__device *dev, void *dst, const void *src, size_t bytes,
                            int to_host);

    /* ---- optional slots ---- */
    /* Waits until every work issued on the device (all its streams) is done.
     * NULL: the device is always in sync (its kernels are synchronous). */
    tfl_status (*sync)(tfl__device *dev);
    /* Device-to-device copy within this device's memory (regions may not overlap), ordered on
     * `stream`. NULL: staged through host memory with copy_host (slow, synchronous). */
    tfl_status (*copy_device)(tfl__device *dev, tfl__stream *stream, void *dst, const void *src,
                              size_t bytes);
    /* copy_host, but asynchronous on `stream`: it may return before the copy is done; the
     * host buffer must stay valid and unchanged (host -> device) or unread (device -> host)
     * until the stream is synchronised or an event recorded after it has completed. Pinned
     * host memory is the backend's business. NULL: copy_host (synchronous). */
    tfl_status (*copy_host_async)(tfl__device *dev, tfl__stream *stream, void *dst,
                                  const void *src, size_t bytes, int to_host);
    /* Sets `bytes` bytes at dst (device memory) to `value` (a byte), ordered on `stream`.
     * NULL: a host buffer of the byte copied in with copy_host. */
    tfl_status (*memset)(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                         size_t bytes);
    /* Streams: a new stream, ordered independently of the device's own one. NULL (and then
     * stream_free/stream_sync unused): the device has only its own stream; asking for a new
     * one gives NULL, i.e. that stream, so the work stays correct, merely serialised. */
    tfl_status (*stream_new)(tfl__device *dev, tfl__stream **out);
    void (*stream_free)(tfl__device *dev, tfl__stream *stream);
    /* Waits on the host until the work issued on `stream` is done. NULL: sync(dev). */
    tfl_status (*stream_sync)(tfl__device *dev, tfl__stream *stream);
    /* Events: markers in a stream. NULL event_new (and the other event slots then unused):
     * events are no-ops: record does nothing, wait does nothing, event_sync is sync(dev),
     * which is correct for a device that has one stream or synchronous kernels. */
    tfl_status (*event_new)(tfl__device *dev, tfl__event **out);
    void (*event_free)(tfl__device *dev, tfl__event *event);
    /* Marks the point of `stream` reached by the work issued so far. */
    tfl_status (*event_record)(tfl__device *dev, tfl__event *event, tfl__stream *stream);
    /* Makes later work on `stream` wait for `event` (the host does not wait). */
    tfl_status (*event_wait)(tfl__device *dev, tfl__stream *stream, tfl__event *event);
    /* Waits on the host until the work before `event` is done. */
    tfl_status (*event_sync)(tfl__device *dev, tfl__event *event);
    /* Memory figures for error messages and `tapeflow version`: free and total bytes.
     * NULL: unknown (the messages leave them out). */
    tfl_status (*mem_info)(tfl__device *dev, size_t *free_bytes, size_t *total_bytes);
    /* One line describing the device ("NVIDIA H100 80GB HBM3, compute capability 9.0") into
     * buf. NULL: the device's name says all. */
    void (*describe)(tfl__device *dev, char *buf, size_t size);
    /* For libraries that drive the device themselves (NCCL in dist/): the vendor's device
     * number (CUDA's), making the device current on the calling thread (cudaSetDevice;
     * INTERNAL kept on failure), and a stream's native handle (a cudaStream_t as a void *;
     * NULL stream: the device's own). NULL slots: the device has none of these. */
    int (*native_ordinal)(const tfl__device *dev);
    tfl_status (*make_current)(tfl__device *dev);
    void *(*native_stream)(tfl__device *dev, tfl__stream *stream);
    /* Pinned (page-locked) host memory, from which copy_host_async can copy without the
     * backend staging it and while the host goes on (cudaHostAlloc / cudaFreeHost): `bytes`
     * of host memory, TFL_ALIGN-aligned, or NULL when out of memory; host_free takes what
     * host_alloc gave, after the copies from it completed. NULL slots, or a host_alloc that
     * fails: ordinary host memory (tfl__host_alloc / tfl__host_free) serves, e.g. for the CPU.
     * Reached through tfl__dev_host_alloc / tfl__dev_host_free. */
    void *(*host_alloc)(tfl__device *dev, size_t bytes);
    void (*host_free)(tfl__device *dev, void *ptr);
    /* Graphs of recorded work (a CUDA graph; trace.c). graph_capture calls issue(arg), which
     * puts work on the device's own stream, and records that work instead of running it:
     * nothing runs until graph_launch, which runs all of it again on the device's own stream
     * each time (the same addresses, the values they hold then). The work may not wait on
     * the host or read device memory back; a capture that fails returns the error (kept)
     * and no graph, and the device is as before. graph_free takes what capture made. NULL
     * slots: no graphs (the framework issues the recorded work itself each time). */
    tfl_status (*graph_capture)(tfl__device *dev, tfl_status (*issue)(void *arg), void *arg,
                                void **graph);
    tfl_status (*graph_launch)(tfl__device *dev, void *graph);
    void (*graph_free)(tfl__device *dev, void *graph);
} tfl__device_ops;
#define TFL_DEVICE_OPS_VERSION 3

typedef struct tfl__opt_kernels tfl__opt_kernels; /* framework/opt_kernels.h */

struct tfl__device {
    const tfl__device_ops *ops;
    tfl_ctx *ctx;
    int index;             /* the N in "CPU:N" / "GPU:N" */
    int slot;              /* position in ctx->devices */
    char name[16];         /* "CPU:0" */
    tfl__allocator alloc;  /* the device's caching allocator (host-side bookkeeping) */
    tfl__kernel kernels[TFL_OP_COUNT]; /* filled by the backend from its family tables */
    const tfl__opt_kernels *opt_kernels; /* the fused optimizer kernels (opt_kernels.h),
                                            filled by the backend; NULL: none (optimizers
                                            refuse variables on this device) */
};

/*
 * A backend: how the framework finds devices. backends.c holds the static list
 * tfl__backends[] (the CPU first, then those compiled in: `#if TFL_HAVE_CUDA
 * &tfl__cuda_backend`); tfl_ctx_new asks each for its device_count and creates devices
 * 0..count-1 with device_new, in list order, up to TFL_MAX_DEVICES. To plug in a backend:
 *   1. define `const tfl__backend tfl__<name>_backend` in framework/<name>/ (nothing else of
 *      the framework changes), with a tfl__device_ops table of version TFL_DEVICE_OPS_VERSION;
 *   2. device_new returns a host record (tfl__host_alloc) that embeds tfl__device first, with
 *      ops, ctx, index and name ("GPU:0") set, kernels[] filled for the ops it runs and
 *      opt_kernels for the optimizers (or NULL); the framework sets slot and initialises the
 *      allocator (tfl__allocator_init) after device_new returns;
 *   3. add it to the list in backends.c under its build switch.
 * Placement then uses kernels[] and ops->priority; the allocator, copies, tfl_tensor_get,
 * formatting, random ops and optimizers reach the device through the table only.
 */
typedef struct tfl__backend {
    int version;           /* TFL_DEVICE_OPS_VERSION */
    const char *type_name; /* "CPU", "GPU" (the same as its devices' ops->type_name) */
    /* Devices this backend has on this machine: 0 when none is usable (no GPU, no driver);
     * it records nothing in ctx and never fails loudly (a CPU-only run must go on). */
    int (*device_count)(tfl_ctx *ctx);
    /* Device `index` (0..count-1) for ctx, as described above; NULL with an error kept in
     * ctx (tfl_ctx_new then fails with it). */
    tfl__device *(*device_new)(tfl_ctx *ctx, int index);
    /* Frees what device_new made, after the framework trimmed the allocator (every block is
     * back in raw_free). (optional) NULL: tfl__host_free(ctx, dev). */
    void (*device_free)(tfl__device *dev);
    /* A lazy backend is asked for its devices only when a context first needs to know them
     * (tfl__devices_discover: automatic placement, a device name or scope of its type,
     * tfl_device_count), never by tfl_ctx_new; a device_new failing then fails the call that
     * asked. (The GPU module loader, module.c.) */
    bool lazy;
    /* (optional) Why the backend has no device in ctx, for the log and tfl_device_note:
     * writes one line into buf and returns its log level (TFL_LOG_INFO, TFL_LOG_WARNING), or
     * returns -1 when there is nothing to say. Asked after device_count. NULL: nothing. */
    int (*note)(tfl_ctx *ctx, char *buf, size_t size);
} tfl__backend;

/** The static list (backends.c): the CPU's first. */
extern const tfl__backend *const tfl__backends[];
extern const int tfl__n_backends;
/** The GPU module loader (module.c): a lazy backend forwarding to the module it loads. */
extern const tfl__backend tfl__gpu_module_backend;

/* ---- storage and tensors ---------------------------------------------------------------- */

struct tfl__storage {
    int32_t refs;          /* tensors (views) sharing it */
    tfl__device *device;   /* where data lives */
    void *data;            /* device memory, TFL_ALIGN-aligned (block->ptr) */
    size_t bytes;          /* usable bytes (the size class, >= requested) */
    tfl__block *block;     /* the allocator's record of data */
    tfl__storage *next_free; /* the ctx's free list of storage records */
};

/* ---- variables (variable.c, collections.c, scope.c) -------------------------------------- */

/** What a variable has beyond its tensor record. Host memory; freed with the variable. */
struct tfl__var {
    char *name;              /* full name without ":0" ("conv1/weights") */
    bool trainable;
    bool in_store;           /* made by tfl_get_variable: its name is unique in the ctx */
    bool has_init;           /* `init` can be run (again) by tfl_variable_initialize */
    tfl_initializer init;    /* init.tensor is retained while has_init (TFL_INIT_TENSOR) */
    const void *owner;       /* the optimizer whose state it is (slots, counters), or NULL */
};

/** A named collection: weak references, in the order they joined (duplicates allowed). */
typedef struct tfl__collection {
    char *name;
    tfl_tensor **items;
    size_t n, cap;
} tfl__collection;

#define TFL_MAX_NAME_SCOPES 64 /* nesting limit of name scopes */

/* ---- the context ------------------------------------------------------------------------- */

struct tfl_ctx {
    tfl_ctx_opts opts;
    int num_threads;
    bool soft_placement;
    bool log_placement;
    bool deterministic;                /* tfl_ctx_set_deterministic: kernels pick
                                          run-to-run reproducible algorithms only */
    tfl_precision precision;           /* tfl_ctx_set_precision */

    tfl_status err_code;               /* the first error kept */
    char err_msg[TFL_MSG_SIZE];

    tfl__device *devices[TFL_MAX_DEVICES];
    int n_devices;
    bool devices_pending;              /* lazy backends not yet asked (tfl__devices_discover) */
    const struct tfl__backend *gpu_module; /* the GPU module's backend (module.c), or NULL */
    int device_note_level;             /* module.c: the level of device_note, -1: none */
    char device_note[TFL_DEVICE_NOTE_SIZE]; /* why no GPU module loaded */

    int scopes[TFL_MAX_SCOPES];        /* device scope stack: device slot, or -1-index for an */
    char scope_names[TFL_MAX_SCOPES][16]; /* unsatisfiable request (kept for the error text) */
    int n_scopes;

    tfl_tensor **frame_items;          /* tensors owned by open frames, innermost last */
    size_t n_frame_items, cap_frame_items;
    size_t *frame_marks;               /* n_frame_items when each frame was pushed */
    int n_frames, cap_frames;

    tfl_tensor **vars;                 /* live variables, in creation order (weak) */
    size_t n_vars, cap_vars;
    tfl__collection *collections;      /* named collections (weak), in creation order */
    size_t n_collections, cap_collections;
    char scope[TFL_SCOPE_BYTES];       /* the name scope prefix "model/conv1" */
    uint16_t scope_len[TFL_MAX_NAME_SCOPES]; /* strlen(scope) before each push */
    uint8_t scope_reuse[TFL_MAX_NAME_SCOPES]; /* tfl_reuse given to each push */
    int n_name_scopes;

    uint64_t rng_seed;                 /* the ctx's seed for ops given seed 0 (random.c) */
    uint64_t rng_calls;                /* unseeded random calls so far: each gets its own stream */
    uint32_t rng_replica;              /* tfl_ctx_set_rng_replica: mixed into unseeded keys */

    /* gradient tapes (tape/ installs these; the framework only calls the hook) */
    tfl__record_fn tape_record;        /* called after each op while a tape records */
    void (*tapes_free)(tfl_ctx *ctx);  /* frees every tape still alive (tfl_ctx_free) */
    void *tapes;                       /* the tape module's state */
    int n_recording;                   /* tapes recording now */
    int tape_pause;                    /* > 0: internal steps that must not be recorded */
    struct tfl__trace *trace;          /* the step being recorded (trace.c), or NULL */
    int trace_depth;                   /* > 0 inside a kernel or slot the trace records whole */
    tfl__ctx_obj *objects;             /* modules' objects still alive, newest first */
    tfl__ctx_obj *dead_objects;        /* freed handle records kept for reuse, oldest first */
    tfl__ctx_obj *dead_tail;           /* (handles.c) */
    uint64_t next_tensor_id;

    tfl_tensor *free_tensors;          /* recycled tensor records, oldest first (refs 0) */
    tfl_tensor *free_tensors_tail;     /* where a released record joins the list */
    tfl__storage *free_storage;        /* recycled storage records */
    void *tensor_chunks;               /* every tensor record lives in one of these */
    void *storage_chunks;              /* (freed with the ctx, live or not) */
    uint64_t live_tensors;
};

/** Offers a finished op to the recording tapes (cheap when none records). */
static inline void tfl__record(tfl_ctx *ctx, tfl__op_id op, int n_in, const tfl_tensor *const *in,
                               const tfl_tensor *out, const void *attrs)
{
    if (TFL_UNLIKELY(ctx->n_recording > 0) && ctx->tape_pause == 0 && out)
        ctx->tape_record(ctx, op, n_in, in, out, attrs);
}

/* ---- recorded steps (trace.c; the API for layers/ is in core_api/module_api.h) ------------ */

/* While a trace records, a kernel call goes through tfl__trace_kernel, and the device slots
 * the framework calls outside kernels (device.c) tell tfl__trace_slot before they run as
 * always: an item of the trace, or a refusal (the step cannot be replayed) when the work is of
 * a kind a replay would get wrong. */
tfl_status tfl__trace_kernel(const tfl__kernel *k, const tfl__kcall *call);
enum { TFL__SLOT_UPLOAD, TFL__SLOT_READ, TFL__SLOT_COPY, TFL__SLOT_MEMSET };
void tfl__trace_slot(tfl__device *dev, tfl__stream *stream, int slot, void *dst,
                     const void *src, int value, size_t bytes);
/** True when a slot call on dev is the trace's to record (see tfl__trace_slot). */
static inline bool tfl__traced(const tfl__device *dev)
{
    return TFL_UNLIKELY(dev->ctx->trace != NULL) && dev->ctx->trace_depth == 0;
}
/** Marks the recording as not replayable: `why` completes "the step cannot be replayed: ". */
void tfl__trace_refuse(tfl_ctx *ctx, const char *why);

/** Runs a device's kernel: every kernel call of the framework goes through here. */
static inline tfl_status tfl__kernel_run(const tfl__kernel *k, const tfl__kcall *call)
{
    if (TFL_UNLIKELY(call->ctx->trace != NULL) && call->ctx->trace_depth == 0)
        return tfl__trace_kernel(k, call);
    return k->fn(call);
}

/** Links a module's object to its context (see tfl__ctx_obj). */
static inline void tfl__ctx_link(tfl_ctx *ctx, tfl__ctx_obj *o, void (*free_fn)(tfl__ctx_obj *))
{
    o->free = free_fn;
    o->prev = NULL;
    o->next = ctx->objects;
    if (o->next) o->next->prev = o;
    ctx->objects = o;
}

static inline void tfl__ctx_unlink(tfl_ctx *ctx, tfl__ctx_obj *o)
{
    if (o->prev) o->prev->next = o->next;
    else if (ctx->objects == o) ctx->objects = o->next;
    if (o->next) o->next->prev = o->prev;
    o->prev = o->next = NULL;
}

/* ---- handle records (handles.c; the rest is in core_api.h) ------------------------------- */

/** Gives every dead record back to the allocator: for tfl_ctx_free only. */
void tfl__objs_free(tfl_ctx *ctx);

/* ---- logging (base.c; tfl__log and the errors are in core_api.h) ------------------------- */

/** True when a message of `level` reaches the application's logger. */
static inline bool tfl__log_enabled(const tfl_ctx *ctx, tfl_log_level level)
{
    return ctx->opts.log_fn && level <= ctx->opts.log_level;
}

/* ---- allocator.c ------------------------------------------------------------------------- */

/*
 * A size-class cache of device memory whose bookkeeping lives on the host (blocks are
 * tfl__block records, in-use ones found by their pointer through a hash table), so it serves
 * any device. get/put never touch the memory itself.
 */
void tfl__allocator_init(tfl__allocator *a, tfl__device *dev);
/** A block of >= bytes; *got receives its usable size. NULL (error kept) when out of memory:
 * RESOURCE_EXHAUSTED "out of memory on GPU:0: cannot allocate N bytes (M in use, C cached[,
 * F free of T])". */
void *tfl__allocator_get(tfl__allocator *a, size_t bytes, size_t *got);
/** Gives back a block from get (got: its *got). The block joins its class's cache. */
void tfl__allocator_put(tfl__allocator *a, void *ptr, size_t got);
/** get for a caller that keeps the block's record (tensor storage): b->ptr is the memory,
 * b->size its usable bytes; no pointer lookup on either side. NULL (error kept) as get. */
tfl__block *tfl__allocator_get_block(tfl__allocator *a, size_t bytes);
/** Gives back a block from get_block. */
void tfl__allocator_put_block(tfl__allocator *a, tfl__block *b);
/** Returns every cached block to the device (raw_free). Blocks in use stay. */
void tfl__allocator_trim(tfl__allocator *a);
/** Makes b (in use) held by pool: freed, it waits there. False when the host has no memory
 * for the record or another pool holds it (nothing changes). */
bool tfl__pool_hold(tfl__allocator *a, tfl__pool *pool, tfl__block *b);
/** Ends pool's hold: its free blocks join the allocator's cache, the others (in use) return
 * there when freed. The pool is empty afterwards. */
void tfl__pool_release(tfl__allocator *a, tfl__pool *pool);
/** trim, raw_free of blocks still in use, and the host bookkeeping freed: device teardown. */
void tfl__allocator_destroy(tfl__allocator *a);

/* ---- record pools (tensor.c) ------------------------------------------------------------- */

/** Releases every record and the data of storage still in use: for tfl_ctx_free only. */
void tfl__pools_free(tfl_ctx *ctx);

/* ---- devices (device.c) ------------------------------------------------------------------ */

/** Creates the devices of every backend in tfl__backends (tfl_ctx_new). */
tfl_status tfl__devices_init(tfl_ctx *ctx);
/** Asks the lazy backends for their devices, once per context (a flag test after that).
 * A backend without devices logs its note and the context goes on without them; a device the
 * backend has but cannot make (out of memory) is an error kept in ctx, nothing of that
 * backend stays, and the next call asks again. */
tfl_status tfl__devices_discover_(tfl_ctx *ctx);
static inline tfl_status tfl__devices_discover(tfl_ctx *ctx)
{
    return TFL_UNLIKELY(ctx->devices_pending) ? tfl__devices_discover_(ctx) : TFL_OK;
}
void tfl__devices_free(tfl_ctx *ctx);
/** True when the framework may touch dev's memory directly (TFL_DEVICE_HOST_MEMORY). */
static inline bool tfl__dev_is_host(const tfl__device *dev)
{
    return (dev->ops->flags & TFL_DEVICE_HOST_MEMORY) != 0;
}

/* ---- shapes (shape.c) -------------------------------------------------------------------- */

/** The product of a shape already known to be valid (a tensor's, or a part of one). */
int64_t tfl__numel(int rank, const int64_t *shape);
/**
 * The element count of a shape a caller gave: true with *numel set when every dimension is
 * >= 0 and the product of the dimensions (zeros counted as ones, so that row-major strides
 * fit too) is at most INT64_MAX. No error is recorded (see tfl__checked_numel).
 */
bool tfl__shape_numel(int rank, const int64_t *shape, int64_t *numel);
/**
 * tfl__shape_numel with the errors recorded: INVALID_ARGUMENT "<what>: rank 9 is out of range
 * (0..8)", "<what>: shape is NULL for rank 2", "<what>: dimension 1 is negative (-3) in shape
 * (2, -3)" or "<what>: shape (4294967296, 4294967296) has more than INT64_MAX elements".
 */
bool tfl__checked_numel(tfl_ctx *ctx, const char *what, int rank, const int64_t *shape,
                        int64_t *numel);
/** numel elements of dtype in bytes; INVALID_ARGUMENT when more than TFL_MAX_TENSOR_BYTES. */
bool tfl__checked_bytes(tfl_ctx *ctx, const char *what, tfl_dtype dtype, int64_t numel,
                        size_t *bytes);
/** Row-major strides (elements) for shape. */
void tfl__contiguous_strides(int rank, const int64_t *shape, int64_t *strides);
/** Broadcasts two shapes; false when incompatible. */
bool tfl__broadcast_shapes(int ra, const int64_t *sa, int rb, const int64_t *sb, int *rout,
                           int64_t *out);
/** Normalises an axis in [-rank, rank) to [0, rank); -1 when out of range. */
static inline int tfl__norm_axis(int axis, int rank)
{
    if (axis < -rank || axis >= rank) return -1;
    return axis < 0 ? axis + rank : axis;
}

/* ---- tensors (tensor.c) ------------------------------------------------------------------ */

/** A new tensor viewing t's storage with the given shape, strides and offset. */
tfl_tensor *tfl__tensor_view(tfl_ctx *ctx, const tfl_tensor *t, int rank, const int64_t *shape,
                             const int64_t *strides, int64_t offset);
static inline void *tfl__data(const tfl_tensor *t)
{
    return (char *)t->storage->data + (size_t)t->offset * tfl_dtype_size((tfl_dtype)t->dtype);
}
static inline tfl__device *tfl__tensor_device(const tfl_tensor *t) { return t->storage->device; }
/** Saturating double -> integer conversion (NaN gives 0), as tfl_cast documents. */
static inline int64_t tfl__sat_i64(double v, int64_t lo, int64_t hi)
{
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi; /* (double)INT64_MAX rounds up to 2^63: clamp first */
    return (int64_t)v;
}

/** The address of element `index` (row-major flat index) of a tensor, any view, in its
 * device's memory (only arithmetic: dereference it only on a host-memory device). */
static inline const char *tfl__elem_ptr(const tfl_tensor *t, int64_t index)
{
    int64_t off = 0;
    for (int d = t->rank - 1; d >= 0; d--) {
        off += (index % t->shape[d]) * t->strides[d];
        index /= t->shape[d];
    }
    return (const char *)tfl__data(t) + off * (int64_t)tfl_dtype_size((tfl_dtype)t->dtype);
}

/** Element at p of dtype, as double (complex: real part). */
double tfl__load_f64(const void *p, tfl_dtype dtype);


/* ---- variables (variable.c, collections.c) ----------------------------------------------- */

/** Called by tfl_tensor_release when a variable's last reference goes: leaves the registry
 * and every collection, frees the tfl__var. Returns the initial value the variable kept
 * (TFL_INIT_TENSOR), which the caller releases, or NULL: collections.c calls nothing of
 * tensor.c. */
tfl_tensor *tfl__var_destroy(tfl_tensor *v);
/** Frees every variable record, the registry and the collections: for tfl_ctx_free only. */
void tfl__vars_free(tfl_ctx *ctx);
/** Adds v to the live-variable registry (creation order). */
tfl_status tfl__vars_register(tfl_ctx *ctx, tfl_tensor *v);
/** Removes every occurrence of v from every collection and from the registry. */
void tfl__vars_forget(tfl_ctx *ctx, tfl_tensor *v);
/** The variables get_variable made, looked up by full name; NULL when none. */
tfl_tensor *tfl__store_find(tfl_ctx *ctx, const char *name);

/* ---- random streams (random.c) ----------------------------------------------------------- */

/**
 * The 64-bit Philox key (lo: key[0], hi: key[1]) of a random call given `seed`: seed itself
 * when != 0, else the key of the ctx's next stream (random.h's layout; counts the call). Ops
 * that draw (dropout) resolve it once and keep it in their attrs.
 */
uint64_t tfl__rng_key(tfl_ctx *ctx, uint64_t seed);

/* ---- dtypes (dtype.c) -------------------------------------------------------------------- */

/** The conversions assign and initializers make: same dtype, a real (int, float) value to a
 * real or complex dtype, complex to complex. Never from or to bool, never complex to real. */
bool tfl__dtype_converts(tfl_dtype from, tfl_dtype to);
/** "float16, bfloat16, float32, float64" for a mask of (1u << dtype) bits. */
char *tfl__dtype_list(uint32_t mask, char *buf, size_t size);

#define TFL_DT(d) (1u << TFL_DTYPE_##d)
#define TFL_MASK_INT (TFL_DT(INT32) | TFL_DT(INT64))
#define TFL_MASK_HALF (TFL_DT(FLOAT16) | TFL_DT(BFLOAT16))
#define TFL_MASK_FLOAT (TFL_MASK_HALF | TFL_DT(FLOAT32) | TFL_DT(FLOAT64))
#define TFL_MASK_COMPLEX (TFL_DT(COMPLEX64) | TFL_DT(COMPLEX128))
#define TFL_MASK_REAL (TFL_MASK_INT | TFL_MASK_FLOAT)
#define TFL_MASK_NUMERIC (TFL_MASK_REAL | TFL_MASK_COMPLEX)
#define TFL_MASK_ALL (((1u << TFL_DTYPE_COUNT) - 1u) & ~1u) /* every dtype but INVALID */

#endif /* TFL_FRAMEWORK_INTERNAL_H */
