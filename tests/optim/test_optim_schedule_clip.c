/* test_optim_schedule_clip.c: learning-rate schedules (tfl_schedule_value for every kind,
 * with and without warmup, NaN for an invalid one; an optimizer applying lr(iterations), with
 * and without momentum) and gradient clipping (by value, by each tensor's norm, by the global
 * norm; the caller's gradient left as it was; the clipped gradient feeding Adam's slots). */
#include "optim_helpers.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- schedules ------------------------------------------------------------------------------- */

static void expect_near(double got, double want, double tol, int line)
{
    if (!(fabs(got - want) <= tol * fmax(1.0, fabs(want)))) {
        print_error("line %d: got %.17g, want %.17g\n", line, got, want);
        fail();
    }
}
#define EXPECT_NEAR(got, want) expect_near((got), (want), 1e-15, __LINE__)

static void test_schedule_values(void **state)
{
    (void)state;
    const double lr = 0.2;
    /* NULL and all-zero: constant */
    EXPECT_NEAR(tfl_schedule_value(NULL, lr, 0), lr);
    EXPECT_NEAR(tfl_schedule_value(NULL, lr, 1000000), lr);
    assert_true(isnan(tfl_schedule_value(NULL, lr, -1)));
    tfl_schedule c = {0};
    EXPECT_NEAR(tfl_schedule_value(&c, lr, 0), lr);
    EXPECT_NEAR(tfl_schedule_value(&c, lr, 12345), lr);

    tfl_schedule e = {.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = 10, .decay_rate = 0.5};
    EXPECT_NEAR(tfl_schedule_value(&e, lr, 0), lr);
    EXPECT_NEAR(tfl_schedule_value(&e, lr, 5), lr * sqrt(0.5));
    EXPECT_NEAR(tfl_schedule_value(&e, lr, 10), lr * 0.5);
    EXPECT_NEAR(tfl_schedule_value(&e, lr, 25), lr * pow(0.5, 2.5));

    tfl_schedule s = {.kind = TFL_SCHEDULE_STEP, .decay_steps = 10, .decay_rate = 0.5};
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 0), lr);
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 9), lr);
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 10), lr * 0.5);
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 19), lr * 0.5);
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 20), lr * 0.25);
    EXPECT_NEAR(tfl_schedule_value(&s, lr, 35), lr * 0.125);

    tfl_schedule k = {.kind = TFL_SCHEDULE_COSINE, .decay_steps = 100, .alpha = 0.1};
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 0), lr);
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 25), lr * (0.1 + 0.9 * (1 + cos(M_PI / 4)) / 2));
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 50), lr * 0.55);
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 100), lr * 0.1);
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 101), lr * 0.1); /* stays at alpha (Keras) */
    EXPECT_NEAR(tfl_schedule_value(&k, lr, 250), lr * 0.1);
    tfl_schedule k0 = {.kind = TFL_SCHEDULE_COSINE, .decay_steps = 4};
    EXPECT_NEAR(tfl_schedule_value(&k0, lr, 2), lr * 0.5);
    assert_true(fabs(tfl_schedule_value(&k0, lr, 4)) < 1e-17);
    assert_true(fabs(tfl_schedule_value(&k0, lr, 9)) < 1e-17);

    /* warmup 10 from 0.1, then cosine over 100 on s - 10 */
    tfl_schedule w = {.kind = TFL_SCHEDULE_COSINE,
                      .decay_steps = 100,
                      .warmup_steps = 10,
                      .warmup_start_factor = 0.1};
    EXPECT_NEAR(tfl_schedule_value(&w, lr, 0), 0.1 * lr);
    EXPECT_NEAR(tfl_schedule_value(&w, lr, 5), lr * (0.1 + 0.9 * 0.5));
    EXPECT_NEAR(tfl_schedule_value(&w, lr, 9), lr * (0.1 + 0.9 * 0.9));
    EXPECT_NEAR(tfl_schedule_value(&w, lr, 10), lr);
    EXPECT_NEAR(tfl_schedule_value(&w, lr, 60), lr * 0.5);
    assert_true(fabs(tfl_schedule_value(&w, lr, 110)) < 1e-17);
    assert_true(fabs(tfl_schedule_value(&w, lr, 500)) < 1e-17);
    /* warmup from 0 on a constant schedule */
    tfl_schedule wc = {.warmup_steps = 4};
    EXPECT_NEAR(tfl_schedule_value(&wc, lr, 0), 0);
    EXPECT_NEAR(tfl_schedule_value(&wc, lr, 1), lr * 0.25);
    EXPECT_NEAR(tfl_schedule_value(&wc, lr, 4), lr);
    EXPECT_NEAR(tfl_schedule_value(&wc, lr, 40), lr);
    /* warmup then step decay on s - warmup */
    tfl_schedule ws = {.kind = TFL_SCHEDULE_STEP,
                       .decay_steps = 3,
                       .decay_rate = 0.1,
                       .warmup_steps = 2,
                       .warmup_start_factor = 0.5};
    EXPECT_NEAR(tfl_schedule_value(&ws, lr, 1), lr * 0.75);
    EXPECT_NEAR(tfl_schedule_value(&ws, lr, 4), lr);
    EXPECT_NEAR(tfl_schedule_value(&ws, lr, 5), lr * 0.1);

    /* invalid: NaN */
    assert_true(isnan(tfl_schedule_value(&e, lr, -1)));
    assert_true(isnan(tfl_schedule_value(&c, lr, -5)));
    assert_true(isnan(tfl_schedule_value(&(tfl_schedule){.kind = TFL_SCHEDULE_KIND_COUNT}, lr, 0)));
    assert_true(isnan(tfl_schedule_value(&(tfl_schedule){.kind = (tfl_schedule_kind)-1}, lr, 0)));
    assert_true(isnan(tfl_schedule_value(
        &(tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_rate = 0.5}, lr, 3)));
    assert_true(isnan(tfl_schedule_value(
        &(tfl_schedule){.kind = TFL_SCHEDULE_COSINE, .decay_steps = -2}, lr, 3)));
    assert_true(isnan(tfl_schedule_value(&(tfl_schedule){.warmup_steps = -1}, lr, 3)));
}

/* An optimizer with a schedule uses lr(iterations) on each apply: SGD without momentum moves
 * the variable by exactly lr_k g. */
static void test_schedule_drives_apply(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const tfl_schedule scheds[] = {
        {.kind = TFL_SCHEDULE_STEP, .decay_steps = 2, .decay_rate = 0.5},
        {.kind = TFL_SCHEDULE_COSINE,
         .decay_steps = 4,
         .alpha = 0.25,
         .warmup_steps = 2,
         .warmup_start_factor = 0.5},
    };
    for (int si = 0; si < 2; si++)
        for (int fi = 0; fi < 2; fi++) {
            tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, fi ? TF : TORCH);
            o.learning_rate = 0.5;
            o.schedule = scheds[si];
            tfl_optimizer *opt = new_opt(ctx, &o);
            tfl_tensor *v = var_vec(ctx, F64, D(1, 2, 3), 3, "w");
            tfl_tensor *g = vec_of(ctx, F64, D(1, -2, 0.25), 3);
            double p[3] = {1, 2, 3};
            for (int k = 0; k < 9; k++) {
                double lr;
                if (si == 0) {
                    lr = 0.5 * pow(0.5, k / 2);
                } else if (k < 2) {
                    lr = 0.5 * (0.5 + 0.5 * k / 2.0);
                } else {
                    double done = fmin(k - 2, 4) / 4.0;
                    lr = 0.5 * (0.25 + 0.75 * (1 + cos(M_PI * done)) / 2);
                }
                EXPECT_NEAR(tfl_optimizer_learning_rate(opt), lr);
                apply_ok(opt, 1, VARS(v), VARS(g));
                p[0] -= lr * 1;
                p[1] -= lr * -2;
                p[2] -= lr * 0.25;
                expect_vec(v, p, 3, 1e-15);
            }
            tfl_optimizer_free(opt);
            tfl_tensor_release(v);
        }

    /* with momentum the formulas part once lr changes: torch's buffer is in gradient units
     * (a new lr applies at once), tf's has lr folded in */
    for (int fi = 0; fi < 2; fi++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, fi ? TF : TORCH);
        o.learning_rate = 0.5;
        o.momentum = 0.9;
        o.schedule = scheds[0];
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, P0, 3, "w");
        ref_opt r;
        ref_init(&r, &o, 3, P0);
        for (int k = 0; k < 5; k++) {
            apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, F64, GS[k % 3], 3)));
            ref_apply(&r, 0.5 * pow(0.5, k / 2), GS[k % 3], 1);
            expect_ref(opt, v, &r, 1e-14);
        }
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- clipping -------------------------------------------------------------------------------- */

/* SGD with lr 1 and no momentum: p0 - p1 is the clipped gradient. */
static tfl_optimizer *clip_sgd(tfl_ctx *ctx, tfl_formula formula, double value, double norm,
                               double global)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, formula);
    o.learning_rate = 1;
    o.clip_value = value;
    o.clip_norm = norm;
    o.global_clip_norm = global;
    return new_opt(ctx, &o);
}

static void expect_delta_(const tfl_tensor *v, const double *p0, const double *delta, int n,
                          double tol, int line)
{
    double want[8];
    for (int i = 0; i < n; i++)
        want[i] = p0[i] - delta[i];
    expect_vec_(v, want, n, tol, line);
}
#define expect_delta(v, p0, delta, n, tol) expect_delta_((v), (p0), (delta), (n), (tol), __LINE__)

static void test_clip_value(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int fi = 0; fi < 2; fi++)
        for (int di = 0; di < 2; di++) {
            tfl_dtype dt = di ? F32 : F64;
            tfl_optimizer *opt = clip_sgd(ctx, fi ? TF : TORCH, 0.5, 0, 0);
            const double p0[4] = {1, 1, 1, 1};
            tfl_tensor *v = var_vec(ctx, dt, p0, 4, "w");
            tfl_tensor *g = vec_of(ctx, dt, D(0.3, -0.9, 2.0, -0.5), 4);
            void *before = host_bytes(g, NULL);
            apply_ok(opt, 1, VARS(v), VARS(g));
            expect_delta(v, p0, D(0.3, -0.5, 0.5, -0.5), 4, 1e-7);
            size_t nb;
            void *after = host_bytes(g, &nb);
            assert_memory_equal(before, after, nb); /* the caller's gradient is not clipped */
            free(before);
            free(after);
            tfl_optimizer_free(opt);
            tfl_tensor_release(v);
        }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_clip_norm(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int fi = 0; fi < 2; fi++)
        for (int di = 0; di < 2; di++) {
            bool tf = fi == 1;
            tfl_dtype dt = di ? F32 : F64;
            double tol = di ? 5e-7 : 1e-15;
            tfl_optimizer *opt = clip_sgd(ctx, tf ? TF : TORCH, 0, 1.0, 0);
            const double p0[2] = {10, 10};
            tfl_tensor *a = var_vec(ctx, dt, p0, 2, "a"), *b = var_vec(ctx, dt, p0, 2, "b");
            tfl_tensor *c = var_vec(ctx, dt, p0, 2, "c");
            tfl_tensor *ga = vec_of(ctx, dt, D(3, 4), 2);      /* norm 5: clipped */
            tfl_tensor *gb = vec_of(ctx, dt, D(0.3, -0.4), 2); /* norm 0.5: kept */
            tfl_tensor *gc = vec_of(ctx, dt, D(0.6, 0.8), 2);  /* norm 1 = c */
            void *before = host_bytes(ga, NULL);
            apply_ok(opt, 3, VARS(a, b, c), VARS(ga, gb, gc));
            double s = tf ? 1.0 / 5.0 : 1.0 / (5.0 + 1e-6);
            expect_delta(a, p0, D(3 * s, 4 * s), 2, tol);
            expect_delta(b, p0, D(0.3, -0.4), 2, tol);
            /* at the norm: tf keeps it (c / max(1, 1)); torch scales by 1 / (1 + 1e-6) */
            double sc = tf ? 1.0 : 1.0 / (1.0 + 1e-6);
            expect_delta(c, p0, D(0.6 * sc, 0.8 * sc), 2, tol);
            size_t nb;
            void *after = host_bytes(ga, &nb);
            assert_memory_equal(before, after, nb);
            free(before);
            free(after);
            expect_vec(ga, D(3, 4), 2, 0);
            tfl_optimizer_free(opt);
            tfl_tensor_release(a);
            tfl_tensor_release(b);
            tfl_tensor_release(c);
        }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_clip_global_norm(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int fi = 0; fi < 2; fi++)
        for (int di = 0; di < 2; di++) {
            bool tf = fi == 1;
            tfl_dtype dt = di ? F32 : F64;
            double tol = di ? 5e-7 : 1e-15;
            /* norms 5 and 12 together: 13 */
            tfl_optimizer *opt = clip_sgd(ctx, tf ? TF : TORCH, 0, 0, 2.0);
            const double p0[2] = {10, 10};
            tfl_tensor *a = var_vec(ctx, dt, p0, 2, "a"), *b = var_vec(ctx, dt, p0, 2, "b");
            tfl_tensor *z = var_vec(ctx, dt, p0, 2, "z");
            tfl_tensor *ga = vec_of(ctx, dt, D(3, 4), 2), *gb = vec_of(ctx, dt, D(0, -12), 2);
            void *ba = host_bytes(ga, NULL), *bb = host_bytes(gb, NULL);
            apply_ok(opt, 3, VARS(a, z, b), VARS(ga, NULL, gb)); /* a NULL gradient counts 0 */
            double s = tf ? 2.0 / 13.0 : 2.0 / (13.0 + 1e-6);
            expect_delta(a, p0, D(3 * s, 4 * s), 2, tol);
            expect_delta(b, p0, D(0, -12 * s), 2, tol);
            expect_vec(z, p0, 2, 0);
            size_t nb;
            void *aa = host_bytes(ga, &nb);
            assert_memory_equal(ba, aa, nb);
            free(aa);
            aa = host_bytes(gb, &nb);
            assert_memory_equal(bb, aa, nb);
            free(aa);
            free(ba);
            free(bb);
            tfl_optimizer_free(opt);
            /* below the norm: unchanged */
            opt = clip_sgd(ctx, tf ? TF : TORCH, 0, 0, 20.0);
            apply_ok(opt, 2, VARS(a, b), VARS(ga, gb));
            expect_delta(a, p0, D(3 * s + 3, 4 * s + 4), 2, tol);
            expect_delta(b, p0, D(0, -12 * s - 12), 2, tol);
            tfl_optimizer_free(opt);
            tfl_tensor_release(a);
            tfl_tensor_release(b);
            tfl_tensor_release(z);
        }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Clipping comes before weight decay and the update, and the clipped gradient feeds the
 * slots (Adam's m). */
static void test_clip_norm_feeds_adam(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int fi = 0; fi < 2; fi++) {
        bool tf = fi == 1;
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, tf ? TF : TORCH);
        o.learning_rate = 0.1;
        o.weight_decay = 0.3;
        o.clip_norm = 0.5;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, P0, 3, "w");
        ref_opt r;
        ref_init(&r, &o, 3, P0);
        for (int step = 0; step < 3; step++) {
            const double *g = GS[step];
            double norm = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
            double s = tf ? 0.5 / fmax(norm, 0.5) : fmin(1.0, 0.5 / (norm + 1e-6));
            apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, F64, g, 3)));
            ref_apply(&r, 0.1, g, s);
            expect_ref(opt, v, &r, 1e-13);
        }
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_schedule_values), T(test_schedule_drives_apply), T(test_clip_value),
        T(test_clip_norm),       T(test_clip_global_norm),      T(test_clip_norm_feeds_adam),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
