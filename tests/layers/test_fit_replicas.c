/* test_fit_replicas.c: tfl_model_fit's data-parallel seam (tfl_fit_opts.replicas) without
 * MPI: fit trains on its shard of every global batch (empty shards included, with zero
 * gradients through the hooks), the epoch's and validation's figures come from sums reduced
 * with replicas->sum (faked here: the other replica's sums are constants), the shards'
 * gradients weighted by their rows are the whole batch's gradient, and bad replicas are
 * refused. Also tfl_model_evaluate_replicated. */
#include "fit_rig.h"

#include <math.h>

#define FEAT 3

/* n examples of FEAT features, labels 0/1 from a rule on them. */
static tfl_dataset *points(tfl_ctx *ctx, int n)
{
    float *x = malloc(sizeof(float) * FEAT * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    assert_true(x && y);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < FEAT; j++)
            x[i * FEAT + j] = (float)sin(1.3 * i + 0.7 * j);
        y[i] = x[i * FEAT] + 0.5f * x[i * FEAT + 2] > 0.1f;
    }
    return rows_dataset(ctx, n, FEAT, x, y);
}

static rig make_rig(tfl_ctx *ctx, int n)
{
    rig r = {tfl_model_new(ctx, NULL), NULL, points(ctx, n)};
    assert_non_null(tfl_model_add(
        r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 4, .activation = TFL_ACT_TANH}));
    assert_non_null(tfl_model_add(r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.1;
    r.opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(r.opt);
    assert_int_equal(tfl_model_compile(r.m, r.opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY),
                     TFL_OK);
    return r;
}

/* ---- a fake all-reduce: the other replicas' sums are `other` ------------------------------- */

typedef struct fake_sum {
    double other[4]; /* added to values[i] */
    int calls;
    int n_seen[16];
    double seen[16][4]; /* the local values given */
    tfl_status fail;    /* returned (values untouched) when not TFL_OK */
} fake_sum;

static tfl_status add_other(double *values, int n, void *user)
{
    fake_sum *f = user;
    if (f->calls < 16) {
        f->n_seen[f->calls] = n;
        for (int i = 0; i < n && i < 4; i++)
            f->seen[f->calls][i] = values[i];
    }
    f->calls++;
    if (f->fail != TFL_OK) return f->fail;
    for (int i = 0; i < n && i < 4; i++)
        values[i] += f->other[i];
    return TFL_OK;
}

/* ---- what the hooks saw ------------------------------------------------------------------ */

#define MAX_STEPS 16
#define MAX_VALUES 64

typedef struct record {
    int n_steps;
    int64_t samples[MAX_STEPS];
    double loss[MAX_STEPS];
    bool all_non_null, shapes_ok;
    double grad_abs_sum[MAX_STEPS];
    tfl_epoch_progress progress[MAX_STEPS]; /* on_step_end's */
    int n_values;                           /* step 0's gradients, flattened */
    double grads[MAX_VALUES];
    bool skip; /* skip every step (variables stay as they are) */
} record;

static tfl_status rec_grads(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                            const tfl_step_logs *lg, void *user, bool *skip)
{
    (void)m;
    record *r = user;
    int k = r->n_steps++;
    assert_true(k < MAX_STEPS);
    r->samples[k] = lg->samples;
    r->loss[k] = lg->loss;
    double abs_sum = 0;
    for (int i = 0; i < n; i++) {
        if (!grads[i]) {
            r->all_non_null = false;
            continue;
        }
        if (tfl_tensor_rank(grads[i]) != tfl_tensor_rank(vars[i]) ||
            memcmp(tfl_tensor_shape(grads[i]), tfl_tensor_shape(vars[i]),
                   sizeof(int64_t) * (size_t)tfl_tensor_rank(vars[i])) != 0 ||
            tfl_tensor_dtype(grads[i]) != tfl_tensor_dtype(vars[i]))
            r->shapes_ok = false;
        for (int64_t j = 0; j < tfl_tensor_numel(grads[i]); j++) {
            double v = 0;
            assert_int_equal(tfl_tensor_get(grads[i], j, &v), TFL_OK);
            abs_sum += fabs(v);
            if (k == 0) {
                assert_true(r->n_values < MAX_VALUES);
                r->grads[r->n_values++] = v;
            }
        }
    }
    r->grad_abs_sum[k] = abs_sum;
    *skip = r->skip;
    return TFL_OK;
}

static tfl_status rec_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)m, (void)stop;
    record *r = user;
    r->progress[r->n_steps - 1] = lg->progress;
    return TFL_OK;
}

static tfl_callback recorder(record *r)
{
    r->all_non_null = r->shapes_ok = true;
    return (tfl_callback){.on_gradients = rec_grads, .on_step_end = rec_step, .user = r};
}

/* ---- tests ------------------------------------------------------------------------------- */

/* 129 rows, batches of 128, 2 replicas: replica 0 trains on 64 then 0 rows, replica 1 on 64
 * then 1; the empty step runs its hooks with zero gradients and the apply. */
static void trains_on_its_shard(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    static const int64_t expect[2][2] = {{64, 0}, {64, 1}};
    for (int index = 0; index < 2; index++) {
        rig r = make_rig(ctx, 129);
        fake_sum f = {.calls = 0};
        tfl_replicas rep = {index, 2, add_other, &f};
        record rec = {0};
        tfl_callback cb = recorder(&rec);
        tfl_epoch_logs logs[2];
        tfl_history h = {logs, 2, 0};
        assert_int_equal(tfl_model_fit(r.m, r.ds,
                                       &(tfl_fit_opts){.epochs = 2,
                                                       .batch_size = 128,
                                                       .shuffle = true,
                                                       .seed = 5,
                                                       .callbacks = &cb,
                                                       .n_callbacks = 1,
                                                       .replicas = &rep},
                                       &h),
                         TFL_OK);
        assert_int_equal(rec.n_steps, 4); /* every replica takes every step */
        for (int k = 0; k < 4; k++)
            assert_int_equal(rec.samples[k], expect[index][k % 2]);
        assert_true(rec.all_non_null);
        assert_true(rec.shapes_ok);
        assert_true(rec.grad_abs_sum[0] > 0);
        if (index == 0) { /* the empty step: zero gradients, loss 0 */
            assert_true(rec.grad_abs_sum[1] == 0.0);
            assert_true(rec.loss[1] == 0.0);
        } else {
            assert_true(rec.grad_abs_sum[1] > 0);
        }
        assert_int_equal(iterations(r.opt), 4); /* the apply ran on every step */
        assert_int_equal(h.count, 2);
        for (int e = 0; e < 2; e++) /* the sum with nothing else added: local samples */
            assert_int_equal(logs[e].samples, 64 + index);
        assert_int_equal(f.calls, 2); /* once per epoch, no validation */
        /* the caller's sharding (none) is given back */
        assert_int_equal(tfl_dataset_shard_count(r.ds), 1);
        assert_int_equal(tfl_dataset_shard_index(r.ds), 0);
        drop_rig(&r);
    }
}

/* The only batch's shard is empty: the model is built from the batch's shape, the step runs
 * with zero gradients; with no samples anywhere the loss is NaN. */
static void first_batch_empty(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 1);
    fake_sum f = {.calls = 0};
    tfl_replicas rep = {0, 2, add_other, &f};
    record rec = {0};
    tfl_callback cb = recorder(&rec);
    tfl_epoch_logs logs[1];
    tfl_history h = {logs, 1, 0};
    assert_int_equal(
        tfl_model_fit(
            r.m, r.ds,
            &(tfl_fit_opts){.batch_size = 4, .callbacks = &cb, .n_callbacks = 1, .replicas = &rep},
            &h),
        TFL_OK);
    assert_int_equal(rec.n_steps, 1);
    assert_int_equal(rec.samples[0], 0);
    assert_true(rec.all_non_null && rec.shapes_ok);
    assert_int_equal(rec.n_values, FEAT * 4 + 4 + 4 * 2 + 2); /* every variable, all zeros */
    assert_true(rec.grad_abs_sum[0] == 0.0);
    assert_int_equal(tfl_model_param_count(r.m, TFL_VARS_TRAINABLE), FEAT * 4 + 4 + 4 * 2 + 2);
    assert_int_equal(iterations(r.opt), 1);
    assert_int_equal(logs[0].samples, 0);
    assert_true(isnan(logs[0].loss));
    drop_rig(&r);
}

/* The epoch's and validation's figures are the reduced sums divided: the fake all-reduce adds
 * another replica's {loss_sum, correct, samples}. */
static void figures_are_reduced(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 23);
    tfl_dataset *val = points(ctx, 9);
    fake_sum f = {.other = {10.0, 3.0, 20.0}};
    tfl_replicas rep = {1, 3, add_other, &f};
    record rec = {0};
    tfl_callback cb = recorder(&rec);
    tfl_epoch_logs logs[1];
    tfl_history h = {logs, 1, 0};
    assert_int_equal(tfl_dataset_shard(val, 2, 4), TFL_OK); /* the caller's own, given back */
    assert_int_equal(tfl_model_fit(r.m, r.ds,
                                   &(tfl_fit_opts){.batch_size = 8,
                                                   .validation = val,
                                                   .callbacks = &cb,
                                                   .n_callbacks = 1,
                                                   .replicas = &rep},
                                   &h),
                     TFL_OK);
    /* batches 8, 8, 7 -> replica 1 of 3: rows [2, 5), [2, 5), [2, 4) */
    assert_int_equal(rec.n_steps, 3);
    assert_int_equal(rec.samples[0], 3);
    assert_int_equal(rec.samples[1], 3);
    assert_int_equal(rec.samples[2], 2);
    tfl_epoch_progress local = rec.progress[2]; /* this replica's sums */
    assert_int_equal(local.samples, 8);
    assert_int_equal(f.calls, 2);
    assert_int_equal(f.n_seen[0], 3);
    assert_true(f.seen[0][0] == local.loss_sum);
    assert_true(f.seen[0][1] == local.correct);
    assert_true(f.seen[0][2] == 8.0);
    assert_int_equal(logs[0].samples, 28);
    assert_true(fabs(logs[0].loss - (local.loss_sum + 10.0) / 28.0) <= 1e-12);
    assert_true(fabs(logs[0].accuracy - (local.correct + 3.0) / 28.0) <= 1e-12);
    /* validation: 9 rows in one batch of 8 and one of 1 -> replica 1 of 3: 3 + 0 rows */
    assert_int_equal(f.n_seen[1], 3);
    assert_true(f.seen[1][2] == 3.0);
    double vl = 0, va = 0;
    assert_int_equal(tfl_dataset_shard(val, 1, 3), TFL_OK);
    assert_int_equal(tfl_model_evaluate(r.m, val, 8, &vl, &va), TFL_OK); /* the shard alone */
    assert_true(fabs(f.seen[1][0] - vl * 3.0) <= 1e-9);
    assert_true(fabs(f.seen[1][1] - va * 3.0) <= 1e-9);
    assert_true(fabs(logs[0].val_loss - (vl * 3.0 + 10.0) / 23.0) <= 1e-9);
    assert_true(fabs(logs[0].val_accuracy - (va * 3.0 + 3.0) / 23.0) <= 1e-9);

    /* tfl_model_evaluate_replicated: the same sums, the caller's shard given back */
    assert_int_equal(tfl_dataset_shard(val, 2, 4), TFL_OK);
    double el = 0, ea = 0;
    assert_int_equal(tfl_model_evaluate_replicated(r.m, val, 8, &rep, &el, &ea), TFL_OK);
    assert_int_equal(f.calls, 3);
    assert_true(el == logs[0].val_loss);
    assert_true(ea == logs[0].val_accuracy);
    assert_int_equal(tfl_dataset_shard_index(val), 2);
    assert_int_equal(tfl_dataset_shard_count(val), 4);
    /* NULL replicas: tfl_model_evaluate of the whole (here: the caller's shard) */
    assert_int_equal(tfl_model_evaluate_replicated(r.m, val, 8, NULL, &el, &ea), TFL_OK);
    assert_int_equal(f.calls, 3);
    assert_int_equal(tfl_dataset_shard_count(r.ds), 1);
    tfl_dataset_free(val);
    drop_rig(&r);
}

/* The shards' gradients, weighted by their rows, are the whole batch's gradient: what an
 * all-reduce hook computes from logs->samples. Every step is skipped, so the variables are
 * the same in the three runs. */
static void shard_gradients_average_to_the_batch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 11);
    fake_sum f = {.calls = 0};
    record whole = {.skip = true}, part[2] = {{.skip = true}, {.skip = true}};
    tfl_callback cb = recorder(&whole);
    tfl_fit_opts o = {.batch_size = 11, .callbacks = &cb, .n_callbacks = 1};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &o, NULL), TFL_OK);
    for (int i = 0; i < 2; i++) {
        tfl_replicas rep = {i, 2, add_other, &f};
        cb = recorder(&part[i]);
        o.replicas = &rep;
        assert_int_equal(tfl_model_fit(r.m, r.ds, &o, NULL), TFL_OK);
    }
    assert_int_equal(iterations(r.opt), 0); /* skipped: nothing applied */
    assert_int_equal(whole.samples[0], 11);
    assert_int_equal(part[0].samples[0], 5);
    assert_int_equal(part[1].samples[0], 6);
    assert_int_equal(whole.n_values, FEAT * 4 + 4 + 4 * 2 + 2);
    assert_int_equal(part[0].n_values, whole.n_values);
    assert_int_equal(part[1].n_values, whole.n_values);
    /* relative to the gradient's largest component (float32 sums in both) */
    double worst = 0, scale = 0;
    for (int j = 0; j < whole.n_values; j++) {
        double avg = (5.0 * part[0].grads[j] + 6.0 * part[1].grads[j]) / 11.0;
        worst = fmax(worst, fabs(avg - whole.grads[j]));
        scale = fmax(scale, fabs(whole.grads[j]));
    }
    assert_true(scale > 0);
    if (worst > 1e-6 * scale) print_error("worst %g, scale %g\n", worst, scale);
    assert_true(worst <= 1e-6 * scale);
    /* and the losses likewise */
    double avg_loss = (5.0 * part[0].loss[0] + 6.0 * part[1].loss[0]) / 11.0;
    assert_true(fabs(avg_loss - whole.loss[0]) <= 1e-6 * fabs(whole.loss[0]));
    drop_rig(&r);
}

static void bad_replicas_are_refused(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 10);
    fake_sum f = {.calls = 0};
    tfl_replicas bad[] = {
        {0, 0, add_other, &f}, {2, 2, add_other, &f}, {-1, 2, add_other, &f}, {0, 2, NULL, &f}};
    const char *why[] = {"replicas->count must be >= 1, got 0",
                         "replicas->index must be in [0, 2) (replicas->count 2), got 2",
                         "replicas->index must be in [0, 2) (replicas->count 2), got -1",
                         "replicas->sum is NULL"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.replicas = &bad[i]}, NULL),
                         TFL_INVALID_ARGUMENT);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, why[i]);
        assert_int_equal(tfl_model_evaluate_replicated(r.m, r.ds, 4, &bad[i], NULL, NULL),
                         TFL_INVALID_ARGUMENT);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, why[i]);
        assert_int_equal(tfl_dataset_shard_count(r.ds), 1);
    }
    assert_int_equal(f.calls, 0);
    assert_int_equal(iterations(r.opt), 0);

    /* a failing sum stops fit with its status; the sharding is given back */
    tfl_dataset *val = points(ctx, 4);
    f.fail = TFL_INTERNAL;
    tfl_replicas rep = {1, 2, add_other, &f};
    assert_int_equal(
        tfl_model_fit(
            r.m, r.ds,
            &(tfl_fit_opts){.batch_size = 4, .epochs = 2, .validation = val, .replicas = &rep},
            NULL),
        TFL_INTERNAL);
    expect_kept_error(ctx, TFL_INTERNAL, "replicas->sum of the epoch's sums failed");
    assert_int_equal(f.calls, 1);
    assert_int_equal(tfl_dataset_shard_count(r.ds), 1);
    assert_int_equal(tfl_dataset_shard_count(val), 1);
    assert_int_equal(tfl_model_evaluate_replicated(r.m, val, 4, &rep, NULL, NULL), TFL_INTERNAL);
    expect_kept_error(ctx, TFL_INTERNAL, "replicas->sum of the evaluation's sums failed");
    assert_int_equal(tfl_dataset_shard_count(val), 1);
    tfl_dataset_free(val);
    drop_rig(&r);
}

/* predict of a sharded dataset: this shard's rows of every batch, empty shards skipped */
static void predict_sees_its_shard(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 9);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *all = tfl_model_predict(r.m, r.ds, 4); /* builds the model */
    assert_non_null(all);
    assert_int_equal(tfl_dataset_shard(r.ds, 1, 3), TFL_OK);
    /* batches 4, 4, 1 -> shard 1 of 3: rows [1, 2), [5, 6) and none of the last */
    tfl_tensor *part = tfl_model_predict(r.m, r.ds, 4);
    assert_non_null(part);
    assert_int_equal(tfl_tensor_dim(part, 0), 2);
    static const int rows[2] = {1, 5};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double a = 0, b = 1;
            assert_int_equal(tfl_tensor_get(part, i * 2 + j, &a), TFL_OK);
            assert_int_equal(tfl_tensor_get(all, rows[i] * 2 + j, &b), TFL_OK);
            assert_true(a == b);
        }
    /* a shard with no example at all */
    assert_int_equal(tfl_dataset_shard(r.ds, 0, 12), TFL_OK); /* 4, 4, 1 rows: none of each */
    assert_null(tfl_model_predict(r.m, r.ds, 4));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "the dataset is empty (shard 0 of 12 has no "
                      "example)");
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    drop_rig(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(trains_on_its_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(first_batch_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(figures_are_reduced, setup, teardown),
        cmocka_unit_test_setup_teardown(shard_gradients_average_to_the_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_replicas_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(predict_sees_its_shard, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
