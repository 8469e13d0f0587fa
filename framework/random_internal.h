/*
 * framework/random_internal.h: the Philox4x32-10 block function, by the name the files of
 * framework/cuda include it (k_shape.cu); it is core_api/philox.h, part of the core's
 * declared API. Never installed.
 */
#ifndef TFL_RANDOM_INTERNAL_H
#define TFL_RANDOM_INTERNAL_H

#include "core_api/philox.h"

#endif /* TFL_RANDOM_INTERNAL_H */
