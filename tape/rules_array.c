/*
 * tape/rules_array.c: backward rules of the reductions, matmul (and its fused bias) and the
 * shape and indexing ops. Each is the op's adjoint written with other ops: sum <->
 * broadcast_to, slice <-> pad, gather <-> unsorted_segment_sum, reshape and transpose undo
 * themselves.
 */
#include "tape_internal.h"

#define CTX g->ctx
#define DY g->dy
#define X(i) g->in[i].saved
#define Y g->out

/* The input's shape with reduced axes kept as 1 (where dy's values line up). */
static int keep_shape(const tfl__grad_call *g, int64_t *shape)
{
    const tfl__tape_in *r = &g->in[0];
    for (int d = 0; d < r->rank; d++) shape[d] = g->attrs->reduce.reduced[d] ? 1 : r->shape[d];
    return r->rank;
}

static int reduced_axes(const tfl__grad_call *g, int *axes)
{
    int n = 0;
    for (int d = 0; d < g->in[0].rank; d++)
        if (g->attrs->reduce.reduced[d]) axes[n++] = d;
    return n;
}

TFL_RULE(sum)
{
    int64_t ks[TFL_MAX_RANK];
    int rank = keep_shape(g, ks);
    g->dx[0] = tfl_broadcast_to(CTX, tfl_reshape(CTX, DY, rank, ks), g->in[0].rank,
                                g->in[0].shape);
}

TFL_RULE(mean)
{
    int64_t ks[TFL_MAX_RANK];
    int rank = keep_shape(g, ks);
    int64_t count = g->attrs->reduce.count;
    tfl_tensor *scaled = tfl_mul(CTX, DY, tfl__scalar_like(g, DY, count ? 1.0 / (double)count : 0));
    g->dx[0] = tfl_broadcast_to(CTX, tfl_reshape(CTX, scaled, rank, ks), g->in[0].rank,
                                g->in[0].shape);
}

/* max and min: the gradient is shared equally among the elements equal to the result */
TFL_RULE(max_min)
{
    int64_t ks[TFL_MAX_RANK];
    int axes[TFL_MAX_RANK];
    int rank = keep_shape(g, ks), n = reduced_axes(g, axes);
    const tfl_tensor *x = X(0);
    tfl_tensor *hit = tfl_cast(CTX, tfl_equal(CTX, x, tfl_reshape(CTX, Y, rank, ks)),
                               (tfl_dtype)x->dtype);
    tfl_tensor *count = n ? tfl_reduce_sum(CTX, hit, n, axes, true) : hit;
    g->dx[0] = tfl_div(CTX, tfl_mul(CTX, hit, tfl_reshape(CTX, DY, rank, ks)), count);
}

/*
 * c = op(a) op(b) with op transposing the last two axes under TRANSPOSE_A / _B. With
 * A = conj(a), B = conj(b):   flags  da                  db
 *                             none   dy B^T              A^T dy
 *                             A      B dy^T              A dy
 *                             B      dy B                dy^T A
 *                             A|B    B^T dy^T            dy^T A^T
 * then summed over broadcast batch axes.
 */
static void matmul_grads(const tfl__grad_call *g)
{
    unsigned f = g->attrs->matmul.flags;
    const unsigned TA = TFL_TRANSPOSE_A, TB = TFL_TRANSPOSE_B;
    bool ta = f & TA, tb = f & TB;
    if (g->need[0]) {
        const tfl_tensor *b = tfl__cj(g, X(1));
        tfl_tensor *da = !ta ? (tb ? tfl_matmul(CTX, DY, b, 0) : tfl_matmul(CTX, DY, b, TB))
                             : (tb ? tfl_matmul(CTX, b, DY, TA | TB) : tfl_matmul(CTX, b, DY, TB));
        g->dx[0] = tfl__sum_to_input(g, da, 0);
    }
    if (g->need[1]) {
        const tfl_tensor *a = tfl__cj(g, X(0));
        tfl_tensor *db = !tb ? (ta ? tfl_matmul(CTX, a, DY, 0) : tfl_matmul(CTX, a, DY, TA))
                             : (ta ? tfl_matmul(CTX, DY, a, TA | TB) : tfl_matmul(CTX, DY, a, TA));
        g->dx[1] = tfl__sum_to_input(g, db, 1);
    }
}

TFL_RULE(matmul) { matmul_grads(g); }

/* FusedMatMul (a, b, bias): a and b as MatMul's; the bias dy summed over every row */
TFL_RULE(fused_matmul)
{
    matmul_grads(g);
    if (g->need[2]) g->dx[2] = tfl__sum_to_input(g, DY, 2);
}

TFL_RULE(reshape) { g->dx[0] = tfl_reshape(CTX, DY, g->in[0].rank, g->in[0].shape); }

TFL_RULE(transpose)
{
    int inv[TFL_MAX_RANK];
    for (int i = 0; i < g->in[0].rank; i++) inv[g->attrs->transpose.perm[i]] = i;
    g->dx[0] = tfl_transpose(CTX, DY, inv);
}

TFL_RULE(slice)
{
    const tfl__tape_in *r = &g->in[0];
    int64_t after[TFL_MAX_RANK];
    for (int d = 0; d < r->rank; d++)
        after[d] = r->shape[d] - g->attrs->slice.begin[d] - DY->shape[d];
    g->dx[0] = tfl_pad(CTX, DY, g->attrs->slice.begin, after, 0.0);
}

TFL_RULE(concat)
{
    int axis = g->attrs->axis.axis;
    int64_t begin[TFL_MAX_RANK] = {0}, at = 0;
    for (int i = 0; i < g->n_in; i++) {
        begin[axis] = at;
        if (g->need[i]) g->dx[i] = tfl_slice(CTX, DY, begin, g->in[i].shape);
        at += g->in[i].shape[axis];
    }
}

TFL_RULE(gather)
{
    int axis = g->attrs->axis.axis;
    g->dx[0] = tfl_unsorted_segment_sum(CTX, DY, X(1), g->in[0].shape[axis], axis);
}

TFL_RULE(broadcast_to) { g->dx[0] = tfl__sum_to_input(g, DY, 0); }

TFL_RULE(pad) { g->dx[0] = tfl_slice(CTX, DY, g->attrs->pad.before, g->in[0].shape); }

TFL_RULE(segment_sum)
{
    g->dx[0] = tfl_gather(CTX, DY, X(1), g->attrs->segment.axis);
}
