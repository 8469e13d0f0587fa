/*
 * examples/fashion_mnist.c: trains a classifier of Fashion-MNIST (Zalando's 28x28 grey
 * images of clothes, 10 classes) through tfl_model_fit, the way a Keras user would, with
 * the MLP or the CNN of fashion_mnist_models.h.
 *
 * Adam (lr 1e-3), sparse softmax cross-entropy from logits, batches of 128 shuffled per
 * epoch, inputs scaled to [0, 1]; after each epoch the test set (10000 images) gives
 * val_loss and val_accuracy, and the last line is "test_accuracy A".
 *
 * Usage: fashion_mnist [--model mlp|cnn] [--epochs N] [--seed S] [--threads T]
 *                      [--data DIR] [--csv FILE]
 * The data comes from Debian's dataset-fashion-mnist package (make train installs it):
 * DIR defaults to /usr/share/datasets/fashion-mnist. Same seed, same losses.
 */
#include "fashion_mnist_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

typedef struct args {
    const char *model, *data, *csv;
    int epochs, threads;
    uint64_t seed;
} args;

static int usage(const char *why)
{
    fprintf(stderr, "fashion_mnist: %s\nusage: fashion_mnist [--model mlp|cnn] [--epochs N] "
                    "[--seed S] [--threads T] [--data DIR] [--csv FILE]\n", why);
    return 2;
}

static bool parse(int argc, char **argv, args *a)
{
    *a = (args){"mlp", DEFAULT_DATA, NULL, 5, 0, 1};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return false;
        if (!strcmp(k, "--model")) a->model = v;
        else if (!strcmp(k, "--data")) a->data = v;
        else if (!strcmp(k, "--csv")) a->csv = v;
        else if (!strcmp(k, "--epochs")) a->epochs = atoi(v);
        else if (!strcmp(k, "--threads")) a->threads = atoi(v);
        else if (!strcmp(k, "--seed")) a->seed = strtoull(v, NULL, 10);
        else return false;
        i++;
    }
    return a->epochs >= 1 && a->threads >= 0 &&
           (!strcmp(a->model, "mlp") || !strcmp(a->model, "cnn"));
}

static tfl_dataset *load(tfl_ctx *ctx, const char *dir, const char *part)
{
    char images[1024], labels[1024];
    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, part);
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, part);
    return tfl_dataset_from_idx(ctx, images, labels, NULL); /* bytes, scaled by 1/255 */
}

int main(int argc, char **argv)
{
    args a;
    if (!parse(argc, argv, &a)) return usage("bad arguments");
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = a.threads, .seed = a.seed}, &st);
    if (!ctx) {
        fprintf(stderr, "fashion_mnist: no context: %s\n", tfl_status_name(st));
        return 1;
    }
    tfl_dataset *train = load(ctx, a.data, "train");
    tfl_dataset *test = train ? load(ctx, a.data, "t10k") : NULL;
    tfl_model *m = tfl_model_new(ctx, a.model);
    if (m) fashion_mnist_add_layers(m, !strcmp(a.model, "cnn"));
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 1e-3;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    if (tfl_ctx_status(ctx) == TFL_OK)
        tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, TFL_METRIC_ACCURACY);
    if (tfl_ctx_status(ctx) == TFL_OK) {
        tfl_model_build(m, 3, (int64_t[]){-1, 28, 28});
        const char *summary = tfl_model_summary(m);
        if (summary) printf("%s", summary);
        printf("threads %d, seed %llu, %lld training and %lld test images\n",
               tfl_ctx_num_threads(ctx), (unsigned long long)a.seed,
               (long long)tfl_dataset_size(train), (long long)tfl_dataset_size(test));
    }
    tfl_csv_logger csv = {.path = a.csv};
    tfl_callback cb = tfl_csv_logger_callback(&csv);
    double acc = 0;
    if (tfl_ctx_status(ctx) == TFL_OK &&
        tfl_model_fit(m, train, &(tfl_fit_opts){.epochs = a.epochs, .batch_size = 128,
                                                .shuffle = true, .seed = a.seed,
                                                .validation = test, .progress = stdout,
                                                .callbacks = &cb, .n_callbacks = a.csv ? 1 : 0},
                      NULL) == TFL_OK &&
        tfl_model_evaluate(m, test, 1000, NULL, &acc) == TFL_OK)
        printf("test_accuracy %.4f\n", acc);
    tfl_error e = tfl_ctx_error(ctx);
    int rc = e.code == TFL_OK ? 0 : 1;
    if (rc) fprintf(stderr, "fashion_mnist: %s: %s\n", tfl_status_name(e.code), e.message);
    tfl_ctx_free(ctx); /* frees the model, the optimizer and the datasets too */
    return rc;
}
