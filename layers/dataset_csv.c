/*
 * layers/dataset_csv.c: the CSV loader. Two streaming passes over the file (plain or
 * gzip, through zlib): the first counts the data lines and checks the columns, the second
 * parses every field into a store of exactly that size, so the text is never held whole.
 * Numbers are parsed with strtod (the "C" locale's decimal point is expected).
 */
#include "dataset_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#define CSV_MAX_LINE (64 << 20) /* bytes in one line, its end included */
#define CSV_CHUNK (1 << 16)      /* bytes read at a time */

typedef struct csv_reader {
    tfl_ctx *ctx;
    gzFile gz;
    const char *path;
    char *buf;        /* buffered text: [start, end) not yet returned */
    size_t cap, start, end;
    bool eof;         /* the file has ended (cleanly: its gzip stream, if any, is whole) */
    char *line;       /* the current line, NUL-terminated, without its line end (inside buf) */
    int64_t lineno;   /* 1-based number of the current line */
    char delim;
} csv_reader;

static bool long_line(csv_reader *r)
{
    tfl__set_error(r->ctx, TFL_DATA_LOSS,
                   "CSV '%s' line %lld: longer than %d bytes (not a text file, or no line ends?)",
                   r->path, (long long)r->lineno + 1, CSV_MAX_LINE);
    return false;
}

/* Makes room for CSV_CHUNK more bytes after r->end; false with the error kept. */
static bool make_room(csv_reader *r)
{
    if (r->cap - r->end > CSV_CHUNK) return true;
    if (r->start > 0) { /* the returned lines are done with */
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end > CSV_MAX_LINE) return long_line(r); /* no line end in that much text */
    if (r->cap - r->end > CSV_CHUNK) return true;
    size_t cap = r->cap ? 2 * r->cap : 2 * CSV_CHUNK;
    if (cap > CSV_MAX_LINE + 2 * CSV_CHUNK) cap = CSV_MAX_LINE + 2 * CSV_CHUNK;
    char *p = tfl__grow(r->ctx, r->buf, r->end, cap);
    if (!p) {
        tfl__set_error(r->ctx, TFL_RESOURCE_EXHAUSTED,
                       "CSV '%s': out of host memory for line %lld (%zu bytes)", r->path,
                       (long long)r->lineno + 1, cap);
        return false;
    }
    r->buf = p;
    r->cap = cap;
    return true;
}

/* Reads the next line into r->line. Returns 1 (a line), 0 (end of file) or -1 (error kept):
 * a read error, a gzip stream cut short or corrupt, an overlong line or a NUL byte. */
static int read_line(csv_reader *r)
{
    size_t scanned = r->start;
    char *nl = NULL;
    for (;;) {
        nl = r->end > scanned ? memchr(r->buf + scanned, '\n', r->end - scanned) : NULL;
        if (nl || r->eof) break;
        size_t seen = r->end - r->start;
        if (!make_room(r)) return -1;
        scanned = r->start + seen;
        tfl__ds_rd why;
        int64_t got = tfl__ds_read(r->gz, r->buf + r->end, CSV_CHUNK, &why);
        r->end += (size_t)got;
        if (why == TFL__RD_EOF) r->eof = true;
        else if (why != TFL__RD_FULL) {
            char file[300], where[64];
            snprintf(file, sizeof file, "CSV '%s'", r->path);
            snprintf(where, sizeof where, "after line %lld", (long long)r->lineno);
            tfl__ds_read_error(r->ctx, r->gz, why, file, where);
            return -1;
        }
    }
    if (!nl && r->start == r->end) return 0;
    size_t len = nl ? (size_t)(nl - (r->buf + r->start)) : r->end - r->start;
    if (len > CSV_MAX_LINE) {
        long_line(r);
        return -1;
    }
    if (!nl) { /* the last line, without a line end: room for its NUL */
        if (r->end == r->cap && !make_room(r)) return -1;
    }
    r->line = r->buf + r->start;
    r->line[len] = 0;
    r->start += nl ? len + 1 : len;
    r->lineno++;
    const char *nul = memchr(r->line, 0, len);
    if (nul) {
        tfl__set_error(r->ctx, TFL_DATA_LOSS,
                       "CSV '%s' line %lld: a NUL byte at column %lld (not a text file?)",
                       r->path, (long long)r->lineno, (long long)(nul - r->line) + 1);
        return -1;
    }
    while (len > 0 && r->line[len - 1] == '\r') r->line[--len] = 0;
    return 1;
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') return false;
    return true;
}

static int count_fields(const char *s, char delim)
{
    int n = 1;
    for (; *s; s++) n += *s == delim;
    return n;
}

/* Field `index` (0-based) of a header line, trimmed: *start and its length; false when the line
 * has no such field. */
static bool header_span(const char *line, char delim, int index, const char **start, size_t *n)
{
    const char *p = line;
    for (int i = 0; i < index && p; i++) {
        p = strchr(p, delim);
        if (p) p++;
    }
    if (!p) return false;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = 0;
    while (p[len] && p[len] != delim) len++;
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    *start = p;
    *n = len;
    return true;
}

/* The field `index` of a header line into buf, trimmed (cut to size); "" when out of range. */
static void header_field(const char *line, char delim, int index, char *buf, size_t size)
{
    const char *p;
    size_t n = 0;
    buf[0] = 0;
    if (!header_span(line, delim, index, &p, &n)) return;
    if (n >= size) n = size - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
}

/* Whether the field `index` of a header line, trimmed, is exactly `name` (any length). */
static bool header_field_is(const char *line, char delim, int index, const char *name)
{
    const char *p;
    size_t n = 0;
    return header_span(line, delim, index, &p, &n) && strlen(name) == n &&
           memcmp(p, name, n) == 0;
}

/* Parses one field (start..end, not NUL-terminated at end); false on anything but a number. */
static bool parse_number(char *start, char *end, double *out)
{
    while (start < end && (*start == ' ' || *start == '\t')) start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
    if (start == end) return false;
    char saved = *end;
    *end = 0;
    char *stop = NULL;
    errno = 0;
    double v = strtod(start, &stop);
    *end = saved;
    if (stop != end) return false;
    *out = v;
    return true;
}

static tfl_status field_error(csv_reader *r, int col, const char *hdr, const char *start,
                              const char *end, const char *why)
{
    int n = (int)(end - start);
    if (n > 40) n = 40;
    return tfl__set_error(r->ctx, TFL_DATA_LOSS, "CSV '%s' line %lld, column %d%s%s%s: '%.*s' %s",
                          r->path, (long long)r->lineno, col, hdr[0] ? " ('" : "", hdr,
                          hdr[0] ? "')" : "", n, start, why);
}

tfl_dataset *tfl_dataset_from_csv(tfl_ctx *ctx, const char *path, const tfl_dataset_opts *opts)
{
    if (!ctx || !tfl__dataset_opts_check(ctx, "CSV", opts, TFL__SRC_CSV)) return NULL;
    static const tfl_dataset_opts none = {0};
    if (!opts) opts = &none;
    int64_t file_bytes = 0;
    bool gzip = false;
    csv_reader r = {.ctx = ctx, .path = path, .delim = opts->delimiter ? opts->delimiter : ','};
    r.gz = tfl__ds_open(ctx, "CSV", path, &file_bytes, &gzip);
    if (!r.gz) return NULL;
    tfl__ds_store *s = NULL;
    char *header = NULL;
    int cols = 0, label = -1;
    const bool value = opts->label_kind == TFL_LABEL_VALUE;
    const int nlab = value && opts->label_count > 1 ? opts->label_count : 1; /* label columns */
    int64_t rows = 0, first_data_line = 0;
    tfl_status st = TFL_OK;
    int got;

    /* pass 1: the header, the number of columns, the data lines */
    if (opts->header) {
        got = read_line(&r);
        if (got < 0) goto fail;
        if (got == 0) {
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "CSV '%s': the file is empty (no header)",
                           path);
            goto fail;
        }
        cols = count_fields(r.line, r.delim);
        header = tfl__strdup(ctx, r.line);
        if (!header) goto fail;
    }
    while ((got = read_line(&r)) > 0) {
        if (blank(r.line)) continue;
        int n = count_fields(r.line, r.delim);
        if (cols == 0) cols = n;
        if (first_data_line == 0) first_data_line = r.lineno;
        if (n != cols) {
            tfl__set_error(ctx, TFL_DATA_LOSS,
                           "CSV '%s' line %lld: %d columns, but the %s has %d", path,
                           (long long)r.lineno, n, header ? "header" : "first line", cols);
            goto fail;
        }
        rows++;
    }
    if (got < 0) goto fail;
    if (rows == 0) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "CSV '%s': no data lines", path);
        goto fail;
    }

    /* the label column */
    if (!opts->no_labels) {
        if (opts->label_name) {
            if (!header) {
                tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                               "CSV '%s': label_name '%s' needs header = true", path,
                               opts->label_name);
                goto fail;
            }
            for (int c = 0; c < cols && label < 0; c++)
                if (header_field_is(header, r.delim, c, opts->label_name)) label = c;
            if (label < 0) {
                tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                               "CSV '%s': no column named '%s' in the header '%.80s'", path,
                               opts->label_name, header);
                goto fail;
            }
        } else {
            label = opts->label_column < 0 ? cols + opts->label_column : opts->label_column;
            if (label < 0 || label >= cols) {
                tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                               "CSV '%s': label_column %d is out of range for %d columns", path,
                               opts->label_column, cols);
                goto fail;
            }
        }
        if (nlab > cols - label) {
            char name[64] = "";
            if (opts->label_name) snprintf(name, sizeof name, " ('%.40s')", opts->label_name);
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                           "CSV '%s': label_count %d from column %d%s needs columns %d to %d, "
                           "but the file has %d columns", path, nlab, label + 1, name, label + 1,
                           label + nlab, cols);
            goto fail;
        }
    }
    int64_t feat = label >= 0 ? cols - nlab : cols;
    s = tfl__ds_store_new(ctx, TFL__DS_F32, rows, 1, &feat, label >= 0 && !value);
    if (!s) goto fail;
    if (label >= 0 && value && !tfl__ds_store_add_targets(s, nlab, nlab > 1)) goto fail;

    /* pass 2: parse every field */
    if (gzrewind(r.gz) != 0) {
        tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                       "CSV '%s': cannot rewind the file to read it a second time", path);
        goto fail;
    }
    r.lineno = 0;
    r.start = r.end = 0;
    r.eof = false;
    float *x = s->x;
    int64_t row = 0;
    while (row < rows && (got = read_line(&r)) > 0) {
        if (r.lineno < first_data_line || blank(r.line)) continue;
        char *p = r.line;
        float *dst = x + row * feat;
        for (int c = 0; c < cols; c++) {
            char *end = strchr(p, r.delim);
            if (!end) end = p + strlen(p);
            double v = 0;
            char hdr[64] = "";
            if (!parse_number(p, end, &v)) {
                if (header) header_field(header, r.delim, c, hdr, sizeof hdr);
                st = field_error(&r, c + 1, hdr, p, end,
                                 p == end ? "is empty" : "is not a number");
                goto fail;
            }
            if (s->t && c >= label && c < label + nlab) {
                if (!isfinite((float)v)) {
                    if (header) header_field(header, r.delim, c, hdr, sizeof hdr);
                    st = field_error(&r, c + 1, hdr, p, end,
                                     isfinite(v) ? "is out of the range of float32"
                                                 : "is not a finite number (targets must be "
                                                   "finite)");
                    goto fail;
                }
                s->t[row * nlab + (c - label)] = (float)v;
            } else if (c == label) {
                if (!(v >= 0 && v <= INT32_MAX && v == floor(v))) {
                    if (header) header_field(header, r.delim, c, hdr, sizeof hdr);
                    st = field_error(&r, c + 1, hdr, p, end,
                                     "is not a class index (an integer in [0, 2^31)); "
                                     "real-valued targets need label_kind value");
                    goto fail;
                }
                if (opts->num_classes > 0 && v >= opts->num_classes) {
                    char why[160];
                    if (header) header_field(header, r.delim, c, hdr, sizeof hdr);
                    snprintf(why, sizeof why, "is not one of the %d classes (labels in [0, %d))",
                             (int)opts->num_classes, (int)opts->num_classes);
                    st = field_error(&r, c + 1, hdr, p, end, why);
                    goto fail;
                }
                s->y[row] = (int32_t)v;
            } else {
                if (!isfinite((float)v) && isfinite(v)) {
                    if (header) header_field(header, r.delim, c, hdr, sizeof hdr);
                    st = field_error(&r, c + 1, hdr, p, end, "is out of the range of float32");
                    goto fail;
                }
                *dst++ = (float)v;
            }
            p = *end ? end + 1 : end;
        }
        row++;
    }
    if (got < 0) goto fail;
    if (row != rows) {
        tfl__set_error(ctx, TFL_DATA_LOSS, "CSV '%s': the file changed while it was read (%lld "
                       "data lines, then %lld)", path, (long long)rows, (long long)row);
        goto fail;
    }
    (void)st;
    tfl__host_free(ctx, r.buf);
    tfl__host_free(ctx, header);
    gzclose(r.gz);
    tfl__ds_store_count_classes(s);
    return tfl__dataset_wrap(ctx, s, opts);
fail:
    tfl__ds_store_release(s);
    tfl__host_free(ctx, r.buf);
    tfl__host_free(ctx, header);
    gzclose(r.gz);
    return NULL;
}
