/*
 * framework/trace.c: recorded steps. A span of work on one device (a training step's forward
 * and backward) is recorded once while it runs as always: each kernel call with copies of its
 * tensor records and attributes, each copy and fill the framework issues. A replay issues the
 * same work again on new input values, without the host work in between (placement, shapes,
 * the tape, allocation): on a device with graphs (CUDA) the first replay is captured into a
 * graph and later ones launch it; elsewhere the recorded calls are made again.
 *
 * What makes a replay give the plain step's results:
 *   - memory: every block the recorded work touches is held (allocator.c's pools) until the
 *     trace is freed. Blocks the span allocates join the trace's pool, and reuse within the
 *     span follows the recording; blocks from before the span (constants) are frozen: never
 *     reused, so they keep their values. Variables are not held: a replay first checks that
 *     each variable the span touched still has the memory it had (an assign in place keeps it;
 *     anything else makes the trace stale, and the caller records again).
 *   - values: inputs are copied into buffers of the trace before each replay; uploads of host
 *     values made during the span become device constants; the caller keys the trace on every
 *     host value the span depends on (shapes, the loss scale).
 *   - refusals: work a replay would get wrong makes the recording fail, with the reason: a
 *     host read of device memory, random values (Dropout, tfl_random_*), work on another device
 *     or stream, copies into memory the span does not know.
 * Before each replay the trace checks that the replay may write what it writes (replayable():
 * its outputs and input buffers held by it alone, every other block of its pool free, each
 * variable alone on the memory it had); otherwise the caller records again.
 * What "frozen" assumes: a tensor from before the span that the span reads is never written
 * in place afterwards (true of what the fit loop's pass reads: constants and cached tensors;
 * its batch is copied into the trace's buffers first, variables are checked). A new caller of
 * this API must copy in, as inputs, whatever it rewrites between replays.
 * The caller (layers/fit.c) decides when to record and what a refusal means (plain steps).
 */
#include "internal.h"

#include <stdio.h>

enum { ITEM_KERNEL = -1 }; /* else a TFL__SLOT_* (COPY or MEMSET; uploads become copies) */

/* A tensor as a kernel call saw it: the record and its storage, copied. The references are
 * pinned high: a kernel that retains and releases its input cannot free the copy. */
typedef struct snap {
    tfl_tensor t;
    tfl__storage s;
} snap;

typedef struct item {
    int kind;
    tfl__op_id op;
    tfl__kernel_fn fn;
    int n_in;
    snap *snaps;          /* n_in inputs, then the output */
    const tfl_tensor **in; /* &snaps[i].t */
    void *attrs;          /* a copy, or NULL */
    void *dst;            /* slots: the destination, the source (or the upload's bytes) */
    const void *src;
    void *host;           /* an upload's bytes until tfl__trace_end makes them a constant */
    int value;
    size_t bytes;
} item;

typedef struct var_check {
    tfl_tensor *var; /* retained (the record; its storage's references are unchanged) */
    void *data;      /* the memory it had while recorded */
} var_check;

struct tfl__trace {
    tfl_ctx *ctx;
    tfl__device *dev;
    tfl__pool pool;       /* blocks the span allocated */
    tfl__pool frozen;     /* blocks from before the span it reads: never reused */
    tfl__pool graph_pool; /* blocks the kernels allocated while their work was captured */
    item *items;
    size_t n_items, cap_items;
    var_check *vars;
    size_t n_vars, cap_vars;
    tfl_tensor **ins, **outs, **consts; /* retained: input buffers, outputs, constants */
    int n_ins, n_outs, n_consts;
    bool refused;
    char why[200];
    void *graph;      /* the device's graph of the items, once captured */
    bool graph_tried; /* capture was attempted (and failed when graph is NULL) */
    struct tfl__trace *outer; /* a recording this one interrupted (none in practice) */
};

/* ---- recording ------------------------------------------------------------------------- */

void tfl__trace_refuse(tfl_ctx *ctx, const char *why)
{
    tfl__trace *tr = ctx->trace;
    if (!tr || tr->refused) return;
    tr->refused = true;
    snprintf(tr->why, sizeof tr->why, "%s", why);
}

static void refusef(tfl__trace *tr, const char *fmt, const char *a)
{
    char buf[200];
    snprintf(buf, sizeof buf, fmt, a);
    tfl__trace_refuse(tr->ctx, buf);
}

/* The variable whose storage is s, or NULL. */
static tfl_tensor *variable_of(tfl_ctx *ctx, const tfl__storage *s)
{
    for (size_t i = 0; i < ctx->n_vars; i++)
        if (ctx->vars[i] && ctx->vars[i]->storage == s) return ctx->vars[i];
    return NULL;
}

/* Makes t's memory the trace's to rely on (see the top of the file); false after a refusal. */
static bool see(tfl__trace *tr, const tfl_tensor *t)
{
    tfl__block *b = t->storage->block;
    if (!b) {
        tfl__trace_refuse(tr->ctx, "a tensor's memory is not the allocator's");
        return false;
    }
    if (b->pool == &tr->pool || b->pool == &tr->frozen) return true;
    tfl_tensor *v = variable_of(tr->ctx, t->storage);
    if (v) {
        for (size_t i = 0; i < tr->n_vars; i++)
            if (tr->vars[i].var == v) return true;
        if (tr->n_vars == tr->cap_vars) {
            size_t cap = tr->cap_vars ? tr->cap_vars * 2 : 32;
            var_check *nv = tfl__grow(tr->ctx, tr->vars, tr->n_vars * sizeof *nv, cap * sizeof *nv);
            if (!nv) {
                tfl__trace_refuse(tr->ctx, "out of host memory");
                return false;
            }
            tr->vars = nv;
            tr->cap_vars = cap;
        }
        tr->vars[tr->n_vars++] = (var_check){tfl_tensor_retain(v), t->storage->data};
        return true;
    }
    if (!tfl__pool_hold(&t->storage->device->alloc, &tr->frozen, b)) {
        tfl__trace_refuse(tr->ctx, b->pool ? "a tensor is in memory another recorded step holds"
                                           : "out of host memory");
        return false;
    }
    return true;
}

static void snap_of(snap *s, const tfl_tensor *t)
{
    s->t = *t;
    s->s = *t->storage;
    s->t.storage = &s->s;
    s->t.refs = INT32_MAX / 2;
    s->s.refs = INT32_MAX / 2;
    s->t.var = NULL;
    s->t.flags = 0;
    s->t.next_free = NULL;
    s->s.next_free = NULL;
}

static item *item_new(tfl__trace *tr, int kind, int n_snaps, size_t attrs_bytes)
{
    if (tr->n_items == tr->cap_items) {
        size_t cap = tr->cap_items ? tr->cap_items * 2 : 256;
        item *ni = tfl__grow(tr->ctx, tr->items, tr->n_items * sizeof *ni, cap * sizeof *ni);
        if (!ni) {
            tfl__trace_refuse(tr->ctx, "out of host memory");
            return NULL;
        }
        tr->items = ni;
        tr->cap_items = cap;
    }
    item *it = &tr->items[tr->n_items];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    if (n_snaps > 0 || attrs_bytes > 0) {
        size_t bytes = (size_t)n_snaps * (sizeof(snap) + sizeof(tfl_tensor *)) + attrs_bytes;
        char *mem = tfl__host_alloc(tr->ctx, bytes, 64);
        if (!mem) {
            tfl__trace_refuse(tr->ctx, "out of host memory");
            return NULL;
        }
        it->snaps = (snap *)mem;
        it->in = (const tfl_tensor **)(mem + (size_t)n_snaps * sizeof(snap));
        if (attrs_bytes)
            it->attrs = mem + (size_t)n_snaps * (sizeof(snap) + sizeof(tfl_tensor *));
    }
    tr->n_items++;
    return it;
}

tfl_status tfl__trace_kernel(const tfl__kernel *k, const tfl__kcall *call)
{
    tfl_ctx *ctx = call->ctx;
    tfl__trace *tr = ctx->trace;
    ctx->trace_depth++; /* what the kernel does inside is part of its call */
    tfl_status st = k->fn(call);
    ctx->trace_depth--;
    if (st != TFL_OK || tr->refused) return st;
    size_t asize = tfl__op_attrs_size(call->op);
    if (call->dev != tr->dev) {
        refusef(tr, "the step also runs work on %s", call->dev->name);
    } else if (call->op == TFL_OP_DROPOUT) {
        tfl__trace_refuse(ctx, "it draws random values (Dropout)");
    } else if (call->attrs && !asize) {
        refusef(tr, "op %s has attributes it cannot keep", tfl__op_name(call->op));
    } else {
        for (int i = 0; i < call->n_in; i++)
            if (!see(tr, call->in[i])) return st;
        if (!see(tr, call->out)) return st;
        item *it = item_new(tr, ITEM_KERNEL, call->n_in + 1, call->attrs ? asize : 0);
        if (!it) return st;
        it->op = call->op;
        it->fn = k->fn;
        it->n_in = call->n_in;
        for (int i = 0; i <= call->n_in; i++) {
            snap_of(&it->snaps[i], i < call->n_in ? call->in[i] : call->out);
            it->in[i] = &it->snaps[i].t;
        }
        if (it->attrs) memcpy(it->attrs, call->attrs, asize);
    }
    return st;
}

/* True when [p, p + bytes) lies in one block the trace relies on. */
static bool known(const tfl__trace *tr, const void *p, size_t bytes)
{
    const tfl__pool *pools[2] = {&tr->pool, &tr->frozen};
    const char *c = p;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < pools[k]->n_held; i++) {
            const tfl__block *b = pools[k]->held[i];
            const char *lo = b->ptr;
            if (b->pool == pools[k] && c >= lo && bytes <= b->size &&
                (size_t)(c - lo) <= b->size - bytes)
                return true;
        }
    return false;
}

void tfl__trace_slot(tfl__device *dev, tfl__stream *stream, int slot, void *dst,
                     const void *src, int value, size_t bytes)
{
    tfl_ctx *ctx = dev->ctx;
    tfl__trace *tr = ctx->trace;
    if (tr->refused) return;
    if (dev != tr->dev) refusef(tr, "the step also uses %s", dev->name);
    else if (stream) tfl__trace_refuse(ctx, "the step uses a second stream");
    else if (slot == TFL__SLOT_READ) tfl__trace_refuse(ctx, "the step reads device memory on "
                                                            "the host");
    else if (!known(tr, dst, bytes) || (slot == TFL__SLOT_COPY && !known(tr, src, bytes)))
        tfl__trace_refuse(ctx, "the step copies into or from memory it does not own");
    if (tr->refused) return;
    item *it = item_new(tr, slot, 0, 0);
    if (!it) return;
    it->dst = dst;
    it->src = src;
    it->value = value;
    it->bytes = bytes;
    if (slot == TFL__SLOT_UPLOAD) { /* the host's bytes as they are now */
        it->host = tfl__host_alloc(ctx, bytes, 64);
        if (it->host) memcpy(it->host, src, bytes);
        else tfl__trace_refuse(ctx, "out of host memory");
    }
}

/* ---- the trace's life -------------------------------------------------------------------- */

static void release_all(tfl_tensor **list, int n)
{
    for (int i = 0; list && i < n; i++) tfl_tensor_release(list[i]);
}

void tfl__trace_free(tfl__trace *tr)
{
    if (!tr) return;
    tfl_ctx *ctx = tr->ctx;
    tfl__device *dev = tr->dev;
    if (ctx->trace == tr) {
        ctx->trace = tr->outer;
        if (dev->alloc.active == &tr->pool) dev->alloc.active = NULL;
    }
    if (tr->graph) dev->ops->graph_free(dev, tr->graph);
    for (size_t i = 0; i < tr->n_items; i++) {
        tfl__host_free(ctx, tr->items[i].snaps);
        tfl__host_free(ctx, tr->items[i].host);
    }
    tfl__host_free(ctx, tr->items);
    for (size_t i = 0; i < tr->n_vars; i++) tfl_tensor_release(tr->vars[i].var);
    tfl__host_free(ctx, tr->vars);
    release_all(tr->ins, tr->n_ins);
    release_all(tr->outs, tr->n_outs);
    release_all(tr->consts, tr->n_consts);
    tfl__host_free(ctx, tr->ins);
    tfl__host_free(ctx, tr->outs);
    tfl__host_free(ctx, tr->consts);
    /* the device's queued work may still use the blocks: the allocator's usual rule (a freed
     * block is reused in stream order) covers it, as for any tensor freed */
    tfl__pool_release(&dev->alloc, &tr->pool);
    tfl__pool_release(&dev->alloc, &tr->frozen);
    tfl__pool_release(&dev->alloc, &tr->graph_pool);
    tfl__host_free(ctx, tr);
}

tfl__trace *tfl__trace_begin(tfl_ctx *ctx, tfl__device *dev, int n_in,
                             const tfl_tensor *const *in, tfl_tensor **in_copies)
{
    TFL_CHECK_RET(ctx, !tfl__dev_is_host(dev), NULL, TFL_INVALID_ARGUMENT,
                  "recorded steps: %s runs its kernels as they are called; there is nothing to "
                  "record", dev->name);
    tfl__trace *tr = tfl__host_alloc(ctx, sizeof *tr, 64);
    TFL_CHECK_RET(ctx, tr, NULL, TFL_RESOURCE_EXHAUSTED, "recorded steps: out of host memory");
    memset(tr, 0, sizeof *tr);
    tr->ctx = ctx;
    tr->dev = dev;
    tr->ins = tfl__host_alloc(ctx, sizeof(tfl_tensor *) * (size_t)(n_in > 0 ? n_in : 1), 64);
    if (!tr->ins) {
        tfl__host_free(ctx, tr);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "recorded steps: out of host memory");
        return NULL;
    }
    dev->alloc.active = &tr->pool; /* the input buffers are the trace's too */
    tfl_status st = TFL_OK;
    for (int i = 0; i < n_in && st == TFL_OK; i++) {
        const tfl_tensor *t = in[i];
        if (tfl__tensor_device(t) != dev) {
            st = tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "recorded steps: input %d is on %s, "
                                "not on %s", i, tfl_tensor_device(t), dev->name);
            break;
        }
        tfl_tensor *c = tfl__tensor_alloc(ctx, dev, (tfl_dtype)t->dtype, t->rank, t->shape);
        if (!c) {
            st = ctx->err_code;
            break;
        }
        tr->ins[tr->n_ins++] = c;
        const tfl_tensor *src = t;
        if (!tfl_tensor_is_contiguous(src)) src = tfl__tensor_copy_to(ctx, t, dev);
        st = src ? tfl__dev_copy_device(dev, NULL, tfl__data(c), tfl__data(src),
                                        (size_t)c->numel * tfl_dtype_size((tfl_dtype)c->dtype))
                 : ctx->err_code;
        in_copies[i] = c;
    }
    if (st != TFL_OK) {
        dev->alloc.active = NULL;
        tfl__trace_free(tr);
        return NULL;
    }
    for (int i = 0; i < n_in; i++)
        in_copies[i] = tfl__frame_adopt(ctx, tfl_tensor_retain(in_copies[i]));
    tr->outer = ctx->trace;
    ctx->trace = tr;
    return tr;
}

tfl__trace *tfl__trace_end(tfl__trace *tr, int n_out, tfl_tensor *const *out, char *why,
                           size_t size)
{
    tfl_ctx *ctx = tr->ctx;
    tfl__device *dev = tr->dev;
    if (ctx->trace == tr) ctx->trace = tr->outer;
    tr->outs = tfl__host_alloc(ctx, sizeof(tfl_tensor *) * (size_t)(n_out > 0 ? n_out : 1), 64);
    if (!tr->outs) {
        tr->refused = true;
        snprintf(tr->why, sizeof tr->why, "out of host memory");
    }
    ctx->trace = tr; /* for see()'s refusals */
    for (int i = 0; i < n_out && !tr->refused; i++) {
        for (int j = 0; out[i] && j < i; j++)
            if (out[j] && out[j]->storage == out[i]->storage) /* one tensor, or views of one */
                tfl__trace_refuse(ctx, "two of its outputs share memory");
        if (tr->refused) break;
        if (out[i] && tfl__tensor_device(out[i]) != dev) refusef(tr, "an output is on %s",
                                                                tfl_tensor_device(out[i]));
        else if (out[i] && !see(tr, out[i])) break;
        tr->outs[tr->n_outs++] = out[i] ? tfl_tensor_retain(out[i]) : NULL;
    }
    for (size_t i = 0; i < tr->n_vars && !tr->refused; i++)
        if (tr->vars[i].var->storage->data != tr->vars[i].data)
            refusef(tr, "variable '%s:0' moved to new memory during the step (a copy on write: "
                        "something else holds a view of it)", tfl__var_name(tr->vars[i].var));
    ctx->trace = tr->outer; /* what follows is the trace's own work, not the span's */
    /* uploads become device constants, copied on each replay */
    size_t n_up = 0;
    for (size_t i = 0; i < tr->n_items; i++) n_up += tr->items[i].kind == TFL__SLOT_UPLOAD;
    if (!tr->refused && n_up) {
        tr->consts = tfl__host_alloc(ctx, n_up * sizeof(tfl_tensor *), 64);
        if (!tr->consts) {
            tr->refused = true;
            snprintf(tr->why, sizeof tr->why, "out of host memory");
        }
    }
    dev->alloc.active = NULL; /* not a block of the span's: those are rewritten by replays */
    for (size_t i = 0; i < tr->n_items && !tr->refused; i++) {
        item *it = &tr->items[i];
        if (it->kind != TFL__SLOT_UPLOAD) continue;
        int64_t shape[1] = {(int64_t)it->bytes};
        tfl_tensor *c = tfl__tensor_alloc(ctx, dev, TFL_DTYPE_BOOL, 1, shape);
        if (c && !tfl__pool_hold(&dev->alloc, &tr->frozen, c->storage->block)) {
            tfl_tensor_release(c);
            c = NULL;
        }
        if (!c || tfl__dev_copy_host(dev, tfl__data(c), it->host, it->bytes, 0) != TFL_OK) {
            tfl_tensor_release(c);
            tr->refused = true;
            snprintf(tr->why, sizeof tr->why, "its constants do not fit on %s", dev->name);
            tfl_ctx_clear_error(ctx);
            break;
        }
        tr->consts[tr->n_consts++] = c;
        tfl__host_free(ctx, it->host);
        it->host = NULL;
        it->kind = TFL__SLOT_COPY;
        it->src = tfl__data(c);
    }
    ctx->trace = tr->outer;
    tr->outer = NULL;
    if (!tr->refused && (tr->pool.failed || tr->frozen.failed)) {
        tr->refused = true;
        snprintf(tr->why, sizeof tr->why, "out of host memory");
    }
    if (tr->refused) {
        if (why) snprintf(why, size, "%s", tr->why);
        tfl__trace_free(tr);
        return NULL;
    }
    return tr;
}

/* ---- replay ------------------------------------------------------------------------------- */

/* The recorded work, issued again (graph_capture's `issue`). */
static tfl_status issue(void *arg)
{
    tfl__trace *tr = arg;
    tfl_ctx *ctx = tr->ctx;
    tfl__device *dev = tr->dev;
    tfl_status st = TFL_OK;
    for (size_t i = 0; i < tr->n_items && st == TFL_OK; i++) {
        const item *it = &tr->items[i];
        if (it->kind == ITEM_KERNEL) {
            tfl__kcall call = {ctx, dev, it->op, it->n_in, it->in, &it->snaps[it->n_in].t,
                               it->attrs};
            st = it->fn(&call);
            if (st == TFL__KERNEL_DECLINED) /* it ran when recorded: the same call is taken */
                st = tfl__set_error(ctx, TFL_INTERNAL, "a recorded %s was declined on replay",
                                    tfl__op_name(it->op));
        } else if (it->kind == TFL__SLOT_COPY) {
            st = tfl__dev_copy_device(dev, NULL, it->dst, it->src, it->bytes);
        } else {
            st = tfl__dev_memset(dev, NULL, it->dst, it->value, it->bytes);
        }
    }
    return st;
}

/* The first replay on a device with graphs: the items captured into one (their blocks of
 * scratch held by graph_pool). A capture that fails leaves the device as it was and the
 * context's error as it was; the trace then issues its items itself from now on. */
static void capture(tfl__trace *tr)
{
    tfl_ctx *ctx = tr->ctx;
    tfl__device *dev = tr->dev;
    tr->graph_tried = true;
    tfl_status kept = ctx->err_code;
    char msg[TFL_MSG_SIZE];
    memcpy(msg, ctx->err_msg, sizeof msg);
    dev->alloc.active = &tr->graph_pool;
    tfl_status st = dev->ops->graph_capture(dev, issue, tr, &tr->graph);
    dev->alloc.active = NULL;
    if (st == TFL_OK && tr->graph) {
        tfl__log(ctx, TFL_LOG_INFO, "recorded step: %zu calls captured into a graph on %s",
                 tr->n_items, dev->name);
        return;
    }
    tr->graph = NULL;
    tfl__log(ctx, TFL_LOG_INFO, "recorded step: no graph on %s (%s); the %zu recorded calls are "
             "issued one by one", dev->name, ctx->err_code ? ctx->err_msg : "capture failed",
             tr->n_items);
    ctx->err_code = kept;
    memcpy(ctx->err_msg, msg, sizeof msg);
}

/* One of the trace's own tensors (an input buffer or an output), held by the trace alone: no
 * caller's reference, no view. Adds its block to *own when it is of the pool. */
static bool alone(const tfl__trace *tr, const tfl_tensor *t, size_t *own)
{
    if (!t) return true;
    if (t->refs != 1 || t->storage->refs != 1) return false;
    *own += t->storage->block && t->storage->block->pool == &tr->pool;
    return true;
}

/* Whether a replay may write what the recorded work writes: every block of the pool is free
 * or one of the trace's own tensors held by it alone (a gradient a hook kept from the last
 * step, a view of an output, a layer's cache made during the recording would otherwise be
 * rewritten under their holders), and each variable has the memory it had, to itself (a
 * snapshot sharing it would see an in-place write where a plain step copies on write). */
static bool replayable(const tfl__trace *tr)
{
    for (size_t i = 0; i < tr->n_vars; i++) {
        const tfl_tensor *v = tr->vars[i].var;
        if (v->storage->data != tr->vars[i].data || v->storage->refs != 1) return false;
    }
    size_t own = 0, free_blocks = 0;
    for (int i = 0; i < tr->n_ins; i++)
        if (!alone(tr, tr->ins[i], &own)) return false;
    for (int i = 0; i < tr->n_outs; i++)
        if (!alone(tr, tr->outs[i], &own)) return false;
    for (int c = 0; c < TFL_ALLOC_CLASSES; c++)
        for (const tfl__block *b = tr->pool.free_lists[c]; b; b = b->next) free_blocks++;
    return own + free_blocks == tr->pool.n_held;
}

tfl_status tfl__trace_replay(tfl__trace *tr, int n_in, const tfl_tensor *const *in,
                             tfl_tensor **in_copies, tfl_tensor **out, bool *stale)
{
    tfl_ctx *ctx = tr->ctx;
    tfl__device *dev = tr->dev;
    *stale = !replayable(tr);
    if (*stale) return TFL_OK;
    TFL_CHECK(ctx, n_in == tr->n_ins && !ctx->trace, TFL_INTERNAL,
              "recorded steps: a replay with %d inputs of %d%s", n_in, tr->n_ins,
              ctx->trace ? " while a step records" : "");
    TFL_TRY(tfl_frame_push(ctx));
    tfl_status st = TFL_OK;
    for (int i = 0; i < n_in && st == TFL_OK; i++) {
        const tfl_tensor *t = in[i], *c = tr->ins[i];
        if (t->dtype != c->dtype || !tfl__same_shape(t->rank, t->shape, c->rank, c->shape)) {
            st = tfl__set_error(ctx, TFL_INTERNAL, "recorded steps: input %d differs from the "
                                "recorded one", i);
            break;
        }
        if (tfl__tensor_device(t) != dev || !tfl_tensor_is_contiguous(t))
            t = tfl__tensor_copy_to(ctx, t, dev);
        st = t ? tfl__dev_copy_device(dev, NULL, tfl__data(c), tfl__data(t),
                                      (size_t)c->numel * tfl_dtype_size((tfl_dtype)c->dtype))
               : ctx->err_code;
    }
    tfl_frame_pop(ctx);
    if (st != TFL_OK) return st;
    if (!tr->graph_tried && dev->ops->graph_capture) capture(tr);
    st = tr->graph ? dev->ops->graph_launch(dev, tr->graph) : issue(tr);
    if (st != TFL_OK) {
        if (ctx->err_code == TFL_OK)
            tfl__set_error(ctx, st, "recorded steps: the replay failed on %s", dev->name);
        return st;
    }
    for (int i = 0; i < n_in; i++)
        in_copies[i] = tfl__frame_adopt(ctx, tfl_tensor_retain(tr->ins[i]));
    for (int i = 0; i < tr->n_outs; i++)
        out[i] = tr->outs[i] ? tfl__frame_adopt(ctx, tfl_tensor_retain(tr->outs[i])) : NULL;
    return TFL_OK;
}

size_t tfl__trace_calls(const tfl__trace *tr) { return tr ? tr->n_items : 0; }

bool tfl__trace_has_graph(const tfl__trace *tr) { return tr && tr->graph; }
