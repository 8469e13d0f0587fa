/*
 * test_gpu_ckpt.c: checkpoints across devices on a real GPU (ctest backend_ckpt_gpu; the same
 * checks on a fake, scrambled GPU:0 run everywhere: tests/framework/internal/test_fake_ckpt.c).
 *
 * For each direction (GPU:0 -> CPU:0, CPU:0 -> GPU:0): variables of float32 and float64 and
 * several shapes (a matrix, a vector, a rank-3 tensor, a scalar) train 3 steps of Adam
 * (PyTorch's formulas: per-variable "step" slots on CPU:0, m and v on the variable's device)
 * on the first device; their state (variables, m, v, steps, iterations) is saved, restored
 * into same-named variables of a fresh optimizer on the other device and must be equal bit
 * for bit; then one more step on each side with the same gradients must agree within the
 * cross-backend tolerances (test_backend_optim.c: float32 rtol 1e-4 atol 1e-6, float64 rtol
 * 1e-10 atol 1e-12). Last, a restore with a mismatched shape is refused and leaves every
 * variable on GPU:0 as it was.
 *
 * Usage: test_gpu_ckpt [GPU:0 or CPU:0]; CPU:0 moves CPU:0 -> CPU:0 (the test checking
 * itself). Without the device: "skipped: no GPU", exit 77.
 */
#include <tapeflow/tapeflow.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_VARS 4
#define MAX_STATE 32
#define STEPS 3

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const struct {
    const char *name;
    tfl_dtype dtype;
    int rank;
    int64_t shape[3];
} specs[N_VARS] = {
    {"dense/kernel", TFL_DTYPE_FLOAT32, 2, {64, 33}},
    {"dense/bias", TFL_DTYPE_FLOAT32, 1, {33}},
    {"conv/kernel", TFL_DTYPE_FLOAT64, 3, {5, 7, 3}},
    {"scale", TFL_DTYPE_FLOAT64, 0, {0}},
};

typedef struct side {
    tfl_ctx *ctx;
    tfl_tensor *vars[N_VARS];
    tfl_optimizer *opt;
    tfl_tensor *all[MAX_STATE];
    int64_t n_all;
} side;

/* A tensor of var k's dtype and shape on `device` with deterministic values (salt picks). */
static tfl_tensor *values(tfl_ctx *ctx, int k, const char *device, double salt)
{
    int64_t n = 1;
    for (int d = 0; d < specs[k].rank; d++)
        n *= specs[k].shape[d];
    double *buf = malloc((size_t)n * sizeof *buf);
    if (!buf) return NULL;
    for (int64_t i = 0; i < n; i++)
        buf[i] = sin(salt + 0.37 * (double)(k + 1) + 0.011 * (double)i);
    tfl_tensor *h = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, specs[k].rank, specs[k].shape, buf);
    free(buf);
    tfl_tensor *c = h ? tfl_cast(ctx, h, specs[k].dtype) : NULL;
    return c ? tfl_tensor_to_device(ctx, c, device) : NULL;
}

static bool make_side(side *s, const char *device, bool train)
{
    memset(s, 0, sizeof *s);
    s->ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = 3}, NULL);
    if (!s->ctx) return false;
    for (int k = 0; k < N_VARS; k++) {
        tfl_initializer zeros = tfl_init_zeros();
        s->vars[k] =
            tfl_variable_new_init(s->ctx, specs[k].dtype, specs[k].rank, specs[k].shape, &zeros,
                                  &(tfl_variable_opts){.name = specs[k].name, .device = device});
    }
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_ADAM, TFL_FORMULA_PYTORCH);
    oo.learning_rate = 1e-2;
    s->opt = tfl_optimizer_new(s->ctx, &oo);
    if (tfl_ctx_status(s->ctx) != TFL_OK || tfl_optimizer_build(s->opt, N_VARS, s->vars) != TFL_OK)
        return false;
    for (int k = 0; k < N_VARS; k++)
        s->all[k] = s->vars[k];
    s->n_all = N_VARS + tfl_optimizer_variables(s->opt, s->all + N_VARS, MAX_STATE - N_VARS);
    if (!train) return true;
    tfl_frame_push(s->ctx);
    for (int k = 0; k < N_VARS; k++)
        tfl_variable_assign(s->vars[k], values(s->ctx, k, device, 0.5));
    tfl_frame_pop(s->ctx);
    for (int step = 0; step < STEPS; step++) {
        tfl_frame_push(s->ctx);
        tfl_tensor *g[N_VARS];
        for (int k = 0; k < N_VARS; k++)
            g[k] = values(s->ctx, k, device, 1.0 + step);
        tfl_optimizer_apply(s->opt, N_VARS, s->vars, g);
        tfl_frame_pop(s->ctx);
    }
    return tfl_ctx_status(s->ctx) == TFL_OK;
}

static void free_side(side *s)
{
    if (!s->ctx) return;
    tfl_optimizer_free(s->opt);
    for (int k = 0; k < N_VARS; k++)
        tfl_tensor_release(s->vars[k]);
    tfl_ctx_free(s->ctx);
}

/* Every state tensor of a equals b's: bit for bit (tol false) or within the tolerances. */
static void compare(const char *what, const side *a, const side *b, bool tol)
{
    CHECK(a->n_all == b->n_all, "%s: %lld state tensors against %lld", what, (long long)a->n_all,
          (long long)b->n_all);
    for (int64_t k = 0; k < a->n_all && k < b->n_all; k++) {
        const tfl_tensor *x = a->all[k], *y = b->all[k];
        CHECK(!strcmp(tfl_variable_name(x), tfl_variable_name(y)), "%s: %s against %s", what,
              tfl_variable_name(x), tfl_variable_name(y));
        bool f32 = tfl_tensor_dtype(x) == TFL_DTYPE_FLOAT32;
        double rtol = tol ? (f32 ? 1e-4 : 1e-10) : 0, atol = tol ? (f32 ? 1e-6 : 1e-12) : 0;
        int bad = 0;
        for (int64_t i = 0; i < tfl_tensor_numel(x) && bad < 3; i++) {
            double u = NAN, v = NAN;
            tfl_tensor_get(x, i, &u);
            tfl_tensor_get(y, i, &v);
            if (!(fabs(u - v) <= atol + rtol * fabs(v))) {
                CHECK(false, "%s: %s[%lld]: %.17g (%s) against %.17g (%s)", what,
                      tfl_variable_name(x), (long long)i, u, tfl_tensor_device(x), v,
                      tfl_tensor_device(y));
                bad++;
            }
        }
    }
}

static void one_direction(const char *from, const char *to, const char *path)
{
    char what[64];
    snprintf(what, sizeof what, "%s -> %s", from, to);
    side a, b;
    bool ok = make_side(&a, from, true);
    CHECK(ok, "%s: training on %s: %s", what, from, a.ctx ? tfl_ctx_error(a.ctx).message : "");
    ok = ok && make_side(&b, to, false);
    if (ok) {
        tfl_status st =
            tfl_ckpt_save(a.ctx, path, a.n_all, NULL, (const tfl_tensor *const *)a.all, NULL);
        CHECK(st == TFL_OK, "%s: save: %s", what, tfl_ctx_error(a.ctx).message);
        tfl_ckpt_restore_report rep;
        st = tfl_ckpt_restore(b.ctx, path, b.n_all, b.all, NULL, &rep);
        CHECK(st == TFL_OK && rep.restored == b.n_all, "%s: restore: %s", what,
              tfl_ctx_error(b.ctx).message);
        CHECK(!strcmp(tfl_tensor_device(b.vars[0]), to), "%s: restored onto %s", what,
              tfl_tensor_device(b.vars[0]));
        compare(what, &a, &b, false);
        /* one more step on each side: the resumed optimizer goes on as the original */
        side *sides[2] = {&a, &b};
        const char *devs[2] = {from, to};
        for (int j = 0; j < 2; j++) {
            tfl_frame_push(sides[j]->ctx);
            tfl_tensor *g[N_VARS];
            for (int k = 0; k < N_VARS; k++)
                g[k] = values(sides[j]->ctx, k, devs[j], 1.0 + STEPS);
            CHECK(tfl_optimizer_apply(sides[j]->opt, N_VARS, sides[j]->vars, g) == TFL_OK,
                  "%s: step on %s: %s", what, devs[j], tfl_ctx_error(sides[j]->ctx).message);
            tfl_frame_pop(sides[j]->ctx);
        }
        snprintf(what, sizeof what, "%s, one step after", from);
        compare(what, &a, &b, true);
    }
    free_side(&a);
    free_side(&b);
    remove(path);
}

static void mismatch(const char *gpu, const char *path)
{
    side g;
    if (!make_side(&g, gpu, true)) {
        CHECK(false, "mismatch: training on %s: %s", gpu, tfl_ctx_error(g.ctx).message);
        free_side(&g);
        return;
    }
    tfl_ctx *cc = tfl_ctx_new(NULL, NULL);
    tfl_tensor *src[N_VARS];
    const char *names[N_VARS];
    for (int k = 0; k < N_VARS; k++) {
        int64_t shape[3] = {specs[k].shape[0], specs[k].shape[1], specs[k].shape[2]};
        if (k == 1) shape[0]++;
        src[k] = tfl_fill(cc, specs[k].dtype, specs[k].rank, shape, 9.0);
        names[k] = specs[k].name;
    }
    CHECK(tfl_ckpt_save(cc, path, N_VARS, names, (const tfl_tensor *const *)src, NULL) == TFL_OK,
          "mismatch: save: %s", tfl_ctx_error(cc).message);
    tfl_ctx_free(cc);
    double before[N_VARS];
    for (int k = 0; k < N_VARS; k++)
        tfl_tensor_get(g.vars[k], 0, &before[k]);
    tfl_ckpt_restore_report rep;
    tfl_status st = tfl_ckpt_restore(g.ctx, path, N_VARS, g.vars, NULL, &rep);
    CHECK(st == TFL_INVALID_ARGUMENT && rep.mismatched == 1 && rep.restored == 0,
          "mismatch: restore gave %s, %lld mismatched", tfl_status_name(st),
          (long long)rep.mismatched);
    CHECK(strstr(tfl_ctx_error(g.ctx).message, "no variable changed") != NULL,
          "mismatch: message '%s'", tfl_ctx_error(g.ctx).message);
    tfl_ctx_clear_error(g.ctx);
    for (int k = 0; k < N_VARS; k++) {
        double now = NAN;
        tfl_tensor_get(g.vars[k], 0, &now);
        CHECK(now == before[k] && now != 9.0, "mismatch: %s changed from %g to %g", specs[k].name,
              before[k], now);
    }
    free_side(&g);
    remove(path);
}

int main(int argc, char **argv)
{
    const char *gpu = argc > 1 ? argv[1] : "GPU:0";
    tfl_ctx *probe = tfl_ctx_new(NULL, NULL);
    bool found = false;
    for (int i = 0; probe && i < tfl_device_count(probe); i++)
        found |= !strcmp(tfl_device_name(probe, i), gpu);
    tfl_ctx_free(probe);
    if (!found) {
        printf("skipped: no GPU (%s is not among this machine's devices)\n", gpu);
        return 77;
    }
    char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/tfl_gpu_ckpt.%ld.safetensors", dir && *dir ? dir : "/tmp",
             (long)getpid());
    one_direction(gpu, "CPU:0", path);
    one_direction("CPU:0", gpu, path);
    mismatch(gpu, path);
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("ok: checkpoints move between %s and CPU:0 (Adam's state included), bit for bit\n", gpu);
    return 0;
}
