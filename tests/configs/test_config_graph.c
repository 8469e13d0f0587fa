/* test_config_graph.c: graph models in configs: `inputs` and the merges build the graph the
 * config names (checked layer by layer against the model's own inputs), the resolved config
 * prints every layer's name and inputs and loads back to the same text, a stack config stays a
 * stack, a config loads valid beside a live model of its names (building it then names the
 * clash), a graph run resumes exactly (the variables after 2 + 2 epochs equal those after 4,
 * bit for bit, Dropout included), a residual block with BatchNormalization too (its moving
 * statistics included), and every graph error is a diagnostic at its key with
 * file:line:col: an unknown name (with a did-you-mean), a cycle, a later layer, a count the
 * kind does not take, an unused layer, shapes that do not merge, 'input' as a layer name, and
 * inputs that are not names; long and escaped names print whole, concatenate's axis reaches
 * the layer, and a concatenation whose size passes INT64_MAX is a diagnostic. */
#include "graph_runs.h"

#include <math.h>

#include "tfl_events_util.h"


static void test_graph_builds_as_named(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, GRAPH_YAML, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    assert_true(tfl_model_is_graph(m));
    const char *names[] = {"dense", "d2", "add", "dropout", "concatenate", "dense_1"};
    /* each layer's inputs, by index (-1: the model's input) */
    const int from[6][3] = {{1, -1}, {1, 0}, {2, 1, 0}, {1, 2}, {2, 3, -1}, {1, 4}};
    assert_int_equal(tfl_model_num_layers(m), 6);
    for (int i = 0; i < 6; i++) {
        assert_string_equal(tfl_layer_name(tfl_model_layer(m, i)), names[i]);
        tfl_layer *in[4];
        assert_int_equal(tfl_model_layer_inputs(m, i, in, 4), from[i][0]);
        for (int k = 0; k < from[i][0]; k++)
            assert_ptr_equal(in[k], from[i][k + 1] < 0 ? tfl_model_input(m)
                                                       : tfl_model_layer(m, from[i][k + 1]));
    }
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), (2 * 8 + 8) + (8 * 8 + 8) + (10 * 2 + 2));
    const char *sum = tfl_model_summary(m);
    assert_non_null(strstr(sum, "dropout, input"));
    tfl_model_free(m);
    /* the resolved config: names and inputs of every layer, and it loads back the same */
    const char *text = tfl_config_format(cfg);
    assert_non_null(text);
    assert_non_null(strstr(text, "    - dense:\n        name: \"dense\"\n        inputs: [input]\n"));
    assert_non_null(strstr(text, "    - add:\n        name: \"add\"\n        inputs: [d2, dense]\n"));
    assert_non_null(strstr(text, "        inputs: [dropout, input]\n        axis: -1\n"));
    assert_non_null(strstr(text, "        name: \"dense_1\"\n        inputs: [concatenate]\n"));
    char *copy = strdup(text);
    tfl_config *again = parse_text(ctx, copy, &st);
    assert_int_equal(st, TFL_OK);
    assert_string_equal(tfl_config_format(again), copy);
    free(copy);
    tfl_config_free(again);
    tfl_config_free(cfg);
}

/* A config is valid whatever else lives in the context: loaded while a model built from it
 * (same model and layer names) is alive, it loads valid; building it then fails at model.name
 * with the name, and works again once the first model is freed. A model name that can never
 * be one is a diagnostic at load. */
static void test_graph_config_beside_a_live_model(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_status st;
    const char *sets[] = {"model.name=net"};
    tfl_config *cfg = parse_with(ctx, GRAPH_YAML, sets, 1, &st);
    assert_int_equal(st, TFL_OK);
    tfl_model *first = tfl_config_build_model(cfg);
    assert_non_null(first);
    tfl_config *again = parse_with(ctx, GRAPH_YAML, sets, 1, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(again));
    assert_int_equal(st, TFL_OK);
    assert_true(tfl_config_valid(again));
    assert_null(tfl_config_build_model(again));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "model.name: tfl_model_new: the name 'net' is taken by another model");
    /* the layers' names alone (the model unnamed) clash the same way, at the layer */
    tfl_config *unnamed = parse_text(ctx, GRAPH_YAML, &st);
    assert_int_equal(st, TFL_OK);
    tfl_model_free(first);
    first = tfl_config_build_model(unnamed);
    assert_non_null(first);
    tfl_config *unnamed2 = parse_text(ctx, GRAPH_YAML, &st);
    assert_int_equal(st, TFL_OK);
    assert_null(tfl_config_build_model(unnamed2));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "t.yaml:6:7: model.layers[0].dense: tfl_layer_new: the name 'dense' is "
                      "taken by another layer");
    tfl_model_free(first);
    tfl_model *second = tfl_config_build_model(again);
    assert_non_null(second);
    assert_string_equal(tfl_model_name(second), "net");
    assert_string_equal(tfl_layer_name(tfl_model_layer(second, 1)), "d2");
    tfl_model_free(second);
    tfl_config_free(unnamed2);
    tfl_config_free(unnamed);
    tfl_config_free(again);
    tfl_config_free(cfg);
    const char *bad[] = {"model.name=a/b"};
    tfl_config *slash = parse_with(ctx, GRAPH_YAML, bad, 1, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    find_diag(slash, "model.name: a model name must be 1 to 127 bytes without '/' or ':', got "
                     "'a/b'");
    tfl_config_free(slash);
    tfl_ctx_clear_error(ctx);
}

static void test_stack_config_stays_a_stack(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, BASE_YAML, &st);
    assert_int_equal(st, TFL_OK);
    const char *text = tfl_config_format(cfg);
    assert_non_null(strstr(text, "    - dense:\n        name: null\n        inputs: null\n"));
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    assert_false(tfl_model_is_graph(m));
    assert_string_equal(tfl_layer_name(tfl_model_layer(m, 1)), "dense_1");
    tfl_model_free(m);
    tfl_config_free(cfg);
}


static void test_graph_run_resumes_exactly(void **state)
{
    static float vars[512];
    expect_exact_resume(((fixture *)*state)->ctx, GRAPH_YAML, "graph",
                        (2 * 8 + 8) + (8 * 8 + 8) + (10 * 2 + 2), vars);
}


/* The residual graph resumes exactly too, BatchNormalization's moving statistics included:
 * every variable (trainable or not) after 2 + 2 epochs equals those after 4, bit for bit */
static void test_resnet_graph_resumes_exactly(void **state)
{
    /* 3 convs of 3x3 (36, 144, 144), 3 BatchNorms of 4 (gamma, beta, moving mean, variance),
     * the dense 4x2 + 2 */
    const int count = 36 + 144 + 144 + 3 * 4 * 4 + 4 * 2 + 2;
    static float vars[512];
    expect_exact_resume(((fixture *)*state)->ctx, RESNET_YAML, "res", count, vars);
    /* and training moved the moving statistics off their initial values (0 and 1) */
    int moved = 0;
    for (int i = 0; i < count; i++) moved += vars[i] != 0.0f && vars[i] != 1.0f;
    assert_true(moved > count / 2);
}

/* The document with line `at` (1-based, within the layers) replaced by `layer` */
static void expect_graph_diag(tfl_ctx *ctx, const char *const *layers, int line, int col,
                              const char *fragment)
{
    char text[2048];
    size_t o = (size_t)snprintf(text, sizeof text,
                                "data:\n  train: {format: csv, path: xor.csv, header: true, "
                                "label_column: -1}\nmodel:\n  input_shape: [2]\n  layers:\n");
    for (int i = 0; layers[i]; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "    - %s\n", layers[i]);
    snprintf(text + o, sizeof text - o, "loss: sparse_categorical_crossentropy\n");
    expect_diag(ctx, text, line, col, fragment);
}

static void test_graph_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    /* layers start on line 6 */
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: a}",
                                            "add: {inputs: [a, inptu]}", "dense: {units: 2}",
                                            NULL},
                      7, 25, "model.layers[1].add.inputs: no layer named 'inptu'; did you mean "
                             "'input'?");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: a, inputs: c}",
                                            "dense: {units: 4, name: b}",
                                            "dense: {units: 4, name: c, inputs: b}",
                                            "dense: {units: 2}", NULL},
                      6, 42, "model.layers[0].dense.inputs: a cycle: a -> b -> c -> a");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: a, inputs: a}",
                                            "dense: {units: 2}", NULL},
                      6, 42, "a cycle: a -> a");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: a}",
                                            "dense: {units: 4, name: b, inputs: c}",
                                            "dense: {units: 4, name: c, inputs: a}",
                                            "add: {inputs: [b, c]}", "dense: {units: 2}", NULL},
                      7, 42, "'c' is model.layers[2], after 'b': list every layer after the "
                             "layers it takes");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}", "add: {inputs: dense}",
                                            "dense: {units: 2}", NULL},
                      7, 21, "add merges 2 or more inputs, got 1");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}", "add", "dense: {units: 2}", NULL},
                      7, 7, "model.layers[1].add: add merges 2 or more inputs, got 1");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}",
                                            "dense: {units: 2, inputs: [dense, input]}", NULL},
                      7, 33, "dense takes one input, got 2");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: branch}",
                                            "dense: {units: 2, inputs: input}", NULL},
                      6, 7, "model.layers[0].dense: the output of 'branch' is never used");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}",
                                            "add: {inputs: [dense, input]}",
                                            "dense: {units: 2}", NULL},
                      7, 7, "Add needs inputs of one shape: input 1 has shape (-1, 2), input 0 "
                            "(-1, 4) (input shapes (-1, 4), (-1, 2))");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4, name: input}",
                                            "dense: {units: 2, inputs: input}", NULL},
                      6, 31, "'input' names the model's input in a graph");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}",
                                            "dense: {units: 2, inputs: {a: 1}}", NULL},
                      7, 33, "expected a name or a list of 1 to 32 names");
    expect_graph_diag(ctx, (const char *[]){"dense: {units: 4}",
                                            "concatenate: {inputs: [dense, input], axis: 0}",
                                            "dense: {units: 2}", NULL},
                      7, 51, "concatenate.axis: axis 0 is the batch axis, which is never joined");
}

/* Names that the resolved text must spell whole: a 127-byte name of control bytes (each escaped
 * to 4 bytes) and a merge of 32 inputs of 127-byte names, 4,128 bytes and more on one line.
 * The printed inputs were cut at 300 bytes a name and 4,096 a line, so the resolved text named
 * layers that do not exist. */
static void test_graph_long_names_print_whole(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char ctrl[127 * 4 + 1], name[128], inputs[32 * 130], text[8192];
    for (int i = 0; i < 127; i++) memcpy(ctrl + 4 * i, "\\x01", 4);
    ctrl[127 * 4] = '\0';
    memset(name, 'n', 127);
    name[127] = '\0';
    size_t o = 0;
    for (int i = 0; i < 32; i++)
        o += (size_t)snprintf(inputs + o, sizeof inputs - o, "%s%s", i ? ", " : "", name);
    snprintf(text, sizeof text,
             "data:\n  train: {format: csv, path: xor.csv, header: true, label_column: -1}\n"
             "model:\n  input_shape: [2]\n  layers:\n"
             "    - dense: {units: 2, name: \"%s\"}\n"
             "    - dense: {units: 2, name: %s, inputs: \"%s\"}\n"
             "    - add: {name: sum, inputs: [%s]}\n"
             "loss: sparse_categorical_crossentropy\n",
             ctrl, name, ctrl, inputs);
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, text, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    const char *f = tfl_config_format(cfg);
    assert_non_null(f);
    char line[8192];
    snprintf(line, sizeof line, "        name: \"%s\"\n        inputs: [\"%s\"]\n", name, ctrl);
    assert_non_null(strstr(f, line));
    snprintf(line, sizeof line, "        inputs: [%s]\n", inputs);
    assert_non_null(strstr(f, line));
    /* tfl_config_get gives the whole list too (4,128 bytes) */
    char got[8192];
    snprintf(line, sizeof line, "[%s]", inputs);
    assert_int_equal(tfl_config_get(cfg, "model.layers[2].add.inputs", got, sizeof got),
                     (int)strlen(line));
    assert_string_equal(got, line);
    /* the resolved text loads back as the same graph and prints the same */
    char *copy = strdup(f);
    tfl_config *again = parse_text(ctx, copy, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(again));
    assert_int_equal(st, TFL_OK);
    assert_string_equal(tfl_config_format(again), copy);
    tfl_model *m = tfl_config_build_model(again);
    assert_non_null(m);
    tfl_layer *in[32];
    assert_int_equal(tfl_model_layer_inputs(m, 2, in, 32), 32);
    for (int i = 0; i < 32; i++) assert_ptr_equal(in[i], tfl_model_layer(m, 1));
    tfl_model_free(m);
    free(copy);
    tfl_config_free(again);
    tfl_config_free(cfg);
}

/* concatenate's axis reaches the layer: axis 1 of two (1, 2) examples is (2, 2), where the
 * last axis would give (1, 4); an axis past the inputs' rank is a diagnostic at the layer. The
 * built layer used to get no axis, so that every concatenation joined the last axis. */
static void test_graph_concatenate_axis_reaches_the_layer(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *text = "data:\n  train: {format: csv, path: xor.csv, header: true, "
                       "label_column: -1}\nmodel:\n  input_shape: [2]\n  layers:\n"
                       "    - reshape: {name: r, target_shape: [1, 2]}\n"
                       "    - concatenate: {name: cat, inputs: [r, r], axis: 1}\n"
                       "    - flatten\n"
                       "    - dense: {units: 2}\n"
                       "loss: sparse_categorical_crossentropy\n";
    tfl_status st;
    tfl_config *cfg = parse_text(ctx, text, &st);
    if (st != TFL_OK) print_error("%s\n", tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    assert_non_null(m);
    const char *sum = tfl_model_summary(m);
    assert_non_null(sum);
    assert_non_null(strstr(sum, "cat (Concatenate)"));
    assert_non_null(strstr(sum, "(None, 2, 2)"));
    assert_null(strstr(sum, "(None, 1, 4)"));
    /* the values: x = [[1, 2]] gives [[1, 2], [1, 2]], flattened */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 2},
                                   (float[]){1, 2});
    assert_non_null(x);
    tfl_tensor *y = tfl_layer_call_n(tfl_model_layer(m, 1), 2,
                                     (const tfl_tensor *[]){tfl_reshape(ctx, x, 3,
                                                                        (int64_t[]){1, 1, 2}),
                                                            tfl_reshape(ctx, x, 3,
                                                                        (int64_t[]){1, 1, 2})},
                                     false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_rank(y), 3);
    assert_int_equal(tfl_tensor_shape(y)[1], 2);
    assert_int_equal(tfl_tensor_shape(y)[2], 2);
    tfl_frame_pop(ctx);
    tfl_model_free(m);
    tfl_config_free(cfg);
    expect_graph_diag(ctx, (const char *[]){"concatenate: {inputs: [input, input], axis: 3}",
                                            "dense: {units: 2}", NULL},
                      6, 7, "Concatenate's axis 3 is not an axis of its inputs (-1, 2) past the "
                            "batch axis");
}

/* Concatenations whose output size along the axis passes INT64_MAX: a diagnostic at the layer
 * (the sum overflowed: undefined behaviour in shape inference). */
static void test_graph_concatenate_size_overflow(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char text[8192];
    size_t o = (size_t)snprintf(text, sizeof text,
                                "data:\n  train: {format: csv, path: xor.csv, header: true, "
                                "label_column: -1}\nmodel:\n  input_shape: [1000000000]\n"
                                "  layers:\n");
    for (int c = 0; c < 7; c++) { /* c0 = 32 inputs, c1 = 32 c0, ...: 1e9 * 32^7 > INT64_MAX */
        o += (size_t)snprintf(text + o, sizeof text - o, "    - concatenate: {name: c%d, inputs: [",
                              c);
        for (int i = 0; i < 32; i++)
            o += (size_t)snprintf(text + o, sizeof text - o, c ? "%sc%d" : "%sinput",
                                  i ? ", " : "", c - 1);
        o += (size_t)snprintf(text + o, sizeof text - o, "]}\n");
    }
    snprintf(text + o, sizeof text - o, "    - dense: {units: 2}\n"
                                        "loss: sparse_categorical_crossentropy\n");
    /* c6 starts from c5's 1e9 * 32^6 = 1,073,741,824,000,000,000: the 9th input passes 2^63 - 1 */
    expect_diag(ctx, text, 12, 7,
                "model.layers[6].concatenate: c6: Concatenate's sizes along axis -1 add up to "
                "more than INT64_MAX (at input 8, of shape (-1, 1073741824000000000))");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_graph_builds_as_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_config_beside_a_live_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_config_stays_a_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_run_resumes_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resnet_graph_resumes_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_long_names_print_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_concatenate_axis_reaches_the_layer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_graph_concatenate_size_overflow, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
