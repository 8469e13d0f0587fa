/*
 * framework/io/ckpt_tools.c: what the checkpoint subcommands of the tapeflow program call:
 * tfl_ckpt_diff (two files compared tensor by tensor, streamed in 1 MiB pieces),
 * tfl_ckpt_export (a new checkpoint from some tensors of another: weights only) and
 * tfl_ckpt_summary (the text `tapeflow inspect` prints).
 */
#include "safetensors.h"

#include "crc32c.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Element k of a chunk as doubles (complex: two parts; *np receives how many). */
static void elem(tfl_dtype dt, const uint8_t *p, int64_t k, double out[2], int *np)
{
    *np = 1;
    switch (dt) {
    case TFL_DTYPE_BOOL:
        out[0] = p[k];
        break;
    case TFL_DTYPE_INT32: {
        int32_t v;
        memcpy(&v, p + 4 * k, 4);
        out[0] = v;
        break;
    }
    case TFL_DTYPE_INT64: {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        out[0] = (double)v;
        break;
    }
    case TFL_DTYPE_FLOAT16: {
        uint16_t v;
        memcpy(&v, p + 2 * k, 2);
        out[0] = tfl__f16_to_f32(v);
        break;
    }
    case TFL_DTYPE_BFLOAT16: {
        uint16_t v;
        memcpy(&v, p + 2 * k, 2);
        out[0] = tfl__bf16_to_f32(v);
        break;
    }
    case TFL_DTYPE_FLOAT32: {
        float v;
        memcpy(&v, p + 4 * k, 4);
        out[0] = v;
        break;
    }
    case TFL_DTYPE_FLOAT64: {
        double v;
        memcpy(&v, p + 8 * k, 8);
        out[0] = v;
        break;
    }
    case TFL_DTYPE_COMPLEX64: {
        float v[2];
        memcpy(v, p + 8 * k, 8);
        out[0] = v[0], out[1] = v[1];
        *np = 2;
        break;
    }
    case TFL_DTYPE_COMPLEX128: {
        memcpy(out, p + 16 * k, 16);
        *np = 2;
        break;
    }
    default:
        out[0] = NAN;
        break;
    }
}

/* Compares tensors ia of a and ib of b (same dtype and shape). */
static tfl_status compare(tfl_ckpt *a, int64_t ia, tfl_ckpt *b, int64_t ib, uint8_t *ba,
                          uint8_t *bb, tfl_ckpt_diff_entry *out)
{
    tfl_ckpt_tensor_info info;
    tfl_ckpt_tensor_info_at(a, ia, &info);
    const tfl__st_entry *ea = &a->e[ia], *eb = &b->e[ib];
    size_t es = info.dtype ? tfl_dtype_size(info.dtype) : 1;
    uint32_t ca = 0, cb = 0;
    bool differ = false;
    for (int64_t at = 0; at < info.bytes;) {
        size_t n = info.bytes - at < TFL__ST_CHUNK ? (size_t)(info.bytes - at) : TFL__ST_CHUNK;
        TFL_TRY(tfl__st_pread(a, a->data_start + ea->begin + at, ba, n));
        TFL_TRY(tfl__st_pread(b, b->data_start + eb->begin + at, bb, n));
        ca = tfl__crc32c(ca, ba, n);
        cb = tfl__crc32c(cb, bb, n);
        if (memcmp(ba, bb, n) != 0) {
            differ = true;
            if (!info.dtype) out->max_abs = out->max_rel = NAN;
            for (int64_t k = 0; info.dtype && k < (int64_t)(n / es); k++) {
                double x[2], y[2];
                int np;
                elem(info.dtype, ba, k, x, &np);
                elem(info.dtype, bb, k, y, &np);
                for (int q = 0; q < np; q++) {
                    double d = fabs(x[q] - y[q]), m = fmax(fabs(x[q]), fabs(y[q]));
                    if (x[q] == y[q] || (isnan(x[q]) && isnan(y[q]))) continue;
                    if (isnan(d)) d = INFINITY;
                    out->max_abs = fmax(out->max_abs, d);
                    out->max_rel = fmax(out->max_rel, m > 0 && isfinite(m) ? d / m : INFINITY);
                }
            }
        }
        at += (int64_t)n;
    }
    if (ea->has_crc && ca != ea->crc)
        return tfl__set_error(a->ctx, TFL_DATA_LOSS,
                              "Checkpoint '%s': tensor '%s': CRC mismatch: "
                              "the data is corrupt",
                              a->path, ea->name);
    if (eb->has_crc && cb != eb->crc)
        return tfl__set_error(b->ctx, TFL_DATA_LOSS,
                              "Checkpoint '%s': tensor '%s': CRC mismatch: "
                              "the data is corrupt",
                              b->path, eb->name);
    out->kind = differ ? TFL_CKPT_DIFFERENT : TFL_CKPT_SAME;
    return TFL_OK;
}

static bool same_layout(const tfl__st_entry *x, const tfl__st_entry *y)
{
    if (x->dt != y->dt || x->rank != y->rank || x->complex128 != y->complex128) return false;
    for (int d = 0; d < x->rank; d++)
        if (x->shape[d] != y->shape[d]) return false;
    return true;
}

tfl_status tfl_ckpt_diff(tfl_ctx *ctx, const char *path_a, const char *path_b, tfl_ckpt_diff_fn fn,
                         void *user, int64_t *n_different)
{
    if (n_different) *n_different = 0;
    if (!ctx) return TFL_INVALID_ARGUMENT;
    tfl_ckpt *a = tfl_ckpt_open(ctx, path_a);
    tfl_ckpt *b = a ? tfl_ckpt_open(ctx, path_b) : NULL;
    uint8_t *ba = b ? tfl__host_alloc(ctx, TFL__ST_CHUNK, 64) : NULL;
    uint8_t *bb = ba ? tfl__host_alloc(ctx, TFL__ST_CHUNK, 64) : NULL;
    tfl_status st = bb ? TFL_OK : tfl_ctx_status(ctx);
    if (b && !bb) st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_ckpt_diff: out of memory");
    int64_t diff = 0;
    for (int64_t i = 0; st == TFL_OK && i < a->n + b->n; i++) {
        bool in_a = i < a->n;
        const tfl__st_entry *e = in_a ? &a->e[i] : &b->e[i - a->n];
        int64_t j = tfl_ckpt_find(in_a ? b : a, e->name);
        if (!in_a && j >= 0) continue; /* compared from A's side */
        tfl_ckpt_diff_entry d = {e->name, in_a ? TFL_CKPT_ONLY_IN_A : TFL_CKPT_ONLY_IN_B, 0, 0};
        if (in_a && j >= 0) {
            if (!same_layout(e, &b->e[j]))
                d.kind = TFL_CKPT_INCOMPATIBLE;
            else
                st = compare(a, i, b, j, ba, bb, &d);
        }
        if (st != TFL_OK) break;
        diff += d.kind != TFL_CKPT_SAME;
        if (fn) fn(user, &d);
    }
    if (n_different) *n_different = diff;
    tfl__host_free(ctx, ba);
    tfl__host_free(ctx, bb);
    tfl_ckpt_close(b);
    tfl_ckpt_close(a);
    return st;
}

/* ---- export ---------------------------------------------------------------------------------- */

static tfl_status file_src(void *user, int64_t item, int64_t offset, void *buf, size_t n)
{
    tfl_ckpt *ck = user;
    return tfl__st_pread(ck, ck->data_start + ck->e[item].begin + offset, buf, n);
}

/* Marks the tensors named in a "\n"-separated list. */
static tfl_status mark_listed(tfl_ckpt *ck, const char *list, bool *keep)
{
    for (const char *p = list; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char name[512];
        TFL_CHECK(ck->ctx, len < sizeof name, TFL_DATA_LOSS,
                  "Checkpoint '%s': a name in "
                  "tapeflow.weights is longer than 511 bytes",
                  ck->path);
        memcpy(name, p, len);
        name[len] = 0;
        int64_t i = tfl_ckpt_find(ck, name);
        TFL_CHECK(ck->ctx, i >= 0, TFL_DATA_LOSS,
                  "Checkpoint '%s': tapeflow.weights names '%s', "
                  "which the file does not have",
                  ck->path, name);
        keep[i] = true;
        p += len + (nl != NULL);
    }
    return TFL_OK;
}

static bool internal_key(const char *k)
{
    return strncmp(k, TFL__ST_KEY_CRC, strlen(TFL__ST_KEY_CRC)) == 0 ||
           strncmp(k, TFL__ST_KEY_DTYPE, strlen(TFL__ST_KEY_DTYPE)) == 0 ||
           strcmp(k, TFL__ST_KEY_VERSION) == 0 || strcmp(k, "tapeflow.weights") == 0 ||
           strcmp(k, "tapeflow.exported_from") == 0;
}

static tfl_status export_open(tfl_ckpt *ck, const char *dst, tfl_ckpt_keep_fn keep, void *user,
                              unsigned flags, bool *kept, tfl__st_item *items, const char **keys,
                              const char **vals)
{
    tfl_ctx *ctx = ck->ctx;
    const char *list = keep ? NULL : tfl_ckpt_metadata(ck, "tapeflow.weights");
    for (int64_t i = 0; i < ck->n; i++)
        kept[i] = !keep && !list;
    if (list) TFL_TRY(mark_listed(ck, list, kept));
    for (int64_t i = 0; keep && i < ck->n; i++)
        kept[i] = keep(user, ck->e[i].name);
    int64_t n = 0;
    uint8_t *buf = NULL;
    tfl_status st = TFL_OK;
    for (int64_t i = 0; i < ck->n && st == TFL_OK; i++) {
        if (!kept[i]) continue;
        const tfl__st_entry *e = &ck->e[i];
        tfl__st_item *it = &items[n++];
        memset(it, 0, sizeof *it);
        it->name = e->name;
        it->dt = e->dt;
        it->rank = e->rank;
        memcpy(it->shape, e->shape, sizeof it->shape);
        it->bytes = e->end - e->begin;
        it->complex128 = e->complex128;
        it->src = file_src;
        it->user = ck;
        it->src_item = i;
        it->check_crc = true;
        it->crc = e->crc;
        if (!e->has_crc) { /* a foreign file: the CRC first, then the copy is held to it */
            if (!buf && !(buf = tfl__host_alloc(ctx, TFL__ST_CHUNK, 64)))
                st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_ckpt_export: out of memory");
            uint32_t crc = 0;
            for (int64_t at = 0; at < it->bytes && st == TFL_OK;) {
                size_t c =
                    it->bytes - at < TFL__ST_CHUNK ? (size_t)(it->bytes - at) : TFL__ST_CHUNK;
                st = file_src(ck, i, at, buf, c);
                crc = tfl__crc32c(crc, buf, c);
                at += (int64_t)c;
            }
            it->crc = crc;
        }
    }
    tfl__host_free(ctx, buf);
    if (st != TFL_OK) return st;
    TFL_CHECK(ctx, n > 0 || ck->n == 0, TFL_NOT_FOUND,
              "tfl_ckpt_export: '%s': no tensor was "
              "selected",
              ck->path);
    int nm = 0;
    for (int64_t i = 0; i < ck->n_meta; i++)
        if (!internal_key(ck->meta_k[i])) keys[nm] = ck->meta_k[i], vals[nm++] = ck->meta_v[i];
    keys[nm] = "tapeflow.exported_from", vals[nm++] = ck->path;
    return tfl__st_write(ctx, "tfl_ckpt_export", dst, items, n, nm, keys, vals, flags);
}

tfl_status tfl_ckpt_export(tfl_ctx *ctx, const char *src, const char *dst, tfl_ckpt_keep_fn keep,
                           void *user, const tfl_ckpt_save_opts *opts)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, dst && *dst, TFL_INVALID_ARGUMENT, "tfl_ckpt_export: dst is NULL or empty");
    unsigned flags = opts ? opts->flags : 0;
    TFL_CHECK(ctx, !opts || opts->n_metadata == 0, TFL_INVALID_ARGUMENT,
              "tfl_ckpt_export: "
              "extra metadata is not taken (the source's is kept)");
    tfl_ckpt *ck = tfl_ckpt_open(ctx, src);
    if (!ck) return tfl_ctx_status(ctx);
    size_t n = (size_t)(ck->n ? ck->n : 1), nm = (size_t)ck->n_meta + 1;
    bool *kept = tfl__host_alloc(ctx, n, 16);
    tfl__st_item *items = tfl__host_alloc(ctx, n * sizeof *items, 16);
    const char **keys = tfl__host_alloc(ctx, nm * sizeof *keys, 16);
    const char **vals = tfl__host_alloc(ctx, nm * sizeof *vals, 16);
    tfl_status st = kept && items && keys && vals
                        ? export_open(ck, dst, keep, user, flags, kept, items, keys, vals)
                        : tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                         "tfl_ckpt_export: out of "
                                         "memory");
    tfl__host_free(ctx, kept);
    tfl__host_free(ctx, items);
    tfl__host_free(ctx, keys);
    tfl__host_free(ctx, vals);
    tfl_ckpt_close(ck);
    return st;
}

/* ---- tfl_ckpt_summary ------------------------------------------------------------------------ */

/* snprintf at buf + *at (nothing past size; *at counts what the whole text needs). */
static void add(char *buf, size_t size, int64_t *at, const char *fmt, ...) TFL_PRINTF(4, 5);
static void add(char *buf, size_t size, int64_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t off = (size_t)*at < size ? (size_t)*at : size;
    int n = vsnprintf(buf ? buf + off : NULL, buf ? size - off : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *at += n;
}

int64_t tfl_ckpt_summary(const tfl_ckpt *ck, char *buf, size_t size)
{
    int64_t n = tfl_ckpt_num_tensors(ck); /* -1, MISUSE kept, for a closed reader */
    if (n < 0) return -1;
    if (!buf) size = 0;
    if (size) buf[0] = 0;
    const char *step = tfl_ckpt_metadata(ck, "tapeflow.step");
    int64_t at = 0, total = 0;
    add(buf, size, &at, "%s: %lld tensors, step %s\n", tfl_ckpt_path(ck), (long long)n,
        step ? step : "(not recorded)");
    for (int64_t i = 0; i < n; i++) {
        tfl_ckpt_tensor_info in;
        if (tfl_ckpt_tensor_info_at(ck, i, &in) != TFL_OK) return -1;
        char shape[TFL_MAX_RANK * 22 + 4] = "(";
        size_t o = 1;
        for (int d = 0; d < in.rank; d++)
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", d ? ", " : "",
                                  (long long)in.shape[d]);
        snprintf(shape + o, sizeof shape - o, in.rank == 1 ? ",)" : ")");
        add(buf, size, &at, "  %-40s %-9s %-18s %12lld bytes\n", in.name,
            in.dtype ? tfl_dtype_name(in.dtype) : in.file_dtype, shape, (long long)in.bytes);
        total += in.bytes;
    }
    add(buf, size, &at, "%lld bytes of tensors\n", (long long)total);
    return at;
}
