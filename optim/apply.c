/*
 * optim/apply.c: one optimizer step. Checks every variable and gradient first, makes the
 * slots of variables seen for the first time, turns the options, the schedule and the step
 * into the scalars of tfl__opt_hyper and each tensor's constants (kinds.c), computes clipping
 * norms, and hands each group of
 * tensors sharing a device and dtype to that device's fused kernel, which updates the
 * variables and slots in place. After the first apply nothing here allocates.
 */
#include "optim_internal.h"

#include <math.h>
#include <stdio.h>

/* ---- scratch ---------------------------------------------------------------------------------- */

static tfl_status reserve(tfl_optimizer *opt, int n)
{
    if (n <= opt->cap_list) return TFL_OK;
    tfl_ctx *ctx = opt->ctx;
    size_t cap = opt->cap_list ? (size_t)opt->cap_list : 16;
    while (cap < (size_t)n) cap *= 2;
    if (cap > INT32_MAX) cap = (size_t)n;
    tfl__opt_tensor *list = tfl__host_alloc(ctx, cap * sizeof *list, 64);
    int32_t *which = tfl__host_alloc(ctx, cap * sizeof *which, 64);
    tfl_tensor **grads = tfl__host_alloc(ctx, cap * sizeof *grads, 64);
    double *norms = tfl__host_alloc(ctx, cap * sizeof *norms, 64);
    if (!list || !which || !grads || !norms) {
        tfl__host_free(ctx, list);
        tfl__host_free(ctx, which);
        tfl__host_free(ctx, grads);
        tfl__host_free(ctx, norms);
        return tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "%s: out of memory for %d variables",
                              opt->name, n);
    }
    tfl__host_free(ctx, opt->list);
    tfl__host_free(ctx, opt->which);
    tfl__host_free(ctx, opt->grads);
    tfl__host_free(ctx, opt->norms);
    opt->list = list;
    opt->which = which;
    opt->grads = grads;
    opt->norms = norms;
    opt->cap_list = (int)cap;
    return TFL_OK;
}

/* ---- checks ----------------------------------------------------------------------------------- */

#define NEW_ENTRY (-2) /* which[i]: a variable updated for the first time */
#define SKIPPED (-1)   /* which[i]: NULL gradient */

/* Checks variable i and its gradient; sets opt->which[i]. */
static tfl_status check_pair(tfl_optimizer *opt, int i, tfl_tensor *const *vars,
                             tfl_tensor *const *grads, uint64_t stamp)
{
    tfl_ctx *ctx = opt->ctx;
    const char *who = opt->name;
    const tfl_tensor *v = vars[i], *g = grads[i];
    TFL_CHECK(ctx, v, TFL_INVALID_ARGUMENT, "%s: variable %d is NULL", who, i);
    TFL_CHECK(ctx, v->refs > 0, TFL_MISUSE,
              "%s: variable %d was already released (use after release)", who, i);
    TFL_CHECK(ctx, v->ctx == ctx, TFL_MISUSE, "%s: variable %d belongs to another context", who, i);
    TFL_CHECK(ctx, tfl__var_name(v), TFL_INVALID_ARGUMENT,
              "%s: argument %d is a tensor, not a variable; only variables can be updated", who, i);
    const char *name = tfl__var_name(v);
    TFL_CHECK(ctx, tfl__var_owner(v) != opt, TFL_INVALID_ARGUMENT, "%s: variable '%s:0' is this "
              "optimizer's own state (a slot or a step counter); it cannot update it", who, name);
    if (!tfl__check_readable(ctx, who, v)) return tfl_ctx_status(ctx);
    tfl__opt_entry *e = tfl__opt_find(opt, v->id);
    if (e && e->step) {
        int64_t s = *(const int64_t *)tfl__tensor_data(e->step);
        TFL_CHECK(ctx, s >= 0 && s < INT64_MAX, TFL_FAILED_PRECONDITION, "%s: the step count "
                  "'%s:0' is %lld; it must be >= 0 (and below 2^63 - 1)", who,
                  tfl__var_name(e->step), (long long)s);
    }
    if (e) {
        TFL_CHECK(ctx, e->stamp != stamp, TFL_INVALID_ARGUMENT, "%s: variable '%s:0' is listed "
                  "more than once", who, name);
        e->stamp = stamp;
    } else { /* not updated before: compare with the others of this call that are not */
        for (int j = 0; j < i; j++)
            TFL_CHECK(ctx, vars[j] != v, TFL_INVALID_ARGUMENT, "%s: variable '%s:0' is listed "
                      "more than once", who, name);
    }
    if (!g) {
        opt->which[i] = SKIPPED;
        return TFL_OK;
    }
    TFL_CHECK(ctx, g->refs > 0, TFL_MISUSE, "%s: the gradient of variable '%s:0' was already "
              "released (use after release)", who, name);
    TFL_CHECK(ctx, g->ctx == ctx, TFL_MISUSE, "%s: the gradient of variable '%s:0' belongs to "
              "another context", who, name);
    if (!tfl__check_readable(ctx, who, g)) return tfl_ctx_status(ctx);
    tfl__device *dev = tfl__device_of(v);
    const tfl__opt_kernels *k = tfl__dev_opt_kernels(dev);
    TFL_CHECK(ctx, k, TFL_UNIMPLEMENTED, "%s: no update kernel on %s (variable '%s:0')", who,
              tfl__dev_name(dev), name);
    TFL_CHECK(ctx, k->dtypes >> v->dtype & 1u, TFL_INVALID_ARGUMENT, "%s: variable '%s:0' has "
              "dtype %s; optimizers update float32 and float64 variables", who, name,
              tfl_dtype_name((tfl_dtype)v->dtype));
    TFL_CHECK(ctx, g->dtype == v->dtype, TFL_INVALID_ARGUMENT, "%s: the gradient of variable "
              "'%s:0' has dtype %s, but the variable has dtype %s", who, name,
              tfl_dtype_name((tfl_dtype)g->dtype), tfl_dtype_name((tfl_dtype)v->dtype));
    if (!tfl__same_shape(g->rank, g->shape, v->rank, v->shape)) {
        char gs[160], vs[160];
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: the gradient of variable '%s:0' "
                              "has shape %s, but the variable has shape %s", who, name,
                              tfl__shape_str(g->rank, g->shape, gs, sizeof gs),
                              tfl__shape_str(v->rank, v->shape, vs, sizeof vs));
    }
    opt->which[i] = e ? (int32_t)(e - opt->entries) : NEW_ENTRY;
    return TFL_OK;
}

/* ---- slots ------------------------------------------------------------------------------------ */

static tfl_status make_slots(tfl_optimizer *opt, const tfl_tensor *v, tfl__opt_entry *e)
{
    tfl_ctx *ctx = opt->ctx;
    tfl_variable_opts vo = {.device = tfl_tensor_device(v), .flags = TFL_VAR_NOT_TRAINABLE};
    for (int s = 0; s < TFL_OPT_MAX_SLOTS; s++) {
        if (!opt->slot_names[s]) continue;
        char name[TFL_SCOPE_BYTES + 512];
        int len = snprintf(name, sizeof name, "%s/%s/%s", tfl__var_name(v), opt->name,
                           opt->slot_names[s]);
        TFL_CHECK(ctx, len > 0 && (size_t)len < sizeof name, TFL_INVALID_ARGUMENT,
                  "%s: the slot name of variable '%s:0' is too long", opt->name, tfl__var_name(v));
        tfl_initializer init = opt->slot_init[s] != 0 ? tfl_init_constant(opt->slot_init[s])
                                                      : tfl_init_zeros();
        e->slots[s] = tfl__variable_new_named(ctx, name, (tfl_dtype)v->dtype, v->rank, v->shape,
                                              &init, &vo);
        if (!e->slots[s]) return tfl_ctx_status(ctx);
        tfl__var_set_owner(e->slots[s], opt);
    }
    if (opt->opts.formula == TFL_FORMULA_PYTORCH) { /* torch's state['step'] */
        char name[TFL_SCOPE_BYTES + 512];
        snprintf(name, sizeof name, "%s/%s/step", tfl__var_name(v), opt->name);
        e->step = tfl__opt_counter(opt, name);
        if (!e->step) return tfl_ctx_status(ctx);
    }
    return TFL_OK;
}

/* ---- the scalars of one step -------------------------------------------------------------------- */

static void make_hyper(const tfl_optimizer *opt, int64_t step, tfl__opt_hyper *h)
{
    const tfl_optimizer_opts *o = &opt->opts;
    const tfl__opt_kind *k = tfl__opt_kind_of(o->kind);
    double lr = tfl_schedule_value(&o->schedule, o->learning_rate, step);
    bool decoupled = o->formula == TFL_FORMULA_TENSORFLOW || k->decoupled;
    *h = (tfl__opt_hyper){.kernel = k->kernel, .lr = lr};
    h->clip = o->clip_value > 0 ? o->clip_value : INFINITY;
    h->decay = decoupled ? lr * o->weight_decay : 0.0;
    h->l2 = decoupled ? 0.0 : o->weight_decay;
    k->hyper(o, h);
}

/* The sums of squares of the n live gradients into opt->norms, read by the host: one call
 * per run of gradients on the same device with the same dtype (a GPU's kernels reduce a run
 * in a few launches and one copy back). */
static tfl_status host_sums(tfl_optimizer *opt, int n)
{
    for (int i = 0, j; i < n; i = j) {
        const tfl_tensor *g = opt->grads[i];
        tfl__device *dev = tfl__device_of(g);
        for (j = i + 1; j < n; j++)
            if (tfl__device_of(opt->grads[j]) != dev || opt->grads[j]->dtype != g->dtype) break;
        TFL_TRY(tfl__dev_opt_kernels(dev)->sumsq(opt->ctx, dev, (tfl_dtype)g->dtype, j - i,
                                                 &opt->list[i], &opt->norms[i]));
    }
    return TFL_OK;
}

/* Gradient scales from the sums in opt->norms: clip_norm / global_clip_norm's (1 without),
 * times `unscale` (1/S under loss scaling). */
static void set_scales(tfl_optimizer *opt, int n, double unscale)
{
    const tfl_optimizer_opts *o = &opt->opts;
    if (o->clip_norm > 0 || o->global_clip_norm > 0) {
        tfl__opt_clip clip = {.c = o->clip_norm > 0 ? o->clip_norm : o->global_clip_norm,
                              .per_variable = o->clip_norm > 0,
                              .tf = o->formula == TFL_FORMULA_TENSORFLOW};
        tfl__opt_clip_scales(&clip, n, opt->norms, opt->norms);
    } else {
        for (int i = 0; i < n; i++) opt->norms[i] = 1.0;
    }
    for (int i = 0; i < n; i++)
        opt->list[i].gscale = opt->norms[i] * unscale;
}

/* Gradient scales for clip_norm / global_clip_norm, from the kernels' sums of squares. */
static tfl_status clip_scales(tfl_optimizer *opt, int n)
{
    TFL_TRY(host_sums(opt, n));
    set_scales(opt, n, 1.0);
    return TFL_OK;
}

/* Dynamic loss scaling: the gradients are those of the loss times S. Sets *finite; when all
 * are, the kernels' gradient scales (clipping on the unscaled sums, times 1/S). */
static tfl_status unscale(tfl_optimizer *opt, int n, double s, bool *finite)
{
    TFL_TRY(host_sums(opt, n));
    *finite = true;
    for (int i = 0; i < n; i++) *finite &= isfinite(opt->norms[i]) != 0;
    if (!*finite) return TFL_OK;
    for (int i = 0; i < n; i++) opt->norms[i] /= s * s; /* S is a power of two times S0 */
    set_scales(opt, n, 1.0 / s);
    return TFL_OK;
}

/* The scaler's state after an apply: finite, the count of finite steps grows and the scale
 * doubles at loss_scale_growth_steps; otherwise the scale halves (not below 1, as
 * TensorFlow's DynamicLossScale) and the skip is counted. */
static void update_scaler(tfl_optimizer *opt, bool finite)
{
    float *s = tfl__tensor_data(opt->loss_scale);
    int64_t *steps = tfl__tensor_data(opt->scale_steps);
    if (!finite) {
        *s = fmaxf(*s * 0.5f, fminf(*s, 1.0f));
        *steps = 0;
        ++*(int64_t *)tfl__tensor_data(opt->skipped);
    } else if (++*steps >= opt->opts.loss_scale_growth_steps) {
        if (isfinite(*s * 2.0f)) *s *= 2.0f;
        *steps = 0;
    }
}

/* The device of every live gradient when they share one whose kernels clip on the device
 * (sumsq_device, clip_scales_device); NULL otherwise (the host computes the scales). */
static tfl__device *clip_device(const tfl_optimizer *opt, int n)
{
    if (n <= 0) return NULL;
    tfl__device *dev = tfl__device_of(opt->grads[0]);
    const tfl__opt_kernels *k = tfl__dev_opt_kernels(dev);
    if (!k->sumsq_device || !k->clip_scales_device) return NULL;
    for (int i = 1; i < n; i++)
        if (tfl__device_of(opt->grads[i]) != dev) return NULL;
    return dev;
}

/* clip_scales on the device: the sums of squares go into a buffer of n doubles from the
 * device's caching allocator, the device turns them into the scales in place, and each
 * tensor's kernel reads its own (list[i].gscale_at); the host reads nothing and waits for
 * nothing. The buffer is returned by run_clipped once the updates are enqueued (the
 * allocator hands blocks on in the device's stream order). */
static tfl_status clip_scales_on(tfl_optimizer *opt, tfl__device *dev, int n, double **buf,
                                 size_t *got)
{
    const tfl_optimizer_opts *o = &opt->opts;
    const tfl__opt_kernels *k = tfl__dev_opt_kernels(dev);
    tfl__opt_clip clip = {.c = o->clip_norm > 0 ? o->clip_norm : o->global_clip_norm,
                          .per_variable = o->clip_norm > 0,
                          .tf = o->formula == TFL_FORMULA_TENSORFLOW};
    double *sums = tfl__dev_scratch_get(dev, (size_t)n * sizeof(double), got);
    if (!sums) return tfl_ctx_status(opt->ctx);
    *buf = sums;
    for (int i = 0, j; i < n; i = j) { /* one call per run of the same dtype */
        tfl_dtype dt = (tfl_dtype)opt->grads[i]->dtype;
        for (j = i + 1; j < n; j++)
            if (opt->grads[j]->dtype != dt) break;
        TFL_TRY(k->sumsq_device(opt->ctx, dev, dt, j - i, &opt->list[i], sums + i));
    }
    TFL_TRY(k->clip_scales_device(opt->ctx, dev, n, sums, &clip));
    for (int i = 0; i < n; i++)
        opt->list[i].gscale_at = sums + i; /* travels with the tensor when run_groups sorts */
    return TFL_OK;
}

/* ---- apply -------------------------------------------------------------------------------------- */

/* A gradient the kernels cannot read as it is: a strided view (they read flat data), or a
 * variable (perhaps one this apply writes: the copy keeps the value from before the step).
 * Other gradients never share memory with what the kernels write, because every written
 * variable gets storage of its own first (tfl__variable_own): only the variable's own
 * record can point at it then. */
static bool needs_copy(const tfl_tensor *g)
{
    return !tfl_tensor_is_contiguous(g) || tfl__var_name(g);
}

/* Everything after the checks that can fail: slots of new variables, contiguous gradients,
 * storage of their own for every tensor the kernels write. Fills opt->list (live ones, in
 * order) and opt->grads; returns the count in *live. */
static tfl_status prepare(tfl_optimizer *opt, int n, tfl_tensor *const *vars,
                          tfl_tensor *const *grads, const tfl__opt_hyper *h, int64_t global,
                          int *live)
{
    tfl_ctx *ctx = opt->ctx;
    const tfl__opt_kind *kind = tfl__opt_kind_of(opt->opts.kind);
    int64_t last = -1; /* the step of the last constants computed (steps are usually all equal) */
    double k[TFL_OPT_TENSOR_CONSTS] = {0};
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (opt->which[i] == SKIPPED) continue;
        tfl_tensor *v = vars[i];
        if (opt->which[i] == NEW_ENTRY) {
            tfl__opt_entry *e = tfl__opt_add(opt, v->id);
            if (!e) return tfl_ctx_status(ctx);
            e->stamp = opt->applies;
            opt->which[i] = (int32_t)(e - opt->entries);
            TFL_TRY(make_slots(opt, v, e));
        }
        tfl__opt_entry *e = &opt->entries[opt->which[i]];
        tfl_tensor *g = grads[i];
        tfl__device *vdev = tfl__device_of(v);
        if (tfl__device_of(g) != vdev) {
            /* a gradient on another device is copied to the variable's, as an op's inputs
             * are (TensorFlow does the same); the placement log says so */
            if (tfl__ctx_log_placement(ctx))
                tfl__log(ctx, TFL_LOG_INFO, "%s: copy the gradient of '%s:0' from %s to %s",
                         opt->name, tfl__var_name(v), tfl__dev_name(tfl__device_of(g)),
                         tfl__dev_name(vdev));
            g = tfl__tensor_copy_to(ctx, g, vdev);
            if (!g) return tfl_ctx_status(ctx);
        } else if (needs_copy(g)) {
            g = tfl__tensor_copy_to(ctx, g, vdev);
            if (!g) return tfl_ctx_status(ctx);
        }
        TFL_TRY(tfl__variable_own(v));
        int64_t step = global;
        if (e->step) { /* PYTORCH: the variable's own count */
            TFL_TRY(tfl__variable_own(e->step));
            step = *(const int64_t *)tfl__tensor_data(e->step);
        }
        if (kind->tensor && step != last) {
            kind->tensor(&opt->opts, h, step, opt->memo, k);
            last = step;
        }
        tfl__opt_tensor *t = &opt->list[m];
        *t = (tfl__opt_tensor){.p = tfl__tensor_data(v), .g = tfl__tensor_data(g), .n = v->numel,
                               .gscale = 1.0};
        memcpy(t->k, k, sizeof k);
        for (int s = 0; s < TFL_OPT_MAX_SLOTS; s++) {
            if (!e->slots[s]) continue;
            TFL_TRY(tfl__variable_own(e->slots[s]));
            t->s[s] = tfl__tensor_data(e->slots[s]);
        }
        opt->grads[m] = g;
        opt->which[m] = opt->which[i]; /* m <= i: compacts to the live ones */
        m++;
    }
    *live = m;
    return tfl__variable_own(opt->iterations);
}

/* Runs the device kernels, one call per (device, dtype) group of the live tensors. */
static tfl_status run_groups(tfl_optimizer *opt, int live, const tfl__opt_hyper *h)
{
    tfl__opt_tensor *list = opt->list;
    tfl_tensor **grads = opt->grads;
    int done = 0;
    while (done < live) {
        /* move the group of list[done] to the front of the rest (usually the whole list) */
        const tfl_tensor *lead = grads[done];
        int end = done + 1;
        for (int i = end; i < live; i++) {
            if (tfl__device_of(grads[i]) != tfl__device_of(lead) || grads[i]->dtype != lead->dtype)
                continue;
            tfl__opt_tensor tt = list[end];
            list[end] = list[i];
            list[i] = tt;
            tfl_tensor *tg = grads[end];
            grads[end] = grads[i];
            grads[i] = tg;
            end++;
        }
        tfl__device *dev = tfl__device_of(lead);
        TFL_TRY(tfl__dev_opt_kernels(dev)->apply(opt->ctx, dev, (tfl_dtype)lead->dtype,
                                                  end - done, list + done, h));
        done = end;
    }
    return TFL_OK;
}

tfl_status tfl_optimizer_apply(tfl_optimizer *opt, int n, tfl_tensor *const *vars,
                               tfl_tensor *const *grads)
{
    if (!opt) return TFL_INVALID_ARGUMENT;
    if (!tfl__opt_alive(opt, "tfl_optimizer_apply")) return TFL_MISUSE;
    tfl_ctx *ctx = opt->ctx;
    const char *who = opt->name;
    TFL_CHECK(ctx, n >= 0, TFL_INVALID_ARGUMENT, "%s: the number of variables is negative (%d)",
              who, n);
    TFL_CHECK(ctx, n == 0 || (vars && grads), TFL_INVALID_ARGUMENT,
              "%s: the %s array is NULL", who, vars ? "gradient" : "variable");
    TFL_TRY(reserve(opt, n));
    uint64_t stamp = ++opt->applies; /* new on every call: stamps of a failed call are stale */
    int given = 0;
    for (int i = 0; i < n; i++) {
        TFL_TRY(check_pair(opt, i, vars, grads, stamp));
        given += opt->which[i] != SKIPPED;
    }
    TFL_CHECK(ctx, given > 0, TFL_INVALID_ARGUMENT, "%s: No gradients provided for any variable "
              "(%d variables)", who, n);
    int64_t *step = tfl__tensor_data(opt->iterations);
    TFL_CHECK(ctx, *step >= 0 && *step < INT64_MAX, TFL_FAILED_PRECONDITION, "%s: the step "
              "counter '%s:0' is %lld; it must be >= 0 (and below 2^63 - 1)", who,
              tfl__var_name(opt->iterations), (long long)*step);
    double scale = opt->loss_scale ? *(const float *)tfl__tensor_data(opt->loss_scale) : 1.0;
    if (opt->loss_scale) {
        int64_t steps = *(const int64_t *)tfl__tensor_data(opt->scale_steps);
        int64_t skipped = *(const int64_t *)tfl__tensor_data(opt->skipped);
        TFL_CHECK(ctx, isfinite(scale) && scale > 0 && steps >= 0 && skipped >= 0 &&
                           skipped < INT64_MAX, TFL_FAILED_PRECONDITION,
                  "%s: the loss scaling's state is invalid (loss_scale %g, loss_scale_steps %lld, "
                  "skipped_steps %lld; a bad restore?): the scale must be finite and > 0, the "
                  "counts >= 0", who, scale, (long long)steps, (long long)skipped);
    }

    size_t keep = opt->n_entries;
    TFL_TRY(tfl_frame_push(ctx)); /* owns the copies of gradients (needs_copy, other device) */
    for (int i = 0; i < n; i++)
        if (opt->which[i] == SKIPPED && tfl__log_wanted(ctx, TFL_LOG_WARNING))
            tfl__log(ctx, TFL_LOG_WARNING, "%s: Gradients do not exist for variable '%s:0' when "
                     "minimizing the loss; it is not updated", who, tfl__var_name(vars[i]));
    int live = 0;
    tfl__opt_hyper h;
    make_hyper(opt, *step, &h);
    tfl_status st = prepare(opt, n, vars, grads, &h, *step, &live);
    double *dev_scales = NULL; /* the device path's buffer of scales (clip_scales_on) */
    size_t dev_got = 0;
    tfl__device *cdev = NULL;
    bool finite = true;
    if (st == TFL_OK && opt->loss_scale) { /* the host reads the sums: it decides */
        st = tfl__variable_own(opt->loss_scale);
        if (st == TFL_OK) st = tfl__variable_own(opt->scale_steps);
        if (st == TFL_OK) st = tfl__variable_own(opt->skipped);
        if (st == TFL_OK) st = unscale(opt, live, scale, &finite);
    } else if (st == TFL_OK && (opt->opts.clip_norm > 0 || opt->opts.global_clip_norm > 0)) {
        cdev = clip_device(opt, live);
        st = cdev ? clip_scales_on(opt, cdev, live, &dev_scales, &dev_got) : clip_scales(opt, live);
    }
    if (st == TFL_OK && finite) st = run_groups(opt, live, &h);
    if (dev_scales) tfl__dev_scratch_put(cdev, dev_scales, dev_got);
    if (st == TFL_OK && opt->loss_scale) update_scaler(opt, finite);
    if (st == TFL_OK && finite) {
        /* prepare may have moved it (copy-on-write) */
        ++*(int64_t *)tfl__tensor_data(opt->iterations);
        for (int i = 0; i < live; i++) {
            tfl_tensor *own_step = opt->entries[opt->which[i]].step;
            if (own_step) ++*(int64_t *)tfl__tensor_data(own_step);
        }
    } else {
        tfl__opt_truncate(opt, keep); /* slots made by this call go (an error, or a step the
                                         loss scaling skipped); values are unchanged */
    }
    tfl_frame_pop(ctx);
    return st;
}

/* ---- build --------------------------------------------------------------------------------------- */

tfl_status tfl_optimizer_build(tfl_optimizer *opt, int n, tfl_tensor *const *vars)
{
    if (!opt) return TFL_INVALID_ARGUMENT;
    if (!tfl__opt_alive(opt, "tfl_optimizer_build")) return TFL_MISUSE;
    tfl_ctx *ctx = opt->ctx;
    TFL_CHECK(ctx, n >= 0 && (n == 0 || vars), TFL_INVALID_ARGUMENT,
              "%s: build: bad variable list (n = %d, variables %s)", opt->name, n,
              vars ? "given" : "NULL");
    TFL_TRY(reserve(opt, n));
    uint64_t stamp = ++opt->applies;
    for (int i = 0; i < n; i++) /* each variable checked as its own gradient: same checks */
        TFL_TRY(check_pair(opt, i, vars, vars, stamp));
    size_t keep = opt->n_entries;
    for (int i = 0; i < n; i++) {
        if (opt->which[i] != NEW_ENTRY) continue;
        tfl__opt_entry *e = tfl__opt_add(opt, vars[i]->id);
        tfl_status st = e ? make_slots(opt, vars[i], e) : tfl_ctx_status(ctx);
        if (st != TFL_OK) {
            tfl__opt_truncate(opt, keep);
            return st;
        }
        e->stamp = stamp;
    }
    return TFL_OK;
}

/* ---- minimize ------------------------------------------------------------------------------------ */

tfl_status tfl_optimizer_gradient(tfl_optimizer *opt, tfl_tape *tape, const tfl_tensor *loss,
                                  int n, const tfl_tensor *const *sources, tfl_tensor **grads)
{
    if (!opt) return TFL_INVALID_ARGUMENT;
    if (!tfl__opt_alive(opt, "tfl_optimizer_gradient")) return TFL_MISUSE;
    if (!opt->loss_scale || !loss) return tfl_tape_gradient(tape, loss, n, sources, grads, 0);
    tfl_ctx *ctx = opt->ctx;
    double s = *(const float *)tfl__tensor_data(opt->loss_scale);
    tfl_tensor *seed = tfl_fill(ctx, tfl_tensor_dtype(loss), tfl_tensor_rank(loss),
                                tfl_tensor_shape(loss), s); /* in the caller's frame */
    return seed ? tfl_tape_vjp(tape, loss, seed, n, sources, grads, 0) : tfl_ctx_status(ctx);
}

tfl_status tfl_optimizer_minimize(tfl_optimizer *opt, tfl_loss_fn loss_fn, void *user, int n,
                                  tfl_tensor *const *variables, double *loss_value)
{
    if (!opt) return TFL_INVALID_ARGUMENT;
    if (!tfl__opt_alive(opt, "tfl_optimizer_minimize")) return TFL_MISUSE;
    tfl_ctx *ctx = opt->ctx;
    const char *who = opt->name;
    TFL_CHECK(ctx, loss_fn, TFL_INVALID_ARGUMENT, "%s: minimize: the loss function is NULL", who);
    TFL_CHECK(ctx, n >= 0 && (n == 0 || variables), TFL_INVALID_ARGUMENT,
              "%s: minimize: bad variable list (n = %d, variables %s)", who, n,
              variables ? "given" : "NULL");
    if (n == 0 && !variables) { /* every trainable variable */
        int64_t count = tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0);
        TFL_CHECK(ctx, count > 0 && count <= INT32_MAX, TFL_INVALID_ARGUMENT,
                  "%s: minimize: there are no trainable variables", who);
        n = (int)count;
    }
    if (n > opt->cap_minimize) {
        tfl_tensor **m = tfl__host_alloc(ctx, 2 * (size_t)n * sizeof *m, 64);
        TFL_CHECK(ctx, m, TFL_RESOURCE_EXHAUSTED, "%s: minimize: out of memory", who);
        tfl__host_free(ctx, opt->minimize);
        opt->minimize = m;
        opt->cap_minimize = n;
    }
    tfl_tensor **vars = (tfl_tensor **)variables, **grads = opt->minimize + n;
    if (!vars) {
        vars = opt->minimize;
        tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, vars, n);
    }
    TFL_TRY(tfl_frame_push(ctx));
    tfl_status st = TFL_OK;
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    for (int i = 0; tape && i < n; i++) /* the listed variables, trainable or not (Keras) */
        if (tfl_tape_watch(tape, vars[i]) != TFL_OK) {
            tfl_tape_free(tape);
            tape = NULL;
        }
    tfl_tensor *loss = tape ? loss_fn(ctx, user) : NULL;
    if (tape) tfl_tape_end(tape);
    if (!tape) {
        st = tfl_ctx_status(ctx);
    } else if (!loss) {
        st = tfl_ctx_status(ctx) ? tfl_ctx_status(ctx)
                           : tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: minimize: the loss "
                                            "function returned NULL without an error", who);
    } else if (loss->numel != 1) {
        char s[160];
        st = tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: minimize: the loss must be a scalar, "
                            "got shape %s", who, tfl__shape_str(loss->rank, loss->shape, s, sizeof s));
    } else {
        st = tfl_optimizer_gradient(opt, tape, loss, n, (const tfl_tensor *const *)vars, grads);
        if (st == TFL_OK && loss_value) st = tfl_tensor_get(loss, 0, loss_value);
        if (st == TFL_OK) st = tfl_optimizer_apply(opt, n, vars, grads);
    }
    tfl_tape_free(tape);
    tfl_frame_pop(ctx);
    return st;
}
