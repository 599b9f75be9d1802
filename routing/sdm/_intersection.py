"""Number of points of {0,1}^n within Hamming radius d of two centres (the SDM circle intersection).

Derivation (Bricken et al. 2023, App. A.7, Eq. 6; our notation). Put the query ξ at the origin
and the pattern p at Hamming distance d_v. Split the coordinates into the d_v where ξ and p
differ and the n - d_v where they agree. A point with c of the d_v differing coordinates set
(so it agrees with p there) and z of the n - d_v agreeing coordinates set (so it disagrees with
both) is at distance

    x_ξ = c + z          from the query,        x_p = (d_v - c) + z     from the pattern,

and there are C(d_v, c) C(n - d_v, z) such points. In the paper's groups, a = n - d_v - z agree
with both, b = d_v - c agree with ξ only, c agree with p only, z agree with neither. Hence

    I(d_v) = sum_z C(n-d_v, z) sum_{c = lo(z)}^{hi(z)} w(x_ξ, x_p) C(d_v, c),
    lo(z) = max(0, d_v + z - d),  hi(z) = min(d_v, d - z),  0 <= z <= min(n - d_v, (2d - d_v) // 2),

with the weight w of Eqs. 7-9 written in distances: binary w = 1; linear
w = (n - x_p)(n - x_ξ) / n^2 (Eq. 8: (a + c) = n - x_p, a + (d_v - c) = n - x_ξ); exponential
w = exp(-β x_p) exp(-β x_ξ) = exp(-β (d_v + 2z)) (Eq. 9). I(d_v) = 0 for d_v > 2d.

Every c-range contains d_v // 2, and as z decreases by one the range grows by at most one index
at each end, so the inner sums are accumulated from the largest z downwards by adding positive
terms only: no subtraction, no cancellation. The fast kernel scales each binomial row by its
largest used entry (a separately tracked power-of-two exponent keeps those scales finite for
n up to 10^4 and beyond) and works in float64 otherwise; the result is returned as a natural log.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

from routing.validation import check_allocation, check_bool, check_int
from routing.sdm._checks import check_hamming, check_weighting

__all__ = ["circle_intersection"]

_MODES = {"binary": 0, "linear": 1, "exponential": 2}
#: The float kernel keeps 5 tables of n + 2 numbers (40 bytes per bit): n <= 10^8 (4 GB).
MAX_FLOAT_N = 10**8
#: It then takes about max d_v + d steps per distance (about 15 ns each on one core):
#: len(d_v)·(max d_v + d + 1) <= 5·10^8 (a few seconds; the whole curve at n = 10^4 is 1.4·10^8).
MAX_FLOAT_WORK = 5 * 10**8
#: The exact kernel takes as many steps on integers of at most min(n, (max d_v + d + 1)·
#: bit_length(n)) bits: steps × bits <= 10^10 (about 20 s; n = 8000, d = 4000 at one
#: distance 2000 is 4.8·10^7 and took 0.1 s).
MAX_EXACT_WORK = 10**10
_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)  # 709.78...
_LOG_FLOAT_TINY = math.log(np.finfo(np.float64).smallest_subnormal)  # -744.44...


# ----------------------------------------------------------------------------- fast kernel
@njit(cache=True)
def _factorial_table(n):
    """m! = frac[m] * 2^expo[m] for m = 0 … n, frac in [1, 2^300): no overflow for any n.

    Each entry carries a relative rounding error of at most m units in the last place.
    """
    frac = np.empty(n + 1)
    expo = np.empty(n + 1, dtype=np.int64)
    f, e = 1.0, 0
    frac[0], expo[0] = 1.0, 0
    for m in range(1, n + 1):
        f *= m
        if f >= 2.0**300:  # exact rescaling by a power of two
            f *= 2.0**-300
            e += 300
        frac[m], expo[m] = f, e
    return frac, expo


@njit(cache=True)
def _log_binom(m, k, frac, expo):
    """log C(m, k) = log(m! / (k! (m-k)!)) from the factorial table (relative error < 2m ulp)."""
    if k < 0 or k > m:
        return -np.inf
    ratio = frac[m] / (frac[k] * frac[m - k])  # in [2^-600, 2^300 m^2): no overflow or underflow
    return math.log(ratio) + (expo[m] - expo[k] - expo[m - k]) * 0.6931471805599453


@njit(cache=True)
def _log_intersection_one(n, d, dv, mode, beta, q, r1, r2, inv, frac, expo):
    """log I(d_v) for one d_v; r1, r2: scratch rows of length n + 1; inv[j] = 1 / j; frac, expo: m!."""
    if dv > 2 * d:
        return -np.inf
    m1 = n - dv
    m2 = dv
    zmax = min(m1, (2 * d - dv) // 2)
    # Row of C(d_v, c) scaled by its central entry C(d_v, h): entries in (0, 1]. Entries below
    # 1e-300 are set to 0: every inner sum is >= 1, so they are below float64 resolution.
    h = m2 // 2
    lo0 = max(0, dv - d)
    hi0 = min(dv, d)
    r2[h] = 1.0
    for c in range(h, lo0, -1):
        v = r2[c] * (c * inv[m2 - c + 1])
        r2[c - 1] = v if v > 1e-300 else 0.0
    for c in range(h + 1, hi0 + 1):
        r2[c] = r2[m2 - c]
    # Row of g(z) = C(n - d_v, z) q^z (q = exp(-2β) for the exponential weighting, else 1),
    # scaled by its largest entry on [0, zmax], at zs.
    if mode == 2:
        zs = int(math.ceil((m1 * q - 1.0) / (1.0 + q)))
        zs = max(0, min(zs, zmax))
    else:
        zs = min(zmax, m1 // 2)
    r1[zs] = 1.0
    for z in range(zs, 0, -1):
        v = r1[z] * (z * inv[m1 - z + 1] / q)
        r1[z - 1] = v if v > 1e-300 else 0.0
    for z in range(zs, zmax):
        v = r1[z] * ((m1 - z) * q * inv[z + 1])
        r1[z + 1] = v if v > 1e-300 else 0.0
    # Inner sums over c, grown from the narrowest range (largest z) outwards.
    acc = 0.0
    q0 = 0.0  # sum of scaled C(d_v, c) over [clo, chi]
    q1 = 0.0  # sum of scaled C(d_v, c) * c (d_v - c) over [clo, chi] (linear weighting)
    clo = max(0, dv + zmax - d)
    chi = clo - 1
    for z in range(zmax, -1, -1):
        lo = max(0, dv + z - d)
        hi = min(dv, d - z)
        while clo > lo:
            clo -= 1
            q0 += r2[clo]
            q1 += r2[clo] * (clo * (dv - clo))
        while chi < hi:
            chi += 1
            q0 += r2[chi]
            q1 += r2[chi] * (chi * (dv - chi))
        if mode == 1:
            # n^2 w = (n - z - c)(n - z - d_v + c) = (n - z)(n - z - d_v) + c (d_v - c)
            acc += r1[z] * ((n - z) * (n - z - dv * 1.0) * q0 + q1)
        else:
            acc += r1[z] * q0
    if acc <= 0.0:  # only the linear weighting can give 0 (n = d = d_v = 1: antipodal points)
        return -np.inf
    out = math.log(acc) + _log_binom(m1, zs, frac, expo) + _log_binom(m2, h, frac, expo)
    if mode == 1:
        out -= 2.0 * math.log(n)
    elif mode == 2:
        out -= beta * (dv + 2.0 * zs)
    return out


@njit(cache=True)
def _log_intersection_curve(n, d, dvs, mode, beta):
    """log I(d_v) for every entry of the int64 array ``dvs``."""
    out = np.empty(dvs.size)
    r1 = np.empty(n + 1)
    r2 = np.empty(n + 1)
    inv = np.empty(n + 2)
    inv[0] = np.inf
    for j in range(1, n + 2):
        inv[j] = 1.0 / j
    frac, expo = _factorial_table(n)
    q = math.exp(-2.0 * beta) if mode == 2 else 1.0
    for i in range(dvs.size):
        out[i] = _log_intersection_one(n, d, dvs[i], mode, beta, q, r1, r2, inv, frac, expo)
    return out


# ----------------------------------------------------------------------------- exact integers
def _exact_one(n: int, d: int, dv: int, weighting: str):
    """I(d_v) in Python integers (binary) or as a Fraction (linear); same recursion as the kernel."""
    if dv > 2 * d:
        return 0 if weighting == "binary" else Fraction(0)
    m1 = n - dv
    zmax = min(m1, (2 * d - dv) // 2)
    row2 = [1] * (dv + 1)  # C(d_v, c)
    for c in range(dv):
        row2[c + 1] = row2[c] * (dv - c) // (c + 1)
    g = math.comb(m1, zmax)  # C(n - d_v, z), walked downwards
    total = q0 = q1 = 0
    clo = max(0, dv + zmax - d)
    chi = clo - 1
    for z in range(zmax, -1, -1):
        lo, hi = max(0, dv + z - d), min(dv, d - z)
        while clo > lo:
            clo -= 1
            q0 += row2[clo]
            q1 += row2[clo] * clo * (dv - clo)
        while chi < hi:
            chi += 1
            q0 += row2[chi]
            q1 += row2[chi] * chi * (dv - chi)
        total += g * (q0 if weighting == "binary" else (n - z) * (n - z - dv) * q0 + q1)
        g = g * z // (m1 - z + 1)
    return total if weighting == "binary" else Fraction(total, n * n)


# ----------------------------------------------------------------------------- reference
def _reference_one(n: int, d: int, dv: int, weighting: str = "binary", beta: float | None = None):
    """I(d_v) as the plain double sum of App. A.7 over the groups (a, c), weights of Eqs. 7-9.

    Slow (O(n^2) terms, Python integers / Fractions / floats); kept as the obvious reference
    the fast kernel is tested against.
    """
    total = 0
    for a in range(n - dv + 1):  # agree with both centres
        for c in range(dv + 1):  # agree with the pattern, disagree with the query
            b = dv - c  # agree with the query, disagree with the pattern
            if a + b >= n - d and a + c >= n - d:
                if weighting == "binary":
                    w = 1  # Eq. 7
                elif weighting == "linear":
                    w = Fraction((a + c) * (a + (dv - c)), n * n)  # Eq. 8
                else:
                    w = math.exp(-beta * (n - (a + c))) * math.exp(-beta * (n - (a + (dv - c))))  # Eq. 9
                total += w * math.comb(n - dv, a) * math.comb(dv, c)
    return total


# ----------------------------------------------------------------------------- public
def check_kernel_work(n: int, d: int, dvs: np.ndarray, exact: bool = False) -> None:
    """Refuse an intersection curve that would take minutes or more memory than the machine has.

    Arguments:
        n, d: address length and radius (checked).
        dvs: the int64 distances asked for (checked, in [0, n]).
        exact: the exact (integer/Fraction) kernel rather than the float one.

    Raises:
        ValueError: naming n and d (and the distances) and the limit exceeded: for the float
            kernel n <= ``MAX_FLOAT_N`` and len(d_v)·(max d_v + d + 1) <= ``MAX_FLOAT_WORK``
            (and this machine's memory); for the exact one that step count times the bits
            of its integers, min(n, (max d_v + d + 1)·bit_length(n)), <= ``MAX_EXACT_WORK``.
    """
    width = (int(dvs.max()) if dvs.size else 0) + d + 1
    steps = dvs.size * width
    if exact:
        work = steps * min(n, width * n.bit_length())
        if work > MAX_EXACT_WORK:
            raise ValueError(f"n={n}, d={d} are too large for exact=True at {dvs.size} "
                             f"distance(s) up to {int(dvs.max())}: {work:.2g} bit operations, at "
                             f"most {MAX_EXACT_WORK:.0e} (about 20 s); use log=True")
        return
    if n > MAX_FLOAT_N:
        raise ValueError(f"n must be an integer in [1, {MAX_FLOAT_N}] unless exact=True (the "
                         f"float kernel keeps tables of 40 bytes per bit), got {n}")
    if steps > MAX_FLOAT_WORK:
        raise ValueError(f"n={n}, d={d} are too large at {dvs.size} distance(s): "
                         f"len(d_v)·(max d_v + d + 1) = {steps} steps, at most "
                         f"{MAX_FLOAT_WORK:.0e} (a few seconds of one core)")
    check_allocation(5 * (n + 2), 8, "n", n, "the intersection kernel's tables")


def circle_intersection(n, d, d_v, weighting="binary", beta=None, exact=False, log=False):
    """Weighted number of points of {0,1}^n within Hamming radius ``d`` of two centres.

    The SDM circle intersection: how many neurons (if all 2^n addresses held one) a query
    reads that a pattern at Hamming distance ``d_v`` was written into, each weighted as in
    Bricken et al. 2023, App. A.7: ``"binary"`` (Eq. 7, weight 1: the plain count),
    ``"linear"`` (Eq. 8, weight (n - x_p)(n - x_ξ)/n^2 for a point at distances x_p from the
    pattern and x_ξ from the query) or ``"exponential"`` (Eq. 9, weight exp(-β x_p) exp(-β x_ξ)).
    The derivation is in this module's docstring (Kanerva 1988; Bricken & Pehlevan 2021).

    Arguments:
        n: address length in bits, int >= 1.
        d: Hamming radius of both circles, int in [0, n].
        d_v: Hamming distance between the centres: an int in [0, n] or an integer array of any
            shape with entries in [0, n] (e.g. ``np.arange(n + 1)``: the whole curve).
        weighting: ``"binary"``, ``"linear"`` or ``"exponential"`` (alias ``"exp"``).
        beta: decay rate per bit of the exponential weighting, float >= 0 (units: 1/bit);
            required for ``"exponential"``, must be ``None`` otherwise.
        exact: bool; return exact values: a Python ``int`` (binary) or ``fractions.Fraction``
            (linear); arrays come back as object arrays. Not available for ``"exponential"``.
        log: bool; return the natural log (float64; ``-inf`` where the intersection is empty, i.e.
            d_v > 2d). Finite and accurate for n up to 10^4 and beyond.

    Returns:
        A Python scalar for a scalar ``d_v``, else an ndarray of ``d_v``'s shape: float64
        (dimensionless count of points), or object dtype when ``exact``. Float results agree
        with the exact ones to a relative error below 1e-12 for n <= 1000 (tested).

    Raises:
        ValueError: for n < 1, d or d_v outside [0, n] or not integers, sizes beyond the
            kernels' limits (``check_kernel_work``: n <= 10^8 and
            len(d_v)·(max d_v + d + 1) <= 5·10^8 steps, or with ``exact`` at most 10^10 bit
            operations), ``exact`` or ``log``
            not a bool (a string such as 'False' is refused, not read as true), an unknown weighting,
            a missing or negative β, β given to a non-exponential weighting, ``exact`` together
            with ``log`` or with the exponential weighting, or when ``log=False`` and a value
            would overflow (> 1.8e308) or underflow to 0 in float64 (use ``log=True`` then).
    """
    n = check_int(n, "n", 1, None)
    d = check_int(d, "d", 0, n)
    dvs, scalar = check_hamming(d_v, "d_v", n)
    weighting, beta = check_weighting(weighting, beta)
    exact, log = check_bool(exact, "exact"), check_bool(log, "log")
    if exact and log:
        raise ValueError("exact and log cannot both be True: exact returns integers/Fractions, log returns floats")
    check_kernel_work(n, d, dvs, exact)
    if exact:
        if weighting == "exponential":
            raise ValueError("exact must be False for the exponential weighting (its weights are irrational)")
        vals = [_exact_one(n, d, int(v), weighting) for v in dvs.ravel()]
        if scalar:
            return vals[0]
        out = np.empty(dvs.size, dtype=object)
        out[:] = vals
        return out.reshape(dvs.shape)
    logs = _log_intersection_curve(n, d, np.ascontiguousarray(dvs.ravel()), _MODES[weighting],
                                   0.0 if beta is None else beta).reshape(dvs.shape)
    if not log:
        finite = np.isfinite(logs)
        if np.any(logs[finite] > _LOG_FLOAT_MAX) or np.any(logs[finite] < _LOG_FLOAT_TINY):
            because = "" if beta is None else f" (beta={beta:.6g} of the exponential weighting)"
            raise ValueError(
                f"log must be True for n={n}, d={d}{because}: some intersections (natural log in "
                f"[{logs[finite].min():.1f}, {logs[finite].max():.1f}]) are outside the float64 range"
            )
        logs = np.exp(logs)
    return float(logs) if scalar else logs
