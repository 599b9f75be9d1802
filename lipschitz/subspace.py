"""Input distributions on the cube and on a random k-dimensional subspace of it (the input
model of Baykal et al. 2022, Theorem 4.1 and Lemma 4.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit
from scipy.optimize import linprog

from routing.validation import check_allocation, check_int, check_seed

_MAX_BATCH = 1 << 16
_MIN_BATCH = 1 << 10
_MIN_RATE = 0.05  # the rate assumed before any draw, and the lowest one trusted


class UniformCube:
    """The uniform distribution on [-1, 1]^dim.

    Arguments:
        dim: dimension ≥ 1.

    Raises:
        ValueError: ``dim < 1``, or a dim so large that one point would not fit in memory.
    """

    def __init__(self, dim: int):
        self.dim = check_int(dim, "dim", low=1)
        check_allocation(self.dim, 8, "dim", self.dim, "one float64 point")

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw ``n`` points: float64 array (n, dim).

        Raises:
            ValueError: n < 0, seed < 0, or an (n, dim) sample larger than this machine's
                memory.
        """
        n, seed = check_int(n, "n", low=0), check_seed(seed)
        check_allocation(n * self.dim, 8, "n", n, f"the ({n}, {self.dim}) float64 sample")
        return np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, self.dim))

    def config(self) -> dict[str, Any]:
        return {"family": "UniformCube", "dim": self.dim}


class UniformSubspace:
    r"""The uniform distribution on Γ = S ∩ [-1, 1]^dim for a random k-dimensional subspace S.

    The set Γ of Baykal et al. 2022, Theorem 4.1 and Lemma 4.2. S is the span of ``basis``
    (dim, k), orthonormal columns: the Q factor of a Gaussian (dim, k) matrix with the signs
    fixed so that R has a positive diagonal (a Haar-random subspace). A point is x = basis @ z
    with z in the polytope P = {z ∈ R^k : −1 ≤ basis z ≤ 1}; since the basis is orthonormal,
    the map z ↦ x preserves k-dimensional volume, so uniform z on P gives uniform x on Γ.

    Sampling is exact rejection sampling: z is drawn uniform in P's bounding box
    [lo_j, hi_j] (each bound the optimum of a linear program, ``scipy.optimize.linprog``) and
    accepted when ‖basis z‖∞ ≤ 1. The acceptance rate is vol(P) / vol(box): 1 for k = 1
    (P is an interval and equals its box), and for large dim P is close to a ball, so the rate
    tends to that of a ball in a cube, π^(k/2) / (Γ(k/2 + 1) 2^k) — about 0.016 at k = 8 —
    which is why k ≤ 8 is the supported range. ``acceptance_rate`` reports the rate measured
    over all draws so far; a candidate is first tested against the ``_n_screen`` rows of the
    basis most likely to be violated, so most rejections cost O(k · _n_screen), not O(k · dim).

    Arguments:
        dim: ambient dimension in 1..4096.
        k: subspace dimension in 1..min(dim, 8).
        seed: non-negative integer seed of the subspace (sampling has its own seed).

    Attributes:
        basis: float64 (dim, k) with orthonormal columns.
        box_low, box_high: float64 (k,), the bounding box of P in subspace coordinates.

    Raises:
        ValueError: ``dim`` or ``k`` out of range (in particular ``k > dim``), a negative seed.
    """

    MAX_K = 8
    MAX_DIM = 4096

    def __init__(self, dim: int, k: int, seed: int = 0):
        self.dim = check_int(dim, "dim", low=1, high=self.MAX_DIM)
        self.k = check_int(k, "k", low=1, high=min(self.dim, self.MAX_K))
        self.seed = check_seed(seed)
        rng = np.random.default_rng(self.seed)
        Q, R = np.linalg.qr(rng.standard_normal((self.dim, self.k)))
        self.basis = Q * np.sign(np.diag(R))
        self.frame, self.box_low, self.box_high = _enclosing_parallelotope(self.basis)
        self._frame_inv_T = np.linalg.inv(self.frame).T
        # constraint rows most often violated first, so most candidates are rejected early
        order = np.argsort(-np.linalg.norm(self.basis, axis=1))
        self._rows = np.ascontiguousarray(self.basis[order])
        self._n_drawn = 0
        self._n_accepted = 0

    @property
    def acceptance_rate(self) -> float:
        """Accepted / drawn candidates over all ``sample`` calls so far (nan before any)."""
        return self._n_accepted / self._n_drawn if self._n_drawn else float("nan")

    @property
    def expected_acceptance_rate(self) -> float:
        """vol(P) / vol(enclosing parallelotope), computed exactly for k ≤ 4 (vertices of P
        with scipy.spatial.HalfspaceIntersection and ConvexHull), 1 for k = 1; nan for k > 4."""
        if self.k == 1:
            return 1.0
        if self.k > 4:
            return float("nan")
        from scipy.spatial import ConvexHull, HalfspaceIntersection

        halfspaces = np.vstack([np.hstack([self.basis, -np.ones((self.dim, 1))]),
                                np.hstack([-self.basis, -np.ones((self.dim, 1))])])
        vertices = HalfspaceIntersection(halfspaces, np.zeros(self.k)).intersections
        volume_box = np.prod(self.box_high - self.box_low) / abs(np.linalg.det(self.frame))
        return float(ConvexHull(vertices).volume / volume_box)

    def sample_coordinates(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw ``n`` points of P in subspace coordinates: float64 (n, k).

        Raises:
            ValueError: n < 0, seed < 0, or an (n, k) sample too large for memory.
        """
        n, seed = check_int(n, "n", low=0), check_seed(seed)
        check_allocation(n * self.k, 8, "n", n, f"the ({n}, {self.k}) float64 coordinates")
        rng = np.random.default_rng(seed)
        out = np.empty((n, self.k))
        filled = 0
        while filled < n:
            batch = self._batch_for(n - filled)
            z = rng.uniform(self.box_low, self.box_high, size=(batch, self.k)) @ self._frame_inv_T
            alive = np.empty(batch, np.int64)
            alive = alive[:_inside(z, self._rows, alive)]
            if len(alive) > n - filled:  # count candidates up to the last one used only,
                take = alive[: n - filled]  # so that the measured rate is unbiased
                self._n_drawn += int(take[-1]) + 1
            else:
                take = alive
                self._n_drawn += batch
            self._n_accepted += len(take)
            out[filled:filled + len(take)] = z[take]
            filled += len(take)
        return out

    def _batch_for(self, needed: int) -> int:
        """Candidates to draw for ``needed`` more points: a quarter more than the acceptance
        rate measured so far says they need (at least _MIN_BATCH, at most _MAX_BATCH). The
        stream of candidates is the same whatever the batches (a Generator's draws continue
        where the last one stopped, and the unused rest of a batch is dropped with the
        generator), so the points do not depend on this choice; only the wasted draws do:
        a fixed _MAX_BATCH drew 65,536 candidates for 4,096 points at rate 0.6."""
        rate = max(self.acceptance_rate, _MIN_RATE) if self._n_drawn else _MIN_RATE
        return int(min(_MAX_BATCH, max(_MIN_BATCH, math.ceil(1.25 * needed / rate))))

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Draw ``n`` points uniform on Γ: float64 (n, dim), in [-1, 1]^dim and in span(basis).

        Raises:
            ValueError: n < 0, seed < 0, or an (n, dim) sample too large for memory.
        """
        n = check_int(n, "n", low=0)
        check_allocation(n * (self.dim + self.k), 8, "n", n,
                         f"the ({n}, {self.dim}) float64 sample and its coordinates")
        x = self.sample_coordinates(n, seed) @ self.basis.T
        return np.clip(x, -1.0, 1.0)  # rounding only: accepted points satisfy |x_i| <= 1

    def config(self) -> dict[str, Any]:
        return {"family": "UniformSubspace", "dim": self.dim, "k": self.k, "seed": self.seed}


@njit(cache=True)
def _inside(z, rows, out):
    """Write the indices i (increasing) of the candidates with |rows · z_i| ≤ 1 for every
    row into ``out``; return their number. z: (n, k) float64 candidates, rows: (dim, k)
    float64 constraints (most often violated first), out: (n,) int64. A candidate is
    dropped at its first violated row: 5–8x faster than blocks of numpy products (dim = 8,
    k ≤ 4, 65,536 candidates: 1.1–1.7 against 8.5–9.1 ms)."""
    n = 0
    k = z.shape[1]
    for i in range(z.shape[0]):
        ok = True
        for j in range(rows.shape[0]):
            s = 0.0
            for c in range(k):
                s += z[i, c] * rows[j, c]
            if not abs(s) <= 1.0:  # NaN is outside, as in numpy's comparison
                ok = False
                break
        if ok:
            out[n] = i
            n += 1
    return n


def _enclosing_parallelotope(basis: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A parallelotope {z : low ≤ W z ≤ high} containing P = {z : |basis z| ≤ 1}, tight in
    each of its directions (each bound is a linear program). Two frames W are tried — the
    identity (the axis-aligned bounding box) and the k rows of ``basis`` with the largest
    determinant (QR with column pivoting; for dim = k this is P itself) — and the one of
    smaller volume Π(high − low) / |det W| is returned as (W, low, high)."""
    from scipy.linalg import qr

    k = basis.shape[1]
    pivots = qr(basis.T, pivoting=True, mode="r")[1][:k]
    best = None
    for frame in (np.eye(k), basis[pivots]):
        low, high = _bounding_box(basis, frame)
        volume = np.prod(high - low) / abs(np.linalg.det(frame))
        if best is None or volume < best[0]:
            best = (volume, frame, low, high)
    return best[1], best[2], best[3]


def _bounding_box(basis: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min and max of each (frame z)_j over {z : −1 ≤ basis z ≤ 1}: 2k linear programs."""
    dim, k = basis.shape
    A = np.vstack([basis, -basis])
    b = np.ones(2 * dim)
    low, high = np.empty(k), np.empty(k)
    for j in range(k):
        for sign, store in ((1.0, low), (-1.0, high)):
            res = linprog(sign * frame[j], A_ub=A, b_ub=b, bounds=[(None, None)] * k,
                          method="highs")
            if res.status != 0:  # pragma: no cover - P is bounded and contains 0
                raise RuntimeError(f"bounding-box linear program failed: {res.message}")
            store[j] = sign * res.fun
    # widen by rounding slack so that no point of P falls outside the box
    slack = 1e-9 * np.maximum(1.0, np.abs(np.concatenate([low, high])).max())
    return low - slack, high + slack
