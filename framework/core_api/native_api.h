/*
 * framework/core_api/native_api.h: what the framework's core declares for framework/dist on
 * top of module_api.h: a device's vendor handles, for a library that drives the device itself
 * (NCCL): its device number, making it current on the calling thread, and a stream's native
 * handle. They stand for the device table's native slots (internal.h), which framework/dist
 * never sees. Never installed.
 */
#ifndef TFL_FRAMEWORK_NATIVE_API_H
#define TFL_FRAMEWORK_NATIVE_API_H

#include "module_api.h"

/** The vendor's number of dev (CUDA's device ordinal) when dev gives its vendor handles (its
 * table has the native_ordinal and native_stream slots); -1 otherwise (the CPU). */
int tfl__dev_native_ordinal(const tfl__device *dev);
/** Makes dev current on the calling thread (cudaSetDevice): TFL_OK for a device without that
 * notion; the backend's error (INTERNAL) kept in dev's ctx on failure. */
tfl_status tfl__dev_make_current(tfl__device *dev);
/** The native handle of a stream of dev (a cudaStream_t as a void *; a NULL stream: the
 * device's own), or NULL when dev gives no vendor handles. */
void *tfl__dev_native_stream(tfl__device *dev, tfl__stream *stream);

#endif /* TFL_FRAMEWORK_NATIVE_API_H */
