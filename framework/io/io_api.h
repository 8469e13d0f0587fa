/*
 * framework/io/io_api.h: what framework/io declares for the modules above it: CRC-32C
 * (crc32c.h) and the protobuf wire-format pieces (pb.h) of the TFRecord framing and Event
 * records that events.c writes, for the event-file reader (configs/events_read.c). Both are
 * self-contained (libc only). The rest of io/ is reached through the public headers
 * (<tapeflow/checkpoint.h>, <tapeflow/summary.h>). Never installed.
 */
#ifndef TFL_IO_API_H
#define TFL_IO_API_H

#include "crc32c.h"
#include "pb.h"

#endif /* TFL_IO_API_H */
