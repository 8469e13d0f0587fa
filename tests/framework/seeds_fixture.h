/* seeds_fixture.h: header-only helpers shared by the test_variable_fixtures_*.c tests, which
 * check tapeflow's variables against what TensorFlow did when it ran the seed guides
 * (tests/reference/fixtures/seeds_tf.json, loaded once per test executable by the group
 * setup load_fixture): JSON accessors, tensor and variable makers, value/dtype/shape/name and
 * error comparisons with the fixture, collection listings and the placement log. */
#ifndef TFL_SEEDS_FIXTURE_H
#define TFL_SEEDS_FIXTURE_H

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

#ifndef FIXTURE_PATH /* another fixture may be named before including this header */
#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/seeds_tf.json"
#endif

/* ---- the fixture ---------------------------------------------------------------------------- */

static cJSON *g_root; /* the parsed fixture, loaded once for the group */

static inline int load_fixture(void **state)
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

static inline int free_fixture(void **state)
{
    (void)state;
    cJSON_Delete(g_root);
    g_root = NULL;
    return 0;
}

/* The node at `path` under obj: keys joined by '/', a number indexes an array; "" is obj. */
static inline const cJSON *jget(const cJSON *obj, const char *path)
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
static inline const cJSON *jopt(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static inline const char *jstr(const cJSON *obj, const char *path)
{
    const cJSON *s = jget(obj, path);
    assert_true(cJSON_IsString(s));
    return s->valuestring;
}

static inline double jnum(const cJSON *obj, const char *path)
{
    const cJSON *x = jget(obj, path);
    assert_true(cJSON_IsNumber(x));
    return x->valuedouble;
}

static inline bool jbool(const cJSON *obj, const char *path)
{
    const cJSON *b = jget(obj, path);
    assert_true(cJSON_IsBool(b));
    return cJSON_IsTrue(b);
}

/* The entry `key` ("000.create_variable"). */
static inline const cJSON *entry(const char *key)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(jget(g_root, "entries"), key);
    if (!e) {
        print_error("fixture: no entry \"%s\"\n", key);
        fail();
    }
    return e;
}

/* The entry's results at `path` ("" for the results object itself). */
static inline const cJSON *res(const char *key, const char *path)
{
    return jget(jget(entry(key), "results"), path);
}

/* The dims of a JSON shape list into shape[]; returns the rank. */
static inline int json_dims(const cJSON *list, int64_t *shape)
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
static inline const char *tf_device(const char *s)
{
    const char *d = strstr(s, "device:");
    return d ? d + strlen("device:") : (s[0] == '/' ? s + 1 : s);
}

/* Whether tapeflow's device `got` is the fixture's `want`. The fixtures were recorded on a
 * machine without a GPU: where one says CPU:0, TensorFlow on a GPU machine places the same
 * object on GPU:0, as tapeflow's automatic placement does (auto_dev: GPU:0 when the context
 * has one, else CPU:0). */
static inline bool device_is(const char *got, const char *want, const char *auto_dev)
{
    const char *w = tf_device(want);
    return strcmp(got, w) == 0 || (strcmp(w, "CPU:0") == 0 && strcmp(got, auto_dev) == 0);
}

/* ---- making tensors and variables --------------------------------------------------------- */

#define S(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* Fails, with the context's error, when a call that should have made something gave NULL. */
static inline void made_(tfl_ctx *ctx, const void *p, const char *what, int line)
{
    if (p) return;
    tfl_error e = tfl_ctx_error(ctx);
    print_error("line %d: %s gave NULL: %s: %s\n", line, what, tfl_status_name(e.code),
                e.message ? e.message : "(null)");
    fail();
}

static inline void ok_(tfl_ctx *ctx, tfl_status st, const char *what, int line)
{
    if (st == TFL_OK) return;
    tfl_error e = tfl_ctx_error(ctx);
    print_error("line %d: %s gave %s: %s\n", line, what, tfl_status_name(st),
                e.message ? e.message : "(null)");
    fail();
}
#define OK(ctx, call) ok_((ctx), (call), #call, __LINE__)

/* A tensor of dtype dt and shape from doubles (complex: re, im pairs; bool: non-zero). */
static inline tfl_tensor *mkt_(tfl_ctx *ctx, tfl_dtype dt, int rank, const int64_t *shape,
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
static inline tfl_tensor *r_array_(tfl_ctx *ctx, int64_t rows, int64_t cols, int line)
{
    double v[64];
    assert_true(rows * cols <= 64);
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++)
            v[r * cols + c] = (double)(c * rows + r + 1);
    return mkt_(ctx, TFL_DTYPE_INT32, 2, S(rows, cols), v, line);
}
#define R_ARRAY(ctx, rows, cols) r_array_((ctx), (rows), (cols), __LINE__)

static inline tfl_tensor *var_(tfl_ctx *ctx, const tfl_tensor *init, const tfl_variable_opts *o,
                               int line)
{
    tfl_tensor *v = tfl_variable_new(ctx, init, o);
    made_(ctx, v, "tfl_variable_new", line);
    return v;
}
#define NEWVAR(ctx, init, opts) var_((ctx), (init), (opts), __LINE__)

static inline tfl_tensor *getvar_(tfl_ctx *ctx, const char *name, int rank, const int64_t *shape,
                                  tfl_dtype dt, const tfl_initializer *init,
                                  const tfl_variable_opts *o, int line)
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
static inline void expect_values_(const tfl_tensor *t, const cJSON *values, double rel, int line)
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
static inline void expect_desc_(const tfl_tensor *t, const cJSON *desc, bool check_values,
                                double rel, int line)
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
        if (!device_is(tfl_tensor_device(t), dev->valuestring,
                       auto_device(tfl_tensor_ctx(t)))) {
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
static inline tfl_status tf_status(int code)
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
static inline tfl_status expected_code(const cJSON *err, tfl_status otherwise)
{
    const cJSON *c = jopt(err, "error_code");
    return cJSON_IsNumber(c) ? tf_status((int)c->valuedouble) : otherwise;
}

/* Expects the kept error to be `code` and every fragment (NULL-terminated) to occur both in
 * TensorFlow's message tf_msg and in tapeflow's; then clears the error. */
static inline void check_error_(tfl_ctx *ctx, tfl_status code, const char *tf_msg, int line, ...)
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
static inline void kept_has(tfl_ctx *ctx, const char *frag)
{
    assert_has(tfl_ctx_error(ctx).message, frag);
}

/* Python's repr of a shape: "()", "(2,)", "(5, 5, 32, 16)". */
static inline const char *py_shape(const tfl_tensor *t, char *buf, size_t size)
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
static inline const char *msg_part(const char *msg, const char *from, const char *through,
                                   char *out, size_t size)
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
static inline void expect_collection_(tfl_ctx *ctx, const char *collection, const cJSON *names,
                                      int line)
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
static inline void expect_collections_(tfl_ctx *ctx, const cJSON *colls, int line)
{
    expect_collection_(ctx, TFL_GLOBAL_VARIABLES, jget(colls, "global_variables"), line);
    expect_collection_(ctx, TFL_TRAINABLE_VARIABLES, jget(colls, "trainable_variables"), line);
    expect_collection_(ctx, TFL_LOCAL_VARIABLES, jget(colls, "local_variables"), line);
}
#define EXPECT_COLLECTIONS(ctx, colls) expect_collections_((ctx), (colls), __LINE__)

/* The global variables against a fixture table [{name, shape, dtype, trainable}, ...]. */
static inline void expect_var_table_(tfl_ctx *ctx, const cJSON *table, int line)
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
static inline void expect_uninitialized_(tfl_ctx *ctx, const char *collection, const cJSON *names,
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

static inline bool has_device(tfl_ctx *ctx, const char *name)
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
    char auto_dev[24]; /* the context's automatic device (auto_device) */
} placement_log;

static placement_log g_log;

static inline void collect_placement(void *user, tfl_log_level level, const char *msg)
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
static inline int setup_logged(void **state)
{
    memset(&g_log, 0, sizeof g_log);
    tfl_ctx_opts o;
    memset(&o, 0, sizeof o);
    o.log_placement = true;
    o.log_fn = collect_placement;
    o.log_user = &g_log;
    o.log_level = TFL_LOG_INFO;
    int r = setup_opts(state, &o);
    if (r == 0) {
        snprintf(g_log.auto_dev, sizeof g_log.auto_dev, "%s", auto_device(((fixture *)*state)->ctx));
        g_log.n = 0; /* only the test's own ops */
    }
    return r;
}

/* A context with soft placement off from the start. */
static inline int setup_strict(void **state)
{
    tfl_ctx_opts o;
    memset(&o, 0, sizeof o);
    o.strict_placement = true;
    return setup_opts(state, &o);
}

static inline bool in_list(const char *op, const char *const *ops)
{
    for (; *ops; ops++)
        if (strcmp(op, *ops) == 0) return true;
    return false;
}

/* The ops of the entry's placement_log that are in `ops` (NULL-terminated), in order and on
 * the same devices, against tapeflow's log of the same ops. (TensorFlow logs ops tapeflow
 * does not have, such as _EagerConst, so both logs are filtered to the ops named.) */
static inline void expect_placement_(const char *key, const char *const *ops, int line)
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
        if (strcmp(g_log.op[j], op) != 0 || !device_is(g_log.dev[j], dev, g_log.auto_dev)) {
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

/* ---- registering tests --------------------------------------------------------------------- */

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define T_LOGGED(fn) cmocka_unit_test_setup_teardown(fn, setup_logged, teardown)
#define T_STRICT(fn) cmocka_unit_test_setup_teardown(fn, setup_strict, teardown)

#endif /* TFL_SEEDS_FIXTURE_H */
