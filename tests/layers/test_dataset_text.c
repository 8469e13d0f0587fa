/* test_dataset_text.c: tfl_dataset_from_text: the exact windows and next-token targets, byte
 * and char vocabularies, the split by position, seeded shuffling, glob order, every refusal
 * with its message, a 50 MB corpus that is mapped (not allocated through the context's
 * hooks), and Debian's fortunes corpus (skipped when the package is absent). */
#include "dataset_helpers.h"

#include <glob.h>
#include <sys/stat.h>

static void write_text(const char *path, const char *s) { write_bytes(path, s, strlen(s), false); }

/* The next batch's x and y (int32 (b, c)) into xs and ys; returns b, or -1 at the end. */
static int64_t next_tokens(tfl_dataset *ds, int32_t *xs, int32_t *ys, int64_t c, size_t cap)
{
    tfl_tensor *x = NULL, *y = NULL;
    tfl_status st = tfl_dataset_next(ds, &x, &y);
    if (st == TFL_OUT_OF_RANGE) return -1;
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_tensor_dtype(x), TFL_DTYPE_INT32);
    assert_int_equal(tfl_tensor_dtype(y), TFL_DTYPE_INT32);
    assert_int_equal(tfl_tensor_rank(x), 2);
    assert_int_equal(tfl_tensor_rank(y), 2);
    assert_int_equal(tfl_tensor_dim(x, 1), c);
    assert_int_equal(tfl_tensor_dim(y, 1), c);
    int64_t b = tfl_tensor_dim(x, 0);
    assert_int_equal(tfl_tensor_dim(y, 0), b);
    size_t n = (size_t)(b * c);
    assert_true(n <= cap);
    assert_int_equal(tfl_tensor_to_host(x, xs, n * sizeof(int32_t)), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(y, ys, n * sizeof(int32_t)), TFL_OK);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    return b;
}

/* Checks that row r of xs/ys (c tokens) is the window of `text` at `start` (byte tokens). */
static void expect_window(const int32_t *xs, const int32_t *ys, int64_t r, int64_t c,
                          const char *text, int64_t start)
{
    for (int64_t j = 0; j < c; j++) {
        assert_int_equal(xs[r * c + j], (unsigned char)text[start + j]);
        assert_int_equal(ys[r * c + j], (unsigned char)text[start + j + 1]);
    }
}

static void test_windows_bytes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *text = "abcdefghij";
    write_text(tmp_path(0, "ten.txt"), text);
    tfl_dataset *ds = tfl_dataset_from_text(ctx, tmp_path(0, "ten.txt"),
                                            &(tfl_text_opts){.context_length = 3});
    assert_non_null(ds);
    /* stride 0 = the context: windows at 0, 3, 6 (6 + 3 + 1 = 10 tokens) */
    assert_int_equal(tfl_dataset_size(ds), 3);
    assert_int_equal(tfl_dataset_num_classes(ds), 256);
    assert_int_equal(tfl_dataset_feature_rank(ds), 1);
    assert_int_equal(tfl_dataset_feature_shape(ds)[0], 3);
    assert_true(tfl_dataset_has_labels(ds));
    assert_int_equal(tfl_dataset_batch(ds, 2, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 2);
    int32_t xs[64], ys[64];
    assert_int_equal(next_tokens(ds, xs, ys, 3, 64), 2);
    expect_window(xs, ys, 0, 3, text, 0); /* x "abc", y "bcd" */
    expect_window(xs, ys, 1, 3, text, 3); /* x "def", y "efg" */
    assert_int_equal(next_tokens(ds, xs, ys, 3, 64), 1);
    expect_window(xs, ys, 0, 3, text, 6); /* x "ghi", y "hij" */
    assert_int_equal(next_tokens(ds, xs, ys, 3, 64), -1);
    /* drop_remainder through the usual batching */
    assert_int_equal(tfl_dataset_batch(ds, 2, &(tfl_batch_opts){.drop_remainder = true}), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 1);
    /* a text dataset is never normalised */
    assert_int_equal(tfl_dataset_set_normalization(ds, 2.0f, 0.0f, NULL, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "token ids");
    float m[3];
    assert_int_equal(tfl_dataset_moments(ds, m, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "token ids");
    uint8_t vocab[256];
    assert_int_equal(tfl_dataset_text_vocab(ds, vocab), 256);
    assert_int_equal(vocab[97], 97);
    tfl_dataset_free(ds);

    /* stride 1: every start, 10 - 4 + 1 = 7 windows; y without x's dataset copy */
    ds = tfl_dataset_from_text(ctx, tmp_path(0, "ten.txt"),
                               &(tfl_text_opts){.context_length = 3, .stride = 1});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_size(ds), 7);
    assert_int_equal(tfl_dataset_batch(ds, 7, NULL), TFL_OK);
    assert_int_equal(next_tokens(ds, xs, ys, 3, 64), 7);
    for (int r = 0; r < 7; r++) expect_window(xs, ys, r, 3, text, r);
    tfl_dataset_free(ds);
    /* stride 4 over 10 tokens of context 2: starts 0 and 4; 8 + 3 > 10 */
    ds = tfl_dataset_from_text(ctx, tmp_path(0, "ten.txt"),
                               &(tfl_text_opts){.context_length = 2, .stride = 4});
    assert_int_equal(tfl_dataset_size(ds), 2);
    assert_int_equal(next_tokens(ds, xs, ys, 2, 64), 2);
    expect_window(xs, ys, 1, 2, text, 4);
    tfl_dataset_free(ds);
    /* a dataset of another kind has no vocabulary */
    assert_int_equal(tfl_dataset_text_vocab(NULL, vocab), -1);
}

static void test_chars_vocab(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *text = "hello world\n";
    write_text(tmp_path(0, "hello.txt"), text);
    tfl_dataset *ds = tfl_dataset_from_text(
        ctx, tmp_path(0, "hello.txt"),
        &(tfl_text_opts){.context_length = 4, .stride = 1, .tokens = TFL_TEXT_CHARS});
    assert_non_null(ds);
    /* the distinct bytes in byte order: \n ' ' d e h l o r w */
    const char *expect = "\n dehlorw";
    uint8_t vocab[256];
    assert_int_equal(tfl_dataset_num_classes(ds), 9);
    assert_int_equal(tfl_dataset_text_vocab(ds, vocab), 9);
    assert_memory_equal(vocab, expect, 9);
    int32_t xs[64], ys[64];
    assert_int_equal(tfl_dataset_size(ds), 8);
    assert_int_equal(next_tokens(ds, xs, ys, 4, 64), 8);
    for (int r = 0; r < 8; r++)
        for (int j = 0; j < 4; j++) { /* decoding the ids gives the text back */
            assert_int_equal(vocab[xs[r * 4 + j]], (uint8_t)text[r + j]);
            assert_int_equal(vocab[ys[r * 4 + j]], (uint8_t)text[r + j + 1]);
        }
    assert_int_equal(xs[0], 4); /* 'h' */
    assert_int_equal(ys[0], 3); /* 'e' */
    tfl_dataset_free(ds);
}

static void test_split_by_position(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char text[101];
    for (int i = 0; i < 100; i++) text[i] = (char)('#' + i % 90);
    text[100] = 0;
    write_text(tmp_path(0, "hundred.txt"), text);
    tfl_text_opts o = {.context_length = 4, .validation_split = 0.25, .subset = TFL_TEXT_TRAINING};
    tfl_dataset *tr = tfl_dataset_from_text(ctx, tmp_path(0, "hundred.txt"), &o);
    o.subset = TFL_TEXT_VALIDATION;
    tfl_dataset *va = tfl_dataset_from_text(ctx, tmp_path(0, "hundred.txt"), &o);
    o.subset = TFL_TEXT_ALL;
    tfl_dataset *all = tfl_dataset_from_text(ctx, tmp_path(0, "hundred.txt"), &o);
    assert_non_null(tr);
    assert_non_null(va);
    assert_non_null(all);
    /* training: tokens [0, 75): (75 - 5) / 4 + 1 = 18 windows, the last at 68 (y up to 72);
     * validation: [75, 100): (25 - 5) / 4 + 1 = 6 windows from 75; all: (100 - 5) / 4 + 1 */
    assert_int_equal(tfl_dataset_size(tr), 18);
    assert_int_equal(tfl_dataset_size(va), 6);
    assert_int_equal(tfl_dataset_size(all), 24);
    int32_t xs[256], ys[256];
    assert_int_equal(tfl_dataset_batch(tr, 64, NULL), TFL_OK);
    assert_int_equal(next_tokens(tr, xs, ys, 4, 256), 18);
    for (int r = 0; r < 18; r++) expect_window(xs, ys, r, 4, text, 4 * r);
    assert_int_equal(tfl_dataset_batch(va, 64, NULL), TFL_OK);
    assert_int_equal(next_tokens(va, xs, ys, 4, 256), 6);
    for (int r = 0; r < 6; r++) expect_window(xs, ys, r, 4, text, 75 + 4 * r);
    tfl_dataset_free(tr);
    tfl_dataset_free(va);
    tfl_dataset_free(all);
    /* a validation part shorter than a window is named as such */
    o.subset = TFL_TEXT_VALIDATION;
    o.validation_split = 0.04; /* 4 tokens */
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "hundred.txt"), &o));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the validation part of");
    o.validation_split = 0;
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "hundred.txt"), &o));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "validation_split is 0");
}

/* The first token of every window of a shuffled epoch (context 1: window k is text[k]). */
static void epoch_order(tfl_dataset *ds, uint64_t seed, uint64_t epoch, int32_t *order, int n)
{
    assert_int_equal(tfl_dataset_batch(ds, n, &(tfl_batch_opts){.shuffle = true, .seed = seed}),
                     TFL_OK);
    assert_int_equal(tfl_dataset_reset(ds, epoch), TFL_OK);
    int32_t ys[64];
    assert_int_equal(next_tokens(ds, order, ys, 1, 64), n);
    for (int i = 0; i < n; i++) assert_int_equal(ys[i], order[i] + 1); /* pairs stay pairs */
}

static void test_shuffle_seeded(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char text[52];
    for (int i = 0; i < 51; i++) text[i] = (char)('A' + i);
    text[51] = 0;
    write_text(tmp_path(0, "abc.txt"), text);
    tfl_text_opts o = {.context_length = 1};
    tfl_dataset *a = tfl_dataset_from_text(ctx, tmp_path(0, "abc.txt"), &o);
    tfl_dataset *b = tfl_dataset_from_text(ctx, tmp_path(0, "abc.txt"), &o);
    assert_int_equal(tfl_dataset_size(a), 50);
    int32_t o1[64], o2[64], o3[64], o4[64];
    epoch_order(a, 7, 0, o1, 50);
    epoch_order(b, 7, 0, o2, 50);
    assert_memory_equal(o1, o2, sizeof(int32_t) * 50); /* same seed, same order */
    epoch_order(b, 8, 0, o3, 50);
    assert_memory_not_equal(o1, o3, sizeof(int32_t) * 50);
    epoch_order(a, 7, 1, o4, 50);
    assert_memory_not_equal(o1, o4, sizeof(int32_t) * 50);
    int seen[64] = {0}; /* a permutation of the windows */
    for (int i = 0; i < 50; i++) seen[o1[i] - 'A']++;
    for (int i = 0; i < 50; i++) assert_int_equal(seen[i], 1);
    tfl_dataset_free(a);
    tfl_dataset_free(b);
}

static void test_glob_order(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    write_text(tmp_path(0, "g_b.txt"), "BBBB");
    write_text(tmp_path(1, "g_a.txt"), "AAAA");
    write_text(tmp_path(2, "g_c.txt"), "CC");
    write_text(tmp_path(3, "g_B.txt"), "bb"); /* 'B' < 'a' byte by byte */
    char pattern[320];
    snprintf(pattern, sizeof pattern, "%s/g_*.txt", tmpdir);
    const char *text = "bbAAAABBBBCC";
    tfl_dataset *ds = tfl_dataset_from_text(ctx, pattern,
                                            &(tfl_text_opts){.context_length = 5, .stride = 1});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_size(ds), 7); /* 12 - 6 + 1 */
    int32_t xs[64], ys[64];
    assert_int_equal(next_tokens(ds, xs, ys, 5, 64), 7);
    for (int r = 0; r < 7; r++) expect_window(xs, ys, r, 5, text, r); /* across the files */
    tfl_dataset_free(ds);
    /* one binary file among them is named */
    write_bytes(tmp_path(4, "g_d.txt"), "x\0y", 3, false);
    assert_null(tfl_dataset_from_text(ctx, pattern, &(tfl_text_opts){.context_length = 5}));
    expect_kept_error(ctx, TFL_DATA_LOSS, "g_d.txt' is binary, not text: byte 1 is NUL");
    unlink(tmp_path(4, "g_d.txt"));
}

static void test_refusals(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_text_opts o = {.context_length = 4};
    write_bytes(tmp_path(0, "empty.txt"), "", 0, false);
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "empty.txt"), &o));
    expect_kept_error(ctx, TFL_DATA_LOSS, "empty.txt' is empty");

    write_bytes(tmp_path(0, "nul.bin"), "abc\0def", 7, false);
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "nul.bin"), &o));
    expect_kept_error(ctx, TFL_DATA_LOSS, "nul.bin' is binary, not text: byte 3 is NUL");

    uint8_t buf[200];
    memset(buf, 'a', sizeof buf);
    buf[10] = 0xE9; /* one Latin-1 'e' with an accent: 1 of 200 bytes is not UTF-8, loads */
    write_bytes(tmp_path(0, "latin1.txt"), buf, sizeof buf, false);
    tfl_dataset *ds = tfl_dataset_from_text(ctx, tmp_path(0, "latin1.txt"), &o);
    assert_non_null(ds);
    tfl_dataset_free(ds);
    for (int i = 0; i < 5; i++) buf[20 + 7 * i] = 0xFF; /* 6 of 200: binary */
    write_bytes(tmp_path(0, "noise.bin"), buf, sizeof buf, false);
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "noise.bin"), &o));
    expect_kept_error(ctx, TFL_DATA_LOSS, "noise.bin' is binary, not text: 6 of its 200 bytes "
                                          "are not valid UTF-8");
    /* well-formed multi-byte UTF-8 is text */
    write_text(tmp_path(0, "utf8.txt"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80!");
    ds = tfl_dataset_from_text(ctx, tmp_path(0, "utf8.txt"), &o);
    assert_non_null(ds);
    tfl_dataset_free(ds);

    write_text(tmp_path(0, "short.txt"), "abcd");
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "short.txt"), &o));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "has 4 tokens (of 4 in all); one window needs "
                                                 "context_length + 1 = 5");
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "missing.txt"), &o));
    expect_kept_error(ctx, TFL_NOT_FOUND, "missing.txt' cannot be opened");
    char pattern[320];
    snprintf(pattern, sizeof pattern, "%s/none_*.txt", tmpdir);
    assert_null(tfl_dataset_from_text(ctx, pattern, &o));
    expect_kept_error(ctx, TFL_NOT_FOUND, "none_*.txt' matches no file");
    assert_null(tfl_dataset_from_text(ctx, tmpdir, &o));
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "not a regular file");

    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "short.txt"), NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "context_length is required");
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "short.txt"), &(tfl_text_opts){0}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "opts.context_length is 0");
    assert_null(tfl_dataset_from_text(ctx, tmp_path(0, "short.txt"),
                                      &(tfl_text_opts){.context_length = 1, .stride = -1}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "opts.stride is -1");
    assert_null(tfl_dataset_from_text(
        ctx, tmp_path(0, "short.txt"), &(tfl_text_opts){.context_length = 1, .tokens = 2}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "opts.tokens is 2");
    assert_null(tfl_dataset_from_text(
        ctx, tmp_path(0, "short.txt"),
        &(tfl_text_opts){.context_length = 1, .validation_split = 1.0}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "opts.validation_split is 1");
}

/* ---- memory: the corpus is mapped, not allocated -------------------------------------------- */

typedef struct counting {
    size_t largest; /* the largest single request */
    size_t total;   /* every request added up */
} counting;

static void *count_alloc(void *user, size_t bytes, size_t alignment)
{
    counting *c = user;
    if (bytes > c->largest) c->largest = bytes;
    c->total += bytes;
    size_t a = alignment < sizeof(void *) ? sizeof(void *) : alignment;
    void *ptr = NULL;
    return posix_memalign(&ptr, a, bytes ? bytes : 1) == 0 ? ptr : NULL;
}

static void count_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static void test_large_file_is_mapped(void **state)
{
    (void)state;
    const size_t n = 50u << 20;
    char *text = malloc(n);
    assert_non_null(text);
    for (size_t i = 0; i < n; i++) text[i] = i % 80 == 79 ? '\n' : (char)('a' + (i * 7 + i / 80) % 26);
    write_bytes(tmp_path(0, "large.txt"), text, n, false);
    counting c = {0};
    tfl_ctx *cx = tfl_ctx_new(
        &(tfl_ctx_opts){.alloc_fn = count_alloc, .free_fn = count_free, .alloc_user = &c}, NULL);
    assert_non_null(cx);
    c = (counting){0};
    tfl_dataset *ds = tfl_dataset_from_text(cx, tmp_path(0, "large.txt"),
                                            &(tfl_text_opts){.context_length = 256});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_size(ds), (int64_t)((n - 257) / 256 + 1));
    assert_true(c.total < (1u << 20)); /* the load: bookkeeping only, not 50 MB */
    int32_t *xs = malloc(64 * 256 * sizeof(int32_t)), *ys = malloc(64 * 256 * sizeof(int32_t));
    assert_non_null(xs);
    assert_non_null(ys);
    /* in order: the first batch is the file's first 64 windows */
    assert_int_equal(tfl_dataset_batch(ds, 64, NULL), TFL_OK);
    assert_int_equal(next_tokens(ds, xs, ys, 256, 64 * 256), 64);
    for (int r = 0; r < 64; r++) expect_window(xs, ys, r, 256, text, 256 * r);
    /* a shuffled epoch: the order (8 bytes a window, 1.6 MB) and batches of 64 windows, each
     * row a window of the file: y is x shifted by one, and x starts where a window starts */
    assert_int_equal(tfl_dataset_batch(ds, 64, &(tfl_batch_opts){.shuffle = true, .seed = 3}),
                     TFL_OK);
    for (int k = 0; k < 20; k++) {
        assert_int_equal(next_tokens(ds, xs, ys, 256, 64 * 256), 64);
        for (int r = 0; r < 64; r++)
            for (int j = 0; j + 1 < 256; j++) assert_int_equal(ys[r * 256 + j], xs[r * 256 + j + 1]);
    }
    assert_true(c.largest < (4u << 20));
    assert_true(c.total < (8u << 20)); /* 20 batches and the order, far below 50 MB */
    free(xs);
    free(ys);
    tfl_dataset_free(ds);
    tfl_ctx_free(cx);
    free(text);
    unlink(tmp_path(0, "large.txt"));
}

/* ---- the fortunes corpus ---------------------------------------------------------------------- */

#define FORTUNES "/usr/share/games/fortunes"

static void test_fortunes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    struct stat st;
    if (stat(FORTUNES "/fortunes.u8", &st) != 0) {
        print_message("the fortunes package is not installed (make deps installs it)\n");
        skip();
    }
    /* the corpus size from the files themselves */
    glob_t g;
    assert_int_equal(glob(FORTUNES "/?*.u8", 0, NULL, &g), 0);
    int64_t total = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        assert_int_equal(stat(g.gl_pathv[i], &st), 0);
        total += st.st_size;
    }
    globfree(&g);
    assert_true(total > 1000000);
    tfl_text_opts o = {.context_length = 64, .tokens = TFL_TEXT_CHARS, .validation_split = 0.1,
                       .subset = TFL_TEXT_TRAINING};
    tfl_dataset *tr = tfl_dataset_from_text(ctx, FORTUNES "/?*.u8", &o);
    o.subset = TFL_TEXT_VALIDATION;
    tfl_dataset *va = tfl_dataset_from_text(ctx, FORTUNES "/?*.u8", &o);
    assert_non_null(tr);
    assert_non_null(va);
    int64_t nval = (int64_t)((double)total * 0.1);
    assert_int_equal(tfl_dataset_size(tr), (total - nval - 65) / 64 + 1);
    assert_int_equal(tfl_dataset_size(va), (nval - 65) / 64 + 1);
    uint8_t vocab[256];
    int v = tfl_dataset_text_vocab(tr, vocab);
    assert_int_equal(v, tfl_dataset_num_classes(va));
    assert_true(v > 60 && v < 256); /* English letters, digits, punctuation, some UTF-8 bytes */
    for (int i = 1; i < v; i++) assert_true(vocab[i - 1] < vocab[i]); /* byte order */
    assert_non_null(memchr(vocab, '\n', (size_t)v));
    assert_non_null(memchr(vocab, 'e', (size_t)v));
    /* the first window of the corpus decodes to the first file's first bytes */
    int32_t xs[64 * 64], ys[64 * 64];
    assert_int_equal(tfl_dataset_batch(tr, 64, NULL), TFL_OK);
    assert_int_equal(next_tokens(tr, xs, ys, 64, 64 * 64), 64);
    FILE *f = fopen(FORTUNES "/art", "rb"); /* "art" sorts first */
    assert_non_null(f);
    char head[65];
    assert_int_equal(fread(head, 1, 65, f), 65);
    fclose(f);
    for (int j = 0; j < 64; j++) {
        assert_int_equal(vocab[xs[j]], (uint8_t)head[j]);
        assert_int_equal(vocab[ys[j]], (uint8_t)head[j + 1]);
    }
    tfl_dataset_free(tr);
    tfl_dataset_free(va);
    /* every file of the directory: the .dat indexes beside the texts are refused as binary */
    assert_null(tfl_dataset_from_text(ctx, FORTUNES "/?*", &o));
    expect_kept_error(ctx, TFL_DATA_LOSS, ".dat' is binary, not text: byte 0 is NUL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_windows_bytes, setup, teardown),     cmocka_unit_test_setup_teardown(test_chars_vocab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_by_position, setup, teardown), cmocka_unit_test_setup_teardown(test_shuffle_seeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_glob_order, setup, teardown),        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_file_is_mapped, setup, teardown), cmocka_unit_test_setup_teardown(test_fortunes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
