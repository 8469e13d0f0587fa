/*
 * framework/io/checkpoint.c: tensors and variables to and from safetensors files by name:
 * tfl_ckpt_save (checks, then the streaming writer, which CRCs and guards against NaN and
 * Inf while it writes), tfl_ckpt_restore (every mismatch found before any variable changes),
 * tfl_ckpt_diff and tfl_ckpt_export.
 */
#include "safetensors.h"

#include "crc32c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SAVE "tfl_ckpt_save"

/* ---- saving ---------------------------------------------------------------------------------- */

/* Copies n bytes at `offset` of a contiguous tensor on another device to the host. */
static tfl_status device_src(void *user, int64_t item, int64_t offset, void *buf, size_t n)
{
    (void)item;
    return tfl__tensor_read_bytes(user, offset, buf, n);
}

static bool name_ok(tfl_ctx *ctx, const char *what, const char *name, int64_t i)
{
    TFL_CHECK_RET(ctx, name && *name, false, TFL_INVALID_ARGUMENT, "%s: tensor %lld has %s name",
                  what, (long long)i, name ? "an empty" : "no");
    TFL_CHECK_RET(ctx, tfl__utf8_check((const uint8_t *)name, (int64_t)strlen(name)) < 0, false,
                  TFL_INVALID_ARGUMENT, "%s: the name of tensor %lld is not valid UTF-8", what,
                  (long long)i);
    TFL_CHECK_RET(ctx, strcmp(name, "__metadata__") != 0, false, TFL_INVALID_ARGUMENT,
                  "%s: tensor %lld: '__metadata__' is not a tensor name", what, (long long)i);
    return true;
}

typedef struct named {
    const char *name;
    int64_t index;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* INVALID_ARGUMENT for a name given twice, naming both positions. */
static tfl_status check_unique(tfl_ctx *ctx, const char *what, const char *kind, named *v,
                               int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_named);
    for (int64_t i = 1; i < n; i++)
        if (strcmp(v[i - 1].name, v[i].name) == 0)
            return tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                                  "%s: duplicate %s '%s' (%s %lld and "
                                  "%lld): names in a checkpoint are unique",
                                  what, kind, v[i].name, kind, (long long)v[i - 1].index,
                                  (long long)v[i].index);
    return TFL_OK;
}

static tfl_status check_metadata(tfl_ctx *ctx, const tfl_ckpt_save_opts *o)
{
    TFL_CHECK(ctx, (o->flags & ~(unsigned)(TFL_CKPT_ALLOW_NONFINITE | TFL_CKPT_NO_FSYNC)) == 0,
              TFL_INVALID_ARGUMENT, SAVE ": unknown flags 0x%x", o->flags);
    TFL_CHECK(ctx,
              o->n_metadata >= 0 && (!o->n_metadata || (o->metadata_keys && o->metadata_values)),
              TFL_INVALID_ARGUMENT,
              SAVE ": n_metadata %d without keys and "
                   "values",
              o->n_metadata);
    for (int i = 0; i < o->n_metadata; i++) {
        const char *k = o->metadata_keys[i], *v = o->metadata_values[i];
        TFL_CHECK(ctx, k && v, TFL_INVALID_ARGUMENT, SAVE ": metadata entry %d is NULL", i);
        TFL_CHECK(ctx,
                  tfl__utf8_check((const uint8_t *)k, (int64_t)strlen(k)) < 0 &&
                      tfl__utf8_check((const uint8_t *)v, (int64_t)strlen(v)) < 0,
                  TFL_INVALID_ARGUMENT, SAVE ": metadata entry %d is not valid UTF-8", i);
        TFL_CHECK(ctx,
                  strncmp(k, TFL__ST_KEY_CRC, strlen(TFL__ST_KEY_CRC)) != 0 &&
                      strncmp(k, TFL__ST_KEY_DTYPE, strlen(TFL__ST_KEY_DTYPE)) != 0 &&
                      strcmp(k, TFL__ST_KEY_VERSION) != 0 &&
                      strcmp(k, "tapeflow.exported_from") != 0,
                  TFL_INVALID_ARGUMENT, SAVE ": metadata key '%s' is tapeflow's own", k);
        for (int j = 0; j < i; j++)
            TFL_CHECK(ctx, strcmp(o->metadata_keys[j], k) != 0, TFL_INVALID_ARGUMENT,
                      SAVE ": duplicate metadata key '%s'", k);
    }
    return TFL_OK;
}

/* One tensor's item (its CRC and the non-finite guard come while it is written). */
static tfl_status prepare_item(tfl_ctx *ctx, const tfl_tensor *t, const char *name, int64_t i,
                               unsigned flags, tfl__st_item *it)
{
    TFL_CHECK(ctx, t, TFL_INVALID_ARGUMENT, SAVE ": tensor %lld is NULL", (long long)i);
    if (!tfl__tensor_check_alive(t, SAVE)) return TFL_MISUSE;
    TFL_CHECK(ctx, tfl_tensor_ctx(t) == ctx, TFL_MISUSE,
              SAVE ": tensor %lld ('%s') belongs to another "
                   "context",
              (long long)i, name ? name : "?");
    if (!tfl__check_readable(ctx, SAVE, t)) return TFL_FAILED_PRECONDITION;
    tfl_dtype dt = tfl_tensor_dtype(t);
    memset(it, 0, sizeof *it);
    it->name = name;
    it->dt = tfl__st_dtype_of(dt);
    it->rank = tfl_tensor_rank(t);
    if (it->rank > 0) memcpy(it->shape, tfl_tensor_shape(t), (size_t)it->rank * sizeof *it->shape);
    if (dt == TFL_DTYPE_COMPLEX128) {
        it->complex128 = true;
        it->shape[it->rank++] = 2;
    }
    it->bytes = tfl_tensor_numel(t) * (int64_t)tfl_dtype_size(dt);
    if (!tfl_tensor_is_contiguous(t)) { /* a strided view: one contiguous copy */
        t = tfl__tensor_contiguous(ctx, t);
        if (!t) return tfl_ctx_status(ctx);
    }
    if (tfl__tensor_on_host(t)) {
        it->ptr = tfl__tensor_host_data(t);
    } else {
        it->src = device_src;
        it->user = (void *)(uintptr_t)t;
    }
    it->compute_crc = true;
    if (!(flags & TFL_CKPT_ALLOW_NONFINITE)) it->finite = dt;
    return TFL_OK;
}

static tfl_status save_in_frame(tfl_ctx *ctx, const char *path, int64_t n, const char *const *names,
                                const tfl_tensor *const *tensors, const tfl_ckpt_save_opts *o,
                                tfl__st_item *items, named *nm)
{
    for (int64_t i = 0; i < n; i++) {
        const tfl_tensor *t = tensors[i];
        const char *name = names ? names[i] : NULL;
        bool live = t && tfl__tensor_is_live(t);
        if (!name && live && tfl_tensor_is_variable(t)) name = tfl_variable_name(t);
        TFL_CHECK(ctx, name || !live || tfl_tensor_is_variable(t), TFL_INVALID_ARGUMENT,
                  SAVE ": tensor %lld has no name and is not a variable", (long long)i);
        if (t && !name_ok(ctx, SAVE, name, i)) return TFL_INVALID_ARGUMENT;
        nm[i] = (named){name ? name : "", i};
    }
    TFL_TRY(check_unique(ctx, SAVE, "name", nm, n));
    tfl_status st = TFL_OK;
    for (int64_t i = 0; i < n && st == TFL_OK; i++)
        st = prepare_item(ctx, tensors[i],
                          names && names[i] ? names[i]
                          : tensors[i] && tfl__tensor_is_live(tensors[i])
                              ? tfl_variable_name(tensors[i])
                              : NULL,
                          i, o->flags, &items[i]);
    if (st != TFL_OK) return st;
    return tfl__st_write(ctx, SAVE, path, items, n, o->n_metadata, o->metadata_keys,
                         o->metadata_values, o->flags);
}

tfl_status tfl_ckpt_save(tfl_ctx *ctx, const char *path, int64_t n, const char *const *names,
                         const tfl_tensor *const *tensors, const tfl_ckpt_save_opts *opts)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    static const tfl_ckpt_save_opts none;
    const tfl_ckpt_save_opts *o = opts ? opts : &none;
    TFL_CHECK(ctx, path && *path, TFL_INVALID_ARGUMENT, SAVE ": path is NULL or empty");
    TFL_CHECK(ctx, n >= 0 && (n == 0 || tensors) && n < ((int64_t)1 << 40), TFL_INVALID_ARGUMENT,
              SAVE ": %lld tensors%s", (long long)n, tensors ? "" : " and no array");
    TFL_TRY(check_metadata(ctx, o));
    size_t count = (size_t)(n ? n : 1);
    tfl__st_item *items = tfl__host_alloc(ctx, count * sizeof *items, 16);
    named *nm = tfl__host_alloc(ctx, count * sizeof *nm, 16);
    tfl_status st = items && nm ? tfl_frame_push(ctx) : TFL_RESOURCE_EXHAUSTED;
    if (st == TFL_OK) {
        st = save_in_frame(ctx, path, n, names, tensors, o, items, nm);
        tfl_frame_pop(ctx);
    } else if (!items || !nm) {
        tfl__set_error(ctx, st, SAVE ": out of memory for %lld tensors", (long long)n);
    }
    tfl__host_free(ctx, items);
    tfl__host_free(ctx, nm);
    return st;
}

/* ---- restoring ------------------------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 200 || lb > 200) return (size_t)-1;
    size_t row[201];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The unused tensor name closest to `name`, or NULL when none is close. */
/* name is in the NULL-ended list (NULL: an empty list) */
static bool listed(const char *const *list, const char *name)
{
    for (; list && *list; list++)
        if (!strcmp(*list, name)) return true;
    return false;
}

static const char *did_you_mean(const tfl_ckpt *ck, const bool *used, const char *name)
{
    const char *best = NULL;
    size_t bd = strlen(name) / 3 + 1;
    for (int64_t i = 0; i < ck->n; i++) {
        if (used[i]) continue;
        size_t d = edit_distance(name, ck->e[i].name);
        if (d <= bd) bd = d, best = ck->e[i].name;
    }
    return best;
}

typedef struct msgbuf {
    char s[TFL_MSG_SIZE];
    size_t n;
    int items;
} msgbuf;

static void msg_add(msgbuf *m, const char *fmt, ...) TFL_PRINTF(2, 3);
static void msg_add(msgbuf *m, const char *fmt, ...)
{
    if (m->n >= sizeof m->s) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(m->s + m->n, sizeof m->s - m->n, fmt, ap);
    va_end(ap);
    if (w > 0) m->n += (size_t)w;
}

/* A tensor read into a new CPU tensor no frame owns. */
static tfl_tensor *read_raw(tfl_ckpt *ck, int64_t i)
{
    tfl_ckpt_tensor_info info;
    tfl_ckpt_tensor_info_at(ck, i, &info);
    tfl_tensor *t = tfl__tensor_new_host(ck->ctx, info.dtype, info.rank, info.shape);
    if (t && tfl_ckpt_read(ck, i, tfl__tensor_host_data(t), (size_t)info.bytes) != TFL_OK) {
        tfl_tensor_release(t);
        return NULL;
    }
    const uint8_t *b = t && info.dtype == TFL_DTYPE_BOOL ? tfl__tensor_host_data(t) : NULL;
    for (int64_t k = 0; b && k < info.bytes; k++)
        if (b[k] > 1) {
            tfl__set_error(ck->ctx, TFL_DATA_LOSS,
                           "Checkpoint '%s': tensor '%s': bool element "
                           "%lld is %u, not 0 or 1",
                           ck->path, info.name, (long long)k, b[k]);
            tfl_tensor_release(t);
            return NULL;
        }
    return t;
}

static tfl_status check_vars(tfl_ctx *ctx, int64_t n, tfl_tensor *const *vars, named *nm)
{
    const char *who = "tfl_ckpt_restore";
    for (int64_t i = 0; i < n; i++) {
        tfl_tensor *v = vars[i];
        TFL_CHECK(ctx, v, TFL_INVALID_ARGUMENT, "%s: variable %lld is NULL", who, (long long)i);
        if (!tfl__tensor_check_alive(v, who)) return TFL_MISUSE;
        TFL_CHECK(ctx, tfl_tensor_ctx(v) == ctx, TFL_MISUSE,
                  "%s: variable %lld belongs to another context", who, (long long)i);
        TFL_CHECK(ctx, tfl_tensor_is_variable(v), TFL_INVALID_ARGUMENT,
                  "%s: entry %lld is a tensor, not a variable", who, (long long)i);
        nm[i] = (named){tfl_variable_name(v), i};
    }
    return check_unique(ctx, who, "variable", nm, n);
}

tfl_status tfl_ckpt_restore_from(tfl_ckpt *ck, int64_t n, tfl_tensor *const *vars,
                                 const tfl_ckpt_restore_opts *opts, tfl_ckpt_restore_report *report)
{
    tfl_ckpt_restore_report rep = {0};
    if (report) *report = rep;
    if (!ck) return TFL_INVALID_ARGUMENT;
    if (!tfl__obj_check(ck->ctx, &ck->obj, TFL__MAGIC_CKPT, "tfl_ckpt_restore")) return TFL_MISUSE;
    tfl_ctx *ctx = ck->ctx;
    static const tfl_ckpt_restore_opts strict;
    const tfl_ckpt_restore_opts *o = opts ? opts : &strict;
    TFL_CHECK(ctx, n >= 0 && (n == 0 || vars), TFL_INVALID_ARGUMENT,
              "tfl_ckpt_restore: %lld "
              "variables%s",
              (long long)n, vars ? "" : " and no array");
    size_t cn = (size_t)(n ? n : 1), cf = (size_t)(ck->n ? ck->n : 1);
    named *nm = tfl__host_alloc(ctx, cn * sizeof *nm, 16);
    int64_t *match = tfl__host_alloc(ctx, cn * sizeof *match, 16);
    tfl_tensor **vals = tfl__host_alloc(ctx, cn * sizeof *vals, 16);
    bool *used = tfl__host_alloc(ctx, cf, 16);
    tfl_status st = TFL_OK;
    if (vals) memset(vals, 0, cn * sizeof *vals); /* released below, whatever failed */
    if (used) memset(used, 0, cf);
    if (!nm || !match || !vals || !used)
        st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_ckpt_restore: out of memory");
    if (st == TFL_OK) st = check_vars(ctx, n, vars, nm);
    msgbuf miss = {{0}, 0, 0}, mis = {{0}, 0, 0}, unex = {{0}, 0, 0};
    for (int64_t i = 0; i < n && st == TFL_OK; i++) {
        tfl_tensor *v = vars[i];
        const char *name = tfl_variable_name(v);
        tfl_dtype vdt = tfl_tensor_dtype(v);
        int vrank = tfl_tensor_rank(v);
        const int64_t *vshape = tfl_tensor_shape(v);
        match[i] = tfl_ckpt_find(ck, name);
        if (match[i] < 0) continue;
        used[match[i]] = true;
        tfl_ckpt_tensor_info info;
        tfl_ckpt_tensor_info_at(ck, match[i], &info);
        if (info.dtype != vdt || !tfl__same_shape(info.rank, info.shape, vrank, vshape)) {
            char a[128], b[128];
            rep.mismatched++;
            tfl__log(ctx, TFL_LOG_ERROR,
                     "Checkpoint '%s': '%s' is %s %s in the checkpoint and "
                     "%s %s in the variable",
                     ck->path, name, info.file_dtype,
                     tfl__shape_str(info.rank, info.shape, a, sizeof a), tfl_dtype_name(vdt),
                     tfl__shape_str(vrank, vshape, b, sizeof b));
            if (mis.items++ < 3)
                msg_add(&mis, "%s'%s' (checkpoint %s %s, variable %s %s)",
                        mis.items > 1 ? ", " : "", name,
                        info.dtype ? tfl_dtype_name(info.dtype) : info.file_dtype, a,
                        tfl_dtype_name(vdt), b);
            match[i] = -1;
        } else {
            rep.matched++;
        }
    }
    for (int64_t i = 0; i < n && st == TFL_OK; i++) {
        const char *name = tfl_variable_name(vars[i]);
        if (match[i] >= 0 || tfl_ckpt_find(ck, name) >= 0) continue;
        const char *near = did_you_mean(ck, used, name);
        rep.missing++;
        tfl__log(ctx, o->allow_missing ? TFL_LOG_WARNING : TFL_LOG_ERROR,
                 "Checkpoint '%s': no "
                 "tensor for variable '%s'%s%s%s",
                 ck->path, name, near ? " (did you mean '" : "", near ? near : "",
                 near ? "'?)" : "");
        if (miss.items++ < 3)
            msg_add(&miss, "%s'%s'%s%s%s", miss.items > 1 ? ", " : "", name,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
    }
    size_t lp = o->ignore_prefix ? strlen(o->ignore_prefix) : 0;
    for (int64_t i = 0; i < ck->n && st == TFL_OK; i++) {
        if (used[i] || (lp && strncmp(ck->e[i].name, o->ignore_prefix, lp) == 0) ||
            listed(o->ignore_names, ck->e[i].name))
            continue;
        rep.unexpected++;
        /* expect_partial: the caller said so, a note (INFO) and no warning */
        tfl__log(ctx, o->allow_unexpected ? TFL_LOG_INFO : TFL_LOG_ERROR,
                 "Checkpoint '%s': "
                 "tensor '%s' has no variable",
                 ck->path, ck->e[i].name);
        if (unex.items++ < 3) msg_add(&unex, "%s'%s'", unex.items > 1 ? ", " : "", ck->e[i].name);
    }
    bool bad = rep.mismatched || (rep.missing && !o->allow_missing) ||
               (rep.unexpected && !o->allow_unexpected);
    if (st == TFL_OK && bad) {
        st = rep.mismatched || (rep.unexpected && !o->allow_unexpected) ? TFL_INVALID_ARGUMENT
                                                                        : TFL_NOT_FOUND;
        msgbuf all = {{0}, 0, 0};
        msg_add(&all, "Checkpoint '%s': restore refused, no variable changed:", ck->path);
        const msgbuf *parts[3] = {&mis, &miss, &unex};
        const char *what[3] = {"shape/dtype mismatches", "missing", "unexpected"};
        int64_t counts[3] = {rep.mismatched, rep.missing, rep.unexpected};
        for (int k = 0; k < 3; k++)
            msg_add(&all, "%s %lld %s%s%s%s%s", k ? ";" : "", (long long)counts[k], what[k],
                    counts[k] ? " (" : "", parts[k]->s, counts[k] > 3 ? ", ..." : "",
                    counts[k] ? ")" : "");
        tfl__set_error(ctx, st, "%s", all.s);
    }
    /* read (and CRC-check) everything, then make each variable's memory its own, then assign */
    for (int64_t i = 0; i < n && st == TFL_OK; i++)
        if (match[i] >= 0 && !(vals[i] = read_raw(ck, match[i]))) st = tfl_ctx_status(ctx);
    for (int64_t i = 0; i < n && st == TFL_OK; i++)
        if (vals[i] && tfl_variable_is_initialized(vars[i])) st = tfl__variable_own(vars[i]);
    for (int64_t i = 0; i < n && st == TFL_OK; i++)
        if (vals[i] && (st = tfl_variable_assign(vars[i], vals[i])) == TFL_OK) rep.restored++;
    for (int64_t i = 0; vals && i < n; i++)
        tfl_tensor_release(vals[i]);
    tfl__host_free(ctx, nm);
    tfl__host_free(ctx, match);
    tfl__host_free(ctx, vals);
    tfl__host_free(ctx, used);
    if (st != TFL_OK) rep.restored = 0;
    if (report) *report = rep;
    return st;
}

tfl_status tfl_ckpt_restore(tfl_ctx *ctx, const char *path, int64_t n, tfl_tensor *const *variables,
                            const tfl_ckpt_restore_opts *opts, tfl_ckpt_restore_report *report)
{
    if (report) *report = (tfl_ckpt_restore_report){0};
    if (!ctx) return TFL_INVALID_ARGUMENT;
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    if (!ck) return tfl_ctx_status(ctx);
    tfl_status st = tfl_ckpt_restore_from(ck, n, variables, opts, report);
    tfl_ckpt_close(ck);
    return st;
}
