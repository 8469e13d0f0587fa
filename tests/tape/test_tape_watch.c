/* test_tape_watch.c: what a tape watches and records: trainable variables automatically (and
 * through tfl_variable_read), non-trainable variables and plain tensors only when watched,
 * TFL_TAPE_NO_AUTO_WATCH, nothing before tfl_tape_begin or after tfl_tape_end, nothing for
 * ops on untracked tensors or with integer/bool results; the errors of tfl_tape_watch
 * (int32, after end, NULL, another context) and of tfl_tape_begin; what recorded ops keep;
 * and running out of memory while recording and in a gradient call. */
#include "tape_helpers.h"


static tfl_tensor *var_f64(tfl_ctx *ctx, const double *v, int64_t n, unsigned flags)
{
    return var_from(ctx, F64, 1, &n, v, &(tfl_variable_opts){.flags = flags});
}

static void test_trainable_variable_watched_automatically(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_f64(ctx, (const double[]){1, -2, 3.5}, 3, 0);
    assert_true(tfl_variable_trainable(v));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_non_null(tape);
    assert_int_equal(tfl_tape_size(tape), 0);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, v, v));
    assert_int_equal(tfl_tape_size(tape), 2); /* Mul, Sum */
    assert_int_equal(tfl_tape_end(tape), TFL_OK);
    tfl_tensor *g = grad1(tape, y, v, 0);
    EXPECT_F64(g, ((const double[]){2, -4, 7}), 3, 1e-12);
    expect_shape(g, 1, (const int64_t[]){3});
    assert_false(tfl_tensor_is_variable(g));
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

static void test_non_trainable_variable_only_when_watched(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_f64(ctx, (const double[]){1, 2, -3}, 3, TFL_VAR_NOT_TRAINABLE);
    assert_false(tfl_variable_trainable(v));
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, v, v));
    assert_int_equal(tfl_tape_size(tape), 0);
    tfl_tape_end(tape);
    assert_null(grad1(tape, y, v, 0));
    tfl_tensor *z = grad1(tape, y, v, TFL_GRAD_UNCONNECTED_ZERO);
    EXPECT_F64(z, ((const double[]){0, 0, 0}), 3, 0);
    expect_shape(z, 1, (const int64_t[]){3});
    tfl_tape_free(tape);

    tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, v), TFL_OK);
    y = sum_all(ctx, tfl_mul(ctx, v, v));
    assert_int_equal(tfl_tape_size(tape), 2);
    EXPECT_F64(grad1(tape, y, v, 0), ((const double[]){2, 4, -6}), 3, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

static void test_plain_tensor_only_when_watched(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){0.5, -1.5}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    assert_int_equal(tfl_tape_size(tape), 0);
    assert_null(grad1(tape, y, x, 0));
    tfl_tape_free(tape);

    tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK); /* twice is harmless */
    assert_int_equal(tfl_tape_size(tape), 0);          /* watching records no op */
    y = sum_all(ctx, tfl_mul(ctx, x, x));
    assert_int_equal(tfl_tape_size(tape), 2);
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){1, -3}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_no_auto_watch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_f64(ctx, (const double[]){2, 3}, 2, 0);
    tfl_tensor *w = var_f64(ctx, (const double[]){-1, 4}, 2, 0);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_NO_AUTO_WATCH | TFL_TAPE_PERSISTENT);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, v, v));
    tfl_tensor *r = tfl_variable_read(v);
    assert_non_null(r);
    assert_int_equal(tfl_tape_size(tape), 0);
    assert_null(grad1(tape, y, v, 0));
    tfl_tape_free(tape);

    tape = tfl_tape_begin(ctx, TFL_TAPE_NO_AUTO_WATCH | TFL_TAPE_PERSISTENT);
    assert_int_equal(tfl_tape_watch(tape, v), TFL_OK);
    y = sum_all(ctx, tfl_mul(ctx, tfl_mul(ctx, v, v), w)); /* sum(v^2 w) */
    assert_int_equal(tfl_tape_size(tape), 3);
    tfl_tape_end(tape);
    EXPECT_F64(grad1(tape, y, v, 0), ((const double[]){-4, 24}), 2, 1e-12); /* 2 v w */
    assert_null(grad1(tape, y, w, 0));                                      /* w is not watched */
    tfl_tensor *gw = grad1(tape, y, w, TFL_GRAD_UNCONNECTED_ZERO);
    EXPECT_F64(gw, ((const double[]){0, 0}), 2, 0);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(w);
    tfl_tensor_release(v);
}

static void test_variable_read_connects_to_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_f64(ctx, (const double[]){1.5, -2}, 2, 0);
    tfl_tensor *nt = var_f64(ctx, (const double[]){3, 4}, 2, TFL_VAR_NOT_TRAINABLE);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tensor *r = tfl_variable_read(v);
    assert_int_equal(tfl_tape_size(tape), 1); /* ReadVariableOp is recorded as an Identity */
    assert_false(tfl_tensor_is_variable(r));
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, r, r));
    tfl_tensor *rn = tfl_variable_read(nt); /* not trainable: not recorded */
    assert_int_equal(tfl_tape_size(tape), 3);
    tfl_tensor *y2 = sum_all(ctx, tfl_mul(ctx, rn, r)); /* only through r */
    tfl_tape_end(tape);
    EXPECT_F64(grad1(tape, y, v, 0), ((const double[]){3, -4}), 2, 1e-12);
    EXPECT_F64(grad1(tape, y, r, 0), ((const double[]){3, -4}), 2, 1e-12);
    EXPECT_F64(grad1(tape, y2, v, 0), ((const double[]){3, 4}), 2, 1e-12);
    assert_null(grad1(tape, y2, nt, 0));
    tfl_tape_free(tape);

    /* a watched non-trainable variable connects through its reads too */
    tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, nt), TFL_OK);
    y = sum_all(ctx, tfl_exp(ctx, tfl_variable_read(nt)));
    tfl_tape_end(tape);
    EXPECT_F64(grad1(tape, y, nt, 0), ((const double[]){exp(3), exp(4)}), 2, 1e-9);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(nt);
    tfl_tensor_release(v);
}

static void test_ops_outside_recording_not_recorded(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_f64(ctx, (const double[]){2, -1}, 2, 0);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *before = sum_all(ctx, tfl_mul(ctx, v, v));
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    assert_int_equal(tfl_tape_size(tape), 0);
    tfl_tensor *during = tfl_mul(ctx, v, v);
    assert_int_equal(tfl_tape_size(tape), 1);
    assert_int_equal(tfl_tape_end(tape), TFL_OK);
    assert_int_equal(tfl_tape_end(tape), TFL_OK); /* idempotent */
    tfl_tensor *after = sum_all(ctx, tfl_mul(ctx, during, v));
    assert_int_equal(tfl_tape_size(tape), 1);
    EXPECT_F64(grad1(tape, during, v, 0), ((const double[]){4, -2}), 2, 1e-12);
    assert_null(grad1(tape, before, v, 0));
    assert_null(grad1(tape, after, v, 0));
    assert_int_equal(tfl_tape_size(tape), 1); /* gradient calls record nothing */
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(v);
}

static void test_untracked_and_integer_ops_record_nothing(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *a = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tensor *b = vec_f64(ctx, (const double[]){3, 4}, 2);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1.5, -2.5}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    tfl_tensor *c = tfl_exp(ctx, tfl_add(ctx, tfl_mul(ctx, a, b), a));
    tfl_tensor *m = tfl_matmul(ctx, tfl_reshape(ctx, a, 2, (const int64_t[]){1, 2}),
                               tfl_reshape(ctx, b, 2, (const int64_t[]){2, 1}), 0);
    assert_non_null(sum_all(ctx, tfl_concat(ctx, 2, (const tfl_tensor *[]){a, c}, 0)));
    assert_non_null(m);
    assert_int_equal(tfl_tape_size(tape), 0);

    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    /* integer and bool results carry no gradient: not recorded */
    tfl_tensor *xi = tfl_cast(ctx, x, TFL_DTYPE_INT32);
    assert_non_null(tfl_greater(ctx, x, a));
    assert_non_null(tfl_argmax(ctx, x, 0));
    assert_int_equal(tfl_tape_size(tape), 0);
    tfl_tensor *back = tfl_cast(ctx, xi, F64); /* from int32: untracked */
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, back, back));
    assert_int_equal(tfl_tape_size(tape), 0);
    tfl_tensor *y2 = sum_all(ctx, tfl_mul(ctx, x, a)); /* a tracked input: recorded */
    assert_int_equal(tfl_tape_size(tape), 2);
    tfl_tape_end(tape);
    assert_null(grad1(tape, y, x, 0));
    EXPECT_F64(grad1(tape, y2, x, 0), ((const double[]){1, 2}), 2, 0);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_watch_integer_and_bool_rejected(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tensor *i = vec_i32(ctx, (const int32_t[]){1, 2}, 2);
    assert_int_equal(tfl_tape_watch(tape, i), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "tape_watch", "int32");
    assert_int_equal(tfl_tape_watch(tape, tfl_scalar_i64(ctx, 3)), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "int64");
    assert_int_equal(tfl_tape_watch(tape, tfl_scalar_bool(ctx, true)), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "bool");
    tfl_tensor *iv =
        var_from(ctx, TFL_DTYPE_INT32, 1, (const int64_t[]){2}, (const int32_t[]){5, 6},
                 NULL); /* an int variable is never auto-watched */
    assert_int_equal(tfl_tape_watch(tape, iv), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "int32");
    assert_non_null(tfl_mul(ctx, iv, i));
    assert_int_equal(tfl_tape_size(tape), 0);
    /* the tape still works, and float32 is watched */
    tfl_tensor *f = vec_f32(ctx, (const float[]){0.5f, 2}, 2);
    assert_int_equal(tfl_tape_watch(tape, f), TFL_OK);
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, f, f));
    tfl_tape_end(tape);
    tfl_tensor *g = grad1(tape, y, f, 0);
    expect_vals_(g, TFL_DTYPE_FLOAT32, (const double[]){1, 4}, 2, 1e-6, __LINE__);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_tensor_release(iv);
}

static void test_watch_after_end(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    tfl_tape_end(tape);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "tape_watch", "not recording");
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    assert_int_equal(tfl_tape_size(tape), 0);
    assert_null(grad1(tape, y, x, 0));
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_null_and_foreign_arguments(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_null(tfl_tape_begin(NULL, 0));
    assert_null(tfl_tape_begin(ctx, 0x10));
    expect_error(ctx, TFL_INVALID_ARGUMENT, "unknown flags");
    assert_int_equal(tfl_tape_end(NULL), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_tape_size(NULL), 0);
    tfl_tape_free(NULL);

    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    tfl_tape *tape = tfl_tape_begin(ctx, TFL_TAPE_PERSISTENT);
    assert_int_equal(tfl_tape_watch(NULL, x), TFL_INVALID_ARGUMENT);
    expect_no_error(ctx); /* no tape: nothing to keep it in */
    assert_int_equal(tfl_tape_watch(tape, NULL), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "tape_watch", "NULL");
    /* the NULL of a failed op: its error is the one returned and kept */
    assert_int_equal(tfl_tape_watch(tape, tfl_tensor_to_device(ctx, x, "GPU:9")), TFL_NOT_FOUND);
    expect_error(ctx, TFL_NOT_FOUND, "GPU:9");

    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    tfl_tensor *ox = tfl_tensor_new(other, F64, 1, (const int64_t[]){2}, NULL);
    assert_non_null(ox);
    assert_int_equal(tfl_tape_watch(tape, ox), TFL_MISUSE);
    expect_error(ctx, TFL_MISUSE, "another context");
    assert_int_equal(tfl_ctx_status(other), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *y = tfl_mul(ctx, x, x);
    tfl_tensor *g = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, (const tfl_tensor *[]){ox}, &g, 0), TFL_MISUSE);
    assert_null(g);
    expect_error(ctx, TFL_MISUSE, "source 0", "another context");
    assert_int_equal(tfl_tape_gradient(tape, ox, 1, (const tfl_tensor *[]){x}, &g, 0), TFL_MISUSE);
    expect_error(ctx, TFL_MISUSE, "target", "another context");
    assert_int_equal(tfl_tape_vjp(tape, y, ox, 1, (const tfl_tensor *[]){x}, &g, 0), TFL_MISUSE);
    expect_error(ctx, TFL_MISUSE, "output gradient", "another context");
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){2, 4}), 2, 1e-12);
    tfl_tensor_release(ox);
    tfl_ctx_free(other);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A recorded op keeps only what its rule reads: nothing for Add, Sub, Sum, Mean; its result for
 * Exp; the operands of Mul (retained: no new tensor), a variable as a snapshot sharing memory. */
static void test_recorded_ops_keep_only_what_rules_need(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *a = vec_f64(ctx, (const double[]){1, 2, 3}, 3);
    tfl_tensor *b = vec_f64(ctx, (const double[]){4, 5, 6}, 3);
    tfl_tensor *v = var_f64(ctx, (const double[]){7, 8, 9}, 3, 0);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, a), TFL_OK);
    assert_int_equal(tfl_tape_watch(tape, b), TFL_OK);
    uint64_t base = live_tensors(ctx);
    tfl_alloc_stats s0, s1;
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(sum_all(ctx, tfl_sub(ctx, tfl_add(ctx, a, b), a)));
    assert_non_null(tfl_reduce_mean(ctx, b, 0, NULL, false));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_tape_size(tape), 4);
    assert_int_equal(live_tensors(ctx), base);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_exp(ctx, a));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), base + 1);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_mul(ctx, a, b));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), base + 1);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_non_null(tfl_mul(ctx, v, a));
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(live_tensors(ctx), base + 2);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    assert_int_equal(s0.bytes_in_use, s1.bytes_in_use); /* the snapshot copies nothing */
    assert_int_equal(tfl_tape_size(tape), 7);
    tfl_tape_free(tape);
    assert_int_equal(live_tensors(ctx), base);
    expect_no_error(ctx);
    tfl_tensor_release(v);
    tfl_tensor_release(b);
    tfl_tensor_release(a);
}

/* ---- a tape that runs out of memory while recording refuses gradients -------------------------
 */

typedef struct arm {
    int skip;      /* allocations let through before failing */
    int fail_next; /* > 0: the next allocations (after skip) fail */
} arm;

static void *arm_alloc(void *user, size_t bytes, size_t alignment)
{
    arm *a = user;
    if (a->fail_next > 0 && a->skip-- <= 0) {
        a->fail_next--;
        return NULL;
    }
    size_t n = (bytes + alignment - 1) / alignment * alignment;
    return aligned_alloc(alignment, n ? n : alignment);
}

static void arm_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static arm g_arm;

static int setup_arm(void **state)
{
    g_arm.fail_next = g_arm.skip = 0;
    return setup_opts(
        state, &(tfl_ctx_opts){.alloc_fn = arm_alloc, .free_fn = arm_free, .alloc_user = &g_arm});
}

static void test_out_of_memory_while_watching(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = vec_f64(ctx, (const double[]){1, 2}, 2);
    g_arm.fail_next = 1;
    assert_null(tfl_tape_begin(ctx, 0));
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "out of host memory");
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_non_null(tape);
    g_arm.fail_next = 1;
    g_arm.skip = 0;
    assert_int_equal(tfl_tape_watch(tape, x), TFL_RESOURCE_EXHAUSTED);
    g_arm.fail_next = 0;
    expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "tape");
    tfl_tensor *y = sum_all(ctx, tfl_mul(ctx, x, x));
    tfl_tape_end(tape);
    tfl_tensor *g = (tfl_tensor *)&g;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, (const tfl_tensor *[]){x}, &g, 0),
                     TFL_FAILED_PRECONDITION);
    assert_null(g);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "failed to record");
    tfl_tape_free(tape);

    /* the next tape (reusing the freed one's arrays) records normally */
    tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    y = sum_all(ctx, tfl_mul(ctx, x, x));
    EXPECT_F64(grad1(tape, y, x, 0), ((const double[]){2, 4}), 2, 1e-12);
    tfl_tape_free(tape);
    expect_no_error(ctx);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Out of memory at every step of a backward pass in turn: the call fails with every grads[i]
 * NULL and leaks nothing, until it has memory enough to succeed. */
static void test_out_of_memory_in_gradient(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *v = var_from(ctx, F64, 2, (const int64_t[]){3, 2},
                             (const double[]){0.5, -1, 0.25, 2, -0.5, 1}, NULL);
    uint64_t live = live_tensors(ctx);
    int failures = 0;
    for (int k = 0; k < 200; k++) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *x =
            tens(ctx, F64, 2, (const int64_t[]){2, 3}, (const double[]){1, 2, 3, 4, 5, 6});
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        tfl_tape_watch(tape, x);
        tfl_tensor *y =
            tfl_reduce_mean(ctx, tfl_tanh(ctx, tfl_matmul(ctx, x, v, 0)), 0, NULL, false);
        tfl_tape_end(tape);
        tfl_alloc_empty_cache(ctx);
        g_arm.skip = k;
        g_arm.fail_next = 1 << 20;
        tfl_tensor *g[2] = {(tfl_tensor *)&g, (tfl_tensor *)&g};
        tfl_status st = tfl_tape_gradient(tape, y, 2, (const tfl_tensor *[]){x, v}, g, 0);
        g_arm.fail_next = g_arm.skip = 0;
        if (st != TFL_OK) {
            failures++;
            assert_null(g[0]);
            assert_null(g[1]);
            expect_error(ctx, TFL_RESOURCE_EXHAUSTED, "out of");
        } else {
            assert_non_null(g[0]);
            assert_non_null(g[1]);
            expect_shape(g[1], 2, (const int64_t[]){3, 2});
        }
        tfl_tape_free(tape);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        assert_int_equal(live_tensors(ctx), live);
        if (st == TFL_OK) break;
    }
    assert_true(failures > 0);
    expect_no_error(ctx);
    tfl_tensor_release(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trainable_variable_watched_automatically, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_non_trainable_variable_only_when_watched, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_plain_tensor_only_when_watched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_auto_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variable_read_connects_to_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ops_outside_recording_not_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untracked_and_integer_ops_record_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_watch_integer_and_bool_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_after_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_and_foreign_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_ops_keep_only_what_rules_need, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_while_watching, setup_arm, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory_in_gradient, setup_arm, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
