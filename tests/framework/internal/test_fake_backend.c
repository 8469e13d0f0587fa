/*
 * test_fake_backend.c: the device seam (framework/internal.h, "A backend") carries a second
 * backend with no change outside its own file. This test is that backend: "GPU", one
 * device GPU:0 whose memory is host memory XOR-scrambled byte by byte, so any direct read or
 * write by the framework gives wrong values; only its copy slots and its kernels (Add and Mul
 * for float32, SGD and sum of squares for the optimizers) unscramble. It registers through a
 * test-only registration list (tfl__backends in xor_device.h, which the linker takes instead
 * of the static library's backends.c) and then places ops and variables there, reads them back
 * with tfl_tensor_get and tfl_tensor_to_host, formats them, runs an optimizer step with the
 * kernels registered for that device, and checks the placement messages, soft placement,
 * the allocator's statistics and out-of-memory message, and the slots' NULL meanings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"
#include "ops/op.h"
#include "opt_kernels.h"

#include <tapeflow/optim.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define KEY 0x5Au              /* every byte in fake memory is stored XOR this */
#define FAKE_BUDGET (1u << 20) /* bytes the fake device has */
#define FAKE_FILL 0xCC         /* fresh fake memory */

#include "xor_device.h"

/* copy_device, copy_host_async, memset, streams and events are NULL: the framework's
 * fallbacks (internal.h) must make them work through copy_host and sync. */
static const tfl__device_ops fake_ops = {
    FAKE_OPS_BASE,
    .sync = fake_sync,
    .mem_info = fake_mem_info,
};

/* ---- kernels: float32 elementwise on scrambled memory ----------------------------------- */

static float load(const tfl_tensor *t, int64_t i)
{
    float v;
    scramble(&v, tfl__elem_ptr(t, i), sizeof v);
    return v;
}

static void store(tfl_tensor *t, int64_t i, float v)
{
    scramble((char *)tfl__data(t) + 4 * i, &v, 4);
}

static tfl_status fake_binary(const tfl__kcall *k)
{
    fake.kernel_calls++;
    for (int j = 0; j < 2; j++)
        if (k->in[j]->numel != 1 && k->in[j]->numel != k->out->numel)
            return tfl__set_error(k->ctx, TFL_UNIMPLEMENTED, "fake %s: no broadcasting",
                                  tfl__op_defs[k->op].name);
    for (int64_t i = 0; i < k->out->numel; i++) {
        float a = load(k->in[0], k->in[0]->numel == 1 ? 0 : i);
        float b = load(k->in[1], k->in[1]->numel == 1 ? 0 : i);
        store(k->out, i, k->op == TFL_OP_ADD ? a + b : a * b);
    }
    return TFL_OK;
}

/* ---- optimizer kernels: SGD without momentum, and sums of squares ----------------------- */

static tfl_status fake_apply(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                             const tfl__opt_tensor *t, const tfl__opt_hyper *h)
{
    (void)dev;
    fake.apply_calls++;
    if (h->kernel != TFL__OPK_sgd || (h->flags & 1u) || dtype != TFL_DTYPE_FLOAT32)
        return tfl__set_error(ctx, TFL_UNIMPLEMENTED, "fake: only SGD without momentum");
    for (int i = 0; i < n; i++) {
        for (int64_t e = 0; e < t[i].n; e++) {
            float p, g;
            scramble(&p, (char *)t[i].p + 4 * e, 4);
            scramble(&g, (const char *)t[i].g + 4 * e, 4);
            double gi = fmin(fmax(g * t[i].gscale, -h->clip), h->clip) + h->l2 * p;
            p = (float)(p - h->decay * p - h->lr * gi);
            scramble((char *)t[i].p + 4 * e, &p, 4);
        }
    }
    return TFL_OK;
}

static tfl_status fake_sumsq(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                             const tfl__opt_tensor *t, double *out)
{
    (void)ctx;
    (void)dev;
    (void)dtype;
    fake.sumsq_calls++;
    for (int i = 0; i < n; i++) {
        out[i] = 0;
        for (int64_t e = 0; e < t[i].n; e++) {
            float g;
            scramble(&g, (const char *)t[i].g + 4 * e, 4);
            out[i] += (double)g * g;
        }
    }
    return TFL_OK;
}

static const tfl__opt_kernels fake_opt_kernels = {
    .apply = fake_apply, .sumsq = fake_sumsq, .dtypes = TFL_DT(FLOAT32)};

/* ---- the device record: its tables and kernels (the backend record is xor_device.h's) ---- */

static void fake_device_setup(tfl__device *dev)
{
    dev->ops = &fake_ops;
    dev->kernels[TFL_OP_ADD] = (tfl__kernel){fake_binary, TFL_DT(FLOAT32), NULL};
    dev->kernels[TFL_OP_MUL] = (tfl__kernel){fake_binary, TFL_DT(FLOAT32), NULL};
    dev->opt_kernels = &fake_opt_kernels;
}

/* ---- helpers ---------------------------------------------------------------------------- */

typedef struct {
    char text[8192];
    size_t len;
} log_buf;

static void capture(void *user, tfl_log_level level, const char *message)
{
    (void)level;
    log_buf *b = user;
    int w = snprintf(b->text + b->len, sizeof b->text - b->len, "%s\n", message);
    if (w > 0 && b->len + (size_t)w < sizeof b->text) b->len += (size_t)w;
}

static tfl_ctx *new_ctx(log_buf *log, bool strict)
{
    if (log) memset(log, 0, sizeof *log);
    tfl_ctx_opts o = {.log_placement = log != NULL,
                      .strict_placement = strict,
                      .log_fn = log ? capture : NULL,
                      .log_user = log,
                      .num_threads = 1};
    tfl_ctx *ctx = tfl_ctx_new(&o, NULL);
    assert_non_null(ctx);
    return ctx;
}

static double get(const tfl_tensor *t, int64_t i)
{
    double v = NAN;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

static void free_ctx(tfl_ctx *ctx)
{
    tfl_ctx_free(ctx);
    assert_int_equal(fake.live_bytes, 0); /* every block went back through raw_free */
}

/* ---- tests ------------------------------------------------------------------------------ */

static void the_backend_gives_gpu0(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx(NULL, false);
    assert_int_equal(tfl_device_count(ctx), 2);
    assert_string_equal(tfl_device_name(ctx, 0), "CPU:0");
    assert_string_equal(tfl_device_name(ctx, 1), "GPU:0");
    char buf[128];
    assert_true(tfl_device_describe(ctx, 1, buf, sizeof buf) > 0);
    assert_string_equal(buf, "GPU:0: 1.0 MiB (1.0 MiB free)"); /* mem_info, no describe */
    free_ctx(ctx);
}

static void ops_run_there_and_read_back(void **state)
{
    (void)state;
    log_buf log;
    tfl_ctx *ctx = new_ctx(&log, false);
    const float xs[6] = {1, 2, 3, 4, 5, 6};
    const int64_t shape[2] = {2, 3};
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, xs);
    tfl_tensor *two = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, shape, 2.0);
    assert_non_null(x);
    assert_non_null(two);
    assert_string_equal(tfl_tensor_device(x), "GPU:0");
    /* the memory is scrambled: a direct read would not see the values */
    assert_memory_not_equal(tfl_tensor_data_ptr(x), xs, sizeof xs);
    tfl_tensor *y = tfl_add(ctx, x, two);
    tfl_tensor *z = tfl_mul(ctx, y, x);
    assert_non_null(z);
    assert_string_equal(tfl_tensor_device(z), "GPU:0");
    assert_non_null(strstr(log.text, "op Add on GPU:0"));
    assert_non_null(strstr(log.text, "op Mul on GPU:0"));
    for (int i = 0; i < 6; i++)
        assert_true(get(z, i) == (xs[i] + 2) * xs[i]);
    float host[6];
    assert_int_equal(tfl_tensor_to_host(z, host, sizeof host), TFL_OK);
    assert_true(host[5] == 48.0f);
    char buf[256];
    tfl_tensor_format(z, buf, sizeof buf, NULL);
    assert_non_null(strstr(buf, "device=GPU:0"));
    assert_non_null(strstr(buf, "[[3, 8, 15], [24, 35, 48]]"));
    /* a strided view of device memory (the fake has no Identity kernel: a host gather) */
    tfl_tensor *zt = tfl_transpose(ctx, z, (const int[]){1, 0});
    assert_non_null(zt);
    assert_string_equal(tfl_tensor_device(zt), "GPU:0");
    assert_true(get(zt, 1) == 24.0); /* zt[0][1] = z[1][0] */
    assert_int_equal(tfl_tensor_to_host(zt, host, sizeof host), TFL_OK);
    const float want_t[6] = {3, 24, 8, 35, 15, 48};
    assert_memory_equal(host, want_t, sizeof host);
    tfl_tensor_format(zt, buf, sizeof buf, NULL);
    assert_non_null(strstr(buf, "[[3, 24], [8, 35], [15, 48]]"));
    /* tfl_tensor_new without data is zeros, through the memset fallback */
    tfl_tensor *zero = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, NULL);
    assert_non_null(zero);
    assert_true(get(zero, 4) == 0.0);
    /* back to the CPU through the copy slots */
    tfl_tensor *h = tfl_tensor_to_device(ctx, zt, "CPU:0");
    assert_non_null(h);
    assert_string_equal(tfl_tensor_device(h), "CPU:0");
    assert_true(((const float *)tfl_tensor_data_ptr(h))[2] == 8.0f);
    assert_true(fake.to_host > 0 && fake.to_device > 0 && fake.kernel_calls >= 2);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    free_ctx(ctx);
}

static void placement_prefers_it_and_falls_back_softly(void **state)
{
    (void)state;
    log_buf log;
    tfl_ctx *ctx = new_ctx(&log, false);
    const int64_t n = 4;
    /* no scope: data starts on CPU:0; Add float32 goes to the device of highest priority
     * with a kernel (GPU:0), copying its inputs; float64 has no kernel there */
    tfl_tensor *a = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.5);
    tfl_tensor *s = tfl_add(ctx, a, a);
    assert_non_null(s);
    assert_string_equal(tfl_tensor_device(s), "GPU:0");
    assert_true(get(s, 3) == 3.0);
    assert_non_null(strstr(log.text, "copy input 0 of Add from CPU:0 to GPU:0"));
    tfl_tensor *d = tfl_fill(ctx, TFL_DTYPE_FLOAT64, 1, &n, 1.5);
    tfl_tensor *sd = tfl_add(ctx, d, d);
    assert_string_equal(tfl_tensor_device(sd), "CPU:0");
    assert_non_null(strstr(log.text, "op Add has no GPU kernel for dtype float64: running on CPU:0"));
    /* a GPU:0 scope and an op without a kernel there: soft placement runs it on CPU:0 */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *e = tfl_exp(ctx, s);
    assert_non_null(e);
    assert_string_equal(tfl_tensor_device(e), "CPU:0");
    assert_true(fabs(get(e, 0) - exp(3.0)) < 1e-5);
    assert_non_null(strstr(log.text, "copy input 0 of Exp from GPU:0 to CPU:0"));
    assert_non_null(strstr(log.text, "op Exp on CPU:0"));
    assert_non_null(strstr(log.text, "op Exp has no GPU kernel for dtype float32: running on CPU:0"));
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    free_ctx(ctx);

    /* strict placement: TensorFlow's error, naming the devices */
    ctx = new_ctx(NULL, true);
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *x = tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.0);
    assert_non_null(x);
    assert_null(tfl_exp(ctx, x));
    tfl_error err = tfl_ctx_error(ctx);
    assert_int_equal(err.code, TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "Could not satisfy device specification 'GPU:0': no "
                                        "kernel for this op and dtype"));
    assert_non_null(strstr(err.message, "All available devices: CPU:0, GPU:0"));
    free_ctx(ctx);
}

static void variables_live_there(void **state)
{
    (void)state;
    tfl_ctx *cpu_ctx = new_ctx(NULL, false), *ctx = new_ctx(NULL, false);
    const int64_t shape[1] = {5};
    tfl_initializer init = tfl_init_random_uniform(-1, 1, 42);
    tfl_tensor *vc = tfl_variable_new_init(cpu_ctx, TFL_DTYPE_FLOAT32, 1, shape, &init,
                                           &(tfl_variable_opts){.device = "CPU:0"});
    tfl_tensor *vg = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, shape, &init,
                                           &(tfl_variable_opts){.device = "GPU:0"});
    assert_non_null(vc);
    assert_non_null(vg);
    assert_string_equal(tfl_tensor_device(vc), "CPU:0");
    assert_string_equal(tfl_tensor_device(vg), "GPU:0");
    /* no scope, no device: a variable goes to the highest-priority device with optimizer
     * kernels (this GPU has SGD's) */
    tfl_tensor *vdef = tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, shape, &init, NULL);
    assert_non_null(vdef);
    assert_string_equal(tfl_tensor_device(vdef), "GPU:0");
    for (int i = 0; i < 5; i++)
        assert_true(get(vg, i) == get(vc, i)); /* same seed, same values */
    /* assign from the CPU, add in place, read a snapshot */
    const float vals[5] = {1, 2, 3, 4, 5};
    tfl_tensor *src = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, shape, vals);
    assert_int_equal(tfl_variable_assign(vg, src), TFL_OK);
    tfl_tensor *snap = tfl_variable_read(vg);
    assert_int_equal(tfl_variable_assign_add(vg, src), TFL_OK); /* the fake's Add kernel */
    assert_true(get(vg, 4) == 10.0);
    assert_true(get(snap, 4) == 5.0); /* copy-on-write kept the snapshot */
    /* float64 has no fake kernel: assign_add goes through placement, then copies */
    tfl_tensor *vd = tfl_variable_new(ctx, tfl_fill(ctx, TFL_DTYPE_FLOAT64, 1, shape, 0.25),
                                      &(tfl_variable_opts){.device = "GPU:0"});
    assert_non_null(vd);
    assert_int_equal(tfl_variable_assign_add(vd, tfl_fill(ctx, TFL_DTYPE_FLOAT64, 1, shape, 1.0)),
                     TFL_OK);
    assert_true(get(vd, 2) == 1.25);
    char buf[256];
    tfl_tensor_format(vd, buf, sizeof buf, NULL);
    assert_non_null(strstr(buf, "[1.25, 1.25, 1.25, 1.25, 1.25]"));
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_tensor_release(vc);
    tfl_tensor_release(vg);
    tfl_tensor_release(vd);
    free_ctx(ctx);
    free_ctx(cpu_ctx);
}

static void optimizers_use_its_kernels(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx(NULL, false);
    const int64_t shape[1] = {4};
    const float p0[4] = {1, 2, 3, 4}, g0[4] = {1, 1, 1, 1};
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *v = tfl_variable_new(ctx, tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, shape, p0),
                                     &(tfl_variable_opts){.name = "w"});
    tfl_tensor *g = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, shape, g0);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_string_equal(tfl_tensor_device(v), "GPU:0");
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_PYTORCH);
    o.learning_rate = 0.5;
    o.global_clip_norm = 1.0; /* |g| = 2: g is scaled by 1/2, through the fake's sumsq */
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(opt);
    assert_int_equal(tfl_optimizer_apply(opt, 1, &v, &g), TFL_OK);
    assert_int_equal(fake.apply_calls, 1);
    assert_int_equal(fake.sumsq_calls, 1);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(get(v, i) - (p0[i] - 0.25)) < 1e-6);
    /* Adam is not among the fake's kernels: its error comes back, nothing else changes */
    tfl_optimizer *adam = tfl_optimizer_new(ctx, &(tfl_optimizer_opts){.kind = TFL_OPTIMIZER_ADAM,
                                                                       .learning_rate = 1e-3,
                                                                       .beta1 = 0.9,
                                                                       .beta2 = 0.999,
                                                                       .epsilon = 1e-8});
    assert_non_null(adam);
    assert_int_equal(tfl_optimizer_apply(adam, 1, &v, &g), TFL_UNIMPLEMENTED);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "fake: only SGD"));
    tfl_optimizer_free(adam);
    tfl_optimizer_free(opt);
    tfl_tensor_release(v);
    free_ctx(ctx);
}

static void allocator_and_slots(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx(NULL, false);
    tfl_alloc_stats st;
    const int64_t n = 1000;
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        assert_non_null(tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &n, 1.0));
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    assert_int_equal(tfl_alloc_stats_get(ctx, "GPU:0", &st), TFL_OK);
    assert_int_equal(st.fresh_allocs, 1); /* the cache served rounds 2 and 3 */
    assert_int_equal(st.cache_hits, 2);
    assert_int_equal(st.bytes_in_use, 0);
    assert_true(st.bytes_cached >= 4000);
    /* out of memory names the device, the sizes and the device's free memory */
    const int64_t big = FAKE_BUDGET; /* 4 MiB of float32 > the 1 MiB budget */
    assert_null(tfl_fill(ctx, TFL_DTYPE_FLOAT32, 1, &big, 0.0));
    tfl_error err = tfl_ctx_error(ctx);
    assert_int_equal(err.code, TFL_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(err.message, "out of memory on GPU:0: cannot allocate 4194304 bytes"));
    assert_non_null(strstr(err.message, "free of 1048576"));
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    tfl_ctx_clear_error(ctx);
    /* the slots the fake leaves NULL take their documented meanings */
    tfl__device *dev = tfl__find_device(ctx, "GPU:0");
    assert_non_null(dev);
    tfl__stream *s = (tfl__stream *)1;
    tfl__event *e = (tfl__event *)1;
    assert_int_equal(tfl__dev_stream_new(dev, &s), TFL_OK);
    assert_null(s); /* no streams: the device's own */
    assert_int_equal(tfl__dev_event_new(dev, &e), TFL_OK);
    assert_null(e);
    int syncs = fake.syncs;
    assert_int_equal(tfl__dev_event_record(dev, e, s), TFL_OK);
    assert_int_equal(tfl__dev_event_wait(dev, s, e), TFL_OK);
    assert_int_equal(tfl__dev_event_sync(dev, e), TFL_OK);
    assert_int_equal(tfl__dev_stream_sync(dev, s), TFL_OK);
    assert_int_equal(fake.syncs, syncs + 2);
    size_t got_a, got_b;
    void *a = tfl__allocator_get(&dev->alloc, 64, &got_a);
    void *b = tfl__allocator_get(&dev->alloc, 64, &got_b);
    assert_non_null(a);
    assert_non_null(b);
    const char msg[8] = "seam v2";
    char back[8];
    assert_int_equal(tfl__dev_copy_host_async(dev, NULL, a, msg, 8, 0), TFL_OK);
    assert_int_equal(tfl__dev_copy_device(dev, NULL, b, a, 8), TFL_OK); /* staged */
    assert_int_equal(tfl__dev_copy_host(dev, back, b, 8, 1), TFL_OK);
    assert_memory_equal(back, msg, 8);
    assert_int_equal(tfl__dev_memset(dev, NULL, b, 7, 8), TFL_OK);
    assert_int_equal(tfl__dev_copy_host(dev, back, b, 8, 1), TFL_OK);
    for (int i = 0; i < 8; i++)
        assert_int_equal(back[i], 7);
    tfl__allocator_put(&dev->alloc, a, got_a);
    tfl__allocator_put(&dev->alloc, b, got_b);
    free_ctx(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_backend_gives_gpu0),
        cmocka_unit_test(ops_run_there_and_read_back),
        cmocka_unit_test(placement_prefers_it_and_falls_back_softly),
        cmocka_unit_test(variables_live_there),
        cmocka_unit_test(optimizers_use_its_kernels),
        cmocka_unit_test(allocator_and_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
