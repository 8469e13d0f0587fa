/*
 * framework/cuda/cu_launch.h: the launch functions of the CUDA kernels (.cu files), as plain C
 * so that the host code (cuda_ops*.c, which includes the framework's private headers) and
 * nvcc (which never sees them) share one interface. Every function enqueues on `stream` (a
 * cudaStream_t) and returns the cudaError_t of the launch (0: cudaSuccess). Dtype codes are
 * tfl_dtype values; op codes are tfl__op_id values. No function synchronises.
 *
 * Element addressing: a tflcu_iter describes the output's shape (rank <= 8, row-major
 * traversal) and, for each operand (0: output, 1..3: inputs), its strides in ELEMENTS over
 * that shape (0 on broadcast axes) and its base pointer. Kernels are grid-stride loops over
 * the output's linear index, turned into each operand's offset through the strides.
 */
#ifndef TFL_CUDA_CU_LAUNCH_H
#define TFL_CUDA_CU_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TFLCU_MAX_RANK 8
#define TFLCU_MAX_OPS 4

typedef struct tflcu_iter {
    int rank;
    int n_ops;     /* output + inputs */
    int64_t numel; /* product of shape */
    int64_t shape[TFLCU_MAX_RANK];
    int64_t strides[TFLCU_MAX_OPS][TFLCU_MAX_RANK]; /* elements */
    void *ptr[TFLCU_MAX_OPS];                       /* element 0 of each operand */
} tflcu_iter;

/* elementwise (k_elementwise.cu): op is the tfl__op_id; alpha: the op's scalar attribute
 * (LeakyRelu's alpha, Gelu's approximate flag, the attribute of framework/ops/op_list.h's
 * UA and DA lines). Unary ops use ptr[1], binary ptr[1] and ptr[2]. Returns -1 when the
 * (op, dtype) pair has no GPU loop (the caller's table should have prevented it). */
int tflcu_elementwise(int op, int dtype, const tflcu_iter *it, double alpha, void *stream);
/* out (dtype dst) = cast(in (dtype src)), TensorFlow's semantics as the CPU's Cast */
int tflcu_cast(int src, int dst, const tflcu_iter *it, void *stream);
/* strided copy of elements of `esize` bytes (1, 2, 4, 8, 16): ptr[0] <- ptr[1] */
int tflcu_copy(int esize, const tflcu_iter *it, void *stream);
/* select: ptr[0] = ptr[1] (bool) ? ptr[2] : ptr[3], elements of esize bytes */
int tflcu_select(int esize, const tflcu_iter *it, void *stream);
/* n elements of esize bytes at dst set to the bytes of value */
int tflcu_fill(int esize, void *dst, int64_t n, const void *value, void *stream);

/* reductions (k_reduce.cu): op SUM, MEAN, MAX or MIN over x; out is contiguous over the kept
 * axes. keep: the kept axes (shape, x's strides), red: the reduced axes; count: elements
 * reduced into each output (MEAN divides by it). */
typedef struct tflcu_reduce {
    int nk, nr;
    int64_t kshape[TFLCU_MAX_RANK], kstride[TFLCU_MAX_RANK];
    int64_t rshape[TFLCU_MAX_RANK], rstride[TFLCU_MAX_RANK];
    int64_t n_out, count;
} tflcu_reduce;
int tflcu_reduce_run(int op, int dtype, const tflcu_reduce *r, const void *x, void *out,
                     void *stream);
/* ArgMax/ArgMin over the middle axis of contiguous x (outer, n, inner); out int64 */
int tflcu_arg(int op, int dtype, const void *x, int64_t *out, int64_t outer, int64_t n,
              int64_t inner, void *stream);
/* Softmax / LogSoftmax (log_out) along the middle axis of contiguous (outer, n, inner) */
int tflcu_softmax(int dtype, int log_out, const void *x, void *y, int64_t outer, int64_t n,
                  int64_t inner, void *stream);
/* LayerNormParamGrad over contiguous dy, x (rows, n) into out (2, n): each row's mean and rstd
 * into stats (2 rows doubles of device memory), then per feature the sums over the rows in
 * order (one thread per feature) */
int tflcu_ln_param_grad(int dtype, const void *dy, const void *x, void *out, double *stats,
                        int64_t rows, int64_t n, double eps, void *stream);
/* AttentionSoftmax over contiguous scores (rows, n), row r the query r % q: softmax(scale x)
 * of its entries, or with `causal` of those up to the query's position (the rest 0); one warp
 * per row, the sum in double */
int tflcu_attention_softmax(int dtype, const void *x, void *y, int64_t rows, int64_t q, int64_t n,
                            int causal, double scale, void *stream);
/* SoftmaxGrad along the middle axis of contiguous (outer, n, inner): dx = scale y (dy -
 * sum(dy y)); one warp per row */
int tflcu_softmax_grad(int dtype, const void *y, const void *dy, void *dx, int64_t outer,
                       int64_t n, int64_t inner, double scale, void *stream);
/* LayerNorm (grad 0: a x, b gamma, c beta) or LayerNormGrad (grad 1: a dy, b x, c gamma) over
 * contiguous (rows, n): one warp per row, the row's sums in double in a fixed order, as the CPU
 * (framework/cpu/k_norm.c) */
int tflcu_layer_norm(int dtype, int grad, const void *a, const void *b, const void *c, void *out,
                     int64_t rows, int64_t n, double eps, void *stream);
/* BatchMoments and BatchNormParamGrad over contiguous (rows, c), c >= 1, float32/float64
 * (framework/cpu/k_norm.c's ops): blocks of rows summed in double into the scratch `part`
 * (tflcu_bn_train_blocks(rows, c) * 2 * c doubles of device memory; none when that is 0),
 * merged per channel in a fixed order: deterministic (no atomics, a blocking that depends on
 * the shape alone; bn_train_elems.cuh). */
int64_t tflcu_bn_train_blocks(int64_t rows, int64_t c);
/* out (2, c): the mean and the biased variance of each channel; NaN for rows == 0 */
int tflcu_batch_moments(int dtype, const void *x, void *out, double *part, int64_t rows, int64_t c,
                        void *stream);
/* out (2, c): sum(dy xhat) = rstd sum(dy (x - m)) and sum(dy) per channel (BatchNormParamGrad;
 * rstd = 1 / sqrt(var + eps)), moments (2, c) row 0 m, row 1 var */
int tflcu_batch_norm_param_grad(int dtype, const void *dy, const void *x, const void *moments,
                                void *out, double *part, int64_t rows, int64_t c, double eps,
                                void *stream);
/* dx = dy a - (x - m) b - d per channel (a = gamma rstd, b = a rstd sums[0] / rows,
 * d = a sums[1] / rows), sums (2, c) BatchNormParamGrad's, gamma (c); coef: device scratch of
 * 3 c elements of the dtype */
int tflcu_batch_norm_training_grad(int dtype, const void *dy, const void *x, const void *moments,
                                   const void *gamma, const void *sums, void *dx, void *coef,
                                   int64_t rows, int64_t c, double eps, void *stream);
/* SoftmaxCrossEntropyWithLogits rows: out[r] over contiguous x, z (outer, n, inner) */
int tflcu_xent(int dtype, const void *x, const void *z, void *out, int64_t outer, int64_t n,
               int64_t inner, void *stream);
/* SparseSoftmaxCrossEntropyWithLogits: x (rows, classes), labels int32/int64 (rows);
 * a label outside [0, classes) makes *bad (device int64, preset to -1 by the caller) the
 * smallest such row index */
int tflcu_sparse_xent(int dtype, const void *x, const void *labels, int label_dtype, void *out,
                      int64_t rows, int64_t classes, int64_t *bad, void *stream);
/* its gradient: dx (rows, classes) = dy (rows) (softmax(x) - one_hot(labels)); *bad as above */
int tflcu_sparse_xent_grad(int dtype, const void *x, const void *labels, int label_dtype,
                           const void *dy, void *dx, int64_t rows, int64_t classes, int64_t *bad,
                           void *stream);

/* shape kernels (k_shape.cu) */
/* GatherV2 over contiguous params (outer, dim, inner_bytes) with nidx indices (int32/int64);
 * an index outside [0, dim) makes *bad the smallest such position (preset to -1) */
int tflcu_gather(const void *params, const void *idx, int idx_dtype, void *out, int64_t outer,
                 int64_t dim, int64_t nidx, int64_t inner_bytes, int64_t *bad, void *stream);
/* OneHot: out (n, depth) of esize-byte elements, on/off their bytes */
int tflcu_one_hot(const void *idx, int idx_dtype, void *out, int64_t n, int64_t depth, int esize,
                  const void *on, const void *off, void *stream);
/* UnsortedSegmentSum: data contiguous (outer, nidx, inner), out zeroed (outer, nseg, inner) */
int tflcu_segment_sum(int dtype, const void *data, const void *ids, int ids_dtype, void *out,
                      int64_t outer, int64_t nidx, int64_t nseg, int64_t inner, int64_t *bad,
                      void *stream);
/* UnsortedSegmentSum without atomics (deterministic mode), float32/float64: out (outer, nseg,
 * inner) written whole; perm (nidx): the rows of data grouped by segment, ascending within
 * each; offs (nseg + 1): segment s's rows are perm[offs[s] .. offs[s + 1]) (cuda_ops_shape.c
 * sorts the ids on the host). Each output adds its rows in ascending order, as the CPU. */
int tflcu_segment_sum_sorted(int dtype, const void *data, const int64_t *perm,
                             const int64_t *offs, void *out, int64_t outer, int64_t nidx,
                             int64_t nseg, int64_t inner, void *stream);
/* BatchNorm over contiguous x (n elements, c channels last) with contiguous (c) mean, variance,
 * offset, scale: y = (x - mean) a + offset, a = scale / sqrt(variance + eps) in double,
 * rounded once to the dtype (as the CPU) */
int tflcu_batch_norm(int dtype, const void *x, const void *mean, const void *var,
                     const void *offset, const void *scale, void *y, int64_t n, int64_t c,
                     double eps, void *stream);
/* Dropout over n contiguous elements with the CPU's Philox counters (framework/cpu/k_norm.c):
 * element i kept when (word i%4 of block i/4) >> 8 >= threshold, then x / keep */
int tflcu_dropout(int dtype, const void *x, void *y, int64_t n, uint32_t key0, uint32_t key1,
                  uint32_t threshold, double keep, void *stream);

/* fused optimizer updates (k_optim.cu; the host side is cuda_optim.c): the tensors and the
 * scalars of an apply are framework/opt_elems.h's structs, passed as they are */
struct tfl__opt_tensor;
struct tfl__opt_hyper;

/* tensors per launch: the chunk (tensor table and block offsets) is passed by value in the
 * kernel parameters, about 3 KiB, inside the 4 KiB limit */
#define TFLCU_OPT_CHUNK 32
/* blocks per tensor in the sum of squares: the partial sums of a chunk need
 * TFLCU_OPT_CHUNK * TFLCU_OPT_SUMSQ_BLOCKS doubles of device memory */
#define TFLCU_OPT_SUMSQ_BLOCKS 256

/* Updates the n tensors (dtype float32 or float64) in place, TFLCU_OPT_CHUNK per launch.
 * Returns -1 for another dtype or kernel. */
int tflcu_opt_apply(int dtype, int n, const struct tfl__opt_tensor *t,
                    const struct tfl__opt_hyper *h, void *stream);
/* out[i] (device memory) = sum of g^2 of t[i] in double, for n <= TFLCU_OPT_CHUNK tensors;
 * partial: device scratch of TFLCU_OPT_CHUNK * TFLCU_OPT_SUMSQ_BLOCKS doubles. Deterministic
 * (a fixed tree per tensor, no atomics). */
int tflcu_opt_sumsq(int dtype, int n, const struct tfl__opt_tensor *t, double *partial,
                    double *out, void *stream);
/* In place on the device, sums[0..n) (sums of squares) become the gradient scales of
 * framework/opt_kernels.h's tfl__opt_clip_scales: total = the sum of sums[] in index order,
 * norm = sqrt(per_variable ? sums[i] : total), s = tf ? c / max(norm, c) : c / (norm + 1e-6),
 * scale = s < 1 ? s : 1, in double with IEEE operations. One block, no host wait. */
int tflcu_opt_clip_scales(int n, double *sums, double c, int per_variable, int tf, void *stream);

/* convolutions (k_conv.cu; the host side is cuda_conv.c): the geometry of one Conv2D, input
 * (n, h, w, c) NHWC, filter (kh, kw, c, f) HWIO, output (n, oh, ow, f); strides sh, sw,
 * dilations dh, dw, padding before the first row / column pt, pl (elements). */
typedef struct tflcu_conv {
    int64_t n, h, w, c, kh, kw, f, oh, ow, sh, sw, dh, dw, pt, pl;
} tflcu_conv;
/* the im2col rows of the output pixels [m0, m1) into col ((m1 - m0) x kh kw c, row-major),
 * laid out as framework/cpu/conv_loops.h's; x contiguous NHWC */
int tflcu_im2col(int dtype, const tflcu_conv *g, const void *x, int64_t m0, int64_t m1,
                 void *col, void *stream);
/* col2im as a gather: dx[e] += the entries of dcol (the rows of the pixels [m0, m1)) that
 * im2col read from element e, for the dx elements e in [e0, e1); deterministic (no atomics) */
int tflcu_col2im(int dtype, const tflcu_conv *g, const void *dcol, int64_t m0, int64_t m1,
                 void *dx, int64_t e0, int64_t e1, void *stream);
/* pooling (k_pool.cu; the host side is cuda_pool.c): NHWC, contiguous, float32/float64, the
 * CPU's semantics (framework/cpu/k_pool.c). The geometry in elements: input (n, h, w, c),
 * window (kh, kw), output (n, oh, ow, c), strides, padding before (top, left). */
typedef struct tflcu_pool {
    int64_t n, h, w, c, kh, kw, oh, ow, sh, sw, pt, pl;
} tflcu_pool;
/* op (a tfl__op_id) and its operands:
 *   MaxPool, AvgPool:   y (pooled) from x
 *   MaxPoolGradGrad:    y (pooled) from x and x2 = g (input-shaped)
 *   MaxPoolGrad:        y = dx (input-shaped) from x and x2 = dy (pooled); arg: device
 *                       scratch of pooled-numel int64 (each window's argmax)
 *   AvgPoolGrad:        y = dx (input-shaped) from x = dy (pooled)
 * Returns -1 for another op or dtype. */
int tflcu_pool_run(int op, int dtype, const tflcu_pool *g, const void *x, const void *x2, void *y,
                   int64_t *arg, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* TFL_CUDA_CU_LAUNCH_H */
