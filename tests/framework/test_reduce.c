/* test_reduce.c: cmocka tests of tapeflow's reductions (reduce_sum/mean/max/min, argmax,
 * argmin): axes sets, negative axes, keepdims, dtypes, integer mean truncation, errors. */
#include "test_ops_helpers.h"

typedef tfl_tensor *(*reduce_fn)(tfl_ctx *, const tfl_tensor *, int, const int *, bool);

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define ALL_BUT_BOOL "int32, int64, float16, bfloat16, float32, float64, complex64, complex128"
#define INTS_AND_FLOATS "int32, int64, float16, bfloat16, float32, float64"

enum { R_SUM, R_MEAN, R_MAX, R_MIN };

typedef struct red_case {
    const char *name;
    reduce_fn fn;
    int kind;
} red_case;

static const red_case k_reds[] = {
    {"Sum", tfl_reduce_sum, R_SUM},
    {"Mean", tfl_reduce_mean, R_MEAN},
    {"Max", tfl_reduce_max, R_MAX},
    {"Min", tfl_reduce_min, R_MIN},
};

static const tfl_dtype k_real[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};

/* 0..23 in a (2,3,4) tensor: v = 12 i + 4 j + k. */
static tfl_tensor *iota24(tfl_ctx *ctx, tfl_dtype dt)
{
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    return TH_TENSOR_N(ctx, dt, 3, TH_SHAPE(2, 3, 4), v, 24);
}

static void test_sum_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        tfl_tensor *x = iota24(ctx, dt);
        TH_EXPECT0(ctx, tfl_reduce_sum(ctx, x, 0, NULL, false), dt, 276, 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 0, NULL, true), dt, (1, 1, 1), (276), 0);
        TH_EXPECT0(ctx, tfl_reduce_sum(ctx, x, 3, TH_AXES(0, 1, 2), false), dt, 276, 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(0), false), dt, (3, 4),
                  (12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(1), false), dt, (2, 4),
                  (12, 15, 18, 21, 48, 51, 54, 57), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(2), false), dt, (2, 3),
                  (6, 22, 38, 54, 70, 86), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(-1), false), dt, (2, 3),
                  (6, 22, 38, 54, 70, 86), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(2), true), dt, (2, 3, 1),
                  (6, 22, 38, 54, 70, 86), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(0, 2), false), dt, (3), (60, 92, 124), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(2, 0), false), dt, (3), (60, 92, 124), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(-3, -1), false), dt, (3), (60, 92, 124), 0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(0, 2), true), dt, (1, 3, 1), (60, 92, 124),
                  0);
        TH_EXPECT(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(-2, 0), true), dt, (1, 1, 4),
                  (60, 66, 72, 78), 0);
    }
    th_end(ctx);
}

static void test_mean_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype fl[] = {TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(fl); d++) {
        tfl_tensor *x = iota24(ctx, fl[d]);
        TH_EXPECT0(ctx, tfl_reduce_mean(ctx, x, 0, NULL, false), fl[d], 11.5, 0);
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(2), false), fl[d], (2, 3),
                  (1.5, 5.5, 9.5, 13.5, 17.5, 21.5), 0);
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(0), true), fl[d], (1, 3, 4),
                  (6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17), 0);
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(-2), false), fl[d], (2, 4),
                  (4, 5, 6, 7, 16, 17, 18, 19), 0);
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, x, 2, TH_AXES(0, 1), false), fl[d], (4),
                  (10, 11, 12, 13), 0);
    }
    /* rounding mean: 1/3 */
    TH_EXPECT(ctx, tfl_reduce_mean(ctx, TH_T(ctx, TH_F64, (3), (0, 0, 1)), 0, NULL, true), TH_F64,
              (1), (1.0 / 3.0), 1e-15);
    th_end(ctx);
}

/* Integer mean truncates toward zero, as TensorFlow (sum / count in integer arithmetic). */
static void test_mean_int_truncation(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype ints[] = {TH_I32, TH_I64};
    for (int d = 0; d < 2; d++) {
        tfl_dtype dt = ints[d];
        tfl_tensor *x = iota24(ctx, dt);
        TH_EXPECT0(ctx, tfl_reduce_mean(ctx, x, 0, NULL, false), dt, 11, 0); /* 11.5 */
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(2), false), dt, (2, 3),
                  (1, 5, 9, 13, 17, 21), 0);
        tfl_tensor *n = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(4, 2), TH_VALS(-1, -2, -3, -4, 1, 2, -7, 0), 8);
        /* -1.5 -> -1, -3.5 -> -3, 1.5 -> 1, -3.5 -> -3 */
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, n, 1, TH_AXES(1), false), dt, (4), (-1, -3, 1, -3), 0);
        TH_EXPECT(ctx, tfl_reduce_mean(ctx, n, 1, TH_AXES(0), true), dt, (1, 2), (-2, -1), 0);
    }
    th_end(ctx);
}

static void test_max_min_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        tfl_tensor *x = iota24(ctx, dt);
        TH_EXPECT0(ctx, tfl_reduce_max(ctx, x, 0, NULL, false), dt, 23, 0);
        TH_EXPECT0(ctx, tfl_reduce_min(ctx, x, 0, NULL, false), dt, 0, 0);
        TH_EXPECT(ctx, tfl_reduce_max(ctx, x, 1, TH_AXES(2), false), dt, (2, 3),
                  (3, 7, 11, 15, 19, 23), 0);
        TH_EXPECT(ctx, tfl_reduce_min(ctx, x, 1, TH_AXES(-1), true), dt, (2, 3, 1),
                  (0, 4, 8, 12, 16, 20), 0);
        TH_EXPECT(ctx, tfl_reduce_max(ctx, x, 2, TH_AXES(0, 1), false), dt, (4), (20, 21, 22, 23), 0);
        TH_EXPECT(ctx, tfl_reduce_min(ctx, x, 2, TH_AXES(1, 0), true), dt, (1, 1, 4), (0, 1, 2, 3), 0);
        tfl_tensor *m = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(3, -1, 7, -5, 2, 0), 6);
        TH_EXPECT(ctx, tfl_reduce_max(ctx, m, 1, TH_AXES(0), false), dt, (3), (3, 2, 7), 0);
        TH_EXPECT(ctx, tfl_reduce_min(ctx, m, 1, TH_AXES(1), false), dt, (2), (-1, -5), 0);
        TH_EXPECT(ctx, tfl_reduce_max(ctx, m, 1, TH_AXES(-1), false), dt, (2), (7, 2), 0);
        TH_EXPECT(ctx, tfl_reduce_min(ctx, m, 1, TH_AXES(-2), false), dt, (3), (-5, -1, 0), 0);
    }
    /* infinities and extreme integers */
    TH_EXPECT(ctx, tfl_reduce_max(ctx, TH_T(ctx, TH_F32, (3), (-INFINITY, -INFINITY, -1e30)), 0, NULL, true),
              TH_F32, (1), (-1e30), 1e-7);
    TH_EXPECT0(ctx, tfl_reduce_min(ctx, TH_T(ctx, TH_F64, (2), (INFINITY, -INFINITY)), 0, NULL, false),
               TH_F64, -INFINITY, 0);
    TH_EXPECT0(ctx, tfl_reduce_max(ctx, TH_T(ctx, TH_I32, (2), (-2147483647.0 - 1, -2147483647.0)), 0,
                                   NULL, false),
               TH_I32, -2147483647.0, 0);
    th_end(ctx);
}

static void test_sum_mean_complex(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype cd[] = {TH_C64, TH_C128};
    for (int d = 0; d < 2; d++) {
        tfl_tensor *x = TH_TC(ctx, cd[d], (3), (1, 2, 3, -1, 0.5, 0.5));
        TH_EXPECTC0(ctx, tfl_reduce_sum(ctx, x, 0, NULL, false), cd[d], 4.5, 1.5, 0);
        TH_EXPECTC0(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(0), false), cd[d], 1.5, 0.5, 1e-7);
        tfl_tensor *m = TH_TC(ctx, cd[d], (2, 2), (1, 1, 2, 0, 0, -1, 3, 3));
        TH_EXPECTC(ctx, tfl_reduce_sum(ctx, m, 1, TH_AXES(0), false), cd[d], (2), (1, 0, 5, 3), 0);
        TH_EXPECTC(ctx, tfl_reduce_sum(ctx, m, 1, TH_AXES(1), true), cd[d], (2, 1), (3, 1, 3, 2), 0);
    }
    th_end(ctx);
}

/* ---- every subset of axes against a reference computed here -------------------------------- */

static void ref_reduce(int kind, bool is_int, int rank, const int64_t *shape, const double *x,
                       unsigned mask, double *out, int64_t *out_n)
{
    int64_t n = th_numel(rank, shape), count = 1, no = 1;
    for (int d = 0; d < rank; d++) {
        if (mask & (1u << d))
            count *= shape[d];
        else
            no *= shape[d];
    }
    for (int64_t o = 0; o < no; o++)
        out[o] = kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, o = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t idx = rem % shape[d];
            rem /= shape[d];
            if (!(mask & (1u << d))) {
                o += idx * stride;
                stride *= shape[d];
            }
        }
        if (kind == R_MAX)
            out[o] = fmax(out[o], x[i]);
        else if (kind == R_MIN)
            out[o] = fmin(out[o], x[i]);
        else
            out[o] += x[i];
    }
    if (kind == R_MEAN)
        for (int64_t o = 0; o < no; o++) out[o] = is_int ? trunc(out[o] / (double)count) : out[o] / (double)count;
    *out_n = no;
}

static void test_reduce_all_axis_subsets(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { R = 4 };
    const int64_t shape[R] = {2, 3, 1, 4};
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = (double)((i * 7) % 24) - 11.0; /* a permutation, signed */
    static const tfl_dtype dts[] = {TH_F64, TH_F32, TH_I32, TH_I64};
    double want[24];
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_dtype dt = dts[d];
        tfl_tensor *t = TH_TENSOR_N(ctx, dt, R, shape, x, 24);
        for (int c = 0; c < NELEMS(k_reds); c++) {
            for (unsigned mask = 0; mask < (1u << R); mask++) {
                int axes[R], n_axes = 0;
                for (int a = 0; a < R; a++)
                    if (mask & (1u << a)) axes[n_axes++] = (a % 2) ? a - R : a; /* mix signs */
                unsigned eff = mask == 0 ? (1u << R) - 1u : mask; /* n_axes 0: all */
                int64_t no = 0;
                ref_reduce(k_reds[c].kind, tfl_dtype_is_integer(dt), R, shape, x, eff, want, &no);
                for (int keep = 0; keep < 2; keep++) {
                    int64_t oshape[R];
                    int orank = 0;
                    for (int a = 0; a < R; a++) {
                        if (!(eff & (1u << a)))
                            oshape[orank++] = shape[a];
                        else if (keep)
                            oshape[orank++] = 1;
                    }
                    tfl_tensor *r = k_reds[c].fn(ctx, t, n_axes, n_axes ? axes : NULL, keep != 0);
                    if (!r || tfl_tensor_rank(r) != orank)
                        print_error("%s %s mask 0x%x keepdims %d\n", k_reds[c].name,
                                    tfl_dtype_name(dt), mask, keep);
                    th_expect_(ctx, r, dt, orank, oshape, want, (size_t)no, false,
                               dt == TH_F32 ? 1e-6 : 1e-12, __FILE__, __LINE__);
                }
            }
        }
    }
    th_end(ctx);
}

/* Sums accumulate in float32 for half dtypes and stay exact for integers. */
static void test_reduce_large(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *o = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(1000, 1000));
    TH_EXPECT0(ctx, tfl_reduce_sum(ctx, o, 0, NULL, false), TH_F32, 1e6, 0);
    TH_EXPECT0(ctx, tfl_reduce_mean(ctx, o, 0, NULL, false), TH_F32, 1, 0);
    tfl_tensor *s0 = tfl_reduce_sum(ctx, o, 1, TH_AXES(0), false);
    tfl_tensor *s0max = tfl_reduce_max(ctx, s0, 0, NULL, false);
    tfl_tensor *s0min = tfl_reduce_min(ctx, s0, 0, NULL, false);
    TH_EXPECT0(ctx, s0max, TH_F32, 1000, 0);
    TH_EXPECT0(ctx, s0min, TH_F32, 1000, 0);
    /* 4096 ones in float16: a float16 accumulator would stop at 2048 */
    tfl_tensor *h = tfl_ones(ctx, TH_F16, 1, TH_SHAPE(4096));
    TH_EXPECT0(ctx, tfl_reduce_sum(ctx, h, 0, NULL, false), TH_F16, 4096, 0);
    tfl_tensor *bh = tfl_ones(ctx, TH_BF16, 1, TH_SHAPE(1024));
    TH_EXPECT0(ctx, tfl_reduce_sum(ctx, bh, 0, NULL, false), TH_BF16, 1024, 0);
    TH_EXPECT0(ctx, tfl_reduce_mean(ctx, bh, 0, NULL, false), TH_BF16, 1, 0);
    /* int64 beyond 2^53 stays exact */
    const int64_t big[2] = {INT64_C(9007199254740993), 2};
    tfl_tensor *b = tfl_tensor_new(ctx, TH_I64, 1, TH_SHAPE(2), big);
    tfl_tensor *sb = tfl_reduce_sum(ctx, b, 0, NULL, false);
    assert_non_null(sb);
    int64_t got = 0;
    assert_int_equal(tfl_tensor_to_host(sb, &got, sizeof got), TFL_OK);
    assert_true(got == INT64_C(9007199254740995));
    th_end(ctx);
}

/* Sum and Mean over leading axes of a contiguous float tensor (a bias's gradient): blocks of 64
 * rows summed in double on the context's threads. Values against a double loop, rows that are
 * not a multiple of 64, a column whose small terms a float32 running sum would lose, the same
 * bits on 1 and 2 threads, and a transposed view (the iterator's way) giving the same values. */
static void test_reduce_leading_axes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { A = 301, B = 7, C = 5 };
    static double xv[A * B * C], want[B * C], want01[C];
    for (int i = 0; i < A * B * C; i++) xv[i] = sin(0.37 * i) + 0.25 * (double)(i % 7);
    static const tfl_dtype dts[] = {TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        const double tol = dts[d] == TH_F32 ? 2e-6 : 1e-12;
        tfl_tensor *x = TH_TENSOR_N(ctx, dts[d], 3, TH_SHAPE(A, B, C), xv, A * B * C);
        double xr[A * B * C]; /* the values as the dtype holds them */
        assert_int_equal(tfl_tensor_to_host(tfl_cast(ctx, x, TH_F64), xr, sizeof xr), TFL_OK);
        for (int j = 0; j < B * C; j++) {
            want[j] = 0;
            for (int a = 0; a < A; a++) want[j] += xr[a * B * C + j];
        }
        for (int c = 0; c < C; c++) {
            want01[c] = 0;
            for (int j = c; j < B * C; j += C) want01[c] += want[j];
        }
        TH_EXPECT_N(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(0), false), dts[d], 2, TH_SHAPE(B, C),
                    want, B * C, tol);
        TH_EXPECT_N(ctx, tfl_reduce_sum(ctx, x, 2, TH_AXES(0, 1), true), dts[d], 3,
                    TH_SHAPE(1, 1, C), want01, C, tol);
        double mean01[C];
        for (int c = 0; c < C; c++) mean01[c] = want01[c] / (A * B);
        TH_EXPECT_N(ctx, tfl_reduce_mean(ctx, x, 2, TH_AXES(1, 0), false), dts[d], 1, TH_SHAPE(C),
                    mean01, C, tol);
        /* (C, B, A) stored, viewed as (A, B, C): not contiguous, summed by the iterator */
        tfl_tensor *xt = tfl_transpose(ctx, tfl_identity(ctx, tfl_transpose(ctx, x, NULL)), NULL);
        assert_non_null(xt);
        TH_EXPECT_N(ctx, tfl_reduce_sum(ctx, xt, 1, TH_AXES(0), false), dts[d], 2, TH_SHAPE(B, C),
                    want, B * C, tol);
        /* the same bits on 1 and 2 threads */
        tfl_tensor *big = tfl_random_uniform(ctx, dts[d], 2, TH_SHAPE(5000, 64), -1, 1, 5);
        char got[2][64 * 8];
        for (int t = 0; t < 2; t++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, t + 1), TFL_OK);
            assert_int_equal(tfl_tensor_to_host(tfl_reduce_sum(ctx, big, 1, TH_AXES(0), false),
                                                got[t], 64 * tfl_dtype_size(dts[d])),
                             TFL_OK);
        }
        assert_memory_equal(got[0], got[1], 64 * tfl_dtype_size(dts[d]));
    }
    /* 16 columns of 1 and then 4095 times 1e-8: a float32 running sum stays at 1 */
    static float col[4096 * 16];
    for (int i = 0; i < 4096 * 16; i++) col[i] = i < 16 ? 1.0f : 1e-8f;
    tfl_tensor *small = tfl_tensor_new(ctx, TH_F32, 2, TH_SHAPE(4096, 16), col);
    double sums[16];
    for (int j = 0; j < 16; j++) {
        sums[j] = 1.0;
        for (int i = 1; i < 4096; i++) sums[j] += (double)1e-8f;
    }
    TH_EXPECT_N(ctx, tfl_reduce_sum(ctx, small, 1, TH_AXES(0), false), TH_F32, 1, TH_SHAPE(16),
                sums, 16, 1e-7);
    th_end(ctx);
}

static void test_reduce_views_and_scalars(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* a transposed view: x^T of [[1,2,3],[4,5,6]] is [[1,4],[2,5],[3,6]] */
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL);
    TH_EXPECT(ctx, tfl_reduce_sum(ctx, xt, 1, TH_AXES(0), false), TH_F32, (2), (6, 15), 0);
    TH_EXPECT(ctx, tfl_reduce_max(ctx, xt, 1, TH_AXES(1), false), TH_F32, (3), (4, 5, 6), 0);
    /* a scalar reduces to itself */
    TH_EXPECT0(ctx, tfl_reduce_sum(ctx, TH_T0(ctx, TH_F64, 2.5), 0, NULL, false), TH_F64, 2.5, 0);
    TH_EXPECT0(ctx, tfl_reduce_max(ctx, TH_T0(ctx, TH_I32, -4), 0, NULL, true), TH_I32, -4, 0);
    /* empty: sums are 0, mean of floats is NaN */
    tfl_tensor *e = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 3));
    TH_EXPECT(ctx, tfl_reduce_sum(ctx, e, 1, TH_AXES(0), false), TH_F32, (3), (0, 0, 0), 0);
    TH_EXPECT0(ctx, tfl_reduce_sum(ctx, e, 0, NULL, false), TH_F32, 0, 0);
    TH_EXPECT(ctx, tfl_reduce_mean(ctx, e, 1, TH_AXES(0), false), TH_F32, (3), (NAN, NAN, NAN), 0);
    TH_EXPECT_SHAPE(ctx, tfl_reduce_sum(ctx, e, 1, TH_AXES(1), false), TH_F32, (0));
    TH_EXPECT_SHAPE(ctx, tfl_reduce_max(ctx, e, 1, TH_AXES(1), true), TH_F32, (0, 1));
    th_end(ctx);
}

static void test_reduce_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = iota24(ctx, TH_F32);
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (2), (1, 0));
    tfl_tensor *c = TH_TC(ctx, TH_C64, (2), (1, 0, 0, 1));
    for (int k = 0; k < NELEMS(k_reds); k++) {
        const red_case *rc = &k_reds[k];
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, x, 1, TH_AXES(3), false), rc->name,
                          "axis 3 is out of range for rank 3");
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, x, 1, TH_AXES(-4), false), rc->name,
                          "axis -4 is out of range for rank 3");
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, x, 2, TH_AXES(0, 7), true), rc->name,
                          "axis 7 is out of range for rank 3");
        /* repeats, also through a negative alias */
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, x, 2, TH_AXES(1, 1), false), rc->name, NULL);
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, x, 2, TH_AXES(1, -2), false), rc->name, NULL);
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, NULL, 0, NULL, false), rc->name, "input 0 is NULL");
        TH_EXPECT_INVALID(ctx, rc->fn(ctx, TH_T0(ctx, TH_F32, 1), 1, TH_AXES(0), false), rc->name,
                          "axis 0 is out of range for rank 0");
    }
    TH_EXPECT_INVALID(ctx, tfl_reduce_sum(ctx, b, 0, NULL, false), "Sum",
                      "dtype bool is not supported; expected one of " ALL_BUT_BOOL);
    TH_EXPECT_INVALID(ctx, tfl_reduce_mean(ctx, b, 0, NULL, false), "Mean",
                      "dtype bool is not supported; expected one of " ALL_BUT_BOOL);
    TH_EXPECT_INVALID(ctx, tfl_reduce_max(ctx, b, 0, NULL, false), "Max",
                      "dtype bool is not supported; expected one of " INTS_AND_FLOATS);
    TH_EXPECT_INVALID(ctx, tfl_reduce_min(ctx, c, 0, NULL, false), "Min",
                      "dtype complex64 is not supported; expected one of " INTS_AND_FLOATS);
    TH_EXPECT_INVALID(ctx, tfl_reduce_max(ctx, c, 0, NULL, false), "Max",
                      "dtype complex64 is not supported; expected one of " INTS_AND_FLOATS);
    /* max / min of an empty reduction */
    tfl_tensor *e = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(2, 0));
    TH_EXPECT_INVALID(ctx, tfl_reduce_max(ctx, e, 1, TH_AXES(1), false), "Max", "empty");
    TH_EXPECT_INVALID(ctx, tfl_reduce_min(ctx, e, 0, NULL, false), "Min", "empty");
    TH_EXPECT_INVALID(ctx, tfl_reduce_max(ctx, tfl_zeros(ctx, TH_I32, 1, TH_SHAPE(0)), 0, NULL, false),
                      "Max", "empty");
    th_end(ctx);
}

/* ---- argmax / argmin ------------------------------------------------------------------------- */

static void test_argmax_argmin_hand_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 0; d < NELEMS(k_real); d++) {
        tfl_dtype dt = k_real[d];
        tfl_tensor *a = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 3, 3, 5, 2, 5), 6);
        TH_EXPECT(ctx, tfl_argmax(ctx, a, 1), TH_I64, (2), (1, 0), 0); /* ties: first */
        TH_EXPECT(ctx, tfl_argmax(ctx, a, -1), TH_I64, (2), (1, 0), 0);
        TH_EXPECT(ctx, tfl_argmax(ctx, a, 0), TH_I64, (3), (1, 0, 1), 0);
        TH_EXPECT(ctx, tfl_argmax(ctx, a, -2), TH_I64, (3), (1, 0, 1), 0);
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), TH_VALS(1, 3, 1, 5, 2, 2), 6);
        TH_EXPECT(ctx, tfl_argmin(ctx, b, 1), TH_I64, (2), (0, 1), 0);
        TH_EXPECT(ctx, tfl_argmin(ctx, b, 0), TH_I64, (3), (0, 1, 0), 0);
        tfl_tensor *flat = TH_TENSOR_N(ctx, dt, 1, TH_SHAPE(5), TH_VALS(2, 2, 2, 2, 2), 5);
        TH_EXPECT0(ctx, tfl_argmax(ctx, flat, 0), TH_I64, 0, 0);
        TH_EXPECT0(ctx, tfl_argmin(ctx, flat, -1), TH_I64, 0, 0);
        tfl_tensor *neg = TH_TENSOR_N(ctx, dt, 1, TH_SHAPE(4), TH_VALS(-3, -1, -7, -1), 4);
        TH_EXPECT0(ctx, tfl_argmax(ctx, neg, 0), TH_I64, 1, 0);
        TH_EXPECT0(ctx, tfl_argmin(ctx, neg, 0), TH_I64, 2, 0);
    }
    tfl_tensor *inf = TH_T(ctx, TH_F32, (3), (-INFINITY, -INFINITY, -INFINITY));
    TH_EXPECT0(ctx, tfl_argmax(ctx, inf, 0), TH_I64, 0, 0);
    TH_EXPECT0(ctx, tfl_argmin(ctx, TH_T(ctx, TH_F64, (3), (INFINITY, -INFINITY, -INFINITY)), 0),
               TH_I64, 1, 0);
    /* int64 values that differ beyond double precision */
    const int64_t big[3] = {INT64_C(9007199254740992), INT64_C(9007199254740993),
                            INT64_C(9007199254740992)};
    tfl_tensor *bt = tfl_tensor_new(ctx, TH_I64, 1, TH_SHAPE(3), big);
    TH_EXPECT0(ctx, tfl_argmax(ctx, bt, 0), TH_I64, 1, 0);
    TH_EXPECT0(ctx, tfl_argmin(ctx, bt, 0), TH_I64, 0, 0);
    th_end(ctx);
}

/* Reference argmax / argmin over axis of a (2,3,4) tensor with repeated values. */
static void test_argmax_argmin_rank3(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t shape[3] = {2, 3, 4};
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = (double)((i * 7) % 10); /* values repeat: ties */
    static const tfl_dtype dts[] = {TH_F32, TH_I32, TH_F64, TH_I64, TH_F16};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_tensor *t = TH_TENSOR_N(ctx, dts[d], 3, shape, x, 24);
        for (int axis = -3; axis < 3; axis++) {
            int ax = axis < 0 ? axis + 3 : axis;
            int64_t oshape[2];
            int orank = 0;
            for (int a = 0; a < 3; a++)
                if (a != ax) oshape[orank++] = shape[a];
            double wmax[12], wmin[12];
            int64_t strides[3] = {12, 4, 1};
            int64_t o = 0;
            for (int64_t p = 0; p < shape[0]; p++)
                for (int64_t q = 0; q < shape[1]; q++)
                    for (int64_t r = 0; r < shape[2]; r++) {
                        int64_t idx[3] = {p, q, r};
                        if (idx[ax] != 0) continue;
                        int64_t base = p * 12 + q * 4 + r, bi_max = 0, bi_min = 0;
                        for (int64_t k = 1; k < shape[ax]; k++) {
                            double v = x[base + k * strides[ax]];
                            if (v > x[base + bi_max * strides[ax]]) bi_max = k;
                            if (v < x[base + bi_min * strides[ax]]) bi_min = k;
                        }
                        wmax[o] = (double)bi_max;
                        wmin[o] = (double)bi_min;
                        o++;
                    }
            th_expect_(ctx, tfl_argmax(ctx, t, axis), TH_I64, orank, oshape, wmax, (size_t)o, false,
                       0, __FILE__, __LINE__);
            th_expect_(ctx, tfl_argmin(ctx, t, axis), TH_I64, orank, oshape, wmin, (size_t)o, false,
                       0, __FILE__, __LINE__);
        }
    }
    th_end(ctx);
}

static void test_argmax_argmin_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_argmax(ctx, x, 2), "ArgMax", "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_argmax(ctx, x, -3), "ArgMax", "axis -3 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_argmin(ctx, x, 2), "ArgMin", "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_argmin(ctx, x, -3), "ArgMin", "axis -3 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_argmax(ctx, TH_T0(ctx, TH_F32, 1), 0), "ArgMax",
                      "axis 0 is out of range for rank 0");
    TH_EXPECT_INVALID(ctx, tfl_argmax(ctx, NULL, 0), "ArgMax", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_argmin(ctx, NULL, 0), "ArgMin", "input 0 is NULL");
    /* complex numbers have no order */
    tfl_tensor *c = TH_TC(ctx, TH_C64, (2), (1, 0, 0, 1));
    TH_EXPECT_INVALID(ctx, tfl_argmax(ctx, c, 0), "ArgMax", "dtype complex64 is not supported");
    TH_EXPECT_INVALID(ctx, tfl_argmin(ctx, c, 0), "ArgMin", "dtype complex64 is not supported");
    th_end(ctx);
}

/* Big and strided inputs (the parallel paths) against the reference. */
static void test_reduce_large_strided(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { A = 30, B = 41, C = 53, N = A * B * C };
    const int64_t shape[3] = {A, B, C};
    double *x = malloc(sizeof(double) * N), *xt = malloc(sizeof(double) * N);
    double *want = malloc(sizeof(double) * N);
    assert_true(x && xt && want);
    for (int i = 0; i < N; i++) x[i] = (double)((i * 131) % 1009) - 504.0;
    tfl_tensor *t = TH_TENSOR_N(ctx, TH_F64, 3, shape, x, N);
    tfl_tensor *ti = TH_TENSOR_N(ctx, TH_I64, 3, shape, x, N);
    /* the permuted view (C, A, B) and its values laid out row-major */
    static const int perm[3] = {2, 0, 1};
    const int64_t pshape[3] = {C, A, B};
    for (int c = 0; c < C; c++)
        for (int a = 0; a < A; a++)
            for (int b = 0; b < B; b++) xt[(c * A + a) * B + b] = x[(a * B + b) * C + c];
    tfl_tensor *tv = tfl_transpose(ctx, t, perm);
    tfl_tensor *tiv = tfl_transpose(ctx, ti, perm);
    for (int k = 0; k < NELEMS(k_reds); k++) {
        for (unsigned mask = 1; mask < 8; mask++) {
            int axes[3], n = 0;
            for (int a = 0; a < 3; a++)
                if (mask & (1u << a)) axes[n++] = a;
            int64_t oshape[3], no = 0;
            int orank = 0;
            for (int a = 0; a < 3; a++)
                if (!(mask & (1u << a))) oshape[orank++] = shape[a];
            ref_reduce(k_reds[k].kind, false, 3, shape, x, mask, want, &no);
            th_expect_(ctx, k_reds[k].fn(ctx, t, n, axes, false), TH_F64, orank, oshape, want,
                       (size_t)no, false, 1e-12, __FILE__, __LINE__);
            ref_reduce(k_reds[k].kind, true, 3, shape, x, mask, want, &no);
            th_expect_(ctx, k_reds[k].fn(ctx, ti, n, axes, false), TH_I64, orank, oshape, want,
                       (size_t)no, false, 0, __FILE__, __LINE__);
            orank = 0;
            for (int a = 0; a < 3; a++)
                if (!(mask & (1u << a))) oshape[orank++] = pshape[a];
            ref_reduce(k_reds[k].kind, false, 3, pshape, xt, mask, want, &no);
            th_expect_(ctx, k_reds[k].fn(ctx, tv, n, axes, false), TH_F64, orank, oshape, want,
                       (size_t)no, false, 1e-12, __FILE__, __LINE__);
            ref_reduce(k_reds[k].kind, true, 3, pshape, xt, mask, want, &no);
            th_expect_(ctx, k_reds[k].fn(ctx, tiv, n, axes, false), TH_I64, orank, oshape, want,
                       (size_t)no, false, 0, __FILE__, __LINE__);
        }
    }
    /* argmax / argmin of the view along its middle axis */
    int64_t o = 0;
    for (int c = 0; c < C; c++)
        for (int b = 0; b < B; b++) {
            int best = 0, worst = 0;
            for (int a = 1; a < A; a++) {
                if (xt[(c * A + a) * B + b] > xt[(c * A + best) * B + b]) best = a;
                if (xt[(c * A + a) * B + b] < xt[(c * A + worst) * B + b]) worst = a;
            }
            want[o] = best;
            xt[o] = worst; /* reuse as the argmin answer; xt is not read afterwards */
            o++;
        }
    TH_EXPECT_N(ctx, tfl_argmax(ctx, tv, 1), TH_I64, 2, TH_SHAPE(C, B), want, (size_t)o, 0);
    TH_EXPECT_N(ctx, tfl_argmin(ctx, tiv, -2), TH_I64, 2, TH_SHAPE(C, B), xt, (size_t)o, 0);
    free(x);
    free(xt);
    free(want);
    th_end(ctx);
}

/* int64 reductions are exact beyond 2^53. */
static void test_reduce_int64_exact(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t p60 = INT64_C(1152921504606846976); /* 2^60 */
    tfl_tensor *x = TH_TI64(ctx, (2, 2), (p60 + 1, p60 + 3, -p60 - 7, p60 + 2));
    TH_EXPECT_I64(ctx, tfl_reduce_sum(ctx, x, 1, TH_AXES(1), false), (2), (2 * p60 + 4, -5));
    TH_EXPECT_I64(ctx, tfl_reduce_mean(ctx, x, 1, TH_AXES(1), false), (2), (p60 + 2, -2));
    th_expect_i64_(ctx, tfl_reduce_max(ctx, x, 0, NULL, false), 0, NULL, TH_I64S(p60 + 3), 1, __FILE__,
                   __LINE__);
    TH_EXPECT_I64(ctx, tfl_reduce_min(ctx, x, 1, TH_AXES(0), true), (1, 2), (-p60 - 7, p60 + 2));
    TH_EXPECT_I64(ctx, tfl_reduce_max(ctx, x, 1, TH_AXES(-1), false), (2), (p60 + 3, p60 + 2));
    TH_EXPECT_I64(ctx, tfl_argmax(ctx, x, 1), (2), (1, 1));
    TH_EXPECT_I64(ctx, tfl_argmin(ctx, x, 0), (2), (1, 1));
    th_end(ctx);
}

/* Rank 8 (TFL_MAX_RANK): a few axis sets against the reference. */
static void test_reduce_rank8(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t shape[8] = {2, 1, 3, 2, 1, 2, 3, 2};
    double x[144], want[144];
    for (int i = 0; i < 144; i++) x[i] = (double)((i * 17) % 29) - 14.0;
    tfl_tensor *t = TH_TENSOR_N(ctx, TH_F64, 8, shape, x, 144);
    static const unsigned masks[] = {0x01u, 0x80u, 0xA5u, 0x5Au, 0xFFu, 0x7Eu};
    for (int m = 0; m < NELEMS(masks); m++) {
        int axes[8], n = 0;
        int64_t oshape[8], no = 0;
        int orank = 0;
        for (int a = 0; a < 8; a++) {
            if (masks[m] & (1u << a))
                axes[n++] = a - 8 * (a & 1); /* odd axes negative */
            else
                oshape[orank++] = shape[a];
        }
        for (int k = 0; k < NELEMS(k_reds); k++) {
            ref_reduce(k_reds[k].kind, false, 8, shape, x, masks[m], want, &no);
            th_expect_(ctx, k_reds[k].fn(ctx, t, n, axes, false), TH_F64, orank, oshape, want,
                       (size_t)no, false, 1e-12, __FILE__, __LINE__);
        }
    }
    th_end(ctx);
}

/* Without a frame: the caller releases what it gets. */
static void test_reduce_without_frame(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *x = TH_T(ctx, TH_I32, (2, 2), (1, 2, 3, 4));
    tfl_tensor *s = tfl_reduce_sum(ctx, x, 1, TH_AXES(1), false);
    tfl_tensor *m = tfl_argmax(ctx, x, 0);
    TH_EXPECT(ctx, s, TH_I32, (2), (3, 7), 0);
    TH_EXPECT(ctx, m, TH_I64, (2), (1, 1), 0);
    tfl_tensor_release(m);
    tfl_tensor_release(s);
    tfl_tensor_release(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_sum_hand_values),
        TH_TEST(test_mean_hand_values),
        TH_TEST(test_mean_int_truncation),
        TH_TEST(test_max_min_hand_values),
        TH_TEST(test_sum_mean_complex),
        TH_TEST(test_reduce_all_axis_subsets),
        TH_TEST(test_reduce_large),
        TH_TEST(test_reduce_leading_axes),
        TH_TEST(test_reduce_views_and_scalars),
        TH_TEST(test_reduce_errors),
        TH_TEST(test_argmax_argmin_hand_values),
        TH_TEST(test_argmax_argmin_rank3),
        TH_TEST(test_argmax_argmin_errors),
        TH_TEST(test_reduce_large_strided),
        TH_TEST(test_reduce_int64_exact),
        TH_TEST(test_reduce_rank8),
        TH_TEST(test_reduce_without_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
