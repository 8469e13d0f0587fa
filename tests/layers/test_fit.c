/* test_fit.c: tfl_model_fit end to end on small synthetic problems (classification to
 * near-zero loss, a linear regression to its exact weights), reproducibility, history,
 * the built-in callbacks (early stopping with restored weights, CSV log, checkpoint hook),
 * callback errors, progress lines, and fit's option and state errors. */
#include "test_fixture.h"

#include <math.h>
#include <pthread.h>
#include <pty.h>
#include <unistd.h>

/* Three well-separated blobs in 2-D: n points, labels 0..2. */
static tfl_dataset *blobs(tfl_ctx *ctx, int n, uint64_t seed)
{
    float *x = malloc(sizeof(float) * 2 * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    static const float cx[3] = {-3, 3, 0}, cy[3] = {-2, -2, 3};
    uint64_t s = seed;
    for (int i = 0; i < n; i++) {
        y[i] = i % 3;
        for (int d = 0; d < 2; d++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((s >> 40) & 0xFFFF) / 65536.0f - 0.5f;
            x[2 * i + d] = (d ? cy : cx)[y[i]] + u;
        }
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){n, 2}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){n}, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    free(x);
    free(y);
    assert_non_null(ds);
    return ds;
}

static tfl_optimizer *last_opt; /* classifier()'s, freed by drop() */

/* Frees a model and its optimizer (the fixture counts live tensors before freeing the ctx). */
static void drop(tfl_model *m)
{
    tfl_model_free(m);
    tfl_optimizer_free(last_opt);
    last_opt = NULL;
}

static tfl_model *classifier(tfl_ctx *ctx, double lr)
{
    tfl_model *m = tfl_model_new(ctx, NULL);
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 16,
                                                       .activation = TFL_ACT_RELU}));
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = lr;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    last_opt = opt;
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY), TFL_OK);
    return m;
}

static void fits_to_near_zero_loss(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 96, 7);
    tfl_model *m = classifier(ctx, 0.05);
    tfl_epoch_logs logs[60];
    tfl_history h = {logs, 60, 0};
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 60, .batch_size = 16,
                                                             .shuffle = true, .seed = 3,
                                                             .validation = train},
                                   &h),
                     TFL_OK);
    assert_int_equal(h.count, 60);
    assert_true(logs[0].loss > 0.3);         /* it starts far off ... */
    assert_true(logs[59].loss < 0.01);       /* ... and ends near zero */
    assert_true(logs[59].accuracy == 1.0);
    assert_true(logs[59].val_loss < 0.01);
    for (int e = 0; e < 60; e++) {
        assert_int_equal(logs[e].epoch, e);
        assert_int_equal(logs[e].epochs, 60);
        assert_int_equal(logs[e].samples, 96);
    }
    double loss, acc;
    assert_int_equal(tfl_model_evaluate(m, train, 7, &loss, &acc), TFL_OK);
    assert_true(fabs(loss - logs[59].val_loss) < 1e-6); /* any batch size: the same mean */
    assert_true(acc == 1.0);
    drop(m);
    tfl_dataset_free(train);
}

/* y = 2 x0 - 3 x1 + 1 with a linear Dense(1) and MSE: the weights come out exact. */
static void regression_finds_the_weights(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { N = 64 };
    float x[N * 2];
    int32_t y_unused[N];
    (void)y_unused;
    for (int i = 0; i < N; i++) {
        x[2 * i] = (float)(i % 8) / 4.0f - 1.0f;
        x[2 * i + 1] = (float)(i / 8) / 4.0f - 1.0f;
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){N, 2}, x);
    tfl_model *m = tfl_model_new(ctx, "linear");
    tfl_layer *d = tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 1});
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.1;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_MEAN_SQUARED_ERROR, 0), TFL_OK);
    /* a hand-written loop over the whole batch (test_dataset_targets.c fits from datasets) */
    float target[N];
    for (int i = 0; i < N; i++) target[i] = 2 * x[2 * i] - 3 * x[2 * i + 1] + 1;
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){N, 1}, target);
    double last = 0;
    for (int step = 0; step < 300; step++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tensor *pred = tfl_model_call(m, tx, true);
        tfl_tensor *loss = tfl_reduce_mean(
            ctx, tfl_loss_per_example(ctx, TFL_LOSS_MEAN_SQUARED_ERROR, pred, ty), 0, NULL, false);
        tfl_tensor *vars[2], *grads[2];
        assert_int_equal(tfl_model_variables(m, TFL_VARS_TRAINABLE, vars, 2), 2);
        assert_int_equal(tfl_tape_gradient(tape, loss, 2, (const tfl_tensor *const *)vars, grads, 0),
                         TFL_OK);
        tfl_tape_free(tape);
        assert_int_equal(tfl_optimizer_apply(opt, 2, vars, grads), TFL_OK);
        assert_int_equal(tfl_tensor_get(loss, 0, &last), TFL_OK);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    assert_true(last < 1e-8);
    tfl_tensor *vars[2];
    tfl_layer_variables(d, TFL_VARS_ALL, vars, 2);
    double w0, w1, b;
    tfl_tensor_get(vars[0], 0, &w0);
    tfl_tensor_get(vars[0], 1, &w1);
    tfl_tensor_get(vars[1], 0, &b);
    assert_true(fabs(w0 - 2) < 1e-3 && fabs(w1 + 3) < 1e-3 && fabs(b - 1) < 1e-3);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
}

/* The same ctx seed, data and options give bit-identical losses; another seed does not. */
static void same_seed_same_losses(void **state)
{
    (void)state;
    double run[3][8];
    for (int r = 0; r < 3; r++) {
        tfl_status st;
        tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = r < 2 ? 11 : 12, .num_threads = 1 + r % 2},
                                   &st);
        assert_non_null(ctx);
        tfl_dataset *train = blobs(ctx, 60, 5);
        tfl_model *m = classifier(ctx, 0.01);
        tfl_epoch_logs logs[8];
        tfl_history h = {logs, 8, 0};
        assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 8, .batch_size = 8,
                                                                 .shuffle = true},
                                       &h),
                         TFL_OK);
        for (int e = 0; e < 8; e++) run[r][e] = logs[e].loss;
        tfl_ctx_free(ctx); /* frees the model, optimizer and dataset */
    }
    assert_memory_equal(run[0], run[1], sizeof run[0]); /* 1 and 2 threads agree too */
    assert_true(memcmp(run[0], run[2], sizeof run[0]) != 0);
}

/* ---- callbacks ------------------------------------------------------------------------------ */

typedef struct recorder {
    int begins, epochs, ends;
    double first_kernel[32];   /* dense/kernel after each epoch's update, epoch 0 kept */
    double kernels[20][32];
    tfl_status fail_at_epoch;  /* return this status at epoch 2 when not OK */
} recorder;

static tfl_status rec_begin(tfl_model *m, void *user)
{
    (void)m;
    ((recorder *)user)->begins++;
    return TFL_OK;
}

static tfl_status rec_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)stop;
    recorder *r = user;
    tfl_tensor *k = NULL;
    tfl_model_variables(m, TFL_VARS_ALL, &k, 1);
    for (int i = 0; i < 32; i++) tfl_tensor_get(k, i, &r->kernels[lg->epoch][i]);
    r->epochs++;
    if (lg->epoch == 2 && r->fail_at_epoch != TFL_OK) return r->fail_at_epoch;
    return TFL_OK;
}

static tfl_status rec_end(tfl_model *m, const tfl_epoch_logs *last, void *user)
{
    (void)m;
    (void)last;
    ((recorder *)user)->ends++;
    return TFL_OK;
}

static void early_stopping_restores_the_best(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.01);
    recorder rec = {0};
    /* min_delta so large that only the first epoch counts as an improvement */
    tfl_early_stopping es = {.monitor = "loss", .min_delta = 100, .patience = 2,
                             .restore_best_weights = true};
    tfl_callback cbs[2] = {{.on_train_begin = rec_begin, .on_epoch_end = rec_epoch, .on_train_end = rec_end, .user = &rec},
                           tfl_early_stopping_callback(&es)};
    tfl_history h = {NULL, 0, 0};
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 20, .batch_size = 10,
                                                             .callbacks = cbs, .n_callbacks = 2},
                                   &h),
                     TFL_OK);
    /* epoch 0 sets best; epochs 1 and 2 do not improve: patience 2 stops after epoch 2 */
    assert_int_equal(h.count, 3);
    assert_int_equal(rec.begins, 1);
    assert_int_equal(rec.epochs, 3);
    assert_int_equal(rec.ends, 1);
    assert_int_equal(es.best_epoch, 0);
    assert_int_equal(es.stopped_epoch, 2);
    assert_null(es.saved);
    /* the weights are epoch 0's again, not epoch 2's */
    tfl_tensor *k = NULL;
    tfl_model_variables(m, TFL_VARS_ALL, &k, 1);
    for (int i = 0; i < 32; i++) {
        double v;
        tfl_tensor_get(k, i, &v);
        assert_true(v == rec.kernels[0][i]);
    }
    assert_true(memcmp(rec.kernels[0], rec.kernels[2], sizeof rec.kernels[0]) != 0);
    /* an unknown monitor is refused before training */
    tfl_early_stopping bad = {.monitor = "val_los"};
    tfl_callback cb = tfl_early_stopping_callback(&bad);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "unknown monitor 'val_los'");
    tfl_ctx_clear_error(ctx);
    /* val_loss without validation data is named */
    tfl_early_stopping noval = {0};
    cb = tfl_early_stopping_callback(&noval);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(ctx).message, "the monitored 'val_loss' was not measured");
    tfl_ctx_clear_error(ctx);
    drop(m);
    tfl_dataset_free(train);
}

static void a_failing_callback_stops_fit(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.01);
    recorder rec = {.fail_at_epoch = TFL_UNAVAILABLE};
    tfl_callback cb = {.on_train_begin = rec_begin, .on_epoch_end = rec_epoch,
                       .on_train_end = rec_end, .user = &rec};
    tfl_history h = {NULL, 0, 0};
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 9, .callbacks = &cb,
                                                             .n_callbacks = 1},
                                   &h),
                     TFL_UNAVAILABLE);
    assert_int_equal(rec.epochs, 3);
    assert_int_equal(rec.ends, 1); /* train_end still runs */
    assert_int_equal(h.count, 3);
    drop(m);
    tfl_dataset_free(train);
}

static void csv_log_lines(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char path[] = "/tmp/tfl_fit_csv_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.01);
    tfl_epoch_logs logs[3];
    tfl_history h = {logs, 3, 0};
    tfl_csv_logger log = {.path = path};
    tfl_callback cb = tfl_csv_logger_callback(&log);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 3, .validation = train,
                                                             .callbacks = &cb, .n_callbacks = 1},
                                   &h),
                     TFL_OK);
    log.append = true; /* a second fit appends without a second header */
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 1, .callbacks = &cb,
                                                             .n_callbacks = 1},
                                   NULL),
                     TFL_OK);
    assert_null(log.file);
    FILE *f = fopen(path, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "epoch,loss,accuracy,val_loss,val_accuracy,seconds\n");
    for (int e = 0; e < 3; e++) {
        int ep;
        double loss, acc, vl, va, sec;
        assert_non_null(fgets(line, sizeof line, f));
        assert_int_equal(sscanf(line, "%d,%lf,%lf,%lf,%lf,%lf", &ep, &loss, &acc, &vl, &va, &sec),
                         6);
        assert_int_equal(ep, e);
        assert_true(fabs(loss - logs[e].loss) <= 1e-8 * fabs(loss));
        assert_true(fabs(va - logs[e].val_accuracy) <= 1e-8);
    }
    assert_non_null(fgets(line, sizeof line, f)); /* no validation: two empty fields */
    int ep;
    double loss, acc;
    assert_int_equal(sscanf(line, "%d,%lf,%lf,,,", &ep, &loss, &acc), 3);
    assert_has(line, ",,,");
    assert_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
    /* a path that cannot be opened stops fit before any epoch, naming it */
    tfl_csv_logger bad = {.path = "/nonexistent-dir/log.csv"};
    cb = tfl_csv_logger_callback(&bad);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(ctx).message, "cannot open '/nonexistent-dir/log.csv'");
    tfl_ctx_clear_error(ctx);
    drop(m);
    tfl_dataset_free(train);
}

typedef struct saves {
    int n;
    char paths[8][64];
} saves;

static tfl_status save_fn(tfl_model *m, const char *path, void *user)
{
    (void)m;
    saves *s = user;
    snprintf(s->paths[s->n++], sizeof s->paths[0], "%s", path);
    return TFL_OK;
}

static void checkpoint_hook_paths(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.05);
    saves s = {0};
    tfl_checkpoint_hook hook = {.path_template = "ck/{epoch}/model-{epoch}.st", .every = 2,
                                .save = save_fn, .user = &s};
    tfl_callback cb = tfl_checkpoint_callback(&hook);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 5, .callbacks = &cb,
                                                             .n_callbacks = 1},
                                   NULL),
                     TFL_OK);
    assert_int_equal(s.n, 2); /* after epochs 2 and 4 */
    assert_string_equal(s.paths[0], "ck/2/model-2.st");
    assert_string_equal(s.paths[1], "ck/4/model-4.st");
    assert_int_equal(hook.saved, 2);
    /* save_best_only on "loss" (which falls every epoch here at lr 0.05) and "accuracy" */
    saves best = {0};
    tfl_checkpoint_hook bh = {.path_template = "best-{epoch}", .save_best_only = true,
                              .monitor = "loss", .save = save_fn, .user = &best};
    cb = tfl_checkpoint_callback(&bh);
    tfl_epoch_logs logs[4];
    tfl_history h = {logs, 4, 0};
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 4, .callbacks = &cb,
                                                             .n_callbacks = 1},
                                   &h),
                     TFL_OK);
    int expect = 0;
    double lowest = INFINITY;
    for (int e = 0; e < 4; e++)
        if (logs[e].loss < lowest) {
            lowest = logs[e].loss;
            char want[32];
            snprintf(want, sizeof want, "best-%d", e + 1);
            assert_string_equal(best.paths[expect++], want);
        }
    assert_int_equal(best.n, expect);
    drop(m);
    tfl_dataset_free(train);
}

/* ---- progress, errors ---------------------------------------------------------------------- */

static void progress_lines_when_not_a_terminal(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.01);
    FILE *out = tmpfile();
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 2, .validation = train,
                                                             .progress = out},
                                   NULL),
                     TFL_OK);
    rewind(out);
    char line[256];
    for (int e = 1; e <= 2; e++) {
        assert_non_null(fgets(line, sizeof line, out));
        char want[32];
        snprintf(want, sizeof want, "epoch %d/2 - ", e);
        assert_int_equal(strncmp(line, want, strlen(want)), 0);
        assert_has(line, " samples/s - loss: ");
        assert_has(line, " - accuracy: ");
        assert_has(line, " - val_loss: ");
        assert_has(line, " - val_accuracy: ");
        assert_null(strchr(line, '\r')); /* no bar redraws in a file */
    }
    assert_null(fgets(line, sizeof line, out));
    fclose(out);
    drop(m);
    tfl_dataset_free(train);
}

/* Drains a pseudo-terminal's master side while fit writes to the slave: a terminal's buffer
 * is a few KiB, and a writer nobody reads blocks once it is full (more redraws, on a slower
 * device or machine, would otherwise hang the test). */
typedef struct tty_reader {
    int fd;
    char text[1 << 16];
    size_t n;
} tty_reader;

static void *drain_tty(void *arg)
{
    tty_reader *r = arg;
    char sink[4096];
    for (;;) {
        bool full = r->n >= sizeof r->text - 1;
        ssize_t got = full ? read(r->fd, sink, sizeof sink)
                           : read(r->fd, r->text + r->n, sizeof r->text - 1 - r->n);
        if (got <= 0) break; /* EIO once the slave side is closed */
        if (!full) r->n += (size_t)got;
    }
    r->text[r->n] = 0;
    return NULL;
}

/* On a terminal: a header per epoch, a bar redrawn in place with ETA, samples/s and the
 * running loss, then the epoch's line over it. */
static void progress_bar_on_a_terminal(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    int master, slave;
    assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
    static tty_reader reader;
    reader.fd = master;
    reader.n = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_tty, &reader), 0);
    FILE *out = fdopen(slave, "w");
    assert_non_null(out);
    tfl_dataset *train = blobs(ctx, 3000, 9);
    tfl_model *m = classifier(ctx, 0.01);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 1, .batch_size = 1,
                                                             .progress = out},
                                   NULL),
                     TFL_OK);
    fclose(out);
    assert_int_equal(pthread_join(th, NULL), 0);
    close(master);
    const char *text = reader.text;
    assert_int_equal(strncmp(text, "epoch 1/1\r\n", 11), 0); /* the tty turns \n into \r\n */
    assert_has(text, "/3000 [");
    assert_has(text, "] - ETA ");
    assert_has(text, " samples/s - loss: ");
    assert_has(text, "\033[K");                         /* each redraw clears the line's rest */
    assert_has(text, "\r\033[Kepoch 1/1 - ");           /* the summary line replaces the bar */
    assert_has(text, " - accuracy: ");
    drop(m);
    tfl_dataset_free(train);
}

/* A batch size of 0 is TFL_DEFAULT_BATCH_SIZE (Keras's 32) in fit, evaluate and predict. */
static void default_batch_size(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(TFL_DEFAULT_BATCH_SIZE, 32);
    tfl_dataset *train = blobs(ctx, 100, 3);
    tfl_model *m = classifier(ctx, 0.01);
    tfl_epoch_logs logs[1];
    tfl_history h = {logs, 1, 0};
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 1}, &h), TFL_OK);
    assert_int_equal(logs[0].samples, 100);
    assert_int_equal(tfl_dataset_num_batches(train), 4); /* 32, 32, 32, 4 */
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.batch_size = 50}, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(train), 2);
    double loss;
    assert_int_equal(tfl_model_evaluate(m, train, 0, &loss, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(train), 4);
    tfl_frame_push(ctx);
    tfl_tensor *p = tfl_model_predict(m, train, 0);
    assert_non_null(p);
    assert_int_equal(tfl_tensor_shape(p)[0], 100);
    assert_int_equal(tfl_dataset_num_batches(train), 4);
    tfl_frame_pop(ctx);
    drop(m);
    tfl_dataset_free(train);
}

static void fit_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = tfl_model_new(ctx, "bare");
    assert_int_equal(tfl_model_fit(m, train, NULL, NULL), TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(ctx).message, "bare has no layers");
    tfl_ctx_clear_error(ctx);
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3});
    assert_int_equal(tfl_model_fit(m, train, NULL, NULL), TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(ctx).message, "bare has no loss: call tfl_model_compile first");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_compile(m, NULL, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    assert_int_equal(tfl_model_fit(m, train, NULL, NULL), TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(ctx).message, "bare has no optimizer");
    tfl_ctx_clear_error(ctx);
    double loss; /* evaluate works without an optimizer */
    assert_int_equal(tfl_model_evaluate(m, train, 0, &loss, NULL), TFL_OK);
    assert_true(loss > 0 && isfinite(loss));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = 2, .initial_epoch = 2},
                                   NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "got epochs 2, initial_epoch 2");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.batch_size = -1}, NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "batch_size must be >= 1 (0: 32), got -1");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_fit(m, NULL, NULL, NULL), TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "the dataset is NULL");
    tfl_ctx_clear_error(ctx);
    /* labels beyond the model's 3 classes: the step's error, variables untouched */
    tfl_dataset *wide = blobs(ctx, 30, 9);
    tfl_model *m2 = tfl_model_new(ctx, "two");
    tfl_model_add(m2, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2});
    tfl_model_compile(m2, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0);
    assert_int_equal(tfl_model_fit(m2, wide, &(tfl_fit_opts){.batch_size = 30}, NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "Received a label value of 2 which is outside the "
                                           "valid range of [0, 2)");
    tfl_ctx_clear_error(ctx);
    double it = -1;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(opt), 0, &it), TFL_OK);
    assert_true(it == 0);
    tfl_model_free(m);
    tfl_model_free(m2);
    tfl_optimizer_free(opt);
    tfl_dataset_free(train);
    tfl_dataset_free(wide);
}

/* Bad validation data, an empty epoch and NULL callback settings are refused before any
 * step: the variables and the step counter stay as they were. */
static void checks_before_training(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *train = blobs(ctx, 30, 9);
    tfl_model *m = classifier(ctx, 0.01);
    tfl_tensor *x3 = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){4, 3});
    tfl_tensor *y4 = tfl_zeros(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){4});
    tfl_dataset *wide = tfl_dataset_from_arrays(ctx, x3, y4, NULL);
    tfl_tensor_release(y4);
    tfl_dataset *unlabelled = tfl_dataset_from_arrays(ctx, x3, NULL, NULL);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.validation = unlabelled}, NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "tfl_model_fit: validation: sequential: the dataset "
                                           "has no labels");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.validation = wide}, NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "validation examples of shape (3,) do not match the "
                                           "training examples' (2,)");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.batch_size = 31,
                                                             .drop_remainder = true},
                                   NULL),
                     TFL_INVALID_ARGUMENT);
    assert_has(tfl_ctx_error(ctx).message, "the training data gives no batch (30 examples, "
                                           "batch_size 31, drop_remainder)");
    tfl_ctx_clear_error(ctx);
    tfl_callback cbs[3] = {tfl_early_stopping_callback(NULL), tfl_csv_logger_callback(NULL),
                           tfl_checkpoint_callback(NULL)};
    const char *msgs[3] = {"early stopping: the callback's settings are NULL",
                           "CSV logger: the logger is NULL", "checkpoint hook: needs a"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tfl_model_fit(m, train, &(tfl_fit_opts){.callbacks = &cbs[i],
                                                                 .n_callbacks = 1},
                                       NULL),
                         TFL_INVALID_ARGUMENT);
        assert_has(tfl_ctx_error(ctx).message, msgs[i]);
        tfl_ctx_clear_error(ctx);
    }
    double it = -1;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(last_opt), 0, &it), TFL_OK);
    assert_true(it == 0);
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, NULL, 0), 0); /* nothing built */
    tfl_tensor_release(x3);
    drop(m);
    tfl_dataset_free(train);
    tfl_dataset_free(wide);
    tfl_dataset_free(unlabelled);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fits_to_near_zero_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(regression_finds_the_weights, setup, teardown),
        cmocka_unit_test(same_seed_same_losses),
        cmocka_unit_test_setup_teardown(early_stopping_restores_the_best, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failing_callback_stops_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(csv_log_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(checkpoint_hook_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(progress_lines_when_not_a_terminal, setup, teardown),
        cmocka_unit_test_setup_teardown(progress_bar_on_a_terminal, setup, teardown),
        cmocka_unit_test_setup_teardown(default_batch_size, setup, teardown),
        cmocka_unit_test_setup_teardown(fit_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(checks_before_training, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
