/*
 * layers/dataset_io.c: opening data files through zlib (plain or gzip alike) and the IDX
 * loader (the MNIST format; header described in tapeflow/data.h). Every header field is
 * checked against the file before memory is taken for it; no error path leaks.
 */
#include "dataset_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define READ_CHUNK (1u << 30) /* gzread takes an unsigned count: read in pieces */
#define DEFLATE_MAX_RATIO 1032 /* deflate expands at most ~1032:1: bounds a header's claims */

/* ---- files ----------------------------------------------------------------------------------- */

void *tfl__ds_open(tfl_ctx *ctx, const char *what, const char *path, int64_t *file_bytes,
                   bool *gzip)
{
    TFL_CHECK_RET(ctx, path && path[0], NULL, TFL_INVALID_ARGUMENT, "%s: no file path given",
                  what);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        int e = errno;
        char msg[128];
        if (strerror_r(e, msg, sizeof msg) != 0) snprintf(msg, sizeof msg, "errno %d", e);
        tfl__set_error(ctx, e == ENOENT || e == ENOTDIR ? TFL_NOT_FOUND : TFL_FAILED_PRECONDITION,
                       "%s: cannot open '%s': %s", what, path, msg);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "%s: '%s' is not a regular file", what, path);
        return NULL;
    }
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: cannot open '%s': out of memory", what,
                       path);
        return NULL;
    }
    gzbuffer(gz, 1u << 17);
    *file_bytes = (int64_t)st.st_size;
    *gzip = gzdirect(gz) == 0; /* reads the first bytes: a gzip magic or not */
    return gz;
}

/* The text of zlib's error without the "<fd:N>: " prefix gzdopen's files carry. */
static const char *gz_message(gzFile gz, int *code)
{
    const char *msg = gzerror(gz, code);
    if (!msg) return "";
    if (msg[0] == '<') {
        const char *p = strstr(msg, ">: ");
        if (p) return p + 3;
    }
    return msg;
}

/* How a read that got nothing more ended: zlib's error state tells a clean end of file from a
 * cut or damaged gzip stream. */
static tfl__ds_rd read_end(gzFile gz)
{
    int code = Z_OK;
    gzerror(gz, &code);
    switch (code) {
    case Z_OK: return TFL__RD_EOF;
    case Z_BUF_ERROR: return TFL__RD_TRUNCATED; /* "unexpected end of file" */
    case Z_ERRNO: return TFL__RD_IO;
    case Z_MEM_ERROR: return TFL__RD_NOMEM;
    default: return TFL__RD_CORRUPT; /* Z_DATA_ERROR: bad CRC, length, deflate data or header */
    }
}

int64_t tfl__ds_read(void *gz, void *dst, int64_t bytes, tfl__ds_rd *why)
{
    int64_t got = 0;
    while (got < bytes) {
        int64_t left = bytes - got;
        unsigned want = left > (int64_t)READ_CHUNK ? READ_CHUNK : (unsigned)left;
        int r = gzread((gzFile)gz, (char *)dst + got, want);
        if (r <= 0) {
            *why = read_end((gzFile)gz);
            if (r < 0 && *why == TFL__RD_EOF) *why = TFL__RD_CORRUPT; /* cannot happen */
            return got;
        }
        got += r;
    }
    *why = TFL__RD_FULL;
    return got;
}

tfl_status tfl__ds_read_error(tfl_ctx *ctx, void *gz, tfl__ds_rd why, const char *file,
                              const char *where)
{
    int code = Z_OK;
    const char *msg = gz_message((gzFile)gz, &code);
    switch (why) {
    case TFL__RD_FULL:
    case TFL__RD_EOF:
        return tfl__set_error(ctx, TFL_DATA_LOSS, "%s: truncated: unexpected end of file (%s)",
                              file, where);
    case TFL__RD_TRUNCATED:
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "%s: gzip stream ends early (truncated file) (%s)", file, where);
    case TFL__RD_CORRUPT:
        /* zlib's words for a CRC-32 or length mismatch in the trailer: say what they mean */
        return tfl__set_error(ctx, TFL_DATA_LOSS, "%s: gzip data is corrupt: %s%s (%s)", file,
                              msg[0] ? msg : "compressed data error",
                              strstr(msg, "incorrect data check")
                                  ? " (the CRC-32 of the data does not match the gzip trailer)"
                              : strstr(msg, "incorrect length check")
                                  ? " (the data's length does not match the gzip trailer)"
                                  : "",
                              where);
    case TFL__RD_IO:
        return tfl__set_error(ctx, TFL_DATA_LOSS, "%s: read error: %s (%s)", file,
                              msg[0] ? msg : "I/O error", where);
    case TFL__RD_NOMEM:
    default:
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: zlib is out of memory (%s)",
                              file, where);
    }
}

/* ---- IDX ------------------------------------------------------------------------------------- */

typedef struct idx_header {
    uint8_t type;                  /* 0x08 ubyte ... 0x0E float64 */
    int ndims;
    int64_t dims[TFL_MAX_RANK];
    int64_t count;                 /* elements */
    size_t esize;                  /* bytes per element */
} idx_header;

static size_t idx_type_size(uint8_t type)
{
    switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
    }
}

static const char *idx_type_name(uint8_t type)
{
    switch (type) {
    case 0x08: return "ubyte";
    case 0x09: return "byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
    }
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Element i of big-endian raw data of `type`, as a double. */
static double idx_value(const uint8_t *raw, uint8_t type, int64_t i)
{
    switch (type) {
    case 0x08: return raw[i];
    case 0x09: return (int8_t)raw[i];
    case 0x0B: {
        const uint8_t *p = raw + 2 * i;
        return (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]);
    }
    case 0x0C: return (int32_t)be32(raw + 4 * i);
    case 0x0D: {
        uint32_t u = be32(raw + 4 * i);
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    default: {
        const uint8_t *p = raw + 8 * i;
        uint64_t u = (uint64_t)be32(p) << 32 | be32(p + 4);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    }
}

/* Reads and checks the header; `max_dims` is 1 for labels. `file` names the file in messages. */
static tfl_status idx_read_header(tfl_ctx *ctx, gzFile gz, const char *file, int max_dims,
                                  int64_t file_bytes, bool gzip, idx_header *h)
{
    uint8_t m[4];
    tfl__ds_rd why;
    char where[96];
    int64_t got = tfl__ds_read(gz, m, 4, &why);
    if (why == TFL__RD_EOF)
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "%s: truncated header: %lld of 4 magic bytes (end of file)", file,
                              (long long)got);
    if (why != TFL__RD_FULL) {
        snprintf(where, sizeof where, "reading the header: %lld of 4 magic bytes", (long long)got);
        return tfl__ds_read_error(ctx, gz, why, file, where);
    }
    h->type = m[2];
    h->ndims = m[3];
    h->esize = idx_type_size(h->type);
    TFL_CHECK(ctx, m[0] == 0 && m[1] == 0 && h->esize != 0, TFL_DATA_LOSS,
              "%s: bad magic 0x%02x%02x%02x%02x: expected 0x0000TTNN with type TT "
              "0x08 (ubyte), 0x09, 0x0B, 0x0C, 0x0D or 0x0E and NN dimensions (MNIST: "
              "0x00000803 images, 0x00000801 labels)",
              file, m[0], m[1], m[2], m[3]);
    TFL_CHECK(ctx, h->ndims >= 1 && h->ndims <= max_dims, TFL_DATA_LOSS,
              "%s: bad magic 0x%02x%02x%02x%02x: %d dimensions; expected %s", file, m[0], m[1],
              m[2], m[3], h->ndims, max_dims == 1 ? "1 (labels)" : "1 to 8");
    uint8_t d[4 * TFL_MAX_RANK];
    int64_t want = 4 * (int64_t)h->ndims;
    got = tfl__ds_read(gz, d, want, &why);
    if (why == TFL__RD_EOF)
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "%s: truncated header: %lld of %lld dimension bytes (end of file)",
                              file, (long long)got, (long long)want);
    if (why != TFL__RD_FULL) {
        snprintf(where, sizeof where, "reading the header: %lld of %lld dimension bytes",
                 (long long)got, (long long)want);
        return tfl__ds_read_error(ctx, gz, why, file, where);
    }
    h->count = 1;
    for (int i = 0; i < h->ndims; i++) {
        h->dims[i] = be32(d + 4 * i);
        if (h->dims[i] != 0 && h->count > (INT64_MAX / 16) / h->dims[i])
            return tfl__set_error(ctx, TFL_DATA_LOSS,
                                  "%s: the dimensions of the header overflow (dimension %d = "
                                  "%lld)",
                                  file, i, (long long)h->dims[i]);
        h->count *= h->dims[i];
    }
    /* examples without elements carry nothing the file could vouch for: their count alone
     * would size the labels and the batch order */
    for (int i = 1; i < h->ndims; i++)
        TFL_CHECK(ctx, h->dims[i] > 0 || h->dims[0] == 0, TFL_DATA_LOSS,
                  "%s: the header declares %lld examples of no elements (dimension %d is 0)",
                  file, (long long)h->dims[0], i);
    /* the data the header announces must fit the file before any memory is taken for it */
    int64_t header = 4 + want;
    int64_t data = h->count * (int64_t)h->esize;
    if (!gzip) {
        TFL_CHECK(ctx, file_bytes - header >= data, TFL_DATA_LOSS,
                  "%s: truncated: the header declares %lld %s elements (%lld bytes) with "
                  "dimension 0 = %lld, but the file holds %lld bytes of data",
                  file, (long long)h->count, idx_type_name(h->type), (long long)data,
                  (long long)h->dims[0], (long long)(file_bytes - header));
        TFL_CHECK(ctx, file_bytes - header == data, TFL_DATA_LOSS,
                  "%s: wrong count: the header declares %lld bytes of data (dimension 0 = "
                  "%lld) but %lld follow it",
                  file, (long long)data, (long long)h->dims[0], (long long)(file_bytes - header));
    } else {
        TFL_CHECK(ctx, data / DEFLATE_MAX_RATIO <= file_bytes, TFL_DATA_LOSS,
                  "%s: the header declares %lld bytes of data, more than a gzip file of %lld "
                  "bytes can hold",
                  file, (long long)data, (long long)file_bytes);
    }
    return TFL_OK;
}

/* Reads the `bytes` of data the header declares into a new TFL_ALIGN buffer (*out) and checks
 * that the file ends right after them, its gzip stream whole. A plain file's size already
 * vouches for the bytes; a gzip header's claim does not, so the buffer grows with the data
 * that actually arrives (from about what the file would hold at 4:1). */
static tfl_status idx_read_data(tfl_ctx *ctx, gzFile gz, const char *file, int64_t bytes,
                                bool gzip, int64_t file_bytes, void **out)
{
    *out = NULL;
    int64_t cap = bytes;
    if (gzip) {
        int64_t guess = file_bytes < (INT64_MAX / 8) ? 4 * file_bytes : INT64_MAX / 2;
        if (guess < (1 << 20)) guess = 1 << 20;
        if (cap > guess) cap = guess;
    }
    uint8_t *buf = tfl__host_alloc(ctx, cap ? (size_t)cap : 1, TFL_ALIGN);
    TFL_CHECK(ctx, buf, TFL_RESOURCE_EXHAUSTED, "%s: out of host memory (%lld bytes of data)",
              file, (long long)cap);
    int64_t got = 0;
    tfl__ds_rd why = TFL__RD_FULL;
    char where[128];
    for (;;) {
        got += tfl__ds_read(gz, buf + got, cap - got, &why);
        if (why != TFL__RD_FULL || got == bytes) break;
        int64_t grown = cap <= bytes / 2 ? 2 * cap : bytes; /* the data keeps coming */
        uint8_t *p = tfl__host_alloc(ctx, (size_t)grown, TFL_ALIGN);
        if (!p) {
            tfl__host_free(ctx, buf);
            return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                  "%s: out of host memory (%lld bytes of data)", file,
                                  (long long)grown);
        }
        memcpy(p, buf, (size_t)got);
        tfl__host_free(ctx, buf);
        buf = p;
        cap = grown;
    }
    tfl_status st = TFL_OK;
    if (why == TFL__RD_EOF) {
        st = tfl__set_error(ctx, TFL_DATA_LOSS,
                            "%s: truncated: short read: %lld of the %lld bytes of data the "
                            "header declares (end of file)",
                            file, (long long)got, (long long)bytes);
    } else if (why != TFL__RD_FULL) {
        snprintf(where, sizeof where, "short read: %lld of the %lld bytes of data the header "
                 "declares", (long long)got, (long long)bytes);
        st = tfl__ds_read_error(ctx, gz, why, file, where);
    } else { /* all there: the file must end here, and its gzip stream with a good trailer */
        uint8_t extra;
        int64_t more = tfl__ds_read(gz, &extra, 1, &why);
        if (more > 0) {
            st = tfl__set_error(ctx, TFL_DATA_LOSS,
                                "%s: trailing bytes after the %lld bytes of data the header "
                                "declares", file, (long long)bytes);
        } else if (why != TFL__RD_EOF) {
            snprintf(where, sizeof where, "after the %lld bytes of data the header declares",
                     (long long)bytes);
            st = tfl__ds_read_error(ctx, gz, why, file, where);
        }
    }
    if (st != TFL_OK) {
        tfl__host_free(ctx, buf);
        return st;
    }
    *out = buf;
    return TFL_OK;
}

/* Loads the images into a new store (labels allocated when `labelled`). */
static tfl__ds_store *idx_load_images(tfl_ctx *ctx, const char *path, bool labelled)
{
    int64_t file_bytes = 0;
    bool gzip = false;
    gzFile gz = tfl__ds_open(ctx, "IDX images", path, &file_bytes, &gzip);
    if (!gz) return NULL;
    char file[320];
    snprintf(file, sizeof file, "IDX images file '%s'", path);
    idx_header h;
    tfl__ds_store *s = NULL;
    void *raw = NULL;
    if (idx_read_header(ctx, gz, file, TFL_MAX_RANK, file_bytes, gzip, &h) != TFL_OK ||
        idx_read_data(ctx, gz, file, h.count * (int64_t)h.esize, gzip, file_bytes, &raw) !=
            TFL_OK) {
        gzclose(gz);
        return NULL;
    }
    gzclose(gz);
    if (h.type == 0x08) /* bytes stay bytes: the store takes the buffer */
        return tfl__ds_store_adopt(ctx, TFL__DS_U8, h.dims[0], h.ndims - 1, h.dims + 1,
                                   labelled, raw);
    s = tfl__ds_store_new(ctx, TFL__DS_F32, h.dims[0], h.ndims - 1, h.dims + 1, labelled);
    if (s) {
        float *x = s->x;
        for (int64_t i = 0; i < h.count; i++) x[i] = (float)idx_value(raw, h.type, i);
    }
    tfl__host_free(ctx, raw);
    return s;
}

/* Reads the labels into s->y (s->n of them), each below num_classes (0: any). */
static tfl_status idx_load_labels(tfl_ctx *ctx, const char *path, const char *images_path,
                                  int32_t num_classes, tfl__ds_store *s)
{
    int64_t file_bytes = 0;
    bool gzip = false;
    gzFile gz = tfl__ds_open(ctx, "IDX labels", path, &file_bytes, &gzip);
    if (!gz) return tfl_ctx_status(ctx);
    char file[320];
    snprintf(file, sizeof file, "IDX labels file '%s'", path);
    idx_header h;
    void *raw = NULL;
    tfl_status st = idx_read_header(ctx, gz, file, 1, file_bytes, gzip, &h);
    if (st == TFL_OK && h.dims[0] != s->n)
        st = tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                            "IDX: the images file '%s' has %lld examples but the labels file "
                            "'%s' has %lld labels",
                            images_path, (long long)s->n, path, (long long)h.dims[0]);
    if (st == TFL_OK)
        st = idx_read_data(ctx, gz, file, h.count * (int64_t)h.esize, gzip, file_bytes, &raw);
    gzclose(gz);
    for (int64_t i = 0; st == TFL_OK && i < s->n; i++) {
        double v = idx_value(raw, h.type, i);
        if (!(v >= 0 && v <= INT32_MAX && v == floor(v)))
            st = tfl__set_error(ctx, TFL_DATA_LOSS,
                                "%s: label %g at index %lld is not a class index (an integer "
                                "in [0, 2^31))",
                                file, v, (long long)i);
        else if (num_classes > 0 && v >= num_classes)
            st = tfl__set_error(ctx, TFL_DATA_LOSS,
                                "%s: label %g at index %lld is not one of the %d classes (labels "
                                "in [0, %d))",
                                file, v, (long long)i, (int)num_classes, (int)num_classes);
        else s->y[i] = (int32_t)v;
    }
    tfl__host_free(ctx, raw);
    return st;
}

tfl_dataset *tfl_dataset_from_idx(tfl_ctx *ctx, const char *images_path, const char *labels_path,
                                  const tfl_dataset_opts *opts)
{
    if (!ctx || !tfl__dataset_opts_check(ctx, "IDX", opts, TFL__SRC_IDX)) return NULL;
    tfl__ds_store *s = idx_load_images(ctx, images_path, labels_path != NULL);
    if (!s) return NULL;
    if (labels_path && idx_load_labels(ctx, labels_path, images_path,
                                       opts ? opts->num_classes : 0, s) != TFL_OK) {
        tfl__ds_store_release(s);
        return NULL;
    }
    tfl__ds_store_count_classes(s);
    return tfl__dataset_wrap(ctx, s, opts);
}
