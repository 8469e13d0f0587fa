/*
 * tests/common/tfl_events_util.h: helpers of the event-file and plot tests: temporary
 * directories (removed with their files), whole files in memory, the event files of a
 * directory, and every event of a file collected into a table. Include after <cmocka.h> and
 * <tapeflow/tapeflow.h>.
 */
#ifndef TFL_EVENTS_UTIL_H
#define TFL_EVENTS_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new empty directory under TMPDIR (or /tmp), written into buf. */
static inline void temp_dir(char *buf, size_t cap, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, cap, "%s/tfl_%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    assert_non_null(mkdtemp(buf));
}

/* rm -r of a directory tree made by a test (files and directories only). */
static inline void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t need = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(need);
        if (!sub) continue;
        snprintf(sub, need, "%s/%s", path, e->d_name);
        struct stat sb;
        if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(sub);
        else unlink(sub);
        free(sub);
    }
    closedir(d);
    rmdir(path);
}

/* The whole file, malloc'ed and followed by a NUL (so text may be searched as a string); *n
 * its size. NULL when it cannot be read. */
static inline unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz + 1 : 1);
    *n = b && sz > 0 ? fread(b, 1, (size_t)sz, f) : 0;
    if (b) b[*n] = 0;
    fclose(f);
    return b;
}

static inline void spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* How many files in dir start with "events.out.tfevents."; the first by name in out. */
static inline int event_files(const char *dir, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    char best[1024] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "events.out.tfevents.", 20)) {
            if (!n || strcmp(e->d_name, best) < 0) snprintf(best, sizeof best, "%s", e->d_name);
            n++;
        }
    closedir(d);
    if (n && out) snprintf(out, cap, "%s/%s", dir, best);
    return n;
}

/* One event, copied out of the reader's storage. */
typedef struct ev_copy {
    tfl_event_kind kind;
    double wall_time, value;
    int64_t step;
    char tag[128], plugin[32], text[512];
    int session_status;
    double min, max, num, sum, sum_squares;
    int64_t n_buckets;
    double limits[64], counts[64]; /* the first 64 buckets */
} ev_copy;

typedef struct ev_table {
    ev_copy ev[512];
    int n;
    tfl_status end;    /* what the last next returned */
    int64_t truncated;
} ev_table;

/* Every event of the reader into t (up to 512); closes the reader. */
static inline void collect_events(tfl_event_reader *r, ev_table *t)
{
    assert_non_null(r);
    memset(t, 0, sizeof *t);
    tfl_event e;
    tfl_status st;
    while ((st = tfl_event_reader_next(r, &e)) == TFL_OK && t->n < 512) {
        ev_copy *c = &t->ev[t->n++];
        c->kind = e.kind;
        c->wall_time = e.wall_time;
        c->step = e.step;
        c->value = e.value;
        snprintf(c->tag, sizeof c->tag, "%s", e.tag);
        snprintf(c->plugin, sizeof c->plugin, "%s", e.plugin);
        snprintf(c->text, sizeof c->text, "%s", e.text);
        c->session_status = e.session_status;
        if (e.kind == TFL_EVENT_HISTOGRAM) {
            c->min = e.histo.min;
            c->max = e.histo.max;
            c->num = e.histo.num;
            c->sum = e.histo.sum;
            c->sum_squares = e.histo.sum_squares;
            c->n_buckets = e.histo.n_buckets;
            for (int64_t i = 0; i < e.histo.n_buckets && i < 64; i++) {
                c->limits[i] = e.histo.bucket_limit[i];
                c->counts[i] = e.histo.bucket[i];
            }
        }
    }
    t->end = st;
    t->truncated = tfl_event_reader_truncated(r);
    tfl_event_reader_close(r);
}

/* The index of the first event of `kind` with `tag` (NULL: any) from `from`; -1 if none. */
static inline int find_event(const ev_table *t, int from, tfl_event_kind kind, const char *tag)
{
    for (int i = from; i < t->n; i++)
        if (t->ev[i].kind == kind && (!tag || !strcmp(t->ev[i].tag, tag))) return i;
    return -1;
}

#endif /* TFL_EVENTS_UTIL_H */
