"""Collision probabilities of LSH families: closed forms and empirical estimates.

Two points collide in a hash when the hash gives them the same value. For the Euclidean
(p-stable) LSH of Datar et al. 2004 with Gaussian directions and width w, two points at
distance u collide in one hash with probability

    p(u) = ∫_0^w (1/u) f(t/u) (1 - t/w) dt
         = 1 - 2Φ(-w/u) - 2u / (√(2π) w) · (1 - exp(-w² / (2u²))),

where f is the density of |N(0, 1)|; for hyperplane (sign) LSH (Charikar 2002) two points at
angle θ collide in one bit with probability 1 - θ/π. Hashes are independent, so a key of m
hashes collides with probability p^m.

Cross-polytope LSH (Andoni et al. 2015): h(x) = ±e_i, the signed coordinate of largest
|(Gx)_i| for a Gaussian d × d matrix G. For unit x, y at angle θ the pairs (u_i, v_i) =
((Gx)_i, (Gy)_i) are i.i.d. standard bivariate normal with correlation ρ = cos θ, so by
symmetry over the 2d vertices

    p(θ) = 2d ∫∫_{u, v > 0} φ_ρ(u, v) F(u, v)^(d-1) du dv,   F(u, v) = P(|U| < u, |V| < v),

with φ_ρ the bivariate normal density; F is a sum of four bivariate normal CDFs, each in
closed form through Owen's T function (``scipy.special.owens_t``), and the double integral is
taken by composite Gauss–Legendre quadrature (``scipy.special.roots_legendre``) in the
coordinates u and w = (v − ρu)/√(1 − ρ²). Andoni et al. 2015, Theorem 1: with
τ = ‖x − y‖ = 2 sin(θ/2), ln(1/p) = τ²/(4 − τ²) · ln d + O_τ(ln ln d) = tan²(θ/2) · ln d +
O_τ(ln ln d).

Source: Baykal et al. 2022, §2.2 (Euclidean LSH model); Datar et al. 2004, §3.2;
Charikar 2002, §3; Andoni, Indyk, Laarhoven, Razenshteyn & Schmidt 2015, §1.2 and Theorem 1
(cross-polytope LSH).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

import inference
from routing.validation import as_numpy, check_int, check_points, check_real, check_seed

__all__ = [
    "collision_probability_euclidean",
    "collision_probability_hyperplane",
    "collision_probability_cross_polytope",
    "empirical_collision_rate",
    "CollisionEstimate",
    "clopper_pearson",
    "pairs_at_distances",
    "pairs_at_angles",
]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _check_nonnegative_array(value, name: str, high: float | None = None) -> np.ndarray:
    arr = as_numpy(value)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise ValueError(f"{name} must be a real number or array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    upper = "inf)" if high is None else f"{high:g}]"
    bad = ~np.isfinite(arr) | (arr < 0)
    if high is not None:
        bad |= arr > high
    if bad.any():
        raise ValueError(f"{name} must be finite and in [0, {upper}; got {arr[bad].ravel()[0]!r}")
    return arr


def _as_output(p: np.ndarray, like):
    return float(p) if np.ndim(like) == 0 else p


def collision_probability_euclidean(u, width, n_hashes: int = 1):
    """Probability that two points at distance u share a Euclidean LSH key.

    Per hash, p(u) = 1 - 2Φ(-w/u) - 2u/(√(2π) w) · (1 - exp(-w²/(2u²))) (Datar et al. 2004,
    Gaussian directions, offset uniform on [0, w)), with p(0) = 1; it decreases from 1 to 0 as
    u grows. It is evaluated as erf(r/√2) - √(2/π) · (-expm1(-r²/2)) / r with r = w/u, which
    keeps full relative precision for both small and large r. A key of ``n_hashes`` independent
    hashes collides with probability p(u)^n_hashes.

    Arguments:
        u: distance(s) between the two points, float scalar or array of any shape, >= 0, in the
            same units as ``width``.
        width: the bucket width w > 0.
        n_hashes: number of hashes in the key (1 gives the per-hash probability).

    Returns:
        float (for scalar ``u``) or float64 array of ``u``'s shape, values in [0, 1].

    Raises:
        ValueError: if ``u`` has negative or non-finite entries, ``width`` is not a finite
            number > 0, or ``n_hashes`` < 1.

    Source: Datar et al. 2004, §3.2 (p-stable LSH); Baykal et al. 2022, §2.2.
    """
    arr = _check_nonnegative_array(u, "u")
    w = check_real(width, "width", 0, None, low_open=True)
    n_hashes = check_int(n_hashes, "n_hashes", 1)
    p = np.ones_like(arr)
    pos = arr > 0
    with np.errstate(over="ignore", under="ignore"):
        r = w / arr[pos]  # may overflow to inf (p = 1) or underflow to 0 (p = 0): both exact
        small = r < 1e-4  # series p = √(2/π)·(r/2 − r³/24 + …): no 0/0 when r underflows
        with np.errstate(invalid="ignore", divide="ignore"):
            full = special.erf(r / math.sqrt(2.0)) - _SQRT_2_OVER_PI * (-np.expm1(-0.5 * r * r)) / r
        p[pos] = np.where(small, _SQRT_2_OVER_PI * r * (0.5 - r * r / 24.0), full)
    p = np.clip(p, 0.0, 1.0) ** n_hashes
    return _as_output(p, u)


def collision_probability_hyperplane(theta, n_bits: int = 1):
    """Probability that two points at angle θ share a hyperplane-LSH key: (1 - θ/π)^n_bits.

    Arguments:
        theta: angle(s) between the two points in radians, scalar or array, in [0, π].
        n_bits: number of sign bits in the key (1 gives the per-bit probability).

    Returns:
        float (for scalar ``theta``) or float64 array of ``theta``'s shape, values in [0, 1].

    Raises:
        ValueError: if ``theta`` has entries outside [0, π] or ``n_bits`` < 1.

    Source: Charikar 2002, §3 (random hyperplane rounding, Goemans & Williamson 1995).
    """
    arr = _check_nonnegative_array(theta, "theta", high=math.pi)
    n_bits = check_int(n_bits, "n_bits", 1)
    p = (1.0 - arr / math.pi) ** n_bits
    return _as_output(p, theta)


# Composite Gauss–Legendre rule of the cross-polytope integral: panels × nodes per panel, in
# u (the first point's coordinate) and in w (the second's, standardised given u).
_CP_PANELS_U, _CP_PANELS_W, _CP_NODES = 40, 16, 16
_CP_W_MAX = 9.0  # |w| beyond 9 standard deviations carries less than 1e-18 of the mass


def _bvn_cdf(h, k, rho: float, sigma: float):
    """P(U <= h, V <= k) for standard normals of correlation rho (|rho| < 1, sigma =
    √(1 − rho²)), h, k != 0: Owen's formula Φ₂ = ½Φ(h) + ½Φ(k) − T(h, a_h) − T(k, a_k) − β
    (Owen 1956), accurate relative to Φ(min(h, k)) in the lower tail."""
    a_h = (k - rho * h) / (h * sigma)
    a_k = (h - rho * k) / (k * sigma)
    beta = np.where(h * k < 0, 0.5, 0.0)
    return (0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - special.owens_t(h, a_h)
            - special.owens_t(k, a_k) - beta)


def _cross_polytope_one(theta: float, dim: int, panels_u: int, panels_w: int,
                        nodes: int) -> float:
    if theta == 0.0:
        return 1.0
    if theta == math.pi:
        return 0.0  # y = −x: the hash of −x is the opposite vertex
    if dim == 1:
        return 1.0 - theta / math.pi  # one coordinate: the sign bit of Charikar's hash
    rho, sigma = math.cos(theta), math.sin(theta)
    t, wt = special.roots_legendre(nodes)
    # u beyond u_max: 2d·P(U > u_max) < 1e-19, whatever F
    u_max = math.sqrt(2.0 * math.log(2.0 * dim) + 90.0)
    edges = np.linspace(0.0, u_max, panels_u + 1)
    half = 0.5 * np.diff(edges)
    u = ((edges[:-1] + edges[1:]) / 2)[:, None] + half[:, None] * t     # (panels, nodes)
    wu = (half[:, None] * wt).ravel()
    u = u.ravel()                                                        # (Nu,)
    # given u, v = ρu + σw with w ~ N(0, 1); v > 0 means w > −ρu/σ
    w_lo = np.maximum(-rho * u / sigma, -_CP_W_MAX)                      # (Nu,)
    total = 0.0
    keep = w_lo < _CP_W_MAX
    u, wu, w_lo = u[keep], wu[keep], w_lo[keep]
    s = (np.arange(panels_w)[:, None] + (t + 1) / 2).ravel() / panels_w  # (Nw,) in (0, 1)
    sw = (np.repeat(np.full(panels_w, 1.0 / panels_w), nodes) * np.tile(wt, panels_w)) / 2
    span = _CP_W_MAX - w_lo                                              # (Nu,)
    w = w_lo[:, None] + span[:, None] * s                                # (Nu, Nw)
    v = rho * u[:, None] + sigma * w
    uu = np.broadcast_to(u[:, None], v.shape)
    ok = v > 0
    v = np.where(ok, v, 1.0)
    # 1 − F = P(|U| >= u or |V| >= v), from the tails (no cancellation when F is near 1):
    # 2Φ̄(u) + 2Φ̄(v) − 2P(U >= u, V >= v) − 2P(U >= u, V <= −v)
    tails = 2.0 * (special.ndtr(-uu) + special.ndtr(-v) - _bvn_cdf(-uu, -v, rho, sigma)
                   - _bvn_cdf(-uu, -v, -rho, sigma))
    with np.errstate(divide="ignore", under="ignore"):
        power = np.exp((dim - 1) * np.log1p(-np.clip(tails, 0.0, 1.0)))
    inner = np.where(ok, stats.norm.pdf(w) * power, 0.0) @ sw * span      # (Nu,)
    total = float(np.sum(wu * stats.norm.pdf(u) * inner))
    return min(1.0, max(0.0, 2.0 * dim * total))


def collision_probability_cross_polytope(theta, dim: int, n_hashes: int = 1):
    """Probability that two points at angle θ share a cross-polytope LSH key, computed exactly
    (to quadrature accuracy, about 1e-10 absolute) from the integral in the module docstring.

    One hash is h(x) = the signed coordinate of largest |(Gx)_i| (a vertex ±e_i of the
    cross-polytope) for a d × d matrix G of i.i.d. N(0, 1) entries (Andoni et al. 2015, §1.2);
    the hash is invariant to positive scaling, so only the angle matters. A key of
    ``n_hashes`` independent hashes collides with probability p^n_hashes. d = 1 gives
    1 − θ/π (the sign hash); θ = 0 gives 1, θ = π gives 0.
    ``routing.CrossPolytopeLSH`` replaces G by the pseudo-random rotation H D3 H D2 H D1 of
    ``padded_dim`` coordinates (§5), whose collision rate is this function at
    ``dim = padded_dim`` up to the difference between a Gaussian matrix and a rotation, which
    vanishes as d grows: within the 99 % Clopper–Pearson interval of 4000 tables at d = 64
    and 256 (tested), while at d = 16 a rotation (Haar or pseudo-random) collides less at
    large angles (0.025 against 0.042 at θ = 1.5).
    Large d (Theorem 1): ln(1/p) = tan²(θ/2) · ln d + O_θ(ln ln d).

    Arguments:
        theta: angle(s) between the two points in radians, scalar or array, in [0, π].
        dim: d, the number of coordinates of Gx (>= 1; at most 2**40).
        n_hashes: hashes per key (1 gives the per-hash probability), >= 1.

    Returns:
        float (scalar ``theta``) or float64 array of ``theta``'s shape, values in [0, 1].

    Raises:
        ValueError: ``theta`` outside [0, π] or not finite, ``dim`` or ``n_hashes`` not an
            integer in range.

    Source: Andoni, Indyk, Laarhoven, Razenshteyn & Schmidt 2015, "Practical and Optimal LSH
    for Angular Distance", §1.2 (the hash), Theorem 1 (its asymptotics).
    """
    arr = _check_nonnegative_array(theta, "theta", high=math.pi)
    dim = check_int(dim, "dim", 1, 2**40)
    n_hashes = check_int(n_hashes, "n_hashes", 1)
    p = np.array([_cross_polytope_one(float(t), dim, _CP_PANELS_U, _CP_PANELS_W, _CP_NODES)
                  for t in arr.ravel()]).reshape(arr.shape) ** n_hashes
    return _as_output(p, theta)


def clopper_pearson(k, n: int, confidence: float = 0.95):
    """Exact (Clopper-Pearson) binomial confidence interval, vectorised over k.

    The two-sided interval of ``inference.clopper_pearson`` (the module where sparselab's
    statistics live), kept here under routing's argument names: the bounds are Beta quantiles,
    low = B(α/2; k, n-k+1) (0 when k = 0) and high = B(1-α/2; k+1, n-k) (1 when k = n),
    α = 1 - confidence; identical to
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``.

    Arguments:
        k: number(s) of successes, integer scalar or array, 0..n.
        n: number of independent trials, >= 1.
        confidence: nominal coverage, in (0, 1).

    Returns:
        (low, high), each float or float64 array of k's shape.

    Raises:
        ValueError: if k is outside 0..n, n < 1 or confidence is not in (0, 1).

    Source: Clopper & Pearson 1934.
    """
    n = check_int(n, "n", 1)
    confidence = check_real(confidence, "confidence", 0, 1, low_open=True, high_open=True)
    karr = np.asarray(k)
    if not np.issubdtype(karr.dtype, np.integer) or (karr < 0).any() or (karr > n).any():
        raise ValueError(f"k must be integers in [0, n={n}]")
    return inference.clopper_pearson(karr, n, confidence)


@dataclass(frozen=True)
class CollisionEstimate:
    """Per-pair collision counts of a hasher, with exact binomial intervals.

    Attributes:
        level: ``"hash"`` (one trial per hash function: per-hash / per-bit collisions) or
            ``"key"`` (one trial per table: full-key collisions).
        n_trials: number of independent trials per pair (n_tables · n_hashes for ``"hash"``,
            n_tables for ``"key"``).
        distance: float64 (N,), Euclidean distance of each pair.
        angle: float64 (N,), angle of each pair in radians (NaN if a point is 0).
        n_collisions: int64 (N,), trials in which the pair collided.
        rate: float64 (N,), ``n_collisions / n_trials``.
        ci_low, ci_high: float64 (N,), Clopper-Pearson interval for the pair's collision
            probability.
        confidence: the intervals' nominal coverage.
    """

    level: str
    n_trials: int
    distance: np.ndarray
    angle: np.ndarray
    n_collisions: np.ndarray
    rate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    confidence: float


def empirical_collision_rate(
    hasher, X, X2, *, level: str = "hash", confidence: float = 0.95
) -> CollisionEstimate:
    """Count how often each pair (X[i], X2[i]) collides under a hasher, with exact intervals.

    Given one pair, the hasher's hash functions are i.i.d. draws of the family, so the
    collision indicators of the n_tables · n_hashes hash functions (level ``"hash"``) or of the
    n_tables keys (level ``"key"``) are i.i.d. Bernoulli(p) with p the family's collision
    probability at the pair's distance (Euclidean) or angle (hyperplane); the count is exactly
    Binomial and the Clopper-Pearson interval is exact. Intervals of different pairs are not
    independent (they share the hash functions), and pooling the counts of several pairs does
    not give a binomial count, so none is offered: for a tighter interval use a hasher with more
    tables (e.g. ``n_tables=2000``).

    Arguments:
        hasher: level ``"hash"``: a ``EuclideanLSH`` (compares ``hash(X)``) or a
            ``HyperplaneLSH`` (compares the key bits); level ``"key"``: any hasher with
            ``n_tables`` and ``bucket_ids``.
        X, X2: float arrays (N, dim), the two points of each pair, finite.
        level: ``"hash"`` or ``"key"``.
        confidence: nominal coverage of the intervals, in (0, 1).

    Returns:
        ``CollisionEstimate`` with per-pair arrays of shape (N,).

    Raises:
        ValueError: if X and X2 differ in shape or are not finite (N, dim) arrays with N >= 1,
            ``level`` is not one of the two values or ``"hash"`` is asked of another family,
            or ``confidence`` is not in (0, 1).

    Source: Datar et al. 2004 §3.2 and Charikar 2002 §3 (the probabilities being estimated);
    Clopper & Pearson 1934 (the interval); used for Baykal et al. 2022, §2.2 / Lemma 4.2.
    """
    confidence = check_real(confidence, "confidence", 0, 1, low_open=True, high_open=True)
    if level not in ("hash", "key"):
        raise ValueError(f"level must be 'hash' or 'key', got {level!r}")
    dim = getattr(hasher, "dim", None)
    X = check_points(X, dim)
    if X.shape[0] == 0:
        raise ValueError("X must have at least 1 row (one pair per row of X and X2), got 0")
    X2 = check_points(X2, X.shape[1], name="X2")
    if X2.shape[0] != X.shape[0]:
        raise ValueError(
            f"X2 must have the same number of rows as X ({X.shape[0]}), got {X2.shape[0]}"
        )
    if level == "key":
        same = np.asarray(hasher.bucket_ids(X)) == np.asarray(hasher.bucket_ids(X2))  # (N, T)
    elif hasattr(hasher, "offsets") and hasattr(hasher, "hash"):
        same = (np.asarray(hasher.hash(X)) == np.asarray(hasher.hash(X2))).reshape(len(X), -1)
    elif hasattr(hasher, "n_bits"):
        n_bits = int(hasher.n_bits)
        k1 = np.asarray(hasher.bucket_ids(X)).astype(np.int64).view(np.uint64)
        k2 = np.asarray(hasher.bucket_ids(X2)).astype(np.int64).view(np.uint64)
        diff = k1 ^ k2  # (N, T): bit i set where bit i differs
        shifts = np.arange(n_bits, dtype=np.uint64)
        same = ((diff[:, :, None] >> shifts) & np.uint64(1)) == 0  # (N, T, n_bits)
        same = same.reshape(len(X), -1)
    else:
        raise ValueError(
            f"level='hash' needs a EuclideanLSH or a HyperplaneLSH, got {type(hasher).__name__}; "
            "use level='key'"
        )
    n_trials = same.shape[1]
    n_coll = same.sum(axis=1).astype(np.int64)
    low, high = clopper_pearson(n_coll, n_trials, confidence)
    distance = np.linalg.norm(X - X2, axis=1)
    norms = np.linalg.norm(X, axis=1) * np.linalg.norm(X2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, np.einsum("nd,nd->n", X, X2) / norms, np.nan)
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    return CollisionEstimate(
        level, int(n_trials), distance, angle, n_coll, n_coll / n_trials,
        np.asarray(low, np.float64), np.asarray(high, np.float64), confidence,
    )


def _random_unit_vectors(n: int, dim: int, rng) -> np.ndarray:
    v = rng.standard_normal((n, dim))
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    while (norm == 0).any():  # probability 0, but never divide by 0
        zero = norm[:, 0] == 0
        v[zero] = rng.standard_normal((int(zero.sum()), dim))
        norm = np.linalg.norm(v, axis=1, keepdims=True)
    return v / norm


def pairs_at_distances(X, distances, seed: int = 0) -> np.ndarray:
    """Partners X2[i] = X[i] + distances[i] · v_i with v_i uniform on the unit sphere.

    Arguments:
        X: float array (N, dim), the first points, finite.
        distances: float >= 0, scalar or array (N,), in the units of X.
        seed: seed of the random directions.

    Returns:
        float64 array (N, dim) with ||X2[i] - X[i]|| = distances[i].

    Raises:
        ValueError: on non-finite X or X with 0 columns, negative or non-finite distances, a
            length mismatch, a negative seed, or a partner that overflows float64.

    Source: helper for checking Datar et al. 2004's collision probability (Baykal et al.
    2022 §2.2).
    """
    X = check_points(X)
    if X.shape[1] < 1:  # no unit vector exists in R^0
        raise ValueError(f"X must have at least 1 column, got shape {X.shape}")
    d = _check_nonnegative_array(distances, "distances")
    d = np.full(X.shape[0], float(d)) if d.ndim == 0 else d
    if d.shape != (X.shape[0],):
        raise ValueError(f"distances must be a scalar or have shape ({X.shape[0]},), got {d.shape}")
    rng = np.random.default_rng(check_seed(seed))
    with np.errstate(over="ignore", invalid="ignore"):
        out = X + d[:, None] * _random_unit_vectors(X.shape[0], X.shape[1], rng)
    if not np.isfinite(out).all():
        raise ValueError("X and distances are too large: X + distances·v overflows float64 "
                         f"(largest |X| entry {float(np.abs(X).max()):.3g}, largest distance "
                         f"{float(d.max()):.3g}); rescale them")
    return out


def pairs_at_angles(X, angles, seed: int = 0) -> np.ndarray:
    """Partners X2[i] of the same norm as X[i] at angle angles[i] from it, in a random plane.

    X2[i] = ||x|| (cos θ · x/||x|| + sin θ · v), v a uniform random unit vector orthogonal to x.

    Arguments:
        X: float array (N, dim), dim >= 2, non-zero rows, finite.
        angles: angle(s) in radians in [0, π], scalar or array (N,).
        seed: seed of the random planes.

    Returns:
        float64 array (N, dim).

    Raises:
        ValueError: on non-finite X, a zero row, dim < 2, angles outside [0, π], a length
            mismatch, a negative seed, or a partner that overflows float64.

    Source: helper for checking Charikar 2002's collision probability (Baykal et al. 2022 §2.2).
    """
    X = check_points(X)
    if X.shape[1] < 2:
        raise ValueError(f"X must have at least 2 columns to rotate in a plane, got {X.shape[1]}")
    th = _check_nonnegative_array(angles, "angles", high=math.pi)
    th = np.full(X.shape[0], float(th)) if th.ndim == 0 else th
    if th.shape != (X.shape[0],):
        raise ValueError(f"angles must be a scalar or have shape ({X.shape[0]},), got {th.shape}")
    scale = np.abs(X).max(axis=1, keepdims=True)  # divide first: ‖x‖ of a finite x may overflow
    if (scale == 0).any():
        raise ValueError("X must have non-zero rows (the angle to 0 is undefined)")
    Xs = X / scale
    r = np.linalg.norm(Xs, axis=1, keepdims=True)  # ‖x‖ / scale, in [1, √dim]
    rng = np.random.default_rng(check_seed(seed))
    e = Xs / r
    v = _random_unit_vectors(X.shape[0], X.shape[1], rng)
    v -= np.einsum("nd,nd->n", v, e)[:, None] * e
    vn = np.linalg.norm(v, axis=1, keepdims=True)
    while (vn < 1e-12).any():  # v happened to be parallel to x
        bad = vn[:, 0] < 1e-12
        w = _random_unit_vectors(int(bad.sum()), X.shape[1], rng)
        v[bad] = w - np.einsum("nd,nd->n", w, e[bad])[:, None] * e[bad]
        vn = np.linalg.norm(v, axis=1, keepdims=True)
    v /= vn
    with np.errstate(over="ignore", invalid="ignore"):
        out = scale * (r * (np.cos(th)[:, None] * e + np.sin(th)[:, None] * v))
    if not np.isfinite(out).all():
        raise ValueError("X is too large: a partner of the same norm overflows float64 "
                         f"(largest |X| entry {float(np.abs(X).max()):.3g}); rescale X")
    return out
