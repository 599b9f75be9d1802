"""Empirical (lower) estimates of a target's Lipschitz constant, to compare with its
certified bound."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

from lipschitz._target import Target, check_target
from routing.validation import check_in_cube, check_int, check_points


@dataclass(frozen=True)
class LipschitzEstimate:
    """Result of ``estimate_lipschitz``.

    Attributes:
        gradient: largest ‖∇f(x)‖₂ over the sample (autograd, float64).
        difference_quotient: largest |f(x) − f(x')| / ‖x − x'‖₂ over nearest-neighbour pairs.
        n_points: sample size; n_pairs: number of pairs used.
    """

    gradient: float
    difference_quotient: float
    n_points: int
    n_pairs: int

    @property
    def value(self) -> float:
        """max(gradient, difference_quotient): a lower bound on the true Lipschitz constant."""
        return max(self.gradient, self.difference_quotient)


def estimate_lipschitz(f: Target, X, n_neighbors: int = 4) -> LipschitzEstimate:
    """Empirical lower estimate of f's ℓ2 Lipschitz constant on the points ``X``.

    Two estimators, both lower bounds of the Lipschitz constant on any convex set containing
    ``X``: the largest gradient norm ‖∇f(x)‖₂ (autograd through ``f.torch`` in float64; at a
    kink of a ReLU network autograd returns one of the one-sided gradients, still a valid
    lower bound on the constant), and the largest difference quotient
    |f(x) − f(x')| / ‖x − x'‖₂ over each point's ``n_neighbors`` nearest neighbours
    (scipy.spatial.cKDTree), the close pairs where the quotient approaches the local slope.

    Arguments:
        f: a target.
        X: float array (N, f.n_inputs), N ≥ 2, inside [-1, 1]^n (the targets' domain).
        n_neighbors: nearest neighbours per point, in 1..N−1.

    Returns:
        ``LipschitzEstimate``.

    Raises:
        ValueError: ``f`` not a target (a ``ParameterTypeError``, also a TypeError), ``X`` of
            the wrong shape, not finite or outside
            [-1, 1]^n, N < 2, ``n_neighbors`` out of range.
    """
    check_target(f, "f")
    X = check_in_cube(check_points(X, f.n_inputs))
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X must have at least 2 points, got {n}")
    n_neighbors = check_int(n_neighbors, "n_neighbors", low=1, high=n - 1)

    Xt = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(f.torch(Xt).sum(), Xt)
    gradient = float(grad.norm(dim=1).max())

    distance, index = cKDTree(X).query(X, k=n_neighbors + 1)
    distance, index = distance[:, 1:], index[:, 1:]  # drop each point itself
    y = f(X)
    keep = distance > 0  # duplicated points carry no information
    quotients = np.abs(y[:, None] - y[index])[keep] / distance[keep]
    return LipschitzEstimate(
        gradient=gradient,
        difference_quotient=float(quotients.max()) if quotients.size else 0.0,
        n_points=n,
        n_pairs=int(keep.sum()),
    )
