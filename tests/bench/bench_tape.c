/*
 * bench_tape.c: benchmarks of the gradient tape on the CPU. Two workloads:
 *
 *  - a chain of CHAIN_LEN tiny ops on float32 [4] (mul by a constant, add a constant, tanh,
 *    sigmoid, in turn) starting from a trainable variable, each chain in a frame of its
 *    own (the frame pop included): run plainly (no tape: tape_chain_forward_plain), under a
 *    tape freed without a gradient (tape_chain_record; tape_chain_overhead is record minus
 *    plain), and under a tape followed by tfl_tape_gradient with respect to the variable
 *    (tape_chain_fwd_bwd). Figures are per op of the chain;
 *  - an MLP 784-256-256-10 (ReLU) on a batch of 128 random float32 inputs with integer
 *    labels, weights and biases as trainable variables (glorot_uniform kernels, zero
 *    biases), loss the mean softmax cross-entropy written with log_softmax, one_hot, mul,
 *    reduce_sum, neg and reduce_mean: a step is the forward pass without a tape
 *    (mlp_fwd_ms), or the forward pass under a tape and tfl_tape_gradient with respect to
 *    the 6 variables (mlp_fwd_bwd_ms), each step in a frame of its own; mlp_step_allocs is
 *    the allocations (fresh or from the cache) a training step makes once warmed up.
 * Each time is the best of REPS blocks (chains, or MLP steps) after a warm-up, the kinds of
 * a workload taking turns block by block so that noise from the rest of the machine hits
 * them alike; the notes on stderr add the median and fastest single MLP steps.
 *
 * Prints one line per figure, and nothing else on stdout (notes go to stderr, each line
 * starting "bench_tape note: "; errors start "bench_tape: "):
 *
 *     bench <name> <value> <unit>
 *
 * Timings never fail the program; a failed op (an error kept by the context), a chain
 * value or gradient that differs from the one computed on the host, an MLP gradient that
 * is missing, not finite or all zero, or a step that leaves tensors or bytes behind does,
 * with a message on stderr. `--quick` shrinks the work for smoke runs; `--threads N` sets
 * the kernels' threads (default 2); `--only chain|mlp` runs one workload (for profiling).
 */
#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_tape"
#include "bench_util.h"

#define CHAIN_LEN 100 /* ops per chain */
#define REPS 7        /* blocks of each figure; the best counts */
#define MLP_BATCH 128
#define MLP_IN 784
#define MLP_HIDDEN 256
#define MLP_CLASSES 10
#define MLP_VARS 6

typedef struct bench_cfg {
    long chains;      /* chains per block (fwd_bwd: a fifth of them) */
    int mlp_warmup;   /* untimed steps of each kind before the MLP blocks */
    int mlp_steps;    /* steps per MLP block */
} bench_cfg;

/* ---- the chain ------------------------------------------------------------------------ */

static const float chain_x0[4] = {0.3f, -1.2f, 0.8f, 2.0f};
static const float chain_c[4] = {0.5f, -0.25f, 0.75f, 1.5f};

/* CHAIN_LEN ops from x: mul by c, add c, tanh, sigmoid, in turn. NULL when one failed. */
static tfl_tensor *run_chain(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *c)
{
    const tfl_tensor *h = x;
    for (int i = 0; i < CHAIN_LEN; i++) {
        switch (i & 3) {
        case 0: h = tfl_mul(ctx, h, c); break;
        case 1: h = tfl_add(ctx, h, c); break;
        case 2: h = tfl_tanh(ctx, h); break;
        default: h = tfl_sigmoid(ctx, h); break;
        }
    }
    return (tfl_tensor *)h;
}

/* The chain's value and its derivative (elementwise: d h / d x) in double on the host. */
static void chain_on_host(double *value, double *deriv)
{
    for (int k = 0; k < 4; k++) {
        double h = chain_x0[k], d = 1.0, c = chain_c[k];
        for (int i = 0; i < CHAIN_LEN; i++) {
            switch (i & 3) {
            case 0: h *= c; d *= c; break;
            case 1: h += c; break;
            case 2: h = tanh(h); d *= 1.0 - h * h; break;
            default: h = 1.0 / (1.0 + exp(-h)); d *= h * (1.0 - h); break;
            }
        }
        value[k] = h;
        deriv[k] = d;
    }
}

typedef enum chain_mode { CHAIN_PLAIN, CHAIN_RECORD, CHAIN_FWD_BWD } chain_mode;

/* Nanoseconds per op of `chains` chains of `mode`, each in a frame of its own. */
static double chain_block(tfl_ctx *ctx, chain_mode mode, const tfl_tensor *x,
                          const tfl_tensor *c, long chains, const char *phase)
{
    double t0 = now_ns();
    for (long k = 0; k < chains; k++) {
        check_status(ctx, tfl_frame_push(ctx), phase);
        tfl_tape *tape = mode == CHAIN_PLAIN ? NULL : tfl_tape_begin(ctx, 0);
        tfl_tensor *h = run_chain(ctx, x, c);
        if (mode == CHAIN_FWD_BWD) {
            tfl_tensor *g = NULL;
            (void)tfl_tape_gradient(tape, h, 1, &x, &g, 0);
        }
        tfl_tape_free(tape);
        check_status(ctx, tfl_frame_pop(ctx), phase);
    }
    double t = (now_ns() - t0) / ((double)chains * CHAIN_LEN);
    check(ctx, phase); /* every op returns NULL after a failure, so once per block will do */
    return t;
}

/*
 * Best of REPS blocks of each mode, in nanoseconds per op, after a warm-up block of each.
 * The modes take turns block by block, so a stretch of noise from the rest of the machine
 * hits them alike and tape_chain_overhead (record - plain) compares like with like.
 * fwd_bwd costs a few times the forward: its blocks have a fifth of the chains.
 */
static void chain_best(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *c, long chains,
                       double best[3])
{
    static const char *phases[3] = {"tape_chain_forward_plain", "tape_chain_record",
                                    "tape_chain_fwd_bwd"};
    long n[3] = {chains, chains, chains / 5 > 0 ? chains / 5 : 1};
    for (int m = 0; m < 3; m++) {
        (void)chain_block(ctx, (chain_mode)m, x, c, n[m] / 10 > 0 ? n[m] / 10 : 1, phases[m]);
        best[m] = INFINITY;
    }
    for (int r = 0; r < REPS; r++)
        for (int m = 0; m < 3; m++) {
            double t = chain_block(ctx, (chain_mode)m, x, c, n[m], phases[m]);
            if (t < best[m]) best[m] = t;
        }
}

/* One recorded chain and its gradient, checked against the host (and the tape's size). */
static void chain_verify(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *c)
{
    const char *phase = "tape_chain check";
    double want_h[4], want_d[4];
    chain_on_host(want_h, want_d);
    check_status(ctx, tfl_frame_push(ctx), phase);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    if (tape == NULL) {
        check(ctx, phase);
        die(ctx, phase, "tfl_tape_begin returned NULL without an error");
    }
    tfl_tensor *h = run_chain(ctx, x, c);
    check_ptr(ctx, h, phase, "an op");
    if (tfl_tape_size(tape) != CHAIN_LEN) {
        char why[96];
        snprintf(why, sizeof why, "the tape recorded %lld ops, expected %d",
                 (long long)tfl_tape_size(tape), CHAIN_LEN);
        die(ctx, phase, why);
    }
    tfl_tensor *g = NULL;
    check_status(ctx, tfl_tape_gradient(tape, h, 1, &x, &g, 0), phase);
    tfl_tape_free(tape);
    check_ptr(ctx, g, phase, "an op");
    float got_h[4], got_d[4];
    check_status(ctx, tfl_tensor_to_host(h, got_h, sizeof got_h), phase);
    check_status(ctx, tfl_tensor_to_host(g, got_d, sizeof got_d), phase);
    for (int k = 0; k < 4; k++) {
        double eh = fabs(got_h[k] - want_h[k]), ed = fabs(got_d[k] - want_d[k]);
        if (!(eh <= 1e-5 + 1e-4 * fabs(want_h[k])) || !(ed <= 1e-6 + 1e-3 * fabs(want_d[k]))) {
            char why[192];
            snprintf(why, sizeof why, "element %d: value %g (host %g), gradient %g (host %g)",
                     k, (double)got_h[k], want_h[k], (double)got_d[k], want_d[k]);
            die(ctx, phase, why);
        }
    }
    check_status(ctx, tfl_frame_pop(ctx), phase);
}

static void bench_chain(tfl_ctx *ctx, const bench_cfg *cfg)
{
    const char *phase = "tape_chain setup";
    const int64_t s4[1] = {4};
    tfl_tensor *x0 = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, chain_x0);
    tfl_tensor *x = tfl_variable_new(ctx, x0, &(tfl_variable_opts){.name = "chain_x"});
    tfl_tensor *c = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s4, chain_c);
    check(ctx, phase);
    check_ptr(ctx, x, phase, "an op");
    check_ptr(ctx, c, phase, "an op");
    tfl_tensor_release(x0);

    chain_verify(ctx, x, c);

    double best[3];
    chain_best(ctx, x, c, cfg->chains, best);
    printf("bench tape_chain_forward_plain %.1f ns\n", best[CHAIN_PLAIN]);
    printf("bench tape_chain_record %.1f ns\n", best[CHAIN_RECORD]);
    printf("bench tape_chain_overhead %.1f ns\n", best[CHAIN_RECORD] - best[CHAIN_PLAIN]);
    printf("bench tape_chain_fwd_bwd %.3f us\n", best[CHAIN_FWD_BWD] / 1e3);
    fflush(stdout);

    tfl_tensor_release(x);
    tfl_tensor_release(c);
}

/* ---- the MLP --------------------------------------------------------------------------- */

typedef struct mlp {
    tfl_tensor *vars[MLP_VARS]; /* kernel0, bias0, kernel1, bias1, kernel2, bias2 */
    tfl_tensor *x;              /* float32 [MLP_BATCH, MLP_IN] */
    tfl_tensor *labels;         /* int32 [MLP_BATCH] */
} mlp;

static const int64_t mlp_width[4] = {MLP_IN, MLP_HIDDEN, MLP_HIDDEN, MLP_CLASSES};

static void mlp_init(tfl_ctx *ctx, mlp *m)
{
    const char *phase = "mlp setup";
    static const char *names[MLP_VARS] = {"dense0/kernel", "dense0/bias", "dense1/kernel",
                                          "dense1/bias", "dense2/kernel", "dense2/bias"};
    for (int l = 0; l < 3; l++) {
        const int64_t ks[2] = {mlp_width[l], mlp_width[l + 1]}, bs[1] = {mlp_width[l + 1]};
        tfl_initializer kinit = tfl_init_glorot_uniform(1000u + (uint64_t)l);
        tfl_initializer binit = tfl_init_zeros();
        m->vars[2 * l] = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, ks, &kinit,
                                               &(tfl_variable_opts){.name = names[2 * l]});
        m->vars[2 * l + 1] = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, bs, &binit,
                                                   &(tfl_variable_opts){.name = names[2 * l + 1]});
    }
    const int64_t xs[2] = {MLP_BATCH, MLP_IN}, ls[1] = {MLP_BATCH};
    m->x = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, xs, 0.0, 1.0, 7u);
    int32_t labels[MLP_BATCH];
    uint32_t s = 12345u;
    for (int i = 0; i < MLP_BATCH; i++) {
        s = s * 1664525u + 1013904223u;
        labels[i] = (int32_t)((s >> 8) % MLP_CLASSES);
    }
    m->labels = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, ls, labels);
    check(ctx, phase);
    for (int i = 0; i < MLP_VARS; i++) check_ptr(ctx, m->vars[i], phase, "an op");
    check_ptr(ctx, m->x, phase, "an op");
    check_ptr(ctx, m->labels, phase, "an op");
}

static void mlp_free(mlp *m)
{
    for (int i = 0; i < MLP_VARS; i++) tfl_tensor_release(m->vars[i]);
    tfl_tensor_release(m->x);
    tfl_tensor_release(m->labels);
}

/* The mean softmax cross-entropy of the batch (a scalar); NULL when an op failed. */
static tfl_tensor *mlp_loss(tfl_ctx *ctx, const mlp *m)
{
    const tfl_tensor *h = m->x;
    for (int l = 0; l < 3; l++) {
        tfl_tensor *z = tfl_add(ctx, tfl_matmul(ctx, h, m->vars[2 * l], 0), m->vars[2 * l + 1]);
        h = l < 2 ? tfl_relu(ctx, z) : z;
    }
    tfl_tensor *logp = tfl_log_softmax(ctx, h, -1);
    tfl_tensor *onehot = tfl_one_hot(ctx, m->labels, MLP_CLASSES, 1.0, 0.0, TFL_DTYPE_FLOAT32);
    const int class_axis = 1;
    tfl_tensor *nll = tfl_neg(ctx, tfl_reduce_sum(ctx, tfl_mul(ctx, onehot, logp), 1,
                                                  &class_axis, false));
    return tfl_reduce_mean(ctx, nll, 0, NULL, false);
}

/* One step in a frame of its own: the forward pass, and with `backward` under a tape with
 * tfl_tape_gradient for the 6 variables. With `grads` set, the gradients are copied into
 * grads[i] (MLP_VARS host arrays); with `loss_out` set, the loss into *loss_out. */
static void mlp_step(tfl_ctx *ctx, const mlp *m, bool backward, float **grads, float *loss_out,
                     const char *phase)
{
    check_status(ctx, tfl_frame_push(ctx), phase);
    tfl_tape *tape = backward ? tfl_tape_begin(ctx, 0) : NULL;
    tfl_tensor *loss = mlp_loss(ctx, m);
    if (backward) {
        tfl_tensor *g[MLP_VARS];
        tfl_status st = tfl_tape_gradient(tape, loss, MLP_VARS,
                                          (const tfl_tensor *const *)m->vars, g, 0);
        tfl_tape_free(tape);
        check_status(ctx, st, phase);
        for (int i = 0; grads && i < MLP_VARS; i++) {
            check_ptr(ctx, g[i], phase, "an op");
            const int64_t n = tfl_tensor_numel(m->vars[i]);
            if (tfl_tensor_numel(g[i]) != n) die(ctx, phase, "a gradient has the wrong size");
            check_status(ctx, tfl_tensor_to_host(g[i], grads[i], (size_t)n * sizeof(float)),
                         phase);
        }
    }
    if (loss_out) {
        check_ptr(ctx, loss, phase, "an op");
        check_status(ctx, tfl_tensor_to_host(loss, loss_out, sizeof *loss_out), phase);
    }
    check_status(ctx, tfl_frame_pop(ctx), phase);
}

/* One training step, its gradients checked: present, finite, not all zero; and the bias of
 * the last layer's gradient, the batch mean of softmax - one_hot, sums to 0 over classes. */
static void mlp_verify(tfl_ctx *ctx, const mlp *m)
{
    const char *phase = "mlp check";
    float *grads[MLP_VARS];
    for (int i = 0; i < MLP_VARS; i++) {
        grads[i] = malloc((size_t)tfl_tensor_numel(m->vars[i]) * sizeof(float));
        if (!grads[i]) die(ctx, phase, "out of host memory");
    }
    float loss = NAN;
    mlp_step(ctx, m, true, grads, &loss, phase);
    char why[160];
    if (!isfinite(loss) || loss <= 0.0f) {
        snprintf(why, sizeof why, "the loss is %g", (double)loss);
        die(ctx, phase, why);
    }
    for (int i = 0; i < MLP_VARS; i++) {
        const int64_t n = tfl_tensor_numel(m->vars[i]);
        double l1 = 0.0, sum = 0.0;
        for (int64_t k = 0; k < n; k++) {
            if (!isfinite(grads[i][k])) {
                snprintf(why, sizeof why, "gradient of %s: element %lld is %g",
                         tfl_variable_name(m->vars[i]), (long long)k, (double)grads[i][k]);
                die(ctx, phase, why);
            }
            l1 += fabs(grads[i][k]);
            sum += grads[i][k];
        }
        fprintf(stderr, "bench_tape note: mlp check: |grad %s|_1 = %.6g\n",
                tfl_variable_name(m->vars[i]), l1);
        if (!(l1 > 0.0)) {
            snprintf(why, sizeof why, "the gradient of %s is all zero",
                     tfl_variable_name(m->vars[i]));
            die(ctx, phase, why);
        }
        if (i == MLP_VARS - 1 && !(fabs(sum) <= 1e-5)) {
            snprintf(why, sizeof why, "the gradient of %s sums to %g, expected 0",
                     tfl_variable_name(m->vars[i]), sum);
            die(ctx, phase, why);
        }
    }
    fprintf(stderr, "bench_tape note: mlp check: loss %.6g (ln 10 = 2.302585)\n", (double)loss);
    for (int i = 0; i < MLP_VARS; i++) free(grads[i]);
}

/* Milliseconds per step, best of REPS blocks of cfg->mlp_steps steps, forward only [0]
 * and training steps [1], taking turns block by block after cfg->mlp_warmup steps of each;
 * *allocs gets the allocations (fresh or cached) per training step. Dies when the timed
 * steps leave tensors or bytes behind. */
static void mlp_time(tfl_ctx *ctx, const mlp *m, const bench_cfg *cfg, double best[2],
                     double *allocs)
{
    static const char *phases[2] = {"mlp_fwd_ms", "mlp_fwd_bwd_ms"};
    const int n = REPS * cfg->mlp_steps;
    double *t[2];
    uint64_t served = 0, fresh = 0;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < cfg->mlp_warmup; i++) mlp_step(ctx, m, k == 1, NULL, NULL, phases[k]);
        t[k] = malloc(sizeof(double) * (size_t)n);
        if (!t[k]) die(ctx, phases[k], "out of host memory");
        best[k] = INFINITY;
    }
    for (int r = 0; r < REPS; r++) {
        for (int k = 0; k < 2; k++) {
            const tfl_alloc_stats s0 = cpu_stats(ctx, phases[k]);
            const double b0 = now_ns();
            for (int i = 0; i < cfg->mlp_steps; i++) {
                const double t0 = now_ns();
                mlp_step(ctx, m, k == 1, NULL, NULL, phases[k]);
                t[k][r * cfg->mlp_steps + i] = (now_ns() - t0) / 1e6;
            }
            const double block = (now_ns() - b0) / 1e6 / cfg->mlp_steps;
            if (block < best[k]) best[k] = block;
            const tfl_alloc_stats s1 = cpu_stats(ctx, phases[k]);
            check_nothing_left(ctx, &s0, &s1, cfg->mlp_steps, "steps", phases[k]);
            if (k == 1) {
                fresh += s1.fresh_allocs - s0.fresh_allocs;
                served += (s1.fresh_allocs - s0.fresh_allocs) + (s1.cache_hits - s0.cache_hits);
            }
        }
    }
    *allocs = (double)served / n;
    for (int k = 0; k < 2; k++) {
        double fastest = INFINITY;
        for (int i = 0; i < n; i++) fastest = t[k][i] < fastest ? t[k][i] : fastest;
        fprintf(stderr, "bench_tape note: %s: best block %.3f ms a step; over %d steps "
                "median %.3f ms, fastest %.3f ms\n", phases[k], best[k], n, median(t[k], n),
                fastest);
        free(t[k]);
    }
    fprintf(stderr, "bench_tape note: mlp_step_allocs: %.1f allocations a training step "
            "(%.2f fresh)\n", *allocs, (double)fresh / n);
}

static void bench_mlp(tfl_ctx *ctx, const bench_cfg *cfg)
{
    mlp m;
    mlp_init(ctx, &m);
    mlp_verify(ctx, &m);

    double best[2], allocs = 0.0;
    mlp_time(ctx, &m, cfg, best, &allocs);
    printf("bench mlp_fwd_ms %.3f ms\n", best[0]);
    printf("bench mlp_fwd_bwd_ms %.3f ms\n", best[1]);
    printf("bench mlp_step_allocs %.0f count\n", allocs);
    fflush(stdout);

    mlp_free(&m);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_tape [--quick] [--threads N] [--only chain|mlp]\n"
               "  --quick       fewer chains and steps (smoke run)\n"
               "  --threads N   threads for kernels (default 2)\n"
               "  --only WHAT   run only the chain or only the MLP figures\n");
}

int main(int argc, char **argv)
{
    bool quick = false;
    int threads = 2;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1) {
                fprintf(stderr, "bench_tape: --threads wants a positive count\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "chain") == 0 || strcmp(argv[i + 1], "mlp") == 0)) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_SUCCESS;
        } else {
            fprintf(stderr, "bench_tape: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const bench_cfg cfg = quick ? (bench_cfg){200, 2, 2} : (bench_cfg){2000, 5, 10};

    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = threads}, &st);
    if (ctx == NULL) {
        fprintf(stderr, "bench_tape: tfl_ctx_new: %s\n", tfl_status_name(st));
        return EXIT_FAILURE;
    }
    printf("bench tape_threads %d count\n", tfl_ctx_num_threads(ctx));
    fflush(stdout);

    if (!only || strcmp(only, "chain") == 0) bench_chain(ctx, &cfg);
    if (!only || strcmp(only, "mlp") == 0) bench_mlp(ctx, &cfg);

    check(ctx, "teardown");
    tfl_ctx_free(ctx);
    return EXIT_SUCCESS;
}
