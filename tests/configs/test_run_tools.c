/* test_run_tools.c: what a program calls around runs (tapeflow/run.h): tfl_run_summary, the
 * lines of a result (each form, the figures a run lacks left out, snprintf's contract, empty
 * for a refused or cancelled result); tfl_run_latest_checkpoint of a trained run directory,
 * a damaged newest checkpoint skipped, and its errors (no checkpoint, bad arguments);
 * tfl_run_save_predictions: the same CSV as tfl_run_write_predictions, a file left as it was
 * on error, its errors. */
#include "config_helpers.h"

#include <math.h>
#include <unistd.h>

#include "tfl_events_util.h"

static tfl_run_result result(void)
{
    tfl_run_result r;
    memset(&r, 0, sizeof r);
    r.epochs = 3, r.steps = 6, r.seconds = 1.25;
    r.last = (tfl_epoch_logs){.loss = 0.125, .accuracy = 0.75, .val_loss = NAN,
                              .val_accuracy = NAN};
    r.test_loss = r.test_accuracy = NAN;
    snprintf(r.run_dir, sizeof r.run_dir, "runs/xor");
    return r;
}

static void expect_summary(const tfl_run_result *r, const char *want)
{
    char text[8192];
    memset(text, 'x', sizeof text);
    assert_int_equal(tfl_run_summary(r, NULL, 0), (int64_t)strlen(want));
    assert_int_equal(tfl_run_summary(r, text, sizeof text), (int64_t)strlen(want));
    assert_string_equal(text, want);
}

static void test_summary(void **state)
{
    (void)state;
    tfl_run_result r = result();
    expect_summary(&r, "trained 3 epochs, 6 steps in 1.2 s; final loss 0.1250, accuracy 0.7500; "
                       "run directory runs/xor\n");
    /* every figure, the test data's, skipped steps, the event file and curves */
    r.last.val_loss = 0.5, r.last.val_accuracy = 0.625, r.skipped_steps = true;
    r.test_loss = 0.25, r.test_accuracy = 1, r.epochs = 1;
    snprintf(r.event_file, sizeof r.event_file, "runs/xor/train/events.out.tfevents.1");
    snprintf(r.curves, sizeof r.curves, "runs/xor/curves.svg");
    const char *all = "test_loss 0.2500 - test_accuracy 1.0000\n"
                      "trained 1 epoch, 6 steps in 1.2 s; final loss 0.1250, accuracy 0.7500, "
                      "val_loss 0.5000, val_accuracy 0.6250 (non-finite steps skipped); run "
                      "directory runs/xor\n"
                      "event file: runs/xor/train/events.out.tfevents.1 (tensorboard --logdir "
                      "runs)\n"
                      "curves: runs/xor/curves.svg\n";
    expect_summary(&r, all);
    /* snprintf's contract: the whole length, a short buffer terminated */
    char small[10];
    assert_int_equal(tfl_run_summary(&r, small, sizeof small), (int64_t)strlen(all));
    assert_string_equal(small, "test_loss");
    /* TensorBoard's logdir: a bare run directory is its own */
    r = result();
    snprintf(r.run_dir, sizeof r.run_dir, "r1");
    snprintf(r.event_file, sizeof r.event_file, "r1/train/e");
    expect_summary(&r, "trained 3 epochs, 6 steps in 1.2 s; final loss 0.1250, accuracy 0.7500; "
                       "run directory r1\nevent file: r1/train/e (tensorboard --logdir r1)\n");
    /* nothing to train: the checkpoint, no training line */
    r = result();
    r.trained_already = true, r.resumed = true;
    snprintf(r.checkpoint, sizeof r.checkpoint, "runs/xor/checkpoints/ckpt-00000006.safetensors");
    expect_summary(&r, "trained already: 3 epochs "
                       "(runs/xor/checkpoints/ckpt-00000006.safetensors)\n");
    /* refused or cancelled: nothing; NULL: -1 */
    r.refused = true;
    expect_summary(&r, "");
    r.refused = false, r.cancelled = true;
    expect_summary(&r, "");
    assert_int_equal(tfl_run_summary(NULL, small, sizeof small), -1);
}

/* A run of BASE_YAML in dir trained for `epochs` (an override such as "training.epochs=2"),
 * still open; *cfg receives its config, which the caller frees after closing the run. */
static tfl_run *trained_run(tfl_ctx *ctx, const char *dir, const char *epochs, tfl_config **cfg)
{
    tfl_status st;
    const char *sets[] = {epochs};
    *cfg = parse_with(ctx, BASE_YAML "training: {batch_size: 2, seed: 3}\n", sets, 1, &st);
    tfl_run *run = tfl_run_open(*cfg, &(tfl_run_opts){.run_dir = dir}, &st);
    assert_non_null(run);
    tfl_run_result res;
    assert_int_equal(tfl_run_train(run, &res), TFL_OK);
    return run;
}

static void test_latest_checkpoint(void **state)
{
    fixture *f = *state;
    char dir[256], path[512], want[512], tiny[8];
    temp_dir(dir, sizeof dir, "latest");
    int64_t step = -1;
    /* before any training */
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, path, sizeof path, &step),
                     TFL_NOT_FOUND);
    snprintf(want, sizeof want, "no usable checkpoint in '%s/checkpoints': train first", dir);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, want);
    assert_int_equal(step, -1);
    /* a trained run: its newest checkpoint, the same the run restores */
    tfl_config *cfg;
    tfl_run_close(trained_run(f->ctx, dir, "training.epochs=3", &cfg));
    tfl_config_free(cfg);
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, path, sizeof path, &step), TFL_OK);
    snprintf(want, sizeof want, "%s/checkpoints/ckpt-00000006.safetensors", dir);
    assert_string_equal(path, want);
    assert_int_equal(step, 6);
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, path, sizeof path, NULL), TFL_OK);
    /* the newest damaged: the one before it, with a warning logged */
    assert_int_equal(truncate(want, 100), 0);
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, path, sizeof path, &step), TFL_OK);
    assert_int_equal(step, 4);
    assert_non_null(strstr(path, "ckpt-00000004.safetensors"));
    /* bad arguments */
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, NULL, path, sizeof path, &step),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "tfl_run_latest_checkpoint: run_dir is NULL or empty");
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, NULL, 0, &step), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "tfl_run_latest_checkpoint: no room for the path");
    assert_int_equal(tfl_run_latest_checkpoint(f->ctx, dir, tiny, sizeof tiny, &step),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_int_equal(tfl_run_latest_checkpoint(NULL, dir, path, sizeof path, &step),
                     TFL_INVALID_ARGUMENT);
    remove_tree(dir);
}

static void test_save_predictions(void **state)
{
    fixture *f = *state;
    char dir[256], path[512], bad[512];
    temp_dir(dir, sizeof dir, "preds");
    tfl_config *cfg;
    tfl_run *run = trained_run(f->ctx, dir, "training.epochs=2", &cfg);
    assert_int_equal(tfl_run_restore(run, NULL, NULL, 0, NULL), TFL_OK);
    tfl_tensor *out = tfl_run_predict(run, XOR_CSV, NULL, NULL, NULL);
    assert_non_null(out);
    /* the file holds what the stream gets */
    FILE *csv = tmpfile();
    assert_non_null(csv);
    assert_int_equal(tfl_run_write_predictions(run, out, csv), TFL_OK);
    char want[1024] = "";
    rewind(csv);
    size_t n = fread(want, 1, sizeof want - 1, csv);
    fclose(csv);
    assert_true(n > 20 && !strncmp(want, "class,p0,p1\n", 12));
    snprintf(path, sizeof path, "%s/pred.csv", dir);
    assert_int_equal(tfl_run_save_predictions(run, out, path), TFL_OK);
    size_t got_n = 0;
    unsigned char *got = slurp(path, &got_n);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, want, n);
    free(got);
    /* errors: the file as it was; a folder that does not exist, named */
    tfl_tensor *flat = tfl_reshape(f->ctx, out, 1, (int64_t[]){8});
    assert_int_equal(tfl_run_save_predictions(run, flat, path), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "expected outputs of rank 2");
    got = slurp(path, &got_n);
    assert_int_equal(got_n, n);
    free(got);
    tfl_tensor_release(flat);
    snprintf(bad, sizeof bad, "%s/nowhere/pred.csv", dir);
    assert_int_equal(tfl_run_save_predictions(run, out, bad), TFL_FAILED_PRECONDITION);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "/nowhere/.pred.csv.tmp.");
    assert_int_equal(tfl_run_save_predictions(run, out, ""), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "tfl_run_save_predictions: path is NULL or empty");
    assert_int_equal(tfl_run_save_predictions(NULL, out, path), TFL_INVALID_ARGUMENT);
    tfl_run_close(run);
    assert_int_equal(tfl_run_save_predictions(run, out, path), TFL_MISUSE);
    expect_kept_error(f->ctx, TFL_MISUSE, "tfl_run_save_predictions: run already freed");
    tfl_tensor_release(out);
    tfl_config_free(cfg);
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test_setup_teardown(test_latest_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_save_predictions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
