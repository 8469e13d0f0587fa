/* test_config_schema.c: typing by the schema (numbers as tapeflow writes them, booleans only
 * true/false, quoted strings), every kind of diagnostic with its exact position and message,
 * did-you-mean, options a kind does not read, the optimizer's resolved defaults, diagnostics
 * sorted and capped, and the broken configs of bad/MANIFEST. */
#include "config_helpers.h"

#include <dirent.h>

static tfl_config *valid(tfl_ctx *ctx, const char *text)
{
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, text, &st);
    if (st != TFL_OK) {
        print_error("expected a valid config, got:\n%s", tfl_config_diagnostics(cfg));
        fail();
    }
    return cfg;
}

static void expect_get(const tfl_config *cfg, const char *path, const char *want)
{
    char buf[256];
    int n = tfl_config_get(cfg, path, buf, sizeof buf);
    if (n < 0) {
        print_error("%s: no value\n", path);
        fail();
    }
    assert_string_equal(buf, want);
}

static void test_numbers_are_typed_by_the_schema(void **state)
{
    fixture *f = *state;
    tfl_config *cfg = valid(f->ctx, BASE_YAML "optimizer: {kind: adam, learning_rate: 1e-3, "
                                              "beta_1: 3.e-1, beta_2: .999, epsilon: 1E-7}\n"
                                              "training: {epochs: 1_000, batch_size: 1e2, "
                                              "seed: +7}\n");
    expect_get(cfg, "optimizer.learning_rate", "0.001");
    expect_get(cfg, "optimizer.beta_1", "0.3");
    expect_get(cfg, "optimizer.beta_2", "0.999");
    expect_get(cfg, "optimizer.epsilon", "1e-07");
    expect_get(cfg, "training.epochs", "1000");
    expect_get(cfg, "training.batch_size", "100");
    expect_get(cfg, "training.seed", "7");
    expect_get(cfg, "model.layers[0].dense.units", "8");
    expect_get(cfg, "model.layers[0].units", "8");
    expect_get(cfg, "model.layers[1].activation", "linear");
    expect_get(cfg, "model.layers[0].kernel_initializer", "glorot_uniform");
    expect_get(cfg, "model.input_shape", "[2]");
    assert_int_equal(tfl_config_get(cfg, "model.layers[2].units", NULL, 0), -1);
    assert_int_equal(tfl_config_get(cfg, "optimizer.momentum", NULL, 0), -1);
    assert_int_equal(tfl_config_get(cfg, "optimizer.nope", NULL, 0), -1);
    tfl_config_free(cfg);
    /* a string key takes a plain scalar as its text */
    cfg = valid(f->ctx, BASE_YAML "optimizer: {name: 123}\n");
    expect_get(cfg, "optimizer.name", "\"123\"");
    tfl_config_free(cfg);
}

static void test_scalar_type_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    expect_diag(ctx, BASE_YAML "optimizer: {learning_rate: \"0.1\"}\n", 9, 28,
                "optimizer.learning_rate: expected a number, got the quoted string \"0.1\"; write "
                "the number without quotes");
    expect_diag(ctx, BASE_YAML "training: {epochs: '3'}\n", 9, 20,
                "training.epochs: expected an integer, got the quoted string \"3\"");
    expect_diag(ctx, BASE_YAML "training: {epochs: 2.5}\n", 9, 20,
                "training.epochs: expected an integer, got '2.5'");
    expect_diag(ctx, BASE_YAML "training: {epochs: many}\n", 9, 20,
                "training.epochs: expected an integer, got 'many'");
    expect_diag(ctx, BASE_YAML "training: {epochs: [3]}\n", 9, 20,
                "training.epochs: expected an integer, got a sequence");
    expect_diag(ctx, BASE_YAML "training: {epochs: }\n", 9, 20,
                "training.epochs: expected an integer, got null");
    expect_diag(ctx, BASE_YAML "optimizer: {learning_rate: .inf}\n", 9, 28,
                "expected a number, got '.inf' (numbers must be finite)");
    expect_diag(ctx, BASE_YAML "optimizer: {learning_rate: 0x1p-3}\n", 9, 28,
                "expected a number, got '0x1p-3'");
    expect_diag(ctx, BASE_YAML "training: {epochs: 1__0}\n", 9, 20,
                "expected an integer, got '1__0'");
    expect_diag(ctx, BASE_YAML "training: {epochs: 99999999999999999999}\n", 9, 20,
                "training.epochs: 99999999999999999999 is out of range: expected an integer in "
                "[1, 1000000000]");
}

static void test_booleans_are_true_or_false(void **state)
{
    fixture *f = *state;
    const char *bad[] = {"yes", "no", "on", "off", "Y", "True", "FALSE"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[512], frag[160];
        snprintf(doc, sizeof doc, "%s", BASE_YAML);
        snprintf(doc + strlen(doc), sizeof doc - strlen(doc), "training: {drop_remainder: %s}\n",
                 bad[i]);
        snprintf(frag, sizeof frag,
                 "training.drop_remainder: expected true or false, got '%s' (YAML 1.1 spellings",
                 bad[i]);
        expect_diag(f->ctx, doc, 9, 28, frag);
    }
    expect_diag(f->ctx, BASE_YAML "training: {drop_remainder: \"true\"}\n", 9, 28,
                "expected true or false, got the quoted string \"true\"");
    expect_diag(f->ctx, BASE_YAML "training: {drop_remainder: 1}\n", 9, 28,
                "expected true or false, got '1'");
    tfl_config *cfg = valid(f->ctx, BASE_YAML "training: {drop_remainder: true}\n");
    expect_get(cfg, "training.drop_remainder", "true");
    tfl_config_free(cfg);
}

static void test_ranges_name_the_range(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    expect_diag(ctx, BASE_YAML "optimizer: {learning_rate: -1e-3}\n", 9, 28,
                "optimizer.learning_rate: -1e-3 is out of range: expected a number >= 0");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: adam, beta_2: 1}\n", 9, 33,
                "optimizer.beta_2: 1 is out of range: expected a number in [0, 1)");
    expect_diag(ctx, BASE_YAML "training: {batch_size: 0}\n", 9, 24,
                "training.batch_size: 0 is out of range: expected an integer in [1, 2147483647]");
    expect_diag(ctx, BASE_YAML "optimizer: {clipnorm: 0}\n", 9, 23,
                "optimizer.clipnorm: 0 is out of range: expected a number > 0");
    expect_diag(ctx, BASE_YAML "format_version: 3\n", 9, 17,
                "format_version: this config is written for format_version 3; tapeflow");
}

static void test_unknown_keys_and_names_suggest(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    expect_diag(ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - dense: {unit: 8}\n"
                "loss: sparse_categorical_crossentropy\n",
                6, 15, "model.layers[0].dense.unit: unknown key 'unit'; did you mean 'units'?");
    expect_diag(ctx, BASE_YAML "training: {num_epochs: 3}\n", 9, 12,
                "training.num_epochs: unknown key 'num_epochs'; did you mean 'epochs'?");
    expect_diag(ctx, BASE_YAML "training: {batch-size: 3}\n", 9, 12,
                "training.batch-size: unknown key 'batch-size'; did you mean 'batch_size'?");
    expect_diag(ctx, BASE_YAML "optimizer: {lr: 0.1}\n", 9, 13,
                "optimizer.lr: unknown key 'lr'; did you mean 'learning_rate'?");
    expect_diag(ctx, BASE_YAML "learning_rate: 0.1\n", 9, 1,
                "learning_rate: unknown key 'learning_rate'; it belongs in 'optimizer'");
    expect_diag(ctx, BASE_YAML "training: {units: 3}\n", 9, 12,
                "training.units: unknown key 'units'; it belongs in 'model.layers[]'");
    expect_diag(ctx, BASE_YAML "logging: {zzz: 1}\n", 9, 11,
                "logging.zzz: unknown key 'zzz'; expected one of: metrics_csv, log_interval, "
                "tensorboard, every_steps, histograms, flush_seconds");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: adamm}\n", 9, 19,
                "optimizer.kind: unknown optimizer 'adamm'; did you mean 'adam', 'adamw' or 'nadam'?");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: lion}\n", 9, 19,
                "unknown optimizer 'lion'; expected one of: sgd, adam, adamw, rmsprop, adagrad, nadam, "
                "adamax");
    expect_diag(ctx, BASE_YAML "metrics: [acuracy]\n", 9, 11,
                "metrics[0]: unknown metric 'acuracy'; did you mean 'accuracy'?");
    expect_diag(ctx, BASE_YAML "optimizer: {schedule: {kind: cosin, decay_steps: 5}}\n", 9, 30,
                "optimizer.schedule.kind: unknown schedule 'cosin'; did you mean 'cosine'?");
}

static void test_layer_entries(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
#define LAYERS(l)                                                                                  \
    "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"               \
    "model:\n  input_shape: [2]\n  layers:\n" l "loss: sparse_categorical_crossentropy\n"
    expect_diag(ctx, LAYERS("    - dence: {units: 2}\n"), 6, 7,
                "model.layers[0]: unknown layer kind 'dence'; did you mean 'dense'?");
    expect_diag(ctx, LAYERS("    - dense:\n      units: 2\n"), 6, 7,
                "model.layers[0]: a layer is one layer kind with its options: indent the options "
                "under 'dense'");
    expect_diag(ctx, LAYERS("    - dropout: {rate: 0.5, units: 3}\n    - dense: {units: 2}\n"), 6,
                28,
                "model.layers[0].dropout.units: layer kind 'dropout' does not read 'units' "
                "(an option of dense only)");
    expect_diag(ctx, LAYERS("    - dense: {activation: relu}\n"), 6, 7,
                "model.layers[0].dense.units: missing required key 'units'");
    expect_diag(ctx, LAYERS("    - dense: {units: 2, activation: rleu}\n"), 6, 37,
                "unknown activation 'rleu'; did you mean 'relu', 'gelu' or 'elu'?");
    expect_diag(ctx, LAYERS("    - dense: {units: 2, kernel_initializer: he_norml}\n"), 6, 45,
                "kernel_initializer: unknown initializer 'he_norml'; did you mean 'he_normal'?");
    expect_diag(
        ctx, LAYERS("    - dense: {units: 2, kernel_initializer: {glorot_uniform: {stddev: 1}}}\n"),
        6, 63, "initializer 'glorot_uniform' does not read 'stddev'");
    /* a flatten takes no options; `- flatten` and `- flatten: {}` are the same */
    tfl_config *cfg = valid(ctx, LAYERS("    - flatten\n    - flatten: {}\n    - dense: {units: 2, "
                                        "kernel_initializer: {random_normal: {stddev: 0.5}}}\n"));
    expect_get(cfg, "model.layers[2].dense.kernel_initializer.random_normal.stddev", "0.5");
    expect_get(cfg, "model.layers[2].kernel_initializer", "random_normal");
    tfl_config_free(cfg);
}

static void test_optimizer_kinds_and_defaults(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    /* Keras's default optimizer is RMSprop with Keras's own numbers */
    tfl_config *cfg = valid(ctx, BASE_YAML);
    expect_get(cfg, "optimizer.kind", "rmsprop");
    expect_get(cfg, "optimizer.formula", "tensorflow");
    expect_get(cfg, "optimizer.learning_rate", "0.001");
    expect_get(cfg, "optimizer.rho", "0.9");
    expect_get(cfg, "optimizer.epsilon", "1e-07");
    expect_get(cfg, "training.epochs", "1");
    expect_get(cfg, "training.batch_size", "32");
    expect_get(cfg, "training.on_nonfinite", "halt");
    expect_get(cfg, "checkpoint.keep", "5");
    tfl_config_free(cfg);
    cfg = valid(ctx, BASE_YAML "optimizer: {kind: adamw, formula: tensorflow}\n");
    expect_get(cfg, "optimizer.weight_decay", "0.004");
    expect_get(cfg, "optimizer.epsilon", "1e-07");
    tfl_config_free(cfg);
    expect_diag(ctx, BASE_YAML "optimizer:\n  kind: adam\n  momentum: 0.9\n", 11, 3,
                "optimizer.momentum: optimizer 'adam' does not read 'momentum' (an option of sgd, "
                "rmsprop only)");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: sgd, nesterov: true}\n", 9, 34,
                "optimizer.nesterov: nesterov needs momentum > 0");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: sgd, formula: tensorflow, dampening: 0.5}\n", 9,
                56, "dampening is read by the pytorch formula only (formula is tensorflow)");
    expect_diag(ctx, BASE_YAML "optimizer: {clipvalue: 1, clipnorm: 2}\n", 9, 37,
                "optimizer.clipnorm: at most one kind of clipping: clipvalue is set as well");
    expect_diag(ctx, BASE_YAML "optimizer: {schedule: {kind: step, decay_steps: 10}}\n", 9, 23,
                "optimizer.schedule.decay_rate: missing required key 'decay_rate'");
    expect_diag(ctx, BASE_YAML "optimizer: {schedule: {kind: constant, alpha: 0.1}}\n", 9, 40,
                "schedule 'constant' does not read 'alpha' (an option of cosine only)");
}

/* NAdam and Adamax: their names, defaults by formula, and the options the built optimizer gets */
static void test_nadam_adamax(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_config *cfg = valid(ctx, BASE_YAML "optimizer: {kind: nadam}\n");
    expect_get(cfg, "optimizer.formula", "pytorch");
    expect_get(cfg, "optimizer.learning_rate", "0.002");
    expect_get(cfg, "optimizer.momentum_decay", "0.004");
    expect_get(cfg, "optimizer.epsilon", "1e-08");
    tfl_config_free(cfg);
    cfg = valid(ctx, BASE_YAML "optimizer: {kind: nadam, formula: tensorflow, beta_2: 0.99}\n");
    expect_get(cfg, "optimizer.momentum_decay", "1");
    expect_get(cfg, "optimizer.learning_rate", "0.001");
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    const tfl_optimizer_opts *o = tfl_optimizer_options(opt);
    assert_int_equal(o->kind, TFL_OPTIMIZER_NADAM);
    assert_int_equal(o->formula, TFL_FORMULA_TENSORFLOW);
    assert_true(o->momentum_decay == 1.0 && o->beta2 == 0.99 && o->beta1 == 0.9);
    assert_string_equal(tfl_optimizer_name(opt), "NAdam");
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
    cfg = valid(ctx, BASE_YAML "optimizer: {kind: nadam, momentum_decay: 0.01, epsilon: 1e-6}\n");
    opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    o = tfl_optimizer_options(opt);
    assert_true(o->momentum_decay == 0.01 && o->epsilon == 1e-6 && o->learning_rate == 2e-3);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
    expect_diag(ctx, BASE_YAML "optimizer: {kind: adam, momentum_decay: 0.1}\n", 9, 25,
                "optimizer.momentum_decay: optimizer 'adam' does not read 'momentum_decay' (an "
                "option of nadam only)");
    expect_diag(ctx, BASE_YAML "optimizer: {kind: nadam, momentum_decay: -1}\n", 9, 42,
                "optimizer.momentum_decay");
    cfg = valid(ctx, BASE_YAML "optimizer: {kind: adamax, formula: tensorflow, beta_1: 0.8}\n");
    expect_get(cfg, "optimizer.learning_rate", "0.001");
    expect_get(cfg, "optimizer.epsilon", "1e-07");
    opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    o = tfl_optimizer_options(opt);
    assert_int_equal(o->kind, TFL_OPTIMIZER_ADAMAX);
    assert_true(o->beta1 == 0.8 && o->beta2 == 0.999 && o->epsilon == 1e-7);
    assert_string_equal(tfl_optimizer_name(opt), "Adamax");
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
    cfg = valid(ctx, BASE_YAML "optimizer: {kind: adamax}\n");
    expect_get(cfg, "optimizer.formula", "pytorch");
    expect_get(cfg, "optimizer.learning_rate", "0.002");
    tfl_config_free(cfg);
    expect_diag(ctx, BASE_YAML "optimizer: {kind: adamax, momentum_decay: 0.1}\n", 9, 27,
                "optimizer 'adamax' does not read 'momentum_decay' (an option of nadam only)");
}

static void test_data_section(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    expect_diag(ctx,
                "data:\n  train: {path: xor.csv}\n"
                "model: {input_shape: [2], layers: [flatten]}\n"
                "loss: mean_squared_error\n",
                2, 10, "data.train.format: missing required key 'format' (one of: idx, csv, text)");
    expect_diag(ctx,
                "data:\n  train: {format: csv, path: nope.csv}\n"
                "model: {input_shape: [2], layers: [flatten]}\nloss: mean_squared_error\n",
                2, 30,
                "data.train.path: cannot read '" TFL_SOURCE_DIR
                "/configs/data/nope.csv': No such file or directory");
    expect_diag(ctx,
                "data:\n  train: {format: idx, images: xor.csv, path: xor.csv}\n"
                "model: {input_shape: [2], layers: [flatten]}\nloss: mean_squared_error\n",
                2, 41, "data format 'idx' does not read 'path' (an option of csv, text only)");
    /* relative paths resolve against the config's directory, and come out absolute */
    tfl_config *cfg = valid(ctx, BASE_YAML);
    expect_get(cfg, "data.train.path", "\"" XOR_CSV "\"");
    tfl_config_free(cfg);
}

static void test_diagnostics_sorted_formatted_capped(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg =
        parse_text(f->ctx, BASE_YAML "training: {seed: -1, epochs: 0}\nfoo: 1\n", &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_config_diag_count(cfg), 3);
    assert_string_equal(tfl_config_diagnostics(cfg),
                        "t.yaml:9:18: training.seed: -1 is out of range: expected an integer in "
                        "[0, 9200000000000000000]\n"
                        "t.yaml:9:30: training.epochs: 0 is out of range: expected an integer in "
                        "[1, 1000000000]\n"
                        "t.yaml:10:1: foo: unknown key 'foo'; expected one of: format_version, "
                        "data, model, loss, metrics, optimizer, training, checkpoint, logging\n");
    const tfl_config_diag *d = tfl_config_diag_at(cfg, 1);
    assert_string_equal(d->file, "t.yaml");
    assert_int_equal(d->line, 9);
    assert_int_equal(d->col, 30);
    assert_string_equal(d->path, "training.epochs");
    assert_string_equal(d->message, "0 is out of range: expected an integer in [1, 1000000000]");
    assert_null(tfl_config_diag_at(cfg, 3));
    assert_null(tfl_config_diag_text(cfg, 3));
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "invalid config 't.yaml': 3 problems; the first: t.yaml:9:18: training.seed");
    tfl_config_free(cfg);
    /* 150 unknown keys: 100 kept, the count of the rest said */
    char *doc = malloc(150 * 16 + 1);
    assert_non_null(doc);
    size_t o = 0;
    for (int i = 0; i < 150; i++)
        o += (size_t)sprintf(doc + o, "key%03d: 1\n", i);
    cfg = parse_text(f->ctx, doc, &st);
    assert_int_equal(tfl_config_diag_count(cfg), TFL_CONFIG_MAX_DIAGS);
    assert_true(tfl_config_diag_total(cfg) >= 150);
    assert_has(tfl_config_diagnostics(cfg), "... and ");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    free(doc);
}

/* ---- the broken configs of bad/ ----------------------------------------------------------- */

static void test_bad_configs_manifest(void **state)
{
    fixture *f = *state;
    FILE *m = fopen(SRC_DIR "/bad/MANIFEST", "r");
    assert_non_null(m);
    char line[1024];
    int cases = 0;
    char names[256][128];
    while (fgets(line, sizeof line, m)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = '\0';
        char *name = strtok(line, "\t"), *pos = strtok(NULL, "\t"), *frag = strtok(NULL, "");
        assert_non_null(name);
        assert_non_null(pos);
        assert_non_null(frag);
        int want_line, want_col;
        assert_int_equal(sscanf(pos, "%d:%d", &want_line, &want_col), 2);
        char path[512];
        snprintf(path, sizeof path, SRC_DIR "/bad/%s", name);
        tfl_status st;
        tfl_config *cfg = tfl_config_load(f->ctx, path, NULL, 0, &st);
        assert_non_null(cfg);
        if (st != TFL_INVALID_ARGUMENT || tfl_config_diag_count(cfg) == 0) {
            print_error("%s: expected INVALID_ARGUMENT with diagnostics\n", name);
            fail();
        }
        const tfl_config_diag *d = tfl_config_diag_at(cfg, 0);
        const char *text = tfl_config_diag_text(cfg, 0);
        if (d->line != want_line || d->col != want_col || !strstr(text, frag) ||
            strcmp(d->file, path)) {
            print_error("%s: expected %d:%d \"%s\", got\n%s", name, want_line, want_col, frag,
                        tfl_config_diagnostics(cfg));
            fail();
        }
        /* nothing can be built from it */
        assert_null(tfl_config_format(cfg));
        assert_null(tfl_config_build_model(cfg));
        tfl_config_free(cfg);
        tfl_ctx_clear_error(f->ctx);
        assert_true(cases < 256);
        snprintf(names[cases++], sizeof names[0], "%s", name);
    }
    fclose(m);
    assert_true(cases >= 60);
    /* every broken config is in the manifest */
    DIR *dir = opendir(SRC_DIR "/bad");
    assert_non_null(dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".yaml")) continue;
        files++;
        bool listed = false;
        for (int i = 0; i < cases && !listed; i++)
            listed = !strcmp(names[i], e->d_name);
        if (!listed) {
            print_error("%s is not in bad/MANIFEST\n", e->d_name);
            fail();
        }
    }
    closedir(dir);
    assert_int_equal(files, cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_numbers_are_typed_by_the_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scalar_type_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_booleans_are_true_or_false, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges_name_the_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_keys_and_names_suggest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layer_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optimizer_kinds_and_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nadam_adamax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_section, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diagnostics_sorted_formatted_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_configs_manifest, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
