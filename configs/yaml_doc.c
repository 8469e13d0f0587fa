/*
 * configs/yaml_doc.c: the YAML document layer on libyaml's event API: a tree of mappings,
 * sequences and scalars keeping each node's line and column and whether a scalar was quoted.
 * Bounded (see <tapeflow/config.h>): UTF-8 only, no tags, no anchors or aliases, one
 * document, depth, entries per container and nodes capped; duplicate keys are refused with
 * both positions. Its nodes and strings live in the config's arena (arena.c).
 */
#include "configs_internal.h"

#include <stdio.h>
#include <yaml.h>

/* ---- nodes --------------------------------------------------------------------------------- */

ynode *tfl__ynode_new(tfl__arena *a, ynode_kind kind, int src, int line, int col)
{
    ynode *n = tfl__arena_alloc(a, sizeof *n);
    if (n) {
        n->kind = kind;
        n->src = src;
        n->line = line;
        n->col = col;
        n->text = "";
    }
    return n;
}

void tfl__ynode_append(ynode *parent, ynode *child)
{
    child->next = NULL;
    if (parent->last)
        parent->last->next = child;
    else
        parent->first = child;
    parent->last = child;
}

ynode *tfl__ymap_get(const ynode *map, const char *name, ynode **key)
{
    if (!map || map->kind != YN_MAP) return NULL;
    for (ynode *k = map->first; k && k->next; k = k->next->next)
        if (k->kind == YN_SCALAR && !strcmp(k->text, name)) {
            if (key) *key = k;
            return k->next;
        }
    return NULL;
}

bool tfl__yscalar_is(const ynode *n, const char *text)
{
    return n && n->kind == YN_SCALAR && !strcmp(n->text, text);
}

bool tfl__yis_null(const ynode *n)
{
    return n && n->kind == YN_SCALAR && !n->quoted &&
           (n->len == 0 || !strcmp(n->text, "null") || !strcmp(n->text, "~") ||
            !strcmp(n->text, "Null") || !strcmp(n->text, "NULL"));
}

/* ---- UTF-8 ------------------------------------------------------------------------------- */

/** The offset of the first byte that is not well-formed UTF-8 (RFC 3629), or len. */
static size_t utf8_bad(const unsigned char *s, size_t len, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > len) return i;
        for (size_t k = 1; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < n; k++)
            cp = cp << 6 | (s[i + k] & 0x3F);
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0)
            return i;
        if (c == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
        i += n;
    }
    return len;
}

/* ---- parsing ----------------------------------------------------------------------------- */

typedef struct parse_state {
    tfl_config *cfg;
    int src;
    ynode *stack[TFL_CONFIG_MAX_DEPTH + 1];
    int depth;
    size_t nodes;
    ynode *root;
    int docs;
} parse_state;

static int mline(const yaml_mark_t *m, int src)
{
    return src ? 0 : (int)m->line + 1;
}
static int mcol(const yaml_mark_t *m, int src)
{
    return src ? 0 : (int)m->column + 1;
}

/** Refuses duplicate keys of a finished mapping, naming both positions. */
static void check_duplicates(parse_state *ps, const ynode *map)
{
    for (const ynode *k = map->first; k && k->next; k = k->next->next) {
        if (k->kind != YN_SCALAR) continue;
        for (const ynode *j = k->next->next; j && j->next; j = j->next->next)
            if (j->kind == YN_SCALAR && j->len == k->len && !memcmp(j->text, k->text, k->len)) {
                if (k->src || j->src)
                    tfl__diag_at(ps->cfg, j, "", "duplicate key '%s'", j->text);
                else
                    tfl__diag_at(ps->cfg, j, "", "duplicate key '%s' (first at line %d, column %d)",
                                 j->text, k->line, k->col);
                break;
            }
    }
}

/** Adds a node to the open container (or makes it the root). false: a bound was passed. */
static bool attach(parse_state *ps, ynode *n)
{
    if (ps->depth == 0) {
        ps->root = n;
        return true;
    }
    ynode *parent = ps->stack[ps->depth - 1];
    size_t cap = (parent->kind == YN_MAP ? 2u : 1u) * TFL_CONFIG_MAX_ITEMS;
    if (parent->nchild >= cap) {
        tfl__diag_at(ps->cfg, n, "", "more than %d entries in one %s", TFL_CONFIG_MAX_ITEMS,
                     parent->kind == YN_MAP ? "mapping" : "sequence");
        return false;
    }
    if (parent->kind == YN_MAP && parent->nchild % 2 == 0 && n->kind != YN_SCALAR) {
        tfl__diag_at(ps->cfg, n, "", "a mapping key must be a scalar, not a %s",
                     n->kind == YN_MAP ? "mapping" : "sequence");
        return false;
    }
    tfl__ynode_append(parent, n);
    parent->nchild++;
    parent->n = parent->kind == YN_MAP ? parent->nchild / 2 : parent->nchild;
    return true;
}

/** Handles one event; false ends the parse (a fatal problem, already reported). */
static bool on_event(parse_state *ps, const yaml_event_t *ev)
{
    tfl_config *cfg = ps->cfg;
    const yaml_mark_t *m = &ev->start_mark;
    int line = mline(m, ps->src), col = mcol(m, ps->src);
    const char *anchor = NULL, *tag = NULL;
    ynode_kind kind = 0;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++ps->docs > 1) {
            tfl__diag_pos(cfg, ps->src, line, col, "",
                          "a second YAML document: a config holds exactly one");
            return false;
        }
        if (ev->data.document_start.tag_directives.start !=
            ev->data.document_start.tag_directives.end) {
            tfl__diag_pos(cfg, ps->src, line, col, "", "%%TAG directives are not accepted");
            return false;
        }
        return true;
    case YAML_ALIAS_EVENT:
        tfl__diag_pos(cfg, ps->src, line, col, "",
                      "aliases (*%s) are not accepted in a config: write the value out",
                      (const char *)ev->data.alias.anchor);
        return false;
    case YAML_SCALAR_EVENT:
        anchor = (const char *)ev->data.scalar.anchor;
        tag = (const char *)ev->data.scalar.tag;
        kind = YN_SCALAR;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = (const char *)ev->data.sequence_start.anchor;
        tag = (const char *)ev->data.sequence_start.tag;
        kind = YN_SEQ;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = (const char *)ev->data.mapping_start.anchor;
        tag = (const char *)ev->data.mapping_start.tag;
        kind = YN_MAP;
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        ynode *n = ps->stack[--ps->depth];
        if (n->kind == YN_MAP) check_duplicates(ps, n);
        return attach(ps, n);
    }
    default:
        return true;
    }
    if (tag) {
        tfl__diag_pos(cfg, ps->src, line, col, "",
                      "tags are not accepted in a config (found '%s'): loading never runs or "
                      "builds what a file names",
                      tag);
        return false;
    }
    if (anchor) {
        tfl__diag_pos(cfg, ps->src, line, col, "",
                      "anchors (&%s) are not accepted in a config: write the value out", anchor);
        return false;
    }
    if (++ps->nodes > TFL_CONFIG_MAX_NODES) {
        tfl__diag_pos(cfg, ps->src, line, col, "", "more than %d nodes in the document",
                      TFL_CONFIG_MAX_NODES);
        return false;
    }
    ynode *n = tfl__ynode_new(&cfg->arena, kind, ps->src, line, col);
    if (!n) return false;
    if (kind == YN_SCALAR) {
        n->len = ev->data.scalar.length;
        n->text = tfl__arena_strndup(&cfg->arena, (const char *)ev->data.scalar.value, n->len);
        if (!n->text) return false;
        if (memchr(ev->data.scalar.value, '\0', n->len)) {
            tfl__diag_pos(cfg, ps->src, line, col, "", "a scalar holds a NUL character");
            return false;
        }
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        return attach(ps, n);
    }
    if (ps->depth >= TFL_CONFIG_MAX_DEPTH) {
        tfl__diag_pos(cfg, ps->src, line, col, "", "nesting deeper than %d levels",
                      TFL_CONFIG_MAX_DEPTH);
        return false;
    }
    ps->stack[ps->depth++] = n;
    return true;
}

ynode *tfl__yaml_parse(tfl_config *cfg, const char *text, size_t len, int src)
{
    int line, col;
    if (len > TFL_CONFIG_MAX_BYTES) {
        tfl__diag_pos(cfg, src, 0, 0, "", "the config is %zu bytes; the limit is %u", len,
                      TFL_CONFIG_MAX_BYTES);
        return NULL;
    }
    size_t bad = utf8_bad((const unsigned char *)text, len, &line, &col);
    if (bad < len) {
        if (text[bad] == '\0')
            tfl__diag_pos(cfg, src, src ? 0 : line, src ? 0 : col, "",
                          "a NUL byte at offset %zu (a config is text)", bad);
        else
            tfl__diag_pos(cfg, src, src ? 0 : line, src ? 0 : col, "",
                          "not UTF-8: byte 0x%02X at offset %zu (a config must be UTF-8 text)",
                          (unsigned char)text[bad], bad);
        return NULL;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        cfg->arena.failed = true; /* the config's "an allocation failed" */
        tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED, "config: libyaml has no memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    parse_state *ps = tfl__host_alloc(cfg->ctx, sizeof *ps, 16);
    if (!ps) {
        yaml_parser_delete(&parser);
        cfg->arena.failed = true;
        tfl__set_error(cfg->ctx, TFL_RESOURCE_EXHAUSTED, "config: out of memory");
        return NULL;
    }
    memset(ps, 0, sizeof *ps);
    ps->cfg = cfg;
    ps->src = src;
    bool ok = true;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            const yaml_mark_t *pm = &parser.problem_mark;
            const char *problem = parser.problem ? parser.problem : "malformed YAML";
            /* libyaml's words for a tab where YAML wants spaces ("found character that cannot
             * start any token") name neither the tab nor what to do */
            if (pm->index < len && text[pm->index] == '\t') {
                tfl__diag_pos(cfg, src, mline(pm, src), mcol(pm, src), "",
                              "a tab character (line %d, column %d): YAML indents with spaces "
                              "only; replace the tab with spaces",
                              (int)pm->line + 1, (int)pm->column + 1);
                ok = false;
                break;
            }
            if (parser.context && !src)
                tfl__diag_pos(cfg, src, mline(pm, src), mcol(pm, src), "",
                              "malformed YAML: %s %s (line %d, column %d)", problem, parser.context,
                              (int)parser.context_mark.line + 1,
                              (int)parser.context_mark.column + 1);
            else if (parser.context)
                tfl__diag_pos(cfg, src, 0, 0, "", "malformed YAML: %s %s", problem, parser.context);
            else
                tfl__diag_pos(cfg, src, mline(pm, src), mcol(pm, src), "", "malformed YAML: %s",
                              problem);
            ok = false;
            break;
        }
        bool go = on_event(ps, &ev);
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (!go || cfg->arena.failed) {
            ok = false;
            break;
        }
        if (end) break;
    }
    yaml_parser_delete(&parser);
    ynode *root = ok ? ps->root : NULL;
    tfl__host_free(cfg->ctx, ps);
    return root;
}
