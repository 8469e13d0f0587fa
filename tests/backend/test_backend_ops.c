/*
 * tests/backend/test_backend_ops.c: the cross-backend harness, in the spirit of ggml's
 * test-backend-ops. Every case of backend_cases.c runs on CPU:0 (the reference) and on the
 * device under test, forward and backward (a tape over the case's floating inputs, target
 * sum(y * w) for a fixed w), with strict placement, so an op without a kernel for the dtype on
 * that device is an error, not a silent fallback. Results are compared with the tolerances
 * below. The placement log is recorded during the device runs: every op of tfl_op_name must
 * have run on the device under test at least once, so an op without a case fails too.
 *
 *   test_backend_ops CPU:0   the harness checks itself: the CPU against itself must agree
 *                            bit for bit (runs in CI, no GPU needed)
 *   test_backend_ops GPU:0   the GPU against the CPU; without a GPU it prints
 *                            "skipped: no GPU" and exits 77 (ctest: skipped)
 *
 * Tolerances (|device - cpu| <= atol + rtol |cpu|, per output dtype; NaN matches NaN):
 *   float64, complex128: rtol 1e-12, atol 1e-12   float32, complex64: rtol 1e-5, atol 1e-5
 *   float16: rtol 2e-3, atol 2e-3                 bfloat16: rtol 1.6e-2, atol 1.6e-2
 *   int32, int64, bool: exact
 * Inputs are made on the CPU from a fixed generator and copied to the device under test before
 * the case runs (view inputs are transposed there), so views and every op of a case run on it.
 * Every op has GPU kernels. The convolutions run on the GPU through cuDNN, or im2col + cuBLAS
 * where cuDNN takes no algorithm for a shape; run the harness a second time with TFL_CUDNN=0 in
 * the environment to check the im2col path on every case, and with
 * TFL_BACKEND_DETERMINISTIC=1 for deterministic mode (framework/cuda/README.md). The pooling
 * cases and Dropout's are compared bit for bit on every device (is_exact_case).
 *
 * TFL_BACKEND_PRECISION=bfloat16 (or float16) runs the device's cases under that mixed
 * precision policy (tfl_ctx_set_precision; the CPU reference stays float32, as the policy
 * leaves the CPU's ops alone): MatMul and the convolutions take 16-bit operands, the ops after
 * them 16-bit values, sums, softmax, losses and normalisation float32. An output or gradient
 * whose reference is float32 may then be 16-bit on the device, and is compared within a bound
 * that follows from the format's unit roundoff u (2^-8, 2^-11): |device - cpu| <= MIXED_K u
 * (|cpu| + max |cpu| of that tensor), a few roundings of each operand and of the result, the
 * second term for sums whose terms cancel. The exact cases are then compared the same way.
 *
 * Dropout's mask: after the cases, one seed must drop exactly the same elements on both
 * devices (and in float32 and float64), compared bit for bit; a second seed's mask must
 * differ, which shows that the comparison would catch a wrong mask. In deterministic mode,
 * UnsortedSegmentSum (atomic adds on a GPU otherwise) must equal the CPU's bit for bit, twice.
 */
#include "backend_cases.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 128
#define MIXED_K 8.0

/* the mixed policy's 16-bit dtype and unit roundoff (TFL_BACKEND_PRECISION); eps 0: off */
static tfl_dtype mixed_half;
static double mixed_eps;

typedef struct {
    const char *device; /* the device under test */
    int capture;        /* record the placement log now */
    int seen[MAX_OPS];  /* ops logged on the device under test */
} harness;

static void on_log(void *user, tfl_log_level level, const char *msg)
{
    harness *h = user;
    (void)level;
    if (!h->capture || strncmp(msg, "op ", 3) != 0) return;
    const char *on = strstr(msg, " on ");
    if (!on || strcmp(on + 4, h->device) != 0) return;
    size_t len = (size_t)(on - (msg + 3));
    for (int i = 0; i < tfl_op_count() && i < MAX_OPS; i++)
        if (strlen(tfl_op_name(i)) == len && !strncmp(tfl_op_name(i), msg + 3, len)) h->seen[i] = 1;
}

/* ---- inputs ------------------------------------------------------------------------------ */

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}
static double unit(uint64_t *s)
{
    return (double)next(s) / 9007199254740992.0;
} /* [0, 1) */

static bool is_float(tfl_dtype dt)
{
    return tfl_dtype_is_floating(dt);
}

/* The tensor for spec on dev: made on the CPU, copied to dev, and a view taken there (so a
 * view input is a strided tensor on the device under test). */
static tfl_tensor *make_input(tfl_ctx *ctx, const bc_input *in, uint64_t seed, const char *dev)
{
    int64_t shape[4];
    memcpy(shape, in->shape, sizeof shape);
    if (in->view) { /* stored with the last two axes swapped, passed transposed */
        int64_t t = shape[in->rank - 1];
        shape[in->rank - 1] = shape[in->rank - 2];
        shape[in->rank - 2] = t;
    }
    int64_t n = 1;
    for (int d = 0; d < in->rank; d++)
        n *= shape[d];
    bool cplx = in->dtype == TFL_DTYPE_COMPLEX64 || in->dtype == TFL_DTYPE_COMPLEX128;
    double *v = malloc(sizeof(double) * (size_t)(n ? 2 * n : 1));
    uint64_t s = seed;
    for (int64_t i = 0; i < (cplx ? 2 * n : n); i++) {
        switch (in->gen) {
        case BC_UNIFORM:
            v[i] = 4.0 * unit(&s) - 2.0;
            break;
        case BC_POS:
            v[i] = 0.5 + 2.0 * unit(&s);
            break;
        case BC_INDEX:
            v[i] = (double)(next(&s) % (uint64_t)in->hi);
            break;
        case BC_BOOL:
            v[i] = (double)(next(&s) & 1u);
            break;
        case BC_PROB:
            v[i] = 0.4 * unit(&s);
            break;
        }
    }
    /* built as float64 (or the integer/bool/complex dtype itself), then cast on the CPU */
    tfl_dtype store = in->dtype;
    void *buf = v;
    if (!is_float(in->dtype)) {
        size_t es = tfl_dtype_size(in->dtype);
        buf = malloc(es * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) {
            if (in->dtype == TFL_DTYPE_BOOL)
                ((uint8_t *)buf)[i] = (uint8_t)v[i];
            else if (in->dtype == TFL_DTYPE_INT32)
                ((int32_t *)buf)[i] = (int32_t)v[i];
            else if (in->dtype == TFL_DTYPE_INT64)
                ((int64_t *)buf)[i] = (int64_t)v[i];
            else if (in->dtype == TFL_DTYPE_COMPLEX64) {
                ((float *)buf)[2 * i] = (float)v[2 * i];
                ((float *)buf)[2 * i + 1] = (float)v[2 * i + 1];
            } else {
                ((double *)buf)[2 * i] = v[2 * i];
                ((double *)buf)[2 * i + 1] = v[2 * i + 1];
            }
        }
    } else {
        store = TFL_DTYPE_FLOAT64;
    }
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *t = tfl_tensor_new(ctx, store, in->rank, shape, buf);
    if (buf != v) free(buf);
    free(v);
    if (t && store != in->dtype) t = tfl_cast(ctx, t, in->dtype);
    tfl_device_scope_pop(ctx);
    if (t && strcmp(dev, "CPU:0") != 0) t = tfl_tensor_to_device(ctx, t, dev);
    if (t && in->view) {
        int perm[4] = {0, 1, 2, 3};
        perm[in->rank - 1] = in->rank - 2;
        perm[in->rank - 2] = in->rank - 1;
        tfl_device_scope_push(ctx, dev);
        t = tfl_transpose(ctx, t, perm);
        tfl_device_scope_pop(ctx);
    }
    return t;
}

/* ---- results ----------------------------------------------------------------------------- */

typedef struct {
    tfl_dtype dtype;
    int64_t n; /* values (complex: 2 per element) */
    double *v;
} values;

/* t's values as doubles, read through a CPU copy */
static bool read_values(tfl_ctx *ctx, const tfl_tensor *t, values *out)
{
    out->dtype = tfl_tensor_dtype(t);
    tfl_tensor *c = tfl_tensor_to_device(ctx, t, "CPU:0");
    if (!c) return false;
    if (out->dtype == TFL_DTYPE_FLOAT16 || out->dtype == TFL_DTYPE_BFLOAT16)
        c = tfl_cast(ctx, c, TFL_DTYPE_FLOAT32);
    if (!c) return false;
    tfl_dtype dt = tfl_tensor_dtype(c);
    int64_t n = tfl_tensor_numel(c);
    size_t es = tfl_dtype_size(dt);
    unsigned char *raw = malloc(es * (size_t)(n ? n : 1));
    if (tfl_tensor_to_host(c, raw, es * (size_t)n) != TFL_OK) {
        free(raw);
        return false;
    }
    bool cplx = dt == TFL_DTYPE_COMPLEX64 || dt == TFL_DTYPE_COMPLEX128;
    out->n = cplx ? 2 * n : n;
    out->v = malloc(sizeof(double) * (size_t)(out->n ? out->n : 1));
    for (int64_t i = 0; i < out->n; i++) {
        switch (dt) {
        case TFL_DTYPE_BOOL:
            out->v[i] = ((uint8_t *)raw)[i];
            break;
        case TFL_DTYPE_INT32:
            out->v[i] = ((int32_t *)raw)[i];
            break;
        case TFL_DTYPE_INT64:
            out->v[i] = (double)((int64_t *)raw)[i];
            break;
        case TFL_DTYPE_FLOAT32:
        case TFL_DTYPE_COMPLEX64:
            out->v[i] = ((float *)raw)[i];
            break;
        default:
            out->v[i] = ((double *)raw)[i];
            break;
        }
    }
    free(raw);
    return true;
}

static void tolerance(tfl_dtype dt, double *rtol, double *atol)
{
    switch (dt) {
    case TFL_DTYPE_FLOAT64:
    case TFL_DTYPE_COMPLEX128:
        *rtol = *atol = 1e-12;
        break;
    case TFL_DTYPE_FLOAT32:
    case TFL_DTYPE_COMPLEX64:
        *rtol = *atol = 1e-5;
        break;
    case TFL_DTYPE_FLOAT16:
        *rtol = *atol = 2e-3;
        break;
    case TFL_DTYPE_BFLOAT16:
        *rtol = *atol = 1.6e-2;
        break;
    default:
        *rtol = *atol = 0.0;
        break;
    }
}

/* "" when they agree, else a message naming the first difference */
static bool compare(const char *what, const values *ref, const values *got, bool exact, char *msg,
                    size_t size)
{
    /* under a mixed policy a float32 result may come back in the policy's 16 bits */
    bool mixed = mixed_eps > 0 && ref->dtype == TFL_DTYPE_FLOAT32 &&
                 (got->dtype == TFL_DTYPE_FLOAT32 || got->dtype == mixed_half);
    if ((ref->dtype != got->dtype && !mixed) || ref->n != got->n) {
        snprintf(msg, size, "%s: dtype/size differ (%s %lld vs %s %lld)", what,
                 tfl_dtype_name(ref->dtype), (long long)ref->n, tfl_dtype_name(got->dtype),
                 (long long)got->n);
        return false;
    }
    double rtol, atol;
    tolerance(ref->dtype, &rtol, &atol);
    if (mixed) {
        double scale = 0;
        for (int64_t i = 0; i < ref->n; i++)
            if (isfinite(ref->v[i])) scale = fmax(scale, fabs(ref->v[i]));
        rtol = MIXED_K * mixed_eps;
        atol = rtol * scale;
        exact = false;
    }
    for (int64_t i = 0; i < ref->n; i++) {
        double a = ref->v[i], b = got->v[i];
        if (isnan(a) && isnan(b)) continue;
        bool ok = exact ? memcmp(&a, &b, sizeof a) == 0 : fabs(a - b) <= atol + rtol * fabs(a);
        if (!ok) {
            snprintf(msg, size, "%s[%lld]: cpu %.17g, device %.17g (%s, rtol %g, atol %g)", what,
                     (long long)i, a, b, tfl_dtype_name(ref->dtype), exact ? 0.0 : rtol,
                     exact ? 0.0 : atol);
            return false;
        }
    }
    return true;
}

typedef struct {
    values y;
    values g[BC_MAX_IN];
    int n_g;
} run_result;

static void result_free(run_result *r)
{
    free(r->y.v);
    for (int i = 0; i < r->n_g; i++)
        free(r->g[i].v);
    memset(r, 0, sizeof *r);
}

/* Runs case c on device dev: forward, then backward over the floating inputs. */
static bool run_case(tfl_ctx *ctx, int ci, const char *dev, run_result *r, char *msg, size_t size)
{
    const bc_case *c = &bc_cases[ci];
    memset(r, 0, sizeof *r);
    tfl_frame_push(ctx);
    tfl_tensor *in[BC_MAX_IN] = {0};
    const tfl_tensor *src[BC_MAX_IN];
    int n_src = 0;
    for (int i = 0; i < c->n_in; i++) {
        in[i] = make_input(ctx, &c->in[i], 0x9e3779b97f4a7c15ull * (uint64_t)(ci * 8 + i + 1), dev);
        if (in[i] && is_float(c->in[i].dtype)) src[n_src++] = in[i];
    }
    bool ok = tfl_ctx_status(ctx) == TFL_OK;
    tfl_tape *tape = ok && n_src ? tfl_tape_begin(ctx, TFL_TAPE_NO_AUTO_WATCH) : NULL;
    for (int i = 0; i < n_src && tape; i++)
        tfl_tape_watch(tape, src[i]);
    tfl_tensor *y = NULL, *loss = NULL;
    if (ok) {
        tfl_device_scope_push(ctx, dev);
        y = c->build(ctx, in);
        if (y && tape && is_float(tfl_tensor_dtype(y))) {
            bc_input wspec = {tfl_tensor_dtype(y), tfl_tensor_rank(y), {0}, BC_UNIFORM, 0, 0};
            memcpy(wspec.shape, tfl_tensor_shape(y), sizeof(int64_t) * (size_t)wspec.rank);
            tfl_tensor *w = make_input(ctx, &wspec, 0x1234567ull + (uint64_t)ci, dev);
            loss = w ? tfl_reduce_sum(ctx, tfl_mul(ctx, y, w), 0, NULL, false) : NULL;
        }
        if (tape) tfl_tape_end(tape);
        tfl_tensor *grads[BC_MAX_IN] = {0};
        if (loss &&
            tfl_tape_gradient(tape, loss, n_src, src, grads, TFL_GRAD_UNCONNECTED_ZERO) == TFL_OK)
            r->n_g = n_src;
        tfl_device_scope_pop(ctx);
        ok = y && tfl_ctx_status(ctx) == TFL_OK;
        tfl_device_scope_push(ctx, "CPU:0");
        if (ok) ok = read_values(ctx, y, &r->y);
        for (int i = 0; i < r->n_g && ok; i++)
            ok = read_values(ctx, grads[i], &r->g[i]);
        tfl_device_scope_pop(ctx);
    }
    if (!ok) {
        tfl_error e = tfl_ctx_error(ctx);
        snprintf(msg, size, "%s on %s failed: %s %s", c->name, dev, tfl_status_name(e.code),
                 e.message);
        tfl_ctx_clear_error(ctx);
    }
    tfl_tape_free(tape);
    tfl_frame_pop(ctx);
    return ok;
}

/* Dropout (rate, seed) of n nonzero values of dtype dt on dev: its values in *y and its mask
 * (1 where kept, 0 where dropped) in *mask. False on failure (the error stays in ctx). */
static bool dropout_on(tfl_ctx *ctx, const char *dev, tfl_dtype dt, int64_t n, double rate,
                       uint64_t seed, values *y, values *mask)
{
    bool ok = false;
    tfl_frame_push(ctx);
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = 0.5 + (double)(i % 97) / 50.0;
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, &n, v);
    if (x) x = tfl_cast(ctx, x, dt);
    tfl_device_scope_pop(ctx);
    free(v);
    if (x && strcmp(dev, "CPU:0") != 0) x = tfl_tensor_to_device(ctx, x, dev);
    tfl_device_scope_push(ctx, dev);
    tfl_tensor *t = x ? tfl_dropout(ctx, x, rate, seed) : NULL;
    tfl_device_scope_pop(ctx);
    if (t && !strcmp(tfl_tensor_device(t), dev)) {
        tfl_device_scope_push(ctx, "CPU:0");
        ok = read_values(ctx, t, y);
        tfl_device_scope_pop(ctx);
    }
    if (ok) {
        mask->dtype = TFL_DTYPE_BOOL;
        mask->n = y->n;
        mask->v = malloc(sizeof(double) * (size_t)(y->n ? y->n : 1));
        for (int64_t i = 0; i < y->n; i++)
            mask->v[i] = y->v[i] != 0.0;
    }
    tfl_frame_pop(ctx);
    return ok;
}

/* One seed drops the same elements on CPU:0 and dev (float32 and float64 alike), with the
 * same values, bit for bit; another seed drops others (so a wrong mask would be caught).
 * Returns the failures. */
static int dropout_masks(tfl_ctx *ctx, const char *dev)
{
    static const double rates[3] = {0.1, 0.5, 0.9};
    const int64_t n = 4099; /* 1024 Philox blocks and a partial one */
    int failures = 0;
    char msg[1024];
    for (int k = 0; k < 6; k++) {
        tfl_dtype dt = k % 2 ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        tfl_dtype other = k % 2 ? TFL_DTYPE_FLOAT32 : TFL_DTYPE_FLOAT64;
        double rate = rates[k / 2];
        uint64_t seed = 1000 + (uint64_t)k / 2;
        values r[4][2] = {{{0}}}; /* [cpu, dev, dev other dtype, dev seed + 1][y, mask] */
        bool ok = dropout_on(ctx, "CPU:0", dt, n, rate, seed, &r[0][0], &r[0][1]) &&
                  dropout_on(ctx, dev, dt, n, rate, seed, &r[1][0], &r[1][1]) &&
                  dropout_on(ctx, dev, other, n, rate, seed, &r[2][0], &r[2][1]) &&
                  dropout_on(ctx, dev, dt, n, rate, seed + 1, &r[3][0], &r[3][1]);
        if (!ok) {
            snprintf(msg, sizeof msg, "%s", tfl_ctx_error(ctx).message);
            tfl_ctx_clear_error(ctx);
        } else if (compare("mask", &r[0][1], &r[1][1], true, msg, sizeof msg) &&
                   compare("mask (float32 vs float64)", &r[1][1], &r[2][1], true, msg,
                           sizeof msg) &&
                   compare("y", &r[0][0], &r[1][0], true, msg, sizeof msg)) {
            if (compare("mask", &r[1][1], &r[3][1], true, msg, sizeof msg)) {
                snprintf(msg, sizeof msg,
                         "seeds %llu and %llu give the same mask: the mask "
                         "comparison would not see a wrong one",
                         (unsigned long long)seed, (unsigned long long)seed + 1);
                ok = false;
            }
        } else {
            ok = false;
        }
        if (!ok) {
            printf("FAIL dropout mask (%s, rate %g, seed %llu) on %s: %s\n", tfl_dtype_name(dt),
                   rate, (unsigned long long)seed, dev, msg);
            failures++;
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 2; j++)
                free(r[i][j].v);
    }
    return failures;
}

/* UnsortedSegmentSum (data (2, n, 3) of dtype dt, segment ids id (n) in [0, 7), axis 1) on
 * dev; NULL on failure. bad >= 0 puts an id of 9 at position bad. */
static tfl_tensor *segment_sum_on(tfl_ctx *ctx, const char *dev, tfl_dtype dt, int64_t n,
                                  int64_t bad)
{
    double *v = malloc(sizeof(double) * (size_t)(6 * n));
    int32_t *id = malloc(sizeof(int32_t) * (size_t)n);
    uint64_t s = 0x5eed;
    for (int64_t i = 0; i < 6 * n; i++)
        v[i] = 4.0 * unit(&s) - 2.0;
    for (int64_t i = 0; i < n; i++)
        id[i] = i == bad ? 9 : (int32_t)(next(&s) % 7);
    const int64_t shape[3] = {2, n, 3};
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *d = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 3, shape, v);
    tfl_tensor *ids = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, &n, id);
    if (d) d = tfl_cast(ctx, d, dt);
    tfl_device_scope_pop(ctx);
    free(v);
    free(id);
    if (d && ids && strcmp(dev, "CPU:0") != 0) {
        d = tfl_tensor_to_device(ctx, d, dev);
        ids = d ? tfl_tensor_to_device(ctx, ids, dev) : NULL;
    }
    tfl_device_scope_push(ctx, dev);
    tfl_tensor *y = d && ids ? tfl_unsorted_segment_sum(ctx, d, ids, 7, 1) : NULL;
    tfl_device_scope_pop(ctx);
    return y && !strcmp(tfl_tensor_device(y), dev) ? y : NULL;
}

/* Deterministic mode: UnsortedSegmentSum (GatherV2's gradient; atomics on a GPU otherwise)
 * equals the CPU's bit for bit and repeats exactly, and a bad id gives the CPU's message.
 * Returns the failures. */
static int segment_sum_deterministic(tfl_ctx *ctx, const char *dev)
{
    int failures = 0;
    char msg[1024];
    tfl_ctx_set_deterministic(ctx, true);
    for (int k = 0; k < 2; k++) {
        tfl_dtype dt = k ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        values r[3] = {{0}};
        tfl_frame_push(ctx);
        tfl_tensor *y[3] = {segment_sum_on(ctx, "CPU:0", dt, 1000, -1),
                            segment_sum_on(ctx, dev, dt, 1000, -1),
                            segment_sum_on(ctx, dev, dt, 1000, -1)};
        bool ok = true;
        for (int i = 0; i < 3 && ok; i++)
            ok = y[i] && read_values(ctx, y[i], &r[i]);
        if (!ok) {
            snprintf(msg, sizeof msg, "%s", tfl_ctx_error(ctx).message);
            tfl_ctx_clear_error(ctx);
        } else {
            ok = compare("against the CPU", &r[0], &r[1], true, msg, sizeof msg) &&
                 compare("second run", &r[1], &r[2], true, msg, sizeof msg);
        }
        if (ok) { /* a bad id: the CPU's message */
            char want[256];
            ok = !segment_sum_on(ctx, "CPU:0", dt, 50, 17);
            snprintf(want, sizeof want, "%s", tfl_ctx_error(ctx).message);
            tfl_ctx_clear_error(ctx);
            ok = ok && !segment_sum_on(ctx, dev, dt, 50, 17) &&
                 tfl_ctx_status(ctx) == TFL_INVALID_ARGUMENT &&
                 strstr(want, "segment_ids[17] = 9 is not in [0, 7)") &&
                 !strcmp(tfl_ctx_error(ctx).message, want);
            snprintf(msg, sizeof msg, "a bad id: \"%s\" (the CPU: \"%s\")",
                     tfl_ctx_error(ctx).message, want);
            tfl_ctx_clear_error(ctx);
        }
        if (!ok) {
            printf("FAIL deterministic UnsortedSegmentSum (%s) on %s: %s\n", tfl_dtype_name(dt),
                   dev, msg);
            failures++;
        }
        for (int i = 0; i < 3; i++)
            free(r[i].v);
        tfl_frame_pop(ctx);
    }
    tfl_ctx_set_deterministic(ctx, false);
    return failures;
}

/* cases compared bit for bit on every device: the GPU's pooling kernels follow the CPU's
 * order of operations (framework/cuda/k_pool.cu) and Dropout its Philox mask and division, and
 * their backward passes add only exact elementwise steps */
static const char *const exact_ops[] = {"MaxPool",     "AvgPool", "MaxPoolGrad",
                                        "AvgPoolGrad", "Dropout", "MaxPoolGradGrad"};
static bool is_exact_case(const char *name)
{
    for (size_t i = 0; i < sizeof exact_ops / sizeof exact_ops[0]; i++) {
        size_t l = strlen(exact_ops[i]);
        if (!strncmp(name, exact_ops[i], l) && name[l] == '/') return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    const char *dev = argc > 1 ? argv[1] : "GPU:0";
    bool self = !strcmp(dev, "CPU:0");
    harness h = {dev, 0, {0}};
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.strict_placement = true,
                                               .log_placement = true,
                                               .log_fn = on_log,
                                               .log_user = &h,
                                               .log_level = TFL_LOG_INFO,
                                               .seed = 7},
                               &st);
    if (!ctx) {
        printf("FAIL: tfl_ctx_new: %s\n", tfl_status_name(st));
        return 1;
    }
    /* TFL_BACKEND_DETERMINISTIC=1: deterministic mode (the GPU kernels' reproducible choices,
       cuDNN's deterministic algorithms) */
    const char *det = getenv("TFL_BACKEND_DETERMINISTIC");
    if (det && !strcmp(det, "1")) tfl_ctx_set_deterministic(ctx, true);
    /* TFL_BACKEND_PRECISION=bfloat16|float16: the device's cases under that mixed policy */
    const char *prec = getenv("TFL_BACKEND_PRECISION");
    tfl_precision policy = TFL_PRECISION_FLOAT32;
    if (prec && *prec) {
        if (tfl_precision_parse(prec, &policy) != TFL_OK ||
            (policy != TFL_PRECISION_BFLOAT16 && policy != TFL_PRECISION_FLOAT16)) {
            printf("FAIL: TFL_BACKEND_PRECISION=%s is neither bfloat16 nor float16\n", prec);
            tfl_ctx_free(ctx);
            return 1;
        }
        tfl_ctx_set_precision(ctx, policy);
        mixed_half = policy == TFL_PRECISION_BFLOAT16 ? TFL_DTYPE_BFLOAT16 : TFL_DTYPE_FLOAT16;
        mixed_eps = policy == TFL_PRECISION_BFLOAT16 ? 0x1p-8 : 0x1p-11;
    }
    bool found = false;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        found |= !strcmp(tfl_device_name(ctx, i), dev);
    if (!found) {
        printf("skipped: no GPU (%s is not among this machine's devices)\n", dev);
        tfl_ctx_free(ctx);
        return 77;
    }
    int failures = 0, compared = 0;
    int64_t n_values = 0; /* values compared (outputs and gradients) */
    char msg[1024];
    if (self) { /* the comparison itself: one ulp off is caught, exactly and within tolerance */
        double a[2] = {1.0, 2.0}, b[2] = {1.0, nextafter(2.0, 3.0)}, c[2] = {1.0, 2.0 + 1e-3};
        values va = {TFL_DTYPE_FLOAT32, 2, a}, vb = {TFL_DTYPE_FLOAT32, 2, b},
               vc = {TFL_DTYPE_FLOAT32, 2, c};
        if (compare("self", &va, &vb, true, msg, sizeof msg) ||
            !compare("self", &va, &vb, false, msg, sizeof msg) ||
            compare("self", &va, &vc, false, msg, sizeof msg)) {
            printf("FAIL the harness's comparison does not catch differences\n");
            failures++;
        }
    }
    for (int ci = 0; ci < bc_n_cases; ci++) {
        const bc_case *c = &bc_cases[ci];
        run_result ref, got;
        h.capture = 0;
        if (!run_case(ctx, ci, "CPU:0", &ref, msg, sizeof msg)) {
            printf("FAIL %s\n", msg);
            failures++;
            continue;
        }
        h.capture = 1;
        bool ok = run_case(ctx, ci, dev, &got, msg, sizeof msg);
        h.capture = 0;
        const bool exact = self || is_exact_case(c->name);
        if (ok) ok = compare("y", &ref.y, &got.y, exact, msg, sizeof msg);
        if (ok && ref.n_g != got.n_g) {
            snprintf(msg, sizeof msg, "gradients: %d on the CPU, %d on %s", ref.n_g, got.n_g, dev);
            ok = false;
        }
        for (int i = 0; ok && i < ref.n_g; i++) {
            char what[32];
            snprintf(what, sizeof what, "d/d input %d", i);
            ok = compare(what, &ref.g[i], &got.g[i], exact, msg, sizeof msg);
        }
        if (!ok) {
            printf("FAIL %s: %s\n", c->name, msg);
            failures++;
        } else {
            compared++;
            n_values += ref.y.n;
            for (int i = 0; i < ref.n_g; i++)
                n_values += ref.g[i].n;
        }
        result_free(&ref);
        result_free(&got);
    }
    /* random ops: one seed gives the same values on both devices, bit for bit */
    for (int k = 0; k < 6; k++) {
        tfl_dtype dt = k % 2 ? TFL_DTYPE_FLOAT64 : TFL_DTYPE_FLOAT32;
        const int64_t shape[2] = {5, 7};
        values v[2] = {{0}};
        bool ok = true;
        tfl_frame_push(ctx);
        for (int d = 0; d < 2 && ok; d++) {
            tfl_device_scope_push(ctx, d ? dev : "CPU:0");
            tfl_tensor *t = k / 2 == 0   ? tfl_random_uniform(ctx, dt, 2, shape, -1.0, 3.0, 42)
                            : k / 2 == 1 ? tfl_random_normal(ctx, dt, 2, shape, 0.5, 2.0, 42)
                                         : tfl_truncated_normal(ctx, dt, 2, shape, 0.0, 1.0, 42);
            if (t && d && strcmp(tfl_tensor_device(t), dev) != 0) t = NULL;
            tfl_device_scope_pop(ctx);
            ok = t && read_values(ctx, t, &v[d]);
        }
        if (!ok || !compare("random", &v[0], &v[1], true, msg, sizeof msg)) {
            printf("FAIL random op %d (%s) on %s: %s\n", k / 2, tfl_dtype_name(dt), dev,
                   ok ? msg : tfl_ctx_error(ctx).message);
            tfl_ctx_clear_error(ctx);
            failures++;
        }
        free(v[0].v);
        free(v[1].v);
        tfl_frame_pop(ctx);
    }
    /* dropout: one seed, one mask on both devices */
    failures += dropout_masks(ctx, dev);
    /* deterministic mode: the scatter-add repeats and equals the CPU */
    failures += segment_sum_deterministic(ctx, dev);
    /* coverage: every op ran on the device under test */
    int missing = 0;
    for (int op = 0; op < tfl_op_count() && op < MAX_OPS; op++) {
        if (h.seen[op]) continue;
        printf("FAIL op %s never ran on %s: no case reaches it (or no kernel there)\n",
               tfl_op_name(op), dev);
        missing++;
    }
    printf("%s%s%s: %d cases agree with CPU:0 (%lld values), %d fail, %d ops without a run (of "
           "%d)\n",
           dev, mixed_eps > 0 ? ", precision " : "", mixed_eps > 0 ? tfl_precision_name(policy) : "",
           compared, (long long)n_values, failures, missing, tfl_op_count());
    tfl_ctx_free(ctx);
    return failures || missing ? 1 : 0;
}
