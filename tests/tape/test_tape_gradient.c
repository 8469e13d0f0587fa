/* test_tape_gradient.c: tfl_tape_gradient and tfl_tape_vjp: persistence, unconnected sources,
 * a target that is a source, repeated sources, values used several times, non-scalar targets
 * and output gradients (checked against hand-computed formulas), the argument errors, and
 * tfl_stop_gradient; and what a tape keeps: a non-persistent tape releases its saved tensors
 * in its gradient call (live tensors and bytes return to their level, a variable's assign
 * after it writes in place), a persistent one or an undifferentiated one at tfl_tape_free,
 * and a snapshot keeps the value a variable had when the op ran. */
#include "tape_helpers.h"

#define SRC(...) ((const tfl_tensor *[]){__VA_ARGS__})

static tfl_tensor *mat_f64(tfl_ctx *ctx, int64_t r, int64_t c, const double *v)
{
    return tens(ctx, F64, 2, (const int64_t[]){r, c}, v);
}

static tfl_alloc_stats stats(tfl_ctx *ctx)
{
    tfl_alloc_stats s;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s), TFL_OK);
    return s;
}
#define allocs(ctx) (stats(ctx).fresh_allocs + stats(ctx).cache_hits)
#define bytes_in_use(ctx) (stats(ctx).bytes_in_use)

/* ---- persistence ----------------------------------------------------------------------------- */

static void test_persistent_answers_twice(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2, -3}, 3);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, x);
    tfl_tensor *x2 = tfl_mul(ctx, x, x);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x2, x));
    tfl_tape_end(tape);
    int64_t size = tfl_tape_size(tape);
    const double want[] = {3, 12, 27};
    tfl_tensor *g1 = grad1(tape, y, x, 0), *g2 = grad1(tape, y, x, 0);
    EXPECT_F64(g1, want, 3, 1e-12);
    EXPECT_F64(g2, want, 3, 1e-12);
    assert_ptr_not_equal(g1, g2);
    EXPECT_F64(grad1(tape, x2, x, 0), ((const double[]){2, 4, -6}), 3, 1e-12); /* another target */
    EXPECT_F64(grad1(tape, y, x, 0), want, 3, 1e-12);
    assert_int_equal(tfl_tape_size(tape), size);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_non_persistent_refuses_second_call(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    tfl_tape_end(tape);
    /* an argument error does not use the tape up */
    tfl_tensor *g = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, SRC(x), &g, 0x40), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "unknown flags");
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){2, 4}), 2, 1e-12);
    g = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, SRC(x), &g, 0), TFL_FAILED_PRECONDITION);
    assert_null(g);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "non-persistent", "TFL_TAPE_PERSISTENT");
    g = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_vjp(tape, y, tfl_scalar_f64(ctx, 1), 1, SRC(x), &g, 0),
                     TFL_FAILED_PRECONDITION);
    assert_null(g);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "TFL_TAPE_PERSISTENT");
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- sources ----------------------------------------------------------------------------------
 */

static void test_unconnected_sources(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, -2}, 2);
    tfl_tensor *z = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 3}, 7);
    tfl_tensor *c = vec_f64(ctx, (const double[]){5, 6}, 2); /* never watched */
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, x);
    tfl_tape_watch(tape, z);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    tfl_tape_end(tape);
    tfl_tensor *g[3];
    assert_int_equal(tfl_tape_gradient(tape, y, 3, SRC(x, z, c), g, 0), TFL_OK);
    EXPECT_F64(g[0], ((const double[]){2, -4}), 2, 1e-12);
    assert_null(g[1]);
    assert_null(g[2]);
    assert_int_equal(tfl_tape_gradient(tape, y, 3, SRC(x, z, c), g, TFL_GRAD_UNCONNECTED_ZERO),
                     TFL_OK);
    EXPECT_F64(g[0], ((const double[]){2, -4}), 2, 1e-12);
    expect_vals_(g[1], TFL_DTYPE_FLOAT32, (const double[]){0, 0, 0, 0, 0, 0}, 6, 0, __LINE__);
    expect_shape(g[1], 2, (const int64_t[]){2, 3});
    EXPECT_F64(g[2], ((const double[]){0, 0}), 2, 0);
    /* a target the tape never saw: every source is unconnected */
    assert_null(grad1(tape, c, x, 0));
    EXPECT_F64(grad1(tape, c, x, TFL_GRAD_UNCONNECTED_ZERO), ((const double[]){0, 0}), 2, 0);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_target_is_source_and_repeated_source(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = mat_f64(ctx, 2, 2, (const double[]){1, 2, 3, 4});
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = tfl_mul(ctx, x, x);
    tfl_tape_end(tape);
    tfl_tensor *g = grad1(tape, x, x, 0);
    EXPECT_F64(g, ((const double[]){1, 1, 1, 1}), 4, 0);
    expect_shape(g, 2, (const int64_t[]){2, 2});
    tfl_tensor *gs[3];
    assert_int_equal(tfl_tape_gradient(tape, y, 3, SRC(y, x, x), gs, 0), TFL_OK);
    EXPECT_F64(gs[0], ((const double[]){1, 1, 1, 1}), 4, 0);
    EXPECT_F64(gs[1], ((const double[]){2, 4, 6, 8}), 4, 1e-12);
    EXPECT_F64(gs[2], ((const double[]){2, 4, 6, 8}), 4, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_gradients_add_up(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_from(ctx, F64, 1, (const int64_t[]){2}, (const double[]){2, -1}, NULL);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){-1.5, 0, 2.5}, 3);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = tfl_add(ctx, tfl_mul(ctx, x, x), tfl_mul(ctx, x, tfl_scalar_f64(ctx, 3)));
    /* a variable in three places: d/dv sum(v*v*v + exp(v)) = 3v^2 + e^v */
    tfl_tensor *u =
        sum_all(ctx, tfl_add(ctx, tfl_mul(ctx, tfl_mul(ctx, v, v), v), tfl_exp(ctx, v)));
    tfl_tensor *t = tfl_add(ctx, sum_all(ctx, y), u);
    tfl_tape_end(tape);
    tfl_tensor *g[2];
    assert_int_equal(tfl_tape_gradient(tape, t, 2, SRC(x, v), g, 0), TFL_OK);
    EXPECT_F64(g[0], ((const double[]){0, 3, 8}), 3, 1e-12); /* 2x + 3 */
    EXPECT_F64(g[1], ((const double[]){12 + exp(2), 3 + exp(-1)}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

/* ---- non-scalar targets and vector-Jacobian products ------------------------------------------
 */

static void test_non_scalar_target_and_vjp(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double A[6] = {1, 2, 3, -1, 0.5, 4};     /* 2x3 */
    const double W[6] = {0.5, -2, 1, 3, -1, 0.25}; /* 3x2 */
    const double U[4] = {1, -2, 0.5, 3};           /* 2x2 */
    tfl_tensor *a = mat_f64(ctx, 2, 3, A), *w = mat_f64(ctx, 3, 2, W), *u = mat_f64(ctx, 2, 2, U);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, a);
    tfl_tape_watch(tape, w);
    tfl_tensor *y = tfl_matmul(ctx, a, w, 0); /* 2x2 */
    tfl_tensor *e = tfl_mul(ctx, a, a);       /* elementwise, 2x3 */
    tfl_tape_end(tape);
    /* the sum's gradient: dA = 1 W^T, dW = A^T 1; the VJP: dA = U W^T, dW = A^T U */
    double ga[6], gw[6], va[6], vw[6];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            ga[i * 3 + k] = W[k * 2] + W[k * 2 + 1];
            va[i * 3 + k] = U[i * 2] * W[k * 2] + U[i * 2 + 1] * W[k * 2 + 1];
        }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 2; j++) {
            gw[k * 2 + j] = A[k] + A[3 + k];
            vw[k * 2 + j] = A[k] * U[j] + A[3 + k] * U[2 + j];
        }
    tfl_tensor *g[2];
    assert_int_equal(tfl_tape_gradient(tape, y, 2, SRC(a, w), g, 0), TFL_OK);
    EXPECT_F64(g[0], ga, 6, 1e-12);
    EXPECT_F64(g[1], gw, 6, 1e-12);
    expect_shape(g[0], 2, (const int64_t[]){2, 3});
    expect_shape(g[1], 2, (const int64_t[]){3, 2});
    assert_int_equal(tfl_tape_vjp(tape, y, u, 2, SRC(a, w), g, 0), TFL_OK);
    EXPECT_F64(g[0], va, 6, 1e-12);
    EXPECT_F64(g[1], vw, 6, 1e-12);
    /* a ones output gradient is the plain gradient */
    assert_int_equal(tfl_tape_vjp(tape, y, tfl_ones_like(ctx, y), 2, SRC(a, w), g, 0), TFL_OK);
    EXPECT_F64(g[0], ga, 6, 1e-12);
    /* elementwise: the VJP of a*a with dy is 2 a dy */
    tfl_tensor *dy = mat_f64(ctx, 2, 3, (const double[]){1, 0, -1, 2, 0.5, -3});
    assert_int_equal(tfl_tape_vjp(tape, e, dy, 1, SRC(a), g, 0), TFL_OK);
    EXPECT_F64(g[0], ((const double[]){2, 0, -6, -4, 0.5, -24}), 6, 1e-12);
    EXPECT_F64(grad1(tape, e, a, 0), ((const double[]){2, 4, 6, -2, 1, 8}), 6, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_vjp_output_gradient_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = tfl_mul(ctx, x, x);
    tfl_tape_end(tape);
    tfl_tensor *g = (tfl_tensor *)&g;
    assert_int_equal(
        tfl_tape_vjp(tape, y, vec_f64(ctx, (const double[]){1, 1, 1}, 3), 1, SRC(x), &g, 0),
        TFL_INVALID_ARGUMENT);
    assert_null(g);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "output gradient", "(3,)", "(2,)");
    g = (tfl_tensor *)&g;
    assert_int_equal(
        tfl_tape_vjp(tape, y, vec_f32(ctx, (const float[]){1, 1}, 2), 1, SRC(x), &g, 0),
        TFL_INVALID_ARGUMENT);
    assert_null(g);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "output gradient", "float32", "float64");
    assert_int_equal(
        tfl_tape_vjp(tape, y, vec_i32(ctx, (const int32_t[]){1, 1}, 2), 1, SRC(x), &g, 0),
        TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "output gradient", "int32");
    assert_int_equal(tfl_tape_vjp(tape, y, tfl_scalar_f64(ctx, 1), 1, SRC(x), &g, 0),
                     TFL_INVALID_ARGUMENT); /* a scalar is not broadcast */
    expect_error(ctx, TFL_INVALID_ARGUMENT, "output gradient", "()");
    assert_int_equal(tfl_tape_vjp(tape, y, x, 1, SRC(x), &g, 0x8), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "unknown flags");
    /* none of these used the tape up */
    assert_int_equal(
        tfl_tape_vjp(tape, y, vec_f64(ctx, (const double[]){3, -1}, 2), 1, SRC(x), &g, 0), TFL_OK);
    EXPECT_F64(g, ((const double[]){6, -4}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- argument errors
 * ------------------------------------------------------------------------------ */

static void test_integer_target_or_source(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1.5, 2.5}, 2);
    tfl_tensor *i = vec_i32(ctx, (const int32_t[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    tfl_tensor *yi = tfl_cast(ctx, y, TFL_DTYPE_INT32);
    tfl_tape_end(tape);
    tfl_tensor *g[2] = {(tfl_tensor *)&g, (tfl_tensor *)&g};
    assert_int_equal(tfl_tape_gradient(tape, yi, 1, SRC(x), g, 0), TFL_INVALID_ARGUMENT);
    assert_null(g[0]);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "target", "int32");
    g[0] = g[1] = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_gradient(tape, y, 2, SRC(x, i), g, 0), TFL_INVALID_ARGUMENT);
    assert_null(g[0]);
    assert_null(g[1]);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "source 1", "int32");
    assert_int_equal(tfl_tape_gradient(tape, y, 1, SRC(tfl_scalar_bool(ctx, true)), g, 0),
                     TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "source 0", "bool");
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){3, 5}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_null_target_flags_and_n(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, x);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    tfl_tensor *g = (tfl_tensor *)&g;
    /* NULL from a failed op: the kept error's code comes back, the kept error stays */
    tfl_tensor *bad = tfl_tensor_to_device(ctx, y, "GPU:9");
    assert_null(bad);
    assert_int_equal(tfl_tape_gradient(tape, bad, 1, SRC(x), &g, 0), TFL_NOT_FOUND);
    assert_null(g);
    expect_error(ctx, TFL_NOT_FOUND, "GPU:9");
    bad = tfl_matmul(ctx, x, x, 0);
    assert_int_equal(tfl_tape_gradient(tape, bad, 1, SRC(x), &g, 0), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "MatMul");
    /* NULL with no error kept */
    assert_int_equal(tfl_tape_gradient(tape, NULL, 1, SRC(x), &g, 0), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "target is NULL");
    assert_int_equal(tfl_tape_gradient(tape, y, 1, SRC(NULL), &g, 0), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "source 0 is NULL");
    assert_int_equal(tfl_tape_gradient(tape, y, 1, SRC(x), &g, 0x2), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "unknown flags 0x2");
    assert_int_equal(tfl_tape_gradient(tape, y, -1, SRC(x), &g, 0), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "n is -1");
    assert_int_equal(tfl_tape_gradient(tape, y, 0, NULL, NULL, 0), TFL_OK); /* nothing asked */
    expect_no_error(ctx);
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){2, 4}), 2, 1e-12);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* tape.h: "On error every grads[i] is NULL" -- also when the tape or the sources are NULL
 * (tfl_tape_vjp returns for these before it clears grads). */
static void test_errors_clear_grads_for_null_tape_or_sources(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tensor *g[2] = {(tfl_tensor *)&g, (tfl_tensor *)&g};
    tfl_tensor *h[2] = {(tfl_tensor *)&h, (tfl_tensor *)&h};
    assert_int_equal(tfl_tape_gradient(NULL, x, 2, SRC(x, x), g, 0), TFL_INVALID_ARGUMENT);
    expect_no_error(ctx);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_gradient(tape, x, 2, NULL, h, 0), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "n is 2");
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_null(g[0]); /* NULL tape */
    assert_null(g[1]);
    assert_null(h[0]); /* NULL sources */
    assert_null(h[1]);
}

/* ---- stop_gradient
 * --------------------------------------------------------------------------------- */

static int op_index(const char *name)
{
    for (int i = 0; i < tfl_op_count(); i++)
        if (strcmp(tfl_op_name(i), name) == 0) return i;
    return -1;
}

static void test_stop_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1.5, -2, 3}, 3);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape_watch(tape, x);
    tfl_tensor *s = tfl_stop_gradient(ctx, x);
    assert_int_equal(tfl_tape_size(tape), 0); /* StopGradient is not recorded */
    EXPECT_F64(s, ((const double[]){1.5, -2, 3}), 3, 0);
    tfl_tensor *y = tfl_mul(ctx, x, s);
    EXPECT_F64(y, ((const double[]){2.25, 4, 9}), 3, 1e-12);
    tfl_tensor *stopped = tfl_mul(ctx, s, tfl_stop_gradient(ctx, x));
    tfl_tensor *z = sum_all(ctx, tfl_stop_gradient(ctx, tfl_mul(ctx, x, x)));
    tfl_tape_end(tape);
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){1.5, -2, 3}), 3, 1e-12); /* x, not 2x */
    assert_null(grad1(tape, stopped, x, 0));
    assert_null(grad1(tape, z, x, 0));
    EXPECT_F64(grad1(tape, z, x, TFL_GRAD_UNCONNECTED_ZERO), ((const double[]){0, 0, 0}), 3, 0);
    EXPECT_F64(z, ((const double[]){2.25 + 4 + 9}), 1, 1e-12);
    assert_int_equal(tfl_op_gradient_kind(op_index("StopGradient")), TFL_GRAD_NOT_DIFFERENTIABLE);
    assert_int_equal(tfl_op_gradient_kind(op_index("Mul")), TFL_GRAD_DEFINED);
    assert_int_equal(tfl_op_gradient_kind(-1), TFL_GRAD_MISSING);
    assert_int_equal(tfl_op_gradient_kind(tfl_op_count()), TFL_GRAD_MISSING);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- what a tape keeps
 * --------------------------------------------------------------------------- */

/* A forward pass that saves tensors: the inputs of Mul and MatMul, the output of Exp. */
static tfl_tensor *forward(tfl_ctx *ctx, tfl_tape *tape, tfl_tensor *v, tfl_tensor **x)
{
    *x = mat_f64(ctx, 4, 4, (const double[]){1, 2, 3, 4, 0, 1, 0, 1, 2, 2, 1, 1, -1, 0, 1, 0});
    tfl_tape_watch(tape, *x);
    tfl_tensor *h = tfl_exp(ctx, tfl_mul(ctx, tfl_matmul(ctx, *x, v, 0), tfl_scalar_f64(ctx, 0.1)));
    return sum_all(ctx, tfl_mul(ctx, h, h));
}

static void expect_released(tfl_ctx *ctx, unsigned flags, bool differentiate)
{
    tfl_tensor *v = var_from(ctx, F64, 2, (const int64_t[]){4, 2},
                             (const double[]){1, -1, 0.5, 2, 0, 1, -2, 0.25}, NULL);
    uint64_t live = live_tensors(ctx);
    size_t bytes = bytes_in_use(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, flags);
    tfl_tensor *x;
    tfl_tensor *y = forward(ctx, tape, v, &x);
    tfl_tape_end(tape);
    assert_true(tfl_tape_size(tape) >= 5);
    if (differentiate) {
        tfl_tensor *g[2];
        assert_int_equal(tfl_tape_gradient(tape, y, 2, SRC(x, v), g, 0), TFL_OK);
        assert_non_null(g[0]);
        assert_non_null(g[1]);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    if (differentiate && !(flags & TFL_TAPE_PERSISTENT)) {
        assert_int_equal(tfl_tape_size(tape), 0);
        assert_int_equal(live_tensors(ctx), live); /* released in the gradient call */
        assert_int_equal(bytes_in_use(ctx), bytes);
    } else {
        assert_true(live_tensors(ctx) > live); /* kept until tfl_tape_free */
        assert_true(bytes_in_use(ctx) > bytes);
    }
    tfl_tape_free(tape);
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(bytes_in_use(ctx), bytes);
    expect_no_error(ctx);
    tfl_tensor_release(v);
}

static void test_non_persistent_releases_saved(void **state)
{
    expect_released(((fixture *)*state)->ctx, 0, true);
}

static void test_persistent_keeps_saved_until_free(void **state)
{
    expect_released(((fixture *)*state)->ctx, TFL_TAPE_PERSISTENT, true);
}

static void test_free_undifferentiated_releases_saved(void **state)
{
    expect_released(((fixture *)*state)->ctx, 0, false);
}

static void test_assign_after_gradient_in_place(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_from(ctx, F64, 1, (const int64_t[]){3}, (const double[]){1, 2, 3}, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, tfl_mul(ctx, v, v), tfl_scalar_f64(ctx, 0.5)));
    tfl_tape_end(tape);
    tfl_tensor *g = grad1(tape, y, v, 0); /* v */
    EXPECT_F64(g, ((const double[]){1, 2, 3}), 3, 1e-12);
    tfl_tensor *step = tfl_mul(ctx, g, tfl_scalar_f64(ctx, 0.25));
    uint64_t a0 = allocs(ctx), live = live_tensors(ctx);
    assert_int_equal(tfl_variable_assign_sub(v, step), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p); /* no copy-on-write: no snapshot is left */
    assert_int_equal(allocs(ctx), a0);
    assert_int_equal(live_tensors(ctx), live);
    EXPECT_F64(v, ((const double[]){0.75, 1.5, 2.25}), 3, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

static void test_snapshot_keeps_value_across_assign(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_from(ctx, F64, 1, (const int64_t[]){2}, (const double[]){3, -1}, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, v, v));
    tfl_tape_end(tape);
    assert_int_equal(tfl_variable_assign(v, vec_f64(ctx, (const double[]){10, 20}, 2)), TFL_OK);
    assert_ptr_not_equal(tfl_tensor_data_ptr(v), p); /* the tape's snapshot kept the old memory */
    EXPECT_F64(v, ((const double[]){10, 20}), 2, 0);
    EXPECT_F64(grad1(tape, y, v, 0), ((const double[]){6, -2}), 2, 1e-12); /* 2 v as recorded */
    EXPECT_F64(grad1(tape, y, v, 0), ((const double[]){6, -2}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

/* An op with more inputs than the backward pass keeps on the stack (concat of 20): each input
 * gets its slice of the output gradient. */
static void test_many_inputs(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    enum { N = 20 };
    tfl_tensor *xs[N];
    double w[2 * N];
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    for (int i = 0; i < N; i++) {
        xs[i] = vec_f64(ctx, (const double[]){i, -i}, 2);
        if (i % 3 != 1) assert_int_equal(tfl_tape_watch(tape, xs[i]), TFL_OK);
        w[2 * i] = 0.5 * i + 1;
        w[2 * i + 1] = -0.25 * i;
    }
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, tfl_concat(ctx, N, (const tfl_tensor *const *)xs, 0),
                                         vec_f64(ctx, w, 2 * N)));
    tfl_tape_end(tape);
    tfl_tensor *g[N];
    assert_int_equal(tfl_tape_gradient(tape, y, N, (const tfl_tensor *const *)xs, g, 0), TFL_OK);
    for (int i = 0; i < N; i++) {
        if (i % 3 == 1) {
            assert_null(g[i]); /* not watched: a constant */
            continue;
        }
        EXPECT_F64(g[i], (&w[2 * i]), 2, 0);
    }
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_persistent_answers_twice),
        T(test_non_persistent_refuses_second_call),
        T(test_unconnected_sources),
        T(test_target_is_source_and_repeated_source),
        T(test_gradients_add_up),
        T(test_non_scalar_target_and_vjp),
        T(test_vjp_output_gradient_errors),
        T(test_integer_target_or_source),
        T(test_null_target_flags_and_n),
        T(test_errors_clear_grads_for_null_tape_or_sources),
        T(test_stop_gradient),
        T(test_non_persistent_releases_saved),
        T(test_persistent_keeps_saved_until_free),
        T(test_free_undifferentiated_releases_saved),
        T(test_assign_after_gradient_in_place),
        T(test_snapshot_keeps_value_across_assign),
        T(test_many_inputs),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
