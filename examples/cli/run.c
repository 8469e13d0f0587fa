/*
 * examples/cli/run.c: `tapeflow train`, `eval`, `predict`, `generate` and `config`: a config
 * loaded and validated once, a run of the library (tapeflow/run.h) opened on it, its events
 * printed, SIGINT/SIGTERM turned into tfl_run_cancel, statuses into exit codes.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct job {
    tfl_ctx *ctx; /* the program's */
    tfl_config *cfg;
    tfl_run *run;
    const char *config; /* its path */
    bool quiet, tty;
} job;

static void show(void *user, const tfl_run_event *ev)
{
    const job *j = user;
    const char *m = ev->message;
    if (ev->kind == TFL_RUN_EVENT_NOTE && !j->quiet) printf("%s\n", m);
    else if (ev->kind == TFL_RUN_EVENT_WARNING)
        fprintf(stderr, "tapeflow: %swarning: %s\n", cli_rank_label, m);
    else if (ev->kind == TFL_RUN_EVENT_CONFIG_CHANGE) /* a heading, then "  key: was -> now" */
        fprintf(stderr, "%s%s\n", m[0] == ' ' ? "" : "tapeflow: ", m);
    else if (ev->kind == TFL_RUN_EVENT_STEP && !j->quiet && !j->tty) /* no bar off a terminal */
        printf("%s\n", m);
    else if (ev->kind == TFL_RUN_EVENT_DEVICE) /* under mpirun, where every rank trains */
        fprintf(stderr, "tapeflow: %s\n", m);
}

static int job_end(job *j, int code)
{
    cli_catch_signals(NULL);
    tfl_run_close(j->run);
    tfl_config_free(j->cfg);
    return code;
}

/* Loads the config and opens its run; an error here is the config's (exit 2) unless it is a
 * lack of memory. Nothing is written. */
static int open_job(job *j, const cli_args *a, bool quiet)
{
    *j = (job){.ctx = a->ctx, .config = a->pos[0], .quiet = quiet, .tty = isatty(STDOUT_FILENO)};
    tfl_status st;
    int code;
    if (!(j->cfg = cli_load_config(j->ctx, j->config, a, &code))) return code;
    tfl_run_opts o = {.run_dir = a->opt[OPT_RUN_DIR],
                      .allow_config_change = a->opt[OPT_ALLOW] != NULL,
                      .progress = quiet ? NULL : stdout, .on_event = show, .user = j,
                      .comm = cli_comm};
    if ((j->run = tfl_run_open(j->cfg, &o, &st))) return CLI_OK;
    tfl_error e = tfl_ctx_error(j->ctx);
    cli_error("%s: %s", j->config, e.message);
    fprintf(stderr, "tapeflow: nothing was run or written\n");
    return e.code == TFL_RESOURCE_EXHAUSTED ? CLI_RUNTIME : CLI_USAGE;
}

/* Restores the checkpoint (--checkpoint, else the newest usable one) and names it: on
 * stdout, or "tapeflow: checkpoint ..." on stderr when stdout holds the command's output. */
static int restore(job *j, const cli_args *a, FILE *say)
{
    char used[4400];
    int64_t step = -1;
    const char *ckpt = a->opt[OPT_CKPT];
    if (tfl_run_restore(j->run, ckpt, used, sizeof used, &step) != TFL_OK) {
        tfl_error e = tfl_ctx_error(j->ctx);
        if (e.code == TFL_NOT_FOUND && !ckpt)
            cli_error("%s ('tapeflow train %s')", e.message, j->config);
        else cli_fail(j->ctx, ckpt ? ckpt : "restoring", 0);
        return CLI_RUNTIME;
    }
    if (cli_rank != 0) return CLI_OK;
    fprintf(say, "%scheckpoint %s", say == stderr ? "tapeflow: " : "", used);
    if (step >= 0) fprintf(say, " (step %lld)", (long long)step);
    fputc('\n', say);
    return CLI_OK;
}

/* ---- train ----------------------------------------------------------------------------------- */

static int trained(job *j, const tfl_run_result *res)
{
    if (res->refused) {
        cli_error("%s", tfl_ctx_error(j->ctx).message);
        fprintf(stderr, "tapeflow: Pass --allow-config-change to continue anyway, or give "
                        "another --run-dir\n");
        return CLI_USAGE;
    }
    if (res->cancelled) {
        fprintf(stderr, "tapeflow: interrupted (%s) in epoch %d after %lld steps; %s; %s holds "
                "the complete epochs; 'tapeflow train' with the same config resumes\n",
                cli_interrupted == SIGTERM ? "SIGTERM" : "SIGINT", res->stopped_epoch + 1,
                (long long)res->steps,
                res->saved ? "a checkpoint of that step was saved" : "no checkpoint could be saved",
                res->metrics_csv);
        if (res->event_file[0])
            fprintf(stderr, "tapeflow: event file (flushed): %s\n", res->event_file);
        return CLI_INTERRUPTED;
    }
    static char text[32768]; /* the summary's lines: always enough (tfl_run_summary) */
    if (!j->quiet && tfl_run_summary(res, text, sizeof text) > 0) fputs(text, stdout);
    return CLI_OK;
}

int cli_train(const cli_args *a)
{
    int code = cli_dist_start(a->ctx);
    job j = {0};
    if (code != CLI_OK || (code = open_job(&j, a, a->opt[OPT_QUIET] || cli_rank != 0)))
        return job_end(&j, code);
    cli_catch_signals(j.run);
    tfl_run_result res;
    if (tfl_run_train(j.run, &res) != TFL_OK) return job_end(&j, cli_fail(j.ctx, "training", 0));
    return job_end(&j, trained(&j, &res));
}

/* ---- config ---------------------------------------------------------------------------------- */

int cli_config(const cli_args *a)
{
    int code;
    if (!a->opt[OPT_REFERENCE] != (a->n_pos == 1)) { /* one of the two */
        fprintf(stderr, "tapeflow config: %s; see 'tapeflow config --help'\n",
                a->n_pos ? "--reference takes no CONFIG" : "no CONFIG given");
        return CLI_USAGE;
    }
    if (a->opt[OPT_REFERENCE]) { /* the schema's, from an empty config's */
        tfl_status st;
        tfl_config *cfg = tfl_config_parse(a->ctx, "", 0, "reference", NULL, NULL, 0, &st);
        const char *md = cfg ? tfl_config_schema_markdown(cfg) : NULL;
        if (md) fputs(md, stdout);
        else cli_error("no memory for the reference");
        code = md ? CLI_OK : CLI_RUNTIME;
        tfl_config_free(cfg);
        return code;
    }
    tfl_config *cfg = cli_load_config(a->ctx, a->pos[0], a, &code);
    const char *text = cfg ? tfl_config_format(cfg) : NULL;
    if (text) fputs(text, stdout);
    else if (cfg) code = cli_fail(a->ctx, "resolving the config", 0);
    tfl_config_free(cfg);
    return code;
}

/* ---- eval, predict and generate: the trained model of the run directory ---------------------- */

int cli_eval(const cli_args *a)
{
    int code = cli_dist_start(a->ctx);
    job j = {0};
    if (code != CLI_OK || (code = open_job(&j, a, true)) || (code = restore(&j, a, stdout)))
        return job_end(&j, code);
    double loss = NAN, acc = NAN;
    const char *which = "";
    int64_t examples = 0;
    /* under mpirun every rank evaluates its shard of every batch, and rank 0 prints the
     * figures of the whole data (the sums reduced across the ranks) */
    if (tfl_run_evaluate(j.run, &loss, &acc, &which, &examples) != TFL_OK)
        return job_end(&j, cli_fail(j.ctx, "evaluating", 0));
    if (cli_rank != 0) return job_end(&j, CLI_OK);
    printf("%s_loss %.4f", which, loss);
    if (!isnan(acc)) printf(" - %s_accuracy %.4f", which, acc);
    printf(" - %lld examples", (long long)examples);
    if (cli_ranks > 1) printf(" on %d ranks", cli_ranks);
    printf("\n");
    return job_end(&j, CLI_OK);
}

/* The predictions of out as CSV into --output (else stdout); the figures on labels on stderr. */
static int write_predictions(job *j, const cli_args *a, const tfl_tensor *out, bool labelled,
                             double loss, double acc)
{
    const char *path = a->opt[OPT_OUTPUT];
    if (labelled) { /* the training layout: scored, the label never an input */
        fprintf(stderr, "tapeflow: %s has the training data's label column: not an input; on "
                "its labels loss %.4f", a->opt[OPT_INPUT], loss);
        if (!isnan(acc)) fprintf(stderr, ", accuracy %.4f", acc);
        fprintf(stderr, " (%lld examples)\n", (long long)tfl_tensor_dim(out, 0));
    }
    tfl_status st = path ? tfl_run_save_predictions(j->run, out, path)
                         : tfl_run_write_predictions(j->run, out, stdout);
    return st == TFL_OK ? CLI_OK : cli_fail(j->ctx, "writing the predictions", 0);
}

int cli_predict(const cli_args *a)
{
    int code = cli_dist_start(a->ctx);
    /* under mpirun rank 0 alone predicts and writes (one output, in the input's order) */
    if (code != CLI_OK || cli_rank != 0) return code;
    job j = {0};
    if ((code = open_job(&j, a, true)) || (code = restore(&j, a, stderr))) return job_end(&j, code);
    bool labelled = false;
    double loss = NAN, acc = NAN;
    tfl_tensor *out = tfl_run_predict(j.run, a->opt[OPT_INPUT], &labelled, &loss, &acc);
    code = out ? write_predictions(&j, a, out, labelled, loss, acc)
               : cli_fail(j.ctx, a->opt[OPT_INPUT], 0);
    tfl_tensor_release(out);
    return job_end(&j, code);
}

int cli_generate(const cli_args *a)
{
    const char *const *v = a->opt; /* the numbers checked by the parser */
    tfl_generate_opts o = {.tokens = v[OPT_TOKENS] ? strtoll(v[OPT_TOKENS], NULL, 10) : 200,
                           .temperature = v[OPT_TEMPERATURE] ? strtod(v[OPT_TEMPERATURE], NULL) : 1,
                           .top_k = v[OPT_TOP_K] ? strtoll(v[OPT_TOP_K], NULL, 10) : 0,
                           .seed = v[OPT_SEED] ? strtoull(v[OPT_SEED], NULL, 10) : 0};
    job j = {0};
    int code = open_job(&j, a, true);
    if (code == CLI_OK && tfl_run_text_context(j.run, NULL) != TFL_OK) /* before the checkpoint */
        code = cli_fail(j.ctx, NULL, CLI_CODE(TFL_FAILED_PRECONDITION));
    if (code != CLI_OK || (code = restore(&j, a, stderr))) return job_end(&j, code);
    char *text = malloc((size_t)o.tokens + 1); /* the tokens and a NUL */
    int64_t n = 0;
    if (!text) cli_error("no memory for %lld tokens", (long long)o.tokens), code = CLI_RUNTIME;
    else if (tfl_run_generate(j.run, a->opt[OPT_PROMPT], &o, text, &n) != TFL_OK)
        code = cli_fail(j.ctx, NULL,
                        CLI_CODE(TFL_INVALID_ARGUMENT) | CLI_CODE(TFL_FAILED_PRECONDITION));
    if (code == CLI_OK) /* fwrite: a byte vocabulary may give 0 bytes */
        printf("%s", a->opt[OPT_PROMPT]), fwrite(text, 1, (size_t)n, stdout), putchar('\n');
    free(text);
    return job_end(&j, code);
}
