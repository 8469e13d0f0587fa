/*
 * layers/data_parallel.c: the data-parallel callback of tfl_model_fit (broadcast at train
 * begin, gradient all-reduce, non-trainable averaging) and fit's replicas.
 */
#include <string.h>

#include <tapeflow/distributed.h>

#include "dist/dist_api.h"
#include "layers_internal.h"

static tfl_status replicas_sum(double *values, int n, void *user)
{
    return tfl_comm_allreduce_doubles(user, values, n);
}

tfl_replicas tfl_comm_replicas(tfl_comm *comm)
{
    if (!comm || !tfl__comm_alive(comm, "tfl_comm_replicas"))
        return (tfl_replicas){.index = 0, .count = 1};
    return (tfl_replicas){.index = tfl_comm_rank(comm),
                          .count = tfl_comm_size(comm),
                          .sum = replicas_sum,
                          .user = comm};
}

/* The model's variables of `filter` (and, with opt, the optimizer's after them) in a new
 * array; *n gets the count. NULL with the error kept when out of memory. */
static tfl_tensor **gather(tfl_model *m, tfl_var_filter filter, bool opt, int *n_model,
                           int64_t *n_opt)
{
    int nm = tfl_model_variables(m, filter, NULL, 0);
    int64_t no = opt && m->optimizer ? tfl_optimizer_variables(m->optimizer, NULL, 0) : 0;
    if (no < 0) no = 0;
    tfl_tensor **v = tfl__calloc(m->ctx, ((size_t)nm + (size_t)no + 1) * sizeof *v);
    if (!v) return NULL;
    tfl_model_variables(m, filter, v, nm);
    if (no) tfl_optimizer_variables(m->optimizer, v + nm, no);
    *n_model = nm;
    *n_opt = no;
    return v;
}

/* Every rank must hold the same number of variables with the same element count before a
 * broadcast; rank 0's figures are broadcast and every rank learns whether any differs. */
static tfl_status agree(tfl_data_parallel *dp, tfl_model *m, int nm, int64_t no, int64_t numel)
{
    tfl_comm *c = dp->comm;
    const char *who = "data parallel: train begin";
    double mine[3] = {nm, (double)no, (double)numel}, root[3];
    memcpy(root, mine, sizeof root);
    TFL_TRY(tfl__comm_broadcast_bytes(c, who, root, (int64_t)sizeof root, 0));
    double differ = memcmp(root, mine, sizeof root) != 0;
    TFL_TRY(tfl_comm_allreduce_doubles(c, &differ, 1));
    TFL_CHECK(m->ctx, differ == 0, TFL_FAILED_PRECONDITION,
              "%s: %s: the ranks hold different variables (rank 0: %.0f model and %.0f "
              "optimizer variables of %.0f elements; rank %d: %d, %lld, %lld; %.0f ranks "
              "differ from rank 0): every rank must build the same model and optimizer state",
              who, m->name, root[0], root[1], root[2], tfl_comm_rank(c), nm, (long long)no,
              (long long)numel, differ);
    return TFL_OK;
}

static tfl_status dp_train_begin(tfl_model *m, void *user)
{
    tfl_data_parallel *dp = user;
    const char *who = "data parallel: train begin";
    TFL_CHECK(m->ctx, dp->comm, TFL_INVALID_ARGUMENT, "%s: no communicator (dp->comm is NULL)",
              who);
    if (!tfl__comm_alive(dp->comm, who)) return TFL_MISUSE;
    TFL_CHECK(m->ctx, tfl_comm_ctx(dp->comm) == m->ctx, TFL_MISUSE,
              "%s: the communicator belongs to "
              "another context than model %s",
              who, m->name);
    dp->steps = 0;
    dp->broadcast_done = false;
    /* each rank its own Dropout masks (the RNG state itself stays the same on every rank) */
    TFL_TRY(tfl_ctx_set_rng_replica(m->ctx, tfl_comm_rank(dp->comm)));
    TFL_CHECK(m->ctx, m->in_rank > 0, TFL_FAILED_PRECONDITION,
              "%s: model %s is not built: "
              "call tfl_model_build before fit, so that every rank starts from rank 0's "
              "weights",
              who, m->name);
    int nm;
    int64_t no;
    tfl_tensor **v = gather(m, TFL_VARS_ALL, true, &nm, &no);
    if (!v) return TFL_RESOURCE_EXHAUSTED;
    int64_t numel = 0;
    for (int64_t i = 0; i < nm + no; i++)
        numel += tfl_tensor_numel(v[i]);
    tfl_status st = TFL_OK;
    if (tfl_comm_size(dp->comm) > 1) st = agree(dp, m, nm, no, numel);
    if (st == TFL_OK) st = tfl_comm_broadcast(dp->comm, (int)(nm + no), v, 0);
    tfl__host_free(m->ctx, v);
    dp->broadcast_done = st == TFL_OK;
    return st;
}

static tfl_status dp_gradients(tfl_model *m, int n, tfl_tensor *const *vars, tfl_tensor **grads,
                               const tfl_step_logs *logs, void *user, bool *skip)
{
    (void)m, (void)skip;
    tfl_data_parallel *dp = user;
    return tfl_comm_allreduce_gradients(dp->comm, n, vars, grads, (double)logs->samples);
}

static tfl_status dp_step_end(tfl_model *m, const tfl_step_logs *logs, void *user, bool *stop)
{
    (void)stop;
    tfl_data_parallel *dp = user;
    dp->steps++;
    if (dp->no_average_non_trainable || tfl_comm_size(dp->comm) == 1) return TFL_OK;
    int nm;
    int64_t no;
    tfl_tensor **v = gather(m, TFL_VARS_NON_TRAINABLE, false, &nm, &no);
    if (!v) return TFL_RESOURCE_EXHAUSTED;
    /* floating ones averaged (weighted by rows), the others broadcast from rank 0 */
    int nf = 0, ni = 0;
    for (int i = 0; i < nm; i++) {
        tfl_dtype dt = tfl_tensor_dtype(v[i]);
        if (dt == TFL_DTYPE_FLOAT32 || dt == TFL_DTYPE_FLOAT64)
            v[nf++] = v[i];
        else
            ni++;
    }
    tfl_status st = TFL_OK;
    if (nf)
        st = tfl_comm_allreduce(dp->comm, nf, v, TFL_REDUCE_WEIGHTED_MEAN, (double)logs->samples);
    if (st == TFL_OK && ni) {
        int k = 0;
        tfl_model_variables(m, TFL_VARS_NON_TRAINABLE, v, nm);
        for (int i = 0; i < nm; i++) {
            tfl_dtype dt = tfl_tensor_dtype(v[i]);
            if (dt != TFL_DTYPE_FLOAT32 && dt != TFL_DTYPE_FLOAT64) v[k++] = v[i];
        }
        st = tfl_comm_broadcast(dp->comm, k, v, 0);
    }
    tfl__host_free(m->ctx, v);
    return st;
}

tfl_callback tfl_data_parallel_callback(tfl_data_parallel *dp)
{
    return (tfl_callback){.on_train_begin = dp_train_begin,
                          .on_gradients = dp_gradients,
                          .on_step_end = dp_step_end,
                          .user = dp};
}
