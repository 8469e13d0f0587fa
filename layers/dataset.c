/*
 * layers/dataset.c: tfl_dataset: a view of a shared example store (dataset_internal.h),
 * batching, the per-epoch Philox shuffle, the conversion of one batch to float32 with the
 * normalisation, splits and moments. The loaders are in dataset_io.c (IDX), dataset_csv.c
 * (CSV) and dataset_arrays.c (in-memory tensors).
 */
#include "dataset_internal.h"


#include <ctype.h>
#include <math.h>

#define DEFAULT_BATCH 32

struct tfl_dataset {
    tfl__ctx_obj obj;       /* first: freed with the ctx if the caller has not */
    tfl_ctx *ctx;
    tfl__ds_store *store;   /* shared with splits */
    int64_t begin;          /* first example of the store in this view */
    int64_t n;              /* examples in this view */
    float scale, offset;    /* x = raw*scale + offset, then (x - mean) * inv_std */
    float *mean;            /* feat values, or NULL (0) */
    float *inv_std;         /* feat values, or NULL (1) */
    float lut[256];         /* byte stores: raw*scale + offset for every byte */
    int64_t batch;          /* examples per batch */
    bool shuffle, drop_remainder;
    uint64_t seed;          /* the shuffle's seed (0 resolved to the ctx seed) */
    uint64_t epoch;
    int64_t pos;            /* next example of the epoch (index into the order) */
    int64_t *perm;          /* n indices when shuffling, else NULL */
    int shard_index;        /* this shard of every global batch (tfl_dataset_shard) */
    int shard_count;        /* 1: no sharding */
    tfl__ds_upload *up;     /* batches for a device (dataset_upload.c), or NULL */
};

/* ---- store ------------------------------------------------------------------------------- */

tfl__ds_store *tfl__ds_store_new(tfl_ctx *ctx, tfl__ds_kind kind, int64_t n, int rank,
                                 const int64_t *shape, bool labelled)
{
    return tfl__ds_store_adopt(ctx, kind, n, rank, shape, labelled, NULL);
}

tfl__ds_store *tfl__ds_store_adopt(tfl_ctx *ctx, tfl__ds_kind kind, int64_t n, int rank,
                                   const int64_t *shape, bool labelled, void *x)
{
    if (!(rank >= 0 && rank < TFL_MAX_RANK)) {
        tfl__host_free(ctx, x);
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "Dataset: an example has rank %d; at most %d is supported", rank,
                       TFL_MAX_RANK - 1);
        return NULL;
    }
    int64_t feat = 1;
    for (int i = 0; i < rank; i++) {
        if (!(shape[i] >= 0 && (shape[i] == 0 || feat <= INT64_MAX / 8 / shape[i]))) {
            tfl__host_free(ctx, x);
            tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "Dataset: bad example dimension %lld",
                           (long long)shape[i]);
            return NULL;
        }
        feat *= shape[i];
    }
    size_t esize = kind == TFL__DS_U8 ? 1 : sizeof(float);
    if (!(n >= 0 && (feat == 0 || n <= (int64_t)(SIZE_MAX / 2 / esize) / feat))) {
        tfl__host_free(ctx, x);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                       "Dataset: %lld examples of %lld elements are too many", (long long)n,
                       (long long)feat);
        return NULL;
    }
    tfl__ds_store *s = tfl__calloc(ctx, sizeof *s);
    if (!s) {
        tfl__host_free(ctx, x);
        return NULL;
    }
    s->refs = 1;
    s->ctx = ctx;
    s->kind = kind;
    s->n = n;
    s->feat = feat;
    s->rank = rank;
    if (rank > 0) memcpy(s->shape, shape, sizeof(int64_t) * (size_t)rank);
    size_t xbytes = (size_t)n * (size_t)feat * esize;
    s->x = x ? x : tfl__host_alloc(ctx, xbytes ? xbytes : 1, TFL_ALIGN);
    if (labelled) s->y = tfl__host_alloc(ctx, n ? (size_t)n * sizeof(int32_t) : 1, 16);
    if (!s->x || (labelled && !s->y)) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                       "Dataset: out of host memory for %lld examples (%zu bytes)", (long long)n,
                       xbytes);
        tfl__ds_store_release(s);
        return NULL;
    }
    return s;
}

tfl__ds_store *tfl__ds_store_text(tfl_ctx *ctx, struct tfl__ds_text *t, int64_t n,
                                  int64_t context)
{
    tfl__ds_store *s = tfl__calloc(ctx, sizeof *s);
    if (!s) {
        tfl__ds_text_free(t);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "Dataset: out of host memory");
        return NULL;
    }
    s->refs = 1;
    s->ctx = ctx;
    s->kind = TFL__DS_TEXT;
    s->n = n;
    s->feat = context;
    s->rank = 1;
    s->shape[0] = context;
    s->text = t;
    s->num_classes = tfl__ds_text_vocab(t, NULL);
    return s;
}

void tfl__ds_store_release(tfl__ds_store *s)
{
    if (!s || --s->refs > 0) return;
    tfl__ds_text_free(s->text);
    tfl__host_free(s->ctx, s->x);
    tfl__host_free(s->ctx, s->y);
    tfl__host_free(s->ctx, s->t);
    tfl__host_free(s->ctx, s);
}

bool tfl__ds_store_add_targets(tfl__ds_store *s, int64_t tdim, int trank)
{
    /* tdim is a column count or a tensor dim: the examples' own bound (SIZE_MAX / 2 / 4
     * elements) is checked for n * tdim as for the features */
    if (!(tdim >= 1 && s->n <= (int64_t)(SIZE_MAX / 2 / sizeof(float)) / tdim)) {
        tfl__set_error(s->ctx, TFL_RESOURCE_EXHAUSTED,
                       "Dataset: %lld examples of %lld targets are too many", (long long)s->n,
                       (long long)tdim);
        return false;
    }
    size_t bytes = (size_t)s->n * (size_t)tdim * sizeof(float);
    s->t = tfl__host_alloc(s->ctx, bytes ? bytes : 1, 16);
    if (!s->t) {
        tfl__set_error(s->ctx, TFL_RESOURCE_EXHAUSTED,
                       "Dataset: out of host memory for %lld targets (%zu bytes)",
                       (long long)s->n * (long long)tdim, bytes);
        return false;
    }
    s->tdim = tdim;
    s->trank = trank;
    return true;
}

void tfl__ds_store_count_classes(tfl__ds_store *s)
{
    int32_t mx = -1;
    if (s->y)
        for (int64_t i = 0; i < s->n; i++)
            if (s->y[i] > mx) mx = s->y[i];
    s->num_classes = mx + 1;
}

/* ---- dataset records ------------------------------------------------------------------------ */

static void fill_lut(tfl_dataset *ds)
{
    for (int v = 0; v < 256; v++) ds->lut[v] = (float)v * ds->scale + ds->offset;
}

static float default_scale(const tfl__ds_store *s)
{
    return s->kind == TFL__DS_U8 ? 1.0f / 255.0f : 1.0f;
}

/* tfl_ctx_free's call for a dataset still alive. */
static void free_obj(tfl__ctx_obj *obj)
{
    tfl_dataset_free((tfl_dataset *)obj);
}

static tfl_dataset *view_new(tfl_ctx *ctx, tfl__ds_store *s, int64_t begin, int64_t n,
                             float scale, float offset)
{
    tfl_dataset *ds = tfl__obj_new(ctx, sizeof *ds, TFL__MAGIC_DATASET, free_obj);
    if (!ds) return NULL;
    ds->ctx = ctx;
    ds->store = s;
    s->refs++;
    ds->begin = begin;
    ds->n = n;
    ds->scale = scale != 0.0f ? scale : default_scale(s);
    ds->offset = offset;
    ds->batch = DEFAULT_BATCH;
    ds->shard_count = 1;
    fill_lut(ds);
    return ds;
}

bool tfl__dataset_opts_check(tfl_ctx *ctx, const char *who, const tfl_dataset_opts *o,
                             tfl__ds_src src)
{
    if (!o) return true;
    TFL_CHECK_RET(ctx, isfinite(o->scale), false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.scale is %g; it must be finite (0: the default)", who,
                  (double)o->scale);
    TFL_CHECK_RET(ctx, isfinite(o->offset), false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.offset is %g; it must be finite", who, (double)o->offset);
    TFL_CHECK_RET(ctx, o->label_kind == TFL_LABEL_CLASS || o->label_kind == TFL_LABEL_VALUE,
                  false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.label_kind is %d; expected TFL_LABEL_CLASS (0) or "
                  "TFL_LABEL_VALUE (1)", who, (int)o->label_kind);
    TFL_CHECK_RET(ctx, src != TFL__SRC_IDX || o->label_kind == TFL_LABEL_CLASS, false,
                  TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.label_kind TFL_LABEL_VALUE applies to CSV files and arrays; "
                  "IDX labels are class indices", who);
    TFL_CHECK_RET(ctx, !(o->no_labels && o->label_kind == TFL_LABEL_VALUE), false,
                  TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.no_labels and opts.label_kind TFL_LABEL_VALUE contradict each "
                  "other (no labels, or value targets?)", who);
    TFL_CHECK_RET(ctx, o->label_count >= 0, false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.label_count is %d; expected >= 0 (0: 1)", who, o->label_count);
    TFL_CHECK_RET(ctx, o->label_count <= 1 || o->label_kind == TFL_LABEL_VALUE, false,
                  TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.label_count is %d, but class labels are one column; several "
                  "label columns need label_kind TFL_LABEL_VALUE (real-valued targets)", who,
                  o->label_count);
    TFL_CHECK_RET(ctx, o->num_classes >= 0, false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.num_classes is %d; expected >= 0 (0: any class index)", who,
                  (int)o->num_classes);
    if (src != TFL__SRC_CSV) {
        const char *csv_only = o->header ? "header" : o->label_column ? "label_column"
                             : o->label_name ? "label_name" : o->no_labels ? "no_labels"
                             : o->label_count ? "label_count"
                             : o->delimiter ? "delimiter" : NULL;
        TFL_CHECK_RET(ctx, !csv_only, false, TFL_INVALID_ARGUMENT,
                      "Dataset %s: opts.%s applies to CSV files only; leave it 0", who, csv_only);
        return true;
    }
    unsigned char d = (unsigned char)o->delimiter;
    bool ok = d == 0 || (d != '\n' && d != '\r' && d != '"' && !isdigit(d) && !strchr("+-.eE", d));
    TFL_CHECK_RET(ctx, ok, false, TFL_INVALID_ARGUMENT,
                  "Dataset %s: opts.delimiter is %d ('%c'); expected a separator that is not part of "
                  "a number, a quote or a line end (0: ',')", who, (int)d, isprint(d) ? d : '?');
    return true;
}

tfl_dataset *tfl__dataset_wrap(tfl_ctx *ctx, tfl__ds_store *s, const tfl_dataset_opts *opts)
{
    static const tfl_dataset_opts none = {0};
    if (!opts) opts = &none;
    tfl_dataset *ds = NULL;
    if (!isfinite(opts->scale) || !isfinite(opts->offset))
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "Dataset: scale (%g) and offset (%g) must be finite", (double)opts->scale,
                       (double)opts->offset);
    else
        ds = view_new(ctx, s, 0, s->n, opts->scale, opts->offset);
    tfl__ds_store_release(s); /* the view holds its own reference */
    return ds;
}

/* Whether ds is a live dataset; MISUSE (kept in its ctx) naming `what` for a freed one. */
static bool alive(const tfl_dataset *ds, const char *what)
{
    return tfl__obj_check(ds->ctx, &ds->obj, TFL__MAGIC_DATASET, what);
}

bool tfl__dataset_check(tfl_ctx *ctx, const tfl_dataset *ds, const char *who)
{
    TFL_CHECK_RET(ctx, ds->obj.magic == TFL__MAGIC_DATASET, false, TFL_MISUSE,
                  "%s: the dataset was already freed (use after free)", who);
    TFL_CHECK_RET(ctx, ds->ctx == ctx, false, TFL_MISUSE,
                  "%s: the dataset belongs to another context", who);
    return true;
}

void tfl_dataset_free(tfl_dataset *ds)
{
    if (!ds || !alive(ds, "tfl_dataset_free")) return;
    tfl_ctx *ctx = ds->ctx;
    tfl__ds_store_release(ds->store);
    tfl__host_free(ctx, ds->mean);
    tfl__host_free(ctx, ds->inv_std);
    tfl__host_free(ctx, ds->perm);
    tfl__ds_upload_free(ds->up);
    ds->up = NULL;
    tfl__obj_retire(ctx, &ds->obj); /* unlinks; the record stays readable: a second free is MISUSE */
}

/* ---- order --------------------------------------------------------------------------------- */

/* The high 64 bits of a * b (portable 64x64 -> 128 multiply). */
static uint64_t mulhi64(uint64_t a, uint64_t b)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* The Fisher-Yates shuffle of data.h's top comment, for (seed, epoch). */
static void shuffle_order(int64_t *p, int64_t n, uint64_t seed, uint64_t epoch)
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int64_t i = 0; i < n; i++) p[i] = i;
    for (int64_t i = n - 1; i >= 1; i--) {
        uint64_t u = (uint64_t)i;
        uint32_t ctr[4] = {(uint32_t)u, (uint32_t)(u >> 32), (uint32_t)epoch,
                           (uint32_t)(epoch >> 32)};
        uint32_t r[4];
        tfl__philox4x32_10(ctr, key, r);
        uint64_t bits = (uint64_t)r[0] | ((uint64_t)r[1] << 32);
        int64_t j = (int64_t)mulhi64(bits, u + 1);
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

tfl_status tfl_dataset_reset(tfl_dataset *ds, uint64_t epoch)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_reset")) return TFL_MISUSE;
    ds->epoch = epoch;
    ds->pos = 0;
    if (!ds->shuffle) return TFL_OK;
    if (!ds->perm) {
        ds->perm = tfl__host_alloc(ds->ctx, ds->n ? (size_t)ds->n * sizeof(int64_t) : 1, 64);
        TFL_CHECK(ds->ctx, ds->perm, TFL_RESOURCE_EXHAUSTED,
                  "Dataset: out of host memory for the order of %lld examples", (long long)ds->n);
    }
    shuffle_order(ds->perm, ds->n, ds->seed, epoch);
    return TFL_OK;
}

tfl_status tfl_dataset_seek(tfl_dataset *ds, int64_t batch)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_seek")) return TFL_MISUSE;
    int64_t nb = tfl_dataset_num_batches(ds);
    TFL_CHECK(ds->ctx, batch >= 0 && batch <= nb, TFL_OUT_OF_RANGE, "Dataset seek: batch %lld is "
              "out of range (the epoch has %lld batches)", (long long)batch, (long long)nb);
    ds->pos = batch * ds->batch; /* <= n: no overflow */
    if (ds->pos > ds->n) ds->pos = ds->n;
    return TFL_OK;
}

tfl_status tfl_dataset_batch(tfl_dataset *ds, int64_t batch_size, const tfl_batch_opts *opts)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_batch")) return TFL_MISUSE;
    static const tfl_batch_opts none = {0};
    if (!opts) opts = &none;
    TFL_CHECK(ds->ctx, batch_size >= 1, TFL_INVALID_ARGUMENT,
              "Dataset batch: batch_size must be at least 1, got %lld", (long long)batch_size);
    ds->batch = batch_size;
    ds->shuffle = opts->shuffle;
    ds->drop_remainder = opts->drop_remainder;
    ds->seed = opts->seed != 0 ? opts->seed : tfl__ctx_seed(ds->ctx);
    if (!ds->shuffle) {
        tfl__host_free(ds->ctx, ds->perm);
        ds->perm = NULL;
    }
    return tfl_dataset_reset(ds, 0);
}

/* ---- batches ------------------------------------------------------------------------------- */

/* floor(i·m / c) without overflow (i <= c): shard i of c starts at this row of a global batch
 * of m rows. */
static int64_t shard_row(int64_t m, int i, int c)
{
    return (m / c) * i + (m % c) * i / c; /* (m % c)·i < c² < 2^62 */
}

tfl_status tfl_dataset_shard(tfl_dataset *ds, int index, int count)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_shard")) return TFL_MISUSE;
    TFL_CHECK(ds->ctx, count >= 1, TFL_INVALID_ARGUMENT,
              "Dataset shard: count must be >= 1, got %d (index %d)", count, index);
    TFL_CHECK(ds->ctx, index >= 0 && index < count, TFL_INVALID_ARGUMENT,
              "Dataset shard: index must be in [0, %d) (count %d), got %d", count, count, index);
    ds->shard_index = index;
    ds->shard_count = count;
    return TFL_OK;
}

int tfl_dataset_shard_index(const tfl_dataset *ds)
{
    return ds && alive(ds, "tfl_dataset_shard_index") ? ds->shard_index : -1;
}

int tfl_dataset_shard_count(const tfl_dataset *ds)
{
    return ds && alive(ds, "tfl_dataset_shard_count") ? ds->shard_count : -1;
}

/* Writes example `ex` (a store index) normalised into dst (feat floats). */
static void convert_example(const tfl_dataset *ds, int64_t ex, float *dst)
{
    const tfl__ds_store *s = ds->store;
    const int64_t feat = s->feat;
    if (s->kind == TFL__DS_U8) {
        const uint8_t *src = (const uint8_t *)s->x + (size_t)ex * (size_t)feat;
        for (int64_t j = 0; j < feat; j++) dst[j] = ds->lut[src[j]];
    } else {
        const float *src = (const float *)s->x + (size_t)ex * (size_t)feat;
        const float sc = ds->scale, of = ds->offset;
        for (int64_t j = 0; j < feat; j++) dst[j] = src[j] * sc + of;
    }
    if (ds->mean)
        for (int64_t j = 0; j < feat; j++) dst[j] = (dst[j] - ds->mean[j]) * ds->inv_std[j];
}

/* Gives up a new tensor the caller never saw: an open frame releases it at its pop. */
static void drop(tfl_ctx *ctx, tfl_tensor *t)
{
    if (tfl_frame_depth(ctx) == 0) tfl_tensor_release(t);
}

/* A new tensor on dev (the batch's device) holding host data, registered with the frame:
 * tfl_tensor_new on a device other than the current scope's. */
static tfl_tensor *tensor_on(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int rank,
                             const int64_t *shape, const void *data)
{
    if (!tfl__check_new(ctx, "Dataset next", dtype, rank, shape)) return NULL;
    tfl_tensor *t = tfl__tensor_empty(ctx, dev, dtype, rank, shape);
    if (!t) return NULL;
    size_t bytes = (size_t)t->numel * tfl_dtype_size(dtype);
    if (tfl__dev_host_memory(dev)) memcpy(tfl__tensor_data(t), data, bytes);
    else if (tfl__dev_copy_host(dev, tfl__tensor_data(t), data, bytes, 0) != TFL_OK) return NULL;
    return t;
}

/* The rest of tfl_dataset_next for a dataset of targets: b examples into buf (tx's data on
 * the host, else a host buffer of b * feat floats that this frees) and b * tdim targets. */
static tfl_status next_targets(tfl_dataset *ds, tfl__device *dev, int64_t lo, int64_t b,
                               int64_t m,
                               tfl_tensor *tx, float *buf, bool on_host, tfl_tensor **x,
                               tfl_tensor **y)
{
    tfl_ctx *ctx = ds->ctx;
    const tfl__ds_store *s = ds->store;
    const int64_t k = s->tdim;
    size_t tbytes = (size_t)b * (size_t)k * sizeof(float);
    float *tv = tfl__host_alloc(ctx, tbytes ? tbytes : 1, 16);
    if (!tv) {
        if (!on_host) tfl__host_free(ctx, buf);
        else drop(ctx, tx);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                              "Dataset next: out of host memory for %lld targets (%zu bytes)",
                              (long long)(b * k), tbytes);
    }
    for (int64_t i = 0; i < b; i++) {
        int64_t at = lo + i;
        int64_t ex = ds->begin + (ds->perm ? ds->perm[at] : at);
        convert_example(ds, ex, buf + (size_t)i * (size_t)s->feat);
        memcpy(tv + (size_t)i * (size_t)k, s->t + (size_t)ex * (size_t)k,
               (size_t)k * sizeof(float));
    }
    int64_t shape[TFL_MAX_RANK];
    shape[0] = b;
    for (int i = 0; i < s->rank; i++) shape[i + 1] = s->shape[i];
    if (!on_host) {
        tx = tensor_on(ctx, dev, TFL_DTYPE_FLOAT32, s->rank + 1, shape, buf);
        tfl__host_free(ctx, buf);
    }
    int64_t yshape[2] = {b, k};
    tfl_tensor *ty = tx ? tensor_on(ctx, dev, TFL_DTYPE_FLOAT32, s->trank + 1, yshape, tv) : NULL;
    tfl__host_free(ctx, tv);
    if (!tx || !ty) {
        drop(ctx, tx);
        return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    }
    ds->pos += m;
    *x = tx;
    *y = ty;
    return TFL_OK;
}

/* The rest of tfl_dataset_next for a device with asynchronous uploads (dataset_upload.c):
 * the batch assembled in the upload state's host buffer, then copied. */
static tfl_status next_async(tfl_dataset *ds, tfl__device *dev, int64_t lo, int64_t b, int64_t m,
                             const int64_t *shape, tfl_tensor **x, tfl_tensor **y)
{
    tfl_ctx *ctx = ds->ctx;
    const tfl__ds_store *s = ds->store;
    bool labels = y && s->y, targets = y && s->t;
    size_t xbytes = (size_t)b * (size_t)s->feat * sizeof(float);
    size_t yoff = tfl__ds_upload_offset(xbytes);
    size_t ybytes = labels    ? (size_t)b * sizeof(int32_t)
                    : targets ? (size_t)b * (size_t)s->tdim * sizeof(float)
                              : 0;
    char *buf = tfl__ds_upload_begin(ctx, &ds->up, dev, yoff + ybytes);
    if (!buf) return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    for (int64_t k = 0; k < b; k++) {
        int64_t i = lo + k;
        int64_t ex = ds->begin + (ds->perm ? ds->perm[i] : i);
        convert_example(ds, ex, (float *)(void *)buf + (size_t)k * (size_t)s->feat);
        if (labels) ((int32_t *)(void *)(buf + yoff))[k] = s->y[ex];
        if (targets)
            memcpy(buf + yoff + (size_t)k * (size_t)s->tdim * sizeof(float),
                   s->t + (size_t)ex * (size_t)s->tdim, (size_t)s->tdim * sizeof(float));
    }
    int64_t yshape[2] = {b, s->tdim};
    tfl_status st = tfl__ds_upload_end(ds->up, s->rank + 1, shape,
                                       labels ? TFL_DTYPE_INT32 : TFL_DTYPE_FLOAT32,
                                       labels ? 1 : targets ? s->trank + 1 : 0, yshape, x, y);
    if (st == TFL_OK) ds->pos += m;
    return st;
}

/* The rest of tfl_dataset_next for a text dataset: x and y int32 (b, context), the windows
 * gathered from the mapped corpus into host buffers, then made tensors on dev (synchronous
 * copies: a batch of token ids is small). */
static tfl_status next_text(tfl_dataset *ds, tfl__device *dev, int64_t lo, int64_t b, int64_t m,
                            tfl_tensor **x, tfl_tensor **y)
{
    tfl_ctx *ctx = ds->ctx;
    const tfl__ds_store *s = ds->store;
    const int64_t c = s->feat;
    /* b · c <= the tensor's element bound is checked by tensor_on; the buffers are bounded
     * here first: b <= n windows and c + 1 bytes each come from the corpus */
    TFL_CHECK(ctx, c < INT64_MAX / 8 && (b == 0 || c <= (int64_t)(SIZE_MAX / 16) / b),
              TFL_RESOURCE_EXHAUSTED, "Dataset next: a batch of %lld windows of %lld tokens is "
              "too large", (long long)b, (long long)c);
    size_t xbytes = (size_t)b * (size_t)c * sizeof(int32_t);
    size_t bytes = 2 * xbytes + (size_t)c + 1;
    char *buf = tfl__host_alloc(ctx, bytes, 64);
    TFL_CHECK(ctx, buf, TFL_RESOURCE_EXHAUSTED,
              "Dataset next: out of host memory for a batch (%zu bytes)", bytes);
    int32_t *xv = (int32_t *)(void *)buf, *yv = (int32_t *)(void *)(buf + xbytes);
    uint8_t *scratch = (uint8_t *)buf + 2 * xbytes;
    for (int64_t k = 0; k < b; k++) {
        int64_t i = lo + k;
        int64_t ex = ds->begin + (ds->perm ? ds->perm[i] : i);
        tfl__ds_text_window(s->text, ex, scratch, xv + (size_t)k * (size_t)c,
                            y ? yv + (size_t)k * (size_t)c : NULL);
    }
    int64_t shape[2] = {b, c};
    tfl_tensor *tx = tensor_on(ctx, dev, TFL_DTYPE_INT32, 2, shape, xv);
    tfl_tensor *ty = tx && y ? tensor_on(ctx, dev, TFL_DTYPE_INT32, 2, shape, yv) : NULL;
    tfl__host_free(ctx, buf);
    if (!tx || (y && !ty)) {
        if (tx) drop(ctx, tx);
        return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    }
    ds->pos += m;
    *x = tx;
    if (y) *y = ty;
    return TFL_OK;
}

tfl_status tfl_dataset_next(tfl_dataset *ds, tfl_tensor **x, tfl_tensor **y)
{
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_next")) return TFL_MISUSE;
    return tfl__dataset_next_on(ds, tfl__current_device(ds->ctx), x, y);
}

tfl_status tfl__dataset_next_on(tfl_dataset *ds, tfl__device *dev, tfl_tensor **x,
                                tfl_tensor **y)
{
    if (x) *x = NULL;
    if (y) *y = NULL;
    tfl_ctx *ctx = ds->ctx;
    TFL_CHECK(ctx, x, TFL_INVALID_ARGUMENT, "Dataset next: x must not be NULL");
    int64_t left = ds->n - ds->pos;
    int64_t m = left < ds->batch ? left : ds->batch; /* the global batch's rows */
    if (m <= 0 || (ds->drop_remainder && m < ds->batch)) return TFL_OUT_OF_RANGE;
    int64_t lo = ds->pos, b = m; /* this shard's rows: [lo, lo + b) of the epoch's order */
    if (ds->shard_count > 1) {
        int64_t a = shard_row(m, ds->shard_index, ds->shard_count);
        lo += a;
        b = shard_row(m, ds->shard_index + 1, ds->shard_count) - a;
    }

    const tfl__ds_store *s = ds->store;
    int64_t shape[TFL_MAX_RANK];
    shape[0] = b;
    for (int i = 0; i < s->rank; i++) shape[i + 1] = s->shape[i];
    if (s->text) return next_text(ds, dev, lo, b, m, x, y);
    if (tfl__ds_upload_wanted(dev)) return next_async(ds, dev, lo, b, m, shape, x, y);
    bool on_host = dev == tfl__cpu(ctx);
    float *buf = NULL;
    tfl_tensor *tx = NULL;
    if (on_host) {
        tx = tfl__tensor_empty(ctx, dev, TFL_DTYPE_FLOAT32, s->rank + 1, shape);
        if (!tx) return tfl_ctx_status(ctx);
        buf = tfl__tensor_data(tx);
    } else {
        size_t bytes = (size_t)b * (size_t)s->feat * sizeof(float);
        buf = tfl__host_alloc(ctx, bytes ? bytes : 1, TFL_ALIGN);
        TFL_CHECK(ctx, buf, TFL_RESOURCE_EXHAUSTED,
                  "Dataset next: out of host memory for a batch (%zu bytes)", bytes);
    }
    if (y && s->t) return next_targets(ds, dev, lo, b, m, tx, buf, on_host, x, y);
    int32_t labels_small[256];
    int32_t *labels = NULL;
    if (y && s->y) {
        labels = b <= 256 ? labels_small : tfl__host_alloc(ctx, (size_t)b * sizeof(int32_t), 16);
        if (!labels) {
            if (!on_host) tfl__host_free(ctx, buf);
            else drop(ctx, tx);
            return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                  "Dataset next: out of host memory for %lld labels",
                                  (long long)b);
        }
    }
    for (int64_t k = 0; k < b; k++) {
        int64_t i = lo + k;
        int64_t ex = ds->begin + (ds->perm ? ds->perm[i] : i);
        convert_example(ds, ex, buf + (size_t)k * (size_t)s->feat);
        if (labels) labels[k] = s->y[ex];
    }
    if (!on_host) {
        tx = tensor_on(ctx, dev, TFL_DTYPE_FLOAT32, s->rank + 1, shape, buf);
        tfl__host_free(ctx, buf);
    }
    tfl_tensor *ty = NULL;
    if (tx && labels) ty = tensor_on(ctx, dev, TFL_DTYPE_INT32, 1, &b, labels);
    if (labels && labels != labels_small) tfl__host_free(ctx, labels);
    if (!tx || (labels && !ty)) {
        drop(ctx, tx);
        return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    }
    ds->pos += m;
    *x = tx;
    if (y) *y = ty;
    return TFL_OK;
}

/* ---- properties ------------------------------------------------------------------------------ */

/* A NULL dataset has no context to report to: the properties answer -1, 0, NULL or false. A
 * freed dataset records MISUSE and answers the same (its store may be gone). */
#define ALIVE(ds, what) ((ds) && alive(ds, what))
int64_t tfl_dataset_size(const tfl_dataset *ds) { return ALIVE(ds, "tfl_dataset_size") ? ds->n : -1; }
uint64_t tfl_dataset_epoch(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_epoch") ? ds->epoch : 0;
}
int tfl_dataset_feature_rank(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_feature_rank") ? ds->store->rank : -1;
}
const int64_t *tfl_dataset_feature_shape(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_feature_shape") ? ds->store->shape : NULL;
}
int64_t tfl_dataset_feature_size(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_feature_size") ? ds->store->feat : -1;
}
bool tfl_dataset_has_labels(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_has_labels") &&
           (ds->store->y || ds->store->t || ds->store->text);
}
tfl_label_kind tfl_dataset_label_kind(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_label_kind") && ds->store->t ? TFL_LABEL_VALUE
                                                               : TFL_LABEL_CLASS;
}
int64_t tfl_dataset_target_size(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_target_size") ? ds->store->tdim : -1;
}
int32_t tfl_dataset_num_classes(const tfl_dataset *ds)
{
    return ALIVE(ds, "tfl_dataset_num_classes") ? ds->store->num_classes : 0;
}

int64_t tfl_dataset_num_batches(const tfl_dataset *ds)
{
    if (!ALIVE(ds, "tfl_dataset_num_batches")) return -1;
    /* no n + batch - 1: a batch size near INT64_MAX must not wrap */
    return ds->n / ds->batch + (!ds->drop_remainder && ds->n % ds->batch != 0);
}

/* ---- split and normalisation ----------------------------------------------------------------- */

static tfl_status copy_norm(tfl_dataset *dst, const tfl_dataset *src)
{
    if (!src->mean) return TFL_OK;
    size_t bytes = (size_t)src->store->feat * sizeof(float);
    dst->mean = tfl__host_alloc(dst->ctx, bytes ? bytes : 1, 64);
    dst->inv_std = tfl__host_alloc(dst->ctx, bytes ? bytes : 1, 64);
    TFL_CHECK(dst->ctx, dst->mean && dst->inv_std, TFL_RESOURCE_EXHAUSTED,
              "Dataset: out of host memory for the normalisation (%zu bytes)", 2 * bytes);
    memcpy(dst->mean, src->mean, bytes);
    memcpy(dst->inv_std, src->inv_std, bytes);
    return TFL_OK;
}

tfl_status tfl_dataset_split(tfl_dataset *ds, int64_t n_first, tfl_dataset **first,
                             tfl_dataset **rest)
{
    if (first) *first = NULL;
    if (rest) *rest = NULL;
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_split")) return TFL_MISUSE;
    tfl_ctx *ctx = ds->ctx;
    TFL_CHECK(ctx, first && rest, TFL_INVALID_ARGUMENT, "Dataset split: NULL output");
    TFL_CHECK(ctx, n_first >= 0 && n_first <= ds->n, TFL_INVALID_ARGUMENT,
              "Dataset split: n_first must be in [0, %lld] (the dataset's size), got %lld",
              (long long)ds->n, (long long)n_first);
    tfl_dataset *a = view_new(ctx, ds->store, ds->begin, n_first, ds->scale, ds->offset);
    tfl_dataset *b = a ? view_new(ctx, ds->store, ds->begin + n_first, ds->n - n_first,
                                  ds->scale, ds->offset)
                       : NULL;
    if (!b || copy_norm(a, ds) != TFL_OK || copy_norm(b, ds) != TFL_OK) {
        tfl_dataset_free(a);
        tfl_dataset_free(b);
        return tfl_ctx_status(ctx);
    }
    *first = a;
    *rest = b;
    return TFL_OK;
}

tfl_status tfl_dataset_set_normalization(tfl_dataset *ds, float scale, float offset,
                                         const float *mean, const float *std)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_set_normalization")) return TFL_MISUSE;
    tfl_ctx *ctx = ds->ctx;
    const int64_t feat = ds->store->feat;
    TFL_CHECK(ctx, !ds->store->text, TFL_INVALID_ARGUMENT,
              "Dataset normalization: a text dataset's examples are token ids, never normalised");
    TFL_CHECK(ctx, isfinite(scale) && isfinite(offset), TFL_INVALID_ARGUMENT,
              "Dataset normalization: scale (%g) and offset (%g) must be finite", (double)scale,
              (double)offset);
    for (int64_t j = 0; j < feat; j++) {
        TFL_CHECK(ctx, !mean || isfinite(mean[j]), TFL_INVALID_ARGUMENT,
                  "Dataset normalization: mean[%lld] is %g; it must be finite", (long long)j,
                  (double)mean[j]);
        TFL_CHECK(ctx, !std || (isfinite(std[j]) && std[j] >= 0.0f), TFL_INVALID_ARGUMENT,
                  "Dataset normalization: std[%lld] is %g; it must be finite and >= 0",
                  (long long)j, (double)std[j]);
    }
    float *m = NULL, *is = NULL;
    if (mean || std) {
        size_t bytes = feat ? (size_t)feat * sizeof(float) : 1;
        m = tfl__host_alloc(ctx, bytes, 64);
        is = tfl__host_alloc(ctx, bytes, 64);
        if (!m || !is) {
            tfl__host_free(ctx, m);
            tfl__host_free(ctx, is);
            return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                  "Dataset normalization: out of host memory (%zu bytes)",
                                  2 * bytes);
        }
        for (int64_t j = 0; j < feat; j++) {
            m[j] = mean ? mean[j] : 0.0f;
            is[j] = std && std[j] > 0.0f ? 1.0f / std[j] : 1.0f;
        }
    }
    tfl__host_free(ctx, ds->mean);
    tfl__host_free(ctx, ds->inv_std);
    ds->mean = m;
    ds->inv_std = is;
    ds->scale = scale != 0.0f ? scale : default_scale(ds->store);
    ds->offset = offset;
    fill_lut(ds);
    return TFL_OK;
}

tfl_status tfl_dataset_moments(const tfl_dataset *ds, float *mean, float *std)
{
    if (!ds) return TFL_INVALID_ARGUMENT;
    if (!alive(ds, "tfl_dataset_moments")) return TFL_MISUSE;
    tfl_ctx *ctx = ds->ctx;
    const tfl__ds_store *s = ds->store;
    TFL_CHECK(ctx, !s->text, TFL_INVALID_ARGUMENT,
              "Dataset moments: a text dataset's examples are token ids, not features to "
              "standardize");
    TFL_CHECK(ctx, ds->n > 0, TFL_INVALID_ARGUMENT, "Dataset moments: the dataset is empty");
    size_t bytes = (size_t)s->feat * 2 * sizeof(double);
    double *acc = tfl__host_alloc(ctx, bytes ? bytes : 1, 64);
    TFL_CHECK(ctx, acc, TFL_RESOURCE_EXHAUSTED, "Dataset moments: out of host memory");
    memset(acc, 0, bytes);
    double *sum = acc, *sq = acc + s->feat;
    for (int64_t i = 0; i < ds->n; i++) {
        int64_t ex = ds->begin + i;
        for (int64_t j = 0; j < s->feat; j++) {
            double v = s->kind == TFL__DS_U8
                           ? (double)ds->lut[((const uint8_t *)s->x)[ex * s->feat + j]]
                           : (double)((const float *)s->x)[ex * s->feat + j] * ds->scale +
                                 ds->offset;
            sum[j] += v;
            sq[j] += v * v;
        }
    }
    for (int64_t j = 0; j < s->feat; j++) {
        double mu = sum[j] / (double)ds->n;
        double var = sq[j] / (double)ds->n - mu * mu;
        if (mean) mean[j] = (float)mu;
        if (std) std[j] = (float)sqrt(var > 0.0 ? var : 0.0);
    }
    tfl__host_free(ctx, acc);
    return TFL_OK;
}

int tfl_dataset_text_vocab(const tfl_dataset *ds, uint8_t *bytes)
{
    if (!ALIVE(ds, "tfl_dataset_text_vocab")) return -1;
    TFL_CHECK_RET(ds->ctx, ds->store->text, -1, TFL_INVALID_ARGUMENT,
                  "tfl_dataset_text_vocab: the dataset is not a text dataset");
    return tfl__ds_text_vocab(ds->store->text, bytes);
}
