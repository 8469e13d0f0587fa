/*
 * optim/optimizer.c: optimizer records: defaults per kind and formula and the option checks
 * (from kinds.c's tables), unique names, the step counter, the per-variable slot table, and
 * what the optimizer lists for checkpoints. The update itself is in apply.c.
 */
#include "optim_internal.h"

#include <math.h>
#include <stdio.h>

const char *tfl_optimizer_kind_name(tfl_optimizer_kind kind)
{
    const tfl__opt_kind *k = tfl__opt_kind_of(kind);
    return k ? k->name : "unknown";
}

const char *tfl_formula_name(tfl_formula formula)
{
    switch (formula) {
    case TFL_FORMULA_DEFAULT: return "default";
    case TFL_FORMULA_TENSORFLOW: return "tensorflow";
    case TFL_FORMULA_PYTORCH: return "pytorch";
    }
    return "unknown";
}

/* ---- defaults -------------------------------------------------------------------------------- */

tfl_optimizer_opts tfl_optimizer_defaults(tfl_optimizer_kind kind, tfl_formula formula)
{
    tfl_optimizer_opts o = {0};
    const tfl__opt_kind *k = tfl__opt_kind_of(kind);
    if (!k) return o;
    if (formula == TFL_FORMULA_DEFAULT) formula = k->formula;
    if (formula != TFL_FORMULA_TENSORFLOW && formula != TFL_FORMULA_PYTORCH) return o;
    o.kind = kind;
    o.formula = formula;
    k->defaults(&o, formula == TFL_FORMULA_TENSORFLOW);
    return o;
}

/* ---- option checks ----------------------------------------------------------------------------- */

static bool finite_ge0(double x) { return isfinite(x) && x >= 0; }

/* An option the kind has no use for must be 0. */
static bool check_unused(tfl_ctx *ctx, const char *who, const char *field, double value, bool used)
{
    TFL_CHECK_RET(ctx, used || value == 0, false, TFL_INVALID_ARGUMENT,
                  "%s has no option '%s' (given %g); leave it 0", who, field, value);
    return true;
}

static bool check_range(tfl_ctx *ctx, const char *who, const char *field, double value, bool ok,
                        const char *expected)
{
    TFL_CHECK_RET(ctx, ok, false, TFL_INVALID_ARGUMENT, "%s: invalid %s %g; expected %s", who,
                  field, value, expected);
    return true;
}

/* The same conditions as tfl__schedule_valid, each with its message. */
static bool check_schedule(tfl_ctx *ctx, const char *who, const tfl_schedule *s)
{
    if (tfl__schedule_valid(s)) return true;
    TFL_CHECK_RET(ctx, (unsigned)s->kind < TFL_SCHEDULE_KIND_COUNT, false, TFL_INVALID_ARGUMENT,
                  "%s: unknown schedule kind %d", who, (int)s->kind);
    TFL_CHECK_RET(ctx, s->kind == TFL_SCHEDULE_CONSTANT || s->decay_steps > 0, false,
                  TFL_INVALID_ARGUMENT, "%s: the schedule's decay_steps must be > 0 (given %lld)",
                  who, (long long)s->decay_steps);
    TFL_CHECK_RET(ctx, isfinite(s->alpha), false, TFL_INVALID_ARGUMENT,
                  "%s: the schedule's alpha must be finite (given %g)", who, s->alpha);
    TFL_CHECK_RET(ctx, s->warmup_steps >= 0 && finite_ge0(s->warmup_start_factor), false,
                  TFL_INVALID_ARGUMENT, "%s: the schedule's warmup_steps (%lld) and "
                  "warmup_start_factor (%g) must be >= 0", who, (long long)s->warmup_steps,
                  s->warmup_start_factor);
    return tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "%s: the schedule's decay_rate must be > 0 "
                          "(given %g)", who, s->decay_rate), false;
}

static bool check_opts(tfl_ctx *ctx, const tfl_optimizer_opts *o)
{
    const tfl__opt_kind *kind = tfl__opt_kind_of(o->kind);
    TFL_CHECK_RET(ctx, kind, false, TFL_INVALID_ARGUMENT, "tfl_optimizer_new: unknown optimizer "
                  "kind %d (start from tfl_optimizer_defaults)", (int)o->kind);
    TFL_CHECK_RET(ctx, o->formula == TFL_FORMULA_TENSORFLOW || o->formula == TFL_FORMULA_PYTORCH,
                  false, TFL_INVALID_ARGUMENT, "tfl_optimizer_new: unknown formula %d (expected "
                  "TFL_FORMULA_TENSORFLOW, TFL_FORMULA_PYTORCH or TFL_FORMULA_DEFAULT)",
                  (int)o->formula);
    const char *who = kind->name;
    bool torch = o->formula == TFL_FORMULA_PYTORCH;
    char who_tf[64];
    snprintf(who_tf, sizeof who_tf, "%s (tensorflow formula)", who);
    for (const tfl__opt_option *f = tfl__opt_options; f->name; f++) {
        const char *field = (const char *)o + f->offset;
        double value = f->is_bool ? (double)*(const bool *)field : *(const double *)field;
        bool used = !f->bit || ((kind->options & f->bit) && (torch || !(kind->torch_only & f->bit)));
        bool only_torch = (kind->options & f->bit) && (kind->torch_only & f->bit);
        if (!check_unused(ctx, only_torch && !torch ? who_tf : who, f->name, value, used))
            return false;
        if (!f->is_bool &&
            !check_range(ctx, who, f->name, value,
                         finite_ge0(value) && (f->hi_open ? value < f->hi : value <= f->hi),
                         f->expected))
            return false;
    }
    if (!check_schedule(ctx, who, &o->schedule)) return false;
    TFL_CHECK_RET(ctx, !o->nesterov || (o->momentum > 0 && o->dampening == 0), false,
                  TFL_INVALID_ARGUMENT, "%s: nesterov momentum requires a momentum > 0 and zero "
                  "dampening (momentum %g, dampening %g)", who, o->momentum, o->dampening);
    int clips = (o->clip_value > 0) + (o->clip_norm > 0) + (o->global_clip_norm > 0);
    TFL_CHECK_RET(ctx, o->loss_scale_growth_steps >= 0 && (o->loss_scale > 0 ||
                                                           o->loss_scale_growth_steps == 0),
                  false, TFL_INVALID_ARGUMENT, "%s: invalid loss_scale_growth_steps %lld; expected "
                  ">= 0, and 0 without loss_scale", who, (long long)o->loss_scale_growth_steps);
    TFL_CHECK_RET(ctx, clips <= 1, false, TFL_INVALID_ARGUMENT,
                  "%s: only one of clip_value (%g), clip_norm (%g) and global_clip_norm (%g) can "
                  "be set", who, o->clip_value, o->clip_norm, o->global_clip_norm);
    if (o->name)
        TFL_CHECK_RET(ctx, o->name[0] && !strchr(o->name, ':') && strlen(o->name) < 128, false,
                      TFL_INVALID_ARGUMENT, "%s: '%.128s' is not a valid optimizer name (non-empty, "
                      "without ':', under 128 bytes)", who, o->name);
    return true;
}

/* ---- names ------------------------------------------------------------------------------------- */

static void free_obj(tfl__ctx_obj *obj);

/* Whether a live optimizer of ctx has this name. */
static bool name_taken(tfl_ctx *ctx, const char *name)
{
    for (const tfl__ctx_obj *o = tfl__ctx_objects(ctx); o; o = o->next) {
        const tfl_optimizer *opt = (const tfl_optimizer *)o;
        if (o->free == free_obj && opt->name && !strcmp(opt->name, name)) return true;
    }
    return false;
}

/* An int64 scalar counter variable on CPU:0, zero, owned by opt (iterations, a step slot). */
tfl_tensor *tfl__opt_counter(tfl_optimizer *opt, const char *name)
{
    tfl_initializer zero = tfl_init_zeros();
    tfl_variable_opts vo = {.device = "CPU:0", .flags = TFL_VAR_NOT_TRAINABLE};
    tfl_tensor *c = tfl__variable_new_named(opt->ctx, name, TFL_DTYPE_INT64, 0, NULL, &zero, &vo);
    if (c) tfl__var_set_owner(c, opt);
    return c;
}

/* ---- create, free ------------------------------------------------------------------------------ */

/* The loss scaling's variables: the scale (float32, from opts.loss_scale) and two counters. */
static bool make_scaler(tfl_optimizer *opt)
{
    char name[192];
    snprintf(name, sizeof name, "%s/loss_scale", opt->name);
    tfl_initializer init = tfl_init_constant(opt->opts.loss_scale);
    tfl_variable_opts vo = {.device = "CPU:0", .flags = TFL_VAR_NOT_TRAINABLE};
    opt->loss_scale = tfl__variable_new_named(opt->ctx, name, TFL_DTYPE_FLOAT32, 0, NULL, &init, &vo);
    if (!opt->loss_scale) return false;
    tfl__var_set_owner(opt->loss_scale, opt);
    snprintf(name, sizeof name, "%s/loss_scale_steps", opt->name);
    opt->scale_steps = tfl__opt_counter(opt, name);
    snprintf(name, sizeof name, "%s/skipped_steps", opt->name);
    opt->skipped = opt->scale_steps ? tfl__opt_counter(opt, name) : NULL;
    return opt->skipped != NULL;
}

/* tfl_ctx_free's call for an optimizer still alive. */
static void free_obj(tfl__ctx_obj *obj)
{
    tfl_optimizer_free((tfl_optimizer *)obj);
}

tfl_optimizer *tfl_optimizer_new(tfl_ctx *ctx, const tfl_optimizer_opts *opts)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, opts, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_optimizer_new: the options are NULL (start from tfl_optimizer_defaults)");
    tfl_optimizer_opts o = *opts;
    if (o.formula == TFL_FORMULA_DEFAULT) /* the kind's own, as tfl_optimizer_defaults */
        o.formula = tfl_optimizer_defaults(o.kind, TFL_FORMULA_DEFAULT).formula;
    if (!check_opts(ctx, &o)) return NULL;
    tfl_optimizer *opt = tfl__obj_new(ctx, sizeof *opt, TFL__MAGIC_OPTIMIZER, free_obj);
    if (!opt) return NULL;
    opt->ctx = ctx;
    opt->opts = o;

    const char *base = o.name ? o.name : tfl__opt_kind_of(o.kind)->name;
    char name[160];
    snprintf(name, sizeof name, "%s", base);
    for (int i = 1; name_taken(ctx, name); i++) snprintf(name, sizeof name, "%s_%d", base, i);
    opt->name = tfl__strdup(ctx, name);
    opt->opts.name = opt->name;
    tfl__opt_kind_of(o.kind)->slots(&opt->opts, opt->slot_names, opt->slot_init);

    if (o.loss_scale > 0 && !o.loss_scale_growth_steps) opt->opts.loss_scale_growth_steps = 2000;
    char counter[192];
    snprintf(counter, sizeof counter, "%s/iterations", name);
    if (opt->name) opt->iterations = tfl__opt_counter(opt, counter);
    if (!opt->iterations || (o.loss_scale > 0 && !make_scaler(opt))) {
        tfl_optimizer_free(opt);
        return NULL;
    }
    return opt;
}

bool tfl__opt_alive(const tfl_optimizer *opt, const char *what)
{
    return tfl__obj_check(opt->ctx, &opt->obj, TFL__MAGIC_OPTIMIZER, what);
}

void tfl_optimizer_free(tfl_optimizer *opt)
{
    if (!opt || !tfl__opt_alive(opt, "tfl_optimizer_free")) return;
    tfl_ctx *ctx = opt->ctx;
    tfl__opt_truncate(opt, 0);
    tfl_tensor_release(opt->iterations);
    tfl_tensor_release(opt->loss_scale);
    tfl_tensor_release(opt->scale_steps);
    tfl_tensor_release(opt->skipped);
    tfl__host_free(ctx, opt->entries);
    tfl__host_free(ctx, opt->map);
    tfl__host_free(ctx, opt->list);
    tfl__host_free(ctx, opt->which);
    tfl__host_free(ctx, opt->grads);
    tfl__host_free(ctx, opt->norms);
    tfl__host_free(ctx, opt->minimize);
    tfl__host_free(ctx, opt->name);
    tfl__obj_retire(ctx, &opt->obj); /* unlinks; the record stays readable: a second free is MISUSE */
}

/* ---- accessors --------------------------------------------------------------------------------- */

/* An accessor's check: opt given and alive (a freed one records MISUSE). */
#define USABLE(opt, what) ((opt) && tfl__opt_alive(opt, what))

const char *tfl_optimizer_name(const tfl_optimizer *opt)
{
    return USABLE(opt, "tfl_optimizer_name") ? opt->name : NULL;
}

tfl_ctx *tfl_optimizer_ctx(const tfl_optimizer *opt) { return opt ? opt->ctx : NULL; }

const tfl_optimizer_opts *tfl_optimizer_options(const tfl_optimizer *opt)
{
    return USABLE(opt, "tfl_optimizer_options") ? &opt->opts : NULL;
}

tfl_tensor *tfl_optimizer_iterations(const tfl_optimizer *opt)
{
    return USABLE(opt, "tfl_optimizer_iterations") ? opt->iterations : NULL;
}

double tfl_optimizer_learning_rate(const tfl_optimizer *opt)
{
    if (!USABLE(opt, "tfl_optimizer_learning_rate")) return NAN;
    int64_t step = *(const int64_t *)tfl__tensor_data(opt->iterations);
    return tfl_schedule_value(&opt->opts.schedule, opt->opts.learning_rate, step);
}

double tfl_optimizer_loss_scale(const tfl_optimizer *opt)
{
    if (!USABLE(opt, "tfl_optimizer_loss_scale")) return NAN;
    return opt->loss_scale ? *(const float *)tfl__tensor_data(opt->loss_scale) : 1.0;
}

int64_t tfl_optimizer_skipped_steps(const tfl_optimizer *opt)
{
    if (!USABLE(opt, "tfl_optimizer_skipped_steps") || !opt->skipped) return 0;
    return *(const int64_t *)tfl__tensor_data(opt->skipped);
}

tfl_tensor *tfl_optimizer_slot(const tfl_optimizer *opt, const tfl_tensor *variable, const char *slot)
{
    if (!USABLE(opt, "tfl_optimizer_slot") || !variable || !slot) return NULL;
    TFL_CHECK_RET(opt->ctx, variable->refs > 0, NULL, TFL_MISUSE,
                  "%s: slot: the variable was already released (use after release)", opt->name);
    TFL_CHECK_RET(opt->ctx, variable->ctx == opt->ctx, NULL, TFL_MISUSE,
                  "%s: slot: the variable belongs to another context", opt->name);
    const tfl__opt_entry *e = tfl__opt_find(opt, variable->id);
    if (!e) return NULL;
    for (int i = 0; i < TFL_OPT_MAX_SLOTS; i++)
        if (opt->slot_names[i] && !strcmp(opt->slot_names[i], slot)) return e->slots[i];
    return !strcmp(slot, "step") ? e->step : NULL;
}

int64_t tfl_optimizer_variables(const tfl_optimizer *opt, tfl_tensor **out, int64_t cap)
{
    if (!USABLE(opt, "tfl_optimizer_variables")) return -1;
    int64_t n = 0;
    tfl_tensor *own[4] = {opt->iterations, opt->loss_scale, opt->scale_steps, opt->skipped};
    for (int i = 0; i < 4; i++)
        if (own[i]) {
            if (out && n < cap) out[n] = own[i];
            n++;
        }
    for (size_t i = 0; i < opt->n_entries; i++)
        for (int s = 0; s <= TFL_OPT_MAX_SLOTS; s++) {
            const tfl__opt_entry *e = &opt->entries[i];
            tfl_tensor *t = s < TFL_OPT_MAX_SLOTS ? e->slots[s] : e->step;
            if (!t) continue;
            if (out && n < cap) out[n] = t;
            n++;
        }
    return n;
}

/* ---- the slot table ------------------------------------------------------------------------------ */

static size_t hash_id(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id;
}

tfl__opt_entry *tfl__opt_find(const tfl_optimizer *opt, uint64_t var_id)
{
    if (!opt->map_cap) return NULL;
    size_t mask = opt->map_cap - 1;
    for (size_t i = hash_id(var_id) & mask;; i = (i + 1) & mask) {
        uint32_t e = opt->map[i];
        if (!e) return NULL;
        if (opt->entries[e - 1].var_id == var_id) return &opt->entries[e - 1];
    }
}

static void map_insert(tfl_optimizer *opt, size_t index)
{
    size_t mask = opt->map_cap - 1;
    size_t i = hash_id(opt->entries[index].var_id) & mask;
    while (opt->map[i]) i = (i + 1) & mask;
    opt->map[i] = (uint32_t)(index + 1);
}

/* Rebuilds the index with room for `need` entries at under half load. */
static bool map_rebuild(tfl_optimizer *opt, size_t need)
{
    size_t cap = opt->map_cap ? opt->map_cap : 16;
    while (cap < 2 * need) cap *= 2;
    if (cap != opt->map_cap) {
        uint32_t *map = tfl__host_alloc(opt->ctx, cap * sizeof *map, 64);
        if (!map) return false;
        tfl__host_free(opt->ctx, opt->map);
        opt->map = map;
        opt->map_cap = cap;
    }
    memset(opt->map, 0, opt->map_cap * sizeof *opt->map);
    for (size_t i = 0; i < opt->n_entries; i++) map_insert(opt, i);
    return true;
}

tfl__opt_entry *tfl__opt_add(tfl_optimizer *opt, uint64_t var_id)
{
    tfl_ctx *ctx = opt->ctx;
    if (opt->n_entries == opt->cap_entries) {
        size_t cap = opt->cap_entries ? 2 * opt->cap_entries : 16;
        tfl__opt_entry *e = tfl__grow(ctx, opt->entries, opt->n_entries * sizeof *e, cap * sizeof *e);
        TFL_CHECK_RET(ctx, e, NULL, TFL_RESOURCE_EXHAUSTED, "%s: out of memory for slots", opt->name);
        opt->entries = e;
        opt->cap_entries = cap;
    }
    if (2 * (opt->n_entries + 1) > opt->map_cap)
        TFL_CHECK_RET(ctx, map_rebuild(opt, opt->n_entries + 1), NULL, TFL_RESOURCE_EXHAUSTED,
                      "%s: out of memory for slots", opt->name);
    size_t i = opt->n_entries++;
    opt->entries[i] = (tfl__opt_entry){.var_id = var_id};
    map_insert(opt, i);
    return &opt->entries[i];
}

void tfl__opt_truncate(tfl_optimizer *opt, size_t keep)
{
    if (keep >= opt->n_entries) return;
    for (size_t i = keep; i < opt->n_entries; i++) {
        for (int s = 0; s < TFL_OPT_MAX_SLOTS; s++) tfl_tensor_release(opt->entries[i].slots[s]);
        tfl_tensor_release(opt->entries[i].step);
    }
    opt->n_entries = keep;
    if (opt->map_cap) map_rebuild(opt, keep); /* same capacity: cannot fail */
}
