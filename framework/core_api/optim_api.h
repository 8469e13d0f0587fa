/*
 * framework/core_api/optim_api.h: what the framework's core declares for optim/ on top of
 * module_api.h: the fused optimizer kernels each device carries (opt_kernels.h, with the
 * element functions of opt_elems.h) and scratch memory from a device's caching allocator
 * (the sums of squares of clipping by norm). Never installed.
 */
#ifndef TFL_FRAMEWORK_OPTIM_API_H
#define TFL_FRAMEWORK_OPTIM_API_H

#include "module_api.h"
#include "opt_kernels.h"

/** The optimizer kernels of a device (its backend's table); NULL when it has none. */
const tfl__opt_kernels *tfl__dev_opt_kernels(const tfl__device *dev);
/** A block of >= bytes of dev's memory from its caching allocator (*got: its usable size);
 * NULL with RESOURCE_EXHAUSTED kept. Give it back with tfl__dev_scratch_put. */
void *tfl__dev_scratch_get(tfl__device *dev, size_t bytes, size_t *got);
void tfl__dev_scratch_put(tfl__device *dev, void *ptr, size_t got);

#endif /* TFL_FRAMEWORK_OPTIM_API_H */
