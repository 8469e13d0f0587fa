/*
 * layers/dataset_upload.c: the upload of a dataset's batches to a device whose memory is not
 * the host's and that copies asynchronously (copy_host_async): two host buffers (pinned when
 * the device has host_alloc) and two device batches, used in turn, and a copy stream.
 *
 * Batch i is assembled on the host into buffer i % 2 and copied on the copy stream into device
 * batch i % 2; an event recorded after the copy makes the compute stream (the device's own)
 * wait before any later work, so the host never waits for the copy and the copy of batch i + 1
 * overlaps the compute of batch i. Reuse is ordered by events:
 *  - host buffer k is written again only after the event recorded after its last copy (the
 *    copy of batch i - 2: long done in a steady state) has completed;
 *  - device batch k is written again (by the copy of batch i) only after the compute stream
 *    reached the event recorded when batch i - 1 was asked for: by then every kernel reading
 *    batch i - 2 was issued, and the dataset's reference was the last one (a caller that
 *    still holds batch i - 2 makes the dataset let it go and take a new device batch);
 *  - a new device batch (the first ones, a new shape: an epoch's last, shorter batch) comes
 *    from the caching allocator, whose blocks compute-stream work issued before may still
 *    use: its copy waits for an event recorded on the compute stream now.
 * The values are those of the synchronous path; only when the bytes travel changes.
 */
#include "dataset_internal.h"

typedef struct upload_slot {
    void *host; /* assembled batch: x floats, then the labels or targets */
    size_t host_bytes;
    bool pinned;          /* host came from the device's host_alloc */
    tfl__event *copied;   /* recorded on the copy stream after the copy out of host */
    bool copying;         /* copied was recorded and not waited for */
    tfl_tensor *x, *y;    /* the device batch (the dataset's references), or NULL */
    tfl__event *released; /* recorded on the compute stream once x, y had no other user */
    bool reusable;        /* released was recorded: x, y may be written after it */
} upload_slot;

struct tfl__ds_upload {
    tfl_ctx *ctx;
    tfl__device *dev;
    tfl__stream *copy; /* the copy stream (NULL: the device's own) */
    tfl__event *now;   /* "the compute stream so far", for new device batches */
    upload_slot slot[2];
    int last; /* the slot of the previous batch, -1 before the first */
    int cur;  /* the slot being filled (between begin and end) */
};

size_t tfl__ds_upload_offset(size_t xbytes)
{
    return (xbytes + 63) / 64 * 64;
}

bool tfl__ds_upload_wanted(const tfl__device *dev)
{
    return !tfl__dev_host_memory(dev) && tfl__dev_copies_async(dev);
}

void tfl__ds_upload_free(tfl__ds_upload *up)
{
    if (!up) return;
    tfl__device *dev = up->dev;
    (void)tfl__dev_stream_sync(dev, up->copy); /* no copy still reads the host buffers */
    for (int k = 0; k < 2; k++) {
        upload_slot *s = &up->slot[k];
        tfl__dev_host_free(dev, s->host, s->pinned);
        tfl__dev_event_free(dev, s->copied);
        tfl__dev_event_free(dev, s->released);
        tfl_tensor_release(s->x);
        tfl_tensor_release(s->y);
    }
    tfl__dev_event_free(dev, up->now);
    tfl__dev_stream_free(dev, up->copy);
    tfl__host_free(up->ctx, up);
}

static tfl__ds_upload *upload_new(tfl_ctx *ctx, tfl__device *dev)
{
    tfl__ds_upload *up = tfl__calloc(ctx, sizeof *up);
    if (!up) return NULL;
    up->ctx = ctx;
    up->dev = dev;
    up->last = -1;
    tfl_status st = tfl__dev_stream_new(dev, &up->copy);
    if (st == TFL_OK) st = tfl__dev_event_new(dev, &up->now);
    for (int k = 0; k < 2 && st == TFL_OK; k++) {
        st = tfl__dev_event_new(dev, &up->slot[k].copied);
        if (st == TFL_OK) st = tfl__dev_event_new(dev, &up->slot[k].released);
    }
    if (st != TFL_OK) {
        tfl__ds_upload_free(up);
        return NULL;
    }
    return up;
}

/* Only the dataset holds t (no frame, no caller, no view): no later work can read it. */
static bool only_ours(const tfl_tensor *t)
{
    return !t || (t->refs == 1 && tfl__tensor_storage_refs(t) == 1);
}

static void drop_device_batch(upload_slot *s)
{
    tfl_tensor_release(s->x);
    tfl_tensor_release(s->y);
    s->x = s->y = NULL;
    s->reusable = false;
}

void *tfl__ds_upload_begin(tfl_ctx *ctx, tfl__ds_upload **upp, tfl__device *dev, size_t bytes)
{
    if (*upp && (*upp)->dev != dev) { /* batches go to another device now */
        tfl__ds_upload_free(*upp);
        *upp = NULL;
    }
    if (!*upp && !(*upp = upload_new(ctx, dev))) return NULL;
    tfl__ds_upload *up = *upp;
    if (up->last >= 0) { /* the previous batch's work is all issued, unless someone holds it */
        upload_slot *p = &up->slot[up->last];
        if (only_ours(p->x) && only_ours(p->y)) {
            if (tfl__dev_event_record(dev, p->released, NULL) != TFL_OK) return NULL;
            p->reusable = true;
        } else {
            drop_device_batch(p);
        }
    }
    up->cur = up->last >= 0 ? 1 - up->last : 0;
    upload_slot *s = &up->slot[up->cur];
    if (s->copying) { /* its last copy (two batches ago) must be done before it is rewritten */
        if (tfl__dev_event_sync(dev, s->copied) != TFL_OK) return NULL;
        s->copying = false;
    }
    if (!s->host || s->host_bytes < bytes) { /* (an empty first batch still needs a buffer) */
        tfl__dev_host_free(dev, s->host, s->pinned);
        s->host_bytes = 0;
        if (!(s->host = tfl__dev_host_alloc(dev, bytes, &s->pinned))) return NULL;
        s->host_bytes = bytes;
    }
    return s->host;
}

/* The slot's device tensor of this dtype and shape: the one it has when it fits and may be
 * rewritten, else a new one; *fresh says a new one was made. */
static tfl_tensor *device_tensor(tfl__ds_upload *up, tfl_tensor **held, bool reusable, tfl_dtype dt,
                                 int rank, const int64_t *shape, bool *fresh)
{
    tfl_tensor *t = *held;
    if (t && reusable && t->dtype == dt && tfl__same_shape(t->rank, t->shape, rank, shape))
        return t;
    tfl_tensor_release(t);
    *held = tfl__tensor_alloc(up->ctx, up->dev, dt, rank, shape);
    *fresh = true;
    return *held;
}

tfl_status tfl__ds_upload_end(tfl__ds_upload *up, int xrank, const int64_t *xshape, tfl_dtype ydt,
                              int yrank, const int64_t *yshape, tfl_tensor **x, tfl_tensor **y)
{
    tfl_ctx *ctx = up->ctx;
    tfl__device *dev = up->dev;
    upload_slot *s = &up->slot[up->cur];
    bool fresh = false, want_y = yrank > 0;
    tfl_tensor *dx =
        device_tensor(up, &s->x, s->reusable, TFL_DTYPE_FLOAT32, xrank, xshape, &fresh);
    tfl_tensor *dy = NULL;
    if (want_y)
        dy = device_tensor(up, &s->y, s->reusable, ydt, yrank, yshape, &fresh);
    else if (s->y) {
        tfl_tensor_release(s->y);
        s->y = NULL;
    }
    if (!dx || (want_y && !dy)) {
        drop_device_batch(s);
        return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    }
    /* the copy stream waits for the compute stream's last use of these device bytes */
    tfl_status st;
    if (fresh) {
        st = tfl__dev_event_record(dev, up->now, NULL);
        if (st == TFL_OK) st = tfl__dev_event_wait(dev, up->copy, up->now);
    } else {
        st = tfl__dev_event_wait(dev, up->copy, s->released);
    }
    s->reusable = false;
    size_t xbytes = (size_t)dx->numel * sizeof(float);
    size_t xoff = tfl__ds_upload_offset(xbytes);
    if (st == TFL_OK)
        st = tfl__dev_copy_host_async(dev, up->copy, tfl__tensor_data(dx), s->host, xbytes, 0);
    if (st == TFL_OK && dy)
        st = tfl__dev_copy_host_async(dev, up->copy, tfl__tensor_data(dy), (char *)s->host + xoff,
                                      (size_t)dy->numel * tfl_dtype_size(ydt), 0);
    /* the compute stream's later work (the step on this batch) waits for the copy */
    if (st == TFL_OK) st = tfl__dev_event_record(dev, s->copied, up->copy);
    if (st == TFL_OK) s->copying = true;
    if (st == TFL_OK) st = tfl__dev_event_wait(dev, NULL, s->copied);
    if (st != TFL_OK) {
        (void)tfl__dev_stream_sync(dev, up->copy);
        s->copying = false;
        drop_device_batch(s);
        return st;
    }
    up->last = up->cur;
    *x = tfl__frame_adopt(ctx, tfl_tensor_retain(dx));
    if (y) *y = dy ? tfl__frame_adopt(ctx, tfl_tensor_retain(dy)) : NULL;
    return *x && (!dy || !y || *y) ? TFL_OK : tfl_ctx_status(ctx);
}
