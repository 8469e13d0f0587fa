/*
 * framework/core_api/philox.h: the Philox4x32-10 block function behind tapeflow/random.h,
 * as a static inline function so that random.c, the kernels that draw random bits (the CPU's
 * and the GPU's Dropout), the modules above (module_api.h includes it) and the known-answer
 * test share one definition without exporting a symbol. Needs only <stdint.h>; never
 * installed.
 *
 * Philox4x32-10 (J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random
 * numbers: as easy as 1, 2, 3", SC'11; the Random123 library; the generator behind
 * TensorFlow's and JAX's stateless random ops). A 128-bit counter (4 x 32) and a 64-bit
 * key (2 x 32) give 128 random bits in 10 rounds. One round, with the key of that round:
 *
 *     (hi0, lo0) = M0 * ctr[0]        M0 = 0xD2511F53  (64-bit product, split)
 *     (hi1, lo1) = M1 * ctr[2]        M1 = 0xCD9E8D57
 *     ctr = (hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0)
 *
 * and between rounds the key is bumped by the Weyl constants
 *     key[0] += W0 = 0x9E3779B9 (golden ratio),  key[1] += W1 = 0xBB67AE85 (sqrt(3) - 1).
 * Known answers (Random123 kat_vectors) are checked in tests/framework/test_random.c.
 */
#ifndef TFL_FRAMEWORK_PHILOX_H
#define TFL_FRAMEWORK_PHILOX_H

#include <stdint.h>

#define TFL_PHILOX_M0 0xD2511F53u
#define TFL_PHILOX_M1 0xCD9E8D57u
#define TFL_PHILOX_W0 0x9E3779B9u
#define TFL_PHILOX_W1 0xBB67AE85u
#define TFL_PHILOX_ROUNDS 10

/* nvcc compiles the same function for the GPU (framework/cuda/k_shape.cu: Dropout) */
#ifdef __CUDACC__
#define TFL_PHILOX_FN __host__ __device__ static inline
#else
#define TFL_PHILOX_FN static inline
#endif

/** Philox4x32-10: out = the 4 words of the block for (ctr, key). out may alias ctr. */
TFL_PHILOX_FN void tfl__philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                      uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < TFL_PHILOX_ROUNDS; r++) {
        if (r > 0) {
            k0 += TFL_PHILOX_W0;
            k1 += TFL_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)TFL_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)TFL_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

#endif /* TFL_FRAMEWORK_PHILOX_H */
