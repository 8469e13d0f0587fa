/*
 * configs/build.c: what a valid config builds, through the public API of layers and optim only:
 * the model (shape inference first, errors at the offending layer's line), the optimizer, the
 * compile step, the datasets and the fit options.
 */
#include "configs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SEC(s, name) (tfl__rget((s), (name))->sec)
#define GETV(s, name) tfl__rget((s), (name))

static const rsec *section(const tfl_config *cfg, const char *name)
{
    return tfl__rget(cfg->res, name)->sec;
}

static bool valid_or_fail(tfl_config *cfg, const char *what)
{
    if (!cfg) return false;
    if (tfl_config_valid(cfg)) return true;
    tfl__set_error(cfg->ctx, TFL_FAILED_PRECONDITION,
                   "%s: the config '%s' is invalid (%zu problems)", what, cfg->file,
                   cfg->total_diags);
    return false;
}

/** Replaces the ctx's error by the same error located in the config ("file:l:c: path: ..."). */
static tfl_status relocate(tfl_config *cfg, const ynode *n, const char *path)
{
    tfl_error e = tfl_ctx_error(cfg->ctx);
    if (e.code == TFL_OK) return TFL_OK;
    char msg[TFL_MSG_SIZE];
    snprintf(msg, sizeof msg, "%s", e.message);
    tfl_status code = e.code;
    tfl_ctx_clear_error(cfg->ctx);
    if (n && n->line > 0)
        tfl__set_error(cfg->ctx, code, "%s:%d:%d: %s: %s", cfg->srcs[n->src], n->line, n->col, path,
                       msg);
    else
        tfl__set_error(cfg->ctx, code, "%s: %s: %s", n ? cfg->srcs[n->src] : cfg->file, path, msg);
    return code;
}

/* ---- layers -----------------------------------------------------------------------------------
 */

static tfl_initializer init_of(const rsec *s)
{
    tfl_initializer in = {.kind = (tfl_init_kind)s->kind};
    const rval *v;
    if ((v = GETV(s, "value"))) in.a = v->f;
    if ((v = GETV(s, "minval"))) in.a = v->f;
    if ((v = GETV(s, "maxval"))) in.b = v->f;
    if ((v = GETV(s, "mean"))) in.a = v->f;
    if ((v = GETV(s, "stddev"))) in.b = v->f;
    if ((v = GETV(s, "seed"))) in.seed = (uint64_t)v->i;
    return in;
}

/** The spec of a resolved layer entry; inits receives the initializers it points to. */
static tfl_layer_spec spec_of(const rsec *l, tfl_initializer inits[2])
{
    tfl_layer_spec s = {.kind = (tfl_layer_kind)(l->kind + 1)};
    const rval *v;
    if ((v = GETV(l, "name")) && v->set) s.name = v->s;
    if ((v = GETV(l, "units"))) s.units = v->i;
    if ((v = GETV(l, "filters"))) s.units = v->i;
    if ((v = GETV(l, "output_dim"))) s.units = v->i;
    if ((v = GETV(l, "input_dim"))) s.input_dim = v->i;
    if ((v = GETV(l, "sequence_length"))) s.sequence_length = v->i;
    if ((v = GETV(l, "num_heads"))) s.num_heads = (int)v->i;
    if ((v = GETV(l, "key_dim")) && v->set) s.key_dim = v->i;
    if ((v = GETV(l, "dropout"))) s.rate = v->f;
    if ((v = GETV(l, "use_causal_mask"))) s.causal = v->i != 0;
    if ((v = GETV(l, "activation"))) s.activation = (tfl_activation)v->i;
    if ((v = GETV(l, "use_bias"))) s.no_bias = !v->i;
    if ((v = GETV(l, "kernel_size")) || (v = GETV(l, "pool_size")))
        for (int i = 0; i < 2; i++)
            s.kernel_size[i] = (int)v->ints[i];
    if ((v = GETV(l, "strides")) && v->set)
        for (int i = 0; i < 2; i++)
            s.strides[i] = (int)v->ints[i];
    if ((v = GETV(l, "dilation_rate")))
        for (int i = 0; i < 2; i++)
            s.dilations[i] = (int)v->ints[i];
    if ((v = GETV(l, "padding"))) s.padding = (tfl_padding)v->i;
    if ((v = GETV(l, "target_shape"))) {
        s.target_rank = v->n;
        for (int i = 0; i < v->n; i++)
            s.target_shape[i] = v->ints[i];
    }
    if ((v = GETV(l, "axis"))) s.axis = (int)v->i; /* concatenate's */
    if ((v = GETV(l, "rate"))) s.rate = v->f;
    if ((v = GETV(l, "seed"))) s.seed = (uint64_t)v->i;
    if ((v = GETV(l, "momentum"))) s.momentum = v->f;
    if ((v = GETV(l, "epsilon"))) s.epsilon = v->f;
    if ((v = GETV(l, "center"))) s.no_center = !v->i;
    if ((v = GETV(l, "scale"))) s.no_scale = !v->i;
    if ((v = GETV(l, "kernel_initializer")) || (v = GETV(l, "embeddings_initializer"))) {
        inits[0] = init_of(v->sec);
        s.kernel_init = &inits[0];
    }
    if ((v = GETV(l, "bias_initializer"))) {
        inits[1] = init_of(v->sec);
        s.bias_init = &inits[1];
    }
    return s;
}

static void layer_path(const rsec *l, int i, char *buf, size_t size)
{
    snprintf(buf, size, "model.layers[%d].%s", i, l->def->kinds->names[l->kind]);
}

/* "(-1, 28, 28)" */
static void shape_text(int rank, const int64_t *shape, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < rank && o < size; d++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (o < size) snprintf(buf + o, size - o, ")");
}

/* A layer's shape error: a diagnostic with its input shapes (diag), or the ctx's error
 * relocated to the layer. */
static void layer_failed(tfl_config *cfg, const rsec *l, int i, bool diag, int n,
                         const int *ranks, const int64_t *const *shapes)
{
    char p[128];
    layer_path(l, i, p, sizeof p);
    if (!diag) {
        relocate(cfg, l->node, p);
        return;
    }
    char shp[512] = "";
    size_t o = 0;
    for (int k = 0; k < n && o < sizeof shp; k++) {
        char one[160];
        shape_text(ranks[k], shapes[k], one, sizeof one);
        o += (size_t)snprintf(shp + o, sizeof shp - o, "%s%s", k ? ", " : "", one);
    }
    tfl__diag_at(cfg, l->node, p, "%s (input shape%s %s)", tfl_ctx_error(cfg->ctx).message,
                 n > 1 ? "s" : "", shp);
    tfl_ctx_clear_error(cfg->ctx);
}

/* Adds layer i of the config (with its inputs in a graph) to model; made[] holds the layers
 * before it. */
static tfl_layer *add_layer(tfl_config *cfg, tfl_model *model, const rsec *l, int i,
                            tfl_layer **made, tfl_initializer *inits, bool probe)
{
    tfl_layer_spec spec = spec_of(l, inits);
    if (probe && tfl_layer_name_taken(cfg->ctx, spec.name))
        spec.name = NULL; /* the kind's name made unique: see make_model */
    const int *from = cfg->from[i];
    if (!cfg->graph || from[0] == 0) return tfl_model_add(model, &spec);
    tfl_layer *ins[TFL_MAX_LAYER_INPUTS];
    for (int k = 0; k < from[0]; k++)
        ins[k] = from[k + 1] < 0 ? tfl_model_input(model) : made[from[k + 1]];
    return tfl_model_add_from(model, &spec, from[0], ins);
}

/**
 * Makes the model's layers and runs shape inference from the input shape, layer by layer on
 * its inputs. With diag (load time), problems become diagnostics and the ctx's error is
 * cleared again, and a name of the config that a live model or layer of the context holds is
 * left out (the kind's name made unique instead): a config is valid whatever else lives in the
 * context (its names' form and uniqueness are rules of rules.c), and a live model of the same
 * names fails tfl_config_build_model only, with the name. Without diag, the ctx's error is relocated to the layer and kept. Returns the model or
 * NULL.
 */
static tfl_model *make_model(tfl_config *cfg, bool diag)
{
    const rsec *m = section(cfg, "model");
    const rval *name = GETV(m, "name"), *input = GETV(m, "input_shape"),
               *layers = GETV(m, "layers");
    const bool own_name = name->set && !(diag && tfl_model_name_taken(cfg->ctx, name->s));
    tfl_model *model = tfl_model_new(cfg->ctx, own_name ? name->s : NULL);
    if (!model) {
        if (diag) {
            tfl__diag_at(cfg, name->node, "model.name", "%s", tfl_ctx_error(cfg->ctx).message);
            tfl_ctx_clear_error(cfg->ctx);
        } else {
            relocate(cfg, name->node, "model.name");
        }
        return NULL;
    }
    int n = layers->n;
    int64_t in_shape[TFL_MAX_RANK];
    in_shape[0] = -1;
    for (int i = 0; i < input->n; i++)
        in_shape[i + 1] = input->ints[i];
    /* the layers keep pointers to their initializers until they are built: the config's arena
     * holds them (tfl_config_build_model builds the model before it returns) */
    tfl_initializer *inits = tfl__arena_alloc(&cfg->arena, 2 * sizeof *inits * (size_t)n);
    tfl_layer **made = tfl__calloc(cfg->ctx, sizeof *made * (size_t)n);
    int *ranks = made ? tfl__calloc(cfg->ctx, sizeof *ranks * (size_t)n) : NULL;
    int64_t(*shapes)[TFL_MAX_RANK] = ranks ? tfl__calloc(cfg->ctx, sizeof *shapes * (size_t)n)
                                           : NULL;
    bool ok = inits && shapes;
    for (int i = 0; i < n && ok; i++) {
        const rsec *l = layers->list[i];
        const int *from = cfg->from[i];
        int k = from[0] ? from[0] : 1, rs[TFL_MAX_LAYER_INPUTS];
        const int64_t *ss[TFL_MAX_LAYER_INPUTS];
        for (int q = 0; q < k; q++) {
            int j = from[q + 1];
            rs[q] = j < 0 ? input->n + 1 : ranks[j];
            ss[q] = j < 0 ? in_shape : shapes[j];
        }
        made[i] = add_layer(cfg, model, l, i, made, inits + 2 * i, diag);
        ranks[i] = made[i] ? tfl_layer_output_shape_n(made[i], k, rs, ss, shapes[i]) : -1;
        if (ranks[i] < 0) {
            layer_failed(cfg, l, i, diag, k, rs, ss);
            ok = false;
        }
    }
    if (ok) {
        int r = ranks[n - 1];
        cfg->outputs = r >= 2 && shapes[n - 1][r - 1] > 0 ? shapes[n - 1][r - 1] : 0;
    }
    tfl__host_free(cfg->ctx, made);
    tfl__host_free(cfg->ctx, ranks);
    tfl__host_free(cfg->ctx, shapes);
    if (!ok) {
        tfl_model_free(model);
        return NULL;
    }
    return model;
}

void tfl__config_check_shapes(tfl_config *cfg)
{
    /* an error the caller kept before loading is set aside, so that the layers' own messages
     * can be read, and kept again afterwards */
    tfl_error e = tfl_ctx_error(cfg->ctx);
    tfl_status code = e.code;
    char saved[TFL_MSG_SIZE];
    snprintf(saved, sizeof saved, "%s", e.message);
    tfl_ctx_clear_error(cfg->ctx);
    tfl_model *m = make_model(cfg, true);
    tfl_model_free(m);
    if (code != TFL_OK) {
        tfl_ctx_clear_error(cfg->ctx);
        tfl__set_error(cfg->ctx, code, "%s", saved);
    }
}

tfl_model *tfl_config_build_model(tfl_config *cfg)
{
    if (!valid_or_fail(cfg, "tfl_config_build_model")) return NULL;
    tfl_model *m = make_model(cfg, false);
    if (!m) return NULL;
    const rval *input = GETV(section(cfg, "model"), "input_shape");
    int64_t shape[TFL_MAX_RANK];
    shape[0] = -1;
    for (int i = 0; i < input->n; i++)
        shape[i + 1] = input->ints[i];
    if (tfl_model_build(m, input->n + 1, shape) != TFL_OK) {
        relocate(cfg, input->node, "model");
        tfl_model_free(m);
        return NULL;
    }
    return m;
}

/* ---- optimizer, compile ------------------------------------------------------------------------
 */

tfl_optimizer *tfl_config_build_optimizer(tfl_config *cfg)
{
    if (!valid_or_fail(cfg, "tfl_config_build_optimizer")) return NULL;
    const rsec *o = section(cfg, "optimizer");
    tfl_optimizer_opts opts = tfl__optim_defaults(o->kind, (int)GETV(o, "formula")->i);
    const rval *v;
    if ((v = GETV(o, "name")) && v->set) opts.name = v->s;
    for (const opt_field *f = tfl__optimizer_fields; f->key; f++) {
        /* skipped: a key the kind does not read, a null clip */
        if (!(v = GETV(o, f->key)) || (f->type == 'n' && !v->set)) continue;
        char *field = (char *)&opts + f->offset;
        if (f->type == 'b')
            *(bool *)field = v->i;
        else
            *(double *)field = v->f;
    }
    /* dynamic loss scaling: the key, or Keras's 2^15 under the float16 policy */
    const rsec *tr = section(cfg, "training");
    if ((v = GETV(o, "loss_scale")) && v->set)
        opts.loss_scale = v->f;
    else if (tfl__rget(tr, "precision")->i == TFL_PRECISION_FLOAT16)
        opts.loss_scale = 32768;
    if (opts.loss_scale > 0) opts.loss_scale_growth_steps = GETV(o, "loss_scale_growth_steps")->i;
    const rsec *s = SEC(o, "schedule");
    opts.schedule.kind = (tfl_schedule_kind)s->kind;
    if ((v = GETV(s, "decay_steps"))) opts.schedule.decay_steps = v->i;
    if ((v = GETV(s, "decay_rate"))) opts.schedule.decay_rate = v->f;
    if ((v = GETV(s, "alpha"))) opts.schedule.alpha = v->f;
    opts.schedule.warmup_steps = GETV(s, "warmup_steps")->i;
    opts.schedule.warmup_start_factor = GETV(s, "warmup_start_factor")->f;
    tfl_optimizer *opt = tfl_optimizer_new(cfg->ctx, &opts);
    if (!opt) relocate(cfg, o->node, "optimizer");
    return opt;
}

tfl_status tfl_config_compile(tfl_config *cfg, tfl_model *model, tfl_optimizer *optimizer)
{
    if (!valid_or_fail(cfg, "tfl_config_compile"))
        return cfg ? TFL_FAILED_PRECONDITION : TFL_INVALID_ARGUMENT;
    const rval *loss = GETV(cfg->res, "loss"), *metrics = GETV(cfg->res, "metrics");
    unsigned flags = 0;
    for (int i = 0; metrics->set && i < metrics->n; i++)
        if (metrics->ints[i] == 0) flags |= TFL_METRIC_ACCURACY;
    return tfl_model_compile(model, optimizer, (tfl_loss_kind)(loss->i + 1), flags);
}

/* ---- datasets -------------------------------------------------------------------------------- */

/* A `format: text` source: its part `subset` with data.validation_split. The model's outputs
 * must cover the vocabulary for the cross-entropies. */
static tfl_dataset *load_text(tfl_config *cfg, const rsec *s, tfl_text_subset subset)
{
    const rval *stride = GETV(s, "stride");
    tfl_text_opts o = {.context_length = GETV(s, "context_length")->i,
                       .stride = stride->set ? stride->i : 0,
                       .tokens = (tfl_text_tokens)GETV(s, "tokens")->i,
                       .subset = subset};
    if (subset != TFL_TEXT_ALL) o.validation_split = GETV(section(cfg, "data"), "validation_split")->f;
    tfl_dataset *ds = tfl_dataset_from_text(cfg->ctx, GETV(s, "path")->s, &o);
    int64_t loss = GETV(cfg->res, "loss")->i;
    int32_t v = ds ? tfl_dataset_num_classes(ds) : 0;
    if (ds && (loss == 0 || loss == 1) && cfg->outputs > 1 && cfg->outputs < v) {
        tfl__set_error(cfg->ctx, TFL_INVALID_ARGUMENT,
                       "the text's vocabulary has %d tokens, but the model has %lld outputs",
                       (int)v, (long long)cfg->outputs);
        tfl_dataset_free(ds);
        ds = NULL;
    }
    return ds;
}

static tfl_dataset *load_source(tfl_config *cfg, const rsec *s, const char *path, float scale,
                                float offset, tfl_text_subset subset)
{
    tfl_dataset_opts o = {.scale = scale, .offset = offset};
    /* class labels of the cross-entropies over several outputs are checked against the
     * model's outputs as they are read, so a bad one names its file and line */
    int64_t loss = GETV(cfg->res, "loss")->i;
    if ((loss == 0 || loss == 1) && cfg->outputs > 1 && cfg->outputs <= INT32_MAX)
        o.num_classes = (int32_t)cfg->outputs;
    tfl_dataset *ds;
    if (s->kind == 2) {
        ds = load_text(cfg, s, subset);
    } else if (s->kind == 0) {
        const rval *labels = GETV(s, "labels");
        ds = tfl_dataset_from_idx(cfg->ctx, GETV(s, "images")->s, labels->set ? labels->s : NULL,
                                  &o);
    } else {
        const rval *ln = GETV(s, "label_name");
        o.header = GETV(s, "header")->i;
        o.label_column = (int)GETV(s, "label_column")->i;
        o.label_name = ln->set ? ln->s : NULL;
        o.no_labels = GETV(s, "no_labels")->i;
        o.label_kind = (tfl_label_kind)GETV(s, "label_kind")->i;
        o.label_count = (int)GETV(s, "label_count")->i;
        o.delimiter = GETV(s, "delimiter")->s[0];
        ds = tfl_dataset_from_csv(cfg->ctx, GETV(s, "path")->s, &o);
    }
    if (!ds) relocate(cfg, s->node, path);
    return ds;
}

void tfl_config_datasets_free(tfl_config_datasets *data)
{
    if (!data) return;
    tfl_dataset_free(data->train);
    tfl_dataset_free(data->validation);
    tfl_dataset_free(data->test);
    memset(data, 0, sizeof *data);
}

/* The examples have model.input_shape (no error kept). */
static bool shape_fits(tfl_config *cfg, tfl_dataset *ds)
{
    const rval *input = GETV(section(cfg, "model"), "input_shape");
    int r = tfl_dataset_feature_rank(ds);
    const int64_t *sh = tfl_dataset_feature_shape(ds);
    bool same = r == input->n;
    for (int i = 0; same && i < r; i++)
        same = sh[i] == input->ints[i];
    return same;
}

static bool shape_matches(tfl_config *cfg, tfl_dataset *ds, const rsec *src, const char *path)
{
    const rval *input = GETV(section(cfg, "model"), "input_shape");
    int r = tfl_dataset_feature_rank(ds);
    const int64_t *sh = tfl_dataset_feature_shape(ds);
    bool same = r == input->n;
    for (int i = 0; same && i < r; i++)
        same = sh[i] == input->ints[i];
    if (same) return true;
    char a[128] = "(", b[128] = "[";
    size_t oa = 1, ob = 1;
    for (int i = 0; i < r && oa < sizeof a; i++)
        oa += (size_t)snprintf(a + oa, sizeof a - oa, "%s%lld", i ? ", " : "", (long long)sh[i]);
    for (int i = 0; i < input->n && ob < sizeof b; i++)
        ob += (size_t)snprintf(b + ob, sizeof b - ob, "%s%lld", i ? ", " : "",
                               (long long)input->ints[i]);
    if (oa < sizeof a) snprintf(a + oa, sizeof a - oa, ")");
    if (ob < sizeof b) snprintf(b + ob, sizeof b - ob, "]");
    tfl__set_error(cfg->ctx, TFL_INVALID_ARGUMENT,
                   "examples of shape %s, but model.input_shape is %s", a, b);
    relocate(cfg, src->node, path);
    return false;
}

tfl_status tfl_config_build_datasets(tfl_config *cfg, tfl_config_datasets *out)
{
    if (!out) {
        if (cfg)
            tfl__set_error(cfg->ctx, TFL_INVALID_ARGUMENT, "tfl_config_build_datasets: NULL out");
        return TFL_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    if (!valid_or_fail(cfg, "tfl_config_build_datasets"))
        return cfg ? TFL_FAILED_PRECONDITION : TFL_INVALID_ARGUMENT;
    const rsec *d = section(cfg, "data");
    const rval *sc = GETV(d, "scale");
    float scale = sc->set ? (float)sc->f : 0.0f, offset = (float)GETV(d, "offset")->f;
    tfl_config_datasets got = {0};
    const char *names[] = {"train", "validation", "test"};
    tfl_dataset **slots[] = {&got.train, &got.validation, &got.test};
    bool text_split = GETV(d, "train")->sec->kind == 2 && GETV(d, "validation_split")->f > 0;
    for (int i = 0; i < 3; i++) {
        const rval *v = GETV(d, names[i]);
        if (!v->set) continue;
        char p[32];
        snprintf(p, sizeof p, "data.%s", names[i]);
        *slots[i] = load_source(cfg, v->sec, p, scale, offset,
                                i == 0 && text_split ? TFL_TEXT_TRAINING : TFL_TEXT_ALL);
        if (!*slots[i] || !shape_matches(cfg, *slots[i], v->sec, p)) goto fail;
    }
    double split = GETV(d, "validation_split")->f;
    if (text_split) { /* the end of the corpus, by position */
        const rsec *tr = GETV(d, "train")->sec;
        tfl_dataset_free(got.validation);
        got.validation = load_source(cfg, tr, "data.train", scale, offset, TFL_TEXT_VALIDATION);
        if (!got.validation) goto fail;
    } else if (split > 0) {
        int64_t n = tfl_dataset_size(got.train);
        int64_t n_val = (int64_t)floor((double)n * split);
        tfl_dataset *first = NULL, *rest = NULL;
        if (tfl_dataset_split(got.train, n - n_val, &first, &rest) != TFL_OK) goto fail;
        tfl_dataset_free(got.train);
        got.train = first;
        got.validation = rest;
    }
    if (GETV(d, "standardize")->i) {
        int64_t fs = tfl_dataset_feature_size(got.train);
        float *mean = tfl__host_alloc(cfg->ctx, sizeof(float) * (size_t)fs * 2, 16);
        if (!mean) {
            tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED, "standardize: out of memory");
            goto fail;
        }
        float *std = mean + fs;
        tfl_status st = tfl_dataset_moments(got.train, mean, std);
        for (int i = 0; i < 3 && st == TFL_OK; i++)
            if (*slots[i]) st = tfl_dataset_set_normalization(*slots[i], scale, offset, mean, std);
        tfl__host_free(cfg->ctx, mean);
        if (st != TFL_OK) goto fail;
    }
    *out = got;
    return TFL_OK;
fail:
    tfl_config_datasets_free(&got);
    tfl_status st = tfl_ctx_status(cfg->ctx);
    return st != TFL_OK ? st : TFL_INTERNAL;
}

tfl_status tfl_config_fit_opts(const tfl_config *cfg, const tfl_config_datasets *data,
                               tfl_fit_opts *out)
{
    if (!cfg || !out) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(cfg->ctx, tfl_config_valid(cfg), TFL_FAILED_PRECONDITION,
              "tfl_config_fit_opts: the config '%s' is invalid", cfg->file);
    const rsec *t = section(cfg, "training"), *d = section(cfg, "data");
    memset(out, 0, sizeof *out);
    out->epochs = (int)GETV(t, "epochs")->i;
    out->batch_size = GETV(t, "batch_size")->i;
    out->drop_remainder = GETV(t, "drop_remainder")->i;
    out->seed = (uint64_t)GETV(t, "seed")->i;
    out->shuffle = GETV(d, "shuffle")->i;
    out->step_graphs = GETV(t, "step_graphs")->i;
    out->validation = data ? data->validation : NULL;
    const rval *se = GETV(t, "sync_every");
    if (se->set) {
        out->sync_every = se->i;
    } else { /* every step that logs or checkpoints is a read, the others are not */
        const rsec *lg = section(cfg, "logging"), *ck = section(cfg, "checkpoint");
        int64_t v[3] = {GETV(lg, "log_interval")->i, GETV(lg, "every_steps")->i,
                        GETV(ck, "every_steps")->i};
        int64_t g = 0;
        for (int i = 0; i < 3; i++)
            for (int64_t a = v[i]; a > 0;) { /* g = gcd(g, a) */
                int64_t r = g % a;
                g = a;
                a = r;
            }
        out->sync_every = g > 0 ? g : INT64_MAX; /* none: the epochs' ends only */
    }
    return TFL_OK;
}

/* ---- examples to predict ------------------------------------------------------------------------ */

tfl_dataset *tfl_config_load_examples(tfl_config *cfg, const tfl_config_datasets *data,
                                      const char *path)
{
    if (!cfg) return NULL;
    TFL_CHECK_RET(cfg->ctx, path && data && data->train, NULL, TFL_INVALID_ARGUMENT,
                  "tfl_config_load_examples: %s is NULL",
                  !path ? "the path" : !data ? "data" : "data->train");
    if (!valid_or_fail(cfg, "tfl_config_load_examples")) return NULL;
    const rsec *d = section(cfg, "data");
    const rsec *src = GETV(d, "train")->sec;
    const rval *sc = GETV(d, "scale");
    tfl_dataset_opts o = {.scale = sc->set ? (float)sc->f : 0.0f,
                          .offset = (float)GETV(d, "offset")->f};
    tfl_dataset *ds;
    if (src->kind == 2) { /* windows of the file, laid out as the training text's */
        const rval *stride = GETV(src, "stride");
        ds = tfl_dataset_from_text(cfg->ctx, path, &(tfl_text_opts){
            .context_length = GETV(src, "context_length")->i,
            .stride = stride->set ? stride->i : 0,
            .tokens = (tfl_text_tokens)GETV(src, "tokens")->i});
    } else if (src->kind == 0) {
        ds = tfl_dataset_from_idx(cfg->ctx, path, NULL, &o);
    } else {
        o.header = GETV(src, "header")->i;
        o.delimiter = GETV(src, "delimiter")->s[0];
        ds = NULL;
        if (!GETV(src, "no_labels")->i && GETV(src, "label_kind")->i == TFL_LABEL_CLASS) {
            /* a file laid out as the training data, its label column included: the labels
             * are read (not taken as inputs) and the examples are predicted all the same */
            const rval *ln = GETV(src, "label_name");
            tfl_dataset_opts lo = o;
            lo.label_column = (int)GETV(src, "label_column")->i;
            lo.label_name = ln->set ? ln->s : NULL;
            bool clean = tfl_ctx_status(cfg->ctx) == TFL_OK;
            ds = tfl_dataset_from_csv(cfg->ctx, path, &lo);
            if (ds && !shape_fits(cfg, ds)) {
                tfl_dataset_free(ds);
                ds = NULL;
            }
            if (!ds && clean) tfl_ctx_clear_error(cfg->ctx); /* read as features only, below */
        }
        if (!ds) {
            o.no_labels = true;
            ds = tfl_dataset_from_csv(cfg->ctx, path, &o);
        }
    }
    if (!ds) return NULL;
    if (!shape_matches(cfg, ds, src, "data.train")) {
        tfl_dataset_free(ds);
        return NULL;
    }
    if (GETV(d, "standardize")->i) { /* the training examples' moments, as for training */
        int64_t fs = tfl_dataset_feature_size(data->train);
        float *mean = tfl__host_alloc(cfg->ctx, sizeof(float) * (size_t)fs * 2, 16);
        tfl_status st = mean ? tfl_dataset_moments(data->train, mean, mean + fs)
                             : tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED,
                                              "tfl_config_load_examples: out of memory");
        if (st == TFL_OK) st = tfl_dataset_set_normalization(ds, o.scale, o.offset, mean, mean + fs);
        if (mean) tfl__host_free(cfg->ctx, mean);
        if (st != TFL_OK) {
            tfl_dataset_free(ds);
            return NULL;
        }
    }
    return ds;
}
