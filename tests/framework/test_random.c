/* test_random.c: tests of the seeded random tensors (tapeflow/random.h): the Philox4x32-10
 * block function against Random123's known answers, the documented stream layout, seeds and
 * the ctx seed, independence from the thread count, the distributions' moments, the 16-bit
 * dtypes, shapes, and every error path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

/* The block function is a static inline in a private header: nothing extra is exported. */
#include "../../framework/core_api/philox.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* t's values as doubles (any real dtype), malloc'ed. */
static double *values(tfl_ctx *ctx, const tfl_tensor *t)
{
    int64_t n = tfl_tensor_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    assert_non_null(v);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *d = tfl_cast(ctx, t, TFL_DTYPE_FLOAT64);
    assert_non_null(d);
    assert_int_equal(tfl_tensor_to_host(d, v, (size_t)n * sizeof *v), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    return v;
}

/* True when two tensors hold the same bytes (same dtype and element count). */
static bool same_bytes(const tfl_tensor *a, const tfl_tensor *b)
{
    size_t na, nb;
    void *pa = host_bytes(a, &na), *pb = host_bytes(b, &nb);
    bool same = na == nb && tfl_tensor_dtype(a) == tfl_tensor_dtype(b) && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
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

static void within(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol)) {
        print_error("%s: got %.6g, want %.6g +- %.3g\n", what, got, want, tol);
        fail();
    }
}

/* ---- Philox4x32-10: Random123's kat_vectors ------------------------------------------------ */

static void test_philox_known_answers(void **state)
{
    (void)state;
    static const struct {
        uint32_t ctr[4], key[2], want[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        uint32_t out[4];
        tfl__philox4x32_10(kat[k].ctr, kat[k].key, out);
        for (int j = 0; j < 4; j++) assert_int_equal(out[j], kat[k].want[j]);
    }
}

/* ---- the stream layout documented in random.h ---------------------------------------------- */

static void block_at(const uint32_t key[2], uint64_t i, uint32_t attempt, uint32_t r[4])
{
    const uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), attempt, 0};
    tfl__philox4x32_10(ctr, key, r);
}

static double u53(uint32_t x, uint32_t y)
{
    return (double)((((uint64_t)y << 32) | x) >> 11) * 0x1p-53;
}

static void test_stream_layout(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const uint64_t seed = 0x0123456789abcdefull;
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const int64_t n = 37;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);

    /* uniform float64 and float32 in [0, 1): the bits exactly */
    tfl_tensor *u64 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0.0, 1.0, seed);
    tfl_tensor *u32 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, seed);
    assert_non_null(u64);
    assert_non_null(u32);
    double *d = host_bytes(u64, NULL);
    float *s = host_bytes(u32, NULL);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        block_at(key, (uint64_t)i, 0, r);
        assert_true(d[i] == u53(r[0], r[1]));
        assert_true(s[i] == (float)((double)(r[0] >> 8) * 0x1p-24));
    }
    free(d);
    free(s);

    /* normal float64 by Box-Muller from (u53o, u53) */
    tfl_tensor *z = tfl_random_normal(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0.0, 1.0, seed);
    assert_non_null(z);
    d = host_bytes(z, NULL);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        block_at(key, (uint64_t)i, 0, r);
        double u1 = u53(r[0], r[1]) + 0x1p-53, u2 = u53(r[2], r[3]);
        double want = sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2);
        within(d[i], want, 1e-12, "normal layout");
    }
    free(d);

    /* the first unseeded call after tfl_ctx_set_seed(S): key from philox((0,0,0,~0), S) */
    const uint64_t S = 0xfeedfacecafebeefull;
    assert_int_equal(tfl_ctx_set_seed(ctx, S), TFL_OK);
    tfl_tensor *un = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0.0, 1.0, 0);
    assert_non_null(un);
    const uint32_t sctr[4] = {0, 0, 0, 0xffffffffu}, skey[2] = {(uint32_t)S, (uint32_t)(S >> 32)};
    uint32_t b[4];
    tfl__philox4x32_10(sctr, skey, b);
    const uint32_t ukey[2] = {b[0], b[1]};
    d = host_bytes(un, NULL);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        block_at(ukey, (uint64_t)i, 0, r);
        assert_true(d[i] == u53(r[0], r[1]));
    }
    free(d);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- seeds ---------------------------------------------------------------------------------- */

static void test_same_seed_same_values(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_ctx *other = tfl_ctx_new(&(tfl_ctx_opts){.seed = 99}, NULL);
    assert_non_null(other);
    const int64_t shape[2] = {17, 33};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int dt = TFL_DTYPE_FLOAT16; dt <= TFL_DTYPE_FLOAT64; dt++) {
        tfl_tensor *a = tfl_random_uniform(ctx, (tfl_dtype)dt, 2, shape, -1.0, 1.0, 7);
        tfl_tensor *b = tfl_random_uniform(ctx, (tfl_dtype)dt, 2, shape, -1.0, 1.0, 7);
        tfl_tensor *c = tfl_random_uniform(other, (tfl_dtype)dt, 2, shape, -1.0, 1.0, 7);
        assert_true(same_bytes(a, b));
        assert_true(same_bytes(a, c));
        tfl_tensor_release(c);
        a = tfl_random_normal(ctx, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        b = tfl_random_normal(ctx, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        c = tfl_random_normal(other, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        assert_true(same_bytes(a, b));
        assert_true(same_bytes(a, c));
        tfl_tensor_release(c);
        a = tfl_truncated_normal(ctx, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        b = tfl_truncated_normal(ctx, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        c = tfl_truncated_normal(other, (tfl_dtype)dt, 2, shape, 0.0, 1.0, 7);
        assert_true(same_bytes(a, b));
        assert_true(same_bytes(a, c));
        tfl_tensor_release(c);
    }
    /* element i depends on i only: a prefix of a longer flat tensor, whatever the shape */
    const int64_t n = 17 * 33, longer = 1000;
    tfl_tensor *flat = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &longer, 0.0, 1.0, 7);
    tfl_tensor *mat = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 2, shape, 0.0, 1.0, 7);
    float *pf = host_bytes(flat, NULL), *pm = host_bytes(mat, NULL);
    assert_memory_equal(pf, pm, (size_t)n * sizeof(float));
    free(pf);
    free(pm);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(other), TFL_OK);
    tfl_ctx_free(other);
}

static void test_threads_do_not_change_values(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 100003; /* above the parallel threshold, not a multiple of anything */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int dt = TFL_DTYPE_FLOAT16; dt <= TFL_DTYPE_FLOAT64; dt++) {
        tfl_tensor *one[4], *two[4];
        for (int pass = 0; pass < 2; pass++) {
            assert_int_equal(tfl_ctx_set_num_threads(ctx, pass ? 2 : 1), TFL_OK);
            assert_int_equal(tfl_ctx_set_seed(ctx, 5), TFL_OK);
            tfl_tensor **out = pass ? two : one;
            out[0] = tfl_random_uniform(ctx, (tfl_dtype)dt, 1, &n, -3.0, 3.0, 11);
            out[1] = tfl_random_normal(ctx, (tfl_dtype)dt, 1, &n, 1.0, 2.0, 11);
            out[2] = tfl_truncated_normal(ctx, (tfl_dtype)dt, 1, &n, 1.0, 2.0, 11);
            out[3] = tfl_random_uniform(ctx, (tfl_dtype)dt, 1, &n, 0.0, 1.0, 0);
        }
        for (int k = 0; k < 4; k++) assert_true(same_bytes(one[k], two[k]));
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_different_seeds_differ(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 256;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 1);
    tfl_tensor *b = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 2);
    tfl_tensor *c = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 1ull << 32);
    float *pa = host_bytes(a, NULL), *pb = host_bytes(b, NULL), *pc = host_bytes(c, NULL);
    int same_ab = 0, same_ac = 0;
    for (int64_t i = 0; i < n; i++) {
        same_ab += pa[i] == pb[i];
        same_ac += pa[i] == pc[i];
    }
    assert_true(same_ab < 4);
    assert_true(same_ac < 4);
    free(pa);
    free(pb);
    free(pc);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Replicas (data-parallel ranks): own unseeded draws, Dropout masks included, from the same
 * (seed, calls) state; replica 0 is a plain context; seeded calls are not affected. */
static void test_replica_streams(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 256;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_rng_replica(ctx), 0);
    assert_int_equal(tfl_ctx_set_seed(ctx, 9), TFL_OK);
    tfl_tensor *r0 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    tfl_tensor *ones = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.0);
    assert_non_null(ones);
    tfl_tensor *m0 = tfl_dropout(ctx, ones, 0.5, 0);
    tfl_tensor *s0 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 77);
    uint64_t seed0, calls0;
    assert_int_equal(tfl_ctx_rng_state(ctx, &seed0, &calls0), TFL_OK);

    assert_int_equal(tfl_ctx_set_rng_replica(ctx, 1), TFL_OK);
    assert_int_equal(tfl_ctx_rng_replica(ctx), 1);
    assert_int_equal(tfl_ctx_set_seed(ctx, 9), TFL_OK);
    tfl_tensor *r1 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    tfl_tensor *m1 = tfl_dropout(ctx, ones, 0.5, 0);
    tfl_tensor *s1 = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 77);
    uint64_t seed1, calls1;
    assert_int_equal(tfl_ctx_rng_state(ctx, &seed1, &calls1), TFL_OK);
    assert_false(same_bytes(r0, r1));
    assert_false(same_bytes(m0, m1));
    assert_true(same_bytes(s0, s1));               /* a given seed is a given seed */
    assert_true(seed0 == seed1 && calls0 == calls1); /* the state a checkpoint keeps */

    /* replica 0 again: the plain context's draws */
    assert_int_equal(tfl_ctx_set_rng_replica(ctx, 0), TFL_OK);
    assert_int_equal(tfl_ctx_set_seed(ctx, 9), TFL_OK);
    tfl_tensor *again = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_true(same_bytes(r0, again));

    assert_int_equal(tfl_ctx_set_rng_replica(ctx, -1), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "index is -1; expected >= 0");
    assert_int_equal(tfl_ctx_rng_replica(ctx), 0);
    assert_int_equal(tfl_ctx_set_rng_replica(NULL, 1), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_rng_replica(NULL), -1);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_unseeded_calls(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 128;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    tfl_tensor *b = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_false(same_bytes(a, b));

    /* set_seed restarts the sequence; seeded calls in between do not advance it */
    assert_int_equal(tfl_ctx_set_seed(ctx, 42), TFL_OK);
    tfl_tensor *c = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    tfl_tensor *d = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_int_equal(tfl_ctx_set_seed(ctx, 42), TFL_OK);
    tfl_tensor *e = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_non_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 123));
    /* a failed unseeded call does not take a stream either */
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.0, 0.0, 0));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "minval");
    tfl_tensor *g = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_true(same_bytes(c, e));
    assert_true(same_bytes(d, g));
    assert_false(same_bytes(c, a));

    /* a ctx created with seed 42 starts the same sequence */
    tfl_ctx *other = tfl_ctx_new(&(tfl_ctx_opts){.seed = 42}, NULL);
    assert_non_null(other);
    tfl_tensor *h = tfl_random_normal(other, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_true(same_bytes(c, h));
    tfl_tensor_release(h);
    tfl_ctx_free(other);

    /* set_seed(0) is the default seed of a fresh context */
    other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    h = tfl_random_normal(other, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_int_equal(tfl_ctx_set_seed(ctx, 0), TFL_OK);
    tfl_tensor *k = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 0);
    assert_true(same_bytes(h, k));
    assert_true(same_bytes(a, k)); /* this fixture's ctx also started from the default */
    tfl_tensor_release(h);
    tfl_ctx_free(other);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- distributions -------------------------------------------------------------------------- */

#define N_STATS 100000

static void check_uniform(tfl_ctx *ctx, tfl_dtype dt, double a, double b, uint64_t seed)
{
    const int64_t n = N_STATS;
    tfl_tensor *t = tfl_random_uniform(ctx, dt, 1, &n, a, b, seed);
    assert_non_null(t);
    assert_int_equal(tfl_tensor_dtype(t), dt);
    double *v = values(ctx, t);
    for (int64_t i = 0; i < n; i++)
        if (!(v[i] >= a && v[i] < b)) {
            print_error("%s element %lld = %.9g outside [%g, %g)\n", tfl_dtype_name(dt),
                        (long long)i, v[i], a, b);
            fail();
        }
    double m, var, w = b - a;
    moments(v, n, &m, &var);
    within(m, (a + b) / 2, 4 * sqrt(w * w / 12 / n), "uniform mean");
    within(var, w * w / 12, 4 * sqrt(w * w * w * w / 180 / n), "uniform variance");
    free(v);
    tfl_tensor_release(t);
}

static void test_uniform_distribution(void **state)
{
    fixture *f = *state;
    check_uniform(f->ctx, TFL_DTYPE_FLOAT64, -2.0, 3.0, 1234);
    check_uniform(f->ctx, TFL_DTYPE_FLOAT32, -2.0, 3.0, 1234);
    check_uniform(f->ctx, TFL_DTYPE_FLOAT32, 10.0, 10.5, 77);
    /* 16-bit dtypes: [0, 1) keeps 1.0 out although many values round up to it */
    check_uniform(f->ctx, TFL_DTYPE_FLOAT16, 0.0, 1.0, 99);
    check_uniform(f->ctx, TFL_DTYPE_BFLOAT16, 0.0, 1.0, 99);
    check_uniform(f->ctx, TFL_DTYPE_BFLOAT16, -1.0, 0.0, 99);
}

/* A range only two float32 values wide: every value is minval, never maxval. */
static void test_uniform_narrow_range(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const float lo = 1.0f, hi = nextafterf(1.0f, 2.0f);
    const int64_t n = 1000;
    tfl_tensor *t = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, lo, hi, 3);
    assert_non_null(t);
    float *v = host_bytes(t, NULL);
    for (int64_t i = 0; i < n; i++) assert_true(v[i] == lo);
    free(v);
    tfl_tensor_release(t);
}

static void check_normal(tfl_ctx *ctx, tfl_dtype dt, double mean, double sd, uint64_t seed)
{
    const int64_t n = N_STATS;
    tfl_tensor *t = tfl_random_normal(ctx, dt, 1, &n, mean, sd, seed);
    assert_non_null(t);
    assert_int_equal(tfl_tensor_dtype(t), dt);
    double *v = values(ctx, t);
    double m, var;
    moments(v, n, &m, &var);
    double tol_half = dt == TFL_DTYPE_BFLOAT16 ? 0.01 : dt == TFL_DTYPE_FLOAT16 ? 0.002 : 0.0;
    within(m, mean, 4 * sd / sqrt((double)n) + tol_half * fabs(mean), "normal mean");
    within(var, sd * sd, 4 * sd * sd * sqrt(2.0 / n) + tol_half * sd * sd, "normal variance");
    /* tails: about 4.55% beyond 2 sd, 0.27% beyond 3 sd */
    int64_t beyond2 = 0, beyond3 = 0;
    for (int64_t i = 0; i < n; i++) {
        beyond2 += fabs(v[i] - mean) > 2 * sd;
        beyond3 += fabs(v[i] - mean) > 3 * sd;
    }
    within((double)beyond2 / n, 0.0455, 0.004, "normal mass beyond 2 sd");
    within((double)beyond3 / n, 0.0027, 0.0008, "normal mass beyond 3 sd");
    free(v);
    tfl_tensor_release(t);
}

static void test_normal_distribution(void **state)
{
    fixture *f = *state;
    check_normal(f->ctx, TFL_DTYPE_FLOAT64, 1.5, 2.0, 2024);
    check_normal(f->ctx, TFL_DTYPE_FLOAT32, 1.5, 2.0, 2024);
    check_normal(f->ctx, TFL_DTYPE_FLOAT32, 0.0, 1.0, 31337);
    check_normal(f->ctx, TFL_DTYPE_FLOAT16, -0.5, 0.25, 8);
    check_normal(f->ctx, TFL_DTYPE_BFLOAT16, 0.0, 1.0, 8);

    /* stddev 0 gives the mean everywhere */
    const int64_t n = 10;
    tfl_tensor *t = tfl_random_normal(f->ctx, TFL_DTYPE_FLOAT64, 1, &n, 3.25, 0.0, 1);
    double *v = values(f->ctx, t);
    for (int64_t i = 0; i < n; i++) assert_true(v[i] == 3.25);
    free(v);
    tfl_tensor_release(t);
}

static void check_truncated(tfl_ctx *ctx, tfl_dtype dt, double mean, double sd, uint64_t seed)
{
    const int64_t n = N_STATS;
    tfl_tensor *t = tfl_truncated_normal(ctx, dt, 1, &n, mean, sd, seed);
    assert_non_null(t);
    assert_int_equal(tfl_tensor_dtype(t), dt);
    double *v = values(ctx, t);
    /* rounding to dtype may move a value at the bound by half an ulp */
    double ulp = dt == TFL_DTYPE_FLOAT64 ? 1e-15 : dt == TFL_DTYPE_FLOAT32 ? 1e-6
                 : dt == TFL_DTYPE_FLOAT16 ? 1e-3 : 1e-2;
    double bound = 2 * sd + ulp * (fabs(mean) + 2 * sd);
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(v[i] - mean) <= bound)) {
            print_error("%s element %lld = %.9g is more than 2 sd from %g\n", tfl_dtype_name(dt),
                        (long long)i, v[i], mean);
            fail();
        }
    double m, var;
    moments(v, n, &m, &var);
    const double vt = 0.77374 * sd * sd; /* variance of a normal truncated at +-2 sd */
    within(m, mean, 4 * sqrt(vt / n) + ulp * fabs(mean), "truncated normal mean");
    within(var, vt, 0.02 * vt + 2 * ulp * sd * sd, "truncated normal variance");
    free(v);
    tfl_tensor_release(t);
}

static void test_truncated_normal_distribution(void **state)
{
    fixture *f = *state;
    check_truncated(f->ctx, TFL_DTYPE_FLOAT64, 0.5, 2.0, 55);
    check_truncated(f->ctx, TFL_DTYPE_FLOAT32, 0.0, 1.0, 55);
    check_truncated(f->ctx, TFL_DTYPE_FLOAT32, -3.0, 0.1, 56);
    check_truncated(f->ctx, TFL_DTYPE_FLOAT16, 0.0, 1.0, 57);
    check_truncated(f->ctx, TFL_DTYPE_BFLOAT16, 0.0, 0.05, 58);

    /* a float32 standard truncated normal never exceeds 2 exactly */
    const int64_t n = N_STATS;
    tfl_tensor *t = tfl_truncated_normal(f->ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 59);
    float *v = host_bytes(t, NULL);
    for (int64_t i = 0; i < n; i++) assert_true(fabsf(v[i]) <= 2.0f);
    free(v);
    tfl_tensor_release(t);
}

/* float16 / bfloat16 are the float32 values rounded: same seed, same stream. */
static void test_half_dtypes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t shape[3] = {4, 5, 6};
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *ref = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 3, shape, 0.0, 1.0, 21);
    tfl_tensor *h = tfl_random_normal(ctx, TFL_DTYPE_FLOAT16, 3, shape, 0.0, 1.0, 21);
    tfl_tensor *bf = tfl_random_normal(ctx, TFL_DTYPE_BFLOAT16, 3, shape, 0.0, 1.0, 21);
    assert_int_equal(tfl_tensor_dtype(h), TFL_DTYPE_FLOAT16);
    assert_int_equal(tfl_tensor_dtype(bf), TFL_DTYPE_BFLOAT16);
    assert_int_equal(tfl_tensor_rank(h), 3);
    assert_int_equal(tfl_tensor_dim(bf, 2), 6);
    /* exactly the float32 tensor cast to the 16-bit dtypes */
    assert_true(same_bytes(h, tfl_cast(ctx, ref, TFL_DTYPE_FLOAT16)));
    assert_true(same_bytes(bf, tfl_cast(ctx, ref, TFL_DTYPE_BFLOAT16)));
    double *r = values(ctx, ref), *vh = values(ctx, h), *vb = values(ctx, bf);
    for (int i = 0; i < 120; i++) {
        within(vh[i], r[i], fabs(r[i]) * 0x1p-11 + 0x1p-24, "float16 rounding");
        within(vb[i], r[i], fabs(r[i]) * 0x1p-8 + 1e-30, "bfloat16 rounding");
    }
    free(r);
    free(vh);
    free(vb);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* ---- shapes and ownership ------------------------------------------------------------------- */

static void test_shapes_and_frames(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    uint64_t live = live_tensors(ctx);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *s = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 0, NULL, 0.0, 1.0, 1);
    assert_non_null(s);
    assert_int_equal(tfl_tensor_rank(s), 0);
    assert_int_equal(tfl_tensor_numel(s), 1);
    assert_string_equal(tfl_tensor_device(s), "CPU:0");
    const int64_t empty[2] = {3, 0};
    tfl_tensor *e = tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 2, empty, 0.0, 1.0, 1);
    assert_non_null(e);
    assert_int_equal(tfl_tensor_numel(e), 0);
    const int64_t r8[8] = {1, 2, 1, 2, 1, 2, 1, 3};
    tfl_tensor *t8 = tfl_truncated_normal(ctx, TFL_DTYPE_BFLOAT16, 8, r8, 0.0, 1.0, 0);
    assert_non_null(t8);
    assert_int_equal(tfl_tensor_numel(t8), 24);
    assert_true(live_tensors(ctx) == live + 3);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_true(live_tensors(ctx) == live);

    /* with no frame open the caller owns the tensor */
    tfl_tensor *own = tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, r8 + 7, 0.0, 1.0, 1);
    assert_non_null(own);
    assert_true(live_tensors(ctx) == live + 1);
    tfl_tensor_release(own);
    assert_true(live_tensors(ctx) == live);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void test_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t n = 4, shape[2] = {2, 3}, neg[2] = {2, -3};
    const int64_t huge[3] = {INT64_C(1) << 30, INT64_C(1) << 30, INT64_C(1) << 30};

    /* dtypes */
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_INT32, 1, &n, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                 "RandomUniform: dtype int32 is not supported; expected one of float16, bfloat16, "
                 "float32, float64");
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_COMPLEX64, 1, &n, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomNormal: dtype complex64 is not supported");
    assert_null(tfl_truncated_normal(ctx, TFL_DTYPE_BOOL, 1, &n, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "TruncatedNormal: dtype bool is not supported");
    assert_null(tfl_random_uniform(ctx, (tfl_dtype)99, 1, &n, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: dtype invalid is not supported");
    assert_null(tfl_random_uniform(ctx, (tfl_dtype)-1, 1, &n, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "expected one of float16");

    /* shapes */
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 9, shape, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: rank 9 is out of range (0..8)");
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, -1, shape, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomNormal: rank -1 is out of range");
    assert_null(tfl_truncated_normal(ctx, TFL_DTYPE_FLOAT32, 2, NULL, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "TruncatedNormal: shape is NULL for rank 2");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 2, neg, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: dimension 1 is negative (-3)");
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT64, 3, huge, 0.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomNormal: shape (1073741824, 1073741824, "
                      "1073741824) has more than INT64_MAX elements");

    /* uniform bounds */
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.0, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: minval (1) must be less than maxval (1)");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 2.0, -1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "minval (2) must be less than maxval (-1)");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, NAN, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "must be finite");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, 0.0, INFINITY, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: minval (0) and maxval (inf) must be finite");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT64, 1, &n, -DBL_MAX, DBL_MAX, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "too wide for float64");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1e39, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "too wide for float32");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT16, 1, &n, 0.0, 70000.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "too wide for float16");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_FLOAT16, 1, &n, 1.0, 1.0001, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "are equal in float16");
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_BFLOAT16, 1, &n, 1.0, 1.001, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "are equal in bfloat16");

    /* normal parameters */
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, -1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomNormal: stddev (-1) must be finite and >= 0");
    assert_null(tfl_truncated_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, NAN, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "TruncatedNormal: stddev (nan) must be finite");
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, INFINITY, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "stddev (inf)");
    assert_null(tfl_truncated_normal(ctx, TFL_DTYPE_FLOAT64, 1, &n, INFINITY, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "TruncatedNormal: mean (inf) must be finite");
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT64, 1, &n, NAN, 1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomNormal: mean (nan) must be finite");

    /* the first error is kept */
    assert_null(tfl_random_uniform(ctx, TFL_DTYPE_INT64, 1, &n, 0.0, 1.0, 1));
    assert_null(tfl_random_normal(ctx, TFL_DTYPE_FLOAT32, 1, &n, 0.0, -1.0, 1));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "RandomUniform: dtype int64");

    /* NULL context */
    assert_null(tfl_random_uniform(NULL, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 1));
    assert_null(tfl_random_normal(NULL, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 1));
    assert_null(tfl_truncated_normal(NULL, TFL_DTYPE_FLOAT32, 1, &n, 0.0, 1.0, 1));
    assert_int_equal(tfl_ctx_set_seed(NULL, 1), TFL_INVALID_ARGUMENT);
    assert_true(live_tensors(ctx) == f->live0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test_setup_teardown(test_stream_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_seed_same_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_do_not_change_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_different_seeds_differ, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unseeded_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uniform_distribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uniform_narrow_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_normal_distribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_normal_distribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shapes_and_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_streams, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
