/*
 * tapeflow/context.h: the context that owns everything mutable (devices, allocators, the
 * first error, logging, frames, device scopes). Two contexts are independent; one context
 * is used by one thread at a time. There is no global state in the library.
 */
#ifndef TAPEFLOW_CONTEXT_H
#define TAPEFLOW_CONTEXT_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Log levels, most severe first. */
typedef enum tfl_log_level {
    TFL_LOG_ERROR,
    TFL_LOG_WARNING,
    TFL_LOG_INFO,
    TFL_LOG_DEBUG,
    TFL_LOG_LEVEL_COUNT
} tfl_log_level;

/** A log sink: receives one line (no trailing newline). */
typedef void (*tfl_log_fn)(void *user, tfl_log_level level, const char *message);

/**
 * Memory hooks: every byte that tapeflow's own code allocates goes through them: tensor
 * storage (through each device's caching allocator), the context's records, tapes,
 * optimizers, models, layers, datasets and their examples, kernels' scratch. Both or neither
 * must be set. alloc must return memory aligned to `alignment` (a power of two, at most
 * 4096) or NULL.
 *
 * What bypasses them: memory that process-wide runtimes allocate for themselves, which no
 * one context can own (hooks belong to one context; this memory is shared by every context
 * and outlives them), and short-lived buffers of the C library and zlib:
 *   - BLIS: the first matmul or convolution of the process runs bli_init, which builds
 *     BLIS's kernel registry (about 69 KB with Debian's BLIS 0.9) with BLIS's own malloc,
 *     kept until the process exits; BLIS's gemm takes its packing buffers from its own
 *     process-wide pools (BLIS's malloc, sized by the largest products, kept for reuse);
 *   - OpenMP: the runtime's thread pool, thread stacks and team state, made on the first
 *     parallel region of the process and kept until it exits (libgomp);
 *   - zlib: a data file's stream state, buffers and inflate window (tfl_dataset_from_idx,
 *     tfl_dataset_from_csv), freed when the loader closes the file, before it returns;
 *   - cJSON: the parsed header of a checkpoint (tfl_ckpt_open), freed before it returns;
 *   - the C library: a CSV logger callback's FILE buffer (fopen; freed when fit ends) and
 *     what libc keeps for itself (stdio, locale, thread-local state).
 * So counting hooks see every allocation that depends on the context's work; a hook that
 * fails makes tapeflow's own allocations fail (RESOURCE_EXHAUSTED), not BLIS's or libc's.
 */
typedef void *(*tfl_alloc_fn)(void *user, size_t bytes, size_t alignment);
typedef void (*tfl_free_fn)(void *user, void *ptr);

/**
 * Options for tfl_ctx_new. All-zero means defaults, so
 * `&(tfl_ctx_opts){ .log_placement = true }` reads well.
 */
typedef struct tfl_ctx_opts {
    int num_threads;        /* threads for kernels (BLIS, OpenMP); 0: OMP_NUM_THREADS or cores */
    bool strict_placement;  /* true: an unsatisfiable device scope is an error (soft placement off) */
    bool log_placement;     /* log "op <Name> on <device>" for every op (level INFO) */
    tfl_log_fn log_fn;      /* NULL: logging is off (the library never prints by itself) */
    void *log_user;         /* passed to log_fn */
    tfl_log_level log_level;/* the least severe level passed to log_fn; 0 (ERROR) if unset, */
                            /* raised to INFO when log_placement is set */
    tfl_alloc_fn alloc_fn;  /* NULL: aligned_alloc */
    tfl_free_fn free_fn;    /* NULL: free */
    void *alloc_user;       /* passed to alloc_fn and free_fn */
    uint64_t seed;          /* seed of random ops called with seed 0; 0: a fixed default */
} tfl_ctx_opts;

/** The error a context keeps: the first one since creation or the last clear. */
typedef struct tfl_error {
    tfl_status code;     /* TFL_OK when there is none */
    const char *message; /* "" when there is none; valid until the error is cleared */
} tfl_error;

/**
 * Creates a context.
 * @param opts   NULL for defaults; copied, need not outlive the call.
 * @param status optional: receives TFL_OK, or why no context could be made.
 * Returns: a new context (free with tfl_ctx_free), or NULL (RESOURCE_EXHAUSTED, or
 * INVALID_ARGUMENT for a field out of range: see tfl_ctx_opts_check, whose message also goes
 * to opts->log_fn when one is set, since no context exists to keep it).
 */
TFL_API tfl_ctx *tfl_ctx_new(const tfl_ctx_opts *opts, tfl_status *status);

/**
 * Checks options as tfl_ctx_new does, field by field: num_threads >= 0, log_level a
 * tfl_log_level, alloc_fn and free_fn both set or both NULL. NULL opts are valid.
 * @param msg  optional: receives "" or the reason, e.g. "tfl_ctx_new: opts.num_threads is
 *             -3; expected >= 0 (0: OMP_NUM_THREADS or all cores)" (truncated to size).
 * Returns: TFL_OK or TFL_INVALID_ARGUMENT.
 */
TFL_API tfl_status tfl_ctx_opts_check(const tfl_ctx_opts *opts, char *msg, size_t size);

/** Frees a context and everything it still owns (open frames included). NULL: no-op. */
TFL_API void tfl_ctx_free(tfl_ctx *ctx);

/** The code of the first error kept (TFL_OK if none). */
TFL_API tfl_status tfl_ctx_status(const tfl_ctx *ctx);
/** The first error kept: its code and message. The pointer stays valid until cleared. */
TFL_API tfl_error tfl_ctx_error(const tfl_ctx *ctx);
/** Forgets the kept error, so the next one is kept. */
TFL_API void tfl_ctx_clear_error(tfl_ctx *ctx);

/** The number of threads kernels use. */
TFL_API int tfl_ctx_num_threads(const tfl_ctx *ctx);
/** Sets the threads kernels use (>= 1). Errors: INVALID_ARGUMENT. */
TFL_API tfl_status tfl_ctx_set_num_threads(tfl_ctx *ctx, int num_threads);

/** Replaces the log sink (NULL turns logging off) and its least severe level. A level
 * outside tfl_log_level changes nothing and is kept as INVALID_ARGUMENT. */
TFL_API void tfl_ctx_set_logger(tfl_ctx *ctx, tfl_log_fn fn, void *user, tfl_log_level level);
/** Turns placement logging ("op MatMul on CPU:0") on or off. */
TFL_API void tfl_ctx_set_log_placement(tfl_ctx *ctx, bool on);
/** Turns soft placement on (the default) or off. */
TFL_API void tfl_ctx_set_soft_placement(tfl_ctx *ctx, bool on);
/**
 * Deterministic mode (off by default): kernels whose results could vary from run to run
 * (a GPU's atomic additions, convolution algorithms picked by speed) use only algorithms that
 * give the same bits on every run with the same inputs, seed and device, at some cost in
 * speed. The CPU's kernels are deterministic either way. Two runs in deterministic mode on
 * the same device and build give bitwise identical training.
 */
TFL_API void tfl_ctx_set_deterministic(tfl_ctx *ctx, bool on);
/** Whether deterministic mode is on (false for a NULL ctx). */
TFL_API bool tfl_ctx_deterministic(const tfl_ctx *ctx);

/**
 * The precision policy: how a GPU computes what the model describes in float32. Variables,
 * optimizer slots and checkpoints are float32 under every policy.
 *   FLOAT32   the default: float32 arithmetic everywhere (cuBLAS and cuDNN without tensor
 *             cores), results comparable with the CPU's to float32 rounding.
 *   TF32      matmuls and convolutions of float32 data on a GPU use TF32 tensor cores
 *             (10-bit mantissa products, float32 accumulation; cuBLAS's
 *             CUBLAS_TF32_TENSOR_OP_MATH, cuDNN's default math), as TensorFlow does by
 *             default and PyTorch with allow_tf32. The CPU has no TF32 format and computes in
 *             float32 under it, as TensorFlow does.
 *   BFLOAT16, FLOAT16  mixed precision, as torch.autocast and Keras's mixed policies: on a
 *             device other than the CPU, matmuls and convolutions cast their float32 inputs
 *             to the 16-bit dtype (products accumulated in float32) and return it; an op
 *             with a 16-bit input and float32 ones computes in 16 bits (a bias add, ReLU and
 *             its gradient); sums and means, softmax, the losses and the normalisations cast
 *             16-bit inputs to float32 and return float32. The casts are ops on the tape, so
 *             a float32 variable's gradient comes back float32 and the optimizer updates the
 *             float32 master weights. float16's range needs loss scaling
 *             (tfl_optimizer_opts.loss_scale). The CPU's ops are left in float32 (the CPU
 *             has no faster 16-bit arithmetic), as under TF32.
 */
typedef enum tfl_precision {
    TFL_PRECISION_FLOAT32,
    TFL_PRECISION_TF32,
    TFL_PRECISION_BFLOAT16,
    TFL_PRECISION_FLOAT16,
    TFL_PRECISION_COUNT
} tfl_precision;

/**
 * Sets the precision policy for the ops that follow. Errors (the policy is unchanged):
 * INVALID_ARGUMENT (not a tfl_precision).
 */
TFL_API tfl_status tfl_ctx_set_precision(tfl_ctx *ctx, tfl_precision precision);
/** The precision policy (FLOAT32 for a NULL ctx). */
TFL_API tfl_precision tfl_ctx_precision(const tfl_ctx *ctx);
/** The 16-bit dtype a mixed policy computes in: TFL_DTYPE_BFLOAT16 for BFLOAT16,
 * TFL_DTYPE_FLOAT16 for FLOAT16; TFL_DTYPE_INVALID for the others (and values outside). */
TFL_API tfl_dtype tfl_precision_half_dtype(tfl_precision precision);
/** "float32", "tf32", "bfloat16", "float16"; "?" for a value outside tfl_precision. */
TFL_API const char *tfl_precision_name(tfl_precision precision);
/**
 * Parses a policy's name (as tfl_precision_name writes it). Errors: INVALID_ARGUMENT (NULL
 * or an unknown name; *out unchanged).
 */
TFL_API tfl_status tfl_precision_parse(const char *name, tfl_precision *out);

/*
 * Frames. Every call that returns a new tensor registers it with the innermost open
 * frame, and tfl_frame_pop releases what that frame owns. With no frame open, the caller
 * owns the tensor and releases it. A training step needs no release calls:
 *
 *     tfl_frame_push(ctx);
 *     ... forward, gradient, apply ...
 *     tfl_frame_pop(ctx);
 */

/** Opens a frame. Errors: RESOURCE_EXHAUSTED. */
TFL_API tfl_status tfl_frame_push(tfl_ctx *ctx);
/** Releases every tensor the innermost frame owns, and closes it. Errors: MISUSE (none open). */
TFL_API tfl_status tfl_frame_pop(tfl_ctx *ctx);
/** How many frames are open. */
TFL_API int tfl_frame_depth(const tfl_ctx *ctx);
/**
 * Takes a reference to t that no frame owns: t survives the pops of the frames open now,
 * and the caller releases it with tfl_tensor_release. Returns t (NULL for NULL).
 */
TFL_API tfl_tensor *tfl_keep(tfl_tensor *t);

/** Counters of a device's caching allocator, for tests and monitoring. */
typedef struct tfl_alloc_stats {
    size_t bytes_in_use;      /* bytes handed to tensors and not yet given back */
    size_t bytes_cached;      /* bytes kept in the cache, ready for reuse */
    uint64_t fresh_allocs;    /* times the allocator took memory from the system */
    uint64_t cache_hits;      /* allocations served from the cache */
    uint64_t frees;           /* times memory was given back to the cache */
    uint64_t live_tensors;    /* tensor handles alive in this context (all devices) */
} tfl_alloc_stats;

/**
 * Reads the counters of a device's allocator.
 * @param device "CPU:0", "GPU:0", ...; NULL means CPU:0.
 * Errors: NOT_FOUND (no such device).
 */
TFL_API tfl_status tfl_alloc_stats_get(tfl_ctx *ctx, const char *device, tfl_alloc_stats *out);
/** Gives every cached, unused block back to the system. */
TFL_API void tfl_alloc_empty_cache(tfl_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_CONTEXT_H */
