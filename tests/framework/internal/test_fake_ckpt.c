/*
 * test_fake_ckpt.c: a checkpoint saved from variables on a GPU restores on the CPU, and the
 * reverse, with no GPU: a test-only backend (as in test_fake_backend.c) gives "GPU:0", whose
 * memory is host memory XOR-scrambled byte by byte, so a save that read device memory
 * directly would write scrambled bytes and a restore that wrote it directly would leave
 * values that read back wrong. Only the device table's copy slots unscramble.
 *
 * Saved: float32 and float64 variables of several shapes (a scalar, a vector, a matrix, a
 * rank-3 tensor), Adam's slots (m, v on the variable's device; PyTorch's per-variable "step"
 * and the optimizer's "iterations" on CPU:0), and a strided view of device memory. Restored
 * into same-named variables on the other device and compared value by value, and (on the
 * fake) byte by byte through the scramble. A restore with one shape mismatched is refused and
 * writes nothing to the device: its copy-to-device count stays the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"
#include "opt_kernels.h"

#include <tapeflow/checkpoint.h>
#include <tapeflow/optim.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY 0xA5u              /* every byte in fake memory is stored XOR this */
#define FAKE_BUDGET (4u << 20) /* bytes the fake device has */
#define FAKE_FILL 0x3C         /* fresh fake memory */

#include "xor_device.h"

/* Only the shared slots: no sync, mem_info, streams or events. */
static const tfl__device_ops fake_ops = {FAKE_OPS_BASE};

/* Optimizer kernels that accept float32 and float64 (so that tfl_optimizer_build makes slots
 * here) but never run: this test does not step. */
static tfl_status fake_apply(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                             const tfl__opt_tensor *t, const tfl__opt_hyper *h)
{
    (void)dev, (void)dtype, (void)n, (void)t, (void)h;
    return tfl__set_error(ctx, TFL_UNIMPLEMENTED, "fake: no optimizer steps");
}

static tfl_status fake_sumsq(tfl_ctx *ctx, tfl__device *dev, tfl_dtype dtype, int n,
                             const tfl__opt_tensor *t, double *out)
{
    (void)dev, (void)dtype, (void)n, (void)t, (void)out;
    return tfl__set_error(ctx, TFL_UNIMPLEMENTED, "fake: no sums of squares");
}

static const tfl__opt_kernels fake_opt = {
    .apply = fake_apply, .sumsq = fake_sumsq, .dtypes = TFL_DT(FLOAT32) | TFL_DT(FLOAT64)};

static void fake_device_setup(tfl__device *dev)
{
    dev->ops = &fake_ops;
    dev->opt_kernels = &fake_opt;
}

/* ---- a model's state: four variables and Adam's slots ---------------------------------- */

#define N_VARS 4
#define MAX_STATE 32

static const struct {
    const char *name;
    tfl_dtype dtype;
    int rank;
    int64_t shape[3];
} specs[N_VARS] = {
    {"dense/kernel", TFL_DTYPE_FLOAT32, 2, {3, 5}},
    {"dense/bias", TFL_DTYPE_FLOAT32, 1, {5}},
    {"conv/kernel", TFL_DTYPE_FLOAT64, 3, {2, 3, 4}},
    {"scale", TFL_DTYPE_FLOAT64, 0, {0}},
};

typedef struct state {
    tfl_ctx *ctx;
    tfl_tensor *vars[N_VARS];
    tfl_optimizer *opt;
    tfl_tensor *all[MAX_STATE]; /* vars, then the optimizer's */
    int64_t n_all;
} state;

/* The value of element i of state tensor k, distinct for every (k, i) and exact in float32. */
static double value_of(int64_t k, int64_t i, int salt)
{
    return (double)salt + 0.25 * (double)(k + 1) - 0.125 * (double)i;
}

/* The variables on `device`, Adam (PyTorch's formulas: per-variable step slots) built over
 * them; every state tensor zero (salt < 0) or filled with value_of(k, i, salt). */
static void make_state(state *s, const char *device, int salt)
{
    memset(s, 0, sizeof *s);
    s->ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    assert_non_null(s->ctx);
    for (int k = 0; k < N_VARS; k++) {
        tfl_initializer zeros = tfl_init_zeros();
        s->vars[k] =
            tfl_variable_new_init(s->ctx, specs[k].dtype, specs[k].rank, specs[k].shape, &zeros,
                                  &(tfl_variable_opts){.name = specs[k].name, .device = device});
        assert_non_null(s->vars[k]);
        assert_string_equal(tfl_tensor_device(s->vars[k]), device);
    }
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_PYTORCH);
    s->opt = tfl_optimizer_new(s->ctx, &oo);
    assert_non_null(s->opt);
    assert_int_equal(tfl_optimizer_build(s->opt, N_VARS, s->vars), TFL_OK);
    for (int k = 0; k < N_VARS; k++) {
        s->all[k] = s->vars[k];
        tfl_tensor *m = tfl_optimizer_slot(s->opt, s->vars[k], "m");
        assert_non_null(m);
        assert_string_equal(tfl_tensor_device(m), device); /* slots follow their variable */
    }
    int64_t n_opt = tfl_optimizer_variables(s->opt, s->all + N_VARS, MAX_STATE - N_VARS);
    assert_int_equal(n_opt, 1 + N_VARS * 3); /* iterations; m, v, step per variable */
    s->n_all = N_VARS + n_opt;
    if (salt < 0) return;
    for (int64_t k = 0; k < s->n_all; k++) {
        tfl_tensor *t = s->all[k];
        int64_t n = tfl_tensor_numel(t);
        double buf[64];
        assert_true(n <= 64);
        assert_int_equal(tfl_frame_push(s->ctx), TFL_OK);
        tfl_tensor *h = tfl_tensor_new(s->ctx, TFL_DTYPE_FLOAT64, tfl_tensor_rank(t),
                                       tfl_tensor_shape(t), NULL);
        assert_non_null(h);
        for (int64_t i = 0; i < n; i++)
            buf[i] = tfl_tensor_dtype(t) == TFL_DTYPE_INT64 ? (double)(salt + 3 * k + 1)
                                                            : value_of(k, i, salt);
        memcpy((void *)tfl_tensor_data_ptr(h), buf, (size_t)n * sizeof *buf);
        tfl_tensor *c = tfl_cast(s->ctx, h, tfl_tensor_dtype(t));
        assert_non_null(c);
        assert_int_equal(tfl_variable_assign(t, c), TFL_OK);
        assert_int_equal(tfl_frame_pop(s->ctx), TFL_OK);
    }
}

/* Every state tensor holds what make_state(.., salt) put there, read through tfl_tensor_get
 * (the device's copy slot on the fake) and, on the fake, byte by byte through the scramble. */
static void expect_state(const state *s, int salt)
{
    for (int64_t k = 0; k < s->n_all; k++) {
        const tfl_tensor *t = s->all[k];
        bool fake_mem = !strcmp(tfl_tensor_device(t), "GPU:0");
        for (int64_t i = 0; i < tfl_tensor_numel(t); i++) {
            double want = tfl_tensor_dtype(t) == TFL_DTYPE_INT64 ? (double)(salt + 3 * k + 1)
                                                                 : value_of(k, i, salt);
            double got = NAN;
            assert_int_equal(tfl_tensor_get(t, i, &got), TFL_OK);
            if (got != want)
                fail_msg("%s[%lld] is %g, want %g", tfl_variable_name(t), (long long)i, got, want);
            if (!fake_mem) continue;
            size_t es = tfl_dtype_size(tfl_tensor_dtype(t));
            unsigned char raw[8], plain[8];
            memcpy(raw, (const char *)tfl_tensor_data_ptr(t) + (size_t)i * es, es);
            for (size_t b = 0; b < es; b++)
                plain[b] = (unsigned char)(raw[b] ^ KEY);
            double direct = es == 4 ? (double)*(float *)(void *)plain : *(double *)(void *)plain;
            assert_true(direct == want); /* stored scrambled: written through the device */
        }
    }
}

static void free_state(state *s)
{
    tfl_optimizer_free(s->opt);
    for (int k = 0; k < N_VARS; k++)
        tfl_tensor_release(s->vars[k]);
    assert_int_equal(tfl_ctx_status(s->ctx), TFL_OK);
    tfl_ctx_free(s->ctx);
}

static void ckpt_path(char *buf, size_t n, const char *what)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/tfl_fake_ckpt_%s.%ld.safetensors", dir && *dir ? dir : "/tmp", what,
             (long)getpid());
}

static void save_state(const state *s, const char *path)
{
    int to_host = fake.to_host;
    assert_int_equal(
        tfl_ckpt_save(s->ctx, path, s->n_all, NULL, (const tfl_tensor *const *)s->all, NULL),
        TFL_OK);
    bool on_fake = !strcmp(tfl_tensor_device(s->vars[0]), "GPU:0");
    if (on_fake) assert_true(fake.to_host >= to_host + 2 * N_VARS); /* vars, m, v: read via it */
}

static void restore_state(state *s, const char *path)
{
    tfl_ckpt_restore_report rep;
    assert_int_equal(tfl_ckpt_restore(s->ctx, path, s->n_all, s->all, NULL, &rep), TFL_OK);
    assert_int_equal(rep.restored, s->n_all);
    assert_int_equal(rep.mismatched + rep.missing + rep.unexpected, 0);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void gpu_to_cpu(void **st)
{
    (void)st;
    char path[512];
    ckpt_path(path, sizeof path, "g2c");
    state g, c;
    make_state(&g, "GPU:0", 7);
    expect_state(&g, 7);
    /* the device's bytes are not the values: a direct read would save garbage */
    float direct;
    memcpy(&direct, tfl_tensor_data_ptr(g.vars[0]), sizeof direct);
    assert_true(direct != (float)value_of(0, 0, 7));
    save_state(&g, path);
    make_state(&c, "CPU:0", -1);
    restore_state(&c, path);
    expect_state(&c, 7);
    free_state(&c);
    free_state(&g);
    assert_int_equal(fake.live_bytes, 0); /* every block went back through raw_free */
    remove(path);
}

static void cpu_to_gpu(void **st)
{
    (void)st;
    char path[512];
    ckpt_path(path, sizeof path, "c2g");
    state c, g;
    make_state(&c, "CPU:0", 11);
    save_state(&c, path);
    make_state(&g, "GPU:0", -1);
    int to_device = fake.to_device;
    restore_state(&g, path);
    assert_true(fake.to_device >= to_device + 2 * N_VARS);
    expect_state(&g, 11);
    /* and back again: GPU -> file -> GPU gives the same values */
    char again[512];
    ckpt_path(again, sizeof again, "g2g");
    save_state(&g, again);
    state g2;
    make_state(&g2, "GPU:0", 3);
    restore_state(&g2, again);
    expect_state(&g2, 11);
    free_state(&g2);
    free_state(&g);
    free_state(&c);
    assert_int_equal(fake.live_bytes, 0);
    remove(path);
    remove(again);
}

static void strided_view_of_device_memory(void **st)
{
    (void)st;
    char path[512];
    ckpt_path(path, sizeof path, "view");
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    assert_non_null(ctx);
    const float xs[6] = {1, 2, 3, 4, 5, 6};
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 3}, xs);
    tfl_tensor *xt = tfl_transpose(ctx, x, (const int[]){1, 0});
    assert_non_null(xt);
    assert_string_equal(tfl_tensor_device(xt), "GPU:0");
    assert_false(tfl_tensor_is_contiguous(xt));
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    const char *names[1] = {"xt"};
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, names, (const tfl_tensor *const *)&xt, NULL),
                     TFL_OK);
    tfl_tensor *v =
        tfl_variable_new(ctx, tfl_fill(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){3, 2}, 0.0),
                         &(tfl_variable_opts){.name = "xt", .device = "CPU:0"});
    assert_non_null(v);
    assert_int_equal(tfl_ckpt_restore(ctx, path, 1, &v, NULL, NULL), TFL_OK);
    const float want[6] = {1, 4, 2, 5, 3, 6};
    assert_memory_equal(tfl_tensor_data_ptr(v), want, sizeof want);
    tfl_tensor_release(v);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    assert_int_equal(fake.live_bytes, 0);
    remove(path);
}

static void mismatched_shape_changes_nothing_on_the_device(void **st)
{
    (void)st;
    char path[512];
    ckpt_path(path, sizeof path, "mis");
    /* a CPU checkpoint of the same names, one of them ("dense/bias") of another shape */
    tfl_ctx *cc = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    assert_non_null(cc);
    tfl_tensor *src[N_VARS];
    const char *names[N_VARS];
    for (int k = 0; k < N_VARS; k++) {
        int64_t shape[3] = {specs[k].shape[0], specs[k].shape[1], specs[k].shape[2]};
        if (k == 1) shape[0] = 6;
        src[k] = tfl_fill(cc, specs[k].dtype, specs[k].rank, shape, 9.0);
        assert_non_null(src[k]);
        names[k] = specs[k].name;
    }
    assert_int_equal(tfl_ckpt_save(cc, path, N_VARS, names, (const tfl_tensor *const *)src, NULL),
                     TFL_OK);
    tfl_ctx_free(cc);

    state g;
    make_state(&g, "GPU:0", 5);
    int to_device = fake.to_device;
    tfl_ckpt_restore_report rep;
    assert_int_equal(tfl_ckpt_restore(g.ctx, path, N_VARS, g.vars,
                                      &(tfl_ckpt_restore_opts){.allow_missing = false}, &rep),
                     TFL_INVALID_ARGUMENT);
    assert_int_equal(rep.mismatched, 1);
    assert_int_equal(rep.restored, 0);
    tfl_error err = tfl_ctx_error(g.ctx);
    assert_non_null(strstr(err.message, "restore refused, no variable changed"));
    assert_non_null(
        strstr(err.message, "'dense/bias' (checkpoint float32 (6,), variable float32 (5,))"));
    assert_int_equal(fake.to_device, to_device); /* nothing was written to the device */
    tfl_ctx_clear_error(g.ctx);
    expect_state(&g, 5);
    free_state(&g);
    assert_int_equal(fake.live_bytes, 0);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_to_cpu),
        cmocka_unit_test(cpu_to_gpu),
        cmocka_unit_test(strided_view_of_device_memory),
        cmocka_unit_test(mismatched_shape_changes_nothing_on_the_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
