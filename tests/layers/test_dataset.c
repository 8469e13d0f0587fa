/* test_dataset.c: tfl_dataset from IDX files (plain and gzipped, written here with zlib),
 * in-memory arrays and CSV: values, shapes, normalisation, batching, the seeded shuffle,
 * reset, split, and every error path with its code and message. */
#include "test_fixture.h"

#include <dirent.h>
#include <math.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

/* A path inside the test's temporary directory (a static buffer per call site's slot). */
static const char *tmp_path(int slot, const char *name)
{
    static char paths[8][320];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", tmpdir, name);
    return paths[slot];
}

static void write_bytes(const char *path, const void *data, size_t n, bool gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (n) assert_int_equal(gzwrite(f, data, (unsigned)n), (int)n);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (n) assert_int_equal(fwrite(data, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
    }
}

/* An IDX file: header (type, dims) then `data_bytes` of data (already big-endian). */
static void write_idx(const char *path, bool gz, uint8_t type, int ndims, const uint32_t *dims,
                      const void *data, size_t data_bytes)
{
    size_t n = 4 + 4 * (size_t)ndims + data_bytes;
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = type;
    buf[3] = (uint8_t)ndims;
    for (int i = 0; i < ndims; i++) {
        buf[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        buf[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        buf[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        buf[7 + 4 * i] = (uint8_t)dims[i];
    }
    if (data_bytes) memcpy(buf + 4 + 4 * ndims, data, data_bytes);
    write_bytes(path, buf, n, gz);
    free(buf);
}

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

static int group_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/tfl_dataset_XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    if (!d) return -1;
    struct dirent *e;
    char path[600];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    closedir(d);
    return rmdir(tmpdir);
}

/* Takes the next batch and checks its size; returns the frame-free tensors (caller releases). */
static int64_t next_batch(tfl_dataset *ds, float *xs, int32_t *ys, size_t cap_x, size_t cap_y)
{
    tfl_tensor *x = NULL, *y = NULL;
    tfl_status st = tfl_dataset_next(ds, &x, ys ? &y : NULL);
    if (st == TFL_OUT_OF_RANGE) {
        assert_null(x);
        assert_null(y);
        return -1;
    }
    assert_int_equal(st, TFL_OK);
    assert_int_equal(tfl_tensor_dtype(x), TFL_DTYPE_FLOAT32);
    int64_t b = tfl_tensor_dim(x, 0);
    size_t nx = (size_t)tfl_tensor_numel(x);
    assert_true(nx <= cap_x);
    assert_int_equal(tfl_tensor_to_host(x, xs, nx * sizeof(float)), TFL_OK);
    if (ys && y) {
        assert_int_equal(tfl_tensor_dtype(y), TFL_DTYPE_INT32);
        assert_int_equal(tfl_tensor_rank(y), 1);
        assert_int_equal(tfl_tensor_dim(y, 0), b);
        assert_true((size_t)b <= cap_y);
        assert_int_equal(tfl_tensor_to_host(y, ys, (size_t)b * sizeof(int32_t)), TFL_OK);
    }
    tfl_tensor_release(x);
    tfl_tensor_release(y);
    return b;
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

/* ---- batching and shuffling over in-memory arrays --------------------------------------------- */

/* x[i] = (i, -i), y[i] = i for i < n. */
static tfl_dataset *iota_dataset(tfl_ctx *ctx, int64_t n)
{
    float *x = malloc((size_t)n * 2 * sizeof(float));
    int32_t *y = malloc((size_t)n * sizeof(int32_t));
    assert_non_null(x);
    assert_non_null(y);
    for (int64_t i = 0; i < n; i++) {
        x[2 * i] = (float)i;
        x[2 * i + 1] = (float)-i;
        y[i] = (int32_t)i;
    }
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){n, 2}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, &n, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    free(x);
    free(y);
    assert_non_null(ds);
    return ds;
}

/* One epoch's labels in order; checks that x agrees with y. Returns the examples seen. */
static int64_t epoch_order(tfl_dataset *ds, int32_t *order, int64_t cap)
{
    int64_t n = 0, b;
    float *xs = malloc((size_t)(2 * cap + 2) * sizeof(float));
    int32_t *ys = malloc((size_t)(cap + 1) * sizeof(int32_t));
    assert_non_null(xs);
    assert_non_null(ys);
    while ((b = next_batch(ds, xs, ys, (size_t)(2 * cap + 2), (size_t)cap + 1)) >= 0) {
        for (int64_t i = 0; i < b; i++) {
            assert_true(n < cap);
            assert_float_equal(xs[2 * i], (float)ys[i], 0);
            assert_float_equal(xs[2 * i + 1], (float)-ys[i], 0);
            order[n++] = ys[i];
        }
    }
    free(xs);
    free(ys);
    return n;
}

static void assert_permutation(const int32_t *order, int64_t n)
{
    char *seen = calloc((size_t)n, 1);
    assert_non_null(seen);
    for (int64_t i = 0; i < n; i++) {
        assert_in_range(order[i], 0, n - 1);
        assert_int_equal(seen[order[i]], 0);
        seen[order[i]] = 1;
    }
    free(seen);
}

static void test_batching(void **state)
{
    fixture *f = *state;
    tfl_dataset *ds = iota_dataset(f->ctx, 103);
    int32_t order[103];
    /* defaults: batches of 32 in order, last partial batch kept */
    assert_int_equal(tfl_dataset_num_batches(ds), 4);
    assert_int_equal(epoch_order(ds, order, 103), 103);
    for (int i = 0; i < 103; i++) assert_int_equal(order[i], i);
    /* drop_remainder */
    assert_int_equal(tfl_dataset_batch(ds, 10, &(tfl_batch_opts){.drop_remainder = true}), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 10);
    assert_int_equal(epoch_order(ds, order, 103), 100);
    for (int i = 0; i < 100; i++) assert_int_equal(order[i], i);
    /* a batch larger than the dataset */
    assert_int_equal(tfl_dataset_batch(ds, 1000, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 1);
    assert_int_equal(epoch_order(ds, order, 103), 103);
    assert_int_equal(tfl_dataset_batch(ds, 1000, &(tfl_batch_opts){.drop_remainder = true}),
                     TFL_OK);
    assert_int_equal(tfl_dataset_num_batches(ds), 0);
    assert_int_equal(epoch_order(ds, order, 103), 0);
    /* reset in the middle of an epoch restarts it */
    assert_int_equal(tfl_dataset_batch(ds, 7, NULL), TFL_OK);
    float xs[14];
    int32_t ys[7];
    assert_int_equal(next_batch(ds, xs, ys, 14, 7), 7);
    assert_int_equal(next_batch(ds, xs, ys, 14, 7), 7);
    assert_int_equal(ys[0], 7);
    assert_int_equal(tfl_dataset_reset(ds, 0), TFL_OK);
    assert_int_equal(next_batch(ds, xs, ys, 14, 7), 7);
    assert_int_equal(ys[0], 0);
    /* y is optional */
    tfl_tensor *x;
    tfl_frame_push(f->ctx);
    assert_int_equal(tfl_dataset_next(ds, &x, NULL), TFL_OK);
    assert_int_equal(tfl_tensor_dim(x, 0), 7);
    tfl_frame_pop(f->ctx);
    tfl_dataset_free(ds);
}

static void test_shuffle(void **state)
{
    fixture *f = *state;
    enum { N = 103 };
    tfl_dataset *ds = iota_dataset(f->ctx, N);
    int32_t e0[N], e0b[N], e1[N], other[N];
    tfl_batch_opts sh = {.shuffle = true, .seed = 7};
    assert_int_equal(tfl_dataset_batch(ds, 10, &sh), TFL_OK);
    assert_int_equal(epoch_order(ds, e0, N), N);
    assert_permutation(e0, N);
    int in_place = 0;
    for (int i = 0; i < N; i++) in_place += e0[i] == i;
    assert_true(in_place < 10); /* shuffled, not the identity */
    /* the same seed and epoch: the same order (reset, or a new dataset) */
    assert_int_equal(tfl_dataset_reset(ds, 0), TFL_OK);
    assert_int_equal(epoch_order(ds, e0b, N), N);
    assert_memory_equal(e0, e0b, sizeof e0);
    tfl_dataset *ds2 = iota_dataset(f->ctx, N);
    assert_int_equal(tfl_dataset_batch(ds2, 32, &sh), TFL_OK); /* another batch size */
    assert_int_equal(epoch_order(ds2, e0b, N), N);
    assert_memory_equal(e0, e0b, sizeof e0);
    /* another epoch: another order, still a permutation */
    assert_int_equal(tfl_dataset_reset(ds, 1), TFL_OK);
    assert_int_equal(epoch_order(ds, e1, N), N);
    assert_permutation(e1, N);
    assert_memory_not_equal(e0, e1, sizeof e0);
    /* another seed: another order */
    assert_int_equal(tfl_dataset_batch(ds2, 10, &(tfl_batch_opts){.shuffle = true, .seed = 8}),
                     TFL_OK);
    assert_int_equal(epoch_order(ds2, other, N), N);
    assert_permutation(other, N);
    assert_memory_not_equal(e0, other, sizeof e0);
    /* drop_remainder with shuffling: 100 distinct examples */
    assert_int_equal(tfl_dataset_batch(ds2, 10, &(tfl_batch_opts){.shuffle = true, .seed = 7,
                                                                   .drop_remainder = true}),
                     TFL_OK);
    assert_int_equal(epoch_order(ds2, other, N), 100);
    assert_memory_equal(e0, other, 100 * sizeof(int32_t));
    /* turning shuffling off again gives the stored order */
    assert_int_equal(tfl_dataset_batch(ds2, 50, NULL), TFL_OK);
    assert_int_equal(epoch_order(ds2, other, N), N);
    for (int i = 0; i < N; i++) assert_int_equal(other[i], i);
    tfl_dataset_free(ds);
    tfl_dataset_free(ds2);
}

/* The order is pinned: a known answer from the formula in data.h (computed independently
 * with a Python Philox4x32-10), so it is the same on every machine and in every version. */
static void test_shuffle_known_answer(void **state)
{
    fixture *f = *state;
    tfl_dataset *ds = iota_dataset(f->ctx, 10);
    int32_t order[10];
    assert_int_equal(tfl_dataset_batch(ds, 4, &(tfl_batch_opts){.shuffle = true, .seed = 42}),
                     TFL_OK);
    assert_int_equal(tfl_dataset_reset(ds, 3), TFL_OK);
    assert_int_equal(epoch_order(ds, order, 10), 10);
    static const int32_t expected[10] = {7, 4, 6, 2, 8, 9, 3, 5, 0, 1};
    assert_memory_equal(order, expected, sizeof order);
    tfl_dataset_free(ds);
}

/* A seed of 0 takes the context's seed. */
static void test_shuffle_ctx_seed(void **state)
{
    (void)state;
    int32_t a[50], b[50], c[50];
    for (int k = 0; k < 3; k++) {
        tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.seed = k < 2 ? 5 : 6}, NULL);
        assert_non_null(ctx);
        tfl_dataset *ds = iota_dataset(ctx, 50);
        assert_int_equal(tfl_dataset_batch(ds, 8, &(tfl_batch_opts){.shuffle = true}), TFL_OK);
        assert_int_equal(epoch_order(ds, k == 0 ? a : k == 1 ? b : c, 50), 50);
        tfl_dataset_free(ds);
        tfl_ctx_free(ctx);
    }
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
}

/* ---- arrays, split, normalisation ---------------------------------------------------------- */

static void test_arrays_dtypes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_frame_push(ctx);
    double xd[6] = {1, 2, 3, 4, 5, 6};
    int64_t yd[3] = {2, 0, 1};
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 3, (int64_t[]){3, 1, 2}, xd);
    tfl_tensor *y = tfl_tensor_new(ctx, TFL_DTYPE_INT64, 1, (int64_t[]){3}, yd);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, x, y, &(tfl_dataset_opts){.scale = 2});
    tfl_frame_pop(ctx); /* the dataset copied x and y */
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_feature_rank(ds), 2);
    assert_int_equal(tfl_dataset_num_classes(ds), 3);
    float xs[6];
    int32_t ys[3];
    assert_int_equal(next_batch(ds, xs, ys, 6, 3), 3);
    for (int i = 0; i < 6; i++) assert_float_equal(xs[i], 2 * xd[i], 0);
    assert_int_equal(ys[0], 2);
    assert_int_equal(ys[1], 0);
    /* split: the first 1 and the other 2, sharing the examples */
    tfl_dataset *a, *b;
    assert_int_equal(tfl_dataset_split(ds, 1, &a, &b), TFL_OK);
    tfl_dataset_free(ds);
    assert_int_equal(tfl_dataset_size(a), 1);
    assert_int_equal(tfl_dataset_size(b), 2);
    assert_int_equal(next_batch(b, xs, ys, 6, 3), 2);
    assert_float_equal(xs[0], 6, 0);
    assert_int_equal(ys[0], 0);
    assert_int_equal(ys[1], 1);
    assert_int_equal(next_batch(a, xs, ys, 6, 3), 1);
    assert_int_equal(ys[0], 2);
    /* empty parts */
    tfl_dataset *e, *all;
    assert_int_equal(tfl_dataset_split(b, 0, &e, &all), TFL_OK);
    assert_int_equal(tfl_dataset_size(e), 0);
    assert_int_equal(tfl_dataset_num_batches(e), 0);
    assert_int_equal(next_batch(e, xs, ys, 6, 3), -1);
    assert_int_equal(tfl_dataset_size(all), 2);
    tfl_dataset_free(e);
    tfl_dataset_free(all);
    tfl_dataset_free(a);
    tfl_dataset_free(b);
    /* int32 x without labels */
    tfl_frame_push(ctx);
    x = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){2}, (int32_t[]){-3, 9});
    ds = tfl_dataset_from_arrays(ctx, x, NULL, NULL);
    tfl_frame_pop(ctx);
    assert_non_null(ds);
    assert_false(tfl_dataset_has_labels(ds));
    assert_int_equal(next_batch(ds, xs, NULL, 6, 0), 2);
    assert_float_equal(xs[0], -3, 0);
    assert_float_equal(xs[1], 9, 0);
    tfl_dataset_free(ds);
}

static void test_normalization(void **state)
{
    fixture *f = *state;
    /* bytes: 4 images of (1, 3): feature 0 = 0, 51, 102, 153; feature 1 constant 7;
     * feature 2 = 255 - feature 0 */
    uint8_t x[12];
    for (int i = 0; i < 4; i++) {
        x[3 * i] = (uint8_t)(51 * i);
        x[3 * i + 1] = 7;
        x[3 * i + 2] = (uint8_t)(255 - 51 * i);
    }
    write_idx(tmp_path(0, "n-images"), false, 0x08, 3, (uint32_t[]){4, 1, 3}, x, sizeof x);
    tfl_dataset *ds = tfl_dataset_from_idx(f->ctx, tmp_path(0, "n-images"), NULL, NULL);
    assert_non_null(ds);
    float mean[3], sd[3], xs[12];
    assert_int_equal(tfl_dataset_moments(ds, mean, sd), TFL_OK);
    assert_float_equal(mean[0], 76.5 / 255, 1e-6);
    assert_float_equal(mean[1], 7.0 / 255, 1e-6);
    assert_float_equal(mean[2], 178.5 / 255, 1e-6);
    assert_float_equal(sd[0], sqrt(51.0 * 51.0 * 1.25) / 255, 1e-6); /* population std */
    assert_float_equal(sd[1], 0, 1e-6);
    assert_int_equal(tfl_dataset_set_normalization(ds, 0, 0, mean, sd), TFL_OK);
    assert_int_equal(next_batch(ds, xs, NULL, 12, 0), 4);
    double m0 = 0, s0 = 0;
    for (int i = 0; i < 4; i++) {
        m0 += xs[3 * i];
        s0 += xs[3 * i] * xs[3 * i];
        assert_float_equal(xs[3 * i + 1], 0, 1e-6); /* std 0 counts as 1: centred only */
        assert_float_equal(xs[3 * i + 2], -xs[3 * i], 1e-5);
    }
    assert_float_equal(m0 / 4, 0, 1e-6);
    assert_float_equal(s0 / 4, 1, 1e-5);
    /* the split keeps the normalisation */
    tfl_dataset *a, *b;
    assert_int_equal(tfl_dataset_split(ds, 2, &a, &b), TFL_OK);
    assert_int_equal(next_batch(b, xs + 6, NULL, 6, 0), 2);
    assert_int_equal(tfl_dataset_reset(ds, 0), TFL_OK);
    float all[12];
    assert_int_equal(next_batch(ds, all, NULL, 12, 0), 4);
    assert_memory_equal(all + 6, xs + 6, 6 * sizeof(float));
    tfl_dataset_free(a);
    tfl_dataset_free(b);
    /* scale and offset, mean only */
    assert_int_equal(tfl_dataset_set_normalization(ds, 1, -1, (float[]){0, 6, 0}, NULL), TFL_OK);
    assert_int_equal(tfl_dataset_reset(ds, 0), TFL_OK);
    assert_int_equal(next_batch(ds, xs, NULL, 12, 0), 4);
    assert_float_equal(xs[3], 50, 0);
    assert_float_equal(xs[4], 0, 0);
    /* bad values */
    assert_int_equal(tfl_dataset_set_normalization(ds, NAN, 0, NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "scale");
    assert_int_equal(tfl_dataset_set_normalization(ds, 1, 0, NULL, (float[]){1, -1, 1}),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "std[1] is -1");
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

static void test_api_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tfl_dataset *ds = iota_dataset(ctx, 5);
    assert_int_equal(tfl_dataset_batch(ds, 0, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "batch_size must be at least 1, got 0");
    assert_int_equal(tfl_dataset_next(ds, NULL, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "x must not be NULL");
    tfl_dataset *a = (tfl_dataset *)1, *b = (tfl_dataset *)1;
    assert_int_equal(tfl_dataset_split(ds, 6, &a, &b), TFL_INVALID_ARGUMENT);
    assert_null(a);
    assert_null(b);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "n_first must be in [0, 5]");
    assert_int_equal(tfl_dataset_split(ds, -1, &a, &b), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "got -1");
    tfl_dataset_free(ds);
    /* NULL handles never crash */
    tfl_dataset_free(NULL);
    assert_int_equal(tfl_dataset_next(NULL, NULL, NULL), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_dataset_reset(NULL, 0), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_dataset_batch(NULL, 1, NULL), TFL_INVALID_ARGUMENT);
    assert_null(tfl_dataset_from_arrays(ctx, NULL, NULL, NULL));
    /* arrays: bad dtypes, shapes, labels */
    tfl_frame_push(ctx);
    tfl_tensor *x = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){5, 3});
    tfl_tensor *y4 = tfl_zeros(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){4});
    assert_null(tfl_dataset_from_arrays(ctx, x, y4, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "x has 5 examples but y has shape (4,)");
    tfl_tensor *yf = tfl_zeros(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){5});
    assert_null(tfl_dataset_from_arrays(ctx, x, yf, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "int32 or int64 class indices, got float32");
    tfl_tensor *xb = tfl_zeros(ctx, TFL_DTYPE_BOOL, 1, (int64_t[]){5});
    assert_null(tfl_dataset_from_arrays(ctx, xb, NULL, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "integer or floating dtype, got bool");
    assert_null(tfl_dataset_from_arrays(ctx, tfl_scalar_f32(ctx, 1), NULL, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "rank >= 1");
    tfl_tensor *yn = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){5},
                                    (int32_t[]){0, 1, -4, 2, 3});
    assert_null(tfl_dataset_from_arrays(ctx, x, yn, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "label -4 at index 2 is negative");
    tfl_tensor *yl = tfl_tensor_new(ctx, TFL_DTYPE_INT64, 1, (int64_t[]){5},
                                    (int64_t[]){0, 1, 2, 3, 1ll << 40});
    assert_null(tfl_dataset_from_arrays(ctx, x, yl, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "at index 4 is above 2^31 - 1");
    tfl_frame_pop(ctx);
}

/* ---- CSV ------------------------------------------------------------------------------------ */

static void write_text(const char *path, const char *text, bool gz)
{
    write_bytes(path, text, strlen(text), gz);
}

static void test_csv(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const char *p = tmp_path(0, "a.csv");
    write_text(p, "label, a, b ,c\r\n1,0.5,2,-3\n\n0, 1e2 ,4,5\r\n  \n7,1,1,1", false);
    tfl_dataset *ds = tfl_dataset_from_csv(ctx, p, &(tfl_dataset_opts){.header = true});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_size(ds), 3);
    assert_int_equal(tfl_dataset_feature_rank(ds), 1);
    assert_int_equal(tfl_dataset_feature_shape(ds)[0], 3);
    assert_int_equal(tfl_dataset_num_classes(ds), 8);
    float xs[9];
    int32_t ys[3];
    assert_int_equal(next_batch(ds, xs, ys, 9, 3), 3);
    const float want[9] = {0.5f, 2, -3, 100, 4, 5, 1, 1, 1};
    assert_memory_equal(xs, want, sizeof want);
    assert_int_equal(ys[0], 1);
    assert_int_equal(ys[1], 0);
    assert_int_equal(ys[2], 7);
    tfl_dataset_free(ds);
    /* label by name, gzipped, another delimiter, scale */
    const char *g = tmp_path(1, "b.csv.gz");
    write_text(g, "x;y;cls\n1;2;3\n4;5;6\n", true);
    ds = tfl_dataset_from_csv(ctx, g, &(tfl_dataset_opts){.header = true, .label_name = "cls",
                                                          .delimiter = ';', .scale = 10});
    assert_non_null(ds);
    assert_int_equal(next_batch(ds, xs, ys, 9, 3), 2);
    const float want2[4] = {10, 20, 40, 50};
    assert_memory_equal(xs, want2, sizeof want2);
    assert_int_equal(ys[0], 3);
    assert_int_equal(ys[1], 6);
    tfl_dataset_free(ds);
    /* the last column by index, no header */
    write_text(p, "1,2,3\n4,5,6\n", false);
    ds = tfl_dataset_from_csv(ctx, p, &(tfl_dataset_opts){.label_column = -1});
    assert_non_null(ds);
    assert_int_equal(next_batch(ds, xs, ys, 9, 3), 2);
    assert_float_equal(xs[3], 5, 0);
    assert_int_equal(ys[1], 6);
    tfl_dataset_free(ds);
    /* no labels */
    ds = tfl_dataset_from_csv(ctx, p, &(tfl_dataset_opts){.no_labels = true});
    assert_non_null(ds);
    assert_false(tfl_dataset_has_labels(ds));
    assert_int_equal(tfl_dataset_feature_shape(ds)[0], 3);
    tfl_dataset_free(ds);
}

static void expect_csv_error(tfl_ctx *ctx, const char *text, const tfl_dataset_opts *o,
                             tfl_status code, const char *frag)
{
    const char *p = tmp_path(4, "err.csv");
    write_text(p, text, false);
    assert_null(tfl_dataset_from_csv(ctx, p, o));
    tfl_error e = tfl_ctx_error(ctx);
    assert_has(e.message, "err.csv");
    expect_kept_error(ctx, code, frag);
}

static void test_csv_errors(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    const tfl_dataset_opts hdr = {.header = true};
    assert_null(tfl_dataset_from_csv(ctx, tmp_path(0, "missing.csv"), NULL));
    expect_kept_error(ctx, TFL_NOT_FOUND, "missing.csv");
    expect_csv_error(ctx, "l,a,b\n1,2,3\n1,x2,3\n", &hdr, TFL_DATA_LOSS,
                     "line 3, column 2 ('a'): 'x2' is not a number");
    expect_csv_error(ctx, "1,2,3\n1,,3\n", NULL, TFL_DATA_LOSS, "line 2, column 2: '' is empty");
    expect_csv_error(ctx, "1,2,3\n1,2\n", NULL, TFL_DATA_LOSS,
                     "line 2: 2 columns, but the first line has 3");
    expect_csv_error(ctx, "a,b\n1,2,3\n", &hdr, TFL_DATA_LOSS, "line 2: 3 columns, but the header has 2");
    expect_csv_error(ctx, "1.5,2\n", NULL, TFL_DATA_LOSS,
                     "line 1, column 1: '1.5' is not a class index");
    expect_csv_error(ctx, "-1,2\n", NULL, TFL_DATA_LOSS, "'-1' is not a class index");
    expect_csv_error(ctx, "1,1e39\n", NULL, TFL_DATA_LOSS, "out of the range of float32");
    expect_csv_error(ctx, "a,b\n", &hdr, TFL_INVALID_ARGUMENT, "no data lines");
    expect_csv_error(ctx, "", &hdr, TFL_INVALID_ARGUMENT, "empty");
    expect_csv_error(ctx, "a,b\n1,2\n", &(tfl_dataset_opts){.header = true, .label_name = "c"},
                     TFL_INVALID_ARGUMENT, "no column named 'c'");
    expect_csv_error(ctx, "1,2\n", &(tfl_dataset_opts){.label_name = "c"}, TFL_INVALID_ARGUMENT,
                     "needs header");
    expect_csv_error(ctx, "1,2\n", &(tfl_dataset_opts){.label_column = 2}, TFL_INVALID_ARGUMENT,
                     "label_column 2 is out of range for 2 columns");
    expect_csv_error(ctx, "1,2\n", &(tfl_dataset_opts){.label_column = -3}, TFL_INVALID_ARGUMENT,
                     "label_column -3");
    /* a cut gzip CSV */
    char text[20000];
    size_t n = 0;
    for (int i = 0; n < sizeof text - 40; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%d,%d.%d\n", i % 10, i * 7919 % 1000, i);
    const char *g = tmp_path(5, "cut.csv.gz");
    write_text(g, text, true);
    FILE *fp = fopen(g, "rb");
    assert_non_null(fp);
    static uint8_t gzbuf[20000];
    size_t gzn = fread(gzbuf, 1, sizeof gzbuf, fp);
    fclose(fp);
    write_bytes(g, gzbuf, gzn / 2, false);
    assert_null(tfl_dataset_from_csv(ctx, g, NULL));
    expect_kept_error(ctx, TFL_DATA_LOSS, "cut.csv.gz");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idx_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_gzip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_types_and_scale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batching, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shuffle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shuffle_known_answer, setup, teardown),
        cmocka_unit_test(test_shuffle_ctx_seed),
        cmocka_unit_test_setup_teardown(test_arrays_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_normalization, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idx_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
