/*
 * configs/configs_internal.h: the config loader's private structures: the arena, the YAML
 * node tree (yaml_doc.c), diagnostics (diag.c), the declarative schema (schema.c), resolved
 * values (resolve.c), emission (emit.c), overrides (override.c) and the builders (build.c).
 */
#ifndef TFL_CONFIGS_INTERNAL_H
#define TFL_CONFIGS_INTERNAL_H

#include "core_api/module_api.h" /* the framework core's declared API for modules */

#include <tapeflow/config.h>

/* ---- arena: every string and node of a config, freed at once ------------------------------ */

typedef struct tfl__arena_chunk tfl__arena_chunk;
typedef struct tfl__arena {
    tfl_ctx *ctx;
    tfl__arena_chunk *head;
    bool failed; /* an allocation failed (RESOURCE_EXHAUSTED kept) */
} tfl__arena;

void *tfl__arena_alloc(tfl__arena *a, size_t bytes);
char *tfl__arena_strndup(tfl__arena *a, const char *s, size_t n);
char *tfl__arena_strdup(tfl__arena *a, const char *s);
char *tfl__arena_printf(tfl__arena *a, const char *fmt, ...) TFL_PRINTF(2, 3);
void tfl__arena_free(tfl__arena *a);

/* ---- the YAML node tree ------------------------------------------------------------------- */

typedef enum ynode_kind { YN_SCALAR = 1, YN_SEQ, YN_MAP } ynode_kind;

typedef struct ynode {
    ynode_kind kind;
    int src;          /* 0: the file; N: the N-th override */
    int line, col;    /* 1-based; 0 for an override's nodes */
    const char *text; /* scalar text (NUL-terminated; may hold no NUL inside) */
    size_t len;
    bool quoted;                       /* a quoted or block scalar: always a string */
    struct ynode *first, *last, *next; /* children: items, or key, value, key, value... */
    size_t n;                          /* items, or pairs for a mapping */
    size_t nchild;                     /* children (a mapping: keys and values) */
} ynode;

struct tfl_config; /* diagnostics go to the config */

/** Parses len bytes of YAML (src: the node's source). Problems become diagnostics; returns
 * the root (NULL after a fatal problem or for an empty document). */
ynode *tfl__yaml_parse(struct tfl_config *cfg, const char *text, size_t len, int src);
/** The value of key `name` in a mapping, or NULL; *key receives the key node. */
ynode *tfl__ymap_get(const ynode *map, const char *name, ynode **key);
/** Appends an item (sequence) or a key and value (mapping). */
void tfl__ynode_append(ynode *parent, ynode *child);
ynode *tfl__ynode_new(tfl__arena *a, ynode_kind kind, int src, int line, int col);
bool tfl__yscalar_is(const ynode *n, const char *text);
/** A plain `null`, `~` or empty scalar. */
bool tfl__yis_null(const ynode *n);

/* ---- diagnostics ------------------------------------------------------------------------------
 */

typedef struct tfl__diag {
    tfl_config_diag d;
    int src;
    size_t seq;
    char *line_text;
} tfl__diag;

/** Adds a diagnostic at node n (NULL: the document) with the dotted path. */
void tfl__diag_at(struct tfl_config *cfg, const ynode *n, const char *path, const char *fmt, ...)
    TFL_PRINTF(4, 5);
void tfl__diag_pos(struct tfl_config *cfg, int src, int line, int col, const char *path,
                   const char *fmt, ...) TFL_PRINTF(6, 7);
/** Sorts and formats the diagnostics (after validation). */
void tfl__diag_finish(struct tfl_config *cfg);
/** " did you mean 'x'?" or "; valid: a, b, c" for `word` among names (count n), written to buf. */
void tfl__suggest(const char *word, const char *const *names, int n, char *buf, size_t size);
int tfl__edit_distance(const char *a, const char *b);

/* ---- the schema (schema.c) ----------------------------------------------------------------------
 */

typedef enum vtype {
    VT_INT = 1,
    VT_FLOAT,
    VT_BOOL,
    VT_STR,
    VT_PATH,
    VT_ENUM,
    VT_INTS,
    VT_ENUMS,
    VT_SEC,
    VT_LIST,
    VT_NAMES /* a name or a list of names (strings) */
} vtype;

enum {
    K_REQUIRED = 1u << 0, /* no default: must be given */
    K_NULLABLE = 1u << 1, /* null allowed (and the default when def is NULL) */
    K_MIN_EXCL = 1u << 2, /* range (min, ...] */
    K_MAX_EXCL = 1u << 3, /* range [..., max) */
    K_PAIR = 1u << 4,     /* VT_INTS: an int n or [h, w] (n means [n, n]) */
    K_OPTDEF = 1u << 5,   /* the default comes from tfl_optimizer_defaults */
    K_DISCRIM = 1u << 6,  /* the key chooses the section's kind */
    K_RANGE = 1u << 7,    /* min and max are checked */
    K_NEG1 = 1u << 8,     /* VT_INTS: one -1 allowed (reshape) */
    K_INPUT = 1u << 9,    /* VT_PATH: a file that must be readable */
};

typedef struct enum_def {
    const char *what; /* "layer kind" */
    const char *const *names;
    int n;
} enum_def;

typedef struct sec_def sec_def;
typedef struct key_def {
    const char *name;
    vtype type;
    unsigned kinds; /* the kinds that read the key (bit k: kind k); 0: every kind */
    unsigned flags;
    const char *def; /* the default as YAML text; NULL: required or null */
    double min, max;
    const enum_def *en;   /* VT_ENUM, VT_ENUMS */
    const sec_def *sub;   /* VT_SEC, VT_LIST */
    int min_len, max_len; /* VT_INTS, VT_LIST, VT_ENUMS */
    const char *doc;
} key_def;

struct sec_def {
    const char *name; /* for messages and docs */
    const key_def *keys;
    int n_keys;
    const enum_def *kinds; /* NULL: no kinds */
    bool variant;          /* written `kind` or `{kind: {options}}` */
    const char *doc;
};

extern const sec_def tfl__schema_root;
extern const sec_def tfl__schema_layer;
extern const enum_def tfl__enum_layer, tfl__enum_activation, tfl__enum_optimizer, tfl__enum_formula,
    tfl__enum_loss, tfl__enum_metric, tfl__enum_schedule, tfl__enum_init, tfl__enum_padding,
    tfl__enum_format;
/** The index of name in e, or -1. */
int tfl__enum_find(const enum_def *e, const char *name);
/** The key named `name` that kind reads (kind -1: any), or NULL; *other receives a key of that
 * name that other kinds read. */
const key_def *tfl__key_find(const sec_def *s, const char *name, int kind, const key_def **other);
/** A mask's kind names, "sgd, rmsprop", into buf. */
void tfl__kinds_list(const sec_def *s, unsigned mask, char *buf, size_t size);

/* ---- resolved values ------------------------------------------------------------------------- */

typedef struct rsec rsec;
typedef struct rval {
    bool set;          /* false: null */
    int64_t i;         /* VT_INT; VT_ENUM index; VT_BOOL 0/1 */
    double f;          /* VT_FLOAT */
    const char *s;     /* VT_STR, VT_PATH (resolved) */
    int n;             /* VT_INTS, VT_ENUMS, VT_LIST: count */
    int64_t *ints;     /* VT_INTS, VT_ENUMS */
    const char **names; /* VT_NAMES */
    rsec *sec;         /* VT_SEC */
    rsec **list;       /* VT_LIST */
    const ynode *node; /* where it was written (NULL: a default) */
} rval;

struct rsec {
    const sec_def *def;
    int kind;          /* the chosen kind (index in def->kinds), -1 without kinds */
    const ynode *node; /* the mapping, or the variant entry */
    rval *vals;        /* def->n_keys entries */
};

/* ---- the config ------------------------------------------------------------------------------ */

struct tfl_config {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    tfl__arena arena;
    const char *file; /* as given */
    const char *name; /* the run's name */
    const char *base_dir;
    const char **srcs; /* srcs[0] = file, srcs[i] = "--set[i]" */
    int n_srcs;
    ynode *root;
    rsec *res;
    tfl__diag *diags;
    size_t n_diags, cap_diags, total_diags;
    char *diag_all;
    char *format_text; /* host memory: tfl_config_format's last result */
    char *md_text;
    bool fatal; /* the document could not be read: no validation */
    int64_t outputs; /* the model's output width (shape inference; 0 before, or unknown) */
    bool device_scope; /* tfl_config_apply_context pushed training.device's scope */
    /* the model's layer graph (graph.c), once the config is valid: */
    bool graph;        /* a layer names its inputs: every layer's name and inputs are resolved
                          into its `name` and `inputs` values */
    int (*from)[TFL_MAX_LAYER_INPUTS + 1]; /* per layer: [0] the count, then the indices of its
                          inputs (-1: the model's input); NULL before validation */
};

/** A config record with its arena, before anything is read (config.c). */
tfl_config *tfl__config_new(tfl_ctx *ctx, const char *file, size_t n_overrides);
/** The resolved config as YAML (head: with tfl_config_format's first comment line), in host
 * memory the caller frees with tfl__host_free; NULL on RESOURCE_EXHAUSTED (emit.c). cfg
 * must be valid. */
char *tfl__config_emit(const tfl_config *cfg, bool head);
/** Validates cfg->root into cfg->res (resolve.c). */
void tfl__config_resolve(tfl_config *cfg);
/** The rules across keys, after tfl__config_resolve when it resolved the root (rules.c). */
void tfl__config_rules(tfl_config *cfg);
/** The model's layer graph: names resolved, inputs found, cycles, counts and unused layers as
 * diagnostics (graph.c). */
void tfl__config_graph(tfl_config *cfg);
/** Shape inference of the model section, diagnostics at the layers (build.c). */
void tfl__config_check_shapes(tfl_config *cfg);
/** Merges override i (1-based) into cfg->root (override.c). */
void tfl__config_override(tfl_config *cfg, int i, const char *text);
/** A resolved value by key name in a section (NULL when the key is absent; resolve.c). */
const rval *tfl__rget(const rsec *s, const char *name);
/** Appends text to a growing host buffer; false on RESOURCE_EXHAUSTED. */
typedef struct tfl__buf {
    tfl_ctx *ctx;
    char *p;
    size_t n, cap;
    bool failed;
} tfl__buf;
void tfl__buf_printf(tfl__buf *b, const char *fmt, ...) TFL_PRINTF(2, 3);
/** The shortest text that reads back as v (diag.c). */
void tfl__fmt_double(double v, char *buf, size_t size);
/** Writes one resolved scalar's YAML text. */
void tfl__fmt_scalar(const key_def *k, const rval *v, char *buf, size_t size);
/** The default options of an optimizer kind/formula index (schema indices; schema.c). */
tfl_optimizer_opts tfl__optim_defaults(int kind, int formula);

/** An optimizer key that sets a field of tfl_optimizer_opts (schema.c's list, which ends with a
 * NULL key): build.c copies each into the options, rules.c fills the K_OPTDEF ones with the
 * kind's defaults. */
typedef struct opt_field {
    const char *key;
    size_t offset; /* offsetof(tfl_optimizer_opts, field) */
    char type;     /* 'd' a double, 'b' a bool, 'n' a double that null leaves 0 (off) */
} opt_field;
extern const opt_field tfl__optimizer_fields[];

#endif /* TFL_CONFIGS_INTERNAL_H */
