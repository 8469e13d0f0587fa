/* test_activations_torch.c: the activations against PyTorch
 * (tests/reference/fixtures/activations_torch.json, written by
 * tests/reference/activations_torch.py): for each activation and dtype (float32, float64),
 * the values y = f(x), the gradient of sum(w y) and the second-order term d sum(u g) / dx
 * taken through a tape of the backward pass, on inputs that include the kinks. Where the
 * semantics depart from PyTorch's on purpose, a test below says so and checks tapeflow's. */
#include "test_ops_helpers.h"

#include <cjson/cJSON.h>

#define FIXTURE TFL_SOURCE_DIR "/tests/reference/fixtures/activations_torch.json"

static cJSON *g_doc;

static int load(void **state)
{
    (void)state;
    FILE *fp = fopen(FIXTURE, "rb");
    if (!fp) return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    rewind(fp);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, fp) != (size_t)n) {
        free(text);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    text[n] = '\0';
    g_doc = cJSON_Parse(text);
    free(text);
    return g_doc ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    cJSON_Delete(g_doc);
    return 0;
}

static const cJSON *field(const cJSON *c, const char *key)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!f) fail_msg("fixture entry lacks \"%s\"", key);
    return f;
}

/* the fixture list `key` of c as a tensor of dt (float32 values round as PyTorch's did) */
static tfl_tensor *list_tensor(tfl_ctx *ctx, const cJSON *c, const char *key, tfl_dtype dt)
{
    const cJSON *a = field(c, key);
    int n = cJSON_GetArraySize(a);
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    for (int i = 0; i < n; i++)
        v[i] = cJSON_GetArrayItem(a, i)->valuedouble;
    tfl_tensor *t = TH_TENSOR_N(ctx, dt, 1, ((int64_t[]){n}), v, (size_t)n);
    free(v);
    return t;
}

/* each element of t within tol * max(1, |want|) of the fixture list `key` */
static void expect_list(tfl_ctx *ctx, const tfl_tensor *t, const cJSON *c, const char *key,
                        double tol)
{
    const char *name = field(c, "name")->valuestring, *dt = field(c, "dtype")->valuestring;
    if (!t) fail_msg("%s %s (%s): NULL: %s", name, key, dt, tfl_ctx_error(ctx).message);
    const cJSON *a = field(c, key);
    int n = cJSON_GetArraySize(a);
    assert_int_equal(tfl_tensor_numel(t), n);
    double *got = TH_READ(t);
    for (int i = 0; i < n; i++) {
        double want = cJSON_GetArrayItem(a, i)->valuedouble;
        if (!th_close(got[i], want, tol))
            fail_msg("%s %s (%s) element %d: got %.17g, PyTorch %.17g (tol %g)", name, key, dt, i,
                     got[i], want, tol);
    }
    free(got);
}

/* ---- the activations, by the fixture's names --------------------------------------------------
 */

typedef tfl_tensor *(*act_fn)(tfl_ctx *ctx, const tfl_tensor *x, const cJSON *options);

static tfl_tensor *softplus(tfl_ctx *ctx, const tfl_tensor *x, const cJSON *o)
{
    (void)o;
    return tfl_softplus(ctx, x);
}

static tfl_tensor *silu(tfl_ctx *ctx, const tfl_tensor *x, const cJSON *o)
{
    (void)o;
    return tfl_silu(ctx, x);
}

static tfl_tensor *elu(tfl_ctx *ctx, const tfl_tensor *x, const cJSON *o)
{
    return tfl_elu(ctx, x, field(o, "alpha")->valuedouble);
}

static tfl_tensor *hard_sigmoid(tfl_ctx *ctx, const tfl_tensor *x, const cJSON *o)
{
    (void)o;
    return tfl_hard_sigmoid(ctx, x);
}

static const struct {
    const char *name;
    act_fn fn;
} k_acts[] = {
    {"softplus", softplus},
    {"silu", silu},
    {"elu", elu},
    {"hard_sigmoid", hard_sigmoid},
};

static act_fn act_of(const char *name)
{
    for (size_t i = 0; i < sizeof k_acts / sizeof k_acts[0]; i++)
        if (!strcmp(k_acts[i].name, name)) return k_acts[i].fn;
    fail_msg("fixture activation '%s' has no C counterpart here", name);
    return NULL;
}

/* float32: within a few ulps of PyTorch's float32 (both round each step); float64: 1e-13 */
static double tol_of(tfl_dtype dt)
{
    return dt == TH_F32 ? 4e-6 : 1e-13;
}

/* y, g and gg of every fixture case; every activation of k_acts has cases in both dtypes */
static void test_against_torch(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const cJSON *cases = field(g_doc, "cases"), *c;
    int seen[sizeof k_acts / sizeof k_acts[0]][2] = {{0}};
    cJSON_ArrayForEach(c, cases)
    {
        const char *name = field(c, "name")->valuestring;
        tfl_dtype dt = !strcmp(field(c, "dtype")->valuestring, "float32") ? TH_F32 : TH_F64;
        act_fn fn = act_of(name);
        for (size_t i = 0; i < sizeof k_acts / sizeof k_acts[0]; i++)
            if (k_acts[i].fn == fn) seen[i][dt == TH_F64]++;
        const cJSON *opts = field(c, "options");
        tfl_frame_push(ctx);
        tfl_tensor *x = list_tensor(ctx, g_doc, "x", dt);
        tfl_tensor *w = list_tensor(ctx, g_doc, "w", dt);
        tfl_tensor *u = list_tensor(ctx, g_doc, "u", dt);
        expect_list(ctx, fn(ctx, x, opts), c, "y", tol_of(dt));
        /* g = vjp of f at x against w, recorded on an outer tape; gg = its vjp against u */
        tfl_tape *outer = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(outer, x), TFL_OK);
        tfl_tape *inner = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(inner, x), TFL_OK);
        tfl_tensor *y = fn(ctx, x, opts), *g = NULL, *gg = NULL;
        assert_int_equal(tfl_tape_vjp(inner, y, w, 1, (const tfl_tensor *const *)&x, &g, 0),
                         TFL_OK);
        tfl_tape_free(inner);
        /* PyTorch's CPU hardsigmoid_backward multiplies by the float32 1/6 in float64 too
         * (3e-8 off); tapeflow's slope is the double 1/6 (test_hard_sigmoid_kinks) */
        bool f32_sixth = !strcmp(name, "hard_sigmoid") && dt == TH_F64;
        expect_list(ctx, g, c, "g", f32_sixth ? 1e-7 : tol_of(dt));
        assert_int_equal(tfl_tape_vjp(outer, g, u, 1, (const tfl_tensor *const *)&x, &gg,
                                      TFL_GRAD_UNCONNECTED_ZERO),
                         TFL_OK);
        tfl_tape_free(outer);
        expect_list(ctx, gg, c, "gg", tol_of(dt));
        tfl_frame_pop(ctx);
    }
    for (size_t i = 0; i < sizeof k_acts / sizeof k_acts[0]; i++)
        if (!seen[i][0] || !seen[i][1])
            fail_msg("the fixture lacks %s in float32 or float64", k_acts[i].name);
    th_end(ctx);
}

/* Softplus has no threshold: above PyTorch's (x > 20, where it returns x) the value stays
 * x + log1p(e^-x) and the gradient sigmoid(x) < 1; no overflow at +-1000; NaN stays NaN. */
static void test_softplus_beyond_torch_threshold(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    const double e30 = exp(-30.0);
    TH_EXPECT(ctx, tfl_softplus(ctx, TH_T(ctx, TH_F64, (4), (30, 1000, -1000, -30))), TH_F64, (4),
              (30 + log1p(e30), 1000, 0, log1p(e30)), 1e-15);
    double *nan_out = TH_READ(tfl_softplus(ctx, TH_T(ctx, TH_F32, (1), (NAN))));
    assert_true(isnan(nan_out[0]));
    free(nan_out);
    tfl_tensor *x = TH_T(ctx, TH_F64, (1), (30));
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *g = NULL;
    assert_int_equal(
        tfl_tape_gradient(tape, tfl_softplus(ctx, x), 1, (const tfl_tensor *const *)&x, &g, 0),
        TFL_OK);
    tfl_tape_free(tape);
    TH_EXPECT(ctx, g, TH_F64, (1), (1 / (1 + e30)), 1e-16);
    th_end(ctx);
}

/* hard_sigmoid: 0 and 1 from the kinks on, the gradient 1/6 (the double's) strictly between
 * them and 0 at -3 and 3 */
static void test_hard_sigmoid_kinks(void **state)
{
    tfl_ctx *ctx = th_begin(state);
    tfl_tensor *x = TH_T(ctx, TH_F64, (6), (-4, -3, -1.5, 0, 3, 7));
    TH_EXPECT(ctx, tfl_hard_sigmoid(ctx, x), TH_F64, (6), (0, 0, 0.25, 0.5, 1, 1), 0);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *g = NULL;
    assert_int_equal(
        tfl_tape_gradient(tape, tfl_hard_sigmoid(ctx, x), 1, (const tfl_tensor *const *)&x, &g, 0),
        TFL_OK);
    tfl_tape_free(tape);
    TH_EXPECT(ctx, g, TH_F64, (6), (0, 0, 1.0 / 6, 1.0 / 6, 0, 0), 0);
    th_end(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TH_TEST(test_against_torch),
        TH_TEST(test_softplus_beyond_torch_threshold),
        TH_TEST(test_hard_sigmoid_kinks),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
