/*
 * tapeflow/generate.h: sampling tokens from a language model, nanoGPT's generate: a model
 * that maps int32 token ids of shape (1, s) to logits (1, s, V) (e.g. Embedding ->
 * PositionEmbedding -> MultiHeadAttention(causal) -> Dense(V)) is run on the tokens so far,
 * and the next token is drawn from its logits at the last position; repeated.
 *
 *     int32_t prompt[] = {1, 2}, out[64];
 *     int64_t n = 0;
 *     tfl_generate_opts o = {.tokens = 64, .temperature = 0.8, .top_k = 20, .seed = 7,
 *                            .context_length = 128};
 *     tfl_status st = tfl_model_generate(model, prompt, 2, &o, out, &n);
 *
 * Each step feeds the last min(tokens so far, context_length) tokens (the window slides once
 * generation passes the context) in inference mode (training = false: no dropout, moving
 * statistics), inside a frame, so a call leaves no tensor behind.
 *
 * Sampling, computed in double on the host from the float32 logits l of the last position:
 *   temperature 0   greedy: the id of the largest logit (the lowest id on a tie);
 *   temperature T>0 the candidates are every id (top_k 0, or top_k >= V) or the top_k ids of
 *                   largest logit (ties broken by the lower id: exactly top_k of them), and
 *                   candidate j has probability p_j = exp((l_j - max l) / T) / sum over the
 *                   candidates. With u a uniform draw in [0, 1) and the candidates in id order
 *                   (every id) or by decreasing logit (top_k), the first candidate whose
 *                   cumulative probability exceeds u is taken.
 *   top_k 1         the same token as greedy at any temperature.
 * Logits of -inf are allowed (probability 0); NaN or +inf is an error.
 *
 * The draws: the t-th generated token (t = 0, 1, ...) uses the Philox4x32-10 block
 * (<tapeflow/random.h>'s notation) R = philox((lo(t), hi(t), 0, 0x47454E52 "GENR"),
 * (lo(seed), hi(seed))) and u = u53(R[0], R[1]). The tokens are a pure function of (model
 * weights, prompt, options): the same seed gives the same tokens on every run and in every
 * context; the context's own random streams are neither used nor advanced.
 */
#ifndef TAPEFLOW_GENERATE_H
#define TAPEFLOW_GENERATE_H

#include <tapeflow/model.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Options of tfl_model_generate. */
typedef struct tfl_generate_opts {
    int64_t tokens;         /* tokens to generate (>= 0) */
    double temperature;     /* 0: greedy; > 0: softmax(logits / temperature) */
    int64_t top_k;          /* 0: every token; k >= 1: the k most likely */
    uint64_t seed;          /* the draws' stream (any value, 0 included) */
    int64_t context_length; /* the model's window (>= 1): the longest sequence fed */
} tfl_generate_opts;

/**
 * Generates opts->tokens tokens after the prompt (see the top of this header).
 * @param m        a model mapping int32 ids (1, s) to logits (1, s, V), V >= 1.
 * @param prompt   n_prompt ids in [0, V), 1 <= n_prompt <= opts->context_length.
 * @param out      room for opts->tokens ids: the generated ones (the prompt is not copied).
 * @param n_out    receives the number of ids written to out (also on error: those generated
 *                 before it).
 * Errors (the model is left as it was): INVALID_ARGUMENT for NULL m, prompt, opts, out or
 * n_out, an empty prompt, a prompt longer than the context ("the prompt has 12 tokens, longer
 * than the context of 8"), a prompt id outside [0, V) (naming the id and its position),
 * tokens < 0, context_length < 1, temperature < 0 or NaN, top_k < 0, a model whose output is
 * not (1, s, V) for an input (1, s) (naming the shapes); FAILED_PRECONDITION for logits that
 * hold NaN or +inf (naming the step); the model's own errors; RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_model_generate(tfl_model *m, const int32_t *prompt, int64_t n_prompt,
                                      const tfl_generate_opts *opts, int32_t *out,
                                      int64_t *n_out);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_GENERATE_H */
