/*
 * examples/cli/cli.h: what the subcommands of the `tapeflow` program share. The program is
 * a thin layer over public library calls (<tapeflow/tapeflow.h>): it parses arguments,
 * prints, catches signals and maps statuses to exit codes; an embedding application can do
 * everything else with the same calls.
 *
 * Exit status: 0 success, 2 usage or config error (nothing written), 1 runtime error, 130
 * interrupted by SIGINT or SIGTERM (the step finishes and what must be written is written).
 */
#ifndef TFL_CLI_H
#define TFL_CLI_H

#include <tapeflow/tapeflow.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 };

/** The options (tapeflow.c's table; each command names those it takes). */
enum { OPT_SET, OPT_RUN_DIR, OPT_INPUT, OPT_OUTPUT, OPT_CKPT, OPT_QUIET, OPT_ALLOW, OPT_PROMPT,
       OPT_TOKENS, OPT_TEMPERATURE, OPT_TOP_K, OPT_SEED, OPT_METRIC, OPT_PLOT_OUT, OPT_LOG_Y,
       OPT_LINEAR_Y, OPT_TITLE, OPT_WEIGHTS, OPT_REFERENCE, OPT_N };

#define CLI_MAX_ARGS 256

/** A command's arguments, as parsed, and the program's context. */
typedef struct cli_args {
    tfl_ctx *ctx;                   /* warnings on stderr ("tapeflow: warning: ..."); alive
                                       until exit */
    const char *pos[CLI_MAX_ARGS];  /* the positional arguments */
    int n_pos;
    const char *opt[OPT_N];         /* an option's value, a flag's name; NULL: not given (the
                                       slot of -o/--output and --linear-y is their option's) */
    const char *list[CLI_MAX_ARGS]; /* the values of the repeated option (--set, --metric) */
    int n_list;
} cli_args;

/** "tapeflow: error: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** The context's kept error, as "what: message (CODE)" (what NULL: the message alone);
 * returns CLI_USAGE when its code is in `usage` (CLI_CODE bits: the arguments' fault), else
 * CLI_RUNTIME. */
int cli_fail(tfl_ctx *ctx, const char *what, unsigned usage);
#define CLI_CODE(status) (1u << (status))

/**
 * Loads and validates a config with --set's overrides (a->list). On problems prints every
 * diagnostic and returns NULL with *code CLI_USAGE; NULL with CLI_RUNTIME when out of memory.
 */
tfl_config *cli_load_config(tfl_ctx *ctx, const char *path, const cli_args *a, int *code);

/** Set (to the signal) by SIGINT/SIGTERM once cli_catch_signals ran; they cancel the run. */
extern volatile sig_atomic_t cli_interrupted;
void cli_catch_signals(tfl_run *run);

/* examples/cli/dist.c: training under mpirun (one rank without it: nothing changes) */
/** Starts the job's communicator on ctx (MPI only under mpirun); CLI_OK or an error code. */
int cli_dist_start(tfl_ctx *ctx);
/** Ends the job: a failed code under mpirun ends every rank (MPI_Abort); returns code. */
int cli_dist_end(int code);
extern int cli_rank, cli_ranks; /* rank 0 (or the only process) writes files and progress */
extern tfl_comm *cli_comm;      /* the job's communicator under mpirun (tfl_run_opts.comm) */
extern char cli_rank_label[48]; /* "rank R of N: " under mpirun (cli_error's prefix) */

/* the commands (run.c, ckpt_cmds.c, logs.c) */
int cli_train(const cli_args *a);
int cli_eval(const cli_args *a);
int cli_predict(const cli_args *a);
int cli_config(const cli_args *a);
int cli_generate(const cli_args *a);
int cli_inspect(const cli_args *a);
int cli_verify(const cli_args *a);
int cli_diff(const cli_args *a);
int cli_export(const cli_args *a);
int cli_plot(const cli_args *a);

#endif /* TFL_CLI_H */
