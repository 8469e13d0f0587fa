/* gradcheck.h: the gradient-check harness (header-only, used by test_gradcheck.c).
 *
 * A case is a function of one to five floating inputs (other operands, such as indices
 * or conditions, are constants the builder makes). For each case and dtype the harness
 *  1. draws inputs in the case's domain and a random output gradient w;
 *  2. first order: compares the tape's vector-Jacobian product with central finite
 *     differences of L(x) = Re(sum(conj(w) * f(x))) in float64 (for complex inputs the real
 *     and imaginary parts are perturbed apart: TensorFlow's convention dL/dRe + i dL/dIm);
 *  3. second order: records the first-order gradient on an outer tape and compares the
 *     gradient of s(x) = Re(sum_i sum(conj(u_i) * grad_i)) with finite differences of s, so
 *     every backward rule is itself differentiable;
 *  4. float32: the same VJP on float32 inputs agrees with the float64 one.
 */
#ifndef TFL_GRADCHECK_H
#define TFL_GRADCHECK_H

#include "test_fixture.h"

#include <complex.h>
#include <math.h>

#define GC_MAX_IN 5
#define GC_MAX_ELEMS 64

typedef tfl_tensor *(*gc_build_fn)(tfl_ctx *ctx, tfl_tensor *const *x);

enum gc_domain { ANY = 0, POS, AWAY0 };
enum { GC_F64 = 1, GC_C128 = 2 };

typedef struct gc_shape {
    int rank;
    int64_t d[4];
} gc_shape;

typedef struct gc_case {
    const char *op;           /* the op's TensorFlow name, as tfl_op_name gives it */
    const char *label;
    gc_build_fn build;
    int n;                    /* differentiable inputs */
    gc_shape shape[GC_MAX_IN];
    uint8_t domain[GC_MAX_IN];
    unsigned dtypes;          /* GC_F64 | GC_C128 */
    bool blocks;              /* a non-differentiable op: the gradient must not flow */
} gc_case;

#define SH(...) {(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}}
#define SH0 {0, {0}}

/* ---- values ---------------------------------------------------------------------------------- */

typedef struct gc_rng {
    uint64_t s;
} gc_rng;

static inline double gc_uniform(gc_rng *r) /* [0, 1) */
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static inline double gc_draw(gc_rng *r, int domain)
{
    double u = gc_uniform(r);
    switch (domain) {
    case POS: return 0.5 + 1.5 * u;
    case AWAY0: return (gc_uniform(r) < 0.5 ? -1 : 1) * (0.3 + 1.7 * u);
    default: return -2.0 + 4.0 * u;
    }
}

static inline int64_t gc_numel(const gc_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->d[i];
    return n;
}

/* A tensor of dtype (float32, float64 or complex128) from n complex values. */
static inline tfl_tensor *gc_tensor(tfl_ctx *ctx, tfl_dtype dtype, int rank, const int64_t *shape,
                                    const double complex *v, int64_t n)
{
    double buf[2 * GC_MAX_ELEMS];
    float f[GC_MAX_ELEMS];
    assert_true(n <= GC_MAX_ELEMS);
    for (int64_t i = 0; i < n; i++) {
        buf[2 * i] = creal(v[i]);
        buf[2 * i + 1] = cimag(v[i]);
        f[i] = (float)creal(v[i]);
    }
    if (dtype == TFL_DTYPE_COMPLEX128) return tfl_tensor_new(ctx, dtype, rank, shape, buf);
    if (dtype == TFL_DTYPE_FLOAT32) return tfl_tensor_new(ctx, dtype, rank, shape, f);
    for (int64_t i = 0; i < n; i++) buf[i] = creal(v[i]);
    return tfl_tensor_new(ctx, dtype, rank, shape, buf);
}

/* t's values as complex numbers (float32, float64, complex128). */
static inline int64_t gc_values(const tfl_tensor *t, double complex *out)
{
    int64_t n = tfl_tensor_numel(t);
    assert_true(n <= GC_MAX_ELEMS);
    tfl_dtype dt = tfl_tensor_dtype(t);
    double buf[2 * GC_MAX_ELEMS];
    float f[GC_MAX_ELEMS];
    if (dt == TFL_DTYPE_FLOAT32) {
        assert_int_equal(tfl_tensor_to_host(t, f, sizeof(float) * (size_t)n), TFL_OK);
        for (int64_t i = 0; i < n; i++) out[i] = f[i];
    } else if (dt == TFL_DTYPE_COMPLEX128) {
        assert_int_equal(tfl_tensor_to_host(t, buf, 16 * (size_t)n), TFL_OK);
        for (int64_t i = 0; i < n; i++) out[i] = CMPLX(buf[2 * i], buf[2 * i + 1]);
    } else {
        assert_int_equal(dt, TFL_DTYPE_FLOAT64);
        assert_int_equal(tfl_tensor_to_host(t, buf, 8 * (size_t)n), TFL_OK);
        for (int64_t i = 0; i < n; i++) out[i] = buf[i];
    }
    return n;
}

/* ---- one evaluation ------------------------------------------------------------------------ */

typedef struct gc_run {
    const gc_case *c;
    tfl_ctx *ctx;
    tfl_dtype dtype;                              /* of the inputs */
    double complex x[GC_MAX_IN][GC_MAX_ELEMS];    /* input values */
    double complex w[GC_MAX_ELEMS];               /* output gradient */
    double complex u[GC_MAX_IN][GC_MAX_ELEMS];    /* direction of the second-order check */
    tfl_dtype out_dtype;
    int out_rank;
    int64_t out_shape[8], out_n;
} gc_run;

static inline void gc_inputs(gc_run *r, tfl_dtype dtype, tfl_tensor **x)
{
    for (int i = 0; i < r->c->n; i++) {
        const gc_shape *s = &r->c->shape[i];
        x[i] = gc_tensor(r->ctx, dtype, s->rank, s->d, r->x[i], gc_numel(s));
        assert_non_null(x[i]);
    }
}

/* L = Re(sum(conj(w) f(x))) at the current r->x */
static inline double gc_loss(gc_run *r)
{
    tfl_ctx *ctx = r->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x[GC_MAX_IN];
    gc_inputs(r, r->dtype, x);
    tfl_tensor *y = r->c->build(ctx, x);
    assert_non_null(y);
    double complex v[GC_MAX_ELEMS];
    int64_t n = gc_values(y, v);
    double L = 0;
    for (int64_t i = 0; i < n; i++) L += creal(conj(r->w[i]) * v[i]);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    return L;
}

/* The tape's VJP at r->x in `dtype`; gradient values into g (zeros when unconnected). */
static inline void gc_vjp(gc_run *r, tfl_dtype dtype, double complex g[][GC_MAX_ELEMS])
{
    tfl_ctx *ctx = r->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x[GC_MAX_IN], *grads[GC_MAX_IN];
    gc_inputs(r, dtype, x);
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_non_null(tape);
    for (int i = 0; i < r->c->n; i++) assert_int_equal(tfl_tape_watch(tape, x[i]), TFL_OK);
    tfl_tensor *y = r->c->build(ctx, x);
    assert_non_null(y);
    assert_int_equal(tfl_tape_end(tape), TFL_OK);
    tfl_dtype wdt = tfl_tensor_dtype(y);
    tfl_tensor *w = gc_tensor(ctx, wdt, r->out_rank, r->out_shape, r->w, r->out_n);
    tfl_status st = tfl_tape_vjp(tape, y, w, r->c->n, (const tfl_tensor *const *)x, grads,
                                 TFL_GRAD_UNCONNECTED_ZERO);
    if (st != TFL_OK) fail_msg("%s/%s: tape_vjp: %s", r->c->op, r->c->label, tfl_ctx_error(ctx).message);
    for (int i = 0; i < r->c->n; i++) {
        assert_int_equal(tfl_tensor_dtype(grads[i]), dtype);
        assert_int_equal(tfl_tensor_rank(grads[i]), r->c->shape[i].rank);
        gc_values(grads[i], g[i]);
    }
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* s = Re(sum_i sum(conj(u_i) grad_i)) at r->x, computed on the host from a fresh VJP */
static inline double gc_s(gc_run *r)
{
    double complex g[GC_MAX_IN][GC_MAX_ELEMS];
    gc_vjp(r, r->dtype, g);
    double s = 0;
    for (int i = 0; i < r->c->n; i++)
        for (int64_t j = 0; j < gc_numel(&r->c->shape[i]); j++) s += creal(conj(r->u[i][j]) * g[i][j]);
    return s;
}

/* The gradient of s through two tapes (the second-order analytic result). */
static inline void gc_hvp(gc_run *r, double complex h[][GC_MAX_ELEMS])
{
    tfl_ctx *ctx = r->ctx;
    const gc_case *c = r->c;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x[GC_MAX_IN], *g[GC_MAX_IN], *hh[GC_MAX_IN];
    gc_inputs(r, r->dtype, x);
    tfl_tape *outer = tfl_tape_begin(ctx, 0), *inner = tfl_tape_begin(ctx, 0);
    for (int i = 0; i < c->n; i++) {
        assert_int_equal(tfl_tape_watch(outer, x[i]), TFL_OK);
        assert_int_equal(tfl_tape_watch(inner, x[i]), TFL_OK);
    }
    tfl_tensor *y = c->build(ctx, x);
    tfl_tape_end(inner);
    tfl_tensor *w = gc_tensor(ctx, tfl_tensor_dtype(y), r->out_rank, r->out_shape, r->w, r->out_n);
    tfl_status st = tfl_tape_vjp(inner, y, w, c->n, (const tfl_tensor *const *)x, g,
                                 TFL_GRAD_UNCONNECTED_ZERO);
    if (st != TFL_OK) fail_msg("%s/%s: inner vjp: %s", c->op, c->label, tfl_ctx_error(ctx).message);
    tfl_tensor *s = NULL;
    for (int i = 0; i < c->n; i++) {
        const gc_shape *sh = &c->shape[i];
        tfl_tensor *u = gc_tensor(ctx, r->dtype, sh->rank, sh->d, r->u[i], gc_numel(sh));
        tfl_tensor *p = tfl_reduce_sum(ctx, tfl_mul(ctx, tfl_conj(ctx, u), g[i]), 0, NULL, false);
        s = s ? tfl_add(ctx, s, p) : p;
    }
    if (r->dtype == TFL_DTYPE_COMPLEX128) s = tfl_cast(ctx, s, TFL_DTYPE_FLOAT64);
    tfl_tape_end(outer);
    st = tfl_tape_gradient(outer, s, c->n, (const tfl_tensor *const *)x, hh,
                           TFL_GRAD_UNCONNECTED_ZERO);
    if (st != TFL_OK) fail_msg("%s/%s: outer gradient: %s", c->op, c->label, tfl_ctx_error(ctx).message);
    for (int i = 0; i < c->n; i++) gc_values(hh[i], h[i]);
    tfl_tape_free(inner);
    tfl_tape_free(outer);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static inline void gc_compare(const gc_run *r, const char *what, int i, int64_t j, double got,
                              double want, double rtol, double atol)
{
    if (!(fabs(got - want) <= atol + rtol * fabs(want)))
        fail_msg("%s/%s (%s) %s: input %d element %lld: tape %.12g, finite differences %.12g",
                 r->c->op, r->c->label, tfl_dtype_name(r->dtype), what, i, (long long)j, got, want);
}

/* Central differences of fn along input i, element j, real (im = 0) or imaginary part. */
static inline double gc_diff(gc_run *r, double (*fn)(gc_run *), int i, int64_t j, int im,
                             double h)
{
    double complex d = im ? CMPLX(0, h) : h, keep = r->x[i][j];
    r->x[i][j] = keep + d;
    double up = fn(r);
    r->x[i][j] = keep - d;
    double down = fn(r);
    r->x[i][j] = keep;
    return (up - down) / (2 * h);
}

static inline void gc_check_dtype(const gc_case *c, tfl_ctx *ctx, tfl_dtype dtype, uint64_t seed)
{
    gc_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->c = c;
    r->ctx = ctx;
    r->dtype = dtype;
    gc_rng rng = {seed};
    bool cx = dtype == TFL_DTYPE_COMPLEX128;
    for (int i = 0; i < c->n; i++)
        for (int64_t j = 0; j < gc_numel(&c->shape[i]); j++) {
            double re = gc_draw(&rng, c->domain[i]);
            double im = cx ? (c->domain[i] == ANY ? gc_draw(&rng, ANY) : 0.5 * gc_draw(&rng, ANY) * 0.5) : 0;
            r->x[i][j] = CMPLX(re, im);
            r->u[i][j] = CMPLX(gc_draw(&rng, ANY), cx ? gc_draw(&rng, ANY) : 0);
        }
    /* the output's shape and dtype, and w */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x[GC_MAX_IN];
    gc_inputs(r, dtype, x);
    tfl_tensor *y = c->build(ctx, x);
    if (!y) fail_msg("%s/%s: the op failed: %s", c->op, c->label, tfl_ctx_error(ctx).message);
    r->out_dtype = tfl_tensor_dtype(y);
    r->out_rank = tfl_tensor_rank(y);
    memcpy(r->out_shape, tfl_tensor_shape(y), sizeof(int64_t) * (size_t)r->out_rank);
    r->out_n = tfl_tensor_numel(y);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    bool wcx = r->out_dtype == TFL_DTYPE_COMPLEX128;
    for (int64_t j = 0; j < r->out_n; j++)
        r->w[j] = CMPLX(gc_draw(&rng, ANY), wcx ? gc_draw(&rng, ANY) : 0);

    /* first order */
    double complex g[GC_MAX_IN][GC_MAX_ELEMS];
    gc_vjp(r, dtype, g);
    for (int i = 0; i < c->n; i++)
        for (int64_t j = 0; j < gc_numel(&c->shape[i]); j++) {
            gc_compare(r, "gradient (real part)", i, j, creal(g[i][j]),
                       gc_diff(r, gc_loss, i, j, 0, 1e-6), 1e-6, 1e-7);
            if (cx)
                gc_compare(r, "gradient (imaginary part)", i, j, cimag(g[i][j]),
                           gc_diff(r, gc_loss, i, j, 1, 1e-6), 1e-6, 1e-7);
        }
    /* second order */
    double complex h[GC_MAX_IN][GC_MAX_ELEMS];
    gc_hvp(r, h);
    for (int i = 0; i < c->n; i++)
        for (int64_t j = 0; j < gc_numel(&c->shape[i]); j++) {
            gc_compare(r, "second order (real part)", i, j, creal(h[i][j]),
                       gc_diff(r, gc_s, i, j, 0, 1e-5), 1e-5, 1e-6);
            if (cx)
                gc_compare(r, "second order (imaginary part)", i, j, cimag(h[i][j]),
                           gc_diff(r, gc_s, i, j, 1, 1e-5), 1e-5, 1e-6);
        }
    /* float32 agrees with float64 */
    if (!cx) {
        double complex g32[GC_MAX_IN][GC_MAX_ELEMS];
        gc_vjp(r, TFL_DTYPE_FLOAT32, g32);
        for (int i = 0; i < c->n; i++)
            for (int64_t j = 0; j < gc_numel(&c->shape[i]); j++)
                gc_compare(r, "float32 gradient vs float64", i, j, creal(g32[i][j]),
                           creal(g[i][j]), 1e-4, 1e-5);
    }
    free(r);
}

/* A non-differentiable op: under a tape watching its input, no gradient reaches the input. */
static inline void gc_check_blocks(const gc_case *c, tfl_ctx *ctx)
{
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    gc_rng rng = {7};
    double complex v[GC_MAX_ELEMS];
    const gc_shape *s = &c->shape[0];
    for (int64_t j = 0; j < gc_numel(s); j++) v[j] = gc_draw(&rng, c->domain[0]);
    tfl_tensor *x = gc_tensor(ctx, TFL_DTYPE_FLOAT64, s->rank, s->d, v, gc_numel(s));
    tfl_tape *tape = tfl_tape_begin(ctx, 0);
    assert_int_equal(tfl_tape_watch(tape, x), TFL_OK);
    tfl_tensor *y = c->build(ctx, &x);
    assert_non_null(y);
    if (tfl_tensor_dtype(y) != TFL_DTYPE_FLOAT64) y = tfl_cast(ctx, y, TFL_DTYPE_FLOAT64);
    tfl_tape_end(tape);
    tfl_tensor *g = (tfl_tensor *)1;
    assert_int_equal(tfl_tape_gradient(tape, y, 1, (const tfl_tensor *const *)&x, &g, 0), TFL_OK);
    if (g) fail_msg("%s/%s: a gradient flowed through a non-differentiable op", c->op, c->label);
    tfl_tape_free(tape);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

#endif /* TFL_GRADCHECK_H */
