/*
 * tapeflow/optim.h: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, NAdam, Adamax), learning-rate
 * schedules and gradient clipping.
 *
 * An optimizer updates variables in place: one fused kernel per optimizer and device reads
 * each gradient once and writes the variable and its slots in the same pass, with no
 * temporary tensors and, after the first apply, no allocation (TensorFlow's
 * ResourceApplyAdam family). A list of variables is updated by one call.
 * (Allocation happens only to make slots, for a longer list than before, to copy a gradient
 * that is a variable or a strided view, or to move a variable away from a live snapshot of
 * it: copy-on-write. The usual training step does none of these after its first apply.)
 *
 *     tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
 *     o.learning_rate = 3e-4;
 *     tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
 *     ... tfl_tape_gradient(tape, loss, n, vars, grads, 0);
 *     tfl_optimizer_apply(opt, n, vars, grads);
 *
 * State. Slots are variables named "<variable name>/<optimizer name>/<slot>" (for example
 * "dense/kernel/Adam/m"), made on the first apply that updates their variable (or by
 * tfl_optimizer_build), on that variable's device, with its dtype and shape, zero-filled
 * (Adagrad's accumulator: filled with initial_accumulator); under PYTORCH each variable also
 * has the int64 scalar slot "step" on CPU:0. The step counter is the int64 scalar variable
 * "<optimizer name>/iterations" on CPU:0: the number of applies so far. Slots and counters
 * are not trainable (never watched by a tape, not in TFL_TRAINABLE_VARIABLES) and are in
 * TFL_GLOBAL_VARIABLES; tfl_optimizer_variables lists them for checkpoints. To resume, build
 * the slots (tfl_optimizer_build) and assign the saved values to every listed variable:
 * that is the whole state. The optimizer owns them: tfl_optimizer_free releases them.
 *
 * Formulas. TensorFlow's and PyTorch's optimizers differ in details that change a
 * trajectory, so each optimizer takes `formula`: TFL_FORMULA_TENSORFLOW follows Keras 3
 * (tf.keras.optimizers, TensorFlow 2.21) and TFL_FORMULA_PYTORCH follows torch.optim; both
 * are checked against 100-step trajectories of the real thing (tests/reference/optim_ref.py).
 * Notation, for one apply: g the gradient (after clipping), p the variable, t this apply's
 * 1-based step, lr = the schedule's value at step iterations (0-based, before this apply),
 * wd = weight_decay. Every operation is elementwise. β^t is computed in double.
 * t is iterations + 1 under TENSORFLOW (Keras); under PYTORCH each variable counts its own
 * steps, as torch does (state['step']): t is 1 on a variable's first update even when the
 * optimizer has stepped before (a variable whose gradient came late, one added later), and
 * that count is the variable's "step" slot (an int64 scalar on CPU:0).
 *
 *  Weight decay. PYTORCH: coupled L2, g ← g + wd·p, for every optimizer but AdamW;
 *  decoupled for AdamW. TENSORFLOW (Keras 3): decoupled for every optimizer. Decoupled is
 *  p ← p − lr·wd·p before the update (torch writes p·(1 − lr·wd), the same but for
 *  torch's rounding of 1 − lr·wd to float32, which costs lr·wd up to 1e-3 of its value).

 *  SGD (momentum μ, dampening τ, nesterov). Without momentum: p ← p − lr·g.
 *    PYTORCH (lr outside the buffer b):  b ← g on a variable's first update (step 0), else
 *      b ← μ·b + (1 − τ)·g;  p ← p − lr·(g + μ·b) with nesterov, p ← p − lr·b without.
 *    TENSORFLOW (lr folded into the buffer m):  m ← μ·m − lr·g;
 *      p ← p + μ·m − lr·g with nesterov, p ← p + m without.
 *    The two agree while lr is constant (m = −lr·b); with a schedule, PyTorch's buffer keeps
 *    gradient units and a new lr takes effect at once. Slot: "momentum" (when μ > 0).
 *
 *  Adam and AdamW (β1, β2, ε, amsgrad).  m ← m + (1 − β1)·(g − m);  v ← v + (1 − β2)·(g² − v);
 *    with amsgrad v̂ ← max(v̂, v) and v̂ replaces v below.
 *    PYTORCH (ε after bias correction): p ← p − lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + ε).
 *    TENSORFLOW (ε-hat, before it):     p ← p − lr·√(1 − β2^t)/(1 − β1^t) · m / (√v + ε).
 *    Slots: "m", "v", and "vhat" with amsgrad.
 *
 *  RMSprop (ρ, momentum μ, ε, centered).  v ← ρ·v + (1 − ρ)·g²; centered: a ← ρ·a + (1 − ρ)·g
 *    and d = v − a², otherwise d = v.
 *    PYTORCH (ε outside the root, lr outside the buffer):  r = g / (√d + ε);
 *      μ > 0: b ← μ·b + r, p ← p − lr·b;  μ = 0: p ← p − lr·r.
 *    TENSORFLOW (ε inside the root, lr inside the buffer, as Graves 2013): r = lr·g / √(d + ε);
 *      μ > 0: b ← μ·b + r, p ← p − b;  μ = 0: p ← p − r.
 *    Slots: "rms", "mg" when centered, "momentum" when μ > 0.
 *
 *  Adagrad (initial accumulator a0, ε).  s ← s + g² (s starts at a0).
 *    PYTORCH:    p ← p − lr·g / (√s + ε)   (a0 = 0, ε = 1e-10 by default).
 *    TENSORFLOW: p ← p − lr·g / √(s + ε)   (a0 = 0.1, ε = 1e-7 by default).
 *    Slot: "accumulator".
 *
 *  NAdam (β1, β2, ε, momentum decay ψ; Dozat 2016).  The momentum schedule
 *    μ_t = β1·(1 − 0.5·0.96^(t·ψ)) and its product Π_t = μ_1·μ_2·…·μ_t (in double);
 *    m ← m + (1 − β1)·(g − m);  v ← v + (1 − β2)·(g² − v);
 *    p ← p − lr·((1 − μ_t)/(1 − Π_t)·g + μ_{t+1}/(1 − Π_t·μ_{t+1})·m) / (√v / √(1 − β2^t) + ε).
 *    Both families use this formula; they differ in ψ: PYTORCH ψ = momentum_decay (0.004 by
 *    default, torch's, the paper's), TENSORFLOW ψ = 1 by default (Keras's Nadam has no such
 *    option and uses 0.96^t). Slots: "m", "v" (Π_t is recomputed from t, not stored).
 *
 *  Adamax (β1, β2, ε; Kingma & Ba 2014, Algorithm 2).  m ← m + (1 − β1)·(g − m).
 *    PYTORCH (ε inside the max):   u ← max(β2·u, |g| + ε);  p ← p − lr/(1 − β1^t) · m / u.
 *    TENSORFLOW (ε added to u):    u ← max(β2·u, |g|);      p ← p − lr/(1 − β1^t) · m / (u + ε).
 *    Slots: "m", "u".
 *
 * Default formula (TFL_FORMULA_DEFAULT), chosen per optimizer to follow its paper:
 * SGD, Adam, AdamW, Adagrad, NAdam and Adamax use PYTORCH (Adam's Algorithm 1 adds ε after
 * bias correction; Dozat's NAdam decays the momentum schedule with ψ = 0.004; Algorithm 2's
 * Adamax has no ε, and torch's, inside the max, leaves every u above ε as the paper's;
 * Duchi et al.'s Adagrad starts from zero and adds δ outside the root; SGD keeps the buffer
 * in gradient units so a schedule's change applies at once); RMSprop uses TENSORFLOW
 * (Graves 2013, the source of centered RMSprop with momentum, puts ε inside the root and the
 * learning rate inside the momentum buffer).
 *
 * Gradient clipping (at most one kind, as Keras), applied to the gradients before weight
 * decay and the update, without changing the caller's gradient tensors:
 *  clip_value c:        g ← min(max(g, −c), c).
 *  clip_norm c:         per variable, g ← g·c / max(‖g‖, c)            (TENSORFLOW)
 *                                     g ← g·min(1, c / (‖g‖ + 1e-6))  (PYTORCH's clip_grad_norm_).
 *  global_clip_norm c:  the same with ‖g‖ the norm of all gradients of the apply together.
 *
 * Dynamic loss scaling (loss_scale > 0; for float16 mixed precision, whose gradients would
 * underflow: Keras's LossScaleOptimizer, torch's GradScaler). The caller's gradients are
 * those of the loss times S, the current scale (tfl_optimizer_loss_scale; the fit loop and
 * tfl_optimizer_minimize multiply for you). An apply reads the sums of squares of all
 * gradients (one host synchronisation) and then:
 *   any not finite:  nothing is updated and iterations does not move; S ← max(S/2, 1) (S
 *                    below 1 from the start stays), the count of finite steps ← 0,
 *                    skipped_steps + 1;
 *   all finite:      the update runs on g/S (clipping sees the unscaled norms); the count of
 *                    finite steps + 1, and when it reaches loss_scale_growth_steps, S ← 2S
 *                    (unless 2S overflows float32) and the count ← 0.
 * The state is three scalar variables on CPU:0 that checkpoints hold, so a resume is exact:
 * "<name>/loss_scale" (float32), "<name>/loss_scale_steps" and "<name>/skipped_steps"
 * (int64). Keras starts at 2^15 and grows after 2000 finite steps; torch at 2^16, also 2000.
 *
 * Placement and dtypes. The variables and gradients of an apply may live on several devices;
 * each gradient must be on its variable's device, with its dtype (float32 or float64) and
 * shape. Both families store float32 slots for float32 variables.
 */
#ifndef TAPEFLOW_OPTIM_H
#define TAPEFLOW_OPTIM_H

#include <tapeflow/base.h>
#include <tapeflow/tape.h> /* tfl_optimizer_gradient takes a tape */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_optimizer tfl_optimizer;

typedef enum tfl_optimizer_kind {
    TFL_OPTIMIZER_SGD = 1,
    TFL_OPTIMIZER_ADAM,
    TFL_OPTIMIZER_ADAMW,
    TFL_OPTIMIZER_RMSPROP,
    TFL_OPTIMIZER_ADAGRAD,
    TFL_OPTIMIZER_NADAM,
    TFL_OPTIMIZER_ADAMAX,
} tfl_optimizer_kind;

/** One past the last kind (not a kind): the kinds are 1 .. TFL_OPTIMIZER_KIND_COUNT - 1. */
#define TFL_OPTIMIZER_KIND_COUNT ((int)TFL_OPTIMIZER_ADAMAX + 1)

typedef enum tfl_formula {
    TFL_FORMULA_DEFAULT = 0, /* the optimizer's own default (see above) */
    TFL_FORMULA_TENSORFLOW,
    TFL_FORMULA_PYTORCH,
} tfl_formula;

/* ---- learning-rate schedules ---------------------------------------------------------------- */

typedef enum tfl_schedule_kind {
    TFL_SCHEDULE_CONSTANT = 0, /* factor 1 */
    TFL_SCHEDULE_EXPONENTIAL,  /* decay_rate^(s / decay_steps)  (Keras ExponentialDecay) */
    TFL_SCHEDULE_STEP,         /* decay_rate^floor(s / decay_steps)  (torch StepLR, Keras staircase) */
    TFL_SCHEDULE_COSINE,       /* alpha + (1 − alpha)·(1 + cos(π·min(s, decay_steps)/decay_steps))/2 */
    TFL_SCHEDULE_KIND_COUNT
} tfl_schedule_kind;

/**
 * A schedule multiplies the optimizer's learning_rate by a factor that depends on the step
 * s = iterations (0 on the first apply). All-zero is the constant schedule. A linear warmup
 * composes with every kind: for s < warmup_steps the factor rises linearly from
 * warmup_start_factor to 1 (torch's LinearLR), and the decay above then runs on
 * s − warmup_steps (Keras CosineDecay's warmup_target, torch's SequentialLR).
 * Unlike torch's CosineAnnealingLR, the cosine stays at alpha after decay_steps (Keras).
 */
typedef struct tfl_schedule {
    tfl_schedule_kind kind;
    int64_t decay_steps;        /* > 0 for EXPONENTIAL, STEP and COSINE */
    double decay_rate;          /* EXPONENTIAL, STEP: > 0 */
    double alpha;               /* COSINE: the final factor (0: decays to zero) */
    int64_t warmup_steps;       /* 0: no warmup */
    double warmup_start_factor; /* the factor at step 0 of the warmup */
} tfl_schedule;

/**
 * The learning rate a schedule gives at step s (0-based): learning_rate × factor(s).
 * A NULL schedule is constant. An invalid schedule or a negative step gives NaN.
 */
TFL_API double tfl_schedule_value(const tfl_schedule *schedule, double learning_rate, int64_t step);

/* ---- optimizers ---------------------------------------------------------------------------------- */

/**
 * Options. Get them from tfl_optimizer_defaults, change what you need, pass them to
 * tfl_optimizer_new. A field the optimizer has no use for must stay 0 (setting momentum
 * on Adam is an error, not a silent no-op).
 */
typedef struct tfl_optimizer_opts {
    tfl_optimizer_kind kind;
    tfl_formula formula;       /* the family of formulas (see above); defaults resolve it */
    const char *name;          /* NULL: the kind's name (tfl_optimizer_kind_name: "Adam", ...) */
    double learning_rate;      /* the base rate; the schedule multiplies it */
    tfl_schedule schedule;     /* all-zero: constant */
    double weight_decay;       /* coupled or decoupled by formula and kind (see above) */
    double momentum;           /* SGD, RMSprop: μ >= 0 */
    double dampening;          /* SGD, PYTORCH only: τ */
    bool nesterov;             /* SGD: needs momentum > 0 (and dampening 0) */
    double beta1, beta2;       /* Adam, AdamW, NAdam, Adamax: in [0, 1) */
    double epsilon;            /* every optimizer but SGD: ε >= 0 */
    bool amsgrad;              /* Adam, AdamW */
    double rho;                /* RMSprop: ρ in [0, 1] (torch's alpha) */
    bool centered;             /* RMSprop */
    double initial_accumulator;/* Adagrad: a0 >= 0 */
    double clip_value;         /* > 0: clip every gradient element to [-c, c] */
    double clip_norm;          /* > 0: clip each gradient's L2 norm to c */
    double global_clip_norm;   /* > 0: clip the L2 norm of all gradients together to c */
    double momentum_decay;     /* NAdam: ψ >= 0, the decay of its momentum schedule */
    double loss_scale;         /* > 0: dynamic loss scaling from this scale (see below); 0: off */
    int64_t loss_scale_growth_steps; /* with loss_scale: finite steps in a row before the
                                        scale doubles (>= 0; 0: 2000) */
} tfl_optimizer_opts;

/**
 * The defaults of `kind` for `formula` (TFL_FORMULA_DEFAULT: the optimizer's own, written
 * into the result). They are those of torch.optim and Keras 3:
 *   SGD      PYTORCH lr 1e-3 | TENSORFLOW lr 0.01; momentum 0
 *   Adam     lr 1e-3, β1 0.9, β2 0.999; ε 1e-8 (PYTORCH) | 1e-7 (TENSORFLOW)
 *   AdamW    as Adam, weight_decay 0.01 (PYTORCH) | 0.004 (TENSORFLOW)
 *   RMSprop  PYTORCH lr 1e-2, ρ 0.99, ε 1e-8 | TENSORFLOW lr 1e-3, ρ 0.9, ε 1e-7; momentum 0
 *   Adagrad  PYTORCH lr 1e-2, a0 0, ε 1e-10 | TENSORFLOW lr 1e-3, a0 0.1, ε 1e-7
 *   NAdam    β1 0.9, β2 0.999; PYTORCH lr 2e-3, ε 1e-8, ψ 0.004 | TENSORFLOW lr 1e-3, ε 1e-7, ψ 1
 *   Adamax   β1 0.9, β2 0.999; PYTORCH lr 2e-3, ε 1e-8 | TENSORFLOW lr 1e-3, ε 1e-7
 * An unknown kind or formula gives options with kind 0, which tfl_optimizer_new refuses.
 */
TFL_API tfl_optimizer_opts tfl_optimizer_defaults(tfl_optimizer_kind kind, tfl_formula formula);

/**
 * Creates an optimizer (opts->formula TFL_FORMULA_DEFAULT takes the kind's own; the other
 * fields are used as given, so start from tfl_optimizer_defaults). Its name is opts->name, or the kind's name; when a live optimizer
 * of this context already has that name, "_1", "_2", ... is appended (Keras), so slot and
 * counter names stay unique for checkpoints. Creates "<name>/iterations" (0).
 * Returns: the optimizer (free with tfl_optimizer_free) or NULL.
 * Errors: INVALID_ARGUMENT naming the option and its value (a negative learning rate,
 * β outside [0, 1), nesterov without momentum, two kinds of clipping, an option the kind
 * does not have, a bad schedule, a name with ':'), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_optimizer *tfl_optimizer_new(tfl_ctx *ctx, const tfl_optimizer_opts *opts);

/** Releases the optimizer, its slots and its step counter. NULL: no-op. Optimizers still
 * alive at tfl_ctx_free are freed with their context (their handles are then invalid). An
 * optimizer already freed: MISUSE kept in its context (base.h). */
TFL_API void tfl_optimizer_free(tfl_optimizer *opt);

/**
 * Applies one step: updates variables[i] from gradients[i] for every i, and adds 1 to
 * iterations. A NULL gradient skips its variable and logs a WARNING naming it (TensorFlow's
 * behaviour); gradients may be views, non-contiguous or variables (those are copied first,
 * so a variable updated by this apply and given as another's gradient counts with its value
 * from before the step).
 * Everything is checked before anything changes: on any error no variable, slot or counter
 * has changed.
 * Returns: TFL_OK, or the error (also kept in the ctx):
 *   INVALID_ARGUMENT  n < 0; NULL arrays; a NULL, non-variable or repeated variable; a gradient whose shape, dtype or device differs from its
 *                     variable's (the message names the variable and both values); a dtype
 *                     other than float32/float64; every gradient NULL ("No gradients provided
 *                     for any variable");
 *   FAILED_PRECONDITION  an uninitialized variable ("Attempting to use uninitialized
 *                     value"), a step counter (iterations or a "step" slot) that is
 *                     negative or 2^63 - 1 (a bad restore);
 *   MISUSE            a variable or gradient of another context, or one already released,
 *                     or an optimizer already freed (base.h);
 *   UNIMPLEMENTED     no update kernel on the variable's device;
 *   RESOURCE_EXHAUSTED (see the allocation note at the top).
 * Also INVALID_ARGUMENT for one of this optimizer's own slots or counters in the list.
 */
TFL_API tfl_status tfl_optimizer_apply(tfl_optimizer *opt, int n, tfl_tensor *const *variables,
                                       tfl_tensor *const *gradients);

/**
 * Makes the slots of these variables now, as the first apply would (Keras's build), so that
 * they can be restored from a checkpoint before any step. Variables that have slots already
 * are left alone. Errors: as tfl_optimizer_apply's for the variables (each is checked as if
 * it were its own gradient); on error no slot of this call is left.
 */
TFL_API tfl_status tfl_optimizer_build(tfl_optimizer *opt, int n, tfl_tensor *const *variables);

/**
 * The gradients an apply of this optimizer expects: tfl_tape_gradient(tape, loss, n, sources,
 * grads, 0) without loss scaling; with it, those of loss × tfl_optimizer_loss_scale(opt)
 * (tfl_tape_vjp from a tensor of the scale), as torch's scaler.scale(loss).backward().
 * Errors: tfl_tape_gradient's; MISUSE for a freed optimizer.
 */
TFL_API tfl_status tfl_optimizer_gradient(tfl_optimizer *opt, tfl_tape *tape,
                                          const tfl_tensor *loss, int n,
                                          const tfl_tensor *const *sources, tfl_tensor **grads);

/** A loss to minimize: returns a scalar computed from the variables (inside the tape). */
typedef tfl_tensor *(*tfl_loss_fn)(tfl_ctx *ctx, void *user);

/**
 * Runs `loss` under a gradient tape that also watches `variables` (so a non-trainable
 * variable listed here is updated too), takes the gradients of its result for them (n = 0
 * and variables NULL: every variable of TFL_TRAINABLE_VARIABLES) and applies them.
 * Temporaries live in a frame of their own. `loss_value` (optional) receives the loss.
 * Returns: TFL_OK or the error: the loss function's (a NULL result), INVALID_ARGUMENT for a
 * loss that is not a scalar, and tfl_optimizer_apply's.
 */
TFL_API tfl_status tfl_optimizer_minimize(tfl_optimizer *opt, tfl_loss_fn loss, void *user, int n,
                                          tfl_tensor *const *variables, double *loss_value);

/** The optimizer's name ("Adam", "Adam_1"). */
TFL_API const char *tfl_optimizer_name(const tfl_optimizer *opt);
/** The context the optimizer was created in (borrowed); NULL for NULL. A model checks it
 * in tfl_model_compile: an optimizer serves variables of its own context only. */
TFL_API tfl_ctx *tfl_optimizer_ctx(const tfl_optimizer *opt);
/** Its options, with the defaults and the formula resolved. */
TFL_API const tfl_optimizer_opts *tfl_optimizer_options(const tfl_optimizer *opt);
/**
 * The L2 norm of n tensors taken together, sqrt(sum of every element squared), as global
 * norm clipping computes it (one vectorized pass over each; sums in double). NULL entries
 * are skipped (unconnected gradients). *first_nonfinite (may be NULL) gets the index of the
 * first tensor holding a NaN or an infinity (its sum of squares is not finite), or -1; the
 * norm is then not finite either.
 * Errors: INVALID_ARGUMENT (NULL norm, a negative count, a non-floating dtype, naming the
 * index), MISUSE (a released tensor or another context's), FAILED_PRECONDITION (an
 * uninitialized variable).
 */
TFL_API tfl_status tfl_global_norm(tfl_ctx *ctx, int n, const tfl_tensor *const *tensors,
                                   double *norm, int *first_nonfinite);

/** The step counter "<name>/iterations" (int64 scalar variable, borrowed). */
TFL_API tfl_tensor *tfl_optimizer_iterations(const tfl_optimizer *opt);
/** The learning rate the next apply will use (the schedule at the current iterations). */
TFL_API double tfl_optimizer_learning_rate(const tfl_optimizer *opt);
/** The current loss scale S (dynamic loss scaling); 1 without loss scaling, NaN for NULL. */
TFL_API double tfl_optimizer_loss_scale(const tfl_optimizer *opt);
/** Applies skipped for a gradient that was not finite (dynamic loss scaling; 0 without). */
TFL_API int64_t tfl_optimizer_skipped_steps(const tfl_optimizer *opt);

/**
 * The slot `slot` ("m", "v", "momentum", ..., "step") of a variable, borrowed; NULL (no
 * error kept) when the variable has no slots yet or the optimizer has no such slot.
 */
TFL_API tfl_tensor *tfl_optimizer_slot(const tfl_optimizer *opt, const tfl_tensor *variable,
                                       const char *slot);

/**
 * Every variable the optimizer owns, for checkpoints: iterations first, the loss scaling's
 * three (loss_scale, loss_scale_steps, skipped_steps) when it is on, then each variable's
 * slots (its "step" last) in the order the variables got them. Writes up to `cap` borrowed pointers to `out` (NULL when cap
 * is 0). Returns: how many there are (may exceed cap), or -1 for NULL opt.
 */
TFL_API int64_t tfl_optimizer_variables(const tfl_optimizer *opt, tfl_tensor **out, int64_t cap);

/** The names of the kinds and formulas ("Adam", "pytorch"); "unknown" out of range. */
TFL_API const char *tfl_optimizer_kind_name(tfl_optimizer_kind kind);
TFL_API const char *tfl_formula_name(tfl_formula formula);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_OPTIM_H */
