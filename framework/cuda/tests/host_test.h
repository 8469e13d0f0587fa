/*
 * framework/cuda/tests/host_test.h: what the host tests of the CUDA backend's per-element
 * code share (test_pool_elems.cu, test_bn_train_elems.cu, test_ew_functors.cu; compiled by
 * nvcc for the host): cmocka with C linkage, the C headers, and a seeded xorshift generator
 * of doubles in [0, 1). The tests include libtapeflow's API themselves.
 */
#ifndef TFL_CUDA_HOST_TEST_H
#define TFL_CUDA_HOST_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" { /* cmocka.h has no C++ linkage block of its own */
#include <cmocka.h>
}

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the next of a fixed sequence (xorshift64), in [0, 1) */
static inline double unit(void)
{
    static uint64_t rng = 88172645463325252ull;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

#endif /* TFL_CUDA_HOST_TEST_H */
