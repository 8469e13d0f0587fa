/* test_attention.c: MultiHeadAttention (self-attention in Keras's layout) against PyTorch
 * (tests/reference/fixtures/attention_torch.json, from attention_torch.py: the projections as
 * einsums, the attention by F.scaled_dot_product_attention, causal or not): y and the
 * gradients of sum(w * y) for x and all eight variables, to 1e-5 relative (float32 compute
 * against float64); the variables' names and shapes; dropout only while training; and the
 * errors (rank, features, options). */
#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/attention_torch.json"
#include "seeds_fixture.h"
#include "torch_lists.h"

#define TOL 1e-5 /* relative to max(1, max |want|) */

static const char *const k_names[8] = {
    "query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel", "value/bias",
    "attention_output/kernel", "attention_output/bias"};

/* obj's member `key` (names hold '/', which jget reads as a path) */
static const cJSON *member(const cJSON *obj, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!m) fail_msg("fixture: no \"%s\"", key);
    return m;
}

static void test_matches_torch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *cases[] = {"mha", "mha_causal"};
    for (int ci = 0; ci < 2; ci++) {
        const cJSON *c = jget(jget(g_root, "cases"), cases[ci]);
        const int64_t b = (int64_t)jnum(c, "b"), s = (int64_t)jnum(c, "s"),
                      f = (int64_t)jnum(c, "f"), h = (int64_t)jnum(c, "heads"),
                      k = (int64_t)jnum(c, "key_dim");
        bool causal = cJSON_IsTrue(jget(c, "causal"));
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_layer *l = tfl_layer_new(ctx, &(tfl_layer_spec){
                                              .kind = TFL_LAYER_MULTI_HEAD_ATTENTION,
                                              .num_heads = (int)h, .key_dim = k, .causal = causal,
                                              .rate = 0.5});
        assert_non_null(l);
        assert_int_equal(tfl_layer_build(l, 3, (int64_t[]){-1, s, f}), TFL_OK);
        tfl_tensor *vars[8];
        assert_int_equal(tfl_layer_variables(l, TFL_VARS_TRAINABLE, vars, 8), 8);
        const int64_t shapes[8][3] = {{f, h, k}, {h, k}, {f, h, k}, {h, k},
                                      {f, h, k}, {h, k}, {h, k, f}, {f}};
        const int ranks[8] = {3, 2, 3, 2, 3, 2, 3, 1};
        for (int i = 0; i < 8; i++) {
            char want[64];
            snprintf(want, sizeof want, "%s/%s", tfl_layer_name(l), k_names[i]);
            assert_string_equal(tfl_variable_name(vars[i]), want);
            assert_int_equal(tfl_tensor_rank(vars[i]), ranks[i]);
            for (int d = 0; d < ranks[i]; d++)
                assert_int_equal(tfl_tensor_shape(vars[i])[d], shapes[i][d]);
            assert_int_equal(tfl_variable_assign(vars[i],
                                                 json_f32(ctx, member(jget(c, "vars"), k_names[i]),
                                                          ranks[i], shapes[i])),
                             TFL_OK);
        }
        tfl_tensor *x = json_f32(ctx, jget(c, "x"), 3, (int64_t[]){b, s, f});
        tfl_tensor *w = json_f32(ctx, jget(c, "w"), 3, (int64_t[]){b, s, f});
        /* inference: no dropout, the fixture's values */
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
        tfl_tensor *y = tfl_layer_call(l, x, false);
        assert_non_null(y);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, w, y), 0, NULL, false);
        const tfl_tensor *src[9] = {x};
        for (int i = 0; i < 8; i++) src[i + 1] = vars[i];
        tfl_tensor *g[9] = {0};
        assert_int_equal(tfl_tape_gradient(tape, loss, 9, src, g, 0), TFL_OK);
        char what[96];
        snprintf(what, sizeof what, "%s y", cases[ci]);
        expect_close_f32(y, jget(c, "y"), TOL, what);
        snprintf(what, sizeof what, "%s dx", cases[ci]);
        expect_close_f32(g[0], jget(jget(c, "grads"), "x"), TOL, what);
        for (int i = 0; i < 8; i++) {
            snprintf(what, sizeof what, "%s d%s", cases[ci], k_names[i]);
            expect_close_f32(g[i + 1], member(jget(c, "grads"), k_names[i]), TOL, what);
        }
        tfl_tape_free(tape);
        /* training: dropout on the weights changes the output */
        tfl_tensor *yt = tfl_layer_call(l, x, true);
        assert_non_null(yt);
        float a[256], t[256];
        assert_true(b * s * f <= 256);
        assert_int_equal(tfl_tensor_to_host(y, a, sizeof(float) * (size_t)(b * s * f)), TFL_OK);
        assert_int_equal(tfl_tensor_to_host(yt, t, sizeof(float) * (size_t)(b * s * f)), TFL_OK);
        bool differs = false;
        for (int i = 0; i < b * s * f; i++) differs |= a[i] != t[i];
        assert_true(differs);
        tfl_layer_free(l);
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    }
}

static void test_shapes_and_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *l = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_MULTI_HEAD_ATTENTION,
                                                        .num_heads = 2, .key_dim = 4,
                                                        .no_bias = true});
    assert_non_null(l);
    int64_t out[TFL_MAX_RANK];
    assert_int_equal(tfl_layer_output_shape(l, 3, (int64_t[]){-1, 7, 6}, out), 3);
    assert_true(out[0] == -1 && out[1] == 7 && out[2] == 6);
    assert_int_equal(tfl_layer_output_shape(l, 2, (int64_t[]){3, 6}, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "multi_head_attention: MultiHeadAttention "
                      "expects an input of rank 3 (batch, sequence, features), got shape (3, 6)");
    assert_int_equal(tfl_layer_build(l, 3, (int64_t[]){-1, 7, 6}), TFL_OK);
    /* without biases: the four kernels */
    assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, NULL, 0), 4);
    assert_int_equal(tfl_layer_param_count(l, TFL_VARS_ALL), 3 * 6 * 2 * 4 + 2 * 4 * 6);
    assert_int_equal(tfl_layer_output_shape(l, 3, (int64_t[]){-1, 7, 5}, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "multi_head_attention: expected the input's "
                      "last dimension 6 (the layer was built for it), got 5");
    tfl_layer_free(l);
    /* key_dim 0: features / num_heads, which must divide them */
    l = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_MULTI_HEAD_ATTENTION,
                                             .num_heads = 4});
    assert_non_null(l);
    assert_int_equal(tfl_layer_build(l, 3, (int64_t[]){-1, 5, 6}), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "multi_head_attention: num_heads 4 does not "
                      "divide the input's 6 features (each head takes features / num_heads); "
                      "give key_dim");
    assert_int_equal(tfl_layer_build(l, 3, (int64_t[]){-1, 5, 8}), TFL_OK);
    tfl_tensor *v[8];
    assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, v, 8), 8);
    assert_int_equal(tfl_tensor_shape(v[0])[2], 2); /* query/kernel (8, 4, 2) */
    assert_int_equal(tfl_tensor_shape(v[6])[1], 2); /* attention_output/kernel (4, 2, 8) */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){2, 5, 8});
    tfl_tensor *y = tfl_layer_call(l, x, false);
    assert_non_null(y);
    assert_int_equal(tfl_tensor_shape(y)[2], 8);
    tfl_frame_pop(ctx);
    tfl_layer_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matches_torch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shapes_and_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
