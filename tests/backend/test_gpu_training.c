/*
 * test_gpu_training.c: Fashion-MNIST trains on the GPU to the CPU's accuracy, and two GPU runs
 * in deterministic mode give the same weights bit for bit (ctest backend_training_gpu).
 *
 * The models are examples/fashion_mnist_models.h's (what `make train` and bench_train time):
 * the MLP (Flatten, Dense 256 relu x2, Dense 10) and the CNN (Conv2D 32 3x3, MaxPool, Conv2D
 * 64 3x3, MaxPool, Dense 128, Dense 10); Adam 1e-3, batches of 128 shuffled with seed 1, as
 * configs/fashion_mnist_*.yaml. To keep a run short: the first TRAIN_N training images, EPOCHS
 * epochs, accuracy on the first EVAL_N test images.
 *
 * For each model:
 *   1. the reference: the same seed trained on CPU:0;
 *   2. a run on the device (its variables there, checked): its accuracy must be at least the
 *      CPU's minus MARGIN (0.015: float32 sums in another order change a few predictions of
 *      2000; a broken kernel costs tens of points), and both must beat FLOOR (far above the
 *      10% of chance);
 *   3. a run under the tf32 precision policy (TF32 tensor cores in matmuls and convolutions):
 *      the same accuracy floor as 2 (TF32 rounds products to 10 mantissa bits); runs under the
 *      mixed policies, bfloat16 and float16 (with dynamic loss scaling from 2^15): within
 *      MIXED_MARGIN of the device's float32 accuracy (the difference printed), every weight
 *      finite and float32;
 *   4. two runs on the device with tfl_ctx_set_deterministic on, the second with recorded
 *      steps (tfl_fit_opts.step_graphs: replays, on a CUDA GPU one CUDA graph a step): every
 *      variable equal bit for bit (memcmp of tfl_tensor_to_host), and steps replayed.
 * The weights after each run are saved to a checkpoint and restored into the CPU model's
 * twin; its accuracy evaluated on the CPU must equal the device's within MARGIN too (the
 * checkpoint moves a trained model between devices).
 *
 * Usage: test_gpu_training [DEVICE [mlp|cnn|all]]; DEVICE defaults to GPU:0. CPU:0 runs the
 * same steps on the CPU (the test checking itself). Without the device: "skipped: no GPU",
 * exit 77. The data: $TFL_FASHION_MNIST or /usr/share/datasets/fashion-mnist (Debian's
 * dataset-fashion-mnist, `make deps`); without it: "skipped: no Fashion-MNIST data", exit 77.
 */
#include "fashion_mnist_models.h" /* examples/: the models the example trains */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRAIN_N 12000
#define EVAL_N 2000
#define EPOCHS 2
#define SEED 1
#define MARGIN 0.015
/* the mixed policies against float32 on the same device: as MARGIN, since a 16-bit rounding
 * changes the trajectory as much as another order of sums (2 epochs, 2000 images: the same
 * noise); a broken cast or scaler costs tens of points. The difference is printed: the aim
 * is half a point */
#define MIXED_MARGIN MARGIN
#define MAX_VARS 16

static const double FLOOR[2] = {0.78, 0.78}; /* mlp, cnn: 2 epochs of 12000 images */

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *data_dir(void)
{
    const char *d = getenv("TFL_FASHION_MNIST");
    return d && *d ? d : "/usr/share/datasets/fashion-mnist";
}

static tfl_dataset *load(tfl_ctx *ctx, const char *part, int64_t n)
{
    char images[1024], labels[1024];
    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", data_dir(), part);
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", data_dir(), part);
    tfl_dataset *all = tfl_dataset_from_idx(ctx, images, labels, NULL);
    tfl_dataset *first = NULL, *rest = NULL;
    if (all && tfl_dataset_split(all, n, &first, &rest) == TFL_OK) tfl_dataset_free(rest);
    tfl_dataset_free(all);
    return first;
}

/* One run: a context of its own; the model built and trained under a scope of `device`. */
typedef struct run {
    tfl_ctx *ctx;
    tfl_model *model;
    tfl_dataset *test;
    tfl_tensor *vars[MAX_VARS];
    int n_vars;
    double accuracy, seconds;
    int replays; /* steps replayed from a recording (tfl_fit_opts.step_graphs) */
} run;

static bool make_model(run *r, const char *device, bool cnn, bool deterministic,
                       tfl_precision precision)
{
    memset(r, 0, sizeof *r);
    r->ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = SEED}, NULL);
    if (!r->ctx) return false;
    tfl_ctx_set_deterministic(r->ctx, deterministic);
    if (tfl_ctx_set_precision(r->ctx, precision) != TFL_OK) return false;
    r->test = load(r->ctx, "t10k", EVAL_N);
    if (tfl_device_scope_push(r->ctx, device) != TFL_OK) return false;
    r->model = tfl_model_new(r->ctx, cnn ? "cnn" : "mlp");
    if (r->model) fashion_mnist_add_layers(r->model, cnn);
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 1e-3;
    if (precision == TFL_PRECISION_FLOAT16) oo.loss_scale = 32768; /* Keras's 2^15 */
    tfl_optimizer *opt = tfl_optimizer_new(r->ctx, &oo);
    if (tfl_ctx_status(r->ctx) == TFL_OK)
        tfl_model_compile(r->model, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                          TFL_METRIC_ACCURACY);
    if (tfl_ctx_status(r->ctx) == TFL_OK) tfl_model_build(r->model, 3, (int64_t[]){-1, 28, 28});
    if (tfl_ctx_status(r->ctx) != TFL_OK) return false;
    r->n_vars = tfl_model_variables(r->model, TFL_VARS_ALL, r->vars, MAX_VARS);
    return r->n_vars > 0 && r->n_vars <= MAX_VARS;
}

static tfl_status count_replays(tfl_model *m, const tfl_step_logs *sl, void *user, bool *stop)
{
    (void)m, (void)stop;
    ((run *)user)->replays += sl->replayed;
    return TFL_OK;
}

static bool train_as(run *r, const char *device, bool cnn, bool deterministic,
                     tfl_precision precision, bool graphs)
{
    double t0 = now_s();
    if (!make_model(r, device, cnn, deterministic, precision)) return false;
    tfl_dataset *tr = load(r->ctx, "train", TRAIN_N);
    if (!tr || !r->test) return false;
    tfl_callback cb = {.on_step_end = count_replays, .user = r};
    tfl_model_fit(r->model, tr,
                  &(tfl_fit_opts){.epochs = EPOCHS, .batch_size = 128, .shuffle = true,
                                  .seed = SEED, .callbacks = &cb, .n_callbacks = 1,
                                  .step_graphs = graphs},
                  NULL);
    tfl_dataset_free(tr);
    if (tfl_ctx_status(r->ctx) == TFL_OK)
        tfl_model_evaluate(r->model, r->test, 500, NULL, &r->accuracy);
    r->seconds = now_s() - t0;
    return tfl_ctx_status(r->ctx) == TFL_OK;
}

static bool train(run *r, const char *device, bool cnn, bool deterministic)
{
    return train_as(r, device, cnn, deterministic, TFL_PRECISION_FLOAT32, false);
}

static void drop(run *r)
{
    if (r->ctx) tfl_ctx_free(r->ctx); /* the model, optimizer and datasets with it */
    r->ctx = NULL;
}

static const char *err(const run *r)
{
    return r->ctx ? tfl_ctx_error(r->ctx).message : "no context";
}

/* Every variable of a equal to b's, bit for bit. */
static void same_bits(const char *what, const run *a, const run *b)
{
    CHECK(a->n_vars == b->n_vars, "%s: %d variables against %d", what, a->n_vars, b->n_vars);
    for (int k = 0; k < a->n_vars && k < b->n_vars; k++) {
        size_t bytes = (size_t)tfl_tensor_numel(a->vars[k]) * 4;
        float *x = malloc(bytes), *y = malloc(bytes);
        bool ok = x && y && tfl_tensor_to_host(a->vars[k], x, bytes) == TFL_OK &&
                  tfl_tensor_to_host(b->vars[k], y, bytes) == TFL_OK;
        CHECK(ok, "%s: reading %s", what, tfl_variable_name(a->vars[k]));
        if (ok && memcmp(x, y, bytes) != 0) {
            int64_t i = 0, diff = 0;
            while (x[i] == y[i])
                i++;
            for (int64_t j = 0; j < (int64_t)(bytes / 4); j++)
                diff += memcmp(&x[j], &y[j], 4) != 0;
            CHECK(false, "%s: %s differs in %lld of %lld elements, first [%lld]: %.9g vs %.9g",
                  what, tfl_variable_name(a->vars[k]), (long long)diff, (long long)(bytes / 4),
                  (long long)i, x[i], y[i]);
        }
        free(x);
        free(y);
    }
}

/* The trained weights of r, through a checkpoint, into a fresh CPU model: its accuracy. */
static double on_cpu_from_checkpoint(const run *r, bool cnn)
{
    char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/tfl_gpu_training.%ld.safetensors", dir && *dir ? dir : "/tmp",
             (long)getpid());
    double acc = NAN;
    if (tfl_ckpt_save(r->ctx, path, r->n_vars, NULL, (const tfl_tensor *const *)r->vars, NULL) !=
        TFL_OK) {
        CHECK(false, "save: %s", err(r));
        return acc;
    }
    run c;
    if (make_model(&c, "CPU:0", cnn, false, TFL_PRECISION_FLOAT32) &&
        tfl_ckpt_restore(c.ctx, path, c.n_vars, c.vars, NULL, NULL) == TFL_OK)
        tfl_model_evaluate(c.model, c.test, 500, NULL, &acc);
    CHECK(tfl_ctx_status(c.ctx) == TFL_OK, "restore on CPU:0: %s", err(&c));
    drop(&c);
    remove(path);
    return acc;
}

static void one_model(const char *device, bool cnn)
{
    const char *name = cnn ? "cnn" : "mlp";
    run cpu, dev, d1, d2;
    bool ok = train(&cpu, "CPU:0", cnn, false);
    CHECK(ok, "%s on CPU:0: %s", name, err(&cpu));
    double ref = cpu.accuracy;
    printf("%s CPU:0: accuracy %.4f (%d epochs of %d images, %.1f s)\n", name, ref, EPOCHS, TRAIN_N,
           cpu.seconds);
    CHECK(!ok || ref >= FLOOR[cnn], "%s on CPU:0: accuracy %.4f below %.2f", name, ref, FLOOR[cnn]);
    drop(&cpu);

    ok = train(&dev, device, cnn, false);
    CHECK(ok, "%s on %s: %s", name, device, err(&dev));
    double dev_acc = ok ? dev.accuracy : ref;
    if (ok) {
        CHECK(!strcmp(tfl_tensor_device(dev.vars[0]), device), "%s: weights on %s, not %s", name,
              tfl_tensor_device(dev.vars[0]), device);
        printf("%s %s: accuracy %.4f (%.1f s)\n", name, device, dev.accuracy, dev.seconds);
        CHECK(dev.accuracy >= ref - MARGIN, "%s on %s: accuracy %.4f, CPU:0's %.4f - %.3f", name,
              device, dev.accuracy, ref, MARGIN);
        double back = on_cpu_from_checkpoint(&dev, cnn);
        printf("%s %s weights evaluated on CPU:0 through a checkpoint: accuracy %.4f\n", name,
               device, back);
        CHECK(fabs(back - dev.accuracy) <= MARGIN,
              "%s: %s's weights give %.4f on CPU:0, %.4f there", name, device, back, dev.accuracy);
    }
    drop(&dev);

    /* the tf32 policy: TF32 tensor cores in the products, the same accuracy, finite */
    run t;
    ok = train_as(&t, device, cnn, false, TFL_PRECISION_TF32, false);
    CHECK(ok, "%s on %s, tf32: %s", name, device, err(&t));
    if (ok) {
        printf("%s %s tf32: accuracy %.4f (%.1f s)\n", name, device, t.accuracy, t.seconds);
        CHECK(t.accuracy >= ref - MARGIN, "%s on %s, tf32: accuracy %.4f, CPU:0's %.4f - %.3f",
              name, device, t.accuracy, ref, MARGIN);
    }
    drop(&t);

    /* the mixed policies: master weights float32 and finite, float32's accuracy within half
     * a point */
    for (int p = 0; p < 2; p++) {
        tfl_precision pol = p ? TFL_PRECISION_FLOAT16 : TFL_PRECISION_BFLOAT16;
        ok = train_as(&t, device, cnn, false, pol, false);
        CHECK(ok, "%s on %s, %s: %s", name, device, tfl_precision_name(pol), err(&t));
        if (ok) {
            printf("%s %s %s: accuracy %.4f, %+.2f points from float32 (%.1f s)\n", name,
                   device, tfl_precision_name(pol), t.accuracy, 100 * (t.accuracy - dev_acc),
                   t.seconds);
            CHECK(fabs(t.accuracy - dev_acc) <= MIXED_MARGIN,
                  "%s on %s, %s: accuracy %.4f, float32's %.4f", name, device,
                  tfl_precision_name(pol), t.accuracy, dev_acc);
            for (int i = 0; i < t.n_vars; i++) {
                CHECK(tfl_tensor_dtype(t.vars[i]) == TFL_DTYPE_FLOAT32, "%s, %s: %s is %s", name,
                      tfl_precision_name(pol), tfl_variable_name(t.vars[i]),
                      tfl_dtype_name(tfl_tensor_dtype(t.vars[i])));
                tfl_tensor *sq = tfl_reduce_sum(t.ctx, tfl_mul(t.ctx, t.vars[i], t.vars[i]), 0,
                                                NULL, false);
                double v = NAN;
                CHECK(sq && tfl_tensor_get(sq, 0, &v) == TFL_OK && isfinite(v),
                      "%s, %s: %s is not finite", name, tfl_precision_name(pol),
                      tfl_variable_name(t.vars[i]));
            }
        }
        drop(&t);
    }

    /* the second run replays its steps from a recording (on a CUDA GPU, CUDA graphs): the
     * same bits as the plain first one, or one of the two is wrong */
    bool ok1 = train(&d1, device, cnn, true);
    bool ok2 = ok1 && train_as(&d2, device, cnn, true, TFL_PRECISION_FLOAT32, true);
    CHECK(ok1 && ok2, "%s on %s, deterministic: %s", name, device, err(ok1 ? &d2 : &d1));
    CHECK(!ok2 || d2.replays > 0, "%s on %s: no step replayed with step_graphs", name, device);
    if (ok1 && ok2) {
        char what[96];
        snprintf(what, sizeof what, "%s on %s, deterministic, recorded steps vs plain", name,
                 device);
        same_bits(what, &d1, &d2);
        CHECK(d1.accuracy == d2.accuracy, "%s: deterministic accuracies %.4f and %.4f", name,
              d1.accuracy, d2.accuracy);
        CHECK(d1.accuracy >= ref - MARGIN, "%s on %s, deterministic: accuracy %.4f, CPU's %.4f",
              name, device, d1.accuracy, ref);
        printf("%s %s deterministic: plain steps and recorded steps (%d replayed) bitwise "
               "identical (%d variables), accuracy %.4f (%.1f s, %.1f s)\n",
               name, device, d2.replays, d1.n_vars, d1.accuracy, d1.seconds, d2.seconds);
    }
    drop(&d1);
    drop(&d2);
}

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "GPU:0";
    const char *which = argc > 2 ? argv[2] : "all";
    if (strcmp(which, "all") && strcmp(which, "mlp") && strcmp(which, "cnn")) {
        fprintf(stderr, "usage: test_gpu_training [DEVICE [mlp|cnn|all]]\n");
        return 2;
    }
    tfl_ctx *probe = tfl_ctx_new(NULL, NULL);
    bool found = false;
    for (int i = 0; probe && i < tfl_device_count(probe); i++)
        found |= !strcmp(tfl_device_name(probe, i), device);
    tfl_ctx_free(probe);
    if (!found) {
        printf("skipped: no GPU (%s is not among this machine's devices)\n", device);
        return 77;
    }
    char probe_path[1024];
    snprintf(probe_path, sizeof probe_path, "%s/train-images-idx3-ubyte.gz", data_dir());
    if (access(probe_path, R_OK) != 0) {
        printf("skipped: no Fashion-MNIST data (%s; set TFL_FASHION_MNIST)\n", probe_path);
        return 77;
    }
    if (strcmp(which, "cnn")) one_model(device, false);
    if (strcmp(which, "mlp")) one_model(device, true);
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("ok: Fashion-MNIST on %s reaches CPU:0's accuracy; deterministic runs are identical, "
           "with recorded steps too\n",
           device);
    return 0;
}
