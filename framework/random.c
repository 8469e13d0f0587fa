/*
 * framework/random.c: seeded random tensors (tapeflow/random.h) from the counter-based
 * Philox4x32-10 generator (core_api/philox.h: constants, reference, block function).
 *
 * Every element is a pure function of (key, flat index): the fill is an OpenMP loop over
 * elements with no shared state, so the values never depend on the thread count, and a
 * GPU kernel following the layout documented in random.h gives the same values.
 */
#include "internal.h"
#include "core_api/philox.h"

#include <math.h>

#define PARALLEL_MIN 32768      /* elements below which a fill runs on one thread */
#define TRUNC_MAX_ATTEMPTS 64   /* truncated normal: attempts per element before clamping */
#define TRUNC_BOUND 2.0         /* truncated normal: |z| <= 2 is kept (TensorFlow's rule) */
#define KEY_STREAM_WORD 0xFFFFFFFFu /* ctr[3] of the blocks that derive unseeded keys */

typedef enum kind { KIND_UNIFORM, KIND_NORMAL, KIND_TRUNCATED } kind;

/* One call's parameters: everything an element needs besides its index. */
typedef struct gen {
    kind kind;
    tfl_dtype dtype;
    uint32_t key[2];
    double a, b;   /* uniform: lo, hi - lo; normals: mean, stddev */
    double top;    /* uniform: the largest dtype value below hi */
} gen;

static const char *op_name(kind k)
{
    return k == KIND_UNIFORM ? "RandomUniform" : k == KIND_NORMAL ? "RandomNormal"
                                                                   : "TruncatedNormal";
}

/* ---- rounding to the output dtype ---------------------------------------------------------- */

/* x rounded to dtype (float32 first for the 16-bit types), as a double. */
static double round_to(tfl_dtype dt, double x)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT64: return x;
    case TFL_DTYPE_FLOAT32: return (double)(float)x;
    case TFL_DTYPE_FLOAT16: return (double)tfl__f16_to_f32(tfl__f32_to_f16((float)x));
    default: return (double)tfl__bf16_to_f32(tfl__f32_to_bf16((float)x));
    }
}

/* The 16-bit pattern one step toward -infinity (sign-magnitude: float16 and bfloat16). */
static uint16_t half_step_down(uint16_t h)
{
    if (h & 0x8000u) return (uint16_t)(h + 1u); /* negative (or -0): larger magnitude */
    if (h == 0) return 0x8001u;                 /* +0: the smallest negative subnormal */
    return (uint16_t)(h - 1u);
}

/* The largest dtype value below hi (hi already representable in dtype), as a double. */
static double below(tfl_dtype dt, double hi)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT64: return nextafter(hi, -INFINITY);
    case TFL_DTYPE_FLOAT32: return (double)nextafterf((float)hi, -INFINITY);
    case TFL_DTYPE_FLOAT16:
        return (double)tfl__f16_to_f32(half_step_down(tfl__f32_to_f16((float)hi)));
    default: return (double)tfl__bf16_to_f32(half_step_down(tfl__f32_to_bf16((float)hi)));
    }
}

/* ---- sampling ------------------------------------------------------------------------------- */

#define TWO_M24 (1.0 / 16777216.0)            /* 2^-24 */
#define TWO_M53 (1.0 / 9007199254740992.0)    /* 2^-53 */
#define TWO_PI 6.283185307179586476925286766559

static inline uint64_t bits53(uint32_t x, uint32_t y)
{
    return (((uint64_t)y << 32) | x) >> 11;
}

static inline void block(const gen *g, uint64_t i, uint32_t attempt, uint32_t r[4])
{
    const uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), attempt, 0};
    tfl__philox4x32_10(ctr, g->key, r);
}

/* A standard normal from block (i, attempt) by Box-Muller. */
static inline double normal_z(const gen *g, uint64_t i, uint32_t attempt)
{
    uint32_t r[4];
    block(g, i, attempt, r);
    double u1, u2;
    if (g->dtype == TFL_DTYPE_FLOAT64) {
        u1 = (double)(bits53(r[0], r[1]) + 1) * TWO_M53; /* (0, 1]: log(u1) is finite */
        u2 = (double)bits53(r[2], r[3]) * TWO_M53;
    } else {
        u1 = (double)((r[0] >> 8) + 1) * TWO_M24;
        u2 = (double)(r[1] >> 8) * TWO_M24;
    }
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

/* Element i's value in double, before the rounding to dtype. */
static inline double sample(const gen *g, uint64_t i)
{
    switch (g->kind) {
    case KIND_UNIFORM: {
        uint32_t r[4];
        block(g, i, 0, r);
        double u = g->dtype == TFL_DTYPE_FLOAT64 ? (double)bits53(r[0], r[1]) * TWO_M53
                                                 : (double)(r[0] >> 8) * TWO_M24;
        double prod = u * g->b; /* kept apart: no fused multiply-add */
        return g->a + prod;
    }
    case KIND_NORMAL: {
        double prod = g->b * normal_z(g, i, 0);
        return g->a + prod;
    }
    default: {
        double z = 0.0;
        for (uint32_t a = 0; a < TRUNC_MAX_ATTEMPTS; a++) {
            z = normal_z(g, i, a);
            if (fabs(z) <= TRUNC_BOUND) break;
        }
        if (z > TRUNC_BOUND) z = TRUNC_BOUND;
        if (z < -TRUNC_BOUND) z = -TRUNC_BOUND;
        double prod = g->b * z;
        return g->a + prod;
    }
    }
}

static inline void store(const gen *g, void *data, int64_t i, double v)
{
    switch (g->dtype) {
    case TFL_DTYPE_FLOAT64:
        if (g->kind == KIND_UNIFORM && v > g->top) v = g->top;
        ((double *)data)[i] = v;
        break;
    case TFL_DTYPE_FLOAT32: {
        float f = (float)v;
        if (g->kind == KIND_UNIFORM && f > (float)g->top) f = (float)g->top;
        ((float *)data)[i] = f;
        break;
    }
    case TFL_DTYPE_FLOAT16: {
        float f = (float)v;
        uint16_t h = tfl__f32_to_f16(f);
        if (g->kind == KIND_UNIFORM && tfl__f16_to_f32(h) > (float)g->top)
            h = tfl__f32_to_f16((float)g->top);
        ((uint16_t *)data)[i] = h;
        break;
    }
    default: {
        float f = (float)v;
        uint16_t h = tfl__f32_to_bf16(f);
        if (g->kind == KIND_UNIFORM && tfl__bf16_to_f32(h) > (float)g->top)
            h = tfl__f32_to_bf16((float)g->top);
        ((uint16_t *)data)[i] = h;
        break;
    }
    }
}

static void fill(const gen *g, void *data, int64_t n, int threads)
{
#pragma omp parallel for num_threads(threads) if (n >= PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) store(g, data, i, sample(g, (uint64_t)i));
}

/* ---- the calls ------------------------------------------------------------------------------ */

static bool check_args(tfl_ctx *ctx, kind k, tfl_dtype dtype, int rank, const int64_t *shape)
{
    const char *op = op_name(k);
    if (!(tfl_dtype_is_valid(dtype) && (TFL_MASK_FLOAT >> dtype & 1u))) {
        char list[160];
        tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: dtype %s is not supported; expected one of %s",
                       op, tfl_dtype_name(dtype), tfl__dtype_list(TFL_MASK_FLOAT, list, sizeof list));
        return false;
    }
    int64_t n;
    return tfl__checked_numel(ctx, op, rank, shape, &n) &&
           tfl__checked_bytes(ctx, op, dtype, n, NULL);
}

uint64_t tfl__rng_key(tfl_ctx *ctx, uint64_t seed)
{
    if (seed != 0) return seed;
    uint64_t k = ctx->rng_calls++;
    /* replica 0 keeps the counter word 0: the streams of a context without replicas */
    const uint32_t ctr[4] = {(uint32_t)k, (uint32_t)(k >> 32), ctx->rng_replica, KEY_STREAM_WORD};
    const uint32_t ctx_key[2] = {(uint32_t)ctx->rng_seed, (uint32_t)(ctx->rng_seed >> 32)};
    uint32_t b[4];
    tfl__philox4x32_10(ctr, ctx_key, b);
    return (uint64_t)b[0] | (uint64_t)b[1] << 32;
}

/* The key of this call: the seed itself, or one derived from (ctx seed, call number). */
static void call_key(tfl_ctx *ctx, uint64_t seed, uint32_t key[2])
{
    uint64_t k = tfl__rng_key(ctx, seed);
    key[0] = (uint32_t)k;
    key[1] = (uint32_t)(k >> 32);
}

/* Allocates, fills on the host and places the result on the current device (a device whose
 * memory is not the host's gets a copy through its table: the same values on every device). */
static tfl_tensor *generate(tfl_ctx *ctx, gen *g, int rank, const int64_t *shape, uint64_t seed)
{
    tfl__trace_refuse(ctx, "it draws random values (tfl_random_*)");
    tfl__device *dev = tfl__current_device(ctx);
    if (!dev) return NULL;
    bool host = tfl__dev_is_host(dev);
    tfl__device *hdev = host ? dev : tfl__cpu(ctx);
    tfl_tensor *h = host ? tfl__tensor_empty(ctx, hdev, g->dtype, rank, shape)
                         : tfl__tensor_alloc(ctx, hdev, g->dtype, rank, shape);
    if (!h) return NULL;
    call_key(ctx, seed, g->key);
    fill(g, tfl__data(h), h->numel, ctx->num_threads);
    if (host) return h;
    tfl_tensor *t = tfl__tensor_copy_to(ctx, h, dev); /* frame-owned */
    tfl_tensor_release(h);
    return t;
}

tfl_tensor *tfl_random_uniform(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                               double minval, double maxval, uint64_t seed)
{
    if (!ctx || !check_args(ctx, KIND_UNIFORM, dtype, rank, shape)) return NULL;
    TFL_CHECK_RET(ctx, isfinite(minval) && isfinite(maxval), NULL, TFL_INVALID_ARGUMENT,
                  "RandomUniform: minval (%g) and maxval (%g) must be finite", minval, maxval);
    TFL_CHECK_RET(ctx, minval < maxval, NULL, TFL_INVALID_ARGUMENT,
                  "RandomUniform: minval (%g) must be less than maxval (%g)", minval, maxval);
    double lo = round_to(dtype, minval), hi = round_to(dtype, maxval);
    TFL_CHECK_RET(ctx, isfinite(lo) && isfinite(hi) && isfinite(hi - lo), NULL,
                  TFL_INVALID_ARGUMENT,
                  "RandomUniform: the range [%g, %g) is too wide for %s", minval, maxval,
                  tfl_dtype_name(dtype));
    TFL_CHECK_RET(ctx, lo < hi, NULL, TFL_INVALID_ARGUMENT,
                  "RandomUniform: minval (%g) and maxval (%g) are equal in %s; the range is empty",
                  minval, maxval, tfl_dtype_name(dtype));
    gen g = {.kind = KIND_UNIFORM, .dtype = dtype, .a = lo, .b = hi - lo, .top = below(dtype, hi)};
    return generate(ctx, &g, rank, shape, seed);
}

static tfl_tensor *normal_call(tfl_ctx *ctx, kind k, tfl_dtype dtype, int rank,
                               const int64_t *shape, double mean, double stddev, uint64_t seed)
{
    if (!ctx || !check_args(ctx, k, dtype, rank, shape)) return NULL;
    TFL_CHECK_RET(ctx, isfinite(mean), NULL, TFL_INVALID_ARGUMENT, "%s: mean (%g) must be finite",
                  op_name(k), mean);
    TFL_CHECK_RET(ctx, isfinite(stddev) && stddev >= 0, NULL, TFL_INVALID_ARGUMENT,
                  "%s: stddev (%g) must be finite and >= 0", op_name(k), stddev);
    gen g = {.kind = k, .dtype = dtype, .a = mean, .b = stddev};
    return generate(ctx, &g, rank, shape, seed);
}

tfl_tensor *tfl_random_normal(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                              double mean, double stddev, uint64_t seed)
{
    return normal_call(ctx, KIND_NORMAL, dtype, rank, shape, mean, stddev, seed);
}

tfl_tensor *tfl_truncated_normal(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                                 double mean, double stddev, uint64_t seed)
{
    return normal_call(ctx, KIND_TRUNCATED, dtype, rank, shape, mean, stddev, seed);
}

tfl_status tfl_ctx_set_seed(tfl_ctx *ctx, uint64_t seed)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    ctx->rng_seed = seed ? seed : TFL_DEFAULT_SEED;
    ctx->rng_calls = 0;
    return TFL_OK;
}

tfl_status tfl_ctx_rng_state(const tfl_ctx *ctx, uint64_t *seed, uint64_t *calls)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    if (seed) *seed = ctx->rng_seed;
    if (calls) *calls = ctx->rng_calls;
    return TFL_OK;
}

tfl_status tfl_ctx_set_rng_state(tfl_ctx *ctx, uint64_t seed, uint64_t calls)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, seed != 0, TFL_INVALID_ARGUMENT, "tfl_ctx_set_rng_state: the seed is 0 (a "
              "state read with tfl_ctx_rng_state never is)");
    ctx->rng_seed = seed;
    ctx->rng_calls = calls;
    return TFL_OK;
}

tfl_status tfl_ctx_set_rng_replica(tfl_ctx *ctx, int index)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, index >= 0, TFL_INVALID_ARGUMENT,
              "tfl_ctx_set_rng_replica: index is %d; expected >= 0", index);
    ctx->rng_replica = (uint32_t)index;
    return TFL_OK;
}

int tfl_ctx_rng_replica(const tfl_ctx *ctx)
{
    return ctx ? (int)ctx->rng_replica : -1;
}
