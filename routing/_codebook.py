"""Exact map from integer vectors to consecutive int64 ids (open-addressing hash map, Numba).

A Euclidean LSH bucket is a vector of n_hashes unbounded integers, which cannot be packed
into 64 bits. The codebook gives each distinct vector the next free id, in the order the
vectors are first seen, and keeps the vectors so that ids are stable across calls and can be
turned back into vectors. A 64-bit mix of the vector only chooses where to start probing;
two vectors get the same id only if all their entries are equal (the probe compares whole
vectors), so there are no false merges, whatever the vectors.

Each call first looks all vectors up in parallel (read-only), then inserts the unseen ones
one by one in row order, which keeps the first-appearance numbering.

Reference implementation: :class:`CodebookReference` (a Python dict).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["Codebook", "CodebookReference"]

_EMPTY = -1
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


@njit(cache=True)
def _vector_hash(row):
    """64-bit mix of an int64 vector (only the probe start depends on it).

    A multilinear sum Σ_i c_i · K_i with odd pseudo-random K_i (independent products, no
    multiply chain), then the splitmix64 finaliser; weak mixing could only cost probes, never
    correctness.
    """
    h = np.uint64(row.shape[0])
    k = _M1
    for c in row:
        h += np.uint64(c) * (k | np.uint64(1))
        k = k * _M3 + _M1
    h ^= h >> np.uint64(31)
    h *= _M2
    h ^= h >> np.uint64(29)
    h *= _M3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def _find_slot(slots, book, row):
    """Index of the slot holding ``row``'s id, or of the empty slot where it would go."""
    mask = np.uint64(slots.shape[0] - 1)
    i = np.int64(_vector_hash(row) & mask)
    n_cols = row.shape[0]
    while True:
        k = slots[i]
        if k == _EMPTY:
            return i
        same = True
        for c in range(n_cols):
            if book[k, c] != row[c]:
                same = False
                break
        if same:
            return i
        i = np.int64((np.uint64(i) + np.uint64(1)) & mask)


@njit(cache=True, parallel=True)
def _lookup(slots, book, codes, out):
    """out[r] = id of codes[r], or -1 if unseen (read-only, in parallel)."""
    for r in prange(codes.shape[0]):
        out[r] = slots[_find_slot(slots, book, codes[r])]


@njit(cache=True)
def _insert_unseen(slots, book, n_ids, codes, out):
    """Give the rows with out[r] == -1 their ids, new ones numbered n_ids, n_ids + 1, ... in
    row order; returns the new number of ids. The caller guarantees room in slots and book."""
    for r in range(codes.shape[0]):
        if out[r] != _EMPTY:
            continue
        row = codes[r]
        i = _find_slot(slots, book, row)
        k = slots[i]
        if k == _EMPTY:  # not inserted earlier in this call either
            k = n_ids
            book[k] = row
            slots[i] = k
            n_ids += 1
        out[r] = k
    return n_ids


@njit(cache=True)
def _rehash(book, n_ids, slots):
    """Insert ids 0..n_ids-1 of ``book`` into the empty table ``slots``."""
    for k in range(n_ids):
        slots[_find_slot(slots, book, book[k])] = k


class Codebook:
    """Exact codebook for int64 vectors of length ``n_cols`` (not thread-safe).

    Arguments:
        n_cols: length of the vectors, >= 1.

    Attributes:
        n_ids: number of distinct vectors seen so far; their ids are 0..n_ids-1.
    """

    def __init__(self, n_cols: int):
        self.n_cols = n_cols
        self.n_ids = 0
        self._book = np.empty((64, n_cols), np.int64)
        self._slots = np.full(128, _EMPTY, np.int64)

    def ids(self, codes: np.ndarray, add: bool = True) -> np.ndarray:
        """Ids of the rows of ``codes`` (n, n_cols) int64 -> (n,) int64.

        With ``add`` unseen rows get new consecutive ids in order of first appearance;
        without it they get -1 and the codebook is unchanged.
        """
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        out = np.empty(len(codes), np.int64)
        _lookup(self._slots, self._book, codes, out)  # most rows are known: in parallel
        if add:
            self._reserve(self.n_ids + int(np.count_nonzero(out == _EMPTY)))
            self.n_ids = int(_insert_unseen(self._slots, self._book, self.n_ids, codes, out))
        return out

    def codes(self, ids: np.ndarray) -> np.ndarray:
        """The vectors of known ids (n,) -> (n, n_cols) int64; the caller checks the range."""
        return self._book[ids]

    def truncate(self, n_ids: int) -> None:
        """Forget the ids >= ``n_ids`` (rebuilds the hash table)."""
        self.n_ids = min(self.n_ids, n_ids)
        self._slots[:] = _EMPTY
        _rehash(self._book, self.n_ids, self._slots)

    @property
    def nbytes(self) -> int:
        """Bytes held by the codebook's arrays."""
        return self._book.nbytes + self._slots.nbytes

    def _reserve(self, n_ids: int) -> None:
        """Grow so that ``n_ids`` vectors fit with the hash table at most half full."""
        if n_ids > len(self._book):
            book = np.empty((max(n_ids, 2 * len(self._book)), self.n_cols), np.int64)
            book[: self.n_ids] = self._book[: self.n_ids]
            self._book = book
        if 2 * n_ids > len(self._slots):
            size = len(self._slots)
            while 2 * n_ids > size:
                size *= 2
            self._slots = np.full(size, _EMPTY, np.int64)
            _rehash(self._book, self.n_ids, self._slots)


class CodebookReference:
    """Plain-Python reference of :class:`Codebook` (a dict from tuples to ids)."""

    def __init__(self, n_cols: int):
        self.n_cols = n_cols
        self._ids: dict[tuple[int, ...], int] = {}

    @property
    def n_ids(self) -> int:
        return len(self._ids)

    def ids(self, codes: np.ndarray, add: bool = True) -> np.ndarray:
        out = np.empty(len(codes), np.int64)
        for r, row in enumerate(np.asarray(codes, dtype=np.int64).tolist()):
            key = tuple(row)
            if key not in self._ids and add:
                self._ids[key] = len(self._ids)
            out[r] = self._ids.get(key, -1)
        return out
