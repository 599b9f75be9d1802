"""LSH collision probabilities: empirical rates against their closed forms.

For Euclidean (p-stable) LSH with Gaussian directions and width w, two points at distance u
share one hash with probability p(u) = 1 − 2Φ(−w/u) − (2u/(√(2π) w))(1 − exp(−w²/(2u²)))
and a key of m hashes with probability p(u)^m; for hyperplane LSH two points at angle θ share
one bit with probability 1 − θ/π and m bits with (1 − θ/π)^m. For each distance (angle) of a
grid a pair of points is drawn and hashed by many independent hash functions
(``routing.collision.empirical_collision_rate``): the number of collisions is exactly
Binomial(trials, p), so the closed form must lie in the exact Clopper–Pearson interval. All
intervals are taken at confidence 1 − 0.05/(number of intervals) (Bonferroni), so the check
wrongly reports *refuted* with probability at most 5 % when every closed form is right.

Decision (``CollisionsCheck.rule``): holds when every closed form lies inside its
Bonferroni'd exact interval, refuted when one lies outside. Calibration: none (the closed forms
have no free constant); validation: every distance and angle of the grid.

Power (``CollisionsCheck.planted_violations``), measured with the same statistics. A deviation
the check can see at 2000 trials is about 0.03 in collision probability (the intervals'
half-width at p = 1/2 is 3.3·√(1/4/2000) ≈ 0.037). Measured over 40 seeds each at the quick
preset: a Euclidean hasher whose true width is f × the stated one is refuted with power
0.43 at f = 1.05, 0.65 at 1.06, 0.85 at 1.07, 0.90 at 1.08, 1.0 at 1.10 (max |Δp| per hash at
f = 1.08: 0.027); hyperplane keys whose m = 3 bits use directions with pairwise correlation ρ
(each bit still exactly 1 − θ/π, only the key's (1 − θ/π)^m is wrong) are refuted with power
0.33 at ρ = 0.3, 0.60 at 0.35, 0.93 at 0.4, 1.0 at 0.5 (max |Δp| per key at ρ = 0.4: 0.028).
The planted sizes are the smallest round sizes on those grids with power 1.0 there: width
× 1.1 (max |Δp| 0.034 per hash, 0.041 per key) and ρ = 0.5 (max |Δp| 0.045 per key);
smaller deviations (width × 1.05, ρ = 0.3) are below what 2000 trials resolve — the full
preset's 20 000 trials resolve about 3× smaller ones.

Source: Baykal et al. 2022, §2.2 (Euclidean LSH model, LSH(d, s, m) model); Datar et al.
2004, §3.2; Charikar 2002, §3.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from lipschitz import UniformCube
from routing.validation import check_int, check_points, check_real
from proofs_checks._framework import (
    Check, CheckParams, CheckResult, Planted, Verdict, child_seeds, register,
)
from proofs_checks._plots import plt, save_figure
from routing.collision import (
    CollisionEstimate, clopper_pearson, collision_probability_euclidean,
    collision_probability_hyperplane, empirical_collision_rate, pairs_at_angles,
    pairs_at_distances,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH

__all__ = ["CollisionsParams", "CollisionsCheck", "CorrelatedHyperplaneLSH",
           "PLANTED_WIDTH_FACTOR", "PLANTED_CORRELATION"]

#: The planted Euclidean hasher's true width / stated width (power analysis in the docstring).
PLANTED_WIDTH_FACTOR = 1.1
#: The planted hyperplane hasher's correlation between the directions of one key's bits.
PLANTED_CORRELATION = 0.5


@dataclass(frozen=True)
class CollisionsParams(CheckParams):
    """Parameters of the collision check (defaults: the quick preset).

    Attributes:
        dim: input dimension.
        width: Euclidean bucket width w.
        distances: pair distances u (units of x).
        angles: pair angles θ in radians, in [0, π].
        trials: independent hash functions (hash level) or keys (key level) per pair.
        key_hashes: hashes (bits) per key at the key level.
        family_confidence: the probability that no interval misses a correct closed form.
        n_power: planted runs per planted violation.
    """

    dim: int = 16
    width: float = 1.0
    distances: tuple[float, ...] = (0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
    angles: tuple[float, ...] = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0, 1.3, 1.6, 2.0, 2.5, 3.0)
    trials: int = 2000
    key_hashes: int = 3
    family_confidence: float = 0.95
    n_power: int = 40

    @classmethod
    def tiny(cls):
        """The tiny preset: a smoke run in seconds that decides nothing (3 distances × 3 angles, 300 trials)."""
        return cls(distances=(0.1, 0.5, 2.0), angles=(0.2, 1.0, 2.5), trials=300)

    @classmethod
    def full(cls):
        return cls(distances=tuple(np.round(np.geomspace(0.02, 6.0, 30), 4)),
                   angles=tuple(np.round(np.linspace(0.02, math.pi - 0.02, 30), 4)),
                   trials=20_000, n_power=40)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.dim, "dim", 2)
        check_real(self.width, "width", 0.0, None, low_open=True)
        if not self.distances or not self.angles:
            raise ValueError("distances and angles must not be empty")
        for u in self.distances:
            check_real(u, "distances[i]", 0.0, None)
        for a in self.angles:
            check_real(a, "angles[i]", 0.0, math.pi)
        check_int(self.trials, "trials", 1)
        check_int(self.key_hashes, "key_hashes", 1, 64)
        check_real(self.family_confidence, "family_confidence", 0.0, 1.0, low_open=True,
                   high_open=True)
        check_int(self.n_power, "n_power", 1)


class CorrelatedHyperplaneLSH:
    """Sign-pattern hashes whose bits within a key use correlated Gaussian directions.

    In table t, bit i of the key of x is [a_{t,i} · x ≥ 0] with
    a_{t,i} = √(1 − ρ) g_{t,i} + √ρ g_t, all g i.i.d. N(0, I_dim): every a_{t,i} is exactly
    N(0, I_dim), so each bit collides with probability 1 − θ/π as for ``HyperplaneLSH``, but the
    bits of one key are positively dependent (directions with correlation ρ), so a key of m
    bits collides more often than (1 − θ/π)^m at intermediate angles. Same interface as
    ``HyperplaneLSH`` (keys packed little-endian into int64).

    Arguments:
        dim: input dimension, ≥ 1. n_bits: bits per key, 1..62. n_tables: ≥ 1.
        seed: non-negative int. correlation: ρ in [0, 1) (0: ``HyperplaneLSH``'s law).

    Attributes:
        directions: float64 (n_tables, n_bits, dim).

    Raises:
        ValueError: parameters outside the ranges above.

    Source: planted violation of ``CollisionsCheck`` (Charikar 2002, §3: the key probability
    (1 − θ/π)^m needs independent bits).
    """

    def __init__(self, dim: int, n_bits: int, n_tables: int = 1, seed: int = 0,
                 correlation: float = PLANTED_CORRELATION):
        self.dim = check_int(dim, "dim", 1)
        self.n_bits = check_int(n_bits, "n_bits", 1, 62)
        self.n_tables = check_int(n_tables, "n_tables", 1)
        self.correlation = check_real(correlation, "correlation", 0.0, 1.0, high_open=True)
        rng = np.random.default_rng(seed)
        g = rng.standard_normal((self.n_tables, self.n_bits, self.dim))
        shared = rng.standard_normal((self.n_tables, 1, self.dim))
        rho = self.correlation
        self.directions = math.sqrt(1.0 - rho) * g + math.sqrt(rho) * shared

    def bucket_ids(self, X) -> np.ndarray:
        """Packed keys: (N, dim) -> (N, n_tables) int64 in [0, 2^n_bits).

        Raises:
            ValueError: X not a finite (N, dim) array.
        """
        X = check_points(X, self.dim)
        bits = np.einsum("tbd,nd->ntb", self.directions, X) >= 0  # (N, T, m)
        return (bits.astype(np.int64) << np.arange(self.n_bits)).sum(axis=2)

    def __repr__(self) -> str:
        return (f"CorrelatedHyperplaneLSH(dim={self.dim}, n_bits={self.n_bits}, "
                f"n_tables={self.n_tables}, correlation={self.correlation:g})")


def _euclidean_key_rate(hasher, X, X2, confidence: float) -> CollisionEstimate:
    """Key-level collisions of a Euclidean LSH, comparing code vectors.

    ``EuclideanLSH`` keys are exact (equal keys ⟺ equal code vectors), so comparing
    ``hash(X)`` table by table counts the same events as ``empirical_collision_rate(...,
    level="key")`` without one codebook lookup per table (thousands of tables here).
    """
    same = (np.asarray(hasher.hash(X)) == np.asarray(hasher.hash(X2))).all(axis=2)  # (N, T)
    n_trials = same.shape[1]
    hits = same.sum(axis=1).astype(np.int64)
    low, high = clopper_pearson(hits, n_trials, confidence)
    return CollisionEstimate("key", n_trials, np.linalg.norm(X - X2, axis=1),
                             np.full(len(X), np.nan), hits, hits / n_trials,
                             np.asarray(low, np.float64), np.asarray(high, np.float64),
                             confidence)


def _default_euclidean(dim, n_hashes, width, n_tables, seed):
    return EuclideanLSH(dim, n_hashes, width, n_tables=n_tables, seed=seed)


def _default_hyperplane(dim, n_bits, n_tables, seed):
    return HyperplaneLSH(dim, n_bits, n_tables=n_tables, seed=seed)


@register
class CollisionsCheck(Check):
    """Empirical collision rates against the closed forms (module docstring).

    Arguments:
        params: ``CollisionsParams``.
        euclidean_factory: (dim, n_hashes, width, n_tables, seed) -> Euclidean hasher.
        hyperplane_factory: (dim, n_bits, n_tables, seed) -> hyperplane hasher.
            Tests plant violations through the factories.
    """

    name = "collisions"
    claim = ("Euclidean LSH: P(collide at distance u) = 1 − 2Φ(−w/u) − 2u/(√(2π)w)(1 − "
             "e^{−w²/2u²}) per hash, its m-th power per key; hyperplane LSH: (1 − θ/π)^m")
    source = "Baykal et al. 2022, §2.2 (Datar et al. 2004; Charikar 2002)"
    Params = CollisionsParams
    rule = ("each closed form (per hash and per key, Euclidean at every distance, hyperplane at "
            "every angle) must lie in the exact Clopper–Pearson interval of its empirical "
            "collision count, each interval at 1 − (1 − family_confidence)/n_intervals "
            "(Bonferroni); holds if none lies outside, refuted if one does")

    def __init__(self, params: CollisionsParams | None = None,
                 euclidean_factory: Callable | None = None,
                 hyperplane_factory: Callable | None = None):
        super().__init__(params)
        self.euclidean_factory = euclidean_factory or _default_euclidean
        self.hyperplane_factory = hyperplane_factory or _default_hyperplane

    def planted_violations(self) -> list[Planted]:
        p, f, rho = self.params, PLANTED_WIDTH_FACTOR, PLANTED_CORRELATION
        return [
            Planted(f"euclidean_width_x{f:g}",
                    f"EuclideanLSH whose true width is {f:g} × the stated width (max |Δp| "
                    f"0.034 per hash, 0.041 per key of 3)",
                    lambda: CollisionsCheck(p, euclidean_factory=lambda d, m, w, T, s:
                                            EuclideanLSH(d, m, f * w, n_tables=T, seed=s),
                                            hyperplane_factory=self.hyperplane_factory)),
            Planted(f"hyperplane_correlated_bits_rho{rho:g}",
                    f"hyperplane keys whose bits use directions with correlation {rho:g} "
                    f"(CorrelatedHyperplaneLSH; each bit exact, max |Δp| 0.045 per key of 3)",
                    lambda: CollisionsCheck(p, euclidean_factory=self.euclidean_factory,
                                            hyperplane_factory=lambda d, m, T, s:
                                            CorrelatedHyperplaneLSH(d, m, T, s, rho))),
        ]

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        n_intervals = 2 * (len(p.distances) + len(p.angles))
        conf = 1.0 - (1.0 - p.family_confidence) / n_intervals
        s = child_seeds(seed, 8, 30)
        u = np.asarray(p.distances, np.float64)
        th = np.asarray(p.angles, np.float64)
        X = UniformCube(p.dim).sample(len(u), seed=s[0])
        X2 = pairs_at_distances(X, u, seed=s[1])
        Y = UniformCube(p.dim).sample(len(th), seed=s[2])
        Y2 = pairs_at_angles(Y, th, seed=s[3])
        m = p.key_hashes
        hash_tables = -(-p.trials // m)  # ⌈trials/m⌉ tables of m hashes: ≥ trials hash trials
        parts = {
            "euclidean_hash": (empirical_collision_rate(
                self.euclidean_factory(p.dim, m, p.width, hash_tables, s[4]), X, X2,
                level="hash", confidence=conf), collision_probability_euclidean(u, p.width)),
            "euclidean_key": (_euclidean_key_rate(
                self.euclidean_factory(p.dim, m, p.width, p.trials, s[5]), X, X2, conf),
                collision_probability_euclidean(u, p.width, m)),
            "hyperplane_bit": (empirical_collision_rate(
                self.hyperplane_factory(p.dim, m, hash_tables, s[6]), Y, Y2,
                level="hash", confidence=conf), collision_probability_hyperplane(th)),
            "hyperplane_key": (empirical_collision_rate(
                self.hyperplane_factory(p.dim, m, p.trials, s[7]), Y, Y2,
                level="key", confidence=conf), collision_probability_hyperplane(th, m)),
        }
        details, misses, worst = {}, 0, 0.0
        for name, (est, closed) in parts.items():
            outside = (closed < est.ci_low) | (closed > est.ci_high)
            misses += int(outside.sum())
            worst = max(worst, float(np.max(np.abs(est.rate - closed))))
            details[name] = {
                "x": (est.distance if name.startswith("euclidean") else est.angle),
                "trials": est.n_trials, "rate": est.rate, "closed_form": closed,
                "ci_low": est.ci_low, "ci_high": est.ci_high, "outside": outside}
        verdict = Verdict.REFUTED if misses else Verdict.HOLDS
        extra = {"calibration": "none: the closed forms have no free constant",
                 "validation": f"{len(u)} distances and {len(th)} angles, per hash and per key"}
        if misses:
            parts = []
            for name, d in details.items():
                if np.any(d["outside"]):
                    gap = np.asarray(d["rate"]) - d["closed_form"]
                    side = "above" if gap.mean() > 0 else "below"
                    parts.append(f"{name}: {int(np.sum(d['outside']))} outside, largest "
                                 f"|rate − p| {float(np.max(np.abs(gap))):.3g} (rate {side} "
                                 f"the closed form on average)")
            extra["diagnosis"] = "; ".join(parts)
        plots = self._plot(details, out)
        return self.result(
            seed=seed, measured=float(misses), bound=0.0,
            measured_text=f"{misses}/{n_intervals} closed forms outside their intervals; "
                          f"max |rate − p| = {worst:.3g}",
            bound_text=f"0 outside (each interval at {conf:.5f}, family {p.family_confidence})",
            verdict=verdict,
            details={"per_family": details, "interval_confidence": conf,
                     "n_intervals": n_intervals, "max_abs_rate_error": worst, **extra},
            plots=plots)

    def _plot(self, details, out):
        if out is None:
            return []
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for name, d in details.items():
            ax = axes[0] if name.startswith("euclidean") else axes[1]
            x = np.asarray(d["x"])
            order = np.argsort(x)
            ax.errorbar(x, d["rate"], yerr=[d["rate"] - d["ci_low"], d["ci_high"] - d["rate"]],
                        fmt="o", ms=3, label=f"{name} (empirical)")
            ax.plot(x[order], np.asarray(d["closed_form"])[order], "-", lw=1,
                    label=f"{name} (closed form)")
        axes[0].set_xlabel("distance u / width w")
        axes[1].set_xlabel("angle θ (rad)")
        for ax in axes:
            ax.set_ylabel("collision probability")
            ax.legend(fontsize=6)
        return save_figure(fig, out, "collisions.png")
