/*
 * configs/plot_svg.c: draws the curves of tapeflow/plot.h as an SVG document: nice
 * ticks (Heckbert's 1-2-5 rule; decades, with 2 and 5 between them over short ranges, on a
 * log axis), a light grid, axis labels, a title, one colour per run from the Tableau 10
 * palette (training solid, validation dashed), markers when a curve has few points, and a
 * legend in the corner of the plot that hides the fewest points.
 */
#include <tapeflow/files.h>

#include "plot_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const palette[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"
#define MAX_TICKS 64

typedef struct out {
    tfl_ctx *ctx;
    char *s;
    size_t n, cap;
    bool oom;
} out;

static void put(out *o, const char *fmt, ...) TFL_PRINTF(2, 3);
static void put(out *o, const char *fmt, ...)
{
    if (o->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(o->s ? o->s + o->n : NULL, o->s ? o->cap - o->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            o->oom = true;
            return;
        }
        if (o->s && o->n + (size_t)k < o->cap) {
            o->n += (size_t)k;
            return;
        }
        size_t cap = o->cap ? o->cap : 8192;
        while (cap <= o->n + (size_t)k) cap *= 2;
        char *s = tfl__grow(o->ctx, o->s, o->n, cap);
        if (!s) {
            o->oom = true;
            return;
        }
        o->s = s;
        o->cap = cap;
    }
}

/* text with &, <, >, " escaped */
static void put_text(out *o, const char *t)
{
    for (; *t; t++) {
        switch (*t) {
        case '&': put(o, "&amp;"); break;
        case '<': put(o, "&lt;"); break;
        case '>': put(o, "&gt;"); break;
        case '"': put(o, "&quot;"); break;
        default: put(o, "%c", *t);
        }
    }
}

/* a metric's name as words: "samples_per_second" -> "samples per second" */
static void put_words(out *o, const char *t)
{
    for (; *t; t++) {
        if (*t == '_') put(o, " ");
        else {
            char one[2] = {*t, 0};
            put_text(o, one);
        }
    }
}

/* ---- ticks ---------------------------------------------------------------------------------- */

/* a "nice" number near x: 1, 2, 5 (or 1, 2, 5, 10 when rounding) times a power of ten */
static double nice(double x, bool round_it)
{
    double e = floor(log10(x)), f = x / pow(10, e), nf;
    if (round_it) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

typedef struct axis {
    double lo, hi;            /* the drawn range (log10 of it on a log axis) */
    bool log;
    double ticks[MAX_TICKS];  /* data values */
    bool major[MAX_TICKS];
    int n;
    int decimals;             /* of the linear labels */
} axis;

/* linear: ticks at multiples of a nice step; `extend` widens the range to whole steps */
static void linear_axis(axis *a, double lo, double hi, int want, bool extend, bool integers)
{
    if (!(hi > lo)) {
        double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    double step = nice((hi - lo) / (want - 1), true);
    if (integers && step < 1) step = 1;
    if (extend) {
        lo = floor(lo / step) * step;
        hi = ceil(hi / step) * step;
    }
    a->lo = lo;
    a->hi = hi;
    a->log = false;
    a->n = 0;
    a->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (double t = ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9 && a->n < MAX_TICKS;
         t += step) {
        a->major[a->n] = true;
        a->ticks[a->n++] = fabs(t) < step * 1e-9 ? 0 : t;
    }
}

/* the largest 1, 2 or 5 x 10^k <= v (down) or the smallest >= v (up) */
static double step125(double v, bool up)
{
    double e = floor(log10(v)), best = up ? INFINITY : 0;
    for (int de = -1; de <= 1; de++)
        for (int m = 0; m < 3; m++) {
            double c = (m == 0 ? 1 : m == 1 ? 2 : 5) * pow(10, e + de);
            if (up ? c >= v * (1 - 1e-12) && c < best : c <= v * (1 + 1e-12) && c > best) best = c;
        }
    return best;
}

/* log: from the 1-2-5 value below the data to the one above; ticks at decades, and at 2 and 5
 * times them when the range spans few decades */
static void log_axis(axis *a, double lo, double hi)
{
    double l = step125(lo, false), h = step125(hi, true);
    if (!(h > l)) h = l * 10;
    a->lo = log10(l);
    a->hi = log10(h);
    a->log = true;
    a->n = 0;
    bool minor = a->hi - a->lo <= 3.01;
    for (double e = floor(a->lo); e <= ceil(a->hi) && a->n < MAX_TICKS - 3; e++)
        for (int m = 0; m < 3; m++) {
            if (m && !minor) break;
            double t = (m == 0 ? 1 : m == 1 ? 2 : 5) * pow(10, e);
            if (t < l * (1 - 1e-9) || t > h * (1 + 1e-9)) continue;
            a->major[a->n] = m == 0;
            a->ticks[a->n++] = t;
        }
}

/* widens the drawn range a little at an end the data touches (a curve along the frame is
 * hard to see); lo and hi are the data's */
static void pad_ends(axis *a, double lo, double hi)
{
    double l = a->log ? log10(lo) : lo, h = a->log ? log10(hi) : hi, span = a->hi - a->lo;
    if (l - a->lo < 0.01 * span) a->lo -= 0.04 * span;
    if (a->hi - h < 0.01 * span) a->hi += 0.04 * span;
}

static double axis_pos(const axis *a, double v)
{
    double t = a->log ? log10(v) : v;
    return (t - a->lo) / (a->hi - a->lo);
}

static void tick_label(const axis *a, double v, char *buf, size_t cap)
{
    double top = fmax(fabs(a->lo), fabs(a->hi));
    if (!a->log && top >= 1e5) { /* 700000 -> 700k, 2500000 -> 2.5M: labels stay short */
        double unit = top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : 1e3;
        if (v == 0) snprintf(buf, cap, "0");
        else snprintf(buf, cap, "%g%s", v / unit, unit == 1e9 ? "G" : unit == 1e6 ? "M" : "k");
    } else if (!a->log) {
        snprintf(buf, cap, "%.*f", a->decimals, v);
    } else {
        double e = floor(log10(v) + 1e-9);
        if (e >= -3 && e <= 4) snprintf(buf, cap, "%g", v);
        else snprintf(buf, cap, "%ge%d", v / pow(10, e), (int)e);
    }
}

/* ---- the picture ---------------------------------------------------------------------------- */

const char *tfl_curves_svg(tfl_curves *c, const tfl_plot_opts *opts, size_t *len)
{
    if (len) *len = 0;
    if (!c || !tfl__curves_alive(c, "tfl_curves_svg")) return NULL;
    tfl_ctx *ctx = c->ctx;
    tfl_plot_opts o = opts ? *opts : (tfl_plot_opts){0};
    int W = o.width ? o.width : 800, H = o.height ? o.height : 500;
    TFL_CHECK_RET(ctx, W >= 200 && H >= 150 && W <= 20000 && H <= 20000, NULL,
                  TFL_INVALID_ARGUMENT, "tfl_curves_svg: a size of %d x %d (from 200 x 150 to "
                  "20000 x 20000)", W, H);
    /* the data's ranges */
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    bool integers = true;
    if (o.log_y_auto && !o.log_y) { /* log when every point is > 0 over more than 2 decades */
        for (int i = 0; i < c->n; i++)
            for (int64_t k = 0; k < c->v[i].n; k++) {
                y0 = fmin(y0, c->v[i].p[k].y);
                y1 = fmax(y1, c->v[i].p[k].y);
            }
        o.log_y = y0 > 0 && y1 > 100 * y0;
        y0 = INFINITY;
        y1 = -INFINITY;
    }
    int64_t points = 0;
    for (int i = 0; i < c->n; i++)
        for (int64_t k = 0; k < c->v[i].n; k++) {
            tfl__point p = c->v[i].p[k];
            if (o.log_y && !(p.y > 0)) continue;
            x0 = fmin(x0, p.x);
            x1 = fmax(x1, p.x);
            y0 = fmin(y0, p.y);
            y1 = fmax(y1, p.y);
            integers = integers && p.x == floor(p.x);
            points++;
        }
    TFL_CHECK_RET(ctx, points > 0, NULL, TFL_FAILED_PRECONDITION, "tfl_curves_svg: %s",
                  c->n == 0 ? "no curves to draw" : o.log_y ? "no point above 0 for a log scale"
                                                            : "the curves have no points");
    axis ax, ay;
    linear_axis(&ax, x0, x1, 8, false, integers);
    double margin = (ax.hi - ax.lo) * 0.02; /* markers at the ends stay whole */
    ax.lo -= margin;
    ax.hi += margin;
    if (o.log_y) log_axis(&ay, y0, y1);
    else linear_axis(&ay, y0, y1, 6, true, false);
    pad_ends(&ay, y0, y1);
    const char *metric = c->metric[0] ? c->metric : "value";
    const char *title = o.title ? o.title : metric;
    const char *xl = o.x_label ? o.x_label : c->x_label[0] ? c->x_label : "x";
    const char *yl = o.y_label ? o.y_label : metric;
    /* the plot area: on the left room for the widest y tick label (about 7.6 px a character
     * at 12 px) and, beside it, the rotated y-axis title (14 px) */
    char buf[64];
    size_t widest = 0;
    for (int i = 0; i < ay.n; i++) {
        tick_label(&ay, ay.ticks[i], buf, sizeof buf);
        widest = strlen(buf) > widest ? strlen(buf) : widest;
    }
    double label_w = 7.6 * (double)widest;
    double L = fmax(78, 8 + label_w + 12 + 14 + 8), R = W - 24, T = 52, B = H - 60, pw = R - L,
           ph = B - T;
    double y_title = L - 8 - label_w - 12; /* the title's baseline: its glyphs reach 11 px left */
    out s = {.ctx = ctx};
    put(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"%s\">\n", W, H, W, H,
        FONT);
    put(&s, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
        W, H);
    put(&s, "<text class=\"title\" x=\"%.1f\" y=\"30\" text-anchor=\"middle\" font-size=\"18\" "
            "font-weight=\"bold\" fill=\"#222\">", L + pw / 2);
    if (!o.title && title[0] >= 'a' && title[0] <= 'z') { /* "loss" -> "Loss" */
        put(&s, "%c", title[0] - 'a' + 'A');
        title++;
    }
    if (o.title) put_text(&s, title);
    else put_words(&s, title);
    put(&s, "%s</text>\n", o.log_y ? " (log scale)" : "");
    /* grid and ticks */
    put(&s, "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    for (int i = 0; i < ax.n; i++) {
        double X = L + pw * axis_pos(&ax, ax.ticks[i]);
        put(&s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", X, T, X, B);
    }
    for (int i = 0; i < ay.n; i++) {
        double Y = B - ph * axis_pos(&ay, ay.ticks[i]);
        put(&s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"%s/>\n", L, Y, R, Y,
            ay.major[i] ? "" : " stroke-dasharray=\"2 3\"");
    }
    put(&s, "</g>\n<g class=\"axes\" stroke=\"#444\" stroke-width=\"1.2\" fill=\"none\">\n");
    put(&s, "<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n", L, T,
        pw, ph);
    put(&s, "</g>\n<g class=\"x-axis\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">\n");
    for (int i = 0; i < ax.n; i++) {
        double X = L + pw * axis_pos(&ax, ax.ticks[i]);
        tick_label(&ax, ax.ticks[i], buf, sizeof buf);
        put(&s, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"#444\"/><text x=\"%.2f\" y=\"%.2f\">%s</text>\n", X, B, X, B + 5, X,
            B + 19, buf);
    }
    put(&s, "<text class=\"label\" x=\"%.2f\" y=\"%d\" font-size=\"14\">", L + pw / 2, H - 18);
    put_text(&s, xl);
    put(&s, "</text>\n</g>\n<g class=\"y-axis\" font-size=\"12\" fill=\"#333\" "
            "text-anchor=\"end\">\n");
    for (int i = 0; i < ay.n; i++) {
        double Y = B - ph * axis_pos(&ay, ay.ticks[i]);
        tick_label(&ay, ay.ticks[i], buf, sizeof buf);
        put(&s, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"#444\"/><text x=\"%.2f\" y=\"%.2f\">%s</text>\n", L - 5, Y, L, Y, L - 8,
            Y + 4, buf);
    }
    put(&s, "<text class=\"label\" x=\"%.2f\" y=\"%.2f\" font-size=\"14\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 %.2f %.2f)\">", y_title, T + ph / 2, y_title, T + ph / 2);
    if (o.y_label) put_text(&s, yl);
    else put_words(&s, yl);
    put(&s, "</text>\n</g>\n");
    /* the curves, clipped to the plot area */
    put(&s, "<clipPath id=\"plot-area\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
            "height=\"%.2f\"/></clipPath>\n<g class=\"curves\" clip-path=\"url(#plot-area)\">\n",
        L, T, pw, ph);
    for (int i = 0; i < c->n; i++) {
        const tfl__curve *cv = &c->v[i];
        const char *col = palette[cv->run % 10];
        put(&s, "<g class=\"series\" data-run=\"");
        put_text(&s, c->runs[cv->run]);
        put(&s, "\" data-label=\"");
        put_text(&s, cv->label);
        put(&s, "\">\n<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                "stroke-linejoin=\"round\"%s d=\"", col,
            cv->validation ? " stroke-dasharray=\"7 4\"" : "");
        bool pen = false;
        for (int64_t k = 0; k < cv->n; k++) {
            tfl__point p = cv->p[k];
            if (o.log_y && !(p.y > 0)) {
                pen = false;
                continue;
            }
            put(&s, "%s%.2f %.2f ", pen ? "L" : "M", L + pw * axis_pos(&ax, p.x),
                B - ph * axis_pos(&ay, p.y));
            pen = true;
        }
        put(&s, "\"/>\n");
        if (cv->n <= 40)
            for (int64_t k = 0; k < cv->n; k++) {
                tfl__point p = cv->p[k];
                if (o.log_y && !(p.y > 0)) continue;
                put(&s, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" stroke=\"%s\"/>\n",
                    L + pw * axis_pos(&ax, p.x), B - ph * axis_pos(&ay, p.y),
                    cv->validation ? "white" : col, col);
            }
        put(&s, "</g>\n");
    }
    put(&s, "</g>\n");
    /* the legend: in the corner that covers the fewest points */
    size_t longest = 0;
    for (int i = 0; i < c->n; i++) longest = strlen(c->v[i].label) > longest ? strlen(c->v[i].label) : longest;
    double lw = 44 + 7.2 * (double)longest, lh = 10 + 20.0 * c->n;
    double corners[4][2] = {{R - lw - 10, T + 10}, {R - lw - 10, B - lh - 10},
                            {L + 10, T + 10}, {L + 10, B - lh - 10}};
    int best = 0;
    int64_t fewest = INT64_MAX;
    for (int q = 0; q < 4; q++) {
        int64_t hidden = 0;
        for (int i = 0; i < c->n; i++)
            for (int64_t k = 0; k < c->v[i].n; k++) {
                tfl__point p = c->v[i].p[k];
                if (o.log_y && !(p.y > 0)) continue;
                double X = L + pw * axis_pos(&ax, p.x), Y = B - ph * axis_pos(&ay, p.y);
                hidden += X >= corners[q][0] - 6 && X <= corners[q][0] + lw + 6 &&
                          Y >= corners[q][1] - 6 && Y <= corners[q][1] + lh + 6;
            }
        if (hidden < fewest) {
            fewest = hidden;
            best = q;
        }
    }
    double gx = corners[best][0], gy = corners[best][1];
    put(&s, "<g class=\"legend\" font-size=\"13\" fill=\"#222\">\n<rect x=\"%.2f\" y=\"%.2f\" "
            "width=\"%.2f\" height=\"%.2f\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#bbb\" "
            "rx=\"4\"/>\n", gx, gy, lw, lh);
    for (int i = 0; i < c->n; i++) {
        const tfl__curve *cv = &c->v[i];
        const char *col = palette[cv->run % 10];
        double yy = gy + 15 + 20.0 * i;
        put(&s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
                "stroke-width=\"2\"%s/><text x=\"%.2f\" y=\"%.2f\">", gx + 8, yy, gx + 34, yy, col,
            cv->validation ? " stroke-dasharray=\"7 4\"" : "", gx + 40, yy + 4.5);
        put_text(&s, cv->label);
        put(&s, "</text>\n");
    }
    put(&s, "</g>\n</svg>\n");
    if (s.oom) {
        tfl__host_free(ctx, s.s);
        tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_curves_svg: out of memory");
        return NULL;
    }
    tfl__host_free(ctx, c->svg);
    c->svg = s.s;
    c->svg_len = s.n;
    if (len) *len = s.n;
    return c->svg;
}

tfl_status tfl_curves_write_svg(tfl_curves *c, const char *path, const tfl_plot_opts *opts)
{
    if (!c) return TFL_INVALID_ARGUMENT;
    if (!tfl__curves_alive(c, "tfl_curves_write_svg")) return TFL_MISUSE;
    TFL_CHECK(c->ctx, path && *path, TFL_INVALID_ARGUMENT, "tfl_curves_write_svg: the path is %s",
              path ? "empty" : "NULL");
    size_t n = 0;
    const char *svg = tfl_curves_svg(c, opts, &n);
    if (!svg) return tfl_ctx_status(c->ctx);
    return tfl_file_write_atomic(c->ctx, path, svg, n);
}

/* ---- several metrics of several runs, a panel each ----------------------------------------- */

/* One panel's document inside a larger one: without its XML declaration, placed at (x, y),
 * its clip path's id made unique. */
static void put_panel(out *o, const char *svg, int x, int y, int index)
{
    const char *p = strstr(svg, "<svg ");
    if (!p) return;
    put(o, "<svg x=\"%d\" y=\"%d\" ", x, y);
    p += 5;
    for (const char *q; (q = strstr(p, "plot-area"));) {
        put(o, "%.*s", (int)(q - p), p);
        put(o, "plot-area-%d", index);
        p = q + strlen("plot-area");
    }
    put(o, "%s", p);
}

tfl_status tfl_plot_runs(tfl_ctx *ctx, const tfl_plot_run *runs, int n_runs,
                         const char *const *metrics, int n_metrics, const tfl_plot_opts *opts,
                         const char *path, FILE *stream, int *n_curves)
{
    if (!ctx) return TFL_INVALID_ARGUMENT;
    TFL_CHECK(ctx, runs && n_runs > 0 && metrics && n_metrics > 0 && (path || stream),
              TFL_INVALID_ARGUMENT, "tfl_plot_runs: %s",
              !runs || n_runs <= 0 ? "no runs" : !metrics || n_metrics <= 0 ? "no metrics"
                                                                           : "no path or stream");
    int cols = n_metrics < 2 ? 1 : 2, rows = (n_metrics + cols - 1) / cols;
    tfl_plot_opts po = opts ? *opts : (tfl_plot_opts){0};
    if (!po.width) po.width = n_metrics > 1 ? 640 : 800;
    if (!po.height) po.height = n_metrics > 1 ? 420 : 500;
    out doc = {.ctx = ctx};
    if (n_metrics > 1)
        put(&doc, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
                  "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 "
                  "%d %d\">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            cols * po.width, rows * po.height, cols * po.width, rows * po.height,
            cols * po.width, rows * po.height);
    tfl_status st = TFL_OK;
    int total = 0;
    for (int k = 0; k < n_metrics && st == TFL_OK; k++) {
        tfl_curves *c = tfl_curves_new(ctx);
        if (!c) {
            st = tfl_ctx_status(ctx);
            break;
        }
        for (int i = 0; i < n_runs && st == TFL_OK; i++) {
            int added = 0;
            st = tfl_curves_load_run(c, runs[i].path, metrics[k], runs[i].name, &added);
            if (st == TFL_OK && !added)
                tfl__log(ctx, TFL_LOG_WARNING, "%s has no values of '%s'", runs[i].path,
                         metrics[k]);
            total += added;
        }
        if (st == TFL_OK && tfl_curves_count(c) == 0)
            st = tfl__set_error(ctx, TFL_NOT_FOUND, "no run has values of '%s'; nothing was "
                                "written", metrics[k]);
        size_t len = 0;
        const char *svg = st == TFL_OK ? tfl_curves_svg(c, &po, &len) : NULL;
        if (st == TFL_OK && !svg) st = tfl_ctx_status(ctx);
        if (svg && n_metrics == 1) put(&doc, "%.*s", (int)len, svg);
        else if (svg) put_panel(&doc, svg, k % cols * po.width, k / cols * po.height, k);
        tfl_curves_free(c);
    }
    if (st == TFL_OK && n_metrics > 1) put(&doc, "</svg>\n");
    if (st == TFL_OK && doc.oom)
        st = tfl__set_error(ctx, TFL_RESOURCE_EXHAUSTED, "tfl_plot_runs: out of memory");
    if (st == TFL_OK && path) {
        st = tfl_file_write_atomic(ctx, path, doc.s, doc.n);
    } else if (st == TFL_OK && (fwrite(doc.s, 1, doc.n, stream) != doc.n || fflush(stream) != 0)) {
        st = tfl__set_error(ctx, TFL_FAILED_PRECONDITION, "tfl_plot_runs: cannot write the SVG "
                            "to the stream: %s", strerror(errno));
    }
    if (n_curves) *n_curves = total;
    tfl__host_free(ctx, doc.s);
    return st;
}
