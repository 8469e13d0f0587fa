/* test_fit_seams.c: the training step's seams in tfl_model_fit (DESIGN.md): on_gradients
 * between the gradients and the optimizer's apply (it sees and may replace the gradients, or
 * skip the step), on_step_end after the apply (it sees each step and may stop fit in the
 * middle of an epoch), and their order against on_epoch_end. */
#include "fit_rig.h"

#include <math.h>

/* n points in [0, 1) labelled by which half they are in, for a two-unit Dense classifier. */
static tfl_dataset *line_nan(tfl_ctx *ctx, int n, int nan_at)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)i / (float)n;
        y[i] = 2 * i >= n;
    }
    if (nan_at >= 0) x[nan_at] = NAN;
    return rows_dataset(ctx, n, 1, x, y);
}

static tfl_dataset *line(tfl_ctx *ctx, int n) { return line_nan(ctx, n, -1); }

static rig make_rig(tfl_ctx *ctx, int n)
{
    rig r = {tfl_model_new(ctx, NULL), NULL, line(ctx, n)};
    assert_non_null(tfl_model_add(r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.01;
    r.opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(r.opt);
    assert_int_equal(tfl_model_compile(r.m, r.opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0), TFL_OK);
    return r;
}

/* What the hooks saw, in order. */
typedef struct trace {
    tfl_optimizer *opt;
    char events[256];     /* 'g' on_gradients, 's' on_step_end, 'e' on_epoch_end */
    int n_events;
    tfl_step_logs steps[64];
    int n_steps;
    int64_t iters_at_grad[64], iters_at_step[64];
    int n_vars_seen;
    bool grads_non_null;
    int64_t stop_after_step; /* > 0: on_step_end stops fit at this step */
    int64_t skip_step;       /* > 0: on_gradients skips this step */
    bool zero_grads;         /* on_gradients replaces every gradient with zeros */
} trace;

static tfl_status on_grads(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                           const tfl_step_logs *lg, void *user, bool *skip)
{
    trace *t = user;
    t->events[t->n_events++] = 'g';
    t->iters_at_grad[lg->step - 1] = iterations(t->opt);
    t->n_vars_seen = n;
    t->grads_non_null = true;
    for (int i = 0; i < n; i++) {
        if (!grads[i] || !vars[i]) t->grads_non_null = false;
        if (t->zero_grads && grads[i]) grads[i] = tfl_zeros_like(tfl_model_ctx(m), grads[i]);
    }
    if (lg->step == t->skip_step) *skip = true;
    return TFL_OK;
}

static tfl_status on_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)m;
    trace *t = user;
    t->events[t->n_events++] = 's';
    t->steps[t->n_steps++] = *lg;
    t->iters_at_step[lg->step - 1] = iterations(t->opt);
    if (lg->step == t->stop_after_step) *stop = true;
    return TFL_OK;
}

static tfl_status on_epoch(tfl_model *m, const tfl_epoch_logs *lg, void *user, bool *stop)
{
    (void)m, (void)lg, (void)stop;
    trace *t = user;
    t->events[t->n_events++] = 'e';
    return TFL_OK;
}

static tfl_callback tracer(trace *t)
{
    return (tfl_callback){.on_gradients = on_grads, .on_step_end = on_step,
                          .on_epoch_end = on_epoch, .user = t};
}

static void steps_are_seen_in_order(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 10); /* batches of 4: 4, 4, 2 */
    trace t = {.opt = r.opt};
    tfl_callback cb = tracer(&t);
    tfl_epoch_logs logs[2];
    tfl_history h = {logs, 2, 0};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4,
                                                              .callbacks = &cb, .n_callbacks = 1},
                                   &h),
                     TFL_OK);
    assert_string_equal(t.events, "gsgsgsegsgsgse");
    assert_int_equal(t.n_steps, 6);
    assert_int_equal(t.n_vars_seen, 2); /* kernel and bias */
    assert_true(t.grads_non_null);
    static const int64_t batch[6] = {0, 1, 2, 0, 1, 2}, samples[6] = {4, 4, 2, 4, 4, 2};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(t.steps[i].epoch, i / 3);
        assert_int_equal(t.steps[i].batch, batch[i]);
        assert_int_equal(t.steps[i].batches, 3);
        assert_int_equal(t.steps[i].step, i + 1);
        assert_int_equal(t.steps[i].samples, samples[i]);
        assert_false(t.steps[i].skipped);
        assert_true(isfinite(t.steps[i].loss) && t.steps[i].loss > 0);
        assert_true(t.steps[i].seconds >= 0);
        /* on_gradients runs before the apply, on_step_end after it */
        assert_int_equal(t.iters_at_grad[i], i);
        assert_int_equal(t.iters_at_step[i], i + 1);
    }
    /* the epoch's loss is the mean of its steps' losses weighted by their examples */
    for (int e = 0; e < 2; e++) {
        double sum = 0;
        for (int i = 3 * e; i < 3 * e + 3; i++) sum += t.steps[i].loss * (double)t.steps[i].samples;
        assert_true(fabs(logs[e].loss - sum / 10) < 1e-12);
        assert_int_equal(logs[e].samples, 10);
        assert_int_equal(logs[e].skipped_steps, 0);
    }
    drop_rig(&r);
}

static void stop_in_the_middle_of_an_epoch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 10);
    trace t = {.opt = r.opt, .stop_after_step = 5};
    tfl_callback cb = tracer(&t);
    tfl_epoch_logs logs[3];
    tfl_history h = {logs, 3, 0};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 3, .batch_size = 4,
                                                              .callbacks = &cb, .n_callbacks = 1},
                                   &h),
                     TFL_OK);
    /* epoch 0 whole, epoch 1 stopped after its second step: no on_epoch_end for it */
    assert_string_equal(t.events, "gsgsgsegsgs");
    assert_int_equal(h.count, 1);
    assert_int_equal(iterations(r.opt), 5);
    drop_rig(&r);
}

/* A skipped step leaves the variables, the slots and the step counter as they were. */
static void a_skipped_step_changes_nothing(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig a = make_rig(ctx, 8), b = make_rig(ctx, 8);
    /* the same start: b's variables copied from a's after a first fit builds both */
    trace ta = {.opt = a.opt}, tb = {.opt = b.opt, .skip_step = 2};
    tfl_callback ca = tracer(&ta), cb = tracer(&tb);
    tfl_epoch_logs la[1], lb[1];
    tfl_history ha = {la, 1, 0}, hb = {lb, 1, 0};
    /* batches of 4: two steps; b skips its second, a stops after its first */
    ta.stop_after_step = 1;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK); /* builds both (temporaries freed) */
    assert_non_null(tfl_model_call(a.m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_non_null(tfl_model_call(b.m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor *va[4], *vb[4];
    assert_int_equal(tfl_model_variables(a.m, TFL_VARS_ALL, va, 4), 2);
    assert_int_equal(tfl_model_variables(b.m, TFL_VARS_ALL, vb, 4), 2);
    for (int i = 0; i < 2; i++) assert_int_equal(tfl_variable_assign(vb[i], va[i]), TFL_OK);
    assert_int_equal(tfl_model_fit(a.m, a.ds, &(tfl_fit_opts){.batch_size = 4, .callbacks = &ca,
                                                              .n_callbacks = 1},
                                   &ha),
                     TFL_OK);
    assert_int_equal(tfl_model_fit(b.m, b.ds, &(tfl_fit_opts){.batch_size = 4, .callbacks = &cb,
                                                              .n_callbacks = 1},
                                   &hb),
                     TFL_OK);
    assert_int_equal(iterations(a.opt), 1);
    assert_int_equal(iterations(b.opt), 1);
    assert_true(tb.steps[1].skipped);
    assert_false(tb.steps[0].skipped);
    assert_int_equal(lb[0].skipped_steps, 1);
    assert_int_equal(lb[0].samples, 4);
    assert_true(fabs(lb[0].loss - tb.steps[0].loss) < 1e-12); /* the skipped loss not counted */
    /* variables and Adam's slots equal a's after its single step, bit for bit */
    for (int i = 0; i < 2; i++) {
        float x[2], y[2];
        assert_int_equal(tfl_tensor_to_host(va[i], x, sizeof x), TFL_OK);
        assert_int_equal(tfl_tensor_to_host(vb[i], y, sizeof y), TFL_OK);
        assert_memory_equal(x, y, sizeof x);
        for (int s = 0; s < 2; s++) {
            const char *slot = s ? "v" : "m";
            tfl_tensor *sa = tfl_optimizer_slot(a.opt, va[i], slot);
            tfl_tensor *sb = tfl_optimizer_slot(b.opt, vb[i], slot);
            assert_non_null(sa);
            assert_non_null(sb);
            assert_int_equal(tfl_tensor_to_host(sa, x, sizeof x), TFL_OK);
            assert_int_equal(tfl_tensor_to_host(sb, y, sizeof y), TFL_OK);
            assert_memory_equal(x, y, sizeof x);
        }
    }
    drop_rig(&a);
    drop_rig(&b);
}

/* Gradients replaced in the hook are the ones applied: zeros leave SGD's variables alone. */
static void replaced_gradients_are_applied(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = tfl_model_new(ctx, NULL);
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 2}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, 0), TFL_OK);
    tfl_dataset *ds = line(ctx, 8);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_model_call(m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor *v[2];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v, 2), 2);
    float before[4], after[4]; /* kernel (1, 2), bias (2,) */
    for (int i = 0; i < 2; i++)
        assert_int_equal(tfl_tensor_to_host(v[i], &before[2 * i], 8), TFL_OK);
    trace t = {.opt = opt, .zero_grads = true};
    tfl_callback cb = tracer(&t);
    assert_int_equal(tfl_model_fit(m, ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4,
                                                          .callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(tfl_tensor_to_host(v[i], &after[2 * i], 8), TFL_OK);
    assert_memory_equal(before, after, sizeof before);
    assert_int_equal(iterations(opt), 4); /* applied (with zeros), not skipped */
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
}

static tfl_status failing_hook(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                               const tfl_step_logs *lg, void *user, bool *skip)
{
    (void)n, (void)vars, (void)grads, (void)user, (void)skip;
    if (lg->step < 2) return TFL_OK;
    tfl_ctx_clear_error(tfl_model_ctx(m));
    return TFL_UNAVAILABLE; /* an all-reduce that lost its peer, say */
}

/* A hook's error stops fit with that status, before the step's apply. */
static void a_hook_error_stops_fit(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 8);
    tfl_callback cb = {.on_gradients = failing_hook};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4,
                                                              .callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_UNAVAILABLE);
    assert_int_equal(iterations(r.opt), 1);
    tfl_ctx_clear_error(ctx);
    drop_rig(&r);
}

/* The non-finite guard, HALT: fit stops before the bad step's update, naming it. */
static void nonfinite_guard_halts(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig a = make_rig(ctx, 10), b = make_rig(ctx, 10);
    tfl_dataset_free(b.ds);
    b.ds = line_nan(ctx, 10, 5); /* batches of 4: the NaN is in the second */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_model_call(a.m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_non_null(tfl_model_call(b.m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor *va[2], *vb[2];
    assert_int_equal(tfl_model_variables(a.m, TFL_VARS_ALL, va, 2), 2);
    assert_int_equal(tfl_model_variables(b.m, TFL_VARS_ALL, vb, 2), 2);
    for (int i = 0; i < 2; i++) assert_int_equal(tfl_variable_assign(vb[i], va[i]), TFL_OK);
    trace ta = {.opt = a.opt, .stop_after_step = 1};
    tfl_callback ca = tracer(&ta);
    assert_int_equal(tfl_model_fit(a.m, a.ds, &(tfl_fit_opts){.batch_size = 4, .callbacks = &ca,
                                                              .n_callbacks = 1},
                                   NULL),
                     TFL_OK);
    tfl_nonfinite_guard g = {.mode = TFL_NONFINITE_HALT};
    tfl_callback cb = tfl_nonfinite_guard_callback(&g);
    assert_int_equal(tfl_model_fit(b.m, b.ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4,
                                                              .callbacks = &cb, .n_callbacks = 1},
                                   NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the loss is NaN at step 2 (epoch 1, batch 2)");
    assert_int_equal(iterations(b.opt), 1);
    for (int i = 0; i < 2; i++) {
        float x[2], y[2];
        assert_int_equal(tfl_tensor_to_host(va[i], x, sizeof x), TFL_OK);
        assert_int_equal(tfl_tensor_to_host(vb[i], y, sizeof y), TFL_OK);
        assert_memory_equal(x, y, sizeof x);
    }
    assert_false(isfinite(g.last_norm)); /* the halted step's */
    drop_rig(&a);
    drop_rig(&b);
}

/* SKIP: the bad step of each epoch leaves everything as it was and is counted. */
static void nonfinite_guard_skips(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 10);
    tfl_dataset_free(r.ds);
    r.ds = line_nan(ctx, 10, 9); /* the last batch (examples 8, 9) */
    tfl_nonfinite_guard g = {.mode = TFL_NONFINITE_SKIP};
    tfl_callback cb = tfl_nonfinite_guard_callback(&g);
    tfl_epoch_logs logs[2];
    tfl_history h = {logs, 2, 0};
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4,
                                                              .callbacks = &cb, .n_callbacks = 1},
                                   &h),
                     TFL_OK);
    assert_int_equal(g.skipped, 2);
    assert_int_equal(iterations(r.opt), 4);
    for (int e = 0; e < 2; e++) {
        assert_int_equal(logs[e].skipped_steps, 1);
        assert_int_equal(logs[e].samples, 8);
        assert_true(isfinite(logs[e].loss));
    }
    tfl_tensor *v[2];
    assert_int_equal(tfl_model_variables(r.m, TFL_VARS_ALL, v, 2), 2);
    float k[2];
    assert_int_equal(tfl_tensor_to_host(v[0], k, sizeof k), TFL_OK);
    assert_true(isfinite(k[0]) && isfinite(k[1]));
    g.mode = (tfl_nonfinite_mode)7;
    assert_int_equal(tfl_model_fit(r.m, r.ds, &(tfl_fit_opts){.batch_size = 4, .callbacks = &cb,
                                                              .n_callbacks = 1},
                                   NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "mode 7 is neither TFL_NONFINITE_HALT");
    drop_rig(&r);
}

/* Data parallelism: the guard's verdict is the replicas' (a fake replica 1 of 2 whose sum
 * adds what it saw), so every replica skips or halts the same step. */
typedef struct remote {
    double seen[3]; /* replica 1's {non-finite loss, non-finite gradient, its index if so} */
    int calls;
    tfl_status fail;
} remote;
static tfl_status remote_sum(double *v, int n, void *user)
{
    remote *r = user;
    r->calls++;
    if (r->fail) return r->fail;
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) v[i] += r->seen[i];
    return TFL_OK;
}

static void nonfinite_guard_is_collective(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    rig r = make_rig(ctx, 8);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_model_call(r.m, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 1}),
                                   false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor *v[2], *grads[2];
    assert_int_equal(tfl_model_variables(r.m, TFL_VARS_ALL, v, 2), 2);
    grads[0] = v[0], grads[1] = v[1]; /* finite "gradients" */
    remote rm = {{0, 0, 0}, 0, TFL_OK};
    tfl_replicas rep = {.index = 0, .count = 2, .sum = remote_sum, .user = &rm};
    tfl_nonfinite_guard g = {.mode = TFL_NONFINITE_SKIP, .replicas = &rep};
    tfl_callback cb = tfl_nonfinite_guard_callback(&g);
    tfl_step_logs lg = {.epoch = 0, .batch = 2, .step = 3, .samples = 2, .loss = 0.5};
    bool skip = false;
    /* every replica finite: the step goes on */
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip), TFL_OK);
    assert_false(skip);
    assert_int_equal(rm.calls, 1);
    /* replica 1 alone saw a non-finite loss: this one (finite) skips too */
    rm.seen[0] = 1, rm.seen[2] = 1;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip), TFL_OK);
    assert_true(skip);
    assert_int_equal(g.skipped, 1);
    /* HALT: this replica halts with the others, naming the one that saw it */
    g.mode = TFL_NONFINITE_HALT;
    skip = false;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "the loss is not finite on replica 1 of 2 at step 3 (epoch 1, batch 3)");
    /* both saw it: this one's own value and the count */
    lg.loss = NAN;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the loss is NaN on 2 of 2 replicas at step 3");
    /* this one alone */
    rm.seen[0] = rm.seen[2] = 0;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "the loss is NaN on replica 0 of 2 at step 3");
    /* a replica's own non-finite gradient (no data-parallel callback before the guard) */
    lg.loss = 0.5;
    rm.seen[1] = 1;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "a gradient is not finite on 1 of 2 replicas");
    assert_false(skip);
    /* the sum's failure comes back */
    rm.fail = TFL_UNAVAILABLE;
    assert_int_equal(cb.on_gradients(r.m, 2, v, grads, &lg, cb.user, &skip), TFL_UNAVAILABLE);
    tfl_ctx_clear_error(ctx);
    drop_rig(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(steps_are_seen_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(stop_in_the_middle_of_an_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(a_skipped_step_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(replaced_gradients_are_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(a_hook_error_stops_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(nonfinite_guard_halts, setup, teardown),
        cmocka_unit_test_setup_teardown(nonfinite_guard_skips, setup, teardown),
        cmocka_unit_test_setup_teardown(nonfinite_guard_is_collective, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
