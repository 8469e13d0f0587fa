/* test_position_embedding.c: PositionEmbedding, learned positions added to a sequence
 * (KerasHub's PositionEmbedding): y = x + E[0:seq] over the batch, with E (sequence_length,
 * features). Values and gradients checked exactly on known tables (float32 sums of small
 * integers are exact): dx = dy, and dE gets the batch's sum of dy in its first seq rows and
 * nothing below; a shorter sequence uses the table's first rows; shapes, the variable, the
 * errors (a sequence longer than the table, a rank-2 input, another feature count later). */
#include "test_fixture.h"

#include <math.h>

static tfl_layer *position_layer(tfl_ctx *ctx, int64_t length)
{
    tfl_layer *l = tfl_layer_new(
        ctx, &(tfl_layer_spec){.kind = TFL_LAYER_POSITION_EMBEDDING, .sequence_length = length});
    if (!l) print_error("tfl_layer_new: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(l);
    return l;
}

static void to_host(const tfl_tensor *t, float *out, size_t n)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_numel(t), (int64_t)n);
    assert_int_equal(tfl_tensor_to_host(t, out, n * sizeof *out), TFL_OK);
}

static void test_values_and_gradients(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    enum { B = 2, L = 5, F = 3 };
    tfl_layer *l = position_layer(ctx, L);
    assert_int_equal(tfl_layer_build(l, 3, (int64_t[]){-1, L, F}), TFL_OK);
    tfl_tensor *vars[2] = {0};
    assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, vars, 2), 1);
    assert_string_equal(tfl_variable_name(vars[0]), "position_embedding/embeddings");
    assert_int_equal(tfl_tensor_dim(vars[0], 0), L);
    assert_int_equal(tfl_tensor_dim(vars[0], 1), F);
    float table[L * F];
    for (int i = 0; i < L * F; i++) table[i] = (float)(10 * (i / F) + i % F); /* E[p][f] */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_variable_assign(vars[0], tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2,
                                                                 (int64_t[]){L, F}, table)),
                     TFL_OK);
    for (int seq = L; seq >= 2; seq -= 3) { /* the whole table, then its first rows */
        float x[B * L * F], w[B * L * F];
        for (int i = 0; i < B * seq * F; i++) x[i] = (float)(i % 7) - 3, w[i] = (float)(i % 5);
        tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){B, seq, F}, x);
        tfl_tensor *tw = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){B, seq, F}, w);
        tfl_tape *tape = tfl_tape_begin(ctx, 0);
        assert_int_equal(tfl_tape_watch(tape, tx), TFL_OK);
        tfl_tensor *y = tfl_layer_call(l, tx, true);
        assert_non_null(y);
        assert_int_equal(tfl_tensor_rank(y), 3);
        tfl_tensor *loss = tfl_reduce_sum(ctx, tfl_mul(ctx, tw, y), 0, NULL, false);
        const tfl_tensor *src[2] = {tx, vars[0]};
        tfl_tensor *g[2] = {0};
        assert_int_equal(tfl_tape_gradient(tape, loss, 2, src, g, 0), TFL_OK);
        float got[B * L * F], dx[B * L * F], de[L * F];
        to_host(y, got, (size_t)(B * seq * F));
        to_host(g[0], dx, (size_t)(B * seq * F));
        to_host(g[1], de, (size_t)(L * F));
        for (int b = 0; b < B; b++)
            for (int p = 0; p < seq; p++)
                for (int f = 0; f < F; f++) {
                    int i = (b * seq + p) * F + f;
                    assert_true(got[i] == x[i] + table[p * F + f]);
                    assert_true(dx[i] == w[i]);
                }
        for (int p = 0; p < L; p++)
            for (int f = 0; f < F; f++) {
                float want = 0;
                for (int b = 0; b < B && p < seq; b++) want += w[(b * seq + p) * F + f];
                assert_true(de[p * F + f] == want); /* rows past the sequence get nothing */
            }
        tfl_tape_free(tape);
    }
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(l);
}

static void test_shapes_and_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *l = position_layer(ctx, 4);
    int64_t out[TFL_MAX_RANK];
    assert_int_equal(tfl_layer_output_shape(l, 3, (int64_t[]){-1, 4, 6}, out), 3);
    assert_true(out[0] == -1 && out[1] == 4 && out[2] == 6);
    assert_int_equal(tfl_layer_output_shape(l, 3, (int64_t[]){2, 5, 6}, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "position_embedding: a sequence of 5 is longer "
                      "than the layer's sequence_length 4");
    assert_int_equal(tfl_layer_output_shape(l, 2, (int64_t[]){2, 6}, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "position_embedding: PositionEmbedding expects "
                      "an input of rank >= 3 (batch, sequence, features), got shape (2, 6)");
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){1, 3, 6});
    assert_non_null(tfl_layer_call(l, x, false));
    tfl_tensor *x5 = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 3, (int64_t[]){1, 3, 5});
    assert_null(tfl_layer_call(l, x5, false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "position_embedding: expected the input's last "
                      "dimension 6 (the layer was built for it), got 5");
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    assert_int_equal(tfl_layer_param_count(l, TFL_VARS_ALL), 4 * 6);
    tfl_layer_free(l);
    assert_null(tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_POSITION_EMBEDDING,
                                                     .sequence_length = -2}));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_layer_new: PositionEmbedding needs "
                      "sequence_length >= 1, got -2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_values_and_gradients, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shapes_and_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
