/* graph_runs.h: two graph configs over xor's data (a dense graph with a merge of two dtypes'
 * worth of paths, and a residual block with BatchNormalization) and the exact-resume check
 * the config tests share: a run of 4 epochs against one of 2 + 2, bit for bit. */
#ifndef TFL_GRAPH_RUNS_H
#define TFL_GRAPH_RUNS_H

#include "config_helpers.h"

#include "tfl_events_util.h"

/* x -> dense(8) -> d2 -> add(d2, dense) -> dropout -> concatenate(add, input) -> dense(2) */
#define GRAPH_YAML                                                                                 \
    "data:\n"                                                                                      \
    "  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"                      \
    "model:\n"                                                                                     \
    "  input_shape: [2]\n"                                                                         \
    "  layers:\n"                                                                                  \
    "    - dense: {units: 8, activation: tanh}\n"                                                  \
    "    - dense: {units: 8, activation: tanh, name: d2}\n"                                        \
    "    - add: {inputs: [d2, dense]}\n"                                                           \
    "    - dropout: {rate: 0.25, seed: 7}\n"                                                       \
    "    - concatenate: {inputs: [dropout, input]}\n"                                              \
    "    - dense: {units: 2}\n"                                                                    \
    "loss: sparse_categorical_crossentropy\n"                                                      \
    "optimizer: {kind: adam, learning_rate: 0.05}\n"                                               \
    "training: {batch_size: 2, seed: 3}\n"

/* a residual block as the shipped ResNet has it, on xor's two features as a 1x2 image: conv,
 * BatchNormalization, ReLU, conv, BatchNormalization, the shortcut added, pooled, dense */
#define RESNET_YAML                                                                                \
    "data:\n"                                                                                      \
    "  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"                      \
    "model:\n"                                                                                     \
    "  input_shape: [2]\n"                                                                         \
    "  layers:\n"                                                                                  \
    "    - reshape: {target_shape: [1, 2, 1]}\n"                                                   \
    "    - conv2d: {name: stem, filters: 4, kernel_size: 3, padding: same, use_bias: false}\n"     \
    "    - batch_normalization: {name: stem_bn}\n"                                                 \
    "    - activation: {name: stem_relu, activation: relu}\n"                                      \
    "    - conv2d: {name: c1, filters: 4, kernel_size: 3, padding: same, use_bias: false}\n"       \
    "    - batch_normalization: {name: bn1}\n"                                                     \
    "    - activation: {name: relu1, activation: relu}\n"                                          \
    "    - conv2d: {name: c2, filters: 4, kernel_size: 3, padding: same, use_bias: false}\n"       \
    "    - batch_normalization: {name: bn2}\n"                                                     \
    "    - add: {name: res, inputs: [bn2, stem_relu]}\n"                                           \
    "    - activation: {name: out, activation: relu}\n"                                            \
    "    - global_average_pooling2d: {name: pool}\n"                                               \
    "    - dense: {name: logits, units: 2}\n"                                                      \
    "loss: sparse_categorical_crossentropy\n"                                                      \
    "optimizer: {kind: adam, learning_rate: 0.05}\n"                                               \
    "training: {batch_size: 2, seed: 5}\n"

/* the variables of the run's restored model, as bytes */
static inline void read_vars(tfl_run *run, float *out, int cap, int *n)
{
    assert_int_equal(tfl_run_restore(run, NULL, NULL, 0, NULL), TFL_OK);
    tfl_tensor *v[32];
    int nv = tfl_model_variables(tfl_run_model(run), TFL_VARS_ALL, v, 32);
    assert_true(nv <= 32);
    *n = 0;
    for (int i = 0; i < nv; i++) {
        int64_t k = tfl_tensor_numel(v[i]);
        assert_true(*n + k <= cap);
        assert_int_equal(tfl_tensor_to_host(v[i], out + *n, sizeof(float) * (size_t)k), TFL_OK);
        *n += (int)k;
    }
}

/* Trains yaml with `epochs` and the NULL-ended `extra` settings (NULL: none) in run folder dir;
 * the restored model's variables into vars (NULL: not read). */
static inline void train(tfl_ctx *ctx, const char *yaml, const char *const *extra, const char *dir,
                         const char *epochs, float *vars, int *n)
{
    tfl_status st;
    const char *sets[8] = {epochs};
    int k = 1;
    for (; extra && extra[k - 1] && k < 8; k++)
        sets[k] = extra[k - 1];
    tfl_config *cfg = parse_with(ctx, yaml, sets, k, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_run *run = tfl_run_open(cfg, &(tfl_run_opts){.run_dir = dir}, &st);
    assert_non_null(run);
    tfl_run_result res;
    st = tfl_run_train(run, &res);
    if (st != TFL_OK) print_error("%s: %s\n", dir, tfl_ctx_error(ctx).message);
    assert_int_equal(st, TFL_OK);
    assert_false(res.refused);
    if (vars) read_vars(run, vars, 512, n);
    tfl_run_close(run);
    tfl_config_free(cfg);
}

/* Trains yaml (with the NULL-ended `extra` settings) 4 epochs straight and 2 + 2 resumed (run
 * folders named by tag, their paths into straight and resumed); the variables of both runs
 * (trainable or not) must be equal bit for bit and number `count`; the straight run's go to
 * out. */
static inline void expect_exact_resume_in(tfl_ctx *ctx, const char *yaml, const char *const *extra,
                                          const char *tag, int count, float *out,
                                          char straight[256], char resumed[256])
{
    char name[64];
    snprintf(name, sizeof name, "%s4", tag);
    temp_dir(straight, 256, name);
    snprintf(name, sizeof name, "%s22", tag);
    temp_dir(resumed, 256, name);
    static float b[512];
    int na = 0, nb = 0;
    train(ctx, yaml, extra, straight, "training.epochs=4", out, &na);
    train(ctx, yaml, extra, resumed, "training.epochs=2", NULL, NULL);
    train(ctx, yaml, extra, resumed, "training.epochs=4", b, &nb);
    assert_int_equal(na, count);
    assert_int_equal(na, nb);
    assert_memory_equal(out, b, sizeof(float) * (size_t)na);
}

static inline void expect_exact_resume(tfl_ctx *ctx, const char *yaml, const char *tag, int count,
                                       float *out)
{
    char straight[256], resumed[256];
    expect_exact_resume_in(ctx, yaml, NULL, tag, count, out, straight, resumed);
}

#endif /* TFL_GRAPH_RUNS_H */
