/*
 * configs/resolve.c: validates the YAML tree against the schema tables and resolves every
 * value (defaults filled in, paths made absolute). Scalars are typed by the schema: an
 * integer or a number is plain text in tapeflow's syntax (`1e-3`, `3.e-4`, `1_000`), a
 * boolean is `true` or `false`, a quoted scalar is a string. Every problem becomes a
 * diagnostic; validation goes on past it.
 */
#include "configs_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#define PATH_MAX_ 512

typedef struct rctx {
    tfl_config *cfg;
} rctx;

static void resolve_sec(rctx *r, const sec_def *def, const ynode *node, const ynode *at,
                        const char *path, rsec *out);

static const char *describe(tfl_config *cfg, const ynode *n)
{
    if (!n) return "nothing";
    if (n->kind == YN_MAP) return "a mapping";
    if (n->kind == YN_SEQ) return "a sequence";
    if (tfl__yis_null(n)) return "null";
    const char *fmt = n->quoted ? "the quoted string \"%.*s\"%s" : "'%.*s'%s";
    int len = n->len > 60 ? 60 : (int)n->len;
    return tfl__arena_printf(&cfg->arena, fmt, len, n->text, n->len > 60 ? "..." : "");
}

static void join(char *buf, size_t size, const char *path, const char *key)
{
    if (snprintf(buf, size, "%s%s%s", path, path[0] ? "." : "", key) >= (int)size)
        buf[size - 1] = '\0';
}

/* ---- scalar syntax ------------------------------------------------------------------------- */

/** Copies text without '_' between digits into buf; false when an '_' is misplaced. */
static bool strip_underscores(const char *t, char *buf, size_t size)
{
    size_t o = 0, n = strlen(t);
    if (n + 1 > size) return false;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '_') {
            if (i == 0 || i + 1 == n || !(t[i - 1] >= '0' && t[i - 1] <= '9') ||
                !(t[i + 1] >= '0' && t[i + 1] <= '9'))
                return false;
            continue;
        }
        buf[o++] = t[i];
    }
    buf[o] = '\0';
    return true;
}

static bool digits(const char **p)
{
    const char *s = *p;
    while (**p >= '0' && **p <= '9')
        (*p)++;
    return *p > s;
}

/** tapeflow's number syntax: [+-] (d+ [. d*] | . d+) [(e|E) [+-] d+], '_' between digits. */
static bool parse_number(const char *text, double *v, bool *integral)
{
    char buf[128];
    if (!strip_underscores(text, buf, sizeof buf)) return false;
    const char *p = buf;
    if (*p == '+' || *p == '-') p++;
    bool frac = false, exp = false;
    if (*p == '.') {
        p++;
        if (!digits(&p)) return false;
        frac = true;
    } else {
        if (!digits(&p)) return false;
        if (*p == '.') {
            p++;
            digits(&p);
            frac = true;
        }
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!digits(&p)) return false;
        exp = true;
    }
    if (*p) return false;
    errno = 0;
    *v = strtod(buf, NULL);
    if (errno == ERANGE && fabs(*v) > 1.0) return false;
    *integral = !frac && !exp;
    return isfinite(*v);
}

static bool parse_int(const char *text, int64_t *v)
{
    double d;
    bool integral;
    if (!parse_number(text, &d, &integral)) return false;
    if (integral) {
        char buf[128];
        strip_underscores(text, buf, sizeof buf);
        errno = 0;
        long long x = strtoll(buf, NULL, 10);
        if (errno == ERANGE) return false;
        *v = x;
        return true;
    }
    if (d != floor(d) || fabs(d) >= 9.2e18) return false;
    *v = (int64_t)d;
    return true;
}

/* ---- ranges -------------------------------------------------------------------------------- */

static void range_text(const key_def *k, char *buf, size_t size)
{
    char lo[32], hi[32];
    tfl__fmt_double(k->min, lo, sizeof lo);
    tfl__fmt_double(k->max, hi, sizeof hi);
    if (k->type == VT_INT || k->type == VT_INTS) {
        snprintf(lo, sizeof lo, "%.0f", k->min);
        snprintf(hi, sizeof hi, "%.0f", k->max);
    }
    if (k->max >= 1e300)
        snprintf(buf, size, "%s %s", k->flags & K_MIN_EXCL ? ">" : ">=", lo);
    else if (k->min == k->max)
        snprintf(buf, size, "%s", lo);
    else
        snprintf(buf, size, "in %c%s, %s%c", k->flags & K_MIN_EXCL ? '(' : '[', lo, hi,
                 k->flags & K_MAX_EXCL ? ')' : ']');
}

static bool in_range(const key_def *k, double v)
{
    if (!(k->flags & K_RANGE)) return true;
    if (k->flags & K_MIN_EXCL ? v <= k->min : v < k->min) return false;
    if (k->max < 1e300 && (k->flags & K_MAX_EXCL ? v >= k->max : v > k->max)) return false;
    return true;
}

static const char *type_name(const key_def *k)
{
    switch (k->type) {
    case VT_INT:
        return "an integer";
    case VT_FLOAT:
        return "a number";
    case VT_BOOL:
        return "true or false";
    case VT_STR:
        return "a string";
    case VT_PATH:
        return "a file path";
    case VT_ENUM:
        return "a name";
    case VT_INTS:
        return k->flags & K_PAIR ? "an integer or a list [h, w]" : "a list of integers";
    case VT_ENUMS:
        return "a list of names";
    case VT_SEC:
        return "a mapping";
    case VT_LIST:
        return "a list";
    case VT_NAMES:
        return "a name or a list of names";
    }
    return "?";
}

/* ---- values -------------------------------------------------------------------------------- */

/** A scalar that must be a number: explains a quoted number and YAML 1.1 habits. */
static bool scalar_number(rctx *r, const key_def *k, const ynode *n, const char *path, double *d,
                          int64_t *i)
{
    tfl_config *cfg = r->cfg;
    bool is_int = k->type == VT_INT || k->type == VT_INTS;
    const char *want = is_int ? "an integer" : "a number";
    if (n->kind != YN_SCALAR || tfl__yis_null(n)) {
        tfl__diag_at(cfg, n, path, "expected %s, got %s", want, describe(cfg, n));
        return false;
    }
    double v;
    bool integral;
    bool num = parse_number(n->text, &v, &integral);
    if (n->quoted) {
        tfl__diag_at(cfg, n, path, "expected %s, got %s%s", want, describe(cfg, n),
                     num ? "; write the number without quotes" : "");
        return false;
    }
    if (is_int) {
        if (!parse_int(n->text, i)) {
            if (num && v == floor(v)) { /* an integer, but past 64 bits */
                char rt[96] = "from -9223372036854775808 to 9223372036854775807";
                if (k->flags & K_RANGE) range_text(k, rt, sizeof rt);
                tfl__diag_at(cfg, n, path, "%s is out of range: expected an integer %s", n->text,
                             rt);
                return false;
            }
            tfl__diag_at(cfg, n, path, "expected an integer, got %s", describe(cfg, n));
            return false;
        }
        v = (double)*i;
    } else if (!num) {
        tfl__diag_at(cfg, n, path, "expected a number, got %s%s", describe(cfg, n),
                     !strcmp(n->text, ".inf") || !strcmp(n->text, ".nan") ||
                             !strcmp(n->text, "inf") || !strcmp(n->text, "nan")
                         ? " (numbers must be finite)"
                         : "");
        return false;
    }
    if (!in_range(k, v) && !strcmp(k->name, "format_version") && v > k->max) {
        tfl__diag_at(cfg, n, path,
                     "this config is written for format_version %s; tapeflow %s reads "
                     "format_version %.0f and older: use a newer tapeflow",
                     n->text, TFL_VERSION_STRING, k->max);
        return false;
    }
    if (!in_range(k, v)) {
        char rt[96];
        range_text(k, rt, sizeof rt);
        tfl__diag_at(cfg, n, path, "%s is out of range: expected %s %s", n->text, want, rt);
        return false;
    }
    *d = v;
    return true;
}

/* "a" or "an" before a word ("an initializer", "a loss"). */
static const char *article(const char *word)
{
    return word[0] && strchr("aeiou", word[0]) ? "an" : "a";
}

static bool scalar_enum(rctx *r, const enum_def *e, const ynode *n, const char *path, int64_t *out)
{
    tfl_config *cfg = r->cfg;
    if (n->kind != YN_SCALAR || tfl__yis_null(n)) {
        tfl__diag_at(cfg, n, path, "expected %s %s name, got %s", article(e->what), e->what,
                     describe(cfg, n));
        return false;
    }
    int i = tfl__enum_find(e, n->text);
    if (i < 0) {
        char sug[600];
        tfl__suggest(n->text, e->names, e->n, sug, sizeof sug);
        tfl__diag_at(cfg, n, path, "unknown %s '%s'%s", e->what, n->text, sug);
        return false;
    }
    *out = i;
    return true;
}

static void resolve_path(rctx *r, const key_def *k, const ynode *n, const char *path, rval *out)
{
    tfl_config *cfg = r->cfg;
    if (n->kind != YN_SCALAR || n->len == 0) {
        tfl__diag_at(cfg, n, path, "expected a file path, got %s", describe(cfg, n));
        return;
    }
    const char *p = n->text[0] == '/' || !cfg->base_dir
                        ? tfl__arena_strdup(&cfg->arena, n->text)
                        : tfl__arena_printf(&cfg->arena, "%s/%s", cfg->base_dir, n->text);
    if (!p) return;
    if ((k->flags & K_INPUT) && access(p, R_OK) != 0) {
        tfl__diag_at(cfg, n, path, "cannot read '%s': %s", p, strerror(errno));
        return;
    }
    out->s = p;
    out->set = true;
}

static void resolve_ints(rctx *r, const key_def *k, const ynode *n, const char *path, rval *out)
{
    tfl_config *cfg = r->cfg;
    const ynode *items = n;
    int count = 0;
    if (n->kind == YN_SCALAR && (k->flags & K_PAIR) && !tfl__yis_null(n)) {
        count = 1;
    } else if (n->kind == YN_SEQ) {
        count = (int)n->n;
        items = n->first;
    } else {
        tfl__diag_at(cfg, n, path, "expected %s, got %s", type_name(k), describe(cfg, n));
        return;
    }
    if (n->kind == YN_SEQ && (count < k->min_len || count > k->max_len)) {
        if (k->min_len == k->max_len)
            tfl__diag_at(cfg, n, path, "expected %d integers, got %d", k->min_len, count);
        else
            tfl__diag_at(cfg, n, path, "expected %d to %d integers, got %d", k->min_len, k->max_len,
                         count);
        return;
    }
    int n_out = (k->flags & K_PAIR) ? 2 : count;
    int64_t *v = tfl__arena_alloc(&cfg->arena, sizeof *v * (size_t)(n_out > 0 ? n_out : 1));
    if (!v) return;
    bool ok = true;
    int neg1 = 0;
    const ynode *it = items;
    for (int i = 0; i < count; i++, it = it->next) {
        char ip[PATH_MAX_];
        snprintf(ip, sizeof ip, "%s[%d]", path, i);
        const ynode *at = n->kind == YN_SEQ ? it : n;
        double d;
        if ((k->flags & K_NEG1) && tfl__yscalar_is(at, "-1") && !at->quoted) {
            v[i] = -1;
            if (++neg1 > 1) {
                tfl__diag_at(cfg, at, ip, "only one -1 is allowed");
                ok = false;
            }
            continue;
        }
        if (!scalar_number(r, k, at, n->kind == YN_SEQ ? ip : path, &d, &v[i])) ok = false;
    }
    if (!ok) return;
    if ((k->flags & K_PAIR) && count == 1) v[1] = v[0];
    out->ints = v;
    out->n = n_out;
    out->set = true;
}

/* A name, or a list of names (VT_NAMES): strings, 1 to k->max_len of them. */
static void resolve_names(rctx *r, const key_def *k, const ynode *n, const char *path, rval *out)
{
    tfl_config *cfg = r->cfg;
    if (n->kind == YN_MAP || (n->kind == YN_SEQ && ((int)n->n < k->min_len ||
                                                    (int)n->n > k->max_len))) {
        tfl__diag_at(cfg, n, path, "expected a name or a list of %d to %d names, got %s",
                     k->min_len, k->max_len, describe(cfg, n));
        return;
    }
    size_t count = n->kind == YN_SEQ ? n->n : 1;
    out->names = tfl__arena_alloc(&cfg->arena, sizeof *out->names * count);
    if (!out->names) return;
    int i = 0;
    bool ok = true;
    for (const ynode *it = n->kind == YN_SEQ ? n->first : n; it;
         it = n->kind == YN_SEQ ? it->next : NULL, i++) {
        char ip[PATH_MAX_];
        snprintf(ip, sizeof ip, n->kind == YN_SEQ ? "%s[%d]" : "%s", path, i);
        if (it->kind != YN_SCALAR || (!it->quoted && tfl__yis_null(it)) || !it->text[0]) {
            tfl__diag_at(cfg, it, ip, "expected a layer name, got %s", describe(cfg, it));
            ok = false;
            continue;
        }
        out->names[i] = it->text;
    }
    out->n = i;
    out->set = ok;
}

static void resolve_value(rctx *r, const key_def *k, const ynode *n, const char *path, rval *out)
{
    tfl_config *cfg = r->cfg;
    out->node = n;
    if (k->type != VT_SEC && tfl__yis_null(n)) {
        if (k->flags & K_NULLABLE) return;
        tfl__diag_at(cfg, n, path, "expected %s, got null", type_name(k));
        return;
    }
    double d;
    switch (k->type) {
    case VT_INT:
        if (scalar_number(r, k, n, path, &d, &out->i)) out->set = true;
        return;
    case VT_FLOAT: {
        int64_t unused;
        if (scalar_number(r, k, n, path, &out->f, &unused)) out->set = true;
        return;
    }
    case VT_BOOL:
        if (n->kind == YN_SCALAR && !n->quoted &&
            (!strcmp(n->text, "true") || !strcmp(n->text, "false"))) {
            out->i = n->text[0] == 't';
            out->set = true;
            return;
        }
        if (n->kind == YN_SCALAR && !n->quoted &&
            (!strcasecmp(n->text, "yes") || !strcasecmp(n->text, "no") ||
             !strcasecmp(n->text, "on") || !strcasecmp(n->text, "off") ||
             !strcasecmp(n->text, "y") || !strcasecmp(n->text, "n") || !strcmp(n->text, "True") ||
             !strcmp(n->text, "False") || !strcmp(n->text, "TRUE") || !strcmp(n->text, "FALSE")))
            tfl__diag_at(cfg, n, path,
                         "expected true or false, got '%s' (YAML 1.1 spellings such as yes, no, "
                         "on and off are not booleans here)",
                         n->text);
        else
            tfl__diag_at(cfg, n, path, "expected true or false, got %s", describe(cfg, n));
        return;
    case VT_STR:
        if (n->kind != YN_SCALAR) {
            tfl__diag_at(cfg, n, path, "expected a string, got %s", describe(cfg, n));
            return;
        }
        out->s = n->text;
        out->set = true;
        return;
    case VT_PATH:
        resolve_path(r, k, n, path, out);
        return;
    case VT_ENUM:
        if (scalar_enum(r, k->en, n, path, &out->i)) out->set = true;
        return;
    case VT_INTS:
        resolve_ints(r, k, n, path, out);
        return;
    case VT_ENUMS: {
        if (n->kind != YN_SEQ) {
            tfl__diag_at(cfg, n, path, "expected a list of %s names, got %s", k->en->what,
                         describe(cfg, n));
            return;
        }
        if ((int)n->n > k->max_len) {
            tfl__diag_at(cfg, n, path, "expected at most %d entries, got %zu", k->max_len, n->n);
            return;
        }
        out->ints = tfl__arena_alloc(&cfg->arena, sizeof(int64_t) * (n->n + 1));
        if (!out->ints) return;
        int i = 0;
        bool ok = true;
        for (const ynode *it = n->first; it; it = it->next, i++) {
            char ip[PATH_MAX_];
            snprintf(ip, sizeof ip, "%s[%d]", path, i);
            if (!scalar_enum(r, k->en, it, ip, &out->ints[i])) ok = false;
            for (int j = 0; ok && j < i; j++)
                if (out->ints[j] == out->ints[i]) {
                    tfl__diag_at(cfg, it, ip, "'%s' is listed twice", it->text);
                    ok = false;
                }
        }
        out->n = i;
        out->set = ok;
        return;
    }
    case VT_NAMES:
        resolve_names(r, k, n, path, out);
        return;
    case VT_SEC:
        if (tfl__yis_null(n) && (k->flags & K_NULLABLE)) return;
        out->sec = tfl__arena_alloc(&cfg->arena, sizeof *out->sec);
        if (!out->sec) return;
        resolve_sec(r, k->sub, tfl__yis_null(n) ? NULL : n, n, path, out->sec);
        out->set = true;
        return;
    case VT_LIST: {
        if (n->kind != YN_SEQ) {
            tfl__diag_at(cfg, n, path, "expected a list of %ss, got %s", k->sub->name,
                         describe(cfg, n));
            return;
        }
        if ((int)n->n < k->min_len || (int)n->n > k->max_len) {
            tfl__diag_at(cfg, n, path, "expected %d to %d %ss, got %zu", k->min_len, k->max_len,
                         k->sub->name, n->n);
            return;
        }
        out->list = tfl__arena_alloc(&cfg->arena, sizeof *out->list * (n->n + 1));
        if (!out->list) return;
        int i = 0;
        for (const ynode *it = n->first; it; it = it->next, i++) {
            char ip[PATH_MAX_];
            snprintf(ip, sizeof ip, "%s[%d]", path, i);
            out->list[i] = tfl__arena_alloc(&cfg->arena, sizeof *out->list[i]);
            if (!out->list[i]) return;
            resolve_sec(r, k->sub, it, it, ip, out->list[i]);
        }
        out->n = i;
        out->set = true;
        return;
    }
    }
}

/** A key's default: a synthetic plain scalar parsed like the user's text. */
static void resolve_default(rctx *r, const key_def *k, const char *path, rval *out)
{
    if (k->type == VT_SEC && k->def) {
        out->sec = tfl__arena_alloc(&r->cfg->arena, sizeof *out->sec);
        if (!out->sec) return;
        ynode *s = NULL;
        if (k->def[0]) {
            s = tfl__ynode_new(&r->cfg->arena, YN_SCALAR, 0, 0, 0);
            if (!s) return;
            s->text = k->def;
            s->len = strlen(k->def);
        }
        resolve_sec(r, k->sub, s, NULL, path, out->sec);
        out->set = true;
        return;
    }
    if (!k->def) return; /* null, an empty list, or an optimizer default filled later */
    ynode s = {.kind = YN_SCALAR, .text = k->def, .len = strlen(k->def)};
    resolve_value(r, k, &s, path, out);
    out->node = NULL;
}

/* ---- sections ------------------------------------------------------------------------------ */

static bool reads(const key_def *k, int kind)
{
    return k->kinds == 0 || (kind >= 0 && (k->kinds >> kind & 1u));
}

/** The section's kind from a variant entry (`name` or `{name: options}`): sets *opts. */
static int variant_kind(rctx *r, const sec_def *def, const ynode *node, const char *path,
                        const ynode **opts, char *kpath, size_t kpsize)
{
    tfl_config *cfg = r->cfg;
    *opts = NULL;
    const ynode *name = node;
    if (node->kind == YN_MAP) {
        if (node->n != 1) {
            const ynode *k0 = node->first;
            if (node->n > 1 && k0 && tfl__enum_find(def->kinds, k0->text) >= 0 &&
                tfl__yis_null(k0->next))
                tfl__diag_at(cfg, node, path,
                             "a %s is one %s with its options: indent the options under '%s' "
                             "(`- %s: {...}`)",
                             def->name, def->kinds->what, k0->text, k0->text);
            else
                tfl__diag_at(cfg, node, path,
                             "expected one %s with its options (`%s: {...}`), got a mapping of "
                             "%zu keys",
                             def->kinds->what, def->kinds->names[0], node->n);
            return -1;
        }
        name = node->first;
        *opts = node->first->next;
    } else if (node->kind != YN_SCALAR || tfl__yis_null(node)) {
        tfl__diag_at(cfg, node, path, "expected %s %s name or `name: {options}`, got %s",
                     article(def->kinds->what), def->kinds->what, describe(cfg, node));
        return -1;
    }
    int64_t kind;
    if (!scalar_enum(r, def->kinds, name, path, &kind)) return -1;
    snprintf(kpath, kpsize, "%s.%s", path, name->text);
    if (*opts && tfl__yis_null(*opts)) *opts = NULL;
    if (*opts && (*opts)->kind != YN_MAP) {
        tfl__diag_at(cfg, *opts, kpath, "expected the options of %s as a mapping, got %s",
                     name->text, describe(cfg, *opts));
        return -1;
    }
    return (int)kind;
}

/** Other tools' names of our keys (PyTorch, Keras 2, habits), when the section has them. */
static const char *alias_of(const char *word, const char *const *names, int n)
{
    static const char *const aliases[][2] = {
        {"lr", "learning_rate"},
        {"beta1", "beta_1"},
        {"beta2", "beta_2"},
        {"betas", "beta_1"},
        {"eps", "epsilon"},
        {"clip_norm", "clipnorm"},
        {"clip_value", "clipvalue"},
        {"global_clip_norm", "global_clipnorm"},
        {"max_epochs", "epochs"},
        {"num_epochs", "epochs"},
        {"num-epochs", "epochs"},
        {"batch", "batch_size"},
        {"out_features", "units"},
        {"out_channels", "filters"},
        {"kernel", "kernel_size"},
        {"p", "rate"},
        {"bias", "use_bias"},
        {"optimizer", "kind"},
        {"type", "kind"},
        {"initial_accumulator", "initial_accumulator_value"},
        {"momentum_decay", "momentum"},
        {"dilation", "dilation_rate"},
        {"shape", "input_shape"},
        {"stride", "strides"},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(word, aliases[i][0]))
            for (int j = 0; j < n; j++)
                if (!strcmp(names[j], aliases[i][1])) return names[j];
    return NULL;
}

/** The section where a key of this name lives ("optimizer"), searched breadth-first. */
static bool find_home(const sec_def *s, const char *path, const char *name, char *out, size_t size)
{
    for (int i = 0; i < s->n_keys; i++)
        if (!strcmp(s->keys[i].name, name) && path[0]) {
            snprintf(out, size, "%s", path);
            return true;
        }
    for (int i = 0; i < s->n_keys; i++) {
        const key_def *k = &s->keys[i];
        if ((k->type != VT_SEC && k->type != VT_LIST) || k->sub == s) continue;
        char p[256];
        snprintf(p, sizeof p, "%s%s%s%s", path, path[0] ? "." : "", k->name,
                 k->type == VT_LIST ? "[]" : "");
        if (find_home(k->sub, p, name, out, size)) return true;
    }
    return false;
}

/** Whether a written key is a near miss of `name` (its unknown-key diagnostic suggests it). */
static bool misspelled(const ynode *map, const char *name)
{
    for (const ynode *kn = map ? map->first : NULL; kn && kn->next; kn = kn->next->next) {
        size_t wl = strlen(kn->text);
        int limit = wl <= 3 ? 1 : wl <= 6 ? 2 : 3;
        if (strcmp(kn->text, name) && tfl__edit_distance(kn->text, name) <= limit) return true;
    }
    return false;
}

static void resolve_sec(rctx *r, const sec_def *def, const ynode *node, const ynode *at,
                        const char *path, rsec *out)
{
    tfl_config *cfg = r->cfg;
    out->def = def;
    out->kind = -1;
    out->node = at;
    out->vals = tfl__arena_alloc(&cfg->arena, sizeof *out->vals * (size_t)def->n_keys);
    if (!out->vals) return;
    char kpath_buf[PATH_MAX_];
    const char *kpath = path;
    const ynode *map = node;
    if (def->variant) {
        if (!node) { /* null: a variant has no defaults to fall back on (a kind is required) */
            tfl__diag_at(cfg, at, path,
                         "expected one of the %ss (`name` or `name: {options}`), got null",
                         def->kinds->what);
            return;
        }
        out->kind = variant_kind(r, def, node, path, &map, kpath_buf, sizeof kpath_buf);
        if (out->kind < 0) return;
        kpath = kpath_buf;
    } else if (node && node->kind != YN_MAP) {
        tfl__diag_at(cfg, node, path, "expected a mapping (the %s section), got %s", def->name,
                     describe(cfg, node));
        return; /* its keys are not there to check */
    }
    /* the kind of a section with a discriminating key (optimizer.kind, source.format) */
    if (!def->variant && def->kinds) {
        for (int i = 0; i < def->n_keys; i++) {
            const key_def *k = &def->keys[i];
            if (!(k->flags & K_DISCRIM)) continue;
            char p[PATH_MAX_];
            join(p, sizeof p, kpath, k->name);
            const ynode *v = tfl__ymap_get(map, k->name, NULL);
            if (v)
                resolve_value(r, k, v, p, &out->vals[i]);
            else if (k->flags & K_REQUIRED) {
                char kinds[256];
                tfl__kinds_list(def, ~0u, kinds, sizeof kinds);
                tfl__diag_at(cfg, at, p, "missing required key '%s' (one of: %s)", k->name, kinds);
            } else
                resolve_default(r, k, p, &out->vals[i]);
            if (out->vals[i].set)
                out->kind = (int)out->vals[i].i;
            else
                return; /* no kind: its options cannot be checked */
        }
    }
    /* the keys written: unknown ones, and those the kind does not read */
    for (const ynode *kn = map ? map->first : NULL; kn && kn->next; kn = kn->next->next) {
        char p[PATH_MAX_];
        join(p, sizeof p, kpath, kn->text);
        const key_def *other;
        const key_def *k = tfl__key_find(def, kn->text, out->kind, &other);
        if (k) continue;
        if (other) {
            unsigned mask = 0;
            for (int i = 0; i < def->n_keys; i++)
                if (!strcmp(def->keys[i].name, kn->text)) mask |= def->keys[i].kinds;
            char kinds[256];
            tfl__kinds_list(def, mask, kinds, sizeof kinds);
            tfl__diag_at(cfg, kn, p, "%s '%s' does not read '%s' (an option of %s only)",
                         def->kinds->what, def->kinds->names[out->kind], kn->text, kinds);
            continue;
        }
        const char *names[64];
        int n = 0;
        for (int i = 0; i < def->n_keys && n < 64; i++)
            if (reads(&def->keys[i], out->kind)) {
                bool dup = false;
                for (int j = 0; j < n; j++)
                    dup |= !strcmp(names[j], def->keys[i].name);
                if (!dup) names[n++] = def->keys[i].name;
            }
        char sug[1024], home[256];
        const char *alias = alias_of(kn->text, names, n);
        if (alias)
            snprintf(sug, sizeof sug, "; did you mean '%s'?", alias);
        else
            tfl__suggest(kn->text, names, n, sug, sizeof sug);
        if (!alias && !strstr(sug, "did you mean") &&
            find_home(&tfl__schema_root, "", kn->text, home, sizeof home))
            snprintf(sug, sizeof sug, "; it belongs in '%s'", home);
        tfl__diag_at(cfg, kn, p, "unknown key '%s'%s", kn->text, sug);
    }
    /* every key the kind reads: written, defaulted, or missing */
    for (int i = 0; i < def->n_keys; i++) {
        const key_def *k = &def->keys[i];
        if ((k->flags & K_DISCRIM) || !reads(k, out->kind)) continue;
        char p[PATH_MAX_];
        join(p, sizeof p, kpath, k->name);
        const ynode *v = tfl__ymap_get(map, k->name, NULL);
        if (v)
            resolve_value(r, k, v, p, &out->vals[i]);
        else if ((k->flags & K_REQUIRED) && !misspelled(map, k->name))
            tfl__diag_at(cfg, at, p, "missing required key '%s' (%s: %s)", k->name, type_name(k),
                         k->doc);
        else
            resolve_default(r, k, p, &out->vals[i]);
    }
}

const rval *tfl__rget(const rsec *s, const char *name)
{
    if (!s || !s->vals) return NULL;
    for (int i = 0; i < s->def->n_keys; i++)
        if (!strcmp(s->def->keys[i].name, name) && reads(&s->def->keys[i], s->kind))
            return &s->vals[i];
    return NULL;
}

void tfl__config_resolve(tfl_config *cfg)
{
    rctx r = {cfg};
    cfg->res = tfl__arena_alloc(&cfg->arena, sizeof *cfg->res);
    if (!cfg->res) return;
    if (!cfg->root) {
        if (cfg->total_diags == 0)
            tfl__diag_pos(cfg, 0, 0, 0, "", "the config is empty: it needs data, model and loss");
        return;
    }
    resolve_sec(&r, &tfl__schema_root, cfg->root, cfg->root, "", cfg->res);
}
