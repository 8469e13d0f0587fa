/* test_ops_helpers.h: header-only helpers shared by the op tests (tensors from literal
 * arrays, read-back, tolerant comparison, error checks, per-test context fixtures). */
#ifndef TFL_TEST_OPS_HELPERS_H
#define TFL_TEST_OPS_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#define TH_PI 3.14159265358979323846

/* Dtype shorthands. */
#define TH_BOOL TFL_DTYPE_BOOL
#define TH_I32 TFL_DTYPE_INT32
#define TH_I64 TFL_DTYPE_INT64
#define TH_F16 TFL_DTYPE_FLOAT16
#define TH_BF16 TFL_DTYPE_BFLOAT16
#define TH_F32 TFL_DTYPE_FLOAT32
#define TH_F64 TFL_DTYPE_FLOAT64
#define TH_C64 TFL_DTYPE_COMPLEX64
#define TH_C128 TFL_DTYPE_COMPLEX128

/* Literal arrays: TH_SHAPE(2, 3), TH_VALS(1, 2, 3). */
#define TH_SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define TH_VALS(...) ((const double[]){__VA_ARGS__})
#define TH_AXES(...) ((const int[]){__VA_ARGS__})
#define TH_RANK_OF(shp) ((int)(sizeof(TH_SHAPE shp) / sizeof(int64_t)))
#define TH_COUNT_OF(vals) (sizeof(TH_VALS vals) / sizeof(double))

/* ---- float16 / bfloat16 bit conversions (independent of the library) ---------------- */

static inline uint32_t th_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float th_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float32 -> IEEE binary16, round to nearest even; NaN stays NaN, overflow gives inf. */
static inline uint16_t th_f32_to_f16(float f)
{
    uint32_t x = th_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xFFu;
    uint32_t man = x & 0x7FFFFFu;
    if (exp == 0xFFu) return (uint16_t)(sign | 0x7C00u | (man ? 0x200u : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}

static inline float th_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1Fu) return th_bits_f32(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    return th_bits_f32(sign | ((exp - 15u + 127u) << 23) | (man << 13));
}

/* float32 -> bfloat16, round to nearest even; NaN stays NaN. */
static inline uint16_t th_f32_to_bf16(float f)
{
    uint32_t x = th_f32_bits(f);
    if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7FFFu + lsb;
    return (uint16_t)(x >> 16);
}

static inline float th_bf16_to_f32(uint16_t h)
{
    return th_bits_f32((uint32_t)h << 16);
}

/* ---- element access in host buffers --------------------------------------------------- */

static inline void th_store(tfl_dtype dt, void *buf, size_t i, double re, double im)
{
    switch (dt) {
    case TFL_DTYPE_BOOL: ((bool *)buf)[i] = re != 0.0; break;
    case TFL_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)re; break;
    case TFL_DTYPE_INT64: ((int64_t *)buf)[i] = (int64_t)re; break;
    case TFL_DTYPE_FLOAT16: ((uint16_t *)buf)[i] = th_f32_to_f16((float)re); break;
    case TFL_DTYPE_BFLOAT16: ((uint16_t *)buf)[i] = th_f32_to_bf16((float)re); break;
    case TFL_DTYPE_FLOAT32: ((float *)buf)[i] = (float)re; break;
    case TFL_DTYPE_FLOAT64: ((double *)buf)[i] = re; break;
    case TFL_DTYPE_COMPLEX64:
        ((float *)buf)[2 * i] = (float)re;
        ((float *)buf)[2 * i + 1] = (float)im;
        break;
    case TFL_DTYPE_COMPLEX128:
        ((double *)buf)[2 * i] = re;
        ((double *)buf)[2 * i + 1] = im;
        break;
    default: break;
    }
}

static inline double th_load(tfl_dtype dt, const void *buf, size_t i, double *im)
{
    double re = 0.0, imv = 0.0;
    switch (dt) {
    case TFL_DTYPE_BOOL: {
        uint8_t b = ((const uint8_t *)buf)[i];
        re = (double)b; /* raw byte: true must be stored as 1 */
        break;
    }
    case TFL_DTYPE_INT32: re = (double)((const int32_t *)buf)[i]; break;
    case TFL_DTYPE_INT64: re = (double)((const int64_t *)buf)[i]; break;
    case TFL_DTYPE_FLOAT16: re = th_f16_to_f32(((const uint16_t *)buf)[i]); break;
    case TFL_DTYPE_BFLOAT16: re = th_bf16_to_f32(((const uint16_t *)buf)[i]); break;
    case TFL_DTYPE_FLOAT32: re = ((const float *)buf)[i]; break;
    case TFL_DTYPE_FLOAT64: re = ((const double *)buf)[i]; break;
    case TFL_DTYPE_COMPLEX64:
        re = ((const float *)buf)[2 * i];
        imv = ((const float *)buf)[2 * i + 1];
        break;
    case TFL_DTYPE_COMPLEX128:
        re = ((const double *)buf)[2 * i];
        imv = ((const double *)buf)[2 * i + 1];
        break;
    default: break;
    }
    if (im) *im = imv;
    return re;
}

static inline int64_t th_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* ---- making tensors ---------------------------------------------------------------------- */

/*
 * A tensor of `dt` from doubles. pairs: vals holds (re, im) pairs (complex dtypes);
 * otherwise one value per element (complex dtypes get imaginary part 0).
 */
static inline tfl_tensor *th_tensor_(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape,
                                     const double *vals, size_t nvals, bool pairs,
                                     const char *file, int line)
{
    int64_t n = th_numel(rank, shape);
    size_t per = pairs ? 2u : 1u;
    if ((int64_t)(nvals / per) != n || nvals % per != 0) {
        print_error("th_tensor: %zu values for %lld elements\n", nvals, (long long)n);
        _fail(file, line);
    }
    size_t bytes = (size_t)n * tfl_dtype_size(dt);
    void *buf = calloc(bytes ? bytes : 1u, 1);
    _assert_true(cast_ptr_to_largest_integral_type(buf), "calloc", file, line);
    for (int64_t i = 0; i < n; i++)
        th_store(dt, buf, (size_t)i, vals[(size_t)i * per], pairs ? vals[(size_t)i * per + 1] : 0.0);
    tfl_tensor *t = tfl_tensor_new(ctx, dt, rank, shape, buf);
    free(buf);
    if (!t) {
        print_error("tfl_tensor_new failed: %s\n", tfl_ctx_error(ctx).message);
        _fail(file, line);
    }
    return t;
}

/* A tensor from an array of doubles in a variable (shape as a pointer). */
#define TH_TENSOR_N(ctx, dt, rank, shape, vals, n) \
    th_tensor_((ctx), (dt), (rank), (shape), (vals), (n), false, __FILE__, __LINE__)
/* TH_T(ctx, TH_F32, (2, 3), (1, 2, 3, 4, 5, 6)) */
#define TH_T(ctx, dt, shp, vals)                                                            \
    th_tensor_((ctx), (dt), TH_RANK_OF(shp), TH_SHAPE shp, TH_VALS vals, TH_COUNT_OF(vals), \
               false, __FILE__, __LINE__)
/* Complex: values as (re, im) pairs. */
#define TH_TC(ctx, dt, shp, vals)                                                           \
    th_tensor_((ctx), (dt), TH_RANK_OF(shp), TH_SHAPE shp, TH_VALS vals, TH_COUNT_OF(vals), \
               true, __FILE__, __LINE__)
/* Scalars (rank 0). */
#define TH_T0(ctx, dt, v) \
    th_tensor_((ctx), (dt), 0, NULL, TH_VALS(v), 1, false, __FILE__, __LINE__)
#define TH_TC0(ctx, dt, re, im) \
    th_tensor_((ctx), (dt), 0, NULL, TH_VALS(re, im), 2, true, __FILE__, __LINE__)

/* ---- reading back ----------------------------------------------------------------------- */

/* Copies t's elements out as doubles (real parts; imaginary parts to `im` if not NULL). */
static inline double *th_read_(const tfl_tensor *t, double **im, const char *file, int line)
{
    _assert_true(cast_ptr_to_largest_integral_type(t), "tensor is not NULL", file, line);
    tfl_dtype dt = tfl_tensor_dtype(t);
    int64_t n = tfl_tensor_numel(t);
    size_t bytes = (size_t)n * tfl_dtype_size(dt);
    void *buf = malloc(bytes ? bytes : 1u);
    double *re = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *imv = malloc(sizeof(double) * (size_t)(n ? n : 1));
    _assert_true(buf && re && imv, "malloc", file, line);
    tfl_status st = tfl_tensor_to_host(t, buf, bytes);
    if (st != TFL_OK) {
        free(buf);
        free(re);
        free(imv);
        print_error("tfl_tensor_to_host: %s\n", tfl_status_name(st));
        _fail(file, line);
    }
    for (int64_t i = 0; i < n; i++) re[i] = th_load(dt, buf, (size_t)i, &imv[i]);
    free(buf);
    if (im)
        *im = imv;
    else
        free(imv);
    return re;
}
#define TH_READ(t) th_read_((t), NULL, __FILE__, __LINE__)

static inline bool th_close(double got, double want, double tol)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    if (isnan(got) || isinf(got)) return false;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

static inline void th_format_shape(char *buf, size_t size, int rank, const int64_t *shape)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, size - used, "(");
    for (int i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld",
                                 (long long)shape[i]);
    if (used < size) used += (size_t)snprintf(buf + used, size - used, rank == 1 ? ",)" : ")");
}

/*
 * Asserts t is not NULL and has dtype `dt`, shape `shape` and values `vals` (pairs for
 * complex when `pairs`; otherwise imaginary parts must be 0), each within
 * tol * max(1, |want|) (NaN matches NaN, inf must be exact).
 */
static inline void th_expect_(tfl_ctx *ctx, const tfl_tensor *t, tfl_dtype dt, int rank,
                              const int64_t *shape, const double *vals, size_t nvals, bool pairs,
                              double tol, const char *file, int line)
{
    if (!t) {
        print_error("expected a tensor, got NULL (error: %s: %s)\n",
                    ctx ? tfl_status_name(tfl_ctx_status(ctx)) : "?",
                    ctx ? tfl_ctx_error(ctx).message : "?");
        _fail(file, line);
    }
    if (tfl_tensor_dtype(t) != dt) {
        print_error("dtype: expected %s, got %s\n", tfl_dtype_name(dt),
                    tfl_dtype_name(tfl_tensor_dtype(t)));
        _fail(file, line);
    }
    bool shape_ok = tfl_tensor_rank(t) == rank;
    for (int i = 0; shape_ok && i < rank; i++) shape_ok = tfl_tensor_shape(t)[i] == shape[i];
    if (!shape_ok) {
        char a[128], b[128];
        th_format_shape(a, sizeof a, rank, shape);
        th_format_shape(b, sizeof b, tfl_tensor_rank(t), tfl_tensor_shape(t));
        print_error("shape: expected %s, got %s\n", a, b);
        _fail(file, line);
    }
    if (!vals) return; /* dtype and shape only */
    size_t per = pairs ? 2u : 1u;
    int64_t n = tfl_tensor_numel(t);
    if ((int64_t)(nvals / per) != n || nvals % per != 0) {
        print_error("expected-values array has %zu entries for %lld elements\n", nvals,
                    (long long)n);
        _fail(file, line);
    }
    double *im = NULL;
    double *re = th_read_(t, &im, file, line);
    bool exact = !tfl_dtype_is_floating(dt) && !tfl_dtype_is_complex(dt);
    for (int64_t i = 0; i < n; i++) {
        double wr = vals[(size_t)i * per], wi = pairs ? vals[(size_t)i * per + 1] : 0.0;
        bool ok = exact ? (re[i] == wr && im[i] == wi)
                        : (th_close(re[i], wr, tol) && th_close(im[i], wi, tol));
        if (!ok) {
            print_error("%s element %lld: expected %.17g%+.17gi, got %.17g%+.17gi (tol %g)\n",
                        tfl_dtype_name(dt), (long long)i, wr, wi, re[i], im[i], tol);
            free(re);
            free(im);
            _fail(file, line);
        }
    }
    free(re);
    free(im);
}

/* TH_EXPECT(ctx, t, TH_F32, (2, 2), (1, 2, 3, 4), 1e-6) */
#define TH_EXPECT(ctx, t, dt, shp, vals, tol)                                                  \
    th_expect_((ctx), (t), (dt), TH_RANK_OF(shp), TH_SHAPE shp, TH_VALS vals, TH_COUNT_OF(vals), \
               false, (tol), __FILE__, __LINE__)
#define TH_EXPECTC(ctx, t, dt, shp, vals, tol)                                                 \
    th_expect_((ctx), (t), (dt), TH_RANK_OF(shp), TH_SHAPE shp, TH_VALS vals, TH_COUNT_OF(vals), \
               true, (tol), __FILE__, __LINE__)
#define TH_EXPECT0(ctx, t, dt, v, tol) \
    th_expect_((ctx), (t), (dt), 0, NULL, TH_VALS(v), 1, false, (tol), __FILE__, __LINE__)
#define TH_EXPECTC0(ctx, t, dt, re, im, tol) \
    th_expect_((ctx), (t), (dt), 0, NULL, TH_VALS(re, im), 2, true, (tol), __FILE__, __LINE__)
/* Dtype and shape only (for empty tensors). */
#define TH_EXPECT_SHAPE(ctx, t, dt, shp) \
    th_expect_((ctx), (t), (dt), TH_RANK_OF(shp), TH_SHAPE shp, NULL, 0, false, 0.0, __FILE__, __LINE__)
/* Expected values in an array variable. */
#define TH_EXPECT_N(ctx, t, dt, rank, shape, vals, n, tol) \
    th_expect_((ctx), (t), (dt), (rank), (shape), (vals), (n), false, (tol), __FILE__, __LINE__)
#define TH_EXPECTC_N(ctx, t, dt, rank, shape, vals, n, tol) \
    th_expect_((ctx), (t), (dt), (rank), (shape), (vals), (n), true, (tol), __FILE__, __LINE__)

/* ---- errors ------------------------------------------------------------------------------ */

/*
 * Asserts an op failed: result NULL, the kept error has `code`, its message starts with
 * "<op>: " and contains `fragment` (fragment may be NULL). A non-NULL result is released.
 */
static inline void th_expect_error_(tfl_ctx *ctx, tfl_tensor *result, tfl_status code,
                                    const char *op, const char *fragment, const char *file,
                                    int line)
{
    tfl_error err = tfl_ctx_error(ctx);
    const char *msg = err.message ? err.message : "(null)";
    if (result) {
        tfl_tensor_release(result);
        print_error("expected NULL from %s (error %s \"%s\"), got a tensor\n", op,
                    tfl_status_name(code), fragment ? fragment : "");
        _fail(file, line);
    }
    if (err.code != code) {
        print_error("%s: expected code %s, got %s (\"%s\")\n", op, tfl_status_name(code),
                    tfl_status_name(err.code), msg);
        _fail(file, line);
    }
    if (op) {
        size_t len = strlen(op);
        if (strncmp(msg, op, len) != 0 || msg[len] != ':' || msg[len + 1] != ' ') {
            print_error("message \"%s\" does not start with \"%s: \"\n", msg, op);
            _fail(file, line);
        }
    }
    if (fragment && !strstr(msg, fragment)) {
        print_error("message \"%s\" lacks \"%s\"\n", msg, fragment);
        _fail(file, line);
    }
    tfl_ctx_clear_error(ctx);
}

/* Clears the kept error, evaluates `call`, and checks the error it must give. */
#define TH_EXPECT_ERROR(ctx, call, code, op, fragment)                                   \
    do {                                                                                 \
        tfl_ctx_clear_error(ctx);                                                        \
        tfl_tensor *th_err_result_ = (call);                                             \
        th_expect_error_((ctx), th_err_result_, (code), (op), (fragment), __FILE__, __LINE__); \
    } while (0)
#define TH_EXPECT_INVALID(ctx, call, op, fragment) \
    TH_EXPECT_ERROR(ctx, call, TFL_INVALID_ARGUMENT, op, fragment)

/* Asserts no error is kept (with the message when there is one). */
static inline void th_expect_ok_(tfl_ctx *ctx, const char *file, int line)
{
    tfl_error err = tfl_ctx_error(ctx);
    if (err.code != TFL_OK) {
        print_error("unexpected error %s: %s\n", tfl_status_name(err.code),
                    err.message ? err.message : "(null)");
        _fail(file, line);
    }
}
#define TH_EXPECT_OK(ctx) th_expect_ok_((ctx), __FILE__, __LINE__)

/* ---- exact int64 (values beyond 2^53 do not survive a trip through double) ----------------- */

#define TH_I64S(...) ((const int64_t[]){__VA_ARGS__})

/* TH_TI64(ctx, (2), (INT64_MAX, 1)): an int64 tensor from exact values. */
#define TH_TI64(ctx, shp, vals)                                                                 \
    th_tensor_i64_((ctx), TH_RANK_OF(shp), TH_SHAPE shp, TH_I64S vals,                          \
                   sizeof(TH_I64S vals) / sizeof(int64_t), __FILE__, __LINE__)

static inline tfl_tensor *th_tensor_i64_(tfl_ctx *ctx, int rank, const int64_t *shape,
                                         const int64_t *vals, size_t n, const char *file, int line)
{
    _assert_int_equal((LargestIntegralType)n, (LargestIntegralType)th_numel(rank, shape), file, line);
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_INT64, rank, shape, vals);
    _assert_true(cast_ptr_to_largest_integral_type(t), "tfl_tensor_new", file, line);
    return t;
}

/* Asserts t is an int64 tensor of this shape holding exactly these values. */
static inline void th_expect_i64_(tfl_ctx *ctx, const tfl_tensor *t, int rank, const int64_t *shape,
                                  const int64_t *vals, size_t n, const char *file, int line)
{
    th_expect_(ctx, t, TFL_DTYPE_INT64, rank, shape, NULL, 0, false, 0.0, file, line);
    _assert_int_equal((LargestIntegralType)n, (LargestIntegralType)tfl_tensor_numel(t), file, line);
    int64_t *got = malloc(sizeof(int64_t) * (n ? n : 1));
    _assert_true(cast_ptr_to_largest_integral_type(got), "malloc", file, line);
    _assert_int_equal(tfl_tensor_to_host(t, got, n * sizeof(int64_t)), TFL_OK, file, line);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != vals[i]) {
            print_error("int64 element %zu: expected %lld, got %lld\n", i, (long long)vals[i],
                        (long long)got[i]);
            free(got);
            _fail(file, line);
        }
    }
    free(got);
}
#define TH_EXPECT_I64(ctx, t, shp, vals)                                                        \
    th_expect_i64_((ctx), (t), TH_RANK_OF(shp), TH_SHAPE shp, TH_I64S vals,                     \
                   sizeof(TH_I64S vals) / sizeof(int64_t), __FILE__, __LINE__)

/* ---- fixtures ---------------------------------------------------------------------------- */

/* A fresh context per test. */
static inline int th_setup(void **state)
{
    tfl_status st = TFL_INTERNAL;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx || st != TFL_OK) return -1;
    *state = ctx;
    return 0;
}

/*
 * Pops frames a failed test left open, then asserts no tensor is alive and frees the
 * context.
 */
static inline int th_teardown(void **state)
{
    tfl_ctx *ctx = *state;
    if (!ctx) return 0;
    while (tfl_frame_depth(ctx) > 0) tfl_frame_pop(ctx);
    tfl_alloc_stats s;
    memset(&s, 0, sizeof s);
    tfl_status st = tfl_alloc_stats_get(ctx, NULL, &s);
    tfl_ctx_free(ctx);
    *state = NULL;
    assert_int_equal(st, TFL_OK);
    assert_int_equal(s.live_tensors, 0);
    return 0;
}

/* Allocation hooks that refuse every block of *(size_t *)user bytes or more: a context made
 * with th_refusing_opts(&limit, threads) fails allocations from the limit on (SIZE_MAX: none). */
static inline void *th_refusing_alloc(void *user, size_t bytes, size_t align)
{
    if (bytes >= *(const size_t *)user) return NULL;
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}
static inline void th_refusing_free(void *user, void *p)
{
    (void)user;
    free(p);
}
static inline tfl_ctx_opts th_refusing_opts(size_t *limit, int threads)
{
    return (tfl_ctx_opts){.num_threads = threads,
                          .alloc_fn = th_refusing_alloc,
                          .free_fn = th_refusing_free,
                          .alloc_user = limit};
}

/* Starts a test body: the context, with a frame open that th_end pops. */
static inline tfl_ctx *th_begin(void **state)
{
    tfl_ctx *ctx = *state;
    assert_non_null(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    return ctx;
}

static inline void th_end(tfl_ctx *ctx)
{
    TH_EXPECT_OK(ctx);
    assert_int_equal(tfl_frame_depth(ctx), 1);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

#define TH_TEST(fn) cmocka_unit_test_setup_teardown(fn, th_setup, th_teardown)

#endif /* TFL_TEST_OPS_HELPERS_H */
