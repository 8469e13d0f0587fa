/* test_step_graphs.c: recorded steps (tfl_fit_opts.step_graphs). The test loads the fake GPU
 * module (tests/common/fake_gpu_module.c: a GPU:0 of host memory with the CPU's kernels, and
 * graphs that record the work and run it again at each launch, as CUDA's do), trains the same
 * models with and without recorded steps from the same seed, and checks that the losses of
 * every step and the final variables are the same bit for bit, that the steps the policy says
 * replay do, that what a replay would get wrong (Dropout) is refused with the reason, and that
 * the recording's memory goes back when fit returns. */
#include "fit_rig.h"

#include <math.h>
#include <unistd.h>

#ifndef TFL_FAKE_GPU_MODULE
#error "TFL_FAKE_GPU_MODULE (the path of libtfl_fake_gpu.so) must be defined"
#endif

enum { ROWS = 100, BATCH = 16, EPOCHS = 3, MAX_STEPS = 64 };

typedef enum { KEEP_NONE, KEEP_GRADIENT, KEEP_SNAPSHOT } keep_kind;

typedef struct run {
    double loss[MAX_STEPS];
    bool replayed[MAX_STEPS];
    int steps, replays;
    keep_kind keep;  /* what a callback keeps from step KEEP_AT to step KEEP_UNTIL */
    tfl_tensor *kept;
    float kept_then[64], kept_now[64];
    int64_t kept_n;
    float *vars;     /* every variable's values, in model order */
    int64_t n_vals;
    double loss_scale;
    char log[4096];  /* the INFO lines of fit */
} run;

enum { KEEP_AT = 4, KEEP_UNTIL = 9 }; /* 0-based steps: a replayed one, then three later */

static void values_of(tfl_tensor *t, float *dst, int64_t *n)
{
    *n = tfl_tensor_numel(t) < 64 ? tfl_tensor_numel(t) : 64;
    for (int64_t j = 0; j < *n; j++) {
        double d = NAN;
        assert_int_equal(tfl_tensor_get(t, j, &d), TFL_OK);
        dst[j] = (float)d;
    }
}

/* A gradient-accumulation hook's way: keep the first gradient of step KEEP_AT. */
static tfl_status on_gradients(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                               const tfl_step_logs *sl, void *user, bool *skip)
{
    (void)m, (void)n, (void)vars, (void)sl, (void)skip;
    run *r = user;
    if (r->keep == KEEP_GRADIENT && r->steps == KEEP_AT) {
        r->kept = tfl_tensor_retain(grads[0]);
        values_of(r->kept, r->kept_then, &r->kept_n);
    }
    return TFL_OK;
}

static tfl_status on_step(tfl_model *m, const tfl_step_logs *sl, void *user, bool *stop)
{
    (void)stop;
    run *r = user;
    tfl_step_logs now;
    tfl_status st = tfl_step_logs_read(m, sl, &now);
    if (st != TFL_OK || r->steps >= MAX_STEPS) return st;
    if (r->keep == KEEP_SNAPSHOT && r->steps == KEEP_AT) { /* as early stopping's best weights */
        tfl_tensor *v[32];
        int nv = tfl_model_variables(m, TFL_VARS_ALL, v, 32);
        for (int i = 0; i < nv && !r->kept; i++)
            if (strstr(tfl_variable_name(v[i]), "moving_mean"))
                r->kept = tfl_keep(tfl_variable_read(v[i]));
        assert_non_null(r->kept);
        values_of(r->kept, r->kept_then, &r->kept_n);
    }
    if (r->kept && r->steps == KEEP_UNTIL) { /* what was kept has not changed since */
        values_of(r->kept, r->kept_now, &r->kept_n);
        if (memcmp(r->kept_then, r->kept_now, sizeof(float) * (size_t)r->kept_n) != 0)
            fail_msg("a tensor kept at step %d changed by step %d: %.9g -> %.9g", KEEP_AT + 1,
                     KEEP_UNTIL + 1, (double)r->kept_then[0], (double)r->kept_now[0]);
        tfl_tensor_release(r->kept);
        r->kept = NULL;
    }
    r->loss[r->steps] = now.loss;
    r->replayed[r->steps++] = sl->replayed;
    r->replays += sl->replayed;
    return TFL_OK;
}

static void log_fn(void *user, tfl_log_level level, const char *msg)
{
    run *r = user;
    if (level == TFL_LOG_INFO && strstr(msg, "tfl_model_fit")) {
        size_t n = strlen(r->log);
        snprintf(r->log + n, sizeof r->log - n, "%s\n", msg);
    }
}

typedef enum { MLP, CNN_BN, DROPOUT, ATTENTION } model_kind;

static tfl_dataset *data(tfl_ctx *ctx, model_kind k)
{
    uint64_t seed = 7;
    if (k == ATTENTION) { /* windows of 6 characters of 11 kinds, next-character targets */
        char text[606];
        for (size_t i = 0; i < sizeof text; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int c = i % 3 == 2 ? (text[i - 1] - 'a' + 1) % 11 : (int)((seed >> 40) % 11);
            text[i] = (char)('a' + c);
        }
        char path[64];
        snprintf(path, sizeof path, "/tmp/tfl_step_graphs_%d.txt", (int)getpid());
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, sizeof text, f), sizeof text);
        assert_int_equal(fclose(f), 0);
        tfl_dataset *ds = tfl_dataset_from_text(
            ctx, path, &(tfl_text_opts){.context_length = 6, .tokens = TFL_TEXT_CHARS});
        remove(path); /* mapped: the data stays until the dataset goes */
        if (!ds) fail_msg("dataset: %s", tfl_ctx_error(ctx).message);
        assert_int_equal(tfl_dataset_size(ds), ROWS);
        assert_int_equal(tfl_dataset_num_classes(ds), 11);
        return ds;
    }
    int64_t feat = k == CNN_BN ? 8 * 8 : 12;
    float *x = malloc(sizeof(float) * ROWS * (size_t)feat);
    int32_t *y = malloc(sizeof(int32_t) * ROWS);
    assert_true(x && y);
    for (int i = 0; i < ROWS; i++) {
        y[i] = i % 3;
        for (int64_t d = 0; d < feat; d++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((seed >> 40) & 0xFFFF) / 65536.0f - 0.5f;
            x[feat * i + d] = (d % 3 == y[i] ? 0.7f : 0.0f) + u;
        }
    }
    return rows_dataset(ctx, ROWS, feat, x, y);
}

#define SPEC(...) (&(tfl_layer_spec){__VA_ARGS__})

static tfl_model *model(tfl_ctx *ctx, model_kind k)
{
    tfl_model *m = tfl_model_new(ctx, "m");
    assert_non_null(m);
    switch (k) {
    case MLP:
    case DROPOUT:
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 16, .activation = TFL_ACT_RELU));
        if (k == DROPOUT) tfl_model_add(m, SPEC(.kind = TFL_LAYER_DROPOUT, .rate = 0.25));
        break;
    case CNN_BN:
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_RESHAPE, .target_rank = 3,
                              .target_shape = {8, 8, 1}));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_CONV2D, .units = 4, .kernel_size = {3, 3},
                              .padding = TFL_PADDING_SAME));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_BATCH_NORM));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_ACTIVATION, .activation = TFL_ACT_RELU));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_MAX_POOL2D));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_FLATTEN));
        break;
    case ATTENTION:
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_EMBEDDING, .input_dim = 11, .units = 8));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_POSITION_EMBEDDING, .sequence_length = 6));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_LAYER_NORM));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2,
                              .causal = true));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 16, .activation = TFL_ACT_GELU));
        tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 11));
        return m;
    }
    assert_non_null(tfl_model_add(m, SPEC(.kind = TFL_LAYER_DENSE, .units = 3)));
    return m;
}

/* Trains model k on GPU:0 for EPOCHS epochs from seed 11, with or without recorded steps. */
static void train_keeping(model_kind k, tfl_precision policy, double loss_scale, bool graphs,
                          keep_kind keep, run *r)
{
    memset(r, 0, sizeof *r);
    r->keep = keep;
    tfl_ctx_opts co = {0};
    co.log_fn = log_fn;
    co.log_user = r;
    co.log_level = TFL_LOG_INFO;
    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(&co, &st);
    assert_non_null(ctx);
    assert_int_equal(tfl_ctx_set_seed(ctx, 11), TFL_OK);
    assert_int_equal(tfl_ctx_set_precision(ctx, policy), TFL_OK);
    tfl_alloc_stats before;
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &before), TFL_OK);
    tfl_dataset *ds = data(ctx, k);
    tfl_model *m = model(ctx, k);
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.01;
    o.loss_scale = loss_scale;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY),
                     TFL_OK);
    tfl_callback cb = {.on_step_end = on_step, .on_gradients = on_gradients, .user = r};
    tfl_fit_opts fo = {.epochs = EPOCHS, .batch_size = BATCH, .shuffle = true, .seed = 5,
                       .callbacks = &cb, .n_callbacks = 1, .step_graphs = graphs,
                       .sync_every = 4};
    if (tfl_model_fit(m, ds, &fo, NULL) != TFL_OK)
        fail_msg("fit: %s", tfl_ctx_error(ctx).message);
    tfl_tensor *v[32];
    int n = tfl_model_variables(m, TFL_VARS_ALL, v, 32);
    assert_true(n > 0 && n <= 32);
    r->n_vals = 0;
    for (int i = 0; i < n; i++) r->n_vals += tfl_tensor_numel(v[i]);
    r->vars = malloc(sizeof(float) * (size_t)r->n_vals);
    assert_non_null(r->vars);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        assert_string_equal(tfl_tensor_device(v[i]), "GPU:0");
        for (int64_t j = 0; j < tfl_tensor_numel(v[i]); j++) {
            double d = NAN;
            assert_int_equal(tfl_tensor_get(v[i], j, &d), TFL_OK);
            r->vars[at++] = (float)d;
        }
    }
    r->loss_scale = tfl_optimizer_loss_scale(opt);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
    /* the recording's blocks are back in the cache: as much memory in use as before */
    tfl_alloc_stats after;
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &after), TFL_OK);
    assert_int_equal(after.bytes_in_use, before.bytes_in_use);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

static void train(model_kind k, tfl_precision policy, double loss_scale, bool graphs, run *r)
{
    train_keeping(k, policy, loss_scale, graphs, KEEP_NONE, r);
}

static void same_runs(const run *a, const run *b, const char *what)
{
    assert_int_equal(a->steps, b->steps);
    for (int i = 0; i < a->steps; i++)
        if (memcmp(&a->loss[i], &b->loss[i], sizeof(double)) != 0)
            fail_msg("%s: step %d: loss %.17g with recorded steps, %.17g without", what, i + 1,
                     b->loss[i], a->loss[i]);
    assert_int_equal(a->n_vals, b->n_vals);
    for (int64_t i = 0; i < a->n_vals; i++)
        if (memcmp(&a->vars[i], &b->vars[i], sizeof(float)) != 0)
            fail_msg("%s: value %lld: %.9g with recorded steps, %.9g without", what, (long long)i,
                     (double)b->vars[i], (double)a->vars[i]);
}

/* 100 rows in batches of 16: six full batches and one of 4 an epoch. The first step builds the
 * model (its batch is on CPU:0, where the model has no variables yet), the second is the first
 * on GPU:0, the third is recorded (and runs as it is recorded), the fourth to sixth replay; the
 * last batch of each epoch runs plainly (another shape), and the full ones of the later epochs
 * replay. */
static int expected_replays(void) { return (6 - 3) + 6 * (EPOCHS - 1); }

static void check_model(model_kind k, const char *what)
{
    run plain, rec;
    train(k, TFL_PRECISION_FLOAT32, 0, false, &plain);
    train(k, TFL_PRECISION_FLOAT32, 0, true, &rec);
    assert_int_equal(plain.replays, 0);
    if (rec.replays != expected_replays()) {
        for (int i = 0; i < rec.steps; i++) print_message("%d", rec.replayed[i]);
        print_message("\n");
    }
    if (rec.replays != expected_replays())
        fail_msg("%s: %d steps replayed, expected %d; log:\n%s", what, rec.replays,
                 expected_replays(), rec.log);
    for (int i = 0; i < rec.steps; i++) /* an epoch's last, shorter batch never replays */
        if (i % 7 == 6) assert_false(rec.replayed[i]);
    assert_has(rec.log, "step recorded on GPU:0");
    same_runs(&plain, &rec, what);
    free(plain.vars);
    free(rec.vars);
}

/* Dense layers, Adam, sparse labels: the same losses and variables, 15 of 21 steps replayed. */
static void replays_an_mlp(void **state)
{
    (void)state;
    check_model(MLP, "mlp");
}

/* Convolution, BatchNormalization (its moving statistics assigned in place inside the
 * recorded pass), max-pooling. */
static void replays_a_cnn_with_batch_norm(void **state)
{
    (void)state;
    check_model(CNN_BN, "cnn");
}

/* Embeddings, LayerNormalization, causal attention, GELU, per-position losses. */
static void replays_attention(void **state)
{
    (void)state;
    check_model(ATTENTION, "attention");
}

/* Dropout draws new values every step: the recording is refused with the reason, every step
 * runs plainly and gives the results of a fit without recorded steps. */
static void refuses_dropout(void **state)
{
    (void)state;
    run plain, rec;
    train(DROPOUT, TFL_PRECISION_FLOAT32, 0, false, &plain);
    train(DROPOUT, TFL_PRECISION_FLOAT32, 0, true, &rec);
    assert_int_equal(rec.replays, 0);
    assert_has(rec.log, "tfl_model_fit: m: the step cannot be replayed: it draws random values "
                        "(Dropout); steps run op by op");
    same_runs(&plain, &rec, "dropout");
    free(plain.vars);
    free(rec.vars);
}

/* Mixed precision: bfloat16, and float16 with dynamic loss scaling from 2^24, where the first
 * steps overflow and are skipped, the scale halving each time: a new scale is a new key
 * (the gradients' seed), so those steps run plainly, and the steady ones replay. */
static void replays_mixed_precision(void **state)
{
    (void)state;
    run plain, rec;
    train(MLP, TFL_PRECISION_BFLOAT16, 0, false, &plain);
    train(MLP, TFL_PRECISION_BFLOAT16, 0, true, &rec);
    assert_int_equal(rec.replays, expected_replays());
    same_runs(&plain, &rec, "bfloat16");
    free(plain.vars);
    free(rec.vars);
    train(MLP, TFL_PRECISION_FLOAT16, 0x1p24, false, &plain);
    train(MLP, TFL_PRECISION_FLOAT16, 0x1p24, true, &rec);
    print_message("float16 from 2^24: %d of %d steps replayed, final scale %g\n", rec.replays,
                  rec.steps, rec.loss_scale);
    assert_true(plain.loss_scale < 0x1p24 && plain.loss_scale == rec.loss_scale);
    assert_true(rec.replays > 0 && rec.replays < expected_replays());
    same_runs(&plain, &rec, "float16");
    free(plain.vars);
    free(rec.vars);
}

/* What a callback keeps is never rewritten by a later replay: a gradient kept by an
 * on_gradients hook (a replay would write the next step's into it), a snapshot of
 * BatchNormalization's moving mean (the recorded pass assigns it in place, where a plain step
 * copies on write). While they are held the steps run plainly (and are recorded again); the
 * results are the plain run's bit for bit, and later steps replay again. */
static void kept_tensors_stay(void **state)
{
    (void)state;
    const keep_kind keeps[2] = {KEEP_GRADIENT, KEEP_SNAPSHOT};
    const model_kind kinds[2] = {MLP, CNN_BN};
    for (int i = 0; i < 2; i++) {
        run plain, rec;
        train_keeping(kinds[i], TFL_PRECISION_FLOAT32, 0, false, keeps[i], &plain);
        train_keeping(kinds[i], TFL_PRECISION_FLOAT32, 0, true, keeps[i], &rec);
        assert_true(rec.replayed[KEEP_AT]);         /* the step whose tensor was kept */
        assert_false(rec.replayed[KEEP_AT + 1]);    /* held: plain */
        assert_true(rec.replayed[KEEP_UNTIL + 2]);  /* released: recorded again, replayed */
        assert_true(rec.replays >= expected_replays() - 8);
        same_runs(&plain, &rec, i ? "snapshot" : "gradient");
        free(plain.vars);
        free(rec.vars);
    }
}

/* An MLP compiled with SGD, fit for `epochs` with recorded steps, steps counted in *r; fit's
 * status. The model and optimizer come back in *m and *opt for the caller to free. */
static tfl_status fit_sgd(tfl_ctx *ctx, tfl_dataset *ds, int epochs, run *r, tfl_model **m,
                          tfl_optimizer **opt)
{
    *m = model(ctx, MLP);
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    *opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(*m, *opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    memset(r, 0, sizeof *r);
    tfl_callback cb = {.on_step_end = on_step, .user = r};
    tfl_fit_opts fo = {.epochs = epochs, .batch_size = BATCH, .callbacks = &cb,
                       .n_callbacks = 1, .step_graphs = true};
    return tfl_model_fit(*m, ds, &fo, NULL);
}

/* A step that fails while it is recorded (a label out of range) fails fit with the op's
 * message and leaves nothing behind: the context runs ops as before, and every block of the
 * recording is back in the cache. */
static void failure_while_recording(void **state)
{
    (void)state;
    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    tfl_alloc_stats before;
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &before), TFL_OK);
    float *x = malloc(sizeof(float) * ROWS * 12);
    int32_t *y = malloc(sizeof(int32_t) * ROWS);
    assert_true(x && y);
    for (int i = 0; i < ROWS * 12; i++) x[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < ROWS; i++) y[i] = i == 2 * BATCH + 5 ? 7 : i % 3; /* the third batch */
    tfl_dataset *ds = rows_dataset(ctx, ROWS, 12, x, y);
    tfl_model *m;
    tfl_optimizer *opt;
    run r;
    assert_int_equal(fit_sgd(ctx, ds, 1, &r, &m, &opt), TFL_INVALID_ARGUMENT);
    assert_int_equal(r.steps, 2); /* the third step, the one recorded, failed */
    assert_has(tfl_ctx_error(ctx).message, "7");
    tfl_ctx_clear_error(ctx);
    /* ops run plainly again: an evaluation on GPU:0 */
    double loss = NAN;
    tfl_dataset *good = data(ctx, MLP);
    assert_int_equal(tfl_model_evaluate(m, good, BATCH, &loss, NULL), TFL_OK);
    assert_true(isfinite(loss));
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
    tfl_dataset_free(good);
    tfl_alloc_stats after;
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &after), TFL_OK);
    assert_int_equal(after.bytes_in_use, before.bytes_in_use);
    tfl_ctx_free(ctx);
}

/* On the CPU there is nothing to record (its kernels run as they are called): the option
 * changes nothing. */
static void cpu_steps_stay_plain(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    tfl_dataset *ds = data(ctx, MLP);
    tfl_model *m;
    tfl_optimizer *opt;
    run r;
    assert_int_equal(fit_sgd(ctx, ds, 2, &r, &m, &opt), TFL_OK);
    assert_int_equal(r.steps, 14);
    assert_int_equal(r.replays, 0);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
}

int main(void)
{
    /* every context of this test has the fake GPU:0 */
    if (setenv("TFL_GPU_MODULE", TFL_FAKE_GPU_MODULE, 1) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replays_an_mlp),
        cmocka_unit_test(replays_a_cnn_with_batch_norm),
        cmocka_unit_test(replays_attention),
        cmocka_unit_test(refuses_dropout),
        cmocka_unit_test(replays_mixed_precision),
        cmocka_unit_test(kept_tensors_stay),
        cmocka_unit_test(failure_while_recording),
        cmocka_unit_test_setup_teardown(cpu_steps_stay_plain, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
