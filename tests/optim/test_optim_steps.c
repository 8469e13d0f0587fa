/* test_optim_steps.c: what an optimizer computes. The defaults table and the kind and
 * formula names; every optimizer and formula checked step by step against the formulas of
 * optim.h computed in double (ref_apply in optim_helpers.h; float64 and float32 variables);
 * a few updates written out by hand; torch SGD's momentum buffer starting per variable; and
 * a hundred tensors in one apply giving the values of a hundred separate applies. */
#include "optim_helpers.h"

/* ---- defaults -------------------------------------------------------------------------------- */

static void expect_defaults(tfl_optimizer_kind kind, tfl_formula formula, tfl_formula resolved,
                            double lr, double b1, double b2, double eps, double wd, double rho,
                            double a0)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(kind, formula);
    assert_int_equal(o.kind, kind);
    assert_int_equal(o.formula, resolved);
    assert_null(o.name);
    assert_true(o.learning_rate == lr);
    assert_true(o.beta1 == b1);
    assert_true(o.beta2 == b2);
    assert_true(o.epsilon == eps);
    assert_true(o.weight_decay == wd);
    assert_true(o.rho == rho);
    assert_true(o.initial_accumulator == a0);
    assert_true(o.momentum == 0 && o.dampening == 0 && !o.nesterov && !o.amsgrad && !o.centered);
    assert_true(o.clip_value == 0 && o.clip_norm == 0 && o.global_clip_norm == 0);
    assert_int_equal(o.schedule.kind, TFL_SCHEDULE_CONSTANT);
    assert_int_equal(o.schedule.decay_steps, 0);
    assert_int_equal(o.schedule.warmup_steps, 0);
}

static void test_defaults(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    /* kind, formula, resolved formula; lr, beta1, beta2, epsilon, weight_decay, rho, a0 */
    expect_defaults(SGD, TORCH, TORCH, 1e-3, 0, 0, 0, 0, 0, 0);
    expect_defaults(SGD, TF, TF, 0.01, 0, 0, 0, 0, 0, 0);
    expect_defaults(SGD, TFL_FORMULA_DEFAULT, TORCH, 1e-3, 0, 0, 0, 0, 0, 0);
    expect_defaults(ADAM, TORCH, TORCH, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0);
    expect_defaults(ADAM, TF, TF, 1e-3, 0.9, 0.999, 1e-7, 0, 0, 0);
    expect_defaults(ADAM, TFL_FORMULA_DEFAULT, TORCH, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0);
    expect_defaults(ADAMW, TORCH, TORCH, 1e-3, 0.9, 0.999, 1e-8, 0.01, 0, 0);
    expect_defaults(ADAMW, TF, TF, 1e-3, 0.9, 0.999, 1e-7, 0.004, 0, 0);
    expect_defaults(ADAMW, TFL_FORMULA_DEFAULT, TORCH, 1e-3, 0.9, 0.999, 1e-8, 0.01, 0, 0);
    expect_defaults(RMSPROP, TORCH, TORCH, 1e-2, 0, 0, 1e-8, 0, 0.99, 0);
    expect_defaults(RMSPROP, TF, TF, 1e-3, 0, 0, 1e-7, 0, 0.9, 0);
    expect_defaults(RMSPROP, TFL_FORMULA_DEFAULT, TF, 1e-3, 0, 0, 1e-7, 0, 0.9, 0);
    expect_defaults(ADAGRAD, TORCH, TORCH, 1e-2, 0, 0, 1e-10, 0, 0, 0);
    expect_defaults(ADAGRAD, TF, TF, 1e-3, 0, 0, 1e-7, 0, 0, 0.1);
    expect_defaults(ADAGRAD, TFL_FORMULA_DEFAULT, TORCH, 1e-2, 0, 0, 1e-10, 0, 0, 0);
    expect_defaults(TFL_OPTIMIZER_NADAM, TORCH, TORCH, 2e-3, 0.9, 0.999, 1e-8, 0, 0, 0);
    expect_defaults(TFL_OPTIMIZER_NADAM, TF, TF, 1e-3, 0.9, 0.999, 1e-7, 0, 0, 0);
    expect_defaults(TFL_OPTIMIZER_NADAM, TFL_FORMULA_DEFAULT, TORCH, 2e-3, 0.9, 0.999, 1e-8, 0, 0,
                    0);
    expect_defaults(TFL_OPTIMIZER_ADAMAX, TORCH, TORCH, 2e-3, 0.9, 0.999, 1e-8, 0, 0, 0);
    expect_defaults(TFL_OPTIMIZER_ADAMAX, TF, TF, 1e-3, 0.9, 0.999, 1e-7, 0, 0, 0);
    expect_defaults(TFL_OPTIMIZER_ADAMAX, TFL_FORMULA_DEFAULT, TORCH, 2e-3, 0.9, 0.999, 1e-8, 0, 0,
                    0);
    /* NAdam's momentum schedule: torch's ψ, and Keras's 0.96^t (ψ = 1) */
    assert_true(tfl_optimizer_defaults(TFL_OPTIMIZER_NADAM, TORCH).momentum_decay == 0.004);
    assert_true(tfl_optimizer_defaults(TFL_OPTIMIZER_NADAM, TF).momentum_decay == 1.0);
    /* unknown kind or formula: kind 0 */
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)0, TORCH).kind, 0);
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)TFL_OPTIMIZER_KIND_COUNT, TORCH).kind, 0);
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)-1, TF).kind, 0);
    assert_int_equal(tfl_optimizer_defaults(ADAM, (tfl_formula)3).kind, 0);
    assert_int_equal(tfl_optimizer_defaults(ADAM, (tfl_formula)-1).kind, 0);
    /* every default is accepted, and the options come back resolved */
    for (int k = SGD; k < TFL_OPTIMIZER_KIND_COUNT; k++)
        for (int f = TFL_FORMULA_DEFAULT; f <= TORCH; f++) {
            tfl_optimizer_opts o = tfl_optimizer_defaults((tfl_optimizer_kind)k, (tfl_formula)f);
            tfl_optimizer *opt = new_opt(ctx, &o);
            const tfl_optimizer_opts *got = tfl_optimizer_options(opt);
            assert_non_null(got);
            assert_int_equal(got->kind, k);
            assert_int_equal(got->formula, o.formula);
            assert_true(got->formula == TF || got->formula == TORCH);
            assert_true(got->learning_rate == o.learning_rate);
            assert_true(got->epsilon == o.epsilon);
            assert_ptr_equal(got->name, tfl_optimizer_name(opt));
            assert_string_equal(got->name, tfl_optimizer_kind_name((tfl_optimizer_kind)k));
            tfl_optimizer_free(opt);
        }
    assert_null(tfl_optimizer_options(NULL));
    assert_true(isnan(tfl_optimizer_learning_rate(NULL)));
    /* names */
    assert_string_equal(tfl_optimizer_kind_name(SGD), "SGD");
    assert_string_equal(tfl_optimizer_kind_name(ADAM), "Adam");
    assert_string_equal(tfl_optimizer_kind_name(ADAMW), "AdamW");
    assert_string_equal(tfl_optimizer_kind_name(RMSPROP), "RMSprop");
    assert_string_equal(tfl_optimizer_kind_name(ADAGRAD), "Adagrad");
    assert_string_equal(tfl_optimizer_kind_name(TFL_OPTIMIZER_NADAM), "NAdam");
    assert_string_equal(tfl_optimizer_kind_name(TFL_OPTIMIZER_ADAMAX), "Adamax");
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)0), "unknown");
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)TFL_OPTIMIZER_KIND_COUNT), "unknown");
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)-3), "unknown");
    assert_string_equal(tfl_formula_name(TFL_FORMULA_DEFAULT), "default");
    assert_string_equal(tfl_formula_name(TF), "tensorflow");
    assert_string_equal(tfl_formula_name(TORCH), "pytorch");
    assert_string_equal(tfl_formula_name((tfl_formula)3), "unknown");
    assert_string_equal(tfl_formula_name((tfl_formula)-1), "unknown");
}

/* ---- single steps against the formulas ------------------------------------------------------- */

typedef struct step_case {
    const char *what;
    tfl_optimizer_kind kind;
    tfl_formula formula;
    double lr, wd, momentum, dampening;
    bool nesterov, amsgrad, centered;
    double beta2; /* 0: the default */
    double a0;    /* < 0: the default */
    double clip_value;
} step_case;

static const step_case step_cases[] = {
    {"SGD torch", SGD, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"SGD tf", SGD, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"SGD torch momentum", SGD, TORCH, 0.1, 0, 0.9, 0, false, false, false, 0, -1, 0},
    {"SGD torch dampening", SGD, TORCH, 0.1, 0, 0.9, 0.3, false, false, false, 0, -1, 0},
    {"SGD torch nesterov", SGD, TORCH, 0.1, 0, 0.9, 0, true, false, false, 0, -1, 0},
    {"SGD tf momentum", SGD, TF, 0.1, 0, 0.9, 0, false, false, false, 0, -1, 0},
    {"SGD tf nesterov", SGD, TF, 0.1, 0, 0.9, 0, true, false, false, 0, -1, 0},
    {"SGD torch L2", SGD, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"SGD torch momentum L2", SGD, TORCH, 0.1, 0.2, 0.9, 0, false, false, false, 0, -1, 0},
    {"SGD tf momentum decay", SGD, TF, 0.1, 0.2, 0.9, 0, false, false, false, 0, -1, 0},
    {"SGD torch clip_value", SGD, TORCH, 0.1, 0.2, 0.9, 0, false, false, false, 0, -1, 0.35},
    {"Adam torch", ADAM, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adam tf", ADAM, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adam torch amsgrad", ADAM, TORCH, 0.1, 0, 0, 0, false, true, false, 0.5, -1, 0},
    {"Adam tf amsgrad", ADAM, TF, 0.1, 0, 0, 0, false, true, false, 0.5, -1, 0},
    {"Adam torch L2", ADAM, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"Adam tf decay", ADAM, TF, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"Adam tf clip_value", ADAM, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0.35},
    {"AdamW torch", ADAMW, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"AdamW tf", ADAMW, TF, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"AdamW torch amsgrad", ADAMW, TORCH, 0.1, 0.2, 0, 0, false, true, false, 0.5, -1, 0},
    {"RMSprop torch", RMSPROP, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"RMSprop torch centered", RMSPROP, TORCH, 0.1, 0, 0, 0, false, false, true, 0, -1, 0},
    {"RMSprop torch momentum", RMSPROP, TORCH, 0.1, 0, 0.5, 0, false, false, false, 0, -1, 0},
    {"RMSprop torch both", RMSPROP, TORCH, 0.1, 0, 0.5, 0, false, false, true, 0, -1, 0},
    {"RMSprop torch L2", RMSPROP, TORCH, 0.1, 0.2, 0.5, 0, false, false, true, 0, -1, 0},
    {"RMSprop tf", RMSPROP, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"RMSprop tf centered", RMSPROP, TF, 0.1, 0, 0, 0, false, false, true, 0, -1, 0},
    {"RMSprop tf momentum", RMSPROP, TF, 0.1, 0, 0.5, 0, false, false, false, 0, -1, 0},
    {"RMSprop tf both", RMSPROP, TF, 0.1, 0, 0.5, 0, false, false, true, 0, -1, 0},
    {"RMSprop tf decay", RMSPROP, TF, 0.1, 0.2, 0.5, 0, false, false, true, 0, -1, 0},
    {"Adagrad torch", ADAGRAD, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adagrad tf", ADAGRAD, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adagrad torch a0", ADAGRAD, TORCH, 0.1, 0, 0, 0, false, false, false, 0, 0.5, 0},
    {"Adagrad torch L2", ADAGRAD, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"Adagrad tf decay", ADAGRAD, TF, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0},
    {"NAdam torch", TFL_OPTIMIZER_NADAM, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"NAdam tf", TFL_OPTIMIZER_NADAM, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"NAdam torch L2", TFL_OPTIMIZER_NADAM, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0.5, -1, 0},
    {"NAdam tf decay", TFL_OPTIMIZER_NADAM, TF, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0.35},
    {"Adamax torch", TFL_OPTIMIZER_ADAMAX, TORCH, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adamax tf", TFL_OPTIMIZER_ADAMAX, TF, 0.1, 0, 0, 0, false, false, false, 0, -1, 0},
    {"Adamax torch L2", TFL_OPTIMIZER_ADAMAX, TORCH, 0.1, 0.2, 0, 0, false, false, false, 0.5, -1,
     0},
    {"Adamax tf decay", TFL_OPTIMIZER_ADAMAX, TF, 0.1, 0.2, 0, 0, false, false, false, 0, -1, 0.35},
};

static tfl_optimizer_opts case_opts(const step_case *c)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(c->kind, c->formula);
    o.learning_rate = c->lr;
    o.weight_decay = c->wd;
    o.momentum = c->momentum;
    o.dampening = c->dampening;
    o.nesterov = c->nesterov;
    o.amsgrad = c->amsgrad;
    o.centered = c->centered;
    if (c->beta2 > 0) o.beta2 = c->beta2;
    if (c->a0 >= 0) o.initial_accumulator = c->a0;
    o.clip_value = c->clip_value;
    return o;
}

/* Three applies of every case on a 3-element variable of dtype, each checked (variable and
 * slots) against the formulas. */
static void run_step_cases(tfl_ctx *ctx, tfl_dtype dtype, double tol)
{
    for (size_t c = 0; c < sizeof step_cases / sizeof step_cases[0]; c++) {
        const step_case *sc = &step_cases[c];
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_optimizer_opts o = case_opts(sc);
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, dtype, P0, 3, "w");
        ref_opt r;
        ref_init(&r, &o, 3, P0);
        for (int step = 0; step < 3; step++) {
            apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, dtype, GS[step], 3)));
            ref_apply(&r, sc->lr, GS[step], 1);
            snprintf(g_case, sizeof g_case, "(%s, %s, step %d)", sc->what, tfl_dtype_name(dtype),
                     step + 1);
            expect_ref(opt, v, &r, tol);
            for (int s = 0; s < 3; s++) {
                const char *name = ref_slot_name(&o, s);
                if (name)
                    assert_int_equal(tfl_tensor_dtype(tfl_optimizer_slot(opt, v, name)), dtype);
            }
        }
        assert_int_equal(iterations_of(opt), 3);
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    g_case[0] = '\0';
}

static void test_steps_float64(void **state)
{
    run_step_cases(((fixture *)*state)->ctx, F64, 1e-13);
}

static void test_steps_float32(void **state)
{
    run_step_cases(((fixture *)*state)->ctx, F32, 2e-6);
}

/* A few updates written out by hand (not through ref_apply). */
static void test_steps_by_hand(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *g = vec_of(ctx, F64, D(0.5, -0.5, 2), 3);
    struct {
        tfl_optimizer_kind kind;
        tfl_formula formula;
        double momentum, dampening;
        bool nesterov;
        double wd;
        double want[2][3]; /* after steps 1 and 2, from p = (1, 1, 1) */
    } cases[] = {
        /* torch: b = g, p = 1 - 0.1 g; then b = 0.9 g + 0.7 g = 1.6 g, p -= 0.16 g */
        {SGD, TORCH, 0.9, 0.3, false, 0, {{0.95, 1.05, 0.8}, {0.87, 1.13, 0.48}}},
        /* tf: m = -0.1 g; then m = -0.09 g - 0.1 g = -0.19 g */
        {SGD, TF, 0.9, 0, false, 0, {{0.95, 1.05, 0.8}, {0.855, 1.145, 0.42}}},
        /* nesterov, both: p -= 0.1 (g + 0.9 g) = 0.19 g; then b = 1.9 g, p -= 0.1 (g + 1.71 g) */
        {SGD, TORCH, 0.9, 0, true, 0, {{0.905, 1.095, 0.62}, {0.7695, 1.2305, 0.078}}},
        {SGD, TF, 0.9, 0, true, 0, {{0.905, 1.095, 0.62}, {0.7695, 1.2305, 0.078}}},
        /* coupled L2 0.5 (torch SGD): g' = g + 0.5 p */
        {SGD, TORCH, 0, 0, false, 0.5, {{0.9, 1.0, 0.75}, {0.805, 1.0, 0.5125}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(cases[c].kind, cases[c].formula);
        o.learning_rate = 0.1;
        o.momentum = cases[c].momentum;
        o.dampening = cases[c].dampening;
        o.nesterov = cases[c].nesterov;
        o.weight_decay = cases[c].wd;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, D(1, 1, 1), 3, "w");
        for (int step = 0; step < 2; step++) {
            apply_ok(opt, 1, VARS(v), VARS(g));
            expect_vec(v, cases[c].want[step], 3, 1e-14);
        }
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }

    /* Adam with a constant gradient: torch moves lr g / (|g| + eps) every step; tf moves
     * lr g / (|g| + eps / sqrt(1 - b2^t)) */
    for (int fi = 0; fi < 2; fi++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(fi ? ADAMW : ADAM, fi ? TF : TORCH);
        o.learning_rate = 0.1;
        o.epsilon = 1e-3; /* large enough to see */
        o.weight_decay = 0;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, D(1, 1, 1), 3, "w");
        double p[3] = {1, 1, 1};
        const double gv[3] = {0.5, -0.5, 2};
        for (int t = 1; t <= 2; t++) {
            apply_ok(opt, 1, VARS(v), VARS(g));
            double e = fi ? 1e-3 / sqrt(1 - pow(0.999, t)) : 1e-3;
            for (int i = 0; i < 3; i++)
                p[i] -= 0.1 * gv[i] / (fabs(gv[i]) + e);
            expect_vec(v, p, 3, 1e-14);
        }
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }

    /* AdamW torch, decoupled: p (1 - lr wd) first; Adam torch with the same weight_decay is
     * coupled (g + wd p) and moves differently */
    {
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAMW, TORCH);
        o.learning_rate = 0.1;
        o.weight_decay = 0.5;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, D(2, 2, 2), 3, "w");
        apply_ok(opt, 1, VARS(v), VARS(g));
        const double gv[3] = {0.5, -0.5, 2};
        double want[3];
        for (int i = 0; i < 3; i++)
            want[i] = 2 * 0.95 - 0.1 * gv[i] / (fabs(gv[i]) + 1e-8);
        expect_vec(v, want, 3, 1e-14);
        tfl_optimizer_free(opt);
        o.kind = ADAM;
        opt = new_opt(ctx, &o);
        tfl_tensor *u = var_vec(ctx, F64, D(2, 2, 2), 3, "u");
        apply_ok(opt, 1, VARS(u), VARS(g));
        for (int i = 0; i < 3; i++) { /* g' = g + 1: first step moves lr sign(g') */
            double gp = gv[i] + 1;
            want[i] = 2 - 0.1 * gp / (fabs(gp) + 1e-8);
        }
        expect_vec(u, want, 3, 1e-14);
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
        tfl_tensor_release(u);
    }

    /* Adagrad: torch p -= lr g / (sqrt(g^2) + eps) from a0 = 0; tf from a0 = 0.1,
     * p -= lr g / sqrt(0.1 + g^2 + eps) */
    for (int fi = 0; fi < 2; fi++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAGRAD, fi ? TF : TORCH);
        o.learning_rate = 0.1;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, D(1, 1, 1), 3, "w");
        apply_ok(opt, 1, VARS(v), VARS(g));
        const double gv[3] = {0.5, -0.5, 2};
        double want[3];
        for (int i = 0; i < 3; i++)
            want[i] = 1 - (fi ? 0.1 * gv[i] / sqrt(0.1 + gv[i] * gv[i] + 1e-7)
                              : 0.1 * gv[i] / (fabs(gv[i]) + 1e-10));
        expect_vec(v, want, 3, 1e-14);
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }

    /* RMSprop, first step, centered with momentum: v = (1-rho) g^2, a = (1-rho) g,
     * d = (1-rho) rho g^2; b = r */
    for (int fi = 0; fi < 2; fi++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(RMSPROP, fi ? TF : TORCH);
        o.learning_rate = 0.1;
        o.rho = 0.75;
        o.epsilon = 1e-4;
        o.centered = true;
        o.momentum = 0.5;
        tfl_optimizer *opt = new_opt(ctx, &o);
        tfl_tensor *v = var_vec(ctx, F64, D(1, 1, 1), 3, "w");
        apply_ok(opt, 1, VARS(v), VARS(g));
        const double gv[3] = {0.5, -0.5, 2};
        double want[3], mom[3];
        for (int i = 0; i < 3; i++) {
            double d = 0.25 * 0.75 * gv[i] * gv[i];
            mom[i] = fi ? 0.1 * gv[i] / sqrt(d + 1e-4) : gv[i] / (sqrt(d) + 1e-4);
            want[i] = 1 - (fi ? mom[i] : 0.1 * mom[i]);
        }
        expect_vec(v, want, 3, 1e-14);
        expect_vec(tfl_optimizer_slot(opt, v, "momentum"), mom, 3, 1e-14);
        expect_vec(tfl_optimizer_slot(opt, v, "mg"), D(0.125, -0.125, 0.5), 3, 1e-15);
        expect_vec(tfl_optimizer_slot(opt, v, "rms"), D(0.0625, 0.0625, 1), 3, 1e-15);
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Torch SGD starts each variable's buffer with b = g on that variable's first apply, also
 * when the optimizer has applied before. */
static void test_sgd_torch_buffer_starts_per_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, TORCH);
    o.learning_rate = 0.1;
    o.momentum = 0.9;
    o.dampening = 0.5;
    tfl_optimizer *opt = new_opt(ctx, &o);
    tfl_tensor *a = var_vec(ctx, F64, P0, 3, "a"), *b = var_vec(ctx, F64, P0, 3, "b");
    ref_opt ra, rb;
    ref_init(&ra, &o, 3, P0);
    ref_init(&rb, &o, 3, P0);
    apply_ok(opt, 2, VARS(a, b), VARS(vec_of(ctx, F64, GS[0], 3), NULL));
    ref_apply(&ra, 0.1, GS[0], 1);
    rb.iter++;
    apply_ok(opt, 2, VARS(a, b), VARS(vec_of(ctx, F64, GS[1], 3), vec_of(ctx, F64, GS[1], 3)));
    ref_apply(&ra, 0.1, GS[1], 1);
    ref_apply(&rb, 0.1, GS[1], 1);
    expect_ref(opt, a, &ra, 1e-14);
    expect_ref(opt, b, &rb, 1e-14);
    expect_vec(tfl_optimizer_slot(opt, b, "momentum"), GS[1], 3, 0); /* b = g, undampened */
    apply_ok(opt, 2, VARS(b, a), VARS(vec_of(ctx, F64, GS[2], 3), vec_of(ctx, F64, GS[2], 3)));
    ref_apply(&ra, 0.1, GS[2], 1);
    ref_apply(&rb, 0.1, GS[2], 1);
    expect_ref(opt, a, &ra, 1e-14);
    expect_ref(opt, b, &rb, 1e-14);
    tfl_optimizer_free(opt);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- many tensors in one call ---------------------------------------------------------------- */

#define NMANY 100

static int64_t many_size(int i)
{
    return i % 20 == 7 || i % 20 == 10 ? 40000 + 3 * i : 1 + (i * 37) % 700;
}

static tfl_tensor *many_values(tfl_ctx *ctx, int i, double phase, double scale, bool var)
{
    int64_t n = many_size(i);
    double *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    for (int64_t j = 0; j < n; j++)
        x[j] = scale * sin(0.37 * i + 0.011 * (double)j + phase);
    tfl_dtype dt = i % 2 ? F64 : F32;
    tfl_tensor *t;
    if (var) {
        char name[32];
        snprintf(name, sizeof name, "v%d", i);
        t = var_from(ctx, F64, 1, &n, x, &(tfl_variable_opts){.name = name, .dtype = dt});
    } else {
        t = tens(ctx, F64, 1, &n, x);
        if (dt != F64) t = tfl_cast(ctx, t, dt);
        assert_non_null(t);
    }
    free(x);
    return t;
}

static void expect_same_bytes_at(const tfl_tensor *a, const tfl_tensor *b, const char *what, int i)
{
    size_t na, nb;
    void *x = host_bytes(a, &na), *y = host_bytes(b, &nb);
    assert_int_equal(na, nb);
    if (memcmp(x, y, na) != 0) {
        print_error("%s of variable %d differs\n", what, i);
        fail();
    }
    free(x);
    free(y);
}

static void run_many(tfl_ctx *ctx, const tfl_optimizer_opts *o)
{
    tfl_tensor *together[NMANY], *alone[NMANY];
    tfl_optimizer *one = new_opt(ctx, o), *each[NMANY];
    for (int i = 0; i < NMANY; i++) {
        together[i] = many_values(ctx, i, 0, 1, true);
        alone[i] = many_values(ctx, i, 0, 1, true);
        each[i] = new_opt(ctx, o);
    }
    for (int step = 0; step < 3; step++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *grads[NMANY];
        for (int i = 0; i < NMANY; i++)
            grads[i] = many_values(ctx, i, 1.0 + step, 0.5 + 0.25 * step, false);
        apply_ok(one, NMANY, together, grads);
        for (int i = 0; i < NMANY; i++)
            apply_ok(each[i], 1, &alone[i], &grads[i]);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    for (int i = 0; i < NMANY; i++) {
        expect_same_bytes_at(together[i], alone[i], "the value", i);
        for (int s = 0; s < 3; s++) {
            const char *name = ref_slot_name(o, s);
            if (!name) continue;
            expect_same_bytes_at(tfl_optimizer_slot(one, together[i], name),
                                 tfl_optimizer_slot(each[i], alone[i], name), name, i);
        }
    }
    /* and they moved */
    double x0, x1;
    tfl_tensor *start = many_values(ctx, 7, 0, 1, true);
    assert_int_equal(tfl_tensor_get(start, 5, &x0), TFL_OK);
    assert_int_equal(tfl_tensor_get(together[7], 5, &x1), TFL_OK);
    assert_true(fabs(x0 - x1) > 1e-4);
    tfl_tensor_release(start);
    assert_int_equal(iterations_of(one), 3);
    tfl_optimizer_free(one);
    for (int i = 0; i < NMANY; i++) {
        tfl_optimizer_free(each[i]);
        tfl_tensor_release(together[i]);
        tfl_tensor_release(alone[i]);
    }
}

static void test_many_tensors_one_call(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_true(tfl_ctx_num_threads(ctx) >= 1);
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    o.learning_rate = 0.01;
    o.weight_decay = 0.1;
    o.amsgrad = true;
    o.clip_norm = 5.0;
    run_many(ctx, &o);
    o = tfl_optimizer_defaults(RMSPROP, TF);
    o.learning_rate = 0.01;
    o.centered = true;
    o.momentum = 0.5;
    run_many(ctx, &o);
    o = tfl_optimizer_defaults(SGD, TORCH);
    o.learning_rate = 0.1;
    o.momentum = 0.9;
    o.nesterov = true;
    run_many(ctx, &o);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_defaults),
        T(test_steps_float64),
        T(test_steps_float32),
        T(test_steps_by_hand),
        T(test_sgd_torch_buffer_starts_per_variable),
        T(test_many_tensors_one_call),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
