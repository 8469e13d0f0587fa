/*
 * framework/cuda/cudnn_graph.h: the convolutions through cuDNN's graph API (cudnn_graph.c),
 * which cudnn_conv.c tries first for each shape.
 */
#ifndef TFL_CUDNN_GRAPH_H
#define TFL_CUDNN_GRAPH_H

#include "cuda_internal.h"

#include <cudnn.h>

/** A shape's execution plan and the descriptors it was built from. */
struct tfl__dnn_plan;

/**
 * Builds the operation graph of one convolution (kind, shape g, data type dt; tensors NHWC,
 * the filter KRSC; every pointer aligned to `align` bytes) and picks an execution plan:
 * the fastest of the admissible ones timed on x, w, y and work (tune; the output is
 * overwritten, the op's real run writes it again) or the first in cuDNN's heuristic order
 * (!tune: nothing runs, the pointers may be NULL). tensor_cores: TF32 may be used; det:
 * deterministic engines only; ws_limit: the most workspace a plan may ask for (work holds that
 * much when tune). Returns the plan, with *tried plans timed and *best_ms its time; or NULL
 * with the reason in why (the caller runs the legacy API), or NULL with *no_memory and
 * RESOURCE_EXHAUSTED kept when there was no host memory for it (the op fails).
 */
struct tfl__dnn_plan *tfl__dnn_plan_choose(const tfl__kcall *k, cudnnHandle_t h,
                                           tfl__conv_kind kind, const tflcu_conv *g,
                                           cudnnDataType_t dt, bool det, bool tensor_cores,
                                           bool tune, int64_t ws_limit, int64_t align,
                                           const void *x, const void *w, const void *y,
                                           void *work, int *tried, float *best_ms,
                                           bool *no_memory, char *why, size_t size);
/** Runs plan p on the stream h is bound to: x, w, y are dx and dy for BWD_DATA, dw for
 * BWD_FILTER; work holds tfl__dnn_plan_workspace(p) bytes (NULL when 0). */
cudnnStatus_t tfl__dnn_plan_execute(cudnnHandle_t h, const struct tfl__dnn_plan *p, const void *x,
                                    const void *w, const void *y, void *work);
/** The workspace bytes plan p needs, and cuDNN's global index of its engine (for the log). */
int64_t tfl__dnn_plan_workspace(const struct tfl__dnn_plan *p);
int64_t tfl__dnn_plan_engine(const struct tfl__dnn_plan *p);
/** Destroys p and its descriptors (NULL: nothing). */
void tfl__dnn_plan_free(tfl_ctx *ctx, struct tfl__dnn_plan *p);

#endif /* TFL_CUDNN_GRAPH_H */
