/*
 * examples/cli/logs.c: curves.svg at the end of `tapeflow train`, and `tapeflow plot`, which
 * draws the curves of one or several runs (tapeflow/plot.h), a panel per metric.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- curves as SVG --------------------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t n, cap;
    bool oom;
} text;

static void add(text *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 16384;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *more = realloc(t->s, cap);
        if (!more) {
            t->oom = true;
            return;
        }
        t->s = more;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = 0;
}

static void adds(text *t, const char *s)
{
    add(t, s, strlen(s));
}

/* One panel's document as an element of a larger one: without its XML declaration, placed
 * at (x, y), its clip path's id made unique. */
static void add_panel(text *t, const char *svg, int x, int y, int index)
{
    const char *p = strstr(svg, "<svg ");
    if (!p) return;
    char buf[96];
    snprintf(buf, sizeof buf, "<svg x=\"%d\" y=\"%d\" ", x, y);
    adds(t, buf);
    p += 5;
    for (const char *q; (q = strstr(p, "plot-area"));) {
        add(t, p, (size_t)(q - p));
        snprintf(buf, sizeof buf, "plot-area-%d", index);
        adds(t, buf);
        p = q + strlen("plot-area");
    }
    adds(t, p);
}

int cli_write_curves(tfl_ctx *ctx, const cli_plot_run *runs, int n_runs, const char *const *metrics,
                     int n_metrics, const tfl_plot_opts *opts, const char *path, int *n_curves)
{
    int cols = n_metrics < 2 ? 1 : 2, rows = (n_metrics + cols - 1) / cols;
    tfl_plot_opts po = opts ? *opts : (tfl_plot_opts){0};
    if (!po.width) po.width = n_metrics > 1 ? 640 : 800;
    if (!po.height) po.height = n_metrics > 1 ? 420 : 500;
    text doc = {0};
    if (n_metrics > 1) {
        char head[512];
        snprintf(head, sizeof head,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
                 "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 "
                 "%d %d\">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
                 cols * po.width, rows * po.height, cols * po.width, rows * po.height,
                 cols * po.width, rows * po.height);
        adds(&doc, head);
    }
    int code = CLI_OK, total = 0;
    for (int k = 0; k < n_metrics && code == CLI_OK; k++) {
        tfl_curves *c = tfl_curves_new(ctx);
        if (!c) {
            code = cli_ctx_error(ctx, "plot");
            break;
        }
        for (int i = 0; i < n_runs && code == CLI_OK; i++) {
            int added = 0;
            if (tfl_curves_load_run(c, runs[i].path, metrics[k], runs[i].name, &added) != TFL_OK) {
                tfl_error e = tfl_ctx_error(ctx);
                cli_error("%s", e.message);
                code = e.code == TFL_NOT_FOUND || e.code == TFL_INVALID_ARGUMENT ? CLI_USAGE
                                                                                 : CLI_RUNTIME;
            }
            if (code == CLI_OK && !added)
                fprintf(stderr, "tapeflow: warning: %s has no values of '%s'\n", runs[i].path,
                        metrics[k]);
            total += added;
        }
        if (code == CLI_OK && tfl_curves_count(c) == 0) {
            cli_error("no run has values of '%s'; nothing was written", metrics[k]);
            code = CLI_USAGE;
        }
        size_t len = 0;
        const char *svg = code == CLI_OK ? tfl_curves_svg(c, &po, &len) : NULL;
        if (code == CLI_OK && !svg) code = cli_ctx_error(ctx, "drawing the curves");
        if (svg && n_metrics == 1)
            add(&doc, svg, len);
        else if (svg)
            add_panel(&doc, svg, k % cols * po.width, k / cols * po.height, k);
        tfl_curves_free(c);
    }
    if (code == CLI_OK && n_metrics > 1) adds(&doc, "</svg>\n");
    if (code == CLI_OK && doc.oom) {
        cli_error("plot: out of memory");
        code = CLI_RUNTIME;
    }
    if (code == CLI_OK && !strcmp(path, "-")) { /* standard output */
        if (fwrite(doc.s, 1, doc.n, stdout) != doc.n || fflush(stdout) != 0) {
            cli_error("cannot write the SVG to standard output: %s", strerror(errno));
            code = CLI_RUNTIME;
        }
    } else if (code == CLI_OK && tfl_file_write_atomic(ctx, path, doc.s, doc.n) != TFL_OK) {
        code = cli_ctx_error(ctx, "plot");
    }
    if (n_curves) *n_curves = total;
    free(doc.s);
    return code;
}

/* ---- tapeflow plot --------------------------------------------------------------------------- */

#define PLOT_MAX 32

int cli_plot(int argc, char **argv)
{
    cli_plot_run runs[PLOT_MAX];
    const char *metrics[PLOT_MAX], *out = "curves.svg";
    int n_runs = 0, n_metrics = 0;
    tfl_plot_opts po = {.log_y_auto = true};
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(k, "--metric") || !strcmp(k, "-o") || !strcmp(k, "--output") ||
                     !strcmp(k, "--title");
        if (takes && !v) {
            fprintf(stderr, "tapeflow plot: option '%s' needs a value\n", k);
            return CLI_USAGE;
        }
        if (!strcmp(k, "--metric")) {
            if (n_metrics == PLOT_MAX) {
                fprintf(stderr, "tapeflow plot: more than %d metrics\n", PLOT_MAX);
                return CLI_USAGE;
            }
            metrics[n_metrics++] = v;
        } else if (!strcmp(k, "-o") || !strcmp(k, "--output")) {
            out = v;
        } else if (!strcmp(k, "--title")) {
            po.title = v;
        } else if (!strcmp(k, "--log-y") || !strcmp(k, "--linear-y")) {
            po.log_y = k[2] == 'l' && k[3] == 'o';
            po.log_y_auto = false;
            continue;
        } else if (k[0] == '-' && k[1]) {
            fprintf(stderr, "tapeflow plot: unknown option '%s'; see 'tapeflow plot --help'\n", k);
            return CLI_USAGE;
        } else {
            if (n_runs == PLOT_MAX) {
                fprintf(stderr, "tapeflow plot: more than %d runs\n", PLOT_MAX);
                return CLI_USAGE;
            }
            runs[n_runs++] = (cli_plot_run){k, NULL};
            continue;
        }
        i++;
    }
    if (!n_runs) {
        fprintf(stderr, "tapeflow plot: no RUN given; see 'tapeflow plot --help'\n");
        return CLI_USAGE;
    }
    if (!n_metrics) metrics[n_metrics++] = "loss";
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    int curves = 0;
    int code = cli_write_curves(ctx, runs, n_runs, metrics, n_metrics, &po, out, &curves);
    if (code == CLI_OK && strcmp(out, "-"))
        printf("wrote %s: %d curve%s of %d run%s\n", out, curves, curves == 1 ? "" : "s", n_runs,
               n_runs == 1 ? "" : "s");
    tfl_ctx_free(ctx);
    return code;
}

/* ---- the end of tapeflow train --------------------------------------------------------------- */

void cli_train_logs_end(tfl_ctx *ctx, const tfl_config *cfg, const char *run_dir,
                        const char *csv_path, const char *event_file, bool quiet)
{
    /* curves.svg: loss, and accuracy when measured, from metrics.csv (else the event files) */
    char buf[256], svg[4200], csv_default[4200];
    const char *metrics[2] = {"loss", "accuracy"};
    int n_metrics =
        tfl_config_get(cfg, "metrics", buf, sizeof buf) >= 0 && strstr(buf, "accuracy") ? 2 : 1;
    snprintf(csv_default, sizeof csv_default, "%s/metrics.csv", run_dir);
    const char *slash = strrchr(run_dir, '/');
    cli_plot_run run = {run_dir, slash && slash[1] ? slash + 1 : run_dir};
    if (strcmp(csv_path, csv_default) && access(csv_path, R_OK) == 0) run.path = csv_path;
    snprintf(svg, sizeof svg, "%s/curves.svg", run_dir);
    int curves = 0;
    tfl_plot_opts po = {.log_y_auto = true};
    if (cli_write_curves(ctx, &run, 1, metrics, n_metrics, &po, svg, &curves) != CLI_OK) {
        fprintf(stderr, "tapeflow: warning: no %s (see above); the run is complete\n", svg);
        svg[0] = 0;
    }
    if (quiet) return;
    if (event_file && event_file[0]) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", run_dir);
        char *s = strrchr(parent, '/');
        if (s && s != parent)
            *s = 0;
        else
            snprintf(parent, sizeof parent, "%s", run_dir);
        printf("event file: %s (tensorboard --logdir %s)\n", event_file, parent);
    }
    if (svg[0]) printf("curves: %s\n", svg);
}
