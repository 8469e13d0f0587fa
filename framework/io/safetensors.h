/*
 * framework/io/safetensors.h: the private side of <tapeflow/checkpoint.h>: the reader's
 * record, the dtype table, the streaming writer and the atomic, durable file writer that
 * checkpoint.c and ckpt_manager.c share. Never installed.
 */
#ifndef TFL_IO_SAFETENSORS_H
#define TFL_IO_SAFETENSORS_H

#include "io_internal.h"

#include <tapeflow/checkpoint.h>

#define TFL__ST_MAX_RANK (TFL_MAX_RANK + 1) /* a complex128 of rank 8 has a file rank of 9 */
#define TFL__ST_MAX_HEADER 100000000        /* header lengths from here on are refused */
#define TFL__ST_CHUNK (1u << 20)            /* the bounce buffer of streamed copies */
#define TFL__ST_FORMAT_VERSION "1"
#define TFL__ST_KEY_VERSION "tapeflow.format_version"
#define TFL__ST_KEY_CRC "tapeflow.crc32c/"
#define TFL__ST_KEY_DTYPE "tapeflow.dtype/"
#define TFL__ST_RESERVED "tapeflow."

/** A safetensors dtype: its name, bits per element and tapeflow's dtype (INVALID: none). */
typedef struct tfl__st_dtype {
    const char *name;
    int bits;
    tfl_dtype dtype;
} tfl__st_dtype;
extern const tfl__st_dtype tfl__st_dtypes[];
extern const int tfl__st_n_dtypes;
/** The table index of tapeflow's dtype (complex128: F64's), or -1. */
int tfl__st_dtype_of(tfl_dtype dtype);

/** One tensor of an open file. */
typedef struct tfl__st_entry {
    char *name;
    int dt;   /* index into tfl__st_dtypes */
    int rank; /* as in the file */
    int64_t shape[TFL__ST_MAX_RANK];
    int64_t begin, end; /* relative to the first data byte */
    bool has_crc;
    uint32_t crc;
    bool complex128; /* F64 (..., 2) read as complex128 */
} tfl__st_entry;

struct tfl_ckpt {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    int fd; /* -1 for memory */
    const uint8_t *mem;
    int64_t size; /* of the file */
    char *path;
    int64_t data_start; /* 8 + header length */
    tfl__st_entry *e;   /* sorted by begin */
    int64_t n;
    tfl__st_entry **by_name; /* the entries sorted by name */
    char **meta_k, **meta_v;
    int64_t n_meta;
};

/** Reads [off, off + n) of the file (absolute offsets). DATA_LOSS when it is short. */
tfl_status tfl__st_pread(tfl_ckpt *ck, int64_t off, void *dst, size_t n);

/** Fills buf with n bytes of an item starting at `offset` (within the item). */
typedef tfl_status (*tfl__st_src_fn)(void *user, int64_t item, int64_t offset, void *buf, size_t n);

/** One tensor to write. */
typedef struct tfl__st_item {
    const char *name;
    int dt;
    int rank; /* as in the file */
    int64_t shape[TFL__ST_MAX_RANK];
    int64_t bytes;
    uint32_t crc; /* of the bytes, known before writing */
    bool complex128;
    const void *ptr; /* the bytes in host memory, or NULL: src */
    tfl__st_src_fn src;
    void *user;
    int64_t src_item;
    bool check_crc;   /* compare the crc of what src gives with crc */
    bool compute_crc; /* crc is computed while the bytes are written */
    tfl_dtype finite; /* != INVALID: refuse a NaN or Inf of this dtype */
} tfl__st_item;

/**
 * Writes a safetensors file atomically and durably (see checkpoint.h) in one pass over the
 * data: the header goes first with the CRCs of compute_crc items as zeros (fixed width), then
 * each item's bytes in 1 MiB pieces, each checked (finite), CRC'd and written while it is in
 * cache, then the header again at its place with the CRCs. Sorts `items` (element size,
 * largest first, then name). `what` starts messages. The metadata entries go after
 * tapeflow's own. Errors: FAILED_PRECONDITION (I/O), DATA_LOSS (a check_crc item whose
 * source disagrees), RESOURCE_EXHAUSTED, INVALID_ARGUMENT (a header of 100 MB or more, a NaN
 * or Inf in a `finite` item: "<what>: tensor 'x' holds a NaN or Inf (element i)").
 */
tfl_status tfl__st_write(tfl_ctx *ctx, const char *what, const char *path, tfl__st_item *items,
                         int64_t n, int n_meta, const char *const *keys, const char *const *values,
                         unsigned flags);

/* ---- atomic, durable files (atomic_file.c) ------------------------------------------------- */

typedef struct tfl__afile {
    int fd;
    char *tmp; /* "<dir>/.<base>.tmp.<pid>.<n>" */
    char *path;
    int64_t written; /* bytes written so far */
    int64_t started; /* bytes whose writeback has been started (tfl__afile_early) */
    bool early;      /* start writeback while writing */
} tfl__afile;

/** Creates the temporary file beside `path` (O_EXCL). FAILED_PRECONDITION naming it. */
tfl_status tfl__afile_open(tfl_ctx *ctx, const char *what, const char *path, tfl__afile *f);
/** Starts the writeback of each TFL__AFILE_EARLY bytes as soon as they are written, so that
 * the disk works while the rest is produced and the fsync of tfl__afile_commit has less left
 * to wait for (Linux: sync_file_range without waiting; elsewhere nothing). The fsync stays:
 * this only moves work earlier. For large files that are fsync'd. */
void tfl__afile_early(tfl__afile *f);
#define TFL__AFILE_EARLY ((int64_t)8 << 20)
/** Writes all n bytes (short writes and EINTR looped). */
tfl_status tfl__afile_write(tfl_ctx *ctx, const char *what, tfl__afile *f, const void *buf,
                            size_t n);
/** fsync (unless no_fsync), close, rename over path, fsync the directory; removes the
 * temporary file on failure. Frees f's strings either way. */
tfl_status tfl__afile_commit(tfl_ctx *ctx, const char *what, tfl__afile *f, bool no_fsync);
/** Closes and removes the temporary file; frees f's strings. */
void tfl__afile_abort(tfl_ctx *ctx, tfl__afile *f);
/** True for a name "." <anything> ".tmp." <digits> "." <digits> (a temporary file). */
bool tfl__afile_is_temp(const char *name);

/** Checks a UTF-8 string of n bytes; returns the offset of the first bad byte or -1. */
int64_t tfl__utf8_check(const uint8_t *s, int64_t n);

#endif /* TFL_IO_SAFETENSORS_H */
