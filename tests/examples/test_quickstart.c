/*
 * test_quickstart.c: runs examples/quickstart and checks that what it prints matches
 * TensorFlow's own results for the same seed cells, read from the committed fixture
 * tests/reference/fixtures/seeds_tf.json. The quickstart starts each section with
 * "== <fixture key>", and every checked line is rebuilt here from the fixture entry (name,
 * shape, dtype, device, values) in tapeflow's repr format, so a wrong value, dtype, shape
 * or name in the quickstart's output fails the test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <tapeflow/tapeflow.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE TFL_SOURCE_DIR "/tests/reference/fixtures/seeds_tf.json"

typedef struct state {
    char *output;   /* everything the quickstart printed */
    cJSON *root;    /* the fixture */
    cJSON *entries; /* root["entries"] */
    char dev[8];    /* where automatic placement puts variables and ops here: GPU:0 or CPU:0 */
} state;

static char *read_stream(FILE *f)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                return NULL;
            }
            buf = p;
        }
    }
    buf[len] = '\0';
    return buf;
}

static int setup(void **st)
{
    state *s = calloc(1, sizeof *s);
    if (!s) return -1;
    FILE *p = popen(QUICKSTART_PATH " 2>&1", "r");
    if (!p) return -1;
    s->output = read_stream(p);
    int rc = pclose(p);
    FILE *f = fopen(FIXTURE, "rb");
    if (!f) return -1;
    char *json = read_stream(f);
    fclose(f);
    s->root = json ? cJSON_Parse(json) : NULL;
    free(json);
    s->entries = cJSON_GetObjectItemCaseSensitive(s->root, "entries");
    /* the fixture was recorded without a GPU; with one, TensorFlow and tapeflow put what it
     * shows on CPU:0 (no device asked for) on GPU:0 */
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    snprintf(s->dev, sizeof s->dev, "CPU:0");
    for (int i = 0; ctx && i < tfl_device_count(ctx); i++)
        if (!strcmp(tfl_device_name(ctx, i), "GPU:0")) snprintf(s->dev, sizeof s->dev, "GPU:0");
    tfl_ctx_free(ctx);
    *st = s;
    if (rc != 0) fprintf(stderr, "quickstart exited with status %d:\n%s\n", rc, s->output);
    return s->output && s->entries && rc == 0 ? 0 : -1;
}

static int teardown(void **st)
{
    state *s = *st;
    free(s->output);
    cJSON_Delete(s->root);
    free(s);
    return 0;
}

/* ---- the fixture, in tapeflow's repr format ------------------------------------------------- */

static const cJSON *entry(const state *s, const char *key)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(s->entries, key);
    if (!e) fail_msg("the fixture has no entry %s", key);
    return e;
}

/* results[name] of a fixture entry ("a", "my_variable", ...). */
static const cJSON *result(const state *s, const char *key, const char *name)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(entry(s, key), "results"), name);
    if (!r) fail_msg("fixture entry %s has no result %s", key, name);
    return r;
}

static const char *str_of(const cJSON *item, const char *field)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(item, field);
    if (!cJSON_IsString(f)) fail_msg("fixture: no string field %s", field);
    return f->valuestring;
}

typedef struct text {
    char buf[1024];
    size_t len;
} text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && t->len + (size_t)n < sizeof t->buf);
    t->len += (size_t)n;
}

/* One element as tapeflow prints it: %.6g of the value at its dtype's precision. */
static void add_elem(text *t, const cJSON *v, const char *dtype)
{
    if (strcmp(dtype, "bool") == 0) {
        add(t, "%s", cJSON_IsTrue(v) ? "True" : "False");
    } else if (strncmp(dtype, "complex", 7) == 0) {
        double re = cJSON_GetArrayItem(v, 0)->valuedouble, im = cJSON_GetArrayItem(v, 1)->valuedouble;
        add(t, "(%.6g%+.6gj)", re, im);
    } else if (strncmp(dtype, "int", 3) == 0) {
        add(t, "%lld", (long long)v->valuedouble);
    } else {
        double x = strcmp(dtype, "float32") == 0 ? (double)(float)v->valuedouble : v->valuedouble;
        add(t, "%.6g", x == 0.0 ? 0.0 : x);
    }
}

static void add_axis(text *t, const cJSON *shape, int axis, const cJSON *values, int *next,
                     const char *dtype)
{
    int rank = cJSON_GetArraySize(shape);
    if (axis == rank) {
        add_elem(t, cJSON_GetArrayItem(values, (*next)++), dtype);
        return;
    }
    int n = cJSON_GetArrayItem(shape, axis)->valueint;
    add(t, "[");
    for (int i = 0; i < n; i++) {
        add_axis(t, shape, axis + 1, values, next, dtype);
        if (i + 1 < n) add(t, ", ");
    }
    add(t, "]");
}

/* "(2, 3)", "(2,)", "()" from a JSON shape. */
static void add_shape(text *t, const cJSON *shape)
{
    int rank = cJSON_GetArraySize(shape);
    add(t, "(");
    for (int i = 0; i < rank; i++)
        add(t, "%s%d", i ? ", " : "", cJSON_GetArrayItem(shape, i)->valueint);
    add(t, rank == 1 ? ",)" : ")");
}

/* The repr tapeflow prints for a fixture Variable / Tensor / ndarray result. */
static void repr_of(text *t, const cJSON *r, const char *kind_override)
{
    const char *kind = kind_override ? kind_override : str_of(r, "kind");
    const char *dtype = str_of(r, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(r, "shape");
    if (strcmp(kind, "Variable") == 0) add(t, "<tfl.Variable '%s' shape=", str_of(r, "name"));
    else add(t, "<tfl.Tensor shape=");
    add_shape(t, shape);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(r, "device");
    const char *d = cJSON_IsString(dev) && strstr(dev->valuestring, "device:")
                        ? strstr(dev->valuestring, "device:") + 7 : "CPU:0";
    add(t, " dtype=%s device=%s ", dtype, d);
    int next = 0;
    add_axis(t, shape, 0, cJSON_GetObjectItemCaseSensitive(r, "values"), &next, dtype);
    add(t, ">");
}

/* ---- the quickstart's output ------------------------------------------------------------------ */

/* The text of the section that starts with "== key" (up to the next "\n== "). */
static char *section(const state *s, const char *key)
{
    char head[128];
    snprintf(head, sizeof head, "== %s", key);
    const char *p = strstr(s->output, head);
    if (!p) fail_msg("the quickstart printed no section \"%s\"", head);
    const char *end = strstr(p + 1, "\n== ");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char *sec = malloc(n + 1);
    assert_non_null(sec);
    memcpy(sec, p, n);
    sec[n] = '\0';
    return sec;
}

static void expect_in(const char *sec, const char *line)
{
    if (!strstr(sec, line)) fail_msg("expected the line\n  %s\nin the section\n%s", line, sec);
}

/* expect_in for a line recorded without a GPU: where this machine's automatic device is GPU:0,
 * the line with GPU:0 for CPU:0 is accepted too (what was made without asking for a device
 * lives there; host data and CPU:0 scopes stay on CPU:0). */
static void expect_in_dev(const state *s, const char *sec, const char *line)
{
    if (strstr(sec, line) || strcmp(s->dev, "GPU:0") != 0) {
        expect_in(sec, line);
        return;
    }
    char alt[1024];
    size_t n = 0;
    for (const char *p = line; *p && n + 6 < sizeof alt;) {
        if (!strncmp(p, "CPU:0", 5)) {
            memcpy(alt + n, "GPU:0", 5);
            n += 5, p += 5;
        } else {
            alt[n++] = *p++;
        }
    }
    alt[n] = '\0';
    if (!strstr(sec, alt))
        fail_msg("expected the line\n  %s\n(or, on this GPU machine,\n  %s)\nin the section\n%s",
                 line, alt, sec);
}

/* Checks that `sec` has the line "<label><repr of results[name] of fixture key>". */
static void expect_result(const state *s, const char *sec, const char *label, const char *key,
                          const char *name, const char *kind)
{
    text t = {{0}, 0};
    add(&t, "%s", label);
    repr_of(&t, result(s, key, name), kind);
    expect_in_dev(s, sec, t.buf);
}

/* ---- tests, one per section ---------------------------------------------------------------- */

static void test_create_variable(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.create_variable");
    expect_result(s, sec, "my_variable: ", "002.create_variable", "my_variable", NULL);
    expect_result(s, sec, "bool_variable: ", "002.create_variable", "bool_variable", NULL);
    expect_result(s, sec, "complex_variable: ", "002.create_variable", "complex_variable", NULL);
    /* creating logs the variable's placement, as TensorFlow's log does */
    expect_in_dev(s, sec, "op VarHandleOp on CPU:0");
    expect_in_dev(s, sec, "op AssignVariableOp on CPU:0");
    free(sec);
}

static void test_shape_dtype(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.shape_dtype_numpy");
    text t = {{0}, 0};
    add(&t, "Shape: %s", str_of(result(s, "002.shape_dtype_numpy", "shape"), "str"));
    expect_in(sec, t.buf);
    t.len = 0;
    add(&t, "DType: %s", str_of(result(s, "002.shape_dtype_numpy", "dtype"), "name"));
    expect_in(sec, t.buf);
    t.len = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(result(s, "002.shape_dtype_numpy", "numpy"), "values");
    add(&t, "As host array: [");
    for (int i = 0; i < cJSON_GetArraySize(v); i++)
        add(&t, "%s%g", i ? ", " : "", cJSON_GetArrayItem(v, i)->valuedouble);
    add(&t, "]");
    expect_in(sec, t.buf);
    free(sec);
}

static void test_variable_as_tensor(void **st)
{
    state *s = *st;
    const char *key = "002.as_tensor_argmax_reshape";
    char *sec = section(s, key);
    expect_result(s, sec, "Viewed as a tensor: ", key, "as_tensor", NULL);
    expect_result(s, sec, "Index of highest value: ", key, "argmax", NULL);
    expect_result(s, sec, "Copying and reshaping: ", key, "reshaped", NULL);
    expect_result(s, sec, "The variable is unchanged: ", key, "variable_after", NULL);
    free(sec);
}

static void test_assign_shape_mismatch(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.assign_shape_mismatch");
    /* TensorFlow: "Cannot assign value to variable ' Variable:0': Shape mismatch.The variable
     * shape (2,), and the assigned value shape (3,) are incompatible." (tapeflow mends the
     * two typos); the parts that carry meaning must all be there */
    const char *msg = str_of(cJSON_GetObjectItemCaseSensitive(
        result(s, "002.assign_shape_mismatch", "error"), "error"), "message");
    assert_non_null(strstr(msg, "Shape mismatch"));
    expect_in(sec, "INVALID_ARGUMENT: Cannot assign value to variable 'Variable:0': Shape mismatch.");
    expect_in(sec, "The variable shape (2,), and the assigned value shape (3,) are incompatible.");
    expect_result(s, sec, "a: ", "002.value_after_failed_assign", "a", NULL);
    expect_in(sec, "assign reused the variable's memory: yes");
    free(sec);
}

static void test_tensor_has_no_assign(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.tensor_has_no_assign");
    assert_non_null(strstr(str_of(cJSON_GetObjectItemCaseSensitive(
        result(s, "002.tensor_has_no_assign", "error"), "error"), "message"), "no attribute 'assign'"));
    expect_in(sec, "INVALID_ARGUMENT: AssignVariableOp: Cannot assign to a tensor that is not a variable");
    free(sec);
}

/* a: after assign, b: the copy, then assign_add and assign_sub results. TensorFlow's entry
 * records `a` at the end (after assign_sub), so the value after assign is the printed one. */
static void check_copy_and_assign(const state *s, const char *key)
{
    char *sec = section(s, key);
    const cJSON *a = result(s, key, "a");
    expect_result(s, sec, "b: ", key, "b", NULL);
    text t = {{0}, 0};
    const char *printed = str_of(entry(s, key), "printed"); /* "[5. 6.]\n[2. 3.]\n..." */
    double x0, x1;
    assert_int_equal(sscanf(printed, "[%lf %lf]", &x0, &x1), 2);
    add(&t, "a: <tfl.Variable '%s' shape=(2,) dtype=%s device=CPU:0 [%g, %g]>", str_of(a, "name"),
        str_of(a, "dtype"), x0, x1);
    expect_in_dev(s, sec, t.buf);
    t.len = 0;
    add(&t, "assign_add: <tfl.Variable '%s' shape=(2,) dtype=%s device=CPU:0 ", str_of(a, "name"), str_of(a, "dtype"));
    const cJSON *r = result(s, key, "assign_add_result");
    int next = 0;
    add_axis(&t, cJSON_GetObjectItemCaseSensitive(r, "shape"), 0,
             cJSON_GetObjectItemCaseSensitive(r, "values"), &next, str_of(r, "dtype"));
    expect_in_dev(s, sec, t.buf);
    t.len = 0;
    add(&t, "assign_sub: ");
    repr_of(&t, a, NULL); /* the final value of a */
    expect_in_dev(s, sec, t.buf);
    free(sec);
}

static void test_copy_and_assign_f32(void **st) { check_copy_and_assign(*st, "002.copy_and_assign_ops"); }
static void test_copy_and_assign_i32(void **st) { check_copy_and_assign(*st, "000.copy_and_assign_ops"); }

static void test_same_name(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.same_name");
    expect_result(s, sec, "a: ", "002.same_name", "a", NULL);
    expect_result(s, sec, "b: ", "002.same_name", "b", NULL);
    expect_result(s, sec, "a == b: ", "002.same_name", "a_eq_b", NULL);
    free(sec);
}

static void test_trainable_false(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.trainable_false");
    const cJSON *r = result(s, "002.trainable_false", "step_counter");
    expect_result(s, sec, "step_counter: ", "002.trainable_false", "step_counter", NULL);
    expect_in(sec, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "trainable"))
                       ? "trainable: true" : "trainable: false");
    free(sec);
}

static void test_scalar_assigns(void **st)
{
    state *s = *st;
    char *sec = section(s, "000.named_scalar");
    expect_result(s, sec, "x: ", "000.named_scalar", "x", NULL);
    expect_result(s, sec, "assign(45.2): ", "000.assign_scalar", "x", NULL);
    expect_result(s, sec, "assign_add(4.0): ", "000.assign_add_unread", "x", NULL);
    expect_result(s, sec, "assign_sub(2): ", "000.assign_sub_int_scalar", "x", NULL);
    free(sec);
}

static void test_pointwise_ops(void **st)
{
    state *s = *st;
    char *sec = section(s, "000.add");
    expect_result(s, sec, "C: ", "000.add", "c", NULL);
    expect_result(s, sec, "D: ", "000.multiply", "d", NULL);
    expect_result(s, sec, "B: ", "000.exp", "b", NULL);
    free(sec);
}

static void test_cpu_matmul(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.cpu_placement_matmul");
    expect_result(s, sec, "c: ", "002.cpu_placement_matmul", "c", NULL);
    expect_in(sec, "op MatMul on CPU:0");
    free(sec);
}

static void test_gpu_hard_placement(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.gpu_hard_placement_error");
    const char *msg = str_of(cJSON_GetObjectItemCaseSensitive(
        result(s, "002.gpu_hard_placement_error", "error"), "error"), "message");
    assert_non_null(strstr(msg, "Could not satisfy device specification"));
    if (!strcmp(s->dev, "GPU:0")) { /* GPU:0 is there: the variable is made on it */
        expect_in(sec, "op VarHandleOp on GPU:0");
        assert_null(strstr(sec, "Could not satisfy"));
    } else {
        expect_in(sec,
                  "INVALID_ARGUMENT: VarHandleOp: Could not satisfy device specification 'GPU:0'");
        expect_in(sec, "enable_soft_placement=0");
        expect_in(sec, "All available devices: CPU:0");
    }
    free(sec);
}

static void test_gpu_soft_placement(void **st)
{
    state *s = *st;
    char *sec = section(s, "002.cross_device_mul_soft");
    expect_result(s, sec, "k: ", "002.cross_device_mul_soft", "k", NULL);
    expect_in_dev(s, sec, "op Mul on CPU:0"); /* GPU:0 runs it where there is one */
    free(sec);
}

static void test_variable_scopes(void **st)
{
    state *s = *st;
    char *sec = section(s, "004.variable_scope_names");
    const cJSON *vars = result(s, "004.variable_scope_names", "variables");
    assert_int_equal(cJSON_GetArraySize(vars), 4);
    for (int i = 0; i < 4; i += 2) { /* weights and biases of one scope per line */
        text t = {{0}, 0};
        const cJSON *w = cJSON_GetArrayItem(vars, i), *b = cJSON_GetArrayItem(vars, i + 1);
        const char *wn = str_of(w, "name"), *bn = str_of(b, "name");
        add(&t, "%.*s %s  %.*s %s", (int)(strlen(wn) - 2), wn, str_of(w, "dtype"),
            (int)(strlen(bn) - 2), bn, str_of(b, "dtype")); /* names without ":0" */
        expect_in(sec, t.buf);
    }
    free(sec);
    sec = section(s, "004.conv_relu_twice_error");
    expect_in(sec, "ALREADY_EXISTS: Variable conv1/weights already exists, disallowed. Did you mean to set reuse");
    free(sec);
    sec = section(s, "004.scope_reuse_true");
    expect_in(sec, "shared: conv1/weights");
    free(sec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_variable),     cmocka_unit_test(test_shape_dtype),
        cmocka_unit_test(test_variable_as_tensor),  cmocka_unit_test(test_assign_shape_mismatch),
        cmocka_unit_test(test_tensor_has_no_assign), cmocka_unit_test(test_copy_and_assign_f32),
        cmocka_unit_test(test_copy_and_assign_i32), cmocka_unit_test(test_same_name),
        cmocka_unit_test(test_trainable_false),     cmocka_unit_test(test_scalar_assigns),
        cmocka_unit_test(test_pointwise_ops),       cmocka_unit_test(test_cpu_matmul),
        cmocka_unit_test(test_gpu_hard_placement),  cmocka_unit_test(test_gpu_soft_placement),
        cmocka_unit_test(test_variable_scopes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
