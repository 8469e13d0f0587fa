/*
 * framework/io/st_write.c: the streaming safetensors writer (tfl__st_write) and the atomic,
 * durable file it writes through (tfl__afile_*: a temporary file in the same directory,
 * O_EXCL; every byte written, looping on short writes and EINTR; fsync; close, checked;
 * rename; fsync of the directory). A checkpoint that will be fsync'd starts the writeback of
 * each 8 MiB as soon as it is written, so the disk works while the rest is checked, CRC'd and
 * copied; the fsync still comes before the rename and waits for every byte.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "safetensors.h"

#include "crc32c.h"

#include <tapeflow/files.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- atomic files ---------------------------------------------------------------------------- */

bool tfl__afile_is_temp(const char *name)
{
    if (name[0] != '.') return false;
    const char *t = strstr(name, ".tmp.");
    if (!t) return false;
    const char *p = t + 5;
    int parts = 0;
    for (;;) {
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9')
            p++;
        parts++;
        if (*p == 0) return parts == 2;
        if (*p != '.' || parts == 2) return false;
        p++;
    }
}

tfl_status tfl__afile_open(tfl_ctx *ctx, const char *what, const char *path, tfl__afile *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    TFL_CHECK(ctx, *base, TFL_INVALID_ARGUMENT, "%s: '%s' names a directory, not a file", what,
              path);
    size_t cap = strlen(path) + 64;
    f->tmp = tfl__host_alloc(ctx, cap, 16);
    f->path = tfl__strdup(ctx, path);
    if (!f->tmp || !f->path) {
        tfl__afile_abort(ctx, f);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long n = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20);
    for (int attempt = 0; attempt < 100; attempt++, n += 7919) {
        snprintf(f->tmp, cap, "%.*s.%s.tmp.%ld.%llu", (int)dir_len, path, base, (long)getpid(),
                 n % 1000000000ull);
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f->fd >= 0 || errno != EEXIST) break;
    }
    if (f->fd < 0) {
        int err = errno;
        tfl_status st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                       "%s: cannot create the "
                                       "temporary file '%s': %s",
                                       what, f->tmp, strerror(err));
        tfl__afile_abort(ctx, f);
        return st;
    }
    return TFL_OK;
}

void tfl__afile_early(tfl__afile *f)
{
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    f->early = true;
#else
    (void)f;
#endif
}

/* Starts the writeback of what was written since the last start (no waiting: the fsync of the
 * commit still waits for all of it, and reports any error of it). A file system that cannot
 * do this (EINVAL, ENOSYS, ESPIPE) is left to the fsync alone. */
static tfl_status start_writeback(tfl_ctx *ctx, const char *what, tfl__afile *f)
{
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    if (sync_file_range(f->fd, f->started, f->written - f->started, SYNC_FILE_RANGE_WRITE) != 0) {
        int err = errno;
        if (err == EINVAL || err == ENOSYS || err == ESPIPE || err == EOPNOTSUPP) {
            f->early = false;
            return TFL_OK;
        }
        return tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: writeback of '%s' failed: %s",
                              what, f->tmp, strerror(err));
    }
    f->started = f->written;
#else
    (void)ctx, (void)what, (void)f;
#endif
    return TFL_OK;
}

tfl_status tfl__afile_write(tfl_ctx *ctx, const char *what, tfl__afile *f, const void *buf,
                            size_t n)
{
    const char *p = buf;
    while (n > 0) {
        size_t piece = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t w = write(f->fd, p, piece);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: write to '%s' failed: %s",
                                  what, f->tmp, w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
        f->written += w;
    }
    if (f->early && f->written - f->started >= TFL__AFILE_EARLY)
        return start_writeback(ctx, what, f);
    return TFL_OK;
}

static void afile_free(tfl_ctx *ctx, tfl__afile *f)
{
    tfl__host_free(ctx, f->tmp);
    tfl__host_free(ctx, f->path);
    f->tmp = f->path = NULL;
    f->fd = -1;
}

void tfl__afile_abort(tfl_ctx *ctx, tfl__afile *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->tmp);
    }
    afile_free(ctx, f);
}

tfl_status tfl__afile_commit(tfl_ctx *ctx, const char *what, tfl__afile *f, bool no_fsync)
{
    tfl_status st = TFL_OK;
    if (!no_fsync && fsync(f->fd) != 0)
        st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: fsync of '%s' failed: %s", what,
                            f->tmp, strerror(errno));
    int c = close(f->fd);
    f->fd = -1;
    if (st == TFL_OK && c != 0)
        st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: close of '%s' failed: %s", what,
                            f->tmp, strerror(errno));
    if (st == TFL_OK && rename(f->tmp, f->path) != 0)
        st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: rename of '%s' to '%s' failed: %s",
                            what, f->tmp, f->path, strerror(errno));
    if (st != TFL_OK) {
        unlink(f->tmp);
    } else if (!no_fsync) {
        const char *slash = strrchr(f->path, '/');
        char dir[4096];
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == f->path)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->path), f->path);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0)
            st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                "%s: fsync of the directory '%s' "
                                "failed: %s",
                                what, dir, strerror(errno));
        if (dfd >= 0) close(dfd);
    }
    afile_free(ctx, f);
    return st;
}

/* ---- the header ------------------------------------------------------------------------------ */

typedef struct sbuf {
    tfl_ctx *ctx;
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = tfl__grow(b->ctx, b->p, b->n, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A JSON string (s is valid UTF-8: checked by the callers). */
static void put_json(sbuf *b, const char *s)
{
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p;
            put(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(b, esc, 6);
        } else {
            put(b, (const char *)p, 1);
        }
    }
    put(b, "\"", 1);
}

static int cmp_item(const void *a, const void *b)
{
    const tfl__st_item *x = a, *y = b;
    int bx = tfl__st_dtypes[x->dt].bits, by = tfl__st_dtypes[y->dt].bits;
    if (bx != by) return bx > by ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void build_header(sbuf *b, const tfl__st_item *items, int64_t n, int n_meta,
                         const char *const *keys, const char *const *values)
{
    char num[64];
    puts_(b, "{\"__metadata__\":{\"" TFL__ST_KEY_VERSION "\":\"" TFL__ST_FORMAT_VERSION "\"");
    for (int64_t i = 0; i < n; i++) {
        puts_(b, ",");
        sbuf k = {b->ctx, NULL, 0, 0, false};
        puts_(&k, TFL__ST_KEY_CRC);
        puts_(&k, items[i].name);
        put_json(b, k.oom ? "" : k.p);
        b->oom |= k.oom;
        snprintf(num, sizeof num, ":\"%08x\"", (unsigned)items[i].crc);
        puts_(b, num);
        if (items[i].complex128) {
            k.n = 0;
            puts_(&k, TFL__ST_KEY_DTYPE);
            puts_(&k, items[i].name);
            puts_(b, ",");
            put_json(b, k.oom ? "" : k.p);
            b->oom |= k.oom;
            puts_(b, ":\"complex128\"");
        }
        tfl__host_free(b->ctx, k.p);
    }
    for (int i = 0; i < n_meta; i++) {
        puts_(b, ",");
        put_json(b, keys[i]);
        puts_(b, ":");
        put_json(b, values[i]);
    }
    puts_(b, "}");
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        puts_(b, ",");
        put_json(b, items[i].name);
        puts_(b, ":{\"dtype\":\"");
        puts_(b, tfl__st_dtypes[items[i].dt].name);
        puts_(b, "\",\"shape\":[");
        for (int d = 0; d < items[i].rank; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)items[i].shape[d]);
            puts_(b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%lld,%lld]}", (long long)at,
                 (long long)(at + items[i].bytes));
        puts_(b, num);
        at += items[i].bytes;
    }
    puts_(b, "}");
    while (!b->oom && b->n % 8)
        puts_(b, " ");
}

/* ---- the data -------------------------------------------------------------------------------- */

/* The index of the first NaN or Inf among `bytes` bytes of dtype, or -1. The scan ORs
 * whole blocks without branching (vectorized) and looks closer only at a flagged block. */
static int64_t first_nonfinite(tfl_dtype dt, const void *p, int64_t bytes)
{
    enum { BLOCK = 1024 };
    if (dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_COMPLEX64) {
        const uint32_t *u = p;
        int64_t n = bytes / 4;
        for (int64_t b = 0; b < n; b += BLOCK) {
            int64_t e = b + BLOCK < n ? b + BLOCK : n;
            uint32_t hit = 0;
            for (int64_t i = b; i < e; i++)
                hit |= (u[i] & 0x7f800000u) == 0x7f800000u;
            for (int64_t i = b; hit && i < e; i++)
                if ((u[i] & 0x7f800000u) == 0x7f800000u)
                    return dt == TFL_DTYPE_COMPLEX64 ? i / 2 : i;
        }
    } else if (dt == TFL_DTYPE_FLOAT64 || dt == TFL_DTYPE_COMPLEX128) {
        const uint64_t *u = p;
        const uint64_t m = 0x7ff0000000000000ull;
        int64_t n = bytes / 8;
        for (int64_t b = 0; b < n; b += BLOCK) {
            int64_t e = b + BLOCK < n ? b + BLOCK : n;
            uint64_t hit = 0;
            for (int64_t i = b; i < e; i++)
                hit |= (u[i] & m) == m;
            for (int64_t i = b; hit && i < e; i++)
                if ((u[i] & m) == m) return dt == TFL_DTYPE_COMPLEX128 ? i / 2 : i;
        }
    } else if (dt == TFL_DTYPE_FLOAT16 || dt == TFL_DTYPE_BFLOAT16) {
        const uint16_t *u = p;
        const uint16_t m = dt == TFL_DTYPE_FLOAT16 ? 0x7c00 : 0x7f80;
        int64_t n = bytes / 2;
        for (int64_t b = 0; b < n; b += BLOCK) {
            int64_t e = b + BLOCK < n ? b + BLOCK : n;
            uint32_t hit = 0;
            for (int64_t i = b; i < e; i++)
                hit |= (u[i] & m) == m;
            for (int64_t i = b; hit && i < e; i++)
                if ((u[i] & m) == m) return i;
        }
    }
    return -1;
}

/* The exponent mask of a float dtype repeated over 8 bytes and its lane width in bits, for
 * tfl__crc32c_flag; 0 for a dtype without NaN or Inf. */
static uint64_t exponent_lanes(tfl_dtype dt, unsigned *bits)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT32:
    case TFL_DTYPE_COMPLEX64: *bits = 32; return 0x7f8000007f800000u;
    case TFL_DTYPE_FLOAT64:
    case TFL_DTYPE_COMPLEX128: *bits = 64; return 0x7ff0000000000000u;
    case TFL_DTYPE_FLOAT16: *bits = 16; return 0x7c007c007c007c00u;
    case TFL_DTYPE_BFLOAT16: *bits = 16; return 0x7f807f807f807f80u;
    default: *bits = 64; return 0;
    }
}

/* One piece of an item: the finite check, the CRC, the write. `at` is its offset. The check
 * and the CRC share one pass over the piece where both are wanted; the element is then found
 * by the scan, only in a piece that holds one. */
static tfl_status write_piece(tfl_ctx *ctx, const char *what, tfl__afile *f, tfl__st_item *it,
                              const void *p, size_t n, int64_t at, uint32_t *crc)
{
    bool want_crc = it->check_crc || it->compute_crc;
    unsigned bits = 64;
    uint64_t mask = it->finite != TFL_DTYPE_INVALID ? exponent_lanes(it->finite, &bits) : 0;
    if (mask && want_crc) {
        size_t whole = n & ~(size_t)7; /* the flag covers whole words; the scan the tail */
        uint64_t flag = 0;
        *crc = tfl__crc32c_flag(*crc, p, n, mask, bits, &flag);
        if (!flag && first_nonfinite(it->finite, (const char *)p + whole, (int64_t)(n - whole)) < 0)
            mask = 0; /* checked: nothing to find */
        want_crc = false;
    }
    if (mask) {
        int64_t bad = first_nonfinite(it->finite, p, (int64_t)n);
        int64_t per = (int64_t)tfl_dtype_size(it->finite);
        TFL_CHECK(
            ctx, bad < 0, TFL_INVALID_ARGUMENT,
            "%s: tensor '%s' holds a NaN or Inf (element "
            "%lld): refusing to checkpoint a non-finite state (TFL_CKPT_ALLOW_NONFINITE saves "
            "it anyway)",
            what, it->name, (long long)(bad + at / per));
    }
    if (want_crc) *crc = tfl__crc32c(*crc, p, n);
    return tfl__afile_write(ctx, what, f, p, n);
}

static tfl_status write_item(tfl_ctx *ctx, const char *what, tfl__afile *f, tfl__st_item *it,
                             uint8_t **bounce)
{
    uint32_t crc = 0;
    if (it->ptr) { /* straight from the tensor's memory, in pieces of 1 MiB: the one pass of
                    * the check and the CRC brings a piece into the cache, and write() copies
                    * it from there */
        const int64_t piece = (int64_t)TFL__ST_CHUNK;
        for (int64_t at = 0; at < it->bytes;) {
            size_t n = it->bytes - at < piece ? (size_t)(it->bytes - at) : (size_t)piece;
            TFL_TRY(write_piece(ctx, what, f, it, (const char *)it->ptr + at, n, at, &crc));
            at += (int64_t)n;
        }
    } else {
        if (!*bounce && !(*bounce = tfl__host_alloc(ctx, TFL__ST_CHUNK, 64)))
            return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                  "%s: out of memory for a 1 MiB "
                                  "buffer",
                                  what);
        for (int64_t at = 0; at < it->bytes;) {
            size_t n = it->bytes - at < TFL__ST_CHUNK ? (size_t)(it->bytes - at) : TFL__ST_CHUNK;
            TFL_TRY(it->src(it->user, it->src_item, at, *bounce, n));
            TFL_TRY(write_piece(ctx, what, f, it, *bounce, n, at, &crc));
            at += (int64_t)n;
        }
    }
    if (it->compute_crc)
        it->crc = crc;
    else if (it->check_crc && crc != it->crc)
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "%s: tensor '%s': CRC mismatch while copying "
                              "(expected %08x, got %08x): the source is corrupt",
                              what, it->name, (unsigned)it->crc, (unsigned)crc);
    return TFL_OK;
}

tfl_status tfl__st_write(tfl_ctx *ctx, const char *what, const char *path, tfl__st_item *items,
                         int64_t n, int n_meta, const char *const *keys, const char *const *values,
                         unsigned flags)
{
    if (n > 1) qsort(items, (size_t)n, sizeof *items, cmp_item);
    bool later = false; /* CRCs computed while writing: the header is written again after */
    for (int64_t i = 0; i < n; i++)
        later |= items[i].compute_crc;
    sbuf h = {ctx, NULL, 0, 0, false};
    build_header(&h, items, n, n_meta, keys, values);
    if (h.oom) {
        tfl__host_free(ctx, h.p);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: out of memory for the header",
                              what);
    }
    if (h.n >= TFL__ST_MAX_HEADER) {
        tfl__host_free(ctx, h.p);
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                              "%s: the header would be %zu bytes, "
                              "more than readers accept (100,000,000)",
                              what, h.n);
    }
    size_t hn = h.n;
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    tfl__afile f;
    tfl_status st = tfl__afile_open(ctx, what, path, &f);
    if (st == TFL_OK && !(flags & TFL_CKPT_NO_FSYNC)) tfl__afile_early(&f);
    if (st == TFL_OK) st = tfl__afile_write(ctx, what, &f, len8, 8);
    if (st == TFL_OK) st = tfl__afile_write(ctx, what, &f, h.p, h.n);
    uint8_t *bounce = NULL;
    for (int64_t i = 0; i < n && st == TFL_OK; i++)
        st = write_item(ctx, what, &f, &items[i], &bounce);
    tfl__host_free(ctx, bounce);
    if (st == TFL_OK && later) { /* the same length: every CRC is 8 hex digits */
        h.n = 0;
        build_header(&h, items, n, n_meta, keys, values);
        if (h.oom || h.n != hn)
            st = tfl__set_error(ctx, h.oom ? TFL_RESOURCE_EXHAUSTED : TFL_INTERNAL,
                                "%s: the "
                                "header could not be rewritten with its CRCs",
                                what);
        for (size_t done = 0; st == TFL_OK && done < hn;) {
            ssize_t w = pwrite(f.fd, h.p + done, hn - done, (off_t)(8 + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0)
                st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: write to '%s' failed: %s",
                                    what, f.tmp, w < 0 ? strerror(errno) : "no progress");
            else
                done += (size_t)w;
        }
    }
    tfl__host_free(ctx, h.p);
    if (st == TFL_OK) return tfl__afile_commit(ctx, what, &f, flags & TFL_CKPT_NO_FSYNC);
    if (f.tmp) tfl__afile_abort(ctx, &f);
    return st;
}

/* ---- the public helpers (tapeflow/files.h) --------------------------------------------------- */

tfl_status tfl_file_write_atomic(tfl_ctx *ctx, const char *path, const void *data, size_t len)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, path && *path && (data || len == 0), TFL_INVALID_ARGUMENT,
              "tfl_file_write_atomic: %s", !path || !*path ? "no path" : "NULL data");
    tfl__afile f;
    TFL_TRY(tfl__afile_open(ctx, "tfl_file_write_atomic", path, &f));
    tfl_status st = tfl__afile_write(ctx, "tfl_file_write_atomic", &f, data, len);
    if (st != TFL_OK) {
        tfl__afile_abort(ctx, &f);
        return st;
    }
    return tfl__afile_commit(ctx, "tfl_file_write_atomic", &f, false);
}

tfl_status tfl_make_dirs(tfl_ctx *ctx, const char *path)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, path && *path, TFL_INVALID_ARGUMENT, "tfl_make_dirs: %s",
              path ? "an empty path" : "a NULL path");
    size_t n = strlen(path);
    char *p = tfl__strdup(ctx, path);
    if (!p) return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_make_dirs: out of memory");
    tfl_status st = TFL_OK;
    for (size_t i = 1; i <= n && st == TFL_OK; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        if (p[i - 1] == '/') continue; /* "a//b", a trailing '/' */
        char c = p[i];
        p[i] = 0;
        struct stat sb;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                "cannot create the directory '%.256s': '%.256s': %s", path, p,
                                strerror(errno));
        else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
            st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                "cannot create the directory '%.256s': '%.256s' exists and is not "
                                "a directory", path, p);
        p[i] = c;
    }
    tfl__host_free(ctx, p);
    return st;
}
