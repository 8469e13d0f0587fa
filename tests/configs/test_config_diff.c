/* test_config_diff.c: tfl_config_diff, the comparison `tapeflow train` makes on resume between
 * the config a run was trained with (its resolved YAML) and the config now: every changed key
 * with its values in both, the resumable ones marked, added and removed layers, the version
 * comment ignored, untrusted text refused with a message, and every byte given back. */
#include "config_helpers.h"

static tfl_config *parse_ok(tfl_ctx *ctx, const char *text, const char *const *sets, size_t n)
{
    tfl_status st;
    tfl_config *cfg = parse_with(ctx, text, sets, n, &st);
    if (st != TFL_OK) {
        print_error("%s", tfl_config_diagnostics(cfg));
        fail();
    }
    return cfg;
}

/* The resolved YAML of BASE_YAML with the overrides, in host memory (the caller frees). */
static char *resolved(tfl_ctx *ctx, const char *const *sets, size_t n)
{
    tfl_config *cfg = parse_ok(ctx, BASE_YAML, sets, n);
    const char *text = tfl_config_format(cfg);
    assert_non_null(text);
    char *copy = strdup(text);
    tfl_config_free(cfg);
    return copy;
}

static const tfl_config_change *find(const tfl_config_change *ch, int64_t n, const char *path)
{
    for (int64_t i = 0; i < n; i++)
        if (!strcmp(ch[i].path, path)) return &ch[i];
    print_error("no change at %s; the %lld changes:\n", path, (long long)n);
    for (int64_t i = 0; i < n; i++)
        print_error("  %s: %s -> %s\n", ch[i].path, ch[i].was ? ch[i].was : "(absent)",
                    ch[i].now ? ch[i].now : "(absent)");
    fail();
    return NULL;
}

static void expect_change(const tfl_config_change *c, const char *was, const char *now,
                          bool resumable)
{
    if (was) assert_string_equal(c->was, was);
    else assert_null(c->was);
    if (now) assert_string_equal(c->now, now);
    else assert_null(c->now);
    assert_int_equal(c->resumable, resumable);
}

static void test_same_config_has_no_changes(void **state)
{
    (void)state;
    counting c;
    tfl_ctx *ctx = counted_ctx(&c);
    char *was = resolved(ctx, NULL, 0);
    tfl_config *cfg = parse_ok(ctx, BASE_YAML, NULL, 0);
    const tfl_config_change *ch = (const void *)1;
    /* the whole text, version comment included, and the text without it */
    assert_int_equal(tfl_config_diff(cfg, was, strlen(was), &ch), 0);
    assert_non_null(ch);
    const char *body = strchr(was, '\n') + 1;
    assert_int_equal(tfl_config_diff(cfg, body, strlen(body), &ch), 0);
    /* another version's comment line is not a change */
    char *other = malloc(strlen(body) + 64);
    sprintf(other, "# t.yaml resolved by tapeflow 99.0.0: every key explicit\n%s", body);
    assert_int_equal(tfl_config_diff(cfg, other, strlen(other), &ch), 0);
    free(other);
    free(was);
    tfl_config_free(cfg);
    tfl_ctx_free(ctx);
    assert_int_equal(CTR_LIVE(&c), 0);
}

static void test_changed_keys_with_both_values(void **state)
{
    (void)state;
    counting c;
    tfl_ctx *ctx = counted_ctx(&c);
    const char *before[] = {"training.epochs=3", "optimizer.learning_rate=0.01"};
    char *was = resolved(ctx, before, 2);
    const char *after[] = {"training.epochs=5", "optimizer.learning_rate=0.02",
                           "logging.log_interval=7", "checkpoint.keep=2",
                           "model.layers[0].dense.units=16", "metrics=[accuracy]"};
    tfl_config *cfg = parse_ok(ctx, BASE_YAML, after, 6);
    const tfl_config_change *ch;
    int64_t n = tfl_config_diff(cfg, was, strlen(was), &ch);
    assert_int_equal(n, 6);
    expect_change(find(ch, n, "training.epochs"), "3", "5", true);
    expect_change(find(ch, n, "optimizer.learning_rate"), "0.01", "0.02", false);
    expect_change(find(ch, n, "logging.log_interval"), "0", "7", true);
    expect_change(find(ch, n, "checkpoint.keep"), "5", "2", true);
    expect_change(find(ch, n, "model.layers[0].dense.units"), "8", "16", false);
    expect_change(find(ch, n, "metrics"), "[]", "[accuracy]", false);
    /* in the config's key order: model before optimizer before training */
    int64_t m = -1, o = -1, t = -1;
    for (int64_t i = 0; i < n; i++) {
        if (!strncmp(ch[i].path, "model.", 6)) m = i;
        if (!strncmp(ch[i].path, "optimizer.", 10)) o = i;
        if (!strncmp(ch[i].path, "training.", 9)) t = i;
    }
    assert_true(m < o && o < t);
    free(was);
    tfl_config_free(cfg);
    tfl_ctx_free(ctx);
    assert_int_equal(CTR_LIVE(&c), 0);
}

static void test_added_and_removed_layers(void **state)
{
    fixture *f = *state;
    char *was = resolved(f->ctx, NULL, 0);
    tfl_config *cfg = parse_ok(f->ctx,
                               "data:\n"
                               "  train: {format: csv, path: xor.csv, header: true, "
                               "label_column: -1}\n"
                               "model:\n"
                               "  input_shape: [2]\n"
                               "  layers:\n"
                               "    - dense: {units: 8, activation: tanh}\n"
                               "    - dropout: {rate: 0.25}\n"
                               "    - dense: {units: 2}\n"
                               "loss: sparse_categorical_crossentropy\n",
                               NULL, 0);
    const tfl_config_change *ch;
    int64_t n = tfl_config_diff(cfg, was, strlen(was), &ch);
    assert_true(n >= 3);
    /* layer 1 was a dense layer and is a dropout layer; layer 2 is new */
    expect_change(find(ch, n, "model.layers[1].dropout.rate"), NULL, "0.25", false);
    expect_change(find(ch, n, "model.layers[1].dense.units"), "2", NULL, false);
    expect_change(find(ch, n, "model.layers[2].dense.units"), NULL, "2", false);
    /* the keys gone from the config come after those it has */
    bool gone = false;
    for (int64_t i = 0; i < n; i++) {
        if (!ch[i].now) gone = true;
        else assert_false(gone);
    }
    /* the other way round, the new layer's keys are the gone ones */
    const char *now = tfl_config_format(cfg);
    tfl_config *base = parse_ok(f->ctx, BASE_YAML, NULL, 0);
    n = tfl_config_diff(base, now, strlen(now), &ch);
    expect_change(find(ch, n, "model.layers[2].dense.units"), "2", NULL, false);
    tfl_config_free(base);
    free(was);
    tfl_config_free(cfg);
}

static void test_untrusted_text_is_refused(void **state)
{
    fixture *f = *state;
    tfl_config *cfg = parse_ok(f->ctx, BASE_YAML, NULL, 0);
    const tfl_config_change *ch = (const void *)1;
    const char *broken = "training:\n  epochs: [1, 2\n";
    assert_int_equal(tfl_config_diff(cfg, broken, strlen(broken), &ch), -1);
    assert_null(ch);
    tfl_error e = tfl_ctx_error(f->ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(e.message, "the earlier config is not a YAML config"));
    tfl_ctx_clear_error(f->ctx);
    assert_int_equal(tfl_config_diff(cfg, "42", 2, &ch), -1);
    assert_non_null(strstr(tfl_ctx_error(f->ctx).message, "not a YAML mapping"));
    tfl_ctx_clear_error(f->ctx);
    /* over the size limit, without reading it */
    assert_int_equal(tfl_config_diff(cfg, "", (size_t)TFL_CONFIG_MAX_BYTES + 1, &ch), -1);
    assert_non_null(strstr(tfl_ctx_error(f->ctx).message, "the limit is"));
    tfl_ctx_clear_error(f->ctx);
    /* an empty earlier config: every key is new */
    int64_t n = tfl_config_diff(cfg, "", 0, &ch);
    assert_true(n > 10);
    expect_change(find(ch, n, "training.epochs"), NULL, "1", true);
    /* arguments */
    assert_int_equal(tfl_config_diff(cfg, NULL, 3, &ch), -1);
    assert_int_equal(tfl_ctx_error(f->ctx).code, TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(f->ctx);
    assert_int_equal(tfl_config_diff(cfg, "a: 1", 4, NULL), -1);
    assert_int_equal(tfl_ctx_error(f->ctx).code, TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(f->ctx);
    assert_int_equal(tfl_config_diff(NULL, "a: 1", 4, &ch), -1);
    tfl_config_free(cfg);
    /* an invalid config is not compared */
    tfl_status st;
    cfg = parse_text(f->ctx, "model: 3\n", &st);
    tfl_ctx_clear_error(f->ctx);
    assert_int_equal(tfl_config_diff(cfg, "a: 1", 4, &ch), -1);
    assert_int_equal(tfl_ctx_error(f->ctx).code, TFL_FAILED_PRECONDITION);
    tfl_ctx_clear_error(f->ctx);
    tfl_config_free(cfg);
}

static void test_resumable_keys(void **state)
{
    (void)state;
    assert_true(tfl_config_key_resumable("training.epochs"));
    assert_true(tfl_config_key_resumable("logging.log_interval"));
    assert_true(tfl_config_key_resumable("checkpoint.every"));
    assert_true(tfl_config_key_resumable("training.sync_every")); /* when the host reads */
    assert_false(tfl_config_key_resumable("training.deterministic"));
    assert_false(tfl_config_key_resumable("training.batch_size"));
    assert_false(tfl_config_key_resumable("training.seed"));
    assert_false(tfl_config_key_resumable("optimizer.learning_rate"));
    assert_false(tfl_config_key_resumable("loggingx.a"));
    assert_false(tfl_config_key_resumable("checkpoints"));
    assert_false(tfl_config_key_resumable(NULL));
}

/* Every allocation of a diff failing in turn: -1 with RESOURCE_EXHAUSTED, nothing leaked. */
static void test_allocation_failures(void **state)
{
    (void)state;
    counting c;
    tfl_ctx *ctx = counted_ctx(&c);
    const char *before[] = {"training.epochs=3"};
    char *was = resolved(ctx, before, 1);
    tfl_ctx_free(ctx);
    int failed = 0;
    for (uint64_t k = 0; k < 10000; k++) {
        failing fs = {0};
        tfl_status st;
        tfl_ctx *fctx = tfl_ctx_new(&(tfl_ctx_opts){.alloc_fn = failing_alloc,
                                                     .free_fn = failing_free, .alloc_user = &fs},
                                    &st);
        assert_non_null(fctx);
        tfl_config *cfg = parse_ok(fctx, BASE_YAML, NULL, 0);
        fs.armed = true;
        fs.calls = 0;
        fs.n = k;
        const tfl_config_change *ch;
        int64_t n = tfl_config_diff(cfg, was, strlen(was), &ch);
        fs.armed = false;
        bool done = n >= 0;
        if (done && n != 1) print_error("k=%llu n=%lld\n", (unsigned long long)k, (long long)n);
        if (done) assert_int_equal(n, 1);
        else assert_int_equal(tfl_ctx_error(fctx).code, TFL_RESOURCE_EXHAUSTED), failed++;
        tfl_config_free(cfg);
        tfl_ctx_free(fctx);
        assert_int_equal(fs.allocs, fs.frees);
        if (done) break;
    }
    assert_true(failed > 3);
    free(was);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_config_has_no_changes),
        cmocka_unit_test(test_changed_keys_with_both_values),
        cmocka_unit_test_setup_teardown(test_added_and_removed_layers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_text_is_refused, setup, teardown),
        cmocka_unit_test(test_resumable_keys),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
