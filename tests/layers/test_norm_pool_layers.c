/* test_norm_pool_layers.c: LayerNormalization and GlobalAveragePooling2D.
 *  - values and gradients against PyTorch (tests/reference/fixtures/layers_torch.json, from
 *    layers_torch.py): F.layer_norm with eps 1e-3 (Keras's default, which the layer takes;
 *    PyTorch's own is 1e-5) and x.mean(dim=(1, 2)) on NHWC; the layer computes in float32
 *    from the fixture's float64 inputs, so the comparison is to 1e-5 relative;
 *  - output shapes, variables (names, shapes, count, trainable), epsilon, center and scale;
 *  - the errors: momentum for LayerNormalization, a rank 3 input for the pooling, another
 *    feature count on a later call. */
#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/layers_torch.json"
#include "seeds_fixture.h"
#include "torch_lists.h"

#define TOL 1e-5 /* relative to max(1, max |want|): float32 compute against float64 */

static tfl_layer *new_layer(tfl_ctx *ctx, const tfl_layer_spec *spec)
{
    tfl_layer *l = tfl_layer_new(ctx, spec);
    if (!l) print_error("tfl_layer_new: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(l);
    return l;
}

static tfl_tensor *weighted_sum(tfl_ctx *ctx, const tfl_tensor *w, const tfl_tensor *y)
{
    return tfl_reduce_sum(ctx, tfl_mul(ctx, w, y), 0, NULL, false);
}

/* y and the gradients of sum(w * y) for x, gamma and beta of both layer norm cases */
static void test_layer_norm_matches_torch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *names[] = {"ln_rank2", "ln_rank3"};
    for (int k = 0; k < 2; k++) {
        const cJSON *c = jget(g_root, "cases");
        c = jget(c, names[k]);
        assert_true(fabs(jnum(c, "epsilon") - 1e-3) == 0);
        int64_t shape[8];
        int rank = json_dims(jget(c, "shape"), shape);
        int64_t f = shape[rank - 1];
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_layer *l = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM});
        assert_int_equal(tfl_layer_build(l, rank, shape), TFL_OK);
        tfl_tensor *vars[2];
        assert_int_equal(tfl_layer_variables(l, TFL_VARS_TRAINABLE, vars, 2), 2);
        OK(ctx, tfl_variable_assign(vars[0], json_f32(ctx, jget(c, "gamma"), 1, &f)));
        OK(ctx, tfl_variable_assign(vars[1], json_f32(ctx, jget(c, "beta"), 1, &f)));
        tfl_tensor *x = json_f32(ctx, jget(c, "x"), rank, shape);
        tfl_tensor *w = json_f32(ctx, jget(c, "w"), rank, shape);
        for (int training = 0; training < 2; training++) { /* the same in both modes */
            tfl_tape *tape = tfl_tape_begin(ctx, 0);
            assert_non_null(tape);
            OK(ctx, tfl_tape_watch(tape, x));
            tfl_tensor *y = tfl_layer_call(l, x, training);
            assert_non_null(y);
            tfl_tensor *loss = weighted_sum(ctx, w, y);
            const tfl_tensor *src[3] = {x, vars[0], vars[1]};
            tfl_tensor *g[3] = {0};
            OK(ctx, tfl_tape_gradient(tape, loss, 3, src, g, 0));
            char what[64];
            snprintf(what, sizeof what, "%s y", names[k]);
            expect_close_f32(y, jget(c, "y"), TOL, what);
            const char *keys[3] = {"x", "gamma", "beta"};
            for (int i = 0; i < 3; i++) {
                snprintf(what, sizeof what, "%s d%s", names[k], keys[i]);
                expect_close_f32(g[i], jget(jget(c, "grads"), keys[i]), TOL, what);
            }
            tfl_tape_free(tape);
        }
        tfl_layer_free(l);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

/* GlobalAveragePooling2D: y and the gradient of sum(w * y) for x */
static void test_global_average_pooling_matches_torch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *c = jget(jget(g_root, "cases"), "gap");
    int64_t shape[8], oshape[8];
    int rank = json_dims(jget(c, "shape"), shape);
    assert_int_equal(rank, 4);
    assert_int_equal(json_dims(jget(c, "out_shape"), oshape), 2);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_layer *l = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_GLOBAL_AVG_POOL2D});
    tfl_tensor *x = json_f32(ctx, jget(c, "x"), rank, shape);
    tfl_tensor *w = json_f32(ctx, jget(c, "w"), 2, oshape);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    OK(ctx, tfl_tape_watch(tape, x));
    tfl_tensor *y = tfl_layer_call(l, x, true);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_rank(y), 2);
    assert_int_equal(tfl_tensor_shape(y)[0], oshape[0]);
    assert_int_equal(tfl_tensor_shape(y)[1], oshape[1]);
    tfl_tensor *g = NULL;
    OK(ctx, tfl_tape_gradient(tape, weighted_sum(ctx, w, y), 1, (const tfl_tensor *[]){x}, &g, 0));
    expect_close_f32(y, jget(c, "y"), TOL, "gap y");
    expect_close_f32(g, jget(jget(c, "grads"), "x"), TOL, "gap dx");
    tfl_tape_free(tape);
    assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(tfl_layer_param_count(l, TFL_VARS_ALL), 0);
    /* a float64 input stays float64 (no weights, no autocast) */
    tfl_tensor *x64 = tfl_cast(ctx, x, TFL_DTYPE_FLOAT64);
    tfl_tensor *y64 = tfl_layer_call(l, x64, false);
    assert_non_null(y64);
    assert_int_equal(tfl_tensor_dtype(y64), TFL_DTYPE_FLOAT64);
    tfl_layer_free(l);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* names, kinds, shapes, variables, options */
static void test_shapes_and_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *ln = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM});
    tfl_layer *ln1 = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM,
                                                      .no_center = true, .epsilon = 0.5});
    tfl_layer *gap = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_GLOBAL_AVG_POOL2D});
    assert_string_equal(tfl_layer_name(ln), "layer_normalization");
    assert_string_equal(tfl_layer_name(ln1), "layer_normalization_1");
    assert_string_equal(tfl_layer_name(gap), "global_average_pooling2d");
    assert_string_equal(tfl_layer_kind_name(TFL_LAYER_LAYER_NORM), "LayerNormalization");
    assert_string_equal(tfl_layer_kind_name(TFL_LAYER_GLOBAL_AVG_POOL2D),
                        "GlobalAveragePooling2D");
    assert_int_equal(tfl_layer_kind_of(gap), TFL_LAYER_GLOBAL_AVG_POOL2D);
    int64_t out[TFL_MAX_RANK];
    assert_int_equal(tfl_layer_output_shape(ln, 3, (int64_t[]){-1, 7, 5}, out), 3);
    assert_true(out[0] == -1 && out[1] == 7 && out[2] == 5);
    assert_int_equal(tfl_layer_output_shape(gap, 4, (int64_t[]){-1, 6, 4, 3}, out), 2);
    assert_true(out[0] == -1 && out[1] == 3);
    assert_int_equal(tfl_layer_output_shape(gap, 4, (int64_t[]){8, -1, -1, 16}, out), 2);
    assert_true(out[0] == 8 && out[1] == 16);

    assert_int_equal(tfl_layer_build(ln, 3, (int64_t[]){-1, 7, 5}), TFL_OK);
    tfl_tensor *v[4];
    assert_int_equal(tfl_layer_variables(ln, TFL_VARS_ALL, v, 4), 2);
    assert_int_equal(tfl_layer_variables(ln, TFL_VARS_NON_TRAINABLE, NULL, 0), 0);
    assert_string_equal(tfl_variable_name(v[0]), "layer_normalization/gamma");
    assert_string_equal(tfl_variable_name(v[1]), "layer_normalization/beta");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tfl_tensor_rank(v[i]), 1);
        assert_int_equal(tfl_tensor_shape(v[i])[0], 5);
        assert_int_equal(tfl_tensor_dtype(v[i]), TFL_DTYPE_FLOAT32);
        assert_true(tfl_variable_trainable(v[i]));
        float got[5];
        assert_int_equal(tfl_tensor_to_host(v[i], got, sizeof got), TFL_OK);
        for (int j = 0; j < 5; j++)
            assert_true(got[j] == (i == 0 ? 1.0f : 0.0f)); /* gamma ones, beta zeros */
    }
    assert_int_equal(tfl_layer_param_count(ln, TFL_VARS_TRAINABLE), 10);

    /* no_center: gamma only; epsilon 0.5 is used: x = (1, 3) has mean 2, variance 1 */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 2, (int64_t[]){1, 2},
                                   (const double[]){1, 3});
    tfl_tensor *y = tfl_layer_call(ln1, x, false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_dtype(y), TFL_DTYPE_FLOAT32); /* autocast */
    assert_int_equal(tfl_layer_variables(ln1, TFL_VARS_ALL, v, 4), 1);
    assert_string_equal(tfl_variable_name(v[0]), "layer_normalization_1/gamma");
    float yv[2];
    assert_int_equal(tfl_tensor_to_host(y, yv, sizeof yv), TFL_OK);
    double want = 1.0 / sqrt(1.5);
    assert_true(fabs(yv[0] + want) < 1e-6 && fabs(yv[1] - want) < 1e-6);

    /* no_scale and no_center: no variables; the default epsilon is 1e-3 */
    tfl_layer *bare = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM,
                                                       .no_center = true, .no_scale = true});
    y = tfl_layer_call(bare, x, true);
    assert_non_null(y);
    assert_int_equal(tfl_layer_variables(bare, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(tfl_tensor_to_host(y, yv, sizeof yv), TFL_OK);
    want = 1.0 / sqrt(1.001);
    assert_true(fabs(yv[0] + want) < 1e-6 && fabs(yv[1] - want) < 1e-6);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(bare);
    tfl_layer_free(ln1);
    tfl_layer_free(gap);
    tfl_layer_free(ln);
}

static void expect_error(tfl_ctx *ctx, tfl_status code, const char *message)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code || strcmp(e.message, message) != 0)
        print_error("got %s: %s\n", tfl_status_name(e.code), e.message);
    assert_int_equal(e.code, code);
    assert_string_equal(e.message, message);
    tfl_ctx_clear_error(ctx);
}

static void test_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_null(tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM,
                                                     .momentum = 0.9}));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "tfl_layer_new: LayerNormalization has no option 'momentum'");
    assert_null(tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_GLOBAL_AVG_POOL2D,
                                                     .epsilon = 1e-3}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "tfl_layer_new: GlobalAveragePooling2D has no "
                                            "option 'epsilon/no_center/no_scale'");

    tfl_layer *gap = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_GLOBAL_AVG_POOL2D});
    tfl_layer *ln = new_layer(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_LAYER_NORM});
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x3 = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){2, 3, 4});
    assert_non_null(x3);
    assert_null(tfl_layer_call(gap, x3, false));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "global_average_pooling2d: GlobalAveragePooling2D expects an input of rank 4 "
                 "(batch, height, width, channels), got shape (2, 3, 4)");
    int64_t out[TFL_MAX_RANK];
    assert_int_equal(tfl_layer_output_shape(gap, 4, (int64_t[]){2, 0, 3, 4}, out), -1);
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "global_average_pooling2d: GlobalAveragePooling2D needs height and width >= 1, "
                 "got shape (2, 0, 3, 4)");
    /* built for 4 features, then called on 5 */
    assert_non_null(tfl_layer_call(ln, x3, true));
    tfl_tensor *x5 = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){2, 5});
    assert_null(tfl_layer_call(ln, x5, true));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "layer_normalization: expected the input's last dimension 4 (the layer was "
                 "built for it), got 5");
    tfl_tensor *x1 = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){4});
    assert_null(tfl_layer_call(ln, x1, true));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "layer_normalization: LayerNormalization expects an input of rank >= 2 "
                 "(batch, ..., features), got shape (4,)");
    tfl_tensor *xi = tfl_zeros(ctx, TFL_DTYPE_INT32, 2, (int64_t[]){2, 4});
    assert_null(tfl_layer_call(ln, xi, true));
    expect_error(ctx, TFL_INVALID_ARGUMENT,
                 "layer_normalization: LayerNormalization expects a floating input, got int32");
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(ln);
    tfl_layer_free(gap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_layer_norm_matches_torch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_global_average_pooling_matches_torch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_shapes_and_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
