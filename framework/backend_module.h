/*
 * framework/backend_module.h: the contract between libtapeflow and a backend module, a shared
 * object that libtapeflow loads with dlopen the first time a context needs to know its GPUs
 * (module.c). The CUDA backend is one (libtapeflow_cuda.so: framework/cuda/module_entry.c);
 * the tests build another (a fake GPU:0 on host memory: tests/common/fake_gpu_module.c).
 *
 * A module exports one symbol, TFL_BACKEND_MODULE_ENTRY, of type tfl__module_entry_fn. The
 * library calls it once per process with the host table below and gets the module's
 * tfl__backend (or NULL and a reason). A module never links libtapeflow: every framework
 * function it calls comes from the host table, so the same module serves the shared library
 * and a static one linked into a program. Module and library must come from the same build
 * (they share the private structs of internal.h): the table carries the version and the sizes
 * of those structs, and a module refuses a table that differs.
 */
#ifndef TFL_BACKEND_MODULE_H
#define TFL_BACKEND_MODULE_H

#include "internal.h"
#include "ops/op.h"

#include <stdarg.h>

/* Bumped when the table below changes shape. */
#define TFL_BACKEND_MODULE_ABI 1
#define TFL_BACKEND_MODULE_ENTRY "tfl_backend_module_v1"

/*
 * The framework functions a module may call, as X(return type, name, (parameters),
 * (arguments)), or V(name, (parameters), (arguments)) for those returning void. module.c fills the table from this list; a module's shim
 * (module_shim.h) defines each name as a call through the table, so the module's sources
 * call them as the framework's own code does. tfl__set_error and tfl__log, which are
 * variadic, go through set_errorv and logv.
 */
#define TFL__MODULE_HOST_FUNCS(X, V)                                                                  \
    X(tfl_status, tfl__set_errorv, (tfl_ctx * ctx, tfl_status code, const char *fmt, va_list ap), \
      (ctx, code, fmt, ap))                                                                        \
    V(tfl__logv, (tfl_ctx * ctx, tfl_log_level level, const char *fmt, va_list ap),         \
      (ctx, level, fmt, ap))                                                                       \
    X(void *, tfl__host_alloc, (tfl_ctx * ctx, size_t bytes, size_t align), (ctx, bytes, align))   \
    V(tfl__host_free, (tfl_ctx * ctx, void *ptr), (ctx, ptr))                                \
    X(void *, tfl__allocator_get, (tfl__allocator * a, size_t bytes, size_t *got), (a, bytes, got)) \
    V(tfl__allocator_put, (tfl__allocator * a, void *ptr, size_t got), (a, ptr, got))        \
    X(tfl_status, tfl__dev_copy_host,                                                              \
      (tfl__device * dev, void *dst, const void *src, size_t bytes, int to_host),                  \
      (dev, dst, src, bytes, to_host))                                                             \
    X(tfl_status, tfl__dev_memset,                                                                 \
      (tfl__device * dev, tfl__stream * stream, void *dst, int value, size_t bytes),              \
      (dev, stream, dst, value, bytes))                                                            \
    X(tfl_tensor *, tfl__tensor_alloc,                                                             \
      (tfl_ctx * ctx, tfl__device * dev, tfl_dtype dtype, int rank, const int64_t *shape),        \
      (ctx, dev, dtype, rank, shape))                                                              \
    X(int64_t, tfl__numel, (int rank, const int64_t *shape), (rank, shape))                        \
    X(uint16_t, tfl__f32_to_f16, (float f), (f))                                                   \
    X(uint16_t, tfl__f32_to_bf16, (float f), (f))                                                  \
    X(tfl_status, tfl__sparse_label_error,                                                         \
      (tfl_ctx * ctx, const tfl_tensor *labels, int64_t index, int64_t v, int64_t classes),       \
      (ctx, labels, index, v, classes))                                                            \
    X(const char *, tfl_dtype_name, (tfl_dtype dtype), (dtype))                                    \
    X(size_t, tfl_dtype_size, (tfl_dtype dtype), (dtype))                                          \
    V(tfl_tensor_release, (tfl_tensor * t), (t))                                             \
    X(bool, tfl_ctx_deterministic, (const tfl_ctx *ctx), (ctx))                                  \
    X(tfl_precision, tfl_ctx_precision, (const tfl_ctx *ctx), (ctx))                             \
    X(const char *, tfl__op_name, (tfl__op_id op), (op))

typedef struct tfl__module_host {
    int abi;                       /* TFL_BACKEND_MODULE_ABI */
    int device_ops_version;        /* TFL_DEVICE_OPS_VERSION */
    size_t size;                   /* sizeof(tfl__module_host) */
    size_t ctx_size, device_size, tensor_size, allocator_size; /* the shared structs' sizes */
    const char *version;           /* TFL_VERSION_STRING of the library */
    const tfl__backend *cpu;       /* the CPU backend (a fake device may reuse its kernels) */
#define TFL__MODULE_HOST_FIELD(ret, name, params, args) ret(*name) params;
#define TFL__MODULE_HOST_FIELD_V(name, params, args) void(*name) params;
    TFL__MODULE_HOST_FUNCS(TFL__MODULE_HOST_FIELD, TFL__MODULE_HOST_FIELD_V)
#undef TFL__MODULE_HOST_FIELD
#undef TFL__MODULE_HOST_FIELD_V
} tfl__module_host;

/* The module's entry: called once per process. Returns the module's backend, whose version
 * and type_name the library checks, or NULL with a one-line reason in why[0..size). The host
 * table outlives every call into the module. */
typedef const tfl__backend *(*tfl__module_entry_fn)(const tfl__module_host *host, char *why,
                                                    size_t size);

/* In a module (backend_module_shim.c): checks the host table against the module's own build
 * and keeps it for the shim; false with a reason when they differ. The module's entry calls
 * it first. */
bool tfl__module_accept(const tfl__module_host *host, char *why, size_t size);

/* The sizes of the structs a module shares with the library, for the host table. */
#define TFL__MODULE_STRUCT_SIZES                                                                   \
    sizeof(tfl__module_host), sizeof(tfl_ctx), sizeof(tfl__device), sizeof(tfl_tensor),          \
        sizeof(tfl__allocator)

#endif /* TFL_BACKEND_MODULE_H */
