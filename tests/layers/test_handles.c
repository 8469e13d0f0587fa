/* test_handles.c: handles freed twice or used after their free (tensors, tapes, optimizers,
 * models, layers, datasets) are MISUSE with a message, never a crash, and leave their
 * context usable; a handle of another context is MISUSE everywhere (base.h's rules). Every
 * test runs in the sanitizer build too, where a use of freed memory or a leak fails it. */
#include "test_fixture.h"

#define RELEASED "already released (double release or use after release)"
#define FREED "already freed (double free or use after free)"

static tfl_tensor *vec(tfl_ctx *ctx, float a, float b)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (float[]){a, b});
    assert_non_null(t);
    return t;
}

static double get(const tfl_tensor *t, int64_t i)
{
    double v = -1;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

/* 4 examples of 2 features, labels 0/1. */
static tfl_dataset *small_dataset(tfl_ctx *ctx)
{
    tfl_frame_push(ctx);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){4, 2},
                                   (float[]){0, 1, 1, 0, 2, 1, 1, 2});
    tfl_tensor *y =
        tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){4}, (int32_t[]){0, 1, 0, 1});
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, x, y, NULL);
    tfl_frame_pop(ctx);
    assert_non_null(ds);
    return ds;
}

static tfl_optimizer *sgd(tfl_ctx *ctx, double lr)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    o.learning_rate = lr;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    return opt;
}

static const tfl_layer_spec dense2 = {.kind = TFL_LAYER_DENSE, .units = 2};

/* ---- tensors ------------------------------------------------------------------------------- */

static void test_tensor_double_release(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *t = vec(ctx, 1, 2);
    tfl_tensor_release(t);
    tfl_tensor_release(t); /* was a segfault */
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_release: tensor " RELEASED);
    /* still detected after other tensors came and went: records are reused oldest first */
    for (int i = 0; i < 10; i++)
        tfl_tensor_release(vec(ctx, (float)i, 0));
    tfl_tensor_release(t);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_release: tensor " RELEASED);
    assert_null(tfl_tensor_retain(t));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_retain: tensor " RELEASED);
    assert_null(tfl_keep(t));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_keep: tensor " RELEASED);
    /* the context works on, with nothing left alive */
    tfl_tensor *a = vec(ctx, 1, 2), *b = vec(ctx, 10, 20);
    tfl_tensor *s = tfl_add(ctx, a, b);
    assert_non_null(s);
    assert_true(get(s, 0) == 11 && get(s, 1) == 22);
    tfl_tensor_release(s);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

static void test_tensor_use_after_release(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *a = vec(ctx, 1, 2);
    tfl_tensor *t = vec(ctx, 3, 4);
    tfl_tensor_release(t);
    assert_null(tfl_add(ctx, a, t));
    expect_kept_error(ctx, TFL_MISUSE, "Add: input 1 is a tensor already released");
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, 0, &v), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tensor_get: tensor " RELEASED);
    float buf[2];
    assert_int_equal(tfl_tensor_to_host(t, buf, sizeof buf), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tensor_to_host: tensor " RELEASED);
    assert_int_equal(tfl_tensor_dtype(t), TFL_DTYPE_INVALID);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_dtype: tensor " RELEASED);
    assert_int_equal(tfl_tensor_numel(t), -1);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_numel");
    assert_null(tfl_tensor_device(t));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_device");
    char text[64];
    assert_int_equal(tfl_tensor_format(t, text, sizeof text, NULL), -1);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_format");
    assert_int_equal(tfl_variable_assign(t, a), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "AssignVariableOp: tensor " RELEASED);
    /* a released variable */
    tfl_tensor *w = tfl_variable_new(ctx, a, NULL);
    assert_non_null(w);
    tfl_tensor_release(w);
    assert_int_equal(tfl_variable_assign(w, a), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, RELEASED);
    assert_null(tfl_variable_name(w));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_variable_name: tensor " RELEASED);
    assert_null(tfl_variable_read(w));
    expect_kept_error(ctx, TFL_MISUSE, "ReadVariableOp: tensor " RELEASED);
    tfl_tensor_release(w);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tensor_release: tensor " RELEASED);
    tfl_tensor_release(a);
}

static void test_frame_tensor_released_by_caller(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *t = tfl_scalar_f32(ctx, 2.0f); /* the frame holds its only reference */
    tfl_tensor *kept = tfl_keep(tfl_scalar_f32(ctx, 5.0f));
    tfl_tensor_release(t);                        /* the caller's mistake */
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK); /* releases the rest, reports t */
    expect_kept_error(ctx, TFL_MISUSE, "tfl_frame_pop: tensor " RELEASED);
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_true(get(kept, 0) == 5.0); /* the frame's other tensors were handled normally */
    tfl_tensor_release(kept);
}

/* ---- tapes --------------------------------------------------------------------------------- */

static void test_tape_double_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *x = vec(ctx, 3, 4);
    tfl_tape *outer = tfl_tape_begin(ctx, 0);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    assert_non_null(outer);
    assert_non_null(tape);
    tfl_tape_free(tape);
    tfl_tape_free(tape); /* was a glibc abort */
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_free: tape " FREED);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_watch: tape " FREED);
    tfl_tensor *g = x;
    assert_int_equal(tfl_tape_gradient(tape, x, 1, (const tfl_tensor *[]){x}, &g, 0), TFL_MISUSE);
    assert_null(g);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_gradient: tape " FREED);
    assert_int_equal(tfl_tape_end(tape), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_end: tape " FREED);
    assert_int_equal(tfl_tape_size(tape), 0);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_size: tape " FREED);
    /* the outer tape still records; a new tape works: d(sum x*x)/dx = 2x */
    assert_int_equal(tfl_tape_watch(outer, x), TFL_OK);
    tfl_tape_free(outer);
    tfl_tape_free(outer);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_free: tape " FREED);
    tfl_tape *t2 = tfl_tape_begin(ctx, 0);
    assert_non_null(t2);
    assert_int_equal(tfl_tape_watch(t2, x), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *y = tfl_reduce_sum(ctx, tfl_mul(ctx, x, x), 0, NULL, false);
    assert_int_equal(tfl_tape_gradient(t2, y, 1, (const tfl_tensor *[]){x}, &g, 0), TFL_OK);
    assert_true(get(g, 0) == 6.0 && get(g, 1) == 8.0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tape_free(t2);
    tfl_tensor_release(x);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

/* A handle freed twice after new handles of its kind were made (a tape a step) is still
 * MISUSE with the message kept, and the new handles are untouched: a freed record is not
 * handed out again at once (as a tensor's is not). */
static void test_stale_handle_after_new_ones(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tape *a = tfl_tape_begin(ctx, 0);
    tfl_tape_free(a);
    tfl_tape *live[20];
    for (int i = 0; i < 20; i++) {
        live[i] = tfl_tape_begin(ctx, 0);
        assert_non_null(live[i]);
        assert_ptr_not_equal(live[i], a);
    }
    tfl_tape_free(a);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_free: tape " FREED);
    for (int i = 19; i >= 0; i--) { /* every new tape is alive: its free keeps no error */
        assert_int_equal(tfl_tape_end(live[i]), TFL_OK);
        tfl_tape_free(live[i]);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    }
    tfl_optimizer *o = sgd(ctx, 0.1);
    tfl_optimizer_free(o);
    tfl_optimizer *o2 = sgd(ctx, 0.1);
    assert_ptr_not_equal(o2, o);
    tfl_optimizer_free(o);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_optimizer_free: optimizer " FREED);
    tfl_optimizer_free(o2);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_model *m = tfl_model_new(ctx, NULL);
    tfl_model_free(m);
    tfl_model *m2 = tfl_model_new(ctx, NULL);
    assert_ptr_not_equal(m2, m);
    tfl_model_free(m);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_free: model " FREED);
    tfl_model_free(m2);
    tfl_dataset *d = small_dataset(ctx);
    tfl_dataset_free(d);
    tfl_dataset *d2 = small_dataset(ctx);
    assert_ptr_not_equal(d2, d);
    tfl_dataset_free(d);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_free: dataset " FREED);
    tfl_dataset_free(d2);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    /* records are reused once enough of a kind are dead: the pool stays bounded */
    tfl_tape *first = tfl_tape_begin(ctx, 0);
    bool reused = false;
    for (int i = 0; i < 200 && !reused; i++) {
        tfl_tape *t = tfl_tape_begin(ctx, 0);
        reused = t == first || t == a;
        tfl_tape_free(t);
    }
    tfl_tape_free(first);
    assert_true(reused);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

/* A context freed with dead tapes (and a live one) in it gives everything back. */
static void test_ctx_free_with_dead_handles(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl_tape *a = tfl_tape_begin(ctx, 0);
    tfl_tape_free(a);
    tfl_tape_free(a);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_tape_free");
    assert_non_null(tfl_tape_begin(ctx, 0)); /* left for tfl_ctx_free */
    tfl_optimizer *opt = sgd(ctx, 0.1);
    tfl_optimizer_free(opt);
    tfl_model_free(tfl_model_new(ctx, NULL));
    tfl_dataset_free(small_dataset(ctx));
    assert_non_null(small_dataset(ctx)); /* left for tfl_ctx_free */
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx); /* the sanitizer build fails on a leak or a bad free here */
}

/* ---- optimizers ---------------------------------------------------------------------------- */

static void test_optimizer_double_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *init = vec(ctx, 1, 2);
    tfl_tensor *w = tfl_variable_new(ctx, init, NULL);
    tfl_tensor_release(init);
    tfl_tensor *g = vec(ctx, 1, 1);
    tfl_optimizer *opt = sgd(ctx, 0.5);
    assert_int_equal(tfl_optimizer_apply(opt, 1, &w, &g), TFL_OK);
    tfl_optimizer_free(opt);
    tfl_optimizer_free(opt);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_optimizer_free: optimizer " FREED);
    assert_int_equal(tfl_optimizer_apply(opt, 1, &w, &g), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_optimizer_apply: optimizer " FREED);
    assert_null(tfl_optimizer_name(opt));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_optimizer_name: optimizer " FREED);
    assert_null(tfl_optimizer_iterations(opt));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_optimizer_iterations");
    assert_true(get(w, 0) == 0.5 && get(w, 1) == 1.5); /* the one good step only */
    /* a new optimizer (the dead record may be reused) works */
    tfl_optimizer *opt2 = sgd(ctx, 0.5);
    assert_int_equal(tfl_optimizer_apply(opt2, 1, &w, &g), TFL_OK);
    assert_true(get(w, 0) == 0.0 && get(w, 1) == 1.0);
    tfl_optimizer_free(opt2);
    tfl_tensor_release(g);
    tfl_tensor_release(w);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

/* ---- models and layers --------------------------------------------------------------------- */

static void test_model_double_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, "m");
    tfl_layer *l = tfl_model_add(m, &dense2);
    assert_non_null(l);
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){1, 3}), TFL_OK);
    tfl_model_free(m);
    tfl_model_free(m);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_free: model " FREED);
    tfl_layer_free(l); /* freed with its model */
    expect_kept_error(ctx, TFL_MISUSE, "tfl_layer_free: layer " FREED);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 3});
    assert_null(tfl_model_call(m, x, false));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_call: model " FREED);
    assert_int_equal(tfl_model_num_layers(m), 0);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_num_layers: model " FREED);
    assert_int_equal(tfl_model_compile(m, NULL, TFL_LOSS_MEAN_SQUARED_ERROR, 0), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_compile: model " FREED);
    /* a new model with the same name works */
    tfl_model *m2 = tfl_model_new(ctx, "m");
    assert_non_null(m2);
    assert_non_null(tfl_model_add(m2, &dense2));
    tfl_tensor *y = tfl_model_call(m2, x, false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_dim(y, 1), 2);
    tfl_tensor_release(y);
    tfl_model_free(m2);
    tfl_tensor_release(x);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

static void test_layer_double_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *l = tfl_layer_new(ctx, &dense2);
    assert_non_null(l);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 3});
    tfl_tensor_release(tfl_layer_call(l, x, false)); /* built: it owns variables */
    tfl_layer_free(l);
    tfl_layer_free(l);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_layer_free: layer " FREED);
    assert_null(tfl_layer_call(l, x, false));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_layer_call: layer " FREED);
    assert_null(tfl_layer_name(l));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_layer_name: layer " FREED);
    tfl_model *m = tfl_model_new(ctx, NULL);
    assert_int_equal(tfl_model_add_layer(m, l), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "the layer was already freed");
    assert_int_equal(tfl_model_num_layers(m), 0);
    tfl_model_free(m);
    tfl_tensor_release(x);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

/* ---- datasets ------------------------------------------------------------------------------ */

static void test_dataset_double_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *ds = small_dataset(ctx);
    tfl_dataset *a = NULL, *b = NULL;
    assert_int_equal(tfl_dataset_split(ds, 3, &a, &b), TFL_OK);
    tfl_dataset_free(ds);
    tfl_dataset_free(ds);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_free: dataset " FREED);
    tfl_tensor *x = NULL, *y = NULL;
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_MISUSE);
    assert_null(x);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_next: dataset " FREED);
    assert_int_equal(tfl_dataset_size(ds), -1);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_size: dataset " FREED);
    assert_null(tfl_dataset_feature_shape(ds));
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_feature_shape");
    assert_int_equal(tfl_dataset_shard(ds, 0, 2), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_shard: dataset " FREED);
    assert_int_equal(tfl_dataset_shard_count(ds), -1);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_shard_count: dataset " FREED);
    /* fit refuses it; the splits (sharing the examples) still work */
    tfl_model *m = tfl_model_new(ctx, NULL);
    assert_non_null(tfl_model_add(m, &dense2));
    tfl_optimizer *opt = sgd(ctx, 0.1);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    assert_int_equal(tfl_model_fit(m, ds, NULL, NULL), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_fit: the dataset was already freed");
    assert_int_equal(tfl_dataset_size(a), 3);
    assert_int_equal(tfl_model_fit(m, a, NULL, NULL), TFL_OK);
    tfl_dataset_free(a);
    tfl_dataset_free(b);
    tfl_dataset_free(b);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_dataset_free: dataset " FREED);
    /* an optimizer freed after compile */
    tfl_optimizer_free(opt);
    tfl_dataset *c = small_dataset(ctx);
    assert_int_equal(tfl_model_fit(m, c, NULL, NULL), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "its optimizer was freed after tfl_model_compile");
    tfl_dataset_free(c);
    tfl_model_free(m);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

/* ---- the cross-context rule: MISUSE everywhere --------------------------------------------- */

static void test_other_context_is_misuse(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_ctx *ctx2 = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx2);
    tfl_tensor *a = vec(ctx, 1, 2);
    tfl_tensor *w = tfl_variable_new(ctx, a, NULL);
    tfl_tensor *f = vec(ctx2, 3, 4);
    tfl_tensor *fw = tfl_variable_new(ctx2, f, NULL);
    /* ops */
    assert_null(tfl_add(ctx, a, f));
    expect_kept_error(ctx, TFL_MISUSE, "Add: input 1 belongs to another context");
    assert_null(tfl_zeros_like(ctx, f));
    expect_kept_error(ctx, TFL_MISUSE, "zeros_like: the tensor belongs to another context");
    assert_int_equal(tfl_variable_assign(w, f), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "the value belongs to another context");
    /* tapes */
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, f), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tape_watch: the tensor belongs to another context");
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_tape_gradient(tape, a, 1, (const tfl_tensor *[]){f}, &g, 0), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tape_gradient: source 0 belongs to another context");
    tfl_tape_free(tape);
    /* optimizers */
    tfl_optimizer *opt = sgd(ctx, 0.1);
    assert_int_equal(tfl_optimizer_apply(opt, 1, &fw, &f), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "variable 0 belongs to another context");
    assert_int_equal(tfl_optimizer_apply(opt, 1, &w, &f), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "the gradient of variable 'Variable:0' belongs to another");
    assert_null(tfl_optimizer_slot(opt, fw, "momentum"));
    expect_kept_error(ctx, TFL_MISUSE, "slot: the variable belongs to another context");
    /* models, layers, datasets (was INVALID_ARGUMENT in model.c) */
    tfl_model *m = tfl_model_new(ctx, "m");
    assert_non_null(tfl_model_add(m, &dense2));
    tfl_layer *fl = tfl_layer_new(ctx2, &dense2);
    assert_int_equal(tfl_model_add_layer(m, fl), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "m: layer 'dense' belongs to another context");
    tfl_optimizer *fopt = sgd(ctx2, 0.1);
    assert_int_equal(tfl_model_compile(m, fopt, TFL_LOSS_MEAN_SQUARED_ERROR, 0), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "m: the optimizer belongs to another context");
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    tfl_tensor *fx = tfl_ones(ctx2, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 2});
    assert_null(tfl_model_call(m, fx, false));
    expect_kept_error(ctx, TFL_MISUSE, "the input belongs to another context");
    tfl_dataset *fds = small_dataset(ctx2);
    assert_int_equal(tfl_model_fit(m, fds, NULL, NULL), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_fit: the dataset belongs to another context");
    assert_int_equal(tfl_model_evaluate(m, fds, 0, NULL, NULL), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "the dataset belongs to another context");
    assert_int_equal(tfl_model_evaluate_replicated(m, fds, 0, NULL, NULL, NULL), TFL_MISUSE);
    expect_kept_error(ctx, TFL_MISUSE, "tfl_model_evaluate_replicated: the dataset belongs");
    assert_null(tfl_model_predict(m, fds, 0));
    expect_kept_error(ctx, TFL_MISUSE, "the dataset belongs to another context");
    assert_null(tfl_dataset_from_arrays(ctx, fx, NULL, NULL));
    expect_kept_error(ctx, TFL_MISUSE, "Dataset from arrays: x belongs to another context");
    /* nothing was kept in, or taken from, the other context */
    assert_int_equal(tfl_ctx_status(ctx2), TFL_OK);
    assert_int_equal(tfl_layer_param_count(fl, TFL_VARS_ALL), 0);
    assert_true(get(fw, 0) == 3.0 && get(w, 0) == 1.0);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_tensor_release(w);
    tfl_tensor_release(a);
    tfl_ctx_free(ctx2); /* frees its tensors, layer, optimizer and dataset */
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tensor_double_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_use_after_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frame_tensor_released_by_caller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tape_double_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_handle_after_new_ones, setup, teardown),
        cmocka_unit_test(test_ctx_free_with_dead_handles),
        cmocka_unit_test_setup_teardown(test_optimizer_double_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_double_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layer_double_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dataset_double_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_context_is_misuse, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
