/* test_variable_fixtures.c: tapeflow's variables checked against what TensorFlow 2.21 did
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
 *    array (the numpy_* cases, checked);
 *  - 004.replica_device_setter (tf.train.replica_device_setter, parameter servers), the
 *    device strings graph mode keeps as written (004.device_gpu1's "device"), the
 *    ResourceVariable.initialized_value() NotImplementedError and TF2 control flow
 *    (004.initialized_value: the TF1 control-flow values are checked), the
 *    ResourceVariable "Could not find variable" wording (004.read_uninitialized_error: the
 *    RefVariable wording the TF1 guide shows is checked), graph-mode uniquified tf.Variable
 *    names (004.graph_variable_names: tapeflow keeps eager mode's duplicate names, see
 *    same_name; the scoped names are checked), graph tensor names ("add:0", "Relu:0"),
 *    collection key listings (004.custom_collection's all_keys: no such API);
 *  - the conv2d/relu outputs of the 004 conv_relu cells (first_output, output*): the
 *    framework has no conv2d op yet; the variables those cells create are checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <tapeflow/tapeflow.h>

#include "test_fixture.h"

#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/seeds_tf.json"

/* ---- the fixture ---------------------------------------------------------------------------- */

static cJSON *g_root; /* the parsed fixture, loaded once for the group */

static int load_fixture(void **state)
{
    (void)state;
    FILE *fp = fopen(FIXTURE_PATH, "rb");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", FIXTURE_PATH);
        return -1;
    }
    long n = -1;
    if (fseek(fp, 0, SEEK_END) == 0) n = ftell(fp);
    rewind(fp);
    char *text = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!text || fread(text, 1, (size_t)n, fp) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", FIXTURE_PATH);
        free(text);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    text[n] = '\0';
    g_root = cJSON_Parse(text);
    free(text);
    if (!g_root) {
        fprintf(stderr, "%s is not valid JSON\n", FIXTURE_PATH);
        return -1;
    }
    return 0;
}

static int free_fixture(void **state)
{
    (void)state;
    cJSON_Delete(g_root);
    g_root = NULL;
    return 0;
}

/* The node at `path` under obj: keys joined by '/', a number indexes an array; "" is obj. */
static const cJSON *jget(const cJSON *obj, const char *path)
{
    const cJSON *cur = obj;
    const char *p = path;
    char key[128];
    assert_non_null(obj);
    while (*p) {
        size_t n = strcspn(p, "/");
        assert_true(n < sizeof key);
        memcpy(key, p, n);
        key[n] = '\0';
        const cJSON *next = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(key))
                                               : cJSON_GetObjectItemCaseSensitive(cur, key);
        if (!next) {
            print_error("fixture: no \"%s\" (path \"%s\")\n", key, path);
            fail();
        }
        cur = next;
        p += n;
        if (*p == '/') p++;
    }
    return cur;
}

/* The member `key` of obj, or NULL. */
static const cJSON *jopt(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *jstr(const cJSON *obj, const char *path)
{
    const cJSON *s = jget(obj, path);
    assert_true(cJSON_IsString(s));
    return s->valuestring;
}

static double jnum(const cJSON *obj, const char *path)
{
    const cJSON *x = jget(obj, path);
    assert_true(cJSON_IsNumber(x));
    return x->valuedouble;
}

static bool jbool(const cJSON *obj, const char *path)
{
    const cJSON *b = jget(obj, path);
    assert_true(cJSON_IsBool(b));
    return cJSON_IsTrue(b);
}

/* The entry `key` ("000.create_variable"). */
static const cJSON *entry(const char *key)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(jget(g_root, "entries"), key);
    if (!e) {
        print_error("fixture: no entry \"%s\"\n", key);
        fail();
    }
    return e;
}

/* The entry's results at `path` ("" for the results object itself). */
static const cJSON *res(const char *key, const char *path)
{
    return jget(jget(entry(key), "results"), path);
}

/* The dims of a JSON shape list into shape[]; returns the rank. */
static int json_dims(const cJSON *list, int64_t *shape)
{
    assert_true(cJSON_IsArray(list));
    int rank = cJSON_GetArraySize(list);
    assert_true(rank <= TFL_MAX_RANK);
    for (int i = 0; i < rank; i++)
        shape[i] = (int64_t)cJSON_GetArrayItem(list, i)->valuedouble;
    return rank;
}

/* A device string of the fixture ("/job:localhost/replica:0/task:0/device:CPU:0") as tapeflow
 * names it ("CPU:0"). */
static const char *tf_device(const char *s)
{
    const char *d = strstr(s, "device:");
    return d ? d + strlen("device:") : (s[0] == '/' ? s + 1 : s);
}

/* ---- making tensors and variables --------------------------------------------------------- */

#define S(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* Fails, with the context's error, when a call that should have made something gave NULL. */
static void made_(tfl_ctx *ctx, const void *p, const char *what, int line)
{
    if (p) return;
    tfl_error e = tfl_ctx_error(ctx);
    print_error("line %d: %s gave NULL: %s: %s\n", line, what, tfl_status_name(e.code),
                e.message ? e.message : "(null)");
    fail();
}

static void ok_(tfl_ctx *ctx, tfl_status st, const char *what, int line)
{
    if (st == TFL_OK) return;
    tfl_error e = tfl_ctx_error(ctx);
    print_error("line %d: %s gave %s: %s\n", line, what, tfl_status_name(st),
                e.message ? e.message : "(null)");
    fail();
}
#define OK(ctx, call) ok_((ctx), (call), #call, __LINE__)

/* A tensor of dtype dt and shape from doubles (complex: re, im pairs; bool: non-zero). */
static tfl_tensor *mkt_(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape,
                        const double *vals, int line)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    size_t es = tfl_dtype_size(dt);
    unsigned char buf[1024];
    assert_true((size_t)n * es <= sizeof buf);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = buf + (size_t)i * es;
        switch (dt) {
        case TFL_DTYPE_BOOL: {
            uint8_t x = vals[i] != 0.0;
            memcpy(p, &x, 1);
            break;
        }
        case TFL_DTYPE_INT32: {
            int32_t x = (int32_t)vals[i];
            memcpy(p, &x, 4);
            break;
        }
        case TFL_DTYPE_INT64: {
            int64_t x = (int64_t)vals[i];
            memcpy(p, &x, 8);
            break;
        }
        case TFL_DTYPE_FLOAT32: {
            float x = (float)vals[i];
            memcpy(p, &x, 4);
            break;
        }
        case TFL_DTYPE_FLOAT64:
            memcpy(p, &vals[i], 8);
            break;
        case TFL_DTYPE_COMPLEX64: {
            float x[2] = {(float)vals[2 * i], (float)vals[2 * i + 1]};
            memcpy(p, x, 8);
            break;
        }
        case TFL_DTYPE_COMPLEX128:
            memcpy(p, &vals[2 * i], 16);
            break;
        default:
            fail();
        }
    }
    tfl_tensor *t = tfl_tensor_new(ctx, dt, rank, shape, buf);
    made_(ctx, t, "tfl_tensor_new", line);
    return t;
}
#define MKT(ctx, dt, rank, shape, vals) mkt_((ctx), (dt), (rank), (shape), (vals), __LINE__)

/* R's array(1:n, dims) for a matrix: 1..rows*cols filled column-major, as int32. */
static tfl_tensor *r_array_(tfl_ctx *ctx, int64_t rows, int64_t cols, int line)
{
    double v[64];
    assert_true(rows * cols <= 64);
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++)
            v[r * cols + c] = (double)(c * rows + r + 1);
    return mkt_(ctx, TFL_DTYPE_INT32, 2, S(rows, cols), v, line);
}
#define R_ARRAY(ctx, rows, cols) r_array_((ctx), (rows), (cols), __LINE__)

static tfl_tensor *var_(tfl_ctx *ctx, const tfl_tensor *init, const tfl_variable_opts *o, int line)
{
    tfl_tensor *v = tfl_variable_new(ctx, init, o);
    made_(ctx, v, "tfl_variable_new", line);
    return v;
}
#define NEWVAR(ctx, init, opts) var_((ctx), (init), (opts), __LINE__)

static tfl_tensor *getvar_(tfl_ctx *ctx, const char *name, int rank, const int64_t *shape,
                           tfl_dtype dt, const tfl_initializer *init, const tfl_variable_opts *o,
                           int line)
{
    tfl_tensor *v = tfl_get_variable(ctx, name, rank, shape, dt, init, o);
    made_(ctx, v, name, line);
    return v;
}
#define GETVAR(ctx, name, rank, shape, dt, init, opts)                                             \
    getvar_((ctx), (name), (rank), (shape), (dt), (init), (opts), __LINE__)

/* ---- comparing with the fixture ---------------------------------------------------------- */

/* t's elements against the fixture's flattened `values` (complex: [re, im] pairs; bool:
 * true/false). rel 0 asks for exact equality (float32 values are the doubles they widen to). */
static void expect_values_(const tfl_tensor *t, const cJSON *values, double rel, int line)
{
    assert_non_null(t);
    assert_true(cJSON_IsArray(values));
    tfl_dtype dt = tfl_tensor_dtype(t);
    int64_t n = tfl_tensor_numel(t);
    if (cJSON_GetArraySize(values) != n) {
        print_error("line %d: %lld elements, the fixture has %d\n", line, (long long)n,
                    cJSON_GetArraySize(values));
        fail();
    }
    size_t bytes = (size_t)n * tfl_dtype_size(dt);
    unsigned char *buf = malloc(bytes ? bytes : 1);
    assert_non_null(buf);
    ok_(tfl_tensor_ctx(t), tfl_tensor_to_host(t, buf, bytes), "tfl_tensor_to_host", line);
    for (int64_t i = 0; i < n; i++) {
        const cJSON *w = cJSON_GetArrayItem(values, (int)i);
        const unsigned char *p = buf + (size_t)i * tfl_dtype_size(dt);
        double got[2] = {0.0, 0.0}, want[2] = {0.0, 0.0};
        int parts = 1;
        switch (dt) {
        case TFL_DTYPE_BOOL:
            assert_true(cJSON_IsBool(w));
            got[0] = *p ? 1.0 : 0.0;
            want[0] = cJSON_IsTrue(w) ? 1.0 : 0.0;
            break;
        case TFL_DTYPE_INT32: {
            int32_t x;
            memcpy(&x, p, 4);
            got[0] = x;
            break;
        }
        case TFL_DTYPE_INT64: {
            int64_t x;
            memcpy(&x, p, 8);
            got[0] = (double)x;
            break;
        }
        case TFL_DTYPE_FLOAT32: {
            float x;
            memcpy(&x, p, 4);
            got[0] = x;
            break;
        }
        case TFL_DTYPE_FLOAT64:
            memcpy(&got[0], p, 8);
            break;
        case TFL_DTYPE_COMPLEX64: {
            float x[2];
            memcpy(x, p, 8);
            got[0] = x[0];
            got[1] = x[1];
            parts = 2;
            break;
        }
        case TFL_DTYPE_COMPLEX128:
            memcpy(got, p, 16);
            parts = 2;
            break;
        default:
            fail();
        }
        if (dt != TFL_DTYPE_BOOL) {
            if (parts == 2) {
                assert_true(cJSON_IsArray(w) && cJSON_GetArraySize(w) == 2);
                want[0] = cJSON_GetArrayItem(w, 0)->valuedouble;
                want[1] = cJSON_GetArrayItem(w, 1)->valuedouble;
            } else {
                assert_true(cJSON_IsNumber(w));
                want[0] = w->valuedouble;
            }
        }
        for (int k = 0; k < parts; k++) {
            if (!(fabs(got[k] - want[k]) <= rel * fabs(want[k]))) {
                print_error("line %d: element %lld%s: got %.17g, the fixture has %.17g\n", line,
                            (long long)i, parts == 2 ? (k ? " (im)" : " (re)") : "", got[k],
                            want[k]);
                free(buf);
                fail();
            }
        }
    }
    free(buf);
}
#define EXPECT_VALUES(t, values) expect_values_((t), (values), 0.0, __LINE__)

/*
 * t against a fixture description {kind, name, dtype, shape, trainable, device, values}:
 * dtype and shape always; values when given (and check_values); the device when given and
 * not "" (graph-mode entries have none); a "Tensor" must not be a variable; a "Variable" (or
 * a description with no kind, as the rows of the 004 variable tables) must be one, with the
 * name ("<name>:0") and trainable flag given.
 */
static void expect_desc_(const tfl_tensor *t, const cJSON *desc, bool check_values, double rel,
                         int line)
{
    if (!t) {
        print_error("line %d: no tensor\n", line);
        fail();
    }
    const cJSON *kind = jopt(desc, "kind");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : "";

    tfl_dtype want_dt = TFL_DTYPE_INVALID;
    const char *dt_name = jstr(desc, "dtype");
    if (!tfl_dtype_from_name(dt_name, &want_dt)) {
        print_error("line %d: tapeflow has no dtype \"%s\"\n", line, dt_name);
        fail();
    }
    if (tfl_tensor_dtype(t) != want_dt) {
        print_error("line %d: dtype %s, the fixture has %s\n", line,
                    tfl_dtype_name(tfl_tensor_dtype(t)), dt_name);
        fail();
    }
    int64_t shape[TFL_MAX_RANK];
    int rank = json_dims(jget(desc, "shape"), shape);
    if (tfl_tensor_rank(t) != rank) {
        print_error("line %d: rank %d, the fixture has %d\n", line, tfl_tensor_rank(t), rank);
        fail();
    }
    for (int i = 0; i < rank; i++) {
        if (tfl_tensor_shape(t)[i] != shape[i]) {
            print_error("line %d: dim %d is %lld, the fixture has %lld\n", line, i,
                        (long long)tfl_tensor_shape(t)[i], (long long)shape[i]);
            fail();
        }
    }
    const cJSON *dev = jopt(desc, "device");
    if (cJSON_IsString(dev) && dev->valuestring[0]) {
        if (strcmp(tfl_tensor_device(t), tf_device(dev->valuestring)) != 0) {
            print_error("line %d: device %s, the fixture has %s\n", line, tfl_tensor_device(t),
                        dev->valuestring);
            fail();
        }
    }
    if (strcmp(k, "Tensor") == 0) {
        if (tfl_tensor_is_variable(t)) {
            print_error("line %d: a variable where the fixture has a tensor\n", line);
            fail();
        }
    } else if (strcmp(k, "Variable") == 0 || k[0] == '\0') {
        if (!tfl_tensor_is_variable(t)) {
            print_error("line %d: not a variable, the fixture has a variable\n", line);
            fail();
        }
        const cJSON *name = jopt(desc, "name");
        if (cJSON_IsString(name)) {
            char full[300];
            snprintf(full, sizeof full, "%s:0", tfl_variable_name(t));
            if (strcmp(full, name->valuestring) != 0) {
                print_error("line %d: variable name '%s', the fixture has '%s'\n", line, full,
                            name->valuestring);
                fail();
            }
        }
        const cJSON *tr = jopt(desc, "trainable");
        if (cJSON_IsBool(tr) && tfl_variable_trainable(t) != (bool)cJSON_IsTrue(tr)) {
            print_error("line %d: trainable %d, the fixture has %d\n", line,
                        tfl_variable_trainable(t), cJSON_IsTrue(tr));
            fail();
        }
    }
    const cJSON *values = jopt(desc, "values");
    if (check_values && values) expect_values_(t, values, rel, line);
}
#define EXPECT_DESC(t, desc) expect_desc_((t), (desc), true, 0.0, __LINE__)
#define EXPECT_META(t, desc) expect_desc_((t), (desc), false, 0.0, __LINE__)

/* TensorFlow's canonical error code, as the fixture records it (error_code), as a tfl_status. */
static tfl_status tf_status(int code)
{
    switch (code) {
    case 3:
        return TFL_INVALID_ARGUMENT;
    case 5:
        return TFL_NOT_FOUND;
    case 6:
        return TFL_ALREADY_EXISTS;
    case 8:
        return TFL_RESOURCE_EXHAUSTED;
    case 9:
        return TFL_FAILED_PRECONDITION;
    case 11:
        return TFL_OUT_OF_RANGE;
    case 12:
        return TFL_UNIMPLEMENTED;
    case 13:
        return TFL_INTERNAL;
    case 14:
        return TFL_UNAVAILABLE;
    case 15:
        return TFL_DATA_LOSS;
    default:
        print_error("unexpected TensorFlow error code %d\n", code);
        fail();
    }
    return TFL_INTERNAL;
}

/* The code tapeflow must give for a fixture error {type, module, message[, error_code]}:
 * TensorFlow's canonical code where the entry has one; a Python exception (ValueError) has
 * none, and `otherwise` is the code tapeflow's header gives that case. */
static tfl_status expected_code(const cJSON *err, tfl_status otherwise)
{
    const cJSON *c = jopt(err, "error_code");
    return cJSON_IsNumber(c) ? tf_status((int)c->valuedouble) : otherwise;
}

/* Expects the kept error to be `code` and every fragment (NULL-terminated) to occur both in
 * TensorFlow's message tf_msg and in tapeflow's; then clears the error. */
static void check_error_(tfl_ctx *ctx, tfl_status code, const char *tf_msg, int line, ...)
{
    tfl_error e = tfl_ctx_error(ctx);
    if (e.code != code) {
        print_error("line %d: error %s, expected %s: %s\n", line, tfl_status_name(e.code),
                    tfl_status_name(code), e.message ? e.message : "(null)");
        fail();
    }
    assert_non_null(e.message);
    va_list ap;
    va_start(ap, line);
    for (const char *frag = va_arg(ap, const char *); frag; frag = va_arg(ap, const char *)) {
        if (!strstr(tf_msg, frag)) {
            print_error("line %d: the fragment \"%s\" is not in TensorFlow's message \"%s\"\n",
                        line, frag, tf_msg);
            va_end(ap);
            fail();
        }
        if (!strstr(e.message, frag)) {
            print_error("line %d: tapeflow's message \"%s\" lacks \"%s\" (TensorFlow: \"%s\")\n",
                        line, e.message, frag, tf_msg);
            va_end(ap);
            fail();
        }
    }
    va_end(ap);
    tfl_ctx_clear_error(ctx);
}
#define CHECK_ERROR(ctx, code, tf_msg, ...)                                                        \
    check_error_((ctx), (code), (tf_msg), __LINE__, __VA_ARGS__, (const char *)NULL)

/* tapeflow's kept message must contain `frag` (for what tapeflow words better than TF). */
static void kept_has(tfl_ctx *ctx, const char *frag)
{
    assert_has(tfl_ctx_error(ctx).message, frag);
}

/* Python's repr of a shape: "()", "(2,)", "(5, 5, 32, 16)". */
static const char *py_shape(const tfl_tensor *t, char *buf, size_t size)
{
    int rank = tfl_tensor_rank(t);
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "",
                                (long long)tfl_tensor_shape(t)[i]);
    if (len < size) snprintf(buf + len, size - len, rank == 1 ? ",)" : ")");
    return buf;
}

/* TensorFlow's message from its start (or from `from`, which must occur in it) up to and
 * including `through` (NULL: to the end of that line). */
static const char *msg_part(const char *msg, const char *from, const char *through, char *out,
                            size_t size)
{
    const char *b = msg;
    if (from) {
        b = strstr(msg, from);
        assert_non_null(b);
    }
    size_t n;
    if (through) {
        const char *e = strstr(b, through);
        assert_non_null(e);
        n = (size_t)(e - b) + strlen(through);
    } else {
        n = strcspn(b, "\n");
    }
    assert_true(n < size);
    memcpy(out, b, n);
    out[n] = '\0';
    return out;
}

/* The variables of a collection (in order) against a list of fixture names ("a:0"). */
static void expect_collection_(tfl_ctx *ctx, const char *collection, const cJSON *names, int line)
{
    tfl_tensor *vars[64];
    int64_t n = tfl_collection_get(ctx, collection, vars, 64);
    if (n != cJSON_GetArraySize(names)) {
        print_error("line %d: collection %s has %lld variables, the fixture %d\n", line, collection,
                    (long long)n, cJSON_GetArraySize(names));
        fail();
    }
    for (int i = 0; i < (int)n; i++) {
        char full[300];
        snprintf(full, sizeof full, "%s:0", tfl_variable_name(vars[i]));
        const char *want = cJSON_GetArrayItem(names, i)->valuestring;
        if (strcmp(full, want) != 0) {
            print_error("line %d: collection %s[%d] is '%s', the fixture has '%s'\n", line,
                        collection, i, full, want);
            fail();
        }
    }
}
#define EXPECT_COLLECTION(ctx, coll, names) expect_collection_((ctx), (coll), (names), __LINE__)

/* The fixture's {global_variables, trainable_variables, local_variables} listing. */
static void expect_collections_(tfl_ctx *ctx, const cJSON *colls, int line)
{
    expect_collection_(ctx, TFL_GLOBAL_VARIABLES, jget(colls, "global_variables"), line);
    expect_collection_(ctx, TFL_TRAINABLE_VARIABLES, jget(colls, "trainable_variables"), line);
    expect_collection_(ctx, TFL_LOCAL_VARIABLES, jget(colls, "local_variables"), line);
}
#define EXPECT_COLLECTIONS(ctx, colls) expect_collections_((ctx), (colls), __LINE__)

/* The global variables against a fixture table [{name, shape, dtype, trainable}, ...]. */
static void expect_var_table_(tfl_ctx *ctx, const cJSON *table, int line)
{
    tfl_tensor *vars[64];
    int64_t n = tfl_collection_get(ctx, TFL_GLOBAL_VARIABLES, vars, 64);
    if (n != cJSON_GetArraySize(table)) {
        print_error("line %d: %lld global variables, the fixture has %d\n", line, (long long)n,
                    cJSON_GetArraySize(table));
        fail();
    }
    for (int i = 0; i < (int)n; i++)
        expect_desc_(vars[i], cJSON_GetArrayItem(table, i), false, 0.0, line);
}
#define EXPECT_VAR_TABLE(ctx, table) expect_var_table_((ctx), (table), __LINE__)

/* tfl_report_uninitialized(ctx, collection) against a fixture list of names (no ":0"). */
static void expect_uninitialized_(tfl_ctx *ctx, const char *collection, const cJSON *names,
                                  int line)
{
    const char *got[16];
    int64_t n = tfl_report_uninitialized(ctx, collection, got, 16);
    if (n != cJSON_GetArraySize(names)) {
        print_error("line %d: %lld uninitialized variables, the fixture has %d\n", line,
                    (long long)n, cJSON_GetArraySize(names));
        fail();
    }
    assert_int_equal(tfl_report_uninitialized(ctx, collection, NULL, 0), n);
    for (int i = 0; i < (int)n; i++) {
        const char *want = cJSON_GetArrayItem(names, i)->valuestring;
        if (strcmp(got[i], want) != 0) {
            print_error("line %d: uninitialized[%d] is '%s', the fixture has '%s'\n", line, i,
                        got[i], want);
            fail();
        }
    }
}
#define EXPECT_UNINITIALIZED(ctx, coll, names)                                                     \
    expect_uninitialized_((ctx), (coll), (names), __LINE__)

static bool has_device(tfl_ctx *ctx, const char *name)
{
    for (int i = 0; i < tfl_device_count(ctx); i++)
        if (strcmp(tfl_device_name(ctx, i), name) == 0) return true;
    return false;
}

/* ---- placement log ------------------------------------------------------------------------- */

typedef struct placement_log {
    int n;
    char op[128][40];
    char dev[128][24];
} placement_log;

static placement_log g_log;

static void collect_placement(void *user, tfl_log_level level, const char *msg)
{
    placement_log *log = user;
    char op[40], dev[24];
    (void)level;
    if (log->n < 128 && sscanf(msg, "op %39s on %23s", op, dev) == 2) {
        memcpy(log->op[log->n], op, sizeof op);
        memcpy(log->dev[log->n], dev, sizeof dev);
        log->n++;
    }
}

/* A context with placement logging into g_log. */
static int setup_logged(void **state)
{
    memset(&g_log, 0, sizeof g_log);
    tfl_ctx_opts o;
    memset(&o, 0, sizeof o);
    o.log_placement = true;
    o.log_fn = collect_placement;
    o.log_user = &g_log;
    o.log_level = TFL_LOG_INFO;
    return setup_opts(state, &o);
}

/* A context with soft placement off from the start. */
static int setup_strict(void **state)
{
    tfl_ctx_opts o;
    memset(&o, 0, sizeof o);
    o.strict_placement = true;
    return setup_opts(state, &o);
}

static bool in_list(const char *op, const char *const *ops)
{
    for (; *ops; ops++)
        if (strcmp(op, *ops) == 0) return true;
    return false;
}

/* The ops of the entry's placement_log that are in `ops` (NULL-terminated), in order and on
 * the same devices, against tapeflow's log of the same ops. (TensorFlow logs ops tapeflow
 * does not have, such as _EagerConst, so both logs are filtered to the ops named.) */
static void expect_placement_(const char *key, const char *const *ops, int line)
{
    const cJSON *log = jget(entry(key), "placement_log");
    int j = 0;
    for (int i = 0; i < cJSON_GetArraySize(log); i++) {
        const cJSON *row = cJSON_GetArrayItem(log, i);
        const char *op = cJSON_GetArrayItem(row, 0)->valuestring;
        if (!in_list(op, ops)) continue;
        while (j < g_log.n && !in_list(g_log.op[j], ops))
            j++;
        if (j >= g_log.n) {
            print_error("line %d: tapeflow logged no op for TensorFlow's %s (#%d)\n", line, op, i);
            fail();
        }
        const char *dev = tf_device(cJSON_GetArrayItem(row, 1)->valuestring);
        if (strcmp(g_log.op[j], op) != 0 || strcmp(g_log.dev[j], dev) != 0) {
            print_error("line %d: tapeflow logged op %s on %s where TensorFlow logged %s on %s\n",
                        line, g_log.op[j], g_log.dev[j], op, dev);
            fail();
        }
        j++;
    }
    while (j < g_log.n && !in_list(g_log.op[j], ops))
        j++;
    if (j < g_log.n) {
        print_error("line %d: tapeflow logged op %s on %s that TensorFlow did not\n", line,
                    g_log.op[j], g_log.dev[j]);
        fail();
    }
}
#define EXPECT_PLACEMENT(key, ...)                                                                 \
    expect_placement_((key), (const char *const[]){__VA_ARGS__, NULL}, __LINE__)

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

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define T_LOGGED(fn) cmocka_unit_test_setup_teardown(fn, setup_logged, teardown)
#define T_STRICT(fn) cmocka_unit_test_setup_teardown(fn, setup_strict, teardown)

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
        T(test_000_cpu_placement_matmul),
        T_LOGGED(test_002_cpu_placement_matmul),
        T(test_003_cpu_placement_matmul_colmajor),
        T(test_000_cross_device_mul),
        T_LOGGED(test_002_cross_device_mul_soft),
        T(test_003_cross_device_mul_colmajor),
        T(test_002_gpu_hard_placement_error),
        T_STRICT(test_002_gpu_hard_placement_strict_ctx),
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
