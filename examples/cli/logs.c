/*
 * examples/cli/logs.c: `tapeflow plot`, which draws the curves of one or several runs, a panel
 * per metric (tfl_plot_runs).
 */
#include "cli.h"

#include <string.h>

int cli_plot(const cli_args *a)
{
    tfl_plot_run runs[CLI_MAX_ARGS];
    for (int i = 0; i < a->n_pos; i++) runs[i] = (tfl_plot_run){a->pos[i], NULL};
    const char *loss = "loss", *out = a->opt[OPT_OUTPUT] ? a->opt[OPT_OUTPUT] : "curves.svg";
    const char *y = a->opt[OPT_LOG_Y]; /* the last of --log-y and --linear-y */
    tfl_plot_opts po = {.title = a->opt[OPT_TITLE], .log_y_auto = !y,
                        .log_y = y && !strcmp(y, "--log-y")};
    int curves = 0, code = CLI_OK; /* a missing run or metric: the arguments' fault */
    bool to_stdout = !strcmp(out, "-");
    const char *const *metrics = a->n_list ? a->list : &loss;
    if (tfl_plot_runs(a->ctx, runs, a->n_pos, metrics, a->n_list ? a->n_list : 1, &po,
                      to_stdout ? NULL : out, stdout, &curves) != TFL_OK)
        code = cli_fail(a->ctx, NULL, CLI_CODE(TFL_NOT_FOUND) | CLI_CODE(TFL_INVALID_ARGUMENT));
    else if (!to_stdout)
        printf("wrote %s: %d curve%s of %d run%s\n", out, curves, curves == 1 ? "" : "s",
               a->n_pos, a->n_pos == 1 ? "" : "s");
    return code;
}
