/*
 * framework/cpu/pool_loops.h: the typed loops of the pooling kernels. k_pool.c includes this
 * file once per element type, with T the type and FN(name) the name suffixed for it; the
 * geometry is k_pool.c's `pgeom`. Images are NHWC, so every loop runs over the channels
 * innermost, contiguous, where the compiler vectorizes it. Windows are clipped to the image
 * (window()): padded positions are never read.
 */

/* y row (n, oh): the max of each window (the first position copied, then compared) */
TFL_WIDE_LOOPS static void FN(max_pool_row)(const pgeom *g, const T *x, int64_t n, int64_t oh, T *y)
{
    const int64_t C = g->c;
    int64_t hs, he;
    window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
    const T *xn = x + n * g->h * g->w * C;
    for (int64_t ow = 0; ow < g->ow; ow++) {
        int64_t ws, we;
        window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
        T *restrict o = y + ow * C;
        memcpy(o, xn + (hs * g->w + ws) * C, (size_t)C * sizeof(T));
        for (int64_t ih = hs; ih < he; ih++)
            for (int64_t iw = ih == hs ? ws + 1 : ws; iw < we; iw++) {
                const T *restrict xp = xn + (ih * g->w + iw) * C;
                for (int64_t c = 0; c < C; c++) o[c] = xp[c] > o[c] ? xp[c] : o[c];
            }
    }
}

/* y row (n, oh): the mean of each window's positions inside the image */
TFL_WIDE_LOOPS static void FN(avg_pool_row)(const pgeom *g, const T *x, int64_t n, int64_t oh, T *y)
{
    const int64_t C = g->c;
    int64_t hs, he;
    window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
    const T *xn = x + n * g->h * g->w * C;
    for (int64_t ow = 0; ow < g->ow; ow++) {
        int64_t ws, we;
        window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
        T *restrict o = y + ow * C;
        for (int64_t c = 0; c < C; c++) o[c] = 0;
        for (int64_t ih = hs; ih < he; ih++)
            for (int64_t iw = ws; iw < we; iw++) {
                const T *restrict xp = xn + (ih * g->w + iw) * C;
                for (int64_t c = 0; c < C; c++) o[c] += xp[c];
            }
        T inv = (T)1 / (T)((he - hs) * (we - ws));
        for (int64_t c = 0; c < C; c++) o[c] *= inv;
    }
}

/*
 * The argmax of one window, branch-free, a vector of VW channels at a time (GCC vector
 * extensions: a ymm register in the AVX2 and AVX-512 copies): the window's max m first,
 * then the first position (row-major) whose value equals m, after which m becomes NaN,
 * which equals nothing (TensorFlow's CPU kernel keeps the first of equal maxima too). At
 * that position AT(p, eq) runs, p the position's element offset in the image, eq the lanes
 * it is the argmax of. The last C % VW channels take the same steps one by one.
 */
#define VLOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define VSTORE(p, v) memcpy((p), &(v), sizeof(v))
#define VSEL(mask, a, b) ((VT)(((VI)(a) & (mask)) | ((VI)(b) & ~(mask))))
#define WINDOW_ARGMAX(c0, c1, AT, AT1)                                                      \
    do {                                                                                    \
        const int64_t p0_ = (hs * g->w + ws) * C;                                           \
        int64_t cb = (c0);                                                                  \
        for (; cb + VW <= (c1); cb += VW) {                                                 \
            VT m, xv;                                                                       \
            VLOAD(m, xn + p0_ + cb);                                                        \
            for (int64_t ih = hs; ih < he; ih++)                                            \
                for (int64_t iw = ih == hs ? ws + 1 : ws; iw < we; iw++) {                  \
                    VLOAD(xv, xn + (ih * g->w + iw) * C + cb);                              \
                    m = VSEL(xv > m, xv, m);                                                \
                }                                                                           \
            for (int64_t ih = hs; ih < he; ih++)                                            \
                for (int64_t iw = ws; iw < we; iw++) {                                      \
                    int64_t p = (ih * g->w + iw) * C + cb;                                  \
                    VLOAD(xv, xn + p);                                                      \
                    VI eq = xv == m;                                                        \
                    AT(p, eq);                                                              \
                    m = VSEL(eq, nanv, m);                                                  \
                }                                                                           \
        }                                                                                   \
        for (; cb < (c1); cb++) {                                                           \
            T m1 = xn[p0_ + cb];                                                            \
            for (int64_t ih = hs; ih < he; ih++)                                            \
                for (int64_t iw = ws; iw < we; iw++) {                                      \
                    T v = xn[(ih * g->w + iw) * C + cb];                                    \
                    m1 = v > m1 ? v : m1;                                                   \
                }                                                                           \
            bool found = false;                                                             \
            for (int64_t ih = hs; ih < he && !found; ih++)                                  \
                for (int64_t iw = ws; iw < we && !found; iw++) {                            \
                    int64_t p = (ih * g->w + iw) * C + cb;                                  \
                    if (xn[p] == m1) {                                                      \
                        AT1(p);                                                             \
                        found = true;                                                       \
                    }                                                                       \
                }                                                                           \
        }                                                                                   \
    } while (0)

/* MaxPoolGrad for image n, channels [c0, c1): dx zeroed there, then each window's dy added
 * at its argmax; windows that do not overlap (strides >= window) store instead of adding */
TFL_WIDE_LOOPS static void FN(max_pool_grad_img)(const pgeom *g, const T *x, const T *dy,
                                                 int64_t n, int64_t c0, int64_t c1, T *dx)
{
    const int64_t C = g->c, img = g->h * g->w * C;
    const bool disjoint = g->sh >= g->kh && g->sw >= g->kw;
    const T *xn = x + n * img;
    T *dxn = dx + n * img;
    VT nanv = (VT){0} + (T)NAN;
    if (c0 == 0 && c1 == C) memset(dxn, 0, (size_t)img * sizeof(T));
    else
        for (int64_t p = 0; p < g->h * g->w; p++)
            for (int64_t c = c0; c < c1; c++) dxn[p * C + c] = 0;
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t hs, he;
        window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t ws, we;
            window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
            const T *d = dy + ((n * g->oh + oh) * g->ow + ow) * C;
#define GRAD_AT(p, eq)                                                                      \
    do {                                                                                    \
        VT dv, cur;                                                                         \
        VLOAD(dv, d + cb);                                                                  \
        VT add = (VT)((VI)dv & (eq));                                                       \
        if (!disjoint) {                                                                    \
            VLOAD(cur, dxn + (p));                                                          \
            add += cur;                                                                     \
        } else { /* added to dx's zero, as the scalar tail adds: -0 becomes +0 there too */ \
            add += (VT){0};                                                                 \
        }                                                                                   \
        VSTORE(dxn + (p), add);                                                             \
    } while (0)
#define GRAD_AT1(p) dxn[p] += d[cb]
            WINDOW_ARGMAX(c0, c1, GRAD_AT, GRAD_AT1);
#undef GRAD_AT
#undef GRAD_AT1
        }
    }
}

/* MaxPoolGradGrad, output row (n, oh): g gathered at each window's argmax of x (0 where a
 * window has none, which takes NaNs) */
TFL_WIDE_LOOPS static void FN(max_pool_grad_grad_row)(const pgeom *g, const T *x, const T *gg,
                                                      int64_t n, int64_t oh, T *y)
{
    const int64_t C = g->c, img = g->h * g->w * C;
    const T *xn = x + n * img, *gn = gg + n * img;
    VT nanv = (VT){0} + (T)NAN;
    int64_t hs, he;
    window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
    for (int64_t ow = 0; ow < g->ow; ow++) {
        int64_t ws, we;
        window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
        T *out = y + ow * C;
        for (int64_t c = 0; c < C; c++) out[c] = 0;
#define GATHER_AT(p, eq)                                                                    \
    do {                                                                                    \
        VT gv, cur;                                                                         \
        VLOAD(gv, gn + (p));                                                                \
        VLOAD(cur, out + cb);                                                               \
        cur = VSEL(eq, gv, cur);                                                            \
        VSTORE(out + cb, cur);                                                              \
    } while (0)
#define GATHER_AT1(p) out[cb] = gn[p]
        WINDOW_ARGMAX(0, C, GATHER_AT, GATHER_AT1);
#undef GATHER_AT
#undef GATHER_AT1
    }
}

#undef VLOAD
#undef VSTORE
#undef VSEL
#undef WINDOW_ARGMAX

/* AvgPoolGrad for image n, channels [c0, c1): dx zeroed there, then each window's
 * dy / count added over its positions */
TFL_WIDE_LOOPS static void FN(avg_pool_grad_img)(const pgeom *g, const T *dy, int64_t n, int64_t c0,
                                  int64_t c1, T *dx)
{
    const int64_t C = g->c, img = g->h * g->w * C;
    T *dxn = dx + n * img;
    for (int64_t p = 0; p < g->h * g->w; p++)
        for (int64_t c = c0; c < c1; c++) dxn[p * C + c] = 0;
    for (int64_t oh = 0; oh < g->oh; oh++) {
        int64_t hs, he;
        window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
        for (int64_t ow = 0; ow < g->ow; ow++) {
            int64_t ws, we;
            window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
            const T *restrict dyp = dy + ((n * g->oh + oh) * g->ow + ow) * C;
            T inv = (T)1 / (T)((he - hs) * (we - ws));
            for (int64_t ih = hs; ih < he; ih++)
                for (int64_t iw = ws; iw < we; iw++) {
                    T *restrict d = dxn + (ih * g->w + iw) * C;
                    for (int64_t c = c0; c < c1; c++) d[c] += dyp[c] * inv;
                }
        }
    }
}
