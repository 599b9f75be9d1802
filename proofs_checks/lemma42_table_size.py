"""Lemma 4.2(2): at most (2√d/ε)^{O(k)} buckets of a Euclidean LSH meet Γ.

The O(k) exponent is not given (the paper's appendix is missing), so it is measured: write
the bound as (2√d/ε)^{γk}. For each (dim, k) and each calibration width ε, ``n_calib``
hashers (C·k hashes, width ε, one fixed random Γ per (dim, k)) give the number N of buckets
meeting Γ, and γ_obs = log N / (k log(2√d/ε)). The exponent the data need is

    γ̂ = max(1, largest γ_obs over the calibration draws);

γ ≥ 1 is necessary for any valid bound because the buckets have diameter ≤ ε/c (part 1) and
must cover Γ, so N ≥ vol(Γ)/vol(ball of radius ε/c) ∝ ε^{-k}. The claim is then checked on
fresh draws at a smaller width (extrapolation in ε): success when N ≤ (2√d/ε)^{γ̂k}, decided
with probability ≥ 0.9 by the Clopper–Pearson rule. A least-squares slope γ_fit (through the
origin, per k and pooled) describes the scaling.

N is counted exactly by enumerating the arrangement (``proofs_checks.lsh_cells``, k ≤ 3);
where that is too large it is bracketed between the number of buckets hashed from a sample
of Γ (below) and Σ_{i≤k} C(H, i), the number of regions of H hyperplanes in R^k in general
position, H the bucket boundaries crossing Γ (above).

Source: Baykal et al. 2022, Lemma 4.2(2); Euclidean LSH of §2.2.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from lipschitz import UniformSubspace
from lipschitz.validation import check_int, check_real
from proofs_checks._framework import (
    Check, CheckParams, CheckResult, Verdict, child_seeds, combine_verdicts,
    decide_probability_bounds, register,
)
from proofs_checks._plots import plt, save_figure
from proofs_checks.lemma42_diameter import default_hasher
from proofs_checks.lsh_cells import MAX_K, TooManyCandidates, hasher_cells, polytope_vertices
from routing.bucket_geometry import n_nonempty_buckets

__all__ = ["TableSizeParams", "Lemma42TableSizeCheck", "count_buckets"]


def count_buckets(hasher, subspace: UniformSubspace, n_points: int, seed: int,
                  max_candidates: int) -> tuple[float, float]:
    """(lower, upper) bounds on the number of buckets of table 0 meeting Γ; equal when exact.

    Exact by enumeration (k ≤ 3, at most ``max_candidates`` k-subsets); otherwise lower =
    distinct buckets of ``n_points`` sampled points of Γ, upper = Σ_{i≤k} C(H, i).

    Raises:
        ValueError: as ``proofs_checks.lsh_cells.hasher_cells``.
    """
    k = subspace.k
    if k <= MAX_K:
        try:
            n = hasher_cells(hasher, subspace.basis, max_candidates=max_candidates).n_cells
            return float(n), float(n)
        except TooManyCandidates:
            pass
    G = np.asarray(hasher.directions, np.float64)[0] @ subspace.basis
    t = (polytope_vertices(subspace.basis) @ G.T + np.asarray(hasher.offsets)[0]) / hasher.width
    H = int(np.sum(np.floor(t.max(axis=0)) - np.ceil(t.min(axis=0)) + 1))
    upper = float(sum(math.comb(H, i) for i in range(k + 1)))
    X = subspace.sample(n_points, seed=seed)
    lower = float(n_nonempty_buckets(np.asarray(hasher.bucket_ids(X))[:, 0]))
    return lower, upper


@dataclass(frozen=True)
class TableSizeParams(CheckParams):
    """Parameters of the Lemma 4.2(2) check (defaults: the quick preset).

    Attributes:
        dims: ambient dimensions d.
        ks: subspace dimensions k.
        C: hashes per subspace dimension (m = C·k), fixed.
        calib_epsilons: widths at which γ is fitted.
        verify_epsilon: the (smaller) width at which the bound with the fitted γ is checked.
        n_calib: hashers per (dim, k, ε) for the fit.
        n_verify: fresh hashers per (dim, k) for the check.
        probability: the claimed probability (0.9).
        gamma: if set, check this exponent instead of fitting one.
        n_points: sample points for the lower bound where the count is not exact.
        max_candidates: largest arrangement enumerated exactly.
    """

    dims: tuple[int, ...] = (16,)
    ks: tuple[int, ...] = (1, 2)
    C: int = 4
    calib_epsilons: tuple[float, ...] = (1.0, 0.5)
    verify_epsilon: float = 0.25
    n_calib: int = 10
    n_verify: int = 40
    probability: float = 0.9
    gamma: float | None = None
    n_points: int = 20_000
    max_candidates: int = 300_000

    @classmethod
    def full(cls):
        return cls(dims=(8, 32), ks=(1, 2, 3), calib_epsilons=(1.0, 0.5, 0.25),
                   verify_epsilon=0.125, n_calib=30, n_verify=300, max_candidates=1_000_000)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        if not self.dims or not self.ks or not self.calib_epsilons:
            raise ValueError("dims, ks and calib_epsilons must not be empty")
        for d in self.dims:
            check_int(d, "dims[i]", 1, UniformSubspace.MAX_DIM)
        for k in self.ks:
            check_int(k, "ks[i]", 1, min(min(self.dims), UniformSubspace.MAX_K))
        check_int(self.C, "C", 1)
        for e in (*self.calib_epsilons, self.verify_epsilon):
            check_real(e, "epsilon", 0.0, 1.0, low_open=True)
        check_int(self.n_calib, "n_calib", 1)
        check_int(self.n_verify, "n_verify", 1)
        check_real(self.probability, "probability", 0.0, 1.0, low_open=True, high_open=True)
        if self.gamma is not None:
            check_real(self.gamma, "gamma", 0.0, None, low_open=True)
        check_int(self.n_points, "n_points", 1)
        check_int(self.max_candidates, "max_candidates", 1)


@register
class Lemma42TableSizeCheck(Check):
    """Lemma 4.2(2) as a measurement (method in the module docstring).

    Arguments:
        params: ``TableSizeParams``.
        hasher_factory: (dim, n_hashes, width, seed) -> hasher (default
            ``lemma42_diameter.default_hasher``); tests plant violations through it.
    """

    name = "lemma42_table_size"
    claim = ("Euclidean LSH with m = C·k hashes of width ε: at most (2√d/ε)^{γk} buckets meet "
             "Γ = k-dim subspace ∩ [-1,1]^d (γ a constant), with probability ≥ 0.9")
    source = "Baykal et al. 2022, Lemma 4.2(2)"
    Params = TableSizeParams

    def __init__(self, params: TableSizeParams | None = None,
                 hasher_factory: Callable | None = None):
        super().__init__(params)
        self.hasher_factory = hasher_factory or default_hasher

    def counts(self, dim: int, k: int, epsilon: float, n: int, seed: int, salt: int):
        """(lower, upper) bucket counts of ``n`` hashers: two float64 arrays (n,)."""
        p = self.params
        subspace = UniformSubspace(dim, k, seed=child_seeds(seed, 1, 1, dim, k)[0])
        lows, highs = np.empty(n), np.empty(n)
        seeds = child_seeds(seed, n, salt, dim, k, int(round(epsilon * 1e6)))
        for i, s in enumerate(seeds):
            hasher = self.hasher_factory(dim, p.C * k, epsilon, s)
            lows[i], highs[i] = count_buckets(hasher, subspace, p.n_points, s, p.max_candidates)
        return lows, highs

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        calib = []  # (dim, k, eps, low, high)
        for dim in p.dims:
            for k in p.ks:
                for eps in p.calib_epsilons:
                    low, high = self.counts(dim, k, eps, p.n_calib, seed, 2)
                    calib.append((dim, k, eps, low, high))
        x = np.concatenate([np.full(len(h), k * math.log(2 * math.sqrt(d) / e))
                            for d, k, e, _, h in calib])
        logn = np.concatenate([np.log(h) for *_, h in calib])
        gamma_obs = logn / x
        gamma_fit = float(x @ logn / (x @ x))
        gamma_fit_k = {}
        for k in p.ks:
            sel = np.concatenate([np.full(len(h), kk == k) for _, kk, _, _, h in calib])
            gamma_fit_k[str(k)] = float(x[sel] @ logn[sel] / (x[sel] @ x[sel]))
        gamma_need = max(1.0, float(gamma_obs.max()))
        gamma = gamma_need if p.gamma is None else p.gamma

        eps = p.verify_epsilon
        decisions, verify = {}, {}
        for dim in p.dims:
            for k in p.ks:
                low, high = self.counts(dim, k, eps, p.n_verify, seed, 3)
                bound = (2 * math.sqrt(dim) / eps) ** (gamma * k)
                certain = int(np.sum(high <= bound))
                possible = int(np.sum(low <= bound))
                d = decide_probability_bounds(certain, possible, p.n_verify, p.probability)
                decisions[(dim, k)] = d
                verify[f"dim={dim},k={k}"] = {
                    "bound": bound, "count_low": low, "count_high": high,
                    "exact": bool(np.all(low == high)),
                    "gamma_obs_max": float(np.max(np.log(high) / (k * math.log(2 * math.sqrt(dim) / eps)))),
                    "decision": d}
        verdict = combine_verdicts(d.verdict for d in decisions.values())
        worst = min(decisions.values(), key=lambda d: d.rate)
        needed = [d.draws_needed for d in decisions.values()
                  if d.verdict == Verdict.INCONCLUSIVE and d.draws_needed is not None]
        plots = self._plot(calib, {key: np.asarray(v["count_high"]) for key, v in zip(
            decisions, verify.values())}, gamma, out)
        details = {
            "gamma_needed": gamma_need, "gamma_obs_max": float(gamma_obs.max()),
            "gamma_fit_pooled": gamma_fit, "gamma_fit_per_k": gamma_fit_k,
            "gamma_checked": gamma, "C": p.C,
            "calibration": [{"dim": d, "k": k, "epsilon": e, "count_low": lo, "count_high": hi,
                             "exact": bool(np.all(lo == hi))} for d, k, e, lo, hi in calib],
            "verification": {"epsilon": eps, **verify},
            "notes": [
                "γ̂ = max(1, max γ_obs over calibration draws); γ ≥ 1 is necessary since buckets "
                "of diameter ≤ ε/c must cover Γ",
                "the check extrapolates: γ̂ is fitted at the calibration widths and checked at a "
                "smaller width on fresh hashers",
                "γ depends on C (more hashes per dimension, more buckets); C is fixed here",
            ],
        }
        return self.result(
            seed=seed, measured=worst.rate, bound=p.probability,
            measured_text=f"γ̂={gamma_need:.3g} (fit {gamma_fit:.3g}); " + "; ".join(
                f"d={d},k={k}: {v.text()}" for (d, k), v in decisions.items()),
            bound_text=f"P(N ≤ (2√d/ε)^({gamma:.3g}k)) ≥ {p.probability} at ε={eps:g}",
            verdict=verdict, details=details, plots=plots,
            draws_needed=max(needed) if needed else None)

    def _plot(self, calib, verify_counts, gamma, out):
        if out is None:
            return []
        p = self.params
        fig, ax = plt.subplots(figsize=(5.5, 4))
        colors = {}
        for d, k, e, _, h in calib:
            color = colors.setdefault((d, k), f"C{len(colors)}")
            ax.scatter(np.full(len(h), k * math.log(2 * math.sqrt(d) / e)), np.log(h), s=8,
                       color=color, label=f"d={d}, k={k} (fit)" if e == p.calib_epsilons[0] else None)
        for (d, k), h in verify_counts.items():
            ax.scatter(np.full(len(h), k * math.log(2 * math.sqrt(d) / p.verify_epsilon)),
                       np.log(h), s=10, marker="x", color=colors[(d, k)],
                       label=f"d={d}, k={k} (check, ε={p.verify_epsilon:g})")
        xs = np.array([0, max(k * math.log(2 * math.sqrt(d) / p.verify_epsilon)
                              for d, k, *_ in calib)])
        ax.plot(xs, gamma * xs, "k--", lw=1, label=f"bound, γ={gamma:.3g}")
        ax.plot(xs, xs, ":", color="gray", lw=1, label="γ = 1")
        ax.set_xlabel("k · log(2√d/ε)")
        ax.set_ylabel("log(number of buckets meeting Γ)")
        ax.legend(fontsize=7)
        return save_figure(fig, out, "lemma42_table_size.png")
