/*
 * framework/backends.c: the registration list of device backends. tfl_ctx_new (device.c)
 * creates the devices of each eager backend, in this order; the CPU comes first and always
 * has CPU:0. The GPU backend is a module loaded on demand (module.c): its entry here is the
 * lazy loader, asked only when a context first needs to know its GPUs. A backend built into
 * the library plugs in by defining its tfl__backend in its own folder and adding one line
 * here (internal.h, "A backend", says what it must define). This is the only file outside a
 * backend's folder that names a backend.
 */
#include "internal.h"

extern const tfl__backend tfl__cpu_backend;

const tfl__backend *const tfl__backends[] = {
    &tfl__cpu_backend,
    &tfl__gpu_module_backend,
};
const int tfl__n_backends = (int)(sizeof tfl__backends / sizeof tfl__backends[0]);
