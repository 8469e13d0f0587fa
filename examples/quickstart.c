/*
 * examples/quickstart.c: a first walk through tapeflow, following TensorFlow's variables
 * guide (shared/seeds 000 and 002, with a little of the TF1 guide, 004) cell by cell, and
 * printing what the notebooks print: variables of several dtypes, shapes and dtypes, a
 * variable used as a tensor, assign / assign_add / assign_sub and the shape-mismatch error,
 * copies that own their memory, names, a non-trainable step counter, placement on CPU:0,
 * a GPU:0 scope with soft placement on and off, and get_variable with scopes.
 *
 * Each section starts with "== <seed>.<cell> ... ==", the key of the matching entry in
 * tests/reference/fixtures/seeds_tf.json (TensorFlow's own results), so the test
 * tests/examples/test_quickstart.c can check every printed value against TensorFlow's.
 * `make train` runs it (until the training issue gives it a real model to train).
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

/* Prints and clears the error the context keeps (the C form of the seeds' `except`). */
static void show_error(tfl_ctx *ctx)
{
    tfl_error e = tfl_ctx_error(ctx);
    printf("%s: %s\n", tfl_status_name(e.code), e.message);
    tfl_ctx_clear_error(ctx);
}

static void print_log(void *user, tfl_log_level level, const char *message)
{
    (void)user;
    if (level == TFL_LOG_INFO) printf("  [log] %s\n", message); /* errors are printed by us */
}

static tfl_tensor *f32(tfl_ctx *ctx, int rank, const int64_t *shape, const float *v)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, v);
}

static tfl_tensor *i32(tfl_ctx *ctx, int rank, const int64_t *shape, const int32_t *v)
{
    return tfl_tensor_new(ctx, TFL_DTYPE_INT32, rank, shape, v);
}

/* Variables are the caller's (frames never own them): a tiny list to release at the end. */
static tfl_tensor *owned[64];
static int n_owned;
static tfl_tensor *own(tfl_tensor *v)
{
    if (v && n_owned < 64) owned[n_owned++] = v;
    return v;
}

int main(void)
{
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.log_fn = print_log, .log_level = TFL_LOG_INFO}, &st);
    if (!ctx) {
        fprintf(stderr, "quickstart: cannot create a context: %s\n", tfl_status_name(st));
        return 1;
    }
    tfl_frame_push(ctx); /* every temporary tensor below is released by the pop at the end */
    int64_t s2[] = {2}, s3[] = {3}, s4[] = {4}, s22[] = {2, 2}, s23[] = {2, 3}, s32[] = {3, 2},
            s13[] = {1, 3};

    puts("== 002.create_variable: a variable takes the dtype of its initial value ==");
    tfl_ctx_set_log_placement(ctx, true); /* the seed's tf.debugging.set_log_device_placement */
    tfl_tensor *my_tensor = f32(ctx, 2, s22, (float[]){1, 2, 3, 4});
    tfl_tensor *my_variable = own(tfl_variable_new(ctx, my_tensor, NULL));
    tfl_tensor *bool_variable = own(tfl_variable_new(
        ctx, tfl_tensor_new(ctx, TFL_DTYPE_BOOL, 1, s4, (uint8_t[]){0, 0, 0, 1}), NULL));
    tfl_tensor *complex_variable = own(tfl_variable_new(
        ctx, tfl_tensor_new(ctx, TFL_DTYPE_COMPLEX128, 1, s2, (double[]){5, 4, 6, 1}), NULL));
    tfl_ctx_set_log_placement(ctx, false);
    show("my_variable: ", my_variable);
    show("bool_variable: ", bool_variable);
    show("complex_variable: ", complex_variable);

    puts("\n== 002.shape_dtype_numpy: shape, dtype and values ==");
    printf("Shape: (%lld, %lld)\n", (long long)tfl_tensor_dim(my_variable, 0),
           (long long)tfl_tensor_dim(my_variable, 1));
    printf("DType: %s\n", tfl_dtype_name(tfl_tensor_dtype(my_variable)));
    float host[4];
    tfl_tensor_to_host(my_variable, host, sizeof host);
    printf("As host array: [%g, %g, %g, %g]\n", host[0], host[1], host[2], host[3]);

    puts("\n== 002.as_tensor_argmax_reshape: a variable acts like a tensor ==");
    show("A variable: ", my_variable);
    show("Viewed as a tensor: ", tfl_variable_read(my_variable));
    show("Index of highest value: ", tfl_argmax(ctx, my_variable, 0));
    show("Copying and reshaping: ", tfl_reshape(ctx, my_variable, 2, (int64_t[]){1, 4}));
    show("The variable is unchanged: ", my_variable);

    puts("\n== 002.assign_shape_mismatch: assign keeps the dtype and the shape ==");
    tfl_tensor *a = own(tfl_variable_new(ctx, f32(ctx, 1, s2, (float[]){2, 3}), NULL));
    const void *memory = tfl_tensor_data_ptr(a);
    tfl_variable_assign(a, i32(ctx, 1, s2, (int32_t[]){1, 2})); /* int32 -> float32 */
    if (tfl_variable_assign(a, f32(ctx, 1, s3, (float[]){1, 2, 3})) != TFL_OK) show_error(ctx);
    show("a: ", a);
    printf("assign reused the variable's memory: %s\n",
           tfl_tensor_data_ptr(a) == memory ? "yes" : "no");

    puts("\n== 002.tensor_has_no_assign: a tensor is immutable ==");
    tfl_tensor *aa = f32(ctx, 1, s2, (float[]){1, 2});
    if (tfl_variable_assign(aa, f32(ctx, 1, s2, (float[]){2, 1})) != TFL_OK) show_error(ctx);

    puts("\n== 002.copy_and_assign_ops: a variable made from a variable owns a copy ==");
    a = own(tfl_variable_new(ctx, f32(ctx, 1, s2, (float[]){2, 3}), NULL));
    tfl_tensor *b = own(tfl_variable_new(ctx, a, NULL));
    tfl_variable_assign(a, f32(ctx, 1, s2, (float[]){5, 6}));
    show("a: ", a);
    show("b: ", b);
    tfl_variable_assign_add(a, f32(ctx, 1, s2, (float[]){2, 3}));
    show("assign_add: ", a);
    tfl_variable_assign_sub(a, f32(ctx, 1, s2, (float[]){7, 9}));
    show("assign_sub: ", a);

    puts("\n== 000.copy_and_assign_ops: the same with int32 ==");
    a = own(tfl_variable_new(ctx, i32(ctx, 1, s2, (int32_t[]){4, 5}), NULL));
    b = own(tfl_variable_new(ctx, a, NULL));
    tfl_variable_assign(a, i32(ctx, 1, s2, (int32_t[]){2, 3}));
    show("a: ", a);
    show("b: ", b);
    tfl_variable_assign_add(a, i32(ctx, 1, s2, (int32_t[]){2, 3}));
    show("assign_add: ", a);
    tfl_variable_assign_sub(a, i32(ctx, 1, s2, (int32_t[]){4, 6}));
    show("assign_sub: ", a);

    puts("\n== 002.same_name: two variables may share a name ==");
    a = own(tfl_variable_new(ctx, my_tensor, &(tfl_variable_opts){.name = "Mark"}));
    b = own(tfl_variable_new(ctx, tfl_add(ctx, my_tensor, tfl_scalar_f32(ctx, 1)),
                             &(tfl_variable_opts){.name = "Mark"}));
    show("a: ", a);
    show("b: ", b);
    show("a == b: ", tfl_equal(ctx, a, b));

    puts("\n== 002.trainable_false: a step counter needs no gradient ==");
    tfl_tensor *step_counter = own(tfl_variable_new(ctx, tfl_scalar_i32(ctx, 1),
                                                    &(tfl_variable_opts){.flags = TFL_VAR_NOT_TRAINABLE}));
    show("step_counter: ", step_counter);
    printf("trainable: %s\n", tfl_variable_trainable(step_counter) ? "true" : "false");

    puts("\n== 000.named_scalar: a named float32 scalar, assigned, added to, subtracted from ==");
    tfl_tensor *x = own(tfl_variable_new(ctx, tfl_scalar_f32(ctx, 2.0f),
                                         &(tfl_variable_opts){.name = "my_variable"}));
    show("x: ", x);
    tfl_variable_assign(x, tfl_scalar_f32(ctx, 45.2f));
    show("assign(45.2): ", x);
    tfl_variable_assign_add(x, tfl_scalar_f32(ctx, 4.0f));
    show("assign_add(4.0): ", x);
    tfl_variable_assign_sub(x, tfl_scalar_i32(ctx, 2)); /* an int converts to float32 */
    show("assign_sub(2): ", x);

    puts("\n== 000.add: variables in elementwise ops give tensors ==");
    a = own(tfl_variable_new(ctx, i32(ctx, 1, s3, (int32_t[]){1, 2, 3}), NULL));
    b = own(tfl_variable_new(ctx, i32(ctx, 1, s3, (int32_t[]){1, 1, 1}), NULL));
    show("C: ", tfl_add(ctx, a, b));
    show("D: ", tfl_mul(ctx, a, b));
    tfl_tensor *e = own(tfl_variable_new(ctx, f32(ctx, 1, s3, (float[]){3, 4, 5}), NULL));
    show("B: ", tfl_exp(ctx, e));

    puts("\n== 002.cpu_placement_matmul: with tf.device('CPU:0') ==");
    tfl_ctx_set_log_placement(ctx, true);
    tfl_device_scope_push(ctx, "CPU:0");
    a = own(tfl_variable_new(ctx, f32(ctx, 2, s23, (float[]){1, 2, 3, 4, 5, 6}), NULL));
    tfl_tensor *c = tfl_matmul(ctx, a, f32(ctx, 2, s32, (float[]){1, 2, 3, 4, 5, 6}), 0);
    tfl_device_scope_pop(ctx);
    show("c: ", c);

    printf("\n== 002.gpu_hard_placement_error: tf.device('GPU:0') with %d device(s) here and "
           "soft placement off ==\n", tfl_device_count(ctx));
    tfl_ctx_set_soft_placement(ctx, false);
    tfl_device_scope_push(ctx, "GPU:0");
    if (!tfl_variable_new(ctx, my_tensor, NULL)) show_error(ctx);
    tfl_device_scope_pop(ctx);
    tfl_ctx_set_soft_placement(ctx, true);

    puts("\n== 002.cross_device_mul_soft: variables on CPU:0, a * b under GPU:0, soft placement on ==");
    tfl_device_scope_push(ctx, "CPU:0");
    a = own(tfl_variable_new(ctx, f32(ctx, 2, s23, (float[]){1, 2, 3, 4, 5, 6}), NULL));
    b = own(tfl_variable_new(ctx, f32(ctx, 2, s13, (float[]){1, 2, 3}), NULL));
    tfl_device_scope_pop(ctx);
    tfl_device_scope_push(ctx, "GPU:0");
    tfl_tensor *k = tfl_mul(ctx, a, b);
    tfl_device_scope_pop(ctx);
    tfl_ctx_set_log_placement(ctx, false);
    show("k: ", k);

    puts("\n== 004.variable_scope_names: TF1's get_variable in name scopes ==");
    int64_t kshape[] = {5, 5, 32, 32}, bshape[] = {32};
    tfl_initializer zeros = tfl_init_zeros();
    const char *scopes[] = {"conv1", "conv2"};
    for (int i = 0; i < 2; i++) {
        tfl_name_scope_push(ctx, scopes[i]);
        tfl_tensor *w = own(tfl_get_variable(ctx, "weights", 4, kshape, TFL_DTYPE_FLOAT32, NULL, NULL));
        tfl_tensor *bias = own(tfl_get_variable(ctx, "biases", 1, bshape, TFL_DTYPE_FLOAT32, &zeros, NULL));
        printf("%s %s  %s %s\n", tfl_variable_name(w), tfl_dtype_name(tfl_tensor_dtype(w)),
               tfl_variable_name(bias), tfl_dtype_name(tfl_tensor_dtype(bias)));
        tfl_name_scope_pop(ctx);
    }

    puts("\n== 004.conv_relu_twice_error: get_variable twice in one scope ==");
    tfl_name_scope_push(ctx, "conv1");
    if (!tfl_get_variable(ctx, "weights", 4, kshape, TFL_DTYPE_FLOAT32, NULL, NULL)) show_error(ctx);
    tfl_name_scope_pop(ctx);

    puts("\n== 004.scope_reuse_true: reuse=TFL_REUSE_TRUE shares the variable ==");
    tfl_name_scope_push_reuse(ctx, "conv1", TFL_REUSE_TRUE);
    tfl_tensor *again = own(tfl_get_variable(ctx, "weights", 4, kshape, TFL_DTYPE_FLOAT32, NULL, NULL));
    tfl_name_scope_pop(ctx);
    printf("shared: %s\n", again ? tfl_variable_name(again) : "<error>");

    puts("\n== collections: where the variables above are listed ==");
    printf("global: %lld, trainable: %lld (the step counter is not trainable)\n",
           (long long)tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0),
           (long long)tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0));

    tfl_frame_pop(ctx);
    for (int i = 0; i < n_owned; i++) tfl_tensor_release(owned[i]);
    st = tfl_ctx_status(ctx);
    if (st != TFL_OK) fprintf(stderr, "quickstart: %s\n", tfl_ctx_error(ctx).message);
    tfl_ctx_free(ctx);
    return st == TFL_OK ? 0 : 1;
}
