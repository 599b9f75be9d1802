"""Bump functions on a grid of Γ: the packing family of Theorem 4.3's counting argument.

A *bump field* is f(x) = Σ_j σ_j · L · max(0, ρ − ‖x − c_j‖₂) with centres c_j on
Γ = (k-dim subspace) ∩ [-1, 1]^d, pairwise at least 2ρ apart, and signs σ_j ∈ {−1, +1}.

* f is L-Lipschitz on all of R^d: the balls B(c_j, ρ) have disjoint interiors, each cone is
  L-Lipschitz and vanishes on its sphere; for x in ball i and x' in ball j ≠ i the segment
  from x to x' leaves ball i and enters ball j, so |f(x) − f(x')| ≤ L·dist(x, ∂B_i) +
  L·dist(x', ∂B_j) ≤ L‖x − x'‖ (the same with one point outside every ball).
* With ρ = ε/L, two fields whose signs differ at centre c_j differ by 2Lρ = 2ε there, so the
  family {f_σ : σ ∈ {±1}^M} of 2^M functions is 2ε-separated in ℓ∞ on Γ.

Source: Baykal et al. 2022, Theorem 4.3 (the counting argument: "a large family of target
functions that are pairwise far apart"); the bump construction is the standard one, the
paper's own is in its missing appendix.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch
from scipy.spatial import cKDTree

from lipschitz import Target
from routing.validation import check_points, check_real, check_seed
from proofs_checks.lsh_cells import polytope_vertices

__all__ = ["BumpField", "grid_centers", "PackingFamily"]


class BumpField(Target):
    """f(x) = Σ_j signs_j · L · max(0, radius − ‖x − centers_j‖₂), an L-Lipschitz target.

    Arguments:
        centers: float (M, dim), M ≥ 1, pairwise distances ≥ 2·radius (checked).
        signs: (M,) entries in {−1, +1}.
        radius: ρ > 0 (units of x).
        lipschitz: L > 0; the height of every bump is L·ρ.

    Attributes:
        lipschitz_bound: L (certificate in the module docstring).

    Raises:
        ValueError: bad shapes, non-finite values, signs not ±1, radius or L ≤ 0, or two
            centres closer than 2·radius (the balls would overlap and the certificate fail).

    Source: Baykal et al. 2022, Theorem 4.3 (packing family).
    """

    def __init__(self, centers, signs, radius: float, lipschitz: float = 1.0):
        self.centers = check_points(centers, None, name="centers")
        if self.centers.shape[0] < 1:
            raise ValueError("centers must hold at least one centre")
        self.signs = np.asarray(signs, dtype=np.float64)
        if self.signs.shape != (len(self.centers),) or not np.all(np.abs(self.signs) == 1):
            raise ValueError(f"signs must be an array of ±1 of shape ({len(self.centers)},)")
        self.radius = check_real(radius, "radius", 0.0, None, low_open=True)
        self.lipschitz = check_real(lipschitz, "lipschitz", 0.0, None, low_open=True)
        self.n_inputs = self.centers.shape[1]
        if len(self.centers) > 1:
            gap = cKDTree(self.centers).query(self.centers, k=2)[0][:, 1].min()
            if gap < 2 * self.radius * (1 - 1e-12):
                raise ValueError(f"centers must be at least 2·radius = {2 * self.radius:g} apart, "
                                 f"the closest two are {gap:g} apart")
        self._tree = cKDTree(self.centers)

    @property
    def lipschitz_bound(self) -> float:
        """L: disjoint L-Lipschitz cones (module docstring)."""
        return self.lipschitz

    def config(self) -> dict[str, Any]:
        return {"family": "BumpField", "centers": self.centers.tolist(),
                "signs": self.signs.tolist(), "radius": self.radius, "lipschitz": self.lipschitz}

    def _numpy(self, X: np.ndarray) -> np.ndarray:
        # at most one ball contains x, and then its centre is x's nearest centre
        dist, idx = self._tree.query(X, k=1)
        return self.signs[idx] * self.lipschitz * np.maximum(0.0, self.radius - dist)

    def _torch(self, X: torch.Tensor) -> torch.Tensor:
        C = self._param(self.centers, X)  # (M, dim)
        s = self._param(self.signs, X)
        with torch.no_grad():  # the nearest centre, as in the numpy path
            idx = torch.cdist(X, C).argmin(dim=1)  # (N,)
        diff = X - C[idx]  # (N, dim), differentiable twice (cdist's backward is not)
        sq = (diff * diff).sum(dim=1)
        dist = torch.sqrt(torch.clamp(sq, min=torch.finfo(X.dtype).tiny))
        return s[idx] * self.lipschitz * torch.clamp(self.radius - dist, min=0.0)

    def __repr__(self) -> str:
        return (f"BumpField(M={len(self.centers)}, dim={self.n_inputs}, radius={self.radius:g}, "
                f"lipschitz={self.lipschitz:g})")


def grid_centers(basis, spacing: float, shift=None) -> np.ndarray:
    """Points of the lattice spacing·(Z^k + shift) of the subspace that lie in Γ.

    Arguments:
        basis: float (dim, k), orthonormal columns (Γ = span(basis) ∩ [-1, 1]^dim).
        spacing: lattice step > 0 (units of x; distances in z equal distances in x).
        shift: (k,) offset in units of the step, default 0 (the origin is a centre).

    Returns:
        float64 (M, dim) centres basis @ z, pairwise ≥ spacing apart, inside the cube.

    Raises:
        ValueError: spacing ≤ 0, a bad basis or shift, or more than 10^6 lattice candidates.
    """
    basis = check_points(basis, None, name="basis")
    dim, k = basis.shape
    spacing = check_real(spacing, "spacing", 0.0, None, low_open=True)
    shift = np.zeros(k) if shift is None else np.asarray(shift, dtype=np.float64)
    if shift.shape != (k,) or not np.isfinite(shift).all():
        raise ValueError(f"shift must be a finite array of shape ({k},)")
    V = polytope_vertices(basis)
    lo = np.ceil(V.min(axis=0) / spacing - shift)
    hi = np.floor(V.max(axis=0) / spacing - shift)
    sizes = (hi - lo + 1).astype(int)
    if np.prod(np.maximum(sizes, 0).astype(float)) > 1e6:
        raise ValueError(f"spacing={spacing:g} gives more than 10^6 lattice candidates")
    axes = [np.arange(a, b + 1) for a, b in zip(lo, hi)]
    Z = (np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(-1, k) + shift) * spacing
    X = Z @ basis.T
    return X[np.abs(X).max(axis=1) <= 1.0]


class PackingFamily:
    """The 2ε-separated family {BumpField(centres, σ, ε/L, L) : σ ∈ {±1}^M} on Γ.

    Centres: ``grid_centers(basis, 2ε/L)`` (the densest square grid whose balls of radius ε/L
    are disjoint), so M ≈ vol_k(Γ) · (L/(2ε))^k and the family has 2^M members.

    Arguments:
        basis: (dim, k) orthonormal basis of the subspace.
        epsilon: ε > 0, the ℓ∞ accuracy of Theorem 4.3.
        lipschitz: L > 0.

    Attributes:
        centers: float64 (M, dim). radius: ε/L. n_centers: M.

    Raises:
        ValueError: bad arguments, or no lattice point in Γ.

    Source: Baykal et al. 2022, Theorem 4.3.
    """

    def __init__(self, basis, epsilon: float, lipschitz: float = 1.0):
        self.epsilon = check_real(epsilon, "epsilon", 0.0, None, low_open=True)
        self.lipschitz = check_real(lipschitz, "lipschitz", 0.0, None, low_open=True)
        self.radius = self.epsilon / self.lipschitz
        self.centers = grid_centers(basis, 2 * self.radius)
        if len(self.centers) == 0:  # pragma: no cover - the origin is always a centre
            raise ValueError("no lattice point lies in Γ")
        self.n_centers = len(self.centers)

    def member(self, signs) -> BumpField:
        """The member with sign vector ``signs`` ((M,) of ±1)."""
        return BumpField(self.centers, signs, self.radius, self.lipschitz)

    def random_signs(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` uniformly random sign vectors: float64 (n, M) of ±1."""
        rng = np.random.default_rng(check_seed(seed))
        return rng.choice(np.array([-1.0, 1.0]), size=(n, self.n_centers))

    def log2_size(self) -> int:
        """log2 of the number of members: M."""
        return self.n_centers

    def __repr__(self) -> str:
        return (f"PackingFamily(M={self.n_centers}, epsilon={self.epsilon:g}, "
                f"lipschitz={self.lipschitz:g}, radius={self.radius:g}, "
                f"log10 size={self.n_centers * math.log10(2):.3g})")
