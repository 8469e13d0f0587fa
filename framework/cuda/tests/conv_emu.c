/*
 * framework/cuda/tests/conv_emu.c: the host stand-ins the emulated convolution tests share
 * (conv_emu.h): the framework internals cuda_conv.c and cudnn_conv.c call, cuBLAS's gemm and
 * geam as loops, k_conv.cu's kernels as loops over conv_index.h, and the comparison of the
 * three kernels with the CPU's on one shape.
 */
#include "conv_emu.h"

#include "conv_index.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

/* ---- the host versions of what cuda_conv.c calls ------------------------------------------- */

int64_t emu_gets, emu_puts, emu_largest_get;
int emu_errors, emu_log_info, emu_log_warning, emu_host_allocs, emu_host_frees;
int emu_refuse_host;
char emu_last_log[1024];
char emu_log_all[8192];

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
    emu_errors++;
    return TFL_INTERNAL;
}
tfl_status tfl__set_error(tfl_ctx *ctx, tfl_status code, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    emu_errors++;
    return code;
}
void tfl__log(tfl_ctx *ctx, tfl_log_level level, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(emu_last_log, sizeof emu_last_log, fmt, ap);
    va_end(ap);
    size_t used = strlen(emu_log_all);
    snprintf(emu_log_all + used, sizeof emu_log_all - used, "%s\n", emu_last_log);
    if (level == TFL_LOG_INFO) emu_log_info++;
    if (level == TFL_LOG_WARNING) emu_log_warning++;
}
void *tfl__host_alloc(tfl_ctx *ctx, size_t bytes, size_t align)
{
    (void)ctx, (void)align;
    if (emu_refuse_host > 0) return NULL;
    emu_host_allocs++;
    return malloc(bytes);
}
void tfl__host_free(tfl_ctx *ctx, void *ptr)
{
    (void)ctx;
    if (ptr) emu_host_frees++;
    free(ptr);
}
cudaError_t tfl_emu_get_last_error(void)
{
    return cudaSuccess;
}
tfl_status tfl__dev_memset(tfl__device *dev, tfl__stream *stream, void *dst, int value,
                           size_t bytes)
{
    (void)dev, (void)stream;
    memset(dst, value, bytes);
    return TFL_OK;
}
int emu_refuse_device;
void *tfl__allocator_get(tfl__allocator *a, size_t bytes, size_t *got)
{
    (void)a;
    if (emu_refuse_device > 0) { /* as the allocator without memory (its error: the caller's) */
        emu_refuse_device--;
        return NULL;
    }
    void *p = malloc(bytes);
    assert_non_null(p);
    memset(p, 0xff, bytes); /* NaN in every float32 and float64 */
    *got = bytes;
    emu_gets++;
    if ((int64_t)bytes > emu_largest_get) emu_largest_get = (int64_t)bytes;
    return p;
}
void tfl__allocator_put(tfl__allocator *a, void *ptr, size_t got)
{
    (void)a, (void)got;
    free(ptr);
    emu_puts++;
}
cudaError_t tfl_emu_set_device(int device)
{
    (void)device;
    return cudaSuccess;
}
int emu_blas_math = CUBLAS_DEFAULT_MATH, emu_blas_math_sets;
cublasStatus_t tfl_emu_set_math_mode(cublasHandle_t h, cublasMath_t mode)
{
    (void)h;
    emu_blas_math = (int)mode;
    emu_blas_math_sets++;
    return CUBLAS_STATUS_SUCCESS;
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

/* cuBLAS's column-major C (m x n) = alpha op(A) + beta op(B); B is not read when beta is 0 */
#define GEAM(NAME, T)                                                                              \
    cublasStatus_t NAME(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,       \
                        int n, const T *alpha, const T *A, int lda, const T *beta, const T *B,     \
                        int ldb, T *C, int ldc)                                                    \
    {                                                                                              \
        (void)h;                                                                                   \
        if (m < 0 || n < 0 || lda < (ta == CUBLAS_OP_N ? m : n) || lda < 1 ||                      \
            ldb < (tb == CUBLAS_OP_N ? m : n) || ldb < 1 || ldc < m || ldc < 1 ||                  \
            (B == C && (ldb != ldc || tb != CUBLAS_OP_N)) || A == C)                               \
            return CUBLAS_STATUS_INVALID_VALUE;                                                    \
        for (int j = 0; j < n; j++)                                                                \
            for (int i = 0; i < m; i++) {                                                          \
                double a = ta == CUBLAS_OP_N ? A[i + (int64_t)j * lda] : A[j + (int64_t)i * lda];  \
                double b = *beta == 0          ? 0                                                 \
                           : tb == CUBLAS_OP_N ? B[i + (int64_t)j * ldb]                           \
                                               : B[j + (int64_t)i * ldb];                          \
                C[i + (int64_t)j * ldc] = (T)(*alpha * a + *beta * b);                             \
            }                                                                                      \
        return CUBLAS_STATUS_SUCCESS;                                                              \
    }
GEAM(tfl_emu_sgeam, float)
GEAM(tfl_emu_dgeam, double)

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

/* k_elementwise.cu's strided copy (cudnn_conv.c's transpose of 16-bit filters): ptr[0] from
 * ptr[1], element by element in row-major order of the shape */
int tflcu_copy(int esize, const tflcu_iter *it, void *stream)
{
    (void)stream;
    for (int64_t i = 0; i < it->numel; i++) {
        int64_t rest = i, off[2] = {0, 0};
        for (int d = it->rank - 1; d >= 0; d--) {
            int64_t c = rest % it->shape[d];
            rest /= it->shape[d];
            off[0] += c * it->strides[0][d];
            off[1] += c * it->strides[1][d];
        }
        memcpy((char *)it->ptr[0] + off[0] * esize, (const char *)it->ptr[1] + off[1] * esize,
               (size_t)esize);
    }
    return 0;
}

/* ---- the comparison ------------------------------------------------------------------------ */

static uint64_t emu_rng = 0x2545f4914f6cdd1dull;
int64_t emu_rnd(int64_t lo, int64_t hi)
{
    emu_rng ^= emu_rng << 13;
    emu_rng ^= emu_rng >> 7;
    emu_rng ^= emu_rng << 17;
    return lo + (int64_t)(emu_rng % (uint64_t)(hi - lo + 1));
}

/* a tensor record over host memory, as the kernels see a device tensor */

void emu_fake_init(emu_fake *f, tfl_dtype dt, const int64_t *shape, void *data)
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

int64_t emu_numel4(const int64_t *s)
{
    return s[0] * s[1] * s[2] * s[3];
}

/* n random values of dt (NaN bytes when !fill) */
uint16_t emu_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float emu_from_bf16(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* value i of an array of dt (float32, float64 or bfloat16) */
static double value_at(tfl_dtype dt, const void *p, int64_t i)
{
    return dt == TFL_DTYPE_FLOAT32    ? ((const float *)p)[i]
           : dt == TFL_DTYPE_BFLOAT16 ? emu_from_bf16(((const uint16_t *)p)[i])
                                      : ((const double *)p)[i];
}

void *emu_values(tfl_dtype dt, int64_t n, bool fill)
{
    size_t es = tfl_dtype_size(dt);
    char *p = malloc(es * (size_t)(n > 0 ? n : 1));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) {
        double v = (double)emu_rnd(-(1 << 20), 1 << 20) / (1 << 19);
        if (!fill)
            memset(p + (size_t)i * es, 0xff, es);
        else if (dt == TFL_DTYPE_FLOAT32)
            ((float *)p)[i] = (float)v;
        else if (dt == TFL_DTYPE_BFLOAT16)
            ((uint16_t *)p)[i] = emu_bf16((float)v);
        else
            ((double *)p)[i] = v;
    }
    return p;
}

/* got (n values of dt) against the CPU's ref */
void emu_expect_close(const char *what, const char *desc, tfl_dtype dt, const void *got,
                      const tfl_tensor *ref, int64_t n)
{
    size_t es = tfl_dtype_size(dt);
    char *r = malloc(es * (size_t)(n > 0 ? n : 1));
    assert_non_null(r);
    assert_int_equal(tfl_tensor_to_host(ref, r, es * (size_t)n), TFL_OK);
    double tol = dt == TFL_DTYPE_FLOAT32 ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < n; i++) {
        double a = value_at(dt, r, i), b = value_at(dt, got, i);
        bool ok = dt == TFL_DTYPE_BFLOAT16 ? fabs(a - b) <= 0x1p-7 * fabs(a) + 1e-3
                                           : fabs(a - b) <= tol * (1 + fabs(a));
        if (!ok) {
            print_error("%s of %s differs at %lld: CPU %.17g, emulated GPU path %.17g\n", what,
                        desc, (long long)i, a, b);
            fail();
        }
    }
    free(r);
}

/* TensorFlow's window rule (framework/ops/conv.c): output size and padding before */
int64_t emu_out_size(int64_t in, int64_t k, int64_t s, int64_t d, bool same, int64_t *pad)
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
bool emu_check_shape(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dt, const int64_t xs[4],
                     const int64_t fs[4], int sh, int sw, int dh, int dw, bool same)
{
    int64_t pt, pl;
    int64_t oh = emu_out_size(xs[1], fs[0], sh, dh, same, &pt);
    int64_t ow = emu_out_size(xs[2], fs[1], sw, dw, same, &pl);
    if (oh <= 0 || ow <= 0) return false;
    const int64_t ys[4] = {xs[0], oh, ow, fs[3]};
    char desc[160];
    snprintf(desc, sizeof desc,
             "%s x (%lld, %lld, %lld, %lld) w (%lld, %lld, %lld, %lld) strides (%d, %d) "
             "dilations (%d, %d) %s",
             tfl_dtype_name(dt), (long long)xs[0], (long long)xs[1],
             (long long)xs[2], (long long)xs[3], (long long)fs[0], (long long)fs[1],
             (long long)fs[2], (long long)fs[3], sh, sw, dh, dw, same ? "SAME" : "VALID");
    int64_t nx = emu_numel4(xs), nw = emu_numel4(fs), ny = emu_numel4(ys);
    void *x = emu_values(dt, nx, true), *w = emu_values(dt, nw, true),
         *dy = emu_values(dt, ny, true);
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
    emu_fake fx, fw, fdy, fout;
    emu_fake_init(&fx, dt, xs, x);
    emu_fake_init(&fw, dt, fs, w);
    emu_fake_init(&fdy, dt, ys, dy);
    int64_t gets = emu_gets;
    /* forward */
    void *out = emu_values(dt, ny, false);
    emu_fake_init(&fout, dt, ys, out);
    const tfl_tensor *in_f[2] = {&fx.t, &fw.t};
    tfl__kcall k = {ctx, dev, TFL_OP_CONV2D, 2, in_f, &fout.t, &a};
    assert_int_equal(tfl__cuda_conv2d(&k), TFL_OK);
    emu_expect_close("Conv2D", desc, dt, out, y, ny);
    free(out);
    /* backprop input */
    out = emu_values(dt, nx, false);
    emu_fake_init(&fout, dt, xs, out);
    memcpy(a.shape, xs, sizeof a.shape);
    const tfl_tensor *in_d[2] = {&fw.t, &fdy.t};
    k.op = TFL_OP_CONV2D_BACKPROP_INPUT, k.in = in_d;
    assert_int_equal(tfl__cuda_conv2d_backprop_input(&k), TFL_OK);
    emu_expect_close("Conv2DBackpropInput", desc, dt, out, dx, nx);
    free(out);
    /* backprop filter */
    out = emu_values(dt, nw, false);
    emu_fake_init(&fout, dt, fs, out);
    memcpy(a.shape, fs, sizeof a.shape);
    const tfl_tensor *in_w[2] = {&fx.t, &fdy.t};
    k.op = TFL_OP_CONV2D_BACKPROP_FILTER, k.in = in_w;
    assert_int_equal(tfl__cuda_conv2d_backprop_filter(&k), TFL_OK);
    emu_expect_close("Conv2DBackpropFilter", desc, dt, out, dwt, nw);
    free(out);
    /* a 1x1 stride-1 unpadded convolution needs no im2col buffer */
    bool direct = fs[0] == 1 && fs[1] == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0;
#ifdef TFL_CUDA_CONV_EMULATED
    if (direct) assert_int_equal(emu_gets, gets);
#else
    (void)direct, (void)gets;
#endif
    tfl_frame_pop(ctx);
    free(x);
    free(w);
    free(dy);
    return true;
}
