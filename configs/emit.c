/*
 * configs/emit.c: the resolved config as YAML (every key explicit, in the schema's order),
 * one resolved value by its dotted path, and the schema as Markdown.
 */
#include "configs_internal.h"

#include <ctype.h>
#include <strings.h>

#include <stdio.h>
#include <stdlib.h>

static void fmt_string(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    if (size < 8) return;
    buf[o++] = '"';
    for (; *s && o + 8 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7F) {
            o += (size_t)snprintf(buf + o, size - o, "\\x%02X", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
}

void tfl__fmt_scalar(const key_def *k, const rval *v, char *buf, size_t size)
{
    if (!v->set) {
        snprintf(buf, size, "%s", k->type == VT_ENUMS ? "[]" : "null");
        return;
    }
    switch (k->type) {
    case VT_INT:
        snprintf(buf, size, "%lld", (long long)v->i);
        return;
    case VT_FLOAT:
        tfl__fmt_double(v->f, buf, size);
        return;
    case VT_BOOL:
        snprintf(buf, size, "%s", v->i ? "true" : "false");
        return;
    case VT_STR:
    case VT_PATH:
        fmt_string(v->s, buf, size);
        return;
    case VT_ENUM:
        snprintf(buf, size, "%s", k->en->names[v->i]);
        return;
    case VT_INTS:
    case VT_ENUMS: {
        size_t o = (size_t)snprintf(buf, size, "[");
        for (int i = 0; i < v->n && o < size; i++) {
            if (k->type == VT_INTS)
                o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? ", " : "",
                                      (long long)v->ints[i]);
            else
                o += (size_t)snprintf(buf + o, size - o, "%s%s", i ? ", " : "",
                                      k->en->names[v->ints[i]]);
        }
        if (o < size) snprintf(buf + o, size - o, "]");
        return;
    }
    case VT_NAMES: {
        size_t o = (size_t)snprintf(buf, size, "[");
        for (int i = 0; i < v->n && o < size; i++) {
            const char *nm = v->names[i];
            bool plain = nm[strspn(nm, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789_-.")] == '\0' &&
                         (isalpha((unsigned char)nm[0]) || nm[0] == '_') &&
                         strcasecmp(nm, "null") != 0;
            if (i) o += (size_t)snprintf(buf + o, size - o, ", ");
            if (o >= size) break;
            if (plain) {
                o += (size_t)snprintf(buf + o, size - o, "%s", nm);
            } else {
                fmt_string(nm, buf + o, size - o); /* room for it: fmt_scalar_sized */
                o += strlen(buf + o);
            }
        }
        if (o < size) snprintf(buf + o, size - o, "]");
        return;
    }
    default:
        snprintf(buf, size, "null");
        return;
    }
}

/* tfl__fmt_scalar's text of v, in small or, when it may not fit there, in a host block put in
 * *heap (the caller frees it; NULL without memory): a string escapes each byte to at most 4
 * bytes, and a list of names adds each name's quotes and separator. */
static const char *fmt_scalar_sized(tfl_ctx *ctx, const key_def *k, const rval *v, char *small,
                                    size_t n_small, char **heap)
{
    size_t room = 64;
    if (v->set && (k->type == VT_STR || k->type == VT_PATH)) room += 4 * strlen(v->s);
    if (v->set && k->type == VT_NAMES)
        for (int i = 0; i < v->n; i++)
            room += 4 * strlen(v->names[i]) + 8;
    *heap = NULL;
    if (room <= n_small) {
        tfl__fmt_scalar(k, v, small, n_small);
        return small;
    }
    *heap = tfl__host_alloc(ctx, room, 1);
    if (!*heap) return NULL;
    tfl__fmt_scalar(k, v, *heap, room);
    return *heap;
}

static bool reads(const key_def *k, int kind)
{
    return k->kinds == 0 || (kind >= 0 && (k->kinds >> kind & 1u));
}

static int keys_read(const rsec *s)
{
    int n = 0;
    for (int i = 0; i < s->def->n_keys; i++)
        n += reads(&s->def->keys[i], s->kind);
    return n;
}

static void emit_body(tfl__buf *b, const rsec *s, int indent);

static void emit_key(tfl__buf *b, const key_def *k, const rval *v, int indent)
{
    if (k->type == VT_SEC) {
        if (!v->set || !v->sec) {
            tfl__buf_printf(b, "%*s%s: null\n", indent, "", k->name);
        } else if (k->sub->variant) {
            const rsec *s = v->sec;
            if (keys_read(s) == 0) {
                tfl__buf_printf(b, "%*s%s: %s\n", indent, "", k->name,
                                s->def->kinds->names[s->kind]);
            } else {
                tfl__buf_printf(b, "%*s%s:\n%*s%s:\n", indent, "", k->name, indent + 2, "",
                                s->def->kinds->names[s->kind]);
                emit_body(b, s, indent + 4);
            }
        } else {
            tfl__buf_printf(b, "%*s%s:\n", indent, "", k->name);
            emit_body(b, v->sec, indent + 2);
        }
        return;
    }
    if (k->type == VT_LIST) {
        tfl__buf_printf(b, "%*s%s:\n", indent, "", k->name);
        for (int i = 0; i < v->n; i++) {
            const rsec *s = v->list[i];
            if (keys_read(s) == 0) {
                tfl__buf_printf(b, "%*s- %s\n", indent + 2, "", s->def->kinds->names[s->kind]);
            } else {
                tfl__buf_printf(b, "%*s- %s:\n", indent + 2, "", s->def->kinds->names[s->kind]);
                emit_body(b, s, indent + 6);
            }
        }
        return;
    }
    char small[4096], *heap;
    const char *text = fmt_scalar_sized(b->ctx, k, v, small, sizeof small, &heap);
    if (!text) {
        b->failed = true;
        return;
    }
    tfl__buf_printf(b, "%*s%s: %s\n", indent, "", k->name, text);
    tfl__host_free(b->ctx, heap);
}

static void emit_body(tfl__buf *b, const rsec *s, int indent)
{
    for (int i = 0; i < s->def->n_keys; i++)
        if (reads(&s->def->keys[i], s->kind)) emit_key(b, &s->def->keys[i], &s->vals[i], indent);
}

const char *tfl_config_format(tfl_config *cfg)
{
    if (!cfg) return NULL;
    if (!tfl_config_valid(cfg)) {
        tfl__set_error(cfg->ctx, TFL_FAILED_PRECONDITION,
                       "tfl_config_format: the config '%s' is invalid (%zu problems)", cfg->file,
                       cfg->total_diags);
        return NULL;
    }
    char *text = tfl__config_emit(cfg, true);
    if (!text) return NULL;
    if (cfg->format_text) tfl__host_free(cfg->ctx, cfg->format_text);
    cfg->format_text = text;
    return text;
}

char *tfl__config_emit(const tfl_config *cfg, bool head)
{
    tfl__buf b = {.ctx = cfg->ctx};
    if (head)
        tfl__buf_printf(&b, "# %s resolved by tapeflow %s: every key explicit\n", cfg->file,
                        TFL_VERSION_STRING);
    emit_body(&b, cfg->res, 0);
    if (b.failed) {
        tfl__host_free(cfg->ctx, b.p);
        return NULL;
    }
    return b.p;
}

/* ---- one value by path ----------------------------------------------------------------------- */

int tfl_config_get(const tfl_config *cfg, const char *path, char *buf, size_t size)
{
    if (!cfg || !path || !tfl_config_valid(cfg)) return -1;
    const rsec *s = cfg->res;
    const key_def *k = NULL;
    const rval *v = NULL;
    const char *p = path;
    while (*p) {
        if (!s) return -1;
        char seg[128];
        size_t n = strcspn(p, ".[");
        if (n == 0 || n >= sizeof seg) return -1;
        memcpy(seg, p, n);
        seg[n] = '\0';
        p += n;
        if (s->def->variant && s->kind >= 0 && !strcmp(seg, s->def->kinds->names[s->kind])) {
            if (*p == '.') p++;
            continue; /* "layers[1].dense.units" and "layers[1].units" both work */
        }
        k = NULL;
        for (int i = 0; i < s->def->n_keys; i++)
            if (!strcmp(s->def->keys[i].name, seg) && reads(&s->def->keys[i], s->kind)) {
                k = &s->def->keys[i];
                v = &s->vals[i];
            }
        if (!k) return -1;
        s = NULL;
        if (k->type == VT_SEC) {
            s = v->set ? v->sec : NULL;
        } else if (k->type == VT_LIST) {
            if (*p != '[') return -1;
            char *end;
            long idx = strtol(p + 1, &end, 10);
            if (*end != ']' || idx < 0 || idx >= v->n) return -1;
            s = v->list[idx];
            p = end + 1;
        }
        if (*p == '.') {
            p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    if (!k || !v) return -1;
    if (k->type == VT_SEC && v->set && v->sec && v->sec->def->variant && !s) return -1;
    if (k->type == VT_SEC || k->type == VT_LIST) {
        if (k->type == VT_SEC && v->set && v->sec->def->variant)
            return snprintf(buf, size, "%s", v->sec->def->kinds->names[v->sec->kind]);
        return -1;
    }
    char small[4096], *heap;
    const char *text = fmt_scalar_sized(cfg->ctx, k, v, small, sizeof small, &heap);
    if (!text) return -1;
    int n = snprintf(buf, size, "%s", text);
    tfl__host_free(cfg->ctx, heap);
    return n;
}

/* ---- the schema as Markdown ------------------------------------------------------------------ */

/** An optimizer key's default for the first kind that reads it (its default formula), into buf;
 * NULL for a key that is not a number of tfl__optimizer_fields. */
static const char *optimizer_default(const key_def *k, char *buf, size_t size)
{
    for (const opt_field *f = tfl__optimizer_fields; f->key; f++) {
        if (strcmp(f->key, k->name) || f->type != 'd') continue;
        int kind = 0;
        while (k->kinds && !(k->kinds >> kind & 1u)) kind++;
        tfl_optimizer_opts d = tfl__optim_defaults(kind, 0);
        snprintf(buf, size, "%g", *(const double *)((const char *)&d + f->offset));
        return buf;
    }
    return NULL;
}

/** An example value of a key: the table below, or a value of its kind (in buf, of size 32, when
 * made up). */
static const char *example_of(const sec_def *s, const key_def *k, char *buf)
{
    static const char *const examples[][3] = {
        {"config", "data", "{train: {format: idx, images: x.gz, labels: y.gz}}"},
        {"config", "model", "{input_shape: [784], layers: [dense: {units: 10}]}"},
        {"config", "loss", "sparse_categorical_crossentropy"},
        {"config", "metrics", "[accuracy]"},
        {"config", "optimizer", "{kind: adam, learning_rate: 3e-4}"},
        {"config", "training", "{epochs: 10, batch_size: 128}"},
        {"config", "checkpoint", "{every: 2, keep: 3}"},
        {"config", "logging", "{metrics_csv: metrics.csv}"},
        {"data", "train", "{format: csv, path: train.csv, header: true}"},
        {"data", "validation", "{format: csv, path: val.csv, header: true}"},
        {"data", "test", "{format: idx, images: t10k-images.gz, labels: t10k-labels.gz}"},
        {"data", "scale", "0.00392156862745098"},
        {"source", "format", "idx"},
        {"source", "images", "train-images-idx3-ubyte.gz"},
        {"source", "labels", "train-labels-idx1-ubyte.gz"},
        {"source", "path", "data/xor.csv"},
        {"source", "label_name", "species"},
        {"source", "label_kind", "value"},
        {"source", "label_count", "2"},
        {"source", "context_length", "128"},
        {"source", "stride", "1"},
        {"source", "tokens", "chars"},
        {"model", "name", "mlp"},
        {"model", "input_shape", "[28, 28]"},
        {"model", "layers", "[flatten, dense: {units: 10}]"},
        {"layer", "name", "hidden_1"},
        {"layer", "units", "256"},
        {"layer", "filters", "32"},
        {"layer", "kernel_size", "3"},
        {"layer", "target_shape", "[28, 28, 1]"},
        {"layer", "rate", "0.5"},
        {"layer", "input_dim", "10000"},
        {"layer", "output_dim", "64"},
        {"layer", "activation", "relu"},
        {"layer", "strides", "[2, 2]"},
        {"layer", "kernel_initializer", "he_normal"},
        {"layer", "bias_initializer", "{constant: {value: 0.1}}"},
        {"layer", "embeddings_initializer", "{random_normal: {stddev: 0.02}}"},
        {"optimizer", "name", "adam_main"},
        {"optimizer", "learning_rate", "3e-4"},
        {"optimizer", "weight_decay", "0.01"},
        {"optimizer", "momentum", "0.9"},
        {"optimizer", "dampening", "0.1"},
        {"optimizer", "beta_1", "0.9"},
        {"optimizer", "beta_2", "0.98"},
        {"optimizer", "epsilon", "1e-6"},
        {"optimizer", "rho", "0.95"},
        {"optimizer", "initial_accumulator_value", "0.1"},
        {"optimizer", "clipvalue", "0.5"},
        {"optimizer", "clipnorm", "1.0"},
        {"optimizer", "global_clipnorm", "1.0"},
        {"optimizer", "schedule", "{kind: cosine, decay_steps: 10000}"},
        {"schedule", "decay_steps", "1000"},
        {"schedule", "decay_rate", "0.96"},
        {"checkpoint", "directory", "ckpt"},
        {"logging", "metrics_csv", "logs/metrics.csv"},
    };
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        if (!strcmp(examples[i][0], s->name) && !strcmp(examples[i][1], k->name))
            return examples[i][2];
    if (k->def && k->def[0]) return k->def;
    if (k->type == VT_SEC) return "{}";
    if ((k->flags & K_OPTDEF) && optimizer_default(k, buf, 32)) return buf;
    return "null";
}

static void md_section(tfl__buf *b, const sec_def *s, const char *path)
{
    tfl__buf_printf(b,
                    "\n### %s%s%s\n\n%s.\n\n| key | type | default | range | read by | meaning | "
                    "example |\n|---|---|---|---|---|---|---|\n",
                    path[0] ? "`" : "", path[0] ? path : "The top level", path[0] ? "`" : "",
                    s->doc);
    for (int i = 0; i < s->n_keys; i++) {
        const key_def *k = &s->keys[i];
        const char *type = k->type == VT_INT     ? "integer"
                           : k->type == VT_FLOAT ? "number"
                           : k->type == VT_BOOL  ? "true/false"
                           : k->type == VT_STR   ? "string"
                           : k->type == VT_PATH  ? "path"
                           : k->type == VT_ENUM  ? k->en->what
                           : k->type == VT_INTS
                               ? (k->flags & K_PAIR ? "int or [h, w]" : "list of integers")
                           : k->type == VT_ENUMS ? "list of names"
                           : k->type == VT_NAMES ? "name or list of names"
                           : k->type == VT_SEC   ? k->sub->name
                                                 : "list";
        char def[64] = "", rng[512] = "", kinds[256] = "all";
        if (k->flags & K_REQUIRED)
            snprintf(def, sizeof def, "required");
        else if (k->flags & K_OPTDEF)
            snprintf(def, sizeof def, "by kind and formula");
        else if (k->def && k->def[0])
            snprintf(def, sizeof def, "`%s`", k->def);
        else if (k->type == VT_SEC)
            snprintf(def, sizeof def, "defaults");
        else if (k->type == VT_ENUMS)
            snprintf(def, sizeof def, "`[]`");
        else
            snprintf(def, sizeof def, "`null`");
        if (k->flags & K_RANGE) {
            char lo[32], hi[32];
            tfl__fmt_double(k->min, lo, sizeof lo);
            tfl__fmt_double(k->max, hi, sizeof hi);
            if (k->type == VT_INT || k->type == VT_INTS) {
                snprintf(lo, sizeof lo, "%.0f", k->min);
                snprintf(hi, sizeof hi, "%.0f", k->max);
            }
            if (k->max >= 1e300)
                snprintf(rng, sizeof rng, "%s %s", k->flags & K_MIN_EXCL ? ">" : ">=", lo);
            else
                snprintf(rng, sizeof rng, "%c%s, %s%c", k->flags & K_MIN_EXCL ? '(' : '[', lo, hi,
                         k->flags & K_MAX_EXCL ? ')' : ']');
        } else if (k->type == VT_ENUM || k->type == VT_ENUMS) {
            size_t o = 0;
            for (int j = 0; j < k->en->n && o < sizeof rng; j++)
                o += (size_t)snprintf(rng + o, sizeof rng - o, "%s%s", j ? ", " : "",
                                      k->en->names[j]);
        }
        if (k->kinds) tfl__kinds_list(s, k->kinds, kinds, sizeof kinds);
        char example[32];
        tfl__buf_printf(b, "| `%s` | %s | %s | %s | %s | %s | `%s: %s` |\n", k->name, type, def,
                        rng, kinds, k->doc, k->name, example_of(s, k, example));
    }
    for (int i = 0; i < s->n_keys; i++) {
        const key_def *k = &s->keys[i];
        if (k->type != VT_SEC && k->type != VT_LIST) continue;
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= s->keys[j].sub == k->sub;
        if (seen) continue;
        char p[256];
        snprintf(p, sizeof p, "%s%s%s%s", path[0] ? path : "", path[0] ? "." : "", k->name,
                 k->type == VT_LIST ? "[]" : "");
        md_section(b, k->sub, p);
    }
}

const char *tfl_config_schema_markdown(tfl_config *cfg)
{
    if (!cfg) return NULL;
    tfl__buf b = {.ctx = cfg->ctx};
    tfl__buf_printf(&b, "## Reference (generated from the schema)\n");
    md_section(&b, &tfl__schema_root, "");
    if (b.failed) {
        tfl__host_free(cfg->ctx, b.p);
        return NULL;
    }
    if (cfg->md_text) tfl__host_free(cfg->ctx, cfg->md_text);
    cfg->md_text = b.p;
    return b.p;
}
