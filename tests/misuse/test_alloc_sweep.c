/*
 * Allocation-failure sweep over a whole training step: forward (matmul, bias, relu, matmul,
 * sparse softmax cross-entropy, mean), gradient (tape) and apply (Adam), through the ctx's
 * allocation hooks. For every N from 0 to the number of allocations the run makes (and a
 * margin), once failing only the Nth allocation and once every allocation from the Nth on:
 * every run either completes with variables bit-identical to a run without failures, or
 * reports RESOURCE_EXHAUSTED; after tfl_ctx_free every allocation was given back.
 *
 * Two sweeps: the first step of a fresh ctx (N counts from tfl_ctx_new, so context,
 * variable and optimizer creation are swept too; the caching allocator and the optimizer's
 * slots make the first step allocate most), and a steady-state step (the third; the
 * failures start after two good steps). A failed steady-state step must leave the variables
 * as they were: one more step without failures then gives the reference's values.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tapeflow/tapeflow.h>

typedef enum fail_mode { FAIL_NONE, FAIL_ONLY, FAIL_FROM } fail_mode;

typedef struct hooks {
    uint64_t calls;  /* allocation requests seen since armed */
    uint64_t allocs; /* successful allocations (all time) */
    uint64_t frees;
    uint64_t refused;
    bool armed;
    fail_mode mode;
    uint64_t n; /* the request (0-based, counted while armed) that fails first */
} hooks;

static void *h_alloc(void *user, size_t bytes, size_t alignment)
{
    hooks *h = user;
    if (h->armed) {
        uint64_t i = h->calls++;
        if ((h->mode == FAIL_ONLY && i == h->n) || (h->mode == FAIL_FROM && i >= h->n)) {
            h->refused++;
            return NULL;
        }
    }
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, alignment, bytes ? bytes : 1) != 0) return NULL;
    h->allocs++;
    return p;
}

static void h_free(void *user, void *ptr)
{
    hooks *h = user;
    if (!ptr) return;
    h->frees++;
    free(ptr);
}

/* ---- the model: two dense layers as raw variables -------------------------------------- */

enum { NVARS = 4 };

typedef struct net {
    tfl_ctx *ctx;
    tfl_tensor *v[NVARS]; /* w1 (4, 5), b1 (5,), w2 (5, 3), b2 (3,) */
    tfl_optimizer *opt;
    char loss_device[16]; /* where the last step's loss was computed */
} net;

static const int64_t SHAPES[NVARS][2] = {{4, 5}, {5, 0}, {5, 3}, {3, 0}};
static const int RANKS[NVARS] = {2, 1, 2, 1};

static void net_free(net *m)
{
    if (!m->ctx) return;
    tfl_optimizer_free(m->opt);
    for (int i = 0; i < NVARS; i++)
        tfl_tensor_release(m->v[i]);
    tfl_ctx_free(m->ctx);
    memset(m, 0, sizeof *m);
}

/* Makes the ctx, the variables (seeded) and Adam. Returns the status. */
static tfl_status net_new(net *m, hooks *h)
{
    memset(m, 0, sizeof *m);
    tfl_status st = TFL_OK;
    m->ctx = tfl_ctx_new(
        &(tfl_ctx_opts){
            .num_threads = 1, .seed = 7, .alloc_fn = h_alloc, .free_fn = h_free, .alloc_user = h},
        &st);
    if (!m->ctx) return st == TFL_OK ? TFL_INTERNAL : st;
    for (int i = 0; i < NVARS; i++) {
        tfl_initializer init = tfl_init_random_uniform(-0.5, 0.5, 100 + (uint64_t)i);
        m->v[i] =
            tfl_variable_new_init(m->ctx, TFL_DTYPE_FLOAT32, RANKS[i], SHAPES[i], &init, NULL);
        if (!m->v[i]) return tfl_ctx_status(m->ctx);
    }
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.05;
    m->opt = tfl_optimizer_new(m->ctx, &o);
    return m->opt ? TFL_OK : tfl_ctx_status(m->ctx);
}

/* One training step on a fixed batch; every failure is cleaned up and returned. */
static tfl_status net_step(net *m, int step)
{
    tfl_ctx *ctx = m->ctx;
    static const float X[6 * 4] = {0.1f, -0.2f, 0.3f,  0.4f, -0.5f, 0.6f, 0.7f,  -0.8f,
                                   0.9f, 1.0f,  -1.1f, 1.2f, 0.3f,  0.1f, -0.4f, 0.1f,
                                   0.5f, -0.9f, 0.2f,  0.6f, -0.5f, 0.3f, 0.5f,  -0.8f};
    static const int32_t Y[6] = {0, 1, 2, 2, 1, 0};
    if (tfl_frame_push(ctx) != TFL_OK) return tfl_ctx_status(ctx);
    tfl_tape *tape = NULL;
    tfl_status st = TFL_OK;
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){6, 4}, X);
    tfl_tensor *y = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){6}, Y);
    if (!x || !y) goto fail;
    /* a step-dependent scale, so that steps differ */
    tfl_tensor *s = tfl_scalar_f32(ctx, 1.0f + 0.25f * (float)step);
    if (!s) goto fail;
    tape = tfl_tape_begin(ctx, 0);
    if (!tape) goto fail;
    tfl_tensor *h =
        tfl_relu(ctx, tfl_add(ctx, tfl_matmul(ctx, tfl_mul(ctx, x, s), m->v[0], 0), m->v[1]));
    tfl_tensor *logits = tfl_add(ctx, tfl_matmul(ctx, h, m->v[2], 0), m->v[3]);
    tfl_tensor *loss =
        tfl_reduce_mean(ctx, tfl_sparse_softmax_cross_entropy(ctx, logits, y), 0, NULL, false);
    if (!loss) goto fail;
    snprintf(m->loss_device, sizeof m->loss_device, "%s", tfl_tensor_device(loss));
    if (tfl_tape_end(tape) != TFL_OK) goto fail;
    tfl_tensor *g[NVARS];
    if (tfl_tape_gradient(tape, loss, NVARS, (const tfl_tensor *const *)m->v, g, 0) != TFL_OK)
        goto fail;
    if (tfl_optimizer_apply(m->opt, NVARS, m->v, g) != TFL_OK) goto fail;
    tfl_tape_free(tape);
    if (tfl_frame_pop(ctx) != TFL_OK) return tfl_ctx_status(ctx);
    return TFL_OK;
fail:
    st = tfl_ctx_status(ctx);
    tfl_tape_free(tape);
    tfl_frame_pop(ctx);
    return st == TFL_OK ? TFL_INTERNAL : st; /* a failure without an error kept is a defect */
}

/* The variables' values, concatenated. */
enum { NVALS = 20 + 5 + 15 + 3 };

/* Where the reference run placed its variables and computed its loss: a run that completes
 * after a refusal must have run where the reference did (with a GPU, a silent fall back to
 * the CPU is a different result even where the values happen to agree). */
static char g_ref_dev[NVARS + 1][16];

static void record_devices(const net *m)
{
    for (int i = 0; i < NVARS; i++)
        snprintf(g_ref_dev[i], sizeof g_ref_dev[i], "%s", tfl_tensor_device(m->v[i]));
    snprintf(g_ref_dev[NVARS], sizeof g_ref_dev[NVARS], "%s", m->loss_device);
}

static void expect_devices(const net *m, const char *what, uint64_t n)
{
    for (int i = 0; i < NVARS; i++)
        if (strcmp(tfl_tensor_device(m->v[i]), g_ref_dev[i]) != 0)
            fail_msg("%s, N=%llu: variable %d on %s, the reference's on %s", what,
                     (unsigned long long)n, i, tfl_tensor_device(m->v[i]), g_ref_dev[i]);
    if (strcmp(m->loss_device, g_ref_dev[NVARS]) != 0)
        fail_msg("%s, N=%llu: the loss computed on %s, the reference's on %s", what,
                 (unsigned long long)n, m->loss_device, g_ref_dev[NVARS]);
}

static void net_values(net *m, float *out)
{
    size_t off = 0;
    for (int i = 0; i < NVARS; i++) {
        tfl_tensor *r = tfl_variable_read(m->v[i]);
        assert_non_null(r);
        size_t n = (size_t)tfl_tensor_numel(r);
        assert_int_equal(tfl_tensor_to_host(r, out + off, n * sizeof(float)), TFL_OK);
        tfl_tensor_release(r);
        off += n;
    }
    assert_int_equal(off, NVALS);
}

/* ---- the reference and the sweeps --------------------------------------------------------- */

static float g_ref[4][NVALS]; /* after 0..3 steps */
static uint64_t g_first_calls, g_steady_calls, g_cold_calls;

static void reference(void **state)
{
    (void)state;
    hooks h = {.armed = true, .mode = FAIL_NONE};
    net m;
    assert_int_equal(net_new(&m, &h), TFL_OK);
    net_values(&m, g_ref[0]);
    assert_int_equal(net_step(&m, 0), TFL_OK);
    g_first_calls = h.calls;
    net_values(&m, g_ref[1]);
    record_devices(&m);
    assert_int_equal(net_step(&m, 1), TFL_OK);
    net_values(&m, g_ref[2]);
    uint64_t before = h.calls;
    assert_int_equal(net_step(&m, 2), TFL_OK);
    g_steady_calls = h.calls - before;
    net_values(&m, g_ref[3]);
    assert_true(memcmp(g_ref[0], g_ref[3], sizeof g_ref[0]) != 0); /* it trained */
    net_free(&m);
    /* the third step again, after emptying the cache */
    hooks c = {.armed = false};
    assert_int_equal(net_new(&m, &c), TFL_OK);
    assert_int_equal(net_step(&m, 0), TFL_OK);
    assert_int_equal(net_step(&m, 1), TFL_OK);
    tfl_alloc_empty_cache(m.ctx);
    c.armed = true;
    assert_int_equal(net_step(&m, 2), TFL_OK);
    g_cold_calls = c.calls;
    float v[NVALS];
    net_values(&m, v);
    assert_memory_equal(v, g_ref[3], sizeof v);
    net_free(&m);
    assert_int_equal(c.allocs, c.frees);
    assert_true(g_cold_calls > 0);
    assert_int_equal(h.allocs, h.frees);
    print_message("allocation requests: %llu from tfl_ctx_new through the first step, %llu in a "
                  "steady-state step, %llu in one after tfl_alloc_empty_cache\n",
                  (unsigned long long)g_first_calls, (unsigned long long)g_steady_calls,
                  (unsigned long long)g_cold_calls);
    assert_true(g_first_calls > 0);
}

static void expect_exhausted(tfl_status st, const char *what, fail_mode mode, uint64_t n)
{
    if (st != TFL_RESOURCE_EXHAUSTED)
        fail_msg("%s, %s N=%llu: %s instead of RESOURCE_EXHAUSTED", what,
                 mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n, tfl_status_name(st));
}

/* Fresh ctx: fail from tfl_ctx_new through the end of the first step. */
static void sweep_first(fail_mode mode)
{
    uint64_t completed = 0, failed = 0;
    for (uint64_t n = 0; n <= g_first_calls + 8; n++) {
        hooks h = {.armed = true, .mode = mode, .n = n};
        net m;
        tfl_status st = net_new(&m, &h);
        if (st == TFL_OK) st = net_step(&m, 0);
        if (h.refused == 0) {
            assert_int_equal(st, TFL_OK);
            float v[NVALS];
            net_values(&m, v);
            if (memcmp(v, g_ref[1], sizeof v) != 0)
                fail_msg("first step, N=%llu: no failure but other values", (unsigned long long)n);
            expect_devices(&m, "first step, no failure", n);
            completed++;
        } else if (st == TFL_OK) {
            /* a refused allocation the library recovered from (a cache, a retry): the
             * result must still be the reference's */
            float v[NVALS];
            net_values(&m, v);
            if (memcmp(v, g_ref[1], sizeof v) != 0)
                fail_msg("first step, N=%llu: completed after a refusal with other values",
                         (unsigned long long)n);
            expect_devices(&m, "first step, completed after a refusal", n);
            completed++;
        } else {
            expect_exhausted(st, "first step", mode, n);
            failed++;
        }
        net_free(&m);
        if (h.allocs != h.frees)
            fail_msg("first step, %s N=%llu: %llu allocations, %llu frees after tfl_ctx_free",
                     mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n,
                     (unsigned long long)h.allocs, (unsigned long long)h.frees);
    }
    print_message("first step, %s: %llu runs failed cleanly, %llu completed\n",
                  mode == FAIL_ONLY ? "only N" : "from N", (unsigned long long)failed,
                  (unsigned long long)completed);
    /* Failing from N on, every N below the run's count must fail; failing one request
     * alone, the library may recover (the caching allocator empties its cache and retries). */
    if (mode == FAIL_FROM) assert_true(failed >= g_first_calls);
    assert_true(failed > 0);
}

/* Steady state: two good steps, then fail inside the third; a failed third step must leave
 * the variables unchanged, so a retry gives the reference's third step. With cold_cache the
 * allocator's cache is emptied before the third step, so that it takes memory again. */
static void sweep_steady(fail_mode mode, bool cold_cache)
{
    uint64_t completed = 0, failed = 0;
    uint64_t calls = cold_cache ? g_cold_calls : g_steady_calls;
    for (uint64_t n = 0; n <= calls + 8; n++) {
        hooks h = {.armed = false};
        net m;
        assert_int_equal(net_new(&m, &h), TFL_OK);
        assert_int_equal(net_step(&m, 0), TFL_OK);
        assert_int_equal(net_step(&m, 1), TFL_OK);
        if (cold_cache) tfl_alloc_empty_cache(m.ctx);
        h.armed = true, h.mode = mode, h.n = n, h.calls = 0;
        tfl_status st = net_step(&m, 2);
        h.armed = false;
        float v[NVALS];
        if (st == TFL_OK) {
            net_values(&m, v);
            if (memcmp(v, g_ref[3], sizeof v) != 0)
                fail_msg("steady step, N=%llu: completed with other values", (unsigned long long)n);
            expect_devices(&m, "steady step, completed", n);
            completed++;
        } else {
            expect_exhausted(st, "steady step", mode, n);
            tfl_ctx_clear_error(m.ctx);
            net_values(&m, v);
            if (memcmp(v, g_ref[2], sizeof v) != 0)
                fail_msg("steady step, %s N=%llu: the failed step changed the variables",
                         mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n);
            assert_int_equal(net_step(&m, 2), TFL_OK);
            net_values(&m, v);
            if (memcmp(v, g_ref[3], sizeof v) != 0)
                fail_msg("steady step, %s N=%llu: the retry after a failure differs",
                         mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n);
            failed++;
        }
        net_free(&m);
        if (h.allocs != h.frees)
            fail_msg("steady step, %s N=%llu: %llu allocations, %llu frees after tfl_ctx_free",
                     mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n,
                     (unsigned long long)h.allocs, (unsigned long long)h.frees);
    }
    print_message("%s step, %s: %llu runs failed cleanly, %llu completed\n",
                  cold_cache ? "cold-cache" : "steady", mode == FAIL_ONLY ? "only N" : "from N",
                  (unsigned long long)failed, (unsigned long long)completed);
    /* from N on: every N below the count fails; one refusal alone may be recovered from */
    if (mode == FAIL_FROM) assert_true(failed >= calls);
    assert_int_equal(failed + completed, calls + 9);
}

/* ---- the same through the layers API: model, dataset, compile, fit, evaluate ----------- */

/* Builds and trains a Dense(8, relu) -> Dense(3) model for two epochs of 3 batches; writes
 * the variables' values (NFIT of them) and returns the first error. */
enum { NFIT = 4 * 8 + 8 + 8 * 3 + 3 };

static tfl_status fit_run(hooks *h, float *values)
{
    tfl_status st = TFL_OK;
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){
            .num_threads = 1, .seed = 3, .alloc_fn = h_alloc, .free_fn = h_free, .alloc_user = h},
        &st);
    if (!ctx) return st == TFL_OK ? TFL_INTERNAL : st;
    float x[12 * 4];
    int32_t y[12];
    for (int i = 0; i < 12; i++) {
        for (int j = 0; j < 4; j++)
            x[i * 4 + j] = (float)((i * 7 + j * 3) % 11) / 11.0f - 0.5f;
        y[i] = i % 3;
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){12, 4}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){12}, y);
    tfl_dataset *ds = tx && ty ? tfl_dataset_from_arrays(ctx, tx, ty, NULL) : NULL;
    tfl_tensor_release(tx), tfl_tensor_release(ty);
    tfl_model *m = tfl_model_new(ctx, NULL);
    tfl_initializer k1 = tfl_init_glorot_uniform(1), k2 = tfl_init_glorot_uniform(2);
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE,
                                       .units = 8,
                                       .activation = TFL_ACT_RELU,
                                       .kernel_init = &k1});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3, .kernel_init = &k2});
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    if (ds && m && opt && tfl_model_num_layers(m) == 2 &&
        tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, TFL_METRIC_ACCURACY) ==
            TFL_OK &&
        tfl_model_fit(m, ds, &(tfl_fit_opts){.epochs = 2, .batch_size = 4, .shuffle = true},
                      NULL) == TFL_OK) {
        tfl_tensor *vars[4];
        int n = tfl_model_variables(m, TFL_VARS_ALL, vars, 4);
        size_t off = 0;
        for (int i = 0; i < n && off < NFIT; i++) {
            tfl_tensor *v = tfl_variable_read(vars[i]);
            if (!v) break;
            size_t k = (size_t)tfl_tensor_numel(v);
            if (off + k > NFIT || tfl_tensor_to_host(v, values + off, k * sizeof(float)) != TFL_OK)
                k = NFIT; /* makes the check below fail */
            off += k;
            tfl_tensor_release(v);
        }
        if (off != NFIT && tfl_ctx_status(ctx) == TFL_OK) st = TFL_INTERNAL;
    }
    if (st == TFL_OK) st = tfl_ctx_status(ctx);
    if (st == TFL_OK && !(ds && m && opt)) st = TFL_INTERNAL; /* NULL without an error */
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
    tfl_ctx_free(ctx);
    return st;
}

static void fit_sweep(fail_mode mode)
{
    float ref[NFIT], v[NFIT];
    hooks r = {.armed = true};
    assert_int_equal(fit_run(&r, ref), TFL_OK);
    assert_int_equal(r.allocs, r.frees);
    uint64_t calls = r.calls, completed = 0, failed = 0;
    for (uint64_t n = 0; n <= calls + 8; n++) {
        hooks h = {.armed = true, .mode = mode, .n = n};
        memset(v, 0, sizeof v);
        tfl_status st = fit_run(&h, v);
        if (st == TFL_OK) {
            if (memcmp(v, ref, sizeof v) != 0)
                fail_msg("fit, N=%llu: completed with other values", (unsigned long long)n);
            completed++;
        } else {
            expect_exhausted(st, "fit", mode, n);
            failed++;
        }
        if (h.allocs != h.frees)
            fail_msg("fit, %s N=%llu: %llu allocations, %llu frees after tfl_ctx_free",
                     mode == FAIL_ONLY ? "only" : "from", (unsigned long long)n,
                     (unsigned long long)h.allocs, (unsigned long long)h.frees);
    }
    print_message("fit (%llu requests), %s: %llu runs failed cleanly, %llu completed\n",
                  (unsigned long long)calls, mode == FAIL_ONLY ? "only N" : "from N",
                  (unsigned long long)failed, (unsigned long long)completed);
    if (mode == FAIL_FROM) assert_true(failed >= calls);
    assert_true(failed > 0);
}

static void fit_fail_only_n(void **state)
{
    (void)state, fit_sweep(FAIL_ONLY);
}
static void fit_fail_from_n(void **state)
{
    (void)state, fit_sweep(FAIL_FROM);
}

static void first_step_fail_only_n(void **state)
{
    (void)state, sweep_first(FAIL_ONLY);
}
static void first_step_fail_from_n(void **state)
{
    (void)state, sweep_first(FAIL_FROM);
}
static void steady_step_fail_only_n(void **state)
{
    (void)state, sweep_steady(FAIL_ONLY, false);
}
static void steady_step_fail_from_n(void **state)
{
    (void)state, sweep_steady(FAIL_FROM, false);
}
static void cold_cache_step_fail_only_n(void **state)
{
    (void)state, sweep_steady(FAIL_ONLY, true);
}
static void cold_cache_step_fail_from_n(void **state)
{
    (void)state, sweep_steady(FAIL_FROM, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference),
        cmocka_unit_test(first_step_fail_only_n),
        cmocka_unit_test(first_step_fail_from_n),
        cmocka_unit_test(steady_step_fail_only_n),
        cmocka_unit_test(steady_step_fail_from_n),
        cmocka_unit_test(cold_cache_step_fail_only_n),
        cmocka_unit_test(cold_cache_step_fail_from_n),
        cmocka_unit_test(fit_fail_only_n),
        cmocka_unit_test(fit_fail_from_n),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
