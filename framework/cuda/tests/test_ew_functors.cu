/*
 * framework/cuda/tests/test_ew_functors.cu: the functors of the GPU's elementwise kernels
 * (framework/cuda/ew_functors.cuh, generated from framework/ops/op_list.h's TFL_EW_LIST),
 * compiled by nvcc and run on the host, against the CPU's kernels through the public ops, bit
 * for bit: every real op of the list with GPU dtypes, in each of them, and the gradient ops
 * of the activations (reached through a tape); float16 and bfloat16 through Half, against
 * the CPU's path for them (the float32 kernels between two conversions). Without a GPU this checks what k_elementwise.cu
 * computes per element: the dtype overloads, the attribute passing and the formulas; on the
 * device only CUDA's libm differs from the host's. Built only with the CUDA backend.
 */
#include "host_test.h"

#include <tapeflow/tapeflow.h>

#include "ew_functors.cuh"

using namespace tflcu_ew;

/* inputs: signed zeros, NaN, infinities, the activations' kinks, large and small values */
static const double k_x[] = {0.0,  -0.0, 1.0,  -1.0, 0.5,   -0.5,  2.5,  -2.5, 3.0,  -3.0, 2.999,
                             -7.0, 20.0, 30.0, 88.0, -88.0, 700.0, 1e-8, NAN,  INFINITY, -INFINITY,
                             0.1,  -4.2, 6.0};
static const double k_y[] = {1.0,  -2.0, 0.5,  3.0,  -0.0,  0.0,   -1.5, 2.0,  0.25, 7.0,  -3.0,
                             1e-3, 2.0,  -1.0, 0.5,  4.0,   -2.0,  1.0,  1.0,  2.0,  -0.5,
                             NAN,  9.0,  0.0};
#define N ((int)(sizeof k_x / sizeof k_x[0]))
static const int64_t k_shape[1] = {N};

static tfl_tensor *input(tfl_ctx *ctx, const double *v, tfl_dtype dt)
{
    return tfl_cast(ctx, tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, k_shape, v), dt);
}

template <typename T> static void values(const tfl_tensor *t, T *out)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_to_host(t, out, sizeof(T) * N), TFL_OK);
}

/* a value as a double, for messages */
template <typename T> static double to_d(T v) { return (double)v; }
static double to_d(__half v) { return (double)widen(v); }
static double to_d(__nv_bfloat16 v) { return (double)widen(v); }

/* the functor that runs on dtype T: f itself, or Half<T, F> for the 16-bit dtypes */
template <typename T, typename F> struct on {
    static F of(F f) { return f; }
};
template <typename F> struct on<__half, F> {
    static Half<__half, F> of(F f) { return Half<__half, F>{f}; }
};
template <typename F> struct on<__nv_bfloat16, F> {
    static Half<__nv_bfloat16, F> of(F f) { return Half<__nv_bfloat16, F>{f}; }
};

/* the CPU's result and the functor's, element for element and bit for bit (NaN against NaN
 * by value: a 16-bit NaN's payload is the conversion's) */
template <typename T, typename TO>
static void same_bits(const char *what, const char *dt, const TO *cpu, const TO *gpu)
{
    for (int i = 0; i < N; i++) {
        double c = to_d(cpu[i]), g = to_d(gpu[i]);
        if (memcmp(&cpu[i], &gpu[i], sizeof(TO)) != 0 && !(c != c && g != g))
            fail_msg("%s (%s) element %d: the CPU gives %.17g, the functor %.17g", what, dt, i, c,
                     g);
    }
}

typedef tfl_tensor *(*un_op)(tfl_ctx *ctx, const tfl_tensor *x);
typedef tfl_tensor *(*bin_op)(tfl_ctx *ctx, const tfl_tensor *a, const tfl_tensor *b);

template <typename T, typename F>
static void unary(tfl_ctx *ctx, const char *what, un_op op, F f, tfl_dtype dt)
{
    tfl_frame_push(ctx);
    tfl_tensor *x = input(ctx, k_x, dt);
    T xv[N];
    values(x, xv);
    auto g = on<T, F>::of(f);
    typedef decltype(g(T())) TO;
    TO cpu[N], gpu[N];
    values(op(ctx, x), cpu);
    for (int i = 0; i < N; i++) gpu[i] = g(xv[i]);
    same_bits<T>(what, tfl_dtype_name(dt), cpu, gpu);
    tfl_frame_pop(ctx);
}

template <typename T, typename F>
static void binary(tfl_ctx *ctx, const char *what, bin_op op, F f, tfl_dtype dt)
{
    tfl_frame_push(ctx);
    tfl_tensor *x = input(ctx, k_x, dt), *y = input(ctx, k_y, dt);
    T xv[N], yv[N];
    values(x, xv);
    values(y, yv);
    auto g = on<T, F>::of(f);
    typedef decltype(g(T(), T())) TO;
    TO cpu[N], gpu[N];
    values(op(ctx, x, y), cpu);
    for (int i = 0; i < N; i++) gpu[i] = g(xv[i], yv[i]);
    same_bits<T>(what, tfl_dtype_name(dt), cpu, gpu);
    tfl_frame_pop(ctx);
}

/* an activation's gradient op, G(dy, x) = dy f'(x): the vjp of op at x against dy */
template <typename T, typename F>
static void gradient(tfl_ctx *ctx, const char *what, un_op op, F f, tfl_dtype dt)
{
    tfl_frame_push(ctx);
    tfl_tensor *x = input(ctx, k_x, dt), *dy = input(ctx, k_y, dt), *g = NULL;
    T xv[N], dyv[N], cpu[N], gpu[N];
    values(x, xv);
    values(dy, dyv);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    assert_int_equal(tfl_tape_vjp(tape, op(ctx, x), dy, 1, (const tfl_tensor *const *)&x, &g, 0),
                     TFL_OK);
    tfl_tape_free(tape);
    values(g, cpu);
    auto h = on<T, F>::of(f);
    for (int i = 0; i < N; i++) gpu[i] = h(dyv[i], xv[i]);
    same_bits<T>(what, tfl_dtype_name(dt), cpu, gpu);
    tfl_frame_pop(ctx);
}

static tfl_tensor *leaky(tfl_ctx *c, const tfl_tensor *x) { return tfl_leaky_relu(c, x, 0.2); }
static tfl_tensor *gelu_erf(tfl_ctx *c, const tfl_tensor *x) { return tfl_gelu(c, x, false); }
static tfl_tensor *gelu_tanh(tfl_ctx *c, const tfl_tensor *x) { return tfl_gelu(c, x, true); }
static tfl_tensor *elu_07(tfl_ctx *c, const tfl_tensor *x) { return tfl_elu(c, x, 0.7); }

/* the float ops in float32 and float64 */
template <typename T> static void floats(tfl_ctx *ctx, tfl_dtype dt)
{
    unary<T>(ctx, "Neg", tfl_neg, F_neg{0}, dt);
    unary<T>(ctx, "Exp", tfl_exp, F_exp{0}, dt);
    unary<T>(ctx, "Log", tfl_log, F_log{0}, dt);
    unary<T>(ctx, "Sqrt", tfl_sqrt, F_sqrt{0}, dt);
    unary<T>(ctx, "Abs", tfl_abs, F_abs{0}, dt);
    unary<T>(ctx, "Erf", tfl_erf, F_erf{0}, dt);
    unary<T>(ctx, "Sign", tfl_sign, F_sign{0}, dt);
    unary<T>(ctx, "Relu", tfl_relu, F_relu{0}, dt);
    unary<T>(ctx, "LeakyRelu", leaky, F_leaky_relu{0.2}, dt);
    unary<T>(ctx, "Sigmoid", tfl_sigmoid, F_sigmoid{0}, dt);
    unary<T>(ctx, "Tanh", tfl_tanh, F_tanh{0}, dt);
    unary<T>(ctx, "Gelu (erf)", gelu_erf, F_gelu{0}, dt);
    unary<T>(ctx, "Gelu (tanh)", gelu_tanh, F_gelu{1}, dt);
    unary<T>(ctx, "Softplus", tfl_softplus, F_softplus{0}, dt);
    unary<T>(ctx, "Silu", tfl_silu, F_silu{0}, dt);
    unary<T>(ctx, "Elu", elu_07, F_elu{0.7}, dt);
    unary<T>(ctx, "HardSigmoid", tfl_hard_sigmoid, F_hard_sigmoid{0}, dt);
    gradient<T>(ctx, "SoftplusGrad", tfl_softplus, F_softplus_grad{0}, dt);
    gradient<T>(ctx, "SiluGrad", tfl_silu, F_silu_grad{0}, dt);
    gradient<T>(ctx, "EluGrad", elu_07, F_elu_grad{0.7}, dt);
    gradient<T>(ctx, "HardSigmoidGrad", tfl_hard_sigmoid, F_hard_sigmoid_grad{0}, dt);
    binary<T>(ctx, "Add", tfl_add, F_add{0}, dt);
    binary<T>(ctx, "Sub", tfl_sub, F_sub{0}, dt);
    binary<T>(ctx, "Mul", tfl_mul, F_mul{0}, dt);
    binary<T>(ctx, "Div", tfl_div, F_div{0}, dt);
    binary<T>(ctx, "Pow", tfl_pow, F_pow{0}, dt);
    binary<T>(ctx, "Maximum", tfl_maximum, F_maximum{0}, dt);
    binary<T>(ctx, "Minimum", tfl_minimum, F_minimum{0}, dt);
    binary<T>(ctx, "ReluGrad", tfl_relu_grad, F_relu_grad{0}, dt);
    binary<T>(ctx, "SigmoidCrossEntropyWithLogits", tfl_sigmoid_cross_entropy,
              F_sigmoid_xent{0}, dt);
    binary<T>(ctx, "Equal", tfl_equal, F_equal{0}, dt);
    binary<T>(ctx, "NotEqual", tfl_not_equal, F_not_equal{0}, dt);
    binary<T>(ctx, "Less", tfl_less, F_less{0}, dt);
    binary<T>(ctx, "LessEqual", tfl_less_equal, F_less_equal{0}, dt);
    binary<T>(ctx, "Greater", tfl_greater, F_greater{0}, dt);
    binary<T>(ctx, "GreaterEqual", tfl_greater_equal, F_greater_equal{0}, dt);
}

/* the integer ops (wrapping) in int32 and int64: the inputs cast from the float ones
 * (saturating: NaN -> 0, infinities -> the extremes, which wrap in Add, Mul, Neg, Abs) */
template <typename T> static void ints(tfl_ctx *ctx, tfl_dtype dt)
{
    unary<T>(ctx, "Neg", tfl_neg, F_neg{0}, dt);
    unary<T>(ctx, "Abs", tfl_abs, F_abs{0}, dt);
    unary<T>(ctx, "Sign", tfl_sign, F_sign{0}, dt);
    binary<T>(ctx, "Add", tfl_add, F_add{0}, dt);
    binary<T>(ctx, "Sub", tfl_sub, F_sub{0}, dt);
    binary<T>(ctx, "Mul", tfl_mul, F_mul{0}, dt);
    binary<T>(ctx, "Maximum", tfl_maximum, F_maximum{0}, dt);
    binary<T>(ctx, "Minimum", tfl_minimum, F_minimum{0}, dt);
    binary<T>(ctx, "Equal", tfl_equal, F_equal{0}, dt);
    binary<T>(ctx, "Less", tfl_less, F_less{0}, dt);
    binary<T>(ctx, "GreaterEqual", tfl_greater_equal, F_greater_equal{0}, dt);
}

static void test_functors_match_the_cpu(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    floats<float>(ctx, TFL_DTYPE_FLOAT32);
    floats<double>(ctx, TFL_DTYPE_FLOAT64);
    floats<__half>(ctx, TFL_DTYPE_FLOAT16);
    floats<__nv_bfloat16>(ctx, TFL_DTYPE_BFLOAT16);
    ints<int32_t>(ctx, TFL_DTYPE_INT32);
    ints<int64_t>(ctx, TFL_DTYPE_INT64);
    /* bool: logic and equality on 0/1 */
    tfl_frame_push(ctx);
    tfl_tensor *p = tfl_greater(ctx, input(ctx, k_x, TFL_DTYPE_FLOAT64), tfl_scalar_f64(ctx, 0));
    tfl_tensor *q = tfl_less(ctx, input(ctx, k_y, TFL_DTYPE_FLOAT64), tfl_scalar_f64(ctx, 1));
    uint8_t pv[N], qv[N], cpu[N], gpu[N];
    values(p, pv);
    values(q, qv);
    values(tfl_logical_and(ctx, p, q), cpu);
    for (int i = 0; i < N; i++) gpu[i] = F_logical_and{0}(pv[i], qv[i]);
    same_bits<uint8_t>("LogicalAnd", "bool", cpu, gpu);
    values(tfl_logical_or(ctx, p, q), cpu);
    for (int i = 0; i < N; i++) gpu[i] = F_logical_or{0}(pv[i], qv[i]);
    same_bits<uint8_t>("LogicalOr", "bool", cpu, gpu);
    values(tfl_logical_not(ctx, p), cpu);
    for (int i = 0; i < N; i++) gpu[i] = F_logical_not{0}(pv[i]);
    same_bits<uint8_t>("LogicalNot", "bool", cpu, gpu);
    values(tfl_equal(ctx, p, q), cpu);
    for (int i = 0; i < N; i++) gpu[i] = F_equal{0}(pv[i], qv[i]);
    same_bits<uint8_t>("Equal", "bool", cpu, gpu);
    tfl_frame_pop(ctx);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_functors_match_the_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
