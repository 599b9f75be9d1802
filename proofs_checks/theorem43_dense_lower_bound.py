"""Theorem 4.3: a dense model with a random bottom layer needs width w = Ω((√d L/(Cε))^k) to
learn L-Lipschitz functions on Γ to ℓ∞ error ε.

The proof's counting argument (paper: "construct a large family of target functions that are
pairwise far apart") is built and measured:

1. **The packing family** (``proofs_checks.packing.PackingFamily``): bumps of radius ε/L and
   height ε on the grid of spacing 2ε/L of Γ, with all 2^M sign patterns. Both properties are
   verified on random members: L-Lipschitz (the certificate's hypothesis — disjoint balls —
   and an empirical estimate that must not exceed L) and pairwise ℓ∞ distance ≥ 2ε (at the
   centres).
2. **The lower bound for random-features models, exactly.** A dense model
   x ↦ Σ_i a_i ReLU(w_i·x + b_i) with a fixed random bottom layer and real top weights a is a
   w-dimensional linear space of functions. If it ε-approximated every member, its vectors
   of values at the M centres would realise all 2^M sign patterns, which a w-dimensional
   space cannot do when w < M: for u ≠ 0 orthogonal to the space, σ = sign(u) is not
   realised (Σ u_j v_j = 0 is impossible with sign(v) = sign(u)). So for every tested width
   w < M the check *constructs* that member and verifies by linear programming that the best
   top layer has error ≥ ε at the centres. (The paper's version counts functions with b-bit
   weights, 2^{bw} ≥ 2^M, i.e. w ≥ M/b; the linear-algebra version needs no bit count.)
3. **The width a dense model needs in practice**: for widths w = factor·M the top layer is
   fitted by least squares on points of Γ, and the smallest w at which every tested random
   member reaches ℓ∞ error < ε (on test points and centres) is reported, with the constant C
   it implies in w = (√d L/(Cε))^k, next to the C implied by M itself. The inequality is
   strict because the zero function is at distance exactly ε from every member: "error ≤ ε"
   would be met by a model that has learned nothing.

The verdict is *holds* when the family has both properties and every constructed hard member
defeats its width; *refuted* otherwise. What such a finite experiment can and cannot show is
stated in the result's details.

Source: Baykal et al. 2022, Theorem 4.3 and Eq. (1).
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg import null_space, solve
from scipy.optimize import linprog

from lipschitz import UniformSubspace, estimate_lipschitz
from lipschitz.validation import check_int, check_real
from proofs_checks._framework import (
    Check, CheckParams, CheckResult, Verdict, child_seeds, register,
)
from matplotlib.ticker import NullFormatter

from proofs_checks._plots import plt, save_figure
from proofs_checks.packing import PackingFamily

__all__ = ["DenseLowerBoundParams", "Theorem43DenseLowerBoundCheck", "RandomFeatures",
           "best_error_at_points"]

#: Ridge of the least-squares fits, relative to the mean diagonal of FᵀF (random ReLU
#: features are nearly collinear; unregularised fits blow up between the fit points).
_RIDGE = 1e-8
#: Relative tolerance of the empirical Lipschitz estimate against L (difference quotients of
#: very close points carry rounding error of order 1e-16 / distance).
LIPSCHITZ_RTOL = 1e-6

CAN_SHOW = (
    "that the packing family of the counting argument exists at the tested (d, k, ε): "
    "M grid bumps give 2^M functions, each L-Lipschitz, pairwise ≥ 2ε apart in ℓ∞; that for "
    "the tested random-features models every width w < M fails on an explicitly constructed "
    "member (so such a model must have w ≥ M, exactly); and how wide a least-squares-fitted "
    "random-features model had to be to reach ε on a few random members, with the constant C "
    "that width implies"
)
CANNOT_SHOW = (
    "the Ω(·) itself: a lower bound over all dense models, all bottom layers, all training "
    "procedures and all ε cannot be established by finitely many runs. The exact part covers "
    "one model class (a fixed random ReLU layer, trained linear top layer) at the centres "
    "only; the measured widths are upper bounds on what that class needs (least squares is "
    "not the ℓ∞-optimal fit), measured on a few members of a family of 2^M, with ℓ∞ "
    "estimated on sample points; and the constant C is not identifiable from a finite range "
    "of ε. The theorem's sample-complexity statement is not tested."
)


class RandomFeatures:
    """A dense model's fixed random bottom layer: φ(x) = ReLU(W x + b), width w.

    W has i.i.d. N(0, 1) entries; b_i = −W_i·p_i for points p_i drawn uniformly on Γ, so each
    unit's kink passes through the data (the paper does not specify the bottom layer).

    Arguments:
        dim: input dimension d ≥ 1.
        width: w ≥ 1.
        anchors: float (≥ w, dim) points of Γ; the first w are the p_i.
        seed: seed of W.

    Raises:
        ValueError: bad sizes or too few anchors.

    Source: Baykal et al. 2022, Theorem 4.3 ("a dense model of width w with a random bottom
    layer"); §5.1 (dense models with a random, non-trainable bottom layer).
    """

    def __init__(self, dim: int, width: int, anchors: np.ndarray, seed: int):
        self.dim = check_int(dim, "dim", 1)
        self.width = check_int(width, "width", 1)
        if anchors.shape[0] < self.width or anchors.shape[1] != self.dim:
            raise ValueError(f"anchors must have shape (>= {self.width}, {self.dim}), "
                             f"got {anchors.shape}")
        self.W = np.random.default_rng(seed).standard_normal((self.width, self.dim))
        self.b = -np.einsum("ij,ij->i", self.W, anchors[: self.width])

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Features: (N, dim) -> (N, width) float64."""
        return np.maximum(X @ self.W.T + self.b, 0.0)


def _ridge(F: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """argmin_A ‖F A − Y‖² + λ‖A‖², λ = _RIDGE · mean diag(FᵀF) (Cholesky, O(n w²))."""
    G = F.T @ F
    lam = _RIDGE * max(float(np.trace(G)) / G.shape[0], 1e-300)
    return solve(G + lam * np.eye(G.shape[0]), F.T @ Y, assume_a="pos")


def best_error_at_points(Phi: np.ndarray, targets: np.ndarray) -> float:
    """min over a of max_j |Φ a − t|_j (Chebyshev fit by linear programming, HiGHS).

    Arguments:
        Phi: float (M, w) features at M points. targets: float (M,).

    Returns:
        The optimal ℓ∞ error.

    Raises:
        RuntimeError: if the LP solver fails.
    """
    M, w = Phi.shape
    c = np.r_[np.zeros(w), 1.0]
    ones = np.ones((M, 1))
    A = np.vstack([np.hstack([Phi, -ones]), np.hstack([-Phi, -ones])])
    b = np.r_[targets, -targets]
    res = linprog(c, A_ub=A, b_ub=b, bounds=[(None, None)] * w + [(0, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(f"Chebyshev fit failed: {res.message}")
    return float(res.fun)


@dataclass(frozen=True)
class DenseLowerBoundParams(CheckParams):
    """Parameters of the Theorem 4.3 check (defaults: the quick preset).

    Attributes:
        dim: d.
        configs: (k, ε) pairs.
        lipschitz: L.
        width_factors: widths w = ⌈factor · M⌉ tried (increasing).
        n_members: random members fitted per width.
        n_pairs: random pairs whose separation is checked.
        n_fit_per_unit: least-squares fit points per unit of the widest model.
        n_test: test points of Γ for the ℓ∞ error.
        n_lipschitz_points: points for the empirical Lipschitz estimate (as many again are
            drawn near the centres, inside the bumps).
        n_lipschitz_members: members whose Lipschitz constant is estimated (the certificate
            — disjoint balls — holds for all of them by construction).
    """

    dim: int = 8
    configs: tuple[tuple[int, float], ...] = ((1, 0.25), (1, 0.125), (2, 0.25))
    lipschitz: float = 1.0
    width_factors: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 8.0)
    n_members: int = 8
    n_pairs: int = 50
    n_fit_per_unit: int = 8
    n_test: int = 4000
    n_lipschitz_points: int = 2000
    n_lipschitz_members: int = 2

    @classmethod
    def full(cls):
        return cls(configs=((1, 0.25), (1, 0.125), (1, 0.0625), (2, 0.25), (2, 0.125),
                            (3, 0.25)), width_factors=(0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 8.0, 16.0),
                   n_members=32, n_pairs=500, n_test=20_000, n_lipschitz_members=8)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.dim, "dim", 1, UniformSubspace.MAX_DIM)
        if not self.configs or not self.width_factors:
            raise ValueError("configs and width_factors must not be empty")
        for k, e in self.configs:
            check_int(k, "configs[i][0] (k)", 1, min(self.dim, UniformSubspace.MAX_K))
            check_real(e, "configs[i][1] (epsilon)", 0.0, None, low_open=True)
        check_real(self.lipschitz, "lipschitz", 0.0, None, low_open=True)
        if list(self.width_factors) != sorted(self.width_factors) or self.width_factors[0] <= 0:
            raise ValueError("width_factors must be positive and increasing")
        check_int(self.n_members, "n_members", 1)
        check_int(self.n_pairs, "n_pairs", 1)
        check_int(self.n_fit_per_unit, "n_fit_per_unit", 1)
        check_int(self.n_test, "n_test", 1)
        check_int(self.n_lipschitz_points, "n_lipschitz_points", 2)
        check_int(self.n_lipschitz_members, "n_lipschitz_members", 1)


@register
class Theorem43DenseLowerBoundCheck(Check):
    """Theorem 4.3 as a measurement (method in the module docstring).

    Arguments:
        params: ``DenseLowerBoundParams``.
        family_factory: (basis, epsilon, lipschitz) -> a family with ``centers`` (M, dim),
            ``n_centers``, ``member(signs)`` and ``random_signs(n, seed)``; default
            ``PackingFamily``. Tests plant violations through it.
    """

    name = "theorem43_dense_lower_bound"
    claim = ("a dense model with a random bottom layer needs width w = Ω((√d L/(Cε))^k) to "
             "learn L-Lipschitz functions on Γ to ℓ∞ error ε (counting argument over a "
             "2ε-separated family of L-Lipschitz bumps)")
    source = "Baykal et al. 2022, Theorem 4.3"
    Params = DenseLowerBoundParams

    def __init__(self, params: DenseLowerBoundParams | None = None,
                 family_factory: Callable | None = None):
        super().__init__(params)
        self.family_factory = family_factory or PackingFamily

    def measure(self, k: int, epsilon: float, seed: int) -> dict:
        """Packing properties, hard members and fitted widths for one (k, ε)."""
        p = self.params
        L = p.lipschitz
        subspace = UniformSubspace(p.dim, k, seed=child_seeds(seed, 1, 1, k)[0])
        family = self.family_factory(subspace.basis, epsilon, L)
        M = int(family.n_centers)
        centers = np.asarray(family.centers)
        salt = int(round(epsilon * 1e6))
        s_sign, s_test, s_fit, s_anchor, s_lip, s_feat = child_seeds(seed, 6, 2, k, salt)
        signs = family.random_signs(p.n_members, s_sign)
        members = [family.member(s) for s in signs]

        # 1. the packing properties
        X_lip = subspace.sample(p.n_lipschitz_points, seed=s_lip)
        rng = np.random.default_rng(s_lip)
        near = centers[rng.integers(0, M, p.n_lipschitz_points)]
        near = near + rng.normal(size=near.shape) * (0.5 * epsilon / L)  # inside the bumps
        X_lip = np.vstack([X_lip, np.clip(near, -1, 1)])
        lip = max(estimate_lipschitz(f, X_lip).value for f in members[: p.n_lipschitz_members])
        pair_signs = family.random_signs(2 * p.n_pairs, s_sign + 1).reshape(p.n_pairs, 2, M)
        separation = np.inf
        for s1, s2 in pair_signs:
            if np.array_equal(s1, s2):
                continue
            gap = np.abs(family.member(s1)(centers) - family.member(s2)(centers)).max()
            separation = min(separation, float(gap))

        # 2. + 3. random-features models of increasing width
        widths = sorted({max(1, math.ceil(f * M)) for f in p.width_factors})
        n_fit = p.n_fit_per_unit * widths[-1]
        X_fit = np.vstack([subspace.sample(n_fit, seed=s_fit), centers])
        X_test = np.vstack([subspace.sample(p.n_test, seed=s_test), centers])
        Y_fit = np.stack([f(X_fit) for f in members], axis=1)
        Y_test = np.stack([f(X_test) for f in members], axis=1)
        anchors = subspace.sample(widths[-1], seed=s_anchor)
        rows = []
        for w in widths:
            feats = RandomFeatures(p.dim, w, anchors, child_seeds(s_feat, 1, w)[0])
            F_fit = feats(X_fit)
            A = _ridge(F_fit, Y_fit)
            err = np.abs(feats(X_test) @ A - Y_test).max(axis=0)  # (n_members,)
            # strictly below ε: the zero function is at distance exactly ε from every member
            row = {"width": w, "width_over_M": w / M, "errors_over_eps": err / epsilon,
                   "all_members_within_eps": bool(np.all(err < epsilon))}
            if w < M:
                Phi = feats(centers)
                U = null_space(Phi.T)  # (M, M − rank) ⊇ the complement of the value space
                u = U @ np.random.default_rng(w).standard_normal(U.shape[1])
                sigma = np.where(u >= 0, 1.0, -1.0)
                hard = family.member(sigma)
                best = best_error_at_points(Phi, hard(centers))
                row["hard_member_best_error_over_eps"] = best / epsilon
                # the best top layer by the same least squares fit, on all of Γ's test points
                A_h = _ridge(F_fit, hard(X_fit))
                row["hard_member_ls_error_over_eps"] = float(
                    np.abs(feats(X_test) @ A_h - hard(X_test)).max() / epsilon)
            rows.append(row)
        ok = [r["width"] for r in rows if r["all_members_within_eps"]]
        w_star = ok[0] if ok else None
        return {"k": k, "epsilon": epsilon, "M": M, "log2_family_size": M,
                "lipschitz_empirical_max": lip, "lipschitz_claimed": L,
                "separation_min_over_eps": separation / epsilon,
                "widths": rows, "w_star": w_star,
                "C_from_M": math.sqrt(p.dim) * L / (epsilon * M ** (1 / k)),
                "C_from_w_star": None if w_star is None else
                math.sqrt(p.dim) * L / (epsilon * w_star ** (1 / k))}

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        results = [self.measure(k, e, seed) for k, e in p.configs]
        lip_ok = all(r["lipschitz_empirical_max"] <= p.lipschitz * (1 + LIPSCHITZ_RTOL)
                     for r in results)
        sep_ok = all(r["separation_min_over_eps"] >= 2 - 1e-9 for r in results)
        hard = [row["hard_member_best_error_over_eps"] for r in results for row in r["widths"]
                if "hard_member_best_error_over_eps" in row]
        hard_ok = all(h >= 1 - 1e-6 for h in hard)
        verdict = Verdict.HOLDS if (lip_ok and sep_ok and hard_ok) else Verdict.REFUTED
        min_hard = min(hard) if hard else float("nan")
        plots = self._plot(results, out)
        details = {
            "configs": {f"k={r['k']},eps={r['epsilon']:g}": r for r in results},
            "family_lipschitz_ok": lip_ok, "family_separation_ok": sep_ok,
            "hard_members_defeat_all_w_below_M": hard_ok,
            "measured_constants": {
                f"k={r['k']},eps={r['epsilon']:g}": {
                    "M": r["M"], "w_star": r["w_star"],
                    "w_star_over_M": None if r["w_star"] is None else r["w_star"] / r["M"],
                    "C_from_M": r["C_from_M"], "C_from_w_star": r["C_from_w_star"]}
                for r in results},
            "what_this_shows": CAN_SHOW,
            "what_this_cannot_show": CANNOT_SHOW,
        }
        text = "; ".join(
            f"k={r['k']},ε={r['epsilon']:g}: M={r['M']}, w*={r['w_star']}" for r in results)
        return self.result(
            seed=seed, measured=min_hard, bound=1.0,
            measured_text=f"min hard-member error/ε at w<M = {min_hard:.4g}; {text}",
            bound_text="≥ 1 (no w < M fits every member); family L-Lipschitz, 2ε-separated",
            verdict=verdict, details=details, plots=plots)

    def _plot(self, results, out):
        if out is None:
            return []
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for r in results:
            w = [row["width_over_M"] for row in r["widths"]]
            e = [np.max(row["errors_over_eps"]) for row in r["widths"]]
            ax.plot(w, e, "o-", label=f"k={r['k']}, ε={r['epsilon']:g}, M={r['M']}")
        ax.axhline(1.0, color="k", ls="--", lw=1, label="ℓ∞ = ε")
        ax.axvline(1.0, color="gray", ls=":", lw=1, label="w = M")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("width w / M")
        ax.set_ylabel("worst member ℓ∞ error / ε (least squares)")
        ax.legend(fontsize=7)
        return save_figure(fig, out, "theorem43_dense_lower_bound.png")
