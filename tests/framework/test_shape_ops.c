/* test_shape_ops.c: cmocka tests of tapeflow's shape and indexing ops (reshape transpose
 * concat slice gather one_hot cast where): values, views, dtypes, broadcasting, errors. */
#include "test_ops_helpers.h"

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tfl_dtype k_all_real[] = {TH_BOOL, TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};

/* ---- reshape --------------------------------------------------------------------------------- */

static void test_reshape_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double v6[] = {1, 2, 3, 4, 5, 6};
    static const double b6[] = {1, 0, 0, 1, 1, 0};
    for (int d = 0; d < NELEMS(k_all_real); d++) {
        tfl_dtype dt = k_all_real[d];
        const double *v = dt == TH_BOOL ? b6 : v6;
        tfl_tensor *x = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), v, 6);
        TH_EXPECT_N(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(3, 2)), dt, 2, TH_SHAPE(3, 2), v, 6, 0);
        TH_EXPECT_N(ctx, tfl_reshape(ctx, x, 1, TH_SHAPE(-1)), dt, 1, TH_SHAPE(6), v, 6, 0);
        TH_EXPECT_N(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(3, -1)), dt, 2, TH_SHAPE(3, 2), v, 6, 0);
        TH_EXPECT_N(ctx, tfl_reshape(ctx, x, 3, TH_SHAPE(-1, 1, 2)), dt, 3, TH_SHAPE(3, 1, 2), v, 6, 0);
        TH_EXPECT_N(ctx, tfl_reshape(ctx, x, 4, TH_SHAPE(1, 2, 3, 1)), dt, 4, TH_SHAPE(1, 2, 3, 1), v,
                    6, 0);
    }
    tfl_tensor *c = TH_TC(ctx, TH_C128, (2, 2), (1, 2, 3, 4, 5, 6, 7, 8));
    TH_EXPECTC(ctx, tfl_reshape(ctx, c, 1, TH_SHAPE(-1)), TH_C128, (4), (1, 2, 3, 4, 5, 6, 7, 8), 0);
    /* to and from rank 0 */
    tfl_tensor *one = TH_T(ctx, TH_F32, (1, 1), (7));
    TH_EXPECT0(ctx, tfl_reshape(ctx, one, 0, NULL), TH_F32, 7, 0);
    TH_EXPECT(ctx, tfl_reshape(ctx, TH_T0(ctx, TH_I32, 3), 2, TH_SHAPE(1, -1)), TH_I32, (1, 1), (3), 0);
    /* empty */
    TH_EXPECT_SHAPE(ctx, tfl_reshape(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 3)), 3, TH_SHAPE(3, 0, 2)),
                    TH_F32, (3, 0, 2));
    th_end(ctx);
}

static void test_reshape_view_and_copy(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *r = tfl_reshape(ctx, x, 1, TH_SHAPE(6));
    assert_non_null(r);
    assert_ptr_equal(tfl_tensor_data_ptr(r), tfl_tensor_data_ptr(x)); /* a view */
    /* a non-contiguous input is copied in logical order */
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL); /* [[1,4],[2,5],[3,6]] */
    TH_EXPECT(ctx, tfl_reshape(ctx, xt, 1, TH_SHAPE(-1)), TH_F32, (6), (1, 4, 2, 5, 3, 6), 0);
    TH_EXPECT(ctx, tfl_reshape(ctx, xt, 2, TH_SHAPE(2, 3)), TH_F32, (2, 3), (1, 4, 2, 5, 3, 6), 0);
    /* a slice with a gap */
    tfl_tensor *big = TH_T(ctx, TH_I64, (3, 4), (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    tfl_tensor *s = tfl_slice(ctx, big, TH_SHAPE(1, 1), TH_SHAPE(2, 2)); /* [[5,6],[9,10]] */
    TH_EXPECT(ctx, tfl_reshape(ctx, s, 1, TH_SHAPE(4)), TH_I64, (4), (5, 6, 9, 10), 0);
    th_end(ctx);
}

static void test_reshape_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(4, 2)), "Reshape",
                      "cannot reshape a tensor of 6 elements to shape (4, 2)");
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 1, TH_SHAPE(7)), "Reshape",
                      "cannot reshape a tensor of 6 elements to shape (7,)");
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 0, NULL), "Reshape",
                      "cannot reshape a tensor of 6 elements to shape ()");
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(4, -1)), "Reshape",
                      "cannot reshape a tensor of 6 elements");
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(-1, -1)), "Reshape", NULL);
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 2, TH_SHAPE(-2, -3)), "Reshape", NULL);
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, x, 9, TH_SHAPE(1, 1, 1, 1, 1, 2, 3, 1, 1)), "Reshape", NULL);
    TH_EXPECT_INVALID(ctx, tfl_reshape(ctx, NULL, 1, TH_SHAPE(6)), "Reshape", "input 0 is NULL");
    th_end(ctx);
}

/* ---- transpose ------------------------------------------------------------------------------ */

static void test_transpose_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const double v6[] = {1, 2, 3, 4, 5, 6};
    static const double w6[] = {1, 4, 2, 5, 3, 6};
    static const double b6[] = {1, 1, 0, 0, 0, 1};
    static const double bw[] = {1, 0, 1, 0, 0, 1};
    for (int d = 0; d < NELEMS(k_all_real); d++) {
        tfl_dtype dt = k_all_real[d];
        tfl_tensor *x = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 3), dt == TH_BOOL ? b6 : v6, 6);
        tfl_tensor *t = tfl_transpose(ctx, x, TH_AXES(1, 0));
        TH_EXPECT_N(ctx, t, dt, 2, TH_SHAPE(3, 2), dt == TH_BOOL ? bw : w6, 6, 0);
        TH_EXPECT_N(ctx, tfl_transpose(ctx, x, NULL), dt, 2, TH_SHAPE(3, 2), dt == TH_BOOL ? bw : w6, 6,
                    0);
        /* twice is the original */
        TH_EXPECT_N(ctx, tfl_transpose(ctx, t, NULL), dt, 2, TH_SHAPE(2, 3), dt == TH_BOOL ? b6 : v6, 6,
                    0);
    }
    tfl_tensor *c = TH_TC(ctx, TH_C64, (1, 2), (1, 2, 3, 4));
    TH_EXPECTC(ctx, tfl_transpose(ctx, c, NULL), TH_C64, (2, 1), (1, 2, 3, 4), 0);
    /* rank 3: NULL reverses, out[k][j][i] = in[i][j][k]; and other permutations */
    double v24[24];
    for (int i = 0; i < 24; i++) v24[i] = i;
    tfl_tensor *x3 = TH_TENSOR_N(ctx, TH_F64, 3, TH_SHAPE(2, 3, 4), v24, 24);
    static const int perms[][3] = {{2, 1, 0}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}, {1, 0, 2}, {0, 1, 2}};
    const int64_t in_shape[3] = {2, 3, 4};
    for (int p = 0; p < NELEMS(perms); p++) {
        int64_t oshape[3];
        for (int a = 0; a < 3; a++) oshape[a] = in_shape[perms[p][a]];
        double want[24];
        int64_t o = 0, idx[3];
        for (idx[0] = 0; idx[0] < oshape[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < oshape[1]; idx[1]++)
                for (idx[2] = 0; idx[2] < oshape[2]; idx[2]++) {
                    int64_t src[3];
                    for (int a = 0; a < 3; a++) src[perms[p][a]] = idx[a];
                    want[o++] = (double)(src[0] * 12 + src[1] * 4 + src[2]);
                }
        TH_EXPECT_N(ctx, tfl_transpose(ctx, x3, perms[p]), TH_F64, 3, oshape, want, 24, 0);
        if (p == 0) TH_EXPECT_N(ctx, tfl_transpose(ctx, x3, NULL), TH_F64, 3, oshape, want, 24, 0);
    }
    /* rank 8 reversed: out index (i7..i0) reads in index (i0..i7) */
    double v256[256], w256[256];
    for (int i = 0; i < 256; i++) v256[i] = i;
    for (int i = 0; i < 256; i++) { /* every dim is 2: reversing the axes reverses the bits */
        int r = 0;
        for (int bit = 0; bit < 8; bit++)
            if (i & (1 << bit)) r |= 1 << (7 - bit);
        w256[i] = r;
    }
    tfl_tensor *x8 = TH_TENSOR_N(ctx, TH_F32, 8, TH_SHAPE(2, 2, 2, 2, 2, 2, 2, 2), v256, 256);
    TH_EXPECT_N(ctx, tfl_transpose(ctx, x8, NULL), TH_F32, 8, TH_SHAPE(2, 2, 2, 2, 2, 2, 2, 2), w256,
                256, 0);
    TH_EXPECT_N(ctx, tfl_identity(ctx, tfl_transpose(ctx, x8, TH_AXES(7, 6, 5, 4, 3, 2, 1, 0))), TH_F32,
                8, TH_SHAPE(2, 2, 2, 2, 2, 2, 2, 2), w256, 256, 0);
    /* rank 1 and rank 0 are unchanged */
    TH_EXPECT(ctx, tfl_transpose(ctx, TH_T(ctx, TH_I32, (3), (1, 2, 3)), NULL), TH_I32, (3), (1, 2, 3), 0);
    TH_EXPECT0(ctx, tfl_transpose(ctx, TH_T0(ctx, TH_I32, 5), NULL), TH_I32, 5, 0);
    th_end(ctx);
}

static void test_transpose_is_view(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *t = tfl_transpose(ctx, x, NULL);
    assert_non_null(t);
    assert_ptr_equal(tfl_tensor_data_ptr(t), tfl_tensor_data_ptr(x));
    assert_false(tfl_tensor_is_contiguous(t));
    assert_true(tfl_tensor_is_contiguous(x));
    /* the view outlives the frame that made its base */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *base = TH_T(ctx, TH_I32, (2, 2), (1, 2, 3, 4));
    tfl_tensor *kept = tfl_keep(tfl_transpose(ctx, base, NULL));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    TH_EXPECT(ctx, kept, TH_I32, (2, 2), (1, 3, 2, 4), 0);
    tfl_tensor_release(kept);
    th_end(ctx);
}

static void test_transpose_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, x, TH_AXES(0, 0)), "Transpose", "not a permutation");
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, x, TH_AXES(1, 1)), "Transpose", "not a permutation");
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, x, TH_AXES(0, 2)), "Transpose", NULL);
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, x, TH_AXES(-1, 0)), "Transpose", NULL);
    tfl_tensor *x3 = tfl_zeros(ctx, TH_F32, 3, TH_SHAPE(1, 2, 3));
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, x3, TH_AXES(2, 0, 2)), "Transpose", "not a permutation");
    TH_EXPECT_INVALID(ctx, tfl_transpose(ctx, NULL, NULL), "Transpose", "input 0 is NULL");
    th_end(ctx);
}

/* ---- concat ------------------------------------------------------------------------------------ */

static void test_concat_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    for (int d = 1; d < NELEMS(k_all_real); d++) {
        tfl_dtype dt = k_all_real[d];
        tfl_tensor *a = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 2), TH_VALS(1, 2, 3, 4), 4);
        tfl_tensor *b = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(1, 2), TH_VALS(5, 6), 2);
        tfl_tensor *c = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 1), TH_VALS(7, 8), 2);
        const tfl_tensor *ab[2] = {a, b};
        TH_EXPECT(ctx, tfl_concat(ctx, 2, ab, 0), dt, (3, 2), (1, 2, 3, 4, 5, 6), 0);
        TH_EXPECT(ctx, tfl_concat(ctx, 2, ab, -2), dt, (3, 2), (1, 2, 3, 4, 5, 6), 0);
        const tfl_tensor *ca[2] = {c, a};
        TH_EXPECT(ctx, tfl_concat(ctx, 2, ca, 1), dt, (2, 3), (7, 1, 2, 8, 3, 4), 0);
        TH_EXPECT(ctx, tfl_concat(ctx, 2, ca, -1), dt, (2, 3), (7, 1, 2, 8, 3, 4), 0);
        const tfl_tensor *aba[3] = {a, b, a};
        TH_EXPECT(ctx, tfl_concat(ctx, 3, aba, 0), dt, (5, 2), (1, 2, 3, 4, 5, 6, 1, 2, 3, 4), 0);
        const tfl_tensor *one[1] = {a};
        tfl_tensor *copy = tfl_concat(ctx, 1, one, 0);
        TH_EXPECT(ctx, copy, dt, (2, 2), (1, 2, 3, 4), 0);
    }
    /* bool and complex */
    tfl_tensor *p = TH_T(ctx, TH_BOOL, (2), (1, 0));
    tfl_tensor *q = TH_T(ctx, TH_BOOL, (1), (1));
    const tfl_tensor *pq[2] = {p, q};
    TH_EXPECT(ctx, tfl_concat(ctx, 2, pq, 0), TH_BOOL, (3), (1, 0, 1), 0);
    tfl_tensor *c1 = TH_TC(ctx, TH_C128, (1, 1), (1, 2));
    tfl_tensor *c2 = TH_TC(ctx, TH_C128, (1, 2), (3, 4, 5, 6));
    const tfl_tensor *cc[2] = {c1, c2};
    TH_EXPECTC(ctx, tfl_concat(ctx, 2, cc, 1), TH_C128, (1, 3), (1, 2, 3, 4, 5, 6), 0);
    /* rank 3 along the middle axis, and an empty piece */
    tfl_tensor *r1 = TH_T(ctx, TH_F32, (2, 1, 2), (1, 2, 3, 4));
    tfl_tensor *r2 = TH_T(ctx, TH_F32, (2, 2, 2), (5, 6, 7, 8, 9, 10, 11, 12));
    tfl_tensor *r0 = tfl_zeros(ctx, TH_F32, 3, TH_SHAPE(2, 0, 2));
    const tfl_tensor *rr[3] = {r1, r0, r2};
    TH_EXPECT(ctx, tfl_concat(ctx, 3, rr, 1), TH_F32, (2, 3, 2), (1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12),
              0);
    /* non-contiguous inputs */
    tfl_tensor *m = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *mt = tfl_transpose(ctx, m, NULL); /* [[1,4],[2,5],[3,6]] */
    tfl_tensor *sl = tfl_slice(ctx, m, TH_SHAPE(0, 1), TH_SHAPE(2, 2)); /* [[2,3],[5,6]] */
    const tfl_tensor *vs[2] = {mt, sl};
    TH_EXPECT(ctx, tfl_concat(ctx, 2, vs, 0), TH_I32, (5, 2), (1, 4, 2, 5, 3, 6, 2, 3, 5, 6), 0);
    th_end(ctx);
}

static void test_concat_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *a22 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(2, 2));
    tfl_tensor *a33 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(3, 3));
    tfl_tensor *a23 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(2, 3));
    tfl_tensor *a32 = tfl_ones(ctx, TH_F32, 2, TH_SHAPE(3, 2));
    tfl_tensor *i22 = tfl_ones(ctx, TH_I32, 2, TH_SHAPE(2, 2));
    tfl_tensor *v2 = tfl_ones(ctx, TH_F32, 1, TH_SHAPE(2));
    const tfl_tensor *m1[2] = {a22, a33};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, m1, 0), "ConcatV2", "dimension 1 differs");
    const tfl_tensor *m2[2] = {a23, a32};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, m2, 1), "ConcatV2", "dimension 0 differs");
    const tfl_tensor *m3[3] = {a22, a22, a23};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 3, m3, 0), "ConcatV2", "dimension 1 differs");
    const tfl_tensor *ok[2] = {a22, a22};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, ok, 2), "ConcatV2", "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, ok, -3), "ConcatV2", "axis -3 is out of range for rank 2");
    const tfl_tensor *dt[2] = {a22, i22};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, dt, 0), "ConcatV2", "dtypes differ");
    const tfl_tensor *rk[2] = {a22, v2};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, rk, 0), "ConcatV2", NULL);
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 0, ok, 0), "ConcatV2", NULL);
    const tfl_tensor *nl[2] = {a22, NULL};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, nl, 0), "ConcatV2", "input 1 is NULL");
    const tfl_tensor *nl0[2] = {NULL, a22};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, nl0, 0), "ConcatV2", "input 0 is NULL");
    /* scalars cannot be concatenated (no axis) */
    tfl_tensor *s = TH_T0(ctx, TH_F32, 1);
    const tfl_tensor *ss[2] = {s, s};
    TH_EXPECT_INVALID(ctx, tfl_concat(ctx, 2, ss, 0), "ConcatV2", "axis 0 is out of range for rank 0");
    th_end(ctx);
}

/* ---- slice --------------------------------------------------------------------------------------- */

static void test_slice_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    double v12[12];
    for (int i = 0; i < 12; i++) v12[i] = i;
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_dtype dt = dts[d];
        tfl_tensor *x = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 4), v12, 12);
        TH_EXPECT(ctx, tfl_slice(ctx, x, TH_SHAPE(1, 1), TH_SHAPE(2, -1)), dt, (2, 3),
                  (5, 6, 7, 9, 10, 11), 0);
        TH_EXPECT(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 0), TH_SHAPE(-1, -1)), dt, (3, 4),
                  (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0);
        TH_EXPECT(ctx, tfl_slice(ctx, x, TH_SHAPE(2, 3), TH_SHAPE(1, 1)), dt, (1, 1), (11), 0);
        TH_EXPECT(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 2), TH_SHAPE(-1, 1)), dt, (3, 1), (2, 6, 10), 0);
        TH_EXPECT_SHAPE(ctx, tfl_slice(ctx, x, TH_SHAPE(1, 0), TH_SHAPE(0, 4)), dt, (0, 4));
        TH_EXPECT_SHAPE(ctx, tfl_slice(ctx, x, TH_SHAPE(3, 4), TH_SHAPE(0, 0)), dt, (0, 0));
        TH_EXPECT_SHAPE(ctx, tfl_slice(ctx, x, TH_SHAPE(3, 0), TH_SHAPE(-1, -1)), dt, (0, 4));
    }
    tfl_tensor *b = TH_T(ctx, TH_BOOL, (4), (1, 0, 0, 1));
    TH_EXPECT(ctx, tfl_slice(ctx, b, TH_SHAPE(1), TH_SHAPE(-1)), TH_BOOL, (3), (0, 0, 1), 0);
    tfl_tensor *c = TH_TC(ctx, TH_C64, (3), (1, 2, 3, 4, 5, 6));
    TH_EXPECTC(ctx, tfl_slice(ctx, c, TH_SHAPE(1), TH_SHAPE(2)), TH_C64, (2), (3, 4, 5, 6), 0);
    /* rank 3, slice of a slice, slice of a transposed view */
    double v24[24];
    for (int i = 0; i < 24; i++) v24[i] = i;
    tfl_tensor *x3 = TH_TENSOR_N(ctx, TH_F32, 3, TH_SHAPE(2, 3, 4), v24, 24);
    tfl_tensor *s1 = tfl_slice(ctx, x3, TH_SHAPE(1, 1, 1), TH_SHAPE(1, 2, 3));
    TH_EXPECT(ctx, s1, TH_F32, (1, 2, 3), (17, 18, 19, 21, 22, 23), 0);
    TH_EXPECT(ctx, tfl_slice(ctx, s1, TH_SHAPE(0, 1, 1), TH_SHAPE(-1, -1, 1)), TH_F32, (1, 1, 1), (22), 0);
    tfl_tensor *m = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *mt = tfl_transpose(ctx, m, NULL); /* [[1,4],[2,5],[3,6]] */
    TH_EXPECT(ctx, tfl_slice(ctx, mt, TH_SHAPE(1, 0), TH_SHAPE(2, 2)), TH_F32, (2, 2), (2, 5, 3, 6), 0);
    /* rank 0: empty begin / size */
    TH_EXPECT0(ctx, tfl_slice(ctx, TH_T0(ctx, TH_F64, 4.5), TH_SHAPE(0), TH_SHAPE(0)), TH_F64, 4.5, 0);
    th_end(ctx);
}

static void test_slice_is_view(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const float v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    tfl_tensor *x = tfl_tensor_new(ctx, TH_F32, 2, TH_SHAPE(3, 4), v);
    assert_non_null(x);
    tfl_tensor *s = tfl_slice(ctx, x, TH_SHAPE(1, 1), TH_SHAPE(2, -1));
    assert_non_null(s);
    const char *base = tfl_tensor_data_ptr(x);
    const char *view = tfl_tensor_data_ptr(s);
    assert_true(view == base + 5 * sizeof(float));
    assert_false(tfl_tensor_is_contiguous(s));
    /* a run of whole rows stays contiguous */
    tfl_tensor *rows = tfl_slice(ctx, x, TH_SHAPE(1, 0), TH_SHAPE(2, 4));
    assert_true((const char *)tfl_tensor_data_ptr(rows) == base + 4 * sizeof(float));
    assert_true(tfl_tensor_is_contiguous(rows));
    th_end(ctx);
}

static void test_slice_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(3, 4));
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(2, 0), TH_SHAPE(2, 1)), "Slice", "out of bounds");
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 0), TH_SHAPE(1, 5)), "Slice", "out of bounds");
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(-1, 0), TH_SHAPE(1, 1)), "Slice", "out of bounds");
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(4, 0), TH_SHAPE(-1, -1)), "Slice", "out of bounds");
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 5), TH_SHAPE(1, 0)), "Slice", "out of bounds");
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 0), TH_SHAPE(1, -2)), "Slice", NULL);
    TH_EXPECT_INVALID(ctx, tfl_slice(ctx, NULL, TH_SHAPE(0, 0), TH_SHAPE(1, 1)), "Slice",
                      "input 0 is NULL");
    th_end(ctx);
}

/* ---- gather ------------------------------------------------------------------------------------- */

static void test_gather_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype idx_dts[] = {TH_I32, TH_I64};
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        for (int k = 0; k < 2; k++) {
            tfl_dtype dt = dts[d], it = idx_dts[k];
            tfl_tensor *p = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(3, 2), TH_VALS(1, 2, 3, 4, 5, 6), 6);
            /* axis 0 */
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T(ctx, it, (3), (2, 0, 2)), 0), dt, (3, 2),
                      (5, 6, 1, 2, 5, 6), 0);
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T(ctx, it, (2, 2), (0, 1, 2, 0)), 0), dt, (2, 2, 2),
                      (1, 2, 3, 4, 5, 6, 1, 2), 0);
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T0(ctx, it, 1), 0), dt, (2), (3, 4), 0);
            /* axis 1: params.shape[:1] + indices.shape + params.shape[2:] */
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T(ctx, it, (2, 1), (1, 0)), 1), dt, (3, 2, 1),
                      (2, 1, 4, 3, 6, 5), 0);
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T(ctx, it, (3), (1, 1, 0)), -1), dt, (3, 3),
                      (2, 2, 1, 4, 4, 3, 6, 6, 5), 0);
            TH_EXPECT(ctx, tfl_gather(ctx, p, TH_T0(ctx, it, 0), 1), dt, (3), (1, 3, 5), 0);
            /* no indices */
            TH_EXPECT_SHAPE(ctx, tfl_gather(ctx, p, tfl_zeros(ctx, it, 1, TH_SHAPE(0)), 0), dt, (0, 2));
        }
    }
    /* rank 3 params along the middle axis */
    double v12[12];
    for (int i = 0; i < 12; i++) v12[i] = i;
    tfl_tensor *p3 = TH_TENSOR_N(ctx, TH_F32, 3, TH_SHAPE(2, 3, 2), v12, 12);
    TH_EXPECT(ctx, tfl_gather(ctx, p3, TH_T(ctx, TH_I64, (2), (2, 0)), 1), TH_F32, (2, 2, 2),
              (4, 5, 0, 1, 10, 11, 6, 7), 0);
    /* bool and complex params */
    TH_EXPECT(ctx, tfl_gather(ctx, TH_T(ctx, TH_BOOL, (3), (1, 0, 1)), TH_T(ctx, TH_I32, (2), (1, 2)), 0),
              TH_BOOL, (2), (0, 1), 0);
    TH_EXPECTC(ctx,
               tfl_gather(ctx, TH_TC(ctx, TH_C128, (2), (1, 2, 3, 4)), TH_T(ctx, TH_I32, (3), (1, 1, 0)), 0),
               TH_C128, (3), (3, 4, 3, 4, 1, 2), 0);
    /* a transposed params view */
    tfl_tensor *m = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT(ctx, tfl_gather(ctx, tfl_transpose(ctx, m, NULL), TH_T(ctx, TH_I32, (1), (2)), 0), TH_I32,
              (1, 2), (3, 6), 0);
    th_end(ctx);
}

static void test_gather_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *p = TH_T(ctx, TH_F32, (3, 2), (1, 2, 3, 4, 5, 6));
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I32, (3), (0, 5, 1)), 0), "GatherV2",
                      "indices[1] = 5 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I64, (3), (0, 5, 1)), 0), "GatherV2",
                      "indices[1] = 5 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I32, (2), (-1, 0)), 0), "GatherV2",
                      "indices[0] = -1 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I64, (3), (0, 1, 3)), 0), "GatherV2",
                      "indices[2] = 3 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I32, (2, 2), (0, 1, 7, 0)), 0), "GatherV2",
                      "indices[2] = 7 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_I32, (3), (1, 0, 2)), 1), "GatherV2",
                      "indices[2] = 2 is not in [0, 2)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T0(ctx, TH_I64, 3), 0), "GatherV2",
                      "indices[0] = 3 is not in [0, 3)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_F32, (1), (0)), 0), "GatherV2",
                      "dtype float32 is not supported; expected one of int32, int64");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, TH_T(ctx, TH_BOOL, (1), (0)), 0), "GatherV2",
                      "dtype bool is not supported; expected one of int32, int64");
    tfl_tensor *i = TH_T(ctx, TH_I32, (1), (0));
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, i, 2), "GatherV2", "axis 2 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, i, -3), "GatherV2", "axis -3 is out of range for rank 2");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, NULL, i, 0), "GatherV2", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, p, NULL, 0), "GatherV2", "input 1 is NULL");
    th_end(ctx);
}

/* ---- one_hot --------------------------------------------------------------------------------- */

static void test_one_hot(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* out-of-range indices (-1, 3) give rows of off_value */
    static const tfl_dtype its[] = {TH_I32, TH_I64};
    for (int k = 0; k < 2; k++) {
        tfl_tensor *idx = TH_T(ctx, its[k], (5), (0, 2, -1, 3, 1));
        TH_EXPECT(ctx, tfl_one_hot(ctx, idx, 3, 1, 0, TH_F32), TH_F32, (5, 3),
                  (1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0), 0);
        TH_EXPECT(ctx, tfl_one_hot(ctx, idx, 3, 5, -1, TH_I64), TH_I64, (5, 3),
                  (5, -1, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1, -1, 5, -1), 0);
    }
    /* more dtypes of the output */
    tfl_tensor *i2 = TH_T(ctx, TH_I64, (2, 1), (1, 0));
    TH_EXPECT(ctx, tfl_one_hot(ctx, i2, 2, 1.5, -0.5, TH_F16), TH_F16, (2, 1, 2), (-0.5, 1.5, 1.5, -0.5), 0);
    TH_EXPECT(ctx, tfl_one_hot(ctx, i2, 2, 1.5, -0.5, TH_BF16), TH_BF16, (2, 1, 2), (-0.5, 1.5, 1.5, -0.5),
              0);
    TH_EXPECT(ctx, tfl_one_hot(ctx, i2, 2, 1, 0, TH_BOOL), TH_BOOL, (2, 1, 2), (0, 1, 1, 0), 0);
    TH_EXPECT(ctx, tfl_one_hot(ctx, i2, 2, 7, 0, TH_I32), TH_I32, (2, 1, 2), (0, 7, 7, 0), 0);
    TH_EXPECTC(ctx, tfl_one_hot(ctx, i2, 2, 2, 0, TH_C64), TH_C64, (2, 1, 2), (0, 0, 2, 0, 2, 0, 0, 0), 0);
    /* a scalar index gives a vector; depth 0 gives an empty last axis */
    TH_EXPECT(ctx, tfl_one_hot(ctx, TH_T0(ctx, TH_I32, 2), 4, 1, 0, TH_F64), TH_F64, (4), (0, 0, 1, 0), 0);
    TH_EXPECT_SHAPE(ctx, tfl_one_hot(ctx, TH_T(ctx, TH_I32, (2), (0, 1)), 0, 1, 0, TH_F32), TH_F32, (2, 0));
    /* errors */
    TH_EXPECT_INVALID(ctx, tfl_one_hot(ctx, TH_T(ctx, TH_F32, (1), (0)), 3, 1, 0, TH_F32), "OneHot",
                      "dtype float32 is not supported; expected one of int32, int64");
    TH_EXPECT_INVALID(ctx, tfl_one_hot(ctx, NULL, 3, 1, 0, TH_F32), "OneHot", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_one_hot(ctx, TH_T(ctx, TH_I32, (1), (0)), -1, 1, 0, TH_F32), "OneHot", NULL);
    th_end(ctx);
}

/* ---- cast -------------------------------------------------------------------------------------- */

static void test_cast_float_to_int(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype fl[] = {TH_F32, TH_F64};
    for (int d = 0; d < 2; d++) {
        tfl_tensor *x = TH_TENSOR_N(ctx, fl[d], 1, TH_SHAPE(7), TH_VALS(1.9, -1.9, 2.5, -0.5, 0, 7, -7.99), 7);
        TH_EXPECT(ctx, tfl_cast(ctx, x, TH_I32), TH_I32, (7), (1, -1, 2, 0, 0, 7, -7), 0);
        TH_EXPECT(ctx, tfl_cast(ctx, x, TH_I64), TH_I64, (7), (1, -1, 2, 0, 0, 7, -7), 0);
        /* saturation, NaN -> 0 */
        tfl_tensor *s = TH_TENSOR_N(ctx, fl[d], 1, TH_SHAPE(5), TH_VALS(1e10, -1e10, INFINITY, -INFINITY, NAN), 5);
        TH_EXPECT(ctx, tfl_cast(ctx, s, TH_I32), TH_I32, (5), (2147483647, -2147483648.0, 2147483647, -2147483648.0, 0),
                  0);
        tfl_tensor *s64 = tfl_cast(ctx, TH_TENSOR_N(ctx, fl[d], 1, TH_SHAPE(6),
                                                    TH_VALS(1e19, -1e19, INFINITY, -INFINITY, NAN, 4611686018427387904.0), 6),
                                   TH_I64);
        assert_non_null(s64);
        int64_t got[6];
        assert_int_equal(tfl_tensor_to_host(s64, got, sizeof got), TFL_OK);
        assert_true(got[0] == INT64_MAX);
        assert_true(got[1] == INT64_MIN);
        assert_true(got[2] == INT64_MAX);
        assert_true(got[3] == INT64_MIN);
        assert_true(got[4] == 0);
        assert_true(got[5] == INT64_C(4611686018427387904));
    }
    /* the edges of int32 */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F32, (2), (2147483520.0, 2147483648.0)), TH_I32), TH_I32, (2),
              (2147483520.0, 2147483647), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F64, (3), (2147483647.9, -2147483648.9, 2147483648.0)), TH_I32),
              TH_I32, (3), (2147483647, -2147483648.0, 2147483647), 0);
    /* half dtypes */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F16, (5), (1.5, -2.5, 65504, INFINITY, NAN)), TH_I32), TH_I32,
              (5), (1, -2, 65504, 2147483647, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_BF16, (3), (1.5, -2.5, -INFINITY)), TH_I64), TH_I64, (3),
              (1, -2, -9223372036854775807.0 - 1), 0);
    th_end(ctx);
}

static void test_cast_int_and_bool(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* int -> float, rounding to nearest */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (3), (1, -2, 16777217)), TH_F32), TH_F32, (3),
              (1, -2, 16777216), 0);
    const int64_t big[2] = {INT64_C(9007199254740993), -5};
    tfl_tensor *b64 = tfl_tensor_new(ctx, TH_I64, 1, TH_SHAPE(2), big);
    TH_EXPECT(ctx, tfl_cast(ctx, b64, TH_F64), TH_F64, (2), (9007199254740992.0, -5), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (3), (-5, 0, 7)), TH_I64), TH_I64, (3), (-5, 0, 7), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I64, (3), (-5, 0, 7)), TH_I32), TH_I32, (3), (-5, 0, 7), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (2), (3, -2048)), TH_F16), TH_F16, (2), (3, -2048), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I64, (2), (3, -256)), TH_BF16), TH_BF16, (2), (3, -256), 0);
    /* anything -> bool is x != 0 */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F32, (5), (0, 0.5, -1, NAN, -0.0)), TH_BOOL), TH_BOOL, (5),
              (0, 1, 1, 1, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F64, (3), (0, 1e-300, INFINITY)), TH_BOOL), TH_BOOL, (3),
              (0, 1, 1), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (3), (0, 3, -1)), TH_BOOL), TH_BOOL, (3), (0, 1, 1), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_I64, (2), (0, 4294967296.0)), TH_BOOL), TH_BOOL, (2), (0, 1), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F16, (2), (0, 1.5)), TH_BOOL), TH_BOOL, (2), (0, 1), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_BF16, (2), (-0.0, 0.25)), TH_BOOL), TH_BOOL, (2), (0, 1), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_TC(ctx, TH_C64, (3), (0, 0, 0, 1, 2, 0)), TH_BOOL), TH_BOOL, (3), (0, 1, 1),
              0);
    TH_EXPECT(ctx, tfl_cast(ctx, TH_TC(ctx, TH_C128, (2), (0, 0, 0, -1)), TH_BOOL), TH_BOOL, (2), (0, 1), 0);
    /* bool -> numbers */
    tfl_tensor *bo = TH_T(ctx, TH_BOOL, (2), (1, 0));
    TH_EXPECT(ctx, tfl_cast(ctx, bo, TH_F32), TH_F32, (2), (1, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, bo, TH_I32), TH_I32, (2), (1, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, bo, TH_I64), TH_I64, (2), (1, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, bo, TH_F16), TH_F16, (2), (1, 0), 0);
    TH_EXPECTC(ctx, tfl_cast(ctx, bo, TH_C64), TH_C64, (2), (1, 0, 0, 0), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, bo, TH_BOOL), TH_BOOL, (2), (1, 0), 0);
    th_end(ctx);
}

static void test_cast_complex(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *c = TH_TC(ctx, TH_C64, (3), (3, 4, -1.5, 2, 3.75, -1));
    TH_EXPECT(ctx, tfl_cast(ctx, c, TH_F32), TH_F32, (3), (3, -1.5, 3.75), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, c, TH_F64), TH_F64, (3), (3, -1.5, 3.75), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, c, TH_I32), TH_I32, (3), (3, -1, 3), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, c, TH_F16), TH_F16, (3), (3, -1.5, 3.75), 0);
    TH_EXPECTC(ctx, tfl_cast(ctx, c, TH_C128), TH_C128, (3), (3, 4, -1.5, 2, 3.75, -1), 0);
    tfl_tensor *c2 = TH_TC(ctx, TH_C128, (2), (0.1, 0.2, -2, 8));
    TH_EXPECT(ctx, tfl_cast(ctx, c2, TH_F64), TH_F64, (2), (0.1, -2), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, c2, TH_I64), TH_I64, (2), (0, -2), 0);
    TH_EXPECTC(ctx, tfl_cast(ctx, c2, TH_C64), TH_C64, (2), (0.1, 0.2, -2, 8), 1e-7);
    /* real -> complex: imaginary part 0 */
    TH_EXPECTC(ctx, tfl_cast(ctx, TH_T(ctx, TH_F32, (2), (1.5, -2)), TH_C64), TH_C64, (2), (1.5, 0, -2, 0), 0);
    TH_EXPECTC(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (2), (7, -3)), TH_C128), TH_C128, (2), (7, 0, -3, 0), 0);
    TH_EXPECTC(ctx, tfl_cast(ctx, TH_T(ctx, TH_F16, (1), (0.5)), TH_C128), TH_C128, (1), (0.5, 0), 0);
    th_end(ctx);
}

/* The first n elements of a float16 / bfloat16 tensor have these bit patterns. */
static void expect_bits_(tfl_tensor *t, const uint16_t *bits, int n, int line)
{
    _assert_true(cast_ptr_to_largest_integral_type(t), "tensor", __FILE__, line);
    uint16_t got[16];
    int64_t numel = tfl_tensor_numel(t);
    _assert_true(numel <= 16 && numel >= n, "numel", __FILE__, line);
    _assert_int_equal(tfl_tensor_to_host(t, got, (size_t)numel * 2), TFL_OK, __FILE__, line);
    for (int i = 0; i < n; i++) {
        if (got[i] != bits[i]) {
            print_error("element %d: expected bits 0x%04x, got 0x%04x\n", i, bits[i], got[i]);
            _fail(__FILE__, line);
        }
    }
}
#define EXPECT_BITS(t, ...) \
    expect_bits_((t), (const uint16_t[]){__VA_ARGS__}, (int)(sizeof((const uint16_t[]){__VA_ARGS__}) / 2), __LINE__)

static void test_cast_half_round_trips(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* float16: exact values survive f64 -> f16 -> f64 and f32 -> f16 -> f32 */
    tfl_tensor *x = TH_T(ctx, TH_F64, (6), (1.5, -2.25, 0.15625, 65504, 0.00006103515625, 5.9604644775390625e-8));
    tfl_tensor *h = tfl_cast(ctx, x, TH_F16);
    EXPECT_BITS(h, 0x3E00, 0xC080, 0x3100, 0x7BFF, 0x0400, 0x0001);
    TH_EXPECT(ctx, tfl_cast(ctx, h, TH_F64), TH_F64, (6),
              (1.5, -2.25, 0.15625, 65504, 0.00006103515625, 5.9604644775390625e-8), 0);
    tfl_tensor *xf = TH_T(ctx, TH_F32, (3), (1.5, -2.25, 1024));
    TH_EXPECT(ctx, tfl_cast(ctx, tfl_cast(ctx, xf, TH_F16), TH_F32), TH_F32, (3), (1.5, -2.25, 1024), 0);
    /* bfloat16 */
    tfl_tensor *y = TH_T(ctx, TH_F64, (5), (1.5, -2.25, 0.15625, 256, 3.3895313892515355e38));
    tfl_tensor *bh = tfl_cast(ctx, y, TH_BF16);
    EXPECT_BITS(bh, 0x3FC0, 0xC010, 0x3E20, 0x4380, 0x7F7F);
    TH_EXPECT(ctx, tfl_cast(ctx, bh, TH_F64), TH_F64, (5), (1.5, -2.25, 0.15625, 256, 3.3895313892515355e38), 0);
    TH_EXPECT(ctx, tfl_cast(ctx, tfl_cast(ctx, xf, TH_BF16), TH_F32), TH_F32, (3), (1.5, -2.25, 1024), 0);
    /* float16 <-> bfloat16 */
    TH_EXPECT(ctx, tfl_cast(ctx, tfl_cast(ctx, TH_T(ctx, TH_F16, (2), (1.5, -0.375)), TH_BF16), TH_F16), TH_F16,
              (2), (1.5, -0.375), 0);
    EXPECT_BITS(tfl_cast(ctx, TH_T(ctx, TH_F16, (1), (1.5)), TH_BF16), 0x3FC0);
    /* rounding to nearest even, overflow to inf, NaN stays NaN */
    tfl_tensor *r = TH_T(ctx, TH_F32, (5), (1.00048828125, 1.00146484375, 70000, -70000, NAN));
    tfl_tensor *rh = tfl_cast(ctx, r, TH_F16);
    EXPECT_BITS(rh, 0x3C00, 0x3C02, 0x7C00, 0xFC00);
    TH_EXPECT(ctx, rh, TH_F16, (5), (1, 1.001953125, INFINITY, -INFINITY, NAN), 0);
    tfl_tensor *rb = tfl_cast(ctx, TH_T(ctx, TH_F32, (3), (1.00390625, 1.01171875, NAN)), TH_BF16);
    EXPECT_BITS(rb, 0x3F80, 0x3F82);
    TH_EXPECT(ctx, rb, TH_BF16, (3), (1, 1.015625, NAN), 0);
    /* half -> int truncates */
    TH_EXPECT(ctx, tfl_cast(ctx, h, TH_I32), TH_I32, (6), (1, -2, 0, 65504, 0, 0), 0);
    th_end(ctx);
}

static void test_cast_misc(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    /* same dtype: same values */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F32, (2), (1.25, -3)), TH_F32), TH_F32, (2), (1.25, -3), 0);
    /* float64 -> float32 rounds */
    TH_EXPECT(ctx, tfl_cast(ctx, TH_T(ctx, TH_F64, (2), (0.1, 1e40)), TH_F32), TH_F32, (2),
              ((double)0.1f, INFINITY), 0);
    /* shapes kept, views read in logical order */
    tfl_tensor *m = TH_T(ctx, TH_I32, (2, 3), (1, 2, 3, 4, 5, 6));
    TH_EXPECT(ctx, tfl_cast(ctx, tfl_transpose(ctx, m, NULL), TH_F64), TH_F64, (3, 2), (1, 4, 2, 5, 3, 6), 0);
    TH_EXPECT0(ctx, tfl_cast(ctx, TH_T0(ctx, TH_F64, -2.75), TH_I32), TH_I32, -2, 0);
    TH_EXPECT_SHAPE(ctx, tfl_cast(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(0, 2)), TH_I64), TH_I64, (0, 2));
    TH_EXPECT_INVALID(ctx, tfl_cast(ctx, NULL, TH_F32), "Cast", "input 0 is NULL");
    th_end(ctx);
}

/* ---- where --------------------------------------------------------------------------------------- */

static void test_where_values(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    static const tfl_dtype dts[] = {TH_I32, TH_I64, TH_F16, TH_BF16, TH_F32, TH_F64};
    for (int d = 0; d < NELEMS(dts); d++) {
        tfl_dtype dt = dts[d];
        /* same shapes */
        tfl_tensor *c = TH_T(ctx, TH_BOOL, (4), (1, 0, 1, 0));
        tfl_tensor *x = TH_TENSOR_N(ctx, dt, 1, TH_SHAPE(4), TH_VALS(1, 2, 3, 4), 4);
        tfl_tensor *y = TH_TENSOR_N(ctx, dt, 1, TH_SHAPE(4), TH_VALS(10, 20, 30, 40), 4);
        TH_EXPECT(ctx, tfl_where(ctx, c, x, y), dt, (4), (1, 20, 3, 40), 0);
        /* (3,1) cond, (1,4) x, scalar y -> (3,4) */
        tfl_tensor *c31 = TH_T(ctx, TH_BOOL, (3, 1), (1, 0, 1));
        tfl_tensor *x14 = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(1, 4), TH_VALS(1, 2, 3, 4), 4);
        tfl_tensor *y0 = TH_TENSOR_N(ctx, dt, 0, NULL, TH_VALS(0), 1);
        TH_EXPECT(ctx, tfl_where(ctx, c31, x14, y0), dt, (3, 4), (1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4), 0);
        /* scalar cond */
        TH_EXPECT(ctx, tfl_where(ctx, TH_T0(ctx, TH_BOOL, 0), x14, y0), dt, (1, 4), (0, 0, 0, 0), 0);
        /* rank mismatch: (2,3) cond, (3,) x, (2,1) y */
        tfl_tensor *c23 = TH_T(ctx, TH_BOOL, (2, 3), (1, 0, 0, 0, 1, 1));
        tfl_tensor *x3 = TH_TENSOR_N(ctx, dt, 1, TH_SHAPE(3), TH_VALS(1, 2, 3), 3);
        tfl_tensor *y21 = TH_TENSOR_N(ctx, dt, 2, TH_SHAPE(2, 1), TH_VALS(-1, -2), 2);
        TH_EXPECT(ctx, tfl_where(ctx, c23, x3, y21), dt, (2, 3), (1, -1, -1, -2, 2, 3), 0);
    }
    /* bool and complex values */
    TH_EXPECT(ctx,
              tfl_where(ctx, TH_T(ctx, TH_BOOL, (2), (1, 0)), TH_T(ctx, TH_BOOL, (2), (0, 0)),
                        TH_T(ctx, TH_BOOL, (2), (1, 1))),
              TH_BOOL, (2), (0, 1), 0);
    TH_EXPECTC(ctx,
               tfl_where(ctx, TH_T(ctx, TH_BOOL, (2), (0, 1)), TH_TC(ctx, TH_C128, (2), (1, 2, 3, 4)),
                         TH_TC0(ctx, TH_C128, -1, -1)),
               TH_C128, (2), (-1, -1, 3, 4), 0);
    /* cond from a comparison; NaN selected as data */
    tfl_tensor *v = TH_T(ctx, TH_F32, (4), (-1, NAN, 2, -3));
    tfl_tensor *z = TH_T0(ctx, TH_F32, 0);
    TH_EXPECT(ctx, tfl_where(ctx, tfl_greater(ctx, v, z), v, z), TH_F32, (4), (0, 0, 2, 0), 0);
    TH_EXPECT(ctx, tfl_where(ctx, tfl_not_equal(ctx, v, v), z, v), TH_F32, (4), (-1, 0, 2, -3), 0);
    th_end(ctx);
}

static void test_where_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *c = TH_T(ctx, TH_BOOL, (3), (1, 0, 1));
    tfl_tensor *xf = TH_T(ctx, TH_F32, (3), (1, 2, 3));
    tfl_tensor *yi = TH_T(ctx, TH_I32, (3), (1, 2, 3));
    tfl_tensor *y4 = TH_T(ctx, TH_F32, (4), (1, 2, 3, 4));
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, c, xf, yi), "SelectV2", "dtypes differ");
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, TH_T(ctx, TH_I32, (3), (1, 0, 1)), xf, xf), "SelectV2", NULL);
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, TH_T(ctx, TH_F32, (3), (1, 0, 1)), xf, xf), "SelectV2", NULL);
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, c, xf, y4), "SelectV2", "incompatible shapes");
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, TH_T(ctx, TH_BOOL, (2), (1, 0)), xf, xf), "SelectV2",
                      "incompatible shapes");
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, NULL, xf, xf), "SelectV2", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, c, NULL, xf), "SelectV2", "input 1 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_where(ctx, c, xf, NULL), "SelectV2", "input 2 is NULL");
    th_end(ctx);
}

/* Bigger tensors (the parallel paths): rank-4 transpose, concat, gather, cast, where. */
static void test_shape_ops_large(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    enum { D0 = 6, D1 = 7, D2 = 33, D3 = 65, N = D0 * D1 * D2 * D3 };
    double *x = malloc(sizeof(double) * N), *want = malloc(sizeof(double) * 2 * N);
    assert_true(x && want);
    for (int i = 0; i < N; i++) x[i] = (double)((i * 7919) % 4001) - 2000.0;
    const int64_t shape[4] = {D0, D1, D2, D3};
    tfl_tensor *t = TH_TENSOR_N(ctx, TH_F32, 4, shape, x, N);
    /* transpose (3, 1, 0, 2) then copy via identity */
    static const int perm[4] = {3, 1, 0, 2};
    int64_t os[4];
    for (int a = 0; a < 4; a++) os[a] = shape[perm[a]];
    int64_t o = 0, id[4];
    for (id[0] = 0; id[0] < os[0]; id[0]++)
        for (id[1] = 0; id[1] < os[1]; id[1]++)
            for (id[2] = 0; id[2] < os[2]; id[2]++)
                for (id[3] = 0; id[3] < os[3]; id[3]++) {
                    int64_t src[4];
                    for (int a = 0; a < 4; a++) src[perm[a]] = id[a];
                    want[o++] = x[((src[0] * D1 + src[1]) * D2 + src[2]) * D3 + src[3]];
                }
    tfl_tensor *tv = tfl_transpose(ctx, t, perm);
    TH_EXPECT_N(ctx, tv, TH_F32, 4, os, want, N, 0);
    TH_EXPECT_N(ctx, tfl_identity(ctx, tv), TH_F32, 4, os, want, N, 0);
    TH_EXPECT_N(ctx, tfl_cast(ctx, tv, TH_I32), TH_I32, 4, os, want, N, 0);
    /* concat t with itself along axis 2 */
    const tfl_tensor *tt[2] = {t, t};
    o = 0;
    for (int64_t p = 0; p < D0 * D1; p++)
        for (int r = 0; r < 2; r++)
            for (int64_t q = 0; q < D2 * D3; q++) want[o++] = x[p * D2 * D3 + q];
    TH_EXPECT_N(ctx, tfl_concat(ctx, 2, tt, 2), TH_F32, 4, TH_SHAPE(D0, D1, 2 * D2, D3), want, 2 * N, 0);
    /* gather along axis 3 with reversed indices */
    int32_t idx[D3];
    for (int i = 0; i < D3; i++) idx[i] = D3 - 1 - i;
    tfl_tensor *it = tfl_tensor_new(ctx, TH_I32, 1, TH_SHAPE(D3), idx);
    for (int64_t p = 0; p < N / D3; p++)
        for (int i = 0; i < D3; i++) want[p * D3 + i] = x[p * D3 + (D3 - 1 - i)];
    TH_EXPECT_N(ctx, tfl_gather(ctx, t, it, 3), TH_F32, 4, shape, want, N, 0);
    /* where(t > 0, t, 0) is relu */
    for (int i = 0; i < N; i++) want[i] = x[i] > 0 ? x[i] : 0;
    tfl_tensor *z = TH_T0(ctx, TH_F32, 0);
    TH_EXPECT_N(ctx, tfl_where(ctx, tfl_greater(ctx, t, z), t, z), TH_F32, 4, shape, want, N, 0);
    free(x);
    free(want);
    th_end(ctx);
}

/* int64 data and indices are moved exactly (no trip through double or int32). */
static void test_shape_ops_int64_exact(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const int64_t p53 = INT64_C(9007199254740992);
    tfl_tensor *x = TH_TI64(ctx, (2, 2), (p53 + 1, INT64_MAX, INT64_MIN, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_transpose(ctx, x, NULL), (2, 2), (p53 + 1, INT64_MIN, INT64_MAX, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_reshape(ctx, x, 1, TH_SHAPE(-1)), (4), (p53 + 1, INT64_MAX, INT64_MIN, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_slice(ctx, x, TH_SHAPE(0, 1), TH_SHAPE(2, 1)), (2, 1), (INT64_MAX, -p53 - 1));
    const tfl_tensor *xx[2] = {x, x};
    TH_EXPECT_I64(ctx, tfl_concat(ctx, 2, xx, 1), (2, 4),
                  (p53 + 1, INT64_MAX, p53 + 1, INT64_MAX, INT64_MIN, -p53 - 1, INT64_MIN, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_gather(ctx, x, TH_T(ctx, TH_I32, (1), (1)), 0), (1, 2), (INT64_MIN, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_where(ctx, TH_T(ctx, TH_BOOL, (2), (1, 0)), x, TH_TI64(ctx, (1), (p53 + 3))),
                  (2, 2), (p53 + 1, p53 + 3, INT64_MIN, p53 + 3));
    TH_EXPECT_I64(ctx, tfl_cast(ctx, x, TH_I64), (2, 2), (p53 + 1, INT64_MAX, INT64_MIN, -p53 - 1));
    TH_EXPECT_I64(ctx, tfl_cast(ctx, TH_T(ctx, TH_I32, (2), (-2147483648.0, 2147483647)), TH_I64), (2),
                  (-2147483647 - 1, 2147483647));
    /* int64 indices past 2^32: 2^32 + 1 is not 1 */
    const int64_t big = INT64_C(4294967297);
    TH_EXPECT(ctx, tfl_one_hot(ctx, TH_TI64(ctx, (2), (big, 1)), 3, 1, 0, TH_F32), TH_F32, (2, 3),
              (0, 0, 0, 0, 1, 0), 0);
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, x, TH_TI64(ctx, (2), (0, big)), 0), "GatherV2",
                      "indices[1] = 4294967297 is not in [0, 2)");
    TH_EXPECT_INVALID(ctx, tfl_gather(ctx, x, TH_TI64(ctx, (1), (INT64_MIN)), 1), "GatherV2",
                      "indices[0] = -9223372036854775808 is not in [0, 2)");
    th_end(ctx);
}

/* Without a frame: every result is the caller's. */
static void test_shape_ops_without_frame(void **state)
{
    tfl_ctx *ctx = *state;
    tfl_tensor *x = TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6));
    tfl_tensor *r = tfl_reshape(ctx, x, 1, TH_SHAPE(6));
    tfl_tensor *t = tfl_transpose(ctx, x, NULL);
    tfl_tensor *s = tfl_slice(ctx, x, TH_SHAPE(0, 1), TH_SHAPE(-1, 1));
    const tfl_tensor *two[2] = {x, x};
    tfl_tensor *c = tfl_concat(ctx, 2, two, 0);
    tfl_tensor *i = TH_T(ctx, TH_I32, (1), (1));
    tfl_tensor *g = tfl_gather(ctx, x, i, 0);
    tfl_tensor *o = tfl_one_hot(ctx, i, 2, 1, 0, TH_F32);
    tfl_tensor *k = tfl_cast(ctx, x, TH_I32);
    tfl_tensor *ob = tfl_cast(ctx, o, TH_BOOL);
    tfl_tensor *w = tfl_where(ctx, ob, o, o);
    TH_EXPECT(ctx, g, TH_F32, (1, 3), (4, 5, 6), 0);
    TH_EXPECT(ctx, s, TH_F32, (2, 1), (2, 5), 0);
    assert_true(r && t && c && o && k && ob && w);
    /* the view outlives its base */
    tfl_tensor_release(x);
    TH_EXPECT(ctx, t, TH_F32, (3, 2), (1, 4, 2, 5, 3, 6), 0);
    TH_EXPECT(ctx, w, TH_F32, (1, 2), (0, 1), 0);
    tfl_tensor *ws[] = {r, t, s, c, i, g, o, k, ob};
    for (int n = 0; n < NELEMS(ws); n++) tfl_tensor_release(ws[n]);
    tfl_alloc_stats st;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &st), TFL_OK);
    assert_int_equal(st.live_tensors, 1); /* only w */
    tfl_tensor_release(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_reshape_values),
        TH_TEST(test_reshape_view_and_copy),
        TH_TEST(test_reshape_errors),
        TH_TEST(test_transpose_values),
        TH_TEST(test_transpose_is_view),
        TH_TEST(test_transpose_errors),
        TH_TEST(test_concat_values),
        TH_TEST(test_concat_errors),
        TH_TEST(test_slice_values),
        TH_TEST(test_slice_is_view),
        TH_TEST(test_slice_errors),
        TH_TEST(test_gather_values),
        TH_TEST(test_gather_errors),
        TH_TEST(test_one_hot),
        TH_TEST(test_cast_float_to_int),
        TH_TEST(test_cast_int_and_bool),
        TH_TEST(test_cast_complex),
        TH_TEST(test_cast_half_round_trips),
        TH_TEST(test_cast_misc),
        TH_TEST(test_where_values),
        TH_TEST(test_where_errors),
        TH_TEST(test_shape_ops_large),
        TH_TEST(test_shape_ops_int64_exact),
        TH_TEST(test_shape_ops_without_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
