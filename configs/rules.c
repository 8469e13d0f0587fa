/*
 * configs/rules.c: the rules that span several keys, checked after every key is resolved:
 * the optimizer's defaults for its kind and formula (and dampening, nesterov, one kind of
 * clipping), the device's spelling, CSV options (label_kind and label_count against the loss
 * and each other), accuracy with mean_squared_error, validation vs validation_split, layer names.
 */
#include "configs_internal.h"

#include <stdio.h>
#include <string.h>

#define PATH_MAX_ 512

static void join(char *buf, size_t size, const char *path, const char *key)
{
    if (snprintf(buf, size, "%s%s%s", path, path[0] ? "." : "", key) >= (int)size)
        buf[size - 1] = '\0';
}

static rval *rget_mut(rsec *s, const char *name)
{
    return (rval *)tfl__rget(s, name);
}

/* ---- rules across keys ----------------------------------------------------------------------- */

static const ynode *where(const rval *v, const rsec *s)
{
    return v && v->node ? v->node : s->node;
}

static void check_optimizer(tfl_config *cfg, rsec *o)
{
    if (!o || o->kind < 0) return;
    rval *formula = rget_mut(o, "formula");
    tfl_optimizer_opts d = tfl__optim_defaults(o->kind, formula->set ? (int)formula->i : 0);
    if (d.kind == 0) return;
    formula->i = d.formula;
    formula->set = true;
    for (const opt_field *f = tfl__optimizer_fields; f->key; f++) {
        rval *v = f->type == 'd' ? rget_mut(o, f->key) : NULL;
        if (v && !v->set && !v->node) {
            v->f = *(const double *)((const char *)&d + f->offset);
            v->set = true;
        }
    }
    const rval *damp = tfl__rget(o, "dampening"), *mom = tfl__rget(o, "momentum");
    const rval *nest = tfl__rget(o, "nesterov");
    if (damp && damp->node && damp->set && damp->f != 0 && d.formula != TFL_FORMULA_PYTORCH)
        tfl__diag_at(cfg, damp->node, "optimizer.dampening",
                     "dampening is read by the pytorch formula only (formula is %s)",
                     tfl__enum_formula.names[d.formula]);
    if (nest && nest->set && nest->i && mom && mom->set && mom->f <= 0)
        tfl__diag_at(cfg, where(nest, o), "optimizer.nesterov",
                     "nesterov needs momentum > 0 (momentum is %g)", mom->f);
    if (nest && nest->set && nest->i && damp && damp->set && damp->f != 0)
        tfl__diag_at(cfg, where(nest, o), "optimizer.nesterov", "nesterov needs dampening 0");
    const char *clips[] = {"clipvalue", "clipnorm", "global_clipnorm"};
    const rval *first = NULL;
    const char *first_name = NULL;
    for (int i = 0; i < 3; i++) {
        const rval *c = tfl__rget(o, clips[i]);
        if (!c || !c->set) continue;
        if (first) {
            char p[64];
            snprintf(p, sizeof p, "optimizer.%s", clips[i]);
            tfl__diag_at(cfg, where(c, o), p, "at most one kind of clipping: %s is set as well",
                         first_name);
        } else {
            first = c;
            first_name = clips[i];
        }
    }
}


enum { LOSS_SPARSE_CE = 0, LOSS_MSE = 3 }; /* tfl__enum_loss's indices */
enum { LABEL_CLASS = 0, LABEL_VALUE = 1 }; /* the label_kind enum's */

/* The labels of a source against the loss: value targets cannot feed sparse cross-entropy. */
static void check_source(tfl_config *cfg, const rsec *s, const char *path)
{
    if (!s || s->kind != 1) return;
    const rval *lk = tfl__rget(s, "label_kind"), *lc = tfl__rget(s, "label_count");
    const rval *nl = tfl__rget(s, "no_labels");
    const rval *loss = tfl__rget(cfg->res, "loss");
    bool value = lk && lk->set && lk->i == LABEL_VALUE;
    if (lc && lc->set && lc->i > 1 && !value) {
        char p[PATH_MAX_];
        join(p, sizeof p, path, "label_count");
        tfl__diag_at(cfg, where(lc, s), p,
                     "label_count %lld needs label_kind: value (a class label is one column)",
                     (long long)lc->i);
    }
    if (value && nl && nl->set && nl->i) {
        char p[PATH_MAX_];
        join(p, sizeof p, path, "label_kind");
        tfl__diag_at(cfg, where(lk, s), p, "label_kind: value reads targets, but no_labels is "
                     "true");
    }
    if (value && loss && loss->set && loss->i == LOSS_SPARSE_CE) {
        char p[PATH_MAX_];
        join(p, sizeof p, path, "label_kind");
        tfl__diag_at(cfg, where(lk, s), p,
                     "label_kind: value gives real-valued targets, but loss "
                     "sparse_categorical_crossentropy needs class indices (a regression wants "
                     "mean_squared_error)");
    }
    const rval *dl = tfl__rget(s, "delimiter");
    if (dl && dl->set && strlen(dl->s) != 1) {
        char p[PATH_MAX_];
        join(p, sizeof p, path, "delimiter");
        tfl__diag_at(cfg, where(dl, s), p, "expected one character, got '%s'", dl->s);
    }
    const rval *ln = tfl__rget(s, "label_name"), *hd = tfl__rget(s, "header");
    if (ln && ln->set && hd && hd->set && !hd->i) {
        char p[PATH_MAX_];
        join(p, sizeof p, path, "label_name");
        tfl__diag_at(cfg, where(ln, s), p, "label_name needs header: true");
    }
}

void tfl__config_rules(tfl_config *cfg)
{
    const rsec *root = cfg->res;
    const rval *opt = tfl__rget(root, "optimizer");
    if (opt && opt->set) check_optimizer(cfg, opt->sec);
    const rval *tr = tfl__rget(root, "training");
    if (tr && tr->set) {
        const rval *dev = tfl__rget(tr->sec, "device");
        char type[8];
        int index; /* the framework's parser of device names */
        tfl_status st = dev && dev->set && strcmp(dev->s, "auto")
                            ? tfl_device_parse(dev->s, type, sizeof type, &index)
                            : TFL_OK;
        if (st == TFL_OUT_OF_RANGE)
            tfl__diag_at(cfg, where(dev, tr->sec), "training.device",
                         "the index of '%s' is out of range: a context has at most 8 GPUs "
                         "(GPU:0 to GPU:7)", dev->s);
        else if (st != TFL_OK)
            tfl__diag_at(cfg, where(dev, tr->sec), "training.device",
                         "expected auto, CPU:N, GPU or GPU:N, got '%s'", dev->s);
    }
    const rval *data = tfl__rget(root, "data");
    if (data && data->set && data->sec->vals) {
        const rsec *d = data->sec;
        const rval *val = tfl__rget(d, "validation"), *split = tfl__rget(d, "validation_split");
        if (val && val->set && split && split->set && split->f > 0)
            tfl__diag_at(cfg, where(split, d), "data.validation_split",
                         "give validation or validation_split, not both");
        const char *parts[] = {"train", "validation", "test"};
        for (int i = 0; i < 3; i++) {
            const rval *v = tfl__rget(d, parts[i]);
            char p[64];
            snprintf(p, sizeof p, "data.%s", parts[i]);
            if (v && v->set) check_source(cfg, v->sec, p);
        }
        /* validation and test data are scored with the training data's loss: same labels */
        const rval *trn = tfl__rget(d, "train");
        const rval *tk = trn && trn->set && trn->sec->kind == 1
                             ? tfl__rget(trn->sec, "label_kind")
                             : NULL;
        for (int i = 1; i < 3 && tk; i++) {
            const rval *v = tfl__rget(d, parts[i]);
            const rval *k = v && v->set && v->sec->kind == 1 ? tfl__rget(v->sec, "label_kind")
                                                             : NULL;
            if (!k || (k->i == LABEL_VALUE) == (tk->i == LABEL_VALUE)) continue;
            char p[64];
            snprintf(p, sizeof p, "data.%s.label_kind", parts[i]);
            tfl__diag_at(cfg, where(k, v->sec), p,
                         "label_kind is %s, but data.train's is %s; the sources must agree",
                         k->i == LABEL_VALUE ? "value" : "class",
                         tk->i == LABEL_VALUE ? "value" : "class");
        }
    }
    const rval *loss = tfl__rget(root, "loss"), *metrics = tfl__rget(root, "metrics");
    for (int i = 0; loss && loss->set && loss->i == LOSS_MSE && metrics && metrics->set &&
                    i < metrics->n; i++)
        if (metrics->ints[i] == 0)
            tfl__diag_at(cfg, where(metrics, root), "metrics",
                         "accuracy needs a classification loss, not mean_squared_error");
    const rval *model = tfl__rget(root, "model");
    const rval *mname = model && model->set ? tfl__rget(model->sec, "name") : NULL;
    if (mname && mname->set &&
        (!mname->s[0] || strlen(mname->s) >= 128 || strchr(mname->s, '/') || strchr(mname->s, ':')))
        tfl__diag_at(cfg, where(mname, model->sec), "model.name",
                     "a model name must be 1 to 127 bytes without '/' or ':', got '%s'", mname->s);
    const rval *layers = model && model->set ? tfl__rget(model->sec, "layers") : NULL;
    for (int i = 0; layers && layers->set && i < layers->n; i++) {
        const rsec *l = layers->list[i];
        /* random_uniform initializers: minval < maxval (tfl_init_random_uniform's rule) */
        for (int k = 0; k < l->def->n_keys; k++) {
            const rval *v = &l->vals[k];
            if (l->def->keys[k].type != VT_SEC || !v->set || !v->sec || v->sec->kind < 0 ||
                strcmp(v->sec->def->kinds->names[v->sec->kind], "random_uniform"))
                continue;
            const rval *lo = tfl__rget(v->sec, "minval"), *hi = tfl__rget(v->sec, "maxval");
            if (!lo || !hi || lo->f < hi->f) continue;
            char p[PATH_MAX_];
            snprintf(p, sizeof p, "model.layers[%d].%s.%s.random_uniform", i,
                     l->def->kinds->names[l->kind], l->def->keys[k].name);
            tfl__diag_at(cfg, where(lo, v->sec), p,
                         "minval (%g) must be less than maxval (%g)", lo->f, hi->f);
        }
        const rval *nm = tfl__rget(l, "name");
        if (!nm || !nm->set) continue;
        if (!nm->s[0] || strlen(nm->s) >= 128 || strchr(nm->s, '/') || strchr(nm->s, ':')) {
            char p[PATH_MAX_];
            snprintf(p, sizeof p, "model.layers[%d].%s.name", i, l->def->kinds->names[l->kind]);
            tfl__diag_at(cfg, nm->node, p,
                         "a layer name must be 1 to 127 bytes without '/' or ':', got '%s'", nm->s);
        }
        for (int j = 0; j < i; j++) {
            const rval *o = tfl__rget(layers->list[j], "name");
            if (o && o->set && !strcmp(o->s, nm->s)) {
                char p[PATH_MAX_];
                snprintf(p, sizeof p, "model.layers[%d].%s.name", i, l->def->kinds->names[l->kind]);
                tfl__diag_at(cfg, nm->node, p, "layer name '%s' is taken by model.layers[%d]",
                             nm->s, j);
            }
        }
    }
}
