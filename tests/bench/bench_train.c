/*
 * bench_train.c: training throughput of the Fashion-MNIST models of examples/fashion_mnist.c
 * (mlp: 784-256-256-10 ReLU; cnn: conv3x3 32, maxpool 2, conv3x3 64, maxpool 2, dense 128,
 * dense 10; batches of 128) and of big_cnn, a VGG-style convnet (examples/
 * fashion_mnist_models.h: six 3x3 SAME convolutions of 64, 64, 128, 128, 256, 256 channels,
 * a max-pool after each pair, dense 512, dense 10; batches of 256), Adam lr 1e-3, sparse
 * softmax cross-entropy, batches shuffled, through tfl_model_fit: the whole loop (batches
 * converted from bytes, forward, tape, backward, optimizer, metrics) as a user runs it.
 * Twins: torch_train.py and keras_train.py.
 *
 * Prints:
 *   bench train_<model>_samples_per_s  training examples per second over the timed steps
 *   bench train_<model>_cpu_util       process CPU time / wall time over them (2 threads: ~2)
 *   bench train_<model>_peak_rss       the process's peak resident set, dataset included
 * Steps: 20 warm-up and 200 timed (mlp), 60 (cnn); big_cnn 3 and 20 (--quick: 3 and 5;
 * big_cnn 1 and 2); --steps N sets the timed steps.
 * Usage: bench_train [--model mlp|cnn|big_cnn] [--threads T] [--steps N] [--quick]
 *                    [--data DIR]
 */
#define BENCH_NAME "bench_train"
#include "bench_util.h"
#include "fashion_mnist_models.h" /* examples/: the models the example trains */

#include <string.h>
#include <sys/resource.h>

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

int main(int argc, char **argv)
{
    const char *model = "mlp", *dir = "/usr/share/datasets/fashion-mnist";
    int threads = 2, steps = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (i + 1 < argc && !strcmp(argv[i], "--model")) model = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--steps")) steps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--data")) dir = argv[++i];
        else die(NULL, "arguments", "usage: bench_train [--model mlp|cnn|big_cnn] [--threads T] "
                                    "[--steps N] [--quick] [--data DIR]");
    }
    bool cnn = !strcmp(model, "cnn"), big = !strcmp(model, "big_cnn");
    if (!cnn && !big && strcmp(model, "mlp"))
        die(NULL, "arguments", "--model is mlp, cnn or big_cnn");
    if (steps < 0) die(NULL, "arguments", "--steps wants a positive count");
    const int64_t batch = big ? 256 : 128, warm = big ? (quick ? 1 : 3) : quick ? 3 : 20;
    if (!steps) steps = big ? (quick ? 2 : 20) : quick ? 5 : cnn ? 60 : 200;

    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = threads, .seed = 1}, &st);
    if (!ctx) die(NULL, "context", tfl_status_name(st));
    char images[1024], labels[1024];
    snprintf(images, sizeof images, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte.gz", dir);
    tfl_dataset *all = tfl_dataset_from_idx(ctx, images, labels, NULL);
    check_ptr(ctx, all, "load", "tfl_dataset_from_idx");
    if ((warm + steps) * batch > tfl_dataset_size(all)) die(ctx, "arguments", "too many steps");
    tfl_dataset *warm_ds, *rest, *timed, *unused;
    check_status(ctx, tfl_dataset_split(all, warm * batch, &warm_ds, &rest), "split");
    check_status(ctx, tfl_dataset_split(rest, steps * batch, &timed, &unused), "split");

    tfl_model *m = tfl_model_new(ctx, model);
    if (big)
        fashion_mnist_add_big_cnn_layers(m);
    else
        fashion_mnist_add_layers(m, cnn);
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    check_status(ctx, tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                        TFL_METRIC_ACCURACY), "compile");
    tfl_fit_opts fo = {.epochs = 1, .batch_size = batch, .shuffle = true, .seed = 1};
    check_status(ctx, tfl_model_fit(m, warm_ds, &fo, NULL), "warm-up");

    tfl_epoch_logs lg;
    tfl_history h = {&lg, 1, 0};
    double c0 = cpu_s(), t0 = now_ns();
    check_status(ctx, tfl_model_fit(m, timed, &fo, &h), "timed fit");
    double wall = (now_ns() - t0) * 1e-9, cpu = cpu_s() - c0;
    if (!(lg.loss > 0 && lg.loss < 3)) die(ctx, "timed fit", "the loss is not finite and falling");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("bench train_%s_samples_per_s %.0f samples/s\n", model, (double)lg.samples / wall);
    printf("bench train_%s_cpu_util %.2f ratio\n", model, cpu / wall);
    printf("bench train_%s_peak_rss %.1f MiB\n", model, (double)ru.ru_maxrss / 1024.0);
    tfl_ctx_free(ctx);
    return 0;
}
