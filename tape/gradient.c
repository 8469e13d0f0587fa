/*
 * tape/gradient.c: the backward pass. Marks the values that depend on a source, seeds the
 * target's gradient, walks the recorded ops newest first running each one's backward rule
 * (rules.c) in a frame of its own, sums the gradients reaching each value, and hands the
 * sources' gradients to the caller. A non-persistent tape drops what each op kept as soon as
 * that op is done.
 */
#include "tape_internal.h"

#include <stdio.h>

#define SMALL_N 16 /* inputs handled without a heap array (concat may have more) */

static bool differentiable(const tfl_tensor *t)
{
    return tfl_dtype_is_floating((tfl_dtype)t->dtype) || tfl_dtype_is_complex((tfl_dtype)t->dtype);
}

static void release_saved(tfl_tape *tape, tfl__tape_node *node)
{
    tfl_tensor_release(node->out_saved);
    node->out_saved = NULL;
    for (int i = 0; i < node->n_in; i++) {
        tfl_tensor_release(tape->ins[node->first_in + i].saved);
        tape->ins[node->first_in + i].saved = NULL;
    }
}

/* Under a mixed policy a rule may give float32 for a 16-bit input or the reverse (a sum of a
 * bfloat16 gradient runs in float32, tfl__autocast): the pair that the policy mixes. */
static bool mixed_pair(tfl_ctx *ctx, tfl_dtype a, tfl_dtype b)
{
    tfl_dtype half = tfl_precision_half_dtype(tfl_ctx_precision(ctx));
    return half != TFL_DTYPE_INVALID &&
           ((a == half && b == TFL_DTYPE_FLOAT32) || (a == TFL_DTYPE_FLOAT32 && b == half));
}

/* Adds dx (checked against input r) to the gradient its entry has summed so far. */
static tfl_status accumulate(tfl_tape *tape, const tfl__tape_node *node, int i,
                             const tfl__tape_in *r, tfl_tensor *dx)
{
    tfl_ctx *ctx = tape->ctx;
    const char *op = tfl__op_defs[node->op].name;
    if (!dx) {
        if (tfl_ctx_status(ctx) != TFL_OK) return tfl_ctx_status(ctx);
        return tfl__set_error(ctx, TFL_INTERNAL, "tape: the gradient rule of %s gave no gradient "
                              "for input %d", op, i);
    }
    if (dx->dtype != r->dtype && mixed_pair(ctx, (tfl_dtype)dx->dtype, (tfl_dtype)r->dtype) &&
        !(dx = tfl_cast(ctx, dx, (tfl_dtype)r->dtype)))
        return tfl_ctx_status(ctx);
    if (dx->dtype != r->dtype || !tfl__same_shape(dx->rank, dx->shape, r->rank, r->shape)) {
        char a[128], b[128];
        return tfl__set_error(ctx, TFL_INTERNAL, "tape: the gradient rule of %s gave input %d a "
                              "%s %s gradient; the input is %s %s", op, i,
                              tfl_dtype_name((tfl_dtype)dx->dtype),
                              tfl__shape_str(dx->rank, dx->shape, a, sizeof a),
                              tfl_dtype_name((tfl_dtype)r->dtype),
                              tfl__shape_str(r->rank, r->shape, b, sizeof b));
    }
    tfl__tape_entry *e = &tape->entries[r->entry];
    if (!e->grad) {
        e->grad = tfl_keep(dx);
        return TFL_OK;
    }
    tfl_tensor *sum = tfl_add(ctx, e->grad, dx);
    if (!sum) return tfl_ctx_status(ctx) != TFL_OK ? tfl_ctx_status(ctx) : TFL_INTERNAL;
    tfl_tensor_release(e->grad);
    e->grad = tfl_keep(sum);
    return TFL_OK;
}

/* Runs node's backward rule with dy flowing into its output. */
static tfl_status run_rule(tfl_tape *tape, tfl__tape_node *node, const tfl_tensor *dy)
{
    tfl_ctx *ctx = tape->ctx;
    const tfl__grad_rule *rule = &tfl__grad_rules[node->op];
    const tfl__tape_in *in = &tape->ins[node->first_in];
    int n = node->n_in;
    bool need_s[SMALL_N], *need = need_s, any = false;
    tfl_tensor *dx_s[SMALL_N], **dx = dx_s;
    if (n > SMALL_N) {
        size_t head = ((size_t)n + 15) / 16 * 16; /* the bools, then the aligned pointers */
        need = tfl__host_alloc(ctx, head + sizeof(tfl_tensor *) * (size_t)n, 16);
        TFL_CHECK(ctx, need, TFL_RESOURCE_EXHAUSTED, "tape_gradient: out of host memory");
        dx = (tfl_tensor **)(void *)((char *)need + head);
    }
    for (int i = 0; i < n; i++) {
        need[i] = in[i].entry >= 0 && tape->entries[in[i].entry].mark != 0;
        any |= need[i];
        dx[i] = NULL;
    }
    tfl_status st = TFL_OK;
    if (!any) goto done;
    if (!rule->fn) {
        st = tfl__set_error(ctx, TFL_INTERNAL, "tape: no gradient rule for %s",
                            tfl__op_defs[node->op].name);
        goto done;
    }
    if ((st = tfl_frame_push(ctx)) != TFL_OK) goto done;
    tfl__grad_call g = {ctx, node->op, &node->attrs, n, in, need, node->out_saved, dy, dx};
    rule->fn(&g);
    for (int i = 0; i < n && st == TFL_OK; i++)
        if (need[i]) st = accumulate(tape, node, i, &in[i], dx[i]);
    tfl_frame_pop(ctx);
done:
    if (need != need_s) tfl__host_free(ctx, need);
    return st;
}

/* Marks every entry depending on a source (1) and the sources themselves (2). */
static void mark(tfl_tape *tape, int n, const tfl_tensor *const *sources)
{
    for (int32_t e = 0; e < tape->n_entries; e++) tape->entries[e].mark = 0;
    for (int i = 0; i < n; i++) {
        int32_t e = tfl__tape_find(tape, sources[i]->id);
        if (e >= 0) tape->entries[e].mark = 2;
    }
    for (int64_t k = 0; k < tape->n_nodes; k++) {
        const tfl__tape_node *node = &tape->nodes[k];
        tfl__tape_entry *out = &tape->entries[node->out_entry];
        for (int i = 0; i < node->n_in && !out->mark; i++) {
            int32_t e = tape->ins[node->first_in + i].entry;
            if (e >= 0 && tape->entries[e].mark) out->mark = 1;
        }
    }
}

/* The pass itself; results are kept references in grads (adopted by the caller). */
static tfl_status backward(tfl_tape *tape, const tfl_tensor *target,
                           const tfl_tensor *output_gradient, int n,
                           const tfl_tensor *const *sources, tfl_tensor **grads)
{
    tfl_ctx *ctx = tape->ctx;
    bool persistent = tape->flags & TFL_TAPE_PERSISTENT;
    mark(tape, n, sources);
    int32_t te = tfl__tape_find(tape, target->id);
    tfl_status st = TFL_OK;
    if (te >= 0 && tape->entries[te].mark) {
        TFL_TRY(tfl_frame_push(ctx));
        const tfl_tensor *seed = output_gradient;
        if (!seed) seed = tfl_ones_like(ctx, target);
        tape->entries[te].grad = tfl_keep((tfl_tensor *)seed);
        tfl_frame_pop(ctx);
        if (!seed) return tfl_ctx_status(ctx);
        for (int64_t k = tape->n_nodes - 1; k >= 0 && st == TFL_OK; k--) {
            tfl__tape_node *node = &tape->nodes[k];
            tfl__tape_entry *out = &tape->entries[node->out_entry];
            if (out->grad && out->mark) st = run_rule(tape, node, out->grad);
            out = &tape->entries[node->out_entry];
            if (out->mark != 2) {
                tfl_tensor_release(out->grad);
                out->grad = NULL;
            }
            if (!persistent) release_saved(tape, node);
        }
    }
    for (int i = 0; i < n && st == TFL_OK; i++) {
        int32_t e = tfl__tape_find(tape, sources[i]->id);
        grads[i] = e >= 0 ? tfl_tensor_retain(tape->entries[e].grad) : NULL;
    }
    for (int32_t e = 0; e < tape->n_entries; e++) {
        tfl_tensor_release(tape->entries[e].grad);
        tape->entries[e].grad = NULL;
    }
    return st;
}

static tfl_status check_arg(tfl_ctx *ctx, const tfl_tensor *t, const char *what, int index)
{
    char name[32];
    if (index >= 0) snprintf(name, sizeof name, "%s %d", what, index);
    else snprintf(name, sizeof name, "%s", what);
    if (!t) {
        if (tfl_ctx_status(ctx) != TFL_OK) return tfl_ctx_status(ctx); /* an earlier op failed */
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tape_gradient: %s is NULL", name);
    }
    TFL_CHECK(ctx, t->refs > 0, TFL_MISUSE,
              "tape_gradient: %s is a tensor already released (use after release)", name);
    TFL_CHECK(ctx, t->ctx == ctx, TFL_MISUSE, "tape_gradient: %s belongs to another context", name);
    TFL_CHECK(ctx, differentiable(t), TFL_INVALID_ARGUMENT,
              "tape_gradient: the dtype of %s must be floating or complex, got %s (integer and "
              "bool tensors have no gradient)", name, tfl_dtype_name((tfl_dtype)t->dtype));
    return TFL_OK;
}

tfl_status tfl_tape_vjp(tfl_tape *tape, const tfl_tensor *target,
                        const tfl_tensor *output_gradient, int n,
                        const tfl_tensor *const *sources, tfl_tensor **grads, unsigned flags)
{
    for (int i = 0; grads && i < n; i++) grads[i] = NULL;
    if (!tape) return TFL_INVALID_ARGUMENT;
    tfl_ctx *ctx = tape->ctx;
    if (!tfl__obj_check(ctx, &tape->obj, TFL__MAGIC_TAPE, "tfl_tape_gradient")) return TFL_MISUSE;
    TFL_CHECK(ctx, n >= 0 && (n == 0 || (sources && grads)), TFL_INVALID_ARGUMENT,
              "tape_gradient: n is %d with sources %s and grads %s", n, sources ? "set" : "NULL",
              grads ? "set" : "NULL");
    TFL_CHECK(ctx, (flags & ~TFL_GRAD_UNCONNECTED_ZERO) == 0, TFL_INVALID_ARGUMENT,
              "tape_gradient: unknown flags 0x%x", flags);
    TFL_TRY(check_arg(ctx, target, "the target", -1));
    for (int i = 0; i < n; i++) TFL_TRY(check_arg(ctx, sources[i], "source", i));
    if (output_gradient) {
        TFL_TRY(check_arg(ctx, output_gradient, "the output gradient", -1));
        char a[128], b[128];
        TFL_CHECK(ctx, output_gradient->dtype == target->dtype &&
                  tfl__same_shape(output_gradient->rank, output_gradient->shape, target->rank,
                                  target->shape), TFL_INVALID_ARGUMENT,
                  "tape_gradient: the output gradient is %s %s but the target is %s %s",
                  tfl_dtype_name((tfl_dtype)output_gradient->dtype),
                  tfl__shape_str(output_gradient->rank, output_gradient->shape, a, sizeof a),
                  tfl_dtype_name((tfl_dtype)target->dtype),
                  tfl__shape_str(target->rank, target->shape, b, sizeof b));
    }
    TFL_CHECK(ctx, !tape->failed, TFL_FAILED_PRECONDITION,
              "tape_gradient: the tape failed to record (out of memory); its gradient would be "
              "wrong");
    TFL_CHECK(ctx, !tape->used || (tape->flags & TFL_TAPE_PERSISTENT), TFL_FAILED_PRECONDITION,
              "tape_gradient: a non-persistent tape can only compute one gradient (begin it "
              "with TFL_TAPE_PERSISTENT to call it again)");
    tape->used = true;
    bool was_recording = tape->recording; /* the tape does not record its own backward pass */
    if (was_recording) {
        tape->recording = false;
        tfl__recording_add(ctx, -1);
    }
    tfl_status st = backward(tape, target, output_gradient, n, sources, grads);
    if (was_recording) {
        tape->recording = true;
        tfl__recording_add(ctx, 1);
    }
    if (!(tape->flags & TFL_TAPE_PERSISTENT)) tfl__tape_clear(tape);
    for (int i = 0; i < n; i++) {
        if (st != TFL_OK) {
            tfl_tensor_release(grads[i]);
            grads[i] = NULL;
        } else if (grads[i]) {
            grads[i] = tfl__frame_adopt(ctx, grads[i]);
            if (!grads[i]) st = tfl_ctx_status(ctx);
        } else if (flags & TFL_GRAD_UNCONNECTED_ZERO) {
            grads[i] = tfl_zeros_like(ctx, sources[i]);
            if (!grads[i]) st = tfl_ctx_status(ctx);
        }
    }
    if (st != TFL_OK)
        for (int i = 0; i < n; i++) grads[i] = NULL; /* frame-owned zeros go with the frame */
    return st;
}

tfl_status tfl_tape_gradient(tfl_tape *tape, const tfl_tensor *target, int n,
                             const tfl_tensor *const *sources, tfl_tensor **grads, unsigned flags)
{
    return tfl_tape_vjp(tape, target, NULL, n, sources, grads, flags);
}
