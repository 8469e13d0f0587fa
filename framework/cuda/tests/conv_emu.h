/*
 * framework/cuda/tests/conv_emu.h: what the host tests of the GPU convolutions share
 * (conv_emu.c). Those tests compile framework/cuda/cuda_conv.c (and cudnn_conv.c) themselves,
 * with their CUDA calls renamed to host versions (tests/backend/CMakeLists.txt's -D list):
 * cuBLAS's gemm and geam as plain loops, the im2col / col2im kernels as loops over
 * conv_index.h's index functions (the ones k_conv.cu's kernels call), device memory as host
 * memory filled with NaN bytes (a value read before it is written shows), and the
 * framework's internals as stubs that count. The reference is tfl_conv2d and its backprops
 * on CPU:0 through the public API.
 */
#ifndef TFL_CUDA_TESTS_CONV_EMU_H
#define TFL_CUDA_TESTS_CONV_EMU_H

#include "cuda_internal.h"

extern int64_t emu_gets, emu_puts, emu_largest_get; /* workspace blocks of the allocator */
extern int emu_errors;                              /* tfl__set_error, failed checks */
extern int emu_log_info, emu_log_warning;           /* tfl__log by level */
extern int emu_host_allocs, emu_host_frees;         /* tfl__host_alloc / free */
extern int emu_refuse_host;                         /* > 0: tfl__host_alloc gives NULL */
extern int emu_refuse_device; /* > 0: the next tfl__allocator_get calls give NULL (counted down) */
extern char emu_last_log[1024];
extern char emu_log_all[8192]; /* every log line since the last reset, one per line */
extern int emu_blas_math, emu_blas_math_sets;      /* cublasSetMathMode: the last mode, calls */

/* a tensor record over host memory, as the kernels see a device tensor */
typedef struct emu_fake {
    tfl__storage st;
    tfl_tensor t;
} emu_fake;

int64_t emu_rnd(int64_t lo, int64_t hi);
void emu_fake_init(emu_fake *f, tfl_dtype dt, const int64_t *shape, void *data);
int64_t emu_numel4(const int64_t *s);
/* bfloat16's bits of a float (round to nearest even; no NaN among the tests' values), and back */
uint16_t emu_bf16(float v);
float emu_from_bf16(uint16_t b);
/* n random values of dt (float32, float64, bfloat16; NaN bytes when !fill), malloc'ed */
void *emu_values(tfl_dtype dt, int64_t n, bool fill);
/* got (n values of dt) against the CPU's ref: float32 1e-5, float64 1e-12 relative; bfloat16
 * one unit in the last place (2^-7 relative) and 1e-3 absolute: the CPU sums in float32,
 * cuDNN's stand-in in double, and each rounds once */
void emu_expect_close(const char *what, const char *desc, tfl_dtype dt, const void *got,
                      const tfl_tensor *ref, int64_t n);
/* TensorFlow's window rule (framework/ops/conv.c): output size, *pad the padding before */
int64_t emu_out_size(int64_t in, int64_t k, int64_t s, int64_t d, bool same, int64_t *pad);
/* One shape: tfl__cuda_conv2d and both backprops on dev against the CPU's; false (nothing
 * checked) when the shape has no output. */
bool emu_check_shape(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dt, const int64_t xs[4],
                     const int64_t fs[4], int sh, int sw, int dh, int dw, bool same);

#endif /* TFL_CUDA_TESTS_CONV_EMU_H */
