/*
 * framework/format.c: readable reprs of tensors, NumPy-like but with commas:
 * `<tfl.Tensor shape=(2, 2) dtype=float32 device=CPU:0 [[1, 2], [3, 4]]>`. Floats use
 * %g with the chosen significant digits; bools print True/False; complex numbers (a+bj).
 * Tensors above a threshold are summarised with "..." like NumPy.
 */
#include "internal.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>

typedef struct {
    char *buf;
    size_t size, len; /* len counts what the full text needs, written or not */
} writer;

static void put(writer *w, const char *fmt, ...) TFL_PRINTF(2, 3);
static void put(writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = w->len < w->size ? w->size - w->len : 0;
    int n = vsnprintf(room ? w->buf + w->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) w->len += (size_t)n;
}

static void put_real(writer *w, double v, int precision, bool plus)
{
    if (isnan(v)) put(w, plus ? "+nan" : "nan");
    else if (isinf(v)) put(w, v > 0 ? (plus ? "+inf" : "inf") : "-inf");
    else put(w, plus ? "%+.*g" : "%.*g", precision, v == 0.0 ? 0.0 : v); /* no "-0" */
}

static void put_elem(writer *w, const char *p, tfl_dtype dt, int precision)
{
    switch (dt) {
    case TFL_DTYPE_BOOL: put(w, *(const uint8_t *)p ? "True" : "False"); break;
    case TFL_DTYPE_INT32: put(w, "%d", *(const int32_t *)p); break;
    case TFL_DTYPE_INT64: put(w, "%lld", (long long)*(const int64_t *)p); break;
    case TFL_DTYPE_COMPLEX64:
    case TFL_DTYPE_COMPLEX128: {
        double re, im;
        if (dt == TFL_DTYPE_COMPLEX64) {
            re = crealf(*(const float complex *)p);
            im = cimagf(*(const float complex *)p);
        } else {
            re = creal(*(const double complex *)p);
            im = cimag(*(const double complex *)p);
        }
        put(w, "(");
        put_real(w, re, precision, false);
        put_real(w, im, precision, true);
        put(w, "j)");
        break;
    }
    default: put_real(w, tfl__load_f64(p, dt), precision, false); break;
    }
}

typedef struct {
    const tfl_tensor *t;
    const char *base;
    size_t es;
    int precision;
    bool summarise;
    int64_t edge;
} fmt_state;

static void put_axis(writer *w, const fmt_state *f, int axis, int64_t off)
{
    const tfl_tensor *t = f->t;
    if (axis == t->rank) {
        put_elem(w, f->base + off * (int64_t)f->es, (tfl_dtype)t->dtype, f->precision);
        return;
    }
    int64_t n = t->shape[axis];
    bool cut = f->summarise && f->edge <= (n - 1) / 2; /* n > 2 edge, without 2 edge */
    put(w, "[");
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == f->edge) {
            put(w, "..., ");
            i = n - f->edge;
        }
        put_axis(w, f, axis + 1, off + i * t->strides[axis]);
        if (i + 1 < n) put(w, ", ");
    }
    put(w, "]");
}

static int format_values(const tfl_tensor *t, writer *w, const tfl_format_opts *opts)
{
    if (t->flags & TFL_TENSOR_FLAG_UNINIT) {
        put(w, "<uninitialized>");
        return 0;
    }
    tfl_format_opts o = opts ? *opts : (tfl_format_opts){0};
    fmt_state f = {t, NULL, tfl_dtype_size((tfl_dtype)t->dtype), o.precision > 0 ? o.precision : 6,
                   false, o.edge_items > 0 ? o.edge_items : 3};
    f.summarise = t->numel > (o.threshold > 0 ? o.threshold : 1000);
    tfl_ctx *ctx = t->ctx;
    bool on_host = tfl__dev_is_host(tfl__tensor_device(t)); /* else read through a host copy */
    if (!on_host) tfl_frame_push(ctx);
    const tfl_tensor *h = on_host ? t : tfl__tensor_copy_to(ctx, t, tfl__cpu(ctx));
    if (h) {
        f.t = h;
        f.base = tfl__data(h);
        put_axis(w, &f, 0, 0);
    } else {
        put(w, "<unreadable>");
    }
    if (!on_host) tfl_frame_pop(ctx);
    return 0;
}

static int finish(writer *w)
{
    if (w->size > 0) w->buf[w->len < w->size ? w->len : w->size - 1] = '\0';
    return w->len > (size_t)INT32_MAX ? INT32_MAX : (int)w->len;
}

/* Every field: in range or 0 (the default); a bad one is kept as t's ctx error. */
static bool check_format_opts(const tfl_tensor *t, const tfl_format_opts *o)
{
    if (!o) return true;
    TFL_CHECK_RET(t->ctx, o->precision >= 0 && o->precision <= 40, false, TFL_INVALID_ARGUMENT,
                  "tensor_format: opts.precision is %d; expected 0 (6) to 40", o->precision);
    TFL_CHECK_RET(t->ctx, o->threshold >= 0, false, TFL_INVALID_ARGUMENT,
                  "tensor_format: opts.threshold is %lld; expected >= 0 (0: 1000)",
                  (long long)o->threshold);
    TFL_CHECK_RET(t->ctx, o->edge_items >= 0, false, TFL_INVALID_ARGUMENT,
                  "tensor_format: opts.edge_items is %lld; expected >= 0 (0: 3)",
                  (long long)o->edge_items);
    return true;
}

int tfl_tensor_format_values(const tfl_tensor *t, char *buf, size_t size,
                             const tfl_format_opts *opts)
{
    if (buf && size > 0) buf[0] = 0; /* as snprintf: terminated, also on the errors below */
    if (!t || !tfl__tensor_alive(t, "tfl_tensor_format_values") || !check_format_opts(t, opts))
        return -1;
    writer w = {buf, buf ? size : 0, 0};
    format_values(t, &w, opts);
    return finish(&w);
}

int tfl_tensor_format(const tfl_tensor *t, char *buf, size_t size, const tfl_format_opts *opts)
{
    if (buf && size > 0) buf[0] = 0; /* as snprintf: terminated, also on the errors below */
    if (!t || !tfl__tensor_alive(t, "tfl_tensor_format") || !check_format_opts(t, opts))
        return -1;
    writer w = {buf, buf ? size : 0, 0};
    char shape[160];
    if (t->var) put(&w, "<tfl.Variable '%s:0' ", t->var->name);
    else put(&w, "<tfl.Tensor ");
    put(&w, "shape=%s dtype=%s device=%s ", tfl__shape_str(t->rank, t->shape, shape, sizeof shape),
        tfl_dtype_name((tfl_dtype)t->dtype), tfl_tensor_device(t));
    format_values(t, &w, opts);
    put(&w, ">");
    return finish(&w);
}
