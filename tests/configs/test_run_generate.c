/* test_run_generate.c: tfl_run_generate (tapeflow/run.h): a small causal-attention model
 * trained on "abcd" repeated, through the run API, continues the pattern greedily from any
 * prompt; its text is the model-level tokens through the training text's vocabulary; a seed
 * repeats its text; a prompt longer than the context, a character outside the vocabulary, NULL
 * arguments and a config that is not `format: text` are errors naming the problem (also of
 * tfl_run_text_context, which gives a text run's context length before any restore); the run
 * directory is left exactly as it was (names, sizes, modification times). */
#include "config_helpers.h"

#include <sys/stat.h>
#include <unistd.h>

#include "tfl_events_util.h"

static const char text_yaml[] =
    "data:\n"
    "  train: {format: text, path: '%s', context_length: 8, tokens: chars, stride: 1}\n"
    "model:\n"
    "  input_shape: [8]\n"
    "  layers:\n"
    "    - embedding: {input_dim: 4, output_dim: 16}\n"
    "    - position_embedding: {sequence_length: 8}\n"
    "    - multi_head_attention: {num_heads: 2, key_dim: 8, use_causal_mask: true}\n"
    "    - dense: {units: 4}\n"
    "loss: sparse_categorical_crossentropy\n"
    "optimizer: {kind: adam, learning_rate: 0.01}\n"
    "training: {epochs: 8, batch_size: 32, seed: 1}\n";

/* Appends "path size mtime" of every entry under dir (recursively) to buf. */
static void listing(const char *dir, char *buf, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub[1024];
        struct stat sb;
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        assert_int_equal(lstat(sub, &sb), 0);
        size_t at = strlen(buf);
        snprintf(buf + at, cap - at, "%s %lld %lld.%09ld\n", sub, (long long)sb.st_size,
                 (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
        if (S_ISDIR(sb.st_mode)) listing(sub, buf, cap);
    }
    closedir(d);
    assert_true(strlen(buf) + 1 < cap);
}

static void expect_gen_error(tfl_run *run, tfl_ctx *ctx, const char *prompt,
                             const tfl_generate_opts *o, tfl_status code, const char *fragment)
{
    char text[64];
    int64_t n = -1;
    assert_int_equal(tfl_run_generate(run, prompt, o, text, &n), code);
    assert_int_equal(n, 0);
    expect_kept_error(ctx, code, fragment);
}

static void test_trained_text(void **state)
{
    fixture *f = *state;
    char dir[256], corpus[320], run_dir[320], yaml[1024];
    temp_dir(dir, sizeof dir, "gen");
    snprintf(corpus, sizeof corpus, "%s/abcd.txt", dir);
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    FILE *fp = fopen(corpus, "wb");
    assert_non_null(fp);
    for (int i = 0; i < 200; i++) fputs("abcd", fp);
    assert_int_equal(fclose(fp), 0);
    snprintf(yaml, sizeof yaml, text_yaml, corpus);
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, yaml, &st);
    assert_int_equal(st, TFL_OK);
    tfl_run *run = tfl_run_open(cfg, &(tfl_run_opts){.run_dir = run_dir}, &st);
    assert_non_null(run);
    int64_t context = 0; /* known before any training or restore */
    assert_int_equal(tfl_run_text_context(run, &context), TFL_OK);
    assert_int_equal(context, 8);
    assert_int_equal(tfl_run_text_context(run, NULL), TFL_OK);
    tfl_run_result res;
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    assert_true(res.last.loss < 0.05);
    assert_int_equal(tfl_run_restore(run, NULL, NULL, 0, NULL), TFL_OK);
    static char before[16384], after[16384];
    listing(run_dir, before, sizeof before);

    /* greedy: the pattern goes on, past the context of 8 */
    char text[64];
    int64_t n = 0;
    tfl_generate_opts o = {.tokens = 20};
    assert_int_equal(tfl_run_generate(run, "ab", &o, text, &n), TFL_OK);
    assert_int_equal(n, 20);
    assert_string_equal(text, "cdabcdabcdabcdabcdab");
    assert_int_equal(tfl_run_generate(run, "dabcdab", &o, text, &n), TFL_OK);
    assert_string_equal(text, "cdabcdabcdabcdabcdab");
    /* sampled: a seed repeats its text, which is the model's tokens through the vocabulary
     * of the training text (a b c d: ids 0 1 2 3) */
    o = (tfl_generate_opts){.tokens = 40, .temperature = 1.5, .top_k = 3, .seed = 9,
                            .context_length = 8};
    char again[64];
    assert_int_equal(tfl_run_generate(run, "bc", &o, text, &n), TFL_OK);
    assert_int_equal(tfl_run_generate(run, "bc", &o, again, &n), TFL_OK);
    assert_int_equal(n, 40);
    assert_string_equal(text, again);
    int32_t ids[40];
    int64_t n_ids = 0;
    assert_int_equal(tfl_model_generate(tfl_run_model(run), (int32_t[]){1, 2}, 2, &o, ids, &n_ids),
                     TFL_OK);
    for (int i = 0; i < 40; i++) assert_int_equal(text[i], 'a' + ids[i]);

    /* errors */
    o = (tfl_generate_opts){.tokens = 4};
    expect_gen_error(run, f->ctx, "abcdabcda", &o, TFL_INVALID_ARGUMENT,
                     "tfl_run_generate: the prompt has 9 tokens, longer than the context of 8 "
                     "(data.train.context_length)");
    expect_gen_error(run, f->ctx, "abz", &o, TFL_INVALID_ARGUMENT,
                     "tfl_run_generate: the prompt's character 'z' at position 2 is not in the "
                     "training text's vocabulary (4 tokens: 'a' 'b' 'c' 'd')");
    expect_gen_error(run, f->ctx, "a\n", &o, TFL_INVALID_ARGUMENT,
                     "the prompt's character 0x0A at position 1 is not in");
    expect_gen_error(run, f->ctx, "", &o, TFL_INVALID_ARGUMENT, "the prompt is empty");
    expect_gen_error(run, f->ctx, NULL, &o, TFL_INVALID_ARGUMENT, "tfl_run_generate: NULL prompt");
    expect_gen_error(run, f->ctx, "a", NULL, TFL_INVALID_ARGUMENT, "tfl_run_generate: NULL opts");
    assert_int_equal(tfl_run_generate(run, "a", &o, NULL, &n), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "tfl_run_generate: NULL text");
    o.temperature = -1;
    expect_gen_error(run, f->ctx, "a", &o, TFL_INVALID_ARGUMENT,
                     "temperature must be finite and >= 0");
    o = (tfl_generate_opts){.tokens = -3};
    expect_gen_error(run, f->ctx, "a", &o, TFL_INVALID_ARGUMENT, "tokens must be >= 0, got -3");
    assert_int_equal(tfl_run_generate(NULL, "a", &o, text, &n), TFL_INVALID_ARGUMENT);

    listing(run_dir, after, sizeof after);
    assert_string_equal(before, after);
    tfl_run_close(run);
    tfl_config_free(cfg);
    remove_tree(dir);
}

static void test_not_text(void **state)
{
    fixture *f = *state;
    char dir[256];
    temp_dir(dir, sizeof dir, "gen_csv");
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, BASE_YAML, &st);
    assert_int_equal(st, TFL_OK);
    tfl_run *run = tfl_run_open(cfg, &(tfl_run_opts){.run_dir = dir}, &st);
    assert_non_null(run);
    char text[8];
    int64_t n = -1;
    assert_int_equal(tfl_run_generate(run, "a", &(tfl_generate_opts){.tokens = 2}, text, &n),
                     TFL_FAILED_PRECONDITION);
    assert_int_equal(n, 0);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION,
                      "tfl_run_generate: generation needs a text model: data.train of t.yaml is "
                      "'format: csv', not 'format: text'");
    int64_t context = -1; /* what a program asks before restoring: the same words */
    assert_int_equal(tfl_run_text_context(run, &context), TFL_FAILED_PRECONDITION);
    assert_int_equal(context, -1);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION,
                      "tfl_run_text_context: generation needs a text model: data.train of t.yaml "
                      "is 'format: csv', not 'format: text'");
    assert_int_equal(tfl_run_text_context(NULL, &context), TFL_INVALID_ARGUMENT);
    tfl_run_close(run);
    assert_int_equal(tfl_run_text_context(run, &context), TFL_MISUSE);
    expect_kept_error(f->ctx, TFL_MISUSE, "tfl_run_text_context: run already freed");
    tfl_config_free(cfg);
    struct stat sb;
    assert_int_equal(stat(dir, &sb), 0); /* still there, and empty: rmdir succeeds */
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trained_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_text, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
