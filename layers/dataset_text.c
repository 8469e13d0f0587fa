/*
 * layers/dataset_text.c: tfl_dataset_from_text: next-token windows over a text file or the
 * files of a glob(3) pattern, memory-mapped read-only (nothing of the corpus is copied into
 * the context's memory; a batch gathers its windows from the mapping). The checks of the
 * files (empty, binary, too short) and the token vocabulary are here; the corpus record and
 * its windows are dataset_corpus.c's, batching is dataset.c's.
 */
#include "dataset_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file is binary when it has a NUL byte, or when more than 1 in BINARY_INVALID_PER of its
 * bytes are not part of a well-formed UTF-8 sequence (a Latin-1 text with a few accented
 * letters still loads). */
#define BINARY_INVALID_PER 100

/* The bytes of p[0..n) outside well-formed UTF-8 sequences (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF); *nul: the offset of the first NUL, or -1. */
static int64_t utf8_invalid(const uint8_t *p, int64_t n, int64_t *nul)
{
    int64_t bad = 0;
    *nul = -1;
    for (int64_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c < 0x80) {
            if (c == 0 && *nul < 0) *nul = i;
            i++;
            continue;
        }
        int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        bool ok = len > 0 && i + len <= n;
        if (ok) {
            uint8_t c1 = p[i + 1];
            uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
            uint8_t hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
            ok = c1 >= lo && c1 <= hi;
            for (int k = 2; ok && k < len; k++) ok = (p[i + k] & 0xC0) == 0x80;
        }
        if (ok) {
            i += len;
        } else {
            bad++;
            i++;
        }
    }
    return bad;
}

/* Maps `file` (a regular, non-empty text file) into seg; false with the error kept. */
static bool map_file(tfl_ctx *ctx, const char *file, tfl__ds_text_seg *seg, bool *seen)
{
    int fd = open(file, O_RDONLY);
    if (fd < 0) {
        int e = errno;
        return tfl__set_error(ctx, e == ENOENT ? TFL_NOT_FOUND : TFL_FAILED_PRECONDITION,
                              "Text file '%s' cannot be opened: %s", file, strerror(e)),
               false;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    if (why) {
        close(fd);
        return tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "Text file '%s': %s", file, why),
               false;
    }
    if (st.st_size <= 0) {
        close(fd);
        return tfl__set_error(ctx, TFL_DATA_LOSS, "Text file '%s' is empty", file), false;
    }
    if ((uintmax_t)st.st_size > SIZE_MAX / 2) {
        close(fd);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                              "Text file '%s' of %lld bytes is too large to map", file,
                              (long long)st.st_size),
               false;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping stays */
    if (p == MAP_FAILED)
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "Text file '%s' cannot be mapped: %s",
                              file, strerror(e)),
               false;
    seg->p = p;
    seg->len = (int64_t)st.st_size;
    int64_t nul, bad = utf8_invalid(seg->p, seg->len, &nul);
    if (nul >= 0)
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "Text file '%s' is binary, not text: byte %lld is NUL", file,
                              (long long)nul),
               false;
    if (bad > seg->len / BINARY_INVALID_PER)
        return tfl__set_error(ctx, TFL_DATA_LOSS,
                              "Text file '%s' is binary, not text: %lld of its %lld bytes are "
                              "not valid UTF-8 (at most 1%% may be)", file, (long long)bad,
                              (long long)seg->len),
               false;
    for (int64_t i = 0; i < seg->len; i++) seen[seg->p[i]] = true;
    return true;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of `path`: itself when it names a file, else the matches of the glob pattern,
 * sorted byte by byte; *g is to be globfree'd when *used_glob. NULL with the error kept. */
static char **list_files(tfl_ctx *ctx, const char *path, glob_t *g, int *n, bool *used_glob,
                         char **one)
{
    struct stat st;
    *used_glob = false;
    if (stat(path, &st) == 0 || !strpbrk(path, "*?[")) {
        one[0] = (char *)(uintptr_t)path; /* read only */
        *n = 1;
        return one;
    }
    int r = glob(path, GLOB_NOSORT, NULL, g);
    if (r == GLOB_NOMATCH || (r == 0 && g->gl_pathc == 0)) {
        if (r == 0) globfree(g);
        tfl__set_error(ctx, TFL_NOT_FOUND, "Text files: the pattern '%s' matches no file", path);
        return NULL;
    }
    if (r != 0) {
        tfl__set_error(ctx, r == GLOB_NOSPACE ? TFL_RESOURCE_EXHAUSTED : TFL_FAILED_PRECONDITION,
                       "Text files: the pattern '%s' cannot be expanded (%s)", path,
                       r == GLOB_NOSPACE ? "out of memory" : "a directory cannot be read");
        return NULL;
    }
    if (g->gl_pathc > (size_t)INT32_MAX) {
        globfree(g);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "Text files: the pattern '%s' matches too "
                       "many files", path);
        return NULL;
    }
    qsort(g->gl_pathv, g->gl_pathc, sizeof(char *), cmp_name);
    *used_glob = true;
    *n = (int)g->gl_pathc;
    return g->gl_pathv;
}

static bool check_opts(tfl_ctx *ctx, const char *path, const tfl_text_opts *o)
{
    TFL_CHECK_RET(ctx, path, false, TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: path is NULL");
    TFL_CHECK_RET(ctx, o, false, TFL_INVALID_ARGUMENT,
                  "tfl_dataset_from_text: opts is NULL; opts.context_length is required");
    TFL_CHECK_RET(ctx, o->context_length >= 1 && o->context_length <= (INT64_C(1) << 40), false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.context_length is %lld; "
                  "expected >= 1 (tokens per window)", (long long)o->context_length);
    TFL_CHECK_RET(ctx, o->stride >= 0 && o->stride <= (INT64_C(1) << 40), false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.stride is %lld; expected "
                  ">= 1 (0: context_length)", (long long)o->stride);
    TFL_CHECK_RET(ctx, o->tokens == TFL_TEXT_BYTES || o->tokens == TFL_TEXT_CHARS, false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.tokens is %d; expected "
                  "TFL_TEXT_BYTES (0) or TFL_TEXT_CHARS (1)", (int)o->tokens);
    TFL_CHECK_RET(ctx, o->validation_split >= 0 && o->validation_split < 1, false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.validation_split is %g; "
                  "expected a fraction in [0, 1)", o->validation_split);
    TFL_CHECK_RET(ctx, o->subset >= TFL_TEXT_ALL && o->subset <= TFL_TEXT_VALIDATION, false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.subset is %d; expected "
                  "TFL_TEXT_ALL, TFL_TEXT_TRAINING or TFL_TEXT_VALIDATION", (int)o->subset);
    TFL_CHECK_RET(ctx, o->subset != TFL_TEXT_VALIDATION || o->validation_split > 0, false,
                  TFL_INVALID_ARGUMENT, "tfl_dataset_from_text: opts.subset is "
                  "TFL_TEXT_VALIDATION but opts.validation_split is 0 (no validation part)");
    return true;
}

tfl_dataset *tfl_dataset_from_text(tfl_ctx *ctx, const char *path, const tfl_text_opts *opts)
{
    if (!ctx || !check_opts(ctx, path, opts)) return NULL;
    glob_t g;
    int nfiles = 0;
    bool used_glob = false;
    char *one[1];
    char **files = list_files(ctx, path, &g, &nfiles, &used_glob, one);
    if (!files) return NULL;
    struct tfl__ds_text *t = tfl__calloc(ctx, sizeof *t);
    if (t) {
        t->ctx = ctx;
        t->seg = tfl__calloc(ctx, sizeof(tfl__ds_text_seg) * (size_t)nfiles);
    }
    if (!t || !t->seg) {
        if (t) tfl__host_free(ctx, t);
        if (used_glob) globfree(&g);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "Text files '%s': out of host memory", path);
        return NULL;
    }
    bool seen[256] = {false};
    int64_t total = 0;
    bool ok = true;
    for (int i = 0; i < nfiles && ok; i++) {
        t->nseg = i + 1;
        ok = map_file(ctx, files[i], &t->seg[i], seen);
        if (ok && total > INT64_MAX - t->seg[i].len) {
            tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "Text files '%s': the corpus is too "
                           "large", path);
            ok = false;
        }
        if (ok) {
            t->seg[i].off = total;
            total += t->seg[i].len;
        }
    }
    if (used_glob) globfree(&g);
    if (!ok) {
        tfl__ds_text_free(t);
        return NULL;
    }
    for (int v = 0; v < 256; v++) {
        if (opts->tokens == TFL_TEXT_BYTES || seen[v]) {
            t->id[v] = (uint8_t)t->nvocab;
            t->vocab[t->nvocab++] = (uint8_t)v;
        }
    }
    const int64_t c = opts->context_length;
    t->context = c;
    t->stride = opts->stride ? opts->stride : c;
    /* the validation part: the last floor(total · split) tokens */
    int64_t nval = (int64_t)floor((double)total * opts->validation_split);
    if (nval > total) nval = total;
    int64_t lo = 0, len = total;
    if (opts->subset == TFL_TEXT_TRAINING) len = total - nval;
    if (opts->subset == TFL_TEXT_VALIDATION) lo = total - nval, len = nval;
    t->base = lo;
    const char *part = opts->subset == TFL_TEXT_TRAINING     ? "the training part of "
                       : opts->subset == TFL_TEXT_VALIDATION ? "the validation part of "
                                                             : "";
    if (len < c + 1) {
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                       "Text %s'%s' has %lld tokens (of %lld in all); one window needs "
                       "context_length + 1 = %lld (the targets are the next tokens)",
                       part, path, (long long)len, (long long)total, (long long)(c + 1));
        tfl__ds_text_free(t);
        return NULL;
    }
    int64_t n = (len - c - 1) / t->stride + 1;
    tfl__ds_store *s = tfl__ds_store_text(ctx, t, n, c);
    if (!s) return NULL;
    return tfl__dataset_wrap(ctx, s, NULL);
}
