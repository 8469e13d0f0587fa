/*
 * framework/cuda/tests/test_bn_train_elems.cu: the GPU's BatchMoments, BatchNormParamGrad and
 * BatchNormTrainingGrad (k_reduce.cu) run on the host: bn_train_elems.cuh's functions, compiled by nvcc for the
 * host, called in the kernels' order (every block of the grid, every thread of a block, the
 * shared-memory trees step by step, the merge kernels' lanes and their tree), against the
 * CPU's kernels (framework/cpu/k_norm.c through tfl_batch_norm_training,
 * tfl__batch_norm_param_grad and tfl__batch_norm_training_grad). The two block differently (the CPU in blocks of 16k
 * elements, the GPU by bnt_geometry), so they agree to float rounding, not bit for bit:
 * float32 within two units in the last place of the values' scale, float64 within 1e-13 of
 * it (on these shapes the float64 results differ by up to 4e-15 of it, float32 by one unit in
 * the last place at times).
 * Shapes: one channel, three, 16, 33 (a partly used block of channels), 300, 2500; rows from
 * one to 2,500,000 (the cap on blocks of rows reached, several groups of rows per thread,
 * several blocks per merge lane), not multiples of the block. Built only with the CUDA
 * backend (it needs nvcc). What it cannot check: the launches themselves, and the device's
 * rounding (nvcc contracts multiply-adds into FMAs, the host build does not, so the GPU's last
 * bits may differ from these; test_backend_ops GPU:0 compares the GPU with the CPU).
 */
#include "host_test.h"

#include <tapeflow/tapeflow.h>

#include <vector>

#include "bn_train_elems.cuh"

extern "C" {
/* framework/core_api/op_api.h (the gradient op's entry point; the static library has it) */
tfl_tensor *tfl__batch_norm_param_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                       const tfl_tensor *moments, double epsilon);
tfl_tensor *tfl__batch_norm_training_grad(tfl_ctx *ctx, const tfl_tensor *dy, const tfl_tensor *x,
                                          const tfl_tensor *moments, const tfl_tensor *gamma,
                                          const tfl_tensor *sums, double epsilon);
}

using namespace tflcu_bn_train;

/* a block's two shared arrays and its tree, run on the host step by step: at each step the
 * threads in turn (what one step of one thread reads, no thread of that step writes) */
struct block_emu {
    double s0[TFLCU_BNT_THREADS], s1[TFLCU_BNT_THREADS];
    void tree(double *s, const geometry &g)
    {
        for (int w = g.ty / 2; w > 0; w /= 2)
            for (int t = 0; t < TFLCU_BNT_THREADS; t++) /* the threads of one step, in turn */
                bnt_tree_step(s, t, g.tx, w);
    }
};

/* BatchMoments as batch_moments_kernel + batch_moments_merge_kernel compute it: out (2, c) */
template <typename T>
static void moments_emulated(const T *x, int64_t rows, int64_t c, std::vector<T> &out)
{
    const geometry g = bnt_geometry(rows, c);
    std::vector<double> part((size_t)(g.nb * 2 * c));
    std::vector<double> bn(TFLCU_BNT_THREADS), bm(bn.size()), bq(bn.size());
    for (int64_t b = 0; b < g.nb; b++) {
        int64_t r0, r1;
        bnt_block_rows(g, rows, b, &r0, &r1);
        for (int64_t cx = 0; cx < g.cb; cx++) {
            for (int t = 0; t < TFLCU_BNT_THREADS; t++) {
                const int64_t j = cx * g.tx + t % g.tx;
                bn[t] = bm[t] = bq[t] = 0;
                if (j < c)
                    bnt_thread_moments(x, c, j, r0 + t / g.tx, r1, g.ty, &bn[t], &bm[t], &bq[t]);
            }
            for (int w = g.ty / 2; w > 0; w /= 2)
                for (int t = 0; t < TFLCU_BNT_THREADS; t++)
                    bnt_moments_tree_step(bn.data(), bm.data(), bq.data(), t, g.tx, w);
            for (int tx = 0; tx < g.tx && cx * g.tx + tx < c; tx++) {
                const int64_t j = cx * g.tx + tx;
                assert_int_equal((int64_t)bn[tx], r1 - r0); /* every row of the block, once */
                part[(size_t)(2 * c * b + j)] = bm[tx];
                part[(size_t)(2 * c * b + c + j)] = bq[tx];
            }
        }
    }
    /* batch_moments_merge_kernel: per block of channels, the lanes' folds, then their tree */
    const int lanes = TFLCU_BNT_MERGE_THREADS / g.tx;
    std::vector<double> sn(TFLCU_BNT_MERGE_THREADS), sm(sn.size()), sq(sn.size());
    out.assign((size_t)(2 * c), (T)0);
    for (int64_t cx = 0; cx < g.cb; cx++) {
        for (int t = 0; t < TFLCU_BNT_MERGE_THREADS; t++) {
            const int64_t j = cx * g.tx + t % g.tx;
            sn[t] = sm[t] = sq[t] = 0;
            if (j < c)
                bnt_moments_fold(part.data(), g, rows, c, j, t / g.tx, lanes, &sn[t], &sm[t],
                                 &sq[t]);
        }
        for (int w = lanes / 2; w > 0; w /= 2)
            for (int t = 0; t < TFLCU_BNT_MERGE_THREADS; t++)
                bnt_moments_tree_step(sn.data(), sm.data(), sq.data(), t, g.tx, w);
        for (int tx = 0; tx < g.tx && cx * g.tx + tx < c; tx++) {
            const int64_t j = cx * g.tx + tx;
            out[(size_t)j] = rows > 0 ? (T)sm[tx] : (T)NAN;
            out[(size_t)(c + j)] = rows > 0 ? (T)(sq[tx] / (double)rows) : (T)NAN;
        }
    }
}

/* BatchNormParamGrad as bn_grad_sums_kernel and bn_param_grad_merge_kernel compute it:
 * out (2, c) dgamma, dbeta */
template <typename T>
static void param_grad_emulated(const T *dy, const T *x, const T *mo, int64_t rows, int64_t c,
                                double eps, std::vector<T> &out)
{
    const geometry g = bnt_geometry(rows, c);
    std::vector<double> part((size_t)(g.nb * 2 * c));
    block_emu e;
    for (int64_t b = 0; b < g.nb; b++) {
        int64_t r0, r1;
        bnt_block_rows(g, rows, b, &r0, &r1);
        for (int64_t cx = 0; cx < g.cb; cx++) {
            for (int t = 0; t < TFLCU_BNT_THREADS; t++) {
                const int tx = t % g.tx, lane = t / g.tx;
                const int64_t j = cx * g.tx + tx;
                double sg = 0, sgx = 0;
                if (j < c) bnt_grad_sums(dy, x, mo[j], c, j, r0 + lane, r1, g.ty, &sg, &sgx);
                e.s0[t] = sg;
                e.s1[t] = sgx;
            }
            e.tree(e.s0, g);
            e.tree(e.s1, g);
            for (int tx = 0; tx < g.tx && cx * g.tx + tx < c; tx++) {
                const int64_t j = cx * g.tx + tx;
                part[(size_t)(2 * c * b + j)] = e.s0[tx];
                part[(size_t)(2 * c * b + c + j)] = e.s1[tx];
            }
        }
    }
    /* bn_param_grad_merge_kernel: the lanes' folds, their tree, then dgamma and dbeta */
    const int lanes = TFLCU_BNT_MERGE_THREADS / g.tx;
    std::vector<double> s0(TFLCU_BNT_MERGE_THREADS), s1(s0.size());
    out.assign((size_t)(2 * c), (T)NAN);
    for (int64_t cx = 0; cx < g.cb; cx++) {
        for (int t = 0; t < TFLCU_BNT_MERGE_THREADS; t++) {
            const int64_t j = cx * g.tx + t % g.tx;
            s0[t] = s1[t] = 0;
            if (j < c) bnt_grad_fold(part.data(), g, c, j, t / g.tx, lanes, &s0[t], &s1[t]);
        }
        for (int w = lanes / 2; w > 0; w /= 2)
            for (int t = 0; t < TFLCU_BNT_MERGE_THREADS; t++) {
                bnt_tree_step(s0.data(), t, g.tx, w);
                bnt_tree_step(s1.data(), t, g.tx, w);
            }
        for (int tx = 0; tx < g.tx && cx * g.tx + tx < c; tx++) {
            const int64_t j = cx * g.tx + tx;
            bnt_param_grads(s0[tx], s1[tx], mo[c + j], eps, &out[(size_t)j], &out[(size_t)(c + j)]);
        }
    }
}

/* BatchNormTrainingGrad as bn_grad_coefs_kernel and bn_grad_apply_kernel compute it, from
 * BatchNormParamGrad's sums (2, c) */
template <typename T>
static void grad_emulated(const T *dy, const T *x, const T *mo, const T *gamma, const T *sums,
                          int64_t rows, int64_t c, double eps, std::vector<T> &dx)
{
    const geometry g = bnt_geometry(rows, c);
    std::vector<T> coef((size_t)(3 * c));
    for (int64_t j = 0; j < c; j++)
        bnt_grad_coefs(sums[j], sums[c + j], rows, mo[c + j], gamma[j], eps, &coef[(size_t)j],
                       &coef[(size_t)(c + j)], &coef[(size_t)(2 * c + j)]);
    /* bn_grad_apply_kernel over the partial sums' grid; an element it missed stays NaN */
    dx.assign((size_t)(rows * c), (T)NAN);
    for (int64_t b = 0; b < g.nb; b++) {
        int64_t r0, r1;
        bnt_block_rows(g, rows, b, &r0, &r1);
        for (int64_t cx = 0; cx < g.cb; cx++)
            for (int t = 0; t < TFLCU_BNT_THREADS; t++) {
                const int64_t j = cx * g.tx + t % g.tx;
                if (j >= c) continue;
                for (int64_t r = r0 + t / g.tx; r < r1; r += g.ty) {
                    const int64_t i = r * c + j;
                    dx[(size_t)i] = bnt_grad_elem(dy[i], x[i], mo[j], coef[(size_t)j],
                                                  coef[(size_t)(c + j)], coef[(size_t)(2 * c + j)]);
                }
            }
    }
}

/* a tensor's values on the host */
template <typename T> static std::vector<T> values(const tfl_tensor *t)
{
    assert_non_null(t);
    std::vector<T> v((size_t)tfl_tensor_numel(t));
    assert_int_equal(tfl_tensor_to_host(t, v.data(), sizeof(T) * v.size()), TFL_OK);
    return v;
}

/* |got - want| <= tol scale, NaN only for NaN; fails naming the shape and the element */
static void near(const char *what, int64_t rows, int64_t c, int64_t i, double want, double got,
                 double tol, double scale)
{
    const bool ok = std::isnan(want) ? std::isnan(got) : fabs(got - want) <= tol * scale;
    if (!ok)
        fail_msg("%s (%lld rows, %lld channels) [%lld]: cpu %.17g, gpu code %.17g, allowed %.3g",
                 what, (long long)rows, (long long)c, (long long)i, want, got, tol * scale);
}

/* x (rows, c): channel j around an offset of j % 5 - 1 (up to 3: the variance is of
 * deviations small against the mean), spread 0.5 + j % 3; dy in [-1, 1); gamma in [0.5, 1.5) */
template <typename T> static void run(tfl_ctx *ctx, int64_t rows, int64_t c)
{
    const bool f32 = sizeof(T) == sizeof(float);
    const tfl_dtype dt = f32 ? TFL_DTYPE_FLOAT32 : TFL_DTYPE_FLOAT64;
    const double eps = 1e-3, tol = f32 ? 2 * 1.1920929e-07 : 1e-13; /* the header's */
    std::vector<T> x((size_t)(rows * c)), dy(x.size()), gamma((size_t)c);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < c; j++) {
            x[(size_t)(r * c + j)] = (T)((double)(j % 5 - 1) + (0.5 + j % 3) * (unit() - 0.5));
            dy[(size_t)(r * c + j)] = (T)(2 * unit() - 1);
        }
    for (int64_t j = 0; j < c; j++)
        gamma[(size_t)j] = (T)(0.5 + unit());
    tfl_frame_push(ctx);
    const int64_t xs[2] = {rows, c}, ms[2] = {2, c};
    tfl_tensor *tx = tfl_tensor_new(ctx, dt, 2, xs, x.data());
    tfl_tensor *tdy = tfl_tensor_new(ctx, dt, 2, xs, dy.data());
    tfl_tensor *tg = tfl_tensor_new(ctx, dt, 1, &c, gamma.data());
    tfl_tensor *mean = NULL, *var = NULL;
    assert_non_null(tfl_batch_norm_training(ctx, tx, NULL, NULL, eps, &mean, &var));
    const std::vector<T> cm = values<T>(mean), cv = values<T>(var);

    std::vector<T> mo;
    moments_emulated(x.data(), rows, c, mo);
    for (int64_t j = 0; j < c; j++) {
        const double sd = sqrt((double)cv[(size_t)j]);
        near("BatchMoments mean", rows, c, j, cm[(size_t)j], mo[(size_t)j], tol,
             fabs((double)cm[(size_t)j]) + sd);
        near("BatchMoments variance", rows, c, j, cv[(size_t)j], mo[(size_t)(c + j)], tol,
             fabs((double)cv[(size_t)j]));
    }

    if (rows > 0) { /* the gradient with the CPU's moments, as the op gets them */
        std::vector<T> m2(cm);
        m2.insert(m2.end(), cv.begin(), cv.end());
        tfl_tensor *tm = tfl_tensor_new(ctx, dt, 2, ms, m2.data());
        tfl_tensor *tsums = tfl__batch_norm_param_grad(ctx, tdy, tx, tm, eps);
        const std::vector<T> csums = values<T>(tsums);
        std::vector<T> sums;
        param_grad_emulated(dy.data(), x.data(), m2.data(), rows, c, eps, sums);
        for (int64_t j = 0; j < c; j++) { /* sums of rows terms of size about 1 each */
            const double scale = sqrt((double)rows) + fabs((double)csums[(size_t)j]);
            near("BatchNormParamGrad dgamma", rows, c, j, csums[(size_t)j], sums[(size_t)j], tol,
                 scale);
            near("BatchNormParamGrad dbeta", rows, c, j, csums[(size_t)(c + j)],
                 sums[(size_t)(c + j)], tol, scale);
        }
        /* the gradient with the CPU's sums, as the op gets them */
        const std::vector<T> cdx =
            values<T>(tfl__batch_norm_training_grad(ctx, tdy, tx, tm, tg, tsums, eps));
        std::vector<T> dx;
        grad_emulated(dy.data(), x.data(), m2.data(), gamma.data(), csums.data(), rows, c, eps, dx);
        for (int64_t i = 0; i < rows * c; i++) {
            /* the scale of the three terms: |a| (|dy| + |x - m| / sd + 1) */
            const int64_t j = i % c;
            const double a = (double)gamma[(size_t)j] / sqrt((double)m2[(size_t)(c + j)] + eps);
            const double xh = fabs((double)x[(size_t)i] - (double)m2[(size_t)j]) /
                              sqrt((double)m2[(size_t)(c + j)] + eps);
            near("BatchNormTrainingGrad", rows, c, i, cdx[(size_t)i], dx[(size_t)i], tol,
                 fabs(a) * (fabs((double)dy[(size_t)i]) + xh + 1));
        }
    }
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_frame_pop(ctx);
}

/* (rows, channels); the blocking as bnt_geometry gives it */
static const int64_t shapes[][2] = {
    {5000, 1},    /* one channel: 256 row lanes, 3 blocks of 2048 rows, the last of 904 */
    {3001, 3},    /* 4 channel lanes, 3 used; the last block 441 rows */
    {1, 5},       /* one row */
    {40, 33},     /* a second block of channels with one used; 40 of the block's 64 rows */
    {700, 300},   /* 10 blocks of channels, 11 of rows, the last of 60 */
    {70000, 16},  /* 547 blocks of rows merged by 64 lanes (8 or 9 blocks each) */
    {300000, 3},  /* 586 blocks merged by 256 lanes */
    {150000, 33}, /* the cap of 1024 blocks: blocks of 152 rows, 19 per row lane (3 groups of
                     registers, the last partial), 987 blocks merged by 32 lanes */
    {2500000, 1}, /* the cap again: 10 rows per row lane (2 groups) */
    {64, 2500},   /* many channels, one block of rows */
};

static void test_float32(void **state)
{
    (void)state;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        run<float>(ctx, shapes[i][0], shapes[i][1]);
    tfl_ctx_free(ctx);
}

static void test_float64(void **state)
{
    (void)state;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    assert_non_null(ctx);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        run<double>(ctx, shapes[i][0], shapes[i][1]);
    tfl_ctx_free(ctx);
}

/* no rows: NaN moments, as the CPU's */
static void test_no_rows(void **state)
{
    (void)state;
    std::vector<float> mo;
    moments_emulated<float>(NULL, 0, 4, mo);
    assert_int_equal((int)mo.size(), 8);
    for (float v : mo)
        assert_true(std::isnan(v));
    assert_int_equal((int)bnt_geometry(0, 4).nb, 0);
}

/* the blocking: tx ty threads, channel blocks covering c, row blocks covering the rows (the
 * last one not empty), at most TFLCU_BNT_MAX_ROW_BLOCKS of them, whole row lanes */
static void test_geometry(void **state)
{
    (void)state;
    static const int64_t cs[] = {1, 2, 3, 5, 16, 31, 32, 33, 64, 300, 4096};
    static const int64_t rs[] = {1,    7,    255,    256,     1023,     1024,
                                 1025, 4097, 100000, 1000001, 123456789};
    for (int64_t c : cs)
        for (int64_t rows : rs) {
            const geometry g = bnt_geometry(rows, c);
            assert_int_equal(g.tx * g.ty, TFLCU_BNT_THREADS);
            const int64_t cm = c < 32 ? c : 32; /* tx: the smallest power of two >= cm */
            assert_true(g.tx >= cm && (g.tx == 1 || g.tx / 2 < cm));
            assert_true(g.cb * g.tx >= c && (g.cb - 1) * g.tx < c);
            assert_int_equal(g.rb % g.ty, 0);
            assert_true(g.rb >= (int64_t)g.ty * TFLCU_BNT_MIN_LANE_ROWS);
            assert_true(g.nb >= 1 && g.nb <= TFLCU_BNT_MAX_ROW_BLOCKS);
            int64_t r0, r1;
            bnt_block_rows(g, rows, g.nb - 1, &r0, &r1);
            assert_true(r0 < rows);
            assert_int_equal(r1, rows);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_no_rows),
        cmocka_unit_test(test_float32),
        cmocka_unit_test(test_float64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
