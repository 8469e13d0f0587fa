/*
 * layers/model.c: the model (layers in order, owned, each with its inputs: model_graph.c),
 * its build, call, variable lists and summary table; compile and the losses per example.
 */
#include "layers_internal.h"

#include <stdarg.h>

/* ---- create, free ------------------------------------------------------------------------------ */

static void model_free_obj(tfl__ctx_obj *obj) { tfl_model_free((tfl_model *)obj); }

tfl_model *tfl_model_new(tfl_ctx *ctx, const char *name)
{
    if (!ctx) return NULL;
    char nm[TFL__NAME_MAX];
    if (name) {
        if (!tfl__check_name(ctx, "tfl_model_new", name, false)) return NULL;
        snprintf(nm, sizeof nm, "%s", name);
    } else {
        tfl__unique_name(ctx, "sequential", false, nm);
    }
    tfl_model *m = tfl__obj_new(ctx, sizeof *m, TFL__MAGIC_MODEL, model_free_obj);
    if (!m) return NULL;
    m->ctx = ctx;
    memcpy(m->name, nm, sizeof nm);
    m->input = (tfl__model_input){.obj = {.magic = TFL__MAGIC_MODEL_INPUT,
                                          .kind = TFL__MAGIC_MODEL_INPUT},
                                  .ctx = ctx, .model = m};
    return m;
}

void tfl_model_free(tfl_model *m)
{
    if (!m || !tfl__model_alive(m, "tfl_model_free")) return;
    tfl_ctx *ctx = m->ctx;
    tfl__obj_unlink(ctx, &m->obj);
    while (m->n_layers > 0) tfl_layer_free(m->layers[m->n_layers - 1]);
    tfl__host_free(ctx, m->layers);
    tfl__host_free(ctx, m->nodes);
    tfl__host_free(ctx, m->summary);
    tfl__host_free(ctx, m->train_vars);
    tfl__host_free(ctx, m->grads);
    m->obj.free = NULL; /* unlinked above */
    tfl__obj_retire(ctx, &m->obj); /* the record stays readable: a second free is MISUSE */
}

tfl_status tfl_model_add_layer(tfl_model *m, tfl_layer *l)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_add_layer")) return TFL_MISUSE;
    return tfl__model_add_node(m, l, &(tfl__node){0});
}

tfl_layer *tfl_model_add(tfl_model *m, const tfl_layer_spec *spec)
{
    if (!m || !tfl__model_alive(m, "tfl_model_add")) return NULL;
    tfl_layer *l = tfl_layer_new(m->ctx, spec);
    if (!l) return NULL;
    if (tfl_model_add_layer(m, l) != TFL_OK) {
        tfl_layer_free(l);
        return NULL;
    }
    return l;
}

int tfl_model_num_layers(const tfl_model *m)
{
    return m && tfl__model_alive(m, "tfl_model_num_layers") ? m->n_layers : 0;
}
tfl_ctx *tfl_model_ctx(const tfl_model *m)
{
    if (!m) return NULL;
    (void)tfl__model_alive(m, "tfl_model_ctx"); /* the ctx still holds that error */
    return m->ctx;
}

const char *tfl_model_name(const tfl_model *m)
{
    return m && tfl__model_alive(m, "tfl_model_name") ? m->name : NULL;
}
tfl_layer *tfl_model_layer(const tfl_model *m, int i)
{
    return m && tfl__model_alive(m, "tfl_model_layer") && i >= 0 && i < m->n_layers
               ? m->layers[i] : NULL;
}

/* ---- build, call, variables --------------------------------------------------------------------- */

tfl_status tfl_model_build(tfl_model *m, int rank, const int64_t *shape)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_build")) return TFL_MISUSE;
    TFL_CHECK_RET(m->ctx, rank >= 1 && rank <= TFL_MAX_RANK && shape, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: build needs an input shape of rank 1..%d with the "
                  "batch axis first, got rank %d", m->name, TFL_MAX_RANK, rank);
    /* the whole graph's shapes first: nothing is made unless every layer takes its inputs */
    int *ranks;
    int64_t(*shapes)[TFL_MAX_RANK];
    if (!tfl__model_shapes(m, rank, shape, &ranks, &shapes)) return tfl_ctx_status(m->ctx);
    /* then the variables (a layer's come from its input's shape; merges have none); a failure
     * (out of memory) undoes what this call made */
    tfl_status st = TFL_OK;
    for (int i = 0; i < m->n_layers && st == TFL_OK; i++) {
        tfl_layer *l = m->layers[i];
        l->fresh = !l->built;
        if (tfl__layer_is_merge(l->spec.kind)) {
            l->built = true;
            continue;
        }
        int in[TFL_MAX_LAYER_INPUTS];
        tfl__node_inputs(m, i, in);
        st = in[0] == TFL__FROM_INPUT ? tfl_layer_build(l, rank, shape)
                                      : tfl_layer_build(l, ranks[in[0]], shapes[in[0]]);
    }
    for (int i = 0; i < m->n_layers; i++) {
        if (st != TFL_OK && m->layers[i]->fresh) tfl__layer_unbuild(m->layers[i]);
        m->layers[i]->fresh = false;
    }
    tfl__host_free(m->ctx, ranks);
    tfl__host_free(m->ctx, shapes);
    if (st != TFL_OK) return st;
    m->in_rank = rank; /* the summary's shapes start here */
    memcpy(m->in_shape, shape, sizeof(int64_t) * rank);
    return TFL_OK;
}

tfl_tensor *tfl_model_call(tfl_model *m, const tfl_tensor *x, bool training)
{
    if (!m || !tfl__model_alive(m, "tfl_model_call")) return NULL;
    TFL_CHECK_RET(m->ctx, m->n_layers > 0, NULL, TFL_FAILED_PRECONDITION,
                  "%s: the model has no layers", m->name);
    if (x && !m->layers[m->n_layers - 1]->built) { /* the first call builds every layer */
        int in[TFL_MAX_LAYER_INPUTS];
        for (int i = 0; i < m->n_layers; i++) /* the layers that read x check its dtype */
            for (int k = 0, n = tfl__node_inputs(m, i, in); k < n; k++)
                if (in[k] == TFL__FROM_INPUT && !tfl__layer_is_merge(m->layers[i]->spec.kind) &&
                    !tfl__layer_check_dtype(m->layers[i], x))
                    return NULL;
        if (tfl_model_build(m, tfl_tensor_rank(x), tfl_tensor_shape(x)) != TFL_OK) return NULL;
    }
    if (tfl_frame_push(m->ctx) != TFL_OK) return NULL;
    const tfl_tensor *y;
    if (!tfl_model_is_graph(m)) { /* a stack: each layer on the previous one's output */
        y = x;
        for (int i = 0; i < m->n_layers && (y || i == 0); i++)
            y = tfl_layer_call(m->layers[i], y, training); /* a NULL x: the first layer says so */
    } else {
        y = x ? tfl__graph_call(m, x, training) : tfl_layer_call(m->layers[0], x, training);
    }
    tfl_tensor *out = tfl_keep((tfl_tensor *)y);
    tfl_frame_pop(m->ctx);
    return out ? tfl__frame_adopt(m->ctx, out) : NULL;
}

int tfl_model_variables(const tfl_model *m, tfl_var_filter filter, tfl_tensor **out, int cap)
{
    if (!m || !tfl__model_alive(m, "tfl_model_variables")) return 0;
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        int room = cap > n ? cap - n : 0;
        n += tfl_layer_variables(m->layers[i], filter, room && out ? out + n : NULL, room);
    }
    return n;
}

int64_t tfl_model_param_count(const tfl_model *m, tfl_var_filter filter)
{
    int64_t n = 0;
    if (!m || !tfl__model_alive(m, "tfl_model_param_count")) return 0;
    for (int i = 0; i < m->n_layers; i++) n += tfl_layer_param_count(m->layers[i], filter);
    return n;
}

/* ---- summary ------------------------------------------------------------------------------------ */

typedef struct text {
    tfl_ctx *ctx;
    char *buf;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || t->failed) return;
    size_t need = t->len + (size_t)n + 1;
    if (need > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        while (cap < need) cap *= 2;
        char *g = tfl__grow(t->ctx, t->buf, t->len, cap);
        if (!g) {
            t->failed = true;
            return;
        }
        t->buf = g;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* "(None, 26, 26, 32)" as Keras prints it; "?" when unknown */
static void shape_text(int rank, const int64_t *shape, char *out, size_t size)
{
    if (rank < 0) {
        snprintf(out, size, "?");
        return;
    }
    size_t n = (size_t)snprintf(out, size, "(");
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)(shape[d] < 0 ? snprintf(out + n, size - n, "%sNone", d ? ", " : "")
                                   : snprintf(out + n, size - n, "%s%lld", d ? ", " : "",
                                              (long long)shape[d]));
    if (n < size) snprintf(out + n, size - n, ")");
}

const char *tfl_model_summary(tfl_model *m)
{
    if (!m || !tfl__model_alive(m, "tfl_model_summary")) return NULL;
    text t = {m->ctx, NULL, 0, 0, false};
    const char *rule = "─────────────────────────────────────────────────────────────────────────";
    bool graph = tfl_model_is_graph(m);
    put(&t, "Model: \"%s\"\n", m->name);
    put(&t, "%s\n%-40s %-22s %10s%s\n%s\n", rule, "Layer (type)", "Output Shape", "Param #",
        graph ? "  Connected to" : "", rule);
    /* output shapes follow from the input shape of the build or first call, when known */
    int rank = m->in_rank;
    int64_t cur[TFL_MAX_RANK + 1];
    if (rank > 0) {
        memcpy(cur, m->in_shape, sizeof(int64_t) * rank);
        cur[0] = -1;
    }
    tfl_error kept = tfl_ctx_error(m->ctx);
    int *ranks = NULL;
    int64_t(*shapes)[TFL_MAX_RANK] = NULL;
    if (graph && rank > 0 && !tfl__model_shapes(m, rank, cur, &ranks, &shapes) &&
        kept.code == TFL_OK)
        tfl_ctx_clear_error(m->ctx); /* never fails on shapes: they show "?" */
    for (int i = 0; i < m->n_layers; i++) {
        tfl_layer *l = m->layers[i];
        char label[TFL__NAME_MAX + 40], shape[96], from[512] = "";
        snprintf(label, sizeof label, "%s (%s)", l->name, tfl_layer_kind_name(l->spec.kind));
        int64_t next[TFL_MAX_RANK + 1];
        int r;
        if (graph) {
            r = ranks ? ranks[i] : -1;
            if (r > 0) memcpy(next, shapes[i], sizeof(int64_t) * r);
            tfl__node_text(m, i, from, sizeof from);
        } else {
            r = rank > 0 ? tfl__layer_shape(l, rank, cur, next) : -1;
            if (r < 0 && kept.code == TFL_OK) tfl_ctx_clear_error(m->ctx); /* never fails on shapes */
        }
        shape_text(r, next, shape, sizeof shape);
        put(&t, "%-40s %-22s %10lld%s%s\n", label, shape,
            (long long)tfl_layer_param_count(l, TFL_VARS_ALL), graph ? "  " : "", from);
        rank = r;
        if (r > 0) memcpy(cur, next, sizeof(int64_t) * r);
    }
    tfl__host_free(m->ctx, ranks);
    tfl__host_free(m->ctx, shapes);
    int64_t all = tfl_model_param_count(m, TFL_VARS_ALL);
    int64_t tr = tfl_model_param_count(m, TFL_VARS_TRAINABLE);
    put(&t, "%s\n Total params: %lld (%.2f KB)\n Trainable params: %lld\n Non-trainable "
        "params: %lld\n%s\n", rule, (long long)all, all * 4 / 1024.0, (long long)tr,
        (long long)(all - tr), rule);
    if (t.failed) {
        tfl__host_free(m->ctx, t.buf);
        tfl__set_error(m->ctx, TFL_RESOURCE_EXHAUSTED, "%s: out of memory for the summary",
                       m->name);
        return NULL;
    }
    tfl__host_free(m->ctx, m->summary);
    m->summary = t.buf;
    return m->summary;
}

/* ---- compile, losses ---------------------------------------------------------------------------- */

static const char *const loss_names[TFL_LOSS_END] = {
    [TFL_LOSS_NONE] = "none",
    [TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY] = "sparse_categorical_crossentropy",
    [TFL_LOSS_CATEGORICAL_CROSSENTROPY] = "categorical_crossentropy",
    [TFL_LOSS_BINARY_CROSSENTROPY] = "binary_crossentropy",
    [TFL_LOSS_MEAN_SQUARED_ERROR] = "mean_squared_error",
};

const char *tfl_loss_name(tfl_loss_kind kind)
{
    return (unsigned)kind < TFL_LOSS_END ? loss_names[kind] : "?";
}

tfl_status tfl_model_compile(tfl_model *m, tfl_optimizer *opt, tfl_loss_kind loss,
                             unsigned metrics)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_compile")) return TFL_MISUSE;
    TFL_CHECK_RET(m->ctx, loss > TFL_LOSS_NONE && loss < TFL_LOSS_END, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: unknown loss %d", m->name, (int)loss);
    TFL_CHECK_RET(m->ctx, !(metrics & ~TFL_METRIC_ACCURACY), TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: unknown metric flags 0x%x", m->name,
                  metrics & ~TFL_METRIC_ACCURACY);
    TFL_CHECK_RET(m->ctx, !(metrics & TFL_METRIC_ACCURACY) || loss != TFL_LOSS_MEAN_SQUARED_ERROR,
                  TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "%s: accuracy needs a classification loss, not mean_squared_error", m->name);
    TFL_CHECK_RET(m->ctx, !opt || ((const tfl__ctx_obj *)(const void *)opt)->magic ==
                  TFL__MAGIC_OPTIMIZER, TFL_MISUSE, TFL_MISUSE,
                  "%s: the optimizer was already freed (use after free)", m->name);
    TFL_CHECK_RET(m->ctx, !opt || tfl_optimizer_ctx(opt) == m->ctx, TFL_MISUSE, TFL_MISUSE,
                  "%s: the optimizer belongs to another context", m->name);
    m->optimizer = opt;
    m->loss = loss;
    m->metrics = metrics;
    return TFL_OK;
}

/* labels as pred's dtype and shape (an integer vector for (batch, 1) predictions too) */
static const tfl_tensor *dense_labels(tfl_ctx *ctx, const tfl_tensor *pred, const tfl_tensor *y)
{
    int pr = tfl_tensor_rank(pred), yr = tfl_tensor_rank(y);
    const int64_t *ps = tfl_tensor_shape(pred);
    if (yr == pr - 1 && ps[pr - 1] == 1) y = tfl_reshape(ctx, y, pr, ps);
    if (y && tfl_tensor_dtype(y) != tfl_tensor_dtype(pred)) y = tfl_cast(ctx, y, tfl_tensor_dtype(pred));
    return y;
}

tfl_tensor *tfl_loss_per_example(tfl_ctx *ctx, tfl_loss_kind kind, const tfl_tensor *pred,
                                 const tfl_tensor *labels)
{
    if (!ctx) return NULL;
    if (!pred || !labels) {
        TFL_CHECK_RET(ctx, tfl_ctx_status(ctx) != TFL_OK, NULL, TFL_INVALID_ARGUMENT,
                      "tfl_loss_per_example: %s is NULL", pred ? "labels" : "pred");
        return NULL;
    }
    TFL_CHECK_RET(ctx, tfl_tensor_rank(pred) >= 1, NULL, TFL_INVALID_ARGUMENT,
                  "%s: predictions must have rank >= 1, got a scalar", tfl_loss_name(kind));
    /* a mixed policy's 16-bit predictions: the loss is computed in float32 (Keras) */
    if (tfl_tensor_dtype(pred) == tfl_precision_half_dtype(tfl_ctx_precision(ctx)) &&
        !(pred = tfl_cast(ctx, pred, TFL_DTYPE_FLOAT32)))
        return NULL;
    bool int_labels = tfl_dtype_is_integer(tfl_tensor_dtype(labels));
    switch (kind) {
    case TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY:
        return tfl_sparse_softmax_cross_entropy(ctx, pred, labels);
    case TFL_LOSS_CATEGORICAL_CROSSENTROPY: {
        /* integer labels: the same value as one-hot labels, and out-of-range ids are errors */
        if (int_labels) return tfl_sparse_softmax_cross_entropy(ctx, pred, labels);
        return tfl_softmax_cross_entropy(ctx, pred, labels, -1);
    }
    case TFL_LOSS_BINARY_CROSSENTROPY:
    case TFL_LOSS_MEAN_SQUARED_ERROR: {
        const tfl_tensor *y = dense_labels(ctx, pred, labels);
        char sa[128], sb[128];
        TFL_CHECK_RET(ctx, !y || tfl__same_shape(tfl_tensor_rank(pred), tfl_tensor_shape(pred),
                                                 tfl_tensor_rank(y), tfl_tensor_shape(y)),
                      NULL, TFL_INVALID_ARGUMENT,
                      "%s: predictions %s and labels %s differ in shape", tfl_loss_name(kind),
                      tfl__shape_str(tfl_tensor_rank(pred), tfl_tensor_shape(pred), sa, sizeof sa),
                      tfl__shape_str(tfl_tensor_rank(labels), tfl_tensor_shape(labels), sb,
                                     sizeof sb));
        tfl_tensor *e;
        if (kind == TFL_LOSS_BINARY_CROSSENTROPY) {
            e = tfl_sigmoid_cross_entropy(ctx, pred, y);
        } else {
            tfl_tensor *d = tfl_sub(ctx, pred, y);
            e = tfl_mul(ctx, d, d);
        }
        if (tfl_tensor_rank(pred) < 2) return e;
        return tfl_reduce_mean(ctx, e, 1, (int[]){-1}, false);
    }
    default:
        TFL_CHECK_RET(ctx, false, NULL, TFL_INVALID_ARGUMENT, "tfl_loss_per_example: unknown "
                      "loss %d", (int)kind);
    }
    return NULL;
}
