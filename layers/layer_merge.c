/*
 * layers/layer_merge.c: the merges of a layer graph (Keras's Add, Concatenate, Multiply):
 * layers of 2 to TFL_MAX_LAYER_INPUTS inputs and no variables, and tfl_layer_call_n /
 * tfl_layer_output_shape_n, the entry points of layers with several inputs. A -1 dimension
 * (an unknown batch) matches any.
 */
#include "layers_internal.h"

_Static_assert(TFL_MAX_LAYER_INPUTS == 32, "count_ok's message says 32");

/* a and b agree in dimension d (an unknown one matches any) */
static bool dim_agrees(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

int tfl__merge_shape(tfl_layer *l, int n, const int *ranks, const int64_t *const *shapes,
                     int64_t *out)
{
    bool cat = l->spec.kind == TFL_LAYER_CONCATENATE;
    int r = ranks[0];
    char sa[128], sb[128];
    int axis = cat ? (l->spec.axis < 0 ? r + l->spec.axis : l->spec.axis) : -1;
    TFL_CHECK_RET(l->ctx, !cat || (axis >= 1 && axis < r), -1, TFL_INVALID_ARGUMENT,
                  "%s: Concatenate's axis %d is not an axis of its inputs %s past the batch "
                  "axis", l->name, l->spec.axis, tfl__shape_str(r, shapes[0], sa, sizeof sa));
    memcpy(out, shapes[0], sizeof(int64_t) * (size_t)r);
    for (int i = 1; i < n; i++) {
        bool ok = ranks[i] == r;
        for (int d = 0; ok && d < r; d++) {
            if (d == axis) continue;
            ok = dim_agrees(shapes[i][d], out[d]);
            if (ok && out[d] < 0) out[d] = shapes[i][d];
        }
        TFL_CHECK_RET(l->ctx, ok, -1, TFL_INVALID_ARGUMENT,
                      "%s: %s needs inputs of one shape%s: input %d has shape %s, input 0 %s",
                      l->name, tfl_layer_kind_name(l->spec.kind),
                      cat ? " but along its axis" : "", i,
                      tfl__shape_str(ranks[i], shapes[i], sa, sizeof sa),
                      tfl__shape_str(r, shapes[0], sb, sizeof sb));
        if (!cat) continue;
        if (out[axis] < 0 || shapes[i][axis] < 0) {
            out[axis] = -1;
            continue;
        }
        TFL_CHECK_RET(l->ctx, !tfl__add_overflow_i64(out[axis], shapes[i][axis], &out[axis]), -1,
                      TFL_INVALID_ARGUMENT, "%s: Concatenate's sizes along axis %d add up to "
                      "more than INT64_MAX (at input %d, of shape %s)", l->name, l->spec.axis, i,
                      tfl__shape_str(ranks[i], shapes[i], sa, sizeof sa));
    }
    return r;
}

/* Under a mixed precision policy a merge may meet float32 and 16-bit inputs (a
 * normalisation's float32 output beside a convolution's bfloat16 one). */
static bool mixed_policy(tfl_ctx *ctx)
{
    return tfl_precision_half_dtype(tfl_ctx_precision(ctx)) != TFL_DTYPE_INVALID;
}

tfl_tensor *tfl__merge_forward(tfl_layer *l, int n, const tfl_tensor *const *xs)
{
    if (l->spec.kind == TFL_LAYER_CONCATENATE) {
        int axis = l->spec.axis < 0 ? tfl_tensor_rank(xs[0]) + l->spec.axis : l->spec.axis;
        /* inputs of two dtypes (a mixed policy) meet in the 16-bit one, as the ops' do */
        tfl_dtype dt = tfl_tensor_dtype(xs[0]);
        for (int i = 1; i < n; i++)
            if (tfl_tensor_dtype(xs[i]) != TFL_DTYPE_FLOAT32) dt = tfl_tensor_dtype(xs[i]);
        const tfl_tensor *same[TFL_MAX_LAYER_INPUTS];
        for (int i = 0; i < n; i++) {
            same[i] = tfl_tensor_dtype(xs[i]) == dt ? xs[i] : tfl_cast(l->ctx, xs[i], dt);
            if (!same[i]) return NULL;
        }
        return tfl_concat(l->ctx, n, same, axis);
    }
    tfl_tensor *y = NULL;
    const tfl_tensor *acc = xs[0];
    for (int i = 1; i < n && acc; i++) {
        y = l->spec.kind == TFL_LAYER_ADD ? tfl_add(l->ctx, acc, xs[i]) : tfl_mul(l->ctx, acc, xs[i]);
        acc = y;
    }
    return y;
}

/* n fits the kind: a merge takes 2..TFL_MAX_LAYER_INPUTS, any other kind 1 */
static bool count_ok(tfl_layer *l, int n)
{
    bool merge = tfl__layer_is_merge(l->spec.kind);
    TFL_CHECK_RET(l->ctx, merge ? n >= 2 && n <= TFL_MAX_LAYER_INPUTS : n == 1, false,
                  TFL_INVALID_ARGUMENT, "%s: %s takes %s, got %d", l->name,
                  tfl_layer_kind_name(l->spec.kind),
                  merge ? "2 to 32 inputs" : "one input", n);
    return true;
}

int tfl_layer_output_shape_n(tfl_layer *l, int n, const int *ranks, const int64_t *const *shapes,
                             int64_t *out)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_output_shape_n")) return -1;
    TFL_CHECK_RET(l->ctx, n >= 0 && ((ranks && shapes) || n == 0) && out, -1, TFL_INVALID_ARGUMENT,
                  "%s: tfl_layer_output_shape_n needs its ranks, shapes and output array",
                  l->name);
    if (!count_ok(l, n)) return -1;
    if (!tfl__layer_is_merge(l->spec.kind))
        return tfl_layer_output_shape(l, ranks[0], shapes[0], out);
    for (int i = 0; i < n; i++)
        TFL_CHECK_RET(l->ctx, ranks[i] >= 1 && ranks[i] <= TFL_MAX_RANK && shapes[i], -1,
                      TFL_INVALID_ARGUMENT, "%s: input %d needs a shape of rank 1..%d, got rank "
                      "%d", l->name, i, TFL_MAX_RANK, ranks[i]);
    return tfl__merge_shape(l, n, ranks, shapes, out);
}

tfl_tensor *tfl_layer_call_n(tfl_layer *l, int n, const tfl_tensor *const *xs, bool training)
{
    if (!l || !tfl__layer_alive(l, "tfl_layer_call_n")) return NULL;
    tfl_ctx *ctx = l->ctx;
    TFL_CHECK_RET(ctx, xs || n == 0, NULL, TFL_INVALID_ARGUMENT, "%s: the inputs are NULL",
                  l->name);
    if (!count_ok(l, n)) return NULL;
    if (!tfl__layer_is_merge(l->spec.kind)) return tfl_layer_call(l, xs[0], training);
    int ranks[TFL_MAX_LAYER_INPUTS];
    const int64_t *shapes[TFL_MAX_LAYER_INPUTS];
    for (int i = 0; i < n; i++) {
        const tfl_tensor *x = xs[i];
        if (!x) {
            TFL_CHECK_RET(ctx, tfl_ctx_status(ctx) != TFL_OK, NULL, TFL_INVALID_ARGUMENT,
                          "%s: input %d is NULL", l->name, i);
            return NULL;
        }
        TFL_CHECK_RET(ctx, x->refs > 0, NULL, TFL_MISUSE,
                      "%s: input %d was already released (use after release)", l->name, i);
        TFL_CHECK_RET(ctx, x->ctx == ctx, NULL, TFL_MISUSE,
                      "%s: input %d belongs to another context", l->name, i);
        TFL_CHECK_RET(ctx, tfl_dtype_is_floating(tfl_tensor_dtype(x)) &&
                               (tfl_tensor_dtype(x) == tfl_tensor_dtype(xs[0]) ||
                                mixed_policy(ctx)),
                      NULL,
                      TFL_INVALID_ARGUMENT, "%s: %s needs floating inputs of one dtype: input "
                      "%d is %s, input 0 %s", l->name, tfl_layer_kind_name(l->spec.kind), i,
                      tfl_dtype_name(tfl_tensor_dtype(x)), tfl_dtype_name(tfl_tensor_dtype(xs[0])));
        ranks[i] = tfl_tensor_rank(x);
        shapes[i] = tfl_tensor_shape(x);
    }
    int64_t out[TFL_MAX_RANK];
    if (tfl__merge_shape(l, n, ranks, shapes, out) < 0) return NULL;
    l->built = true; /* nothing to make */
    if (tfl_frame_push(ctx) != TFL_OK) return NULL;
    tfl_tensor *y = tfl_keep(tfl__merge_forward(l, n, xs));
    tfl_frame_pop(ctx);
    return y ? tfl__frame_adopt(ctx, y) : NULL;
}
