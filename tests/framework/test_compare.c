/* test_compare.c: cmocka tests of tapeflow's comparisons and logic (equal not_equal less
 * less_equal greater greater_equal logical_and/or/not): values, dtypes, broadcasting, errors. */
#include "test_ops_helpers.h"

typedef tfl_tensor *(*binop_fn)(tfl_ctx *, const tfl_tensor *, const tfl_tensor *);

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define INTS_AND_FLOATS "int32, int64, float16, bfloat16, float32, float64"

static const tfl_dtype k_ordered[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};

typedef struct cmp_case {
    const char *name;
    binop_fn fn;
    bool (*ref)(double, double);
} cmp_case;

static bool ref_eq(double a, double b) { return a == b; }
static bool ref_ne(double a, double b) { return a != b; }
static bool ref_lt(double a, double b) { return a < b; }
static bool ref_le(double a, double b) { return a <= b; }
static bool ref_gt(double a, double b) { return a > b; }
static bool ref_ge(double a, double b) { return a >= b; }

static const cmp_case k_cmps[] = {
    {"Equal", tfl_equal, ref_eq},          {"NotEqual", tfl_not_equal, ref_ne},
    {"Less", tfl_less, ref_lt},            {"LessEqual", tfl_less_equal, ref_le},
    {"Greater", tfl_greater, ref_gt},      {"GreaterEqual", tfl_greater_equal, ref_ge},
};

/* Compares two rank-1 tensors of dt against the reference (results are bool 0/1). */
static void check_cmp_(tfl_ctx *ctx, const cmp_case *c, tfl_dtype dt, int n, const double *a,
                       const double *b, int line)
{
    int64_t shape[1] = {n};
    double *want = calloc((size_t)n + 1, sizeof(double));
    assert_non_null(want);
    for (int i = 0; i < n; i++) want[i] = c->ref(a[i], b[i]) ? 1.0 : 0.0;
    tfl_tensor *ta = th_tensor_(ctx, dt, 1, shape, a, (size_t)n, false, __FILE__, line);
    tfl_tensor *tb = th_tensor_(ctx, dt, 1, shape, b, (size_t)n, false, __FILE__, line);
    tfl_tensor *r = c->fn(ctx, ta, tb);
    if (!r) print_error("%s on %s failed\n", c->name, tfl_dtype_name(dt));
    th_expect_(ctx, r, TH_BOOL, 1, shape, want, (size_t)n, false, 0, __FILE__, line);
    free(want);
}

static void test_compare_ordered_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double a[] = {1, 2, 3, -1, 0, -2.5, 100};
    static const double b[] = {2, 2, 1, -3, 0, -2.25, -100};
    static const double ai[] = {1, 2, 3, -1, 0, -3, 100000};
    static const double bi[] = {2, 2, 1, -3, 0, -2, -100000};
    for (int d = 0; d < NELEMS(k_ordered); d++) {
        tfl_dtype dt = k_ordered[d];
        bool is_int = tfl_dtype_is_integer(dt);
        for (int c = 0; c < NELEMS(k_cmps); c++)
            check_cmp_(ctx, &k_cmps[c], dt, NELEMS(a), is_int ? ai : a, is_int ? bi : b, __LINE__);
    }
    /* hand-written: [1,2,3,-1] vs [2,2,1,-3] */
    tfl_tensor *x = TH_T(ctx, TH_F32, (4), (1, 2, 3, -1));
    tfl_tensor *y = TH_T(ctx, TH_F32, (4), (2, 2, 1, -3));
    TH_EXPECT(ctx, tfl_less(ctx, x, y), TH_BOOL, (4), (1, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_less_equal(ctx, x, y), TH_BOOL, (4), (1, 1, 0, 0), 0);
    TH_EXPECT(ctx, tfl_greater(ctx, x, y), TH_BOOL, (4), (0, 0, 1, 1), 0);
    TH_EXPECT(ctx, tfl_greater_equal(ctx, x, y), TH_BOOL, (4), (0, 1, 1, 1), 0);
    TH_EXPECT(ctx, tfl_equal(ctx, x, y), TH_BOOL, (4), (0, 1, 0, 0), 0);
    TH_EXPECT(ctx, tfl_not_equal(ctx, x, y), TH_BOOL, (4), (1, 0, 1, 1), 0);
    th_end(ctx);
}

/* NaN compares false (and unequal); -0 equals 0; infinities order. */
static void test_compare_nan_inf_zero(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double a[] = {NAN, NAN, 1, -0.0, -INFINITY, INFINITY, INFINITY};
    static const double b[] = {NAN, 1, NAN, 0.0, -INFINITY, 60000, INFINITY};
    static const tfl_dtype dts[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++)
        for (int c = 0; c < NELEMS(k_cmps); c++)
            check_cmp_(ctx, &k_cmps[c], dts[d], NELEMS(a), a, b, __LINE__);
    tfl_tensor *n = TH_T(ctx, TH_F64, (1), (NAN));
    TH_EXPECT(ctx, tfl_equal(ctx, n, n), TH_BOOL, (1), (0), 0);
    TH_EXPECT(ctx, tfl_not_equal(ctx, n, n), TH_BOOL, (1), (1), 0);
    TH_EXPECT(ctx, tfl_less_equal(ctx, n, n), TH_BOOL, (1), (0), 0);
    TH_EXPECT(ctx, tfl_greater_equal(ctx, n, n), TH_BOOL, (1), (0), 0);
    th_end(ctx);
}

/* int64 values that differ beyond double precision must still compare exactly. */
static void test_compare_int64_exact(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t av[3] = {INT64_C(9007199254740993), INT64_MAX, INT64_MIN};
    const int64_t bv[3] = {INT64_C(9007199254740992), INT64_MAX - 1, INT64_MIN + 1};
    int64_t shape[1] = {3};
    tfl_tensor *a = tfl_tensor_new(ctx, TH_I64, 1, shape, av);
    tfl_tensor *b = tfl_tensor_new(ctx, TH_I64, 1, shape, bv);
    assert_non_null(a);
    assert_non_null(b);
    TH_EXPECT(ctx, tfl_equal(ctx, a, b), TH_BOOL, (3), (0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_not_equal(ctx, a, b), TH_BOOL, (3), (1, 1, 1), 0);
    TH_EXPECT(ctx, tfl_greater(ctx, a, b), TH_BOOL, (3), (1, 1, 0), 0);
    TH_EXPECT(ctx, tfl_less(ctx, a, b), TH_BOOL, (3), (0, 0, 1), 0);
    TH_EXPECT(ctx, tfl_equal(ctx, a, a), TH_BOOL, (3), (1, 1, 1), 0);
    th_end(ctx);
}

static void test_equal_all_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *a = TH_TENSOR_N(ctx, dts[d], 1, TH_SHAPE(4), TH_VALS(1, 2, 3, 0), 4);
        tfl_tensor *b = TH_TENSOR_N(ctx, dts[d], 1, TH_SHAPE(4), TH_VALS(1, 0, 3, 5), 4);
        TH_EXPECT(ctx, tfl_equal(ctx, a, b), TH_BOOL, (4), (1, 0, 1, 0), 0);
        TH_EXPECT(ctx, tfl_not_equal(ctx, a, b), TH_BOOL, (4), (0, 1, 0, 1), 0);
    }
    /* bool */
    tfl_tensor *p = TH_T(ctx, TH_BOOL, (4), (1, 0, 1, 0));
    tfl_tensor *q = TH_T(ctx, TH_BOOL, (4), (1, 1, 0, 0));
    TH_EXPECT(ctx, tfl_equal(ctx, p, q), TH_BOOL, (4), (1, 0, 0, 1), 0);
    TH_EXPECT(ctx, tfl_not_equal(ctx, p, q), TH_BOOL, (4), (0, 1, 1, 0), 0);
    /* complex: both parts must agree */
    static const tfl_dtype cdts[] = {TH_C64, TH_C128};
    for (int d = 0; d < 2; d++) {
        tfl_tensor *x = TH_TC(ctx, cdts[d], (4), (1, 2, 1, 2, 2, 0, 0, 0));
        tfl_tensor *y = TH_TC(ctx, cdts[d], (4), (1, 2, 1, 3, 2, 1, -0.0, -0.0));
        TH_EXPECT(ctx, tfl_equal(ctx, x, y), TH_BOOL, (4), (1, 0, 0, 1), 0);
        TH_EXPECT(ctx, tfl_not_equal(ctx, x, y), TH_BOOL, (4), (0, 1, 1, 0), 0);
        tfl_tensor *z = TH_TC(ctx, cdts[d], (2), (3, 0, 4, 0));
        tfl_tensor *w = TH_TC(ctx, cdts[d], (2), (3, 0, 0, 4));
        TH_EXPECT(ctx, tfl_equal(ctx, z, w), TH_BOOL, (2), (1, 0), 0);
    }
    th_end(ctx);
}

static void test_compare_broadcasting(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* (3,1) < (1,4) -> (3,4) */
    tfl_tensor *col = TH_T(ctx, TH_I32, (3, 1), (0, 2, 4));
    tfl_tensor *row = TH_T(ctx, TH_I32, (1, 4), (1, 2, 3, 4));
    TH_EXPECT(ctx, tfl_less(ctx, col, row), TH_BOOL, (3, 4), (1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_equal(ctx, col, row), TH_BOOL, (3, 4), (0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1), 0);
    /* scalar vs tensor, both orders */
    tfl_tensor *s = TH_T0(ctx, TH_F32, 2);
    tfl_tensor *v = TH_T(ctx, TH_F32, (2, 2), (1, 2, 3, 4));
    TH_EXPECT(ctx, tfl_greater_equal(ctx, s, v), TH_BOOL, (2, 2), (1, 1, 0, 0), 0);
    TH_EXPECT(ctx, tfl_greater_equal(ctx, v, s), TH_BOOL, (2, 2), (0, 1, 1, 1), 0);
    /* (2,3) vs (3,) */
    tfl_tensor *m = TH_T(ctx, TH_F64, (2, 3), (1, 5, 3, 4, 2, 6));
    tfl_tensor *r = TH_T(ctx, TH_F64, (3), (1, 2, 6));
    TH_EXPECT(ctx, tfl_greater(ctx, m, r), TH_BOOL, (2, 3), (0, 1, 0, 1, 0, 0), 0);
    TH_EXPECT(ctx, tfl_less_equal(ctx, r, m), TH_BOOL, (2, 3), (1, 1, 0, 1, 1, 1), 0);
    /* scalars */
    TH_EXPECT0(ctx, tfl_not_equal(ctx, TH_T0(ctx, TH_I64, 3), TH_T0(ctx, TH_I64, 4)), TH_BOOL, 1, 0);
    /* transposed view input */
    tfl_tensor *mt = tfl_transpose(ctx, m, NULL); /* (3,2): [[1,4],[5,2],[3,6]] */
    TH_EXPECT(ctx, tfl_less(ctx, mt, TH_T(ctx, TH_F64, (2), (3, 3))), TH_BOOL, (3, 2),
              (1, 0, 0, 1, 0, 0), 0);
    /* empty */
    TH_EXPECT_SHAPE(ctx, tfl_equal(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 2)), TH_T(ctx, TH_F32, (2), (1, 2))),
                    TH_BOOL, (0, 2));
    th_end(ctx);
}

static void test_compare_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i = TH_T(ctx, TH_I32, (2), (1, 2));
    tfl_tensor *f = TH_T(ctx, TH_F32, (2), (1, 2));
    tfl_tensor *f23 = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *f4 = TH_T(ctx, TH_F32, (4), (1, 2, 3, 4));
    tfl_tensor *c = TH_TC(ctx, TH_C64, (1), (1, 1));
    tfl_tensor *c2 = TH_TC(ctx, TH_C128, (1), (1, 1));
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (1), (1));
    for (int k = 0; k < NELEMS(k_cmps); k++) {
        const cmp_case *cc = &k_cmps[k];
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, i, f), cc->name, "dtypes differ: a is int32, b is float32");
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, f, i), cc->name, "dtypes differ: a is float32, b is int32");
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, f23, f4), cc->name, "incompatible shapes: (2, 3) vs (4,)");
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, NULL, f), cc->name, "input 0 is NULL");
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, f, NULL), cc->name, "input 1 is NULL");
    }
    for (int k = 2; k < NELEMS(k_cmps); k++) { /* ordering: integers and floating only */
        const cmp_case *cc = &k_cmps[k];
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, c, c), cc->name,
                          "dtype complex64 is not supported; expected one of " INTS_AND_FLOATS);
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, c2, c2), cc->name,
                          "dtype complex128 is not supported; expected one of " INTS_AND_FLOATS);
        TH_EXPECT_INVALID(ctx, cc->fn(ctx, b, b), cc->name,
                          "dtype bool is not supported; expected one of " INTS_AND_FLOATS);
    }
    th_end(ctx);
}

/* ---- logic ---------------------------------------------------------------------------------- */

static void test_logical_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a = TH_T(ctx, TH_BOOL, (4), (1, 1, 0, 0));
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (4), (1, 0, 1, 0));
    TH_EXPECT(ctx, tfl_logical_and(ctx, a, b), TH_BOOL, (4), (1, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_logical_or(ctx, a, b), TH_BOOL, (4), (1, 1, 1, 0), 0);
    TH_EXPECT(ctx, tfl_logical_not(ctx, a), TH_BOOL, (4), (0, 0, 1, 1), 0);
    TH_EXPECT(ctx, tfl_logical_not(ctx, tfl_logical_not(ctx, b)), TH_BOOL, (4), (1, 0, 1, 0), 0);
    /* broadcasting: (2,1) with (1,2), scalar with tensor, (2,2) with (2,) */
    tfl_tensor *col = TH_T(ctx, TH_BOOL, (2, 1), (1, 0));
    tfl_tensor *row = TH_T(ctx, TH_BOOL, (1, 2), (1, 0));
    TH_EXPECT(ctx, tfl_logical_and(ctx, col, row), TH_BOOL, (2, 2), (1, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_logical_or(ctx, col, row), TH_BOOL, (2, 2), (1, 1, 1, 0), 0);
    tfl_tensor *t = TH_T0(ctx, TH_BOOL, 1);
    tfl_tensor *f = TH_T0(ctx, TH_BOOL, 0);
    TH_EXPECT(ctx, tfl_logical_and(ctx, t, a), TH_BOOL, (4), (1, 1, 0, 0), 0);
    TH_EXPECT(ctx, tfl_logical_and(ctx, a, f), TH_BOOL, (4), (0, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_logical_or(ctx, f, b), TH_BOOL, (4), (1, 0, 1, 0), 0);
    TH_EXPECT(ctx, tfl_logical_or(ctx, b, t), TH_BOOL, (4), (1, 1, 1, 1), 0);
    TH_EXPECT0(ctx, tfl_logical_not(ctx, t), TH_BOOL, 0, 0);
    tfl_tensor *m = TH_T(ctx, TH_BOOL, (2, 2), (1, 1, 0, 1));
    tfl_tensor *v = TH_T(ctx, TH_BOOL, (2), (0, 1));
    TH_EXPECT(ctx, tfl_logical_and(ctx, m, v), TH_BOOL, (2, 2), (0, 1, 0, 1), 0);
    TH_EXPECT(ctx, tfl_logical_or(ctx, v, m), TH_BOOL, (2, 2), (1, 1, 0, 1), 0);
    /* comparisons feed logic */
    tfl_tensor *x = TH_T(ctx, TH_F32, (5), (-2, -1, 0, 1, 2));
    tfl_tensor *in_range = tfl_logical_and(ctx, tfl_greater(ctx, x, TH_T0(ctx, TH_F32, -1.5)),
                                           tfl_less(ctx, x, TH_T0(ctx, TH_F32, 1.5)));
    TH_EXPECT(ctx, in_range, TH_BOOL, (5), (0, 1, 1, 1, 0), 0);
    /* a transposed view */
    tfl_tensor *mt = tfl_transpose(ctx, TH_T(ctx, TH_BOOL, (2, 3), (1, 0, 0, 1, 1, 0)), NULL);
    TH_EXPECT(ctx, tfl_logical_not(ctx, mt), TH_BOOL, (3, 2), (0, 0, 1, 0, 1, 1), 0);
    th_end(ctx);
}

static void test_logical_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i = TH_T(ctx, TH_I32, (2), (1, 0));
    tfl_tensor *f = TH_T(ctx, TH_F32, (2), (1, 0));
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    tfl_tensor *b3 = TH_T(ctx, TH_BOOL, (3), (1, 0, 1));
    TH_EXPECT_INVALID(ctx, tfl_logical_and(ctx, i, i), "LogicalAnd",
                      "dtype int32 is not supported; expected one of bool");
    TH_EXPECT_INVALID(ctx, tfl_logical_or(ctx, f, f), "LogicalOr",
                      "dtype float32 is not supported; expected one of bool");
    TH_EXPECT_INVALID(ctx, tfl_logical_not(ctx, i), "LogicalNot",
                      "dtype int32 is not supported; expected one of bool");
    TH_EXPECT_INVALID(ctx, tfl_logical_not(ctx, f), "LogicalNot",
                      "dtype float32 is not supported; expected one of bool");
    /* one bool, one not: refused (which check fires first is not specified) */
    TH_EXPECT_INVALID(ctx, tfl_logical_and(ctx, b, i), "LogicalAnd", NULL);
    TH_EXPECT_INVALID(ctx, tfl_logical_or(ctx, f, b), "LogicalOr", NULL);
    TH_EXPECT_INVALID(ctx, tfl_logical_and(ctx, b, b3), "LogicalAnd", "incompatible shapes: (2,) vs (3,)");
    TH_EXPECT_INVALID(ctx, tfl_logical_or(ctx, b3, b), "LogicalOr", "incompatible shapes: (3,) vs (2,)");
    TH_EXPECT_INVALID(ctx, tfl_logical_and(ctx, NULL, b), "LogicalAnd", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_logical_or(ctx, b, NULL), "LogicalOr", "input 1 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_logical_not(ctx, NULL), "LogicalNot", "input 0 is NULL");
    th_end(ctx);
}

/* Without a frame: results are the caller's to release. */
static void test_compare_without_frame(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *a = TH_T(ctx, TH_I32, (3), (1, 2, 3));
    tfl_tensor *b = TH_T0(ctx, TH_I32, 2);
    tfl_tensor *lt = tfl_less(ctx, a, b);
    tfl_tensor *nt = tfl_logical_not(ctx, lt);
    TH_EXPECT(ctx, nt, TH_BOOL, (3), (0, 1, 1), 0);
    tfl_tensor_release(nt);
    tfl_tensor_release(lt);
    tfl_tensor_release(b);
    tfl_tensor_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_compare_ordered_dtypes),
        TH_TEST(test_compare_nan_inf_zero),
        TH_TEST(test_compare_int64_exact),
        TH_TEST(test_equal_all_dtypes),
        TH_TEST(test_compare_broadcasting),
        TH_TEST(test_compare_errors),
        TH_TEST(test_logical_values),
        TH_TEST(test_logical_errors),
        TH_TEST(test_compare_without_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
