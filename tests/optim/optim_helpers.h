/* optim_helpers.h: header-only helpers shared by the optimizer tests (every test_optim_*.c
 * but test_optim_reference.c): short names for the kinds and formulas; vectors, matrices and
 * variables from double values (var_vec, vec_of, mat_of) and their check (expect_vec,
 * expect_same_bytes); optimizers (new_opt, sgd), apply_ok and the step counter
 * (iterations_of); the formulas of optim.h computed in double (ref_opt, ref_apply,
 * expect_ref) with a starting point P0 and gradients GS; byte-for-byte snapshots of variables,
 * slots and the counter (snap_take, snap_check); memory hooks that count their calls and can
 * refuse large requests (setup_counting, g_alloc); and the two variables A and B of the error
 * and allocation tests (make_ab). */
#ifndef TFL_OPTIM_HELPERS_H
#define TFL_OPTIM_HELPERS_H

#include "test_fixture.h"
#include "variable_helpers.h"

#include <math.h>

#define F32 TFL_DTYPE_FLOAT32
#define F64 TFL_DTYPE_FLOAT64
#define SGD TFL_OPTIMIZER_SGD
#define ADAM TFL_OPTIMIZER_ADAM
#define ADAMW TFL_OPTIMIZER_ADAMW
#define RMSPROP TFL_OPTIMIZER_RMSPROP
#define ADAGRAD TFL_OPTIMIZER_ADAGRAD
#define TF TFL_FORMULA_TENSORFLOW
#define TORCH TFL_FORMULA_PYTORCH

/* ---- helpers --------------------------------------------------------------------------------- */

/* What a table-driven test is checking, for its failure messages. */
static char g_case[128];

/* Every element of t (float32 or float64) against want: |got - want| <= tol * max(1, |want|). */
static inline void expect_vec_(const tfl_tensor *t, const double *want, int64_t n, double tol,
                               int line)
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

static inline int64_t iterations_of(const tfl_optimizer *opt)
{
    double v = -1;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(opt), 0, &v), TFL_OK);
    return (int64_t)v;
}

/* A 1-D variable of dtype from double values (converted by tfl_variable_new). */
static inline tfl_tensor *var_vec(tfl_ctx *ctx, tfl_dtype dtype, const double *v, int64_t n,
                                  const char *name)
{
    tfl_variable_opts o = {.name = name, .dtype = dtype};
    return var_from(ctx, F64, 1, &n, v, &o);
}

/* A 1-D tensor of dtype from double values. */
static inline tfl_tensor *vec_of(tfl_ctx *ctx, tfl_dtype dtype, const double *v, int64_t n)
{
    tfl_tensor *t = tens(ctx, F64, 1, &n, v);
    if (dtype == F64) return t;
    tfl_tensor *c = tfl_cast(ctx, t, dtype);
    assert_non_null(c);
    return c;
}

static inline tfl_optimizer *new_opt(tfl_ctx *ctx, const tfl_optimizer_opts *o)
{
    tfl_optimizer *opt = tfl_optimizer_new(ctx, o);
    if (!opt) {
        tfl_error e = tfl_ctx_error(ctx);
        print_error("tfl_optimizer_new: %s: %s\n", tfl_status_name(e.code), e.message);
    }
    assert_non_null(opt);
    return opt;
}

static inline void apply_ok_(tfl_optimizer *opt, int n, tfl_tensor *const *vars,
                             tfl_tensor *const *grads, int line)
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

static inline tfl_tensor *mat_of(tfl_ctx *ctx, tfl_dtype dtype, int64_t r, int64_t c,
                                 const double *v)
{
    tfl_tensor *t = tens(ctx, F64, 2, (const int64_t[]){r, c}, v);
    if (dtype == F64) return t;
    tfl_tensor *x = tfl_cast(ctx, t, dtype);
    assert_non_null(x);
    return x;
}

static inline tfl_optimizer *sgd(tfl_ctx *ctx, tfl_formula formula, double lr, double momentum)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(SGD, formula);
    o.learning_rate = lr;
    o.momentum = momentum;
    return new_opt(ctx, &o);
}

static inline void expect_same_bytes(const tfl_tensor *a, const tfl_tensor *b)
{
    size_t na, nb;
    void *x = host_bytes(a, &na), *y = host_bytes(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

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

static inline const char *ref_slot_name(const tfl_optimizer_opts *o, int s)
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
    case TFL_OPTIMIZER_NADAM:
        return s == 0 ? "m" : s == 1 ? "v" : NULL;
    case TFL_OPTIMIZER_ADAMAX:
        return s == 0 ? "m" : s == 1 ? "u" : NULL;
    }
    return NULL;
}

static inline void ref_init(ref_opt *r, const tfl_optimizer_opts *o, int n, const double *p0)
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
static inline void ref_apply(ref_opt *r, double lr, const double *gin, double gscale)
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
        case TFL_OPTIMIZER_NADAM: { /* μ_τ = β1 (1 − 0.5·0.96^(τψ)), Π_t = μ_1 ⋯ μ_t */
            double prod = 1, mu = 0, mu_next = 0;
            for (int tau = 1; tau <= (int)t + 1; tau++) {
                double m_tau = o->beta1 * (1 - 0.5 * pow(0.96, tau * o->momentum_decay));
                if (tau <= (int)t) prod *= m_tau;
                if (tau == (int)t) mu = m_tau;
                if (tau == (int)t + 1) mu_next = m_tau;
            }
            *s0 = *s0 + (1 - o->beta1) * (g - *s0);
            *s1 = *s1 + (1 - o->beta2) * (g * g - *s1);
            double bc2 = 1 - pow(o->beta2, t);
            p -= lr * ((1 - mu) / (1 - prod) * g + mu_next / (1 - prod * mu_next) * *s0) /
                 (sqrt(*s1) / sqrt(bc2) + o->epsilon);
            break;
        }
        case TFL_OPTIMIZER_ADAMAX: /* torch: ε inside the max; Keras: added to u */
            *s0 = *s0 + (1 - o->beta1) * (g - *s0);
            *s1 = fmax(o->beta2 * *s1, fabs(g) + (tf ? 0 : o->epsilon));
            p -= lr / (1 - pow(o->beta1, t)) * *s0 / (*s1 + (tf ? o->epsilon : 0));
            break;
        }
        r->p[i] = p;
    }
    r->iter++;
    r->started = true;
}

/* The variable and each of its slots against the reference. */
static inline void expect_ref_(const tfl_optimizer *opt, const tfl_tensor *v, const ref_opt *r,
                               double tol, int line)
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

/* The starting point and the three gradients of the step-by-step checks. */
static const double P0[3] = {0.5, -1.25, 2.0};
static const double GS[3][3] = {{0.3, -0.2, 1.5}, {-0.1, 0.4, 0.7}, {0.25, 0.05, -2.0}};

/* ---- snapshots: every variable, slot and the counter, byte for byte -------------------------- */

#define SNAP_MAX 32

typedef struct snapshot {
    int n;
    int64_t n_opt; /* tfl_optimizer_variables */
    const tfl_tensor *t[SNAP_MAX];
    void *bytes[SNAP_MAX];
    size_t size[SNAP_MAX];
    const void *ptr[SNAP_MAX];
} snapshot;

static inline void snap_add(snapshot *s, const tfl_tensor *t)
{
    assert_true(s->n < SNAP_MAX);
    s->t[s->n] = t;
    s->bytes[s->n] = host_bytes(t, &s->size[s->n]);
    s->ptr[s->n] = tfl_tensor_data_ptr(t);
    s->n++;
}

/* The variables given and everything the optimizer owns. */
static inline void snap_take(snapshot *s, const tfl_optimizer *opt, int n, tfl_tensor *const *vars)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n; i++)
        snap_add(s, vars[i]);
    tfl_tensor *ov[SNAP_MAX];
    s->n_opt = tfl_optimizer_variables(opt, ov, SNAP_MAX);
    assert_true(s->n_opt >= 1 && s->n_opt + n <= SNAP_MAX);
    for (int64_t i = 0; i < s->n_opt; i++)
        snap_add(s, ov[i]);
}

static inline void snap_check_(const snapshot *s, const tfl_optimizer *opt, int line)
{
    tfl_tensor *ov[SNAP_MAX];
    int64_t n_opt = tfl_optimizer_variables(opt, ov, SNAP_MAX);
    if (n_opt != s->n_opt) {
        print_error("line %d: the optimizer has %lld variables, had %lld\n", line, (long long)n_opt,
                    (long long)s->n_opt);
        fail();
    }
    for (int i = 0; i < s->n; i++) {
        size_t nb;
        void *now = host_bytes(s->t[i], &nb);
        if (nb != s->size[i] || memcmp(now, s->bytes[i], nb) != 0) {
            print_error("line %d: '%s' changed\n", line, tfl_variable_name(s->t[i]));
            fail();
        }
        free(now);
    }
}
#define snap_check(s, opt) snap_check_((s), (opt), __LINE__)

static inline void snap_free(snapshot *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->bytes[i]);
    s->n = 0;
}

/* ---- counting allocations -------------------------------------------------------------------- */

/* counting_alloc, counting_free and alloc_counter: tests/common/tfl_test_util.h */
static alloc_counter g_alloc;

static inline int setup_counting(void **state)
{
    memset(&g_alloc, 0, sizeof g_alloc);
    return setup_opts(state, &(tfl_ctx_opts){.alloc_fn = counting_alloc,
                                             .free_fn = counting_free,
                                             .alloc_user = &g_alloc});
}

/* ---- the variables of the error and allocation tests ----------------------------------------- */

/* A (float32, (2, 3)) and B (float64, (3,)) with gradients ga and gb. */
static inline void make_ab(tfl_ctx *ctx, tfl_tensor **A, tfl_tensor **B, tfl_tensor **ga,
                           tfl_tensor **gb)
{
    *A = var_from(ctx, F64, 2, (const int64_t[]){2, 3}, D(1, -2, 3, -4, 5, -6),
                  &(tfl_variable_opts){.name = "A", .dtype = F32});
    *B = var_vec(ctx, F64, D(0.5, 0.25, -1), 3, "B");
    *ga = mat_of(ctx, F32, 2, 3, D(0.1, 0.2, -0.3, 0.4, -0.5, 0.6));
    *gb = vec_of(ctx, F64, D(1, -1, 2), 3);
}

#endif /* TFL_OPTIM_HELPERS_H */
