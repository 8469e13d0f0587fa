/*
 * test_optim_reference.c: tapeflow's optimizers against 100-step trajectories of
 * torch.optim and TensorFlow (Keras 3 optimizers and tf.raw_ops.ResourceApply*), written by
 * tests/reference/optim_ref.py into fixtures/optim_ref.json. Every case runs the same fixed
 * gradients on two float32 variables and compares the variables after each step, the
 * learning rate of each step and the final slots; the defaults and the schedules are
 * compared too. One cmocka test per case, named after it.
 */
#include <cjson/cJSON.h>
#include <tapeflow/tapeflow.h>

#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/optim_ref.json"
#include "seeds_fixture.h"

/* float32 trajectories of 100 steps: both frameworks round each operation to float32 in
 * their own order, so values agree to a few float32 ulps of accumulated rounding */
#define RTOL 2e-5
#define ATOL 2e-6

static tfl_optimizer_kind kind_of(const char *s)
{
    for (int k = TFL_OPTIMIZER_SGD; k < TFL_OPTIMIZER_KIND_COUNT; k++)
        if (!strcmp(tfl_optimizer_kind_name((tfl_optimizer_kind)k), s)) return (tfl_optimizer_kind)k;
    fail_msg("unknown optimizer '%s' in the fixture", s);
    return 0;
}

static tfl_formula formula_of(const char *s)
{
    if (!strcmp(s, "tensorflow")) return TFL_FORMULA_TENSORFLOW;
    if (!strcmp(s, "pytorch")) return TFL_FORMULA_PYTORCH;
    fail_msg("unknown formula '%s' in the fixture", s);
    return 0;
}

static double num(const cJSON *it)
{
    if (cJSON_IsBool(it)) return cJSON_IsTrue(it) ? 1.0 : 0.0;
    assert_true(cJSON_IsNumber(it));
    return it->valuedouble;
}

/* The option fields by their C names, as the fixture writes them. */
#define DOUBLE_OPTIONS(X) X(learning_rate) X(weight_decay) X(momentum) X(dampening) X(beta1) \
    X(beta2) X(epsilon) X(rho) X(initial_accumulator) X(clip_value) X(clip_norm) X(global_clip_norm) \
    X(momentum_decay)
#define BOOL_OPTIONS(X) X(nesterov) X(amsgrad) X(centered)

static void set_options(tfl_optimizer_opts *o, const cJSON *obj)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        const char *k = it->string;
#define SET_D(f) if (!strcmp(k, #f)) { o->f = num(it); continue; }
#define SET_B(f) if (!strcmp(k, #f)) { o->f = num(it) != 0; continue; }
        DOUBLE_OPTIONS(SET_D)
        BOOL_OPTIONS(SET_B)
#undef SET_D
#undef SET_B
        fail_msg("unknown option '%s' in the fixture", k);
    }
}

static void set_schedule(tfl_schedule *s, const cJSON *obj)
{
    memset(s, 0, sizeof *s);
    if (!obj) return;
    const char *kind = jstr(obj, "kind");
    static const char *const kinds[] = {"constant", "exponential", "step", "cosine"};
    bool found = false;
    for (int i = 0; i < 4; i++)
        if (!strcmp(kind, kinds[i])) {
            s->kind = (tfl_schedule_kind)i;
            found = true;
        }
    if (!found) fail_msg("unknown schedule kind '%s'", kind);
    const cJSON *v;
    if ((v = jopt(obj, "decay_steps"))) s->decay_steps = (int64_t)num(v);
    if ((v = jopt(obj, "decay_rate"))) s->decay_rate = num(v);
    if ((v = jopt(obj, "alpha"))) s->alpha = num(v);
    if ((v = jopt(obj, "warmup_steps"))) s->warmup_steps = (int64_t)num(v);
    if ((v = jopt(obj, "warmup_start_factor"))) s->warmup_start_factor = num(v);
}

/* Largest |a − b| / (ATOL + RTOL·|b|) over a float32 tensor and the fixture's list. */
static double worst(const tfl_tensor *t, const cJSON *want, int *at)
{
    int64_t n = tfl_tensor_numel(t);
    assert_int_equal(cJSON_GetArraySize(want), n);
    float *got = host_bytes(t, NULL);
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        double b = num(cJSON_GetArrayItem(want, (int)i));
        double e = fabs(got[i] - b) / (ATOL + RTOL * fabs(b));
        if (!(e <= w)) { /* NaN counts as the worst */
            w = isnan(e) ? INFINITY : e;
            *at = (int)i;
        }
    }
    free(got);
    return w;
}

static void run_case(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const cJSON *c = f->user;
    const char *name = jstr(c, "name");
    tfl_optimizer_opts o = tfl_optimizer_defaults(kind_of(jstr(c, "optimizer")),
                                                  formula_of(jstr(c, "formula")));
    set_options(&o, jget(c, "options"));
    set_schedule(&o.schedule, jopt(c, "schedule"));
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &o);
    if (!opt) fail_msg("%s: %s", name, tfl_ctx_error(ctx).message);

    const cJSON *shapes = jget(g_root, "shapes"), *init = jget(g_root, "init");
    int nv = cJSON_GetArraySize(shapes);
    assert_true(nv > 0 && nv <= 4);
    tfl_tensor *vars[4] = {0};
    int64_t dims[4][TFL_MAX_RANK];
    int ranks[4];
    for (int i = 0; i < nv; i++) {
        ranks[i] = json_dims(cJSON_GetArrayItem(shapes, i), dims[i]);
        int64_t n = 1;
        for (int d = 0; d < ranks[i]; d++) n *= dims[i][d];
        float *v = malloc((size_t)n * sizeof *v);
        for (int64_t j = 0; j < n; j++) v[j] = (float)num(cJSON_GetArrayItem(cJSON_GetArrayItem(init, i), (int)j));
        tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, ranks[i], dims[i], v);
        free(v);
        char vname[16];
        snprintf(vname, sizeof vname, "v%d", i);
        vars[i] = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = vname});
        tfl_tensor_release(t);
        assert_non_null(vars[i]);
    }

    const cJSON *grads = jget(g_root, "grads"), *values = jget(c, "values"), *lrs = jopt(c, "lr");
    int steps = cJSON_GetArraySize(values);
    assert_int_equal(steps, (int)jnum(g_root, "steps"));
    double worst_all = 0;
    for (int s = 0; s < steps; s++) {
        if (lrs) {
            double want = num(cJSON_GetArrayItem(lrs, s)), got = tfl_optimizer_learning_rate(opt);
            if (fabs(got - want) > 1e-6 * fabs(want) + 1e-12)
                fail_msg("%s: step %d: learning rate %.9g, want %.9g", name, s, got, want);
        }
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *g[4];
        for (int i = 0; i < nv; i++) {
            const cJSON *gl = cJSON_GetArrayItem(cJSON_GetArrayItem(grads, s), i);
            int n = cJSON_GetArraySize(gl);
            float *gv = malloc((size_t)n * sizeof *gv);
            for (int j = 0; j < n; j++) gv[j] = (float)num(cJSON_GetArrayItem(gl, j));
            g[i] = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, ranks[i], dims[i], gv);
            free(gv);
        }
        tfl_status st = tfl_optimizer_apply(opt, nv, vars, g);
        if (st != TFL_OK) fail_msg("%s: step %d: %s", name, s, tfl_ctx_error(ctx).message);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        for (int i = 0; i < nv; i++) {
            int at = -1;
            const cJSON *want = cJSON_GetArrayItem(cJSON_GetArrayItem(values, s), i);
            double w = worst(vars[i], want, &at);
            if (w > 1.0) {
                float *got = host_bytes(vars[i], NULL);
                fail_msg("%s: after step %d, variable %d[%d] = %.9g, want %.9g", name, s + 1, i, at,
                         got[at], num(cJSON_GetArrayItem(want, at)));
            }
            if (w > worst_all) worst_all = w;
        }
    }
    const cJSON *slots = jopt(c, "slots"), *slot;
    int n_slots = 0;
    cJSON_ArrayForEach(slot, slots) {
        for (int i = 0; i < nv; i++) {
            tfl_tensor *t = tfl_optimizer_slot(opt, vars[i], slot->string);
            if (!t) fail_msg("%s: no slot '%s' for variable %d", name, slot->string, i);
            int at = -1;
            double w = worst(t, cJSON_GetArrayItem(slot, i), &at);
            if (w > 1.0)
                fail_msg("%s: slot %s of variable %d differs at [%d] (%.3g of the tolerance)", name,
                         slot->string, i, at, w);
            n_slots++;
        }
    }
    /* the fixture lists every slot the optimizer keeps: none is missing from either side;
     * under PYTORCH each variable also counts its own steps (torch's state['step']) */
    bool torch = o.formula == TFL_FORMULA_PYTORCH;
    for (int i = 0; torch && i < nv; i++) {
        double s = 0;
        assert_int_equal(tfl_tensor_get(tfl_optimizer_slot(opt, vars[i], "step"), 0, &s), TFL_OK);
        assert_true(s == steps);
    }
    assert_int_equal(tfl_optimizer_variables(opt, NULL, 0), 1 + n_slots + (torch ? nv : 0));
    double iters = 0;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(opt), 0, &iters), TFL_OK);
    assert_true(iters == steps);
    print_message("%-40s worst error %.3f of the tolerance\n", name, worst_all);
    tfl_optimizer_free(opt);
    for (int i = 0; i < nv; i++) tfl_tensor_release(vars[i]);
}

/* tfl_optimizer_defaults against the constructors' defaults read from torch and Keras. */
static void defaults_match(void **state)
{
    (void)state;
    const cJSON *all = jget(g_root, "defaults"), *d;
    int n = 0;
    cJSON_ArrayForEach(d, all) {
        char kind[32];
        const char *slash = strchr(d->string, '/');
        assert_non_null(slash);
        snprintf(kind, sizeof kind, "%.*s", (int)(slash - d->string), d->string);
        tfl_optimizer_opts o = tfl_optimizer_defaults(kind_of(kind), formula_of(slash + 1));
        tfl_optimizer_opts want = o;
        set_options(&want, d);
#define CMP_D(f) if (fabs(o.f - want.f) > 1e-12 * fabs(want.f)) \
            fail_msg("%s: default " #f " is %g, the framework's is %g", d->string, o.f, want.f);
#define CMP_B(f) if (o.f != want.f) fail_msg("%s: default " #f " differs", d->string);
        DOUBLE_OPTIONS(CMP_D)
        BOOL_OPTIONS(CMP_B)
#undef CMP_D
#undef CMP_B
        n++;
    }
    assert_int_equal(n, 2 * (TFL_OPTIMIZER_KIND_COUNT - 1)); /* every kind × 2 formulas */
}

/* tfl_schedule_value against Keras's schedules and torch's schedulers. */
static void schedules_match(void **state)
{
    (void)state;
    const cJSON *all = jget(g_root, "schedules"), *s;
    int n = 0;
    cJSON_ArrayForEach(s, all) {
        tfl_schedule sch;
        set_schedule(&sch, jget(s, "schedule"));
        double lr = jnum(s, "learning_rate");
        const cJSON *steps = jget(s, "steps"), *values = jget(s, "values");
        assert_int_equal(cJSON_GetArraySize(steps), cJSON_GetArraySize(values));
        for (int i = 0; i < cJSON_GetArraySize(steps); i++) {
            int64_t step = (int64_t)num(cJSON_GetArrayItem(steps, i));
            double want = num(cJSON_GetArrayItem(values, i));
            double got = tfl_schedule_value(&sch, lr, step);
            if (!(fabs(got - want) <= 1e-6 * fabs(want) + 1e-12))
                fail_msg("%s (%s): step %lld: %.9g, want %.9g", jstr(s, "name"), jstr(s, "source"),
                         (long long)step, got, want);
        }
        n++;
    }
    assert_true(n >= 5);
}

static int setup_case(void **state)
{
    const cJSON *c = *state;
    if (setup(state) != 0) return -1;
    ((fixture *)*state)->user = c;
    return 0;
}

int main(void)
{
    if (load_fixture(NULL) != 0) return 1;
    const cJSON *cases = jget(g_root, "cases");
    int n = cJSON_GetArraySize(cases);
    struct CMUnitTest *tests = calloc((size_t)n + 2, sizeof *tests);
    if (!tests) return 1;
    tests[0] = (struct CMUnitTest)cmocka_unit_test(defaults_match);
    tests[1] = (struct CMUnitTest)cmocka_unit_test(schedules_match);
    for (int i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(cases, i);
        tests[i + 2] = (struct CMUnitTest){jstr(c, "name"), run_case, setup_case, teardown,
                                           (void *)c};
    }
    int failed = _cmocka_run_group_tests("optim_reference", tests, (size_t)n + 2, NULL, NULL);
    free(tests);
    free_fixture(NULL);
    return failed;
}
