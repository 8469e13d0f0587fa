/*
 * framework/cuda/cu_common.cuh: what the .cu files share: the op and dtype codes, grid-stride
 * launch geometry, and the operand offsets of a tflcu_iter.
 */
#ifndef TFL_CUDA_CU_COMMON_CUH
#define TFL_CUDA_CU_COMMON_CUH

#include <tapeflow/base.h>

#include "cu_launch.h"
#include "ops/op_list.h"

#include <cuda_runtime.h>
#include <stdint.h>

#define TFLCU_THREADS 256

/* blocks for n elements: enough to fill the GPU, the rest done by grid-stride loops */
static inline unsigned tflcu_blocks(int64_t n)
{
    int64_t b = (n + TFLCU_THREADS - 1) / TFLCU_THREADS;
    if (b < 1) b = 1;
    if (b > 65535) b = 65535;
    return (unsigned)b;
}

#define TFLCU_LOOP(i, n)                                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
         i += (int64_t)blockDim.x * gridDim.x)

/* the element offset of operand `op` for the output's linear index i */
__device__ __forceinline__ int64_t tflcu_offset(const tflcu_iter &it, int op, int64_t i)
{
    int64_t off = 0;
    for (int d = it.rank - 1; d >= 0; d--) {
        int64_t s = it.shape[d];
        int64_t q = i / s;
        off += (i - q * s) * it.strides[op][d];
        i = q;
    }
    return off;
}

/* true when every operand is contiguous row-major over the shape (offset = i) */
static inline bool tflcu_contiguous(const tflcu_iter *it)
{
    for (int op = 0; op < it->n_ops; op++) {
        int64_t expect = 1;
        for (int d = it->rank - 1; d >= 0; d--) {
            if (it->shape[d] != 1 && it->strides[op][d] != expect) return false;
            expect *= it->shape[d];
        }
    }
    return true;
}

static inline int tflcu_status(void) { return (int)cudaGetLastError(); }

#endif /* TFL_CUDA_CU_COMMON_CUH */
