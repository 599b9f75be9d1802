"""Operations on targets that keep a certified Lipschitz bound: rescaling and composing with
an affine map of the cube into itself."""

from __future__ import annotations

from typing import Any

import numpy as np

from lipschitz._target import MAX_LIPSCHITZ_BOUND, Target, check_target
from routing.validation import as_numpy, check_points, check_real


class ScaledTarget(Target):
    """x ↦ factor · f(x); certified bound |factor| · f.lipschitz_bound.

    Arguments:
        target: the target f.
        factor: a finite real number with |factor| · f.lipschitz_bound <=
            ``MAX_LIPSCHITZ_BOUND`` (1e100).

    Raises:
        TypeError (also a ValueError): if ``target`` is not a ``lipschitz.Target``.
        ValueError: if ``factor`` is not finite or makes the bound exceed 1e100.
    """

    def __init__(self, target: Target, factor: float):
        self.target = check_target(target)
        self.factor = check_real(factor, "factor")
        bound = abs(self.factor) * target.lipschitz_bound
        if not bound <= MAX_LIPSCHITZ_BOUND * (1 + 1e-12):  # rounding of factor = bound / L
            largest = MAX_LIPSCHITZ_BOUND / target.lipschitz_bound
            raise ValueError(f"factor must lie in [-{largest:.6g}, {largest:.6g}] so that the "
                             f"certified bound |factor| · {target.lipschitz_bound:.6g} stays <= "
                             f"{MAX_LIPSCHITZ_BOUND:g}, got {self.factor:.6g}")
        self.n_inputs = target.n_inputs

    @property
    def lipschitz_bound(self) -> float:
        return abs(self.factor) * self.target.lipschitz_bound

    def config(self) -> dict[str, Any]:
        return {"family": "ScaledTarget", "target": self.target.config(), "factor": self.factor}

    def _numpy(self, X):
        return self.factor * self.target._numpy(X)

    def _torch(self, X):
        return self.factor * self.target._torch(X)


class LinearlyComposedTarget(Target):
    r"""x ↦ f(M x + b) for an affine map that sends [-1, 1]^m into [-1, 1]^n.

    Certificate: for x, x' in the m-cube, Mx + b and Mx' + b lie in the n-cube, where f is
    f.lipschitz_bound-Lipschitz, so |g(x) − g(x')| ≤ f.lipschitz_bound · ‖M‖₂ · ‖x − x'‖₂.
    The map sends the cube into the cube exactly when Σ_j |M_ij| + |b_i| ≤ 1 for every row i
    (the maximum of |(Mx + b)_i| over the cube); this is checked, because outside the cube
    f's certificate says nothing (a polynomial's gradient grows there).

    Arguments:
        target: the target f with f.n_inputs = n.
        matrix: float array (n, m).
        offset: float array (n,) or None (zero).

    Raises:
        TypeError (also a ValueError): if ``target`` is not a ``lipschitz.Target``.
        ValueError: wrong shapes, non-finite entries, or a map that leaves the cube.
    """

    def __init__(self, target: Target, matrix, offset=None):
        self.target = check_target(target)
        self.matrix = check_points(matrix, None, name="matrix")
        if self.matrix.shape[0] != target.n_inputs:
            raise ValueError(
                f"matrix must have shape ({target.n_inputs}, m), got {self.matrix.shape}"
            )
        n = target.n_inputs
        b = np.zeros(n) if offset is None else as_numpy(offset)
        if b.dtype == object or not (np.issubdtype(b.dtype, np.floating)
                                     or np.issubdtype(b.dtype, np.integer)):
            raise ValueError(f"offset must be a real-valued array of shape ({n},), got dtype "
                             f"{b.dtype}")  # a complex or string array would be cast silently
        b = b.astype(np.float64)
        if b.shape != (n,) or not np.isfinite(b).all():
            raise ValueError(f"offset must be a finite array of shape ({n},), got shape {b.shape}"
                             f"{'' if b.shape != (n,) else ' with NaN or infinite entries'}")
        self.offset = b
        reach = np.abs(self.matrix).sum(axis=1) + np.abs(b)
        if reach.max() > 1.0 + 1e-12:
            raise ValueError(
                "matrix and offset must map [-1, 1]^m into [-1, 1]^n: need "
                f"sum_j |M_ij| + |b_i| <= 1 for every row, the largest is {reach.max():.6g}"
            )
        self.n_inputs = self.matrix.shape[1]

    @property
    def lipschitz_bound(self) -> float:
        return float(np.linalg.norm(self.matrix, 2)) * self.target.lipschitz_bound

    def config(self) -> dict[str, Any]:
        return {"family": "LinearlyComposedTarget", "target": self.target.config(),
                "matrix": self.matrix.tolist(), "offset": self.offset.tolist()}

    def _numpy(self, X):
        return self.target._numpy(np.clip(X @ self.matrix.T + self.offset, -1.0, 1.0))

    def _torch(self, X):
        Z = X @ self._param(self.matrix, X).T + self._param(self.offset, X)
        return self.target._torch(Z.clamp(-1.0, 1.0))


def rescale(target: Target, lipschitz: float) -> ScaledTarget:
    """Scale ``target`` so that its certified Lipschitz bound equals ``lipschitz``.

    Arguments:
        target: any target with a positive ``lipschitz_bound``.
        lipschitz: the requested bound, in (0, 1e100] (``MAX_LIPSCHITZ_BOUND``).

    Returns:
        ``ScaledTarget`` with ``lipschitz_bound == lipschitz`` (up to rounding).

    Raises:
        TypeError (also a ValueError): if ``target`` is not a ``lipschitz.Target``.
        ValueError: ``lipschitz`` outside (0, 1e100] or a constant target (bound 0), which
            cannot be scaled.
    """
    check_target(target)
    lipschitz = check_real(lipschitz, "lipschitz", low=0.0, high=MAX_LIPSCHITZ_BOUND,
                           low_open=True)
    bound = target.lipschitz_bound
    if bound <= 0.0:
        raise ValueError("target has lipschitz_bound 0 (it is constant) and cannot be rescaled")
    return ScaledTarget(target, lipschitz / bound)


def compose_linear(target: Target, matrix, offset=None) -> LinearlyComposedTarget:
    """x ↦ target(matrix @ x + offset); see ``LinearlyComposedTarget`` for the certificate.

    Arguments:
        target: target with n inputs.
        matrix: float array (n, m); the result has m inputs.
        offset: float array (n,) or None.

    Raises:
        TypeError (also a ValueError): if ``target`` is not a ``lipschitz.Target``.
        ValueError: as ``LinearlyComposedTarget``.
    """
    return LinearlyComposedTarget(target, matrix, offset)
