/* test_files.c: tapeflow/files.h: the durable atomic write (the new bytes or the old file,
 * no temporary file left, errors naming the file) and mkdir -p. */
#include "test_fixture.h"

#include <dirent.h>

#include "tfl_events_util.h"

/* Files in dir whose name starts with '.' (a temporary file of the atomic write). */
static int hidden_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void test_write_atomic(void **state)
{
    fixture *f = *state;
    char dir[256], path[300];
    temp_dir(dir, sizeof dir, "files");
    snprintf(path, sizeof path, "%s/a.txt", dir);
    assert_int_equal(tfl_file_write_atomic(f->ctx, path, "first\n", 6), TFL_OK);
    assert_int_equal(tfl_file_write_atomic(f->ctx, path, "second, longer\n", 15), TFL_OK);
    size_t n = 0;
    unsigned char *got = slurp(path, &n);
    assert_int_equal(n, 15);
    assert_memory_equal(got, "second, longer\n", 15);
    free(got);
    assert_int_equal(tfl_file_write_atomic(f->ctx, path, NULL, 0), TFL_OK); /* empty */
    got = slurp(path, &n);
    assert_int_equal(n, 0);
    free(got);
    assert_int_equal(hidden_files(dir), 0);
    /* errors: the old file stays, no temporary file is left, the message names the path */
    char missing[320];
    snprintf(missing, sizeof missing, "%s/no/such/b.txt", dir);
    assert_int_equal(tfl_file_write_atomic(f->ctx, missing, "x", 1), TFL_FAILED_PRECONDITION);
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "no/such/");
    snprintf(missing, sizeof missing, "%s/", dir);
    assert_int_equal(tfl_file_write_atomic(f->ctx, missing, "x", 1), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "names a directory");
    assert_int_equal(tfl_file_write_atomic(f->ctx, path, NULL, 3), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "NULL data");
    assert_int_equal(tfl_file_write_atomic(f->ctx, NULL, "x", 1), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "no path");
    assert_int_equal(tfl_file_write_atomic(NULL, path, "x", 1), TFL_INVALID_ARGUMENT);
    assert_int_equal(hidden_files(dir), 0);
    remove_tree(dir);
}

static void test_make_dirs(void **state)
{
    fixture *f = *state;
    char dir[256], path[400];
    temp_dir(dir, sizeof dir, "files");
    snprintf(path, sizeof path, "%s/a/b//c/", dir);
    assert_int_equal(tfl_make_dirs(f->ctx, path), TFL_OK);
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(tfl_make_dirs(f->ctx, path), TFL_OK); /* there already: fine */
    /* a file in the way: named, with the path asked for */
    snprintf(path, sizeof path, "%s/a/file", dir);
    spit(path, "x", 1);
    snprintf(path, sizeof path, "%s/a/file/d", dir);
    assert_int_equal(tfl_make_dirs(f->ctx, path), TFL_FAILED_PRECONDITION);
    assert_has(tfl_ctx_error(f->ctx).message, "a/file/d': '");
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "a/file' exists and is not a directory");
    assert_int_equal(tfl_make_dirs(f->ctx, ""), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "empty path");
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_make_dirs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
