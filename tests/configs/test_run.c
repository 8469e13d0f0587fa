/* test_run.c: the run API (tapeflow/run.h): a run trains into its directory and resumes there,
 * its events, a refused config change, the context's warnings in run.log and as events,
 * cancel, restore, evaluate and predict, and its misuse (an invalid config, a second close). */
#include "config_helpers.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfl_events_util.h"

typedef struct seen {
    int notes, warnings, changes, steps, epochs;
    char last_note[512], first_warning[512];
    tfl_run *cancel_at_epoch; /* cancels the run at its second epoch's end */
} seen;

static void on_event(void *user, const tfl_run_event *ev)
{
    seen *s = user;
    switch (ev->kind) {
    case TFL_RUN_EVENT_NOTE:
        s->notes++;
        snprintf(s->last_note, sizeof s->last_note, "%s", ev->message);
        break;
    case TFL_RUN_EVENT_WARNING:
        if (s->warnings++ == 0) snprintf(s->first_warning, sizeof s->first_warning, "%s", ev->message);
        break;
    case TFL_RUN_EVENT_CONFIG_CHANGE:
        s->changes++;
        break;
    case TFL_RUN_EVENT_STEP:
        assert_non_null(ev->step);
        s->steps++;
        break;
    case TFL_RUN_EVENT_DEVICE: /* several ranks only */
        fail_msg("a DEVICE event in one process: %s", ev->message);
        break;
    case TFL_RUN_EVENT_EPOCH:
        assert_non_null(ev->epoch);
        s->epochs++;
        if (s->cancel_at_epoch && ev->epoch->epoch == 1) tfl_run_cancel(s->cancel_at_epoch);
        break;
    }
}

static bool has_text(const char *path, const char *fragment)
{
    size_t n = 0;
    unsigned char *t = slurp(path, &n);
    bool found = t && strstr((char *)t, fragment);
    if (!found) print_error("%s lacks \"%s\": %s\n", path, fragment, t ? (char *)t : "(none)");
    free(t);
    return found;
}

static tfl_run *open_run(tfl_ctx *ctx, tfl_config **cfg, const char *dir, const char *epochs,
                         seen *s)
{
    const char *sets[] = {epochs, "logging.log_interval=2"};
    tfl_status st;
    *cfg = parse_with(ctx, BASE_YAML "training: {batch_size: 2, seed: 3}\n", sets, 2, &st);
    assert_int_equal(st, TFL_OK);
    tfl_run *run = tfl_run_open(*cfg, &(tfl_run_opts){.run_dir = dir, .on_event = on_event,
                                                       .user = s},
                                &st);
    assert_int_equal(st, TFL_OK);
    assert_non_null(run);
    return run;
}

static void test_train_resume_and_use(void **state)
{
    fixture *f = *state;
    char dir[256], p[400];
    temp_dir(dir, sizeof dir, "run");
    seen s = {0};
    tfl_config *cfg;
    tfl_run *run = open_run(f->ctx, &cfg, dir, "training.epochs=3", &s);
    tfl_run_result res;
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    assert_false(res.refused || res.resumed || res.cancelled);
    assert_true(res.saved);
    assert_int_equal(res.epochs, 3);
    assert_int_equal(res.steps, 6); /* 4 examples in batches of 2 */
    assert_int_equal(s.epochs, 3);
    assert_int_equal(s.steps, 3); /* every 2 steps */
    assert_string_equal(res.run_dir, dir);
    snprintf(p, sizeof p, "%s/config.yaml", dir);
    assert_true(has_text(p, "  epochs: 3\n"));
    snprintf(p, sizeof p, "%s/run.log", dir);
    assert_true(has_text(p, " started from t.yaml"));
    snprintf(p, sizeof p, "%s/checkpoints/ckpt-00000006.safetensors", dir);
    assert_int_equal(access(p, F_OK), 0);
    assert_int_equal(access(res.event_file, F_OK), 0);
    snprintf(p, sizeof p, "%s/curves.svg", dir);
    assert_string_equal(res.curves, p);
    assert_true(has_text(p, "<svg "));
    snprintf(p, sizeof p, "%s/checkpoints/ckpt-00000006.safetensors", dir);
    /* the trained model: restored, evaluated, used */
    char used[512];
    int64_t step = 0;
    assert_int_equal(tfl_run_restore(run, NULL, used, sizeof used, &step), TFL_OK);
    assert_string_equal(used, p);
    assert_int_equal(step, 6);
    double loss = -1, acc = -1;
    const char *which = NULL;
    int64_t n = 0;
    assert_int_equal(tfl_run_evaluate(run, &loss, &acc, &which, &n), TFL_OK);
    assert_string_equal(which, "train");
    assert_int_equal(n, 4);
    assert_true(loss > 0 && isnan(acc)); /* no accuracy metric in the config */
    bool labelled = false;
    double l2 = -1, a2 = -1;
    tfl_tensor *out = tfl_run_predict(run, XOR_CSV, &labelled, &l2, &a2);
    assert_non_null(out);
    assert_true(labelled); /* the training file: its label column is scored, not an input */
    assert_int_equal(tfl_tensor_dim(out, 0), 4);
    assert_int_equal(tfl_tensor_dim(out, 1), 2);
    assert_true(fabs(l2 - loss) < 1e-6 && isnan(a2));
    /* as CSV: a classifier's class and probabilities (the softmax of the outputs) */
    FILE *csv = tmpfile();
    assert_non_null(csv);
    assert_int_equal(tfl_run_write_predictions(run, out, csv), TFL_OK);
    rewind(csv);
    char line[256];
    assert_non_null(fgets(line, sizeof line, csv));
    assert_string_equal(line, "class,p0,p1\n");
    float logits[8];
    assert_int_equal(tfl_tensor_to_host(out, logits, sizeof logits), TFL_OK);
    for (int i = 0; i < 4; i++) {
        int cls = -1;
        double p0 = -1, p1 = -1;
        assert_non_null(fgets(line, sizeof line, csv));
        assert_int_equal(sscanf(line, "%d,%lf,%lf", &cls, &p0, &p1), 3);
        double e = exp((double)logits[2 * i + 1] - (double)logits[2 * i]);
        assert_true(fabs(p1 - e / (1 + e)) < 1e-5 && fabs(p0 + p1 - 1) < 1e-5);
        assert_int_equal(cls, p1 > p0 ? 1 : 0);
    }
    assert_null(fgets(line, sizeof line, csv));
    fclose(csv);
    tfl_tensor *flat = tfl_reshape(f->ctx, out, 1, (int64_t[]){8});
    assert_int_equal(tfl_run_write_predictions(run, flat, stdout), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(f->ctx).message, "expected outputs of rank 2"));
    tfl_ctx_clear_error(f->ctx);
    tfl_tensor_release(flat);
    tfl_tensor_release(out);
    tfl_run_close(run);
    tfl_config_free(cfg);

    /* the newest checkpoint damaged: the resume falls back, the warning is an event and in
     * run.log; more epochs are a change a run takes */
    assert_int_equal(truncate(p, 100), 0);
    memset(&s, 0, sizeof s);
    run = open_run(f->ctx, &cfg, dir, "training.epochs=4", &s);
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    assert_true(res.resumed);
    assert_non_null(strstr(res.checkpoint, "ckpt-00000004.safetensors"));
    assert_int_equal(res.epochs, 4);
    assert_int_equal(res.steps, 8);
    assert_int_equal(s.warnings, 1);
    assert_non_null(strstr(s.first_warning, "ckpt-00000006.safetensors', an older checkpoint"));
    assert_int_equal(s.changes, 2); /* the heading and training.epochs */
    snprintf(p, sizeof p, "%s/run.log", dir);
    assert_true(has_text(p, "resumed from "));
    assert_true(has_text(p, "  warning: Checkpoint: skipping '"));
    assert_true(has_text(p, "    training.epochs: 3 -> 4\n"));
    tfl_run_close(run);
    tfl_config_free(cfg);

    /* a change of what is trained: refused, nothing written */
    const char *sets[] = {"training.epochs=5", "optimizer.learning_rate=0.5"};
    tfl_status st;
    cfg = parse_with(f->ctx, BASE_YAML "training: {batch_size: 2, seed: 3}\n", sets, 2, &st);
    run = tfl_run_open(cfg, &(tfl_run_opts){.run_dir = dir}, &st);
    assert_non_null(run);
    size_t before = 0;
    free(slurp(p, &before));
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    assert_true(res.refused);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "refusing to continue this run: 1 changed "
                                                       "key changes what is trained");
    size_t after = 0;
    free(slurp(p, &after));
    assert_int_equal(after, before);
    tfl_run_close(run);
    tfl_config_free(cfg);
    remove_tree(dir);
}

/* tfl_run_cancel (here from an event; a signal handler does the same): the step finishes, is
 * checkpointed, and train returns with cancelled set. */
static void test_cancel(void **state)
{
    fixture *f = *state;
    char dir[256];
    temp_dir(dir, sizeof dir, "run");
    seen s = {0};
    tfl_config *cfg;
    tfl_run *run = open_run(f->ctx, &cfg, dir, "training.epochs=50", &s);
    s.cancel_at_epoch = run;
    tfl_run_result res;
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    assert_true(res.cancelled);
    assert_true(res.saved);
    assert_int_equal(res.steps, 5); /* the first step of the third epoch */
    assert_int_equal(res.stopped_epoch, 2);
    char used[512];
    int64_t step = -1;
    assert_int_equal(tfl_run_restore(run, NULL, used, sizeof used, &step), TFL_OK);
    assert_int_equal(step, 5);
    tfl_run_close(run);
    tfl_config_free(cfg);
    remove_tree(dir);
}

static void test_misuse(void **state)
{
    fixture *f = *state;
    tfl_status st = TFL_OK;
    const char *bad[] = {"training.epochs=0"};
    tfl_config *cfg = parse_with(f->ctx, BASE_YAML, bad, 1, &st);
    assert_non_null(cfg);
    tfl_ctx_clear_error(f->ctx);
    assert_null(tfl_run_open(cfg, NULL, &st));
    assert_int_equal(st, TFL_FAILED_PRECONDITION);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "tfl_run_open: the config 't.yaml' is invalid");
    tfl_config_free(cfg);
    assert_null(tfl_run_open(NULL, NULL, &st));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    cfg = parse_text(f->ctx, BASE_YAML, &st);
    tfl_run *run = tfl_run_open(cfg, NULL, &st);
    assert_non_null(run);
    tfl_run_close(run);
    tfl_run_close(run);
    expect_kept_error(f->ctx, TFL_MISUSE, "tfl_run_close: run already freed");
    tfl_run_result res;
    assert_int_equal(tfl_run_train(run, &res), TFL_MISUSE);
    expect_kept_error(f->ctx, TFL_MISUSE, "tfl_run_train: run already freed");
    assert_int_equal(tfl_run_train(NULL, &res), TFL_INVALID_ARGUMENT);
    tfl_run_cancel(NULL);
    tfl_run_close(NULL);
    tfl_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_train_resume_and_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
