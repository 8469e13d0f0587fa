/* test_dataset_shard.c: tfl_dataset_shard (data parallelism): every batch is one shard of the
 * global batch, whose size, order and count stay those of the unsharded dataset; the shards
 * of a batch, in order, are the batch; empty shards still give a (0-row) batch; seek works
 * in global batches; bad shards are refused. */
#include "test_fixture.h"

/* n examples of 2 features (i, -i) with class label i % 7, or float targets (i, 2i). */
static tfl_dataset *numbered(tfl_ctx *ctx, int n, bool targets)
{
    float *x = malloc(sizeof(float) * 2 * (size_t)(n ? n : 1));
    float *t = malloc(sizeof(float) * 2 * (size_t)(n ? n : 1));
    int32_t *y = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    assert_true(x && t && y);
    for (int i = 0; i < n; i++) {
        x[2 * i] = (float)i;
        x[2 * i + 1] = (float)-i;
        y[i] = i % 7;
        t[2 * i] = (float)i;
        t[2 * i + 1] = 2.0f * (float)i;
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){n, 2}, x);
    tfl_tensor *ty = targets ? tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){n, 2}, t)
                             : tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){n}, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    free(x);
    free(t);
    free(y);
    assert_non_null(ds);
    return ds;
}

#define MAX_ROWS 512

/* One epoch's batches: the example numbers (x[:, 0]) of each, with the labels checked
 * against them. rows[k] has count[k] entries; returns the number of batches. */
typedef struct epoch_rows {
    int batches;
    int count[64];
    int rows[64][MAX_ROWS];
} epoch_rows;

static void read_epoch(tfl_ctx *ctx, tfl_dataset *ds, bool targets, uint64_t epoch, int64_t seek_to,
                       epoch_rows *out)
{
    assert_int_equal(tfl_dataset_reset(ds, epoch), TFL_OK);
    if (seek_to > 0) assert_int_equal(tfl_dataset_seek(ds, seek_to), TFL_OK);
    memset(out, 0, sizeof *out);
    for (;;) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *x = NULL, *y = NULL;
        tfl_status st = tfl_dataset_next(ds, &x, &y);
        if (st == TFL_OUT_OF_RANGE) {
            assert_null(x);
            assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
            break;
        }
        assert_int_equal(st, TFL_OK);
        assert_int_equal(tfl_tensor_rank(x), 2);
        int64_t b = tfl_tensor_dim(x, 0);
        assert_int_equal(tfl_tensor_dim(x, 1), 2);
        assert_int_equal(tfl_tensor_rank(y), targets ? 2 : 1);
        assert_int_equal(tfl_tensor_dim(y, 0), b);
        assert_true(b >= 0 && b <= MAX_ROWS);
        int k = out->batches++;
        assert_true(k < 64);
        out->count[k] = (int)b;
        for (int64_t i = 0; i < b; i++) {
            double v = -1, w = 1, l = -1;
            assert_int_equal(tfl_tensor_get(x, i * 2, &v), TFL_OK);
            assert_int_equal(tfl_tensor_get(x, i * 2 + 1, &w), TFL_OK);
            assert_true(w == -v);
            out->rows[k][i] = (int)v;
            if (targets) {
                assert_int_equal(tfl_tensor_get(y, i * 2 + 1, &l), TFL_OK);
                assert_true(l == 2.0 * v);
            } else {
                assert_int_equal(tfl_tensor_get(y, i, &l), TFL_OK);
                assert_int_equal((int)l, (int)v % 7);
            }
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
    /* the end stays the end */
    tfl_tensor *x = NULL;
    assert_int_equal(tfl_dataset_next(ds, &x, NULL), TFL_OUT_OF_RANGE);
}

/* floor(i·m / c) */
static int start_row(int m, int i, int c)
{
    return (int)((int64_t)i * m / c);
}

/* Every shard of `count` reads, batch by batch, its part of the unsharded epoch, and the
 * parts in shard order are the batch. */
static void check_shards(tfl_ctx *ctx, int n, int64_t batch, bool shuffle, bool drop, int count,
                         bool targets, int64_t seek_to)
{
    tfl_dataset *ds = numbered(ctx, n, targets);
    tfl_batch_opts bo = {.shuffle = shuffle, .seed = 17, .drop_remainder = drop};
    assert_int_equal(tfl_dataset_batch(ds, batch, &bo), TFL_OK);
    int64_t nb = tfl_dataset_num_batches(ds);
    static epoch_rows whole, part;
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        assert_int_equal(tfl_dataset_shard(ds, 0, 1), TFL_OK);
        read_epoch(ctx, ds, targets, epoch, seek_to, &whole);
        assert_int_equal(whole.batches, nb - seek_to);
        int seen[MAX_ROWS] = {0}; /* how often each row came, over all shards */
        for (int i = 0; i < count; i++) {
            assert_int_equal(tfl_dataset_shard(ds, i, count), TFL_OK);
            assert_int_equal(tfl_dataset_shard_index(ds), i);
            assert_int_equal(tfl_dataset_shard_count(ds), count);
            /* batching again keeps the shard; the global counts stay */
            assert_int_equal(tfl_dataset_batch(ds, batch, &bo), TFL_OK);
            assert_int_equal(tfl_dataset_shard_count(ds), count);
            assert_int_equal(tfl_dataset_num_batches(ds), nb);
            assert_int_equal(tfl_dataset_size(ds), n);
            read_epoch(ctx, ds, targets, epoch, seek_to, &part);
            assert_int_equal(part.batches, whole.batches); /* empty shards count too */
            for (int k = 0; k < whole.batches; k++) {
                int m = whole.count[k], a = start_row(m, i, count);
                assert_int_equal(part.count[k], start_row(m, i + 1, count) - a);
                for (int r = 0; r < part.count[k]; r++) {
                    assert_int_equal(part.rows[k][r], whole.rows[k][a + r]);
                    seen[part.rows[k][r]]++;
                }
            }
        }
        int total = 0;
        for (int k = 0; k < whole.batches; k++) {
            total += whole.count[k];
            for (int r = 0; r < whole.count[k]; r++)
                assert_int_equal(seen[whole.rows[k][r]], 1);
        }
        int64_t expect = drop ? (n / batch) * batch : n;
        assert_int_equal(total, expect - (seek_to * batch < expect ? seek_to * batch : expect));
    }
    tfl_dataset_free(ds);
}

static void test_union_in_order(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    for (int shuffle = 0; shuffle < 2; shuffle++)
        for (int drop = 0; drop < 2; drop++) {
            check_shards(ctx, 10, 4, shuffle, drop, 3, false, 0); /* last batch 2 rows: 0, 1, 1 */
            check_shards(ctx, 23, 8, shuffle, drop, 2, false, 0); /* uneven m: 7 -> 3, 4 */
            check_shards(ctx, 23, 8, shuffle, drop, 5, true, 0);  /* targets, 8 -> 1,2,1,2,2 */
            check_shards(ctx, 7, 7, shuffle, drop, 1, false, 0);  /* count 1: everything */
        }
}

/* A global batch of 129 rows, 128 a batch, on 2 replicas: the last batch's 1 row goes to
 * shard 1, shard 0 gets a batch of 0 rows (and a step all the same). */
static void test_empty_shard(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    check_shards(ctx, 129, 128, false, false, 2, false, 0);
    check_shards(ctx, 129, 128, true, false, 2, true, 0);
    check_shards(ctx, 3, 8, true, false, 5, false, 0); /* one batch of 3 rows on 5 replicas */

    tfl_dataset *ds = numbered(ctx, 129, false);
    assert_int_equal(tfl_dataset_batch(ds, 128, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_shard(ds, 0, 2), TFL_OK);
    assert_int_equal(tfl_dataset_seek(ds, 1), TFL_OK);
    tfl_tensor *x = NULL, *y = NULL;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OK);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_rank(x), 2);
    assert_int_equal(tfl_tensor_dim(x, 0), 0);
    assert_int_equal(tfl_tensor_dim(x, 1), 2);
    assert_int_equal(tfl_tensor_dim(y, 0), 0);
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OUT_OF_RANGE);
    assert_null(x);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_dataset_free(ds);
}

static void test_seek_is_global(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    check_shards(ctx, 23, 4, true, false, 3, false, 2);
    check_shards(ctx, 23, 4, false, true, 2, true, 5);
    check_shards(ctx, 23, 4, true, false, 2, false, 6); /* the end: no batch left */
}

static void test_bad_shard(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_dataset *ds = numbered(ctx, 10, false);
    assert_int_equal(tfl_dataset_shard(ds, 1, 3), TFL_OK);
    assert_int_equal(tfl_dataset_shard(ds, 0, 0), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "count must be >= 1, got 0");
    assert_int_equal(tfl_dataset_shard(ds, 2, 2), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "index must be in [0, 2) (count 2), got 2");
    assert_int_equal(tfl_dataset_shard(ds, -1, 4), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "got -1");
    /* unchanged by the refusals */
    assert_int_equal(tfl_dataset_shard_index(ds), 1);
    assert_int_equal(tfl_dataset_shard_count(ds), 3);
    assert_int_equal(tfl_dataset_shard(NULL, 0, 1), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_dataset_shard_index(NULL), -1);
    assert_int_equal(tfl_dataset_shard_count(NULL), -1);
    /* a split's parts start unsharded */
    tfl_dataset *a = NULL, *b = NULL;
    assert_int_equal(tfl_dataset_split(ds, 4, &a, &b), TFL_OK);
    assert_int_equal(tfl_dataset_shard_index(a), 0);
    assert_int_equal(tfl_dataset_shard_count(b), 1);
    tfl_dataset_free(a);
    tfl_dataset_free(b);
    tfl_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_union_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seek_is_global, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_shard, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
