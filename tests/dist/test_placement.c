/* test_placement.c: one rank per GPU, on the CPU. tfl_rank_device's rule for every kind of
 * request with fake local ranks and GPU counts; tfl_comm_local_rank through a fake transport
 * that plays one rank of several whose hosts the test chooses (its all-reduce fills the other
 * ranks' host hashes: this rank's, or another); tfl_comm_device on this GPU-less machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

static tfl_ctx *new_ctx(void)
{
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    return ctx;
}

static void expect_error(tfl_ctx *ctx, tfl_status code, const char *fragment)
{
    assert_int_equal(tfl_ctx_status(ctx), code);
    const char *msg = tfl_ctx_error(ctx).message;
    if (!strstr(msg, fragment)) fail_msg("'%s' not in '%s'", fragment, msg);
    tfl_ctx_clear_error(ctx);
}

/* dev = tfl_rank_device(requested, lr, ls, gpus), expected to succeed */
static const char *pick(tfl_ctx *ctx, const char *req, int lr, int ls, int gpus)
{
    static char dev[32];
    assert_int_equal(tfl_rank_device(ctx, req, lr, ls, gpus, dev, sizeof dev), TFL_OK);
    return dev;
}

static void test_rule(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    /* auto: the CPU without GPUs, else GPU:(local rank mod GPUs) */
    assert_string_equal(pick(ctx, "auto", 0, 1, 0), "CPU:0");
    assert_string_equal(pick(ctx, NULL, 2, 4, 0), "CPU:0");
    assert_string_equal(pick(ctx, "", 0, 1, 1), "GPU:0");
    for (int lr = 0; lr < 4; lr++) {
        char want[16];
        snprintf(want, sizeof want, "GPU:%d", lr);
        assert_string_equal(pick(ctx, "auto", lr, 4, 4), want);
        assert_string_equal(pick(ctx, "GPU", lr, 4, 8), want);
    }
    assert_string_equal(pick(ctx, "auto", 1, 2, 8), "GPU:1");
    /* GPU without an index and no GPU: left to placement (soft placement: the CPU) */
    assert_string_equal(pick(ctx, "gpu", 1, 2, 0), "GPU:0");
    assert_string_equal(pick(ctx, "/device:GPU", 0, 1, 2), "GPU:0");
    /* explicit devices: the CPU for everyone; GPU:N when alone on the host */
    assert_string_equal(pick(ctx, "CPU:0", 3, 4, 4), "CPU:0");
    assert_string_equal(pick(ctx, "cpu", 1, 2, 2), "CPU:0");
    assert_string_equal(pick(ctx, "/GPU:3", 0, 1, 4), "GPU:3");
    assert_string_equal(pick(ctx, "GPU:1", 0, 1, 0), "GPU:1");
    char dev[32];
    /* two ranks of a host on one named GPU */
    assert_int_equal(tfl_rank_device(ctx, "GPU:1", 1, 2, 2, dev, sizeof dev),
                     TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION,
                 "GPU:1 names one GPU for the 2 ranks on this host (this is "
                 "local rank 1)");
    assert_string_equal(dev, "");
    assert_int_equal(tfl_rank_device(ctx, "GPU:0", 0, 3, 0, dev, sizeof dev),
                     TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "write GPU or auto");
    /* more ranks than GPUs on a host */
    assert_int_equal(tfl_rank_device(ctx, "auto", 2, 3, 2, dev, sizeof dev),
                     TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION,
                 "3 ranks run on this host, which has 2 GPUs; one rank drives one GPU: start at "
                 "most 2 ranks per host, or train on CPU:0");
    assert_int_equal(tfl_rank_device(ctx, "GPU", 1, 2, 1, dev, sizeof dev),
                     TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION, "which has 1 GPU;");
    /* the caller's mistakes */
    assert_int_equal(tfl_rank_device(ctx, "tpu:0", 0, 1, 0, dev, sizeof dev), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'tpu:0' is not a device");
    assert_int_equal(tfl_rank_device(ctx, "GPU:x", 0, 1, 0, dev, sizeof dev), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'GPU:x' is not a device");
    assert_int_equal(tfl_rank_device(ctx, "auto", 2, 2, 0, dev, sizeof dev), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "local rank 2 of 2 ranks on the host, 0 GPUs");
    assert_int_equal(tfl_rank_device(ctx, "auto", 0, 1, -1, dev, sizeof dev), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "GPUs >= 0");
    assert_int_equal(tfl_rank_device(ctx, "auto", 0, 1, 4, dev, 5), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "'GPU:0' does not fit in 5 bytes");
    assert_int_equal(tfl_rank_device(ctx, "auto", 0, 1, 4, NULL, 8), TFL_INVALID_ARGUMENT);
    expect_error(ctx, TFL_INVALID_ARGUMENT, "no room for the device's name");
    assert_int_equal(tfl_rank_device(NULL, "auto", 0, 1, 4, dev, 8), TFL_INVALID_ARGUMENT);
    tfl_ctx_free(ctx);
}

/* A transport playing rank `rank` of `size`; host[r] says which host rank r is on (0: this
 * rank's). Its all-reduce of the host hashes writes the others' slots. */
typedef struct fake {
    int host[8];
    int calls;
    bool fail;
} fake;

static int fake_sum(void *impl, void *buf, int64_t count, tfl_dtype dt, char *msg, size_t size)
{
    fake *f = impl;
    f->calls++;
    if (f->fail) {
        snprintf(msg, size, "MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated");
        return 15;
    }
    assert_int_equal(dt, TFL_DTYPE_INT64);
    int64_t *h = buf, mine = 0;
    for (int64_t r = 0; r < count; r++)
        mine += h[r]; /* the only non-zero slot */
    assert_true(mine > 0);
    for (int64_t r = 0; r < count; r++)
        h[r] = f->host[r] ? mine ^ f->host[r] : mine;
    return 0;
}
static int fake_bcast(void *impl, void *buf, int64_t bytes, int root, char *msg, size_t size)
{
    (void)impl, (void)buf, (void)bytes, (void)root, (void)msg, (void)size;
    return 0;
}
static int fake_barrier(void *impl, char *msg, size_t size)
{
    (void)impl, (void)msg, (void)size;
    return 0;
}
static void fake_abort(void *impl, int code)
{
    (void)impl, (void)code;
}
static void fake_destroy(void *impl)
{
    (void)impl;
}

static tfl_comm *fake_comm(tfl_ctx *ctx, fake *f, int rank, int size)
{
    tfl_comm_transport t = {.name = "fake",
                            .rank = rank,
                            .size = size,
                            .impl = f,
                            .allreduce_sum = fake_sum,
                            .broadcast = fake_bcast,
                            .barrier = fake_barrier,
                            .abort = fake_abort,
                            .destroy = fake_destroy};
    tfl_comm *c = tfl_comm_new(ctx, &t, NULL);
    assert_non_null(c);
    return c;
}

static void test_local_rank(void **state)
{
    (void)state;
    tfl_ctx *ctx = new_ctx();
    /* ranks 0..5 on hosts A A B A B B; this is rank 3: local rank 2 of 3 */
    fake f = {.host = {0, 0, 1, 0, 1, 1}};
    tfl_comm *c = fake_comm(ctx, &f, 3, 6);
    int lr = -1, ls = -1;
    assert_int_equal(tfl_comm_local_rank(c, &lr, &ls), TFL_OK);
    assert_int_equal(lr, 2);
    assert_int_equal(ls, 3);
    /* kept: the second call sends nothing */
    assert_int_equal(tfl_comm_local_rank(c, NULL, &ls), TFL_OK);
    assert_int_equal(f.calls, 1);
    /* the context's GPUs decide "auto" (test_rule holds the rule for every count): none, the
     * CPU's; fewer than the host's 3 ranks, refused naming both counts; else this rank's */
    char dev[32];
    int gpus = 0;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        gpus += strncmp(tfl_device_name(ctx, i), "GPU:", 4) == 0;
    if (gpus == 0) {
        assert_int_equal(tfl_comm_device(c, "auto", dev, sizeof dev), TFL_OK);
        assert_string_equal(dev, "CPU:0");
    } else if (gpus < 3) {
        assert_int_equal(tfl_comm_device(c, "auto", dev, sizeof dev), TFL_FAILED_PRECONDITION);
        char want[96];
        snprintf(want, sizeof want, "3 ranks run on this host, which has %d GPU", gpus);
        expect_error(ctx, TFL_FAILED_PRECONDITION, want);
    } else {
        assert_int_equal(tfl_comm_device(c, "auto", dev, sizeof dev), TFL_OK);
        char want[16];
        snprintf(want, sizeof want, "GPU:%d", 2 % gpus);
        assert_string_equal(dev, want);
    }
    assert_int_equal(tfl_comm_device(c, "GPU:0", dev, sizeof dev), TFL_FAILED_PRECONDITION);
    expect_error(ctx, TFL_FAILED_PRECONDITION,
                 "for the 3 ranks on this host (this is local rank 2)");
    tfl_comm_free(c);
    /* alone on its host among 4 (rank 2 of A B C B) */
    f = (fake){.host = {1, 2, 0, 2}};
    c = fake_comm(ctx, &f, 2, 4);
    assert_int_equal(tfl_comm_local_rank(c, &lr, &ls), TFL_OK);
    assert_int_equal(lr, 0);
    assert_int_equal(ls, 1);
    assert_int_equal(tfl_comm_device(c, "GPU:1", dev, sizeof dev), TFL_OK);
    assert_string_equal(dev, "GPU:1");
    tfl_comm_free(c);
    /* the transport's error comes back, naming the call */
    f = (fake){.fail = true};
    c = fake_comm(ctx, &f, 0, 2);
    assert_int_equal(tfl_comm_local_rank(c, &lr, &ls), TFL_UNAVAILABLE);
    expect_error(ctx, TFL_UNAVAILABLE, "tfl_comm_local_rank");
    tfl_comm_free(c);
    /* one rank: no message */
    c = tfl_comm_self(ctx, NULL);
    assert_int_equal(tfl_comm_local_rank(c, &lr, &ls), TFL_OK);
    assert_int_equal(lr, 0);
    assert_int_equal(ls, 1);
    tfl_comm_free(c);
    assert_int_equal(tfl_comm_local_rank(NULL, &lr, &ls), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_local_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
