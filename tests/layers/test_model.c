/* test_model.c: the sequential model of <tapeflow/model.h>: names, adding layers (ownership,
 * contexts), build and the summary text, variable lists and counts, call against chained
 * layer calls, compile's errors, the four losses per example against hand-computed values
 * with their shape errors, evaluate and predict on small in-memory datasets, and models and
 * layers freed with their context (every allocation through the context's hooks returned). */
#include "test_fixture.h"

#include <math.h>

#define F(...) ((const float[]){__VA_ARGS__})
/* a shape and its rank, as two arguments */
#define NDIM(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define I64(...) (const int64_t[]){__VA_ARGS__}, NDIM(__VA_ARGS__)
/* rank, shape (tfl_model_build's order) */
#define RS(...) NDIM(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}
#define SPEC(...) (&(tfl_layer_spec){__VA_ARGS__})
#define SPARSE TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
#define CAT TFL_LOSS_CATEGORICAL_CROSSENTROPY
#define BIN TFL_LOSS_BINARY_CROSSENTROPY
#define MSE TFL_LOSS_MEAN_SQUARED_ERROR
#define ACC TFL_METRIC_ACCURACY
#define LOSS(kind, pred, labels) tfl_loss_per_example(ctx, (kind), (pred), (labels))
#define BUILT3(got)                                                                            \
    "dense: expected the input's last dimension 3 (the layer was built for it), got " #got

static tfl_tensor *f32(tfl_ctx *ctx, const float *data, const int64_t *shape, int rank)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, data);
    assert_non_null(t);
    return t;
}

static tfl_tensor *i32(tfl_ctx *ctx, const int32_t *data, const int64_t *shape, int rank)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_INT32, rank, shape, data);
    assert_non_null(t);
    return t;
}

static tfl_model *new_model(tfl_ctx *ctx, const char *name)
{
    tfl_model *m = tfl_model_new(ctx, name);
    if (!m) print_error("tfl_model_new: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(m);
    return m;
}

static tfl_layer *add(tfl_model *m, const tfl_layer_spec *spec)
{
    tfl_layer *l = tfl_model_add(m, spec);
    if (!l) print_error("tfl_model_add failed\n");
    assert_non_null(l);
    return l;
}

/* the same, against doubles */
static void expect_near(const tfl_tensor *t, const double *want, int64_t n, double tol)
{
    float w[16];
    assert_true(n <= 16);
    for (int64_t i = 0; i < n; i++) w[i] = (float)want[i];
    expect_f32(t, w, n, tol);
}

static void expect_shape_of(const tfl_tensor *t, const int64_t *shape, int rank)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_rank(t), rank);
    for (int d = 0; d < rank; d++) assert_int_equal(tfl_tensor_dim(t, d), shape[d]);
}

static void expect_same_values(const tfl_tensor *a, const tfl_tensor *b)
{
    assert_int_equal(tfl_tensor_numel(a), tfl_tensor_numel(b));
    size_t na, nb;
    void *pa = host_bytes(a, &na), *pb = host_bytes(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na);
    free(pa);
    free(pb);
}

/* log(sum(exp(v))) */
static double lse(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(v[i]);
    return log(s);
}

/* sigmoid cross-entropy of logit x and label z */
static double bce(double x, double z) { return fmax(x, 0) - x * z + log1p(exp(-fabs(x))); }

/* ---- names, layers ------------------------------------------------------------------------ */

static void test_model_names(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *a = new_model(ctx, NULL), *b = new_model(ctx, NULL), *mlp = new_model(ctx, "mlp");
    assert_string_equal(tfl_model_name(a), "sequential");
    assert_string_equal(tfl_model_name(b), "sequential_1");
    assert_string_equal(tfl_model_name(mlp), "mlp");
    assert_null(tfl_model_new(ctx, "mlp"));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "tfl_model_new: the name 'mlp' is taken by another model of this context");
    assert_null(tfl_model_new(ctx, "sequential_1"));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the name 'sequential_1' is taken");
    assert_null(tfl_model_new(ctx, "a/b"));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "tfl_model_new: 'a/b' is not a valid name (non-empty, under 128 bytes, "
                      "without '/' or ':')");
    assert_null(tfl_model_new(ctx, ""));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_new: '' is not a valid name");
    assert_null(tfl_model_new(NULL, "x"));
    /* the predicates: a live model's name is taken; freed, it is not; layers apart */
    assert_true(tfl_model_name_taken(ctx, "mlp"));
    assert_true(tfl_model_name_taken(ctx, "sequential"));
    assert_false(tfl_model_name_taken(ctx, "nobody"));
    assert_false(tfl_layer_name_taken(ctx, "mlp"));
    assert_false(tfl_model_name_taken(NULL, "mlp"));
    assert_false(tfl_model_name_taken(ctx, NULL));
    tfl_model_free(a);
    assert_false(tfl_model_name_taken(ctx, "sequential"));
    tfl_layer *l = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN, .name = "fl"});
    assert_non_null(l);
    assert_true(tfl_layer_name_taken(ctx, "fl"));
    assert_false(tfl_model_name_taken(ctx, "fl"));
    tfl_layer_free(l);
    assert_false(tfl_layer_name_taken(ctx, "fl"));
    assert_false(tfl_layer_name_taken(NULL, "fl"));
    assert_false(tfl_layer_name_taken(ctx, NULL));
    tfl_model *c = new_model(ctx, NULL);
    assert_string_equal(tfl_model_name(c), "sequential");
    tfl_model *d = new_model(ctx, NULL);
    assert_string_equal(tfl_model_name(d), "sequential_2");
    assert_null(tfl_model_name(NULL));
    assert_int_equal(tfl_model_num_layers(NULL), 0);
    assert_null(tfl_model_layer(NULL, 0));
    tfl_model_free(NULL);
    tfl_model_free(b);
    tfl_model_free(mlp);
    tfl_model_free(c);
    tfl_model_free(d);
}

static void test_model_add(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, "mlp"), *other = new_model(ctx, "other");
    tfl_layer *d0 = add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 4));
    tfl_layer *d1 = add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2, .name = "out"));
    assert_int_equal(tfl_model_num_layers(m), 2);
    assert_ptr_equal(tfl_model_layer(m, 0), d0);
    assert_ptr_equal(tfl_model_layer(m, 1), d1);
    assert_null(tfl_model_layer(m, 2));
    assert_null(tfl_model_layer(m, -1));
    assert_string_equal(tfl_layer_name(d0), "dense");
    /* a bad spec: NULL, the error kept, the model unchanged */
    assert_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE)));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_layer_new: Dense needs units >= 1, got 0");
    assert_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_FLATTEN, .name = "out")));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the name 'out' is taken by another layer");
    assert_int_equal(tfl_model_num_layers(m), 2);
    assert_null(tfl_model_add(NULL, SPEC(.kind = TFL_LAYER_FLATTEN)));
    /* a layer belongs to one model */
    tfl_layer *own = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_FLATTEN, .name = "flat"));
    assert_non_null(own);
    assert_int_equal(tfl_model_add_layer(other, own), TFL_OK);
    assert_int_equal(tfl_model_add_layer(m, own), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "mlp: layer 'flat' already belongs to model 'other'");
    assert_int_equal(tfl_model_add_layer(m, d0), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "mlp: layer 'dense' already belongs to model 'mlp'");
    assert_int_equal(tfl_model_num_layers(m), 2);
    assert_int_equal(tfl_model_num_layers(other), 1);
    /* a layer of another context */
    tfl_ctx *ctx2 = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx2);
    tfl_layer *foreign = tfl_layer_new(ctx2, SPEC(.kind = TFL_LAYER_DENSE, .units = 1));
    assert_non_null(foreign);
    assert_int_equal(tfl_model_add_layer(m, foreign), TFL_MISUSE); /* base.h's cross-ctx rule */
    expect_kept_error(ctx, TFL_MISUSE, "mlp: layer 'dense' belongs to another context");
    assert_int_equal(tfl_ctx_status(ctx2), TFL_OK);
    tfl_ctx_free(ctx2); /* frees `foreign` */
    /* NULL: an error of its own, or the kept one */
    assert_int_equal(tfl_model_add_layer(m, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: the layer is NULL");
    assert_int_equal(tfl_frame_pop(ctx), TFL_MISUSE); /* no frame: an error to keep */
    assert_int_equal(tfl_model_add_layer(m, tfl_layer_new(ctx, NULL)), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, NULL);
    assert_int_equal(tfl_model_add_layer(NULL, own), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(tfl_model_num_layers(m), 2);
    /* freeing a model's layer takes it out of the model */
    tfl_layer_free(d0);
    assert_int_equal(tfl_model_num_layers(m), 1);
    assert_ptr_equal(tfl_model_layer(m, 0), d1);
    /* the model frees its layers: their names are free again */
    uint64_t live = live_tensors(ctx);
    assert_int_equal(tfl_model_build(m, RS(-1, 3)), TFL_OK);
    assert_int_equal(live_tensors(ctx), live + 2);
    tfl_model_free(m);
    assert_int_equal(live_tensors(ctx), live);
    tfl_layer *again = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_FLATTEN, .name = "out"));
    assert_non_null(again);
    tfl_layer_free(again);
    tfl_model_free(other);
    again = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_FLATTEN, .name = "flat"));
    assert_non_null(again);
    tfl_layer_free(again);
}

/* ---- build, summary, variables -------------------------------------------------------------- */

/* the summary's rule: 73 box-drawing characters */
static const char *rule(void)
{
    static char r[73 * 3 + 1];
    for (int i = 0; i < 73; i++) memcpy(r + 3 * i, "\xe2\x94\x80", 3);
    return r;
}

static void expect_summary(tfl_model *m, const char *const *rows, int n_rows, const char *totals)
{
    char want[4096];
    const char *r = rule();
    int n = snprintf(want, sizeof want,
                     "Model: \"%s\"\n%s\nLayer (type)                             Output Shape    "
                     "          Param #\n%s\n", tfl_model_name(m), r, r);
    for (int i = 0; i < n_rows; i++)
        n += snprintf(want + n, sizeof want - (size_t)n, "%s\n", rows[i]);
    snprintf(want + n, sizeof want - (size_t)n, "%s\n%s%s\n", r, totals, r);
    const char *got = tfl_model_summary(m);
    assert_non_null(got);
    assert_string_equal(got, want);
}

static void test_build_and_summary(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, "mlp");
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 4, .activation = TFL_ACT_RELU));
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2));
    const char *unbuilt[] = {
        "dense (Dense)                            ?                               0",
        "dense_1 (Dense)                          ?                               0",
    };
    expect_summary(m, unbuilt, 2, " Total params: 0 (0.00 KB)\n Trainable params: 0\n"
                                  " Non-trainable params: 0\n");
    assert_int_equal(tfl_model_build(m, RS(-1, 3)), TFL_OK);
    const char *built[] = {
        "dense (Dense)                            (None, 4)                      16",
        "dense_1 (Dense)                          (None, 2)                      10",
    };
    const char *totals =
        " Total params: 26 (0.10 KB)\n Trainable params: 26\n Non-trainable params: 0\n";
    expect_summary(m, built, 2, totals);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 26);
    /* build again with another batch: the same variables, the same table */
    tfl_tensor *v0[4], *v1[4];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v0, 4), 4);
    assert_int_equal(tfl_model_build(m, RS(8, 3)), TFL_OK);
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v1, 4), 4);
    assert_memory_equal(v0, v1, sizeof v0);
    expect_summary(m, built, 2, totals);
    /* a mismatching build names the layer */
    assert_int_equal(tfl_model_build(m, RS(-1, 5)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, BUILT3(5));
    expect_summary(m, built, 2, totals); /* the failed build left the shapes as they were */
    assert_int_equal(tfl_model_build(m, 0, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: build needs an input shape of rank 1..8 "
                      "with the batch axis first, got rank 0");
    assert_int_equal(tfl_model_build(NULL, RS(1, 3)), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_model_free(m);

    /* a call sets the shapes too, shown with a None batch; non-trainable parameters */
    tfl_model *cnn = new_model(ctx, NULL);
    add(cnn, SPEC(.kind = TFL_LAYER_FLATTEN));
    add(cnn, SPEC(.kind = TFL_LAYER_DENSE, .units = 4));
    add(cnn, SPEC(.kind = TFL_LAYER_BATCH_NORM));
    add(cnn, SPEC(.kind = TFL_LAYER_DENSE, .units = 2, .name = "logits"));
    assert_int_equal(tfl_model_build(cnn, RS(-1, 2, 3)), TFL_OK);
    const char *rows[] = {
        "flatten (Flatten)                        (None, 6)                       0",
        "dense (Dense)                            (None, 4)                      28",
        "batch_normalization (BatchNormalization) (None, 4)                      16",
        "logits (Dense)                           (None, 2)                      10",
    };
    expect_summary(cnn, rows, 4, " Total params: 54 (0.21 KB)\n Trainable params: 46\n"
                                 " Non-trainable params: 8\n");
    tfl_model_free(cnn);

    tfl_model *called = new_model(ctx, NULL);
    add(called, SPEC(.kind = TFL_LAYER_DENSE, .units = 3, .activation = TFL_ACT_TANH));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = f32(ctx, F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), I64(5, 2));
    assert_non_null(tfl_model_call(called, x, false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    const char *one[] = {
        "dense (Dense)                            (None, 3)                       9"};
    expect_summary(called, one, 1, " Total params: 9 (0.04 KB)\n Trainable params: 9\n"
                                   " Non-trainable params: 0\n");
    tfl_model_free(called);
}

static void test_model_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, NULL);
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 4));
    add(m, SPEC(.kind = TFL_LAYER_BATCH_NORM));
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2, .no_bias = true));
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 0);
    assert_int_equal(tfl_model_build(m, RS(-1, 3)), TFL_OK);
    const char *all[] = {"dense/kernel", "dense/bias", "batch_normalization/gamma",
                         "batch_normalization/beta", "batch_normalization/moving_mean",
                         "batch_normalization/moving_variance", "dense_1/kernel"};
    tfl_tensor *v[8] = {NULL};
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v, 8), 7);
    for (int i = 0; i < 7; i++) assert_string_equal(tfl_variable_name(v[i]), all[i]);
    assert_int_equal(tfl_tensor_dim(v[6], 0), 4);
    assert_int_equal(tfl_tensor_dim(v[6], 1), 2);
    tfl_tensor *t[8] = {NULL};
    assert_int_equal(tfl_model_variables(m, TFL_VARS_TRAINABLE, t, 8), 5);
    const int tr[] = {0, 1, 2, 3, 6};
    for (int i = 0; i < 5; i++) assert_ptr_equal(t[i], v[tr[i]]);
    assert_int_equal(tfl_model_variables(m, TFL_VARS_NON_TRAINABLE, t, 8), 2);
    assert_ptr_equal(t[0], v[4]);
    assert_ptr_equal(t[1], v[5]);
    /* cap below the count: the count, the first cap written, nothing beyond */
    tfl_tensor *few[4] = {NULL, NULL, NULL, NULL};
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, few, 3), 7);
    assert_memory_equal(few, v, 3 * sizeof *few);
    assert_null(few[3]);
    assert_int_equal(tfl_model_variables(m, TFL_VARS_TRAINABLE, NULL, 0), 5);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 12 + 4 + 16 + 8);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_TRAINABLE), 12 + 4 + 8 + 8);
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_NON_TRAINABLE), 8);
    assert_int_equal(tfl_model_variables(NULL, TFL_VARS_ALL, v, 8), 0);
    assert_int_equal(tfl_model_param_count(NULL, TFL_VARS_ALL), 0);
    tfl_model_free(m);
}

/* ---- call ------------------------------------------------------------------------------------ */

static void test_model_call(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_model *m = new_model(ctx, "mlp");
    assert_null(tfl_model_call(m, f32(ctx, F(1, 2, 3), I64(1, 3)), false));
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "mlp: the model has no layers");
    tfl_layer *a = add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 4, .activation = TFL_ACT_RELU));
    tfl_layer *b = add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 3, .activation = TFL_ACT_SOFTMAX));
    tfl_layer *c = add(m, SPEC(.kind = TFL_LAYER_ACTIVATION, .activation = TFL_ACT_TANH));
    tfl_tensor *x = f32(ctx, F(0.5f, -1, 2, 3, 0, -2, 1, 1, 1, -0.25f, 4, 0), I64(4, 3));
    uint64_t live = live_tensors(ctx);
    tfl_tensor *y = tfl_model_call(m, x, true);
    expect_shape_of(y, I64(4, 3));
    /* the call leaves its result and the four variables it made, no temporaries */
    assert_int_equal(live_tensors(ctx), live + 5);
    tfl_tensor *chained = tfl_layer_call(a, x, true);
    chained = tfl_layer_call(c, tfl_layer_call(b, chained, true), true);
    expect_shape_of(chained, I64(4, 3));
    expect_same_values(y, chained);
    expect_same_values(tfl_model_call(m, x, false), chained);
    /* tanh of a softmax: each row's values are in (0, tanh(1)) */
    float *p = host_bytes(y, NULL);
    for (int i = 0; i < 12; i++) assert_true(p[i] > 0 && p[i] < 0.7616f);
    free(p);
    /* a failing layer is named */
    assert_null(tfl_model_call(m, f32(ctx, F(1, 2), I64(1, 2)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, BUILT3(2));
    assert_null(tfl_model_call(NULL, x, false));
    assert_int_equal(tfl_frame_depth(ctx), 1);
    tfl_model_free(m);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A NULL input is an error, as tfl_layer_call's ("dense: the input is NULL"). */
static void test_model_call_null_input(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, "mlp");
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2));
    assert_null(tfl_model_call(m, NULL, false));
    tfl_status st = tfl_ctx_status(ctx);
    tfl_model_free(m);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the input is NULL");
}

/* ---- compile, losses ------------------------------------------------------------------------ */

static void test_compile(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, "mlp");
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 3));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_NONE, 0), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: unknown loss 0");
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_END, 0), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: unknown loss 5");
    assert_int_equal(tfl_model_compile(m, opt, BIN, 2u), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: unknown metric flags 0x2");
    assert_int_equal(tfl_model_compile(m, opt, BIN, 0x11u), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mlp: unknown metric flags 0x10");
    assert_int_equal(tfl_model_compile(m, opt, MSE, ACC), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "mlp: accuracy needs a classification loss, not mean_squared_error");
    tfl_ctx *ctx2 = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx2);
    tfl_optimizer *foreign = tfl_optimizer_new(ctx2, &o);
    assert_non_null(foreign);
    assert_int_equal(tfl_model_compile(m, foreign, MSE, 0), TFL_MISUSE); /* base.h's rule */
    expect_kept_error(ctx, TFL_MISUSE, "mlp: the optimizer belongs to another context");
    tfl_ctx_free(ctx2); /* frees `foreign` */
    assert_int_equal(tfl_model_compile(NULL, opt, MSE, 0), TFL_INVALID_ARGUMENT);
    /* the valid ones; none of the failures above compiled anything */
    assert_int_equal(tfl_model_compile(m, opt, MSE, 0), TFL_OK);
    assert_int_equal(tfl_model_compile(m, NULL, SPARSE, ACC), TFL_OK);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_END - 1, 0), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    const char *names[] = {"none", "sparse_categorical_crossentropy", "categorical_crossentropy",
                           "binary_crossentropy", "mean_squared_error", "?"};
    for (int k = 0; k <= TFL_LOSS_END; k++)
        assert_string_equal(tfl_loss_name((tfl_loss_kind)k), names[k]);
    assert_string_equal(tfl_loss_name((tfl_loss_kind)-1), "?");
    tfl_model_free(m);
    tfl_optimizer_free(opt);
}

static void test_loss_values(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double r0[] = {1, 2, 3}, r1[] = {0, 0, 0};
    tfl_tensor *logits = f32(ctx, F(1, 2, 3, 0, 0, 0), I64(2, 3));
    tfl_tensor *labels = i32(ctx, (const int32_t[]){2, 1}, I64(2));
    const double want[] = {lse(r0, 3) - 3, log(3)};
    tfl_tensor *sparse = LOSS(SPARSE, logits, labels);
    expect_shape_of(sparse, I64(2));
    expect_near(sparse, want, 2, 1e-6);
    /* categorical with the same integer labels agrees; so do one-hot labels and int64 ids */
    tfl_tensor *cat = LOSS(CAT, logits, labels);
    expect_shape_of(cat, I64(2));
    expect_same_values(cat, sparse);
    tfl_tensor *onehot = f32(ctx, F(0, 0, 1, 0, 1, 0), I64(2, 3));
    expect_near(LOSS(CAT, logits, onehot), want, 2, 1e-6);
    tfl_tensor *ids64 = tfl_tensor_new(ctx, TFL_DTYPE_INT64, 1, (int64_t[]){2}, (int64_t[]){2, 1});
    expect_near(LOSS(SPARSE, logits, ids64), want, 2, 1e-6);
    expect_near(LOSS(CAT, logits, ids64), want, 2, 1e-6);
    /* soft labels: lse - sum(y x) */
    tfl_tensor *soft = f32(ctx, F(0.25f, 0.25f, 0.5f, 1, 0, 0), I64(2, 3));
    expect_near(LOSS(CAT, logits, soft), (const double[]){lse(r0, 3) - 2.25, lse(r1, 3)}, 2, 1e-6);
    /* binary: (batch, 1) logits with an integer label vector */
    tfl_tensor *bl = f32(ctx, F(0, 2, -1), I64(3, 1));
    tfl_tensor *by = i32(ctx, (const int32_t[]){1, 0, 1}, I64(3));
    tfl_tensor *bin = LOSS(BIN, bl, by);
    expect_shape_of(bin, I64(3));
    expect_near(bin, (const double[]){log(2), 2 + log1p(exp(-2)), 1 + log1p(exp(-1))}, 3, 1e-6);
    /* binary over two outputs: the mean over the last axis */
    tfl_tensor *b2 =
        LOSS(BIN, f32(ctx, F(0, 2, -1, 1), I64(2, 2)), f32(ctx, F(1, 0, 1, 0.5f), I64(2, 2)));
    expect_shape_of(b2, I64(2));
    expect_near(b2, (const double[]){(bce(0, 1) + bce(2, 0)) / 2, (bce(-1, 1) + bce(1, 0.5)) / 2},
                2, 1e-6);
    /* mean squared error over the last axis */
    tfl_tensor *mse = LOSS(MSE, logits, f32(ctx, F(1, 0, 1, 1, 2, 3), I64(2, 3)));
    expect_shape_of(mse, I64(2));
    expect_near(mse, (const double[]){8.0 / 3, 14.0 / 3}, 2, 1e-6);
    tfl_tensor *mse1 = LOSS(MSE, f32(ctx, F(0.5f, 2, -1), I64(3, 1)), by);
    expect_shape_of(mse1, I64(3));
    expect_near(mse1, (const double[]){0.25, 4, 4}, 3, 0);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_loss_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *logits = f32(ctx, F(1, 2, 3, 0, 0, 0), I64(2, 3));
    const struct {
        tfl_loss_kind kind;
        tfl_tensor *labels;
        const char *message;
    } cases[] = {
        {SPARSE, i32(ctx, (const int32_t[]){0, 1, 2, 0}, I64(4)),
         "SparseSoftmaxCrossEntropyWithLogits: labels of shape (4,) must have the shape of logits "
         "(2, 3) without its last axis"},
        {SPARSE, f32(ctx, F(0, 1), I64(2)),
         "SparseSoftmaxCrossEntropyWithLogits: labels dtype float32 is not supported; expected "
         "one of int32, int64"},
        {SPARSE, i32(ctx, (const int32_t[]){0, 3}, I64(2)),
         "SparseSoftmaxCrossEntropyWithLogits: Received a label value of 3 which is outside the "
         "valid range of [0, 3) at labels[1]"},
        {CAT, f32(ctx, F(1, 0, 0, 0, 1, 0, 0, 0), I64(2, 4)),
         "SoftmaxCrossEntropyWithLogits: logits and labels must have the same shape, got logits "
         "(2, 3) and labels (2, 4)"},
        {CAT, i32(ctx, (const int32_t[]){0, 1, 2}, I64(3)),
         "SparseSoftmaxCrossEntropyWithLogits: labels of shape (3,) must have the shape of "
         "logits (2, 3) without its last axis"},
        {CAT, i32(ctx, (const int32_t[]){0, 3}, I64(2)), /* integer labels are checked too */
         "SparseSoftmaxCrossEntropyWithLogits: Received a label value of 3 which is outside the "
         "valid range of [0, 3) at labels[1]"},
        {BIN, f32(ctx, F(1, 0, 0, 1), I64(4)),
         "binary_crossentropy: predictions (2, 3) and labels (4,) differ in shape"},
        {BIN, f32(ctx, F(1, 0, 1), I64(3)), /* no broadcasting: labels have pred's shape */
         "binary_crossentropy: predictions (2, 3) and labels (3,) differ in shape"},
        {MSE, f32(ctx, F(1, 0, 0, 1), I64(2, 2)),
         "mean_squared_error: predictions (2, 3) and labels (2, 2) differ in shape"},
        {MSE, i32(ctx, (const int32_t[]){1, 0}, I64(2)),
         "mean_squared_error: predictions (2, 3) and labels (2,) differ in shape"},
        {TFL_LOSS_NONE, f32(ctx, F(0, 1), I64(2)), "tfl_loss_per_example: unknown loss 0"},
        {(tfl_loss_kind)99, f32(ctx, F(0, 1), I64(2)), "tfl_loss_per_example: unknown loss 99"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_non_null(cases[i].labels);
        tfl_tensor *l = tfl_loss_per_example(ctx, cases[i].kind, logits, cases[i].labels);
        if (l) print_error("case %zu gave a loss\n", i);
        assert_null(l);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, cases[i].message);
    }
    assert_null(LOSS(SPARSE, tfl_scalar_f32(ctx, 1), cases[0].labels));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "sparse_categorical_crossentropy: predictions must have rank >= 1, got a "
                      "scalar");
    assert_null(LOSS(MSE, NULL, logits));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_loss_per_example: pred is NULL");
    assert_null(LOSS(MSE, logits, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_loss_per_example: labels is NULL");
    assert_null(tfl_loss_per_example(NULL, MSE, logits, logits));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- evaluate, predict ---------------------------------------------------------------------- */

/* 5 examples of 3 features and labels; argmax right for rows 0, 2, 3 */
static const float EX[] = {1, 2, 3, 0, 0, 1, 2, 1, 0, -1, 3, 0, 0.5f, 0.2f, 0.1f};
static const int32_t EY[] = {2, 0, 0, 1, 2};

static tfl_dataset *dataset(tfl_ctx *ctx, const int32_t *labels)
{
    tfl_tensor *x = f32(ctx, EX, I64(5, 3));
    tfl_tensor *y = labels ? i32(ctx, labels, I64(5)) : NULL;
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, x, y, NULL);
    assert_non_null(ds);
    return ds;
}

/* Dense(units) with the given kernel (3, units) and bias */
static tfl_model *fixed_model(tfl_ctx *ctx, const float *kernel, const float *bias, int64_t units)
{
    tfl_tensor *k = f32(ctx, kernel, (int64_t[]){3, units}, 2), *b = f32(ctx, bias, &units, 1);
    tfl_initializer ki = tfl_init_tensor(k), bi = tfl_init_tensor(b);
    tfl_model *m = new_model(ctx, "mlp");
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = units, .kernel_init = &ki, .bias_init = &bi));
    assert_int_equal(tfl_model_build(m, RS(-1, 3)), TFL_OK);
    return m;
}

static void test_evaluate(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_dataset *ds = dataset(ctx, EY), *unlabelled = dataset(ctx, NULL);
    tfl_model *m = fixed_model(ctx, F(1, 0, 0, 0, 1, 0, 0, 0, 1), F(0, 0, 0), 3); /* logits = x */
    double loss = 0, acc = 0;
    assert_int_equal(tfl_model_evaluate(m, ds, 2, &loss, &acc), TFL_FAILED_PRECONDITION);
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION,
                      "tfl_model_evaluate: mlp has no loss: call tfl_model_compile first");
    assert_int_equal(tfl_model_compile(m, NULL, SPARSE, ACC), TFL_OK);
    double want = 0;
    for (int i = 0; i < 5; i++) {
        const double row[] = {EX[3 * i], EX[3 * i + 1], EX[3 * i + 2]};
        want += (lse(row, 3) - row[EY[i]]) / 5;
    }
    const int64_t batches[] = {2, 1, 5, 0};
    for (int i = 0; i < 4; i++) {
        loss = acc = -1;
        assert_int_equal(tfl_model_evaluate(m, ds, batches[i], &loss, &acc), TFL_OK);
        assert_true(fabs(loss - want) < 1e-6);
        assert_true(acc == 0.6);
    }
    assert_int_equal(tfl_model_evaluate(m, ds, 2, NULL, NULL), TFL_OK);
    /* categorical with the integer labels: the same figures */
    assert_int_equal(tfl_model_compile(m, NULL, CAT, 0), TFL_OK);
    assert_int_equal(tfl_model_evaluate(m, ds, 2, &loss, &acc), TFL_OK);
    assert_true(fabs(loss - want) < 1e-6);
    assert_true(isnan(acc)); /* not measured */
    /* errors */
    assert_int_equal(tfl_model_evaluate(m, unlabelled, 2, &loss, &acc), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "tfl_model_evaluate: mlp: the dataset has no labels");
    assert_int_equal(tfl_model_evaluate(m, NULL, 2, &loss, &acc), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_evaluate: mlp: the dataset is NULL");
    assert_int_equal(tfl_model_evaluate(m, ds, -1, &loss, &acc), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    tfl_dataset *bad = dataset(ctx, (const int32_t[]){0, 1, 2, 3, 0}); /* 3 is no class */
    assert_int_equal(tfl_model_compile(m, NULL, SPARSE, 0), TFL_OK);
    assert_int_equal(tfl_model_evaluate(m, bad, 2, &loss, &acc), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "Received a label value of 3");
    assert_int_equal(tfl_frame_depth(ctx), 1);
    tfl_model_free(m);
    tfl_model *empty = new_model(ctx, "empty");
    assert_int_equal(tfl_model_compile(empty, NULL, MSE, 0), TFL_OK);
    assert_int_equal(tfl_model_evaluate(empty, ds, 2, &loss, NULL), TFL_FAILED_PRECONDITION);
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "tfl_model_evaluate: empty has no layers");
    tfl_model_free(empty);

    /* binary: logits x0 - 0.5 = (0.5, -0.5, 1.5, -1.5, 0), labels (1, 1, 0, 0, 0) */
    const int32_t by[] = {1, 1, 0, 0, 0};
    tfl_dataset *bds = dataset(ctx, by);
    m = fixed_model(ctx, F(1, 0, 0), F(-0.5f), 1);
    assert_int_equal(tfl_model_compile(m, NULL, BIN, ACC), TFL_OK);
    assert_int_equal(tfl_model_evaluate(m, bds, 2, &loss, &acc), TFL_OK);
    want = 0;
    for (int i = 0; i < 5; i++) want += bce(EX[3 * i] - 0.5, by[i]) / 5;
    assert_true(fabs(loss - want) < 1e-6);
    assert_true(acc == 0.6); /* (pred > 0) == (label > 0.5) for rows 0, 3, 4 */
    /* mean squared error of the same outputs */
    assert_int_equal(tfl_model_compile(m, NULL, MSE, 0), TFL_OK);
    assert_int_equal(tfl_model_evaluate(m, bds, 3, &loss, &acc), TFL_OK);
    want = 0;
    for (int i = 0; i < 5; i++) want += pow(EX[3 * i] - 0.5 - by[i], 2) / 5;
    assert_true(fabs(loss - want) < 1e-6);
    assert_true(isnan(acc));
    tfl_model_free(m);
    tfl_dataset_free(ds);
    tfl_dataset_free(unlabelled);
    tfl_dataset_free(bad);
    tfl_dataset_free(bds);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_predict(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_dataset *ds = dataset(ctx, NULL);
    tfl_model *m = new_model(ctx, "mlp");
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 4, .activation = TFL_ACT_RELU));
    add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2));
    tfl_tensor *whole = tfl_model_call(m, f32(ctx, EX, I64(5, 3)), false);
    float want[10];
    assert_int_equal(tfl_tensor_to_host(whole, want, sizeof want), TFL_OK);
    const int64_t batches[] = {2, 4, 5, 0};
    for (int i = 0; i < 4; i++) {
        tfl_tensor *p = tfl_model_predict(m, ds, batches[i]);
        expect_shape_of(p, I64(5, 2));
        expect_f32(p, want, 10, 1e-6);
    }
    /* with labels too; a fixed model gives known values: x0 - x2 */
    tfl_model_free(m);
    tfl_dataset *lds = dataset(ctx, EY);
    m = fixed_model(ctx, F(1, 0, -1), F(0), 1);
    tfl_tensor *p = tfl_model_predict(m, lds, 3);
    expect_shape_of(p, I64(5, 1));
    expect_f32(p, F(-2, -1, 2, -1, 0.4f), 5, 1e-6);
    /* errors */
    assert_null(tfl_model_predict(m, NULL, 2));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_predict: mlp: the dataset is NULL");
    assert_null(tfl_model_predict(NULL, ds, 2));
    tfl_model *none = new_model(ctx, "none");
    assert_null(tfl_model_predict(none, ds, 2));
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "none: the model has no layers");
    assert_int_equal(tfl_frame_depth(ctx), 1);
    tfl_model_free(none);
    tfl_model_free(m);
    tfl_dataset_free(ds);
    tfl_dataset_free(lds);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- freed with the context ------------------------------------------------------------------ */

typedef struct counter {
    uint64_t allocs, frees;
} counter;

static void *count_alloc(void *user, size_t bytes, size_t alignment)
{
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) return NULL;
    ((counter *)user)->allocs++;
    return p;
}

static void count_free(void *user, void *p)
{
    if (!p) return;
    ((counter *)user)->frees++;
    free(p);
}

static tfl_ctx *counting_ctx(counter *c)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.alloc_fn = count_alloc, .free_fn = count_free,
                                               .alloc_user = c}, NULL);
    assert_non_null(ctx);
    return ctx;
}

/* predict on an empty dataset: an error naming it, and nothing left allocated */
static void test_predict_empty_dataset(void **state)
{
    (void)state;
    counter c = {0, 0};
    tfl_ctx *ctx = counting_ctx(&c);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){0, 3}, NULL);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, x, NULL, NULL);
    assert_non_null(ds);
    tfl_model *m = tfl_model_new(ctx, "mlp");
    assert_non_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 2)));
    assert_null(tfl_model_predict(m, ds, 2));
    tfl_error e = tfl_ctx_error(ctx);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", e.message);
    tfl_status code = e.code;
    tfl_ctx_clear_error(ctx);
    tfl_model_free(m);
    tfl_dataset_free(ds);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    if (c.frees != c.allocs)
        print_error("%llu allocations, %llu frees\n", (unsigned long long)c.allocs,
                    (unsigned long long)c.frees);
    assert_int_equal(c.frees, c.allocs);
    assert_int_equal(code, TFL_INVALID_ARGUMENT);
    assert_string_equal(msg, "tfl_model_predict: mlp: the dataset is empty");
}

static void test_freed_with_context(void **state)
{
    (void)state;
    counter c = {0, 0};
    tfl_ctx *ctx = counting_ctx(&c);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    /* a layer made before its model (older in the context's list), then given to it */
    tfl_layer *early = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_DENSE, .units = 3));
    assert_non_null(early);
    tfl_model *a = tfl_model_new(ctx, NULL);
    assert_non_null(a);
    assert_int_equal(tfl_model_add_layer(a, early), TFL_OK);
    assert_non_null(tfl_model_add(a, SPEC(.kind = TFL_LAYER_BATCH_NORM)));
    assert_non_null(tfl_model_add(a, SPEC(.kind = TFL_LAYER_DENSE, .units = 2)));
    assert_int_equal(tfl_model_build(a, RS(-1, 4)), TFL_OK);
    assert_non_null(tfl_model_summary(a));
    tfl_model *b = tfl_model_new(ctx, NULL);
    for (int i = 0; i < 10; i++) /* past the first growth of the layer list */
        assert_non_null(tfl_model_add(b, SPEC(.kind = TFL_LAYER_ACTIVATION, .activation = 1)));
    assert_non_null(tfl_model_add(b, SPEC(.kind = TFL_LAYER_DENSE, .units = 2)));
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){2, 5});
    assert_non_null(tfl_model_call(b, x, false));
    assert_int_equal(tfl_model_compile(b, NULL, MSE, 0), TFL_OK);
    tfl_layer *loose = tfl_layer_new(ctx, SPEC(.kind = TFL_LAYER_EMBEDDING, .input_dim = 7,
                                               .units = 3));
    assert_int_equal(tfl_layer_build(loose, RS(-1, 2)), TFL_OK);
    assert_non_null(tfl_model_new(ctx, "empty"));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx); /* a, b, empty, loose and every variable are still alive */
    assert_true(c.allocs > 0);
    assert_int_equal(c.frees, c.allocs);
}

/* A build that fails at a later layer makes no variables anywhere; a NULL list with a
 * capacity is only counted; float64 inputs are cast to the layers' float32. */
static void test_build_all_or_nothing(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = new_model(ctx, "convs");
    add(m, SPEC(.kind = TFL_LAYER_CONV2D, .units = 4, .kernel_size = {3, 3}));
    add(m, SPEC(.kind = TFL_LAYER_CONV2D, .units = 4, .kernel_size = {3, 3}));
    assert_int_equal(tfl_model_build(m, RS(-1, 4, 4, 1)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "conv2d_1: the Conv2D window (3, 3) does not "
                      "fit the input (-1, 2, 2, 4) with VALID padding");
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), 0); /* conv2d made nothing */
    assert_int_equal(tfl_model_build(m, RS(-1, 28, 28, 3)), TFL_OK); /* so 3 channels work */
    assert_int_equal(tfl_model_param_count(m, TFL_VARS_ALL), (3 * 3 * 3 * 4 + 4) + (9 * 4 * 4 + 4));
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, NULL, 4), 4);
    tfl_model_free(m);

    tfl_model *d = new_model(ctx, "f64");
    add(d, SPEC(.kind = TFL_LAYER_DENSE, .units = 2));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT64, 2, (const int64_t[]){3, 5});
    tfl_tensor *y = tfl_model_call(d, x, false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_dtype(y), TFL_DTYPE_FLOAT32);
    assert_null(tfl_model_call(d, tfl_ones(ctx, TFL_DTYPE_INT32, 2, (const int64_t[]){3, 5}),
                               false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense: Dense expects a floating input, got int32");
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_model_free(d);

    tfl_model *f = new_model(ctx, "flat");
    add(f, SPEC(.kind = TFL_LAYER_FLATTEN));
    assert_int_equal(tfl_model_build(f, RS(-1, 4294967296, 4294967296)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "flatten: an example of shape (-1, 4294967296, "
                      "4294967296) has too many elements");
    tfl_model_free(f);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_model_names),
        T(test_model_add),
        T(test_build_and_summary),
        T(test_build_all_or_nothing),
        T(test_model_variables),
        T(test_model_call),
        T(test_model_call_null_input),
        T(test_compile),
        T(test_loss_values),
        T(test_loss_errors),
        T(test_evaluate),
        T(test_predict),
        cmocka_unit_test(test_predict_empty_dataset),
        cmocka_unit_test(test_freed_with_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
