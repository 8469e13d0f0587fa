/* test_optim_inplace.c: what a step costs and how it writes. The NULL-gradient skip and its
 * WARNING; no allocation after the first step (counted by the ctx's memory hooks and the
 * allocator's counters), the variable updated in place after a tape's gradient;
 * copy-on-write with a snapshot alive; strided gradients, a variable as its own gradient and
 * an updated variable as another's; and tfl_optimizer_minimize (the step, the loss value, the
 * trainable variables, its errors). */
#include "optim_helpers.h"

/* ---- the NULL-gradient skip ------------------------------------------------------------------ */

static log_capture g_log;

static int setup_log(void **state)
{
    memset(&g_log, 0, sizeof g_log);
    return setup_opts(
        state,
        &(tfl_ctx_opts){.log_fn = capture_log, .log_user = &g_log, .log_level = TFL_LOG_WARNING});
}

static void test_null_gradient_skips_with_warning(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = var_vec(ctx, F64, D(1, 2, 3), 3, "a");
    assert_int_equal(tfl_name_scope_push(ctx, "layer"), TFL_OK);
    tfl_tensor *b = var_vec(ctx, F32, D(4, 5), 2, "bias");
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    tfl_tensor *c = var_vec(ctx, F64, D(-1, -2), 2, "c");
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.5, 0.9);
    g_log.n = g_log.total = 0;
    apply_ok(opt, 3, VARS(a, b, c),
             VARS(vec_of(ctx, F64, D(1, 1, 1), 3), NULL, vec_of(ctx, F64, D(2, -2), 2)));
    assert_int_equal(count_lines_at(&g_log, "'layer/bias:0'", TFL_LOG_WARNING), 1);
    assert_int_equal(count_lines_at(&g_log, "Gradients do not exist", TFL_LOG_WARNING), 1);
    assert_int_equal(count_lines(&g_log, "'a:0'"), 0);
    assert_int_equal(count_lines(&g_log, "'c:0'"), 0);
    expect_vec(a, D(0.5, 1.5, 2.5), 3, 1e-15);
    expect_vec(b, D(4, 5), 2, 0);
    expect_vec(c, D(-2, -1), 2, 1e-15);
    assert_int_equal(iterations_of(opt), 1);
    assert_null(tfl_optimizer_slot(opt, b, "momentum"));
    assert_null(tfl_optimizer_slot(opt, b, "step"));
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 5); /* + momentum, step of a, c */
    /* two skipped: two lines, each naming its variable */
    g_log.n = g_log.total = 0;
    apply_ok(opt, 3, VARS(a, b, c), VARS(NULL, NULL, vec_of(ctx, F64, D(2, -2), 2)));
    assert_int_equal(count_lines_at(&g_log, "Gradients do not exist", TFL_LOG_WARNING), 2);
    assert_int_equal(count_lines_at(&g_log, "'a:0'", TFL_LOG_WARNING), 1);
    assert_int_equal(count_lines_at(&g_log, "'layer/bias:0'", TFL_LOG_WARNING), 1);
    expect_vec(a, D(0.5, 1.5, 2.5), 3, 1e-15);
    expect_vec(b, D(4, 5), 2, 0);
    expect_vec(c, D(-2 - 0.5 * 3.8, -1 + 0.5 * 3.8), 2, 1e-14); /* b = 0.9 * 2 + 2 */
    assert_int_equal(iterations_of(opt), 2);
    /* no gradient at all: an error, and no warning */
    g_log.n = g_log.total = 0;
    assert_int_equal(tfl_optimizer_apply(opt, 2, VARS(a, b), VARS(NULL, NULL)),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "No gradients provided for any variable");
    assert_int_equal(count_lines(&g_log, "Gradients do not exist"), 0);
    assert_int_equal(iterations_of(opt), 2);
    tfl_optimizer_free(opt);
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(c);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- no allocation after the first step ------------------------------------------------------ */

static tfl_alloc_stats stats(tfl_ctx *ctx)
{
    tfl_alloc_stats s;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s), TFL_OK);
    return s;
}

static void test_no_allocation_after_first_step(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_optimizer_opts cfg[5];
    cfg[0] = tfl_optimizer_defaults(ADAM, TORCH);
    cfg[0].clip_norm = 1;
    cfg[1] = tfl_optimizer_defaults(SGD, TORCH);
    cfg[1].momentum = 0.9;
    cfg[1].nesterov = true;
    cfg[1].clip_norm = 1;
    cfg[2] = tfl_optimizer_defaults(RMSPROP, TF);
    cfg[2].centered = true;
    cfg[2].momentum = 0.5;
    cfg[2].clip_norm = 1;
    cfg[3] = tfl_optimizer_defaults(ADAMW, TF);
    cfg[3].amsgrad = true;
    cfg[3].global_clip_norm = 1;
    cfg[3].schedule =
        (tfl_schedule){.kind = TFL_SCHEDULE_COSINE, .decay_steps = 3, .warmup_steps = 1};
    cfg[4] = tfl_optimizer_defaults(ADAGRAD, TORCH);
    cfg[4].clip_value = 0.1;
    for (int c = 0; c < 5; c++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *A, *B, *ga, *gb;
        make_ab(ctx, &A, &B, &ga, &gb);
        const int64_t n = 40000;
        tfl_tensor *C =
            tfl_variable_new_init(ctx, F32, 1, &n, &(tfl_initializer){.kind = TFL_INIT_ONES},
                                  &(tfl_variable_opts){.name = "C"});
        tfl_tensor *gc = tfl_fill(ctx, F32, 1, &n, 0.25);
        tfl_tensor *unused = var_vec(ctx, F64, D(7), 1, "unused");
        tfl_optimizer *opt = new_opt(ctx, &cfg[c]);
        tfl_tensor *const vars[4] = {A, unused, C, B}, *const grads[4] = {ga, NULL, gc, gb};
        apply_ok(opt, 4, vars, grads);
        tfl_tensor *ov[16];
        int64_t nov = tfl_optimizer_variables(opt, ov, 16);
        assert_true(nov >= 1 && nov <= 16);
        const void *ptr[4], *optr[16];
        for (int i = 0; i < 4; i++)
            ptr[i] = tfl_tensor_data_ptr(vars[i]);
        for (int64_t i = 0; i < nov; i++)
            optr[i] = tfl_tensor_data_ptr(ov[i]);
        tfl_alloc_stats s0 = stats(ctx);
        alloc_counter h0 = g_alloc;
        for (int step = 0; step < 3; step++)
            apply_ok(opt, 4, vars, grads);
        tfl_alloc_stats s1 = stats(ctx);
        if (g_alloc.allocs != h0.allocs || g_alloc.frees != h0.frees ||
            s1.fresh_allocs != s0.fresh_allocs || s1.cache_hits != s0.cache_hits ||
            s1.frees != s0.frees) {
            print_error("%s: allocs %llu -> %llu, frees %llu -> %llu, fresh %llu -> %llu, "
                        "hits %llu -> %llu\n",
                        tfl_optimizer_name(opt), (unsigned long long)h0.allocs,
                        (unsigned long long)g_alloc.allocs, (unsigned long long)h0.frees,
                        (unsigned long long)g_alloc.frees, (unsigned long long)s0.fresh_allocs,
                        (unsigned long long)s1.fresh_allocs, (unsigned long long)s0.cache_hits,
                        (unsigned long long)s1.cache_hits);
            fail();
        }
        assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
        assert_int_equal(s1.live_tensors, s0.live_tensors);
        for (int i = 0; i < 4; i++)
            assert_ptr_equal(tfl_tensor_data_ptr(vars[i]), ptr[i]);
        for (int64_t i = 0; i < nov; i++)
            assert_ptr_equal(tfl_tensor_data_ptr(ov[i]), optr[i]);
        assert_int_equal(iterations_of(opt), 4);
        tfl_optimizer_free(opt);
        tfl_tensor_release(A);
        tfl_tensor_release(B);
        tfl_tensor_release(C);
        tfl_tensor_release(unused);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

/* The usual training step: forward under a tape, gradient, apply. The apply updates the
 * variables in place (the tape released its snapshots in the gradient call) and, after the
 * first step, allocates nothing. */
static void test_training_step_in_place(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *w = var_vec(ctx, F64, D(1, -2, 3), 3, "w");
    tfl_tensor *bias = var_vec(ctx, F64, D(0.5, 0.5, 0.5), 3, "bias");
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.1, 0.9);
    double pw[3] = {1, -2, 3}, pb[3] = {0.5, 0.5, 0.5}, bw[3] = {0}, bb[3] = {0};
    const double cv[3] = {1, 0.5, -1}, dv[3] = {2, -1, 0.5};
    for (int step = 0; step < 4; step++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *c = vec_of(ctx, F64, cv, 3), *d = vec_of(ctx, F64, dv, 3);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_non_null(tape);
        /* loss = sum(c w^2) + sum(d bias): dw = 2 c w, dbias = d */
        tfl_tensor *loss =
            tfl_add(ctx, tfl_reduce_sum(ctx, tfl_mul(ctx, c, tfl_mul(ctx, w, w)), 0, NULL, false),
                    tfl_reduce_sum(ctx, tfl_mul(ctx, d, bias), 0, NULL, false));
        assert_non_null(loss);
        tfl_tape_end(tape);
        tfl_tensor *g[2];
        assert_int_equal(
            tfl_tape_gradient(tape, loss, 2, (const tfl_tensor *const[]){w, bias}, g, 0), TFL_OK);
        const void *pw0 = tfl_tensor_data_ptr(w), *pb0 = tfl_tensor_data_ptr(bias);
        alloc_counter h0 = g_alloc;
        tfl_alloc_stats s0 = stats(ctx);
        apply_ok(opt, 2, VARS(w, bias), g);
        assert_ptr_equal(tfl_tensor_data_ptr(w), pw0);
        assert_ptr_equal(tfl_tensor_data_ptr(bias), pb0);
        if (step > 0) {
            tfl_alloc_stats s1 = stats(ctx);
            assert_int_equal(g_alloc.allocs, h0.allocs);
            assert_int_equal(s1.fresh_allocs + s1.cache_hits, s0.fresh_allocs + s0.cache_hits);
        }
        for (int i = 0; i < 3; i++) {
            double gw = 2 * cv[i] * pw[i], gbv = dv[i];
            bw[i] = step ? 0.9 * bw[i] + gw : gw;
            bb[i] = step ? 0.9 * bb[i] + gbv : gbv;
            pw[i] -= 0.1 * bw[i];
            pb[i] -= 0.1 * bb[i];
        }
        expect_vec(w, pw, 3, 1e-14);
        expect_vec(bias, pb, 3, 1e-14);
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    tfl_optimizer_free(opt);
    tfl_tensor_release(w);
    tfl_tensor_release(bias);
}

/* ---- copy-on-write --------------------------------------------------------------------------- */

static void test_snapshot_keeps_old_value(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *v = var_vec(ctx, F64, D(1, 2, 3), 3, "v");
    tfl_optimizer *opt = sgd(ctx, TF, 0.5, 0.5);
    tfl_tensor *g = vec_of(ctx, F64, D(1, -1, 2), 3);
    apply_ok(opt, 1, VARS(v), VARS(g)); /* m = -0.5 g, v = (0.5, 2.5, 2) */
    expect_vec(v, D(0.5, 2.5, 2), 3, 1e-15);
    tfl_tensor *mom = tfl_optimizer_slot(opt, v, "momentum");

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const void *old = tfl_tensor_data_ptr(v);
    tfl_tensor *snap = tfl_variable_read(v);
    tfl_tensor *view = tfl_reshape(ctx, v, 2, (const int64_t[]){3, 1});
    tfl_tensor *msnap = tfl_variable_read(mom);
    tfl_tensor *isnap = tfl_variable_read(tfl_optimizer_iterations(opt));
    assert_non_null(snap);
    assert_non_null(view);
    assert_non_null(msnap);
    assert_non_null(isnap);
    assert_ptr_equal(tfl_tensor_data_ptr(snap), old);
    apply_ok(opt, 1, VARS(v), VARS(g)); /* m = -0.25 g - 0.5 g = -0.75 g */
    expect_vec(v, D(-0.25, 3.25, 0.5), 3, 1e-15);
    expect_vec(mom, D(-0.75, 0.75, -1.5), 3, 1e-15);
    assert_int_equal(iterations_of(opt), 2);
    expect_vec(snap, D(0.5, 2.5, 2), 3, 0);
    expect_vec(view, D(0.5, 2.5, 2), 3, 0);
    expect_vec(msnap, D(-0.5, 0.5, -1), 3, 0);
    expect_vec(isnap, D(1), 1, 0);
    assert_ptr_equal(tfl_tensor_data_ptr(snap), old);
    assert_ptr_not_equal(tfl_tensor_data_ptr(v), old); /* moved */
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    /* no snapshot left: in place again */
    const void *now = tfl_tensor_data_ptr(v);
    apply_ok(opt, 1, VARS(v), VARS(g)); /* m = -0.375 g - 0.5 g = -0.875 g */
    assert_ptr_equal(tfl_tensor_data_ptr(v), now);
    expect_vec(v, D(-1.125, 4.125, -1.25), 3, 1e-15);
    tfl_optimizer_free(opt);
    tfl_tensor_release(v);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- strided gradients, a variable as its own gradient --------------------------------------- */

static void test_strided_gradient_matches_contiguous(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double p0[6] = {1, 2, 3, 4, 5, 6};
    for (int dt = 0; dt < 2; dt++) {
        tfl_dtype dtype = dt ? F32 : F64;
        tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
        o.learning_rate = 0.1;
        o.clip_norm = 2;
        tfl_optimizer *o1 = new_opt(ctx, &o), *o2 = new_opt(ctx, &o);
        tfl_tensor *v1 = var_from(ctx, F64, 2, (const int64_t[]){3, 2}, p0,
                                  &(tfl_variable_opts){.name = "v1", .dtype = dtype});
        tfl_tensor *v2 = var_from(ctx, F64, 2, (const int64_t[]){3, 2}, p0,
                                  &(tfl_variable_opts){.name = "v2", .dtype = dtype});
        /* a transposed (2, 3) and its contiguous copy */
        tfl_tensor *g = mat_of(ctx, dtype, 2, 3, D(0.5, -1, 2, 3, -0.25, 1));
        tfl_tensor *gt = tfl_transpose(ctx, g, NULL);
        assert_non_null(gt);
        assert_false(tfl_tensor_is_contiguous(gt));
        tfl_tensor *gc = mat_of(ctx, dtype, 3, 2, D(0.5, 3, -1, -0.25, 2, 1));
        /* a column slice of a (3, 4) and its copy */
        tfl_tensor *wide = mat_of(ctx, dtype, 3, 4, D(9, 1, 2, 9, 9, 3, 4, 9, 9, 5, -6, 9));
        tfl_tensor *gs = tfl_slice(ctx, wide, (const int64_t[]){0, 1}, (const int64_t[]){3, 2});
        assert_non_null(gs);
        assert_false(tfl_tensor_is_contiguous(gs));
        tfl_tensor *gsc = mat_of(ctx, dtype, 3, 2, D(1, 2, 3, 4, 5, -6));
        void *before = host_bytes(gt, NULL);
        apply_ok(o1, 1, VARS(v1), VARS(gt));
        apply_ok(o2, 1, VARS(v2), VARS(gc));
        apply_ok(o1, 1, VARS(v1), VARS(gs));
        apply_ok(o2, 1, VARS(v2), VARS(gsc));
        expect_same_bytes(v1, v2);
        expect_same_bytes(tfl_optimizer_slot(o1, v1, "m"), tfl_optimizer_slot(o2, v2, "m"));
        expect_same_bytes(tfl_optimizer_slot(o1, v1, "v"), tfl_optimizer_slot(o2, v2, "v"));
        size_t nb;
        void *after = host_bytes(gt, &nb);
        assert_memory_equal(before, after, nb);
        free(before);
        free(after);
        double x;
        assert_int_equal(tfl_tensor_get(v1, 0, &x), TFL_OK);
        assert_true(x < 1 - 0.1); /* it moved */
        tfl_optimizer_free(o1);
        tfl_optimizer_free(o2);
        tfl_tensor_release(v1);
        tfl_tensor_release(v2);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_variable_as_its_own_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    /* SGD: p - lr p */
    tfl_tensor *v = var_vec(ctx, F64, D(1, -2, 4), 3, "v");
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.25, 0);
    apply_ok(opt, 1, VARS(v), VARS(v));
    expect_vec(v, D(0.75, -1.5, 3), 3, 0);
    /* a snapshot of itself: the same, and the snapshot keeps the old value */
    tfl_tensor *snap = tfl_variable_read(v);
    apply_ok(opt, 1, VARS(v), VARS(snap));
    expect_vec(v, D(0.5625, -1.125, 2.25), 3, 0);
    expect_vec(snap, D(0.75, -1.5, 3), 3, 0);
    tfl_optimizer_free(opt);

    /* torch SGD with momentum: b = p, p -= lr b; then b = 0.9 b + p */
    tfl_tensor *u = var_vec(ctx, F32, D(1, -2, 4), 3, "u");
    opt = sgd(ctx, TORCH, 0.5, 0.9);
    apply_ok(opt, 1, VARS(u), VARS(u));
    expect_vec(u, D(0.5, -1, 2), 3, 0);
    expect_vec(tfl_optimizer_slot(opt, u, "momentum"), D(1, -2, 4), 3, 0);
    apply_ok(opt, 1, VARS(u), VARS(u)); /* b = 0.9 + 0.5 = 1.4 p0 */
    expect_vec(u, D(0.5 - 0.7, -1 + 1.4, 2 - 2.8), 3, 1e-6);
    tfl_optimizer_free(opt);

    /* a square variable and its own transpose: p - lr p^T */
    tfl_tensor *m = var_from(ctx, F64, 2, (const int64_t[]){2, 2}, D(1, 2, 3, 4),
                             &(tfl_variable_opts){.name = "m"});
    opt = sgd(ctx, TF, 0.5, 0);
    apply_ok(opt, 1, VARS(m), VARS(tfl_transpose(ctx, m, NULL)));
    expect_vec(m, D(0.5, 0.5, 2, 2), 4, 0);
    /* and a same-shape reshape view of it */
    apply_ok(opt, 1, VARS(m), VARS(tfl_reshape(ctx, m, 2, (const int64_t[]){2, 2})));
    expect_vec(m, D(0.25, 0.25, 1, 1), 4, 0);
    tfl_optimizer_free(opt);
    /* Adam: the first step moves lr sign(p) */
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    o.learning_rate = 0.1;
    opt = new_opt(ctx, &o);
    apply_ok(opt, 1, VARS(m), VARS(m));
    expect_vec(m, D(0.15, 0.15, 0.9, 0.9), 4, 1e-7);
    expect_vec(tfl_optimizer_slot(opt, m, "m"), D(0.025, 0.025, 0.1, 0.1), 4, 1e-15);
    tfl_optimizer_free(opt);
    tfl_tensor_release(v);
    tfl_tensor_release(u);
    tfl_tensor_release(m);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A variable that is updated by the apply, given as another variable's gradient: the
 * gradient is its value when apply was called, whatever the order of the list (apply.c
 * copies a gradient sharing memory with what the kernels write, but only for the variable's
 * own storage and slots). Small tensors (one thread) and large ones (split over threads). */
static void test_updated_variable_as_another_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const int64_t sizes[2] = {3, 50000};
    for (int si = 0; si < 2; si++)
        for (int order = 0; order < 2; order++) {
            const int64_t n = sizes[si];
            tfl_tensor *a =
                tfl_variable_new_init(ctx, F64, 1, &n, &(tfl_initializer){.kind = TFL_INIT_ONES},
                                      &(tfl_variable_opts){.name = "a"});
            tfl_tensor *b =
                tfl_variable_new_init(ctx, F64, 1, &n, &(tfl_initializer){.kind = TFL_INIT_ZEROS},
                                      &(tfl_variable_opts){.name = "b"});
            tfl_tensor *g = tfl_fill(ctx, F64, 1, &n, 4);
            tfl_optimizer *opt = sgd(ctx, TORCH, 0.5, 0);
            if (order == 0)
                apply_ok(opt, 2, VARS(a, b), VARS(g, a));
            else
                apply_ok(opt, 2, VARS(b, a), VARS(a, g));
            /* a = 1 - 0.5 * 4 = -1; b = 0 - 0.5 * a_before = -0.5 */
            double x;
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; i++) {
                assert_int_equal(tfl_tensor_get(b, i, &x), TFL_OK);
                if (x != -0.5) bad = i;
            }
            if (bad >= 0) {
                print_error("n %lld, %s first: b[%lld] = %g, want -0.5 (a's value before the "
                            "apply)\n",
                            (long long)n, order ? "b" : "a", (long long)bad, x);
                fail();
            }
            assert_int_equal(tfl_tensor_get(a, n - 1, &x), TFL_OK);
            assert_true(x == -1);
            tfl_optimizer_free(opt);
            tfl_tensor_release(a);
            tfl_tensor_release(b);
        }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- tfl_optimizer_minimize ------------------------------------------------------------------ */

typedef struct loss_user {
    tfl_tensor *w[2], *fixed;
    int mode;
    int calls;
} loss_user;

static tfl_tensor *sum_sq(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_reduce_sum(ctx, tfl_mul(ctx, x, x), 0, NULL, false);
}

static tfl_tensor *loss_fn(tfl_ctx *ctx, void *user)
{
    loss_user *u = user;
    u->calls++;
    switch (u->mode) {
    case 0: /* sum w0^2 + sum w1^2 + sum fixed^2 */
        return tfl_add(ctx, tfl_add(ctx, sum_sq(ctx, u->w[0]), sum_sq(ctx, u->w[1])),
                       sum_sq(ctx, u->fixed));
    case 1:
        return tfl_mul(ctx, u->w[0], u->w[0]); /* not a scalar */
    case 2:
        return NULL; /* and no error */
    case 3:
        return tfl_matmul(ctx, u->w[0], u->w[0], 0); /* fails: rank 1 */
    case 4:
        return sum_sq(ctx, u->w[0]); /* w1 unused */
    case 5:
        return sum_sq(ctx, u->fixed); /* no variable used */
    }
    return NULL;
}

static void make_loss_user(tfl_ctx *ctx, loss_user *u)
{
    memset(u, 0, sizeof *u);
    /* first, so that the first variables of TFL_GLOBAL_VARIABLES are not the trainable ones */
    u->fixed = var_from(ctx, F64, 1, (const int64_t[]){2}, D(10, 20),
                        &(tfl_variable_opts){.name = "fixed", .flags = TFL_VAR_NOT_TRAINABLE});
    u->w[0] = var_vec(ctx, F64, D(1, -2, 3), 3, "w0");
    u->w[1] = var_vec(ctx, F64, D(0.5, 4), 2, "w1");
}

static void free_loss_user(loss_user *u)
{
    tfl_tensor_release(u->w[0]);
    tfl_tensor_release(u->w[1]);
    tfl_tensor_release(u->fixed);
}

static void test_minimize(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    loss_user u;
    make_loss_user(ctx, &u);
    tfl_optimizer *opt = sgd(ctx, TORCH, 0.1, 0);
    int depth = tfl_frame_depth(ctx);
    uint64_t live = live_tensors(ctx);
    /* explicit list: w <- w - 0.1 * 2 w = 0.8 w; the loss before the step */
    double loss = 0;
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, &loss), TFL_OK);
    assert_true(fabs(loss - (1 + 4 + 9 + 0.25 + 16 + 100 + 400)) < 1e-5);
    expect_vec(u.w[0], D(0.8, -1.6, 2.4), 3, 1e-15);
    expect_vec(u.w[1], D(0.4, 3.2), 2, 1e-15);
    expect_vec(u.fixed, D(10, 20), 2, 0);
    assert_int_equal(iterations_of(opt), 1);
    assert_int_equal(tfl_frame_depth(ctx), depth);
    /* SGD without momentum: no tensor slots, only torch's per-variable step counts */
    assert_int_equal(live_tensors(ctx), live + 2);
    /* n = 0, NULL: the trainable variables (not `fixed`); loss_value optional */
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 0, NULL, NULL), TFL_OK);
    expect_vec(u.w[0], D(0.64, -1.28, 1.92), 3, 1e-15);
    expect_vec(u.w[1], D(0.32, 2.56), 2, 1e-15);
    expect_vec(u.fixed, D(10, 20), 2, 0);
    assert_int_equal(iterations_of(opt), 2);
    assert_int_equal(u.calls, 2);
    tfl_optimizer_free(opt);

    /* Adam through minimize: the same as tape + apply by hand */
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TF);
    o.learning_rate = 0.05;
    tfl_optimizer *a = new_opt(ctx, &o), *b = new_opt(ctx, &o);
    tfl_tensor *w2 = var_vec(ctx, F64, D(0.64, -1.28, 1.92), 3, "w2");
    u.mode = 4;
    for (int step = 0; step < 2; step++) {
        assert_int_equal(tfl_optimizer_minimize(a, loss_fn, &u, 1, u.w, NULL), TFL_OK);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *g = tfl_mul(ctx, w2, tfl_scalar_f64(ctx, 2)); /* d sum w^2 = 2 w */
        apply_ok(b, 1, VARS(w2), VARS(g));
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        double x, y;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(tfl_tensor_get(u.w[0], i, &x), TFL_OK);
            assert_int_equal(tfl_tensor_get(w2, i, &y), TFL_OK);
            assert_true(fabs(x - y) < 1e-15);
        }
    }
    tfl_optimizer_free(a);
    tfl_optimizer_free(b);
    tfl_tensor_release(w2);
    free_loss_user(&u);
}

static void test_minimize_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    loss_user u;
    make_loss_user(ctx, &u);
    tfl_optimizer_opts o = tfl_optimizer_defaults(ADAM, TORCH);
    tfl_optimizer *opt = new_opt(ctx, &o);
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, NULL), TFL_OK);
    snapshot s;
    snap_take(&s, opt, 2, u.w);
    uint64_t live = live_tensors(ctx);
    int depth = tfl_frame_depth(ctx);
    double loss = -7;

    u.mode = 1;
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, &loss), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "must be a scalar", "(3,)");
    u.mode = 2;
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, &loss), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "returned NULL without an error");
    u.mode = 3; /* the loss function's own error comes back */
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, &loss), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "MatMul");
    u.mode = 5; /* no variable in the loss: every gradient NULL */
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, NULL), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "No gradients provided for any variable");
    u.mode = 0;
    assert_int_equal(tfl_optimizer_minimize(opt, NULL, &u, 2, u.w, &loss), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "loss function is NULL");
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, -1, u.w, &loss),
                     TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "n = -1");
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, NULL, &loss),
                     TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "n = 2", "NULL");
    /* a variable twice */
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, VARS(u.w[0], u.w[0]), NULL),
                     TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'w0:0'", "listed more than once");
    assert_int_equal(tfl_optimizer_minimize(NULL, loss_fn, &u, 2, u.w, &loss),
                     TFL_INVALID_ARGUMENT);
    expect_no_error(ctx);

    snap_check(&s, opt);
    snap_free(&s);
    assert_int_equal(iterations_of(opt), 1);
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(tfl_frame_depth(ctx), depth);
    tfl_optimizer_free(opt);
    free_loss_user(&u);
}

static void test_minimize_unused_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    loss_user u;
    make_loss_user(ctx, &u);
    tfl_optimizer *opt = sgd(ctx, TF, 0.25, 0);
    u.mode = 4; /* w1 not used: skipped with a warning */
    double loss = 0;
    g_log.n = g_log.total = 0;
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 2, u.w, &loss), TFL_OK);
    assert_true(fabs(loss - 14) < 1e-12);
    expect_vec(u.w[0], D(0.5, -1, 1.5), 3, 1e-15);
    expect_vec(u.w[1], D(0.5, 4), 2, 0);
    assert_int_equal(iterations_of(opt), 1);
    assert_int_equal(count_lines_at(&g_log, "'w1:0'", TFL_LOG_WARNING), 1);
    assert_int_equal(count_lines(&g_log, "'w0:0'"), 0);
    /* the same through the trainable collection */
    g_log.n = g_log.total = 0;
    assert_int_equal(tfl_optimizer_minimize(opt, loss_fn, &u, 0, NULL, &loss), TFL_OK);
    assert_true(fabs(loss - 3.5) < 1e-12);
    expect_vec(u.w[0], D(0.25, -0.5, 0.75), 3, 1e-15);
    expect_vec(u.w[1], D(0.5, 4), 2, 0);
    assert_int_equal(count_lines_at(&g_log, "'w1:0'", TFL_LOG_WARNING), 1);
    assert_int_equal(count_lines(&g_log, "'fixed:0'"), 0); /* not trainable: not listed */
    assert_int_equal(iterations_of(opt), 2);
    tfl_optimizer_free(opt);
    free_loss_user(&u);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TC(fn) cmocka_unit_test_setup_teardown(fn, setup_counting, teardown)
#define TL(fn) cmocka_unit_test_setup_teardown(fn, setup_log, teardown)
    const struct CMUnitTest tests[] = {
        TL(test_null_gradient_skips_with_warning),
        TC(test_no_allocation_after_first_step),
        TC(test_training_step_in_place),
        T(test_snapshot_keeps_old_value),
        T(test_strided_gradient_matches_contiguous),
        T(test_variable_as_its_own_gradient),
        T(test_updated_variable_as_another_gradient),
        T(test_minimize),
        T(test_minimize_errors),
        TL(test_minimize_unused_variable),
    };
#undef T
#undef TC
#undef TL
    return cmocka_run_group_tests(tests, NULL, NULL);
}
