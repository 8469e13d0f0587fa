/* dataset_helpers.h: helpers shared by test_dataset_*.c (temp dir, file writers, next_batch). */
#ifndef TFL_DATASET_HELPERS_H
#define TFL_DATASET_HELPERS_H

#include "test_fixture.h"

#include <dirent.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

/* A path inside the test's temporary directory (a static buffer per call site's slot). */
static inline const char *tmp_path(int slot, const char *name)
{
    static char paths[8][320];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", tmpdir, name);
    return paths[slot];
}

static inline void write_bytes(const char *path, const void *data, size_t n, bool gz)
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
static inline void write_idx(const char *path, bool gz, uint8_t type, int ndims,
                             const uint32_t *dims, const void *data, size_t data_bytes)
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

static inline int group_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/tfl_dataset_XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static inline int group_teardown(void **state)
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
static inline int64_t next_batch(tfl_dataset *ds, float *xs, int32_t *ys, size_t cap_x,
                                 size_t cap_y)
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

#endif /* TFL_DATASET_HELPERS_H */
