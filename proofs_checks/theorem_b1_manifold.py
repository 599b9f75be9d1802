"""Theorem B.1: Theorem 4.1's LSH learner on inputs from an unknown k-manifold of bounded
curvature — the samples needed scale with the intrinsic dimension k, not with d.

What the paper says: one sentence of its body (§4) — "Theorem B.1 extends this result to when
the input comes from an unknown manifold with a bounded curvature"; statement and proof are in
the missing appendix B. What this check therefore assumes the theorem says: for an
L-Lipschitz f and inputs uniform on a k-dimensional manifold M ⊂ [-1, 1]^d of curvature ≤ κ,
the learner of Theorem 4.1 (one table of C·k Euclidean hashes of width ∝ ε/L, bucket means)
reaches ℓ∞ error ≤ ε on M with probability ≥ 0.8 from O(k r^k log r) samples with a table of
O(r^k) buckets, r = L√d/ε, with constants that may depend on κ (and on M) but not on ε. It is
checked as the same scaling claim as Theorem 4.1 (``proofs_checks._nstar``): per k, the
exponents of n*(ε, k)/ln r and of the table size in r must be ≤ k + δ (δ = 0.5, fixed before
the run) — the intrinsic k, although the inputs span 2k ambient dimensions.

Inputs: ``lipschitz.CurvedManifold(d, k, κ)``, a product of k circular arcs of curvature κ
(all sectional and normal curvatures ≤ κ), one fixed manifold per k and d; targets (one per
case, below): a ridge f = L·⟨u, x⟩ with u a random unit vector of the span of the manifold's
tangent directions at its centre, or a one-unit tanh network of the tangent coordinates (both
L-Lipschitz in the ambient distance, as the theorem requires); test points:
``n_test`` fixed fresh points of M. κ = 1 (arcs of radius 1 spanning up to a half turn inside
the cube), d = 8, C = 4, c_w = 0.75 as for Theorem 4.1, fixed before any run. On the curve a
few per cent of the hashers have a bucket too coarse for ε (an error floor: the C·k hashes
are drawn in d dimensions and a curved k-manifold spans 2k of them); the 0.8-probability claim
tolerates that, and the floor rule refutes only when more than a fifth of the draws floor.

**Cases: target families and ambient d** (``CaseDecisions``, as for Theorem 4.1): each k is
decided on the ridge and on a non-linear family (``theorem41_learner.TangentMLP``, a random
one-unit tanh network on the tangent coordinates) at d = ``dim`` (8), and on the ridge at every
d of ``other_dims`` (16): the intrinsic k is fixed while the ambient d doubles, so "the
exponent is k, not d" is decided at two d (r = L√d/ε carries d into the constant only).
Every rule is one-sided, as the O(·) is. The verdict controls the family-wise error of a false
refutation over every (case, decided k, part) at once — Holm at α = 0.025 over one-sided
p-values, as for Theorem 4.1 (``theorem41_learner.family_wise``): quick's family has 3 cases ×
k = 1 × 3 parts = 9 members. The samples part, already short of power at quick (12 of 14
planted runs at its SVI by the intervals alone), keeps 8 of 14 after Holm; table size and
floors keep 14 of 14.

What each preset decides (``details["what_quick_decides"]``): quick, k = 1 over r ∈ [5.7, 16]
(d = 8) and [8, 22.6] (d = 16) on every case (a k = 2 probe at ε = 0.71, first case only,
reports n* and C_n); full, k = 1 and 2, and a k = 3 probe. The sample constants are those of
Theorem 4.1's single table (far above 1: test points in empty buckets dominate ℓ∞).

SVIs and planted violations: those of Theorem 4.1 (``theorem41_learner.learner_svis`` and
``learner_plants``: samples r^(k+1) log r, table r^(k+3/4), a floor share 0.5, each planted at
its SVI with power curves). Beside them, as a curve point of the table part (size 1): inputs
of intrinsic dimension k + 1 (a ``CurvedManifold`` of dimension k + 1) handed to the learner as
k-dimensional (m = C·k hashes, exponent claimed k): the table grows as r^(k+1), and with only
C·k hashes for k + 1 dimensions about a fifth of the draws floor.

Source: Baykal et al. 2022, §4 (Theorem B.1, stated in the missing appendix B).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lipschitz import CurvedManifold
from routing.validation import check_int, check_real
from proofs_checks._framework import Planted, register
from proofs_checks._nstar import NStarCheck, NStarParams
from proofs_checks.theorem41_learner import (TARGET_FAMILIES, CaseDecisions, learner_plants,
                                             validate_targets)

__all__ = ["ManifoldParams", "TheoremB1ManifoldCheck", "HigherDimensionalInputs"]


@dataclass(frozen=True)
class ManifoldParams(NStarParams):
    """Settings of the Theorem B.1 check (defaults: the quick preset); fields as in
    ``proofs_checks._nstar.NStarParams``, plus

    Attributes:
        curvature: κ ≥ 0 of the ``CurvedManifold`` inputs.
        targets: the target families (``theorem41_learner.TARGET_FAMILIES``), each a case at
            d = ``dim``.
        other_dims: further ambient dimensions d, each a case with the first target family
            (the intrinsic k fixed, d varied: "scales with k, not d").
    """

    epsilons: tuple = ((1, (0.5, 0.3536, 0.25, 0.1768)),)
    probes: tuple = ((2, 0.7071),)
    curvature: float = 1.0
    targets: tuple = TARGET_FAMILIES
    other_dims: tuple = (16,)

    @classmethod
    def tiny(cls):
        """The tiny preset: a smoke run in seconds that decides nothing (k = 1 over three ε,
        8 draws, no probe; the first target family at d = 8 only: ``sparselab check --preset
        tiny`` stays within half a minute)."""
        return cls(epsilons=((1, (0.5, 0.3536, 0.25)),), probes=(), n_draws=8,
                   n_calibration=3, n_test=200, calibration_cap=50_000, max_samples=200_000,
                   n_boot=100, targets=TARGET_FAMILIES[:1], other_dims=())

    @classmethod
    def full(cls):
        """k = 1 over r ∈ [5.7, 32] and k = 2 over r ∈ [4, 11.3] decided with 100 draws; k = 3
        probed (d = 8 allows 2(k + 1) ≤ d for the planted k + 1 up to k = 3)."""
        return cls(epsilons=((1, (0.5, 0.3536, 0.25, 0.1768, 0.125, 0.0884)),
                             (2, (0.7071, 0.5, 0.3536, 0.25))),
                   probes=((3, 1.0),), n_draws=100, n_calibration=20,
                   calibration_cap=5_000_000, max_samples=8_000_000, n_boot=2000,
                   n_power=20)

    def max_k(self) -> int:
        """2k ≤ d on a curved manifold (k ≤ d when flat)."""
        return self.dim // 2 if self.curvature > 0 else self.dim

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_real(self.curvature, "curvature", 0.0, None)
        validate_targets(self.targets)
        if not isinstance(self.other_dims, (tuple, list)) or len(set(self.other_dims)) != len(
                self.other_dims) or self.dim in self.other_dims:
            raise ValueError(f"other_dims must be a tuple of distinct dimensions other than "
                             f"dim={self.dim}, got {self.other_dims!r}")
        for d in self.other_dims:
            check_int(d, "other_dims[i]", 1, 4096)
            replace(self, dim=d, other_dims=()).validate()  # every k fits in d too
        super().validate()


@dataclass(frozen=True)
class HigherDimensionalInputs:
    """A planted input distribution: for "k" the manifold has intrinsic dimension k + extra.

    Arguments:
        extra: added intrinsic dimensions (≥ 1).
    """

    extra: int = 1

    def __call__(self, dim: int, k: int, curvature: float, seed: int) -> CurvedManifold:
        """``CurvedManifold(dim, k + extra, curvature, seed)`` (ValueError when 2(k + extra)
        exceeds dim on a curved manifold)."""
        return CurvedManifold(dim, k + self.extra, curvature, seed=seed)


def curved_manifold(dim: int, k: int, curvature: float, seed: int) -> CurvedManifold:
    """The theorem's inputs: ``CurvedManifold(dim, k, curvature, seed)``."""
    return CurvedManifold(dim, k, curvature, seed=seed)


@register
class TheoremB1ManifoldCheck(CaseDecisions, NStarCheck):
    """Theorem B.1 as a scaling measurement (assumptions in the module docstring).

    Arguments:
        params: ``ManifoldParams``.
        input_factory: (dim, k, curvature, seed) -> input distribution with ``sample`` and a
            ``tangent_frame`` (default ``CurvedManifold``).
        hasher_factory, width_rule, keep_rule: as for ``NStarCheck``.
    """

    name = "theoremB1_manifold"
    claim = ("Theorem 4.1's single-table LSH learner on inputs from a k-manifold of bounded "
             "curvature: ℓ∞ error ≤ ε with probability ≥ 0.8 from O(k r^k log r) samples and "
             "O(r^k) buckets, r = L√d/ε — exponent the intrinsic k (assumed statement; the "
             "appendix is missing)")
    source = "Baykal et al. 2022, Theorem B.1 (§4; statement in the missing appendix B)"
    Params = ManifoldParams
    input_label = "M"
    rule = (
        "As theorem41_learner, on CurvedManifold(d, k, κ) inputs, per case (ridge and tanh "
        "network at d = dim, ridge at every other_dims) and k: n_i = first grid n "
        "at which draw i has ℓ∞ error ≤ ε on the fixed test points of M (∞ at an error "
        "floor); n* = ⌈0.8·D⌉-th smallest n_i; calibration draws at the largest ε set only "
        "the caps cap_factor·Ĉ_n·k r^k ln r; on fresh draws the bootstrap exponents of "
        "n*/ln r and of the table size in r hold when the upper end ≤ k + δ and are refuted "
        "when the lower end > k + δ (lower-bounded resamples that could bias that end block "
        "the verdict: out of reach); refuted where the fraction of draws not at a floor is "
        "certainly < 0.8; family-wise control as theorem41_learner: every (case, decided k, "
        "part) is a member of one Holm family fixed before the run (α = 0.025; bootstrap p "
        "of each exponent against k + δ, exact binomial p of floors Bonferroni over ε; parts "
        "not measured at p = 1), and a part stays refuted only when its Holm-adjusted p ≤ "
        "0.025; the claim's verdict combines all decided k. Probed k are reported only."
    )

    def __init__(self, params: ManifoldParams | None = None, input_factory=None, **kwargs):
        super().__init__(params, **kwargs)
        self.input_factory = input_factory or curved_manifold

    def make_inputs(self, k: int, seed: int):
        """The input manifold of "dimension k" and its tangent frame at the centre."""
        p = self.params
        inputs = self.input_factory(p.dim, check_int(k, "k", 1), p.curvature, seed)
        return inputs, inputs.tangent_frame

    def cases(self) -> list[tuple[str, int]]:
        """(target family, d): every family at ``dim``, and the first at each ``other_dims``."""
        p = self.params
        return ([(t, p.dim) for t in p.targets]
                + [(p.targets[0], d) for d in p.other_dims])

    def rebuild(self, **kwargs):
        """The check with the same params and inputs and other learner objects."""
        return type(self)(self.params, input_factory=self.input_factory, **kwargs)

    def what_quick_decides(self) -> str:
        """What the quick preset decides and what it cannot (printed with the result, whatever
        preset ran: the quick preset's cases, not this run's)."""
        p = ManifoldParams.quick()
        return (f"decides k = 1 (r over a factor 2.8) on every case (families "
                f"{', '.join(p.targets)} at d = {p.dim}; {p.targets[0]} at d = "
                f"{', '.join(str(d) for d in p.other_dims)}); k = 2 only probed (the paper "
                f"preset decides it); k ≥ 3 out of reach")

    def planted_violations(self) -> list[Planted]:
        p = self.params
        return learner_plants(self, extra=[
            Planted("intrinsic_dim_k+1",
                    "inputs on a CurvedManifold of intrinsic dimension k + 1 handed to the "
                    "learner as k-dimensional (C·k hashes, exponent claimed k): table and "
                    "samples grow as r^(k+1) (power curve of the table part)",
                    lambda: type(self)(p, input_factory=HigherDimensionalInputs(1),
                                       hasher_factory=self.hasher_factory,
                                       width_rule=self.width_rule, keep_rule=self.keep_rule),
                    part="table_size", size=1.0, runs=2)])
