/* fuzz_config.c: libFuzzer harness of the YAML config loader (<tapeflow/config.h>). The input is
 *   [YAML text] ["\n#%set\n" [override]\n [override]\n ...]
 * the text goes to tfl_config_parse from memory (an exact-size copy, so ASan sees overreads);
 * the lines after the first "\n#%set\n" (a YAML comment: without it the whole input is text)
 * are up to 8 overrides ("key.path[1].x=value"). Each input gets a context of its own whose
 * allocations go through counting hooks with a budget (builders of huge models fail with
 * RESOURCE_EXHAUSTED instead of exhausting the machine); after everything is freed and the
 * context too, no block may be left. The contract checked on every input:
 *   - a config comes back (NULL only without memory); the status is OK or INVALID_ARGUMENT
 *     and agrees with tfl_config_valid, the diagnostic count and total, and the ctx's error;
 *   - every diagnostic has file, path and message (non-empty) set, line and col >= 0, a file
 *     that is the config's name or "--set[N]" for an override given, and they are sorted;
 *     their text lines are in tfl_config_diagnostics; no INTERNAL anywhere;
 *   - a valid config formats, and the formatted text parses to a valid config that formats to
 *     the same text; tfl_config_get follows snprintf's contract and keeps no error;
 *     tfl_config_build_model / _build_optimizer / _compile succeed (or run out of the budget);
 *   - an invalid config is refused by format, get and the builders (FAILED_PRECONDITION);
 *   - tfl_config_diff reads the input as the earlier config of a run (a checkpoint's stored
 *     config is untrusted) against the input's config or a fixed one: well-formed changes or
 *     INVALID_ARGUMENT / RESOURCE_EXHAUSTED; a config compared with its own text has none.
 * Datasets are never loaded: the relative paths resolve against a temporary directory of
 * empty files (made at start, removed at exit) that only satisfy the loader's access() check. */
#define _GNU_SOURCE /* mkdtemp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tapeflow/config.h>
#include <tapeflow/tapeflow.h>

#define NAME "fuzz.yaml"
#define SET_MARK "\n#%set\n"
#define MAX_SETS 8
#define BUDGET ((size_t)32 << 20) /* bytes live at once in a context */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- failing: print what broke and abort (libFuzzer keeps the input) ------------------------ */

static void fail(const char *what, const tfl_config *cfg)
{
    fprintf(stderr, "fuzz_config: %s\n", what);
    if (cfg) fprintf(stderr, "diagnostics:\n%s", tfl_config_diagnostics(cfg));
    abort();
}
#define CHECK(cond, cfg)                                                                           \
    do {                                                                                           \
        if (!(cond)) fail("check failed: " #cond, cfg);                                            \
    } while (0)

/* ---- allocation hooks: counted, with a budget ----------------------------------------------- */

typedef struct budget {
    size_t live_bytes;
    long live_blocks;
} budget;

static void *budget_alloc(void *user, size_t bytes, size_t align)
{
    budget *b = user;
    if (align < 16) align = 16;
    if (bytes > BUDGET || b->live_bytes + bytes > BUDGET) return NULL;
    size_t total = (align + bytes + align - 1) / align * align;
    char *p = aligned_alloc(align, total);
    if (!p) return NULL;
    size_t *h = (size_t *)(p + align) - 2; /* the size and the header's length */
    h[0] = bytes;
    h[1] = align;
    b->live_bytes += bytes;
    b->live_blocks++;
    return p + align;
}

static void budget_free(void *user, void *ptr)
{
    budget *b = user;
    if (!ptr) return;
    size_t *h = (size_t *)ptr - 2;
    b->live_bytes -= h[0];
    b->live_blocks--;
    free((char *)ptr - h[1]);
}

/* ---- the base directory: empty files the seed configs name ---------------------------------- */

static char root[64], base_dir[96];
static const char *const data_files[] = {
    "a/b/c/data/xor.csv",   /* configs/xor.yaml */
    "configs/data/xor.csv", /* tests/configs/bad: ../../../configs/data/xor.csv */
    "a/b/c/data/train-images-idx3-ubyte.gz",
    "a/b/c/data/train-labels-idx1-ubyte.gz",
    "a/b/c/data/t10k-images-idx3-ubyte.gz",
    "a/b/c/data/t10k-labels-idx1-ubyte.gz",
};
static const char *const data_dirs[] = {"a/b/c/data",   "a/b/c",   "a/b",
                                        "configs/data", "configs", "a"};

static void remove_base(void)
{
    char p[256];
    for (size_t i = 0; i < sizeof data_files / sizeof *data_files; i++) {
        snprintf(p, sizeof p, "%s/%s", root, data_files[i]);
        unlink(p);
    }
    for (size_t i = 0; i < sizeof data_dirs / sizeof *data_dirs; i++) {
        snprintf(p, sizeof p, "%s/%s", root, data_dirs[i]);
        rmdir(p);
    }
    rmdir(root);
}

static void make_base(void)
{
    snprintf(root, sizeof root, "/tmp/tfl_fuzz_config.XXXXXX");
    if (!mkdtemp(root)) fail("mkdtemp", NULL);
    char p[256];
    for (size_t i = sizeof data_dirs / sizeof *data_dirs; i-- > 0;) {
        snprintf(p, sizeof p, "%s/%s", root, data_dirs[i]);
        if (mkdir(p, 0700) != 0) fail("mkdir", NULL);
    }
    for (size_t i = 0; i < sizeof data_files / sizeof *data_files; i++) {
        snprintf(p, sizeof p, "%s/%s", root, data_files[i]);
        FILE *f = fopen(p, "w");
        if (!f) fail("creating a data file", NULL);
        fclose(f);
    }
    snprintf(base_dir, sizeof base_dir, "%s/a/b/c", root);
    atexit(remove_base);
}

/* ---- the contract --------------------------------------------------------------------------- */

/* The source index of a diagnostic's file: 0 for the config, N for "--set[N]". */
static int diag_src(const tfl_config *cfg, const char *file, size_t n_sets)
{
    if (!strcmp(file, NAME)) return 0;
    int n = 0, end = 0;
    if (sscanf(file, "--set[%d]%n", &n, &end) == 1 && file[end] == '\0' && n >= 1 &&
        (size_t)n <= n_sets)
        return n;
    fail("a diagnostic names an unknown file", cfg);
    return -1;
}

static void check_diags(tfl_ctx *ctx, const tfl_config *cfg, tfl_status st, size_t n_sets)
{
    bool valid = tfl_config_valid(cfg);
    size_t count = tfl_config_diag_count(cfg), total = tfl_config_diag_total(cfg);
    CHECK(st == TFL_OK || st == TFL_INVALID_ARGUMENT, cfg);
    CHECK((st == TFL_OK) == valid, cfg);
    CHECK(valid == (total == 0), cfg);
    CHECK(count == (total < TFL_CONFIG_MAX_DIAGS ? total : TFL_CONFIG_MAX_DIAGS), cfg);
    tfl_error e = tfl_ctx_error(ctx);
    CHECK(e.code == st, cfg);
    CHECK(e.message != NULL, cfg);
    if (st != TFL_OK) CHECK(strstr(e.message, "invalid config '" NAME "'") != NULL, cfg);
    CHECK(!strcmp(tfl_config_path(cfg), NAME), cfg);
    CHECK(!strcmp(tfl_config_name(cfg), "fuzz"), cfg);

    const char *all = tfl_config_diagnostics(cfg);
    CHECK(all != NULL, cfg);
    CHECK(count > 0 || all[0] == '\0', cfg);
    const char *at = all;
    int prev_src = 0, prev_line = 0, prev_col = 0;
    for (size_t i = 0; i < count; i++) {
        const tfl_config_diag *d = tfl_config_diag_at(cfg, i);
        CHECK(d != NULL, cfg);
        CHECK(d->file && d->path && d->message && d->message[0], cfg);
        CHECK(d->line >= 0 && d->col >= 0, cfg);
        CHECK(d->line > 0 || d->col == 0, cfg);
        int src = diag_src(cfg, d->file, n_sets);
        /* sorted by source (the file, then the overrides in order), line, column */
        CHECK(src > prev_src || (src == prev_src && (d->line > prev_line ||
                                                     (d->line == prev_line && d->col >= prev_col))),
              cfg);
        prev_src = src, prev_line = d->line, prev_col = d->col;
        const char *text = tfl_config_diag_text(cfg, i);
        CHECK(text != NULL, cfg);
        CHECK(!strncmp(text, d->file, strlen(d->file)), cfg);
        CHECK(strstr(text, d->message) != NULL, cfg);
        /* the lines of tfl_config_diagnostics, in order */
        const char *line = strstr(at, text);
        CHECK(line != NULL, cfg);
        at = line + strlen(text);
        CHECK(*at == '\n', cfg);
    }
    CHECK(tfl_config_diag_at(cfg, count) == NULL && tfl_config_diag_text(cfg, count) == NULL, cfg);
    if (total > count) CHECK(strstr(at, "more") != NULL, cfg);
}

/* tfl_config_get's snprintf contract; no error kept. */
static void check_get(tfl_ctx *ctx, const tfl_config *cfg, const char *path)
{
    char buf[4096], small[4];
    int r = tfl_config_get(cfg, path, buf, sizeof buf);
    if (!tfl_config_valid(cfg)) CHECK(r == -1, cfg);
    if (r >= 0) {
        if ((size_t)r < sizeof buf) CHECK(strlen(buf) == (size_t)r, cfg);
        CHECK(tfl_config_get(cfg, path, small, sizeof small) == r, cfg);
        CHECK(strlen(small) == ((size_t)r < sizeof small ? (size_t)r : sizeof small - 1), cfg);
        CHECK(tfl_config_get(cfg, path, NULL, 0) == r, cfg);
    } else {
        CHECK(r == -1, cfg);
    }
    CHECK(tfl_ctx_error(ctx).code == TFL_OK, cfg);
}

static const char *const get_paths[] = {"format_version",
                                        "loss",
                                        "metrics",
                                        "optimizer",
                                        "optimizer.kind",
                                        "optimizer.learning_rate",
                                        "optimizer.schedule",
                                        "optimizer.schedule.kind",
                                        "optimizer.schedule.decay_steps",
                                        "training.epochs",
                                        "training.batch_size",
                                        "training.device",
                                        "data.train",
                                        "data.train.format",
                                        "data.train.path",
                                        "data.train.images",
                                        "data.validation.labels",
                                        "data.scale",
                                        "model.name",
                                        "model.input_shape",
                                        "model.layers",
                                        "model.layers[0]",
                                        "model.layers[0].dense.units",
                                        "model.layers[0].units",
                                        "model.layers[1].conv2d.kernel_size",
                                        "model.layers[1].name",
                                        "model.layers[-1].name",
                                        "model.layers[99999999999999999999].name",
                                        "checkpoint.monitor",
                                        "logging.metrics_csv",
                                        "",
                                        ".",
                                        "training.",
                                        "model.layers[0].",
                                        "model..name",
                                        "optimizer.kind.x"};

static void check_valid(tfl_ctx *ctx, tfl_config *cfg, const char *const *sets, size_t n_sets)
{
    /* the round trip: format, parse, format again: the same text */
    const char *f = tfl_config_format(cfg);
    CHECK(f != NULL, cfg);
    char *text = strdup(f);
    CHECK(text != NULL, cfg);
    CHECK(!strcmp(tfl_config_format(cfg), text), cfg);
    tfl_status st = (tfl_status)-1;
    tfl_config *again = tfl_config_parse(ctx, text, strlen(text), NAME, base_dir, NULL, 0, &st);
    CHECK(again != NULL, cfg);
    if (st != TFL_OK || !tfl_config_valid(again)) {
        fprintf(stderr, "formatted text:\n%s", text);
        fail("the formatted config does not load", again);
    }
    const char *f2 = tfl_config_format(again);
    if (!f2 || strcmp(f2, text)) {
        fprintf(stderr, "formatted text:\n%s\nformatted again:\n%s", text, f2 ? f2 : "(NULL)");
        fail("the formatted config formats differently", again);
    }
    tfl_config_free(again);
    free(text);

    for (size_t i = 0; i < sizeof get_paths / sizeof *get_paths; i++)
        check_get(ctx, cfg, get_paths[i]);
    for (size_t i = 0; i < n_sets; i++) { /* the overrides' keys */
        char key[256];
        size_t n = strcspn(sets[i], "=");
        if (n >= sizeof key) continue;
        memcpy(key, sets[i], n);
        key[n] = '\0';
        check_get(ctx, cfg, key);
    }
    char buf[64];
    CHECK(tfl_config_get(cfg, "training.epochs", buf, sizeof buf) > 0, cfg);
    CHECK(tfl_config_get(cfg, "loss", buf, sizeof buf) > 0, cfg);

    /* the builders: succeed, or run out of the budget */
    tfl_model *m = tfl_config_build_model(cfg);
    if (!m) {
        tfl_error e = tfl_ctx_error(ctx);
        if (e.code != TFL_RESOURCE_EXHAUSTED) {
            fprintf(stderr, "error %d: %s\n", (int)e.code, e.message);
            fail("tfl_config_build_model failed on a valid config", cfg);
        }
        tfl_ctx_clear_error(ctx);
    }
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    if (!opt) {
        tfl_error e = tfl_ctx_error(ctx);
        fprintf(stderr, "error %d: %s\n", (int)e.code, e.message);
        fail("tfl_config_build_optimizer failed on a valid config", cfg);
    }
    if (m) {
        tfl_status cs = tfl_config_compile(cfg, m, opt);
        if (cs != TFL_OK) {
            fprintf(stderr, "error %d: %s\n", (int)cs, tfl_ctx_error(ctx).message);
            fail("tfl_config_compile failed on a valid config", cfg);
        }
    }
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    CHECK(tfl_ctx_error(ctx).code == TFL_OK, cfg);

    /* compared with its own resolved text: no change */
    const tfl_config_change *ch;
    f = tfl_config_format(cfg);
    CHECK(f != NULL && tfl_config_diff(cfg, f, strlen(f), &ch) == 0, cfg);
}

/* tfl_config_diff with untrusted text as the earlier config (a checkpoint's stored config):
 * a count and well-formed changes, or -1 with INVALID_ARGUMENT / RESOURCE_EXHAUSTED. */
static void check_diff(tfl_ctx *ctx, tfl_config *cfg, const char *was, size_t len)
{
    const tfl_config_change *ch = NULL;
    int64_t n = tfl_config_diff(cfg, was, len, &ch);
    if (n < 0) {
        tfl_status code = tfl_ctx_error(ctx).code;
        CHECK(ch == NULL, cfg);
        CHECK(code == TFL_INVALID_ARGUMENT || code == TFL_RESOURCE_EXHAUSTED, cfg);
        tfl_ctx_clear_error(ctx);
        return;
    }
    CHECK(n == 0 || ch != NULL, cfg);
    for (int64_t i = 0; i < n; i++) {
        CHECK(ch[i].path && ch[i].path[0], cfg);
        CHECK(ch[i].was || ch[i].now, cfg);
        CHECK(!ch[i].was || !ch[i].now || strcmp(ch[i].was, ch[i].now) != 0, cfg);
        CHECK(ch[i].resumable == tfl_config_key_resumable(ch[i].path), cfg);
    }
    CHECK(tfl_ctx_error(ctx).code == TFL_OK, cfg);
}

/* A valid config to compare the input with when the input itself is not one. */
static const char fixed_config[] = "data:\n"
                                   "  train: {format: csv, path: data/xor.csv, header: true}\n"
                                   "model:\n"
                                   "  input_shape: [2]\n"
                                   "  layers: [{dense: {units: 2}}]\n"
                                   "loss: sparse_categorical_crossentropy\n";

static void check_invalid(tfl_ctx *ctx, tfl_config *cfg)
{
    tfl_ctx_clear_error(ctx);
    CHECK(tfl_config_format(cfg) == NULL, cfg);
    CHECK(tfl_ctx_error(ctx).code == TFL_FAILED_PRECONDITION, cfg);
    tfl_ctx_clear_error(ctx);
    CHECK(tfl_config_build_model(cfg) == NULL, cfg);
    CHECK(tfl_ctx_error(ctx).code == TFL_FAILED_PRECONDITION, cfg);
    tfl_ctx_clear_error(ctx);
    CHECK(tfl_config_build_optimizer(cfg) == NULL, cfg);
    CHECK(tfl_ctx_error(ctx).code == TFL_FAILED_PRECONDITION, cfg);
    tfl_ctx_clear_error(ctx);
    check_get(ctx, cfg, "training.epochs");
}

/* ---- one input ------------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    if (!started) {
        make_base();
        started = true;
    }
    /* split off the overrides */
    size_t text_len = size;
    const uint8_t *mark = memmem(data, size, SET_MARK, strlen(SET_MARK));
    char *sets[MAX_SETS];
    size_t n_sets = 0;
    if (mark) {
        text_len = (size_t)(mark - data) + 1;
        const uint8_t *p = mark + strlen(SET_MARK), *end = data + size;
        while (p < end && n_sets < MAX_SETS) {
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
            sets[n_sets] = strndup((const char *)p, n); /* a NUL byte ends the override */
            if (!sets[n_sets]) abort();
            n_sets++;
            p += n + 1;
        }
    }
    char *text = malloc(text_len ? text_len : 1);
    if (!text) abort();
    memcpy(text, data, text_len);

    budget b = {0};
    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){
            .num_threads = 1, .alloc_fn = budget_alloc, .free_fn = budget_free, .alloc_user = &b},
        &st);
    if (!ctx) fail("tfl_ctx_new", NULL);
    static bool markdown_done;
    st = (tfl_status)-1;
    tfl_config *cfg = tfl_config_parse(ctx, text, text_len, NAME, base_dir,
                                       (const char *const *)sets, n_sets, &st);
    if (!cfg) fail("tfl_config_parse returned NULL", NULL);
    check_diags(ctx, cfg, st, n_sets);
    if (!markdown_done) {
        const char *md = tfl_config_schema_markdown(cfg);
        CHECK(md != NULL && strstr(md, "learning_rate") != NULL, cfg);
        markdown_done = true;
    }
    if (tfl_config_valid(cfg)) {
        tfl_ctx_clear_error(ctx);
        check_valid(ctx, cfg, (const char *const *)sets, n_sets);
        check_diff(ctx, cfg, text, text_len);
    } else {
        check_invalid(ctx, cfg);
        tfl_ctx_clear_error(ctx);
        tfl_config *fixed = tfl_config_parse(ctx, fixed_config, strlen(fixed_config), NAME,
                                             base_dir, NULL, 0, &st);
        if (!fixed || st != TFL_OK) fail("the fixed config does not load", fixed);
        check_diff(ctx, fixed, text, text_len);
        tfl_config_free(fixed);
    }
    tfl_config_free(cfg);
    tfl_ctx_free(ctx);
    if (b.live_blocks != 0 || b.live_bytes != 0) {
        fprintf(stderr, "%ld blocks, %zu bytes\n", b.live_blocks, b.live_bytes);
        fail("memory left after tfl_config_free and tfl_ctx_free", NULL);
    }
    for (size_t i = 0; i < n_sets; i++)
        free(sets[i]);
    free(text);
    return 0;
}
