/*
 * examples/cli/logs.c: `tapeflow plot`, which draws the curves of one or several runs, a panel
 * per metric (tfl_plot_runs), and the paths printed at the end of `tapeflow train`.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tapeflow plot --------------------------------------------------------------------------- */

#define PLOT_MAX 32

int cli_plot(int argc, char **argv)
{
    tfl_plot_run runs[PLOT_MAX];
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
            runs[n_runs++] = (tfl_plot_run){k, NULL};
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
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = cli_log, .log_level = TFL_LOG_WARNING}, &st);
    if (!ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    int curves = 0, code = CLI_OK;
    bool to_stdout = !strcmp(out, "-");
    st = tfl_plot_runs(ctx, runs, n_runs, metrics, n_metrics, &po, to_stdout ? NULL : out,
                       stdout, &curves);
    if (st != TFL_OK) { /* a missing run or metric is the arguments' fault */
        cli_error("%s", tfl_ctx_error(ctx).message);
        code = st == TFL_NOT_FOUND || st == TFL_INVALID_ARGUMENT ? CLI_USAGE : CLI_RUNTIME;
    }
    if (code == CLI_OK && !to_stdout)
        printf("wrote %s: %d curve%s of %d run%s\n", out, curves, curves == 1 ? "" : "s", n_runs,
               n_runs == 1 ? "" : "s");
    tfl_ctx_free(ctx);
    return code;
}

/* ---- the end of tapeflow train --------------------------------------------------------------- */

void cli_train_logs_end(const char *run_dir, const char *event_file, const char *curves)
{
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
    if (curves && curves[0]) printf("curves: %s\n", curves);
}
