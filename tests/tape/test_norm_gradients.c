/* test_norm_gradients.c: gradients of batch normalization and dropout on a tape, against
 * TensorFlow (tests/reference/fixtures/norm_tf.json, from norm_tf.py):
 *  - tf.nn.batch_normalization's gradients for all five inputs (L = sum(w * y));
 *  - the training-mode chain: with mean and variance from tfl_moments(x) over every axis but
 *    the last, the gradients for x, scale and offset match TensorFlow's GradientTape through
 *    tf.nn.moments + tf.nn.batch_normalization, and keras.layers.BatchNormalization
 *    (training=True, epsilon 1e-3) for the output too;
 *  - dropout's gradient drops dy with the forward's mask, also for an unseeded call whose
 *    stream was resolved at the forward (and the backward takes no stream of its own).
 * Finite-difference checks of both ops are in test_gradcheck.c. */
#include "norm_fixture.h"

/* Gradients of y for n sources, asserting the call succeeds. */
static void grads_(tfl_tape *tape, const tfl_tensor *y, int n, const tfl_tensor *const *x,
                   tfl_tensor **g, int line)
{
    tfl_status st = tfl_tape_gradient(tape, y, n, x, g, 0);
    if (st != TFL_OK)
        fail_msg("line %d: tfl_tape_gradient: %s (%s)", line, tfl_status_name(st),
                 tfl_ctx_error(tfl_tensor_ctx(y)).message);
    for (int i = 0; i < n; i++)
        if (!g[i]) fail_msg("line %d: no gradient for source %d", line, i);
}
#define GRADS(tape, y, n, x, g) grads_((tape), (y), (n), (x), (g), __LINE__)

static tfl_tensor *weighted_sum(tfl_ctx *ctx, const tfl_tensor *w, const tfl_tensor *y)
{
    return tfl_reduce_sum(ctx, tfl_mul(ctx, w, y), 0, NULL, false);
}

/* tf.nn.batch_normalization: y and the gradients of sum(w * y) for every input given */
static void test_bn_gradients_fixture(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, jget(g_root, "batch_norm"))
    {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_dtype dt = nf_dtype(c);
        int64_t shape[8];
        int rank = nf_shape(c, "shape", shape);
        int64_t ch = shape[rank - 1];
        const char *keys[5] = {"x", "mean", "variance", "offset", "scale"};
        tfl_tensor *in[5], *g[5];
        in[0] = NF_TENSOR(ctx, c, "x", dt, rank, shape);
        for (int i = 1; i < 5; i++)
            in[i] = NF_TENSOR(ctx, c, keys[i], dt, 1, &ch);
        int n = in[3] ? 5 : 3;
        tfl_tensor *w = NF_TENSOR(ctx, c, "w", dt, rank, shape);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        for (int i = 0; i < n; i++)
            assert_int_equal(tfl_tape_watch(tape, in[i]), TFL_OK);
        tfl_tensor *y = tfl_batch_norm(ctx, in[0], in[1], in[2], in[3], in[4], jnum(c, "epsilon"));
        tfl_tensor *loss = weighted_sum(ctx, w, y);
        GRADS(tape, loss, n, (const tfl_tensor *const *)in, g);
        char what[96];
        for (int i = 0; i < n; i++) {
            snprintf(what, sizeof what, "%s d%s", c->string, keys[i]);
            NF_EXPECT(ctx, g[i], jget(jget(c, "grads"), keys[i]), 4 * nf_tol(dt), what);
        }
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        cases++;
    }
    assert_int_equal(cases, 8);
}

/* Training mode: moments of the batch feed batch_norm; the chain rule through both gives
 * TensorFlow's and Keras's training-mode gradients. */
static void test_training_chain_fixture(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, jget(g_root, "training"))
    {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_dtype dt = nf_dtype(c);
        int64_t shape[8];
        int rank = nf_shape(c, "shape", shape);
        int64_t ch = shape[rank - 1];
        tfl_tensor *x = NF_TENSOR(ctx, c, "x", dt, rank, shape);
        tfl_tensor *gamma = NF_TENSOR(ctx, c, "gamma", dt, 1, &ch);
        tfl_tensor *beta = NF_TENSOR(ctx, c, "beta", dt, 1, &ch);
        tfl_tensor *w = NF_TENSOR(ctx, c, "w", dt, rank, shape);
        int axes[8], naxes = rank - 1;
        for (int i = 0; i < naxes; i++)
            axes[i] = i;
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tensor *src[3] = {x, gamma, beta}, *g[3], *m = NULL, *v = NULL;
        for (int i = 0; i < 3; i++)
            assert_int_equal(tfl_tape_watch(tape, src[i]), TFL_OK);
        OK(ctx, tfl_moments(ctx, x, naxes, axes, false, &m, &v));
        tfl_tensor *y = tfl_batch_norm(ctx, x, m, v, beta, gamma, jnum(c, "epsilon"));
        tfl_tensor *loss = weighted_sum(ctx, w, y);
        GRADS(tape, loss, 3, (const tfl_tensor *const *)src, g);
        const char *who[2] = {"tf", "keras"};
        char what[96];
        for (int k = 0; k < 2; k++) {
            const cJSON *ref = jget(c, who[k]);
            double tol = 4 * nf_tol(dt);
            snprintf(what, sizeof what, "%s %s y", c->string, who[k]);
            NF_EXPECT(ctx, y, jget(ref, "y"), nf_tol(dt), what);
            snprintf(what, sizeof what, "%s %s dx", c->string, who[k]);
            NF_EXPECT(ctx, g[0], jget(ref, "dx"), tol, what);
            snprintf(what, sizeof what, "%s %s dgamma", c->string, who[k]);
            NF_EXPECT(ctx, g[1], jget(ref, "dgamma"), tol, what);
            snprintf(what, sizeof what, "%s %s dbeta", c->string, who[k]);
            NF_EXPECT(ctx, g[2], jget(ref, "dbeta"), tol, what);
        }
        /* normalising by the batch's own mean removes any shift: dx sums to 0 per channel */
        if (dt == TFL_DTYPE_FLOAT64) {
            tfl_tensor *s = tfl_reduce_sum(ctx, g[0], naxes, axes, false);
            double *sv = nf_values(s);
            for (int64_t j = 0; j < ch; j++)
                assert_true(fabs(sv[j]) < 1e-12);
            free(sv);
        }
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        cases++;
    }
    assert_int_equal(cases, 4);
}

/* Training mode versus inference mode: with moments held constant (stop_gradient, what a layer
 * using moving averages sees) dx is only dy * scale * inv; through moments it is not. */
static void test_training_differs_from_constant_moments(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double xv[6] = {1, 4, 2, 8, 6, 0};
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 2, S(3, 2), xv);
    tfl_tensor *w = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 2, S(3, 2), V(1, -1, 2, 0.5, -3, 1));
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *m, *v, *g[2];
    OK(ctx, tfl_moments(ctx, x, 1, (const int[]){0}, false, &m, &v));
    tfl_tensor *train = weighted_sum(ctx, w, tfl_batch_norm(ctx, x, m, v, NULL, NULL, 1e-3));
    tfl_tensor *ms = tfl_stop_gradient(ctx, m), *vs = tfl_stop_gradient(ctx, v);
    tfl_tensor *infer = weighted_sum(ctx, w, tfl_batch_norm(ctx, x, ms, vs, NULL, NULL, 1e-3));
    GRADS(tape, train, 1, (const tfl_tensor *const *)&x, &g[0]);
    GRADS(tape, infer, 1, (const tfl_tensor *const *)&x, &g[1]);
    double *gt = nf_values(g[0]), *gi = nf_values(g[1]), *vv = nf_values(v);
    /* inference: w / sqrt(var + eps); channel 0 has mean 3, var 14/3; channel 1 mean 4, var 32/3 */
    assert_true(fabs(vv[0] - 14.0 / 3) < 1e-14 && fabs(vv[1] - 32.0 / 3) < 1e-14);
    const double wv[6] = {1, -1, 2, 0.5, -3, 1};
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(gi[i] - wv[i] / sqrt(vv[i % 2] + 1e-3)) < 1e-14);
        assert_true(fabs(gt[i] - gi[i]) > 1e-3);
    }
    free(gt);
    free(gi);
    free(vv);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Dropout: dx = w * mask / (1 - rate) with the forward's mask, for a seeded and an unseeded
 * call; random calls between the forward and the backward change nothing, and the backward
 * takes no stream. */
static void test_dropout_gradient_mask(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const int64_t n = 4001;
    double *xv = malloc(sizeof(double) * (size_t)n), *wv = malloc(sizeof(double) * (size_t)n);
    assert_true(xv && wv);
    for (int64_t i = 0; i < n; i++) {
        xv[i] = 1 + (double)(i % 97) / 8;
        wv[i] = (double)(i % 13) - 6.5;
    }
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, xv);
    tfl_tensor *w = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, wv);
    const double rate = 0.375, keep = 1 - rate;
    for (int seeded = 0; seeded < 2; seeded++) {
        assert_int_equal(tfl_ctx_set_seed(ctx, 2026), TFL_OK);
        tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
        assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
        tfl_tensor *y = tfl_dropout(ctx, x, rate, seeded ? 31337 : 0);
        tfl_tensor *loss = weighted_sum(ctx, w, y);
        tfl_tape_end(tape);
        /* draws in between: the backward must not take the ctx's next stream */
        tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0, 1, 0);
        tfl_tensor *g[2];
        GRADS(tape, loss, 1, (const tfl_tensor *const *)&x, &g[0]);
        GRADS(tape, loss, 1, (const tfl_tensor *const *)&x, &g[1]);
        double *yv = nf_values(y), *g0 = nf_values(g[0]), *g1 = nf_values(g[1]);
        int64_t kept = 0;
        for (int64_t i = 0; i < n; i++) {
            bool on = yv[i] != 0;
            kept += on;
            if (g0[i] != (on ? wv[i] / keep : 0) || g1[i] != g0[i])
                fail_msg("%s element %lld: y %.17g, dx %.17g and %.17g, w %.17g",
                         seeded ? "seeded" : "unseeded", (long long)i, yv[i], g0[i], g1[i], wv[i]);
        }
        assert_true(kept > n / 2 && kept < n * 3 / 4); /* about 62.5% */
        free(yv);
        free(g0);
        free(g1);
        tfl_tape_free(tape);
        /* streams so far: the unseeded dropout (if any) and the uniform; the next is the
         * one after those, as without a tape */
        tfl_tensor *next = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0, 1, 0);
        assert_int_equal(tfl_ctx_set_seed(ctx, 2026), TFL_OK);
        for (int k = 0; k < (seeded ? 1 : 2); k++)
            tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0, 1, 0);
        tfl_tensor *want = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0, 1, 0);
        double *a = nf_values(next), *b = nf_values(want);
        assert_memory_equal(a, b, sizeof(double) * (size_t)n);
        free(a);
        free(b);
    }
    free(xv);
    free(wv);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_bn_gradients_fixture),
        T(test_training_chain_fixture),
        T(test_training_differs_from_constant_moments),
        T(test_dropout_gradient_mask),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
