/* test_dataset_idx.c: tfl_dataset from IDX files, plain and gzipped (written here with zlib):
 * values, shapes, element types, scale and offset, batching and reset over a small pair, and
 * every IDX error path (missing files, bad magic, truncation, gzip damage, labels) with its
 * code and message. */
#include "dataset_helpers.h"

#include <math.h>

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* 5 images of 2x3 bytes (image i, element j = 10 i + j) and labels (i * 2) % 7. */
static void write_small_pair(const char *img, const char *lab, bool gz_img, bool gz_lab)
{
    uint8_t x[5 * 6], y[5];
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 6; j++) x[i * 6 + j] = (uint8_t)(10 * i + j);
        y[i] = (uint8_t)((i * 2) % 7);
    }
    write_idx(img, gz_img, 0x08, 3, (uint32_t[]){5, 2, 3}, x, sizeof x);
    write_idx(lab, gz_lab, 0x08, 1, (uint32_t[]){5}, y, sizeof y);
}

/* ---- IDX ------------------------------------------------------------------------------------ */

static void check_small(tfl_ctx *ctx, tfl_dataset *ds)
{
    assert_non_null(ds);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    assert_int_equal(tfl_dataset_size(ds), 5);
    assert_int_equal(tfl_dataset_feature_rank(ds), 2);
    assert_int_equal(tfl_dataset_feature_shape(ds)[0], 2);
    assert_int_equal(tfl_dataset_feature_shape(ds)[1], 3);
    assert_int_equal(tfl_dataset_feature_size(ds), 6);
    assert_true(tfl_dataset_has_labels(ds));
    assert_int_equal(tfl_dataset_num_classes(ds), 7); /* labels 0 2 4 6 1 */
    assert_int_equal(tfl_dataset_batch(ds, 2, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 3);
    float xs[12];
    int32_t ys[2];
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        tfl_frame_push(ctx);
        tfl_tensor *x, *y;
        assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OK);
        int64_t b = k < 2 ? 2 : 1; /* the last partial batch is kept */
        assert_int_equal(tfl_tensor_rank(x), 3);
        assert_int_equal(tfl_tensor_dim(x, 0), b);
        assert_int_equal(tfl_tensor_dim(x, 1), 2);
        assert_int_equal(tfl_tensor_dim(x, 2), 3);
        assert_string_equal(tfl_tensor_device(x), "CPU:0");
        assert_int_equal(tfl_tensor_to_host(x, xs, (size_t)b * 6 * sizeof(float)), TFL_OK);
        assert_int_equal(tfl_tensor_to_host(y, ys, (size_t)b * sizeof(int32_t)), TFL_OK);
        for (int64_t i = 0; i < b; i++, seen++) {
            assert_int_equal(ys[i], (seen * 2) % 7);
            for (int j = 0; j < 6; j++)
                assert_float_equal(xs[i * 6 + j], (float)(10 * seen + j) / 255.0f, 1e-7);
        }
        tfl_frame_pop(ctx);
    }
    tfl_tensor *x = (tfl_tensor *)1, *y = (tfl_tensor *)1;
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OUT_OF_RANGE);
    assert_null(x);
    assert_null(y);
    assert_int_equal(tfl_dataset_next(ds, &x, &y), TFL_OUT_OF_RANGE); /* stays at the end */
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK); /* the end of an epoch is not an error */
    /* reset starts again */
    assert_int_equal(tfl_dataset_reset(ds, 1), TFL_OK);
    assert_int_equal(tfl_dataset_epoch(ds), 1);
    assert_int_equal(next_batch(ds, xs, ys, 12, 2), 2);
    assert_int_equal(ys[0], 0);
    assert_int_equal(ys[1], 2);
    tfl_dataset_free(ds);
}

static void test_idx_plain(void **state)
{
    fixture *f = *state;
    write_small_pair(tmp_path(0, "p-images"), tmp_path(1, "p-labels"), false, false);
    check_small(f->ctx, tfl_dataset_from_idx(f->ctx, tmp_path(0, "p-images"),
                                             tmp_path(1, "p-labels"), NULL));
}

static void test_idx_gzip(void **state)
{
    fixture *f = *state;
    write_small_pair(tmp_path(0, "g-images.gz"), tmp_path(1, "g-labels.gz"), true, true);
    check_small(f->ctx, tfl_dataset_from_idx(f->ctx, tmp_path(0, "g-images.gz"),
                                             tmp_path(1, "g-labels.gz"), NULL));
    /* mixed, and a gzip file whose name does not say so (found by its magic) */
    write_small_pair(tmp_path(0, "m-images"), tmp_path(1, "m-labels.gz"), true, false);
    check_small(f->ctx, tfl_dataset_from_idx(f->ctx, tmp_path(0, "m-images"),
                                             tmp_path(1, "m-labels.gz"), NULL));
}

static void test_idx_types_and_scale(void **state)
{
    fixture *f = *state;
    /* int32 images (kept as float32, default scale 1), int32 labels, 3 examples of (2,) */
    uint8_t x[3 * 2 * 4], y[3 * 4];
    int32_t xv[6] = {-5, 7, 100000, 0, 1, -1};
    for (int i = 0; i < 6; i++) put_be32(x + 4 * i, (uint32_t)xv[i]);
    for (int i = 0; i < 3; i++) put_be32(y + 4 * i, (uint32_t)(3 - i));
    write_idx(tmp_path(0, "i32-images"), false, 0x0C, 2, (uint32_t[]){3, 2}, x, sizeof x);
    write_idx(tmp_path(1, "i32-labels"), true, 0x0C, 1, (uint32_t[]){3}, y, sizeof y);
    tfl_dataset *ds = tfl_dataset_from_idx(f->ctx, tmp_path(0, "i32-images"),
                                           tmp_path(1, "i32-labels"),
                                           &(tfl_dataset_opts){.scale = 0.5f, .offset = 1.0f});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_num_classes(ds), 4);
    float xs[6];
    int32_t ys[3];
    assert_int_equal(next_batch(ds, xs, ys, 6, 3), 3);
    for (int i = 0; i < 6; i++) assert_float_equal(xs[i], (float)xv[i] * 0.5f + 1.0f, 1e-6);
    assert_int_equal(ys[0], 3);
    assert_int_equal(ys[2], 1);
    tfl_dataset_free(ds);
    /* num_classes: label 3 (index 0) is past 3 classes; 4 classes hold it */
    assert_null(tfl_dataset_from_idx(f->ctx, tmp_path(0, "i32-images"), tmp_path(1, "i32-labels"),
                                     &(tfl_dataset_opts){.num_classes = 3}));
    expect_kept_error(f->ctx, TFL_DATA_LOSS,
                      "i32-labels': label 3 at index 0 is not one of the 3 classes (labels in [0, 3))");
    ds = tfl_dataset_from_idx(f->ctx, tmp_path(0, "i32-images"), tmp_path(1, "i32-labels"),
                              &(tfl_dataset_opts){.num_classes = 4});
    assert_non_null(ds);
    tfl_dataset_free(ds);

    /* float32 images, rank-1 examples: one dimension means scalar examples */
    float fv[4] = {0.25f, -2.0f, 3.5f, 1e-3f};
    uint8_t fx[16];
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &fv[i], 4);
        put_be32(fx + 4 * i, u);
    }
    write_idx(tmp_path(0, "f32-images"), true, 0x0D, 1, (uint32_t[]){4}, fx, sizeof fx);
    ds = tfl_dataset_from_idx(f->ctx, tmp_path(0, "f32-images"), NULL, NULL);
    assert_non_null(ds);
    assert_false(tfl_dataset_has_labels(ds));
    assert_int_equal(tfl_dataset_num_classes(ds), 0);
    assert_int_equal(tfl_dataset_feature_rank(ds), 0);
    tfl_frame_push(f->ctx);
    tfl_tensor *tx, *ty = (tfl_tensor *)1;
    assert_int_equal(tfl_dataset_next(ds, &tx, &ty), TFL_OK);
    assert_null(ty); /* no labels */
    assert_int_equal(tfl_tensor_rank(tx), 1);
    assert_int_equal(tfl_tensor_to_host(tx, xs, 4 * sizeof(float)), TFL_OK);
    for (int i = 0; i < 4; i++) assert_float_equal(xs[i], fv[i], 0);
    tfl_frame_pop(f->ctx);
    tfl_dataset_free(ds);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void expect_idx_error(tfl_ctx *ctx, const char *img, const char *lab, tfl_status code,
                             const char *frag1, const char *frag2)
{
    tfl_dataset *ds = tfl_dataset_from_idx(ctx, img, lab, NULL);
    assert_null(ds);
    tfl_error e = tfl_ctx_error(ctx);
    if (frag2 && !strstr(e.message, frag2)) print_error("message: %s\n", e.message);
    if (frag2) assert_has(e.message, frag2);
    expect_kept_error(ctx, code, frag1);
}

static void test_idx_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const char *img = tmp_path(0, "e-images"), *lab = tmp_path(1, "e-labels");
    write_small_pair(img, lab, false, false);
    /* missing files */
    expect_idx_error(ctx, tmp_path(2, "nope-images"), lab, TFL_NOT_FOUND, "nope-images", NULL);
    expect_idx_error(ctx, img, tmp_path(2, "nope-labels.gz"), TFL_NOT_FOUND, "nope-labels.gz",
                     "labels");
    expect_idx_error(ctx, tmpdir, lab, TFL_FAILED_PRECONDITION, "not a regular file", NULL);
    /* bad magic */
    uint8_t junk[40] = {0x1f, 0x00, 0x08, 0x03};
    write_bytes(tmp_path(2, "e-magic"), junk, sizeof junk, false);
    expect_idx_error(ctx, tmp_path(2, "e-magic"), lab, TFL_DATA_LOSS, "bad magic 0x1f000803",
                     "e-magic");
    junk[0] = 0;
    junk[2] = 0x07; /* unknown type */
    write_bytes(tmp_path(2, "e-type"), junk, sizeof junk, true);
    expect_idx_error(ctx, tmp_path(2, "e-type"), lab, TFL_DATA_LOSS, "bad magic 0x00000703",
                     NULL);
    /* labels with 2 dimensions: images used as labels */
    expect_idx_error(ctx, img, img, TFL_DATA_LOSS, "3 dimensions; expected 1 (labels)", NULL);
    /* a header cut short */
    write_bytes(tmp_path(2, "e-short"), (uint8_t[]){0, 0, 8}, 3, false);
    expect_idx_error(ctx, tmp_path(2, "e-short"), lab, TFL_DATA_LOSS, "truncated header",
                     "3 of 4");
    write_bytes(tmp_path(2, "e-short2"), (uint8_t[]){0, 0, 8, 3, 0, 0, 0, 5, 0}, 9, true);
    expect_idx_error(ctx, tmp_path(2, "e-short2"), lab, TFL_DATA_LOSS, "truncated header",
                     "5 of 12");
    /* plain data shorter or longer than the header says */
    uint8_t x[31] = {0};
    write_idx(tmp_path(2, "e-trunc"), false, 0x08, 3, (uint32_t[]){5, 2, 3}, x, 29);
    expect_idx_error(ctx, tmp_path(2, "e-trunc"), lab, TFL_DATA_LOSS, "truncated",
                     "holds 29 bytes");
    write_idx(tmp_path(2, "e-long"), false, 0x08, 3, (uint32_t[]){5, 2, 3}, x, 31);
    expect_idx_error(ctx, tmp_path(2, "e-long"), lab, TFL_DATA_LOSS, "wrong count", "31 follow");
    /* gzipped data shorter or longer than the header says */
    write_idx(tmp_path(2, "e-trunc.gz"), true, 0x08, 3, (uint32_t[]){5, 2, 3}, x, 29);
    expect_idx_error(ctx, tmp_path(2, "e-trunc.gz"), lab, TFL_DATA_LOSS, "short read",
                     "29 of the 30");
    write_idx(tmp_path(2, "e-long.gz"), true, 0x08, 3, (uint32_t[]){5, 2, 3}, x, 31);
    expect_idx_error(ctx, tmp_path(2, "e-long.gz"), lab, TFL_DATA_LOSS, "trailing bytes", NULL);
    /* a header that claims far more than the gzip file can hold (no huge allocation) */
    write_idx(tmp_path(2, "e-huge.gz"), true, 0x08, 3, (uint32_t[]){4000000000u, 1000, 1000},
              x, 0);
    expect_idx_error(ctx, tmp_path(2, "e-huge.gz"), lab, TFL_DATA_LOSS, "can hold", NULL);
    write_idx(tmp_path(2, "e-huge"), false, 0x08, 3, (uint32_t[]){4000000000u, 1000, 8}, x,
              0);
    expect_idx_error(ctx, tmp_path(2, "e-huge"), lab, TFL_DATA_LOSS, "truncated", NULL);
    write_idx(tmp_path(2, "e-ovf"), false, 0x08, 3, (uint32_t[]){4000000000u, 4000000000u, 8},
              x, 0);
    expect_idx_error(ctx, tmp_path(2, "e-ovf"), lab, TFL_DATA_LOSS, "overflow", NULL);
    /* a gzip stream cut in the middle, and one with corrupt bytes */
    uint8_t big[4000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 2654435761u >> 13);
    write_idx(tmp_path(2, "e-cut.gz"), true, 0x08, 2, (uint32_t[]){100, 40}, big, sizeof big);
    FILE *fp = fopen(tmp_path(2, "e-cut.gz"), "rb");
    assert_non_null(fp);
    uint8_t gzbuf[8192];
    size_t gzn = fread(gzbuf, 1, sizeof gzbuf, fp);
    fclose(fp);
    assert_true(gzn > 200);
    write_bytes(tmp_path(2, "e-cut.gz"), gzbuf, gzn / 2, false);
    expect_idx_error(ctx, tmp_path(2, "e-cut.gz"), NULL, TFL_DATA_LOSS, "e-cut.gz", "short read");
    for (size_t i = 60; i < 120; i++) gzbuf[i] ^= 0x5a;
    write_bytes(tmp_path(2, "e-bad.gz"), gzbuf, gzn, false);
    expect_idx_error(ctx, tmp_path(2, "e-bad.gz"), NULL, TFL_DATA_LOSS, "e-bad.gz", NULL);
    /* image and label counts differ: both named */
    write_idx(tmp_path(2, "e-lab4"), false, 0x08, 1, (uint32_t[]){4}, x, 4);
    expect_idx_error(ctx, img, tmp_path(2, "e-lab4"), TFL_INVALID_ARGUMENT, "has 5 examples",
                     "has 4 labels");
    /* labels that are not class indices */
    uint8_t fl[8];
    float half = 1.5f;
    uint32_t u;
    memcpy(&u, &half, 4);
    put_be32(fl, u);
    put_be32(fl + 4, 0);
    write_idx(tmp_path(2, "e-labf"), false, 0x0D, 1, (uint32_t[]){2}, fl, 8);
    write_idx(tmp_path(3, "e-img2"), false, 0x08, 2, (uint32_t[]){2, 3}, x, 6);
    expect_idx_error(ctx, tmp_path(3, "e-img2"), tmp_path(2, "e-labf"), TFL_DATA_LOSS,
                     "label 1.5 at index 0", NULL);
    write_idx(tmp_path(2, "e-labn"), false, 0x09, 1, (uint32_t[]){2}, (uint8_t[]){1, 0xff}, 2);
    expect_idx_error(ctx, tmp_path(3, "e-img2"), tmp_path(2, "e-labn"), TFL_DATA_LOSS,
                     "label -1 at index 1", NULL);
    /* NULL path */
    expect_idx_error(ctx, NULL, lab, TFL_INVALID_ARGUMENT, "no file path", NULL);
    /* bad options */
    assert_null(tfl_dataset_from_idx(ctx, img, lab, &(tfl_dataset_opts){.scale = INFINITY}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "must be finite");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idx_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_gzip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_types_and_scale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
