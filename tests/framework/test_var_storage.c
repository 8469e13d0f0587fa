/* test_var_storage.c: tests of a variable's storage: assigns write in place with no
 * allocation, snapshots and views are copy-on-write, aliased and strided values, every
 * allocation failing in turn (a failed call changes nothing and leaks nothing), and freeing a
 * context with variables still alive. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tapeflow/tapeflow.h>

#include "test_fixture.h"
#include "variable_helpers.h"

/* ---- storage: in place and copy-on-write ---------------------------------------------------- */

static void test_assign_in_place(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2, 3}, 3, NULL);
    tfl_tensor *x = vec_f32(ctx, (const float[]){1, 1, 1}, 3);
    const void *p = tfl_tensor_data_ptr(v);
    assert_non_null(p);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 1, 1, 1);

    /* A converted value is written in place too. */
    tfl_tensor *iv = vec_i32(ctx, (const int32_t[]){4, 5, 6}, 3);
    assert_int_equal(tfl_variable_assign(v, iv), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_variable_assign_add(v, iv), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);

    /* An op reading the variable leaves no snapshot behind: a training-step-like frame
     * updates the variable in place. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *y = tfl_mul(ctx, v, x);
    tfl_tensor *m = tfl_matmul(ctx, tfl_reshape(ctx, x, 2, (const int64_t[]){1, 3}),
                               tfl_reshape(ctx, x, 2, (const int64_t[]){3, 1}), 0);
    assert_non_null(m);
    tfl_tensor *red = tfl_reduce_sum(ctx, v, 0, NULL, false);
    assert_int_equal(tfl_variable_assign_sub(v, y), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(y, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(red, TFL_DTYPE_FLOAT32, 30);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    /* Failed assigns leave the storage alone. */
    tfl_tensor *bad = vec_f32(ctx, (const float[]){1, 2}, 2);
    assert_int_equal(tfl_variable_assign(v, bad), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    tfl_tensor_release(bad);
    tfl_tensor_release(iv);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_assign_add_no_allocation(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    int64_t n = 256;
    tfl_tensor *z = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    tfl_tensor *v = tfl_variable_new(ctx, z, NULL);
    tfl_tensor_release(z);
    tfl_tensor *d = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, &n);
    assert_non_null(v);
    assert_non_null(d);
    const void *p = tfl_tensor_data_ptr(v);

    /* Warm-up. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_variable_assign_add(v, d), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);

    tfl_alloc_stats s0, s1, smid;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    memset(&smid, 0, sizeof smid);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(tfl_variable_assign_add(v, d), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &smid), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);

    /* Inside the frame, after 100 calls: nothing new. */
    assert_int_equal(smid.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(smid.cache_hits, s0.cache_hits);
    assert_int_equal(smid.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(smid.live_tensors, s0.live_tensors);
    /* And after the pop. */
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.cache_hits, s0.cache_hits);
    assert_int_equal(s1.frees, s0.frees);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s1.live_tensors, s0.live_tensors);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    float out[256];
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    for (int i = 0; i < 256; i++)
        assert_true(out[i] == 101.0f);

    /* The same for assign_sub and assign, with no frame. */
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s0), TFL_OK);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(tfl_variable_assign_sub(v, d), TFL_OK);
        assert_int_equal(tfl_variable_assign(v, d), TFL_OK);
    }
    assert_int_equal(tfl_alloc_stats_get(ctx, NULL, &s1), TFL_OK);
    assert_int_equal(s1.fresh_allocs, s0.fresh_allocs);
    assert_int_equal(s1.cache_hits, s0.cache_hits);
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    assert_int_equal(tfl_tensor_to_host(v, out, sizeof out), TFL_OK);
    for (int i = 0; i < 256; i++)
        assert_true(out[i] == 1.0f);
    tfl_tensor_release(d);
    tfl_tensor_release(v);
}

static void test_copy_on_write_read_snapshot(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_tensor *v = var_f32(ctx, (const float[]){1, 2, 3}, 3, NULL);
    tfl_tensor *x = vec_f32(ctx, (const float[]){4, 5, 6}, 3);
    const void *p0 = tfl_tensor_data_ptr(v);

    tfl_tensor *s = tfl_variable_read(v);
    assert_non_null(s);
    assert_ptr_equal(tfl_tensor_data_ptr(s), p0); /* no copy at read time */
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);
    expect_shape(s, 1, (const int64_t[]){3});

    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);
    const void *p1 = tfl_tensor_data_ptr(v);
    assert_ptr_not_equal(p1, p0);
    assert_ptr_equal(tfl_tensor_data_ptr(s), p0);

    /* The snapshot no longer shares the variable's memory: the next assign is in place. */
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3);

    tfl_tensor_release(s);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);

    /* A snapshot taken before assign_add / assign_sub. */
    s = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 4, 5, 6);
    expect_vals(v, TFL_DTYPE_FLOAT32, 8, 10, 12);
    tfl_tensor *s2 = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(s2, TFL_DTYPE_FLOAT32, 8, 10, 12);
    expect_vals(s, TFL_DTYPE_FLOAT32, 4, 5, 6);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);
    tfl_tensor_release(s);
    tfl_tensor_release(s2);
    const void *p2 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p2);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0);

    /* A frame-owned snapshot: the pop ends the sharing. */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    s = tfl_variable_read(v);
    assert_non_null(s);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(s, TFL_DTYPE_FLOAT32, 0, 0, 0);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    const void *p3 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p3);
    expect_vals(v, TFL_DTYPE_FLOAT32, 4, 5, 6);

    /* A failed assign with a snapshot alive changes nothing. */
    s = tfl_variable_read(v);
    tfl_tensor *bad = vec_f32(ctx, (const float[]){1}, 1);
    assert_int_equal(tfl_variable_assign(v, bad), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    assert_ptr_equal(tfl_tensor_data_ptr(v), tfl_tensor_data_ptr(s));
    tfl_tensor_release(bad);
    tfl_tensor_release(s);

    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

static void test_copy_on_write_views(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);
    tfl_tensor *x = tens(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){10, 20, 30, 40});
    const void *p0 = tfl_tensor_data_ptr(v);

    /* reshape */
    tfl_tensor *r = tfl_reshape(ctx, v, 1, (const int64_t[]){4});
    assert_non_null(r);
    assert_ptr_equal(tfl_tensor_data_ptr(r), p0); /* a view of the variable's memory */
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(r, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    const void *p1 = tfl_tensor_data_ptr(v);
    assert_ptr_not_equal(p1, p0);
    tfl_tensor_release(r);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p1);
    expect_vals(v, TFL_DTYPE_FLOAT32, 20, 40, 60, 80);

    /* transpose */
    tfl_tensor *t = tfl_transpose(ctx, v, NULL);
    assert_non_null(t);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    expect_vals(t, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    tfl_tensor_release(t);
    const void *p2 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign_sub(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p2);

    /* slice */
    tfl_tensor *sl = tfl_slice(ctx, v, (const int64_t[]){1, 0}, (const int64_t[]){1, 2});
    assert_non_null(sl);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    expect_vals(sl, TFL_DTYPE_FLOAT32, 0, 0);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    tfl_tensor_release(sl);
    const void *p3 = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, x), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p3);

    /* A view of a snapshot keeps the snapshot's value too. */
    tfl_tensor *s = tfl_variable_read(v);
    tfl_tensor *rs = tfl_reshape(ctx, s, 1, (const int64_t[]){4});
    tfl_tensor_release(s);
    assert_int_equal(tfl_variable_assign_add(v, x), TFL_OK);
    expect_vals(rs, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    expect_vals(v, TFL_DTYPE_FLOAT32, 20, 40, 60, 80);
    tfl_tensor_release(rs);

    expect_no_error(ctx);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

/* ---- aliasing, strided values ------------------------------------------------------------ */

static void test_assign_aliasing_and_strided_values(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const int64_t s22[2] = {2, 2};
    tfl_tensor *v = var_from(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){1, 2, 3, 4}, NULL);

    /* A value that is a snapshot of the variable itself. */
    tfl_tensor *s = tfl_variable_read(v);
    assert_int_equal(tfl_variable_assign_add(v, s), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, 4, 6, 8);
    expect_vals(s, TFL_DTYPE_FLOAT32, 1, 2, 3, 4);
    tfl_tensor_release(s);

    /* A non-contiguous value: the transpose of the variable itself. */
    tfl_tensor *tr = tfl_transpose(ctx, v, NULL);
    assert_non_null(tr);
    assert_int_equal(tfl_variable_assign(v, tr), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 2, 6, 4, 8);
    expect_vals(tr, TFL_DTYPE_FLOAT32, 2, 6, 4, 8); /* the old value, transposed */
    tfl_tensor_release(tr);

    /* A transposed plain tensor. */
    tfl_tensor *x = tens(ctx, TFL_DTYPE_FLOAT32, 2, s22, (const float[]){10, 20, 30, 40});
    tfl_tensor *xt = tfl_transpose(ctx, x, NULL);
    const void *p = tfl_tensor_data_ptr(v);
    assert_int_equal(tfl_variable_assign(v, xt), TFL_OK);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);
    expect_vals(v, TFL_DTYPE_FLOAT32, 10, 30, 20, 40);
    assert_int_equal(tfl_variable_assign_sub(v, xt), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 0, 0, 0, 0);
    /* A strided slice converted from int32. */
    tfl_tensor *big = tens(ctx, TFL_DTYPE_INT32, 2, (const int64_t[]){3, 3},
                           (const int32_t[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    tfl_tensor *sl = tfl_slice(ctx, big, (const int64_t[]){1, 1}, (const int64_t[]){2, 2});
    assert_int_equal(tfl_variable_assign_add(v, sl), TFL_OK);
    expect_vals(v, TFL_DTYPE_FLOAT32, 5, 6, 8, 9);
    assert_ptr_equal(tfl_tensor_data_ptr(v), p);

    /* A variable made from a non-contiguous view is a plain contiguous copy. */
    tfl_tensor *w = tfl_variable_new(ctx, xt, NULL);
    assert_non_null(w);
    assert_true(tfl_tensor_is_contiguous(w));
    expect_vals(w, TFL_DTYPE_FLOAT32, 10, 30, 20, 40);
    /* ... and assigning it does not write through into x. */
    assert_int_equal(tfl_variable_assign_add(w, w), TFL_OK);
    expect_vals(x, TFL_DTYPE_FLOAT32, 10, 20, 30, 40);
    expect_vals(w, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);

    /* retain / release: the variable lives until its last reference. */
    assert_ptr_equal(tfl_tensor_retain(w), w);
    tfl_tensor_release(w);
    assert_true(coll_has(ctx, TFL_GLOBAL_VARIABLES, w));
    expect_vals(w, TFL_DTYPE_FLOAT32, 20, 60, 40, 80);
    tfl_tensor_release(w);
    assert_int_equal(coll_count(ctx, TFL_GLOBAL_VARIABLES), 1);

    expect_no_error(ctx);
    tfl_tensor_release(sl);
    tfl_tensor_release(big);
    tfl_tensor_release(xt);
    tfl_tensor_release(x);
    tfl_tensor_release(v);
}

/* ---- allocation failures ----------------------------------------------------------------- */

typedef struct budget {
    long left; /* allocations still allowed; < 0: unlimited */
    long failed;
} budget;

static void *budget_alloc(void *user, size_t bytes, size_t alignment)
{
    budget *b = user;
    if (b->left == 0) {
        b->failed++;
        return NULL;
    }
    if (b->left > 0) b->left--;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return aligned_alloc(alignment, rounded ? rounded : alignment);
}

static void budget_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

/* Runs the variable life cycle with the k-th allocation failing (and every later one): every
 * call either works or fails cleanly, a failed assign changes nothing, nothing leaks. */
static void test_allocation_failures(void **state)
{
    (void)state;
    bool completed = false;
    for (long k = 0; k < 400 && !completed; k++) {
        budget b = {.left = -1, .failed = 0};
        tfl_ctx *ctx = tfl_ctx_new(
            &(tfl_ctx_opts){.alloc_fn = budget_alloc, .free_fn = budget_free, .alloc_user = &b},
            NULL);
        assert_non_null(ctx);
        int64_t n = 4;
        tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, (const float[]){1, 1, 1, 1});
        tfl_tensor *init =
            tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, &n, (const float[]){1, 2, 3, 4});
        assert_non_null(x);
        assert_non_null(init);
        tfl_alloc_empty_cache(ctx);
        b.left = k;

        tfl_tensor *v = tfl_variable_new(ctx, init, &(tfl_variable_opts){.name = "v"});
        tfl_tensor *s = NULL, *g = NULL, *d = NULL;
        if (!v) {
            assert_true(tfl_ctx_status(ctx) != TFL_OK);
            tfl_ctx_clear_error(ctx);
        } else {
            s = tfl_variable_read(v);
            if (!s) {
                assert_true(tfl_ctx_status(ctx) != TFL_OK);
                tfl_ctx_clear_error(ctx);
            }
            const void *p = tfl_tensor_data_ptr(v);
            tfl_status st = tfl_variable_assign_add(v, x);
            if (st != TFL_OK) {
                /* unchanged, snapshot too */
                assert_int_equal(tfl_ctx_status(ctx), st);
                tfl_ctx_clear_error(ctx);
                assert_ptr_equal(tfl_tensor_data_ptr(v), p);
                float o[4];
                assert_int_equal(tfl_tensor_to_host(v, o, sizeof o), TFL_OK);
                assert_true(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == 4);
            } else {
                float o[4];
                assert_int_equal(tfl_tensor_to_host(v, o, sizeof o), TFL_OK);
                assert_true(o[0] == 2 && o[1] == 3 && o[2] == 4 && o[3] == 5);
            }
            if (s) {
                float o[4];
                assert_int_equal(tfl_tensor_to_host(s, o, sizeof o), TFL_OK);
                assert_true(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == 4);
            }
            if (tfl_collection_add(ctx, "custom", v) != TFL_OK) tfl_ctx_clear_error(ctx);
        }
        if (tfl_name_scope_push(ctx, "scope") == TFL_OK) {
            tfl_initializer z = tfl_init_zeros();
            g = tfl_get_variable(ctx, "g", 1, &n, 0, &z, NULL);
            if (!g) tfl_ctx_clear_error(ctx);
            d = tfl_variable_new(ctx, init,
                                 &(tfl_variable_opts){.name = "d", .flags = TFL_VAR_DEFERRED});
            if (!d) tfl_ctx_clear_error(ctx);
            if (tfl_variables_initialize(ctx, NULL, 0) != TFL_OK) tfl_ctx_clear_error(ctx);
            assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
        } else {
            tfl_ctx_clear_error(ctx);
        }
        completed = b.failed == 0;
        b.left = -1;
        tfl_tensor_release(s);
        tfl_tensor_release(v);
        tfl_tensor_release(g);
        tfl_tensor_release(d);
        tfl_tensor_release(x);
        tfl_tensor_release(init);
        assert_int_equal(live_tensors(ctx), 0);
        assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
        assert_int_equal(tfl_collection_get(ctx, "custom", NULL, 0), 0);
        tfl_ctx_clear_error(ctx);
        tfl_ctx_free(ctx);
    }
    assert_true(completed);
}

/* ---- context teardown ----------------------------------------------------------------------- */

static void test_ctx_free_with_live_variables(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl_tensor *t = vec_f32(ctx, (const float[]){1, 2}, 2);
    tfl_tensor *v = tfl_variable_new(ctx, t, &(tfl_variable_opts){.name = "alive"});
    tfl_tensor *d = tfl_variable_new(ctx, t, &(tfl_variable_opts){.flags = TFL_VAR_DEFERRED});
    tfl_tensor *g = tfl_get_variable(ctx, "g", 2, (const int64_t[]){3, 3}, 0, NULL, NULL);
    tfl_tensor *g2 = tfl_get_variable(ctx, "g2", 1, (const int64_t[]){2}, 0, NULL, NULL);
    assert_non_null(v);
    assert_non_null(d);
    assert_non_null(g);
    assert_non_null(g2);
    tfl_tensor_release(g2); /* released: out of the store */
    assert_int_equal(tfl_collection_add(ctx, "custom", v), TFL_OK);
    assert_int_equal(tfl_collection_add(ctx, "custom", g), TFL_OK);
    tfl_tensor *snap = tfl_variable_read(v); /* caller-owned snapshot */
    assert_non_null(snap);
    assert_int_equal(tfl_variable_assign_add(v, t), TFL_OK); /* copy-on-write */
    assert_int_equal(tfl_name_scope_push(ctx, "open"), TFL_OK);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *in_frame = tfl_variable_new(ctx, t, NULL);
    assert_non_null(in_frame);
    assert_non_null(tfl_variable_read(in_frame));
    assert_non_null(tfl_reshape(ctx, v, 2, (const int64_t[]){1, 2}));
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    /* Everything is freed with the context; the sanitizer build checks for leaks. */
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_assign_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_add_no_allocation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_on_write_read_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_on_write_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_aliasing_and_strided_values, setup, teardown),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_ctx_free_with_live_variables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
