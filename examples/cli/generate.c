/* examples/cli/generate.c: `tapeflow generate`: text from a trained text model (tfl_run_generate):
 * the prompt and the generated text on stdout, the checkpoint on stderr; nothing written. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Takes generate's options (--name VALUE, --name=VALUE) out of argv: CLI_OK or CLI_USAGE. */
static int take_options(int *argc, char **argv, const char **prompt, tfl_generate_opts *o)
{
    static const char *const names[] = {"--prompt", "--tokens", "--temperature", "--top-k",
                                        "--seed"};
    int kept = 2;
    for (int i = 2; i < *argc; i++) {
        int k = 0;
        size_t len = 0;
        for (; k < 5; k++) {
            len = strlen(names[k]);
            if (!strncmp(argv[i], names[k], len) && (!argv[i][len] || argv[i][len] == '=')) break;
        }
        if (k == 5) {
            argv[kept++] = argv[i];
            continue;
        }
        const char *v = argv[i][len] == '=' ? argv[i] + len + 1 : i + 1 < *argc ? argv[++i] : NULL;
        char *end = NULL;
        errno = 0; /* set on overflow */
        double d = v && k == 2 ? strtod(v, &end) : 0;
        long long n = v && k != 0 && k != 2 ? strtoll(v, &end, 10) : 0;
        bool ok = v && (k == 0 || (end != v && !*end && errno == 0 && n >= 0 && d >= 0));
        if (k == 0) *prompt = v;
        else if (k == 1) o->tokens = n;
        else if (k == 2) o->temperature = d, ok = ok && isfinite(d);
        else if (k == 3) o->top_k = n;
        else o->seed = (uint64_t)n;
        if (!ok) {
            fprintf(stderr, "tapeflow generate: %s needs %s, got '%s'\n", names[k],
                    k == 0 ? "a value" : k == 2 ? "a number >= 0" : "an integer >= 0",
                    v ? v : "nothing");
            return CLI_USAGE;
        }
    }
    *argc = kept;
    return CLI_OK;
}

/* Opens the run of a->config and restores its checkpoint, named on stderr. */
static int restore(tfl_ctx *ctx, const cli_args *a, tfl_config **cfg, tfl_run **run)
{
    int code;
    if (!(*cfg = cli_load_config(ctx, a, &code))) return code;
    tfl_status st;
    *run = tfl_run_open(*cfg, &(tfl_run_opts){.run_dir = a->run_dir, .log_fn = cli_log,
                                              .log_level = TFL_LOG_WARNING}, &st);
    if (!*run) {
        cli_error("%s: %s", a->config, tfl_ctx_error(ctx).message);
        return st == TFL_RESOURCE_EXHAUSTED ? CLI_RUNTIME : CLI_USAGE;
    }
    char format[32] = "";
    tfl_config_get(*cfg, "data.train.format", format, sizeof format);
    if (strcmp(format, "text")) { /* before the checkpoint: a config error comes first */
        cli_error("%s: data.train is 'format: %s': generate needs a model trained on "
                  "'format: text' data", a->config, format);
        return CLI_USAGE;
    }
    char used[4400];
    int64_t step = -1;
    if (tfl_run_restore(*run, a->checkpoint, used, sizeof used, &step) != TFL_OK)
        return cli_ctx_error(ctx, a->checkpoint ? a->checkpoint : "restoring");
    fprintf(stderr, step >= 0 ? "tapeflow: checkpoint %s (step %lld)\n"
                              : "tapeflow: checkpoint %s\n", used, (long long)step);
    return CLI_OK;
}

int cli_generate(int argc, char **argv)
{
    const char *prompt = NULL;
    tfl_generate_opts o = {.tokens = 200, .temperature = 1.0};
    cli_args a;
    int code = take_options(&argc, argv, &prompt, &o);
    if (code == CLI_OK)
        code = cli_parse("generate", argc, argv, 2, CLI_OPT_SET | CLI_OPT_RUN_DIR | CLI_OPT_CKPT,
                         &a);
    if (code == CLI_OK && !prompt)
        fprintf(stderr, "tapeflow generate: --prompt TEXT is required\n"), code = CLI_USAGE;
    if (code != CLI_OK) return code;
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        cli_error("no context: %s", tfl_status_name(st));
        return CLI_RUNTIME;
    }
    tfl_config *cfg = NULL;
    tfl_run *run = NULL;                    /* text: room for the tokens and a NUL */
    char *text = malloc((size_t)o.tokens + 1);
    int64_t n = 0;
    if (!text) {
        cli_error("no memory for %lld tokens", (long long)o.tokens);
        code = CLI_RUNTIME;
    } else if ((code = restore(ctx, &a, &cfg, &run)) == CLI_OK &&
             tfl_run_generate(run, prompt, &o, text, &n) != TFL_OK) {
        tfl_error e = tfl_ctx_error(ctx);
        code = e.code == TFL_INVALID_ARGUMENT || e.code == TFL_FAILED_PRECONDITION ? CLI_USAGE
                                                                                   : CLI_RUNTIME;
        cli_error("%s", e.message);
    }
    if (code == CLI_OK) { /* fwrite: a byte vocabulary may give 0 bytes */
        fputs(prompt, stdout);
        fwrite(text, 1, (size_t)n, stdout);
        putchar('\n');
    }
    free(text);
    tfl_run_close(run);
    tfl_config_free(cfg);
    tfl_ctx_free(ctx);
    return code;
}
