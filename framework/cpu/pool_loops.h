/*
 * framework/cpu/pool_loops.h: the typed loops of the pooling kernels. k_pool.c includes this
 * file once per element type, with T the type and FN(name) the name suffixed for it; the
 * geometry is k_pool.c's `pgeom`. Images are NHWC, so every loop runs over the channels
 * innermost, contiguous, where the compiler vectorizes it. Windows are clipped to the image
 * (window()): padded positions are never read.
 */

/* y row (n, oh): the max of each window (the first position copied, then compared) */
static void FN(max_pool_row)(const pgeom *g, const T *x, int64_t n, int64_t oh, T *y)
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
static void FN(avg_pool_row)(const pgeom *g, const T *x, int64_t n, int64_t oh, T *y)
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
 * The argmax of the window of output (oh, ow) of image xn for channels [c0, c0 + nc)
 * (nc <= POOL_CB): pixel indexes ih W + iw into arg. Positions are visited in row-major
 * order and only a strictly larger value moves the argmax, so ties keep the first (as
 * TensorFlow's CPU MaxPoolGrad). best is scratch of nc elements.
 */
static void FN(argmax)(const pgeom *g, const T *xn, int64_t oh, int64_t ow, int64_t c0,
                       int64_t nc, T *restrict best, int64_t *restrict arg)
{
    const int64_t C = g->c;
    int64_t hs, he, ws, we;
    window(oh, g->sh, g->pt, g->kh, g->h, &hs, &he);
    window(ow, g->sw, g->pl, g->kw, g->w, &ws, &we);
    int64_t p0 = hs * g->w + ws;
    const T *first = xn + p0 * C + c0;
    for (int64_t c = 0; c < nc; c++) {
        best[c] = first[c];
        arg[c] = p0;
    }
    for (int64_t ih = hs; ih < he; ih++)
        for (int64_t iw = ih == hs ? ws + 1 : ws; iw < we; iw++) {
            int64_t p = ih * g->w + iw;
            const T *restrict xp = xn + p * C + c0;
            for (int64_t c = 0; c < nc; c++) {
                bool more = xp[c] > best[c];
                best[c] = more ? xp[c] : best[c];
                arg[c] = more ? p : arg[c];
            }
        }
}

/* MaxPoolGrad for image n, channels [c0, c1): dx zeroed there, then dy added at each
 * window's argmax */
static void FN(max_pool_grad_img)(const pgeom *g, const T *x, const T *dy, int64_t n,
                                  int64_t c0, int64_t c1, T *dx)
{
    const int64_t C = g->c, img = g->h * g->w * C;
    const T *xn = x + n * img;
    T *dxn = dx + n * img;
    for (int64_t p = 0; p < g->h * g->w; p++)
        for (int64_t c = c0; c < c1; c++) dxn[p * C + c] = 0;
    T best[POOL_CB];
    int64_t arg[POOL_CB];
    for (int64_t oh = 0; oh < g->oh; oh++)
        for (int64_t ow = 0; ow < g->ow; ow++) {
            const T *dyp = dy + ((n * g->oh + oh) * g->ow + ow) * C;
            for (int64_t cb = c0; cb < c1; cb += POOL_CB) {
                int64_t nc = c1 - cb < POOL_CB ? c1 - cb : POOL_CB;
                FN(argmax)(g, xn, oh, ow, cb, nc, best, arg);
                for (int64_t c = 0; c < nc; c++) dxn[arg[c] * C + cb + c] += dyp[cb + c];
            }
        }
}

/* MaxPoolGradGrad, output row (n, oh): g gathered at each window's argmax of x */
static void FN(max_pool_grad_grad_row)(const pgeom *g, const T *x, const T *gg, int64_t n,
                                       int64_t oh, T *y)
{
    const int64_t C = g->c, img = g->h * g->w * C;
    const T *xn = x + n * img, *gn = gg + n * img;
    T best[POOL_CB];
    int64_t arg[POOL_CB];
    for (int64_t ow = 0; ow < g->ow; ow++)
        for (int64_t cb = 0; cb < C; cb += POOL_CB) {
            int64_t nc = C - cb < POOL_CB ? C - cb : POOL_CB;
            FN(argmax)(g, xn, oh, ow, cb, nc, best, arg);
            for (int64_t c = 0; c < nc; c++) y[ow * C + cb + c] = gn[arg[c] * C + cb + c];
        }
}

/* AvgPoolGrad for image n, channels [c0, c1): dx zeroed there, then each window's
 * dy / count added over its positions */
static void FN(avg_pool_grad_img)(const pgeom *g, const T *dy, int64_t n, int64_t c0,
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
