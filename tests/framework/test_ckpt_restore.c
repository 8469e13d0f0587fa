/* test_ckpt_restore.c: restoring variables by name from a checkpoint: a round trip, each
 * refusal (missing, unexpected, shape, dtype, a malformed or corrupt file, a repeated or
 * non-variable entry) changing no variable and naming every mismatch, partial restores with
 * their reports, deferred variables restored without their initializers; tfl_ckpt_diff and
 * tfl_ckpt_export (weights only). */
#include "test_fixture.h"

#include <math.h>

#include "ckpt_test_util.h"
#include "tfl_test_util.h"

static tfl_tensor *var(tfl_ctx *ctx, const char *name, int64_t n, const float *v)
{
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, v);
    tfl_tensor *r = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = name});
    tfl_tensor_release(t);
    assert_non_null(r);
    return r;
}

static void set(tfl_tensor *v, int64_t n, const float *vals)
{
    tfl_tensor *t = tfl_tensor_new(tfl_tensor_ctx(v), TFL_DTYPE_FLOAT32, 1, &n, vals);
    assert_int_equal(tfl_variable_assign(v, t), TFL_OK);
    tfl_tensor_release(t);
}

typedef struct vars3 {
    tfl_tensor *v[3];
} vars3;

/* dense/kernel (3), dense/bias (2), step int64 scalar; saved to path */
static vars3 make_and_save(tfl_ctx *ctx, const char *path)
{
    vars3 s;
    s.v[0] = var(ctx, "dense/kernel", 3, (const float[]){1, 2, 3});
    s.v[1] = var(ctx, "dense/bias", 2, (const float[]){4, 5});
    tfl_tensor *st = tfl_scalar_i64(ctx, 7);
    s.v[2] = tfl_variable_new(ctx, st,
                              &(tfl_variable_opts){.name = "step", .flags = TFL_VAR_NOT_TRAINABLE});
    tfl_tensor_release(st);
    assert_int_equal(tfl_ckpt_save(ctx, path, 3, NULL, (const tfl_tensor *const *)s.v, NULL),
                     TFL_OK);
    return s;
}

static void release3(vars3 *s)
{
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(s->v[i]);
}

static void test_roundtrip(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "v.safetensors", path, sizeof path);
    vars3 s = make_and_save(ctx, path);
    set(s.v[0], 3, (const float[]){0, 0, 0});
    set(s.v[1], 2, (const float[]){0, 0});
    tfl_ckpt_restore_report rep;
    assert_int_equal(tfl_ckpt_restore(ctx, path, 3, s.v, NULL, &rep), TFL_OK);
    assert_int_equal(rep.restored, 3);
    assert_int_equal(rep.matched, 3);
    assert_int_equal(rep.missing + rep.unexpected + rep.mismatched, 0);
    expect_f32(s.v[0], (const float[]){1, 2, 3}, 3, 0);
    expect_f32(s.v[1], (const float[]){4, 5}, 2, 0);
    double step;
    assert_int_equal(tfl_tensor_get(s.v[2], 0, &step), TFL_OK);
    assert_true(step == 7);

    /* a deferred variable takes the value without running its initializer */
    tfl_tensor *def = tfl_variable_new_init(
        ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, &(tfl_initializer){.kind = TFL_INIT_ONES},
        &(tfl_variable_opts){.name = "dense/kernel", .flags = TFL_VAR_DEFERRED});
    assert_false(tfl_variable_is_initialized(def));
    assert_int_equal(tfl_ckpt_restore(ctx, path, 1, &def,
                                      &(tfl_ckpt_restore_opts){.allow_unexpected = true}, &rep),
                     TFL_OK);
    assert_true(tfl_variable_is_initialized(def));
    expect_f32(def, (const float[]){1, 2, 3}, 3, 0);
    assert_int_equal(rep.unexpected, 2);
    /* ignore_names: the tensors named are never unexpected; any other still is */
    const char *both[3] = {tfl_variable_name(s.v[1]), tfl_variable_name(s.v[2]), NULL};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 1, &s.v[0],
                                      &(tfl_ckpt_restore_opts){.ignore_names = both}, &rep),
                     TFL_OK);
    assert_int_equal(rep.unexpected, 0);
    assert_int_equal(rep.restored, 1);
    const char *one[2] = {tfl_variable_name(s.v[1]), NULL};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 1, &s.v[0],
                                      &(tfl_ckpt_restore_opts){.ignore_names = one}, &rep),
                     TFL_INVALID_ARGUMENT);
    assert_int_equal(rep.unexpected, 1);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, tfl_variable_name(s.v[2])));
    tfl_ctx_clear_error(ctx);
    tfl_tensor_release(def);
    release3(&s);
    tmpdir_remove(&d);
}

/* Every refusal leaves every variable as it was. */
static void expect_unchanged(vars3 *s)
{
    expect_f32(s->v[0], (const float[]){9, 9, 9}, 3, 0);
    expect_f32(s->v[1], (const float[]){8, 8}, 2, 0);
}

static void test_refusals_change_nothing(void **state)
{
    log_capture cap = {0};
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_ctx_set_logger(ctx, capture_log, &cap, TFL_LOG_WARNING);
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "v.safetensors", path, sizeof path);
    vars3 s = make_and_save(ctx, path);
    set(s.v[0], 3, (const float[]){9, 9, 9});
    set(s.v[1], 2, (const float[]){8, 8});
    tfl_ckpt_restore_report rep;

    /* a missing name close to an unexpected one: did you mean */
    tfl_tensor *typo = var(ctx, "dense/kernal", 3, (const float[]){0, 0, 0});
    tfl_tensor *two[3] = {typo, s.v[1], s.v[2]};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 3, two, NULL, &rep), TFL_INVALID_ARGUMENT);
    expect_msg(ctx, "restore refused, no variable changed");
    expect_msg(ctx, "1 missing ('dense/kernal' (did you mean 'dense/kernel'?))");
    expect_msg(ctx, "1 unexpected ('dense/kernel')");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(rep.missing, 1);
    assert_int_equal(rep.unexpected, 1);
    assert_int_equal(rep.restored, 0);
    assert_int_equal(count_lines_at(&cap, "no tensor for variable 'dense/kernal'", TFL_LOG_ERROR),
                     1);
    expect_unchanged(&s);

    /* missing alone: NOT_FOUND; allowed: a partial restore that reports it */
    tfl_tensor *extra = var(ctx, "other", 1, (const float[]){5});
    tfl_tensor *four[4] = {s.v[0], s.v[1], s.v[2], extra};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 4, four, NULL, &rep), TFL_NOT_FOUND);
    expect_kept_error(ctx, TFL_NOT_FOUND, "1 missing ('other')");
    expect_unchanged(&s);
    assert_int_equal(
        tfl_ckpt_restore(ctx, path, 4, four, &(tfl_ckpt_restore_opts){.allow_missing = true}, &rep),
        TFL_OK);
    assert_int_equal(rep.restored, 3);
    assert_int_equal(rep.missing, 1);
    expect_f32(extra, (const float[]){5}, 1, 0);
    expect_f32(s.v[0], (const float[]){1, 2, 3}, 3, 0);
    set(s.v[0], 3, (const float[]){9, 9, 9});
    set(s.v[1], 2, (const float[]){8, 8});

    /* unexpected alone: refused unless allowed */
    assert_int_equal(tfl_ckpt_restore(ctx, path, 2, s.v, NULL, &rep), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "1 unexpected ('step')");
    expect_unchanged(&s);

    /* shape and dtype mismatches, both named */
    tfl_tensor *wide = var(ctx, "dense/kernel", 4, (const float[]){0, 0, 0, 0});
    tfl_tensor *i32 = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){2}, NULL);
    tfl_tensor *ib = tfl_variable_new(ctx, i32, &(tfl_variable_opts){.name = "dense/bias"});
    tfl_tensor_release(i32);
    tfl_tensor *mm[3] = {wide, ib, s.v[2]};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 3, mm, NULL, &rep), TFL_INVALID_ARGUMENT);
    expect_msg(ctx, "2 shape/dtype mismatches");
    expect_msg(ctx, "'dense/kernel' (checkpoint float32 (3,), variable float32 (4,))");
    expect_msg(ctx, "'dense/bias' (checkpoint float32 (2,), variable int32 (2,))");
    tfl_ctx_clear_error(ctx);
    assert_int_equal(rep.mismatched, 2);
    double step;
    tfl_tensor_get(s.v[2], 0, &step);
    assert_true(step == 7); /* the matching step kept its value too: nothing is assigned */
    expect_f32(wide, (const float[]){0, 0, 0, 0}, 4, 0);

    /* the same variable twice, a tensor that is not a variable */
    tfl_tensor *dup[2] = {s.v[0], s.v[0]};
    assert_int_equal(tfl_ckpt_restore(ctx, path, 2, dup, NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "duplicate variable 'dense/kernel'");
    tfl_tensor *plain = tfl_scalar_f32(ctx, 1);
    assert_int_equal(tfl_ckpt_restore(ctx, path, 1, &plain, NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "is a tensor, not a variable");
    tfl_tensor_release(plain);

    /* a corrupt tensor (the last in the file) stops the restore before any assign */
    size_t n;
    unsigned char *raw = read_bytes(path, &n);
    raw[n - 1] ^= 1; /* the smallest dtype comes last: dense/kernel or dense/bias */
    write_bytes(path, raw, n);
    assert_int_equal(tfl_ckpt_restore(ctx, path, 3, s.v, NULL, &rep), TFL_DATA_LOSS);
    expect_kept_error(ctx, TFL_DATA_LOSS, "CRC mismatch");
    assert_int_equal(rep.restored, 0);
    expect_unchanged(&s);
    tfl_ckpt_restore_report none;
    /* a malformed file: nothing changed either */
    write_bytes(path, raw, 20);
    assert_int_equal(tfl_ckpt_restore(ctx, path, 3, s.v, NULL, &none), TFL_DATA_LOSS);
    tfl_ctx_clear_error(ctx);
    expect_unchanged(&s);
    free(raw);
    tfl_ctx_set_logger(ctx, NULL, NULL, TFL_LOG_ERROR);

    tfl_tensor_release(typo);
    tfl_tensor_release(extra);
    tfl_tensor_release(wide);
    tfl_tensor_release(ib);
    release3(&s);
    tmpdir_remove(&d);
}

typedef struct diff_seen {
    int n;
    char names[8][32];
    tfl_ckpt_diff_kind kinds[8];
    double max_abs[8], max_rel[8];
} diff_seen;

static void on_diff(void *user, const tfl_ckpt_diff_entry *e)
{
    diff_seen *s = user;
    if (s->n >= 8) return;
    snprintf(s->names[s->n], sizeof s->names[0], "%s", e->name);
    s->kinds[s->n] = e->kind;
    s->max_abs[s->n] = e->max_abs;
    s->max_rel[s->n++] = e->max_rel;
}

static int find_seen(const diff_seen *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) return i;
    fail_msg("no diff entry for %s", name);
    return -1;
}

static void test_diff_and_export(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char a[128], b[128], w[128];
    tmpdir_file(&d, "a.safetensors", a, sizeof a);
    tmpdir_file(&d, "b.safetensors", b, sizeof b);
    tmpdir_file(&d, "w.safetensors", w, sizeof w);
    vars3 s = make_and_save(ctx, a);
    set(s.v[0], 3, (const float[]){1, 2, 3.5f});
    tfl_tensor *only_b = var(ctx, "new", 1, (const float[]){1});
    tfl_tensor *bias3 = var(ctx, "dense/bias", 3, (const float[]){1, 2, 3});
    tfl_tensor *bb[3] = {s.v[0], bias3, only_b};
    assert_int_equal(tfl_ckpt_save(ctx, b, 3, NULL, (const tfl_tensor *const *)bb, NULL), TFL_OK);
    diff_seen seen = {0};
    int64_t nd = -1;
    assert_int_equal(tfl_ckpt_diff(ctx, a, b, on_diff, &seen, &nd), TFL_OK);
    assert_int_equal(seen.n, 4);
    assert_int_equal(nd, 4);
    int k = find_seen(&seen, "dense/kernel");
    assert_int_equal(seen.kinds[k], TFL_CKPT_DIFFERENT);
    assert_true(fabs(seen.max_abs[k] - 0.5) < 1e-12);
    assert_true(fabs(seen.max_rel[k] - 0.5 / 3.5) < 1e-12);
    assert_int_equal(seen.kinds[find_seen(&seen, "dense/bias")], TFL_CKPT_INCOMPATIBLE);
    assert_int_equal(seen.kinds[find_seen(&seen, "step")], TFL_CKPT_ONLY_IN_A);
    assert_int_equal(seen.kinds[find_seen(&seen, "new")], TFL_CKPT_ONLY_IN_B);
    memset(&seen, 0, sizeof seen);
    assert_int_equal(tfl_ckpt_diff(ctx, a, a, on_diff, &seen, &nd), TFL_OK);
    assert_int_equal(nd, 0);
    assert_int_equal(seen.kinds[find_seen(&seen, "step")], TFL_CKPT_SAME);

    /* export: a filter; src's metadata kept, the CRCs carried */
    assert_int_equal(tfl_ckpt_export(ctx, a, w, NULL, NULL, NULL), TFL_OK);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, w);
    assert_int_equal(tfl_ckpt_num_tensors(ck), 3);
    assert_string_equal(tfl_ckpt_metadata(ck, "tapeflow.exported_from"), a);
    tfl_ckpt_close(ck);
    tmpdir_remove(&d);
    tfl_tensor_release(only_b);
    tfl_tensor_release(bias3);
    release3(&s);
}

static bool keep_dense(void *user, const char *name)
{
    (void)user;
    return strncmp(name, "dense/", 6) == 0;
}

static void test_export_filter(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char a[128], w[128];
    tmpdir_file(&d, "a.safetensors", a, sizeof a);
    tmpdir_file(&d, "w.safetensors", w, sizeof w);
    vars3 s = make_and_save(ctx, a);
    assert_int_equal(tfl_ckpt_export(ctx, a, w, keep_dense, NULL, NULL), TFL_OK);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, w);
    assert_int_equal(tfl_ckpt_num_tensors(ck), 2);
    assert_true(tfl_ckpt_find(ck, "step") < 0);
    int64_t checked;
    assert_int_equal(tfl_ckpt_verify(ck, &checked), TFL_OK);
    assert_int_equal(checked, 2);
    tfl_ckpt_close(ck);
    /* the weights restore into a model's variables alone */
    set(s.v[0], 3, (const float[]){0, 0, 0});
    assert_int_equal(tfl_ckpt_restore(ctx, w, 2, s.v, NULL, NULL), TFL_OK);
    expect_f32(s.v[0], (const float[]){1, 2, 3}, 3, 0);
    /* a corrupt source is refused while copying; no file is left */
    size_t n;
    unsigned char *raw = read_bytes(a, &n);
    raw[n - 1] ^= 1;
    write_bytes(a, raw, n);
    free(raw);
    unlink(w);
    assert_int_equal(tfl_ckpt_export(ctx, a, w, keep_dense, NULL, NULL), TFL_DATA_LOSS);
    expect_kept_error(ctx, TFL_DATA_LOSS, "CRC mismatch while copying");
    assert_int_equal(tmpdir_count(&d), 1);
    tmpdir_remove(&d);
    release3(&s);
}

/* ---- allocation failures ------------------------------------------------------------------ */


/* Every allocation of a save, then of a restore, failing in turn: the call completes or says
 * RESOURCE_EXHAUSTED; a failed save leaves the older file and no temporary, a failed restore
 * no changed variable; everything is given back. */
static void test_allocation_failures(void **state)
{
    (void)state;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "v.safetensors", path, sizeof path);
    int failed_saves = 0, failed_restores = 0;
    for (uint64_t n = 0;; n++) {
        failing h = {0};
        tfl_ctx *ctx = tfl_ctx_new(
            &(tfl_ctx_opts){.alloc_fn = failing_alloc, .free_fn = failing_free, .alloc_user = &h}, NULL);
        assert_non_null(ctx);
        vars3 s = make_and_save(ctx, path); /* the older file */
        set(s.v[0], 3, (const float[]){7, 7, 7});
        h.armed = true, h.n = n;
        tfl_status st = tfl_ckpt_save(ctx, path, 3, NULL, (const tfl_tensor *const *)s.v, NULL);
        h.armed = false;
        bool save_ok = st == TFL_OK;
        if (!save_ok) {
            assert_int_equal(st, TFL_RESOURCE_EXHAUSTED);
            failed_saves++;
            tfl_ctx_clear_error(ctx);
            assert_int_equal(tmpdir_count(&d), 1);
        }
        /* the file holds one of the two saves, whole */
        set(s.v[0], 3, (const float[]){0, 0, 0});
        h.calls = 0, h.armed = true;
        st = tfl_ckpt_restore(ctx, path, 3, s.v, NULL, NULL);
        h.armed = false;
        if (st == TFL_OK) {
            float k0 = save_ok ? 7 : 1;
            expect_f32(s.v[0], (const float[]){k0, save_ok ? 7 : 2, save_ok ? 7 : 3}, 3, 0);
        } else {
            assert_int_equal(st, TFL_RESOURCE_EXHAUSTED);
            failed_restores++;
            tfl_ctx_clear_error(ctx);
            expect_f32(s.v[0], (const float[]){0, 0, 0}, 3, 0);
        }
        release3(&s);
        tfl_ctx_free(ctx);
        assert_int_equal(h.allocs, h.frees);
        if (save_ok && st == TFL_OK) break; /* n is past both calls' allocations */
    }
    assert_true(failed_saves > 0 && failed_restores > 0);
    tmpdir_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_and_export, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_filter, setup, teardown),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
