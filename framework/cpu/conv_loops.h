/*
 * framework/cpu/conv_loops.h: the typed loops of the convolution kernels: im2col and its
 * adjoint col2im. k_conv.c includes this file once per element type, with T the type and
 * FN(name) the name suffixed for it; the geometry is k_conv.c's `geom`.
 *
 * The im2col matrix has a row per output pixel m = (n OH + oh) OW + ow and a column per
 * filter tap (i, j, c), KH KW C of them in the filter's row-major order, so that
 * col (M, KH KW C) times the filter (KH KW C, Cout) is the NHWC output. Row m holds
 * x[n, oh sh - pt + i dh, ow sw - pl + j dw, c], 0 outside the image.
 */

/* n elements; n is often tiny (KW C = 3 for a 1-channel image): no memcpy call for those */
static inline void FN(copy)(T *restrict d, const T *restrict s, int64_t n)
{
    int64_t e = 0;
    for (; e + 16 <= n; e += 16) memcpy(d + e, s + e, 16 * sizeof(T));
    if (e + 8 <= n) {
        memcpy(d + e, s + e, 8 * sizeof(T));
        e += 8;
    }
    switch (n - e) {
    case 7: d[e + 6] = s[e + 6]; /* fall through */
    case 6: d[e + 5] = s[e + 5]; /* fall through */
    case 5: d[e + 4] = s[e + 4]; /* fall through */
    case 4: d[e + 3] = s[e + 3]; /* fall through */
    case 3: d[e + 2] = s[e + 2]; /* fall through */
    case 2: d[e + 1] = s[e + 1]; /* fall through */
    case 1: d[e] = s[e]; /* fall through */
    default: break;
    }
}

static inline void FN(zero)(T *d, int64_t n)
{
    for (int64_t e = 0; e < n; e++) d[e] = 0;
}

/* d += s, n elements */
static inline void FN(add)(T *restrict d, const T *restrict s, int64_t n)
{
    for (int64_t e = 0; e < n; e++) d[e] += s[e];
}

/* count runs of len elements: d + p dstride = s + p sstride, p < count; len is a window
 * row (KW C), often tiny: constant lengths get a loop of their own, unrolled */
static inline void FN(copy_runs)(T *restrict d, int64_t dstride, const T *restrict s,
                                 int64_t sstride, int64_t len, int64_t count)
{
#define RUNS_(L)                                                                            \
    case L:                                                                                 \
        for (int64_t p = 0; p < count; p++)                                                 \
            for (int e = 0; e < L; e++) d[p * dstride + e] = s[p * sstride + e];            \
        return;
    switch (len) {
        RUNS_(1) RUNS_(2) RUNS_(3) RUNS_(4) RUNS_(5) RUNS_(6) RUNS_(7) RUNS_(8) RUNS_(9)
    default:
        for (int64_t p = 0; p < count; p++) FN(copy)(d + p * dstride, s + p * sstride, len);
    }
#undef RUNS_
}

/* im2col rows of the pixels [ow0, ow1) of output row (n, oh) of image xn, from dst on */
TFL_WIDE_LOOPS static void FN(im2col_row)(const geom *g, const T *xn, int64_t oh, int64_t ow0,
                                          int64_t ow1, T *dst)
{
    const int64_t K = g->kdim, C = g->c, rowlen = g->kw * C, wc = g->w * C;
    /* the pixels whose window is inside the image across: [lo, hi) */
    int64_t lo = (g->pl + g->sw - 1) / g->sw;
    int64_t last = g->w - 1 - (g->kw - 1) * g->dw + g->pl; /* ow sw <= last */
    int64_t hi = last >= 0 ? last / g->sw + 1 : 0;
    lo = lo > ow0 ? lo : ow0;
    hi = hi < ow1 ? hi : ow1;
    if (hi < lo) hi = lo;
    for (int64_t i = 0; i < g->kh; i++) {
        T *d = dst + i * rowlen;
        int64_t ih = oh * g->sh - g->pt + i * g->dh;
        if (ih < 0 || ih >= g->h) {
            for (int64_t ow = ow0; ow < ow1; ow++) FN(zero)(d + (ow - ow0) * K, rowlen);
            continue;
        }
        const T *xr = xn + ih * wc;
        for (int64_t ow = ow0; ow < ow1; ow++) {
            if (ow == lo && g->dw == 1 && hi > lo) { /* the inside run in one go */
                FN(copy_runs)(d + (lo - ow0) * K, K, xr + (lo * g->sw - g->pl) * C, g->sw * C,
                              rowlen, hi - lo);
                ow = hi - 1;
                continue;
            }
            T *dp = d + (ow - ow0) * K;
            int64_t iw0 = ow * g->sw - g->pl;
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t iw = iw0 + j * g->dw;
                if (iw < 0 || iw >= g->w) FN(zero)(dp + j * C, C);
                else FN(copy)(dp + j * C, xr + iw * C, C);
            }
        }
    }
}

/* im2col rows of the output pixels [m0, m1) into col (row m - m0 at (m - m0) KH KW C) */
TFL_WIDE_LOOPS static void FN(im2col)(const geom *g, const T *x, int64_t m0, int64_t m1, T *col)
{
    const int64_t ohw = g->oh * g->ow;
    for (int64_t m = m0; m < m1;) {
        int64_t n = m / ohw, oh = m / g->ow % g->oh, ow = m % g->ow;
        int64_t end = m - ow + g->ow < m1 ? m - ow + g->ow : m1; /* this output row's end */
        FN(im2col_row)(g, x + n * g->h * g->w * g->c, oh, ow, ow + (end - m),
                       col + (m - m0) * g->kdim);
        m = end;
    }
}

/*
 * col2im for one row of dx, (n, ih) at dxr (W C elements): adds every entry of dcol (rows
 * of the pixels [m0, m1), laid out as im2col's) that im2col would have read from that row.
 * Rows are independent, so threads may share the rows of one chunk.
 */
TFL_WIDE_LOOPS static void FN(col2im_row)(const geom *g, const T *dcol, int64_t m0, int64_t m1,
                                          int64_t n, int64_t ih, T *dxr)
{
    const int64_t K = g->kdim, rowlen = g->kw * g->c;
    for (int64_t i = 0; i < g->kh; i++) {
        int64_t t = ih + g->pt - i * g->dh; /* = oh sh */
        if (t < 0 || t % g->sh) continue;
        int64_t oh = t / g->sh;
        if (oh >= g->oh) continue;
        int64_t first = (n * g->oh + oh) * g->ow; /* the output row's first pixel */
        int64_t a = first > m0 ? first : m0, b = first + g->ow < m1 ? first + g->ow : m1;
        for (int64_t m = a; m < b; m++) {
            const T *src = dcol + (m - m0) * K + i * rowlen;
            int64_t iw0 = (m - first) * g->sw - g->pl;
            if (g->dw == 1 && iw0 >= 0 && iw0 + g->kw <= g->w) {
                FN(add)(dxr + iw0 * g->c, src, rowlen);
                continue;
            }
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t iw = iw0 + j * g->dw;
                if (iw >= 0 && iw < g->w) FN(add)(dxr + iw * g->c, src + j * g->c, g->c);
            }
        }
    }
}
