"""Operation counts of one forward pass, as sympy expressions and as numbers.

One "operation" is one scalar multiply, add, divide, floor, comparison or activation.

* LSH model (the learner of Theorem 4.1: ``routing.euclidean_lsh.EuclideanLSH`` with m hashes
  + ``routing.lsh_table.LSHTable`` with N non-empty buckets, degree 0):
  m projections a_i·x (d multiplies, d − 1 adds each), then per hash + b_i, / w and floor
  (3 each), 2 per hash to mix the code vector into a key, and ⌈log2 N⌉ comparisons to find
  the key among the N sorted bucket keys (binary search):
  S = m(2d − 1) + 3m + 2m + ⌈log2 N⌉ = m(2d + 4) + ⌈log2 N⌉.
* Dense random-features model of width w (Theorem 4.3): w dot products (2d − 1), w bias
  adds, w ReLUs, then the top layer's w multiplies and w − 1 adds:
  D = w(2d − 1) + w + w + 2w − 1 = w(2d + 3) − 1.

These formulas are the *documented* costs. The Eq. (1) check compares *counted* operations:
``count_torch_flops`` counts a torch forward pass with ``FlopCounterMode`` on the ops it
dispatches, and ``CountedLSHForward`` re-runs the hashing and lookup of a fitted
``LSHTable`` step by step on the hasher's and the table's own arrays, counting each operation
and checking every intermediate result against the real computation.

Source: Baykal et al. 2022, §3.2 ("O(sm) hash computations, each taking O(d) time"),
Theorem 4.1 (forward pass O(dk log(L√d/ε))) and Eq. (1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
import torch
from torch.utils.flop_counter import FlopCounterMode

from routing.validation import check_int

__all__ = ["lsh_forward_ops", "dense_forward_ops", "LSH_OPS", "DENSE_OPS", "SYMBOLS",
           "binary_search", "linear_scan", "jump_search", "power_lookup", "CountedLSHForward",
           "count_torch_flops", "OpCount", "counted_codebook_id"]

#: The symbols of the expressions: d (input dimension), m (hashes), N (non-empty buckets),
#: w (dense width), k (subspace dimension), eps (accuracy ε), L (Lipschitz constant),
#: C (constant of Lemma 4.2 / Theorem 4.3), gamma (exponent of Lemma 4.2(2)).
SYMBOLS = dict(zip(["d", "m", "N", "w", "k", "eps", "L", "C", "gamma"],
                   sp.symbols("d m N w k epsilon L C gamma", positive=True)))

_d, _m, _N, _w = SYMBOLS["d"], SYMBOLS["m"], SYMBOLS["N"], SYMBOLS["w"]
#: Operations of an LSH forward pass (module docstring); ⌈log2 N⌉ as sympy ceiling.
LSH_OPS = _m * (2 * _d - 1) + 3 * _m + 2 * _m + sp.ceiling(sp.log(_N, 2))
#: Operations of a dense random-features forward pass of width w.
DENSE_OPS = _w * (2 * _d - 1) + _w + _w + 2 * _w - 1


def lsh_forward_ops(dim: int, n_hashes: int, n_buckets: int) -> int:
    """m(2d + 4) + ⌈log2 N⌉ operations (module docstring), N = max(n_buckets, 1).

    Raises:
        ValueError: dim or n_hashes < 1, n_buckets < 0.
    """
    d = check_int(dim, "dim", 1)
    m = check_int(n_hashes, "n_hashes", 1)
    N = max(check_int(n_buckets, "n_buckets", 0), 1)
    return m * (2 * d + 4) + math.ceil(math.log2(N))


def dense_forward_ops(dim: int, width: int) -> int:
    """w(2d + 3) − 1 operations (module docstring).

    Raises:
        ValueError: dim or width < 1.
    """
    d = check_int(dim, "dim", 1)
    w = check_int(width, "width", 1)
    return w * (2 * d + 3) - 1


# --------------------------------------------------------------------------------------------
# Operations counted on the computation itself (Eq. (1) check): torch forward passes through
# FlopCounterMode, the hashing / lookup path of a fitted ``routing.lsh_table.LSHTable`` by an
# instrumented re-run of its steps on its own arrays, verified against the real results.
# --------------------------------------------------------------------------------------------

__all__ += ["OpCount", "count_torch_flops", "TORCH_EXTRA_FLOPS", "binary_search", "linear_scan",
            "counted_codebook_id", "CountedLSHForward"]

_aten = torch.ops.aten


def _numel(shape) -> int:
    return int(math.prod(shape)) if shape is not None else 0


def _mv_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    return 2 * a_shape[0] * a_shape[1]


def _dot_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    return 2 * a_shape[0]


def _elementwise_flop(*args, out_shape=None, **kwargs) -> int:
    return _numel(out_shape)


#: Operations FlopCounterMode does not count by default, counted here: a matrix-vector
#: product (2·rows·cols: the dense top layer), a dot product, and one operation per output
#: element of the elementwise ops of the models' forward passes (ReLU, bias add, …).
TORCH_EXTRA_FLOPS = {
    _aten.mv: _mv_flop, _aten.dot: _dot_flop,
    **{op: _elementwise_flop for op in (
        _aten.relu, _aten.relu_, _aten.add, _aten.add_, _aten.sub, _aten.mul, _aten.mul_,
        _aten.div, _aten.clamp_min, _aten.threshold, _aten.where)},
}


def count_torch_flops(fn, X: torch.Tensor) -> tuple[float, dict[str, float]]:
    """Floating-point operations per example of ``fn(X)``, counted by
    ``torch.utils.flop_counter.FlopCounterMode`` on the ops the call actually dispatches
    (matrix multiplies by its own formulas — 2·m·n·k for an (m, k)·(k, n) product — plus
    ``TORCH_EXTRA_FLOPS``).

    Arguments:
        fn: a callable on a tensor (a model's forward).
        X: (N, dim) input tensor, N ≥ 1.

    Returns:
        (total per example, {aten op name: operations per example}).

    Raises:
        ValueError: an empty batch.
    """
    if X.ndim < 1 or X.shape[0] < 1:
        raise ValueError(f"X must hold at least one example, got shape {tuple(X.shape)}")
    with FlopCounterMode(display=False, custom_mapping=TORCH_EXTRA_FLOPS) as counter:
        fn(X)
    n = X.shape[0]
    per_op = {str(op): v / n for op, v in counter.get_flop_counts()["Global"].items()}
    return counter.get_total_flops() / n, per_op


@dataclass
class OpCount:
    """Scalar operations of one computation, by kind (module docstring's convention).

    Attributes:
        mul, add, div, floor, cmp: multiplies, adds/subtracts, divides, floors, comparisons.
        int_ops: integer operations (xor, shift, and, multiply, add of a key mix).
        memory: table reads (a value or a key fetched by index), counted apart.
    """

    mul: int = 0
    add: int = 0
    div: int = 0
    floor: int = 0
    cmp: int = 0
    int_ops: int = 0
    memory: int = 0

    @property
    def total(self) -> int:
        """All operations except memory reads."""
        return self.mul + self.add + self.div + self.floor + self.cmp + self.int_ops

    def __iadd__(self, other: "OpCount") -> "OpCount":
        for name in ("mul", "add", "div", "floor", "cmp", "int_ops", "memory"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


def binary_search(keys: np.ndarray, key: int) -> tuple[int, int]:
    """Lower bound of ``key`` in sorted ``keys`` by bisection, counting the comparisons.

    Arguments:
        keys: (N,) sorted int64. key: int.

    Returns:
        (position, comparisons): the position equals ``np.searchsorted(keys, key)`` (side
        "left"); comparisons = the number of key comparisons made, ⌊log2 N⌋ + 1 at most.
    """
    lo, hi, comparisons = 0, len(keys), 0
    while lo < hi:
        mid = (lo + hi) // 2
        comparisons += 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo, comparisons


def linear_scan(keys: np.ndarray, key: int) -> tuple[int, int]:
    """Lower bound of ``key`` in sorted ``keys`` by a scan from the start (a lookup whose
    cost grows with the number of buckets: the planted violation of Eq. (1)'s sparse side).

    Returns:
        (position, comparisons): the same position as ``binary_search``; comparisons =
        position + 1 (N when key exceeds every key).
    """
    for i in range(len(keys)):
        if not keys[i] < key:
            return i, i + 1
    return len(keys), len(keys)


def jump_search(keys: np.ndarray, key: int, levels: int = 2) -> tuple[int, int]:
    """Lower bound of ``key`` in sorted ``keys`` by a ``levels``-level jump search, counting
    the comparisons: a real lookup whose cost grows as a power of the number of keys.

    On a range of n candidate positions, level l (from ``levels`` down to 1) jumps in steps of
    ⌈n^((l − 1)/l)⌉ keys, comparing the last key of each block with ``key`` until one is not
    smaller, and recurses into that block; level 1 scans key by key. Each level makes at most
    about n^(1/levels) comparisons, so the cost is O(levels · N^(1/levels)): the classic jump
    search (levels = 2) makes O(√N) comparisons, levels = 4 O(N^(1/4)) — the planted lookups
    of Eq. (1)'s sparse side.

    Arguments:
        keys: (N,) sorted int64. key: int. levels: ≥ 1.

    Returns:
        (position, comparisons): the position equals ``np.searchsorted(keys, key)`` (side
        "left").

    Raises:
        ValueError: levels < 1.

    Source: Shneiderman 1978, "Jump searching: a fast sequential search technique" (CACM 21).
    """
    levels = check_int(levels, "levels", 1)
    lo, hi, comparisons = 0, len(keys), 0  # the answer is in [lo, hi]
    for level in range(levels, 0, -1):
        size = hi - lo
        if size <= 0:
            break
        step = max(1, math.ceil(size ** ((level - 1) / level)))
        while lo + step <= hi:
            end = lo + step - 1
            comparisons += 1
            if keys[end] < key:
                lo = end + 1
            else:
                hi = end
                break
        # with hi set to a block's last key the block [lo, hi] remains; else [lo, hi]
    return lo, comparisons


def power_lookup(levels: int):
    """``jump_search`` with a fixed number of levels, as a ``search`` callable (keys, key) ->
    (position, comparisons), carrying its ``levels`` and its growth exponent 1/levels.

    Raises:
        ValueError: levels < 1.
    """
    levels = check_int(levels, "levels", 1)

    def search(keys, key):
        return jump_search(keys, key, levels)

    search.levels = levels
    search.exponent = 1.0 / levels
    search.__name__ = f"jump_search_{levels}"
    return search


_U64 = (1 << 64) - 1
_M1, _M2, _M3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def counted_codebook_id(slots: np.ndarray, book: np.ndarray,
                        row: np.ndarray) -> tuple[int, OpCount]:
    """The id of an integer code vector in a ``routing._codebook.Codebook`` (its open-
    addressing table ``slots`` and vectors ``book``), re-running its probe sequence in Python
    and counting the operations.

    The vector hash is the codebook's (``routing._codebook._vector_hash``: per entry one
    multiply and one add into h, one multiply, one add and one or for the next constant; then
    a 6-operation finaliser), the start slot one and; each probe reads a slot (one comparison
    with empty) and compares the stored vector entry by entry until a difference.

    Arguments:
        slots: (S,) int64, S a power of two, −1 = empty. book: (≥ ids, m) int64. row: (m,) int.

    Returns:
        (id, count): id ≥ 0, or −1 for a vector the codebook has not seen.
    """
    count = OpCount()
    h, k = len(row), _M1
    for c in row:
        h = (h + (int(c) & _U64) * (k | 1)) & _U64
        k = (k * _M3 + _M1) & _U64
        count.int_ops += 5
    h ^= h >> 31
    h = (h * _M2) & _U64
    h ^= h >> 29
    h = (h * _M3) & _U64
    h ^= h >> 32
    count.int_ops += 8  # finaliser (6) and the masked start slot (1) and its mask (1)
    mask = len(slots) - 1
    i = h & mask
    while True:
        stored = int(slots[i])
        count.memory += 1
        count.cmp += 1
        if stored == -1:
            return -1, count
        same = True
        for a, b in zip(book[stored], row):
            count.cmp += 1
            count.memory += 1
            if a != b:
                same = False
                break
        if same:
            return stored, count
        i = (i + 1) & mask
        count.int_ops += 2


@dataclass
class CountedLSHForward:
    """The forward pass of a fitted ``LSHTable`` over a ``routing.EuclideanLSH`` hasher
    (degree 0), re-run step by step with its operations counted, and checked against the
    real computation.

    Per query x and table t: the codes floor((a_i·x + b_i)/w) for the n_hashes rows a_i of
    the hasher's ``directions[t]`` (d multiplies and d − 1 adds per dot product, from the
    shapes of the arrays multiplied, then one add, one divide and one floor); the bucket id of
    the code vector in the hasher's codebook (``counted_codebook_id``); the slot of the id
    among the table's sorted bucket keys (``search``, by default ``binary_search``, as
    ``LSHTable``'s ``np.searchsorted``) and one comparison to test it was found; the bucket
    value (one multiply by the degree-0 feature 1, as the table's einsum); then s − 1 adds
    and one divide to average the s tables.

    Arguments:
        table: a fitted ``routing.lsh_table.LSHTable`` of degree 0 whose hasher is a
            ``routing.euclidean_lsh.EuclideanLSH``.
        search: (sorted keys (N,), key) -> (position, comparisons); ``binary_search`` or
            ``linear_scan`` (same positions, different costs).

    Raises:
        ValueError: an unfitted table, a degree > 0, or another hasher.

    Source: Baykal et al. 2022, Theorem 4.1 (forward pass O(dk log(L√d/ε))), §3.2.
    """

    table: object
    search: object = binary_search
    verified: dict = field(default_factory=dict)
    search_counts: list = field(default_factory=list)

    def __post_init__(self):
        from routing.euclidean_lsh import EuclideanLSH

        if not hasattr(self.table, "n_tables_"):
            raise ValueError("table must be a fitted LSHTable")
        if getattr(self.table, "_degree", 0) != 0:
            raise ValueError("table must have degree 0")
        if not isinstance(self.table.hasher, EuclideanLSH):
            raise ValueError("table.hasher must be a routing.euclidean_lsh.EuclideanLSH")

    def forward(self, X: np.ndarray) -> tuple[np.ndarray, list[OpCount], dict[str, OpCount]]:
        """Predictions and operation counts of each query.

        Arguments:
            X: float64 (N, dim) queries.

        Returns:
            (predictions (N,), one ``OpCount`` per query, counts summed over queries by stage
            "hash" / "codebook" / "search" / "value"). ``search_counts`` is filled with each
            query's lookup operations (the "search" stage, summed over tables: int list of
            length N). ``verified`` is filled with booleans:
            codes, ids, positions and predictions equal to the real computation's
            (``hasher.hash``, ``hasher.bucket_ids(add=False)``, ``np.searchsorted``,
            ``table.predict``).
        """
        X = np.asarray(X, dtype=np.float64)
        tab, hasher = self.table, self.table.hasher
        directions, offsets, width = hasher.directions, hasher.offsets, hasher.width
        n_tables, n_hashes, dim = directions.shape
        real_codes = hasher.hash(X)  # (N, T, m)
        real_ids = hasher.bucket_ids(X, add=False)  # (N, T), before predict adds any
        keys = [tab.bucket_values(t) for t in range(n_tables)]  # (sorted keys, coef)
        preds, counts = np.empty(len(X)), []
        stages = {s: OpCount() for s in ("hash", "codebook", "search", "value")}
        ok = {"codes": True, "ids": True, "positions": True}
        y_mean = tab.y_mean_
        self.search_counts = []
        for q, x in enumerate(X):
            total, out, q_search = OpCount(), 0.0, 0
            for t in range(n_tables):
                c_hash = OpCount()
                codes = np.empty(n_hashes, np.int64)
                for i in range(n_hashes):
                    a = directions[t, i]  # (dim,)
                    proj = float(np.dot(a, x))
                    c_hash.mul += a.shape[0]
                    c_hash.add += a.shape[0] - 1
                    codes[i] = math.floor((proj + offsets[t, i]) / width)
                    c_hash.add += 1
                    c_hash.div += 1
                    c_hash.floor += 1
                ok["codes"] &= bool(np.array_equal(codes, real_codes[q, t]))
                book = hasher._codebooks[t]  # read-only: the codebook's own arrays
                bucket, c_book = counted_codebook_id(book._slots, book._book, codes)
                ok["ids"] &= bucket == int(real_ids[q, t])
                sorted_keys, coef = keys[t]
                pos, n_cmp = self.search(sorted_keys, bucket)
                pos_real = int(np.searchsorted(sorted_keys, bucket))
                ok["positions"] &= pos == pos_real
                pos = min(pos, len(sorted_keys) - 1)
                c_search = OpCount(cmp=n_cmp + 1, memory=n_cmp + 1)  # + the found test
                found = bool(sorted_keys[pos] == bucket)
                q_search += c_search.total
                c_value = OpCount(mul=1, memory=1)
                out += float(coef[pos, 0]) if found else y_mean
                for stage, c in zip(("hash", "codebook", "search", "value"),
                                    (c_hash, c_book, c_search, c_value)):
                    stages[stage] += c
                    total += c
            total += OpCount(add=n_tables - 1, div=1)
            stages["value"] += OpCount(add=n_tables - 1, div=1)
            preds[q] = out / n_tables
            counts.append(total)
            self.search_counts.append(q_search)
        ok["predictions"] = bool(np.allclose(preds, tab.predict(X), rtol=1e-12, atol=1e-12))
        self.verified = ok
        return preds, counts, stages
