/*
 * framework/backends.c: the registration list of device backends. tfl_ctx_new (device.c)
 * creates the devices of each, in this order; the CPU comes first and always has CPU:0. A
 * backend plugs in by defining its tfl__backend in its own folder and adding one line here
 * under its build switch (internal.h, "A backend", says what it must define). This is the
 * only file outside a backend's folder that names a backend.
 */
#include "internal.h"

#include <tapeflow/version.h> /* TFL_HAVE_CUDA */

extern const tfl__backend tfl__cpu_backend;
#if defined(TFL_HAVE_CUDA) && TFL_HAVE_CUDA
extern const tfl__backend tfl__cuda_backend;
#endif

const tfl__backend *const tfl__backends[] = {
    &tfl__cpu_backend,
#if defined(TFL_HAVE_CUDA) && TFL_HAVE_CUDA
    &tfl__cuda_backend,
#endif
};
const int tfl__n_backends = (int)(sizeof tfl__backends / sizeof tfl__backends[0]);
