/* test_variable_fixtures_tf2_placement.c: tapeflow's variables checked against what
 * TensorFlow 2.21 did when it ran the seed guides: tests/reference/fixtures/seeds_tf.json,
 * written by tests/reference/seeds_tf.py (see tests/reference/README.md).
 *
 * Each test names its fixture entry ("000.create_variable", ...), does in C what the entry's
 * cell did in Python (the inputs are the cell's literals, written here as the cell wrote them)
 * and takes everything it expects from the entry at run time: values, dtypes, shapes, names,
 * trainable flags, devices, collection listings, error codes (TensorFlow's canonical code
 * where the entry records one) and the parts of TensorFlow's error messages tapeflow must
 * repeat. TensorFlow's messages have typos tapeflow fixes ("' Variable:0'", "mismatch.The"),
 * and some name Python things (tf.get_variable(), reuse=True), so messages are compared by
 * fragments that each occur in both.
 *
 * This file: the devices and placement cells of seeds 000, 002 and 003 (TensorFlow 2, eager);
 * the other cells of those seeds are in test_variable_fixtures_tf2.c, seed 004 in
 * test_variable_fixtures_tf1.c. The shared helpers are in seeds_fixture.h.
 *
 * Not checked here, because they are about Python rather than variables:
 *  - reprs and printed text (the "repr"/"printed" fields): NumPy's number formatting.
 * TensorFlow's placement logs name ops tapeflow does not have (_EagerConst), so both logs are
 * compared on the ops named (EXPECT_PLACEMENT in seeds_fixture.h). The cells about a missing
 * GPU:0 (soft placement, the hard placement error) are skipped on a machine that has one.
 */
#include "seeds_fixture.h"

/* ---- devices and placement ------------------------------------------------------------------- */

/* Under CPU:0: a = Variable(a_init) (as float32), b = b_init (as float32), c = a @ b. */
static void run_cpu_matmul(tfl_ctx *ctx, const char *key, tfl_tensor *a_init, tfl_tensor *b_init)
{
    const cJSON *r = res(key, "");
    OK(ctx, tfl_device_scope_push(ctx, "CPU:0"));
    tfl_tensor *a = NEWVAR(ctx, a_init, &(tfl_variable_opts){.dtype = TFL_DTYPE_FLOAT32});
    tfl_tensor *b = tfl_cast(ctx, b_init, TFL_DTYPE_FLOAT32);
    tfl_tensor *c = tfl_matmul(ctx, a, b, 0);
    made_(ctx, c, "tfl_matmul", __LINE__);
    OK(ctx, tfl_device_scope_pop(ctx));
    EXPECT_DESC(a, jget(r, "a"));
    if (jopt(r, "b")) EXPECT_DESC(b, jget(r, "b"));
    EXPECT_DESC(c, jget(r, "c"));
    tfl_tensor_release(a);
}

static void test_000_cpu_placement_matmul(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    run_cpu_matmul(ctx, "000.cpu_placement_matmul",
                   MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)),
                   MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(3, 2), V(1, 2, 3, 4, 5, 6)));
    OK(ctx, tfl_frame_pop(ctx));
}

static void test_002_cpu_placement_matmul(void **state) /* setup_logged */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.cpu_placement_matmul";
    OK(ctx, tfl_frame_push(ctx));
    run_cpu_matmul(ctx, key, MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)),
                   MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(3, 2), V(1, 2, 3, 4, 5, 6)));
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_PLACEMENT(key, "VarHandleOp", "AssignVariableOp", "MatMul");
}

static void test_003_cpu_placement_matmul_colmajor(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    /* R's int arrays, given dtype float32 (Variable converts a, convert_to_tensor b) */
    run_cpu_matmul(ctx, "003.cpu_placement_matmul_colmajor", R_ARRAY(ctx, 2, 3),
                   R_ARRAY(ctx, 3, 2));
    OK(ctx, tfl_frame_pop(ctx));
}

/* Variables made under CPU:0, multiplied under GPU:0 (none here): soft placement runs the
 * product on CPU:0. */
static void run_cross_device_mul(tfl_ctx *ctx, const char *key, tfl_tensor *a_init,
                                 tfl_tensor *b_init)
{
    const cJSON *r = res(key, "");
    tfl_variable_opts o = {.dtype = TFL_DTYPE_FLOAT32};
    OK(ctx, tfl_device_scope_push(ctx, "CPU:0"));
    tfl_tensor *a = NEWVAR(ctx, a_init, &o);
    tfl_tensor *b = NEWVAR(ctx, b_init, &o);
    OK(ctx, tfl_device_scope_pop(ctx));
    OK(ctx, tfl_device_scope_push(ctx, "GPU:0"));
    tfl_tensor *k = tfl_mul(ctx, a, b);
    made_(ctx, k, "tfl_mul under GPU:0", __LINE__);
    OK(ctx, tfl_device_scope_pop(ctx));
    EXPECT_DESC(a, jget(r, "a"));
    EXPECT_DESC(b, jget(r, "b"));
    EXPECT_DESC(k, jget(r, "k"));
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_000_cross_device_mul(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    /* soft placement is on by default, in TensorFlow and in a default tapeflow context */
    assert_true(jbool(res("000.cross_device_mul", ""), "soft_device_placement"));
    if (has_device(ctx, "GPU:0")) skip();
    OK(ctx, tfl_frame_push(ctx));
    run_cross_device_mul(ctx, "000.cross_device_mul",
                         MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)),
                         MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(1, 3), V(1, 2, 3)));
    OK(ctx, tfl_frame_pop(ctx));
}

static void test_002_cross_device_mul_soft(void **state) /* setup_logged */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.cross_device_mul_soft";
    if (has_device(ctx, "GPU:0")) skip();
    tfl_ctx_set_soft_placement(ctx, true);
    OK(ctx, tfl_frame_push(ctx));
    run_cross_device_mul(ctx, key, MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)),
                         MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(1, 3), V(1, 2, 3)));
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_PLACEMENT(key, "VarHandleOp", "AssignVariableOp", "Mul");
}

static void test_003_cross_device_mul_colmajor(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    if (has_device(ctx, "GPU:0")) skip();
    OK(ctx, tfl_frame_push(ctx));
    run_cross_device_mul(ctx, "003.cross_device_mul_colmajor", R_ARRAY(ctx, 2, 3),
                         R_ARRAY(ctx, 1, 3));
    OK(ctx, tfl_frame_pop(ctx));
}

/* The fragments of TensorFlow's "Could not satisfy device specification" error that tapeflow
 * repeats: the phrase, the device asked for, enable_soft_placement=0 and the CPU that exists. */
#define PLACEMENT_FRAGMENTS                                                                        \
    "Could not satisfy device specification", "GPU:0", "enable_soft_placement=0", "CPU:0"

static void test_002_gpu_hard_placement_error(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.gpu_hard_placement_error";
    const cJSON *r = res(key, "");
    if (has_device(ctx, "GPU:0")) skip();
    /* the devices TensorFlow saw: the CPU only */
    const cJSON *devices = jget(r, "devices");
    assert_int_equal(tfl_device_count(ctx), cJSON_GetArraySize(devices));
    for (int i = 0; i < tfl_device_count(ctx); i++)
        assert_string_equal(tfl_device_name(ctx, i),
                            tf_device(cJSON_GetArrayItem(devices, i)->valuestring));
    OK(ctx, tfl_frame_push(ctx));

    /* soft placement, the default: a variable made under GPU:0 lands on CPU:0 */
    assert_true(jbool(r, "default_soft_device_placement"));
    OK(ctx, tfl_device_scope_push(ctx, "GPU:0"));
    tfl_tensor *soft = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_FLOAT32, 1, S(2), V(1, 2)), NULL);
    OK(ctx, tfl_device_scope_pop(ctx));
    EXPECT_DESC(soft, jget(r, "variable_under_gpu0_soft"));

    /* soft placement off: the variable (and a constant) under GPU:0 cannot be made */
    tfl_ctx_set_soft_placement(ctx, false);
    tfl_tensor *init = MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6));
    const cJSON *err = jget(r, "error/error");
    OK(ctx, tfl_device_scope_push(ctx, "GPU:0"));
    assert_null(tfl_variable_new(ctx, init, NULL));
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                PLACEMENT_FRAGMENTS);
    const cJSON *cerr = jget(r, "constant_error/error");
    assert_null(tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, S(2), (const float[]){1.0f, 2.0f}));
    CHECK_ERROR(ctx, expected_code(cerr, TFL_INVALID_ARGUMENT), jstr(cerr, "message"),
                PLACEMENT_FRAGMENTS);
    OK(ctx, tfl_device_scope_pop(ctx));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 1);
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(soft);
}

/* The same with tfl_ctx_opts.strict_placement and the device named in the variable's options. */
static void test_002_gpu_hard_placement_strict_ctx(void **state) /* setup_strict */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *err = res("002.gpu_hard_placement_error", "error/error");
    if (has_device(ctx, "GPU:0")) skip();
    tfl_tensor *init = MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6));
    assert_null(tfl_variable_new(ctx, init, &(tfl_variable_opts){.device = "GPU:0"}));
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                PLACEMENT_FRAGMENTS);
    OK(ctx, tfl_device_scope_push(ctx, "GPU:0"));
    assert_null(tfl_variable_new(ctx, init, NULL));
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                PLACEMENT_FRAGMENTS);
    OK(ctx, tfl_device_scope_pop(ctx));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
    tfl_tensor_release(init);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_000_cpu_placement_matmul),
        T_LOGGED(test_002_cpu_placement_matmul),
        T(test_003_cpu_placement_matmul_colmajor),
        T(test_000_cross_device_mul),
        T_LOGGED(test_002_cross_device_mul_soft),
        T(test_003_cross_device_mul_colmajor),
        T(test_002_gpu_hard_placement_error),
        T_STRICT(test_002_gpu_hard_placement_strict_ctx), /* soft placement off */
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
