/*
 * framework/cpu/k_elementwise.c: the CPU loops of the elementwise ops (op_list.h's
 * TFL_EW_LIST: arithmetic, comparisons, logic, unary math, activations, sigmoid
 * cross-entropy), one per op and dtype, generated from the list around the scalar functions
 * of ops/ew_math.h, and the one kernel that drives them through the strided iterator. Loops
 * are written so the compiler vectorises the contiguous cases: same strides, or one operand
 * a broadcast scalar.
 */
#include "ops/op.h"
#include "ops/ew_math.h"
#include "cpu.h"
#include "kernels.h"

typedef uint8_t u8;
typedef float complex c64;
typedef double complex c128;

/* ---- loop templates -------------------------------------------------------------------------- */

/* The body of a loop: o = EXPR(x, y) over n elements; T input type, TO output type. */
#define BIN_BODY(T, TO, EXPR)                                                               \
    TO *restrict o = (TO *)p[0];                                                            \
    const T *a = (const T *)p[1], *b = (const T *)p[2];                                     \
    if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                    \
        for (int64_t i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (EXPR); }            \
    } else if (s[0] == sizeof(TO) && s[1] == sizeof(T) && s[2] == 0) {                      \
        const T y = b[0];                                                                   \
        for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); }                      \
    } else if (s[0] == sizeof(TO) && s[1] == 0 && s[2] == sizeof(T)) {                      \
        const T x = a[0];                                                                   \
        for (int64_t i = 0; i < n; i++) { T y = b[i]; o[i] = (EXPR); }                      \
    } else {                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T x = *(const T *)(p[1] + i * s[1]), y = *(const T *)(p[2] + i * s[2]);         \
            *(TO *)(p[0] + i * s[0]) = (EXPR);                                              \
        }                                                                                   \
    }

/* The body of a loop: o = EXPR(x) over n elements. */
#define UN_BODY(T, TO, EXPR)                                                                \
    TO *restrict o = (TO *)p[0];                                                            \
    const T *a = (const T *)p[1];                                                           \
    if (s[0] == sizeof(TO) && s[1] == sizeof(T)) {                                          \
        for (int64_t i = 0; i < n; i++) { T x = a[i]; o[i] = (EXPR); }                      \
    } else {                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T x = *(const T *)(p[1] + i * s[1]);                                            \
            *(TO *)(p[0] + i * s[0]) = (EXPR);                                              \
        }                                                                                   \
    }

/* A loop of an op without attribute (BODY is BIN_BODY or UN_BODY). */
#define LOOP(name, BODY, T, TO, EXPR)                                                       \
    static void name(int64_t n, char **p, const int64_t *s, const void *aux)                \
    {                                                                                       \
        (void)aux;                                                                          \
        BODY(T, TO, EXPR)                                                                   \
    }

/*
 * A loop of an op with the scalar attribute A (alpha, approximate): EXPR is compiled once with
 * A = 0 as a constant, so that gelu's exact form loses the tanh branch (a libm call) and
 * vectorizes, and once with A as given; in AVX2 and AVX-512 copies beside the baseline's
 * (TFL_WIDE_LOOPS: the same IEEE operations, so the same results, on wider vectors).
 */
#define LOOP_A(name, BODY, T, TO, EXPR)                                                     \
    TFL_WIDE_LOOPS static void name(int64_t n, char **p, const int64_t *s, const void *aux)                \
    {                                                                                       \
        const double attr = aux ? ((const tfl__scalar_attrs *)aux)->value : 0.0;            \
        if (attr == 0.0) {                                                                  \
            const double A = 0.0;                                                           \
            BODY(T, TO, EXPR)                                                               \
        } else {                                                                            \
            const double A = attr;                                                          \
            BODY(T, TO, EXPR)                                                               \
        }                                                                                   \
    }

/* ---- the loops and their tables, generated from op_list.h's TFL_EW_LIST ---------------------- */

/* each dtype suffix's C type, and the output type of each `out` column */
#define T_b u8
#define T_i32 int32_t
#define T_i64 int64_t
#define T_f32 float
#define T_f64 double
#define T_c64 c64
#define T_c128 c128
#define OUT_SAME(S) T_##S
#define OUT_BOOL(S) u8
#define OUT_REAL(S) REAL_##S
#define REAL_i32 int32_t
#define REAL_i64 int64_t
#define REAL_f32 float
#define REAL_f64 double
#define REAL_c64 float
#define REAL_c128 double

/* the dtypes of each `cpu` set: L(p, q, DTYPE, sfx) for each, p and q passed through */
#define SET_NUM(L, p, q)                                                                          \
    L(p, q, INT32, i32) L(p, q, INT64, i64) L(p, q, FLOAT32, f32) L(p, q, FLOAT64, f64)          \
    L(p, q, COMPLEX64, c64) L(p, q, COMPLEX128, c128)
#define SET_REAL(L, p, q)                                                                         \
    L(p, q, INT32, i32) L(p, q, INT64, i64) L(p, q, FLOAT32, f32) L(p, q, FLOAT64, f64)
#define SET_FLOATC(L, p, q)                                                                       \
    L(p, q, FLOAT32, f32) L(p, q, FLOAT64, f64) L(p, q, COMPLEX64, c64) L(p, q, COMPLEX128, c128)
#define SET_FLOAT(L, p, q) L(p, q, FLOAT32, f32) L(p, q, FLOAT64, f64)
#define SET_ALL(L, p, q) L(p, q, BOOL, b) SET_NUM(L, p, q)
#define SET_BOOL(L, p, q) L(p, q, BOOL, b)
#define SET_CPLX(L, p, q) L(p, q, COMPLEX64, c64) L(p, q, COMPLEX128, c128)

/* the loops of one dtype: <fn>_<sfx>_loop (and <fn>_grad_<sfx>_loop for D, DA) */
#define L_U(fn, out, DT, S)                                                                       \
    LOOP(fn##_##S##_loop, UN_BODY, T_##S, OUT_##out(S), tfl_ew_##fn##_##S(x))
#define L_UA(fn, out, DT, S)                                                                      \
    LOOP_A(fn##_##S##_loop, UN_BODY, T_##S, OUT_##out(S), tfl_ew_##fn##_##S(x, A))
#define L_B(fn, out, DT, S)                                                                       \
    LOOP(fn##_##S##_loop, BIN_BODY, T_##S, OUT_##out(S), tfl_ew_##fn##_##S(x, y))
/* the gradient op: dy * f'(x), with x the incoming gradient and y the op's input */
#define L_D(fn, out, DT, S)                                                                       \
    L_U(fn, out, DT, S)                                                                           \
    LOOP(fn##_grad_##S##_loop, BIN_BODY, T_##S, T_##S, x * tfl_ew_##fn##_d_##S(y))
#define L_DA(fn, out, DT, S)                                                                      \
    L_UA(fn, out, DT, S)                                                                          \
    LOOP_A(fn##_grad_##S##_loop, BIN_BODY, T_##S, T_##S, x * tfl_ew_##fn##_d_##S(y, A))
#define LOOPS_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) SET_##cpu(L_##kind, fn, out)
TFL_EW_LIST(LOOPS_, ~)

/* the tables, one per op, indexed by dtype */
#define ENTRY_(fn, sfx, DT, S) [TFL_DTYPE_##DT] = fn##sfx##_##S##_loop,
#define TABLE_(fn, sfx, cpu)                                                                \
    static const tfl__loop_fn fn##sfx##_loops[TFL_DTYPE_COUNT] = {SET_##cpu(ENTRY_, fn, sfx)};
#define TABLES_U(fn, cpu) TABLE_(fn, , cpu)
#define TABLES_UA(fn, cpu) TABLE_(fn, , cpu)
#define TABLES_B(fn, cpu) TABLE_(fn, , cpu)
#define TABLES_D(fn, cpu) TABLE_(fn, , cpu) TABLE_(fn, _grad, cpu)
#define TABLES_DA(fn, cpu) TABLES_D(fn, cpu)
#define TABLES_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) TABLES_##kind(fn, cpu)
TFL_EW_LIST(TABLES_, ~)

/* ---- the kernel ----------------------------------------------------------------------------------- */

/* Integer division by zero and negative integer powers are errors (TensorFlow's CPU rule). */
static tfl_status check_integer_rhs(const tfl__kcall *k)
{
    const tfl_tensor *b = k->in[1];
    if (!tfl_dtype_is_integer((tfl_dtype)b->dtype)) return TFL_OK;
    bool is_div = k->op == TFL_OP_DIV;
    for (int64_t i = 0; i < b->numel; i++) {
        double v = tfl__load_f64(tfl__elem_ptr(b, i), (tfl_dtype)b->dtype); /* ints only */
        if (is_div && v == 0.0)
            return tfl__set_error(k->ctx, TFL_INVALID_ARGUMENT, "Div: Integer division by zero");
        if (!is_div && v < 0.0)
            return tfl__set_error(k->ctx, TFL_INVALID_ARGUMENT,
                                  "Pow: Integers to negative integer powers are not allowed");
    }
    return TFL_OK;
}

static tfl_status k_elementwise(const tfl__kcall *k)
{
    const tfl__loop_fn *loops = k->dev->kernels[k->op].data;
    tfl__loop_fn fn = loops[k->in[0]->dtype];
    if (!fn)
        return tfl__set_error(k->ctx, TFL_INTERNAL, "%s: no CPU loop for %s",
                              tfl__op_defs[k->op].name, tfl_dtype_name((tfl_dtype)k->in[0]->dtype));
    if (k->op == TFL_OP_DIV || k->op == TFL_OP_POW) TFL_TRY(check_integer_rhs(k));
    const tfl_tensor *ops[TFL_ITER_MAX_OPS] = {k->out};
    for (int i = 0; i < k->n_in; i++) ops[i + 1] = k->in[i];
    tfl__iter it;
    tfl__iter_init(&it, k->out->rank, k->out->shape, 1 + k->n_in, ops);
    tfl__iter_run(&it, fn, k->attrs, k->ctx->num_threads, true);
    return TFL_OK;
}

static tfl_status k_identity(const tfl__kcall *k)
{
    tfl__cpu_copy(k->out, k->in[0]);
    return TFL_OK;
}

/* the kernel table: every line of TFL_EW_LIST (and its gradient op) runs k_elementwise */
#define K_(id, fn, sfx, cpu) [TFL_OP_##id] = {k_elementwise, CPU_MASK_(cpu), fn##sfx##_loops},
#define CPU_MASK_(cpu) (0u SET_##cpu(MASK_, ~, ~))
#define MASK_(p, q, DT, S) | TFL_DT(DT)
#define KERNELS_U(id, fn, cpu) K_(id, fn, , cpu)
#define KERNELS_UA(id, fn, cpu) K_(id, fn, , cpu)
#define KERNELS_B(id, fn, cpu) K_(id, fn, , cpu)
#define KERNELS_D(id, fn, cpu) K_(id, fn, , cpu) K_(id##_GRAD, fn, _grad, cpu)
#define KERNELS_DA(id, fn, cpu) KERNELS_D(id, fn, cpu)
#define KERNELS_(ctx, id, nm, fn, kind, out, cpu, gpu, api, saves) KERNELS_##kind(id, fn, cpu)

const tfl__kernel tfl__cpu_elementwise_kernels[TFL_OP_COUNT] = {
    [TFL_OP_IDENTITY] = {k_identity, TFL_MASK_ALL, NULL},
    TFL_EW_LIST(KERNELS_, ~)
};
