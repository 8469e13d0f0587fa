/*
 * tests/backend/test_backend_optim.c: the optimizer trajectories of the cross-backend harness.
 * Every optimizer kind and variant (SGD plain, momentum with weight decay, Nesterov; Adam,
 * Adam with amsgrad, AdamW; RMSprop plain, centered with momentum; Adagrad; NAdam; Adamax)
 * under both
 * formula families (TENSORFLOW, PYTORCH), without clipping, with global-norm clipping
 * (active: the gradients' norm is well above the bound) and with per-variable norm clipping
 * (clip_norm: active on two variables of four), in float32 (and a float64 subset),
 * runs 100 steps on four variables of 1, 7, 1000 and 4099 elements, one optimizer on CPU:0
 * (the reference) and one on the device under test, fed the same gradients. After every step
 * every variable is compared with its reference.
 *
 *   test_backend_optim CPU:0   the CPU against itself: bit for bit (runs in CI)
 *   test_backend_optim GPU:0   the device's fused kernels (framework/cuda/k_optim.c) against
 *                              the CPU; without that device: "skipped", exit 77
 *
 * Tolerances on the device, per step (|dev - cpu| <= atol + rtol |cpu|): float32 rtol 1e-4,
 * atol 1e-6; float64 rtol 1e-10, atol 1e-12. The GPU kernels do the CPU's operations in its
 * order without FMA contraction, so they are expected to agree bit for bit but for the sum of
 * squares of global-norm clipping (another summation order in double), which can move the
 * float32 clipped gradient by an ulp; the tolerance leaves room for that drift over 100 steps.
 * The test also checks that the device's variables and slots stay on the device, and that a
 * clipped apply on a device that clips on the device (framework/opt_kernels.h's sumsq_device
 * and clip_scales_device: no host synchronisation) takes that path: after the first step it
 * takes exactly one block from the device's caching allocator (the scales' buffer) and gives
 * it back (tfl_alloc_stats: bytes in use unchanged, one free more). The absence of host reads
 * on that path is checked on the CPU with a counting device (tests/optim/internal/
 * test_opt_device.c).
 */
#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_VARS 4
#define STEPS 100

static const int64_t sizes[N_VARS] = {1, 7, 1000, 4099};

typedef struct variant {
    const char *name;
    tfl_optimizer_kind kind;
    double momentum, weight_decay;
    bool nesterov, amsgrad, centered;
} variant;

static const variant variants[] = {
    {"SGD", TFL_OPTIMIZER_SGD, 0, 0, false, false, false},
    {"SGD/momentum+decay", TFL_OPTIMIZER_SGD, 0.9, 0.01, false, false, false},
    {"SGD/nesterov", TFL_OPTIMIZER_SGD, 0.9, 0, true, false, false},
    {"Adam", TFL_OPTIMIZER_ADAM, 0, 0, false, false, false},
    {"Adam/amsgrad", TFL_OPTIMIZER_ADAM, 0, 0, false, true, false},
    {"AdamW", TFL_OPTIMIZER_ADAMW, 0, -1, false, false, false}, /* -1: the default decay */
    {"RMSprop", TFL_OPTIMIZER_RMSPROP, 0, 0, false, false, false},
    {"RMSprop/centered+momentum", TFL_OPTIMIZER_RMSPROP, 0.5, 0, false, false, true},
    {"Adagrad", TFL_OPTIMIZER_ADAGRAD, 0, 0.01, false, false, false},
    {"NAdam", TFL_OPTIMIZER_NADAM, 0, 0.01, false, false, false},
    {"Adamax", TFL_OPTIMIZER_ADAMAX, 0, 0.01, false, false, false},
};
#define N_VARIANTS ((int)(sizeof variants / sizeof variants[0]))

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}
static double unit(uint64_t *s)
{
    return (double)next(s) / 9007199254740992.0; /* [0, 1) */
}

/* n values in (-scale, scale) made on the CPU as dtype, then moved to dev */
static tfl_tensor *values_on(tfl_ctx *ctx, tfl_dtype dt, int64_t n, uint64_t *s, double scale,
                             const char *dev)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * (2.0 * unit(s) - 1.0);
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
    free(v);
    if (t && dt != TFL_DTYPE_FLOAT64) t = tfl_cast(ctx, t, dt);
    tfl_device_scope_pop(ctx);
    if (t && strcmp(dev, "CPU:0") != 0) t = tfl_tensor_to_device(ctx, t, dev);
    return t;
}

/* t's values as doubles (a CPU copy); false with the context's error on failure */
static bool read_back(tfl_ctx *ctx, const tfl_tensor *t, double *out)
{
    tfl_tensor *c = tfl_tensor_to_device(ctx, t, "CPU:0");
    if (!c) return false;
    c = tfl_cast(ctx, c, TFL_DTYPE_FLOAT64);
    return c && tfl_tensor_to_host(c, out, sizeof(double) * (size_t)tfl_tensor_numel(c)) == TFL_OK;
}

/* the harness's negative control (CPU:0 only): the device side's learning rate one ulp off,
 * which must be caught; its messages are not printed */
static bool g_perturb;

static void report(const char *fmt, ...)
{
    if (g_perturb) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* one trajectory; 0: agreed, 1: failed (message printed) */
enum { NOCLIP, GLOBAL_CLIP, CLIP }; /* run's clip: none, global_clip_norm, clip_norm */

static int run(tfl_ctx *ctx, const char *dev, bool self, const variant *vr, tfl_formula formula,
               int clip, tfl_dtype dt, int64_t *n_values)
{
    char what[160];
    snprintf(what, sizeof what, "%s/%s/%s/%s", vr->name,
             formula == TFL_FORMULA_PYTORCH ? "pytorch" : "tensorflow",
             clip == CLIP ? "clip_norm" : clip ? "global_clip_norm" : "noclip", tfl_dtype_name(dt));
    tfl_optimizer_opts o = tfl_optimizer_defaults(vr->kind, formula);
    o.learning_rate = vr->kind == TFL_OPTIMIZER_SGD ? 0.05 : 0.01;
    o.momentum = vr->momentum;
    o.nesterov = vr->nesterov;
    o.amsgrad = vr->amsgrad;
    o.centered = vr->centered;
    if (vr->weight_decay >= 0) o.weight_decay = vr->weight_decay;
    if (clip == GLOBAL_CLIP) o.global_clip_norm = 5.0; /* the gradients' norm is about 37 */
    if (clip == CLIP) o.clip_norm = 3.0; /* each one's: about 0.6, 1.5, 18 and 37 */
    const char *devs[2] = {"CPU:0", dev};
    tfl_optimizer *opt[2] = {NULL, NULL};
    tfl_tensor *vars[2][N_VARS] = {{NULL}};
    double *ref = malloc(sizeof(double) * 4099), *got = malloc(sizeof(double) * 4099);
    int fail = 0;
    double rtol = self ? 0 : dt == TFL_DTYPE_FLOAT32 ? 1e-4 : 1e-10;
    double atol = self ? 0 : dt == TFL_DTYPE_FLOAT32 ? 1e-6 : 1e-12;
    for (int d = 0; d < 2 && !fail; d++) {
        tfl_optimizer_opts od = o;
        if (d == 1 && g_perturb) od.learning_rate = nextafter(o.learning_rate, 1.0);
        opt[d] = tfl_optimizer_new(ctx, &od);
        uint64_t s = 99;
        for (int i = 0; i < N_VARS && opt[d]; i++) {
            tfl_frame_push(ctx);
            tfl_tensor *init = values_on(ctx, dt, sizes[i], &s, 1.0, devs[d]);
            vars[d][i] = init ? tfl_variable_new(
                                    ctx, init, &(tfl_variable_opts){.name = "w", .device = devs[d]})
                              : NULL;
            tfl_frame_pop(ctx);
            if (!vars[d][i]) break;
            if (strcmp(tfl_tensor_device(vars[d][i]), devs[d]) != 0) {
                report("FAIL %s: a variable made on %s is on %s\n", what, devs[d],
                       tfl_tensor_device(vars[d][i]));
                fail = 1;
            }
        }
        if (!opt[d] || !vars[d][N_VARS - 1]) {
            report("FAIL %s: setup on %s: %s\n", what, devs[d], tfl_ctx_error(ctx).message);
            fail = 1;
        }
    }
    uint64_t gs = 1234;
    for (int step = 0; step < STEPS && !fail; step++) {
        tfl_frame_push(ctx);
        for (int d = 0; d < 2 && !fail; d++) {
            uint64_t s = gs; /* the same gradients on both devices */
            tfl_tensor *g[N_VARS];
            for (int i = 0; i < N_VARS; i++)
                g[i] = values_on(ctx, dt, sizes[i], &s, 1.0 + 0.01 * step, devs[d]);
            tfl_alloc_stats before = {0}, after = {0};
            if (!self && d == 1) tfl_alloc_stats_get(ctx, dev, &before);
            if (!g[N_VARS - 1] || tfl_optimizer_apply(opt[d], N_VARS, vars[d], g) != TFL_OK) {
                report("FAIL %s: step %d on %s: %s\n", what, step, devs[d],
                       tfl_ctx_error(ctx).message);
                fail = 1;
            }
            /* clipping on the device: one buffer from the allocator, given back */
            if (!fail && !self && d == 1 && clip && step > 0 &&
                tfl_alloc_stats_get(ctx, dev, &after) == TFL_OK &&
                (after.frees - before.frees != 1 || after.bytes_in_use != before.bytes_in_use)) {
                report("FAIL %s: step %d on %s: the clipped apply freed %llu blocks (expected "
                       "1: the scales' buffer of clipping on the device) and changed the bytes "
                       "in use from %zu to %zu\n", what, step, dev,
                       (unsigned long long)(after.frees - before.frees), before.bytes_in_use,
                       after.bytes_in_use);
                fail = 1;
            }
            if (d == 1) gs = s;
        }
        for (int i = 0; i < N_VARS && !fail; i++) {
            if (!read_back(ctx, vars[0][i], ref) || !read_back(ctx, vars[1][i], got)) {
                report("FAIL %s: step %d: read back: %s\n", what, step, tfl_ctx_error(ctx).message);
                fail = 1;
                break;
            }
            for (int64_t k = 0; k < sizes[i]; k++) {
                bool ok = self ? memcmp(&ref[k], &got[k], sizeof(double)) == 0
                               : fabs(got[k] - ref[k]) <= atol + rtol * fabs(ref[k]);
                if (!ok || isnan(got[k]) || isnan(ref[k])) {
                    report("FAIL %s: step %d, variable %d (%lld elements), element %lld: %s "
                           "%.17g, CPU:0 %.17g (rtol %g, atol %g)\n",
                           what, step, i, (long long)sizes[i], (long long)k, dev, got[k], ref[k],
                           rtol, atol);
                    fail = 1;
                    break;
                }
            }
            *n_values += sizes[i];
        }
        tfl_frame_pop(ctx);
    }
    /* the device's slots stayed on the device */
    if (!fail && opt[1]) {
        int64_t nv = tfl_optimizer_variables(opt[1], NULL, 0);
        tfl_tensor **list = malloc(sizeof *list * (size_t)(nv > 0 ? nv : 1));
        nv = tfl_optimizer_variables(opt[1], list, nv);
        if (nv < 1) { /* iterations at least */
            report("FAIL %s: the optimizer on %s lists %lld variables\n", what, dev, (long long)nv);
            fail = 1;
        }
        for (int64_t i = 0; i < nv && !fail; i++) {
            const char *on = tfl_tensor_device(list[i]);
            bool counter = tfl_tensor_dtype(list[i]) == TFL_DTYPE_INT64; /* CPU:0 by design */
            if (!counter && strcmp(on, dev) != 0) {
                report("FAIL %s: slot %s is on %s, not %s\n", what, tfl_variable_name(list[i]), on,
                       dev);
                fail = 1;
            }
        }
        free(list);
    }
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < N_VARS; i++)
            tfl_tensor_release(vars[d][i]);
        tfl_optimizer_free(opt[d]);
    }
    free(ref);
    free(got);
    tfl_ctx_clear_error(ctx);
    return fail;
}

int main(int argc, char **argv)
{
    const char *dev = argc > 1 ? argv[1] : "GPU:0";
    bool self = !strcmp(dev, "CPU:0");
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 7}, &st);
    if (!ctx) {
        printf("FAIL: tfl_ctx_new: %s\n", tfl_status_name(st));
        return 1;
    }
    bool found = false;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        found |= !strcmp(tfl_device_name(ctx, i), dev);
    if (!found) {
        printf("skipped: no GPU (%s is not among this machine's devices)\n", dev);
        tfl_ctx_free(ctx);
        return 77;
    }
    int failures = 0, runs = 0;
    int64_t n_values = 0;
    for (int v = 0; v < N_VARIANTS; v++)
        for (int f = 0; f < 2; f++)
            for (int c = NOCLIP; c <= CLIP; c++) {
                tfl_formula formula = f ? TFL_FORMULA_PYTORCH : TFL_FORMULA_TENSORFLOW;
                failures +=
                    run(ctx, dev, self, &variants[v], formula, c, TFL_DTYPE_FLOAT32, &n_values);
                runs++;
                /* float64: every variant, one formula each, alternating, with clipping */
                if (c == GLOBAL_CLIP && f == v % 2) {
                    failures += run(ctx, dev, self, &variants[v], formula, GLOBAL_CLIP,
                                    TFL_DTYPE_FLOAT64, &n_values);
                    runs++;
                }
            }
    if (self) { /* the comparison catches a one-ulp difference in the learning rate */
        g_perturb = true;
        int caught = run(ctx, dev, self, &variants[3], TFL_FORMULA_TENSORFLOW, NOCLIP,
                         TFL_DTYPE_FLOAT64, &n_values);
        g_perturb = false;
        if (!caught) {
            printf("FAIL the comparison does not catch a learning rate one ulp off\n");
            failures++;
        }
    }
    printf("%s: %d optimizer trajectories of %d steps, %d agree with CPU:0 (%lld values "
           "compared%s), %d fail\n",
           dev, runs, STEPS, runs - failures, (long long)n_values, self ? ", bit for bit" : "",
           failures);
    tfl_ctx_free(ctx);
    return failures ? 1 : 0;
}
