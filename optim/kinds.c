/*
 * optim/kinds.c: every optimizer kind in one table: its name, default formula and defaults, the
 * options it reads, its slots, the update kernel of framework/opt_elems.h it runs and the
 * constants it gives that kernel, computed here on the host in double (optim.h writes out the
 * formulas). optimizer.c and apply.c only walk the tables. A new optimizer is a block and a row
 * here, its kernel in framework/opt_elems.h (unless it reuses one), its enum value, options and
 * formulas in optim.h, and its name in configs/schema.c.
 */
#include "optim_internal.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

/** The options of tfl_optimizer_opts that only some kinds read, one bit each. */
enum {
    TFL__OPTION_MOMENTUM = 1u << 0,
    TFL__OPTION_DAMPENING = 1u << 1,
    TFL__OPTION_NESTEROV = 1u << 2,
    TFL__OPTION_BETA1 = 1u << 3,
    TFL__OPTION_BETA2 = 1u << 4,
    TFL__OPTION_EPSILON = 1u << 5,
    TFL__OPTION_AMSGRAD = 1u << 6,
    TFL__OPTION_RHO = 1u << 7,
    TFL__OPTION_CENTERED = 1u << 8,
    TFL__OPTION_INITIAL_ACCUMULATOR = 1u << 9,
    TFL__OPTION_MOMENTUM_DECAY = 1u << 10,
};

#define OPT(f) offsetof(tfl_optimizer_opts, f)

/* The order of tfl_optimizer_new's checks: for each, "has no option" then the range. */
const tfl__opt_option tfl__opt_options[] = {
    {"learning_rate", OPT(learning_rate), false, 0, INFINITY, false, ">= 0"},
    {"weight_decay", OPT(weight_decay), false, 0, INFINITY, false, ">= 0"},
    {"momentum", OPT(momentum), false, TFL__OPTION_MOMENTUM, INFINITY, false, ">= 0"},
    {"nesterov", OPT(nesterov), true, TFL__OPTION_NESTEROV, 0, false, NULL},
    {"dampening", OPT(dampening), false, TFL__OPTION_DAMPENING, 1, false, "0 <= dampening <= 1"},
    {"beta1", OPT(beta1), false, TFL__OPTION_BETA1, 1, true, "0 <= beta1 < 1"},
    {"beta2", OPT(beta2), false, TFL__OPTION_BETA2, 1, true, "0 <= beta2 < 1"},
    {"amsgrad", OPT(amsgrad), true, TFL__OPTION_AMSGRAD, 0, false, NULL},
    {"epsilon", OPT(epsilon), false, TFL__OPTION_EPSILON, INFINITY, false, ">= 0"},
    {"rho", OPT(rho), false, TFL__OPTION_RHO, 1, false, "0 <= rho <= 1"},
    {"centered", OPT(centered), true, TFL__OPTION_CENTERED, 0, false, NULL},
    {"initial_accumulator", OPT(initial_accumulator), false, TFL__OPTION_INITIAL_ACCUMULATOR,
     INFINITY, false, ">= 0"},
    {"momentum_decay", OPT(momentum_decay), false, TFL__OPTION_MOMENTUM_DECAY, INFINITY, false,
     ">= 0"},
    {"clip_value", OPT(clip_value), false, 0, INFINITY, false, ">= 0 (0: off)"},
    {"clip_norm", OPT(clip_norm), false, 0, INFINITY, false, ">= 0 (0: off)"},
    {"global_clip_norm", OPT(global_clip_norm), false, 0, INFINITY, false, ">= 0 (0: off)"},
    {"loss_scale", OPT(loss_scale), false, 0, FLT_MAX, false, "0 (off) or a float32 in (0, 3.4e38]"},
    {NULL, 0, false, 0, 0, false, NULL},
};

static bool is_tf(const tfl_optimizer_opts *o)
{
    return o->formula == TFL_FORMULA_TENSORFLOW;
}

/* ---- SGD ------------------------------------------------------------------------------------ */

static void sgd_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = tf ? 0.01 : 1e-3;
}

static void sgd_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    (void)init;
    if (o->momentum > 0) names[0] = "momentum";
}

static void sgd_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    double lr = h->lr, mu = o->momentum;
    h->flags = mu > 0;
    if (is_tf(o)) /* m <- mu m - lr g; p += m, or mu m - lr g */
        h->c.sgd.sb = o->nesterov ? mu : 1.0;
    else /* b <- mu b + (1 - dampening) g (first: g); p -= lr b, or lr (g + mu b) */
        h->c.sgd.sb = o->nesterov ? -lr * mu : -lr;
    h->c.sgd.sg = o->nesterov ? -lr : 0.0;
}

static void sgd_tensor(const tfl_optimizer_opts *o, const tfl__opt_hyper *h, int64_t step,
                       double *memo, double *k)
{
    (void)memo;
    bool first = !is_tf(o) && step == 0; /* torch: b <- g on the variable's first update */
    k[TFL__OPK_sgd_mu] = first ? 0.0 : o->momentum;
    k[TFL__OPK_sgd_cg] = is_tf(o) ? -h->lr : first ? 1.0 : 1.0 - o->dampening;
}

/* ---- Adam, AdamW ---------------------------------------------------------------------------- */

static void adam_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = 1e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = tf ? 1e-7 : 1e-8;
}

static void adamw_defaults(tfl_optimizer_opts *o, bool tf)
{
    adam_defaults(o, tf);
    o->weight_decay = tf ? 0.004 : 0.01;
}

static void adam_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    (void)init;
    names[0] = "m";
    names[1] = "v";
    if (o->amsgrad) names[2] = "vhat";
}

static void adam_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    h->flags = o->amsgrad;
    h->c.adam.c1 = 1.0 - o->beta1;
    h->c.adam.c2 = 1.0 - o->beta2;
    h->c.adam.eps = o->epsilon;
}

/* the step factor a and root scale b: the bias corrections, with β^t in double */
static void adam_tensor(const tfl_optimizer_opts *o, const tfl__opt_hyper *h, int64_t step,
                        double *memo, double *k)
{
    (void)memo;
    double t = (double)step + 1.0;
    double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
    k[TFL__OPK_adam_a] = is_tf(o) ? h->lr * sqrt(bc2) / bc1 : h->lr / bc1;
    k[TFL__OPK_adam_b] = is_tf(o) ? 1.0 : 1.0 / sqrt(bc2);
}

/* ---- RMSprop -------------------------------------------------------------------------------- */

static void rmsprop_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = tf ? 1e-3 : 1e-2;
    o->rho = tf ? 0.9 : 0.99;
    o->epsilon = tf ? 1e-7 : 1e-8;
}

static void rmsprop_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    (void)init;
    names[0] = "rms";
    names[1] = o->centered ? "mg" : NULL;
    names[2] = o->momentum > 0 ? "momentum" : NULL;
}

static void rmsprop_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    bool tf = is_tf(o);
    h->flags = (o->momentum > 0 ? 1u : 0u) | (tf ? 2u : 0u) | (o->centered ? 4u : 0u);
    h->c.rmsprop.rho = o->rho;
    h->c.rmsprop.c2 = 1.0 - o->rho;
    h->c.rmsprop.eps = o->epsilon;
    h->c.rmsprop.k1 = tf ? h->lr : 1.0;
    h->c.rmsprop.k2 = tf ? 1.0 : h->lr;
    h->c.rmsprop.mu = o->momentum;
}

/* ---- Adagrad -------------------------------------------------------------------------------- */

static void adagrad_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = tf ? 1e-3 : 1e-2;
    o->initial_accumulator = tf ? 0.1 : 0.0;
    o->epsilon = tf ? 1e-7 : 1e-10;
}

static void adagrad_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    names[0] = "accumulator";
    init[0] = o->initial_accumulator;
}

static void adagrad_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    h->flags = is_tf(o); /* eps inside the root */
    h->c.adagrad.eps = o->epsilon;
}

/* ---- NAdam ---------------------------------------------------------------------------------- */

static void nadam_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = tf ? 1e-3 : 2e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = tf ? 1e-7 : 1e-8;
    o->momentum_decay = tf ? 1.0 : 0.004; /* Keras: 0.96^t, torch: 0.96^(0.004 t) */
}

static void nadam_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    (void)o, (void)init;
    names[0] = "m";
    names[1] = "v";
}

static void nadam_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    h->c.nadam.c1 = 1.0 - o->beta1;
    h->c.nadam.c2 = 1.0 - o->beta2;
    h->c.nadam.eps = o->epsilon;
}

/* the momentum schedule μ_t = β1·(1 − 0.5·0.96^(t·ψ)) */
static double nadam_mu(const tfl_optimizer_opts *o, double t)
{
    return o->beta1 * (1.0 - 0.5 * pow(0.96, t * o->momentum_decay));
}

/* Π_t = μ_1·…·μ_t, multiplied in that order, carried on from memo = {t, Π_t} of the last call:
 * the next step costs one product, another step (a restored optimizer, a variable with its own
 * count) a product per step from the start until Π underflows to 0, so that a resumed run
 * computes the same Π bit for bit */
static double nadam_product(const tfl_optimizer_opts *o, int64_t t, double *memo)
{
    int64_t tau = 0;
    double prod = 1.0;
    if (memo[0] >= 1 && memo[0] <= (double)t) {
        tau = (int64_t)memo[0];
        prod = memo[1];
    }
    for (; tau < t && prod != 0; tau++)
        prod *= nadam_mu(o, (double)(tau + 1));
    memo[0] = (double)t;
    memo[1] = prod;
    return prod;
}

/* cg = lr·(1 − μ_t)/(1 − Π_t), cm = lr·μ_{t+1}/(1 − Π_t·μ_{t+1}), b = 1/√(1 − β2^t) */
static void nadam_tensor(const tfl_optimizer_opts *o, const tfl__opt_hyper *h, int64_t step,
                         double *memo, double *k)
{
    double t = (double)step + 1.0;
    double mu = nadam_mu(o, t), mu_next = nadam_mu(o, t + 1.0);
    double prod = nadam_product(o, step + 1, memo);
    k[TFL__OPK_nadam_cg] = h->lr * (1.0 - mu) / (1.0 - prod);
    k[TFL__OPK_nadam_cm] = h->lr * mu_next / (1.0 - prod * mu_next);
    k[TFL__OPK_nadam_b] = 1.0 / sqrt(1.0 - pow(o->beta2, t));
}

/* ---- Adamax --------------------------------------------------------------------------------- */

static void adamax_defaults(tfl_optimizer_opts *o, bool tf)
{
    o->learning_rate = tf ? 1e-3 : 2e-3;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = tf ? 1e-7 : 1e-8;
}

static void adamax_slots(const tfl_optimizer_opts *o, const char **names, double *init)
{
    (void)o, (void)init;
    names[0] = "m";
    names[1] = "u";
}

/* ε inside the max (torch) or added to u in the denominator (Keras) */
static void adamax_hyper(const tfl_optimizer_opts *o, tfl__opt_hyper *h)
{
    h->c.adamax.c1 = 1.0 - o->beta1;
    h->c.adamax.b2 = o->beta2;
    h->c.adamax.ei = is_tf(o) ? 0.0 : o->epsilon;
    h->c.adamax.eo = is_tf(o) ? o->epsilon : 0.0;
}

/* a = lr / (1 − β1^t) */
static void adamax_tensor(const tfl_optimizer_opts *o, const tfl__opt_hyper *h, int64_t step,
                          double *memo, double *k)
{
    (void)memo;
    k[TFL__OPK_adamax_a] = h->lr / (1.0 - pow(o->beta1, (double)step + 1.0));
}

/* ---- the table ------------------------------------------------------------------------------ */

#define ADAM_OPTIONS                                                                               \
    (TFL__OPTION_BETA1 | TFL__OPTION_BETA2 | TFL__OPTION_EPSILON | TFL__OPTION_AMSGRAD)

const tfl__opt_kind tfl__opt_kinds[TFL_OPTIMIZER_KIND_COUNT] = {
    [TFL_OPTIMIZER_SGD] = {"SGD", TFL__OPK_sgd, TFL_FORMULA_PYTORCH, false,
                           TFL__OPTION_MOMENTUM | TFL__OPTION_NESTEROV | TFL__OPTION_DAMPENING,
                           TFL__OPTION_DAMPENING, sgd_defaults, sgd_slots, sgd_hyper, sgd_tensor},
    [TFL_OPTIMIZER_ADAM] = {"Adam", TFL__OPK_adam, TFL_FORMULA_PYTORCH, false, ADAM_OPTIONS, 0,
                            adam_defaults, adam_slots, adam_hyper, adam_tensor},
    [TFL_OPTIMIZER_ADAMW] = {"AdamW", TFL__OPK_adam, TFL_FORMULA_PYTORCH, true, ADAM_OPTIONS, 0,
                             adamw_defaults, adam_slots, adam_hyper, adam_tensor},
    [TFL_OPTIMIZER_RMSPROP] = {"RMSprop", TFL__OPK_rmsprop, TFL_FORMULA_TENSORFLOW, false,
                               TFL__OPTION_RHO | TFL__OPTION_MOMENTUM | TFL__OPTION_EPSILON |
                                   TFL__OPTION_CENTERED,
                               0, rmsprop_defaults, rmsprop_slots, rmsprop_hyper, NULL},
    [TFL_OPTIMIZER_ADAGRAD] = {"Adagrad", TFL__OPK_adagrad, TFL_FORMULA_PYTORCH, false,
                               TFL__OPTION_INITIAL_ACCUMULATOR | TFL__OPTION_EPSILON, 0,
                               adagrad_defaults, adagrad_slots, adagrad_hyper, NULL},
    [TFL_OPTIMIZER_NADAM] = {"NAdam", TFL__OPK_nadam, TFL_FORMULA_PYTORCH, false,
                             TFL__OPTION_BETA1 | TFL__OPTION_BETA2 | TFL__OPTION_EPSILON |
                                 TFL__OPTION_MOMENTUM_DECAY,
                             0, nadam_defaults, nadam_slots, nadam_hyper, nadam_tensor},
    [TFL_OPTIMIZER_ADAMAX] = {"Adamax", TFL__OPK_adamax, TFL_FORMULA_PYTORCH, false,
                              TFL__OPTION_BETA1 | TFL__OPTION_BETA2 | TFL__OPTION_EPSILON, 0,
                              adamax_defaults, adamax_slots, adamax_hyper, adamax_tensor},
};
