/* test_tensorboard.c: the TensorBoard callback of tfl_model_fit. Step scalars (loss, learning
 * rate, global gradient norm, samples/s) at the right global steps with the values the fit
 * loop saw; epoch figures in train/ and validation/; histograms of weights and gradients;
 * SessionLog{START} at the first step of a run and of a resumed run; the files flushed at
 * every epoch end; nothing written when disabled; errors. */
#include "fit_rig.h"

#include <math.h>

#include "tfl_events_util.h"

/* n points in [0, 1) labelled by which half they are in, for a two-unit Dense classifier. */
static tfl_dataset *line(tfl_ctx *ctx, int n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)i / (float)n;
        y[i] = 2 * i >= n;
    }
    return rows_dataset(ctx, n, 1, x, y);
}

static rig make_rig(tfl_ctx *ctx, int n)
{
    rig r = {tfl_model_new(ctx, NULL), NULL, line(ctx, n)};
    assert_non_null(tfl_model_add(r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.5;
    o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = 1,
                                .decay_rate = 0.9};
    r.opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(r.opt);
    assert_int_equal(tfl_model_compile(r.m, r.opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY), TFL_OK);
    return r;
}

/* What a callback placed before TensorBoard's saw at each step (1-based fit steps). */
typedef struct seen {
    tfl_optimizer *opt;
    double loss[64], lr[64], norm[64];
    const char *train_dir;    /* set: on_epoch_end (after TensorBoard's) reads the train file */
    int on_disk[8];           /* epoch/loss events in the file at each epoch's end */
} seen;

static tfl_status see_grads(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                            const tfl_step_logs *lg, void *user, bool *skip)
{
    (void)m;
    (void)vars;
    (void)skip;
    seen *s = user;
    double sq = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = tfl_tensor_numel(grads[i]);
        for (int64_t j = 0; j < k; j++) {
            double v;
            assert_int_equal(tfl_tensor_get(grads[i], j, &v), TFL_OK);
            sq += v * v;
        }
    }
    assert_true(lg->step < 64);
    s->norm[lg->step] = sqrt(sq);
    s->lr[lg->step] = tfl_optimizer_learning_rate(s->opt);
    s->loss[lg->step] = lg->loss;
    return TFL_OK;
}

static tfl_status see_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)m;
    (void)stop;
    seen *s = user;
    if (!s->train_dir) return TFL_OK;
    char path[1024];
    assert_int_equal(event_files(s->train_dir, path, sizeof path), 1);
    ev_table *t = malloc(sizeof *t);
    collect_events(tfl_event_reader_open(tfl_model_ctx(m), path), t);
    int k = 0;
    for (int i = 0; (i = find_event(t, i, TFL_EVENT_SCALAR, "epoch/loss")) >= 0; i++) k++;
    s->on_disk[lg->epoch] = k;
    free(t);
    return TFL_OK;
}

/* the value of the scalar `tag` at `step` in t (asserts that there is exactly one) */
static double scalar_at(const ev_table *t, const char *tag, int64_t step)
{
    int found = -1, count = 0;
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].kind == TFL_EVENT_SCALAR && t->ev[i].step == step &&
            !strcmp(t->ev[i].tag, tag)) {
            found = i;
            count++;
        }
    if (count != 1) print_error("%d scalars '%s' at step %lld\n", count, tag, (long long)step);
    assert_int_equal(count, 1);
    return t->ev[found].value;
}

static int count_tag(const ev_table *t, tfl_event_kind kind, const char *tag)
{
    int k = 0;
    for (int i = 0; (i = find_event(t, i, kind, tag)) >= 0; i++) k++;
    return k;
}

static void read_dir(tfl_ctx *ctx, const char *dir, const char *sub, ev_table *t, int nth)
{
    char d[600], path[1024];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    /* the nth file by name (0: the first): a resumed run's file sorts after the first's */
    assert_true(event_files(d, path, sizeof path) > nth);
    if (nth) {
        DIR *dd = opendir(d);
        char names[4][256];
        int n = 0;
        struct dirent *e;
        while ((e = readdir(dd)) && n < 4)
            if (!strncmp(e->d_name, "events.out.tfevents.", 20))
                snprintf(names[n++], sizeof names[0], "%s", e->d_name);
        closedir(dd);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (strcmp(names[j], names[i]) < 0) {
                    char tmp[256];
                    memcpy(tmp, names[i], sizeof tmp);
                    memcpy(names[i], names[j], sizeof tmp);
                    memcpy(names[j], tmp, sizeof tmp);
                }
        snprintf(path, sizeof path, "%s/%s", d, names[nth]);
    }
    collect_events(tfl_event_reader_open(ctx, path), t);
    assert_int_equal(t->end, TFL_OUT_OF_RANGE);
    assert_int_equal(t->truncated, 0);
}

/* 40 examples in batches of 8: 5 steps an epoch; 2 epochs; step scalars every 2 steps. */
static void test_logs_steps_and_epochs(void **state)
{
    fixture *f = *state;
    char dir[256], train_dir[300];
    temp_dir(dir, sizeof dir, "tb");
    snprintf(train_dir, sizeof train_dir, "%s/train", dir);
    rig r = make_rig(f->ctx, 40);
    seen s = {.opt = r.opt, .train_dir = train_dir};
    tfl_tensorboard tb = {.logdir = dir, .every_steps = 2, .histograms = true,
                          .text = "epochs: 2\nbatch_size: 8",
                          .writer = {.flush_secs = -1}}; /* flushed at epoch ends only */
    tfl_callback cbs[3] = {{.on_gradients = see_grads, .user = &s},
                           tfl_tensorboard_callback(&tb),
                           {.on_epoch_end = see_epoch, .user = &s}};
    tfl_epoch_logs logs[2];
    tfl_history h = {logs, 2, 0};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 8,
                                                              .validation = r.ds,
                                                              .callbacks = cbs,
                                                              .n_callbacks = 3}, &h), TFL_OK);
    assert_null(tb.train);
    assert_null(tb.validation);
    /* flushed at each epoch end: the epoch's figures were in the file when it ended */
    assert_int_equal(s.on_disk[0], 1);
    assert_int_equal(s.on_disk[1], 2);

    ev_table *t = malloc(sizeof *t);
    read_dir(f->ctx, dir, "train", t, 0);
    assert_int_equal(t->ev[0].kind, TFL_EVENT_FILE_VERSION);
    assert_int_equal(t->ev[1].kind, TFL_EVENT_SESSION_LOG);
    assert_int_equal(t->ev[1].session_status, TFL_SESSION_START);
    assert_int_equal(t->ev[1].step, 1);
    assert_int_equal(t->ev[2].kind, TFL_EVENT_TEXT);
    assert_string_equal(t->ev[2].tag, "config");
    assert_string_equal(t->ev[2].text, "epochs: 2\nbatch_size: 8");
    /* step scalars at steps 2, 4, 6, 8, 10 only, with the values of those steps */
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/loss"), 5);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/learning_rate"), 5);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/grad_norm"), 5);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/samples_per_second"), 5);
    for (int64_t step = 2; step <= 10; step += 2) {
        assert_true(scalar_at(t, "step/loss", step) == (double)(float)s.loss[step]);
        assert_true(scalar_at(t, "step/learning_rate", step) == (double)(float)s.lr[step]);
        double lr_want = 0.5 * pow(0.9, (double)(step - 1)); /* the apply of step k: s = k - 1 */
        assert_true(fabs(scalar_at(t, "step/learning_rate", step) - lr_want) < 1e-6);
        double norm = scalar_at(t, "step/grad_norm", step);
        assert_true(norm > 0 && fabs(norm - s.norm[step]) <= 1e-5 * s.norm[step]);
        assert_true(scalar_at(t, "step/samples_per_second", step) > 0);
    }
    /* epoch figures at the global step of each epoch's end */
    for (int e = 0; e < 2; e++) {
        assert_true(scalar_at(t, "epoch/loss", 5 * (e + 1)) == (double)(float)logs[e].loss);
        assert_true(scalar_at(t, "epoch/accuracy", 5 * (e + 1)) == (double)(float)logs[e].accuracy);
    }
    /* histograms: weights at epoch ends, gradients at each epoch's last step */
    assert_int_equal(count_tag(t, TFL_EVENT_HISTOGRAM, "weights/dense/kernel"), 2);
    assert_int_equal(count_tag(t, TFL_EVENT_HISTOGRAM, "weights/dense/bias"), 2);
    assert_int_equal(count_tag(t, TFL_EVENT_HISTOGRAM, "gradients/dense/kernel"), 2);
    int hk = find_event(t, 0, TFL_EVENT_HISTOGRAM, "weights/dense/kernel");
    assert_int_equal(t->ev[hk].step, 5);
    assert_true(t->ev[hk].num == 2); /* a 1x2 kernel */
    int hg = find_event(t, 0, TFL_EVENT_HISTOGRAM, "gradients/dense/bias");
    assert_int_equal(t->ev[hg].step, 5);
    /* validation: its own run, the same tags */
    read_dir(f->ctx, dir, "validation", t, 0);
    assert_int_equal(t->ev[1].kind, TFL_EVENT_SESSION_LOG);
    assert_int_equal(t->ev[1].step, 1);
    for (int e = 0; e < 2; e++) {
        assert_true(scalar_at(t, "epoch/loss", 5 * (e + 1)) == (double)(float)logs[e].val_loss);
        assert_true(scalar_at(t, "epoch/accuracy", 5 * (e + 1)) ==
                    (double)(float)logs[e].val_accuracy);
    }
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/loss"), 0);

    /* resume: the optimizer's iterations (10) are the base; START at 11, steps 12, 14, ... */
    s.train_dir = NULL;
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 2, .initial_epoch = 1,
                                                              .batch_size = 8, .callbacks = cbs,
                                                              .n_callbacks = 3}, NULL), TFL_OK);
    read_dir(f->ctx, dir, "train", t, 1);
    assert_int_equal(t->ev[1].kind, TFL_EVENT_SESSION_LOG);
    assert_int_equal(t->ev[1].step, 11);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/loss"), 2);
    assert_true(scalar_at(t, "step/loss", 12) == (double)(float)s.loss[2]);
    assert_true(scalar_at(t, "step/loss", 14) == (double)(float)s.loss[4]);
    double lr14 = 0.5 * pow(0.9, 13.0);
    assert_true(fabs(scalar_at(t, "step/learning_rate", 14) - lr14) < 1e-6);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "epoch/loss"), 1);
    (void)scalar_at(t, "epoch/loss", 15);
    /* an explicit initial_step */
    tb.initial_step = 100;
    tb.every_steps = 0;
    tb.histograms = false;
    tb.text = NULL;
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 1, .batch_size = 8,
                                                              .callbacks = cbs + 1,
                                                              .n_callbacks = 1}, NULL), TFL_OK);
    read_dir(f->ctx, dir, "train", t, 2);
    assert_int_equal(t->n, 4); /* version, START, epoch/loss and accuracy: no step scalars */
    assert_int_equal(t->ev[1].step, 101);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, NULL), 2);
    (void)scalar_at(t, "epoch/loss", 105);
    /* a fit that continues its step count (initial_step 100, as a resumed fit): the same
     * global steps, not 100 + 100 + k; every_steps counts global steps */
    tb.every_steps = 2;
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 1, .batch_size = 8,
                                                              .initial_step = 100,
                                                              .callbacks = cbs + 1,
                                                              .n_callbacks = 1}, NULL), TFL_OK);
    read_dir(f->ctx, dir, "train", t, 3);
    assert_int_equal(t->ev[1].kind, TFL_EVENT_SESSION_LOG);
    assert_int_equal(t->ev[1].step, 101);
    assert_int_equal(count_tag(t, TFL_EVENT_SCALAR, "step/loss"), 2);
    (void)scalar_at(t, "step/loss", 102);
    (void)scalar_at(t, "step/loss", 104);
    (void)scalar_at(t, "epoch/loss", 105);
    free(t);
    drop_rig(&r);
    remove_tree(dir);
}

/* logdir NULL: the callback writes nothing and makes no directory; training is unchanged. */
static void test_disabled_writes_nothing(void **state)
{
    fixture *f = *state;
    char dir[256];
    temp_dir(dir, sizeof dir, "tb");
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0); /* anything written relative would land here */
    rig r = make_rig(f->ctx, 16);
    tfl_tensorboard tb = {.logdir = NULL, .every_steps = 1, .histograms = true, .text = "x"};
    tfl_callback cb = tfl_tensorboard_callback(&tb);
    tfl_epoch_logs logs[1];
    tfl_history h = {logs, 1, 0};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 1, .batch_size = 4,
                                                              .validation = r.ds,
                                                              .callbacks = &cb,
                                                              .n_callbacks = 1}, &h), TFL_OK);
    assert_int_equal(h.count, 1);
    assert_null(tb.train);
    assert_int_equal(chdir(cwd), 0);
    DIR *d = opendir(dir);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    closedir(d);
    assert_int_equal(entries, 0);
    drop_rig(&r);
    remove_tree(dir);
}

static void test_errors(void **state)
{
    fixture *f = *state;
    char dir[256], file[300];
    temp_dir(dir, sizeof dir, "tb");
    rig r = make_rig(f->ctx, 16);
    tfl_tensorboard tb = {.logdir = dir, .every_steps = -1};
    tfl_callback cb = tfl_tensorboard_callback(&tb);
    tfl_fit_opts o = {.epochs = 1, .batch_size = 4, .callbacks = &cb, .n_callbacks = 1};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &o, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "every_steps must be >= 0, got -1");
    snprintf(file, sizeof file, "%s/afile", dir);
    spit(file, "x", 1);
    tb = (tfl_tensorboard){.logdir = file};
    cb = tfl_tensorboard_callback(&tb);
    assert_int_equal(tfl_model_fit(r.m, r.ds, &o, NULL), TFL_FAILED_PRECONDITION);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "afile");
    cb = tfl_tensorboard_callback(NULL);
    assert_int_equal(tfl_model_fit(r.m, r.ds, &o, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "TensorBoard: the callback's settings are NULL");
    drop_rig(&r);
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_logs_steps_and_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
