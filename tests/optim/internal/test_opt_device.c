/*
 * test_opt_device.c: clipping by norm on a device whose memory is not the host's, on the CPU.
 * The test registers its own backend (as tests/layers/internal/test_fit_device.c does):
 * "GPU:0", a device record made by the CPU backend's device_new (its memory is host memory)
 * with a device table that says it is not, so the framework reaches its memory only through
 * the slots, and counts every copy to the host and every synchronisation. Its optimizer table
 * is the CPU's apply plus the optional slots of framework/opt_kernels.h, sumsq_device and
 * clip_scales_device, implemented on its (host) memory with the CPU's sums of squares and
 * tfl__opt_clip_scales, and counted.
 *
 * It checks that optimizers with clip_norm and global_clip_norm on GPU:0 give the variables
 * and slots of the same run on CPU:0 bit for bit, over several steps, both formula families,
 * float32 and float64 variables interleaved (so that the scales travel with their tensors
 * when optim/apply.c groups them by dtype), while the apply reads nothing back to the host,
 * waits for nothing, never calls the host sumsq, and gives its scale buffer back to the
 * caching allocator; and that gradients on two devices take the host path, with the same
 * results.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"
#include "opt_kernels.h"

#include "host_gpu.h"

#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the device's optimizer kernels: the CPU's, plus the clipping slots ------------------- */

static const tfl__opt_kernels *cpu_opt; /* the CPU backend's table, from its device record */

static tfl_status g_apply(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                          const tfl__opt_tensor *t, const tfl__opt_hyper *h)
{
    return cpu_opt->apply(ctx, dev, dtype, n, t, h);
}

static tfl_status g_sumsq(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                          const tfl__opt_tensor *t, double *out)
{
    dev_count.host_sumsq++;
    return cpu_opt->sumsq(ctx, dev, dtype, n, t, out);
}

/* `sums` is the device's memory, which here is host memory: the CPU writes it in place */
static tfl_status g_sumsq_device(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                                 const tfl__opt_tensor *t, double *sums)
{
    dev_count.dev_sumsq++;
    return cpu_opt->sumsq(ctx, dev, dtype, n, t, sums);
}

static tfl_status g_clip_scales_device(tfl_ctx *ctx, tfl__device *dev, int n, double *sums,
                                       const tfl__opt_clip *clip)
{
    (void)ctx, (void)dev;
    dev_count.dev_clip++;
    tfl__opt_clip_scales(clip, n, sums, sums);
    return TFL_OK;
}

static const tfl__opt_kernels gpu_opt_kernels = {
    .apply = g_apply,
    .sumsq = g_sumsq,
    .dtypes = TFL_DT(FLOAT32) | TFL_DT(FLOAT64),
    .sumsq_device = g_sumsq_device,
    .clip_scales_device = g_clip_scales_device,
};

/* The shared slots of host_gpu.h only. */
static const tfl__device_ops gpu_ops = {HOST_GPU_OPS_BASE};

static const tfl__device_ops *host_gpu_ops(void)
{
    return &gpu_ops;
}

static const tfl__opt_kernels *host_gpu_opt_kernels(const tfl__opt_kernels *cpu)
{
    cpu_opt = cpu;
    return &gpu_opt_kernels;
}

/* ---- helpers ------------------------------------------------------------------------------ */

#define N_VARS 4
#define STEPS 6
static const int64_t sizes[N_VARS] = {3, 1000, 1, 257};
/* float32 and float64 interleaved: apply groups them by dtype, reordering its list */
static const tfl_dtype dtypes[N_VARS] = {TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64, TFL_DTYPE_FLOAT32,
                                         TFL_DTYPE_FLOAT64};

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 2, .seed = 7}, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_device_count(ctx), 2);
    assert_string_equal(tfl_device_name(ctx, 1), "GPU:0");
    return ctx;
}

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* n values in (-scale, scale) as dtype on `dev` */
static tfl_tensor *values_on(tfl_ctx *ctx, tfl_dtype dt, int64_t n, uint64_t *s, double scale,
                             const char *dev)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * (2.0 * ((double)next(s) / 9007199254740992.0) - 1.0);
    assert_int_equal(tfl_device_scope_push(ctx, "CPU:0"), TFL_OK);
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
    free(v);
    if (t && dt != TFL_DTYPE_FLOAT64) t = tfl_cast(ctx, t, dt);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    if (t && strcmp(dev, "CPU:0") != 0) t = tfl_tensor_to_device(ctx, t, dev);
    assert_non_null(t);
    assert_string_equal(tfl_tensor_device(t), dev);
    return t;
}

typedef struct side {
    tfl_optimizer *opt;
    tfl_tensor *vars[N_VARS];
} side;

/* the variables on `dev`; with split, the odd ones on CPU:0 */
static side make_side(tfl_ctx *ctx, const tfl_optimizer_opts *o, const char *dev, bool split)
{
    side sd = {tfl_optimizer_new(ctx, o), {NULL}};
    assert_non_null(sd.opt);
    uint64_t s = 99;
    for (int i = 0; i < N_VARS; i++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        const char *on = split && i % 2 ? "CPU:0" : dev;
        tfl_tensor *init = values_on(ctx, dtypes[i], sizes[i], &s, 1.0, on);
        sd.vars[i] = tfl_variable_new(ctx, init, &(tfl_variable_opts){.name = "w", .device = on});
        tfl_frame_pop(ctx);
        assert_non_null(sd.vars[i]);
    }
    return sd;
}

static void drop_side(side *sd)
{
    for (int i = 0; i < N_VARS; i++)
        tfl_tensor_release(sd->vars[i]);
    tfl_optimizer_free(sd->opt);
}

/* Every value of the variables and of the optimizer's variables, as doubles, compared bit for
 * bit between the two sides (read after the counted applies). */
static void same_values(const side *a, const side *b)
{
    tfl_tensor *va[32], *vb[32];
    int64_t na = tfl_optimizer_variables(a->opt, va, 32 - N_VARS);
    int64_t nb = tfl_optimizer_variables(b->opt, vb, 32 - N_VARS);
    assert_true(na > 0 && na <= 32 - N_VARS);
    assert_int_equal(na, nb);
    for (int i = 0; i < N_VARS; i++) {
        va[na + i] = a->vars[i];
        vb[na + i] = b->vars[i];
    }
    for (int64_t i = 0; i < na + N_VARS; i++) {
        assert_int_equal(tfl_tensor_numel(va[i]), tfl_tensor_numel(vb[i]));
        for (int64_t e = 0; e < tfl_tensor_numel(va[i]); e++) {
            double x, y;
            assert_int_equal(tfl_tensor_get(va[i], e, &x), TFL_OK);
            assert_int_equal(tfl_tensor_get(vb[i], e, &y), TFL_OK);
            if (memcmp(&x, &y, sizeof x) != 0)
                fail_msg("%s element %lld: CPU:0 %.17g, GPU:0 %.17g", tfl_variable_name(va[i]),
                         (long long)e, x, y);
        }
    }
}

/* One optimizer configuration: STEPS applies on CPU:0 and on GPU:0, compared after every
 * step; with split, the odd variables of the GPU:0 side and their gradients are on CPU:0
 * (one apply over two devices: the host path). */
static void run_case(tfl_optimizer_kind kind, tfl_formula formula, bool per_variable, bool split)
{
    /* a context per side, so that the variables' names and order are the same */
    tfl_ctx *cctx = new_ctx(), *ctx = new_ctx();
    tfl_optimizer_opts o = tfl_optimizer_defaults(kind, formula);
    o.learning_rate = 0.01;
    if (kind == TFL_OPTIMIZER_SGD) o.momentum = 0.9;
    if (kind == TFL_OPTIMIZER_RMSPROP) o.centered = true;
    if (per_variable)
        o.clip_norm = 0.75; /* each gradient's norm is 1 to 18 but for the 1-element one */
    else
        o.global_clip_norm = 5.0; /* the norm of them all is about 22 */
    side c = make_side(cctx, &o, "CPU:0", false), g = make_side(ctx, &o, "GPU:0", split);
    uint64_t gs = 1234;
    for (int step = 0; step < STEPS; step++) {
        assert_int_equal(tfl_frame_push(cctx), TFL_OK);
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *gc[N_VARS], *gg[N_VARS];
        uint64_t s = gs;
        for (int i = 0; i < N_VARS; i++)
            gc[i] = values_on(cctx, dtypes[i], sizes[i], &s, 1.0 + 0.1 * step, "CPU:0");
        s = gs;
        for (int i = 0; i < N_VARS; i++)
            gg[i] = values_on(ctx, dtypes[i], sizes[i], &s, 1.0 + 0.1 * step,
                              split && i % 2 ? "CPU:0" : "GPU:0");
        gs = s;
        assert_int_equal(tfl_optimizer_apply(c.opt, N_VARS, c.vars, gc), TFL_OK);
        tfl_alloc_stats before, after;
        assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &before), TFL_OK);
        host_gpu_counts was = dev_count;
        tfl_status st = tfl_optimizer_apply(g.opt, N_VARS, g.vars, gg);
        if (st != TFL_OK) fail_msg("apply on GPU:0: %s", tfl_ctx_error(ctx).message);
        assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &after), TFL_OK);
        if (!split) {
            /* the device path: nothing read back, no wait, the scales' buffer given back */
            assert_int_equal(dev_count.to_host - was.to_host, 0);
            assert_int_equal(dev_count.syncs - was.syncs, 0);
            assert_int_equal(dev_count.host_sumsq - was.host_sumsq, 0);
            assert_int_equal(dev_count.dev_sumsq - was.dev_sumsq, N_VARS); /* dtype runs */
            assert_int_equal(dev_count.dev_clip - was.dev_clip, 1);
            assert_true(after.frees > before.frees);
            if (step > 0) { /* the slots exist: only the scales' buffer came and went */
                assert_int_equal(after.bytes_in_use, before.bytes_in_use);
                assert_int_equal(after.frees - before.frees, 1);
            }
        } else {
            assert_int_equal(dev_count.dev_sumsq - was.dev_sumsq, 0);
            assert_int_equal(dev_count.dev_clip - was.dev_clip, 0);
            assert_true(dev_count.host_sumsq - was.host_sumsq > 0);
        }
        tfl_frame_pop(ctx);
        tfl_frame_pop(cctx);
        same_values(&c, &g);
    }
    drop_side(&c);
    drop_side(&g);
    tfl_ctx_free(cctx);
    tfl_ctx_free(ctx);
    assert_int_equal(dev_count.live_blocks, 0); /* every block went back through raw_free */
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_global_clip_on_device(void **state)
{
    (void)state;
    for (int k = TFL_OPTIMIZER_SGD; k < TFL_OPTIMIZER_KIND_COUNT; k++) { /* every kind */
        run_case((tfl_optimizer_kind)k, TFL_FORMULA_TENSORFLOW, false, false);
        run_case((tfl_optimizer_kind)k, TFL_FORMULA_PYTORCH, false, false);
    }
}

static void test_per_variable_clip_on_device(void **state)
{
    (void)state;
    run_case(TFL_OPTIMIZER_ADAM, TFL_FORMULA_TENSORFLOW, true, false);
    run_case(TFL_OPTIMIZER_ADAM, TFL_FORMULA_PYTORCH, true, false);
    run_case(TFL_OPTIMIZER_SGD, TFL_FORMULA_PYTORCH, true, false);
}

/* gradients on two devices: the scales are computed on the host, as before */
static void test_mixed_devices_use_the_host(void **state)
{
    (void)state;
    run_case(TFL_OPTIMIZER_ADAM, TFL_FORMULA_PYTORCH, false, true);
    run_case(TFL_OPTIMIZER_SGD, TFL_FORMULA_TENSORFLOW, true, true);
}

/* The reference formula's edge cases: NaN norms give 1, infinite ones 0, in both families. */
static void test_clip_scales_formula(void **state)
{
    (void)state;
    double sums[3] = {16.0, NAN, 1.0}, out[3];
    tfl__opt_clip tf = {.c = 2.0, .per_variable = true, .tf = true};
    tfl__opt_clip pt = {.c = 2.0, .per_variable = true, .tf = false};
    tfl__opt_clip_scales(&tf, 3, sums, out);
    assert_true(out[0] == 0.5 && out[1] == 1.0 && out[2] == 1.0);
    tfl__opt_clip_scales(&pt, 3, sums, out);
    assert_true(out[0] == 2.0 / (4.0 + 1e-6) && out[1] == 1.0 && out[2] == 1.0);
    tf.per_variable = false; /* the total is NaN: no scaling at all */
    tfl__opt_clip_scales(&tf, 3, sums, out);
    assert_true(out[0] == 1.0 && out[1] == 1.0 && out[2] == 1.0);
    double inf[2] = {INFINITY, 4.0};
    pt.per_variable = false;
    tfl__opt_clip_scales(&pt, 2, inf, inf); /* in place */
    assert_true(inf[0] == 0.0 && inf[1] == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_clip_on_device),
        cmocka_unit_test(test_per_variable_clip_on_device),
        cmocka_unit_test(test_mixed_devices_use_the_host),
        cmocka_unit_test(test_clip_scales_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
