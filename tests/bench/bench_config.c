/*
 * bench_config.c: training throughput of a run config's model (the shipped graph configs:
 * configs/fashion_mnist_resnet.yaml, configs/char_transformer.yaml), built by the config
 * loader and trained by tfl_model_fit on the config's own data, optimizer and batch size, as
 * `tapeflow train` trains it (without the run directory). Warm-up steps first, then the timed
 * steps (a callback stops fit there). Twins: torch_config.py (and keras_config.py for the
 * ResNet).
 *
 * Prints, for the config's model name M:
 *   bench config_M_samples_per_s  examples per second over the timed steps
 *   bench config_M_tokens_per_s   tokens (positions) per second, for a sequence model
 *   bench config_M_peak_rss       the process's peak resident set, dataset included
 * Usage: bench_config CONFIG [--threads T] [--warmup W] [--steps N] [--quick]
 *        (defaults: 2 threads, 5 warm-up and 30 timed steps; --quick: 1 and 2)
 */
#define BENCH_NAME "bench_config"
#include "bench_util.h"

#include <string.h>
#include <sys/resource.h>

typedef struct timing {
    int64_t warm, stop; /* steps */
    double t0;          /* when the timed steps began */
    int64_t samples;    /* examples of the timed steps */
} timing;

static tfl_status on_step(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    (void)m;
    timing *t = user;
    if (logs->step == t->warm) t->t0 = now_ns();
    else if (logs->step > t->warm) t->samples += logs->samples;
    *stop = logs->step >= t->stop;
    return TFL_OK;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int threads = 2;
    int64_t warm = 5, steps = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) warm = 1, steps = 2;
        else if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--warmup")) warm = atoll(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--steps")) steps = atoll(argv[++i]);
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else die(NULL, "arguments", "usage: bench_config CONFIG [--threads T] [--warmup W] "
                                    "[--steps N] [--quick]");
    }
    if (!path || warm < 1 || steps < 1) die(NULL, "arguments", "a config, and steps >= 1");
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = threads, .seed = 1}, &st);
    if (!ctx) die(NULL, "context", tfl_status_name(st));
    tfl_config *cfg = tfl_config_load(ctx, path, NULL, 0, &st);
    if (!cfg || !tfl_config_valid(cfg))
        die(ctx, "config", cfg ? tfl_config_diagnostics(cfg) : "not loaded");
    check_status(ctx, tfl_config_apply_context(cfg), "apply");
    tfl_model *m = tfl_config_build_model(cfg);
    check_ptr(ctx, m, "model", "tfl_config_build_model");
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    check_ptr(ctx, opt, "optimizer", "tfl_config_build_optimizer");
    check_status(ctx, tfl_config_compile(cfg, m, opt), "compile");
    tfl_config_datasets data = {0};
    check_status(ctx, tfl_config_build_datasets(cfg, &data), "data");
    tfl_fit_opts fo;
    check_status(ctx, tfl_config_fit_opts(cfg, &data, &fo), "fit options");
    fo.validation = NULL;
    fo.epochs = 1;
    timing t = {.warm = warm, .stop = warm + steps};
    tfl_callback cb = {.on_step_end = on_step, .user = &t};
    fo.callbacks = &cb;
    fo.n_callbacks = 1;
    check_status(ctx, tfl_model_fit(m, data.train, &fo, NULL), "fit");
    double wall = (now_ns() - t.t0) * 1e-9;
    if (t.samples == 0) die(ctx, "fit", "an epoch has fewer batches than the steps asked for");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const char *name = tfl_model_name(m);
    printf("bench config_%s_samples_per_s %.1f samples/s\n", name, (double)t.samples / wall);
    tfl_tensor *x = NULL, *y = NULL; /* a batch of one tells a sequence model (int32 tokens) */
    if (tfl_dataset_batch(data.train, 1, NULL) == TFL_OK &&
        tfl_dataset_next(data.train, &x, &y) == TFL_OK && x && tfl_tensor_rank(x) == 2 &&
        tfl_dtype_is_integer(tfl_tensor_dtype(x)))
        printf("bench config_%s_tokens_per_s %.0f tokens/s\n", name,
               (double)t.samples * (double)tfl_tensor_dim(x, 1) / wall);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    printf("bench config_%s_peak_rss %.1f MiB\n", name, (double)ru.ru_maxrss / 1024.0);
    tfl_config_datasets_free(&data);
    tfl_ctx_free(ctx);
    return 0;
}
