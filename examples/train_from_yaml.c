/*
 * examples/train_from_yaml.c: an application that trains a YAML config with the library's run
 * (tapeflow/run.h: what `tapeflow train` does, resume included) and prints its own progress.
 * Usage: train_from_yaml CONFIG [RUN_DIR]
 */
#include <tapeflow/tapeflow.h>

#include <stdio.h>

static void progress(void *user, const tfl_run_event *ev)
{
    (void)user;
    if (ev->kind == TFL_RUN_EVENT_EPOCH)
        printf("[%d/%d] loss %.4f\n", ev->epoch->epoch + 1, ev->epoch->epochs, ev->epoch->loss);
    else if (ev->kind != TFL_RUN_EVENT_STEP)
        fprintf(stderr, "%s\n", ev->message); /* where it resumes, warnings, config changes */
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: train_from_yaml CONFIG [RUN_DIR]\n"), 2;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    tfl_config *cfg = ctx ? tfl_config_load(ctx, argv[1], NULL, 0, &st) : NULL;
    if (cfg && !tfl_config_valid(cfg)) fputs(tfl_config_diagnostics(cfg), stderr);
    tfl_run_opts opts = {.run_dir = argc > 2 ? argv[2] : NULL, .on_event = progress};
    tfl_run *run = cfg && tfl_config_valid(cfg) ? tfl_run_open(cfg, &opts, &st) : NULL;
    tfl_run_result res = {0};
    if (run) st = tfl_run_train(run, &res);
    int ok = run && st == TFL_OK && !res.refused;
    if (ok)
        printf("%d epochs, %lld steps; final loss %.4f; run directory %s\n", res.epochs,
               (long long)res.steps, res.last.loss, res.run_dir);
    else if (ctx)
        fprintf(stderr, "train_from_yaml: %s\n", tfl_ctx_error(ctx).message);
    tfl_run_close(run);
    tfl_config_free(cfg);
    tfl_ctx_free(ctx);
    return ok ? 0 : 1;
}
