/*
 * framework/io/io_internal.h: everything io/ takes from the rest of tapeflow: the public
 * headers it implements or calls, and the framework core's declared API for its sub-modules
 * (core_api.h: errors, logging, host memory, handle records, tensors through functions).
 * io/ includes no other private header of the framework (the tfl_io target has only
 * framework/core_api on its include path, and tests/layering/check_layering.sh checks it);
 * the core includes none of io/. Never installed.
 */
#ifndef TFL_IO_INTERNAL_H
#define TFL_IO_INTERNAL_H

#include "core_api.h"

#include <tapeflow/checkpoint.h>
#include <tapeflow/files.h>
#include <tapeflow/summary.h>

#endif /* TFL_IO_INTERNAL_H */
