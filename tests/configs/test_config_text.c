/* test_config_text.c: `format: text` data sources: the datasets a config builds (windows,
 * next-token targets, the validation part at the end of the corpus), a model trained on them
 * per position, and the refusals (a missing key, an unknown token kind, a pattern matching
 * nothing, a vocabulary larger than the model's outputs). */
#include "config_helpers.h"

#include <unistd.h>

static char dir[256], file[320], corpus[101];

static int group_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tfl_cfgtext_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) return -1;
    snprintf(file, sizeof file, "%s/corpus.txt", dir);
    for (int i = 0; i < 100; i++) corpus[i] = (char)('#' + i % 90);
    FILE *f = fopen(file, "wb");
    if (!f || fwrite(corpus, 1, 100, f) != 100) return -1;
    return fclose(f);
}

static int group_teardown(void **state)
{
    (void)state;
    unlink(file);
    return rmdir(dir);
}

/* A config over the corpus with `source` keys after the path, `units` outputs and `extra`. */
static tfl_config *text_config(tfl_ctx *ctx, const char *path, const char *source, int units,
                               const char *extra, tfl_status *st)
{
    static char y[2048];
    snprintf(y, sizeof y,
             "data:\n"
             "  train: {format: text, path: '%s'%s}\n"
             "%s"
             "model:\n"
             "  input_shape: [4]\n"
             "  layers:\n"
             "    - embedding: {input_dim: 256, output_dim: 8}\n"
             "    - dense: {units: %d}\n"
             "loss: sparse_categorical_crossentropy\n"
             "optimizer: {kind: adam, learning_rate: 0.05}\n"
             "training: {epochs: 3, batch_size: 6, seed: 1}\n",
             path, source, extra, units);
    return parse_text(ctx, y, st);
}

static void test_text_datasets(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = text_config(f->ctx, file, ", context_length: 4", 256,
                                  "  validation_split: 0.25\n", &st);
    assert_int_equal(st, TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    /* 75 training tokens: (75 - 5) / 4 + 1 windows; the last 25: (25 - 5) / 4 + 1 */
    assert_int_equal(tfl_dataset_size(data.train), 18);
    assert_int_equal(tfl_dataset_size(data.validation), 6);
    assert_null(data.test);
    assert_int_equal(tfl_dataset_num_classes(data.train), 256);
    assert_int_equal(tfl_dataset_batch(data.validation, 6, NULL), TFL_OK);
    tfl_tensor *x, *y;
    assert_int_equal(tfl_dataset_next(data.validation, &x, &y), TFL_OK);
    int32_t bx[24], by[24];
    assert_int_equal(tfl_tensor_to_host(x, bx, sizeof bx), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(y, by, sizeof by), TFL_OK);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    for (int r = 0; r < 6; r++)
        for (int j = 0; j < 4; j++) {
            assert_int_equal(bx[r * 4 + j], corpus[75 + 4 * r + j]);
            assert_int_equal(by[r * 4 + j], corpus[75 + 4 * r + j + 1]);
        }
    /* an embedding and a dense layer trained per position on the windows */
    tfl_model *m = tfl_config_build_model(cfg);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_non_null(m);
    assert_non_null(opt);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    fo.validation = NULL;
    tfl_epoch_logs logs[3];
    tfl_history h = {logs, 3, 0};
    assert_int_equal(tfl_model_fit(m, data.train, &fo, &h), TFL_OK);
    assert_int_equal(h.count, 3);
    assert_true(logs[0].loss < 5.6); /* ln 256 = 5.55 at the start */
    assert_true(logs[2].loss < logs[0].loss);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_datasets_free(&data);
    tfl_config_free(cfg);

    /* chars and a stride: the corpus's 90 distinct bytes, windows at every start */
    cfg = text_config(f->ctx, file, ", context_length: 4, stride: 1, tokens: chars", 90, "", &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    assert_int_equal(tfl_dataset_size(data.train), 96);
    assert_int_equal(tfl_dataset_num_classes(data.train), 90);
    assert_null(data.validation);
    tfl_config_datasets_free(&data);
    tfl_config_free(cfg);
}

static void test_text_refusals(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = text_config(f->ctx, file, "", 256, "", &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    find_diag(cfg, "context_length");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    cfg = text_config(f->ctx, file, ", context_length: 4, tokens: words", 256, "", &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    find_diag(cfg, "unknown token kind 'words'");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    /* a glob that matches nothing: refused when the datasets are built, naming the pattern */
    char pattern[400];
    snprintf(pattern, sizeof pattern, "%s/none_*.txt", dir);
    cfg = text_config(f->ctx, pattern, ", context_length: 4", 256, "", &st);
    assert_int_equal(st, TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "none_*.txt' matches no file");
    tfl_config_free(cfg);
    /* 90 distinct bytes for 10 outputs */
    cfg = text_config(f->ctx, file, ", context_length: 4, tokens: chars", 10, "", &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "the text's vocabulary has 90 tokens, but the model has 10 outputs");
    tfl_config_free(cfg);
    /* model.input_shape must be the context */
    cfg = text_config(f->ctx, file, ", context_length: 5", 256, "", &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "examples of shape (5), but model.input_shape "
                                                    "is [4]");
    tfl_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_datasets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
