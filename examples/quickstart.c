/*
 * examples/quickstart.c: a first walk through tapeflow, following TensorFlow's variables
 * guide (shared/seeds 000 and 002) cell by cell for what exists so far: tensors and their
 * dtypes and shapes, elementwise ops, argmax, reshape, the shape-mismatch error, the CPU:0
 * matmul, and a GPU:0 scope that falls back to the CPU with soft placement (and fails
 * with it off). Variables join when their issue lands. `make train` runs it.
 */
#include <tapeflow/tapeflow.h>

#include <stdio.h>

static void show(const char *label, const tfl_tensor *t)
{
    char buf[512];
    if (!t) {
        printf("%s<error>\n", label);
        return;
    }
    tfl_tensor_format(t, buf, sizeof buf, NULL);
    printf("%s%s\n", label, buf);
}

static void print_log(void *user, tfl_log_level level, const char *message)
{
    (void)user;
    (void)level;
    printf("  [log] %s\n", message);
}

int main(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) {
        fprintf(stderr, "quickstart: cannot create a context: %s\n", tfl_status_name(st));
        return 1;
    }
    tfl_frame_push(ctx); /* everything below is released by the pop at the end */

    puts("== Tensors have a dtype and a shape, inferred from what they are made of ==");
    int64_t s22[] = {2, 2}, s4[] = {4}, s2[] = {2};
    tfl_tensor *t = tfl_scalar_i32(ctx, 5);
    tfl_tensor *m = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 2, s22, (int32_t[]){2, 3, 4, 5});
    tfl_tensor *b = tfl_tensor_new(ctx, TFL_DTYPE_BOOL, 1, s4, (uint8_t[]){0, 1, 0, 1});
    tfl_tensor *c = tfl_tensor_new(ctx, TFL_DTYPE_COMPLEX64, 1, s2, (float[]){5, 4, 6, 5});
    show("tensor:   ", t);
    show("matrix:   ", m);
    show("bool:     ", b);
    show("complex:  ", c);
    printf("Shape: (%lld, %lld)  Dtype: %s\n", (long long)tfl_tensor_dim(m, 0),
           (long long)tfl_tensor_dim(m, 1), tfl_dtype_name(tfl_tensor_dtype(m)));

    puts("\n== Ops: argmax, a reshape that makes a new tensor, elementwise math ==");
    show("Index of highest value: ", tfl_argmax(ctx, m, 0));
    show("Copying and reshaping:  ", tfl_reshape(ctx, m, 2, (int64_t[]){1, 4}));
    tfl_tensor *x = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, s22, (float[]){1, 2, 3, 4});
    show("x + x:                  ", tfl_add(ctx, x, x));
    show("x * [10, 100] (broadcast): ",
         tfl_mul(ctx, x, tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, s2, (float[]){10, 100})));
    tfl_tensor *a2 = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, s2, (int32_t[]){2, 3});
    tfl_tensor *b2 = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, s2, (int32_t[]){2, 4});
    show("[2, 3] == [2, 4]:        ", tfl_equal(ctx, a2, b2));

    puts("\n== Errors never abort: a shape mismatch is kept in the context ==");
    tfl_tensor *three = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){3}, (int32_t[]){1, 2, 7});
    if (!tfl_add(ctx, a2, three)) {
        tfl_error e = tfl_ctx_error(ctx);
        printf("%s: %s\n", tfl_status_name(e.code), e.message);
        tfl_ctx_clear_error(ctx);
    }

    puts("\n== Placement: with tf.device('CPU:0') ==");
    tfl_ctx_set_logger(ctx, print_log, NULL, TFL_LOG_INFO);
    tfl_ctx_set_log_placement(ctx, true);
    int64_t s23[] = {2, 3}, s32[] = {3, 2};
    tfl_device_scope_push(ctx, "CPU:0");
    tfl_tensor *ma = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, s23, (float[]){1, 2, 3, 4, 5, 6});
    tfl_tensor *mb = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, s32, (float[]){1, 2, 3, 4, 5, 6});
    show("", tfl_matmul(ctx, ma, mb, 0));
    tfl_device_scope_pop(ctx);

    printf("\n== with tf.device('GPU:0'): %d device(s) here, soft placement on ==\n",
           tfl_device_count(ctx));
    tfl_device_scope_push(ctx, "GPU:0");
    show("", tfl_matmul(ctx, ma, mb, 0));
    puts("-- and with soft placement off:");
    tfl_ctx_set_soft_placement(ctx, false);
    if (!tfl_matmul(ctx, ma, mb, 0)) {
        tfl_error e = tfl_ctx_error(ctx);
        printf("%s: %s\n", tfl_status_name(e.code), e.message);
        tfl_ctx_clear_error(ctx);
    }
    tfl_ctx_set_soft_placement(ctx, true);
    tfl_device_scope_pop(ctx);
    tfl_ctx_set_log_placement(ctx, false);

    tfl_frame_pop(ctx);
    st = tfl_ctx_status(ctx);
    if (st != TFL_OK) fprintf(stderr, "quickstart: %s\n", tfl_ctx_error(ctx).message);
    tfl_ctx_free(ctx);
    return st == TFL_OK ? 0 : 1;
}
