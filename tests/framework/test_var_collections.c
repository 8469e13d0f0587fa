/* test_var_collections.c: tests of variable collections (membership by flags and options,
 * tfl_collection_add, release removes) and placement (device names, soft and strict
 * placement, placement logging). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Expects the kept error to have `code` and a message that starts with `prefix`, then clears
 * it. */
static void expect_error_prefix_(tfl_ctx *ctx, tfl_status code, const char *prefix, int line)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code) {
        print_error("line %d: expected %s, got %s: %s\n", line, tfl_status_name(code),
                    tfl_status_name(e.code), e.message ? e.message : "(null)");
        fail();
    }
    assert_non_null(e.message);
    if (strncmp(e.message, prefix, strlen(prefix)) != 0) {
        print_error("line %d: expected message \"%s\" to start with \"%s\"\n", line, e.message,
                    prefix);
        fail();
    }
    tfl_ctx_clear_error(ctx);
}
#define expect_error_prefix(ctx, code, prefix)                                                     \
    expect_error_prefix_((ctx), (code), (prefix), __LINE__)

static bool has_device(const tfl_ctx *ctx, const char *name)
{
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        const char *d = tfl_device_name(ctx, i);
        if (d && strcmp(d, name) == 0) return true;
    }
    return false;
}

/* ---- collections ---------------------------------------------------------------------------- */

static void test_collections_membership(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);

    tfl_tensor *a = var_f32(ctx, (const float[]){1}, 1, "a");
    tfl_tensor *b = var_f32(ctx, (const float[]){1}, 1, "b");
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    tfl_tensor *nt = tfl_variable_new(
        ctx, t, &(tfl_variable_opts){.name = "nt", .flags = TFL_VAR_NOT_TRAINABLE});
    tfl_tensor *loc = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "loc",
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    tfl_tensor *locnt = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "locnt",
                             .flags = TFL_VAR_NOT_TRAINABLE,
                             .collections = (const char *const[]){TFL_LOCAL_VARIABLES},
                             .n_collections = 1});
    tfl_tensor *two = tfl_variable_new(
        ctx, t,
        &(tfl_variable_opts){.name = "two",
                             .collections = (const char *const[]){TFL_GLOBAL_VARIABLES, "mine"},
                             .n_collections = 2});
    assert_non_null(nt);
    assert_non_null(loc);
    assert_non_null(locnt);
    assert_non_null(two);

    tfl_tensor *out[16];
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 16), 4);
    assert_ptr_equal(out[0], a); /* in creation order */
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], nt);
    assert_ptr_equal(out[3], two);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, out, 16), 4);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], loc);
    assert_ptr_equal(out[3], two);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_LOCAL_VARIABLES, out, 16), 2);
    assert_ptr_equal(out[0], loc);
    assert_ptr_equal(out[1], locnt);
    assert_int_equal(tfl_collection_get(ctx, "mine", out, 16), 1);
    assert_ptr_equal(out[0], two);

    /* count / cap */
    tfl_tensor *sentinel = (tfl_tensor *)&out;
    for (int i = 0; i < 16; i++)
        out[i] = sentinel;
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 2), 4);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], sentinel);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 4);
    assert_int_equal(tfl_collection_get(ctx, "unknown", out, 16), 0);
    assert_int_equal(tfl_collection_get(ctx, NULL, out, 16), -1);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_collection_get(NULL, TFL_GLOBAL_VARIABLES, out, 16), -1);

    /* Releasing a variable removes it from every collection. */
    tfl_tensor_release(two);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 3);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 3);
    assert_int_equal(coll_count(ctx, "mine"), 0);
    tfl_tensor_release(loc);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 1);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 2);
    tfl_tensor_release(a);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, out, 16), 2);
    assert_ptr_equal(out[0], b);
    assert_ptr_equal(out[1], nt);

    expect_no_error(ctx);
    tfl_tensor_release(b);
    tfl_tensor_release(nt);
    tfl_tensor_release(locnt);
    tfl_tensor_release(t);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_TRAINABLE_VARIABLES), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);
}

static void test_collection_add(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    uint64_t live0 = live_tensors(ctx);
    tfl_tensor *a = var_f32(ctx, (const float[]){1}, 1, "a");
    tfl_tensor *b = var_f32(ctx, (const float[]){2}, 1, "b");
    assert_int_equal(tfl_collection_add(ctx, "losses", a), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "losses", b), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "losses", a), TFL_OK); /* twice: listed twice */
    tfl_tensor *out[8];
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, "losses", out, 8), 3);
    assert_ptr_equal(out[0], a);
    assert_ptr_equal(out[1], b);
    assert_ptr_equal(out[2], a);
    /* Adding to a built-in collection. */
    assert_int_equal(tfl_collection_add(ctx, TFL_LOCAL_VARIABLES, b), TFL_OK);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 1);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 2);

    /* Errors. */
    tfl_tensor *t = vec_f32(ctx, (const float[]){1}, 1);
    assert_int_equal(tfl_collection_add(ctx, "losses", t), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_collection_add(ctx, "losses", NULL), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_collection_add(ctx, "", a), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "");
    assert_int_equal(tfl_collection_add(ctx, NULL, a), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(coll_count(ctx, "losses"), 3);

    /* A variable of another context. */
    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    tfl_tensor *ov = var_f32(other, (const float[]){1}, 1, "o");
    assert_int_equal(tfl_collection_add(ctx, "losses", ov), TFL_MISUSE);
    tfl_ctx_clear_error(ctx);
    tfl_ctx_clear_error(other);
    assert_int_equal(coll_count(ctx, "losses"), 3);
    tfl_tensor_release(ov);
    tfl_ctx_free(other);

    /* The collection does not keep its variables alive. */
    tfl_tensor_release(a);
    memset(out, 0, sizeof out);
    assert_int_equal(tfl_collection_get(ctx, "losses", out, 8), 1);
    assert_ptr_equal(out[0], b);
    tfl_tensor_release(b);
    assert_int_equal(coll_count(ctx, "losses"), 0);
    assert_int_equal(coll_count(ctx, TFL_LOCAL_VARIABLES), 0);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), live0);
}

/* ---- placement ------------------------------------------------------------------------------ */

static void test_placement_soft(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "CPU:0"});
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor_release(v);
    v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "/device:CPU:0"});
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor_release(v);

    /* Not a device name: the creating op names it. */
    uint64_t live = live_tensors(ctx);
    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "banana"}));
    expect_error_prefix(ctx, TFL_INVALID_ARGUMENT, "VarHandleOp: 'banana' is not a device name");
    assert_int_equal(live_tensors(ctx), live);

    if (has_device(ctx, "GPU:0")) {
        tfl_tensor_release(t);
        skip();
    }
    /* Soft placement: a GPU:0 scope without a GPU puts the variable on the CPU. */
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    v = tfl_variable_new(ctx, t, NULL);
    assert_non_null(v);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor *w =
        tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2}, NULL, NULL);
    assert_non_null(w);
    assert_string_equal(tfl_tensor_device(w), "CPU:0");
    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_string_equal(tfl_tensor_device(g), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);
    /* opts.device names a missing GPU: soft placement too. */
    tfl_tensor *o = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "GPU:0"});
    assert_non_null(o);
    assert_string_equal(tfl_tensor_device(o), "CPU:0");
    assert_int_equal(tfl_variable_assign_add(o, t), TFL_OK);
    expect_vals(o, TFL_DTYPE_FLOAT32, 2, 4);
    expect_no_error(ctx);

    tfl_tensor_release(o);
    tfl_tensor_release(g);
    tfl_tensor_release(w);
    tfl_tensor_release(v);
    tfl_tensor_release(t);
}

static void test_placement_strict(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.strict_placement = true}, NULL);
    assert_non_null(ctx);
    if (has_device(ctx, "GPU:0")) {
        tfl_ctx_free(ctx);
        skip();
    }
    uint64_t live0 = live_tensors(ctx);
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_int_equal(tfl_device_scope_push(ctx, "GPU:0"), TFL_OK);
    assert_null(tfl_variable_new(ctx, t, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification", "GPU:0");
    assert_null(tfl_variable_new_init(ctx, TFL_DTYPE_FLOAT32, 1, (const int64_t[]){2}, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification");
    assert_null(tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification");
    assert_int_equal(live_tensors(ctx), live0 + 1);
    /* opts.device wins over the scope. */
    tfl_tensor *c = tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "CPU:0"});
    assert_non_null(c);
    assert_string_equal(tfl_tensor_device(c), "CPU:0");
    assert_int_equal(tfl_device_scope_pop(ctx), TFL_OK);

    assert_null(tfl_variable_new(ctx, t, &(tfl_variable_opts){.device = "GPU:0"}));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "Could not satisfy device specification", "GPU:0");
    /* get_variable did not register the failed name. */
    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_string_equal(tfl_tensor_device(g), "CPU:0");
    expect_no_error(ctx);

    tfl_tensor_release(g);
    tfl_tensor_release(c);
    tfl_tensor_release(t);
    assert_int_equal(live_tensors(ctx), live0);
    tfl_ctx_free(ctx);
}

static void test_placement_logging(void **state)
{
    (void)state;
    log_capture *cap = calloc(1, sizeof *cap);
    assert_non_null(cap);
    tfl_ctx *ctx = tfl_ctx_new(
        &(tfl_ctx_opts){.log_placement = true, .log_fn = capture_log, .log_user = cap}, NULL);
    assert_non_null(ctx);
    tfl_tensor *t =
        tens(ctx, TFL_DTYPE_FLOAT32, 2, (const int64_t[]){2, 2}, (const float[]){1, 2, 3, 4});
    int n0 = count_lines(cap, op_on(ctx, "VarHandleOp"));
    assert_int_equal(n0, 0);
    tfl_tensor *v = tfl_variable_new(ctx, t, NULL);
    assert_non_null(v);
    assert_int_equal(count_lines(cap, op_on(ctx, "VarHandleOp")), 1);

    int a0 = count_lines(cap, op_on(ctx, "AssignVariableOp"));
    assert_int_equal(tfl_variable_assign(v, t), TFL_OK);
    assert_true(count_lines(cap, op_on(ctx, "AssignVariableOp")) > a0);

    int r0 = count_lines(cap, op_on(ctx, "ReadVariableOp"));
    tfl_tensor *s = tfl_variable_read(v);
    assert_non_null(s);
    assert_true(count_lines(cap, op_on(ctx, "ReadVariableOp")) > r0);

    tfl_tensor *m = tfl_matmul(ctx, v, t, 0);
    assert_non_null(m);
    assert_int_equal(count_lines(cap, op_on(ctx, "MatMul")), 1);

    tfl_tensor *g = tfl_get_variable(ctx, "g", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(g);
    assert_int_equal(count_lines(cap, op_on(ctx, "VarHandleOp")), 2);

    tfl_tensor_release(g);
    tfl_tensor_release(m);
    tfl_tensor_release(s);
    tfl_tensor_release(v);
    tfl_tensor_release(t);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
    free(cap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collections_membership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collection_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placement_soft, setup, teardown),
        cmocka_unit_test(test_placement_strict),
        cmocka_unit_test(test_placement_logging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
