/*
 * framework/cuda/tests/test_conv_emulated.c: the im2col + cuBLAS path of the GPU convolutions
 * (framework/cuda/cuda_conv.c, the file itself) run on the host against the CPU kernels, so
 * that its arithmetic is checked on machines without a GPU. cuda_conv.c is compiled into this
 * test with TFL_CUDA_CONV_EMULATED (no cuDNN) and its CUDA calls renamed to the host versions
 * below (tests/backend/CMakeLists.txt): cuBLAS's column-major gemm as a plain loop, the
 * im2col / col2im kernels as loops over conv_index.h's index functions (the ones k_conv.cu's
 * kernels call), device memory as host memory filled with NaN bytes (so a value read before
 * it is written shows), and the framework's internals it calls as stubs. The reference is
 * tfl_conv2d and its backprops on CPU:0 through the public API. Built twice: with the
 * default im2col cap, and with a cap of a few bytes (every chunk one output pixel), which
 * drives the chunk loops, the backprop filter's accumulation and col2im's row ranges.
 * What this does not cover: the kernels' launch geometry, the cuDNN path, the device itself.
 */
#include "conv_index.h"
#include "cuda_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

/* ---- the host versions of what cuda_conv.c calls ------------------------------------------- */

static int64_t n_gets, n_puts, largest_get;
static int n_errors;

const tfl_tensor *tfl__cuda_contiguous(const tfl__kcall *k, const tfl_tensor *t, tfl_tensor **tmp)
{
    (void)k;
    *tmp = NULL;
    return t; /* the test's tensors are contiguous */
}
tfl_status tfl__cuda_check(tfl__device *dev, int err, const char *what)
{
    (void)dev;
    if (err == 0) return TFL_OK;
    print_error("%s failed: %d\n", what, err);
    n_errors++;
    return TFL_INTERNAL;
}
tfl_status tfl__set_error(tfl_ctx *ctx, tfl_status code, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    n_errors++;
    return code;
}
void tfl__log(tfl_ctx *ctx, tfl_log_level level, const char *fmt, ...)
{
    (void)ctx, (void)level, (void)fmt;
}
tfl_status tfl__dev_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                           size_t bytes)
{
    (void)dev, (void)stream;
    memset(dst, value, bytes);
    return TFL_OK;
}
void *tfl__allocator_get(tfl__allocator *a, size_t bytes, size_t *got)
{
    (void)a;
    void *p = malloc(bytes);
    assert_non_null(p);
    memset(p, 0xff, bytes); /* NaN in every float32 and float64 */
    *got = bytes;
    n_gets++;
    if ((int64_t)bytes > largest_get) largest_get = (int64_t)bytes;
    return p;
}
void tfl__allocator_put(tfl__allocator *a, void *ptr, size_t got)
{
    (void)a, (void)got;
    free(ptr);
    n_puts++;
}
cudaError_t tfl_emu_set_device(int device)
{
    (void)device;
    return cudaSuccess;
}
const char *tfl_emu_status_string(cublasStatus_t s)
{
    (void)s;
    return "emulated cuBLAS error";
}

/* cuBLAS's column-major C (m x n) = alpha op(A) op(B) + beta C; C is not read when beta is 0 */
#define GEMM(NAME, T)                                                                              \
    cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,       \
                        int n, int k, const T *alpha, const T *A, int lda, const T *B, int ldb,    \
                        const T *beta, T *C, int ldc)                                              \
    {                                                                                              \
        (void)h;                                                                                   \
        if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) || lda < 1 ||             \
            ldb < (tb == CUBLAS_OP_N ? k : n) || ldb < 1 || ldc < m || ldc < 1)                    \
            return CUBLAS_STATUS_INVALID_VALUE;                                                    \
        for (int j = 0; j < n; j++)                                                                \
            for (int i = 0; i < m; i++) {                                                          \
                double s = 0;                                                                      \
                for (int l = 0; l < k; l++) {                                                      \
                    double a =                                                                     \
                        ta == CUBLAS_OP_N ? A[i + (int64_t)l * lda] : A[l + (int64_t)i * lda];     \
                    double b =                                                                     \
                        tb == CUBLAS_OP_N ? B[l + (int64_t)j * ldb] : B[j + (int64_t)l * ldb];     \
                    s += a * b;                                                                    \
                }                                                                                  \
                T *c = &C[i + (int64_t)j * ldc];                                                   \
                *c = (T)(*alpha * s + (*beta != 0 ? *beta * *c : 0));                              \
            }                                                                                      \
        return CUBLAS_STATUS_SUCCESS;                                                              \
    }
GEMM(tfl_emu_sgemm, float)
GEMM(tfl_emu_dgemm, double)

/* k_conv.cu's kernels, one thread doing every element in the kernels' order */
int tflcu_im2col(int dtype, const tflcu_conv *g, const void *x, int64_t m0, int64_t m1, void *col,
                 void *stream)
{
    (void)stream;
    int64_t n = (m1 - m0) * g->kh * g->kw * g->c;
    for (int64_t e = 0; e < n; e++) {
        int64_t src = tflcu_im2col_src(g, m0, e);
        if (dtype == TFL_DTYPE_FLOAT32)
            ((float *)col)[e] = src >= 0 ? ((const float *)x)[src] : 0.0f;
        else
            ((double *)col)[e] = src >= 0 ? ((const double *)x)[src] : 0.0;
    }
    return dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64 ? 0 : -1;
}
int tflcu_col2im(int dtype, const tflcu_conv *g, const void *dcol, int64_t m0, int64_t m1, void *dx,
                 int64_t e0, int64_t e1, void *stream)
{
    (void)stream;
    for (int64_t e = e0; e < e1 && m1 > m0; e++) {
        int64_t n, ih, iw, ci;
        tflcu_x_coords(g, e, &n, &ih, &iw, &ci);
        double s = 0;
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t src = tflcu_col2im_src(g, m0, m1, n, ih, iw, ci, i, j);
                if (src >= 0)
                    s += dtype == TFL_DTYPE_FLOAT32 ? ((const float *)dcol)[src]
                                                    : ((const double *)dcol)[src];
            }
        if (dtype == TFL_DTYPE_FLOAT32)
            ((float *)dx)[e] += (float)s;
        else
            ((double *)dx)[e] += s;
    }
    return dtype == TFL_DTYPE_FLOAT32 || dtype == TFL_DTYPE_FLOAT64 ? 0 : -1;
}

/* ---- the comparison ------------------------------------------------------------------------ */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static int64_t rnd(int64_t lo, int64_t hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* a tensor record over host memory, as the kernels see a device tensor */
typedef struct fake {
    tfl__storage st;
    tfl_tensor t;
} fake;

static void fake_init(fake *f, tfl_dtype dt, const int64_t *shape, void *data)
{
    memset(f, 0, sizeof *f);
    f->st.data = data;
    f->t.storage = &f->st;
    f->t.dtype = (uint8_t)dt;
    f->t.rank = 4;
    f->t.numel = 1;
    for (int d = 3; d >= 0; d--) {
        f->t.shape[d] = shape[d];
        f->t.strides[d] = f->t.numel;
        f->t.numel *= shape[d];
    }
}

static int64_t numel4(const int64_t *s)
{
    return s[0] * s[1] * s[2] * s[3];
}

/* n random values of dt (NaN bytes when !fill) */
static void *values(tfl_dtype dt, int64_t n, bool fill)
{
    size_t es = tfl_dtype_size(dt);
    char *p = malloc(es * (size_t)(n > 0 ? n : 1));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) {
        double v = (double)rnd(-(1 << 20), 1 << 20) / (1 << 19);
        if (!fill)
            memset(p + (size_t)i * es, 0xff, es);
        else if (dt == TFL_DTYPE_FLOAT32)
            ((float *)p)[i] = (float)v;
        else
            ((double *)p)[i] = v;
    }
    return p;
}

/* got (n values of dt) against the CPU's ref */
static void expect_close(const char *what, const char *desc, tfl_dtype dt, const void *got,
                         const tfl_tensor *ref, int64_t n)
{
    size_t es = tfl_dtype_size(dt);
    char *r = malloc(es * (size_t)(n > 0 ? n : 1));
    assert_non_null(r);
    assert_int_equal(tfl_tensor_to_host(ref, r, es * (size_t)n), TFL_OK);
    double tol = dt == TFL_DTYPE_FLOAT32 ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < n; i++) {
        double a = dt == TFL_DTYPE_FLOAT32 ? ((float *)r)[i] : ((double *)r)[i];
        double b = dt == TFL_DTYPE_FLOAT32 ? ((const float *)got)[i] : ((const double *)got)[i];
        if (!(fabs(a - b) <= tol * (1 + fabs(a)))) {
            print_error("%s of %s differs at %lld: CPU %.17g, emulated GPU path %.17g\n", what,
                        desc, (long long)i, a, b);
            fail();
        }
    }
    free(r);
}

/* TensorFlow's window rule (framework/ops/conv.c): output size and padding before */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, bool same, int64_t *pad)
{
    int64_t ke = (k - 1) * d + 1, o;
    *pad = 0;
    if (!same) return in >= ke ? (in - ke) / s + 1 : 0;
    o = in / s + (in % s != 0);
    int64_t total = (o - 1) * s + ke - in;
    *pad = total > 0 ? total / 2 : 0;
    return o;
}

/* One shape: the three kernels of cuda_conv.c against the CPU's; false when the shape has
 * no output (skipped). */
static bool check_shape(tfl_ctx *ctx, tfl_dtype dt, const int64_t xs[4], const int64_t fs[4],
                        int sh, int sw, int dh, int dw, bool same)
{
    int64_t pt, pl;
    int64_t oh = out_size(xs[1], fs[0], sh, dh, same, &pt);
    int64_t ow = out_size(xs[2], fs[1], sw, dw, same, &pl);
    if (oh <= 0 || ow <= 0) return false;
    const int64_t ys[4] = {xs[0], oh, ow, fs[3]};
    char desc[160];
    snprintf(desc, sizeof desc,
             "%s x (%lld, %lld, %lld, %lld) w (%lld, %lld, %lld, %lld) strides (%d, %d) "
             "dilations (%d, %d) %s",
             dt == TFL_DTYPE_FLOAT32 ? "float32" : "float64", (long long)xs[0], (long long)xs[1],
             (long long)xs[2], (long long)xs[3], (long long)fs[0], (long long)fs[1],
             (long long)fs[2], (long long)fs[3], sh, sw, dh, dw, same ? "SAME" : "VALID");
    int64_t nx = numel4(xs), nw = numel4(fs), ny = numel4(ys);
    void *x = values(dt, nx, true), *w = values(dt, nw, true), *dy = values(dt, ny, true);
    /* the CPU's results */
    tfl_frame_push(ctx);
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *tx = tfl_tensor_new(ctx, dt, 4, xs, x), *tw = tfl_tensor_new(ctx, dt, 4, fs, w);
    tfl_tensor *tdy = tfl_tensor_new(ctx, dt, 4, ys, dy);
    const tfl_conv2d_opts o = {{sh, sw}, {dh, dw}, same ? TFL_PADDING_SAME : TFL_PADDING_VALID};
    tfl_tensor *y = tfl_conv2d(ctx, tx, tw, &o);
    tfl_tensor *dx = tfl_conv2d_backprop_input(ctx, xs, tw, tdy, &o);
    tfl_tensor *dwt = tfl_conv2d_backprop_filter(ctx, tx, fs, tdy, &o);
    tfl_device_scope_pop(ctx);
    if (!y || !dx || !dwt) print_error("CPU: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(y);
    assert_non_null(dx);
    assert_non_null(dwt);
    assert_int_equal(tfl_tensor_shape(y)[1], oh);
    assert_int_equal(tfl_tensor_shape(y)[2], ow);
    /* the emulated GPU kernels, on the same attrs as the op builds */
    tfl__window_attrs a;
    memset(&a, 0, sizeof a);
    a.ksize[0] = fs[0], a.ksize[1] = fs[1];
    a.strides[0] = sh, a.strides[1] = sw;
    a.dilations[0] = dh, a.dilations[1] = dw;
    a.pad[0] = pt, a.pad[1] = pl;
    tfl__cuda_device cu;
    memset(&cu, 0, sizeof cu);
    snprintf(cu.base.name, sizeof cu.base.name, "GPU:0");
    fake fx, fw, fdy, fout;
    fake_init(&fx, dt, xs, x);
    fake_init(&fw, dt, fs, w);
    fake_init(&fdy, dt, ys, dy);
    int64_t gets = n_gets;
    /* forward */
    void *out = values(dt, ny, false);
    fake_init(&fout, dt, ys, out);
    const tfl_tensor *in_f[2] = {&fx.t, &fw.t};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_CONV2D, 2, in_f, &fout.t, &a};
    assert_int_equal(tfl__cuda_conv2d(&k), TFL_OK);
    expect_close("Conv2D", desc, dt, out, y, ny);
    free(out);
    /* backprop input */
    out = values(dt, nx, false);
    fake_init(&fout, dt, xs, out);
    memcpy(a.shape, xs, sizeof a.shape);
    const tfl_tensor *in_d[2] = {&fw.t, &fdy.t};
    k.op = TFL_OP_CONV2D_BACKPROP_INPUT, k.in = in_d;
    assert_int_equal(tfl__cuda_conv2d_backprop_input(&k), TFL_OK);
    expect_close("Conv2DBackpropInput", desc, dt, out, dx, nx);
    free(out);
    /* backprop filter */
    out = values(dt, nw, false);
    fake_init(&fout, dt, fs, out);
    memcpy(a.shape, fs, sizeof a.shape);
    const tfl_tensor *in_w[2] = {&fx.t, &fdy.t};
    k.op = TFL_OP_CONV2D_BACKPROP_FILTER, k.in = in_w;
    assert_int_equal(tfl__cuda_conv2d_backprop_filter(&k), TFL_OK);
    expect_close("Conv2DBackpropFilter", desc, dt, out, dwt, nw);
    free(out);
    /* a 1x1 stride-1 unpadded convolution needs no im2col buffer */
    bool direct = fs[0] == 1 && fs[1] == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0;
    if (direct) assert_int_equal(n_gets, gets);
    tfl_frame_pop(ctx);
    free(x);
    free(w);
    free(dy);
    return true;
}

static tfl_ctx *new_ctx(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    return ctx;
}

/* random shapes: strides and dilations 1..3, VALID and SAME (odd totals included), 1x1 */
static void test_random_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    int checked = 0;
    n_errors = 0;
    for (int it = 0; it < 160; it++) {
        tfl_dtype dt = it % 2 ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        int64_t xs[4] = {rnd(1, 3), rnd(1, 8), rnd(1, 8), rnd(1, 4)};
        int64_t fs[4] = {rnd(1, 4), rnd(1, 4), xs[3], rnd(1, 4)};
        int sh = (int)rnd(1, 3), sw = (int)rnd(1, 3), dh = (int)rnd(1, 3), dw = (int)rnd(1, 3);
        if (it % 8 == 0) fs[0] = fs[1] = 1, sh = sw = 1; /* the direct path */
        checked += check_shape(ctx, dt, xs, fs, sh, sw, dh, dw, rnd(0, 1) == 1);
    }
    assert_true(checked > 100);
    assert_int_equal(n_errors, 0);
    assert_int_equal(n_gets, n_puts); /* every workspace given back */
    tfl_ctx_free(ctx);
}

/* the shapes of tests/backend/backend_cases.c's convolution cases, and the extremes: one
 * output pixel, a filter as large as the image, the stride larger than the filter */
static void test_named_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    const tfl_dtype f32 = TFL_DTYPE_FLOAT32, f64 = TFL_DTYPE_FLOAT64;
    n_errors = 0;
    assert_true(
        check_shape(ctx, f32, (int64_t[]){1, 5, 5, 2}, (int64_t[]){3, 3, 2, 3}, 1, 1, 1, 1, true));
    assert_true(
        check_shape(ctx, f32, (int64_t[]){2, 7, 6, 3}, (int64_t[]){3, 2, 3, 4}, 2, 2, 1, 1, false));
    assert_true(
        check_shape(ctx, f32, (int64_t[]){2, 8, 8, 3}, (int64_t[]){3, 3, 3, 2}, 2, 2, 1, 1, true));
    assert_true(
        check_shape(ctx, f32, (int64_t[]){1, 6, 7, 2}, (int64_t[]){3, 3, 2, 3}, 1, 1, 2, 2, true));
    assert_true(
        check_shape(ctx, f64, (int64_t[]){2, 7, 9, 2}, (int64_t[]){2, 3, 2, 3}, 1, 2, 2, 1, false));
    assert_true(
        check_shape(ctx, f64, (int64_t[]){1, 3, 4, 4}, (int64_t[]){1, 1, 4, 2}, 1, 1, 1, 1, false));
    assert_true(
        check_shape(ctx, f64, (int64_t[]){2, 4, 5, 3}, (int64_t[]){4, 5, 3, 2}, 1, 1, 1, 1, false));
    assert_true(
        check_shape(ctx, f32, (int64_t[]){1, 9, 9, 1}, (int64_t[]){2, 2, 1, 1}, 4, 3, 1, 1, false));
    assert_true(
        check_shape(ctx, f32, (int64_t[]){3, 1, 1, 5}, (int64_t[]){3, 3, 5, 2}, 1, 1, 1, 1, true));
    assert_int_equal(n_errors, 0);
    assert_int_equal(n_gets, n_puts);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_named_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
