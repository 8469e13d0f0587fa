/* test_variable_fixtures_tf1.c: tapeflow's variables checked against what TensorFlow 2.21 did
 * when it ran the seed guides: tests/reference/fixtures/seeds_tf.json, written by
 * tests/reference/seeds_tf.py (see tests/reference/README.md).
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
 * This file: seed 004 (TensorFlow 1 style: get_variable, collections, initialization,
 * variable scopes and sharing); seeds 000, 002 and 003 are in test_variable_fixtures_tf2.c
 * and test_variable_fixtures_tf2_placement.c. The shared helpers are in seeds_fixture.h.
 *
 * Not checked here, because they are about Python rather than variables:
 *  - 004.replica_device_setter (tf.train.replica_device_setter, parameter servers), the
 *    device strings graph mode keeps as written (004.device_gpu1's "device"), the
 *    ResourceVariable.initialized_value() NotImplementedError and TF2 control flow
 *    (004.initialized_value: the TF1 control-flow values are checked), the
 *    ResourceVariable "Could not find variable" wording (004.read_uninitialized_error: the
 *    RefVariable wording the TF1 guide shows is checked), graph-mode uniquified tf.Variable
 *    names (004.graph_variable_names: tapeflow keeps eager mode's duplicate names, see
 *    same_name in test_variable_fixtures_tf2.c; the scoped names are checked), graph tensor
 *    names ("add:0", "Relu:0"), collection key listings (004.custom_collection's all_keys: no
 *    such API);
 *  - the conv2d/relu outputs of the 004 conv_relu cells (first_output, output*): the
 *    framework has no conv2d op yet; the variables those cells create are checked.
 */
#include "seeds_fixture.h"

/* ---- seed 004: get_variable, collections, initialization ------------------------------------ */

static void test_004_get_variable_default(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.get_variable_default", "");
    const cJSON *d = jget(r, "my_variable");
    int64_t shape[TFL_MAX_RANK];
    int rank = json_dims(jget(d, "shape"), shape);
    tfl_tensor *v = GETVAR(ctx, "my_variable", rank, shape, TFL_DTYPE_INVALID, NULL, NULL);
    /* name, dtype float32, shape, trainable; the values are TensorFlow's own RNG stream */
    EXPECT_META(v, d);
    double fan_in = 0.0, fan_out = 0.0;
    OK(ctx, tfl_compute_fans(rank, shape, &fan_in, &fan_out));
    double limit = jnum(r, "glorot_limit");
    assert_true(fabs(sqrt(6.0 / (fan_in + fan_out)) - limit) <= 1e-12 * limit);
    assert_true(jbool(r, "within_limit"));
    float vals[64];
    int64_t n = tfl_tensor_numel(v);
    assert_true(n <= 64);
    OK(ctx, tfl_tensor_to_host(v, vals, (size_t)n * sizeof(float)));
    bool varied = false;
    for (int64_t i = 0; i < n; i++) {
        assert_true(fabs((double)vals[i]) <= (double)(float)limit);
        if (vals[i] != vals[0]) varied = true;
    }
    assert_true(varied);
    EXPECT_COLLECTIONS(ctx, jget(r, "collections"));
    tfl_tensor_release(v);
}

static void test_004_get_variable_int_zeros(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v = GETVAR(ctx, "my_int_variable", 3, S(1, 2, 3), TFL_DTYPE_INT32, &zeros, NULL);
    EXPECT_DESC(v, res("004.get_variable_int_zeros", "my_int_variable"));
    tfl_tensor_release(v);
}

static void test_004_get_variable_from_tensor(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *t = MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(23, 42));
    tfl_initializer init = tfl_init_tensor(t);
    /* rank -1: the shape comes from the initializer */
    tfl_tensor *v = GETVAR(ctx, "other_variable", -1, NULL, TFL_DTYPE_INT32, &init, NULL);
    tfl_tensor_release(t);
    EXPECT_DESC(v, res("004.get_variable_from_tensor", "other_variable"));
    tfl_tensor_release(v);
}

static void test_004_get_variable_tensor_with_shape(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *err = res("004.get_variable_tensor_with_shape", "error/error");
    tfl_tensor *t = MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(23, 42));
    tfl_initializer init = tfl_init_tensor(t);
    /* TensorFlow refuses any shape with a constant initializer; tapeflow (its header) refuses
     * a shape that differs from the constant's, with TensorFlow's message */
    assert_null(tfl_get_variable(ctx, "other_variable", 1, S(3), TFL_DTYPE_INT32, &init, NULL));
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                jstr(err, "message"));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
    /* and takes the constant's own shape, as rank -1 does */
    tfl_tensor *v = GETVAR(ctx, "other_variable", 1, S(2), TFL_DTYPE_INT32, &init, NULL);
    EXPECT_DESC(v, res("004.get_variable_from_tensor", "other_variable"));
    tfl_tensor_release(v);
    tfl_tensor_release(t);
}

static const char *const local_only[] = {TFL_LOCAL_VARIABLES};

static void test_004_local_collection(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.local_collection", "");
    tfl_variable_opts o = {.collections = local_only, .n_collections = 1};
    tfl_tensor *v = GETVAR(ctx, "my_local", 0, S(0), TFL_DTYPE_INVALID, NULL, &o);
    EXPECT_DESC(v, jget(r, "my_local"));
    EXPECT_COLLECTIONS(ctx, jget(r, "collections"));
    tfl_tensor_release(v);
}

static void test_004_non_trainable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.non_trainable", "");
    tfl_variable_opts o = {.flags = TFL_VAR_NOT_TRAINABLE};
    tfl_tensor *v = GETVAR(ctx, "my_non_trainable", 0, S(0), TFL_DTYPE_INVALID, NULL, &o);
    EXPECT_DESC(v, jget(r, "my_non_trainable"));
    EXPECT_COLLECTIONS(ctx, jget(r, "collections"));
    tfl_tensor_release(v);
}

static void test_004_custom_collection(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.custom_collection", "");
    tfl_variable_opts o = {.collections = local_only, .n_collections = 1};
    tfl_tensor *my_local = GETVAR(ctx, "my_local", 0, S(0), TFL_DTYPE_INVALID, NULL, &o);
    EXPECT_COLLECTION(ctx, "my_collection_name", jget(r, "before"));
    OK(ctx, tfl_collection_add(ctx, "my_collection_name", my_local));
    EXPECT_COLLECTION(ctx, "my_collection_name", jget(r, "after"));
    OK(ctx, tfl_collection_add(ctx, "my_collection_name", my_local));
    EXPECT_COLLECTION(ctx, "my_collection_name", jget(r, "after_adding_twice"));
    tfl_tensor_release(my_local);
    /* the collection did not keep it alive */
    assert_int_equal(tfl_collection_get(ctx, "my_collection_name", NULL, 0), 0);
}

/* with tf.device('/device:GPU:1'): v = get_variable('v', [1]). TensorFlow fails when it runs
 * the initializer with soft placement off; tapeflow creates and initializes at once, so the
 * same error comes from get_variable (and creates nothing). With soft placement on, v lives
 * on the CPU. */
static void test_004_device_gpu1(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.device_gpu1", "");
    if (has_device(ctx, "GPU:1")) skip();
    const cJSON *err = jget(r, "session_soft_placement_off/error");
    tfl_ctx_set_soft_placement(ctx, false);
    OK(ctx, tfl_device_scope_push(ctx, "/device:GPU:1"));
    assert_null(tfl_get_variable(ctx, "v", 1, S(1), TFL_DTYPE_INVALID, NULL, NULL));
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                "Could not satisfy", "GPU:1", "CPU:0");
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 0);
    tfl_ctx_set_soft_placement(ctx, true);
    tfl_tensor *v = GETVAR(ctx, "v", 1, S(1), TFL_DTYPE_INVALID, NULL, NULL);
    OK(ctx, tfl_device_scope_pop(ctx));
    assert_true(jbool(r, "session_soft_placement_on/ok"));
    int64_t shape[TFL_MAX_RANK];
    int rank = json_dims(jget(r, "session_soft_placement_on/shape"), shape);
    assert_int_equal(tfl_tensor_rank(v), rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(tfl_tensor_shape(v)[i], shape[i]);
    /* name, dtype, shape, trainable; the device string ("/device:GPU:1") is graph mode's,
     * kept as written: tapeflow's variable lives where soft placement put it */
    cJSON *d = cJSON_Duplicate(jget(r, "v"), true);
    assert_non_null(d);
    cJSON_DeleteItemFromObjectCaseSensitive(d, "device");
    EXPECT_META(v, d);
    cJSON_Delete(d);
    assert_string_equal(tfl_tensor_device(v), "CPU:0");
    tfl_tensor_release(v);
}

/* TensorFlow 1 variables are initialized when an initializer runs: TFL_VAR_DEFERRED. */
static const tfl_variable_opts deferred = {.flags = TFL_VAR_DEFERRED};

static void test_004_global_variables_initializer(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.global_variables_initializer", "");
    tfl_initializer ones = tfl_init_ones(), three = tfl_init_constant(3.0),
                    zeros = tfl_init_zeros();
    tfl_variable_opts local = deferred;
    local.collections = local_only;
    local.n_collections = 1;
    tfl_tensor *a = GETVAR(ctx, "a", 1, S(2), TFL_DTYPE_INVALID, &ones, &deferred);
    tfl_tensor *b = GETVAR(ctx, "b", 1, S(2), TFL_DTYPE_INVALID, &three, &deferred);
    tfl_tensor *loc = GETVAR(ctx, "loc", 1, S(2), TFL_DTYPE_INVALID, &zeros, &local);
    assert_int_equal(tfl_report_uninitialized(ctx, NULL, NULL, 0), 3);
    OK(ctx, tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0));
    EXPECT_DESC(a, jget(r, "a"));
    EXPECT_DESC(b, jget(r, "b"));
    EXPECT_UNINITIALIZED(ctx, NULL, jget(r, "still_uninitialized"));
    assert_false(tfl_variable_is_initialized(loc));
    tfl_tensor_release(a);
    tfl_tensor_release(b);
    tfl_tensor_release(loc);
}

static void test_004_run_single_initializer(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.run_single_initializer", "");
    tfl_initializer ones = tfl_init_ones();
    tfl_tensor *my_variable =
        GETVAR(ctx, "my_variable", 1, S(2), TFL_DTYPE_INVALID, &ones, &deferred);
    tfl_tensor *other = GETVAR(ctx, "other", 1, S(2), TFL_DTYPE_INVALID, &ones, &deferred);
    OK(ctx, tfl_variable_initialize(my_variable));
    EXPECT_DESC(my_variable, jget(r, "my_variable"));
    EXPECT_UNINITIALIZED(ctx, NULL, jget(r, "uninitialized_after"));
    tfl_tensor_release(my_variable);
    tfl_tensor_release(other);
}

static void test_004_report_uninitialized(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.report_uninitialized", "");
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v[3];
    v[0] = GETVAR(ctx, "my_variable", 3, S(1, 2, 3), TFL_DTYPE_INVALID, NULL, &deferred);
    v[1] = GETVAR(ctx, "my_int_variable", 3, S(1, 2, 3), TFL_DTYPE_INT32, &zeros, &deferred);
    OK(ctx, tfl_name_scope_push(ctx, "conv1"));
    v[2] = GETVAR(ctx, "weights", 1, S(2), TFL_DTYPE_INVALID, NULL, &deferred);
    OK(ctx, tfl_name_scope_pop(ctx));
    EXPECT_UNINITIALIZED(ctx, NULL, jget(r, "before/values"));
    EXPECT_UNINITIALIZED(ctx, TFL_GLOBAL_VARIABLES, jget(r, "before/values"));
    OK(ctx, tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0));
    EXPECT_UNINITIALIZED(ctx, NULL, jget(r, "after/values"));
    for (int i = 0; i < 3; i++)
        tfl_tensor_release(v[i]);
}

static void test_004_read_uninitialized_error(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.read_uninitialized_error", "");
    tfl_tensor *v = GETVAR(ctx, "v", 1, S(1), TFL_DTYPE_INVALID, NULL, &deferred);
    tfl_tensor *rv = GETVAR(ctx, "r", 1, S(1), TFL_DTYPE_INVALID, NULL, &deferred);
    EXPECT_META(v, jget(r, "v"));
    EXPECT_META(rv, jget(r, "r"));
    /* TF1's wording (RefVariable): "Attempting to use uninitialized value r" */
    const cJSON *err = jget(r, "ref_variable_read/error");
    char frag[128];
    msg_part(jstr(err, "message"), "Attempting to use uninitialized value", NULL, frag,
             sizeof frag);
    assert_null(tfl_variable_read(rv));
    CHECK_ERROR(ctx, expected_code(err, TFL_FAILED_PRECONDITION), jstr(err, "message"), frag);
    /* the resource variable's read fails with the same code (TF2 words it differently) */
    const cJSON *verr = jget(r, "resource_variable_read/error");
    assert_null(tfl_variable_read(v));
    assert_int_equal(tfl_ctx_status(ctx), expected_code(verr, TFL_FAILED_PRECONDITION));
    kept_has(ctx, "Attempting to use uninitialized value v");
    tfl_ctx_clear_error(ctx);
    /* assign_add needs a value to add to (tapeflow's header) */
    tfl_tensor *one = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 1, S(1));
    assert_int_equal(tfl_variable_assign_add(rv, one), TFL_FAILED_PRECONDITION);
    tfl_ctx_clear_error(ctx);
    tfl_tensor_release(one);
    tfl_tensor_release(v);
    tfl_tensor_release(rv);
}

static void test_004_assign_add_session(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.assign_add_session", "");
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v = GETVAR(ctx, "v", 0, S(0), TFL_DTYPE_INVALID, &zeros, &deferred);
    OK(ctx, tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0));
    tfl_tensor *one = tfl_scalar_i32(ctx, 1); /* assign_add(1): a Python int */
    OK(ctx, tfl_variable_assign_add(v, one));
    EXPECT_DESC(v, jget(r, "first_run"));
    OK(ctx, tfl_variable_assign_add(v, one));
    EXPECT_DESC(v, jget(r, "second_run"));
    EXPECT_DESC(v, jget(r, "final"));
    tfl_tensor_release(one);
    tfl_tensor_release(v);
}

static void test_004_read_value_control_deps(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.read_value_control_deps", "");
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v = GETVAR(ctx, "v", 0, S(0), TFL_DTYPE_INVALID, &zeros, &deferred);
    OK(ctx, tfl_variables_initialize(ctx, TFL_GLOBAL_VARIABLES, 0));
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *one = tfl_scalar_f32(ctx, 1.0f);
    OK(ctx, tfl_variable_assign_add(v, one));
    tfl_tensor *w1 = tfl_variable_read(v);
    made_(ctx, w1, "tfl_variable_read", __LINE__);
    EXPECT_DESC(w1, jget(r, "first_run"));
    OK(ctx, tfl_variable_assign_add(v, one));
    tfl_tensor *w2 = tfl_variable_read(v);
    made_(ctx, w2, "tfl_variable_read", __LINE__);
    EXPECT_DESC(w2, jget(r, "second_run"));
    EXPECT_DESC(w1, jget(r, "first_run")); /* a read is a snapshot */
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

static void test_004_use_in_expression(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.use_in_expression", "");
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v = GETVAR(ctx, "v", 0, S(0), TFL_DTYPE_INVALID, &zeros, NULL);
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *w = tfl_add(ctx, v, tfl_scalar_f32(ctx, 1.0f));
    made_(ctx, w, "tfl_add", __LINE__);
    EXPECT_DESC(v, jget(r, "v"));
    EXPECT_DESC(w, jget(r, "w"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

/* w's initial value depends on v: w = get_variable('w', initializer=v + 1). */
static void test_004_initialized_value(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.initialized_value", "control_flow_v1");
    tfl_initializer zeros = tfl_init_zeros();
    tfl_tensor *v = GETVAR(ctx, "v_ref", 0, S(0), TFL_DTYPE_INVALID, &zeros, NULL);
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v1 = tfl_add(ctx, v, tfl_scalar_f32(ctx, 1.0f));
    made_(ctx, v1, "tfl_add", __LINE__);
    tfl_initializer from = tfl_init_tensor(v1);
    tfl_tensor *w = GETVAR(ctx, "w_ref", -1, NULL, TFL_DTYPE_INVALID, &from, NULL);
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_DESC(v, jget(r, "v"));
    EXPECT_DESC(w, jget(r, "w"));
    tfl_tensor_release(v);
    tfl_tensor_release(w);
}

/* ---- seed 004: variable scopes and sharing -------------------------------------------------- */

/* conv_relu's variables: get_variable 'weights' (random_normal) and 'biases' (constant 0.0)
 * with the shapes of the fixture table's first two rows. Returns how many it got (it stops at
 * the first failure, as Python's exception does). */
static int conv_relu_vars(tfl_ctx *ctx, const cJSON *table, tfl_tensor **out)
{
    int64_t ks[TFL_MAX_RANK], bs[TFL_MAX_RANK];
    int kr = json_dims(jget(table, "0/shape"), ks);
    int br = json_dims(jget(table, "1/shape"), bs);
    tfl_initializer normal = tfl_init_random_normal(0.0, 1.0, 0), zero = tfl_init_constant(0.0);
    out[0] = tfl_get_variable(ctx, "weights", kr, ks, TFL_DTYPE_INVALID, &normal, NULL);
    if (!out[0]) return 0;
    out[1] = tfl_get_variable(ctx, "biases", br, bs, TFL_DTYPE_INVALID, &zero, NULL);
    return out[1] ? 2 : 1;
}

/* my_image_filter: conv_relu's variables under scopes conv1 and conv2. */
static void image_filter_vars(tfl_ctx *ctx, const cJSON *table, tfl_tensor **out)
{
    OK(ctx, tfl_name_scope_push(ctx, "conv1"));
    if (conv_relu_vars(ctx, table, out) != 2) made_(ctx, NULL, "conv1 variables", __LINE__);
    OK(ctx, tfl_name_scope_pop(ctx));
    OK(ctx, tfl_name_scope_push(ctx, "conv2"));
    if (conv_relu_vars(ctx, table, out + 2) != 2) made_(ctx, NULL, "conv2 variables", __LINE__);
    OK(ctx, tfl_name_scope_pop(ctx));
}

static void test_004_conv_relu_twice_error(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.conv_relu_twice_error", "");
    const cJSON *table = jget(r, "variables");
    tfl_tensor *first[2], *second[2] = {NULL, NULL};
    assert_int_equal(conv_relu_vars(ctx, table, first), 2);
    assert_int_equal(conv_relu_vars(ctx, table, second), 0); /* "This fails." */
    const cJSON *err = jget(r, "error/error");
    const char *tf = jstr(err, "message");
    char frag[160];
    msg_part(tf, NULL, "set reuse", frag, sizeof frag);
    CHECK_ERROR(ctx, expected_code(err, TFL_ALREADY_EXISTS), tf, frag);
    EXPECT_VAR_TABLE(ctx, table);
    tfl_tensor_release(first[0]);
    tfl_tensor_release(first[1]);
}

static void test_004_variable_scope_names(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *table = res("004.variable_scope_names", "variables");
    tfl_tensor *v[4];
    image_filter_vars(ctx, table, v);
    EXPECT_VAR_TABLE(ctx, table);
    for (int i = 0; i < 4; i++)
        EXPECT_META(v[i], cJSON_GetArrayItem(table, i));
    assert_string_equal(tfl_name_scope(ctx), "");
    for (int i = 0; i < 4; i++)
        tfl_tensor_release(v[i]);
}

/* The second my_image_filter creates nothing and gets the first one's variables. */
static void expect_shared(tfl_ctx *ctx, const cJSON *r, tfl_tensor **v1, tfl_tensor **v2)
{
    for (int i = 0; i < 4; i++)
        assert_ptr_equal(v1[i], v2[i]);
    EXPECT_VAR_TABLE(ctx, jget(r, "variables"));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0),
                     (int64_t)jnum(r, "variable_count"));
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0),
                     (int64_t)jnum(r, "trainable_count"));
    for (int i = 0; i < 4; i++) {
        tfl_tensor_release(v1[i]);
        tfl_tensor_release(v2[i]);
    }
}

static void test_004_scope_reuse_true(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.scope_reuse_true", "");
    tfl_tensor *v1[4], *v2[4];
    OK(ctx, tfl_name_scope_push(ctx, "model"));
    image_filter_vars(ctx, jget(r, "variables"), v1);
    OK(ctx, tfl_name_scope_pop(ctx));
    OK(ctx, tfl_name_scope_push_reuse(ctx, "model", TFL_REUSE_TRUE));
    image_filter_vars(ctx, jget(r, "variables"), v2);
    OK(ctx, tfl_name_scope_pop(ctx));
    expect_shared(ctx, r, v1, v2);
}

static void test_004_scope_reuse_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.scope_reuse_variables", "");
    tfl_tensor *v1[4], *v2[4];
    OK(ctx, tfl_name_scope_push(ctx, "model"));
    image_filter_vars(ctx, jget(r, "variables"), v1);
    OK(ctx, tfl_name_scope_reuse_variables(ctx));
    image_filter_vars(ctx, jget(r, "variables"), v2);
    OK(ctx, tfl_name_scope_pop(ctx));
    expect_shared(ctx, r, v1, v2);
}

static void test_004_scope_from_scope_object(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.scope_from_scope_object", "");
    tfl_tensor *v1[4], *v2[4];
    char scope[256];
    OK(ctx, tfl_name_scope_push(ctx, "model"));
    snprintf(scope, sizeof scope, "%s", tfl_name_scope(ctx)); /* "the scope object" */
    image_filter_vars(ctx, jget(r, "variables"), v1);
    OK(ctx, tfl_name_scope_pop(ctx));
    OK(ctx, tfl_name_scope_push_reuse(ctx, scope, TFL_REUSE_TRUE));
    image_filter_vars(ctx, jget(r, "variables"), v2);
    OK(ctx, tfl_name_scope_pop(ctx));
    expect_shared(ctx, r, v1, v2);
}

static void test_004_get_variable_does_not_exist(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.get_variable_does_not_exist", "");
    OK(ctx, tfl_name_scope_push(ctx, "model"));
    tfl_tensor *w = GETVAR(ctx, "weights", 1, S(2), TFL_DTYPE_INVALID, NULL, NULL);
    OK(ctx, tfl_name_scope_pop(ctx));
    OK(ctx, tfl_name_scope_push_reuse(ctx, "model", TFL_REUSE_TRUE));
    assert_null(tfl_get_variable(ctx, "foo", 1, S(2), TFL_DTYPE_INVALID, NULL, NULL));
    const cJSON *err = jget(r, "error/error");
    const char *tf = jstr(err, "message");
    char frag[160];
    msg_part(tf, NULL, "created with", frag, sizeof frag);
    CHECK_ERROR(ctx, expected_code(err, TFL_NOT_FOUND), tf, frag, "get_variable()",
                "Did you mean to set reuse=");
    tfl_tensor *reused = GETVAR(ctx, "weights", 1, S(2), TFL_DTYPE_INVALID, NULL, NULL);
    OK(ctx, tfl_name_scope_pop(ctx));
    EXPECT_META(reused, jget(r, "reused"));
    assert_ptr_equal(reused, w);
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 1);
    tfl_tensor_release(reused);
    tfl_tensor_release(w);
}

static void test_004_reuse_shape_mismatch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *r = res("004.reuse_shape_mismatch", "");
    OK(ctx, tfl_name_scope_push(ctx, "model"));
    tfl_tensor *w = GETVAR(ctx, "weights", 4, S(5, 5, 32, 32), TFL_DTYPE_INVALID, NULL, NULL);
    OK(ctx, tfl_name_scope_pop(ctx));
    OK(ctx, tfl_name_scope_push_reuse(ctx, "model", TFL_REUSE_TRUE));
    const cJSON *err = jget(r, "shape_error/error");
    assert_null(
        tfl_get_variable(ctx, "weights", 4, S(5, 5, 32, 16), TFL_DTYPE_INVALID, NULL, NULL));
    /* tapeflow's header gives TensorFlow's message word for word */
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"),
                jstr(err, "message"));
    err = jget(r, "dtype_error/error");
    assert_null(
        tfl_get_variable(ctx, "weights", 4, S(5, 5, 32, 32), TFL_DTYPE_FLOAT64, NULL, NULL));
    char frag[160];
    msg_part(jstr(err, "message"), NULL, "dtype float64", frag, sizeof frag);
    CHECK_ERROR(ctx, expected_code(err, TFL_INVALID_ARGUMENT), jstr(err, "message"), frag,
                "found dtype float32");
    OK(ctx, tfl_name_scope_pop(ctx));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 1);
    tfl_tensor_release(w);
}

/* The scoped names of 004.graph_variable_names: a variable named 'v' and a get_variable 'gv'
 * inside scope 's' ("s/v:0", "s/gv:0"). */
static void test_004_graph_variable_names_scoped(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const cJSON *names = res("004.graph_variable_names", "names");
    int n = cJSON_GetArraySize(names);
    assert_true(n >= 2);
    OK(ctx, tfl_name_scope_push(ctx, "s"));
    tfl_tensor *one = tfl_scalar_f32(ctx, 1.0f);
    tfl_tensor *e = NEWVAR(ctx, one, &(tfl_variable_opts){.name = "v"});
    tfl_tensor *f = GETVAR(ctx, "gv", 0, S(0), TFL_DTYPE_INVALID, NULL, NULL);
    OK(ctx, tfl_name_scope_pop(ctx));
    char full[300];
    snprintf(full, sizeof full, "%s:0", tfl_variable_name(e));
    assert_string_equal(full, cJSON_GetArrayItem(names, n - 2)->valuestring);
    snprintf(full, sizeof full, "%s:0", tfl_variable_name(f));
    assert_string_equal(full, cJSON_GetArrayItem(names, n - 1)->valuestring);
    tfl_tensor_release(one);
    tfl_tensor_release(e);
    tfl_tensor_release(f);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_004_get_variable_default),
        T(test_004_get_variable_int_zeros),
        T(test_004_get_variable_from_tensor),
        T(test_004_get_variable_tensor_with_shape),
        T(test_004_local_collection),
        T(test_004_non_trainable),
        T(test_004_custom_collection),
        T(test_004_device_gpu1),
        T(test_004_global_variables_initializer),
        T(test_004_run_single_initializer),
        T(test_004_report_uninitialized),
        T(test_004_read_uninitialized_error),
        T(test_004_assign_add_session),
        T(test_004_read_value_control_deps),
        T(test_004_use_in_expression),
        T(test_004_initialized_value),
        T(test_004_conv_relu_twice_error),
        T(test_004_variable_scope_names),
        T(test_004_scope_reuse_true),
        T(test_004_scope_reuse_variables),
        T(test_004_scope_from_scope_object),
        T(test_004_get_variable_does_not_exist),
        T(test_004_reuse_shape_mismatch),
        T(test_004_graph_variable_names_scoped),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
