/*
 * bench_ddp.c: data-parallel training throughput of the Fashion-MNIST models (bench_train's:
 * examples/fashion_mnist_models.h, Adam lr 1e-3, sparse softmax cross-entropy, global
 * batches of 128 shuffled the same way on every rank), one process on 2 threads against N
 * ranks under mpirun on 1 thread each, each rank training on rows [r 128 / N, (r + 1) 128 / N)
 * of every global batch with the gradients all-reduced (tfl_comm_allreduce_gradients, the
 * step a custom loop writes: forward under a tape, gradient, all-reduce, apply). Twin:
 * torch_ddp.py (PyTorch DDP on gloo under torchrun).
 *
 * Prints (rank 0):
 *   bench ddp_<model>_single_samples_per_s  one process (not under mpirun), 2 threads
 *   bench ddp_<model>_samples_per_s         N ranks: global examples per second
 *   bench ddp_<model>_allreduce_ms          one all-reduce of the model's gradient size as one
 *                                           float32 buffer (torch_ddp.py's figure), mean of
 *                                           --iters calls after a barrier
 *   bench ddp_<model>_allreduce_gbps        gradient bytes / that time (algorithm bandwidth)
 * and notes on stderr: the all-reduce time per training step (packing, waiting for the
 * slower rank and the header message included), and with --sweep the all-reduce time of
 * buffers from 4 KiB to 16 MiB with a least-squares fit t = alpha + bytes / beta.
 * After the timed steps the ranks' variables are compared (it dies if they differ).
 *
 * Usage: bench_ddp [--model mlp|cnn] [--steps N] [--threads T] [--bucket-mb M] [--iters K]
 *                  [--sweep] [--quick] [--data DIR]
 *   OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root --oversubscribe \
 *       -np 2 bench_ddp --model mlp       (tests/bench/run_ddp.sh runs both modes and models)
 */
#define BENCH_NAME "bench_ddp"
#include "bench_util.h"
#include "fashion_mnist_models.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a of every variable's bytes, copied to the host (the variables may live on a GPU) */
static uint64_t hash_vars(tfl_ctx *ctx, tfl_model *m)
{
    tfl_tensor *v[64];
    int n = tfl_model_variables(m, TFL_VARS_ALL, v, 64);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)tfl_tensor_numel(v[i]) * tfl_dtype_size(tfl_tensor_dtype(v[i]));
        unsigned char *p = malloc(bytes ? bytes : 1);
        if (!p) die(ctx, "check", "out of host memory");
        check_status(ctx, tfl_tensor_to_host(v[i], p, bytes), "variable to host");
        for (size_t j = 0; j < bytes; j++)
            h = (h ^ p[j]) * 1099511628211ull;
        free(p);
    }
    return h;
}

/* mean seconds of one SUM all-reduce of a float32 buffer of n values */
static double time_allreduce(tfl_ctx *ctx, tfl_comm *c, int64_t n, int iters)
{
    tfl_tensor *buf = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    check_ptr(ctx, buf, "all-reduce", "buffer");
    for (int i = 0; i < 5; i++)
        check_status(ctx, tfl_comm_allreduce(c, 1, &buf, TFL_REDUCE_SUM, 0), "all-reduce");
    check_status(ctx, tfl_comm_barrier(c), "barrier");
    double t0 = now_ns();
    for (int i = 0; i < iters; i++)
        check_status(ctx, tfl_comm_allreduce(c, 1, &buf, TFL_REDUCE_SUM, 0), "all-reduce");
    double s = (now_ns() - t0) * 1e-9 / iters;
    tfl_tensor_release(buf);
    return s;
}

int main(int argc, char **argv)
{
    const char *model = "mlp", *dir = "/usr/share/datasets/fashion-mnist";
    int threads = 0, steps = 0, iters = 0;
    double bucket_mb = 25;
    bool quick = false, sweep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--sweep"))
            sweep = true;
        else if (i + 1 < argc && !strcmp(argv[i], "--model"))
            model = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--steps"))
            steps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--iters"))
            iters = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--bucket-mb"))
            bucket_mb = atof(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--data"))
            dir = argv[++i];
        else
            die(NULL, "arguments",
                "usage: bench_ddp [--model mlp|cnn] [--steps N] [--threads T] "
                "[--bucket-mb M] [--iters K] [--sweep] [--quick] [--data DIR]");
    }
    bool cnn = !strcmp(model, "cnn");
    if (!cnn && strcmp(model, "mlp")) die(NULL, "arguments", "--model is mlp or cnn");
    const int64_t batch = 128, warm = quick ? 3 : 20;
    if (!steps) steps = quick ? 5 : cnn ? 60 : 200;
    if (!iters) iters = quick ? 10 : 100;

    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 1}, &st);
    if (!ctx) die(NULL, "context", tfl_status_name(st));
    tfl_comm *comm =
        tfl_comm_world(ctx, &(tfl_comm_opts){.bucket_bytes = (int64_t)(bucket_mb * 1048576)});
    check_ptr(ctx, comm, "communicator", "tfl_comm_world");
    int rank = tfl_comm_rank(comm), size = tfl_comm_size(comm);
    if (!threads) threads = size == 1 ? 2 : 1;
    check_status(ctx, tfl_ctx_set_num_threads(ctx, threads), "threads");
    char images[1024], labels[1024];
    snprintf(images, sizeof images, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte.gz", dir);
    tfl_dataset *all = tfl_dataset_from_idx(ctx, images, labels, NULL);
    check_ptr(ctx, all, "load", "tfl_dataset_from_idx");
    if ((warm + steps) * batch > tfl_dataset_size(all)) die(ctx, "arguments", "too many steps");
    check_status(ctx, tfl_dataset_batch(all, batch, &(tfl_batch_opts){.shuffle = true, .seed = 1}),
                 "batch");

    tfl_model *m = tfl_model_new(ctx, model);
    fashion_mnist_add_layers(m, cnn);
    check_status(ctx, tfl_model_build(m, 3, (int64_t[]){-1, 28, 28}), "build");
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    check_status(ctx, tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                 "compile");
    tfl_tensor *vars[64], *grads[64], *allv[64];
    int n = tfl_model_variables(m, TFL_VARS_TRAINABLE, vars, 64);
    int nall = tfl_model_variables(m, TFL_VARS_ALL, allv, 64);
    check_status(ctx, tfl_comm_broadcast(comm, nall, allv, 0), "broadcast");
    int64_t lo = (int64_t)rank * batch / size, hi = (int64_t)(rank + 1) * batch / size;
    double loss = 0;

    double t0 = 0;
    for (int64_t s = 0; s < warm + steps; s++) {
        if (s == warm) {
            check_status(ctx, tfl_comm_barrier(comm), "barrier");
            tfl_comm_reset_stats(comm);
            t0 = now_ns();
        }
        check_status(ctx, tfl_frame_push(ctx), "frame");
        tfl_tensor *x, *y;
        check_status(ctx, tfl_dataset_next(all, &x, &y), "next batch");
        if (size > 1) {
            x = tfl_slice(ctx, x, (int64_t[]){lo, 0, 0}, (int64_t[]){hi - lo, -1, -1});
            y = tfl_slice(ctx, y, (int64_t[]){lo}, (int64_t[]){hi - lo});
            check_ptr(ctx, y, "step", "slice");
        }
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tensor *pred = tfl_model_call(m, x, true);
        tfl_tensor *per =
            tfl_loss_per_example(ctx, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, pred, y);
        tfl_tensor *l = tfl_reduce_mean(ctx, per, 0, NULL, false);
        tfl_tape_end(tape);
        check_ptr(ctx, l, "step", "forward");
        check_status(ctx, tfl_tape_gradient(tape, l, n, (const tfl_tensor *const *)vars, grads, 0),
                     "gradient");
        tfl_tape_free(tape);
        check_status(ctx, tfl_comm_allreduce_gradients(comm, n, vars, grads, (double)(hi - lo)),
                     "all-reduce");
        check_status(ctx, tfl_optimizer_apply(opt, n, vars, grads), "apply");
        check_status(ctx, tfl_tensor_get(l, 0, &loss), "loss");
        check_status(ctx, tfl_frame_pop(ctx), "frame");
    }
    check_status(ctx, tfl_comm_barrier(comm), "barrier");
    double wall = (now_ns() - t0) * 1e-9;
    tfl_comm_stats cs = tfl_comm_get_stats(comm);
    if (!(loss > 0 && loss < 3)) die(ctx, "timed steps", "the loss is not finite and falling");
    /* every rank holds the same variables */
    uint64_t h = hash_vars(ctx, m);
    double mine = (double)(h >> 11), sums[2] = {mine, mine * mine};
    check_status(ctx, tfl_comm_allreduce_doubles(comm, sums, 2), "hash");
    if (sums[0] * sums[0] != sums[1] * size) die(ctx, "check", "the ranks' variables differ");

    int64_t params = tfl_model_param_count(m, TFL_VARS_TRAINABLE);
    if (size == 1) {
        if (rank == 0)
            printf("bench ddp_%s_single_samples_per_s %.0f samples/s\n", model,
                   (double)steps * batch / wall);
    } else {
        double ar = time_allreduce(ctx, comm, params, iters);
        if (rank == 0) {
            printf("bench ddp_%s_samples_per_s %.0f samples/s\n", model,
                   (double)steps * batch / wall);
            printf("bench ddp_%s_allreduce_ms %.3f ms\n", model, ar * 1e3);
            printf("bench ddp_%s_allreduce_gbps %.2f GB/s\n", model,
                   (double)params * 4 / ar * 1e-9);
            fprintf(stderr,
                    "bench_ddp note: %d ranks x %d thread(s); in training the gradient "
                    "all-reduce took %.3f ms a step (%lld messages, %.0f KiB a step); last "
                    "loss %.3f; variables identical on every rank\n",
                    size, threads, cs.seconds / steps * 1e3, (long long)cs.messages,
                    (double)cs.bytes / steps / 1024, loss);
        }
        if (sweep) {
            double sx = 0, sy = 0, sxx = 0, sxy = 0;
            int k = 0;
            for (int64_t bytes = 4096; bytes <= 16 << 20; bytes *= 4, k++) {
                double t = time_allreduce(ctx, comm, bytes / 4, bytes >= 1 << 22 ? 20 : iters);
                if (rank == 0)
                    fprintf(stderr, "bench_ddp note: all-reduce of %8lld bytes: %.3f ms\n",
                            (long long)bytes, t * 1e3);
                sx += (double)bytes, sy += t, sxx += (double)bytes * (double)bytes,
                    sxy += (double)bytes * t;
            }
            double slope = (k * sxy - sx * sy) / (k * sxx - sx * sx), alpha = (sy - slope * sx) / k;
            if (rank == 0)
                fprintf(stderr, "bench_ddp note: fit t = %.1f us + bytes / %.2f GB/s\n",
                        alpha * 1e6, 1e-9 / slope);
        }
    }
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(all);
    tfl_comm_free(comm);
    tfl_ctx_free(ctx);
    return 0;
}
