/* test_graph.c: graph models (<tapeflow/model.h>'s tfl_model_add_from) and the merges Add,
 * Concatenate and Multiply: a residual block's output and gradients against the same layers
 * called by hand, the merges' values and gradients against their formulas, shapes, the summary's
 * Connected to column, a stack that stays a stack, fit on a graph, and every error (a count the
 * kind does not take, an input of another model, an unused layer, a freed input, shapes and
 * dtypes that do not merge, the input handle given where a layer is expected, concatenated
 * sizes past INT64_MAX). */
#include "test_fixture.h"

#include <math.h>

#define SPEC(...) (&(tfl_layer_spec){__VA_ARGS__})
#define DENSE(u, ...) SPEC(.kind = TFL_LAYER_DENSE, .units = (u), __VA_ARGS__)

static tfl_tensor *f32(tfl_ctx *ctx, int rank, const int64_t *shape, const float *data)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, data);
    assert_non_null(t);
    return t;
}

static void read_f32(const tfl_tensor *t, float *out, int64_t n)
{
    assert_int_equal(tfl_tensor_numel(t), n);
    assert_int_equal(tfl_tensor_to_host(t, out, sizeof(float) * (size_t)n), TFL_OK);
}

/* x (4, 3) with distinct values */
static tfl_tensor *input_x(tfl_ctx *ctx)
{
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)sin(1.0 + i) * 1.5f;
    return f32(ctx, 2, (int64_t[]){4, 3}, v);
}

static tfl_layer *last(tfl_model *m) { return tfl_model_layer(m, tfl_model_num_layers(m) - 1); }

/* A residual block: a = dense(x); b = dense(a); s = add(b, a); y = dense(concat(s, x)). Its
 * output and the gradient of sum(y^2) for every variable equal the same layers called by hand
 * on a tape. */
static void test_residual_matches_hand_calls(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, "res");
    assert_non_null(m);
    tfl_layer *a = tfl_model_add(m, DENSE(5, .activation = TFL_ACT_TANH));
    tfl_layer *b = tfl_model_add(m, DENSE(5, .activation = TFL_ACT_RELU));
    tfl_layer *s = tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 2, (tfl_layer *[]){b, a});
    assert_non_null(s);
    tfl_layer *c = tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_CONCATENATE), 2,
                                      (tfl_layer *[]){s, tfl_model_input(m)});
    assert_non_null(c);
    tfl_layer *y = tfl_model_add(m, DENSE(2));
    assert_non_null(y);
    assert_true(tfl_model_is_graph(m));
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, 3}), TFL_OK);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), (3 * 5 + 5) + (5 * 5 + 5) + (8 * 2 + 2));
    tfl_layer *ins[4];
    assert_int_equal(tfl_model_layer_inputs(m, 3, ins, 4), 2);
    assert_ptr_equal(ins[0], s);
    assert_ptr_equal(ins[1], tfl_model_input(m));
    assert_int_equal(tfl_model_layer_inputs(m, 1, ins, 4), 1);
    assert_ptr_equal(ins[0], a);
    assert_int_equal(tfl_model_layer_inputs(m, 5, ins, 4), -1);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = input_x(ctx);
    tfl_tensor *vars[6];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_TRAINABLE, vars, 6), 6);
    tfl_tensor *g_model[6], *g_hand[6];
    float out_model[8], out_hand[8];
    for (int pass = 0; pass < 2; pass++) {
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tensor *out;
        if (pass == 0) {
            out = tfl_model_call(m, x, true);
        } else {
            tfl_tensor *ya = tfl_layer_call(a, x, true);
            tfl_tensor *yb = tfl_layer_call(b, ya, true);
            tfl_tensor *ys = tfl_add(ctx, yb, ya);
            tfl_tensor *yc = tfl_concat(ctx, 2, (const tfl_tensor *[]){ys, x}, 1);
            out = tfl_layer_call(y, yc, true);
        }
        assert_non_null(out);
        assert_int_equal(tfl_tensor_rank(out), 2);
        assert_int_equal(tfl_tensor_shape(out)[1], 2);
        read_f32(out, pass ? out_hand : out_model, 8);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, out, out), 0, NULL, false);
        assert_int_equal(tfl_tape_gradient(tape, loss, 6, (const tfl_tensor *const *)vars,
                                           pass ? g_hand : g_model, 0),
                         TFL_OK);
        tfl_tape_free(tape);
    }
    for (int i = 0; i < 8; i++) assert_float_equal(out_model[i], out_hand[i], 0);
    for (int v = 0; v < 6; v++) {
        float gm[64], gh[64];
        int64_t n = tfl_tensor_numel(vars[v]);
        assert_true(n <= 64);
        read_f32(g_model[v], gm, n);
        read_f32(g_hand[v], gh, n);
        for (int64_t i = 0; i < n; i++) assert_float_equal(gm[i], gh[i], 0);
    }
    tfl_frame_pop(ctx);

    const char *text = tfl_model_summary(m);
    assert_has(text, "Connected to");
    assert_has(text, "add (Add)");
    assert_has(text, "(None, 8)"); /* the concatenation's shape */
    assert_has(text, "add, input");
    assert_has(text, "Total params: 68");
    tfl_model_free(m);
}

/* Add, Multiply and Concatenate (axis 1 of rank 3): values and gradients of sum(w * out) for
 * each input against their formulas. */
static void test_merge_values_and_gradients(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    float va[12], vb[12], vc[6];
    for (int i = 0; i < 12; i++) {
        va[i] = 0.25f * (float)(i - 5);
        vb[i] = (float)cos(0.7 * i);
    }
    for (int i = 0; i < 6; i++) vc[i] = (float)(i * i) * 0.1f - 1.0f;
    const int64_t s3[3] = {2, 3, 2};
    tfl_tensor *A = f32(ctx, 3, s3, va), *B = f32(ctx, 3, s3, vb);
    tfl_tensor *C = f32(ctx, 3, (int64_t[]){2, 3, 1}, vc);
    tfl_layer *add = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_ADD));
    tfl_layer *mul = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_MULTIPLY));
    tfl_layer *cat = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_CONCATENATE));
    tfl_layer *cat1 = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_CONCATENATE, .axis = 1));
    assert_true(add && mul && cat && cat1);
    assert_string_equal(tfl_layer_name(cat1), "concatenate_1");

    /* add(A, B, A) and mul(A, B, A): three inputs */
    for (int which = 0; which < 2; which++) {
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tape_watch(tape, A);
        tfl_tape_watch(tape, B);
        tfl_tensor *out = tfl_layer_call_n(which ? mul : add, 3,
                                           (const tfl_tensor *[]){A, B, A}, false);
        assert_non_null(out);
        float o[12], ga[12], gb[12];
        read_f32(out, o, 12);
        tfl_tensor *g[2];
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, out, B), 0, NULL, false); /* w = B */
        assert_int_equal(tfl_tape_gradient(tape, loss, 2, (const tfl_tensor *[]){A, B}, g, 0),
                         TFL_OK);
        read_f32(g[0], ga, 12);
        read_f32(g[1], gb, 12);
        for (int i = 0; i < 12; i++) {
            double a = va[i], b = vb[i];
            double want = which ? a * b * a : a + b + a;
            double dA = which ? 2 * a * b * b : 2 * b;       /* d(sum(out*b))/da */
            double dB = which ? 2 * a * a * b : b + (a + b + a); /* out*b: b*1 + out */
            assert_float_equal(o[i], want, 1e-5);
            assert_float_equal(ga[i], dA, 1e-5);
            assert_float_equal(gb[i], dB, 1e-5);
        }
        tfl_tape_free(tape);
    }
    /* concatenate on the last axis: (2,3,2) + (2,3,1) -> (2,3,3); on axis 1: (2,3,2)x2 -> (2,6,2) */
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_watch(tape, A);
    tfl_tape_watch(tape, C);
    tfl_tensor *out = tfl_layer_call_n(cat, 2, (const tfl_tensor *[]){A, C}, false);
    assert_non_null(out);
    assert_int_equal(tfl_tensor_shape(out)[2], 3);
    float o[18];
    read_f32(out, o, 18);
    for (int r = 0; r < 6; r++) {
        assert_float_equal(o[r * 3 + 0], va[r * 2 + 0], 0);
        assert_float_equal(o[r * 3 + 1], va[r * 2 + 1], 0);
        assert_float_equal(o[r * 3 + 2], vc[r], 0);
    }
    float wv[18];
    for (int i = 0; i < 18; i++) wv[i] = (float)i;
    tfl_tensor *w = f32(ctx, 3, (int64_t[]){2, 3, 3}, wv);
    tfl_tensor *g[2];
    assert_int_equal(tfl_tape_gradient(tape, tfl_reduce_sum(ctx, tfl_mul(ctx, out, w), 0, NULL,
                                                            false),
                                       2, (const tfl_tensor *[]){A, C}, g, 0),
                     TFL_OK);
    float ga[12], gc[6];
    read_f32(g[0], ga, 12);
    read_f32(g[1], gc, 6);
    for (int r = 0; r < 6; r++) {
        assert_float_equal(ga[r * 2], wv[r * 3], 0);
        assert_float_equal(ga[r * 2 + 1], wv[r * 3 + 1], 0);
        assert_float_equal(gc[r], wv[r * 3 + 2], 0);
    }
    tfl_tape_free(tape);
    int64_t shp[TFL_MAX_RANK];
    assert_int_equal(tfl_layer_output_shape_n(cat1, 2, (int[]){3, 3},
                                              (const int64_t *[]){(int64_t[]){-1, 3, 2},
                                                                  (int64_t[]){-1, 4, 2}},
                                              shp),
                     3);
    assert_int_equal(shp[0], -1);
    assert_int_equal(shp[1], 7);
    assert_int_equal(shp[2], 2);
    tfl_tensor *o1 = tfl_layer_call_n(cat1, 2, (const tfl_tensor *[]){A, B}, false);
    assert_non_null(o1);
    assert_int_equal(tfl_tensor_shape(o1)[1], 6);
    tfl_frame_pop(ctx);
    tfl_layer_free(add);
    tfl_layer_free(mul);
    tfl_layer_free(cat);
    tfl_layer_free(cat1);
}

/* A model of tfl_model_add calls stays a stack: no Connected to, each layer's input is the
 * previous one, and it gives what chained layer calls give. */
static void test_stack_stays_a_stack(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, NULL);
    tfl_layer *a = tfl_model_add(m, DENSE(4, .activation = TFL_ACT_RELU));
    tfl_layer *b = tfl_model_add(m, DENSE(2));
    assert_false(tfl_model_is_graph(m));
    tfl_layer *ins[2];
    assert_int_equal(tfl_model_layer_inputs(m, 0, ins, 2), 1);
    assert_ptr_equal(ins[0], tfl_model_input(m));
    assert_int_equal(tfl_model_layer_inputs(m, 1, ins, 2), 1);
    assert_ptr_equal(ins[0], a);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = input_x(ctx);
    float got[8], want[8];
    read_f32(tfl_model_call(m, x, false), got, 8);
    read_f32(tfl_layer_call(b, tfl_layer_call(a, x, false), false), want, 8);
    for (int i = 0; i < 8; i++) assert_float_equal(got[i], want[i], 0);
    tfl_frame_pop(ctx);
    const char *text = tfl_model_summary(m);
    assert_null(strstr(text, "Connected to"));
    tfl_model_free(m);
}

/* fit trains a residual graph: the loss falls, and the variables are the layers' as named. */
static void test_fit_on_a_graph(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { N = 64 };
    float xs[N * 3], ys[N];
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 3; j++) xs[i * 3 + j] = (float)sin(0.37 * i + j);
        ys[i] = xs[i * 3] * xs[i * 3 + 1] + 0.5f * xs[i * 3 + 2];
    }
    tfl_tensor *tx = f32(ctx, 2, (int64_t[]){N, 3}, xs), *ty = f32(ctx, 2, (int64_t[]){N, 1}, ys);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    assert_non_null(ds);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    tfl_model *m = tfl_model_new(ctx, "g");
    tfl_layer *h = tfl_model_add(m, DENSE(16, .activation = TFL_ACT_TANH, .name = "h"));
    tfl_model_add(m, DENSE(16, .activation = TFL_ACT_TANH, .name = "h2"));
    tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD, .name = "sum"), 2,
                       (tfl_layer *[]){last(m), h});
    tfl_model_add(m, DENSE(1, .name = "out"));
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 0.01;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_MEAN_SQUARED_ERROR, 0), TFL_OK);
    tfl_epoch_logs logs[30];
    tfl_history hist = {logs, 30, 0};
    tfl_fit_opts fo = {.epochs = 30, .batch_size = 16, .shuffle = true, .seed = 3};
    assert_int_equal(tfl_model_fit(m, ds, &fo, &hist), TFL_OK);
    assert_int_equal(hist.count, 30);
    assert_true(logs[29].loss < 0.5 * logs[0].loss);
    tfl_tensor *v[6];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v, 6), 6);
    assert_string_equal(tfl_variable_name(v[2]), "h2/kernel");
    assert_string_equal(tfl_variable_name(v[4]), "out/kernel");
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
}

/* A graph of more than 64 layers (the forward pass keeps its outputs on the heap then): 70
 * identity activations, then add(last, input) = 2x. */
static void test_long_graph(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, "long");
    for (int i = 0; i < 70; i++)
        assert_non_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_ACTIVATION)));
    assert_non_null(tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 2,
                                       (tfl_layer *[]){last(m), tfl_model_input(m)}));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = input_x(ctx);
    float got[12], want[12];
    read_f32(tfl_model_call(m, x, false), got, 12);
    read_f32(x, want, 12);
    for (int i = 0; i < 12; i++) assert_float_equal(got[i], 2 * want[i], 0);
    tfl_frame_pop(ctx);
    tfl_model_free(m);
}

static void test_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, "m"), *other = tfl_model_new(ctx, "other");
    tfl_layer *a = tfl_model_add(m, DENSE(4));
    tfl_layer *o = tfl_model_add(other, DENSE(4));
    /* a merge needs 2 or more inputs; other kinds exactly one */
    assert_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_ADD)));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "(Add) takes 2 or more inputs, got 1 (add it "
                                                 "with tfl_model_add_from)");
    assert_null(tfl_model_add_from(m, DENSE(2), 2, (tfl_layer *[]){a, a}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "(Dense) takes one input, got 2");
    assert_null(tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 2, (tfl_layer *[]){a, o}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "m: inputs[1] is not a layer of this model");
    assert_null(tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 2,
                                   (tfl_layer *[]){a, tfl_model_input(other)}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "inputs[1] is not a layer of this model");
    assert_null(tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 2, (tfl_layer *[]){a, NULL}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "m: inputs[1] is NULL");
    assert_null(tfl_model_add_from(m, SPEC(.kind = TFL_LAYER_ADD), 33, (tfl_layer *[33]){a}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "0 to 32 inputs, got 33");
    assert_int_equal(tfl_model_num_layers(m), 1); /* nothing was added */
    /* the input handle is not a layer */
    assert_null(tfl_layer_name(tfl_model_input(m)));
    expect_kept_error(ctx, TFL_MISUSE, "not a layer handle");
    /* a merge called as a one-input layer */
    tfl_layer *lone = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_MULTIPLY));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = input_x(ctx);
    assert_null(tfl_layer_call(lone, x, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "multiply: Multiply merges 2 or more inputs: "
                                                 "call it with tfl_layer_call_n");
    /* shapes and dtypes that do not merge */
    float v[8] = {0};
    tfl_tensor *x2 = f32(ctx, 2, (int64_t[]){4, 2}, v);
    assert_null(tfl_layer_call_n(lone, 2, (const tfl_tensor *[]){x, x2}, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "Multiply needs inputs of one shape: input 1 has shape (4, 2), input 0 (4, 3)");
    tfl_tensor *xd = tfl_cast(ctx, x, TFL_DTYPE_FLOAT64);
    assert_null(tfl_layer_call_n(lone, 2, (const tfl_tensor *[]){x, xd}, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "input 1 is float64, input 0 float32");
    tfl_layer *cat = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_CONCATENATE, .axis = 2));
    assert_null(tfl_layer_call_n(cat, 2, (const tfl_tensor *[]){x, x}, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Concatenate's axis 2 is not an axis of its inputs");
    /* sizes along the axis that add up past INT64_MAX (the sum overflowed) */
    tfl_layer *cat_last = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_CONCATENATE, .axis = -1));
    const int64_t half[2] = {-1, INT64_MAX / 2 + 1}, one[2] = {-1, 1};
    int64_t out[2];
    assert_int_equal(tfl_layer_output_shape_n(cat_last, 3, (const int[]){2, 2, 2},
                                              (const int64_t *const[]){one, half, half}, out),
                     -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "concatenate_1: Concatenate's sizes along axis -1 add up to more than "
                      "INT64_MAX (at input 2, of shape (-1, 4611686018427387904))");
    assert_int_equal(tfl_layer_output_shape_n(cat_last, 2, (const int[]){2, 2},
                                              (const int64_t *const[]){half, half}, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "add up to more than INT64_MAX (at input 1");
    assert_int_equal(tfl_layer_output_shape_n(cat_last, 2, (const int[]){2, 2},
                                              (const int64_t *const[]){one, half}, out), 2);
    assert_int_equal(out[1], INT64_MAX / 2 + 2);
    tfl_layer_free(cat_last);
    assert_null(tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_ADD, .axis = 1)));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Add has no option 'axis'");
    /* an unused layer: a and its sibling both branch from the input, only one goes on */
    tfl_model *g = tfl_model_new(ctx, "g");
    tfl_model_add(g, DENSE(3, .name = "branch"));
    tfl_model_add_from(g, DENSE(3, .name = "main"), 1, (tfl_layer *[]){tfl_model_input(g)});
    assert_int_equal(tfl_model_build(g, 2, (int64_t[]){-1, 3}), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "g: the output of layer 'branch' is never used");
    assert_null(tfl_model_call(g, x, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "'branch' is never used");
    /* a shape error names the layer: add(main, input) with 3 and 3 features merges; (dense 2) not */
    tfl_model_add_from(g, SPEC(.kind = TFL_LAYER_ADD, .name = "join"), 2,
                       (tfl_layer *[]){tfl_model_layer(g, 0), tfl_model_layer(g, 1)});
    tfl_model_add_from(g, DENSE(2, .name = "narrow"), 1, (tfl_layer *[]){tfl_model_input(g)});
    tfl_model_add_from(g, SPEC(.kind = TFL_LAYER_ADD, .name = "bad"), 2,
                       (tfl_layer *[]){tfl_model_layer(g, 2), tfl_model_layer(g, 3)});
    assert_int_equal(tfl_model_build(g, 2, (int64_t[]){-1, 3}), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "bad: Add needs inputs of one shape: input 1 has "
                                                 "shape (-1, 2), input 0 (-1, 3)");
    /* a freed input */
    tfl_layer_free(tfl_model_layer(g, 3));
    assert_int_equal(tfl_model_build(g, 2, (int64_t[]){-1, 3}), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "input 1 of layer 'bad' was freed");
    tfl_layer *gone[2];
    assert_int_equal(tfl_model_layer_inputs(g, 3, gone, 2), 2);
    assert_null(gone[1]);
    tfl_frame_pop(ctx);
    tfl_layer_free(lone);
    tfl_layer_free(cat);
    tfl_model_free(g);
    tfl_model_free(m);
    tfl_model_free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_residual_matches_hand_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_values_and_gradients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_stays_a_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit_on_a_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
