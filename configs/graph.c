/*
 * configs/graph.c: the model's layer graph as a config spells it. A layer's `inputs` name the
 * layers it takes (`input`: the model's input); without it a layer takes the previous one's
 * output, so a stack config is a graph of defaults and stays as it was. Once a layer names
 * its inputs the config is a graph: every layer gets a name (its own, else its kind's made
 * unique in the config: dense, dense_1, ...), and names that are unknown, later layers,
 * cycles, a count of inputs the kind does not take and layers whose output nobody takes are
 * diagnostics at the key. A valid graph's names and inputs are written into the resolved
 * values, so `tapeflow config` prints the resolved graph and it loads back the same.
 */
#include "configs_internal.h"

#define PATH_MAX_ 256
#define FROM_INPUT (-1)

typedef struct graph {
    tfl_config *cfg;
    rsec **layers;
    int n;
    const char **names;   /* every layer's name (given or made) */
    int (*from)[TFL_MAX_LAYER_INPUTS + 1];
    bool failed;
} graph;

static rval *val_of(rsec *s, const char *name) { return (rval *)(uintptr_t)tfl__rget(s, name); }

static const char *kind_name(const rsec *l) { return l->def->kinds->names[l->kind]; }

static bool is_merge(const rsec *l)
{
    const char *k = kind_name(l);
    return !strcmp(k, "add") || !strcmp(k, "concatenate") || !strcmp(k, "multiply");
}

static void layer_path(const graph *g, int i, const char *key, char *buf, size_t size)
{
    snprintf(buf, size, "model.layers[%d].%s%s%s", i, kind_name(g->layers[i]), key ? "." : "",
             key ? key : "");
}

static int find(const graph *g, const char *name)
{
    for (int j = 0; j < g->n; j++)
        if (g->names[j] && !strcmp(g->names[j], name)) return j;
    return -2;
}

/* Names: given ones, then the kind's name made unique among all of them. */
static bool name_layers(graph *g)
{
    for (int i = 0; i < g->n; i++) {
        const rval *v = val_of(g->layers[i], "name");
        g->names[i] = v && v->set ? v->s : NULL;
        if (g->cfg->graph && g->names[i] && !strcmp(g->names[i], "input")) {
            char p[PATH_MAX_];
            layer_path(g, i, "name", p, sizeof p);
            tfl__diag_at(g->cfg, v->node, p, "'input' names the model's input in a graph; give "
                         "the layer another name");
            g->failed = true;
        }
    }
    for (int i = 0; i < g->n; i++) {
        if (g->names[i]) continue;
        const char *base = kind_name(g->layers[i]);
        char *name = tfl__arena_strdup(&g->cfg->arena, base);
        for (long k = 1; name && find(g, name) >= 0; k++)
            name = tfl__arena_printf(&g->cfg->arena, "%s_%ld", base, k);
        if (!name) return false;
        g->names[i] = name;
    }
    return true;
}

/* The entry nodes of a VT_NAMES value: its items, or the scalar itself. */
static const ynode *entry_node(const rval *v, int k)
{
    if (!v->node || v->node->kind != YN_SEQ) return v->node;
    const ynode *it = v->node->first;
    for (int i = 0; it && i < k; i++) it = it->next;
    return it;
}

/* Each named input found (an unknown name is a diagnostic with a did-you-mean). */
static void find_inputs(graph *g, int i)
{
    rval *v = val_of(g->layers[i], "inputs");
    int *f = g->from[i];
    if (!v || !v->set) { /* the previous layer's output */
        f[0] = 0;
        f[1] = i > 0 ? i - 1 : FROM_INPUT;
        return;
    }
    f[0] = v->n;
    for (int k = 0; k < v->n; k++) {
        const char *nm = v->names[k];
        int j = !strcmp(nm, "input") ? FROM_INPUT : find(g, nm);
        f[k + 1] = j;
        if (j != -2) continue;
        const char *cands[1001];
        int nc = 0;
        cands[nc++] = "input";
        for (int q = 0; q < g->n && nc < 1001; q++) cands[nc++] = g->names[q];
        char hint[512], p[PATH_MAX_];
        tfl__suggest(nm, cands, nc, hint, sizeof hint);
        layer_path(g, i, "inputs", p, sizeof p);
        tfl__diag_at(g->cfg, entry_node(v, k), p, "no layer named '%s'%s", nm, hint);
        g->failed = true;
    }
}

static int in_count(const graph *g, int i) { return g->from[i][0] ? g->from[i][0] : 1; }

/* Whether layer `to` is reached from layer `at` going up its inputs; the path goes to path. */
static bool reaches(const graph *g, int at, int to, bool *seen, int *path, int *len)
{
    if (at < 0 || seen[at]) return false;
    seen[at] = true;
    path[(*len)++] = at;
    if (at == to) return true;
    for (int k = 0; k < in_count(g, at); k++)
        if (reaches(g, g->from[at][k + 1], to, seen, path, len)) return true;
    (*len)--;
    return false;
}

/* An input that is the layer itself or comes after it: a cycle, or an order to fix. */
static void check_order(graph *g, int i, bool *seen, int *path)
{
    const rval *v = val_of(g->layers[i], "inputs");
    for (int k = 0; v && v->set && k < v->n; k++) {
        int j = g->from[i][k + 1];
        if (j < i) continue;
        char p[PATH_MAX_], msg[1024];
        layer_path(g, i, "inputs", p, sizeof p);
        memset(seen, 0, sizeof(bool) * (size_t)g->n);
        int len = 0;
        if (reaches(g, j, i, seen, path, &len)) { /* i feeds j, which feeds i */
            size_t o = (size_t)snprintf(msg, sizeof msg, "a cycle: %s", g->names[i]);
            for (int q = len - 2; q >= 0 && o < sizeof msg; q--)
                o += (size_t)snprintf(msg + o, sizeof msg - o, " -> %s", g->names[path[q]]);
            if (o < sizeof msg) snprintf(msg + o, sizeof msg - o, " -> %s", g->names[i]);
            tfl__diag_at(g->cfg, entry_node(v, k), p, "%s", msg);
        } else {
            tfl__diag_at(g->cfg, entry_node(v, k), p, "'%s' is model.layers[%d], after '%s': "
                         "list every layer after the layers it takes", g->names[j], j,
                         g->names[i]);
        }
        g->failed = true;
    }
}

static void check_count(graph *g, int i)
{
    const rsec *l = g->layers[i];
    const rval *v = val_of(g->layers[i], "inputs");
    int n = in_count(g, i);
    bool merge = is_merge(l);
    const rval *axis = !strcmp(kind_name(l), "concatenate") ? val_of(g->layers[i], "axis") : NULL;
    if (axis && axis->set && axis->i == 0) {
        char p[PATH_MAX_];
        layer_path(g, i, "axis", p, sizeof p);
        tfl__diag_at(g->cfg, axis->node ? axis->node : l->node, p, "axis 0 is the batch axis, "
                     "which is never joined: give 1 or more, or a negative axis (-1: the last)");
        g->failed = true;
    }
    if (merge ? n >= 2 : n == 1) return;
    char p[PATH_MAX_];
    layer_path(g, i, v && v->set ? "inputs" : NULL, p, sizeof p);
    if (merge)
        tfl__diag_at(g->cfg, v && v->set ? v->node : l->node, p, "%s merges 2 or more inputs, "
                     "got %d: name them, e.g. inputs: [%s, input]", kind_name(l), n,
                     i > 0 ? g->names[i - 1] : "a");
    else
        tfl__diag_at(g->cfg, v->node, p, "%s takes one input, got %d (merge them first with "
                     "add, concatenate or multiply)", kind_name(l), n);
    g->failed = true;
}

static void check_used(graph *g)
{
    for (int j = 0; j + 1 < g->n; j++) {
        bool used = false;
        for (int i = j + 1; i < g->n && !used; i++)
            for (int k = 0; k < in_count(g, i) && !used; k++) used = g->from[i][k + 1] == j;
        if (used) continue;
        char p[PATH_MAX_];
        layer_path(g, j, NULL, p, sizeof p);
        tfl__diag_at(g->cfg, g->layers[j]->node, p, "the output of '%s' is never used: every "
                     "layer but the last (the model's output) must be an input of a later layer",
                     g->names[j]);
        g->failed = true;
    }
}

/* A valid graph's names and inputs become the resolved values. */
static void resolve_values(graph *g)
{
    for (int i = 0; i < g->n; i++) {
        rval *nm = val_of(g->layers[i], "name"), *in = val_of(g->layers[i], "inputs");
        nm->s = g->names[i];
        nm->set = true;
        if (in->set) continue;
        in->names = tfl__arena_alloc(&g->cfg->arena, sizeof *in->names);
        if (!in->names) return;
        in->names[0] = i > 0 ? g->names[i - 1] : "input";
        in->n = 1;
        in->set = true;
    }
}

void tfl__config_graph(tfl_config *cfg)
{
    if (!cfg->res) return;
    const rval *model = tfl__rget(cfg->res, "model");
    const rval *layers = model && model->set ? tfl__rget(model->sec, "layers") : NULL;
    if (!layers || !layers->set || layers->n < 1) return;
    graph g = {.cfg = cfg, .layers = layers->list, .n = layers->n};
    for (int i = 0; i < g.n; i++)
        if (!g.layers[i] || g.layers[i]->kind < 0 || !g.layers[i]->vals)
            return; /* an unknown kind was reported: the graph waits for it */
    for (int i = 0; i < g.n; i++) {
        const rval *in = val_of(g.layers[i], "inputs");
        cfg->graph |= in && in->set;
    }
    g.names = tfl__arena_alloc(&cfg->arena, sizeof *g.names * (size_t)g.n);
    g.from = tfl__arena_alloc(&cfg->arena, sizeof *g.from * (size_t)g.n);
    bool *seen = tfl__arena_alloc(&cfg->arena, sizeof *seen * (size_t)g.n);
    int *path = tfl__arena_alloc(&cfg->arena, sizeof *path * (size_t)g.n);
    if (!g.names || !g.from || !seen || !path || !name_layers(&g)) return;
    for (int i = 0; i < g.n; i++) find_inputs(&g, i);
    if (!g.failed)
        for (int i = 0; i < g.n; i++) check_order(&g, i, seen, path);
    if (!g.failed)
        for (int i = 0; i < g.n; i++) check_count(&g, i);
    if (!g.failed) check_used(&g);
    if (g.failed) return;
    cfg->from = g.from;
    if (cfg->graph) resolve_values(&g);
}
