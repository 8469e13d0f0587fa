#!/usr/bin/env python3
"""fit_erf.py: the coefficients of tfl_ew_gelu_erf_f32 (framework/ops/ew_math.h).

erf(x) = x P(x^2) / Q(x^2) on |x| < 4, P of degree 5 and Q of degree 5 with Q(0) = 1, fitted
to erf(x) / x on s = x^2 in [0, 16] for the smallest relative error: linearised least squares
(P - f Q, weighted by 1 / (f Q_prev)), iterated, with Lawson's reweighting toward minimax.
Prints the coefficients (lowest degree first), the fit's relative error in exact arithmetic,
and the error of the float32 evaluation (Horner, as ew_math.h) against erf in ulps.
Needs numpy and mpmath (pip install numpy mpmath); nothing in the build runs it.
Usage: python3 tests/reference/fit_erf.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def erf_over_x(s):
    x = mp.sqrt(s)
    return mp.erf(x) / x if s > 0 else 2 / mp.sqrt(mp.pi)


def fit(deg_p, deg_q, smax=16.0, iters=30, nodes=4000):
    t = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    s = (t + 1) / 2 * smax
    f = np.array([float(erf_over_x(mp.mpf(v))) for v in s])
    w, q_prev = np.ones(nodes), np.ones(nodes)
    for _ in range(iters):
        a = np.hstack([np.vander(s, deg_p + 1, increasing=True),
                       -(f[:, None] * np.vander(s, deg_q + 1, increasing=True)[:, 1:])])
        scale = w / (np.abs(f) * q_prev)
        c, *_ = np.linalg.lstsq(a * scale[:, None], f * scale, rcond=None)
        p, q = c[:deg_p + 1], np.concatenate([[1.0], c[deg_p + 1:]])
        q_prev = np.polyval(q[::-1], s)
        err = np.polyval(p[::-1], s) / q_prev / f - 1
        w = w * np.abs(err) ** 0.5 + 1e-30
        w /= w.max()
    return p, q, float(np.max(np.abs(err)))


def horner32(coef, s):
    r = np.full_like(s, np.float32(coef[-1]))
    for c in coef[-2::-1]:
        r = r * s + np.float32(c)
    return r


def main():
    p, q, rel = fit(5, 5)
    print("P:", ", ".join("%.8e" % v for v in p))
    print("Q:", ", ".join("%.8e" % v for v in q))
    print("relative error of the fit: %.3g" % rel)
    x = np.linspace(-4, 4, 40001).astype(np.float32)
    s = x * x
    y = (x * horner32(p, s) / horner32(q, s)).astype(np.float64)
    ref = np.array([float(mp.erf(mp.mpf(float(v)))) for v in x])
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    print("float32 evaluation: max %.2f ulp of erf" % np.max(np.abs(y - ref) / ulp))


if __name__ == "__main__":
    main()
