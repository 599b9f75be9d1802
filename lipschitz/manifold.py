"""A curved k-dimensional manifold of bounded curvature inside the cube (the setting of
Baykal et al. 2022, Theorem B.1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from routing.validation import check_int, check_real, check_seed


class CurvedManifold:
    r"""The uniform distribution on a product of k circular arcs of curvature κ in [-1, 1]^dim.

    With orthonormal vectors u_1 … u_k, v_1 … v_k ∈ R^dim (needs 2k ≤ dim; for κ = 0 only the
    u_i are used and k ≤ dim suffices) and z ∈ [−a, a]^k,

        φ(z) = Σ_i [ sin(κ z_i)/κ · u_i + (1 − cos(κ z_i))/κ · v_i ]   (κ > 0),
        φ(z) = Σ_i z_i u_i                                             (κ = 0).

    ∂φ/∂z_i = cos(κ z_i) u_i + sin(κ z_i) v_i are orthonormal, so φ is an isometric embedding
    of the box: z uniform on [−a, a]^k gives points uniform (k-volume) on the manifold M.
    Curvature bound: the second fundamental form is II(t, t) = κ Σ_i t_i² n_i(z) with
    orthonormal n_i = −sin(κ z_i) u_i + cos(κ z_i) v_i, so for every unit tangent t the normal
    curvature is κ (Σ t_i⁴)^(1/2) ∈ [κ/√k, κ]: all sectional and normal curvatures of M are
    bounded by κ = ``curvature``, and each coordinate curve is an arc of a circle of radius 1/κ
    spanning the angle 2κa < π (so M has reach 1/κ along each arc and does not self-intersect).

    ``half_width`` a is the largest value (found by bisection, at most π/(2κ) and π√dim/2)
    such that M ⊂ [-1, 1]^dim; this is exact because each coordinate of φ is a sum
    of one-variable functions whose extremes over [−a, a] have closed forms.

    Arguments:
        dim: ambient dimension ≥ 1.
        k: manifold dimension, 1 ≤ k and 2k ≤ dim (k ≤ dim when curvature = 0).
        curvature: κ ≥ 0, the curvature bound.
        seed: non-negative integer seed of the orthonormal frame.

    Attributes:
        tangent_frame, normal_frame: float64 (dim, k), the u_i and v_i as columns.
        half_width: the parameter box half-side a.

    Raises:
        ValueError: ``dim < 1``, ``k`` outside the allowed range, ``curvature < 0``, a negative
            seed.
    """

    def __init__(self, dim: int, k: int, curvature: float, seed: int = 0):
        self.dim = check_int(dim, "dim", low=1)
        self.curvature = check_real(curvature, "curvature", low=0.0)
        k_max = self.dim if self.curvature == 0.0 else self.dim // 2
        if k_max < 1:
            raise ValueError(f"curvature > 0 needs dim >= 2, got dim={self.dim}")
        self.k = check_int(k, "k", low=1, high=k_max)
        self.seed = check_seed(seed)
        rng = np.random.default_rng(self.seed)
        n_vectors = self.k if self.curvature == 0.0 else 2 * self.k
        Q, R = np.linalg.qr(rng.standard_normal((self.dim, n_vectors)))
        Q = Q * np.sign(np.diag(R))
        self.tangent_frame = Q[:, : self.k]
        self.normal_frame = Q[:, self.k:] if self.curvature > 0 else np.zeros((self.dim, self.k))
        self.half_width = self._largest_half_width()

    def embed(self, Z: np.ndarray) -> np.ndarray:
        """φ(z) for parameters Z of shape (N, k): float64 (N, dim)."""
        return self._tangent_part(Z) @ self.tangent_frame.T + self._normal_part(Z) @ self.normal_frame.T

    def _tangent_part(self, z):
        """sin(κz)/κ = z·sinc(κz/π): exact at κ = 0 and free of underflow for tiny κ."""
        return z * np.sinc(self.curvature * z / np.pi)

    def _normal_part(self, z):
        """(1 − cos κz)/κ = (κz²/2)·sinc²(κz/(2π)), without cancellation."""
        return 0.5 * self.curvature * z**2 * np.sinc(self.curvature * z / (2 * np.pi)) ** 2

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw ``n`` points uniform on M: float64 (n, dim), inside [-1, 1]^dim.

        Raises:
            ValueError: n < 0 or seed < 0.
        """
        n, seed = check_int(n, "n", low=0), check_seed(seed)
        Z = np.random.default_rng(seed).uniform(-self.half_width, self.half_width, (n, self.k))
        return np.clip(self.embed(Z), -1.0, 1.0)  # clip is rounding only (M is in the cube)

    def coordinate_extent(self, a: float) -> float:
        """max over z ∈ [−a, a]^k and coordinates j of |φ_j(z)|, in closed form."""
        high = np.zeros(self.dim)
        low = np.zeros(self.dim)
        for i in range(self.k):
            g_max, g_min = self._arc_range(self.tangent_frame[:, i], self.normal_frame[:, i], a)
            high += g_max
            low += g_min
        return float(max(high.max(), -low.min()))

    def _arc_range(self, U: np.ndarray, V: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
        """max and min over z ∈ [−a, a] of g(z) = U sin(κz)/κ + V (1 − cos κz)/κ, per entry:
        the extremes lie at the ends or at stationary points U cos κz + V sin κz = 0."""
        kappa = self.curvature
        candidates = [np.full_like(U, -a), np.full_like(U, a)]
        if kappa > 0:
            base = np.arctan2(-U, V)  # θ = κz with tan θ = −U/V, plus multiples of π
            for m in (-2, -1, 0, 1, 2):
                theta = base + m * np.pi
                inside = np.abs(theta) <= kappa * a
                candidates.append(np.divide(theta, kappa, out=np.full_like(theta, a), where=inside))
        z = np.stack(candidates)
        values = U * self._tangent_part(z) + V * self._normal_part(z)
        return values.max(axis=0), values.min(axis=0)

    def _largest_half_width(self) -> float:
        # an arc of angle <= π has chord >= (2/π)·length, and chords are <= the cube's
        # diameter 2√dim, so a <= π√dim/2 always; arcs are kept to a quarter turn each way
        a_max = np.pi * np.sqrt(self.dim) / 2
        if self.curvature > 0:
            a_max = min(a_max, np.pi / (2 * self.curvature))
        if self.coordinate_extent(a_max) <= 1.0:
            return float(a_max)
        lo, hi = 0.0, a_max
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.coordinate_extent(mid) <= 1.0 else (lo, mid)
        return lo

    def config(self) -> dict[str, Any]:
        return {"family": "CurvedManifold", "dim": self.dim, "k": self.k,
                "curvature": self.curvature, "seed": self.seed}
