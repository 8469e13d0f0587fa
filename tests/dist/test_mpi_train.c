/* test_mpi_train.c (under mpirun -np 2 and -np 3): the collectives between real ranks
 * (broadcast, sum, mean, weighted mean of mixed dtypes with uneven buckets and 1-byte
 * buckets, NULL gradients on some ranks, doubles, barrier) through tfl_comm_world, which
 * loads libtapeflow_mpi; then data-parallel training of an MLP in a custom loop: every rank
 * starts from other weights (its own ctx seed), rank 0's are broadcast, each rank trains on
 * its rows [floor(r m / p), floor((r + 1) m / p)) of every global batch of m = 128, and after
 * every step every rank's variables and Adam slots hash the same; after the steps they
 * equal, within a measured tolerance, one process trained on the whole batches (computed on
 * every rank in a context of its own); fit refused on every rank when the ranks built
 * different models. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

#include "tfl_test_util.h"

#define FEATURES 8
#define CLASSES 3
#define BATCH 128
#define STEPS 12

static tfl_ctx *new_ctx(uint64_t seed)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = seed, .num_threads = 1}, NULL);
    assert_non_null(ctx);
    return ctx;
}

static tfl_comm *world(tfl_ctx *ctx, int64_t bucket)
{
    tfl_comm *c = tfl_comm_world(ctx, &(tfl_comm_opts){.bucket_bytes = bucket});
    if (!c) print_error("tfl_comm_world: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(c);
    assert_string_equal(tfl_comm_backend(c), "mpi");
    return c;
}

static tfl_tensor *filled(tfl_ctx *ctx, tfl_dtype dt, int64_t n, int rank, double scale)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * (double)(rank + 1) + (double)i;
    size_t es = tfl_dtype_size(dt);
    void *h = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++)
        switch (dt) {
        case TFL_DTYPE_FLOAT32:
            ((float *)h)[i] = (float)v[i];
            break;
        case TFL_DTYPE_FLOAT64:
            ((double *)h)[i] = v[i];
            break;
        case TFL_DTYPE_INT32:
            ((int32_t *)h)[i] = (int32_t)v[i];
            break;
        default:
            ((int64_t *)h)[i] = (int64_t)v[i];
            break;
        }
    tfl_tensor *t = tfl_tensor_new(ctx, dt, 1, (int64_t[]){n}, h);
    free(v), free(h);
    assert_non_null(t);
    return t;
}

static double at(const tfl_tensor *t, int64_t i)
{
    double v;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

/* sum over ranks r of (scale (r + 1) + i) */
static double want_sum(int p, double scale, int64_t i)
{
    return scale * p * (p + 1) / 2.0 + (double)p * (double)i;
}

static void test_collectives(void **state)
{
    (void)state;
    static const int64_t buckets[] = {1, 6, 20, 0};
    for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++) {
        tfl_ctx *ctx = new_ctx(1);
        tfl_comm *c = world(ctx, buckets[b]);
        int r = tfl_comm_rank(c), p = tfl_comm_size(c);
        assert_true(p >= 2 && r >= 0 && r < p);
        tfl_tensor *f32 = filled(ctx, TFL_DTYPE_FLOAT32, 7, r, 10);
        tfl_tensor *i64 = filled(ctx, TFL_DTYPE_INT64, 3, r, 1000);
        tfl_tensor *f64 = filled(ctx, TFL_DTYPE_FLOAT64, 5, r, 0.5);
        tfl_tensor *i32 = filled(ctx, TFL_DTYPE_INT32, 2, r, 7);
        tfl_tensor *list[] = {f32, i64, NULL, f64, i32};
        assert_int_equal(tfl_comm_allreduce(c, 5, list, TFL_REDUCE_SUM, 0), TFL_OK);
        for (int i = 0; i < 7; i++)
            assert_true(at(f32, i) == want_sum(p, 10, i));
        for (int i = 0; i < 3; i++)
            assert_true(at(i64, i) == want_sum(p, 1000, i));
        for (int i = 0; i < 5; i++)
            assert_true(at(f64, i) == want_sum(p, 0.5, i));
        for (int i = 0; i < 2; i++)
            assert_true(at(i32, i) == want_sum(p, 7, i));
        /* weighted mean with weights r + 1: sum (r+1)(s(r+1) + i) / sum (r+1) */
        tfl_tensor *w = filled(ctx, TFL_DTYPE_FLOAT64, 4, r, 1);
        assert_int_equal(tfl_comm_allreduce(c, 1, &w, TFL_REDUCE_WEIGHTED_MEAN, r + 1.0), TFL_OK);
        double sw = 0, sww = 0;
        for (int k = 0; k < p; k++)
            sw += k + 1, sww += (k + 1.0) * (k + 1.0);
        for (int i = 0; i < 4; i++)
            assert_true(fabs(at(w, i) - (sww + sw * i) / sw) < 1e-12);
        tfl_tensor *m = filled(ctx, TFL_DTYPE_FLOAT32, 3, r, 4);
        assert_int_equal(tfl_comm_allreduce(c, 1, &m, TFL_REDUCE_MEAN, 0), TFL_OK);
        for (int i = 0; i < 3; i++)
            assert_true(fabs(at(m, i) - want_sum(p, 4, i) / p) < 1e-5);
        /* gradients: variable 0's is NULL on rank 1 only (zeros there), variable 1's on every
         * rank (stays NULL), variable 2's everywhere; weights: rows 0 on the last rank */
        tfl_tensor *v0 = filled(ctx, TFL_DTYPE_FLOAT32, 6, 0, 0);
        tfl_tensor *v1 = filled(ctx, TFL_DTYPE_FLOAT64, 2, 0, 0);
        tfl_tensor *v2 = filled(ctx, TFL_DTYPE_FLOAT64, 3, 0, 0);
        tfl_tensor *g0 = r == 1 ? NULL : filled(ctx, TFL_DTYPE_FLOAT32, 6, r, 2);
        /* a rank without rows may hold NaN gradients: they weigh 0 */
        tfl_tensor *g2 = r == p - 1 ? tfl_fill(ctx, TFL_DTYPE_FLOAT64, 1, (int64_t[]){3}, NAN)
                                    : filled(ctx, TFL_DTYPE_FLOAT64, 3, r, 3);
        assert_non_null(g2);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *vars[] = {v0, v1, v2}, *grads[] = {g0, NULL, g2};
        double rows = r == p - 1 ? 0 : 10.0 * (r + 1);
        assert_int_equal(tfl_comm_allreduce_gradients(c, 3, vars, grads, rows), TFL_OK);
        assert_null(grads[1]);
        assert_non_null(grads[0]);
        double W = 0, s0 = 0, s2 = 0;
        for (int k = 0; k < p - 1; k++)
            W += 10.0 * (k + 1);
        for (int i = 0; i < 6; i++) {
            s0 = 0;
            for (int k = 0; k < p - 1; k++)
                if (k != 1) s0 += 10.0 * (k + 1) * (2.0 * (k + 1) + i);
            assert_true(fabs(at(grads[0], i) - s0 / W) < 1e-4);
        }
        for (int i = 0; i < 3; i++) {
            s2 = 0;
            for (int k = 0; k < p - 1; k++)
                s2 += 10.0 * (k + 1) * (3.0 * (k + 1) + i);
            assert_true(fabs(at(grads[2], i) - s2 / W) < 1e-12);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        if (g0) tfl_tensor_release(g0);
        tfl_tensor_release(g2);
        /* broadcast from the last rank: mixed dtypes, odd byte counts */
        tfl_tensor *bl = tfl_fill(ctx, TFL_DTYPE_BOOL, 1, (int64_t[]){3}, r == p - 1);
        tfl_tensor *bc = filled(ctx, TFL_DTYPE_FLOAT32, 5, r, 100);
        tfl_tensor *bcl[] = {bl, NULL, bc, i32};
        assert_int_equal(tfl_comm_broadcast(c, 4, bcl, p - 1), TFL_OK);
        for (int i = 0; i < 5; i++)
            assert_true(at(bc, i) == 100.0 * p + i);
        assert_true(at(bl, 2) == 1);
        double d[3] = {1, r, 0.25};
        assert_int_equal(tfl_comm_allreduce_doubles(c, d, 3), TFL_OK);
        assert_true(d[0] == p && d[1] == p * (p - 1) / 2.0 && d[2] == 0.25 * p);
        assert_int_equal(tfl_comm_barrier(c), TFL_OK);
        /* weights summing to 0: the same error on every rank, nobody waits */
        assert_int_equal(tfl_comm_allreduce(c, 1, &bc, TFL_REDUCE_WEIGHTED_MEAN, 0),
                         TFL_INVALID_ARGUMENT);
        if (!strstr(tfl_ctx_error(ctx).message, "weights sum to 0"))
            print_error("rank %d: %s\n", r, tfl_ctx_error(ctx).message);
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "weights sum to 0"));
        tfl_ctx_clear_error(ctx);
        tfl_tensor *all[] = {f32, i64, f64, i32, w, m, v0, v1, v2, bl, bc};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tfl_tensor_release(all[i]);
        tfl_comm_free(c);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        tfl_ctx_free(ctx);
    }
}

/* ---- training --------------------------------------------------------------------------- */

typedef struct data {
    float x[STEPS * BATCH * FEATURES];
    int32_t y[STEPS * BATCH];
} data;

static void make_data(data *d)
{
    uint64_t s = 42;
    for (int i = 0; i < STEPS * BATCH; i++) {
        float acc = 0;
        for (int f = 0; f < FEATURES; f++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
            d->x[i * FEATURES + f] = u;
            acc += u * (float)(f % 3 - 1);
        }
        d->y[i] = acc > 0.3f ? 2 : acc < -0.3f ? 0 : 1;
    }
}

static tfl_model *mlp(tfl_ctx *ctx, tfl_optimizer **opt)
{
    tfl_model *m = tfl_model_new(ctx, "mlp");
    assert_non_null(tfl_model_add(
        m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 32, .activation = TFL_ACT_RELU}));
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = CLASSES}));
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, FEATURES}), TFL_OK);
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.01;
    *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(*opt);
    assert_int_equal(tfl_model_compile(m, *opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    return m;
}

/* One step on rows [lo, hi) of batch `step`; the gradients all-reduced with weight hi - lo
 * when comm is given. */
static void step(tfl_ctx *ctx, tfl_model *m, tfl_optimizer *opt, tfl_comm *comm, const data *d,
                 int s, int64_t lo, int64_t hi)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    int64_t rows = hi - lo;
    tfl_tensor *vars[8], *grads[8];
    int n = tfl_model_variables(m, TFL_VARS_TRAINABLE, vars, 8);
    for (int i = 0; i < n; i++)
        grads[i] = NULL;
    if (rows > 0) {
        const float *x = d->x + ((int64_t)s * BATCH + lo) * FEATURES;
        const int32_t *y = d->y + (int64_t)s * BATCH + lo;
        tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){rows, FEATURES}, x);
        tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){rows}, y);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tensor *pred = tfl_model_call(m, tx, true);
        tfl_tensor *per =
            tfl_loss_per_example(ctx, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, pred, ty);
        tfl_tensor *loss = tfl_reduce_mean(ctx, per, 0, NULL, false);
        tfl_tape_end(tape);
        assert_non_null(loss);
        assert_int_equal(
            tfl_tape_gradient(tape, loss, n, (const tfl_tensor *const *)vars, grads, 0), TFL_OK);
        tfl_tape_free(tape);
    }
    if (comm)
        assert_int_equal(tfl_comm_allreduce_gradients(comm, n, vars, grads, (double)rows), TFL_OK);
    assert_int_equal(tfl_optimizer_apply(opt, n, vars, grads), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static uint64_t hash_vars(tfl_model *m, tfl_optimizer *opt)
{
    tfl_tensor *v[64];
    int n = tfl_model_variables(m, TFL_VARS_ALL, v, 32);
    int64_t k = tfl_optimizer_variables(opt, v + n, 32);
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n + k; i++) {
        size_t bytes = (size_t)tfl_tensor_numel(v[i]) * tfl_dtype_size(tfl_tensor_dtype(v[i]));
        /* through the host: a variable on a GPU has device memory */
        unsigned char *p = malloc(bytes ? bytes : 1);
        assert_non_null(p);
        assert_int_equal(tfl_tensor_to_host(v[i], p, bytes), TFL_OK);
        for (size_t j = 0; j < bytes; j++)
            h = (h ^ p[j]) * 1099511628211ull;
        free(p);
    }
    return h;
}

/* rank 0's hash broadcast; how many ranks differ from it */
static double ranks_differing(tfl_comm *c, uint64_t h)
{
    tfl_ctx *ctx = tfl_comm_ctx(c);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK); /* inside fit's step frame too */
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_INT64, 1, (int64_t[]){1}, &h);
    assert_int_equal(tfl_comm_broadcast(c, 1, &t, 0), TFL_OK);
    uint64_t root;
    assert_int_equal(tfl_tensor_to_host(t, &root, sizeof root), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    double differ = root != h;
    assert_int_equal(tfl_comm_allreduce_doubles(c, &differ, 1), TFL_OK);
    return differ;
}

static void test_custom_loop_matches_one_process(void **state)
{
    (void)state;
    data *d = malloc(sizeof *d);
    make_data(d);
    /* the distributed run: other initial weights on every rank until the broadcast */
    tfl_ctx *probe = new_ctx(1);
    tfl_comm *c = world(probe, 4096); /* several buckets per step */
    int r = tfl_comm_rank(c), p = tfl_comm_size(c);
    tfl_ctx *ctx = new_ctx(7 + (uint64_t)r);
    tfl_comm *comm = world(ctx, 4096);
    tfl_optimizer *opt;
    tfl_model *m = mlp(ctx, &opt);
    if (p > 1) assert_true(ranks_differing(comm, hash_vars(m, opt)) > 0);
    tfl_tensor *all[64];
    int nv = tfl_model_variables(m, TFL_VARS_ALL, all, 64);
    assert_int_equal(tfl_comm_broadcast(comm, nv, all, 0), TFL_OK);
    assert_true(ranks_differing(comm, hash_vars(m, opt)) == 0);
    int64_t lo = (int64_t)r * BATCH / p, hi = (int64_t)(r + 1) * BATCH / p;
    for (int s = 0; s < STEPS; s++) {
        step(ctx, m, opt, comm, d, s, lo, hi);
        assert_true(ranks_differing(comm, hash_vars(m, opt)) == 0); /* every step */
    }
    /* one process on the whole batches, from rank 0's initial weights (seed 7) */
    tfl_ctx *ref_ctx = new_ctx(7);
    tfl_optimizer *ref_opt;
    tfl_model *ref = mlp(ref_ctx, &ref_opt);
    for (int s = 0; s < STEPS; s++)
        step(ref_ctx, ref, ref_opt, NULL, d, s, 0, BATCH);
    tfl_tensor *rv[64];
    assert_int_equal(tfl_model_variables(ref, TFL_VARS_ALL, rv, 64), nv);
    double max_diff = 0, max_abs = 0;
    for (int i = 0; i < nv; i++)
        for (int64_t j = 0; j < tfl_tensor_numel(all[i]); j++) {
            double a = at(all[i], j), b = at(rv[i], j);
            if (fabs(a - b) > max_diff) max_diff = fabs(a - b);
            if (fabs(b) > max_abs) max_abs = fabs(b);
        }
    if (r == 0)
        printf("np=%d: after %d Adam steps the largest difference from one process is %.3g "
               "(weights up to %.3g)\n",
               p, STEPS, max_diff, max_abs);
    assert_true(max_diff < 1e-5);
    tfl_model_free(ref);
    tfl_optimizer_free(ref_opt);
    tfl_ctx_free(ref_ctx);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_comm_free(comm);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    tfl_comm_free(c);
    tfl_ctx_free(probe);
    free(d);
}

/* ---- tfl_model_fit with the data-parallel callback and the replicas --------------------- */

typedef struct hasher {
    tfl_comm *comm;
    tfl_optimizer *opt;
    int64_t steps, differing;
} hasher;

static tfl_status hash_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)lg, (void)stop;
    hasher *h = user;
    h->steps++;
    h->differing += (int64_t)ranks_differing(h->comm, hash_vars(m, h->opt));
    return TFL_OK;
}

static tfl_dataset *dataset(tfl_ctx *ctx, const data *d, int64_t rows)
{
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){rows, FEATURES}, d->x);
    tfl_tensor *y = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){rows}, d->y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, x, y, NULL);
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    assert_non_null(ds);
    return ds;
}

/* fit on 2 epochs of 4 shuffled batches of 128 (and a last one of 40): the ranks agree after
 * every step (batch normalization's moving statistics included) and end as one process's
 * fit on the same data, whatever the shards */
static void test_fit(void **state)
{
    (void)state;
    data *d = malloc(sizeof *d);
    make_data(d);
    const int64_t rows = 4 * BATCH + 40;
    for (int bn = 0; bn < 2; bn++) {
        tfl_ctx *ctx = new_ctx(11);
        tfl_comm *comm = world(ctx, 1000);
        tfl_optimizer *opt;
        tfl_model *m = tfl_model_new(ctx, "mlp");
        assert_non_null(tfl_model_add(
            m,
            &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 32, .activation = TFL_ACT_RELU}));
        if (bn) assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_BATCH_NORM}));
        assert_non_null(
            tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = CLASSES}));
        tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
        o.learning_rate = 0.01;
        opt = tfl_optimizer_new(ctx, &o);
        assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                           TFL_METRIC_ACCURACY),
                         TFL_OK);
        tfl_dataset *ds = dataset(ctx, d, rows);
        tfl_data_parallel dp = {.comm = comm};
        hasher h = {.comm = comm, .opt = opt};
        tfl_replicas rep = tfl_comm_replicas(comm);
        tfl_callback cbs[] = {tfl_data_parallel_callback(&dp),
                              {.on_step_end = hash_step, .user = &h}};
        tfl_fit_opts fo = {.epochs = 2,
                           .batch_size = BATCH,
                           .shuffle = true,
                           .seed = 3,
                           .callbacks = cbs,
                           .n_callbacks = 2,
                           .replicas = &rep};
        /* not built: refused on every rank before any collective could wait */
        assert_int_equal(tfl_model_fit(m, ds, &fo, NULL), TFL_FAILED_PRECONDITION);
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "is not built"));
        tfl_ctx_clear_error(ctx);
        assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, FEATURES}), TFL_OK);
        tfl_epoch_logs logs[2];
        tfl_history hist = {logs, 2, 0};
        assert_int_equal(tfl_model_fit(m, ds, &fo, &hist), TFL_OK);
        assert_true(dp.broadcast_done);
        assert_int_equal(dp.steps, 10);
        assert_int_equal(h.steps, 10);
        assert_int_equal(h.differing, 0); /* identical after every step */
        if (!bn) {                        /* one process, the same fit without the callback */
            tfl_ctx *rctx = new_ctx(11);
            tfl_model *r = tfl_model_new(rctx, "mlp");
            tfl_model_add(r, &(tfl_layer_spec){
                                 .kind = TFL_LAYER_DENSE, .units = 32, .activation = TFL_ACT_RELU});
            tfl_model_add(r, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = CLASSES});
            assert_int_equal(tfl_model_build(r, 2, (int64_t[]){-1, FEATURES}), TFL_OK);
            tfl_optimizer *ropt = tfl_optimizer_new(rctx, &o);
            assert_int_equal(tfl_model_compile(r, ropt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                               TFL_METRIC_ACCURACY),
                             TFL_OK);
            tfl_dataset *rds = dataset(rctx, d, rows);
            tfl_epoch_logs rl[2];
            tfl_history rh = {rl, 2, 0};
            assert_int_equal(
                tfl_model_fit(
                    r, rds,
                    &(tfl_fit_opts){.epochs = 2, .batch_size = BATCH, .shuffle = true, .seed = 3},
                    &rh),
                TFL_OK);
            tfl_tensor *a[8], *b[8];
            int nv = tfl_model_variables(m, TFL_VARS_ALL, a, 8);
            assert_int_equal(tfl_model_variables(r, TFL_VARS_ALL, b, 8), nv);
            double diff = 0;
            for (int i = 0; i < nv; i++)
                for (int64_t j = 0; j < tfl_tensor_numel(a[i]); j++)
                    diff = fmax(diff, fabs(at(a[i], j) - at(b[i], j)));
            if (tfl_comm_rank(comm) == 0)
                printf("np=%d: fit, 2 epochs: largest difference from one process %.3g; epoch 2 "
                       "loss %.6f vs %.6f\n",
                       tfl_comm_size(comm), diff, logs[1].loss, rl[1].loss);
            assert_true(diff < 1e-5);
            assert_true(fabs(logs[1].loss - rl[1].loss) < 1e-5);
            assert_int_equal(logs[1].samples, rl[1].samples);
            tfl_dataset_free(rds);
            tfl_model_free(r);
            tfl_optimizer_free(ropt);
            tfl_ctx_free(rctx);
        }
        tfl_dataset_free(ds);
        tfl_model_free(m);
        tfl_optimizer_free(opt);
        tfl_comm_free(comm);
        if (tfl_ctx_status(ctx) != TFL_OK) print_error("%s\n", tfl_ctx_error(ctx).message);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        tfl_ctx_free(ctx);
    }
    free(d);
}

/* ranks that built different models: fit is refused on every rank at train begin (none is
 * left waiting in a collective), each naming rank 0's figures, which reached it through the
 * host transport, its own, and how many ranks differ from rank 0 */
static void test_fit_refuses_different_models(void **state)
{
    (void)state;
    data *d = malloc(sizeof *d);
    make_data(d);
    tfl_ctx *ctx = new_ctx(5);
    tfl_comm *comm = world(ctx, 0);
    int rank = tfl_comm_rank(comm), size = tfl_comm_size(comm);
    tfl_model *m = tfl_model_new(ctx, "mlp");
    if (rank > 0) /* a hidden layer rank 0 does not have: 4 variables instead of 2 */
        assert_non_null(tfl_model_add(
            m,
            &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 16, .activation = TFL_ACT_RELU}));
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = CLASSES}));
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, FEATURES}), TFL_OK);
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0),
                     TFL_OK);
    tfl_dataset *ds = dataset(ctx, d, BATCH);
    tfl_data_parallel dp = {.comm = comm};
    tfl_callback cb = tfl_data_parallel_callback(&dp);
    tfl_fit_opts fo = {.epochs = 1, .batch_size = BATCH, .callbacks = &cb, .n_callbacks = 1};
    assert_int_equal(tfl_model_fit(m, ds, &fo, NULL), TFL_FAILED_PRECONDITION);
    const char *msg = tfl_ctx_error(ctx).message;
    char own[96];
    snprintf(own, sizeof own, "rank %d: %d, ", rank, rank > 0 ? 4 : 2);
    char differ[64];
    snprintf(differ, sizeof differ, "; %d ranks differ from rank 0", size - 1);
    if (!strstr(msg, "the ranks hold different variables (rank 0: 2 model and ") ||
        !strstr(msg, own) || !strstr(msg, differ))
        print_error("rank %d: %s\n", rank, msg);
    assert_non_null(strstr(msg, "data parallel: train begin: mlp: the ranks hold different "
                                "variables (rank 0: 2 model and "));
    assert_non_null(strstr(msg, own));
    assert_non_null(strstr(msg, differ));
    assert_false(dp.broadcast_done);
    tfl_ctx_clear_error(ctx);
    tfl_dataset_free(ds);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_comm_free(comm);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_custom_loop_matches_one_process),
        cmocka_unit_test(test_fit),
        cmocka_unit_test(test_fit_refuses_different_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
