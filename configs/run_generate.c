/*
 * configs/run_generate.c: tfl_run_generate (tapeflow/run.h): text from the restored model of a
 * `format: text` run, through the training text's vocabulary; nothing is written.
 */
#include "run_internal.h"

#include <tapeflow/generate.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A byte as a message shows it: 'a', or 0x0A when it does not print. */
static const char *show_byte(uint8_t b, char *buf, size_t size)
{
    if (isprint(b) && b != '\'') snprintf(buf, size, "'%c'", (char)b);
    else snprintf(buf, size, "0x%02X", (unsigned)b);
    return buf;
}

/* The prompt's ids through vocab[0..v) (the byte of each id); INVALID_ARGUMENT (kept) for a
 * byte not in it. */
static tfl_status encode(tfl_ctx *ctx, const char *prompt, int64_t n, const uint8_t *vocab, int v,
                         int32_t *ids)
{
    int32_t of[256];
    for (int b = 0; b < 256; b++) of[b] = -1;
    for (int i = 0; i < v; i++) of[vocab[i]] = i;
    for (int64_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)prompt[i];
        if (of[b] >= 0) {
            ids[i] = of[b];
            continue;
        }
        char shown[16], known[200] = "";
        for (int j = 0, at = 0; j < v && v <= 64 && at < (int)sizeof known - 8; j++)
            at += snprintf(known + at, sizeof known - (size_t)at, "%s%s", j ? " " : ": ",
                           show_byte(vocab[j], (char[16]){0}, 16));
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                              "tfl_run_generate: the prompt's character %s at position %lld is "
                              "not in the training text's vocabulary (%d tokens%s)",
                              show_byte(b, shown, sizeof shown), (long long)i, v, known);
    }
    return TFL_OK;
}

/* data.train's context_length of a `format: text` config; FAILED_PRECONDITION (kept, naming
 * `what`) for another format. */
static tfl_status text_context(tfl_config *cfg, const char *what, int64_t *context)
{
    char format[64] = "", len[64] = "";
    tfl_config_get(cfg, "data.train.format", format, sizeof format);
    TFL_CHECK(cfg->ctx, !strcmp(format, "text"), TFL_FAILED_PRECONDITION,
              "%s: generation needs a text model: data.train of %s is 'format: %s', not "
              "'format: text'", what, tfl_config_path(cfg), format[0] ? format : "?");
    tfl_config_get(cfg, "data.train.context_length", len, sizeof len);
    *context = strtoll(len, NULL, 10);
    TFL_CHECK(cfg->ctx, *context >= 1, TFL_INTERNAL,
              "%s: data.train.context_length '%s' is not a length", what, len);
    return TFL_OK;
}

tfl_status tfl_run_text_context(tfl_run *run, int64_t *context_length)
{
    tfl_config *cfg = NULL;
    tfl_dataset *train = NULL;
    if (!run) return TFL_INVALID_ARGUMENT;
    if (!tfl__run_parts(run, "tfl_run_text_context", &cfg, &train)) return TFL_MISUSE;
    int64_t context = 0;
    TFL_TRY(text_context(cfg, "tfl_run_text_context", &context));
    if (context_length) *context_length = context;
    return TFL_OK;
}

tfl_status tfl_run_generate(tfl_run *run, const char *prompt, const tfl_generate_opts *opts,
                            char *text, int64_t *n_text)
{
    if (n_text) *n_text = 0;
    tfl_config *cfg = NULL;
    tfl_dataset *train = NULL;
    if (!run) return TFL_INVALID_ARGUMENT;
    if (!tfl__run_parts(run, "tfl_run_generate", &cfg, &train)) return TFL_MISUSE;
    tfl_ctx *ctx = cfg->ctx;
    TFL_CHECK(ctx, prompt && opts && text && n_text, TFL_INVALID_ARGUMENT,
              "tfl_run_generate: NULL %s",
              !prompt ? "prompt" : !opts ? "opts" : !text ? "text" : "n_text");
    int64_t context = 0;
    TFL_TRY(text_context(cfg, "tfl_run_generate", &context));
    uint8_t vocab[256];
    int v = tfl_dataset_text_vocab(train, vocab);
    if (v < 1) return tfl_ctx_status(ctx);
    tfl_generate_opts o = *opts;
    if (o.context_length == 0) o.context_length = context;
    int64_t n = (int64_t)strlen(prompt);
    TFL_CHECK(ctx, n <= o.context_length, TFL_INVALID_ARGUMENT,
              "tfl_run_generate: the prompt has %lld tokens, longer than the context of %lld "
              "(data.train.context_length)", (long long)n, (long long)o.context_length);
    TFL_CHECK(ctx, o.tokens >= 0 && (uint64_t)o.tokens < SIZE_MAX / sizeof(int32_t),
              TFL_INVALID_ARGUMENT, "tfl_run_generate: tokens must be >= 0, got %lld",
              (long long)o.tokens);
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    int32_t *out = malloc((size_t)(o.tokens > 0 ? o.tokens : 1) * sizeof *out);
    tfl_status st = ids && out ? encode(ctx, prompt, n, vocab, v, ids)
                               : tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED,
                                                "tfl_run_generate: no memory for %lld tokens",
                                                (long long)o.tokens);
    int64_t made = 0;
    if (st == TFL_OK) st = tfl_model_generate(tfl_run_model(run), ids, n, &o, out, &made);
    for (int64_t i = 0; i < made; i++) {
        if (out[i] >= v) {
            st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION,
                                "tfl_run_generate: the model generated id %d, outside the "
                                "training text's vocabulary of %d tokens (the model has more "
                                "outputs than the text has tokens)", (int)out[i], v);
            made = i;
            break;
        }
        text[i] = (char)vocab[out[i]];
    }
    text[made] = 0;
    *n_text = made;
    free(ids);
    free(out);
    return st;
}
