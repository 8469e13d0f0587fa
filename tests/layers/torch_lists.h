/* tests/layers/torch_lists.h: a PyTorch fixture's number lists against the layers' float32
 * tensors, for the tests that compare layers with PyTorch (include after seeds_fixture.h). */
#ifndef TFL_TESTS_TORCH_LISTS_H
#define TFL_TESTS_TORCH_LISTS_H

#include <math.h>

/* The float32 tensor of the JSON number list a, of the given shape (its count checked). */
static inline tfl_tensor *json_f32(tfl_ctx *ctx, const cJSON *a, int rank, const int64_t *shape)
{
    int n = cJSON_GetArraySize(a);
    int64_t want = 1;
    for (int i = 0; i < rank; i++) want *= shape[i];
    assert_int_equal(n, want);
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_non_null(v);
    for (int i = 0; i < n; i++) v[i] = (float)cJSON_GetArrayItem(a, i)->valuedouble;
    tfl_tensor *t = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, rank, shape, v);
    free(v);
    assert_non_null(t);
    return t;
}

/* t (float32) holds the JSON list want to tol * max(1, max |want|); the first element off
 * fails, naming `what`, the element and both values. */
static inline void expect_close_f32(const tfl_tensor *t, const cJSON *want, double tol,
                                    const char *what)
{
    if (!t) fail_msg("%s: no tensor", what);
    int n = cJSON_GetArraySize(want);
    assert_int_equal(tfl_tensor_numel(t), n);
    float *got = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_non_null(got);
    assert_int_equal(tfl_tensor_to_host(t, got, sizeof(float) * (size_t)n), TFL_OK);
    double scale = 1.0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(cJSON_GetArrayItem(want, i)->valuedouble));
    for (int i = 0; i < n; i++) {
        double w = cJSON_GetArrayItem(want, i)->valuedouble, g = got[i];
        if (!(fabs(g - w) <= tol * scale)) {
            free(got);
            fail_msg("%s element %d: got %.9g, PyTorch %.17g", what, i, g, w);
        }
    }
    free(got);
}

#endif /* TFL_TESTS_TORCH_LISTS_H */
