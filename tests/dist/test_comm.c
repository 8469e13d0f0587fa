/* test_comm.c: <tapeflow/distributed.h> in one process: the one-rank communicator (every
 * collective a no-op), argument errors, handle rules, and the bucketed all-reduce and
 * broadcast through a loopback transport that plays rank 1 of 2 with a twin holding the same
 * values (a sum doubles every element), so that packing, scaling and unpacking are checked
 * for every bucket size without MPI; a failing transport's message comes back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

#include "tfl_test_util.h"

typedef struct loop {
    int64_t messages;
    bool fail;
} loop;

static int loop_sum(void *impl, void *buf, int64_t count, tfl_dtype dt, char *msg, size_t size)
{
    loop *l = impl;
    l->messages++;
    if (l->fail) {
        snprintf(msg, size, "MPI_Allreduce: MPI_ERR_OTHER: known error not in list");
        return 15;
    }
    for (int64_t i = 0; i < count; i++)
        switch (dt) {
        case TFL_DTYPE_FLOAT32:
            ((float *)buf)[i] *= 2;
            break;
        case TFL_DTYPE_FLOAT64:
            ((double *)buf)[i] *= 2;
            break;
        case TFL_DTYPE_INT32:
            ((int32_t *)buf)[i] *= 2;
            break;
        case TFL_DTYPE_INT64:
            ((int64_t *)buf)[i] *= 2;
            break;
        default:
            return 1;
        }
    return 0;
}
/* rank 0 (the twin) sends its bytes: 0x5a everywhere */
static int loop_bcast(void *impl, void *buf, int64_t bytes, int root, char *msg, size_t size)
{
    loop *l = impl;
    (void)root, (void)msg, (void)size;
    l->messages++;
    memset(buf, 0x5a, (size_t)bytes);
    return 0;
}
static int loop_barrier(void *impl, char *msg, size_t size)
{
    (void)impl;
    snprintf(msg, size, "MPI_Barrier: MPI_ERR_COMM: invalid communicator");
    return 5;
}
static void loop_abort(void *impl, int code)
{
    (void)impl, (void)code;
}
static void loop_destroy(void *impl)
{
    (void)impl;
}

static tfl_comm *loopback(tfl_ctx *ctx, loop *l, int64_t bucket)
{
    tfl_comm_transport t = {.name = "loop",
                            .rank = 1,
                            .size = 2,
                            .impl = l,
                            .allreduce_sum = loop_sum,
                            .broadcast = loop_bcast,
                            .barrier = loop_barrier,
                            .abort = loop_abort,
                            .destroy = loop_destroy};
    tfl_comm *c = tfl_comm_new(ctx, &t, &(tfl_comm_opts){.bucket_bytes = bucket});
    assert_non_null(c);
    return c;
}

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    return ctx;
}

static tfl_tensor *vec(tfl_ctx *ctx, tfl_dtype dt, int64_t n, double base)
{
    tfl_tensor *t = tfl_zeros(ctx, dt, 1, (int64_t[]){n});
    assert_non_null(t);
    tfl_tensor *r = tfl_range(ctx, dt, base, base + (double)n, 1.0);
    assert_non_null(r);
    /* contiguous copy of r's values into t */
    void *h = malloc((size_t)n * tfl_dtype_size(dt) + 1);
    assert_int_equal(tfl_tensor_to_host(r, h, (size_t)n * tfl_dtype_size(dt)), TFL_OK);
    tfl_tensor *out = tfl_tensor_new(ctx, dt, 1, (int64_t[]){n}, h);
    free(h);
    tfl_tensor_release(r);
    tfl_tensor_release(t);
    assert_non_null(out);
    return out;
}

static double at(const tfl_tensor *t, int64_t i)
{
    double v;
    assert_int_equal(tfl_tensor_get(t, i, &v), TFL_OK);
    return v;
}

static void test_self(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    tfl_comm *c = tfl_comm_world(ctx, &(tfl_comm_opts){.backend = "self"});
    assert_non_null(c);
    assert_int_equal(tfl_comm_rank(c), 0);
    assert_int_equal(tfl_comm_size(c), 1);
    assert_string_equal(tfl_comm_backend(c), "self");
    tfl_tensor *a = vec(ctx, TFL_DTYPE_FLOAT32, 5, 1), *b = vec(ctx, TFL_DTYPE_INT64, 3, 7);
    tfl_tensor *list[] = {a, NULL, b};
    assert_int_equal(tfl_comm_allreduce(c, 3, list, TFL_REDUCE_SUM, 0), TFL_OK);
    assert_int_equal(tfl_comm_broadcast(c, 3, list, 0), TFL_OK);
    assert_int_equal(tfl_comm_allreduce(c, 1, list, TFL_REDUCE_WEIGHTED_MEAN, 3), TFL_OK);
    assert_true(at(a, 4) == 5 && at(b, 2) == 9);
    double d[2] = {1.5, -2};
    assert_int_equal(tfl_comm_allreduce_doubles(c, d, 2), TFL_OK);
    assert_true(d[0] == 1.5 && d[1] == -2);
    assert_int_equal(tfl_comm_barrier(c), TFL_OK);
    /* one rank: the gradients are left as they are */
    tfl_tensor *g = vec(ctx, TFL_DTYPE_FLOAT32, 5, 0), *grads[] = {g};
    assert_int_equal(tfl_comm_allreduce_gradients(c, 1, (tfl_tensor *[]){a}, grads, 64), TFL_OK);
    assert_ptr_equal(grads[0], g);
    tfl_replicas r = tfl_comm_replicas(c);
    assert_int_equal(r.index, 0);
    assert_int_equal(r.count, 1);
    assert_non_null(r.sum);
    assert_int_equal(r.sum(d, 2, r.user), TFL_OK);
    /* auto without mpirun's variables: one rank */
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    tfl_comm *w = tfl_comm_world(ctx, NULL);
    assert_non_null(w);
    assert_int_equal(tfl_comm_size(w), 1);
    tfl_comm_free(w);
    tfl_tensor_release(a), tfl_tensor_release(b), tfl_tensor_release(g);
    tfl_comm_free(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

static void test_errors(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    assert_null(tfl_comm_world(ctx, &(tfl_comm_opts){.backend = "nccl"}));
    assert_int_equal(tfl_ctx_status(ctx), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "unknown backend 'nccl'"));
    tfl_ctx_clear_error(ctx);
    assert_null(tfl_comm_self(ctx, &(tfl_comm_opts){.bucket_bytes = -1}));
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "bucket_bytes must be >= 0"));
    tfl_ctx_clear_error(ctx);
    /* a transport whose constructor failed, one without functions, a bad rank */
    tfl_comm_transport t = {.name = "mpi"};
    snprintf(t.error, sizeof t.error, "MPI_Comm_dup: MPI_ERR_COMM: invalid communicator");
    assert_null(tfl_comm_new(ctx, &t, NULL));
    assert_int_equal(tfl_ctx_status(ctx), TFL_UNAVAILABLE);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "MPI_ERR_COMM: invalid communicator"));
    tfl_ctx_clear_error(ctx);
    t.error[0] = 0;
    assert_null(tfl_comm_new(ctx, &t, NULL));
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "lacks a function"));
    tfl_ctx_clear_error(ctx);
    loop l = {0};
    t = (tfl_comm_transport){.name = "loop",
                             .rank = 2,
                             .size = 2,
                             .impl = &l,
                             .allreduce_sum = loop_sum,
                             .broadcast = loop_bcast,
                             .barrier = loop_barrier,
                             .abort = loop_abort,
                             .destroy = loop_destroy};
    assert_null(tfl_comm_new(ctx, &t, NULL));
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "rank 2 of size 2"));
    tfl_ctx_clear_error(ctx);

    tfl_comm *c = loopback(ctx, &l, 0);
    tfl_tensor *a = vec(ctx, TFL_DTYPE_FLOAT32, 4, 0),
               *bl = tfl_zeros(ctx, TFL_DTYPE_BOOL, 1, (int64_t[]){3});
    tfl_tensor *i32 = vec(ctx, TFL_DTYPE_INT32, 2, 0);
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){bl}, TFL_REDUCE_SUM, 0),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "tensor 0 is bool"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){i32}, TFL_REDUCE_MEAN, 0),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "a mean needs a floating dtype"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_allreduce(c, 2, (tfl_tensor *[]){a, a}, TFL_REDUCE_SUM, 0),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "tensors 0 and 1 share their data"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){a}, TFL_REDUCE_WEIGHTED_MEAN, -1),
                     TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    tfl_tensor *tr = tfl_transpose(ctx, tfl_reshape(ctx, a, 2, (int64_t[]){2, 2}), NULL);
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){tr}, TFL_REDUCE_SUM, 0),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "not contiguous"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_broadcast(c, 1, (tfl_tensor *[]){a}, 2), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "root 2 is not a rank"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_allreduce(c, -1, NULL, TFL_REDUCE_SUM, 0), TFL_INVALID_ARGUMENT);
    tfl_ctx_clear_error(ctx);
    /* a gradient of another shape than its variable */
    tfl_tensor *g3 = vec(ctx, TFL_DTYPE_FLOAT32, 3, 0), *gs[] = {g3};
    assert_int_equal(tfl_comm_allreduce_gradients(c, 1, (tfl_tensor *[]){a}, gs, 1),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "gradient 0 is float32 (3,), its "
                                                       "variable float32 (4,)"));
    tfl_ctx_clear_error(ctx);
    /* the transport's errors come back with its message and the rank */
    assert_int_equal(tfl_comm_barrier(c), TFL_UNAVAILABLE);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "tfl_comm_barrier: loop rank 1 of 2: "
                                                       "MPI_Barrier: MPI_ERR_COMM"));
    tfl_ctx_clear_error(ctx);
    l.fail = true;
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){a}, TFL_REDUCE_SUM, 0),
                     TFL_UNAVAILABLE);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "MPI_ERR_OTHER"));
    tfl_ctx_clear_error(ctx);
    double d = 1;
    assert_int_equal(tfl_comm_allreduce_doubles(c, &d, 1), TFL_UNAVAILABLE);
    tfl_ctx_clear_error(ctx);
    l.fail = false;
    /* weights that sum to 0 */
    assert_int_equal(tfl_comm_allreduce(c, 1, (tfl_tensor *[]){a}, TFL_REDUCE_WEIGHTED_MEAN, 0),
                     TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "weights sum to 0"));
    tfl_ctx_clear_error(ctx);
    /* handles: freed twice is MISUSE, a freed one's getters give neutral values */
    tfl_comm_free(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_comm_free(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_MISUSE);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "communicator already freed"));
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_comm_size(c), -1);
    assert_int_equal(tfl_comm_barrier(c), TFL_MISUSE);
    tfl_ctx_clear_error(ctx);
    tfl_tensor_release(a), tfl_tensor_release(bl), tfl_tensor_release(i32);
    tfl_tensor_release(g3);
    tfl_ctx_free(ctx);
}

/* Loopback: the twin (rank 0) holds the same values, so a sum doubles, a mean keeps and a
 * weighted mean keeps; every bucket size gives the same result. */
static void test_buckets(void **state)
{
    (void)state;
    static const int64_t buckets[] = {1, 3, 8, 12, 40, 0};
    for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++) {
        tfl_ctx *ctx = new_ctx();
        loop l = {0};
        tfl_comm *c = loopback(ctx, &l, buckets[b]);
        tfl_tensor *f32 = vec(ctx, TFL_DTYPE_FLOAT32, 7, 1),
                   *f64 = vec(ctx, TFL_DTYPE_FLOAT64, 5, -2);
        tfl_tensor *i32 = vec(ctx, TFL_DTYPE_INT32, 3, 10), *i64 = vec(ctx, TFL_DTYPE_INT64, 1, 4);
        tfl_tensor *f32b = vec(ctx, TFL_DTYPE_FLOAT32, 2, 100),
                   *empty = vec(ctx, TFL_DTYPE_FLOAT32, 0, 0);
        tfl_tensor *list[] = {f32, i32, NULL, f64, empty, i64, f32b};
        assert_int_equal(tfl_comm_allreduce(c, 7, list, TFL_REDUCE_SUM, 0), TFL_OK);
        for (int i = 0; i < 7; i++)
            assert_true(at(f32, i) == 2.0 * (1 + i));
        for (int i = 0; i < 5; i++)
            assert_true(at(f64, i) == 2.0 * (-2 + i));
        for (int i = 0; i < 3; i++)
            assert_true(at(i32, i) == 2.0 * (10 + i));
        assert_true(at(i64, 0) == 8 && at(f32b, 1) == 202);
        /* 4 dtypes, 44 + 40 + 12 + 8 bytes: one message per dtype at the default size, one
         * per element at 1 byte */
        int64_t want = buckets[b] == 1                       ? 7 + 2 + 5 + 3 + 1
                       : buckets[b] == 0 || buckets[b] == 40 ? 4
                                                             : -1;
        if (want > 0) assert_int_equal(l.messages, want);
        tfl_comm_stats s = tfl_comm_get_stats(c);
        assert_int_equal(s.allreduce_calls, 1);
        assert_int_equal(s.bytes, 36 + 40 + 12 + 8);
        tfl_tensor *fl[] = {f32, f64, f32b};
        assert_int_equal(tfl_comm_allreduce(c, 3, fl, TFL_REDUCE_MEAN, 0), TFL_OK);
        assert_true(at(f32, 6) == 14 && at(f64, 0) == -4);
        assert_int_equal(tfl_comm_allreduce(c, 3, fl, TFL_REDUCE_WEIGHTED_MEAN, 5), TFL_OK);
        assert_true(at(f32, 6) == 14 && at(f64, 0) == -4 && at(f32b, 0) == 200);
        /* gradients: NULL here (zeros) but not on the twin... the loopback twin mirrors this
         * rank, so a NULL stays NULL; a present one is the weighted mean */
        tfl_tensor *v0 = vec(ctx, TFL_DTYPE_FLOAT32, 7, 0), *v1 = vec(ctx, TFL_DTYPE_FLOAT64, 5, 0);
        tfl_tensor *vars[] = {v0, v1}, *grads[] = {f32, NULL};
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        assert_int_equal(tfl_comm_allreduce_gradients(c, 2, vars, grads, 3), TFL_OK);
        assert_ptr_not_equal(grads[0], f32);
        assert_null(grads[1]);
        for (int i = 0; i < 7; i++)
            assert_true(at(grads[0], i) == at(f32, i));
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        /* broadcast from rank 0: every byte of every dtype arrives, odd sizes included */
        tfl_tensor *bl = tfl_zeros(ctx, TFL_DTYPE_BOOL, 1, (int64_t[]){3});
        tfl_tensor *h = tfl_zeros(ctx, TFL_DTYPE_FLOAT16, 1, (int64_t[]){5});
        tfl_tensor *bc[] = {bl, NULL, h, i64};
        assert_int_equal(tfl_comm_broadcast(c, 4, bc, 0), TFL_OK);
        unsigned char hb[10];
        assert_int_equal(tfl_tensor_to_host(h, hb, sizeof hb), TFL_OK);
        for (int i = 0; i < 10; i++)
            assert_int_equal(hb[i], 0x5a);
        int64_t iv;
        assert_int_equal(tfl_tensor_to_host(i64, &iv, sizeof iv), TFL_OK);
        assert_true(iv == 0x5a5a5a5a5a5a5a5aLL);
        tfl_tensor *all[] = {f32, f64, i32, i64, f32b, empty, v0, v1, bl, h};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tfl_tensor_release(all[i]);
        tfl_comm_free(c);
        assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        tfl_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
