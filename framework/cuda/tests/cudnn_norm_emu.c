/*
 * framework/cuda/tests/cudnn_norm_emu.c: the cuDNN paths of BatchNorm and Softmax /
 * LogSoftmax (framework/cuda/cudnn_norm.c itself) on the host, part of backend_cudnn_emulated
 * (test_cudnn_emulated.c has the device record, the handle's stand-ins and main). The
 * stand-ins below follow cuDNN's documented semantics:
 *  - cudnnBatchNormalizationForwardInference: y = bnScale (x - mean) / sqrt(epsilon + var) +
 *    bnBias, x and y alike in NHWC or NCHW, the parameters one per C (SPATIAL, a 1xCx1x1
 *    descriptor) or per C, H, W (PER_ACTIVATION, 1xCxHxW) of x's type (float, double);
 *  - cudnnSoftmaxForward, CUDNN_SOFTMAX_MODE_CHANNEL: over C for each N, H, W; ACCURATE
 *    (the maximum subtracted first) or LOG;
 * alpha 1 and beta 0, and they refuse (counted) descriptors that do not fit together.
 * Checked against tfl_batch_norm / tfl_softmax / tfl_log_softmax on CPU:0: ranks 1 to 5,
 * float32 and float64, the mode each layout must get; refused shapes (logged once per
 * device), a run-time failure (logged, that op's cuDNN path off for its dtype and layout on
 * the device), TFL_CUDNN=off,
 * softmax over another axis than the last left to tapeflow's kernel.
 */
#include "conv_emu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cudnn_emu.h"

/* ---- the stand-ins -----------------------------------------------------------------------------
 */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* BatchNorm inference (cudnn_norm.c): y = scale (x - mean) / sqrt(eps + var) + bias, the
 * parameters indexed per C (SPATIAL: a 1xCx1x1 descriptor) or per C, H, W (PER_ACTIVATION:
 * 1xCxHxW), x and y alike in either format, the parameters of x's type (float and double) */
static int dnn_bn_calls, dnn_bn_runs, dnn_fail_bn, dnn_bn_last_mode = -1;
cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xd, const void *x, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t pd, const void *scale, const void *bias, const void *mean,
    const void *var, double eps)
{
    dnn_bn_calls++;
    BAD(!h->stream_set);
    BAD(xd->dt != yd->dt || xd->format != yd->format || xd->n != yd->n || xd->c != yd->c ||
        xd->h != yd->h || xd->w != yd->w);
    BAD(pd->dt != xd->dt || pd->format != CUDNN_TENSOR_NCHW || pd->n != 1 || pd->c != xd->c);
    BAD(mode == CUDNN_BATCHNORM_SPATIAL && (pd->h != 1 || pd->w != 1));
    BAD(mode == CUDNN_BATCHNORM_PER_ACTIVATION && (pd->h != xd->h || pd->w != xd->w));
    BAD(mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_PER_ACTIVATION);
    BAD(eps < CUDNN_BN_MIN_EPSILON);
    BAD(at(xd->dt, alpha, 0) != 1.0 || at(xd->dt, beta, 0) != 0.0);
    if (dnn_fail_bn) return CUDNN_STATUS_NOT_SUPPORTED;
    const bool nhwc = xd->format == CUDNN_TENSOR_NHWC;
    for (int n = 0; n < xd->n; n++)
        for (int c = 0; c < xd->c; c++)
            for (int hh = 0; hh < xd->h; hh++)
                for (int w = 0; w < xd->w; w++) {
                    int64_t i = nhwc ? (((int64_t)n * xd->h + hh) * xd->w + w) * xd->c + c
                                     : (((int64_t)n * xd->c + c) * xd->h + hh) * xd->w + w;
                    int64_t p =
                        mode == CUDNN_BATCHNORM_SPATIAL ? c : ((int64_t)c * xd->h + hh) * xd->w + w;
                    double v = at(pd->dt, scale, p) * (at(xd->dt, x, i) - at(pd->dt, mean, p)) /
                                   sqrt(eps + at(pd->dt, var, p)) +
                               at(pd->dt, bias, p);
                    put(yd->dt, y, i, v);
                }
    dnn_bn_runs++;
    dnn_bn_last_mode = (int)mode;
    return CUDNN_STATUS_SUCCESS;
}

/* Softmax, CUDNN_SOFTMAX_MODE_CHANNEL: over C for every N, H, W */
static int dnn_sm_calls, dnn_sm_runs, dnn_fail_sm, dnn_sm_last_algo = -1;
cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void *alpha,
                                  const cudnnTensorDescriptor_t xd, const void *x, const void *beta,
                                  const cudnnTensorDescriptor_t yd, void *y)
{
    dnn_sm_calls++;
    BAD(!h->stream_set);
    BAD(xd->dt != yd->dt || xd->format != yd->format || xd->n != yd->n || xd->c != yd->c ||
        xd->h != yd->h || xd->w != yd->w);
    BAD(mode != CUDNN_SOFTMAX_MODE_CHANNEL);
    BAD(algo != CUDNN_SOFTMAX_ACCURATE && algo != CUDNN_SOFTMAX_LOG); /* FAST: no max taken */
    BAD(at(xd->dt, alpha, 0) != 1.0 || at(xd->dt, beta, 0) != 0.0);
    if (dnn_fail_sm) return CUDNN_STATUS_EXECUTION_FAILED;
    const bool nhwc = xd->format == CUDNN_TENSOR_NHWC;
    for (int n = 0; n < xd->n; n++)
        for (int hh = 0; hh < xd->h; hh++)
            for (int w = 0; w < xd->w; w++) {
#define IDX(j)                                                                                     \
    (nhwc ? (((int64_t)n * xd->h + hh) * xd->w + w) * xd->c + (j)                                  \
          : (((int64_t)n * xd->c + (j)) * xd->h + hh) * xd->w + w)
                double m = at(xd->dt, x, IDX(0)), sum = 0;
                for (int c = 1; c < xd->c; c++)
                    m = fmax(m, at(xd->dt, x, IDX(c)));
                for (int c = 0; c < xd->c; c++)
                    sum += exp(at(xd->dt, x, IDX(c)) - m);
                for (int c = 0; c < xd->c; c++) {
                    double d = at(xd->dt, x, IDX(c)) - m;
                    put(yd->dt, y, IDX(c), algo == CUDNN_SOFTMAX_LOG ? d - log(sum) : exp(d) / sum);
                }
#undef IDX
            }
    dnn_sm_runs++;
    dnn_sm_last_algo = (int)algo;
    return CUDNN_STATUS_SUCCESS;
}
#pragma GCC diagnostic pop

void norm_emu_reset(void)
{
    dnn_bn_calls = dnn_bn_runs = dnn_fail_bn = 0;
    dnn_bn_last_mode = -1;
    dnn_sm_calls = dnn_sm_runs = dnn_fail_sm = 0;
    dnn_sm_last_algo = -1;
    cu.dnn_norm = 0;
}

/* ---- the tests ---------------------------------------------------------------------------------
 */

/* a tensor record of any rank over host memory */
static void bn_fake(emu_fake *f, tfl_dtype dt, int rank, const int64_t *shape, void *data)
{
    memset(f, 0, sizeof *f);
    f->st.data = data;
    f->t.storage = &f->st;
    f->t.dtype = (uint8_t)dt;
    f->t.rank = (uint8_t)rank;
    f->t.numel = 1;
    for (int d = rank - 1; d >= 0; d--) {
        f->t.shape[d] = shape[d];
        f->t.strides[d] = f->t.numel;
        f->t.numel *= shape[d];
    }
}

/* One shape: tfl__cudnn_batch_norm against tfl_batch_norm on CPU:0 (expect_mode: the mode
 * cuDNN must be given) */
static void bn_check(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape, double eps,
                     int expect_mode)
{
    const int64_t c = shape[rank - 1];
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= shape[d];
    void *x = emu_values(dt, n, true), *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = emu_values(dt, c, true); /* mean, variance, offset, scale */
    for (int64_t j = 0; j < c; j++) {   /* variance > 0 */
        if (dt == TFL_DTYPE_FLOAT32)
            ((float *)p[1])[j] = fabsf(((float *)p[1])[j]) + 0.25f;
        else
            ((double *)p[1])[j] = fabs(((double *)p[1])[j]) + 0.25;
    }
    tfl_frame_push(ctx);
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *t[5] = {tfl_tensor_new(ctx, dt, rank, shape, x)};
    for (int i = 0; i < 4; i++)
        t[i + 1] = tfl_tensor_new(ctx, dt, 1, &c, p[i]);
    tfl_tensor *ref = tfl_batch_norm(ctx, t[0], t[1], t[2], t[3], t[4], eps);
    tfl_device_scope_pop(ctx);
    assert_non_null(ref);
    emu_fake f[5], fo;
    bn_fake(&f[0], dt, rank, shape, x);
    for (int i = 0; i < 4; i++)
        bn_fake(&f[i + 1], dt, 1, &c, p[i]);
    void *out = emu_values(dt, n, false);
    bn_fake(&fo, dt, rank, shape, out);
    const tfl_tensor *in[5] = {&f[0].t, &f[1].t, &f[2].t, &f[3].t, &f[4].t};
    const tfl__batch_norm_attrs a = {eps};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_BATCH_NORM, 5, in, &fo.t, &a};
    int runs = dnn_bn_runs;
    tfl_status st = TFL_INTERNAL;
    assert_true(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(st, TFL_OK);
    assert_int_equal(dnn_bn_runs, runs + 1);
    assert_int_equal(dnn_bn_last_mode, expect_mode);
    char desc[64];
    snprintf(desc, sizeof desc, "%s rank %d, C %lld", tfl_dtype_name(dt), rank, (long long)c);
    emu_expect_close("BatchNorm", desc, dt, out, ref, n);
    free(out);
    free(x);
    for (int i = 0; i < 4; i++)
        free(p[i]);
    tfl_frame_pop(ctx);
}

/* rank 4 (NHWC, spatial), rank 2 (per activation) and the other ranks as (rows, C), float32
 * and float64, against the CPU kernel; descriptors made and destroyed per call */
void test_bn_shapes(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    const tfl_dtype f32 = TFL_DTYPE_FLOAT32, f64 = TFL_DTYPE_FLOAT64;
    const int sp = CUDNN_BATCHNORM_SPATIAL, pa = CUDNN_BATCHNORM_PER_ACTIVATION;
    bn_check(ctx, f32, 4, SHAPE(2, 3, 4, 5), 1e-3, sp);
    bn_check(ctx, f64, 4, SHAPE(3, 2, 5, 4), 1e-5, sp);
    bn_check(ctx, f32, 4, SHAPE(1, 1, 1, 7), 1e-3, sp);
    bn_check(ctx, f32, 2, SHAPE(6, 3), 1e-3, pa);
    bn_check(ctx, f64, 2, SHAPE(5, 8), 1e-3, pa);
    bn_check(ctx, f64, 3, SHAPE(2, 3, 4), 0.5, pa);
    bn_check(ctx, f32, 1, SHAPE(9), 1e-3, pa);
    bn_check(ctx, f32, 5, SHAPE(2, 1, 3, 2, 3), 1e-3, pa);
    for (int it = 0; it < 40; it++) {
        int rank = (int)emu_rnd(1, 4);
        int64_t s[4] = {emu_rnd(1, 5), emu_rnd(1, 5), emu_rnd(1, 5), emu_rnd(1, 5)};
        bn_check(ctx, it % 2 ? f64 : f32, rank, s, 1e-3, rank == 4 ? sp : pa);
    }
    assert_int_equal(dnn_bn_runs, 48);
    assert_int_equal(emu_log_info + emu_log_warning, 0);
    teardown(ctx);
}

/* refused shapes answer false (the caller runs tapeflow's kernel) with one INFO line per
 * device; other dtypes and empty tensors answer false silently */
void test_bn_refused(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    char dummy[64] = {0};
    emu_fake f[5], fo;
    const int64_t big[2] = {(int64_t)1 << 16, (int64_t)1 << 16}, c = big[1];
    bn_fake(&f[0], TFL_DTYPE_FLOAT32, 2, big, dummy);
    for (int i = 1; i < 5; i++)
        bn_fake(&f[i], TFL_DTYPE_FLOAT32, 1, &c, dummy);
    bn_fake(&fo, TFL_DTYPE_FLOAT32, 2, big, dummy);
    const tfl_tensor *in[5] = {&f[0].t, &f[1].t, &f[2].t, &f[3].t, &f[4].t};
    const tfl__batch_norm_attrs a = {1e-3};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_BATCH_NORM, 5, in, &fo.t, &a};
    tfl_status st = TFL_OK;
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(emu_log_info, 1);
    assert_non_null(strstr(emu_last_log, "BatchNorm on GPU:0 runs tapeflow's kernel, not cuDNN"));
    assert_non_null(strstr(emu_last_log, "2^31 or more elements"));
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(emu_log_info, 1); /* once per device */
    /* empty, and float16 (never reaches the kernel, but not cuDNN's either) */
    const int64_t empty[2] = {0, 3}, three = 3;
    bn_fake(&f[0], TFL_DTYPE_FLOAT32, 2, empty, dummy);
    bn_fake(&fo, TFL_DTYPE_FLOAT32, 2, empty, dummy);
    for (int i = 1; i < 5; i++)
        bn_fake(&f[i], TFL_DTYPE_FLOAT32, 1, &three, dummy);
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    const int64_t small[2] = {2, 3};
    bn_fake(&f[0], TFL_DTYPE_FLOAT16, 2, small, dummy);
    bn_fake(&fo, TFL_DTYPE_FLOAT16, 2, small, dummy);
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(dnn_bn_calls, 0);
    assert_int_equal(st, TFL_OK);
    teardown(ctx);
}

/* a cuDNN BatchNorm failing at run time: false, logged once at WARNING, cuDNN's BatchNorm off
 * for that dtype and layout on the device from then on (no second call); float64, and float32
 * NHWC, keep cuDNN */
void test_bn_runtime_failure(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    dnn_fail_bn = 1;
    const int64_t xs[2] = {4, 3}, c = 3;
    void *x = emu_values(TFL_DTYPE_FLOAT32, 12, true), *p = emu_values(TFL_DTYPE_FLOAT32, 3, true);
    void *out = emu_values(TFL_DTYPE_FLOAT32, 12, false);
    emu_fake f[5], fo;
    bn_fake(&f[0], TFL_DTYPE_FLOAT32, 2, xs, x);
    for (int i = 1; i < 5; i++)
        bn_fake(&f[i], TFL_DTYPE_FLOAT32, 1, &c, p);
    bn_fake(&fo, TFL_DTYPE_FLOAT32, 2, xs, out);
    const tfl_tensor *in[5] = {&f[0].t, &f[1].t, &f[2].t, &f[3].t, &f[4].t};
    const tfl__batch_norm_attrs a = {1e-3};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_BATCH_NORM, 5, in, &fo.t, &a};
    tfl_status st = TFL_OK;
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(dnn_bn_calls, 1);
    assert_int_equal(emu_log_warning, 1);
    assert_non_null(strstr(emu_last_log, "BatchNorm on GPU:0: cuDNN failed for x of shape"));
    assert_non_null(strstr(emu_last_log, "tapeflow's kernel on this device from now on for "
                                         "float32 x of rank other than 4"));
    dnn_fail_bn = 0;
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(dnn_bn_calls, 1);
    assert_int_equal(emu_log_warning, 1);
    assert_int_equal(st, TFL_OK);
    bn_check(ctx, TFL_DTYPE_FLOAT64, 2, SHAPE(4, 3), 1e-3, CUDNN_BATCHNORM_PER_ACTIVATION);
    bn_check(ctx, TFL_DTYPE_FLOAT32, 4, SHAPE(1, 2, 2, 3), 1e-3, CUDNN_BATCHNORM_SPATIAL);
    assert_int_equal(dnn_bn_calls, 3);
    free(x);
    free(p);
    free(out);
    teardown(ctx);
}

/* TFL_CUDNN=0: BatchNorm never reaches cuDNN, and no handle is made */
void test_bn_env_off(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    assert_int_equal(setenv("TFL_CUDNN", "off", 1), 0);
    const int64_t xs[2] = {2, 2}, c = 2;
    char dummy[64] = {0};
    emu_fake f[5], fo;
    bn_fake(&f[0], TFL_DTYPE_FLOAT64, 2, xs, dummy);
    for (int i = 1; i < 5; i++)
        bn_fake(&f[i], TFL_DTYPE_FLOAT64, 1, &c, dummy);
    bn_fake(&fo, TFL_DTYPE_FLOAT64, 2, xs, dummy);
    const tfl_tensor *in[5] = {&f[0].t, &f[1].t, &f[2].t, &f[3].t, &f[4].t};
    const tfl__batch_norm_attrs a = {1e-3};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_BATCH_NORM, 5, in, &fo.t, &a};
    tfl_status st = TFL_OK;
    assert_false(tfl__cudnn_batch_norm(&k, in, &st));
    assert_int_equal(unsetenv("TFL_CUDNN"), 0);
    assert_int_equal(dnn_creates, 0);
    assert_int_equal(dnn_bn_calls, 0);
    assert_int_equal(emu_log_info, 1);
    assert_non_null(strstr(emu_last_log, "cuDNN is off (TFL_CUDNN=off)"));
    assert_non_null(strstr(emu_last_log, "BatchNorm and Softmax on tapeflow's kernels"));
    teardown(ctx);
}

/* Softmax / LogSoftmax of x (rank, shape) over axis: tfl__cudnn_softmax against the CPU's op;
 * returns whether cuDNN took it (compared then), false when it left the shape to tapeflow */
static bool sm_check(tfl_ctx *ctx, tfl__op_id op, tfl_dtype dt, int rank, const int64_t *shape,
                     int axis)
{
    int64_t n = 1, outer = 1, inner = 1;
    for (int d = 0; d < rank; d++) {
        n *= shape[d];
        if (d < axis) outer *= shape[d];
        if (d > axis) inner *= shape[d];
    }
    void *x = emu_values(dt, n, true), *out = emu_values(dt, n, false);
    tfl_frame_push(ctx);
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *tx = tfl_tensor_new(ctx, dt, rank, shape, x);
    tfl_tensor *ref =
        op == TFL_OP_LOG_SOFTMAX ? tfl_log_softmax(ctx, tx, axis) : tfl_softmax(ctx, tx, axis);
    tfl_device_scope_pop(ctx);
    assert_non_null(ref);
    emu_fake fx, fo;
    bn_fake(&fx, dt, rank, shape, x);
    bn_fake(&fo, dt, rank, shape, out);
    const tfl_tensor *in[1] = {&fx.t};
    const tfl__axis_attrs a = {axis};
    tfl__kcall k = {ctx, &cu.base, op, 1, in, &fo.t, &a};
    tfl_status st = TFL_INTERNAL;
    int runs = dnn_sm_runs;
    bool took = tfl__cudnn_softmax(&k, &fx.t, outer, shape[axis], inner, &st);
    if (took) {
        assert_int_equal(st, TFL_OK);
        assert_int_equal(dnn_sm_runs, runs + 1);
        assert_int_equal(dnn_sm_last_algo,
                         op == TFL_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE);
        char desc[64];
        snprintf(desc, sizeof desc, "%s rank %d, axis %d", tfl_dtype_name(dt), rank, axis);
        emu_expect_close(op == TFL_OP_LOG_SOFTMAX ? "LogSoftmax" : "Softmax", desc, dt, out, ref,
                         n);
    } else {
        assert_int_equal(dnn_sm_runs, runs);
        assert_int_equal(st, TFL_INTERNAL); /* untouched */
    }
    free(x);
    free(out);
    tfl_frame_pop(ctx);
    return took;
}

/* the last axis through cuDNN (float32, ranks 1 to 4, both ops), float64, every other axis
 * and one-class rows left to tapeflow's kernel, silently */
void test_softmax(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    const tfl_dtype f32 = TFL_DTYPE_FLOAT32, f64 = TFL_DTYPE_FLOAT64;
    const tfl__op_id sm = TFL_OP_SOFTMAX, lsm = TFL_OP_LOG_SOFTMAX;
    assert_true(sm_check(ctx, sm, f32, 2, SHAPE(4, 10), 1));
    assert_true(sm_check(ctx, lsm, f32, 2, SHAPE(4, 10), 1));
    assert_false(sm_check(ctx, sm, f64, 3, SHAPE(2, 3, 7), 2)); /* float64: tapeflow's */
    assert_false(sm_check(ctx, lsm, f64, 1, SHAPE(5), 0));
    assert_true(sm_check(ctx, sm, f32, 4, SHAPE(2, 2, 3, 6), 3));
    assert_false(sm_check(ctx, sm, f32, 2, SHAPE(4, 10), 0)); /* inner 10 */
    assert_false(sm_check(ctx, lsm, f64, 3, SHAPE(2, 3, 7), 1));
    assert_false(sm_check(ctx, sm, f32, 2, SHAPE(4, 1), 1)); /* one class */
    for (int it = 0; it < 30; it++) {
        int rank = (int)emu_rnd(1, 4);
        int64_t s[4] = {emu_rnd(1, 5), emu_rnd(1, 5), emu_rnd(1, 5), emu_rnd(2, 9)};
        const int64_t *shape = s + 4 - rank;
        tfl_dtype dt = it % 2 ? f64 : f32;
        assert_int_equal(sm_check(ctx, it % 3 ? sm : lsm, dt, rank, shape, rank - 1), dt == f32);
    }
    assert_int_equal(dnn_sm_runs, 18);
    assert_int_equal(emu_log_info + emu_log_warning, 0);
    teardown(ctx);
}

/* a cuDNN softmax failing at run time: false, logged once at WARNING, off for that dtype on
 * the device (LogSoftmax too: one kernel); BatchNorm keeps its cuDNN path */
void test_softmax_runtime_failure(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    dnn_fail_sm = 1;
    assert_false(sm_check(ctx, TFL_OP_SOFTMAX, TFL_DTYPE_FLOAT32, 2, SHAPE(3, 4), 1));
    assert_int_equal(dnn_sm_calls, 1);
    assert_int_equal(emu_log_warning, 1);
    assert_non_null(strstr(emu_last_log, "Softmax on GPU:0: cuDNN failed for x of shape"));
    dnn_fail_sm = 0;
    assert_false(sm_check(ctx, TFL_OP_LOG_SOFTMAX, TFL_DTYPE_FLOAT32, 2, SHAPE(3, 4), 1));
    assert_int_equal(dnn_sm_calls, 1);
    assert_int_equal(emu_log_warning, 1);
    bn_check(ctx, TFL_DTYPE_FLOAT32, 2, SHAPE(3, 4), 1e-3, CUDNN_BATCHNORM_PER_ACTIVATION);
    teardown(ctx);
}

/* No host memory for cuDNN's state at the first cuDNN op: the op fails with RESOURCE_EXHAUSTED
 * (taken, *st set), never runs tapeflow's kernel instead, whose rounding differs (a step that
 * completes after a refused allocation must give the same numbers); with memory again cuDNN
 * runs it. */
void test_softmax_no_host_memory(void **state)
{
    (void)state;
    tfl_ctx *ctx = setup();
    const int64_t *shape = SHAPE(3, 4);
    float x[12] = {0}, out[12] = {0};
    emu_fake fx, fo;
    bn_fake(&fx, TFL_DTYPE_FLOAT32, 2, shape, x);
    bn_fake(&fo, TFL_DTYPE_FLOAT32, 2, shape, out);
    const tfl_tensor *in[1] = {&fx.t};
    const tfl__axis_attrs a = {1};
    tfl__kcall k = {ctx, &cu.base, TFL_OP_SOFTMAX, 1, in, &fo.t, &a};
    int runs = dnn_sm_runs, errors = emu_errors;
    tfl_status st = TFL_INTERNAL;
    emu_refuse_host = 1;
    assert_true(tfl__cudnn_softmax(&k, &fx.t, 3, 4, 1, &st));
    emu_refuse_host = 0;
    assert_int_equal(st, TFL_RESOURCE_EXHAUSTED);
    assert_int_equal(emu_errors, errors + 1); /* the error kept names it */
    assert_int_equal(dnn_sm_runs, runs);      /* nothing ran */
    emu_errors = errors;                      /* the one expected (teardown counts the rest) */
    /* BatchNorm and convolutions share the state: the same */
    assert_true(sm_check(ctx, TFL_OP_SOFTMAX, TFL_DTYPE_FLOAT32, 2, shape, 1));
    assert_int_equal(dnn_sm_runs, runs + 1);
    teardown(ctx);
}
