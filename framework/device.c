/*
 * framework/device.c: the devices a context has (those of every backend in the static list
 * of backends.c: CPU:0 always, GPUs from backends compiled in), the device table's optional
 * slots with their NULL meanings, device-name parsing, device scopes, and the placement of
 * ops: the scope's device when it has a kernel, else (soft placement) the best device that
 * has one.
 */
#include "ops/op.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void device_free(tfl__device *d)
{
    tfl__allocator_destroy(&d->alloc);
    const tfl__backend *b = NULL;
    for (int i = 0; i < tfl__n_backends && !b; i++)
        if (strcmp(tfl__backends[i]->type_name, d->ops->type_name) == 0) b = tfl__backends[i];
    if (b && b->device_free) b->device_free(d);
    else tfl__host_free(d->ctx, d);
}

/* Creates the devices of backend `be`; a failing device_new returns its error (kept). */
static tfl_status add_backend_devices(tfl_ctx *ctx, const tfl__backend *be)
{
    if (be->version != TFL_DEVICE_OPS_VERSION) {
        tfl__log(ctx, TFL_LOG_WARNING, "backend %s has device table version %d, not %d: "
                 "skipped", be->type_name, be->version, TFL_DEVICE_OPS_VERSION);
        return TFL_OK;
    }
    int count = be->device_count(ctx);
    if (count == 0 && be->note) {
        char why[512];
        int level = be->note(ctx, why, sizeof why);
        if (level >= 0)
            tfl__log(ctx, (tfl_log_level)level, "no %s device: %s; running on CPU:0",
                     be->type_name, why);
    }
    for (int i = 0; i < count; i++) {
        if (ctx->n_devices == TFL_MAX_DEVICES) {
            tfl__log(ctx, TFL_LOG_WARNING, "%s:%d and later devices are not used: a "
                     "context has at most %d devices", be->type_name, i, TFL_MAX_DEVICES);
            break;
        }
        tfl__device *d = be->device_new(ctx, i);
        if (!d) {
            if (ctx->err_code == TFL_OK)
                tfl__set_error(ctx, TFL_INTERNAL, "backend %s could not create device %d",
                               be->type_name, i);
            return ctx->err_code;
        }
        d->slot = ctx->n_devices;
        tfl__allocator_init(&d->alloc, d);
        ctx->devices[ctx->n_devices++] = d;
    }
    return TFL_OK;
}

tfl_status tfl__devices_init(tfl_ctx *ctx)
{
    for (int b = 0; b < tfl__n_backends; b++) {
        if (tfl__backends[b]->lazy) {
            ctx->devices_pending = true;
            continue;
        }
        TFL_TRY(add_backend_devices(ctx, tfl__backends[b]));
    }
    if (ctx->n_devices == 0 || !tfl__dev_is_host(ctx->devices[0]))
        return tfl__set_error(ctx, TFL_INTERNAL, "tfl_ctx_new: the first backend must give a "
                              "host device (CPU:0)");
    return TFL_OK;
}

tfl_status tfl__devices_discover_(tfl_ctx *ctx)
{
    for (int b = 0; b < tfl__n_backends; b++) {
        if (!tfl__backends[b]->lazy) continue;
        int before = ctx->n_devices;
        tfl_status st = add_backend_devices(ctx, tfl__backends[b]);
        if (st != TFL_OK) {
            /* nothing half-made stays: the caller's call fails with the error (a device the
             * backend has but cannot make is never silently replaced by the CPU), and the next
             * call that needs the devices asks again */
            while (ctx->n_devices > before) device_free(ctx->devices[--ctx->n_devices]);
            return st;
        }
    }
    ctx->devices_pending = false;
    return TFL_OK;
}

void tfl__devices_free(tfl_ctx *ctx)
{
    for (int i = ctx->n_devices - 1; i >= 0; i--) device_free(ctx->devices[i]);
    ctx->n_devices = 0;
}

/* ---- the device table's optional slots --------------------------------------------------- */

/* A slot's failure keeps an error even when the backend kept none. */
static tfl_status slot_status(tfl__device *dev, tfl_status st, const char *slot)
{
    if (st != TFL_OK && dev->ctx->err_code == TFL_OK)
        tfl__set_error(dev->ctx, st, "%s failed on %s", slot, dev->name);
    return st;
}

tfl_status tfl__dev_sync(tfl__device *dev)
{
    return dev->ops->sync ? slot_status(dev, dev->ops->sync(dev), "sync") : TFL_OK;
}

/* copy_host, never recorded (copy_host_async's fallback: the caller's call was) */
static tfl_status untraced_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                                     int to_host)
{
    return slot_status(dev, dev->ops->copy_host(dev, dst, src, bytes, to_host), "copy_host");
}

tfl_status tfl__dev_copy_host(tfl__device *dev, void *dst, const void *src, size_t bytes,
                              int to_host)
{
    if (bytes == 0) return TFL_OK;
    if (tfl__traced(dev))
        tfl__trace_slot(dev, NULL, to_host ? TFL__SLOT_READ : TFL__SLOT_UPLOAD, dst, src, 0,
                        bytes);
    return slot_status(dev, dev->ops->copy_host(dev, dst, src, bytes, to_host), "copy_host");
}

tfl_status tfl__dev_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                    const void *src, size_t bytes, int to_host)
{
    if (bytes == 0) return TFL_OK;
    if (tfl__traced(dev))
        tfl__trace_slot(dev, stream, to_host ? TFL__SLOT_READ : TFL__SLOT_UPLOAD, dst, src, 0,
                        bytes);
    if (!dev->ops->copy_host_async) return untraced_copy_host(dev, dst, src, bytes, to_host);
    return slot_status(dev, dev->ops->copy_host_async(dev, stream, dst, src, bytes, to_host),
                       "copy_host_async");
}

#define STAGE_BYTES ((size_t)1 << 20) /* host staging for the slots' fallbacks */

tfl_status tfl__dev_copy_device(tfl__device *dev, tfl__stream *stream, void *dst,
                                const void *src, size_t bytes)
{
    if (bytes == 0) return TFL_OK;
    if (tfl__traced(dev)) { /* recorded whole: its staging below is part of it */
        tfl__trace_slot(dev, stream, TFL__SLOT_COPY, dst, src, 0, bytes);
        dev->ctx->trace_depth++;
        tfl_status st = tfl__dev_copy_device(dev, stream, dst, src, bytes);
        dev->ctx->trace_depth--;
        return st;
    }
    if (dev->ops->copy_device)
        return slot_status(dev, dev->ops->copy_device(dev, stream, dst, src, bytes),
                           "copy_device");
    size_t chunk = bytes < STAGE_BYTES ? bytes : STAGE_BYTES;
    char *buf = tfl__host_alloc(dev->ctx, chunk, TFL_ALIGN);
    TFL_CHECK(dev->ctx, buf, TFL_RESOURCE_EXHAUSTED, "copy on %s: out of host memory for a "
              "staging buffer of %zu bytes", dev->name, chunk);
    tfl_status st = tfl__dev_stream_sync(dev, stream);
    for (size_t off = 0; st == TFL_OK && off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        st = tfl__dev_copy_host(dev, buf, (const char *)src + off, n, 1);
        if (st == TFL_OK) st = tfl__dev_copy_host(dev, (char *)dst + off, buf, n, 0);
    }
    tfl__host_free(dev->ctx, buf);
    return st;
}

tfl_status tfl__dev_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                           size_t bytes)
{
    if (bytes == 0) return TFL_OK;
    if (tfl__traced(dev)) {
        tfl__trace_slot(dev, stream, TFL__SLOT_MEMSET, dst, NULL, value, bytes);
        dev->ctx->trace_depth++;
        tfl_status st = tfl__dev_memset(dev, stream, dst, value, bytes);
        dev->ctx->trace_depth--;
        return st;
    }
    if (dev->ops->memset)
        return slot_status(dev, dev->ops->memset(dev, stream, dst, value, bytes), "memset");
    size_t chunk = bytes < STAGE_BYTES ? bytes : STAGE_BYTES;
    char *buf = tfl__host_alloc(dev->ctx, chunk, TFL_ALIGN);
    TFL_CHECK(dev->ctx, buf, TFL_RESOURCE_EXHAUSTED, "memset on %s: out of host memory for a "
              "staging buffer of %zu bytes", dev->name, chunk);
    memset(buf, value, chunk);
    tfl_status st = tfl__dev_stream_sync(dev, stream);
    for (size_t off = 0; st == TFL_OK && off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        st = tfl__dev_copy_host(dev, (char *)dst + off, buf, n, 0);
    }
    tfl__host_free(dev->ctx, buf);
    return st;
}

tfl_status tfl__dev_stream_new(tfl__device *dev, tfl__stream **out)
{
    *out = NULL;
    if (!dev->ops->stream_new) return TFL_OK;
    return slot_status(dev, dev->ops->stream_new(dev, out), "stream_new");
}

void tfl__dev_stream_free(tfl__device *dev, tfl__stream *stream)
{
    if (stream && dev->ops->stream_free) dev->ops->stream_free(dev, stream);
}

tfl_status tfl__dev_stream_sync(tfl__device *dev, tfl__stream *stream)
{
    if (!dev->ops->stream_sync || (!stream && !dev->ops->stream_new)) return tfl__dev_sync(dev);
    return slot_status(dev, dev->ops->stream_sync(dev, stream), "stream_sync");
}

tfl_status tfl__dev_event_new(tfl__device *dev, tfl__event **out)
{
    *out = NULL;
    if (!dev->ops->event_new) return TFL_OK;
    return slot_status(dev, dev->ops->event_new(dev, out), "event_new");
}

void tfl__dev_event_free(tfl__device *dev, tfl__event *event)
{
    if (event && dev->ops->event_free) dev->ops->event_free(dev, event);
}

tfl_status tfl__dev_event_record(tfl__device *dev, tfl__event *event, tfl__stream *stream)
{
    if (!event || !dev->ops->event_record) return TFL_OK;
    return slot_status(dev, dev->ops->event_record(dev, event, stream), "event_record");
}

tfl_status tfl__dev_event_wait(tfl__device *dev, tfl__stream *stream, tfl__event *event)
{
    if (!event || !dev->ops->event_wait) return TFL_OK;
    return slot_status(dev, dev->ops->event_wait(dev, stream, event), "event_wait");
}

tfl_status tfl__dev_event_sync(tfl__device *dev, tfl__event *event)
{
    if (!event || !dev->ops->event_sync) return tfl__dev_sync(dev);
    return slot_status(dev, dev->ops->event_sync(dev, event), "event_sync");
}

void *tfl__dev_host_alloc(tfl__device *dev, size_t bytes, bool *pinned)
{
    void *p = dev->ops->host_alloc ? dev->ops->host_alloc(dev, bytes ? bytes : 1) : NULL;
    *pinned = p != NULL;
    if (!p) p = tfl__host_alloc(dev->ctx, bytes ? bytes : 1, TFL_ALIGN);
    TFL_CHECK_RET(dev->ctx, p, NULL, TFL_RESOURCE_EXHAUSTED, "host_alloc on %s: out of host "
                  "memory for %zu bytes", dev->name, bytes);
    return p;
}

void tfl__dev_host_free(tfl__device *dev, void *ptr, bool pinned)
{
    if (!ptr) return;
    if (pinned && dev->ops->host_free) dev->ops->host_free(dev, ptr);
    else tfl__host_free(dev->ctx, ptr);
}

/* ---- names, scopes, placement ---------------------------------------------------------------- */

tfl__device *tfl__cpu(tfl_ctx *ctx) { return ctx->devices[0]; }

/* The public queries take a const ctx: finding its devices on first use is a cache fill,
 * invisible to the caller. */
static void discover(const tfl_ctx *ctx)
{
    if (ctx) (void)tfl__devices_discover((tfl_ctx *)(uintptr_t)ctx); /* an error stays kept */
}

int tfl_device_count(const tfl_ctx *ctx)
{
    discover(ctx);
    return ctx ? ctx->n_devices : 0;
}

const char *tfl_device_name(const tfl_ctx *ctx, int i)
{
    discover(ctx);
    return ctx && i >= 0 && i < ctx->n_devices ? ctx->devices[i]->name : NULL;
}

int tfl_device_note(tfl_ctx *ctx, char *buf, size_t size)
{
    if (buf && size > 0) buf[0] = '\0';
    if (!ctx) return 0;
    (void)tfl__devices_discover(ctx); /* an error stays kept */
    for (int b = 0; b < tfl__n_backends; b++) {
        const tfl__backend *be = tfl__backends[b];
        bool has = false;
        for (int i = 0; i < ctx->n_devices && !has; i++)
            has = strcmp(ctx->devices[i]->ops->type_name, be->type_name) == 0;
        char why[512];
        if (!has && be->note && be->note(ctx, why, sizeof why) >= 0) {
            int w = snprintf(buf, buf ? size : 0, "no %s device: %s", be->type_name, why);
            return w < 0 ? 0 : w;
        }
    }
    return 0;
}

/* "79.2 GiB" / "1.0 MiB" */
static void put_bytes(char *buf, size_t size, size_t bytes)
{
    if (bytes >= ((size_t)1 << 30)) snprintf(buf, size, "%.1f GiB", (double)bytes / 1073741824.0);
    else snprintf(buf, size, "%.1f MiB", (double)bytes / 1048576.0);
}

int tfl_device_describe(const tfl_ctx *ctx, int i, char *buf, size_t size)
{
    if (buf && size > 0) buf[0] = '\0';
    discover(ctx);
    if (!ctx || i < 0 || i >= ctx->n_devices) return -1;
    tfl__device *d = ctx->devices[i];
    char desc[160] = "", mem[96] = "";
    if (d->ops->describe) d->ops->describe(d, desc, sizeof desc);
    size_t free_b, total_b;
    if (d->ops->mem_info && d->ops->mem_info(d, &free_b, &total_b) == TFL_OK) {
        char t[32], f[32];
        put_bytes(t, sizeof t, total_b);
        put_bytes(f, sizeof f, free_b);
        snprintf(mem, sizeof mem, "%s%s (%s free)", desc[0] ? ", " : "", t, f);
    }
    int w = snprintf(buf, buf ? size : 0, "%s%s%s%s", d->name, desc[0] || mem[0] ? ": " : "",
                     desc, mem);
    return w < 0 ? -1 : w;
}

/* parse_device's answers */
enum { DEV_OK, DEV_NOT_A_NAME, DEV_BAD_INDEX };

tfl_status tfl_device_parse(const char *name, char *type, size_t type_size, int *index)
{
    if (!name || !type || !index) return TFL_INVALID_ARGUMENT;
    const char *p = strstr(name, "device:");
    if (p) p += 7;
    else p = name[0] == '/' ? name + 1 : name;
    char t[16];
    size_t n = 0;
    while (p[n] && p[n] != ':' && n < sizeof t - 1) {
        t[n] = (char)toupper((unsigned char)p[n]);
        n++;
    }
    t[n] = '\0';
    bool known = false; /* the backends' type names */
    for (int b = 0; b < tfl__n_backends && !known; b++)
        known = tfl__backends[b]->type_name && !strcmp(t, tfl__backends[b]->type_name);
    if (!known || n + 1 > type_size) return TFL_INVALID_ARGUMENT;
    int at = -1;
    if (p[n] == ':') {
        const char *d = p + n + 1;
        if (!isdigit((unsigned char)*d)) return TFL_INVALID_ARGUMENT;
        at = 0; /* long digit strings never overflow: the value stops past the limit */
        for (; isdigit((unsigned char)*d); d++)
            if (at <= TFL_MAX_DEVICE_INDEX) at = at * 10 + (*d - '0');
        if (*d != '\0') return TFL_INVALID_ARGUMENT;
        if (at > TFL_MAX_DEVICE_INDEX) return TFL_OUT_OF_RANGE;
    } else if (p[n] != '\0') {
        return TFL_INVALID_ARGUMENT;
    }
    memcpy(type, t, n + 1);
    *index = at;
    return TFL_OK;
}

/* name (tfl_device_parse's forms) as the canonical "TYPE:N" (no index: 0) */
static int parse_device(const char *name, char *out, size_t size)
{
    char type[8];
    int index;
    tfl_status st = tfl_device_parse(name, type, sizeof type, &index);
    if (st == TFL_OUT_OF_RANGE) return DEV_BAD_INDEX;
    if (st != TFL_OK) return DEV_NOT_A_NAME;
    /* index <= TFL_MAX_DEVICE_INDEX: one byte's value says it all */
    snprintf(out, size, "%.7s:%u", type, (unsigned)(unsigned char)(index < 0 ? 0 : index));
    return DEV_OK;
}

tfl__device *tfl__find_device(tfl_ctx *ctx, const char *name)
{
    char canon[16];
    if (parse_device(name, canon, sizeof canon) != DEV_OK) return NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < ctx->n_devices; i++)
            if (strcmp(ctx->devices[i]->name, canon) == 0) return ctx->devices[i];
        /* a device not found yet may be a lazy backend's */
        if (!ctx->devices_pending || tfl__devices_discover(ctx) != TFL_OK) break;
    }
    return NULL;
}

tfl_status tfl_device_scope_push(tfl_ctx *ctx, const char *device)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    char canon[16];
    int parsed = parse_device(device, canon, sizeof canon);
    TFL_CHECK(ctx, parsed != DEV_BAD_INDEX, TFL_INVALID_ARGUMENT,
              "device_scope_push: the index of device '%.64s' is out of range (0..%d)", device,
              TFL_MAX_DEVICE_INDEX);
    TFL_CHECK(ctx, parsed == DEV_OK, TFL_INVALID_ARGUMENT,
              "device_scope_push: '%.64s' is not a device name (expected e.g. CPU:0 or GPU:0)",
              device ? device : "(null)");
    TFL_CHECK(ctx, ctx->n_scopes < TFL_MAX_SCOPES, TFL_RESOURCE_EXHAUSTED,
              "device_scope_push: more than %d nested scopes", TFL_MAX_SCOPES);
    tfl__device *dev = tfl__find_device(ctx, canon);
    ctx->scopes[ctx->n_scopes] = dev ? dev->slot : -1;
    memcpy(ctx->scope_names[ctx->n_scopes], canon, sizeof canon);
    ctx->n_scopes++;
    return TFL_OK;
}

tfl_status tfl_device_scope_pop(tfl_ctx *ctx)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, ctx->n_scopes > 0, TFL_MISUSE, "device_scope_pop: no device scope is open");
    ctx->n_scopes--;
    return TFL_OK;
}

/* "CPU:0, GPU:0" */
static char *device_list(const tfl_ctx *ctx, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < ctx->n_devices && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", ctx->devices[i]->name);
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

static tfl__device *best_device(tfl_ctx *ctx, bool (*ok)(const tfl__device *, const void *),
                                const void *arg)
{
    tfl__device *best = NULL;
    for (int i = 0; i < ctx->n_devices; i++) {
        tfl__device *d = ctx->devices[i];
        if ((!ok || ok(d, arg)) && (!best || d->ops->priority > best->ops->priority)) best = d;
    }
    return best;
}

/* The device of the scope, honouring soft placement; NULL (error kept) when strict fails. */
static tfl__device *scoped_device(tfl_ctx *ctx, const char *what, const char *why,
                                  bool (*ok)(const tfl__device *, const void *), const void *arg)
{
    int top = ctx->n_scopes - 1;
    int slot = ctx->scopes[top];
    if (slot >= 0 && (!ok || ok(ctx->devices[slot], arg))) return ctx->devices[slot];
    if (!ctx->soft_placement) {
        char list[128];
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "%s: Could not satisfy device specification '%s': %s. "
                       "enable_soft_placement=0. All available devices: %s", what,
                       ctx->scope_names[top], slot < 0 ? "no such device" : why,
                       device_list(ctx, list, sizeof list));
        return NULL;
    }
    tfl__device *cpu = tfl__cpu(ctx);
    return !ok || ok(cpu, arg) ? cpu : best_device(ctx, ok, arg);
}

tfl__device *tfl__current_device(tfl_ctx *ctx)
{
    if (ctx->n_scopes == 0) return tfl__cpu(ctx); /* host data starts on the host */
    return scoped_device(ctx, "tensor", "", NULL, NULL);
}

/* A device whose optimizer kernels exist: a variable there can be trained. */
static bool trains_variables(const tfl__device *d, const void *arg)
{
    (void)arg;
    return d->opt_kernels != NULL;
}

tfl__device *tfl__resolve_device(tfl_ctx *ctx, const char *what, const char *device)
{
    /* With no scope a variable goes to the highest-priority device that has optimizer
     * kernels (GPU:0 once its backend registers them), so that training needs no scope. */
    if (!device && ctx->n_scopes == 0) {
        if (tfl__devices_discover(ctx) != TFL_OK) return NULL;
        tfl__device *best = best_device(ctx, trains_variables, NULL);
        return best ? best : tfl__cpu(ctx);
    }
    if (!device) return scoped_device(ctx, what, "", NULL, NULL);
    /* an explicit device acts as one more scope, for this call only */
    char canon[16];
    int parsed = parse_device(device, canon, sizeof canon);
    TFL_CHECK_RET(ctx, parsed != DEV_BAD_INDEX, NULL, TFL_INVALID_ARGUMENT,
                  "%s: the index of device '%.64s' is out of range (0..%d)", what, device,
                  TFL_MAX_DEVICE_INDEX);
    TFL_CHECK_RET(ctx, parsed == DEV_OK, NULL, TFL_INVALID_ARGUMENT,
                  "%s: '%.64s' is not a device name (expected e.g. CPU:0 or GPU:0)", what, device);
    if (tfl_device_scope_push(ctx, canon) != TFL_OK) return NULL;
    tfl__device *dev = scoped_device(ctx, what, "", NULL, NULL);
    ctx->n_scopes--;
    return dev;
}

/* ---- op placement -------------------------------------------------------------------------- */

typedef struct {
    tfl__op_id op;
    tfl_dtype key;
} kernel_query;

static bool has_kernel(const tfl__device *d, const void *arg)
{
    const kernel_query *q = arg;
    const tfl__kernel *k = &d->kernels[q->op];
    if (!k->fn) return false;
    if (k->dtypes >> q->key & 1u) return true;
    return (tfl__op_defs[q->op].flags & TFL_OPF_HALF_VIA_F32) && (TFL_MASK_HALF >> q->key & 1u) &&
           (k->dtypes >> TFL_DTYPE_FLOAT32 & 1u);
}

/* Under soft placement an op falls back from the device it would have run on (the scope's,
 * or the highest-priority one) when that device has no kernel for the dtype; the placement
 * log says why: "op MatMul has no GPU kernel for dtype int32: running on CPU:0". */
static void log_fallback(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key, const tfl__device *wanted,
                         const tfl__device *dev)
{
    if (ctx->log_placement && wanted && dev && wanted != dev)
        tfl__log(ctx, TFL_LOG_INFO, "op %s has no %s kernel for dtype %s: running on %s",
                 tfl__op_defs[op].name, wanted->ops->type_name, tfl_dtype_name(key), dev->name);
}

tfl__device *tfl__place_op(tfl_ctx *ctx, tfl__op_id op, tfl_dtype key)
{
    kernel_query q = {op, key};
    tfl__device *dev, *wanted;
    if (ctx->n_scopes > 0) {
        dev = scoped_device(ctx, tfl__op_defs[op].name, "no kernel for this op and dtype",
                            has_kernel, &q);
        if (!dev) return NULL;
        int slot = ctx->scopes[ctx->n_scopes - 1];
        wanted = slot >= 0 ? ctx->devices[slot] : NULL;
    } else {
        if (tfl__devices_discover(ctx) != TFL_OK) return NULL;
        dev = ctx->n_devices == 1 ? ctx->devices[0] : best_device(ctx, has_kernel, &q);
        if (dev && !has_kernel(dev, &q)) dev = NULL;
        wanted = best_device(ctx, NULL, NULL);
    }
    TFL_CHECK_RET(ctx, dev, NULL, TFL_UNIMPLEMENTED, "%s: no device has a kernel for dtype %s",
                  tfl__op_defs[op].name, tfl_dtype_name(key));
    log_fallback(ctx, op, key, wanted, dev);
    return dev;
}

void tfl__log_op(tfl_ctx *ctx, const char *name, const tfl__device *dev)
{
    if (ctx->log_placement) tfl__log(ctx, TFL_LOG_INFO, "op %s on %s", name, dev->name);
}

void tfl__log_placement(tfl_ctx *ctx, tfl__op_id op, const tfl__device *dev)
{
    tfl__log_op(ctx, tfl__op_defs[op].name, dev);
}
