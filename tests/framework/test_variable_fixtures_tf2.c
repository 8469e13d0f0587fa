/* test_variable_fixtures_tf2.c: tapeflow's variables checked against what TensorFlow 2.21 did
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
 * This file: seeds 000, 002 and 003 (TensorFlow 2, eager): creating variables, shape, dtype,
 * conversion to a tensor, assign, names, trainable and ops on variables; the placement cells
 * are in test_variable_fixtures_tf2_placement.c, seed 004 in test_variable_fixtures_tf1.c.
 * The shared helpers are in seeds_fixture.h.
 *
 * Not checked here, because they are about Python rather than variables:
 *  - reprs and printed text (000.constant_repr, 002.tensor_repr, 002.variable_repr, the
 *    "repr"/"printed" fields): NumPy's number formatting; the shape= and dtype= parts of a
 *    repr are checked against tfl_tensor_format;
 *  - TensorFlow's _UnreadVariable, the Python object assign* returns (000.assign_add_unread's
 *    "returned", 000.copy_and_assign_ops' "assign_add_returned_later", the
 *    "assign_returned_repr" of 003.assign_cast and 003.copy_and_assign_ops); the variables'
 *    values in those entries are checked;
 *  - Python/NumPy dtype inference with no variable involved (000.add_python_lists,
 *    000.add_numpy_int64, 000.add_constants, 000.tensor_numpy) and Python's positional
 *    argument mix-up (002.positional_second_arg);
 *  - the 003.assign_dtype_probe cases that tell a Python list, a NumPy array and a tf.Tensor
 *    apart (tensor_int32_to_float32, tensor_float64_to_float32, python_float_list_to_int32):
 *    C has only tensors, and tapeflow converts a real value as TensorFlow converts a NumPy
 *    array (the numpy_* cases, checked).
 */
#include "seeds_fixture.h"

/* ---- the fixture file ---------------------------------------------------------------------- */

static void test_fixture_file(void **state)
{
    (void)state;
    assert_string_equal(jstr(g_root, "tf_version"), "2.21.0");
    assert_int_equal(cJSON_GetArraySize(jget(g_root, "entries")), (int)jnum(g_root, "entry_count"));
}

/* ---- seed 000 / 002 / 003: creating variables ---------------------------------------------- */

static void test_000_create_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "000.create_variable";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *tensor = tfl_scalar_i32(ctx, 5);
    EXPECT_DESC(tensor, res(key, "tensor"));
    tfl_tensor *variable = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(2, 3, 4, 5)), NULL);
    tfl_tensor *bool_variable = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_BOOL, 1, S(4), V(0, 1, 0, 1)), NULL);
    tfl_tensor *complex_variable =
        NEWVAR(ctx, MKT(ctx, TFL_DTYPE_COMPLEX128, 1, S(2), V(5, 4, 6, 5)), NULL);
    OK(ctx, tfl_frame_pop(ctx)); /* the initial values go; the variables hold copies */
    EXPECT_DESC(variable, res(key, "variable"));
    EXPECT_DESC(bool_variable, res(key, "bool_variable"));
    EXPECT_DESC(complex_variable, res(key, "complex_variable"));
    tfl_tensor_release(variable);
    tfl_tensor_release(bool_variable);
    tfl_tensor_release(complex_variable);
}

static void test_002_create_variable(void **state) /* setup_logged */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.create_variable";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *my_tensor = MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4));
    tfl_tensor *my_variable = NEWVAR(ctx, my_tensor, NULL);
    tfl_tensor *bool_variable = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_BOOL, 1, S(4), V(0, 0, 0, 1)), NULL);
    tfl_tensor *complex_variable =
        NEWVAR(ctx, MKT(ctx, TFL_DTYPE_COMPLEX128, 1, S(2), V(5, 4, 6, 1)), NULL);
    EXPECT_DESC(my_tensor, res(key, "my_tensor"));
    assert_ptr_not_equal(tfl_tensor_data_ptr(my_variable), tfl_tensor_data_ptr(my_tensor));
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_DESC(my_variable, res(key, "my_variable"));
    EXPECT_DESC(bool_variable, res(key, "bool_variable"));
    EXPECT_DESC(complex_variable, res(key, "complex_variable"));
    EXPECT_PLACEMENT(key, "VarHandleOp", "AssignVariableOp");
    tfl_tensor_release(my_variable);
    tfl_tensor_release(bool_variable);
    tfl_tensor_release(complex_variable);
}

static void test_002_create_from_tensor(void **state) /* setup_logged */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.create_from_tensor";
    tfl_tensor *t = MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4));
    tfl_tensor *v = NEWVAR(ctx, t, NULL);
    tfl_tensor_release(t);
    EXPECT_DESC(v, res(key, "pra_my_variable"));
    EXPECT_PLACEMENT(key, "VarHandleOp", "AssignVariableOp");
    tfl_tensor_release(v);
}

static void test_003_create_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "003.create_variable";
    OK(ctx, tfl_frame_push(ctx));
    /* as_tensor(1:4, "float32", shape = c(2, 2)): an int vector cast, reshaped row-major */
    tfl_tensor *ints = MKT(ctx, TFL_DTYPE_INT32, 1, S(4), V(1, 2, 3, 4));
    tfl_tensor *my_tensor = tfl_reshape(ctx, tfl_cast(ctx, ints, TFL_DTYPE_FLOAT32), 2, S(2, 2));
    made_(ctx, my_tensor, "cast + reshape", __LINE__);
    tfl_tensor *my_variable = NEWVAR(ctx, my_tensor, NULL);
    tfl_tensor *bool_variable = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_BOOL, 1, S(4), V(0, 0, 0, 1)), NULL);
    tfl_tensor *complex_variable =
        NEWVAR(ctx, MKT(ctx, TFL_DTYPE_COMPLEX128, 1, S(2), V(5, 4, 6, 1)), NULL);
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_DESC(my_variable, res(key, "my_variable"));
    EXPECT_DESC(bool_variable, res(key, "bool_variable"));
    EXPECT_DESC(complex_variable, res(key, "complex_variable"));
    tfl_tensor_release(my_variable);
    tfl_tensor_release(bool_variable);
    tfl_tensor_release(complex_variable);
}

static void test_002_nested_list(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_tensor *t = MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(1, 1, 2, 3));
    tfl_tensor *v = NEWVAR(ctx, t, NULL);
    tfl_tensor_release(t);
    EXPECT_DESC(v, res("002.nested_list", "temp_var"));
    tfl_tensor_release(v);
}

/* ---- shape, dtype, conversion to a tensor -------------------------------------------------- */

/* The shape= and dtype= parts of tapeflow's repr against the fixture's TensorShape str
 * ("(2, 2)") and DType name; the rest of a repr is NumPy's printing. */
static void expect_repr_parts(const tfl_tensor *v, const cJSON *shape, const cJSON *dtype)
{
    char text[512], want[96];
    assert_true(tfl_tensor_format(v, text, sizeof text, NULL) > 0);
    snprintf(want, sizeof want, "shape=%s", jstr(shape, "str"));
    assert_has(text, want);
    snprintf(want, sizeof want, "dtype=%s", jstr(dtype, "name"));
    assert_has(text, want);
}

static void expect_shape_dtype(const tfl_tensor *v, const cJSON *shape, const cJSON *dtype)
{
    int64_t dims[TFL_MAX_RANK];
    int rank = json_dims(jget(shape, "shape"), dims);
    assert_int_equal(tfl_tensor_rank(v), rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(tfl_tensor_shape(v)[i], dims[i]);
    assert_string_equal(tfl_dtype_name(tfl_tensor_dtype(v)), jstr(dtype, "name"));
    expect_repr_parts(v, shape, dtype);
}

static void test_000_shape_dtype(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "000.shape_dtype_numpy";
    tfl_tensor *t = MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(2, 3, 4, 5));
    tfl_tensor *v = NEWVAR(ctx, t, NULL);
    tfl_tensor_release(t);
    expect_shape_dtype(v, res(key, "shape"), res(key, "dtype"));
    EXPECT_DESC(v, res(key, "variable"));
    tfl_tensor_release(v);
}

static void test_002_shape_dtype(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.shape_dtype_numpy";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4)), NULL);
    expect_shape_dtype(v, res(key, "shape"), res(key, "dtype"));
    tfl_tensor *as_numpy = tfl_variable_read(v); /* .numpy() */
    made_(ctx, as_numpy, "tfl_variable_read", __LINE__);
    assert_false(tfl_tensor_is_variable(as_numpy));
    EXPECT_DESC(as_numpy, res(key, "numpy"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

static void test_003_shape_dtype(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "003.shape_dtype";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4)), NULL);
    expect_shape_dtype(v, res(key, "shape"), res(key, "dtype"));
    EXPECT_VALUES(v, res(key, "values_row_major"));
    /* R lists the values column-major: the row-major order of the transpose */
    tfl_tensor *tr = tfl_transpose(ctx, v, NULL);
    made_(ctx, tr, "tfl_transpose", __LINE__);
    EXPECT_VALUES(tr, res(key, "values_column_major"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

/* convert_to_tensor, argmax (axis 0) and reshape [1, 4] of a [2, 2] variable; argmax of the
 * variable, or (002) of the tensor it was made from. The reshaped tensor is a new tensor:
 * it is not a variable, and a later assign to the variable changes neither it nor the
 * converted tensor. */
static void run_as_tensor_argmax_reshape(tfl_ctx *ctx, const char *key, tfl_dtype dt,
                                         bool argmax_of_tensor, const double *vals)
{
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *t = MKT(ctx, dt, 2, S(2, 2), vals);
    tfl_tensor *v = NEWVAR(ctx, t, NULL);
    tfl_tensor *as_tensor = tfl_variable_read(v);
    made_(ctx, as_tensor, "tfl_variable_read", __LINE__);
    EXPECT_DESC(as_tensor, res(key, "as_tensor"));
    tfl_tensor *am = tfl_argmax(ctx, argmax_of_tensor ? t : v, 0);
    made_(ctx, am, "tfl_argmax", __LINE__);
    EXPECT_DESC(am, res(key, "argmax"));
    tfl_tensor *reshaped = tfl_reshape(ctx, v, 2, S(1, 4));
    made_(ctx, reshaped, "tfl_reshape", __LINE__);
    EXPECT_DESC(reshaped, res(key, "reshaped"));
    const cJSON *after = jopt(jget(entry(key), "results"), "variable_after");
    if (after) EXPECT_DESC(v, after);
    assert_int_equal(tfl_tensor_rank(v), 2);
    assert_int_equal(tfl_tensor_dim(v, 0), 2);
    assert_int_equal(tfl_tensor_dim(v, 1), 2);
    /* the reshaped and converted tensors keep their values when the variable changes */
    OK(ctx, tfl_variable_assign(v, tfl_zeros(ctx, dt, 2, S(2, 2))));
    EXPECT_DESC(reshaped, res(key, "reshaped"));
    EXPECT_DESC(as_tensor, res(key, "as_tensor"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

static void test_000_as_tensor_argmax_reshape(void **state)
{
    run_as_tensor_argmax_reshape(((fixture *)*state)->ctx, "000.as_tensor_argmax_reshape",
                                 TFL_DTYPE_INT32, false, V(2, 3, 4, 5));
}

static void test_002_as_tensor_argmax_reshape(void **state)
{
    run_as_tensor_argmax_reshape(((fixture *)*state)->ctx, "002.as_tensor_argmax_reshape",
                                 TFL_DTYPE_FLOAT32, true, V(1, 2, 3, 4));
}

static void test_003_as_tensor_argmax_reshape(void **state)
{
    run_as_tensor_argmax_reshape(((fixture *)*state)->ctx, "003.as_tensor_argmax_reshape",
                                 TFL_DTYPE_FLOAT32, false, V(1, 2, 3, 4));
}

static void test_002_constant_from_variable(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(1, 1, 2, 3)), NULL);
    tfl_tensor *c = tfl_identity(ctx, v); /* tf.constant(v): a tensor with v's value */
    made_(ctx, c, "tfl_identity", __LINE__);
    EXPECT_DESC(c, res("002.constant_from_variable", "constant"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

static void test_002_convert_to_tensor(void **state) /* setup_logged */
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.convert_to_tensor";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(1, 1, 2, 3)), NULL);
    tfl_tensor *c = tfl_variable_read(v);
    made_(ctx, c, "tfl_variable_read", __LINE__);
    EXPECT_DESC(c, res(key, "converted"));
    OK(ctx, tfl_frame_pop(ctx));
    EXPECT_PLACEMENT(key, "VarHandleOp", "AssignVariableOp", "ReadVariableOp");
    tfl_tensor_release(v);
}

static void test_002_constant_eq_convert(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 2, S(2, 2), V(1, 1, 2, 3)), NULL);
    tfl_tensor *a = tfl_identity(ctx, v);
    tfl_tensor *b = tfl_variable_read(v);
    tfl_tensor *eq = tfl_equal(ctx, a, b);
    made_(ctx, eq, "tfl_equal", __LINE__);
    EXPECT_DESC(eq, res("002.constant_eq_convert", "eq"));
    /* 002.constant_is_convert: two conversions are two distinct tensors */
    assert_int_equal(a == b, jbool(res("002.constant_is_convert", ""), "is"));
    tfl_tensor *b2 = tfl_variable_read(v);
    made_(ctx, b2, "tfl_variable_read", __LINE__);
    assert_int_equal(b == b2, jbool(res("002.constant_is_convert", ""), "is"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(v);
}

/* ---- assign ---------------------------------------------------------------------------------- */

/* Assigns `value` (of another shape) to v: the fixture's error `err`, v unchanged. The
 * fragments: "Cannot assign value to variable", the name with ":0", "Shape mismatch", both
 * shapes in TensorFlow's words and "are incompatible". tapeflow quotes the name without
 * TensorFlow's stray space. */
static void expect_shape_mismatch_(tfl_ctx *ctx, tfl_tensor *v, const tfl_tensor *value,
                                   const cJSON *err, int line)
{
    const void *before = tfl_tensor_data_ptr(v);
    tfl_status st = tfl_variable_assign(v, value);
    tfl_status want = expected_code(err, TFL_INVALID_ARGUMENT);
    if (st != want) {
        print_error("line %d: assign gave %s, expected %s\n", line, tfl_status_name(st),
                    tfl_status_name(want));
        fail();
    }
    const char *tf = jstr(err, "message");
    char name[300], quoted[300], vshape[64], ashape[64], s1[96], s2[96];
    snprintf(name, sizeof name, "%s:0'", tfl_variable_name(v));
    snprintf(quoted, sizeof quoted, "'%s:0'", tfl_variable_name(v));
    snprintf(s1, sizeof s1, "The variable shape %s", py_shape(v, vshape, sizeof vshape));
    snprintf(s2, sizeof s2, "the assigned value shape %s", py_shape(value, ashape, sizeof ashape));
    kept_has(ctx, quoted);
    check_error_(ctx, want, tf, line, "Cannot assign value to variable", name, "Shape mismatch", s1,
                 s2, "are incompatible", (const char *)NULL);
    assert_ptr_equal(tfl_tensor_data_ptr(v), before);
}
#define EXPECT_SHAPE_MISMATCH(ctx, v, value, err)                                                  \
    expect_shape_mismatch_((ctx), (v), (value), (err), __LINE__)

static void test_000_assign_shape_mismatch(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "000.assign_shape_mismatch";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *a = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(2, 3)), NULL);
    OK(ctx, tfl_variable_assign(a, MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(4, 5))));
    EXPECT_SHAPE_MISMATCH(ctx, a, MKT(ctx, TFL_DTYPE_INT32, 1, S(3), V(1, 2, 7)),
                          res(key, "error/error"));
    EXPECT_DESC(a, res(key, "a"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(a);
}

/* a = Variable([2., 3.]); a.assign([1, 2]) (ints, converted); a.assign([1., 2., 3.]) fails. */
static void run_float_assign_mismatch(tfl_ctx *ctx, const char *key, const char *err_path,
                                      tfl_dtype bad_dtype)
{
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *a = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_FLOAT32, 1, S(2), V(2, 3)), NULL);
    OK(ctx, tfl_variable_assign(a, MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(1, 2))));
    tfl_tensor *bad = MKT(ctx, bad_dtype, 1, S(3), V(1, 2, 3));
    if (err_path) {
        EXPECT_SHAPE_MISMATCH(ctx, a, bad, res(key, err_path));
    } else { /* the entry records only the value after the failed assign */
        assert_int_equal(tfl_variable_assign(a, bad), TFL_INVALID_ARGUMENT);
        tfl_ctx_clear_error(ctx);
    }
    EXPECT_DESC(a, res(key, "a"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(a);
}

static void test_002_assign_shape_mismatch(void **state)
{
    run_float_assign_mismatch(((fixture *)*state)->ctx, "002.assign_shape_mismatch", "error/error",
                              TFL_DTYPE_FLOAT32);
}

static void test_002_value_after_failed_assign(void **state)
{
    run_float_assign_mismatch(((fixture *)*state)->ctx, "002.value_after_failed_assign", NULL,
                              TFL_DTYPE_FLOAT32);
}

static void test_003_assign_cast(void **state)
{
    /* R's c(1.0, 2.0, 3.0) is a double vector */
    run_float_assign_mismatch(((fixture *)*state)->ctx, "003.assign_cast", "error/error",
                              TFL_DTYPE_FLOAT64);
}

static void test_002_tensor_has_no_assign(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "002.tensor_has_no_assign";
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *aa = MKT(ctx, TFL_DTYPE_FLOAT32, 1, S(2), V(1, 2));
    tfl_status st = tfl_variable_assign(aa, MKT(ctx, TFL_DTYPE_FLOAT32, 1, S(2), V(2, 1)));
    assert_int_equal(st, TFL_INVALID_ARGUMENT);
    /* TensorFlow: "... object has no attribute 'assign'"; tapeflow: not a variable */
    kept_has(ctx, "not a variable");
    CHECK_ERROR(ctx, TFL_INVALID_ARGUMENT, jstr(res(key, "error/error"), "message"), "assign");
    float got[2];
    OK(ctx, tfl_tensor_to_host(aa, got, sizeof got));
    assert_true(got[0] == 1.0f && got[1] == 2.0f);
    OK(ctx, tfl_frame_pop(ctx));
}

/* a = Variable(init); b = Variable(a); a.assign(x); a.assign_add(y); a.assign_sub(z): b owns
 * a copy, a's memory is reused by every assign (no snapshot is alive). */
static void run_copy_and_assign(tfl_ctx *ctx, const char *key, tfl_dtype var_dt, tfl_dtype value_dt,
                                const double *init, const double *x, const double *y,
                                const double *z)
{
    const cJSON *r = res(key, "");
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *a = NEWVAR(ctx, MKT(ctx, var_dt, 1, S(2), init), NULL);
    tfl_tensor *b = NEWVAR(ctx, a, NULL);
    assert_true(tfl_tensor_is_variable(b));
    assert_ptr_not_equal(tfl_tensor_data_ptr(a), tfl_tensor_data_ptr(b));
    const void *mem = tfl_tensor_data_ptr(a);
    OK(ctx, tfl_variable_assign(a, MKT(ctx, value_dt, 1, S(2), x)));
    const cJSON *after_assign = jopt(r, "a_after_assign");
    if (after_assign) EXPECT_DESC(a, after_assign);
    EXPECT_DESC(b, jget(r, "b")); /* the copy kept the initial value */
    OK(ctx, tfl_variable_assign_add(a, MKT(ctx, value_dt, 1, S(2), y)));
    EXPECT_DESC(a, jget(r, "assign_add_result"));
    OK(ctx, tfl_variable_assign_sub(a, MKT(ctx, value_dt, 1, S(2), z)));
    EXPECT_DESC(a, jget(r, "assign_sub_result"));
    const cJSON *final_a = jopt(r, "a");
    if (final_a) EXPECT_DESC(a, final_a);
    assert_ptr_equal(tfl_tensor_data_ptr(a), mem);
    EXPECT_DESC(b, jget(r, "b"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_000_copy_and_assign_ops(void **state)
{
    run_copy_and_assign(((fixture *)*state)->ctx, "000.copy_and_assign_ops", TFL_DTYPE_INT32,
                        TFL_DTYPE_INT32, V(4, 5), V(2, 3), V(2, 3), V(4, 6));
}

static void test_002_copy_and_assign_ops(void **state)
{
    /* a float32 variable given Python ints: int32 values, converted */
    run_copy_and_assign(((fixture *)*state)->ctx, "002.copy_and_assign_ops", TFL_DTYPE_FLOAT32,
                        TFL_DTYPE_INT32, V(2, 3), V(5, 6), V(2, 3), V(7, 9));
}

static void test_003_copy_and_assign_ops(void **state)
{
    run_copy_and_assign(((fixture *)*state)->ctx, "003.copy_and_assign_ops", TFL_DTYPE_FLOAT32,
                        TFL_DTYPE_FLOAT32, V(2, 3), V(5, 6), V(2, 3), V(7, 9));
}

/* 000.named_scalar .. 000.assign_sub_int_scalar: one float32 scalar through the cells. */
static void test_000_scalar_assign_chain(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *x =
        NEWVAR(ctx, tfl_scalar_f32(ctx, 2.0f), &(tfl_variable_opts){.name = "my_variable"});
    EXPECT_DESC(x, res("000.named_scalar", "x"));
    OK(ctx, tfl_variable_assign(x, tfl_scalar_f64(ctx, 45.2))); /* a Python float */
    EXPECT_DESC(x, res("000.assign_scalar", "x"));              /* float32 nearest 45.2 */
    OK(ctx, tfl_variable_assign_add(x, tfl_scalar_f64(ctx, 4.0)));
    EXPECT_DESC(x, res("000.assign_add_unread", "x"));
    OK(ctx, tfl_variable_assign_sub(x, tfl_scalar_i32(ctx, 2))); /* a Python int */
    EXPECT_DESC(x, res("000.assign_sub_int_scalar", "x"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(x);
}

/* One 003.assign_dtype_probe case that converts: Variable(init, dtype).assign(value). */
static void probe_converts(tfl_ctx *ctx, const char *label, tfl_dtype var_dt, tfl_tensor *value)
{
    tfl_tensor *v = NEWVAR(ctx, MKT(ctx, var_dt, 1, S(2), V(2, 3)), NULL);
    OK(ctx, tfl_variable_assign(v, value));
    EXPECT_DESC(v, res("003.assign_dtype_probe", label));
    tfl_tensor_release(v);
}

static void test_003_assign_dtype_probe(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const char *key = "003.assign_dtype_probe";
    OK(ctx, tfl_frame_push(ctx));
    probe_converts(ctx, "python_int_list_to_float32", TFL_DTYPE_FLOAT32,
                   MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(1, 2)));
    probe_converts(ctx, "numpy_float64_to_int32", TFL_DTYPE_INT32,
                   MKT(ctx, TFL_DTYPE_FLOAT64, 1, S(2), V(1.7, -2.7))); /* toward zero */
    probe_converts(ctx, "numpy_int32_to_float32", TFL_DTYPE_FLOAT32,
                   MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(1, 2)));
    probe_converts(ctx, "numpy_float64_to_float32", TFL_DTYPE_FLOAT32,
                   MKT(ctx, TFL_DTYPE_FLOAT64, 1, S(2), V(1.5, 2.5)));

    /* int values into a bool variable: refused, the value stays */
    const cJSON *c = res(key, "python_int_list_to_bool");
    tfl_tensor *bv = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_BOOL, 1, S(2), V(1, 0)), NULL);
    assert_int_equal(tfl_variable_assign(bv, MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(1, 0))),
                     TFL_INVALID_ARGUMENT);
    CHECK_ERROR(ctx, TFL_INVALID_ARGUMENT, jstr(c, "error/message"), "bool");
    EXPECT_VALUES(bv, jget(c, "value_after"));
    tfl_tensor_release(bv);

    /* a scalar is not broadcast to the variable's shape */
    c = res(key, "python_int_to_int32_broadcast");
    tfl_tensor *iv = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 1, S(2), V(2, 3)), NULL);
    EXPECT_SHAPE_MISMATCH(ctx, iv, tfl_scalar_i32(ctx, 7), jget(c, "error"));
    EXPECT_VALUES(iv, jget(c, "value_after"));
    tfl_tensor_release(iv);
    OK(ctx, tfl_frame_pop(ctx));
}

/* ---- names, trainable ------------------------------------------------------------------------ */

static void run_same_name(tfl_ctx *ctx, const char *key, const char *name, tfl_tensor *t,
                          tfl_tensor *one)
{
    tfl_variable_opts o = {.name = name};
    tfl_tensor *a = NEWVAR(ctx, t, &o);
    tfl_tensor *b = NEWVAR(ctx, tfl_add(ctx, t, one), &o);
    EXPECT_DESC(a, res(key, "a"));
    EXPECT_DESC(b, res(key, "b"));
    tfl_tensor *eq = tfl_equal(ctx, a, b);
    made_(ctx, eq, "tfl_equal", __LINE__);
    EXPECT_DESC(eq, res(key, "a_eq_b"));
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_000_same_name_scalar(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    run_same_name(ctx, "000.same_name_scalar", "Aakash", tfl_scalar_i32(ctx, 5),
                  tfl_scalar_i32(ctx, 1));
    OK(ctx, tfl_frame_pop(ctx));
}

static void test_002_same_name(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    run_same_name(ctx, "002.same_name", "Mark",
                  MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4)), tfl_scalar_f32(ctx, 1));
    OK(ctx, tfl_frame_pop(ctx));
}

static void test_003_same_name(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    run_same_name(ctx, "003.same_name", "Mark",
                  MKT(ctx, TFL_DTYPE_FLOAT32, 2, S(2, 2), V(1, 2, 3, 4)), tfl_scalar_f32(ctx, 1));
    OK(ctx, tfl_frame_pop(ctx));
}

/* Variable(1, trainable=False): not trainable, so global but not in the trainable collection. */
static void run_trainable_false(tfl_ctx *ctx, const char *key)
{
    tfl_tensor *one = tfl_scalar_i32(ctx, 1);
    tfl_tensor *step = NEWVAR(ctx, one, &(tfl_variable_opts){.flags = TFL_VAR_NOT_TRAINABLE});
    tfl_tensor_release(one);
    EXPECT_DESC(step, res(key, "step_counter"));
    assert_int_equal(tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, NULL, 0), 1);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0), 0);
    tfl_tensor_release(step);
}

static void test_000_trainable_false(void **state)
{
    run_trainable_false(((fixture *)*state)->ctx, "000.trainable_false");
}

static void test_002_trainable_false(void **state)
{
    run_trainable_false(((fixture *)*state)->ctx, "002.trainable_false");
}

static void test_003_trainable_false(void **state)
{
    run_trainable_false(((fixture *)*state)->ctx, "003.trainable_false");
}

/* ---- ops on variables ------------------------------------------------------------------------ */

static void test_000_add_multiply(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *a = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 1, S(3), V(1, 2, 3)), NULL);
    tfl_tensor *b = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_INT32, 1, S(3), V(1, 1, 1)), NULL);
    tfl_tensor *sum = tfl_add(ctx, a, b);
    made_(ctx, sum, "tfl_add", __LINE__);
    EXPECT_DESC(sum, res("000.add", "c"));
    EXPECT_DESC(sum, res("000.add", "d"));
    tfl_tensor *prod = tfl_mul(ctx, a, b);
    made_(ctx, prod, "tfl_mul", __LINE__);
    EXPECT_DESC(prod, res("000.multiply", "c"));
    EXPECT_DESC(prod, res("000.multiply", "d"));
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(a);
    tfl_tensor_release(b);
}

static void test_000_exp(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    OK(ctx, tfl_frame_push(ctx));
    tfl_tensor *a = NEWVAR(ctx, MKT(ctx, TFL_DTYPE_FLOAT32, 1, S(3), V(3, 4, 5)), NULL);
    tfl_tensor *b = tfl_exp(ctx, a);
    made_(ctx, b, "tfl_exp", __LINE__);
    /* TensorFlow's expf and tapeflow's may differ in the last bit */
    expect_desc_(b, res("000.exp", "b"), true, 2.4e-7, __LINE__);
    OK(ctx, tfl_frame_pop(ctx));
    tfl_tensor_release(a);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_file),
        T(test_000_create_variable),
        T_LOGGED(test_002_create_variable),
        T_LOGGED(test_002_create_from_tensor),
        T(test_003_create_variable),
        T(test_002_nested_list),
        T(test_000_shape_dtype),
        T(test_002_shape_dtype),
        T(test_003_shape_dtype),
        T(test_000_as_tensor_argmax_reshape),
        T(test_002_as_tensor_argmax_reshape),
        T(test_003_as_tensor_argmax_reshape),
        T(test_002_constant_from_variable),
        T_LOGGED(test_002_convert_to_tensor),
        T(test_002_constant_eq_convert),
        T(test_000_assign_shape_mismatch),
        T(test_002_assign_shape_mismatch),
        T(test_002_value_after_failed_assign),
        T(test_003_assign_cast),
        T(test_002_tensor_has_no_assign),
        T(test_000_copy_and_assign_ops),
        T(test_002_copy_and_assign_ops),
        T(test_003_copy_and_assign_ops),
        T(test_000_scalar_assign_chain),
        T(test_003_assign_dtype_probe),
        T(test_000_same_name_scalar),
        T(test_002_same_name),
        T(test_003_same_name),
        T(test_000_trainable_false),
        T(test_002_trainable_false),
        T(test_003_trainable_false),
        T(test_000_add_multiply),
        T(test_000_exp),
    };
    return cmocka_run_group_tests(tests, load_fixture, free_fixture);
}
