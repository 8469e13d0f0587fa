/*
 * test_plot.c: training curves as SVG (tapeflow/plot.h). Runs from metrics.csv (one resumed
 * over itself) and from event files (train/ and validation/, with a resume's SessionLog
 * START); the SVG's structure: one series per run and curve, axes with nice ticks and
 * labels, a legend naming every curve, the log scale; rendering to PNG with rsvg-convert
 * when it is installed. TFL_PLOT_KEEP=<dir> keeps the pictures there to look at.
 */
#include "test_fixture.h"

#include <math.h>
#include <sys/wait.h>

#include "tfl_events_util.h"

static int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* a loss that falls like a real one: a + b exp(-k e) with a little wobble */
static double loss_at(double e, double a, double b, double k, double wobble)
{
    return a + b * exp(-k * e) + wobble * sin(3.1 * e);
}

static void write_csv(const char *path, int epochs, double a, double b, double k, int from,
                      bool append)
{
    FILE *f = fopen(path, append ? "a" : "w");
    assert_non_null(f);
    if (!append) fputs("epoch,loss,accuracy,val_loss,val_accuracy,seconds\n", f);
    for (int e = from; e < epochs; e++) {
        double l = loss_at(e, a, b, k, 0.004), v = loss_at(e, a * 1.25, b, k * 0.9, 0.01);
        fprintf(f, "%d,%.6f,%.6f,%.6f,%.6f,1.5\n", e, l, 1 - l / 3, v, 1 - v / 3);
    }
    assert_int_equal(fclose(f), 0);
}

/* the keep directory, or NULL */
static const char *keep_dir(void)
{
    const char *k = getenv("TFL_PLOT_KEEP");
    return k && *k ? k : NULL;
}

/* rsvg-convert svg -> png; 1 rendered, 0 not installed */
static int render_png(const char *svg, const char *png)
{
    if (system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
        print_message("rsvg-convert is not installed (Debian librsvg2-bin): PNG rendering "
                      "not checked\n");
        return 0;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rsvg-convert -o '%s' '%s'", png, svg);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    size_t n = 0;
    unsigned char *b = slurp(png, &n);
    assert_non_null(b);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_true(n > 1000);
    assert_memory_equal(b, sig, 8);
    /* IHDR: the size asked for */
    uint32_t w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
    uint32_t h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
    assert_int_equal(w, 800);
    assert_int_equal(h, 500);
    free(b);
    return 1;
}

static void check_and_render(tfl_curves *c, const tfl_plot_opts *o, const char *dir,
                             const char *name)
{
    char svg[512], png[512];
    const char *k = keep_dir();
    snprintf(svg, sizeof svg, "%s/%s.svg", k ? k : dir, name);
    snprintf(png, sizeof png, "%s/%s.png", k ? k : dir, name);
    assert_int_equal(tfl_curves_write_svg(c, svg, o), TFL_OK);
    render_png(svg, png);
}

static void test_csv_runs(void **state)
{
    fixture *f = *state;
    char dir[256], a[300], b[300], path[400];
    temp_dir(dir, sizeof dir, "plot");
    snprintf(a, sizeof a, "%s/mlp", dir);
    snprintf(b, sizeof b, "%s/mlp-wide", dir);
    assert_int_equal(mkdir(a, 0777), 0);
    assert_int_equal(mkdir(b, 0777), 0);
    snprintf(path, sizeof path, "%s/metrics.csv", a);
    write_csv(path, 20, 0.28, 2.0, 0.35, 0, false);
    /* run b stopped after 12 epochs, resumed from epoch 8 (rows 8.. come again) */
    snprintf(path, sizeof path, "%s/metrics.csv", b);
    write_csv(path, 12, 0.22, 2.1, 0.5, 0, false);
    write_csv(path, 20, 0.22, 2.1, 0.5, 8, true);

    tfl_curves *c = tfl_curves_new(f->ctx);
    int added = 0;
    assert_int_equal(tfl_curves_load_run(c, a, "loss", NULL, &added), TFL_OK);
    assert_int_equal(added, 2);
    assert_int_equal(tfl_curves_load_run(c, b, "loss", NULL, &added), TFL_OK);
    assert_int_equal(tfl_curves_count(c), 4);
    size_t n = 0;
    const char *svg = tfl_curves_svg(c, NULL, &n);
    assert_non_null(svg);
    assert_int_equal(strlen(svg), n);
    /* a series per run and curve, each with its points (20 epochs: 20 markers each) */
    assert_int_equal(count_of(svg, "<g class=\"series\""), 4);
    assert_int_equal(count_of(svg, "data-label=\"mlp: training\""), 1);
    assert_int_equal(count_of(svg, "data-label=\"mlp: validation\""), 1);
    assert_int_equal(count_of(svg, "data-label=\"mlp-wide: training\""), 1);
    assert_int_equal(count_of(svg, "data-label=\"mlp-wide: validation\""), 1);
    assert_int_equal(count_of(svg, "<circle"), 4 * 20); /* the resumed rows drawn once */
    assert_int_equal(count_of(svg, "stroke-dasharray"), 2 + 2); /* validation and its legend */
    /* axes, ticks (epochs 1..20 at nice steps), labels, legend, title */
    assert_int_equal(count_of(svg, "<g class=\"x-axis\""), 1);
    assert_int_equal(count_of(svg, "<g class=\"y-axis\""), 1);
    assert_true(count_of(svg, "class=\"tick\"") >= 8);
    assert_has(svg, ">4</text>");
    assert_has(svg, ">20</text>");
    assert_has(svg, ">epoch</text>");
    assert_has(svg, ">loss</text>");
    assert_int_equal(count_of(svg, "<g class=\"legend\""), 1);
    assert_has(svg, ">mlp-wide: validation</text>");
    assert_has(svg, "class=\"title\"");
    check_and_render(c, NULL, dir, "loss_csv");
    /* log scale: decades */
    svg = tfl_curves_svg(c, &(tfl_plot_opts){.log_y = true, .title = "Fashion-MNIST <MLP>"}, NULL);
    assert_non_null(svg);
    assert_has(svg, "(log scale)");
    assert_has(svg, "Fashion-MNIST &lt;MLP&gt;");
    assert_has(svg, ">1</text>");
    assert_has(svg, ">0.2</text>"); /* from the 1-2-5 value below the data */
    assert_has(svg, ">5</text>");
    check_and_render(c, &(tfl_plot_opts){.log_y = true}, dir, "loss_csv_log");
    tfl_curves_free(c);
    /* accuracy: the legend moves away from the rising curves */
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, a, "accuracy", "mlp", NULL), TFL_OK);
    assert_int_equal(tfl_curves_load_run(c, b, "accuracy", "mlp-wide", NULL), TFL_OK);
    svg = tfl_curves_svg(c, NULL, NULL);
    assert_int_equal(count_of(svg, "<g class=\"series\""), 4);
    check_and_render(c, NULL, dir, "accuracy_csv");
    /* a metric the run does not have */
    assert_int_equal(tfl_curves_load_run(c, a, "f1", NULL, NULL), TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "no metric 'f1' (it has: loss, accuracy, val_loss, "
                                             "val_accuracy, seconds)");
    tfl_curves_free(c);
    remove_tree(dir);
}

/* event files: train/ and validation/, a resume that rewinds to step 300 */
static void test_event_runs(void **state)
{
    fixture *f = *state;
    char dir[256], sub[400];
    temp_dir(dir, sizeof dir, "plot");
    for (int part = 0; part < 2; part++) {
        const char *which[2] = {"train", "validation"};
        for (int w = 0; w < 2; w++) {
            snprintf(sub, sizeof sub, "%s/run/%s", dir, which[w]);
            tfl_summary_writer *sw = tfl_summary_writer_new(f->ctx, sub, NULL);
            assert_non_null(sw);
            int64_t first = part == 0 ? 1 : 301;
            assert_int_equal(tfl_summary_session_start(sw, first), TFL_OK);
            for (int64_t s = part == 0 ? 100 : 400; s <= (part == 0 ? 500 : 1000); s += 100) {
                /* the first part's points after 300 are stale: the second redraws them */
                double v = loss_at((double)s / 100, w ? 0.35 : 0.3, 1.5, 0.6, 0) +
                           (part == 0 && s > 300 ? 0.5 : 0);
                assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", s, v), TFL_OK);
                assert_int_equal(tfl_summary_scalar(sw, "step/loss", s, v + 0.01), TFL_OK);
            }
            assert_int_equal(tfl_summary_writer_close(sw), TFL_OK);
        }
        sleep(part == 0 ? 1 : 0); /* the resumed files get a later name */
    }
    snprintf(sub, sizeof sub, "%s/run", dir);
    tfl_curves *c = tfl_curves_new(f->ctx);
    int added = 0;
    assert_int_equal(tfl_curves_load_run(c, sub, NULL, NULL, &added), TFL_OK);
    assert_int_equal(added, 2);
    const char *svg = tfl_curves_svg(c, NULL, NULL);
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<g class=\"series\""), 2);
    /* steps 100..1000 once each: 3 from the first part (100, 200, 300), 7 from the second */
    assert_int_equal(count_of(svg, "<circle"), 2 * 10);
    assert_has(svg, ">step</text>");
    assert_has(svg, "data-label=\"run: validation\"");
    check_and_render(c, NULL, dir, "loss_events");
    /* step/<metric> when there is no epoch tag: load "loss" from a file of step scalars */
    tfl_curves_free(c);
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, sub, "nothing", NULL, NULL), TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "no scalar 'nothing'");
    assert_int_equal(tfl_curves_load_run(c, dir, NULL, NULL, NULL), TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "has no metrics.csv and no event files");
    tfl_curves_free(c);
    /* a run with metrics.csv and event files: the CSV for its columns, the event files for
     * a metric the CSV lacks */
    char csv[500];
    snprintf(csv, sizeof csv, "%s/metrics.csv", sub);
    FILE *fp = fopen(csv, "w");
    assert_non_null(fp);
    fputs("epoch,accuracy\n0,0.5\n1,0.75\n", fp);
    fclose(fp);
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, sub, "accuracy", NULL, &added), TFL_OK);
    assert_int_equal(added, 1);
    svg = tfl_curves_svg(c, NULL, NULL);
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<circle"), 2);
    assert_has(svg, ">epoch</text>");
    tfl_curves_free(c);
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, sub, "loss", NULL, &added), TFL_OK);
    assert_int_equal(added, 2);
    svg = tfl_curves_svg(c, NULL, NULL);
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<circle"), 2 * 10);
    assert_has(svg, ">step</text>");
    tfl_curves_free(c);
    /* a resumed fit's file that logs its checkpoint's epoch end again (step 20, before its
     * START at 21): that point replaces the first file's, no duplicate */
    snprintf(sub, sizeof sub, "%s/again", dir);
    tfl_summary_writer *sw = tfl_summary_writer_new(f->ctx, sub, NULL);
    assert_non_null(sw);
    assert_int_equal(tfl_summary_session_start(sw, 1), TFL_OK);
    assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", 10, 1.0), TFL_OK);
    assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", 20, 0.5), TFL_OK);
    assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", 30, 9.0), TFL_OK); /* stale */
    assert_int_equal(tfl_summary_session_start(sw, 21), TFL_OK);
    assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", 20, 0.5), TFL_OK);
    assert_int_equal(tfl_summary_scalar(sw, "epoch/loss", 30, 0.25), TFL_OK);
    assert_int_equal(tfl_summary_writer_close(sw), TFL_OK);
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, sub, "loss", NULL, &added), TFL_OK);
    svg = tfl_curves_svg(c, NULL, NULL);
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "<circle"), 3);
    assert_has(svg, ">0.2</text>"); /* 0.25 at step 30 (not the stale 9): the axis ends near 1 */
    assert_int_equal(count_of(svg, ">8</text>"), 0);
    tfl_curves_free(c);
    remove_tree(dir);
}

/* log_y_auto, metric names as words, large tick values shortened */
static void test_auto_log_and_labels(void **state)
{
    fixture *f = *state;
    tfl_curves *c = tfl_curves_new(f->ctx);
    double x[3] = {1, 2, 3}, wide[3] = {2, 0.1, 0.004}, narrow[3] = {2, 1, 0.5};
    assert_int_equal(tfl_curves_add(c, "r", "r: training", false, 3, x, wide), TFL_OK);
    const tfl_plot_opts autolog = {.log_y_auto = true};
    const char *svg = tfl_curves_svg(c, &autolog, NULL);
    assert_non_null(svg);
    assert_has(svg, " (log scale)</text>"); /* 500 times: a log axis */
    assert_has(svg, ">0.01</text>");
    tfl_curves_free(c);
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_add(c, "r", "r: training", false, 3, x, narrow), TFL_OK);
    svg = tfl_curves_svg(c, &autolog, NULL);
    assert_non_null(svg);
    assert_int_equal(count_of(svg, "(log scale)"), 0); /* 4 times: linear */
    tfl_curves_free(c);
    /* a metric of a CSV run: its name as words in the title and axis label; 700000 as 700k */
    char dir[256], path[300];
    temp_dir(dir, sizeof dir, "plot");
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    const char *csv = "epoch,samples_per_second\n0,100000\n1,700000\n";
    spit(path, csv, strlen(csv));
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_load_run(c, dir, "samples_per_second", "r", NULL), TFL_OK);
    svg = tfl_curves_svg(c, NULL, NULL);
    assert_non_null(svg);
    assert_has(svg, ">Samples per second</text>");
    assert_has(svg, ">samples per second</text>");
    assert_has(svg, ">700k</text>");
    assert_has(svg, ">100k</text>");
    tfl_curves_free(c);
    remove_tree(dir);
}

/* The y axis's title stays clear of its tick labels, however long they are (a small learning
 * rate's "0.00013"): its glyphs (14 px, rotated: about 11 px left of its x and 3 right) end
 * left of the widest label (12 px, right-aligned 8 px left of the frame; at most 7.6 px a
 * character). */
static void test_y_title_clear_of_ticks(void **state)
{
    fixture *f = *state;
    const double x[4] = {1, 2, 3, 4};
    const double small[4] = {0.000123, 0.00011, 0.00009, 0.00006}, big[4] = {0.69, 0.68, 0.67, 0.66};
    const double *ys[2] = {small, big};
    for (int k = 0; k < 2; k++) {
        tfl_curves *c = tfl_curves_new(f->ctx);
        assert_int_equal(tfl_curves_add(c, "r", "r: training", false, 4, x, ys[k]), TFL_OK);
        const char *svg = tfl_curves_svg(c, NULL, NULL);
        assert_non_null(svg);
        double frame_x = -1, title_x = -1;
        const char *p = strstr(svg, "<rect class=\"frame\" x=\"");
        assert_non_null(p);
        frame_x = strtod(p + strlen("<rect class=\"frame\" x=\""), NULL);
        p = strstr(svg, "<g class=\"y-axis\"");
        assert_non_null(p);
        const char *t = strstr(p, "<text class=\"label\" x=\"");
        assert_non_null(t);
        title_x = strtod(t + strlen("<text class=\"label\" x=\""), NULL);
        size_t widest = 0; /* the tick labels: "...><text x=.. y=..>LABEL</text>" before it */
        for (const char *q = p; (q = strstr(q, "\"/><text x=\"")) && q < t; q++) {
            const char *open = strchr(q + 3, '>'), *close = strstr(open, "</text>");
            if ((size_t)(close - open - 1) > widest) widest = (size_t)(close - open - 1);
        }
        assert_true(widest >= (k == 0 ? 7u : 4u)); /* "0.00012", "0.69" */
        double labels_left = frame_x - 8 - 7.6 * (double)widest;
        if (!(title_x + 3 + 4 <= labels_left))
            print_error("title at x %.1f, tick labels from x %.1f (frame %.1f)\n", title_x,
                        labels_left, frame_x);
        assert_true(title_x + 3 + 4 <= labels_left); /* 4 px apart at least */
        assert_true(title_x - 11 >= 0);                 /* inside the picture */
        tfl_curves_free(c);
    }
}

static void keep_warning(void *user, tfl_log_level level, const char *message)
{
    if (level == TFL_LOG_WARNING) snprintf(user, 256, "%s", message);
}

/* tfl_plot_runs: a panel per metric in one document, to a file or a stream; a run without
 * values of a metric is a warning, a metric no run has an error that writes nothing. */
static void test_plot_runs(void **state)
{
    fixture *f = *state;
    char dir[256], csv[300], reg[300], svg[300];
    temp_dir(dir, sizeof dir, "plot");
    snprintf(csv, sizeof csv, "%s/a.csv", dir);
    snprintf(reg, sizeof reg, "%s/b.csv", dir);
    snprintf(svg, sizeof svg, "%s/out.svg", dir);
    const char *a = "epoch,loss,accuracy\n0,1.5,0.5\n1,1.0,0.75\n";
    const char *b = "epoch,loss,accuracy\n0,2.5,\n1,2.0,\n";
    spit(csv, a, strlen(a));
    spit(reg, b, strlen(b));
    const tfl_plot_run runs[2] = {{csv, "a"}, {reg, "b"}};
    const char *metrics[2] = {"loss", "accuracy"};
    char warned[256] = "";
    tfl_ctx_set_logger(f->ctx, keep_warning, warned, TFL_LOG_WARNING);
    int n = 0;
    assert_int_equal(tfl_plot_runs(f->ctx, runs, 2, metrics, 2, NULL, svg, NULL, &n), TFL_OK);
    assert_int_equal(n, 3); /* a's loss and accuracy, b's loss */
    assert_has(warned, "b.csv has no values of 'accuracy'");
    size_t len = 0;
    unsigned char *doc = slurp(svg, &len);
    assert_int_equal(count_of((char *)doc, "<svg "), 3); /* the document and two panels */
    assert_has((char *)doc, "plot-area-1");
    free(doc);
    /* no run has values of the metric: an error, the file as it was */
    assert_int_equal(tfl_plot_runs(f->ctx, runs + 1, 1, metrics + 1, 1, NULL, svg, NULL, &n),
                     TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "no run has values of 'accuracy'; nothing was written");
    doc = slurp(svg, &len);
    assert_int_equal(count_of((char *)doc, "<svg "), 3);
    free(doc);
    /* one metric to a stream: the single document */
    FILE *mem = tmpfile();
    assert_non_null(mem);
    assert_int_equal(tfl_plot_runs(f->ctx, runs, 1, metrics, 1, NULL, NULL, mem, NULL), TFL_OK);
    assert_true(ftell(mem) > 100);
    fclose(mem);
    assert_int_equal(tfl_plot_runs(f->ctx, runs, 0, metrics, 1, NULL, svg, NULL, NULL),
                     TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "tfl_plot_runs: no runs");
    tfl_ctx_set_logger(f->ctx, NULL, NULL, TFL_LOG_ERROR);
    remove_tree(dir);
}

static void test_added_curves_and_errors(void **state)
{
    fixture *f = *state;
    tfl_curves *c = tfl_curves_new(f->ctx);
    assert_null(tfl_curves_svg(c, NULL, NULL));
    expect_kept_error(f->ctx, TFL_FAILED_PRECONDITION, "no curves to draw");
    double x[4] = {0, 1, 2, 3}, y[4] = {-1, 0, NAN, 4};
    assert_int_equal(tfl_curves_add(c, "r", "r: y", false, 4, x, y), TFL_OK);
    const char *svg = tfl_curves_svg(c, NULL, NULL);
    assert_int_equal(count_of(svg, "<circle"), 3); /* NaN left out */
    assert_has(svg, ">-1</text>");
    svg = tfl_curves_svg(c, &(tfl_plot_opts){.log_y = true}, NULL);
    assert_int_equal(count_of(svg, "<circle"), 1);  /* only y = 4 is > 0 */
    assert_int_equal(tfl_curves_add(c, "r", NULL, false, 1, x, y), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "label is NULL");
    assert_int_equal(tfl_curves_add(c, "r", "l", false, 2, NULL, y), TFL_INVALID_ARGUMENT);
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "x or y is NULL");
    assert_null(tfl_curves_svg(c, &(tfl_plot_opts){.width = 10}, NULL));
    expect_kept_error(f->ctx, TFL_INVALID_ARGUMENT, "a size of 10 x 500");
    assert_int_equal(tfl_curves_load_run(c, "/nonexistent/run", NULL, NULL, NULL), TFL_NOT_FOUND);
    expect_kept_error(f->ctx, TFL_NOT_FOUND, "no run at '/nonexistent/run'");
    /* a CSV cell that is not a number */
    char dir[256], path[300];
    temp_dir(dir, sizeof dir, "plot");
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    spit(path, "epoch,loss\n0,1.5\n1,abc\n", 23);
    assert_int_equal(tfl_curves_load_run(c, dir, NULL, NULL, NULL), TFL_DATA_LOSS);
    expect_kept_error(f->ctx, TFL_DATA_LOSS, "line 3: 'abc' is not a number");
    remove_tree(dir);
    tfl_curves_free(c);
    /* one point only: still a picture */
    c = tfl_curves_new(f->ctx);
    assert_int_equal(tfl_curves_add(c, "r", "one", true, 1, x + 3, y + 3), TFL_OK);
    assert_non_null(tfl_curves_svg(c, NULL, NULL));
    tfl_curves_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_csv_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_log_and_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_y_title_clear_of_ticks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plot_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_added_curves_and_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
