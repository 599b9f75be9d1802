"""Lemma 4.2(1): every bucket of a Euclidean LSH with C·k hashes of width ε has diameter ≤ ε/c
inside Γ, with probability ≥ 0.9.

For each k and each C of a sweep, ``n_draws`` independent hashers (m = C·k hashes, width ε)
are drawn for one fixed Γ = (random k-dim subspace) ∩ [-1, 1]^dim — the lemma's probability
is over the hash functions — and the largest bucket diameter inside Γ is measured three ways:

* exactly, over *all* buckets meeting Γ (``proofs_checks.lsh_cells``, k ≤ 3; the same
  numbers as ``routing.bucket_geometry.bucket_region_diameter``, bucket by bucket);
* from below, by the diameters of sampled points sharing a bucket (any k);
* from above, by the difference-body radius max{‖u‖ : |g_i·u| ≤ ε ∀i}, which bounds every
  bucket wherever it lies (any k; it is attained in practice as soon as Γ holds many buckets).

A draw is a success when the largest diameter is ≤ ε/c. Where only the bounds are known
(k > 3, or an arrangement too large to enumerate) a draw counts as a certain success when the
upper bound is ≤ ε/c and as a certain failure when the sampled diameter is > ε/c.

The constants C and c of the lemma are not stated in the paper (its appendix is missing):
the check reports, for each C, the largest c for which the claim holds (an upper confidence
bound on the 0.9-quantile of max-diameter/ε), and decides the claim at the largest C of the
sweep with the stated c.

Source: Baykal et al. 2022, Lemma 4.2(1); Euclidean LSH of §2.2 (Datar et al. 2004).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from lipschitz import UniformSubspace
from lipschitz.validation import check_int, check_real
from proofs_checks._framework import (
    Check, CheckParams, CheckResult, Verdict, child_seeds, combine_verdicts,
    decide_probability_bounds, quantile_upper_bound, register,
)
from matplotlib.ticker import NullFormatter

from proofs_checks._plots import plt, save_figure
from proofs_checks.lsh_cells import MAX_K, TooManyCandidates, difference_body_radius, hasher_cells
from routing.bucket_geometry import bucket_diameters
from routing.euclidean_lsh import EuclideanLSH

__all__ = ["DiameterParams", "Lemma42DiameterCheck", "default_hasher"]


def default_hasher(dim: int, n_hashes: int, width: float, seed: int) -> EuclideanLSH:
    """The hasher of the lemma: ``EuclideanLSH(dim, n_hashes, width, n_tables=1, seed)``."""
    return EuclideanLSH(dim, n_hashes, width, n_tables=1, seed=seed)


@dataclass(frozen=True)
class DiameterParams(CheckParams):
    """Parameters of the Lemma 4.2(1) check (defaults: the quick preset).

    Attributes:
        dim: ambient dimension d.
        ks: subspace dimensions k (exact enumeration for k ≤ 3).
        Cs: hashes per subspace dimension, m = C·k; the claim is decided at max(Cs).
        epsilon: the width ε (units of x).
        c: the constant tested: largest diameter ≤ ε/c.
        probability: the claimed probability (0.9).
        n_draws: independent hashers per (k, C).
        n_points: sample points of Γ for the sampled (lower) diameters.
        max_candidates: largest arrangement (k-subsets of hyperplanes) enumerated exactly.
        exact_for: "all" enumerates every draw's buckets (exact numbers for the measured
            constants); "uncertain" only the draws whose upper bound exceeds ε/c (the verdict
            is the same, the reported c_max is then a certified lower bound).
    """

    dim: int = 16
    ks: tuple[int, ...] = (1, 2)
    Cs: tuple[int, ...] = (2, 4, 8, 16)
    epsilon: float = 0.5
    c: float = 1.0
    probability: float = 0.9
    n_draws: int = 40
    n_points: int = 3000
    max_candidates: int = 400_000
    exact_for: str = "uncertain"

    @classmethod
    def full(cls):
        return cls(ks=(1, 2, 3, 4), Cs=(1, 2, 4, 8, 16), n_draws=300, n_points=10_000,
                   max_candidates=1_000_000)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.dim, "dim", 1, UniformSubspace.MAX_DIM)
        for k in self.ks:
            check_int(k, "ks[i]", 1, min(self.dim, UniformSubspace.MAX_K))
        for C in self.Cs:
            check_int(C, "Cs[i]", 1)
        if not self.ks or not self.Cs:
            raise ValueError("ks and Cs must not be empty")
        check_real(self.epsilon, "epsilon", 0.0, None, low_open=True)
        check_real(self.c, "c", 0.0, None, low_open=True)
        check_real(self.probability, "probability", 0.0, 1.0, low_open=True, high_open=True)
        check_int(self.n_draws, "n_draws", 1)
        check_int(self.n_points, "n_points", 2)
        check_int(self.max_candidates, "max_candidates", 1)
        if self.exact_for not in ("all", "uncertain"):
            raise ValueError(f"exact_for must be 'all' or 'uncertain', got {self.exact_for!r}")


@register
class Lemma42DiameterCheck(Check):
    """Lemma 4.2(1) as a measurement (method in the module docstring).

    Arguments:
        params: ``DiameterParams``.
        hasher_factory: (dim, n_hashes, width, seed) -> a hasher with ``directions``
            (1, n_hashes, dim), ``offsets`` (1, n_hashes), ``width`` and ``bucket_ids``;
            default ``default_hasher``. Tests plant violations through it (e.g. buckets wider
            than the width the bound is computed with).
    """

    name = "lemma42_diameter"
    claim = ("Euclidean LSH with m = C·k hashes of width ε: every bucket meeting Γ = k-dim "
             "subspace ∩ [-1,1]^d has diameter ≤ ε/c, with probability ≥ 0.9")
    source = "Baykal et al. 2022, Lemma 4.2(1)"
    Params = DiameterParams

    def __init__(self, params: DiameterParams | None = None,
                 hasher_factory: Callable | None = None):
        super().__init__(params)
        self.hasher_factory = hasher_factory or default_hasher

    def measure(self, k: int, C: int, seed: int) -> dict[str, np.ndarray]:
        """Largest bucket diameters / ε of ``n_draws`` hashers for one (k, C).

        Returns:
            dict of float64 arrays (n_draws,), in units of ε: ``exact`` (NaN where not
            enumerated), ``sampled`` (lower bound, only where not enumerated), ``radius``
            (upper bound), ``low``/``high`` (the best bounds: both equal ``exact`` where known),
            and ``n_cells`` (NaN where not enumerated).
        """
        p = self.params
        subspace = UniformSubspace(p.dim, k, seed=child_seeds(seed, 1, 1, k)[0])
        X = None
        out = {name: np.full(p.n_draws, np.nan) for name in
               ("exact", "sampled", "radius", "n_cells")}
        for i, hseed in enumerate(child_seeds(seed, p.n_draws, 3, k, C)):
            hasher = self.hasher_factory(p.dim, C * k, p.epsilon, hseed)
            projected = np.asarray(hasher.directions, np.float64)[0] @ subspace.basis
            out["radius"][i] = difference_body_radius(projected, float(hasher.width))
            if p.exact_for == "uncertain" and out["radius"][i] <= p.epsilon / p.c:
                continue  # every bucket is certified small: nothing to enumerate
            if k <= MAX_K:
                try:
                    cells = hasher_cells(hasher, subspace.basis, max_candidates=p.max_candidates)
                    out["exact"][i] = cells.max_diameter
                    out["n_cells"][i] = cells.n_cells
                    continue
                except TooManyCandidates:
                    pass
            if X is None:
                X = subspace.sample(p.n_points, seed=child_seeds(seed, 1, 2, k)[0])
            ids = np.asarray(hasher.bucket_ids(X))[:, 0]
            out["sampled"][i] = float(bucket_diameters(X, ids)["diameter"].max())
        for name in ("exact", "sampled", "radius"):
            out[name] /= p.epsilon
        known = ~np.isnan(out["exact"])
        # a draw skipped as certified small has no sampled value: its lower bound is 0
        out["low"] = np.where(known, out["exact"], np.nan_to_num(out["sampled"], nan=0.0))
        out["high"] = np.where(known, out["exact"], out["radius"])
        return out

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        C_top = max(p.Cs)
        threshold = 1.0 / p.c  # in units of ε
        table, decisions, fig_data = {}, {}, {}
        for k in p.ks:
            per_C = {}
            for C in p.Cs:
                m = self.measure(k, C, seed)
                certain = int(np.sum(m["high"] <= threshold))
                possible = int(p.n_draws - np.sum(m["low"] > threshold))
                decision = decide_probability_bounds(certain, possible, p.n_draws, p.probability)
                q_high = quantile_upper_bound(m["high"], p.probability)
                known = ~np.isnan(m["exact"])
                per_C[C] = {
                    "n_hashes": C * k,
                    "n_enumerated": int(known.sum()),
                    "max_diameter_over_eps": m["exact"], "sampled_over_eps": m["sampled"],
                    "radius_over_eps": m["radius"],
                    "exact_attains_radius": float(np.mean(np.isclose(m["exact"][known],
                                                                     m["radius"][known])))
                    if known.any() else None,
                    "n_cells_mean": float(np.nanmean(m["n_cells"])) if known.any() else None,
                    "decision": decision,
                    "c_max_certified": None if q_high is None else (
                        float("inf") if q_high == 0 else 1.0 / q_high),
                    "c_point_estimate": 1.0 / float(np.quantile(m["high"], p.probability)),
                }
                fig_data[(k, C)] = m["high"]
            table[k] = per_C
            decisions[k] = per_C[C_top]["decision"]

        verdict = combine_verdicts(d.verdict for d in decisions.values())
        needed = [d.draws_needed for d in decisions.values()
                  if d.verdict == Verdict.INCONCLUSIVE]
        worst = min(decisions.values(), key=lambda d: d.rate)
        c_top = {k: table[k][C_top]["c_max_certified"] for k in p.ks}
        measured_text = "; ".join(
            f"k={k}: {d.text()}, c_max={_fmt(c_top[k])}" for k, d in decisions.items())
        plots = self._plot(fig_data, threshold, out)
        details = {
            "decided_at": {"C": C_top, "c": p.c, "epsilon": p.epsilon},
            "per_k": {str(k): {str(C): v for C, v in per_C.items()} for k, per_C in table.items()},
            "measured_constants": {
                "c_max_certified": {str(k): {str(C): table[k][C]["c_max_certified"]
                                             for C in p.Cs} for k in p.ks},
                "meaning": "largest c with P(max bucket diameter ≤ ε/c) ≥ 0.9 certified at 95 %"
                           " (None: too few draws to certify any c); computed from the exact "
                           "maxima where enumerated and from the upper bound (radius) "
                           "elsewhere, so with exact_for='uncertain' it is a lower bound",
            },
            "notes": [
                "probability over the hash functions for one fixed random Γ per k",
                "exact = all buckets meeting Γ with positive volume, by vertex enumeration of "
                "the hyperplane arrangement (k ≤ 3); cross-checked against "
                "routing.bucket_geometry.bucket_region_diameter in the tests",
                "radius = max{‖u‖: |g_i·u| ≤ ε}: an upper bound for every bucket, offsets and "
                "position notwithstanding",
                "the diameter ratio does not depend on dim: the projected directions "
                "g_i = basisᵀa_i are standard Gaussian in R^k whatever dim is; only clipping "
                "by Γ does",
            ],
        }
        return self.result(seed=seed, measured=worst.rate, bound=p.probability,
                           measured_text=measured_text,
                           bound_text=f"P ≥ {p.probability} (C={C_top}, c={p.c:g}, ε={p.epsilon:g})",
                           verdict=verdict, details=details, plots=plots,
                           draws_needed=max([n for n in needed if n is not None], default=None))

    def _plot(self, data, threshold, out):
        if out is None:
            return []
        p = self.params
        fig, axes = plt.subplots(1, len(p.ks), figsize=(4.5 * len(p.ks), 3.6), squeeze=False)
        for ax, k in zip(axes[0], p.ks):
            for C in p.Cs:
                v = np.sort(data[(k, C)])
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"C={C}")
            ax.axvline(threshold, color="k", ls="--", lw=1, label=f"ε/c (c={p.c:g})")
            ax.axhline(p.probability, color="gray", ls=":", lw=1)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            lim = ax.get_xlim()
            ax.set_xticks([0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32])
            ax.set_xticklabels(["1/8", "1/4", "1/2", "1", "2", "4", "8", "16", "32"])
            ax.set_xlim(lim)
            ax.set_xlabel("largest bucket diameter in Γ / ε\n(exact; upper bound where that "
                          "is already ≤ ε/c)", fontsize=8)
            ax.set_ylabel("fraction of hashers ≤ x")
            ax.set_title(f"k={k}, dim={p.dim}, ε={p.epsilon:g}")
            ax.legend(fontsize=7)
        return save_figure(fig, out, "lemma42_diameter.png")


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"
