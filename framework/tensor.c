/*
 * framework/tensor.c: tensor records (pooled in the ctx), storage shared by views,
 * reference counting, frames (the stack of tensors released together), creation from host
 * data and fills, properties, and copies between devices and out to the host. Tensor data is
 * touched directly only on devices whose memory is host memory (tfl__dev_is_host); every
 * other device is reached through its table: the copy and memset slots, and its Identity
 * kernel for strided views.
 */
#include "internal.h"

#include <complex.h>
#include <float.h>
#include <math.h>

/* ---- records ----------------------------------------------------------------------------- */

/*
 * Tensor and storage records come from chunks of RECORDS_PER_CHUNK owned by the ctx and
 * are recycled through free lists, so steady-state ops call no allocator for them, and
 * tfl_ctx_free can release everything, including tensors a caller forgot.
 */
#define RECORDS_PER_CHUNK 64

typedef struct chunk {
    struct chunk *next;
    size_t pad[7]; /* keeps the records 64-byte aligned */
} chunk;

static void *chunk_new(tfl_ctx *ctx, void **list, size_t record_size)
{
    chunk *c = tfl__host_alloc(ctx, sizeof(chunk) + RECORDS_PER_CHUNK * record_size, 64);
    TFL_CHECK_RET(ctx, c, NULL, TFL_RESOURCE_EXHAUSTED, "out of host memory (tensor records)");
    memset(c, 0, sizeof(chunk) + RECORDS_PER_CHUNK * record_size);
    c->next = *list;
    *list = c;
    return c + 1;
}

static tfl_tensor *record_new(tfl_ctx *ctx)
{
    if (TFL_UNLIKELY(!ctx->free_tensors)) {
        tfl_tensor *recs = chunk_new(ctx, &ctx->tensor_chunks, sizeof(tfl_tensor));
        if (!recs) return NULL;
        for (int i = 0; i < RECORDS_PER_CHUNK - 1; i++) recs[i].next_free = &recs[i + 1];
        ctx->free_tensors = &recs[0];
        ctx->free_tensors_tail = &recs[RECORDS_PER_CHUNK - 1];
    }
    tfl_tensor *t = ctx->free_tensors;
    ctx->free_tensors = t->next_free;
    if (!ctx->free_tensors) ctx->free_tensors_tail = NULL;
    t->ctx = ctx;
    t->refs = 1;
    t->flags = 0;
    t->offset = 0;
    t->var = NULL;
    t->id = ++ctx->next_tensor_id;
    t->next_free = NULL;
    ctx->live_tensors++;
    return t;
}

/* A released record joins the back of the free list (refs 0 marks it dead there), so it is
 * reused after every record released before it: a stale pointer stays detectably dead for
 * as long as possible (tfl__tensor_alive). */
static void record_free(tfl_ctx *ctx, tfl_tensor *t)
{
    t->refs = 0;
    t->next_free = NULL;
    if (ctx->free_tensors_tail) ctx->free_tensors_tail->next_free = t;
    else ctx->free_tensors = t;
    ctx->free_tensors_tail = t;
    ctx->live_tensors--;
}

bool tfl__tensor_dead(const tfl_tensor *t, const char *what)
{
    if (t->ctx) /* NULL only in a record never handed out: not a handle */
        tfl__set_error(t->ctx, TFL_MISUSE,
                       "%s: tensor already released (double release or use after release)", what);
    return false;
}

static tfl__storage *storage_new(tfl_ctx *ctx, tfl__device *dev, size_t bytes)
{
    if (TFL_UNLIKELY(!ctx->free_storage)) {
        tfl__storage *recs = chunk_new(ctx, &ctx->storage_chunks, sizeof(tfl__storage));
        if (!recs) return NULL;
        for (int i = RECORDS_PER_CHUNK - 1; i >= 0; i--) {
            recs[i].next_free = ctx->free_storage;
            ctx->free_storage = &recs[i];
        }
    }
    tfl__storage *s = ctx->free_storage;
    tfl__block *b = tfl__allocator_get_block(&dev->alloc, bytes);
    if (!b) return NULL;
    s->block = b;
    s->data = b->ptr;
    s->bytes = b->size;
    ctx->free_storage = s->next_free;
    s->refs = 1;
    s->device = dev;
    s->next_free = NULL;
    return s;
}

void tfl__pools_free(tfl_ctx *ctx)
{
    for (chunk *c = ctx->storage_chunks, *next; c; c = next) {
        next = c->next;
        tfl__storage *recs = (tfl__storage *)(c + 1);
        for (int i = 0; i < RECORDS_PER_CHUNK; i++)
            if (recs[i].refs > 0) tfl__allocator_put_block(&recs[i].device->alloc, recs[i].block);
        tfl__host_free(ctx, c);
    }
    for (chunk *c = ctx->tensor_chunks, *next; c; c = next) {
        next = c->next;
        tfl__host_free(ctx, c);
    }
    ctx->storage_chunks = ctx->tensor_chunks = NULL;
    ctx->free_storage = NULL;
    ctx->free_tensors = ctx->free_tensors_tail = NULL;
}

static void storage_release(tfl_ctx *ctx, tfl__storage *s)
{
    if (--s->refs > 0) return;
    tfl__allocator_put_block(&s->device->alloc, s->block);
    s->data = NULL;
    s->block = NULL;
    s->next_free = ctx->free_storage;
    ctx->free_storage = s;
}

tfl_tensor *tfl__tensor_alloc(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int rank,
                              const int64_t *shape)
{
    /* the one path every tensor's data takes: a shape that would wrap never gets here */
    if (!tfl__check_new(ctx, "tensor allocation", dtype, rank, shape)) return NULL;
    tfl_tensor *t = record_new(ctx);
    if (!t) return NULL;
    t->dtype = (uint8_t)dtype;
    t->rank = (uint8_t)rank;
    int64_t n = 1, stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
        n *= shape[i];
    }
    t->numel = n;
    t->storage = storage_new(ctx, dev, (size_t)n * tfl_dtype_size(dtype));
    if (!t->storage) {
        record_free(ctx, t);
        return NULL;
    }
    return t;
}

tfl_tensor *tfl__tensor_empty(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int rank,
                              const int64_t *shape)
{
    tfl_tensor *t = tfl__tensor_alloc(ctx, dev, dtype, rank, shape);
    return t ? tfl__frame_adopt(ctx, t) : NULL;
}

tfl_tensor *tfl__tensor_view(tfl_ctx *ctx, const tfl_tensor *src, int rank, const int64_t *shape,
                             const int64_t *strides, int64_t offset)
{
    tfl_tensor *t = record_new(ctx);
    if (!t) return NULL;
    t->dtype = src->dtype;
    t->rank = (uint8_t)rank;
    t->numel = tfl__numel(rank, shape);
    t->offset = offset;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)rank);
    t->storage = src->storage;
    t->storage->refs++;
    return tfl__frame_adopt(ctx, t);
}

tfl_tensor *tfl__tensor_snapshot(tfl_ctx *ctx, const tfl_tensor *src)
{
    tfl_tensor *t = record_new(ctx);
    if (!t) return NULL;
    t->dtype = src->dtype;
    t->rank = src->rank;
    t->numel = src->numel;
    t->offset = src->offset;
    memcpy(t->shape, src->shape, sizeof t->shape);
    memcpy(t->strides, src->strides, sizeof t->strides);
    t->storage = src->storage;
    t->storage->refs++;
    t->id = src->id;
    return t;
}

tfl_tensor *tfl_tensor_retain(tfl_tensor *t)
{
    if (!t || !tfl__tensor_alive(t, "tfl_tensor_retain")) return NULL;
    t->refs++;
    return t;
}

void tfl_tensor_release(tfl_tensor *t)
{
    if (!t || !tfl__tensor_alive(t, "tfl_tensor_release") || --t->refs > 0) return;
    if (t->var) tfl_tensor_release(tfl__var_destroy(t)); /* and the initial value it kept */
    storage_release(t->ctx, t->storage);
    record_free(t->ctx, t);
}

/* ---- frames: the stack of tensors released together at tfl_frame_pop ---------------------- */

tfl_status tfl_frame_push(tfl_ctx *ctx)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    if (ctx->n_frames == ctx->cap_frames) {
        int cap = ctx->cap_frames ? ctx->cap_frames * 2 : 16;
        size_t *marks = tfl__grow(ctx, ctx->frame_marks, sizeof(size_t) * (size_t)ctx->cap_frames,
                             sizeof(size_t) * (size_t)cap);
        TFL_CHECK(ctx, marks, TFL_RESOURCE_EXHAUSTED, "frame_push: out of host memory");
        ctx->frame_marks = marks;
        ctx->cap_frames = cap;
    }
    ctx->frame_marks[ctx->n_frames++] = ctx->n_frame_items;
    return TFL_OK;
}

tfl_status tfl_frame_pop(tfl_ctx *ctx)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, ctx->n_frames > 0, TFL_MISUSE, "frame_pop: no frame is open");
    size_t mark = ctx->frame_marks[--ctx->n_frames];
    /* release newest first, so views go before the tensors they view */
    while (ctx->n_frame_items > mark) {
        tfl_tensor *t = ctx->frame_items[--ctx->n_frame_items];
        if (tfl__tensor_alive(t, "tfl_frame_pop")) tfl_tensor_release(t);
    }
    return TFL_OK;
}

int tfl_frame_depth(const tfl_ctx *ctx) { return ctx ? ctx->n_frames : 0; }

tfl_tensor *tfl__frame_adopt(tfl_ctx *ctx, tfl_tensor *t)
{
    if (ctx->n_frames == 0) return t;
    if (TFL_UNLIKELY(ctx->n_frame_items == ctx->cap_frame_items)) {
        size_t cap = ctx->cap_frame_items ? ctx->cap_frame_items * 2 : 256;
        tfl_tensor **items = tfl__grow(ctx, ctx->frame_items,
                                  sizeof(tfl_tensor *) * ctx->cap_frame_items,
                                  sizeof(tfl_tensor *) * cap);
        if (!items) {
            tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "frame: out of host memory");
            tfl_tensor_release(t);
            return NULL;
        }
        ctx->frame_items = items;
        ctx->cap_frame_items = cap;
    }
    ctx->frame_items[ctx->n_frame_items++] = t;
    return t;
}

tfl_tensor *tfl_keep(tfl_tensor *t)
{
    return t && tfl__tensor_alive(t, "tfl_keep") ? tfl_tensor_retain(t) : NULL;
}

/* ---- creation ------------------------------------------------------------------------------ */

bool tfl__check_new(tfl_ctx *ctx, const char *what, tfl_dtype dtype, int rank,
                    const int64_t *shape)
{
    TFL_CHECK_RET(ctx, tfl_dtype_is_valid(dtype), false, TFL_INVALID_ARGUMENT,
                  "%s: invalid dtype %d", what, (int)dtype);
    int64_t n;
    return tfl__checked_numel(ctx, what, rank, shape, &n) &&
           tfl__checked_bytes(ctx, what, dtype, n, NULL);
}

bool tfl__check_readable(tfl_ctx *ctx, const char *what, const tfl_tensor *t)
{
    TFL_CHECK_RET(ctx, !(t->flags & TFL_TENSOR_FLAG_UNINIT), false, TFL_FAILED_PRECONDITION,
                  "%s: Attempting to use uninitialized value %s", what, t->var->name);
    return true;
}

tfl_tensor *tfl_tensor_new(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                           const void *data)
{
    if (!ctx || !tfl__check_new(ctx, "tensor_new", dtype, rank, shape)) return NULL;
    tfl__device *dev = tfl__current_device(ctx);
    if (!dev) return NULL;
    tfl_tensor *t = tfl__tensor_empty(ctx, dev, dtype, rank, shape);
    if (!t) return NULL;
    size_t bytes = (size_t)t->numel * tfl_dtype_size(dtype);
    void *dst = tfl__data(t);
    if (tfl__dev_is_host(dev)) {
        if (data) memcpy(dst, data, bytes);
        else memset(dst, 0, bytes);
        return t;
    }
    tfl_status st = data ? tfl__dev_copy_host(dev, dst, data, bytes, 0)
                         : tfl__dev_memset(dev, NULL, dst, 0, bytes);
    return st == TFL_OK ? t : NULL; /* t stays with the frame */
}

/* Stores v, converted to dtype, into n elements at dst (host memory). */
static void fill_host(void *dst, tfl_dtype dtype, int64_t n, double v)
{
    switch (dtype) {
#define FILL(T, expr) do { T x = (expr); T *p = dst; for (int64_t i = 0; i < n; i++) p[i] = x; } while (0)
    case TFL_DTYPE_BOOL: FILL(uint8_t, v != 0.0); break;
    case TFL_DTYPE_INT32: FILL(int32_t, (int32_t)tfl__sat_i64(v, INT32_MIN, INT32_MAX)); break;
    case TFL_DTYPE_INT64: FILL(int64_t, tfl__sat_i64(v, INT64_MIN, INT64_MAX)); break;
    case TFL_DTYPE_FLOAT16: FILL(uint16_t, tfl__f32_to_f16((float)v)); break;
    case TFL_DTYPE_BFLOAT16: FILL(uint16_t, tfl__f32_to_bf16((float)v)); break;
    case TFL_DTYPE_FLOAT32: FILL(float, (float)v); break;
    case TFL_DTYPE_FLOAT64: FILL(double, v); break;
    case TFL_DTYPE_COMPLEX64: FILL(float complex, (float complex)v); break;
    case TFL_DTYPE_COMPLEX128: FILL(double complex, (double complex)v); break;
    default: break;
#undef FILL
    }
}

tfl_tensor *tfl_fill(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape, double value)
{
    if (!ctx || !tfl__check_new(ctx, "tensor_new", dtype, rank, shape)) return NULL;
    tfl__device *dev = tfl__current_device(ctx);
    if (!dev) return NULL;
    if (!tfl__dev_is_host(dev)) { /* fill on the host, then copy */
        tfl_tensor *h = tfl__tensor_empty(ctx, tfl__cpu(ctx), dtype, rank, shape);
        if (!h) return NULL;
        fill_host(tfl__data(h), dtype, h->numel, value);
        return tfl__tensor_copy_to(ctx, h, dev);
    }
    tfl_tensor *t = tfl__tensor_empty(ctx, dev, dtype, rank, shape);
    if (t) fill_host(tfl__data(t), dtype, t->numel, value);
    return t;
}

tfl_tensor *tfl_zeros(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape)
{
    return tfl_fill(ctx, dtype, rank, shape, 0.0);
}

tfl_tensor *tfl_ones(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape)
{
    return tfl_fill(ctx, dtype, rank, shape, 1.0);
}

tfl_tensor *tfl_zeros_like(tfl_ctx *ctx, const tfl_tensor *t)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, t, NULL, TFL_INVALID_ARGUMENT, "zeros_like: the tensor is NULL");
    if (!tfl__tensor_alive(t, "zeros_like")) return NULL;
    TFL_CHECK_RET(ctx, t->ctx == ctx, NULL, TFL_MISUSE,
                  "zeros_like: the tensor belongs to another context");
    return tfl_fill(ctx, (tfl_dtype)t->dtype, t->rank, t->shape, 0.0);
}

tfl_tensor *tfl_ones_like(tfl_ctx *ctx, const tfl_tensor *t)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, t, NULL, TFL_INVALID_ARGUMENT, "ones_like: the tensor is NULL");
    if (!tfl__tensor_alive(t, "ones_like")) return NULL;
    TFL_CHECK_RET(ctx, t->ctx == ctx, NULL, TFL_MISUSE,
                  "ones_like: the tensor belongs to another context");
    return tfl_fill(ctx, (tfl_dtype)t->dtype, t->rank, t->shape, 1.0);
}

#define SCALAR_FN(fname, T, DT)                                                   \
    tfl_tensor *fname(tfl_ctx *ctx, T value)                                      \
    {                                                                             \
        return tfl_tensor_new(ctx, TFL_DTYPE_##DT, 0, NULL, &value);              \
    }
SCALAR_FN(tfl_scalar_f32, float, FLOAT32)
SCALAR_FN(tfl_scalar_f64, double, FLOAT64)
SCALAR_FN(tfl_scalar_i32, int32_t, INT32)
SCALAR_FN(tfl_scalar_i64, int64_t, INT64)
#undef SCALAR_FN

tfl_tensor *tfl_scalar_bool(tfl_ctx *ctx, bool value)
{
    uint8_t v = value ? 1 : 0;
    return tfl_tensor_new(ctx, TFL_DTYPE_BOOL, 0, NULL, &v);
}

tfl_tensor *tfl_range(tfl_ctx *ctx, tfl_dtype dtype, double start, double limit, double delta)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, dtype == TFL_DTYPE_INT32 || dtype == TFL_DTYPE_INT64 ||
                  dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64, NULL,
                  TFL_INVALID_ARGUMENT, "Range: dtype %s is not supported; expected one of "
                  "int32, int64, float32, float64", tfl_dtype_name(dtype));
    TFL_CHECK_RET(ctx, isfinite(delta) && isfinite(start) && isfinite(limit), NULL,
                  TFL_INVALID_ARGUMENT, "Range: start (%g), limit (%g) and delta (%g) must be "
                  "finite", start, limit, delta);
    TFL_CHECK_RET(ctx, delta != 0.0, NULL, TFL_INVALID_ARGUMENT,
                  "Range: delta must be non-zero (start %g, limit %g)", start, limit);
    /* every value lies between start and limit: both must be representable in dtype */
    double lo = dtype == TFL_DTYPE_INT32 ? INT32_MIN : dtype == TFL_DTYPE_INT64 ? -0x1p63
              : dtype == TFL_DTYPE_FLOAT32 ? -FLT_MAX : -DBL_MAX;
    double hi = dtype == TFL_DTYPE_INT32 ? INT32_MAX : dtype == TFL_DTYPE_INT64 ? 0x1p63
              : dtype == TFL_DTYPE_FLOAT32 ? FLT_MAX : DBL_MAX;
    bool in_range = start >= lo && limit >= lo && start <= hi && limit <= hi &&
                    (dtype != TFL_DTYPE_INT64 || (start < hi && limit < hi));
    TFL_CHECK_RET(ctx, in_range, NULL, TFL_INVALID_ARGUMENT,
                  "Range: start (%g) and limit (%g) must be representable in %s", start, limit,
                  tfl_dtype_name(dtype));
    double span = (limit - start) / delta; /* may be inf for far-apart finite bounds */
    /* the count must fit in int64 and the tensor in memory (tfl__check_new says so below) */
    TFL_CHECK_RET(ctx, span < 0x1p62, NULL, TFL_INVALID_ARGUMENT,
                  "Range: start %g, limit %g, delta %g give %g elements (more than 2^62)", start,
                  limit, delta, ceil(span));
    int64_t n = span > 0 ? (int64_t)ceil(span) : 0;
    if (!tfl__check_new(ctx, "Range", dtype, 1, &n)) return NULL;
    tfl__device *cpu = tfl__cpu(ctx);
    tfl_tensor *t = tfl__tensor_empty(ctx, cpu, dtype, 1, &n);
    if (!t) return NULL;
    void *d = tfl__data(t);
    for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * delta;
        switch (dtype) {
        case TFL_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
        case TFL_DTYPE_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
        case TFL_DTYPE_FLOAT32: ((float *)d)[i] = (float)v; break;
        default: ((double *)d)[i] = v; break;
        }
    }
    tfl__device *dev = tfl__current_device(ctx);
    return dev && !tfl__dev_is_host(dev) ? tfl__tensor_copy_to(ctx, t, dev) : t;
}

/* ---- properties ------------------------------------------------------------------------------ */

/* A NULL tensor has no context to report to: the properties answer "nothing" instead. A
 * released tensor (refs 0, see tfl__tensor_alive) records MISUSE and answers the same. */
#define ALIVE(t, what) ((t) && tfl__tensor_alive(t, what))

tfl_ctx *tfl_tensor_ctx(const tfl_tensor *t)
{
    if (!t) return NULL;
    (void)ALIVE(t, "tfl_tensor_ctx"); /* the ctx is still the one to ask for the error */
    return t->ctx;
}
tfl_dtype tfl_tensor_dtype(const tfl_tensor *t)
{
    return ALIVE(t, "tfl_tensor_dtype") ? (tfl_dtype)t->dtype : TFL_DTYPE_INVALID;
}
int tfl_tensor_rank(const tfl_tensor *t) { return ALIVE(t, "tfl_tensor_rank") ? t->rank : -1; }
const int64_t *tfl_tensor_shape(const tfl_tensor *t)
{
    return ALIVE(t, "tfl_tensor_shape") ? t->shape : NULL;
}
int64_t tfl_tensor_numel(const tfl_tensor *t)
{
    return ALIVE(t, "tfl_tensor_numel") ? t->numel : -1;
}
const char *tfl_tensor_device(const tfl_tensor *t)
{
    return ALIVE(t, "tfl_tensor_device") ? t->storage->device->name : NULL;
}
const void *tfl_tensor_data_ptr(const tfl_tensor *t)
{
    return ALIVE(t, "tfl_tensor_data_ptr") ? tfl__data(t) : NULL;
}

int64_t tfl_tensor_dim(const tfl_tensor *t, int i)
{
    if (!ALIVE(t, "tfl_tensor_dim")) return -1;
    int a = tfl__norm_axis(i, t->rank);
    return a < 0 ? -1 : t->shape[a];
}

bool tfl_tensor_is_contiguous(const tfl_tensor *t)
{
    if (!ALIVE(t, "tfl_tensor_is_contiguous")) return false;
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

/* ---- copies ---------------------------------------------------------------------------------- */

/* A record describing `data` (host memory, row-major) with t's dtype and shape, on the CPU:
 * what a kernel writes into when the destination is a host buffer. Not a handle. */
static void host_wrap(tfl_ctx *ctx, tfl_tensor *view, tfl__storage *st, const tfl_tensor *t,
                      void *data)
{
    *view = *t;
    *st = *t->storage;
    st->data = data;
    st->device = tfl__cpu(ctx);
    view->storage = st;
    view->offset = 0;
    tfl__contiguous_strides(t->rank, t->shape, view->strides);
}

/* dev's Identity kernel run directly (no dispatch, no tape): out (contiguous, same shape and
 * dtype) = in, both in dev's memory. UNIMPLEMENTED, no error kept, when dev has none for the
 * dtype. */
static tfl_status run_identity(tfl_ctx *ctx, tfl__device *dev, const tfl_tensor *in,
                               tfl_tensor *out)
{
    const tfl__kernel *k = &dev->kernels[TFL_OP_IDENTITY];
    if (!k->fn || !(k->dtypes >> in->dtype & 1u)) return TFL_UNIMPLEMENTED;
    const tfl_tensor *const ins[1] = {in};
    tfl__kcall kc = {ctx, dev, TFL_OP_IDENTITY, 1, ins, out, NULL};
    return tfl__kernel_run(k, &kc);
}

/* The first and one past the last element (from the storage's start) that view t reaches. */
static void view_span(const tfl_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t a = t->offset, b = t->offset;
    for (int d = 0; d < t->rank; d++) {
        int64_t e = (t->shape[d] - 1) * t->strides[d];
        if (e < 0) a += e;
        else b += e;
    }
    *lo = a;
    *hi = b + 1;
}

/* t's elements, row-major, into host memory dst (t->numel elements; numel > 0). */
static tfl_status gather_to_host(tfl_ctx *ctx, const tfl_tensor *t, void *dst)
{
    tfl__device *src = tfl__tensor_device(t);
    size_t es = tfl_dtype_size((tfl_dtype)t->dtype), bytes = (size_t)t->numel * es;
    if (tfl_tensor_is_contiguous(t)) {
        if (tfl__dev_is_host(src)) {
            memcpy(dst, tfl__data(t), bytes);
            return TFL_OK;
        }
        return tfl__dev_copy_host(src, dst, tfl__data(t), bytes, 1);
    }
    tfl_tensor view;
    tfl__storage st;
    host_wrap(ctx, &view, &st, t, dst);
    tfl__device *cpu = tfl__cpu(ctx);
    if (tfl__dev_is_host(src)) return run_identity(ctx, cpu, t, &view);
    /* a strided view on a device: contiguous there with its Identity kernel, then one copy */
    tfl_tensor *c = tfl__tensor_alloc(ctx, src, (tfl_dtype)t->dtype, t->rank, t->shape);
    if (!c) return ctx->err_code;
    tfl_status s = run_identity(ctx, src, t, c);
    if (s == TFL_OK) s = tfl__dev_copy_host(src, dst, tfl__data(c), bytes, 1);
    tfl_tensor_release(c);
    if (s != TFL_UNIMPLEMENTED || ctx->err_code != TFL_OK) return s;
    /* no Identity kernel there: the span the view covers comes to the host, the CPU gathers */
    int64_t lo, hi;
    view_span(t, &lo, &hi);
    size_t span = (size_t)(hi - lo) * es;
    char *buf = tfl__host_alloc(ctx, span, TFL_ALIGN);
    TFL_CHECK(ctx, buf, TFL_RESOURCE_EXHAUSTED, "copy from %s: out of host memory for %zu "
              "bytes", src->name, span);
    s = tfl__dev_copy_host(src, buf, (const char *)t->storage->data + (size_t)lo * es, span, 1);
    if (s == TFL_OK) {
        tfl_tensor in = *t;
        tfl__storage in_st = *t->storage;
        in_st.data = buf;
        in_st.device = cpu;
        in.storage = &in_st;
        in.offset = t->offset - lo;
        s = run_identity(ctx, cpu, &in, &view);
    }
    tfl__host_free(ctx, buf);
    return s;
}

/* Fills `out` (new, contiguous, on dev) with t's elements. */
static tfl_status copy_into(tfl_ctx *ctx, const tfl_tensor *t, tfl__device *dev, tfl_tensor *out)
{
    tfl__device *src = tfl__tensor_device(t);
    size_t bytes = (size_t)t->numel * tfl_dtype_size((tfl_dtype)t->dtype);
    bool contiguous = tfl_tensor_is_contiguous(t);
    if (TFL_UNLIKELY(ctx->trace) && src != dev && (t->flags & TFL_TENSOR_FLAG_VARIABLE))
        tfl__trace_refuse(ctx, "it copies a variable from another device (its value would be "
                               "kept as it is now)");
    if (tfl__dev_is_host(dev)) return gather_to_host(ctx, t, tfl__data(out));
    if (src == dev) {
        if (contiguous) return tfl__dev_copy_device(dev, NULL, tfl__data(out), tfl__data(t), bytes);
        tfl_status s = run_identity(ctx, dev, t, out);
        if (s != TFL_UNIMPLEMENTED || ctx->err_code != TFL_OK) return s;
    } else if (contiguous && tfl__dev_is_host(src)) {
        return tfl__dev_copy_host(dev, tfl__data(out), tfl__data(t), bytes, 0);
    }
    /* through a host buffer: another device's data, or a view dev cannot gather itself */
    void *buf = tfl__host_alloc(ctx, bytes, TFL_ALIGN);
    TFL_CHECK(ctx, buf, TFL_RESOURCE_EXHAUSTED, "copy from %s to %s: out of host memory for "
              "%zu bytes", src->name, dev->name, bytes);
    tfl_status s = gather_to_host(ctx, t, buf);
    if (s == TFL_OK) s = tfl__dev_copy_host(dev, tfl__data(out), buf, bytes, 0);
    tfl__host_free(ctx, buf);
    return s;
}

tfl_tensor *tfl__tensor_copy_to(tfl_ctx *ctx, const tfl_tensor *t, tfl__device *dev)
{
    tfl_tensor *out = tfl__tensor_alloc(ctx, dev, (tfl_dtype)t->dtype, t->rank, t->shape);
    if (!out) return NULL;
    if (t->numel > 0 && copy_into(ctx, t, dev, out) != TFL_OK) {
        if (ctx->err_code == TFL_OK)
            tfl__set_error(ctx, TFL_INTERNAL, "copy from %s to %s failed",
                           tfl__tensor_device(t)->name, dev->name);
        tfl_tensor_release(out);
        return NULL;
    }
    return tfl__frame_adopt(ctx, out);
}

tfl_tensor *tfl_tensor_to_device(tfl_ctx *ctx, const tfl_tensor *t, const char *device)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, t, NULL, TFL_INVALID_ARGUMENT, "tensor_to_device: the tensor is NULL");
    TFL_CHECK_RET(ctx, device, NULL, TFL_INVALID_ARGUMENT, "tensor_to_device: device is NULL");
    if (!tfl__tensor_alive(t, "tensor_to_device")) return NULL;
    TFL_CHECK_RET(ctx, t->ctx == ctx, NULL, TFL_MISUSE,
                  "tensor_to_device: the tensor belongs to another context");
    if (!tfl__check_readable(ctx, "tensor_to_device", t)) return NULL;
    tfl__device *dev = tfl__find_device(ctx, device);
    TFL_CHECK_RET(ctx, dev, NULL, TFL_NOT_FOUND, "tensor_to_device: no device '%s'",
                  device ? device : "(null)");
    return tfl__tensor_copy_to(ctx, t, dev);
}

tfl_status tfl_tensor_to_host(const tfl_tensor *t, void *dst, size_t bytes)
{
    if (!t) return TFL_INVALID_ARGUMENT;
    if (!tfl__tensor_alive(t, "tensor_to_host")) return TFL_MISUSE;
    tfl_ctx *ctx = t->ctx;
    size_t need = (size_t)t->numel * tfl_dtype_size((tfl_dtype)t->dtype);
    if (!tfl__check_readable(ctx, "tensor_to_host", t)) return ctx->err_code;
    TFL_CHECK(ctx, dst || need == 0, TFL_INVALID_ARGUMENT, "tensor_to_host: dst is NULL");
    TFL_CHECK(ctx, bytes == need, TFL_INVALID_ARGUMENT,
              "tensor_to_host: the tensor has %zu bytes, the buffer %zu", need, bytes);
    if (need == 0) return TFL_OK;
    return gather_to_host(ctx, t, dst);
}

tfl_status tfl_tensor_get(const tfl_tensor *t, int64_t index, double *out)
{
    if (!t) return TFL_INVALID_ARGUMENT;
    if (!tfl__tensor_alive(t, "tensor_get")) return TFL_MISUSE;
    TFL_CHECK(t->ctx, out, TFL_INVALID_ARGUMENT, "tensor_get: out is NULL");
    if (!tfl__check_readable(t->ctx, "tensor_get", t)) return t->ctx->err_code;
    TFL_CHECK(t->ctx, index >= 0 && index < t->numel, TFL_OUT_OF_RANGE,
              "tensor_get: index %lld is out of range for %lld elements", (long long)index,
              (long long)t->numel);
    tfl__device *dev = tfl__tensor_device(t);
    const char *p = tfl__elem_ptr(t, index);
    if (!tfl__dev_is_host(dev)) { /* one element comes to the host */
        _Alignas(16) char elem[16];
        TFL_TRY(tfl__dev_copy_host(dev, elem, p, tfl_dtype_size((tfl_dtype)t->dtype), 1));
        p = elem;
        *out = tfl__load_f64(p, (tfl_dtype)t->dtype);
        return TFL_OK;
    }
    *out = tfl__load_f64(p, (tfl_dtype)t->dtype);
    return TFL_OK;
}
