/*
 * tapeflow/random.h: seeded random tensors (uniform, normal, truncated normal) from a
 * counter-based generator, Philox4x32-10 (Salmon et al., SC'11; the generator behind
 * TensorFlow's and JAX's stateless random ops), and the context's seed.
 *
 * Seeds. A call given seed != 0 returns values that are a pure function of (seed, dtype,
 * shape, the call's other arguments): the same on every run, in every context, with any
 * number of threads. A call given seed 0 takes the next stream of its context: the k-th
 * unseeded call (k = 0, 1, ... counted since tfl_ctx_new or tfl_ctx_set_seed) uses
 * (ctx seed, k), so successive unseeded calls differ, and a program that sets the context
 * seed (tfl_ctx_opts.seed or tfl_ctx_set_seed) gets the same sequence on every run.
 * tfl_dropout (ops.h) given seed 0 takes the next stream the same way; its mask layout is
 * documented there.
 *
 * Stream layout (what a GPU kernel reproduces). philox(ctr[4], key[2]) is one 128-bit
 * Philox4x32-10 block; lo(x) and hi(x) are the low and high 32 bits of a 64-bit x.
 *
 *   key    seed != 0: key = (lo(seed), hi(seed)).
 *          seed == 0: with S the ctx seed and k the call's number,
 *                     B = philox((lo(k), hi(k), 0, 0xFFFFFFFF), (lo(S), hi(S))), key = (B[0], B[1]).
 *   block  element i (row-major flat index), attempt a:
 *                     R = philox((lo(i), hi(i), a, 0), key);  a = 0 except in truncated normal.
 *          Element i depends on (key, i) only: never on threads, chunking or the device.
 *   bits   u24(x)     = (x >> 8) * 2^-24                      in [0, 1)
 *          u24o(x)    = ((x >> 8) + 1) * 2^-24                in (0, 1]
 *          u53(x, y)  = ((((uint64)y << 32) | x) >> 11) * 2^-53      in [0, 1)
 *          u53o(x, y) = (((((uint64)y << 32) | x) >> 11) + 1) * 2^-53  in (0, 1]
 *          float32, float16, bfloat16:  U = u24(R[0]);       U1 = u24o(R[0]);      U2 = u24(R[1])
 *          float64:                     U = u53(R[0], R[1]); U1 = u53o(R[0], R[1]); U2 = u53(R[2], R[3])
 *   values (computed in double, no fused multiply-add, then rounded to nearest: float64
 *          as is, float32 by one rounding, float16/bfloat16 by rounding to float32 and then
 *          to the 16-bit type)
 *          uniform:  lo, hi = minval, maxval rounded to dtype the same way;
 *                    v = lo + U * (hi - lo), rounded; a result >= hi becomes the largest
 *                    dtype value below hi (so every value lies in [lo, hi)).
 *          normal:   z = sqrt(-2 log(U1)) * cos(2 pi U2)  (Box-Muller, one normal per
 *                    element; U1 > 0 so log never sees 0); v = mean + stddev * z.
 *          truncated normal: z from attempt a = 0, 1, ..., 63 (each its own block) until
 *                    |z| <= 2; if all 64 attempts land outside (probability about 1e-86)
 *                    z of attempt 63 is clamped to [-2, 2]; v = mean + stddev * z.
 *
 * Tensors are created on the device of the current device scope (CPU:0 when none); the
 * values are generated on the host today and copied to that device.
 */
#ifndef TAPEFLOW_RANDOM_H
#define TAPEFLOW_RANDOM_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A tensor of values drawn uniformly from [minval, maxval) (TensorFlow's RandomUniform).
 * @param dtype  float16, bfloat16, float32 or float64.
 * @param rank   0..8.
 * @param shape  `rank` dimensions, each >= 0; may be NULL when rank is 0.
 * @param minval the inclusive lower bound; minval and maxval are rounded to dtype first.
 * @param maxval the exclusive upper bound: finite, greater than minval after rounding.
 * @param seed   != 0: the values depend only on (seed, dtype, shape, minval, maxval);
 *               0: the context's next stream (see the top of this header).
 * Returns: a new tensor, frame-owned (owned by the caller when no frame is open), or NULL.
 * Errors: INVALID_ARGUMENT (dtype, rank, NULL shape, negative dimension, too many elements or bytes,
 * bounds not finite or not minval < maxval), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_tensor *tfl_random_uniform(tfl_ctx *ctx, tfl_dtype dtype, int rank,
                                       const int64_t *shape, double minval, double maxval,
                                       uint64_t seed);

/**
 * A tensor of normally distributed values (TensorFlow's RandomStandardNormal, scaled).
 * @param dtype  float16, bfloat16, float32 or float64.
 * @param rank   0..8.
 * @param shape  `rank` dimensions, each >= 0; may be NULL when rank is 0.
 * @param mean   the mean (finite).
 * @param stddev the standard deviation (finite, >= 0; 0 gives `mean` everywhere).
 * @param seed   != 0: the values depend only on (seed, dtype, shape, mean, stddev);
 *               0: the context's next stream.
 * Returns: a new tensor, frame-owned (owned by the caller when no frame is open), or NULL.
 * Errors: INVALID_ARGUMENT (dtype, rank, NULL shape, negative dimension, too many elements or bytes,
 * mean not finite, stddev negative or not finite), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_tensor *tfl_random_normal(tfl_ctx *ctx, tfl_dtype dtype, int rank,
                                      const int64_t *shape, double mean, double stddev,
                                      uint64_t seed);

/**
 * A tensor of normal values re-drawn when more than 2 stddev from the mean (TensorFlow's
 * TruncatedNormal); the variance is about 0.7737 * stddev^2.
 * @param dtype  float16, bfloat16, float32 or float64.
 * @param rank   0..8.
 * @param shape  `rank` dimensions, each >= 0; may be NULL when rank is 0.
 * @param mean   the mean (finite).
 * @param stddev the standard deviation of the normal before truncation (finite, >= 0).
 * @param seed   != 0: the values depend only on (seed, dtype, shape, mean, stddev);
 *               0: the context's next stream.
 * Each element re-draws at most 64 times, then clamps to 2 stddev (see the top of this
 * header); the chance of reaching the clamp is about 1e-86 per element.
 * Returns: a new tensor, frame-owned (owned by the caller when no frame is open), or NULL.
 * Errors: INVALID_ARGUMENT (dtype, rank, NULL shape, negative dimension, too many elements or bytes,
 * mean not finite, stddev negative or not finite), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_tensor *tfl_truncated_normal(tfl_ctx *ctx, tfl_dtype dtype, int rank,
                                         const int64_t *shape, double mean, double stddev,
                                         uint64_t seed);

/**
 * Sets the context's seed, used by random calls given seed 0, and restarts their count, so
 * the unseeded calls that follow repeat the same sequence for the same seed.
 * @param seed the new seed; 0 selects the fixed default that tfl_ctx_new uses.
 * Returns: TFL_OK. Errors: INVALID_ARGUMENT (ctx is NULL).
 */
TFL_API tfl_status tfl_ctx_set_seed(tfl_ctx *ctx, uint64_t seed);

/**
 * The context's random stream state, for checkpoints: its seed (the default resolved, never
 * 0) and the number of unseeded random calls (and dropout draws) made since the seed was set.
 * tfl_ctx_set_rng_state puts a state back, so the unseeded calls that follow continue exactly
 * where the saved run was. Errors: INVALID_ARGUMENT (ctx NULL, seed 0).
 */
TFL_API tfl_status tfl_ctx_rng_state(const tfl_ctx *ctx, uint64_t *seed, uint64_t *calls);
TFL_API tfl_status tfl_ctx_set_rng_state(tfl_ctx *ctx, uint64_t seed, uint64_t calls);

/**
 * Makes the context's unseeded random calls (seed 0, e.g. Dropout's masks) those of replica
 * `index` of a data-parallel run: each replica draws its own values, while the seed and the
 * call count (tfl_ctx_rng_state) stay what they are, so one checkpoint's state resumes every
 * replica exactly. Replica 0 draws what a context that never called this draws. Calls given a
 * seed are not affected. tfl_data_parallel_callback sets the rank (<tapeflow/distributed.h>).
 * Errors: INVALID_ARGUMENT (ctx NULL, index < 0).
 */
TFL_API tfl_status tfl_ctx_set_rng_replica(tfl_ctx *ctx, int index);
/** The replica set by tfl_ctx_set_rng_replica (0 by default; -1 for a NULL ctx). */
TFL_API int tfl_ctx_rng_replica(const tfl_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_RANDOM_H */
