/* test_optim_state.c: what an optimizer keeps and computes. The step counter
 * "<name>/iterations" (an int64 scalar variable on CPU:0, +1 per apply, restorable: the next
 * Adam step's bias correction and the schedule follow it); slots (made on a variable's first
 * apply, named "<variable>/<optimizer>/<slot>" whatever name scope is open, the variable's
 * dtype, shape and device, not trainable, one set per kind and option) and what
 * tfl_optimizer_variables lists; unique names; tfl_optimizer_free releasing everything;
 * the defaults table; every optimizer and formula checked step by step against the
 * formulas of optim.h computed here in double (float64 and float32 variables, and a few
 * updates written out by hand); learning-rate schedules; gradient clipping; and a hundred
 * tensors in one apply giving the values of a hundred separate applies. */
#include "test_fixture.h"
#include "variable_helpers.h"

#include <math.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define F32 TFL_DTYPE_FLOAT32
#define F64 TFL_DTYPE_FLOAT64
#define SGD TFL_OPTIMIZER_SGD
#define ADAM TFL_OPTIMIZER_ADAM
#define ADAMW TFL_OPTIMIZER_ADAMW
#define RMSPROP TFL_OPTIMIZER_RMSPROP
#define ADAGRAD TFL_OPTIMIZER_ADAGRAD
#define TF TFL_FORMULA_TENSORFLOW
#define TORCH TFL_FORMULA_PYTORCH

/* ---- helpers ------------------------------------------------------------------------------- */

/* What a table-driven test is checking, for its failure messages. */
static char g_case[128];

/* Every element of t (float32 or float64) against want: |got - want| <= tol * max(1, |want|). */
static void expect_vec_(const tfl_tensor *t, const double *want, int64_t n, double tol, int line)
{
    if (!t) {
        print_error("line %d: tensor is NULL %s\n", line, g_case);
        fail();
    }
    if (tfl_tensor_numel(t) != n) {
        print_error("line %d: %lld elements, want %lld\n", line, (long long)tfl_tensor_numel(t),
                    (long long)n);
        fail();
    }
    for (int64_t i = 0; i < n; i++) {
        double got = NAN;
        assert_int_equal(tfl_tensor_get(t, i, &got), TFL_OK);
        if (!(fabs(got - want[i]) <= tol * fmax(1.0, fabs(want[i])))) {
            print_error("line %d: element %lld: got %.17g, want %.17g (tol %g) %s\n", line,
                        (long long)i, got, want[i], tol, g_case);
            fail();
        }
    }
}
#define expect_vec(t, want, n, tol) expect_vec_((t), (want), (n), (tol), __LINE__)
#define D(...) ((const double[]){__VA_ARGS__})

static int64_t iterations_of(const tfl_optimizer *opt)
{
    double v = -1;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(opt), 0, &v), TFL_OK);
    return (int64_t)v;
}

/* A 1-D variable of dtype from double values (converted by tfl_variable_new). */
static tfl_tensor *var_vec(tfl_ctx *ctx, tfl_dtype dtype, const double *v, int64_t n,
                           const char *name)
{
    tfl_variable_opts o = {.name = name, .dtype = dtype};
    return var_from(ctx, F64, 1, &n, v, &o);
}

/* A 1-D tensor of dtype from double values. */
static tfl_tensor *vec_of(tfl_ctx *ctx, tfl_dtype dtype, const double *v, int64_t n)
{
    tfl_tensor *t = tens(ctx, F64, 1, &n, v);
    if (dtype == F64) return t;
    tfl_tensor *c = tfl_cast(ctx, t, dtype);
    assert_non_null(c);
    return c;
}

static tfl_optimizer *new_opt(tfl_ctx *ctx, const tfl_optimizer_opts *o)
{
    tfl_optimizer *opt = tfl_optimizer_new(ctx, o);
    if (!opt) {
        tfl_error e = tfl_ctx_error(ctx);
        print_error("tfl_optimizer_new: %s: %s\n", tfl_status_name(e.code), e.message);
    }
    assert_non_null(opt);
    return opt;
}

static void apply_ok_(tfl_optimizer *opt, int n, tfl_tensor *const *vars, tfl_tensor *const *grads,
                      int line)
{
    tfl_status st = tfl_optimizer_apply(opt, n, vars, grads);
    if (st != TFL_OK) {
        tfl_error e = tfl_ctx_error(tfl_tensor_ctx(tfl_optimizer_iterations(opt)));
        print_error("line %d: tfl_optimizer_apply: %s: %s\n", line, tfl_status_name(st),
                    e.message ? e.message : "");
        fail();
    }
}
#define apply_ok(opt, n, vars, grads) apply_ok_((opt), (n), (vars), (grads), __LINE__)
#define VARS(...) ((tfl_tensor *const[]){__VA_ARGS__})

/* ---- the formulas of optim.h, in double ------------------------------------------------------ */

#define RMAX 8

/* One variable's value and slots as optim.h describes them. */
typedef struct ref_opt {
    tfl_optimizer_opts o;
    int n;
    double p[RMAX], s[3][RMAX]; /* slots in the kind's order (see ref_slot_name) */
    int64_t iter;               /* the optimizer's iterations before the next apply */
    bool started;               /* the variable was updated before (torch SGD: b <- g first) */
} ref_opt;

static const char *ref_slot_name(const tfl_optimizer_opts *o, int s)
{
    switch (o->kind) {
    case SGD:
        return s == 0 && o->momentum > 0 ? "momentum" : NULL;
    case ADAM:
    case ADAMW:
        return s == 0 ? "m" : s == 1 ? "v" : o->amsgrad ? "vhat" : NULL;
    case RMSPROP:
        return s == 0   ? "rms"
               : s == 1 ? (o->centered ? "mg" : NULL)
                        : (o->momentum > 0 ? "momentum" : NULL);
    case ADAGRAD:
        return s == 0 ? "accumulator" : NULL;
    }
    return NULL;
}

static void ref_init(ref_opt *r, const tfl_optimizer_opts *o, int n, const double *p0)
{
    assert_true(n <= RMAX);
    memset(r, 0, sizeof *r);
    r->o = *o;
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->p[i] = p0[i];
        if (o->kind == ADAGRAD) r->s[0][i] = o->initial_accumulator;
    }
}

/* One apply with learning rate lr (the schedule's value, worked out by the caller) and the
 * gradient times gscale (norm clipping, worked out by the caller). */
static void ref_apply(ref_opt *r, double lr, const double *gin, double gscale)
{
    const tfl_optimizer_opts *o = &r->o;
    bool tf = o->formula == TF;
    double t = (double)r->iter + 1, wd = o->weight_decay;
    for (int i = 0; i < r->n; i++) {
        double p = r->p[i], g = gin[i] * gscale;
        double *s0 = &r->s[0][i], *s1 = &r->s[1][i], *s2 = &r->s[2][i];
        if (o->clip_value > 0) g = fmin(fmax(g, -o->clip_value), o->clip_value);
        if (tf)
            p = p - p * wd * lr; /* Keras 3: decoupled for every optimizer */
        else if (o->kind == ADAMW)
            p = p * (1 - lr * wd); /* torch AdamW */
        else
            g = g + wd * p; /* torch: coupled L2 */
        switch (o->kind) {
        case SGD:
            if (o->momentum == 0) {
                p -= lr * g;
            } else if (!tf) {
                *s0 = r->started ? o->momentum * *s0 + (1 - o->dampening) * g : g;
                p -= o->nesterov ? lr * (g + o->momentum * *s0) : lr * *s0;
            } else {
                *s0 = o->momentum * *s0 - lr * g;
                p += o->nesterov ? o->momentum * *s0 - lr * g : *s0;
            }
            break;
        case ADAM:
        case ADAMW: {
            *s0 = *s0 + (1 - o->beta1) * (g - *s0);
            *s1 = *s1 + (1 - o->beta2) * (g * g - *s1);
            double v = *s1;
            if (o->amsgrad) {
                *s2 = fmax(*s2, *s1);
                v = *s2;
            }
            double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
            if (tf)
                p -= lr * sqrt(bc2) / bc1 * *s0 / (sqrt(v) + o->epsilon);
            else
                p -= lr / bc1 * *s0 / (sqrt(v) / sqrt(bc2) + o->epsilon);
            break;
        }
        case RMSPROP: {
            *s0 = o->rho * *s0 + (1 - o->rho) * g * g;
            double d = *s0;
            if (o->centered) {
                *s1 = o->rho * *s1 + (1 - o->rho) * g;
                d = *s0 - *s1 * *s1;
            }
            double rr = tf ? lr * g / sqrt(d + o->epsilon) : g / (sqrt(d) + o->epsilon);
            double k = tf ? 1.0 : lr;
            if (o->momentum > 0) {
                *s2 = o->momentum * *s2 + rr;
                p -= k * *s2;
            } else {
                p -= k * rr;
            }
            break;
        }
        case ADAGRAD:
            *s0 += g * g;
            p -= tf ? lr * g / sqrt(*s0 + o->epsilon) : lr * g / (sqrt(*s0) + o->epsilon);
            break;
        }
        r->p[i] = p;
    }
    r->iter++;
    r->started = true;
}

/* The variable and each of its slots against the reference. */
static void expect_ref_(const tfl_optimizer *opt, const tfl_tensor *v, const ref_opt *r, double tol,
                        int line)
{
    expect_vec_(v, r->p, r->n, tol, line);
    for (int s = 0; s < 3; s++) {
        const char *name = ref_slot_name(&r->o, s);
        if (!name) continue;
        tfl_tensor *slot = tfl_optimizer_slot(opt, v, name);
        if (!slot) {
            print_error("line %d: no slot '%s' %s\n", line, name, g_case);
            fail();
        }
        expect_vec_(slot, r->s[s], r->n, tol, line);
    }
}
#define expect_ref(opt, v, r, tol) expect_ref_((opt), (v), (r), (tol), __LINE__)

/* ---- the step counter ------------------------------------------------------------------------ */

static void test_iterations_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, TORCH);
    o.learning_rate = 0.5;
    tfl_optimizer *opt = new_opt(ctx, &o);
    tfl_tensor *it = tfl_optimizer_iterations(opt);
    assert_non_null(it);
    assert_true(tfl_tensor_is_variable(it));
    assert_string_equal(tfl_variable_name(it), "SGD/iterations");
    assert_int_equal(tfl_tensor_dtype(it), TFL_DTYPE_INT64);
    assert_int_equal(tfl_tensor_rank(it), 0);
    assert_int_equal(tfl_tensor_numel(it), 1);
    assert_string_equal(tfl_tensor_device(it), "CPU:0");
    assert_false(tfl_variable_trainable(it));
    assert_true(tfl_variable_is_initialized(it));
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, it));
    assert_false(coll_has(ctx, TFL_TRAINABLE_VARIABLES, it));
    assert_int_equal(iterations_of(opt), 0);
    assert_null(tfl_optimizer_iterations(NULL));

    tfl_tensor *a = var_vec(ctx, F64, D(1, 2, 3), 3, "a");
    tfl_tensor *b = var_vec(ctx, F64, D(4, 5), 2, "b");
    tfl_tensor *ga = vec_of(ctx, F64, D(1, 1, 1), 3), *gb = vec_of(ctx, F64, D(2, 2), 2);
    apply_ok(opt, 2, VARS(a, b), VARS(ga, gb));
    assert_int_equal(iterations_of(opt), 1);
    apply_ok(opt, 2, VARS(a, b), VARS(ga, NULL)); /* b skipped: still one step */
    assert_int_equal(iterations_of(opt), 2);
    apply_ok(opt, 1, VARS(b), VARS(gb));
    assert_int_equal(iterations_of(opt), 3);
    expect_vec(a, D(0, 1, 2), 3, 0);
    expect_vec(b, D(2, 3), 2, 0);
    /* a failed apply does not count */
    assert_int_equal(tfl_optimizer_apply(opt, 2, VARS(a, b), VARS(ga, ga)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "'b:0'");
    assert_int_equal(iterations_of(opt), 3);
    expect_vec(a, D(0, 1, 2), 3, 0);
    /* the same pointer for the life of the optimizer */
    assert_ptr_equal(tfl_optimizer_iterations(opt), it);
    tfl_optimizer_free(opt);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Assigning iterations (a restore) moves the bias correction of the next Adam step to
 * t = restored + 1 and the schedule to lr(restored). */
static void test_iterations_restore(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const tfl_formula formulas[] = {TORCH, TF};
    for (int fi = 0; fi < 2; fi++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, formulas[fi]);
        o.learning_rate = 0.1;
        o.schedule =
            (tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_steps = 4, .decay_rate = 0.5};
        tfl_optimizer *opt = new_opt(ctx, &o);
        const double p0[3] = {0.5, -1.25, 2}, g1[3] = {0.3, -0.2, 1.5}, g2[3] = {-0.1, 0.4, 0.7};
        tfl_tensor *v = var_vec(ctx, F64, p0, 3, "w");
        ref_opt r;
        ref_init(&r, &o, 3, p0);
        assert_true(tfl_optimizer_learning_rate(opt) == 0.1);
        apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, F64, g1, 3)));
        ref_apply(&r, 0.1, g1, 1);
        expect_ref(opt, v, &r, 1e-13);
        assert_int_equal(iterations_of(opt), 1);
        assert_true(fabs(tfl_optimizer_learning_rate(opt) - 0.1 * pow(0.5, 0.25)) < 1e-16);

        /* restore: iterations 9, so this apply is step t = 10 with lr(9) */
        assert_int_equal(tfl_variable_assign(tfl_optimizer_iterations(opt), tfl_scalar_i64(ctx, 9)),
                         TFL_OK);
        assert_int_equal(iterations_of(opt), 9);
        double lr9 = 0.1 * pow(0.5, 9.0 / 4.0);
        assert_true(fabs(tfl_optimizer_learning_rate(opt) - lr9) < 1e-16);
        apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, F64, g2, 3)));
        r.iter = 9;
        ref_apply(&r, lr9, g2, 1);
        expect_ref(opt, v, &r, 1e-13);
        assert_int_equal(iterations_of(opt), 10);
        /* by hand for element 2 (torch): m = 0.9*0.15 + 0.1*0.7, v = 0.999*0.00225 + 0.001*0.49 */
        double m = 0.9 * 0.15 + 0.1 * 0.7, vv = 0.999 * 0.00225 + 0.001 * 0.49;
        double bc1 = 1 - pow(0.9, 10), bc2 = 1 - pow(0.999, 10);
        double p1 = r.p[2] + (fi == 0 ? lr9 / bc1 * m / (sqrt(vv) / sqrt(bc2) + 1e-8)
                                      : lr9 * sqrt(bc2) / bc1 * m / (sqrt(vv) + 1e-7));
        double got;
        assert_int_equal(tfl_tensor_get(v, 2, &got), TFL_OK);
        assert_true(fabs(got - r.p[2]) < 1e-13);
        /* ... and the step with t = 2 (no restore) would have been different */
        double p_t2 =
            p1 - (fi == 0 ? lr9 / (1 - 0.81) * m / (sqrt(vv) / sqrt(1 - 0.998001) + 1e-8)
                          : lr9 * sqrt(1 - 0.998001) / (1 - 0.81) * m / (sqrt(vv) + 1e-7));
        assert_true(fabs(got - p_t2) > 1e-3);
        tfl_optimizer_free(opt);
        tfl_tensor_release(v);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- slots ---------------------------------------------------------------------------------- */

static void expect_slot_var(tfl_ctx *ctx, tfl_tensor *slot, const char *name, const tfl_tensor *v)
{
    assert_non_null(slot);
    assert_true(tfl_tensor_is_variable(slot));
    assert_string_equal(tfl_variable_name(slot), name);
    assert_int_equal(tfl_tensor_dtype(slot), tfl_tensor_dtype(v));
    expect_shape(slot, tfl_tensor_rank(v), tfl_tensor_shape(v));
    assert_string_equal(tfl_tensor_device(slot), tfl_tensor_device(v));
    assert_false(tfl_variable_trainable(slot));
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, slot));
    assert_false(coll_has(ctx, TFL_TRAINABLE_VARIABLES, slot));
    assert_ptr_not_equal(tfl_tensor_data_ptr(slot), tfl_tensor_data_ptr(v));
}

static void test_slot_names_and_lazy_creation(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_name_scope_push(ctx, "dense"), TFL_OK);
    const int64_t ks[2] = {2, 3};
    tfl_tensor *kernel =
        var_from(ctx, F64, 2, ks, D(1, 2, 3, 4, 5, 6), &(tfl_variable_opts){.name = "kernel"});
    tfl_tensor *bias = var_vec(ctx, F32, D(0.5, -0.5, 1), 3, "bias");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_variable_name(kernel), "dense/kernel");
    assert_string_equal(tfl_variable_name(bias), "dense/bias");

    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    o.learning_rate = 0.01;
    tfl_optimizer *opt = new_opt(ctx, &o);
    assert_string_equal(tfl_optimizer_name(opt), "Adam");
    /* no slots before the first apply */
    tfl_tensor *out[8] = {0};
    assert_int_equal(tfl_optimizer_variables(opt, out, 8), 1);
    assert_ptr_equal(out[0], tfl_optimizer_iterations(opt));
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 1);
    assert_null(tfl_optimizer_slot(opt, kernel, "m"));
    assert_null(tfl_optimizer_slot(opt, kernel, "v"));
    int64_t globals = coll_count(ctx, TFL_GLOBAL_VARIABLES);

    /* apply with an unrelated scope open: slot names are the variable's name + "/Adam/m" */
    assert_int_equal(tfl_name_scope_push(ctx, "train/step"), TFL_OK);
    tfl_tensor *gk = tens(ctx, F64, 2, ks, D(0.1, 0.2, 0.3, 0.4, 0.5, 0.6));
    apply_ok(opt, 2, VARS(kernel, bias), VARS(gk, NULL));
    tfl_tensor *km = tfl_optimizer_slot(opt, kernel, "m"),
               *kv = tfl_optimizer_slot(opt, kernel, "v");
    expect_slot_var(ctx, km, "dense/kernel/Adam/m", kernel);
    expect_slot_var(ctx, kv, "dense/kernel/Adam/v", kernel);
    expect_vec(km, D(0.01, 0.02, 0.03, 0.04, 0.05, 0.06), 6, 1e-15);    /* (1 - b1) g */
    expect_vec(kv, D(1e-5, 4e-5, 9e-5, 16e-5, 25e-5, 36e-5), 6, 1e-15); /* (1 - b2) g^2 */
    assert_null(tfl_optimizer_slot(opt, kernel, "vhat"));               /* no amsgrad */
    assert_null(tfl_optimizer_slot(opt, kernel, "momentum"));
    assert_null(tfl_optimizer_slot(opt, kernel, "nope"));
    assert_null(tfl_optimizer_slot(opt, kernel, NULL));
    assert_null(tfl_optimizer_slot(NULL, kernel, "m"));
    /* the NULL gradient made no slots */
    assert_null(tfl_optimizer_slot(opt, bias, "m"));
    assert_null(tfl_optimizer_slot(opt, bias, "v"));
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals + 2);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_optimizer_variables(opt, out, 8), 3);
    assert_ptr_equal(out[0], tfl_optimizer_iterations(opt));
    assert_ptr_equal(out[1], km);
    assert_ptr_equal(out[2], kv);
    assert_null(out[3]);

    /* the bias's slots come on its first apply, float32 like it, after the kernel's */
    tfl_tensor *gb = vec_of(ctx, F32, D(1, -1, 0.5), 3);
    apply_ok(opt, 2, VARS(bias, kernel), VARS(gb, gk));
    tfl_tensor *bm = tfl_optimizer_slot(opt, bias, "m"), *bv = tfl_optimizer_slot(opt, bias, "v");
    expect_slot_var(ctx, bm, "dense/bias/Adam/m", bias);
    expect_slot_var(ctx, bv, "dense/bias/Adam/v", bias);
    assert_int_equal(tfl_tensor_dtype(bm), F32);
    assert_ptr_equal(tfl_optimizer_slot(opt, kernel, "m"), km); /* not remade */
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_optimizer_variables(opt, out, 8), 5);
    tfl_tensor *want[5] = {tfl_optimizer_iterations(opt), km, kv, bm, bv};
    for (int i = 0; i < 5; i++)
        assert_ptr_equal(out[i], want[i]);
    /* a small cap: the count, and only cap pointers written */
    tfl_tensor *few[3] = {NULL, NULL, (tfl_tensor *)&few};
    assert_int_equal(tfl_optimizer_variables(opt, few, 2), 5);
    assert_ptr_equal(few[0], want[0]);
    assert_ptr_equal(few[1], want[1]);
    assert_ptr_equal(few[2], (tfl_tensor *)&few);
    assert_int_equal(tfl_optimizer_variables(NULL, NULL, 0), -1);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals + 4);
    assert_string_equal(tfl_name_scope(ctx), "train/step");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_name_scope(ctx), "");

    tfl_optimizer_free(opt);
    tfl_tensor_release(kernel);
    tfl_tensor_release(bias);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

typedef struct slot_case {
    const char *what;
    tfl_optimizer_kind kind;
    double momentum;
    bool amsgrad, centered;
    double a0; /* Adagrad: < 0 keeps the default */
    const char *slots[4];
} slot_case;

static const slot_case slot_cases[] = {
    {"SGD", SGD, 0, false, false, -1, {NULL}},
    {"SGD momentum", SGD, 0.9, false, false, -1, {"momentum", NULL}},
    {"Adam", ADAM, 0, false, false, -1, {"m", "v", NULL}},
    {"Adam amsgrad", ADAM, 0, true, false, -1, {"m", "v", "vhat", NULL}},
    {"AdamW", ADAMW, 0, false, false, -1, {"m", "v", NULL}},
    {"AdamW amsgrad", ADAMW, 0, true, false, -1, {"m", "v", "vhat", NULL}},
    {"RMSprop", RMSPROP, 0, false, false, -1, {"rms", NULL}},
    {"RMSprop centered", RMSPROP, 0, false, true, -1, {"rms", "mg", NULL}},
    {"RMSprop momentum", RMSPROP, 0.5, false, false, -1, {"rms", "momentum", NULL}},
    {"RMSprop both", RMSPROP, 0.5, false, true, -1, {"rms", "mg", "momentum", NULL}},
    {"Adagrad", ADAGRAD, 0, false, false, -1, {"accumulator", NULL}},
    {"Adagrad a0", ADAGRAD, 0, false, false, 0.75, {"accumulator", NULL}},
};

static void test_slot_sets_per_kind(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    static const char *const every[] = {"momentum", "m", "v", "vhat", "rms", "mg", "accumulator"};
    for (size_t c = 0; c < sizeof slot_cases / sizeof slot_cases[0]; c++) {
        const slot_case *sc = &slot_cases[c];
        for (int fi = 0; fi < 2; fi++) {
            tfl_formula formula = fi ? TF : TORCH;
            assert_int_equal(tfl_frame_push(ctx), TFL_OK);
            tfl_optimizer_opts o = tfl_optimizer_defaults(sc->kind, formula);
            o.momentum = sc->momentum;
            o.amsgrad = sc->amsgrad;
            o.centered = sc->centered;
            if (sc->a0 >= 0) o.initial_accumulator = sc->a0;
            tfl_optimizer *opt = new_opt(ctx, &o);
            const double p0[3] = {1, -2, 3}, g[3] = {0.5, -1, 2};
            tfl_tensor *v = var_vec(ctx, F64, p0, 3, "w");
            int64_t globals = coll_count(ctx, TFL_GLOBAL_VARIABLES);
            apply_ok(opt, 1, VARS(v), VARS(vec_of(ctx, F64, g, 3)));
            int n = 0;
            while (sc->slots[n])
                n++;
            tfl_tensor *out[8] = {0};
            if (tfl_optimizer_variables(opt, out, 8) != 1 + n) {
                print_error("%s (%s): %lld variables, want %d\n", sc->what,
                            tfl_formula_name(formula),
                            (long long)tfl_optimizer_variables(opt, NULL, 0), 1 + n);
                fail();
            }
            assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals + n);
            for (int s = 0; s < n; s++) {
                char name[64];
                snprintf(name, sizeof name, "w/%s/%s", tfl_optimizer_kind_name(sc->kind),
                         sc->slots[s]);
                assert_ptr_equal(out[1 + s], tfl_optimizer_slot(opt, v, sc->slots[s]));
                expect_slot_var(ctx, out[1 + s], name, v);
            }
            for (size_t k = 0; k < sizeof every / sizeof every[0]; k++) {
                bool want = false;
                for (int s = 0; s < n; s++)
                    want = want || !strcmp(sc->slots[s], every[k]);
                if (!want) assert_null(tfl_optimizer_slot(opt, v, every[k]));
            }
            if (sc->kind == ADAGRAD) { /* filled with a0, then g^2 added */
                double a0 = sc->a0 >= 0 ? sc->a0 : (fi ? 0.1 : 0.0);
                expect_vec(out[1], D(a0 + 0.25, a0 + 1, a0 + 4), 3, 1e-15);
            }
            tfl_optimizer_free(opt);
            tfl_tensor_release(v);
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        }
    }
}

static void test_unique_names(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TFL_FORMULA_DEFAULT);
    tfl_optimizer *a = new_opt(ctx, &o), *b = new_opt(ctx, &o), *c = new_opt(ctx, &o);
    assert_string_equal(tfl_optimizer_name(a), "Adam");
    assert_string_equal(tfl_optimizer_name(b), "Adam_1");
    assert_string_equal(tfl_optimizer_name(c), "Adam_2");
    assert_string_equal(tfl_variable_name(tfl_optimizer_iterations(b)), "Adam_1/iterations");
    assert_string_equal(tfl_optimizer_options(b)->name, "Adam_1");
    tfl_optimizer_free(a);
    tfl_optimizer *d = new_opt(ctx, &o); /* "Adam" is free again */
    assert_string_equal(tfl_optimizer_name(d), "Adam");
    assert_string_equal(tfl_variable_name(tfl_optimizer_iterations(d)), "Adam/iterations");
    tfl_optimizer *e = new_opt(ctx, &o);
    assert_string_equal(tfl_optimizer_name(e), "Adam_3");
    o.name = "opt";
    tfl_optimizer *f = new_opt(ctx, &o), *g = new_opt(ctx, &o);
    assert_string_equal(tfl_optimizer_name(f), "opt");
    assert_string_equal(tfl_optimizer_name(g), "opt_1");
    assert_ptr_not_equal(tfl_optimizer_name(f), o.name); /* copied */
    tfl_optimizer_opts s = tfl_optimizer_defaults(SGD, TFL_FORMULA_DEFAULT);
    tfl_optimizer *h = new_opt(ctx, &s);
    assert_string_equal(tfl_optimizer_name(h), "SGD");
    assert_null(tfl_optimizer_name(NULL));
    tfl_optimizer *all[] = {b, c, d, e, f, g, h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tfl_optimizer_free(all[i]);
    tfl_optimizer_free(NULL);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 0);
}

static void test_free_releases_everything(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_vec(ctx, F32, D(1, 2, 3), 3, "v");
    tfl_tensor *w = var_vec(ctx, F64, D(1, 2), 2, "w");
    uint64_t live = live_tensors(ctx);
    int64_t globals = coll_count(ctx, TFL_GLOBAL_VARIABLES);
    assert_int_equal(globals, 2);
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    o.amsgrad = true;
    tfl_optimizer *opt = new_opt(ctx, &o);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals + 1);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    apply_ok(opt, 2, VARS(v, w),
             VARS(vec_of(ctx, F32, D(1, 1, 1), 3), vec_of(ctx, F64, D(1, 1), 2)));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 7);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals + 7);
    assert_int_equal(live_tensors(ctx), live + 7);
    tfl_optimizer_free(opt);
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 2);
    expect_vec(v, D(1 - 1e-3, 2 - 1e-3, 3 - 1e-3), 3, 1e-6);
    tfl_tensor_release(v);
    tfl_tensor_release(w);
}

/* ---- defaults ------------------------------------------------------------------------------- */

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
    /* unknown kind or formula: kind 0 */
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)0, TORCH).kind, 0);
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)6, TORCH).kind, 0);
    assert_int_equal(tfl_optimizer_defaults((tfl_optimizer_kind)-1, TF).kind, 0);
    assert_int_equal(tfl_optimizer_defaults(ADAM, (tfl_formula)3).kind, 0);
    assert_int_equal(tfl_optimizer_defaults(ADAM, (tfl_formula)-1).kind, 0);
    /* every default is accepted, and the options come back resolved */
    for (int k = SGD; k <= ADAGRAD; k++)
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
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)0), "unknown");
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)6), "unknown");
    assert_string_equal(tfl_optimizer_kind_name((tfl_optimizer_kind)-3), "unknown");
    assert_string_equal(tfl_formula_name(TFL_FORMULA_DEFAULT), "default");
    assert_string_equal(tfl_formula_name(TF), "tensorflow");
    assert_string_equal(tfl_formula_name(TORCH), "pytorch");
    assert_string_equal(tfl_formula_name((tfl_formula)3), "unknown");
    assert_string_equal(tfl_formula_name((tfl_formula)-1), "unknown");
}

/* ---- single steps against the formulas ---------------------------------------------------------
 */

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

static const double P0[3] = {0.5, -1.25, 2.0};
static const double GS[3][3] = {{0.3, -0.2, 1.5}, {-0.1, 0.4, 0.7}, {0.25, 0.05, -2.0}};

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

/* ---- schedules --------------------------------------------------------------------------------
 */

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

/* ---- clipping ---------------------------------------------------------------------------------
 */

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

/* ---- many tensors in one call ------------------------------------------------------------------
 */

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

static void expect_same_bytes(const tfl_tensor *a, const tfl_tensor *b, const char *what, int i)
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
        expect_same_bytes(together[i], alone[i], "the value", i);
        for (int s = 0; s < 3; s++) {
            const char *name = ref_slot_name(o, s);
            if (!name) continue;
            expect_same_bytes(tfl_optimizer_slot(one, together[i], name),
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
        T(test_iterations_variable),
        T(test_iterations_restore),
        T(test_slot_names_and_lazy_creation),
        T(test_slot_sets_per_kind),
        T(test_unique_names),
        T(test_free_releases_everything),
        T(test_defaults),
        T(test_steps_float64),
        T(test_steps_float32),
        T(test_steps_by_hand),
        T(test_sgd_torch_buffer_starts_per_variable),
        T(test_schedule_values),
        T(test_schedule_drives_apply),
        T(test_clip_value),
        T(test_clip_norm),
        T(test_clip_global_norm),
        T(test_clip_norm_feeds_adam),
        T(test_many_tensors_one_call),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
