/*
 * examples/cli/tapeflow.c: the `tapeflow` program: one table of options and one of commands,
 * from which the arguments are parsed and every help text is made; the dispatch, and what
 * every subcommand shares (contexts, configs, errors, signals).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the options and the commands ------------------------------------------------------------ */

typedef struct option {
    const char *name, *alias, *arg; /* arg NULL: a flag */
    int slot;                       /* where its value goes (cli_args.opt) */
    const char *help;
    char number; /* 'i': an integer >= 0, 'n': a number >= 0; 0: any text */
} option;

static const option options[OPT_N] = {
    [OPT_SET] = {"--set", NULL, "PATH=VALUE", OPT_SET, "override a key of the config "
                 "(repeatable, applied in order before the config is validated): "
                 "--set\x01optimizer.learning_rate=3e-4, --set\x01model.layers[1].dense.units=64"},
    [OPT_RUN_DIR] = {"--run-dir", NULL, "DIR", OPT_RUN_DIR,
                     "the run directory (default runs/<config name>)"},
    [OPT_INPUT] = {"--input", NULL, "FILE", OPT_INPUT, "the examples (IDX images, or CSV)"},
    [OPT_OUTPUT] = {"--output", NULL, "FILE", OPT_OUTPUT, "where the CSV goes (default: stdout)"},
    [OPT_CKPT] = {"--checkpoint", NULL, "FILE", OPT_CKPT,
                  "this checkpoint instead (an error when it is damaged)"},
    [OPT_QUIET] = {"--quiet", NULL, NULL, OPT_QUIET, "no progress output"},
    [OPT_ALLOW] = {"--allow-config-change", NULL, NULL, OPT_ALLOW,
                   "resume although keys that change the training changed"},
    [OPT_PROMPT] = {"--prompt", NULL, "TEXT", OPT_PROMPT, "the text the model continues"},
    [OPT_TOKENS] = {"--tokens", NULL, "N", OPT_TOKENS, "how many tokens (default 200)", 'i'},
    [OPT_TEMPERATURE] = {"--temperature", NULL, "T", OPT_TEMPERATURE, "each drawn from "
                         "softmax(logits / T) (default 1; 0: the most likely)", 'n'},
    [OPT_TOP_K] = {"--top-k", NULL, "K", OPT_TOP_K, "of the K likeliest (default 0: all)", 'i'},
    [OPT_SEED] = {"--seed", NULL, "S", OPT_SEED, "the same seed, the same text (default 0)", 'i'},
    [OPT_METRIC] = {"--metric", NULL, "NAME", OPT_METRIC, "loss (default), accuracy, or an event "
                    "file's scalar (learning_rate, grad_norm, any tag); a panel each"},
    [OPT_PLOT_OUT] = {"--output", "-o", "FILE", OPT_OUTPUT,
                      "the SVG (default curves.svg; '-': stdout)"},
    [OPT_LOG_Y] = {"--log-y", NULL, NULL, OPT_LOG_Y,
                   "a logarithmic y axis (default: when the values span over 100x)"},
    [OPT_LINEAR_Y] = {"--linear-y", NULL, NULL, OPT_LOG_Y, "a linear y axis"},
    [OPT_TITLE] = {"--title", NULL, "TEXT", OPT_TITLE, "the title (default: the metric)"},
    [OPT_WEIGHTS] = {"--weights-only", NULL, NULL, OPT_WEIGHTS, "no optimizer state"},
    [OPT_REFERENCE] = {"--reference", NULL, NULL, OPT_REFERENCE, "instead, the reference of "
                       "every key as Markdown (configs/README.md's), without a CONFIG"},
};

typedef struct command {
    const char *name, *args; /* the positional arguments, as help shows them */
    int min, max;            /* how many (max -1: any) */
    unsigned opts, required; /* 1u << OPT_... */
    int (*run)(const cli_args *a);
    const char *summary, *text; /* for 'tapeflow --help'; the command's help */
} command;

#define O(x) (1u << OPT_##x)
#define RUN_OPTS (O(SET) | O(RUN_DIR))

static int cli_version(const cli_args *a);

static const command commands[] = {
    {"train", "CONFIG", 1, 1, RUN_OPTS | O(QUIET) | O(ALLOW), 0, cli_train,
     "train (or resume) into the run directory",
     "Trains the model of CONFIG into the run directory: config.yaml, run.log, metrics.csv, "
     "checkpoints/ (every checkpoint.every epochs, at the end, on SIGINT/SIGTERM), TensorBoard "
     "event files in train/ and validation/ ('tensorboard --logdir runs'), curves.svg. "
     "Training again resumes from the newest checkpoint; a changed key other than "
     "training.epochs, training.sync_every, training.step_graphs, logging.* and "
     "checkpoint.* stops it unless --allow-config-change."},
    {"eval", "CONFIG", 1, 1, RUN_OPTS | O(CKPT), 0, cli_eval,
     "loss and metrics of the trained model on the test (or validation) data",
     "Restores the run's newest usable checkpoint (a damaged one is skipped with a warning) "
     "and prints it, then the loss and metrics on the test data (else validation, else "
     "training data)."},
    {"predict", "CONFIG", 1, 1, RUN_OPTS | O(CKPT) | O(INPUT) | O(OUTPUT), O(INPUT), cli_predict,
     "the trained model's outputs for the examples of a file",
     "Restores the run's newest checkpoint (named on stderr) and writes its outputs for each "
     "example of FILE as CSV: a classifier's class and probabilities, else the values. A "
     "label column as in the training file is not an input: the loss and accuracy on it go "
     "to stderr."},
    {"generate", "CONFIG", 1, 1,
     RUN_OPTS | O(CKPT) | O(PROMPT) | O(TOKENS) | O(TEMPERATURE) | O(TOP_K) | O(SEED), O(PROMPT),
     cli_generate, "text sampled from a trained text model",
     "Restores a model trained on 'format: text' data (the checkpoint named on stderr) and "
     "prints TEXT followed by N generated tokens. Nothing is written."},
    {"config", "CONFIG", 0, 1, O(SET) | O(REFERENCE), 0, cli_config,
     "print the resolved config: every default explicit",
     "Prints the resolved config of CONFIG and its overrides as YAML, every default explicit."},
    {"plot", "RUN...", 1, -1, O(METRIC) | O(PLOT_OUT) | O(LOG_Y) | O(LINEAR_Y) | O(TITLE), 0,
     cli_plot, "training and validation curves of runs, overlaid, as SVG",
     "Draws the training (solid) and validation (dashed) curves of each RUN (a run "
     "directory, a metrics.csv or an event file) as SVG. A missing run or metric exits 2, "
     "naming what there is.\n\nExample: tapeflow plot runs/mlp runs/wide --metric accuracy -o "
     "acc.svg"},
    {"version", "", 0, 0, 0, 0, cli_version, "the version and what this build contains",
     "Prints the version, the features of this build and the devices."},
    {"inspect", "CHECKPOINT|CONFIG.yaml", 1, 1, 0, 0, cli_inspect,
     "a checkpoint's tensors and step, its checksums checked; or a config's model",
     "Lists a checkpoint's tensors (name, dtype, shape, bytes) and step, and verifies every "
     "CRC-32C checksum (exit 1 when one does not match); or prints a config's model summary."},
    {"verify", "CHECKPOINT...", 1, -1, 0, 0, cli_verify,
     "checks each checkpoint's checksums (exit 1 on a bad one)",
     "Checks each checkpoint's header and checksums, a line each; exit 1 when any fails."},
    {"diff", "A B", 2, 2, 0, 0, cli_diff, "the tensors that differ between two checkpoints",
     "Lists the tensors that differ between two checkpoints, with the max absolute and "
     "relative difference.\n\nExit status (as diff(1) and cmp(1)): 0 when the checkpoints hold "
     "equal tensors,\n1 when any tensor differs, 2 on trouble (an unreadable file, a bad "
     "argument)."},
    {"export", "RUN OUT", 2, 2, O(WEIGHTS), O(WEIGHTS), cli_export,
     "the model's weights of a run's newest checkpoint, for shipping",
     "Writes the model's variables of the newest checkpoint of run directory RUN to OUT, for "
     "tfl_model_restore_weights."},
};

enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

/* ---- help texts, made from the tables -------------------------------------------------------- */

/* Prints text from column col, wrapped at 80 columns onto lines indented by `indent`; '\n'
 * breaks a line, '\x01' is a space no line breaks at. */
static void wrap(FILE *f, int col, int indent, const char *s)
{
    bool fresh = true; /* nothing printed on this line yet */
    for (; *s; s++) {
        size_t n = strcspn(s, " \n");
        if (n) {
            if (!fresh && col + 1 + (int)n > 80) col = fprintf(f, "\n%*s", indent, "") - 1;
            else if (!fresh) col += fprintf(f, " ");
            for (size_t j = 0; j < n; j++) fputc(s[j] == '\x01' ? ' ' : s[j], f);
            col += (int)n, fresh = false, s += n;
        }
        if (*s == '\n') col = fprintf(f, "\n%*s", s[1] == '\n' ? 0 : indent, "") - 1, fresh = true;
        if (!*s) break;
    }
    fputc('\n', f);
}

/* "name ARGS --required X [--optional Y]..." (the optional ones when `all`). */
static const char *synopsis(const command *c, bool all, char *buf, size_t size)
{
    const char *sp = all ? "\x01" : " "; /* all: wrapped, never inside an option */
    size_t at = (size_t)snprintf(buf, size, "%s%s%s", c->name, c->args[0] ? " " : "", c->args);
    for (int pass = 0; pass < (all ? 2 : 1); pass++)
        for (int o = 0; o < OPT_N && at < size; o++) {
            const option *op = &options[o];
            if (!(c->opts & (1u << o)) || (c->required & (1u << o) ? pass : !pass)) continue;
            at += (size_t)snprintf(buf + at, size - at, pass ? " [%s%s%s]%s" : " %s%s%s",
                                   op->name, op->arg ? sp : "", op->arg ? op->arg : "",
                                   pass && (o == OPT_SET || o == OPT_METRIC) ? "..." : "");
        }
    return buf;
}

static void print_usage(FILE *f)
{
    fputs("usage: tapeflow <command> [options]\n\nTrain models described by YAML configs "
          "(configs/README.md documents every key).\n\ncommands:\n", f);
    for (int i = 0; i < N_COMMANDS; i++) {
        char head[128];
        int col = fprintf(f, "  %s", synopsis(&commands[i], false, head, sizeof head));
        col = col > 17 ? fprintf(f, "\n%19s", "") - 1 : col + fprintf(f, "%*s", 19 - col, "");
        wrap(f, col, 19, commands[i].summary);
    }
    fputs("\n'tapeflow <command> --help' describes a command's options.\nExit status: 0 "
          "success, 2 usage or config error (nothing written), 1 runtime error,\n130 "
          "interrupted (SIGINT or SIGTERM: the current step finishes first).\n", f);
}

static void print_help(const command *c)
{
    char line[512];
    printf("usage: tapeflow ");
    wrap(stdout, 16, 17 + (int)strlen(c->name), synopsis(c, true, line, sizeof line));
    putchar('\n');
    wrap(stdout, 0, 0, c->text);
    if (c->opts) putchar('\n');
    for (int o = 0; o < OPT_N; o++) {
        const option *op = &options[o];
        if (!(c->opts & (1u << o))) continue;
        snprintf(line, sizeof line, "%s%s%s%s%s", op->alias ? op->alias : "",
                 op->alias ? ", " : "", op->name, op->arg ? " " : "", op->arg ? op->arg : "");
        int col = printf("  %s", line);
        col = col > 19 ? printf("\n%20s", "") - 1 : col + printf("%*s", 20 - col, "");
        wrap(stdout, col, 20, op->help);
    }
}

/* ---- arguments ------------------------------------------------------------------------------- */

static int usage_error(const command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(const command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tapeflow %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_USAGE;
}

/* The option of c called k[0..len), or -1. */
static int find_option(const command *c, const char *k, size_t len)
{
    for (int o = 0; o < OPT_N; o++) {
        const option *op = &options[o];
        if ((c->opts & (1u << o)) &&
            ((strlen(op->name) == len && !strncmp(k, op->name, len)) ||
             (op->alias && strlen(op->alias) == len && !strncmp(k, op->alias, len))))
            return o;
    }
    return -1;
}

/* The arguments' counts and required options. */
static int check_counts(const command *c, const cli_args *a)
{
    char what[32];
    snprintf(what, sizeof what, "%.*s", (int)strcspn(c->args, " ."), c->args);
    if (a->n_pos == 0 && c->min == 1)
        return usage_error(c, "no %s given; see 'tapeflow %s --help'", what, c->name);
    if (a->n_pos < c->min)
        return usage_error(c, "expected %s; see 'tapeflow %s --help'", c->args, c->name);
    for (char *p = what; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (c->max == 1 && a->n_pos > 1)
        return usage_error(c, "one %s only ('%s' and '%s')", what, a->pos[0], a->pos[1]);
    if (c->max >= 0 && a->n_pos > c->max)
        return usage_error(c, "unexpected argument '%s'", a->pos[c->max]);
    for (int o = 0; o < OPT_N; o++)
        if ((c->required & (1u << o)) && !a->opt[options[o].slot])
            return usage_error(c, "%s%s%s is required", options[o].name,
                               options[o].arg ? " " : "", options[o].arg ? options[o].arg : "");
    return CLI_OK;
}

static bool is_number(const char *v, bool integer)
{
    char *end = NULL;
    errno = 0; /* set on overflow */
    double x = integer ? (double)strtoll(v, &end, 10) : strtod(v, &end);
    return end != v && !*end && errno == 0 && x >= 0 && isfinite(x);
}

static int parse(const command *c, int argc, char **argv, cli_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (k[0] != '-' || !k[1]) { /* "-" is a file: standard output */
            if (a->n_pos == CLI_MAX_ARGS)
                return usage_error(c, "more than %d arguments", CLI_MAX_ARGS);
            a->pos[a->n_pos++] = k;
            continue;
        }
        const char *eq = k[1] == '-' ? strchr(k, '=') : NULL;
        size_t len = eq ? (size_t)(eq - k) : strlen(k);
        int o = find_option(c, k, len);
        if (o < 0 || (eq && !options[o].arg))
            return usage_error(c, "unknown option '%s'; see 'tapeflow %s --help'", k, c->name);
        const char *v = !options[o].arg ? options[o].name
                        : eq            ? eq + 1
                        : i + 1 < argc  ? argv[++i]
                                        : NULL;
        if (!v || (!*v && o != OPT_SET))
            return usage_error(c, "option '%.*s' needs a value", (int)len, k);
        if (options[o].number && !is_number(v, options[o].number == 'i'))
            return usage_error(c, "%s needs %s, got '%s'", options[o].name,
                               options[o].number == 'i' ? "an integer >= 0" : "a number >= 0", v);
        if (o == OPT_SET || o == OPT_METRIC) {
            if (a->n_list == CLI_MAX_ARGS)
                return usage_error(c, "more than %d %s options", CLI_MAX_ARGS, options[o].name);
            a->list[a->n_list++] = v;
        } else {
            a->opt[options[o].slot] = v;
        }
    }
    return check_counts(c, a);
}

/* ---- what the subcommands share -------------------------------------------------------------- */

volatile sig_atomic_t cli_interrupted = 0;
static tfl_run *volatile current_run = NULL;

static void on_signal(int sig)
{
    cli_interrupted = sig;
    tfl_run_cancel(current_run); /* sets a sig_atomic_t: safe here */
}

void cli_catch_signals(tfl_run *run)
{
    current_run = run;
    if (!run) return; /* the run closes: the handlers only set cli_interrupted */
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

/* The program's context's log sink (outside runs): its warnings; an error reaches the user
 * through the context's kept error. */
static void cli_log(void *user, tfl_log_level level, const char *message)
{
    (void)user;
    if (level == TFL_LOG_WARNING)
        fprintf(stderr, "tapeflow: %swarning: %s\n", cli_rank_label, message);
}

static tfl_ctx *new_ctx(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = cli_log, .log_level = TFL_LOG_WARNING},
                               &st);
    if (!ctx) cli_error("no context: %s", tfl_status_name(st));
    return ctx;
}

int cli_fail(tfl_ctx *ctx, const char *what, unsigned usage)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (!what) cli_error("%s", e.message);
    else cli_error("%s: %s (%s)", what, e.message[0] ? e.message : "failed",
                   tfl_status_name(e.code));
    return usage & CLI_CODE(e.code) ? CLI_USAGE : CLI_RUNTIME;
}

tfl_config *cli_load_config(tfl_ctx *ctx, const char *path, const cli_args *a, int *code)
{
    tfl_status st;
    tfl_config *cfg = tfl_config_load(ctx, path, a->list, (size_t)a->n_list, &st);
    *code = !cfg ? cli_fail(ctx, "loading the config", 0) : CLI_OK;
    if (cfg && !tfl_config_valid(cfg)) {
        const char *text = tfl_config_diagnostics(cfg);
        fputs(text ? text : "invalid config\n", stderr);
        size_t n = tfl_config_diag_total(cfg);
        fprintf(stderr, "tapeflow: %s: %zu problem%s; nothing was run or written\n", path, n,
                n == 1 ? "" : "s");
        tfl_config_free(cfg);
        *code = CLI_USAGE;
        return NULL;
    }
    return cfg;
}

/* ---- version and main ------------------------------------------------------------------------ */

static int cli_version(const cli_args *a)
{
    printf("tapeflow %s\nCUDA backend: %s\ncuDNN: %s\nMPI (mpirun -np N tapeflow train): %s\n"
           "NCCL (GPU all-reduce): %s\n", TFL_VERSION_STRING,
           TFL_HAVE_CUDA ? "yes (libtapeflow_cuda.so, loaded when a GPU is looked for)"
                         : "no (CPU only)",
           TFL_HAVE_CUDNN ? "yes" : "no", TFL_HAVE_MPI ? "yes" : "no (TFL_MPI=OFF or no MPI)",
           TFL_HAVE_NCCL ? "yes (libnccl loaded at the first GPU collective)"
                         : "no (TFL_NCCL=OFF, no CUDA backend, or no NCCL)");
    printf("devices:\n"); /* those this machine gives a context */
    char line[512];
    for (int i = 0; i < tfl_device_count(a->ctx); i++)
        if (tfl_device_describe(a->ctx, i, line, sizeof line) >= 0) printf("  %s\n", line);
    if (tfl_device_note(a->ctx, line, sizeof line) > 0) printf("  (%s)\n", line); /* no GPU */
    return CLI_OK;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    bool help = !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help");
    if (!strcmp(cmd, "--version")) cmd = "version", argc = 2;
    if (help && argc > 2) cmd = argv[2];
    for (int i = 0; i < N_COMMANDS; i++) {
        const command *c = &commands[i];
        if (strcmp(cmd, c->name)) continue;
        for (int j = 2; j < argc && !help; j++)
            help = !strcmp(argv[j], "--help") || !strcmp(argv[j], "-h");
        if (help) return print_help(c), CLI_OK;
        cli_args a;
        int code = parse(c, argc, argv, &a);
        if (code != CLI_OK) return code;
        if (!(a.ctx = new_ctx())) return c->run == cli_diff ? CLI_USAGE : CLI_RUNTIME;
        code = cli_dist_end(c->run(&a)); /* diff: trouble is 2 */
        tfl_ctx_free(a.ctx);
        return code;
    }
    if (help) return print_usage(stdout), CLI_OK;
    if (argc > 1) fprintf(stderr, "tapeflow: unknown command '%s'\n\n", cmd);
    print_usage(stderr);
    return CLI_USAGE;
}
