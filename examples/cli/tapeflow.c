/*
 * examples/cli/tapeflow.c: the `tapeflow` program: subcommand dispatch, argument parsing,
 * help texts and what every subcommand shares (loading a config, reporting errors, signals).
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

volatile sig_atomic_t cli_interrupted = 0;
tfl_run *volatile cli_current_run = NULL;

static void on_signal(int sig)
{
    cli_interrupted = sig;
    tfl_run_cancel(cli_current_run); /* sets a sig_atomic_t: safe here */
}

void cli_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tapeflow: %serror: ", cli_rank_label);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_log(void *user, tfl_log_level level, const char *message)
{
    (void)user;
    /* an error reaches the user through the context's kept error (cli_ctx_error) */
    if (level == TFL_LOG_WARNING)
        fprintf(stderr, "tapeflow: %swarning: %s\n", cli_rank_label, message);
}

int cli_ctx_error(tfl_ctx *ctx, const char *what)
{
    tfl_error e = tfl_ctx_error(ctx);
    cli_error("%s: %s (%s)", what, e.message[0] ? e.message : "failed", tfl_status_name(e.code));
    return CLI_RUNTIME;
}

/* ---- help ----------------------------------------------------------------------------------- */

static const char usage_text[] =
    "usage: tapeflow <command> [options]\n"
    "\n"
    "Train models described by YAML configs (configs/README.md documents every key).\n"
    "\n"
    "commands:\n"
    "  train CONFIG     train (or resume); writes the run directory: config.yaml,\n"
    "                   metrics.csv, checkpoints/, TensorBoard event files (train/,\n"
    "                   validation/) and curves.svg\n"
    "  eval CONFIG      loss and metrics of the trained model on the test (or validation) data\n"
    "  predict CONFIG   the trained model's outputs for the examples of a file\n"
    "  generate CONFIG --prompt TEXT\n"
    "                   text sampled from a trained text model\n"
    "  config CONFIG    print the resolved config: every default explicit\n"
    "  plot RUN...      training and validation curves of runs, overlaid, as SVG\n"
    "  version          the version and what this build contains\n"
    "  inspect CKPT     a checkpoint's tensors, sizes and step; checks its checksums\n"
    "  inspect CONFIG   the config's model: layers, their inputs, shapes, parameters\n"
    "  verify CKPT...   checks each checkpoint's checksums (exit 1 on a bad one)\n"
    "  diff A B         the tensors that differ between two checkpoints\n"
    "  export RUN --weights-only OUT\n"
    "                   the model's weights of a run's newest checkpoint, for shipping\n"
    "\n"
    "'tapeflow <command> --help' describes a command's options.\n"
    "Exit status: 0 success, 2 usage or config error (nothing written), 1 runtime error,\n"
    "130 interrupted (SIGINT or SIGTERM: the current step finishes first).\n";

static const char set_help[] =
    "  --set PATH=VALUE  override a key of the config (repeatable, applied in order before\n"
    "                    the config is validated): --set optimizer.learning_rate=3e-4,\n"
    "                    --set model.layers[1].dense.units=64\n";

/* The help of the commands that take a config; false for another command. */
static bool help_config_cmd(const char *cmd)
{
    if (!strcmp(cmd, "train"))
        printf("usage: tapeflow train CONFIG [--set PATH=VALUE]... [--run-dir DIR] [--quiet]\n"
               "                      [--allow-config-change]\n\n"
               "Trains the model of CONFIG. The run directory (default runs/<config name>)\n"
               "receives the resolved config.yaml, metrics.csv, run.log and checkpoints/ (every\n"
               "checkpoint.every epochs, at the end, and on SIGINT/SIGTERM). Training again\n"
               "resumes from the newest checkpoint. Its config is compared with CONFIG and every\n"
               "changed key is shown; a run continues with changes to training.epochs,\n"
               "logging.* and checkpoint.* only, unless --allow-config-change is given, and the\n"
               "changes are recorded in run.log. Progress: a bar on a terminal, one line per\n"
               "epoch (or per logging.log_interval steps) otherwise.\n\n"
               "TensorBoard event files go to train/ and validation/ in the run directory\n"
               "(unless logging.tensorboard is false): every logging.every_steps steps the\n"
               "loss, learning rate, gradient norm and samples/s; every epoch the metrics;\n"
               "the resolved config as text; flushed every epoch, every\n"
               "logging.flush_seconds, on SIGINT/SIGTERM and at the end. View them with\n"
               "'tensorboard --logdir runs'. At the end, curves.svg (loss and accuracy per\n"
               "epoch) and a summary line with the paths.\n\n%s"
               "  --run-dir DIR     where the run's files go\n"
               "  --quiet           no progress output\n"
               "  --allow-config-change\n"
               "                    resume although keys that change the training changed\n",
               set_help);
    else if (!strcmp(cmd, "eval"))
        printf("usage: tapeflow eval CONFIG [--set PATH=VALUE]... [--run-dir DIR]\n"
               "                     [--checkpoint FILE]\n\n"
               "Restores the trained model from the run directory (its newest checkpoint) and\n"
               "prints the checkpoint it used, then its loss and metrics on the config's test\n"
               "data (else its validation data, else its training data). A newest checkpoint\n"
               "that is damaged is skipped with a warning naming it and why.\n\n%s"
               "  --run-dir DIR     the run directory (default runs/<config name>)\n"
               "  --checkpoint FILE this checkpoint instead (an error when it is damaged)\n",
               set_help);
    else if (!strcmp(cmd, "predict"))
        printf("usage: tapeflow predict CONFIG --input FILE [--output FILE] [--set ...]\n"
               "                        [--run-dir DIR] [--checkpoint FILE]\n\n"
               "Restores the trained model from the run directory (its newest checkpoint, named\n"
               "on stderr) and writes its outputs for every example of FILE (IDX or CSV, read\n"
               "like the training data) as CSV: for a classifier the class and the probability\n"
               "of each class, else the values. A CSV laid out as the training file, its label\n"
               "column included, is accepted: the label is not an input, and the loss and\n"
               "accuracy on those labels go to stderr.\n\n"
               "  --input FILE      the examples (an IDX images file, or a CSV file)\n"
               "  --output FILE     where the CSV goes (default: standard output)\n%s"
               "  --run-dir DIR     the run directory (default runs/<config name>)\n"
               "  --checkpoint FILE this checkpoint instead (an error when it is damaged)\n",
               set_help);
    else if (!strcmp(cmd, "generate"))
        printf("usage: tapeflow generate CONFIG --prompt TEXT [--tokens N] [--temperature T]\n"
               "                [--top-k K] [--seed S] [--checkpoint FILE] [--run-dir DIR]\n\n"
               "Restores a model trained on 'format: text' data (the checkpoint named on\n"
               "stderr) and prints TEXT followed by N generated tokens (default 200), each\n"
               "drawn from softmax(logits / T) over the K most likely tokens (T default 1, 0:\n"
               "always the most likely; K default 0: all). The same seed (default 0) prints\n"
               "the same text. Nothing is written.\n\n%s"
               "  --run-dir DIR     the run directory (default runs/<config name>)\n"
               "  --checkpoint FILE this checkpoint instead (an error when it is damaged)\n",
               set_help);
    else if (!strcmp(cmd, "config"))
        printf("usage: tapeflow config CONFIG [--set PATH=VALUE]...\n\n"
               "Validates CONFIG with its overrides and prints the resolved config as YAML,\n"
               "every default explicit; it loads back to the same resolved config.\n\n%s",
               set_help);
    else
        return false;
    return true;
}

static void print_help(const char *cmd)
{
    if (help_config_cmd(cmd))
        return;
    else if (!strcmp(cmd, "plot"))
        printf("usage: tapeflow plot RUN... [--metric NAME]... [-o FILE]\n"
               "                     [--log-y | --linear-y] [--title TEXT]\n\n"
               "Draws the training (solid) and validation (dashed) curves of each RUN, a\n"
               "colour per run, as an SVG picture with axes, grid and legend. A RUN is a run\n"
               "directory (its metrics.csv, per epoch; or its event files, per step, for a\n"
               "metric metrics.csv lacks), a metrics.csv file or an event file.\n\n"
               "  --metric NAME     loss (default), accuracy, or an event file's scalar:\n"
               "                    learning_rate, grad_norm, samples_per_second, any tag;\n"
               "                    repeated: a panel per metric\n"
               "  -o, --output FILE where the SVG goes (default curves.svg in the current\n"
               "                    directory; '-': standard output)\n"
               "  --log-y           a logarithmic y axis (default: when every value is > 0\n"
               "                    and the largest is over 100 times the smallest)\n"
               "  --linear-y        a linear y axis\n"
               "  --title TEXT      the title (default: the metric)\n\n"
               "Example: tapeflow plot runs/mlp runs/mlp-wide --metric accuracy -o acc.svg\n"
               "A missing run or a metric a run lacks exits 2, naming what it has.\n");
    else if (!strcmp(cmd, "inspect"))
        printf("usage: tapeflow inspect CHECKPOINT | CONFIG.yaml\n\nLists the tensors of a "
               "safetensors checkpoint (name, dtype, shape, bytes) and its\nstep, and verifies "
               "every CRC-32C checksum (exit 1 when one does not match).\nGiven a config "
               "(.yaml, .yml), prints its model's summary: each layer with its\noutput shape, "
               "parameters and, for a graph, the layers it is connected to.\n");
    else if (!strcmp(cmd, "verify"))
        printf("usage: tapeflow verify CHECKPOINT...\n\nReads each checkpoint, checks its "
               "header and checksums, and prints one line\neach; exit 1 when any fails.\n");
    else if (!strcmp(cmd, "diff"))
        printf("usage: tapeflow diff A B\n\nCompares two checkpoints tensor by tensor and "
               "lists those that differ, with\ntheir max absolute and relative difference.\n\n"
               "Exit status (as diff(1) and cmp(1)): 0 when the checkpoints hold equal\n"
               "tensors, 1 when any tensor differs, 2 on trouble (a file that cannot be\n"
               "read, a bad argument).\n");
    else if (!strcmp(cmd, "export"))
        printf("usage: tapeflow export RUN --weights-only OUT\n\nWrites the model's variables "
               "of the newest checkpoint of run directory RUN\n(no optimizer state) to OUT, a "
               "safetensors file to ship into an application\n(tfl_model_restore_weights "
               "reads it).\n");
    else if (!strcmp(cmd, "version"))
        printf("usage: tapeflow version\n\nPrints the version and the features of this build.\n");
    else
        fputs(usage_text, stdout);
}

/* ---- arguments ------------------------------------------------------------------------------- */

int cli_parse(const char *cmd, int argc, char **argv, int first, unsigned allowed, cli_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = first; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--help") || !strcmp(k, "-h")) {
            a->help = true;
            return CLI_OK;
        }
        const char *eq = k[0] == '-' && k[1] == '-' ? strchr(k, '=') : NULL;
        size_t klen = eq ? (size_t)(eq - k) : strlen(k);
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = NULL;
#define IS(name) (klen == strlen(name) && !strncmp(k, name, klen))
        if (IS("--set") && (allowed & CLI_OPT_SET)) {
            if (!v) goto missing;
            if (a->n_sets == CLI_MAX_SETS) {
                fprintf(stderr, "tapeflow %s: more than %d --set options\n", cmd, CLI_MAX_SETS);
                return CLI_USAGE;
            }
            a->sets[a->n_sets++] = v;
            if (!eq) i++;
            continue;
        }
        if (IS("--run-dir") && (allowed & CLI_OPT_RUN_DIR)) slot = &a->run_dir;
        else if (IS("--input") && (allowed & CLI_OPT_IO)) slot = &a->input;
        else if (IS("--output") && (allowed & CLI_OPT_IO)) slot = &a->output;
        else if (IS("--checkpoint") && (allowed & CLI_OPT_CKPT)) slot = &a->checkpoint;
        else if (IS("--quiet") && (allowed & CLI_OPT_QUIET) && !eq) {
            a->quiet = true;
            continue;
        }
        else if (IS("--allow-config-change") && (allowed & CLI_OPT_ALLOW) && !eq) {
            a->allow_config_change = true;
            continue;
        }
#undef IS
        if (slot) {
            if (!v || !*v) goto missing;
            *slot = v;
            if (!eq) i++;
            continue;
        }
        if (k[0] == '-' && k[1]) {
            fprintf(stderr, "tapeflow %s: unknown option '%s'; see 'tapeflow %s --help'\n", cmd,
                    k, cmd);
            return CLI_USAGE;
        }
        if (a->config) {
            fprintf(stderr, "tapeflow %s: one config only ('%s' and '%s')\n", cmd, a->config, k);
            return CLI_USAGE;
        }
        a->config = k;
        continue;
    missing:
        fprintf(stderr, "tapeflow %s: option '%.*s' needs a value\n", cmd, (int)klen, k);
        return CLI_USAGE;
    }
    if (!a->config) {
        fprintf(stderr, "tapeflow %s: no CONFIG given; see 'tapeflow %s --help'\n", cmd, cmd);
        return CLI_USAGE;
    }
    if ((allowed & CLI_OPT_IO) && !a->input) {
        fprintf(stderr, "tapeflow %s: --input FILE is required\n", cmd);
        return CLI_USAGE;
    }
    return CLI_OK;
}

tfl_config *cli_load_config(tfl_ctx *ctx, const cli_args *a, int *code)
{
    tfl_status st;
    tfl_config *cfg = tfl_config_load(ctx, a->config, a->sets, a->n_sets, &st);
    if (!cfg) {
        *code = cli_ctx_error(ctx, "loading the config");
        return NULL;
    }
    if (!tfl_config_valid(cfg)) {
        const char *text = tfl_config_diagnostics(cfg);
        fputs(text ? text : "invalid config\n", stderr);
        size_t n = tfl_config_diag_total(cfg);
        fprintf(stderr, "tapeflow: %s: %zu problem%s; nothing was run or written\n", a->config,
                n, n == 1 ? "" : "s");
        tfl_config_free(cfg);
        *code = CLI_USAGE;
        return NULL;
    }
    *code = CLI_OK;
    return cfg;
}

const char *cli_run_dir(const tfl_config *cfg, const cli_args *a, char *buf, size_t size)
{
    if (a->run_dir) snprintf(buf, size, "%s", a->run_dir);
    else snprintf(buf, size, "runs/%s", tfl_config_name(cfg));
    return buf;
}

/* ---- subcommands ----------------------------------------------------------------------------- */

static int cli_version(int argc, char **argv)
{
    if (argc > 2) {
        if (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
            print_help("version");
            return CLI_OK;
        }
        fprintf(stderr, "tapeflow version: unexpected argument '%s'\n", argv[2]);
        return CLI_USAGE;
    }
    printf("tapeflow %s\nCUDA backend: %s\ncuDNN: %s\nMPI (mpirun -np N tapeflow train): %s\n"
           "NCCL (GPU all-reduce): %s\n",
           TFL_VERSION_STRING,
           TFL_HAVE_CUDA ? "yes (libtapeflow_cuda.so, loaded when a GPU is looked for)"
                         : "no (CPU only)",
           TFL_HAVE_CUDNN ? "yes" : "no", TFL_HAVE_MPI ? "yes" : "no (TFL_MPI=OFF or no MPI)",
           TFL_HAVE_NCCL ? "yes (libnccl loaded at the first GPU collective)"
                         : "no (TFL_NCCL=OFF, no CUDA backend, or no NCCL)");
    /* the devices this machine gives a context: GPUs only with a GPU and its driver */
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        printf("devices: none (%s)\n", tfl_status_name(st));
        return CLI_OK;
    }
    printf("devices:\n");
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        char line[256];
        tfl_device_describe(ctx, i, line, sizeof line);
        printf("  %s\n", line);
    }
    char note[512]; /* why there is no GPU, when the build has a GPU backend */
    if (tfl_device_note(ctx, note, sizeof note) > 0) printf("  (%s)\n", note);
    tfl_ctx_free(ctx);
    return CLI_OK;
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"train", cli_train},     {"eval", cli_eval},     {"predict", cli_predict},
    {"config", cli_config},   {"version", cli_version},   {"inspect", cli_inspect},
    {"verify", cli_verify},   {"diff", cli_diff},         {"export", cli_export},
    {"plot", cli_plot},       {"generate", cli_generate},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (argc > 2) print_help(argv[2]);
        else fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "--version")) return cli_version(2, argv);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name)) continue;
        for (int j = 2; j < argc; j++)
            if (!strcmp(argv[j], "--help") || !strcmp(argv[j], "-h")) {
                print_help(cmd);
                return CLI_OK;
            }
        return cli_dist_end(commands[i].run(argc, argv));
    }
    fprintf(stderr, "tapeflow: unknown command '%s'\n\n%s", cmd, usage_text);
    return CLI_USAGE;
}
