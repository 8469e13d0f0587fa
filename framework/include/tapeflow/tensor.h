/*
 * tapeflow/tensor.h: tensors are immutable values with a dtype, a shape (rank 0..8), a
 * device and refcounted storage seen through a view (offset and strides), so reshape,
 * transpose and slice are cheap. Every function returning a tensor returns a new
 * reference owned by the innermost open frame, or by the caller when none is open.
 */
#ifndef TAPEFLOW_TENSOR_H
#define TAPEFLOW_TENSOR_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Makes a tensor from host data, copied in (the caller keeps `data`).
 * @param shape  `rank` dimensions, each >= 0; may be NULL when rank is 0.
 * @param data   numel * tfl_dtype_size(dtype) bytes in row-major order; NULL gives zeros.
 * Placed on the device of the current device scope (CPU:0 when there is none).
 * Returns: a new tensor, or NULL. Errors: INVALID_ARGUMENT (rank, negative dimension, dtype,
 * a shape with more than INT64_MAX elements, counting zero dimensions as one, or more than
 * PTRDIFF_MAX bytes: every tensor the library makes, op outputs included, is held to this),
 * RESOURCE_EXHAUSTED.
 */
TFL_API tfl_tensor *tfl_tensor_new(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                                   const void *data);

/** Scalars (rank 0), for the common cases. */
TFL_API tfl_tensor *tfl_scalar_f32(tfl_ctx *ctx, float value);
TFL_API tfl_tensor *tfl_scalar_f64(tfl_ctx *ctx, double value);
TFL_API tfl_tensor *tfl_scalar_i32(tfl_ctx *ctx, int32_t value);
TFL_API tfl_tensor *tfl_scalar_i64(tfl_ctx *ctx, int64_t value);
TFL_API tfl_tensor *tfl_scalar_bool(tfl_ctx *ctx, bool value);

/**
 * A tensor of `shape` filled with `value` converted to `dtype` (for complex dtypes the
 * real part). Errors as tfl_tensor_new.
 */
TFL_API tfl_tensor *tfl_fill(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                             double value);
TFL_API tfl_tensor *tfl_zeros(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape);
TFL_API tfl_tensor *tfl_ones(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape);
/** Zeros / ones with the dtype and shape of t. */
TFL_API tfl_tensor *tfl_zeros_like(tfl_ctx *ctx, const tfl_tensor *t);
TFL_API tfl_tensor *tfl_ones_like(tfl_ctx *ctx, const tfl_tensor *t);
/** [start, start + delta, ...) below limit, like tf.range; dtype int32, int64, float32 or float64.
 * Errors: INVALID_ARGUMENT naming the values (non-finite or zero delta, start or limit not
 * representable in dtype, more than 2^62 elements or a byte count past PTRDIFF_MAX). */
TFL_API tfl_tensor *tfl_range(tfl_ctx *ctx, tfl_dtype dtype, double start, double limit,
                              double delta);

/** Adds a reference. Returns t. NULL: no-op. */
TFL_API tfl_tensor *tfl_tensor_retain(tfl_tensor *t);
/** Drops a reference; the last one frees the tensor (its storage when no view shares it).
 * A tensor already released: MISUSE kept in its context, nothing freed (base.h). */
TFL_API void tfl_tensor_release(tfl_tensor *t);

/*
 * Properties (they never fail). Pointers are borrowed from t. A NULL t has no context to
 * report to and gives NULL, TFL_DTYPE_INVALID, -1 (rank, dim, numel) or false. A released t
 * records MISUSE in its context and gives the same neutral values, except tfl_tensor_ctx,
 * which still gives the context to read that error from (base.h).
 */
TFL_API tfl_ctx *tfl_tensor_ctx(const tfl_tensor *t);
TFL_API tfl_dtype tfl_tensor_dtype(const tfl_tensor *t);
TFL_API int tfl_tensor_rank(const tfl_tensor *t);
/** The dimensions (rank of them), borrowed. */
TFL_API const int64_t *tfl_tensor_shape(const tfl_tensor *t);
/** Dimension i; a negative i counts from the end. Returns -1 when i is out of range. */
TFL_API int64_t tfl_tensor_dim(const tfl_tensor *t, int i);
TFL_API int64_t tfl_tensor_numel(const tfl_tensor *t);
/** The name of the device holding t ("CPU:0"), borrowed. */
TFL_API const char *tfl_tensor_device(const tfl_tensor *t);
/** True when the elements are laid out row-major with no gaps. */
TFL_API bool tfl_tensor_is_contiguous(const tfl_tensor *t);
/** The address of element 0 on its device, for identity checks (same storage, same view). */
TFL_API const void *tfl_tensor_data_ptr(const tfl_tensor *t);

/**
 * Copies t's elements out, row-major, into `dst` of `bytes` bytes (numel * dtype size).
 * Errors: INVALID_ARGUMENT (NULL, size mismatch).
 */
TFL_API tfl_status tfl_tensor_to_host(const tfl_tensor *t, void *dst, size_t bytes);

/**
 * Reads element `index` (row-major flat index) converted to double (complex: real part),
 * on any device (an element of a GPU tensor is copied to the host, which waits for the work
 * queued before it). For tests and examples; slow. Errors: OUT_OF_RANGE.
 */
TFL_API tfl_status tfl_tensor_get(const tfl_tensor *t, int64_t index, double *out);

/** A copy of t on the named device ("CPU:0", "GPU:0"). Errors: NOT_FOUND. */
TFL_API tfl_tensor *tfl_tensor_to_device(tfl_ctx *ctx, const tfl_tensor *t, const char *device);

/** Options for tfl_tensor_format; all-zero means defaults. */
typedef struct tfl_format_opts {
    int precision;       /* significant digits of floats; 0: 6 */
    int64_t threshold;   /* summarise (with "...") above this many elements; 0: 1000 */
    int64_t edge_items;  /* items shown at each end of a summarised axis; 0: 3 */
} tfl_format_opts;

/**
 * Writes a readable repr such as
 * `<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>` into buf
 * (always NUL-terminated when size > 0), like snprintf.
 * Returns: the length the full text has (>= size means it was cut), or -1 for NULL t or
 * options out of range (precision in 0..40, threshold and edge_items >= 0: a negative one is
 * an error, not the default; INVALID_ARGUMENT naming the field is kept in t's context).
 * On -1 a buf of size > 0 holds the empty string.
 */
TFL_API int tfl_tensor_format(const tfl_tensor *t, char *buf, size_t size,
                              const tfl_format_opts *opts);

/** Only the values part of the repr (`[[1, 2], [3, 4]]`), with the same contract. */
TFL_API int tfl_tensor_format_values(const tfl_tensor *t, char *buf, size_t size,
                                     const tfl_format_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_TENSOR_H */
