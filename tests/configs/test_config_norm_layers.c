/* test_config_norm_layers.c: layer_normalization and global_average_pooling2d in configs: the
 * bare names load, build the layers with their defaults and train; layer_normalization reads
 * epsilon, center and scale; momentum (BatchNormalization's) and any option of the pooling
 * are diagnostics; the pooling's rank is checked at load time. */
#include "config_helpers.h"

#include <math.h>

#define NORM_POOL_YAML                                                                             \
    "data:\n"                                                                                      \
    "  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"                      \
    "model:\n"                                                                                     \
    "  input_shape: [2]\n"                                                                         \
    "  layers:\n"                                                                                  \
    "    - dense: {units: 8, activation: tanh}\n"                                                  \
    "    - layer_normalization\n"                                                                  \
    "    - reshape: {target_shape: [2, 2, 2]}\n"                                                   \
    "    - global_average_pooling2d\n"                                                             \
    "    - dense: {units: 2}\n"                                                                    \
    "loss: sparse_categorical_crossentropy\n"                                                      \
    "optimizer: {kind: adam, learning_rate: 0.05}\n"                                               \
    "training: {epochs: 3, batch_size: 4, seed: 1}\n"

static void test_layers_load_build_and_train(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, NORM_POOL_YAML, &st);
    if (st != TFL_OK) print_error("%s", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    char buf[256];
    assert_true(tfl_config_get(cfg, "model.layers[1].layer_normalization.epsilon", buf,
                               sizeof buf) >= 0);
    assert_true(fabs(strtod(buf, NULL) - 1e-3) < 1e-15);
    /* the resolved YAML writes both kinds out and loads back */
    const char *yaml = tfl_config_format(cfg);
    assert_non_null(yaml);
    assert_has(yaml, "- layer_normalization:\n");
    assert_has(yaml, "- global_average_pooling2d:\n        name: null\n        inputs: null\n    - dense:");
    tfl_config *back = parse_text(ctx, yaml, &st);
    if (st != TFL_OK) print_error("%s\n%s", yaml, tfl_config_diagnostics(back));
    assert_int_equal(st, TFL_OK);
    tfl_config_free(back);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    assert_int_equal(tfl_model_num_layers(m), 5);
    tfl_layer *ln = tfl_model_layer(m, 1), *gap = tfl_model_layer(m, 3);
    assert_int_equal(tfl_layer_kind_of(ln), TFL_LAYER_LAYER_NORM);
    assert_int_equal(tfl_layer_kind_of(gap), TFL_LAYER_GLOBAL_AVG_POOL2D);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(ln, TFL_VARS_TRAINABLE, v, 2), 2);
    assert_string_equal(tfl_variable_name(v[0]), "layer_normalization/gamma");
    assert_string_equal(tfl_variable_name(v[1]), "layer_normalization/beta");
    /* dense 2*8+8, gamma and beta 8 each, dense 2*2+2 */
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 24 + 16 + 6);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    float before[8], after[8];
    assert_int_equal(tfl_tensor_to_host(v[0], before, sizeof before), TFL_OK);
    tfl_epoch_logs logs[3];
    tfl_history h = {logs, 3, 0};
    assert_int_equal(tfl_model_fit(m, data.train, &fo, &h), TFL_OK);
    assert_int_equal(h.count, 3);
    for (int i = 0; i < 3; i++)
        assert_true(isfinite(logs[i].loss));
    assert_true(logs[2].loss < logs[0].loss);
    /* gamma was trained: the gradient reaches the layer norm through the pooling */
    assert_int_equal(tfl_tensor_to_host(v[0], after, sizeof after), TFL_OK);
    int moved = 0;
    for (int i = 0; i < 8; i++)
        moved += after[i] != before[i];
    assert_true(moved > 0);
    tfl_config_datasets_free(&data);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
}

static void test_layer_norm_options(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx,
                                 "data:\n  train: {format: csv, path: xor.csv, header: true, "
                                 "label_column: -1}\nmodel:\n  input_shape: [3, 4]\n  layers:\n"
                                 "    - layer_normalization: {epsilon: 0.5, center: false}\n"
                                 "loss: mean_squared_error\n",
                                 &st);
    if (st != TFL_OK) print_error("%s", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    tfl_layer *ln = tfl_model_layer(m, 0);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(ln, TFL_VARS_ALL, v, 2), 1); /* gamma only */
    assert_string_equal(tfl_variable_name(v[0]), "layer_normalization/gamma");
    /* epsilon 0.5 reaches the layer: (1, 3, 1, 3) has mean 2 and variance 1 */
    assert_int_equal(tfl_frame_push(f->ctx), TFL_OK);
    float xv[12] = {1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3}, yv[12];
    tfl_tensor *x = tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){1, 3, 4}, xv);
    tfl_tensor *y = tfl_layer_call(ln, x, false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_to_host(y, yv, sizeof yv), TFL_OK);
    for (int i = 0; i < 12; i++)
        assert_true(fabs(yv[i] - (i % 2 ? 1 : -1) / sqrt(1.5)) < 1e-6);
    assert_int_equal(tfl_frame_pop(f->ctx), TFL_OK);
    tfl_model_free(m);
    tfl_config_free(cfg);
}

static void test_diagnostics(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n"
                "    - layer_normalization: {momentum: 0.9}\nloss: mean_squared_error\n",
                6, 29,
                "layer kind 'layer_normalization' does not read 'momentum' (an option of "
                "batch_normalization only)");
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [1, 2, 1]}\n"
                "    - global_average_pooling2d: {pool_size: 2}\nloss: mean_squared_error\n",
                7, 34,
                "layer kind 'global_average_pooling2d' does not read 'pool_size'");
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - dense: {units: 4}\n"
                "    - global_average_pooling2d\nloss: mean_squared_error\n",
                7, 7,
                "model.layers[1].global_average_pooling2d: global_average_pooling2d: "
                "GlobalAveragePooling2D expects an input of rank 4");
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n"
                "    - layer_normalization: {epsilon: 0}\nloss: mean_squared_error\n",
                6, 38, "0 is out of range");
    /* position_embedding: sequence_length is required, and bounds the sequence */
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [2, 1]}\n"
                "    - position_embedding\nloss: mean_squared_error\n",
                7, 7, "missing required key 'sequence_length'");
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [2, 1]}\n"
                "    - position_embedding: {sequence_length: 1}\nloss: mean_squared_error\n",
                7, 7,
                "position_embedding: a sequence of 2 is longer than the layer's sequence_length 1");
}

/* multi_head_attention in a config: the keys reach the layer; a causal transformer block's
 * pieces (embedding, position_embedding, attention, layer_normalization) train together */
static void test_attention(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx,
        "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
        "model:\n  input_shape: [2]\n  layers:\n    - dense: {units: 8}\n"
        "    - reshape: {target_shape: [2, 4]}\n"
        "    - position_embedding: {sequence_length: 2}\n"
        "    - multi_head_attention: {num_heads: 2, key_dim: 3, use_causal_mask: true, "
        "dropout: 0.1, seed: 3}\n"
        "    - layer_normalization\n    - flatten\n    - dense: {units: 2}\n"
        "loss: sparse_categorical_crossentropy\noptimizer: {kind: adam, learning_rate: 0.05}\n"
        "training: {epochs: 20, batch_size: 4, seed: 1}\n", &st);
    if (st != TFL_OK) print_error("%s", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    tfl_layer *mha = tfl_model_layer(m, 3);
    assert_int_equal(tfl_layer_kind_of(mha), TFL_LAYER_MULTI_HEAD_ATTENTION);
    char buf[64];
    assert_true(tfl_config_get(cfg, "model.layers[3].multi_head_attention.use_causal_mask", buf,
                               sizeof buf) >= 0);
    assert_string_equal(buf, "true");
    /* q, k, v: 4*2*3 + 2*3 each; output 2*3*4 + 4 */
    assert_int_equal(tfl_layer_param_count(mha, TFL_VARS_ALL), 3 * (24 + 6) + 24 + 4);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    tfl_epoch_logs logs[20];
    tfl_history h = {logs, 20, 0};
    assert_int_equal(tfl_model_fit(m, data.train, &fo, &h), TFL_OK);
    assert_true(isfinite(logs[19].loss) && logs[19].loss < logs[0].loss);
    tfl_config_datasets_free(&data);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
    expect_diag(f->ctx,
                "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
                "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [2, 1]}\n"
                "    - multi_head_attention: {num_heads: 2}\nloss: mean_squared_error\n",
                7, 7, "num_heads 2 does not divide the input's 1 features (each head takes "
                      "features / num_heads); give key_dim (input shape (-1, 2, 1))");
}

/* position_embedding in a config: a (2, 1) sequence gets a (4, 1) table's first rows, trains */
static void test_position_embedding(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx,
        "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
        "model:\n  input_shape: [2]\n  layers:\n    - reshape: {target_shape: [2, 1]}\n"
        "    - position_embedding: {sequence_length: 4}\n    - flatten\n"
        "    - dense: {units: 2}\n"
        "loss: sparse_categorical_crossentropy\noptimizer: {kind: adam, learning_rate: 0.05}\n"
        "training: {epochs: 2, batch_size: 4, seed: 1}\n", &st);
    if (st != TFL_OK) print_error("%s", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    tfl_layer *pos = tfl_model_layer(m, 1);
    assert_int_equal(tfl_layer_kind_of(pos), TFL_LAYER_POSITION_EMBEDDING);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(pos, TFL_VARS_ALL, v, 2), 1);
    assert_string_equal(tfl_variable_name(v[0]), "position_embedding/embeddings");
    assert_int_equal(tfl_tensor_dim(v[0], 0), 4);
    assert_int_equal(tfl_tensor_dim(v[0], 1), 1);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_config_datasets data;
    assert_int_equal(tfl_config_build_datasets(cfg, &data), TFL_OK);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    float before[4], after[4];
    assert_int_equal(tfl_tensor_to_host(v[0], before, sizeof before), TFL_OK);
    assert_int_equal(tfl_model_fit(m, data.train, &fo, NULL), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(v[0], after, sizeof after), TFL_OK);
    assert_true(after[0] != before[0] && after[1] != before[1]); /* the rows used trained */
    assert_true(after[2] == before[2] && after[3] == before[3]); /* the others not */
    tfl_config_datasets_free(&data);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_layers_load_build_and_train, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layer_norm_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diagnostics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_position_embedding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attention, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
