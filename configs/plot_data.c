/*
 * configs/plot_data.c: the curves of tapeflow/plot.h: adding them, and loading a run's
 * training and validation curves from its metrics.csv or its event files.
 */
#include "plot_internal.h"

#include <tapeflow/events.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define CSV_LINE_MAX 65536
#define MAX_FILES 256  /* event files read per directory */

bool tfl__curves_alive(const tfl_curves *c, const char *what)
{
    return tfl__obj_check(c->ctx, &c->obj, TFL__MAGIC_CURVES, what);
}

static void free_curves(tfl_curves *c)
{
    tfl_ctx *ctx = c->ctx;
    for (int i = 0; i < c->n; i++) {
        tfl__host_free(ctx, c->v[i].label);
        tfl__host_free(ctx, c->v[i].p);
    }
    for (int i = 0; i < c->n_runs; i++) tfl__host_free(ctx, c->runs[i]);
    tfl__host_free(ctx, c->v);
    tfl__host_free(ctx, c->runs);
    tfl__host_free(ctx, c->svg);
    c->v = NULL;
    c->runs = NULL;
    c->svg = NULL;
    c->n = c->n_runs = 0;
    tfl__obj_retire(ctx, &c->obj);
}

static void free_obj(tfl__ctx_obj *o)
{
    free_curves((tfl_curves *)(void *)o);
}

tfl_curves *tfl_curves_new(tfl_ctx *ctx)
{
    if (!ctx) return NULL;
    tfl_curves *c = tfl__obj_new(ctx, sizeof *c, TFL__MAGIC_CURVES, free_obj);
    if (c) c->ctx = ctx;
    return c;
}

void tfl_curves_free(tfl_curves *c)
{
    if (c && tfl__curves_alive(c, "tfl_curves_free")) free_curves(c);
}

int tfl_curves_count(const tfl_curves *c)
{
    return c && tfl__curves_alive(c, "tfl_curves_count") ? c->n : 0;
}

/* ---- growable point lists ----------------------------------------------------------------- */

typedef struct plist {
    tfl__point *p;
    int64_t n, cap;
} plist;

static bool plist_push(tfl_ctx *ctx, plist *l, double x, double y)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 64;
        tfl__point *p = tfl__grow(ctx, l->p, sizeof(tfl__point) * (size_t)l->n,
                                  sizeof(tfl__point) * (size_t)cap);
        if (!p) {
            tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "plot: out of memory for %lld points",
                           (long long)cap);
            return false;
        }
        l->p = p;
        l->cap = cap;
    }
    l->p[l->n++] = (tfl__point){x, y};
    return true;
}

/* a resumed run: drop the points at x >= from (kept in order of arrival) */
static void plist_purge(plist *l, double from)
{
    int64_t k = 0;
    for (int64_t i = 0; i < l->n; i++)
        if (l->p[i].x < from) l->p[k++] = l->p[i];
    l->n = k;
}

static int by_x(const void *a, const void *b)
{
    double u = ((const tfl__point *)a)->x, v = ((const tfl__point *)b)->x;
    return (u > v) - (u < v);
}

/* ---- curves -------------------------------------------------------------------------------- */

static int run_index(tfl_curves *c, const char *run)
{
    for (int i = 0; i < c->n_runs; i++)
        if (!strcmp(c->runs[i], run)) return i;
    if (c->n_runs == c->cap_runs) {
        int cap = c->cap_runs ? 2 * c->cap_runs : 8;
        char **r = tfl__grow(c->ctx, c->runs, sizeof(char *) * (size_t)c->n_runs,
                             sizeof(char *) * (size_t)cap);
        if (!r) return -1;
        c->runs = r;
        c->cap_runs = cap;
    }
    char *s = tfl__strdup(c->ctx, run);
    if (!s) return -1;
    c->runs[c->n_runs] = s;
    return c->n_runs++;
}

/* takes the points of l (sorted by x, non-finite ones dropped) as a new curve */
static tfl_status add_points(tfl_curves *c, const char *run, const char *label, bool validation,
                             plist *l)
{
    int64_t k = 0;
    for (int64_t i = 0; i < l->n; i++)
        if (isfinite(l->p[i].x) && isfinite(l->p[i].y)) l->p[k++] = l->p[i];
    l->n = k;
    bool sorted = true;
    for (int64_t i = 1; i < l->n && sorted; i++) sorted = l->p[i - 1].x <= l->p[i].x;
    if (!sorted) qsort(l->p, (size_t)l->n, sizeof *l->p, by_x);
    int r = run_index(c, run);
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        tfl__curve *v = tfl__grow(c->ctx, c->v, sizeof(tfl__curve) * (size_t)c->n,
                                  sizeof(tfl__curve) * (size_t)cap);
        if (!v) r = -1;
        else {
            c->v = v;
            c->cap = cap;
        }
    }
    char *lab = r >= 0 ? tfl__strdup(c->ctx, label) : NULL;
    if (!lab) {
        tfl__host_free(c->ctx, l->p);
        *l = (plist){0};
        return tfl__set_error(c->ctx, TFL_RESOURCE_EXHAUSTED, "plot: out of memory");
    }
    c->v[c->n++] = (tfl__curve){.label = lab, .run = r, .validation = validation, .n = l->n,
                                .p = l->p};
    *l = (plist){0};
    return TFL_OK;
}

tfl_status tfl_curves_add(tfl_curves *c, const char *run, const char *label, bool validation,
                          int64_t n, const double *x, const double *y)
{
    if (!c) return TFL_INVALID_ARGUMENT;
    if (!tfl__curves_alive(c, "tfl_curves_add")) return TFL_MISUSE;
    TFL_CHECK(c->ctx, run && label, TFL_INVALID_ARGUMENT, "tfl_curves_add: the %s is NULL",
              run ? "label" : "run name");
    TFL_CHECK(c->ctx, n >= 0 && (n == 0 || (x && y)), TFL_INVALID_ARGUMENT, "tfl_curves_add: "
              "'%.64s': %s (n = %lld)", label, n < 0 ? "a negative count" : "x or y is NULL",
              (long long)n);
    plist l = {0};
    for (int64_t i = 0; i < n; i++)
        if (!plist_push(c->ctx, &l, x[i], y[i])) {
            tfl__host_free(c->ctx, l.p);
            return TFL_RESOURCE_EXHAUSTED;
        }
    return add_points(c, run, label, validation, &l);
}

/* ---- metrics.csv --------------------------------------------------------------------------- */

/* splits a line at commas in place (at most cap fields); returns the count */
static int split(char *line, char **fields, int cap)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n < cap) fields[n] = p;
        n++;
        char *comma = strchr(p, ',');
        if (!comma) break;
        *comma = 0;
        p = comma + 1;
    }
    return n;
}

static tfl_status load_csv(tfl_curves *c, const char *path, const char *metric, const char *name,
                           int *added)
{
    tfl_ctx *ctx = c->ctx;
    FILE *f = fopen(path, "r");
    if (!f)
        return tfl__set_error(ctx, errno == ENOENT ? TFL_NOT_FOUND : TFL_FAILED_PRECONDITION,
                              "plot: cannot open '%.256s': %s", path, strerror(errno));
    char *line = tfl__host_alloc(ctx, CSV_LINE_MAX, 1);
    char *header = tfl__host_alloc(ctx, CSV_LINE_MAX, 1);
    plist tr = {0}, va = {0};
    tfl_status st = TFL_OK;
    if (!line || !header) st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "plot: out of memory");
    char *fields[64];
    int col_epoch = -1, col_m = -1, col_v = -1, n_cols = 0;
    char val[80];
    snprintf(val, sizeof val, "val_%s", metric);
    if (st == TFL_OK && !fgets(header, CSV_LINE_MAX, f))
        st = tfl__set_error(ctx, TFL_DATA_LOSS, "plot: '%.256s' is empty (no header)", path);
    if (st == TFL_OK) {
        header[strcspn(header, "\r\n")] = 0;
        n_cols = split(header, fields, 64);
        for (int i = 0; i < n_cols && i < 64; i++) {
            if (!strcmp(fields[i], "epoch")) col_epoch = i;
            if (!strcmp(fields[i], metric)) col_m = i;
            if (!strcmp(fields[i], val)) col_v = i;
        }
        if (col_m < 0 && col_v < 0) {
            char have[256] = "";
            for (int i = 0; i < n_cols && i < 64; i++)
                if (i != col_epoch)
                    snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
                             have[0] ? ", " : "", fields[i]);
            st = tfl__set_error(ctx, TFL_NOT_FOUND, "plot: '%.256s' has no metric '%.64s' (it "
                                "has: %s)", path, metric, have);
        }
    }
    for (int64_t ln = 2, row = 0; st == TFL_OK && fgets(line, CSV_LINE_MAX, f); ln++) {
        size_t len = strcspn(line, "\r\n");
        if (line[len] == 0 && !feof(f)) {
            st = tfl__set_error(ctx, TFL_DATA_LOSS, "plot: '%.256s' line %lld is longer than %d "
                                "bytes", path, (long long)ln, CSV_LINE_MAX - 2);
            break;
        }
        line[len] = 0;
        if (len == 0) continue;
        int n = split(line, fields, 64);
        double v[3] = {NAN, NAN, NAN};
        int cols[3] = {col_epoch, col_m, col_v};
        for (int k = 0; k < 3 && st == TFL_OK; k++) {
            if (cols[k] < 0 || cols[k] >= n || cols[k] >= 64 || !fields[cols[k]][0]) continue;
            char *end;
            v[k] = strtod(fields[cols[k]], &end);
            if (*end)
                st = tfl__set_error(ctx, TFL_DATA_LOSS, "plot: '%.256s' line %lld: '%.32s' is not "
                                    "a number", path, (long long)ln, fields[cols[k]]);
        }
        double x = col_epoch >= 0 ? v[0] + 1 : (double)row + 1; /* epochs drawn 1-based */
        row++;
        if (st != TFL_OK) break;
        if (tr.n && x <= tr.p[tr.n - 1].x) plist_purge(&tr, x); /* a resumed run's rows */
        if (va.n && x <= va.p[va.n - 1].x) plist_purge(&va, x);
        if (!isnan(v[1]) && !plist_push(ctx, &tr, x, v[1])) st = TFL_RESOURCE_EXHAUSTED;
        if (st == TFL_OK && !isnan(v[2]) && !plist_push(ctx, &va, x, v[2]))
            st = TFL_RESOURCE_EXHAUSTED;
    }
    fclose(f);
    tfl__host_free(ctx, line);
    tfl__host_free(ctx, header);
    char label[300];
    if (st == TFL_OK && tr.n) {
        snprintf(label, sizeof label, "%s: training", name);
        if ((st = add_points(c, name, label, false, &tr)) == TFL_OK) (*added)++;
    }
    if (st == TFL_OK && va.n) {
        snprintf(label, sizeof label, "%s: validation", name);
        if ((st = add_points(c, name, label, true, &va)) == TFL_OK) (*added)++;
    }
    tfl__host_free(ctx, tr.p);
    tfl__host_free(ctx, va.p);
    if (st == TFL_OK && !c->x_label[0]) snprintf(c->x_label, sizeof c->x_label, "epoch");
    return st;
}

/* ---- event files --------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct scalar tags the event files have, for a message: "a, b, c" (capped). */
typedef struct tagset {
    char text[400];
    bool cut;
} tagset;

static void tagset_add(tagset *t, const char *tag)
{
    size_t n = strlen(t->text), k = strlen(tag);
    for (const char *p = t->text; (p = strstr(p, tag)); p += k) /* seen: whole items only */
        if ((p == t->text || p[-1] == ' ') && (p[k] == ',' || p[k] == 0)) return;
    if (n + k + 3 >= sizeof t->text) {
        t->cut = true;
        return;
    }
    snprintf(t->text + n, sizeof t->text - n, "%s%s", n ? ", " : "", tag);
}

/* The scalars of tags[0..3) in the event files at path (a file, or every events.out.tfevents.*
 * of a directory in name order), with TensorBoard's purge on a later SessionLog START.
 * *files receives how many files were read. */
static tfl_status read_events(tfl_ctx *ctx, const char *path, const char *const tags[3],
                              plist lists[3], int *files, bool *started, tagset *seen)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return TFL_OK;
    char *names[MAX_FILES];
    int n = 0;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return TFL_OK;
        struct dirent *e;
        while ((e = readdir(d)) && n < MAX_FILES)
            if (!strncmp(e->d_name, "events.out.tfevents.", 20)) {
                size_t k = strlen(path) + strlen(e->d_name) + 2;
                names[n] = tfl__host_alloc(ctx, k, 1);
                if (!names[n]) break;
                snprintf(names[n++], k, "%s/%s", path, e->d_name);
            }
        closedir(d);
        qsort(names, (size_t)n, sizeof names[0], by_name);
    } else {
        names[n] = tfl__strdup(ctx, path);
        if (names[n]) n++;
    }
    tfl_status st = TFL_OK;
    for (int i = 0; i < n; i++) {
        tfl_event_reader *r = st == TFL_OK ? tfl_event_reader_open(ctx, names[i]) : NULL;
        tfl__host_free(ctx, names[i]);
        if (!r) {
            if (st == TFL_OK) st = tfl_ctx_status(ctx);
            continue;
        }
        (*files)++;
        tfl_event ev;
        while ((st = tfl_event_reader_next(r, &ev)) == TFL_OK) {
            if (ev.kind == TFL_EVENT_SESSION_LOG && ev.session_status == TFL_SESSION_START) {
                if (*started)
                    for (int k = 0; k < 3; k++) plist_purge(&lists[k], (double)ev.step);
                *started = true;
            } else if (ev.kind == TFL_EVENT_SCALAR) {
                tagset_add(seen, ev.tag);
                for (int k = 0; k < 3 && st == TFL_OK; k++) {
                    if (!tags[k] || strcmp(ev.tag, tags[k])) continue;
                    /* a step at or before the tag's last point replaces the points from it
                     * on (a resumed fit that does the epoch end of its checkpoint again) */
                    plist *l = &lists[k];
                    if (l->n && (double)ev.step <= l->p[l->n - 1].x) plist_purge(l, (double)ev.step);
                    if (!plist_push(ctx, l, (double)ev.step, ev.value)) st = TFL_RESOURCE_EXHAUSTED;
                }
                if (st != TFL_OK) break;
            }
        }
        tfl_event_reader_close(r);
        if (st == TFL_OUT_OF_RANGE) st = TFL_OK; /* the end (a cut last record is fine) */
    }
    return st;
}

static bool has_event_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) found = !strncmp(e->d_name, "events.out.tfevents.", 20);
    closedir(d);
    return found;
}

/* the first non-empty list of lists[0..3) (moved to *out) */
static void pick(plist lists[3], plist *out)
{
    for (int k = 0; k < 3; k++)
        if (lists[k].n && !out->n) {
            *out = lists[k];
            lists[k] = (plist){0};
        }
}

static tfl_status load_events(tfl_curves *c, const char *train, const char *valdir,
                              const char *metric, const char *name, int *added)
{
    tfl_ctx *ctx = c->ctx;
    char t_epoch[96], t_step[96], t_val[96], t_epoch_val[96];
    snprintf(t_epoch, sizeof t_epoch, "epoch/%s", metric);
    snprintf(t_step, sizeof t_step, "step/%s", metric);
    snprintf(t_val, sizeof t_val, "val_%s", metric);
    snprintf(t_epoch_val, sizeof t_epoch_val, "epoch/val_%s", metric);
    const char *tags[3] = {t_epoch, metric, t_step};
    const char *vtags_same[3] = {t_epoch, metric, NULL};     /* in validation/ */
    const char *vtags_here[3] = {t_epoch_val, t_val, NULL};  /* in the same files */
    plist lt[3] = {{0}}, lv[3] = {{0}}, tr = {0}, va = {0};
    int files = 0;
    bool started = false, vstarted = false;
    tagset seen = {{0}, false};
    tfl_status st = read_events(ctx, train, tags, lt, &files, &started, &seen);
    if (st == TFL_OK)
        st = valdir ? read_events(ctx, valdir, vtags_same, lv, &files, &vstarted, &seen)
                    : read_events(ctx, train, vtags_here, lv, &files, &vstarted, &seen);
    pick(lt, &tr);
    pick(lv, &va);
    for (int k = 0; k < 3; k++) {
        tfl__host_free(ctx, lt[k].p);
        tfl__host_free(ctx, lv[k].p);
    }
    if (st == TFL_OK && !tr.n && !va.n)
        st = tfl__set_error(ctx, TFL_NOT_FOUND, "plot: the event files of '%.256s' have no scalar "
                            "'%.64s' (nor %s or %s); their scalars: %s%s", train, metric, t_epoch,
                            t_step, seen.text[0] ? seen.text : "none", seen.cut ? ", ..." : "");
    char label[300];
    if (st == TFL_OK && tr.n) {
        snprintf(label, sizeof label, "%s: training", name);
        if ((st = add_points(c, name, label, false, &tr)) == TFL_OK) (*added)++;
    }
    if (st == TFL_OK && va.n) {
        snprintf(label, sizeof label, "%s: validation", name);
        if ((st = add_points(c, name, label, true, &va)) == TFL_OK) (*added)++;
    }
    tfl__host_free(ctx, tr.p);
    tfl__host_free(ctx, va.p);
    if (st == TFL_OK && !c->x_label[0]) snprintf(c->x_label, sizeof c->x_label, "step");
    return st;
}

/* Whether the CSV file's header has the column metric or val_<metric>. */
static bool csv_has(const char *path, const char *metric)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char header[4096], *fields[64];
    bool found = false;
    if (fgets(header, sizeof header, f)) {
        header[strcspn(header, "\r\n")] = 0;
        int n = split(header, fields, 64);
        for (int i = 0; i < n && i < 64 && !found; i++)
            found = !strcmp(fields[i], metric) ||
                    (!strncmp(fields[i], "val_", 4) && !strcmp(fields[i] + 4, metric));
    }
    fclose(f);
    return found;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

tfl_status tfl_curves_load_run(tfl_curves *c, const char *path, const char *metric,
                               const char *name, int *added)
{
    int dummy = 0;
    if (!added) added = &dummy;
    *added = 0;
    if (!c) return TFL_INVALID_ARGUMENT;
    if (!tfl__curves_alive(c, "tfl_curves_load_run")) return TFL_MISUSE;
    tfl_ctx *ctx = c->ctx;
    if (!metric) metric = "loss";
    TFL_CHECK(ctx, path && *path, TFL_INVALID_ARGUMENT, "tfl_curves_load_run: the path is %s",
              path ? "empty" : "NULL");
    TFL_CHECK(ctx, *metric && strlen(metric) < 60 && !strchr(metric, ','), TFL_INVALID_ARGUMENT,
              "tfl_curves_load_run: bad metric name '%.64s'", metric);
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/') plen--;
    char *base = tfl__host_alloc(ctx, plen + 32, 1);
    TFL_CHECK(ctx, base, TFL_RESOURCE_EXHAUSTED, "plot: out of memory");
    memcpy(base, path, plen);
    base[plen] = 0;
    if (!name) {
        const char *slash = strrchr(base, '/');
        name = slash && slash[1] ? slash + 1 : base;
    }
    if (!c->metric[0]) snprintf(c->metric, sizeof c->metric, "%s", metric);
    struct stat sb;
    tfl_status st;
    size_t k = plen + 32;
    char *a = tfl__host_alloc(ctx, k, 1), *b = tfl__host_alloc(ctx, k, 1);
    if (!a || !b) {
        st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "plot: out of memory");
    } else if (stat(base, &sb) != 0) {
        st = tfl__set_error(ctx, TFL_NOT_FOUND, "plot: no run at '%.256s': %s", base,
                            strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        st = ends_with(base, ".csv") ? load_csv(c, base, metric, name, added)
                                     : load_events(c, base, NULL, metric, name, added);
    } else {
        snprintf(a, k, "%s/metrics.csv", base);
        snprintf(b, k, "%s/train", base);
        /* metrics.csv, unless it lacks the metric and the event files may have it
         * (step/learning_rate, step/grad_norm, ...) */
        if (stat(a, &sb) == 0 && (csv_has(a, metric) || !has_event_files(b))) {
            st = load_csv(c, a, metric, name, added);
        } else if (has_event_files(b)) {
            snprintf(a, k, "%s/validation", base);
            st = load_events(c, b, a, metric, name, added);
        } else if (has_event_files(base)) {
            st = load_events(c, base, NULL, metric, name, added);
        } else {
            st = tfl__set_error(ctx, TFL_NOT_FOUND, "plot: '%.256s' has no metrics.csv and no "
                                "event files (in it or in train/)", base);
        }
    }
    tfl__host_free(ctx, a);
    tfl__host_free(ctx, b);
    tfl__host_free(ctx, base);
    return st;
}
