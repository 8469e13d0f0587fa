/*
 * layers/layer_base.c: what layers and models share, at the bottom of layers/ (every other
 * file of layers/ may call it; it calls none of them): the kinds' names, unique names per
 * context, a layer's variable list, and a model's list of layers with their nodes (a layer
 * added and taken out). The files above it read bottom-up, as layers/README.md lists them.
 */
#include "layers_internal.h"

/* ---- kinds ----------------------------------------------------------------------------------- */

static const struct {
    const char *cls;  /* Keras's class name */
    const char *base; /* the default layer name */
} kinds[TFL_LAYER_KIND_END] = {
    [TFL_LAYER_DENSE] = {"Dense", "dense"},
    [TFL_LAYER_CONV2D] = {"Conv2D", "conv2d"},
    [TFL_LAYER_MAX_POOL2D] = {"MaxPooling2D", "max_pooling2d"},
    [TFL_LAYER_AVG_POOL2D] = {"AveragePooling2D", "average_pooling2d"},
    [TFL_LAYER_FLATTEN] = {"Flatten", "flatten"},
    [TFL_LAYER_RESHAPE] = {"Reshape", "reshape"},
    [TFL_LAYER_DROPOUT] = {"Dropout", "dropout"},
    [TFL_LAYER_BATCH_NORM] = {"BatchNormalization", "batch_normalization"},
    [TFL_LAYER_ACTIVATION] = {"Activation", "activation"},
    [TFL_LAYER_EMBEDDING] = {"Embedding", "embedding"},
    [TFL_LAYER_LAYER_NORM] = {"LayerNormalization", "layer_normalization"},
    [TFL_LAYER_GLOBAL_AVG_POOL2D] = {"GlobalAveragePooling2D", "global_average_pooling2d"},
    [TFL_LAYER_POSITION_EMBEDDING] = {"PositionEmbedding", "position_embedding"},
    [TFL_LAYER_MULTI_HEAD_ATTENTION] = {"MultiHeadAttention", "multi_head_attention"},
    [TFL_LAYER_ADD] = {"Add", "add"},
    [TFL_LAYER_CONCATENATE] = {"Concatenate", "concatenate"},
    [TFL_LAYER_MULTIPLY] = {"Multiply", "multiply"},
};

const char *tfl_layer_kind_name(tfl_layer_kind kind)
{
    return kind > 0 && kind < TFL_LAYER_KIND_END ? kinds[kind].cls : "?";
}

const char *tfl__layer_kind_base(tfl_layer_kind kind)
{
    return kind > 0 && kind < TFL_LAYER_KIND_END ? kinds[kind].base : "layer";
}

bool tfl__layer_is_merge(tfl_layer_kind kind)
{
    return kind == TFL_LAYER_ADD || kind == TFL_LAYER_CONCATENATE || kind == TFL_LAYER_MULTIPLY;
}

/* ---- names ----------------------------------------------------------------------------------- */

bool tfl__layer_name_taken(tfl_ctx *ctx, const char *name, bool layers)
{
    for (const tfl__ctx_obj *o = tfl__ctx_objects(ctx); o; o = o->next) {
        if (layers && o->magic == TFL__MAGIC_LAYER &&
            !strcmp(((const tfl_layer *)o)->name, name))
            return true;
        if (!layers && o->magic == TFL__MAGIC_MODEL &&
            !strcmp(((const tfl_model *)o)->name, name))
            return true;
    }
    return false;
}

void tfl__unique_name(tfl_ctx *ctx, const char *base, bool layers, char out[TFL__NAME_MAX])
{
    snprintf(out, TFL__NAME_MAX, "%s", base);
    for (long k = 1; tfl__layer_name_taken(ctx, out, layers); k++)
        snprintf(out, TFL__NAME_MAX, "%s_%ld", base, k);
}

bool tfl__check_name(tfl_ctx *ctx, const char *who, const char *name, bool layers)
{
    size_t n = strlen(name);
    TFL_CHECK_RET(ctx, n > 0 && n < TFL__NAME_MAX && !strpbrk(name, "/:"), false,
                  TFL_INVALID_ARGUMENT, "%s: '%.128s' is not a valid name (non-empty, under %d "
                  "bytes, without '/' or ':')", who, name, TFL__NAME_MAX);
    TFL_CHECK_RET(ctx, !tfl__layer_name_taken(ctx, name, layers), false, TFL_INVALID_ARGUMENT,
                  "%s: the name '%s' is taken by another %s of this context", who, name,
                  layers ? "layer" : "model");
    return true;
}

/* ---- variables ------------------------------------------------------------------------------- */

/* Fills d[n] with one variable's description. */
int tfl__var_def_add(tfl__var_def *d, int n, const char *what, int rank, const int64_t *shape,
                     const tfl_initializer *init, bool trainable)
{
    tfl__var_def *v = &d[n];
    snprintf(v->what, sizeof v->what, "%s", what);
    v->rank = rank;
    memcpy(v->shape, shape, sizeof *shape * (size_t)rank);
    v->init = init;
    v->trainable = trainable;
    return n + 1;
}

/* Makes "<layer>/<what>" and appends it. */
bool tfl__layer_add_var(tfl_layer *l, const char *what, int rank, const int64_t *shape,
                        const tfl_initializer *init, bool trainable)
{
    char name[TFL__NAME_MAX + 32];
    snprintf(name, sizeof name, "%s/%s", l->name, what);
    tfl_variable_opts vo = {.name = name, .flags = trainable ? 0 : TFL_VAR_NOT_TRAINABLE};
    tfl_tensor *v = tfl_variable_new_init(l->ctx, TFL_DTYPE_FLOAT32, rank, shape, init, &vo);
    if (!v) return false;
    l->vars[l->n_vars++] = v;
    return true;
}

/* ---- a model's list of layers ---------------------------------------------------------------- */

tfl_status tfl__model_add_node(tfl_model *m, tfl_layer *l, const tfl__node *nd)
{
    tfl_ctx *ctx = m->ctx;
    if (!l) {
        TFL_CHECK_RET(ctx, tfl_ctx_status(ctx) != TFL_OK, TFL_INVALID_ARGUMENT,
                      TFL_INVALID_ARGUMENT, "%s: the layer is NULL", m->name);
        return tfl_ctx_status(ctx);
    }
    TFL_CHECK_RET(ctx, l->obj.magic == TFL__MAGIC_LAYER, TFL_MISUSE,
                  TFL_MISUSE, "%s: the layer was already freed (use after free)", m->name);
    TFL_CHECK_RET(ctx, l->ctx == ctx, TFL_MISUSE, TFL_MISUSE,
                  "%s: layer '%s' belongs to another context", m->name, l->name);
    TFL_CHECK_RET(ctx, !l->owner, TFL_INVALID_ARGUMENT, TFL_INVALID_ARGUMENT,
                  "%s: layer '%s' already belongs to model '%s'", m->name, l->name,
                  l->owner->name);
    if (m->n_layers == m->cap_layers) {
        int cap = m->cap_layers ? 2 * m->cap_layers : 8;
        tfl_layer **grown = tfl__grow(ctx, m->layers, sizeof(*grown) * m->n_layers,
                                      sizeof(*grown) * cap);
        TFL_CHECK_RET(ctx, grown, TFL_RESOURCE_EXHAUSTED, TFL_RESOURCE_EXHAUSTED,
                      "%s: out of memory adding a layer", m->name);
        m->layers = grown;
        tfl__node *nodes = tfl__grow(ctx, m->nodes, sizeof(*nodes) * m->n_layers,
                                     sizeof(*nodes) * cap);
        TFL_CHECK_RET(ctx, nodes, TFL_RESOURCE_EXHAUSTED, TFL_RESOURCE_EXHAUSTED,
                      "%s: out of memory adding a layer", m->name);
        m->nodes = nodes;
        m->cap_layers = cap;
    }
    bool merge = tfl__layer_is_merge(l->spec.kind);
    int count = nd->n_in ? nd->n_in : 1;
    TFL_CHECK_RET(ctx, merge ? count >= 2 : count == 1, TFL_INVALID_ARGUMENT,
                  TFL_INVALID_ARGUMENT, "%s: layer '%s' (%s) takes %s, got %d%s", m->name,
                  l->name, tfl_layer_kind_name(l->spec.kind),
                  merge ? "2 or more inputs" : "one input", count,
                  merge && !nd->n_in ? " (add it with tfl_model_add_from)" : "");
    m->nodes[m->n_layers] = *nd;
    m->layers[m->n_layers++] = l;
    l->owner = m;
    return TFL_OK;
}

/* After layer i was taken out of the model's list: the later nodes' indices follow. */
static void nodes_removed(tfl_model *m, int i)
{
    memmove(m->nodes + i, m->nodes + i + 1, sizeof(*m->nodes) * (size_t)(m->n_layers - i));
    for (int j = i; j < m->n_layers; j++)
        for (int k = 0; k < m->nodes[j].n_in; k++) {
            int *v = &m->nodes[j].in[k];
            if (*v == i) *v = TFL__FROM_GONE;
            else if (*v > i) (*v)--;
        }
}

void tfl__model_take_out(tfl_model *m, tfl_layer *l)
{
    for (int i = 0; i < m->n_layers; i++)
        if (m->layers[i] == l) {
            memmove(m->layers + i, m->layers + i + 1, sizeof(*m->layers) * (m->n_layers - i - 1));
            m->n_layers--;
            nodes_removed(m, i);
            break;
        }
}
