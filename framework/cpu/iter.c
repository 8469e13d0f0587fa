/*
 * framework/cpu/iter.c: the strided N-d iterator of the CPU backend (see cpu.h), the
 * plain copies built on it, and element loads used by slow paths (tensor_get, format).
 */
#include "cpu.h"

#include <complex.h>
#include <omp.h>

void tfl__iter_init(tfl__iter *it, int rank, const int64_t *shape, int n,
                    const tfl_tensor *const *ops)
{
    int64_t st[TFL_ITER_MAX_OPS][TFL_MAX_RANK];
    it->nops = n;
    for (int i = 0; i < n; i++) {
        const tfl_tensor *t = ops[i];
        int64_t es = (int64_t)tfl_dtype_size((tfl_dtype)t->dtype);
        int off = rank - t->rank;
        for (int d = 0; d < rank; d++) {
            int od = d - off;
            bool bcast = od < 0 || (t->shape[od] == 1 && shape[d] != 1) || shape[d] == 1;
            st[i][d] = bcast ? 0 : t->strides[od] * es;
        }
        it->base[i] = (char *)tfl__data(t);
    }
    /* drop size-1 dims and merge dims every operand walks contiguously */
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 1) continue;
        bool merge = r > 0;
        for (int i = 0; merge && i < n; i++)
            merge = it->strides[i][r - 1] == st[i][d] * shape[d];
        if (merge) {
            it->shape[r - 1] *= shape[d];
            for (int i = 0; i < n; i++) it->strides[i][r - 1] = st[i][d];
        } else {
            it->shape[r] = shape[d];
            for (int i = 0; i < n; i++) it->strides[i][r] = st[i][d];
            r++;
        }
    }
    if (r == 0) {
        it->shape[0] = 1;
        for (int i = 0; i < n; i++) it->strides[i][0] = 0;
        r = 1;
    }
    it->rank = r;
    it->numel = tfl__numel(r, it->shape);
}

/* Runs fn over the flat iteration range [lo, hi). */
static void run_range(const tfl__iter *it, int64_t lo, int64_t hi, tfl__loop_fn fn,
                      const void *aux)
{
    const int r = it->rank, n_ops = it->nops;
    const int64_t inner = it->shape[r - 1];
    int64_t idx[TFL_MAX_RANK], s[TFL_ITER_MAX_OPS];
    char *p[TFL_ITER_MAX_OPS];
    int64_t rem = lo;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int i = 0; i < n_ops; i++) {
        p[i] = it->base[i];
        for (int d = 0; d < r; d++) p[i] += idx[d] * it->strides[i][d];
        s[i] = it->strides[i][r - 1];
    }
    for (int64_t pos = lo; pos < hi;) {
        int64_t n = inner - idx[r - 1];
        if (n > hi - pos) n = hi - pos;
        fn(n, p, s, aux);
        pos += n;
        idx[r - 1] += n;
        for (int i = 0; i < n_ops; i++) p[i] += n * s[i];
        if (idx[r - 1] < inner) continue;
        idx[r - 1] = 0; /* carry into the outer dims */
        for (int i = 0; i < n_ops; i++) p[i] -= inner * s[i];
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++;
            for (int i = 0; i < n_ops; i++) p[i] += it->strides[i][d];
            if (idx[d] < it->shape[d]) break;
            for (int i = 0; i < n_ops; i++) p[i] -= it->shape[d] * it->strides[i][d];
            idx[d] = 0;
        }
    }
}

void tfl__iter_run(const tfl__iter *it, tfl__loop_fn fn, const void *aux, int threads,
                   bool parallel)
{
    int64_t total = it->numel;
    if (total == 0) return;
    if (!parallel || threads <= 1 || total < TFL_CPU_PARALLEL_MIN) {
        run_range(it, 0, total, fn, aux);
        return;
    }
    int64_t max_threads = total / (TFL_CPU_PARALLEL_MIN / 2);
    if (threads > max_threads) threads = (int)max_threads;
#pragma omp parallel num_threads(threads)
    {
        int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = total * t / nt, hi = total * (t + 1) / nt;
        run_range(it, lo, hi, fn, aux);
    }
}

/* ---- copies by element size ------------------------------------------------------------- */

#define COPY_LOOP(name, T)                                                        \
    static void name(int64_t n, char **p, const int64_t *s, const void *aux)      \
    {                                                                             \
        (void)aux;                                                                \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                             \
            memcpy(p[0], p[1], (size_t)n * sizeof(T));                            \
            return;                                                               \
        }                                                                         \
        for (int64_t i = 0; i < n; i++)                                           \
            memcpy(p[0] + i * s[0], p[1] + i * s[1], sizeof(T));                  \
    }
typedef struct { double re, im; } bytes16;
COPY_LOOP(copy1, uint8_t)
COPY_LOOP(copy2, uint16_t)
COPY_LOOP(copy4, uint32_t)
COPY_LOOP(copy8, uint64_t)
COPY_LOOP(copy16, bytes16)

tfl__loop_fn tfl__copy_loop(size_t elem_size)
{
    switch (elem_size) {
    case 1: return copy1;
    case 2: return copy2;
    case 4: return copy4;
    case 8: return copy8;
    default: return copy16;
    }
}

void tfl__cpu_copy(tfl_tensor *dst, const tfl_tensor *src)
{
    tfl__iter it;
    const tfl_tensor *ops[2] = {dst, src};
    tfl__iter_init(&it, dst->rank, dst->shape, 2, ops);
    tfl__iter_run(&it, tfl__copy_loop(tfl_dtype_size((tfl_dtype)dst->dtype)), NULL,
                  dst->ctx->num_threads, true);
}

void tfl__cpu_copy_to_buffer(void *dst, const tfl_tensor *src)
{
    /* describe the buffer as a contiguous tensor record on the stack */
    tfl_tensor view = *src;
    tfl__storage st = *src->storage;
    st.data = dst;
    view.storage = &st;
    view.offset = 0;
    tfl__contiguous_strides(src->rank, src->shape, view.strides);
    tfl__cpu_copy(&view, src);
}

const tfl_tensor *tfl__cpu_contiguous(tfl_ctx *ctx, const tfl_tensor *t, tfl_tensor **tmp)
{
    *tmp = NULL;
    if (tfl_tensor_is_contiguous(t)) return t;
    *tmp = tfl__tensor_alloc(ctx, tfl__tensor_device(t), (tfl_dtype)t->dtype, t->rank, t->shape);
    if (!*tmp) return NULL;
    tfl__cpu_copy(*tmp, t);
    return *tmp;
}
