/* test_config_yaml.c: the config loader's document layer: malformed YAML with libyaml's problem
 * and position, duplicate keys with both positions, and the bounds: tags, anchors and aliases
 * (a billion-laughs file is one quick error), several documents, non-UTF-8 bytes, nesting
 * depth, entries per container, the size cap, an empty document; every config gives back all
 * of its memory. */
#include "config_helpers.h"

static void test_malformed_yaml_has_libyaml_position(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "a: [1, 2\nb: 3\n", 2, 2,
                "malformed YAML: did not find expected ',' or ']' while parsing a flow sequence "
                "(line 1, column 4)");
    expect_diag(f->ctx, "a: 1\n\tb: 2\n", 2, 1,
                "a tab character (line 2, column 1): YAML indents with spaces only; replace the "
                "tab with spaces");
}

static void test_duplicate_keys_give_both_positions(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, BASE_YAML "training:\n  epochs: 2\n  epochs: 3\n", 11, 3,
                "duplicate key 'epochs' (first at line 10, column 3)");
    /* validation goes on past a duplicate key */
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, BASE_YAML "loss: mse\ntrainer: 1\n", &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    find_diag(cfg, "t.yaml:9:1: duplicate key 'loss' (first at line 8, column 1)");
    find_diag(cfg, "t.yaml:10:1: trainer: unknown key 'trainer'; did you mean 'training'?");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

static void test_tags_are_refused(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "a: !!python/object/apply:os.system ['echo hi']\n", 1, 4,
                "tags are not accepted in a config (found "
                "'tag:yaml.org,2002:python/object/apply:os.system')");
    expect_diag(f->ctx, "a: !local 3\n", 1, 4, "(found '!local')");
    expect_diag(f->ctx, "a: !!str 3\n", 1, 4, "tags are not accepted");
    expect_diag(f->ctx, "a: !!map {b: 1}\n", 1, 4, "tags are not accepted");
    expect_diag(f->ctx, "%TAG !e! tag:e.com,2000:\n---\na: 1\n", 1, 1,
                "%TAG directives are not accepted");
}

static void test_anchors_aliases_and_billion_laughs(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "a: &x 1\nb: 2\n", 1, 4, "anchors (&x) are not accepted");
    /* a billion laughs: nine levels of nine aliases; refused at the first anchor, at once */
    char doc[4096];
    size_t o = (size_t)snprintf(doc, sizeof doc, "l0: &l0 [lol, lol, lol, lol, lol]\n");
    for (int i = 1; i < 10; i++)
        o += (size_t)snprintf(doc + o, sizeof doc - o,
                              "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n",
                              i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, doc, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_config_diag_total(cfg), 1);
    assert_has(tfl_config_diag_text(cfg, 0), "t.yaml:1:5: anchors (&l0) are not accepted");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

static void test_one_document_only(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "a: 1\n---\nb: 2\n", 2, 1, "a second YAML document");
}

static void test_non_utf8_is_refused(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "a: 1\nb: caf\xe9\n", 2, 7, "not UTF-8: byte 0xE9 at offset 11");
    expect_diag(f->ctx, "a: \xc0\xaf\n", 1, 4, "not UTF-8: byte 0xC0");     /* overlong '/' */
    expect_diag(f->ctx, "a: \xed\xa0\x80\n", 1, 4, "not UTF-8: byte 0xED"); /* a surrogate */
    static const char utf16[] = "\xff\xfe"
                                "a\0:\0 \0"
                                "1\0";
    tfl_status st;
    tfl_config *cfg =
        tfl_config_parse(f->ctx, utf16, sizeof utf16 - 1, "u.yaml", NULL, NULL, 0, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_has(tfl_config_diag_text(cfg, 0), "u.yaml:1:1: not UTF-8: byte 0xFF at offset 0");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    static const char nul[] = "a: 1\nb: x\0y\n";
    cfg = tfl_config_parse(f->ctx, nul, sizeof nul - 1, "n.yaml", NULL, NULL, 0, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_string_equal(tfl_config_diag_text(cfg, 0),
                        "n.yaml:2:5: a NUL byte at offset 9 (a config is text)");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    /* UTF-8 text is fine, in comments and strings */
    cfg = parse_text(
        f->ctx, "# caf\xc3\xa9 \xe2\x9c\x93\n" BASE_YAML "model2: \"\xf0\x9f\x98\x80\"\n", &st);
    find_diag(cfg, "t.yaml:10:1: model2: unknown key 'model2'");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

static void test_depth_is_bounded(void **state)
{
    fixture *f = *state;
    char doc[512];
    /* 64 levels (the root mapping and 63 sequences) are accepted by the document layer */
    size_t o = (size_t)snprintf(doc, sizeof doc, "a: ");
    for (int i = 0; i < 63; i++)
        doc[o++] = '[';
    for (int i = 0; i < 63; i++)
        doc[o++] = ']';
    doc[o] = '\0';
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, doc, &st);
    assert_null(strstr(tfl_config_diagnostics(cfg), "nesting"));
    find_diag(cfg, "a: unknown key 'a'");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    /* one more is refused where it opens; so is a very deep file, without recursion */
    o = (size_t)snprintf(doc, sizeof doc, "a: ");
    for (int i = 0; i < 64; i++)
        doc[o++] = '[';
    for (int i = 0; i < 64; i++)
        doc[o++] = ']';
    doc[o] = '\0';
    expect_diag(f->ctx, doc, 1, 67, "nesting deeper than 64 levels");
    size_t n = 200000;
    char *deep = malloc(2 * n + 8);
    assert_non_null(deep);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    cfg = parse_text(f->ctx, deep, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_has(tfl_config_diag_text(cfg, 0), "t.yaml:1:65: nesting deeper than 64 levels");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    free(deep);
}

static void test_entries_nodes_and_size_are_bounded(void **state)
{
    fixture *f = *state;
    /* 4097 entries in one flow sequence */
    char *doc = malloc(4 + 4097 * 3 + 8);
    assert_non_null(doc);
    size_t o = (size_t)sprintf(doc, "a: [");
    for (int i = 0; i < 4097; i++)
        o += (size_t)sprintf(doc + o, "%s1", i ? ", " : "");
    sprintf(doc + o, "]\n");
    tfl_status st;
    tfl_config *cfg = parse_text(f->ctx, doc, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_has(tfl_config_diag_text(cfg, 0), "more than 4096 entries in one sequence");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    free(doc);
    /* a document over 1 MiB, from memory and from a file */
    size_t big = TFL_CONFIG_MAX_BYTES + 1;
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, '#', big);
    text[big] = '\0';
    cfg = parse_text(f->ctx, text, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_has(tfl_config_diag_text(cfg, 0),
               "t.yaml: the config is 1048577 bytes; the limit is 1048576");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    char path[] = "/tmp/tfl_big_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, big, fp), big);
    fclose(fp);
    cfg = tfl_config_load(f->ctx, path, NULL, 0, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    assert_has(tfl_config_diag_text(cfg, 0), "the config is 1048577 bytes; the limit is 1048576");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
    remove(path);
    free(text);
}

static void test_empty_and_odd_roots(void **state)
{
    fixture *f = *state;
    expect_diag(f->ctx, "", 0, 0, "t.yaml: the config is empty");
    expect_diag(f->ctx, "# only a comment\n", 0, 0, "the config is empty");
    expect_diag(f->ctx, "- a\n- b\n", 1, 1,
                "expected a mapping (the config section), got a sequence");
    expect_diag(f->ctx, "? [a, b]\n: c\n", 1, 3, "a mapping key must be a scalar, not a sequence");
}

static void test_missing_file_and_directory(void **state)
{
    fixture *f = *state;
    tfl_status st;
    tfl_config *cfg = tfl_config_load(f->ctx, "/nonexistent/x.yaml", NULL, 0, &st);
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    const tfl_config_diag *d = tfl_config_diag_at(cfg, 0);
    assert_int_equal(d->line, 0);
    assert_string_equal(d->file, "/nonexistent/x.yaml");
    assert_has(d->message, "cannot read the config: No such file or directory");
    assert_string_equal(tfl_config_diag_text(cfg, 0),
                        "/nonexistent/x.yaml: cannot read the config: No such file or directory");
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT,
                      "invalid config '/nonexistent/x.yaml': 1 problem");
    tfl_config_free(cfg);
    cfg = tfl_config_load(f->ctx, "/tmp", NULL, 0, &st);
    assert_has(tfl_config_diag_text(cfg, 0), "not a regular file");
    tfl_config_free(cfg);
    tfl_ctx_clear_error(f->ctx);
}

static void test_memory_is_given_back(void **state)
{
    (void)state;
    counting c;
    tfl_ctx *ctx = counted_ctx(&c);
    /* warm the ctx's pool of handle records (base.h): once 32 of a kind are dead, later
     * loads reuse what it keeps */
    tfl_status st0;
    for (int i = 0; i < 40; i++) {
        tfl_config_free(parse_text(ctx, BASE_YAML, &st0));
        tfl_ctx_clear_error(ctx);
    }
    long base = CTR_LIVE(&c);
    const char *docs[] = {BASE_YAML, "a: [1, 2\n", "a: &x 1\n", BASE_YAML "loss: x\nfoo: 1\n", ""};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        tfl_status st;
        tfl_config *cfg = parse_text(ctx, docs[i], &st);
        assert_non_null(cfg);
        tfl_config_free(cfg);
        tfl_ctx_clear_error(ctx);
        assert_int_equal(CTR_LIVE(&c), base);
    }
    /* a config left alive is freed with its context */
    tfl_status st;
    assert_non_null(parse_text(ctx, BASE_YAML, &st));
    assert_true(CTR_LIVE(&c) > base);
    tfl_ctx_free(ctx);
    assert_int_equal(CTR_LIVE(&c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_malformed_yaml_has_libyaml_position, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_keys_give_both_positions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tags_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors_aliases_and_billion_laughs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_document_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_utf8_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_depth_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entries_nodes_and_size_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_and_odd_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_and_directory, setup, teardown),
        cmocka_unit_test(test_memory_is_given_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
