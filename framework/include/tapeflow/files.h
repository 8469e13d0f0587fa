/*
 * tapeflow/files.h: the two file operations every writer of tapeflow shares: a durable atomic
 * write (what a crash leaves is the old file or the new one, never a mix) and `mkdir -p`.
 * Checkpoints, plots, a run's config.yaml and metrics go through them; an application's own
 * files can too.
 */
#ifndef TAPEFLOW_FILES_H
#define TAPEFLOW_FILES_H

#include <tapeflow/base.h>
#include <tapeflow/context.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes len bytes to path atomically and durably: a temporary file beside it
 * (".<name>.tmp.<pid>.<n>", created exclusively), every byte written, fsync, close, rename over
 * path, fsync of the directory. On error the temporary file is removed and path is unchanged.
 * Errors: INVALID_ARGUMENT (NULL path or data with len > 0, a path naming a directory),
 * FAILED_PRECONDITION naming the file and the system's reason.
 */
TFL_API tfl_status tfl_file_write_atomic(tfl_ctx *ctx, const char *path, const void *data,
                                         size_t len);

/**
 * Makes the directory path and every missing directory above it (`mkdir -p`; mode 0777 less
 * the umask); directories that exist are fine. Errors: INVALID_ARGUMENT (NULL or empty path),
 * FAILED_PRECONDITION naming path and the component that could not be made or is not a
 * directory.
 */
TFL_API tfl_status tfl_make_dirs(tfl_ctx *ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_FILES_H */
