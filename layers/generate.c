/*
 * layers/generate.c: tfl_model_generate (tapeflow/generate.h): the model run on a sliding
 * window of tokens, its last position's logits copied to the host, and the next token chosen
 * there in double (greedy, or a Philox draw from the tempered softmax over the top-k ids).
 */
#include "core_api/module_api.h" /* framework's API for modules (tfl_framework_private) */

#include <tapeflow/generate.h>
#include <tapeflow/random.h>


#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEN_STREAM 0x47454E52u /* "GENR": the counter word that sets generation's draws apart */

/* The host buffers of one call: the window of ids fed, the last logits, candidate ids. */
typedef struct gen_state {
    tfl_ctx *ctx;
    tfl_model *m;
    const tfl_generate_opts *o;
    int32_t *window; /* context_length ids */
    int64_t len;     /* ids in window */
    int64_t vocab;   /* V, from the model's output */
    float *logits;   /* V */
    double *p;       /* V: the candidates' weights */
    int32_t *ids;    /* V: the candidates, in draw order */
} gen_state;

/* Runs the model on ids (1, n) and copies the logits of the last position to the host;
 * sets s->vocab from the output when it is 0, else checks it. */
static tfl_status last_logits(gen_state *s, const int32_t *ids, int64_t n)
{
    tfl_ctx *ctx = s->ctx;
    TFL_TRY(tfl_frame_push(ctx));
    tfl_status st = TFL_OK;
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 2, (int64_t[]){1, n}, ids);
    tfl_tensor *y = x ? tfl_model_call(s->m, x, false) : NULL;
    if (!y) {
        st = tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
        goto done;
    }
    const int64_t *sh = tfl_tensor_shape(y);
    int rank = tfl_tensor_rank(y);
    bool fits = rank == 3 && sh[0] == 1 && sh[1] == n && sh[2] >= 1 &&
                (s->vocab == 0 || sh[2] == s->vocab);
    if (!fits) {
        char got[160];
        tfl__shape_str(rank, sh, got, sizeof got);
        st = tfl__set_error(ctx, TFL_INVALID_ARGUMENT,
                            "tfl_model_generate: the model's output for ids of shape (1, %lld) "
                            "must be logits (1, %lld, V), got shape %s",
                            (long long)n, (long long)n, got);
        goto done;
    }
    if (s->vocab == 0) {
        s->vocab = sh[2];
        goto done; /* the probe: the buffers are made for V next */
    }
    tfl_tensor *last = tfl_slice(ctx, y, (int64_t[]){0, n - 1, 0}, (int64_t[]){1, 1, -1});
    if (last && tfl_tensor_dtype(last) != TFL_DTYPE_FLOAT32)
        last = tfl_cast(ctx, last, TFL_DTYPE_FLOAT32);
    st = last ? tfl_tensor_to_host(last, s->logits, (size_t)s->vocab * sizeof(float))
              : tfl_ctx_status(ctx);
done:
    tfl_frame_pop(ctx);
    return st;
}

/* Whether id a ranks after id b: a lower logit, or the same logit and a higher id. */
static bool ranks_after(const float *l, int32_t a, int32_t b)
{
    return l[a] != l[b] ? l[a] < l[b] : a > b;
}

/* Sorts ids[0..n) best first (by decreasing logit, the lower id first on a tie): a heapsort,
 * which needs no memory and no global for its comparison. */
static void sort_by_logit(const float *l, int32_t *ids, int64_t n)
{
    for (int64_t end = n, start = n / 2; end > 1;) {
        if (start > 0) start--;
        else {
            end--;
            int32_t t = ids[0];
            ids[0] = ids[end];
            ids[end] = t;
        }
        for (int64_t root = start, child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && ranks_after(l, ids[child + 1], ids[child])) child++;
            if (!ranks_after(l, ids[child], ids[root])) break;
            int32_t t = ids[root];
            ids[root] = ids[child];
            ids[child] = t;
        }
    }
}

/* The next token from s->logits, the t-th generated; -1 with the error kept. */
static int32_t choose(gen_state *s, int64_t t)
{
    const float *l = s->logits;
    int64_t v = s->vocab, best = 0;
    for (int64_t i = 0; i < v; i++) {
        if (isnan(l[i]) || l[i] == INFINITY) {
            tfl__set_error(s->ctx, TFL_FAILED_PRECONDITION,
                           "tfl_model_generate: the logits of generated token %lld hold %s "
                           "(id %lld)", (long long)t, isnan(l[i]) ? "NaN" : "+inf",
                           (long long)i);
            return -1;
        }
        if (l[i] > l[best]) best = i;
    }
    if (s->o->temperature == 0 || s->o->top_k == 1 || l[best] == -INFINITY)
        return (int32_t)best;
    int64_t k = s->o->top_k == 0 || s->o->top_k >= v ? v : s->o->top_k;
    for (int64_t i = 0; i < v; i++) s->ids[i] = (int32_t)i;
    if (k < v) sort_by_logit(l, s->ids, v);
    double total = 0;
    for (int64_t j = 0; j < k; j++) {
        s->p[j] = exp(((double)l[s->ids[j]] - (double)l[best]) / s->o->temperature);
        total += s->p[j];
    }
    const uint32_t key[2] = {(uint32_t)s->o->seed, (uint32_t)(s->o->seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)t, (uint32_t)((uint64_t)t >> 32), 0, GEN_STREAM};
    uint32_t r[4];
    tfl__philox4x32_10(ctr, key, r);
    double u = (double)((((uint64_t)r[1] << 32) | r[0]) >> 11) * 0x1p-53;
    double target = u * total, cum = 0;
    int64_t pick = -1;
    for (int64_t j = 0; j < k; j++) {
        if (s->p[j] <= 0) continue;
        pick = j; /* the last with weight, should rounding leave cum <= target */
        cum += s->p[j];
        if (cum > target) break;
    }
    return s->ids[pick]; /* the top logit's weight is exp(0) = 1: pick >= 0 */
}

/* Checks the arguments that need no model run; the error kept names the first bad one. */
static tfl_status check_args(tfl_ctx *ctx, const int32_t *prompt, int64_t n_prompt,
                             const tfl_generate_opts *o, int32_t *out, int64_t *n_out)
{
    TFL_CHECK(ctx, prompt && o && out && n_out, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: NULL %s", !prompt ? "prompt" : !o ? "opts" : !out ? "out"
                                                                                    : "n_out");
    TFL_CHECK(ctx, n_prompt >= 1, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: the prompt is empty (n_prompt %lld): it needs a token at "
              "least", (long long)n_prompt);
    TFL_CHECK(ctx, o->context_length >= 1, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: context_length must be >= 1, got %lld",
              (long long)o->context_length);
    TFL_CHECK(ctx, n_prompt <= o->context_length, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: the prompt has %lld tokens, longer than the context of %lld",
              (long long)n_prompt, (long long)o->context_length);
    TFL_CHECK(ctx, o->tokens >= 0, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: tokens must be >= 0, got %lld", (long long)o->tokens);
    TFL_CHECK(ctx, o->temperature >= 0 && o->temperature < INFINITY, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: temperature must be finite and >= 0 (0: greedy), got %g",
              o->temperature);
    TFL_CHECK(ctx, o->top_k >= 0, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: top_k must be >= 0 (0: every token), got %lld",
              (long long)o->top_k);
    return TFL_OK;
}

/* The buffers for V = s->vocab; RESOURCE_EXHAUSTED (kept) when they cannot be had. */
static tfl_status alloc_buffers(gen_state *s)
{
    int64_t v = s->vocab;
    TFL_CHECK(s->ctx, v <= INT32_MAX, TFL_INVALID_ARGUMENT,
              "tfl_model_generate: a vocabulary of %lld ids does not fit int32 ids",
              (long long)v);
    s->logits = tfl__host_alloc(s->ctx, (size_t)v * sizeof *s->logits, 64);
    s->p = tfl__host_alloc(s->ctx, (size_t)v * sizeof *s->p, 64);
    s->ids = tfl__host_alloc(s->ctx, (size_t)v * sizeof *s->ids, 64);
    TFL_CHECK(s->ctx, s->logits && s->p && s->ids, TFL_RESOURCE_EXHAUSTED,
              "tfl_model_generate: no host memory for a vocabulary of %lld", (long long)v);
    return TFL_OK;
}

static tfl_status generate(gen_state *s, const int32_t *prompt, int64_t n_prompt, int32_t *out,
                           int64_t *n_out)
{
    const tfl_generate_opts *o = s->o;
    size_t wbytes;
    TFL_CHECK(s->ctx, !__builtin_mul_overflow((size_t)o->context_length, sizeof(int32_t),
                                              &wbytes), TFL_INVALID_ARGUMENT,
              "tfl_model_generate: context_length %lld is too large",
              (long long)o->context_length);
    /* the probe: one token id 0 (valid for any V) gives V, to check the prompt's ids */
    TFL_TRY(last_logits(s, (const int32_t[]){0}, 1));
    for (int64_t i = 0; i < n_prompt; i++)
        TFL_CHECK(s->ctx, prompt[i] >= 0 && prompt[i] < s->vocab, TFL_INVALID_ARGUMENT,
                  "tfl_model_generate: prompt id %lld at position %lld is outside [0, %lld), "
                  "the model's vocabulary", (long long)prompt[i], (long long)i,
                  (long long)s->vocab);
    TFL_TRY(alloc_buffers(s));
    s->window = tfl__host_alloc(s->ctx, wbytes, 64);
    TFL_CHECK(s->ctx, s->window, TFL_RESOURCE_EXHAUSTED,
              "tfl_model_generate: no host memory for a context of %lld",
              (long long)o->context_length);
    memcpy(s->window, prompt, (size_t)n_prompt * sizeof *prompt);
    s->len = n_prompt;
    for (int64_t t = 0; t < o->tokens; t++) {
        TFL_TRY(last_logits(s, s->window, s->len));
        int32_t id = choose(s, t);
        if (id < 0) return tfl_ctx_status(s->ctx);
        out[t] = id;
        *n_out = t + 1;
        if (s->len == o->context_length) { /* the window slides: nanoGPT's crop */
            memmove(s->window, s->window + 1, (size_t)(s->len - 1) * sizeof *s->window);
            s->len--;
        }
        s->window[s->len++] = id;
    }
    return TFL_OK;
}

tfl_status tfl_model_generate(tfl_model *m, const int32_t *prompt, int64_t n_prompt,
                              const tfl_generate_opts *opts, int32_t *out, int64_t *n_out)
{
    if (n_out) *n_out = 0;
    tfl_ctx *ctx = m ? tfl_model_ctx(m) : NULL;
    if (!ctx) return TFL_INVALID_ARGUMENT; /* a freed model: its first call says MISUSE */
    TFL_TRY(check_args(ctx, prompt, n_prompt, opts, out, n_out));
    gen_state s = {.ctx = ctx, .m = m, .o = opts};
    tfl_status st = generate(&s, prompt, n_prompt, out, n_out);
    tfl__host_free(ctx, s.window);
    tfl__host_free(ctx, s.logits);
    tfl__host_free(ctx, s.p);
    tfl__host_free(ctx, s.ids);
    return st;
}
