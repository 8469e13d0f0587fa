/*
 * framework/cuda/module_entry.c: the entry of libtapeflow_cuda.so, the CUDA backend as a
 * backend module (framework/backend_module.h). libtapeflow calls it once per process, after
 * it found the CUDA driver; it checks that the module and the library come from the same
 * build and hands over the backend. Devices, streams and cuBLAS/cuDNN handles are made per
 * context by the backend's device_new, as before.
 */
#include "backend_module.h"

extern const tfl__backend tfl__cuda_backend;

__attribute__((visibility("default"))) const tfl__backend *
tfl_backend_module_v1(const tfl__module_host *host, char *why, size_t size);

const tfl__backend *tfl_backend_module_v1(const tfl__module_host *host, char *why, size_t size)
{
    return tfl__module_accept(host, why, size) ? &tfl__cuda_backend : NULL;
}
