/*
 * layers/model_graph.c: a model's layer graph (Keras's functional API). Layer i takes the
 * outputs of layers before it or the model's input (model->nodes[i]); a layer added without
 * inputs takes the previous layer's, so a stack is the graph whose nodes are all defaults.
 * Layers are kept in the order they were added, which is an order in which every layer comes
 * after its inputs: shapes and the forward pass run in it, without a sort.
 */
#include "layers_internal.h"

tfl_layer *tfl_model_input(tfl_model *m)
{
    if (!m || !tfl__model_alive(m, "tfl_model_input")) return NULL;
    return (tfl_layer *)(void *)&m->input;
}

bool tfl_model_is_graph(const tfl_model *m)
{
    if (!m || !tfl__model_alive(m, "tfl_model_is_graph")) return false;
    for (int i = 0; i < m->n_layers; i++)
        if (m->nodes[i].n_in > 0) return true;
    return false;
}

int tfl__node_inputs(const tfl_model *m, int i, int *in)
{
    const tfl__node *nd = &m->nodes[i];
    if (nd->n_in == 0) {
        in[0] = i > 0 ? i - 1 : TFL__FROM_INPUT;
        return 1;
    }
    memcpy(in, nd->in, sizeof(int) * (size_t)nd->n_in);
    return nd->n_in;
}

int tfl_model_layer_inputs(const tfl_model *m, int i, tfl_layer **out, int cap)
{
    if (!m || !tfl__model_alive(m, "tfl_model_layer_inputs") || i < 0 || i >= m->n_layers)
        return -1;
    int in[TFL_MAX_LAYER_INPUTS];
    int n = tfl__node_inputs(m, i, in);
    for (int k = 0; k < n && k < cap && out; k++)
        out[k] = in[k] == TFL__FROM_INPUT ? (tfl_layer *)(void *)&m->input
                 : in[k] == TFL__FROM_GONE ? NULL : m->layers[in[k]];
    return n;
}

/* The node of a layer about to be added: each input's index, checked. */
static bool resolve_inputs(tfl_model *m, const char *who, int n, tfl_layer *const *inputs,
                           tfl__node *nd)
{
    tfl_ctx *ctx = m->ctx;
    TFL_CHECK_RET(ctx, n >= 0 && n <= TFL_MAX_LAYER_INPUTS && (inputs || n == 0), false,
                  TFL_INVALID_ARGUMENT, "%s: %s: 0 to %d inputs, got %d%s", who, m->name,
                  TFL_MAX_LAYER_INPUTS, n, inputs || n == 0 ? "" : " and a NULL list");
    nd->n_in = n;
    for (int k = 0; k < n; k++) {
        const tfl_layer *x = inputs[k];
        if (!x) {
            TFL_CHECK_RET(ctx, tfl_ctx_status(ctx) != TFL_OK, false, TFL_INVALID_ARGUMENT,
                          "%s: %s: inputs[%d] is NULL", who, m->name, k);
            return false; /* the error that made it NULL is kept */
        }
        if ((const void *)x == (const void *)&m->input) {
            nd->in[k] = TFL__FROM_INPUT;
            continue;
        }
        int j = -1;
        for (int i = 0; i < m->n_layers && j < 0; i++)
            if (m->layers[i] == x) j = i;
        TFL_CHECK_RET(ctx, j >= 0, false, TFL_INVALID_ARGUMENT,
                      "%s: %s: inputs[%d] is not a layer of this model (nor its input)", who,
                      m->name, k);
        nd->in[k] = j;
    }
    return true;
}

tfl_status tfl_model_add_layer_from(tfl_model *m, tfl_layer *l, int n, tfl_layer *const *inputs)
{
    if (!m) return TFL_INVALID_ARGUMENT;
    if (!tfl__model_alive(m, "tfl_model_add_layer_from")) return TFL_MISUSE;
    tfl__node nd = {0};
    if (!resolve_inputs(m, "tfl_model_add_layer_from", n, inputs, &nd)) return tfl_ctx_status(m->ctx);
    return tfl__model_add_node(m, l, &nd);
}

tfl_layer *tfl_model_add_from(tfl_model *m, const tfl_layer_spec *spec, int n,
                              tfl_layer *const *inputs)
{
    if (!m || !tfl__model_alive(m, "tfl_model_add_from")) return NULL;
    tfl__node nd;
    if (!resolve_inputs(m, "tfl_model_add_from", n, inputs, &nd)) return NULL;
    tfl_layer *l = tfl_layer_new(m->ctx, spec);
    if (!l) return NULL;
    if (tfl__model_add_node(m, l, &nd) != TFL_OK) { /* the inputs are resolved above */
        tfl_layer_free(l);
        return NULL;
    }
    return l;
}

/* "input", "dense_1", or "(freed)": the name of input index j */
static const char *input_name(const tfl_model *m, int j)
{
    return j == TFL__FROM_INPUT ? "input" : j == TFL__FROM_GONE ? "(freed)" : m->layers[j]->name;
}

/* Every layer but the last feeds a later one, and no input was freed. */
static bool graph_ok(tfl_model *m)
{
    int in[TFL_MAX_LAYER_INPUTS];
    for (int i = 0; i < m->n_layers; i++) {
        int n = tfl__node_inputs(m, i, in);
        for (int k = 0; k < n; k++)
            TFL_CHECK_RET(m->ctx, in[k] != TFL__FROM_GONE, false, TFL_INVALID_ARGUMENT,
                          "%s: input %d of layer '%s' was freed", m->name, k, m->layers[i]->name);
    }
    for (int j = 0; j + 1 < m->n_layers; j++) {
        bool used = false;
        for (int i = j + 1; i < m->n_layers && !used; i++) {
            int n = tfl__node_inputs(m, i, in);
            for (int k = 0; k < n && !used; k++) used = in[k] == j;
        }
        TFL_CHECK_RET(m->ctx, used, false, TFL_INVALID_ARGUMENT,
                      "%s: the output of layer '%s' is never used: every layer but the last "
                      "(the model's output) must be an input of a later layer", m->name,
                      m->layers[j]->name);
    }
    return true;
}

bool tfl__model_shapes(tfl_model *m, int rank, const int64_t *shape, int **ranks_out,
                       int64_t (**shapes_out)[TFL_MAX_RANK])
{
    tfl_ctx *ctx = m->ctx;
    *ranks_out = NULL;
    *shapes_out = NULL;
    if (!graph_ok(m)) return false;
    size_t n = (size_t)m->n_layers ? (size_t)m->n_layers : 1;
    int *ranks = tfl__calloc(ctx, n * sizeof *ranks);
    int64_t(*shapes)[TFL_MAX_RANK] = ranks ? tfl__calloc(ctx, n * sizeof *shapes) : NULL;
    if (!shapes) {
        tfl__host_free(ctx, ranks);
        return false;
    }
    for (int i = 0; i < m->n_layers; i++) {
        int in[TFL_MAX_LAYER_INPUTS], rs[TFL_MAX_LAYER_INPUTS];
        const int64_t *ss[TFL_MAX_LAYER_INPUTS];
        int k = tfl__node_inputs(m, i, in);
        for (int q = 0; q < k; q++) {
            rs[q] = in[q] == TFL__FROM_INPUT ? rank : ranks[in[q]];
            ss[q] = in[q] == TFL__FROM_INPUT ? shape : shapes[in[q]];
        }
        tfl_layer *l = m->layers[i];
        ranks[i] = tfl_layer_output_shape_n(l, k, rs, ss, shapes[i]);
        if (ranks[i] < 0) {
            tfl__host_free(ctx, ranks);
            tfl__host_free(ctx, shapes);
            return false;
        }
    }
    *ranks_out = ranks;
    *shapes_out = shapes;
    return true;
}

/* The forward pass of a graph: each layer on its inputs, in the order they were added. */
tfl_tensor *tfl__graph_call(tfl_model *m, const tfl_tensor *x, bool training)
{
    tfl_ctx *ctx = m->ctx;
    const tfl_tensor *small[64]; /* a step of a model this size allocates nothing here */
    const tfl_tensor **outs = m->n_layers <= 64 ? small
                              : tfl__calloc(ctx, sizeof *outs * (size_t)m->n_layers);
    if (!outs) return NULL;
    const tfl_tensor *y = NULL;
    for (int i = 0; i < m->n_layers; i++) {
        int in[TFL_MAX_LAYER_INPUTS];
        const tfl_tensor *xs[TFL_MAX_LAYER_INPUTS];
        int n = tfl__node_inputs(m, i, in);
        for (int k = 0; k < n; k++) xs[k] = in[k] == TFL__FROM_INPUT ? x : outs[in[k]];
        y = outs[i] = tfl_layer_call_n(m->layers[i], n, xs, training);
        if (!y) break;
    }
    if (outs != small) tfl__host_free(ctx, outs);
    return (tfl_tensor *)y;
}

/* The summary's "Connected to" of layer i: its inputs' names, comma-separated. */
void tfl__node_text(const tfl_model *m, int i, char *buf, size_t size)
{
    int in[TFL_MAX_LAYER_INPUTS];
    int n = tfl__node_inputs(m, i, in);
    size_t o = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && o < size; k++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", k ? ", " : "", input_name(m, in[k]));
}

