/*
 * framework/core_api/core_api.h: what the framework's core declares for its sub-modules
 * (framework/io): errors and logging, host memory, handle records, overflow-checked sizes,
 * half-precision conversions, and tensors and variables seen only through functions. No
 * record of the core (context, tensor, storage, device) is defined here, so a file that
 * includes only this header (and the public ones) cannot reach into one. internal.h includes
 * it: for the core and the modules above, it is part of their private API. Never installed.
 *
 * This folder holds the core's declared APIs alone, so that a target can have them on its
 * include path without the rest of framework/ (tfl_io, framework/io/CMakeLists.txt; tfl_dist,
 * framework/dist/CMakeLists.txt).
 */
#ifndef TFL_FRAMEWORK_CORE_API_H
#define TFL_FRAMEWORK_CORE_API_H

#include <tapeflow/base.h>
#include <tapeflow/context.h>
#include <tapeflow/tensor.h>
#include <tapeflow/variable.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TFL_MSG_SIZE 512 /* bytes of the kept error message */

#if defined(__GNUC__)
#define TFL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TFL_LIKELY(x) __builtin_expect(!!(x), 1)
#define TFL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TFL_PRINTF(f, a)
#define TFL_LIKELY(x) (x)
#define TFL_UNLIKELY(x) (x)
#endif

/* ---- errors and logging (base.c) --------------------------------------------------------- */

/** Keeps (code, message) when no error is kept yet; logs it at ERROR. Returns code. */
tfl_status tfl__set_error(tfl_ctx *ctx, tfl_status code, const char *fmt, ...) TFL_PRINTF(3, 4);
tfl_status tfl__set_errorv(tfl_ctx *ctx, tfl_status code, const char *fmt, va_list ap);
void tfl__log(tfl_ctx *ctx, tfl_log_level level, const char *fmt, ...) TFL_PRINTF(3, 4);
void tfl__logv(tfl_ctx *ctx, tfl_log_level level, const char *fmt, va_list ap);

/** Validates an input: records the error and returns `ret` from the caller when cond fails. */
#define TFL_CHECK_RET(ctx, cond, ret, code, ...)            \
    do {                                                    \
        if (TFL_UNLIKELY(!(cond))) {                        \
            tfl__set_error((ctx), (code), __VA_ARGS__);     \
            return ret;                                     \
        }                                                   \
    } while (0)
#define TFL_CHECK(ctx, cond, code, ...) TFL_CHECK_RET(ctx, cond, (code), code, __VA_ARGS__)
/** Propagates a non-OK status. */
#define TFL_TRY(expr)                                       \
    do {                                                    \
        tfl_status tfl_try_st_ = (expr);                    \
        if (TFL_UNLIKELY(tfl_try_st_ != TFL_OK)) return tfl_try_st_; \
    } while (0)

/* ---- host memory (base.c) ---------------------------------------------------------------- */

/** Host memory through the ctx's hooks; aligned to `align` (power of two). NULL on failure. */
void *tfl__host_alloc(tfl_ctx *ctx, size_t bytes, size_t align);
void tfl__host_free(tfl_ctx *ctx, void *ptr);
/** A zeroed host object (sizeof <= some KB), recorded as RESOURCE_EXHAUSTED on failure. */
void *tfl__calloc(tfl_ctx *ctx, size_t bytes);
/** Grows a host array: a copy of old_bytes in a new block of new_bytes, old freed; NULL on
 * failure (old kept, no error recorded). */
void *tfl__grow(tfl_ctx *ctx, void *old, size_t old_bytes, size_t new_bytes);
/** A host copy of s (through the hooks); NULL with RESOURCE_EXHAUSTED recorded. */
char *tfl__strdup(tfl_ctx *ctx, const char *s);

/* ---- handle records (handles.c) ---------------------------------------------------------- */

/**
 * An object of a module above the framework (an optimizer, a dataset) that its context frees
 * when the caller has not: the module embeds it, links it when the object is made and
 * unlinks it in its own free function, which tfl_ctx_free calls for those still linked.
 */
typedef struct tfl__ctx_obj {
    uint32_t magic;  /* the kind's TFL__MAGIC_* while alive, TFL__MAGIC_DEAD once freed */
    uint32_t kind;   /* the kind's TFL__MAGIC_*, kept when dead: a dead record is reused
                        only for a new handle of its kind (same size) */
    struct tfl__ctx_obj *prev, *next;
    void (*free)(struct tfl__ctx_obj *obj); /* the module's free (it unlinks the object) */
} tfl__ctx_obj;

/*
 * Handle liveness. A module's handle (tape, optimizer, model, layer, dataset) embeds a
 * tfl__ctx_obj first and comes from tfl__obj_new; its free function ends with
 * tfl__obj_retire, which poisons the magic and keeps the record in the ctx's pool of dead
 * records (never given back to the allocator before tfl_ctx_free), so that a second free or a
 * later call reads valid memory and is reported as MISUSE by tfl__obj_check. A dead record is
 * reused, zeroed, by a later tfl__obj_new of the same kind, oldest first, once 32 of that kind
 * are dead (a stale handle stays dead across 31 later creations of its kind). Every such handle
 * has its tfl_ctx *ctx right after the header (read from a dead record for the error).
 */
#define TFL__MAGIC_DEAD 0x64656164u      /* "dead" */
#define TFL__MAGIC_TAPE 0x74617065u      /* "tape" */
#define TFL__MAGIC_OPTIMIZER 0x6f707469u /* "opti" */
#define TFL__MAGIC_MODEL 0x6d6f646cu     /* "modl" */
#define TFL__MAGIC_LAYER 0x6c617972u     /* "layr" */
#define TFL__MAGIC_DATASET 0x64617461u   /* "data" */
#define TFL__MAGIC_CONFIG 0x636f6e66u    /* "conf" */
#define TFL__MAGIC_CKPT 0x636b7074u      /* "ckpt": a checkpoint reader */
#define TFL__MAGIC_CKPT_MANAGER 0x636b6d67u /* "ckmg" */
#define TFL__MAGIC_SUMMARY 0x73756d6du   /* "summ": a summary writer */
#define TFL__MAGIC_EVREADER 0x65767264u  /* "evrd": an event file reader */
#define TFL__MAGIC_CURVES 0x63757276u    /* "curv": curves to plot */
#define TFL__MAGIC_COMM 0x636f6d6du      /* "comm": a communicator (dist/) */
#define TFL__MAGIC_RUN 0x72756e21u       /* "run!": a training run (configs/run.c) */

/** A zeroed record of `size` bytes whose first member is a tfl__ctx_obj, alive with `magic`:
 * the oldest dead record of that kind when the ctx has one, else new memory. Linked to the ctx (freed
 * by tfl_ctx_free) when free_fn is not NULL. NULL with RESOURCE_EXHAUSTED kept. */
void *tfl__obj_new(tfl_ctx *ctx, size_t size, uint32_t magic, void (*free_fn)(tfl__ctx_obj *));
/** Ends a record's life: unlinks it, poisons its magic and keeps it in the ctx's pool. Only
 * the tfl__ctx_obj header is touched: the module's fields (its ctx pointer) stay readable. */
void tfl__obj_retire(tfl_ctx *ctx, tfl__ctx_obj *o);
/** True when o is alive with `magic`; otherwise records MISUSE in ctx: "<what>: <kind>
 * already freed (double free or use after free)" for a dead record, "<what>: not a <kind>
 * handle" for another magic. */
bool tfl__obj_check(tfl_ctx *ctx, const tfl__ctx_obj *o, uint32_t magic, const char *what);

/* ---- sizes and shapes (shape.c) ---------------------------------------------------------- */

/*
 * Overflow-checked arithmetic. Every shape, size, count and offset a caller can influence
 * goes through these (never a bare `*` or `+` on caller values), so no product wraps.
 */
/** a * b into *out; true when it overflows int64 (then *out is unspecified). */
static inline bool tfl__mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
/** a + b into *out; true when it overflows int64. */
static inline bool tfl__add_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}
/** The most bytes one tensor may hold (larger is INVALID_ARGUMENT, never attempted). */
#define TFL_MAX_TENSOR_BYTES ((int64_t)PTRDIFF_MAX)
/** Python-style "(2, 3)", "(4,)", "()"; returns buf. */
char *tfl__shape_str(int rank, const int64_t *shape, char *buf, size_t size);
/** Equal ranks and dimensions (a and b may be NULL for rank 0). */
bool tfl__same_shape(int ra, const int64_t *a, int rb, const int64_t *b);

/* ---- dtypes (dtype.c) -------------------------------------------------------------------- */

float tfl__f16_to_f32(uint16_t h);
uint16_t tfl__f32_to_f16(float f);
float tfl__bf16_to_f32(uint16_t h);
uint16_t tfl__f32_to_bf16(float f);

/* ---- tensors and variables through functions (tensor.c, variable.c, core_api.c) ---------- */

/** Records MISUSE in t's ctx: "<what>: tensor already released (double release or use after
 * release)". Returns false. */
bool tfl__tensor_dead(const tfl_tensor *t, const char *what);
/** True for a live tensor (a released one is a dead record in its ctx's pool); records
 * nothing. */
bool tfl__tensor_is_live(const tfl_tensor *t);
/** tfl__tensor_is_live, with MISUSE recorded as tfl__tensor_dead does when it is not (what
 * internal.h's inline tfl__tensor_alive does, for files that do not see the record). */
bool tfl__tensor_check_alive(const tfl_tensor *t, const char *what);
/** FAILED_PRECONDITION "<what>: Attempting to use uninitialized value <name>" unless t is
 * readable (not an uninitialized variable). */
bool tfl__check_readable(tfl_ctx *ctx, const char *what, const tfl_tensor *t);
/** True when t's device's memory is host memory (the CPU): its data may be read and written
 * directly, at tfl__tensor_host_data. */
bool tfl__tensor_on_host(const tfl_tensor *t);
/** The address of t's first element when tfl__tensor_on_host(t); NULL for any other device. */
void *tfl__tensor_host_data(const tfl_tensor *t);
/** Copies n bytes at byte `offset` of a contiguous tensor on any device to the host
 * (synchronous). Errors are the device's, kept in t's ctx. */
tfl_status tfl__tensor_read_bytes(const tfl_tensor *t, int64_t offset, void *dst, size_t n);
/** A contiguous copy of t on t's device, owned by the innermost frame. NULL with the error
 * kept. */
tfl_tensor *tfl__tensor_contiguous(tfl_ctx *ctx, const tfl_tensor *t);
/** A new contiguous tensor on CPU:0 with uninitialised data (tfl__tensor_host_data gives it),
 * owned by no frame: the caller releases it. NULL with the error kept. */
tfl_tensor *tfl__tensor_new_host(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape);
/** Registers a new reference with the innermost frame, if any. Returns t. */
tfl_tensor *tfl__frame_adopt(tfl_ctx *ctx, tfl_tensor *t);
/** Gives v storage of its own (copy-on-write when a snapshot shares it) so that a kernel can
 * write v's data in place. Errors: RESOURCE_EXHAUSTED (v unchanged). */
tfl_status tfl__variable_own(tfl_tensor *v);

#endif /* TFL_FRAMEWORK_CORE_API_H */
