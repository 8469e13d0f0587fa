/*
 * framework/io/safetensors.c: the safetensors reader (tfl_ckpt_open: every field of the
 * header checked before anything is trusted) and the streaming writer behind tfl_ckpt_save
 * (tfl__st_write). The format and the checks are described in <tapeflow/checkpoint.h>.
 */
#include "safetensors.h"

#include "crc32c.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* safetensors' enum order (tensor.rs); bits per element */
const tfl__st_dtype tfl__st_dtypes[] = {
    {"BOOL", 8, TFL_DTYPE_BOOL},           {"F4", 4, TFL_DTYPE_INVALID},
    {"F6_E2M3", 6, TFL_DTYPE_INVALID},     {"F6_E3M2", 6, TFL_DTYPE_INVALID},
    {"U8", 8, TFL_DTYPE_INVALID},          {"I8", 8, TFL_DTYPE_INVALID},
    {"F8_E5M2", 8, TFL_DTYPE_INVALID},     {"F8_E4M3", 8, TFL_DTYPE_INVALID},
    {"F8_E8M0", 8, TFL_DTYPE_INVALID},     {"F8_E4M3FNUZ", 8, TFL_DTYPE_INVALID},
    {"F8_E5M2FNUZ", 8, TFL_DTYPE_INVALID}, {"I16", 16, TFL_DTYPE_INVALID},
    {"U16", 16, TFL_DTYPE_INVALID},        {"F16", 16, TFL_DTYPE_FLOAT16},
    {"BF16", 16, TFL_DTYPE_BFLOAT16},      {"I32", 32, TFL_DTYPE_INT32},
    {"U32", 32, TFL_DTYPE_INVALID},        {"F32", 32, TFL_DTYPE_FLOAT32},
    {"C64", 64, TFL_DTYPE_COMPLEX64},      {"F64", 64, TFL_DTYPE_FLOAT64},
    {"I64", 64, TFL_DTYPE_INT64},          {"U64", 64, TFL_DTYPE_INVALID},
};
const int tfl__st_n_dtypes = (int)(sizeof tfl__st_dtypes / sizeof tfl__st_dtypes[0]);

int tfl__st_dtype_of(tfl_dtype dtype)
{
    if (dtype == TFL_DTYPE_COMPLEX128) dtype = TFL_DTYPE_FLOAT64;
    for (int i = 0; i < tfl__st_n_dtypes; i++)
        if (dtype != TFL_DTYPE_INVALID && tfl__st_dtypes[i].dtype == dtype) return i;
    return -1;
}

int64_t tfl__utf8_check(const uint8_t *s, int64_t n)
{
    for (int64_t i = 0; i < n;) {
        uint8_t c = s[i];
        int len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07;
        } else {
            return i;
        }
        if (n - i < len) return i;
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        /* overlong forms, surrogates, past U+10FFFF */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return i;
        i += len;
    }
    return -1;
}

/* ---- reading ------------------------------------------------------------------------------ */

#define FAIL(ck, ...) tfl__set_error((ck)->ctx, TFL_DATA_LOSS, __VA_ARGS__)

tfl_status tfl__st_pread(tfl_ckpt *ck, int64_t off, void *dst, size_t n)
{
    if (ck->fd < 0) {
        if (off < 0 || off > ck->size || (int64_t)n > ck->size - off)
            return FAIL(ck, "Checkpoint '%s': read of %zu bytes at %lld is past its end", ck->path,
                        n, (long long)off);
        memcpy(dst, ck->mem + off, n);
        return TFL_OK;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(ck->fd, (char *)dst + done, n - done, (off_t)(off + (int64_t)done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return tfl__set_error(ck->ctx, TFL_DATA_LOSS,
                                  "Checkpoint '%s': read failed at byte "
                                  "%lld: %s",
                                  ck->path, (long long)(off + (int64_t)done), strerror(errno));
        if (r == 0)
            return FAIL(ck,
                        "Checkpoint '%s': the file ends at byte %lld, %zu bytes short (it "
                        "changed since it was opened)",
                        ck->path, (long long)(off + (int64_t)done), n - done);
        done += (size_t)r;
    }
    return TFL_OK;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* DATA_LOSS for two children of one object with the same key; `where` says which object. */
static tfl_status check_unique_keys(tfl_ckpt *ck, const cJSON *obj, const char *where)
{
    int64_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    if (n < 2) return TFL_OK;
    const char **keys = tfl__host_alloc(ck->ctx, (size_t)n * sizeof *keys, 16);
    TFL_CHECK(ck->ctx, keys, TFL_RESOURCE_EXHAUSTED, "Checkpoint '%s': out of memory", ck->path);
    int64_t i = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        keys[i++] = c->string ? c->string : "";
    qsort(keys, (size_t)n, sizeof *keys, cmp_str_ptr);
    tfl_status st = TFL_OK;
    for (i = 1; i < n && st == TFL_OK; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            st = FAIL(ck, "Checkpoint '%s': duplicate name '%s' in %s", ck->path, keys[i], where);
    tfl__host_free(ck->ctx, keys);
    return st;
}

/* A JSON number that is a whole number in [0, 2^53]. */
static bool json_count(const cJSON *j, int64_t *out)
{
    if (!cJSON_IsNumber(j)) return false;
    double v = j->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != floor(v)) return false;
    *out = (int64_t)v;
    return true;
}

static tfl_status parse_entry(tfl_ckpt *ck, const cJSON *j, tfl__st_entry *e)
{
    const char *nm = j->string;
    if (!cJSON_IsObject(j))
        return FAIL(ck, "Checkpoint '%s': tensor '%s': its entry is not an object", ck->path, nm);
    TFL_TRY(check_unique_keys(ck, j, nm));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
        return FAIL(ck,
                    "Checkpoint '%s': tensor '%s': needs \"dtype\" (a string), \"shape\" and "
                    "\"data_offsets\" (arrays)",
                    ck->path, nm);
    e->dt = -1;
    for (int i = 0; i < tfl__st_n_dtypes; i++)
        if (strcmp(dt->valuestring, tfl__st_dtypes[i].name) == 0) e->dt = i;
    if (e->dt < 0)
        return FAIL(ck, "Checkpoint '%s': tensor '%s': unknown dtype '%.32s'", ck->path, nm,
                    dt->valuestring);
    int rank = cJSON_GetArraySize(sh);
    if (rank > TFL__ST_MAX_RANK)
        return FAIL(ck, "Checkpoint '%s': tensor '%s': rank %d is more than %d", ck->path, nm, rank,
                    TFL__ST_MAX_RANK);
    e->rank = rank;
    int k = 0;
    for (const cJSON *d = sh->child; d; d = d->next, k++)
        if (!json_count(d, &e->shape[k]))
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': shape entry %d is not a whole number "
                        "in [0, 2^53]",
                        ck->path, nm, k);
    if (cJSON_GetArraySize(of) != 2 || !json_count(of->child, &e->begin) ||
        !json_count(of->child->next, &e->end))
        return FAIL(ck,
                    "Checkpoint '%s': tensor '%s': data_offsets must be two whole numbers in "
                    "[0, 2^53]",
                    ck->path, nm);
    return TFL_OK;
}

static int cmp_entry_begin(const void *a, const void *b)
{
    const tfl__st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp((*(const tfl__st_entry *const *)a)->name,
                  (*(const tfl__st_entry *const *)b)->name);
}

/* Offsets tile the buffer; byte counts match shape x dtype. */
static tfl_status check_layout(tfl_ckpt *ck)
{
    qsort(ck->e, (size_t)ck->n, sizeof *ck->e, cmp_entry_begin);
    int64_t at = 0, buffer = ck->size - ck->data_start;
    for (int64_t i = 0; i < ck->n; i++) {
        tfl__st_entry *e = &ck->e[i];
        if (e->end < e->begin)
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': data_offsets [%lld, %lld] end before "
                        "they begin",
                        ck->path, e->name, (long long)e->begin, (long long)e->end);
        if (e->begin != at)
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': data_offsets [%lld, %lld] %s the "
                        "tensor before it, which ends at %lld (offsets must tile the data in "
                        "order)",
                        ck->path, e->name, (long long)e->begin, (long long)e->end,
                        e->begin < at ? "overlap" : "leave a gap after", (long long)at);
        int64_t numel = 1, bits;
        bool over = false;
        for (int d = 0; d < e->rank; d++)
            over |= tfl__mul_overflow_i64(numel, e->shape[d] ? e->shape[d] : 1, &numel);
        char sbuf[160];
        tfl__shape_str(e->rank < TFL_MAX_RANK ? e->rank : TFL_MAX_RANK, e->shape, sbuf,
                       sizeof sbuf);
        if (over || tfl__mul_overflow_i64(numel, tfl__st_dtypes[e->dt].bits, &bits))
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': shape %s%s has more elements than fit "
                        "in 64 bits",
                        ck->path, e->name, sbuf, e->rank > TFL_MAX_RANK ? "..." : "");
        for (int d = 0; d < e->rank; d++)
            if (e->shape[d] == 0) bits = 0;
        if (bits % 8)
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': shape %s of %s is not a whole number "
                        "of bytes",
                        ck->path, e->name, sbuf, tfl__st_dtypes[e->dt].name);
        if (e->end - e->begin != bits / 8)
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s': data_offsets [%lld, %lld] hold %lld "
                        "bytes, but shape %s of %s needs %lld",
                        ck->path, e->name, (long long)e->begin, (long long)e->end,
                        (long long)(e->end - e->begin), sbuf, tfl__st_dtypes[e->dt].name,
                        (long long)(bits / 8));
        at = e->end;
    }
    if (at != buffer)
        return FAIL(ck,
                    "Checkpoint '%s': the tensors' data ends at byte %lld of the data but "
                    "the file holds %lld: %s",
                    ck->path, (long long)at, (long long)buffer,
                    at < buffer ? "trailing bytes after the last tensor" : "the data is truncated");
    return TFL_OK;
}

static bool parse_hex32(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return false;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return s[8] == 0;
}

/* tapeflow's metadata: CRCs, complex128 notes, the format version. */
static tfl_status apply_metadata(tfl_ckpt *ck)
{
    const char *version = tfl_ckpt_metadata(ck, TFL__ST_KEY_VERSION);
    if (version && strcmp(version, TFL__ST_FORMAT_VERSION) != 0)
        return tfl__set_error(ck->ctx, TFL_UNIMPLEMENTED,
                              "Checkpoint '%s': format version "
                              "'%.20s' is not one this tapeflow reads (%s)",
                              ck->path, version, TFL__ST_FORMAT_VERSION);
    for (int64_t i = 0; i < ck->n_meta; i++) {
        const char *k = ck->meta_k[i], *v = ck->meta_v[i];
        bool crc = strncmp(k, TFL__ST_KEY_CRC, strlen(TFL__ST_KEY_CRC)) == 0;
        bool dt = strncmp(k, TFL__ST_KEY_DTYPE, strlen(TFL__ST_KEY_DTYPE)) == 0;
        if (!crc && !dt) continue;
        const char *name = k + strlen(crc ? TFL__ST_KEY_CRC : TFL__ST_KEY_DTYPE);
        int64_t t = tfl_ckpt_find(ck, name);
        if (t < 0)
            return FAIL(ck,
                        "Checkpoint '%s': metadata '%s' names a tensor the file does not "
                        "have",
                        ck->path, k);
        tfl__st_entry *e = &ck->e[t];
        if (crc && !parse_hex32(v, &e->crc))
            return FAIL(ck, "Checkpoint '%s': tensor '%s': its CRC '%.20s' is not 8 hex digits",
                        ck->path, name, v);
        e->has_crc |= crc;
        if (dt) {
            if (strcmp(v, "complex128") != 0 || strcmp(tfl__st_dtypes[e->dt].name, "F64") != 0 ||
                e->rank < 1 || e->shape[e->rank - 1] != 2)
                return FAIL(ck,
                            "Checkpoint '%s': tensor '%s': metadata says dtype '%.20s', which "
                            "needs F64 with a last dimension of 2",
                            ck->path, name, v);
            e->complex128 = true;
        }
    }
    for (int64_t i = 0; i < ck->n; i++) {
        tfl__st_entry *e = &ck->e[i];
        if (version && !e->has_crc)
            return FAIL(ck,
                        "Checkpoint '%s': tensor '%s' has no CRC (a tapeflow checkpoint has "
                        "one for every tensor)",
                        ck->path, e->name);
        if (!e->complex128 && e->rank > TFL_MAX_RANK)
            return FAIL(ck, "Checkpoint '%s': tensor '%s': rank %d is more than %d", ck->path,
                        e->name, e->rank, TFL_MAX_RANK);
    }
    return TFL_OK;
}

static tfl_status parse_header(tfl_ckpt *ck, char *h, int64_t len)
{
    int64_t bad = tfl__utf8_check((const uint8_t *)h, len);
    if (bad >= 0)
        return FAIL(ck, "Checkpoint '%s': the header is not valid UTF-8 (byte %lld)", ck->path,
                    (long long)bad);
    int64_t i = 0;
    while (i < len && (h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r'))
        i++;
    if (i == len || h[i] != '{')
        return FAIL(ck, "Checkpoint '%s': the header does not start with '{'", ck->path);
    for (int64_t k = 0; k + 6 <= len; k++)
        if (h[k] == '\\' && h[k + 1] == 'u' && memcmp(h + k + 2, "0000", 4) == 0)
            return FAIL(ck, "Checkpoint '%s': the header holds \\u0000 (byte %lld)", ck->path,
                        (long long)k);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long long where = at && at >= h && at <= h + len ? (long long)(at - h) : -1;
        return FAIL(ck, "Checkpoint '%s': the header is not valid JSON (near byte %lld)", ck->path,
                    where);
    }
    tfl_status st = TFL_OK;
    for (const char *p = end; p && p < h + len && st == TFL_OK; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            st = FAIL(ck,
                      "Checkpoint '%s': the header is not valid JSON (characters after the "
                      "object at byte %lld)",
                      ck->path, (long long)(p - h));
    if (st == TFL_OK && !cJSON_IsObject(root))
        st = FAIL(ck, "Checkpoint '%s': the header is not a JSON object", ck->path);
    if (st == TFL_OK) st = check_unique_keys(ck, root, "the header");
    const cJSON *meta = NULL;
    int64_t n = 0;
    for (const cJSON *c = st == TFL_OK ? root->child : NULL; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") == 0)
            meta = c;
        else
            n++;
    }
    if (st == TFL_OK && meta) {
        if (!cJSON_IsObject(meta)) {
            st = FAIL(ck, "Checkpoint '%s': __metadata__ is not an object", ck->path);
        } else if ((st = check_unique_keys(ck, meta, "__metadata__")) == TFL_OK) {
            for (const cJSON *c = meta->child; c && st == TFL_OK; c = c->next, ck->n_meta++)
                if (!cJSON_IsString(c))
                    st = FAIL(ck, "Checkpoint '%s': __metadata__ value of '%s' is not a string",
                              ck->path, c->string);
        }
    }
    size_t nm = (size_t)(ck->n_meta ? ck->n_meta : 1);
    if (st == TFL_OK) {
        ck->e = tfl__host_alloc(ck->ctx, (size_t)(n ? n : 1) * sizeof *ck->e, 16);
        ck->by_name = tfl__host_alloc(ck->ctx, (size_t)(n ? n : 1) * sizeof *ck->by_name, 16);
        ck->meta_k = tfl__host_alloc(ck->ctx, nm * sizeof(char *), 16);
        ck->meta_v = tfl__host_alloc(ck->ctx, nm * sizeof(char *), 16);
        /* zeroed at once: tfl_ckpt_close frees what they hold, whatever failed */
        if (ck->e) memset(ck->e, 0, (size_t)(n ? n : 1) * sizeof *ck->e);
        if (ck->meta_k) memset(ck->meta_k, 0, nm * sizeof(char *));
        if (ck->meta_v) memset(ck->meta_v, 0, nm * sizeof(char *));
        if (!ck->e || !ck->by_name || !ck->meta_k || !ck->meta_v)
            st = tfl__set_error(ck->ctx, TFL_RESOURCE_EXHAUSTED,
                                "Checkpoint '%s': out of memory "
                                "for %lld entries",
                                ck->path, (long long)n);
    }
    int64_t k = 0;
    for (const cJSON *c = st == TFL_OK ? meta ? meta->child : NULL : NULL; c; c = c->next, k++) {
        ck->meta_k[k] = tfl__strdup(ck->ctx, c->string);
        ck->meta_v[k] = ck->meta_k[k] ? tfl__strdup(ck->ctx, c->valuestring) : NULL;
        if (!ck->meta_k[k] || !ck->meta_v[k]) {
            st = TFL_RESOURCE_EXHAUSTED; /* kept by tfl__strdup */
            break;
        }
    }
    for (const cJSON *c = st == TFL_OK ? root->child : NULL; c && st == TFL_OK; c = c->next) {
        if (c == meta) continue;
        tfl__st_entry *e = &ck->e[ck->n];
        st = parse_entry(ck, c, e);
        if (st == TFL_OK && !(e->name = tfl__strdup(ck->ctx, c->string)))
            st = TFL_RESOURCE_EXHAUSTED;
        if (st == TFL_OK) ck->n++;
    }
    cJSON_Delete(root);
    if (st != TFL_OK) return st;
    TFL_TRY(check_layout(ck));
    for (int64_t t = 0; t < ck->n; t++)
        ck->by_name[t] = &ck->e[t];
    qsort(ck->by_name, (size_t)ck->n, sizeof *ck->by_name, cmp_by_name);
    return apply_metadata(ck);
}

static void ckpt_free_obj(tfl__ctx_obj *o)
{
    tfl_ckpt_close((tfl_ckpt *)(void *)o);
}

static tfl_ckpt *open_common(tfl_ctx *ctx, const char *path, int fd, const void *mem, int64_t size)
{
    tfl_ckpt *ck = tfl__obj_new(ctx, sizeof *ck, TFL__MAGIC_CKPT, ckpt_free_obj);
    if (!ck) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    ck->ctx = ctx;
    ck->fd = fd;
    ck->mem = mem;
    ck->size = size;
    ck->path = tfl__strdup(ctx, path);
    if (!ck->path) {
        tfl_ckpt_close(ck);
        return NULL;
    }
    uint8_t len8[8];
    tfl_status st = TFL_OK;
    uint64_t len = 0;
    if (size < 8)
        st = FAIL(ck,
                  "Checkpoint '%s': the file is %lld bytes, shorter than the 8-byte header "
                  "length",
                  path, (long long)size);
    if (st == TFL_OK) st = tfl__st_pread(ck, 0, len8, 8);
    for (int i = 7; i >= 0 && st == TFL_OK; i--)
        len = len << 8 | len8[i];
    if (st == TFL_OK && len >= TFL__ST_MAX_HEADER)
        st = FAIL(ck, "Checkpoint '%s': header length %llu is 100,000,000 bytes or more", path,
                  (unsigned long long)len);
    if (st == TFL_OK && len > (uint64_t)(size - 8))
        st = FAIL(ck,
                  "Checkpoint '%s': header length %llu goes past the end of the file (%lld "
                  "bytes)",
                  path, (unsigned long long)len, (long long)size);
    char *h = NULL;
    if (st == TFL_OK && !(h = tfl__host_alloc(ctx, (size_t)len + 1, 16)))
        st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                            "Checkpoint '%s': out of memory for a "
                            "header of %llu bytes",
                            path, (unsigned long long)len);
    if (st == TFL_OK) st = tfl__st_pread(ck, 8, h, (size_t)len);
    if (st == TFL_OK) {
        h[len] = 0;
        ck->data_start = 8 + (int64_t)len;
        st = parse_header(ck, h, (int64_t)len);
    }
    tfl__host_free(ctx, h);
    if (st != TFL_OK) {
        tfl_ckpt_close(ck);
        return NULL;
    }
    return ck;
}

tfl_ckpt *tfl_ckpt_open(tfl_ctx *ctx, const char *path)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, path, NULL, TFL_INVALID_ARGUMENT, "tfl_ckpt_open: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        tfl__set_error(ctx, err == ENOENT ? TFL_NOT_FOUND : TFL_FAILED_PRECONDITION,
                       "Checkpoint '%s': cannot open it: %s", path, strerror(err));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "Checkpoint '%s': not a regular file", path);
        return NULL;
    }
    return open_common(ctx, path, fd, NULL, (int64_t)sb.st_size);
}

tfl_ckpt *tfl_ckpt_open_memory(tfl_ctx *ctx, const void *data, size_t size)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, data || size == 0, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_open_memory: data is NULL");
    TFL_CHECK_RET(ctx, size <= (size_t)INT64_MAX, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_open_memory: size %zu is too large", size);
    static const uint8_t empty[1];
    return open_common(ctx, "<memory>", -1, data ? data : empty, (int64_t)size);
}

void tfl_ckpt_close(tfl_ckpt *ck)
{
    if (!ck || !tfl__obj_check(ck->ctx, &ck->obj, TFL__MAGIC_CKPT, "tfl_ckpt_close")) return;
    tfl_ctx *ctx = ck->ctx;
    if (ck->fd >= 0) close(ck->fd);
    for (int64_t i = 0; ck->e && i < ck->n; i++)
        tfl__host_free(ctx, ck->e[i].name);
    for (int64_t i = 0; ck->meta_k && i < ck->n_meta; i++)
        tfl__host_free(ctx, ck->meta_k[i]);
    for (int64_t i = 0; ck->meta_v && i < ck->n_meta; i++)
        tfl__host_free(ctx, ck->meta_v[i]);
    tfl__host_free(ctx, ck->e);
    tfl__host_free(ctx, ck->by_name);
    tfl__host_free(ctx, ck->meta_k);
    tfl__host_free(ctx, ck->meta_v);
    tfl__host_free(ctx, ck->path);
    tfl__obj_retire(ctx, &ck->obj);
}

static bool ck_alive(const tfl_ckpt *ck, const char *what)
{
    return ck && tfl__obj_check(ck->ctx, &ck->obj, TFL__MAGIC_CKPT, what);
}

int64_t tfl_ckpt_num_tensors(const tfl_ckpt *ck)
{
    return ck_alive(ck, "tfl_ckpt_num_tensors") ? ck->n : -1;
}

tfl_status tfl_ckpt_tensor_info_at(const tfl_ckpt *ck, int64_t i, tfl_ckpt_tensor_info *out)
{
    if (!ck) return TFL_INVALID_ARGUMENT;
    if (!ck_alive(ck, "tfl_ckpt_tensor_info_at")) return TFL_MISUSE;
    TFL_CHECK(ck->ctx, out, TFL_INVALID_ARGUMENT, "tfl_ckpt_tensor_info_at: out is NULL");
    TFL_CHECK(ck->ctx, i >= 0 && i < ck->n, TFL_OUT_OF_RANGE,
              "tfl_ckpt_tensor_info_at: index "
              "%lld is out of range (%lld tensors)",
              (long long)i, (long long)ck->n);
    const tfl__st_entry *e = &ck->e[i];
    memset(out, 0, sizeof *out);
    out->name = e->name;
    out->file_dtype = tfl__st_dtypes[e->dt].name;
    out->dtype = e->complex128 ? TFL_DTYPE_COMPLEX128 : tfl__st_dtypes[e->dt].dtype;
    out->rank = e->complex128 ? e->rank - 1 : e->rank;
    memcpy(out->shape, e->shape, sizeof out->shape);
    if (e->complex128) out->shape[e->rank - 1] = 0;
    out->offset = ck->data_start + e->begin;
    out->bytes = e->end - e->begin;
    out->has_crc = e->has_crc;
    out->crc32c = e->crc;
    return TFL_OK;
}

int64_t tfl_ckpt_find(const tfl_ckpt *ck, const char *name)
{
    if (!ck_alive(ck, "tfl_ckpt_find") || !name || !ck->by_name) return -1;
    int64_t lo = 0, hi = ck->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ck->by_name[mid]->name, name);
        if (c == 0) return ck->by_name[mid] - ck->e;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int64_t tfl_ckpt_num_metadata(const tfl_ckpt *ck)
{
    return ck_alive(ck, "tfl_ckpt_num_metadata") ? ck->n_meta : -1;
}
const char *tfl_ckpt_metadata_key(const tfl_ckpt *ck, int64_t i)
{
    return ck_alive(ck, "tfl_ckpt_metadata_key") && i >= 0 && i < ck->n_meta ? ck->meta_k[i] : NULL;
}
const char *tfl_ckpt_metadata_value(const tfl_ckpt *ck, int64_t i)
{
    return ck_alive(ck, "tfl_ckpt_metadata_value") && i >= 0 && i < ck->n_meta ? ck->meta_v[i]
                                                                               : NULL;
}
const char *tfl_ckpt_metadata(const tfl_ckpt *ck, const char *key)
{
    if (!ck_alive(ck, "tfl_ckpt_metadata") || !key || !ck->meta_k) return NULL;
    for (int64_t i = 0; i < ck->n_meta; i++)
        if (ck->meta_k[i] && strcmp(ck->meta_k[i], key) == 0) return ck->meta_v[i];
    return NULL;
}
const char *tfl_ckpt_path(const tfl_ckpt *ck)
{
    return ck_alive(ck, "tfl_ckpt_path") ? ck->path : NULL;
}

static tfl_status check_crc(tfl_ckpt *ck, const tfl__st_entry *e, uint32_t got)
{
    if (!e->has_crc || got == e->crc) return TFL_OK;
    return FAIL(ck,
                "Checkpoint '%s': tensor '%s': CRC mismatch (the file says %08x, its %lld "
                "bytes give %08x): the data is corrupt",
                ck->path, e->name, e->crc, (long long)(e->end - e->begin), got);
}

tfl_status tfl_ckpt_read(tfl_ckpt *ck, int64_t i, void *dst, size_t bytes)
{
    if (!ck) return TFL_INVALID_ARGUMENT;
    if (!ck_alive(ck, "tfl_ckpt_read")) return TFL_MISUSE;
    TFL_CHECK(ck->ctx, i >= 0 && i < ck->n, TFL_OUT_OF_RANGE,
              "tfl_ckpt_read: index %lld is out "
              "of range (%lld tensors)",
              (long long)i, (long long)ck->n);
    const tfl__st_entry *e = &ck->e[i];
    TFL_CHECK(ck->ctx, (dst || !bytes) && (int64_t)bytes == e->end - e->begin, TFL_INVALID_ARGUMENT,
              "tfl_ckpt_read: tensor '%s' has %lld bytes, not %zu", e->name,
              (long long)(e->end - e->begin), bytes);
    if (!bytes) return check_crc(ck, e, 0);
    TFL_TRY(tfl__st_pread(ck, ck->data_start + e->begin, dst, bytes));
    return check_crc(ck, e, tfl__crc32c(0, dst, bytes));
}

tfl_tensor *tfl_ckpt_read_tensor(tfl_ckpt *ck, const char *name)
{
    if (!ck_alive(ck, "tfl_ckpt_read_tensor")) return NULL;
    tfl_ctx *ctx = ck->ctx;
    int64_t i = tfl_ckpt_find(ck, name);
    TFL_CHECK_RET(ctx, i >= 0, NULL, TFL_NOT_FOUND, "Checkpoint '%s': no tensor named '%s'",
                  ck->path, name ? name : "(null)");
    tfl_ckpt_tensor_info info;
    tfl_ckpt_tensor_info_at(ck, i, &info);
    TFL_CHECK_RET(ctx, info.dtype != TFL_DTYPE_INVALID, NULL, TFL_UNIMPLEMENTED,
                  "Checkpoint '%s': tensor '%s': dtype %s has no tapeflow dtype", ck->path, name,
                  info.file_dtype);
    tfl_tensor *t = tfl__tensor_new_host(ctx, info.dtype, info.rank, info.shape);
    if (!t) return NULL;
    tfl_status st = tfl_ckpt_read(ck, i, tfl__tensor_host_data(t), (size_t)info.bytes);
    if (st == TFL_OK && info.dtype == TFL_DTYPE_BOOL) {
        const uint8_t *b = tfl__tensor_host_data(t);
        for (int64_t k = 0; k < info.bytes && st == TFL_OK; k++)
            if (b[k] > 1)
                st = FAIL(ck, "Checkpoint '%s': tensor '%s': bool element %lld is %u, not 0 or 1",
                          ck->path, name, (long long)k, b[k]);
    }
    if (st != TFL_OK) {
        tfl_tensor_release(t);
        return NULL;
    }
    return tfl__frame_adopt(ctx, t);
}

tfl_status tfl_ckpt_verify(tfl_ckpt *ck, int64_t *checked)
{
    if (!ck) return TFL_INVALID_ARGUMENT;
    if (!ck_alive(ck, "tfl_ckpt_verify")) return TFL_MISUSE;
    if (checked) *checked = 0;
    uint8_t *buf = tfl__host_alloc(ck->ctx, TFL__ST_CHUNK, 64);
    TFL_CHECK(ck->ctx, buf, TFL_RESOURCE_EXHAUSTED, "tfl_ckpt_verify: out of memory");
    tfl_status st = TFL_OK;
    for (int64_t i = 0; i < ck->n && st == TFL_OK; i++) {
        const tfl__st_entry *e = &ck->e[i];
        uint32_t crc = 0;
        for (int64_t at = e->begin; at < e->end && st == TFL_OK;) {
            size_t n = e->end - at < TFL__ST_CHUNK ? (size_t)(e->end - at) : TFL__ST_CHUNK;
            st = tfl__st_pread(ck, ck->data_start + at, buf, n);
            crc = tfl__crc32c(crc, buf, n);
            at += (int64_t)n;
        }
        if (st == TFL_OK) st = check_crc(ck, e, crc);
        if (st == TFL_OK && checked && e->has_crc) (*checked)++;
    }
    tfl__host_free(ck->ctx, buf);
    return st;
}
