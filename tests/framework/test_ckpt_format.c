/* test_ckpt_format.c: the safetensors files of <tapeflow/checkpoint.h>: round trips of every
 * dtype (the header's layout, padding, alignment, CRCs and complex128 note checked byte by
 * byte), the reader's refusal of each malformed file with DATA_LOSS naming the problem and the
 * tensor, CRC mismatches found on read and on verify, and what a save refuses (duplicate
 * names, NaN, reserved metadata) without leaving a file or a temporary behind; saves of
 * several MiB (written in pieces, the writeback started early) the same byte for byte as
 * without fsync, with CRCs checked against a bitwise CRC-32C. */
#include "test_fixture.h"

#include <math.h>

#include "ckpt_test_util.h"
#include "tfl_test_util.h"

/* ---- round trips ------------------------------------------------------------------------------
 */

static void test_roundtrip_every_dtype(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "all.safetensors", path, sizeof path);

    const uint8_t b[3] = {1, 0, 1};
    const int32_t i32[4] = {-5, 0, 7, INT32_MAX};
    const int64_t i64[2] = {INT64_MIN, 42};
    const uint16_t f16[2] = {0x3c00, 0xc000};          /* 1, -2 */
    const uint16_t bf16[3] = {0x3f80, 0x4000, 0x8000}; /* 1, 2, -0 */
    const float f32[6] = {1.5f, -2, 3e-38f, 4, 5, 6};
    const double f64[2] = {0.1, -1e300};
    const float c64[4] = {1, 2, 3, 4};
    const double c128[4] = {1.25, -2.5, 3, 4};
    struct {
        const char *name;
        tfl_dtype dt;
        int rank;
        int64_t shape[3];
        const void *data;
        const char *file_dtype;
    } t[] = {
        {"flags", TFL_DTYPE_BOOL, 1, {3}, b, "BOOL"},
        {"ints", TFL_DTYPE_INT32, 2, {2, 2}, i32, "I32"},
        {"step", TFL_DTYPE_INT64, 1, {2}, i64, "I64"},
        {"half", TFL_DTYPE_FLOAT16, 1, {2}, f16, "F16"},
        {"brain", TFL_DTYPE_BFLOAT16, 1, {3}, bf16, "BF16"},
        {"dense/kernel", TFL_DTYPE_FLOAT32, 2, {2, 3}, f32, "F32"},
        {"doubles", TFL_DTYPE_FLOAT64, 0, {0}, f64, "F64"},
        {"cplx", TFL_DTYPE_COMPLEX64, 1, {2}, c64, "C64"},
        {"cplx128", TFL_DTYPE_COMPLEX128, 1, {2}, c128, "F64"},
        {"empty", TFL_DTYPE_FLOAT32, 2, {0, 5}, NULL, "F32"},
    };
    enum { N = sizeof t / sizeof t[0] };
    tfl_tensor *ts[N];
    const char *names[N];
    for (int i = 0; i < N; i++) {
        ts[i] = tfl_tensor_new(ctx, t[i].dt, t[i].rank, t[i].shape, t[i].data);
        assert_non_null(ts[i]);
        names[i] = t[i].name;
    }
    const char *mk[] = {"note"}, *mv[] = {"a \"quoted\"\nvalue"};
    assert_int_equal(
        tfl_ckpt_save(
            ctx, path, N, names, (const tfl_tensor *const *)ts,
            &(tfl_ckpt_save_opts){.n_metadata = 1, .metadata_keys = mk, .metadata_values = mv}),
        TFL_OK);
    assert_int_equal(tmpdir_count(&d), 1); /* no temporary left */

    /* the bytes: N % 8 == 0, padded with spaces, starts with '{' */
    size_t fn;
    unsigned char *raw = read_bytes(path, &fn);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | raw[i];
    assert_int_equal(hl % 8, 0);
    assert_int_equal(raw[8], '{');
    assert_true(raw[8 + hl - 1] == '}' || raw[8 + hl - 1] == ' ');
    free(raw);

    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_non_null(ck);
    assert_int_equal(tfl_ckpt_num_tensors(ck), N);
    assert_string_equal(tfl_ckpt_metadata(ck, "note"), mv[0]);
    assert_string_equal(tfl_ckpt_metadata(ck, "tapeflow.format_version"), "1");
    assert_string_equal(tfl_ckpt_metadata(ck, "tapeflow.dtype/cplx128"), "complex128");
    int64_t prev_end = hl + 8, prev_size = 16;
    for (int64_t i = 0; i < N; i++) { /* data order: element size descending, then name */
        tfl_ckpt_tensor_info info;
        assert_int_equal(tfl_ckpt_tensor_info_at(ck, i, &info), TFL_OK);
        assert_int_equal(info.offset, prev_end);
        int64_t es = info.dtype == TFL_DTYPE_COMPLEX128 ? 8 : (int64_t)tfl_dtype_size(info.dtype);
        assert_true(es <= prev_size);
        assert_int_equal(info.offset % es, 0); /* aligned to its element size */
        assert_true(info.has_crc);
        prev_end = info.offset + info.bytes;
        prev_size = es;
    }
    for (int i = 0; i < N; i++) {
        tfl_ckpt_tensor_info info;
        int64_t k = tfl_ckpt_find(ck, t[i].name);
        assert_true(k >= 0);
        assert_int_equal(tfl_ckpt_tensor_info_at(ck, k, &info), TFL_OK);
        assert_string_equal(info.name, t[i].name);
        assert_string_equal(info.file_dtype, t[i].file_dtype);
        assert_int_equal(info.dtype, t[i].dt);
        assert_int_equal(info.rank, t[i].rank);
        for (int a = 0; a < t[i].rank; a++)
            assert_int_equal(info.shape[a], t[i].shape[a]);
        tfl_tensor *r = tfl_ckpt_read_tensor(ck, t[i].name);
        assert_non_null(r);
        assert_int_equal(tfl_tensor_dtype(r), t[i].dt);
        size_t bytes = (size_t)tfl_tensor_numel(r) * tfl_dtype_size(t[i].dt);
        assert_int_equal((int64_t)bytes, info.bytes);
        void *got = malloc(bytes ? bytes : 1);
        assert_int_equal(tfl_tensor_to_host(r, got, bytes), TFL_OK);
        if (bytes) assert_memory_equal(got, t[i].data, bytes);
        free(got);
        tfl_tensor_release(r);
    }
    int64_t checked = 0;
    assert_int_equal(tfl_ckpt_verify(ck, &checked), TFL_OK);
    assert_int_equal(checked, N);
    tfl_ckpt_close(ck);

    /* memory reader: the same */
    raw = read_bytes(path, &fn);
    ck = tfl_ckpt_open_memory(ctx, raw, fn);
    assert_non_null(ck);
    assert_string_equal(tfl_ckpt_path(ck), "<memory>");
    assert_int_equal(tfl_ckpt_verify(ck, NULL), TFL_OK);
    tfl_ckpt_close(ck);
    free(raw);
    for (int i = 0; i < N; i++)
        tfl_tensor_release(ts[i]);
    tmpdir_remove(&d);
}

/* A file written by another tool (no CRCs, unpadded, leading whitespace, unknown-to-tapeflow
 * dtypes) reads, lists and verifies. */
static void test_foreign_file(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "foreign.safetensors", path, sizeof path);
    const char *h = "  {\"__metadata__\":{\"format\":\"pt\"},\"u\":{\"dtype\":\"U8\",\"shape\":[3],"
                    "\"data_offsets\":[4,7]},\"x\":{\"dtype\":\"F32\",\"shape\":[],"
                    "\"data_offsets\":[0,4]},\"z\":{\"dtype\":\"F16\",\"shape\":[0],"
                    "\"data_offsets\":[7,7]}} ";
    const uint8_t data[7] = {0, 0, 0x80, 0x3f, 9, 8, 7};
    write_st(path, h, -1, data, sizeof data);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_non_null(ck);
    assert_int_equal(tfl_ckpt_num_tensors(ck), 3);
    tfl_ckpt_tensor_info info;
    assert_int_equal(tfl_ckpt_tensor_info_at(ck, 1, &info), TFL_OK);
    assert_string_equal(info.name, "u");
    assert_int_equal(info.dtype, TFL_DTYPE_INVALID);
    assert_false(info.has_crc);
    assert_int_equal(tfl_ckpt_verify(ck, NULL), TFL_OK);
    tfl_tensor *x = tfl_ckpt_read_tensor(ck, "x");
    double v;
    assert_int_equal(tfl_tensor_get(x, 0, &v), TFL_OK);
    assert_true(v == 1.0);
    tfl_tensor_release(x);
    assert_null(tfl_ckpt_read_tensor(ck, "u"));
    expect_kept_error(ctx, TFL_UNIMPLEMENTED, "dtype U8 has no tapeflow dtype");
    assert_null(tfl_ckpt_read_tensor(ck, "nope"));
    expect_kept_error(ctx, TFL_NOT_FOUND, "no tensor named 'nope'");
    tfl_ckpt_close(ck);
    expect_open_fails(ctx, "/nonexistent/x.safetensors", TFL_NOT_FOUND, "cannot open", NULL);
    tmpdir_remove(&d);
}

/* ---- malformed files ---------------------------------------------------------------------------
 */

typedef struct bad_case {
    const char *what;
    const char *header;
    long hlen;   /* -1: strlen */
    size_t data; /* zero bytes of data */
    const char *frag1, *frag2;
} bad_case;

#define E4 "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
static const bad_case bad_cases[] = {
    {"not UTF-8", "{\"a\xff\":{" E4 "[0,4]}}", -1, 4, "not valid UTF-8", NULL},
    {"overlong UTF-8", "{\"a\xc0\x80\":{" E4 "[0,4]}}", -1, 4, "not valid UTF-8", NULL},
    {"not JSON", "{\"a\":{" E4 "[0,4]}", -1, 4, "not valid JSON", NULL},
    {"JSON then junk", "{\"a\":{" E4 "[0,4]}}x", -1, 4, "not valid JSON", NULL},
    {"not an object", "[1,2]", -1, 0, "does not start with '{'", NULL},
    {"empty header", "", 0, 0, "does not start with '{'", NULL},
    {"NUL escape", "{\"a\\u0000b\":{" E4 "[0,4]}}", -1, 4, "\\u0000", NULL},
    {"unknown dtype", "{\"w\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", -1, 16,
     "unknown dtype 'F128'", "tensor 'w'"},
    {"negative offset", "{\"w\":{" E4 "[-4,0]}}", -1, 0, "tensor 'w'", "data_offsets must be"},
    {"fractional offset", "{\"w\":{" E4 "[0.5,4]}}", -1, 4, "tensor 'w'", "data_offsets must be"},
    {"huge offset", "{\"w\":{" E4 "[0,1e300]}}", -1, 4, "tensor 'w'", "data_offsets must be"},
    {"three offsets", "{\"w\":{" E4 "[0,4,8]}}", -1, 4, "tensor 'w'", "data_offsets must be"},
    {"end before begin",
     "{\"a\":{" E4 "[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[0],"
     "\"data_offsets\":[4,0]}}",
     -1, 4, "tensor 'b'", "end before they begin"},
    {"overlap",
     "{\"a\":{" E4 "[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
     "\"data_offsets\":[2,6]}}",
     -1, 6, "tensor 'b'", "overlap"},
    {"gap", "{\"a\":{" E4 "[0,4]},\"b\":{" E4 "[8,12]}}", -1, 12, "tensor 'b'", "gap"},
    {"first not at 0", "{\"a\":{" E4 "[4,8]}}", -1, 8, "tensor 'a'", "gap"},
    {"byte count", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", -1, 4,
     "tensor 'w'", "hold 4 bytes, but shape (2,) of F32 needs 8"},
    {"shape overflow",
     "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,4],"
     "\"data_offsets\":[0,8]}}",
     -1, 8, "tensor 'w'", "more elements than fit"},
    {"shape product wraps to 0",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
     "\"data_offsets\":[0,0]}}",
     -1, 0, "tensor 'w'", "more elements than fit"},
    {"bad shape entry", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", -1, 4,
     "tensor 'w'", "shape entry 0"},
    {"rank 10",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1],"
     "\"data_offsets\":[0,4]}}",
     -1, 4, "tensor 'w'", "rank 10"},
    {"trailing bytes", "{\"w\":{" E4 "[0,4]}}", -1, 9, "trailing bytes", NULL},
    {"truncated", "{\"w\":{" E4 "[0,4]}}", -1, 2, "truncated", NULL},
    {"duplicate names", "{\"a\":{" E4 "[0,4]},\"a\":{" E4 "[0,4]}}", -1, 4, "duplicate name 'a'",
     NULL},
    {"duplicate field", "{\"a\":{" E4 "[0,4],\"dtype\":\"I32\"}}", -1, 4,
     "duplicate name 'dtype' in a", NULL},
    {"duplicate metadata", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"},\"a\":{" E4 "[0,4]}}", -1,
     4, "duplicate name 'k' in __metadata__", NULL},
    {"metadata not strings", "{\"__metadata__\":{\"step\":3},\"a\":{" E4 "[0,4]}}", -1, 4,
     "__metadata__ value of 'step' is not a string", NULL},
    {"metadata not an object", "{\"__metadata__\":[1],\"a\":{" E4 "[0,4]}}", -1, 4,
     "__metadata__ is not an object", NULL},
    {"entry not an object", "{\"a\":[1]}", -1, 0, "tensor 'a'", "not an object"},
    {"missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", -1, 4, "tensor 'a'",
     "needs \"dtype\""},
    {"CRC of no tensor",
     "{\"__metadata__\":{\"tapeflow.crc32c/b\":\"00000000\"},\"a\":{" E4 "[0,4]}}", -1, 4,
     "names a tensor the file does not have", NULL},
    {"CRC not hex", "{\"__metadata__\":{\"tapeflow.crc32c/a\":\"xyz\"},\"a\":{" E4 "[0,4]}}", -1, 4,
     "tensor 'a'", "not 8 hex digits"},
    {"missing CRC", "{\"__metadata__\":{\"tapeflow.format_version\":\"1\"},\"a\":{" E4 "[0,4]}}",
     -1, 4, "tensor 'a' has no CRC", NULL},
    {"bad complex128 note",
     "{\"__metadata__\":{\"tapeflow.dtype/a\":\"complex128\"},\"a\":{" E4 "[0,4]}}", -1, 4,
     "tensor 'a'", "needs F64"},
};

static void test_malformed(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "bad.safetensors", path, sizeof path);
    static const uint8_t zeros[64];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        print_message("case: %s\n", c->what);
        write_st(path, c->header, c->hlen, zeros, c->data);
        expect_open_fails(ctx, path, TFL_DATA_LOSS, c->frag1, c->frag2, NULL);
        /* the memory reader says the same */
        size_t n;
        unsigned char *raw = read_bytes(path, &n);
        assert_null(tfl_ckpt_open_memory(ctx, raw, n));
        assert_int_equal(tfl_ctx_status(ctx), TFL_DATA_LOSS);
        expect_msg(ctx, c->frag1);
        tfl_ctx_clear_error(ctx);
        free(raw);
    }
    /* lengths */
    write_bytes(path, "\x05\0\0", 3);
    expect_open_fails(ctx, path, TFL_DATA_LOSS, "shorter than the 8-byte header length", NULL);
    const uint8_t big[16] = {0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100,000,000 */
    write_bytes(path, big, sizeof big);
    expect_open_fails(ctx, path, TFL_DATA_LOSS, "header length 100000000", "or more", NULL);
    const uint8_t huge[16] = {0, 0, 0, 0, 0, 0, 0, 0x40, '{', '}'}; /* 2^62: no allocation */
    write_bytes(path, huge, sizeof huge);
    expect_open_fails(ctx, path, TFL_DATA_LOSS, "or more", NULL);
    const uint8_t past[16] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    write_bytes(path, past, sizeof past);
    expect_open_fails(ctx, path, TFL_DATA_LOSS,
                      "header length 100 goes past the end of the file "
                      "(16 bytes)",
                      NULL);
    tmpdir_remove(&d);
}

/* A flipped data byte: the header opens, the read and the verify find the CRC mismatch. */
static void test_crc_mismatch(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "c.safetensors", path, sizeof path);
    tfl_tensor *a =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, (const float[]){1, 2, 3});
    const char *name = "layer/w";
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &name, (const tfl_tensor *const *)&a, NULL),
                     TFL_OK);
    size_t n;
    unsigned char *raw = read_bytes(path, &n);
    raw[n - 2] ^= 0x10;
    write_bytes(path, raw, n);
    free(raw);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_non_null(ck);
    assert_null(tfl_ckpt_read_tensor(ck, name));
    expect_kept_error(ctx, TFL_DATA_LOSS, "tensor 'layer/w': CRC mismatch");
    float buf[3];
    assert_int_equal(tfl_ckpt_read(ck, 0, buf, sizeof buf), TFL_DATA_LOSS);
    tfl_ctx_clear_error(ctx);
    assert_int_equal(tfl_ckpt_read(ck, 0, buf, 8), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "has 12 bytes, not 8");
    assert_int_equal(tfl_ckpt_verify(ck, NULL), TFL_DATA_LOSS);
    expect_kept_error(ctx, TFL_DATA_LOSS, "CRC mismatch");
    tfl_ckpt_tensor_info info;
    assert_int_equal(tfl_ckpt_tensor_info_at(ck, 1, &info), TFL_OUT_OF_RANGE);
    expect_kept_error(ctx, TFL_OUT_OF_RANGE, "index 1 is out of range (1 tensors)");
    tfl_ckpt_close(ck);
    /* a reader closed twice, a manager freed twice: MISUSE, no crash */
    tfl_ckpt_close(ck);
    expect_kept_error(ctx, TFL_MISUSE, "checkpoint reader already freed");
    assert_int_equal(tfl_ckpt_num_tensors(ck), -1);
    expect_kept_error(ctx, TFL_MISUSE, "already freed");
    tfl_ckpt_manager *m = tfl_ckpt_manager_new(ctx, d.path, NULL);
    assert_non_null(m);
    tfl_ckpt_manager_free(m);
    tfl_ckpt_manager_free(m);
    expect_kept_error(ctx, TFL_MISUSE, "checkpoint manager already freed");
    /* a reader left open is closed with its context (the fixture checks for leaks) */
    assert_non_null(tfl_ckpt_open(ctx, path));
    tfl_tensor_release(a);
    tmpdir_remove(&d);
}

/* bool bytes other than 0 and 1 are refused when read into a tensor or a variable */
static void test_bool_bytes(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "b.safetensors", path, sizeof path);
    const uint8_t data[2] = {1, 2};
    write_st(path, "{\"flags\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", -1,
             data, 2);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    assert_non_null(ck);
    assert_null(tfl_ckpt_read_tensor(ck, "flags"));
    expect_kept_error(ctx, TFL_DATA_LOSS, "tensor 'flags': bool element 1 is 2, not 0 or 1");
    tfl_tensor *b = tfl_tensor_new(ctx, TFL_DTYPE_BOOL, 1, (int64_t[]){2}, NULL);
    tfl_tensor *v = tfl_variable_new(ctx, b, &(tfl_variable_opts){.name = "flags"});
    assert_int_equal(tfl_ckpt_restore_from(ck, 1, &v, NULL, NULL), TFL_DATA_LOSS);
    expect_kept_error(ctx, TFL_DATA_LOSS, "not 0 or 1");
    tfl_ckpt_close(ck);
    tfl_tensor_release(v);
    tfl_tensor_release(b);
    tmpdir_remove(&d);
}

/* ---- what a save refuses -----------------------------------------------------------------------
 */

static void test_save_refusals(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "s.safetensors", path, sizeof path);
    tfl_tensor *x =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){2}, (const float[]){1, 2});
    tfl_tensor *bad =
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, (const float[]){1, NAN, 2});
    tfl_tensor *v1 = tfl_variable_new(ctx, x, &(tfl_variable_opts){.name = "w"});
    tfl_tensor *v2 = tfl_variable_new(ctx, x, &(tfl_variable_opts){.name = "w"});
    /* an older file of that name survives every failed save */
    const char *nm = "keep";
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &nm, (const tfl_tensor *const *)&x, NULL), TFL_OK);
    size_t n0;
    unsigned char *before = read_bytes(path, &n0);

    const tfl_tensor *vv[2] = {v1, v2};
    assert_int_equal(tfl_ckpt_save(ctx, path, 2, NULL, vv, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "duplicate name 'w' (name 0 and 1)");
    const char *names2[2] = {"a", "a"};
    const tfl_tensor *xx[2] = {x, bad};
    assert_int_equal(tfl_ckpt_save(ctx, path, 2, names2, xx, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "duplicate name 'a'");
    const char *nb = "bad";
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &nb, (const tfl_tensor *const *)&bad, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tensor 'bad' holds a NaN or Inf (element 1)");
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, NULL, (const tfl_tensor *const *)&x, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "has no name and is not a variable");
    const char *empty = "", *meta = "__metadata__";
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &empty, (const tfl_tensor *const *)&x, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "an empty name");
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &meta, (const tfl_tensor *const *)&x, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "'__metadata__' is not a tensor name");
    const char *rk[] = {"tapeflow.crc32c/x"}, *rv[] = {"1"};
    assert_int_equal(
        tfl_ckpt_save(
            ctx, path, 1, &nm, (const tfl_tensor *const *)&x,
            &(tfl_ckpt_save_opts){.n_metadata = 1, .metadata_keys = rk, .metadata_values = rv}),
        TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "metadata key 'tapeflow.crc32c/x' is tapeflow's own");
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &nm, (const tfl_tensor *const *)&x,
                                   &(tfl_ckpt_save_opts){.flags = 0x80}),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "unknown flags");
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/missing/x.safetensors", d.path);
    assert_int_equal(tfl_ckpt_save(ctx, nodir, 1, &nm, (const tfl_tensor *const *)&x, NULL),
                     TFL_FAILED_PRECONDITION);
    expect_kept_error(ctx, TFL_FAILED_PRECONDITION, "cannot create the temporary file");
    size_t n1;
    unsigned char *after = read_bytes(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    assert_int_equal(tmpdir_count(&d), 1);

    /* asked for, a NaN is saved */
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &nb, (const tfl_tensor *const *)&bad,
                                   &(tfl_ckpt_save_opts){.flags = TFL_CKPT_ALLOW_NONFINITE}),
                     TFL_OK);
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    tfl_tensor *r = tfl_ckpt_read_tensor(ck, "bad");
    double v;
    assert_int_equal(tfl_tensor_get(r, 1, &v), TFL_OK);
    assert_true(isnan(v));
    tfl_tensor_release(r);
    tfl_ckpt_close(ck);

    /* a strided view saves its elements in row-major order */
    tfl_tensor *m = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){2, 3},
                                   (const float[]){1, 2, 3, 4, 5, 6});
    tfl_tensor *mt = tfl_transpose(ctx, m, NULL);
    const char *tn = "t";
    assert_int_equal(tfl_ckpt_save(ctx, path, 1, &tn, (const tfl_tensor *const *)&mt, NULL),
                     TFL_OK);
    ck = tfl_ckpt_open(ctx, path);
    r = tfl_ckpt_read_tensor(ck, "t");
    expect_f32(r, (const float[]){1, 4, 2, 5, 3, 6}, 6, 0);
    tfl_tensor_release(r);
    tfl_ckpt_close(ck);
    tfl_tensor_release(mt);
    tfl_tensor_release(m);
    tfl_tensor_release(v1);
    tfl_tensor_release(v2);
    tfl_tensor_release(x);
    tfl_tensor_release(bad);
    tmpdir_remove(&d);
}

/* ---- large saves ----------------------------------------------------------------------------- */

/* CRC-32C bit by bit, independent of the library's. */
static uint32_t crc32c_ref(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Tensors of several MiB: written from their memory in pieces, the writeback started every
 * few MiB while fsync is on. The file is the same byte for byte as with fsync off, each
 * tensor reads back exactly, each CRC in the header is that of the bytes in the file, and a
 * NaN in a later piece, or in the last element, is named by its element. */
static void test_large_save(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char synced[128], unsynced[128];
    tmpdir_file(&d, "synced.safetensors", synced, sizeof synced);
    tmpdir_file(&d, "unsynced.safetensors", unsynced, sizeof unsynced);

    enum { NBIG = 3000001, N64 = 131073 }; /* 12 MB (pieces, a tail); 1 MiB + 8 bytes */
    float *big = malloc(sizeof(float) * NBIG);
    double *w64 = malloc(sizeof(double) * N64);
    assert_non_null(big);
    assert_non_null(w64);
    uint32_t x = 2463534242u;
    for (int64_t i = 0; i < NBIG; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        big[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    }
    for (int64_t i = 0; i < N64; i++)
        w64[i] = (double)i * 0.25 - 7.0;
    tfl_tensor *t[3] = {
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){NBIG, 1}, big),
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT64, 1, (int64_t[]){N64}, w64),
        tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, (const float[]){1, 2, 3}),
    };
    const char *names[3] = {"big", "w64", "small"};
    const char *mk[] = {"step"}, *mv[] = {"12"};
    assert_int_equal(tfl_ckpt_save(ctx, synced, 3, names, (const tfl_tensor *const *)t,
                                   &(tfl_ckpt_save_opts){.n_metadata = 1,
                                                         .metadata_keys = mk,
                                                         .metadata_values = mv}),
                     TFL_OK);
    assert_int_equal(tfl_ckpt_save(ctx, unsynced, 3, names, (const tfl_tensor *const *)t,
                                   &(tfl_ckpt_save_opts){.n_metadata = 1,
                                                         .metadata_keys = mk,
                                                         .metadata_values = mv,
                                                         .flags = TFL_CKPT_NO_FSYNC}),
                     TFL_OK);
    size_t na, nb;
    unsigned char *a = read_bytes(synced, &na), *b = read_bytes(unsynced, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    assert_true(na > (size_t)NBIG * 4 + (size_t)N64 * 8);

    tfl_ckpt *ck = tfl_ckpt_open(ctx, synced);
    assert_non_null(ck);
    assert_int_equal(tfl_ckpt_num_tensors(ck), 3);
    const void *want[3] = {w64, big, (const float[]){1, 2, 3}}; /* data order: f64 first */
    const int64_t bytes[3] = {(int64_t)N64 * 8, (int64_t)NBIG * 4, 12};
    for (int64_t i = 0; i < 3; i++) {
        tfl_ckpt_tensor_info info;
        assert_int_equal(tfl_ckpt_tensor_info_at(ck, i, &info), TFL_OK);
        assert_int_equal(info.bytes, bytes[i]);
        assert_true(info.has_crc);
        assert_true(info.offset + info.bytes <= (int64_t)na);
        assert_memory_equal(a + info.offset, want[i], (size_t)info.bytes);
        assert_int_equal(info.crc32c, crc32c_ref(a + info.offset, (size_t)info.bytes));
    }
    int64_t checked = 0;
    assert_int_equal(tfl_ckpt_verify(ck, &checked), TFL_OK);
    assert_int_equal(checked, 3);
    tfl_ckpt_close(ck);
    free(a);
    free(b);

    /* a NaN in the third MiB of 'big', then an Inf in its last element: refused, named, and
     * the saved file stays as it was with no temporary left */
    size_t n0;
    unsigned char *before = read_bytes(synced, &n0);
    const int64_t bad_at[2] = {600000, NBIG - 1};
    const float bad_val[2] = {NAN, INFINITY};
    const char *bad_msg[2] = {"tensor 'big' holds a NaN or Inf (element 600000)",
                              "tensor 'big' holds a NaN or Inf (element 3000000)"};
    for (int k = 0; k < 2; k++) {
        big[bad_at[k]] = bad_val[k];
        tfl_tensor *bad = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){NBIG}, big);
        big[bad_at[k]] = 0.5f;
        const char *bn = "big";
        assert_int_equal(tfl_ckpt_save(ctx, synced, 1, &bn, (const tfl_tensor *const *)&bad,
                                       NULL),
                         TFL_INVALID_ARGUMENT);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, bad_msg[k]);
        tfl_tensor_release(bad);
    }
    size_t n1;
    unsigned char *after = read_bytes(synced, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(tmpdir_count(&d), 2);
    free(before);
    free(after);
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(t[i]);
    free(big);
    free(w64);
    tmpdir_remove(&d);
}

/* A NaN or an Inf of every float dtype is found at every element of a short tensor (the
 * whole 8-byte words and the tail), the real or the imaginary part of a complex; the same
 * tensors without it save. */
static void test_nonfinite_every_float_dtype(void **state)
{
    fixture *f = *state;
    tfl_ctx *ctx = f->ctx;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "nf.safetensors", path, sizeof path);
    enum { N = 7 };
    struct {
        tfl_dtype dt;
        size_t part;     /* bytes of one real number */
        int parts;       /* per element */
        uint64_t finite; /* a finite value's bits */
        uint64_t bad[2]; /* a NaN, an Inf */
    } kinds[] = {
        {TFL_DTYPE_FLOAT32, 4, 1, 0x3fc00000u, {0x7fc00000u, 0xff800000u}},
        {TFL_DTYPE_FLOAT64, 8, 1, 0x3ff8000000000000u, {0x7ff8000000000001u, 0x7ff0000000000000u}},
        {TFL_DTYPE_FLOAT16, 2, 1, 0x3e00u, {0x7e00u, 0xfc00u}},
        {TFL_DTYPE_BFLOAT16, 2, 1, 0x3fc0u, {0x7fc1u, 0x7f80u}},
        {TFL_DTYPE_COMPLEX64, 4, 2, 0x3fc00000u, {0x7fc00000u, 0x7f800000u}},
        {TFL_DTYPE_COMPLEX128, 8, 2, 0x3ff8000000000000u,
         {0xfff8000000000000u, 0xfff0000000000000u}},
    };
    unsigned char buf[N * 16];
    const char *nm = "t";
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        size_t reals = (size_t)N * (size_t)kinds[k].parts;
        for (size_t j = 0; j < reals; j++)
            memcpy(buf + j * kinds[k].part, &kinds[k].finite, kinds[k].part); /* little-endian */
        tfl_tensor *ok = tfl_tensor_new(ctx, kinds[k].dt, 1, (int64_t[]){N}, buf);
        assert_non_null(ok);
        assert_int_equal(tfl_ckpt_save(ctx, path, 1, &nm, (const tfl_tensor *const *)&ok, NULL),
                         TFL_OK);
        tfl_tensor_release(ok);
        for (size_t j = 0; j < reals; j++) {
            memcpy(buf + j * kinds[k].part, &kinds[k].bad[j % 2], kinds[k].part);
            tfl_tensor *bad = tfl_tensor_new(ctx, kinds[k].dt, 1, (int64_t[]){N}, buf);
            memcpy(buf + j * kinds[k].part, &kinds[k].finite, kinds[k].part);
            assert_int_equal(
                tfl_ckpt_save(ctx, path, 1, &nm, (const tfl_tensor *const *)&bad, NULL),
                TFL_INVALID_ARGUMENT);
            char want[96];
            snprintf(want, sizeof want, "tensor 't' holds a NaN or Inf (element %zu)",
                     j / (size_t)kinds[k].parts);
            expect_kept_error(ctx, TFL_INVALID_ARGUMENT, want);
            tfl_tensor_release(bad);
        }
    }
    assert_int_equal(tmpdir_count(&d), 1);
    tmpdir_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_every_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crc_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_save_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bool_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_save, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nonfinite_every_float_dtype, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
