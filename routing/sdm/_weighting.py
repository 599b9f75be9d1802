"""Neuron weightings of Bricken et al. 2023, App. A.7 (Eqs. 7-11), and sympy derivations of Eqs. 10-11.

Eqs. 8-9 weight a neuron by its agreements with the pattern (a + c) and the query (a + b) in the
groups of Eq. 6 (a: agrees with both, b: with the query only, c: with the pattern only,
z: with neither; a + z = n - d_v, b + c = d_v). In distances, x_p = n - (a + c) = b + z from the
pattern and x_ξ = n - (a + b) = c + z from the query, so x_p + x_ξ = d_v + 2z.

The paper writes x := (n - z) - (a + c) = b - z and C = d_v + z; both are slips of the algebra,
harmless at z = 0, which is the case the paper analyses "without loss of generality". The
sympy checks below derive the statements with C = x_p + x_ξ = d_v + 2z: at fixed z, the linear
weight is maximal at x = C/2 (Eq. 10) and the exponential weight equals exp(-βC) for every x
(Eq. 11). Because C grows with z, the exponential weight is one constant per (d_v, z) shell,
exp(-β d_v) exp(-2βz), not one constant per pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["check_linear_weighting", "check_exponential_weighting", "LinearWeightingCheck",
           "ExponentialWeightingCheck"]


def _weight(weighting: str, n: int, x_query: np.ndarray, x_pattern: np.ndarray, beta):
    """Weight of points at Hamming distances x_query, x_pattern (int arrays) from the centres."""
    if weighting == "binary":
        return np.ones(np.shape(x_query))  # Eq. 7
    if weighting == "linear":
        return (n - x_query) * (n - x_pattern) / float(n * n)  # Eq. 8
    return np.exp(-beta * (x_query + x_pattern))  # Eq. 9


def _group_symbols():
    import sympy as sp

    n, d_v, z, c, x, beta = sp.symbols("n d_v z c x beta", positive=True)
    a = n - d_v - z  # Eq. 6: a + z = n - d_v
    x_p = sp.expand(n - (a + c))  # distance to the pattern: n minus agreements (a + c)
    x_q = sp.expand(n - (a + (d_v - c)))  # distance to the query: n minus agreements (a + b)
    return sp, n, d_v, z, c, x, beta, a, x_p, x_q


@dataclass(frozen=True)
class LinearWeightingCheck:
    """Sympy derivation for the linear weighting (Bricken et al. 2023, App. A.7, Eqs. 8 and 10).

    Attributes:
        weight: w(x) = (n - x)(n - (C - x)) / n^2 for a neuron at distance x from one centre and
            C - x from the other.
        distance_sum: C = x_p + x_ξ derived from the groups of Eq. 6 (it is d_v + 2z).
        stationary_points: solutions of dw/dx = 0 (it is [C/2]).
        second_derivative: d²w/dx² (it is -2/n²).
        matches_eq8: Eq. 8, written in the groups (a, c), equals w(x_p) with C = d_v + 2z.
        matches_eq10: w(x) equals Eq. 10's form Z - x(x - C)/n² with Z = (n² - nC)/n².
        is_maximum: the second derivative is negative for every n > 0.
        paper_c_at_z0: at z = 0 the derived C equals the paper's C = d_v + z.
    """

    weight: object
    distance_sum: object
    stationary_points: list
    second_derivative: object
    matches_eq8: bool
    matches_eq10: bool
    is_maximum: bool
    paper_c_at_z0: bool

    @property
    def holds(self) -> bool:
        """Whether Eq. 10's claim (maximum weight at x = C/2) is derived."""
        return self.matches_eq8 and self.matches_eq10 and self.is_maximum and len(self.stationary_points) == 1


def check_linear_weighting() -> LinearWeightingCheck:
    """Derive with sympy that the linear weighting is maximal halfway between the centres (Eq. 10).

    Source: Bricken et al. 2023, App. A.7, Eqs. 8 and 10. Starting from Eq. 8 in the groups of
    Eq. 6, sympy derives the distance sum C = x_p + x_ξ, rewrites the weight as a function of
    x = x_p, checks Eq. 10's closed form, solves dw/dx = 0 and checks the sign of d²w/dx².

    Returns:
        :class:`LinearWeightingCheck` (its ``holds`` is True when every step goes through).
    """
    sp, n, d_v, z, c, x, _, a, x_p, x_q = _group_symbols()
    C = sp.Symbol("C", positive=True)
    eq8 = (a + c) / n * (a + (d_v - c)) / n
    distance_sum = sp.simplify(x_p + x_q)
    w = (n - x) * (n - (C - x)) / n**2
    matches_eq8 = sp.simplify(eq8 - w.subs({x: x_p, C: distance_sum})) == 0
    Z = (n**2 - n * C) / n**2
    matches_eq10 = sp.simplify(w - (Z + (-x * (x - C)) / n**2)) == 0
    stationary = sp.solve(sp.diff(w, x), x)
    second = sp.simplify(sp.diff(w, x, 2))
    return LinearWeightingCheck(
        weight=w,
        distance_sum=distance_sum,
        stationary_points=stationary,
        second_derivative=second,
        matches_eq8=bool(matches_eq8),
        matches_eq10=bool(matches_eq10),
        is_maximum=bool(second.is_negative) and stationary == [C / 2],
        paper_c_at_z0=bool(sp.simplify(distance_sum.subs(z, 0) - (d_v + z).subs(z, 0)) == 0),
    )


@dataclass(frozen=True)
class ExponentialWeightingCheck:
    """Sympy derivation for the exponential weighting (Bricken et al. 2023, App. A.7, Eqs. 9 and 11).

    Attributes:
        weight: Eq. 9 simplified in the groups of Eq. 6 (it is exp(-β(d_v + 2z))).
        equals_exp_minus_beta_c: exp(-βx) exp(-β(C - x)) simplifies to exp(-βC) (Eq. 11).
        constant_in_x: its derivative in x is identically 0.
        independent_of_c: Eq. 9's derivative in c is 0: at fixed z, every neuron of the
            intersection gets the same weight, wherever it sits between the centres.
        depends_on_z: Eq. 9's derivative in z is non-zero: neurons that disagree with both
            centres in more coordinates get less weight, so the weight is not one constant
            per pattern.
    """

    weight: object
    equals_exp_minus_beta_c: bool
    constant_in_x: bool
    independent_of_c: bool
    depends_on_z: bool

    @property
    def holds(self) -> bool:
        """Whether Eq. 11's claim (one constant weight for every x at fixed C) is derived."""
        return self.equals_exp_minus_beta_c and self.constant_in_x and self.independent_of_c


def check_exponential_weighting() -> ExponentialWeightingCheck:
    """Derive with sympy that the exponential weighting is exp(-βC) for every x (Eq. 11).

    Source: Bricken et al. 2023, App. A.7, Eqs. 9 and 11.

    Returns:
        :class:`ExponentialWeightingCheck` (its ``holds`` is True when Eq. 11 is derived).
    """
    sp, n, d_v, z, c, x, beta, a, _, _ = _group_symbols()
    C = sp.Symbol("C", positive=True)
    eq9 = sp.exp(-beta * (n - (a + c))) * sp.exp(-beta * (n - (a + (d_v - c))))
    weight = sp.simplify(sp.powsimp(eq9))
    w_x = sp.exp(-beta * x) * sp.exp(-beta * (C - x))
    return ExponentialWeightingCheck(
        weight=weight,
        equals_exp_minus_beta_c=bool(sp.simplify(sp.powsimp(w_x) - sp.exp(-beta * C)) == 0),
        constant_in_x=bool(sp.simplify(sp.diff(w_x, x)) == 0),
        independent_of_c=bool(sp.simplify(sp.diff(eq9, c)) == 0),
        depends_on_z=bool(sp.simplify(sp.diff(eq9, z)) != 0),
    )
