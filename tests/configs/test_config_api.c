/* test_config_api.c: the config's library API: --set overrides (merged, then validated once;
 * problems located as --set[N]), the resolved YAML loading back to the same resolved config
 * (shipped configs too), the builders (a model that trains xor, an optimizer with the
 * config's options, datasets with validation_split and standardize, fit options), errors of
 * builders located at the config's lines, invalid configs refused, memory given back. */
#include "config_helpers.h"

#include <math.h>
#include <unistd.h>

static tfl_config *load_ok(tfl_ctx *ctx, const char *path, const char *const *sets, size_t n)
{
    tfl_status st;
    tfl_config *cfg = tfl_config_load(ctx, path, sets, n, &st);
    if (st != TFL_OK) {
        print_error("%s:\n%s", path, tfl_config_diagnostics(cfg));
        fail();
    }
    return cfg;
}

static void expect_get(const tfl_config *cfg, const char *path, const char *want)
{
    char buf[512];
    assert_true(tfl_config_get(cfg, path, buf, sizeof buf) >= 0);
    assert_string_equal(buf, want);
}

/* ---- overrides ------------------------------------------------------------------------------ */

static void test_overrides_merge_then_validate(void **state)
{
    fixture *f = *state;
    const char *sets[] = {"optimizer.learning_rate=3e-4",
                          "model.layers[0].units=64",
                          "model.layers[1].dense.activation=softmax",
                          "training.epochs=7",
                          "optimizer.kind=sgd",
                          "optimizer.momentum=0.9",
                          "checkpoint={every: 2, keep: 1}",
                          "metrics=[accuracy]"};
    tfl_status st;
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, sets, 8, &st);
    assert_int_equal(st, TFL_OK);
    expect_get(cfg, "optimizer.learning_rate", "0.0003");
    expect_get(cfg, "model.layers[0].units", "64");
    expect_get(cfg, "model.layers[1].activation", "softmax");
    expect_get(cfg, "training.epochs", "7");
    expect_get(cfg, "optimizer.kind", "sgd");
    expect_get(cfg, "optimizer.momentum", "0.9");
    expect_get(cfg, "checkpoint.every", "2");
    expect_get(cfg, "checkpoint.keep", "1");
    expect_get(cfg, "metrics", "[accuracy]");
    tfl_config_free(cfg);
    /* momentum before kind would fail alone; validated once after all merges it is fine */
    const char *order[] = {"optimizer.momentum=0.5", "optimizer.kind=rmsprop"};
    cfg = parse_with(f->ctx, BASE_YAML "optimizer: {kind: adam}\n", order, 2, &st);
    assert_int_equal(st, TFL_OK);
    expect_get(cfg, "optimizer.momentum", "0.5");
    tfl_config_free(cfg);
    /* replacing a whole layer entry */
    const char *layer[] = {"model.layers[1]={dense: {units: 3}}"};
    cfg = parse_with(f->ctx, BASE_YAML, layer, 1, &st);
    assert_int_equal(st, TFL_OK);
    expect_get(cfg, "model.layers[1].units", "3");
    tfl_config_free(cfg);
}

static void test_override_errors_are_located(void **state)
{
    fixture *f = *state;
    const char *sets[] = {"training.epochs=4",
                          "optimizer.lerning_rate=1e-3",
                          "model.layers[7].units=3",
                          "training.epochs=\"3\"",
                          "noequals",
                          "optimizer.kind=adam",
                          "optimizer.momentum=0.9",
                          "training.batch_size=[1,",
                          "model.input_shape[0].x=1"};
    tfl_status st;
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML "trainer: 1\n", sets, 9, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_string_equal(
        tfl_config_diagnostics(cfg),
        "t.yaml:9:1: trainer: unknown key 'trainer'; did you mean 'training'?\n"
        "--set[2]: optimizer.lerning_rate: unknown key 'lerning_rate'; did you mean "
        "'learning_rate'?\n"
        "--set[3]: model.layers: index 7 is out of range: model.layers has 2 entries\n"
        "--set[4]: training.epochs: expected an integer, got the quoted string \"3\"; write the "
        "number without quotes\n"
        "--set[5]: expected key.path=value, got 'noequals'\n"
        "--set[7]: optimizer.momentum: optimizer 'adam' does not read 'momentum' (an option of "
        "sgd, rmsprop only)\n"
        "--set[8]: malformed YAML: did not find expected node content while parsing a flow node\n"
        "--set[9]: model.input_shape[0]: cannot set 'x': model.input_shape[0] is the scalar '2'\n");
    const tfl_config_diag *d = tfl_config_diag_at(cfg, 1);
    assert_string_equal(d->file, "--set[2]");
    assert_int_equal(d->line, 0);
    assert_string_equal(d->path, "optimizer.lerning_rate");
    tfl_config_free(cfg);
    /* a malformed key path changes nothing */
    const char *paths[] = {"a..b=1", "[0]=1", "model.layers[x]=1", "model.=1", "a b=1"};
    cfg = parse_with(f->ctx, BASE_YAML, paths, 5, &st);
    assert_int_equal(tfl_config_diag_total(cfg), 5);
    for (size_t k = 0; k < 5; k++)
        assert_has(tfl_config_diag_text(cfg, k),
                   "expected a key path such as model.layers[1].units");
    assert_string_equal(tfl_config_diag_text(cfg, 0),
                        "--set[1]: expected a key path such as model.layers[1].units, got 'a..b'");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

/* An initializer given as null (also an override with an empty value) is an error, not a
 * valid config without a kind (fuzz_config found tfl_config_format reading names[-1]). */
static void test_null_initializer_is_an_error(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx,
                "data:\n"
                "  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n"
                "  input_shape: [2]\n"
                "  layers:\n"
                "    - dense: {units: 8, kernel_initializer: null}\n"
                "    - dense: {units: 2}\n"
                "loss: sparse_categorical_crossentropy\n",
                6, 45,
                "model.layers[0].dense.kernel_initializer: expected one of the initializers "
                "(`name` or `name: {options}`), got null");
    const char *sets[] = {"model.layers[1].dense.bias_initializer=",
                          "model.layers[1].dense.kernel_initializer=~"};
    tfl_status st;
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, sets, 2, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_false(tfl_config_valid(cfg));
    assert_string_equal(tfl_config_diagnostics(cfg),
                        "--set[1]: model.layers[1].dense.bias_initializer: expected one of the "
                        "initializers (`name` or `name: {options}`), got null\n"
                        "--set[2]: model.layers[1].dense.kernel_initializer: expected one of the "
                        "initializers (`name` or `name: {options}`), got null\n");
    tfl_ctx_clear_error(f->ctx);
    assert_null(tfl_config_format(cfg));
    assert_int_equal(tfl_ctx_error(f->ctx).code, TFL_FAILED_PRECONDITION);
    tfl_ctx_clear_error(f->ctx);
    assert_null(tfl_config_build_model(cfg));
    assert_int_equal(tfl_ctx_error(f->ctx).code, TFL_FAILED_PRECONDITION);
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

/* ---- round trip ------------------------------------------------------------------------------ */

static void round_trip(tfl_ctx *ctx, tfl_config *cfg)
{
    const char *once = tfl_config_format(cfg);
    assert_non_null(once);
    char *copy = strdup(once);
    assert_non_null(copy);
    tfl_status st;
    tfl_config *again =
        tfl_config_parse(ctx, copy, strlen(copy), tfl_config_path(cfg), "/", NULL, 0, &st);
    if (st != TFL_OK) {
        print_error("the resolved config does not load:\n%s\n%s", tfl_config_diagnostics(again),
                    copy);
        fail();
    }
    assert_string_equal(tfl_config_format(again), copy);
    tfl_config_free(again);
    free(copy);
}

static void test_resolved_config_loads_back(void **state)
{
    fixture *f = *state;
    static const char *const shipped[] = {"xor.yaml", "quadratic_regression.yaml",
                                          "fashion_mnist_mlp.yaml", "fashion_mnist_cnn.yaml"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, TFL_SOURCE_DIR "/configs/%s", shipped[i]);
        tfl_status st;
        tfl_config *cfg = tfl_config_load(f->ctx, path, NULL, 0, &st);
        if (st != TFL_OK) {
            /* only a missing dataset package may stop a shipped config */
            for (size_t k = 0; k < tfl_config_diag_count(cfg); k++)
                assert_has(tfl_config_diag_text(cfg, k), "cannot read '/usr/share/datasets/");
            tfl_config_free(cfg);
            tfl_ctx_clear_error(f->ctx);
            continue;
        }
        round_trip(f->ctx, cfg);
        tfl_config_free(cfg);
    }
    /* every kind of value: strings with quotes, nulls, lists, initializers, schedules */
    tfl_status st;
    tfl_config *cfg = parse_text(
        f->ctx,
        "data:\n  train: {format: csv, path: xor.csv, header: true, label_name: label, "
        "delimiter: ','}\n  validation_split: 0.25\n  standardize: true\n  scale: 0.5\n"
        "model:\n  name: 'my \"model\"'\n  input_shape: [2]\n  layers:\n"
        "    - reshape: {target_shape: [2, 1, 1]}\n"
        "    - conv2d: {filters: 3, kernel_size: [1, 1], padding: same, use_bias: false,\n"
        "               kernel_initializer: {truncated_normal: {mean: 0.1, stddev: 0.2, seed: "
        "5}}}\n"
        "    - average_pooling2d: {pool_size: 1, strides: [1, 1]}\n"
        "    - batch_normalization: {momentum: 0.9, center: false}\n    - flatten\n"
        "    - dropout: {rate: 0.1, seed: 3}\n"
        "    - dense: {units: 4, bias_initializer: {constant: {value: 0.25}}}\n"
        "    - activation: {activation: gelu}\n    - dense: {units: 2, name: out}\n"
        "loss: sparse_categorical_crossentropy\nmetrics: [accuracy]\n"
        "optimizer:\n  kind: sgd\n  momentum: 0.9\n  nesterov: true\n  global_clipnorm: 1.5\n"
        "  schedule: {kind: cosine, decay_steps: 100, alpha: 0.1, warmup_steps: 10}\n"
        "training: {epochs: 2, device: CPU:0, on_nonfinite: skip}\n"
        "checkpoint: {directory: ckpt, save_best_only: true, monitor: val_accuracy}\n"
        "logging: {metrics_csv: m.csv, log_interval: 10}\n",
        &st);
    if (st != TFL_OK) {
        print_error("%s", tfl_config_diagnostics(cfg));
        fail();
    }
    round_trip(f->ctx, cfg);
    const char *text = tfl_config_format(cfg);
    assert_has(text, "  name: \"my \\\"model\\\"\"\n");
    assert_has(text, "    - flatten:\n        name: null\n");
    assert_has(text, "          truncated_normal:\n            mean: 0.1\n            stddev: 0.2\n"
                     "            seed: 5\n");
    assert_has(text, "  directory: \"" TFL_SOURCE_DIR "/configs/data/ckpt\"\n");
    assert_has(text, "  formula: pytorch\n");
    tfl_config_free(cfg);
}

/* Every activation of the layers (tfl_activation_name) is a config name that builds the layer
 * with that activation: the model's output is the layer's, element for element. */
static void test_every_activation_name_builds_its_layer(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const float xv[6] = {-2.5f, -0.5f, 0, 0.75f, 2, 4};
    for (int a = TFL_ACT_LINEAR; a < TFL_ACT_END; a++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        char text[512];
        snprintf(text, sizeof text,
                 "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                 "model:\n  input_shape: [3]\n  layers:\n    - activation: {activation: %s}\n"
                 "loss: mean_squared_error\n",
                 tfl_activation_name((tfl_activation)a));
        tfl_status st;
        tfl_config *cfg = parse_text(ctx, text, &st);
        if (st != TFL_OK) fail_msg("%s:\n%s", text, tfl_config_diagnostics(cfg));
        tfl_model *m = tfl_config_build_model(cfg);
        assert_non_null(m);
        tfl_layer *l = tfl_layer_new(
            ctx, &(tfl_layer_spec){.kind = TFL_LAYER_ACTIVATION, .activation = (tfl_activation)a});
        assert_non_null(l);
        tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}, xv);
        float got[6], want[6];
        assert_int_equal(tfl_tensor_to_host(tfl_model_call(m, x, false), got, sizeof got), TFL_OK);
        assert_int_equal(tfl_tensor_to_host(tfl_layer_call(l, x, false), want, sizeof want),
                         TFL_OK);
        assert_memory_equal(got, want, sizeof got);
        tfl_layer_free(l);
        tfl_model_free(m);
        tfl_config_free(cfg);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

/* ---- builders ------------------------------------------------------------------------------ */

static void test_xor_trains_from_its_config(void **state)
{
    (void)state;
    counting c;
    tfl_ctx *ctx = counted_ctx(&c);
    const char *sets[] = {"training.epochs=60"};
    /* loads leave the records of the handles they freed (the config, the model and layers
     * of shape inference) in the ctx's pool (base.h), which reuses a kind's records once 32
     * of it are dead: after 40 loads a load reuses them */
    for (int i = 0; i < 40; i++)
        tfl_config_free(load_ok(ctx, TFL_SOURCE_DIR "/configs/xor.yaml", sets, 1));
    long base = CTR_LIVE(&c);
    tfl_config *cfg = load_ok(ctx, TFL_SOURCE_DIR "/configs/xor.yaml", sets, 1);
    tfl_config_free(cfg); /* loading and validating gives every other block back */
    assert_int_equal(CTR_LIVE(&c), base);
    tfl_config_free(cfg); /* a second free is MISUSE, not a crash */
    expect_kept_error(ctx, TFL_MISUSE, "tfl_config_free: config already freed");
    cfg = load_ok(ctx, TFL_SOURCE_DIR "/configs/xor.yaml", sets, 1);
    assert_string_equal(tfl_config_name(cfg), "xor");
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    assert_int_equal(tfl_model_num_layers(m), 2);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 2 * 16 + 16 + 16 * 2 + 2);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    const tfl_optimizer_opts *oo = tfl_optimizer_options(opt);
    assert_int_equal(oo->kind, TFL_OPTIMIZER_ADAM);
    assert_true(fabs(oo->learning_rate - 0.05) < 1e-12);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    assert_int_equal(tfl_dataset_size(data.train), 4);
    assert_null(data.validation);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    assert_int_equal(fo.epochs, 60);
    assert_int_equal(fo.batch_size, 4);
    assert_false(fo.shuffle);
    assert_int_equal(fo.seed, 1);
    tfl_epoch_logs logs[60];
    tfl_history h = {logs, 60, 0};
    assert_int_equal(tfl_model_fit(m, data.train, &fo, &h), TFL_OK);
    assert_int_equal(h.count, 60);
    assert_true(logs[59].loss < logs[0].loss);
    assert_true(logs[59].loss < 0.1);
    assert_true(logs[59].accuracy == 1.0);
    tfl_config_datasets_free(&data);
    assert_null(data.train);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx); /* the context keeps its allocator's cache until it is freed */
    assert_int_equal(CTR_LIVE(&c), 0);
}

static void test_shape_errors_point_at_the_layer(void **state)
{
    fixture *f = *state;
    /* found at load time, by shape inference from model.input_shape */
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - dense: {units: 8}\n"
                "    - conv2d: {filters: 2, kernel_size: 3}\nloss: mean_squared_error\n",
                7, 7, "model.layers[1].conv2d: conv2d: Conv2D expects an input of rank 4");
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [3]}\n"
                "loss: mean_squared_error\n",
                6, 7, "model.layers[0].reshape: reshape: cannot reshape an input of shape (-1, 2)");
    /* also when the caller's context keeps an older error, which stays the one kept */
    tfl_status st;
    assert_int_equal(tfl_ctx_set_num_threads(f->ctx, -1), TFL_INVALID_ARGUMENT);
    tfl_error before = tfl_ctx_error(f->ctx);
    char old[512];
    snprintf(old, sizeof old, "%s", before.message);
    tfl_config *late = parse_text(f->ctx,
                                  "data:\n  train: {format: csv, path: xor.csv, header: true, "
                                  "label_column: -1}\nmodel:\n  input_shape: [2]\n  layers:\n"
                                  "    - reshape: {target_shape: [3]}\nloss: mean_squared_error\n",
                                  &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    find_diag(late, "t.yaml:6:7: model.layers[0].reshape: reshape: cannot reshape");
    assert_string_equal(tfl_ctx_error(f->ctx).message, old);
    tfl_config_free(late);
    tfl_ctx_clear_error(f->ctx);
    /* a builder's error names the config's line too: here a layer name taken since loading */
    tfl_config *cfg = parse_text(f->ctx, BASE_YAML "optimizer: {kind: adam}\n", &st);
    assert_int_equal(st, TFL_OK);
    const char *sets[] = {"model.layers[1].name=taken"};
    tfl_config *named = parse_with(f->ctx, BASE_YAML, sets, 1, &st);
    assert_int_equal(st, TFL_OK);
    tfl_layer *l =
        tfl_layer_new(f->ctx, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN, .name = "taken"});
    assert_non_null(l);
    assert_null(tfl_config_build_model(named));
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "t.yaml:7:7: model.layers[1].dense: ");
    tfl_layer_free(l);
    tfl_config_free(named);
    tfl_config_free(cfg);
}

static void test_datasets_split_standardize_and_errors(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg =
        parse_text(f->ctx,
                   "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                   "  test: {format: csv, path: xor.csv, header: true, label_name: label}\n"
                   "  validation_split: 0.25\n  standardize: true\n"
                   "model:\n  input_shape: [2]\n"
                   "  layers: [flatten]\nloss: mean_squared_error\n",
                   &st);
    assert_int_equal(st, TFL_OK);
    tfl_config_datasets d;
    assert_int_equal(tfl_config_build_datasets(cfg, &d), TFL_OK);
    assert_int_equal(tfl_dataset_size(d.train), 3);
    assert_int_equal(tfl_dataset_size(d.validation), 1);
    assert_int_equal(tfl_dataset_size(d.test), 4);
    /* standardized with the training part's moments: its features have mean 0 */
    tfl_frame_push(f->ctx);
    tfl_tensor *x, *y;
    assert_int_equal(tfl_dataset_next(d.train, &x, &y), TFL_OK);
    const float *v = tfl_tensor_data_ptr(x);
    assert_true(fabsf(v[0] + v[2] + v[4]) < 1e-5f);
    tfl_frame_pop(f->ctx);
    tfl_config_datasets_free(&d);
    tfl_config_free(cfg);
    /* a malformed data file: the loader's message, at the source's line */
    char path[] = "/tmp/tfl_bad_csvXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, "a,b,label\n1,2,0\n3,x,1\n", 22) == 22);
    close(fd);
    char doc[1024];
    snprintf(doc, sizeof doc,
             "data:\n  train:\n    format: csv\n    path: %s\n    header: true\n"
             "model: {input_shape: [2], layers: [flatten]}\nloss: mean_squared_error\n",
             path);
    cfg = parse_text(f->ctx, doc, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_not_equal(tfl_config_build_datasets(cfg, &d), TFL_OK);
    assert_null(d.train);
    tfl_error e = tfl_ctx_error(f->ctx);
    assert_int_equal(e.code, TFL_DATA_LOSS);
    assert_has(e.message, "t.yaml:3:5: data.train: ");
    assert_has(e.message, "line 3");
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
    remove(path);
    /* examples whose shape is not model.input_shape */
    const char *sets[] = {"model.input_shape=[3]"};
    cfg =
        parse_with(f->ctx,
                   "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                   "model: {input_shape: [2], layers: [flatten]}\nloss: mean_squared_error\n",
                   sets, 1, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_build_datasets(cfg, &d), TFL_INVALID_ARGUMENT);
    expect_kept_error(
        f->ctx, TFL_INVALID_ARGUMENT,
        "t.yaml:2:10: data.train: examples of shape (2), but model.input_shape is [3]");
    tfl_config_free(cfg);
}

static void test_invalid_config_builds_nothing(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, BASE_YAML "foo: 1\n", &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(f->ctx);
    assert_null(tfl_config_build_model(cfg));
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION,
                      "the config 't.yaml' is invalid (1 problems)");
    assert_null(tfl_config_build_optimizer(cfg));
    tfl_ctx_clear_error(f->ctx);
    tfl_config_datasets d;
    assert_int_equal(tfl_config_build_datasets(cfg, &d), TFL_FAILED_PRECONDITION);
    tfl_ctx_clear_error(f->ctx);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, NULL, &fo), TFL_FAILED_PRECONDITION);
    tfl_ctx_clear_error(f->ctx);
    assert_null(tfl_config_format(cfg));
    tfl_ctx_clear_error(f->ctx);
    assert_int_equal(tfl_config_get(cfg, "loss", NULL, 0), -1);
    tfl_config_free(cfg);
    /* NULLs */
    tfl_config_free(NULL);
    assert_null(tfl_config_load(NULL, "x", NULL, 0, &st));
    assert_null(tfl_config_load(f->ctx, NULL, NULL, 0, &st));
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "tfl_config_load: NULL path");
    assert_false(tfl_config_valid(NULL));
    assert_int_equal(tfl_config_diag_count(NULL), 0);
    assert_null(tfl_config_diag_at(NULL, 0));
}

/* training.deterministic reaches the context; training.sync_every the fit options, its null
 * default the gcd of the intervals logging and step checkpoints act on. */
/* tfl_config_apply_context applies training.device: a device scope, once per config; auto
 * opens none. */
static void test_apply_context_device(void **state)
{
    fixture *f = *state;
    tfl_status st;
    const char *cpu[] = {"training.device=CPU:0"};
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, cpu, 1, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK); /* not a second scope */
    tfl_tensor *t = tfl_zeros(f->ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2});
    assert_string_equal(tfl_tensor_device(t), "CPU:0");
    tfl_tensor_release(t);
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_OK);           /* the config's */
    assert_int_not_equal(tfl_device_scope_pop(f->ctx), TFL_OK);       /* no other */
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
    const char *autodev[] = {"training.device=auto"};
    cfg = parse_with(f->ctx, BASE_YAML, autodev, 1, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_int_not_equal(tfl_device_scope_pop(f->ctx), TFL_OK); /* auto: none opened */
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
}

/* the log lines a context sends, one after another */
typedef struct log_lines {
    char text[4096];
    int warnings;
} log_lines;

static void keep_line(void *user, tfl_log_level level, const char *msg)
{
    log_lines *l = user;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s\n", msg);
    if (level == TFL_LOG_WARNING) l->warnings++;
}

/* training.precision reaches the context (float32 by default); under tf32 and the mixed
 * policies training on the CPU warns once that the CPU computes in float32; float16 turns on
 * the optimizer's loss scaling; a policy the schema lacks and a bad loss_scale are refused at
 * parse time. */
static void test_apply_context_precision(void **state)
{
    fixture *f = *state;
    tfl_status st;
    log_lines lines = {{0}, 0};
    tfl_ctx_set_logger(f->ctx, keep_line, &lines, TFL_LOG_WARNING);
    const char *cpu32[] = {"training.device=CPU:0"};
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, cpu32, 1, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_ctx_set_precision(f->ctx, TFL_PRECISION_TF32), TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_int_equal(tfl_ctx_precision(f->ctx), TFL_PRECISION_FLOAT32); /* the default, set */
    assert_int_equal(lines.warnings, 0);
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_OK);
    tfl_config_free(cfg);

    const char *cpu_tf32[] = {"training.device=CPU:0", "training.precision=tf32"};
    cfg = parse_with(f->ctx, BASE_YAML, cpu_tf32, 2, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_int_equal(tfl_ctx_precision(f->ctx), TFL_PRECISION_TF32);
    assert_int_equal(lines.warnings, 1);
    assert_non_null(strstr(lines.text, "training.precision tf32 applies to a GPU's matmuls and "
                                       "convolutions: on CPU:0 they run in float32"));
    assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_OK);
    tfl_config_free(cfg);
    assert_int_equal(tfl_ctx_set_precision(f->ctx, TFL_PRECISION_FLOAT32), TFL_OK);

    /* the mixed policies: float16 turns on the optimizer's loss scaling (Keras's 2^15 unless
     * optimizer.loss_scale says otherwise), bfloat16 does not */
    static const struct {
        const char *sets[3];
        tfl_precision want;
        double scale;
        int64_t growth;
    } mixed[] = {
        {{"training.device=CPU:0", "training.precision=float16"}, TFL_PRECISION_FLOAT16, 32768,
         2000},
        {{"training.device=CPU:0", "training.precision=float16", "optimizer.loss_scale=1024"},
         TFL_PRECISION_FLOAT16, 1024, 2000},
        {{"training.device=CPU:0", "training.precision=bfloat16"}, TFL_PRECISION_BFLOAT16, 0, 0},
        {{"training.device=CPU:0", "optimizer.loss_scale=8", "optimizer.loss_scale_growth_steps=5"},
         TFL_PRECISION_FLOAT32, 8, 5},
    };
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
        int n = mixed[i].sets[2] ? 3 : 2;
        lines.warnings = 0;
        lines.text[0] = '\0';
        cfg = parse_with(f->ctx, BASE_YAML, mixed[i].sets, n, &st);
        assert_int_equal(st, TFL_OK);
        assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
        assert_int_equal(tfl_ctx_precision(f->ctx), mixed[i].want);
        assert_int_equal(lines.warnings, mixed[i].want != TFL_PRECISION_FLOAT32);
        if (mixed[i].want != TFL_PRECISION_FLOAT32)
            assert_non_null(strstr(lines.text, "applies to a GPU's matmuls and convolutions and "
                                               "the ops between them: on CPU:0 they run in "
                                               "float32"));
        tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
        assert_non_null(opt);
        assert_true(tfl_optimizer_options(opt)->loss_scale == mixed[i].scale);
        assert_int_equal(tfl_optimizer_options(opt)->loss_scale_growth_steps, mixed[i].growth);
        assert_true(tfl_optimizer_loss_scale(opt) == (mixed[i].scale ? mixed[i].scale : 1));
        tfl_optimizer_free(opt);
        assert_int_equal(tfl_device_scope_pop(f->ctx), TFL_OK);
        tfl_config_free(cfg);
    }
    assert_int_equal(tfl_ctx_set_precision(f->ctx, TFL_PRECISION_FLOAT32), TFL_OK);

    const char *half[] = {"training.precision=half"};
    cfg = parse_with(f->ctx, BASE_YAML, half, 1, &st);
    assert_int_not_equal(st, TFL_OK);
    assert_non_null(strstr(tfl_ctx_error(f->ctx).message,
                           "training.precision: unknown precision policy 'half'"));
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
    const char *bad_scale[] = {"optimizer.loss_scale=-2"};
    cfg = parse_with(f->ctx, BASE_YAML, bad_scale, 1, &st);
    assert_int_not_equal(st, TFL_OK);
    assert_non_null(strstr(tfl_ctx_error(f->ctx).message, "optimizer.loss_scale"));
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
    tfl_ctx_set_logger(f->ctx, NULL, NULL, TFL_LOG_ERROR);
}

static void test_device_keys(void **state)
{
    fixture *f = *state;
    tfl_status st;
    static const struct {
        const char *sets[3];
        int64_t want;
    } cases[] = {
        {{"training.sync_every=7"}, 7},
        {{"training.sync_every=0"}, 0},
        {{NULL}, 50}, /* logging.every_steps' default */
        {{"logging.log_interval=20", "logging.every_steps=50"}, 10},
        {{"logging.every_steps=12", "checkpoint.every_steps=18"}, 6},
        {{"logging.every_steps=0"}, INT64_MAX}, /* nothing logs: the epochs' ends */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0;
        while (n < 3 && cases[i].sets[n]) n++;
        tfl_config *cfg = parse_with(f->ctx, BASE_YAML, cases[i].sets, n, &st);
        assert_int_equal(st, TFL_OK);
        tfl_fit_opts fo;
        assert_int_equal(tfl_config_fit_opts(cfg, NULL, &fo), TFL_OK);
        assert_int_equal(fo.sync_every, cases[i].want);
        tfl_config_free(cfg);
    }
    /* training.step_graphs reaches the fit options; off by default */
    for (int on = 0; on < 2; on++) {
        const char *sg[] = {"training.step_graphs=true"};
        tfl_config *c = parse_with(f->ctx, BASE_YAML, sg, on ? 1 : 0, &st);
        assert_int_equal(st, TFL_OK);
        tfl_fit_opts fo;
        assert_int_equal(tfl_config_fit_opts(c, NULL, &fo), TFL_OK);
        assert_int_equal(fo.step_graphs, on);
        tfl_config_free(c);
    }
    assert_true(tfl_config_key_resumable("training.step_graphs"));
    const char *bad[] = {"training.sync_every=-1"};
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, bad, 1, &st);
    assert_int_not_equal(st, TFL_OK);
    find_diag(cfg, "sync_every");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);

    assert_false(tfl_ctx_deterministic(f->ctx));
    const char *det[] = {"training.deterministic=true"};
    cfg = parse_with(f->ctx, BASE_YAML, det, 1, &st);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_true(tfl_ctx_deterministic(f->ctx));
    tfl_config_free(cfg);
    cfg = parse_text(f->ctx, BASE_YAML, &st); /* false by default, and applied as such */
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    assert_false(tfl_ctx_deterministic(f->ctx));
    tfl_config_free(cfg);
}

static void test_schema_markdown(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, BASE_YAML, &st);
    const char *md = tfl_config_schema_markdown(cfg);
    assert_non_null(md);
    assert_has(md, "### `model.layers[]`");
    assert_has(md, "| `units` | integer | required | [1, 1000000000] | dense | output features | "
                   "`units: 256` |");
    assert_has(md, "| `learning_rate` | number | by kind and formula | >= 0 | all |");
    /* configs/README.md's reference is this text, so the documentation follows the schema */
    FILE *fp = fopen(TFL_SOURCE_DIR "/configs/README.md", "r");
    assert_non_null(fp);
    static char readme[256 * 1024];
    size_t n = fread(readme, 1, sizeof readme - 1, fp);
    fclose(fp);
    readme[n] = '\0';
    const char *ref = strstr(readme, "## Reference (generated from the schema)");
    assert_non_null(ref);
    if (strcmp(ref, md)) {
        print_error("configs/README.md's reference differs from tfl_config_schema_markdown:\n%s",
                    md);
        fail();
    }
    tfl_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overrides_merge_then_validate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_errors_are_located, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_initializer_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolved_config_loads_back, setup, teardown),
        cmocka_unit_test(test_xor_trains_from_its_config),
        cmocka_unit_test_setup_teardown(test_shape_errors_point_at_the_layer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_datasets_split_standardize_and_errors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_invalid_config_builds_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_context_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_context_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_markdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_activation_name_builds_its_layer, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
