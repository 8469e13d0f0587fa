/*
 * configs/events_read.c: the event-file reader (tapeflow/events.h). Files are untrusted
 * input: every length is checked against what is left of its record before it is used, a
 * record may not claim more than TFL_EVENT_MAX_RECORD bytes nor more than the file holds
 * (so a damaged length never sizes an allocation), and both masked CRC-32C of each record
 * are verified before its protobuf is decoded.
 *
 * Decoded: Event {wall_time 1, step 2, file_version 3, summary 5, session_log 7 {status 1,
 * msg 3}}; Summary.Value {tag 1, simple_value 2, histo 5, tensor 8, metadata 9 {plugin_data
 * 1 {plugin_name 1}}}; HistogramProto {1..5, bucket_limit 6, bucket 7: packed or not};
 * TensorProto {dtype 1, tensor_shape 2 {dim 2 {size 1}}, tensor_content 4, float_val 5,
 * double_val 6, string_val 8}. Other fields are skipped; what is neither a scalar, a
 * histogram, a text, a file version nor a session log is TFL_EVENT_OTHER.
 */
#include "core_api/module_api.h"
#include "io/io_api.h"

#include <tapeflow/events.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

struct tfl_event_reader {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    FILE *f;
    const unsigned char *mem;
    size_t mem_n;
    int64_t size;            /* the source's bytes (a file's at open; it may grow) */
    int64_t pos;             /* bytes consumed */
    char *name;              /* the path, or "<memory>" */
    unsigned char *rec;      /* the current record's data and its CRC */
    size_t rec_cap;
    int64_t record;          /* index of the current record */
    int64_t rec_offset;
    int64_t truncated;
    bool done;
    /* the current event, while its summary's values are handed out */
    double wall;
    int64_t step;
    pb_in summary;
    bool in_summary;
    char *str;               /* tag, plugin and text copies (NUL-terminated) */
    size_t str_cap;
    double *hist;            /* bucket limits then counts */
    size_t hist_cap;
};

static bool alive(const tfl_event_reader *r, const char *what)
{
    return tfl__obj_check(r->ctx, &r->obj, TFL__MAGIC_EVREADER, what);
}

static tfl_status data_loss(tfl_event_reader *r, const char *what)
{
    r->done = true;
    r->in_summary = false;
    return tfl__set_error(r->ctx, TFL_DATA_LOSS, "event file '%.256s': record %lld at offset "
                          "%lld: %s", r->name, (long long)r->record, (long long)r->rec_offset,
                          what);
}

/* up to n bytes from the source; returns how many */
static size_t src_read(tfl_event_reader *r, void *dst, size_t n)
{
    size_t got;
    if (r->f) {
        got = fread(dst, 1, n, r->f);
    } else {
        size_t left = r->mem_n - (size_t)r->pos;
        got = n < left ? n : left;
        if (got) memcpy(dst, r->mem + r->pos, got);
    }
    r->pos += (int64_t)got;
    return got;
}

static int64_t src_left(tfl_event_reader *r)
{
    if (r->f) {
        struct stat sb;
        if (fstat(fileno(r->f), &sb) == 0 && sb.st_size > r->size) r->size = sb.st_size;
    }
    return r->size - r->pos;
}

/* ---- values ------------------------------------------------------------------------------ */

/* copies n bytes to the string scratch at *at (room is made per record), NUL-terminated */
static const char *keep_str(tfl_event_reader *r, size_t *at, const unsigned char *s, size_t n)
{
    char *d = r->str + *at;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    *at += n + 1;
    return d;
}

static bool room_hist(tfl_event_reader *r, size_t n)
{
    if (n <= r->hist_cap) return true;
    double *h = tfl__host_alloc(r->ctx, n * sizeof(double), 64);
    if (!h) return false;
    tfl__host_free(r->ctx, r->hist);
    r->hist = h;
    r->hist_cap = n;
    return true;
}

/* the numbers of a TensorProto: one of its sources */
typedef struct numbers {
    const unsigned char *data; /* packed little-endian elements */
    size_t count, width;       /* width 4: float32/int32, 8: float64/int64 */
    bool is_float;
    double one;                /* an unpacked single value */
    bool has_one;
} numbers;

static double number_at(const numbers *nb, size_t i)
{
    if (!nb->data) return nb->one;
    const unsigned char *p = nb->data + i * nb->width;
    if (nb->width == 8) {
        uint64_t u = pb_get_u64le(p);
        return nb->is_float ? pb_as_double(u) : (double)(int64_t)u;
    }
    uint32_t u = pb_get_u32le(p);
    return nb->is_float ? (double)pb_as_float(u) : (double)(int32_t)u;
}

static void set_packed(numbers *nb, const pb_field *f, size_t width, bool is_float)
{
    if (f->len % width) return; /* a ragged packed field: not numbers (classified OTHER) */
    nb->data = f->data;
    nb->count = f->len / width;
    nb->width = width;
    nb->is_float = is_float;
}

/* A TensorProto as a scalar, histogram or text. 0: decoded, -1: malformed. */
static int decode_tensor(tfl_event_reader *r, const pb_field *tf, tfl_event *ev, size_t *at)
{
    pb_in in = {tf->data, tf->data + tf->len};
    pb_field f;
    int rc;
    uint64_t dtype = 0;
    int rank = 0;
    int64_t dims[2] = {0, 0};
    numbers nb = {0};
    const unsigned char *str = NULL;
    size_t str_len = 0, n_str = 0;
    while ((rc = pb_next(&in, &f)) == 1) {
        if (f.field == 1 && f.wire == PB_VARINT) {
            dtype = f.u;
        } else if (f.field == 2 && f.wire == PB_LEN) {
            pb_in sh = {f.data, f.data + f.len};
            pb_field d;
            int rs;
            rank = 0;
            while ((rs = pb_next(&sh, &d)) == 1) {
                if (d.field != 2 || d.wire != PB_LEN) continue;
                pb_in dim = {d.data, d.data + d.len};
                pb_field s;
                int64_t size = 0;
                int rd;
                while ((rd = pb_next(&dim, &s)) == 1)
                    if (s.field == 1 && s.wire == PB_VARINT) size = (int64_t)s.u;
                if (rd < 0) return -1;
                if (rank < 2) dims[rank] = size;
                rank++;
            }
            if (rs < 0) return -1;
        } else if (f.field == 4 && f.wire == PB_LEN) {
            if (dtype == 1) set_packed(&nb, &f, 4, true);       /* DT_FLOAT */
            else if (dtype == 2) set_packed(&nb, &f, 8, true);  /* DT_DOUBLE */
            else if (dtype == 3) set_packed(&nb, &f, 4, false); /* DT_INT32 */
            else if (dtype == 9) set_packed(&nb, &f, 8, false); /* DT_INT64 */
        } else if (f.field == 5 || f.field == 6) {             /* float_val, double_val */
            size_t width = f.field == 5 ? 4 : 8;
            if (f.wire == PB_LEN) set_packed(&nb, &f, width, true);
            else if (f.wire == (width == 4 ? PB_I32 : PB_I64)) {
                nb.one = width == 4 ? (double)pb_as_float(f.u) : pb_as_double(f.u);
                nb.has_one = true;
            }
        } else if (f.field == 8 && f.wire == PB_LEN) {
            if (n_str++ == 0) {
                str = f.data;
                str_len = f.len;
            }
        }
    }
    if (rc < 0) return -1;
    size_t count = nb.data ? nb.count : nb.has_one ? 1 : 0;
    bool text = dtype == 7 || !strcmp(ev->plugin, "text");
    bool histo = !text && (!strcmp(ev->plugin, "histograms") || (rank == 2 && dims[1] == 3));
    if (text) {
        ev->kind = TFL_EVENT_TEXT;
        ev->text = keep_str(r, at, str, str ? str_len : 0);
        ev->text_len = str ? str_len : 0;
    } else if (histo && count % 3 == 0) {
        size_t k = count / 3;
        if (!room_hist(r, 2 * k + 2)) return -2;
        double num = 0;
        for (size_t i = 0; i < k; i++) {
            r->hist[i] = number_at(&nb, 3 * i + 1);
            r->hist[k + i] = number_at(&nb, 3 * i + 2);
            num += r->hist[k + i];
        }
        ev->kind = TFL_EVENT_HISTOGRAM;
        ev->histo = (tfl_histogram){.min = k ? number_at(&nb, 0) : 0,
                                    .max = k ? r->hist[k - 1] : 0, .num = num,
                                    .sum = NAN, .sum_squares = NAN, .n_buckets = (int64_t)k,
                                    .bucket_limit = r->hist, .bucket = r->hist + k};
    } else if (count == 1 && (rank == 0 || !strcmp(ev->plugin, "scalars"))) {
        ev->kind = TFL_EVENT_SCALAR;
        ev->value = number_at(&nb, 0);
    }
    return 0;
}

/* HistogramProto. 0: decoded, -1: malformed, -2: out of memory. */
static int decode_histo(tfl_event_reader *r, const pb_field *hf, tfl_event *ev)
{
    size_t n[2] = {0, 0};
    pb_field f;
    int rc;
    double head[5] = {0, 0, 0, 0, 0};
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        pb_in in = {hf->data, hf->data + hf->len};
        size_t at[2] = {0, 0};
        if (pass == 1 && !room_hist(r, n[0] + n[1] + 2)) return -2;
        while ((rc = pb_next(&in, &f)) == 1) {
            if (f.field >= 1 && f.field <= 5 && f.wire == PB_I64) {
                head[f.field - 1] = pb_as_double(f.u);
            } else if (f.field == 6 || f.field == 7) {
                int which = (int)f.field - 6;
                if (f.wire == PB_LEN && f.len % 8) return -1;
                size_t add = f.wire == PB_LEN ? f.len / 8 : f.wire == PB_I64 ? 1 : 0;
                if (pass == 0) {
                    n[which] += add;
                    continue;
                }
                double *dst = r->hist + (which ? n[0] : 0) + at[which];
                if (f.wire == PB_LEN)
                    for (size_t i = 0; i < add; i++) dst[i] = pb_as_double(pb_get_u64le(f.data + 8 * i));
                else if (add)
                    dst[0] = pb_as_double(f.u);
                at[which] += add;
            }
        }
        if (rc < 0) return -1;
    }
    if (n[0] != n[1]) return -1;
    ev->kind = TFL_EVENT_HISTOGRAM;
    ev->histo = (tfl_histogram){.min = head[0], .max = head[1], .num = head[2], .sum = head[3],
                                .sum_squares = head[4], .n_buckets = (int64_t)n[0],
                                .bucket_limit = r->hist, .bucket = r->hist + n[0]};
    return 0;
}

/* One Summary.Value into ev. */
static tfl_status decode_value(tfl_event_reader *r, const pb_field *vf, tfl_event *ev)
{
    pb_in in = {vf->data, vf->data + vf->len};
    pb_field f, simple = {0}, histo = {0}, tensor = {0};
    bool has_simple = false, has_histo = false, has_tensor = false;
    size_t at = 0;
    int rc;
    ev->tag = ev->plugin = ev->text = "";
    while ((rc = pb_next(&in, &f)) == 1) {
        if (f.field == 1 && f.wire == PB_LEN) {
            ev->tag = keep_str(r, &at, f.data, f.len);
        } else if (f.field == 2 && f.wire == PB_I32) {
            simple = f;
            has_simple = true;
        } else if (f.field == 5 && f.wire == PB_LEN) {
            histo = f;
            has_histo = true;
        } else if (f.field == 8 && f.wire == PB_LEN) {
            tensor = f;
            has_tensor = true;
        } else if (f.field == 9 && f.wire == PB_LEN) {
            pb_in m = {f.data, f.data + f.len};
            pb_field g;
            int rm;
            while ((rm = pb_next(&m, &g)) == 1) {
                if (g.field != 1 || g.wire != PB_LEN) continue;
                pb_in pd = {g.data, g.data + g.len};
                pb_field h;
                int rp;
                while ((rp = pb_next(&pd, &h)) == 1)
                    if (h.field == 1 && h.wire == PB_LEN) ev->plugin = keep_str(r, &at, h.data, h.len);
                if (rp < 0) return data_loss(r, "malformed plugin data");
            }
            if (rm < 0) return data_loss(r, "malformed summary metadata");
        }
    }
    if (rc < 0) return data_loss(r, "malformed Summary.Value");
    ev->kind = TFL_EVENT_OTHER;
    int st = 0;
    if (has_simple) {
        ev->kind = TFL_EVENT_SCALAR;
        ev->value = (double)pb_as_float(simple.u);
    } else if (has_histo) {
        st = decode_histo(r, &histo, ev);
    } else if (has_tensor) {
        st = decode_tensor(r, &tensor, ev, &at);
    }
    if (st == -2)
        return tfl__set_error(r->ctx, TFL_RESOURCE_EXHAUSTED, "event file '%.256s': out of memory "
                              "decoding record %lld", r->name, (long long)r->record);
    if (st < 0) return data_loss(r, has_histo ? "malformed HistogramProto" : "malformed TensorProto");
    return TFL_OK;
}

/* ---- records ----------------------------------------------------------------------------- */

/* Reads the next record into r->rec. TFL_OK, OUT_OF_RANGE (end, maybe truncated), DATA_LOSS. */
static tfl_status read_record(tfl_event_reader *r, size_t *len)
{
    unsigned char head[12];
    r->rec_offset = r->pos;
    size_t got = src_read(r, head, sizeof head);
    if (got < sizeof head) {
        r->done = true;
        r->truncated = (int64_t)got;
        if (got)
            tfl__log(r->ctx, TFL_LOG_WARNING, "event file '%.256s': the last record (offset %lld) "
                     "is cut short: %zu of 12 header bytes", r->name, (long long)r->rec_offset, got);
        return TFL_OUT_OF_RANGE;
    }
    uint64_t n = pb_get_u64le(head);
    uint32_t want = pb_get_u32le(head + 8), crc = tfl__crc32c_mask(tfl__crc32c(0, head, 8));
    if (want != crc) {
        char msg[96];
        snprintf(msg, sizeof msg, "failed header crc32 check (stored 0x%08x, computed 0x%08x)",
                 want, crc);
        return data_loss(r, msg);
    }
    if (n > TFL_EVENT_MAX_RECORD) {
        char msg[96];
        snprintf(msg, sizeof msg, "a length of %llu bytes (at most %d)", (unsigned long long)n,
                 TFL_EVENT_MAX_RECORD);
        return data_loss(r, msg);
    }
    int64_t left = src_left(r);
    if ((int64_t)n + 4 > left) { /* cut short: tolerated (a writer may still be writing) */
        r->done = true;
        r->truncated = 12 + (left > 0 ? left : 0);
        tfl__log(r->ctx, TFL_LOG_WARNING, "event file '%.256s': the last record (offset %lld) is "
                 "cut short: %lld of %llu bytes", r->name, (long long)r->rec_offset,
                 (long long)r->truncated, (unsigned long long)n + 16);
        return TFL_OUT_OF_RANGE;
    }
    /* room for the data and its CRC, and for the strings decoded from it */
    if (n + 4 > r->rec_cap) {
        size_t cap = (size_t)n + 4 < 4096 ? 4096 : (size_t)n + 4;
        unsigned char *b = tfl__host_alloc(r->ctx, cap, 64);
        char *s = tfl__host_alloc(r->ctx, cap + 8, 1);
        if (!b || !s) {
            tfl__host_free(r->ctx, b);
            tfl__host_free(r->ctx, s);
            return tfl__set_error(r->ctx, TFL_RESOURCE_EXHAUSTED, "event file '%.256s': cannot "
                                  "hold a record of %llu bytes", r->name, (unsigned long long)n);
        }
        tfl__host_free(r->ctx, r->rec);
        tfl__host_free(r->ctx, r->str);
        r->rec = b;
        r->str = s;
        r->rec_cap = cap;
        r->str_cap = cap + 8;
    }
    got = src_read(r, r->rec, (size_t)n + 4);
    if (got < n + 4) { /* shrank under us */
        r->done = true;
        r->truncated = 12 + (int64_t)got;
        return TFL_OUT_OF_RANGE;
    }
    want = pb_get_u32le(r->rec + n);
    crc = tfl__crc32c_mask(tfl__crc32c(0, r->rec, (size_t)n));
    if (want != crc) {
        char msg[96];
        snprintf(msg, sizeof msg, "failed event crc32 check (stored 0x%08x, computed 0x%08x)",
                 want, crc);
        return data_loss(r, msg);
    }
    *len = (size_t)n;
    return TFL_OK;
}

tfl_status tfl_event_reader_next(tfl_event_reader *r, tfl_event *ev)
{
    if (!r) return TFL_INVALID_ARGUMENT;
    if (!alive(r, "tfl_event_reader_next")) return TFL_MISUSE;
    TFL_CHECK(r->ctx, ev, TFL_INVALID_ARGUMENT, "tfl_event_reader_next: ev is NULL");
    for (;;) {
        if (r->in_summary) {
            pb_field f;
            int rc;
            while ((rc = pb_next(&r->summary, &f)) == 1) {
                if (f.field != 1 || f.wire != PB_LEN) continue;
                *ev = (tfl_event){.wall_time = r->wall, .step = r->step, .record = r->record,
                                  .offset = r->rec_offset};
                return decode_value(r, &f, ev);
            }
            r->in_summary = false;
            if (rc < 0) return data_loss(r, "malformed Summary");
        }
        if (r->done) return TFL_OUT_OF_RANGE;
        size_t n = 0;
        r->record++;
        tfl_status st = read_record(r, &n);
        if (st == TFL_OUT_OF_RANGE) r->record--;
        if (st != TFL_OK) return st;
        pb_in in = {r->rec, r->rec + n};
        pb_field f, payload = {0};
        int rc;
        r->wall = 0;
        r->step = 0;
        while ((rc = pb_next(&in, &f)) == 1) {
            if (f.field == 1 && f.wire == PB_I64) r->wall = pb_as_double(f.u);
            else if (f.field == 2 && f.wire == PB_VARINT) r->step = (int64_t)f.u;
            else if ((f.field == 3 || f.field == 5 || f.field == 7) && f.wire == PB_LEN) payload = f;
            else if (f.field >= 3 && f.field <= 9) payload = (pb_field){.field = f.field};
        }
        if (rc < 0) return data_loss(r, "malformed Event");
        *ev = (tfl_event){.kind = TFL_EVENT_OTHER, .wall_time = r->wall, .step = r->step,
                          .tag = "", .plugin = "", .text = "", .record = r->record,
                          .offset = r->rec_offset};
        size_t at = 0;
        if (payload.field == 3 && payload.data) {
            ev->kind = TFL_EVENT_FILE_VERSION;
            ev->text = keep_str(r, &at, payload.data, payload.len);
            ev->text_len = payload.len;
        } else if (payload.field == 7 && payload.data) {
            pb_in s = {payload.data, payload.data + payload.len};
            ev->kind = TFL_EVENT_SESSION_LOG;
            while ((rc = pb_next(&s, &f)) == 1) {
                if (f.field == 1 && f.wire == PB_VARINT) ev->session_status = (int)(f.u & 0xff);
                else if (f.field == 3 && f.wire == PB_LEN) {
                    at = 0;
                    ev->text = keep_str(r, &at, f.data, f.len);
                    ev->text_len = f.len;
                }
            }
            if (rc < 0) return data_loss(r, "malformed SessionLog");
        } else if (payload.field == 5 && payload.data) {
            r->summary = (pb_in){payload.data, payload.data + payload.len};
            r->in_summary = true;
            continue; /* its values, one event each (a summary of none yields nothing) */
        }
        return TFL_OK;
    }
}

/* ---- open, close ------------------------------------------------------------------------- */

static void free_reader(tfl_event_reader *r)
{
    tfl_ctx *ctx = r->ctx;
    if (r->f) fclose(r->f);
    r->f = NULL;
    tfl__host_free(ctx, r->name);
    tfl__host_free(ctx, r->rec);
    tfl__host_free(ctx, r->str);
    tfl__host_free(ctx, r->hist);
    r->name = NULL;
    r->rec = NULL;
    r->str = NULL;
    r->hist = NULL;
    tfl__obj_retire(ctx, &r->obj);
}

static void free_obj(tfl__ctx_obj *obj)
{
    free_reader((tfl_event_reader *)(void *)obj);
}

static tfl_event_reader *reader_new(tfl_ctx *ctx, const char *name)
{
    tfl_event_reader *r = tfl__obj_new(ctx, sizeof *r, TFL__MAGIC_EVREADER, free_obj);
    if (!r) return NULL;
    r->ctx = ctx;
    r->record = -1;
    r->name = tfl__strdup(ctx, name);
    if (!r->name) {
        free_reader(r);
        return NULL;
    }
    return r;
}

tfl_event_reader *tfl_event_reader_open(tfl_ctx *ctx, const char *path)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, path, NULL, TFL_INVALID_ARGUMENT, "tfl_event_reader_open: the path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        tfl__set_error(ctx, e == ENOENT ? TFL_NOT_FOUND : TFL_FAILED_PRECONDITION,
                       "tfl_event_reader_open: cannot open '%.256s': %s", path, strerror(e));
        return NULL;
    }
    tfl_event_reader *r = reader_new(ctx, path);
    if (!r) {
        fclose(f);
        return NULL;
    }
    r->f = f;
    struct stat sb;
    r->size = fstat(fileno(f), &sb) == 0 ? (int64_t)sb.st_size : 0;
    return r;
}

tfl_event_reader *tfl_event_reader_from_memory(tfl_ctx *ctx, const void *data, size_t n)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, data || n == 0, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_event_reader_from_memory: data is NULL for %zu bytes", n);
    tfl_event_reader *r = reader_new(ctx, "<memory>");
    if (!r) return NULL;
    r->mem = data;
    r->mem_n = n;
    r->size = (int64_t)n;
    return r;
}

int64_t tfl_event_reader_truncated(const tfl_event_reader *r)
{
    return r && alive(r, "tfl_event_reader_truncated") ? r->truncated : 0;
}

void tfl_event_reader_close(tfl_event_reader *r)
{
    if (r && alive(r, "tfl_event_reader_close")) free_reader(r);
}
