"""Your own theorem as a sparselab check: a claim about your own hash family.

Run it with the same power, interval and verdict machinery as the built-in checks::

    sparselab check --module examples/own_check.py

The claim: ``SignHash(dim, m)`` — m sign bits of independent Gaussian directions — puts two
points at angle θ in the same bucket with probability (1 − θ/π)^m (Charikar 2002, §3).
The measurement: for each angle of a pre-registered grid, a pair of points at that angle is
hashed by ``trials`` independent hash functions; the collision count is Binomial(trials, p),
so the claimed p must lie in every exact Clopper–Pearson interval (Bonferroni over the grid).
The planted violation: a family whose m bits all share one direction (collision probability
1 − θ/π, the claim's m-th power missing) — the check must refute it on ≥ 90 % of seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from proofs_checks import Check, CheckParams, Planted, Verdict, child_seeds, register
from proofs_checks import clopper_pearson


class SignHash:
    """m sign bits of Gaussian directions: (N, dim) -> (N,) int64 bucket keys.

    Arguments:
        dim: input dimension ≥ 1. n_bits: m, 1..62. seed: seed of the directions.
        shared: all bits use the first direction (the planted violation).
    """

    def __init__(self, dim: int, n_bits: int, seed: int = 0, shared: bool = False):
        directions = np.random.default_rng(seed).standard_normal((n_bits, dim))
        self.directions = np.repeat(directions[:1], n_bits, axis=0) if shared else directions

    def bucket_ids(self, X: np.ndarray) -> np.ndarray:
        bits = (X @ self.directions.T) > 0  # (N, m)
        return bits.astype(np.int64) @ (1 << np.arange(bits.shape[1], dtype=np.int64))


@dataclass(frozen=True)
class SignHashParams(CheckParams):
    """Settings fixed before the run: the angle grid, bits, trials, family-wise confidence."""

    dim: int = 8
    n_bits: int = 3
    angles: tuple[float, ...] = (0.3, 0.6, 0.9, 1.2, 1.5)
    trials: int = 1500
    family_confidence: float = 0.95
    n_power: int = 14


@register
class SignHashCollisionCheck(Check):
    """P(same bucket at angle θ) = (1 − θ/π)^m for ``SignHash`` (module docstring)."""

    name = "sign_hash_collisions"
    claim = "SignHash(dim, m) collides at angle θ with probability (1 − θ/π)^m"
    source = "Charikar 2002, §3 (a user's own hash family)"
    rule = ("refuted when (1 − θ/π)^m lies outside the exact Clopper–Pearson interval of the "
            "collision rate at any angle (each at 1 − 0.05/len(angles)); holds otherwise")
    Params = SignHashParams

    def __init__(self, params=None, shared: bool = False):
        super().__init__(params)
        self.shared = shared

    def planted_violations(self):
        return [Planted("shared_direction",
                        "all m bits share one direction: collision probability 1 − θ/π "
                        "instead of (1 − θ/π)^m",
                        lambda: SignHashCollisionCheck(self.params, shared=True))]

    def _run(self, seed, out):
        p = self.params
        confidence = 1 - (1 - p.family_confidence) / len(p.angles)
        rng = np.random.default_rng(seed)
        misses, rows = 0, []
        for theta in p.angles:
            u = rng.standard_normal(p.dim)
            u /= np.linalg.norm(u)
            v = rng.standard_normal(p.dim)
            v -= (v @ u) * u
            v /= np.linalg.norm(v)
            pair = np.stack([u, math.cos(theta) * u + math.sin(theta) * v])  # angle θ
            hits = 0
            for s in child_seeds(seed, p.trials, int(theta * 1e6)):
                keys = SignHash(p.dim, p.n_bits, s, self.shared).bucket_ids(pair)
                hits += int(keys[0] == keys[1])
            claimed = (1 - theta / math.pi) ** p.n_bits
            low, high = clopper_pearson(hits, p.trials, confidence)
            misses += not (low <= claimed <= high)
            rows.append({"theta": theta, "rate": hits / p.trials, "claimed": claimed,
                         "interval": (low, high)})
        return self.result(
            seed=seed, measured=misses, bound=0,
            measured_text=f"{misses}/{len(p.angles)} claimed probabilities outside their "
                          f"intervals",
            bound_text="0 outside", verdict=Verdict.REFUTED if misses else Verdict.HOLDS,
            details={"angles": rows})
