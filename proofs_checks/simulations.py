"""§3: the DSM(d, s, t) model simulates interpolation, k-NN regression, Switch and Scaling
Transformer layers and the LSH(d, s, m) model — exactly.

Each ``simulate_*`` function builds the DSM of the paper's construction,
g(x) = (A ∘ mask(x)) φ(x) with an s-sparse mask, next to an independent implementation of the
simulated model, and returns both outputs on random inputs; the claim is that they agree
(to 1e-6) with a mask of at most s ones in width t.

* Interpolation, DSM(d, 1, t): φ(x) = Bx, A_i = f(x_i)/⟨b_i, x_i⟩, mask(x_i) = e_i; g(x_i)
  must equal f(x_i) at the t points.
* k-NN regression on unit vectors, DSM(d, k, n): rows of B are the n stored unit vectors,
  A = f(b)/k, φ(x) = σ(Bx) = the indicator of the k largest inner products
  (``routing.topk.topk_mask``), mask = the same; reference: the k Euclidean nearest
  neighbours by ``scipy.spatial.cKDTree`` (‖x − b‖² = 2 − 2⟨x, b⟩ on the sphere; the paper
  writes the norm without the square).
* Switch layer, DSM(d, s, s·ℓ): ℓ experts of s ReLU units each, router argmax of Rx; the mask
  is the block of the chosen expert. Reference: a loop evaluating the chosen expert only.
* Scaling-Transformer layer, DSM(d, s, t): s blocks of t/s units, one unit per block chosen
  by a controller's argmax; A^x = (α_1 e_{i_1}, …, α_s e_{i_s}). Reference: a loop over
  blocks.
* LSH(d, s, m) = DSM(d, s, s·2^m): s tables of m hyperplane bits (``HyperplaneLSH``), one
  bucket value per bucket fitted by ``LSHTable`` (degree 0); the DSM has φ(x) = 1,
  mask(x) = one position i·2^m + key_i(x) per table and A = bucket values / s (empty buckets:
  the table's fallback, the global mean / s). Reference: ``LSHTable.predict``.

Source: Baykal et al. 2022, §3 (interpolation, k-NN), §3.1 (Switch, Scaling Transformers),
§3.2 (LSH model as DSM).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial import cKDTree

from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial, UniformCube
from lipschitz.validation import check_int, check_real
from proofs_checks._framework import Check, CheckParams, CheckResult, Verdict, child_seeds, register
from proofs_checks._plots import plt, save_figure
from routing.hyperplane_lsh import HyperplaneLSH
from routing.lsh_table import LSHTable
from routing.topk import topk_mask

__all__ = ["dsm_output", "SimulationOutcome", "simulate_interpolation", "simulate_knn",
           "simulate_switch", "simulate_scaling", "simulate_lsh", "SimulationsParams",
           "SimulationsCheck", "SIMULATIONS", "TOLERANCE"]

#: Largest |DSM − reference| accepted (the issue's 1e-6).
TOLERANCE = 1e-6


def dsm_output(A: np.ndarray, mask: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """g(x) = (A ∘ mask(x)) φ(x) for a batch (Baykal et al. 2022, §2.1).

    Arguments:
        A: float (t,) the weights. mask: bool (N, t). phi: float (N, t).

    Returns:
        float64 (N,).

    Raises:
        ValueError: inconsistent shapes.
    """
    A, mask, phi = np.asarray(A, np.float64), np.asarray(mask, bool), np.asarray(phi, np.float64)
    if A.ndim != 1 or mask.shape != phi.shape or mask.ndim != 2 or mask.shape[1] != A.shape[0]:
        raise ValueError(f"need A (t,), mask and phi (N, t); got {A.shape}, {mask.shape}, "
                         f"{phi.shape}")
    return (mask * A[None, :] * phi).sum(axis=1)


@dataclass(frozen=True)
class SimulationOutcome:
    """A DSM next to the model it simulates, on the same inputs.

    Attributes:
        name: which simulation.
        dsm: float64 (N,) outputs of the DSM. reference: float64 (N,) of the simulated model.
        d, s, t: the DSM(d, s, t) class: input dimension, sparsity, width.
        max_active: the largest number of ones in a mask row (must be ≤ s).
    """

    name: str
    dsm: np.ndarray
    reference: np.ndarray
    d: int
    s: int
    t: int
    max_active: int

    @property
    def max_abs_difference(self) -> float:
        """max |dsm − reference| (0.0 for no inputs)."""
        return float(np.max(np.abs(self.dsm - self.reference), initial=0.0))

    @property
    def exact(self) -> bool:
        """True when the outputs agree to ``TOLERANCE`` and the mask is s-sparse."""
        return self.max_abs_difference <= TOLERANCE and self.max_active <= self.s


def simulate_interpolation(target, n_points: int, seed: int = 0) -> SimulationOutcome:
    """DSM(d, 1, t) interpolating ``target`` at t = ``n_points`` uniform points of the cube.

    Raises:
        ValueError: n_points < 1 or a negative seed.
    """
    t = check_int(n_points, "n_points", 1)
    d = target.n_inputs
    s_x, s_b = child_seeds(seed, 2, 10)
    X = UniformCube(d).sample(t, seed=s_x)  # (t, d)
    B = np.random.default_rng(s_b).standard_normal((t, d))  # rows b_i
    phi = X @ B.T  # (t, t): σ = identity, φ(x) = Bx
    A = target(X) / np.diag(phi)  # A_i = f(x_i) / ⟨b_i, x_i⟩, the very φ_i(x_i) of the net
    mask = np.eye(t, dtype=bool)  # mask(x_i) = e_i
    return SimulationOutcome("interpolation", dsm_output(A, mask, phi), target(X), d, 1, t,
                             int(mask.sum(axis=1).max()))


def simulate_knn(target, n_memory: int, k: int, n_queries: int, seed: int = 0,
                 topk: Callable = topk_mask) -> SimulationOutcome:
    """DSM(d, k, n) computing k-NN regression of ``target`` over n unit vectors.

    Arguments:
        target: f on [-1, 1]^d (unit vectors lie in the cube).
        n_memory: n stored unit vectors. k: neighbours, 1..n. n_queries: unit-vector queries.
        topk: the Top-K mask function (scores (N, n), k) -> bool (N, n); tests plant a
            broken one.

    Raises:
        ValueError: sizes out of range or a negative seed.
    """
    n = check_int(n_memory, "n_memory", 1)
    k = check_int(k, "k", 1, n)
    q = check_int(n_queries, "n_queries", 1)
    d = target.n_inputs
    rng = np.random.default_rng(child_seeds(seed, 1, 11)[0])
    Bm = rng.standard_normal((n, d))
    Bm /= np.linalg.norm(Bm, axis=1, keepdims=True)
    Xq = rng.standard_normal((q, d))
    Xq /= np.linalg.norm(Xq, axis=1, keepdims=True)
    A = target(Bm) / k
    sigma = np.asarray(topk(Xq @ Bm.T, k), dtype=bool)  # (q, n): σ(Bx), the top-k indicator
    dsm = dsm_output(A, sigma, sigma.astype(np.float64))
    _, nn = cKDTree(Bm).query(Xq, k=k)
    reference = target(Bm)[np.asarray(nn).reshape(q, k)].mean(axis=1)
    return SimulationOutcome("knn", dsm, reference, d, k, n, int(sigma.sum(axis=1).max()))


def simulate_switch(dim: int, n_experts: int, expert_width: int, n_inputs: int,
                    seed: int = 0) -> SimulationOutcome:
    """DSM(d, s, s·ℓ) equal to a Switch layer of ℓ experts with s ReLU units each.

    Raises:
        ValueError: sizes < 1 or a negative seed.
    """
    d = check_int(dim, "dim", 1)
    ell = check_int(n_experts, "n_experts", 1)
    s = check_int(expert_width, "expert_width", 1)
    N = check_int(n_inputs, "n_inputs", 1)
    rng = np.random.default_rng(child_seeds(seed, 1, 12)[0])
    t = s * ell
    B = rng.standard_normal((t, d))  # expert e owns rows e·s .. (e+1)·s − 1
    A = rng.standard_normal(t)  # A = concat(A_1, …, A_ℓ)
    R = rng.standard_normal((ell, d))  # router
    X = rng.uniform(-1, 1, (N, d))
    route = np.argmax(X @ R.T, axis=1)  # R(x)
    mask = (np.arange(t)[None, :] // s) == route[:, None]
    dsm = dsm_output(A, mask, np.maximum(X @ B.T, 0.0))
    reference = np.empty(N)
    for i, (x, e) in enumerate(zip(X, route)):  # only the chosen expert is evaluated
        block = slice(e * s, (e + 1) * s)
        reference[i] = A[block] @ np.maximum(B[block] @ x, 0.0)
    return SimulationOutcome("switch", dsm, reference, d, s, t, int(mask.sum(axis=1).max()))


def simulate_scaling(dim: int, n_blocks: int, block_size: int, n_inputs: int,
                     seed: int = 0) -> SimulationOutcome:
    """DSM(d, s, t) equal to a Scaling-Transformer layer: s blocks of t/s units, one active
    unit per block chosen by a controller.

    Raises:
        ValueError: sizes < 1 or a negative seed.
    """
    d = check_int(dim, "dim", 1)
    s = check_int(n_blocks, "n_blocks", 1)
    size = check_int(block_size, "block_size", 1)
    N = check_int(n_inputs, "n_inputs", 1)
    rng = np.random.default_rng(child_seeds(seed, 1, 13)[0])
    t = s * size
    B = rng.standard_normal((t, d))
    A = rng.standard_normal(t)  # α for every unit; A^x keeps one per block
    ctrl = rng.standard_normal((t, d))  # controller scores, one per unit
    X = rng.uniform(-1, 1, (N, d))
    choice = np.argmax((X @ ctrl.T).reshape(N, s, size), axis=2)  # (N, s): i_b
    mask = np.zeros((N, s, size), bool)
    np.put_along_axis(mask, choice[:, :, None], True, axis=2)
    mask = mask.reshape(N, t)
    dsm = dsm_output(A, mask, np.maximum(X @ B.T, 0.0))
    reference = np.zeros(N)
    for i in range(N):
        for b in range(s):
            unit = b * size + choice[i, b]
            reference[i] += A[unit] * max(B[unit] @ X[i], 0.0)  # α_b · φ_{i_b}(x)
    return SimulationOutcome("scaling", dsm, reference, d, s, t, int(mask.sum(axis=1).max()))


def simulate_lsh(target, n_tables: int, n_bits: int, n_train: int, n_queries: int,
                 seed: int = 0) -> SimulationOutcome:
    """DSM(d, s, s·2^m) equal to the LSH(d, s, m) model (``LSHTable`` on a ``HyperplaneLSH``).

    Raises:
        ValueError: n_tables < 1, n_bits outside 1..12 (the DSM is materialised), sizes < 1.
    """
    s = check_int(n_tables, "n_tables", 1)
    m = check_int(n_bits, "n_bits", 1, 12)
    n = check_int(n_train, "n_train", 1)
    q = check_int(n_queries, "n_queries", 1)
    d = target.n_inputs
    s_h, s_x, s_q = child_seeds(seed, 3, 14)
    hasher = HyperplaneLSH(d, m, s, seed=s_h)
    X = UniformCube(d).sample(n, seed=s_x)
    Xq = UniformCube(d).sample(q, seed=s_q)
    table = LSHTable(hasher).fit(X, target(X))
    t = s * 2**m
    A = np.full(t, table.y_mean_ / s)  # empty buckets: the table's fallback
    for i in range(s):
        keys, coef = table.bucket_values(i)
        A[i * 2**m + keys] = coef[:, 0] / s
    keys = np.asarray(hasher.bucket_ids(Xq))  # (q, s) in [0, 2^m)
    mask = np.zeros((q, t), bool)
    mask[np.arange(q)[:, None], np.arange(s)[None, :] * 2**m + keys] = True
    dsm = dsm_output(A, mask, np.ones((q, t)))
    return SimulationOutcome("lsh", dsm, table.predict(Xq), d, s, t, int(mask.sum(axis=1).max()))


def _random_target(rng: np.random.Generator, dim: int):
    kind = rng.integers(3)
    seed = int(rng.integers(2**31))
    if kind == 0:
        return RandomPolynomial(dim, int(rng.integers(1, 4)), seed=seed)
    if kind == 1:
        return RandomHypercubeFunction(dim, seed=seed)
    return RandomMLP(dim, (16,), seed=seed)


#: name -> function (rng, params, topk) -> SimulationOutcome drawing one random instance.
SIMULATIONS: dict[str, Callable] = {
    "interpolation": lambda rng, p, topk: simulate_interpolation(
        _random_target(rng, int(rng.integers(1, p.max_dim + 1))), int(rng.integers(1, 64)),
        int(rng.integers(2**31))),
    "knn": lambda rng, p, topk: simulate_knn(
        _random_target(rng, int(rng.integers(2, p.max_dim + 1))), int(rng.integers(5, 200)),
        int(rng.integers(1, 5)), 50, int(rng.integers(2**31)), topk=topk),
    "switch": lambda rng, p, topk: simulate_switch(
        int(rng.integers(1, p.max_dim + 1)), int(rng.integers(1, 9)), int(rng.integers(1, 17)),
        50, int(rng.integers(2**31))),
    "scaling": lambda rng, p, topk: simulate_scaling(
        int(rng.integers(1, p.max_dim + 1)), int(rng.integers(1, 9)), int(rng.integers(1, 17)),
        50, int(rng.integers(2**31))),
    "lsh": lambda rng, p, topk: simulate_lsh(
        _random_target(rng, int(rng.integers(1, p.max_dim + 1))), int(rng.integers(1, 5)),
        int(rng.integers(1, 9)), int(rng.integers(1, 500)), 50, int(rng.integers(2**31))),
}


@dataclass(frozen=True)
class SimulationsParams(CheckParams):
    """Parameters of the §3 check (defaults: the quick preset).

    Attributes:
        n_instances: random instances per simulation.
        max_dim: largest input dimension drawn.
        tolerance: largest accepted |DSM − reference|.
    """

    n_instances: int = 20
    max_dim: int = 12
    tolerance: float = TOLERANCE

    @classmethod
    def full(cls):
        return cls(n_instances=200)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.n_instances, "n_instances", 1)
        check_int(self.max_dim, "max_dim", 2, 16)
        check_real(self.tolerance, "tolerance", 0.0, None)


@register
class SimulationsCheck(Check):
    """The five simulations of §3 on random instances (module docstring).

    Arguments:
        params: ``SimulationsParams``.
        topk: the Top-K mask used by the k-NN simulation (default ``routing.topk.topk_mask``);
            tests plant a broken one.
    """

    name = "simulations"
    claim = ("DSM(d,1,t) interpolates t points; DSM(d,k,n) = k-NN regression on unit vectors; "
             "DSM simulates Switch and Scaling-Transformer layers; LSH(d,s,m) = DSM(d,s,s·2^m)")
    source = "Baykal et al. 2022, §3, §3.1, §3.2"
    Params = SimulationsParams

    def __init__(self, params: SimulationsParams | None = None, topk: Callable | None = None):
        super().__init__(params)
        self.topk = topk or topk_mask

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        per_sim = {}
        for j, (name, draw) in enumerate(SIMULATIONS.items()):
            rng = np.random.default_rng(child_seeds(seed, 1, 20, j)[0])
            outcomes = [draw(rng, p, self.topk) for _ in range(p.n_instances)]
            diffs = [o.max_abs_difference for o in outcomes]
            per_sim[name] = {
                "max_abs_difference": max(diffs),
                "n_instances": len(outcomes),
                "n_failed": sum(not (d <= p.tolerance and o.max_active <= o.s)
                                for d, o in zip(diffs, outcomes)),
                "classes": sorted({f"DSM(d={o.d}, s={o.s}, t={o.t})" for o in outcomes})[:5],
            }
        failed = {n: v["n_failed"] for n, v in per_sim.items() if v["n_failed"]}
        plots = self._plot(per_sim, p.tolerance, out)
        worst = max(v["max_abs_difference"] for v in per_sim.values())
        verdict = Verdict.REFUTED if failed else Verdict.HOLDS
        return self.result(
            seed=seed, measured=worst, bound=p.tolerance,
            measured_text=f"max |DSM − model| = {worst:.2e} over "
                          f"{p.n_instances * len(SIMULATIONS)} instances"
                          + (f"; failed: {failed}" if failed else ""),
            bound_text=f"≤ {p.tolerance:g}, mask s-sparse",
            verdict=verdict, details={"per_simulation": per_sim}, plots=plots)

    @staticmethod
    def _plot(per_sim, tolerance, out):
        if out is None:
            return []
        fig, ax = plt.subplots(figsize=(5, 3.2))
        names = list(per_sim)
        values = [max(per_sim[n]["max_abs_difference"], 1e-18) for n in names]
        ax.bar(names, values)
        ax.axhline(tolerance, color="k", ls="--", lw=1, label=f"tolerance {tolerance:g}")
        ax.set_yscale("log")
        ax.set_ylabel("max |DSM − simulated model|")
        ax.legend(fontsize=7)
        return save_figure(fig, out, "simulations.png")
