/*
 * tapeflow/device.h: devices ("CPU:0" always; "GPU:N" when built with CUDA and a GPU is
 * present) and placement. An op runs on the device of the innermost device scope or, with
 * none, on the fastest device with a kernel for its dtype (GPU first); inputs living
 * elsewhere are copied. With soft placement (the default) a scope naming a device that
 * cannot run the op falls back to the CPU; with it off that is an error.
 */
#ifndef TAPEFLOW_DEVICE_H
#define TAPEFLOW_DEVICE_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How many devices the context has (at least 1: CPU:0). */
TFL_API int tfl_device_count(const tfl_ctx *ctx);
/** The name of device i ("CPU:0"), borrowed; NULL when i is out of range. */
TFL_API const char *tfl_device_name(const tfl_ctx *ctx, int i);
/**
 * One line describing device i into buf (always NUL-terminated when size > 0), like
 * snprintf: its name, what its backend says of it and its memory when the backend knows it:
 * "CPU:0: host memory, 2 threads", "GPU:0: NVIDIA H100 80GB HBM3, compute capability 9.0,
 * 79.2 GiB (78.6 GiB free)". Returns the length of the full text, or -1 (buf "") for a NULL
 * ctx or i out of range.
 */
TFL_API int tfl_device_describe(const tfl_ctx *ctx, int i, char *buf, size_t size);
/**
 * Why the context has no device of a kind this build can use, into buf (NUL-terminated when
 * size > 0), e.g. "no GPU device: no CUDA driver: libcuda.so.1: cannot open shared object
 * file: No such file or directory". Returns the length of the full text, or 0 (buf "") when
 * there is nothing to say: the GPUs were found, or the build has no GPU backend.
 *
 * The device queries (this one, tfl_device_count, tfl_device_name, tfl_device_describe), a
 * GPU scope or device name, and automatic placement are what make a context look for its
 * GPUs, the first time, loading the GPU backend then: a program that never asks loads no GPU
 * library. When none is usable the context logs the same line (INFO when there is no
 * driver, WARNING when a driver is there but the backend or its libraries failed to load).
 */
TFL_API int tfl_device_note(tfl_ctx *ctx, char *buf, size_t size);

/**
 * Parses a device's name, the one parser of every place that reads one (device scopes,
 * placement, training.device, the rank rule of data parallelism): "CPU:0", "GPU:1", the
 * type alone ("GPU"), TensorFlow's "/device:GPU:0", "/GPU:0" and its full
 * "/job:localhost/replica:0/task:0/device:CPU:0", in any case. The type must be one of the
 * backends this library has (CPU, and GPU in every build: its module may still be absent at
 * run time). "auto" is no device name: placement keywords are the callers'.
 * @param type   receives the type in upper case ("GPU"), NUL-terminated (size >= 4 suffices)
 * @param index  receives N, or -1 when the name gives no index
 * Returns TFL_OK, TFL_INVALID_ARGUMENT (not a device name; type and index unchanged) or
 * TFL_OUT_OF_RANGE (an index above 7: a context has at most 8 GPUs). Keeps no error (it has
 * no context): callers word their own.
 */
TFL_API tfl_status tfl_device_parse(const char *name, char *type, size_t type_size, int *index);

/**
 * Opens a device scope: ops and new tensors go to `device` until the matching pop.
 * Accepts "CPU:0", "GPU:1", TensorFlow's "/device:GPU:0", "/GPU:0", and lower case.
 * A device that does not exist is accepted here (it is decided per op by placement).
 * Errors: INVALID_ARGUMENT (not a device name, or an index N of "GPU:N" above 7: a context
 * has at most 8 GPUs), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_device_scope_push(tfl_ctx *ctx, const char *device);
/** Closes the innermost device scope. Errors: MISUSE (none open). */
TFL_API tfl_status tfl_device_scope_pop(tfl_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_DEVICE_H */
