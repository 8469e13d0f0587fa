/* test_shipped_twins.c: the shipped layer-graph configs held to their PyTorch twins
 * (tests/reference/shipped_twins_torch.py; fixture tests/reference/fixtures/shipped_twins.json).
 *
 * Each model trains its config as shipped but for data.shuffle=false, so that its batches are
 * the data in order: configs/fashion_mnist_resnet.yaml (the first 50 batches of 128 training
 * images) and configs/char_transformer.yaml (the first 50 batches of 32 windows of 64 bytes
 * of the fortunes corpus). Before the first step the model's variables are compared with the
 * ones the twin started from (the fixture's name, shape, sum, sum of squares and first values
 * of each): a change there is a change of tapeflow's initializers or seeding, and the fixture
 * must be made again (the message says so). Then the 50 losses of tapeflow's steps are
 * compared with the twin's, which trained the same architecture in PyTorch (CPU) from the
 * same initial weights on the same batches with the same optimizer and schedule.
 *
 * The reference is the twin run in float64 (from the same float32 initial values); the fixture
 * also has the twin run in float32, which shows how far float32 arithmetic alone strays from
 * it. The bound is on |loss - float64 twin's| / float64 twin's at step k, min(tol0 + slope k,
 * cap), and on its mean over the 50 steps; both are a few times what PyTorch's own float32
 * run shows (measured with torch 2.15; tests/reference/README.md has the figures):
 *  - the transformer: 1e-6 at every step, 3e-7 on the mean. Its 50 steps are not chaotic
 *    (warmup from a learning rate of 0, layer norms): PyTorch's float32 run stays within
 *    1.6e-7 of the float64 one (mean 5.7e-8), tapeflow within 5.3e-8 (mean 2.0e-8): float32
 *    rounding of the loss itself.
 *  - the ResNet: 1e-5 at step 0, then 1e-5 + 5e-4 k up to 2e-2; 3e-3 on the mean. The first
 *    loss (the forward pass from the same weights) agrees to float32 rounding (tapeflow 6.1e-7,
 *    PyTorch float32 1.3e-6). Then the training amplifies rounding (Adam's first updates are
 *    close to lr·sign(g), and BatchNorm's batch statistics couple every example): PyTorch's
 *    own float32 run is 2e-5 off at step 1, 1.5e-4 at step 3, 1.3e-3 at step 15 and 3.7e-3
 *    at step 49 (mean 6.0e-4, on average +4.9e-4 above), tapeflow 1.3e-5, 1.8e-4, 1.7e-3,
 *    3.1e-3 at most (step 46; mean 6.1e-4, +4.7e-4 above): the same spread, the same side.
 * A wrong forward rule shows at step 0, a wrong gradient in the steps after it. Adam does
 * not see a gradient that is wrong by a positive factor per variable; the layers' gradients
 * are checked against PyTorch in tests/layers.
 *
 * TFL_TWIN_OUT=DIR makes the fixture's inputs instead of comparing: DIR/<model>.safetensors
 * holds the model's initial variables (as tfl_ckpt_save writes them, before the first step)
 * and DIR/<model>.json the config, its overrides and tapeflow's losses; the twin script runs
 * this program so (`python3 tests/reference/shipped_twins_torch.py`).
 *
 * Skips a model (with the reason) when its data is missing: Debian's dataset-fashion-mnist
 * and fortunes packages (`make deps`). */
#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/shipped_twins.json"
#include "seeds_fixture.h"

#include <math.h>
#include <sys/stat.h>

#define STEPS 50
#define MAX_VARS 256
#define N_FIRST 4 /* first values of each variable in the fixture */

typedef struct twin_model {
    const char *key;    /* the fixture's entry */
    const char *config; /* relative to the source tree */
    const char *data;   /* a path the model's data needs (missing: skipped) */
    const char *overrides[2];
    int n_overrides;
    /* the bound on |loss - twin's| / twin's at step k: min(tol0 + slope k, cap); and on its
     * mean over the steps */
    double tol0, slope, cap, mean_tol;
} twin_model;

static const twin_model k_models[] = {
    {.key = "resnet",
     .config = "configs/fashion_mnist_resnet.yaml",
     .data = "/usr/share/datasets/fashion-mnist",
     .overrides = {"data.shuffle=false"},
     .n_overrides = 1,
     .tol0 = 1e-5,
     .slope = 5e-4,
     .cap = 2e-2,
     .mean_tol = 3e-3},
    {.key = "transformer",
     .config = "configs/char_transformer.yaml",
     .data = "/usr/share/games/fortunes",
     .overrides = {"data.shuffle=false"},
     .n_overrides = 1,
     .tol0 = 1e-6,
     .slope = 0,
     .cap = 1e-6,
     .mean_tol = 3e-7},
};

static const char *g_dump; /* TFL_TWIN_OUT, or NULL */

typedef struct recorder {
    double loss[STEPS];
    int n;
} recorder;

/* on_step_end: keeps the step's loss; stops fit after STEPS steps */
static tfl_status record(tfl_model *model, const tfl_step_logs *logs, void *user, bool *stop)
{
    recorder *r = user;
    tfl_step_logs now;
    tfl_status st = tfl_step_logs_read(model, logs, &now);
    if (st != TFL_OK) return st;
    if (r->n < STEPS) r->loss[r->n++] = now.loss;
    if (r->n >= STEPS) *stop = true;
    return TFL_OK;
}

/* Compares variable v (float32) with the fixture's check of it: shape, sum and sum of squares
 * (to 1e-9 of the sum of |w| and of w^2: float32 values added in double in another order),
 * and its first values (exactly: both are the float32 values of the checkpoint). */
static void check_initial(const cJSON *init, const tfl_tensor *v)
{
    const char *name = tfl_variable_name(v);
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(init, name);
    if (!want) {
        print_error("the model has a variable '%s' that the twin's fixture lacks: tapeflow's "
                    "model changed; make the fixture again\n",
                    name);
        fail();
    }
    const cJSON *shape = jget(want, "shape");
    assert_int_equal(cJSON_GetArraySize(shape), tfl_tensor_rank(v));
    for (int d = 0; d < tfl_tensor_rank(v); d++)
        assert_int_equal(tfl_tensor_dim(v, d), (int64_t)cJSON_GetArrayItem(shape, d)->valuedouble);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT32);
    int64_t n = tfl_tensor_numel(v);
    float *w = malloc((size_t)n * sizeof *w);
    assert_non_null(w);
    assert_int_equal(tfl_tensor_to_host(v, w, (size_t)n * sizeof *w), TFL_OK);
    double sum = 0, sum_abs = 0, sum_sq = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += w[i];
        sum_abs += fabs(w[i]);
        sum_sq += (double)w[i] * w[i];
    }
    const double want_sum = jnum(want, "sum"), want_sq = jnum(want, "sum_sq");
    bool ok = fabs(sum - want_sum) <= 1e-9 * (1 + sum_abs) &&
              fabs(sum_sq - want_sq) <= 1e-9 * (1 + sum_sq);
    const cJSON *first = jget(want, "first");
    for (int i = 0; i < N_FIRST && i < n; i++)
        ok = ok && (float)cJSON_GetArrayItem(first, i)->valuedouble == w[i];
    if (!ok) {
        print_error("initial '%s': sum %.9g, sum of squares %.9g, first %.9g %.9g; the twin "
                    "started from sum %.9g, sum of squares %.9g, first %.9g %.9g: tapeflow's "
                    "initial weights changed (initializers or seeding); make the fixture again\n",
                    name, sum, sum_sq, (double)w[0], n > 1 ? (double)w[1] : 0.0, want_sum, want_sq,
                    cJSON_GetArrayItem(first, 0)->valuedouble,
                    n > 1 ? cJSON_GetArrayItem(first, 1)->valuedouble : 0.0);
        fail();
    }
    free(w);
}

/* Writes DIR/<key>.json: the config, its overrides and tapeflow's losses (%.9g: float32's
 * digits are enough to compare). */
static void dump_losses(const twin_model *tm, const recorder *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", g_dump, tm->key);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"config\": \"%s\", \"overrides\": [", tm->config);
    for (int i = 0; i < tm->n_overrides; i++)
        fprintf(fp, "%s\"%s\"", i ? ", " : "", tm->overrides[i]);
    fprintf(fp, "], \"steps\": %d, \"losses\": [", STEPS);
    for (int i = 0; i < r->n; i++)
        fprintf(fp, "%s%.9g", i ? ", " : "", r->loss[i]);
    fprintf(fp, "]}\n");
    assert_int_equal(fclose(fp), 0);
    print_message("wrote %s\n", path);
}

/* The fixture's entry of tm, checked to be for the same config, overrides and steps. */
static const cJSON *fixture_entry(const twin_model *tm)
{
    const cJSON *e = jget(jget(g_root, "models"), tm->key);
    assert_string_equal(jstr(e, "config"), tm->config);
    const cJSON *ov = jget(e, "overrides");
    assert_int_equal(cJSON_GetArraySize(ov), tm->n_overrides);
    for (int i = 0; i < tm->n_overrides; i++)
        assert_string_equal(cJSON_GetArrayItem(ov, i)->valuestring, tm->overrides[i]);
    assert_int_equal((int)jnum(g_root, "steps"), STEPS);
    assert_int_equal(cJSON_GetArraySize(jget(e, "losses_float64")), STEPS);
    assert_int_equal(cJSON_GetArraySize(jget(e, "losses_float32")), STEPS);
    return e;
}

static void run_twin(void **state, const twin_model *tm)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    struct stat sb;
    if (stat(tm->data, &sb) != 0) {
        print_message("skipped %s: %s is missing (make deps installs it)\n", tm->key, tm->data);
        skip();
    }
    const cJSON *entry = g_dump ? NULL : fixture_entry(tm);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", TFL_SOURCE_DIR, tm->config);
    tfl_status st;
    tfl_config *cfg = tfl_config_load(ctx, path, tm->overrides, (size_t)tm->n_overrides, &st);
    if (st != TFL_OK) print_error("%s:\n%s", path, tfl_config_diagnostics(cfg));
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_config_apply_context(cfg), TFL_OK);
    tfl_model *m = tfl_config_build_model(cfg);
    if (!m) print_error("%s\n", tfl_ctx_error(ctx).message);
    assert_non_null(m);
    tfl_optimizer *opt = tfl_config_build_optimizer(cfg);
    assert_non_null(opt);
    assert_int_equal(tfl_config_compile(cfg, m, opt), TFL_OK);
    tfl_config_datasets data;
    st = tfl_config_build_datasets(cfg, &data);
    if (st != TFL_OK) print_error("%s\n", tfl_ctx_error(ctx).message);
    assert_int_equal(st, TFL_OK);
    tfl_fit_opts fo;
    assert_int_equal(tfl_config_fit_opts(cfg, &data, &fo), TFL_OK);
    assert_false(fo.shuffle);

    /* the initial variables: written for the twin, or compared with the ones it used */
    tfl_tensor *vars[MAX_VARS];
    int nv = tfl_model_variables(m, TFL_VARS_ALL, vars, MAX_VARS);
    assert_true(nv > 0 && nv <= MAX_VARS);
    if (g_dump) {
        snprintf(path, sizeof path, "%s/%s.safetensors", g_dump, tm->key);
        st = tfl_ckpt_save(ctx, path, nv, NULL, (const tfl_tensor *const *)vars, NULL);
        if (st != TFL_OK) print_error("%s\n", tfl_ctx_error(ctx).message);
        assert_int_equal(st, TFL_OK);
        print_message("wrote %s (%d variables)\n", path, nv);
    } else {
        const cJSON *init = jget(entry, "init");
        assert_int_equal(cJSON_GetArraySize(init), nv); /* and each name is found below */
        for (int i = 0; i < nv; i++)
            check_initial(init, vars[i]);
    }

    recorder rec = {.n = 0};
    tfl_callback cb = {.on_step_end = record, .user = &rec};
    fo.callbacks = &cb;
    fo.n_callbacks = 1;
    st = tfl_model_fit(m, data.train, &fo, NULL);
    if (st != TFL_OK) print_error("%s\n", tfl_ctx_error(ctx).message);
    assert_int_equal(st, TFL_OK);
    assert_int_equal(rec.n, STEPS);

    if (g_dump) {
        dump_losses(tm, &rec);
    } else {
        const cJSON *want = jget(entry, "losses_float64"), *t32 = jget(entry, "losses_float32");
        double worst = 0, worst32 = 0, sum = 0;
        int worst_at = 0, bad = 0;
        for (int k = 0; k < STEPS; k++) {
            const double ref = cJSON_GetArrayItem(want, k)->valuedouble;
            const double rel = fabs(rec.loss[k] - ref) / fabs(ref);
            const double rel32 = fabs(cJSON_GetArrayItem(t32, k)->valuedouble - ref) / fabs(ref);
            const double tol = fmin(tm->tol0 + tm->slope * k, tm->cap);
            if (!(rel <= tol) && bad++ < 5)
                print_error("%s step %d: loss %.9g, PyTorch's twin %.9g (float64; %.9g in "
                            "float32): relative difference %.3g > %.3g\n",
                            tm->key, k, rec.loss[k], ref, cJSON_GetArrayItem(t32, k)->valuedouble,
                            rel, tol);
            if (!(rel <= worst)) worst = rel, worst_at = k;
            worst32 = fmax(worst32, rel32);
            sum += rel;
        }
        print_message("%s: losses %.6f .. %.6f; relative to PyTorch's float64 twin at most %.3g "
                      "(step %d), mean %.3g (PyTorch's float32 twin: at most %.3g)\n",
                      tm->key, rec.loss[0], rec.loss[STEPS - 1], worst, worst_at, sum / STEPS,
                      worst32);
        assert_int_equal(bad, 0);
        assert_true(sum / STEPS <= tm->mean_tol);
    }
    tfl_config_datasets_free(&data);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_config_free(cfg);
}

static void test_resnet(void **state)
{
    run_twin(state, &k_models[0]);
}

static void test_transformer(void **state)
{
    run_twin(state, &k_models[1]);
}

int main(void)
{
    g_dump = getenv("TFL_TWIN_OUT");
    if (g_dump && !*g_dump) g_dump = NULL;
    if (!g_dump && load_fixture(NULL) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resnet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transformer, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (g_root) free_fixture(NULL);
    return failed;
}
