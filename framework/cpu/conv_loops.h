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
    for (; e + 8 <= n; e += 8) memcpy(d + e, s + e, 8 * sizeof(T));
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

/* im2col rows of the output pixels [m0, m1) into col (row m - m0 at (m - m0) KH KW C). */
static void FN(im2col)(const geom *g, const T *x, int64_t m0, int64_t m1, T *col)
{
    const int64_t K = g->kdim, rowlen = g->kw * g->c, wc = g->w * g->c;
    int64_t ow = m0 % g->ow, oh = m0 / g->ow % g->oh, n = m0 / g->ow / g->oh;
    for (int64_t m = m0; m < m1; m++) {
        T *dst = col + (m - m0) * K;
        const T *xn = x + n * g->h * wc;
        int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
        bool inside = g->dw == 1 && iw0 >= 0 && iw0 + g->kw <= g->w;
        for (int64_t i = 0; i < g->kh; i++, dst += rowlen) {
            int64_t ih = ih0 + i * g->dh;
            if (ih < 0 || ih >= g->h) {
                FN(zero)(dst, rowlen);
                continue;
            }
            const T *xr = xn + ih * wc;
            if (inside) {
                FN(copy)(dst, xr + iw0 * g->c, rowlen);
                continue;
            }
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t iw = iw0 + j * g->dw;
                if (iw < 0 || iw >= g->w) FN(zero)(dst + j * g->c, g->c);
                else FN(copy)(dst + j * g->c, xr + iw * g->c, g->c);
            }
        }
        if (++ow == g->ow) {
            ow = 0;
            if (++oh == g->oh) {
                oh = 0;
                n++;
            }
        }
    }
}

/*
 * col2im for one row of dx, (n, ih) at dxr (W C elements): adds every entry of dcol (rows
 * of the pixels [m0, m1), laid out as im2col's) that im2col would have read from that row.
 * Rows are independent, so threads may share the rows of one chunk.
 */
static void FN(col2im_row)(const geom *g, const T *dcol, int64_t m0, int64_t m1, int64_t n,
                           int64_t ih, T *dxr)
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
