/*
 * framework/cuda/k_optim.cu: the fused optimizer updates on the GPU (the CUDA side of
 * framework/opt_kernels.h; the host side is cuda_optim.c): one kernel per update kernel of
 * framework/opt_elems.h and dtype, each looping over its element function. A multi-tensor
 * launch: up to TFLCU_OPT_CHUNK tensors per kernel, their table passed by value in the kernel
 * parameters (no host-to-device copy, no allocation). Each tensor gets a run of blocks (start[i] ..
 * start[i+1]) that stride over its elements; every element reads its gradient once and
 * writes the variable and its slots in place, as framework/cpu/k_optim.c does.
 *
 * Arithmetic: the CPU's element functions (opt_elems.h), in the variable's dtype, with IEEE
 * square roots and divisions (__fsqrt_rn, __fdiv_rn, __dsqrt_rn, __ddiv_rn), and this file
 * is compiled with --fmad=false (framework/cuda/CMakeLists.txt) so that no multiply-add is
 * contracted into an FMA (the CPU build, -std=c11, does not contract either). The updates are
 * therefore expected to match the CPU bit for bit given the same gscale; the one difference
 * is the sum of squares of global-norm clipping (a tree here, OpenMP chunks on the CPU),
 * whose double result can differ in the last bits, and through gscale the float32 gradient
 * by one ulp. tests/backend/test_backend_optim.c allows float32 rtol 1e-4 (atol 1e-6) and
 * float64 rtol 1e-10 (atol 1e-12) per step over 100 steps, which also covers FMA
 * contraction should a toolchain apply it anyway.
 */
#include "cu_common.cuh"
#include "opt_elems.h"

/* The element functions of every kernel (opt_elems.h), once per dtype, for the device. */
#define TFL_OPT_HD static __device__ __forceinline__

#define TFL_OPT_T float
#define TFL_OPT_SFX f32
#define TFL_OPT_SQRT(x) __fsqrt_rn(x)
#define TFL_OPT_DIV(a, b) __fdiv_rn(a, b)
#include "opt_elems.h"
#undef TFL_OPT_T
#undef TFL_OPT_SFX
#undef TFL_OPT_SQRT
#undef TFL_OPT_DIV

#define TFL_OPT_T double
#define TFL_OPT_SFX f64
#define TFL_OPT_SQRT(x) __dsqrt_rn(x)
#define TFL_OPT_DIV(a, b) __ddiv_rn(a, b)
#include "opt_elems.h"
#undef TFL_OPT_T
#undef TFL_OPT_SFX
#undef TFL_OPT_SQRT
#undef TFL_OPT_DIV

namespace
{

#define OPT_THREADS 256
#define OPT_MAX_BLOCKS 4096 /* per tensor; beyond, the blocks stride */

struct chunk {
    int n;
    int start[TFLCU_OPT_CHUNK + 1]; /* first block of each tensor; start[n]: the grid */
    tfl__opt_tensor t[TFLCU_OPT_CHUNK];
};

/* the tensor of this block (at most TFLCU_OPT_CHUNK steps, uniform over the block) */
__device__ __forceinline__ int tensor_of(const chunk &c, int b)
{
    int i = 0;
    while (i + 1 < c.n && b >= c.start[i + 1])
        i++;
    return i;
}

/* one kernel per update kernel and dtype: each tensor's run of blocks strides over its
 * elements, every element updated by opt_elems.h's function */
#define OPT_KERNEL(N, T, SFX)                                                                      \
    __global__ void apply_##N##_##SFX(const chunk c, const tfl__opt_hyper h)                       \
    {                                                                                              \
        const int ti = tensor_of(c, (int)blockIdx.x);                                              \
        const tfl__opt_tensor &t = c.t[ti];                                                        \
        const int64_t nb = c.start[ti + 1] - c.start[ti];                                          \
        struct tfl__opk_##N##_k_##SFX k;                                                           \
        tfl__opk_##N##_load_##SFX(&k, &h, &t);                                                     \
        T *p = (T *)t.p, *s0 = (T *)t.s[0], *s1 = (T *)t.s[1], *s2 = (T *)t.s[2];                  \
        const T *g = (const T *)t.g;                                                               \
        for (int64_t i = (int64_t)(blockIdx.x - c.start[ti]) * OPT_THREADS + threadIdx.x; i < t.n; \
             i += nb * OPT_THREADS)                                                                \
            tfl__opk_##N##_elem_##SFX(p, g, s0, s1, s2, i, &k, h.flags);                           \
    }
#define OPT_KERNELS(N, NF) OPT_KERNEL(N, float, f32) OPT_KERNEL(N, double, f64)
TFL__OPT_KERNELS(OPT_KERNELS)

/* block sum in a fixed tree (deterministic) */
__device__ __forceinline__ double block_sum(double v)
{
    __shared__ double sh[OPT_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = OPT_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

template <typename T> __global__ void sumsq_partial(const chunk c, double *partial)
{
    const int ti = tensor_of(c, (int)blockIdx.x);
    const tfl__opt_tensor &t = c.t[ti];
    const int64_t nb = c.start[ti + 1] - c.start[ti];
    const T *g = (const T *)t.g;
    double acc = 0;
    for (int64_t i = (int64_t)(blockIdx.x - c.start[ti]) * OPT_THREADS + threadIdx.x; i < t.n;
         i += nb * OPT_THREADS) {
        double x = (double)g[i];
        acc = __dadd_rn(acc, __dmul_rn(x, x));
    }
    double s = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/* one block per tensor: out[i] = the sum of its partials */
__global__ void sumsq_final(const chunk c, const double *partial, double *out)
{
    const int ti = (int)blockIdx.x;
    double acc = 0;
    for (int b = c.start[ti] + (int)threadIdx.x; b < c.start[ti + 1]; b += OPT_THREADS)
        acc += partial[b];
    double s = block_sum(acc);
    if (threadIdx.x == 0) out[ti] = s;
}

/* the gradient scales of clipping by norm, in place (tflcu_opt_clip_scales): thread 0 sums
 * in index order as the host does, then every thread scales its tensors */
__global__ void clip_scales_k(int n, double *s, double c, int per_variable, int tf)
{
    __shared__ double total;
    if (threadIdx.x == 0) {
        double acc = 0;
        for (int i = 0; i < n; i++)
            acc = __dadd_rn(acc, s[i]);
        total = acc;
    }
    __syncthreads();
    for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x) {
        double norm = __dsqrt_rn(per_variable ? s[i] : total);
        double d = tf ? (norm > c ? norm : c) : __dadd_rn(norm, 1e-6);
        double sc = __ddiv_rn(c, d);
        s[i] = sc < 1.0 ? sc : 1.0; /* NaN: 1, as on the host */
    }
}

/* the chunk of t[0 .. n) (n <= TFLCU_OPT_CHUNK): blocks per tensor for n elements, at most cap */
void fill_chunk(chunk *c, int n, const tfl__opt_tensor *t, int64_t cap)
{
    c->n = n;
    c->start[0] = 0;
    for (int i = 0; i < n; i++) {
        c->t[i] = t[i];
        int64_t b = (t[i].n + OPT_THREADS - 1) / OPT_THREADS;
        c->start[i + 1] = c->start[i] + (int)(b < cap ? b : cap);
    }
}

int apply_chunks(bool f32, int n, const tfl__opt_tensor *t, const tfl__opt_hyper *h, cudaStream_t s)
{
    for (int done = 0; done < n; done += TFLCU_OPT_CHUNK) {
        chunk c;
        int m = n - done < TFLCU_OPT_CHUNK ? n - done : TFLCU_OPT_CHUNK;
        fill_chunk(&c, m, t + done, OPT_MAX_BLOCKS);
        if (c.start[m] == 0) continue; /* only empty tensors */
        dim3 grid((unsigned)c.start[m]);
        switch (h->kernel) {
#define OPT_CASE(N, NF)                                                                            \
    case TFL__OPK_##N:                                                                             \
        if (f32)                                                                                   \
            apply_##N##_f32<<<grid, OPT_THREADS, 0, s>>>(c, *h);                                   \
        else                                                                                       \
            apply_##N##_f64<<<grid, OPT_THREADS, 0, s>>>(c, *h);                                   \
        break;
            TFL__OPT_KERNELS(OPT_CASE)
#undef OPT_CASE
        default:
            return -1;
        }
        int err = tflcu_status();
        if (err) return err;
    }
    return 0;
}

} // namespace

static_assert(sizeof(chunk) + sizeof(tfl__opt_hyper) < 4000,
              "the optimizer kernels' parameters fit the 4 KiB limit");

extern "C" int tflcu_opt_apply(int dtype, int n, const tfl__opt_tensor *t, const tfl__opt_hyper *h,
                               void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (h->kernel <= TFL__OPK_NONE || h->kernel >= TFL__OPK_COUNT) return -1;
    if (dtype != TFL_DTYPE_FLOAT32 && dtype != TFL_DTYPE_FLOAT64) return -1;
    return apply_chunks(dtype == TFL_DTYPE_FLOAT32, n, t, h, s);
}

extern "C" int tflcu_opt_sumsq(int dtype, int n, const tfl__opt_tensor *t, double *partial,
                               double *out, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n <= 0) return 0;
    if (n > TFLCU_OPT_CHUNK) return -1;
    if (dtype != TFL_DTYPE_FLOAT32 && dtype != TFL_DTYPE_FLOAT64) return -1;
    chunk c;
    fill_chunk(&c, n, t, TFLCU_OPT_SUMSQ_BLOCKS);
    if (c.start[n] > 0) {
        if (dtype == TFL_DTYPE_FLOAT32)
            sumsq_partial<float><<<(unsigned)c.start[n], OPT_THREADS, 0, s>>>(c, partial);
        else
            sumsq_partial<double><<<(unsigned)c.start[n], OPT_THREADS, 0, s>>>(c, partial);
        int err = tflcu_status();
        if (err) return err;
    }
    sumsq_final<<<(unsigned)n, OPT_THREADS, 0, s>>>(c, partial, out);
    return tflcu_status();
}

extern "C" int tflcu_opt_clip_scales(int n, double *sums, double c, int per_variable, int tf,
                                     void *stream)
{
    if (n <= 0) return 0;
    clip_scales_k<<<1, OPT_THREADS, 0, (cudaStream_t)stream>>>(n, sums, c, per_variable, tf);
    return tflcu_status();
}
