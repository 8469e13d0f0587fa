/* test_conv_pool.c: cmocka tests of the convolution and pooling ops against TensorFlow
 * (tests/reference/fixtures/conv_tf.json, written by tests/reference/conv_tf.py in float64):
 * Conv2D and both backprops (strides 1, 2, 3 and mixed, VALID and SAME, dilations, 1x1,
 * non-square and odd sizes, Cin and Cout > 1, N > 1), max and avg pooling with their
 * gradients through a tape (overlapping windows, strides other than the window, SAME
 * padding, ties) and MaxPoolGradGrad, each in float32 and float64; then the rules'
 * gradients against the backprop ops, float16/bfloat16, empty batches and channels, strided
 * views, the NULL options, and every error with its code and message. */
#include "test_ops_helpers.h"

#include <cjson/cJSON.h>

#define FIXTURE TFL_SOURCE_DIR "/tests/reference/fixtures/conv_tf.json"
#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tfl_dtype k_floats[] = {TH_F32, TH_F64};
/* float64 agrees with TensorFlow's float64 to rounding (all pass at 1e-14); float32 inputs
 * are the same numbers rounded, and sums of up to 27 products (all pass at 2e-6); the
 * margin covers other summation orders (BLIS on CPUs without AVX-512) */
static const double k_tol[] = {5e-6, 1e-13};

static cJSON *g_doc;

static int load(void **state)
{
    (void)state;
    FILE *fp = fopen(FIXTURE, "rb");
    if (!fp) return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    rewind(fp);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, fp) != (size_t)n) {
        free(text);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    text[n] = '\0';
    g_doc = cJSON_Parse(text);
    free(text);
    return g_doc ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    cJSON_Delete(g_doc);
    return 0;
}

static const cJSON *field(const cJSON *c, const char *key)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!f) fail_msg("fixture entry lacks \"%s\"", key);
    return f;
}

/* A list of numbers as a malloc'ed array of doubles (*n: their count). */
static double *nums(const cJSON *c, const char *key, int *n)
{
    const cJSON *a = field(c, key);
    int len = cJSON_GetArraySize(a);
    double *v = malloc(sizeof(double) * (size_t)(len ? len : 1));
    assert_non_null(v);
    for (int i = 0; i < len; i++)
        v[i] = cJSON_GetArrayItem(a, i)->valuedouble;
    *n = len;
    return v;
}

static void shape4(const cJSON *c, const char *key, int64_t s[4])
{
    const cJSON *a = field(c, key);
    assert_int_equal(cJSON_GetArraySize(a), 4);
    for (int i = 0; i < 4; i++)
        s[i] = (int64_t)cJSON_GetArrayItem(a, i)->valuedouble;
}

static void pair(const cJSON *c, const char *key, int out[2])
{
    const cJSON *a = field(c, key);
    out[0] = (int)cJSON_GetArrayItem(a, 0)->valuedouble;
    out[1] = (int)cJSON_GetArrayItem(a, 1)->valuedouble;
}

static tfl_padding padding_of(const cJSON *c)
{
    return strcmp(field(c, "padding")->valuestring, "SAME") == 0 ? TFL_PADDING_SAME
                                                                 : TFL_PADDING_VALID;
}

/* The fixture array `key` as a tensor of dt with shape s. */
static tfl_tensor *tensor_of(tfl_ctx *ctx, const cJSON *c, const char *key, tfl_dtype dt,
                             const int64_t s[4])
{
    int n;
    double *v = nums(c, key, &n);
    tfl_tensor *t = TH_TENSOR_N(ctx, dt, 4, s, v, (size_t)n);
    free(v);
    return t;
}

/* t is dt with shape s and holds the fixture array `key`, each element within
 * tol * max(1, |want|); a failure names the case, the array and the element */
static void expect_key(tfl_ctx *ctx, const tfl_tensor *t, const cJSON *c, const char *key,
                       tfl_dtype dt, const int64_t s[4], double tol)
{
    const char *name = field(c, "name")->valuestring;
    if (!t)
        fail_msg("%s %s (%s): NULL: %s", name, key, tfl_dtype_name(dt), tfl_ctx_error(ctx).message);
    TH_EXPECT_N(ctx, t, dt, 4, s, NULL, 0, 0.0); /* dtype and shape */
    int n;
    double *want = nums(c, key, &n), *got = TH_READ(t);
    assert_int_equal(n, tfl_tensor_numel(t));
    for (int i = 0; i < n; i++)
        if (!th_close(got[i], want[i], tol))
            fail_msg("%s %s (%s) element %d: got %.17g, TensorFlow %.17g (tol %g)", name, key,
                     tfl_dtype_name(dt), i, got[i], want[i], tol);
    free(want);
    free(got);
}

/* ---- convolutions ------------------------------------------------------------------------- */

static tfl_conv2d_opts conv_opts(const cJSON *c)
{
    tfl_conv2d_opts o;
    pair(c, "strides", o.strides);
    pair(c, "dilations", o.dilations);
    o.padding = padding_of(c);
    return o;
}

/* y, dx and dw of every case by the three ops, in float32 and float64 */
static void test_conv_ops_against_tf(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const cJSON *cases = field(g_doc, "conv"), *c;
    assert_true(cJSON_GetArraySize(cases) >= 10);
    cJSON_ArrayForEach(c, cases)
    {
        int64_t xs[4], ws[4], ys[4];
        shape4(c, "x_shape", xs);
        shape4(c, "w_shape", ws);
        shape4(c, "y_shape", ys);
        tfl_conv2d_opts o = conv_opts(c);
        for (int d = 0; d < NELEMS(k_floats); d++) {
            tfl_dtype dt = k_floats[d];
            assert_int_equal(tfl_frame_push(ctx), TFL_OK);
            tfl_tensor *x = tensor_of(ctx, c, "x", dt, xs), *w = tensor_of(ctx, c, "w", dt, ws);
            tfl_tensor *dy = tensor_of(ctx, c, "dy", dt, ys);
            expect_key(ctx, tfl_conv2d(ctx, x, w, &o), c, "y", dt, ys, k_tol[d]);
            expect_key(ctx, tfl_conv2d_backprop_input(ctx, xs, w, dy, &o), c, "dx", dt, xs,
                       k_tol[d]);
            expect_key(ctx, tfl_conv2d_backprop_filter(ctx, x, ws, dy, &o), c, "dw", dt, ws,
                       k_tol[d]);
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        }
    }
    th_end(ctx);
}

/* The same dx and dw from a tape over tfl_conv2d (Conv2D's rule), and the rules of the two
 * backprops give their adjoints: d<BackpropInput(w, dy), u>/d dy = Conv2D(u, w), and so on */
static void test_conv_gradients_against_tf(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const cJSON *c;
    cJSON_ArrayForEach(c, field(g_doc, "conv"))
    {
        int64_t xs[4], ws[4], ys[4];
        shape4(c, "x_shape", xs);
        shape4(c, "w_shape", ws);
        shape4(c, "y_shape", ys);
        tfl_conv2d_opts o = conv_opts(c);
        tfl_dtype dt = TH_F64;
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *x = tensor_of(ctx, c, "x", dt, xs), *w = tensor_of(ctx, c, "w", dt, ws);
        tfl_tensor *dy = tensor_of(ctx, c, "dy", dt, ys);
        tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
        assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
        assert_int_equal(tfl_tape_watch(tape, w), TFL_OK);
        assert_int_equal(tfl_tape_watch(tape, dy), TFL_OK);
        tfl_tensor *y = tfl_conv2d(ctx, x, w, &o);
        tfl_tensor *bi = tfl_conv2d_backprop_input(ctx, xs, w, dy, &o);
        tfl_tensor *bf = tfl_conv2d_backprop_filter(ctx, x, ws, dy, &o);
        tfl_tape_end(tape);
        tfl_tensor *g[2];
        const tfl_tensor *xw[2] = {x, w};
        assert_int_equal(tfl_tape_vjp(tape, y, dy, 2, xw, g, 0), TFL_OK);
        expect_key(ctx, g[0], c, "dx", dt, xs, 1e-12);
        expect_key(ctx, g[1], c, "dw", dt, ws, 1e-12);
        /* BackpropInput(w, dy) against x: dw = BackpropFilter(x, dy), ddy = Conv2D(x, w) */
        const tfl_tensor *wdy[2] = {w, dy};
        assert_int_equal(tfl_tape_vjp(tape, bi, x, 2, wdy, g, 0), TFL_OK);
        expect_key(ctx, g[0], c, "dw", dt, ws, 1e-12);
        expect_key(ctx, g[1], c, "y", dt, ys, 1e-12);
        /* BackpropFilter(x, dy) against w: dx = BackpropInput(w, dy), ddy = Conv2D(x, w) */
        const tfl_tensor *xdy[2] = {x, dy};
        assert_int_equal(tfl_tape_vjp(tape, bf, w, 2, xdy, g, 0), TFL_OK);
        expect_key(ctx, g[0], c, "dx", dt, xs, 1e-12);
        expect_key(ctx, g[1], c, "y", dt, ys, 1e-12);
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    th_end(ctx);
}

/* ---- pooling -------------------------------------------------------------------------------- */

static tfl_pool2d_opts pool_opts(const cJSON *c)
{
    tfl_pool2d_opts o;
    pair(c, "ksize", o.ksize);
    pair(c, "strides", o.strides);
    o.padding = padding_of(c);
    return o;
}

static tfl_tensor *pool_of(tfl_ctx *ctx, bool max, const tfl_tensor *x, const tfl_pool2d_opts *o)
{
    return max ? tfl_max_pool2d(ctx, x, o) : tfl_avg_pool2d(ctx, x, o);
}

/* d pool(x) / dx against w: MaxPoolGrad(x, w) or AvgPoolGrad(w) */
static tfl_tensor *pool_vjp(tfl_ctx *ctx, bool max, tfl_tensor *x, const tfl_tensor *w,
                            const tfl_pool2d_opts *o)
{
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *y = pool_of(ctx, max, x, o), *g = NULL;
    assert_int_equal(tfl_tape_vjp(tape, y, w, 1, (const tfl_tensor *const *)&x, &g, 0), TFL_OK);
    tfl_tape_free(tape);
    return g;
}

/* y, the gradient dx (MaxPoolGrad / AvgPoolGrad through a tape) and, for max pooling,
 * MaxPoolGradGrad(x, g) (the gradient of MaxPoolGrad(x, v) in v against g) */
static void test_pool_against_tf(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const cJSON *cases = field(g_doc, "pool"), *c;
    assert_true(cJSON_GetArraySize(cases) >= 10);
    cJSON_ArrayForEach(c, cases)
    {
        int64_t xs[4], ys[4];
        shape4(c, "x_shape", xs);
        shape4(c, "y_shape", ys);
        tfl_pool2d_opts o = pool_opts(c);
        bool max = strcmp(field(c, "kind")->valuestring, "max") == 0;
        for (int d = 0; d < NELEMS(k_floats); d++) {
            tfl_dtype dt = k_floats[d];
            double tol = dt == TH_F64 ? 1e-13 : 1e-6;
            assert_int_equal(tfl_frame_push(ctx), TFL_OK);
            tfl_tensor *x = tensor_of(ctx, c, "x", dt, xs), *dy = tensor_of(ctx, c, "dy", dt, ys);
            expect_key(ctx, pool_of(ctx, max, x, &o), c, "y", dt, ys, tol);
            expect_key(ctx, pool_vjp(ctx, max, x, dy, &o), c, "dx", dt, xs, tol);
            if (max) {
                tfl_tensor *g = tensor_of(ctx, c, "g", dt, xs);
                tfl_tensor *v = tfl_zeros(ctx, dt, 4, ys), *gg = NULL;
                tfl_tape *outer = tfl_tape_begin(ctx, 0);
                assert_int_equal(tfl_tape_watch(outer, v), TFL_OK);
                tfl_tensor *dxv = pool_vjp(ctx, true, x, v, &o);
                assert_int_equal(
                    tfl_tape_vjp(outer, dxv, g, 1, (const tfl_tensor *const *)&v, &gg, 0), TFL_OK);
                tfl_tape_free(outer);
                expect_key(ctx, gg, c, "gg", dt, ys, tol);
            }
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        }
    }
    th_end(ctx);
}

/* Ties by hand: equal maxima send the gradient to the first in row-major window order */
static void test_max_pool_ties(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_pool2d_opts o = {{2, 2}, {1, 1}, TFL_PADDING_VALID};
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        /* (1, 3, 3, 1): every window's max is 5, held by several positions */
        tfl_tensor *x = TH_T(ctx, dt, (1, 3, 3, 1), (5, 5, 1, 5, 5, 5, 0, 5, 5));
        TH_EXPECT(ctx, tfl_max_pool2d(ctx, x, &o), dt, (1, 2, 2, 1), (5, 5, 5, 5), 0);
        /* window (0,0) -> x[0,0]; (0,1) -> x[0,1]; (1,0) -> x[1,0]; (1,1) -> x[1,1] */
        TH_EXPECT(ctx, pool_vjp(ctx, true, x, TH_T(ctx, dt, (1, 2, 2, 1), (1, 10, 100, 1000)), &o),
                  dt, (1, 3, 3, 1), (1, 10, 0, 100, 1000, 0, 0, 0, 0), 0);
    }
    th_end(ctx);
}

/* ---- other dtypes, empty tensors, views, defaults ------------------------------------------- */

/* float16 and bfloat16 run through float32 and round once: the float32 result, rounded */
static void test_half_dtypes(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const tfl_dtype halves[] = {TH_F16, TH_BF16};
    tfl_pool2d_opts po = {{2, 2}, {0, 0}, TFL_PADDING_SAME};
    for (int d = 0; d < NELEMS(halves); d++) {
        tfl_dtype dt = halves[d];
        tfl_tensor *x = TH_T(ctx, dt, (1, 3, 3, 1), (1, 2, 3, 4, 5, 6, 7, 8, 9));
        tfl_tensor *w = TH_T(ctx, dt, (2, 2, 1, 1), (1, 0.5, 0.25, -1));
        /* windows [1 2; 4 5] ... by hand: 1 + 1 + 1 - 5 = -2, -1.25, ... */
        TH_EXPECT(ctx, tfl_conv2d(ctx, x, w, NULL), dt, (1, 2, 2, 1), (-2, -1.25, 0.25, 1), 0);
        TH_EXPECT(ctx, tfl_max_pool2d(ctx, x, &po), dt, (1, 2, 2, 1), (5, 6, 8, 9), 0);
        TH_EXPECT(ctx, tfl_avg_pool2d(ctx, x, &po), dt, (1, 2, 2, 1), (3, 4.5, 7.5, 9), 0);
    }
    th_end(ctx);
}

/* N = 0 gives empty results and a zero filter gradient; Cin = 0 gives zeros */
static void test_empty(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_pool2d_opts po = {{2, 2}, {0, 0}, TFL_PADDING_VALID};
    for (int d = 0; d < NELEMS(k_floats); d++) {
        tfl_dtype dt = k_floats[d];
        tfl_tensor *x = tfl_zeros(ctx, dt, 4, TH_SHAPE(0, 5, 5, 3));
        tfl_tensor *w = tfl_ones(ctx, dt, 4, TH_SHAPE(3, 3, 3, 4));
        tfl_tensor *dy = tfl_zeros(ctx, dt, 4, TH_SHAPE(0, 3, 3, 4));
        TH_EXPECT_SHAPE(ctx, tfl_conv2d(ctx, x, w, NULL), dt, (0, 3, 3, 4));
        TH_EXPECT_SHAPE(ctx, tfl_conv2d_backprop_input(ctx, TH_SHAPE(0, 5, 5, 3), w, dy, NULL), dt,
                        (0, 5, 5, 3));
        double zeros[108] = {0};
        TH_EXPECT_N(ctx, tfl_conv2d_backprop_filter(ctx, x, TH_SHAPE(3, 3, 3, 4), dy, NULL), dt, 4,
                    TH_SHAPE(3, 3, 3, 4), zeros, 108, 0);
        TH_EXPECT_SHAPE(ctx, tfl_max_pool2d(ctx, x, &po), dt, (0, 2, 2, 3));
        TH_EXPECT_SHAPE(ctx, tfl_avg_pool2d(ctx, x, &po), dt, (0, 2, 2, 3));
        TH_EXPECT_SHAPE(ctx,
                        pool_vjp(ctx, true, x, tfl_zeros(ctx, dt, 4, TH_SHAPE(0, 2, 2, 3)), &po),
                        dt, (0, 5, 5, 3));
        /* no input channels: every output is an empty sum */
        tfl_tensor *x0 = tfl_zeros(ctx, dt, 4, TH_SHAPE(1, 3, 3, 0));
        tfl_tensor *w0 = tfl_zeros(ctx, dt, 4, TH_SHAPE(2, 2, 0, 2));
        TH_EXPECT(ctx, tfl_conv2d(ctx, x0, w0, NULL), dt, (1, 2, 2, 2), (0, 0, 0, 0, 0, 0, 0, 0),
                  0);
    }
    th_end(ctx);
}

/* Views (a transposed input and filter) read like their contiguous copies; NULL options
 * are strides 1, dilations 1, VALID, and zeros in the options mean 1 */
static void test_views_and_defaults(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const cJSON *c = cJSON_GetArrayItem(field(g_doc, "conv"), 0); /* VALID, strides 1 */
    int64_t xs[4], ws[4], ys[4];
    shape4(c, "x_shape", xs);
    shape4(c, "w_shape", ws);
    shape4(c, "y_shape", ys);
    tfl_tensor *x = tensor_of(ctx, c, "x", TH_F64, xs), *w = tensor_of(ctx, c, "w", TH_F64, ws);
    expect_key(ctx, tfl_conv2d(ctx, x, w, NULL), c, "y", TH_F64, ys, 1e-13);
    expect_key(ctx, tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{0, 0}, {0, 0}, TFL_PADDING_VALID}), c,
               "y", TH_F64, ys, 1e-13);
    const int swap[4] = {0, 2, 1, 3};
    tfl_tensor *xv = tfl_transpose(ctx, tfl_transpose(ctx, x, swap), swap); /* x, as a view */
    tfl_tensor *xt = tfl_transpose(ctx, tfl_reshape(ctx, x, 4, TH_SHAPE(2, 5, 5, 3)), swap);
    tfl_tensor *back = tfl_transpose(ctx, xt, swap);
    assert_non_null(xv);
    expect_key(ctx, tfl_conv2d(ctx, back, w, NULL), c, "y", TH_F64, ys, 1e-13);
    tfl_tensor *wt =
        tfl_transpose(ctx, tfl_transpose(ctx, w, (int[]){1, 0, 2, 3}), (int[]){1, 0, 2, 3});
    expect_key(ctx, tfl_conv2d(ctx, xv, wt, NULL), c, "y", TH_F64, ys, 1e-13);
    th_end(ctx);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_conv_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(1, 5, 5, 3));
    tfl_tensor *w = tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(3, 3, 3, 4));
    tfl_tensor *dy = tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(1, 3, 3, 4));
    /* ranks */
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, tfl_zeros(ctx, TH_F32, 3, TH_SHAPE(5, 5, 3)), w, NULL),
                      "Conv2D", "input must be 4-dimensional (N, H, W, C), got shape (5, 5, 3)");
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, x, tfl_zeros(ctx, TH_F32, 3, TH_SHAPE(3, 3, 3)), NULL),
                      "Conv2D",
                      "filter must be 4-dimensional (KH, KW, Cin, Cout), got shape (3, 3, 3)");
    /* depths: both shapes named */
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d(ctx, x, tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(3, 3, 2, 4)), NULL), "Conv2D",
        "input depth 3 does not match the filter's input depth 2: input "
        "shape (1, 5, 5, 3), filter shape (3, 3, 2, 4)");
    /* strides, dilations, padding */
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{-1, 1}, {1, 1}, 0}), "Conv2D",
                      "strides must be >= 0 (0 means 1), got (-1, 1)");
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{1, 1}, {1, -2}, 0}), "Conv2D",
                      "dilations must be >= 0 (0 means 1), got (1, -2)");
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{1, 1}, {1, 1}, (tfl_padding)7}), "Conv2D",
        "padding 7 is neither TFL_PADDING_VALID (0) nor TFL_PADDING_SAME (1)");
    /* a window that does not fit */
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d(ctx, tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(1, 2, 5, 3)), w, NULL), "Conv2D",
        "computed output height would be 0 [input height 2, effective filter "
        "height 3 (filter 3, dilation 1), stride 1, VALID padding]: the window does not "
        "fit in the input");
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{1, 1}, {1, 3}, 0}), "Conv2D",
                      "computed output width would be 0 [input width 5, effective filter width 7 "
                      "(filter 3, dilation 3), stride 1, VALID padding]");
    TH_EXPECT_INVALID(
        ctx,
        tfl_conv2d(ctx, tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(1, 0, 5, 3)), w,
                   &(tfl_conv2d_opts){{1, 1}, {1, 1}, TFL_PADDING_SAME}),
        "Conv2D",
        "computed output height would be 0 [input height 0, effective filter "
        "height 3 (filter 3, dilation 1), stride 1, SAME padding]: the input is empty");
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d(ctx, x, tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(0, 3, 3, 4)), NULL), "Conv2D",
        "the filter's height and width must be >= 1, got filter shape "
        "(0, 3, 3, 4)");
    /* dtypes */
    tfl_tensor *xi = tfl_zeros(ctx, TH_I32, 4, TH_SHAPE(1, 5, 5, 3));
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d(ctx, xi, tfl_zeros(ctx, TH_I32, 4, TH_SHAPE(3, 3, 3, 4)), NULL), "Conv2D",
        "dtype int32 is not supported; expected one of float16, bfloat16, "
        "float32, float64");
    TH_EXPECT_INVALID(ctx,
                      tfl_conv2d(ctx, x, tfl_zeros(ctx, TH_F64, 4, TH_SHAPE(3, 3, 3, 4)), NULL),
                      "Conv2D", "dtypes differ: input is float32, filter is float64");
    /* NULL inputs, and the NULL of a failed op whose error is kept (chains check once) */
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, NULL, w, NULL), "Conv2D", "input 0 is NULL");
    TH_EXPECT_INVALID(ctx, tfl_conv2d(ctx, x, NULL, NULL), "Conv2D", "input 1 is NULL");
    tfl_tensor *bad = tfl_conv2d(ctx, x, w, &(tfl_conv2d_opts){{-1, 1}, {1, 1}, 0});
    assert_null(tfl_conv2d(ctx, bad, w, NULL));
    assert_null(tfl_conv2d_backprop_filter(ctx, bad, TH_SHAPE(3, 3, 3, 4), dy, NULL));
    th_expect_error_(ctx, NULL, TFL_INVALID_ARGUMENT, "Conv2D", "strides must be >= 0", __FILE__,
                     __LINE__);

    /* backprop input */
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_input(ctx, NULL, w, dy, NULL), "Conv2DBackpropInput",
                      "input_shape is NULL");
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_input(ctx, TH_SHAPE(1, -5, 5, 3), w, dy, NULL),
                      "Conv2DBackpropInput", "input_shape (1, -5, 5, 3) has a negative dimension");
    TH_EXPECT_INVALID(
        ctx, tfl_conv2d_backprop_input(ctx, TH_SHAPE(1, 6, 5, 3), w, dy, NULL),
        "Conv2DBackpropInput",
        "dy shape (1, 3, 3, 4) does not match the output shape "
        "(1, 4, 3, 4) of input shape (1, 6, 5, 3), filter shape (3, 3, 3, 4) and these "
        "options");
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_input(ctx, TH_SHAPE(1, 5, 5, 2), w, dy, NULL),
                      "Conv2DBackpropInput",
                      "input depth 2 does not match the filter's input depth 3");
    TH_EXPECT_INVALID(ctx,
                      tfl_conv2d_backprop_input(ctx, TH_SHAPE(1, 5, 5, 3), w,
                                                tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(9, 4)), NULL),
                      "Conv2DBackpropInput",
                      "dy must be 4-dimensional (N, OH, OW, Cout), got shape "
                      "(9, 4)");
    TH_EXPECT_INVALID(ctx,
                      tfl_conv2d_backprop_input(ctx, TH_SHAPE(1, 5, 5, 3), w,
                                                tfl_zeros(ctx, TH_F64, 4, TH_SHAPE(1, 3, 3, 4)),
                                                NULL),
                      "Conv2DBackpropInput", "dtypes differ: filter is float32, dy is float64");
    /* backprop filter */
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_filter(ctx, x, NULL, dy, NULL),
                      "Conv2DBackpropFilter", "filter_shape is NULL");
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_filter(ctx, x, TH_SHAPE(2, 2, 3, 4), dy, NULL),
                      "Conv2DBackpropFilter",
                      "dy shape (1, 3, 3, 4) does not match the output shape "
                      "(1, 4, 4, 4) of input shape (1, 5, 5, 3), filter shape (2, 2, 3, 4)");
    TH_EXPECT_INVALID(ctx, tfl_conv2d_backprop_filter(ctx, x, TH_SHAPE(3, 3, 1, 4), dy, NULL),
                      "Conv2DBackpropFilter",
                      "input depth 3 does not match the filter's input depth "
                      "1: input shape (1, 5, 5, 3), filter shape (3, 3, 1, 4)");
    TH_EXPECT_INVALID(ctx,
                      tfl_conv2d_backprop_filter(ctx, x, TH_SHAPE(3, 3, 3, 4), dy,
                                                 &(tfl_conv2d_opts){{1, 1}, {1, 1}, 2}),
                      "Conv2DBackpropFilter", "padding 2 is neither");
    th_end(ctx);
}

static void test_pool_errors(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = tfl_zeros(ctx, TH_F32, 4, TH_SHAPE(1, 4, 4, 2));
    tfl_pool2d_opts ok = {{2, 2}, {0, 0}, TFL_PADDING_VALID};
    const char *names[2] = {"MaxPool", "AvgPool"};
    for (int k = 0; k < 2; k++) {
        tfl_tensor *(*fn)(tfl_ctx *, const tfl_tensor *, const tfl_pool2d_opts *) =
            k ? tfl_avg_pool2d : tfl_max_pool2d;
        TH_EXPECT_INVALID(ctx, fn(ctx, tfl_zeros(ctx, TH_F32, 2, TH_SHAPE(4, 4)), &ok), names[k],
                          "input must be 4-dimensional (N, H, W, C), got shape (4, 4)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, NULL), names[k],
                          "opts is NULL (the window size has no "
                          "default)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, &(tfl_pool2d_opts){{0, 2}, {0, 0}, 0}), names[k],
                          "ksize must be >= 1, got (0, 2)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, &(tfl_pool2d_opts){{2, -3}, {0, 0}, 0}), names[k],
                          "ksize must be >= 1, got (2, -3)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, &(tfl_pool2d_opts){{2, 2}, {-1, 2}, 0}), names[k],
                          "strides must be >= 0 (0 means the window size), got (-1, 2)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, &(tfl_pool2d_opts){{2, 2}, {0, 0}, (tfl_padding)-1}),
                          names[k],
                          "padding -1 is neither TFL_PADDING_VALID (0) nor "
                          "TFL_PADDING_SAME (1)");
        TH_EXPECT_INVALID(ctx, fn(ctx, x, &(tfl_pool2d_opts){{2, 5}, {0, 0}, 0}), names[k],
                          "computed output width would be 0 [input width 4, window width 5, stride "
                          "5, VALID padding]: the window does not fit in the input");
        TH_EXPECT_INVALID(ctx, fn(ctx, tfl_zeros(ctx, TH_I64, 4, TH_SHAPE(1, 4, 4, 2)), &ok),
                          names[k],
                          "dtype int64 is not supported; expected one of float16, "
                          "bfloat16, float32, float64");
        TH_EXPECT_INVALID(ctx, fn(ctx, NULL, &ok), names[k], "input 0 is NULL");
        /* a window larger than the input is fine under SAME (it is clipped) */
        TH_EXPECT(ctx,
                  fn(ctx, TH_T(ctx, TH_F32, (1, 1, 2, 1), (3, 1)),
                     &(tfl_pool2d_opts){{3, 3}, {1, 1}, TFL_PADDING_SAME}),
                  TH_F32, (1, 1, 2, 1), (k ? 2 : 3, k ? 2 : 3), 0);
    }
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_conv_ops_against_tf), TH_TEST(test_conv_gradients_against_tf),
        TH_TEST(test_pool_against_tf),     TH_TEST(test_max_pool_ties),
        TH_TEST(test_half_dtypes),         TH_TEST(test_empty),
        TH_TEST(test_views_and_defaults),  TH_TEST(test_conv_errors),
        TH_TEST(test_pool_errors),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
