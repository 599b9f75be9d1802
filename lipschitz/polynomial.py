"""Random polynomial targets (Baykal et al. 2022, §5.1)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch
from scipy.special import comb

from lipschitz._target import MAX_LIPSCHITZ_BOUND, Target
from routing.validation import check_in_cube, check_int, check_points, check_real, check_seed

#: The largest number of monomials a RandomPolynomial may have (memory guard).
MAX_MONOMIALS = 200_000
_CHUNK = 8192


class RandomPolynomial(Target):
    r"""A random polynomial of total degree ``degree`` in ``n_inputs`` variables.

    p(x) = Σ_α c_α x^α over all multi-indices α with |α| ≤ degree (C(n+D, D) monomials, in
    graded order: degree 0, then degree 1, … each degree in lexicographic order of the
    variables). The coefficients are drawn i.i.d. uniform on [-1, 1] (the paper does not state
    the distribution) and then scaled so that Σ|c_α| · degree = ``lipschitz`` — the paper's
    "sum of coefficient absolute values < 1/d" for ``lipschitz = 1`` (Baykal et al. 2022, §5.1,
    setting n = 8, d = 4). For ``degree = 0`` the single constant is scaled to |c| = lipschitz.

    Certificate (``lipschitz_bound``). On [-1, 1]^n every |x^β| ≤ 1, so
    |∂p/∂x_i (x)| = |Σ_α c_α α_i x^(α − e_i)| ≤ G_i := Σ_α |c_α| α_i. Hence for every x in the
    cube ‖∇p(x)‖₂ ≤ ‖G‖₂, and since the cube is convex, |p(x) − p(x')| ≤ ‖G‖₂ ‖x − x'‖₂
    (mean value theorem along the segment). We report ‖G‖₂, which is never above
    ‖G‖₁ = Σ_α |c_α| |α| ≤ degree · Σ|c_α| = ``lipschitz``.

    Arguments:
        n_inputs: number of variables n ≥ 1.
        degree: total degree D ≥ 0; the polynomial has exactly this degree.
        lipschitz: the scale L in (0, 1e100] (``MAX_LIPSCHITZ_BOUND``) with Σ|c| · D = L.
        seed: non-negative integer seed of the coefficients.

    Attributes:
        exponents: int64 array (n_monomials, n_inputs), the multi-indices α.
        coefficients: float64 array (n_monomials,), the c_α.

    Raises:
        ValueError: ``n_inputs < 1``, ``degree < 0``, ``lipschitz`` outside (0, 1e100], a
            negative seed, or more than ``MAX_MONOMIALS`` monomials.
    """

    def __init__(self, n_inputs: int, degree: int, lipschitz: float = 1.0, seed: int = 0):
        self.n_inputs = check_int(n_inputs, "n_inputs", low=1)
        self.degree = check_int(degree, "degree", low=0)
        self.lipschitz = check_real(lipschitz, "lipschitz", low=0.0, high=MAX_LIPSCHITZ_BOUND,
                                    low_open=True)
        self.seed = check_seed(seed)
        n_monomials = int(comb(self.n_inputs + self.degree, self.degree, exact=True))
        if n_monomials > MAX_MONOMIALS:
            raise ValueError(
                f"n_inputs={self.n_inputs}, degree={self.degree} give {n_monomials} monomials; "
                f"at most {MAX_MONOMIALS} are allowed"
            )
        self.exponents, self._parent, self._variable = _monomials(self.n_inputs, self.degree)
        rng = np.random.default_rng(self.seed)
        c = rng.uniform(-1.0, 1.0, size=n_monomials)
        self.coefficients = c * (self.lipschitz / max(self.degree, 1) / np.abs(c).sum())
        # Monomials of degree d occupy the slice _levels[d] (graded order).
        sizes = [int(comb(self.n_inputs + d - 1, d, exact=True)) for d in range(self.degree + 1)]
        ends = np.cumsum(sizes)
        self._levels = [slice(int(e - s), int(e)) for s, e in zip(sizes, ends)]

    @property
    def lipschitz_bound(self) -> float:
        """‖G‖₂ with G_i = Σ_α |c_α| α_i (derivation in the class docstring)."""
        G = np.abs(self.coefficients) @ self.exponents
        return float(np.linalg.norm(G))

    def config(self) -> dict[str, Any]:
        return {"family": "RandomPolynomial", "n_inputs": self.n_inputs, "degree": self.degree,
                "lipschitz": self.lipschitz, "seed": self.seed}

    def monomial_features(self, X: np.ndarray) -> np.ndarray:
        """The monomials x^α at each point, in the order of ``exponents`` (graded).

        Arguments:
            X: real array (N, n_inputs), finite, inside [-1, 1]^n_inputs.

        Returns:
            float64 array (N, n_monomials); p(X) = monomial_features(X) @ coefficients.

        Raises:
            ValueError: ``X`` not (N, n_inputs), not finite, or outside [-1, 1]^n_inputs.
        """
        X = check_in_cube(check_points(X, self.n_inputs))
        return np.concatenate(list(self._blocks(np.ascontiguousarray(X.T))), axis=0).T

    def _blocks(self, XT):
        """Yield the monomials of degree 0, 1, …, D, each block (n_level, N); works for numpy
        arrays and torch tensors alike (a degree-d monomial is a degree-(d−1) one × x_i)."""
        block = XT[:1] * 0 + 1
        yield block
        for previous, level in zip(self._levels, self._levels[1:]):
            rows = self._parent[level] - previous.start
            variables = self._variable[level]
            if isinstance(XT, torch.Tensor):
                rows = torch.as_tensor(rows, device=XT.device)
                variables = torch.as_tensor(variables, device=XT.device)
            block = block[rows] * XT[variables]
            yield block

    def _numpy(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], _CHUNK):
            XT = np.ascontiguousarray(X[start:start + _CHUNK].T)  # (n, chunk)
            out[start:start + _CHUNK] = sum(
                self.coefficients[level] @ block
                for level, block in zip(self._levels, self._blocks(XT))
            )
        return out

    def _torch(self, X: torch.Tensor) -> torch.Tensor:
        c = self._param(self.coefficients, X)
        XT = X.T  # (n, N)
        return sum(c[level] @ block for level, block in zip(self._levels, self._blocks(XT)))


def _monomials(n: int, degree: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exponents (M, n) in graded order, and for each monomial of degree ≥ 1 the index of the
    monomial of one degree less that it extends and the variable it multiplies by."""
    index: dict[tuple[int, ...], int] = {(): 0}
    exponents = [np.zeros(n, dtype=np.int64)]
    parent, variable = [0], [0]
    for d in range(1, degree + 1):
        for combo in itertools.combinations_with_replacement(range(n), d):
            index[combo] = len(exponents)
            exponents.append(np.bincount(combo, minlength=n).astype(np.int64))
            parent.append(index[combo[:-1]])
            variable.append(combo[-1])
    return np.array(exponents), np.array(parent, dtype=np.int64), np.array(variable, dtype=np.int64)
