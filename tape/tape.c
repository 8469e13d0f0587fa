/*
 * tape/tape.c: tapes and recording: begin / watch / end / free, the id -> entry map, and
 * the hook the framework calls after each op while a tape records (record_op).
 */
#include "tape_internal.h"

/* ---- the id -> entry map ------------------------------------------------------------------- */

static uint32_t slot_of(uint64_t id, uint32_t cap)
{
    return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

int32_t tfl__tape_find(const tfl_tape *tape, uint64_t id)
{
    if (tape->cap_slots == 0) return -1;
    for (uint32_t s = slot_of(id, tape->cap_slots);; s = (s + 1) & (tape->cap_slots - 1)) {
        int32_t e = tape->slots[s];
        if (e == 0) return -1;
        if (tape->entries[e - 1].id == id) return e - 1;
    }
}

static bool grow(tfl_ctx *ctx, void **arr, void *cap, size_t elem, bool is64, int64_t need)
{
    int64_t have = is64 ? *(int64_t *)cap : *(int32_t *)cap;
    if (need <= have) return true;
    int64_t n = have ? have * 2 : 64;
    while (n < need) n *= 2;
    if (!is64 && n > INT32_MAX / 2) return false;
    void *p = tfl__grow(ctx, *arr, elem * (size_t)have, elem * (size_t)n);
    if (!p) return false;
    *arr = p;
    if (is64) *(int64_t *)cap = n;
    else *(int32_t *)cap = (int32_t)n;
    return true;
}

static bool rehash(tfl_tape *tape, uint32_t cap)
{
    int32_t *slots = tfl__host_alloc(tape->ctx, sizeof(int32_t) * cap, 64);
    if (!slots) return false;
    memset(slots, 0, sizeof(int32_t) * cap);
    for (int32_t e = 0; e < tape->n_entries; e++) {
        uint32_t s = slot_of(tape->entries[e].id, cap);
        while (slots[s]) s = (s + 1) & (cap - 1);
        slots[s] = e + 1;
    }
    tfl__host_free(tape->ctx, tape->slots);
    tape->slots = slots;
    tape->cap_slots = cap;
    return true;
}

/* Adds an entry for id (not present yet); -1 when out of memory. */
static int32_t add_entry(tfl_tape *tape, uint64_t id, int32_t node)
{
    if ((uint32_t)(tape->n_entries + 1) * 2 > tape->cap_slots &&
        !rehash(tape, tape->cap_slots ? tape->cap_slots * 2 : 256))
        return -1;
    if (!grow(tape->ctx, (void **)&tape->entries, &tape->cap_entries, sizeof(tfl__tape_entry),
              false, tape->n_entries + 1))
        return -1;
    int32_t e = tape->n_entries++;
    tape->entries[e] = (tfl__tape_entry){.id = id, .node = node};
    uint32_t s = slot_of(id, tape->cap_slots);
    while (tape->slots[s]) s = (s + 1) & (tape->cap_slots - 1);
    tape->slots[s] = e + 1;
    return e;
}

/* ---- recording -------------------------------------------------------------------------------- */

static bool differentiable(int dtype)
{
    return tfl_dtype_is_floating((tfl_dtype)dtype) || tfl_dtype_is_complex((tfl_dtype)dtype);
}

static void fail(tfl_tape *tape)
{
    tape->failed = true;
    tfl__set_error(tape->ctx, TFL_RESOURCE_EXHAUSTED, "tape: out of host memory while recording");
}

/* The entry t has on tape, watching a trainable variable on first use; -1: untracked. */
static int32_t track(tfl_tape *tape, const tfl_tensor *t)
{
    int32_t e = tfl__tape_find(tape, t->id);
    if (e >= 0 || !tfl__tensor_trainable(t) || (tape->flags & TFL_TAPE_NO_AUTO_WATCH) ||
        !differentiable(t->dtype))
        return e;
    e = add_entry(tape, t->id, -1);
    if (e < 0) fail(tape);
    return e;
}

static tfl_tensor *keep_value(tfl_ctx *ctx, const tfl_tensor *t)
{
    if (t->flags & TFL_TENSOR_FLAG_VARIABLE) return tfl__tensor_snapshot(ctx, t);
    return tfl_tensor_retain((tfl_tensor *)t);
}

static void record_on(tfl_tape *tape, tfl__op_id op, int n_in, const tfl_tensor *const *in,
                      const tfl_tensor *out, const void *attrs)
{
    tfl_ctx *ctx = tape->ctx;
    const tfl__grad_rule *rule = &tfl__grad_rules[op];
    enum { KEEP = 8 }; /* entries remembered from the first pass (concat may have more) */
    int32_t entry[KEEP];
    unsigned saves = 0;
    bool tracked = false;
    for (int i = 0; i < n_in; i++) {
        int32_t e = track(tape, in[i]);
        if (i < KEEP) entry[i] = e;
        if (e >= 0) {
            tracked = true;
            saves |= rule->saves[i < TFL_MAX_INPUTS ? i : TFL_MAX_INPUTS - 1];
        }
    }
    if (!tracked || tape->failed) return;
    if (!grow(ctx, (void **)&tape->nodes, &tape->cap_nodes, sizeof(tfl__tape_node), true,
              tape->n_nodes + 1) ||
        !grow(ctx, (void **)&tape->ins, &tape->cap_ins, sizeof(tfl__tape_in), true,
              tape->n_ins + n_in)) {
        fail(tape);
        return;
    }
    int32_t oe = add_entry(tape, out->id, (int32_t)tape->n_nodes);
    if (oe < 0) {
        fail(tape);
        return;
    }
    tfl__tape_node *node = &tape->nodes[tape->n_nodes++];
    node->op = op;
    node->n_in = n_in;
    node->first_in = tape->n_ins;
    node->out_entry = oe;
    node->out_saved = saves & TFL_SAVE_OUT ? tfl_tensor_retain((tfl_tensor *)out) : NULL;
    if (attrs && rule->attrs_size) memcpy(&node->attrs, attrs, rule->attrs_size);
    for (int i = 0; i < n_in; i++) {
        tfl__tape_in *r = &tape->ins[tape->n_ins++];
        r->entry = i < KEEP ? entry[i] : tfl__tape_find(tape, in[i]->id);
        r->dtype = in[i]->dtype;
        r->rank = in[i]->rank;
        memcpy(r->shape, in[i]->shape, sizeof(int64_t) * in[i]->rank);
        r->saved = NULL;
        if (i < 7 && (saves >> i & 1u)) {
            r->saved = keep_value(ctx, in[i]);
            if (!r->saved) fail(tape);
        }
    }
}

/* The framework's hook: offers the op to every recording tape. */
static void record_op(tfl_ctx *ctx, tfl__op_id op, int n_in, const tfl_tensor *const *in,
                      const tfl_tensor *out, const void *attrs)
{
    if ((tfl__op_defs[op].flags & TFL_OPF_NO_GRAD) || !differentiable(out->dtype)) return;
    for (tfl_tape *t = ((tfl__tapes *)tfl__tapes_get(ctx))->live; t; t = t->next)
        if (t->recording) record_on(t, op, n_in, in, out, attrs);
}

/* ---- lifetime ------------------------------------------------------------------------------------ */

/* Releases every tensor the tape keeps and empties it (arrays stay allocated). */
void tfl__tape_clear(tfl_tape *tape)
{
    for (int64_t k = 0; k < tape->n_nodes; k++) tfl_tensor_release(tape->nodes[k].out_saved);
    for (int64_t i = 0; i < tape->n_ins; i++) tfl_tensor_release(tape->ins[i].saved);
    for (int32_t e = 0; e < tape->n_entries; e++) tfl_tensor_release(tape->entries[e].grad);
    tape->n_nodes = tape->n_ins = 0;
    tape->n_entries = 0;
    if (tape->slots) memset(tape->slots, 0, sizeof(int32_t) * tape->cap_slots);
}

/* Hands the (empty) arrays of src to dst, whose own must be none. */
static void move_arrays(tfl_tape *dst, tfl_tape *src)
{
    dst->entries = src->entries;
    dst->cap_entries = src->cap_entries;
    dst->slots = src->slots;
    dst->cap_slots = src->cap_slots;
    dst->nodes = src->nodes;
    dst->cap_nodes = src->cap_nodes;
    dst->ins = src->ins;
    dst->cap_ins = src->cap_ins;
    src->entries = NULL;
    src->slots = NULL;
    src->nodes = NULL;
    src->ins = NULL;
    src->cap_entries = 0;
    src->cap_slots = 0;
    src->cap_nodes = src->cap_ins = 0;
}

static void free_arrays(tfl_ctx *ctx, tfl_tape *tape)
{
    tfl__host_free(ctx, tape->entries);
    tfl__host_free(ctx, tape->slots);
    tfl__host_free(ctx, tape->nodes);
    tfl__host_free(ctx, tape->ins);
    tfl_tape none = {0};
    move_arrays(tape, &none);
}

static void free_all(tfl_ctx *ctx)
{
    tfl__tapes *st = tfl__tapes_get(ctx);
    while (st->live) tfl_tape_free(st->live);
    free_arrays(ctx, &st->spare);
    tfl__host_free(ctx, st);
    tfl__tapes_set(ctx, NULL, record_op, free_all); /* no recording tape left */
}

/* Whether tape is a live tape; MISUSE (kept in its ctx) for a freed one. */
static bool alive(const tfl_tape *tape, const char *what)
{
    return tfl__obj_check(tape->ctx, &tape->obj, TFL__MAGIC_TAPE, what);
}

tfl_tape *tfl_tape_begin(tfl_ctx *ctx, unsigned flags)
{
    if (!ctx) return NULL;
    TFL_CHECK_RET(ctx, (flags & ~(TFL_TAPE_PERSISTENT | TFL_TAPE_NO_AUTO_WATCH)) == 0, NULL,
                  TFL_INVALID_ARGUMENT, "tape_begin: unknown flags 0x%x", flags);
    if (!tfl__tapes_get(ctx)) {
        tfl__tapes *fresh = tfl__calloc(ctx, sizeof(tfl__tapes));
        if (!fresh) return NULL;
        tfl__tapes_set(ctx, fresh, record_op, free_all);
    }
    tfl__tapes *st = tfl__tapes_get(ctx);
    tfl_tape *tape = tfl__obj_new(ctx, sizeof(tfl_tape), TFL__MAGIC_TAPE, NULL);
    if (!tape) return NULL;
    move_arrays(tape, &st->spare);
    tape->ctx = ctx;
    tape->flags = flags;
    tape->recording = true;
    tape->used = tape->failed = false;
    tape->next = st->live;
    st->live = tape;
    tfl__recording_add(ctx, 1);
    return tape;
}

tfl_status tfl_tape_watch(tfl_tape *tape, const tfl_tensor *t)
{
    if (!tape) return TFL_INVALID_ARGUMENT;
    if (!alive(tape, "tfl_tape_watch")) return TFL_MISUSE;
    tfl_ctx *ctx = tape->ctx;
    if (!t) {
        if (tfl_ctx_status(ctx) != TFL_OK) return tfl_ctx_status(ctx); /* an earlier op failed */
        return tfl__set_error(ctx, TFL_INVALID_ARGUMENT, "tape_watch: the tensor is NULL");
    }
    TFL_CHECK(ctx, t->refs > 0, TFL_MISUSE,
              "tape_watch: the tensor was already released (use after release)");
    TFL_CHECK(ctx, t->ctx == ctx, TFL_MISUSE, "tape_watch: the tensor belongs to another context");
    TFL_CHECK(ctx, differentiable(t->dtype), TFL_INVALID_ARGUMENT,
              "tape_watch: the dtype of the watched tensor must be floating or complex, got %s "
              "(integer and bool tensors have no gradient)", tfl_dtype_name((tfl_dtype)t->dtype));
    TFL_CHECK(ctx, tape->recording, TFL_FAILED_PRECONDITION,
              "tape_watch: the tape is not recording (watch before tfl_tape_end)");
    if (tfl__tape_find(tape, t->id) >= 0) return TFL_OK;
    if (add_entry(tape, t->id, -1) < 0) {
        fail(tape);
        return TFL_RESOURCE_EXHAUSTED;
    }
    return TFL_OK;
}

tfl_status tfl_tape_end(tfl_tape *tape)
{
    if (!tape) return TFL_INVALID_ARGUMENT;
    if (!alive(tape, "tfl_tape_end")) return TFL_MISUSE;
    if (tape->recording) {
        tape->recording = false;
        tfl__recording_add(tape->ctx, -1);
    }
    return TFL_OK;
}

int64_t tfl_tape_size(const tfl_tape *tape)
{
    return tape && alive(tape, "tfl_tape_size") ? tape->n_nodes : 0;
}

void tfl_tape_free(tfl_tape *tape)
{
    if (!tape || !alive(tape, "tfl_tape_free")) return;
    tfl_ctx *ctx = tape->ctx;
    tfl_tape_end(tape);
    tfl__tapes *st = tfl__tapes_get(ctx);
    for (tfl_tape **p = &st->live; *p; p = &(*p)->next)
        if (*p == tape) {
            *p = tape->next;
            break;
        }
    tape->next = NULL;
    tfl__tape_clear(tape);
    if (!st->spare.entries && !st->spare.slots && !st->spare.nodes && !st->spare.ins)
        move_arrays(&st->spare, tape); /* the next begin takes them */
    else
        free_arrays(ctx, tape);
    tfl__obj_retire(ctx, &tape->obj); /* the record stays readable: a second free is MISUSE */
}
