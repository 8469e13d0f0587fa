/*
 * framework/cuda/tests/test_pool_elems.cu: the GPU pooling kernels' per-element code
 * (framework/cuda/pool_elems.cuh), compiled by nvcc for the host, against the CPU's kernels
 * (framework/cpu/k_pool.c through tfl_max_pool2d, tfl_avg_pool2d and the gradient ops), bit
 * for bit. Without a GPU this checks everything of k_pool.cu but the launches and the
 * intrinsics: window clipping, SAME padding, strides larger than the window, ties (integer
 * inputs), NaNs and signed zeros, overlapping windows, the gathers' order of additions and
 * the divisor. Random geometries from a fixed generator, float32 and float64, a few large
 * enough for the CPU to run threaded; float16 and bfloat16 against the CPU's float32 path
 * between its conversions. Built only with the CUDA backend (it needs nvcc).
 *
 * The one allowed difference: MaxPoolGrad with disjoint windows (strides >= window) may give
 * +0.0 where the CPU's vectorized channels keep a dy of -0.0 (equal values; k_pool.cu's
 * header). Anywhere else a -0.0 / +0.0 difference fails.
 */
#include "host_test.h"

#include <tapeflow/tapeflow.h>

#include "pool_elems.cuh"

extern "C" {
/* framework/core_api/op_api.h (the gradient ops' entry points; the static library has them) */
tfl_tensor *tfl__max_pool_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts);
tfl_tensor *tfl__max_pool_grad_grad(tfl_ctx *ctx, const tfl_tensor *x, const tfl_tensor *g,
                                    const tfl_pool2d_opts *opts);
tfl_tensor *tfl__avg_pool_grad(tfl_ctx *ctx, const int64_t input_shape[4], const tfl_tensor *dy,
                               const tfl_pool2d_opts *opts);
}

using namespace tflcu_pool_elems;

/* one axis by TensorFlow's rules (ops/conv.c's window_axis): the output size and the padding
 * before */
static void axis(int64_t in, int64_t k, int64_t s, bool same, int64_t *o, int64_t *pad)
{
    if (!same) {
        *o = in >= k ? (in - k) / s + 1 : 0;
        *pad = 0;
    } else {
        *o = in / s + (in % s != 0);
        int64_t t = (*o - 1) * s + k - in;
        *pad = t > 0 ? t / 2 : 0;
    }
}

typedef struct {
    int checked;     /* values compared */
    int zero_sign;   /* -0.0 vs +0.0 where allowed */
    char first[512]; /* the first failure, or "" */
} tally;

/* the dtype of each element type */
template <typename T> static tfl_dtype dtype_of(void);
template <> tfl_dtype dtype_of<float>(void) { return TFL_DTYPE_FLOAT32; }
template <> tfl_dtype dtype_of<double>(void) { return TFL_DTYPE_FLOAT64; }
template <> tfl_dtype dtype_of<__half>(void) { return TFL_DTYPE_FLOAT16; }
template <> tfl_dtype dtype_of<__nv_bfloat16>(void) { return TFL_DTYPE_BFLOAT16; }

/* got against the CPU op's result, bit for bit (any NaN equals any NaN; -0.0 for +0.0 only
 * where zero_sign_ok) */
template <typename T>
static void compare(tally *t, const char *what, const char *geo, tfl_tensor *ref, const T *got,
                    int64_t n, bool zero_sign_ok)
{
    if (t->first[0]) return;
    if (!ref || tfl_tensor_numel(ref) != n) {
        snprintf(t->first, sizeof t->first, "%s %s: the CPU op failed or has another size", what,
                 geo);
        return;
    }
    T *cpu = (T *)malloc(sizeof(T) * (size_t)(n ? n : 1));
    assert_int_equal(tfl_tensor_to_host(ref, cpu, sizeof(T) * (size_t)n), TFL_OK);
    for (int64_t i = 0; i < n && !t->first[0]; i++) {
        t->checked++;
        double a = (double)Wide<T>::of(cpu[i]), b = (double)Wide<T>::of(got[i]);
        if (!memcmp(&cpu[i], &got[i], sizeof(T)) || (std::isnan(a) && std::isnan(b))) continue;
        if (zero_sign_ok && a == 0 && b == 0) {
            t->zero_sign++;
            continue;
        }
        snprintf(t->first, sizeof t->first, "%s %s [%lld]: cpu %.17g, kernel %.17g", what, geo,
                 (long long)i, a, b);
    }
    free(cpu);
}

/* values: 0 uniform in (-2, 2); 1 integers in [0, 3) (ties); 2 ties, NaNs and signed zeros.
 * float16 and bfloat16 (T = __half, __nv_bfloat16): the values rounded to T, the element
 * functions' float32 results rounded once, against the CPU's op on the 16-bit tensor (its
 * float32 kernel between two conversions). */
template <typename T>
static void run(tfl_ctx *ctx, tally *t, int64_t N, int64_t H, int64_t W, int64_t C, int kh, int kw,
                int sh, int sw, bool same, int mode)
{
    typedef typename Wide<T>::type A;
    const tfl_dtype dt = dtype_of<T>();
    int64_t oh, ow, pt, pl;
    axis(H, kh, sh, same, &oh, &pt);
    axis(W, kw, sw, same, &ow, &pl);
    if (oh <= 0 || ow <= 0) return;
    const tflcu_pool g = {N, H, W, C, kh, kw, oh, ow, sh, sw, pt, pl};
    const int64_t nin = N * H * W * C, nout = N * oh * ow * C;
    T *x = (T *)malloc(sizeof(T) * (size_t)nin), *gg = (T *)malloc(sizeof(T) * (size_t)nin);
    T *dy = (T *)malloc(sizeof(T) * (size_t)nout);
    T *y = (T *)malloc(sizeof(T) * (size_t)nout), *dx = (T *)malloc(sizeof(T) * (size_t)nin);
    int64_t *arg = (int64_t *)malloc(sizeof(int64_t) * (size_t)nout);
    for (int64_t i = 0; i < nin; i++) {
        double u = unit();
        A v = mode == 0   ? (A)(4 * u - 2)
              : mode == 1 ? (A)(int)(3 * u)
              : u < 0.1   ? (A)NAN
              : u < 0.3   ? (A)-0.0
              : u < 0.5   ? (A)0.0
                          : (A)(int)(3 * u);
        x[i] = Wide<T>::narrow(v);
        gg[i] = Wide<T>::narrow((A)(4 * unit() - 2));
    }
    for (int64_t i = 0; i < nout; i++)
        dy[i] = Wide<T>::narrow(unit() < 0.05 ? (A)-0.0 : (A)(4 * unit() - 2));
    char geo[160];
    snprintf(geo, sizeof geo, "(%s, x %lldx%lldx%lldx%lld, window %dx%d, strides %dx%d, %s, %s)",
             tfl_dtype_name(dt), (long long)N, (long long)H, (long long)W, (long long)C, kh, kw, sh,
             sw, same ? "SAME" : "VALID",
             mode == 0   ? "uniform"
             : mode == 1 ? "ties"
                         : "ties, NaNs, signed zeros");
    const int64_t xs[4] = {N, H, W, C}, ys[4] = {N, oh, ow, C};
    const tfl_pool2d_opts o = {{kh, kw}, {sh, sw}, same ? TFL_PADDING_SAME : TFL_PADDING_VALID};
    tfl_frame_push(ctx);
    tfl_tensor *tx = tfl_tensor_new(ctx, dt, 4, xs, x);
    tfl_tensor *tdy = tfl_tensor_new(ctx, dt, 4, ys, dy);
    tfl_tensor *tgg = tfl_tensor_new(ctx, dt, 4, xs, gg);
    for (int64_t e = 0; e < nout; e++)
        y[e] = Wide<T>::narrow(max_pool_at(g, x, e));
    compare(t, "MaxPool", geo, tfl_max_pool2d(ctx, tx, &o), y, nout, false);
    for (int64_t e = 0; e < nout; e++)
        y[e] = Wide<T>::narrow(avg_pool_at(g, x, e));
    compare(t, "AvgPool", geo, tfl_avg_pool2d(ctx, tx, &o), y, nout, false);
    for (int64_t e = 0; e < nout; e++)
        y[e] = Wide<T>::narrow(max_pool_grad_grad_at(g, x, gg, e));
    compare(t, "MaxPoolGradGrad", geo, tfl__max_pool_grad_grad(ctx, tx, tgg, &o), y, nout, false);
    for (int64_t e = 0; e < nout; e++)
        arg[e] = argmax_at(g, x, e);
    for (int64_t e = 0; e < nin; e++)
        dx[e] = Wide<T>::narrow(max_pool_grad_at(g, arg, dy, e));
    compare(t, "MaxPoolGrad", geo, tfl__max_pool_grad(ctx, tx, tdy, &o), dx, nin,
            sh >= kh && sw >= kw);
    for (int64_t e = 0; e < nin; e++)
        dx[e] = Wide<T>::narrow(avg_pool_grad_at(g, dy, e));
    compare(t, "AvgPoolGrad", geo, tfl__avg_pool_grad(ctx, xs, tdy, &o), dx, nin, false);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_frame_pop(ctx);
    free(x);
    free(gg);
    free(dy);
    free(y);
    free(dx);
    free(arg);
}

static void check(tally *t)
{
    if (t->first[0]) print_message("%s\n", t->first);
    assert_string_equal(t->first, "");
    assert_true(t->checked > 0);
}

/* random geometries: windows 1..4, strides 1..4 (often larger than the window), both paddings,
 * images from 1x1, channels across the CPU's 16- and 8-lane vectors and their tails; the odd
 * iterations in A, the even ones in B */
template <typename A, typename B> static void random_geometries(tfl_ctx *ctx, tally *t, int iters)
{
    static const int64_t cs[5] = {1, 3, 16, 19, 40};
    for (int it = 0; it < iters && !t->first[0]; it++) {
        int64_t N = 1 + (int)(unit() * 3), H = 1 + (int)(unit() * 9), W = 1 + (int)(unit() * 9);
        int64_t C = cs[(int)(unit() * 5)];
        int kh = 1 + (int)(unit() * 4), kw = 1 + (int)(unit() * 4);
        int sh = 1 + (int)(unit() * 4), sw = 1 + (int)(unit() * 4);
        bool same = unit() < 0.5;
        int mode = (int)(unit() * 3);
        if (it % 2)
            run<A>(ctx, t, N, H, W, C, kh, kw, sh, sw, same, mode);
        else
            run<B>(ctx, t, N, H, W, C, kh, kw, sh, sw, same, mode);
    }
}

static void test_random_geometries(void **state)
{
    (void)state;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    tally t = {0, 0, ""};
    random_geometries<float, double>(ctx, &t, 300);
    check(&t);
    tfl_ctx_free(ctx);
}

/* float16 and bfloat16: random geometries as above, and big_cnn's first pool */
static void test_16_bit(void **state)
{
    (void)state;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    tally t = {0, 0, ""};
    random_geometries<__half, __nv_bfloat16>(ctx, &t, 200);
    run<__nv_bfloat16>(ctx, &t, 2, 28, 28, 64, 2, 2, 2, 2, false, 0);
    check(&t);
    tfl_ctx_free(ctx);
}

/* images big enough for the CPU's kernels to split rows, images and channel blocks over
 * threads (OMP_NUM_THREADS=2 in ctest) */
static void test_threaded_sizes(void **state)
{
    (void)state;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    tally t = {0, 0, ""};
    run<float>(ctx, &t, 2, 40, 40, 64, 3, 3, 2, 2, true, 1);
    run<double>(ctx, &t, 1, 48, 40, 24, 3, 3, 1, 1, true, 0);
    run<float>(ctx, &t, 1, 64, 64, 48, 2, 2, 2, 2, false, 2);
    check(&t);
    tfl_ctx_free(ctx);
}

/* hand-computed: a tie goes to the first maximum, a NaN first position blocks the gradient,
 * AvgPool divides by the positions inside the image */
static void test_known_values(void **state)
{
    (void)state;
    /* one image 2x3, one channel; window 2x2, strides 1, SAME: pad 0 before, windows
     * clipped at the right and bottom */
    const float x[6] = {1, 3, 3, 2, 3, 0};
    const tflcu_pool g = {1, 2, 3, 1, 2, 2, 2, 3, 1, 1, 0, 0};
    assert_int_equal(argmax_at(g, x, 0), 1);   /* {1, 3, 2, 3}: the first 3 */
    assert_int_equal(argmax_at(g, x, 1), 1);   /* {3, 3, 3, 0} */
    assert_int_equal(argmax_at(g, x, 2), 2);   /* {3, 0} (clipped) */
    assert_int_equal(argmax_at(g, x, 3), 4);   /* row 1 only (clipped): {2, 3} */
    assert_true(avg_pool_at(g, x, 2) == 1.5f); /* (3 + 0) / 2 */
    assert_true(avg_pool_at(g, x, 5) == 0.0f); /* {0} */
    const float xn[4] = {NAN, 5, 1, 2};
    const tflcu_pool g1 = {1, 2, 2, 1, 2, 2, 1, 1, 2, 2, 0, 0};
    assert_int_equal(argmax_at(g1, xn, 0), -1);
    assert_true(std::isnan(max_pool_at(g1, xn, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_geometries),
        cmocka_unit_test(test_threaded_sizes),
        cmocka_unit_test(test_16_bit),
        cmocka_unit_test(test_known_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
