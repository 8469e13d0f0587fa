/*
 * configs/diff.c: which keys differ between the resolved config a run was started with
 * (the YAML tfl_config_format wrote, e.g. a training checkpoint's "tapeflow.config") and a
 * config now. Both sides are read as YAML trees and flattened to (path, value) leaves, the
 * same way, so the comparison needs no second validation: a run whose data moved since can
 * still be compared.
 */
#include "configs_internal.h"

#include <stdlib.h>

typedef struct leaf {
    const char *path, *value;
    size_t order; /* position in its document */
} leaf;

typedef struct leaves {
    tfl__arena *arena;
    leaf *v;
    size_t n, cap;
    bool failed;
} leaves;

static void add_leaf(leaves *L, const char *path, const char *value)
{
    if (L->failed) return;
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        leaf *v = tfl__arena_alloc(L->arena, cap * sizeof *v);
        if (!v) {
            L->failed = true;
            return;
        }
        if (L->n) memcpy(v, L->v, L->n * sizeof *v); /* the old block stays in the arena */
        L->v = v;
        L->cap = cap;
    }
    L->v[L->n] = (leaf){path, value, L->n};
    L->n++;
}

/* A scalar's text as the resolved YAML writes it (quoted strings keep their quotes). */
static char *scalar_text(tfl__arena *a, const ynode *n)
{
    return n->quoted ? tfl__arena_printf(a, "\"%s\"", n->text) : tfl__arena_strdup(a, n->text);
}

static bool all_scalars(const ynode *seq)
{
    for (const ynode *c = seq->first; c; c = c->next)
        if (c->kind != YN_SCALAR) return false;
    return true;
}

/* A flow list of scalars as one value: "[3, 3]", "[accuracy]", "[]". */
static char *list_text(tfl__arena *a, const ynode *seq)
{
    char *s = tfl__arena_strdup(a, "[");
    for (const ynode *c = seq->first; c && s; c = c->next)
        s = tfl__arena_printf(a, "%s%s%s", s, c == seq->first ? "" : ", ", scalar_text(a, c));
    return s ? tfl__arena_printf(a, "%s]", s) : NULL;
}

static void flatten(leaves *L, const ynode *n, const char *path, int depth)
{
    tfl__arena *a = L->arena;
    if (!n || L->failed) return;
    if (depth > TFL_CONFIG_MAX_DEPTH) { /* the parser bounds it already */
        L->failed = true;
        return;
    }
    if (n->kind == YN_SCALAR) {
        add_leaf(L, path, scalar_text(a, n));
    } else if (n->kind == YN_SEQ && all_scalars(n)) {
        add_leaf(L, path, list_text(a, n));
    } else if (n->kind == YN_SEQ) {
        size_t i = 0;
        for (const ynode *c = n->first; c; c = c->next, i++)
            flatten(L, c, tfl__arena_printf(a, "%s[%zu]", path, i), depth + 1);
    } else {
        for (const ynode *k = n->first; k && k->next; k = k->next->next) {
            const char *key = k->text[0] ? k->text : "\"\""; /* an empty key shows as "" */
            flatten(L, k->next,
                    *path ? tfl__arena_printf(a, "%s.%s", path, key) : tfl__arena_strdup(a, key),
                    depth + 1);
        }
    }
    if (a->failed) L->failed = true;
}

static int by_path(const void *x, const void *y)
{
    const leaf *a = x, *b = y;
    int c = strcmp(a->path, b->path);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

typedef struct ranked {
    size_t rank; /* unique */
    tfl_config_change ch;
} ranked;

static int by_rank(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

bool tfl_config_key_resumable(const char *path)
{
    if (!path) return false;
    return !strcmp(path, "training.epochs") || !strcmp(path, "training.sync_every") ||
           !strcmp(path, "training.step_graphs") ||
           !strncmp(path, "logging.", 8) ||
           !strcmp(path, "logging") || !strncmp(path, "checkpoint.", 11) ||
           !strcmp(path, "checkpoint");
}

/* Reads `text` as YAML into scratch's tree and flattens it; false with the ctx's error set. */
static bool read_side(tfl_config *scratch, const char *what, const char *text, size_t len,
                      leaves *L)
{
    ynode *root = tfl__yaml_parse(scratch, text, len, 0);
    if (scratch->arena.failed) {
        tfl__set_error(scratch->ctx, TFL_RESOURCE_EXHAUSTED, "tfl_config_diff: out of memory");
        return false;
    }
    if (scratch->total_diags > 0) {
        tfl__diag_finish(scratch);
        const char *first = scratch->n_diags ? tfl_config_diag_text(scratch, 0) : "";
        tfl__set_error(scratch->ctx, TFL_INVALID_ARGUMENT,
                       "tfl_config_diff: %s is not a YAML config: %s", what, first ? first : "");
        return false;
    }
    if (root && root->kind != YN_MAP) {
        tfl__set_error(scratch->ctx, TFL_INVALID_ARGUMENT,
                       "tfl_config_diff: %s is not a YAML mapping of config keys", what);
        return false;
    }
    flatten(L, root, "", 0);
    if (L->failed) {
        tfl__set_error(scratch->ctx, TFL_RESOURCE_EXHAUSTED, "tfl_config_diff: out of memory");
        return false;
    }
    if (L->n > 1) qsort(L->v, L->n, sizeof *L->v, by_path);
    return true;
}

int64_t tfl_config_diff(tfl_config *cfg, const char *was, size_t len,
                        const tfl_config_change **changes)
{
    if (changes) *changes = NULL;
    if (!cfg) return -1;
    tfl_ctx *ctx = cfg->ctx;
    if (!tfl__obj_check(ctx, &cfg->obj, TFL__MAGIC_CONFIG, "tfl_config_diff")) return -1;
    if (!changes || (!was && len)) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tfl_config_diff: %s",
                       !changes ? "changes is NULL" : "NULL text with a nonzero length");
        return -1;
    }
    if (!tfl_config_valid(cfg)) {
        tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                       "tfl_config_diff: the config '%s' is invalid (%zu problems)", cfg->file,
                       cfg->total_diags);
        return -1;
    }
    if (len > TFL_CONFIG_MAX_BYTES) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "tfl_config_diff: the earlier config is %zu bytes; the limit is %u", len,
                       TFL_CONFIG_MAX_BYTES);
        return -1;
    }
    char *now = tfl__config_emit(cfg, false);
    tfl_config *scratch = tfl__config_new(ctx, "<earlier config>", 0);
    int64_t count = -1;
    if (!now || !scratch) {
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_config_diff: out of memory");
        goto out;
    }
    leaves A = {.arena = &scratch->arena}, B = {.arena = &scratch->arena};
    if (!read_side(scratch, "the earlier config", was ? was : "", len, &A)) goto out;
    scratch->root = NULL;
    if (!read_side(scratch, "the config", now, strlen(now), &B)) goto out;

    /* a merge of the two sorted lists; the changes are kept in cfg's arena */
    size_t cap = A.n + B.n, n = 0;
    tfl_config_change *out = tfl__arena_alloc(&cfg->arena, (cap ? cap : 1) * sizeof *out);
    ranked *tmp = tfl__arena_alloc(&scratch->arena, (cap ? cap : 1) * sizeof *tmp);
    if (!out || !tmp) goto oom;
    for (size_t i = 0, j = 0; i < A.n || j < B.n;) {
        int c = i == A.n ? 1 : j == B.n ? -1 : strcmp(A.v[i].path, B.v[j].path);
        const leaf *a = c <= 0 ? &A.v[i++] : NULL, *b = c >= 0 ? &B.v[j++] : NULL;
        if (a && b && !strcmp(a->value, b->value)) continue;
        const char *path = b ? b->path : a->path;
        tfl_config_change ch = {
            .path = tfl__arena_strdup(&cfg->arena, path),
            .was = a ? tfl__arena_strdup(&cfg->arena, a->value) : NULL,
            .now = b ? tfl__arena_strdup(&cfg->arena, b->value) : NULL,
            .resumable = tfl_config_key_resumable(path),
        };
        if (!ch.path || (a && !ch.was) || (b && !ch.now)) goto oom;
        /* the config's key order; keys gone from it after them, in the earlier order */
        tmp[n++] = (ranked){b ? b->order : B.n + a->order, ch};
    }
    if (n > 1) qsort(tmp, n, sizeof *tmp, by_rank);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[i].ch;
    *changes = out;
    count = (int64_t)n;
    goto out;
oom:
    tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_config_diff: out of memory");
out:
    if (now) tfl__host_free(ctx, now);
    tfl_config_free(scratch);
    return count;
}
