/* test_mixed_precision.c: the bfloat16 and float16 policies (tfl_ctx_set_precision) and
 * dynamic loss scaling (tfl_optimizer_opts.loss_scale). The policies change what runs on a
 * GPU, so the test loads the fake GPU module (tests/common/fake_gpu_module.c: a GPU:0 of host
 * memory with the CPU's kernels, through TFL_GPU_MODULE) and checks, op by op and through
 * training, the dtypes each op computes in, the values against float32 within the 16-bit
 * formats' rounding, float32 gradients for float32 variables, and that the CPU's ops are left
 * alone. The loss scaler's arithmetic is checked on CPU:0 variables, step by step. */
#include "fit_rig.h"

#include <float.h>
#include <math.h>

#ifndef TFL_FAKE_GPU_MODULE
#error "TFL_FAKE_GPU_MODULE (the path of libtfl_fake_gpu.so) must be defined"
#endif

static const tfl_precision k_mixed[2] = {TFL_PRECISION_BFLOAT16, TFL_PRECISION_FLOAT16};
static const tfl_dtype k_half[2] = {TFL_DTYPE_BFLOAT16, TFL_DTYPE_FLOAT16};
/* the unit roundoff of each format: 2^-8 (8 significant bits), 2^-11 (11) */
static const double k_eps[2] = {1.0 / 256, 1.0 / 2048};

static double get(const tfl_tensor *t, int64_t i)
{
    double v = NAN;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

static tfl_tensor *values(tfl_ctx *ctx, int rank, const int64_t *shape, uint64_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    float *v = malloc(sizeof(float) * (size_t)n);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((seed >> 40) & 0xFFFF) / 32768.0f - 1.0f;
    }
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, v);
    free(v);
    assert_non_null(t);
    return t;
}

static tfl_tensor *variable(tfl_ctx *ctx, const char *name, int rank, const int64_t *shape,
                            uint64_t seed)
{
    tfl_tensor *v =
        tfl_variable_new(ctx, values(ctx, rank, shape, seed), &(tfl_variable_opts){.name = name});
    assert_non_null(v);
    return v; /* the caller's to release; its initial value the frame's */
}

/* relu(x W + b), its mean, and the gradients of the mean for W and b, under the context's
 * policy; dtypes of the product and of the loss into *prod_dt / *loss_dt */
static void dense_step(tfl_ctx *ctx, tfl_tensor *x, tfl_tensor *w, tfl_tensor *b, double *loss,
                       tfl_tensor **grads, tfl_dtype *prod_dt, tfl_dtype *loss_dt)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_non_null(tape);
    tfl_tensor *prod = tfl_matmul(ctx, x, w, 0);
    assert_non_null(prod);
    tfl_tensor *h = tfl_relu(ctx, tfl_add(ctx, prod, b));
    tfl_tensor *l = tfl_reduce_mean(ctx, h, 0, NULL, false);
    assert_non_null(l);
    tfl_tape_end(tape);
    *prod_dt = tfl_tensor_dtype(prod);
    *loss_dt = tfl_tensor_dtype(l);
    *loss = get(l, 0);
    assert_int_equal(tfl_tape_gradient(tape, l, 2, (const tfl_tensor *[]){w, b}, grads, 0), TFL_OK);
    tfl_tape_free(tape);
}

/* On GPU:0 a mixed policy runs the product and the bias add in 16 bits and the mean in
 * float32; the gradients of the float32 variables come back float32, within the format's
 * rounding of the float32 policy's; on CPU:0 the same ops give the float32 policy's numbers
 * exactly. */
static void mixed_policies_cast_per_op(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_true(tfl_device_count(ctx) >= 2); /* CPU:0 and the fake GPU:0 */
    for (int dev = 0; dev < 2; dev++) {
        assert_int_equal(tfl_device_scope_push(ctx, dev ? "CPU:0" : "GPU:0"), TFL_OK);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *x = values(ctx, 2, (int64_t[]){16, 24}, 1);
        tfl_tensor *w = variable(ctx, "w", 2, (int64_t[]){24, 8}, 2);
        tfl_tensor *b = variable(ctx, "b", 1, (int64_t[]){8}, 3);
        assert_string_equal(tfl_tensor_device(w), dev ? "CPU:0" : "GPU:0");
        double ref_loss;
        tfl_tensor *ref[2];
        tfl_dtype pd, ld;
        assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
        dense_step(ctx, x, w, b, &ref_loss, ref, &pd, &ld);
        assert_int_equal(pd, TFL_DTYPE_FLOAT32);
        for (int p = 0; p < 2; p++) {
            assert_int_equal(tfl_ctx_set_precision(ctx, k_mixed[p]), TFL_OK);
            double loss;
            tfl_tensor *g[2];
            dense_step(ctx, x, w, b, &loss, g, &pd, &ld);
            assert_int_equal(pd, dev ? TFL_DTYPE_FLOAT32 : k_half[p]);
            assert_int_equal(ld, TFL_DTYPE_FLOAT32);
            /* the mean of 128 values each rounded a few times: within 4 eps of its scale */
            double tol = dev ? 0 : 4 * k_eps[p] * fabs(ref_loss);
            if (fabs(loss - ref_loss) > tol)
                fail_msg("%s policy %d: loss %.9g, float32 %.9g", dev ? "CPU" : "GPU", p, loss,
                         ref_loss);
            for (int v = 0; v < 2; v++) {
                assert_int_equal(tfl_tensor_dtype(g[v]), TFL_DTYPE_FLOAT32);
                int64_t n = tfl_tensor_numel(g[v]);
                double scale = 0;
                for (int64_t i = 0; i < n; i++)
                    scale = fmax(scale, fabs(get(ref[v], i)));
                for (int64_t i = 0; i < n; i++) {
                    double a = get(g[v], i), r = get(ref[v], i);
                    /* a sum over 16 rows of products rounded to 16 bits: 8 eps of the largest */
                    if (fabs(a - r) > (dev ? 0 : 8 * k_eps[p] * scale))
                        fail_msg("%s policy %d: gradient %d[%lld] %.9g, float32 %.9g",
                                 dev ? "CPU" : "GPU", p, v, (long long)i, a, r);
                }
            }
            if (dev == 0) { /* the 16-bit rounding shows: not the float32 numbers exactly */
                bool differs = false;
                for (int64_t i = 0; i < tfl_tensor_numel(g[0]); i++)
                    differs |= get(g[0], i) != get(ref[0], i);
                assert_true(differs);
            }
        }
        assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
        tfl_tensor_release(w);
        tfl_tensor_release(b);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    }
}

/* Which dtype each kind of op computes in under a mixed policy on GPU:0: sums, means and
 * softmax of 16-bit inputs give float32; an elementwise op of a 16-bit and a float32 input
 * gives 16 bits; the same ops under float32 keep the dtypes they are given (no promotion). */
static void mixed_policies_pick_dtypes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = values(ctx, 2, (int64_t[]){4, 6}, 5);
    for (int p = 0; p < 2; p++) {
        tfl_tensor *h = tfl_cast(ctx, x, k_half[p]);
        assert_int_equal(tfl_ctx_set_precision(ctx, k_mixed[p]), TFL_OK);
        assert_int_equal(tfl_tensor_dtype(tfl_reduce_sum(ctx, h, 0, NULL, false)),
                         TFL_DTYPE_FLOAT32);
        assert_int_equal(tfl_tensor_dtype(tfl_softmax(ctx, h, -1)), TFL_DTYPE_FLOAT32);
        assert_int_equal(tfl_tensor_dtype(tfl_log_softmax(ctx, h, -1)), TFL_DTYPE_FLOAT32);
        assert_int_equal(tfl_tensor_dtype(tfl_reduce_max(ctx, h, 0, NULL, false)), k_half[p]);
        assert_int_equal(tfl_tensor_dtype(tfl_mul(ctx, h, x)), k_half[p]);
        assert_int_equal(tfl_tensor_dtype(tfl_add(ctx, x, x)), TFL_DTYPE_FLOAT32);
        /* the norms: x, gamma and beta all 16-bit are cast alike, to float32 */
        tfl_tensor *g = tfl_cast(ctx, values(ctx, 1, (int64_t[]){6}, 6), k_half[p]);
        tfl_tensor *mean = NULL;
        tfl_tensor *bn = tfl_batch_norm_training(ctx, h, g, g, 1e-3, &mean, NULL);
        assert_non_null(bn);
        assert_int_equal(tfl_tensor_dtype(bn), TFL_DTYPE_FLOAT32);
        assert_int_equal(tfl_tensor_dtype(mean), TFL_DTYPE_FLOAT32);
        assert_int_equal(tfl_tensor_dtype(tfl_layer_norm(ctx, h, g, g, 1e-3)), TFL_DTYPE_FLOAT32);
        /* the float32 sum of the 16-bit values, exactly as the float32 policy sums them */
        tfl_tensor *s = tfl_reduce_sum(ctx, h, 0, NULL, false);
        assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
        tfl_tensor *s32 = tfl_reduce_sum(ctx, tfl_cast(ctx, h, TFL_DTYPE_FLOAT32), 0, NULL, false);
        assert_true(get(s, 0) == get(s32, 0));
        /* float32: no autocast, dtypes must match */
        assert_int_equal(tfl_tensor_dtype(tfl_reduce_sum(ctx, h, 0, NULL, false)), k_half[p]);
        assert_null(tfl_mul(ctx, h, x));
        assert_non_null(strstr(tfl_ctx_error(ctx).message, "dtypes differ"));
        tfl_ctx_clear_error(ctx);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
}

/* Three noisy blobs in 8 dimensions, n rows (seeded). */
static tfl_dataset *blobs(tfl_ctx *ctx, int64_t n, uint64_t seed)
{
    float *x = malloc(sizeof(float) * (size_t)n * 8);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    assert_true(x && y);
    for (int64_t i = 0; i < n; i++) {
        y[i] = (int32_t)(i % 3);
        for (int d = 0; d < 8; d++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((seed >> 40) & 0xFFFF) / 65536.0f - 0.5f;
            x[8 * i + d] = (d % 3 == y[i] ? 0.6f : 0.0f) + 1.6f * u;
        }
    }
    return rows_dataset(ctx, n, 8, x, y);
}

/* bn: a BatchNormalization after the first Dense (its statistics and gradients in float32
 * under every policy, its input and gradient arriving in 16 bits) */
static void train(tfl_ctx *ctx, tfl_precision policy, double loss_scale, bool bn,
                  tfl_dataset *tr, tfl_dataset *te, double *loss, double *acc, int64_t *skipped)
{
    assert_int_equal(tfl_ctx_set_seed(ctx, 11), TFL_OK);
    assert_int_equal(tfl_ctx_set_precision(ctx, policy), TFL_OK);
    tfl_model *m = tfl_model_new(ctx, NULL);
    assert_non_null(tfl_model_add(
        m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 32, .activation = TFL_ACT_RELU}));
    if (bn) assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_BATCH_NORM}));
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.01;
    o.loss_scale = loss_scale;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    assert_int_equal(
        tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, TFL_METRIC_ACCURACY),
        TFL_OK);
    assert_int_equal(
        tfl_model_fit(m, tr,
                      &(tfl_fit_opts){.epochs = 12, .batch_size = 32, .shuffle = true, .seed = 5},
                      NULL),
        TFL_OK);
    assert_int_equal(tfl_model_evaluate(m, te, 64, loss, acc), TFL_OK);
    /* master weights: every variable float32, on GPU:0, finite */
    tfl_tensor *vars[8];
    int n = tfl_model_variables(m, TFL_VARS_ALL, vars, 8);
    assert_int_equal(n, bn ? 8 : 4);
    for (int i = 0; i < n; i++) {
        assert_int_equal(tfl_tensor_dtype(vars[i]), TFL_DTYPE_FLOAT32);
        assert_string_equal(tfl_tensor_device(vars[i]), "GPU:0");
        for (int64_t j = 0; j < tfl_tensor_numel(vars[i]); j++)
            assert_true(isfinite(get(vars[i], j)));
    }
    *skipped = tfl_optimizer_skipped_steps(opt);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    assert_int_equal(tfl_ctx_set_precision(ctx, TFL_PRECISION_FLOAT32), TFL_OK);
}

/* An MLP trained on GPU:0 under each policy: bfloat16, and float16 with loss scaling (from
 * Keras's 2^15, and from 2^24, where the first steps' gradients overflow float16 and are
 * skipped until the scale has come down), reach float32's test accuracy within half a point
 * and its loss within 5%, with no NaN. */
static void policies_train_as_float32(void **state, bool bn)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *tr = blobs(ctx, 600, 1), *te = blobs(ctx, 600, 2);
    double loss[4], acc[4];
    int64_t skipped[4];
    const tfl_precision pol[4] = {TFL_PRECISION_FLOAT32, TFL_PRECISION_BFLOAT16,
                                  TFL_PRECISION_FLOAT16, TFL_PRECISION_FLOAT16};
    const double scale[4] = {0, 0, 0x1p15, 0x1p24};
    for (int p = 0; p < 4; p++) {
        train(ctx, pol[p], scale[p], bn, tr, te, &loss[p], &acc[p], &skipped[p]);
        print_message("%s%s: test accuracy %.4f, loss %.5f, skipped steps %lld\n",
                      tfl_precision_name(pol[p]), bn ? " with BatchNorm" : "", acc[p], loss[p],
                      (long long)skipped[p]);
    }
    assert_true(acc[0] > 0.8 && acc[0] < 1.0); /* learnable, not trivially */
    for (int p = 1; p < 4; p++) {
        /* a point with BatchNorm: 6 of 600 examples, whose batch statistics see 16-bit inputs */
        if (!(fabs(acc[p] - acc[0]) <= (bn ? 0.01 : 0.005) &&
              fabs(loss[p] - loss[0]) <= 0.05 * loss[0]))
            fail_msg("policy %s: accuracy %.4f loss %.4f; float32 %.4f %.4f",
                     tfl_precision_name(pol[p]), acc[p], loss[p], acc[0], loss[0]);
    }
    assert_int_equal(skipped[0] + skipped[1] + skipped[2], 0);
    assert_true(skipped[3] >= 1 && skipped[3] <= 10); /* 2^24 → below 2^16 in a few steps */
    tfl_dataset_free(tr);
    tfl_dataset_free(te);
}

static void mixed_policies_train_as_float32(void **state)
{
    policies_train_as_float32(state, false);
}

/* The same with a BatchNormalization layer (its fused ops under every policy) */
static void mixed_policies_train_batch_norm(void **state)
{
    policies_train_as_float32(state, true);
}

/* ---- the loss scaler, on CPU:0 ----------------------------------------------------------------
 */

static tfl_optimizer *sgd_scaled(tfl_ctx *ctx, double scale, int64_t growth, double clip_norm)
{
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_PYTORCH);
    o.learning_rate = 0.5;
    o.loss_scale = scale;
    o.loss_scale_growth_steps = growth;
    o.clip_norm = clip_norm;
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    return opt;
}

static void apply2(tfl_optimizer *opt, tfl_tensor *p, double g0, double g1)
{
    tfl_ctx *ctx = tfl_optimizer_ctx(opt);
    tfl_tensor *g =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (float[]){(float)g0, (float)g1});
    assert_int_equal(tfl_optimizer_apply(opt, 1, &p, &g), TFL_OK);
}

/* Finite steps divide the gradient by S and count toward growth; a step with an inf or a NaN
 * changes no variable and no iterations, halves S and counts as skipped; S doubles after
 * growth_steps finite steps in a row. */
static void loss_scaler_steps(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK); /* owns every tensor of the test */
    tfl_tensor *p = tfl_variable_new(
        ctx, tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (float[]){1, 2}),
        &(tfl_variable_opts){.name = "p"});
    assert_non_null(p);
    tfl_optimizer *opt = sgd_scaled(ctx, 8, 2, 0);
    assert_true(tfl_optimizer_loss_scale(opt) == 8);
    apply2(opt, p, 0.8, 1.6); /* the loss's gradient is (0.1, 0.2): p -= 0.5 (0.1, 0.2) */
    assert_true(get(p, 0) == 1.0f - 0.05f && get(p, 1) == 2.0f - 0.1f);
    assert_true(tfl_optimizer_loss_scale(opt) == 8);
    apply2(opt, p, 8, 0); /* the second finite step in a row: S doubles */
    assert_true(get(p, 0) == (1.0f - 0.05f) - 0.5f);
    assert_true(tfl_optimizer_loss_scale(opt) == 16);
    assert_int_equal(iterations(opt), 2);
    double before[2] = {get(p, 0), get(p, 1)};
    apply2(opt, p, INFINITY, 1);
    assert_true(get(p, 0) == before[0] && get(p, 1) == before[1]);
    assert_int_equal(iterations(opt), 2);
    assert_true(tfl_optimizer_loss_scale(opt) == 8);
    assert_int_equal(tfl_optimizer_skipped_steps(opt), 1);
    apply2(opt, p, 0, NAN);
    assert_true(tfl_optimizer_loss_scale(opt) == 4);
    assert_int_equal(tfl_optimizer_skipped_steps(opt), 2);
    apply2(opt, p, 4, 4); /* one finite step: no growth yet (the count restarted) */
    assert_true(tfl_optimizer_loss_scale(opt) == 4);
    assert_true(get(p, 1) == (float)before[1] - 0.5f);
    /* the state is three variables that a checkpoint holds, after iterations */
    tfl_tensor *vars[8];
    assert_int_equal(tfl_optimizer_variables(opt, vars, 8), 5);
    const char *names[5] = {"SGD/iterations", "SGD/loss_scale", "SGD/loss_scale_steps",
                            "SGD/skipped_steps", "p/SGD/step"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(tfl_variable_name(vars[i]), names[i]);
    assert_int_equal(tfl_tensor_dtype(vars[1]), TFL_DTYPE_FLOAT32);
    assert_true(get(vars[2], 0) == 1 && get(vars[3], 0) == 2);
    /* a bad restore is refused before anything changes */
    tfl_tensor *zero = tfl_scalar_f32(ctx, 0);
    assert_int_equal(tfl_variable_assign(vars[1], zero), TFL_OK);
    tfl_tensor *g = tfl_ones_like(ctx, p);
    assert_int_equal(tfl_optimizer_apply(opt, 1, &p, &g), TFL_FAILED_PRECONDITION);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "loss scaling's state is invalid"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(iterations(opt), 3);
    tfl_optimizer_free(opt);
    tfl_tensor_release(p);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
}

/* Clipping sees the loss's gradient, not the scaled one; the scale never grows past float32;
 * tfl_optimizer_gradient gives the gradients of loss × S; options are checked. */
/* sum(q * (0.5, -3)) for minimize */
static tfl_tensor *dot_c(tfl_ctx *ctx, void *user)
{
    const tfl_tensor *q = user;
    tfl_tensor *c = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (float[]){0.5f, -3});
    return tfl_reduce_sum(ctx, tfl_mul(ctx, q, c), 0, NULL, false);
}

static void loss_scaler_clip_growth_and_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK); /* owns every tensor of the test */
    tfl_tensor *p = tfl_variable_new(ctx, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}),
                                     &(tfl_variable_opts){.name = "q"});
    assert_non_null(p);
    /* the loss's gradient (3, 4) has norm 5; clip_norm 1 makes it (0.6, 0.8) */
    tfl_optimizer *opt = sgd_scaled(ctx, 1024, 0, 1);
    assert_int_equal(tfl_optimizer_options(opt)->loss_scale_growth_steps, 2000);
    apply2(opt, p, 3 * 1024, 4 * 1024);
    assert_true(fabs(get(p, 0) + 0.3) < 1e-7 && fabs(get(p, 1) + 0.4) < 1e-7);
    tfl_optimizer_free(opt);
    /* halving stops at 1 (a scale below 1 from the start stays) */
    opt = sgd_scaled(ctx, 2, 0, 0);
    for (int i = 0; i < 3; i++) apply2(opt, p, NAN, 0);
    assert_true(tfl_optimizer_loss_scale(opt) == 1);
    assert_int_equal(tfl_optimizer_skipped_steps(opt), 3);
    tfl_optimizer_free(opt);
    opt = sgd_scaled(ctx, 0.25, 0, 0);
    apply2(opt, p, INFINITY, 0);
    assert_true(tfl_optimizer_loss_scale(opt) == 0.25);
    tfl_optimizer_free(opt);
    /* growth stops below float32's overflow */
    opt = sgd_scaled(ctx, 0x1p127, 1, 0);
    apply2(opt, p, 0, 0);
    assert_true(tfl_optimizer_loss_scale(opt) == 0x1p127);
    tfl_optimizer_free(opt);
    /* the gradients of loss × S: d(sum(q * c))/dq = c, times S = 64 */
    opt = sgd_scaled(ctx, 64, 0, 0);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tensor *c = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (float[]){0.5f, -3});
    tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, p, c), 0, NULL, false);
    tfl_tape_end(tape);
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_optimizer_gradient(opt, tape, loss, 1, (const tfl_tensor *[]){p}, &g),
                     TFL_OK);
    assert_true(get(g, 0) == 32 && get(g, 1) == -192);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    /* minimize scales and unscales: q -= 0.5 c, as without loss scaling */
    double q0[2] = {get(p, 0), get(p, 1)}, loss_value = 0;
    assert_int_equal(tfl_optimizer_minimize(opt, dot_c, p, 1, &p, &loss_value), TFL_OK);
    assert_true(get(p, 0) == (float)(q0[0] - 0.25) && get(p, 1) == (float)(q0[1] + 1.5));
    assert_true(fabs(loss_value - (0.5 * q0[0] - 3 * q0[1])) < 1e-6); /* the loss, not times S */
    tfl_optimizer_free(opt);
    /* options */
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.loss_scale = -1;
    assert_null(tfl_optimizer_new(ctx, &o));
    assert_string_equal(
        tfl_ctx_error(ctx).message,
        "Adam: invalid loss_scale -1; expected 0 (off) or a float32 in (0, 3.4e38]");
    tfl_ctx_clear_error(ctx);
    o.loss_scale = 0;
    o.loss_scale_growth_steps = 10;
    assert_null(tfl_optimizer_new(ctx, &o));
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "invalid loss_scale_growth_steps 10"));
    tfl_ctx_clear_error(ctx);
    /* without loss scaling: scale 1, nothing skipped, no extra variables */
    o.loss_scale_growth_steps = 0;
    opt = tfl_optimizer_new(ctx, &o);
    assert_true(tfl_optimizer_loss_scale(opt) == 1);
    assert_int_equal(tfl_optimizer_skipped_steps(opt), 0);
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 1);
    tfl_optimizer_free(opt);
    tfl_tensor_release(p);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
}

int main(void)
{
    /* every context of this test has the fake GPU:0 */
    if (setenv("TFL_GPU_MODULE", TFL_FAKE_GPU_MODULE, 1) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(mixed_policies_cast_per_op, setup, teardown),
        cmocka_unit_test_setup_teardown(mixed_policies_pick_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(mixed_policies_train_as_float32, setup, teardown),
        cmocka_unit_test_setup_teardown(mixed_policies_train_batch_norm, setup, teardown),
        cmocka_unit_test_setup_teardown(loss_scaler_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(loss_scaler_clip_growth_and_gradient, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
