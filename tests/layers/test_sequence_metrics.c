/* test_sequence_metrics.c: a model with a label per position (logits (b, s, C), labels (b, s),
 * as next-token training on a text dataset has them): evaluate's loss is the mean over positions of the
 * cross-entropy and its accuracy the fraction of positions right, both computed here by hand
 * from known weights; fit's epoch figures (a learning rate of 0 keeps the weights) are the
 * same means, not sums over the positions of an example. */
#include "test_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { S = 3, C = 5 };

static void test_per_position_means(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    /* windows of S next-token pairs over a 4-letter text: labels (b, S) */
    char path[] = "/tmp/tfl-seq-metrics-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "abcadbcdabdcbadcabcdbaccdbabdcab\n"; /* 5 distinct bytes */
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    tfl_dataset *ds = tfl_dataset_from_text(
        ctx, path, &(tfl_text_opts){.context_length = S, .tokens = TFL_TEXT_CHARS});
    assert_non_null(ds);
    assert_int_equal(tfl_dataset_text_vocab(ds, NULL), C);
    int32_t x[64 * S], y[64 * S];
    int n = 0; /* every window, read once through batches of one */
    assert_int_equal(tfl_dataset_batch(ds, 1, NULL), TFL_OK);
    for (;;) {
        assert_int_equal(tfl_frame_push(ctx), TFL_OK);
        tfl_tensor *bx, *by;
        tfl_status st = tfl_dataset_next(ds, &bx, &by);
        if (st == TFL_OK) {
            assert_true(n < 64);
            assert_int_equal(tfl_tensor_to_host(bx, x + n * S, sizeof(int32_t) * S), TFL_OK);
            assert_int_equal(tfl_tensor_to_host(by, y + n * S, sizeof(int32_t) * S), TFL_OK);
            n++;
        }
        assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
        if (st != TFL_OK) {
            assert_int_equal(st, TFL_OUT_OF_RANGE);
            break;
        }
    }
    assert_true(n >= 4);
    float table[C * C]; /* row t: the logits of token t */
    for (int i = 0; i < C * C; i++) table[i] = (float)((i * 37) % 11) / 4.0f - 1.0f;
    /* by hand: the mean cross-entropy and the fraction of positions right */
    double want_loss = 0, want_acc = 0;
    for (int i = 0; i < n * S; i++) {
        const float *row = table + x[i] * C;
        double mx = row[0], z = 0;
        int best = 0;
        for (int c = 1; c < C; c++) {
            if (row[c] > mx) mx = row[c];
            if (row[c] > row[best]) best = c;
        }
        for (int c = 0; c < C; c++) z += exp(row[c] - mx);
        want_loss += mx + log(z) - row[y[i]];
        want_acc += best == y[i];
    }
    want_loss /= n * S, want_acc /= n * S;
    tfl_model *m = tfl_model_new(ctx, "per_position");
    assert_non_null(tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_EMBEDDING, .units = C,
                                                       .input_dim = C}));
    assert_int_equal(tfl_model_build(m, 2, (int64_t[]){-1, S}), TFL_OK);
    tfl_tensor *v[1];
    assert_int_equal(tfl_model_variables(m, TFL_VARS_ALL, v, 1), 1);
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    assert_int_equal(tfl_variable_assign(v[0], tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2,
                                                              (int64_t[]){C, C}, table)),
                     TFL_OK);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_optimizer_opts oo = tfl_optimizer_defaults(TFL_OPTIMIZER_SGD, TFL_FORMULA_DEFAULT);
    oo.learning_rate = 0; /* the weights stay: fit's figures are evaluate's */
    tfl_optimizer *opt = tfl_optimizer_new(ctx, &oo);
    assert_non_null(opt);
    assert_int_equal(tfl_model_compile(m, opt, TFL_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                       TFL_METRIC_ACCURACY),
                     TFL_OK);
    double loss = NAN, acc = NAN;
    for (int batch = 3; batch <= 4; batch++) { /* last batches of several sizes */
        assert_int_equal(tfl_model_evaluate(m, ds, batch, &loss, &acc), TFL_OK);
        assert_true(fabs(loss - want_loss) < 1e-5);
        assert_true(fabs(acc - want_acc) < 1e-12);
    }
    assert_true(want_acc > 0 && want_acc < 1); /* the check is not vacuous */
    tfl_epoch_logs lg[1];
    tfl_history h = {lg, 1, 0};
    assert_int_equal(tfl_model_fit(m, ds, &(tfl_fit_opts){.epochs = 1, .batch_size = 4}, &h),
                     TFL_OK);
    assert_true(fabs(lg[0].loss - want_loss) < 1e-5);
    assert_true(fabs(lg[0].accuracy - want_acc) < 1e-12);
    assert_int_equal(lg[0].samples, n);
    tfl_model_free(m);
    tfl_optimizer_free(opt);
    tfl_dataset_free(ds);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_per_position_means, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
