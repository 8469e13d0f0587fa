/* test_fashion_mnist.c: loads Debian's dataset-fashion-mnist (gzipped IDX) when it is
 * installed, and checks counts, shapes, the first labels and one batch; exits 77 (skipped)
 * when the package is missing. */
#include "test_fixture.h"

#include <time.h>
#include <unistd.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist/"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void check_split(tfl_ctx *ctx, const char *images, const char *labels, int64_t n,
                        int32_t first_label)
{
    double t0 = now_s();
    tfl_dataset *ds = tfl_dataset_from_idx(ctx, images, labels, NULL);
    double t1 = now_s();
    if (!ds) print_error("%s\n", tfl_ctx_error(ctx).message);
    assert_non_null(ds);
    print_message("loaded %s: %lld examples in %.3f s\n", images, (long long)tfl_dataset_size(ds),
                  t1 - t0);
    assert_int_equal(tfl_dataset_size(ds), n);
    assert_int_equal(tfl_dataset_feature_rank(ds), 2);
    assert_int_equal(tfl_dataset_feature_shape(ds)[0], 28);
    assert_int_equal(tfl_dataset_feature_shape(ds)[1], 28);
    assert_int_equal(tfl_dataset_num_classes(ds), 10);
    assert_int_equal(tfl_dataset_batch(ds, 128, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), (n + 127) / 128);
    tfl_frame_push(ctx);
    tfl_tensor *x, *y;
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OK);
    assert_int_equal(tfl_tensor_dim(x, 0), 128);
    double label0 = -1, mx = -1, mn = 2;
    assert_int_equal(tfl_tensor_get(y, 0, &label0), TFL_OK);
    assert_int_equal((int32_t)label0, first_label);
    for (int64_t i = 0; i < 28 * 28; i++) {
        double v;
        assert_int_equal(tfl_tensor_get(x, i, &v), TFL_OK);
        if (v > mx) mx = v;
        if (v < mn) mn = v;
    }
    assert_true(mn >= 0.0 && mx <= 1.0 && mx > 0.0); /* scaled by 1/255 */
    tfl_frame_pop(ctx);
    /* a whole shuffled epoch */
    assert_int_equal(tfl_dataset_batch(ds, 256, &(tfl_batch_opts){.shuffle = true, .seed = 1}),
                     TFL_OK);
    int64_t seen = 0;
    double t2 = now_s();
    for (;;) {
        tfl_frame_push(ctx);
        tfl_status st = tfl_dataset_next(ds, &x, &y);
        if (st == TFL_OK) seen += tfl_tensor_dim(x, 0);
        tfl_frame_pop(ctx);
        if (st != TFL_OK) {
            assert_int_equal(st, TFL_OUT_OF_RANGE);
            break;
        }
    }
    print_message("one shuffled epoch of batches of 256: %.3f s\n", now_s() - t2);
    assert_int_equal(seen, n);
    tfl_dataset_free(ds);
}

static void test_fashion_mnist(void **state)
{
    fixture *f = *state;
    /* the first labels of the published files: 9 (ankle boot) in both */
    check_split(f->ctx, FMNIST_DIR "train-images-idx3-ubyte.gz",
                FMNIST_DIR "train-labels-idx1-ubyte.gz", 60000, 9);
    check_split(f->ctx, FMNIST_DIR "t10k-images-idx3-ubyte.gz",
                FMNIST_DIR "t10k-labels-idx1-ubyte.gz", 10000, 9);
}

int main(void)
{
    if (access(FMNIST_DIR "train-images-idx3-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "dataset-fashion-mnist is not installed: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fashion_mnist, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
