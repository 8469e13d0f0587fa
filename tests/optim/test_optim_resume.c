/*
 * test_optim_resume.c: the optimizer's whole state is its listed variables. Under PYTORCH
 * each variable counts its own steps (torch's state['step']), so a variable whose gradient
 * comes late starts at t = 1; tfl_optimizer_build makes the slots before any step, so a
 * new optimizer whose listed variables are assigned from an old one continues exactly
 * where the old one was; the optimizer refuses its own state as something to update and a
 * counter a restore set out of range; an invalid schedule gives NaN; optimizers and datasets
 * alive at tfl_ctx_free are freed with their context.
 */
#include "test_fixture.h"

#include "optim_helpers.h"

#include <math.h>

/* Adam under both formulas: `late` gets its first gradient on the 11th apply. */
static void test_late_variable_step(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    for (int fi = 0; fi < 2; fi++) {
        tfl_formula formula = fi ? TF : TORCH;
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, formula);
        o.learning_rate = 1e-3;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *early = var_vec(ctx, F64, D(0, 0), 2, "early");
        tfl_tensor *late = var_vec(ctx, F64, D(1, 1), 2, "late");
        tfl_tensor *g = vec_of(ctx, F64, D(0.5, -2), 2);
        for (int k = 0; k < 10; k++)
            apply_ok(opt, 2, VARS(early, late), VARS(g, NULL));
        apply_ok(opt, 2, VARS(early, late), VARS(g, g));
        assert_int_equal(iterations_of(opt), 11);
        /* t = 1 for `late` under torch: lr·m̂/(√v̂ + ε) = lr·g/(|g| + ε); Keras uses t = 11 */
        double t = fi ? 11 : 1, eps = o.epsilon;
        double bc1 = 1 - pow(0.9, t), bc2 = 1 - pow(0.999, t);
        double want[2];
        for (int i = 0; i < 2; i++) {
            double gi = i ? -2 : 0.5, m = 0.1 * gi, v = 0.001 * gi * gi;
            double step = fi ? 1e-3 * sqrt(bc2) / bc1 * m / (sqrt(v) + eps)
                             : 1e-3 / bc1 * m / (sqrt(v) / sqrt(bc2) + eps);
            want[i] = 1 - step;
        }
        expect_vec(late, want, 2, 1e-15);
        if (!fi) { /* 1 - 1e-3·sign(g), up to ε */
            expect_vec(late, D(1 - 1e-3, 1 + 1e-3), 2, 1e-10);
            expect_vec(tfl_optimizer_slot(opt, late, "step"), D(1), 1, 0);
            expect_vec(tfl_optimizer_slot(opt, early, "step"), D(11), 1, 0);
        } else {
            assert_true(fabs(want[0] - (1 - 1e-3)) > 1e-4); /* the two formulas really differ */
        }
        tfl_optimizer_free(opt);
        tfl_tensor_release(early);
        tfl_tensor_release(late);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

/* Runs `steps` applies of opt on (a, b) with gradients that change every step. */
static void run_steps(tfl_ctx *ctx, tfl_optimizer *opt, tfl_tensor *a, tfl_tensor *b, int from,
                      int steps)
{
    for (int k = from; k < from + steps; k++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        double s = 0.3 * k - 1;
        apply_ok(opt, 2, VARS(a, b),
                 VARS(vec_of(ctx, F32, D(s, 1 - s, 0.5), 3), vec_of(ctx, F64, D(2 * s, -s), 2)));
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

typedef struct resume_case {
    tfl_optimizer_kind kind;
    tfl_formula formula;
    double momentum, dampening;
    bool amsgrad, centered;
} resume_case;

static const resume_case resume_cases[] = {
    {ADAM, TORCH, 0, 0, true, false},     {ADAM, TF, 0, 0, false, false},
    {SGD, TORCH, 0.9, 0.3, false, false}, {SGD, TF, 0.9, 0, false, false},
    {RMSPROP, TF, 0.5, 0, false, true},   {ADAGRAD, TORCH, 0, 0, false, false},
    {TFL_OPTIMIZER_NADAM, TORCH, 0, 0, false, false}, {TFL_OPTIMIZER_NADAM, TF, 0, 0, false, false},
    {TFL_OPTIMIZER_ADAMAX, TORCH, 0, 0, false, false}, {TFL_OPTIMIZER_ADAMAX, TF, 0, 0, false, false},
};

/* An optimizer built and restored from another's listed variables continues exactly as the
 * other does: same values after three more steps, bit for bit. */
static void test_build_then_restore_continues(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    for (size_t c = 0; c < sizeof resume_cases / sizeof resume_cases[0]; c++) {
        const resume_case *rc = &resume_cases[c];
        tfl_optimizer_opts o = tfl_optimizer_defaults(rc->kind, rc->formula);
        o.learning_rate = 0.05;
        o.momentum = rc->momentum;
        o.dampening = rc->dampening;
        o.amsgrad = rc->amsgrad;
        o.centered = rc->centered;
        o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = 3,
                                    .decay_rate = 0.5};
        tfl_optimizer *old = new_opt(ctx, &o);
        tfl_tensor *a = var_vec(ctx, F32, D(1, -2, 3), 3, "a");
        tfl_tensor *b = var_vec(ctx, F64, D(0.5, 4), 2, "b");
        run_steps(ctx, old, a, b, 0, 4);

        /* a "checkpoint": copies of the variables and of everything the optimizer lists */
        tfl_tensor *a2 = tfl_variable_new(ctx, a, &(tfl_variable_opts){.name = "a"});
        tfl_tensor *b2 = tfl_variable_new(ctx, b, &(tfl_variable_opts){.name = "b"});
        tfl_optimizer *fresh = new_opt(ctx, &o);
        assert_int_equal(tfl_optimizer_variables(fresh, NULL, 0), 1);
        assert_int_equal(tfl_optimizer_build(fresh, 2, VARS(a2, b2)), TFL_OK);
        assert_int_equal(tfl_optimizer_build(fresh, 2, VARS(a2, b2)), TFL_OK); /* idempotent */
        int64_t n = tfl_optimizer_variables(old, NULL, 0);
        assert_int_equal(tfl_optimizer_variables(fresh, NULL, 0), n);
        tfl_tensor *from[16], *to[16];
        assert_true(n <= 16);
        tfl_optimizer_variables(old, from, n);
        tfl_optimizer_variables(fresh, to, n);
        for (int64_t i = 0; i < n; i++) {
            const char *suffix = strchr(tfl_variable_name(from[i]), '/');
            assert_non_null(suffix); /* the names differ only in the optimizer's name */
            assert_int_equal(tfl_variable_assign(to[i], from[i]), TFL_OK);
        }
        assert_int_equal(iterations_of(fresh), 4);

        run_steps(ctx, old, a, b, 4, 3);
        run_steps(ctx, fresh, a2, b2, 4, 3);
        expect_same_bytes(a, a2);
        expect_same_bytes(b, b2);
        tfl_optimizer_free(old);
        tfl_optimizer_free(fresh);
        tfl_tensor *all[] = {a, b, a2, b2};
        for (int i = 0; i < 4; i++)
            tfl_tensor_release(all[i]);
    }
}

static void test_build_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    tfl_optimizer *opt = new_opt(ctx, &o);
    tfl_tensor *a = var_vec(ctx, F32, D(1, 2), 2, "a");
    tfl_tensor *i32 = tfl_variable_new(ctx, tfl_scalar_i32(ctx, 3), &(tfl_variable_opts){.name = "n"});
    assert_int_equal(tfl_optimizer_build(opt, 2, VARS(a, i32)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "'n:0' has dtype int32");
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 1); /* a's slots undone too */
    assert_int_equal(tfl_optimizer_build(opt, -1, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "bad variable list");
    assert_int_equal(tfl_optimizer_build(opt, 2, VARS(a, a)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "listed more than once");
    assert_int_equal(tfl_optimizer_build(NULL, 0, NULL), TFL_INVALID_ARGUMENT);
    tfl_optimizer_free(opt);
    tfl_tensor_release(a);
    tfl_tensor_release(i32);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* The optimizer's own slots and counters are not variables it may update; a counter a
 * restore set to a negative value or to 2^63 - 1 is refused before anything changes. */
static void test_own_state_and_counters_refused(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.1, 0.9);
    tfl_tensor *w = var_vec(ctx, F64, D(1, 2), 2, "w");
    tfl_tensor *g = vec_of(ctx, F64, D(1, 1), 2);
    apply_ok(opt, 1, VARS(w), VARS(g));
    tfl_tensor *mom = tfl_optimizer_slot(opt, w, "momentum");
    assert_non_null(mom);
    assert_int_equal(tfl_optimizer_apply(opt, 2, VARS(w, mom), VARS(g, g)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "'w/SGD/momentum:0' is this optimizer's own state");
    /* another optimizer may update it (a strange thing to do, but not a race) */
    tfl_optimizer *other = sgd(ctx, TF, 0.1, 0);
    apply_ok(other, 1, VARS(mom), VARS(g));
    expect_vec(mom, D(0.9, 0.9), 2, 1e-15);
    assert_int_equal(tfl_optimizer_apply(opt, 1, VARS(tfl_optimizer_iterations(opt)), VARS(g)),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "own state");

    tfl_tensor *iters = tfl_optimizer_iterations(opt);
    assert_int_equal(tfl_variable_assign(iters, tfl_scalar_i64(ctx, INT64_MAX)), TFL_OK);
    assert_int_equal(tfl_optimizer_apply(opt, 1, VARS(w), VARS(g)), TFL_FAILED_PRECONDITION);
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "'SGD/iterations:0' is 9223372036854775807");
    assert_int_equal(tfl_variable_assign(iters, tfl_scalar_i64(ctx, 1)), TFL_OK);
    tfl_tensor *step = tfl_optimizer_slot(opt, w, "step");
    assert_int_equal(tfl_variable_assign(step, tfl_scalar_i64(ctx, -4)), TFL_OK);
    assert_int_equal(tfl_optimizer_apply(opt, 1, VARS(w), VARS(g)), TFL_FAILED_PRECONDITION);
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "'w/SGD/step:0' is -4");
    expect_vec(w, D(0.9, 1.9), 2, 1e-15); /* only the first step happened */
    assert_int_equal(iterations_of(opt), 1);
    tfl_optimizer_free(opt);
    tfl_optimizer_free(other);
    tfl_tensor_release(w);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Optimizers (with their slots) and datasets still alive when their context is freed are
 * freed with it: every byte taken through the context's hooks comes back. */
static void test_freed_with_context(void **state)
{
    (void)state;
    alloc_counter count = {0};
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.alloc_fn = counting_alloc,
                                               .free_fn = counting_free, .alloc_user = &count},
                               NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *w = var_vec(ctx, F32, D(1, 2, 3), 3, "w");
    tfl_optimizer *a = sgd(ctx, TORCH, 0.1, 0.9), *b = sgd(ctx, TF, 0.1, 0.5);
    apply_ok(a, 1, VARS(w), VARS(vec_of(ctx, F32, D(1, 1, 1), 3)));
    apply_ok(b, 1, VARS(w), VARS(vec_of(ctx, F32, D(1, 1, 1), 3)));
    tfl_optimizer_free(a); /* one freed by hand, one left to the context */
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, vec_of(ctx, F32, D(1, 2, 3), 3), NULL, NULL);
    assert_non_null(ds);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx); /* w, b (its slots, its counter) and ds are still alive */
    assert_true(count.allocs > 0);
    assert_int_equal(count.frees, count.allocs);
}

/* tfl_schedule_value refuses what tfl_optimizer_new refuses. */
static void test_invalid_schedule_is_nan(void **state)
{
    (void)state;
    const tfl_schedule bad[] = {
        {.kind = TFL_SCHEDULE_STEP, .decay_steps = 2, .decay_rate = -0.5},
        {.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = 2, .decay_rate = 0},
        {.kind = TFL_SCHEDULE_COSINE, .decay_steps = 2, .alpha = NAN},
        {.kind = TFL_SCHEDULE_CONSTANT, .warmup_steps = 3, .warmup_start_factor = -3},
        {.kind = TFL_SCHEDULE_COSINE, .decay_steps = 0},
        {.kind = (tfl_schedule_kind)9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_true(isnan(tfl_schedule_value(&bad[i], 0.1, 1)));
    const tfl_schedule ok = {.kind = TFL_SCHEDULE_STEP, .decay_steps = 2, .decay_rate = 0.5};
    assert_true(tfl_schedule_value(&ok, 0.1, 3) == 0.05);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_late_variable_step),
        T(test_build_then_restore_continues),
        T(test_build_errors),
        T(test_own_state_and_counters_refused),
        T(test_invalid_schedule_is_nan),
        T(test_freed_with_context),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
