"""Random hypercube function targets (Baykal et al. 2022, §5.1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lipschitz._target import Target
from routing.validation import check_int, check_seed

#: Largest supported n_inputs: the function stores 2^n corner values (2^24 float64 = 128 MiB).
MAX_HYPERCUBE_INPUTS = 24
_CHUNK = 16384


class RandomHypercubeFunction(Target):
    r"""The multilinear interpolation of random ±1 values at the corners of [-1, 1]^n.

    f(x) = Σ_{y ∈ {−1,1}^n} v_y Π_i (1 + y_i x_i)/2 with v_y i.i.d. uniform on {−1, 1}
    (Baykal et al. 2022, §5.1; the paper's setting is n = 8). f(y) = v_y at every corner y.

    Layout: ``corner_values[j]`` is v_y for the corner whose bits, variable 0 the most
    significant, are b_i = (y_i + 1)/2; ``corners()`` lists the corners in that order.

    Evaluation is a multilinear contraction, not a loop over corners: with the first
    h = n // 2 variables, u(x) = ⊗_{i<h} ((1−x_i)/2, (1+x_i)/2) ∈ R^(2^h) and likewise w(x) for
    the rest, f(x) = u(x)ᵀ V w(x) where V is ``corner_values`` reshaped to (2^h, 2^(n−h)):
    one BLAS matrix product, O(N · 2^n) flops and O(N · 2^(n/2)) memory (in chunks of points).

    Certificate (``lipschitz_bound``) — exact, not only an upper bound. ∂f/∂x_i does not
    depend on x_i and is affine in every other x_j, so ‖∇f‖₂² = Σ_i (∂f/∂x_i)² is convex in
    each coordinate separately and attains its maximum over the cube at a corner z. There,
    ∂f/∂x_i (z) = (v_{z with z_i=+1} − v_{z with z_i=−1}) / 2 ∈ {−1, 0, 1}, so
    ‖∇f(z)‖₂² = s(z), the number of neighbours of corner z (one coordinate flipped) whose value
    differs from v_z. The Lipschitz constant over the convex cube is sup‖∇f‖₂ =
    √(max_z s(z)) ≤ √n, the square root of the sensitivity of the Boolean function v.

    Arguments:
        n_inputs: n in 1..24.
        seed: non-negative integer seed of the corner values.

    Raises:
        ValueError: ``n_inputs`` outside 1..24 or a negative seed.
    """

    def __init__(self, n_inputs: int, seed: int = 0):
        self.n_inputs = check_int(n_inputs, "n_inputs", low=1, high=MAX_HYPERCUBE_INPUTS)
        self.seed = check_seed(seed)
        rng = np.random.default_rng(self.seed)
        self.corner_values = rng.choice(np.array([-1.0, 1.0]), size=2**self.n_inputs)
        self._split = self.n_inputs // 2
        self._V = self.corner_values.reshape(2**self._split, 2 ** (self.n_inputs - self._split))
        self._bound = float(np.sqrt(self.sensitivity()))

    def corners(self) -> np.ndarray:
        """All corners y ∈ {−1, 1}^n in ``corner_values`` order: float64 (2^n, n)."""
        j = np.arange(2**self.n_inputs)[:, None]
        bits = (j >> np.arange(self.n_inputs - 1, -1, -1)) & 1
        return 2.0 * bits - 1.0

    def sensitivity(self) -> int:
        """max over corners z of the number of coordinate flips that change v (see above)."""
        n = self.n_inputs
        changes = np.zeros(2**n, dtype=np.int64)
        v = self.corner_values
        for i in range(n):
            # corners differing in bit i (variable i is bit n−1−i): pair along a middle axis
            pairs = v.reshape(2**i, 2, 2 ** (n - 1 - i))
            differ = (pairs[:, 0, :] != pairs[:, 1, :])[:, None, :]
            changes += np.broadcast_to(differ, pairs.shape).reshape(-1)
        return int(changes.max())

    @property
    def lipschitz_bound(self) -> float:
        """√(sensitivity): the exact ℓ2 Lipschitz constant on the cube (class docstring)."""
        return self._bound

    def config(self) -> dict[str, Any]:
        return {"family": "RandomHypercubeFunction", "n_inputs": self.n_inputs, "seed": self.seed}

    def _numpy(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], _CHUNK):
            XT = np.ascontiguousarray(X[start:start + _CHUNK].T)  # (n, chunk)
            u, w = _kron_features(XT[: self._split]), _kron_features(XT[self._split:])
            out[start:start + _CHUNK] = np.einsum("an,an->n", self._V.T @ u, w)
        return out

    def _torch(self, X: torch.Tensor) -> torch.Tensor:
        V = self._param(self._V, X)
        XT = X.T
        u, w = _kron_features(XT[: self._split]), _kron_features(XT[self._split:])
        return ((V.T @ u) * w).sum(dim=0)


def _kron_features(XT):
    """⊗_i ((1 − x_i)/2, (1 + x_i)/2) for each point, transposed: (m, N) -> (2^m, N), variable
    0 the most significant bit. Works on numpy arrays and torch tensors.

    numpy: built in place in one (2^m, N) buffer. After variables m−1, …, i have been taken
    in, rows [0, s) hold their product for every bit pattern; taking in x_{i−1} as the new most
    significant bit writes rows [s, 2s) = rows [0, s)·(1 + x)/2, then scales rows [0, s) by
    (1 − x)/2: contiguous row operations, nothing allocated. torch: the same products with
    fresh tensors at each step, so that autograd can differentiate through them."""
    m, n = XT.shape
    if isinstance(XT, torch.Tensor):
        out = torch.ones((1, n), dtype=XT.dtype, device=XT.device)
        for xi in XT.flip(0):
            out = torch.cat([out * ((1 - xi) / 2), out * ((1 + xi) / 2)], dim=0)
        return out
    out = np.empty((2**m, n), dtype=XT.dtype)
    out[:1] = 1
    size = 1
    for xi in XT[::-1]:
        out[size:2 * size] = out[:size] * ((1 + xi) / 2)
        out[:size] *= (1 - xi) / 2
        size *= 2
    return out
