/* test_optim_errors.c: what an optimizer refuses. Every option check of tfl_optimizer_new
 * (the message names the option and its value; nothing is left behind); every argument error
 * of tfl_optimizer_apply, on the first apply (no slots made) and on a later one (no variable,
 * slot or counter changed, byte for byte, and the next applies as if the failed ones never
 * happened); a variable listed twice, also on its first apply and with a NULL gradient; and
 * out of memory for the slots of a first apply. */
#include "optim_helpers.h"

/* An apply that must fail with code and a message holding every fragment, changing nothing
 * (snapshot s) and no counter. */
static void expect_apply_fails_(tfl_optimizer *opt, const snapshot *s, tfl_status code, int n,
                                tfl_tensor *const *vars, tfl_tensor *const *grads, int line,
                                const char *const *frags)
{
    tfl_ctx *ctx = tfl_tensor_ctx(tfl_optimizer_iterations(opt));
    int64_t it = iterations_of(opt);
    int64_t globals = coll_count(ctx, TFL_GLOBAL_VARIABLES);
    uint64_t live = live_tensors(ctx);
    int depth = tfl_frame_depth(ctx);
    tfl_status st = tfl_optimizer_apply(opt, n, vars, grads);
    if (st != code) {
        tfl_error e = tfl_ctx_error(ctx);
        print_error("line %d: apply returned %s, want %s (%s)\n", line, tfl_status_name(st),
                    tfl_status_name(code), e.message ? e.message : "");
        fail();
    }
    expect_error_(ctx, code, line, frags);
    assert_int_equal(iterations_of(opt), it);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals);
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(tfl_frame_depth(ctx), depth);
    snap_check_(s, opt, line);
}
#define expect_apply_fails(opt, s, code, n, vars, grads, ...)                                      \
    expect_apply_fails_((opt), (s), (code), (n), (vars), (grads), __LINE__,                        \
                        (const char *const[]){__VA_ARGS__, NULL})

/* ---- tfl_optimizer_new ----------------------------------------------------------------------- */

static void expect_new_fails_(tfl_ctx *ctx, const tfl_optimizer_opts *o, int line,
                              const char *const *frags)
{
    int64_t globals = coll_count(ctx, TFL_GLOBAL_VARIABLES);
    uint64_t live = live_tensors(ctx);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, o);
    if (opt) {
        print_error("line %d: tfl_optimizer_new accepted the options\n", line);
        fail();
    }
    expect_error_(ctx, TFL_INVALID_ARGUMENT, line, frags);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), globals);
    assert_int_equal(live_tensors(ctx), live);
}
#define expect_new_fails(ctx, o, ...)                                                              \
    expect_new_fails_((ctx), (o), __LINE__, (const char *const[]){__VA_ARGS__, NULL})

static void test_new_option_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *w = var_vec(ctx, F64, D(1, 2), 2, "w"); /* a variable that is there already */
    tfl_optimizer_opts o;

#define RESET(kind, formula) o = tfl_optimizer_defaults((kind), (formula))
    RESET(ADAM, TORCH);
    o.kind = (tfl_optimizer_kind)0;
    expect_new_fails(ctx, &o, "unknown optimizer kind 0");
    o.kind = (tfl_optimizer_kind)42;
    expect_new_fails(ctx, &o, "unknown optimizer kind 42");
    expect_new_fails(ctx, &(tfl_optimizer_opts){0}, "unknown optimizer kind 0");
    RESET(ADAM, TORCH);
    o.formula = (tfl_formula)9;
    expect_new_fails(ctx, &o, "unknown formula 9");

    RESET(ADAM, TORCH);
    o.learning_rate = -0.1;
    expect_new_fails(ctx, &o, "Adam", "learning_rate", "-0.1");
    o.learning_rate = NAN;
    expect_new_fails(ctx, &o, "learning_rate", "nan");
    o.learning_rate = INFINITY;
    expect_new_fails(ctx, &o, "learning_rate", "inf");
    RESET(ADAM, TF);
    o.beta1 = 1.0;
    expect_new_fails(ctx, &o, "Adam", "beta1 1", "0 <= beta1 < 1");
    RESET(ADAMW, TORCH);
    o.beta2 = -0.1;
    expect_new_fails(ctx, &o, "AdamW", "beta2 -0.1");
    RESET(ADAM, TORCH);
    o.epsilon = -1e-8;
    expect_new_fails(ctx, &o, "epsilon -1e-08");
    RESET(ADAMW, TORCH);
    o.weight_decay = -0.01;
    expect_new_fails(ctx, &o, "weight_decay -0.01");

    RESET(SGD, TORCH);
    o.nesterov = true;
    expect_new_fails(ctx, &o, "SGD", "nesterov", "momentum 0");
    RESET(SGD, TORCH);
    o.nesterov = true;
    o.momentum = 0.9;
    o.dampening = 0.1;
    expect_new_fails(ctx, &o, "nesterov", "dampening 0.1");
    RESET(SGD, TF);
    o.momentum = 0.9;
    o.dampening = 0.1;
    expect_new_fails(ctx, &o, "tensorflow formula", "dampening", "0.1");
    RESET(SGD, TORCH);
    o.momentum = 0.9;
    o.dampening = 1.5;
    expect_new_fails(ctx, &o, "dampening 1.5");
    RESET(SGD, TORCH);
    o.momentum = -0.9;
    expect_new_fails(ctx, &o, "momentum -0.9");

    /* options the kind does not have */
    RESET(ADAM, TORCH);
    o.momentum = 0.9;
    expect_new_fails(ctx, &o, "Adam has no option 'momentum'", "0.9");
    RESET(SGD, TORCH);
    o.rho = 0.9;
    expect_new_fails(ctx, &o, "SGD has no option 'rho'", "0.9");
    RESET(SGD, TF);
    o.epsilon = 1e-7;
    expect_new_fails(ctx, &o, "SGD has no option 'epsilon'", "1e-07");
    RESET(RMSPROP, TF);
    o.nesterov = true;
    o.momentum = 0.9;
    expect_new_fails(ctx, &o, "RMSprop has no option 'nesterov'");
    RESET(RMSPROP, TF);
    o.amsgrad = true;
    expect_new_fails(ctx, &o, "RMSprop has no option 'amsgrad'");
    RESET(ADAM, TORCH);
    o.centered = true;
    expect_new_fails(ctx, &o, "Adam has no option 'centered'");
    RESET(ADAGRAD, TORCH);
    o.beta1 = 0.9;
    expect_new_fails(ctx, &o, "Adagrad has no option 'beta1'", "0.9");
    RESET(ADAM, TORCH);
    o.initial_accumulator = 0.1;
    expect_new_fails(ctx, &o, "Adam has no option 'initial_accumulator'", "0.1");
    RESET(ADAM, TF);
    o.momentum_decay = 0.004;
    expect_new_fails(ctx, &o, "Adam has no option 'momentum_decay'", "0.004");
    RESET(TFL_OPTIMIZER_NADAM, TORCH);
    o.momentum_decay = -1;
    expect_new_fails(ctx, &o, "NAdam: invalid momentum_decay -1; expected >= 0");
    RESET(TFL_OPTIMIZER_NADAM, TF);
    o.momentum = 0.9;
    expect_new_fails(ctx, &o, "NAdam has no option 'momentum'", "0.9");
    RESET(TFL_OPTIMIZER_ADAMAX, TORCH);
    o.amsgrad = true;
    expect_new_fails(ctx, &o, "Adamax has no option 'amsgrad'");
    RESET(TFL_OPTIMIZER_ADAMAX, TF);
    o.beta2 = 1;
    expect_new_fails(ctx, &o, "Adamax: invalid beta2 1; expected 0 <= beta2 < 1");
    RESET(RMSPROP, TORCH);
    o.rho = 1.5;
    expect_new_fails(ctx, &o, "rho 1.5");
    RESET(ADAGRAD, TF);
    o.initial_accumulator = -0.1;
    expect_new_fails(ctx, &o, "initial_accumulator -0.1");

    /* clipping */
    RESET(SGD, TORCH);
    o.clip_value = 1;
    o.clip_norm = 2;
    expect_new_fails(ctx, &o, "only one of", "clip_value (1)", "clip_norm (2)");
    RESET(ADAM, TF);
    o.clip_norm = 2;
    o.global_clip_norm = 3;
    expect_new_fails(ctx, &o, "only one of", "clip_norm (2)", "global_clip_norm (3)");
    RESET(ADAM, TF);
    o.clip_value = -1;
    expect_new_fails(ctx, &o, "clip_value -1");

    /* schedules */
    RESET(ADAM, TORCH);
    o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_EXPONENTIAL, .decay_rate = 0.5};
    expect_new_fails(ctx, &o, "decay_steps", "given 0");
    o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_STEP, .decay_steps = 10};
    expect_new_fails(ctx, &o, "decay_rate", "given 0");
    o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_COSINE, .decay_steps = 10, .warmup_steps = -5};
    expect_new_fails(ctx, &o, "warmup_steps (-5)");
    o.schedule = (tfl_schedule){.warmup_steps = 5, .warmup_start_factor = -1};
    expect_new_fails(ctx, &o, "warmup_start_factor (-1)");
    o.schedule = (tfl_schedule){.kind = (tfl_schedule_kind)7};
    expect_new_fails(ctx, &o, "schedule kind 7");
    o.schedule = (tfl_schedule){.kind = TFL_SCHEDULE_COSINE, .decay_steps = 10, .alpha = NAN};
    expect_new_fails(ctx, &o, "alpha");

    /* names */
    RESET(ADAM, TORCH);
    o.name = "my:opt";
    expect_new_fails(ctx, &o, "'my:opt'", "not a valid optimizer name");
    o.name = "";
    expect_new_fails(ctx, &o, "''", "not a valid optimizer name");

    /* NULL */
    assert_null(tfl_optimizer_new(ctx, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "options are NULL");
    RESET(ADAM, TORCH);
    assert_null(tfl_optimizer_new(NULL, &o));
    expect_no_error(ctx);
#undef RESET

    /* none left a variable behind, and a valid one still works */
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 1);
    tfl_optimizer *opt = new_opt(ctx, &o);
    assert_string_equal(tfl_optimizer_name(opt), "Adam");
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 2);
    tfl_optimizer_free(opt);
    tfl_tensor_release(w);
}

/* ---- tfl_optimizer_apply: argument errors ---------------------------------------------------- */

typedef struct bad_inputs {
    tfl_ctx *other; /* another context */
    tfl_tensor *plain, *deferred, *ints, *ints_grad, *foreign, *foreign_grad;
} bad_inputs;

static void bad_make(tfl_ctx *ctx, bad_inputs *b)
{
    b->plain = vec_of(ctx, F64, D(1, 2, 3), 3);
    b->deferred = tfl_variable_new_init(
        ctx, F64, 1, (const int64_t[]){3}, &(tfl_initializer){.kind = TFL_INIT_ZEROS},
        &(tfl_variable_opts){.name = "D", .flags = TFL_VAR_DEFERRED});
    assert_non_null(b->deferred);
    assert_false(tfl_variable_is_initialized(b->deferred));
    b->ints = var_from(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){3}, (const int32_t[]){1, 2, 3},
                       &(tfl_variable_opts){.name = "I"});
    b->ints_grad = vec_i32(ctx, (const int32_t[]){1, 1, 1}, 3);
    b->other = tfl_ctx_new(NULL, NULL);
    assert_non_null(b->other);
    b->foreign = var_vec(b->other, F64, D(1, 2, 3), 3, "X");
    b->foreign_grad = vec_of(b->other, F64, D(1, 1, 1), 3); /* no frame in `other`: ours */
}

static void bad_free(bad_inputs *b)
{
    tfl_tensor_release(b->deferred);
    tfl_tensor_release(b->ints);
    tfl_tensor_release(b->foreign);
    tfl_tensor_release(b->foreign_grad);
    tfl_ctx_free(b->other);
}

/* The errors every apply checks: A (float32, (2, 3)) and B (float64, (3,)) with good
 * gradients ga and gb, each case with one thing wrong. */
static void expect_every_apply_error(tfl_optimizer *opt, const snapshot *s, tfl_tensor *A,
                                     tfl_tensor *B, tfl_tensor *ga, tfl_tensor *gb,
                                     const bad_inputs *b)
{
    tfl_ctx *ctx = tfl_tensor_ctx(A);
    tfl_status INV = TFL_INVALID_ARGUMENT;
    expect_apply_fails(opt, s, INV, -1, VARS(A), VARS(ga), "negative (-1)");
    expect_apply_fails(opt, s, INV, 2, NULL, VARS(ga, gb), "variable array is NULL");
    expect_apply_fails(opt, s, INV, 2, VARS(A, B), NULL, "gradient array is NULL");
    expect_apply_fails(opt, s, INV, 2, VARS(A, NULL), VARS(ga, gb), "variable 1 is NULL");
    expect_apply_fails(opt, s, INV, 2, VARS(A, b->plain), VARS(ga, gb),
                       "argument 1 is a tensor, not a variable");
    /* a snapshot or a view of a variable is not the variable */
    tfl_tensor *snap = tfl_variable_read(B), *view = tfl_reshape(ctx, B, 1, (const int64_t[]){3});
    assert_non_null(snap);
    assert_non_null(view);
    expect_apply_fails(opt, s, INV, 2, VARS(A, snap), VARS(ga, gb),
                       "argument 1 is a tensor, not a variable");
    expect_apply_fails(opt, s, INV, 2, VARS(view, A), VARS(gb, ga),
                       "argument 0 is a tensor, not a variable");
    expect_apply_fails(opt, s, TFL_FAILED_PRECONDITION, 3, VARS(A, B, b->deferred),
                       VARS(ga, gb, gb), "uninitialized", "D");
    /* shape: the message names the variable and both shapes */
    tfl_tensor *ga_t = mat_of(ctx, F32, 3, 2, D(1, 2, 3, 4, 5, 6));
    expect_apply_fails(opt, s, INV, 2, VARS(B, A), VARS(gb, ga_t), "'A:0'", "(3, 2)", "(2, 3)");
    tfl_tensor *gb_4 = vec_of(ctx, F64, D(1, 2, 3, 4), 4);
    expect_apply_fails(opt, s, INV, 2, VARS(A, B), VARS(ga, gb_4), "'B:0'", "(4,)", "(3,)");
    /* dtype */
    tfl_tensor *ga_64 = mat_of(ctx, F64, 2, 3, D(1, 2, 3, 4, 5, 6));
    expect_apply_fails(opt, s, INV, 2, VARS(B, A), VARS(gb, ga_64), "'A:0'", "float64", "float32");
    tfl_tensor *gb_32 = vec_of(ctx, F32, D(1, 2, 3), 3);
    expect_apply_fails(opt, s, INV, 2, VARS(A, B), VARS(ga, gb_32), "'B:0'", "float32", "float64");
    expect_apply_fails(opt, s, INV, 3, VARS(A, B, b->ints), VARS(ga, gb, b->ints_grad), "'I:0'",
                       "int32");
    /* repeated */
    expect_apply_fails(opt, s, INV, 3, VARS(A, B, A), VARS(ga, gb, ga), "'A:0'",
                       "listed more than once");
    expect_apply_fails(opt, s, INV, 3, VARS(B, A, B), VARS(gb, ga, gb), "'B:0'",
                       "listed more than once");
    /* no gradient at all */
    expect_apply_fails(opt, s, INV, 2, VARS(A, B), VARS(NULL, NULL),
                       "No gradients provided for any variable");
    expect_apply_fails(opt, s, INV, 0, NULL, NULL, "No gradients provided for any variable");
    /* another context */
    expect_apply_fails(opt, s, TFL_MISUSE, 2, VARS(A, b->foreign), VARS(ga, gb),
                       "variable 1 belongs to another context");
    expect_apply_fails(opt, s, TFL_MISUSE, 2, VARS(A, B), VARS(ga, b->foreign_grad), "'B:0'",
                       "another context");
    expect_no_error(ctx);
}

static void test_apply_errors_later(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    bad_inputs b;
    bad_make(ctx, &b);
    tfl_tensor *A, *B, *ga, *gb, *A2, *B2, *ga2, *gb2;
    make_ab(ctx, &A, &B, &ga, &gb);
    make_ab(ctx, &A2, &B2, &ga2, &gb2); /* a twin that sees only the good applies */
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    o.learning_rate = 0.1;
    o.amsgrad = true;
    o.clip_norm = 1;
    tfl_optimizer *opt = new_opt(ctx, &o), *twin = new_opt(ctx, &o);
    apply_ok(opt, 2, VARS(A, B), VARS(ga, gb));
    apply_ok(twin, 2, VARS(A2, B2), VARS(ga2, gb2));
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 9); /* + m, v, vhat, step each */

    snapshot s;
    snap_take(&s, opt, 2, VARS(A, B));
    expect_every_apply_error(opt, &s, A, B, ga, gb, &b);
    snap_free(&s);

    /* the failed calls left nothing behind: the next applies match the twin's */
    for (int i = 0; i < 2; i++) {
        apply_ok(opt, 2, VARS(B, A), VARS(gb, ga));
        apply_ok(twin, 2, VARS(A2, B2), VARS(ga2, gb2));
    }
    assert_int_equal(iterations_of(opt), 3);
    expect_same_bytes(A, A2);
    expect_same_bytes(B, B2);
    const char *slots[] = {"m", "v", "vhat"};
    for (int i = 0; i < 3; i++) {
        expect_same_bytes(tfl_optimizer_slot(opt, A, slots[i]),
                          tfl_optimizer_slot(twin, A2, slots[i]));
        expect_same_bytes(tfl_optimizer_slot(opt, B, slots[i]),
                          tfl_optimizer_slot(twin, B2, slots[i]));
    }
    tfl_optimizer_free(opt);
    tfl_optimizer_free(twin);
    tfl_tensor *all[] = {A, B, A2, B2};
    for (int i = 0; i < 4; i++)
        tfl_tensor_release(all[i]);
    bad_free(&b);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A failed first apply makes no slots: tfl_optimizer_variables stays 1. */
static void test_apply_errors_first(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    bad_inputs b;
    bad_make(ctx, &b);
    tfl_tensor *A, *B, *ga, *gb;
    make_ab(ctx, &A, &B, &ga, &gb);
    const tfl_optimizer_kind kinds[] = {SGD, ADAM, RMSPROP, ADAGRAD};
    for (int k = 0; k < 4; k++) {
        tfl_optimizer_opts o = tfl_optimizer_defaults(kinds[k], TFL_FORMULA_DEFAULT);
        if (kinds[k] == SGD) o.momentum = 0.9;
        if (kinds[k] == RMSPROP) o.centered = true;
        tfl_optimizer *opt = new_opt(ctx, &o);
        snapshot s;
        snap_take(&s, opt, 2, VARS(A, B));
        assert_int_equal(s.n_opt, 1);
        expect_every_apply_error(opt, &s, A, B, ga, gb, &b);
        assert_null(tfl_optimizer_slot(opt, A,
                                       kinds[k] == SGD       ? "momentum"
                                       : kinds[k] == ADAM    ? "m"
                                       : kinds[k] == RMSPROP ? "rms"
                                                             : "accumulator"));
        assert_int_equal(iterations_of(opt), 0);
        snap_free(&s);
        /* and then a good first apply works, from fresh slots */
        tfl_optimizer *fresh = new_opt(ctx, &o);
        tfl_tensor *A2, *B2, *ga2, *gb2;
        make_ab(ctx, &A2, &B2, &ga2, &gb2);
        apply_ok(opt, 2, VARS(A, B), VARS(ga, gb));
        apply_ok(fresh, 2, VARS(A2, B2), VARS(ga2, gb2));
        assert_int_equal(tfl_optimizer_variables(opt, NULL, 0),
                         tfl_optimizer_variables(fresh, NULL, 0));
        expect_same_bytes(A, A2);
        expect_same_bytes(B, B2);
        tfl_tensor *x[8], *y[8];
        int64_t n = tfl_optimizer_variables(opt, x, 8);
        assert_int_equal(tfl_optimizer_variables(fresh, y, 8), n);
        for (int64_t i = 1; i < n; i++)
            expect_same_bytes(x[i], y[i]);
        tfl_optimizer_free(opt);
        tfl_optimizer_free(fresh);
        /* A and B back to their starting values for the next kind */
        tfl_tensor_release(A2);
        tfl_tensor_release(B2);
        tfl_tensor_release(A);
        tfl_tensor_release(B);
        make_ab(ctx, &A, &B, &ga, &gb);
    }
    tfl_tensor_release(A);
    tfl_tensor_release(B);
    bad_free(&b);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A variable listed twice on its first apply, after other new ones: no slots for any. */
static void test_repeated_on_first_apply(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *A, *B, *ga, *gb;
    make_ab(ctx, &A, &B, &ga, &gb);
    tfl_tensor *C = var_vec(ctx, F64, D(3, 2, 1), 3, "C");
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TF);
    tfl_optimizer *opt = new_opt(ctx, &o);
    apply_ok(opt, 1, VARS(A), VARS(ga)); /* A has slots, B and C not yet */
    snapshot s;
    snap_take(&s, opt, 3, VARS(A, B, C));
    assert_int_equal(s.n_opt, 3);
    expect_apply_fails(opt, &s, TFL_INVALID_ARGUMENT, 4, VARS(B, A, C, C), VARS(gb, ga, gb, gb),
                       "'C:0'", "listed more than once");
    expect_apply_fails(opt, &s, TFL_INVALID_ARGUMENT, 3, VARS(C, B, C), VARS(gb, gb, gb), "'C:0'",
                       "listed more than once");
    assert_null(tfl_optimizer_slot(opt, B, "m"));
    assert_null(tfl_optimizer_slot(opt, C, "m"));
    snap_free(&s);
    apply_ok(opt, 3, VARS(C, B, A), VARS(gb, gb, ga));
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 7);
    tfl_optimizer_free(opt);
    tfl_tensor_release(A);
    tfl_tensor_release(B);
    tfl_tensor_release(C);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* optim.h lists "a repeated variable" among apply's errors, whatever its gradients: listed
 * twice with one NULL gradient it is refused too, on the first apply and on a later one. */
static void test_repeated_with_a_null_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *A, *B, *ga, *gb;
    make_ab(ctx, &A, &B, &ga, &gb);
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.5, 0.9);
    snapshot s;
    snap_take(&s, opt, 2, VARS(A, B));
    expect_apply_fails(opt, &s, TFL_INVALID_ARGUMENT, 3, VARS(A, B, A), VARS(ga, gb, NULL), "'A:0'",
                       "listed more than once");
    snap_free(&s);
    apply_ok(opt, 2, VARS(A, B), VARS(ga, gb));
    snap_take(&s, opt, 2, VARS(A, B));
    expect_apply_fails(opt, &s, TFL_INVALID_ARGUMENT, 3, VARS(B, A, B), VARS(NULL, ga, gb), "'B:0'",
                       "listed more than once");
    snap_free(&s);
    tfl_optimizer_free(opt);
    tfl_tensor_release(A);
    tfl_tensor_release(B);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Out of memory for the slots of the last new variable on a first apply: the slots made
 * before it go too, and nothing changed. */
static void test_first_apply_out_of_memory(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *A, *B, *ga, *gb;
    make_ab(ctx, &A, &B, &ga, &gb);
    const int64_t big = 1 << 16; /* 256 KiB of float32 */
    tfl_tensor *Big =
        tfl_variable_new_init(ctx, F32, 1, &big, &(tfl_initializer){.kind = TFL_INIT_ONES},
                              &(tfl_variable_opts){.name = "Big"});
    assert_non_null(Big);
    tfl_tensor *gbig = tfl_fill(ctx, F32, 1, &big, 0.5);
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    tfl_optimizer *opt = new_opt(ctx, &o);
    snapshot s;
    snap_take(&s, opt, 3, VARS(A, B, Big));
    tfl_alloc_empty_cache(ctx);
    g_alloc.fail_at_least = 128 << 10;
    expect_apply_fails(opt, &s, TFL_RESOURCE_EXHAUSTED, 3, VARS(A, B, Big), VARS(ga, gb, gbig),
                       "out of memory");
    assert_true(g_alloc.refused > 0);
    assert_null(tfl_optimizer_slot(opt, A, "m"));
    assert_null(tfl_optimizer_slot(opt, B, "m"));
    assert_null(tfl_optimizer_slot(opt, Big, "m"));
    g_alloc.fail_at_least = 0;
    snap_free(&s);
    apply_ok(opt, 3, VARS(A, B, Big), VARS(ga, gb, gbig));
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 10); /* m, v, step each */
    assert_int_equal(iterations_of(opt), 1);
    /* Adam's first step moves lr sign(g): 1 - 1e-3 */
    double x;
    assert_int_equal(tfl_tensor_get(Big, big - 1, &x), TFL_OK);
    assert_true(fabs(x - (1 - 1e-3)) < 1e-6);
    tfl_optimizer_free(opt);
    tfl_tensor_release(A);
    tfl_tensor_release(B);
    tfl_tensor_release(Big);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TC(fn) cmocka_unit_test_setup_teardown(fn, setup_counting, teardown)
    const struct CMUnitTest tests[] = {
        T(test_new_option_errors),
        T(test_apply_errors_later),
        T(test_apply_errors_first),
        T(test_repeated_on_first_apply),
        T(test_repeated_with_a_null_gradient),
        TC(test_first_apply_out_of_memory),
    };
#undef T
#undef TC
    return cmocka_run_group_tests(tests, NULL, NULL);
}
