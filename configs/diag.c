/*
 * configs/diag.c: config diagnostics as data (file, line, column, path, message), collected
 * up to a cap, sorted by position and formatted "file:line:col: path: message"; and the
 * did-you-mean suggestions (edit distance, hyphen/underscore and case variants).
 */
#include "configs_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* the shortest %g text of v that reads back as v (messages and the emitted config) */
void tfl__fmt_double(double v, char *buf, size_t size)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, size, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static void diag_add(tfl_config *cfg, int src, int line, int col, const char *path, const char *fmt,
                     va_list ap)
{
    cfg->total_diags++;
    if (cfg->n_diags >= TFL_CONFIG_MAX_DIAGS) return;
    if (cfg->n_diags == cfg->cap_diags) {
        size_t cap = cfg->cap_diags ? cfg->cap_diags * 2 : 16;
        tfl__diag *d = tfl__grow(cfg->ctx, cfg->diags, cfg->cap_diags * sizeof *d, cap * sizeof *d);
        if (!d) {
            cfg->arena.failed = true;
            tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED, "config: out of memory");
            return;
        }
        cfg->diags = d;
        cfg->cap_diags = cap;
    }
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    tfl__diag *d = &cfg->diags[cfg->n_diags];
    memset(d, 0, sizeof *d);
    d->src = src;
    d->seq = cfg->n_diags;
    d->d.file = src >= 0 && src < cfg->n_srcs ? cfg->srcs[src] : cfg->file;
    d->d.line = line;
    d->d.col = col;
    d->d.path = tfl__arena_strdup(&cfg->arena, path ? path : "");
    d->d.message = tfl__arena_strdup(&cfg->arena, msg);
    if (!d->d.path || !d->d.message) return;
    cfg->n_diags++;
}

void tfl__diag_pos(tfl_config *cfg, int src, int line, int col, const char *path, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_add(cfg, src, line, col, path, fmt, ap);
    va_end(ap);
}

void tfl__diag_at(tfl_config *cfg, const ynode *n, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_add(cfg, n ? n->src : 0, n ? n->line : 0, n ? n->col : 0, path, fmt, ap);
    va_end(ap);
}

static int diag_cmp(const void *pa, const void *pb)
{
    const tfl__diag *a = pa, *b = pb;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->d.line != b->d.line) return a->d.line < b->d.line ? -1 : 1;
    if (a->d.col != b->d.col) return a->d.col < b->d.col ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void tfl__diag_finish(tfl_config *cfg)
{
    if (cfg->n_diags > 1) qsort(cfg->diags, cfg->n_diags, sizeof *cfg->diags, diag_cmp);
    tfl__buf all = {.ctx = cfg->ctx};
    for (size_t i = 0; i < cfg->n_diags; i++) {
        tfl__diag *d = &cfg->diags[i];
        const char *path = d->d.path[0] ? d->d.path : NULL;
        if (d->d.line > 0)
            d->line_text =
                tfl__arena_printf(&cfg->arena, "%s:%d:%d: %s%s%s", d->d.file, d->d.line, d->d.col,
                                  path ? path : "", path ? ": " : "", d->d.message);
        else
            d->line_text = tfl__arena_printf(&cfg->arena, "%s: %s%s%s", d->d.file, path ? path : "",
                                             path ? ": " : "", d->d.message);
        tfl__buf_printf(&all, "%s\n", d->line_text ? d->line_text : d->d.message);
    }
    if (cfg->total_diags > cfg->n_diags)
        tfl__buf_printf(&all, "... and %zu more problems\n", cfg->total_diags - cfg->n_diags);
    if (all.failed) {
        tfl__host_free(cfg->ctx, all.p);
        all.p = NULL;
    }
    if (cfg->diag_all) tfl__host_free(cfg->ctx, cfg->diag_all);
    cfg->diag_all = all.p;
}

void tfl__buf_printf(tfl__buf *b, const char *fmt, ...)
{
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + (size_t)n + 1)
            cap *= 2;
        char *p = tfl__grow(b->ctx, b->p, b->n, cap);
        if (!p) {
            b->failed = true;
            tfl__set_error(b->ctx, TFL_RESOURCE_EXHAUSTED, "config: out of memory (%zu bytes)",
                           cap);
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* ---- suggestions ---------------------------------------------------------------------------- */

static char fold(char c)
{
    if (c == '-' || c == ' ') return '_';
    if (c >= 'A' && c <= 'Z') return (char)(c - 'A' + 'a');
    return c;
}

/** Damerau-Levenshtein (optimal string alignment) distance over folded characters, capped
 * at 64 characters (longer words count as far from everything). */
int tfl__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 1000;
    int d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = fold(a[i - 1]) != fold(b[j - 1]);
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

void tfl__suggest(const char *word, const char *const *names, int n, char *buf, size_t size)
{
    size_t wl = strlen(word);
    int limit = wl <= 3 ? 1 : wl <= 6 ? 2 : 3;
    int best[3] = {-1, -1, -1}, bestd[3] = {1000, 1000, 1000};
    for (int i = 0; i < n; i++) {
        int d = tfl__edit_distance(word, names[i]);
        if (d > limit) continue;
        for (int k = 0; k < 3; k++)
            if (d < bestd[k]) {
                for (int m = 2; m > k; m--) {
                    best[m] = best[m - 1];
                    bestd[m] = bestd[m - 1];
                }
                best[k] = i;
                bestd[k] = d;
                break;
            }
    }
    /* `num-epochs` for `epochs`: a known key after a prefix, at an '_' or '-' boundary */
    for (int i = 0; i < n && best[0] < 0; i++) {
        size_t nl = strlen(names[i]);
        if (nl >= 4 && wl > nl + 1 && (word[wl - nl - 1] == '_' || word[wl - nl - 1] == '-') &&
            tfl__edit_distance(word + wl - nl, names[i]) == 0)
            best[0] = i;
    }
    size_t o = 0;
    buf[0] = '\0';
    if (best[0] >= 0) {
        o += (size_t)snprintf(buf + o, size - o, "; did you mean ");
        int m = 0;
        while (m < 3 && best[m] >= 0)
            m++;
        for (int k = 0; k < m && o < size; k++)
            o += (size_t)snprintf(buf + o, size - o, "%s'%s'",
                                  k == 0       ? ""
                                  : k == m - 1 ? " or "
                                               : ", ",
                                  names[best[k]]);
        if (o < size) snprintf(buf + o, size - o, "?");
        return;
    }
    o += (size_t)snprintf(buf + o, size - o, "; expected one of: ");
    for (int i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "", names[i]);
}

/* ---- the public accessors of a config's diagnostics ---------------------------------------- */

bool tfl_config_valid(const tfl_config *cfg)
{
    return cfg && cfg->total_diags == 0 && !cfg->arena.failed && !cfg->fatal && cfg->res &&
           cfg->res->vals;
}

size_t tfl_config_diag_count(const tfl_config *cfg)
{
    return cfg ? cfg->n_diags : 0;
}
size_t tfl_config_diag_total(const tfl_config *cfg)
{
    return cfg ? cfg->total_diags : 0;
}

const tfl_config_diag *tfl_config_diag_at(const tfl_config *cfg, size_t i)
{
    return cfg && i < cfg->n_diags ? &cfg->diags[i].d : NULL;
}

const char *tfl_config_diag_text(const tfl_config *cfg, size_t i)
{
    return cfg && i < cfg->n_diags ? cfg->diags[i].line_text : NULL;
}

const char *tfl_config_diagnostics(const tfl_config *cfg)
{
    return cfg ? (cfg->diag_all ? cfg->diag_all : "") : NULL;
}
