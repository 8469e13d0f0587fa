/*
 * test_nccl_plan.c: the parts of the NCCL path that need no GPU (dist/nccl_plan.c, compiled
 * into this test): the dtype mapping, the placement check (ranks per host against GPUs,
 * two ranks on one GPU) from given host hashes, GPUs and GPU counts, the cutting of a list
 * of mixed dtypes into NCCL calls whose counts are ELEMENTS; and the gpu_backend option of
 * the public API in this build (with or without NCCL).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

#include "nccl_plan.h"

static void test_dtypes(void **state)
{
    (void)state;
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_INT32), 2);    /* ncclInt32 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_INT64), 4);    /* ncclInt64 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_FLOAT16), 6);  /* ncclFloat16 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_FLOAT32), 7);  /* ncclFloat32 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_FLOAT64), 8);  /* ncclFloat64 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_BFLOAT16), 9); /* ncclBfloat16 */
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_BOOL), -1);
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_COMPLEX64), -1);
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_COMPLEX128), -1);
    assert_int_equal(tfl__nccl_dtype(TFL_DTYPE_INVALID), -1);
    char msg[256] = "";
    assert_int_equal(
        tfl__nccl_check_dtype("tfl_comm_allreduce", 0, TFL_DTYPE_BFLOAT16, msg, sizeof msg), 0);
    assert_string_equal(msg, "");
    assert_int_equal(
        tfl__nccl_check_dtype("tfl_comm_allreduce", 3, TFL_DTYPE_COMPLEX64, msg, sizeof msg), 1);
    assert_string_equal(msg, "tfl_comm_allreduce: tensor 3 is complex64; NCCL reduces int32, "
                             "int64, float16, bfloat16, float32 and float64");
}

static void test_host_hash(void **state)
{
    (void)state;
    int64_t a = tfl__nccl_host_hash("node-a"), b = tfl__nccl_host_hash("node-b");
    assert_true(a > 0 && b > 0);
    assert_true(a != b);
    assert_true(a == tfl__nccl_host_hash("node-a"));
    assert_true(tfl__nccl_host_hash("") > 0);
}

static void test_placement_ok(void **state)
{
    (void)state;
    /* 2 hosts x 2 ranks, interleaved, 2 GPUs each, each rank on its local index */
    int64_t host[4] = {11, 22, 11, 22}, ord[4] = {0, 0, 1, 1}, gpus[4] = {2, 2, 2, 2};
    char msg[512] = "";
    int lr = -1, ls = -1;
    for (int r = 0; r < 4; r++) {
        assert_int_equal(
            tfl__nccl_check_placement(4, r, host, ord, gpus, &lr, &ls, msg, sizeof msg), 0);
        assert_int_equal(lr, r / 2);
        assert_int_equal(ls, 2);
    }
    /* one rank, one GPU */
    int64_t h1[1] = {5}, o1[1] = {0}, g1[1] = {1};
    assert_int_equal(tfl__nccl_check_placement(1, 0, h1, o1, g1, &lr, &ls, msg, sizeof msg), 0);
    assert_int_equal(lr, 0);
    assert_int_equal(ls, 1);
    /* the same GPU number on two hosts is two GPUs */
    int64_t h2[2] = {1, 2}, o2[2] = {0, 0}, g2[2] = {1, 1};
    assert_int_equal(tfl__nccl_check_placement(2, 1, h2, o2, g2, &lr, &ls, msg, sizeof msg), 0);
    assert_int_equal(lr, 0);
    assert_int_equal(ls, 1);
}

static void test_placement_too_many_ranks(void **state)
{
    (void)state;
    /* 2 ranks on a one-GPU host (mpirun -np 2 on a single-H100 machine) */
    int64_t host[2] = {7, 7}, ord[2] = {0, 0}, gpus[2] = {1, 1};
    char msg[512] = "";
    int lr, ls;
    for (int r = 0; r < 2; r++) {
        assert_int_equal(
            tfl__nccl_check_placement(2, r, host, ord, gpus, &lr, &ls, msg, sizeof msg), 1);
        assert_string_equal(msg, "2 ranks run on the host of rank 0, which has 1 GPU; NCCL needs "
                                 "one GPU per rank (start at most 1 rank per host, or use CPU "
                                 "tensors and MPI)");
        assert_int_equal(lr, r);
        assert_int_equal(ls, 2);
    }
    /* the second host is the one over its count */
    int64_t h3[3] = {1, 2, 2}, o3[3] = {0, 0, 1}, g3[3] = {4, 1, 1};
    assert_int_equal(tfl__nccl_check_placement(3, 0, h3, o3, g3, &lr, &ls, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "2 ranks run on the host of rank 1, which has 1 GPU;"));
}

static void test_placement_duplicate_gpu(void **state)
{
    (void)state;
    /* 3 ranks on a 4-GPU host; ranks 0 and 2 both put their tensors on GPU 0 */
    int64_t host[3] = {9, 9, 9}, ord[3] = {0, 1, 0}, gpus[3] = {4, 4, 4};
    char msg[512] = "";
    int lr, ls;
    assert_int_equal(tfl__nccl_check_placement(3, 1, host, ord, gpus, &lr, &ls, msg, sizeof msg),
                     2);
    assert_string_equal(msg, "ranks 0 and 2 both have their tensors on GPU 0 of one host; NCCL "
                             "needs one GPU per rank (Duplicate GPU): put rank 2's on GPU:2, its "
                             "index among the ranks of its host");
    assert_int_equal(lr, 1);
    assert_int_equal(ls, 3);
}

static void test_plan_mixed_dtypes(void **state)
{
    (void)state;
    /* float32 x10 (40 B), float64 x3 (24 B), int32 x0, bfloat16 x5 (10 B), int64 x1 (8 B);
     * buckets of 32 bytes */
    int64_t numel[5] = {10, 3, 0, 5, 1};
    tfl_dtype dt[5] = {TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64, TFL_DTYPE_INT32, TFL_DTYPE_BFLOAT16,
                       TFL_DTYPE_INT64};
    int nb = -1;
    assert_int_equal(tfl__nccl_plan(5, numel, dt, 32, NULL, 0, &nb), 5);
    assert_int_equal(nb, 3);
    tfl__nccl_call c[5];
    memset(c, 0xff, sizeof c);
    assert_int_equal(tfl__nccl_plan(5, numel, dt, 32, c, 5, &nb), 5);
    const tfl__nccl_call want[5] = {
        {0, 0, 0, 8}, /* 8 floats fill bucket 0 (32 bytes) */
        {0, 1, 8, 2}, /* the float32's last 2 elements, 8 bytes of bucket 1 */
        {1, 1, 0, 3}, /* 3 doubles: 24 bytes, bucket 1 full */
        {3, 2, 0, 5}, /* the int32 of 0 elements makes no call */
        {4, 2, 0, 1},
    };
    for (int k = 0; k < 5; k++) {
        assert_int_equal(c[k].item, want[k].item);
        assert_int_equal(c[k].bucket, want[k].bucket);
        assert_int_equal(c[k].offset, want[k].offset);
        assert_int_equal(c[k].count, want[k].count);
    }
    /* the counts are elements: per tensor they add up to numel, never to its bytes */
    int64_t sum[5] = {0};
    for (int k = 0; k < 5; k++)
        sum[c[k].item] += c[k].count;
    for (int i = 0; i < 5; i++)
        assert_int_equal(sum[i], numel[i]);
}

static void test_plan_edges(void **state)
{
    (void)state;
    int64_t numel[2] = {3, 2};
    tfl_dtype dt[2] = {TFL_DTYPE_FLOAT32, TFL_DTYPE_FLOAT64};
    tfl__nccl_call c[8];
    int nb;
    /* a bucket smaller than an element holds one element */
    assert_int_equal(tfl__nccl_plan(2, numel, dt, 1, c, 8, &nb), 5);
    assert_int_equal(nb, 5);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(c[k].count, 1);
        assert_int_equal(c[k].bucket, k);
    }
    /* a 6-byte bucket: one float32 (4 B) per bucket, then a float64 (8 B) per bucket */
    assert_int_equal(tfl__nccl_plan(2, numel, dt, 6, c, 8, &nb), 5);
    assert_int_equal(nb, 5);
    assert_int_equal(c[3].item, 1);
    assert_int_equal(c[3].count, 1);
    /* a large bucket: one call per tensor, one group */
    assert_int_equal(tfl__nccl_plan(2, numel, dt, (int64_t)25 << 20, c, 8, &nb), 2);
    assert_int_equal(nb, 1);
    assert_int_equal(c[0].count, 3);
    assert_int_equal(c[1].count, 2);
    /* nothing to move */
    int64_t zero[1] = {0};
    assert_int_equal(tfl__nccl_plan(1, zero, dt, 64, c, 8, &nb), 0);
    assert_int_equal(nb, 0);
    assert_int_equal(tfl__nccl_plan(0, NULL, NULL, 64, NULL, 0, &nb), 0);
    /* fewer slots than calls: only those written, the count is still the whole */
    memset(c, 0, sizeof c);
    assert_int_equal(tfl__nccl_plan(2, numel, dt, 1, c, 2, &nb), 5);
    assert_int_equal(c[2].count, 0);
}

static void test_gpu_backend_option(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    assert_null(tfl_comm_self(ctx, &(tfl_comm_opts){.gpu_backend = "gloo"}));
    assert_int_equal(tfl_ctx_status(ctx), TFL_INVALID_ARGUMENT);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "unknown gpu_backend 'gloo' (auto, nccl)"));
    tfl_ctx_clear_error(ctx);
    tfl_comm *c = tfl_comm_self(ctx, &(tfl_comm_opts){.gpu_backend = "nccl"});
#if TFL_HAVE_NCCL
    assert_non_null(c);
    assert_string_equal(tfl_comm_gpu_backend(c), ""); /* set up at the first GPU collective */
    /* host tensors never touch NCCL */
    float v[3] = {1, 2, 3};
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, v);
    assert_int_equal(tfl_comm_allreduce(c, 1, &t, TFL_REDUCE_SUM, 0), TFL_OK);
    assert_string_equal(tfl_comm_gpu_backend(c), "");
    tfl_tensor_release(t);
    tfl_comm_free(c);
#else
    assert_null(c);
    assert_int_equal(tfl_ctx_status(ctx), TFL_FAILED_PRECONDITION);
    assert_non_null(strstr(tfl_ctx_error(ctx).message,
                           "gpu_backend 'nccl', but this tapeflow has no "
                           "NCCL"));
#endif
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_host_hash),
        cmocka_unit_test(test_placement_ok),
        cmocka_unit_test(test_placement_too_many_ranks),
        cmocka_unit_test(test_placement_duplicate_gpu),
        cmocka_unit_test(test_plan_mixed_dtypes),
        cmocka_unit_test(test_plan_edges),
        cmocka_unit_test(test_gpu_backend_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
