/*
 * examples/cli/ckpt_cmds.c: the checkpoint subcommands, over <tapeflow/checkpoint.h>:
 *   inspect CHECKPOINT          names, dtypes, shapes, sizes, the step; checks every CRC
 *   inspect CONFIG              the model's layers (and their inputs), shapes and parameters
 *   verify CHECKPOINT...        reads each file and checks its CRCs (exit 1 on any failure)
 *   diff A B                    the tensors that differ, by max absolute and relative difference
 *   export RUN --weights-only OUT
 *                               the newest checkpoint of a run directory, model weights only
 */
#include "cli.h"

#include <string.h>

/* Positional arguments only (after argv[2]); --help is handled by the dispatcher. */
static int positional(const char *cmd, int argc, char **argv, int min, int max)
{
    int n = argc - 2;
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--weights-only")) {
            fprintf(stderr, "tapeflow %s: unknown option '%s'; see 'tapeflow %s --help'\n", cmd,
                    argv[i], cmd);
            return -1;
        }
    if (n < min || (max >= 0 && n > max)) {
        fprintf(stderr, "tapeflow %s: expected %s; see 'tapeflow %s --help'\n", cmd,
                min == max ? "its arguments" : "more arguments", cmd);
        return -1;
    }
    return n;
}

static tfl_ctx *new_ctx(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = cli_log, .log_level = TFL_LOG_WARNING}, &st);
    if (!ctx) cli_error("no context: %s", tfl_status_name(st));
    return ctx;
}

/* inspect CONFIG: the summary of the model a config builds */
static int inspect_config(tfl_ctx *ctx, const char *path)
{
    int code;
    tfl_config *cfg = cli_load_config(ctx, &(cli_args){.config = path}, &code);
    if (!cfg) return code;
    tfl_model *m = tfl_config_build_model(cfg);
    const char *text = m ? tfl_model_summary(m) : NULL;
    if (text) fputs(text, stdout);
    else code = cli_ctx_error(ctx, path);
    tfl_model_free(m);
    tfl_config_free(cfg);
    return code;
}

static bool is_config(const char *path)
{
    size_t n = strlen(path);
    return (n > 5 && !strcmp(path + n - 5, ".yaml")) || (n > 4 && !strcmp(path + n - 4, ".yml"));
}

int cli_inspect(int argc, char **argv)
{
    if (positional("inspect", argc, argv, 1, 1) < 0) return CLI_USAGE;
    tfl_ctx *ctx = new_ctx();
    if (!ctx) return CLI_RUNTIME;
    if (is_config(argv[2])) {
        int code = inspect_config(ctx, argv[2]);
        tfl_ctx_free(ctx);
        return code;
    }
    tfl_ckpt *ck = tfl_ckpt_open(ctx, argv[2]);
    int code = CLI_OK;
    if (!ck) {
        code = cli_ctx_error(ctx, argv[2]);
    } else {
        const char *step = tfl_ckpt_metadata(ck, "tapeflow.step");
        printf("%s: %lld tensors, step %s\n", argv[2], (long long)tfl_ckpt_num_tensors(ck),
               step ? step : "(not recorded)");
        int64_t total = 0;
        for (int64_t i = 0; i < tfl_ckpt_num_tensors(ck); i++) {
            tfl_ckpt_tensor_info in;
            if (tfl_ckpt_tensor_info_at(ck, i, &in) != TFL_OK) break;
            char shape[160] = "(";
            size_t o = 1;
            for (int d = 0; d < in.rank && o < sizeof shape; d++)
                o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", d ? ", " : "",
                                      (long long)in.shape[d]);
            if (o < sizeof shape)
                snprintf(shape + o, sizeof shape - o, in.rank == 1 ? ",)" : ")");
            printf("  %-40s %-9s %-18s %12lld bytes\n", in.name,
                   in.dtype ? tfl_dtype_name(in.dtype) : in.file_dtype, shape,
                   (long long)in.bytes);
            total += in.bytes;
        }
        int64_t checked = 0;
        if (tfl_ckpt_verify(ck, &checked) != TFL_OK) code = cli_ctx_error(ctx, argv[2]);
        else
            printf("%lld bytes of tensors; %lld CRC-32C checksums verified\n", (long long)total,
                   (long long)checked);
        tfl_ckpt_close(ck);
    }
    tfl_ctx_free(ctx);
    return code;
}

int cli_verify(int argc, char **argv)
{
    if (positional("verify", argc, argv, 1, -1) < 0) return CLI_USAGE;
    tfl_ctx *ctx = new_ctx();
    if (!ctx) return CLI_RUNTIME;
    int code = CLI_OK;
    for (int i = 2; i < argc; i++) {
        tfl_ckpt *ck = tfl_ckpt_open(ctx, argv[i]);
        int64_t checked = 0;
        if (ck && tfl_ckpt_verify(ck, &checked) == TFL_OK) {
            printf("%s: ok (%lld tensors, %lld checksums)\n", argv[i],
                   (long long)tfl_ckpt_num_tensors(ck), (long long)checked);
        } else {
            tfl_error e = tfl_ctx_error(ctx);
            printf("%s: %s: %s\n", argv[i], tfl_status_name(e.code), e.message);
            code = CLI_RUNTIME;
        }
        tfl_ckpt_close(ck);
        tfl_ctx_clear_error(ctx);
    }
    tfl_ctx_free(ctx);
    return code;
}

static void print_diff(void *user, const tfl_ckpt_diff_entry *e)
{
    (void)user;
    switch (e->kind) {
    case TFL_CKPT_SAME:
        break;
    case TFL_CKPT_DIFFERENT:
        printf("  %-40s max abs %.6g, max rel %.6g\n", e->name, e->max_abs, e->max_rel);
        break;
    case TFL_CKPT_ONLY_IN_A:
        printf("  %-40s only in A\n", e->name);
        break;
    case TFL_CKPT_ONLY_IN_B:
        printf("  %-40s only in B\n", e->name);
        break;
    default:
        printf("  %-40s another dtype or shape\n", e->name);
    }
}

int cli_diff(int argc, char **argv)
{
    if (positional("diff", argc, argv, 2, 2) < 0) return CLI_USAGE;
    tfl_ctx *ctx = new_ctx();
    if (!ctx) return CLI_USAGE; /* trouble: 2, as below */
    /* diff(1) and cmp(1): 0 equal, 1 different, 2 trouble */
    int64_t n = 0;
    int code = CLI_OK;
    if (tfl_ckpt_diff(ctx, argv[2], argv[3], print_diff, NULL, &n) != TFL_OK) {
        cli_ctx_error(ctx, "diff");
        code = CLI_USAGE;
    } else {
        printf("%lld tensor%s\n", (long long)n, n == 1 ? " differs" : "s differ");
        code = n > 0 ? CLI_RUNTIME : CLI_OK;
    }
    tfl_ctx_free(ctx);
    return code;
}

int cli_export(int argc, char **argv)
{
    if (positional("export", argc, argv, 1, 3) < 0) return CLI_USAGE;
    const char *run_dir = NULL, *out = NULL;
    bool weights_only = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--weights-only")) weights_only = true;
        else if (!run_dir) run_dir = argv[i];
        else out = argv[i];
    }
    if (!weights_only || !out) {
        fprintf(stderr, "tapeflow export: usage: tapeflow export RUN --weights-only OUT\n");
        return CLI_USAGE;
    }
    tfl_ctx *ctx = new_ctx();
    if (!ctx) return CLI_RUNTIME;
    char dir[4200], latest[4400];
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    int code = CLI_OK;
    int64_t step = 0;
    if (tfl_ckpt_latest(ctx, dir, NULL, latest, sizeof latest, &step) != TFL_OK)
        code = cli_ctx_error(ctx, run_dir);
    else if (tfl_ckpt_export(ctx, latest, out, NULL, NULL, NULL) != TFL_OK)
        code = cli_ctx_error(ctx, "export");
    else printf("%s: the weights of %s (step %lld)\n", out, latest, (long long)step);
    tfl_ctx_free(ctx);
    return code;
}
