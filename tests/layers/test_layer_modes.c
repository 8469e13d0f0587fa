/* test_layer_modes.c: the layers whose output depends on training vs inference (Dropout,
 * BatchNormalization: values, moving statistics, gradients) and the layers built on the
 * convolution and pooling ops (Conv2D, MaxPool2D, AvgPool2D: the same values as the ops,
 * bias and activation added; a small CNN trains). */
#include "test_fixture.h"

#include <math.h>

static double at(const tfl_tensor *t, int64_t i)
{
    double v = NAN;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

static tfl_tensor *ramp(tfl_ctx *ctx, int rank, const int64_t *shape, double scale)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (float)(scale * sin(0.7 * (double)i + 0.3));
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, v);
    free(v);
    return t;
}

static void dropout_only_in_training(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *d = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_DROPOUT, .rate = 0.5,
                                                        .seed = 42});
    assert_non_null(d);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){64, 64});
    tfl_tensor *inf = tfl_layer_call(d, x, false);
    for (int64_t i = 0; i < 4096; i++) assert_true(at(inf, i) == 1.0); /* identity */
    tfl_tensor *a = tfl_layer_call(d, x, true), *b = tfl_layer_call(d, x, true);
    int64_t kept = 0, differ = 0;
    for (int64_t i = 0; i < 4096; i++) {
        double va = at(a, i), vb = at(b, i);
        assert_true(va == 0.0 || va == 2.0); /* kept values scaled by 1 / (1 - rate) */
        kept += va != 0;
        differ += va != vb;
    }
    assert_true(kept > 2048 - 200 && kept < 2048 + 200); /* ~half, 6 sigma */
    assert_true(differ > 1000);                          /* a new mask per call */
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    /* the same seed in a new layer repeats the first mask */
    tfl_layer *d2 = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_DROPOUT, .rate = 0.5,
                                                         .seed = 42});
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){64, 64});
    a = tfl_layer_call(d, x, true); /* d's third call */
    tfl_tensor *first = tfl_layer_call(d2, x, true);
    tfl_layer_free(d);
    d = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_DROPOUT, .rate = 0.5, .seed = 42});
    tfl_tensor *again = tfl_layer_call(d, x, true);
    for (int64_t i = 0; i < 4096; i++) assert_true(at(first, i) == at(again, i));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(d);
    tfl_layer_free(d2);
}

/* Training: per-channel batch moments, moving = 0.9 moving + 0.1 batch; inference: the
 * moving statistics. */
static void batch_norm_modes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *bn = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_BATCH_NORM,
                                                         .momentum = 0.9, .epsilon = 1e-3});
    assert_non_null(bn);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const int64_t N = 6, C = 3;
    tfl_tensor *x = ramp(ctx, 2, (int64_t[]){N, C}, 2.0);
    double mean[3] = {0}, var[3] = {0};
    for (int c = 0; c < C; c++) {
        for (int i = 0; i < N; i++) mean[c] += at(x, i * C + c) / N;
        for (int i = 0; i < N; i++) var[c] += pow(at(x, i * C + c) - mean[c], 2) / N;
    }
    tfl_tensor *y = tfl_layer_call(bn, x, true);
    assert_non_null(y);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            double want = (at(x, i * C + c) - mean[c]) / sqrt(var[c] + 1e-3);
            assert_true(fabs(at(y, i * C + c) - want) < 1e-5);
        }
    tfl_tensor *vars[4];
    assert_int_equal(tfl_layer_variables(bn, TFL_VARS_ALL, vars, 4), 4);
    for (int c = 0; c < C; c++) {
        assert_true(fabs(at(vars[2], c) - 0.1 * mean[c]) < 1e-6);            /* moving_mean */
        assert_true(fabs(at(vars[3], c) - (0.9 + 0.1 * var[c])) < 1e-6);     /* moving_variance */
    }
    /* inference uses the moving statistics and leaves them alone */
    tfl_tensor *z = tfl_layer_call(bn, x, false);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            double mm = at(vars[2], c), mv = at(vars[3], c);
            double want = (at(x, i * C + c) - mm) / sqrt(mv + 1e-3);
            assert_true(fabs(at(z, i * C + c) - want) < 1e-5);
        }
    assert_true(fabs(at(vars[2], 0) - 0.1 * mean[0]) < 1e-6);
    /* gamma and beta get gradients; the moving statistics are not trainable */
    assert_int_equal(tfl_layer_variables(bn, TFL_VARS_TRAINABLE, NULL, 0), 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tensor *w = ramp(ctx, 2, (int64_t[]){N, C}, 1.0);
    tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, tfl_layer_call(bn, x, true), w), 0, NULL,
                                      false);
    tfl_tensor *g[2];
    assert_int_equal(tfl_tape_gradient(tape, loss, 2, (const tfl_tensor *const *)vars, g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    /* d/dbeta = sum over the batch of w; d/dgamma = sum of w * xhat */
    for (int c = 0; c < C; c++) {
        double db = 0, dg = 0;
        for (int i = 0; i < N; i++) {
            db += at(w, i * C + c);
            dg += at(w, i * C + c) * (at(x, i * C + c) - mean[c]) / sqrt(var[c] + 1e-3);
        }
        assert_true(fabs(at(g[1], c) - db) < 1e-5);
        assert_true(fabs(at(g[0], c) - dg) < 1e-4);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(bn);
}

/* Conv2D = conv2d op + bias, then relu; pools = the ops. */
static void conv_and_pool_layers_match_the_ops(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = ramp(ctx, 4, (int64_t[]){2, 7, 6, 3}, 1.0);
    tfl_tensor *k = ramp(ctx, 4, (int64_t[]){3, 3, 3, 4}, 0.5);
    tfl_tensor *b = ramp(ctx, 1, (int64_t[]){4}, 0.2);
    tfl_initializer ki = tfl_init_tensor(k), bi = tfl_init_tensor(b);
    tfl_layer *conv = tfl_layer_new(ctx, &(tfl_layer_spec){
        .kind = TFL_LAYER_CONV2D, .units = 4, .kernel_size = {3, 3}, .strides = {2, 1},
        .padding = TFL_PADDING_SAME, .activation = TFL_ACT_RELU, .kernel_init = &ki,
        .bias_init = &bi});
    tfl_tensor *y = tfl_layer_call(conv, x, false);
    assert_non_null(y);
    tfl_conv2d_opts co = {{2, 1}, {1, 1}, TFL_PADDING_SAME};
    tfl_tensor *want = tfl_relu(ctx, tfl_add(ctx, tfl_conv2d(ctx, x, k, &co), b));
    assert_int_equal(tfl_tensor_rank(y), 4);
    assert_memory_equal(tfl_tensor_shape(y), ((int64_t[]){2, 4, 6, 4}), 4 * sizeof(int64_t));
    for (int64_t i = 0; i < tfl_tensor_numel(y); i++) assert_true(at(y, i) == at(want, i));

    tfl_layer *mp = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
    tfl_layer *ap = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_AVG_POOL2D,
                                                         .kernel_size = {3, 2}, .strides = {1, 2}});
    tfl_tensor *m = tfl_layer_call(mp, x, false), *a = tfl_layer_call(ap, x, false);
    tfl_tensor *mw = tfl_max_pool2d(ctx, x, &(tfl_pool2d_opts){{2, 2}, {2, 2}, TFL_PADDING_VALID});
    tfl_tensor *aw = tfl_avg_pool2d(ctx, x, &(tfl_pool2d_opts){{3, 2}, {1, 2}, TFL_PADDING_VALID});
    assert_memory_equal(tfl_tensor_shape(m), ((int64_t[]){2, 3, 3, 3}), 4 * sizeof(int64_t));
    assert_memory_equal(tfl_tensor_shape(a), ((int64_t[]){2, 5, 3, 3}), 4 * sizeof(int64_t));
    for (int64_t i = 0; i < tfl_tensor_numel(m); i++) assert_true(at(m, i) == at(mw, i));
    for (int64_t i = 0; i < tfl_tensor_numel(a); i++) assert_true(at(a, i) == at(aw, i));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(conv);
    tfl_layer_free(mp);
    tfl_layer_free(ap);
}

/* A tiny CNN (conv, pool, batch norm, dropout, dense) learns to tell a bright top half from a
 * bright bottom half. */
static void small_cnn_learns(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { N = 64, H = 8 };
    static float xs[N][H][H];
    static int32_t ys[N];
    for (int i = 0; i < N; i++) {
        ys[i] = i % 2;
        for (int r = 0; r < H; r++)
            for (int c = 0; c < H; c++)
                xs[i][r][c] = (float)(((r < H / 2) == (ys[i] == 0) ? 0.8 : 0.1) +
                                      0.1 * sin(i * 3.1 + r * 1.7 + c));
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){N, H, H}, xs);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){N}, ys);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    tfl_model *m = tfl_model_new(ctx, "tiny_cnn");
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_RESHAPE, .target_rank = 3,
                                       .target_shape = {H, H, 1}});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = 4,
                                       .kernel_size = {3, 3}, .activation = TFL_ACT_RELU});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_BATCH_NORM});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DROPOUT, .rate = 0.2, .seed = 5});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2});
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.02;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY), TFL_OK);
    tfl_epoch_logs logs[30];
    tfl_history h = {logs, 30, 0};
    assert_int_equal(tfl_model_fit(m, ds, &(tfl_fit_opts){.epochs = 30, .batch_size = 16,
                                                          .shuffle = true, .seed = 1},
                                   &h),
                     TFL_OK);
    assert_true(logs[29].loss < 0.1 && logs[29].loss < logs[0].loss);
    double acc;
    assert_int_equal(tfl_model_evaluate(m, ds, 64, NULL, &acc), TFL_OK);
    assert_true(acc == 1.0);
    /* 4 conv kernel+bias, 2 bn trainable + 2 moving, 2 dense */
    assert_int_equal(tfl_model_variables(m, TFL_VARS_TRAINABLE, NULL, 0), 6);
    assert_int_equal(tfl_model_variables(m, TFL_VARS_NON_TRAINABLE, NULL, 0), 2);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(dropout_only_in_training, setup, teardown),
        cmocka_unit_test_setup_teardown(batch_norm_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_and_pool_layers_match_the_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(small_cnn_learns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
