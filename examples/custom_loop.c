/*
 * examples/custom_loop.c: a training loop written by hand, for an application that wants
 * every step in its own code rather than tfl_model_fit: a model used as a function, a tape,
 * the loss, the gradients and the optimizer, batch by batch, with its own metrics.
 *
 * The problem is small and synthetic so the example runs anywhere in a second: points in
 * the plane, labelled by which of three interleaved spirals they lie on; a 2-64-64-3 ReLU
 * network learns it with Adam. It prints the loss and accuracy every 20 epochs and ends
 * with "final_accuracy A".
 *
 * Usage: custom_loop [--epochs N] [--seed S]
 */
#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POINTS 300 /* per spiral */
#define CLASSES 3
#define BATCH 50

/* Stops with the context's error (an application would recover here instead). */
static void check(tfl_ctx *ctx, const char *what)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code == TFL_OK) return;
    fprintf(stderr, "custom_loop: %s: %s: %s\n", what, tfl_status_name(e.code), e.message);
    tfl_ctx_free(ctx);
    exit(1);
}

/* The spirals as an in-memory dataset: point i of spiral c at radius r = i / POINTS and
 * angle 4r + 2πc/3, with a little deterministic jitter. */
static tfl_dataset *spirals(tfl_ctx *ctx)
{
    static float x[CLASSES * POINTS][2];
    static int32_t y[CLASSES * POINTS];
    for (int c = 0; c < CLASSES; c++)
        for (int i = 0; i < POINTS; i++) {
            int k = c * POINTS + i;
            double r = (double)i / POINTS, a = 4.0 * r + 6.283185307179586 * c / CLASSES;
            double jitter = 0.02 * sin(12.9898 * k);
            x[k][0] = (float)(r * cos(a) + jitter);
            x[k][1] = (float)(r * sin(a) - jitter);
            y[k] = c;
        }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){CLASSES * POINTS, 2}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){CLASSES * POINTS}, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL); /* copies them */
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    return ds;
}

int main(int argc, char **argv)
{
    int epochs = 200;
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--epochs")) epochs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    }
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = seed, .num_threads = 1}, &st);
    if (!ctx) return 1;

    tfl_dataset *data = spirals(ctx);
    tfl_model *net = tfl_model_new(ctx, "spiral_net");
    for (int i = 0; i < 2; i++)
        tfl_model_add(net, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 64,
                                             .activation = TFL_ACT_RELU});
    tfl_model_add(net, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = CLASSES});
    tfl_model_build(net, 2, (int64_t[]){-1, 2}); /* variables now, so we can list them */
    check(ctx, "model");

    tfl_tensor *vars[8], *grads[8];
    int n = tfl_model_variables(net, TFL_VARS_TRAINABLE, vars, 8); /* 3 kernels, 3 biases */
    if (n > 8) {
        fprintf(stderr, "custom_loop: %d trainable variables, room for 8\n", n);
        return 1;
    }
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 0.01;
    tfl_optimizer *adam = tfl_optimizer_new(ctx, &oo);
    tfl_dataset_batch(data, BATCH, &(tfl_batch_opts){.shuffle = true, .seed = seed});
    check(ctx, "setup");

    double accuracy = 0;
    for (int epoch = 0; epoch < epochs; epoch++) {
        tfl_dataset_reset(data, (uint64_t)epoch); /* a new order every epoch */
        double loss_sum = 0, correct = 0;
        int64_t seen = 0;
        for (;;) {
            tfl_frame_push(ctx); /* everything made in the step goes at the pop */
            tfl_tensor *x, *y;
            st = tfl_dataset_next(data, &x, &y);
            if (st == TFL_OK) {
                /* forward on a tape: the trainable variables are watched by themselves */
                tfl_tape *tape = tfl_tape_begin(ctx, 0);
                tfl_tensor *logits = tfl_model_call(net, x, true);
                tfl_tensor *loss = tfl_reduce_mean(
                    ctx, tfl_sparse_softmax_cross_entropy(ctx, logits, y), 0, NULL, false);
                tfl_tape_end(tape);
                /* backward, then the fused in-place update */
                tfl_tape_gradient(tape, loss, n, (const tfl_tensor *const *)vars, grads, 0);
                tfl_tape_free(tape);
                tfl_optimizer_apply(adam, n, vars, grads);
                /* metrics, outside the tape */
                double l, c;
                tfl_tensor *hits = tfl_equal(ctx, tfl_argmax(ctx, logits, -1),
                                             tfl_cast(ctx, y, TFL_DTYPE_INT64));
                tfl_tensor_get(loss, 0, &l);
                tfl_tensor_get(tfl_reduce_sum(ctx, tfl_cast(ctx, hits, TFL_DTYPE_FLOAT32), 0,
                                              NULL, false), 0, &c);
                int64_t b = tfl_tensor_dim(x, 0);
                loss_sum += l * (double)b;
                correct += c;
                seen += b;
            }
            tfl_frame_pop(ctx);
            if (st == TFL_OUT_OF_RANGE) break; /* the end of the epoch, not an error */
            check(ctx, "training step");
        }
        accuracy = correct / (double)seen;
        if (epoch % 20 == 19 || epoch == epochs - 1)
            printf("epoch %d loss %.4f accuracy %.4f\n", epoch + 1, loss_sum / (double)seen,
                   accuracy);
    }
    printf("final_accuracy %.4f\n", accuracy);
    tfl_ctx_free(ctx); /* the model, optimizer and dataset go with it */
    return 0;
}
