/* test_matmul.c: cmocka tests of tapeflow's tfl_matmul: every accepted dtype, transpose
 * flags, broadcast batch axes, views as inputs, a larger product against a naive loop, errors;
 * and of tfl_matmul_bias (FusedMatMul) against tfl_matmul then tfl_add on every CPU path. */
#include "test_ops_helpers.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MATMUL_DTYPES "int32, int64, float16, bfloat16, float32, float64, complex64, complex128"

static const tfl_dtype k_real[] = {TH_I32, TH_I64, TH_F32, TH_F64};
static const tfl_dtype k_cplx[] = {TH_C64, TH_C128};

/* ---- a naive reference -------------------------------------------------------------------- */

typedef struct ref_out {
    int rank;
    int64_t shape[TFL_MAX_RANK];
    int64_t n;
    double *re, *im;
} ref_out;

/*
 * out = op(a) @ op(b) with NumPy batch broadcasting; a and b hold the stored (untransposed)
 * row-major values, im parts may be NULL (then zero).
 */
static ref_out ref_matmul(int ra, const int64_t *sa, const double *are, const double *aim, int rb,
                          const int64_t *sb, const double *bre, const double *bim, unsigned flags)
{
    ref_out r;
    memset(&r, 0, sizeof r);
    bool ta = flags & TFL_TRANSPOSE_A, tb = flags & TFL_TRANSPOSE_B;
    int64_t ar = sa[ra - 2], ac = sa[ra - 1], br = sb[rb - 2], bc = sb[rb - 1];
    int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
    assert_int_equal(k, tb ? bc : br);
    int nba = ra - 2, nbb = rb - 2, nb = nba > nbb ? nba : nbb;
    int64_t bshape[TFL_MAX_RANK];
    for (int i = 0; i < nb; i++) {
        int64_t da = i - (nb - nba) >= 0 ? sa[i - (nb - nba)] : 1;
        int64_t db = i - (nb - nbb) >= 0 ? sb[i - (nb - nbb)] : 1;
        assert_true(da == db || da == 1 || db == 1);
        bshape[i] = da == 1 ? db : da;
        r.shape[i] = bshape[i];
    }
    r.rank = nb + 2;
    r.shape[nb] = m;
    r.shape[nb + 1] = n;
    int64_t batches = th_numel(nb, bshape);
    r.n = batches * m * n;
    r.re = calloc((size_t)r.n + 1, sizeof(double));
    r.im = calloc((size_t)r.n + 1, sizeof(double));
    assert_true(r.re && r.im);
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0, sta = ar * ac, stb = br * bc;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t idx = rem % bshape[d];
            rem /= bshape[d];
            int dai = d - (nb - nba), dbi = d - (nb - nbb);
            if (dai >= 0) {
                if (sa[dai] != 1) aoff += idx * sta;
                sta *= sa[dai];
            }
            if (dbi >= 0) {
                if (sb[dbi] != 1) boff += idx * stb;
                stb *= sb[dbi];
            }
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sr = 0, si = 0;
                for (int64_t p = 0; p < k; p++) {
                    int64_t ia = aoff + (ta ? p * ac + i : i * ac + p);
                    int64_t ib = boff + (tb ? j * bc + p : p * bc + j);
                    double xr = are[ia], xi = aim ? aim[ia] : 0, yr = bre[ib], yi = bim ? bim[ib] : 0;
                    sr += xr * yr - xi * yi;
                    si += xr * yi + xi * yr;
                }
                r.re[(bi * m + i) * n + j] = sr;
                r.im[(bi * m + i) * n + j] = si;
            }
    }
    return r;
}

static void ref_free(ref_out *r)
{
    free(r->re);
    free(r->im);
}

/* Fills re (and im) with small values from a formula; integral when `integral`. */
static void fill_vals(double *re, double *im, int64_t n, int seed, bool integral)
{
    for (int64_t i = 0; i < n; i++) {
        double v = (double)((i * 7 + seed * 3 + i / 5) % 11) - 5.0;
        re[i] = integral ? v : v * 0.25;
        if (im) im[i] = (double)((i * 5 + seed) % 7) - 3.0;
    }
}

/* Builds a and b of dt from the formula, multiplies, compares with the reference. */
static void check_matmul_(tfl_ctx *ctx, tfl_dtype dt, int ra, const int64_t *sa, int rb,
                          const int64_t *sb, unsigned flags, double tol, int line)
{
    bool cplx = tfl_dtype_is_complex(dt), integral = tfl_dtype_is_integer(dt);
    int64_t na = th_numel(ra, sa), nb = th_numel(rb, sb);
    double *are = calloc((size_t)na + 1, sizeof(double)), *aim = calloc((size_t)na + 1, sizeof(double));
    double *bre = calloc((size_t)nb + 1, sizeof(double)), *bim = calloc((size_t)nb + 1, sizeof(double));
    double *apk = calloc(2 * (size_t)na + 1, sizeof(double)), *bpk = calloc(2 * (size_t)nb + 1, sizeof(double));
    assert_true(are && aim && bre && bim && apk && bpk);
    fill_vals(are, cplx ? aim : NULL, na, 1, integral);
    fill_vals(bre, cplx ? bim : NULL, nb, 2, integral);
    for (int64_t i = 0; i < na; i++) {
        apk[2 * i] = are[i];
        apk[2 * i + 1] = aim[i];
    }
    for (int64_t i = 0; i < nb; i++) {
        bpk[2 * i] = bre[i];
        bpk[2 * i + 1] = bim[i];
    }
    tfl_tensor *a = cplx ? th_tensor_(ctx, dt, ra, sa, apk, 2 * (size_t)na, true, __FILE__, line)
                         : th_tensor_(ctx, dt, ra, sa, are, (size_t)na, false, __FILE__, line);
    tfl_tensor *b = cplx ? th_tensor_(ctx, dt, rb, sb, bpk, 2 * (size_t)nb, true, __FILE__, line)
                         : th_tensor_(ctx, dt, rb, sb, bre, (size_t)nb, false, __FILE__, line);
    ref_out r = ref_matmul(ra, sa, are, cplx ? aim : NULL, rb, sb, bre, cplx ? bim : NULL, flags);
    tfl_tensor *c = tfl_matmul(ctx, a, b, flags);
    if (!c) print_error("matmul %s flags %u failed\n", tfl_dtype_name(dt), flags);
    if (cplx) {
        double *pk = calloc(2 * (size_t)r.n + 1, sizeof(double));
        assert_non_null(pk);
        for (int64_t i = 0; i < r.n; i++) {
            pk[2 * i] = r.re[i];
            pk[2 * i + 1] = r.im[i];
        }
        th_expect_(ctx, c, dt, r.rank, r.shape, pk, 2 * (size_t)r.n, true, tol, __FILE__, line);
        free(pk);
    } else {
        th_expect_(ctx, c, dt, r.rank, r.shape, r.re, (size_t)r.n, false, tol, __FILE__, line);
    }
    ref_free(&r);
    free(are);
    free(aim);
    free(bre);
    free(bim);
    free(apk);
    free(bpk);
}
#define CHECK_MM(ctx, dt, sa, sb, flags, tol)                                                  \
    check_matmul_((ctx), (dt), TH_RANK_OF(sa), TH_SHAPE sa, TH_RANK_OF(sb), TH_SHAPE sb, (flags), \
                  (tol), __LINE__)

static double tol_for(tfl_dtype dt)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT32:
    case TFL_DTYPE_COMPLEX64: return 1e-5;
    case TFL_DTYPE_FLOAT64:
    case TFL_DTYPE_COMPLEX128: return 1e-12;
    default: return 0;
    }
}

/* ---- hand values -------------------------------------------------------------------------- */

/* float16 and bfloat16 run through the float32 kernel: the float32 product of the 16-bit
 * values, rounded once to 16 bits */
static void test_matmul_half_via_float32(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const tfl_dtype halves[2] = {TH_F16, TH_BF16};
    tfl_tensor *a = TH_T(ctx, TH_F32, (2, 3), (1 / 7., 2 / 7., 3 / 7., 4 / 7., 5 / 7., 6 / 7.));
    tfl_tensor *b = TH_T(ctx, TH_F32, (3, 2), (0.3, -1.7, 2.9, 0.11, -0.5, 3.3));
    for (int d = 0; d < 2; d++) {
        tfl_tensor *ah = tfl_cast(ctx, a, halves[d]), *bh = tfl_cast(ctx, b, halves[d]);
        tfl_tensor *got = tfl_matmul(ctx, ah, bh, 0);
        tfl_tensor *want = tfl_cast(ctx, tfl_matmul(ctx, tfl_cast(ctx, ah, TH_F32),
                                                    tfl_cast(ctx, bh, TH_F32), 0), halves[d]);
        assert_non_null(got);
        assert_non_null(want);
        assert_int_equal(tfl_tensor_dtype(got), halves[d]);
        for (int64_t i = 0; i < 4; i++) {
            double g = 0, w = 1;
            assert_int_equal(tfl_tensor_get(got, i, &g), TFL_OK);
            assert_int_equal(tfl_tensor_get(want, i, &w), TFL_OK);
            assert_true(g == w);
        }
    }
    th_end(ctx);
}

static void test_matmul_2x3_3x2_all_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        tfl_tensor *a = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 2, 3, 4, 5, 6), 6);
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 2, 3, 4, 5, 6), 6);
        TH_EXPECT(ctx, tfl_matmul(ctx, a, b, 0), dt, (2, 2), (22, 28, 49, 64), 0);
        /* b a: (3,2)(2,3) = [[9,12,15],[19,26,33],[29,40,51]] */
        TH_EXPECT(ctx, tfl_matmul(ctx, b, a, 0), dt, (3, 3), (9, 12, 15, 19, 26, 33, 29, 40, 51), 0);
    }
    for (int d = 0; d < NELEMS(k_cplx); d++) {
        tfl_dtype dt = k_cplx[d];
        /* (1+i) A times B = (1+i) [[22,28],[49,64]] */
        tfl_tensor *a = TH_TC(ctx, dt, (2, 3), (1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6));
        tfl_tensor *b = TH_TC(ctx, dt, (3, 2), (1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0));
        TH_EXPECTC(ctx, tfl_matmul(ctx, a, b, 0), dt, (2, 2), (22, 22, 28, 28, 49, 49, 64, 64), 0);
        /* [[1+i, 2], [0, 1-i]] [[1, i], [2-i, 3]] = [[5-i, 5+i], [1-3i, 3-3i]] */
        tfl_tensor *p = TH_TC(ctx, dt, (2, 2), (1, 1, 2, 0, 0, 0, 1, -1));
        tfl_tensor *q = TH_TC(ctx, dt, (2, 2), (1, 0, 0, 1, 2, -1, 3, 0));
        TH_EXPECTC(ctx, tfl_matmul(ctx, p, q, 0), dt, (2, 2), (5, -1, 5, 1, 1, -3, 3, -3), 0);
    }
    th_end(ctx);
}

static void test_matmul_transpose_flags(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        tfl_tensor *a = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 2, 3, 4, 5, 6), 6);
        tfl_tensor *at = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 4, 2, 5, 3, 6), 6);
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 2, 3, 4, 5, 6), 6);
        tfl_tensor *bt = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 3, 5, 2, 4, 6), 6);
        TH_EXPECT(ctx, tfl_matmul(ctx, at, b, TFL_TRANSPOSE_A), dt, (2, 2), (22, 28, 49, 64), 0);
        TH_EXPECT(ctx, tfl_matmul(ctx, a, bt, TFL_TRANSPOSE_B), dt, (2, 2), (22, 28, 49, 64), 0);
        TH_EXPECT(ctx, tfl_matmul(ctx, at, bt, TFL_TRANSPOSE_A | TFL_TRANSPOSE_B), dt, (2, 2),
                  (22, 28, 49, 64), 0);
        /* a a^T via the flag: [[14, 32], [32, 77]] */
        TH_EXPECT(ctx, tfl_matmul(ctx, a, a, TFL_TRANSPOSE_B), dt, (2, 2), (14, 32, 32, 77), 0);
        /* a^T a: [[17,22,27],[22,29,36],[27,36,45]] */
        TH_EXPECT(ctx, tfl_matmul(ctx, a, a, TFL_TRANSPOSE_A), dt, (3, 3),
                  (17, 22, 27, 22, 29, 36, 27, 36, 45), 0);
    }
    /* complex: transposes do not conjugate. (1+i) A^T and (1-i) B^T stored: 2 [[22,28],[49,64]] */
    for (int d = 0; d < NELEMS(k_cplx); d++) {
        tfl_dtype dt = k_cplx[d];
        tfl_tensor *at = TH_TC(ctx, dt, (3, 2), (1, 1, 4, 4, 2, 2, 5, 5, 3, 3, 6, 6));
        tfl_tensor *bt = TH_TC(ctx, dt, (2, 3), (1, -1, 3, -3, 5, -5, 2, -2, 4, -4, 6, -6));
        TH_EXPECTC(ctx, tfl_matmul(ctx, at, bt, TFL_TRANSPOSE_A | TFL_TRANSPOSE_B), dt, (2, 2),
                   (44, 0, 56, 0, 98, 0, 128, 0), 0);
        tfl_tensor *b = TH_TC(ctx, dt, (3, 2), (1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0));
        TH_EXPECTC(ctx, tfl_matmul(ctx, at, b, TFL_TRANSPOSE_A), dt, (2, 2),
                   (22, 22, 28, 28, 49, 49, 64, 64), 0);
    }
    th_end(ctx);
}

static void test_matmul_shapes_edge(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        /* outer product (3,1)(1,2) */
        TH_EXPECT(ctx,
                  tfl_matmul(ctx, TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 1), TH_VALS(1, 2, 3), 3),
                             TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(1, 2), TH_VALS(4, 5), 2), 0),
                  dt, (3, 2), (4, 5, 8, 10, 12, 15), 0);
        /* inner product (1,3)(3,1) */
        TH_EXPECT(ctx,
                  tfl_matmul(ctx, TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(1, 3), TH_VALS(1, 2, 3), 3),
                             TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 1), TH_VALS(4, 5, 6), 3), 0),
                  dt, (1, 1), (32), 0);
        /* k = 0 gives zeros; m = 0 gives an empty result */
        TH_EXPECT(ctx,
                  tfl_matmul(ctx, tfl_zeros(ctx, dt, 2, TH_SHAPE(2, 0)),
                             tfl_zeros(ctx, dt, 2, TH_SHAPE(0, 3)), 0),
                  dt, (2, 3), (0, 0, 0, 0, 0, 0), 0);
        TH_EXPECT_SHAPE(ctx,
                        tfl_matmul(ctx, tfl_zeros(ctx, dt, 2, TH_SHAPE(0, 3)),
                                   tfl_ones(ctx, dt, 2, TH_SHAPE(3, 2)), 0),
                        dt, (0, 2));
    }
    TH_EXPECTC(ctx,
               tfl_matmul(ctx, tfl_ones(ctx, TH_C64, 2, TH_SHAPE(2, 0)),
                          tfl_ones(ctx, TH_C64, 2, TH_SHAPE(0, 1)), 0),
               TH_C64, (2, 1), (0, 0, 0, 0), 0);
    th_end(ctx);
}

/* ---- batches ---------------------------------------------------------------------------------- */

static void test_matmul_batched_hand(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* (2,2,2) @ (2,2): each batch times [[1,1],[0,1]] */
    tfl_tensor *a = TH_T(ctx, TH_F32, (2, 2, 2), (1, 2, 3, 4, 5, 6, 7, 8));
    tfl_tensor *u = TH_T(ctx, TH_F32, (2, 2), (1, 1, 0, 1));
    TH_EXPECT(ctx, tfl_matmul(ctx, a, u, 0), TH_F32, (2, 2, 2), (1, 3, 3, 7, 5, 11, 7, 15), 0);
    /* (2,2) @ (2,2,2): [[1,1],[0,1]] times each batch */
    TH_EXPECT(ctx, tfl_matmul(ctx, u, a, 0), TH_F32, (2, 2, 2), (4, 6, 3, 4, 12, 14, 7, 8), 0);
    /* (2,1,2,2) @ (3,2,2) -> (2,3,2,2): batch (i,j) is a_i times s_j, s_j = j * I */
    tfl_tensor *a4 = TH_T(ctx, TH_I32, (2, 1, 2, 2), (1, 2, 3, 4, 5, 6, 7, 8));
    tfl_tensor *s = TH_T(ctx, TH_I32, (3, 2, 2), (0, 0, 0, 0, 1, 0, 0, 1, 2, 0, 0, 2));
    TH_EXPECT(ctx, tfl_matmul(ctx, a4, s, 0), TH_I32, (2, 3, 2, 2),
              (0, 0, 0, 0, 1, 2, 3, 4, 2, 4, 6, 8, 0, 0, 0, 0, 5, 6, 7, 8, 10, 12, 14, 16), 0);
    th_end(ctx);
}

static void test_matmul_batched_broadcast(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype all[] = {TH_F32, TH_F64, TH_I32, TH_I64, TH_C64, TH_C128};
    for (int d = 0; d < NELEMS(all); d++) {
        tfl_dtype dt = all[d];
        double tol = tol_for(dt);
        CHECK_MM(ctx, dt, (2, 1, 2, 3), (3, 3, 2), 0, tol);   /* -> (2,3,2,2) */
        CHECK_MM(ctx, dt, (2, 3), (4, 3, 2), 0, tol);         /* -> (4,2,2) */
        CHECK_MM(ctx, dt, (4, 2, 3), (3, 2), 0, tol);         /* -> (4,2,2) */
        CHECK_MM(ctx, dt, (3, 1, 2, 3), (1, 2, 3, 4), 0, tol); /* both stretch */
        CHECK_MM(ctx, dt, (2, 1, 3, 2), (3, 3, 2), TFL_TRANSPOSE_A, tol);
        CHECK_MM(ctx, dt, (2, 1, 2, 3), (3, 2, 3), TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (1, 3, 2), (2, 1, 4, 3), TFL_TRANSPOSE_A | TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (1, 1, 2, 3), (3, 2), 0, tol);       /* size-1 batches kept */
        CHECK_MM(ctx, dt, (2, 1, 2, 1, 2, 1, 2, 3), (1, 2, 1, 2, 1, 2, 3, 2), 0, tol); /* rank 8 */
    }
    th_end(ctx);
}

/* ---- views as inputs -------------------------------------------------------------------------- */

static void test_matmul_of_views(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_F32, TH_F64, TH_I32, TH_I64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_dtype dt = dts[d];
        /* transposed views of A^T and B^T */
        tfl_tensor *at = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 4, 2, 5, 3, 6), 6);
        tfl_tensor *bt = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 3, 5, 2, 4, 6), 6);
        tfl_tensor *av = tfl_transpose(ctx, at, NULL);
        tfl_tensor *bv = tfl_transpose(ctx, bt, TH_AXES(1, 0));
        assert_non_null(av);
        assert_non_null(bv);
        TH_EXPECT(ctx, tfl_matmul(ctx, av, bv, 0), dt, (2, 2), (22, 28, 49, 64), 0);
        /* a view with a transpose flag on top: (A^T)^T^T = A^T ... av^T is at */
        TH_EXPECT(ctx, tfl_matmul(ctx, av, bt, TFL_TRANSPOSE_B), dt, (2, 2), (22, 28, 49, 64), 0);
        TH_EXPECT(ctx, tfl_matmul(ctx, at, bv, TFL_TRANSPOSE_A), dt, (2, 2), (22, 28, 49, 64), 0);
        /* a slice with a row stride: [[2,3,4],[6,7,8]] of 1..12 (3,4) */
        tfl_tensor *big = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 4),
                                      TH_VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), 12);
        tfl_tensor *sl = tfl_slice(ctx, big, TH_SHAPE(0, 1), TH_SHAPE(2, 3));
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 2, 3, 4, 5, 6), 6);
        TH_EXPECT(ctx, tfl_matmul(ctx, sl, b, 0), dt, (2, 2), (31, 40, 67, 88), 0);
        /* a column slice of b: [[2],[4],[6]] */
        tfl_tensor *bcol = tfl_slice(ctx, b, TH_SHAPE(0, 1), TH_SHAPE(3, 1));
        TH_EXPECT(ctx, tfl_matmul(ctx, sl, bcol, 0), dt, (2, 1), (40, 88), 0);
        /* a batched transposed view: perm (0,2,1) of (2,3,2) stored A^T twice */
        tfl_tensor *bat = TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(2, 3, 2),
                                      TH_VALS(1, 4, 2, 5, 3, 6, 1, 4, 2, 5, 3, 6), 12);
        tfl_tensor *batv = tfl_transpose(ctx, bat, TH_AXES(0, 2, 1));
        TH_EXPECT(ctx, tfl_matmul(ctx, batv, b, 0), dt, (2, 2, 2), (22, 28, 49, 64, 22, 28, 49, 64), 0);
    }
    /* complex views */
    tfl_tensor *ct = TH_TC(ctx, TH_C128, (3, 2), (1, 1, 4, 4, 2, 2, 5, 5, 3, 3, 6, 6));
    tfl_tensor *cb = TH_TC(ctx, TH_C128, (3, 2), (1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0));
    TH_EXPECTC(ctx, tfl_matmul(ctx, tfl_transpose(ctx, ct, NULL), cb, 0), TH_C128, (2, 2),
               (22, 22, 28, 28, 49, 49, 64, 64), 0);
    th_end(ctx);
}

/* ---- larger products against the naive loop --------------------------------------------------- */

static void test_matmul_large_vs_naive(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype all[] = {TH_F64, TH_F32, TH_I32, TH_I64, TH_C64, TH_C128};
    for (int d = 0; d < NELEMS(all); d++) {
        tfl_dtype dt = all[d];
        double tol = tol_for(dt);
        CHECK_MM(ctx, dt, (67, 45), (45, 33), 0, tol);
        CHECK_MM(ctx, dt, (45, 67), (45, 33), TFL_TRANSPOSE_A, tol);
        CHECK_MM(ctx, dt, (67, 45), (33, 45), TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (45, 67), (33, 45), TFL_TRANSPOSE_A | TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (3, 17, 9), (3, 9, 13), 0, tol);
    }
    /* an explicit double loop in the test, float64 */
    enum { M = 67, K = 45, N = 33 };
    static double av[M * K], bv[K * N], cw[M * N];
    for (int i = 0; i < M * K; i++) av[i] = sin(0.1 * i) + (double)(i % 5);
    for (int i = 0; i < K * N; i++) bv[i] = cos(0.07 * i) - (double)(i % 3);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int p = 0; p < K; p++) s += av[i * K + p] * bv[p * N + j];
            cw[i * N + j] = s;
        }
    tfl_tensor *a = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(M, K), av, M * K);
    tfl_tensor *b = TH_TENSOR_N(ctx, TH_F64, 2, TH_SHAPE(K, N), bv, K * N);
    TH_EXPECT_N(ctx, tfl_matmul(ctx, a, b, 0), TH_F64, 2, TH_SHAPE(M, N), cw, M * N, 1e-12);
    tfl_tensor *a32 = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(M, K), av, M * K);
    tfl_tensor *b32 = TH_TENSOR_N(ctx, TH_F32, 2, TH_SHAPE(K, N), bv, K * N);
    TH_EXPECT_N(ctx, tfl_matmul(ctx, a32, b32, 0), TH_F32, 2, TH_SHAPE(M, N), cw, M * N, 1e-4);
    th_end(ctx);
}

/* Products big enough for BLIS's packed path where k_matmul picks it (packed_pays(): an n or
 * k of 256 over an output of 64K, A^T B over 32K); b^T is then read in place, not copied. */
static void test_matmul_packed_vs_naive(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype all[] = {TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(all); d++) {
        tfl_dtype dt = all[d];
        double tol = tol_for(dt);
        CHECK_MM(ctx, dt, (256, 128), (128, 256), 0, tol);
        CHECK_MM(ctx, dt, (256, 300), (300, 256), 0, tol);
        CHECK_MM(ctx, dt, (256, 128), (257, 128), TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (300, 128), (300, 256), TFL_TRANSPOSE_A, tol);
        CHECK_MM(ctx, dt, (300, 129), (256, 300), TFL_TRANSPOSE_A | TFL_TRANSPOSE_B, tol);
        CHECK_MM(ctx, dt, (2, 256, 128), (128, 256), 0, tol);
    }
    th_end(ctx);
}

/* float32 products up to 64 wide and deep (attention's per head: gemm_small.c's 6 x 16 tiles on
 * AVX2 CPUs, 6 x 64 and 8 x 32 on AVX-512) at every edge of a tile: rows 1..13 and 64, columns
 * around 16 and 32, every transpose */
static void test_matmul_small_tiles_vs_naive(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const int64_t ms[] = {1, 5, 6, 7, 8, 9, 13, 64}, ns[] = {1, 15, 16, 17, 31, 32, 33, 64},
                         ks[] = {1, 3, 13, 64}; /* 13: 8 x 8 blocks of b^T and a rest */
    for (int f = 0; f < 4; f++)
        for (int i = 0; i < NELEMS(ms); i++)
            for (int j = 0; j < NELEMS(ns); j++)
                for (int l = 0; l < NELEMS(ks); l++) {
                    const bool ta = f & 1, tb = f & 2;
                    const int64_t sa[2] = {ta ? ks[l] : ms[i], ta ? ms[i] : ks[l]};
                    const int64_t sb[2] = {tb ? ns[j] : ks[l], tb ? ks[l] : ns[j]};
                    const unsigned flags = (ta ? TFL_TRANSPOSE_A : 0) | (tb ? TFL_TRANSPOSE_B : 0);
                    check_matmul_(ctx, TH_F32, 2, sa, 2, sb, flags, 1e-5, __LINE__);
                }
    th_end(ctx);
}

/* Single products up to 256 wide (512 over a depth of 1024) from 48 rows: gemm_narrow.c's
 * kernel on AVX-512 CPUs (BLIS elsewhere): row counts off its 24-row split and 6-row tiles,
 * widths off its 16-lane vectors and 64-wide panels, depths across its blocks of k, rows in
 * blocks of 240 (float32) or 120 (float64) over a deep product, every transpose, a batch, and
 * b stored by columns (copied by rows first). */
static void test_matmul_narrow_vs_naive(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const int64_t shapes[][3] = {{49, 256, 64}, {61, 17, 300}, {300, 65, 97}, {130, 1, 2100},
                                        {64, 300, 1024}, {53, 512, 1030}, {48, 250, 193},
                                        {600, 250, 200}}; /* the last in blocks of rows */
    static const tfl_dtype all[] = {TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(all); d++)
        for (int s = 0; s < NELEMS(shapes); s++)
            for (int f = 0; f < 4; f++) {
                const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                const bool ta = f & 1, tb = f & 2;
                const unsigned flags = (ta ? TFL_TRANSPOSE_A : 0) | (tb ? TFL_TRANSPOSE_B : 0);
                check_matmul_(ctx, all[d], 2, ta ? TH_SHAPE(k, m) : TH_SHAPE(m, k), 2,
                              tb ? TH_SHAPE(n, k) : TH_SHAPE(k, n), flags, tol_for(all[d]),
                              __LINE__);
            }
    /* the same bits on 1, 2 and 3 threads: rows split in ranges of 24, in blocks over k */
    for (int f = 0; f < 2; f++) {
        tfl_tensor *a = tfl_random_uniform(ctx, TH_F32, 2, f ? TH_SHAPE(200, 600) : TH_SHAPE(600, 200),
                                           -1, 1, 11);
        tfl_tensor *b = tfl_random_uniform(ctx, TH_F32, 2, TH_SHAPE(200, 250), -1, 1, 12);
        static float got[3][600 * 250];
        for (int t = 0; t < 3; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            assert_int_equal(tfl_tensor_to_host(tfl_matmul(ctx, a, b, f ? TFL_TRANSPOSE_A : 0),
                                                got[t], sizeof got[t]),
                             TFL_OK);
        }
        assert_memory_equal(got[0], got[1], sizeof got[0]);
        assert_memory_equal(got[0], got[2], sizeof got[0]);
    }
    /* a short C of 8 panels: split by panels on 2 threads, by rows on 1 and 3 (a weight
       gradient, x^T dy); against the naive loops too */
    {
        tfl_tensor *a = tfl_random_uniform(ctx, TH_F32, 2, TH_SHAPE(700, 120), -1, 1, 13);
        tfl_tensor *b = tfl_random_uniform(ctx, TH_F32, 2, TH_SHAPE(700, 500), -1, 1, 14);
        static float got[3][120 * 500];
        for (int t = 0; t < 3; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            assert_int_equal(tfl_tensor_to_host(tfl_matmul(ctx, a, b, TFL_TRANSPOSE_A), got[t],
                                                sizeof got[t]),
                             TFL_OK);
        }
        assert_memory_equal(got[0], got[1], sizeof got[0]);
        assert_memory_equal(got[0], got[2], sizeof got[0]);
        assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
        check_matmul_(ctx, TH_F32, 2, TH_SHAPE(700, 120), 2, TH_SHAPE(700, 500), TFL_TRANSPOSE_A,
                      tol_for(TH_F32), __LINE__);
    }
    /* a short C over a deep k (a weight gradient over 3100 tokens): summed in 3 pieces of k,
       whole pieces a thread on 3 threads, pieces in turn on 2; against the naive loops */
    for (int d = 0; d < NELEMS(all); d++) {
        tfl_tensor *a = tfl_random_uniform(ctx, all[d], 2, TH_SHAPE(3100, 120), -1, 1, 15);
        tfl_tensor *b = tfl_random_uniform(ctx, all[d], 2, TH_SHAPE(3100, 100), -1, 1, 16);
        static double got[3][120 * 100];
        const size_t bytes = tfl_dtype_size(all[d]) * 120 * 100;
        for (int t = 0; t < 3; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            assert_int_equal(
                tfl_tensor_to_host(tfl_matmul(ctx, a, b, TFL_TRANSPOSE_A), got[t], bytes), TFL_OK);
        }
        assert_memory_equal(got[0], got[1], bytes);
        assert_memory_equal(got[0], got[2], bytes);
        check_matmul_(ctx, all[d], 2, TH_SHAPE(3100, 120), 2, TH_SHAPE(3100, 100),
                      TFL_TRANSPOSE_A, tol_for(all[d]) * 4, __LINE__);
    }
    assert_int_equal(tfl_ctx_set_num_threads(ctx, 2), TFL_OK);
    CHECK_MM(ctx, TH_F32, (3, 50, 70), (70, 100), 0, tol_for(TH_F32));
    CHECK_MM(ctx, TH_F64, (2, 70, 50), (2, 100, 70), TFL_TRANSPOSE_A | TFL_TRANSPOSE_B,
             tol_for(TH_F64));
    /* b as a transposed view (stored by columns) against the same product of a copy */
    tfl_tensor *a = tfl_random_uniform(ctx, TH_F32, 2, TH_SHAPE(100, 90), -1, 1, 3);
    tfl_tensor *b = tfl_random_uniform(ctx, TH_F32, 2, TH_SHAPE(120, 90), -1, 1, 4);
    tfl_tensor *got = tfl_matmul(ctx, a, tfl_transpose(ctx, b, NULL), 0);
    tfl_tensor *want = tfl_matmul(ctx, a, b, TFL_TRANSPOSE_B);
    float g[100 * 120], w[100 * 120];
    assert_int_equal(tfl_tensor_to_host(got, g, sizeof g), TFL_OK);
    assert_int_equal(tfl_tensor_to_host(want, w, sizeof w), TFL_OK);
    assert_memory_equal(g, w, sizeof g);
    th_end(ctx);
}

/* Batched views: a permuted rank-3 a, and a b that broadcasts over the batch. */
static void test_matmul_batched_views_vs_naive(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { BT = 5, M = 19, K = 23, N = 17 };
    /* a stored as (M, BT, K), viewed as (BT, M, K) with perm (1, 0, 2) */
    static double as[M * BT * K], av[BT * M * K], bs[K * N];
    for (int i = 0; i < M * BT * K; i++) as[i] = (double)((i * 13) % 17) - 8.0;
    for (int i = 0; i < K * N; i++) bs[i] = (double)((i * 5) % 9) - 4.0;
    for (int m = 0; m < M; m++)
        for (int b = 0; b < BT; b++)
            for (int k = 0; k < K; k++) av[(b * M + m) * K + k] = as[(m * BT + b) * K + k];
    static const tfl_dtype dts[] = {TH_F64, TH_F32, TH_I32, TH_I64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_dtype dt = dts[d];
        tfl_tensor *a = TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(M, BT, K), as, M * BT * K);
        tfl_tensor *aview = tfl_transpose(ctx, a, TH_AXES(1, 0, 2));
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(K, N), bs, K * N);
        ref_out r = ref_matmul(3, TH_SHAPE(BT, M, K), av, NULL, 2, TH_SHAPE(K, N), bs, NULL, 0);
        th_expect_(ctx, tfl_matmul(ctx, aview, b, 0), dt, r.rank, r.shape, r.re, (size_t)r.n, false,
                   tol_for(dt), __FILE__, __LINE__);
        /* the same with b given as a transposed view plus TRANSPOSE_B */
        tfl_tensor *bt = tfl_transpose(ctx, b, NULL); /* (N, K) view */
        th_expect_(ctx, tfl_matmul(ctx, aview, bt, TFL_TRANSPOSE_B), dt, r.rank, r.shape, r.re,
                   (size_t)r.n, false, tol_for(dt), __FILE__, __LINE__);
        ref_free(&r);
    }
    th_end(ctx);
}

/* A batch of products each too small for BLIS's threads (attention's heads: 16 of 40x24 by
 * 24x40) runs its products side by side on 2 threads: the same bits as on 1 thread, and the
 * naive result. */
static void test_matmul_batch_threads(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { BT = 16, M = 40, K = 24, N = 40 };
    static double av[BT * M * K], bv[BT * K * N];
    static float got[2][BT * M * N];
    for (int i = 0; i < BT * M * K; i++) av[i] = sin(0.37 * i);
    for (int i = 0; i < BT * K * N; i++) bv[i] = cos(0.11 * i);
    tfl_tensor *a = TH_TENSOR_N(ctx, TH_F32, 3, TH_SHAPE(BT, M, K), av, BT * M * K);
    tfl_tensor *b = TH_TENSOR_N(ctx, TH_F32, 3, TH_SHAPE(BT, K, N), bv, BT * K * N);
    for (int t = 0; t < 2; t++) {
        assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
        tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
        assert_non_null(c);
        assert_int_equal(tfl_tensor_to_host(c, got[t], sizeof got[t]), TFL_OK);
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]);
    ref_out r = ref_matmul(3, TH_SHAPE(BT, M, K), av, NULL, 3, TH_SHAPE(BT, K, N), bv, NULL, 0);
    for (size_t i = 0; i < (size_t)r.n; i++)
        if (fabs(got[1][i] - r.re[i]) > 1e-4 * fmax(1, fabs(r.re[i])))
            fail_msg("element %zu: %.9g, want %.9g", i, got[1][i], r.re[i]);
    ref_free(&r);
    th_end(ctx);
}

/* The same bits on 1 and 2 threads for every storage of the operands: transposed views and
 * transpose flags, on BLIS's small-matrix and packed paths (a b stored by columns once added
 * up differently on 2 threads there) */
static void test_matmul_threads_every_storage(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const int64_t shapes[][3] = {{216, 111, 185}, {298, 153, 277}, {300, 300, 280}};
    static const tfl_dtype dts[] = {TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++)
        for (int s = 0; s < NELEMS(shapes); s++)
            for (int mode = 0; mode < 5; mode++) { /* a view, b view, flags A, flags B, and
                                                      flags B on a column slice of b */
                const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                const bool ta = mode == 0 || mode == 2, tb = mode == 1 || mode == 3;
                tfl_tensor *a = tfl_random_uniform(ctx, dts[d], 2, ta ? TH_SHAPE(k, m) : TH_SHAPE(m, k),
                                                   -1, 1, 7);
                tfl_tensor *b = tfl_random_uniform(ctx, dts[d], 2, tb ? TH_SHAPE(n, k) : TH_SHAPE(k, n),
                                                   -1, 1, 8);
                if (mode == 4) /* (n, k) of a (n, 2 k) */
                    b = tfl_slice(ctx, tfl_random_uniform(ctx, dts[d], 2, TH_SHAPE(n, 2 * k), -1, 1, 9),
                                  TH_SHAPE(0, 0), TH_SHAPE(n, k));
                unsigned flags = mode == 2 ? TFL_TRANSPOSE_A : mode >= 3 ? TFL_TRANSPOSE_B : 0;
                if (mode == 0) a = tfl_transpose(ctx, a, NULL);
                if (mode == 1) b = tfl_transpose(ctx, b, NULL);
                const size_t bytes = tfl_dtype_size(dts[d]) * (size_t)(m * n);
                char *got[2];
                for (int t = 0; t < 2; t++) {
                    assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
                    got[t] = malloc(bytes);
                    assert_non_null(got[t]);
                    assert_int_equal(tfl_tensor_to_host(tfl_matmul(ctx, a, b, flags), got[t], bytes),
                                     TFL_OK);
                }
                if (memcmp(got[0], got[1], bytes))
                    fail_msg("%s %lld x %lld x %lld, mode %d: 1 and 2 threads differ",
                             tfl_dtype_name(dts[d]), (long long)m, (long long)n, (long long)k, mode);
                free(got[0]);
                free(got[1]);
            }
    th_end(ctx);
}

/* A refused scratch for the pieces of a deep k (where the AVX-512 kernel runs) fails the
 * MatMul with RESOURCE_EXHAUSTED and no output; elsewhere no scratch is taken and the product
 * is right. With the memory back the same call computes. A very deep k takes at most 8
 * pieces' scratch. */
static void test_matmul_refused_scratch(void **state)
{
    (void)state;
    tfl_status st;
    size_t refuse_from = SIZE_MAX;
    tfl_ctx_opts opts = th_refusing_opts(&refuse_from, 2);
    tfl_ctx *ctx = tfl_ctx_new(&opts, &st);
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(3100, 120));
    tfl_tensor *b = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(3100, 100));
    for (int pass = 0; pass < 2; pass++) {
        refuse_from = pass == 0 ? (size_t)80000 : SIZE_MAX; /* C: 48000 bytes, pieces: 96000 */
        tfl_tensor *c = tfl_matmul(ctx, a, b, TFL_TRANSPOSE_A);
        if (!c) {
            assert_int_equal(pass, 0);
            assert_int_equal(tfl_ctx_error(ctx).code, TFL_RESOURCE_EXHAUSTED);
            tfl_ctx_clear_error(ctx);
            continue;
        }
        float v[120 * 100];
        assert_int_equal(tfl_tensor_to_host(c, v, sizeof v), TFL_OK);
        for (int i = 0; i < 120 * 100; i++) assert_true(v[i] == 3100.0f);
    }
    /* at most 8 pieces: 64 x 64 over 20000 takes 7 C's of scratch (114688 bytes), not 18 */
    tfl_tensor *d = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(20000, 64));
    refuse_from = 120000;
    tfl_tensor *c = tfl_matmul(ctx, d, d, TFL_TRANSPOSE_A);
    assert_non_null(c);
    float v[64 * 64];
    assert_int_equal(tfl_tensor_to_host(c, v, sizeof v), TFL_OK);
    for (int i = 0; i < 64 * 64; i++) assert_true(v[i] == 20000.0f);
    refuse_from = SIZE_MAX;
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

/* int64 products accumulate exactly beyond 2^53. */
static void test_matmul_int64_exact(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t p53 = INT64_C(9007199254740992);
    tfl_tensor *a = TH_TI64(ctx, (2, 2), (p53 + 1, 1, 3, -1));
    tfl_tensor *b = TH_TI64(ctx, (2, 2), (1, 2, 1, p53));
    /* [[2^53+2, 2^54+2+2^53], [2, 6-2^53]] */
    TH_EXPECT_I64(ctx, tfl_matmul(ctx, a, b, 0), (2, 2),
                  (p53 + 2, 3 * p53 + 2, 2, 6 - p53));
    th_end(ctx);
}

/* ---- FusedMatMul ---------------------------------------------------------------------------- */

/*
 * tfl_matmul_bias gives the bits of tfl_matmul then tfl_add, on 1 and 2 threads, on each CPU
 * path: the AVX-512 narrow kernel (k past one block of 96, so the bias comes with the last
 * block; a masked last vector; several panels; the pieces of a deep k), BLIS (n 512), the
 * small per-head kernel and the plain loop, float64, transposes, broadcast batches, a bias
 * that is a strided view, k = 0 (the bias alone), and float16 and bfloat16 (rounded after the
 * product and again after the add, as MatMul then Add round them).
 */
static void test_matmul_bias_same_bits_as_matmul_add(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    typedef struct fcase {
        tfl_dtype dt;
        int ra, rb;
        int64_t sa[4], sb[4];
        unsigned flags;
        bool strided_bias;
    } fcase;
    static const fcase cases[] = {
        {TH_F32, 2, 2, {2048, 128}, {128, 128}, 0, false},            /* narrow, 2 blocks of k */
        {TH_F32, 2, 2, {300, 200}, {200, 100}, 0, true},              /* masked vector */
        {TH_F32, 2, 2, {500, 128}, {128, 256}, 0, false},             /* 4 panels */
        {TH_F32, 2, 2, {4096, 128}, {4096, 64}, TFL_TRANSPOSE_A, false}, /* pieces of k */
        {TH_F32, 2, 2, {700, 128}, {128, 512}, 0, false},             /* BLIS */
        {TH_F32, 2, 2, {600, 96}, {300, 96}, TFL_TRANSPOSE_B, false}, /* b^T copied */
        {TH_F32, 4, 4, {8, 4, 64, 32}, {8, 4, 32, 64}, 0, false},     /* small, side by side */
        {TH_F32, 2, 2, {3, 4}, {4, 5}, 0, true},                      /* plain loop */
        {TH_F32, 3, 2, {3, 200, 64}, {64, 48}, 0, false},             /* broadcast b */
        {TH_F64, 2, 2, {1000, 70}, {70, 130}, 0, true},
        {TH_F64, 3, 3, {2, 40, 50}, {2, 60, 40}, TFL_TRANSPOSE_A | TFL_TRANSPOSE_B, false},
        {TH_F32, 2, 2, {50, 0}, {0, 20}, 0, false}, /* k = 0 */
        {TH_F16, 2, 2, {300, 200}, {200, 100}, 0, false}, /* rounded after each, as the two */
        {TH_BF16, 3, 2, {2, 100, 64}, {64, 48}, 0, true},
    };
    for (int c = 0; c < NELEMS(cases); c++) {
        const fcase *f = &cases[c];
        tfl_tensor *a = tfl_random_uniform(ctx, f->dt, f->ra, f->sa, -1, 1, 11 + c);
        tfl_tensor *b = tfl_random_uniform(ctx, f->dt, f->rb, f->sb, -1, 1, 31 + c);
        const int64_t n = f->sb[f->rb - ((f->flags & TFL_TRANSPOSE_B) ? 2 : 1)];
        tfl_tensor *bias = tfl_random_uniform(ctx, f->dt, 1, TH_SHAPE(f->strided_bias ? 2 * n : n),
                                              -4, 4, 51 + c);
        if (f->strided_bias) /* every other element of 2 n: a view with stride 2 */
            bias = tfl_reshape(ctx, tfl_slice(ctx, tfl_reshape(ctx, bias, 2, TH_SHAPE(n, 2)),
                                              TH_SHAPE(0, 0), TH_SHAPE(n, 1)),
                               1, TH_SHAPE(n));
        assert_non_null(bias);
        tfl_tensor *want = tfl_add(ctx, tfl_matmul(ctx, a, b, f->flags), bias);
        assert_non_null(want);
        const size_t bytes = tfl_dtype_size(f->dt) * (size_t)tfl_tensor_numel(want);
        char *w = malloc(bytes + 1), *got = malloc(bytes + 1);
        assert_true(w && got);
        assert_int_equal(tfl_tensor_to_host(want, w, bytes), TFL_OK);
        for (int t = 1; t <= 2; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t), TFL_OK);
            tfl_tensor *y = tfl_matmul_bias(ctx, a, b, bias, f->flags);
            assert_non_null(y);
            assert_int_equal(tfl_tensor_rank(y), tfl_tensor_rank(want));
            assert_memory_equal(tfl_tensor_shape(y), tfl_tensor_shape(want),
                                sizeof(int64_t) * (size_t)tfl_tensor_rank(y));
            assert_int_equal(tfl_tensor_to_host(y, got, bytes), TFL_OK);
            if (memcmp(got, w, bytes))
                fail_msg("case %d on %d threads: FusedMatMul differs from MatMul then Add", c, t);
        }
        if (f->sa[f->ra - 1] == 0) /* k = 0: the bias in every row */
            for (int64_t i = 0; i < tfl_tensor_numel(want); i++) {
                double v, bv;
                assert_int_equal(tfl_tensor_get(want, i, &v), TFL_OK);
                assert_int_equal(tfl_tensor_get(bias, i % n, &bv), TFL_OK);
                assert_true(v == bv);
            }
        free(w);
        free(got);
    }
    th_end(ctx);
}

/* A small product by hand, the bias's gradient (dy summed over the rows) through a tape, and
 * the errors that name the bias */
static void test_matmul_bias_values_gradient_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a = TH_T(ctx, TH_F64, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *b = TH_T(ctx, TH_F64, (3, 2), (1, 2, 3, 4, 5, 6));
    tfl_tensor *bias = TH_T(ctx, TH_F64, (2), (0.5, -1));
    TH_EXPECT(ctx, tfl_matmul_bias(ctx, a, b, bias, 0), TH_F64, (2, 2), (22.5, 27, 49.5, 63), 0);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_non_null(tape);
    assert_int_equal(tfl_tape_watch(tape, bias), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, a), TFL_OK);
    tfl_tensor *y = tfl_matmul_bias(ctx, a, b, bias, 0);
    tfl_tensor *dy = TH_T(ctx, TH_F64, (2, 2), (1, 10, 100, 1000));
    tfl_tensor *grads[2] = {NULL, NULL};
    const tfl_tensor *sources[2] = {bias, a};
    assert_int_equal(tfl_tape_end(tape), TFL_OK);
    assert_int_equal(tfl_tape_vjp(tape, y, dy, 2, sources, grads, 0), TFL_OK);
    TH_EXPECT(ctx, grads[0], TH_F64, (2), (101, 1010), 0);
    /* da = dy b^T */
    TH_EXPECT(ctx, grads[1], TH_F64, (2, 3), (21, 43, 65, 2100, 4300, 6500), 0);
    tfl_tape_free(tape);

    tfl_tensor *f32 = tfl_ones(ctx, TH_F32, 1, TH_SHAPE(2));
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, a, b, f32, 0), "FusedMatMul",
                      "dtypes differ: a is float64, the bias float32");
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, a, b, TH_T(ctx, TH_F64, (3), (1, 2, 3)), 0),
                      "FusedMatMul",
                      "the bias must have shape (2,) (the product's last axis), got (3,)");
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, a, b, tfl_ones(ctx, TH_F64, 2, TH_SHAPE(1, 2)), 0),
                      "FusedMatMul",
                      "the bias must have shape (2,) (the product's last axis), got (1, 2)");
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, a, b, NULL, 0), "FusedMatMul", "input 2 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, a, a, bias, 0), "FusedMatMul",
                      "inner dimensions differ: a is (2, 3), b is (2, 3)");
    tfl_tensor *i32 = tfl_ones(ctx, TH_I32, 2, TH_SHAPE(2, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul_bias(ctx, i32, i32, tfl_ones(ctx, TH_I32, 1, TH_SHAPE(2)), 0),
                      "FusedMatMul", "dtype int32 is not supported");
    th_end(ctx);
}

/* ---- errors ------------------------------------------------------------------------------------ */

static void test_matmul_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a23 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(2, 3));
    tfl_tensor *b45 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(4, 5));
    tfl_tensor *b32 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(3, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, b45, 0), "MatMul",
                      "inner dimensions differ: a is (2, 3), b is (4, 5)");
    /* shapes as given, before the transposes */
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, b32, TFL_TRANSPOSE_A), "MatMul",
                      "inner dimensions differ: a is (2, 3), b is (3, 2)");
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, b32, TFL_TRANSPOSE_B), "MatMul",
                      "inner dimensions differ: a is (2, 3), b is (3, 2)");
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, a23, 0), "MatMul",
                      "inner dimensions differ: a is (2, 3), b is (2, 3)");
    tfl_tensor *a223 = tfl_ones(ctx, TH_F32, 3, TH_SHAPE(2, 2, 3));
    tfl_tensor *b245 = tfl_ones(ctx, TH_F32, 3, TH_SHAPE(2, 4, 5));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a223, b245, 0), "MatMul",
                      "inner dimensions differ: a is (2, 2, 3), b is (2, 4, 5)");
    /* rank < 2 */
    tfl_tensor *v3 = tfl_ones(ctx, TH_F32, 1, TH_SHAPE(3));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, v3, b32, 0), "MatMul", "expected rank >= 2");
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, v3, 0), "MatMul", "expected rank >= 2");
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, TH_T0(ctx, TH_F32, 2), TH_T0(ctx, TH_F32, 2), 0), "MatMul",
                      "expected rank >= 2");
    /* batch axes that do not broadcast */
    tfl_tensor *b332 = tfl_ones(ctx, TH_F32, 3, TH_SHAPE(3, 3, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a223, b332, 0), "MatMul", "incompatible shapes");
    /* dtypes */
    tfl_tensor *d32 = tfl_ones(ctx, TH_F64, 2, TH_SHAPE(3, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, d32, 0), "MatMul",
                      "dtypes differ: a is float32, b is float64");
    tfl_tensor *i32 = tfl_ones(ctx, TH_I32, 2, TH_SHAPE(3, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, i32, a23, 0), "MatMul",
                      "dtypes differ: a is int32, b is float32");
    tfl_tensor *bo = tfl_ones(ctx, TH_BOOL, 2, TH_SHAPE(2, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, bo, bo, 0), "MatMul",
                      "dtype bool is not supported; expected one of " MATMUL_DTYPES);
    tfl_tensor *h = tfl_ones(ctx, TH_F16, 2, TH_SHAPE(2, 2));
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, h, a23, 0), "MatMul",
                      "dtypes differ: a is float16, b is float32");
    /* NULL */
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, NULL, b32, 0), "MatMul", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_matmul(ctx, a23, NULL, 0), "MatMul", "input 1 is NULL");
    th_end(ctx);
}

/* Without a frame the caller releases the result. */
static void test_matmul_without_frame(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *a = TH_T(ctx, TH_F64, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *b = TH_T(ctx, TH_F64, (3, 2), (1, 2, 3, 4, 5, 6));
    tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
    TH_EXPECT(ctx, c, TH_F64, (2, 2), (22, 28, 49, 64), 0);
    tfl_tensor_release(c);
    tfl_tensor_release(b);
    tfl_tensor_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_matmul_2x3_3x2_all_dtypes),
        TH_TEST(test_matmul_half_via_float32),
        TH_TEST(test_matmul_transpose_flags),
        TH_TEST(test_matmul_shapes_edge),
        TH_TEST(test_matmul_batched_hand),
        TH_TEST(test_matmul_batched_broadcast),
        TH_TEST(test_matmul_of_views),
        TH_TEST(test_matmul_large_vs_naive),
        TH_TEST(test_matmul_packed_vs_naive),
        TH_TEST(test_matmul_small_tiles_vs_naive),
        TH_TEST(test_matmul_narrow_vs_naive),
        TH_TEST(test_matmul_batched_views_vs_naive),
        TH_TEST(test_matmul_batch_threads),
        TH_TEST(test_matmul_threads_every_storage),
        TH_TEST(test_matmul_int64_exact),
        TH_TEST(test_matmul_errors),
        TH_TEST(test_matmul_bias_same_bits_as_matmul_add),
        TH_TEST(test_matmul_bias_values_gradient_errors),
        cmocka_unit_test(test_matmul_refused_scratch),
        TH_TEST(test_matmul_without_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
