/*
 * layers/layer.c: what every layer shares: specs checked and completed with Keras's
 * defaults, the variables' bookkeeping (counts, release) and the public entry points. The
 * kinds' names, unique names and the variable list are in layer_base.c; each kind's shapes,
 * variables and forward pass in layer_call.c.
 */
#include "layers_internal.h"

#include <math.h>


bool tfl_layer_name_taken(tfl_ctx *ctx, const char *name)
{
    return ctx && name && tfl__layer_name_taken(ctx, name, true);
}

bool tfl_model_name_taken(tfl_ctx *ctx, const char *name)
{
    return ctx && name && tfl__layer_name_taken(ctx, name, false);
}

/* ---- specs -------------------------------------------------------------------------------------- */

static bool pair_ok(const int v[2], int least) { return v[0] >= least && v[1] >= least; }

/* Checks spec and fills the defaults into *s. */
/* The spec fields each kind reads; a field set for a kind that ignores it is an error (as
 * an optimizer option its kind does not have). */
enum {
    F_ACT = 1 << 0, F_UNITS = 1 << 1, F_INPUT_DIM = 1 << 2, F_NO_BIAS = 1 << 3,
    F_KSIZE = 1 << 4, F_STRIDES = 1 << 5, F_DILATIONS = 1 << 6, F_PADDING = 1 << 7,
    F_TARGET = 1 << 8, F_RATE = 1 << 9, F_SEED = 1 << 10, F_NORM = 1 << 11, F_KINIT = 1 << 12,
    F_BINIT = 1 << 13, F_MOMENTUM = 1 << 14, F_SEQLEN = 1 << 15, F_HEADS = 1 << 16,
    F_AXIS = 1 << 17,
};
static const unsigned kind_fields[TFL_LAYER_KIND_END] = {
    [TFL_LAYER_DENSE] = F_ACT | F_UNITS | F_NO_BIAS | F_KINIT | F_BINIT,
    [TFL_LAYER_CONV2D] = F_ACT | F_UNITS | F_NO_BIAS | F_KSIZE | F_STRIDES | F_DILATIONS |
                         F_PADDING | F_KINIT | F_BINIT,
    [TFL_LAYER_MAX_POOL2D] = F_KSIZE | F_STRIDES | F_PADDING,
    [TFL_LAYER_AVG_POOL2D] = F_KSIZE | F_STRIDES | F_PADDING,
    [TFL_LAYER_RESHAPE] = F_TARGET,
    [TFL_LAYER_DROPOUT] = F_RATE | F_SEED,
    [TFL_LAYER_BATCH_NORM] = F_MOMENTUM | F_NORM,
    [TFL_LAYER_ACTIVATION] = F_ACT,
    [TFL_LAYER_EMBEDDING] = F_UNITS | F_INPUT_DIM | F_KINIT,
    [TFL_LAYER_LAYER_NORM] = F_NORM,
    [TFL_LAYER_POSITION_EMBEDDING] = F_SEQLEN | F_KINIT,
    [TFL_LAYER_MULTI_HEAD_ATTENTION] = F_HEADS | F_RATE | F_SEED | F_NO_BIAS | F_KINIT | F_BINIT,
    [TFL_LAYER_CONCATENATE] = F_AXIS,
};

/* The first field set in s that its kind does not read, or NULL. */
static const char *unused_field(const tfl_layer_spec *s)
{
    const unsigned used = kind_fields[s->kind];
    const struct {
        unsigned flag;
        bool set;
        const char *name;
    } fields[] = {
        {F_ACT, s->activation != TFL_ACT_LINEAR, "activation"},
        {F_UNITS, s->units != 0, "units"},
        {F_INPUT_DIM, s->input_dim != 0, "input_dim"},
        {F_NO_BIAS, s->no_bias, "no_bias"},
        {F_KSIZE, s->kernel_size[0] || s->kernel_size[1], "kernel_size"},
        {F_STRIDES, s->strides[0] || s->strides[1], "strides"},
        {F_DILATIONS, s->dilations[0] || s->dilations[1], "dilations"},
        {F_PADDING, s->padding != TFL_PADDING_VALID, "padding"},
        {F_TARGET, s->target_rank != 0, "target_rank"},
        {F_RATE, s->rate != 0, "rate"},
        {F_SEED, s->seed != 0, "seed"},
        {F_MOMENTUM, s->momentum != 0, "momentum"},
        {F_SEQLEN, s->sequence_length != 0, "sequence_length"},
        {F_HEADS, s->num_heads != 0 || s->key_dim != 0 || s->causal, "num_heads/key_dim/causal"},
        {F_NORM, s->epsilon != 0 || s->no_center || s->no_scale, "epsilon/no_center/no_scale"},
        {F_KINIT, s->kernel_init != NULL, "kernel_init"},
        {F_BINIT, s->bias_init != NULL, "bias_init"},
        {F_AXIS, s->axis != 0, "axis"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].set && !(used & fields[i].flag)) return fields[i].name;
    return NULL;
}

static bool complete_spec(tfl_ctx *ctx, const tfl_layer_spec *spec, tfl_layer_spec *s)
{
    const char *who = "tfl_layer_new";
    *s = *spec;
    TFL_CHECK_RET(ctx, s->kind > 0 && s->kind < TFL_LAYER_KIND_END, false, TFL_INVALID_ARGUMENT,
                  "%s: unknown layer kind %d", who, (int)s->kind);
    const char *k = tfl_layer_kind_name(s->kind);
    const char *unused = unused_field(s);
    TFL_CHECK_RET(ctx, !unused, false, TFL_INVALID_ARGUMENT, "%s: %s has no option '%s'", who, k,
                  unused);
    TFL_CHECK_RET(ctx, (unsigned)s->activation < TFL_ACT_END, false, TFL_INVALID_ARGUMENT,
                  "%s: %s: unknown activation %d", who, k, (int)s->activation);
    TFL_CHECK_RET(ctx, s->padding == TFL_PADDING_VALID || s->padding == TFL_PADDING_SAME, false,
                  TFL_INVALID_ARGUMENT, "%s: %s: unknown padding %d (VALID or SAME)", who, k,
                  (int)s->padding);
    switch (s->kind) {
    case TFL_LAYER_DENSE:
    case TFL_LAYER_EMBEDDING:
        TFL_CHECK_RET(ctx, s->units >= 1, false, TFL_INVALID_ARGUMENT,
                      "%s: %s needs units >= 1, got %lld", who, k, (long long)s->units);
        TFL_CHECK_RET(ctx, s->kind != TFL_LAYER_EMBEDDING || s->input_dim >= 1, false,
                      TFL_INVALID_ARGUMENT, "%s: Embedding needs input_dim >= 1, got %lld", who,
                      (long long)s->input_dim);
        break;
    case TFL_LAYER_CONV2D:
        TFL_CHECK_RET(ctx, s->units >= 1, false, TFL_INVALID_ARGUMENT,
                      "%s: Conv2D needs filters (units) >= 1, got %lld", who, (long long)s->units);
        TFL_CHECK_RET(ctx, pair_ok(s->kernel_size, 1), false, TFL_INVALID_ARGUMENT,
                      "%s: Conv2D needs kernel_size >= 1, got (%d, %d)", who, s->kernel_size[0],
                      s->kernel_size[1]);
        TFL_CHECK_RET(ctx, pair_ok(s->strides, 0) && pair_ok(s->dilations, 0), false,
                      TFL_INVALID_ARGUMENT, "%s: Conv2D strides and dilations must be >= 1 "
                      "(0 means 1), got strides (%d, %d), dilations (%d, %d)", who,
                      s->strides[0], s->strides[1], s->dilations[0], s->dilations[1]);
        for (int i = 0; i < 2; i++) {
            if (!s->strides[i]) s->strides[i] = 1;
            if (!s->dilations[i]) s->dilations[i] = 1;
        }
        break;
    case TFL_LAYER_MAX_POOL2D:
    case TFL_LAYER_AVG_POOL2D:
        TFL_CHECK_RET(ctx, pair_ok(s->kernel_size, 0) && pair_ok(s->strides, 0), false,
                      TFL_INVALID_ARGUMENT, "%s: %s pool size and strides must be >= 1 (0: "
                      "default), got pool (%d, %d), strides (%d, %d)", who, k, s->kernel_size[0],
                      s->kernel_size[1], s->strides[0], s->strides[1]);
        for (int i = 0; i < 2; i++) {
            if (!s->kernel_size[i]) s->kernel_size[i] = 2;
            if (!s->strides[i]) s->strides[i] = s->kernel_size[i];
        }
        break;
    case TFL_LAYER_RESHAPE: {
        TFL_CHECK_RET(ctx, s->target_rank >= 0 && s->target_rank < TFL_MAX_RANK, false,
                      TFL_INVALID_ARGUMENT, "%s: Reshape's target_rank must be in [0, %d], "
                      "got %d", who, TFL_MAX_RANK - 1, s->target_rank);
        int unknown = 0;
        for (int i = 0; i < s->target_rank; i++) {
            int64_t d = s->target_shape[i];
            TFL_CHECK_RET(ctx, d >= 1 || d == -1, false, TFL_INVALID_ARGUMENT,
                          "%s: Reshape's target_shape[%d] must be >= 1 or -1, got %lld", who, i,
                          (long long)d);
            unknown += d == -1;
        }
        TFL_CHECK_RET(ctx, unknown <= 1, false, TFL_INVALID_ARGUMENT,
                      "%s: Reshape's target_shape may hold one -1, got %d", who, unknown);
        break;
    }
    case TFL_LAYER_DROPOUT:
        TFL_CHECK_RET(ctx, s->rate >= 0 && s->rate < 1, false, TFL_INVALID_ARGUMENT,
                      "%s: Dropout's rate must be in [0, 1), got %g", who, s->rate);
        break;
    case TFL_LAYER_BATCH_NORM:
        TFL_CHECK_RET(ctx, s->momentum >= 0 && s->momentum < 1, false, TFL_INVALID_ARGUMENT,
                      "%s: BatchNormalization's momentum must be in [0, 1) (0: 0.99), got %g",
                      who, s->momentum);
        TFL_CHECK_RET(ctx, s->epsilon >= 0 && isfinite(s->epsilon), false, TFL_INVALID_ARGUMENT,
                      "%s: BatchNormalization's epsilon must be > 0 (0: 1e-3), got %g", who,
                      s->epsilon);
        if (s->momentum == 0) s->momentum = 0.99;
        if (s->epsilon == 0) s->epsilon = 1e-3;
        break;
    case TFL_LAYER_MULTI_HEAD_ATTENTION:
        TFL_CHECK_RET(ctx, s->num_heads >= 1 && s->key_dim >= 0, false, TFL_INVALID_ARGUMENT,
                      "%s: MultiHeadAttention needs num_heads >= 1 and key_dim >= 1 (0: the "
                      "features / num_heads), got %d and %lld", who, s->num_heads,
                      (long long)s->key_dim);
        TFL_CHECK_RET(ctx, s->rate >= 0 && s->rate < 1, false, TFL_INVALID_ARGUMENT,
                      "%s: MultiHeadAttention's dropout rate must be in [0, 1), got %g", who,
                      s->rate);
        break;
    case TFL_LAYER_POSITION_EMBEDDING:
        TFL_CHECK_RET(ctx, s->sequence_length >= 1, false, TFL_INVALID_ARGUMENT,
                      "%s: PositionEmbedding needs sequence_length >= 1, got %lld", who,
                      (long long)s->sequence_length);
        break;
    case TFL_LAYER_LAYER_NORM:
        TFL_CHECK_RET(ctx, s->epsilon >= 0 && isfinite(s->epsilon), false, TFL_INVALID_ARGUMENT,
                      "%s: LayerNormalization's epsilon must be > 0 (0: 1e-3), got %g", who,
                      s->epsilon);
        if (s->epsilon == 0) s->epsilon = 1e-3;
        break;
    case TFL_LAYER_CONCATENATE:
        if (s->axis == 0) s->axis = -1; /* the batch axis is never joined: 0 is the default */
        break;
    default:
        break;
    }
    return true;
}

/* ---- create, free ---------------------------------------------------------------------------- */

static void layer_free_obj(tfl__ctx_obj *obj)
{
    tfl_layer *l = (tfl_layer *)obj;
    if (l->owner) l->owner->obj.free(&l->owner->obj); /* tfl_model_free: l with its siblings */
    else tfl_layer_free(l);
}

tfl_layer *tfl_layer_new(tfl_ctx *ctx, const tfl_layer_spec *spec)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, spec, NULL, TFL_INVALID_ARGUMENT, "tfl_layer_new: the spec is NULL");
    tfl_layer_spec s;
    if (!complete_spec(ctx, spec, &s)) return NULL;
    char name[TFL__NAME_MAX];
    if (s.name) {
        if (!tfl__check_name(ctx, "tfl_layer_new", s.name, true)) return NULL;
        snprintf(name, sizeof name, "%s", s.name);
    } else {
        tfl__unique_name(ctx, tfl__layer_kind_base(s.kind), true, name);
    }
    tfl_layer *l = tfl__obj_new(ctx, sizeof *l, TFL__MAGIC_LAYER, layer_free_obj);
    if (!l) return NULL;
    l->ctx = ctx;
    l->spec = s;
    memcpy(l->name, name, sizeof name);
    l->spec.name = l->name;
    /* the spec is copied, initializers included: the caller's may be gone by the build */
    const tfl_initializer *given[2] = {s.kernel_init, s.bias_init};
    const tfl_initializer **kept[2] = {&l->spec.kernel_init, &l->spec.bias_init};
    for (int i = 0; i < 2; i++) {
        if (!given[i]) continue;
        l->init[i] = *given[i];
        if (l->init[i].kind == TFL_INIT_TENSOR && l->init[i].tensor)
            tfl_tensor_retain((tfl_tensor *)l->init[i].tensor);
        *kept[i] = &l->init[i];
    }
    l->in_feature = -1;
    return l;
}

void tfl_layer_free(tfl_layer *l)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_free")) return;
    if (l->owner) tfl__model_take_out(l->owner, l);
    for (int i = 0; i < l->n_vars; i++) tfl_tensor_release(l->vars[i]);
    for (int i = 0; i < 2; i++)
        if (l->init[i].kind == TFL_INIT_TENSOR && l->init[i].tensor)
            tfl_tensor_release((tfl_tensor *)l->init[i].tensor);
    tfl__obj_retire(l->ctx, &l->obj); /* unlinks; the record stays readable: a second free is MISUSE */
}

/* ---- accessors ------------------------------------------------------------------------------- */

const char *tfl_layer_name(const tfl_layer *l)
{
    return l && tfl__layer_alive(l, "tfl_layer_name") ? l->name : NULL;
}
uint64_t tfl_layer_rng_calls(const tfl_layer *l)
{
    return l && tfl__layer_alive(l, "tfl_layer_rng_calls") && l->spec.kind == TFL_LAYER_DROPOUT
               ? l->calls
               : 0;
}
tfl_status tfl_layer_set_rng_calls(tfl_layer *l, uint64_t calls)
{
    if (!l) return TFL_INVALID_ARGUMENT;
    if (!tfl__layer_alive(l, "tfl_layer_set_rng_calls")) return TFL_MISUSE;
    TFL_CHECK(l->ctx, l->spec.kind == TFL_LAYER_DROPOUT, TFL_INVALID_ARGUMENT,
              "tfl_layer_set_rng_calls: %s is not a Dropout layer", l->name);
    l->calls = calls;
    return TFL_OK;
}
tfl_layer_kind tfl_layer_kind_of(const tfl_layer *l)
{
    return l && tfl__layer_alive(l, "tfl_layer_kind_of") ? l->spec.kind : 0;
}

static bool keep(const tfl_tensor *v, tfl_var_filter f)
{
    if (f == TFL_VARS_ALL) return true;
    return tfl_variable_trainable(v) == (f == TFL_VARS_TRAINABLE);
}

int tfl_layer_variables(const tfl_layer *l, tfl_var_filter filter, tfl_tensor **out, int cap)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_variables")) return 0;
    int n = 0;
    for (int i = 0; i < l->n_vars; i++) {
        if (!keep(l->vars[i], filter)) continue;
        if (n < cap && out) out[n] = l->vars[i];
        n++;
    }
    return n;
}

int64_t tfl_layer_param_count(const tfl_layer *l, tfl_var_filter filter)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_param_count")) return 0;
    int64_t n = 0;
    for (int i = 0; i < l->n_vars; i++)
        if (keep(l->vars[i], filter)) n += tfl_tensor_numel(l->vars[i]);
    return n;
}

/* ---- build, call ------------------------------------------------------------------------------ */

int tfl_layer_output_shape(tfl_layer *l, int rank, const int64_t *shape, int64_t *out)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_output_shape")) return -1;
    TFL_CHECK_RET(l->ctx, rank >= 0 && rank <= TFL_MAX_RANK && (shape || rank == 0) && out, -1,
                  TFL_INVALID_ARGUMENT, "%s: a shape of rank %d (0..%d) and an output array "
                  "are needed", l->name, rank, TFL_MAX_RANK);
    int r = tfl__layer_shape(l, rank, shape, out);
    if (r >= 0 && !l->built && !tfl__layer_vars_fit(l, rank, shape)) return -1;
    return r;
}

tfl_status tfl_layer_build(tfl_layer *l, int rank, const int64_t *shape)
{
    if (!l) return TFL_INVALID_ARGUMENT;
    if (!tfl__layer_alive(l, "tfl_layer_build")) return TFL_MISUSE;
    int64_t out[TFL_MAX_RANK];
    if (tfl_layer_output_shape(l, rank, shape, out) < 0) return tfl_ctx_status(l->ctx);
    if (l->built) return TFL_OK;
    tfl_status st = tfl__layer_make_vars(l, rank, shape);
    l->built = true;
    if (st != TFL_OK) tfl__layer_unbuild(l);
    return st;
}

void tfl__layer_unbuild(tfl_layer *l)
{
    for (int i = 0; i < l->n_vars; i++) tfl_tensor_release(l->vars[i]);
    l->n_vars = 0;
    memset(l->vars, 0, sizeof l->vars);
    l->in_feature = -1;
    l->built = false;
}

tfl_tensor *tfl_layer_call(tfl_layer *l, const tfl_tensor *x, bool training)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_call")) return NULL;
    tfl_ctx *ctx = l->ctx;
    if (!x) {
        TFL_CHECK_RET(ctx, tfl_ctx_status(ctx) != TFL_OK, NULL, TFL_INVALID_ARGUMENT,
                      "%s: the input is NULL", l->name);
        return NULL;
    }
    TFL_CHECK_RET(ctx, x->refs > 0, NULL, TFL_MISUSE,
                  "%s: the input was already released (use after release)", l->name);
    TFL_CHECK_RET(ctx, x->ctx == ctx, NULL, TFL_MISUSE,
                  "%s: the input belongs to another context", l->name);
    if (!tfl__layer_check_dtype(l, x)) return NULL; /* before any variable is made */
    int rank = tfl_tensor_rank(x);
    int64_t out[TFL_MAX_RANK];
    if (!l->built) {
        if (tfl_layer_build(l, rank, tfl_tensor_shape(x)) != TFL_OK) return NULL;
    } else if (tfl__layer_shape(l, rank, tfl_tensor_shape(x), out) < 0) {
        return NULL;
    }
    return tfl__in_frame_forward(l, x, training);
}

/* Runs the forward pass in a frame of its own, so that its temporaries go when it returns
 * even without a frame open; the result moves to the caller's frame (or to the caller). */
tfl_tensor *tfl__in_frame_forward(tfl_layer *l, const tfl_tensor *x, bool training)
{
    if (tfl_frame_push(l->ctx) != TFL_OK) return NULL;
    tfl_tensor *y = tfl_keep(tfl__layer_forward(l, x, training));
    tfl_frame_pop(l->ctx);
    return y ? tfl__frame_adopt(l->ctx, y) : NULL;
}
