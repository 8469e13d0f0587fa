/* fit_rig.h: what the fit-loop tests share: a model, its optimizer and its training data as
 * one rig, a dataset made from rows built in malloc'ed arrays, and the optimizer's step
 * counter. Each test builds its own model (make_rig) and data. */
#ifndef TFL_FIT_RIG_H
#define TFL_FIT_RIG_H

#include "test_fixture.h"

typedef struct rig {
    tfl_model *m;
    tfl_optimizer *opt;
    tfl_dataset *ds;
} rig;

static inline void drop_rig(rig *r)
{
    tfl_model_free(r->m);
    tfl_optimizer_free(r->opt);
    tfl_dataset_free(r->ds);
}

/* The optimizer's step counter. */
static inline int64_t iterations(const tfl_optimizer *opt)
{
    double v = -1;
    assert_int_equal(tfl_tensor_get(tfl_optimizer_iterations(opt), 0, &v), TFL_OK);
    return (int64_t)v;
}

/* A dataset of n rows of feat float features (x) with class labels (y); frees x and y. */
static inline tfl_dataset *rows_dataset(tfl_ctx *ctx, int64_t n, int64_t feat, float *x,
                                        int32_t *y)
{
    assert_true(x && y);
    tfl_tensor *tx = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){n, feat}, x);
    tfl_tensor *ty = tfl_tensor_new(ctx, TFL_DTYPE_INT32, 1, (int64_t[]){n}, y);
    tfl_dataset *ds = tfl_dataset_from_arrays(ctx, tx, ty, NULL);
    tfl_tensor_release(tx);
    tfl_tensor_release(ty);
    free(x);
    free(y);
    assert_non_null(ds);
    return ds;
}

#endif /* TFL_FIT_RIG_H */
