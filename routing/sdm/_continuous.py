"""Continuous SDM on the unit sphere S^(n-1): cap and cap-intersection fractions, in log space.

Neurons, patterns and queries are unit vectors and a neuron is active when its cosine with the
address is at least t (Bricken et al. 2023, §3, Eqs. 1-2). The fraction of neurons a query
shares with a pattern is the fraction of the sphere in the intersection of two caps.

Derivation of the intersection. For x uniform on S^(n-1) and a unit vector e, the coordinate
u = x·e has density f_n(u) = (1 - u^2)^((n-3)/2) / B(1/2, (n-1)/2) on [-1, 1], and
(1 + u)/2 ~ Beta((n-1)/2, (n-1)/2), which gives the cap fraction below. For two centres a, b
with cosine ρ = cos θ, write x·a = w cos(θ/2) + v sin(θ/2) and x·b = w cos(θ/2) - v sin(θ/2),
where w = x·(a + b)/|a + b| and v = x·(a - b)/|a - b|. Given w, v = sqrt(1 - w^2) V with V the
first coordinate of a uniform point of S^(n-2), so V^2 ~ Beta(1/2, (n-2)/2). Both cap conditions
hold iff |v| sin(θ/2) <= w cos(θ/2) - t, hence

    P(x·a >= t, x·b >= t) = ∫ f_n(w) P(w) dw,   P(w) = I_{min(1, s(w)^2)}(1/2, (n-2)/2),
    s(w) = (w cos(θ/2) - t) / (sin(θ/2) sqrt(1 - w^2))   (P = 0 where s < 0).

With α = arccos t, P(w) = 1 exactly for w >= cos(α - θ/2) and, when t < -cos(θ/2), for
w <= cos(α + θ/2); those pieces are cap fractions. The rest is integrated with
scipy.integrate.quad on exp(log-integrand - its maximum), so nothing underflows for n up to 10^4.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, special

from routing.validation import check_bool, check_int
from routing.sdm._checks import check_cosine

__all__ = ["cap_fraction", "cap_intersection_fraction"]

_TINY = 1e-280  # below this betainc is recomputed in log space (it underflows near 1e-308)


def _log_integrate(log_f, a: float, b: float) -> float:
    """log ∫_a^b exp(log_f(w)) dw for a log-integrand ``log_f`` (vectorised over numpy arrays).

    The maximum is located on a grid (uniform plus geometric clusters at both ends, where the
    narrow peaks of large-n integrands sit) and refined; the integrand is rescaled by it, and
    quad integrates over segments that start at the peak's width (where log_f has dropped by
    1) and grow fourfold towards both ends, so that a peak far narrower than [a, b] is always
    resolved. Relative accuracy about 1e-11.
    """
    if not b > a:
        return -math.inf

    def scalar(w):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            v = float(log_f(np.float64(w)))
        return v if v == v else -math.inf

    span = b - a
    geo = np.geomspace(1e-15, 0.5, 100)
    grid = np.unique(np.clip(np.concatenate([np.linspace(a, b, 1025), a + span * geo, b - span * geo]), a, b))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        vals = np.asarray(log_f(grid), dtype=np.float64)
    vals = np.where(np.isnan(vals), -np.inf, vals)
    i = int(np.argmax(vals))
    top, peak = float(vals[i]), float(grid[i])
    if not math.isfinite(top):
        return -math.inf
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, grid.size - 1)])
    res = optimize.minimize_scalar(lambda w: -scalar(w), bounds=(lo, hi), method="bounded",
                                   options={"xatol": (hi - lo) * 1e-12})
    if -res.fun > top:
        top, peak = -float(res.fun), float(res.x)
    breaks = {a, b, peak}
    widths = []
    for side, inside in ((-1, grid < peak), (1, grid > peak)):
        below = np.flatnonzero(inside & (vals < top - 1.0))
        end = a if side < 0 else b
        if below.size == 0:
            width = abs(end - peak)
        else:
            g = float(grid[below[-1] if side < 0 else below[0]])
            root = optimize.brentq(lambda w: scalar(w) - (top - 1.0), min(peak, g), max(peak, g))
            width = max(abs(root - peak), 1e-15 * max(1.0, abs(peak)))
        widths.append(width)
        x = width
        while 0 < x < abs(end - peak):
            breaks.add(peak + side * x)
            x *= 4.0
    pts = sorted(breaks)
    tol = 1e-14 * sum(widths)

    def f(w):
        return math.exp(scalar(w) - top)

    total = math.fsum(integrate.quad(f, u, v, limit=200, epsabs=tol, epsrel=1e-12)[0]
                      for u, v in zip(pts[:-1], pts[1:]))
    return top + math.log(total) if total > 0 else -math.inf


def _log_cap(n: int, t: float) -> float:
    """log of the cap fraction P(x·e >= t) on S^(n-1), n >= 2."""
    if t <= -1.0:
        return 0.0
    if t >= 1.0:
        return -math.inf
    a = 0.5 * (n - 1)
    value = float(special.betainc(a, a, 0.5 * (1.0 - t)))
    if value > _TINY:
        return math.log(value)
    # Deep upper tail (t > 0, n large): integrate the density of x·e over [t, 1] in log space.
    k = 0.5 * (n - 3)
    log_norm = float(special.betaln(0.5, a))
    return _log_integrate(lambda u: k * (np.log1p(-u) + np.log1p(u)) - log_norm, t, 1.0)


def _log_intersection(n: int, t: float, rho: float) -> float:
    """log of the fraction of S^(n-1) with cosine >= t to both centres (cosine rho apart)."""
    if t <= -1.0:
        return 0.0
    if t >= 1.0:
        return -math.inf
    if rho >= 1.0:
        return _log_cap(n, t)
    if rho <= -1.0:  # antipodal centres: |x·a| <= -t, and x·a^2 ~ Beta(1/2, (n-1)/2)
        return math.log(float(special.betainc(0.5, 0.5 * (n - 1), t * t))) if t < 0 else -math.inf
    ch, sh = math.sqrt(0.5 * (1.0 + rho)), math.sqrt(0.5 * (1.0 - rho))  # cos(θ/2), sin(θ/2)
    if t >= ch:  # θ >= 2 arccos t: the caps meet in at most a point
        return -math.inf
    st = math.sqrt((1.0 - t) * (1.0 + t))
    w_hi = t * ch + st * sh  # cos(α - θ/2): P(w) = 1 above it
    w_lo2 = t * ch - st * sh  # cos(α + θ/2): P(w) = 1 below it when t < -cos(θ/2)
    if n == 2:  # two arcs of half-angle α, centres θ apart, on the circle
        alpha, theta = math.acos(t), math.acos(rho)
        length = min(2 * alpha, max(0.0, 2 * alpha - theta) + max(0.0, 2 * alpha - (2 * math.pi - theta)))
        return math.log(length / (2 * math.pi)) if length > 0 else -math.inf
    parts = [_log_cap(n, w_hi)]
    if t < -ch:
        parts.append(_log_cap(n, -w_lo2))
        w_lo = w_lo2
    else:
        w_lo = t / ch
    k = 0.5 * (n - 3)
    b = 0.5 * (n - 2)
    log_norm = float(special.betaln(0.5, 0.5 * (n - 1)))

    def log_f(w):
        one_minus_w2 = (1.0 - w) * (1.0 + w)
        s = (w * ch - t) / (sh * np.sqrt(one_minus_w2))
        p = special.betainc(0.5, b, np.clip(s * s, 0.0, 1.0))
        return k * np.log(one_minus_w2) - log_norm + np.where(s > 0, np.log(p), -np.inf)

    parts.append(_log_integrate(log_f, w_lo, w_hi))
    return float(special.logsumexp(parts))


def _apply(fn, n, t_arr, rho_arr, scalar, log):
    vals = np.array([fn(n, float(ti), float(ri)) for ti, ri in zip(t_arr.ravel(), rho_arr.ravel())])
    vals = vals.reshape(t_arr.shape)
    if not log:
        vals = np.exp(vals)
    return float(vals) if scalar else vals


def cap_fraction(n, t, log=False):
    """Fraction of the sphere S^(n-1) within cosine similarity >= t of a centre.

    The fraction of neurons a continuous-SDM address activates with cosine threshold t
    (Bricken et al. 2023, §3, Eq. 1). Computed as the regularised incomplete beta function
    I_{(1-t)/2}((n-1)/2, (n-1)/2) (scipy.special.betainc), and in log space by quadrature of
    the density of x·e where that underflows.

    Arguments:
        n: dimension of the ambient space, int >= 2 (the sphere S^(n-1)).
        t: cosine threshold, float in [-1, 1], or an array of them.
        log: return the natural log (finite for n up to 10^4 and t < 1).

    Returns:
        float64 in [0, 1] (Python float for scalar t, else an ndarray of t's shape).

    Raises:
        ValueError: for n < 2 or not an integer, t outside [-1, 1], or ``log`` not a bool.
    """
    n = check_int(n, "n", 2, None)
    t_arr, scalar = check_cosine(t, "t")
    log = check_bool(log, "log")
    return _apply(lambda n_, ti, _: _log_cap(n_, ti), n, t_arr, t_arr, scalar, log)


def cap_intersection_fraction(n, t, cos_between, log=False):
    """Fraction of S^(n-1) within cosine >= t of two centres whose cosine is ``cos_between``.

    The continuous SDM circle intersection: the fraction of neurons (uniform on the sphere)
    that both a query and a pattern activate (Bricken et al. 2023, §3; Bricken & Pehlevan 2021).
    The formula and its derivation are in this module's docstring: an integral over the
    coordinate along the bisector of the centres of the conditional (n-2)-sphere fraction,
    evaluated in log space with scipy.integrate.quad (relative accuracy about 1e-10).

    Arguments:
        n: dimension of the ambient space, int >= 2 (n = 2: exact arc lengths).
        t: cosine threshold of both caps, float in [-1, 1].
        cos_between: cosine of the angle between the centres, float in [-1, 1], or an array
            (then t may be a scalar or an array broadcastable against it).
        log: return the natural log (-inf where the caps do not overlap in a set of positive
            measure, i.e. cos_between < 2t^2 - 1 with t > 0).

    Returns:
        float64 in [0, 1] (Python float when both t and cos_between are scalars, else an
        ndarray of their broadcast shape).

    Raises:
        ValueError: for n < 2 or not an integer, t or cos_between outside [-1, 1], or ``log``
            not a bool.
    """
    n = check_int(n, "n", 2, None)
    t_arr, t_scalar = check_cosine(t, "t")
    rho_arr, rho_scalar = check_cosine(cos_between, "cos_between")
    log = check_bool(log, "log")
    t_arr, rho_arr = np.broadcast_arrays(t_arr, rho_arr)
    return _apply(_log_intersection, n, t_arr, rho_arr, t_scalar and rho_scalar, log)
