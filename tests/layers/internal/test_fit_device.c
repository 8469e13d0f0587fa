/*
 * test_fit_device.c: tfl_model_fit and evaluate on a device whose memory is not the host's,
 * on the CPU. The test registers its own backend (as tests/framework/internal/
 * test_fake_backend.c does): "GPU:0", a device record made by the CPU backend's device_new (so
 * its kernels, optimizer kernels and BLIS contexts are the CPU's and run on its memory, which
 * is host memory) with a device table of its own that says its memory is not the host's, so
 * the framework reaches it only through the slots, and counts every call: copies each way,
 * asynchronous copies, syncs, streams, events and pinned host memory.
 *
 * It checks that a fit on GPU:0 gives the weights and history of a fit on CPU:0 bit for bit
 * (with the sums on the device or not), that the host reads figures at most
 * ceil(steps / sync_every) + 2 times an epoch, that the batches come through the two pinned
 * buffers on a copy stream and that everything is given back, that resuming mid-epoch and
 * tfl_dataset_seek give what a straight run gives, and tfl_step_logs_read's contract.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "internal.h"

#include "host_gpu.h"

#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char stream_mark[4], event_mark; /* handles: addresses, never dereferenced */

/* The live pinned buffers, so that copies can tell whether their source is in one. */
static struct {
    const char *p;
    size_t bytes;
} pins[8];

static bool pinned(const void *p)
{
    for (int i = 0; i < 8; i++)
        if (pins[i].p && (const char *)p >= pins[i].p &&
            (const char *)p < pins[i].p + pins[i].bytes)
            return true;
    return false;
}

static bool pinned_exhausted; /* host_alloc fails: the dataset falls back to host memory */

static void *g_host_alloc(tfl__device *dev, size_t bytes)
{
    if (pinned_exhausted) return NULL;
    char *p = tfl__host_alloc(dev->ctx, bytes, TFL_ALIGN);
    int i = 0;
    while (i < 8 && pins[i].p)
        i++;
    if (!p || i == 8) {
        tfl__host_free(dev->ctx, p);
        return NULL;
    }
    pins[i].p = p;
    pins[i].bytes = bytes;
    dev_count.host_allocs++;
    dev_count.live_pinned++;
    return p;
}

static void g_host_free(tfl__device *dev, void *ptr)
{
    for (int i = 0; i < 8; i++)
        if (pins[i].p == ptr) pins[i].p = NULL;
    dev_count.host_frees++;
    dev_count.live_pinned--;
    tfl__host_free(dev->ctx, ptr);
}

static tfl_status g_copy_host_async(tfl__device *dev, tfl__stream *stream, void *dst,
                                    const void *src, size_t bytes, int to_host)
{
    (void)dev, (void)stream;
    if (to_host)
        dev_count.async_to_host++;
    else
        dev_count.async_to_device++;
    if (!to_host && pinned(src)) dev_count.async_from_pinned++;
    memcpy(dst, src, bytes);
    return TFL_OK;
}

static tfl_status g_stream_new(tfl__device *dev, tfl__stream **out)
{
    (void)dev;
    dev_count.streams++;
    dev_count.live_streams++;
    *out = (tfl__stream *)(uintptr_t)&stream_mark[1];
    return TFL_OK;
}

static void g_stream_free(tfl__device *dev, tfl__stream *s)
{
    (void)dev, (void)s;
    dev_count.live_streams--;
}

static tfl_status g_stream_sync(tfl__device *dev, tfl__stream *s)
{
    (void)dev, (void)s;
    dev_count.syncs++;
    return TFL_OK;
}

static tfl_status g_event_new(tfl__device *dev, tfl__event **out)
{
    (void)dev;
    dev_count.events++;
    dev_count.live_events++;
    *out = (tfl__event *)(uintptr_t)&event_mark;
    return TFL_OK;
}

static void g_event_free(tfl__device *dev, tfl__event *e)
{
    (void)dev, (void)e;
    dev_count.live_events--;
}

static tfl_status g_event_record(tfl__device *dev, tfl__event *e, tfl__stream *s)
{
    (void)dev, (void)e, (void)s;
    dev_count.records++;
    return TFL_OK;
}

static tfl_status g_event_wait(tfl__device *dev, tfl__stream *s, tfl__event *e)
{
    (void)dev, (void)s, (void)e;
    dev_count.waits++;
    return TFL_OK;
}

static tfl_status g_event_sync(tfl__device *dev, tfl__event *e)
{
    (void)dev, (void)e;
    dev_count.event_syncs++;
    return TFL_OK;
}

/* The shared slots of host_gpu.h, plus asynchronous copies, streams, events and pinned memory. */
static const tfl__device_ops gpu_ops = {
    HOST_GPU_OPS_BASE,
    .copy_host_async = g_copy_host_async,
    .stream_new = g_stream_new,
    .stream_free = g_stream_free,
    .stream_sync = g_stream_sync,
    .event_new = g_event_new,
    .event_free = g_event_free,
    .event_record = g_event_record,
    .event_wait = g_event_wait,
    .event_sync = g_event_sync,
    .host_alloc = g_host_alloc,
    .host_free = g_host_free,
};

static const tfl__device_ops *host_gpu_ops(void)
{
    return &gpu_ops;
}

/* its optimizer kernels are the CPU's */
static const tfl__opt_kernels *host_gpu_opt_kernels(const tfl__opt_kernels *cpu)
{
    return cpu;
}

/* ---- a small classifier ----------------------------------------------------------------- */

#define ROWS 50
#define FEAT 4
#define BATCH 8 /* 7 batches, the last of 2 rows */
#define STEPS_PER_EPOCH 7

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1, .seed = 7}, NULL);
    assert_non_null(ctx);
    assert_int_equal(tfl_device_count(ctx), 2);
    assert_string_equal(tfl_device_name(ctx, 1), "GPU:0");
    return ctx;
}

static void free_ctx(tfl_ctx *ctx)
{
    tfl_ctx_free(ctx);
    assert_int_equal(dev_count.live_blocks, 0); /* every block went back through raw_free */
    assert_int_equal(dev_count.live_pinned, 0);
    assert_int_equal(dev_count.live_streams, 0);
    assert_int_equal(dev_count.live_events, 0);
}

static tfl_dataset *blobs(tfl_ctx *ctx)
{
    float x[ROWS * FEAT];
    int32_t y[ROWS];
    for (int i = 0; i < ROWS; i++) {
        y[i] = i % 3;
        for (int j = 0; j < FEAT; j++)
            x[i * FEAT + j] = (float)(y[i] == j % 3) + 0.1f * (float)((i * 7 + j * 3) % 11) - 0.5f;
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){ROWS, FEAT}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){ROWS}, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    assert_non_null(ds);
    return ds;
}

typedef struct run {
    tfl_ctx *ctx;
    tfl_model *m;
    tfl_optimizer *opt;
    tfl_dataset *ds;
} run;

/* A model with its variables made on `device` (a scope around the build). */
static run make_run(tfl_ctx *ctx, const char *device)
{
    run r = {ctx, tfl_model_new(ctx, NULL), NULL, blobs(ctx)};
    assert_non_null(tfl_model_add(
        r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 8, .activation = TFL_ACT_RELU}));
    assert_non_null(tfl_model_add(r.m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3}));
    tfl_optimizer_opts o = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_DEFAULT);
    o.learning_rate = 0.05;
    r.opt = tfl_optimizer_new(ctx, &o);
    assert_non_null(r.opt);
    assert_int_equal(tfl_model_compile(r.m, r.opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY),
                     TFL_OK);
    if (device) assert_int_equal(tfl_device_scope_push(ctx, device), TFL_OK);
    assert_int_equal(tfl_model_build(r.m, 2, (int64_t[]){-1, FEAT}), TFL_OK);
    if (device) assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    return r;
}

static void drop_run(run *r)
{
    tfl_model_free(r->m);
    tfl_optimizer_free(r->opt);
    tfl_dataset_free(r->ds);
}

/* Every variable of the model and the optimizer (slots, step counter), in order, on the host
 * as doubles; n set to the count of values. The floating ones must be on `device`. */
static double *all_values(run *r, const char *device, int64_t *n)
{
    tfl_tensor *vars[32];
    int nm = tfl_model_variables(r->m, TFL_VARS_ALL, vars, 16);
    int64_t no = tfl_optimizer_variables(r->opt, vars + nm, 16);
    assert_true(nm > 0 && no > 0);
    int64_t total = 0;
    for (int64_t i = 0; i < nm + no; i++)
        total += tfl_tensor_numel(vars[i]);
    double *v = malloc(sizeof(double) * (size_t)total);
    assert_non_null(v);
    int64_t k = 0;
    for (int64_t i = 0; i < nm + no; i++) {
        /* the step counters are int64 scalars on CPU:0 by design (optim.h) */
        bool counter = tfl_tensor_dtype(vars[i]) == TFL_DTYPE_INT64;
        if (device && !counter && strcmp(tfl_tensor_device(vars[i]), device) != 0)
            fail_msg("%s is on %s, not %s", tfl_variable_name(vars[i]), tfl_tensor_device(vars[i]),
                     device);
        for (int64_t e = 0; e < tfl_tensor_numel(vars[i]); e++)
            assert_int_equal(tfl_tensor_get(vars[i], e, &v[k++]), TFL_OK);
    }
    *n = total;
    return v;
}

/* What the steps saw. */
typedef struct seen {
    int64_t steps, stale, fresh, stop_at;
    tfl_step_logs at_stop; /* the step logs at stop_at, read */
    double losses[64];     /* every step's loss, read with tfl_step_logs_read */
    bool read_all;
    int64_t reads_at_step[64]; /* dev_count.to_host after each step */
} seen;

static tfl_status on_step(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    seen *s = user;
    s->steps++;
    if (lg->loss_stale)
        s->stale++;
    else
        s->fresh++;
    assert_false(isnan(lg->loss)); /* never NaN: the last read's value when stale */
    tfl_step_logs r;
    if (s->read_all || lg->step == s->stop_at) {
        assert_int_equal(tfl_step_logs_read(m, lg, &r), TFL_OK);
        assert_false(r.loss_stale);
        if (lg->step < 64) s->losses[lg->step] = r.loss;
    }
    if (lg->step == s->stop_at) {
        s->at_stop = r;
        *stop = true;
    }
    if (lg->step < 64) s->reads_at_step[lg->step] = dev_count.to_host;
    return TFL_OK;
}

static tfl_status fit(run *r, const char *device, tfl_fit_opts o, tfl_history *h, seen *s)
{
    tfl_callback cb = {.on_step_end = on_step, .user = s};
    o.batch_size = BATCH;
    o.shuffle = true;
    o.seed = 11;
    o.callbacks = &cb;
    o.n_callbacks = 1;
    if (device) assert_int_equal(tfl_device_scope_push(r->ctx, device), TFL_OK);
    tfl_status st = tfl_model_fit(r->m, r->ds, &o, h);
    if (device) assert_int_equal(tfl_device_scope_pop(r->ctx), TFL_OK);
    return st;
}

static void same_history(const tfl_epoch_logs *a, const tfl_epoch_logs *b, int n)
{
    for (int e = 0; e < n; e++) {
        assert_memory_equal(&a[e].loss, &b[e].loss, sizeof(double));
        assert_memory_equal(&a[e].accuracy, &b[e].accuracy, sizeof(double));
        assert_int_equal(a[e].samples, b[e].samples);
        assert_false(isnan(a[e].loss));
    }
}

/* ---- tests ------------------------------------------------------------------------------ */

/* The reference: CPU:0, then GPU:0 with the sums on the host (sync_every 0) and on the device
 * (sync_every 3), with a device scope and without one (placement): the same bits. */
static void test_gpu_fit_matches_cpu(void **state)
{
    (void)state;
    tfl_epoch_logs hc[3], hg[3];
    int64_t nc = 0, ng = 0;
    tfl_ctx *ctx = new_ctx();
    run c = make_run(ctx, "CPU:0");
    seen sc = {.read_all = true};
    tfl_history h = {hc, 3, 0};
    assert_int_equal(fit(&c, "CPU:0", (tfl_fit_opts){.epochs = 3, .sync_every = 3}, &h, &sc),
                     TFL_OK);
    assert_int_equal(h.count, 3);
    assert_int_equal(sc.stale, 0); /* the CPU reads every step, sync_every or not */
    double *vc = all_values(&c, "CPU:0", &nc);
    drop_run(&c);
    free_ctx(ctx);

    for (int variant = 0; variant < 3; variant++) {
        ctx = new_ctx();
        const char *scope = variant == 2 ? NULL : "GPU:0"; /* 2: placement alone */
        run g = make_run(ctx, scope);
        seen sg = {.read_all = true};
        h = (tfl_history){hg, 3, 0};
        int64_t every = variant == 0 ? 0 : 3;
        assert_int_equal(fit(&g, scope, (tfl_fit_opts){.epochs = 3, .sync_every = every}, &h, &sg),
                         TFL_OK);
        assert_int_equal(h.count, 3);
        same_history(hc, hg, 3);
        for (int64_t k = 1; k <= 3 * STEPS_PER_EPOCH; k++)
            assert_memory_equal(&sc.losses[k], &sg.losses[k], sizeof(double));
        if (every)
            assert_true(sg.stale > 0);
        else
            assert_int_equal(sg.stale, 0);
        double *vg = all_values(&g, "GPU:0", &ng); /* model, slots and counter on GPU:0 */
        assert_int_equal(nc, ng);
        assert_memory_equal(vc, vg, sizeof(double) * (size_t)nc);
        free(vg);
        drop_run(&g);
        free_ctx(ctx);
    }
    free(vc);
}

/* Reads of figures: at most ceil(steps / sync_every) + 2 an epoch (the multiples of
 * sync_every, the fit's first step, the epoch's last), against one a step without. */
static void test_host_reads_per_epoch(void **state)
{
    (void)state;
    for (int64_t every = 0; every <= 4; every += 2) {
        tfl_ctx *ctx = new_ctx();
        run g = make_run(ctx, "GPU:0");
        seen s = {0};
        int64_t before = dev_count.to_host;
        tfl_epoch_logs hist[2];
        tfl_history h = {hist, 2, 0};
        assert_int_equal(fit(&g, "GPU:0", (tfl_fit_opts){.epochs = 2, .sync_every = every}, &h, &s),
                         TFL_OK);
        int64_t reads = dev_count.to_host - before;
        int64_t steps = 2 * STEPS_PER_EPOCH;
        if (every == 0) {
            assert_true(reads >= steps); /* the loss, every step */
        } else {
            int64_t per_epoch = (STEPS_PER_EPOCH + every - 1) / every + 2;
            assert_true(reads <= 2 * per_epoch);
            assert_true(s.stale > 0 && s.fresh > 0);
        }
        for (int e = 0; e < 2; e++)
            assert_false(isnan(hist[e].loss) || isnan(hist[e].accuracy));
        drop_run(&g);
        free_ctx(ctx);
    }
}

/* The batches come through the pinned buffers on the copy stream; everything is given back
 * when the dataset is freed. */
static void test_pinned_uploads(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    run g = make_run(ctx, "GPU:0");
    int64_t allocs = dev_count.host_allocs, frees = dev_count.host_frees;
    int64_t from_pinned = dev_count.async_from_pinned, streams = dev_count.streams;
    int64_t waits = dev_count.waits;
    seen s = {0};
    assert_int_equal(fit(&g, "GPU:0", (tfl_fit_opts){.epochs = 2, .sync_every = 4}, NULL, &s),
                     TFL_OK);
    assert_int_equal(dev_count.host_allocs - allocs, 2); /* two buffers, used in turn */
    assert_int_equal(dev_count.streams - streams, 1);    /* one copy stream */
    /* x and y of each of the 14 batches, from the pinned buffers */
    assert_int_equal(dev_count.async_from_pinned - from_pinned, 2 * 2 * STEPS_PER_EPOCH);
    assert_true(dev_count.waits - waits >= 2 * 2 * STEPS_PER_EPOCH); /* copy <-> compute */
    assert_int_equal(dev_count.live_pinned, 2);
    tfl_dataset_free(g.ds);
    g.ds = NULL;
    assert_int_equal(dev_count.host_frees - frees, 2);
    assert_int_equal(dev_count.live_pinned, 0);
    drop_run(&g);
    free_ctx(ctx);
}

/* evaluate on GPU:0 gives CPU:0's figures bit for bit and reads its sums once, not per batch
 * (a model built alike on both: the same seeded weights). */
static void test_evaluate_reads_once(void **state)
{
    (void)state;
    double loss[2], acc[2];
    int64_t reads = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *device = pass ? "GPU:0" : "CPU:0";
        tfl_ctx *ctx = new_ctx();
        run r = make_run(ctx, device);
        assert_int_equal(tfl_device_scope_push(ctx, device), TFL_OK);
        int64_t before = dev_count.to_host;
        assert_int_equal(tfl_model_evaluate(r.m, r.ds, BATCH, &loss[pass], &acc[pass]), TFL_OK);
        reads = dev_count.to_host - before;
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
        drop_run(&r);
        free_ctx(ctx);
    }
    assert_int_equal(reads, 1); /* 7 batches on GPU:0: one read of {loss sum, correct} */
    assert_false(isnan(loss[0]) || isnan(acc[0]));
    assert_memory_equal(&loss[0], &loss[1], sizeof(double));
    assert_memory_equal(&acc[0], &acc[1], sizeof(double));
}

/* Without pinned memory (host_alloc fails) the uploads come from ordinary host memory: the
 * same figures, no error. */
static void test_no_pinned_memory(void **state)
{
    (void)state;
    tfl_epoch_logs ref[2], got[2];
    for (int pass = 0; pass < 2; pass++) {
        pinned_exhausted = pass == 1;
        tfl_ctx *ctx = new_ctx();
        run g = make_run(ctx, "GPU:0");
        int64_t allocs = dev_count.host_allocs, from_pinned = dev_count.async_from_pinned;
        int64_t async = dev_count.async_to_device;
        seen s = {0};
        tfl_history h = {pass ? got : ref, 2, 0};
        assert_int_equal(fit(&g, "GPU:0", (tfl_fit_opts){.epochs = 2, .sync_every = 4}, &h, &s),
                         TFL_OK);
        assert_int_equal(tfl_ctx_error(ctx).code, TFL_OK);
        assert_int_equal(dev_count.async_to_device - async, 2 * 2 * STEPS_PER_EPOCH);
        assert_int_equal(dev_count.host_allocs - allocs, pass ? 0 : 2);
        assert_int_equal(dev_count.async_from_pinned - from_pinned,
                         pass ? 0 : 2 * 2 * STEPS_PER_EPOCH);
        drop_run(&g);
        free_ctx(ctx);
    }
    pinned_exhausted = false;
    same_history(ref, got, 2);
}

/* Batches on GPU:0 hold the values of CPU:0's, through shuffling, sharding and seek, and a
 * batch the caller keeps is never overwritten by later ones. */
static void test_batches_match_cpu(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    tfl_dataset *ds = blobs(ctx);
    assert_int_equal(tfl_dataset_batch(ds, BATCH, &(tfl_batch_opts){.shuffle = true, .seed = 3}),
                     TFL_OK);
    assert_int_equal(tfl_dataset_shard(ds, 1, 2), TFL_OK);
    float cpu[STEPS_PER_EPOCH][BATCH * FEAT];
    int32_t cpu_y[STEPS_PER_EPOCH][BATCH];
    int64_t rows[STEPS_PER_EPOCH];
    for (int pass = 0; pass < 2; pass++) {
        const char *device = pass ? "GPU:0" : "CPU:0";
        assert_int_equal(tfl_dataset_reset(ds, 2), TFL_OK);
        assert_int_equal(tfl_dataset_seek(ds, 1), TFL_OK);
        assert_int_equal(tfl_device_scope_push(ctx, device), TFL_OK);
        tfl_tensor *kept = NULL, *kept_y = NULL;
        for (int b = 1;; b++) {
            tfl_tensor *x, *y;
            tfl_status st = tfl_dataset_next(ds, &x, &y);
            if (st == TFL_OUT_OF_RANGE) {
                assert_int_equal(b, STEPS_PER_EPOCH);
                break;
            }
            assert_int_equal(st, TFL_OK);
            assert_string_equal(tfl_tensor_device(x), device);
            assert_string_equal(tfl_tensor_device(y), device);
            int64_t n = tfl_tensor_dim(x, 0);
            if (!pass) {
                rows[b] = n;
                assert_int_equal(tfl_tensor_to_host(x, cpu[b], sizeof(float) * (size_t)(n * FEAT)),
                                 TFL_OK);
                assert_int_equal(tfl_tensor_to_host(y, cpu_y[b], sizeof(int32_t) * (size_t)n),
                                 TFL_OK);
            } else {
                float v[BATCH * FEAT];
                int32_t w[BATCH];
                assert_int_equal(n, rows[b]);
                assert_int_equal(tfl_tensor_to_host(x, v, sizeof(float) * (size_t)(n * FEAT)),
                                 TFL_OK);
                assert_int_equal(tfl_tensor_to_host(y, w, sizeof(int32_t) * (size_t)n), TFL_OK);
                assert_memory_equal(v, cpu[b], sizeof(float) * (size_t)(n * FEAT));
                assert_memory_equal(w, cpu_y[b], sizeof(int32_t) * (size_t)n);
            }
            if (b == 1) { /* the caller keeps the first batch while the next ones come */
                kept = x; /* owned: no frame is open */
                kept_y = y;
            } else {
                tfl_tensor_release(x);
                tfl_tensor_release(y);
            }
        }
        float v[BATCH * FEAT];
        assert_int_equal(tfl_tensor_to_host(kept, v, sizeof(float) * (size_t)(rows[1] * FEAT)),
                         TFL_OK);
        assert_memory_equal(v, cpu[1], sizeof(float) * (size_t)(rows[1] * FEAT));
        tfl_tensor_release(kept);
        tfl_tensor_release(kept_y);
        assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    }
    tfl_dataset_free(ds);
    free_ctx(ctx);
}

/* Stopping at step 10 (mid-epoch 2) and resuming with the read progress gives a straight
 * run's weights and history, on GPU:0 with the sums on the device. */
static void test_resume_mid_epoch(void **state)
{
    (void)state;
    tfl_epoch_logs straight[3], resumed[3];
    int64_t ns = 0, nr = 0;
    tfl_ctx *ctx = new_ctx();
    run a = make_run(ctx, "GPU:0");
    seen sa = {0};
    tfl_history h = {straight, 3, 0};
    assert_int_equal(fit(&a, "GPU:0", (tfl_fit_opts){.epochs = 3, .sync_every = 4}, &h, &sa),
                     TFL_OK);
    double *va = all_values(&a, "GPU:0", &ns);
    drop_run(&a);
    free_ctx(ctx);

    ctx = new_ctx();
    run b = make_run(ctx, "GPU:0");
    seen sb = {.stop_at = 10}; /* epoch 2, batch 3: a step fit does not read */
    h = (tfl_history){resumed, 3, 0};
    assert_int_equal(fit(&b, "GPU:0", (tfl_fit_opts){.epochs = 3, .sync_every = 4}, &h, &sb),
                     TFL_OK);
    assert_int_equal(h.count, 1);
    assert_int_equal(sb.at_stop.epoch, 1);
    assert_int_equal(sb.at_stop.batch, 2);
    seen sr = {0};
    tfl_fit_opts o = {.epochs = 3,
                      .sync_every = 4,
                      .initial_epoch = sb.at_stop.epoch,
                      .initial_batch = sb.at_stop.batch + 1,
                      .initial_step = sb.at_stop.step,
                      .initial_progress = sb.at_stop.progress,
                      .append_history = true};
    assert_int_equal(fit(&b, "GPU:0", o, &h, &sr), TFL_OK);
    assert_int_equal(h.count, 3);
    same_history(straight, resumed, 3);
    double *vb = all_values(&b, "GPU:0", &nr);
    assert_int_equal(ns, nr);
    assert_memory_equal(va, vb, sizeof(double) * (size_t)ns);
    free(va);
    free(vb);
    drop_run(&b);
    free_ctx(ctx);
}

/* tfl_step_logs_read: a known logs is copied; a stale one outside its fit is refused. */
static tfl_status keep_logs(tfl_model *m, const tfl_step_logs *lg, void *user, bool *stop)
{
    (void)m, (void)stop;
    if (lg->loss_stale) *(tfl_step_logs *)user = *lg;
    return TFL_OK;
}

static void test_step_logs_read_contract(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    run g = make_run(ctx, "GPU:0");
    tfl_step_logs known = {.step = 3, .loss = 1.5}, out;
    assert_int_equal(tfl_step_logs_read(g.m, &known, &out), TFL_OK);
    assert_true(out.loss == 1.5 && !out.loss_stale);
    assert_int_equal(tfl_step_logs_read(g.m, NULL, &out), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_step_logs_read(NULL, &known, &out), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    tfl_step_logs last = {0};
    tfl_callback cb = {.on_step_end = keep_logs, .user = &last};
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    assert_int_equal(
        tfl_model_fit(g.m, g.ds,
                      &(tfl_fit_opts){
                          .batch_size = BATCH, .sync_every = 5, .callbacks = &cb, .n_callbacks = 1},
                      NULL),
        TFL_OK);
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    assert_true(last.loss_stale && last.step > 0);
    assert_int_equal(tfl_step_logs_read(g.m, &last, &out), TFL_FAILED_PRECONDITION);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "is not the current step of a running fit"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_model_fit(g.m, g.ds, &(tfl_fit_opts){.sync_every = -1}, NULL),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "sync_every must be >= 0"));
    drop_run(&g);
    free_ctx(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        // clang-format off
        cmocka_unit_test(test_gpu_fit_matches_cpu),
        cmocka_unit_test(test_host_reads_per_epoch),
        cmocka_unit_test(test_pinned_uploads),
        cmocka_unit_test(test_no_pinned_memory),
        cmocka_unit_test(test_evaluate_reads_once),
        cmocka_unit_test(test_batches_match_cpu),
        cmocka_unit_test(test_resume_mid_epoch),
        cmocka_unit_test(test_step_logs_read_contract),
        // clang-format on
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
