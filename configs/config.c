/*
 * configs/config.c: loading a config (file or memory, then overrides, then one validation
 * pass and shape inference), its lifetime and its diagnostics' accessors.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "configs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static void config_free_obj(tfl__ctx_obj *obj)
{
    tfl_config_free((tfl_config *)obj);
}

tfl_config *tfl__config_new(tfl_ctx *ctx, const char *file, size_t n_overrides)
{
    tfl_config *cfg = tfl__obj_new(ctx, sizeof *cfg, TFL__MAGIC_CONFIG, config_free_obj);
    if (!cfg) return NULL;
    cfg->ctx = ctx;
    cfg->arena.ctx = ctx;
    cfg->file = tfl__arena_strdup(&cfg->arena, file);
    cfg->n_srcs = (int)n_overrides + 1;
    cfg->srcs = tfl__arena_alloc(&cfg->arena, sizeof *cfg->srcs * (size_t)cfg->n_srcs);
    if (!cfg->file || !cfg->srcs) {
        tfl_config_free(cfg);
        return NULL;
    }
    cfg->srcs[0] = cfg->file;
    for (int i = 1; i < cfg->n_srcs; i++) {
        cfg->srcs[i] = tfl__arena_printf(&cfg->arena, "--set[%d]", i);
        if (!cfg->srcs[i]) {
            tfl_config_free(cfg);
            return NULL;
        }
    }
    /* the run's name: the file name without its directory and .yaml / .yml */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".yaml"))
        n -= 5;
    else if (n > 4 && !strcmp(base + n - 4, ".yml"))
        n -= 4;
    cfg->name = tfl__arena_strndup(&cfg->arena, base, n);
    if (!cfg->name) {
        tfl_config_free(cfg);
        return NULL;
    }
    return cfg;
}

/** Validates what was read, sets the status and the ctx's error. */
static tfl_config *config_finish(tfl_config *cfg, const char *text, size_t len,
                                 const char *const *overrides, size_t n_overrides,
                                 tfl_status *status)
{
    /* a fatal problem (unreadable, malformed, out of bounds) stops here; duplicate keys and
     * override problems do not stop validation */
    bool read_ok = cfg->total_diags == 0;
    if (read_ok && text) {
        cfg->root = tfl__yaml_parse(cfg, text, len, 0);
        read_ok = (cfg->root || cfg->total_diags == 0) && !cfg->arena.failed;
    }
    if (read_ok) {
        for (size_t i = 0; i < n_overrides; i++) {
            if (!overrides || !overrides[i])
                tfl__diag_pos(cfg, (int)i + 1, 0, 0, "", "the override is NULL");
            else
                tfl__config_override(cfg, (int)i + 1, overrides[i]);
        }
        if (!cfg->arena.failed) tfl__config_resolve(cfg);
        if (!cfg->arena.failed && cfg->res && cfg->res->vals) tfl__config_rules(cfg);
        if (!cfg->arena.failed) tfl__config_graph(cfg);
        if (cfg->total_diags == 0 && !cfg->arena.failed) tfl__config_check_shapes(cfg);
    }
    cfg->fatal = !read_ok;
    tfl__diag_finish(cfg);
    tfl_status st = TFL_OK;
    if (cfg->arena.failed) {
        st = TFL_RESOURCE_EXHAUSTED;
        tfl__set_error(cfg->ctx, st, "config '%s': out of memory", cfg->file);
    } else if (cfg->total_diags > 0) {
        st = TFL_INVALID_ARGUMENT;
        const char *first = cfg->n_diags ? tfl_config_diag_text(cfg, 0) : "";
        tfl__set_error(cfg->ctx, st, "invalid config '%s': %zu problem%s; the first: %s", cfg->file,
                       cfg->total_diags, cfg->total_diags == 1 ? "" : "s", first ? first : "");
    }
    if (status) *status = st;
    return cfg;
}

tfl_config *tfl_config_parse(tfl_ctx *ctx, const char *text, size_t len, const char *name,
                             const char *base_dir, const char *const *overrides, size_t n_overrides,
                             tfl_status *status)
{
    if (status) *status = TFL_INVALID_ARGUMENT;
    if (!ctx) return NULL;
    if (!text && len) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tfl_config_parse: NULL text of %zu bytes", len);
        return NULL;
    }
    tfl_config *cfg = tfl__config_new(ctx, name ? name : "<config>", n_overrides);
    if (!cfg) {
        if (status) *status = TFL_RESOURCE_EXHAUSTED;
        return NULL;
    }
    cfg->base_dir = tfl__arena_strdup(&cfg->arena, base_dir ? base_dir : ".");
    return config_finish(cfg, text ? text : "", len, overrides, n_overrides, status);
}

tfl_config *tfl_config_load(tfl_ctx *ctx, const char *path, const char *const *overrides,
                            size_t n_overrides, tfl_status *status)
{
    if (status) *status = TFL_INVALID_ARGUMENT;
    if (!ctx) return NULL;
    if (!path) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tfl_config_load: NULL path");
        return NULL;
    }
    tfl_config *cfg = tfl__config_new(ctx, path, n_overrides);
    if (!cfg) {
        if (status) *status = TFL_RESOURCE_EXHAUSTED;
        return NULL;
    }
    /* the directory relative paths resolve against, absolute when it exists */
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? tfl__arena_strndup(&cfg->arena, path, slash == path ? 1 : (size_t)(slash - path))
              : tfl__arena_strdup(&cfg->arena, ".");
    char real[PATH_MAX];
    cfg->base_dir = dir && realpath(dir, real) ? tfl__arena_strdup(&cfg->arena, real) : dir;
    char *text = NULL;
    size_t len = 0;
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0) {
        tfl__diag_pos(cfg, 0, 0, 0, "", "cannot read the config: %s", strerror(errno));
    } else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        tfl__diag_pos(cfg, 0, 0, 0, "", "cannot read the config: not a regular file");
    } else if ((uint64_t)sb.st_size > TFL_CONFIG_MAX_BYTES) {
        tfl__diag_pos(cfg, 0, 0, 0, "", "the config is %lld bytes; the limit is %u",
                      (long long)sb.st_size, TFL_CONFIG_MAX_BYTES);
    } else {
        len = (size_t)sb.st_size;
        text = tfl__host_alloc(ctx, len + 1, 16);
        if (!text) {
            cfg->arena.failed = true;
        } else {
            size_t got = 0;
            while (got < len) {
                ssize_t r = read(fd, text + got, len - got);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) break;
                got += (size_t)r;
            }
            if (got != len)
                tfl__diag_pos(cfg, 0, 0, 0, "",
                              "cannot read the config: short read (%zu of %zu "
                              "bytes)",
                              got, len);
        }
    }
    if (fd >= 0) close(fd);
    config_finish(cfg, text, len, overrides, n_overrides, status);
    if (text) tfl__host_free(ctx, text);
    return cfg;
}

void tfl_config_free(tfl_config *cfg)
{
    if (!cfg) return;
    tfl_ctx *ctx = cfg->ctx;
    if (!tfl__obj_check(ctx, &cfg->obj, TFL__MAGIC_CONFIG, "tfl_config_free")) return;
    if (cfg->diags) tfl__host_free(ctx, cfg->diags);
    if (cfg->diag_all) tfl__host_free(ctx, cfg->diag_all);
    if (cfg->format_text) tfl__host_free(ctx, cfg->format_text);
    if (cfg->md_text) tfl__host_free(ctx, cfg->md_text);
    tfl__arena_free(&cfg->arena);
    tfl__obj_retire(ctx, &cfg->obj); /* a second free is MISUSE (base.h) */
}

const char *tfl_config_path(const tfl_config *cfg)
{
    return cfg ? cfg->file : NULL;
}
const char *tfl_config_name(const tfl_config *cfg)
{
    return cfg ? cfg->name : NULL;
}

/* A device the machine lacks (GPU:0 without a GPU): soft placement runs on CPU:0, and one
 * WARNING says so and why (tfl_device_note), so a run shows it on stderr and in run.log. */
static void warn_if_absent(tfl_ctx *ctx, const char *name)
{
    if (tfl__find_device(ctx, name)) return; /* the framework's parser: "gpu" is GPU:0 */
    char why[512];
    if (tfl_device_note(ctx, why, sizeof why) <= 0) snprintf(why, sizeof why, "no such device");
    tfl__log(ctx, TFL_LOG_WARNING, "training.device %s is not available (%s): training on CPU:0",
             name, why);
}

/* A policy other than float32 where training runs on the CPU: one WARNING that the CPU
 * computes in float32 (no TF32 format, no faster 16-bit arithmetic), as TensorFlow's TF32
 * switch does nothing there. */
static void warn_if_cpu_precision(tfl_ctx *ctx, tfl_precision precision)
{
    if (precision == TFL_PRECISION_FLOAT32) return;
    const tfl__device *d = tfl__resolve_device(ctx, "training.precision", NULL); /* the model's */
    if (!d || d != tfl__cpu(ctx)) return;
    tfl__log(ctx, TFL_LOG_WARNING,
             "training.precision %s applies to a GPU's matmuls and convolutions%s: on %s they "
             "run in float32", tfl_precision_name(precision),
             precision == TFL_PRECISION_TF32 ? "" : " and the ops between them",
             tfl__dev_name(d));
}

tfl_status tfl_config_apply_context(tfl_config *cfg)
{
    if (!cfg) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(cfg->ctx, tfl_config_valid(cfg), TFL_FAILED_PRECONDITION,
              "tfl_config_apply_context: the config '%s' is invalid", cfg->file);
    const rsec *tr = tfl__rget(cfg->res, "training")->sec;
    int64_t seed = tfl__rget(tr, "seed")->i, threads = tfl__rget(tr, "threads")->i;
    if (seed) TFL_TRY(tfl_ctx_set_seed(cfg->ctx, (uint64_t)seed));
    if (threads) TFL_TRY(tfl_ctx_set_num_threads(cfg->ctx, (int)threads));
    tfl_ctx_set_deterministic(cfg->ctx, tfl__rget(tr, "deterministic")->i != 0);
    tfl_precision precision = (tfl_precision)tfl__rget(tr, "precision")->i;
    TFL_TRY(tfl_ctx_set_precision(cfg->ctx, precision));
    /* training.device: a device scope for what is made from here on (once per config) */
    const rval *dev = tfl__rget(tr, "device");
    if (!cfg->device_scope && dev && dev->set && strcasecmp(dev->s, "auto") != 0) {
        char type[16], first[32]; /* a type alone ("GPU", "/gpu"): its first device */
        int index = 0;
        const char *name = dev->s;
        if (tfl_device_parse(name, type, sizeof type, &index) == TFL_OK && index < 0)
            snprintf(first, sizeof first, "%s:0", type), name = first;
        TFL_TRY(tfl_device_scope_push(cfg->ctx, name));
        cfg->device_scope = true;
        warn_if_absent(cfg->ctx, name);
    }
    warn_if_cpu_precision(cfg->ctx, precision);
    return TFL_OK;
}
