/* test_ckpt_summary.c: tfl_ckpt_summary (<tapeflow/checkpoint.h>), the text `tapeflow inspect`
 * prints: the header line with the step (or "(not recorded)"), a line per tensor with its
 * dtype (tapeflow's, else the file's), shape and bytes, the total; snprintf's contract (the
 * length of the whole text, a truncated buffer always terminated, NULL with size 0); -1 for a
 * NULL or closed reader, MISUSE kept for the closed one. */
#include "test_fixture.h"

#include "ckpt_test_util.h"

/* The summary, read in one go at the length the first call gave. */
static char *summary(tfl_ckpt *ck)
{
    int64_t n = tfl_ckpt_summary(ck, NULL, 0);
    assert_true(n > 0);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(tfl_ckpt_summary(ck, text, (size_t)n + 1), n);
    assert_int_equal(strlen(text), n);
    return text;
}

static void test_saved_checkpoint(void **state)
{
    fixture *f = *state;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "s.safetensors", path, sizeof path);
    const float k[6] = {1, 2, 3, 4, 5, 6};
    const int32_t v[3] = {7, 8, 9};
    const double x = 0.5;
    tfl_tensor *ts[3] = {tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}, k),
                         tfl_tensor_new(f->ctx, TFL_DTYPE_INT32, 1, (int64_t[]){3}, v),
                         tfl_tensor_new(f->ctx, TFL_DTYPE_FLOAT64, 0, NULL, &x)};
    const char *names[3] = {"dense/kernel", "counts", "scale"};
    const char *keys[] = {"tapeflow.step"}, *values[] = {"42"};
    assert_int_equal(tfl_ckpt_save(f->ctx, path, 3, names, (const tfl_tensor *const *)ts,
                                   &(tfl_ckpt_save_opts){.n_metadata = 1, .metadata_keys = keys,
                                                         .metadata_values = values}),
                     TFL_OK);
    for (int i = 0; i < 3; i++) tfl_tensor_release(ts[i]);
    tfl_ckpt *ck = tfl_ckpt_open(f->ctx, path);
    assert_non_null(ck);
    char want[1024];
    /* the order of the data: the largest element size first, then by name */
    snprintf(want, sizeof want,
             "%s: 3 tensors, step 42\n"
             "  %-40s %-9s %-18s %12d bytes\n"
             "  %-40s %-9s %-18s %12d bytes\n"
             "  %-40s %-9s %-18s %12d bytes\n"
             "44 bytes of tensors\n",
             path, "scale", "float64", "()", 8, "counts", "int32", "(3,)", 12, "dense/kernel",
             "float32", "(2, 3)", 24);
    char *text = summary(ck);
    assert_string_equal(text, want);
    /* snprintf's contract: a short buffer holds the text's start, terminated */
    char small[12];
    memset(small, 'x', sizeof small);
    assert_int_equal(tfl_ckpt_summary(ck, small, sizeof small), (int64_t)strlen(want));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, want, sizeof small - 1);
    char one = 'x';
    assert_int_equal(tfl_ckpt_summary(ck, &one, 1), (int64_t)strlen(want));
    assert_int_equal(one, 0);
    free(text);
    tfl_ckpt_close(ck);
    /* a closed reader, and none */
    assert_int_equal(tfl_ckpt_summary(ck, small, sizeof small), -1);
    expect_kept_error(f->ctx, TFL_MISUSE, "already freed");
    assert_int_equal(tfl_ckpt_summary(NULL, small, sizeof small), -1);
    tmpdir_remove(&d);
}

/* A file of another writer: no step, a dtype tapeflow has not (listed by the file's name). */
static void test_foreign_file(void **state)
{
    fixture *f = *state;
    tmpdir d;
    tmpdir_make(&d);
    char path[128];
    tmpdir_file(&d, "u8.safetensors", path, sizeof path);
    const char header[] = "{\"bytes\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]}}";
    write_st(path, header, -1, "abcd", 4);
    tfl_ckpt *ck = tfl_ckpt_open(f->ctx, path);
    assert_non_null(ck);
    char want[512];
    snprintf(want, sizeof want, "%s: 1 tensors, step (not recorded)\n  %-40s %-9s %-18s %12d "
             "bytes\n4 bytes of tensors\n", path, "bytes", "U8", "(2, 2)", 4);
    char *text = summary(ck);
    assert_string_equal(text, want);
    free(text);
    tfl_ckpt_close(ck);
    tmpdir_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_saved_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
