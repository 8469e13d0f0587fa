/*
 * framework/io/events.c: the TensorBoard event-file writer (tapeflow/summary.h). Each event
 * is encoded straight into the writer's buffer as one TFRecord: the sizes of the nested
 * messages are known before a byte is written, so nothing is encoded twice and a logged
 * scalar costs a clock read, a few dozen byte stores and two CRC-32C of a few bytes.
 *
 * Protobuf fields written (tensorboard/compat/proto/{event,summary,tensor}.proto):
 *   Event: wall_time 1 (double), step 2 (int64), file_version 3, summary 5, session_log 7
 *   Summary: value 1 (repeated Value)
 *   Value: tag 1, simple_value 2 (float), histo 5, tensor 8, metadata 9
 *   HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5 (double), bucket_limit 6,
 *     bucket 7 (packed double)
 *   SummaryMetadata: plugin_data 1 {plugin_name 1}, data_class 4 (DATA_CLASS_TENSOR = 2)
 *   TensorProto: dtype 1 (DT_STRING = 7), tensor_shape 2 (empty: a scalar), string_val 8
 *   SessionLog: status 1 (START = 1)
 */
#include "io_internal.h"
#include "crc32c.h"
#include "pb.h"

#include <tapeflow/summary.h>

#include <tapeflow/files.h>

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_BYTES (1u << 20) /* a write flushes once this much is buffered */
#define TAG_MAX 4096           /* longest tag, bytes */

struct tfl_summary_writer {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    int fd;
    char *path;
    unsigned char *buf; /* encoded records waiting for the next flush */
    size_t len, cap;
    double flush_secs, last_flush;
    double (*clock)(void *user);
    void *clock_user;
    tfl_status failed; /* a failed write: every later call returns it */
    tfl_summary_stats stats;
    double *edges;     /* histogram bucket limits (TensorFlow's default), made on first use */
    double *counts;
    int n_edges;
    void *host;        /* a tensor's elements copied to the host */
    size_t host_cap;
};

static double real_clock(void *user)
{
    (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000) * 1e-6; /* microseconds, as TF */
}

static bool alive(const tfl_summary_writer *w, const char *what)
{
    return tfl__obj_check(w->ctx, &w->obj, TFL__MAGIC_SUMMARY, what);
}

/* ---- the file --------------------------------------------------------------------------- */

static tfl_status write_all(tfl_summary_writer *w, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            w->failed = tfl__set_error(w->ctx, TFL_FAILED_PRECONDITION, "summary writer: writing "
                                       "'%.256s' failed: %s", w->path,
                                       k < 0 ? strerror(errno) : "no progress");
            return w->failed;
        }
        p += k;
        n -= (size_t)k;
        w->stats.bytes_written += k;
    }
    return TFL_OK;
}

static tfl_status flush_now(tfl_summary_writer *w)
{
    if (w->failed) return w->failed;
    tfl_status st = write_all(w, w->buf, w->len);
    w->len = 0; /* on failure what was buffered is dropped: the writer refuses from now on */
    w->last_flush = w->clock(w->clock_user);
    if (st == TFL_OK) w->stats.flushes++;
    return st;
}

/* ---- records ---------------------------------------------------------------------------- */

/* Room for one record of an n-byte event; returns where the event goes, NULL when out of
 * memory (error kept). */
static unsigned char *record_begin(tfl_summary_writer *w, size_t n)
{
    size_t need = w->len + 12 + n + 4;
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < need) cap *= 2;
        unsigned char *b = tfl__grow(w->ctx, w->buf, w->len, cap);
        if (!b) {
            tfl__set_error(w->ctx, TFL_RESOURCE_EXHAUSTED, "summary writer: cannot buffer a "
                           "record of %zu bytes", n);
            return NULL;
        }
        w->buf = b;
        w->cap = cap;
    }
    return w->buf + w->len + 12;
}

/* Frames the n event bytes at record_begin's place: length, masked CRCs. Then flushes when
 * the interval has passed or the buffer is large. */
static tfl_status record_end(tfl_summary_writer *w, size_t n, double now)
{
    unsigned char *rec = w->buf + w->len;
    pb_put_u64le(rec, n);
    pb_put_u32le(rec + 8, tfl__crc32c_mask(tfl__crc32c(0, rec, 8)));
    pb_put_u32le(rec + 12 + n, tfl__crc32c_mask(tfl__crc32c(0, rec + 12, n)));
    w->len += 12 + n + 4;
    w->stats.records++;
    if ((w->flush_secs >= 0 && now - w->last_flush >= w->flush_secs) || w->len >= FLUSH_BYTES)
        return flush_now(w);
    return TFL_OK;
}

/* Event{wall_time, step, <what>}: header bytes, then `what` (body bytes) follows. */
static size_t event_head_size(int64_t step)
{
    return 9 + 1 + pb_varint_size((uint64_t)step);
}
static unsigned char *put_event_head(unsigned char *p, double wall, int64_t step)
{
    p = pb_put_double(p, 1, wall);
    p = pb_put_key(p, 2, PB_VARINT);
    return pb_put_varint(p, (uint64_t)step);
}

/* Starts the record of an event holding one Summary.Value tagged `tag` (tl bytes) whose other
 * fields take `rest` bytes: writes the event's head, the summary's and the value's lengths and
 * the tag, and returns where the value's other fields go (NULL: RESOURCE_EXHAUSTED). *n and
 * *now receive the record's size and wall time, for record_end. */
static unsigned char *begin_value(tfl_summary_writer *w, int64_t step, const char *tag,
                                  size_t tl, size_t rest, size_t *n, double *now)
{
    size_t val = pb_len_size(tl) + rest, sum = pb_len_size(val);
    *now = w->clock(w->clock_user);
    *n = event_head_size(step) + pb_len_size(sum);
    unsigned char *p = record_begin(w, *n);
    if (!p) return NULL;
    p = put_event_head(p, *now, step);
    p = pb_put_len(p, 5, sum);
    p = pb_put_len(p, 1, val);
    return pb_put_bytes(p, 1, tag, tl);
}

/* Common checks of a write; *tag_len receives strlen(tag). */
static tfl_status check_write(tfl_summary_writer *w, const char *who, const char *tag,
                              size_t *tag_len)
{
    if (!w) return TFL_INVALID_ARGUMENT;
    if (!alive(w, who)) return TFL_MISUSE;
    if (w->failed) return w->failed;
    if (tag_len) {
        TFL_CHECK(w->ctx, tag && *tag, TFL_INVALID_ARGUMENT, "%s: the tag is %s", who,
                  tag ? "empty" : "NULL");
        *tag_len = strlen(tag);
        TFL_CHECK(w->ctx, *tag_len <= TAG_MAX, TFL_INVALID_ARGUMENT, "%s: the tag is %zu bytes "
                  "long (at most %d)", who, *tag_len, TAG_MAX);
    }
    return TFL_OK;
}

/* ---- the writer ------------------------------------------------------------------------- */

static void free_writer(tfl_summary_writer *w)
{
    tfl_ctx *ctx = w->ctx;
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    tfl__host_free(ctx, w->path);
    tfl__host_free(ctx, w->buf);
    tfl__host_free(ctx, w->edges);
    tfl__host_free(ctx, w->counts);
    tfl__host_free(ctx, w->host);
    w->path = NULL;
    w->buf = NULL;
    w->edges = w->counts = NULL;
    w->host = NULL;
    tfl__obj_retire(ctx, &w->obj);
}

static void free_obj(tfl__ctx_obj *obj)
{
    tfl_summary_writer *w = (tfl_summary_writer *)(void *)obj;
    if (!w->failed && w->len) flush_now(w);
    free_writer(w);
}

/* Opens <logdir>/events.out.tfevents.<time>.<host>.<pid><suffix>, or with ".1", ".2", ...
 * before the suffix when the name is taken. */
static tfl_status open_file(tfl_summary_writer *w, const char *logdir, const char *suffix,
                            double now)
{
    struct utsname u;
    const char *host = uname(&u) == 0 && u.nodename[0] ? u.nodename : "localhost";
    long long secs = (long long)now;
    size_t cap = strlen(logdir) + strlen(host) + strlen(suffix) + 96;
    w->path = tfl__host_alloc(w->ctx, cap, 1);
    if (!w->path) return tfl__set_error(w->ctx, TFL_RESOURCE_EXHAUSTED, "summary writer: out "
                                        "of memory");
    for (int k = 0; k < 1000; k++) {
        char uniq[16] = "";
        if (k) snprintf(uniq, sizeof uniq, ".%d", k);
        snprintf(w->path, cap, "%s/events.out.tfevents.%010lld.%s.%ld%s%s", logdir, secs, host,
                 (long)getpid(), uniq, suffix);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0) return TFL_OK;
        if (errno != EEXIST) break;
    }
    return tfl__set_error(w->ctx, TFL_FAILED_PRECONDITION, "summary writer: cannot create "
                          "'%.256s': %s", w->path, strerror(errno));
}

tfl_summary_writer *tfl_summary_writer_new(tfl_ctx *ctx, const char *logdir,
                                           const tfl_summary_writer_opts *opts)
{
    if (!ctx) return NULL;
    tfl_summary_writer_opts o = opts ? *opts : (tfl_summary_writer_opts){0};
    TFL_CHECK_RET(ctx, logdir && *logdir, NULL, TFL_INVALID_ARGUMENT, "summary writer: the log "
                  "directory is %s", logdir ? "empty" : "NULL");
    TFL_CHECK_RET(ctx, !isnan(o.flush_secs), NULL, TFL_INVALID_ARGUMENT,
                  "summary writer: flush_secs is NaN");
    const char *suffix = o.filename_suffix ? o.filename_suffix : "";
    TFL_CHECK_RET(ctx, !strchr(suffix, '/') && strlen(suffix) < 256, NULL, TFL_INVALID_ARGUMENT,
                  "summary writer: the filename suffix '%.64s' has a '/' or is too long", suffix);
    if (tfl_make_dirs(ctx, logdir) != TFL_OK) return NULL;
    tfl_summary_writer *w = tfl__obj_new(ctx, sizeof *w, TFL__MAGIC_SUMMARY, free_obj);
    if (!w) return NULL;
    w->ctx = ctx;
    w->fd = -1;
    w->clock = o.clock ? o.clock : real_clock;
    w->clock_user = o.clock_user;
    w->flush_secs = o.flush_secs == 0 ? TFL_SUMMARY_FLUSH_SECS : o.flush_secs;
    double now = w->clock(w->clock_user);
    w->last_flush = now;
    if (open_file(w, logdir, suffix, now) != TFL_OK) {
        free_writer(w);
        return NULL;
    }
    static const char version[] = "brain.Event:2";
    size_t n = event_head_size(0) + pb_len_size(sizeof version - 1);
    unsigned char *p = record_begin(w, n);
    if (p) {
        p = put_event_head(p, now, 0);
        pb_put_bytes(p, 3, version, sizeof version - 1);
    }
    /* the version record goes to the file at once: an existing file is a valid event file */
    if (!p || record_end(w, n, now) != TFL_OK || flush_now(w) != TFL_OK) {
        free_writer(w);
        return NULL;
    }
    return w;
}

const char *tfl_summary_writer_path(const tfl_summary_writer *w)
{
    return w && alive(w, "tfl_summary_writer_path") ? w->path : NULL;
}

tfl_summary_stats tfl_summary_writer_stats(const tfl_summary_writer *w)
{
    tfl_summary_stats s = {0};
    if (w && alive(w, "tfl_summary_writer_stats")) {
        s = w->stats;
        s.buffered = w->len;
    }
    return s;
}

tfl_status tfl_summary_flush(tfl_summary_writer *w)
{
    tfl_status st = check_write(w, "tfl_summary_flush", NULL, NULL);
    return st != TFL_OK ? st : flush_now(w);
}

tfl_status tfl_summary_writer_close(tfl_summary_writer *w)
{
    if (!w) return TFL_OK;
    if (!alive(w, "tfl_summary_writer_close")) return TFL_MISUSE;
    tfl_status st = w->failed ? w->failed : flush_now(w);
    if (st == TFL_OK && close(w->fd) != 0)
        st = tfl__set_error(w->ctx, TFL_FAILED_PRECONDITION, "summary writer: closing '%.256s' "
                            "failed: %s", w->path, strerror(errno));
    w->fd = -1;
    free_writer(w);
    return st;
}

/* ---- events ----------------------------------------------------------------------------- */

tfl_status tfl_summary_scalar(tfl_summary_writer *w, const char *tag, int64_t step, double value)
{
    size_t tl;
    tfl_status st = check_write(w, "tfl_summary_scalar", tag, &tl);
    if (st != TFL_OK) return st;
    size_t n;
    double now;
    unsigned char *p = begin_value(w, step, tag, tl, 5, &n, &now);
    if (!p) return TFL_RESOURCE_EXHAUSTED;
    pb_put_float(p, 2, (float)value);
    return record_end(w, n, now);
}

tfl_status tfl_summary_text(tfl_summary_writer *w, const char *tag, int64_t step, const char *text)
{
    size_t tl;
    tfl_status st = check_write(w, "tfl_summary_text", tag, &tl);
    if (st != TFL_OK) return st;
    TFL_CHECK(w->ctx, text, TFL_INVALID_ARGUMENT, "tfl_summary_text: the text of '%.64s' is "
              "NULL", tag);
    size_t xl = strlen(text);
    static const char plugin[] = "text";
    size_t pdata = pb_len_size(sizeof plugin - 1);
    size_t meta = pb_len_size(pdata) + 2;            /* plugin_data, data_class */
    size_t tensor = 2 + 2 + pb_len_size(xl);         /* dtype, empty shape, string_val */
    size_t n;
    double now;
    unsigned char *p =
        begin_value(w, step, tag, tl, pb_len_size(meta) + pb_len_size(tensor), &n, &now);
    if (!p) return TFL_RESOURCE_EXHAUSTED;
    p = pb_put_len(p, 9, meta);
    p = pb_put_len(p, 1, pdata);
    p = pb_put_bytes(p, 1, plugin, sizeof plugin - 1);
    p = pb_put_key(p, 4, PB_VARINT);
    p = pb_put_varint(p, 2);                          /* DATA_CLASS_TENSOR */
    p = pb_put_len(p, 8, tensor);
    p = pb_put_key(p, 1, PB_VARINT);
    p = pb_put_varint(p, 7);                          /* DT_STRING */
    p = pb_put_len(p, 2, 0);                          /* shape (): a scalar */
    pb_put_bytes(p, 8, text, xl);
    return record_end(w, n, now);
}

tfl_status tfl_summary_session_start(tfl_summary_writer *w, int64_t step)
{
    tfl_status st = check_write(w, "tfl_summary_session_start", NULL, NULL);
    if (st != TFL_OK) return st;
    double now = w->clock(w->clock_user);
    size_t n = event_head_size(step) + pb_len_size(2);
    unsigned char *p = record_begin(w, n);
    if (!p) return TFL_RESOURCE_EXHAUSTED;
    p = put_event_head(p, now, step);
    p = pb_put_len(p, 7, 2);
    p = pb_put_key(p, 1, PB_VARINT);
    pb_put_varint(p, TFL_SESSION_START);
    return record_end(w, n, now);
}

/* ---- histograms ------------------------------------------------------------------------- */

/* TensorFlow's default limits: -DBL_MAX, -1e20.., -1e-12, 0, 1e-12, ..1e20, DBL_MAX (each
 * ±1e-12·1.1^k below 1e20). A value v goes to the first bucket whose limit is > v. */
static tfl_status make_edges(tfl_summary_writer *w)
{
    int half = 0;
    for (double v = 1e-12; v < 1e20; v *= 1.1) half++;
    int n = 2 * (half + 1) + 1;
    w->edges = tfl__host_alloc(w->ctx, sizeof(double) * (size_t)n, 64);
    w->counts = tfl__host_alloc(w->ctx, sizeof(double) * (size_t)n, 64);
    if (!w->edges || !w->counts)
        return tfl__set_error(w->ctx, TFL_RESOURCE_EXHAUSTED, "summary writer: out of memory");
    int k = 0;
    double v = 1e-12;
    for (int i = 0; i < half; i++, v *= 1.1) {
        w->edges[half + 2 + i] = v;  /* positive side, after 0 */
        w->edges[half - i] = -v;     /* negative side, mirrored */
        k++;
    }
    w->edges[0] = -DBL_MAX;
    w->edges[half + 1] = 0.0;
    w->edges[n - 1] = DBL_MAX;
    w->n_edges = n;
    return TFL_OK;
}

/* The first i with edges[i] > v (upper_bound); v finite, so i < n. A guess from the
 * logarithm (the edges grow by 1.1), then exact steps to the answer. */
static int bucket_of(const double *edges, int n, double v)
{
    int half = (n - 3) / 2, g;
    double a = fabs(v);
    double k = a >= 1e-12 ? floor(log(a * 1e12) * 10.492058687312 /* 1 / ln 1.1 */) : -1;
    if (k > half) k = half;
    if (v >= 0) g = half + 2 + (int)k + 1;
    else g = half - (int)k;
    if (g < 0) g = 0;
    if (g > n - 1) g = n - 1;
    while (g > 0 && edges[g - 1] > v) g--;
    while (g < n - 1 && edges[g] <= v) g++;
    return g;
}

static tfl_status write_histogram(tfl_summary_writer *w, const char *who, const char *tag,
                                  size_t tl, int64_t step, const void *data, bool is_f32,
                                  int64_t n)
{
    if (!w->edges && make_edges(w) != TFL_OK) return TFL_RESOURCE_EXHAUSTED;
    (void)who;
    double mn = 0, mx = 0, num = 0, sum = 0, sq = 0;
    memset(w->counts, 0, sizeof(double) * (size_t)w->n_edges);
    for (int64_t i = 0; i < n; i++) {
        double v = is_f32 ? (double)((const float *)data)[i] : ((const double *)data)[i];
        if (!isfinite(v)) continue;
        if (num == 0 || v < mn) mn = v;
        if (num == 0 || v > mx) mx = v;
        num += 1;
        sum += v;
        sq += v * v;
        w->counts[bucket_of(w->edges, w->n_edges, v)] += 1;
    }
    /* TensorFlow's encoding: a run of empty buckets becomes one, with the run's last limit */
    int nb = 0;
    for (int i = 0; i < w->n_edges;) {
        bool empty = w->counts[i] <= 0;
        i++;
        if (empty)
            while (i < w->n_edges && w->counts[i] <= 0) i++;
        nb++;
    }
    if (num == 0) nb = 0;
    size_t packed = 8 * (size_t)nb;
    size_t histo = 5 * 9 + (nb ? 2 * pb_len_size(packed) : 0);
    size_t bytes;
    double now;
    unsigned char *p = begin_value(w, step, tag, tl, pb_len_size(histo), &bytes, &now);
    if (!p) return TFL_RESOURCE_EXHAUSTED;
    p = pb_put_len(p, 5, histo);
    p = pb_put_double(p, 1, mn);
    p = pb_put_double(p, 2, mx);
    p = pb_put_double(p, 3, num);
    p = pb_put_double(p, 4, sum);
    p = pb_put_double(p, 5, sq);
    if (nb) {
        for (int pass = 0; pass < 2; pass++) { /* limits, then counts */
            p = pb_put_len(p, 6 + (unsigned)pass, packed);
            for (int i = 0; i < w->n_edges;) {
                double limit = w->edges[i], count = w->counts[i];
                i++;
                if (count <= 0)
                    while (i < w->n_edges && w->counts[i] <= 0) limit = w->edges[i++];
                uint64_t u;
                double d = pass ? count : limit;
                memcpy(&u, &d, sizeof u);
                p = pb_put_u64le(p, u);
            }
        }
    }
    return record_end(w, bytes, now);
}

tfl_status tfl_summary_histogram(tfl_summary_writer *w, const char *tag, int64_t step,
                                 const double *values, int64_t n)
{
    size_t tl;
    tfl_status st = check_write(w, "tfl_summary_histogram", tag, &tl);
    if (st != TFL_OK) return st;
    TFL_CHECK(w->ctx, n >= 0 && (values || n == 0), TFL_INVALID_ARGUMENT,
              "tfl_summary_histogram: '%.64s': %s (n = %lld)", tag,
              n < 0 ? "a negative count" : "the values are NULL", (long long)n);
    return write_histogram(w, "tfl_summary_histogram", tag, tl, step, values, false, n);
}

tfl_status tfl_summary_histogram_tensor(tfl_summary_writer *w, const char *tag, int64_t step,
                                        const tfl_tensor *t)
{
    size_t tl;
    tfl_status st = check_write(w, "tfl_summary_histogram_tensor", tag, &tl);
    if (st != TFL_OK) return st;
    TFL_CHECK(w->ctx, t, TFL_INVALID_ARGUMENT, "tfl_summary_histogram_tensor: the tensor of "
              "'%.64s' is NULL", tag);
    tfl_dtype dt = tfl_tensor_dtype(t);
    TFL_CHECK(w->ctx, dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64, TFL_UNIMPLEMENTED,
              "tfl_summary_histogram_tensor: '%.64s': dtype %s is not supported (float32, "
              "float64)", tag, tfl_dtype_name(dt));
    int64_t n = tfl_tensor_numel(t);
    size_t bytes = (size_t)n * (dt == TFL_DTYPE_FLOAT32 ? 4 : 8);
    if (bytes > w->host_cap) {
        void *h = tfl__host_alloc(w->ctx, bytes, 64);
        TFL_CHECK(w->ctx, h, TFL_RESOURCE_EXHAUSTED, "tfl_summary_histogram_tensor: '%.64s': "
                  "cannot copy %zu bytes to the host", tag, bytes);
        tfl__host_free(w->ctx, w->host);
        w->host = h;
        w->host_cap = bytes;
    }
    if (n && (st = tfl_tensor_to_host(t, w->host, bytes)) != TFL_OK) return st;
    return write_histogram(w, "tfl_summary_histogram_tensor", tag, tl, step, w->host,
                           dt == TFL_DTYPE_FLOAT32, n);
}
