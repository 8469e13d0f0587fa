/*
 * framework/io/ckpt_manager.c: the checkpoint manager (TensorFlow's CheckpointManager): the
 * newest N checkpoints of a directory plus one every K hours, an index file "checkpoint"
 * (TensorFlow's text format) written atomically and durably after each save and again after
 * the sweep, stray temporary files removed, and tfl_ckpt_latest, which trusts the index only
 * as far as the file it names opens and verifies.
 * Known limit: checkpoints kept for good by keep_every_hours leave the index (as in
 * TensorFlow); a manager that finds no index lists every checkpoint file again, those too,
 * and its sweeps may then delete them.
 */
#include "safetensors.h"

#include <dirent.h>
#include <tapeflow/files.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INDEX "checkpoint"
#define MAX_INDEX_BYTES (1 << 20)

struct tfl_ckpt_manager {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    char *dir;
    char prefix[64];
    int max_to_keep;
    double keep_hours;
    int64_t *steps; /* the kept checkpoints, oldest first */
    double *times;  /* their timestamps (seconds since the epoch) */
    int64_t n, cap;
    double last_preserved;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool prefix_ok(const char *p)
{
    if (!*p || strlen(p) >= 40) return false;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-'))
            return false;
    return true;
}

/* The step of a file name "<prefix>-<digits>.safetensors", or -1. */
static int64_t step_of(const char *prefix, const char *name)
{
    size_t lp = strlen(prefix);
    if (strncmp(name, prefix, lp) != 0 || name[lp] != '-') return -1;
    const char *p = name + lp + 1;
    int64_t step = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits >= 18) return -1;
        step = step * 10 + (*p - '0');
    }
    return digits && strcmp(p, ".safetensors") == 0 ? step : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The steps of the checkpoint files in dir, ascending; removes stray temporary files when
 * clean. Returns the count (a malloc'd *out through the ctx), -1 when dir cannot be read. */
static int64_t scan(tfl_ctx *ctx, const char *dir, const char *prefix, bool clean, int64_t **out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t n = 0, cap = 0;
    int64_t *v = NULL;
    char path[4096];
    for (struct dirent *e; (e = readdir(d));) {
        if (clean && tfl__afile_is_temp(e->d_name)) {
            size_t lp = strlen(prefix);
            bool ours = (strncmp(e->d_name + 1, prefix, lp) == 0 && e->d_name[1 + lp] == '-') ||
                        strncmp(e->d_name, "." INDEX ".tmp.", strlen(INDEX) + 6) == 0;
            if (ours && snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) {
                unlink(path);
                tfl__log(ctx, TFL_LOG_INFO,
                         "Checkpoint manager: removed the stray temporary "
                         "file '%s'",
                         path);
            }
            continue;
        }
        int64_t s = step_of(prefix, e->d_name);
        if (s < 0) continue;
        if (n == cap) {
            int64_t nc = cap ? cap * 2 : 16;
            int64_t *g = tfl__grow(ctx, v, (size_t)n * sizeof *v, (size_t)nc * sizeof *v);
            if (!g) break;
            v = g, cap = nc;
        }
        v[n++] = s;
    }
    closedir(d);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_i64);
    *out = v;
    return n;
}

static int file_path(const char *dir, const char *prefix, int64_t step, char *buf, size_t size)
{
    return snprintf(buf, size, "%s/%s-%08lld.safetensors", dir, prefix, (long long)step);
}

/* Parses the index: latest step and the kept steps with their timestamps. False when it is
 * missing or damaged in any way. */
static bool read_index(tfl_ctx *ctx, const char *dir, const char *prefix, int64_t *latest,
                       int64_t **steps, double **times, int64_t *n, double *last_preserved)
{
    char path[4096];
    *steps = NULL, *times = NULL, *n = 0, *latest = -1;
    if (snprintf(path, sizeof path, "%s/" INDEX, dir) >= (int)sizeof path) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char *text = tfl__host_alloc(ctx, MAX_INDEX_BYTES + 1, 16);
    size_t len = text ? fread(text, 1, MAX_INDEX_BYTES + 1, f) : 0;
    fclose(f);
    if (!text || len > MAX_INDEX_BYTES) {
        tfl__host_free(ctx, text);
        return false;
    }
    text[len] = 0;
    bool ok = memchr(text, 0, len) == NULL;
    int64_t cap = 0, nt = 0;
    for (char *line = text, *next; ok && *line; line = next) {
        next = strchr(line, '\n');
        if (!next) {
            ok = false;
            break;
        } /* a whole index ends with a newline */
        *next++ = 0;
        char name[256];
        double ts;
        int used = 0;
        if (sscanf(line, "model_checkpoint_path: \"%255[^\"]\"%n", name, &used) == 1 &&
            line[used] == 0) {
            ok = (*latest = step_of(prefix, name)) >= 0;
        } else if (sscanf(line, "all_model_checkpoint_paths: \"%255[^\"]\"%n", name, &used) == 1 &&
                   line[used] == 0) {
            int64_t s = step_of(prefix, name);
            if (s < 0 || *n == cap) {
                int64_t nc = cap ? cap * 2 : 16;
                int64_t *g = s < 0 ? NULL : tfl__grow(ctx, *steps, (size_t)*n * 8, (size_t)nc * 8);
                double *h = g ? tfl__grow(ctx, *times, (size_t)*n * 8, (size_t)nc * 8) : NULL;
                if (g) *steps = g;
                if (h) *times = h, cap = nc;
                if (!h) {
                    ok = false;
                    break;
                }
            }
            (*steps)[(*n)++] = s;
        } else if (sscanf(line, "all_model_checkpoint_timestamps: %lf%n", &ts, &used) == 1 &&
                   line[used] == 0 && nt < *n) {
            (*times)[nt++] = ts;
        } else if (sscanf(line, "last_preserved_timestamp: %lf%n", &ts, &used) == 1 &&
                   line[used] == 0) {
            *last_preserved = ts;
        } else {
            ok = false;
        }
    }
    tfl__host_free(ctx, text);
    ok = ok && *latest >= 0 && nt == *n;
    if (!ok) { /* nothing of a damaged index is used (*latest too: its path was not made) */
        tfl__host_free(ctx, *steps);
        tfl__host_free(ctx, *times);
        *steps = NULL, *times = NULL, *n = 0, *latest = -1;
    }
    return ok;
}

static tfl_status write_index(tfl_ckpt_manager *m, int64_t latest)
{
    tfl_ctx *ctx = m->ctx;
    size_t cap = 256 + (size_t)m->n * 160;
    char *text = tfl__host_alloc(ctx, cap, 16);
    TFL_CHECK(ctx, text, TFL_RESOURCE_EXHAUSTED, "Checkpoint manager: out of memory");
    size_t len = (size_t)snprintf(text, cap, "model_checkpoint_path: \"%s-%08lld.safetensors\"\n",
                                  m->prefix, (long long)latest);
    for (int64_t i = 0; i < m->n; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "all_model_checkpoint_paths: "
                                "\"%s-%08lld.safetensors\"\n",
                                m->prefix, (long long)m->steps[i]);
    for (int64_t i = 0; i < m->n; i++)
        len += (size_t)snprintf(text + len, cap - len, "all_model_checkpoint_timestamps: %.6f\n",
                                m->times[i]);
    len += (size_t)snprintf(text + len, cap - len, "last_preserved_timestamp: %.6f\n",
                            m->last_preserved);
    char path[4096];
    snprintf(path, sizeof path, "%s/" INDEX, m->dir);
    tfl__afile f;
    tfl_status st = tfl__afile_open(ctx, "Checkpoint manager", path, &f);
    if (st == TFL_OK) st = tfl__afile_write(ctx, "Checkpoint manager", &f, text, len);
    if (st == TFL_OK)
        st = tfl__afile_commit(ctx, "Checkpoint manager", &f, false);
    else if (f.tmp)
        tfl__afile_abort(ctx, &f);
    tfl__host_free(ctx, text);
    return st;
}

static void manager_free_obj(tfl__ctx_obj *o)
{
    tfl_ckpt_manager_free((tfl_ckpt_manager *)(void *)o);
}

static bool reserve(tfl_ckpt_manager *m, int64_t n)
{
    if (n <= m->cap) return true;
    int64_t nc = m->cap ? m->cap * 2 : 16;
    while (nc < n)
        nc *= 2;
    int64_t *s = tfl__grow(m->ctx, m->steps, (size_t)m->n * 8, (size_t)nc * 8);
    if (s) m->steps = s;
    double *t = s ? tfl__grow(m->ctx, m->times, (size_t)m->n * 8, (size_t)nc * 8) : NULL;
    if (t) m->times = t, m->cap = nc;
    if (!t) tfl__set_error(m->ctx, TFL_RESOURCE_EXHAUSTED, "Checkpoint manager: out of memory");
    return t != NULL;
}

tfl_ckpt_manager *tfl_ckpt_manager_new(tfl_ctx *ctx, const char *directory,
                                       const tfl_ckpt_manager_opts *opts)
{
    if (!ctx) return NULL;
    static const tfl_ckpt_manager_opts none;
    const tfl_ckpt_manager_opts *o = opts ? opts : &none;
    const char *prefix = o->prefix ? o->prefix : "ckpt";
    TFL_CHECK_RET(ctx, directory && *directory && strlen(directory) < 3000, NULL,
                  TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_manager_new: directory is NULL, empty or too long");
    TFL_CHECK_RET(ctx, o->max_to_keep >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_manager_new: "
                  "max_to_keep must be >= 0 (0 keeps all), got %d",
                  o->max_to_keep);
    TFL_CHECK_RET(ctx, o->keep_every_hours >= 0 && o->keep_every_hours < 1e9, NULL,
                  TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_manager_new: keep_every_hours must be >= 0, got "
                  "%g",
                  o->keep_every_hours);
    TFL_CHECK_RET(ctx, prefix_ok(prefix), NULL, TFL_INVALID_ARGUMENT,
                  "tfl_ckpt_manager_new: "
                  "prefix '%s' must be 1 to 39 letters, digits, '_', '.' or '-'",
                  prefix);
    if (tfl_make_dirs(ctx, directory) != TFL_OK) return NULL; /* mkdir -p */
    tfl_ckpt_manager *m = tfl__obj_new(ctx, sizeof *m, TFL__MAGIC_CKPT_MANAGER, manager_free_obj);
    if (!m) return NULL;
    m->ctx = ctx;
    m->dir = tfl__strdup(ctx, directory);
    snprintf(m->prefix, sizeof m->prefix, "%s", prefix);
    m->max_to_keep = o->max_to_keep;
    m->keep_hours = o->keep_every_hours;
    m->last_preserved = now_s();
    int64_t latest, *steps = NULL;
    double *times = NULL;
    int64_t n = 0;
    bool ok = m->dir != NULL;
    if (ok && read_index(ctx, directory, prefix, &latest, &steps, &times, &n, &m->last_preserved)) {
        m->steps = steps, m->times = times, m->n = m->cap = n;
        scan(ctx, directory, prefix, true, &steps); /* only to remove temporary files */
        tfl__host_free(ctx, steps);
    } else if (ok) {
        n = scan(ctx, directory, prefix, true, &steps);
        if (n < 0) {
            tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                           "tfl_ckpt_manager_new: cannot read the "
                           "directory '%s': %s",
                           directory, strerror(errno));
            ok = false;
        }
        for (int64_t i = 0; ok && i < n; i++) {
            char path[4096];
            struct stat sb;
            file_path(directory, prefix, steps[i], path, sizeof path);
            ok = reserve(m, m->n + 1);
            if (ok) {
                m->steps[m->n] = steps[i];
                m->times[m->n++] = stat(path, &sb) == 0 ? (double)sb.st_mtime : m->last_preserved;
            }
        }
        tfl__host_free(ctx, steps);
    }
    if (!ok) {
        tfl_ckpt_manager_free(m);
        return NULL;
    }
    return m;
}

void tfl_ckpt_manager_free(tfl_ckpt_manager *m)
{
    if (!m || !tfl__obj_check(m->ctx, &m->obj, TFL__MAGIC_CKPT_MANAGER, "tfl_ckpt_manager_free"))
        return;
    tfl__host_free(m->ctx, m->dir);
    tfl__host_free(m->ctx, m->steps);
    tfl__host_free(m->ctx, m->times);
    tfl__obj_retire(m->ctx, &m->obj);
}

static bool alive(const tfl_ckpt_manager *m, const char *what)
{
    return m && tfl__obj_check(m->ctx, &m->obj, TFL__MAGIC_CKPT_MANAGER, what);
}

int tfl_ckpt_manager_path(const tfl_ckpt_manager *m, int64_t step, char *buf, size_t size)
{
    if (!alive(m, "tfl_ckpt_manager_path") || step < 0 || (!buf && size)) return -1;
    return file_path(m->dir, m->prefix, step, buf, size);
}

tfl_status tfl_ckpt_manager_commit(tfl_ckpt_manager *m, int64_t step)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!alive(m, "tfl_ckpt_manager_commit")) return TFL_MISUSE;
    tfl_ctx *ctx = m->ctx;
    char path[4096];
    struct stat sb;
    TFL_CHECK(ctx, step >= 0 && step < 100000000000000000ll, TFL_INVALID_ARGUMENT,
              "tfl_ckpt_manager_commit: step %lld is out of range", (long long)step);
    file_path(m->dir, m->prefix, step, path, sizeof path);
    TFL_CHECK(ctx, stat(path, &sb) == 0, TFL_NOT_FOUND,
              "tfl_ckpt_manager_commit: '%s' does not "
              "exist (save it first)",
              path);
    double now = now_s();
    int64_t k = 0;
    for (int64_t i = 0; i < m->n; i++) /* a step saved again moves to the end */
        if (m->steps[i] != step) {
            m->steps[k] = m->steps[i];
            m->times[k++] = m->times[i] < now ? m->times[i] : now; /* the clock went back */
        }
    m->n = k;
    if (!reserve(m, m->n + 1)) return TFL_RESOURCE_EXHAUSTED;
    m->steps[m->n] = step;
    m->times[m->n++] = now;
    TFL_TRY(write_index(m, step));
    int64_t drop = m->max_to_keep > 0 && m->n > m->max_to_keep ? m->n - m->max_to_keep : 0;
    for (int64_t i = 0; i < drop; i++) {
        if (m->keep_hours > 0 && m->times[i] - m->keep_hours * 3600 >= m->last_preserved) {
            m->last_preserved = m->times[i]; /* kept for good, out of the index */
            continue;
        }
        file_path(m->dir, m->prefix, m->steps[i], path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT)
            tfl__log(ctx, TFL_LOG_WARNING, "Checkpoint manager: cannot remove '%s': %s", path,
                     strerror(errno));
    }
    memmove(m->steps, m->steps + drop, (size_t)(m->n - drop) * sizeof *m->steps);
    memmove(m->times, m->times + drop, (size_t)(m->n - drop) * sizeof *m->times);
    m->n -= drop;
    return drop ? write_index(m, step) : TFL_OK;
}

tfl_status tfl_ckpt_manager_save(tfl_ckpt_manager *m, int64_t step, int64_t n,
                                 const char *const *names, const tfl_tensor *const *tensors,
                                 const tfl_ckpt_save_opts *opts)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!alive(m, "tfl_ckpt_manager_save")) return TFL_MISUSE;
    char path[4096];
    TFL_CHECK(m->ctx,
              step >= 0 && file_path(m->dir, m->prefix, step, path, sizeof path) < (int)sizeof path,
              TFL_INVALID_ARGUMENT,
              "tfl_ckpt_manager_save: step %lld is "
              "negative or the path too long",
              (long long)step);
    TFL_TRY(tfl_ckpt_save(m->ctx, path, n, names, tensors, opts));
    return tfl_ckpt_manager_commit(m, step);
}

int64_t tfl_ckpt_manager_steps(const tfl_ckpt_manager *m, int64_t *out, int64_t cap)
{
    if (!alive(m, "tfl_ckpt_manager_steps")) return -1;
    for (int64_t i = 0; out && i < m->n && i < cap; i++)
        out[i] = m->steps[i];
    return m->n;
}

/* Opens and verifies path; the error of a failed try is not kept when none was before. */
static bool usable(tfl_ctx *ctx, const char *path)
{
    bool clean = tfl_ctx_status(ctx) == TFL_OK;
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    bool ok = ck && tfl_ckpt_verify(ck, NULL) == TFL_OK;
    tfl_ckpt_close(ck);
    if (!ok) {
        tfl_error e = tfl_ctx_error(ctx);
        tfl__log(ctx, TFL_LOG_WARNING,
                 "Checkpoint: skipping '%s', an older checkpoint is used if there is one: %s (%s)",
                 path, e.message, tfl_status_name(e.code));
        if (clean) tfl_ctx_clear_error(ctx);
    }
    return ok;
}

tfl_status tfl_ckpt_latest(tfl_ctx *ctx, const char *directory, const char *prefix, char *buf,
                           size_t size, int64_t *step)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    if (!prefix) prefix = "ckpt";
    TFL_CHECK(ctx, directory && prefix_ok(prefix) && strlen(directory) < 3000 && buf,
              TFL_INVALID_ARGUMENT, "tfl_ckpt_latest: NULL or bad directory, prefix or buffer");
    int64_t latest = -1, *steps = NULL, n = 0, tried = -1;
    double *times = NULL, lp = 0;
    char path[4096];
    if (read_index(ctx, directory, prefix, &latest, &steps, &times, &n, &lp)) {
        tfl__host_free(ctx, steps);
        tfl__host_free(ctx, times);
        file_path(directory, prefix, latest, path, sizeof path);
        if (!usable(ctx, path)) tried = latest, latest = -1;
    }
    if (latest < 0) {
        n = scan(ctx, directory, prefix, false, &steps);
        for (int64_t i = n - 1; i >= 0 && latest < 0; i--) {
            if (steps[i] == tried) continue; /* skipped once, and said so */
            file_path(directory, prefix, steps[i], path, sizeof path);
            if (usable(ctx, path)) latest = steps[i];
        }
        tfl__host_free(ctx, steps);
    }
    TFL_CHECK(ctx, latest >= 0, TFL_NOT_FOUND,
              "tfl_ckpt_latest: no usable checkpoint '%s-*."
              "safetensors' in '%s'",
              prefix, directory);
    TFL_CHECK(ctx, strlen(path) < size, TFL_INVALID_ARGUMENT,
              "tfl_ckpt_latest: the path needs "
              "%zu bytes, the buffer has %zu",
              strlen(path) + 1, size);
    memcpy(buf, path, strlen(path) + 1);
    if (step) *step = latest;
    return TFL_OK;
}
