"""A curved k-dimensional manifold of bounded curvature inside the cube (the setting of
Baykal et al. 2022, Theorem B.1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from routing.validation import (check_allocation, check_array_memory, check_int, check_points,
                                check_real, check_seed)


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
            seed, or a frame too large for memory.
    """

    def __init__(self, dim: int, k: int, curvature: float, seed: int = 0):
        self.dim = check_int(dim, "dim", low=1)
        self.curvature = check_real(curvature, "curvature", low=0.0)
        k_max = self.dim if self.curvature == 0.0 else self.dim // 2
        if k_max < 1:
            raise ValueError(f"curvature > 0 needs dim >= 2, got dim={self.dim}")
        self.k = check_int(k, "k", low=1, high=k_max)
        self.seed = check_seed(seed)
        # the frame (dim, 2k) and the (5, dim) candidates of each extent evaluation
        check_array_memory({"dim": self.dim, "k": self.k}, 8 * 8, "the float64 frame")
        rng = np.random.default_rng(self.seed)
        n_vectors = self.k if self.curvature == 0.0 else 2 * self.k
        Q, R = np.linalg.qr(rng.standard_normal((self.dim, n_vectors)))
        Q = Q * np.sign(np.diag(R))
        self.tangent_frame = Q[:, : self.k]
        self.normal_frame = Q[:, self.k:] if self.curvature > 0 else np.zeros((self.dim, self.k))
        self.half_width = self._largest_half_width()

    def embed(self, Z) -> np.ndarray:
        """φ(z) for every row z of Z.

        Arguments:
            Z: real array (N, k) of finite parameters; any z (the points of M are those of the
                box [−half_width, half_width]^k, beyond it the arcs continue around their
                circles).

        Returns:
            float64 (N, dim).

        Raises:
            ValueError: if Z is not a real (N, k) array, has NaN or infinite entries, or is so
                large (|z| near 1.8e308 with κ = 0) that φ(z) overflows float64.
        """
        Z = check_points(Z, self.k, name="Z")
        with np.errstate(over="ignore", invalid="ignore"):
            X = (self._tangent_part(Z) @ self.tangent_frame.T
                 + self._normal_part(Z) @ self.normal_frame.T)
        if not np.isfinite(X).all():
            raise ValueError(f"Z is too large: φ(Z) overflows float64 (largest |entry| of Z is "
                             f"{float(np.max(np.abs(Z))):.3g}); the box of M is "
                             f"[-{self.half_width:.6g}, {self.half_width:.6g}]^{self.k}")
        return X

    def _tangent_part(self, z):
        """sin(κz)/κ = z·sinc(x)·cos(πx) with x = κz/(2π) (sin 2a = 2 sin a cos a): exact at
        κ = 0, free of underflow for tiny κ, and of the same angle πx as ``_normal_part``, so
        that φ(z) stays on its circle of radius 1/κ to rounding even where κz is huge."""
        x = self.curvature * z / (2 * np.pi)
        return z * np.sinc(x) * np.cos(np.pi * x)

    def _normal_part(self, z):
        """(1 − cos κz)/κ = 2 sin²(πx)/κ = (z·s)·(κz/2·s) with s = sinc(x), x = κz/(2π): no
        cancellation, and each factor stays finite for any finite z (the second is sin(πx),
        the first 2 sin(πx)/κ, or z itself at κ = 0), where z² would overflow beyond 1.3e154."""
        s = np.sinc(self.curvature * z / (2 * np.pi))
        return (z * s) * (0.5 * self.curvature * z * s)

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw ``n`` points uniform on M: float64 (n, dim), inside [-1, 1]^dim.

        Raises:
            ValueError: n < 0, seed < 0, or an (n, dim) sample too large for memory.
        """
        n, seed = check_int(n, "n", low=0), check_seed(seed)
        check_allocation(n * (self.dim + 2 * self.k), 8, "n", n,
                         f"the ({n}, {self.dim}) float64 sample and its parameters")
        Z = np.random.default_rng(seed).uniform(-self.half_width, self.half_width, (n, self.k))
        return np.clip(self.embed(Z), -1.0, 1.0)  # clip is rounding only (M is in the cube)

    def coordinate_extent(self, a: float) -> float:
        """max over z ∈ [−a, a]^k and coordinates j of |φ_j(z)|, in closed form.

        Arguments:
            a: half-side of the parameter box, a finite real >= 0.

        Returns:
            The extent (float, >= 0; M lies in [-1, 1]^dim when it is <= 1).

        Raises:
            ValueError: if ``a`` is not a finite real number >= 0 (complex, NaN, infinite,
                negative), or so large that the extent overflows float64.
        """
        a = check_real(a, "a", low=0.0)
        high = np.zeros(self.dim)
        low = np.zeros(self.dim)
        with np.errstate(over="ignore", invalid="ignore"):
            for i in range(self.k):
                g_max, g_min = self._arc_range(self.tangent_frame[:, i], self.normal_frame[:, i],
                                               a)
                high += g_max
                low += g_min
            extent = float(max(high.max(), -low.min()))
        if not math.isfinite(extent):
            raise ValueError(f"a={a:.6g} is too large: the extent of the box [-a, a]^{self.k} "
                             "overflows float64")
        return extent

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
