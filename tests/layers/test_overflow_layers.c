/*
 * test_overflow_layers.c: the overflow property above the framework: layer units and
 * vocabulary sizes whose variables would overflow, window sizes, dataset batch sizes and
 * splits, fit/evaluate/predict counts and optimizer options, each given values near the ends
 * of int64 (or int) and products that overflow. Each answer is INVALID_ARGUMENT with the
 * call named, and nothing is left allocated (the CPU allocator's counters and the live
 * tensor count are the same before and after). One table; add a row to extend it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#define S(...) ((const int64_t[]){__VA_ARGS__})
#define P32 (INT64_C(1) << 32)
#define P62 (INT64_C(1) << 62)

/* Made before the counters are read: 4 examples of 2 features, 3 classes, and a compiled
 * Dense(3) model built for them. */
typedef struct fix {
    tfl_ctx *ctx;
    tfl_dataset *ds;
    tfl_model *m;
    tfl_optimizer *opt;
} fix;

/* A call: true when it produced a result (a handle, or TFL_OK). */
typedef bool (*call_fn)(fix *f, int64_t v);

typedef struct ovf_case {
    const char *what;
    call_fn call;
    int64_t v;
    const char *fragment;
} ovf_case;

/* ---- the calls ------------------------------------------------------------------------- */

/* A one-layer model built for (batch, features...): OK only when both steps are. */
static bool build_one(fix *f, const tfl_layer_spec *spec, int rank, const int64_t *shape)
{
    tfl_model *m = tfl_model_new(f->ctx, "probe");
    bool ok = m && tfl_model_add(m, spec) && tfl_model_build(m, rank, shape) == TFL_OK;
    tfl_model_free(m);
    return ok;
}

static bool c_dense_units(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = v}, 2, S(-1, 4));
}
static bool c_dense_features(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 4}, 2, S(-1, v));
}
static bool c_embedding_dim(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_EMBEDDING, .units = 2, .input_dim = v},
                     2, S(-1, 3));
}
static bool c_embedding_units(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_EMBEDDING, .units = v, .input_dim = 5},
                     2, S(-1, 3));
}
static bool c_conv_filters(fix *f, int64_t v)
{
    return build_one(f,
                     &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = v, .kernel_size = {3, 3}},
                     4, S(-1, 5, 5, 2));
}
static bool c_conv_kernel(fix *f, int64_t v)
{
    return build_one(
        f, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = 2, .kernel_size = {(int)v, 3}}, 4,
        S(-1, 5, 5, 2));
}
static bool c_pool_strides(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D, .strides = {1, (int)v}}, 4,
                     S(-1, 4, 4, 1));
}
static bool c_flatten(fix *f, int64_t v)
{
    return build_one(f, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN}, 3, S(-1, v, 3));
}
static bool c_reshape_target(fix *f, int64_t v)
{
    return build_one(
        f, &(tfl_layer_spec){.kind = TFL_LAYER_RESHAPE, .target_rank = 2, .target_shape = {v, 3}},
        2, S(-1, 6));
}
static bool c_batch(fix *f, int64_t v)
{
    return tfl_dataset_batch(f->ds, v, NULL) == TFL_OK;
}
static bool c_split(fix *f, int64_t v)
{
    tfl_dataset *a, *b;
    bool ok = tfl_dataset_split(f->ds, v, &a, &b) == TFL_OK;
    if (ok) {
        tfl_dataset_free(a);
        tfl_dataset_free(b);
    }
    return ok;
}
static bool c_fit_batch(fix *f, int64_t v)
{
    return tfl_model_fit(f->m, f->ds, &(tfl_fit_opts){.batch_size = v}, NULL) == TFL_OK;
}
static bool c_fit_epochs(fix *f, int64_t v)
{
    return tfl_model_fit(f->m, f->ds, &(tfl_fit_opts){.epochs = (int)v}, NULL) == TFL_OK;
}
static bool c_fit_initial(fix *f, int64_t v)
{
    return tfl_model_fit(f->m, f->ds, &(tfl_fit_opts){.epochs = 2, .initial_epoch = (int)v},
                         NULL) == TFL_OK;
}
static bool c_fit_callbacks(fix *f, int64_t v)
{
    return tfl_model_fit(f->m, f->ds, &(tfl_fit_opts){.n_callbacks = (int)v}, NULL) == TFL_OK;
}
static bool c_evaluate(fix *f, int64_t v)
{
    return tfl_model_evaluate(f->m, f->ds, v, NULL, NULL) == TFL_OK;
}
static bool c_predict(fix *f, int64_t v)
{
    return tfl_model_predict(f->m, f->ds, v) != NULL;
}

static tfl_optimizer *adam_with(fix *f, void (*set)(tfl_optimizer_opts *, int64_t), int64_t v)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    set(&o, v);
    return tfl_optimizer_new(f->ctx, &o);
}
static void set_lr(tfl_optimizer_opts *o, int64_t v)
{
    o->learning_rate = (double)v;
}
static void set_decay(tfl_optimizer_opts *o, int64_t v)
{
    o->schedule =
        (tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = v, .decay_rate = 0.5};
}
static void set_warmup(tfl_optimizer_opts *o, int64_t v)
{
    o->schedule.warmup_steps = v;
}
static void set_clip(tfl_optimizer_opts *o, int64_t v)
{
    o->clip_norm = (double)v;
}
static bool opt_ok(tfl_optimizer *opt)
{
    tfl_optimizer_free(opt);
    return opt != NULL;
}
static bool c_opt_lr(fix *f, int64_t v)
{
    return opt_ok(adam_with(f, set_lr, v));
}
static bool c_opt_decay(fix *f, int64_t v)
{
    return opt_ok(adam_with(f, set_decay, v));
}
static bool c_opt_warmup(fix *f, int64_t v)
{
    return opt_ok(adam_with(f, set_warmup, v));
}
static bool c_opt_clip(fix *f, int64_t v)
{
    return opt_ok(adam_with(f, set_clip, v));
}

static bool c_apply_n(fix *f, int64_t v)
{
    return tfl_optimizer_apply(f->opt, (int)v, NULL, NULL) == TFL_OK;
}
static bool c_gradient_n(fix *f, int64_t v)
{
    tfl_tape *tape = tfl_tape_begin(f->ctx, 0);
    tfl_tensor *x = tfl_ones(f->ctx, TFL_DTYPE_FLOAT32, 1, S(2));
    bool ok = tfl_tape_gradient(tape, x, (int)v, NULL, NULL, 0) == TFL_OK;
    tfl_tape_free(tape);
    return ok;
}

/* ---- the table ----------------------------------------------------------------------------- */

// clang-format off
#define ROW(fn, v, frag) {#fn "(" #v ")", fn, v, frag}
// clang-format on
#define NEG(fn, frag) ROW(fn, INT64_MIN, frag), ROW(fn, -1, frag)
#define INT_NEG(fn, frag) ROW(fn, INT_MIN, frag), ROW(fn, -1, frag)

static const ovf_case cases[] = {
    /* variables whose element count overflows */
    ROW(c_dense_units, INT64_MAX,
        "variable 'dense_1/kernel': shape (4, 9223372036854775807) has more than INT64_MAX"),
    ROW(c_dense_units, INT64_MAX - 1,
        "variable 'dense_1/kernel': shape (4, 9223372036854775806) has more than"),
    NEG(c_dense_units, "Dense needs units >= 1"),
    ROW(c_dense_features, P62,
        "variable 'dense_1/kernel': shape (4611686018427387904, 4) has more than INT64_MAX"),
    ROW(c_dense_features, INT64_MAX,
        "variable 'dense_1/kernel': shape (9223372036854775807, 4) has more than"),
    ROW(c_dense_features, INT64_MIN, "the input's last dimension must be known and >= 1"),
    ROW(c_embedding_dim, INT64_MAX,
        "variable 'embedding/embeddings': shape (9223372036854775807, 2) has more than INT64_MAX"),
    NEG(c_embedding_dim, "Embedding needs input_dim >= 1"),
    ROW(c_embedding_units, INT64_MAX / 4,
        "variable 'embedding/embeddings': shape (5, 2305843009213693951) has more than"),
    ROW(c_embedding_units, P62 / 5, "need more than 9223372036854775807 bytes"),
    ROW(c_conv_filters, INT64_MAX,
        "variable 'conv2d/kernel': shape (3, 3, 2, 9223372036854775807) has more than"),
    NEG(c_conv_filters, "Conv2D needs filters (units) >= 1"),
    ROW(c_conv_kernel, INT_MAX, "does not fit the input"),
    INT_NEG(c_conv_kernel, "Conv2D needs kernel_size >= 1"),
    INT_NEG(c_pool_strides, "pool size and strides must be >= 1"),
    ROW(c_flatten, INT64_MAX,
        "flatten: an example of shape (-1, 9223372036854775807, 3) has too many"),
    ROW(c_reshape_target, INT64_MAX, "cannot reshape an input of shape (-1, 6)"),
    ROW(c_reshape_target, INT64_MIN, "Reshape's target_shape[0] must be >= 1 or -1"),
    /* counts */
    NEG(c_batch, "Dataset batch: batch_size must be at least 1"),
    ROW(c_batch, 0, "Dataset batch: batch_size must be at least 1, got 0"),
    ROW(c_split, INT64_MAX,
        "Dataset split: n_first must be in [0, 4] (the dataset's size), got 9223372036854775807"),
    NEG(c_split, "Dataset split: n_first must be in [0, 4]"),
    NEG(c_fit_batch, "tfl_model_fit: m: batch_size must be >= 1 (0: 32)"),
    INT_NEG(c_fit_epochs, "tfl_model_fit: m: epochs must be >= 1"),
    ROW(c_fit_initial, INT_MAX,
        "initial_epoch in [0, epochs), got epochs 2, initial_epoch 2147483647"),
    INT_NEG(c_fit_initial, "initial_epoch in [0, epochs)"),
    INT_NEG(c_fit_callbacks, "callbacks given without an array"),
    NEG(c_evaluate, "batch_size must be at least 1"),
    NEG(c_predict, "batch_size must be at least 1"),
    INT_NEG(c_apply_n, "the number of variables is negative"),
    ROW(c_gradient_n, INT_MIN, "tape_gradient: n is -2147483648"),
    ROW(c_gradient_n, -1, "tape_gradient: n is -1"),
    /* optimizer options */
    NEG(c_opt_lr, "Adam: invalid learning_rate"),
    NEG(c_opt_decay, "Adam: the schedule's decay_steps must be > 0"),
    NEG(c_opt_warmup, "Adam: the schedule's warmup_steps"),
    NEG(c_opt_clip, "Adam: invalid clip_norm"),
};

/* ---- the runner ------------------------------------------------------------------------------ */

static void make_fix(fix *f)
{
    f->ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(f->ctx);
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *x =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, S(4, 2), (const float[]){1, 2, 3, 4, 5, 6, 7, 8});
    tfl_tensor *y = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, S(4), (const int32_t[]){0, 1, 2, 1});
    f->ds = tfl_dataset_from_arrays(ctx, x, y, NULL);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    f->m = tfl_model_new(ctx, "m");
    tfl_model_add(f->m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3});
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    f->opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(f->m, f->opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    assert_int_equal(tfl_model_build(f->m, 2, S(-1, 2)), TFL_OK);
    /* one step, so that the optimizer's slots exist before the counters are read */
    assert_int_equal(tfl_model_fit(f->m, f->ds, NULL, NULL), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
}

static bool check_case(const ovf_case *k)
{
    fix f;
    make_fix(&f);
    tfl_alloc_stats before, after;
    assert_int_equal(tfl_alloc_stats_get(f.ctx, NULL, &before), TFL_OK);
    assert_int_equal(tfl_frame_push(f.ctx), TFL_OK);
    bool produced = k->call(&f, k->v), ok = true;
    tfl_error e = tfl_ctx_error(f.ctx);
    if (produced || e.code != TFL_INVALID_ARGUMENT || !strstr(e.message, k->fragment)) {
        print_error("%s: produced %d, status %s, message '%s'; expected INVALID_ARGUMENT with "
                    "'%s'\n",
                    k->what, (int)produced, tfl_status_name(e.code), e.message, k->fragment);
        ok = false;
    }
    assert_int_equal(tfl_frame_pop(f.ctx), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(f.ctx, NULL, &after), TFL_OK);
    if (after.live_tensors != before.live_tensors || after.bytes_in_use != before.bytes_in_use) {
        print_error("%s: %lld tensor(s), %lld byte(s) left by a failed call\n", k->what,
                    (long long)(after.live_tensors - before.live_tensors),
                    (long long)(after.bytes_in_use - before.bytes_in_use));
        ok = false;
    }
    tfl_model_free(f.m);
    tfl_optimizer_free(f.opt);
    tfl_dataset_free(f.ds);
    assert_int_equal(tfl_alloc_stats_get(f.ctx, NULL, &after), TFL_OK);
    assert_int_equal(after.live_tensors, 0);
    tfl_ctx_free(f.ctx);
    return ok;
}

static void test_overflow_table(void **state)
{
    (void)state;
    size_t n = sizeof cases / sizeof *cases, failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += !check_case(&cases[i]);
    if (failed) fail_msg("%zu of %zu overflow cases failed (listed above)", failed, n);
}

/* The largest counts that are valid stay valid: one batch of everything. */
static void test_valid_edges(void **state)
{
    (void)state;
    fix f;
    make_fix(&f);
    assert_int_equal(tfl_dataset_batch(f.ds, INT64_MAX, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(f.ds), 1);
    assert_int_equal(tfl_frame_push(f.ctx), TFL_OK);
    tfl_tensor *x = NULL, *y = NULL;
    assert_int_equal(tfl_dataset_next(f.ds, &x, &y), TFL_OK);
    assert_int_equal(tfl_tensor_dim(x, 0), 4);
    double loss = NAN;
    assert_int_equal(tfl_model_evaluate(f.m, f.ds, INT64_MAX, &loss, NULL), TFL_OK);
    assert_true(isfinite(loss));
    tfl_tensor *p = tfl_model_predict(f.m, f.ds, INT64_MAX);
    assert_non_null(p);
    assert_int_equal(tfl_tensor_dim(p, 0), 4);
    /* SAME padding's output size for a height near INT64_MAX (it added height + stride) */
    tfl_layer *conv = tfl_layer_new(f.ctx, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D,
                                                             .units = 2,
                                                             .kernel_size = {1, 1},
                                                             .strides = {2, 2},
                                                             .padding = TFL_PADDING_SAME});
    int64_t out[8];
    assert_int_equal(tfl_layer_output_shape(conv, 4, S(-1, INT64_MAX, 5, 1), out), 4);
    assert_int_equal(out[1], P62);
    assert_int_equal(out[2], 3);
    tfl_layer_free(conv);
    assert_true(isnan(tfl_schedule_value(&(tfl_schedule){0}, 0.1, INT64_MIN)));
    assert_true(tfl_schedule_value(&(tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL,
                                                   .decay_steps = INT64_MAX,
                                                   .decay_rate = 0.5},
                                   0.1, INT64_MAX) == 0.05);
    assert_int_equal(tfl_frame_pop(f.ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(f.ctx), TFL_OK);
    tfl_model_free(f.m);
    tfl_optimizer_free(f.opt);
    tfl_dataset_free(f.ds);
    tfl_ctx_free(f.ctx);
}

/* Dataset options, field by field, before any file is read. */
static void test_dataset_opts_checked(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, S(3, 2));
    struct {
        tfl_dataset_opts o;
        const char *fragment;
    } arrays[] = {
        {{.header = true}, "Dataset from arrays: opts.header applies to CSV files only"},
        {{.label_column = -1}, "Dataset from arrays: opts.label_column applies to CSV files only"},
        {{.delimiter = ';'}, "opts.delimiter applies to CSV files only"},
        {{.scale = NAN}, "Dataset from arrays: opts.scale is nan; it must be finite"},
        {{.offset = -INFINITY}, "Dataset from arrays: opts.offset is -inf; it must be finite"},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
        assert_null(tfl_dataset_from_arrays(ctx, x, NULL, &arrays[i].o));
        tfl_error e = tfl_ctx_error(ctx);
        assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
        if (!strstr(e.message, arrays[i].fragment))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.message, arrays[i].fragment);
        tfl_ctx_clear_error(ctx);
    }
    /* checked before the file is opened: no NOT_FOUND for a path that does not exist */
    assert_null(tfl_dataset_from_idx(ctx, "/nonexistent/x.idx", NULL,
                                     &(tfl_dataset_opts){.no_labels = true}));
    assert_int_equal(tfl_ctx_error(ctx).code, TFL_INVALID_ARGUMENT);
    assert_non_null(
        strstr(tfl_ctx_error(ctx).message, "Dataset IDX: opts.no_labels applies to CSV"));
    tfl_ctx_clear_error(ctx);
    const char bad[] = {'-', '.', '7', 'e', '\n', '"'};
    for (size_t i = 0; i < sizeof bad; i++) {
        assert_null(tfl_dataset_from_csv(ctx, "/nonexistent/x.csv",
                                         &(tfl_dataset_opts){.delimiter = bad[i]}));
        assert_int_equal(tfl_ctx_error(ctx).code, TFL_INVALID_ARGUMENT);
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "Dataset CSV: opts.delimiter is"));
        tfl_ctx_clear_error(ctx);
    }
    /* a good delimiter gets as far as the file */
    assert_null(
        tfl_dataset_from_csv(ctx, "/nonexistent/x.csv", &(tfl_dataset_opts){.delimiter = ';'}));
    assert_int_equal(tfl_ctx_error(ctx).code, TFL_NOT_FOUND);
    tfl_tensor_release(x);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overflow_table),
        cmocka_unit_test(test_valid_edges),
        cmocka_unit_test(test_dataset_opts_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
