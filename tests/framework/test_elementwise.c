/* test_elementwise.c: cmocka tests of tapeflow's elementwise ops (add sub mul div pow
 * maximum minimum neg exp log sqrt abs identity): values, dtypes, broadcasting, errors. */
#include "test_ops_helpers.h"

#include <complex.h>

typedef tfl_tensor *(*binop_fn)(tfl_ctx *, const tfl_tensor *, const tfl_tensor *);
typedef tfl_tensor *(*unop_fn)(tfl_ctx *, const tfl_tensor *);

static const tfl_dtype k_floats[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
static const tfl_dtype k_ints[] = {TH_I32, TH_I64};
static const tfl_dtype k_complexes[] = {TH_C64, TH_C128};

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Runs fn on two rank-1 tensors of n elements (pairs: complex values as (re, im)). */
static void check_bin_(tfl_ctx *ctx, binop_fn fn, tfl_dtype dt, int n, const double *a,
                       const double *b, const double *want, bool pairs, double tol, int line)
{
    int64_t shape[1] = {n};
    size_t per = pairs ? 2u : 1u;
    tfl_tensor *ta = th_tensor_(ctx, dt, 1, shape, a, (size_t)n * per, pairs, __FILE__, line);
    tfl_tensor *tb = th_tensor_(ctx, dt, 1, shape, b, (size_t)n * per, pairs, __FILE__, line);
    tfl_tensor *r = fn(ctx, ta, tb);
    th_expect_(ctx, r, dt, 1, shape, want, (size_t)n * per, pairs, tol, __FILE__, line);
}
#define CHECK_BIN(ctx, fn, dt, a, b, want, tol) \
    check_bin_((ctx), (fn), (dt), NELEMS(a), (a), (b), (want), false, (tol), __LINE__)
#define CHECK_BINC(ctx, fn, dt, a, b, want, tol) \
    check_bin_((ctx), (fn), (dt), NELEMS(a) / 2, (a), (b), (want), true, (tol), __LINE__)

static void check_un_(tfl_ctx *ctx, unop_fn fn, tfl_dtype dt, tfl_dtype out_dt, int n,
                      const double *x, const double *want, bool pairs_in, bool pairs_out,
                      double tol, int line)
{
    int64_t shape[1] = {n};
    tfl_tensor *tx = th_tensor_(ctx, dt, 1, shape, x, (size_t)n * (pairs_in ? 2u : 1u),
                                pairs_in, __FILE__, line);
    tfl_tensor *r = fn(ctx, tx);
    th_expect_(ctx, r, out_dt, 1, shape, want, (size_t)n * (pairs_out ? 2u : 1u), pairs_out, tol,
               __FILE__, line);
}
#define CHECK_UN(ctx, fn, dt, x, want, tol) \
    check_un_((ctx), (fn), (dt), (dt), NELEMS(x), (x), (want), false, false, (tol), __LINE__)
#define CHECK_UNC(ctx, fn, dt, x, want, tol) \
    check_un_((ctx), (fn), (dt), (dt), NELEMS(x) / 2, (x), (want), true, true, (tol), __LINE__)

/* ---- per-dtype values of the binary ops ------------------------------------------------- */

/* Exactly representable in float16 and bfloat16, and so are the results below. */
static const double fa[] = {1.5, -2.25, 0.5, 3.0};
static const double fb[] = {2.25, 0.5, -0.5, 1.0};
static const double ia[] = {1, -2, 0, 3, 100000};
static const double ib[] = {2, 5, -7, 1, -3};
/* complex (re, im) pairs */
static const double ca[] = {1, 2, 0.5, -0.5};
static const double cb[] = {3, -1, 0.25, 2};

static void test_add_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double fw[] = {3.75, -1.75, 0.0, 4.0};
    static const double iw[] = {3, 3, -7, 4, 99997};
    static const double cw[] = {4, 1, 0.75, 1.5};
    for (int i = 0; i < NELEMS(k_floats); i++) CHECK_BIN(ctx, tfl_add, k_floats[i], fa, fb, fw, 0);
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_BIN(ctx, tfl_add, k_ints[i], ia, ib, iw, 0);
    for (int i = 0; i < NELEMS(k_complexes); i++)
        CHECK_BINC(ctx, tfl_add, k_complexes[i], ca, cb, cw, 0);
    /* int64 beyond 2^32 */
    static const double la[] = {4294967296.0 * 3, -4294967296.0};
    static const double lb[] = {5, -7};
    static const double lw[] = {4294967296.0 * 3 + 5, -4294967296.0 - 7};
    CHECK_BIN(ctx, tfl_add, TH_I64, la, lb, lw, 0);
    th_end(ctx);
}

static void test_sub_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double fw[] = {-0.75, -2.75, 1.0, 2.0};
    static const double iw[] = {-1, -7, 7, 2, 100003};
    static const double cw[] = {-2, 3, 0.25, -2.5};
    for (int i = 0; i < NELEMS(k_floats); i++) CHECK_BIN(ctx, tfl_sub, k_floats[i], fa, fb, fw, 0);
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_BIN(ctx, tfl_sub, k_ints[i], ia, ib, iw, 0);
    for (int i = 0; i < NELEMS(k_complexes); i++)
        CHECK_BINC(ctx, tfl_sub, k_complexes[i], ca, cb, cw, 0);
    th_end(ctx);
}

static void test_mul_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double fw[] = {3.375, -1.125, -0.25, 3.0};
    static const double iw[] = {2, -10, 0, 3, -300000};
    /* (1+2i)(3-i) = 5+5i; (0.5-0.5i)(0.25+2i) = 1.125+0.875i */
    static const double cw[] = {5, 5, 1.125, 0.875};
    for (int i = 0; i < NELEMS(k_floats); i++) CHECK_BIN(ctx, tfl_mul, k_floats[i], fa, fb, fw, 0);
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_BIN(ctx, tfl_mul, k_ints[i], ia, ib, iw, 0);
    for (int i = 0; i < NELEMS(k_complexes); i++)
        CHECK_BINC(ctx, tfl_mul, k_complexes[i], ca, cb, cw, 0);
    th_end(ctx);
}

static void test_div_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double a[] = {3, -2.25, 1, 0};
    static const double b[] = {2, 0.5, -4, 8};
    static const double w[] = {1.5, -4.5, -0.25, 0};
    for (int i = 0; i < NELEMS(k_floats); i++) CHECK_BIN(ctx, tfl_div, k_floats[i], a, b, w, 0);
    /* true division that rounds: 1/3 */
    static const double a3[] = {1, 2};
    static const double b3[] = {3, 3};
    static const double w3[] = {1.0 / 3.0, 2.0 / 3.0};
    CHECK_BIN(ctx, tfl_div, TH_F64, a3, b3, w3, 1e-15);
    CHECK_BIN(ctx, tfl_div, TH_F32, a3, b3, w3, 1e-7);
    CHECK_BIN(ctx, tfl_div, TH_F16, a3, b3, w3, 1e-3);
    CHECK_BIN(ctx, tfl_div, TH_BF16, a3, b3, w3, 4e-3);
    /* IEEE: x/0 */
    static const double az[] = {1, -1, 0};
    static const double bz[] = {0, 0, 0};
    static const double wz[] = {INFINITY, -INFINITY, NAN};
    CHECK_BIN(ctx, tfl_div, TH_F32, az, bz, wz, 0);
    CHECK_BIN(ctx, tfl_div, TH_F64, az, bz, wz, 0);
    CHECK_BIN(ctx, tfl_div, TH_F16, az, bz, wz, 0);
    /* integers: floor division, -7 / 2 = -4 */
    static const double ai[] = {7, -7, 7, -7, 6, 0, -1, 1, -6, 6, 0, -1, 1};
    static const double bi[] = {2, 2, -2, -2, 3, 5, 3, 3, 3, -3, -3, -3, -3};
    static const double wi[] = {3, -4, -4, 3, 2, 0, -1, 0, -2, -2, 0, 0, -1};
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_BIN(ctx, tfl_div, k_ints[i], ai, bi, wi, 0);
    /* complex: (1+2i)/(3+4i) = 0.44+0.08i; (4+2i)/(1-i) = 1+3i */
    static const double cn[] = {1, 2, 4, 2};
    static const double cd[] = {3, 4, 1, -1};
    static const double cw[] = {0.44, 0.08, 1, 3};
    CHECK_BINC(ctx, tfl_div, TH_C64, cn, cd, cw, 1e-6);
    CHECK_BINC(ctx, tfl_div, TH_C128, cn, cd, cw, 1e-14);
    th_end(ctx);
}

static void test_pow_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double a[] = {2, 4, 1.5, -2, 0, 3};
    static const double b[] = {3, 0.5, 2, 2, 0, -1};
    static const double w[] = {8, 2, 2.25, 4, 1, 1.0 / 3.0};
    CHECK_BIN(ctx, tfl_pow, TH_F64, a, b, w, 1e-15);
    CHECK_BIN(ctx, tfl_pow, TH_F32, a, b, w, 1e-7);
    CHECK_BIN(ctx, tfl_pow, TH_F16, a, b, w, 1e-3);
    CHECK_BIN(ctx, tfl_pow, TH_BF16, a, b, w, 4e-3);
    /* libm reference for non-integral exponents; negative base to a fraction is NaN */
    static const double a2[] = {2, 10, 0.3, -8};
    static const double b2[] = {0.5, -1.5, 2.7, 1.0 / 3.0};
    double w2[4];
    for (int i = 0; i < 4; i++) w2[i] = pow(a2[i], b2[i]);
    assert_true(isnan(w2[3]));
    CHECK_BIN(ctx, tfl_pow, TH_F64, a2, b2, w2, 1e-14);
    CHECK_BIN(ctx, tfl_pow, TH_F32, a2, b2, w2, 1e-6);
    /* integers */
    static const double ai[] = {2, -3, 5, 0, 1, -2, 7};
    static const double bi[] = {10, 3, 0, 0, 7, 2, 1};
    static const double wi[] = {1024, -27, 1, 1, 1, 4, 7};
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_BIN(ctx, tfl_pow, k_ints[i], ai, bi, wi, 0);
    static const double al[] = {2, -3};
    static const double bl[] = {40, 33};
    static const double wl[] = {1099511627776.0, -5559060566555523.0};
    CHECK_BIN(ctx, tfl_pow, TH_I64, al, bl, wl, 0);
    /* complex: reference from cpow */
    static const double cx[] = {1, 1, 0, 1, 2, -1};
    static const double cy[] = {2, 0, 2, 0, 0.5, 1};
    double cw[6];
    for (int i = 0; i < 3; i++) {
        double complex r = cpow(CMPLX(cx[2 * i], cx[2 * i + 1]), CMPLX(cy[2 * i], cy[2 * i + 1]));
        cw[2 * i] = creal(r);
        cw[2 * i + 1] = cimag(r);
    }
    assert_true(fabs(cw[0]) < 1e-12 && fabs(cw[1] - 2.0) < 1e-12); /* (1+i)^2 = 2i */
    CHECK_BINC(ctx, tfl_pow, TH_C128, cx, cy, cw, 1e-12);
    CHECK_BINC(ctx, tfl_pow, TH_C64, cx, cy, cw, 1e-5);
    th_end(ctx);
}

static void test_maximum_minimum_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double a[] = {1.5, -2.25, 0.5, 3.0, -1.0};
    static const double b[] = {2.25, 0.5, -0.5, 3.0, -1.5};
    static const double wmax[] = {2.25, 0.5, 0.5, 3.0, -1.0};
    static const double wmin[] = {1.5, -2.25, -0.5, 3.0, -1.5};
    for (int i = 0; i < NELEMS(k_floats); i++) {
        CHECK_BIN(ctx, tfl_maximum, k_floats[i], a, b, wmax, 0);
        CHECK_BIN(ctx, tfl_minimum, k_floats[i], a, b, wmin, 0);
    }
    static const double ai[] = {1, -2, 0, 3, -100000};
    static const double bi[] = {2, 5, -7, 3, -99999};
    static const double wimax[] = {2, 5, 0, 3, -99999};
    static const double wimin[] = {1, -2, -7, 3, -100000};
    for (int i = 0; i < NELEMS(k_ints); i++) {
        CHECK_BIN(ctx, tfl_maximum, k_ints[i], ai, bi, wimax, 0);
        CHECK_BIN(ctx, tfl_minimum, k_ints[i], ai, bi, wimin, 0);
    }
    /* NaN propagates from either side */
    static const double an[] = {NAN, 1, NAN, -INFINITY};
    static const double bn[] = {1, NAN, NAN, 2};
    static const double wnmax[] = {NAN, NAN, NAN, 2};
    static const double wnmin[] = {NAN, NAN, NAN, -INFINITY};
    CHECK_BIN(ctx, tfl_maximum, TH_F32, an, bn, wnmax, 0);
    CHECK_BIN(ctx, tfl_minimum, TH_F32, an, bn, wnmin, 0);
    CHECK_BIN(ctx, tfl_maximum, TH_F64, an, bn, wnmax, 0);
    CHECK_BIN(ctx, tfl_minimum, TH_F64, an, bn, wnmin, 0);
    CHECK_BIN(ctx, tfl_maximum, TH_F16, an, bn, wnmax, 0);
    CHECK_BIN(ctx, tfl_minimum, TH_BF16, an, bn, wnmin, 0);
    th_end(ctx);
}

/* float16 / bfloat16 are computed in float32 and rounded once. */
static void test_half_rounding(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* 2048 + 1 = 2049 is a tie in float16 (ulp 2): rounds to even, 2048 */
    static const double a16[] = {2048, 60000, 1, 2048};
    static const double b16[] = {1, 60000, 0.0009765625, 3};
    static const double w16[] = {2048, INFINITY, 1.0009765625, 2052};
    CHECK_BIN(ctx, tfl_add, TH_F16, a16, b16, w16, 0);
    /* 256 + 1 = 257 is a tie in bfloat16 (ulp 2): 256; 256 + 3 = 259 -> 260 */
    static const double ab[] = {256, 256, 1};
    static const double bb[] = {1, 3, 0.0078125};
    static const double wb[] = {256, 260, 1.0078125};
    CHECK_BIN(ctx, tfl_add, TH_BF16, ab, bb, wb, 0);
    /* results are stored as the right bit patterns: 1.5 * 2.5 = 3.75 */
    tfl_tensor *h = tfl_mul(ctx, TH_T(ctx, TH_F16, (1), (1.5)), TH_T(ctx, TH_F16, (1), (2.5)));
    tfl_tensor *bh = tfl_mul(ctx, TH_T(ctx, TH_BF16, (1), (1.5)), TH_T(ctx, TH_BF16, (1), (2.5)));
    assert_non_null(h);
    assert_non_null(bh);
    uint16_t bits = 0;
    assert_int_equal(tfl_tensor_to_host(h, &bits, sizeof bits), TFL_OK);
    assert_int_equal(bits, 0x4380); /* float16 3.75 */
    assert_int_equal(tfl_tensor_to_host(bh, &bits, sizeof bits), TFL_OK);
    assert_int_equal(bits, 0x4070); /* bfloat16 3.75 */
    th_end(ctx);
}

/* ---- broadcasting, against a reference computed here ---------------------------------- */

typedef struct bin_case {
    const char *name;
    binop_fn fn;
    double (*ref_f)(double, double);
    double (*ref_i)(double, double);
} bin_case;

static double ref_add(double a, double b) { return a + b; }
static double ref_sub(double a, double b) { return a - b; }
static double ref_mul(double a, double b) { return a * b; }
static double ref_div(double a, double b) { return a / b; }
static double ref_floordiv(double a, double b) { return floor(a / b); }
static double ref_pow(double a, double b) { return pow(a, b); }
static double ref_max(double a, double b) { return a > b ? a : b; }
static double ref_min(double a, double b) { return a < b ? a : b; }

static const bin_case k_bin_cases[] = {
    {"Add", tfl_add, ref_add, ref_add},
    {"Sub", tfl_sub, ref_sub, ref_sub},
    {"Mul", tfl_mul, ref_mul, ref_mul},
    {"Div", tfl_div, ref_div, ref_floordiv},
    {"Pow", tfl_pow, ref_pow, ref_pow},
    {"Maximum", tfl_maximum, ref_max, ref_max},
    {"Minimum", tfl_minimum, ref_min, ref_min},
};

/* Values of a (small ints, some negative) and b (1..3, so valid divisors and exponents). */
static double val_a(int64_t i) { return (double)(i % 7) - 3.0; }
static double val_b(int64_t i) { return (double)(i % 3) + 1.0; }

static void bcast_case_(tfl_ctx *ctx, const bin_case *c, tfl_dtype dt, int ra, const int64_t *sa,
                        int rb, const int64_t *sb, int line)
{
    int ro = ra > rb ? ra : rb;
    int64_t so[TFL_MAX_RANK];
    for (int i = 0; i < ro; i++) {
        int64_t da = i - (ro - ra) >= 0 ? sa[i - (ro - ra)] : 1;
        int64_t db = i - (ro - rb) >= 0 ? sb[i - (ro - rb)] : 1;
        assert_true(da == db || da == 1 || db == 1);
        so[i] = da == 1 ? db : da;
    }
    int64_t na = th_numel(ra, sa), nb = th_numel(rb, sb), no = th_numel(ro, so);
    double *va = calloc((size_t)na + 1, sizeof(double));
    double *vb = calloc((size_t)nb + 1, sizeof(double));
    double *vw = calloc((size_t)no + 1, sizeof(double));
    assert_true(va && vb && vw);
    for (int64_t i = 0; i < na; i++) va[i] = val_a(i);
    for (int64_t i = 0; i < nb; i++) vb[i] = val_b(i);
    bool is_int = tfl_dtype_is_integer(dt);
    for (int64_t o = 0; o < no; o++) {
        int64_t rem = o, ja = 0, jb = 0, stride_a = 1, stride_b = 1;
        for (int d = ro - 1; d >= 0; d--) {
            int64_t idx = rem % so[d];
            rem /= so[d];
            int dai = d - (ro - ra), dbi = d - (ro - rb);
            if (dai >= 0) {
                if (sa[dai] != 1) ja += idx * stride_a;
                stride_a *= sa[dai];
            }
            if (dbi >= 0) {
                if (sb[dbi] != 1) jb += idx * stride_b;
                stride_b *= sb[dbi];
            }
        }
        vw[o] = is_int ? c->ref_i(va[ja], vb[jb]) : c->ref_f(va[ja], vb[jb]);
    }
    tfl_tensor *ta = th_tensor_(ctx, dt, ra, sa, va, (size_t)na, false, __FILE__, line);
    tfl_tensor *tb = th_tensor_(ctx, dt, rb, sb, vb, (size_t)nb, false, __FILE__, line);
    tfl_tensor *r = c->fn(ctx, ta, tb);
    if (!r) print_error("%s(%s) failed\n", c->name, tfl_dtype_name(dt));
    double tol = is_int ? 0.0 : dt == TH_F32 ? 1e-6 : 1e-12;
    th_expect_(ctx, r, dt, ro, so, vw, (size_t)no, false, tol, __FILE__, line);
    free(va);
    free(vb);
    free(vw);
}
#define BCAST(ctx, c, dt, sa, sb) \
    bcast_case_((ctx), (c), (dt), TH_RANK_OF(sa), TH_SHAPE sa, TH_RANK_OF(sb), TH_SHAPE sb, __LINE__)
#define BCAST_SCALAR_A(ctx, c, dt, sb) \
    bcast_case_((ctx), (c), (dt), 0, NULL, TH_RANK_OF(sb), TH_SHAPE sb, __LINE__)
#define BCAST_SCALAR_B(ctx, c, dt, sa) \
    bcast_case_((ctx), (c), (dt), TH_RANK_OF(sa), TH_SHAPE sa, 0, NULL, __LINE__)

static void test_broadcasting_all_binary_ops(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_F64, TH_I32, TH_I64, TH_F32};
    for (int d = 0; d < NELEMS(dts); d++) {
        for (int c = 0; c < NELEMS(k_bin_cases); c++) {
            const bin_case *bc = &k_bin_cases[c];
            tfl_dtype dt = dts[d];
            BCAST_SCALAR_A(ctx, bc, dt, (2, 3));        /* scalar op tensor */
            BCAST_SCALAR_B(ctx, bc, dt, (2, 3));        /* tensor op scalar */
            bcast_case_(ctx, bc, dt, 0, NULL, 0, NULL, __LINE__); /* scalar op scalar */
            BCAST(ctx, bc, dt, (3, 1), (1, 4));         /* (3,1) op (1,4) -> (3,4) */
            BCAST(ctx, bc, dt, (1, 4), (3, 1));
            BCAST(ctx, bc, dt, (2, 3), (3));            /* rank mismatch */
            BCAST(ctx, bc, dt, (3), (2, 3));
            BCAST(ctx, bc, dt, (2, 1, 3), (4, 1));      /* both stretch, ranks differ */
            BCAST(ctx, bc, dt, (1), (2, 2, 2));         /* (1,) against rank 3 */
            BCAST(ctx, bc, dt, (2, 3, 4), (2, 3, 4));   /* same shape */
            BCAST(ctx, bc, dt, (0, 3), (1, 3));         /* empty */
            BCAST(ctx, bc, dt, (2, 1), (0));            /* 1 stretches to 0 */
            BCAST(ctx, bc, dt, (2, 1, 2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 2, 1, 2)); /* rank 8 */
            BCAST(ctx, bc, dt, (3, 1, 1, 1, 1, 1, 1, 2), (2, 1));
        }
    }
    th_end(ctx);
}

static void test_broadcast_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* (3,1) + (1,4) -> (3,4) */
    tfl_tensor *col = TH_T(ctx, TH_F32, (3, 1), (0, 10, 20));
    tfl_tensor *row = TH_T(ctx, TH_F32, (1, 4), (1, 2, 3, 4));
    TH_EXPECT(ctx, tfl_add(ctx, col, row), TH_F32, (3, 4),
              (1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24), 0);
    /* scalar - tensor keeps the order */
    TH_EXPECT(ctx, tfl_sub(ctx, TH_T0(ctx, TH_I32, 10), TH_T(ctx, TH_I32, (2), (1, 2))), TH_I32,
              (2), (9, 8), 0);
    TH_EXPECT(ctx, tfl_sub(ctx, TH_T(ctx, TH_I32, (2), (1, 2)), TH_T0(ctx, TH_I32, 10)), TH_I32,
              (2), (-9, -8), 0);
    /* (2,3) * (3,) */
    TH_EXPECT(ctx,
              tfl_mul(ctx, TH_T(ctx, TH_F64, (2, 3), (1, 2, 3, 4, 5, 6)),
                      TH_T(ctx, TH_F64, (3), (10, 100, 1000))),
              TH_F64, (2, 3), (10, 200, 3000, 40, 500, 6000), 0);
    /* scalar op scalar is a scalar */
    TH_EXPECT0(ctx, tfl_div(ctx, TH_T0(ctx, TH_I64, -7), TH_T0(ctx, TH_I64, 2)), TH_I64, -4, 0);
    /* complex broadcasting: (2,) * () */
    TH_EXPECTC(ctx, tfl_mul(ctx, TH_TC(ctx, TH_C64, (2), (1, 0, 0, 1)), TH_TC0(ctx, TH_C64, 0, 1)),
               TH_C64, (2), (0, 1, -1, 0), 0);
    /* half dtypes broadcast too */
    TH_EXPECT(ctx, tfl_add(ctx, TH_T(ctx, TH_F16, (2, 1), (0.5, 1.5)), TH_T(ctx, TH_F16, (2), (1, 2))),
              TH_F16, (2, 2), (1.5, 2.5, 2.5, 3.5), 0);
    TH_EXPECT(ctx, tfl_maximum(ctx, TH_T(ctx, TH_BF16, (2, 1), (0.5, 1.5)), TH_T0(ctx, TH_BF16, 1)),
              TH_BF16, (2, 1), (1, 1.5), 0);
    th_end(ctx);
}

static void test_binary_on_views(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* a^T (a non-contiguous view) + b */
    tfl_tensor *a = TH_T(ctx, TH_F32, (3, 2), (1, 2, 3, 4, 5, 6));
    tfl_tensor *at = tfl_transpose(ctx, a, NULL);
    assert_non_null(at);
    tfl_tensor *b = TH_T(ctx, TH_F32, (2, 3), (10, 20, 30, 40, 50, 60));
    TH_EXPECT(ctx, tfl_add(ctx, at, b), TH_F32, (2, 3), (11, 23, 35, 42, 54, 66), 0);
    TH_EXPECT(ctx, tfl_sub(ctx, b, at), TH_F32, (2, 3), (9, 17, 25, 38, 46, 54), 0);
    /* a slice as an input */
    int64_t begin[2] = {1, 0}, size[2] = {2, 1};
    tfl_tensor *s = tfl_slice(ctx, a, begin, size); /* [[3],[5]] */
    TH_EXPECT(ctx, tfl_mul(ctx, s, TH_T(ctx, TH_F32, (1, 2), (2, 3))), TH_F32, (2, 2),
              (6, 9, 10, 15), 0);
    th_end(ctx);
}

/* Without a frame: the caller releases everything it gets. */
static void test_add_without_frame_releases(void **state)
{
    tfl_ctx *ctx = *state;
    assert_int_equal(tfl_frame_depth(ctx), 0);
    tfl_tensor *a = TH_T(ctx, TH_F32, (2), (1, 2));
    tfl_tensor *b = TH_T(ctx, TH_F32, (2), (3, 4));
    tfl_tensor *c = tfl_add(ctx, a, b);
    tfl_tensor *d = tfl_exp(ctx, c);
    assert_non_null(d);
    double v = 0;
    assert_int_equal(tfl_tensor_get(c, 1, &v), TFL_OK);
    assert_true(v == 6.0);
    assert_int_equal(tfl_tensor_get(d, 0, &v), TFL_OK);
    assert_true(fabs(v - exp(4.0)) <= 1e-6 * exp(4.0));
    tfl_tensor_release(d);
    tfl_tensor_release(c);
    tfl_tensor_release(b);
    tfl_tensor_release(a);
    TH_EXPECT_OK(ctx);
}

/* ---- binary errors ------------------------------------------------------------------------- */

#define ALL_BUT_BOOL "int32, int64, float16, bfloat16, float32, float64, complex64, complex128"
#define INTS_AND_FLOATS "int32, int64, float16, bfloat16, float32, float64"

static void test_binary_dtype_mismatch(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i = TH_T(ctx, TH_I32, (2), (1, 2));
    tfl_tensor *f = TH_T(ctx, TH_F32, (2), (1, 2));
    tfl_tensor *d = TH_T(ctx, TH_F64, (2), (1, 2));
    for (int c = 0; c < NELEMS(k_bin_cases); c++) {
        const bin_case *bc = &k_bin_cases[c];
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, i, f), bc->name, "dtypes differ: a is int32, b is float32");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, d, f), bc->name,
                          "dtypes differ: a is float64, b is float32");
    }
    /* no promotion even against a scalar */
    TH_EXPECT_INVALID(ctx, tfl_add(ctx, f, TH_T0(ctx, TH_F64, 1)), "Add",
                      "dtypes differ: a is float32, b is float64");
    th_end(ctx);
}

static void test_binary_unsupported_dtype(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    tfl_tensor *c = TH_TC(ctx, TH_C64, (1), (1, 1));
    for (int k = 0; k < 5; k++) /* add sub mul div pow: all but bool */
        TH_EXPECT_INVALID(ctx, k_bin_cases[k].fn(ctx, b, b), k_bin_cases[k].name,
                          "dtype bool is not supported; expected one of " ALL_BUT_BOOL);
    for (int k = 5; k < 7; k++) { /* maximum minimum: integers and floating */
        TH_EXPECT_INVALID(ctx, k_bin_cases[k].fn(ctx, b, b), k_bin_cases[k].name,
                          "dtype bool is not supported; expected one of " INTS_AND_FLOATS);
        TH_EXPECT_INVALID(ctx, k_bin_cases[k].fn(ctx, c, c), k_bin_cases[k].name,
                          "dtype complex64 is not supported; expected one of " INTS_AND_FLOATS);
    }
    th_end(ctx);
}

static void test_binary_incompatible_shapes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a23 = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *b4 = TH_T(ctx, TH_F32, (4), (1, 2, 3, 4));
    tfl_tensor *b32 = TH_T(ctx, TH_F32, (3, 2), (1, 2, 3, 4, 5, 6));
    tfl_tensor *b2 = TH_T(ctx, TH_F32, (2), (1, 2));
    for (int c = 0; c < NELEMS(k_bin_cases); c++) {
        const bin_case *bc = &k_bin_cases[c];
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, a23, b4), bc->name, "incompatible shapes: (2, 3) vs (4,)");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, b4, a23), bc->name, "incompatible shapes: (4,) vs (2, 3)");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, a23, b32), bc->name,
                          "incompatible shapes: (2, 3) vs (3, 2)");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, a23, b2), bc->name, "incompatible shapes: (2, 3) vs (2,)");
    }
    /* 0 does not stretch to 2 */
    tfl_tensor *e = tfl_zeros(ctx, TH_I32, 1, TH_SHAPE(0));
    tfl_tensor *i2 = TH_T(ctx, TH_I32, (2), (1, 2));
    TH_EXPECT_INVALID(ctx, tfl_add(ctx, e, i2), "Add", "incompatible shapes: (0,) vs (2,)");
    th_end(ctx);
}

static void test_binary_null_inputs(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a = TH_T(ctx, TH_F32, (2), (1, 2));
    for (int c = 0; c < NELEMS(k_bin_cases); c++) {
        const bin_case *bc = &k_bin_cases[c];
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, NULL, a), bc->name, "input 0 is NULL");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, a, NULL), bc->name, "input 1 is NULL");
        TH_EXPECT_INVALID(ctx, bc->fn(ctx, NULL, NULL), bc->name, "input 0 is NULL");
    }
    th_end(ctx);
}

/* Only the first error is kept until it is cleared. */
static void test_first_error_kept(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i = TH_T(ctx, TH_I32, (2), (1, 0));
    tfl_ctx_clear_error(ctx);
    assert_null(tfl_div(ctx, i, i));                                   /* first */
    assert_null(tfl_exp(ctx, i));                                      /* second */
    assert_null(tfl_add(ctx, i, TH_T(ctx, TH_I32, (3), (1, 2, 3))));   /* third */
    th_expect_error_(ctx, NULL, TFL_INVALID_ARGUMENT, "Div", "Integer division by zero", __FILE__,
                     __LINE__);
    /* cleared: the next error is kept */
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_null(tfl_exp(ctx, i));
    th_expect_error_(ctx, NULL, TFL_INVALID_ARGUMENT, "Exp", "dtype int32 is not supported", __FILE__,
                     __LINE__);
    th_end(ctx);
}

/* A NULL input with an error already kept returns NULL and keeps the first error. */
static void test_null_input_keeps_first_error(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (1), (1));
    tfl_ctx_clear_error(ctx);
    tfl_tensor *r1 = tfl_add(ctx, b, b); /* first error */
    assert_null(r1);
    tfl_tensor *r2 = tfl_exp(ctx, r1);
    tfl_tensor *r3 = tfl_mul(ctx, r2, b);
    tfl_tensor *r4 = tfl_sqrt(ctx, r3);
    assert_null(r2);
    assert_null(r3);
    assert_null(r4);
    th_expect_error_(ctx, r4, TFL_INVALID_ARGUMENT, "Add", "dtype bool is not supported", __FILE__,
                     __LINE__);
    th_end(ctx);
}

static void test_integer_division_by_zero(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int i = 0; i < NELEMS(k_ints); i++) {
        tfl_dtype dt = k_ints[i];
        TH_EXPECT_INVALID(ctx, tfl_div(ctx, TH_T(ctx, dt, (3), (1, 2, 3)), TH_T(ctx, dt, (3), (1, 0, 1))),
                          "Div", "Integer division by zero");
        TH_EXPECT_INVALID(ctx, tfl_div(ctx, TH_T(ctx, dt, (2, 2), (1, 2, 3, 4)), TH_T0(ctx, dt, 0)),
                          "Div", "Integer division by zero");
        TH_EXPECT_INVALID(ctx, tfl_div(ctx, TH_T0(ctx, dt, 0), TH_T0(ctx, dt, 0)), "Div",
                          "Integer division by zero");
    }
    th_end(ctx);
}

static void test_integer_negative_power(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int i = 0; i < NELEMS(k_ints); i++) {
        tfl_dtype dt = k_ints[i];
        TH_EXPECT_INVALID(ctx, tfl_pow(ctx, TH_T(ctx, dt, (3), (2, 2, 2)), TH_T(ctx, dt, (3), (1, -1, 2))),
                          "Pow", "Integers to negative integer powers are not allowed");
        TH_EXPECT_INVALID(ctx, tfl_pow(ctx, TH_T(ctx, dt, (2), (1, 1)), TH_T0(ctx, dt, -2)), "Pow",
                          "Integers to negative integer powers are not allowed");
    }
    th_end(ctx);
}

/* ---- unary ops ------------------------------------------------------------------------------ */

static void test_neg_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double x[] = {1.5, -2.25, 0, 65504};
    static const double w[] = {-1.5, 2.25, 0, -65504};
    CHECK_UN(ctx, tfl_neg, TH_F16, x, w, 0);
    CHECK_UN(ctx, tfl_neg, TH_F32, x, w, 0);
    CHECK_UN(ctx, tfl_neg, TH_F64, x, w, 0);
    static const double xb[] = {1.5, -2.25, 0, 3e38};
    static const double wb[] = {-1.5, 2.25, 0, -3e38};
    CHECK_UN(ctx, tfl_neg, TH_BF16, xb, wb, 1e-2);
    static const double xi[] = {1, -2, 0, 2147483647};
    static const double wi[] = {-1, 2, 0, -2147483647};
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_UN(ctx, tfl_neg, k_ints[i], xi, wi, 0);
    static const double xc[] = {1, 2, -0.5, 0};
    static const double wc[] = {-1, -2, 0.5, 0};
    for (int i = 0; i < NELEMS(k_complexes); i++) CHECK_UNC(ctx, tfl_neg, k_complexes[i], xc, wc, 0);
    TH_EXPECT0(ctx, tfl_neg(ctx, TH_T0(ctx, TH_I64, 5000000000.0)), TH_I64, -5000000000.0, 0);
    TH_EXPECT_INVALID(ctx, tfl_neg(ctx, TH_T(ctx, TH_BOOL, (1), (1))), "Neg",
                      "dtype bool is not supported; expected one of " ALL_BUT_BOOL);
    th_end(ctx);
}

typedef struct un_case {
    const char *name;
    unop_fn fn;
    double (*ref)(double);
    double complex (*cref)(double complex);
} un_case;

static const un_case k_transcendental[] = {
    {"Exp", tfl_exp, exp, cexp},
    {"Log", tfl_log, log, clog},
    {"Sqrt", tfl_sqrt, sqrt, csqrt},
};

static void test_exp_log_sqrt_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* inputs exactly representable in float16 and bfloat16 */
    static const double x[] = {0.5, 1, 2, 4, 0.25, 3, 10, 0.125};
    static const double xe[] = {0, 1, -1, 0.5, 2, -3.5, 0.125, 5};
    static const double tol[] = {1e-3, 4e-3, 3e-7, 1e-15}; /* f16 bf16 f32 f64 */
    double w[8];
    for (int k = 0; k < NELEMS(k_transcendental); k++) {
        const un_case *uc = &k_transcendental[k];
        const double *in = k == 0 ? xe : x;
        for (int i = 0; i < 8; i++) w[i] = uc->ref(in[i]);
        for (int d = 0; d < NELEMS(k_floats); d++)
            check_un_(ctx, uc->fn, k_floats[d], k_floats[d], 8, in, w, false, false, tol[d], __LINE__);
    }
    th_end(ctx);
}

static void test_exp_log_sqrt_specials(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 2; d < 4; d++) { /* float32, float64 */
        tfl_dtype dt = k_floats[d];
        TH_EXPECT(ctx, tfl_exp(ctx, TH_T(ctx, dt, (4), (-INFINITY, INFINITY, NAN, -1000))), dt, (4),
                  (0, INFINITY, NAN, 0), 0);
        TH_EXPECT(ctx, tfl_log(ctx, TH_T(ctx, dt, (4), (0, -1, INFINITY, 1))), dt, (4),
                  (-INFINITY, NAN, INFINITY, 0), 0);
        TH_EXPECT(ctx, tfl_sqrt(ctx, TH_T(ctx, dt, (4), (0, -1, INFINITY, 1))), dt, (4),
                  (0, NAN, INFINITY, 1), 0);
    }
    TH_EXPECT(ctx, tfl_exp(ctx, TH_T(ctx, TH_F32, (1), (1000))), TH_F32, (1), (INFINITY), 0);
    TH_EXPECT(ctx, tfl_exp(ctx, TH_T(ctx, TH_F16, (2), (12, 0))), TH_F16, (2), (INFINITY, 1), 0);
    TH_EXPECT(ctx, tfl_log(ctx, TH_T(ctx, TH_BF16, (2), (-1, 0))), TH_BF16, (2), (NAN, -INFINITY), 0);
    TH_EXPECT(ctx, tfl_sqrt(ctx, TH_T(ctx, TH_F16, (2), (-4, 2.25))), TH_F16, (2), (NAN, 1.5), 0);
    /* scalars and empty tensors */
    TH_EXPECT0(ctx, tfl_sqrt(ctx, TH_T0(ctx, TH_F64, 6.25)), TH_F64, 2.5, 0);
    TH_EXPECT_SHAPE(ctx, tfl_exp(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 3))), TH_F32, (0, 3));
    th_end(ctx);
}

static void test_exp_log_sqrt_complex(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double x[] = {0, TH_PI, 1, 1, -1, 0, 3, 4, -4, 0, 0.5, -2};
    double w[12];
    for (int k = 0; k < NELEMS(k_transcendental); k++) {
        const un_case *uc = &k_transcendental[k];
        for (int i = 0; i < 6; i++) {
            double complex r = uc->cref(CMPLX(x[2 * i], x[2 * i + 1]));
            w[2 * i] = creal(r);
            w[2 * i + 1] = cimag(r);
        }
        check_un_(ctx, uc->fn, TH_C128, TH_C128, 6, x, w, true, true, 1e-13, __LINE__);
        check_un_(ctx, uc->fn, TH_C64, TH_C64, 6, x, w, true, true, 2e-6, __LINE__);
    }
    /* hand values: sqrt(3+4i) = 2+i, sqrt(-4) = 2i, log(-1) = i pi, exp(i pi) = -1 */
    TH_EXPECTC(ctx, tfl_sqrt(ctx, TH_TC(ctx, TH_C128, (2), (3, 4, -4, 0))), TH_C128, (2),
               (2, 1, 0, 2), 1e-15);
    TH_EXPECTC(ctx, tfl_log(ctx, TH_TC(ctx, TH_C128, (1), (-1, 0))), TH_C128, (1), (0, TH_PI), 1e-15);
    TH_EXPECTC(ctx, tfl_exp(ctx, TH_TC(ctx, TH_C128, (1), (0, TH_PI))), TH_C128, (1), (-1, 0), 1e-15);
    th_end(ctx);
}

static void test_exp_log_sqrt_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *i32 = TH_T(ctx, TH_I32, (2), (1, 2));
    tfl_tensor *i64 = TH_T(ctx, TH_I64, (2), (1, 2));
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    for (int k = 0; k < NELEMS(k_transcendental); k++) {
        const un_case *uc = &k_transcendental[k];
        TH_EXPECT_INVALID(ctx, uc->fn(ctx, i32), uc->name,
                          "dtype int32 is not supported; expected one of float16, bfloat16, "
                          "float32, float64, complex64, complex128");
        TH_EXPECT_INVALID(ctx, uc->fn(ctx, i64), uc->name, "dtype int64 is not supported");
        TH_EXPECT_INVALID(ctx, uc->fn(ctx, b), uc->name, "dtype bool is not supported");
        TH_EXPECT_INVALID(ctx, uc->fn(ctx, NULL), uc->name, "input 0 is NULL");
    }
    TH_EXPECT_INVALID(ctx, tfl_neg(ctx, NULL), "Neg", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_abs(ctx, NULL), "Abs", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_identity(ctx, NULL), "Identity", "input 0 is NULL");
    th_end(ctx);
}

static void test_abs_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double x[] = {-1.5, 2.25, -0.0, -65504};
    static const double w[] = {1.5, 2.25, 0, 65504};
    CHECK_UN(ctx, tfl_abs, TH_F16, x, w, 0);
    CHECK_UN(ctx, tfl_abs, TH_F32, x, w, 0);
    CHECK_UN(ctx, tfl_abs, TH_F64, x, w, 0);
    static const double xb[] = {-1.5, 2.25, -0.0, -256};
    static const double wb[] = {1.5, 2.25, 0, 256};
    CHECK_UN(ctx, tfl_abs, TH_BF16, xb, wb, 0);
    static const double xi[] = {-3, 0, 5, -2147483647};
    static const double wi[] = {3, 0, 5, 2147483647};
    for (int i = 0; i < NELEMS(k_ints); i++) CHECK_UN(ctx, tfl_abs, k_ints[i], xi, wi, 0);
    TH_EXPECT0(ctx, tfl_abs(ctx, TH_T0(ctx, TH_I64, -5000000000.0)), TH_I64, 5000000000.0, 0);
    /* complex gives the real dtype of its parts */
    static const double xc[] = {3, 4, -5, 12, 0, -1, -2.5, 0};
    static const double wc[] = {5, 13, 1, 2.5};
    check_un_(ctx, tfl_abs, TH_C64, TH_F32, 4, xc, wc, true, false, 1e-7, __LINE__);
    check_un_(ctx, tfl_abs, TH_C128, TH_F64, 4, xc, wc, true, false, 1e-15, __LINE__);
    /* no overflow or underflow in the intermediate squares: |3e30 + 4e30 i| = 5e30 */
    TH_EXPECT(ctx, tfl_abs(ctx, TH_TC(ctx, TH_C64, (2), (3e30, 4e30, -3e-30, 4e-30))), TH_F32, (2),
              (5e30, 5e-30), 1e-6);
    TH_EXPECT(ctx, tfl_abs(ctx, TH_TC(ctx, TH_C128, (2), (3e300, -4e300, 3e-300, 4e-300))), TH_F64, (2),
              (5e300, 5e-300), 1e-15);
    /* -0.0 becomes +0.0 */
    tfl_tensor *z = tfl_abs(ctx, TH_T(ctx, TH_F64, (1), (-0.0)));
    assert_non_null(z);
    double zv = 1;
    assert_int_equal(tfl_tensor_to_host(z, &zv, sizeof zv), TFL_OK);
    assert_false(signbit(zv));
    TH_EXPECT_INVALID(ctx, tfl_abs(ctx, TH_T(ctx, TH_BOOL, (1), (1))), "Abs",
                      "dtype bool is not supported; expected one of " ALL_BUT_BOOL);
    th_end(ctx);
}

static void test_identity(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype all[] = {TH_BOOL, TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    static const double x[] = {1, 0, 2, 1};
    static const double xb[] = {1, 0, 1, 1};
    for (int d = 0; d < NELEMS(all); d++) {
        const double *in = all[d] == TH_BOOL ? xb : x;
        tfl_tensor *t = TH_TENSOR_N(ctx, all[d], 2, TH_SHAPE(2, 2), in, 4);
        tfl_tensor *r = tfl_identity(ctx, t);
        TH_EXPECT_N(ctx, r, all[d], 2, TH_SHAPE(2, 2), in, 4, 0);
        assert_true(tfl_tensor_data_ptr(r) != tfl_tensor_data_ptr(t));
    }
    TH_EXPECTC(ctx, tfl_identity(ctx, TH_TC(ctx, TH_C64, (2), (1, 2, 3, 4))), TH_C64, (2),
               (1, 2, 3, 4), 0);
    TH_EXPECTC(ctx, tfl_identity(ctx, TH_TC(ctx, TH_C128, (1), (-1, 0.5))), TH_C128, (1),
               (-1, 0.5), 0);
    TH_EXPECT0(ctx, tfl_identity(ctx, TH_T0(ctx, TH_F32, 7)), TH_F32, 7, 0);
    /* a transposed view becomes a contiguous copy in view order */
    tfl_tensor *a = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *at = tfl_transpose(ctx, a, NULL);
    assert_non_null(at);
    tfl_tensor *c = tfl_identity(ctx, at);
    TH_EXPECT(ctx, c, TH_I32, (3, 2), (1, 4, 2, 5, 3, 6), 0);
    assert_true(tfl_tensor_is_contiguous(c));
    th_end(ctx);
}

/* Large, broadcast and strided inputs (the parallel paths), against loops here. */
static void test_large_broadcast_and_views(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { R = 513, C = 257 };
    double *av = malloc(sizeof(double) * R * C), *bv = malloc(sizeof(double) * C);
    double *want = malloc(sizeof(double) * R * C);
    assert_true(av && bv && want);
    for (int i = 0; i < R * C; i++) av[i] = (double)((i * 37) % 201) - 100.0;
    for (int j = 0; j < C; j++) bv[j] = (double)((j * 11) % 13) + 1.0;
    tfl_tensor *a32 = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(R, C), av, R * C);
    tfl_tensor *b32 = TH_TENSOR_N(ctx, TH_F32, 1, TH_SHAPE(C), bv, C);
    for (int i = 0; i < R * C; i++) want[i] = av[i] * bv[i % C];
    TH_EXPECT_N(ctx, tfl_mul(ctx, a32, b32), TH_F32, 2, TH_SHAPE(R, C), want, R * C, 0);
    /* integer floor division, broadcast along the other axis via a (C, 1) divisor on a^T */
    tfl_tensor *ai = TH_TENSOR_N(ctx, TH_I32, 2, TH_SHAPE(R, C), av, R * C);
    tfl_tensor *ait = tfl_transpose(ctx, ai, NULL); /* (C, R), strided */
    tfl_tensor *bi = TH_TENSOR_N(ctx, TH_I32, 2, TH_SHAPE(C, 1), bv, C);
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++) want[j * R + i] = floor(av[i * C + j] / bv[j]);
    TH_EXPECT_N(ctx, tfl_div(ctx, ait, bi), TH_I32, 2, TH_SHAPE(C, R), want, R * C, 0);
    /* unary on a strided view */
    for (int i = 0; i < R * C; i++) av[i] = (double)(i % 97) / 16.0 - 3.0;
    tfl_tensor *e = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(R, C), av, R * C);
    tfl_tensor *et = tfl_transpose(ctx, e, NULL);
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++) want[j * R + i] = exp(av[i * C + j]);
    TH_EXPECT_N(ctx, tfl_exp(ctx, et), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 1e-14);
    for (int j = 0; j < C; j++)
        for (int i = 0; i < R; i++) want[j * R + i] = fabs(av[i * C + j]);
    TH_EXPECT_N(ctx, tfl_abs(ctx, et), TH_F64, 2, TH_SHAPE(C, R), want, R * C, 0);
    /* two strided views of different layouts */
    tfl_tensor *sum = tfl_add(ctx, et, tfl_transpose(ctx, tfl_neg(ctx, e), NULL));
    TH_EXPECT_N(ctx, tfl_reduce_max(ctx, tfl_abs(ctx, sum), 0, NULL, true), TH_F64, 2, TH_SHAPE(1, 1),
                TH_VALS(0), 1, 0);
    free(av);
    free(bv);
    free(want);
    th_end(ctx);
}

/* int64 arithmetic is exact beyond 2^53 (no trip through double). */
static void test_int64_exact_beyond_2_53(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t p53 = INT64_C(9007199254740992); /* 2^53 */
    tfl_tensor *a = TH_TI64(ctx, (3), (p53 + 1, INT64_C(4611686018427387905), -p53 - 3));
    tfl_tensor *one = TH_TI64(ctx, (3), (1, 1, 1));
    tfl_tensor *two = TH_TI64(ctx, (3), (2, 2, 2));
    TH_EXPECT_I64(ctx, tfl_add(ctx, a, one), (3), (p53 + 2, INT64_C(4611686018427387906), -p53 - 2));
    TH_EXPECT_I64(ctx, tfl_sub(ctx, a, one), (3), (p53, INT64_C(4611686018427387904), -p53 - 4));
    TH_EXPECT_I64(ctx, tfl_mul(ctx, a, one), (3), (p53 + 1, INT64_C(4611686018427387905), -p53 - 3));
    TH_EXPECT_I64(ctx, tfl_mul(ctx, TH_TI64(ctx, (1), (p53 + 1)), TH_TI64(ctx, (1), (3))), (1),
                  (INT64_C(27021597764222979)));
    /* floor division: (2^53+1)//2 = 2^52, (2^62+1)//2 = 2^61, (-2^53-3)//2 = -2^52-2 */
    TH_EXPECT_I64(ctx, tfl_div(ctx, a, two), (3),
                  (INT64_C(4503599627370496), INT64_C(2305843009213693952), INT64_C(-4503599627370498)));
    TH_EXPECT_I64(ctx, tfl_div(ctx, a, one), (3), (p53 + 1, INT64_C(4611686018427387905), -p53 - 3));
    TH_EXPECT_I64(ctx, tfl_maximum(ctx, a, TH_TI64(ctx, (1), (p53))), (3),
                  (p53 + 1, INT64_C(4611686018427387905), p53));
    TH_EXPECT_I64(ctx, tfl_minimum(ctx, a, TH_TI64(ctx, (1), (p53))), (3), (p53, p53, -p53 - 3));
    TH_EXPECT_I64(ctx, tfl_neg(ctx, a), (3), (-p53 - 1, INT64_C(-4611686018427387905), p53 + 3));
    TH_EXPECT_I64(ctx, tfl_abs(ctx, a), (3), (p53 + 1, INT64_C(4611686018427387905), p53 + 3));
    TH_EXPECT_I64(ctx, tfl_identity(ctx, a), (3), (p53 + 1, INT64_C(4611686018427387905), -p53 - 3));
    /* 3^39 = 4052555153018976267, (-3)^39, (2^31+1)^2 */
    TH_EXPECT_I64(ctx,
                  tfl_pow(ctx, TH_TI64(ctx, (3), (3, -3, 2147483649)), TH_TI64(ctx, (3), (39, 39, 2))),
                  (3), (INT64_C(4052555153018976267), INT64_C(-4052555153018976267),
                        INT64_C(4611686022722355201)));
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_add_dtypes),
        TH_TEST(test_sub_dtypes),
        TH_TEST(test_mul_dtypes),
        TH_TEST(test_div_dtypes),
        TH_TEST(test_pow_dtypes),
        TH_TEST(test_maximum_minimum_dtypes),
        TH_TEST(test_half_rounding),
        TH_TEST(test_broadcasting_all_binary_ops),
        TH_TEST(test_broadcast_hand_values),
        TH_TEST(test_binary_on_views),
        TH_TEST(test_add_without_frame_releases),
        TH_TEST(test_binary_dtype_mismatch),
        TH_TEST(test_binary_unsupported_dtype),
        TH_TEST(test_binary_incompatible_shapes),
        TH_TEST(test_binary_null_inputs),
        TH_TEST(test_null_input_keeps_first_error),
        TH_TEST(test_first_error_kept),
        TH_TEST(test_integer_division_by_zero),
        TH_TEST(test_integer_negative_power),
        TH_TEST(test_neg_dtypes),
        TH_TEST(test_exp_log_sqrt_values),
        TH_TEST(test_exp_log_sqrt_specials),
        TH_TEST(test_exp_log_sqrt_complex),
        TH_TEST(test_exp_log_sqrt_errors),
        TH_TEST(test_abs_dtypes),
        TH_TEST(test_identity),
        TH_TEST(test_large_broadcast_and_views),
        TH_TEST(test_int64_exact_beyond_2_53),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
