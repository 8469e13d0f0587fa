/* test_dataset_csv.c: tfl_dataset from CSV files, plain and gzipped: headers, blank lines, the
 * label by index or by name, delimiters, scale, no labels, and every CSV error path with its
 * code and message. */
#include "dataset_helpers.h"

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
    /* num_classes: a label at or past it names its line and column; one below it loads */
    expect_csv_error(ctx, "x,cls\n1,0\n2,3\n3,1\n", &(tfl_dataset_opts){.header = true,
                     .label_column = -1, .num_classes = 3}, TFL_DATA_LOSS,
                     "line 3, column 2 ('cls'): '3' is not one of the 3 classes (labels in [0, 3))");
    assert_null(tfl_dataset_from_csv(ctx, tmp_path(4, "err.csv"),
                                     &(tfl_dataset_opts){.num_classes = -1}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "opts.num_classes is -1");
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
    const char *ok = tmp_path(6, "ok.csv");
    write_text(ok, "0,5\n2,6\n", false);
    tfl_dataset *ds = tfl_dataset_from_csv(ctx, ok, &(tfl_dataset_opts){.num_classes = 3});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_num_classes(ds), 3);
    tfl_dataset_free(ds);
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
        cmocka_unit_test_setup_teardown(test_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
