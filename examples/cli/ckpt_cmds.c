/*
 * examples/cli/ckpt_cmds.c: the checkpoint subcommands, over <tapeflow/checkpoint.h>:
 *   inspect CHECKPOINT          names, dtypes, shapes, sizes, the step; checks every CRC
 *   inspect CONFIG              the model's layers (and their inputs), shapes and parameters
 *   verify CHECKPOINT...        reads each file and checks its CRCs (exit 1 on any failure)
 *   diff A B                    the tensors that differ (exit 0 equal, 1 different, 2 trouble)
 *   export RUN OUT --weights-only
 *                               the newest checkpoint of a run directory, model weights only
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* inspect CONFIG: the summary of the model a config builds */
static int inspect_config(tfl_ctx *ctx, const char *path)
{
    int code;
    tfl_config *cfg = cli_load_config(ctx, path, &(cli_args){0}, &code);
    tfl_model *m = cfg ? tfl_config_build_model(cfg) : NULL;
    const char *text = m ? tfl_model_summary(m) : NULL;
    if (text) fputs(text, stdout);
    else if (cfg) code = cli_fail(ctx, path, 0);
    tfl_model_free(m);
    tfl_config_free(cfg);
    return code;
}

/* inspect CHECKPOINT: its tensors (tfl_ckpt_summary), then every CRC checked */
static int inspect_ckpt(tfl_ctx *ctx, const char *path)
{
    tfl_ckpt *ck = tfl_ckpt_open(ctx, path);
    int64_t n = ck ? tfl_ckpt_summary(ck, NULL, 0) : -1, checked = 0;
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    int code = CLI_OK;
    if (text && tfl_ckpt_summary(ck, text, (size_t)n + 1) == n) fputs(text, stdout);
    if (!ck || tfl_ckpt_verify(ck, &checked) != TFL_OK) code = cli_fail(ctx, path, 0);
    else if (!text) cli_error("%s: no memory for its summary", path), code = CLI_RUNTIME;
    else printf("%lld CRC-32C checksums verified\n", (long long)checked);
    free(text);
    tfl_ckpt_close(ck);
    return code;
}

int cli_inspect(const cli_args *a)
{
    const char *path = a->pos[0], *dot = strrchr(path, '.');
    bool config = dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml"));
    return config ? inspect_config(a->ctx, path) : inspect_ckpt(a->ctx, path);
}

int cli_verify(const cli_args *a)
{
    tfl_ctx *ctx = a->ctx;
    int code = CLI_OK;
    for (int i = 0; i < a->n_pos; i++) {
        tfl_ckpt *ck = tfl_ckpt_open(ctx, a->pos[i]);
        int64_t checked = 0;
        if (ck && tfl_ckpt_verify(ck, &checked) == TFL_OK) {
            printf("%s: ok (%lld tensors, %lld checksums)\n", a->pos[i],
                   (long long)tfl_ckpt_num_tensors(ck), (long long)checked);
        } else {
            tfl_error e = tfl_ctx_error(ctx);
            printf("%s: %s: %s\n", a->pos[i], tfl_status_name(e.code), e.message);
            code = CLI_RUNTIME;
        }
        tfl_ckpt_close(ck);
        tfl_ctx_clear_error(ctx);
    }
    return code;
}

static void print_diff(void *user, const tfl_ckpt_diff_entry *e)
{
    (void)user;
    if (e->kind == TFL_CKPT_DIFFERENT)
        printf("  %-40s max abs %.6g, max rel %.6g\n", e->name, e->max_abs, e->max_rel);
    else if (e->kind != TFL_CKPT_SAME)
        printf("  %-40s %s\n", e->name, e->kind == TFL_CKPT_ONLY_IN_A   ? "only in A"
                                        : e->kind == TFL_CKPT_ONLY_IN_B ? "only in B"
                                                                        : "another dtype or shape");
}

int cli_diff(const cli_args *a)
{
    int64_t n = 0;
    int code = CLI_USAGE; /* trouble: 2 (diff(1) and cmp(1)) */
    if (tfl_ckpt_diff(a->ctx, a->pos[0], a->pos[1], print_diff, NULL, &n) != TFL_OK)
        cli_fail(a->ctx, "diff", 0);
    else if (printf("%lld tensor%s\n", (long long)n, n == 1 ? " differs" : "s differ") > 0)
        code = n > 0 ? CLI_RUNTIME : CLI_OK;
    return code;
}

int cli_export(const cli_args *a)
{
    tfl_ctx *ctx = a->ctx;
    char latest[4400];
    int64_t step = 0;
    int code = CLI_OK;
    if (tfl_run_latest_checkpoint(ctx, a->pos[0], latest, sizeof latest, &step) != TFL_OK)
        code = cli_fail(ctx, a->pos[0], 0);
    else if (tfl_ckpt_export(ctx, latest, a->pos[1], NULL, NULL, NULL) != TFL_OK)
        code = cli_fail(ctx, "export", 0);
    else printf("%s: the weights of %s (step %lld)\n", a->pos[1], latest, (long long)step);
    return code;
}
