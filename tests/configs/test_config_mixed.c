/* test_config_mixed.c: runs trained from configs under the mixed precision policies on a GPU
 * (the fake GPU module, tests/common/fake_gpu_module.c, loaded through TFL_GPU_MODULE: the
 * policies change only what a GPU runs). A dense graph (whose concatenation meets a 16-bit
 * and a float32 input) and a residual block with BatchNormalization train under bfloat16 and
 * float16 and resume exactly: 2 + 2 epochs give the variables of 4, bit for bit. Under float16
 * with a loss scale too large for float16 (2^20), the first steps are skipped and the scale
 * comes down; the checkpoint holds the scale and the skips, so the resumed run skips the same
 * steps, and TensorBoard has the scale and the skipped steps of every logged step. A run
 * resumed under another policy starts or drops the loss scaler's state. */
#include "graph_runs.h"

#include <math.h>

#ifndef TFL_FAKE_GPU_MODULE
#error "TFL_FAKE_GPU_MODULE (the path of libtfl_fake_gpu.so) must be defined"
#endif

/* the optimizer's float32 / int64 scalar `name` in the run's newest checkpoint */
static double ckpt_scalar(tfl_ctx *ctx, const char *run_dir, const char *name)
{
    char path[512];
    assert_int_equal(tfl_run_latest_checkpoint(ctx, run_dir, path, sizeof path, NULL), TFL_OK);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_non_null(ck);
    int64_t i = tfl_ckpt_find(ck, name);
    if (i < 0) fail_msg("%s has no tensor %s", path, name);
    tfl_ckpt_tensor_info info;
    assert_int_equal(tfl_ckpt_tensor_info_at(ck, i, &info), TFL_OK);
    double v = NAN;
    if (info.dtype == TFL_DTYPE_FLOAT32) {
        float f = 0;
        assert_int_equal(tfl_ckpt_read(ck, i, &f, sizeof f), TFL_OK);
        v = f;
    } else {
        int64_t n = 0;
        assert_int_equal(info.dtype, TFL_DTYPE_INT64);
        assert_int_equal(tfl_ckpt_read(ck, i, &n, sizeof n), TFL_OK);
        v = (double)n;
    }
    tfl_ckpt_close(ck);
    return v;
}

/* how many scalars `tag` the events file of dir holds; the last one's value into *last */
static int64_t events_last_scalar(tfl_ctx *ctx, const char *dir, const char *tag, double *last)
{
    char path[1024];
    assert_int_equal(event_files(dir, path, sizeof path), 1);
    static ev_table t;
    collect_events(tfl_event_reader_open(ctx, path), &t);
    int64_t n = 0;
    for (int i = find_event(&t, 0, TFL_EVENT_SCALAR, tag); i >= 0;
         i = find_event(&t, i + 1, TFL_EVENT_SCALAR, tag)) {
        n++;
        *last = t.ev[i].value;
    }
    return n;
}

static void policies_resume_exactly(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    static const char *const bf16[] = {"training.device=GPU:0", "training.precision=bfloat16",
                                       NULL};
    static const char *const fp16[] = {"training.device=GPU:0", "training.precision=float16", NULL};
    static float vars[512];
    char straight[256], resumed[256];
    const char *const *pol[2] = {bf16, fp16};
    for (int p = 0; p < 2; p++) {
        expect_exact_resume_in(ctx, GRAPH_YAML, pol[p], p ? "g16" : "gbf", 118, vars, straight,
                               resumed);
        expect_exact_resume_in(ctx, RESNET_YAML, pol[p], p ? "r16" : "rbf", 382, vars, straight,
                               resumed);
    }
    /* float16 from Keras's 2^15: every skipped step halved it, and some steps trained (the
     * residual block's BatchNorms over two pixels make large gradients: steps are skipped) */
    double skipped = ckpt_scalar(ctx, resumed, "Adam/skipped_steps");
    assert_true(skipped < 8);
    assert_true(ckpt_scalar(ctx, resumed, "Adam/loss_scale") == 32768 / pow(2, skipped));
}

static void float16_skips_and_resumes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    static const char *const big[] = {"training.device=GPU:0",
                                      "training.precision=float16",
                                      "optimizer.loss_scale=1048576",
                                      "training.batch_size=1",
                                      "logging.tensorboard=true",
                                      "logging.every_steps=1",
                                      NULL};
    static float vars[512];
    char straight[256], resumed[256];
    expect_exact_resume_in(ctx, RESNET_YAML, big, "skip16", 382, vars, straight, resumed);
    double skipped = ckpt_scalar(ctx, straight, "Adam/skipped_steps");
    double scale = ckpt_scalar(ctx, straight, "Adam/loss_scale");
    print_message("2^20: %g steps skipped, the scale came down to %g\n", skipped, scale);
    assert_true(skipped >= 4 && skipped < 12); /* 4 steps an epoch, 4 epochs */
    assert_true(scale == 1048576 / pow(2, skipped));
    assert_true(ckpt_scalar(ctx, resumed, "Adam/skipped_steps") == skipped);
    assert_true(ckpt_scalar(ctx, resumed, "Adam/loss_scale") == scale);
    for (int i = 0; i < 382; i++)
        assert_true(isfinite(vars[i]));
    /* TensorBoard: the scale and the skips at every step, ending at the checkpoint's values */
    char train_dir[300];
    snprintf(train_dir, sizeof train_dir, "%s/train", straight);
    double last_scale = NAN, last_skipped = NAN;
    int64_t n_scale = events_last_scalar(ctx, train_dir, "step/loss_scale", &last_scale);
    int64_t n_skip = events_last_scalar(ctx, train_dir, "step/skipped_steps", &last_skipped);
    assert_int_equal(n_scale, 16);
    assert_int_equal(n_skip, 16);
    assert_true(last_scale == scale && last_skipped == skipped);
}

/* trains GRAPH_YAML on GPU:0 to `epochs` under `precision` in dir, resuming what is there
 * although the precision changed */
static void train_switch(tfl_ctx *ctx, const char *dir, const char *epochs, const char *precision)
{
    tfl_status st;
    const char *sets[3] = {"training.device=GPU:0", epochs, precision};
    tfl_config *cfg = parse_with(ctx, GRAPH_YAML, sets, 3, &st);
    assert_int_equal(st, TFL_OK);
    tfl_run *run =
        tfl_run_open(cfg, &(tfl_run_opts){.run_dir = dir, .allow_config_change = true}, &st);
    assert_non_null(run);
    tfl_run_result res;
    st = tfl_run_train(run, &res);
    if (st != TFL_OK) print_error("%s\n", tfl_ctx_error(ctx).message);
    assert_int_equal(st, TFL_OK);
    tfl_run_close(run);
    tfl_config_free(cfg);
}

/* A run may change its policy on resume (--allow-config-change): float32 -> float16 starts the
 * loss scaler afresh, float16 -> bfloat16 leaves its state out of the restore; the checkpoints
 * hold the scaler's state only while the optimizer scales. */
static void precision_switch_resumes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char dir[256];
    temp_dir(dir, sizeof dir, "switch");
    train_switch(ctx, dir, "training.epochs=2", "training.precision=float32");
    char path[512];
    int64_t step = 0;
    assert_int_equal(tfl_run_latest_checkpoint(ctx, dir, path, sizeof path, &step), TFL_OK);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_true(tfl_ckpt_find(ck, "Adam/loss_scale") < 0);
    tfl_ckpt_close(ck);
    train_switch(ctx, dir, "training.epochs=4", "training.precision=float16");
    double scale = ckpt_scalar(ctx, dir, "Adam/loss_scale"),
           skipped = ckpt_scalar(ctx, dir, "Adam/skipped_steps");
    assert_true(scale == 32768 / pow(2, skipped)); /* from the start, 2^15 */
    train_switch(ctx, dir, "training.epochs=6", "training.precision=bfloat16");
    int64_t last = 0;
    assert_int_equal(tfl_run_latest_checkpoint(ctx, dir, path, sizeof path, &last), TFL_OK);
    assert_true(last > step);
    ck = tfl_ckpt_open(ctx, path);
    assert_true(tfl_ckpt_find(ck, "Adam/loss_scale") < 0);
    assert_true(tfl_ckpt_find(ck, "Adam/iterations") >= 0);
    tfl_ckpt_close(ck);
}

int main(void)
{
    /* every context of this test has the fake GPU:0 */
    if (setenv("TFL_GPU_MODULE", TFL_FAKE_GPU_MODULE, 1) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(policies_resume_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(float16_skips_and_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(precision_switch_resumes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
