/* test_tape_nesting.c: nested tapes and higher-order gradients: an inner and an outer tape
 * each giving its own first derivative; second derivatives (x^3, tanh, exp) of plain tensors
 * and of variables; a third derivative through three tapes; a Hessian-vector product of a
 * small MLP loss against central finite differences of its gradient; a Jacobian-vector
 * product by differentiating a VJP with respect to its output gradient; a gradient call
 * while the tape still records (it does not record its own backward pass, the tapes around
 * it do); and tapes still alive at tfl_ctx_free. */
#include "tape_helpers.h"

#include <math.h>

#define NX 4
/* the gradient, which must be connected here */
#define gradnn(tape, y, x) must_connect(grad1((tape), (y), (x), 0), __LINE__)
static tfl_tensor *must_connect(tfl_tensor *g, int line)
{
    if (!g) {
        print_error("line %d: the gradient is unconnected\n", line);
        fail();
    }
    return g;
}

static const double XS[NX] = {-1.5, -0.5, 0.5, 2.0};

/* x as a plain tensor watched by the tapes, or as a trainable variable they watch themselves */
static tfl_tensor *make_x(tfl_ctx *ctx, bool variable)
{
    int64_t n = NX;
    if (variable) return var_from(ctx, F64, 1, &n, XS, NULL);
    return tens(ctx, F64, 1, &n, XS);
}

static tfl_tape *begin_watching(tfl_ctx *ctx, unsigned flags, const tfl_tensor *x)
{
    tfl_tape *tape = tfl_tape_begin(ctx, flags);
    assert_non_null(tape);
    if (!tfl_tensor_is_variable(x)) assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    return tape;
}

static void test_inner_and_outer_first_derivatives(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = make_x(ctx, false);
    tfl_tape *outer = begin_watching(ctx, 0, x);
    tfl_tensor *a = tfl_mul(ctx, x, x); /* before the inner tape: a constant to it */
    tfl_tape *inner = begin_watching(ctx, 0, x);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, a, x));
    tfl_tape_end(inner);
    tfl_tape_end(outer);
    assert_int_equal(tfl_tape_size(outer), 3);
    assert_int_equal(tfl_tape_size(inner), 2);
    double xx[NX], x3[NX];
    for (int i = 0; i < NX; i++) {
        xx[i] = XS[i] * XS[i];
        x3[i] = 3 * XS[i] * XS[i];
    }
    EXPECT_F64(gradnn(inner, y, x), xx, NX, 1e-12); /* d(a x)/dx with a held: x^2 */
    EXPECT_F64(gradnn(outer, y, x), x3, NX, 1e-12); /* d(x^3)/dx: 3 x^2 */
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* f(x) summed, its first derivative f1 and second f2, elementwise */
typedef tfl_tensor *(*fn1)(tfl_ctx *ctx, const tfl_tensor *x);
typedef double (*dfn)(double x);

static tfl_tensor *cube(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_mul(ctx, tfl_mul(ctx, x, x), x);
}
static double cube1(double x)
{
    return 3 * x * x;
}
static double cube2(double x)
{
    return 6 * x;
}
static tfl_tensor *tanh_(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_tanh(ctx, x);
}
static double tanh1(double x)
{
    return 1 - tanh(x) * tanh(x);
}
static double tanh2(double x)
{
    return -2 * tanh(x) * (1 - tanh(x) * tanh(x));
}
static tfl_tensor *exp_(tfl_ctx *ctx, const tfl_tensor *x)
{
    return tfl_exp(ctx, x);
}
static double exp1(double x)
{
    return exp(x);
}

static void check_second(tfl_ctx *ctx, fn1 f, dfn d1, dfn d2, bool variable)
{
    tfl_tensor *x = make_x(ctx, variable);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *outer = begin_watching(ctx, 0, x);
    tfl_tape *inner = begin_watching(ctx, 0, x);
    tfl_tensor *y = sum_all(ctx, f(ctx, x));
    tfl_tape_end(inner);
    int64_t before = tfl_tape_size(outer);
    tfl_tensor *g = gradnn(inner, y, x);
    assert_true(tfl_tape_size(outer) > before); /* the outer tape recorded the backward pass */
    tfl_tape_end(outer);
    tfl_tensor *h = gradnn(outer, g, x);
    double w1[NX], w2[NX];
    for (int i = 0; i < NX; i++) {
        w1[i] = d1(XS[i]);
        w2[i] = d2(XS[i]);
    }
    EXPECT_F64(g, w1, NX, 1e-12);
    EXPECT_F64(h, w2, NX, 1e-12);
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(x); /* made before the frame: the caller's */
}

static void test_second_derivative_cube(void **state)
{
    check_second(((fixture *)*state)->ctx, cube, cube1, cube2, false);
}

static void test_second_derivative_cube_variable(void **state)
{
    check_second(((fixture *)*state)->ctx, cube, cube1, cube2, true);
}

static void test_second_derivative_tanh(void **state)
{
    check_second(((fixture *)*state)->ctx, tanh_, tanh1, tanh2, false);
}

static void test_second_derivative_tanh_variable(void **state)
{
    check_second(((fixture *)*state)->ctx, tanh_, tanh1, tanh2, true);
}

static void test_second_derivative_exp(void **state)
{
    check_second(((fixture *)*state)->ctx, exp_, exp1, exp1, false);
}

static void test_third_derivative_through_three_tapes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    for (int variable = 0; variable < 2; variable++) {
        tfl_tensor *x = make_x(ctx, variable);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tape *t1 = begin_watching(ctx, 0, x);
        tfl_tape *t2 = begin_watching(ctx, 0, x);
        tfl_tape *t3 = begin_watching(ctx, 0, x);
        tfl_tensor *y = sum_all(ctx, tfl_pow(ctx, x, tfl_scalar_f64(ctx, 4)));
        tfl_tape_end(t3);
        tfl_tensor *g3 = gradnn(t3, y, x);
        tfl_tape_end(t2);
        tfl_tensor *g2 = gradnn(t2, g3, x);
        tfl_tape_end(t1);
        tfl_tensor *g1 = gradnn(t1, g2, x);
        double w3[NX], w2[NX], w1[NX];
        for (int i = 0; i < NX; i++) {
            double v = XS[i];
            w3[i] = 4 * v * v * v;
            w2[i] = 12 * v * v;
            w1[i] = 24 * v;
        }
        EXPECT_F64(g3, w3, NX, 1e-12);
        EXPECT_F64(g2, w2, NX, 1e-12);
        EXPECT_F64(g1, w1, NX, 1e-12);
        tfl_tape_free(t3);
        tfl_tape_free(t2);
        tfl_tape_free(t1);
        expect_no_error(ctx);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        tfl_tensor_release(x);
    }
}

/* ---- Hessian-vector product of an MLP loss
 * ------------------------------------------------------- */

enum { B = 4, D = 3, H = 5 };

static const double MX[B * D] = {0.5, -1.0, 0.25, 1.5, 0.3, -0.7, -0.2, 0.8, 1.1, 0.9, -1.3, 0.4};
static const double MW1[D * H] = {0.3, -0.5, 0.8,  0.1,  -0.2, 0.6,  0.4, -0.3,
                                  0.2, 0.7,  -0.9, 0.05, 0.5,  -0.6, 0.35};
static const double MB1[H] = {0.1, -0.2, 0.05, 0.3, -0.1};
static const double MW2[H] = {0.7, -1.2, 0.4, 0.9, -0.5};
static const double MV[D * H] = {1.0, -0.5, 0.25, 2.0, -1.5, 0.3,  0.8, -1.1,
                                 0.6, 0.1,  -0.4, 1.2, -0.9, 0.45, 0.7};

/* mean((tanh(x W1 + b1) W2)^2) */
static tfl_tensor *mlp_loss(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *w1,
                            const tfl_tensor *b1, const tfl_tensor *w2)
{
    tfl_tensor *h = tfl_tanh(ctx, tfl_add(ctx, tfl_matmul(ctx, x, w1, 0), b1));
    tfl_tensor *o = tfl_matmul(ctx, h, w2, 0);
    return tfl_reduce_mean(ctx, tfl_mul(ctx, o, o), 0, NULL, false);
}

typedef struct mlp {
    tfl_tensor *x, *w1, *b1, *w2;
} mlp;

static mlp mlp_make(tfl_ctx *ctx, const double *w1, bool variables)
{
    mlp m;
    const int64_t sx[2] = {B, D}, sw1[2] = {D, H}, sb1[1] = {H}, sw2[2] = {H, 1};
    m.x = tens(ctx, F64, 2, sx, MX);
    if (variables) {
        m.w1 = var_from(ctx, F64, 2, sw1, w1, NULL);
        m.b1 = var_from(ctx, F64, 1, sb1, MB1, NULL);
        m.w2 = var_from(ctx, F64, 2, sw2, MW2, NULL);
    } else {
        m.w1 = tens(ctx, F64, 2, sw1, w1);
        m.b1 = tens(ctx, F64, 1, sb1, MB1);
        m.w2 = tens(ctx, F64, 2, sw2, MW2);
    }
    return m;
}

/* dloss/dW1 at w1, from a tape of its own, into out[D * H] */
static void mlp_grad(tfl_ctx *ctx, const double *w1, double *out)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    mlp m = mlp_make(ctx, w1, false);
    tfl_tape *tape = begin_watching(ctx, 0, m.w1);
    tfl_tensor *loss = mlp_loss(ctx, m.x, m.w1, m.b1, m.w2);
    tfl_tape_end(tape);
    tfl_tensor *g = gradnn(tape, loss, m.w1);
    assert_int_equal(tfl_tensor_to_host(g, out, sizeof(double) * D * H), TFL_OK);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void check_hvp(tfl_ctx *ctx, bool variables)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    mlp m = mlp_make(ctx, MW1, variables);
    tfl_tensor *v = tens(ctx, F64, 2, (const int64_t[]){D, H}, MV);
    tfl_tape *outer = begin_watching(ctx, 0, m.w1);
    tfl_tape *inner = begin_watching(ctx, 0, m.w1);
    tfl_tensor *loss = mlp_loss(ctx, m.x, m.w1, m.b1, m.w2);
    tfl_tape_end(inner);
    tfl_tensor *g = gradnn(inner, loss, m.w1);
    tfl_tensor *s = sum_all(ctx, tfl_mul(ctx, g, v));
    tfl_tape_end(outer);
    tfl_tensor *hv = gradnn(outer, s, m.w1);
    expect_shape(hv, 2, (const int64_t[]){D, H});

    /* the inner gradient is the plain one, and Hv matches (g(W1 + eps v) - g(W1 - eps v)) / 2eps */
    const double eps = 1e-6;
    double g0[D * H], gp[D * H], gm[D * H], wp[D * H], wm[D * H], fd[D * H], got[D * H];
    mlp_grad(ctx, MW1, g0);
    EXPECT_F64(g, g0, D * H, 1e-14);
    for (int i = 0; i < D * H; i++) {
        wp[i] = MW1[i] + eps * MV[i];
        wm[i] = MW1[i] - eps * MV[i];
    }
    mlp_grad(ctx, wp, gp);
    mlp_grad(ctx, wm, gm);
    double scale = 0;
    for (int i = 0; i < D * H; i++) {
        fd[i] = (gp[i] - gm[i]) / (2 * eps);
        scale = fmax(scale, fabs(fd[i]));
    }
    assert_true(scale > 1e-2); /* a direction with curvature: the check means something */
    assert_int_equal(tfl_tensor_to_host(hv, got, sizeof got), TFL_OK);
    for (int i = 0; i < D * H; i++) {
        if (!(fabs(got[i] - fd[i]) <= 1e-6 * fmax(fabs(fd[i]), scale))) {
            print_error("Hv[%d] = %.17g, finite differences %.17g\n", i, got[i], fd[i]);
            fail();
        }
    }
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    if (variables) {
        tfl_tensor_release(m.w1);
        tfl_tensor_release(m.b1);
        tfl_tensor_release(m.w2);
    }
}

static void test_hvp_mlp_watched_tensors(void **state)
{
    check_hvp(((fixture *)*state)->ctx, false);
}

static void test_hvp_mlp_variables(void **state)
{
    check_hvp(((fixture *)*state)->ctx, true);
}

/* A Jacobian-vector product by differentiating a VJP with respect to its output gradient u
 * (which the outer tape watches): for y = tanh(M x), J v = (1 - y^2) * (M v). */
static void test_jvp_by_double_vjp(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const double M[6] = {0.5, -1, 0.25, 2, 0.1, -0.3}, X[3] = {0.3, -0.2, 0.7}, V[3] = {1, 2, -1};
    tfl_tensor *m = tens(ctx, F64, 2, (const int64_t[]){2, 3}, M);
    tfl_tensor *x = tens(ctx, F64, 2, (const int64_t[]){3, 1}, X);
    tfl_tensor *v = tens(ctx, F64, 2, (const int64_t[]){3, 1}, V);
    tfl_tensor *u = tens(ctx, F64, 2, (const int64_t[]){2, 1}, (const double[]){0.7, -1.3});
    tfl_tape *outer = begin_watching(ctx, 0, u);
    tfl_tape *inner = begin_watching(ctx, 0, x);
    tfl_tensor *y = tfl_tanh(ctx, tfl_matmul(ctx, m, x, 0));
    tfl_tape_end(inner);
    tfl_tensor *g = NULL;
    assert_int_equal(tfl_tape_vjp(inner, y, u, 1, (const tfl_tensor *[]){x}, &g, 0), TFL_OK);
    tfl_tensor *s = sum_all(ctx, tfl_mul(ctx, g, v));
    tfl_tape_end(outer);
    tfl_tensor *jv = gradnn(outer, s, u);
    double want[2];
    for (int i = 0; i < 2; i++) {
        double mx = 0, mv = 0;
        for (int k = 0; k < 3; k++) {
            mx += M[i * 3 + k] * X[k];
            mv += M[i * 3 + k] * V[k];
        }
        want[i] = (1 - tanh(mx) * tanh(mx)) * mv;
    }
    EXPECT_F64(jv, want, 2, 1e-12);
    expect_shape(jv, 2, (const int64_t[]){2, 1});
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- gradient calls while recording -----------------------------------------------------------
 */

static void test_gradient_while_recording(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = make_x(ctx, false);
    tfl_tape *outer = begin_watching(ctx, TFL_TAPE_PERSISTENT, x);
    tfl_tape *inner = begin_watching(ctx, TFL_TAPE_PERSISTENT, x);
    tfl_tensor *y = sum_all(ctx, cube(ctx, x));
    assert_int_equal(tfl_tape_size(inner), 3);
    assert_int_equal(tfl_tape_size(outer), 3);
    double w1[NX], w2[NX];
    for (int i = 0; i < NX; i++) {
        w1[i] = cube1(XS[i]);
        w2[i] = cube2(XS[i]);
    }

    /* the inner tape, still recording, does not record its own backward pass; the outer does */
    tfl_tensor *g = gradnn(inner, y, x);
    EXPECT_F64(g, w1, NX, 1e-12);
    assert_int_equal(tfl_tape_size(inner), 3);
    int64_t outer_size = tfl_tape_size(outer);
    assert_true(outer_size > 3);
    tfl_tensor *g2 = tfl_mul(ctx, g, g); /* g is the outer's value, not the inner's */
    assert_int_equal(tfl_tape_size(inner), 3);
    assert_int_equal(tfl_tape_size(outer), outer_size + 1);
    EXPECT_F64(gradnn(inner, y, x), w1, NX, 1e-12); /* persistent: again */
    assert_int_equal(tfl_tape_size(inner), 3);
    outer_size = tfl_tape_size(outer);

    /* the outer tape, still recording: second derivatives, twice, and its size stays */
    tfl_tensor *h = gradnn(outer, g, x);
    EXPECT_F64(h, w2, NX, 1e-12);
    assert_int_equal(tfl_tape_size(outer), outer_size);
    EXPECT_F64(gradnn(outer, g, x), w2, NX, 1e-12);
    EXPECT_F64(gradnn(outer, y, x), w1, NX, 1e-12);
    double w4[NX]; /* d/dx (3x^2)^2 = 36 x^3 */
    for (int i = 0; i < NX; i++)
        w4[i] = 36 * XS[i] * XS[i] * XS[i];
    EXPECT_F64(gradnn(outer, g2, x), w4, NX, 1e-11);
    assert_int_equal(tfl_tape_size(outer), outer_size);
    tfl_tensor *gi = (tfl_tensor *)&gi; /* g2 is not on the inner tape: unconnected */
    assert_int_equal(tfl_tape_gradient(inner, g2, 1, (const tfl_tensor *[]){x}, &gi, 0), TFL_OK);
    assert_null(gi);
    tfl_tape_end(inner);
    tfl_tape_end(outer);
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* tfl_ctx_free frees the tapes still alive and what they saved (no tensor is left over) */
static void test_ctx_free_frees_live_tapes(void **state)
{
    (void)state;
    log_capture *cap = calloc(1, sizeof *cap);
    assert_non_null(cap);
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.log_fn = capture_log, .log_user = cap, .log_level = TFL_LOG_WARNING},
        NULL);
    assert_non_null(ctx);
    tfl_tensor *x = make_x(ctx, true);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *outer = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tape *inner = tfl_tape_begin(ctx, 0);
    tfl_tensor *y = sum_all(ctx, tfl_exp(ctx, tfl_mul(ctx, x, x)));
    tfl_tape *ended = tfl_tape_begin(ctx, 0);
    tfl_tensor *z = sum_all(ctx, tfl_mul(ctx, y, x));
    tfl_tape_end(ended);
    tfl_tensor *g = gradnn(inner, y, x); /* 2x e^(x^2), recorded by the outer tape */
    double w[NX];
    for (int i = 0; i < NX; i++)
        w[i] = 2 * XS[i] * exp(XS[i] * XS[i]);
    EXPECT_F64(g, w, NX, 1e-9);
    assert_non_null(z);
    assert_true(tfl_tape_size(outer) > tfl_tape_size(ended));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(x); /* the tapes do not keep the variable alive, only what they saved */
    assert_true(live_tensors(ctx) > 0);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx); /* outer, inner (used) and ended are still alive */
    assert_int_equal(count_lines(cap, "still alive"), 0);
    assert_int_equal(cap->total, 0);
    free(cap);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_inner_and_outer_first_derivatives),
        T(test_second_derivative_cube),
        T(test_second_derivative_cube_variable),
        T(test_second_derivative_tanh),
        T(test_second_derivative_tanh_variable),
        T(test_second_derivative_exp),
        T(test_third_derivative_through_three_tapes),
        T(test_hvp_mlp_watched_tensors),
        T(test_hvp_mlp_variables),
        T(test_jvp_by_double_vjp),
        T(test_gradient_while_recording),
        cmocka_unit_test(test_ctx_free_frees_live_tapes),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
