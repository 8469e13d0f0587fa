/*
 * framework/cpu/k_conv.c: CPU kernels of Conv2D, Conv2DBackpropInput and
 * Conv2DBackpropFilter (float32, float64; NHWC images, HWIO filters) as im2col + GEMM:
 *   forward          y (M, Cout)   = col(x) (M, K) * w (K, Cout)
 *   backprop filter  dw (K, Cout)  = sum over chunks of col(x)^T dy
 *   backprop input   dx            = col2im(dy (M, Cout) * w^T (Cout, K))
 * with M = N OH OW output pixels and K = KH KW Cin taps (conv_loops.h lays col out). A 1x1
 * filter with stride 1 and no padding needs no im2col: x itself is col. The GEMMs are
 * narrow (n is Cout or K): gemm_narrow.c's kernel runs them where the CPU has AVX-512, since
 * BLIS would spend as long packing col as multiplying; BLIS (the device's contexts) runs
 * them elsewhere and for wide n.
 *
 * How the work is split (make_plan()) never depends on the thread count, so neither do the
 * results: every output element is the same sum, added in the same order, on any number of
 * threads (the GEMMs' per-row sums do not depend on their threads either). The pixels are
 * cut into ranges one of two ways:
 *  - blocks of whole images, where an image's im2col fits in a quarter of COL_CAP: about
 *    TASK_BYTES of im2col a block (so col is still in cache when the gemm reads it), at
 *    least TASK_ROWS output pixels (twice that for a filter over FILTER_BYTES, whose every
 *    pass costs more), so the gemms of small feature maps (7x7: 49 pixels an image) are tall
 *    enough to reuse the filter; their count a multiple of 8 (4 below 8), so 2, 4 or 8
 *    threads share them evenly. With at least as many blocks as threads, each thread takes
 *    blocks with its own im2col buffer and a one-thread gemm (backprop input's col2im stays
 *    in the block's images, so no two threads write one element); with fewer, the blocks
 *    run one after the other, each with a threaded im2col / col2im and gemm;
 *  - chunks of whole output rows (huge images), one after the other, threaded as above.
 * The backprop filter sums its blocks in groups: see there.
 * Scratch comes from the device's caching allocator (no malloc once warm) and never exceeds
 * COL_CAP bytes of im2col memory.
 */
#include "ops/op.h"
#include "cpu.h"
#include "kernels.h"

#include <omp.h>

#define COL_CAP ((int64_t)32 << 20)     /* bytes of im2col memory an op may hold */
#define TASK_BYTES ((int64_t)512 << 10) /* im2col bytes a task aims at */
#define TASK_ROWS 512                      /* the fewest output pixels a task aims at */
#define FILTER_BYTES ((int64_t)1 << 20)    /* a filter above this wants tasks twice as tall */

/* The shapes of one convolution (elements) and its window. */
typedef struct geom {
    int64_t n, h, w, c;     /* input (N, H, W, Cin) */
    int64_t kh, kw, f;      /* filter (KH, KW, Cin, Cout): KH, KW, Cout */
    int64_t oh, ow;         /* output (N, OH, OW, Cout) */
    int64_t sh, sw, dh, dw; /* strides, dilations */
    int64_t pt, pl;         /* padding before the first row, column */
    int64_t kdim;           /* KH KW Cin: the taps, a row of col */
} geom;

#define T float
#define FN(name) name##_f32
#include "conv_loops.h"
#undef T
#undef FN
#define T double
#define FN(name) name##_f64
#include "conv_loops.h"
#undef T
#undef FN

static geom make_geom(const int64_t *xs, const int64_t *fs, const int64_t *ys,
                      const tfl__window_attrs *a)
{
    geom g = {.n = xs[0],
              .h = xs[1],
              .w = xs[2],
              .c = xs[3],
              .kh = fs[0],
              .kw = fs[1],
              .f = fs[3],
              .oh = ys[1],
              .ow = ys[2],
              .sh = a->strides[0],
              .sw = a->strides[1],
              .dh = a->dilations[0],
              .dw = a->dilations[1],
              .pt = a->pad[0],
              .pl = a->pad[1],
              .kdim = fs[0] * fs[1] * fs[2]};
    return g;
}

/* How the work is split (see the top of the file). */
typedef struct plan {
    int threads;       /* for the whole op; 1 for small ones */
    bool direct;       /* 1x1, stride 1, no padding: x is its own im2col */
    bool blocks;       /* ranges of whole images (else chunks of output rows) */
    int64_t count;     /* blocks or chunks */
    int64_t per;       /* chunks: output pixels per chunk (whole output rows) */
    int64_t col_bytes; /* the im2col buffer of the largest block or chunk */
    int team;          /* threads taking blocks side by side; 1: ranges in turn */
} plan;

static plan make_plan(const tfl__kcall *k, const geom *g, size_t es)
{
    plan p = {1, false, false, 0, 0, 0, 1};
    int64_t ohw = g->oh * g->ow, m = g->n * ohw;
    double flops = 2.0 * (double)m * (double)g->kdim * (double)g->f;
    p.threads = flops >= 2.0 * 64 * 64 * 64 ? k->ctx->num_threads : 1;
    p.direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0;
    int64_t img = ohw * g->kdim * (int64_t)es; /* one image's im2col bytes */
    if (ohw > 0 && img <= COL_CAP / 4) {
        p.blocks = true;
        int64_t per = TASK_BYTES / (img ? img : 1);
        /* at least TASK_ROWS pixels (twice that for a filter over FILTER_BYTES) */
        int64_t rows = g->kdim * g->f * (int64_t)es > FILTER_BYTES ? 2 * TASK_ROWS : TASK_ROWS;
        if (per * ohw < rows) per = (rows + ohw - 1) / ohw;
        if (per * img > COL_CAP / 4) per = COL_CAP / 4 / (img ? img : 1);
        if (per < 1) per = 1;
        int64_t count = (g->n + per - 1) / per;
        count = count > 8 ? (count + 7) / 8 * 8 : count > 1 ? (count + 3) / 4 * 4 : count;
        if (count > g->n) count = g->n;
        p.count = count;
        p.col_bytes = (g->n + count - 1) / count * img; /* the largest block */
        /* side by side only where every thread gets a buffer within COL_CAP (at least 4 do):
           a team smaller than the threads would idle cores that threaded GEMMs use */
        if (count >= p.threads && p.threads > 1 && p.col_bytes * p.threads <= COL_CAP)
            p.team = p.threads;
    } else {
        int64_t row = g->ow * g->kdim * (int64_t)es; /* one output row's im2col bytes */
        int64_t rows = COL_CAP / (row ? row : 1);
        if (rows < 1) rows = 1;
        if (rows > g->n * g->oh) rows = g->n * g->oh;
        p.per = rows * g->ow;
        p.count = p.per ? (m + p.per - 1) / p.per : 0;
        p.col_bytes = p.per * g->kdim * (int64_t)es;
    }
    return p;
}

/* The output pixels [m0, m1) of range i (a block of whole images or a chunk of rows); blocks'
 * sizes differ by at most one image. */
static void range_of(const plan *p, const geom *g, int64_t i, int64_t *m0, int64_t *m1)
{
    const int64_t ohw = g->oh * g->ow, m = g->n * ohw;
    if (p->blocks) {
        *m0 = i * g->n / p->count * ohw;
        *m1 = (i + 1) * g->n / p->count * ohw;
    } else {
        *m0 = i * p->per;
        *m1 = *m0 + p->per < m ? *m0 + p->per : m;
    }
}

static void im2col(const geom *g, bool f32, const void *x, int64_t m0, int64_t m1, void *col)
{
    if (f32)
        im2col_f32(g, x, m0, m1, col);
    else
        im2col_f64(g, x, m0, m1, col);
}

/* im2col of the pixels [m0, m1) shared among `threads` */
static void im2col_par(const geom *g, bool f32, const void *x, int64_t m0, int64_t m1, char *col,
                       size_t es, int threads)
{
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int t = 0; t < threads; t++) {
        int64_t a = m0 + (m1 - m0) * t / threads, b = m0 + (m1 - m0) * (t + 1) / threads;
        im2col(g, f32, x, a, b, col + (size_t)((a - m0) * g->kdim) * es);
    }
}

/* col2im of the pixels [m0, m1) (dcol) into the dx rows r0..r1 - 1 (r = n H + ih) */
static void col2im_rows(const geom *g, bool f32, const void *dcol, int64_t m0, int64_t m1,
                        int64_t r0, int64_t r1, char *dx, size_t es, int threads)
{
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (int64_t r = r0; r < r1; r++) {
        char *row = dx + (size_t)(r * g->w * g->c) * es;
        if (f32)
            col2im_row_f32(g, dcol, m0, m1, r / g->h, r % g->h, (float *)row);
        else
            col2im_row_f64(g, dcol, m0, m1, r / g->h, r % g->h, (double *)row);
    }
}

/* Contiguous copies of the kernel's two inputs where they are views; false (error kept)
 * when out of memory. */
static bool inputs(const tfl__kcall *k, const tfl_tensor **a, const tfl_tensor **b, tfl_tensor **ta,
                   tfl_tensor **tb)
{
    *a = tfl__cpu_contiguous(k->ctx, k->in[0], ta);
    *b = *a ? tfl__cpu_contiguous(k->ctx, k->in[1], tb) : NULL;
    return *b != NULL;
}

/* The widest n the narrow kernel takes; wider products go to BLIS, whose packing pays. */
#define NARROW_MAX 512

/* C (m x n, row-major) = A B, or C + A B (accumulate): A (i, l) at a[i rsa + l csa], B
 * row-major (ldb); the narrow kernel where it runs, else BLIS */
static void gemm(const tfl__kcall *k, tfl_dtype dt, int threads, int64_t m, int64_t n, int64_t kk,
                 const void *a, int64_t rsa, int64_t csa, const void *b, int64_t ldb,
                 bool accumulate, void *c, int64_t ldc)
{
    if (n <= NARROW_MAX && tfl__cpu_gemm_narrow(dt, threads, m, n, kk, a, rsa, csa, b, ldb, c, ldc,
                                                accumulate, NULL, NULL))
        return;
    tfl__cpu_gemm(k->dev, dt, threads, m, n, kk, a, rsa, csa, b, ldb, 1, accumulate ? 1.0 : 0.0, c,
                  ldc, 1);
}

static void *scratch_get(const tfl__kcall *k, int64_t bytes, size_t *got)
{
    return tfl__allocator_get(&k->dev->alloc, (size_t)(bytes > 0 ? bytes : 1), got);
}

/* t (cols, rows) = the transpose of the row-major (rows, cols) matrix s */
static void transpose(bool f32, const void *s, int64_t rows, int64_t cols, void *t)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            if (f32)
                ((float *)t)[j * rows + i] = ((const float *)s)[i * cols + j];
            else
                ((double *)t)[j * rows + i] = ((const double *)s)[i * cols + j];
        }
}

/* ---- Conv2D: y = col(x) w ------------------------------------------------------------------- */

/* y (N OH OW, Cout) = col(x) w for the geometry g, w (K, Cout) row-major: the work of Conv2D,
 * and of Conv2DBackpropInput at stride 1 (a convolution of dy, see there). */
static tfl_status conv_forward(const tfl__kcall *k, const geom *g, tfl_dtype dt, const char *xd,
                               const char *wd, char *yd)
{
    bool f32 = dt == TFL_DTYPE_FLOAT32;
    size_t es = tfl_dtype_size(dt), got = 0;
    const int64_t m = g->n * g->oh * g->ow, K = g->kdim, F = g->f;
    plan p = make_plan(k, g, es);
    if (p.direct) {
        gemm(k, dt, p.threads, m, F, K, xd, K, 1, wd, F, false, yd, F);
        return TFL_OK;
    }
    char *scratch = scratch_get(k, p.col_bytes * p.team, &got);
    if (!scratch) return k->ctx->err_code;
    /* side by side, each range on one thread; or in turn, each on all (no parallel region
       around them: libgomp would make a new team for every nested one) */
#define FORWARD_RANGE(i, col, threads)                                                      \
    do {                                                                                    \
        int64_t m0, m1;                                                                     \
        range_of(&p, g, i, &m0, &m1);                                                       \
        im2col_par(g, f32, xd, m0, m1, col, es, threads);                                   \
        gemm(k, dt, threads, m1 - m0, F, K, col, K, 1, wd, F, false,                        \
             yd + (size_t)(m0 * F) * es, F);                                                \
    } while (0)
    if (p.team > 1) {
#pragma omp parallel num_threads(p.team)
        {
            char *col = scratch + (size_t)(omp_get_thread_num() * p.col_bytes);
#pragma omp for schedule(static)
            for (int64_t i = 0; i < p.count; i++) FORWARD_RANGE(i, col, 1);
        }
    } else {
        for (int64_t i = 0; i < p.count; i++) FORWARD_RANGE(i, scratch, p.threads);
    }
#undef FORWARD_RANGE
    tfl__allocator_put(&k->dev->alloc, scratch, got);
    return TFL_OK;
}

static tfl_status k_conv2d(const tfl__kcall *k)
{
    const tfl_tensor *x, *w;
    tfl_tensor *tx = NULL, *tw = NULL;
    tfl_status st = TFL_OK;
    if (!inputs(k, &x, &w, &tx, &tw)) {
        st = k->ctx->err_code; /* set by the failed copy */
    } else if (k->out->numel > 0) {
        geom g = make_geom(x->shape, w->shape, k->out->shape, k->attrs);
        st = conv_forward(k, &g, (tfl_dtype)k->out->dtype, tfl__data(x), tfl__data(w),
                          tfl__data(k->out));
    }
    tfl_tensor_release(tx);
    tfl_tensor_release(tw);
    return st;
}

/* ---- Conv2DBackpropFilter: dw = sum col(x)^T dy ----------------------------------------- */

/*
 * dw sums over every output pixel, so how the pixels are grouped decides its bits. The ranges
 * of make_plan (blocks or chunks, never depending on the threads) are cut into `groups` runs
 * of consecutive ranges: each group sums its ranges in order into its own partial dw (group 0
 * into dw itself), the groups side by side, and the partials are added in group order in
 * double. Up to GROUPS groups, fewer where the partials would pass PART_CAP; chunks (huge
 * images) are one group. One group runs its ranges in turn with a threaded im2col and gemm.
 */
#define GROUPS 8
#define PART_CAP ((int64_t)32 << 20) /* bytes of partial dw an op may hold */

/* dw (or dw + it, accumulate) = col(x)^T dy over the pixels of ranges [r0, r1), in order */
static void filter_ranges(const tfl__kcall *k, const geom *g, tfl_dtype dt, int threads,
                          const plan *p, int64_t r0, int64_t r1, const char *xd, const char *dyd,
                          char *col, char *dw)
{
    bool f32 = dt == TFL_DTYPE_FLOAT32;
    size_t es = tfl_dtype_size(dt);
    const int64_t K = g->kdim, F = g->f;
    for (int64_t i = r0; i < r1; i++) {
        int64_t m0, m1;
        range_of(p, g, i, &m0, &m1);
        im2col_par(g, f32, xd, m0, m1, col, es, threads);
        gemm(k, dt, threads, K, F, m1 - m0, col, 1, K, dyd + (size_t)(m0 * F) * es, F, i > r0,
             dw, F);
    }
}

static tfl_status k_conv2d_backprop_filter(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    const tfl_tensor *x, *dy;
    tfl_tensor *tx = NULL, *tdy = NULL;
    tfl_status st = TFL_OK;
    char *scratch = NULL;
    size_t got = 0;
    if (!inputs(k, &x, &dy, &tx, &tdy)) {
        st = ctx->err_code;
        goto done;
    }
    const tfl__window_attrs *a = k->attrs;
    geom g = make_geom(x->shape, a->shape, dy->shape, a);
    tfl_dtype dt = (tfl_dtype)k->out->dtype;
    bool f32 = dt == TFL_DTYPE_FLOAT32;
    size_t es = tfl_dtype_size(dt);
    const int64_t m = g.n * g.oh * g.ow, K = g.kdim, F = g.f;
    const char *xd = tfl__data(x), *dyd = tfl__data(dy);
    char *dw = tfl__data(k->out);
    if (k->out->numel == 0) goto done;
    if (m == 0) { /* an empty batch: no pixel adds anything */
        memset(dw, 0, (size_t)k->out->numel * es);
        goto done;
    }
    plan p = make_plan(k, &g, es);
    if (p.direct) { /* one GEMM over every pixel */
        gemm(k, dt, p.threads, K, F, m, xd, 1, K, dyd, F, false, dw, F);
        goto done;
    }
    /* the groups, from the shapes alone; side by side on `team` threads where each gets an
       im2col buffer within COL_CAP, else in turn */
    const int64_t part = (K * F * (int64_t)es + 63) / 64 * 64;
    int64_t groups = p.blocks ? 1 + PART_CAP / part : 1; /* group 0 needs no buffer */
    if (groups > GROUPS) groups = GROUPS;
    if (groups > p.count) groups = p.count;
    int64_t team = groups < p.threads ? groups : p.threads;
    if (team * p.col_bytes > COL_CAP) team = 1; /* groups in turn, with threaded GEMMs */
    /* scratch: the partials of groups 1.., then an im2col buffer a thread */
    scratch = scratch_get(k, (groups - 1) * part + team * p.col_bytes, &got);
    if (!scratch) {
        st = ctx->err_code;
        goto done;
    }
    char *cols = scratch + (size_t)((groups - 1) * part);
    if (team == 1) /* each group in turn, its ranges with threaded im2col and GEMMs */
        for (int64_t j = 0; j < groups; j++)
            filter_ranges(k, &g, dt, p.threads, &p, j * p.count / groups,
                          (j + 1) * p.count / groups, xd, dyd, cols,
                          j == 0 ? dw : scratch + (size_t)((j - 1) * part));
    if (groups == 1) goto done;
#pragma omp parallel num_threads(team > 1 ? (int)team : p.threads) if (p.threads > 1)
    {
        char *col = cols + (size_t)(omp_get_thread_num() * p.col_bytes);
        if (team > 1) {
#pragma omp for schedule(static)
            for (int64_t j = 0; j < groups; j++) {
                char *pj = j == 0 ? dw : scratch + (size_t)((j - 1) * part);
                filter_ranges(k, &g, dt, 1, &p, j * p.count / groups, (j + 1) * p.count / groups,
                              xd, dyd, col, pj);
            }
        }
        /* dw = the partials added in group order (the loop's end is a barrier) */
#pragma omp for schedule(static)
        for (int64_t e = 0; e < K * F; e++) {
            double s = f32 ? (double)((const float *)dw)[e] : ((const double *)dw)[e];
            for (int64_t j = 1; j < groups; j++) {
                const char *pj = scratch + (size_t)((j - 1) * part);
                s += f32 ? (double)((const float *)pj)[e] : ((const double *)pj)[e];
            }
            if (f32)
                ((float *)dw)[e] = (float)s;
            else
                ((double *)dw)[e] = s;
        }
    }
done:
    if (scratch) tfl__allocator_put(&k->dev->alloc, scratch, got);
    tfl_tensor_release(tx);
    tfl_tensor_release(tdy);
    return st;
}

/* ---- Conv2DBackpropInput: dx = col2im(dy w^T) ------------------------------------------- */

/*
 * At stride 1 dx is itself a convolution, of dy: with the filter flipped in space and its
 * channels swapped, wf (KH, KW, Cout, Cin) [i, j, o, c] = w[KH-1-i, KW-1-j, c, o], and the
 * padding before each axis span - 1 - pad (span = (KH - 1) dh + 1),
 *     dx[n, h, w, c] = sum over i, j, o of dy[n, h - pt' + i dh, w - pl' + j dw, o] wf[i, j, o, c]
 * (dy zero outside), so it runs as Conv2D does: im2col of dy and a GEMM as wide as Cin, with
 * no dcol of width KH KW Cin and no col2im of scattered adds. Taken only where dcol's GEMM
 * is wider than NARROW_MAX (KH KW Cin > 512), and where this one is narrow enough: where the
 * narrow kernel runs (AVX-512) it runs this GEMM as it runs Conv2D's, while dcol's goes to
 * BLIS, so up to Cin 512 (from a Zen 5 profile, where the input gradients ran at 320 GFLOP/s
 * against Conv2D's 430; not yet measured on such a CPU this way); where BLIS runs both
 * (AVX2), only up to Cin 64, as measured on a Zen 3 core pair (the input gradients of
 * big_cnn's 3x3 layers, the two ways alternated in one process: Cin 64 1.02-1.09x, Cin 128
 * 0.81-1.02x, Cin 256 0.96x; below 512 taps, Cin 1 and 32, 0.5x). The geometry of that
 * convolution, or false where the col2im way stays.
 */
static bool flipped_geom(const geom *g, geom *t)
{
    const int64_t pt = g->dh * (g->kh - 1) - g->pt, pl = g->dw * (g->kw - 1) - g->pl;
    const int64_t widest = tfl__cpu_gemm_narrow_runs() ? NARROW_MAX : 64;
    if (g->sh != 1 || g->sw != 1 || pt < 0 || pl < 0 || g->kdim <= NARROW_MAX || g->c > widest)
        return false;
    *t = (geom){.n = g->n,
                .h = g->oh,
                .w = g->ow,
                .c = g->f,
                .kh = g->kh,
                .kw = g->kw,
                .f = g->c,
                .oh = g->h,
                .ow = g->w,
                .sh = 1,
                .sw = 1,
                .dh = g->dh,
                .dw = g->dw,
                .pt = pt,
                .pl = pl,
                .kdim = g->kh * g->kw * g->f};
    return true;
}

/* wf of flipped_geom from w (KH, KW, Cin, Cout): each tap's (Cin, Cout) block transposed into
 * the mirrored tap's place */
static void flip_filter(const geom *g, bool f32, size_t es, const char *w, char *wf)
{
    const int64_t block = g->c * g->f, taps = g->kh * g->kw;
    for (int64_t t = 0; t < taps; t++)
        transpose(f32, w + (size_t)((taps - 1 - t) * block) * es, g->c, g->f,
                  wf + (size_t)(t * block) * es);
}

static tfl_status k_conv2d_backprop_input(const tfl__kcall *k)
{
    tfl_ctx *ctx = k->ctx;
    const tfl_tensor *w, *dy;
    tfl_tensor *tw = NULL, *tdy = NULL;
    tfl_status st = TFL_OK;
    char *scratch = NULL;
    size_t got = 0;
    if (!inputs(k, &w, &dy, &tw, &tdy)) {
        st = ctx->err_code;
        goto done;
    }
    const tfl__window_attrs *a = k->attrs;
    geom g = make_geom(a->shape, w->shape, dy->shape, a);
    tfl_dtype dt = (tfl_dtype)k->out->dtype;
    bool f32 = dt == TFL_DTYPE_FLOAT32;
    size_t es = tfl_dtype_size(dt);
    const int64_t ohw = g.oh * g.ow, m = g.n * ohw, K = g.kdim, F = g.f;
    const int64_t img = g.h * g.w * g.c; /* elements of one dx image */
    const char *wd = tfl__data(w), *dyd = tfl__data(dy);
    char *dx = tfl__data(k->out);
    if (k->out->numel == 0) goto done;
    geom gt;
    if (flipped_geom(&g, &gt)) { /* stride 1: Conv2D of dy by the flipped filter */
        if (!(scratch = scratch_get(k, K * F * (int64_t)es, &got))) {
            st = ctx->err_code;
            goto done;
        }
        flip_filter(&g, f32, es, wd, scratch);
        st = conv_forward(k, &gt, dt, dyd, scratch, dx);
        goto done;
    }
    plan p = make_plan(k, &g, es);
    /* scratch: w^T (Cout, K) row-major for the gemms' B, then the dcol buffers */
    int64_t wt_bytes = (K * F * (int64_t)es + 63) / 64 * 64;
    scratch = scratch_get(k, wt_bytes + (p.direct ? 0 : p.col_bytes * p.team), &got);
    if (!scratch) {
        st = ctx->err_code;
        goto done;
    }
    char *wt = scratch, *cols = scratch + wt_bytes;
    transpose(f32, wd, K, F, wt);
    if (p.direct) { /* dx (M, Cin) = dy (M, Cout) w^T */
        gemm(k, dt, p.threads, m, K, F, dyd, F, 1, wt, K, false, dx, K);
        goto done;
    }
    /* the dx rows (r = n H + ih) a range's windows reach: from its first output row's first
       input row to its last output row's last, clipped to the image (a block's: its images'
       rows); a block side by side zeroes its own images first */
#define INPUT_RANGE(i, dcol, threads)                                                       \
    do {                                                                                    \
        int64_t m0, m1;                                                                     \
        range_of(&p, &g, i, &m0, &m1);                                                      \
        int64_t na = m0 / ohw, oha = m0 / g.ow % g.oh;                                      \
        int64_t nb = (m1 - 1) / ohw, ohb = (m1 - 1) / g.ow % g.oh;                          \
        int64_t lo = oha * g.sh - g.pt, hi = ohb * g.sh - g.pt + (g.kh - 1) * g.dh;         \
        int64_t r0 = na * g.h + (lo > 0 ? lo : 0);                                          \
        int64_t r1 = nb * g.h + (hi < g.h - 1 ? hi : g.h - 1) + 1;                          \
        if (p.team > 1)                                                                     \
            memset(dx + (size_t)(m0 / ohw * img) * es, 0, (size_t)((m1 - m0) / ohw * img) * es); \
        gemm(k, dt, threads, m1 - m0, K, F, dyd + (size_t)(m0 * F) * es, F, 1, wt, K, false,  \
             dcol, K);                                                                      \
        col2im_rows(&g, f32, dcol, m0, m1, r0, r1, dx, es, threads);                        \
    } while (0)
    if (p.team > 1) {
#pragma omp parallel num_threads(p.team)
        {
            char *dcol = cols + (size_t)(omp_get_thread_num() * p.col_bytes);
#pragma omp for schedule(static)
            for (int64_t i = 0; i < p.count; i++) INPUT_RANGE(i, dcol, 1);
        }
    } else {
        memset(dx, 0, (size_t)k->out->numel * es);
        for (int64_t i = 0; i < p.count; i++) INPUT_RANGE(i, cols, p.threads);
    }
#undef INPUT_RANGE
done:
    if (scratch) tfl__allocator_put(&k->dev->alloc, scratch, got);
    tfl_tensor_release(tw);
    tfl_tensor_release(tdy);
    return st;
}

#define M_FLOAT (TFL_DT(FLOAT32) | TFL_DT(FLOAT64))

const tfl__kernel tfl__cpu_conv_kernels[TFL_OP_COUNT] = {
    [TFL_OP_CONV2D] = {k_conv2d, M_FLOAT, NULL},
    [TFL_OP_CONV2D_BACKPROP_INPUT] = {k_conv2d_backprop_input, M_FLOAT, NULL},
    [TFL_OP_CONV2D_BACKPROP_FILTER] = {k_conv2d_backprop_filter, M_FLOAT, NULL},
};
