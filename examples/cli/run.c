/*
 * examples/cli/run.c: `tapeflow train`, `eval`, `predict` and `config`: a config loaded and
 * validated once, a run of the library (tapeflow/run.h) opened on it, its events printed,
 * SIGINT/SIGTERM turned into tfl_run_cancel, statuses into exit codes.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a run of the program -------------------------------------------------------------------- */

typedef struct job {
    tfl_ctx *ctx;
    tfl_config *cfg;
    tfl_run *run;
    const cli_args *a;
    bool tty;
} job;

static void show(void *user, const tfl_run_event *ev)
{
    const job *j = user;
    switch (ev->kind) {
    case TFL_RUN_EVENT_NOTE:
        if (!j->a->quiet) printf("%s\n", ev->message);
        break;
    case TFL_RUN_EVENT_WARNING:
        fprintf(stderr, "tapeflow: %swarning: %s\n", cli_rank_label, ev->message);
        break;
    case TFL_RUN_EVENT_CONFIG_CHANGE: /* a heading, then "  key: was -> now" */
        fprintf(stderr, "%s%s\n", ev->message[0] == ' ' ? "" : "tapeflow: ", ev->message);
        break;
    case TFL_RUN_EVENT_STEP: /* off a terminal: fit's bar is not there */
        if (!j->a->quiet && !j->tty) printf("%s\n", ev->message);
        break;
    case TFL_RUN_EVENT_DEVICE: /* under mpirun, every rank says where it trains */
        fprintf(stderr, "tapeflow: %s\n", ev->message);
        break;
    case TFL_RUN_EVENT_EPOCH:
        break;
    }
}

static void job_free(job *j)
{
    cli_current_run = NULL;
    tfl_run_close(j->run);
    tfl_config_free(j->cfg);
    tfl_ctx_free(j->ctx);
}

/* Loads the config and opens its run; an error here is the config's (exit 2) unless it is a
 * lack of memory. Nothing is written. */
static int open_job(job *j, const cli_args *a)
{
    tfl_status st;
    j->a = a;
    j->tty = isatty(STDOUT_FILENO);
    if (!(j->ctx = tfl_ctx_new(NULL, &st))) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    int code;
    if (!(j->cfg = cli_load_config(j->ctx, a, &code))) return code;
    j->run = tfl_run_open(j->cfg,
                          &(tfl_run_opts){.run_dir = a->run_dir,
                                          .allow_config_change = a->allow_config_change,
                                          .progress = a->quiet ? NULL : stdout,
                                          .on_event = show, .user = j, .comm = cli_dist_comm()},
                          &st);
    if (j->run) return CLI_OK;
    tfl_error e = tfl_ctx_error(j->ctx);
    cli_error("%s: %s", a->config, e.message);
    fprintf(stderr, "tapeflow: nothing was run or written\n");
    return e.code == TFL_RESOURCE_EXHAUSTED ? CLI_RUNTIME : CLI_USAGE;
}

/* ---- train ----------------------------------------------------------------------------------- */

static void print_summary(const tfl_run_result *res, const cli_args *a)
{
    if (a->quiet) return;
    if (res->trained_already)
        printf("trained already: %d epochs (%s)\n", res->epochs, res->checkpoint);
    if (!isnan(res->test_loss)) {
        printf("test_loss %.4f", res->test_loss);
        if (!isnan(res->test_accuracy)) printf(" - test_accuracy %.4f", res->test_accuracy);
        printf("\n");
    }
    if (res->epochs > 0 && !res->trained_already) {
        const tfl_epoch_logs *l = &res->last;
        printf("trained %d epoch%s, %lld steps in %.1f s; final loss %.4f", res->epochs,
               res->epochs == 1 ? "" : "s", (long long)res->steps, res->seconds, l->loss);
        if (!isnan(l->accuracy)) printf(", accuracy %.4f", l->accuracy);
        if (!isnan(l->val_loss)) printf(", val_loss %.4f", l->val_loss);
        if (!isnan(l->val_accuracy)) printf(", val_accuracy %.4f", l->val_accuracy);
        printf("%s; run directory %s\n", res->skipped_steps ? " (non-finite steps skipped)" : "",
               res->run_dir);
    }
}

int cli_train(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("train", argc, argv, 2,
                         CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_QUIET | CLI_OPT_ALLOW, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    if (!cli_dist_writer()) a.quiet = true; /* progress from rank 0 only (dist.c) */
    job j = {0};
    if ((code = open_job(&j, &a)) != CLI_OK) {
        job_free(&j);
        return code;
    }
    cli_current_run = j.run;
    cli_catch_signals();
    tfl_run_result res;
    tfl_status st = tfl_run_train(j.run, &res);
    if (st != TFL_OK) {
        code = cli_ctx_error(j.ctx, "training");
    } else if (res.refused) {
        cli_error("%s", tfl_ctx_error(j.ctx).message);
        fprintf(stderr, "tapeflow: Pass --allow-config-change to continue anyway, or give "
                        "another --run-dir\n");
        code = CLI_USAGE;
    } else if (res.cancelled) {
        fprintf(stderr, "tapeflow: interrupted (%s) in epoch %d after %lld steps; %s; %s holds "
                "the complete epochs; 'tapeflow train' with the same config resumes\n",
                cli_interrupted == SIGTERM ? "SIGTERM" : "SIGINT", res.stopped_epoch + 1,
                (long long)res.steps,
                res.saved ? "a checkpoint of that step was saved" : "no checkpoint could be saved",
                res.metrics_csv);
        if (res.event_file[0])
            fprintf(stderr, "tapeflow: event file (flushed): %s\n", res.event_file);
        code = CLI_INTERRUPTED;
    } else {
        print_summary(&res, &a);
        if (!a.quiet) cli_train_logs_end(res.run_dir, res.event_file, res.curves);
        code = CLI_OK;
    }
    job_free(&j);
    return code;
}

/* ---- config ---------------------------------------------------------------------------------- */

int cli_config(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("config", argc, argv, 2, CLI_OPT_SET, &a);
    if (code != CLI_OK) return code;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    tfl_config *cfg = cli_load_config(ctx, &a, &code);
    if (cfg) {
        const char *text = tfl_config_format(cfg);
        if (text) fputs(text, stdout);
        else code = cli_ctx_error(ctx, "resolving the config");
        tfl_config_free(cfg);
    }
    tfl_ctx_free(ctx);
    return code;
}

/* ---- eval and predict: the trained model of the run directory ---------------------------------- */

/* Opens the run and restores its checkpoint (--checkpoint, else the newest usable one), named
 * on stdout for eval, on stderr for predict (its CSV may be stdout). */
static int restore_trained(job *j, const cli_args *a)
{
    int code = open_job(j, a);
    if (code != CLI_OK) return code;
    char used[4400];
    int64_t step = -1;
    if (tfl_run_restore(j->run, a->checkpoint, used, sizeof used, &step) != TFL_OK) {
        tfl_error e = tfl_ctx_error(j->ctx);
        if (e.code == TFL_NOT_FOUND && !a->checkpoint)
            cli_error("%s ('tapeflow train %s')", e.message, a->config);
        else cli_ctx_error(j->ctx, a->checkpoint ? a->checkpoint : "restoring");
        return CLI_RUNTIME;
    }
    FILE *say = a->input ? stderr : stdout;
    if (!cli_dist_writer()) return CLI_OK;
    fprintf(say, "%scheckpoint %s", a->input ? "tapeflow: " : "", used);
    if (step >= 0) fprintf(say, " (step %lld)", (long long)step);
    fputc('\n', say);
    return CLI_OK;
}

int cli_eval(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("eval", argc, argv, 2, CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_CKPT, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    a.quiet = true;
    job j = {0};
    if ((code = restore_trained(&j, &a)) == CLI_OK) {
        double loss = NAN, acc = NAN;
        const char *which = "";
        int64_t examples = 0;
        /* under mpirun every rank evaluates its shard of every batch, and rank 0 prints the
         * figures of the whole data (the sums reduced across the ranks) */
        if (tfl_run_evaluate(j.run, &loss, &acc, &which, &examples) != TFL_OK) {
            code = cli_ctx_error(j.ctx, "evaluating");
        } else if (cli_dist_writer()) {
            printf("%s_loss %.4f", which, loss);
            if (!isnan(acc)) printf(" - %s_accuracy %.4f", which, acc);
            printf(" - %lld examples", (long long)examples);
            if (cli_dist_size() > 1) printf(" on %d ranks", cli_dist_size());
            printf("\n");
        }
    }
    job_free(&j);
    return code;
}

int cli_predict(int argc, char **argv)
{
    cli_args a;
    int code = cli_parse("predict", argc, argv, 2,
                         CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_IO | CLI_OPT_CKPT, &a);
    if (code != CLI_OK || (code = cli_dist_start()) != CLI_OK) return code;
    /* under mpirun rank 0 alone predicts and writes (one output, in the input's order) */
    if (!cli_dist_writer()) return CLI_OK;
    a.quiet = true;
    job j = {0};
    if ((code = restore_trained(&j, &a)) == CLI_OK) {
        bool labelled = false;
        double loss = NAN, acc = NAN;
        tfl_tensor *out = tfl_run_predict(j.run, a.input, &labelled, &loss, &acc);
        FILE *f = !out ? NULL : a.output ? fopen(a.output, "w") : stdout;
        if (!out) {
            code = cli_ctx_error(j.ctx, a.input);
        } else if (!f) {
            cli_error("cannot write '%s': %s", a.output, strerror(errno));
            code = CLI_RUNTIME;
        } else {
            if (labelled) { /* the training layout: scored, the label never an input */
                fprintf(stderr, "tapeflow: %s has the training data's label column: not an "
                        "input; on its labels loss %.4f", a.input, loss);
                if (!isnan(acc)) fprintf(stderr, ", accuracy %.4f", acc);
                fprintf(stderr, " (%lld examples)\n", (long long)tfl_tensor_dim(out, 0));
            }
            code = tfl_run_write_predictions(j.run, out, f) == TFL_OK
                       ? CLI_OK
                       : cli_ctx_error(j.ctx, "writing the predictions");
            if (a.output && fclose(f) != 0 && code == CLI_OK) {
                cli_error("cannot write '%s': %s", a.output, strerror(errno));
                code = CLI_RUNTIME;
            }
        }
        tfl_tensor_release(out);
    }
    job_free(&j);
    return code;
}
