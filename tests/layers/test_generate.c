/* test_generate.c: tfl_model_generate (tapeflow/generate.h) on small models with set weights:
 * greedy decoding of a known cycle, with a context window that slides (a PositionEmbedding as
 * long as the context refuses anything longer); top_k 1 equals greedy at any temperature; a
 * seed gives the same tokens twice and another seed others; the frequencies of 4000 draws
 * from fixed logits against softmax(l / T) (and against a wrong temperature and a wrong top-k,
 * which the same bound must reject); top_k's ties; every argument error with its message; no
 * tensor left. */
#include "test_fixture.h"

#include <tapeflow/generate.h>

#include <math.h>

/* Sets the model's i-th variable to `data` (its shape). */
static void set_var(tfl_model *m, int i, const float *data)
{
    tfl_tensor *vars[8] = {0};
    assert_true(tfl_model_variables(m, TFL_VARS_ALL, vars, 8) > i);
    tfl_ctx *ctx = tfl_model_ctx(m);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *v = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, tfl_tensor_rank(vars[i]),
                                   tfl_tensor_shape(vars[i]), data);
    assert_int_equal(tfl_variable_assign(vars[i], v), TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Embedding(V, E) [-> PositionEmbedding(pos)] -> Dense(V), built for (batch, seq) ids. */
static tfl_model *lm(tfl_ctx *ctx, int64_t v, int64_t e, int64_t pos)
{
    tfl_model *m = tfl_model_new(ctx, "lm");
    assert_non_null(m);
    assert_non_null(tfl_model_add(
        m, &(tfl_layer_spec){.kind = TFL_LAYER_EMBEDDING, .input_dim = v, .units = e}));
    if (pos)
        assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_POSITION_EMBEDDING,
                                                           .sequence_length = pos}));
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = v}));
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, pos ? pos : 4}), TFL_OK);
    return m;
}

/* A bigram model of the cycle 0 -> 1 -> ... -> V-1 -> 0: one-hot embeddings, a kernel that
 * maps token i to a logit of 3 for i + 1 and 1 for i + 2, zero positions. */
static tfl_model *cycle_model(tfl_ctx *ctx, int64_t ctx_len)
{
    enum { V = 5 };
    tfl_model *m = lm(ctx, V, V, ctx_len);
    float eye[V * V] = {0}, kernel[V * V] = {0}, pos[16 * V] = {0};
    for (int i = 0; i < V; i++) {
        eye[i * V + i] = 1;
        kernel[i * V + (i + 1) % V] = 3;
        kernel[i * V + (i + 2) % V] = 1;
    }
    set_var(m, 0, eye);
    set_var(m, 1, pos);
    set_var(m, 2, kernel);
    return m;
}

static void test_greedy_cycle(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = cycle_model(ctx, 3);
    int32_t out[12];
    int64_t n = -1;
    /* 12 tokens through a window of 3: sequences longer than 3 would fail the position table */
    tfl_generate_opts o = {.tokens = 12, .context_length = 3};
    assert_int_equal(tfl_model_generate(m, (int32_t[]){4, 2}, 2, &o, out, &n), TFL_OK);
    assert_int_equal(n, 12);
    for (int i = 0; i < 12; i++) assert_int_equal(out[i], (3 + i) % 5);
    /* a full window from the start, and no tokens at all */
    assert_int_equal(tfl_model_generate(m, (int32_t[]){0, 0, 1}, 3, &o, out, &n), TFL_OK);
    for (int i = 0; i < 12; i++) assert_int_equal(out[i], (2 + i) % 5);
    o.tokens = 0;
    out[0] = -7;
    assert_int_equal(tfl_model_generate(m, (int32_t[]){1}, 1, &o, out, &n), TFL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(out[0], -7);
    tfl_model_free(m);
}

/* Random weights: top_k 1 is greedy at any temperature; a seed repeats, another differs. */
static void test_top1_and_seeds(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { N = 60 };
    tfl_model *m = lm(ctx, 16, 8, 0);
    const int32_t prompt[] = {3, 9, 1};
    int32_t greedy[N], a[N], b[N];
    int64_t n = 0;
    tfl_generate_opts o = {.tokens = N, .context_length = 8};
    assert_int_equal(tfl_model_generate(m, prompt, 3, &o, greedy, &n), TFL_OK);
    const double temps[] = {0.05, 1, 7.5};
    for (int i = 0; i < 3; i++) {
        o = (tfl_generate_opts){.tokens = N, .context_length = 8, .temperature = temps[i],
                                .top_k = 1, .seed = 100 + (uint64_t)i};
        assert_int_equal(tfl_model_generate(m, prompt, 3, &o, a, &n), TFL_OK);
        assert_memory_equal(a, greedy, sizeof a);
    }
    /* a high temperature: nearly uniform over 16 ids */
    o = (tfl_generate_opts){.tokens = N, .context_length = 8, .temperature = 50, .seed = 42};
    assert_int_equal(tfl_model_generate(m, prompt, 3, &o, a, &n), TFL_OK);
    assert_int_equal(tfl_model_generate(m, prompt, 3, &o, b, &n), TFL_OK);
    assert_memory_equal(a, b, sizeof a);
    int distinct = 0, seen[16] = {0};
    for (int i = 0; i < N; i++) distinct += !seen[a[i]]++;
    assert_true(distinct >= 8); /* sampled, not greedy */
    o.seed = 43;
    assert_int_equal(tfl_model_generate(m, prompt, 3, &o, b, &n), TFL_OK);
    int same = 0;
    for (int i = 0; i < N; i++) same += a[i] == b[i];
    assert_true(same < N / 2);
    /* seed 0 is a seed as any other: the same tokens in another context */
    o.seed = 0;
    assert_int_equal(tfl_model_generate(m, prompt, 3, &o, a, &n), TFL_OK);
    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    tfl_model *m2 = lm(other, 16, 8, 0);
    tfl_tensor *v1[3], *v2[3];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v1, 3), 3);
    assert_int_equal(tfl_model_variables(m2, TFL_VARS_ALL, v2, 3), 3);
    for (int i = 0; i < 3; i++) {
        float buf[16 * 16];
        size_t bytes = (size_t)tfl_tensor_numel(v1[i]) * sizeof(float);
        assert_int_equal(tfl_tensor_to_host(v1[i], buf, bytes), TFL_OK);
        set_var(m2, i, buf);
    }
    assert_int_equal(tfl_model_generate(m2, prompt, 3, &o, b, &n), TFL_OK);
    assert_memory_equal(a, b, sizeof a);
    tfl_model_free(m2);
    tfl_ctx_free(other);
    tfl_model_free(m);
}

/* Pearson's statistic of counts[0..v) against n draws with probabilities p. */
static double chi_square(const int *counts, const double *p, int v, int n)
{
    double x = 0;
    for (int i = 0; i < v; i++) {
        double e = p[i] * n;
        if (e == 0) {
            if (counts[i]) return INFINITY;
            continue;
        }
        x += (counts[i] - e) * (counts[i] - e) / e;
    }
    return x;
}

/* softmax(l / t) over the ids of the k largest logits (all when k == v). */
static void softmax_top(const float *l, int v, double t, int k, double *p)
{
    double total = 0;
    for (int i = 0; i < v; i++) {
        int above = 0;
        for (int j = 0; j < v; j++) above += l[j] > l[i];
        p[i] = above < k ? exp(l[i] / t) : 0;
        total += p[i];
    }
    for (int i = 0; i < v; i++) p[i] /= total;
}

static void test_frequencies(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { V = 5, N = 4000 };
    /* a zero kernel: the logits are the bias, whatever the tokens */
    const float logits[V] = {1.0f, 0.25f, -0.5f, 2.0f, 0.0f};
    tfl_model *m = lm(ctx, V, 3, 0);
    float zeros[V * 3] = {0};
    set_var(m, 1, zeros);
    set_var(m, 2, logits);
    static int32_t out[N];
    int64_t n = 0;
    const struct { double t; int k; double wrong_t; int wrong_k; } cases[] = {
        {0.7, 0, 1.0, 0}, {1.5, 0, 1.0, 0}, {1.0, 3, 1.0, 4}, {0.5, 2, 0.5, 3}};
    for (int c = 0; c < 4; c++) {
        tfl_generate_opts o = {.tokens = N, .context_length = 4, .temperature = cases[c].t,
                               .top_k = cases[c].k, .seed = 1234};
        assert_int_equal(tfl_model_generate(m, (int32_t[]){0}, 1, &o, out, &n), TFL_OK);
        assert_int_equal(n, N);
        int counts[V] = {0};
        for (int i = 0; i < N; i++) counts[out[i]]++;
        double p[V], wrong[V];
        softmax_top(logits, V, cases[c].t, cases[c].k ? cases[c].k : V, p);
        softmax_top(logits, V, cases[c].wrong_t, cases[c].wrong_k ? cases[c].wrong_k : V, wrong);
        double x = chi_square(counts, p, V, N), xw = chi_square(counts, wrong, V, N);
        /* 4 degrees of freedom at most: P(x > 25) < 5e-5; the wrong law lands far above */
        if (!(x < 25 && xw > 60))
            print_error("case %d: chi-square %.2f, against the wrong law %.2f\n", c, x, xw);
        assert_true(x < 25);
        assert_true(xw > 60);
    }
    tfl_model_free(m);
}

/* top_k takes exactly k ids, ties to the lower id: of three equal largest logits, top_k 2 keeps
 * ids 1 and 2, drawn about equally; top_k 4 adds the next largest, id 0. */
static void test_top_k_ties(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { V = 5, N = 2000 };
    const float logits[V] = {0.5f, 2.0f, 2.0f, 2.0f, -1.0f};
    tfl_model *m = lm(ctx, V, 3, 0);
    float zeros[V * 3] = {0};
    set_var(m, 1, zeros);
    set_var(m, 2, logits);
    static int32_t out[N];
    int64_t n = 0;
    tfl_generate_opts o = {.tokens = N, .context_length = 4, .temperature = 1, .top_k = 2,
                           .seed = 5};
    assert_int_equal(tfl_model_generate(m, (int32_t[]){0}, 1, &o, out, &n), TFL_OK);
    int counts[V] = {0};
    for (int i = 0; i < N; i++) counts[out[i]]++;
    assert_int_equal(counts[1] + counts[2], N);
    assert_true(chi_square(counts, (const double[]){0, 0.5, 0.5, 0, 0}, V, N) < 15);
    o.top_k = 4;
    assert_int_equal(tfl_model_generate(m, (int32_t[]){0}, 1, &o, out, &n), TFL_OK);
    memset(counts, 0, sizeof counts);
    for (int i = 0; i < N; i++) counts[out[i]]++;
    double p[V];
    softmax_top(logits, V, 1, 4, p);
    assert_true(counts[0] > 0 && counts[4] == 0);
    assert_true(chi_square(counts, p, V, N) < 25);
    tfl_model_free(m);
}

static void expect_error(tfl_model *m, const int32_t *prompt, int64_t n_prompt,
                         const tfl_generate_opts *o, tfl_status code, const char *fragment)
{
    int32_t out[8];
    int64_t n = -1;
    assert_int_equal(tfl_model_generate(m, prompt, n_prompt, o, out, &n), code);
    assert_int_equal(n, 0);
    expect_kept_error(tfl_model_ctx(m), code, fragment);
}

static void test_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_model *m = cycle_model(ctx, 4);
    const int32_t p[] = {1, 2, 3, 4, 0};
    const tfl_generate_opts ok = {.tokens = 3, .context_length = 4};
    int32_t out[8];
    int64_t n = 0;
    assert_int_equal(tfl_model_generate(NULL, p, 1, &ok, out, &n), TFL_INVALID_ARGUMENT);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    expect_error(m, NULL, 1, &ok, TFL_INVALID_ARGUMENT, "tfl_model_generate: NULL prompt");
    expect_error(m, p, 1, NULL, TFL_INVALID_ARGUMENT, "tfl_model_generate: NULL opts");
    assert_int_equal(tfl_model_generate(m, p, 1, &ok, NULL, &n), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_generate: NULL out");
    assert_int_equal(tfl_model_generate(m, p, 1, &ok, out, NULL), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_model_generate: NULL n_out");
    expect_error(m, p, 0, &ok, TFL_INVALID_ARGUMENT, "the prompt is empty (n_prompt 0)");
    expect_error(m, p, 5, &ok, TFL_INVALID_ARGUMENT,
                 "tfl_model_generate: the prompt has 5 tokens, longer than the context of 4");
    expect_error(m, (int32_t[]){0, 5}, 2, &ok, TFL_INVALID_ARGUMENT,
                 "prompt id 5 at position 1 is outside [0, 5), the model's vocabulary");
    expect_error(m, (int32_t[]){-1}, 1, &ok, TFL_INVALID_ARGUMENT,
                 "prompt id -1 at position 0 is outside [0, 5)");
    tfl_generate_opts o = ok;
    o.temperature = -0.5;
    expect_error(m, p, 1, &o, TFL_INVALID_ARGUMENT,
                 "temperature must be finite and >= 0 (0: greedy), got -0.5");
    o.temperature = NAN;
    expect_error(m, p, 1, &o, TFL_INVALID_ARGUMENT, "temperature must be finite and >= 0");
    o = ok;
    o.top_k = -2;
    expect_error(m, p, 1, &o, TFL_INVALID_ARGUMENT, "top_k must be >= 0 (0: every token), got -2");
    o = ok;
    o.tokens = -1;
    expect_error(m, p, 1, &o, TFL_INVALID_ARGUMENT, "tokens must be >= 0, got -1");
    o = ok;
    o.context_length = 0;
    expect_error(m, p, 1, &o, TFL_INVALID_ARGUMENT, "context_length must be >= 1, got 0");
    /* a context longer than the model takes: the model's own error, after the tokens it made */
    o = ok;
    o.context_length = 6;
    assert_int_equal(tfl_model_generate(m, p, 4, &o, out, &n), TFL_INVALID_ARGUMENT);
    assert_int_equal(n, 1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "longer than the layer's sequence_length 4");
    /* NaN logits name the step */
    float nan_bias[5] = {0, 0, NAN, 0, 0};
    set_var(m, 3, nan_bias);
    expect_error(m, p, 2, &ok, TFL_FAILED_PRECONDITION,
                 "the logits of generated token 0 hold NaN (id 2)");
    tfl_model_free(m);
    /* outputs that are not (1, s, V) */
    tfl_model *flat = tfl_model_new(ctx, "flat");
    assert_non_null(tfl_model_add(
        flat, &(tfl_layer_spec){.kind = TFL_LAYER_EMBEDDING, .input_dim = 4, .units = 3}));
    assert_non_null(tfl_model_add(flat, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN}));
    expect_error(flat, p, 2, &ok, TFL_INVALID_ARGUMENT,
                 "the model's output for ids of shape (1, 1) must be logits (1, 1, V), got "
                 "shape (1, 3)");
    tfl_model_free(flat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_greedy_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top1_and_seeds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frequencies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_top_k_ties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
