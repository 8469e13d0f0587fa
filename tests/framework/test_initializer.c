/* test_initializer.c: tests of the initializers (tapeflow/initializer.h): the fans rule,
 * zeros / ones / constant for every dtype (converted as tfl_fill), the random kinds as thin
 * recipes over tapeflow/random.h (same seed, same values), determinism (seeds, contexts,
 * thread counts, the ctx stream for seed 0), the Glorot / He distributions' bounds and
 * moments, 16-bit and float64 dtypes, TFL_INIT_TENSOR (copy and convert), kind names, every
 * error path, and variables made from initializers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* The stddev of a standard normal truncated at +-2 (initializer.h). */
#define TRUNC_SD 0.87962566103423978

/* ---- helpers ----------------------------------------------------------------------------- */

/* t's values as doubles (any real dtype, complex: real part), malloc'ed; works for a tensor
 * of any context (reads element by element). */
static double *values(const tfl_tensor *t)
{
    int64_t n = tfl_tensor_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    assert_non_null(v);
    tfl_dtype dt = tfl_tensor_dtype(t);
    if (dt == TFL_DTYPE_FLOAT32) {
        float *p = host_bytes(t, NULL);
        for (int64_t i = 0; i < n; i++) v[i] = p[i];
        free(p);
    } else if (dt == TFL_DTYPE_FLOAT64) {
        double *p = host_bytes(t, NULL);
        memcpy(v, p, (size_t)n * sizeof *v);
        free(p);
    } else {
        for (int64_t i = 0; i < n; i++) assert_int_equal(tfl_tensor_get(t, i, &v[i]), TFL_OK);
    }
    return v;
}

/* True when two tensors hold the same bytes (same dtype, shape and element count). */
static bool same_bytes(const tfl_tensor *a, const tfl_tensor *b)
{
    if (tfl_tensor_dtype(a) != tfl_tensor_dtype(b) || tfl_tensor_rank(a) != tfl_tensor_rank(b))
        return false;
    for (int i = 0; i < tfl_tensor_rank(a); i++)
        if (tfl_tensor_dim(a, i) != tfl_tensor_dim(b, i)) return false;
    size_t na, nb;
    void *pa = host_bytes(a, &na), *pb = host_bytes(b, &nb);
    bool same = na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

static void assert_shape(const tfl_tensor *t, tfl_dtype dtype, int rank, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_dtype(t), dtype);
    assert_int_equal(tfl_tensor_rank(t), rank);
    for (int i = 0; i < rank; i++) assert_int_equal(tfl_tensor_dim(t, i), shape[i]);
}

static void moments(const double *v, int64_t n, double *mean, double *var)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    double m = s / (double)n, q = 0.0;
    for (int64_t i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *var = q / (double)(n - 1);
}

static double max_abs(const double *v, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(v[i]) > m) m = fabs(v[i]);
    return m;
}

static void within(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol)) {
        print_error("%s: got %.9g, want %.9g +- %.3g\n", what, got, want, tol);
        fail();
    }
}

static int64_t numel_of(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* An initializer's value, checked non-NULL with no error kept (prints the error otherwise). */
static tfl_tensor *init_value(tfl_ctx *ctx, tfl_initializer init, tfl_dtype dtype, int rank,
                              const int64_t *shape)
{
    tfl_tensor *t = tfl_initializer_value(ctx, &init, dtype, rank, shape);
    if (!t) print_error("initializer %s: %s\n", tfl_init_kind_name(init.kind),
                        tfl_ctx_error(ctx).message);
    assert_non_null(t);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    return t;
}

static const tfl_dtype FLOAT_DTYPES[] = {TFL_DTYPE_FLOAT16, TFL_DTYPE_BFLOAT16,
                                         TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64};
#define N_FLOAT_DTYPES (sizeof FLOAT_DTYPES / sizeof FLOAT_DTYPES[0])

/* ---- fans ------------------------------------------------------------------------------------ */

static void test_fans_ranks(void **state)
{
    (void)state;
    double fi = -1, fo = -1;

    assert_int_equal(tfl_compute_fans(0, NULL, &fi, &fo), TFL_OK);
    assert_true(fi == 1.0 && fo == 1.0);

    const int64_t s1[1] = {7};
    fi = fo = -1;
    assert_int_equal(tfl_compute_fans(1, s1, &fi, &fo), TFL_OK);
    assert_true(fi == 7.0 && fo == 7.0);

    const int64_t s2[2] = {3, 5};
    assert_int_equal(tfl_compute_fans(2, s2, &fi, &fo), TFL_OK);
    assert_true(fi == 3.0 && fo == 5.0);

    const int64_t s3[3] = {4, 6, 10}; /* receptive 4 */
    assert_int_equal(tfl_compute_fans(3, s3, &fi, &fo), TFL_OK);
    assert_true(fi == 24.0 && fo == 40.0);

    const int64_t s4[4] = {5, 5, 32, 16};
    assert_int_equal(tfl_compute_fans(4, s4, &fi, &fo), TFL_OK);
    assert_true(fi == 5.0 * 5.0 * 32.0);
    assert_true(fo == 5.0 * 5.0 * 16.0);

    const int64_t s8[8] = {2, 1, 3, 1, 1, 2, 7, 9}; /* receptive 12 */
    assert_int_equal(tfl_compute_fans(8, s8, &fi, &fo), TFL_OK);
    assert_true(fi == 84.0 && fo == 108.0);

    /* a rank-0 shape pointer is not read */
    const int64_t junk[1] = {123};
    assert_int_equal(tfl_compute_fans(0, junk, &fi, &fo), TFL_OK);
    assert_true(fi == 1.0 && fo == 1.0);
}

static void test_fans_errors(void **state)
{
    (void)state;
    const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
    double fi = 0, fo = 0;
    assert_int_equal(tfl_compute_fans(9, s9, &fi, &fo), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_compute_fans(-1, s9, &fi, &fo), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_compute_fans(2, NULL, &fi, &fo), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_compute_fans(2, s9, NULL, &fo), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_compute_fans(2, s9, &fi, NULL), TFL_INVALID_ARGUMENT);
}

/* ---- names ------------------------------------------------------------------------------------ */

static void test_kind_names(void **state)
{
    (void)state;
    static const char *const keras[] = {
        "zeros",          "ones",           "constant",      "random_uniform",
        "random_normal",  "truncated_normal", "glorot_uniform", "glorot_normal",
        "he_uniform",     "he_normal",
    };
    for (int k = TFL_INIT_ZEROS; k <= TFL_INIT_HE_NORMAL; k++) {
        const char *name = tfl_init_kind_name((tfl_init_kind)k);
        assert_non_null(name);
        assert_string_equal(name, keras[k]);
    }
    /* TFL_INIT_TENSOR has no Keras class; it must still have its own, valid name */
    const char *tname = tfl_init_kind_name(TFL_INIT_TENSOR);
    assert_non_null(tname);
    assert_true(tname[0] != '\0');
    assert_string_not_equal(tname, "invalid");
    for (int k = TFL_INIT_ZEROS; k <= TFL_INIT_HE_NORMAL; k++) assert_string_not_equal(tname, keras[k]);

    assert_string_equal(tfl_init_kind_name(TFL_INIT_KIND_COUNT), "invalid");
    assert_string_equal(tfl_init_kind_name((tfl_init_kind)99), "invalid");
    assert_string_equal(tfl_init_kind_name((tfl_init_kind)-1), "invalid");
}

/* ---- zeros, ones, constant ------------------------------------------------------------------ */

static void test_constant_kinds_match_fill(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    static const tfl_dtype dts[] = {TFL_DTYPE_BOOL,     TFL_DTYPE_INT32,    TFL_DTYPE_INT64,
                                    TFL_DTYPE_FLOAT16,  TFL_DTYPE_BFLOAT16, TFL_DTYPE_FLOAT32,
                                    TFL_DTYPE_FLOAT64,  TFL_DTYPE_COMPLEX64, TFL_DTYPE_COMPLEX128};
    static const double consts[] = {2.5, -2.5, -7.75, 0.0, 1e10};
    const int64_t shape[3] = {2, 3, 4};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        tfl_dtype dt = dts[d];
        tfl_tensor *z = init_value(ctx, tfl_init_zeros(), dt, 3, shape);
        tfl_tensor *o = init_value(ctx, tfl_init_ones(), dt, 3, shape);
        assert_shape(z, dt, 3, shape);
        assert_shape(o, dt, 3, shape);
        assert_true(same_bytes(z, tfl_zeros(ctx, dt, 3, shape)));
        assert_true(same_bytes(o, tfl_ones(ctx, dt, 3, shape)));
        for (size_t c = 0; c < sizeof consts / sizeof consts[0]; c++) {
            tfl_tensor *k = init_value(ctx, tfl_init_constant(consts[c]), dt, 3, shape);
            assert_shape(k, dt, 3, shape);
            assert_true(same_bytes(k, tfl_fill(ctx, dt, 3, shape, consts[c])));
        }
        /* rank 0, NULL shape; and an empty tensor */
        tfl_tensor *s = init_value(ctx, tfl_init_constant(3.0), dt, 0, NULL);
        assert_shape(s, dt, 0, NULL);
        double v = 0;
        assert_int_equal(tfl_tensor_get(s, 0, &v), TFL_OK);
        assert_true(v == (dt == TFL_DTYPE_BOOL ? 1.0 : 3.0));
        const int64_t empty[2] = {0, 5};
        tfl_tensor *e = init_value(ctx, tfl_init_ones(), dt, 2, empty);
        assert_shape(e, dt, 2, empty);
        assert_int_equal(tfl_tensor_numel(e), 0);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_constant_values(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 5;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);

    /* float32 */
    float *pf = host_bytes(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_FLOAT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pf[i] == 2.5f);
    free(pf);
    pf = host_bytes(init_value(ctx, tfl_init_zeros(), TFL_DTYPE_FLOAT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pf[i] == 0.0f && !signbit(pf[i]));
    free(pf);
    pf = host_bytes(init_value(ctx, tfl_init_ones(), TFL_DTYPE_FLOAT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pf[i] == 1.0f);
    free(pf);

    /* int32: 2.5 truncates toward zero like tfl_fill (2, and -2 for -2.5) */
    int32_t *pi = host_bytes(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_INT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pi[i], 2);
    free(pi);
    pi = host_bytes(init_value(ctx, tfl_init_constant(-2.5), TFL_DTYPE_INT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pi[i], -2);
    free(pi);
    pi = host_bytes(init_value(ctx, tfl_init_ones(), TFL_DTYPE_INT32, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pi[i], 1);
    free(pi);

    /* int64 */
    int64_t *pl = host_bytes(init_value(ctx, tfl_init_constant(-7.75), TFL_DTYPE_INT64, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pl[i], -7);
    free(pl);
    pl = host_bytes(init_value(ctx, tfl_init_constant(1e12), TFL_DTYPE_INT64, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pl[i] == 1000000000000LL);
    free(pl);

    /* bool: non-zero is true */
    uint8_t *pb = host_bytes(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_BOOL, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pb[i], 1);
    free(pb);
    pb = host_bytes(init_value(ctx, tfl_init_zeros(), TFL_DTYPE_BOOL, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pb[i], 0);
    free(pb);
    pb = host_bytes(init_value(ctx, tfl_init_ones(), TFL_DTYPE_BOOL, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_int_equal(pb[i], 1);
    free(pb);

    /* float64 keeps the double exactly */
    double *pd = host_bytes(init_value(ctx, tfl_init_constant(0.1), TFL_DTYPE_FLOAT64, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pd[i] == 0.1);
    free(pd);

    /* complex64: the real part, imaginary 0 */
    float *pc = host_bytes(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_COMPLEX64, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pc[2 * i] == 2.5f && pc[2 * i + 1] == 0.0f);
    free(pc);
    pc = host_bytes(init_value(ctx, tfl_init_ones(), TFL_DTYPE_COMPLEX64, 1, &n), NULL);
    for (int i = 0; i < n; i++) assert_true(pc[2 * i] == 1.0f && pc[2 * i + 1] == 0.0f);
    free(pc);

    /* float16 / bfloat16: 2.5 is exact in both */
    double *v = values(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_FLOAT16, 1, &n));
    for (int i = 0; i < n; i++) assert_true(v[i] == 2.5);
    free(v);
    v = values(init_value(ctx, tfl_init_constant(2.5), TFL_DTYPE_BFLOAT16, 1, &n));
    for (int i = 0; i < n; i++) assert_true(v[i] == 2.5);
    free(v);

    /* the constant kinds ignore the seed field and leave the ctx stream alone */
    tfl_initializer c = tfl_init_constant(4.0);
    c.seed = 77;
    assert_true(same_bytes(init_value(ctx, c, TFL_DTYPE_FLOAT32, 1, &n),
                           tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 4.0)));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* zeros/ones/constant do not advance the ctx's unseeded-call count. */
static void test_constant_kinds_leave_stream(void **state)
{
    (void)state;
    tfl_ctx *a = tfl_ctx_new(&(tfl_ctx_opts){.seed = 5}, NULL);
    tfl_ctx *b = tfl_ctx_new(&(tfl_ctx_opts){.seed = 5}, NULL);
    assert_non_null(a);
    assert_non_null(b);
    const int64_t n = 64;
    assert_int_equal(tfl_frame_push(a), TFL_OK);
    assert_int_equal(tfl_frame_push(b), TFL_OK);
    init_value(a, tfl_init_zeros(), TFL_DTYPE_FLOAT32, 1, &n);
    init_value(a, tfl_init_ones(), TFL_DTYPE_FLOAT32, 1, &n);
    init_value(a, tfl_init_constant(3), TFL_DTYPE_FLOAT32, 1, &n);
    tfl_tensor *ta = init_value(a, tfl_init_random_uniform(0, 1, 0), TFL_DTYPE_FLOAT32, 1, &n);
    tfl_tensor *tb = init_value(b, tfl_init_random_uniform(0, 1, 0), TFL_DTYPE_FLOAT32, 1, &n);
    assert_true(same_bytes(ta, tb));
    assert_int_equal(tfl_frame_pop(a), TFL_OK);
    assert_int_equal(tfl_frame_pop(b), TFL_OK);
    tfl_ctx_free(a);
    tfl_ctx_free(b);
}

/* ---- random kinds are thin recipes over tapeflow/random.h ----------------------------------- */

static void test_random_kinds_match_random_functions(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {17, 29};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (size_t d = 0; d < N_FLOAT_DTYPES; d++) {
        tfl_dtype dt = FLOAT_DTYPES[d];
        const uint64_t seed = 1234567 + d;

        tfl_tensor *a = init_value(ctx, tfl_init_random_uniform(-0.3, 0.7, seed), dt, 2, shape);
        tfl_tensor *b = tfl_random_uniform(ctx, dt, 2, shape, -0.3, 0.7, seed);
        assert_shape(a, dt, 2, shape);
        assert_true(same_bytes(a, b));

        a = init_value(ctx, tfl_init_random_normal(0.5, 2.0, seed), dt, 2, shape);
        b = tfl_random_normal(ctx, dt, 2, shape, 0.5, 2.0, seed);
        assert_shape(a, dt, 2, shape);
        assert_true(same_bytes(a, b));

        a = init_value(ctx, tfl_init_truncated_normal(-1.0, 0.25, seed), dt, 2, shape);
        b = tfl_truncated_normal(ctx, dt, 2, shape, -1.0, 0.25, seed);
        assert_shape(a, dt, 2, shape);
        assert_true(same_bytes(a, b));

        /* stddev 0 gives the mean everywhere, as the random functions do */
        a = init_value(ctx, tfl_init_random_normal(1.5, 0.0, seed), dt, 2, shape);
        assert_true(same_bytes(a, tfl_fill(ctx, dt, 2, shape, 1.5)));

        /* rank 0 */
        a = init_value(ctx, tfl_init_random_uniform(0.0, 1.0, seed), dt, 0, NULL);
        b = tfl_random_uniform(ctx, dt, 0, NULL, 0.0, 1.0, seed);
        assert_true(same_bytes(a, b));
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Glorot / He are uniform(-l, l) and truncated_normal(0, s) with the documented l and s. */
static void test_variance_scaling_recipes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[4] = {3, 3, 8, 5}; /* fan_in 72, fan_out 45 */
    const double fi = 72.0, fo = 45.0;
    const double lg = sqrt(6.0 / (fi + fo)), lh = sqrt(6.0 / fi);
    const double sg = sqrt(2.0 / (fi + fo)) / TRUNC_SD, sh = sqrt(2.0 / fi) / TRUNC_SD;
    const uint64_t seed = 0xabcdef12345ull;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);

    /* float32: exact (bounds and stddev round the same way in float32) */
    tfl_dtype dt = TFL_DTYPE_FLOAT32;
    assert_true(same_bytes(init_value(ctx, tfl_init_glorot_uniform(seed), dt, 4, shape),
                           tfl_random_uniform(ctx, dt, 4, shape, -lg, lg, seed)));
    assert_true(same_bytes(init_value(ctx, tfl_init_he_uniform(seed), dt, 4, shape),
                           tfl_random_uniform(ctx, dt, 4, shape, -lh, lh, seed)));

    /* truncated normals and float64: equal up to the last bits of the scale */
    for (int pass = 0; pass < 2; pass++) {
        dt = pass ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        const double tol = pass ? 1e-13 : 1e-6;
        struct {
            tfl_initializer init;
            tfl_tensor *want;
        } cases[] = {
            {tfl_init_glorot_uniform(seed), tfl_random_uniform(ctx, dt, 4, shape, -lg, lg, seed)},
            {tfl_init_he_uniform(seed), tfl_random_uniform(ctx, dt, 4, shape, -lh, lh, seed)},
            {tfl_init_glorot_normal(seed), tfl_truncated_normal(ctx, dt, 4, shape, 0.0, sg, seed)},
            {tfl_init_he_normal(seed), tfl_truncated_normal(ctx, dt, 4, shape, 0.0, sh, seed)},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            tfl_tensor *got = init_value(ctx, cases[c].init, dt, 4, shape);
            assert_shape(got, dt, 4, shape);
            double *g = values(got), *w = values(cases[c].want);
            for (int64_t i = 0; i < tfl_tensor_numel(got); i++)
                within(g[i], w[i], tol * (fabs(w[i]) + 1e-3), tfl_init_kind_name(cases[c].init.kind));
            free(g);
            free(w);
        }
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- determinism ---------------------------------------------------------------------------- */

static tfl_initializer seeded(int k, uint64_t seed)
{
    switch (k) {
    case 0: return tfl_init_glorot_uniform(seed);
    case 1: return tfl_init_glorot_normal(seed);
    case 2: return tfl_init_he_uniform(seed);
    case 3: return tfl_init_he_normal(seed);
    case 4: return tfl_init_random_uniform(-2.0, 3.0, seed);
    case 5: return tfl_init_random_normal(1.0, 0.5, seed);
    default: return tfl_init_truncated_normal(0.0, 1.0, seed);
    }
}
#define N_SEEDED 7

static void test_seeded_deterministic(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_ctx *one = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1, .seed = 3}, NULL);
    tfl_ctx *two = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 2, .seed = 4}, NULL);
    assert_non_null(one);
    assert_non_null(two);
    assert_int_equal(tfl_ctx_num_threads(one), 1);
    assert_int_equal(tfl_ctx_num_threads(two), 2);
    const int64_t shape[2] = {300, 400}; /* 120000 elements: threaded */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_frame_push(one), TFL_OK);
    assert_int_equal(tfl_frame_push(two), TFL_OK);
    for (int k = 0; k < N_SEEDED; k++) {
        for (size_t d = 0; d < N_FLOAT_DTYPES; d++) {
            assert_int_equal(tfl_frame_push(ctx), TFL_OK);
            tfl_dtype dt = FLOAT_DTYPES[d];
            tfl_initializer in = seeded(k, 99 + (uint64_t)k);
            tfl_tensor *a = init_value(ctx, in, dt, 2, shape);
            tfl_tensor *b = init_value(ctx, in, dt, 2, shape);
            tfl_tensor *c = init_value(one, in, dt, 2, shape);
            tfl_tensor *e = init_value(two, in, dt, 2, shape);
            assert_true(same_bytes(a, b));
            assert_true(same_bytes(a, c));
            assert_true(same_bytes(a, e));
            /* another seed gives other values */
            tfl_tensor *o = init_value(ctx, seeded(k, 100 + (uint64_t)k + 1000), dt, 2, shape);
            assert_false(same_bytes(a, o));
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        }
    }
    /* switching the thread count of one context */
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(tfl_ctx_set_num_threads(one, pass ? 2 : 1), TFL_OK);
        tfl_tensor *x = init_value(one, tfl_init_glorot_normal(5), TFL_DTYPE_FLOAT32, 2, shape);
        tfl_tensor *y = init_value(ctx, tfl_init_glorot_normal(5), TFL_DTYPE_FLOAT32, 2, shape);
        assert_true(same_bytes(x, y));
    }
    assert_int_equal(tfl_frame_pop(two), TFL_OK);
    assert_int_equal(tfl_frame_pop(one), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_ctx_free(one);
    tfl_ctx_free(two);
}

static void test_seed0_ctx_stream(void **state)
{
    (void)state;
    tfl_ctx *a = tfl_ctx_new(&(tfl_ctx_opts){.seed = 2024, .num_threads = 1}, NULL);
    tfl_ctx *b = tfl_ctx_new(&(tfl_ctx_opts){.seed = 2024, .num_threads = 2}, NULL);
    tfl_ctx *c = tfl_ctx_new(&(tfl_ctx_opts){.seed = 2025}, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    const int64_t shape[2] = {300, 400};
    assert_int_equal(tfl_frame_push(a), TFL_OK);
    assert_int_equal(tfl_frame_push(b), TFL_OK);
    assert_int_equal(tfl_frame_push(c), TFL_OK);

    tfl_tensor *prev = NULL;
    for (int k = 0; k < N_SEEDED; k++) {
        tfl_tensor *ta = init_value(a, seeded(k, 0), TFL_DTYPE_FLOAT32, 2, shape);
        tfl_tensor *tb = init_value(b, seeded(k, 0), TFL_DTYPE_FLOAT32, 2, shape);
        tfl_tensor *tc = init_value(c, seeded(k, 0), TFL_DTYPE_FLOAT32, 2, shape);
        assert_true(same_bytes(ta, tb));  /* same ctx seed, same sequence */
        assert_false(same_bytes(ta, tc)); /* another ctx seed */
        /* the same kind twice in a row: the second call takes the next stream */
        tfl_tensor *ta2 = init_value(a, seeded(k, 0), TFL_DTYPE_FLOAT32, 2, shape);
        tfl_tensor *tb2 = init_value(b, seeded(k, 0), TFL_DTYPE_FLOAT32, 2, shape);
        assert_false(same_bytes(ta, ta2));
        assert_true(same_bytes(ta2, tb2));
        if (prev) assert_false(same_bytes(prev, ta));
        prev = ta2;
    }

    /* seed 0 takes exactly the stream the random functions would take at that point */
    tfl_tensor *ia = init_value(a, tfl_init_random_uniform(-1, 1, 0), TFL_DTYPE_FLOAT32, 2, shape);
    tfl_tensor *rb = tfl_random_uniform(b, TFL_DTYPE_FLOAT32, 2, shape, -1, 1, 0);
    assert_non_null(rb);
    assert_true(same_bytes(ia, rb));
    ia = tfl_random_normal(a, TFL_DTYPE_FLOAT64, 2, shape, 0, 1, 0);
    rb = init_value(b, tfl_init_random_normal(0, 1, 0), TFL_DTYPE_FLOAT64, 2, shape);
    assert_non_null(ia);
    assert_true(same_bytes(ia, rb));

    /* tfl_ctx_set_seed restarts the sequence */
    assert_int_equal(tfl_ctx_set_seed(a, 2024), TFL_OK);
    assert_int_equal(tfl_ctx_set_seed(b, 2024), TFL_OK);
    tfl_tensor *s1 = init_value(a, tfl_init_he_normal(0), TFL_DTYPE_FLOAT32, 2, shape);
    tfl_tensor *s2 = init_value(b, tfl_init_he_normal(0), TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(s1, s2));
    assert_int_equal(tfl_ctx_set_seed(a, 2024), TFL_OK);
    tfl_tensor *s3 = init_value(a, tfl_init_he_normal(0), TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(s1, s3));

    assert_int_equal(tfl_frame_pop(a), TFL_OK);
    assert_int_equal(tfl_frame_pop(b), TFL_OK);
    assert_int_equal(tfl_frame_pop(c), TFL_OK);
    tfl_ctx_free(a);
    tfl_ctx_free(b);
    tfl_ctx_free(c);
}

/* ---- distributions ---------------------------------------------------------------------------- */

/* Uniform(-bound, bound): every value inside, the extremes reached, mean 0, variance bound^2/3. */
static void check_uniform(tfl_ctx *ctx, tfl_initializer init, int rank, const int64_t *shape,
                          double bound)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *t = init_value(ctx, init, TFL_DTYPE_FLOAT32, rank, shape);
    assert_shape(t, TFL_DTYPE_FLOAT32, rank, shape);
    int64_t n = numel_of(rank, shape);
    double *v = values(t);
    const float fb = (float)bound; /* the bound as the float32 generator sees it */
    for (int64_t i = 0; i < n; i++) {
        if (!(fabs(v[i]) <= (double)fb)) {
            print_error("%s: |%.9g| > %.9g at %lld\n", tfl_init_kind_name(init.kind), v[i], bound,
                        (long long)i);
            fail();
        }
        if (!(v[i] < (double)fb)) fail(); /* [lo, hi) */
    }
    double m, var;
    moments(v, n, &m, &var);
    double sd = bound / sqrt(3.0);
    if (!(max_abs(v, n) > 0.98 * bound)) {
        print_error("%s: max |x| %.6g, bound %.6g\n", tfl_init_kind_name(init.kind), max_abs(v, n),
                    bound);
        fail();
    }
    within(m, 0.0, 4.0 * sd / sqrt((double)n), "uniform mean");
    within(var, bound * bound / 3.0, 0.03 * bound * bound / 3.0, "uniform variance");
    free(v);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Truncated normal: |x| <= 2 * stddev, variance 0.7737 * stddev^2 = `want_var`. */
static void check_truncated(tfl_ctx *ctx, tfl_initializer init, int rank, const int64_t *shape,
                            double stddev, double want_var)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *t = init_value(ctx, init, TFL_DTYPE_FLOAT32, rank, shape);
    assert_shape(t, TFL_DTYPE_FLOAT32, rank, shape);
    int64_t n = numel_of(rank, shape);
    double *v = values(t);
    const double lim = 2.0 * stddev * (1.0 + 1e-6); /* float32 rounding of the product */
    for (int64_t i = 0; i < n; i++) {
        if (!(fabs(v[i]) <= lim)) {
            print_error("%s: |%.9g| > 2 stddev = %.9g at %lld\n", tfl_init_kind_name(init.kind),
                        v[i], 2 * stddev, (long long)i);
            fail();
        }
    }
    double m, var;
    moments(v, n, &m, &var);
    within(m, 0.0, 4.0 * sqrt(want_var / (double)n), "truncated normal mean");
    within(var, want_var, 0.03 * want_var, "truncated normal variance");
    /* the tails near the truncation are reached (about 1.2% lie beyond 1.9 stddev) */
    assert_true(max_abs(v, n) > 1.9 * stddev);
    free(v);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_glorot_uniform_stats(void **state)
{
    fixture *f = *state;
    const int64_t dense[2] = {400, 300};
    check_uniform(f->ctx, tfl_init_glorot_uniform(17), 2, dense, sqrt(6.0 / 700.0));
    const int64_t conv[4] = {3, 3, 64, 128}; /* fan_in 576, fan_out 1152 */
    check_uniform(f->ctx, tfl_init_glorot_uniform(18), 4, conv, sqrt(6.0 / 1728.0));
}

static void test_he_uniform_stats(void **state)
{
    fixture *f = *state;
    const int64_t dense[2] = {400, 300};
    check_uniform(f->ctx, tfl_init_he_uniform(19), 2, dense, sqrt(6.0 / 400.0));
    const int64_t conv[4] = {3, 3, 64, 128};
    check_uniform(f->ctx, tfl_init_he_uniform(20), 4, conv, sqrt(6.0 / 576.0));
}

static void test_glorot_normal_stats(void **state)
{
    fixture *f = *state;
    const int64_t dense[2] = {400, 300};
    check_truncated(f->ctx, tfl_init_glorot_normal(21), 2, dense, sqrt(2.0 / 700.0) / TRUNC_SD,
                    2.0 / 700.0);
    const int64_t conv[4] = {3, 3, 64, 128};
    check_truncated(f->ctx, tfl_init_glorot_normal(22), 4, conv, sqrt(2.0 / 1728.0) / TRUNC_SD,
                    2.0 / 1728.0);
}

static void test_he_normal_stats(void **state)
{
    fixture *f = *state;
    const int64_t dense[2] = {400, 300};
    check_truncated(f->ctx, tfl_init_he_normal(23), 2, dense, sqrt(2.0 / 400.0) / TRUNC_SD,
                    2.0 / 400.0);
    const int64_t conv[4] = {3, 3, 64, 128};
    check_truncated(f->ctx, tfl_init_he_normal(24), 4, conv, sqrt(2.0 / 576.0) / TRUNC_SD,
                    2.0 / 576.0);
}

/* The plain random kinds' moments (they are random.h's; a quick sanity check of a, b). */
static void test_random_kinds_stats(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {400, 300};
    const int64_t n = 120000;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    double m, var;

    double *v = values(init_value(ctx, tfl_init_random_uniform(2.0, 5.0, 31), TFL_DTYPE_FLOAT32, 2,
                                  shape));
    for (int64_t i = 0; i < n; i++) assert_true(v[i] >= 2.0 && v[i] < 5.0);
    moments(v, n, &m, &var);
    within(m, 3.5, 4.0 * sqrt(0.75 / n), "uniform(2, 5) mean");
    within(var, 0.75, 0.03 * 0.75, "uniform(2, 5) variance");
    free(v);

    v = values(init_value(ctx, tfl_init_random_normal(-3.0, 2.0, 32), TFL_DTYPE_FLOAT32, 2, shape));
    moments(v, n, &m, &var);
    within(m, -3.0, 4.0 * 2.0 / sqrt((double)n), "normal(-3, 2) mean");
    within(var, 4.0, 0.03 * 4.0, "normal(-3, 2) variance");
    free(v);

    v = values(init_value(ctx, tfl_init_truncated_normal(1.0, 0.5, 33), TFL_DTYPE_FLOAT32, 2,
                          shape));
    for (int64_t i = 0; i < n; i++) assert_true(fabs(v[i] - 1.0) <= 1.0 + 1e-6);
    moments(v, n, &m, &var);
    const double tv = TRUNC_SD * TRUNC_SD * 0.25;
    within(m, 1.0, 4.0 * sqrt(tv / n), "truncated_normal(1, 0.5) mean");
    within(var, tv, 0.03 * tv, "truncated_normal(1, 0.5) variance");
    free(v);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* float64, float16, bfloat16: accepted, right dtype, inside the bounds, right variance. */
static void test_other_float_dtypes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {400, 300};
    const int64_t n = 120000;
    const double lg = sqrt(6.0 / 700.0), lh = sqrt(6.0 / 400.0);
    const double sg = sqrt(2.0 / 700.0) / TRUNC_SD, sh = sqrt(2.0 / 400.0) / TRUNC_SD;
    static const tfl_dtype dts[] = {TFL_DTYPE_FLOAT64, TFL_DTYPE_FLOAT16, TFL_DTYPE_BFLOAT16};
    static const double rel[] = {1e-15, 0x1p-10, 0x1p-7}; /* rounding slack of the bound */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (size_t d = 0; d < 3; d++) {
        tfl_dtype dt = dts[d];
        struct {
            tfl_initializer init;
            double bound, var;
            bool uniform;
        } cases[] = {
            {tfl_init_glorot_uniform(41), lg, lg * lg / 3.0, true},
            {tfl_init_he_uniform(42), lh, lh * lh / 3.0, true},
            {tfl_init_glorot_normal(43), 2.0 * sg, 2.0 / 700.0, false},
            {tfl_init_he_normal(44), 2.0 * sh, 2.0 / 400.0, false},
        };
        for (size_t c = 0; c < 4; c++) {
            tfl_tensor *t = init_value(ctx, cases[c].init, dt, 2, shape);
            assert_shape(t, dt, 2, shape);
            double *v = values(t);
            const double lim = cases[c].bound * (1.0 + rel[d]);
            for (int64_t i = 0; i < n; i++) {
                if (!(fabs(v[i]) <= lim)) {
                    print_error("%s %s: |%.9g| > %.9g\n", tfl_init_kind_name(cases[c].init.kind),
                                tfl_dtype_name(dt), v[i], cases[c].bound);
                    fail();
                }
            }
            double m, var;
            moments(v, n, &m, &var);
            within(m, 0.0, 4.0 * sqrt(cases[c].var / n), "mean");
            within(var, cases[c].var, 0.03 * cases[c].var, "variance");
            if (cases[c].uniform) assert_true(max_abs(v, n) > 0.98 * cases[c].bound);
            free(v);
        }
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Rank 0 and rank 1 use the documented fans (1, 1) and (n, n). */
static void test_small_rank_fans_in_use(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    /* rank 0: glorot bound sqrt(6/2), he bound sqrt(6/1) */
    double g = 0, h = 0;
    tfl_tensor *tg = init_value(ctx, tfl_init_glorot_uniform(9), TFL_DTYPE_FLOAT32, 0, NULL);
    tfl_tensor *rg = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 0, NULL, -sqrt(3.0), sqrt(3.0), 9);
    assert_true(same_bytes(tg, rg));
    tfl_tensor *th = init_value(ctx, tfl_init_he_uniform(9), TFL_DTYPE_FLOAT32, 0, NULL);
    tfl_tensor *rh = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 0, NULL, -sqrt(6.0), sqrt(6.0), 9);
    assert_true(same_bytes(th, rh));
    assert_int_equal(tfl_tensor_get(tg, 0, &g), TFL_OK);
    assert_int_equal(tfl_tensor_get(th, 0, &h), TFL_OK);
    assert_true(fabs(g) <= sqrt(3.0) && fabs(h) <= sqrt(6.0));

    /* rank 1, [7]: glorot bound sqrt(6/14), he bound sqrt(6/7) */
    const int64_t n = 7;
    assert_true(same_bytes(init_value(ctx, tfl_init_glorot_uniform(10), TFL_DTYPE_FLOAT32, 1, &n),
                           tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, -sqrt(6.0 / 14.0),
                                              sqrt(6.0 / 14.0), 10)));
    assert_true(same_bytes(init_value(ctx, tfl_init_he_uniform(10), TFL_DTYPE_FLOAT32, 1, &n),
                           tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, -sqrt(6.0 / 7.0),
                                              sqrt(6.0 / 7.0), 10)));
    /* an empty tensor (fan 0 on one side) is fine */
    const int64_t empty[2] = {0, 4};
    tfl_tensor *e = init_value(ctx, tfl_init_glorot_uniform(11), TFL_DTYPE_FLOAT32, 2, empty);
    assert_shape(e, TFL_DTYPE_FLOAT32, 2, empty);
    assert_int_equal(tfl_tensor_numel(e), 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- TFL_INIT_TENSOR ------------------------------------------------------------------------- */

static void test_tensor_kind_copies_and_converts(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {2, 3};
    const int32_t iv[6] = {1, -2, 3, 40, -50, 600};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *src = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 2, shape, iv);
    assert_non_null(src);

    /* int32 -> float32 */
    tfl_tensor *t = init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_FLOAT32, 2, shape);
    assert_shape(t, TFL_DTYPE_FLOAT32, 2, shape);
    assert_ptr_not_equal(tfl_tensor_data_ptr(t), tfl_tensor_data_ptr(src));
    float *pf = host_bytes(t, NULL);
    for (int i = 0; i < 6; i++) assert_true(pf[i] == (float)iv[i]);
    free(pf);

    /* same dtype: still a copy */
    t = init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_INT32, 2, shape);
    assert_ptr_not_equal(tfl_tensor_data_ptr(t), tfl_tensor_data_ptr(src));
    assert_true(same_bytes(t, src));

    /* int32 -> float64, int64, complex64 */
    t = init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_FLOAT64, 2, shape);
    double *pd = host_bytes(t, NULL);
    for (int i = 0; i < 6; i++) assert_true(pd[i] == (double)iv[i]);
    free(pd);
    t = init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_INT64, 2, shape);
    int64_t *pl = host_bytes(t, NULL);
    for (int i = 0; i < 6; i++) assert_true(pl[i] == iv[i]);
    free(pl);
    t = init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_COMPLEX64, 2, shape);
    assert_shape(t, TFL_DTYPE_COMPLEX64, 2, shape);
    float *pc = host_bytes(t, NULL);
    for (int i = 0; i < 6; i++) assert_true(pc[2 * i] == (float)iv[i] && pc[2 * i + 1] == 0.0f);
    free(pc);

    /* float32 -> int32 converts like tfl_cast */
    int32_t *pi = NULL;
    const float fv[6] = {1.5f, -2.5f, 0.0f, 7.9f, -0.4f, 3.0f};
    tfl_tensor *fsrc = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, fv);
    assert_non_null(fsrc);
    t = init_value(ctx, tfl_init_tensor(fsrc), TFL_DTYPE_INT32, 2, shape);
    assert_true(same_bytes(t, tfl_cast(ctx, fsrc, TFL_DTYPE_INT32)));

    /* a strided view (transpose) copies in its logical row-major order */
    const int perm[2] = {1, 0};
    tfl_tensor *tr = tfl_transpose(ctx, src, perm);
    assert_non_null(tr);
    const int64_t tshape[2] = {3, 2};
    t = init_value(ctx, tfl_init_tensor(tr), TFL_DTYPE_FLOAT32, 2, tshape);
    assert_shape(t, TFL_DTYPE_FLOAT32, 2, tshape);
    assert_true(tfl_tensor_is_contiguous(t));
    pf = host_bytes(t, NULL);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++) assert_true(pf[r * 2 + c] == (float)iv[c * 3 + r]);
    free(pf);

    /* the same dtype from a strided view: a contiguous copy */
    t = init_value(ctx, tfl_init_tensor(tr), TFL_DTYPE_INT32, 2, tshape);
    assert_shape(t, TFL_DTYPE_INT32, 2, tshape);
    assert_true(tfl_tensor_is_contiguous(t));
    assert_ptr_not_equal(tfl_tensor_data_ptr(t), tfl_tensor_data_ptr(src));
    pi = host_bytes(t, NULL);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++) assert_int_equal(pi[r * 2 + c], iv[c * 3 + r]);
    free(pi);

    /* the source is untouched */
    pi = host_bytes(src, NULL);
    assert_memory_equal(pi, iv, sizeof iv);
    free(pi);

    /* rank 0 */
    tfl_tensor *s = tfl_scalar_f64(ctx, 2.25);
    t = init_value(ctx, tfl_init_tensor(s), TFL_DTYPE_FLOAT32, 0, NULL);
    double v = 0;
    assert_int_equal(tfl_tensor_get(t, 0, &v), TFL_OK);
    assert_true(v == 2.25);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_tensor_kind_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {2, 3}, other[2] = {3, 2}, flat[1] = {6};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *src = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, shape);
    assert_non_null(src);
    tfl_initializer in = tfl_init_tensor(src);

    /* another shape, same element count */
    assert_null(tfl_initializer_value(ctx, &in, TFL_DTYPE_FLOAT32, 2, other));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    /* another rank */
    assert_null(tfl_initializer_value(ctx, &in, TFL_DTYPE_FLOAT32, 1, flat));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_null(tfl_initializer_value(ctx, &in, TFL_DTYPE_FLOAT32, 0, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    /* no tensor */
    tfl_initializer none = tfl_init_tensor(NULL);
    assert_null(tfl_initializer_value(ctx, &none, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    /* a tensor of anoctx context */
    tfl_ctx *octx = tfl_ctx_new(NULL, NULL);
    assert_non_null(octx);
    tfl_tensor *foreign = tfl_ones(octx, TFL_DTYPE_FLOAT32, 2, shape);
    assert_non_null(foreign);
    tfl_initializer fin = tfl_init_tensor(foreign);
    assert_null(tfl_initializer_value(ctx, &fin, TFL_DTYPE_FLOAT32, 2, shape));
    assert_int_not_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_clear_error(ctx);
    tfl_tensor_release(foreign);
    tfl_ctx_free(octx);

    /* an uninitialized variable as value: FAILED_PRECONDITION */
    tfl_initializer z = tfl_init_zeros();
    tfl_tensor *var = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, shape, &z,
                                            &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    assert_non_null(var);
    assert_false(tfl_variable_is_initialized(var));
    tfl_initializer vin = tfl_init_tensor(var);
    assert_null(tfl_initializer_value(ctx, &vin, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, NULL);
    /* once initialized, a copy that does not share the variable's memory */
    assert_int_equal(tfl_variable_initialize(var), TFL_OK);
    tfl_tensor *cv = init_value(ctx, vin, TFL_DTYPE_FLOAT32, 2, shape);
    assert_false(tfl_tensor_is_variable(cv));
    assert_ptr_not_equal(tfl_tensor_data_ptr(cv), tfl_tensor_data_ptr(var));
    assert_true(same_bytes(cv, tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, shape)));
    tfl_tensor_release(var);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* The conversions TFL_INIT_TENSOR makes: the same dtype (a copy), a real (int, float)
 * value to a real or complex dtype, complex to complex (initializer.h), the same rule
 * tfl_variable_new_init applies to a tensor initializer. Others (complex to real, bool
 * either way) are INVALID_ARGUMENT. */
static void test_tensor_kind_conversion_rule(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {2, 3};
    int failures = 0;
    for (int from = TFL_DTYPE_BOOL; from < TFL_DTYPE_COUNT; from++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *src = tfl_ones(ctx, (tfl_dtype)from, 2, shape);
        assert_non_null(src);
        tfl_initializer in = tfl_init_tensor(src);
        for (int to = TFL_DTYPE_BOOL; to < TFL_DTYPE_COUNT; to++) {
            bool from_real = tfl_dtype_is_integer((tfl_dtype)from) ||
                             tfl_dtype_is_floating((tfl_dtype)from);
            bool to_real_or_complex = tfl_dtype_is_integer((tfl_dtype)to) ||
                                      tfl_dtype_is_floating((tfl_dtype)to) ||
                                      tfl_dtype_is_complex((tfl_dtype)to);
            bool ok = from == to || (from_real && to_real_or_complex) ||
                      (tfl_dtype_is_complex((tfl_dtype)from) && tfl_dtype_is_complex((tfl_dtype)to));
            tfl_tensor *t = tfl_initializer_value(ctx, &in, (tfl_dtype)to, 2, shape);
            tfl_status st = tfl_ctx_status(ctx);
            tfl_ctx_clear_error(ctx);
            tfl_tensor *v = tfl_variable_new_init(ctx, (tfl_dtype)to, 2, shape, &in, NULL);
            tfl_status vst = tfl_ctx_status(ctx);
            tfl_ctx_clear_error(ctx);
            if ((t != NULL) != ok || (ok ? st != TFL_OK : st != TFL_INVALID_ARGUMENT)) {
                print_error("initializer_value tensor %s -> %s: got %s (%s), want %s\n",
                            tfl_dtype_name((tfl_dtype)from), tfl_dtype_name((tfl_dtype)to),
                            t ? "a tensor" : "NULL", tfl_status_name(st),
                            ok ? "a tensor" : "INVALID_ARGUMENT");
                failures++;
            }
            if ((v != NULL) != ok || (ok ? vst != TFL_OK : vst != TFL_INVALID_ARGUMENT)) {
                print_error("variable_new_init tensor %s -> %s: got %s (%s), want %s\n",
                            tfl_dtype_name((tfl_dtype)from), tfl_dtype_name((tfl_dtype)to),
                            v ? "a variable" : "NULL", tfl_status_name(vst),
                            ok ? "a variable" : "INVALID_ARGUMENT");
                failures++;
            }
            if (t && v) assert_true(same_bytes(t, v));
            if (t) assert_int_equal(tfl_tensor_dtype(t), to);
            tfl_tensor_release(v);
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    assert_int_equal(failures, 0);
}

/* ---- errors ------------------------------------------------------------------------------------ */

static void test_random_kind_dtype_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {4, 5};
    const uint64_t before = live_tensors(ctx);

    tfl_initializer g = tfl_init_glorot_uniform(1);
    assert_null(tfl_initializer_value(ctx, &g, TFL_DTYPE_INT32, 2, shape));
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_has(e.message, "glorot_uniform");
    assert_has(e.message, "int32");
    tfl_ctx_clear_error(ctx);

    static const tfl_dtype bad[] = {TFL_DTYPE_BOOL, TFL_DTYPE_INT32, TFL_DTYPE_INT64,
                                    TFL_DTYPE_COMPLEX64, TFL_DTYPE_COMPLEX128};
    for (int k = 0; k < N_SEEDED; k++) {
        for (int s = 0; s < 2; s++) {
            tfl_initializer in = seeded(k, s ? 7 : 0);
            for (size_t d = 0; d < sizeof bad / sizeof bad[0]; d++) {
                assert_null(tfl_initializer_value(ctx, &in, bad[d], 2, shape));
                e = tfl_ctx_error(ctx);
                if (e.code != TFL_INVALID_ARGUMENT || !strstr(e.message, tfl_init_kind_name(in.kind)) ||
                    !strstr(e.message, tfl_dtype_name(bad[d]))) {
                    print_error("%s/%s: %s: %s\n", tfl_init_kind_name(in.kind),
                                tfl_dtype_name(bad[d]), tfl_status_name(e.code), e.message);
                    fail();
                }
                tfl_ctx_clear_error(ctx);
            }
        }
    }
    /* an invalid dtype for the constant kinds too */
    tfl_initializer z = tfl_init_zeros();
    assert_null(tfl_initializer_value(ctx, &z, TFL_DTYPE_INVALID, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_null(tfl_initializer_value(ctx, &z, (tfl_dtype)77, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_int_equal(live_tensors(ctx), before);
}

/* A failed unseeded call consumes no stream: the next good call matches a fresh ctx. */
static void test_failed_call_keeps_stream(void **state)
{
    (void)state;
    tfl_ctx *a = tfl_ctx_new(&(tfl_ctx_opts){.seed = 8}, NULL);
    tfl_ctx *b = tfl_ctx_new(&(tfl_ctx_opts){.seed = 8}, NULL);
    assert_non_null(a);
    assert_non_null(b);
    const int64_t shape[2] = {4, 5};
    tfl_initializer g = tfl_init_glorot_uniform(0);
    assert_null(tfl_initializer_value(a, &g, TFL_DTYPE_INT32, 2, shape));
    tfl_ctx_clear_error(a);
    tfl_initializer bad = tfl_init_random_normal(0.0, -1.0, 0);
    assert_null(tfl_initializer_value(a, &bad, TFL_DTYPE_FLOAT32, 2, shape));
    tfl_ctx_clear_error(a);
    tfl_tensor *x = init_value(a, g, TFL_DTYPE_FLOAT32, 2, shape);
    tfl_tensor *y = init_value(b, g, TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(x, y));
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    tfl_ctx_free(a);
    tfl_ctx_free(b);
}

static void test_bad_arguments(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {4, 5};
    const uint64_t before = live_tensors(ctx);

    /* NULL initializer, NULL ctx */
    assert_null(tfl_initializer_value(ctx, NULL, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    tfl_initializer z = tfl_init_zeros();
    assert_null(tfl_initializer_value(NULL, &z, TFL_DTYPE_FLOAT32, 2, shape));

    /* unknown kinds */
    tfl_initializer k99 = {(tfl_init_kind)99, 0, 0, 0, NULL};
    assert_null(tfl_initializer_value(ctx, &k99, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    tfl_initializer kc = {TFL_INIT_KIND_COUNT, 0, 0, 0, NULL};
    assert_null(tfl_initializer_value(ctx, &kc, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    tfl_initializer kneg = {(tfl_init_kind)-1, 0, 0, 0, NULL};
    assert_null(tfl_initializer_value(ctx, &kneg, TFL_DTYPE_FLOAT32, 2, shape));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);

    /* bad random parameters */
    struct {
        tfl_initializer init;
        const char *what;
    } bad[] = {
        {tfl_init_random_normal(0.0, -1.0, 1), "normal stddev < 0"},
        {tfl_init_truncated_normal(0.0, -0.5, 1), "truncated stddev < 0"},
        {tfl_init_random_normal(0.0, NAN, 1), "normal stddev NaN"},
        {tfl_init_random_normal(INFINITY, 1.0, 1), "normal mean inf"},
        {tfl_init_truncated_normal(0.0, INFINITY, 1), "truncated stddev inf"},
        {tfl_init_random_uniform(1.0, 1.0, 1), "uniform minval == maxval"},
        {tfl_init_random_uniform(2.0, 1.0, 1), "uniform minval > maxval"},
        {tfl_init_random_uniform(NAN, 1.0, 1), "uniform NaN"},
        {tfl_init_random_uniform(0.0, INFINITY, 1), "uniform inf"},
        {tfl_init_random_normal(0.0, -1.0, 0), "normal stddev < 0, seed 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tfl_tensor *t = tfl_initializer_value(ctx, &bad[i].init, TFL_DTYPE_FLOAT32, 2, shape);
        tfl_error e = tfl_ctx_error(ctx);
        if (t || e.code != TFL_INVALID_ARGUMENT) {
            print_error("%s: got %p, %s: %s\n", bad[i].what, (void *)t, tfl_status_name(e.code),
                        e.message);
            fail();
        }
        tfl_ctx_clear_error(ctx);
    }

    /* bad shapes, for a constant and a random kind */
    tfl_initializer kinds[2] = {tfl_init_ones(), tfl_init_he_normal(3)};
    const int64_t neg[2] = {4, -1};
    const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < 2; k++) {
        assert_null(tfl_initializer_value(ctx, &kinds[k], TFL_DTYPE_FLOAT32, 9, s9));
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
        assert_null(tfl_initializer_value(ctx, &kinds[k], TFL_DTYPE_FLOAT32, -1, shape));
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
        assert_null(tfl_initializer_value(ctx, &kinds[k], TFL_DTYPE_FLOAT32, 2, NULL));
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
        assert_null(tfl_initializer_value(ctx, &kinds[k], TFL_DTYPE_FLOAT32, 2, neg));
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    }
    assert_int_equal(live_tensors(ctx), before);
}

/* ---- ownership -------------------------------------------------------------------------------- */

static void test_ownership(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {3, 4};
    const uint64_t base = live_tensors(ctx);
    /* no frame open: the caller owns it */
    tfl_tensor *t = init_value(ctx, tfl_init_glorot_normal(2), TFL_DTYPE_FLOAT32, 2, shape);
    assert_int_equal(live_tensors(ctx), base + 1);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), base);
    /* a frame owns it */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const float v[12] = {0};
    tfl_tensor *src = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, v);
    for (int k = 0; k < N_SEEDED; k++) init_value(ctx, seeded(k, 5), TFL_DTYPE_FLOAT32, 2, shape);
    init_value(ctx, tfl_init_zeros(), TFL_DTYPE_INT32, 2, shape);
    init_value(ctx, tfl_init_tensor(src), TFL_DTYPE_FLOAT64, 2, shape);
    assert_true(live_tensors(ctx) > base);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), base);
}

/* ---- variables from initializers ------------------------------------------------------------ */

static tfl_initializer any_kind(int k, uint64_t seed, const tfl_tensor *value)
{
    switch (k) {
    case TFL_INIT_ZEROS: return tfl_init_zeros();
    case TFL_INIT_ONES: return tfl_init_ones();
    case TFL_INIT_CONSTANT: return tfl_init_constant(-0.625);
    case TFL_INIT_RANDOM_UNIFORM: return tfl_init_random_uniform(-0.5, 0.25, seed);
    case TFL_INIT_RANDOM_NORMAL: return tfl_init_random_normal(0.1, 0.3, seed);
    case TFL_INIT_TRUNCATED_NORMAL: return tfl_init_truncated_normal(0.0, 0.2, seed);
    case TFL_INIT_GLOROT_UNIFORM: return tfl_init_glorot_uniform(seed);
    case TFL_INIT_GLOROT_NORMAL: return tfl_init_glorot_normal(seed);
    case TFL_INIT_HE_UNIFORM: return tfl_init_he_uniform(seed);
    case TFL_INIT_HE_NORMAL: return tfl_init_he_normal(seed);
    default: return tfl_init_tensor(value);
    }
}

static void test_variable_new_init_matches(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[4] = {3, 3, 4, 6};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *value = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 4, shape, -9, 9, 555);
    assert_non_null(value);
    static const tfl_dtype dts[] = {TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64, TFL_DTYPE_BFLOAT16};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (int k = 0; k < TFL_INIT_KIND_COUNT; k++) {
            tfl_initializer in = any_kind(k, 4242 + (uint64_t)k, value);
            tfl_tensor *v = tfl_variable_new_init(ctx, dts[d], 4, shape, &in, NULL);
            if (!v) print_error("variable %s: %s\n", tfl_init_kind_name(in.kind),
                                tfl_ctx_error(ctx).message);
            assert_non_null(v);
            assert_true(tfl_tensor_is_variable(v));
            assert_true(tfl_variable_is_initialized(v));
            assert_shape(v, dts[d], 4, shape);
            tfl_tensor *want = init_value(ctx, in, dts[d], 4, shape);
            assert_true(same_bytes(v, want));
            if (k == TFL_INIT_TENSOR)
                assert_ptr_not_equal(tfl_tensor_data_ptr(v), tfl_tensor_data_ptr(value));
            tfl_tensor_release(v);
        }
    }
    /* integer variables from the constant kinds */
    for (int k = TFL_INIT_ZEROS; k <= TFL_INIT_CONSTANT; k++) {
        tfl_initializer in = any_kind(k, 0, NULL);
        tfl_tensor *v = tfl_variable_new_init(ctx, TFL_DTYPE_INT32, 4, shape, &in, NULL);
        assert_non_null(v);
        assert_true(same_bytes(v, init_value(ctx, in, TFL_DTYPE_INT32, 4, shape)));
        tfl_tensor_release(v);
    }
    /* TFL_DTYPE_INVALID: float32 */
    tfl_initializer gu = tfl_init_glorot_uniform(8);
    tfl_tensor *v = tfl_variable_new_init(ctx, TFL_DTYPE_INVALID, 4, shape, &gu, NULL);
    assert_non_null(v);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT32);
    assert_true(same_bytes(v, init_value(ctx, gu, TFL_DTYPE_FLOAT32, 4, shape)));
    tfl_tensor_release(v);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* init NULL is glorot_uniform with seed 0: the ctx's next stream. */
static void test_variable_default_init(void **state)
{
    (void)state;
    tfl_ctx *a = tfl_ctx_new(&(tfl_ctx_opts){.seed = 31337}, NULL);
    tfl_ctx *b = tfl_ctx_new(&(tfl_ctx_opts){.seed = 31337}, NULL);
    assert_non_null(a);
    assert_non_null(b);
    const int64_t shape[2] = {40, 30};
    tfl_tensor *va = tfl_variable_new_init(a, TFL_DTYPE_INVALID, 2, shape, NULL, NULL);
    tfl_tensor *vb = tfl_variable_new_init(a, TFL_DTYPE_FLOAT32, 2, shape, NULL, NULL);
    assert_non_null(va);
    assert_non_null(vb);
    assert_false(same_bytes(va, vb)); /* two successive seed-0 draws */
    tfl_initializer g0 = tfl_init_glorot_uniform(0);
    tfl_tensor *wa = init_value(b, g0, TFL_DTYPE_FLOAT32, 2, shape);
    tfl_tensor *wb = init_value(b, g0, TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(va, wa));
    assert_true(same_bytes(vb, wb));
    /* a deferred seed-0 variable draws the next stream on each initialize */
    tfl_tensor *vd = tfl_variable_new_init(a, TFL_DTYPE_FLOAT32, 2, shape, &g0,
                                           &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    assert_non_null(vd);
    assert_int_equal(tfl_variable_initialize(vd), TFL_OK);
    tfl_tensor *wc = init_value(b, g0, TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(vd, wc));
    assert_int_equal(tfl_variable_initialize(vd), TFL_OK);
    tfl_tensor *wd = init_value(b, g0, TFL_DTYPE_FLOAT32, 2, shape);
    assert_false(same_bytes(vd, wc));
    assert_true(same_bytes(vd, wd));
    tfl_tensor_release(vd);
    tfl_tensor_release(wc);
    tfl_tensor_release(wd);
    tfl_tensor_release(va);
    tfl_tensor_release(vb);
    tfl_tensor_release(wa);
    tfl_tensor_release(wb);
    tfl_ctx_free(a);
    tfl_ctx_free(b);
}

static void test_variable_deferred_and_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[2] = {20, 10};
    const uint64_t base = live_tensors(ctx);

    /* deferred: the seeded initializer runs on initialize, and again gives the same values */
    tfl_initializer hn = tfl_init_he_normal(606);
    tfl_tensor *v = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, shape, &hn,
                                          &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    assert_non_null(v);
    assert_false(tfl_variable_is_initialized(v));
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    assert_true(tfl_variable_is_initialized(v));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *want = init_value(ctx, hn, TFL_DTYPE_FLOAT32, 2, shape);
    assert_true(same_bytes(v, want));
    assert_int_equal(tfl_variable_initialize(v), TFL_OK);
    assert_true(same_bytes(v, want));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);

    /* a random initializer for an integer variable */
    tfl_initializer gu = tfl_init_glorot_uniform(1);
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_INT32, 2, shape, &gu, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "glorot_uniform");
    /* a tensor initializer of another shape */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const int64_t other[2] = {10, 20};
    tfl_tensor *src = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, other);
    tfl_initializer ti = tfl_init_tensor(src);
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, shape, &ti, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    /* bad parameters, unknown kind */
    tfl_initializer bn = tfl_init_random_normal(0, -1, 1);
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, shape, &bn, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    tfl_initializer k99 = {(tfl_init_kind)99, 0, 0, 0, NULL};
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 2, shape, &k99, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, NULL);
    assert_int_equal(live_tensors(ctx), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fans_ranks),
        cmocka_unit_test(test_fans_errors),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test_setup_teardown(test_constant_kinds_match_fill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constant_values, setup, teardown),
        cmocka_unit_test(test_constant_kinds_leave_stream),
        cmocka_unit_test_setup_teardown(test_random_kinds_match_random_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variance_scaling_recipes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seeded_deterministic, setup, teardown),
        cmocka_unit_test(test_seed0_ctx_stream),
        cmocka_unit_test_setup_teardown(test_glorot_uniform_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_he_uniform_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_glorot_normal_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_he_normal_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_kinds_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_float_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_rank_fans_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_kind_copies_and_converts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_kind_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_kind_conversion_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_kind_dtype_errors, setup, teardown),
        cmocka_unit_test(test_failed_call_keeps_stream),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ownership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variable_new_init_matches, setup, teardown),
        cmocka_unit_test(test_variable_default_init),
        cmocka_unit_test_setup_teardown(test_variable_deferred_and_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
