"""§3: the DSM(d, s, t) model simulates interpolation, k-NN regression, Switch and Scaling
Transformer layers and the LSH(d, s, m) model — exact identities, true by algebra.

These are not empirical findings: each construction of §3 is an identity between two
formulas, and the check verifies it to rounding (|DSM − model| ≤ 1e-6, mask s-sparse) on
random instances, so that a bug in either implementation, or a construction that is not the
paper's, shows. A holding check prints *exact identity*; its power is measured on planted
non-identities (below), which must be refuted.

Each ``simulate_*`` function builds the DSM of the paper's construction,
g(x) = (A ∘ mask(x)) φ(x) with an s-sparse mask, next to an independent implementation of the
simulated model, and returns both outputs on random inputs. Every construction takes the
object its DSM is built from as an argument (``memory``, ``topk``, ``block_map``,
``controller``, ``mask_hasher``), so a planted non-identity is a real object passed through
the same code, never a patched comparison.

* Interpolation, DSM(d, 1, t): φ(x) = Bx, A_i = y_i/⟨b_i, x_i⟩ for the stored pairs
  (x_i, y_i = f(x_i)) (``memory``), mask(x_i) = e_i; g(x_i) must equal f(x_i) at the t points.
* k-NN regression on unit vectors, DSM(d, k, n): rows of B are the n stored unit vectors,
  A = f(b)/k, φ(x) = σ(Bx) = the indicator of the k largest inner products (``topk``,
  default ``routing.topk.topk_mask``), mask = the same; reference: the k Euclidean nearest
  neighbours by ``scipy.spatial.cKDTree`` (‖x − b‖² = 2 − 2⟨x, b⟩ on the sphere; the paper
  writes the norm without the square).
* Switch layer, DSM(d, s, s·ℓ): ℓ experts of s ReLU units each, router argmax of Rx; the mask
  is the block ``block_map[e]`` of the chosen expert e (default: block e). Reference: a loop
  evaluating the chosen expert only.
* Scaling-Transformer layer, DSM(d, s, t): s blocks of t/s units, one unit per block chosen
  by the controller's argmax; A^x = (α_1 e_{i_1}, …, α_s e_{i_s}). The DSM's mask comes from
  ``controller`` (default: the argmax per block). Reference: a loop over blocks.
* LSH(d, s, m) = DSM(d, s, s·2^m): s tables of m hyperplane bits (``HyperplaneLSH``), one
  bucket value per bucket fitted by ``LSHTable`` (degree 0); the DSM has φ(x) = 1,
  mask(x) = one position i·2^m + key_i(x) per table, the keys from ``mask_hasher(hasher)``
  (default: the table's own hasher), and A = bucket values / s (empty buckets: the table's
  fallback, the global mean / s). Reference: ``LSHTable.predict``.

Decision (``SimulationsCheck.rule``): exact identity when every instance of every simulation
agrees to ``tolerance`` with a mask of at most s ones; refuted when one instance does not.
Each simulation is a decisive part (``details["parts"]``). Calibration: none (an identity has
no constant to estimate); validation: every instance.

**SVI** (``smallest_violations``), per simulation: a construction that departs from the
paper's on a fraction q = 0.25 of the random instances (a construction wrong for one class of
inputs, experts or tables is a wrong construction; rarer departures, ties of measure zero,
are what the rounding tolerance covers). With n instances a run detects it with probability
1 − (1 − q)^n: 0.9998 at quick (n = 30), 0.68 at tiny (n = 4).

Planted non-identities (``SimulationsCheck.planted_violations``), per simulation, each run
drawing that simulation alone (``only``: the same instances a full run draws) and counted by
its part: the real object departing on a fraction q of the instances — q = 0.25 (the SVI),
0.1 and 1 (the power curve) — decided per instance from the instance itself (its random
stream, or ``instance_uniform`` of its scores or hasher): interpolation from a wrong stored
point (``WrongPointMemory``); k-NN whose DSM keeps k + 1 winners (``WrongKTopK(+1)``; k − 1
on every instance is a row that does not gate: it changes nothing at k = 1); Switch with a
shuffled expert→block map (``ShuffledBlockMap``, a derangement; no departure with one
expert); a Scaling-Transformer controller that activates the runner-up unit of each block
(``RunnerUpController``; none with one unit per block); the LSH DSM with every table's keys
off by one bucket (``OffByOneKeys``; invisible where both buckets hold the fallback). Where
an object cannot depart on an instance, the departing fraction is a little below q.

Source: Baykal et al. 2022, §3 (interpolation, k-NN), §3.1 (Switch, Scaling Transformers),
§3.2 (LSH model as DSM).
"""

from __future__ import annotations

import functools
import hashlib
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial import cKDTree

from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial, UniformCube
from routing.validation import check_int, check_real
from proofs_checks._framework import (
    subset_or_none,
    SVI, Check, CheckParams, CheckResult, Planted, Verdict, child_seeds, register,
)
from proofs_checks._plots import plt, save_figure
from routing.hyperplane_lsh import HyperplaneLSH
from routing.lsh_table import LSHTable
from routing.topk import topk_mask

__all__ = ["dsm_output", "SimulationOutcome", "simulate_interpolation", "simulate_knn",
           "simulate_switch", "simulate_scaling", "simulate_lsh", "SimulationsParams",
           "SimulationsCheck", "SIMULATIONS", "TOLERANCE", "exact_memory", "WrongPointMemory",
           "WrongKTopK", "identity_block_map", "ShuffledBlockMap", "argmax_controller",
           "RunnerUpController", "OffByOneKeys", "FAILURE_SVI", "instance_uniform"]

#: Largest |DSM − reference| accepted.
TOLERANCE = 1e-6
#: SVI of every simulation: a construction that departs from the paper's on a quarter of the
#: random instances.
FAILURE_SVI = 0.25


def instance_uniform(array) -> float:
    """A number in [0, 1) that is a fixed function of an array's values (BLAKE2b of its
    float64 bytes): how a planted object that departs from a construction on a fraction q of
    instances decides, without a random state, whether this instance is one of them.

    Arguments:
        array: any array-like of numbers.

    Returns:
        float in [0, 1).
    """
    digest = hashlib.blake2b(np.ascontiguousarray(array, np.float64).tobytes(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


def _fraction(fraction) -> float:
    return check_real(fraction, "fraction", 0.0, 1.0, low_open=True)


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


# ----------------------------------------------------------------------------- the objects
def exact_memory(target, X: np.ndarray, rng: np.random.Generator):
    """The interpolating DSM's memory: the points themselves and their labels.

    Arguments:
        target: f. X: float64 (t, d) the interpolation points. rng: unused.

    Returns:
        (X, f(X)): float64 (t, d) and (t,).
    """
    return X, target(X)


class WrongPointMemory:
    """Planted: the DSM stores one wrong point — row j of X replaced by a fresh uniform point
    x' of the cube (j and x' drawn from ``rng``), with its label f(x'). At x_j the DSM then
    outputs f(x')·⟨b_j, x_j⟩/⟨b_j, x'⟩ instead of f(x_j).

    Arguments:
        fraction: q in (0, 1]: the memory is wrong on an instance with probability q (drawn
            from ``rng``), exact otherwise (1: always wrong).

    Source: planted non-identity for Baykal et al. 2022, §3 (interpolation).
    """

    def __init__(self, fraction: float = 1.0):
        self.fraction = _fraction(fraction)

    def __repr__(self) -> str:
        return f"WrongPointMemory(fraction={self.fraction:g})"

    def __call__(self, target, X: np.ndarray, rng: np.random.Generator):
        if self.fraction < 1 and rng.random() >= self.fraction:
            return exact_memory(target, X, rng)
        X = X.copy()
        j = int(rng.integers(len(X)))
        X[j] = rng.uniform(-1.0, 1.0, X.shape[1])
        return X, target(X)


class WrongKTopK:
    """Planted: a Top-K mask with k + ``offset`` winners (clipped to 1..n) where k is asked.

    Arguments:
        offset: a non-zero int (±1 in the check).
        fraction: q in (0, 1]: wrong on the instances whose scores' ``instance_uniform`` is
            below q, the true Top-K otherwise (1: always wrong).

    Raises:
        ValueError: offset 0, fraction outside (0, 1].

    Source: planted non-identity for Baykal et al. 2022, §3 (k-NN regression).
    """

    def __init__(self, offset: int, fraction: float = 1.0):
        self.offset = check_int(offset, "offset")
        if self.offset == 0:
            raise ValueError("offset must be a non-zero integer, got 0")
        self.fraction = _fraction(fraction)

    def __repr__(self) -> str:
        return f"WrongKTopK({self.offset:+d}, fraction={self.fraction:g})"

    def __call__(self, scores: np.ndarray, k: int) -> np.ndarray:
        n = np.shape(scores)[1]
        if self.fraction < 1 and instance_uniform(scores) >= self.fraction:
            return topk_mask(scores, k)
        return topk_mask(scores, int(np.clip(k + self.offset, 1, n)))


def identity_block_map(n_experts: int, rng: np.random.Generator) -> np.ndarray:
    """Expert e owns block e: int64 (n_experts,) = arange. ``rng`` is unused."""
    return np.arange(n_experts)


class ShuffledBlockMap:
    """Planted: a random derangement of the experts' blocks (no expert keeps its own block;
    identity for a single expert), drawn from ``rng``.

    Arguments:
        fraction: q in (0, 1]: deranged on an instance with probability q (drawn from
            ``rng``), the identity otherwise (1: always deranged).

    Source: planted non-identity for Baykal et al. 2022, §3.1 (Switch layer).
    """

    def __init__(self, fraction: float = 1.0):
        self.fraction = _fraction(fraction)

    def __repr__(self) -> str:
        return f"ShuffledBlockMap(fraction={self.fraction:g})"

    def __call__(self, n_experts: int, rng: np.random.Generator) -> np.ndarray:
        if self.fraction < 1 and rng.random() >= self.fraction:
            return identity_block_map(n_experts, rng)
        perm = rng.permutation(n_experts)
        inverse = np.argsort(perm)
        # perm ∘ (cyclic shift by 1) ∘ perm⁻¹ has no fixed point when n_experts ≥ 2
        return perm[(inverse + 1) % n_experts]


def argmax_controller(scores: np.ndarray, preact: np.ndarray) -> np.ndarray:
    """The Scaling Transformer's controller: one unit per block, the largest score.

    Arguments:
        scores: float (N, s, size) controller scores. preact: (N, s, size), unused.

    Returns:
        bool (N, s, size) with one True per (row, block).
    """
    mask = np.zeros(scores.shape, bool)
    np.put_along_axis(mask, np.argmax(scores, axis=2)[:, :, None], True, axis=2)
    return mask


class RunnerUpController:
    """Planted: the controller activates the second-largest score of each block (the largest
    when a block has one unit).

    Arguments:
        fraction: q in (0, 1]: the runner-up on the instances whose scores'
            ``instance_uniform`` is below q, the argmax otherwise (1: always).

    Source: planted non-identity for Baykal et al. 2022, §3.1 (Scaling Transformers).
    """

    def __init__(self, fraction: float = 1.0):
        self.fraction = _fraction(fraction)

    def __repr__(self) -> str:
        return f"RunnerUpController(fraction={self.fraction:g})"

    def __call__(self, scores: np.ndarray, preact: np.ndarray) -> np.ndarray:
        if self.fraction < 1 and instance_uniform(scores) >= self.fraction:
            return argmax_controller(scores, preact)
        order = np.argsort(-scores, axis=2, kind="stable")
        pick = order[:, :, min(1, scores.shape[2] - 1)]
        mask = np.zeros(scores.shape, bool)
        np.put_along_axis(mask, pick[:, :, None], True, axis=2)
        return mask


class OffByOneKeys:
    """Planted: a hasher whose keys are the wrapped one's shifted by one bucket,
    (key + 1) mod 2^n_bits, in every table.

    Arguments:
        hasher: a ``HyperplaneLSH`` (needs ``n_bits``, ``n_tables``, ``bucket_ids``,
            ``directions``).
        fraction: q in (0, 1]: shifted when ``instance_uniform`` of the hasher's directions
            is below q (one instance, one hasher), the wrapped keys otherwise (1: always).

    Source: planted non-identity for Baykal et al. 2022, §3.2 (the LSH model as a DSM).
    """

    def __init__(self, hasher, fraction: float = 1.0):
        self.hasher = hasher
        self.n_tables = hasher.n_tables
        self.n_bits = hasher.n_bits
        self.fraction = _fraction(fraction)
        self.active = self.fraction >= 1 or instance_uniform(hasher.directions) < self.fraction

    def bucket_ids(self, X) -> np.ndarray:
        """(N, dim) -> (N, n_tables) int64, the wrapped keys + 1 mod 2^n_bits (the wrapped
        keys when this instance is not one of the shifted ones)."""
        keys = np.asarray(self.hasher.bucket_ids(X))
        return (keys + 1) % 2**self.n_bits if self.active else keys


# ----------------------------------------------------------------------------- simulations
def simulate_interpolation(target, n_points: int, seed: int = 0,
                           memory: Callable = exact_memory) -> SimulationOutcome:
    """DSM(d, 1, t) interpolating ``target`` at t = ``n_points`` uniform points of the cube.

    Arguments:
        target: f on [-1, 1]^d. n_points: t ≥ 1. seed: non-negative int.
        memory: (target, X (t, d), rng) -> (X_mem (t, d), y_mem (t,)), the pairs the DSM
            stores (default ``exact_memory``: the points and f at them).

    Returns:
        ``SimulationOutcome``: the DSM and f at the t points.

    Raises:
        ValueError: n_points < 1 or a negative seed.
    """
    t = check_int(n_points, "n_points", 1)
    d = target.n_inputs
    s_x, s_b, s_m = child_seeds(seed, 3, 10)
    X = UniformCube(d).sample(t, seed=s_x)  # (t, d)
    B = np.random.default_rng(s_b).standard_normal((t, d))  # rows b_i
    X_mem, y_mem = memory(target, X, np.random.default_rng(s_m))
    phi = X @ B.T  # (t, t): σ = identity, φ(x) = Bx
    A = np.asarray(y_mem) / np.einsum("td,td->t", B, X_mem)  # A_i = y_i / ⟨b_i, x_i⟩
    mask = np.eye(t, dtype=bool)  # mask(x_i) = e_i
    return SimulationOutcome("interpolation", dsm_output(A, mask, phi), target(X), d, 1, t,
                             int(mask.sum(axis=1).max()))


def simulate_knn(target, n_memory: int, k: int, n_queries: int, seed: int = 0,
                 topk: Callable = topk_mask) -> SimulationOutcome:
    """DSM(d, k, n) computing k-NN regression of ``target`` over n unit vectors.

    Arguments:
        target: f on [-1, 1]^d (unit vectors lie in the cube).
        n_memory: n stored unit vectors. k: neighbours, 1..n. n_queries: unit-vector queries.
        topk: the Top-K mask function (scores (N, n), k) -> bool (N, n) of the DSM.

    Returns:
        ``SimulationOutcome`` on the queries.

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
                    seed: int = 0, block_map: Callable = identity_block_map
                    ) -> SimulationOutcome:
    """DSM(d, s, s·ℓ) equal to a Switch layer of ℓ experts with s ReLU units each.

    Arguments:
        dim: d. n_experts: ℓ. expert_width: s. n_inputs: N inputs uniform on the cube.
        block_map: (ℓ, rng) -> int (ℓ,), the block of the DSM's mask for each expert
            (default ``identity_block_map``).

    Returns:
        ``SimulationOutcome`` on the inputs.

    Raises:
        ValueError: sizes < 1 or a negative seed.
    """
    d = check_int(dim, "dim", 1)
    ell = check_int(n_experts, "n_experts", 1)
    s = check_int(expert_width, "expert_width", 1)
    N = check_int(n_inputs, "n_inputs", 1)
    seed_inst, seed_map = child_seeds(seed, 2, 12)
    rng = np.random.default_rng(seed_inst)
    t = s * ell
    B = rng.standard_normal((t, d))  # expert e owns rows e·s .. (e+1)·s − 1
    A = rng.standard_normal(t)  # A = concat(A_1, …, A_ℓ)
    R = rng.standard_normal((ell, d))  # router
    X = rng.uniform(-1, 1, (N, d))
    route = np.argmax(X @ R.T, axis=1)  # R(x)
    blocks = np.asarray(block_map(ell, np.random.default_rng(seed_map)))[route]  # (N,)
    mask = (np.arange(t)[None, :] // s) == blocks[:, None]
    dsm = dsm_output(A, mask, np.maximum(X @ B.T, 0.0))
    reference = np.empty(N)
    for i, (x, e) in enumerate(zip(X, route)):  # only the chosen expert is evaluated
        block = slice(e * s, (e + 1) * s)
        reference[i] = A[block] @ np.maximum(B[block] @ x, 0.0)
    return SimulationOutcome("switch", dsm, reference, d, s, t, int(mask.sum(axis=1).max()))


def simulate_scaling(dim: int, n_blocks: int, block_size: int, n_inputs: int,
                     seed: int = 0, controller: Callable = argmax_controller
                     ) -> SimulationOutcome:
    """DSM(d, s, t) equal to a Scaling-Transformer layer: s blocks of t/s units, one active
    unit per block chosen by a controller.

    Arguments:
        dim: d. n_blocks: s. block_size: t/s. n_inputs: N inputs uniform on the cube.
        controller: (scores (N, s, size), preactivations Bx (N, s, size)) -> bool
            (N, s, size), the DSM's mask (default ``argmax_controller``).

    Returns:
        ``SimulationOutcome`` on the inputs.

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
    scores = (X @ ctrl.T).reshape(N, s, size)
    preact = X @ B.T  # (N, t)
    mask = np.asarray(controller(scores, preact.reshape(N, s, size)), bool).reshape(N, t)
    dsm = dsm_output(A, mask, np.maximum(preact, 0.0))
    choice = np.argmax(scores, axis=2)  # (N, s): i_b, the Scaling Transformer's own choice
    reference = np.zeros(N)
    for i in range(N):
        for b in range(s):
            unit = b * size + choice[i, b]
            reference[i] += A[unit] * max(B[unit] @ X[i], 0.0)  # α_b · φ_{i_b}(x)
    return SimulationOutcome("scaling", dsm, reference, d, s, t, int(mask.sum(axis=1).max()))


def simulate_lsh(target, n_tables: int, n_bits: int, n_train: int, n_queries: int,
                 seed: int = 0, mask_hasher: Callable | None = None) -> SimulationOutcome:
    """DSM(d, s, s·2^m) equal to the LSH(d, s, m) model (``LSHTable`` on a ``HyperplaneLSH``).

    Arguments:
        target: f. n_tables: s. n_bits: m, 1..12 (the DSM is materialised). n_train: training
            points of the table. n_queries: query points.
        mask_hasher: hasher -> the hasher whose keys place the DSM's mask (default: the
            table's own hasher).

    Returns:
        ``SimulationOutcome`` on the queries.

    Raises:
        ValueError: n_tables < 1, n_bits outside 1..12, sizes < 1.
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
    masker = hasher if mask_hasher is None else mask_hasher(hasher)
    keys = np.asarray(masker.bucket_ids(Xq))  # (q, s) in [0, 2^m)
    mask = np.zeros((q, t), bool)
    mask[np.arange(q)[:, None], np.arange(s)[None, :] * 2**m + keys] = True
    dsm = dsm_output(A, mask, np.ones((q, t)))
    return SimulationOutcome("lsh", dsm, table.predict(Xq), d, s, t, int(mask.sum(axis=1).max()))


# ----------------------------------------------------------------------------- random instances
def _random_target(rng: np.random.Generator, dim: int):
    kind = rng.integers(3)
    seed = int(rng.integers(2**31))
    if kind == 0:
        return RandomPolynomial(dim, int(rng.integers(1, 4)), seed=seed)
    if kind == 1:
        return RandomHypercubeFunction(dim, seed=seed)
    return RandomMLP(dim, (16,), seed=seed)


def _draw_interpolation(rng, p, memory=exact_memory):
    return simulate_interpolation(_random_target(rng, int(rng.integers(1, p.max_dim + 1))),
                                  int(rng.integers(1, 64)), int(rng.integers(2**31)),
                                  memory=memory)


def _draw_knn(rng, p, topk=topk_mask):
    return simulate_knn(_random_target(rng, int(rng.integers(2, p.max_dim + 1))),
                        int(rng.integers(5, 200)), int(rng.integers(1, 5)), 50,
                        int(rng.integers(2**31)), topk=topk)


def _draw_switch(rng, p, block_map=identity_block_map):
    return simulate_switch(int(rng.integers(1, p.max_dim + 1)), int(rng.integers(1, 9)),
                           int(rng.integers(1, 17)), 50, int(rng.integers(2**31)),
                           block_map=block_map)


def _draw_scaling(rng, p, controller=argmax_controller):
    return simulate_scaling(int(rng.integers(1, p.max_dim + 1)), int(rng.integers(1, 9)),
                            int(rng.integers(1, 17)), 50, int(rng.integers(2**31)),
                            controller=controller)


def _draw_lsh(rng, p, mask_hasher=None):
    return simulate_lsh(_random_target(rng, int(rng.integers(1, p.max_dim + 1))),
                        int(rng.integers(1, 5)), int(rng.integers(1, 9)),
                        int(rng.integers(1, 500)), 50, int(rng.integers(2**31)),
                        mask_hasher=mask_hasher)


#: name -> function (rng, params, **objects) -> SimulationOutcome drawing one random instance;
#: the keyword arguments are the objects the DSM is built from (``SimulationsCheck.objects``).
SIMULATIONS: dict[str, Callable] = {
    "interpolation": _draw_interpolation, "knn": _draw_knn, "switch": _draw_switch,
    "scaling": _draw_scaling, "lsh": _draw_lsh,
}


@dataclass(frozen=True)
class SimulationsParams(CheckParams):
    """Parameters of the §3 check (defaults: the quick preset).

    Attributes:
        n_instances: random instances per simulation.
        max_dim: largest input dimension drawn.
        tolerance: largest accepted |DSM − reference|.
        n_power: planted runs per planted non-identity.
    """

    n_instances: int = 30
    max_dim: int = 12
    tolerance: float = TOLERANCE
    n_power: int = 14

    @classmethod
    def tiny(cls):
        """The tiny preset: a smoke run in seconds that decides nothing (4 instances up to d = 6)."""
        return cls(n_instances=4, max_dim=6)

    @classmethod
    def full(cls):
        return cls(n_instances=200, n_power=20)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.n_instances, "n_instances", 1)
        check_int(self.max_dim, "max_dim", 2, 16)
        check_real(self.tolerance, "tolerance", 0.0, None)
        check_int(self.n_power, "n_power", 1)


@register
class SimulationsCheck(Check):
    """The five simulations of §3 on random instances, as exact identities (module docstring).

    Arguments:
        params: ``SimulationsParams``.
        objects: simulation name -> {keyword: object} passed to that simulation's
            construction (``memory``, ``topk``, ``block_map``, ``controller``,
            ``mask_hasher``); the planted non-identities and the tests use it.
        only: the simulations drawn (None: all five). A planted run of one simulation draws
            that one alone: its instances are those a full run draws at the same seed.

    Raises:
        ValueError: an unknown simulation name in ``objects`` or ``only``.
    """

    name = "simulations"
    claim = ("exact identities (§3): DSM(d,1,t) interpolates t points; DSM(d,k,n) = k-NN "
             "regression on unit vectors; DSM = Switch and Scaling-Transformer layers; "
             "LSH(d,s,m) = DSM(d,s,s·2^m)")
    source = "Baykal et al. 2022, §3, §3.1, §3.2"
    Params = SimulationsParams
    identity = True
    post_hoc = (
        "quick instances per simulation raised 20 → 30 after the Switch plant at the SVI was "
        "refuted in 13 of 14 runs at 20 (a single-expert instance cannot depart, so its "
        "departing fraction is 0.22, not 0.25); every real instance agreed at both",
    )
    rule = ("exact identity (holds) when every random instance of every simulation has "
            "max |DSM − model| ≤ tolerance (1e-6) and at most s ones per mask row; refuted "
            "when one instance does not")

    def __init__(self, params: SimulationsParams | None = None,
                 objects: dict[str, dict] | None = None, only=None):
        super().__init__(params)
        self.objects = dict(objects or {})
        unknown = set(self.objects) - set(SIMULATIONS)
        if unknown:
            raise ValueError(f"objects must be keyed by simulations {sorted(SIMULATIONS)}, "
                             f"got {sorted(unknown)}")
        self.only = subset_or_none(only, "only", sorted(SIMULATIONS))

    def smallest_violations(self) -> list[SVI]:
        return [SVI(name, FAILURE_SVI,
                    "fraction q of random instances on which the DSM's construction departs "
                    "from the paper's (outputs off by more than the tolerance, or a mask with "
                    "more than s ones)",
                    "a construction wrong on a quarter of its inputs (one class of inputs, of "
                    "experts, of tables) is a wrong construction; rarer departures (ties of "
                    "measure zero) are what the rounding tolerance covers")
                for name in SIMULATIONS]

    def planted_violations(self) -> list[Planted]:
        """Per simulation, its planted object departing on a fraction q of the instances:
        q = 0.25 (the SVI, ``n_power`` runs), 0.1 and 1 (the power curve, a quarter of the
        runs), each run drawing that simulation alone (``only``) and counted by its part; and
        k-NN with k − 1 winners (always) as a row that does not gate."""
        p = self.params
        curve = max(2, self.n_power // 4)
        objects = {
            "interpolation": ("memory", WrongPointMemory,
                              "the interpolating DSM stores one wrong point (WrongPointMemory)"),
            "knn": ("topk", functools.partial(WrongKTopK, +1),
                    "the k-NN DSM's Top-K keeps k + 1 winners (WrongKTopK(+1))"),
            "switch": ("block_map", ShuffledBlockMap,
                       "the Switch DSM's mask uses a deranged expert→block map "
                       "(ShuffledBlockMap)"),
            "scaling": ("controller", RunnerUpController,
                        "the Scaling DSM's controller activates each block's runner-up unit "
                        "(RunnerUpController)"),
            "lsh": ("mask_hasher", None,
                    "the LSH DSM's mask uses every table's key + 1 mod 2^m (OffByOneKeys)"),
        }
        planted = []
        for name, (keyword, make, text) in objects.items():
            for q in (0.1, FAILURE_SVI, 1.0):
                obj = (functools.partial(OffByOneKeys, fraction=q) if name == "lsh"
                       else make(fraction=q))
                planted.append(Planted(
                    f"{name}_departs_on_{q:g}",
                    f"{text} on a fraction {q:g} of the instances "
                    + ("(at the SVI)" if q == FAILURE_SVI else "(power curve)"),
                    (lambda objs, sim: lambda: SimulationsCheck(p, objs, only=(sim,)))(
                        {name: {keyword: obj}}, name),
                    part=name, size=q, runs=None if q == FAILURE_SVI else curve))
        planted.append(Planted(
            "knn_k_minus_1", "the k-NN DSM's Top-K keeps k − 1 winners (WrongKTopK(−1)) on "
            "every instance; shown, does not gate",
            lambda: SimulationsCheck(p, {"knn": {"topk": WrongKTopK(-1)}}, only=("knn",)),
            runs=curve))
        return planted

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        per_sim = {}
        for j, (name, draw) in enumerate(SIMULATIONS.items()):
            if self.only is not None and name not in self.only:
                continue
            rng = np.random.default_rng(child_seeds(seed, 1, 20, j)[0])
            objs = self.objects.get(name, {})
            outcomes = [draw(rng, p, **objs) for _ in range(p.n_instances)]
            diffs = [o.max_abs_difference for o in outcomes]
            per_sim[name] = {
                "max_abs_difference": max(diffs),
                "n_instances": len(outcomes),
                "n_failed": sum(not (d <= p.tolerance and o.max_active <= o.s)
                                for d, o in zip(diffs, outcomes)),
                "n_not_sparse": sum(o.max_active > o.s for o in outcomes),
                "classes": sorted({f"DSM(d={o.d}, s={o.s}, t={o.t})" for o in outcomes})[:5],
                "objects": {k: repr(v) for k, v in objs.items()},
            }
        failed = {n: v["n_failed"] for n, v in per_sim.items() if v["n_failed"]}
        parts = {n: {"verdict": (Verdict.REFUTED if v["n_failed"] else Verdict.HOLDS).value,
                     "n_failed": v["n_failed"], "n_instances": v["n_instances"]}
                 for n, v in per_sim.items()}
        plots = self._plot(per_sim, p.tolerance, out)
        worst = max(v["max_abs_difference"] for v in per_sim.values())
        verdict = Verdict.REFUTED if failed else Verdict.HOLDS
        details = {"parts": parts, "per_simulation": per_sim,
                   "calibration": "none: an identity has no constant to estimate",
                   "validation": f"{p.n_instances} random instances per simulation"}
        if failed:
            details["diagnosis"] = "; ".join(
                f"{n}: {v['n_failed']}/{v['n_instances']} instances differ (max |DSM − model| "
                f"= {v['max_abs_difference']:.3g}, {v['n_not_sparse']} masks with > s ones)"
                for n, v in per_sim.items() if v["n_failed"])
        return self.result(
            seed=seed, measured=worst, bound=p.tolerance,
            measured_text=f"max |DSM − model| = {worst:.2e} over "
                          f"{p.n_instances * len(per_sim)} instances"
                          + (f"; failed: {failed}" if failed else ""),
            bound_text=f"≤ {p.tolerance:g}, mask s-sparse (identity)",
            verdict=verdict, details=details, plots=plots)

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
