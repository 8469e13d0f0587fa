/* test_mpi_guard.c (under mpirun -np 2 and -np 3): what every rank decides together.
 *  - one rank per GPU: the ranks of this one host have local ranks 0..size-1, and the device
 *    rule follows from them (CPU:0 on a machine without GPUs; an explicit GPU:0 refused on
 *    every rank);
 *  - the non-finite guard with the replicas: the last rank alone has a batch whose loss is
 *    not finite (a label of 1e30 in a mean squared error: the loss overflows float32, the
 *    gradient does not), so the all-reduced gradient is finite and only that rank's loss
 *    says anything; every rank skips that step (SKIP), the ranks stay identical, and with
 *    HALT every rank stops at that step naming the last rank. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 5, .num_threads = 1}, NULL);
    assert_non_null(ctx);
    return ctx;
}

static tfl_comm *world(tfl_ctx *ctx)
{
    tfl_comm *c = tfl_comm_world(ctx, NULL);
    if (!c) print_error("tfl_comm_world: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(c);
    assert_string_equal(tfl_comm_backend(c), "mpi");
    return c;
}

static void test_device(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    tfl_comm *c = world(ctx);
    int rank = tfl_comm_rank(c), size = tfl_comm_size(c), lr = -1, ls = -1;
    assert_int_equal(tfl_comm_local_rank(c, &lr, &ls), TFL_OK);
    assert_int_equal(lr, rank); /* one host */
    assert_int_equal(ls, size);
    int gpus = 0;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        gpus += !strncmp(tfl_device_name(ctx, i), "GPU:", 4);
    char dev[32], want[32];
    tfl_status st = tfl_comm_device(c, "auto", dev, sizeof dev);
    if (gpus == 0) {
        assert_int_equal(st, TFL_OK);
        assert_string_equal(dev, "CPU:0");
    } else if (gpus >= size) {
        assert_int_equal(st, TFL_OK);
        snprintf(want, sizeof want, "GPU:%d", rank);
        assert_string_equal(dev, want);
    } else {
        assert_int_equal(st, TFL_FAILED_PRECONDITION);
        tfl_ctx_clear_error(ctx);
    }
    assert_int_equal(tfl_comm_device(c, "GPU:0", dev, sizeof dev), TFL_FAILED_PRECONDITION);
    char frag[96];
    snprintf(frag, sizeof frag, "for the %d ranks on this host (this is local rank %d)", size,
             rank);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, frag));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_device(c, "CPU:0", dev, sizeof dev), TFL_OK);
    assert_string_equal(dev, "CPU:0");
    tfl_comm_free(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

/* What each rank saw at each step: its local loss, and its variables' sum after the step. */
typedef struct seen {
    int64_t steps, nonfinite_loss;
    double kernel[8];
} seen;
static tfl_status on_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)stop;
    seen *s = user;
    (void)lg;
    tfl_tensor *v[2];
    if (tfl_model_variables(m, TFL_VARS_TRAINABLE, v, 2) != 2) return TFL_INTERNAL;
    float k = 0;
    tfl_status st = tfl_tensor_to_host(v[0], &k, sizeof k);
    if (s->steps < 8) s->kernel[s->steps] = k;
    s->steps++;
    return st;
}
/* the local losses, read before the guard */
static tfl_status on_grads(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                           const tfl_step_logs *lg, void *user, bool *skip)
{
    (void)m, (void)n, (void)vars, (void)grads, (void)skip;
    seen *s = user;
    s->nonfinite_loss += !isfinite(lg->loss);
    return TFL_OK;
}

static void test_guard(void **state)
{
    (void)state;
    for (int halt = 0; halt < 2; halt++) {
        tfl_ctx *ctx = new_ctx();
        tfl_comm *c = world(ctx);
        int rank = tfl_comm_rank(c), size = tfl_comm_size(c);
        /* 3 global batches of 2 rows a rank: x = 1, y = 0.5, but for the last rank's first
         * row of the second batch, y = 1e30 */
        int64_t m = 2 * size, rows = 3 * m;
        float *x = malloc(sizeof(float) * (size_t)rows), *y = malloc(sizeof(float) * (size_t)rows);
        for (int64_t i = 0; i < rows; i++)
            x[i] = 1, y[i] = 0.5f;
        y[m + 2 * (size - 1)] = 1e30f;
        tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){rows, 1}, x);
        tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){rows, 1}, y);
        tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
        assert_non_null(ds);
        tfl_tensor_release(tx);
        tfl_tensor_release(ty);
        free(x);
        free(y);
        tfl_model *mdl = tfl_model_new(ctx, "line");
        assert_non_null(tfl_model_add(mdl, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 1}));
        tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
        o.learning_rate = 1e-3;
        tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
        assert_non_null(opt);
        assert_int_equal(tfl_model_compile(mdl, opt, TFL_LOSS_MEAN_SQUARED_ERROR, 0), TFL_OK);
        assert_int_equal(tfl_model_build(mdl, 2, (int64_t[]){-1, 1}), TFL_OK);
        tfl_data_parallel dp = {.comm = c};
        tfl_replicas rep = tfl_comm_replicas(c);
        tfl_nonfinite_guard g = {.mode = halt ? TFL_NONFINITE_HALT : TFL_NONFINITE_SKIP,
                                 .replicas = &rep};
        seen local = {0}, after = {0};
        tfl_callback cbs[] = {tfl_data_parallel_callback(&dp),
                              {.on_gradients = on_grads, .user = &local},
                              tfl_nonfinite_guard_callback(&g),
                              {.on_step_end = on_step, .user = &after}};
        tfl_fit_opts fo = {
            .epochs = 1, .batch_size = m, .callbacks = cbs, .n_callbacks = 4, .replicas = &rep};
        tfl_status st = tfl_model_fit(mdl, ds, &fo, NULL);
        /* the last rank alone saw the non-finite loss, and its reduced gradient was finite */
        assert_int_equal(local.nonfinite_loss, rank == size - 1 ? 1 : 0);
        if (halt) {
            assert_int_equal(st, TFL_INVALID_ARGUMENT);
            char want[96];
            snprintf(want, sizeof want, "on replica %d of %d at step 2 (epoch 1, batch 2)",
                     size - 1, size);
            const char *msg = tfl_ctx_error(ctx).message;
            if (!strstr(msg, want)) fail_msg("'%s' not in '%s'", want, msg);
            assert_non_null(strstr(msg, rank == size - 1 ? "the loss is inf" : "not finite"));
            assert_int_equal(after.steps, 1); /* every rank stopped before step 2's update */
            tfl_ctx_clear_error(ctx);
        } else {
            assert_int_equal(st, TFL_OK);
            assert_int_equal(g.skipped, 1); /* on every rank */
            assert_int_equal(after.steps, 3);
            assert_true(after.kernel[1] == after.kernel[0]); /* step 2 skipped */
            assert_true(after.kernel[2] != after.kernel[1]);
        }
        /* the ranks' kernels are identical after every step */
        double k[3] = {after.kernel[0], after.kernel[1], after.kernel[2]}, k0[3];
        memcpy(k0, k, sizeof k);
        assert_int_equal(tfl_comm_allreduce_doubles(c, k, 3), TFL_OK);
        for (int i = 0; i < (int)after.steps && i < 3; i++)
            assert_true(k[i] == size * k0[i]);
        tfl_dataset_free(ds);
        tfl_model_free(mdl);
        tfl_optimizer_free(opt);
        tfl_comm_free(c);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        tfl_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device),
        cmocka_unit_test(test_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
