/* norm_fixture.h: header-only helpers for the tests that read
 * tests/reference/fixtures/norm_tf.json (written by tests/reference/norm_tf.py): tensors made
 * from a case's lists and comparisons of tensors with them. Used by
 * tests/framework/test_norm_dropout.c and tests/tape/test_norm_gradients.c; the JSON
 * accessors (jget, jnum, ...) and the group setup load_fixture come from seeds_fixture.h. */
#ifndef TFL_NORM_FIXTURE_H
#define TFL_NORM_FIXTURE_H

#define FIXTURE_PATH TFL_SOURCE_DIR "/tests/reference/fixtures/norm_tf.json"
#include "seeds_fixture.h"

/* The case's dtype ("float32" or "float64"). */
static inline tfl_dtype nf_dtype(const cJSON *c)
{
    return strcmp(jstr(c, "dtype"), "float32") == 0 ? TFL_DTYPE_FLOAT32 : TFL_DTYPE_FLOAT64;
}

/* Tolerance of a comparison with TensorFlow, relative to max(1, max |want|); the largest
 * departures seen are 1.2e-7 (values) and 2.6e-7 (gradients) in float32, 1.1e-16 and 2.6e-15
 * in float64. Gradients are compared at 4 times this. */
static inline double nf_tol(tfl_dtype dt)
{
    return dt == TFL_DTYPE_FLOAT32 ? 1e-6 : 1e-14;
}

/* The case's shape list at `key` into shape[]; returns the rank. */
static inline int nf_shape(const cJSON *c, const char *key, int64_t *shape)
{
    return json_dims(jget(c, key), shape);
}

/* A tensor of dtype dt and the given shape from the list at `key` (NULL for JSON null). */
static inline tfl_tensor *nf_tensor_(tfl_ctx *ctx, const cJSON *c, const char *key, tfl_dtype dt,
                                     int rank, const int64_t *shape, int line)
{
    const cJSON *list = jget(c, key);
    if (cJSON_IsNull(list)) return NULL;
    assert_true(cJSON_IsArray(list));
    int n = cJSON_GetArraySize(list);
    int64_t want = 1;
    for (int i = 0; i < rank; i++)
        want *= shape[i];
    if (want != n)
        fail_msg("line %d: fixture list %s has %d values for %lld elements", line, key, n,
                 (long long)want);
    double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
    float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_true(d && f);
    for (int i = 0; i < n; i++) {
        d[i] = cJSON_GetArrayItem(list, i)->valuedouble;
        f[i] = (float)d[i];
    }
    tfl_tensor *t = tfl_tensor_new(ctx, dt, rank, shape, dt == TFL_DTYPE_FLOAT32 ? (void *)f : d);
    free(d);
    free(f);
    made_(ctx, t, key, line);
    return t;
}
#define NF_TENSOR(ctx, c, key, dt, rank, shape)                                                    \
    nf_tensor_((ctx), (c), (key), (dt), (rank), (shape), __LINE__)

/* t's values as doubles (float32 or float64), malloc'ed. */
static inline double *nf_values(const tfl_tensor *t)
{
    int64_t n = tfl_tensor_numel(t);
    double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(d);
    if (tfl_tensor_dtype(t) == TFL_DTYPE_FLOAT32) {
        float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
        assert_non_null(f);
        assert_int_equal(tfl_tensor_to_host(t, f, sizeof(float) * (size_t)n), TFL_OK);
        for (int64_t i = 0; i < n; i++)
            d[i] = f[i];
        free(f);
    } else {
        assert_int_equal(tfl_tensor_dtype(t), TFL_DTYPE_FLOAT64);
        assert_int_equal(tfl_tensor_to_host(t, d, sizeof(double) * (size_t)n), TFL_OK);
    }
    return d;
}

/* Asserts t (not NULL) holds the list `want` to tol * max(1, max |want|); `what` names it. */
static inline void nf_expect_(tfl_ctx *ctx, const tfl_tensor *t, const cJSON *want, double tol,
                              const char *what, int line)
{
    made_(ctx, t, what, line);
    assert_true(cJSON_IsArray(want));
    int n = cJSON_GetArraySize(want);
    if (tfl_tensor_numel(t) != n)
        fail_msg("line %d: %s has %lld elements, the fixture %d", line, what,
                 (long long)tfl_tensor_numel(t), n);
    double *got = nf_values(t), scale = 1.0;
    for (int i = 0; i < n; i++)
        scale = fmax(scale, fabs(cJSON_GetArrayItem(want, i)->valuedouble));
    for (int i = 0; i < n; i++) {
        double w = cJSON_GetArrayItem(want, i)->valuedouble;
        if (!(fabs(got[i] - w) <= tol * scale)) {
            double g = got[i];
            free(got);
            fail_msg("line %d: %s element %d: got %.17g, TensorFlow %.17g (tol %g)", line, what, i,
                     g, w, tol * scale);
        }
    }
    free(got);
}
#define NF_EXPECT(ctx, t, want, tol, what) nf_expect_((ctx), (t), (want), (tol), (what), __LINE__)

#endif /* TFL_NORM_FIXTURE_H */
