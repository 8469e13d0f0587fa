/*
 * examples/cli/cli.h: what the subcommands of the `tapeflow` program share. The program is
 * a thin layer over public library calls (<tapeflow/tapeflow.h>): everything it does, an
 * embedding application can do with the same calls.
 *
 * Exit status: 0 success, 2 usage or config error (nothing written), 1 runtime error, 130
 * interrupted by SIGINT or SIGTERM (the step finishes and what must be written is written).
 */
#ifndef TFL_CLI_H
#define TFL_CLI_H

#include <tapeflow/tapeflow.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_RUNTIME = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 };

#define CLI_MAX_SETS 256

/** The options every config-taking subcommand accepts. */
typedef struct cli_args {
    const char *config;                /* CONFIG (positional) */
    const char *sets[CLI_MAX_SETS];    /* --set key.path=value, in order */
    size_t n_sets;
    const char *run_dir;               /* --run-dir DIR (NULL: runs/<config name>) */
    const char *input, *output;        /* predict's --input FILE / --output FILE */
    const char *checkpoint;            /* eval's, predict's, generate's --checkpoint FILE */
    bool quiet;                        /* --quiet */
    bool allow_config_change;          /* train's --allow-config-change */
    bool help;                         /* --help / -h */
} cli_args;

/** Which options a subcommand takes (for parsing and its --help). */
enum { CLI_OPT_SET = 1, CLI_OPT_RUN_DIR = 2, CLI_OPT_QUIET = 4, CLI_OPT_IO = 8, CLI_OPT_ALLOW = 16,
       CLI_OPT_CKPT = 32 };

/** Parses argv[first..] for a subcommand: returns CLI_OK or CLI_USAGE (message printed). */
int cli_parse(const char *cmd, int argc, char **argv, int first, unsigned allowed, cli_args *a);

/** "tapeflow: error: <message>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** The program's log sink for the contexts of the checkpoint commands (level WARNING): each
 * line on stderr as "tapeflow: warning: ..." (a run routes its own: tapeflow/run.h). */
void cli_log(void *user, tfl_log_level level, const char *message);
/** The context's kept error as a runtime error; returns CLI_RUNTIME. */
int cli_ctx_error(tfl_ctx *ctx, const char *what);

/**
 * Loads and validates the config with the overrides. On problems prints every diagnostic
 * (sorted, "file:line:col: path: message") and returns NULL with *code CLI_USAGE; NULL with
 * CLI_RUNTIME when out of memory.
 */
tfl_config *cli_load_config(tfl_ctx *ctx, const cli_args *a, int *code);

/** The run directory: --run-dir or runs/<config name>, into buf. */
const char *cli_run_dir(const tfl_config *cfg, const cli_args *a, char *buf, size_t size);

/** Set (to the signal) by SIGINT/SIGTERM once cli_catch_signals ran. */
extern volatile sig_atomic_t cli_interrupted;
/** The run the same signals cancel (tfl_run_cancel: its step finishes and is saved). */
extern tfl_run *volatile cli_current_run;
void cli_catch_signals(void);

/* examples/cli/dist.c: training under mpirun (one rank without it: nothing changes) */
/** Starts the job's communicator (MPI only under mpirun); CLI_OK or an error code. */
int cli_dist_start(void);
/** Ends the job: a failed code under mpirun ends every rank (MPI_Abort); returns code. */
int cli_dist_end(int code);
/** Rank 0 (or the only process): the one that writes files and progress. */
bool cli_dist_writer(void);
int cli_dist_size(void);
/** The job's communicator for the run (tfl_run_opts.comm) under mpirun; NULL otherwise. */
tfl_comm *cli_dist_comm(void);
/** "rank R of N: " under mpirun, "" otherwise (cli_error's prefix). */
extern char cli_rank_label[48];
/** At the end of a run, unless quiet: the paths of its event file and curves.svg ("": none). */
void cli_train_logs_end(const char *run_dir, const char *event_file, const char *curves);

int cli_train(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_generate(int argc, char **argv); /* generate.c */
int cli_config(int argc, char **argv);
int cli_inspect(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_export(int argc, char **argv);

#endif /* TFL_CLI_H */
